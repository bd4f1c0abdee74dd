//! One run: set-up, the run, tear-down, with the console, the noise meter,
//! the probe path and (for `--profile`) the profiler observing its phases;
//! then its lines and its record.

use std::time::Instant;

use super::plan::{BenchPlan, Point};
use crate::config::{Body, ProfileRequest, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{Frame, View};
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
use crate::runner::{FixedRun, Prepared, StoppedAt};
use crate::stats::{self, Sample};

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
    let mut watching = Observers::new(config, profiling.as_ref())?;
    let mut progress = run_console(console, bench, config, chatter).trigger_note(!quiet);
    let setup = || bench.bench.setup(config);
    let kinds = bench.bench.ticked_kinds();
    let ran = phases::run(
        setup,
        placement,
        work,
        &kinds,
        &mut watching.list(&mut progress),
    )?;
    let Observers {
        profiler,
        latency,
        noise,
        churn,
    } = watching;
    let mut facts = ran.facts;
    let probed = facts.take_probed();
    let (churned, finals) = (facts.churn, facts.finals);
    record.keep_facts(ran.trigger.as_ref(), &finals);
    let mut stacks = None;
    let phase = match (ran.measured, work) {
        (RunMeasurement::Timed(samples), _) => {
            record.probe_path = probe_path_said(probed, reporter, console, !quiet);
            let churn = churn.report(churned, console, !quiet);
            let profile = profiler.map(ProfileObserver::finish).transpose()?.flatten();
            record.noise = noise.finish();
            let profiled = profile.as_ref().zip(profiling.as_ref());
            record.outcome = Outcome::Timed {
                summary: stats::summarize(&samples, &rates(bench)),
                samples,
                churn,
            };
            record.evaluate(bench.bench.figures(), bench.bench.channels());
            let rate = per_operation_ns(&record, bench);
            latency_outcome(&mut record, latency, rate, reporter, console);
            let phase = timed_outcome(&mut record, bench, config, run, console, profiled)?;
            stacks = kept_stacks(&record, profile, profiling);
            phase
        }
        (RunMeasurement::Fixed(fixed), RunLength::Fixed { repeat }) => {
            record.probe_path = probe_path_said(probed, reporter, console, false);
            let churn = churn.report(churned, console, false);
            let rate = fixed.ns_per_op(config.producers);
            latency_outcome(&mut record, latency, rate, reporter, console);
            record.outcome = Outcome::Fixed { run: fixed, churn };
            record.evaluate(bench.bench.figures(), bench.bench.channels());
            fixed_outcome(&mut record, repeat, config, reporter, console)
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

/// The observers a run of producers has besides its console.
struct Observers {
    profiler: Option<ProfileObserver>,
    latency: Option<LatencyObserver>,
    noise: NoiseObserver,
    churn: ChurnObserver,
}

impl Observers {
    fn new(config: &RunConfig, profiling: Option<&Profiling>) -> Result<Observers> {
        Ok(Observers {
            profiler: profiling
                .map(|p| ProfileObserver::attach(p.request.freq_hz))
                .transpose()?,
            latency: latency_observer(config),
            noise: NoiseObserver::new(config.producers + config.consumers),
            churn: ChurnObserver::default(),
        })
    }

    /// The order observers hear each event in: the profiler first, closest
    /// to the measured seconds; the console last. Another observer is one
    /// more entry here.
    fn list<'a>(&'a mut self, console: &'a mut RunConsole) -> Vec<&'a mut dyn RunObserver> {
        let mut observers: Vec<&mut dyn RunObserver> = Vec::new();
        observers.extend(self.profiler.as_mut().map(|p| p as &mut dyn RunObserver));
        observers.extend(self.latency.as_mut().map(|l| l as &mut dyn RunObserver));
        observers.extend([
            &mut self.noise as &mut dyn RunObserver,
            &mut self.churn,
            console,
        ]);
        observers
    }
}

/// The console as the run's observer, with the notes its set-up line needs.
fn run_console<'a>(
    console: &'a mut Console,
    bench: &BenchPlan,
    config: &'a RunConfig,
    chatter: bool,
) -> RunConsole<'a> {
    RunConsole::new(console, bench.reporter, config, chatter)
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
            tick_ms: config.tick_ms,
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
    let Prepared::Cycles(cycles) = bench.bench.setup(config)?.run else {
        return Err(Error::setup(format!(
            "{} has no attach cycles to run",
            bench.bench.name()
        )));
    };
    let phase = crate::attach::run::one_cycle(cycles.as_ref(), &mut record, console, run)?;
    record.evaluate(bench.bench.figures(), bench.bench.channels());
    Ok(Ran::of(record, phase))
}

/// Which channels read each tick are counts, divided by each second's
/// length in the summary (the others are gauges, summed up as read).
fn rates(bench: &BenchPlan) -> Vec<bool> {
    let kinds = bench.bench.ticked_kinds();
    kinds.iter().map(|k| k.is_differenced()).collect()
}

/// One producer's time per operation, from the run's headline rate (for
/// `--latency` to hold its histogram against); `None` where the headline
/// is not a rate or nothing was done.
fn per_operation_ns(record: &RunRecord, bench: &BenchPlan) -> Option<f64> {
    let headline = bench.bench.headline();
    if headline.show != crate::figures::Show::Rate {
        return None;
    }
    let rate = record.figure(headline.name)?;
    (rate > 0.0).then(|| record.producers.max(1) as f64 * 1e9 / rate)
}

/// A timed run's profile and lines, its record's samples already in; the
/// phase an interrupt hit, if one did.
fn timed_outcome(
    record: &mut RunRecord,
    bench: &BenchPlan,
    config: &RunConfig,
    run: Option<u32>,
    console: &Console,
    profiled: Option<(&Profile, &Profiling)>,
) -> Result<Option<StoppedAt>> {
    let reporter = &bench.reporter;
    record.partial = interrupt::received().is_some();
    let samples = record.samples();
    let measured = record.summary().map_or(0, |s| s.over.count());
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
    if record.summary().is_some() && record.partial {
        console.line(&reporter.partial_timed(measured, config.duration_secs));
    }
    if let Some((profile, profiling)) = profiled {
        let rates = headline_rates(record, bench);
        record.profile = profile_outcome(profile, profiling, config, rates, console)?;
    }
    match record.summary() {
        Some(_) => {
            for line in reporter.run_lines(record, run, &config.params) {
                console.line(&line);
            }
        }
        None if record.partial => {}
        None => return Err(Error::runtime("no iteration was measured")),
    }
    Ok(phase)
}

/// The headline's rate over the measured seconds, which the profiler
/// sampled, and over the warm-up, which it did not.
fn headline_rates(record: &RunRecord, bench: &BenchPlan) -> (Option<f64>, Option<f64>) {
    let crate::figures::Value::PerSecond(sec) = bench.bench.headline().value else {
        return (None, None);
    };
    let ticked = bench.bench.ticked_names();
    let warm: Vec<Frame> = record
        .samples()
        .iter()
        .filter(|s| s.warmup)
        .map(|s| Frame {
            values: &s.values,
            elapsed_ns: s.elapsed_ns,
        })
        .collect();
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let warm_view = View {
        producers: record.producers,
        frames: warm,
        ..View::new(&ticked)
    };
    let measured = sec.each(&record.view(&ticked));
    (mean(measured), mean(sec.each(&warm_view)))
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

/// A fixed run's lines; the phase an interrupt hit, if one did.
fn fixed_outcome(
    record: &mut RunRecord,
    repeat: u64,
    config: &RunConfig,
    reporter: &Reporter,
    console: &Console,
) -> Option<StoppedAt> {
    let calls = record.fixed().map_or(0, |f| f.calls);
    let mut phase = None;
    if interrupt::received().is_some() {
        record.partial = true;
        console.line(&reporter.partial_fixed(calls, repeat));
        phase = Some(StoppedAt::Fixed {
            done: calls,
            of: repeat,
        });
    }
    for line in reporter.fixed(record, config) {
        console.line(&line);
    }
    phase
}

/// Attach churn beside the producers: the measured seconds' bounds; its
/// cycles come with the workload's facts.
#[derive(Default)]
struct ChurnObserver {
    start: Option<Instant>,
    end: Option<Instant>,
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
}

impl ChurnObserver {
    /// The churn of the measured seconds for the record; says it when `say`.
    fn report(
        self,
        cycles: Option<(usize, Vec<ChurnCycle>)>,
        console: &Console,
        say: bool,
    ) -> Option<ChurnRecord> {
        let record = self.kept(cycles)?;
        if say {
            console.line(&attach_lines::churn_line(&record));
        }
        Some(record)
    }

    /// The churn of the measured seconds; `None` without churners or
    /// without a measured second.
    fn kept(self, cycles: Option<(usize, Vec<ChurnCycle>)>) -> Option<ChurnRecord> {
        let (threads, cycles) = cycles?;
        Some(ChurnRecord::over(threads, &cycles, self.start?, self.end?))
    }
}

/// How the kernel handled the probe, found at tear-down (after the probe
/// was hit, while it was still attached): the path for the record, said
/// when `say`; a warning when it could not be found.
fn probe_path_said(
    found: Option<crate::runner::Probed>,
    reporter: &Reporter,
    console: &Console,
    say: bool,
) -> Option<ProbePath> {
    let (found, red_zone) = found?;
    if let Some(Err(err)) = &red_zone {
        console.warn(&reporter.red_zone_unknown(&err.to_string()));
    }
    match found {
        Ok(path) => {
            if say {
                let red_zone = red_zone.and_then(|found| found.ok());
                console.line(&reporter.probe_path(path, red_zone.as_ref()));
            }
            Some(path)
        }
        Err(err) => {
            console.warn(&reporter.probe_path_unknown(&err.to_string()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(warmup: bool) -> Sample {
        Sample::on_time(0, &[1], warmup)
    }

    fn churn_after(samples: &[Sample]) -> Option<ChurnRecord> {
        let mut churn = ChurnObserver::default();
        churn.measure_started(RunSeconds {
            warmup_secs: 1,
            duration_secs: 5,
            tick_ms: crate::config::SECOND_MS,
        });
        let ended = Instant::now();
        let cycle = ChurnCycle {
            ended,
            attach_ns: 1_000,
            detach_ns: 2_000,
        };
        churn.measure_ended(samples);
        churn.kept(Some((1, vec![cycle])))
    }

    #[test]
    fn churn_stopped_before_a_measured_second_keeps_nothing() {
        assert_eq!(churn_after(&[]), None);
        assert_eq!(churn_after(&[second(true)]), None);
        let kept = churn_after(&[second(true), second(false)]);
        assert_eq!(kept.map(|c| (c.threads, c.cycles)), Some((1, 1)));
    }
}
