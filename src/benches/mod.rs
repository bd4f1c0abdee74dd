//! The benchmark interface and the one registry that lists every benchmark.

pub mod breakpoint;
pub mod ringbuf;
pub mod syscall;
pub mod trigger;
pub mod uprobe;
pub mod usdt;

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::report::text;
use crate::runner::affinity::Affinity;
use crate::runner::{FixedRun, Workload};

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

/// Values of the chosen benchmark's options, defaults filled in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<&'static str, u64>);

impl Params {
    /// The value of a declared option. Asking for an option the benchmark did
    /// not declare is a programming error, caught by the tests of each family.
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or_default()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }

    /// Builds the parameters of `bench` from the values given on the command
    /// line, refusing options the benchmark does not take and values out of range.
    pub fn resolve(bench: &dyn Benchmark, given: &[(&'static str, u64)]) -> Result<Params> {
        let mut values: BTreeMap<&'static str, u64> = bench
            .options()
            .iter()
            .map(|o| (o.long, o.default))
            .collect();
        for &(name, value) in given {
            let Some(option) = bench.options().iter().find(|o| o.long == name) else {
                let takers: Vec<&str> = all()
                    .filter(|b| b.options().iter().any(|o| o.long == name))
                    .map(|b| b.name())
                    .collect();
                return Err(Error::usage(format!(
                    "--{name} is not an option of {}; it is taken by {}",
                    bench.name(),
                    summarize_names(&takers)
                )));
            };
            if value < option.min || value > option.max {
                let why = match option.why_max {
                    "" => String::new(),
                    why => format!(" ({why})"),
                };
                return Err(Error::usage(format!(
                    "--{name} must be between {} and {} for {}{why}, got {value}",
                    option.min,
                    option.max,
                    bench.name()
                )));
            }
            values.insert(option.long, value);
        }
        Ok(Params(values))
    }
}

/// The benchmarks that take consumers (`-c`), for messages that name them.
pub fn consumer_takers() -> String {
    let takers: Vec<&str> = all()
        .filter(|b| b.has_consumers())
        .map(|b| b.name())
        .collect();
    summarize_names(&takers)
}

fn summarize_names(names: &[&str]) -> String {
    match names.len() {
        0 => "no benchmark".to_string(),
        1..=4 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
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
}

impl RunConfig {
    /// The configuration a bare `bench NAME` would run `bench` with.
    pub fn defaults(bench: &dyn Benchmark) -> Result<RunConfig> {
        Ok(RunConfig {
            producers: 1,
            consumers: 0,
            warmup_secs: 1,
            duration_secs: 5,
            affinity: Affinity::None,
            repeat: None,
            params: Params::resolve(bench, &[])?,
        })
    }
}

/// How a benchmark's results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportStyle {
    /// The kernel runner's hits/drops lines in M/s.
    Hits,
    /// Operations per second with perf bench's usecs/op (and, with
    /// `per_cpu`, usecs/op/cpu: the time per operation of one producer).
    Ops { per_cpu: bool },
}

/// A benchmark: a description, its options, and how to set it up.
pub trait Benchmark: Sync {
    fn name(&self) -> &'static str;

    /// One line for `--list`.
    fn description(&self) -> &'static str;

    /// The benchmark's own options.
    fn options(&self) -> &'static [BenchOption] {
        &[]
    }

    /// Whether the benchmark has a consumer body (`-c`).
    fn has_consumers(&self) -> bool {
        false
    }

    /// Whether set-up loads BPF programs (and so needs CAP_BPF/CAP_PERFMON).
    fn needs_bpf(&self) -> bool {
        false
    }

    /// Checks of the configuration that go beyond each option's range.
    fn validate(&self, _config: &RunConfig) -> Result<()> {
        Ok(())
    }

    /// Loads and attaches what the benchmark needs. Dropping the workload
    /// detaches and unloads everything.
    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>>;

    fn report_style(&self) -> ReportStyle {
        ReportStyle::Hits
    }

    /// The report of a fixed-work (`--repeat`) run: all that run prints.
    fn report_fixed(&self, config: &RunConfig, run: &FixedRun) -> Vec<String> {
        text::fixed_lines(self.name(), run, config.producers)
    }

    /// Another name the benchmark's users know `--producers` by (perf's
    /// `--parallelism`), accepted for this benchmark only.
    fn producers_alias(&self) -> Option<&'static str> {
        None
    }
}

/// Every benchmark, in `--list` order. Add a family with one line here.
pub fn all() -> impl Iterator<Item = &'static dyn Benchmark> {
    [
        uprobe::BENCHES,
        usdt::BENCHES,
        trigger::BENCHES,
        syscall::BENCHES,
        breakpoint::BENCHES,
        ringbuf::BENCHES,
    ]
    .into_iter()
    .flatten()
    .copied()
}

pub fn find(name: &str) -> Option<&'static dyn Benchmark> {
    all().find(|b| b.name() == name)
}

/// Every distinct benchmark option, for the command line parser.
pub fn all_options() -> Vec<BenchOption> {
    let mut options: Vec<BenchOption> = Vec::new();
    for option in all().flat_map(|b| b.options().iter().copied()) {
        if !options.iter().any(|o| o.long == option.long) {
            options.push(option);
        }
    }
    options
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
    fn options_have_sane_ranges() {
        for bench in all() {
            for o in bench.options() {
                assert!(
                    o.min <= o.default && o.default <= o.max,
                    "{}: --{}",
                    bench.name(),
                    o.long
                );
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
