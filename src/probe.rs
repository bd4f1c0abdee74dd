//! `bench --probe`: which benchmarks this kernel can run, found by setting each
//! one up for real (load and attach) and tearing it down again.

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::error::{Error, Result};
use crate::interrupt;

/// Sets `bench` up with its defaults and drops it at once.
pub fn probe(bench: &dyn Benchmark) -> Result<()> {
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name())?;
    }
    let config = bench.default_config()?;
    bench.setup(&config).map(drop)
}

/// One line per benchmark: `ok`, `unsupported: <why>`, or what else went wrong.
/// Stops early at Ctrl-C.
pub fn probe_all() -> Vec<String> {
    let width = benches::all().map(|b| b.name().len()).max().unwrap_or(0);
    benches::all()
        .take_while(|_| interrupt::received().is_none())
        .map(|bench| {
            let outcome = match probe(bench) {
                Ok(()) => "ok".to_string(),
                Err(err @ Error::Unsupported(_)) => err.to_string(),
                Err(Error::Permission(_)) => "needs root (CAP_BPF and CAP_PERFMON)".to_string(),
                Err(err) => format!("error: {err}"),
            };
            format!("{:width$}  {outcome}", bench.name())
        })
        .collect()
}
