//! One run: set-up, the run, tear-down, with the console, the noise meter,
//! the probe path and (for `--profile`) the profiler observing its phases;
//! then its lines and its record.

use std::time::Instant;

use super::plan::{BenchPlan, Point};
use crate::config::{Body, ProfileRequest, RunConfig};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::latency::observer::LatencyObserver;
use crate::noise::NoiseObserver;
use crate::probe_path::ProbePath;
use crate::profile::{Breakdown, Profile, ProfileObserver};
use crate::report::attach as attach_lines;
use crate::report::console::{Console, RunConsole};
use crate::report::profile as profile_report;
use crate::report::reporter::Reporter;
use crate::results::cycles::ChurnRecord;
use crate::results::{Outcome, RunRecord};
use crate::runner::cycles::ChurnCycle;
use crate::runner::phases::{self, RunLength, RunMeasurement, RunObserver, RunSeconds};
use crate::runner::{FixedRun, StoppedAt, Workload};
use crate::stats::{self, Sample};
use crate::trigger_path::TriggerPath;

/// What `--profile` asks of one run, and the name of its files.
pub(super) struct Profiling<'a> {
    pub request: &'a ProfileRequest,
    pub name: String,
}

/// One run the rounds ask for: a benchmark at one of its points, numbered
/// when it is one of several independent runs, with or without chatter, and
/// what `--profile` asks of it.
pub(super) struct RunAsk<'a> {
    pub bench: &'a BenchPlan,
    pub point: &'a Point,
    pub run: Option<u32>,
    pub quiet: bool,
    pub profiling: Option<Profiling<'a>>,
}

/// One run done.
pub(super) struct Ran {
    pub record: RunRecord,
    /// With `--profile=DIR`: the sampled stacks its files are drawn from,
    /// with the name of those files.
    pub stacks: Option<(String, Profile)>,
    /// Where an interrupt stopped the run, if one did.
    pub phase: Option<StoppedAt>,
}

impl Ran {
    /// A run without stacks.
    pub fn of(record: RunRecord, phase: Option<StoppedAt>) -> Ran {
        Ran {
            record,
            stacks: None,
            phase,
        }
    }
}

/// Sets up, runs and reports one configuration.
pub(super) fn one_run(ask: RunAsk, console: &mut Console) -> Result<Ran> {
    let RunAsk {
        bench,
        point,
        run,
        quiet,
        profiling,
    } = ask;
    let (config, placement) = (&point.config, &point.placement);
    let reporter = &bench.reporter;
    let mut record = RunRecord::new(config, placement);
    if bench.bench.runs_cycles() {
        return attach_cycle(bench, config, record, run, console, quiet);
    }
    let work = work_of(config);
    // A fixed-work run prints its report and nothing else, like perf bench.
    let chatter = !quiet && config.repeat.is_none();
    let mut profiler = profiling
        .as_ref()
        .map(|p| ProfileObserver::attach(p.request.freq_hz))
        .transpose()?;
    let mut latency = latency_observer(config);
    let mut noise = NoiseObserver::new(config.producers + config.consumers);
    let mut probe = ProbePathObserver::default();
    let mut churn = ChurnObserver::default();
    let mut kept = KeptFigures::default();
    let mut progress = run_console(console, bench, config, chatter).trigger_note(!quiet);
    // The order observers hear each event in: the profiler first, closest to
    // the measured seconds. Another observer is one more entry here.
    let mut observers: Vec<&mut dyn RunObserver> = Vec::new();
    observers.extend(profiler.as_mut().map(|p| p as &mut dyn RunObserver));
    observers.extend(latency.as_mut().map(|l| l as &mut dyn RunObserver));
    observers.extend([
        &mut noise as &mut dyn RunObserver,
        &mut probe,
        &mut churn,
        &mut kept,
        &mut progress,
    ]);
    let setup = || bench.bench.setup(config);
    let measured = phases::run(setup, placement, work, &mut observers)?;
    drop(observers);
    (record.figures, record.trigger) = kept.into_record();
    let mut stacks = None;
    let phase = match (measured, work) {
        (RunMeasurement::Timed(samples), _) => {
            record.probe_path = probe.report(reporter, console, !quiet);
            let churn = churn.report(console, !quiet);
            let profile = profiler.map(ProfileObserver::finish).transpose()?.flatten();
            record.noise = noise.finish();
            let profiled = profile.as_ref().zip(profiling.as_ref());
            let rate = stats::summarize(&samples, config.producers).and_then(|s| s.latency_ns);
            latency_outcome(&mut record, latency, rate, reporter, console);
            let parts = (samples, churn);
            let phase = timed_outcome(&mut record, parts, bench, config, run, console, profiled)?;
            stacks = kept_stacks(&record, profile, profiling);
            phase
        }
        (RunMeasurement::Fixed(fixed), RunLength::Fixed { repeat }) => {
            record.probe_path = probe.report(reporter, console, false);
            let churn = churn.report(console, false);
            let rate = fixed.ns_per_op(config.producers);
            latency_outcome(&mut record, latency, rate, reporter, console);
            let parts = (fixed, churn);
            fixed_outcome(&mut record, parts, repeat, config, reporter, console)
        }
        _ => {
            record.partial = true;
            Some(StoppedAt::SetUp)
        }
    };
    Ok(Ran {
        stacks,
        ..Ran::of(record, phase)
    })
}

/// The console as the run's observer, with the notes its set-up line needs.
fn run_console<'a>(
    console: &'a mut Console,
    bench: &BenchPlan,
    config: &RunConfig,
    chatter: bool,
) -> RunConsole<'a> {
    RunConsole::new(console, bench.reporter, config.producers, chatter)
        .user_stack_note(config.body == Body::Stack && bench.bench.takes_user_stack())
        .printk_note(config.body == Body::Printk)
}

/// The profile files' exporter draws them from the stacks: kept, with the
/// files' name, when they are asked for.
fn kept_stacks(
    record: &RunRecord,
    profile: Option<Profile>,
    profiling: Option<Profiling>,
) -> Option<(String, Profile)> {
    let profiling = profiling.filter(|p| p.request.dir.is_some())?;
    record.profile.as_ref()?;
    Some((profiling.name, profile?))
}

/// What the runner drives: a fixed number of operations, or seconds.
fn work_of(config: &RunConfig) -> RunLength {
    match config.repeat {
        Some(repeat) => RunLength::Fixed { repeat },
        None => RunLength::Timed(RunSeconds {
            warmup_secs: config.warmup_secs,
            duration_secs: config.duration_secs,
        }),
    }
}

/// An attach benchmark's run: set up, then one attach cycle instead of
/// producers (src/attach/run.rs), its progress and lines on the console.
fn attach_cycle(
    bench: &BenchPlan,
    config: &RunConfig,
    mut record: RunRecord,
    run: Option<u32>,
    console: &mut Console,
    quiet: bool,
) -> Result<Ran> {
    if !quiet {
        console.line(&bench.reporter.setting_up());
    }
    let workload = bench.bench.setup(config)?;
    let cycles = workload.cycles().ok_or_else(|| {
        Error::setup(format!(
            "{} has no attach cycles to run",
            bench.bench.name()
        ))
    })?;
    let phase = crate::attach::run::one_cycle(cycles, &mut record, console, run)?;
    Ok(Ran::of(record, phase))
}

/// A timed run's summary, profile and lines, into its record with its
/// samples and churn; the phase an interrupt hit, if one did.
fn timed_outcome(
    record: &mut RunRecord,
    (samples, churn): (Vec<Sample>, Option<ChurnRecord>),
    bench: &BenchPlan,
    config: &RunConfig,
    run: Option<u32>,
    console: &Console,
    profiled: Option<(&Profile, &Profiling)>,
) -> Result<Option<StoppedAt>> {
    let (reporter, headline) = (&bench.reporter, bench.bench.headline());
    record.partial = interrupt::received().is_some();
    let summary = stats::summarize(&samples, config.producers);
    let measured = summary.as_ref().map_or(0, |s| s.over.count());
    let phase = record
        .partial
        .then_some(if samples.len() < config.warmup_secs as usize {
            StoppedAt::WarmUp
        } else {
            StoppedAt::Measuring {
                measured,
                of: config.duration_secs,
            }
        });
    if let (Some(summary), true) = (&summary, record.partial) {
        console.line(&reporter.partial_timed(summary.over.count(), config.duration_secs));
    }
    if let Some((profile, profiling)) = profiled {
        // The measured seconds are sampled; the warm-up is not: its rate is
        // the run's without the sampler.
        let seconds = |warmup: bool| -> Vec<f64> {
            let per_second = headline.per_second.into_iter();
            per_second
                .flat_map(|f| samples.iter().filter(move |s| s.warmup == warmup).map(f))
                .collect()
        };
        let measured = seconds(false);
        let rate = (!measured.is_empty()).then(|| stats::mean_sd(&measured).mean);
        let warm = seconds(true);
        let unsampled = (!warm.is_empty()).then(|| warm.iter().sum::<f64>() / warm.len() as f64);
        record.profile = profile_outcome(profile, profiling, config, (rate, unsampled), console)?;
    }
    match &summary {
        Some(summary) => {
            for line in reporter.per_cpu(&record.figures) {
                console.line(&line);
            }
            console.line(&match run {
                Some(run) => {
                    reporter.run_line_kept(run, summary, config.producers, &record.figures)
                }
                None => reporter.summary_kept(summary, config.producers, &record.figures),
            });
            if let Some(line) = reporter.bpf_timing(&record.figures, config) {
                console.line(&line);
            }
            for line in reporter.after_summary(&record.figures) {
                console.line(&line);
            }
        }
        None if record.partial => {}
        None => return Err(Error::runtime("no iteration was measured")),
    }
    record.outcome = Outcome::Timed {
        samples,
        summary,
        churn,
    };
    Ok(phase)
}

/// `--latency`'s observer: a timed run leaves its warm-up out.
fn latency_observer(config: &RunConfig) -> Option<LatencyObserver> {
    let warmup = config.repeat.is_none().then_some(config.warmup_secs);
    config
        .latency
        .then(|| LatencyObserver::new(config.producers, warmup))
}

/// `--latency`'s record and lines, printed before the run's summary.
fn latency_outcome(
    record: &mut RunRecord,
    latency: Option<LatencyObserver>,
    rate_ns: Option<f64>,
    reporter: &Reporter,
    console: &Console,
) {
    let Some(latency) = latency else { return };
    let kept = latency.finish(rate_ns);
    for line in reporter.latency(&kept) {
        console.line(&line);
    }
    record.latency = Some(kept);
}

/// The profile's breakdown, its files and its lines; `None` for a run stopped
/// before its measured seconds (nothing to show).
fn profile_outcome(
    profile: &Profile,
    profiling: &Profiling,
    config: &RunConfig,
    (rate, unsampled): (Option<f64>, Option<f64>),
    console: &Console,
) -> Result<Option<Breakdown>> {
    if profile.seconds <= 0.0 {
        return Ok(None);
    }
    let mut breakdown = Breakdown::of(profile, config.producers, rate);
    breakdown.warmup_rate = unsampled;
    breakdown.measured_rate = rate;
    // Written with the other outputs, by the profile files' exporter.
    if let Some(dir) = &profiling.request.dir {
        breakdown.files = profile_report::file_names(dir, &profiling.name, profile)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
    }
    for line in profile_report::lines(&breakdown) {
        console.line(&line);
    }
    Ok(Some(breakdown))
}

/// A fixed run's lines, and its record with its churn; the phase an
/// interrupt hit, if one did.
fn fixed_outcome(
    record: &mut RunRecord,
    (fixed, churn): (FixedRun, Option<ChurnRecord>),
    repeat: u64,
    config: &RunConfig,
    reporter: &Reporter,
    console: &Console,
) -> Option<StoppedAt> {
    let mut phase = None;
    if interrupt::received().is_some() {
        record.partial = true;
        console.line(&reporter.partial_fixed(fixed.calls, repeat));
        phase = Some(StoppedAt::Fixed {
            done: fixed.calls,
            of: repeat,
        });
    }
    for line in reporter.fixed(&fixed, config) {
        console.line(&line);
    }
    for line in reporter.per_cpu(&record.figures) {
        console.line(&line);
    }
    for line in reporter.kept_lines(&record.figures) {
        console.line(&line);
    }
    if let Some(line) = reporter.bpf_timing(&record.figures, config) {
        console.line(&line);
    }
    record.outcome = Outcome::Fixed { run: fixed, churn };
    phase
}

/// Attach churn beside the producers: the measured seconds' bounds, and the
/// churners' cycles, asked at tear-down.
#[derive(Default)]
struct ChurnObserver {
    start: Option<Instant>,
    end: Option<Instant>,
    cycles: Option<(usize, Vec<ChurnCycle>)>,
}

impl RunObserver for ChurnObserver {
    fn measure_started(&mut self, _timing: RunSeconds) {
        self.start = Some(Instant::now());
    }
    fn measure_ended(&mut self, samples: &[Sample]) {
        // A run stopped before its first measured second measured no churn
        // either: the summary says nothing was measured, and so does this.
        self.end = samples.iter().any(|s| !s.warmup).then(Instant::now);
    }
    fn fixed_started(&mut self, _repeat: u64) {
        self.start = Some(Instant::now());
    }
    fn fixed_ended(&mut self, _run: &FixedRun) {
        self.end = Some(Instant::now());
    }
    fn tearing_down(&mut self, workload: &dyn Workload) {
        self.cycles = workload.churn();
    }
}

impl ChurnObserver {
    /// The churn of the measured seconds for the record; says it when `say`.
    fn report(self, console: &Console, say: bool) -> Option<ChurnRecord> {
        let record = self.kept()?;
        if say {
            console.line(&attach_lines::churn_line(&record));
        }
        Some(record)
    }

    /// The churn of the measured seconds; `None` without churners or
    /// without a measured second.
    fn kept(self) -> Option<ChurnRecord> {
        let (threads, cycles) = self.cycles?;
        Some(ChurnRecord::over(threads, &cycles, self.start?, self.end?))
    }
}

/// Asks the workload, before it is torn down, for the figures of its own it
/// measured and the trigger its body ran from (the console says that under
/// the set-up line).
#[derive(Default)]
struct KeptFigures(Vec<(&'static str, f64)>, Option<TriggerPath>);

impl RunObserver for KeptFigures {
    fn tearing_down(&mut self, workload: &dyn Workload) {
        self.0 = workload.figures();
        self.1 = workload.trigger().map(|used| used.path);
    }
}

impl KeptFigures {
    /// As the run's record keeps them.
    fn into_record(self) -> (std::collections::BTreeMap<String, f64>, Option<TriggerPath>) {
        let figures = self.0.into_iter().map(|(n, v)| (n.to_string(), v));
        (figures.collect(), self.1)
    }
}

/// How the kernel handled the probe, asked at tear-down: after the probe has
/// been hit (warm-up and measurement done), while it is still attached.
#[derive(Default)]
struct ProbePathObserver {
    found: Option<Result<ProbePath>>,
}

impl RunObserver for ProbePathObserver {
    fn tearing_down(&mut self, workload: &dyn Workload) {
        self.found = workload.probe_path();
    }
}

impl ProbePathObserver {
    /// The path for the record; says it when `say`, warns when it could not
    /// be found.
    fn report(self, reporter: &Reporter, console: &Console, say: bool) -> Option<ProbePath> {
        match self.found? {
            Ok(path) => {
                if say {
                    console.line(&reporter.probe_path(path));
                }
                Some(path)
            }
            Err(err) => {
                console.warn(&reporter.probe_path_unknown(&err.to_string()));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(warmup: bool) -> Sample {
        Sample::on_time(0, 1, 0, warmup)
    }

    fn churn_after(samples: &[Sample]) -> Option<ChurnRecord> {
        let mut churn = ChurnObserver::default();
        churn.measure_started(RunSeconds {
            warmup_secs: 1,
            duration_secs: 5,
        });
        let ended = Instant::now();
        let cycle = ChurnCycle {
            ended,
            attach_ns: 1_000,
            detach_ns: 2_000,
        };
        churn.cycles = Some((1, vec![cycle]));
        churn.measure_ended(samples);
        churn.kept()
    }

    #[test]
    fn churn_stopped_before_a_measured_second_keeps_nothing() {
        assert_eq!(churn_after(&[]), None);
        assert_eq!(churn_after(&[second(true)]), None);
        let kept = churn_after(&[second(true), second(false)]);
        assert_eq!(kept.map(|c| (c.threads, c.cycles)), Some((1, 1)));
    }
}
