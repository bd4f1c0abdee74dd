//! Results you can keep: plain serde structs for a run (or a sweep of runs)
//! with the context that makes its numbers meaningful, and their loading.
//! The JSON form is documented in `docs/result-schema.json`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::kernel;
use crate::noise::{Machine, Noise};
use crate::profile::Breakdown;
use crate::runner::affinity::{format_cpu_list, Affinity, Placement};
use crate::runner::FixedRun;
use crate::stats::{RunStats, Sample, Summary};

/// Names this format; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "bench-result/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultFile {
    pub schema: String,
    pub tool: Tool,
    pub context: Context,
    pub benchmark: String,
    /// The options as given (for a sweep: before the swept value is applied).
    pub options: Options,
    pub sweep: Option<SweepInfo>,
    /// The run was interrupted: what is here is what was measured.
    pub partial: bool,
    /// One run, or one per swept value and repetition.
    pub runs: Vec<RunRecord>,
    /// With repeated runs (`--runs`, `--precision`): the statistics over the
    /// runs, one entry per swept value (or one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_stats: Vec<RunLevel>,
    /// With `--precision`: the target and whether it was reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionRecord>,
}

/// The statistics over a configuration's independent runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLevel {
    pub sweep_value: Option<u64>,
    /// The headline rate (hits, or operations for the perf family) over the
    /// run means: mean, between-run sd, 95 % interval.
    pub headline: RunStats,
    /// Every figure of a run's summary, as the mean of the runs' figures, with
    /// the between-run sd as the spread.
    pub summary: Summary,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionRecord {
    /// The half-width of the 95 % interval asked for, in % of the mean.
    pub target_pct: f64,
    pub reached: bool,
    /// What ended the runs: `target`, `max-runs`, `max-time` or `interrupt`.
    pub stopped_by: String,
    pub runs: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub version: String,
    pub git_revision: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    pub kernel_release: String,
    pub cpu_model: String,
    pub online_cpus: String,
    /// When the run started, RFC 3339 in UTC.
    pub date: String,
    /// What a reader needs to reproduce the numbers: the kernel's command
    /// line, virtualisation, SMT, the cpufreq governor.
    #[serde(default)]
    pub machine: Machine,
    /// Inside a VM of scripts/run_in_vm.sh: `kvm`, or `tcg` (emulated: the
    /// times are not performance numbers). Absent in older files.
    #[serde(default)]
    pub vm: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    pub producers: usize,
    pub consumers: usize,
    pub warmup_secs: u32,
    pub duration_secs: u32,
    /// `none`, `auto`, or the explicit lists (`producers=0-1 consumers=2`).
    pub affinity: String,
    pub repeat: Option<u64>,
    /// The benchmark's own options, defaults filled in.
    pub params: BTreeMap<String, u64>,
    /// `-s/--stacktrace` was given.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stacktrace: bool,
    /// `--pid-filter` was given.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pid_filter: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepInfo {
    pub param: String,
    pub values: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// The swept parameter's value for this run.
    pub sweep_value: Option<u64>,
    /// The producer count and options this run had (they differ from
    /// `options` where swept).
    pub producers: usize,
    pub params: BTreeMap<String, u64>,
    /// The CPU of each thread (`null`: not pinned): the affinity used.
    pub placement: PlacementRecord,
    pub partial: bool,
    /// Every tick, warm-up ones marked.
    pub samples: Vec<Sample>,
    /// Over the measured samples; absent when none was measured.
    pub summary: Option<Summary>,
    /// A fixed-work (`--repeat`) run's result, instead of samples.
    pub fixed: Option<FixedRun>,
    /// Which of the independent runs this is (1-based), with `--runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// What disturbed this run: steal, other runnable tasks, clock changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
    /// For a uprobe, uretprobe, multi or USDT run: how the kernel handled
    /// the probe (`emulated`, `single-stepped`, `optimized`), found after the
    /// warm-up from the bytes at the probed address and the special mappings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_path: Option<String>,
    /// With `--profile`: where the measured seconds went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Breakdown>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementRecord {
    pub producers: Vec<Option<usize>>,
    pub consumers: Vec<Option<usize>>,
}

impl From<&Placement> for PlacementRecord {
    fn from(p: &Placement) -> Self {
        PlacementRecord {
            producers: p.producers.clone(),
            consumers: p.consumers.clone(),
        }
    }
}

pub fn params_record(config: &RunConfig) -> BTreeMap<String, u64> {
    config
        .params
        .iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

impl Options {
    pub fn from_config(config: &RunConfig) -> Options {
        let affinity = match &config.affinity {
            Affinity::None => "none".to_string(),
            Affinity::Auto {
                producers: None,
                consumers: None,
            } => "auto".to_string(),
            Affinity::Auto {
                producers,
                consumers,
            } => {
                let list = |l: &Option<Vec<usize>>| l.as_deref().map(format_cpu_list);
                [
                    ("producers", list(producers)),
                    ("consumers", list(consumers)),
                ]
                .into_iter()
                .filter_map(|(who, cpus)| cpus.map(|c| format!("{who}={c}")))
                .collect::<Vec<_>>()
                .join(" ")
            }
        };
        Options {
            producers: config.producers,
            consumers: config.consumers,
            warmup_secs: config.warmup_secs,
            duration_secs: config.duration_secs,
            affinity,
            repeat: config.repeat,
            params: params_record(config),
            stacktrace: config.stacktrace,
            pid_filter: config.pid_filter,
        }
    }
}

impl Tool {
    pub fn this() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: env!("BENCH_GIT_REVISION").to_string(),
        }
    }
}

impl Context {
    pub fn gather(online: &[usize]) -> Context {
        Context {
            kernel_release: kernel::release(),
            cpu_model: cpu_model(),
            online_cpus: format_cpu_list(online),
            date: rfc3339_utc(SystemTime::now()),
            machine: Machine::gather(),
            vm: kernel::vm(),
        }
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// `2026-11-30T02:09:01Z`: civil date from days since the epoch (H. Hinnant's
/// algorithm), so that no date crate is needed.
pub fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl ResultFile {
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    pub fn load(path: &Path) -> Result<ResultFile> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
        let file: ResultFile = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{} is not a bench result file: {e}",
                path.display()
            ))
        })?;
        if file.schema != SCHEMA {
            return Err(Error::usage(format!(
                "{} has schema '{}'; this bench reads '{SCHEMA}'",
                path.display(),
                file.schema
            )));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_000_941);
        assert_eq!(rfc3339_utc(t), "2026-11-30T01:09:01Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }
}
