//! Student's t: quantiles, p-values and Welch's test, at the one confidence
//! level every interval is printed at.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::summary::mean_sd;

/// Welch's unequal-variances t-test of two sets of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value: the chance of a difference at least this large
    /// between the means if the true means were equal.
    pub p: f64,
}

/// Welch's t-test; `None` when either side has fewer than two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (mean_sd(a), mean_sd(b));
    let (va, vb) = (
        ma.sd.powi(2) / a.len() as f64,
        mb.sd.powi(2) / b.len() as f64,
    );
    let diff = mb.mean - ma.mean;
    if va + vb == 0.0 {
        // No spread at all: any difference is certain, none is certainly none.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                diff.signum() * f64::INFINITY
            },
            df: (a.len() + b.len() - 2) as f64,
            p,
        });
    }
    let t = diff / (va + vb).sqrt();
    let df =
        (va + vb).powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
    let p = t_two_sided_p(t, df);
    Some(Welch { t, df, p })
}

/// Student's t distribution with `df` degrees of freedom; `None` for a
/// degenerate `df` (fewer than one degree, or not a number).
fn students_t(df: f64) -> Option<StudentsT> {
    if df.is_nan() || df < 1.0 - 1e-9 || !df.is_finite() {
        return None;
    }
    StudentsT::new(0.0, 1.0, df.max(1.0)).ok()
}

/// Two-sided p-value of `t` with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    match students_t(df) {
        Some(dist) => (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
        None => 1.0,
    }
}

/// The quantile of Student's t that leaves (1 − `level`)/2 in each tail:
/// 2.776 for a 95 % interval with 4 degrees of freedom.
pub fn t_critical(level: f64, df: f64) -> Option<f64> {
    students_t(df).map(|dist| dist.inverse_cdf(0.5 + level / 2.0))
}

/// The confidence level of every interval bench prints.
pub const CONFIDENCE: f64 = 0.95;
/// The significance level of every verdict: 1 − [`CONFIDENCE`].
pub const ALPHA: f64 = 1.0 - CONFIDENCE;

/// The quantile of Student's t below which `p` of the distribution lies.
pub(super) fn t_quantile(p: f64, df: f64) -> Option<f64> {
    students_t(df).map(|dist| dist.inverse_cdf(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_known_values() {
        // The first example of Wikipedia's "Welch's t-test" article:
        // t = 2.46 (with A2 as the new side), df = 25.0, p = 0.021.
        let a1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let a2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let w = welch(&a1, &a2).unwrap();
        assert!((w.t - 2.46).abs() < 0.005, "{w:?}");
        assert!((w.df - 25.0).abs() < 0.05, "{w:?}");
        assert!((w.p - 0.021).abs() < 0.0005, "{w:?}");
        let same = welch(&a1, &a1).unwrap();
        assert!((same.p - 1.0).abs() < 1e-9, "{same:?}");
    }

    #[test]
    fn t_quantiles_and_p_values_agree_with_tables() {
        // Two-sided 5 % critical values: df 4 → 2.776, df 10 → 2.228.
        assert!((t_critical(0.95, 4.0).unwrap() - 2.776_445).abs() < 1e-5);
        assert!((t_critical(0.95, 10.0).unwrap() - 2.228_139).abs() < 1e-5);
        assert!((t_two_sided_p(2.228_139, 10.0) - 0.05).abs() < 1e-6);
        // df 1 is Cauchy: P(|T| > 1) = 0.5.
        assert!((t_two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-9);
        assert_eq!(t_critical(0.95, 0.0), None);
    }

    #[test]
    fn welch_needs_two_values_a_side() {
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        let certain = welch(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
        assert_eq!(certain.p, 0.0);
    }
}
