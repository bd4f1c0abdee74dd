//! Two sides → the [`Change`] between them and its [`Verdict`].

use serde::{Deserialize, Serialize};

use super::student::{t_critical, t_two_sided_p, welch, ALPHA, CONFIDENCE};
use super::summary::{mean_sd, MeanSd};

/// What a change was estimated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Run means on both sides (Welch): between-run drift is in the interval.
    Runs,
    /// Runs paired round by round (interleaved in one invocation): the drift
    /// a round shares cancels out.
    PairedRuns,
    /// The seconds of one run a side: drift between runs is not captured.
    Seconds,
}

/// The change from an old to a new rate, in percent of the old, with its 95 %
/// confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub percent: f64,
    pub low: f64,
    pub high: f64,
    /// Two-sided p-value of "no change".
    pub p: f64,
    pub basis: Basis,
}

/// The change between two independent sets of observations (run means, or a
/// single run's seconds): the ratio of the new mean to the old, in % (so the
/// point estimate is the difference of the means in % of the old), with a
/// Welch t interval taken on the log of that ratio. Rates and times are
/// positive and their changes multiplicative, so the interval is one of
/// ratios: it cannot reach −100 % (no rate falls below nothing), and it is
/// wider upward than downward, as a ratio's is. The log ratio's standard
/// error comes from each side's relative standard error (the delta method:
/// var ln x̄ ≈ s² / (n x̄²)), its degrees of freedom from Welch–Satterthwaite
/// on those, and the p-value from the same t, so that the verdict and the
/// interval agree. `None` with fewer than two values on a side or an old
/// mean that is not positive.
pub fn change_between(old: &[f64], new: &[f64], basis: Basis) -> Option<Change> {
    if old.len() < 2 || new.len() < 2 {
        return None;
    }
    let (a, b) = (mean_sd(old), mean_sd(new));
    if a.mean <= 0.0 || b.mean < 0.0 {
        return None;
    }
    let percent = (b.mean - a.mean) / a.mean * 100.0;
    if b.mean == 0.0 {
        // Every new value is 0: the rate fell by all of it, exactly.
        let p = welch(old, new)?.p;
        return Some(Change {
            percent,
            low: -100.0,
            high: -100.0,
            p,
            basis,
        });
    }
    let log_ratio = (b.mean / a.mean).ln();
    let relative_var = |m: MeanSd, n: usize| (m.sd / m.mean).powi(2) / n as f64;
    let (va, vb) = (relative_var(a, old.len()), relative_var(b, new.len()));
    let se = (va + vb).sqrt();
    let (half, p) = if se == 0.0 {
        (0.0, if log_ratio == 0.0 { 1.0 } else { 0.0 })
    } else {
        let df = (va + vb).powi(2)
            / (va.powi(2) / (old.len() - 1) as f64 + vb.powi(2) / (new.len() - 1) as f64);
        (
            t_critical(CONFIDENCE, df)? * se,
            t_two_sided_p(log_ratio / se, df),
        )
    };
    let pct = |x: f64| x.exp_m1() * 100.0;
    Some(Change {
        percent,
        low: pct(log_ratio - half),
        high: pct(log_ratio + half),
        p,
        basis,
    })
}

/// The change from `old` to `new` measured in the same rounds (`old[i]` and
/// `new[i]` ran side by side): the mean log ratio and its t interval, so that
/// whatever slowed a whole round cancels. `None` with fewer than two rounds or
/// a rate that is not positive.
pub fn paired_change(old: &[f64], new: &[f64]) -> Option<Change> {
    paired_change_at(old, new, CONFIDENCE)
}

/// [`paired_change`] with an interval of another `confidence`.
pub fn paired_change_at(old: &[f64], new: &[f64], confidence: f64) -> Option<Change> {
    if old.len() != new.len() || old.len() < 2 {
        return None;
    }
    if old.iter().chain(new).any(|&v| v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = old.iter().zip(new).map(|(a, b)| (b / a).ln()).collect();
    let n = logs.len() as f64;
    let MeanSd { mean, sd } = mean_sd(&logs);
    let se = sd / n.sqrt();
    let (half, p) = if se == 0.0 {
        (0.0, if mean == 0.0 { 1.0 } else { 0.0 })
    } else {
        (
            t_critical(confidence, n - 1.0)? * se,
            t_two_sided_p(mean / se, n - 1.0),
        )
    };
    let pct = |x: f64| x.exp_m1() * 100.0;
    Some(Change {
        percent: pct(mean),
        low: pct(mean - half),
        high: pct(mean + half),
        p,
        basis: Basis::PairedRuns,
    })
}

/// The one rule behind every verdict and the regression gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantChange,
}

/// Which way a figure improves: a rate is better higher, a time lower.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Better {
    Higher,
    Lower,
}

impl Verdict {
    /// A figure changed when its interval excludes no change (p < α) and the
    /// change is at least the noise floor, `noise_pct`, in size; it got
    /// faster when it moved the way `better` says.
    pub fn of(change: &Change, better: Better, noise_pct: f64) -> Verdict {
        let significant = change.p < ALPHA && change.percent.abs() >= noise_pct;
        let up = change.percent > 0.0;
        match (significant, up == (better == Better::Higher)) {
            (false, _) => Verdict::NoSignificantChange,
            (true, true) => Verdict::Faster,
            (true, false) => Verdict::Slower,
        }
    }

    /// Whether `change` of a figure that is `better` one way, judged so,
    /// fails a gate that allows `allowed_pct` % the wrong way.
    pub fn fails_gate(self, change: &Change, better: Better, allowed_pct: f64) -> bool {
        let worse_by = match better {
            Better::Higher => -change.percent,
            Better::Lower => change.percent,
        };
        self == Verdict::Slower && worse_by > allowed_pct
    }

    pub fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantChange => "no significant change",
        }
    }
}

/// One benchmark's observations on one side of a comparison: each run's
/// measured per-second rates.
pub type RunsOfSeconds<'a> = &'a [Vec<f64>];

/// The means of a side's runs that measured anything.
pub(super) fn run_means(runs: RunsOfSeconds<'_>) -> Vec<f64> {
    runs.iter()
        .filter(|r| !r.is_empty())
        .map(|r| mean_sd(r).mean)
        .collect()
}

/// Compares two sides made of runs. With two runs or more on each side the
/// run means are the observations; otherwise the seconds of a side's only
/// run are, and the result says so ([`Basis::Seconds`]): such an interval
/// leaves the drift between runs out.
pub fn compare_runs(old: RunsOfSeconds<'_>, new: RunsOfSeconds<'_>) -> Option<Change> {
    let (old_means, new_means) = (run_means(old), run_means(new));
    if old_means.len() >= 2 && new_means.len() >= 2 {
        return change_between(&old_means, &new_means, Basis::Runs);
    }
    let seconds =
        |runs: RunsOfSeconds<'_>| -> Vec<f64> { runs.iter().flatten().copied().collect() };
    change_between(&seconds(old), &seconds(new), Basis::Seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal::Normal;

    #[test]
    fn a_longer_time_is_slower() {
        let longer = Change {
            percent: 10.0,
            low: 5.0,
            high: 15.0,
            p: 0.001,
            basis: Basis::Runs,
        };
        let verdict = Verdict::of(&longer, Better::Lower, 2.0);
        assert_eq!(verdict, Verdict::Slower);
        assert!(verdict.fails_gate(&longer, Better::Lower, 5.0));
        assert!(!verdict.fails_gate(&longer, Better::Lower, 12.0));
        // The same change of a rate is faster, and passes any gate.
        let as_rate = Verdict::of(&longer, Better::Higher, 2.0);
        assert_eq!(as_rate, Verdict::Faster);
        assert!(!as_rate.fails_gate(&longer, Better::Higher, 0.0));
        let shorter = Change {
            percent: -10.0,
            low: -15.0,
            high: -5.0,
            ..longer
        };
        assert_eq!(Verdict::of(&shorter, Better::Lower, 2.0), Verdict::Faster);
    }

    /// The noise of this project's VMs, as a model: each run drifts by a
    /// normal offset of `drift` (relative sd), and each of its seconds varies
    /// by `second` around the run's level.
    struct Machine {
        drift: f64,
        second: f64,
        seconds: usize,
    }

    /// The VMs of docs/performance.md: 3 % run-to-run drift, 6 % per second,
    /// five measured seconds a run.
    const VM: Machine = Machine {
        drift: 0.03,
        second: 0.06,
        seconds: 5,
    };

    impl Machine {
        fn runs(&self, rng: &mut Normal, rate: f64, runs: usize) -> Vec<Vec<f64>> {
            (0..runs)
                .map(|_| {
                    let level = rate * (1.0 + self.drift * rng.next());
                    (0..self.seconds)
                        .map(|_| level * (1.0 + self.second * rng.next()))
                        .collect()
                })
                .collect()
        }

        /// How often compare_runs' verdict (at the default 2 % noise floor, or
        /// `floor`) differs from "no change" when the new side's true rate is
        /// `ratio` times the old.
        fn detection_rate(&self, seed: u64, runs: usize, ratio: f64, floor: f64) -> f64 {
            const TRIALS: usize = 20_000;
            let mut rng = Normal(seed);
            let hits = (0..TRIALS)
                .filter(|_| {
                    let old = self.runs(&mut rng, 1e6, runs);
                    let new = self.runs(&mut rng, 1e6 * ratio, runs);
                    let change = compare_runs(&old, &new).unwrap();
                    Verdict::of(&change, Better::Higher, floor) != Verdict::NoSignificantChange
                })
                .count();
            hits as f64 / TRIALS as f64
        }
    }

    /// Three standard errors of a rate of α estimated from the trials: a
    /// calibrated test sits at α, and its estimate wanders around it.
    const SAMPLING: f64 = 0.0046;

    #[test]
    fn identical_sides_are_called_different_at_most_alpha_of_the_time() {
        // At the run counts people use, with the default 2 % floor, false
        // alarms stay under α (measured: 3.2 % at 3 runs, 4.6 % at 5).
        for runs in [3, 5] {
            let rate = VM.detection_rate(runs as u64, runs, 1.0, 2.0);
            assert!(rate <= ALPHA, "{runs} runs: false alarms {rate}");
        }
        // With many runs the floor stops mattering and the t test alone is
        // calibrated: α, within the simulation's sampling error.
        for runs in [12, 20] {
            let rate = VM.detection_rate(100 + runs as u64, runs, 1.0, 0.0);
            assert!(rate <= ALPHA + SAMPLING, "{runs} runs: false alarms {rate}");
        }
    }

    #[test]
    fn per_second_samples_would_raise_false_alarms() {
        // The procedure before independent runs: one run a side, its seconds
        // as the observations. On a drifting machine it cries wolf far more
        // often than α: the reason runs are the unit.
        let rate = VM.detection_rate(7, 1, 1.0, 0.0);
        assert!(rate > 3.0 * ALPHA, "single-run false alarms {rate}");
    }

    #[test]
    fn a_five_percent_change_is_found_at_the_recommended_run_count() {
        // docs/sensitivity.md recommends 12 runs a side for a 5 % change on these VMs
        // (84 % measured; 10 runs give 77 %, 5 runs 40 %).
        let slower = VM.detection_rate(11, 12, 0.95, 2.0);
        assert!(slower >= 0.8, "power {slower}");
        let faster = VM.detection_rate(12, 12, 1.05, 2.0);
        assert!(faster >= 0.8, "power {faster}");
    }

    #[test]
    fn paired_rounds_cancel_shared_drift() {
        // Both sides share each round's drift: the interval of the paired
        // change is narrow where Welch's on the same data is wide.
        let mut rng = Normal(3);
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let level = 1e6 * (1.0 + 0.05 * rng.next());
            old.push(level * (1.0 + 0.002 * rng.next()));
            new.push(level * 1.03 * (1.0 + 0.002 * rng.next()));
        }
        let paired = paired_change(&old, &new).unwrap();
        assert!(paired.low > 2.0 && paired.high < 4.0, "{paired:?}");
        assert_eq!(Verdict::of(&paired, Better::Higher, 2.0), Verdict::Faster);
        let unpaired = change_between(&old, &new, Basis::Runs).unwrap();
        assert_eq!(
            Verdict::of(&unpaired, Better::Higher, 2.0),
            Verdict::NoSignificantChange
        );
    }

    #[test]
    fn the_gate_and_the_verdict_follow_one_rule() {
        let change = |percent: f64, p: f64| Change {
            percent,
            low: percent - 1.0,
            high: percent + 1.0,
            p,
            basis: Basis::Runs,
        };
        // Significant but inside a 20 % noise floor: no verdict, no failure.
        let c = change(-11.0, 0.04);
        assert_eq!(
            Verdict::of(&c, Better::Higher, 20.0),
            Verdict::NoSignificantChange
        );
        assert!(!Verdict::of(&c, Better::Higher, 20.0).fails_gate(&c, Better::Higher, 5.0));
        let c = change(-11.0, 0.01);
        assert_eq!(Verdict::of(&c, Better::Higher, 2.0), Verdict::Slower);
        assert!(Verdict::of(&c, Better::Higher, 2.0).fails_gate(&c, Better::Higher, 5.0));
        assert!(!Verdict::of(&c, Better::Higher, 2.0).fails_gate(&c, Better::Higher, 12.0));
        let c = change(8.0, 0.01);
        assert!(!Verdict::of(&c, Better::Higher, 2.0).fails_gate(&c, Better::Higher, 0.0));
    }

    #[test]
    fn a_rate_cannot_fall_by_more_than_all_of_it() {
        // A noisy old side against a much slower new one: an interval on the
        // difference of the means reached −261 % here.
        let old = [100.0, 300.0, 500.0];
        let new = [10.0, 12.0, 14.0];
        let change = change_between(&old, &new, Basis::Runs).unwrap();
        assert_eq!(change.percent, -96.0);
        assert!(change.low > -100.0, "{change:?}");
        assert!(change.low < change.percent && change.percent < change.high);
        assert!(change.high < 0.0 && change.p < ALPHA, "{change:?}");
        // Nothing left on the new side: −100 % exactly, no lower.
        let gone = change_between(&old, &[0.0, 0.0, 0.0], Basis::Runs).unwrap();
        assert_eq!(
            (gone.percent, gone.low, gone.high),
            (-100.0, -100.0, -100.0)
        );
        // The verdict and the interval agree: p < α exactly when the
        // interval leaves out no change, over many seeded sides.
        let mut rng = Normal(5);
        for _ in 0..2000 {
            let side = |rng: &mut Normal, level: f64| -> Vec<f64> {
                (0..3)
                    .map(|_| level * (1.0 + 0.3 * rng.next()).abs())
                    .collect()
            };
            let (old, new) = (side(&mut rng, 1e6), side(&mut rng, 0.6e6));
            let c = change_between(&old, &new, Basis::Runs).unwrap();
            assert!(
                c.low > -100.0 && c.low <= c.percent && c.percent <= c.high,
                "{c:?}"
            );
            assert_eq!(c.p < ALPHA, c.low > 0.0 || c.high < 0.0, "{c:?}");
        }
    }
}
