//! A kept result file as history entries: the one place that reads a
//! `ResultFile` for the history. A file's figures are its own table (name,
//! unit, which way is better) and each run's values of them, the cold
//! attach runs left out as `results::judged` says: a file whose benchmark
//! this binary does not know, or knows under another meaning, is kept as it
//! was written. (A file of an earlier layout is brought to today's before it
//! reaches here: `compare::load_result`.)

use std::collections::BTreeMap;

use super::entry::{Entry, FigureValues, KernelId, MachineId, ToolId};
use super::time;
use crate::benches;
use crate::error::{Error, Result};
use crate::results::{self, ResultFile, RunRecord};
use crate::runner::affinity::parse_cpu_list;

/// What a result file does not say of where it ran, known when the run is
/// this process's own (`--history` on a run): `uname -v`.
#[derive(Clone, Debug, Default)]
pub struct Local {
    pub kernel_version: String,
}

impl Local {
    pub fn gather() -> Local {
        Local {
            kernel_version: std::fs::read_to_string("/proc/sys/kernel/version")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        }
    }
}

/// The entries of `file`: one per swept value (one without a sweep), each
/// with the figures its complete runs measured. `source` says where it came
/// from (`run`, `result-file`).
pub fn entries_of(file: &ResultFile, local: &Local, source: &str) -> Result<Vec<Entry>> {
    let time = time::parse(&file.context.date).map_err(Error::usage)?;
    let mut points: BTreeMap<Option<u64>, Vec<&RunRecord>> = BTreeMap::new();
    for run in file.runs.iter().filter(|run| !run.partial) {
        points.entry(run.sweep_value).or_default().push(run);
    }
    let mut entries = Vec::new();
    for runs in points.values() {
        let kept: Vec<RunRecord> = runs.iter().map(|&run| run.clone()).collect();
        let figures: Vec<FigureValues> = file
            .figures
            .iter()
            .map(|figure| FigureValues {
                name: figure.name.clone(),
                unit: figure.unit.clone(),
                better: figure.better,
                values: kept
                    .iter()
                    .filter(|run| results::judged(run, &kept))
                    .filter_map(|run| run.figure(&figure.name))
                    .collect(),
                low: None,
                high: None,
            })
            .filter(|figure| !figure.values.is_empty())
            .collect();
        if figures.is_empty() {
            continue;
        }
        let entry = Entry {
            uid: String::new(),
            benchmark: file.benchmark.clone(),
            time,
            kernel: KernelId {
                release: file.context.kernel_release.clone(),
                version: local.kernel_version.clone(),
            },
            machine: MachineId {
                name: file.context.machine_name.clone(),
                cpu_model: file.context.cpu_model.clone(),
                cpus: parse_cpu_list(&file.context.online_cpus).map_or(0, |cpus| cpus.len() as u32),
                virtualised: file
                    .context
                    .vm
                    .clone()
                    .unwrap_or_else(|| file.context.machine.virtualization.clone()),
            },
            tool: ToolId {
                version: file.tool.version.clone(),
                commit: file.tool.git_revision.clone(),
            },
            options: options_of(file, runs[0]),
            labels: BTreeMap::new(),
            source: source.to_string(),
            figures,
        };
        entries.push(entry.labelled(&BTreeMap::new()));
    }
    Ok(entries)
}

/// The options that change the work, as words; a swept option's value is
/// the run's.
fn options_of(file: &ResultFile, run: &RunRecord) -> BTreeMap<String, String> {
    let o = &file.options;
    let mut options = BTreeMap::new();
    let mut put = |key: &str, value: String| {
        options.insert(key.to_string(), value);
    };
    put("producers", run.producers.to_string());
    if o.consumers > 0 {
        put("consumers", o.consumers.to_string());
    }
    if o.affinity != "none" {
        put("affinity", o.affinity.clone());
    }
    if let Some(repeat) = o.repeat {
        put("repeat", repeat.to_string());
    }
    for (key, value) in &run.params {
        put(key, value.to_string());
    }
    for (key, value) in &o.text_params {
        put(key, value.clone());
    }
    if let Some(body) = &o.body {
        put("body", body.clone());
    }
    if o.stacktrace {
        put("stacktrace", "yes".to_string());
    }
    if let Some(bytes) = o.read_bytes {
        put("read-bytes", bytes.to_string());
    }
    if o.pid_filter {
        put("pid-filter", "yes".to_string());
    }
    if o.latency {
        put("latency", "yes".to_string());
    }
    if let Some(hz) = o.profile_freq_hz {
        put("profile-freq", hz.to_string());
    }
    options
}

/// `entries` as today's bench makes them: without the options that change
/// only the output (`--machine-readable`), which split no series, and named
/// by their host where an earlier bench kept it as the label `host` (a run
/// appended with `--history`), so that they join today's series of that
/// machine. Applied once their uid is made (which keeps every recorded
/// option: an entry keeps the identity an earlier bench gave it), and to
/// the entries a history kept.
pub fn as_today(mut entries: Vec<Entry>) -> Vec<Entry> {
    for entry in &mut entries {
        entry.options.retain(|key, _| benches::changes_work(key));
        if entry.machine.name.is_empty() {
            if let Some(host) = entry.labels.get("host") {
                entry.machine.name = host.clone();
            }
        }
    }
    entries
}
