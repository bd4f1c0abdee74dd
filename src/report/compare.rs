//! The lines of `bench compare`.

use std::path::Path;

use super::rate_with_sd;
use crate::stats::{Basis, Change, MeanSd, Verdict};

/// Which side of a pair was interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Old,
    New,
    Both,
}

/// One compared pair.
pub struct Row<'a> {
    pub label: &'a str,
    pub old: MeanSd,
    pub new: MeanSd,
    /// Runs on each side.
    pub runs: (usize, usize),
    /// `None` with fewer than two observations on a side.
    pub change: Option<Change>,
    pub verdict: Option<Verdict>,
    pub partial: Option<Side>,
}

/// `# OLD vs NEW`, before each comparison when there are several.
pub fn section(old: &Path, new: &Path) -> String {
    format!("# {} vs {}", old.display(), new.display())
}

pub fn header() -> String {
    format!(
        "{:<32} {:>22} {:>22}  {:<28} verdict",
        "benchmark", "old", "new", "change [95 % CI]"
    )
}

pub fn row(row: &Row<'_>) -> String {
    let partial = match row.partial {
        None => "",
        Some(Side::Old) => " [partial: old]",
        Some(Side::New) => " [partial: new]",
        Some(Side::Both) => " [partial: both]",
    };
    let (change, verdict) = match (&row.change, row.verdict) {
        (Some(c), Some(v)) => {
            let basis = match c.basis {
                Basis::Seconds => "1 run: drift not captured".to_string(),
                _ => format!("{}+{} runs", row.runs.0, row.runs.1),
            };
            (
                format!("{:+.2} % [{:+.1}, {:+.1}]", c.percent, c.low, c.high),
                format!("{} (p={:.3}, {basis})", v.words(), c.p),
            )
        }
        _ => ("n/a".to_string(), "too few samples to judge".to_string()),
    };
    format!(
        "{:<32} {:>22} {:>22}  {change:<28} {verdict}{partial}",
        row.label,
        rate_with_sd(row.old.mean, row.old.sd),
        rate_with_sd(row.new.mean, row.new.sd),
    )
}

/// A pair one side of which has no per-second samples.
pub fn nothing_to_compare(label: &str, side: &str, why: &str) -> String {
    format!("{label:<32} nothing to compare: the {side} run {why}")
}

/// After a table with single-run rows: what their verdicts leave out.
pub fn single_run_note() -> String {
    "note: '1 run' rows compare the seconds of a single run per side; the drift between \
     runs (as large as the changes sought, on a VM) is not in their interval. Record both \
     sides with --runs 3 or more."
        .to_string()
}

/// One regression, for the exit message of `--fail-on-regression`.
pub fn regression(label: &str, change: &Change) -> String {
    format!(
        "{label} is {:.1}% slower ([{:+.1}, {:+.1}], p={:.3})",
        -change.percent, change.low, change.high, change.p
    )
}
