//! Results you can keep: plain serde structs for a run (or a sweep of runs)
//! with the context that makes its numbers meaningful, and their loading.
//! The JSON form is documented in `docs/result-schema.json`.

mod check;
pub mod cycles;
mod legacy;
mod run;

pub use legacy::Legacy;
pub use run::{params_record, FinalRecord, Outcome, PlacementRecord, RunRecord};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::channels::{Channel, Kind};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::figures::{Figure, FigureDecl};
use crate::kernel;
use crate::latency::LatencyOverRuns;
use crate::noise::Machine;
use crate::runner::affinity::{format_cpu_list, Affinity};
use crate::stats::{Change, Decision, MeanSd, RunStats, Sensitivity, Summary, Verdict};

/// Names this format; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "bench-result/3";

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
    /// In an interleaved invocation, for every benchmark but the first: its
    /// change from the first, as the closing table judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonRecord>,
    /// In an interleaved invocation: its identity, shared by the files it
    /// wrote, so that `compare` can pair their runs round by round (a run's
    /// `repetition` is its round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<String>,
    /// With `--until-decided`: the margin, the adjusted level and what
    /// ended the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialRecord>,
    /// An attach benchmark's statistics over its cycles (one per run), one
    /// entry per swept value (or one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cycle_stats: Vec<CycleLevel>,
    /// What the benchmark reads: the samples' `values` are its channels read
    /// each tick, in this order.
    pub channels: Vec<ChannelRecord>,
    /// What a run is judged by, the headline first: each run's `figures`
    /// holds their values.
    pub figures: Vec<FigureDecl>,
    /// Read from a file of an earlier layout: what it lacked, said once by
    /// whoever reads it. Never written.
    #[serde(skip)]
    pub legacy: Option<Legacy>,
}

/// One channel as a result file declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelRecord {
    pub name: String,
    pub unit: String,
    pub kind: Kind,
    pub about: String,
}

impl From<&Channel> for ChannelRecord {
    fn from(channel: &Channel) -> ChannelRecord {
        ChannelRecord {
            name: channel.name.to_string(),
            unit: channel.unit.to_string(),
            kind: channel.kind,
            about: channel.about.to_string(),
        }
    }
}

/// How an `--until-decided` invocation looked and why it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialRecord {
    /// Changes whose interval lies within ±this (in %) are equivalent.
    pub within_pct: f64,
    pub max_runs: u32,
    /// The planned looks: one a round from round 3 to `max_runs`.
    pub looks: u32,
    /// The significance level of each look: 0.05 / looks (Bonferroni).
    pub alpha_per_look: f64,
    /// What ended the rounds: `decided-different`, `decided-equivalent`,
    /// `decided` (some of each), `max-runs`, `max-time` or `interrupt`.
    pub stopped_by: StopReason,
    pub runs: u32,
    /// Each benchmark's decision and change (at the adjusted level) at the
    /// last look, the first benchmark's excepted.
    pub decisions: Vec<SequentialDecision>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialDecision {
    pub benchmark: String,
    pub decision: Decision,
    pub change: Change,
}

/// One interleaved benchmark's change from the invocation's first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparisonRecord {
    /// The benchmark the change is from.
    pub baseline: String,
    /// What the verdict judged: `paired-by-round` (per-round log ratios).
    pub basis: String,
    /// Changes smaller than this (in %) are not called a change.
    pub noise_pct: f64,
    /// The change the verdict is of, paired by round.
    pub paired: Change,
    /// The same run means by Welch's test, as if unpaired: what pairing gained.
    pub unpaired: Option<Change>,
    pub verdict: Verdict,
    /// What the paired rounds could have detected (95 % confidence, 80 % power).
    pub sensitivity: Option<Sensitivity>,
}

/// The attach and detach times of one configuration over its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CycleLevel {
    pub sweep_value: Option<u64>,
    pub probes: usize,
    /// Wall µs per probe: mean, between-run sd, 95 % interval.
    pub attach_us_per_probe: RunStats,
    pub detach_us_per_probe: RunStats,
    /// Cycles in which every probe fired exactly once.
    pub all_fired: usize,
}

/// The statistics over a configuration's independent runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLevel {
    pub sweep_value: Option<u64>,
    /// Every figure over the runs' values: mean, between-run sd, 95 %
    /// interval (the headline first in the file's `figures`).
    pub figures: BTreeMap<String, RunStats>,
    /// Every channel of the runs' summaries, as the mean of the runs'
    /// means, with the between-run sd as the spread.
    pub summary: Summary,
    /// With `--latency`: the runs' histograms merged, and each percentile's
    /// spread between the runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyOverRuns>,
}

/// What ended `--precision`'s (or `--until-decided`'s) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The interval is as narrow as asked.
    Target,
    /// `--max-runs` runs were done.
    MaxRuns,
    /// `--max-time` passed (no new run starts after it).
    MaxTime,
    /// A signal, or a failure, stopped the runs.
    Interrupt,
    /// `--until-decided`: every change was decided different.
    DecidedDifferent,
    /// `--until-decided`: every change was decided equivalent.
    DecidedEquivalent,
    /// `--until-decided`: every change was decided, some each way.
    Decided,
}

impl StopReason {
    /// The name it is kept under, as in the result file.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Target => "target",
            StopReason::MaxRuns => "max-runs",
            StopReason::MaxTime => "max-time",
            StopReason::Interrupt => "interrupt",
            StopReason::DecidedDifferent => "decided-different",
            StopReason::DecidedEquivalent => "decided-equivalent",
            StopReason::Decided => "decided",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionRecord {
    /// The half-width of the 95 % interval asked for, in % of the mean.
    pub target_pct: f64,
    pub reached: bool,
    pub stopped_by: StopReason,
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
    /// The machine's name: `--machine NAME`, else the host's name. What
    /// tells two machines of one model apart in the history. Absent in
    /// older files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine_name: String,
    /// What decides a probe's detach cost: RCU expediting, the preemption
    /// model, IBT. Absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach_facts: Option<crate::attach::facts::DetachFacts>,
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
    /// The benchmark's own options whose value is a word
    /// (`--crypto-cipher`), defaults filled in.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub text_params: BTreeMap<String, String>,
    /// `-s/--stacktrace` (or `--body stack`) was given.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stacktrace: bool,
    /// `--body KIND`, unless the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `--read-bytes`, when the read-user body was asked for or it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u32>,
    /// `--pid-filter` was given.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pid_filter: bool,
    /// With `--profile`: the sampling frequency per CPU. The sampler takes
    /// CPU time from what it measures, so a profiled run is not compared
    /// with an unprofiled one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_freq_hz: Option<u64>,
    /// `--latency` was given: each run has its `latency`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub latency: bool,
    /// The test suite's shortened tick (`BENCH_TEST_TICK_MS`), in ms: the
    /// file checks output and is refused by `compare` and the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_tick_ms: Option<u32>,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// One body's line of a body sweep's table, filled by the sweep from its
/// runs for the reporter to print.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyRow {
    pub body: &'static str,
    /// Hits per second, events dropped included (the probe's rate): over the
    /// runs' means, or the seconds of the one run.
    pub rate: MeanSd,
    /// Events dropped, in % of the hits (the ringbuf body).
    pub drops_pct: f64,
    /// One producer's time per hit.
    pub ns_per_hit: f64,
    /// The body's cost per hit: the time per hit minus the count's, paired
    /// run by run (the rounds interleave them); `None` for the count itself
    /// or when the sweep has no count.
    pub cost_ns: Option<RunStats>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepInfo {
    pub param: String,
    pub values: Vec<u64>,
    /// How each value is shown, for a parameter of names (`body`: the value
    /// is the body's index); absent for numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
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
            text_params: config
                .params
                .iter()
                .filter_map(|(k, v)| match v {
                    crate::config::OptionValue::Text(text) => {
                        Some((k.to_string(), text.to_string()))
                    }
                    _ => None,
                })
                .collect(),
            stacktrace: config.body == crate::config::Body::Stack,
            body: match config.body {
                crate::config::Body::Count => None,
                body => Some(body.name().to_string()),
            },
            read_bytes: (config.body == crate::config::Body::ReadUser
                || config.read_bytes != crate::config::DEFAULT_READ_BYTES)
                .then_some(config.read_bytes),
            pid_filter: config.pid_filter,
            latency: config.latency,
            profile_freq_hz: None,
            test_tick_ms: (config.tick_ms != crate::config::SECOND_MS).then_some(config.tick_ms),
        }
    }

    /// These options, sampled by `--profile` at `freq_hz` when given.
    pub fn profiled(self, freq_hz: Option<u64>) -> Options {
        Options {
            profile_freq_hz: freq_hz,
            ..self
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

/// An identity for one invocation: its start time and process id, which no
/// other invocation on this machine shares.
pub fn invocation_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos}-{}", std::process::id())
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
            machine_name: host_name(),
            detach_facts: Some(crate::attach::facts::DetachFacts::gather()),
        }
    }
}

/// The host's name (`uname -n`), or nothing where it cannot be read.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
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
    rfc3339_of_secs(secs)
}

/// Seconds since the epoch (before it too: the proleptic Gregorian
/// calendar) as RFC 3339 in UTC.
pub fn rfc3339_of_secs(secs: i64) -> String {
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

    /// Reads a result file: this layout, or an earlier one brought to it
    /// (its `legacy` says what it lacked; [`ResultFile::upgrade`] gives it
    /// figures).
    pub fn load(path: &Path) -> Result<ResultFile> {
        let text = read_result_text(path)?;
        let not_a_result = |e: serde_json::Error| {
            Error::usage(format!(
                "{} is not a bench result file: {e}",
                path.display()
            ))
        };
        let mut value: serde_json::Value = serde_json::from_str(&text).map_err(not_a_result)?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        let legacy = match schema {
            SCHEMA => None,
            old if legacy::SCHEMAS.contains(&old) => Some(legacy::bring_up(&mut value)),
            other => {
                return Err(Error::usage(format!(
                    "{} has schema '{other}'; this bench reads '{SCHEMA}' and, from earlier \
                     versions, {}",
                    path.display(),
                    legacy::SCHEMAS.join(", ")
                )))
            }
        };
        let mut file: ResultFile = serde_json::from_value(value).map_err(not_a_result)?;
        file.legacy = legacy;
        check::check_figures(&file, path)?;
        Ok(file)
    }

    /// The channels read each tick, by name, in the samples' order.
    pub fn ticked(&self) -> Vec<&str> {
        self.channels
            .iter()
            .filter(|c| c.kind.is_read_each_tick())
            .map(|c| c.name.as_str())
            .collect()
    }

    /// A file of an earlier layout given today's meaning of its benchmark:
    /// its counts read as these channels, in their order, and every figure
    /// worked out over them. `None`: the benchmark is unknown here, and the
    /// file keeps the one figure its counts can mean (hits per second).
    pub fn upgrade(&mut self, today: Option<(&[Channel], &[Figure])>) {
        if self.legacy.is_none() {
            return;
        }
        let fallback = legacy::fallback(self.runs.iter().any(|r| r.cycle().is_some()));
        let (channels, figures) = today.unwrap_or((fallback.0, fallback.1));
        self.channels = channels.iter().map(ChannelRecord::from).collect();
        self.figures = figures.iter().map(Figure::decl).collect();
        for run in &mut self.runs {
            legacy::place(run, channels);
            run.evaluate(figures, channels);
        }
    }
}

/// Whether `run` counts among `runs` when they are judged: the first, cold
/// attach cycle of a process is another quantity than the warm ones after
/// it (docs/attach.md), left out as warm-up seconds are, unless no warm one
/// is there to judge (a run stopped before its cycle ended has none).
pub fn judged(run: &RunRecord, runs: &[RunRecord]) -> bool {
    let cold = |r: &RunRecord| r.cycle().is_some_and(|c| c.cold);
    !cold(run) || runs.iter().filter(|r| r.cycle().is_some()).all(cold)
}

/// The most of a result file read: ten times the largest seen (a sweep of
/// many points with latency histograms), far below what a machine holds.
pub const MAX_RESULT_BYTES: u64 = 1 << 30;

/// A result file's text, read by [`read_bounded`].
fn read_result_text(path: &Path) -> Result<String> {
    read_bounded(path, "a result file is one that `--json` wrote")
}

/// The text of a file bench reads (a result file, a BMF file): a regular
/// file only, of at most [`MAX_RESULT_BYTES`]. Opened without blocking and
/// checked on the open descriptor, so neither a FIFO (which would wait for a
/// writer) nor a device such as /dev/zero (which never ends), named directly
/// or through a symlink, is read. `expected` ends the refusal's sentence: what
/// the file should have been.
pub fn read_bounded(path: &Path, expected: &str) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| Error::usage(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::usage(format!(
            "{} is not a regular file: {expected}",
            path.display()
        )));
    }
    let mut text = String::new();
    file.take(MAX_RESULT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_RESULT_BYTES {
        return Err(Error::usage(format!(
            "{} is larger than {} MiB, more than any file bench writes or reads",
            path.display(),
            MAX_RESULT_BYTES >> 20
        )));
    }
    Ok(text)
}

/// How one benchmark fared under `--probe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStatus {
    Ok,
    Unsupported,
    /// This process lacks a privilege the benchmark needs.
    Permission,
    Error,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProbeOutcome {
    pub name: &'static str,
    pub status: ProbeStatus,
    /// Why, unless `ok`; with `ok`, what the run will differ in from the
    /// kernel runner's (the fallback trigger it takes), if anything.
    pub reason: Option<String>,
}

/// `--probe --json`: the outcomes with what they were found on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeFile {
    pub schema: &'static str,
    pub tool: Tool,
    pub kernel_release: String,
    /// Interrupted before every benchmark was tried.
    pub partial: bool,
    pub benchmarks: Vec<ProbeOutcome>,
}

/// Names the `--probe --json` format; bumped when a field changes meaning or
/// goes away.
pub const PROBE_SCHEMA: &str = "bench-probe/1";

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
