//! Samples in, summary out; and the significance test that compares two
//! summaries. Pure functions: no clocks, no I/O.

use serde::{Deserialize, Serialize};

/// One tick of the measure loop: what was counted since the previous tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// 0-based, warm-up ticks included.
    pub iteration: u32,
    /// Real time since the previous tick; rates are normalised by it.
    pub elapsed_ns: u64,
    /// How far past its deadline the tick fired (negative: early).
    pub late_ns: i64,
    pub hits: u64,
    pub drops: u64,
    pub warmup: bool,
}

impl Sample {
    pub fn hits_per_sec(&self) -> f64 {
        per_second(self.hits, self.elapsed_ns)
    }
    pub fn drops_per_sec(&self) -> f64 {
        per_second(self.drops, self.elapsed_ns)
    }
    pub fn total_per_sec(&self) -> f64 {
        per_second(self.hits + self.drops, self.elapsed_ns)
    }
}

/// `count` events over `elapsed_ns` as events per second; 0 for an empty interval.
pub fn per_second(count: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        return 0.0;
    }
    count as f64 * 1e9 / elapsed_ns as f64
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanSd {
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two values.
    pub sd: f64,
}

pub fn mean_sd(values: &[f64]) -> MeanSd {
    let n = values.len();
    if n == 0 {
        return MeanSd { mean: 0.0, sd: 0.0 };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return MeanSd { mean, sd: 0.0 };
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    MeanSd {
        mean,
        sd: var.sqrt(),
    }
}

/// Rates are in events per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Measured (non-warm-up) samples the figures are made of.
    pub samples: usize,
    pub hits: MeanSd,
    pub drops: MeanSd,
    pub total: MeanSd,
    /// Mean hit rate of one producer.
    pub per_producer: f64,
    /// Time one producer spends per hit, in ns; `None` when nothing was hit.
    pub latency_ns: Option<f64>,
    /// Wall-clock microseconds per operation of all producers together
    /// (perf's usecs/op): the inverse of the mean rate, its sd carried over
    /// to first order, so that it agrees with ops/s even when a second saw
    /// no operation finish.
    pub usecs_per_op: MeanSd,
    /// The latest tick, in ns past its deadline.
    pub max_late_ns: i64,
    /// A tick was more than [`NOISY_LATE_NS`] late: the machine was busy with
    /// something else, and the run deserves suspicion.
    pub noisy: bool,
}

/// How late a tick may fire before the run is called noisy.
pub const NOISY_LATE_NS: i64 = 50_000_000;

/// Summarises the measured samples, leaving the warm-up ones out. `None` when
/// no measured sample exists (e.g. a run stopped during warm-up).
pub fn summarize(samples: &[Sample], producers: usize) -> Option<Summary> {
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    if measured.is_empty() {
        return None;
    }
    let rates = |f: fn(&Sample) -> f64| measured.iter().map(|s| f(s)).collect::<Vec<f64>>();
    let hits = mean_sd(&rates(Sample::hits_per_sec));
    let drops = mean_sd(&rates(Sample::drops_per_sec));
    let total = mean_sd(&rates(Sample::total_per_sec));
    let producers = producers.max(1) as f64;
    let per_producer = hits.mean / producers;
    let latency_ns = (per_producer > 0.0).then(|| 1e9 / per_producer);
    let max_late_ns = measured.iter().map(|s| s.late_ns).max().unwrap_or(0);
    let usecs_per_op = if total.mean > 0.0 {
        MeanSd {
            mean: 1e6 / total.mean,
            sd: 1e6 * total.sd / (total.mean * total.mean),
        }
    } else {
        MeanSd { mean: 0.0, sd: 0.0 }
    };
    Some(Summary {
        samples: measured.len(),
        hits,
        drops,
        total,
        per_producer,
        latency_ns,
        usecs_per_op,
        max_late_ns,
        noisy: max_late_ns > NOISY_LATE_NS,
    })
}

/// The measured (non-warm-up) hit rates of `samples`, per second.
pub fn measured_rates(samples: &[Sample]) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| !s.warmup)
        .map(Sample::hits_per_sec)
        .collect()
}

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
    let p = regularized_beta(df / (df + t * t), df / 2.0, 0.5).clamp(0.0, 1.0);
    Some(Welch { t, df, p })
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9): ample for p-values.
fn ln_gamma(x: f64) -> f64 {
    const COEFFS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFS[0];
    for (i, c) in COEFFS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued
/// fraction (modified Lentz), using the symmetry for fast convergence.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        for coeff in [
            even,
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + coeff * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + coeff / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(iteration: u32, hits: u64, elapsed_ns: u64, warmup: bool) -> Sample {
        Sample {
            iteration,
            elapsed_ns,
            late_ns: elapsed_ns as i64 - 1_000_000_000,
            hits,
            drops: 0,
            warmup,
        }
    }

    #[test]
    fn sd_uses_n_minus_one() {
        let m = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m.mean, 5.0);
        // Population sd is 2.0; the sample sd is sqrt(32/7).
        assert!((m.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{}", m.sd);
    }

    #[test]
    fn one_value_has_no_spread_and_none_has_no_mean() {
        assert_eq!(mean_sd(&[3.0]), MeanSd { mean: 3.0, sd: 0.0 });
        assert_eq!(mean_sd(&[]), MeanSd { mean: 0.0, sd: 0.0 });
    }

    #[test]
    fn warmup_samples_are_left_out() {
        let samples = [
            sample(0, 999_000_000, 1_000_000_000, true),
            sample(1, 2_000_000, 1_000_000_000, false),
            sample(2, 4_000_000, 1_000_000_000, false),
        ];
        let s = summarize(&samples, 1).unwrap();
        assert_eq!(s.samples, 2);
        assert_eq!(s.hits.mean, 3_000_000.0);
        assert!((s.hits.sd - 2f64.sqrt() * 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn rates_are_normalised_by_the_real_interval() {
        // A tick 500 ms late saw 1.5 s of work: the rate must not be inflated.
        let samples = [
            sample(0, 1_000_000, 1_000_000_000, false),
            sample(1, 1_500_000, 1_500_000_000, false),
            sample(2, 500_000, 500_000_000, false),
        ];
        let s = summarize(&samples, 1).unwrap();
        assert_eq!(s.hits.mean, 1_000_000.0);
        assert_eq!(s.hits.sd, 0.0);
        assert_eq!(s.max_late_ns, 500_000_000);
        assert!(s.noisy, "a tick 500 ms late makes a noisy run");
        let on_time = [sample(0, 1_000_000, 1_000_000_000, false)];
        assert!(!summarize(&on_time, 1).unwrap().noisy);
    }

    #[test]
    fn per_producer_rate_and_latency() {
        let samples = [sample(0, 4_000_000, 1_000_000_000, false)];
        let s = summarize(&samples, 2).unwrap();
        assert_eq!(s.per_producer, 2_000_000.0);
        // Each producer gets a hit every 500 ns.
        assert_eq!(s.latency_ns, Some(500.0));
        // Together, the producers finish an operation every 0.25 us.
        assert_eq!(
            s.usecs_per_op,
            MeanSd {
                mean: 0.25,
                sd: 0.0
            }
        );
    }

    #[test]
    fn usecs_per_op_agrees_with_the_rate_even_over_an_empty_second() {
        let samples = [
            sample(0, 0, 1_000_000_000, false),
            sample(1, 4_000, 1_000_000_000, false),
        ];
        let s = summarize(&samples, 1).unwrap();
        // 4000 operations in 2 s: 500 us each.
        assert_eq!(s.total.mean, 2_000.0);
        assert_eq!(s.usecs_per_op.mean, 500.0);
    }

    #[test]
    fn drops_count_toward_total_operations() {
        let mut s = sample(0, 3_000_000, 1_000_000_000, false);
        s.drops = 1_000_000;
        let summary = summarize(&[s], 1).unwrap();
        assert_eq!(summary.drops.mean, 1_000_000.0);
        assert_eq!(summary.total.mean, 4_000_000.0);
    }

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
    fn the_incomplete_beta_agrees_with_the_t_distribution() {
        // For df = 1 the t distribution is Cauchy: P(|T| > 1) = 0.5.
        assert!((regularized_beta(1.0 / 2.0, 0.5, 0.5) - 0.5).abs() < 1e-9);
        // For df = 10, the two-sided 5% critical value is 2.228139.
        let t: f64 = 2.228139;
        assert!((regularized_beta(10.0 / (10.0 + t * t), 5.0, 0.5) - 0.05).abs() < 1e-5);
        // ln Γ(5) = ln 24.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn welch_needs_two_values_a_side() {
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        let certain = welch(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
        assert_eq!(certain.p, 0.0);
    }

    #[test]
    fn nothing_measured_gives_no_summary() {
        assert_eq!(summarize(&[sample(0, 5, 1_000_000_000, true)], 1), None);
        let s = summarize(&[sample(0, 0, 1_000_000_000, false)], 1).unwrap();
        assert_eq!(s.latency_ns, None);
    }
}
