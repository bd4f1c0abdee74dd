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

use std::time::Instant;

use crate::bpf;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::calibrate as lines;
use crate::report::console::Console;
use crate::stats;

use finding::{best, calls, judge, weigh};
use measure::{budgeted, calibrated, prepare, round, setup_overhead, Setup};

pub mod finding;
mod measure;

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
    /// Let libbpf's debug log through to stderr (as bench -v).
    #[arg(short = 'v', long)]
    verbose: bool,
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

/// Calibrates, or checks a setting; `named` learns the benchmark as soon as
/// it is found, so that an unsupported error names it as a run's does.
pub fn run(args: &CalibrateArgs, quiet: bool, named: &mut Option<&'static str>) -> Result<()> {
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
    let started = Instant::now();
    let bench = calibrated(&args.bench)?;
    *named = Some(bench.name());
    // As a run does: libbpf's log only with -v, the kernel's refusal in
    // bench's own sentence otherwise.
    bpf::init_logging(args.verbose);
    let console = Console::new(false);
    let setup = prepare(bench, args, &console, quiet)?;
    console.line(&lines::injection(&setup.injection));
    match (args.trials, args.runs) {
        (Some(trials), Some(runs)) => check(&setup, &console, trials, runs as usize),
        _ => {
            let rounds = budgeted(&setup, &console, args.budget, started)?;
            let findings = weigh(
                &rounds,
                (args.warmup, args.duration),
                args.effect,
                setup_overhead(&setup),
            );
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
