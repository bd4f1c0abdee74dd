//! One invocation's runs in three steps: plan (check everything the command
//! line decides, before anything runs), execute (set up, run and report each
//! run, round by round), publish (run statistics, tables, exports, the verdict
//! of an interrupt). Data flows one way: configuration → set-up → the runner →
//! statistics → reports.
//!
//! A round runs every benchmark at every sweep point once; `--runs N` is N
//! rounds. Within a round the order is rotated by one each time, so that no
//! configuration always goes first (on these machines the first of two
//! back-to-back runs tends to be the faster).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{OutputTarget, Outputs, ProfileRequest, Repetition, RunConfig, RunRequest};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::noise::NoiseMeter;
use crate::profile::{self, Breakdown, Profiler};
use crate::report::console::Console;
use crate::report::csv::Csv;
use crate::report::json::Json;
use crate::report::plot::Svg;
use crate::report::profile as profile_report;
use crate::report::reporter::Reporter;
use crate::report::text::{self, TableRow};
use crate::report::{output, Exporter};
use crate::results::{
    self, Context, Options, PrecisionRecord, ResultFile, RunLevel, RunRecord, SweepInfo, Tool,
};
use crate::runner::affinity::{self, Placement};
use crate::runner::{self, Phase};
use crate::stats::{self, Change, RunStats, Verdict};
use crate::sweep;

/// The noise floor of the closing table's verdicts, as `bench compare`'s default.
const TABLE_NOISE_PCT: f64 = 2.0;
/// `--precision` judges the interval from this many runs on.
const PRECISION_MIN_RUNS: u32 = 3;

pub fn run(request: &RunRequest) -> Result<()> {
    bpf::init_logging(request.verbose);
    let plan = plan(request)?;
    let mut console = Console::new(request.outputs.stdout_taken());
    let execution = execute(&plan, request, &mut console);
    publish(request, &plan, execution, &mut console)
}

/// Everything decided before the first set-up.
struct Plan {
    benches: Vec<BenchPlan>,
    context: Context,
}

struct BenchPlan {
    bench: &'static dyn Benchmark,
    reporter: Reporter,
    base: RunConfig,
    points: Vec<Point>,
}

/// One configuration to run: the swept value (if any), its configuration and
/// CPUs.
struct Point {
    value: Option<u64>,
    config: RunConfig,
    placement: Placement,
}

/// What the runs gave: per benchmark, per point, the records in run order;
/// and why they stopped, if early.
struct Execution {
    records: Vec<Vec<Vec<RunRecord>>>,
    rounds: u32,
    failure: Option<Error>,
    /// The signal and where it found the run it stopped.
    interrupted: Option<(i32, Phase)>,
    precision: Option<PrecisionRecord>,
}

/// Checks every benchmark's and point's configuration and CPUs, where the
/// outputs go, and the privileges, so that a mistake is found before anything
/// runs.
fn plan(request: &RunRequest) -> Result<Plan> {
    let online = affinity::online_cpus()?;
    let mut plans = Vec::with_capacity(request.benches.len());
    for wanted in &request.benches {
        let bench = benches::find(wanted.bench)
            .ok_or_else(|| Error::usage(format!("unknown benchmark '{}'", wanted.bench)))?;
        bench.check_global_options(&wanted.config)?;
        let configs: Vec<(Option<u64>, RunConfig)> = match &request.sweep {
            None => vec![(None, wanted.config.clone())],
            Some(spec) => spec
                .values
                .iter()
                .map(|&v| Some(v))
                .zip(sweep::points(spec, bench, &wanted.config)?)
                .collect(),
        };
        let points = configs
            .into_iter()
            .map(|(value, config)| {
                let placement = affinity::place(
                    &config.affinity,
                    config.producers,
                    config.consumers,
                    &online,
                )?;
                Ok(Point {
                    value,
                    config,
                    placement,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        plans.push(BenchPlan {
            bench,
            reporter: Reporter::new(bench),
            base: wanted.config.clone(),
            points,
        });
    }
    for plan in &plans {
        for (flag, path) in output_files(&request.outputs, plan.bench.name()) {
            output::check_writable(flag, &path)?;
        }
    }
    for plan in &plans {
        if plan.bench.needs_bpf() {
            bpf::check_privileges(plan.bench.name(), plan.bench.needs())?;
        }
    }
    if let Some(profile) = &request.profile {
        check_profile(profile)?;
    }
    let threads = plans
        .iter()
        .flat_map(|b| &b.points)
        .map(|p| p.config.producers + p.config.consumers)
        .max()
        .unwrap_or(0);
    if threads > online.len() {
        eprintln!("{}", text::oversubscribed_warning(threads, online.len()));
    }
    Ok(Plan {
        benches: plans,
        context: Context::gather(&online),
    })
}

/// The files the outputs name for `bench`'s result: the path given, or in a
/// directory given (several benchmarks) one file per benchmark.
fn output_files(outputs: &Outputs, bench: &str) -> Vec<(&'static str, PathBuf)> {
    outputs
        .files()
        .into_iter()
        .map(|(flag, path)| (flag, per_benchmark(path, bench, flag)))
        .collect()
}

/// `DIR/NAME.json` for a directory, the path itself otherwise.
fn per_benchmark(path: &Path, bench: &str, flag: &str) -> PathBuf {
    if !path.is_dir() {
        return path.to_path_buf();
    }
    let extension = match flag {
        "--csv" => "csv",
        "--plot" => "svg",
        _ => "json",
    };
    path.join(format!("{bench}.{extension}"))
}

/// `--profile`: the privileges it needs, a rate the kernel allows, and its
/// directory (created if missing).
fn check_profile(profile: &ProfileRequest) -> Result<()> {
    // A BPF program on a cpu-clock perf event: CAP_BPF and CAP_PERFMON.
    bpf::check_privileges("--profile", bpf::Needs::Link)?;
    if let Some(max) = profile::max_sample_rate().filter(|&max| profile.freq_hz > max) {
        return Err(Error::usage(format!(
            "--profile-freq {} is above this kernel's limit of {max} samples per second \
             (kernel.perf_event_max_sample_rate)",
            profile.freq_hz
        )));
    }
    if let Some(dir) = &profile.dir {
        if dir.exists() && !dir.is_dir() {
            return Err(Error::usage(format!(
                "--profile={} is not a directory",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::usage(format!(
                "--profile={}: cannot create it: {e}",
                dir.display()
            ))
        })?;
    }
    Ok(())
}

fn execute(plan: &Plan, request: &RunRequest, console: &mut Console) -> Execution {
    let repetition = &request.repetition;
    let mut execution = Execution {
        records: plan
            .benches
            .iter()
            .map(|b| b.points.iter().map(|_| Vec::new()).collect())
            .collect(),
        rounds: 0,
        failure: None,
        interrupted: None,
        precision: None,
    };
    let cells: Vec<(usize, usize)> = plan
        .benches
        .iter()
        .enumerate()
        .flat_map(|(b, bench)| (0..bench.points.len()).map(move |p| (b, p)))
        .collect();
    let several = plan.benches.len() > 1;
    let started = Instant::now();
    let rounds = match repetition.precision {
        Some(_) => repetition.max_runs,
        None => repetition.runs,
    };
    'rounds: for round in 0..rounds {
        let mut order = cells.clone();
        order.rotate_left(round as usize % cells.len().max(1));
        for (b, p) in order {
            let bench = &plan.benches[b];
            let point = &bench.points[p];
            if let Some(signal) = interrupt::received() {
                execution.interrupted = Some((signal, Phase::Between));
                break 'rounds;
            }
            let header = text::run_header(
                several.then(|| bench.bench.name()),
                point
                    .value
                    .zip(request.sweep.as_ref().map(|s| s.param.name())),
                repetition
                    .is_repeated()
                    .then_some((round + 1, runs_label(repetition))),
            );
            if let Some(header) = header {
                // Not chatter: it says which run the lines below belong to.
                console.line(&header);
            }
            let run = repetition.is_repeated().then_some(round + 1);
            let profiling = request.profile.as_ref().map(|profile| Profiling {
                request: profile,
                name: profile_name(
                    bench.bench.name(),
                    point
                        .value
                        .zip(request.sweep.as_ref().map(|s| s.param.name())),
                    run,
                ),
            });
            match one_run(bench, point, run, console, request.quiet, profiling) {
                Ok((mut record, phase)) => {
                    record.sweep_value = point.value;
                    record.repetition = run;
                    // Where the user asked for statistics over runs, say
                    // which runs the machine disturbed; a single run keeps
                    // its output as it always was (the JSON has the figures).
                    if let (Some(noise), true) = (&record.noise, repetition.is_repeated()) {
                        for warning in text::noise_warnings(noise) {
                            console.warn(&warning);
                        }
                    }
                    execution.records[b][p].push(record);
                    if let (Some(phase), Some(signal)) = (phase, interrupt::received()) {
                        execution.interrupted = Some((signal, phase));
                        break 'rounds;
                    }
                }
                Err(err) => {
                    let err = match (several, err) {
                        (true, Error::Unsupported(why)) => {
                            Error::Unsupported(format!("{}: {why}", bench.bench.name()))
                        }
                        (_, err) => err,
                    };
                    execution.failure = Some(err);
                    break 'rounds;
                }
            }
        }
        execution.rounds = round + 1;
        if let Some(target) = repetition.precision {
            let widest = widest_interval(&plan.benches, &execution.records);
            let stopped_by =
                if execution.rounds >= PRECISION_MIN_RUNS && widest.is_some_and(|w| w <= target) {
                    Some("target")
                } else if execution.rounds >= repetition.max_runs {
                    Some("max-runs")
                } else if started.elapsed().as_secs() >= repetition.max_secs {
                    Some("max-time")
                } else {
                    None
                };
            if let Some(stopped_by) = stopped_by {
                execution.precision = Some(PrecisionRecord {
                    target_pct: target,
                    reached: stopped_by == "target",
                    stopped_by: stopped_by.to_string(),
                    runs: execution.rounds,
                });
                break;
            }
        }
    }
    if let (Some(target), None) = (repetition.precision, &execution.precision) {
        execution.precision = Some(PrecisionRecord {
            target_pct: target,
            reached: false,
            stopped_by: "interrupt".to_string(),
            runs: execution.rounds,
        });
    }
    execution
}

/// `of 5`, or `until ±3 %` for `--precision`.
fn runs_label(repetition: &Repetition) -> String {
    match repetition.precision {
        Some(target) => format!("until \u{00b1}{target} % or {} runs", repetition.max_runs),
        None => format!("of {}", repetition.runs),
    }
}

/// The widest 95 % interval, in % of its mean, over every configuration;
/// `None` while one has no interval yet.
fn widest_interval(benches: &[BenchPlan], records: &[Vec<Vec<RunRecord>>]) -> Option<f64> {
    let mut widest: f64 = 0.0;
    for (bench, points) in benches.iter().zip(records) {
        for runs in points {
            let stats = run_level_headline(&bench.reporter, runs)?;
            widest = widest.max(stats.ci_percent()?);
        }
    }
    Some(widest)
}

/// The headline rate's statistics over `runs`' means.
fn run_level_headline(reporter: &Reporter, runs: &[RunRecord]) -> Option<RunStats> {
    let means: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(reporter.headline(r.summary.as_ref()?).mean))
        .collect();
    stats::run_stats(&means)
}

fn publish(
    request: &RunRequest,
    plan: &Plan,
    execution: Execution,
    console: &mut Console,
) -> Result<()> {
    let Execution {
        records,
        rounds,
        failure,
        interrupted,
        precision,
    } = execution;
    // A failure part-way keeps the runs already measured.
    if records.iter().flatten().all(|runs| runs.is_empty()) {
        if let Some(err) = failure {
            return Err(err);
        }
    }
    let repeated = request.repetition.is_repeated();
    let partial = interrupted.is_some() || failure.is_some();
    let several = plan.benches.len() > 1;
    let mut results = Vec::with_capacity(plan.benches.len());
    let mut table = Vec::new();
    for (bench, points) in plan.benches.iter().zip(records) {
        let mut run_stats = Vec::new();
        for (point, runs) in bench.points.iter().zip(&points) {
            if !repeated {
                continue;
            }
            let summaries: Vec<stats::Summary> = runs.iter().filter_map(|r| r.summary).collect();
            let (Some(headline), Some(summary)) = (
                run_level_headline(&bench.reporter, runs),
                stats::summarize_runs(&summaries, point.config.producers),
            ) else {
                continue;
            };
            run_stats.push(RunLevel {
                sweep_value: point.value,
                headline,
                summary,
            });
        }
        if let Some(spec) = &request.sweep {
            let rows: Vec<(u64, usize, stats::MeanSd)> = bench
                .points
                .iter()
                .zip(&points)
                .filter_map(|(point, runs)| {
                    let rate = match run_stats.iter().find(|l| l.sweep_value == point.value) {
                        Some(level) => stats::MeanSd {
                            mean: level.headline.mean,
                            sd: level.headline.sd,
                        },
                        None => bench.reporter.headline(runs.first()?.summary.as_ref()?),
                    };
                    Some((point.value?, point.config.producers, rate))
                })
                .collect();
            for line in
                bench
                    .reporter
                    .sweep_table(spec.param.name(), &rows, sweep::is_producers(spec))
            {
                console.line(&line);
            }
        }
        if repeated && request.sweep.is_none() {
            if let (Some(level), Some(point)) = (run_stats.first(), bench.points.first()) {
                let runs = &points[0];
                if several {
                    table.push((bench, runs_means(&bench.reporter, runs), level.headline));
                } else {
                    console.line(&text::runs_line(
                        &level.headline,
                        bench.reporter.counted(),
                        precision.as_ref(),
                    ));
                    console.line(
                        &bench
                            .reporter
                            .summary(&level.summary, point.config.producers),
                    );
                }
            }
        }
        results.push(ResultFile {
            schema: results::SCHEMA.to_string(),
            tool: Tool::this(),
            context: plan.context.clone(),
            benchmark: bench.bench.name().to_string(),
            options: Options::from_config(&bench.base),
            sweep: request.sweep.as_ref().map(|s| SweepInfo {
                param: s.param.name().to_string(),
                values: s.values.clone(),
            }),
            partial,
            runs: points.into_iter().flatten().collect(),
            run_stats,
            precision: precision.clone(),
        });
    }
    if several {
        let rows = comparison_rows(&table);
        let lines = if request.markdown {
            text::interleaved_markdown(&rows)
        } else {
            text::interleaved_table(&rows, rounds, precision.as_ref())
        };
        for line in lines {
            console.line(&line);
        }
    }
    export(&request.outputs, plan, &results)?;
    match (failure, interrupted) {
        (Some(err), _) => Err(err),
        (None, Some((signal, phase))) => Err(Error::Interrupted {
            message: text::interrupted(
                interrupt::signal_name(signal),
                phase,
                results.iter().map(|r| r.runs.len()).sum(),
                plan.benches.iter().map(|b| b.points.len()).sum::<usize>()
                    * match request.repetition.precision {
                        Some(_) => request.repetition.max_runs,
                        None => request.repetition.runs,
                    }
                    .max(1) as usize,
                if request.repetition.is_repeated() || several {
                    "run"
                } else {
                    "sweep point"
                },
            ),
            code: interrupt::exit_code(signal),
        }),
        (None, None) => Ok(()),
    }
}

/// Each run's mean headline rate, in run order (`None` for a run that
/// measured nothing).
fn runs_means(reporter: &Reporter, runs: &[RunRecord]) -> Vec<Option<f64>> {
    runs.iter()
        .map(|r| Some(reporter.headline(r.summary.as_ref()?).mean))
        .collect()
}

/// The closing table of interleaved benchmarks: each one's rate and, for all
/// but the first, its change from the first over the rounds they shared.
fn comparison_rows(table: &[(&BenchPlan, Vec<Option<f64>>, RunStats)]) -> Vec<TableRow> {
    let Some((_, first_means, _)) = table.first() else {
        return Vec::new();
    };
    table
        .iter()
        .enumerate()
        .map(|(i, (bench, means, stats))| {
            let change: Option<Change> = (i > 0)
                .then(|| {
                    let (old, new): (Vec<f64>, Vec<f64>) = first_means
                        .iter()
                        .zip(means)
                        .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
                        .unzip();
                    stats::paired_change(&old, &new)
                })
                .flatten();
            TableRow {
                bench: bench.bench.name(),
                unit: bench.reporter.counted(),
                stats: *stats,
                verdict: change.map(|c| Verdict::of(&c, TABLE_NOISE_PCT)),
                change,
            }
        })
        .collect()
}

/// Writes the requested outputs: one result each, or one per benchmark in a
/// directory.
fn export(outputs: &Outputs, plan: &Plan, results: &[ResultFile]) -> Result<()> {
    let target = |target: &OutputTarget, bench: &str, flag: &str| match target {
        OutputTarget::File(path) => OutputTarget::File(per_benchmark(path, bench, flag)),
        OutputTarget::Stdout => OutputTarget::Stdout,
    };
    for (bench, result) in plan.benches.iter().zip(results) {
        let name = bench.bench.name();
        if let Some(csv) = &outputs.csv {
            Csv.export(result, &target(csv, name, "--csv"))?;
        }
        if let Some(json) = &outputs.json {
            Json.export(result, &target(json, name, "--json"))?;
        }
        if let Some(path) = &outputs.plot {
            Svg {
                reporter: bench.reporter,
            }
            .export(result, &OutputTarget::File(path.clone()))?;
        }
    }
    Ok(())
}

/// What `--profile` asks of one run, and the name of its files.
struct Profiling<'a> {
    request: &'a ProfileRequest,
    name: String,
}

/// A run's profile files are named by the benchmark, the sweep point and the
/// run: `trig-uprobe-nop`, `trig-uprobe-nop-producers=2-run3`.
fn profile_name(bench: &str, point: Option<(u64, &str)>, run: Option<u32>) -> String {
    let mut name = bench.to_string();
    if let Some((value, param)) = point {
        name.push_str(&format!("-{param}={value}"));
    }
    if let Some(run) = run {
        name.push_str(&format!("-run{run}"));
    }
    name
}

/// Sets up, runs and reports one configuration (one of several independent
/// runs when `run` numbers it); the phase an interrupt hit, if one did.
fn one_run(
    bench: &BenchPlan,
    point: &Point,
    run: Option<u32>,
    console: &mut Console,
    quiet: bool,
    profiling: Option<Profiling>,
) -> Result<(RunRecord, Option<Phase>)> {
    let Point {
        config, placement, ..
    } = point;
    let reporter = &bench.reporter;
    // A fixed-work run prints its report and nothing else, like perf bench.
    let chatter = !quiet && config.repeat.is_none();
    if chatter {
        console.line(&reporter.setting_up());
    }
    let workload = bench.bench.setup(config)?;
    let mut record = RunRecord {
        sweep_value: None,
        producers: config.producers,
        params: results::params_record(config),
        placement: placement.into(),
        partial: false,
        samples: Vec::new(),
        summary: None,
        fixed: None,
        repetition: None,
        noise: None,
        probe_path: None,
        profile: None,
    };
    if interrupt::received().is_some() {
        record.partial = true;
        return Ok((record, Some(Phase::SetUp)));
    }
    if chatter {
        console.line(&reporter.started());
    }
    if let Some(repeat) = config.repeat {
        let fixed = runner::run_fixed(workload.as_ref(), placement, repeat)?;
        record.probe_path = probe_path(workload.as_ref(), reporter, console, false);
        drop(workload);
        let mut phase = None;
        if interrupt::received().is_some() {
            record.partial = true;
            console.line(&reporter.partial_fixed(fixed.calls, repeat));
            phase = Some(Phase::Fixed {
                done: fixed.calls,
                of: repeat,
            });
        }
        for line in reporter.fixed(&fixed, config) {
            console.line(&line);
        }
        record.fixed = Some(fixed);
        return Ok((record, phase));
    }

    // Attached before the run, switched on when the measured seconds start
    // (at the last warm-up tick) and off when they end.
    let mut profiler = match &profiling {
        Some(profiling) => Some(Profiler::attach(profiling.request.freq_hz)?),
        None => None,
    };
    if config.warmup_secs == 0 {
        if let Some(profiler) = profiler.as_mut() {
            profiler.start();
        }
    }
    let last_tick = config.warmup_secs + config.duration_secs;
    console.start_bar(config.warmup_secs, config.duration_secs);
    let mut noise = None;
    let samples = runner::run_timed(
        workload.as_ref(),
        placement,
        config.warmup_secs,
        config.duration_secs,
        &mut |sample| {
            if let Some(profiler) = profiler.as_mut() {
                if sample.iteration + 1 == config.warmup_secs {
                    profiler.start();
                } else if sample.iteration + 1 == last_tick {
                    profiler.stop();
                }
            }
            // The bar first, so that it redraws in its new state under the line.
            console.advance(sample);
            console.line(&reporter.tick(sample, config.producers));
            // Noise is read over the measured seconds only.
            if !sample.warmup {
                noise
                    .get_or_insert_with(|| NoiseMeter::start(config.producers + config.consumers))
                    .tick();
            } else if sample.iteration + 1 == config.warmup_secs {
                noise = Some(NoiseMeter::start(config.producers + config.consumers));
            }
        },
    );
    console.finish_bar();
    let samples = samples?;
    record.probe_path = probe_path(workload.as_ref(), reporter, console, !quiet);
    // Named while the benchmark's programs are loaded: kallsyms names them.
    let profile = profiler.map(Profiler::collect).transpose()?;
    drop(workload);
    record.noise = noise.map(NoiseMeter::finish);
    record.partial = interrupt::received().is_some();
    let summary = stats::summarize(&samples, config.producers);
    let measured = summary.as_ref().map_or(0, |s| s.samples);
    let phase = record
        .partial
        .then_some(if samples.len() < config.warmup_secs as usize {
            Phase::WarmUp
        } else {
            Phase::Measuring {
                measured,
                of: config.duration_secs,
            }
        });
    if let (Some(summary), true) = (&summary, record.partial) {
        console.line(&reporter.partial_timed(summary.samples, config.duration_secs));
    }
    if let (Some(profile), Some(profiling)) = (&profile, &profiling) {
        // A run stopped before its measured seconds has nothing to show.
        if profile.seconds > 0.0 {
            let rate = summary.as_ref().map(|s| reporter.headline(s).mean);
            let mut breakdown = Breakdown::of(profile, config.producers, rate);
            if let Some(dir) = &profiling.request.dir {
                let title = format!("{}: where the measured seconds went", profiling.name);
                profile_report::write_files(dir, &profiling.name, &title, profile, &mut breakdown)?;
            }
            for line in profile_report::lines(&breakdown) {
                console.line(&line);
            }
            record.profile = Some(breakdown);
        }
    }
    match &summary {
        Some(summary) => {
            console.line(&match run {
                Some(run) => reporter.run_line(run, summary, config.producers),
                None => reporter.summary(summary, config.producers),
            });
        }
        None if record.partial => {}
        None => return Err(Error::runtime("no iteration was measured")),
    }
    record.samples = samples;
    record.summary = summary;
    Ok((record, phase))
}

/// Finds how the kernel handled the probe, after it has been hit (warm-up and
/// measurement done, still attached), and says it when `say`.
fn probe_path(
    workload: &dyn runner::Workload,
    reporter: &Reporter,
    console: &Console,
    say: bool,
) -> Option<String> {
    match workload.probe_path()? {
        Ok(path) => {
            if say {
                console.line(&reporter.probe_path(path));
            }
            Some(path.name().to_string())
        }
        Err(err) => {
            console.warn(&reporter.probe_path_unknown(&err.to_string()));
            None
        }
    }
}
