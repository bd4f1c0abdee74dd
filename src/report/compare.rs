//! The lines of `bench compare`.

use std::path::Path;

use crate::figures::FigureDecl;
use crate::stats::{Basis, Better, Change, MeanSd, Sensitivity, Verdict};

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
    /// What is compared: how its sides print.
    pub figure: &'a FigureDecl,
    /// Each side's mean and spread; `None` for a side without the figure.
    pub old: Option<MeanSd>,
    pub new: Option<MeanSd>,
    /// Runs on each side.
    pub runs: (usize, usize),
    /// `None` with fewer than two observations on a side.
    pub change: Option<Change>,
    pub verdict: Option<Verdict>,
    /// What these runs could have detected; `None` with one run on a side.
    pub sensitivity: Option<Sensitivity>,
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
            let (basis, unit) = match c.basis {
                Basis::Seconds => ("1 run: drift not captured".to_string(), ""),
                Basis::Runs => (format!("{}+{} runs", row.runs.0, row.runs.1), "runs a side"),
                Basis::PairedRuns => (
                    format!("{} rounds, paired by round", row.runs.0.min(row.runs.1)),
                    "rounds",
                ),
            };
            let could_see = match (v, &row.sensitivity) {
                (Verdict::NoSignificantChange, Some(s)) => format!("; {}", detectable(s, unit)),
                _ => String::new(),
            };
            (
                format!("{:+.2} % [{:+.1}, {:+.1}]", c.percent, c.low, c.high),
                format!("{} (p={:.3}, {basis}{could_see})", v.words(), c.p),
            )
        }
        _ if row.old.is_none() || row.new.is_none() => (
            "n/a".to_string(),
            format!(
                "the {} side has no {} figure",
                if row.old.is_none() { "old" } else { "new" },
                row.figure.name
            ),
        ),
        _ => ("n/a".to_string(), "too few samples to judge".to_string()),
    };
    let side = |side: Option<MeanSd>| match side {
        Some(s) => row.figure.show_spread(s.mean, s.sd),
        None => "n/a".to_string(),
    };
    format!(
        "{:<32} {:>22} {:>22}  {change:<28} {verdict}{partial}",
        row.label,
        side(row.old),
        side(row.new),
    )
}

/// Two files that name one figure in different units: not compared.
pub fn unlike_units(label: &str, figure: &str, old: &str, new: &str) -> String {
    format!("{label:<32} not compared: {figure} is in {old} on the old side, {new} on the new")
}

pub fn unlike_directions(label: &str, figure: &str, old: Better) -> String {
    let (old, new) = match old {
        Better::Higher => ("higher", "lower"),
        Better::Lower => ("lower", "higher"),
    };
    format!("{label:<32} not compared: {figure} is {old}-is-better on the old side, {new}-is-better on the new")
}

/// A figure whose values are too large for their mean or spread to be a
/// number (near 1e308): nothing true could be said of its change.
pub fn overflowing(label: &str, figure: &str) -> String {
    format!("{label:<32} not compared: {figure}'s values are too large to compute with (their mean or spread overflows)")
}

/// `attach-uprobe attach`: one of the figures of a benchmark that has
/// several.
pub fn figure_label(label: &str, figure: &str) -> String {
    format!("{label} {figure}")
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

/// A configuration found on one side only.
pub fn missing(label: &str, absent_from: &Path) -> String {
    format!(
        "{label:<32} missing from {}",
        printable(&absent_from.display().to_string())
    )
}

/// A missing configuration, for the exit message of `--fail-on-regression`.
pub fn missing_regression(label: &str, absent_from: &Path) -> String {
    format!(
        "{label} is missing from {} (--allow-missing accepts that)",
        printable(&absent_from.display().to_string())
    )
}

/// A pair the gate fails because one side measured nothing.
pub fn unmeasured_regression(label: &str, side: &str, why: &str) -> String {
    format!("{label}: the {side} run {why}, so nothing was judged (--allow-missing accepts that)")
}

/// A pair the gate fails because its runs were too few to judge.
pub fn unjudged_regression(label: &str) -> String {
    format!("{label}: too few samples to judge a change (--allow-missing accepts that)")
}

/// `text` with its control characters (escape sequences, newlines) written
/// as escapes: what a result file says is shown, never obeyed by the terminal.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// `could see ±7.2 %, 5 % needs 9 runs a side`: what a "no significant
/// change" could have detected, and the runs (`unit`) to resolve the effect.
pub fn detectable(s: &Sensitivity, unit: &str) -> String {
    let needs = match s.runs_needed {
        Some(n) => format!("{} % needs {n} {unit}", s.effect_pct),
        None => format!("{} % is out of reach", s.effect_pct),
    };
    format!("could see \u{00b1}{:.1} %, {needs}", s.detectable_pct)
}

/// After a table with "no significant change" rows: what their detectable
/// effect means.
pub fn detectable_note(effect_pct: f64) -> String {
    format!(
        "note: 'could see \u{00b1}X %': a change of \u{00b1}X % would have been detected (95 % \
         confidence, 80 % power) with these runs, from their measured between-run spread and the \
         noise floor; 'needs N' is the runs a side that would detect {effect_pct} % (--effect)."
    )
}

/// One regression, for the exit message of `--fail-on-regression`.
pub fn regression(label: &str, change: &Change) -> String {
    format!(
        "{label} is {:.1}% slower ([{:+.1}, {:+.1}], p={:.3})",
        -change.percent, change.low, change.high, change.p
    )
}

/// One latency figure of a compared pair, in ns.
pub struct LatencyFigure {
    pub name: String,
    pub old: f64,
    pub new: f64,
    pub change: Option<Change>,
    pub verdict: Option<Verdict>,
}

/// `  latency p99   ...`: under its pair's row, in the same columns.
pub fn latency_row(figure: &LatencyFigure) -> String {
    let (change, verdict) = match (&figure.change, figure.verdict) {
        (Some(c), Some(v)) => {
            let basis = match c.basis {
                Basis::Seconds => "1 run: drift not captured",
                _ => "runs",
            };
            (
                format!("{:+.2} % [{:+.1}, {:+.1}]", c.percent, c.low, c.high),
                format!("{} (p={:.3}, {basis})", v.words(), c.p),
            )
        }
        _ => {
            let percent = match figure.old > 0.0 {
                true => format!("{:+.2} %", (figure.new / figure.old - 1.0) * 100.0),
                false => "n/a".to_string(),
            };
            (
                percent,
                "no interval: fewer than two runs a side".to_string(),
            )
        }
    };
    format!(
        "{:<32} {:>22} {:>22}  {change:<28} {verdict}",
        format!("  latency {}", figure.name),
        format!("{:.0} ns", figure.old),
        format!("{:.0} ns", figure.new),
    )
}

/// A latency regression, for the exit message of `--fail-on-regression`.
pub fn latency_regression(label: &str, figure: &str, change: &Change) -> String {
    format!(
        "{label} {figure} is {:.1}% longer ([{:+.1}, {:+.1}], p={:.3})",
        change.percent, change.low, change.high, change.p
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_with(verdict: Verdict, sensitivity: Option<Sensitivity>) -> String {
        let change = Change {
            percent: 1.5,
            low: -3.0,
            high: 6.0,
            p: 0.4,
            basis: Basis::Runs,
        };
        let side = MeanSd { mean: 1e6, sd: 1e4 };
        row(&Row {
            label: "trig-uprobe-nop",
            figure: &crate::figures::HITS.decl(),
            old: Some(side),
            new: Some(side),
            runs: (3, 3),
            change: Some(change),
            verdict: Some(verdict),
            sensitivity,
            partial: None,
        })
    }

    #[test]
    fn no_significant_change_says_what_could_have_been_seen() {
        let s = Sensitivity {
            detectable_pct: 7.23,
            effect_pct: 5.0,
            runs_needed: Some(9),
        };
        let line = row_with(Verdict::NoSignificantChange, Some(s));
        assert!(
            line.ends_with(
                "no significant change (p=0.400, 3+3 runs; could see \u{b1}7.2 %, 5 % needs 9 runs a side)"
            ),
            "{line}"
        );
        let out_of_reach = Sensitivity {
            runs_needed: None,
            ..s
        };
        let line = row_with(Verdict::NoSignificantChange, Some(out_of_reach));
        assert!(line.ends_with("5 % is out of reach)"), "{line}");
        // A decided row needs no excuse.
        let line = row_with(Verdict::Faster, Some(s));
        assert!(line.ends_with("faster (p=0.400, 3+3 runs)"), "{line}");
        assert!(detectable_note(5.0).contains("(95 % confidence, 80 % power)"));
    }
}
