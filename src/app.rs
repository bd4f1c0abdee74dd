//! One run, or a sweep of runs: set up, run, report, export. Data flows one
//! way: configuration → set-up → the runner → statistics → reports.

use std::path::PathBuf;

use crate::benches::{Benchmark, ReportStyle, RunConfig};
use crate::bpf;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::console::Console;
use crate::report::plot::{self, Point};
use crate::report::{csv, json, text};
use crate::results::{self, Context, Options, ResultFile, RunRecord, SweepInfo, Tool};
use crate::runner::{self, affinity};
use crate::stats;
use crate::sweep::SweepSpec;

/// Where the JSON result goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonTarget {
    File(PathBuf),
    /// `--json -`: JSON on stdout, the text report on stderr.
    Stdout,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    pub json: Option<JsonTarget>,
    pub csv: Option<PathBuf>,
    pub plot: Option<PathBuf>,
}

pub struct RunRequest {
    pub bench: &'static dyn Benchmark,
    pub config: RunConfig,
    pub sweep: Option<SweepSpec>,
    pub outputs: Outputs,
    pub quiet: bool,
    pub verbose: bool,
}

pub fn run(request: &RunRequest) -> Result<()> {
    let RunRequest {
        bench,
        config,
        sweep,
        outputs,
        quiet,
        verbose,
    } = request;
    bpf::init_logging(*verbose);
    // Everything the command line decides is checked before anything runs:
    // each point's configuration and CPUs, and where the outputs go.
    let online = affinity::online_cpus()?;
    let configs: Vec<RunConfig> = match sweep {
        None => vec![config.clone()],
        Some(spec) => spec.points(*bench, config)?,
    };
    let values: Vec<Option<u64>> = match sweep {
        None => vec![None],
        Some(spec) => spec.values.iter().map(|&v| Some(v)).collect(),
    };
    let placements = configs
        .iter()
        .map(|c| affinity::place(&c.affinity, c.producers, c.consumers, &online))
        .collect::<Result<Vec<_>>>()?;
    outputs.check()?;
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name())?;
    }
    let threads = configs
        .iter()
        .map(|c| c.producers + c.consumers)
        .max()
        .unwrap_or(0);
    if threads > online.len() {
        eprintln!(
            "warning: {threads} threads on {} online CPUs share them: the rates will show it",
            online.len()
        );
    }

    let context = Context::gather(&online);
    let mut console = Console::new(outputs.json == Some(JsonTarget::Stdout));
    let mut runs = Vec::with_capacity(configs.len());
    let mut failure = None;
    for ((value, point), placement) in values.iter().zip(&configs).zip(&placements) {
        if interrupt::received().is_some() {
            break;
        }
        // Not chatter: it says which point the lines below belong to.
        if let (Some(value), Some(spec)) = (value, sweep) {
            console.line(&format!("# {}={value}", spec.param));
        }
        match one_run(*bench, point, placement, &mut console, *quiet) {
            Ok(mut record) => {
                record.sweep_value = *value;
                runs.push(record);
            }
            Err(err) => {
                failure = Some(err);
                break;
            }
        }
    }
    let stopped = interrupt::received();
    // A failure part-way through a sweep keeps the points already measured.
    if runs.is_empty() {
        if let Some(err) = failure {
            return Err(err);
        }
    }

    let rows: Vec<(u64, usize, stats::MeanSd)> = runs
        .iter()
        .filter_map(|r| {
            Some((
                r.sweep_value?,
                r.producers,
                text::headline(r.summary.as_ref()?, bench.report_style()),
            ))
        })
        .collect();
    if let Some(spec) = sweep {
        console.line(&format!("Sweep of {} for {}:", spec.param, bench.name()));
        for line in text::sweep_table(&spec.param, &rows, spec.is_producers()) {
            console.line(&line);
        }
    }

    let result = ResultFile {
        schema: results::SCHEMA.to_string(),
        tool: Tool::this(),
        context,
        benchmark: bench.name().to_string(),
        options: Options::from_config(config),
        sweep: sweep.as_ref().map(|s| SweepInfo {
            param: s.param.clone(),
            values: s.values.clone(),
        }),
        partial: stopped.is_some() || failure.is_some(),
        runs,
    };
    if let Some(path) = &outputs.csv {
        csv::write(path, &result)?;
    }
    match &outputs.json {
        Some(JsonTarget::File(path)) => json::write(path, &result)?,
        Some(JsonTarget::Stdout) => print!("{}", result.to_json()),
        None => {}
    }
    if let (Some(path), Some(spec)) = (&outputs.plot, sweep) {
        plot_sweep(path, *bench, spec, &rows)?;
    }
    match (failure, stopped) {
        (Some(err), _) => Err(err),
        (None, Some(signal)) => Err(interrupted(signal, &result, configs.len())),
        (None, None) => Ok(()),
    }
}

fn plot_sweep(
    path: &std::path::Path,
    bench: &dyn Benchmark,
    spec: &SweepSpec,
    rows: &[(u64, usize, stats::MeanSd)],
) -> Result<()> {
    let points: Vec<Point> = rows
        .iter()
        .map(|&(value, _, rate)| Point {
            value,
            mean: rate.mean,
            sd: rate.sd,
        })
        .collect();
    let what = match bench.report_style() {
        ReportStyle::Hits => "hits",
        ReportStyle::Ops { .. } => "operations",
    };
    let title = format!("{}: {what} per second by {}", bench.name(), spec.param);
    let svg = plot::render(&title, &spec.param, what, &points, spec.is_producers())?;
    plot::write(path, &svg)
}

impl Outputs {
    /// Refuses, before anything runs, output paths that cannot be written:
    /// a run must not be lost to a typo in a file name.
    fn check(&self) -> Result<()> {
        let json = match &self.json {
            Some(JsonTarget::File(path)) => Some(path),
            _ => None,
        };
        for (flag, path) in [
            ("--json", json),
            ("--csv", self.csv.as_ref()),
            ("--plot", self.plot.as_ref()),
        ] {
            let Some(path) = path else { continue };
            if path.file_name().is_none() || path.is_dir() {
                return Err(Error::usage(format!(
                    "{flag} {} names no file",
                    path.display()
                )));
            }
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() {
                return Err(Error::usage(format!(
                    "{flag} {}: the directory {} does not exist",
                    path.display(),
                    dir.display()
                )));
            }
        }
        Ok(())
    }
}

/// What an interrupted run tells the user, once its report is out.
fn interrupted(signal: i32, result: &ResultFile, points: usize) -> Error {
    let by = format!("interrupted by {}", interrupt::signal_name(signal));
    let message = match result.runs.last() {
        None => format!("{by} before the first run: nothing was measured"),
        Some(run) => {
            let point = match points {
                1 => String::new(),
                n => format!(" (sweep point {} of {n})", result.runs.len()),
            };
            match (&run.fixed, &run.summary, run.samples.is_empty()) {
                (Some(fixed), _, _) => format!(
                    "{by} after {} of {} calls{point}: the report above is partial",
                    fixed.calls,
                    result.options.repeat.unwrap_or_default()
                ),
                (None, Some(summary), _) => format!(
                    "{by} after {} of {} measured iterations{point}: the summary above is partial",
                    summary.samples, result.options.duration_secs
                ),
                (None, None, true) => format!("{by} during set-up{point}: nothing was measured"),
                (None, None, false) => format!("{by} during warm-up{point}: nothing was measured"),
            }
        }
    };
    Error::Interrupted {
        message,
        code: interrupt::exit_code(signal),
    }
}

/// Sets up, runs and reports one configuration.
fn one_run(
    bench: &dyn Benchmark,
    config: &RunConfig,
    placement: &affinity::Placement,
    console: &mut Console,
    quiet: bool,
) -> Result<RunRecord> {
    // A fixed-work run prints its report and nothing else, like perf bench.
    let chatter = !quiet && config.repeat.is_none();
    if chatter {
        console.line(&format!("Setting up benchmark '{}'...", bench.name()));
    }
    let workload = bench.setup(config)?;
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
        return Ok(record);
    }
    if chatter {
        console.line(&format!("Benchmark '{}' started.", bench.name()));
    }
    if let Some(repeat) = config.repeat {
        let fixed = runner::run_fixed(workload.as_ref(), placement, repeat)?;
        drop(workload);
        if interrupt::received().is_some() {
            record.partial = true;
            console.line(&format!(
                "# partial: interrupted after {} of {repeat} calls",
                fixed.calls
            ));
        }
        for line in bench.report_fixed(config, &fixed) {
            console.line(&line);
        }
        record.fixed = Some(fixed);
        return Ok(record);
    }

    let style = bench.report_style();
    console.start_bar(config.warmup_secs, config.duration_secs);
    let samples = runner::run_timed(
        workload.as_ref(),
        placement,
        config.warmup_secs,
        config.duration_secs,
        &mut |sample| {
            console.line(&match style {
                ReportStyle::Hits => text::iteration_line(sample, config.producers),
                ReportStyle::Ops { .. } => text::ops_iteration_line(sample, config.producers),
            });
            console.advance(sample);
        },
    );
    console.finish_bar();
    let samples = samples?;
    drop(workload);
    record.partial = interrupt::received().is_some();
    let summary = stats::summarize(&samples, config.producers);
    match &summary {
        Some(summary) => {
            if record.partial {
                console.line(&format!(
                    "# partial: interrupted after {} of {} measured iterations",
                    summary.samples, config.duration_secs
                ));
            }
            console.line(&match style {
                ReportStyle::Hits => text::summary_line(summary),
                ReportStyle::Ops { per_cpu } => {
                    text::ops_summary_line(summary, config.producers, per_cpu)
                }
            });
        }
        None if record.partial => {}
        None => return Err(Error::runtime("no iteration was measured")),
    }
    record.samples = samples;
    record.summary = summary;
    Ok(record)
}
