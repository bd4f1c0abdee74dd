//! Parse, pick, run, report; map errors to exit codes.

use std::process::ExitCode;

use bench::benches::{self, ReportStyle, RunConfig};
use bench::cli::{self, Command, RunRequest};
use bench::error::{Error, Result};
use bench::report::{progress::Progress, text};
use bench::runner::{self, affinity};
use bench::{bpf, probe, stats};

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        eprintln!(
            "error: internal error in thread {}: {message}",
            thread.name().unwrap_or("unnamed")
        );
    }));
    let mut bench_name = None;
    let result = cli::parse(std::env::args_os()).and_then(|command| match command {
        Command::Print(text) => {
            println!("{}", text.trim_end());
            Ok(())
        }
        Command::List => {
            list();
            Ok(())
        }
        Command::Probe => {
            bpf::init_logging(false);
            for line in probe::probe_all() {
                println!("{line}");
            }
            Ok(())
        }
        Command::Run(request) => {
            bench_name = Some(request.bench.name());
            run(&request)
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            match (&err, bench_name) {
                (Error::Unsupported(why), Some(bench)) => eprintln!("unsupported: {bench}: {why}"),
                (Error::Unsupported(_), None) => eprintln!("{err}"),
                _ => eprintln!("error: {err}"),
            }
            ExitCode::from(err.exit_code())
        }
    }
}

fn list() {
    let width = benches::all().map(|b| b.name().len()).max().unwrap_or(0);
    println!("Available benchmarks:");
    for bench in benches::all() {
        println!("  {:width$}  {}", bench.name(), bench.description());
    }
}

fn run(request: &RunRequest) -> Result<()> {
    let RunRequest {
        bench,
        config,
        quiet,
        verbose,
    } = request;
    bpf::init_logging(*verbose);
    if bench.needs_bpf() {
        bpf::check_privileges(bench.name())?;
    }
    let online = affinity::online_cpus()?;
    let placement = affinity::place(
        &config.affinity,
        config.producers,
        config.consumers,
        &online,
    )?;

    // A fixed-work run prints its report and nothing else, like perf bench.
    let chatter = !quiet && config.repeat.is_none();
    if chatter {
        println!("Setting up benchmark '{}'...", bench.name());
    }
    let workload = bench.setup(config)?;
    if chatter {
        println!("Benchmark '{}' started.", bench.name());
    }
    if let Some(repeat) = config.repeat {
        let result = runner::run_fixed(workload.as_ref(), &placement, repeat)?;
        for line in bench.report_fixed(config, &result) {
            println!("{line}");
        }
        return Ok(());
    }
    timed(workload.as_ref(), bench.report_style(), config, &placement)
}

fn timed(
    workload: &dyn runner::Workload,
    style: ReportStyle,
    config: &RunConfig,
    placement: &affinity::Placement,
) -> Result<()> {
    let progress = Progress::new(config.warmup_secs, config.duration_secs);
    let samples = runner::run_timed(
        workload,
        placement,
        config.warmup_secs,
        config.duration_secs,
        &mut |sample| {
            progress.println(&match style {
                ReportStyle::Hits => text::iteration_line(sample, config.producers),
                ReportStyle::Ops { .. } => text::ops_iteration_line(sample, config.producers),
            });
            progress.advance(sample);
        },
    )?;
    progress.finish();
    let summary = stats::summarize(&samples, config.producers)
        .ok_or_else(|| Error::runtime("no iteration was measured"))?;
    println!(
        "{}",
        match style {
            ReportStyle::Hits => text::summary_line(&summary),
            ReportStyle::Ops { per_cpu } =>
                text::ops_summary_line(&summary, config.producers, per_cpu),
        }
    );
    Ok(())
}
