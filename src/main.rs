//! Parse, pick, run, report; map errors to exit codes.

use std::process::ExitCode;

use bench::cli::{self, Command};
use bench::error::Error;
use bench::{app, benches, bpf, compare, interrupt, probe};

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
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        eprintln!("error: internal error in thread {name}: {message}");
    }));

    interrupt::install();
    let args: Vec<_> = std::env::args_os().collect();
    let mut bench_name = None;
    let result = if args.get(1).is_some_and(|a| a == "compare") {
        compare::main(args.into_iter().skip(1)).map(|report| print!("{report}"))
    } else {
        cli::parse(args).and_then(|command| match command {
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
                // Several benchmarks name the one that failed in the error.
                if let [only] = &request.benches[..] {
                    bench_name = Some(only.bench);
                }
                app::run(&request)
            }
        })
    };
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

fn list() {
    let width = benches::all().map(|b| b.name().len()).max().unwrap_or(0);
    println!(
        "Available benchmarks ([-s]: takes -s/--stacktrace, [--pid-filter]: takes --pid-filter):"
    );
    for bench in benches::all() {
        let mut takes = Vec::new();
        if bench.takes_stacktrace() {
            takes.push("-s");
        }
        if bench.takes_pid_filter() {
            takes.push("--pid-filter");
        }
        let takes = match takes.is_empty() {
            true => String::new(),
            false => format!(" [{}]", takes.join(" ")),
        };
        println!("  {:width$}  {}{takes}", bench.name(), bench.description());
    }
}
