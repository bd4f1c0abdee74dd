//! The command line: clap definitions, and their translation into a validated
//! [`RunConfig`] for one benchmark.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser};

use crate::benches::{self, Benchmark};
use crate::config::{
    BenchRequest, JsonTarget, Outputs, Repetition, RunConfig, RunRequest, SweepSpec,
    DEFAULT_DURATION_SECS, DEFAULT_MAX_RUNS, DEFAULT_MAX_SECS, DEFAULT_PRODUCERS,
    DEFAULT_WARMUP_SECS, MAX_RUNS, MAX_SECONDS, MAX_THREADS,
};
use crate::config::{ProfileRequest, DEFAULT_PROFILE_FREQ_HZ, MAX_PROFILE_FREQ_HZ};
use crate::error::{Error, Result};
use crate::runner::affinity::{parse_cpu_list, Affinity};
use crate::sweep;

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    version,
    about = "Measure what kernel instrumentation costs: uprobes, tracepoints, syscalls, breakpoints.",
    after_help = "Run `bench --list` for the benchmarks; `bench compare --help` for comparing \
                  results. Exit codes: 0 ok, 1 failure, 2 bad usage, 3 missing privileges, \
                  4 unsupported by this kernel, 5 set-up refused, 6 regression (compare), \
                  130/143 interrupted by SIGINT/SIGTERM."
)]
struct Cli {
    /// The benchmark to run (see --list). Several run interleaved, round by
    /// round, and end with a table of each one's difference from the first.
    #[arg(value_name = "BENCHMARK")]
    benches: Vec<String>,

    /// List the benchmarks with a one-line description each.
    #[arg(short = 'l', long)]
    list: bool,

    /// Try every benchmark (load, attach, detach) and say which this kernel
    /// can run; exits 0 unless the tool itself failed.
    #[arg(long)]
    probe: bool,

    /// Warm-up seconds, run but left out of the summary.
    #[arg(short = 'w', long, value_name = "SEC", default_value_t = u64::from(DEFAULT_WARMUP_SECS),
          allow_hyphen_values = true, value_parser = seconds(0))]
    warmup: u64,

    /// Measured seconds, one sample each.
    #[arg(short = 'd', long, value_name = "SEC", default_value_t = u64::from(DEFAULT_DURATION_SECS),
          allow_hyphen_values = true, value_parser = seconds(1))]
    duration: u64,

    /// Producer threads.
    #[arg(short = 'p', long, value_name = "N", default_value_t = DEFAULT_PRODUCERS as u64,
          allow_hyphen_values = true, value_parser = threads(1))]
    producers: u64,

    /// Another name for --producers, for the benchmarks that take it
    /// (breakpoint-thread, after perf).
    #[arg(long, value_name = "N", conflicts_with = "producers",
          allow_hyphen_values = true, value_parser = threads(1))]
    parallelism: Option<u64>,

    /// Consumer threads (for benchmarks that have them).
    #[arg(short = 'c', long, value_name = "N", default_value_t = 0,
          allow_hyphen_values = true, value_parser = threads(0))]
    consumers: u64,

    /// Pin threads to online CPUs: consumers first, then producers, wrapping.
    #[arg(short = 'a', long)]
    affinity: bool,

    /// Pin producers to these CPUs, e.g. 0-3,5 (implies -a).
    #[arg(long, value_name = "CPUS", value_parser = cpu_list)]
    prod_affinity: Option<CpuList>,

    /// Pin consumers to these CPUs (implies -a).
    #[arg(long, value_name = "CPUS", value_parser = cpu_list)]
    cons_affinity: Option<CpuList>,

    /// Fixed work: run the producers' operation exactly N times in total (a
    /// call, a test run of --trig-batch-iters triggers, a batch of threads, a
    /// toggle), then report the time taken and what was counted.
    #[arg(short = 'r', long, value_name = "N", allow_hyphen_values = true,
          value_parser = count(1, u64::MAX))]
    repeat: Option<u64>,

    /// Independent runs: set-up, warm-up, measurement and tear-down N times;
    /// the run means give the mean, the between-run sd and a 95 % confidence
    /// interval.
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = count(1, MAX_RUNS))]
    runs: Option<u64>,

    /// Add runs until the 95 % confidence interval is within PCT % of the
    /// mean, or --max-runs or --max-time is reached.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true, value_parser = percentage)]
    precision: Option<f64>,

    /// The most runs --precision may take.
    #[arg(long, value_name = "N", default_value_t = u64::from(DEFAULT_MAX_RUNS),
          allow_hyphen_values = true, value_parser = count(2, MAX_RUNS))]
    max_runs: u64,

    /// The time --precision may take, in seconds (no new run starts after it).
    #[arg(long, value_name = "SEC", default_value_t = DEFAULT_MAX_SECS,
          allow_hyphen_values = true, value_parser = seconds(1))]
    max_time: u64,

    /// Print the closing table of several benchmarks as Markdown.
    #[arg(long)]
    markdown: bool,

    /// Write every sample and the summary, with the context, as JSON to FILE
    /// (`-`: to stdout, the text report then going to stderr).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write every sample and the summary as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Run once per value of PARAM (producers, or a numeric option of the
    /// benchmark) and print a table, e.g. producers=1,2,4 or breakpoints=0..4.
    #[arg(long, value_name = "PARAM=LIST", value_parser = sweep::parse_spec)]
    sweep: Option<SweepSpec>,

    /// Draw the sweep as an SVG plot in FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,

    /// Print only the results, not the set-up chatter.
    #[arg(short = 'q', long)]
    quiet: bool,

    /// Let libbpf's debug log through to stderr.
    #[arg(short = 'v', long)]
    verbose: bool,

    /// Sample the measured seconds (kernel and user stacks, on every CPU's
    /// cpu-clock) and print where a hit's time goes, before the summary;
    /// with DIR, also write folded stacks, a flame graph and the breakdown
    /// there, one set per run.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    profile: Option<Option<PathBuf>>,

    /// Samples per second per CPU for --profile.
    #[arg(long, value_name = "HZ", default_value_t = DEFAULT_PROFILE_FREQ_HZ,
          allow_hyphen_values = true, value_parser = count(1, MAX_PROFILE_FREQ_HZ))]
    profile_freq: u64,
}

/// What the command line asks for.
pub enum Command {
    /// Text to print on stdout, then exit 0 (help, version).
    Print(String),
    List,
    Probe,
    Run(Box<RunRequest>),
}

fn count(min: u64, max: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    move |text: &str| {
        let value: u64 = text
            .trim()
            .parse()
            .map_err(|_| format!("expected a whole number, got '{text}'"))?;
        if value < min || value > max {
            return Err(format!("must be between {min} and {max}"));
        }
        Ok(value)
    }
}

fn percentage(text: &str) -> std::result::Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a percentage such as 3 or 0.5, got '{text}'"))?;
    if value.is_nan() || value <= 0.0 || value >= 100.0 {
        return Err(format!("must be more than 0 and less than 100, got {text}"));
    }
    Ok(value)
}

fn seconds(min: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    count(min, MAX_SECONDS)
}

fn threads(min: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    count(min, MAX_THREADS)
}

/// A parsed CPU list; a newtype so that clap takes it as one value.
#[derive(Clone, Debug)]
struct CpuList(Vec<usize>);

fn cpu_list(text: &str) -> std::result::Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

/// Adds every benchmark's own options to the parser, under their own heading.
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for option in benches::all_options() {
        let mut arg = Arg::new(option.long)
            .long(option.long)
            .value_name(option.value_name)
            .help(format!(
                "{} [default {}, {}..={}]",
                option.help, option.default, option.min, option.max
            ))
            .help_heading("Benchmark options")
            .allow_hyphen_values(true)
            .action(ArgAction::Set)
            .value_parser(count(0, u64::MAX));
        if let Some(short) = option.short {
            arg = arg.short(short);
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

/// The first line of a clap error, without its "error: " prefix: one sentence.
fn clap_sentence(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid command line");
    first.trim_start_matches("error: ").trim().to_string()
}

pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command> {
    let matches = match command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => {
            return match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    Ok(Command::Print(err.render().to_string()))
                }
                _ => Err(Error::usage(clap_sentence(&err))),
            }
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| Error::usage(clap_sentence(&e)))?;
    if cli.list {
        return Ok(Command::List);
    }
    if cli.probe {
        return Ok(Command::Probe);
    }
    if cli.benches.is_empty() {
        return Err(Error::usage(
            "no benchmark named: give one, e.g. `bench trig-uprobe-nop` (see --list)",
        ));
    }
    if cli.plot.is_some() && cli.sweep.is_none() {
        return Err(Error::usage(
            "--plot draws a sweep: give --sweep PARAM=LIST too",
        ));
    }
    if cli.sweep.is_some() && cli.repeat.is_some() {
        return Err(Error::usage(
            "--sweep compares timed runs; it does not combine with --repeat",
        ));
    }
    if cli.repeat.is_some() && (cli.runs.is_some() || cli.precision.is_some()) {
        return Err(Error::usage(
            "--runs and --precision repeat timed runs; they do not combine with --repeat",
        ));
    }
    if cli.runs.is_some() && cli.precision.is_some() {
        return Err(Error::usage(
            "--runs sets the number of runs and --precision finds it: give one of them",
        ));
    }
    let profile = profile_request(&cli, &matches)?;
    let given = given_options(&matches);
    let mut requests = Vec::with_capacity(cli.benches.len());
    for name in &cli.benches {
        let bench = benches::find(name).ok_or_else(|| unknown_benchmark(name))?;
        if requests
            .iter()
            .any(|r: &BenchRequest| r.bench == bench.name())
        {
            return Err(Error::usage(format!("{name} is named twice")));
        }
        requests.push(bench_request(bench, &cli, &given)?);
    }
    if requests.len() > 1 {
        let several = |what: &str| {
            Error::usage(format!(
                "{what} keeps one benchmark's result: name one benchmark, or run them one by one"
            ))
        };
        if cli.repeat.is_some() {
            return Err(several("--repeat"));
        }
        if cli.sweep.is_some() {
            return Err(several("--sweep"));
        }
        if cli.plot.is_some() {
            return Err(several("--plot"));
        }
        if cli.json.as_deref().is_some_and(|p| !p.is_dir()) {
            return Err(Error::usage(
                "with several benchmarks, --json names a directory: one file per benchmark",
            ));
        }
        if cli.csv.as_deref().is_some_and(|p| !p.is_dir()) {
            return Err(Error::usage(
                "with several benchmarks, --csv names a directory: one file per benchmark",
            ));
        }
    }
    let outputs = Outputs {
        json: cli.json.map(|path| {
            if path.as_os_str() == "-" {
                JsonTarget::Stdout
            } else {
                JsonTarget::File(path)
            }
        }),
        csv: cli.csv,
        plot: cli.plot,
    };
    let repetition = Repetition {
        runs: cli.runs.unwrap_or(1) as u32,
        precision: cli.precision,
        max_runs: cli.max_runs as u32,
        max_secs: cli.max_time,
    };
    Ok(Command::Run(Box::new(RunRequest {
        benches: requests,
        repetition,
        sweep: cli.sweep,
        outputs,
        markdown: cli.markdown,
        quiet: cli.quiet,
        verbose: cli.verbose,
        profile,
    })))
}

/// `--profile[=DIR]` and `--profile-freq`, checked.
fn profile_request(cli: &Cli, matches: &ArgMatches) -> Result<Option<ProfileRequest>> {
    let freq_given =
        matches.value_source("profile_freq") == Some(clap::parser::ValueSource::CommandLine);
    let Some(dir) = &cli.profile else {
        if freq_given {
            return Err(Error::usage(
                "--profile-freq sets --profile's rate: give --profile too",
            ));
        }
        return Ok(None);
    };
    if cli.repeat.is_some() {
        return Err(Error::usage(
            "--profile samples the measured seconds of timed runs; it does not combine with --repeat",
        ));
    }
    // `--profile DIR` reads DIR as a benchmark: say how to give it.
    if dir.is_none() {
        let path = cli.benches.iter().find(|name| {
            benches::find(name).is_none() && (name.contains('/') || Path::new(name).is_dir())
        });
        if let Some(path) = path {
            return Err(Error::usage(format!(
                "'{path}' is not a benchmark; --profile takes its directory after '=': --profile={path}"
            )));
        }
    }
    Ok(Some(ProfileRequest {
        dir: dir.clone(),
        freq_hz: cli.profile_freq,
    }))
}

/// One named benchmark's configuration from the options given.
fn bench_request(
    bench: &'static dyn Benchmark,
    cli: &Cli,
    given: &[(&'static str, u64)],
) -> Result<BenchRequest> {
    let params = benches::resolve_params(bench, given)?;
    let affinity = if cli.affinity || cli.prod_affinity.is_some() || cli.cons_affinity.is_some() {
        Affinity::Auto {
            producers: cli.prod_affinity.clone().map(|l| l.0),
            consumers: cli.cons_affinity.clone().map(|l| l.0),
        }
    } else {
        Affinity::None
    };
    let producers = match cli.parallelism {
        None => cli.producers,
        Some(n) if bench.producers_alias() == Some("parallelism") => n,
        Some(_) => {
            let takers: Vec<&str> = benches::all()
                .filter(|b| b.producers_alias() == Some("parallelism"))
                .map(|b| b.name())
                .collect();
            return Err(Error::usage(format!(
                "--parallelism is not an option of {}; use -p/--producers (it is taken by {})",
                bench.name(),
                takers.join(", ")
            )));
        }
    };
    if cli.consumers > 0 && !bench.has_consumers() {
        return Err(Error::usage(format!(
            "{} has no consumers, so -c/--consumers must be 0",
            bench.name()
        )));
    }
    let config = RunConfig {
        producers: producers as usize,
        consumers: cli.consumers as usize,
        warmup_secs: cli.warmup as u32,
        duration_secs: cli.duration as u32,
        affinity,
        repeat: cli.repeat,
        params,
    };
    match &cli.sweep {
        // Each point is checked as its own run would be, before anything runs.
        Some(spec) => drop(sweep::points(spec, bench, &config)?),
        None => bench.validate(&config)?,
    }
    Ok(BenchRequest {
        bench: bench.name(),
        config,
    })
}

fn given_options(matches: &ArgMatches) -> Vec<(&'static str, u64)> {
    benches::all_options()
        .into_iter()
        .filter_map(|o| matches.get_one::<u64>(o.long).map(|&v| (o.long, v)))
        .collect()
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
                "between 1 and 1024",
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
