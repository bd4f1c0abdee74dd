//! What Apache Otava's `otava analyze` reads: a CSV a series (a time
//! column, the figure, and the context as attributes) and the otava.yaml
//! that declares each as a test of type csv, the figure's direction
//! (1: higher is better, -1: lower) included.

use std::path::Path;

use crate::history::series::Series;
use crate::history::time;
use crate::stats::Better;

/// The files, by name in `dir`: one CSV a series, and `otava.yaml`, whose
/// tests name the CSVs by their path in `dir`.
pub fn otava(all: &[Series<'_>], dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut config = String::from("# Written by bench history export --format otava\ntests:\n");
    let mut taken: Vec<String> = Vec::new();
    for series in all {
        let mut test = slug(&format!("{}-{}", series.benchmark, series.figure));
        if taken.contains(&test) {
            let n = taken.iter().filter(|t| t.starts_with(&test)).count();
            test = format!("{test}-{}", n + 1);
        }
        taken.push(test.clone());
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
        let direction = match series.better {
            Better::Higher => 1,
            Better::Lower => -1,
        };
        config.push_str(&format!(
            "  {test}:\n    type: csv\n    file: {}\n    time_column: time\n    metrics:\n      {column}:\n        column: {column}\n        direction: {direction}\n    attributes: [kernel, machine, bench_version, commit, options]\n",
            quoted(&dir.join(&file).display().to_string())
        ));
        files.push((file, csv));
    }
    files.push(("otava.yaml".to_string(), config));
    files
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
