//! The calibration's runs: the benchmark set up once for all of them, the
//! injected loop sized in the benchmark itself, and rounds of the three arms.

use std::sync::Arc;
use std::time::Instant;

use super::budget::{SIZING_RUNS, SIZING_SECS};
use super::finding::{Injection, Round, Sizing, SizingRun, MIN_ROUNDS};
use super::CalibrateArgs;
use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{BenchOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{Better, Figure, Frame, Value, View};
use crate::interrupt;
use crate::report::calibrate as lines;
use crate::report::console::Console;
use crate::runner::affinity::{self, Affinity, Placement};
use crate::runner::inject::{self, Blocks, Injected, Spin};
use crate::runner::phases::RunSeconds;
use crate::runner::{self, Prepared, Workload};

/// Everything a run of the calibration needs.
pub struct Setup {
    pub bench: &'static dyn Benchmark,
    pub metric: &'static Figure,
    pub config: RunConfig,
    pub placement: Placement,
    pub injection: Injection,
}

/// The three runs of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    A,
    Again,
    Slowed,
}

/// The benchmark named, if calibrate can calibrate it: refused before
/// anything is loaded (before the kernel could refuse it for another
/// reason), since the injected cost follows a producer's operation and an
/// attach benchmark has none.
pub fn calibrated(name: &str) -> Result<&'static dyn Benchmark> {
    let bench =
        benches::find(name).ok_or_else(|| Error::usage(format!("unknown benchmark '{name}'")))?;
    if bench.runs_cycles() {
        return Err(Error::usage(format!(
            "calibrate injects a cost after each producer operation, and {} runs attach cycles, \
             which have none",
            bench.name()
        )));
    }
    let headline = bench.headline();
    if headline.better != Better::Higher || !matches!(headline.value, Value::PerSecond(_)) {
        return Err(Error::usage(format!(
            "calibrate measures the slowdown a known cost per operation makes in a \
             benchmark's headline rate, and {}'s headline is {} in {} ({} is better), which \
             that cost does not move",
            bench.name(),
            headline.name,
            headline.unit,
            match headline.better {
                Better::Higher => "higher",
                Better::Lower => "lower",
            }
        )));
    }
    Ok(bench)
}

/// Resolves the configuration, checks privileges, and sizes the injected
/// cost from a first run of the benchmark.
pub fn prepare(
    bench: &'static dyn Benchmark,
    args: &CalibrateArgs,
    console: &Console,
    quiet: bool,
) -> Result<Setup> {
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
    // The spin follows each call of the producer's operation (a trigger of
    // 1024 lookups, of 1000 loops, a batch of passes), not each hit: a
    // call's time is measured so, in blocks, with no spin yet.
    let blocks = Arc::new(Blocks::default());
    let unspun = Spin {
        iterations: 0,
        blocks: Some(Arc::clone(&blocks)),
    };
    timed(bench, &config, &placement, metric, Some(unspun))?;
    stopped_while("sizing the injected cost")?;
    let op_ns = blocks
        .measured()
        .map(|m| m.op_ns)
        .filter(|ns| *ns > 0.0)
        .ok_or_else(|| {
            Error::runtime(format!(
                "{} measured no operation: nothing to calibrate",
                bench.name()
            ))
        })?;
    let extra_ns = op_ns * args.effect / (100.0 - args.effect);
    let (guess, cpu_ns) = inject::sized_for(extra_ns);
    let sizing = size_in_place(bench, &config, &placement, args.effect, guess)?;
    if sizing.overshoots(args.effect) {
        return Err(Error::unsupported(format!(
            "its operations ({op_ns:.1} ns) are too short to be made {} % slower: one iteration \
             of the injected loop makes them {:.0} % slower",
            args.effect, sizing.expected_pct
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
        consumers: bench.info().default_consumers,
        warmup_secs: args.warmup,
        duration_secs: args.duration,
        tick_ms: crate::config::tick_from_env().map_err(Error::usage)?,
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
    // Calibrate takes no option of a benchmark's own: one whose defaults
    // are refused cannot be calibrated, and the refusal says why, without
    // asking for an option calibrate does not take.
    if let Some(required) = bench.options().iter().find_map(|o| match o {
        BenchOption::Text(text) if text.required() => Some(text.long),
        _ => None,
    }) {
        return Err(Error::usage(format!(
            "calibrate cannot run {}: its --{required} has no default, and calibrate runs a \
             benchmark with its own options' defaults",
            bench.name()
        )));
    }
    bench.validate(&config).map_err(|err| match err {
        Error::Usage(why) => Error::usage(format!(
            "calibrate runs {} with its own options' defaults, which it refuses: {why}",
            bench.name()
        )),
        err => err,
    })?;
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
        duration_secs: SIZING_SECS,
        ..config.clone()
    };
    let mut sizing = Sizing {
        iterations: guess,
        expected_pct: 0.0,
        runs: Vec::new(),
    };
    // Each run after the first is sized from those before it, and the loop
    // from all (one run's slowdown varies by several % of itself).
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
    let Prepared::Producers(inner) = bench.setup(config)?.run else {
        return Err(Error::usage(format!(
            "{} runs attach cycles, which calibrate does not time",
            bench.name()
        )));
    };
    let workload: Box<dyn Workload> = match spin {
        None => inner,
        Some(spin) => Box::new(Injected { inner, spin }),
    };
    let timing = RunSeconds {
        warmup_secs: config.warmup_secs,
        duration_secs: config.duration_secs,
        tick_ms: config.tick_ms,
    };
    let kinds = bench.ticked_kinds();
    let samples = runner::run_timed(workload.as_ref(), placement, timing, &kinds, &mut [])?;
    drop(workload);
    let Value::PerSecond(per_second) = metric.value else {
        return Err(Error::usage(format!(
            "{}'s headline ({}) has no value each second for calibrate to time",
            bench.name(),
            metric.name
        )));
    };
    let ticked = bench.ticked_names();
    let frames = samples.iter().filter(|s| !s.warmup).map(|s| Frame {
        values: &s.values,
        elapsed_ns: s.elapsed_ns,
    });
    let view = View {
        producers: config.producers,
        frames: frames.collect(),
        ..View::new(&ticked)
    };
    Ok(per_second.each(&view))
}

/// One round: the three arms, in an order rotated by `index`.
pub fn round(setup: &Setup, index: usize) -> Result<Round> {
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

/// Rounds until the budget (in seconds from `started`) would be overrun,
/// or an interrupt: at least [`MIN_ROUNDS`], which the budget was checked
/// to hold after sizing (by an estimate of a round: it may end a little
/// past).
pub fn budgeted(
    setup: &Setup,
    console: &Console,
    budget_secs: f64,
    started: Instant,
) -> Result<Vec<Round>> {
    let mut rounds = Vec::new();
    let mut longest = 0.0f64;
    loop {
        let elapsed = started.elapsed().as_secs_f64();
        if rounds.len() >= MIN_ROUNDS && elapsed + longest > budget_secs {
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

/// What setting up and tearing down a run adds to its seconds, roughly.
pub fn setup_overhead(setup: &Setup) -> f64 {
    if setup.bench.needs_bpf() {
        0.5
    } else {
        0.1
    }
}
