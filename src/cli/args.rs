//! The clap definitions: the options of a run, the subcommands, their value
//! parsers, and the command built from them and the registry.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, Args, CommandFactory, Parser, Subcommand};

use super::Shell;
use crate::benches;
use crate::calibrate::CalibrateArgs;
use crate::compare::CompareArgs;
use crate::config::{
    BenchOption, Body, NumberOption, DEFAULT_DURATION_SECS, DEFAULT_MAX_RUNS, DEFAULT_MAX_SECS,
    DEFAULT_PRODUCERS, DEFAULT_PROFILE_FREQ_HZ, DEFAULT_WARMUP_SECS, MAX_PROFILE_FREQ_HZ,
    MAX_READ_BYTES, MAX_RUNS, MAX_SECONDS, MAX_THREADS,
};
use crate::report::export;
use crate::runner::affinity::parse_cpu_list;
use crate::sweep::{self, SweepRequest};

/// What the figures of a report mean; in `--help` and docs/running.md.
pub(super) const FIGURES: &str =
    "Figures: a rate (M/s) counts all producers together; '/prod' is one \
producer's share of it. 'usecs/op' is wall-clock time divided by the operations of all \
producers (perf bench's usecs/op), in timed and --repeat runs alike; 'ns/op/prod' (the \
Summary's latency) and perf's 'usecs/op/cpu' are one producer's time per operation: \
usecs/op times the producers.";

pub(super) const AFTER_HELP: &str =
    "Run `bench --list` for the benchmarks; `bench compare --help` for \
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
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Option<Sub>,

    /// The benchmark to run (see --list); several run interleaved, round by
    /// round, and end with a table of each one's change from the first. With
    /// --probe, the benchmarks to try (all when none is named).
    #[arg(value_name = "BENCHMARK", value_parser = BenchNames, hide_possible_values = true)]
    pub(super) benches: Vec<String>,

    /// List the benchmarks with a one-line description each.
    #[arg(short = 'l', long, conflicts_with_all = ["benches", "probe", PROBE_OUTPUT])]
    pub(super) list: bool,

    /// Try benchmarks (load, attach, detach) and say which this kernel can
    /// run; with --json, write the outcomes as JSON. Exits 0 unless the tool
    /// itself failed.
    #[arg(long)]
    pub(super) probe: bool,

    /// Print only the results, not the set-up chatter.
    #[arg(short = 'q', long)]
    pub(super) quiet: bool,

    /// Let libbpf's debug log through to stderr.
    #[arg(short = 'v', long)]
    pub(super) verbose: bool,

    /// What the counting BPF program does per hit besides counting: count,
    /// ktime, hash, ringbuf (drained by -c N consumers), read-user, stack,
    /// printk. Any body but count runs count beside it, interleaved, and
    /// ends with the body's cost per hit; `--list` marks the benchmarks that
    /// take it [--body]. Not a run option only: --probe takes it too.
    #[arg(long, value_name = "KIND", value_parser = BodyKinds)]
    pub(super) body: Option<Body>,

    /// Everything that configures a run: `--list` and `--probe` refuse it
    /// all (the group of this struct), so that the list cannot drift.
    #[command(flatten)]
    pub(super) run: RunArgs,
}

/// The output format `--probe` takes, for its outcomes.
pub(super) const PROBE_OUTPUT: &str = "json";

/// The options of a run. Each is in the group [`RUN_OPTIONS`], which
/// `--list` and `--probe` conflict with: a new run option is refused there
/// by being declared here, with nothing to keep in step.
#[derive(Args, Debug)]
#[group(id = RUN_OPTIONS, multiple = true)]
pub(super) struct RunArgs {
    /// Warm-up seconds, run but left out of the summary.
    #[arg(short = 'w', long, value_name = "SEC", default_value_t = u64::from(DEFAULT_WARMUP_SECS),
          allow_hyphen_values = true, value_parser = seconds(0))]
    pub(super) warmup: u64,

    /// Measured seconds, one sample each.
    #[arg(short = 'd', long, value_name = "SEC", default_value_t = u64::from(DEFAULT_DURATION_SECS),
          allow_hyphen_values = true, value_parser = seconds(1))]
    pub(super) duration: u64,

    /// Producer threads.
    #[arg(short = 'p', long, value_name = "N", default_value_t = DEFAULT_PRODUCERS as u64,
          allow_hyphen_values = true, value_parser = threads(1))]
    pub(super) producers: u64,

    /// Another name for --producers, for the benchmarks that take it
    /// (breakpoint-thread, after perf).
    #[arg(long, value_name = "N", conflicts_with = "producers",
          allow_hyphen_values = true, value_parser = threads(1))]
    pub(super) parallelism: Option<u64>,

    /// Consumer threads (the help names the benchmarks that have them).
    #[arg(short = 'c', long, value_name = "N", default_value_t = 0,
          allow_hyphen_values = true, value_parser = threads(0))]
    pub(super) consumers: u64,

    /// Pin threads to online CPUs: consumers first, then producers, wrapping.
    #[arg(short = 'a', long)]
    pub(super) affinity: bool,

    /// Pin producers to these CPUs, e.g. 0-3,5 (implies -a).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true, value_parser = cpu_list)]
    pub(super) prod_affinity: Option<CpuList>,

    /// Pin consumers to these CPUs (implies -a).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true, value_parser = cpu_list)]
    pub(super) cons_affinity: Option<CpuList>,

    /// Fixed work: run the producers' operation exactly N times in total (a
    /// call, a test run of --trig-batch-iters triggers, a batch of threads, a
    /// toggle), then report the time taken and what was counted.
    #[arg(short = 'r', long, value_name = "N", allow_hyphen_values = true,
          value_parser = count(1, u64::MAX))]
    pub(super) repeat: Option<u64>,

    /// Independent runs: set-up, warm-up, measurement and tear-down N times;
    /// the run means give the mean, the between-run sd and a 95 % confidence
    /// interval.
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = count(1, MAX_RUNS))]
    pub(super) runs: Option<u64>,

    /// Add runs until the 95 % confidence interval is within PCT % of the
    /// mean, or --max-runs or --max-time is reached.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true, value_parser = percentage,
          conflicts_with = "runs")]
    pub(super) precision: Option<f64>,

    /// With several benchmarks: add interleaved rounds until each one's
    /// change from the first is decided, different (its interval excludes no
    /// change) or equivalent (its interval lies within ±PCT %), judged at a
    /// level adjusted for the repeated looks (Bonferroni), or --max-runs or
    /// --max-time is reached.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true, value_parser = percentage,
          conflicts_with_all = ["runs", "precision"])]
    pub(super) until_decided: Option<f64>,

    /// The most runs --precision or --until-decided may take.
    #[arg(long, value_name = "N", default_value_t = u64::from(DEFAULT_MAX_RUNS),
          allow_hyphen_values = true, value_parser = count(2, MAX_RUNS))]
    pub(super) max_runs: u64,

    /// The time --precision or --until-decided may take, in seconds (no new
    /// run starts after it).
    #[arg(long, value_name = "SEC", default_value_t = DEFAULT_MAX_SECS,
          allow_hyphen_values = true, value_parser = seconds(1))]
    pub(super) max_time: u64,

    /// Print the closing table of several benchmarks as Markdown.
    #[arg(long)]
    pub(super) markdown: bool,

    /// The change the closing table of several benchmarks plans for: beside
    /// "no significant change", how many rounds would detect PCT percent.
    #[arg(long, value_name = "PCT", default_value_t = crate::stats::DEFAULT_EFFECT_PCT,
          allow_hyphen_values = true, value_parser = percentage)]
    pub(super) effect: f64,

    /// Run once per value of PARAM (producers, or a numeric option of the
    /// benchmark) and print a table, e.g. producers=1,2,4 or breakpoints=0..4.
    #[arg(long, value_name = "PARAM=LIST", value_parser = sweep::parse_spec)]
    pub(super) sweep: Option<SweepRequest>,

    /// Make the counting BPF programs also take a stack (bpf_get_stack) per
    /// hit, as the kernel runner's option does; for uprobes and USDT a user
    /// stack, which the kernel runner's does not take. The stack body in
    /// upstream's spelling, run alone (`--body stack` also runs count beside
    /// it). `--list` marks the benchmarks that take it [--body] (and
    /// [-s: user stack]).
    #[arg(short = 's', long)]
    pub(super) stacktrace: bool,

    /// Bytes the read-user body reads per hit from the probed thread's stack.
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true,
          value_parser = count(1, u64::from(MAX_READ_BYTES)))]
    pub(super) read_bytes: Option<u64>,

    /// Attach uprobes for this process only (libbpf's pid argument), not for
    /// every process; `--list` marks the benchmarks that take it
    /// [--pid-filter].
    #[arg(long)]
    pub(super) pid_filter: bool,

    /// Time every operation and print its latency distribution (p50 ...
    /// p99.99, max, in ns) before the summary; for the benchmarks where one
    /// operation is one hit (uprobes, USDT, the baselines, syscalls,
    /// breakpoint-enable, perf's uprobe collection). --plot then draws the
    /// percentile distribution.
    #[arg(long)]
    pub(super) latency: bool,

    /// Sample the measured seconds (kernel and user stacks, on every CPU's
    /// cpu-clock) and print where a hit's time goes, before the summary;
    /// with =DIR (`--profile=DIR`, the '=' needed), also write folded stacks,
    /// a flame graph and the breakdown there, one set per run.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub(super) profile: Option<Option<PathBuf>>,

    /// Append the results to the history at PATH (a file, made when
    /// missing, or a postgresql:// URL; a server away spools them): see
    /// `bench history --help`.
    #[arg(long, value_name = "PATH")]
    pub(super) history: Option<PathBuf>,

    /// The machine's name in the result file and the history (default: the
    /// host's name): one name a machine, where host names come and go.
    #[arg(long, value_name = "NAME", value_parser = machine_name)]
    pub(super) machine: Option<String>,

    /// Samples per second per CPU for --profile.
    #[arg(long, value_name = "HZ", default_value_t = DEFAULT_PROFILE_FREQ_HZ,
          allow_hyphen_values = true, value_parser = count(1, MAX_PROFILE_FREQ_HZ))]
    pub(super) profile_freq: u64,
}

/// The group of every option of a run (the fields of [`RunArgs`], the
/// benchmarks' own options, the outputs but --json).
pub(super) const RUN_OPTIONS: &str = "run-options";

#[derive(Subcommand, Debug)]
pub(super) enum Sub {
    /// Compare result files (--json) of two kernels, patches or machines.
    #[command(after_help = crate::compare::AFTER_HELP)]
    Compare(CompareArgs),
    /// Measure how small a change this machine can see for BENCHMARK: A/A
    /// and A/A' rounds (A' slowed by a known injected cost) under a time
    /// budget, and the --runs and -d to use.
    #[command(after_help = crate::calibrate::AFTER_HELP)]
    Calibrate(CalibrateArgs),
    /// Keep results over kernels, versions and machines, find where a number
    /// changed, show it on a page.
    History(crate::history::args::HistoryArgs),
    /// Write result files (--json) in a tracker's format: Bencher's BMF,
    /// Apache Otava's CSV, github-action-benchmark's JSON.
    Export(crate::history::args::ExportArgs),
    /// Print a completion script for SHELL, e.g.
    /// `bench completions bash > /etc/bash_completion.d/bench`.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), e.g. `bench man | man -l -`; with a
    /// subcommand's name, that subcommand's page (bench-compare(1)).
    Man {
        #[arg(value_name = "SUBCOMMAND", value_parser = ["compare", "calibrate", "history", "export", "completions", "man"])]
        subcommand: Option<String>,
    },
}

/// Benchmark names: any string is taken (an unknown one gets suggestions
/// later), but the registry's names are offered to completions.
#[derive(Clone, Debug)]
pub(super) struct BenchNames;

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

pub(super) fn count(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
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

/// A family option's value: decimal, or hexadecimal after `0x`, as the
/// kernel runner's `strtol(arg, NULL, 0)` takes flags (`--map_flags 0x1`).
/// Its range is checked against the benchmark's own limits later.
pub(super) fn family_number(text: &str) -> std::result::Result<u64, String> {
    let trimmed = text.trim();
    match trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).map_err(|err| match err.kind() {
            std::num::IntErrorKind::PosOverflow => format!("too large: at most {}", u64::MAX),
            _ => format!("expected a whole number, got '{text}'"),
        }),
        None => count(0, u64::MAX)(text),
    }
}

/// `--body`'s names, offered to completions too; a wrong one is refused in
/// one line that lists them.
#[derive(Clone, Debug)]
pub(super) struct BodyKinds;

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

/// A machine's name: 1 to 64 characters, none of them a control
/// character (it is printed, and it names a series).
pub(super) fn machine_name(text: &str) -> std::result::Result<String, String> {
    match text.chars().count() {
        1..=64 if !text.chars().any(char::is_control) => Ok(text.to_string()),
        _ => Err("expected a name of 1 to 64 characters, no control characters".into()),
    }
}

pub(super) fn percentage(text: &str) -> std::result::Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a percentage such as 3 or 0.5, got '{text}'"))?;
    if value.is_nan() || value <= 0.0 || value >= 100.0 {
        return Err(format!("must be more than 0 and less than 100, got {text}"));
    }
    Ok(value)
}

pub(super) fn seconds(min: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    count(min, MAX_SECONDS)
}

pub(super) fn threads(min: u64) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone {
    count(min, MAX_THREADS)
}

/// A parsed CPU list; a newtype so that clap takes it as one value.
#[derive(Clone, Debug)]
pub(super) struct CpuList(pub(super) Vec<usize>);

pub(super) fn cpu_list(text: &str) -> std::result::Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

/// The benchmarks that take consumers, for `-c`'s help and refusals.
pub(super) fn consumer_takers() -> String {
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
pub(super) const PROBE_TAKES: &[&str] = &["stacktrace", "read_bytes", "pid_filter"];

/// Makes each of `commands` (--list, --probe) conflict with every option of
/// a run but those it takes, one by one, so that clap names the one given.
/// The options are the members of the group [`RUN_OPTIONS`]: derived, not
/// listed.
pub(super) fn refuse_run_options_with(
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
pub(super) fn add_bench_options(mut cmd: clap::Command) -> clap::Command {
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
            BenchOption::Text(option) => {
                cmd = cmd.arg(
                    Arg::new(option.long)
                        .long(option.long)
                        .value_name(option.value_name)
                        .help(option.full_help())
                        .help_heading("Benchmark options")
                        .action(ArgAction::Set)
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
            .value_parser(family_number)
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
pub(super) fn number_help(option: &NumberOption) -> String {
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

#[cfg(test)]
mod tests {
    use super::family_number;

    #[test]
    fn family_numbers_are_decimal_or_hexadecimal() {
        assert_eq!(family_number("17"), Ok(17));
        assert_eq!(family_number("0x1"), Ok(1));
        assert_eq!(family_number("0XfF"), Ok(255));
        assert!(family_number("0x").is_err());
        assert!(family_number("0x1g").is_err());
        assert!(family_number("-1").is_err());
        assert_eq!(
            family_number("0x10000000000000000"),
            Err(format!("too large: at most {}", u64::MAX))
        );
    }
}
