//! Parse, pick, run, report; map errors to exit codes.

use std::process::ExitCode;

use bench::cli::{self, Command};
use bench::config::OutputTarget;
use bench::error::{panic_message, Error, Result};
use bench::report::{console, listing, output};
use bench::{app, bpf, calibrate, compare, history, interrupt, kernel, probe, progress, results};

fn main() -> ExitCode {
    // Like any Unix filter: `bench ... | head` ends bench when head exits
    // (the kernel closes its links and events), rather than a failed write
    // panicking mid-run.
    // SAFETY: restoring the default action of a signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // A bug must still end in one line, not a backtrace. Workers' panics are
    // caught and reported by the runner, with their message, as the run's error.
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        if name.starts_with("producer-") || name.starts_with("consumer-") {
            return;
        }
        console::internal_error(name, &panic_message(info.payload()));
    }));

    interrupt::install(console::interrupted_twice);
    raise_open_file_limit();
    progress::listen(console::draw_progress);
    bpf::log_to(console::libbpf_log);
    let mut bench_name = None;
    let result =
        cli::parse(std::env::args_os()).and_then(|command| dispatch(command, &mut bench_name));
    // What could not be printed or written is a failure too (a full disk).
    let result = output::with_kept_failures(result);
    // A command that finished anyway after a Ctrl-C (--list, compare) still
    // says it was interrupted.
    let result = result.and_then(|()| match interrupt::received() {
        Some(signal) => Err(Error::Interrupted {
            message: format!("interrupted by {}", interrupt::signal_name(signal)),
            code: interrupt::exit_code(signal),
        }),
        None => Ok(()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            console::error(&err, bench_name);
            ExitCode::from(err.exit_code())
        }
    }
}

/// Does what the command line asks; `bench_name` learns the benchmark of a
/// run of one, which an unsupported error names.
fn dispatch(command: Command, bench_name: &mut Option<&'static str>) -> Result<()> {
    match command {
        Command::Print(text) => {
            output::print_line(text.trim_end());
            Ok(())
        }
        Command::List => {
            for line in listing::list_lines() {
                output::print_line(&line);
            }
            Ok(())
        }
        Command::Probe {
            benches,
            options,
            json,
            verbose,
        } => probe(&benches, options, json, verbose),
        Command::Run(request) => {
            // Several benchmarks name the one that failed in the error.
            if let [only] = &request.benches[..] {
                *bench_name = Some(only.bench);
            }
            app::run(&request)
        }
        Command::Compare(args) => {
            interrupt::end_at_first(console::interrupted);
            let comparison = compare::run(&args)?;
            for line in &comparison.report {
                output::print_line(line);
            }
            comparison.regression.map_or(Ok(()), Err)
        }
        Command::Calibrate { args, quiet } => calibrate::run(&args, quiet, bench_name),
        Command::History(args) => {
            interrupt::end_at_first(console::interrupted);
            history::run(&args)
        }
        Command::Export(args) => {
            interrupt::end_at_first(console::interrupted);
            history::export(&args)
        }
        Command::Completions(shell) => output::write_stdout(&cli::completions(shell)),
        Command::Man(subcommand) => output::write_stdout(&cli::man_page(subcommand.as_deref())?),
    }
}

/// `--probe`: tries each benchmark and prints or writes the outcomes.
fn probe(
    benches: &[&'static dyn bench::benches::Benchmark],
    options: probe::ProbeOptions,
    json: Option<OutputTarget>,
    verbose: bool,
) -> Result<()> {
    bpf::init_logging(verbose);
    if let Some(OutputTarget::File(path)) = &json {
        output::check_writable("--json", path)?;
    }
    // Without --json each line is printed as its verdict is decided: a
    // probe that kills the machine (or a guest) loses none before it.
    let width = benches.iter().map(|b| b.name().len()).max().unwrap_or(0);
    let print = |outcome: &probe::Outcome| {
        if json.is_none() {
            output::print_line(&listing::probe_line(outcome, width));
        }
    };
    let outcomes = probe::probe_each(benches, options, &print);
    match json {
        Some(target) => {
            let file = results::ProbeFile {
                schema: results::PROBE_SCHEMA,
                tool: results::Tool::this(),
                kernel_release: kernel::release(),
                partial: outcomes.len() < benches.len(),
                benchmarks: outcomes,
            };
            output::write(&target, listing::probe_json(&file).as_bytes())
        }
        None => Ok(()),
    }
}

/// Raises the limit on open files: every classic uprobe or kprobe link (and
/// every USDT site where the kernel has no uprobe-multi link) holds a perf
/// event descriptor, and a cycle of tens of thousands needs more than the
/// usual 1024 (soft) or 4096 (hard). Root may raise the hard limit too; others
/// get their hard limit. A failure leaves the limit as it was.
fn raise_open_file_limit() {
    // Every attach site of bench, with room for the rest of the process.
    const WANTED: libc::rlim_t = 131_072;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= WANTED {
            return;
        }
        let raised = libc::rlimit {
            rlim_cur: WANTED,
            rlim_max: limit.rlim_max.max(WANTED),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
