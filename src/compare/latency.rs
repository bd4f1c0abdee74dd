//! The latency figures of a pair, and `--plot`'s drawing of both sides'
//! distributions.

use std::path::Path;

use super::entry::Entry;
use crate::error::{Error, Result};
use crate::report::compare as lines;
use crate::stats::{self, mean_sd, Basis, Better, Verdict};

/// Each latency figure of a pair whose both sides have one: old and new
/// (the runs' mean), and the change with its interval where there are
/// observations to give one: two runs a side, or the seconds of one run for
/// p50 and p99.
pub(super) fn latency_rows(old: &Entry, new: &Entry, noise: f64) -> Vec<lines::LatencyFigure> {
    let per_run = |e: &Entry, name: &str| -> Vec<f64> {
        e.runs
            .iter()
            .filter_map(|r| r.latency.as_ref()?.percentiles.get(name))
            .collect()
    };
    let per_second = |e: &Entry, name: &str| -> Vec<f64> {
        let runs: Vec<_> = e.runs.iter().filter_map(|r| r.latency.as_ref()).collect();
        runs.iter()
            .flat_map(|l| &l.seconds)
            .filter_map(|s| match name {
                "p50" => Some(s.p50 as f64),
                "p99" => Some(s.p99 as f64),
                _ => None,
            })
            .collect()
    };
    let names = crate::latency::PERCENTILES
        .iter()
        .map(|(n, _)| *n)
        .chain(["max", "mean"]);
    names
        .filter_map(|name| {
            let (o, n) = (per_run(old, name), per_run(new, name));
            if o.is_empty() || n.is_empty() {
                return None;
            }
            let change = if o.len() >= 2 && n.len() >= 2 {
                stats::change_between(&o, &n, Basis::Runs)
            } else {
                stats::change_between(
                    &per_second(old, name),
                    &per_second(new, name),
                    Basis::Seconds,
                )
            };
            Some(lines::LatencyFigure {
                name: name.to_string(),
                old: mean_sd(&o).mean,
                new: mean_sd(&n).mean,
                verdict: change.map(|c| Verdict::of(&c, Better::Lower, noise)),
                change,
            })
        })
        .collect()
}

/// Each side's latency histogram, named, for `--plot`.
pub(super) fn latency_series(pairs: &[(&Entry, &Entry)]) -> Vec<(String, Vec<[u64; 2]>)> {
    pairs
        .iter()
        .flat_map(|(o, n)| [("old", *o), ("new", *n)])
        .filter_map(|(side, entry)| {
            let buckets = entry.merged_latency()?;
            Some((format!("{} ({side})", entry.label()), buckets))
        })
        .collect()
}

/// `--plot`: every side's latency distribution in one SVG.
pub(super) fn write_plot(path: &Path, plotted: &[(String, Vec<[u64; 2]>)]) -> Result<()> {
    if !path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("svg"))
    {
        return Err(Error::usage(format!(
            "--plot writes SVG: give a file name ending in .svg, not {}",
            path.display()
        )));
    }
    if plotted.is_empty() {
        return Err(Error::usage(
            "--plot draws latency distributions, and no compared result has one (record them with --latency)",
        ));
    }
    let series: Vec<(&str, &[[u64; 2]])> = plotted
        .iter()
        .map(|(name, buckets)| (name.as_str(), buckets.as_slice()))
        .collect();
    let svg = crate::report::latency_plot::distribution("Latency distribution", &series)?;
    crate::report::output::write_before_exit(
        &crate::config::OutputTarget::File(path.to_path_buf()),
        svg.as_bytes(),
    )
}
