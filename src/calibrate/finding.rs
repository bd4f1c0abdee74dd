//! What a calibration's measurements say, with nothing run: the injected
//! cost as sized, the rounds, the changes they show, the rounds a change
//! needs and the rates drawn from them. Pure, so that the report prints it
//! without reaching the orchestration that measured it.

use crate::runner::inject::SpinEffect;
use crate::stats::{self, mean_sd, Better, Change, Verdict};

/// How much a sizing step may grow the loop at once.
const MAX_GROWTH: u64 = 4;
/// The least rounds a per-round spread is estimated from. The sd of n
/// rounds' log ratios has n − 1 degrees of freedom: one round has none, and
/// two give one, whose 95 % t quantile is 12.7 (4.3 with two), so that the
/// rounds needed from it could be off tenfold either way.
pub const MIN_ROUNDS: usize = 3;
/// The power a recommendation is made for: 80 % would miss one change in five.
pub const RECOMMENDED_POWER: f64 = 0.95;
/// Draws of rounds behind an observed rate.
const DRAWS: usize = 200;

/// The injected cost: what it was sized for, and what it measured.
#[derive(Clone, Debug)]
pub struct Injection {
    pub target_pct: f64,
    /// The loop's CPU time, from timing it alone.
    pub cpu_ns: f64,
    pub sizing: Sizing,
}

/// What the sizing runs measured, and the loop sized from them.
#[derive(Clone, Debug)]
pub struct Sizing {
    pub iterations: u64,
    /// The slowdown `iterations` make, from the sizing runs, in % of the rate.
    pub expected_pct: f64,
    pub runs: Vec<SizingRun>,
}

/// One sizing run: the loop's iterations and what they did to the
/// benchmark, paired block by block.
#[derive(Clone, Copy, Debug)]
pub struct SizingRun {
    pub iterations: u64,
    pub measured: SpinEffect,
}

impl Sizing {
    /// Whether the least loop (one iteration) already makes the operation
    /// more than half again `target_pct` % slower: a calibration for
    /// `target_pct` would then be one for something else.
    pub fn overshoots(&self, target_pct: f64) -> bool {
        self.iterations == 1 && self.expected_pct > 1.5 * target_pct
    }

    /// The iterations that make `target_pct` % from what `runs` measured,
    /// and the slowdown they make; `None` when the runs saw no slowdown.
    /// The slowdown's odds, s / (1 − s), are the loop's ns over the
    /// operation's, so they grow in proportion to the iterations: each run
    /// gives the odds of one iteration, and their mean stands for all.
    pub fn from_runs(runs: Vec<SizingRun>, target_pct: f64) -> Option<Sizing> {
        let per_iteration = runs
            .iter()
            .map(|r| {
                let s = r.measured.slowdown;
                s / (1.0 - s) / r.iterations as f64
            })
            .sum::<f64>()
            / runs.len() as f64;
        if !(per_iteration > 0.0 && per_iteration.is_finite()) {
            return None;
        }
        let target_odds = target_pct / (100.0 - target_pct);
        // Runs near the noise can say an iteration adds next to nothing: no
        // more than four times the last run's iterations, so that a loop
        // sized from them stays within what was measured.
        let most = runs.last()?.iterations.saturating_mul(MAX_GROWTH) as f64;
        let iterations = (target_odds / per_iteration).round().clamp(1.0, most) as u64;
        let odds = per_iteration * iterations as f64;
        Some(Sizing {
            iterations,
            expected_pct: odds / (1.0 + odds) * 100.0,
            runs,
        })
    }
}

impl Injection {
    /// The slowdown the measured cost makes, in % of the rate.
    pub fn expected_pct(&self) -> f64 {
        self.sizing.expected_pct
    }
}

/// One round's measured seconds (headline rate) of each arm.
#[derive(Clone, Debug, Default)]
pub struct Round {
    pub a: Vec<f64>,
    pub again: Vec<f64>,
    pub slowed: Vec<f64>,
}

impl Round {
    /// A again and A' against A, in %: what this round alone says.
    pub fn ratios(&self) -> (Option<f64>, Option<f64>) {
        let a = mean_sd(&self.a).mean;
        let ratio = |other: &[f64]| {
            let b = mean_sd(other).mean;
            (a > 0.0 && b > 0.0).then(|| (b / a - 1.0) * 100.0)
        };
        (ratio(&self.again), ratio(&self.slowed))
    }
}

/// The two changes of a set of rounds, paired by round: A again against A
/// (a false alarm if called), and A' against A; `seconds` keeps each run's
/// first seconds only. `None` for a change with fewer than two rounds.
pub fn judge(rounds: &[Round], seconds: Option<usize>) -> (Option<Change>, Option<Change>) {
    let mean = |s: &[f64]| -> Option<f64> {
        let s = &s[..seconds.unwrap_or(s.len()).min(s.len())];
        (!s.is_empty()).then(|| mean_sd(s).mean)
    };
    let pairs = |pick: fn(&Round) -> &Vec<f64>| -> (Vec<f64>, Vec<f64>) {
        rounds
            .iter()
            .filter_map(|r| Some((mean(&r.a)?, mean(pick(r))?)))
            .unzip()
    };
    let (a, again) = pairs(|r| &r.again);
    let (b, slowed) = pairs(|r| &r.slowed);
    (
        stats::paired_change(&a, &again),
        stats::paired_change(&b, &slowed),
    )
}

/// Whether a comparison calls A/A different (a false alarm), and whether it
/// calls A' slower (a detection).
pub fn calls(judged: &(Option<Change>, Option<Change>)) -> (bool, bool) {
    let verdict =
        |c: &Option<Change>| c.map(|c| Verdict::of(&c, Better::Higher, stats::NOISE_FLOOR_PCT));
    (
        verdict(&judged.0).is_some_and(|v| v != Verdict::NoSignificantChange),
        verdict(&judged.1) == Some(Verdict::Slower),
    )
}

/// What the rounds say of one run duration.
#[derive(Clone, Copy, Debug)]
pub struct Finding {
    pub seconds: u32,
    /// The sd of the per-round log ratio A'/A.
    pub log_sd: f64,
    /// A' against A over every round.
    pub observed: Option<Change>,
    /// Rounds that detect the effect with [`RECOMMENDED_POWER`].
    pub rounds_needed: Option<u32>,
    /// Observed at `rounds_needed`: (detected, false alarms) of `DRAWS` draws.
    pub rates: Option<(f64, f64)>,
    /// Wall seconds of one comparison at `rounds_needed` (two runs a round).
    pub cost_secs: Option<f64>,
}

/// Detection and false-alarm rates of comparisons of `n` rounds drawn
/// (without replacement, seeded) from those measured; `None` when fewer
/// than `n` were.
pub fn drawn_rates(rounds: &[Round], n: usize, seconds: u32) -> Option<(f64, f64)> {
    if rounds.len() < n || n < 2 {
        return None;
    }
    let mut state = 0x5eed_u64;
    let (mut detected, mut alarms) = (0usize, 0usize);
    for _ in 0..DRAWS {
        let mut picked: Vec<usize> = (0..rounds.len()).collect();
        for i in 0..n {
            let j = i + (next(&mut state) % (picked.len() - i) as u64) as usize;
            picked.swap(i, j);
        }
        let sample: Vec<Round> = picked[..n].iter().map(|&i| rounds[i].clone()).collect();
        let (alarm, detection) = calls(&judge(&sample, Some(seconds as usize)));
        alarms += usize::from(alarm);
        detected += usize::from(detection);
    }
    Some((detected as f64 / DRAWS as f64, alarms as f64 / DRAWS as f64))
}

/// splitmix64: the draws are the same every time for the same rounds.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The cheapest duration that reaches the power, by the wall time of one
/// comparison.
pub fn best(findings: &[Finding]) -> Option<&Finding> {
    findings
        .iter()
        .filter(|f| f.cost_secs.is_some())
        .min_by(|a, b| {
            a.cost_secs
                .partial_cmp(&b.cost_secs)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
}

/// The rounds needed and the observed rates for each duration up to the
/// one measured (`duration`), runs of `warmup` seconds more and
/// `overhead_secs` of set-up and tear-down.
pub fn weigh(
    rounds: &[Round],
    (warmup, duration): (u32, u32),
    effect: f64,
    overhead_secs: f64,
) -> Vec<Finding> {
    (1..=duration)
        .map(|seconds| {
            let logs: Vec<f64> = rounds
                .iter()
                .filter_map(|r| {
                    let n = seconds as usize;
                    let first = |s: &Vec<f64>| (s.len() >= n).then(|| mean_sd(&s[..n]).mean);
                    let (a, b) = (first(&r.a)?, first(&r.slowed)?);
                    (a > 0.0 && b > 0.0).then(|| (b / a).ln())
                })
                .collect();
            let log_sd = mean_sd(&logs).sd;
            let rounds_needed = (logs.len() >= MIN_ROUNDS)
                .then(|| stats::paired_rounds_needed(log_sd, effect, RECOMMENDED_POWER))
                .flatten()
                .map(|n| n.max(MIN_ROUNDS as u32));
            let per_run = f64::from(warmup + seconds) + overhead_secs;
            Finding {
                seconds,
                log_sd,
                observed: judge(rounds, Some(seconds as usize)).1,
                rounds_needed,
                rates: rounds_needed.and_then(|n| drawn_rates(rounds, n as usize, seconds)),
                cost_secs: rounds_needed.map(|n| f64::from(n) * 2.0 * per_run),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(ratios: &[(f64, f64)]) -> Vec<Round> {
        ratios
            .iter()
            .map(|&(again, slowed)| Round {
                a: vec![1e6, 1e6],
                again: vec![1e6 * again, 1e6 * again],
                slowed: vec![1e6 * slowed, 1e6 * slowed],
            })
            .collect()
    }

    #[test]
    fn a_clear_slowdown_is_detected_and_a_steady_again_is_no_alarm() {
        let r = rounds(&[(1.001, 0.95), (0.999, 0.949), (1.0, 0.951), (1.0005, 0.95)]);
        let judged = judge(&r, None);
        assert_eq!(calls(&judged), (false, true));
        let slowed = judged.1.unwrap();
        assert!((slowed.percent + 5.0).abs() < 0.1, "{slowed:?}");
        let (detected, alarms) = drawn_rates(&r, 3, 2).unwrap();
        assert_eq!((detected, alarms), (1.0, 0.0));
        assert_eq!(drawn_rates(&r, 5, 2), None);
    }

    #[test]
    fn the_first_seconds_stand_for_a_shorter_run() {
        let mut r = rounds(&[(1.0, 0.95), (1.0, 0.95), (1.0, 0.95)]);
        // The second second of A' is as fast as A: over one second, −5 %;
        // over two, −2.5 %.
        for round in &mut r {
            round.slowed[1] = 1e6;
        }
        let one = judge(&r, Some(1)).1.unwrap();
        let two = judge(&r, None).1.unwrap();
        assert!((one.percent + 5.0).abs() < 1e-9 && (two.percent + 2.5).abs() < 1e-9);
    }

    fn sizing_run(iterations: u64, slowdown: f64) -> SizingRun {
        SizingRun {
            iterations,
            measured: SpinEffect {
                op_ns: 1000.0,
                slowdown,
                pairs: 100,
            },
        }
    }

    #[test]
    fn the_loop_is_sized_from_the_mean_odds_of_an_iteration() {
        // 1000 ns operations, 2 ns an iteration: 20 iterations add 40 ns,
        // 40/1040 slower; 30 add 60, 60/1060. 5 % slower takes 1000·5/95 =
        // 52.6 ns, 26 iterations (52 ns, 52/1052 = 4.94 %).
        let runs = vec![sizing_run(20, 40.0 / 1040.0), sizing_run(30, 60.0 / 1060.0)];
        let sizing = Sizing::from_runs(runs, 5.0).unwrap();
        assert_eq!(sizing.iterations, 26);
        assert!(
            (sizing.expected_pct - 5200.0 / 1052.0).abs() < 1e-9,
            "{sizing:?}"
        );
        // Runs that disagree are averaged: 1.8 and 2.2 ns an iteration.
        let runs = vec![sizing_run(25, 45.0 / 1045.0), sizing_run(25, 55.0 / 1055.0)];
        assert_eq!(Sizing::from_runs(runs, 5.0).unwrap().iterations, 26);
        // A run that says an iteration adds next to nothing grows the loop
        // four times at the most.
        let runs = vec![sizing_run(10, 0.0001)];
        assert_eq!(Sizing::from_runs(runs, 5.0).unwrap().iterations, 40);
        // A loop that slowed nothing cannot be sized, nor can no run.
        assert!(Sizing::from_runs(vec![], 5.0).is_none());
        assert!(Sizing::from_runs(vec![sizing_run(25, 0.0)], 5.0).is_none());
        assert!(Sizing::from_runs(vec![sizing_run(25, -0.01)], 5.0).is_none());
    }

    #[test]
    fn an_operation_that_one_iteration_slows_too_much_is_refused() {
        // 2 ns an iteration, one sizing run of 10 iterations. A 3 ns
        // operation: one iteration makes it 40 % slower; 20 ns: 9.1 %, over
        // 1.5 × 5 %: both refused. 40 ns: 4.8 % with one iteration, kept;
        // 1000 ns: 26 iterations, kept.
        let at = |op_ns: f64| {
            let odds = 20.0 / op_ns;
            Sizing::from_runs(vec![sizing_run(10, odds / (1.0 + odds))], 5.0).unwrap()
        };
        assert!(at(3.0).overshoots(5.0), "{:?}", at(3.0));
        assert!(at(20.0).overshoots(5.0), "{:?}", at(20.0));
        assert!(!at(40.0).overshoots(5.0), "{:?}", at(40.0));
        assert!(!at(1000.0).overshoots(5.0), "{:?}", at(1000.0));
        assert_eq!(at(40.0).iterations, 1);
    }
}
