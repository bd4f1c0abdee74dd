//! The lines of `bench compare`.

use std::path::Path;

use super::rate_with_sd;
use crate::stats::MeanSd;

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
    pub change_pct: f64,
    pub word: &'a str,
    pub p: Option<f64>,
    pub partial: Option<Side>,
}

fn p_value(p: Option<f64>) -> String {
    p.map_or("p n/a".to_string(), |p| format!("p={p:.3}"))
}

/// `# OLD vs NEW`, before each comparison when there are several.
pub fn section(old: &Path, new: &Path) -> String {
    format!("# {} vs {}", old.display(), new.display())
}

pub fn header() -> String {
    format!(
        "{:<32} {:>22} {:>22} {:>9}  verdict",
        "benchmark", "old", "new", "change"
    )
}

pub fn row(row: &Row<'_>) -> String {
    let partial = match row.partial {
        None => "",
        Some(Side::Old) => " [partial: old]",
        Some(Side::New) => " [partial: new]",
        Some(Side::Both) => " [partial: both]",
    };
    format!(
        "{:<32} {:>22} {:>22} {:>+8.2}%  {} ({}){partial}",
        row.label,
        rate_with_sd(row.old.mean, row.old.sd),
        rate_with_sd(row.new.mean, row.new.sd),
        row.change_pct,
        row.word,
        p_value(row.p),
    )
}

/// A pair one side of which has no per-second samples.
pub fn nothing_to_compare(label: &str, side: &str, why: &str) -> String {
    format!("{label:<32} nothing to compare: the {side} run {why}")
}

/// One regression, for the exit message of `--fail-on-regression`.
pub fn regression(label: &str, slower_pct: f64, p: Option<f64>) -> String {
    format!("{label} is {slower_pct:.1}% slower ({})", p_value(p))
}
