//! The command line: clap definitions, their translation into a validated
//! [`RunRequest`] (or another command), and the shell completions and man
//! page generated from them.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{
    Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum,
};

use crate::benches::{self, body, Benchmark, ProducersAlias};
use crate::calibrate::CalibrateArgs;
use crate::compare::CompareArgs;
use crate::config::{
    BenchOption, NumberOption, OptionValue, ProfileRequest, DEFAULT_PROFILE_FREQ_HZ,
    MAX_PROFILE_FREQ_HZ,
};
use crate::config::{
    BenchRequest, OutputTarget, Outputs, Repetition, RunConfig, RunRequest, SweepParam, SweepSpec,
    DEFAULT_DURATION_SECS, DEFAULT_MAX_RUNS, DEFAULT_MAX_SECS, DEFAULT_PRODUCERS,
    DEFAULT_WARMUP_SECS, MAX_RUNS, MAX_SECONDS, MAX_THREADS,
};
use crate::config::{Body, DEFAULT_READ_BYTES, MAX_READ_BYTES};
use crate::error::{Error, Result};
use crate::probe::{self, ProbeOptions};
use crate::report::{export, output};
use crate::runner::affinity::{parse_cpu_list, Affinity};
use crate::sweep::{self, SweepRequest};

/// What the figures of a report mean; in `--help` and docs/running.md.
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
    #[arg(short = 'l', long, conflicts_with_all = ["benches", "probe", PROBE_OUTPUT])]
    list: bool,

    /// Try benchmarks (load, attach, detach) and say which this kernel can
    /// run; with --json, write the outcomes as JSON. Exits 0 unless the tool
    /// itself failed.
    #[arg(long)]
    probe: bool,

    /// Print only the results, not the set-up chatter.
    #[arg(short = 'q', long)]
    quiet: bool,

    /// Let libbpf's debug log through to stderr.
    #[arg(short = 'v', long)]
    verbose: bool,

    /// What the counting BPF program does per hit besides counting: count,
    /// ktime, hash, ringbuf (drained by -c N consumers), read-user, stack,
    /// printk. Any body but count runs count beside it, interleaved, and
    /// ends with the body's cost per hit; `--list` marks the benchmarks that
    /// take it [--body]. Not a run option only: --probe takes it too.
    #[arg(long, value_name = "KIND", value_parser = BodyKinds)]
    body: Option<Body>,

    /// Everything that configures a run: `--list` and `--probe` refuse it
    /// all (the group of this struct), so that the list cannot drift.
    #[command(flatten)]
    run: RunArgs,
}

/// The output format `--probe` takes, for its outcomes.
const PROBE_OUTPUT: &str = "json";

/// The options of a run. Each is in the group [`RUN_OPTIONS`], which
/// `--list` and `--probe` conflict with: a new run option is refused there
/// by being declared here, with nothing to keep in step.
#[derive(Args, Debug)]
#[group(id = RUN_OPTIONS, multiple = true)]
struct RunArgs {
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

    /// With several benchmarks: add interleaved rounds until each one's
    /// change from the first is decided, different (its interval excludes no
    /// change) or equivalent (its interval lies within ±PCT %), judged at a
    /// level adjusted for the repeated looks (Bonferroni), or --max-runs or
    /// --max-time is reached.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true, value_parser = percentage,
          conflicts_with_all = ["runs", "precision"])]
    until_decided: Option<f64>,

    /// The most runs --precision or --until-decided may take.
    #[arg(long, value_name = "N", default_value_t = u64::from(DEFAULT_MAX_RUNS),
          allow_hyphen_values = true, value_parser = count(2, MAX_RUNS))]
    max_runs: u64,

    /// The time --precision or --until-decided may take, in seconds (no new
    /// run starts after it).
    #[arg(long, value_name = "SEC", default_value_t = DEFAULT_MAX_SECS,
          allow_hyphen_values = true, value_parser = seconds(1))]
    max_time: u64,

    /// Print the closing table of several benchmarks as Markdown.
    #[arg(long)]
    markdown: bool,

    /// The change the closing table of several benchmarks plans for: beside
    /// "no significant change", how many rounds would detect PCT percent.
    #[arg(long, value_name = "PCT", default_value_t = crate::stats::DEFAULT_EFFECT_PCT,
          allow_hyphen_values = true, value_parser = percentage)]
    effect: f64,

    /// Run once per value of PARAM (producers, or a numeric option of the
    /// benchmark) and print a table, e.g. producers=1,2,4 or breakpoints=0..4.
    #[arg(long, value_name = "PARAM=LIST", value_parser = sweep::parse_spec)]
    sweep: Option<SweepRequest>,

    /// Make the counting BPF programs also take a stack (bpf_get_stack) per
    /// hit, as the kernel runner's option does; for uprobes and USDT a user
    /// stack, which the kernel runner's does not take. The stack body in
    /// upstream's spelling, run alone (`--body stack` also runs count beside
    /// it). `--list` marks the benchmarks that take it [--body] (and
    /// [-s: user stack]).
    #[arg(short = 's', long)]
    stacktrace: bool,

    /// Bytes the read-user body reads per hit from the probed thread's stack.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true,
          value_parser = count(1, u64::from(MAX_READ_BYTES)))]
    read_bytes: Option<u64>,

    /// Attach uprobes for this process only (libbpf's pid argument), not for
    /// every process; `--list` marks the benchmarks that take it
    /// [--pid-filter].
    #[arg(long)]
    pid_filter: bool,

    /// Time every operation and print its latency distribution (p50 ...
    /// p99.99, max, in ns) before the summary; for the benchmarks where one
    /// operation is one hit (uprobes, USDT, the baselines, syscalls,
    /// breakpoint-enable, perf's uprobe collection). --plot then draws the
    /// percentile distribution.
    #[arg(long)]
    latency: bool,

    /// Sample the measured seconds (kernel and user stacks, on every CPU's
    /// cpu-clock) and print where a hit's time goes, before the summary;
    /// with =DIR (`--profile=DIR`, the '=' needed), also write folded stacks,
    /// a flame graph and the breakdown there, one set per run.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    profile: Option<Option<PathBuf>>,

    /// Samples per second per CPU for --profile.
    #[arg(long, value_name = "HZ", default_value_t = DEFAULT_PROFILE_FREQ_HZ,
          allow_hyphen_values = true, value_parser = count(1, MAX_PROFILE_FREQ_HZ))]
    profile_freq: u64,
}

/// The group of every option of a run (the fields of [`RunArgs`], the
/// benchmarks' own options, the outputs but --json).
const RUN_OPTIONS: &str = "run-options";

#[derive(Subcommand, Debug)]
enum Sub {
    /// Compare result files (--json) of two kernels, patches or machines.
    #[command(after_help = crate::compare::AFTER_HELP)]
    Compare(CompareArgs),
    /// Measure how small a change this machine can see for BENCHMARK: A/A
    /// and A/A' rounds (A' slowed by a known injected cost) under a time
    /// budget, and the --runs and -d to use.
    #[command(after_help = crate::calibrate::AFTER_HELP)]
    Calibrate(CalibrateArgs),
    /// Print a completion script for SHELL, e.g.
    /// `bench completions bash > /etc/bash_completion.d/bench`.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), e.g. `bench man | man -l -`; with a
    /// subcommand's name, that subcommand's page (bench-compare(1)).
    Man {
        #[arg(value_name = "SUBCOMMAND", value_parser = ["compare", "completions", "man"])]
        subcommand: Option<String>,
    },
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
    Completions(Shell),
    /// The man page of bench, or of one of its subcommands.
    Man(Option<String>),
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

/// `--body`'s names, offered to completions too; a wrong one is refused in
/// one line that lists them.
#[derive(Clone, Debug)]
struct BodyKinds;

impl TypedValueParser for BodyKinds {
    type Value = Body;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> std::result::Result<Body, clap::Error> {
        let name = clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)?;
        Body::from_name(&name).ok_or_else(|| {
            clap::Error::raw(
                ErrorKind::InvalidValue,
                format!(
                    "--body: '{name}' is not a body; the bodies are {}\n",
                    Body::names()
                ),
            )
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            Body::ALL.into_iter().map(|b| PossibleValue::new(b.name())),
        ))
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
        format!("taken by {}, and by --body ringbuf", takers.join(", "))
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
    for exporter in export::FORMATS {
        let mut arg = Arg::new(exporter.long())
            .long(exporter.long())
            .value_name(exporter.value_name())
            .help(exporter.help())
            .action(ArgAction::Set)
            .value_parser(clap::value_parser!(PathBuf));
        // --probe writes its outcomes as JSON, under the same flag.
        if exporter.long() != PROBE_OUTPUT {
            arg = arg.group(RUN_OPTIONS);
        }
        cmd = cmd.arg(arg);
    }
    cmd = add_bench_options(cmd);
    refuse_run_options_with(cmd, &[("list", &[]), ("probe", PROBE_TAKES)])
}

/// The options of a run that `--probe` takes too: it sets each benchmark up
/// as a run with them would be (`--body`, not a run option only, is outside
/// the group).
const PROBE_TAKES: &[&str] = &["stacktrace", "read_bytes", "pid_filter"];

/// Makes each of `commands` (--list, --probe) conflict with every option of
/// a run but those it takes, one by one, so that clap names the one given.
/// The options are the members of the group [`RUN_OPTIONS`]: derived, not
/// listed.
fn refuse_run_options_with(
    cmd: clap::Command,
    commands: &[(&'static str, &[&str])],
) -> clap::Command {
    let mut built = cmd.clone();
    built.build();
    let run_options: Vec<clap::Id> = built
        .get_groups()
        .filter(|group| group.get_id() == RUN_OPTIONS)
        .flat_map(|group| group.get_args().cloned())
        .collect();
    commands.iter().fold(cmd, |cmd, &(id, takes)| {
        let refused: Vec<clap::Id> = run_options
            .iter()
            .filter(|option| !takes.contains(&option.as_str()))
            .cloned()
            .collect();
        cmd.mut_arg(id, |arg| arg.conflicts_with_all(refused))
    })
}

/// Every benchmark's own options, under their own heading.
fn add_bench_options(mut cmd: clap::Command) -> clap::Command {
    for option in benches::all_options() {
        let option = match option {
            BenchOption::Number(option) => option,
            BenchOption::Flag(option) => {
                cmd = cmd.arg(
                    Arg::new(option.long)
                        .long(option.long)
                        .help(option.help)
                        .help_heading("Benchmark options")
                        .action(ArgAction::SetTrue)
                        .group(RUN_OPTIONS),
                );
                continue;
            }
        };
        let mut arg = Arg::new(option.long)
            .long(option.long)
            .value_name(option.value_name)
            .help(number_help(&option))
            .help_heading("Benchmark options")
            .allow_hyphen_values(true)
            .action(ArgAction::Set)
            .value_parser(count(0, u64::MAX))
            .group(RUN_OPTIONS);
        if let Some(short) = option.short {
            arg = arg.short(short);
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

/// An option's help with its default and range, or, where the benchmarks
/// that take it declare their own (`--attach-cnt`), a pointer to them.
fn number_help(option: &NumberOption) -> String {
    let same = benches::all()
        .flat_map(|b| b.options().iter())
        .all(|o| match o {
            BenchOption::Number(o) if o.long == option.long => {
                (o.default, o.min, o.max) == (option.default, option.min, option.max)
            }
            _ => true,
        });
    match same {
        true => format!(
            "{} [default {}, {}..={}]",
            option.help, option.default, option.min, option.max
        ),
        false => format!("{} [default and range per benchmark]", option.help),
    }
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

/// A run: the benchmarks with their configurations, checked, and what to do
/// with the results.
fn run_command(cli: Cli, matches: &ArgMatches) -> Result<RunRequest> {
    if cli.benches.is_empty() {
        return Err(Error::usage(
            "no benchmark named: give one, e.g. `bench trig-uprobe-nop` (see --list)",
        ));
    }
    check_combinations(&cli, matches)?;
    let profile = profile_request(&cli, matches)?;
    let given_options = given_options(matches);
    let body = chosen_body(&cli)?;
    let mut requests: Vec<BenchRequest> = Vec::with_capacity(cli.benches.len());
    let mut sweep = None;
    for name in &cli.benches {
        let bench = benches::find(name).ok_or_else(|| unknown_benchmark(name))?;
        if requests.iter().any(|r| r.bench == bench.name()) {
            return Err(Error::usage(format!("{name} is named twice")));
        }
        let (request, spec) = bench_request(bench, &cli, matches, &given_options, body)?;
        requests.push(request);
        sweep = spec;
    }
    if let ([only], None) = (&requests[..], &sweep) {
        sweep = body_comparison(only, &cli)?;
    }
    let outputs = outputs(matches);
    if requests.len() > 1 {
        check_several(cli.run.repeat.is_some(), sweep.is_some(), &outputs)?;
    }
    if cli.run.markdown && (sweep.is_some() || cli.run.repeat.is_some()) {
        return Err(Error::usage(
            "--markdown prints the closing table of timed runs; a sweep prints its own table, \
             and --repeat has none",
        ));
    }
    check_outputs(&outputs)?;
    Ok(RunRequest {
        benches: requests,
        repetition: Repetition {
            runs: cli.run.runs.unwrap_or(1) as u32,
            precision: cli.run.precision,
            until_decided: cli.run.until_decided,
            max_runs: cli.run.max_runs as u32,
            max_secs: cli.run.max_time,
        },
        sweep,
        outputs,
        markdown: cli.run.markdown,
        effect_pct: cli.run.effect,
        quiet: cli.quiet,
        verbose: cli.verbose,
        profile,
    })
}

/// Options that need or exclude one another.
fn check_combinations(cli: &Cli, matches: &ArgMatches) -> Result<()> {
    let needs_sweep = export::FORMATS
        .iter()
        .find(|e| e.needs_sweep() && matches.contains_id(e.long()) && given(matches, e.long()));
    // --latency draws the percentile distribution, sweep or not.
    if let (Some(exporter), None, false) = (needs_sweep, &cli.run.sweep, cli.run.latency) {
        return Err(Error::usage(format!(
            "{} draws a sweep: give --sweep PARAM=LIST too",
            exporter.flag()
        )));
    }
    let bodies_swept = cli.run.sweep.as_ref().is_some_and(|s| s.param == "body");
    if let (Some(exporter), true) = (needs_sweep, bodies_swept) {
        return Err(Error::usage(format!(
            "{} draws a sweep of numbers; a sweep of bodies ends with its table of costs instead",
            exporter.flag()
        )));
    }
    if cli.run.sweep.is_some() && cli.run.repeat.is_some() {
        return Err(Error::usage(
            "--sweep compares timed runs; it does not combine with --repeat",
        ));
    }
    if cli.run.until_decided.is_some() && cli.benches.len() < 2 {
        return Err(Error::usage(
            "--until-decided judges changes between benchmarks: name two or more, interleaved",
        ));
    }
    if cli.run.repeat.is_some() && (cli.run.runs.is_some() || cli.run.precision.is_some()) {
        return Err(Error::usage(
            "--runs and --precision repeat timed runs; they do not combine with --repeat",
        ));
    }
    for (id, flag) in [("max_runs", "--max-runs"), ("max_time", "--max-time")] {
        if given(matches, id) && cli.run.precision.is_none() && cli.run.until_decided.is_none() {
            return Err(Error::usage(format!(
                "{flag} bounds --precision or --until-decided: give one of them too"
            )));
        }
    }
    Ok(())
}

/// What several benchmarks (interleaved) cannot do.
fn check_several(repeat: bool, swept: bool, outputs: &Outputs) -> Result<()> {
    let several = |what: &str| {
        Error::usage(format!(
            "{what} keeps one benchmark's result: name one benchmark, or run them one by one"
        ))
    };
    if repeat {
        return Err(several("--repeat"));
    }
    if swept {
        return Err(several("--sweep"));
    }
    if outputs.stdout_taken() {
        return Err(several("an output to standard output (-)"));
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
    Ok(())
}

/// `--profile[=DIR]` and `--profile-freq`, checked.
fn profile_request(cli: &Cli, matches: &ArgMatches) -> Result<Option<ProfileRequest>> {
    let Some(dir) = &cli.run.profile else {
        if given(matches, "profile_freq") {
            return Err(Error::usage(
                "--profile-freq sets --profile's rate: give --profile too",
            ));
        }
        return Ok(None);
    };
    if cli.run.repeat.is_some() {
        return Err(Error::usage(
            "--profile samples the measured seconds of timed runs; it does not combine with --repeat",
        ));
    }
    // `--profile DIR` reads DIR as a benchmark: say how to give it, unless
    // the name is a near miss of a benchmark's.
    if dir.is_none() {
        let unknown = cli
            .benches
            .iter()
            .find(|name| benches::find(name).is_none());
        if let Some(name) = unknown {
            if name.contains('/') || Path::new(name).exists() {
                return Err(Error::usage(format!(
                    "'{name}' is not a benchmark; --profile takes its directory after '=': --profile={name}"
                )));
            }
            if benches::suggestions(name).is_empty() {
                return Err(Error::usage(format!(
                    "unknown benchmark '{name}'; if it is --profile's directory, write --profile={name}"
                )));
            }
        }
    }
    Ok(Some(ProfileRequest {
        dir: dir.clone(),
        freq_hz: cli.run.profile_freq,
    }))
}

/// One named benchmark's configuration (and sweep) from the options given.
fn bench_request(
    bench: &'static dyn Benchmark,
    cli: &Cli,
    matches: &ArgMatches,
    given_options: &[(&'static str, OptionValue)],
    body: Body,
) -> Result<(BenchRequest, Option<SweepSpec>)> {
    let params = benches::resolve_params(bench, given_options)?;
    let given_names: Vec<&str> = given_options.iter().map(|(name, _)| *name).collect();
    benches::check_option_needs(bench, &given_names, &params)?;
    check_consumers(bench, cli, body)?;
    let affinity =
        if cli.run.affinity || cli.run.prod_affinity.is_some() || cli.run.cons_affinity.is_some() {
            Affinity::Auto {
                producers: cli.run.prod_affinity.clone().map(|l| l.0),
                consumers: cli.run.cons_affinity.clone().map(|l| l.0),
            }
        } else {
            Affinity::None
        };
    if cli.run.repeat.is_some() {
        for (id, flag) in [("warmup", "-w/--warmup"), ("duration", "-d/--duration")] {
            if given(matches, id) {
                return Err(Error::usage(format!(
                    "--repeat runs a fixed amount of work, not for a time: {flag} does not apply"
                )));
            }
        }
    }
    let config = RunConfig {
        producers: producers(bench, cli)? as usize,
        consumers: match given(matches, "consumers") {
            true => cli.run.consumers as usize,
            false => bench.info().default_consumers,
        },
        warmup_secs: cli.run.warmup as u32,
        duration_secs: cli.run.duration as u32,
        affinity,
        repeat: cli.run.repeat,
        params,
        body,
        read_bytes: read_bytes(cli),
        pid_filter: cli.run.pid_filter,
        latency: cli.run.latency,
    };
    let sweep = match &cli.run.sweep {
        Some(request) => Some(sweep_spec(request, bench, matches, &config)?),
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

/// Consumers go only to benchmarks that have them, or to the ringbuf body.
fn check_consumers(bench: &dyn Benchmark, cli: &Cli, body: Body) -> Result<()> {
    let ringbuf_body = bench.takes_bodies() && bodies_in_play(cli, body).contains(&Body::Ringbuf);
    if bench.takes_bodies() {
        check_body_options(bench, cli, body)?;
    }
    if bench.has_consumers() || ringbuf_body {
        return Ok(());
    }
    if cli.run.consumers > 0 {
        // The kernel runner's triggers refuse consumers too.
        let why = match (
            bench.info().workers.why_no_consumers(),
            bench.takes_bodies(),
        ) {
            (Some(why), true) => {
                format!("{why}; only --body ringbuf has consumers, to drain its events")
            }
            (why, _) => why.unwrap_or_default().to_string(),
        };
        return Err(Error::usage(format!(
            "{} has no consumers ({why}), so -c/--consumers must be 0 ({})",
            bench.name(),
            consumer_takers()
        )));
    }
    if cli.run.cons_affinity.is_some() {
        return Err(Error::usage(format!(
            "{} has no consumers for --cons-affinity to pin ({})",
            bench.name(),
            consumer_takers()
        )));
    }
    Ok(())
}

/// `--read-bytes`, or its default.
fn read_bytes(cli: &Cli) -> u32 {
    cli.run.read_bytes.map_or(DEFAULT_READ_BYTES, |n| n as u32)
}

/// `-s` is `--body stack`; both given must agree.
fn chosen_body(cli: &Cli) -> Result<Body> {
    match (cli.run.stacktrace, cli.body) {
        (true, Some(body)) if body != Body::Stack => Err(Error::usage(format!(
            "-s/--stacktrace is --body stack: it does not combine with --body {}",
            body.name()
        ))),
        (true, _) => Ok(Body::Stack),
        (false, body) => Ok(body.unwrap_or_default()),
    }
}

/// The bodies a run of `cli` uses: the swept ones, or the one given.
fn bodies_in_play(cli: &Cli, body: Body) -> Vec<Body> {
    match &cli.run.sweep {
        Some(request) if request.param == "body" => request
            .values
            .iter()
            .filter_map(|&v| Body::from_index(v))
            .collect(),
        _ => vec![body],
    }
}

/// The options that go with a body: consumers drain the ringbuf body's ring
/// and nothing else; --read-bytes sizes the read-user body's read.
fn check_body_options(bench: &dyn Benchmark, cli: &Cli, body: Body) -> Result<()> {
    let bodies = bodies_in_play(cli, body);
    let ringbuf = bodies.contains(&Body::Ringbuf);
    let name = bench.name();
    if ringbuf && cli.run.consumers == 0 {
        return Err(Error::usage(format!(
            "the ringbuf body's events are drained by consumer threads: give -c 1 (or more) \
             for {name} (a ring nobody drains measures drops, not a tracer)"
        )));
    }
    if cli.run.consumers > body::MAX_CONSUMERS as u64 {
        return Err(Error::usage(format!(
            "the ringbuf body takes at most {} consumers, got -c {}",
            body::MAX_CONSUMERS,
            cli.run.consumers
        )));
    }
    if cli.run.read_bytes.is_some() && !bodies.contains(&Body::ReadUser) {
        return Err(Error::usage(
            "--read-bytes sizes the read-user body's read: give --body read-user too",
        ));
    }
    Ok(())
}

/// `--body KIND` of one benchmark's timed run, KIND not the count: the count
/// runs beside it, interleaved as a sweep of two bodies, so that the body's
/// cost per hit is measured. `-s` is upstream's option and runs alone.
fn body_comparison(request: &BenchRequest, cli: &Cli) -> Result<Option<SweepSpec>> {
    let body = match cli.body {
        Some(body) if body != Body::Count && cli.run.repeat.is_none() => body,
        _ => return Ok(None),
    };
    let Some(bench) = benches::find(request.bench).filter(|b| b.takes_bodies()) else {
        return Ok(None);
    };
    let spec = SweepSpec {
        param: SweepParam::Body,
        values: vec![Body::Count.index(), body.index()],
    };
    drop(sweep::points(&spec, bench, &request.config)?);
    Ok(Some(spec))
}

/// -p, or --parallelism for the benchmarks that take that name for it.
fn producers(bench: &dyn Benchmark, cli: &Cli) -> Result<u64> {
    match cli.run.parallelism {
        None => Ok(cli.run.producers),
        Some(n) if bench.producers_alias() == Some(ProducersAlias::Parallelism) => Ok(n),
        Some(_) => {
            let takers: Vec<&str> = benches::all()
                .filter(|b| b.producers_alias() == Some(ProducersAlias::Parallelism))
                .map(|b| b.name())
                .collect();
            Err(Error::usage(format!(
                "--parallelism is not an option of {}; use -p/--producers (it is taken by {})",
                bench.name(),
                takers.join(", ")
            )))
        }
    }
}

/// `--sweep` resolved against `bench`, every point checked as its own run
/// would be, before anything runs.
fn sweep_spec(
    request: &SweepRequest,
    bench: &'static dyn Benchmark,
    matches: &ArgMatches,
    config: &RunConfig,
) -> Result<SweepSpec> {
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
            given(matches, option.long()).then_some(option.long()),
            format!("--{}", option.long()),
        ),
        SweepParam::Body => (
            (given(matches, "body") || given(matches, "stacktrace")).then_some("body"),
            "--body (or -s)".to_string(),
        ),
        SweepParam::Consumers => (
            given(matches, "consumers").then_some("consumers"),
            "-c/--consumers".to_string(),
        ),
    };
    if set_by.is_some() {
        return Err(Error::usage(format!(
            "--sweep {} sets each run's {}; drop {flag}",
            spec.param.name(),
            spec.param.name()
        )));
    }
    drop(sweep::points(&spec, bench, config)?);
    Ok(spec)
}

/// The outputs given, each with its target.
fn outputs(matches: &ArgMatches) -> Outputs {
    let targets = export::FORMATS
        .iter()
        .filter_map(|exporter| {
            let path = matches.get_one::<PathBuf>(exporter.long())?.clone();
            let target = match exporter.takes_stdout() {
                true => output_target(path),
                false => OutputTarget::File(path),
            };
            Some((exporter.long(), target))
        })
        .collect();
    Outputs { targets }
}

fn check_outputs(outputs: &Outputs) -> Result<()> {
    let on_stdout: Vec<&str> = outputs
        .targets
        .iter()
        .filter(|(_, target)| *target == OutputTarget::Stdout)
        .map(|(long, _)| *long)
        .collect();
    if let [first, second, ..] = on_stdout[..] {
        return Err(Error::usage(format!(
            "--{first} - and --{second} - both ask for standard output: only one may take it"
        )));
    }
    for (long, target) in &outputs.targets {
        if let (Some(exporter), OutputTarget::File(path)) = (export::format(long), target) {
            exporter.check_name(path).map_err(Error::usage)?;
        }
    }
    let targets: Vec<(String, OutputTarget)> = outputs
        .targets
        .iter()
        .map(|(long, target)| (format!("--{long}"), target.clone()))
        .collect();
    output::check_distinct(&targets)
}

fn given_options(matches: &ArgMatches) -> Vec<(&'static str, OptionValue)> {
    benches::all_options()
        .into_iter()
        .filter_map(|o| match o {
            BenchOption::Flag(o) => matches
                .get_flag(o.long)
                .then_some((o.long, OptionValue::Flag(true))),
            BenchOption::Number(o) => matches
                .get_one::<u64>(o.long)
                .map(|&v| (o.long, OptionValue::Number(v))),
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

/// The pages of the manual (docs/, beside README.md in the source tree) each
/// man page points to in its SEE ALSO section: the pages README.md links to.
fn manual_pages(page: &str) -> &'static [(&'static str, &'static str)] {
    match page {
        "bench-compare" => &[
            ("docs/results.md", "keep, compare and sweep results"),
            (
                "docs/sensitivity.md",
                "is the difference real: runs, interleaving, calibrate",
            ),
            ("docs/exit-codes.md", "exit codes"),
        ],
        "bench-completions" | "bench-man" => &[
            ("docs/README.md", "the index of the manual"),
            (
                "docs/running.md",
                "running a benchmark and reading a result",
            ),
        ],
        _ => &[
            ("docs/README.md", "the index of the manual"),
            (
                "docs/running.md",
                "running a benchmark and reading a result: options, figures, privileges",
            ),
            (
                "docs/benchmarks.md",
                "the benchmark families, and what this kernel can run",
            ),
            ("docs/attach.md", "attach and detach, churn"),
            ("docs/latency.md", "the latency of a hit and its tail"),
            (
                "docs/bodies.md",
                "probe bodies: what a tracer costs per hit",
            ),
            ("docs/results.md", "keep, compare and sweep results"),
            (
                "docs/sensitivity.md",
                "is the difference real: runs, interleaving, calibrate",
            ),
            ("docs/kernels.md", "other kernels in a VM"),
            ("docs/profiles.md", "where the time goes"),
            ("docs/scripts.md", "the scripts"),
            ("docs/exit-codes.md", "exit codes, interrupts and leftovers"),
        ],
    }
}

/// The SEE ALSO section of man page `page`, in roff: the manual's pages, by
/// their paths in the source tree.
fn see_also(page: &str) -> String {
    // The paths and descriptions hold no roff control characters at a line's
    // start; a hyphen is written \- as clap_mangen writes it.
    let roman = |text: &str| text.replace('-', "\\-");
    let mut roff = String::from(
        ".SH \"SEE ALSO\"\nThe manual, in the source tree of bench (README.md, then docs/):\n",
    );
    for (path, what) in manual_pages(page) {
        roff.push_str(&format!(".TP\n{}\n{}\n", roman(path), roman(what)));
    }
    roff
}

/// The man page, in roff, generated from the clap definitions: bench(1),
/// or with a subcommand's name its own page (bench-compare(1) and so on, the
/// pages bench(1) points to). Each ends with the manual's pages (SEE ALSO).
pub fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>> {
    let cmd = command();
    let (cmd, page_name) = match subcommand {
        None => (cmd, "bench"),
        Some(name) => {
            let sub = cmd
                .find_subcommand(name)
                .cloned()
                .ok_or_else(|| Error::usage(format!("bench has no subcommand '{name}'")))?;
            // clap names are static: one per subcommand with a page.
            let page: &'static str = match name {
                "compare" => "bench-compare",
                "completions" => "bench-completions",
                _ => "bench-man",
            };
            (sub.name(page).bin_name(format!("bench {name}")), page)
        }
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut page).map_err(|e| {
        Error::runtime(format!(
            "cannot render the man page: {}",
            output::reason(&e)
        ))
    })?;
    // SEE ALSO goes before VERSION, where man pages keep it.
    let see_also = see_also(page_name);
    let at = find_bytes(&page, b"\n.SH VERSION\n").map_or(page.len(), |at| at + 1);
    page.splice(at..at, see_also.into_bytes());
    Ok(page)
}

/// Where `needle` first occurs in `haystack`.
fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
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
