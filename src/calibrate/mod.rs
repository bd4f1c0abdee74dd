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

use finding::{best, calls, judge, weigh, Round, MIN_ROUNDS};
use measure::{budgeted, calibrated, prepare, round, setup_overhead, Setup};

mod budget;
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
    /// Seconds the calibration may take, from the start, sizing included: a
    /// budget that cannot hold the sizing and three rounds is refused, and
    /// past those no round starts that would end past it.
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
    let budgeted_run = args.trials.is_none();
    // The test suite's tick (docs/testing.md) shortens every run, and the
    // budget then counts its ticks as it counts seconds on the real one.
    let tick_secs = f64::from(crate::config::tick_from_env().map_err(Error::usage)?) / 1000.0;
    if budgeted_run {
        budget::check_before_sizing(args.budget, args.warmup, args.duration)?;
    }
    let console = Console::new(false);
    let setup = prepare(bench, args, &console, quiet)?;
    if budgeted_run {
        let sizing = started.elapsed().as_secs_f64() / tick_secs;
        budget::check_after_sizing(args.budget, sizing, args.warmup, args.duration)?;
    }
    console.line(&lines::injection(&setup.injection));
    match (args.trials, args.runs) {
        (Some(trials), Some(runs)) => check(&setup, &console, trials, runs as usize),
        _ => {
            let budget_secs = args.budget as f64 * tick_secs;
            let rounds = budgeted(&setup, &console, budget_secs, started)?;
            let bench = setup.bench.name();
            for line in conclusion(&rounds, args, bench, setup_overhead(&setup)) {
                console.line(&line);
            }
            Ok(())
        }
    }
}

/// The lines that close a calibration: the findings per duration and the
/// recommendation, or, from too few rounds, that nothing can be concluded.
fn conclusion(
    rounds: &[Round],
    args: &CalibrateArgs,
    bench: &str,
    overhead_secs: f64,
) -> Vec<String> {
    if rounds.len() < MIN_ROUNDS {
        return vec![lines::too_few_rounds(rounds.len(), MIN_ROUNDS)];
    }
    let findings = weigh(
        rounds,
        (args.warmup, args.duration),
        args.effect,
        overhead_secs,
    );
    let mut out = lines::findings(&findings, rounds.len(), args.effect);
    out.push(lines::recommendation(
        best(&findings),
        bench,
        args.effect,
        args.warmup,
        args.affinity,
    ));
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> CalibrateArgs {
        CalibrateArgs {
            bench: "trig-syscall-count".to_string(),
            budget: 180,
            effect: 5.0,
            warmup: 1,
            duration: 2,
            affinity: false,
            verbose: false,
            trials: None,
            runs: None,
        }
    }

    /// Rounds whose A' is `slowed` times A, every second alike.
    fn rounds(slowed: &[f64]) -> Vec<Round> {
        slowed
            .iter()
            .map(|&s| Round {
                a: vec![1e6, 1e6],
                again: vec![1e6, 1e6],
                slowed: vec![1e6 * s, 1e6 * s],
            })
            .collect()
    }

    #[test]
    fn too_few_rounds_conclude_nothing() {
        // One round has no spread (its sd reads 0.0), two have one degree of
        // freedom: neither is "out of reach", and neither recommends.
        for (n, said) in [(0, "0 rounds"), (1, "1 round"), (2, "2 rounds")] {
            let lines = conclusion(&rounds(&[0.95, 0.94][..n]), &args(), "trig-x", 0.1);
            assert_eq!(
                lines,
                [format!(
                    "Stopped after {said}: too few to estimate the per-round spread (needs 3); \
                     no recommendation"
                )]
            );
        }
    }

    #[test]
    fn three_rounds_conclude() {
        // 5.0, 4.0 and 6.0 % slower: a per-round sd of about 1 %, which 3
        // rounds (the least) detect with 95 % power.
        let lines = conclusion(&rounds(&[0.95, 0.96, 0.94]), &args(), "trig-x", 0.1);
        assert!(
            lines[0].starts_with("Calibrated over 3 rounds"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("  -d 1: A'/A -5.0 % "), "{lines:?}");
        assert!(
            lines[1].contains("per-round sd 1.1 %; 5 % needs 3 rounds"),
            "{lines:?}"
        );
        let last = lines.last().map(String::as_str).unwrap_or_default();
        assert!(
            last.starts_with("Recommendation: use `--runs 3 -w1 -d1`"),
            "{last}"
        );
    }
}
