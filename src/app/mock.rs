//! A fake benchmark and a mock of the runs, as hyperfine's mock executor:
//! every run of a benchmark counts a rate fixed beforehand, without BPF, the
//! kernel or real seconds, so that the rounds' sequencing (rotation, stops,
//! interrupts, failures) is tested in milliseconds.

use std::cell::RefCell;

use super::one_run::{Ran, RunAsk};
use super::runs::{Lines, Runs};
use crate::benches::{self, Benchmark, Info};
use crate::bpf::Needs;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::results::cycles::{AttachedWith, CycleRecord, StepTime};
use crate::results::{Outcome, RunRecord};
use crate::runner::cycles::Fired;
use crate::runner::{Prepared, ProducerCtx, SetUp, StoppedAt, Workload};
use crate::stats::Sample;

/// A benchmark that declares what a real one does (its name, metric and
/// options) but needs nothing to set up; or refuses its set-up, as a kernel
/// that cannot load it would.
pub struct Fake {
    info: Info,
    refusal: Option<&'static str>,
}

impl Fake {
    /// The registry's `name`, faked; lives as long as the test binary.
    pub fn of(name: &str) -> &'static Fake {
        Fake::leak(name, None)
    }

    /// The registry's `name`, its set-up refused with `why`.
    pub fn refusing(name: &str, why: &'static str) -> &'static Fake {
        Fake::leak(name, Some(why))
    }

    fn leak(name: &str, refusal: Option<&'static str>) -> &'static Fake {
        let real = benches::find(name).unwrap_or_else(|| panic!("no benchmark {name}"));
        let info = Info {
            needs: Needs::Nothing,
            ..*real.info()
        };
        Box::leak(Box::new(Fake { info, refusal }))
    }
}

impl Benchmark for Fake {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, _config: &RunConfig) -> Result<SetUp> {
        match self.refusal {
            Some(why) => Err(Error::unsupported(why)),
            None => Ok(SetUp::producers(Counted)),
        }
    }
}

/// The fake's workload: its producers' operations are its hits.
struct Counted;

impl Workload for Counted {
    fn produce(&self, _ctx: &ProducerCtx<'_>) -> Result<()> {
        Ok(())
    }
}

/// The runs, mocked: each benchmark's rate per run is set beforehand (in
/// M/s, or µs per probe to attach for an attach benchmark), seconds pass
/// on a clock of its own, and a signal can be made to arrive during a run.
#[derive(Default)]
pub struct MockRuns {
    /// Each benchmark's rate in its first, second, ... run (cycled).
    rates: Vec<(&'static str, Vec<f64>)>,
    /// The run (0-based, over all) during which SIGINT arrives.
    interrupt_in: Option<usize>,
    signal: Option<i32>,
    seconds: u64,
    /// Whether the first attach cycle is the process's cold one.
    cold_first: bool,
    /// Every run asked for, in order: the benchmark and its run number.
    pub asked: Vec<(&'static str, Option<u32>)>,
}

impl MockRuns {
    pub fn rates(mut self, bench: &'static str, rates: &[f64]) -> MockRuns {
        self.rates.push((bench, rates.to_vec()));
        self
    }

    /// The first attach cycle is marked cold, as the process's first is.
    pub fn cold_first(mut self) -> MockRuns {
        self.cold_first = true;
        self
    }

    /// SIGINT arrives during run `index` (0-based, over all benchmarks).
    pub fn interrupt_in(mut self, index: usize) -> MockRuns {
        self.interrupt_in = Some(index);
        self
    }

    fn rate(&self, bench: &str) -> f64 {
        let done = self.asked.iter().filter(|(b, _)| *b == bench).count();
        self.rates
            .iter()
            .find(|(b, _)| *b == bench)
            .map_or(1.0, |(_, rates)| rates[(done - 1) % rates.len()])
    }
}

impl<C: Lines> Runs<C> for MockRuns {
    fn one_run(&mut self, ask: RunAsk, console: &mut C) -> Result<Ran> {
        let RunAsk {
            bench, point, run, ..
        } = ask;
        let config = &point.config;
        self.asked.push((bench.bench.name(), run));
        let rate = self.rate(bench.bench.name());
        let Prepared::Producers(workload) = bench.bench.setup(config)?.run else {
            return Err(Error::setup("a mock benchmark runs producers"));
        };
        let mut record = RunRecord::new(config, &point.placement);
        let (warmup, duration) = (config.warmup_secs, config.duration_secs);
        self.seconds += u64::from(warmup + duration);
        if bench.bench.runs_cycles() {
            let cold = self.cold_first && self.asked.len() == 1;
            record.outcome = Outcome::Cycle(CycleRecord {
                cold,
                ..cycle(rate)
            });
            record.evaluate(bench.bench.figures(), bench.bench.channels());
            return Ok(Ran::of(record, None));
        }
        // Interrupted half-way through its measured seconds.
        let interrupted = self.interrupt_in == Some(self.asked.len() - 1);
        let measured = if interrupted { duration / 2 } else { duration };
        let kinds = bench.bench.ticked_kinds();
        let mut before = workload.read(0);
        let mut samples = Vec::new();
        for iteration in 0..warmup + measured {
            let ops = (rate * 1e6) as u64 * u64::from(iteration + 1);
            let readings = workload.read(ops);
            samples.push(Sample {
                iteration,
                elapsed_ns: 1_000_000_000,
                late_ns: 0,
                warmup: iteration < warmup,
                values: crate::channels::share(&kinds, &readings, &before),
            });
            before = readings;
        }
        let rates: Vec<bool> = kinds.iter().map(|k| k.is_differenced()).collect();
        record.outcome = Outcome::timed(samples, &rates);
        record.evaluate(bench.bench.figures(), bench.bench.channels());
        if let (Some(run), Some(_)) = (run, record.summary()) {
            for line in bench.reporter.run_lines(&record, Some(run), &config.params) {
                console.line(&line);
            }
        }
        if !interrupted {
            return Ok(Ran::of(record, None));
        }
        self.signal = Some(libc::SIGINT);
        record.partial = true;
        let phase = StoppedAt::Measuring {
            measured: measured as usize,
            of: duration,
        };
        Ok(Ran::of(record, Some(phase)))
    }

    fn interrupted(&self) -> Option<i32> {
        self.signal
    }

    fn elapsed_secs(&self) -> u64 {
        self.seconds
    }
}

/// One attach cycle of five probes, `us` µs each to attach, twice that to
/// detach, every probe fired once.
fn cycle(us: f64) -> CycleRecord {
    let probes = 5;
    let wall = |us: f64| StepTime {
        wall_ns: (us * 1e3) as u64 * probes as u64,
        ..StepTime::default()
    };
    CycleRecord {
        probes,
        links: 1,
        attached_with: AttachedWith {
            links: [("uprobe_multi".to_string(), 1)].into(),
            ..AttachedWith::default()
        },
        attach: wall(us),
        detach: wall(2.0 * us),
        fired: Some(Fired {
            fired: probes,
            ..Fired::default()
        }),
        cold: false,
    }
}

/// What the rounds and their close printed, lines and warnings apart.
#[derive(Default)]
pub struct Transcript {
    pub lines: RefCell<Vec<String>>,
    pub warnings: RefCell<Vec<String>>,
}

impl Lines for Transcript {
    fn line(&self, line: &str) {
        self.lines.borrow_mut().push(line.to_string());
    }
    fn warn(&self, line: &str) {
        self.warnings.borrow_mut().push(line.to_string());
    }
}
