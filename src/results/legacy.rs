//! Result files of the layouts before channels were declared
//! (bench-result/1 and /2): each sample held `hits`, `drops` and positional
//! `extra` counts whose meaning lived in the binary, and a run kept its own
//! values by name. They are brought to today's layout on reading: the counts
//! become values in their old order, the kept values finals, and a caller
//! that knows the benchmark gives them today's channels and figures
//! ([`super::ResultFile::upgrade`]); what the file lacked is said once.

use serde_json::{json, Map, Value};

use super::RunRecord;
use crate::channels::{self, Channel, DROPS, HITS};
use crate::figures::{self, Figure};
use crate::stats::MeanSd;

/// The layouts read besides today's.
pub const SCHEMAS: [&str; 2] = ["bench-result/1", "bench-result/2"];

/// What a file of an earlier layout lacked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Legacy {
    pub schema: String,
}

impl Legacy {
    /// The sentence said once about `file`, of benchmark `bench`, read with
    /// today's meaning of it or not (`known`).
    pub fn note(&self, file: &str, bench: &str, known: bool) -> String {
        let how = match known {
            true => format!(
                "its counts are read as today's channels of {bench}, and its figures worked out \
                 by today's definitions"
            ),
            false => format!(
                "{bench} is not a benchmark this bench knows: its hits per second are its one \
                 figure"
            ),
        };
        format!(
            "note: {file} was written as {} and carries no table of its channels and figures; \
             {how}",
            self.schema
        )
    }
}

/// Brings a parsed file of an earlier layout to today's, in place.
pub fn bring_up(file: &mut Value) -> Legacy {
    let schema = file["schema"].as_str().unwrap_or("").to_string();
    let v1 = schema == SCHEMAS[0];
    if let Some(top) = file.as_object_mut() {
        top.insert("schema".into(), json!(super::SCHEMA));
        top.remove("counts");
        top.insert("channels".into(), json!([]));
        top.insert("figures".into(), json!([]));
    }
    for run in array(file, "runs") {
        bring_up_run(run);
    }
    for level in array(file, "run_stats") {
        if let Some(level) = level.as_object_mut() {
            level.remove("headline");
            level.insert("figures".into(), json!({}));
            if let Some(summary) = level.get_mut("summary") {
                bring_up_summary(summary);
                // The first layout counted a summary's runs as samples.
                if v1 {
                    if let Some(n) = summary.as_object_mut().and_then(|s| s.remove("samples")) {
                        summary["runs"] = n;
                    }
                }
            }
        }
    }
    Legacy { schema }
}

fn array<'a>(value: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    value
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn bring_up_run(run: &mut Value) {
    for sample in array(run, "samples") {
        if let Some(sample) = sample.as_object_mut() {
            let mut values = vec![take(sample, "hits"), take(sample, "drops")];
            if let Some(Value::Array(extra)) = sample.remove("extra") {
                values.extend(extra);
            }
            sample.insert("values".into(), Value::Array(values));
        }
    }
    if let Some(summary) = run.get_mut("summary").filter(|s| !s.is_null()) {
        bring_up_summary(summary);
    }
    if let Some(fixed) = run.get_mut("fixed").and_then(Value::as_object_mut) {
        let counts = fixed.remove("counts").unwrap_or(Value::Null);
        fixed.insert("values".into(), json!([counts["hits"], counts["drops"]]));
    }
    let Some(run) = run.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(kept)) = run.remove("figures") {
        let finals: Vec<Value> = kept
            .iter()
            .map(|(name, value)| final_of(name, value))
            .collect();
        if !finals.is_empty() {
            run.insert("finals".into(), Value::Array(finals));
        }
    }
}

fn take(object: &mut Map<String, Value>, key: &str) -> Value {
    object.remove(key).unwrap_or(Value::Null)
}

/// A summary's hits and drops become its first two channels.
fn bring_up_summary(summary: &mut Value) {
    let Some(summary) = summary.as_object_mut() else {
        return;
    };
    let channels = json!([take(summary, "hits"), take(summary, "drops")]);
    for gone in ["total", "per_producer", "latency_ns", "usecs_per_op"] {
        summary.remove(gone);
    }
    summary.insert("channels".into(), channels);
}

/// A value a run kept by name: the hash map family's `cpu03 lookups` are
/// CPU 3's value of `cpu lookups`.
fn final_of(name: &str, value: &Value) -> Value {
    let per_cpu = name.strip_prefix("cpu").and_then(|rest| {
        let (cpu, what) = rest.split_once(' ')?;
        Some((cpu.parse::<u32>().ok()?, what))
    });
    match per_cpu {
        Some((cpu, what)) => json!({"channel": format!("cpu {what}"), "cpu": cpu, "value": value}),
        None => json!({"channel": name, "value": value}),
    }
}

/// What a benchmark this bench does not know is read as: hits and drops,
/// judged by the rate of hits (or, for attach cycles, their times).
pub fn fallback(cycles: bool) -> (&'static [Channel], &'static [Figure]) {
    const COUNTS: [Channel; 2] = [HITS, DROPS];
    match cycles {
        true => (&[], &[figures::ATTACH, figures::DETACH]),
        false => (&COUNTS, &[figures::HITS]),
    }
}

/// A run's counts, kept in the old order (`[hits, drops, extra...]`),
/// placed where today's `channels` read them.
pub fn place(run: &mut RunRecord, channels: &[Channel]) {
    let slots: Vec<Option<usize>> = channels::ticked(channels).map(|c| c.was.index()).collect();
    let placed = |old: &[Option<u64>]| -> Vec<Option<u64>> {
        slots.iter().map(|slot| *old.get((*slot)?)?).collect()
    };
    match &mut run.outcome {
        super::Outcome::Timed {
            samples, summary, ..
        } => {
            for sample in samples.iter_mut() {
                sample.values = placed(&sample.values);
            }
            if let Some(summary) = summary {
                let old: Vec<Option<MeanSd>> = summary.channels.clone();
                summary.channels = slots.iter().map(|slot| *old.get((*slot)?)?).collect();
            }
        }
        super::Outcome::Fixed { run, .. } => run.values = placed(&run.values),
        super::Outcome::Cycle(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_run_keeps_its_counts_in_their_old_order() {
        let mut file = json!({
            "schema": "bench-result/2",
            "counts": {"hits": "operations", "drops": "memory"},
            "runs": [{
                "samples": [{"iteration": 0, "elapsed_ns": 1, "late_ns": 0, "hits": 5,
                             "drops": 7, "warmup": false, "extra": [9]}],
                "summary": {"samples": 1, "hits": {"mean": 5.0, "sd": 0.0},
                            "drops": {"mean": 7.0, "sd": 0.0}, "total": {"mean": 12.0, "sd": 0.0},
                            "per_producer": 5.0, "latency_ns": 1.0,
                            "usecs_per_op": {"mean": 1.0, "sd": 0.0},
                            "max_late_ns": 0, "noisy": false},
                "fixed": null,
                "figures": {"peak memory": 4096.0, "cpu03 lookups": 1e6}
            }]
        });
        let legacy = bring_up(&mut file);
        assert_eq!(legacy.schema, "bench-result/2");
        let run = &file["runs"][0];
        assert_eq!(run["samples"][0]["values"], json!([5, 7, 9]));
        assert_eq!(run["summary"]["channels"][1]["mean"], 7.0);
        assert!(run["summary"].get("total").is_none());
        assert_eq!(
            run["finals"][0],
            json!({"channel": "cpu lookups", "cpu": 3, "value": 1e6})
        );
        assert_eq!(
            run["finals"][1],
            json!({"channel": "peak memory", "value": 4096.0})
        );
        assert!(file.get("counts").is_none());
    }
}
