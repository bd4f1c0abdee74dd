//! `bench --probe`: which benchmarks this kernel can run, found by setting each
//! one up for real (load and attach) and tearing it down again.

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{Body, RunConfig};
use crate::error::{Error, Result};
use crate::interrupt;

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

/// Sets `bench` up with its defaults and `options` and drops it at once.
pub fn probe(bench: &dyn Benchmark, options: ProbeOptions) -> Result<()> {
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name(), bench.needs())?;
    }
    let config = config_with(bench, options)?;
    bench.setup(&config).map(drop)
}

// The outcomes are data, kept with the results: the report prints them
// without knowing how they were found.
pub use crate::results::{
    ProbeFile, ProbeOutcome as Outcome, ProbeStatus as Status, PROBE_SCHEMA as SCHEMA,
};

/// Tries each of `benches` in turn with `options`; stops early at Ctrl-C.
pub fn probe_each(benches: &[&'static dyn Benchmark], options: ProbeOptions) -> Vec<Outcome> {
    benches
        .iter()
        .take_while(|_| interrupt::received().is_none())
        .map(|bench| {
            let (status, reason) = match probe(*bench, options) {
                Ok(()) => (Status::Ok, None),
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
        })
        .collect()
}
