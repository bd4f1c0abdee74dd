//! Parse, pick, run, report; map errors to exit codes.

use std::process::ExitCode;

use bench::cli::{self, Command};
use bench::error::{panic_message, Error};
use bench::report::{listing, output};
use bench::{app, bpf, compare, interrupt, kernel, probe, results};

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
        eprintln!(
            "error: internal error in thread {name}: {}",
            panic_message(info.payload())
        );
    }));

    interrupt::install();
    let mut bench_name = None;
    let result = cli::parse(std::env::args_os()).and_then(|command| match command {
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
            json,
            verbose,
        } => {
            bpf::init_logging(verbose);
            if let Some(bench::config::OutputTarget::File(path)) = &json {
                output::check_writable("--json", path)?;
            }
            let outcomes = probe::probe_each(&benches);
            match json {
                Some(target) => {
                    let file = probe::ProbeFile {
                        schema: probe::SCHEMA,
                        tool: results::Tool::this(),
                        kernel_release: kernel::release(),
                        partial: outcomes.len() < benches.len(),
                        benchmarks: outcomes,
                    };
                    output::write(&target, listing::probe_json(&file).as_bytes())
                }
                None => {
                    for line in listing::probe_lines(&outcomes) {
                        output::print_line(&line);
                    }
                    Ok(())
                }
            }
        }
        Command::Run(request) => {
            // Several benchmarks name the one that failed in the error.
            if let [only] = &request.benches[..] {
                bench_name = Some(only.bench);
            }
            app::run(&request)
        }
        Command::Compare(args) => {
            let comparison = compare::run(&args)?;
            for line in &comparison.report {
                output::print_line(line);
            }
            comparison.regression.map_or(Ok(()), Err)
        }
        Command::Completions(shell) => output::write_stdout(&cli::completions(shell)),
        Command::Man => output::write_stdout(&cli::man_page()?),
    });
    // What could not be printed is a failure too (a full disk behind stdout).
    let result = result.and_then(|()| output::stdout_failure().map_or(Ok(()), Err));
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
            match (&err, bench_name) {
                (Error::Unsupported(why), Some(bench)) => eprintln!("unsupported: {bench}: {why}"),
                (Error::Unsupported(_), None) | (Error::Interrupted { .. }, _) => {
                    eprintln!("{err}")
                }
                _ => eprintln!("error: {err}"),
            }
            ExitCode::from(err.exit_code())
        }
    }
}
