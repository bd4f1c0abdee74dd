//! github-action-benchmark's custom tools' JSON: a list of `{name, unit,
//! value, range, extra}`, one a figure, for `customBiggerIsBetter` (the
//! figures where higher is better) or `customSmallerIsBetter` (lower). The
//! tool takes one direction a file, so the figures of the other are left out
//! (and counted, for a note).

use serde_json::{json, Value};

use super::history::{entry_names, short_version};
use crate::history::entry::Entry;
use crate::stats::Better;

/// The JSON of the figures of `entries` that are `better` one way, how many
/// it holds and how many of the other way were left out.
pub fn github_action(entries: &[Entry], better: Better) -> (String, usize, usize) {
    let mut list = Vec::new();
    let mut left_out = 0;
    for (entry, name) in entries.iter().zip(entry_names(entries)) {
        for figure in &entry.figures {
            let Some(point) = figure.point() else {
                continue;
            };
            if figure.better != better {
                left_out += 1;
                continue;
            }
            let mut item = json!({
                "name": format!("{name} {}", figure.name),
                "unit": figure.unit,
                "value": point.value,
                "extra": format!(
                    "kernel {}\nmachine {}\nbench {}\nruns {}",
                    entry.kernel.release,
                    entry.machine.label(),
                    short_version(entry),
                    figure.values.len()
                ),
            });
            if point.low < point.high {
                // Exact, as `value` is: the tool shows it as it is given.
                item["range"] = json!(format!("{} .. {}", point.low, point.high));
            }
            list.push(item);
        }
    }
    let kept = list.len();
    let json = serde_json::to_string_pretty(&Value::Array(list)).unwrap_or_default() + "\n";
    (json, kept, left_out)
}
