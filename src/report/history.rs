//! The lines of `bench history`: the list of benchmarks, a benchmark's
//! entries, the change points (text and JSON), and the one-line notes of
//! add, merge and report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use crate::history::entry::{Entry, MachineId};
use crate::history::series::{Change, Series};
use crate::history::time;
pub use crate::report::compare::printable;
use crate::stats::Better;

/// A value in 4 significant figures, scaled: `1.234M`, `56.78K`, `0.5000`.
pub fn number(value: f64) -> String {
    let (scaled, suffix) = match value.abs() {
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e4 => (value / 1e3, "K"),
        _ => (value, ""),
    };
    let digits = match scaled.abs() {
        v if v >= 1000.0 => 0,
        v if v >= 100.0 => 1,
        v if v >= 10.0 => 2,
        _ => 3,
    };
    format!("{scaled:.digits$}{suffix}")
}

/// `bench history list`: each benchmark's entries, first and last.
pub fn list(entries: &[Entry]) -> Vec<String> {
    if entries.is_empty() {
        return vec!["the history has no entries yet".to_string()];
    }
    let mut by_bench: BTreeMap<&str, (usize, i64, i64)> = BTreeMap::new();
    for entry in entries {
        let row = by_bench
            .entry(&entry.benchmark)
            .or_insert((0, entry.time, entry.time));
        row.0 += 1;
        row.1 = row.1.min(entry.time);
        row.2 = row.2.max(entry.time);
    }
    let width = by_bench.keys().map(|b| b.len()).max().unwrap_or(9).max(9);
    let mut lines = vec![format!(
        "{:<width$}  {:>7}  {:<20}  last",
        "benchmark", "entries", "first"
    )];
    for (bench, (count, first, last)) in by_bench {
        lines.push(format!(
            "{bench:<width$}  {count:>7}  {:<20}  {}",
            time::show(first),
            time::show(last)
        ));
    }
    lines
}

/// A series' heading: what it is, where, with which options.
pub fn heading(series: &Series<'_>) -> String {
    let mut line = format!(
        "{}, {} is better; {}",
        series.title(),
        better_word(series.better),
        series.machine
    );
    if !series.options.is_empty() {
        line.push_str(&format!("; {}", series.options));
    }
    line
}

pub fn better_word(better: Better) -> &'static str {
    match better {
        Better::Higher => "higher",
        Better::Lower => "lower",
    }
}

/// `bench history show`: a table a series, an entry a line.
pub fn show(all: &[Series<'_>]) -> Vec<String> {
    let mut lines = Vec::new();
    for series in all {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines.push(heading(series));
        let kernel_width = series
            .points
            .iter()
            .map(|(e, _)| e.kernel.release.len())
            .max()
            .unwrap_or(6)
            .max(6);
        lines.push(format!(
            "{:>4}  {:<20}  {:<kernel_width$}  {:<14}  {:>10}  {:>21}  {:>4}",
            "#", "time", "kernel", "bench", "value", "95 % interval", "runs"
        ));
        for (i, (entry, point)) in series.points.iter().enumerate() {
            let runs = entry
                .figure(&series.figure)
                .map_or(0, |figure| figure.values.len());
            let interval = match point.low < point.high {
                true => format!("{} .. {}", number(point.low), number(point.high)),
                false => "-".to_string(),
            };
            lines.push(format!(
                "{i:>4}  {:<20}  {:<kernel_width$}  {:<14}  {:>10}  {interval:>21}  {runs:>4}",
                time::show(entry.time),
                or_dash(&entry.kernel.release),
                or_dash(&short_version(entry)),
                number(point.value),
            ));
        }
    }
    lines
}

fn or_dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}

/// bench's version and the commit's first 7 characters: `0.1.0 4c30c63`.
pub fn short_version(entry: &Entry) -> String {
    let commit: String = entry.tool.commit.chars().take(7).collect();
    format!("{} {commit}", entry.tool.version)
        .trim()
        .to_string()
}

/// The machines and the option sets a benchmark's entries have.
type Kinds<'a> = (
    HashSet<&'a MachineId>,
    HashSet<&'a BTreeMap<String, String>>,
);

/// A name an entry: its benchmark, with its machine and options where
/// other entries of that benchmark differ in them, and a number after the
/// first where entries are alike in all three (two result files of one
/// configuration). Unique, and linear in the entries: one pass to learn
/// what each benchmark's entries differ in, one to name them.
pub fn entry_names(entries: &[Entry]) -> Vec<String> {
    let mut kinds: HashMap<&str, Kinds<'_>> = HashMap::new();
    for entry in entries {
        let (machines, options) = kinds.entry(&entry.benchmark).or_default();
        machines.insert(&entry.machine);
        options.insert(&entry.options);
    }
    let mut taken: HashSet<String> = HashSet::new();
    let mut names = Vec::with_capacity(entries.len());
    for entry in entries {
        let (machines, options) = &kinds[entry.benchmark.as_str()];
        let mut context = Vec::new();
        if machines.len() > 1 {
            context.push(entry.machine.label());
        }
        if options.len() > 1 {
            context.push(entry.options_line());
        }
        let name = match context.is_empty() {
            true => entry.benchmark.clone(),
            false => format!("{} [{}]", entry.benchmark, context.join("; ")),
        };
        names.push(unique(&mut taken, &name, " #"));
    }
    names
}

/// `name`, or `name{separator}2`, `name{separator}3`... the first not in
/// `taken`, which takes it: names unique by construction, whatever names
/// the others already had.
pub fn unique(taken: &mut HashSet<String>, name: &str, separator: &str) -> String {
    let mut candidate = name.to_string();
    let mut n = 1;
    while taken.contains(&candidate) {
        n += 1;
        candidate = format!("{name}{separator}{n}");
    }
    taken.insert(candidate.clone());
    candidate
}

/// `bench history changes`: each change point in three lines, then a count.
pub fn changes(found: &[Change], series: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for change in found {
        let mut what = format!(
            "{} {} ({}, {} is better) on {}",
            change.benchmark,
            change.figure,
            change.unit,
            better_word(change.better),
            change.machine
        );
        if !change.options.is_empty() {
            what.push_str(&format!(" [{}]", change.options));
        }
        lines.push(what);
        lines.push(format!(
            "  {} at entry {}: {} -> {} ({:+.1} %), p = {:.3}",
            change.verdict.word(),
            change.index,
            number(change.before),
            number(change.after),
            change.change_pct,
            change.p
        ));
        for (side, beside) in [
            ("last before", &change.last_before),
            ("first after", &change.first_after),
        ] {
            lines.push(format!(
                "  {side}: {}, kernel {}, bench {}",
                beside.time,
                or_dash(&beside.kernel),
                or_dash(&beside.bench_version)
            ));
        }
    }
    lines.push(match found.len() {
        0 => format!("no change point in {series} series"),
        n => format!("{} in {series} series", change_points(n)),
    });
    lines
}

/// `bench history changes --json`: the list of changes.
pub fn changes_json(found: &[Change]) -> String {
    // Plain structs of numbers and strings: serialising cannot fail.
    serde_json::to_string_pretty(found).unwrap_or_default() + "\n"
}

pub fn added(path: &Path, added: usize, offered: usize) -> String {
    let kept = offered - added;
    match kept {
        0 => format!("added {added} entries to {}", path.display()),
        _ => format!(
            "added {added} entries to {} ({kept} already there)",
            path.display()
        ),
    }
}

/// Why a result file given to `history add` adds no entry.
pub fn no_entry(file: &Path, result: &crate::results::ResultFile) -> String {
    let why = match result.runs.iter().all(|run| run.partial) {
        true if !result.runs.is_empty() => "every run in it was interrupted (marked partial)",
        _ => "it holds no complete run with a figure",
    };
    format!("note: {} adds no entry: {why}", file.display())
}

pub fn merged(other: &Path, added: usize, offered: usize) -> String {
    format!(
        "merged {}: {added} new entries of {offered}",
        other.display()
    )
}

pub fn report_written(index: &Path, series: usize, changes: usize) -> String {
    format!(
        "wrote {}: {series} series, {}",
        index.display(),
        change_points(changes)
    )
}

/// `1 change point`, `2 change points`.
pub fn change_points(count: usize) -> String {
    match count {
        1 => "1 change point".to_string(),
        n => format!("{n} change points"),
    }
}

/// Why the github-action export has nothing to write: no figure of the
/// direction asked for.
pub fn nothing_to_export(other_way: usize, better: Better) -> String {
    let (asked, other) = match better {
        Better::Higher => ("higher", "lower"),
        Better::Lower => ("lower", "higher"),
    };
    format!("no figure where {asked} is better to export ({other_way} where {other} is): give --better {other}, or other benchmarks")
}

/// The github-action export's note of the figures of the other direction.
pub fn left_out(count: usize, better: Better) -> String {
    let (other, tool) = match better {
        Better::Higher => ("lower", "customSmallerIsBetter"),
        Better::Lower => ("higher", "customBiggerIsBetter"),
    };
    format!("note: {count} figures where {other} is better were left out: export them with --better {other} for {tool}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(benchmark: &str, machine: &str, producers: &str) -> Entry {
        Entry {
            uid: String::new(),
            benchmark: benchmark.into(),
            time: 0,
            kernel: Default::default(),
            machine: crate::history::entry::MachineId {
                name: machine.into(),
                ..Default::default()
            },
            tool: Default::default(),
            options: [("producers".to_string(), producers.to_string())].into(),
            labels: Default::default(),
            source: "run".into(),
            figures: Vec::new(),
        }
    }

    #[test]
    fn entries_are_named_by_what_tells_them_apart() {
        let entries = [
            entry("a", "lab", "1"),
            entry("a", "lab", "2"),
            entry("b", "lab", "1"),
            entry("b", "desk", "1"),
            entry("c", "lab", "1"),
            entry("c", "lab", "1"),
        ];
        assert_eq!(
            entry_names(&entries),
            [
                "a [producers=1]",
                "a [producers=2]",
                "b [lab: unknown CPU]",
                "b [desk: unknown CPU]",
                "c",
                "c #2"
            ]
        );
    }

    #[test]
    fn numbers_keep_four_figures() {
        assert_eq!(number(1_234_567.0), "1.235M");
        assert_eq!(number(56_780.0), "56.78K");
        assert_eq!(number(0.5), "0.500");
        assert_eq!(number(123.456), "123.5");
        assert_eq!(number(2_500.0), "2500");
    }
}
