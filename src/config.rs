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

/// A timed run's tick: one sample a second, as the kernel's runner takes.
pub const SECOND_MS: u32 = 1000;
/// The environment variable that shortens the tick for the test suite's
/// shape-only runs (docs/testing.md): a run then takes `-w`+`-d` ticks of
/// this many milliseconds. Its result files say so, and `compare` and the
/// history refuse them: a rate over a tenth of a second is noisier, and the
/// option exists to check output, not to measure.
pub const TEST_TICK_ENV: &str = "BENCH_TEST_TICK_MS";
/// The test tick's bounds: short enough for a test, long enough that a
/// tick's lateness stays small beside it.
pub const TEST_TICK_MS: std::ops::RangeInclusive<u32> = 20..=1000;

/// The tick [`TEST_TICK_ENV`] asks for, checked: a second when unset.
pub fn tick_from_env() -> Result<u32, String> {
    let Some(value) = std::env::var_os(TEST_TICK_ENV) else {
        return Ok(SECOND_MS);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|ms| TEST_TICK_MS.contains(ms))
        .ok_or_else(|| {
            format!(
                "{TEST_TICK_ENV}={} is not a tick in milliseconds from {} to {} (it is for the test suite)",
                value.to_string_lossy(),
                TEST_TICK_MS.start(),
                TEST_TICK_MS.end()
            )
        })
}

/// An option that belongs to some benchmarks only (`--trig-batch-iters`,
/// `--rb-b2b`, ...). Every option is accepted by the command line parser; a
/// benchmark that does not declare it refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchOption {
    Number(NumberOption),
    Flag(FlagOption),
    Text(TextOption),
}

/// An option with a numeric value in a range (`--rb-batch-cnt 100`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumberOption {
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

/// An option without a value (`--rb-b2b`): off unless given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagOption {
    pub long: &'static str,
    pub help: &'static str,
    /// It changes only what is printed, not the work measured
    /// (`--machine-readable`): results with and without it are compared and
    /// kept in one history series. The one place that says so.
    pub output_only: bool,
}

/// An option with a word for its value (`--crypto-cipher 'cbc(aes)'`),
/// from 1 to `max_len` bytes. An empty `default` makes it required: a run
/// without it is refused by the benchmark's `validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextOption {
    pub long: &'static str,
    pub value_name: &'static str,
    pub help: &'static str,
    pub default: &'static str,
    pub max_len: usize,
    /// The values it takes, when they are a fixed list (refused otherwise,
    /// before anything runs, and listed in the help); empty: any text.
    pub choices: &'static [&'static str],
}

impl TextOption {
    /// Whether a run must give it: it has no default.
    pub const fn required(&self) -> bool {
        self.default.is_empty()
    }

    /// The help the command line shows: its text, its values when they are
    /// a fixed list, and its default (or that it has none).
    pub fn full_help(&self) -> String {
        let choices = match self.choices {
            [] => String::new(),
            values => format!(" (one of: {})", values.join(", ")),
        };
        match self.required() {
            true => format!("{}{choices} [required]", self.help),
            false => format!("{}{choices} [default {}]", self.help, self.default),
        }
    }
}

/// The value of one option: the kind of the option it belongs to. A text
/// given on the command line lives as long as the process (it is leaked
/// once, when parsed), so that values stay plain `Copy` data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionValue {
    Number(u64),
    Flag(bool),
    Text(&'static str),
}

impl OptionValue {
    /// The value as a number: result files and sweep tables keep a flag as
    /// 0 or 1, as they always have (the schema's integers); `None` for a text.
    pub fn as_number(self) -> Option<u64> {
        match self {
            OptionValue::Number(value) => Some(value),
            OptionValue::Flag(on) => Some(u64::from(on)),
            OptionValue::Text(_) => None,
        }
    }
}

impl BenchOption {
    pub const fn long(&self) -> &'static str {
        match self {
            BenchOption::Number(o) => o.long,
            BenchOption::Flag(o) => o.long,
            BenchOption::Text(o) => o.long,
        }
    }

    pub const fn help(&self) -> &'static str {
        match self {
            BenchOption::Number(o) => o.help,
            BenchOption::Flag(o) => o.help,
            BenchOption::Text(o) => o.help,
        }
    }

    /// Whether it changes only the output, not the work (its declaration's
    /// word: [`FlagOption::output_only`]).
    pub const fn output_only(&self) -> bool {
        match self {
            BenchOption::Flag(o) => o.output_only,
            BenchOption::Number(_) | BenchOption::Text(_) => false,
        }
    }

    /// What a run has when the option is not given.
    pub const fn default_value(&self) -> OptionValue {
        match self {
            BenchOption::Number(o) => OptionValue::Number(o.default),
            BenchOption::Flag(_) => OptionValue::Flag(false),
            BenchOption::Text(o) => OptionValue::Text(o.default),
        }
    }

    /// The option's value from a number (`--sweep rb-b2b=0,1`): a flag
    /// takes 0 and 1 only; `None` for any other.
    pub fn value_from_number(&self, value: u64) -> Option<OptionValue> {
        match (self, value) {
            (BenchOption::Number(_), value) => Some(OptionValue::Number(value)),
            (BenchOption::Flag(_), 0 | 1) => Some(OptionValue::Flag(value == 1)),
            (BenchOption::Flag(_), _) | (BenchOption::Text(_), _) => None,
        }
    }
}

/// Values of the chosen benchmark's options, every declared one filled in
/// (built by `benches::resolve_params`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<&'static str, OptionValue>);

impl Params {
    pub fn new(values: BTreeMap<&'static str, OptionValue>) -> Params {
        Params(values)
    }

    /// The value of a numeric option. Reading an option the benchmark did
    /// not declare is a bug in that benchmark, not a value of 0: it panics
    /// (one line, see main), and `--probe`'s test sets every benchmark up
    /// with its defaults.
    pub fn number(&self, option: &NumberOption) -> u64 {
        match self.0.get(option.long) {
            Some(&OptionValue::Number(value)) => value,
            _ => undeclared(option.long),
        }
    }

    /// Whether a flag was given; reading an undeclared one panics as above.
    pub fn flag(&self, option: &FlagOption) -> bool {
        match self.0.get(option.long) {
            Some(&OptionValue::Flag(on)) => on,
            _ => undeclared(option.long),
        }
    }

    /// The word of a text option; reading an undeclared one panics as above.
    pub fn text(&self, option: &TextOption) -> &'static str {
        match self.0.get(option.long) {
            Some(&OptionValue::Text(text)) => text,
            _ => undeclared(option.long),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, OptionValue)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
}

fn undeclared(long: &str) -> ! {
    panic!("a benchmark reads --{long}, which it does not declare as such")
}

/// Everything a run is configured with, after validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub producers: usize,
    pub consumers: usize,
    pub warmup_secs: u32,
    pub duration_secs: u32,
    /// The length of a timed run's tick ([`SECOND_MS`] unless the test
    /// suite's [`TEST_TICK_ENV`] shortened it): `-w` and `-d` count ticks.
    pub tick_ms: u32,
    pub affinity: Affinity,
    /// Fixed-work mode: run exactly this many producer operations in total.
    pub repeat: Option<u64>,
    pub params: Params,
    /// `--body KIND` (`-s` is `--body stack`): what the counting BPF program
    /// does per hit besides counting.
    pub body: Body,
    /// `--read-bytes`: what the read-user body reads per hit.
    pub read_bytes: u32,
    /// `--pid-filter`: uprobes fire for this process only.
    pub pid_filter: bool,
    /// `--latency`: producers time every operation.
    pub latency: bool,
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
            tick_ms: SECOND_MS,
            affinity: Affinity::None,
            repeat: None,
            params,
            body: Body::Count,
            read_bytes: DEFAULT_READ_BYTES,
            pid_filter: false,
            latency: false,
        }
    }
}

/// What a counting BPF program does per hit besides counting (`--body`). The
/// values are those of `bpf/body.h`, set in the program's read-only data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Body {
    /// Only the count: the trigger benchmarks' program.
    #[default]
    Count = 0,
    /// Two clock reads and a per-CPU array update: a latency tool.
    Ktime = 1,
    /// A hash map update keyed by thread id: a per-thread aggregation tool.
    Hash = 2,
    /// A 64-byte event reserved and submitted to a ring buffer that consumer
    /// threads drain: an event tracer.
    Ringbuf = 3,
    /// bpf_probe_read_user of `--read-bytes` from the probed thread's stack
    /// (and a USDT probe's arguments): a tracer reading arguments.
    ReadUser = 4,
    /// bpf_get_stack, as the kernel runner's `-s`: a profiler.
    Stack = 5,
    /// bpf_trace_printk, as perf's uprobe collection.
    Printk = 6,
}

/// `--read-bytes`: its default and its most, the per-CPU buffer's size in
/// `bpf/body.h`.
pub const DEFAULT_READ_BYTES: u32 = 64;
pub const MAX_READ_BYTES: u32 = 4096;

impl Body {
    /// Every body, in `--body`'s order.
    pub const ALL: [Body; 7] = [
        Body::Count,
        Body::Ktime,
        Body::Hash,
        Body::Ringbuf,
        Body::ReadUser,
        Body::Stack,
        Body::Printk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Body::Count => "count",
            Body::Ktime => "ktime",
            Body::Hash => "hash",
            Body::Ringbuf => "ringbuf",
            Body::ReadUser => "read-user",
            Body::Stack => "stack",
            Body::Printk => "printk",
        }
    }

    pub fn from_name(name: &str) -> Option<Body> {
        Body::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The body with this index in [`Body::ALL`] (a swept value).
    pub fn from_index(index: u64) -> Option<Body> {
        Body::ALL.get(usize::try_from(index).ok()?).copied()
    }

    pub fn index(self) -> u64 {
        self as u64
    }

    /// The value of `body` in `bpf/body.h`.
    pub fn bpf_value(self) -> u32 {
        self as u32
    }

    /// Every name, for messages: `count, ktime, ...`.
    pub fn names() -> String {
        Body::ALL.map(Body::name).join(", ")
    }
}

/// The parameter `--sweep` names, as parsed: typed before any benchmark is
/// known, resolved against each benchmark into a [`SweepParam`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepName {
    /// `producers`.
    Producers,
    /// `body`: the values are bodies, by name.
    Body,
    /// `consumers`.
    Consumers,
    /// Any other name: a benchmark's own option, or its name for the
    /// producer count (`parallelism`).
    Other(String),
}

impl SweepName {
    pub fn parse(name: &str) -> SweepName {
        match name {
            "producers" => SweepName::Producers,
            "body" => SweepName::Body,
            "consumers" => SweepName::Consumers,
            other => SweepName::Other(other.to_string()),
        }
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        match self {
            SweepName::Producers => "producers",
            SweepName::Body => "body",
            SweepName::Consumers => "consumers",
            SweepName::Other(name) => name,
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
    /// The probe body, by name; a value is the body's index in [`Body::ALL`].
    Body,
    /// The consumer count (`-c`), for the benchmarks that have consumers.
    Consumers,
}

impl SweepParam {
    /// The name the sweep is shown and kept under.
    pub fn name(&self) -> &'static str {
        match self {
            SweepParam::Producers { name } => name,
            SweepParam::Option(option) => option.long(),
            SweepParam::Body => "body",
            SweepParam::Consumers => "consumers",
        }
    }

    /// How a value is shown: the number, or a body's name.
    pub fn label(&self, value: u64) -> String {
        match (self, Body::from_index(value)) {
            (SweepParam::Body, Some(body)) => body.name().to_string(),
            _ => value.to_string(),
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

/// The outputs asked for, each by the long flag of its format (`json`, the
/// name of an exporter in `report::export::FORMATS`) with its target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    pub targets: Vec<(&'static str, OutputTarget)>,
}

impl Outputs {
    /// The target of the format `long`, if asked for.
    pub fn target(&self, long: &str) -> Option<&OutputTarget> {
        self.targets
            .iter()
            .find_map(|(format, target)| (*format == long).then_some(target))
    }

    /// An output takes stdout, so the text report goes to stderr.
    pub fn stdout_taken(&self) -> bool {
        self.targets.iter().any(|(_, t)| *t == OutputTarget::Stdout)
    }

    /// Every output that names a file, with its flag (`--json`).
    pub fn files(&self) -> Vec<(String, &std::path::Path)> {
        self.targets
            .iter()
            .filter_map(|(long, target)| match target {
                OutputTarget::File(path) => Some((format!("--{long}"), path.as_path())),
                OutputTarget::Stdout => None,
            })
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
    /// `--until-decided`: keep adding interleaved rounds until every change
    /// from the first benchmark is decided (different, or within ±this
    /// percentage), or the bounds are reached.
    pub until_decided: Option<f64>,
    pub max_runs: u32,
    pub max_secs: u64,
}

impl Repetition {
    /// Whether results are reported run by run, with run statistics.
    pub fn is_repeated(&self) -> bool {
        self.runs > 1 || self.is_open_ended()
    }

    /// Whether the rounds go on until a condition, bounded by `max_runs`
    /// and `max_secs`, rather than a fixed count.
    pub fn is_open_ended(&self) -> bool {
        self.precision.is_some() || self.until_decided.is_some()
    }

    /// The most rounds a run may take: `--runs`, or `--max-runs` under
    /// `--precision` or `--until-decided`.
    pub fn rounds(&self) -> u32 {
        match self.is_open_ended() {
            true => self.max_runs,
            false => self.runs,
        }
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
    /// The change, in %, the closing table plans rounds for (`--effect`).
    pub effect_pct: f64,
    pub quiet: bool,
    pub verbose: bool,
    /// `--profile`: sample each run's measured seconds.
    pub profile: Option<ProfileRequest>,
    /// `--history PATH`: append the results to this history.
    pub history: Option<std::path::PathBuf>,
    /// `--machine NAME`: the machine's name in the results, instead of the
    /// host's.
    pub machine: Option<String>,
}
