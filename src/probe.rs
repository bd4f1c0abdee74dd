//! `bench --probe`: which benchmarks this kernel can run, found by setting each
//! one up for real (load and attach) and tearing it down again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{Body, RunConfig};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::text;

/// The options of a run that change what set-up loads and attaches, and so
/// what `--probe` tries: `--body` (`-s` is `--body stack`), `--read-bytes`,
/// `--pid-filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeOptions {
    pub body: Body,
    pub read_bytes: u32,
    pub pid_filter: bool,
}

/// `bench`'s default configuration with `options`; refused (exit 2) as a run
/// would be when the benchmark does not take them.
fn config_with(bench: &dyn Benchmark, options: ProbeOptions) -> Result<RunConfig> {
    let mut config = bench.default_config()?;
    config.body = options.body;
    config.read_bytes = options.read_bytes;
    config.pid_filter = options.pid_filter;
    bench.check_global_options(&config)?;
    Ok(config)
}

/// What `--probe` tries: the benchmarks named (each must take `options`),
/// or, when none is named, every benchmark that takes them.
pub fn chosen(
    named: Vec<&'static dyn Benchmark>,
    options: ProbeOptions,
) -> Result<Vec<&'static dyn Benchmark>> {
    if named.is_empty() {
        return Ok(benches::all()
            .filter(|b| config_with(*b, options).is_ok())
            .collect());
    }
    for bench in &named {
        config_with(*bench, options)?;
    }
    Ok(named)
}

/// Sets `bench` up with its defaults and `options` and drops it at once;
/// what its verdict says besides `ok`: the fallback trigger it took, if it
/// took one, and for a probe benchmark its probe's path and red zone.
pub fn probe(bench: &dyn Benchmark, options: ProbeOptions) -> Result<Option<String>> {
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name(), bench.needs())?;
    }
    let config = config_with(bench, options)?;
    let set_up = bench.setup_to_probe(&config)?;
    let trigger = set_up
        .trigger
        .filter(|used| used.refused.is_some())
        .map(|used| text::trigger_line(&used));
    let red_zone = set_up.red_zone.as_ref().map(text::red_zone_note);
    Ok(match (trigger, red_zone) {
        (Some(trigger), Some(red_zone)) => Some(format!("{trigger}; {red_zone}")),
        (trigger, red_zone) => trigger.or(red_zone),
    })
}

// The outcomes are data, kept with the results: the report prints them
// without knowing how they were found.
pub use crate::results::{
    ProbeFile, ProbeOutcome as Outcome, ProbeStatus as Status, PROBE_SCHEMA as SCHEMA,
};

/// How many benchmarks are probed at once. Most of a probe's time is the
/// kernel's release of what it attached (grace periods, which an emulated
/// guest stretches to seconds), and those waits overlap across threads.
const PROBE_THREADS: usize = 8;

/// Tries each of `benches` with `options`; the outcomes come back in the
/// order of `benches`, and each is handed to `decided` as soon as it is
/// known (a guest that dies on one loses none printed before). Stops early
/// at Ctrl-C (the outcomes then end at the first benchmark not tried).
/// Those that load no BPF (hardware breakpoints hold a few debug
/// registers, which two set-ups at once could exhaust) are tried one at a
/// time on this thread; the rest on up to [`PROBE_THREADS`] threads.
pub fn probe_each(
    benches: &[&'static dyn Benchmark],
    options: ProbeOptions,
    decided: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    let outcomes: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; benches.len()]);
    let keep = |i: usize, outcome: Outcome| {
        decided(&outcome);
        if let Ok(mut all) = outcomes.lock() {
            all[i] = Some(outcome);
        }
    };
    let (alone, shared): (Vec<usize>, Vec<usize>) =
        (0..benches.len()).partition(|&i| !benches[i].needs_bpf());
    for i in alone {
        if interrupt::received().is_some() {
            break;
        }
        keep(i, outcome_of(benches[i], options));
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..PROBE_THREADS.min(shared.len()) {
            scope.spawn(|| {
                while interrupt::received().is_none() {
                    let Some(&i) = shared.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    keep(i, outcome_of(benches[i], options));
                }
            });
        }
    });
    outcomes
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map_while(|outcome| outcome)
        .collect()
}

/// One benchmark's outcome under `--probe`.
fn outcome_of(bench: &'static dyn Benchmark, options: ProbeOptions) -> Outcome {
    let (status, reason) = match probe(bench, options) {
        Ok(note) => (Status::Ok, note),
        Err(Error::Unsupported(why)) => (Status::Unsupported, Some(why)),
        Err(Error::Permission(_)) => (
            Status::Permission,
            Some(format!("needs root ({})", bench.needs().caps_text())),
        ),
        Err(err) => (Status::Error, Some(err.to_string())),
    };
    Outcome {
        name: bench.name(),
        status,
        reason,
    }
}
