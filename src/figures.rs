//! What a run is judged by: the figures a benchmark declares, each with its
//! unit, the direction that is better, its value in a run, its observations
//! within a run and how it prints. The statistics over runs, `--precision`,
//! the closing table and `compare` (its rows and its gate) go through these
//! declarations and nothing else, so a figure of a new kind (a time, a size,
//! a share) is one more declaration, not one more special case.

use std::fmt;

use crate::results::RunRecord;
pub use crate::stats::Better;
use crate::stats::Sample;

/// One figure of a benchmark.
#[derive(Clone, Copy)]
pub struct Figure {
    /// Its name, where a benchmark has several (`attach`, `detach`).
    pub name: &'static str,
    /// What it counts, for the lines that name it (`hits`, `attach µs/probe`).
    pub unit: &'static str,
    pub better: Better,
    /// Its value in one run; `None` for a run that did not measure it.
    pub of_run: fn(&RunRecord) -> Option<f64>,
    /// For a rate, its value in one second: the run's value is their mean
    /// over the measured seconds, and one run is judged against another by
    /// them. `None` for a figure a run measures once.
    pub per_second: Option<fn(&Sample) -> f64>,
    /// A value, and a mean with its spread, as the lines print them.
    pub show: fn(f64) -> String,
    pub show_spread: fn(f64, f64) -> String,
}

impl fmt::Debug for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Figure({})", self.name)
    }
}

/// Two figures are the same when they have the same name: a benchmark
/// declares each name once (comparing the functions would not be stable).
impl PartialEq for Figure {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.unit == other.unit && self.better == other.better
    }
}

impl Eq for Figure {}

/// The hits counted, per second: the kernel runner's headline.
pub const HITS: Figure = Figure {
    name: "hits",
    unit: "hits",
    better: Better::Higher,
    of_run: |run| match run.fixed() {
        Some(fixed) => fixed_rate(fixed.counts.hits, fixed.elapsed_ns),
        None => Some(run.summary()?.hits.mean),
    },
    per_second: Some(Sample::hits_per_sec),
    show: rate,
    show_spread: rate_with_sd,
};

/// All operations per second: perf's headline, a rate as hits are.
pub const OPERATIONS: Figure = Figure {
    name: "operations",
    unit: "operations",
    of_run: |run| match run.fixed() {
        Some(fixed) => fixed_rate(fixed.ops, fixed.elapsed_ns),
        None => Some(run.summary()?.total.mean),
    },
    per_second: Some(Sample::total_per_sec),
    ..HITS
};

/// A fixed-work run's rate: what it counted over the whole run's time, the
/// one value such a run gives (it has no seconds).
fn fixed_rate(count: u64, elapsed_ns: u64) -> Option<f64> {
    (elapsed_ns > 0).then(|| count as f64 * 1e9 / elapsed_ns as f64)
}

/// The wall time an attach cycle took to attach, per probe.
pub const ATTACH: Figure = Figure {
    name: "attach",
    unit: "attach \u{b5}s/probe",
    better: Better::Lower,
    of_run: |run| {
        let cycle = run.cycle()?;
        Some(cycle.attach.us_per_probe(cycle.probes))
    },
    per_second: None,
    show: micros_per_probe,
    show_spread: micros_per_probe_with_sd,
};

/// The wall time an attach cycle took to detach, per probe: shown and
/// judged as attach's.
pub const DETACH: Figure = Figure {
    name: "detach",
    unit: "detach \u{b5}s/probe",
    of_run: |run| {
        let cycle = run.cycle()?;
        Some(cycle.detach.us_per_probe(cycle.probes))
    },
    ..ATTACH
};

/// Whether `run` counts among `runs` when they are judged: the first, cold
/// attach cycle of a process is another quantity than the warm ones after
/// it (docs/attach.md), left out as warm-up seconds are, unless no warm one
/// is there to judge (a run stopped before its cycle ended has none).
pub fn counts(run: &RunRecord, runs: &[RunRecord]) -> bool {
    let cold = |r: &RunRecord| r.cycle().is_some_and(|c| c.cold);
    !cold(run) || runs.iter().filter(|r| r.cycle().is_some()).all(cold)
}

/// The value a benchmark kept in a run under `name` (`Workload::figures`):
/// what the declaration of a figure of its own reads.
pub fn kept(run: &RunRecord, name: &str) -> Option<f64> {
    run.figures.get(name).copied()
}

impl Figure {
    /// Its observations within one run, for judging one run against another:
    /// each measured second's rate, or the run's one value (a fixed-work run's
    /// rate too).
    pub fn within_run(&self, run: &RunRecord) -> Vec<f64> {
        match self.per_second.filter(|_| run.fixed().is_none()) {
            Some(per_second) => run
                .samples()
                .iter()
                .filter(|s| !s.warmup)
                .map(per_second)
                .collect(),
            None => (self.of_run)(run).into_iter().collect(),
        }
    }
}

/// A rate scaled to a readable unit: (value, "M"), (value, "K") or (value, "").
pub fn scaled(per_sec: f64) -> (f64, &'static str) {
    if per_sec >= 1e6 {
        (per_sec / 1e6, "M")
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "K")
    } else {
        (per_sec, "")
    }
}

/// `2.460M/s`.
pub fn rate(per_sec: f64) -> String {
    let (value, unit) = scaled(per_sec);
    format!("{value:.3}{unit}/s")
}

/// `mean ± sd` of a rate, both in the mean's unit: `2.460 ± 0.009M/s`.
pub fn rate_with_sd(mean: f64, sd: f64) -> String {
    let (value, unit) = scaled(mean);
    let factor = if mean > 0.0 { value / mean } else { 1.0 };
    format!("{value:.3} \u{00b1} {:.3}{unit}/s", sd * factor)
}

/// `12.345 µs/probe`.
pub fn micros_per_probe(us: f64) -> String {
    format!("{us:.3} \u{b5}s/probe")
}

/// `12.345 ± 0.100 µs/probe`.
pub fn micros_per_probe_with_sd(mean: f64, sd: f64) -> String {
    format!("{mean:.3} \u{b1} {sd:.3} \u{b5}s/probe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_scaled_and_times_are_not() {
        assert_eq!(rate(2_460_000.0), "2.460M/s");
        assert_eq!(rate(2_610.0), "2.610K/s");
        assert_eq!(rate_with_sd(2_460_000.0, 9_000.0), "2.460 \u{b1} 0.009M/s");
        assert_eq!(micros_per_probe(2_609.6), "2609.600 \u{b5}s/probe");
        assert_eq!(HITS.better, Better::Higher);
        assert_eq!(ATTACH.better, Better::Lower);
        assert_ne!(ATTACH, DETACH);
    }
}
