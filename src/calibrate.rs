//! `bench calibrate BENCHMARK`: how small a change this machine can see for
//! one benchmark. Rounds of three runs, interleaved with the order rotated:
//! the benchmark (A), the benchmark again (A/A: any change called is a false
//! alarm), and the benchmark with a known cost added to every operation (A':
//! a busy loop after each of the producer's operations, sized to make it
//! `--effect` % slower by timing, in the benchmark itself, blocks of
//! operations alternately without and with it). The per-round ratios give the
//! spread a paired comparison must beat, and from it the rounds needed; the
//! detection and false-alarm rates at that count are observed by drawing
//! rounds from those measured. `--trials T --runs N` checks a recommendation
//! instead: T independent comparisons of N rounds each, counted.

use std::sync::Arc;
use std::time::Instant;

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::figures::Figure;
use crate::interrupt;
use crate::report::calibrate as lines;
use crate::report::console::Console;
use crate::runner::affinity::{self, Affinity, Placement};
use crate::runner::inject::{self, Blocks, Injected, Measured, Spin};
use crate::runner::phases::Timing;
use crate::runner::{self, Workload};
use crate::stats::{self, mean_sd, Better, Change, Verdict};

pub const AFTER_HELP: &str = "Each round runs the benchmark, the benchmark again and the \
benchmark with an injected cost (a busy loop after each operation, sized to make it --effect % \
slower: what it adds to an operation is timed in the benchmark itself, in blocks of operations \
alternately without and with it, and shown). Changes are \
judged as the interleaved table judges them: paired by round, 95 % confidence, a 2 % noise floor. \
From the spread of the per-round ratios comes the number of rounds that would detect --effect % \
with 95 % power; the detection and false-alarm rates at that count are observed by drawing rounds \
from those measured. --trials T --runs N instead runs T independent comparisons of N rounds and \
counts what they called. Exit codes: 0 ok, 2 bad usage, 3 missing privileges, 4 unsupported.";

#[derive(clap::Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// The benchmark to calibrate for (see bench --list).
    #[arg(value_name = "BENCHMARK")]
    bench: String,
    /// Seconds the calibration may take: no round starts that would end past it.
    #[arg(long, value_name = "SEC", default_value_t = 180,
          value_parser = clap::value_parser!(u64).range(10..=86_400))]
    budget: u64,
    /// The slowdown to inject and look for, in % of the rate.
    #[arg(long, value_name = "PCT", default_value_t = stats::DEFAULT_EFFECT_PCT,
          value_parser = effect)]
    effect: f64,
    /// Warm-up seconds of each run.
    #[arg(short = 'w', long, value_name = "SEC", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(0..=60))]
    warmup: u32,
    /// Measured seconds of each run; the shorter durations weighed are its
    /// first seconds.
    #[arg(short = 'd', long, value_name = "SEC", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=60))]
    duration: u32,
    /// Pin the producer (as bench -a).
    #[arg(short = 'a', long)]
    affinity: bool,
    /// Check a setting instead: T independent comparisons of --runs rounds.
    #[arg(long, value_name = "T",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    trials: Option<u32>,
    /// Rounds per comparison, with --trials.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..=1000))]
    runs: Option<u32>,
}

fn effect(text: &str) -> std::result::Result<f64, String> {
    match text.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v > stats::NOISE_FLOOR_PCT && v < 50.0 => Ok(v),
        Ok(_) => Err(format!(
            "must be more than the {} % noise floor and less than 50",
            stats::NOISE_FLOOR_PCT
        )),
        Err(_) => Err(format!("expected a percentage, got '{text}'")),
    }
}

/// Sizing runs: each after the first is sized from those before it, and
/// the loop from all (one run's slowdown varies by several % of itself).
const SIZING_RUNS: usize = 3;
/// How much a sizing step may grow the loop at once.
const MAX_GROWTH: u64 = 4;
/// Rounds run even when the budget is short: fewer give no spread.
const MIN_ROUNDS: usize = 3;
/// The power a recommendation is made for: 80 % would miss one change in five.
pub const RECOMMENDED_POWER: f64 = 0.95;
/// Draws of rounds behind an observed rate.
const DRAWS: usize = 200;

/// Everything a run of the calibration needs.
struct Setup {
    bench: &'static dyn Benchmark,
    metric: &'static Figure,
    config: RunConfig,
    placement: Placement,
    injection: Injection,
}

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
    pub measured: Measured,
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

/// The three runs of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    A,
    Again,
    Slowed,
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

pub fn run(args: &CalibrateArgs, quiet: bool) -> Result<()> {
    match (args.trials, args.runs) {
        (Some(_), None) => {
            return Err(Error::usage(
                "--trials counts comparisons of --runs N rounds each: give --runs too",
            ))
        }
        (None, Some(_)) => {
            return Err(Error::usage(
                "--runs sets the rounds of each --trials comparison: give --trials T too",
            ))
        }
        _ => {}
    }
    let console = Console::new(false);
    let started = Instant::now();
    let setup = prepare(args, &console, quiet)?;
    console.line(&lines::injection(&setup.injection));
    match (args.trials, args.runs) {
        (Some(trials), Some(runs)) => check(&setup, &console, trials, runs as usize),
        _ => {
            let rounds = budgeted(&setup, &console, args.budget, started)?;
            let findings = weigh(&rounds, &setup, args);
            for line in lines::findings(&findings, rounds.len(), args.effect) {
                console.line(&line);
            }
            console.line(&lines::recommendation(
                best(&findings),
                setup.bench.name(),
                args.effect,
                args.warmup,
                args.affinity,
            ));
            Ok(())
        }
    }
}

/// Resolves the benchmark and its configuration, checks privileges, and
/// sizes the injected cost from a first run of the benchmark.
fn prepare(args: &CalibrateArgs, console: &Console, quiet: bool) -> Result<Setup> {
    let bench = benches::find(&args.bench)
        .ok_or_else(|| Error::usage(format!("unknown benchmark '{}'", args.bench)))?;
    // Refused before anything is loaded: the injected cost follows a
    // producer's operation, and an attach benchmark has none.
    if bench.runs_cycles() {
        return Err(Error::usage(format!(
            "calibrate injects a cost after each producer operation, and {} runs attach cycles, \
             which have none",
            bench.name()
        )));
    }
    let config = config_for(bench, args)?;
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name(), bench.needs())?;
    }
    let online = affinity::online_cpus()?;
    let placement = affinity::place(&config.affinity, config.producers, 0, &online)?;
    let metric = bench.headline();
    if !quiet {
        console.line(&lines::sizing(bench.name()));
    }
    let first = timed(bench, &config, &placement, metric, None)?;
    stopped_while("sizing the injected cost")?;
    let rate = mean_sd(&first).mean;
    if rate <= 0.0 {
        return Err(Error::runtime(format!(
            "{} measured no operation: nothing to calibrate",
            bench.name()
        )));
    }
    let op_ns = 1e9 * config.producers as f64 / rate;
    let extra_ns = op_ns * args.effect / (100.0 - args.effect);
    let (guess, cpu_ns) = inject::sized_for(extra_ns);
    let sizing = size_in_place(bench, &config, &placement, args.effect, guess)?;
    if sizing.overshoots(args.effect) {
        return Err(Error::unsupported(format!(
            "{}'s operations ({op_ns:.1} ns) are too short to be made {} % slower: one iteration \
             of the injected loop makes them {:.0} % slower",
            bench.name(),
            args.effect,
            sizing.expected_pct
        )));
    }
    Ok(Setup {
        bench,
        metric,
        config,
        placement,
        injection: Injection {
            target_pct: args.effect,
            cpu_ns: sizing.iterations as f64 * cpu_ns / guess as f64,
            sizing,
        },
    })
}

/// The benchmark's configuration: its defaults, one producer, the warm-up,
/// duration and pinning asked for.
fn config_for(bench: &'static dyn Benchmark, args: &CalibrateArgs) -> Result<RunConfig> {
    let config = RunConfig {
        producers: 1,
        consumers: 0,
        warmup_secs: args.warmup,
        duration_secs: args.duration,
        affinity: match args.affinity {
            true => Affinity::Auto {
                producers: None,
                consumers: None,
            },
            false => Affinity::None,
        },
        repeat: None,
        ..RunConfig::defaults(benches::resolve_params(bench, &[])?)
    };
    bench.validate(&config)?;
    Ok(config)
}

/// Sizes the loop to make each of the benchmark's operations `target_pct`
/// % slower, measured where it counts: a busy loop after a probe hit need
/// not add its own cost (on one machine, 38 ns of loop made a 736 ns uprobe
/// hit 20 ns slower, not 38). Each sizing run (two seconds, blocks of
/// operations alternately without and with the loop, paired) measures the
/// slowdown its iterations make; all the runs so far size the next
/// ([`Sizing::from_runs`]) and, after the last, the loop itself. The first
/// runs `guess` iterations.
fn size_in_place(
    bench: &dyn Benchmark,
    config: &RunConfig,
    placement: &Placement,
    target_pct: f64,
    guess: u64,
) -> Result<Sizing> {
    let config = RunConfig {
        warmup_secs: 0,
        duration_secs: 2,
        ..config.clone()
    };
    let mut sizing = Sizing {
        iterations: guess,
        expected_pct: 0.0,
        runs: Vec::new(),
    };
    for _ in 0..SIZING_RUNS {
        let iterations = sizing.iterations;
        let blocks = Arc::new(Blocks::default());
        let spin = Spin {
            iterations,
            blocks: Some(Arc::clone(&blocks)),
        };
        timed(bench, &config, placement, bench.headline(), Some(spin))?;
        // A run cut short by a signal is not one to size from.
        stopped_while("sizing the injected cost")?;
        let measured = blocks.measured().ok_or_else(|| {
            Error::runtime(format!(
                "the injected loop could not be sized: no block of {}'s operations was timed",
                bench.name()
            ))
        })?;
        let mut runs = std::mem::take(&mut sizing.runs);
        runs.push(SizingRun {
            iterations,
            measured,
        });
        sizing = Sizing::from_runs(runs, target_pct).ok_or_else(|| {
            Error::runtime(format!(
                "the injected loop made no measurable slowdown of {} ({} timed block pairs): it \
                 cannot be sized",
                bench.name(),
                measured.pairs
            ))
        })?;
    }
    Ok(sizing)
}

/// A signal before the rounds: nothing is measured yet, and the exit code
/// says which signal.
fn stopped_while(what: &str) -> Result<()> {
    match interrupt::received() {
        Some(signal) => Err(Error::Interrupted {
            message: format!(
                "interrupted by {} while {what}: nothing measured",
                interrupt::signal_name(signal)
            ),
            code: interrupt::exit_code(signal),
        }),
        None => Ok(()),
    }
}

/// One run of `bench` (with `spin` after each operation): its measured
/// seconds' headline rates.
fn timed(
    bench: &dyn Benchmark,
    config: &RunConfig,
    placement: &Placement,
    metric: &Figure,
    spin: Option<Spin>,
) -> Result<Vec<f64>> {
    let workload: Box<dyn Workload> = match spin {
        None => bench.setup(config)?,
        Some(spin) => Box::new(Injected {
            inner: bench.setup(config)?,
            spin,
        }),
    };
    let timing = Timing {
        warmup_secs: config.warmup_secs,
        duration_secs: config.duration_secs,
    };
    let samples = runner::run_timed(workload.as_ref(), placement, timing, &mut [])?;
    drop(workload);
    Ok(samples
        .iter()
        .filter(|s| !s.warmup)
        .map(
            metric
                .per_second
                .unwrap_or(crate::stats::Sample::hits_per_sec),
        )
        .collect())
}

/// One round: the three arms, in an order rotated by `index`.
fn round(setup: &Setup, index: usize) -> Result<Round> {
    let mut arms = [Arm::A, Arm::Again, Arm::Slowed];
    arms.rotate_left(index % 3);
    let mut round = Round::default();
    for arm in arms {
        if interrupt::received().is_some() {
            break;
        }
        let spin = (arm == Arm::Slowed).then_some(Spin {
            iterations: setup.injection.sizing.iterations,
            blocks: None,
        });
        let seconds = timed(
            setup.bench,
            &setup.config,
            &setup.placement,
            setup.metric,
            spin,
        )?;
        match arm {
            Arm::A => round.a = seconds,
            Arm::Again => round.again = seconds,
            Arm::Slowed => round.slowed = seconds,
        }
    }
    Ok(round)
}

/// Rounds until the budget would be overrun (at least [`MIN_ROUNDS`]), or
/// an interrupt.
fn budgeted(setup: &Setup, console: &Console, budget: u64, started: Instant) -> Result<Vec<Round>> {
    let mut rounds = Vec::new();
    let mut longest = 0.0f64;
    loop {
        let elapsed = started.elapsed().as_secs_f64();
        if rounds.len() >= MIN_ROUNDS && elapsed + longest > budget as f64 {
            break;
        }
        let began = Instant::now();
        let round = round(setup, rounds.len())?;
        if interrupt::received().is_some() {
            break;
        }
        longest = longest.max(began.elapsed().as_secs_f64());
        console.line(&lines::round(rounds.len() + 1, round.ratios()));
        rounds.push(round);
    }
    Ok(rounds)
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

/// `--trials T --runs N`: T independent comparisons of N rounds, counted.
fn check(setup: &Setup, console: &Console, trials: u32, runs: usize) -> Result<()> {
    let (mut alarms, mut detected, mut done) = (0, 0, 0);
    let mut all = Vec::new();
    for trial in 1..=trials {
        let mut rounds = Vec::with_capacity(runs);
        for index in 0..runs {
            rounds.push(round(setup, index)?);
            if interrupt::received().is_some() {
                break;
            }
        }
        if interrupt::received().is_some() {
            break;
        }
        let judged = judge(&rounds, None);
        let (alarm, detection) = calls(&judged);
        alarms += usize::from(alarm);
        detected += usize::from(detection);
        done += 1;
        console.line(&lines::trial(trial, &judged));
        all.extend(rounds);
    }
    let overall = judge(&all, None).1;
    console.line(&lines::checked(
        runs,
        setup.config.duration_secs,
        (detected, alarms, done),
        &setup.injection,
        overall,
    ));
    Ok(())
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

/// The rounds needed and the observed rates for each duration up to the
/// one measured.
fn weigh(rounds: &[Round], setup: &Setup, args: &CalibrateArgs) -> Vec<Finding> {
    (1..=args.duration)
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
            let rounds_needed = (logs.len() >= 2)
                .then(|| stats::paired_rounds_needed(log_sd, args.effect, RECOMMENDED_POWER))
                .flatten()
                .map(|n| n.max(MIN_ROUNDS as u32));
            let per_run = f64::from(args.warmup + seconds) + setup_overhead(setup);
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

/// What setting up and tearing down a run adds to its seconds, roughly.
fn setup_overhead(setup: &Setup) -> f64 {
    if setup.bench.needs_bpf() {
        0.5
    } else {
        0.1
    }
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
fn best(findings: &[Finding]) -> Option<&Finding> {
    findings
        .iter()
        .filter(|f| f.cost_secs.is_some())
        .min_by(|a, b| {
            a.cost_secs
                .partial_cmp(&b.cost_secs)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
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
            measured: Measured {
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
