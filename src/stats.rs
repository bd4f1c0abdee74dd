//! Samples in, summary out; runs in, run statistics out; and the tests that
//! compare two sides. Pure functions: no clocks, no I/O.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

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
    /// What the figures are means of: a run's measured seconds, or runs.
    /// Kept in a result file as `"samples": N` or `"runs": N`.
    #[serde(flatten)]
    pub over: Over,
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

/// What a [`Summary`]'s figures are means of, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Over {
    /// The measured (non-warm-up) seconds of one run.
    Samples(usize),
    /// Independent runs, each one observation.
    Runs(usize),
}

impl Over {
    pub fn count(self) -> usize {
        match self {
            Over::Samples(n) | Over::Runs(n) => n,
        }
    }
}

/// How late a tick may fire before the run is called noisy.
pub const NOISY_LATE_NS: i64 = 50_000_000;

/// Microseconds per operation from a rate of operations per second: the
/// inverse of the mean, its sd carried over to first order.
fn usecs_per_op(total: MeanSd) -> MeanSd {
    if total.mean > 0.0 {
        MeanSd {
            mean: 1e6 / total.mean,
            sd: 1e6 * total.sd / (total.mean * total.mean),
        }
    } else {
        MeanSd { mean: 0.0, sd: 0.0 }
    }
}

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
    let usecs_per_op = usecs_per_op(total);
    Some(Summary {
        over: Over::Samples(measured.len()),
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

/// The summary over independent runs: each figure is the mean of the runs'
/// figures and its spread the between-run sd.
/// `None` without a run.
pub fn summarize_runs(runs: &[Summary], producers: usize) -> Option<Summary> {
    if runs.is_empty() {
        return None;
    }
    let over = |f: fn(&Summary) -> f64| mean_sd(&runs.iter().map(f).collect::<Vec<f64>>());
    let hits = over(|s| s.hits.mean);
    let drops = over(|s| s.drops.mean);
    let total = over(|s| s.total.mean);
    let per_producer = hits.mean / producers.max(1) as f64;
    let usecs_per_op = usecs_per_op(total);
    let max_late_ns = runs.iter().map(|s| s.max_late_ns).max().unwrap_or(0);
    Some(Summary {
        over: Over::Runs(runs.len()),
        hits,
        drops,
        total,
        per_producer,
        latency_ns: (per_producer > 0.0).then(|| 1e9 / per_producer),
        usecs_per_op,
        max_late_ns,
        noisy: runs.iter().any(|s| s.noisy),
    })
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

/// Independent runs of one benchmark: each run's mean rate is one
/// observation, and their spread is what a comparison must beat.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub runs: usize,
    /// The mean of the run means.
    pub mean: f64,
    /// The between-run standard deviation (n − 1); 0 for one run.
    pub sd: f64,
    /// Half the width of the 95 % confidence interval of the mean (Student's
    /// t); `None` for a single run, which says nothing of the drift.
    pub ci95: Option<f64>,
}

impl RunStats {
    /// The interval's half-width as a percentage of the mean.
    pub fn ci_percent(&self) -> Option<f64> {
        let half = self.ci95?;
        (self.mean != 0.0).then(|| half / self.mean.abs() * 100.0)
    }
}

/// The statistics of `run_means`; `None` when there is none.
pub fn run_stats(run_means: &[f64]) -> Option<RunStats> {
    let n = run_means.len();
    if n == 0 {
        return None;
    }
    let MeanSd { mean, sd } = mean_sd(run_means);
    let ci95 = (n >= 2)
        .then(|| t_critical(CONFIDENCE, (n - 1) as f64))
        .flatten()
        .map(|t| t * sd / (n as f64).sqrt());
    Some(RunStats {
        runs: n,
        mean,
        sd,
        ci95,
    })
}

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
/// single run's seconds), by Welch's t: the difference of the means and its
/// interval, as percentages of the old mean. `None` with fewer than two
/// values on a side or an old mean of 0.
pub fn change_between(old: &[f64], new: &[f64], basis: Basis) -> Option<Change> {
    let w = welch(old, new)?;
    let (a, b) = (mean_sd(old), mean_sd(new));
    if a.mean == 0.0 {
        return None;
    }
    let diff = b.mean - a.mean;
    let se = (a.sd.powi(2) / old.len() as f64 + b.sd.powi(2) / new.len() as f64).sqrt();
    let half = if se == 0.0 {
        0.0
    } else {
        t_critical(CONFIDENCE, w.df)? * se
    };
    let pct = |x: f64| x / a.mean.abs() * 100.0;
    Some(Change {
        percent: pct(diff),
        low: pct(diff - half),
        high: pct(diff + half),
        p: w.p,
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

/// The quantile of Student's t below which `p` of the distribution lies.
fn t_quantile(p: f64, df: f64) -> Option<f64> {
    students_t(df).map(|dist| dist.inverse_cdf(p))
}

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

/// Where a sequential comparison stands after a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The adjusted interval excludes no change, and the change is at least
    /// the noise floor.
    Different,
    /// The adjusted interval lies within ±the equivalence margin.
    Equivalent,
    Undecided,
}

/// The first round a sequential comparison looks at: fewer give no spread.
pub const FIRST_LOOK: u32 = 3;

/// The significance level of each look when up to `max_rounds` rounds are
/// looked at from [`FIRST_LOOK`] on, one look a round: α divided by the
/// planned looks (Bonferroni), so that the chance of any false call over
/// all the looks stays at most α.
pub fn alpha_per_look(max_rounds: u32) -> f64 {
    let looks = max_rounds.saturating_sub(FIRST_LOOK) + 1;
    ALPHA / f64::from(looks.max(1))
}

/// One look of a sequential paired comparison: the change over the rounds so
/// far with its interval at 1 − `alpha` (see [`alpha_per_look`]), and what it
/// decides against the equivalence margin `within_pct` and the noise floor.
pub fn sequential_look(
    old: &[f64],
    new: &[f64],
    alpha: f64,
    within_pct: f64,
    floor_pct: f64,
) -> Option<(Decision, Change)> {
    let change = paired_change_at(old, new, 1.0 - alpha)?;
    let excludes_zero = change.low > 0.0 || change.high < 0.0;
    let decision = if excludes_zero && change.percent.abs() >= floor_pct {
        Decision::Different
    } else if change.low >= -within_pct && change.high <= within_pct {
        Decision::Equivalent
    } else {
        Decision::Undecided
    };
    Some((decision, change))
}

/// The one rule behind every verdict and the regression gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantChange,
}

impl Verdict {
    /// A rate changed when its interval excludes no change (p < α) and the
    /// change is at least the noise floor, `noise_pct`, in size.
    pub fn of(change: &Change, noise_pct: f64) -> Verdict {
        let significant = change.p < ALPHA && change.percent.abs() >= noise_pct;
        match (significant, change.percent > 0.0) {
            (false, _) => Verdict::NoSignificantChange,
            (true, true) => Verdict::Faster,
            (true, false) => Verdict::Slower,
        }
    }

    /// Whether `change`, judged so, fails a gate that allows `allowed_pct` %.
    pub fn fails_gate(self, change: &Change, allowed_pct: f64) -> bool {
        self == Verdict::Slower && -change.percent > allowed_pct
    }

    /// A time (a latency percentile) is judged the other way from a rate:
    /// longer is slower.
    pub fn of_time(change: &Change, noise_pct: f64) -> Verdict {
        let as_rate = Change {
            percent: -change.percent,
            low: -change.high,
            high: -change.low,
            ..*change
        };
        Verdict::of(&as_rate, noise_pct)
    }

    /// Whether a time's `change`, judged so, fails a gate that allows
    /// `allowed_pct` %.
    pub fn fails_time_gate(self, change: &Change, allowed_pct: f64) -> bool {
        self == Verdict::Slower && change.percent > allowed_pct
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

/// Compares two sides made of runs. With two runs or more on each side the
/// run means are the observations; otherwise the seconds of a side's only
/// run are, and the result says so ([`Basis::Seconds`]): such an interval
/// leaves the drift between runs out.
pub fn compare_runs(old: RunsOfSeconds<'_>, new: RunsOfSeconds<'_>) -> Option<Change> {
    let means = |runs: RunsOfSeconds<'_>| -> Vec<f64> {
        runs.iter()
            .filter(|r| !r.is_empty())
            .map(|r| mean_sd(r).mean)
            .collect()
    };
    let (old_means, new_means) = (means(old), means(new));
    if old_means.len() >= 2 && new_means.len() >= 2 {
        return change_between(&old_means, &new_means, Basis::Runs);
    }
    let seconds =
        |runs: RunsOfSeconds<'_>| -> Vec<f64> { runs.iter().flatten().copied().collect() };
    change_between(&seconds(old), &seconds(new), Basis::Seconds)
}

/// The sensitivity of [`compare_runs`] on the same data: Welch's on the run
/// means; `None` unless both sides have two runs or more (a single run's
/// seconds say nothing of the drift a change must beat).
pub fn runs_sensitivity(
    old: RunsOfSeconds<'_>,
    new: RunsOfSeconds<'_>,
    effect_pct: f64,
    floor_pct: f64,
) -> Option<Sensitivity> {
    let means = |runs: RunsOfSeconds<'_>| -> Vec<f64> {
        runs.iter()
            .filter(|r| !r.is_empty())
            .map(|r| mean_sd(r).mean)
            .collect()
    };
    welch_sensitivity(&means(old), &means(new), effect_pct, floor_pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_longer_time_is_slower() {
        let longer = Change {
            percent: 10.0,
            low: 5.0,
            high: 15.0,
            p: 0.001,
            basis: Basis::Runs,
        };
        let verdict = Verdict::of_time(&longer, 2.0);
        assert_eq!(verdict, Verdict::Slower);
        assert!(verdict.fails_time_gate(&longer, 5.0));
        assert!(!verdict.fails_time_gate(&longer, 12.0));
        let shorter = Change {
            percent: -10.0,
            low: -15.0,
            high: -5.0,
            ..longer
        };
        assert_eq!(Verdict::of_time(&shorter, 2.0), Verdict::Faster);
    }

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
        assert_eq!(s.over, Over::Samples(2));
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

    #[test]
    fn nothing_measured_gives_no_summary() {
        assert_eq!(summarize(&[sample(0, 5, 1_000_000_000, true)], 1), None);
        let s = summarize(&[sample(0, 0, 1_000_000_000, false)], 1).unwrap();
        assert_eq!(s.latency_ns, None);
    }

    /// A seeded generator of normal deviates (splitmix64, Box–Muller): the
    /// decision procedure's tests must give the same answer every time.
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn next(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
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
                    Verdict::of(&change, floor) != Verdict::NoSignificantChange
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
        assert_eq!(Verdict::of(&paired, 2.0), Verdict::Faster);
        let unpaired = change_between(&old, &new, Basis::Runs).unwrap();
        assert_eq!(Verdict::of(&unpaired, 2.0), Verdict::NoSignificantChange);
    }

    #[test]
    fn run_statistics_give_the_t_interval() {
        let stats = run_stats(&[10.0, 12.0, 11.0, 13.0, 9.0]).unwrap();
        assert_eq!(stats.mean, 11.0);
        // sd = sqrt(2.5); half-width = 2.776 × sd / sqrt(5).
        let half = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((stats.ci95.unwrap() - half).abs() < 1e-4, "{stats:?}");
        assert!((stats.ci_percent().unwrap() - half / 11.0 * 100.0).abs() < 1e-3);
        assert_eq!(run_stats(&[5.0]).unwrap().ci95, None);
        assert_eq!(run_stats(&[]), None);
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
        assert_eq!(Verdict::of(&c, 20.0), Verdict::NoSignificantChange);
        assert!(!Verdict::of(&c, 20.0).fails_gate(&c, 5.0));
        let c = change(-11.0, 0.01);
        assert_eq!(Verdict::of(&c, 2.0), Verdict::Slower);
        assert!(Verdict::of(&c, 2.0).fails_gate(&c, 5.0));
        assert!(!Verdict::of(&c, 2.0).fails_gate(&c, 12.0));
        let c = change(8.0, 0.01);
        assert!(!Verdict::of(&c, 2.0).fails_gate(&c, 0.0));
    }

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

    /// Runs a sequential comparison of rounds drawn from `round` until it
    /// decides or reaches `max` rounds: the decision and the rounds taken.
    fn sequential(rng: &mut Normal, ratio: f64, within: f64, max: u32) -> (Decision, u32) {
        let alpha = alpha_per_look(max);
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for round in 1..=max {
            let level = 1e6 * (1.0 + 0.05 * rng.next());
            old.push(level * (1.0 + 0.02 * rng.next()));
            new.push(level * ratio * (1.0 + 0.02 * rng.next()));
            if round < FIRST_LOOK {
                continue;
            }
            let (decision, _) = sequential_look(&old, &new, alpha, within, 2.0).unwrap();
            if decision != Decision::Undecided {
                return (decision, round);
            }
        }
        (Decision::Undecided, max)
    }

    #[test]
    fn sequential_looks_stay_honest_and_stop_for_a_reason() {
        // 18 looks (rounds 3 to 20) at α/18 each: α = 0.05, 0.00278 a look.
        assert!((alpha_per_look(20) - 0.05 / 18.0).abs() < 1e-12);
        assert_eq!(alpha_per_look(3), ALPHA);
        let mut rng = Normal(41);
        let trials = 2000;
        let outcomes: Vec<(Decision, u32)> = (0..trials)
            .map(|_| sequential(&mut rng, 1.0, 5.0, 20))
            .collect();
        // Identical sides: called different at most α of the time over all
        // the looks (measured: well under), and mostly found equivalent
        // within ±5 % before the cap.
        let false_calls = outcomes
            .iter()
            .filter(|(d, _)| *d == Decision::Different)
            .count();
        assert!(
            (false_calls as f64) < ALPHA * trials as f64,
            "{false_calls}"
        );
        let equivalent = outcomes
            .iter()
            .filter(|(d, _)| *d == Decision::Equivalent)
            .count();
        assert!(equivalent as f64 > 0.9 * trials as f64, "{equivalent}");
        // A 10 % slowdown is called different, long before the cap.
        let slower: Vec<(Decision, u32)> = (0..200)
            .map(|_| sequential(&mut rng, 0.9, 5.0, 20))
            .collect();
        assert!(
            slower.iter().all(|(d, _)| *d == Decision::Different),
            "{slower:?}"
        );
        assert!(slower.iter().all(|(_, n)| *n <= 10), "{slower:?}");
        // A margin no interval can fit into, and no change: the cap.
        let (decision, rounds) = sequential(&mut rng, 1.0, 0.001, 6);
        assert_eq!((decision, rounds), (Decision::Undecided, 6));
    }
}
