//! What a comparison could have detected, and the runs it would take to
//! detect a given change.

use serde::{Deserialize, Serialize};

use super::change::{run_means, RunsOfSeconds};
use super::student::{t_quantile, ALPHA};
use super::summary::mean_sd;

/// The power every detectable effect is stated at: the chance that a change
/// of that size would be called a change.
pub const POWER: f64 = 0.8;

/// The noise floor of the interleaved table's verdicts and of `bench
/// calibrate`, as `bench compare`'s default: smaller changes are not called.
pub const NOISE_FLOOR_PCT: f64 = 2.0;

/// The change `--effect` plans runs for, by default, in %.
pub const DEFAULT_EFFECT_PCT: f64 = 5.0;

/// The most runs a side a recommendation may name before it says "more".
pub const MAX_RUNS_NEEDED: u32 = 1000;

/// How many standard errors a true change must be to be detected with
/// [`POWER`] by a two-sided test at [`ALPHA`]: t(1 − α/2, df) + t(power, df),
/// the textbook approximation of the noncentral t (2.338 + 0.893 for 7.42
/// degrees of freedom).
pub fn detection_multiplier(df: f64) -> Option<f64> {
    detection_multiplier_at(df, POWER)
}

/// [`detection_multiplier`] for another power.
pub fn detection_multiplier_at(df: f64, power: f64) -> Option<f64> {
    Some(t_quantile(1.0 - ALPHA / 2.0, df)? + t_quantile(power, df)?)
}

/// The rounds a paired comparison needs to detect a change of `effect_pct`
/// with `power`, when the per-round log ratios have sd `log_sd`; `None`
/// beyond [`MAX_RUNS_NEEDED`].
pub fn paired_rounds_needed(log_sd: f64, effect_pct: f64, power: f64) -> Option<u32> {
    let target = (1.0 + effect_pct / 100.0).ln();
    runs_for(target, |n| {
        let n = f64::from(n);
        Some(detection_multiplier_at(n - 1.0, power)? * log_sd / n.sqrt())
    })
}

/// What a comparison could have seen, and what it would take to see more.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// The smallest change, in % of the old rate, that these runs would have
    /// detected at 95 % confidence with 80 % power, from the measured
    /// between-run spread (never below the noise floor the verdict applies).
    pub detectable_pct: f64,
    /// The change asked about (`--effect`), in %.
    pub effect_pct: f64,
    /// The runs a side (rounds, when paired) that would detect `effect_pct`
    /// so; `None` when it lies below the noise floor or needs more than
    /// [`MAX_RUNS_NEEDED`].
    pub runs_needed: Option<u32>,
}

/// The smallest `n` from 2 to [`MAX_RUNS_NEEDED`] whose detectable effect,
/// `detectable(n)`, is at most `effect`; detectable effects shrink with `n`.
fn runs_for(effect: f64, detectable: impl Fn(u32) -> Option<f64>) -> Option<u32> {
    if effect <= 0.0 || detectable(MAX_RUNS_NEEDED)? > effect {
        return None;
    }
    let (mut low, mut high) = (2u32, MAX_RUNS_NEEDED);
    while low < high {
        let mid = (low + high) / 2;
        if detectable(mid).is_some_and(|d| d <= effect) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Some(low)
}

/// The sensitivity of Welch's comparison of two sets of run means: the
/// standard error and degrees of freedom of the difference, from both sides'
/// sd and count, as % of the old mean. Runs needed assume the same count and
/// spreads on both sides. `None` with fewer than two runs a side or an old
/// mean of 0.
pub fn welch_sensitivity(
    old: &[f64],
    new: &[f64],
    effect_pct: f64,
    floor_pct: f64,
) -> Option<Sensitivity> {
    if old.len() < 2 || new.len() < 2 {
        return None;
    }
    let (a, b) = (mean_sd(old), mean_sd(new));
    if a.mean == 0.0 {
        return None;
    }
    let (sa, sb) = (a.sd / a.mean.abs() * 100.0, b.sd / a.mean.abs() * 100.0);
    // The Welch standard error and degrees of freedom for na and nb runs.
    let detectable = |na: f64, nb: f64| -> Option<f64> {
        let (va, vb) = (sa * sa / na, sb * sb / nb);
        if va + vb == 0.0 {
            return Some(0.0);
        }
        let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        Some(detection_multiplier(df)? * (va + vb).sqrt())
    };
    let stated = detectable(old.len() as f64, new.len() as f64)?;
    Some(Sensitivity {
        detectable_pct: stated.max(floor_pct),
        effect_pct,
        runs_needed: (effect_pct >= floor_pct)
            .then(|| runs_for(effect_pct, |n| detectable(n as f64, n as f64)))
            .flatten(),
    })
}

/// The sensitivity of the paired comparison of rounds (`old[i]` beside
/// `new[i]`): from the sd of the per-round log ratios, with n − 1 degrees of
/// freedom; the detectable ratio e^m − 1 in %, the larger side of ±m.
/// `None` with fewer than two rounds or a rate that is not positive.
pub fn paired_sensitivity(
    old: &[f64],
    new: &[f64],
    effect_pct: f64,
    floor_pct: f64,
) -> Option<Sensitivity> {
    if old.len() != new.len() || old.len() < 2 {
        return None;
    }
    if old.iter().chain(new).any(|&v| v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = old.iter().zip(new).map(|(a, b)| (b / a).ln()).collect();
    let sd = mean_sd(&logs).sd;
    let detectable = |n: u32| -> Option<f64> {
        let n = f64::from(n);
        Some((detection_multiplier(n - 1.0)? * sd / n.sqrt()).exp_m1() * 100.0)
    };
    let stated = detectable(logs.len() as u32)?;
    Some(Sensitivity {
        detectable_pct: stated.max(floor_pct),
        effect_pct,
        runs_needed: (effect_pct >= floor_pct)
            .then(|| runs_for(effect_pct, detectable))
            .flatten(),
    })
}

/// The sensitivity of [`compare_runs`](super::compare_runs) on the same data: Welch's on the run
/// means; `None` unless both sides have two runs or more (a single run's
/// seconds say nothing of the drift a change must beat).
pub fn runs_sensitivity(
    old: RunsOfSeconds<'_>,
    new: RunsOfSeconds<'_>,
    effect_pct: f64,
    floor_pct: f64,
) -> Option<Sensitivity> {
    welch_sensitivity(&run_means(old), &run_means(new), effect_pct, floor_pct)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::change::{change_between, paired_change, Basis, Change};
    use crate::stats::normal::Normal;

    /// `mean` plus five (or six) evenly spread values whose sample sd is `sd`.
    fn spread(mean: f64, sd: f64, n: usize) -> Vec<f64> {
        let centred: Vec<f64> = (0..n).map(|i| i as f64 - (n - 1) as f64 / 2.0).collect();
        let unit = mean_sd(&centred).sd;
        centred.iter().map(|c| mean + sd * c / unit).collect()
    }

    #[test]
    fn detectable_effects_match_a_textbook_power_calculation() {
        // Computed independently (scipy.stats.t.ppf): Welch with sd 3 and 4
        // (% of the old mean), 5 runs a side: df 7.418, t(0.975) 2.3379 +
        // t(0.8) 0.8928, SE 2.2361 → 7.2240 %.
        assert!((detection_multiplier(7.418_397_6).unwrap() - 3.230_651).abs() < 1e-5);
        let old = spread(100.0, 3.0, 5);
        let new = spread(100.0, 4.0, 5);
        let s = welch_sensitivity(&old, &new, 5.0, 0.0).unwrap();
        assert!((s.detectable_pct - 7.223_956).abs() < 1e-4, "{s:?}");
        // sd 3 % a side: 6 runs see 5.38 %, 7 runs 4.89 %.
        let same = spread(100.0, 3.0, 4);
        let s = welch_sensitivity(&same, &same, 5.0, 0.0).unwrap();
        assert_eq!(s.runs_needed, Some(7), "{s:?}");
        // Paired: log ratios with sd 0.02 over 6 rounds → e^0.028497 − 1 =
        // 2.8907 %; 2.5 % needs 8 rounds (7 see 2.567 %, 8 see 2.332 %).
        let logs = spread(0.0, 0.02, 6);
        let old = vec![1e6; 6];
        let new: Vec<f64> = logs.iter().map(|l| 1e6 * l.exp()).collect();
        let s = paired_sensitivity(&old, &new, 2.5, 0.0).unwrap();
        assert!((s.detectable_pct - 2.890_667).abs() < 1e-4, "{s:?}");
        assert_eq!(s.runs_needed, Some(8), "{s:?}");
        assert_eq!(paired_rounds_needed(0.02, 2.5, POWER), Some(8));
        // At 95 % power (scipy): 10 rounds see 2.624 %, 11 see 2.467 %.
        assert_eq!(paired_rounds_needed(0.02, 2.5, 0.95), Some(11));
    }

    #[test]
    fn the_noise_floor_bounds_what_can_be_detected() {
        let old = spread(100.0, 0.1, 5);
        let s = welch_sensitivity(&old, &old, 1.0, 2.0).unwrap();
        assert_eq!(s.detectable_pct, 2.0);
        assert_eq!(s.runs_needed, None, "1 % is under the 2 % floor: never");
        // Too noisy for a thousand runs.
        let wild = spread(100.0, 200.0, 3);
        let s = welch_sensitivity(&wild, &wild, 0.5, 0.0).unwrap();
        assert_eq!(s.runs_needed, None);
        assert_eq!(welch_sensitivity(&[1.0], &old, 5.0, 0.0), None);
        assert_eq!(paired_sensitivity(&[1.0, 0.0], &[1.0, 1.0], 5.0, 0.0), None);
        let one_run = vec![vec![1.0, 2.0, 3.0]];
        assert_eq!(runs_sensitivity(&one_run, &one_run, 5.0, 0.0), None);
    }

    /// How often a test says "changed" (p < α, no floor) when the new side
    /// is truly `effect_pct` % off, over seeded trials.
    fn detected(trials: usize, mut trial: impl FnMut() -> Option<Change>) -> f64 {
        let hits = (0..trials)
            .filter(|_| trial().is_some_and(|c| c.p < ALPHA))
            .count();
        hits as f64 / trials as f64
    }

    #[test]
    fn an_effect_of_exactly_the_detectable_size_is_detected_80_percent_of_the_time() {
        // Tolerance: 0.8 ± 0.02, about four standard errors of a rate
        // estimated from 10 000 trials (sd 0.004), plus the approximation's
        // own error. Welch's test estimates its degrees of freedom and loses
        // a little power to it: scipy (200 000 simulated trials of
        // ttest_ind(equal_var=False)) finds 0.795 at 10 runs a side, 0.776
        // at 5; hence 10 runs here.
        const TRIALS: usize = 10_000;
        let mut rng = Normal(23);
        // Welch: 10 runs a side, 3 % between-run sd; the effect from the
        // formula with the true sd (3.975 % by scipy).
        let sd = 3.0;
        let planned = welch_sensitivity(&spread(100.0, sd, 10), &spread(100.0, sd, 10), 5.0, 0.0)
            .unwrap()
            .detectable_pct;
        assert!((planned - 3.975_242).abs() < 1e-4, "{planned}");
        let rate = detected(TRIALS, || {
            let old: Vec<f64> = (0..10).map(|_| 100.0 + sd * rng.next()).collect();
            let new: Vec<f64> = (0..10).map(|_| 100.0 + planned + sd * rng.next()).collect();
            change_between(&old, &new, Basis::Runs)
        });
        assert!((rate - POWER).abs() < 0.02, "Welch: detected {rate}");
        // Paired: 8 rounds, log ratios with sd 0.02.
        let logs = spread(0.0, 0.02, 8);
        let ones = vec![1.0; 8];
        let planned_ratio: Vec<f64> = logs.iter().map(|l| l.exp()).collect();
        let planned = paired_sensitivity(&ones, &planned_ratio, 5.0, 0.0)
            .unwrap()
            .detectable_pct;
        let rate = detected(TRIALS, || {
            let old: Vec<f64> = (0..8).map(|_| 1e6 * (1.0 + 0.05 * rng.next())).collect();
            let new: Vec<f64> = old
                .iter()
                .map(|o| o * (1.0 + planned / 100.0) * (0.02 * rng.next()).exp())
                .collect();
            paired_change(&old, &new)
        });
        assert!((rate - POWER).abs() < 0.02, "paired: detected {rate}");
    }
}
