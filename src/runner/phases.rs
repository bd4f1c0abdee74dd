//! A run's phases, announced to whoever listens: set-up, warm-up, the
//! measured seconds (each sample), the end of measurement, tear-down; for a
//! fixed-work (`--repeat`) run, its start and end. The console, the profiler
//! and the noise meter are [`RunObserver`]s; anything that wants to time or
//! sample a phase (latency histograms, attach timers) subscribes the same way,
//! by adding itself to the observer list given to [`run`].
//!
//! Every event fires on the thread that called [`run`] (the measuring thread),
//! in the order listed on the trait, and reaches the observers in the order
//! of the list. Between `warmup_started`/`measure_started`/`fixed_started`
//! and `measure_ended`/`fixed_ended` the producer and consumer threads are
//! running: an observer's work there is done beside the measured work, so
//! keep it short.

use super::affinity::Placement;
use super::{run_fixed, run_timed, unwrap_injected, Facts, FixedRun, OpTiming, Prepared, SetUp};
use std::sync::Arc;

use crate::channels::Kind;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::stats::Sample;
use crate::trigger_path::TriggerUsed;

/// The length of a timed run, as its phase events give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSeconds {
    pub warmup_secs: u32,
    pub duration_secs: u32,
    /// A "second"'s length in milliseconds: 1000 but in the test suite's
    /// shape-only runs (`config::TEST_TICK_ENV`).
    pub tick_ms: u32,
}

/// What a run does once set up: tick for a time, or a fixed amount of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLength {
    Timed(RunSeconds),
    /// Exactly this many producer operations in total.
    Fixed {
        repeat: u64,
    },
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub enum RunMeasurement {
    /// Every sample taken, warm-up ones marked; fewer than asked when a stop
    /// request cut the run short.
    Timed(Vec<Sample>),
    Fixed(FixedRun),
    /// An interrupt arrived during set-up (or stopped it: its
    /// `Error::Interrupted`): the threads never started.
    NotStarted,
}

/// Listens to a run's phases. Every method does nothing unless overridden, so
/// an observer implements only the events it needs. Events, in order:
///
/// 1. `setting_up` — before the benchmark's set-up (loading, attaching).
/// 2. `set_up` — set-up succeeded (with the trigger it chose, if any); the
///    workload is ready, no thread started.
///    (A failed set-up ends the run here with its error: no further event.)
/// 3. A timed run: `warmup_started` when the threads are released at the
///    start line and the run has warm-up seconds; `measure_started` when the
///    measured seconds begin (right after the last warm-up sample, or at the
///    start line without warm-up); `sample` once a second, warm-up samples
///    included (`sample.warmup`); `measure_ended` once after
///    `measure_started`, right after the last sample or when a stop request
///    ended the run early, the threads still running.
///    A fixed run: `fixed_started` at the start line; `fixed_ended` when the
///    producers have done their share and every thread is joined.
///    An interrupt during set-up skips step 3.
/// 4. `tearing_down` — the threads are joined, the workload is still loaded
///    and attached (its [`Facts`] have just been asked).
/// 5. `torn_down` — the workload is dropped: detached and unloaded.
///
/// Steps 4 and 5 follow every successful set-up, failed runs included.
pub trait RunObserver {
    fn setting_up(&mut self) {}
    fn set_up(&mut self, _trigger: Option<&TriggerUsed>) {}
    fn warmup_started(&mut self, _timing: RunSeconds) {}
    fn measure_started(&mut self, _timing: RunSeconds) {}
    fn sample(&mut self, _sample: &Sample) {}
    fn measure_ended(&mut self, _samples: &[Sample]) {}
    fn fixed_started(&mut self, _repeat: u64) {}
    fn fixed_ended(&mut self, _run: &FixedRun) {}
    fn tearing_down(&mut self) {}
    fn torn_down(&mut self) {}

    /// Asked before the threads start: what the producers should time
    /// every operation into (`--latency`), for an observer that wants them
    /// timed. The producers then run their timed loops.
    fn producer_timing(&self) -> Option<Arc<dyn OpTiming>> {
        None
    }
}

/// What the first observer that wants timed producers gives.
pub(super) fn producer_timing(observers: &Observers<'_, '_>) -> Option<Arc<dyn OpTiming>> {
    observers.iter().find_map(|o| o.producer_timing())
}

/// The observers of one run, in the order they hear each event.
pub type Observers<'a, 'b> = [&'a mut (dyn RunObserver + 'b)];

/// Tells every observer of `observers` one event.
pub(super) fn announce(observers: &mut Observers<'_, '_>, event: impl Fn(&mut dyn RunObserver)) {
    for observer in observers.iter_mut() {
        event(&mut **observer);
    }
}

/// A run done: what it measured, what its workload found, and the trigger
/// its set-up chose.
pub struct Ran {
    pub measured: RunMeasurement,
    pub facts: Facts,
    pub trigger: Option<TriggerUsed>,
}

/// Sets up with `setup`, runs `work` on `placement`, tears down, announcing
/// each phase to `observers`. `kinds` are the kinds of the channels the
/// workload reads each tick.
pub fn run(
    setup: impl FnOnce() -> Result<SetUp>,
    placement: &Placement,
    work: RunLength,
    kinds: &[Kind],
    observers: &mut Observers<'_, '_>,
) -> Result<Ran> {
    announce(observers, |o| o.setting_up());
    let SetUp { run, trigger, .. } = match setup() {
        Ok(setup) => setup,
        // A set-up a signal stopped (`interrupt::check`) dropped what it
        // made: there is nothing to run or tear down.
        Err(Error::Interrupted { .. }) => {
            return Ok(Ran {
                measured: RunMeasurement::NotStarted,
                facts: Facts::default(),
                trigger: None,
            })
        }
        Err(err) => return Err(err),
    };
    let Prepared::Producers(workload) = run else {
        return Err(Error::setup(
            "the benchmark set up attach cycles, not producers",
        ));
    };
    announce(observers, |o| o.set_up(trigger.as_ref()));
    let measured = if interrupt::received().is_some() {
        Ok(RunMeasurement::NotStarted)
    } else {
        match work {
            RunLength::Timed(timing) => {
                run_timed(workload.as_ref(), placement, timing, kinds, observers)
                    .map(RunMeasurement::Timed)
            }
            RunLength::Fixed { repeat } => {
                let fixed = run_fixed(workload.as_ref(), placement, repeat, kinds, observers);
                if let Ok(fixed) = &fixed {
                    announce(observers, |o| o.fixed_ended(fixed));
                }
                fixed.map(RunMeasurement::Fixed)
            }
        }
    };
    // The benchmark's own workload is asked, not a wrapper.
    let facts = unwrap_injected(workload.as_ref()).0.facts();
    announce(observers, |o| o.tearing_down());
    crate::interrupt::detaching(|| drop(workload));
    announce(observers, |o| o.torn_down());
    Ok(Ran {
        measured: measured?,
        facts,
        trigger,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::affinity::{place, Affinity};
    use crate::runner::tests::Spin;

    /// Writes down every event it hears.
    #[derive(Default)]
    struct Log(Vec<String>);
    impl RunObserver for Log {
        fn setting_up(&mut self) {
            self.0.push("setting_up".into());
        }
        fn set_up(&mut self, _: Option<&TriggerUsed>) {
            self.0.push("set_up".into());
        }
        fn warmup_started(&mut self, t: RunSeconds) {
            self.0.push(format!("warmup_started {}", t.warmup_secs));
        }
        fn measure_started(&mut self, t: RunSeconds) {
            self.0.push(format!("measure_started {}", t.duration_secs));
        }
        fn sample(&mut self, s: &Sample) {
            self.0.push(format!("sample {} {}", s.iteration, s.warmup));
        }
        fn measure_ended(&mut self, samples: &[Sample]) {
            self.0.push(format!("measure_ended {}", samples.len()));
        }
        fn fixed_started(&mut self, repeat: u64) {
            self.0.push(format!("fixed_started {repeat}"));
        }
        fn fixed_ended(&mut self, run: &FixedRun) {
            self.0.push(format!("fixed_ended {}", run.calls));
        }
        fn tearing_down(&mut self) {
            self.0.push("tearing_down".into());
        }
        fn torn_down(&mut self) {
            self.0.push("torn_down".into());
        }
    }

    fn spin() -> Result<SetUp> {
        Ok(SetUp::producers(Spin))
    }

    const COUNTER: [Kind; 1] = [Kind::Counter];

    #[test]
    fn a_timed_run_announces_its_phases_in_order() {
        let placement = place(&Affinity::None, 1, 0, &[0]).unwrap();
        let (mut first, mut second) = (Log::default(), Log::default());
        let timing = RunSeconds {
            warmup_secs: 1,
            duration_secs: 1,
            tick_ms: crate::config::SECOND_MS,
        };
        let ran = run(
            spin,
            &placement,
            RunLength::Timed(timing),
            &COUNTER,
            &mut [&mut first, &mut second],
        )
        .unwrap();
        assert!(matches!(ran.measured, RunMeasurement::Timed(s) if s.len() == 2));
        let expected = [
            "setting_up",
            "set_up",
            "warmup_started 1",
            "sample 0 true",
            "measure_started 1",
            "sample 1 false",
            "measure_ended 2",
            "tearing_down",
            "torn_down",
        ];
        assert_eq!(first.0, expected);
        assert_eq!(second.0, expected, "every observer hears every event");

        let mut log = Log::default();
        let timing = RunSeconds {
            warmup_secs: 0,
            duration_secs: 1,
            tick_ms: crate::config::SECOND_MS,
        };
        run(
            spin,
            &placement,
            RunLength::Timed(timing),
            &COUNTER,
            &mut [&mut log],
        )
        .unwrap();
        assert_eq!(
            log.0[2..5],
            ["measure_started 1", "sample 0 false", "measure_ended 1"],
            "without warm-up, measurement starts at the start line"
        );
    }

    #[test]
    fn a_fixed_run_announces_its_start_and_end() {
        let placement = place(&Affinity::None, 2, 0, &[0]).unwrap();
        let mut log = Log::default();
        run(
            spin,
            &placement,
            RunLength::Fixed { repeat: 1000 },
            &COUNTER,
            &mut [&mut log],
        )
        .unwrap();
        assert_eq!(
            log.0,
            [
                "setting_up",
                "set_up",
                "fixed_started 1000",
                "fixed_ended 1000",
                "tearing_down",
                "torn_down"
            ]
        );
    }

    #[test]
    fn a_failed_set_up_ends_the_events() {
        let placement = place(&Affinity::None, 1, 0, &[0]).unwrap();
        let mut log = Log::default();
        let err = run(
            || Err(crate::error::Error::setup("no")),
            &placement,
            RunLength::Fixed { repeat: 1 },
            &COUNTER,
            &mut [&mut log],
        )
        .err()
        .unwrap();
        assert_eq!(err.to_string(), "no");
        assert_eq!(log.0, ["setting_up"]);
    }
}
