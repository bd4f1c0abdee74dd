//! The command line: clap definitions ([`args`]), their translation into a
//! validated [`RunRequest`] ([`run`]) with the checks of which option applies
//! to which benchmark ([`applies`]), or into another command; and the shell
//! completions and man pages generated from them ([`man`]).

mod applies;
mod args;
mod man;
mod run;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, FromArgMatches, ValueEnum};

use crate::benches::{self, Benchmark};
use crate::calibrate::CalibrateArgs;
use crate::compare::CompareArgs;
use crate::config::{Body, OutputTarget, RunRequest};
use crate::error::{Error, Result};
use crate::probe::{self, ProbeOptions};

use applies::{chosen_body, read_bytes};
use args::{Cli, Sub, PROBE_OUTPUT};
use run::run_command;

pub use args::command;
pub use man::{completions, man_page};

/// The shells completions are generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// What the command line asks for.
pub enum Command {
    /// Text to print on stdout, then exit 0 (help, version).
    Print(String),
    List,
    Probe {
        benches: Vec<&'static dyn Benchmark>,
        /// `--body` (or `-s`), `--read-bytes`, `--pid-filter`: probed as a
        /// run with them would set up.
        options: ProbeOptions,
        json: Option<OutputTarget>,
        verbose: bool,
    },
    Run(Box<RunRequest>),
    Compare(CompareArgs),
    Calibrate {
        args: CalibrateArgs,
        quiet: bool,
    },
    History(crate::history::args::HistoryArgs),
    Export(crate::history::args::ExportArgs),
    Completions(Shell),
    /// The man page of bench, or of one of its subcommands.
    Man(Option<String>),
}

/// The one translation of a clap error: help and version are text to print;
/// anything else is a usage error with clap's whole message (its tips
/// included) but not the usage dump.
pub fn clap_outcome(err: &clap::Error) -> Result<String> {
    let rendered = err.render().to_string();
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        return Ok(rendered);
    }
    let mut kept = Vec::new();
    let mut in_usage = false;
    for line in rendered.lines() {
        if line.starts_with("Usage:") {
            in_usage = true;
        } else if in_usage && line.trim().is_empty() {
            in_usage = false;
        } else if !in_usage && !line.trim().is_empty() && !line.starts_with("For more information")
        {
            kept.push(line.trim_end());
        }
    }
    let message = kept.join("\n");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    Err(Error::usage(if message.is_empty() {
        "invalid command line"
    } else {
        message
    }))
}

/// Whether `id` was given on the command line (not a default).
fn given(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::CommandLine)
}

fn output_target(path: PathBuf) -> OutputTarget {
    if path.as_os_str() == "-" {
        OutputTarget::Stdout
    } else {
        OutputTarget::File(path)
    }
}

pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command> {
    let matches = match command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => return clap_outcome(&err).map(Command::Print),
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| {
        clap_outcome(&e)
            .err()
            .unwrap_or_else(|| Error::usage("invalid command line"))
    })?;
    if let Some(sub) = matches.subcommand_name() {
        refuse_run_options(&matches, sub)?;
    }
    match cli.command {
        Some(Sub::Compare(args)) => return Ok(Command::Compare(args)),
        Some(Sub::Calibrate(args)) => {
            return Ok(Command::Calibrate {
                args,
                quiet: cli.quiet,
            })
        }
        Some(Sub::History(args)) => return Ok(Command::History(args)),
        Some(Sub::Export(args)) => return Ok(Command::Export(args)),
        Some(Sub::Completions { shell }) => return Ok(Command::Completions(shell)),
        Some(Sub::Man { subcommand }) => return Ok(Command::Man(subcommand)),
        None => {}
    }
    if cli.list {
        return Ok(Command::List);
    }
    if cli.probe {
        return probe_command(cli, &matches);
    }
    run_command(cli, &matches).map(|request| Command::Run(Box::new(request)))
}

/// Anything before the command (-q and -v too: no subcommand prints
/// chatter or loads BPF) belongs to a run and would be silently dropped.
fn refuse_run_options(matches: &ArgMatches, sub: &str) -> Result<()> {
    let cmd = command();
    let run_option = cmd.get_arguments().find(|arg| {
        let id = arg.get_id().as_str();
        !matches!(id, "help" | "version") && given(matches, id)
    });
    match run_option {
        Some(arg) => {
            let flag = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => "a benchmark name".to_string(),
            };
            Err(Error::usage(format!(
                "{flag} is an option of a run, not of `bench {sub}`"
            )))
        }
        None => Ok(()),
    }
}

/// `--probe`: the benchmarks named (each must take the body and
/// `--pid-filter` given, as its run would), or all that take them.
fn probe_command(cli: Cli, matches: &ArgMatches) -> Result<Command> {
    let named = cli
        .benches
        .iter()
        .map(|name| benches::find(name).ok_or_else(|| unknown_benchmark(name)))
        .collect::<Result<Vec<_>>>()?;
    let body = chosen_body(&cli)?;
    if cli.run.read_bytes.is_some() && body != Body::ReadUser {
        return Err(Error::usage(
            "--read-bytes sizes the read-user body's read: give --body read-user too",
        ));
    }
    let options = ProbeOptions {
        body,
        read_bytes: read_bytes(&cli),
        pid_filter: cli.run.pid_filter,
    };
    Ok(Command::Probe {
        benches: probe::chosen(named, options)?,
        options,
        json: matches
            .get_one::<PathBuf>(PROBE_OUTPUT)
            .cloned()
            .map(output_target),
        verbose: cli.verbose,
    })
}

fn unknown_benchmark(name: &str) -> Error {
    let close = benches::suggestions(name);
    if close.is_empty() {
        Error::usage(format!(
            "unknown benchmark '{name}'; `bench --list` shows them all"
        ))
    } else {
        Error::usage(format!(
            "unknown benchmark '{name}'; did you mean {}?",
            close.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::affinity::Affinity;

    fn run(args: &[&str]) -> Result<Command> {
        parse(
            std::iter::once("bench")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    fn usage_error(args: &[&str]) -> String {
        match run(args) {
            Err(Error::Usage(msg)) => msg,
            Err(other) => panic!("{args:?}: not a usage error: {other}"),
            Ok(_) => panic!("{args:?} was accepted"),
        }
    }

    #[test]
    fn defaults_follow_the_kernel_runner() {
        let Ok(Command::Run(req)) = run(&["trig-uprobe-nop"]) else {
            panic!("not a run")
        };
        let c = &req.benches[0].config;
        assert_eq!(
            (c.producers, c.consumers, c.warmup_secs, c.duration_secs),
            (1, 0, 1, 5)
        );
        assert_eq!(c.affinity, Affinity::None);
        assert_eq!(c.repeat, None);
    }

    #[test]
    fn affinity_lists_imply_affinity() {
        let Ok(Command::Run(req)) = run(&["--prod-affinity", "0-1", "-p2", "trig-syscall-count"])
        else {
            panic!("not a run")
        };
        assert_eq!(
            req.benches[0].config.affinity,
            Affinity::Auto {
                producers: Some(vec![0, 1]),
                consumers: None
            }
        );
    }

    #[test]
    fn bad_input_is_one_sentence() {
        for (args, needle) in [
            (
                &["-d", "0", "trig-syscall-count"][..],
                "between 1 and 86400",
            ),
            (
                &["-d", "-1", "trig-syscall-count"][..],
                "expected a whole number, got '-1'",
            ),
            (&["-d", "five", "trig-syscall-count"][..], "got 'five'"),
            (&["-p", "0", "trig-syscall-count"][..], "between 1 and 1024"),
            (
                &["-p", "5000", "trig-syscall-count"][..],
                "too large: at most 1024",
            ),
            (
                &["--prod-affinity", "1-", "trig-syscall-count"][..],
                "not a CPU number",
            ),
            (
                &["trig-syscall-count", "extra"][..],
                "unknown benchmark 'extra'",
            ),
            (&[][..], "no benchmark named"),
            (&["-c", "1", "trig-syscall-count"][..], "has no consumers"),
            (&["trig-uprobe-nopp"][..], "did you mean trig-uprobe-nop"),
        ] {
            let msg = usage_error(args);
            assert!(msg.contains(needle), "{args:?}: {msg}");
            assert!(!msg.contains('\n'), "{args:?}: more than one line: {msg}");
        }
    }

    #[test]
    fn help_and_version_are_printed_not_errors() {
        assert!(matches!(run(&["--help"]), Ok(Command::Print(_))));
        assert!(matches!(run(&["--version"]), Ok(Command::Print(_))));
    }
}
