//! The benchmark interface and the one registry that lists every benchmark.
//!
//! A benchmark is a plain value: an [`Info`] that says what it is and what it
//! measures, plus whatever its family needs to set it up. Each family lists its
//! benchmarks in one table (`BENCHES`); [`all`] chains the tables. Nothing here
//! prints: `report/` turns a benchmark's [`Metric`] into lines.

pub mod breakpoint;
pub mod perf_uprobe;
pub mod ringbuf;
pub mod syscall;
pub mod trigger;
pub mod uprobe;
pub mod usdt;

use std::collections::BTreeMap;

use crate::bpf::Needs;
use crate::config::{BenchOption, Params, RunConfig};
use crate::error::{Error, Result};
use crate::runner::Workload;

/// What a benchmark measures, and so which lines report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Hits (and drops) counted by a BPF program or the producers: the kernel
    /// runner's lines in M/s.
    Hits,
    /// Operations per second with `perf bench`'s usecs/op; a fixed run prints
    /// perf's own block.
    Ops(PerfFormat),
}

/// How `perf bench` reports one of its benchmarks, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfFormat {
    /// `# Running 'COLLECTION/NAME' benchmark:`
    pub collection: &'static str,
    pub name: &'static str,
    /// The line under it. `{ops}`, `{calls}` and `{producers}` are the fixed
    /// run's operations, calls and producers; `{OPTION}` is the value of the
    /// benchmark's option of that long name.
    pub executed: &'static str,
    /// perf's `usecs/op/cpu`: one producer's time per operation (also in the
    /// timed summary).
    pub per_cpu: bool,
    /// perf's `ops/sec` line.
    pub ops_per_sec: bool,
    /// The total time in microseconds, and every number with thousands
    /// separators, as perf's uprobe collection prints them.
    pub usecs_grouped: bool,
}

/// What every benchmark declares, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub name: &'static str,
    /// One line for `--list`.
    pub description: &'static str,
    pub metric: Metric,
    /// The benchmark's own options.
    pub options: &'static [BenchOption],
    /// What set-up asks of the kernel, and so the privileges it needs.
    pub needs: Needs,
    /// The benchmark has a consumer body (`-c`).
    pub consumers: bool,
    /// Another name its users know `--producers` by (perf's `--parallelism`).
    pub producers_alias: Option<&'static str>,
    /// Takes `-s/--stacktrace`: its counting program can take a stack per hit.
    pub stacktrace: bool,
    /// Takes `--pid-filter`: its probes can be limited to this process.
    pub pid_filter: bool,
}

impl Info {
    /// A benchmark of the kernel runner's kind: hits, no options, no BPF.
    pub const fn hits(name: &'static str, description: &'static str) -> Info {
        Info {
            name,
            description,
            metric: Metric::Hits,
            options: &[],
            needs: Needs::Nothing,
            consumers: false,
            producers_alias: None,
            stacktrace: false,
            pid_filter: false,
        }
    }

    pub const fn stacktrace(self) -> Info {
        Info {
            stacktrace: true,
            ..self
        }
    }

    pub const fn pid_filter(self) -> Info {
        Info {
            pid_filter: true,
            ..self
        }
    }

    pub const fn needs(self, needs: Needs) -> Info {
        Info { needs, ..self }
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

    /// Loads and attaches what the benchmark needs. Dropping the workload
    /// detaches and unloads everything.
    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>>;
}

impl dyn Benchmark + '_ {
    pub fn name(&self) -> &'static str {
        self.info().name
    }
    pub fn description(&self) -> &'static str {
        self.info().description
    }
    pub fn metric(&self) -> Metric {
        self.info().metric
    }
    pub fn options(&self) -> &'static [BenchOption] {
        self.info().options
    }
    pub fn needs(&self) -> Needs {
        self.info().needs
    }
    pub fn needs_bpf(&self) -> bool {
        self.info().needs != Needs::Nothing
    }
    pub fn has_consumers(&self) -> bool {
        self.info().consumers
    }
    pub fn producers_alias(&self) -> Option<&'static str> {
        self.info().producers_alias
    }

    pub fn takes_stacktrace(&self) -> bool {
        self.info().stacktrace
    }
    pub fn takes_pid_filter(&self) -> bool {
        self.info().pid_filter
    }

    /// Refuses the global options this benchmark does not take.
    pub fn check_global_options(&self, config: &RunConfig) -> Result<()> {
        let refuse = |option: &str, takers: Vec<&str>| {
            Err(Error::usage(format!(
                "{option} does not apply to {}; it is taken by {} (see --list)",
                self.name(),
                summarize_names(&takers)
            )))
        };
        if config.stacktrace && !self.takes_stacktrace() {
            return refuse(
                "-s/--stacktrace",
                all()
                    .filter(|b| b.takes_stacktrace())
                    .map(|b| b.name())
                    .collect(),
            );
        }
        if config.pid_filter && !self.takes_pid_filter() {
            return refuse(
                "--pid-filter",
                all()
                    .filter(|b| b.takes_pid_filter())
                    .map(|b| b.name())
                    .collect(),
            );
        }
        Ok(())
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
pub fn resolve_params(bench: &dyn Benchmark, given: &[(&'static str, u64)]) -> Result<Params> {
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
    Ok(Params::new(values))
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
