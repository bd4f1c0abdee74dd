//! What Apache Otava's `otava analyze` reads: a CSV a series (a time
//! column, the figure, and the context as attributes) and the otava.yaml
//! that declares each as a test of type csv, the figure's direction
//! (1: higher is better, -1: lower) included; for a PostgreSQL history, an
//! otava.yaml alone whose tests are queries over the store's tables (Otava's
//! postgres importer, the connection from its POSTGRES_* environment), so
//! that Otava reads the live store.

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
    for (series, test) in all.iter().zip(test_names(all)) {
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
        let direction = direction(series.better);
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

/// Each series' test name: `benchmark-figure`, numbered when taken.
fn test_names(all: &[Series<'_>]) -> Vec<String> {
    // `a-3` among three `a`s included: each series its own test.
    let mut taken: HashSet<String> = HashSet::new();
    all.iter()
        .map(|series| {
            let name = slug(&format!("{}-{}", series.benchmark, series.figure));
            unique(&mut taken, &name, "-")
        })
        .collect()
}

fn direction(better: Better) -> i32 {
    match better {
        Better::Higher => 1,
        Better::Lower => -1,
    }
}

/// otava.yaml for a PostgreSQL history: a test a series, each a query over
/// `bench_entries` and `bench_figures` that selects the series' rows by the
/// benchmark, the figure, the machine's columns and the options (what
/// makes a series), in time order. No connection in the file: Otava takes
/// it from POSTGRES_HOSTNAME, _PORT, _USERNAME, _PASSWORD and _DATABASE.
/// Each query names `%{BRANCH}` (and ignores it): Otava 0.8 runs a query
/// without it with no parameters at all, which its driver (pg8000) refuses,
/// so `otava analyze --branch ANY` is the way to run them.
pub fn otava_postgres(all: &[Series<'_>]) -> Vec<(String, String)> {
    let mut config = String::from(
        "# Written by bench history export --format otava from a PostgreSQL history:\n\
         # run `otava analyze` with POSTGRES_HOSTNAME, POSTGRES_PORT, POSTGRES_USERNAME,\n\
         # POSTGRES_PASSWORD and POSTGRES_DATABASE set, and --branch (any name).\ntests:\n",
    );
    for (series, test) in all.iter().zip(test_names(all)) {
        let Some((entry, _)) = series.points.first() else {
            continue;
        };
        let column = metric_column(&series.figure);
        let options = serde_json::to_string(&entry.options).unwrap_or_default();
        let query = format!(
            "SELECT to_timestamp(e.time) AS time, f.value AS {column},\n\
             \x20      e.kernel_release AS kernel, e.bench_version, e.bench_commit AS commit\n\
             FROM bench_entries e JOIN bench_figures f ON f.entry = e.id\n\
             WHERE e.benchmark = {} AND f.name = {} AND f.value IS NOT NULL\n\
             \x20 AND e.machine_name = {} AND e.cpu_model = {} AND e.cpus = {}\n\
             \x20 AND e.virtualised = {} AND e.options = {}\n\
             \x20 AND %{{BRANCH}}::text IS NOT NULL\n\
             ORDER BY e.time, e.id",
            sql_text(&series.benchmark),
            sql_text(&series.figure),
            sql_text(&entry.machine.name),
            sql_text(&entry.machine.cpu_model),
            entry.machine.cpus,
            sql_text(&entry.machine.virtualised),
            sql_text(&options),
        );
        let indented: String = query.lines().map(|l| format!("      {l}\n")).collect();
        config.push_str(&format!(
            "  {test}:\n    type: postgres\n    time_column: time\n    query: |\n{indented}    metrics:\n      {column}:\n        column: {column}\n        direction: {}\n    attributes: [kernel, bench_version, commit]\n",
            direction(series.better)
        ));
    }
    vec![("otava.yaml".to_string(), config)]
}

/// A SQL string literal.
fn sql_text(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
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
