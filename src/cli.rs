//! The command line: clap definitions, their translation into a validated
//! [`RunRequest`] (or another command), and the shell completions and man
//! page generated from them.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{
    Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum,
};

use crate::benches::{self, Benchmark};
use crate::compare::CompareArgs;
use crate::config::{
    BenchRequest, OutputTarget, Outputs, Repetition, RunConfig, RunRequest, SweepParam, SweepSpec,
    DEFAULT_DURATION_SECS, DEFAULT_MAX_RUNS, DEFAULT_MAX_SECS, DEFAULT_PRODUCERS,
    DEFAULT_WARMUP_SECS, MAX_RUNS, MAX_SECONDS, MAX_THREADS,
};
use crate::config::{ProfileRequest, DEFAULT_PROFILE_FREQ_HZ, MAX_PROFILE_FREQ_HZ};
use crate::error::{Error, Result};
use crate::report::output;
use crate::runner::affinity::{parse_cpu_list, Affinity};
use crate::sweep::{self, SweepRequest};

/// What the figures of a report mean; in `--help` and the README.
const FIGURES: &str = "Figures: a rate (M/s) counts all producers together; '/prod' is one \
producer's share of it. 'usecs/op' is wall-clock time divided by the operations of all \
producers (perf bench's usecs/op), in timed and --repeat runs alike; 'ns/op/prod' (the \
Summary's latency) and perf's 'usecs/op/cpu' are one producer's time per operation: \
usecs/op times the producers.";

const AFTER_HELP: &str = "Run `bench --list` for the benchmarks; `bench compare --help` for \
comparing results. Exit codes: 0 ok, 1 failure, 2 bad usage, 3 missing privileges, 4 unsupported \
by this kernel, 5 set-up refused, 6 regression (compare), 130/143 interrupted by SIGINT/SIGTERM.";

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    version,
    about = "Measure what kernel instrumentation costs: uprobes, tracepoints, syscalls, breakpoints.",
    after_help = AFTER_HELP,
    // The kernel's runner takes the last of a repeated option, and scripts
    // that append an override rely on it.
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,

    /// The benchmark to run (see --list); several run interleaved, round by
    /// round, and end with a table of each one's change from the first. With
    /// --probe, the benchmarks to try (all when none is named).
    #[arg(value_name = "BENCHMARK", value_parser = BenchNames, hide_possible_values = true)]
    benches: Vec<String>,

    /// List the benchmarks with a one-line description each.
    #[arg(short = 'l', long, conflicts_with_all = RUN_ONLY,
          conflicts_with_all = ["benches", "probe", "json"])]
    list: bool,

    /// Try benchmarks (load, attach, detach) and say which this kernel can
    /// run; with --json, write the outcomes as JSON. Exits 0 unless the tool
    /// itself failed.
    #[arg(long, conflicts_with_all = RUN_ONLY)]
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

    /// Consumer threads (the help names the benchmarks that have them).
    #[arg(short = 'c', long, value_name = "N", default_value_t = 0,
          allow_hyphen_values = true, value_parser = threads(0))]
    consumers: u64,

    /// Pin threads to online CPUs: consumers first, then producers, wrapping.
    #[arg(short = 'a', long)]
    affinity: bool,

    /// Pin producers to these CPUs, e.g. 0-3,5 (implies -a).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true, value_parser = cpu_list)]
    prod_affinity: Option<CpuList>,

    /// Pin consumers to these CPUs (implies -a).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true, value_parser = cpu_list)]
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
    #[arg(long, value_name = "PCT", allow_hyphen_values = true, value_parser = percentage,
          conflicts_with = "runs")]
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
    /// (`-`: to stdout, the text report then going to stderr). With several
    /// benchmarks, a directory: one NAME.json each.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write every sample and the summary as CSV to FILE (`-`: to stdout, as
    /// for --json).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Run once per value of PARAM (producers, or a numeric option of the
    /// benchmark) and print a table, e.g. producers=1,2,4 or breakpoints=0..4.
    #[arg(long, value_name = "PARAM=LIST", value_parser = sweep::parse_spec)]
    sweep: Option<SweepRequest>,

    /// Draw the sweep as an SVG plot in FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,

    /// Make the counting BPF programs also take a stack (bpf_get_stack) per
    /// hit, as the kernel runner's option does; `--list` marks the benchmarks
    /// that take it [s].
    #[arg(short = 's', long)]
    stacktrace: bool,

    /// Attach uprobes for this process only (libbpf's pid argument), not for
    /// every process; `--list` marks the benchmarks that take it [p].
    #[arg(long)]
    pid_filter: bool,

    /// Print only the results, not the set-up chatter.
    #[arg(short = 'q', long, global = true)]
    quiet: bool,

    /// Let libbpf's debug log through to stderr.
    #[arg(short = 'v', long, global = true)]
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

/// The options of a run that `--probe` does not take.
const RUN_ONLY: [&str; 19] = [
    "warmup",
    "duration",
    "producers",
    "parallelism",
    "consumers",
    "affinity",
    "prod_affinity",
    "cons_affinity",
    "repeat",
    "csv",
    "sweep",
    "plot",
    "runs",
    "precision",
    "max_runs",
    "max_time",
    "markdown",
    "profile",
    "profile_freq",
];

#[derive(Subcommand, Debug)]
enum Sub {
    /// Compare result files (--json) of two kernels, patches or machines.
    #[command(after_help = crate::compare::AFTER_HELP)]
    Compare(CompareArgs),
    /// Print a completion script for SHELL, e.g.
    /// `bench completions bash > /etc/bash_completion.d/bench`.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), e.g. `bench man | man -l -`.
    Man,
}

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
        json: Option<OutputTarget>,
        verbose: bool,
    },
    Run(Box<RunRequest>),
    Compare(CompareArgs),
    Completions(Shell),
    Man,
}

/// Benchmark names: any string is taken (an unknown one gets suggestions
/// later), but the registry's names are offered to completions.
#[derive(Clone, Debug)]
struct BenchNames;

impl TypedValueParser for BenchNames {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> std::result::Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            benches::all().map(|b| PossibleValue::new(b.name()).help(b.description())),
        ))
    }
}

fn count(min: u64, max: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    move |text: &str| {
        let value: u64 = match text.trim().parse() {
            Ok(value) => value,
            Err(err) if *err.kind() == std::num::IntErrorKind::PosOverflow => {
                return Err(format!("too large: at most {max}"))
            }
            Err(_) => return Err(format!("expected a whole number, got '{text}'")),
        };
        if value > max {
            return Err(format!("too large: at most {max}"));
        }
        if value < min {
            return Err(if max == u64::MAX {
                format!("must be at least {min}")
            } else {
                format!("must be between {min} and {max}")
            });
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

/// The benchmarks that take consumers, for `-c`'s help and refusals.
fn consumer_takers() -> String {
    let takers: Vec<&str> = benches::all()
        .filter(|b| b.has_consumers())
        .map(|b| b.name())
        .collect();
    if takers.is_empty() {
        "no benchmark has consumers yet".to_string()
    } else {
        format!("taken by {}", benches::summarize_names(&takers))
    }
}

/// The whole command line: the derived one, every benchmark's own options
/// under their own heading, and the help that depends on the registry.
pub fn command() -> clap::Command {
    let takers = consumer_takers();
    let mut cmd = Cli::command()
        .after_long_help(format!("{FIGURES}\n\n{AFTER_HELP}"))
        .mut_arg("consumers", |a| {
            a.help(format!("Consumer threads ({takers})."))
        })
        .mut_arg("cons_affinity", |a| {
            a.help(format!(
                "Pin consumers to these CPUs (implies -a; {takers})."
            ))
        });
    for option in benches::all_options() {
        if option.is_flag() {
            cmd = cmd.arg(
                Arg::new(option.long)
                    .long(option.long)
                    .help(option.help)
                    .help_heading("Benchmark options")
                    .action(ArgAction::SetTrue)
                    .conflicts_with_all(["probe", "list"]),
            );
            continue;
        }
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
            .value_parser(count(0, u64::MAX))
            .conflicts_with_all(["probe", "list"]);
        if let Some(short) = option.short {
            arg = arg.short(short);
        }
        cmd = cmd.arg(arg);
    }
    cmd
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
        // Only -q and -v are shared; anything else before the command
        // belongs to a run and would be silently dropped.
        let cmd = command();
        let run_option = cmd.get_arguments().find(|arg| {
            let id = arg.get_id().as_str();
            !matches!(id, "quiet" | "verbose" | "help" | "version") && given(&matches, id)
        });
        if let Some(arg) = run_option {
            let flag = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => "a benchmark name".to_string(),
            };
            return Err(Error::usage(format!(
                "{flag} is an option of a run, not of `bench {sub}`"
            )));
        }
    }
    match cli.command {
        Some(Sub::Compare(args)) => return Ok(Command::Compare(args)),
        Some(Sub::Completions { shell }) => return Ok(Command::Completions(shell)),
        Some(Sub::Man) => return Ok(Command::Man),
        None => {}
    }
    if cli.list {
        return Ok(Command::List);
    }
    if cli.probe {
        let benches = if cli.benches.is_empty() {
            benches::all().collect()
        } else {
            cli.benches
                .iter()
                .map(|name| benches::find(name).ok_or_else(|| unknown_benchmark(name)))
                .collect::<Result<Vec<_>>>()?
        };
        return Ok(Command::Probe {
            benches,
            json: cli.json.map(output_target),
            verbose: cli.verbose,
        });
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
    for (id, flag) in [("max_runs", "--max-runs"), ("max_time", "--max-time")] {
        if given(&matches, id) && cli.precision.is_none() {
            return Err(Error::usage(format!(
                "{flag} bounds --precision: give --precision PCT too"
            )));
        }
    }
    let profile = profile_request(&cli, &matches)?;
    let given_options = given_options(&matches);
    let mut requests: Vec<BenchRequest> = Vec::with_capacity(cli.benches.len());
    let mut sweep = None;
    for name in &cli.benches {
        let bench = benches::find(name).ok_or_else(|| unknown_benchmark(name))?;
        if requests.iter().any(|r| r.bench == bench.name()) {
            return Err(Error::usage(format!("{name} is named twice")));
        }
        let (request, spec) = bench_request(bench, &cli, &matches, &given_options)?;
        requests.push(request);
        sweep = spec;
    }
    let outputs = Outputs {
        json: cli.json.map(output_target),
        csv: cli.csv.map(output_target),
        plot: cli.plot,
    };
    if requests.len() > 1 {
        let several = |what: &str| {
            Error::usage(format!(
                "{what} keeps one benchmark's result: name one benchmark, or run them one by one"
            ))
        };
        if cli.repeat.is_some() {
            return Err(several("--repeat"));
        }
        if sweep.is_some() {
            return Err(several("--sweep"));
        }
        if outputs.stdout_taken() {
            return Err(several("--json - (or --csv -)"));
        }
        for (flag, path) in outputs.files() {
            if !path.is_dir() {
                return Err(Error::usage(format!(
                    "with several benchmarks, {flag} names a directory (one file per benchmark), \
                     and {} is none",
                    path.display()
                )));
            }
        }
    } else if cli.markdown {
        return Err(Error::usage(
            "--markdown prints the table of several benchmarks: name two or more",
        ));
    }
    check_outputs(&outputs)?;
    let repetition = Repetition {
        runs: cli.runs.unwrap_or(1) as u32,
        precision: cli.precision,
        max_runs: cli.max_runs as u32,
        max_secs: cli.max_time,
    };
    Ok(Command::Run(Box::new(RunRequest {
        benches: requests,
        repetition,
        sweep,
        outputs,
        markdown: cli.markdown,
        quiet: cli.quiet,
        verbose: cli.verbose,
        profile,
    })))
}

/// `--profile[=DIR]` and `--profile-freq`, checked.
fn profile_request(cli: &Cli, matches: &ArgMatches) -> Result<Option<ProfileRequest>> {
    let Some(dir) = &cli.profile else {
        if given(matches, "profile_freq") {
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

/// One named benchmark's configuration (and sweep) from the options given.
fn bench_request(
    bench: &'static dyn Benchmark,
    cli: &Cli,
    matches: &ArgMatches,
    given_options: &[(&'static str, u64)],
) -> Result<(BenchRequest, Option<SweepSpec>)> {
    let params = benches::resolve_params(bench, given_options)?;
    if !bench.has_consumers() {
        if cli.consumers > 0 {
            // The kernel runner's triggers refuse consumers too.
            let why = match bench.name().starts_with("trig-") {
                true => "its producers trigger and a counter counts, as in the kernel runner",
                false => "its producers do all the work",
            };
            return Err(Error::usage(format!(
                "{} has no consumers ({why}), so -c/--consumers must be 0 ({})",
                bench.name(),
                consumer_takers()
            )));
        }
        if cli.cons_affinity.is_some() {
            return Err(Error::usage(format!(
                "{} has no consumers for --cons-affinity to pin ({})",
                bench.name(),
                consumer_takers()
            )));
        }
    }
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
    if cli.repeat.is_some() {
        for (id, flag) in [("warmup", "-w/--warmup"), ("duration", "-d/--duration")] {
            if given(matches, id) {
                return Err(Error::usage(format!(
                    "--repeat runs a fixed amount of work, not for a time: {flag} does not apply"
                )));
            }
        }
    }
    let config = RunConfig {
        producers: producers as usize,
        consumers: cli.consumers as usize,
        warmup_secs: cli.warmup as u32,
        duration_secs: cli.duration as u32,
        affinity,
        repeat: cli.repeat,
        params,
        stacktrace: cli.stacktrace,
        pid_filter: cli.pid_filter,
    };
    let sweep = match &cli.sweep {
        Some(request) => {
            let spec = sweep::resolve(request, bench)?;
            // The swept value replaces the option's: both given is a mistake.
            let (set_by, flag) = match spec.param {
                SweepParam::Producers { .. } => (
                    ["producers", "parallelism"]
                        .into_iter()
                        .find(|id| given(matches, id)),
                    "-p/--producers (or --parallelism)".to_string(),
                ),
                SweepParam::Option(option) => (
                    given(matches, option.long).then_some(option.long),
                    format!("--{}", option.long),
                ),
            };
            if set_by.is_some() {
                return Err(Error::usage(format!(
                    "--sweep {} sets each run's {}; drop {flag}",
                    spec.param.name(),
                    spec.param.name()
                )));
            }
            // Each point is checked as its own run would be, before anything runs.
            drop(sweep::points(&spec, bench, &config)?);
            Some(spec)
        }
        None => {
            bench.validate(&config)?;
            None
        }
    };
    Ok((
        BenchRequest {
            bench: bench.name(),
            config,
        },
        sweep,
    ))
}

fn check_outputs(outputs: &Outputs) -> Result<()> {
    if outputs.json == Some(OutputTarget::Stdout) && outputs.csv == Some(OutputTarget::Stdout) {
        return Err(Error::usage(
            "--json - and --csv - both ask for standard output: only one may take it",
        ));
    }
    if let Some(plot) = &outputs.plot {
        if plot
            .extension()
            .is_none_or(|x| !x.eq_ignore_ascii_case("svg"))
        {
            return Err(Error::usage(format!(
                "--plot writes SVG: give a file name ending in .svg, not {}",
                plot.display()
            )));
        }
    }
    let files = outputs.files();
    for (i, (flag, path)) in files.iter().enumerate() {
        if let Some((other, _)) = files[..i]
            .iter()
            .find(|(_, earlier)| output::same_file(earlier, path))
        {
            return Err(Error::usage(format!(
                "{other} and {flag} both name {}: give each its own file",
                path.display()
            )));
        }
    }
    Ok(())
}

fn given_options(matches: &ArgMatches) -> Vec<(&'static str, u64)> {
    benches::all_options()
        .into_iter()
        .filter_map(|o| {
            if o.is_flag() {
                matches.get_flag(o.long).then_some((o.long, 1))
            } else {
                matches.get_one::<u64>(o.long).map(|&v| (o.long, v))
            }
        })
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

/// The completion script for `shell`, generated from the clap definitions.
pub fn completions(shell: Shell) -> Vec<u8> {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "bench", &mut script);
    script
}

/// The man page, in roff, generated from the clap definitions.
pub fn man_page() -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command())
        .render(&mut page)
        .map_err(|e| {
            Error::runtime(format!(
                "cannot render the man page: {}",
                output::reason(&e)
            ))
        })?;
    Ok(page)
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
