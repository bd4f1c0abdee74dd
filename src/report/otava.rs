//! What Apache Otava's `otava analyze` reads: a CSV a series (a time
//! column, the figure, and the context as attributes) and the otava.yaml
//! that declares each as a test of type csv, the figure's direction
//! (1: higher is better, -1: lower) included.

use std::collections::HashSet;
use std::path::Path;

use super::history::unique;
use crate::history::series::Series;
use crate::history::time;
use crate::stats::Better;

/// The files, by name in `dir`: one CSV a series, and `otava.yaml`, whose
/// tests name the CSVs by their path in `dir`.
pub fn otava(all: &[Series<'_>], dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut config = String::from("# Written by bench history export --format otava\ntests:\n");
    let mut taken: HashSet<String> = HashSet::new();
    for series in all {
        // `a-3` among three `a`s included: each series its own CSV.
        let name = slug(&format!("{}-{}", series.benchmark, series.figure));
        let test = unique(&mut taken, &name, "-");
        let column = metric_column(&series.figure);
        let mut csv = format!("time,{column},kernel,machine,bench_version,commit,options\n");
        for (entry, point) in &series.points {
            csv.push_str(&format!(
                "{},{},{},{},{},{},{}\n",
                time::show(entry.time),
                point.value,
                field(&entry.kernel.release),
                field(&series.machine),
                field(&entry.tool.version),
                field(&entry.tool.commit),
                field(&series.options)
            ));
        }
        let file = format!("{test}.csv");
        let direction = match series.better {
            Better::Higher => 1,
            Better::Lower => -1,
        };
        config.push_str(&format!(
            "  {}:\n    type: csv\n    file: {}\n    time_column: time\n    metrics:\n      {column}:\n        column: {column}\n        direction: {direction}\n    attributes: [kernel, machine, bench_version, commit, options]\n",
            quoted(&test),
            quoted(&dir.join(&file).display().to_string())
        ));
        files.push((file, csv));
    }
    files.push(("otava.yaml".to_string(), config));
    files
}

/// The CSV's other columns, which a metric's column must not be.
const RESERVED: [&str; 6] = [
    "time",
    "kernel",
    "machine",
    "bench_version",
    "commit",
    "options",
];

/// A figure's column: its name as a slug, or `metric_NAME` where that is one
/// of the other columns (a BMF measure named `time`).
fn metric_column(figure: &str) -> String {
    let column = slug(figure);
    match RESERVED.contains(&column.as_str()) {
        true => format!("metric_{column}"),
        false => column,
    }
}

/// A name made of letters, digits, `-` and `_`.
fn slug(text: &str) -> String {
    text.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// A CSV field, quoted where it must be.
fn field(text: &str) -> String {
    match text.contains([',', '"', '\n']) {
        true => format!("\"{}\"", text.replace('"', "\"\"")),
        false => text.to_string(),
    }
}

/// A YAML string in double quotes.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::{bare, Entry, Point};

    fn entry(time: i64) -> Entry {
        bare(time, ("x", "u", Better::Higher), 1.0)
    }

    fn one<'a>(figure: &str, machine: &str, entry: &'a Entry) -> Series<'a> {
        let point = Point {
            value: 1.0,
            low: 1.0,
            high: 1.0,
        };
        Series {
            benchmark: "a".into(),
            figure: figure.into(),
            unit: "u".into(),
            better: Better::Higher,
            machine: machine.into(),
            options: String::new(),
            points: vec![(entry, point)],
        }
    }

    /// `a throughput` on three machines and `a throughput-3` are four CSVs
    /// and four tests; a measure named `time` is not the time column; a date
    /// before 1970 is a date.
    #[test]
    fn every_series_is_its_own_test_with_its_own_columns() {
        let old = entry(-1);
        let all = [
            one("throughput", "m1", &old),
            one("throughput", "m2", &old),
            one("throughput", "m3", &old),
            one("throughput-3", "m1", &old),
            one("time", "m1", &old),
        ];
        let files = otava(&all, Path::new("/d"));
        let names: HashSet<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names.len(), 6, "{names:?}");
        let (_, time_csv) = &files[4];
        assert!(time_csv.starts_with("time,metric_time,"), "{time_csv}");
        assert!(time_csv.contains("\n1969-12-31T23:59:59Z,"), "{time_csv}");
        let config = &files[5].1;
        assert_eq!(config.matches("    type: csv").count(), 5);
    }
}
