//! The figures over runs that the rounds stop on and the closing lines
//! report: each run's value of a figure, and a figure's statistics over a
//! configuration's runs. Below `execute`, `sequential` and `publish`, which
//! all judge runs by the figures each benchmark declares.

use super::plan::BenchPlan;
use crate::results::RunRecord;
use crate::stats::{self, RunStats};

/// Each run's value of the figure `name`, in run order (`None` for a run
/// that did not measure it).
pub(super) fn runs_means(name: &str, runs: &[RunRecord]) -> Vec<Option<f64>> {
    runs.iter()
        .map(|run| crate::results::judged(run, runs).then(|| run.figure(name))?)
        .collect()
}

/// The widest 95 % interval, in % of its mean, over every configuration
/// and every figure it is judged by; `None` while one has no interval yet.
pub(super) fn widest_interval(
    benches: &[BenchPlan],
    records: &[Vec<Vec<RunRecord>>],
) -> Option<f64> {
    let mut widest: f64 = 0.0;
    for (bench, points) in benches.iter().zip(records) {
        for runs in points {
            for figure in bench.bench.figures() {
                let stats = run_level(figure.name, runs)?;
                widest = widest.max(stats.ci_percent()?);
            }
        }
    }
    Some(widest)
}

/// The statistics of the figure `name` over the values `runs` measured.
pub(super) fn run_level(name: &str, runs: &[RunRecord]) -> Option<RunStats> {
    let values: Vec<f64> = runs
        .iter()
        .filter(|run| crate::results::judged(run, runs))
        .filter_map(|run| run.figure(name))
        .collect();
    stats::run_stats(&values)
}
