//! Which option of a run applies to which benchmark: the one place that
//! decides it, from what each benchmark declares in its [`Info`] (its metric,
//! workers, bodies, probes, timing). The command line, `--probe`, `--list`,
//! sweeps and the run plan ask here rather than deciding for themselves.

use super::{all, summarize_names, Benchmark, HitTiming, Info, ProducersAlias, Workers};
use crate::config::{Body, RunConfig, SweepName, SweepParam};
use crate::error::{Error, Result};

/// An option of a run that some benchmarks take and others do not. The
/// options every benchmark takes (`--runs`, the outputs, ...) are not here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOption {
    /// `-p/--producers` (and `--sweep producers`): threads that do the work.
    Producers,
    /// `--parallelism`, perf's name for `--producers`.
    Parallelism,
    /// `-c/--consumers`, `--cons-affinity`, `--sweep consumers`.
    Consumers,
    /// `-a`, `--prod-affinity`: producer threads pinned to CPUs.
    Affinity,
    /// `-r/--repeat`: a fixed count of the producers' operations.
    Repeat,
    /// `-w/--warmup`, `-d/--duration`: a timed run's seconds.
    Seconds,
    /// `--body`, `-s`: what the counting program does per hit.
    Body,
    /// `--pid-filter`: probes limited to this process.
    PidFilter,
    /// `--latency`: each operation timed as one hit.
    Latency,
    /// `--profile`, `--profile-freq`: the measured seconds sampled.
    Profile,
}

/// Whether an option applies to a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applies {
    Yes,
    /// It does not; the reason, where the declarations give one.
    No(Option<&'static str>),
}

impl Applies {
    pub fn yes(self) -> bool {
        self == Applies::Yes
    }
}

/// Why an attach benchmark takes none of the options of producer threads:
/// its run is one attach cycle, made on one thread.
const CYCLE_THREAD: &str = "it runs attach cycles on one thread";

impl RunOption {
    pub const ALL: [RunOption; 10] = [
        RunOption::Producers,
        RunOption::Parallelism,
        RunOption::Consumers,
        RunOption::Affinity,
        RunOption::Repeat,
        RunOption::Seconds,
        RunOption::Body,
        RunOption::PidFilter,
        RunOption::Latency,
        RunOption::Profile,
    ];

    /// `--list` marks the benchmarks that take it, and a refusal says so.
    pub fn marked_in_list(self) -> bool {
        matches!(self, RunOption::Body | RunOption::PidFilter)
    }
}

impl Info {
    /// Whether `option` applies to this benchmark, from its declarations.
    pub fn applies(&self, option: RunOption) -> Applies {
        let said = |why: &'static str| Applies::No(Some(why));
        let yes_if = |taken: bool| match taken {
            true => Applies::Yes,
            false => Applies::No(None),
        };
        if self.workers == Workers::Cycles {
            if let Some(why) = cycle_refusal(option) {
                return said(why);
            }
        }
        match option {
            RunOption::Producers
            | RunOption::Affinity
            | RunOption::Repeat
            | RunOption::Seconds
            | RunOption::Profile => Applies::Yes,
            RunOption::Parallelism => {
                yes_if(self.producers_alias == Some(ProducersAlias::Parallelism))
            }
            RunOption::Consumers => self.workers.why_no_consumers().map_or(Applies::Yes, said),
            RunOption::Body => yes_if(self.bodies),
            RunOption::PidFilter => yes_if(self.pid_filter),
            RunOption::Latency => match self.timing {
                HitTiming::PerHit => Applies::Yes,
                HitTiming::Refused(why) => said(why),
            },
        }
    }
}

/// What an attach cycle has no use for, and why: it is one cycle per run on
/// one thread, neither timed nor counted in operations.
fn cycle_refusal(option: RunOption) -> Option<&'static str> {
    match option {
        RunOption::Producers | RunOption::Parallelism | RunOption::Consumers => Some(CYCLE_THREAD),
        RunOption::Affinity => Some("it runs attach cycles on one thread, which no option pins"),
        RunOption::Repeat => {
            Some("each of its runs is one attach cycle, not a count of operations")
        }
        RunOption::Seconds => Some("each of its runs is one attach cycle, not a time"),
        RunOption::Profile => Some("it samples measured seconds, and an attach cycle has none"),
        RunOption::Body | RunOption::PidFilter | RunOption::Latency => None,
    }
}

impl dyn Benchmark + '_ {
    /// Refuses the options of `config` that change set-up (the body,
    /// `--latency`, `--pid-filter`) where they do not apply.
    pub fn check_global_options(&self, config: &RunConfig) -> Result<()> {
        if config.body != Body::Count {
            let flag = match config.body {
                Body::Stack => "-s/--stacktrace (--body stack)",
                _ => "--body",
            };
            check(self, RunOption::Body, flag)?;
        }
        if config.latency {
            check(self, RunOption::Latency, "--latency")?;
        }
        if config.pid_filter {
            check(self, RunOption::PidFilter, "--pid-filter")?;
        }
        Ok(())
    }
}

/// What `--sweep NAME` varies in `bench`, or `None` when it takes no such
/// parameter: the producer count (under either of its names), the body,
/// the consumers, or one of its own options.
pub fn sweep_param(bench: &dyn Benchmark, name: &SweepName) -> Option<SweepParam> {
    let info = bench.info();
    match name {
        SweepName::Producers => Some(SweepParam::Producers { name: "producers" }),
        SweepName::Body => info
            .applies(RunOption::Body)
            .yes()
            .then_some(SweepParam::Body),
        SweepName::Consumers => bench.has_consumers().then_some(SweepParam::Consumers),
        SweepName::Other(name) => match info.producers_alias {
            Some(alias) if alias.name() == name => {
                Some(SweepParam::Producers { name: alias.name() })
            }
            _ => bench.option(name).map(|option| SweepParam::Option(*option)),
        },
    }
}

/// The benchmarks `option` applies to, in `--list` order.
pub fn takers(option: RunOption) -> Vec<&'static str> {
    all()
        .filter(|b| b.info().applies(option).yes())
        .map(|b| b.name())
        .collect()
}

/// Refuses `option`, given as `flag`, when it does not apply to `bench`: one
/// sentence with the reason and the benchmarks that take it.
pub fn check(bench: &dyn Benchmark, option: RunOption, flag: &str) -> Result<()> {
    let why = match bench.info().applies(option) {
        Applies::Yes => return Ok(()),
        Applies::No(why) => why.map_or(String::new(), |why| format!(": {why}")),
    };
    let see_list = match option.marked_in_list() {
        true => " (see --list)",
        false => "",
    };
    Err(Error::usage(format!(
        "{flag} does not apply to {}{why}; it is taken by {}{see_list}",
        bench.name(),
        taken_by(option)
    )))
}

/// The benchmarks that take `option`, for a message: by name, or, when
/// nearly all do, as all but the few that do not.
fn taken_by(option: RunOption) -> String {
    let (takers, others): (Vec<_>, Vec<_>) = all().partition(|b| b.info().applies(option).yes());
    let names = |benches: Vec<&dyn Benchmark>| benches.iter().map(|b| b.name()).collect::<Vec<_>>();
    match others.len() * 2 < takers.len() {
        true => format!("every benchmark but {}", summarize_names(&names(others))),
        false => summarize_names(&names(takers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attach family is the benchmarks that run attach cycles, and it
    /// takes none of the options of producer threads.
    #[test]
    fn attach_cycles_take_no_thread_options() {
        for bench in all() {
            let cycles = bench.runs_cycles();
            for option in RunOption::ALL {
                if cycle_refusal(option).is_some() && cycles {
                    assert!(!bench.info().applies(option).yes(), "{}", bench.name());
                }
            }
            if cycles {
                assert!(bench.name().starts_with("attach-"), "{}", bench.name());
            }
        }
        let churn =
            super::super::find("attach-churn").map(|b| b.info().applies(RunOption::Producers));
        assert_eq!(churn, Some(Applies::Yes));
    }

    /// A sweep's name resolves per benchmark, and no benchmark's own option
    /// shadows a name every benchmark knows.
    #[test]
    fn sweep_names_resolve_per_benchmark() {
        let find = |name| super::super::find(name).unwrap();
        let param = |bench, name: &str| sweep_param(find(bench), &SweepName::parse(name));
        let producers = Some(SweepParam::Producers { name: "producers" });
        assert_eq!(param("trig-uprobe-nop", "producers"), producers);
        assert_eq!(param("trig-uprobe-nop", "body"), Some(SweepParam::Body));
        assert_eq!(param("trig-syscall-count", "body"), None);
        assert_eq!(param("trig-uprobe-nop", "consumers"), None);
        assert_eq!(param("trig-uprobe-nop", "parallelism"), None);
        let thread = param("breakpoint-thread", "parallelism");
        assert_eq!(
            thread,
            Some(SweepParam::Producers {
                name: "parallelism"
            })
        );
        assert!(matches!(
            param("breakpoint-thread", "threads"),
            Some(SweepParam::Option(o)) if o.long() == "threads"
        ));
        for bench in all() {
            for option in bench.options() {
                let name = SweepName::parse(option.long());
                assert!(matches!(name, SweepName::Other(_)), "{}", option.long());
            }
        }
    }

    #[test]
    fn every_option_has_a_taker() {
        for option in RunOption::ALL {
            assert!(!takers(option).is_empty(), "{option:?}");
        }
    }
}
