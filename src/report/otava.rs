//! What Apache Otava's `otava analyze` reads: a CSV a series (a time
//! column, the figure, and the context as attributes) and the otava.yaml
//! that declares each as a test of type csv, the figure's direction
//! (1: higher is better, -1: lower) included; for a PostgreSQL history, an
//! otava.yaml alone whose tests are queries over the store's tables (Otava's
//! postgres importer, the connection from its POSTGRES_* environment), so
//! that Otava reads the live store.

use std::path::Path;

use crate::history::series::Series;
use crate::history::time;
use crate::stats::Better;

/// The files, by name in `dir`: one CSV a series, and `otava.yaml`, whose
/// tests name the CSVs by their path in `dir`.
pub fn otava(all: &[Series<'_>], dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut config = String::from("# Written by bench history export --format otava\ntests:\n");
    for (series, test) in all.iter().zip(test_names(all)) {
        let column = slug(&series.figure);
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
            "  {test}:\n    type: csv\n    file: {}\n    time_column: time\n    metrics:\n      {column}:\n        column: {column}\n        direction: {direction}\n    attributes: [kernel, machine, bench_version, commit, options]\n",
            quoted(&dir.join(&file).display().to_string())
        ));
        files.push((file, csv));
    }
    files.push(("otava.yaml".to_string(), config));
    files
}

/// Each series' test name: `benchmark-figure`, numbered when taken.
fn test_names(all: &[Series<'_>]) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    for series in all {
        let mut test = slug(&format!("{}-{}", series.benchmark, series.figure));
        if taken.contains(&test) {
            let n = taken.iter().filter(|t| t.starts_with(&test)).count();
            test = format!("{test}-{}", n + 1);
        }
        taken.push(test);
    }
    taken
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
        let column = slug(&series.figure);
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
