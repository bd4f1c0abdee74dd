//! What the command line asks for, once validated: a run's configuration, its
//! outputs, the limits and the defaults. Neutral ground: `cli` builds these,
//! `app`, `sweep`, `results` and the benchmarks read them; this module imports
//! none of them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::runner::affinity::Affinity;

/// Hard limits, stated in `--help` and enforced.
pub const MAX_THREADS: u64 = 1024;
pub const MAX_SECONDS: u64 = 86_400;

/// The defaults of a bare `bench NAME`, the kernel runner's: one source for
/// clap's `--help` and for [`RunConfig::defaults`].
pub const DEFAULT_WARMUP_SECS: u32 = 1;
pub const DEFAULT_DURATION_SECS: u32 = 5;
pub const DEFAULT_PRODUCERS: usize = 1;

/// A numeric option that belongs to some benchmarks only (`--trig-batch-iters`,
/// `--breakpoints`, ...). Every option is accepted by the command line parser;
/// a benchmark that does not declare it refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchOption {
    pub long: &'static str,
    pub short: Option<char>,
    pub value_name: &'static str,
    pub help: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
    /// Why `max` is the limit, when the reason is not obvious ("" if none).
    pub why_max: &'static str,
}

impl BenchOption {
    /// An option without a value (`--rb-b2b`): 1 when given, 0 otherwise.
    pub const fn flag(long: &'static str, help: &'static str) -> BenchOption {
        BenchOption {
            long,
            short: None,
            value_name: "",
            help,
            default: 0,
            min: 0,
            max: 1,
            why_max: "",
        }
    }

    pub fn is_flag(&self) -> bool {
        self.value_name.is_empty()
    }
}

/// Values of the chosen benchmark's options, every declared one filled in
/// (built by `benches::resolve_params`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<&'static str, u64>);

impl Params {
    pub fn new(values: BTreeMap<&'static str, u64>) -> Params {
        Params(values)
    }

    /// The value of `option`. Reading an option the benchmark did not declare
    /// is a bug in that benchmark, not a value of 0: it panics (one line, see
    /// main), and `--probe`'s test sets every benchmark up with its defaults.
    pub fn get(&self, option: &BenchOption) -> u64 {
        match self.0.get(option.long) {
            Some(&value) => value,
            None => panic!(
                "a benchmark reads --{}, which it does not declare",
                option.long
            ),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
}

/// Everything a run is configured with, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub producers: usize,
    pub consumers: usize,
    pub warmup_secs: u32,
    pub duration_secs: u32,
    pub affinity: Affinity,
    /// Fixed-work mode: run exactly this many producer operations in total.
    pub repeat: Option<u64>,
    pub params: Params,
    /// `-s/--stacktrace`: the counting programs also take a stack per hit.
    pub stacktrace: bool,
    /// `--pid-filter`: uprobes fire for this process only.
    pub pid_filter: bool,
}

impl RunConfig {
    /// The configuration a bare `bench NAME` runs with, given the benchmark's
    /// option defaults.
    pub fn defaults(params: Params) -> RunConfig {
        RunConfig {
            producers: DEFAULT_PRODUCERS,
            consumers: 0,
            warmup_secs: DEFAULT_WARMUP_SECS,
            duration_secs: DEFAULT_DURATION_SECS,
            affinity: Affinity::None,
            repeat: None,
            params,
            stacktrace: false,
            pid_filter: false,
        }
    }
}

/// What `--sweep` varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepParam {
    /// The producer count, under the name it was given (`producers`, or a
    /// benchmark's alias such as `parallelism`).
    Producers { name: &'static str },
    /// One of the benchmark's own options.
    Option(BenchOption),
}

impl SweepParam {
    /// The name the sweep is shown and kept under.
    pub fn name(&self) -> &'static str {
        match self {
            SweepParam::Producers { name } => name,
            SweepParam::Option(option) => option.long,
        }
    }
}

/// `--sweep PARAM=LIST`: the parameter, resolved against the benchmark, and
/// its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSpec {
    pub param: SweepParam,
    pub values: Vec<u64>,
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    File(PathBuf),
    /// `-`: on stdout, the text report then going to stderr.
    Stdout,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    pub json: Option<OutputTarget>,
    pub csv: Option<OutputTarget>,
    pub plot: Option<PathBuf>,
}

impl Outputs {
    /// An output takes stdout, so the text report goes to stderr.
    pub fn stdout_taken(&self) -> bool {
        [&self.json, &self.csv]
            .iter()
            .any(|t| **t == Some(OutputTarget::Stdout))
    }

    /// Every output that names a file, with its flag.
    pub fn files(&self) -> Vec<(&'static str, &std::path::Path)> {
        fn file(target: &Option<OutputTarget>) -> Option<&std::path::Path> {
            match target {
                Some(OutputTarget::File(path)) => Some(path.as_path()),
                _ => None,
            }
        }
        [
            ("--json", file(&self.json)),
            ("--csv", file(&self.csv)),
            ("--plot", self.plot.as_deref()),
        ]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path?)))
        .collect()
    }
}

/// `--profile-freq`'s default: samples per second per CPU, off the round
/// numbers that other periodic work (timer ticks at 100, 250, 1000 Hz) runs at.
pub const DEFAULT_PROFILE_FREQ_HZ: u64 = 999;
/// The most `--profile-freq` takes; the kernel may allow less
/// (kernel.perf_event_max_sample_rate), which is checked before a run.
pub const MAX_PROFILE_FREQ_HZ: u64 = 100_000;

/// `--profile[=DIR]`: sample where the measured seconds go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRequest {
    /// Where the folded stacks, flame graph and breakdown go; printed only
    /// when absent.
    pub dir: Option<PathBuf>,
    pub freq_hz: u64,
}

/// One benchmark (by its registry name) and how to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchRequest {
    pub bench: &'static str,
    pub config: RunConfig,
}

/// The most runs `--runs` and `--max-runs` take.
pub const MAX_RUNS: u64 = 1000;
/// `--max-runs`'s default: where `--precision` gives up.
pub const DEFAULT_MAX_RUNS: u32 = 20;
/// `--max-time`'s default, in seconds: `--precision`'s time budget.
pub const DEFAULT_MAX_SECS: u64 = 600;

/// How many independent runs: a fixed count, or as many as a stated
/// precision takes within bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Repetition {
    pub runs: u32,
    /// Keep adding runs until the 95 % interval's half-width is at most this
    /// percentage of the mean.
    pub precision: Option<f64>,
    pub max_runs: u32,
    pub max_secs: u64,
}

impl Repetition {
    /// Whether results are reported run by run, with run statistics.
    pub fn is_repeated(&self) -> bool {
        self.runs > 1 || self.precision.is_some()
    }
}

/// One invocation's runs: the benchmarks (interleaved when several), how
/// often, and where the results go.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRequest {
    pub benches: Vec<BenchRequest>,
    pub repetition: Repetition,
    pub sweep: Option<SweepSpec>,
    pub outputs: Outputs,
    /// The closing table of several benchmarks in Markdown.
    pub markdown: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// `--profile`: sample each run's measured seconds.
    pub profile: Option<ProfileRequest>,
}
