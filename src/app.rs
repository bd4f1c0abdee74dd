//! One run, or a sweep of runs, in three steps: plan (check everything the
//! command line decides, before anything runs), execute (set up, run and
//! report each point), publish (the sweep table, the exports, the verdict of
//! an interrupt). Data flows one way: configuration → set-up → the runner →
//! statistics → reports.

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{OutputTarget, Outputs, RunConfig, RunRequest};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::console::Console;
use crate::report::csv::Csv;
use crate::report::json::Json;
use crate::report::plot::Svg;
use crate::report::reporter::Reporter;
use crate::report::{output, text, Exporter};
use crate::results::{self, Context, Options, ResultFile, RunRecord, SweepInfo, Tool};
use crate::runner::affinity::{self, Placement};
use crate::runner::{self, Phase};
use crate::stats;
use crate::sweep;

pub fn run(request: &RunRequest) -> Result<()> {
    bpf::init_logging(request.verbose);
    let plan = plan(request)?;
    let mut console = Console::new(request.outputs.stdout_taken());
    let execution = execute(&plan, &mut console, request.quiet);
    publish(request, &plan, execution, &mut console)
}

/// Everything decided before the first set-up.
struct Plan {
    bench: &'static dyn Benchmark,
    reporter: Reporter,
    points: Vec<Point>,
    /// The swept parameter's name, for a sweep.
    sweep_param: Option<String>,
    context: Context,
}

/// One run to do: the swept value (if any), its configuration and CPUs.
struct Point {
    value: Option<u64>,
    config: RunConfig,
    placement: Placement,
}

/// What the runs gave: the records, and why they stopped early, if they did.
struct Execution {
    runs: Vec<RunRecord>,
    failure: Option<Error>,
    /// The signal and where it found the last run.
    interrupted: Option<(i32, Phase)>,
}

/// Checks every point's configuration and CPUs, where the outputs go, and the
/// privileges, so that a mistake is found before anything runs.
fn plan(request: &RunRequest) -> Result<Plan> {
    let bench = benches::find(request.bench)
        .ok_or_else(|| Error::usage(format!("unknown benchmark '{}'", request.bench)))?;
    let online = affinity::online_cpus()?;
    let configs: Vec<(Option<u64>, RunConfig)> = match &request.sweep {
        None => vec![(None, request.config.clone())],
        Some(spec) => spec
            .values
            .iter()
            .map(|&v| Some(v))
            .zip(sweep::points(spec, bench, &request.config)?)
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
    check_outputs(&request.outputs)?;
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name(), bench.needs())?;
    }
    let threads = points
        .iter()
        .map(|p| p.config.producers + p.config.consumers)
        .max()
        .unwrap_or(0);
    if threads > online.len() {
        eprintln!("{}", text::oversubscribed_warning(threads, online.len()));
    }
    Ok(Plan {
        bench,
        reporter: Reporter::new(bench),
        points,
        sweep_param: request.sweep.as_ref().map(|s| s.param.name().to_string()),
        context: Context::gather(&online),
    })
}

/// Refuses output paths that cannot be written, before anything runs: a run
/// must not be lost to a typo in a file name or a directory it cannot write.
fn check_outputs(outputs: &Outputs) -> Result<()> {
    for (flag, path) in outputs.files() {
        output::check_writable(flag, path)?;
    }
    Ok(())
}

fn execute(plan: &Plan, console: &mut Console, quiet: bool) -> Execution {
    let mut execution = Execution {
        runs: Vec::with_capacity(plan.points.len()),
        failure: None,
        interrupted: None,
    };
    for point in &plan.points {
        if let Some(signal) = interrupt::received() {
            execution.interrupted = Some((signal, Phase::Between));
            break;
        }
        if let (Some(value), Some(param)) = (point.value, plan.sweep_param.as_deref()) {
            // Not chatter: it says which point the lines below belong to.
            console.line(&plan.reporter.sweep_point(param, value));
        }
        match one_run(plan, point, console, quiet) {
            Ok((mut record, phase)) => {
                record.sweep_value = point.value;
                execution.runs.push(record);
                if let (Some(phase), Some(signal)) = (phase, interrupt::received()) {
                    execution.interrupted = Some((signal, phase));
                    break;
                }
            }
            Err(err) => {
                execution.failure = Some(err);
                break;
            }
        }
    }
    execution
}

fn publish(
    request: &RunRequest,
    plan: &Plan,
    execution: Execution,
    console: &mut Console,
) -> Result<()> {
    let Execution {
        runs,
        failure,
        interrupted,
    } = execution;
    // A failure part-way through a sweep keeps the points already measured.
    if runs.is_empty() {
        if let Some(err) = failure {
            return Err(err);
        }
    }
    if let Some(spec) = &request.sweep {
        let rows: Vec<(u64, usize, stats::MeanSd)> = runs
            .iter()
            .filter_map(|r| {
                Some((
                    r.sweep_value?,
                    r.producers,
                    plan.reporter.headline(r.summary.as_ref()?),
                ))
            })
            .collect();
        for line in plan
            .reporter
            .sweep_table(spec.param.name(), &rows, sweep::is_producers(spec))
        {
            console.line(&line);
        }
    }

    let result = ResultFile {
        schema: results::SCHEMA.to_string(),
        tool: Tool::this(),
        context: plan.context.clone(),
        benchmark: plan.bench.name().to_string(),
        options: Options::from_config(&request.config),
        sweep: request.sweep.as_ref().map(|s| SweepInfo {
            param: s.param.name().to_string(),
            values: s.values.clone(),
        }),
        partial: interrupted.is_some() || failure.is_some(),
        runs,
    };
    let outputs = &request.outputs;
    if let Some(target) = &outputs.csv {
        Csv.export(&result, target)?;
    }
    if let Some(target) = &outputs.json {
        Json.export(&result, target)?;
    }
    if let Some(path) = &outputs.plot {
        Svg {
            reporter: plan.reporter,
        }
        .export(&result, &OutputTarget::File(path.clone()))?;
    }
    match (failure, interrupted) {
        (Some(err), _) => Err(err),
        (None, Some((signal, phase))) => Err(Error::Interrupted {
            message: text::interrupted(
                interrupt::signal_name(signal),
                phase,
                result.runs.len(),
                plan.points.len(),
            ),
            code: interrupt::exit_code(signal),
        }),
        (None, None) => Ok(()),
    }
}

/// Sets up, runs and reports one configuration; the phase an interrupt hit,
/// if one did.
fn one_run(
    plan: &Plan,
    point: &Point,
    console: &mut Console,
    quiet: bool,
) -> Result<(RunRecord, Option<Phase>)> {
    let Point {
        config, placement, ..
    } = point;
    let reporter = &plan.reporter;
    // A fixed-work run prints its report and nothing else, like perf bench.
    let chatter = !quiet && config.repeat.is_none();
    if chatter {
        console.line(&reporter.setting_up());
    }
    let workload = plan.bench.setup(config)?;
    let mut record = RunRecord {
        sweep_value: None,
        producers: config.producers,
        params: results::params_record(config),
        placement: placement.into(),
        partial: false,
        samples: Vec::new(),
        summary: None,
        fixed: None,
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

    console.start_bar(config.warmup_secs, config.duration_secs);
    let samples = runner::run_timed(
        workload.as_ref(),
        placement,
        config.warmup_secs,
        config.duration_secs,
        &mut |sample| {
            // The bar first, so that it redraws in its new state under the line.
            console.advance(sample);
            console.line(&reporter.tick(sample, config.producers));
        },
    );
    console.finish_bar();
    let samples = samples?;
    drop(workload);
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
    match &summary {
        Some(summary) => {
            if record.partial {
                console.line(&reporter.partial_timed(summary.samples, config.duration_secs));
            }
            console.line(&reporter.summary(summary, config.producers));
        }
        None if record.partial => {}
        None => return Err(Error::runtime("no iteration was measured")),
    }
    record.samples = samples;
    record.summary = summary;
    Ok((record, phase))
}
