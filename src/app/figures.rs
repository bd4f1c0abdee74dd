//! The figures over runs that the rounds stop on and the closing lines
//! report: each run's headline mean, and the statistics of a figure over a
//! configuration's runs. Below `execute`, `sequential` and `publish`, which
//! all judge runs by them.

use super::plan::BenchPlan;
use crate::benches::Metric;
use crate::results::RunRecord;
use crate::stats::{self, RunStats};

/// Each run's mean headline rate, in run order (`None` for a run that
/// measured nothing).
pub(super) fn runs_means(metric: &Metric, runs: &[RunRecord]) -> Vec<Option<f64>> {
    runs.iter()
        .map(|r| metric.run_figures(r).first().copied())
        .collect()
}

/// The widest 95 % interval, in % of its mean, over every configuration
/// and every figure it is judged by (attach and detach times for an attach
/// benchmark); `None` while one has no interval yet.
pub(super) fn widest_interval(
    benches: &[BenchPlan],
    records: &[Vec<Vec<RunRecord>>],
) -> Option<f64> {
    let mut widest: f64 = 0.0;
    for (bench, points) in benches.iter().zip(records) {
        for runs in points {
            let figures = runs
                .first()
                .map_or(1, |r| bench.metric.run_figures(r).len().max(1));
            for figure in 0..figures {
                let stats = run_level_figure(&bench.metric, runs, figure)?;
                widest = widest.max(stats.ci_percent()?);
            }
        }
    }
    Some(widest)
}

/// The headline rate's statistics over `runs`' means.
pub(super) fn run_level_headline(metric: &Metric, runs: &[RunRecord]) -> Option<RunStats> {
    run_level_figure(metric, runs, 0)
}

/// One of the figures a run is judged by ([`Metric::run_figures`]), over
/// `runs`.
fn run_level_figure(metric: &Metric, runs: &[RunRecord], figure: usize) -> Option<RunStats> {
    let means: Vec<f64> = runs
        .iter()
        .filter_map(|r| metric.run_figures(r).get(figure).copied())
        .collect();
    stats::run_stats(&means)
}
