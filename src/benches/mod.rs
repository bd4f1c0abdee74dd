//! The benchmark interface and the one registry that lists every benchmark.
//!
//! A benchmark is a plain value: an [`Info`] that says what it is, the
//! channels it reads, the figures a run is judged by and the lines it
//! prints (all as data), plus whatever its family needs to set it up. Each
//! family lists its benchmarks in one table (`BENCHES`); [`all`] chains the
//! tables. Nothing here prints: `report/` prints the declared [`Lines`].

pub mod applies;
pub mod attach;
pub mod bloom;
pub mod body;
pub mod breakpoint;
pub mod churn;
pub mod count;
pub mod crypto;
pub mod hashmap;
pub mod helper_trigger;
pub mod helpers;
pub mod hold;
pub mod htab_mem;
pub mod local_storage;
pub mod local_storage_create;
pub mod lpm;
pub mod memory;
pub mod perf_uprobe;
pub mod rename;
mod rhash;
pub mod ringbuf;
pub mod sockmap;
pub mod syscall;
pub mod tasks_trace;
pub mod timing;
pub mod trigger;
#[cfg(test)]
mod units;
pub mod uprobe;
pub mod usdt;
pub mod xdp_lb;

use std::collections::BTreeMap;

pub use applies::{Applies, RunOption};

use crate::bpf::Needs;
use crate::channels::{self, Channel};
use crate::config::{BenchOption, FlagOption, OptionValue, Params, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Figure};
use crate::lines::{self, Lines};
use crate::runner::SetUp;

/// `--nr_entries`'s help: one option of three families (each keeps its own
/// default), which the command line shows once.
pub const NR_ENTRIES_HELP: &str = "Entries in the benchmark's maps: the values a bloom walk \
    visits and its maps' keys (bloom-*, hashmap-*-bloom; default 1000), the keys looked up \
    (bpf-hashmap-lookup; default 500), the trie's keys (lpm-trie-*; required); maps within half \
    the available memory, and a bloom walk within 0.5 s";

/// Which threads do a benchmark's work, and so what `-c` means to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    /// Producers trigger and a counter counts: the kernel runner's `trig-*`.
    Triggers,
    /// Producers do all the work.
    Producers,
    /// Producers and consumer threads (`-c`).
    ProducersAndConsumers,
    /// No producers: the run is one attach cycle on the main thread (attach,
    /// verify, detach), timed as a whole.
    Cycles,
}

impl Workers {
    /// Why a benchmark takes no consumers, for the refusal of `-c`; `None`
    /// when it takes them.
    pub fn why_no_consumers(self) -> Option<&'static str> {
        match self {
            Workers::Triggers => {
                Some("its producers trigger and a counter counts, as in the kernel runner")
            }
            Workers::Producers => Some("its producers do all the work"),
            Workers::ProducersAndConsumers => None,
            Workers::Cycles => Some("it runs attach cycles, not producers"),
        }
    }
}

/// Another name a benchmark's users know `--producers` by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProducersAlias {
    /// perf's `--parallelism`.
    Parallelism,
}

impl ProducersAlias {
    /// The option's long name, and the name `--sweep` takes.
    pub const fn name(self) -> &'static str {
        match self {
            ProducersAlias::Parallelism => "parallelism",
        }
    }
}

/// Whether `--latency` can time this benchmark's operations one hit at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitTiming {
    /// One producer operation is one hit (one call of the probed target, one
    /// system call, one breakpoint toggle): its time is a hit's latency.
    PerHit,
    /// It is not; the reason, said when `--latency` is refused.
    Refused(&'static str),
}

/// What every benchmark declares, as data.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    pub name: &'static str,
    /// One line for `--list`.
    pub description: &'static str,
    /// What it reads: each tick, or once at the end.
    pub channels: &'static [Channel],
    /// What a run is judged by, the headline first.
    pub figures: &'static [Figure],
    /// How its runs print.
    pub lines: Lines,
    /// The benchmark's own options.
    pub options: &'static [BenchOption],
    /// What set-up asks of the kernel, and so the privileges it needs.
    pub needs: Needs,
    /// Which threads do the work: whether it has a consumer body (`-c`).
    pub workers: Workers,
    /// The consumers it runs when `-c` is not given.
    pub default_consumers: usize,
    /// Another name its users know `--producers` by.
    pub producers_alias: Option<ProducersAlias>,
    /// Takes `--body KIND` (and `-s`, its stack body): its counting program
    /// can do a tracer's work per hit (`bpf/body.h`).
    pub bodies: bool,
    /// The stack body takes the user stack (`BPF_F_USER_STACK`): a probe in
    /// user space, where the kernel runner's `-s` takes no stack at all.
    pub user_stack: bool,
    /// Takes `--pid-filter`: its probes can be limited to this process.
    pub pid_filter: bool,
    /// What `--latency` times.
    pub timing: HitTiming,
}

impl Info {
    /// A benchmark of the kernel runner's kind: hits, no options, no BPF.
    pub const fn hits(name: &'static str, description: &'static str) -> Info {
        Info {
            name,
            description,
            channels: &[channels::HITS],
            figures: &[figures::HITS],
            lines: lines::HITS,
            options: &[],
            needs: Needs::Nothing,
            workers: Workers::Producers,
            default_consumers: 0,
            producers_alias: None,
            bodies: false,
            user_stack: false,
            pid_filter: false,
            timing: HitTiming::Refused("one of its operations is not one hit"),
        }
    }

    /// One operation is one hit: `--latency` applies.
    pub const fn timed_per_hit(self) -> Info {
        Info {
            timing: HitTiming::PerHit,
            ..self
        }
    }

    /// `--latency` does not apply, for this reason.
    pub const fn untimed(self, why: &'static str) -> Info {
        Info {
            timing: HitTiming::Refused(why),
            ..self
        }
    }

    /// A trigger of the kernel runner's (`trig-*`): producers trigger, a
    /// counter counts.
    pub const fn trigger(name: &'static str, description: &'static str) -> Info {
        Info {
            workers: Workers::Triggers,
            ..Info::hits(name, description)
        }
    }

    /// Takes `--body KIND` (whose ringbuf body can drop records: it reads
    /// drops too).
    pub const fn bodies(self) -> Info {
        Info {
            bodies: true,
            ..self.with_drops()
        }
    }

    /// Takes `--body KIND`, and its stack body (`-s`) takes the user stack.
    pub const fn user_stacktrace(self) -> Info {
        Info {
            user_stack: true,
            ..self.bodies()
        }
    }

    pub const fn pid_filter(self) -> Info {
        Info {
            pid_filter: true,
            ..self
        }
    }

    /// Has consumer threads (`-c`), `default` of them unless told.
    pub const fn consumers(self, default: usize) -> Info {
        Info {
            workers: Workers::ProducersAndConsumers,
            default_consumers: default,
            ..self
        }
    }

    pub const fn needs(self, needs: Needs) -> Info {
        Info { needs, ..self }
    }

    /// Reads hits and drops (a BPF program's counters, whose body may drop
    /// records into a full ring).
    pub const fn with_drops(self) -> Info {
        Info {
            channels: &[channels::HITS, channels::DROPS],
            ..self
        }
    }

    /// Reads `channels`, is judged by `figures` and prints `lines`.
    pub const fn declares(
        self,
        channels: &'static [Channel],
        figures: &'static [Figure],
        lines: Lines,
    ) -> Info {
        Info {
            channels,
            figures,
            lines,
            ..self
        }
    }

    pub const fn options(self, options: &'static [BenchOption]) -> Info {
        Info { options, ..self }
    }
}

/// A benchmark: what it is, and how to set it up.
pub trait Benchmark: Sync {
    fn info(&self) -> &Info;

    /// Checks of the configuration that go beyond each option's range.
    fn validate(&self, _config: &RunConfig) -> Result<()> {
        Ok(())
    }

    /// Options that do something only beside a flag: (the option, the flag
    /// it needs). Giving the first alone is refused, not silently ignored.
    fn option_needs(&self) -> &'static [(BenchOption, FlagOption)] {
        &[]
    }

    /// Loads and attaches what the benchmark needs, and says what kind of
    /// run it prepared. Dropping what it made detaches and unloads
    /// everything.
    fn setup(&self, config: &RunConfig) -> Result<SetUp>;

    /// What `--probe` sets up: by default the run's own set-up. A benchmark
    /// whose set-up also measures (and can refuse what it measured) loads
    /// and attaches here without measuring, since the probe asks only
    /// whether the kernel takes it.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        self.setup(config)
    }
}

impl dyn Benchmark + '_ {
    pub fn name(&self) -> &'static str {
        self.info().name
    }
    pub fn description(&self) -> &'static str {
        self.info().description
    }
    pub fn lines(&self) -> &Lines {
        &self.info().lines
    }
    pub fn channels(&self) -> &'static [Channel] {
        self.info().channels
    }
    /// The kinds of the channels it reads each tick, in their order: what
    /// the runner differences.
    pub fn ticked_kinds(&self) -> Vec<channels::Kind> {
        channels::ticked(self.channels()).map(|c| c.kind).collect()
    }
    /// The names of the channels it reads each tick, in their order.
    pub fn ticked_names(&self) -> Vec<&'static str> {
        channels::ticked(self.channels()).map(|c| c.name).collect()
    }
    /// What a run is judged by, the headline first.
    pub fn figures(&self) -> &'static [Figure] {
        self.info().figures
    }
    /// The figure a run is judged by first.
    pub fn headline(&self) -> &'static Figure {
        &self.info().figures[0]
    }
    /// Whether a run is an attach cycle rather than producers at work.
    pub fn runs_cycles(&self) -> bool {
        self.info().workers == Workers::Cycles
    }
    pub fn options(&self) -> &'static [BenchOption] {
        self.info().options
    }
    /// Its option `--long`: an option is known by its long name, which
    /// benchmarks sharing it share (with their own default and range).
    pub fn option(&self, long: &str) -> Option<&'static BenchOption> {
        self.options().iter().find(|o| o.long() == long)
    }
    pub fn needs(&self) -> Needs {
        self.info().needs
    }
    pub fn needs_bpf(&self) -> bool {
        self.info().needs != Needs::Nothing
    }
    /// Takes `-c` (see [`applies`]).
    pub fn has_consumers(&self) -> bool {
        self.info().applies(RunOption::Consumers).yes()
    }
    pub fn producers_alias(&self) -> Option<ProducersAlias> {
        self.info().producers_alias
    }

    /// Takes `--body KIND` and `-s` (see [`applies`]).
    pub fn takes_bodies(&self) -> bool {
        self.info().applies(RunOption::Body).yes()
    }
    /// `-s` (the stack body) takes the user stack here, which the kernel runner's does not.
    pub fn takes_user_stack(&self) -> bool {
        self.info().user_stack
    }
    pub fn takes_pid_filter(&self) -> bool {
        self.info().applies(RunOption::PidFilter).yes()
    }

    /// The configuration a bare `bench NAME` runs this benchmark with.
    pub fn default_config(&self) -> Result<RunConfig> {
        Ok(RunConfig::defaults(resolve_params(self, &[])?))
    }
}

/// Every benchmark, in `--list` order: one line per family.
pub fn all() -> impl Iterator<Item = &'static dyn Benchmark> {
    [
        uprobe::BENCHES,
        usdt::BENCHES,
        trigger::BENCHES,
        syscall::BENCHES,
        breakpoint::BENCHES,
        ringbuf::BENCHES,
        perf_uprobe::BENCHES,
        attach::BENCHES,
        churn::BENCHES,
        count::BENCHES,
        rename::BENCHES,
        crypto::BENCHES,
        timing::BENCHES,
        helpers::BENCHES,
        hashmap::BENCHES,
        htab_mem::BENCHES,
        bloom::BENCHES,
        lpm::BENCHES,
        xdp_lb::BENCHES,
        local_storage::BENCHES,
        local_storage_create::BENCHES,
        sockmap::BENCHES,
        tasks_trace::BENCHES,
    ]
    .into_iter()
    .flatten()
    .copied()
}

pub fn find(name: &str) -> Option<&'static dyn Benchmark> {
    all().find(|b| b.name() == name)
}

/// Builds the parameters of `bench` from the values given on the command
/// line, refusing options the benchmark does not take and values out of range.
pub fn resolve_params(
    bench: &dyn Benchmark,
    given: &[(&'static str, OptionValue)],
) -> Result<Params> {
    let mut values: BTreeMap<&'static str, OptionValue> = bench
        .options()
        .iter()
        .map(|o| (o.long(), o.default_value()))
        .collect();
    for &(name, value) in given {
        let Some(option) = bench.option(name) else {
            let takers: Vec<&str> = all()
                .filter(|b| b.option(name).is_some())
                .map(|b| b.name())
                .collect();
            return Err(Error::usage(format!(
                "--{name} is not an option of {}; it is taken by {}",
                bench.name(),
                summarize_names(&takers)
            )));
        };
        check_value(bench, option, value)?;
        values.insert(name, value);
    }
    Ok(Params::new(values))
}

/// Refuses a value out of its option's range, or of the other kind.
fn check_value(bench: &dyn Benchmark, option: &BenchOption, value: OptionValue) -> Result<()> {
    match (option, value) {
        (BenchOption::Number(o), OptionValue::Number(v)) if v < o.min || v > o.max => {
            let why = match o.why_max {
                "" => String::new(),
                why => format!(" ({why})"),
            };
            let range = match o.min == o.max {
                true => format!("can only be {}", o.min),
                false => format!("must be between {} and {}", o.min, o.max),
            };
            Err(Error::usage(format!(
                "--{} {range} for {}{why}, got {v}",
                o.long,
                bench.name()
            )))
        }
        (BenchOption::Text(o), OptionValue::Text(text))
            if text.is_empty() || text.len() > o.max_len =>
        {
            Err(Error::usage(format!(
                "--{} takes 1 to {} bytes for {}, got {} (\"{}\")",
                o.long,
                o.max_len,
                bench.name(),
                text.len(),
                text.escape_default()
            )))
        }
        (BenchOption::Text(o), OptionValue::Text(text))
            if !o.choices.is_empty() && !o.choices.contains(&text) =>
        {
            Err(Error::usage(format!(
                "--{} \"{}\" is not one of {}'s: {}",
                o.long,
                text.escape_default(),
                bench.name(),
                o.choices.join(", ")
            )))
        }
        (BenchOption::Number(_), OptionValue::Number(_))
        | (BenchOption::Flag(_), OptionValue::Flag(_))
        | (BenchOption::Text(_), OptionValue::Text(_)) => Ok(()),
        (BenchOption::Flag(o), _) => Err(Error::usage(format!(
            "--{} takes no value for {}",
            o.long,
            bench.name()
        ))),
        (BenchOption::Number(_) | BenchOption::Text(_), _) => Err(Error::usage(format!(
            "--{} takes a value for {}",
            option.long(),
            bench.name()
        ))),
    }
}

/// Refuses an option given (on the command line, or swept) without the one
/// it needs to take effect (`option_needs`): it would be silently ignored.
pub fn check_option_needs(bench: &dyn Benchmark, given: &[&str], params: &Params) -> Result<()> {
    for (option, needed) in bench.option_needs() {
        if given.contains(&option.long()) && !params.flag(needed) {
            return Err(Error::usage(format!(
                "--{} takes effect only with --{}: give --{} too, or drop --{}",
                option.long(),
                needed.long,
                needed.long,
                option.long()
            )));
        }
    }
    Ok(())
}

/// A few names for a message: all of them, or the first three and a count.
pub fn summarize_names(names: &[&str]) -> String {
    match names.len() {
        0 => "no benchmark".to_string(),
        1..=4 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
    }
}

/// Every distinct benchmark option, for the command line parser.
pub fn all_options() -> Vec<BenchOption> {
    let mut options: Vec<BenchOption> = Vec::new();
    for option in all().flat_map(|b| b.options().iter().copied()) {
        if !options.iter().any(|o| o.long() == option.long()) {
            options.push(option);
        }
    }
    options
}

/// Whether the benchmark option `long` (as a result file names it) changes
/// the work measured, as its declaration says ([`BenchOption::output_only`]):
/// compare and the history hold results apart on it only then. One no
/// benchmark declares (a file of another version) is taken to change it.
pub fn changes_work(long: &str) -> bool {
    !all()
        .flat_map(|b| b.options().iter())
        .any(|o| o.long() == long && o.output_only())
}

/// Names close to an unknown `name`, best first.
pub fn suggestions(name: &str) -> Vec<&'static str> {
    let wanted = name.to_ascii_lowercase();
    let mut scored: Vec<(f64, &'static str)> = all()
        .map(|b| {
            let candidate = b.name();
            let mut score = strsim::jaro_winkler(&wanted, candidate);
            // "uprobe-nop" for "trig-uprobe-nop": the prefix is often left out.
            if candidate.ends_with(&wanted) || candidate.strip_prefix("trig-") == Some(&wanted) {
                score = score.max(0.99);
            }
            (score, candidate)
        })
        .filter(|(score, _)| *score >= 0.85)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_described() {
        let names: Vec<&str> = all().map(|b| b.name()).collect();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} is listed twice");
        }
        for bench in all() {
            assert!(!bench.description().is_empty(), "{}", bench.name());
        }
    }

    #[test]
    fn every_benchmark_is_judged_by_figures_it_can_measure() {
        for bench in all() {
            let figures = bench.figures();
            assert!(!figures.is_empty(), "{} declares no figure", bench.name());
            for (i, f) in figures.iter().enumerate() {
                assert!(
                    !figures[..i].iter().any(|g| g.name == f.name),
                    "{}: {} twice",
                    bench.name(),
                    f.name
                );
            }
            // A cycle has no per-second rate, producers no cycle.
            let cycle_figures = figures.iter().all(|f| f.better == figures::Better::Lower);
            assert_eq!(bench.runs_cycles(), cycle_figures, "{}", bench.name());
        }
    }

    #[test]
    fn options_have_sane_ranges() {
        for bench in all() {
            for o in bench.options() {
                if let BenchOption::Number(o) = o {
                    assert!(
                        o.min <= o.default && o.default <= o.max,
                        "{}: --{}",
                        bench.name(),
                        o.long
                    );
                }
            }
        }
    }

    /// The kernel runner's triggers are the `trig-*` names: `-c`'s refusal
    /// says so from the declared [`Workers`], and the names keep agreeing.
    #[test]
    fn triggers_are_the_trig_benchmarks() {
        for bench in all() {
            assert_eq!(
                bench.info().workers == Workers::Triggers,
                bench.name().starts_with("trig-"),
                "{}",
                bench.name()
            );
        }
    }

    /// The parser has one argument per long name: two benchmarks sharing an
    /// option must declare the same kind, short name, value name and help
    /// (the default and range may be each benchmark's own: they are checked
    /// per benchmark).
    #[test]
    fn a_shared_option_is_one_option() {
        let shape = |o: &BenchOption| match o {
            BenchOption::Number(n) => (0, n.long, n.short, n.value_name, n.help),
            BenchOption::Flag(f) => (1, f.long, None, "", f.help),
            BenchOption::Text(t) => (2, t.long, None, t.value_name, t.help),
        };
        for option in all_options() {
            for bench in all() {
                if let Some(o) = bench.option(option.long()) {
                    assert_eq!(shape(o), shape(&option), "{}: --{}", bench.name(), o.long());
                }
            }
        }
    }

    #[test]
    fn close_names_are_suggested() {
        assert_eq!(suggestions("trig-uprobe-nopp")[0], "trig-uprobe-nop");
        assert_eq!(suggestions("uprobe-push")[0], "trig-uprobe-push");
        assert!(suggestions("completely-different").is_empty());
    }
}
