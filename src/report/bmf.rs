//! The Bencher Metric Format (BMF): an object of benchmarks, each an object
//! of measures (here: the figures) with a `value` and the interval's
//! `lower_value` and `upper_value`, as Bencher's published schema
//! (bencher.dev/bmf.json) has it. Entries of one benchmark on several
//! machines or option sets are told apart in the benchmark's name. A
//! measure is named with its unit and direction, `hits (hits/s, higher is
//! better)`, as BMF keeps nothing else of a measure (Bencher's built-ins,
//! `throughput` and `latency`, keep their names): `bench history add` reads
//! them back.

use serde_json::{json, Map, Value};

use super::history::entry_names;
use crate::history::bmf::measure_name;
use crate::history::entry::Entry;

/// The BMF document of `entries` (one report: one entry a series).
pub fn bmf(entries: &[Entry]) -> String {
    let mut benchmarks = Map::new();
    for (entry, name) in entries.iter().zip(entry_names(entries)) {
        let mut measures = Map::new();
        for figure in &entry.figures {
            let Some(point) = figure.point() else {
                continue;
            };
            let mut metric = json!({ "value": point.value });
            if point.low < point.high {
                metric["lower_value"] = json!(point.low);
                metric["upper_value"] = json!(point.high);
            }
            let name = measure_name(&figure.name, &figure.unit, figure.better);
            measures.insert(name, metric);
        }
        if !measures.is_empty() {
            benchmarks.insert(name, Value::Object(measures));
        }
    }
    // A map of numbers and strings: serialising cannot fail.
    serde_json::to_string_pretty(&Value::Object(benchmarks)).unwrap_or_default() + "\n"
}
