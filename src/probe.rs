//! `bench --probe`: which benchmarks this kernel can run, found by setting each
//! one up for real (load and attach) and tearing it down again.

use serde::Serialize;

use crate::benches::Benchmark;
use crate::bpf;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::results::Tool;

/// Sets `bench` up with its defaults and drops it at once.
pub fn probe(bench: &dyn Benchmark) -> Result<()> {
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name(), bench.needs())?;
    }
    let config = bench.default_config()?;
    bench.setup(&config).map(drop)
}

/// How one benchmark fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Unsupported,
    /// This process lacks a privilege the benchmark needs.
    Permission,
    Error,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub name: &'static str,
    pub status: Status,
    /// Why, unless `ok`.
    pub reason: Option<String>,
}

/// `--probe --json`: the outcomes with what they were found on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeFile {
    pub schema: &'static str,
    pub tool: Tool,
    pub kernel_release: String,
    /// Interrupted before every benchmark was tried.
    pub partial: bool,
    pub benchmarks: Vec<Outcome>,
}

/// Names this format; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "bench-probe/1";

/// Tries each of `benches` in turn; stops early at Ctrl-C.
pub fn probe_each(benches: &[&'static dyn Benchmark]) -> Vec<Outcome> {
    benches
        .iter()
        .take_while(|_| interrupt::received().is_none())
        .map(|bench| {
            let (status, reason) = match probe(*bench) {
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
