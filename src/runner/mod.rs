//! Threads, affinity, the stop flag and the measure loop. The runner knows no
//! benchmark: it drives any [`Workload`] and announces the run's phases and
//! samples to its observers ([`phases`]).

//!
//! The files, from the bottom up: [`ticks`] the clock readings, `hooks`
//! what the producer loop does around each operation, `shared` the stop
//! flag, start line and counters the threads share, `producer` the producer
//! loop, `threads` spawning and joining, `runs` timed and fixed-work runs.

pub mod affinity;
pub mod cycles;
mod hooks;
pub mod inject;
pub mod phases;
mod producer;
mod runs;
mod shared;
mod threads;
pub mod ticks;

use crate::channels::{Final, Readings};
use crate::error::Result;
use crate::trigger_path::TriggerUsed;
pub use hooks::{OpRecorder, OpTiming};
pub use producer::{ProducerCtx, BURST};
pub use runs::{quotas, run_fixed, run_timed, FixedRun};
pub use threads::ConsumerCtx;

/// Where a run was when an interrupt stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoppedAt {
    /// Before a run started (between sweep points).
    Between,
    SetUp,
    WarmUp,
    /// `measured` of `of` measured iterations were done.
    Measuring {
        measured: usize,
        of: u32,
    },
    /// A fixed-work run had done `done` of `of` calls.
    Fixed {
        done: u64,
        of: u64,
    },
    /// An attach cycle, at this step.
    Cycle(cycles::Stopped),
}

/// What a benchmark's set-up made: what kind of run it is, and the trigger
/// its BPF body runs from (said under the set-up line).
pub struct SetUp {
    pub run: Prepared,
    /// For a benchmark whose body runs from a trigger it chose at set-up
    /// (upstream's, or a fallback the kernel allows), which one.
    pub trigger: Option<TriggerUsed>,
    /// For a probe benchmark, the red zone on its probe's path, checked at
    /// set-up (what `--probe` says of it).
    pub red_zone: Option<crate::red_zone::RedZoneFound>,
}

/// The two kinds of run a set-up prepares.
pub enum Prepared {
    /// Producers (and consumers) at work, read each tick or once at the end.
    Producers(Box<dyn Workload>),
    /// Attach cycles on the main thread (attach, verify, detach).
    Cycles(Box<dyn cycles::CycleWorkload>),
}

impl SetUp {
    /// A run of producers, without a trigger to name.
    pub fn producers(workload: impl Workload + 'static) -> SetUp {
        SetUp {
            run: Prepared::Producers(Box::new(workload)),
            trigger: None,
            red_zone: None,
        }
    }

    /// The same set-up, with the red zone its probe's path was found to leave.
    pub fn with_red_zone(self, red_zone: Option<crate::red_zone::RedZoneFound>) -> SetUp {
        SetUp { red_zone, ..self }
    }

    /// The same set-up, its body run from `trigger`.
    pub fn from_trigger(self, trigger: TriggerUsed) -> SetUp {
        SetUp {
            trigger: Some(trigger),
            ..self
        }
    }
}

/// What a workload found besides its readings, asked once the run is over
/// while it is still set up (the last moment to ask the kernel about it).
#[derive(Default)]
pub struct Facts {
    /// For a probe benchmark, how the kernel handles its probe.
    pub probe_path: Option<Result<crate::probe_path::ProbePath>>,
    /// For a probe benchmark, the red zone on its probe's path.
    pub red_zone: Option<Result<crate::red_zone::RedZoneFound>>,
    /// For a benchmark whose consumers attach and detach probes while the
    /// producers hit (attach churn): the churning threads and the cycles
    /// they finished (the run keeps those of its measured seconds).
    pub churn: Option<(usize, Vec<cycles::ChurnCycle>)>,
    /// The values of its [`Kind::Final`](crate::channels::Kind) channels.
    pub finals: Vec<Final>,
}

/// A probe's path as found, and the red zone on it.
pub type Probed = (
    Result<crate::probe_path::ProbePath>,
    Option<Result<crate::red_zone::RedZoneFound>>,
);

impl Facts {
    /// The probe path and the red zone on it, taken out together.
    pub fn take_probed(&mut self) -> Option<Probed> {
        let path = self.probe_path.take()?;
        Some((path, self.red_zone.take()))
    }
}

/// A benchmark after set-up: the bodies its threads run and the channels it reads.
pub trait Workload: Sync {
    /// The producer body. It loops through [`ProducerCtx::run`] or
    /// [`ProducerCtx::try_run`], which count operations and stop on time.
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()>;

    /// The consumer body, for benchmarks that have consumers; returns when
    /// [`ConsumerCtx::should_stop`] says so. When the run stops, a consumer
    /// blocked in a system call (epoll_wait, say) is interrupted with EINTR,
    /// again and again until it returns: treat EINTR as "look at
    /// `should_stop`". Counts the consumer adds after the stop (draining what
    /// is left) are part of a fixed-work run's result.
    fn consume(&self, _ctx: &ConsumerCtx<'_>) -> Result<()> {
        Ok(())
    }

    /// One reading of every channel its benchmark reads each tick, in the
    /// order it declared them, taken together (one snapshot): counters
    /// cumulative since set-up, gauges as they are now; `None` for a
    /// reading that failed. `ops` is what the producers counted in user
    /// space, the one channel of a benchmark counted there.
    fn read(&self, ops: u64) -> Readings {
        vec![Some(ops)]
    }

    /// The measured part of a run begins (`true`: the measured seconds, or
    /// a fixed run's start) or ends (`false`), on the measuring thread while
    /// the producers run: a workload that times its own operations (inside
    /// BPF) keeps the timings between the two alone.
    fn measuring(&self, _on: bool) {}

    /// What it found besides its readings (see [`Facts`]).
    fn facts(&self) -> Facts {
        Facts::default()
    }

    /// Under `bench calibrate`, a workload wrapped to pay a busy loop after
    /// each operation ([`inject::Injected`]): the workload it wraps and the
    /// spin; `None` for the others. The runner unwraps it on entry and asks
    /// everything else of the wrapped workload, so nothing is forwarded.
    fn injected(&self) -> Option<(&dyn Workload, &inject::Spin)> {
        None
    }
}

/// The workload to run and the spin its producers pay: an injected
/// workload's own (see [`Workload::injected`]), or `workload` without one.
pub(crate) fn unwrap_injected(workload: &dyn Workload) -> (&dyn Workload, Option<&inject::Spin>) {
    match workload.injected() {
        Some((inner, spin)) => (inner, Some(spin)),
        None => (workload, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::Kind;
    use crate::error::Error;
    use affinity::{place, Affinity, Placement};
    use phases::RunSeconds;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::{Duration, Instant};

    /// A producer that spins on nothing, for the runner's tests.
    pub(super) struct Spin;
    impl Workload for Spin {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.run(|| std::hint::black_box(()));
            Ok(())
        }
    }

    struct Fails;
    impl Workload for Fails {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.try_run(|| Err(Error::runtime("the operation failed")))
        }
    }

    fn timing(warmup_secs: u32, duration_secs: u32) -> RunSeconds {
        RunSeconds {
            warmup_secs,
            duration_secs,
            tick_ms: crate::config::SECOND_MS,
        }
    }

    fn unpinned(producers: usize) -> Placement {
        place(&Affinity::None, producers, 0, &[0]).unwrap()
    }

    #[test]
    fn quotas_split_the_work_exactly() {
        assert_eq!(quotas(10, 3), vec![4, 3, 3]);
        assert_eq!(quotas(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(quotas(7, 1), vec![7]);
    }

    #[test]
    fn fixed_runs_do_exactly_the_work_asked() {
        /// Counts its own bodies per producer, apart from the runner's
        /// counters, and reports them (from a non-zero start) as hits.
        struct Tally([AtomicU64; 3]);
        impl Workload for Tally {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.run(|| {
                    self.0[ctx.id].fetch_add(1, Relaxed);
                });
                Ok(())
            }
            fn read(&self, _ops: u64) -> Readings {
                vec![Some(self.0.iter().map(|c| c.load(Relaxed)).sum())]
            }
        }
        let tally = Tally([AtomicU64::new(7), AtomicU64::new(0), AtomicU64::new(0)]);
        let run = run_fixed(&tally, &unpinned(3), 100_003, &[Kind::Counter], &mut []).unwrap();
        let bodies: Vec<u64> = tally.0.iter().map(|c| c.load(Relaxed)).collect();
        assert_eq!(bodies, [7 + 33_335, 33_334, 33_334]);
        assert_eq!((run.calls, run.ops), (100_003, 100_003));
        assert_eq!(run.values, [Some(100_003)], "the count since the start");

        // A call that does several operations: calls and ops part.
        struct Batches;
        impl Workload for Batches {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Ok(5))
            }
        }
        let run = run_fixed(&Batches, &unpinned(2), 1001, &[Kind::Counter], &mut []).unwrap();
        assert_eq!((run.calls, run.ops), (1001, 5005));
    }

    #[test]
    fn a_failing_producer_fails_the_run() {
        let err = run_fixed(&Fails, &unpinned(2), 10, &[Kind::Counter], &mut []).unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
        let err = run_timed(
            &Fails,
            &unpinned(1),
            timing(0, 3),
            &[Kind::Counter],
            &mut [],
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
    }

    #[test]
    fn what_a_producer_does_before_its_start_line_is_not_timed() {
        struct SlowSetup;
        impl Workload for SlowSetup {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                std::thread::sleep(Duration::from_millis(300));
                ctx.run(|| std::hint::black_box(()));
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            }
        }
        let run = run_fixed(&SlowSetup, &unpinned(2), 1000, &[Kind::Counter], &mut []).unwrap();
        assert_eq!(run.calls, 1000);
        assert!(run.elapsed_ns < 250_000_000, "{} ns", run.elapsed_ns);
    }

    #[test]
    fn a_panicking_producer_fails_the_run() {
        struct Panics;
        impl Workload for Panics {
            fn produce(&self, _ctx: &ProducerCtx<'_>) -> Result<()> {
                panic!("boom")
            }
        }
        let err = run_fixed(&Panics, &unpinned(1), 1, &[Kind::Counter], &mut []).unwrap_err();
        assert_eq!(err.to_string(), "producer 0 panicked: boom");
    }

    /// A consumer that sleeps in epoll_wait on an empty set, as one waiting
    /// on an idle buffer does: only the runner's wake-up can end its wait.
    struct BlockedConsumer {
        woken: AtomicU64,
    }
    impl Workload for BlockedConsumer {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.wait_for_stop();
            Ok(())
        }
        fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
            // SAFETY: plain epoll calls on a descriptor this function owns.
            let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            assert!(epoll >= 0);
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            while !ctx.should_stop() {
                let n = unsafe { libc::epoll_wait(epoll, &mut event, 1, -1) };
                assert_eq!(n, -1, "nothing can be ready");
                assert_eq!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EINTR)
                );
                self.woken.fetch_add(1, Relaxed);
            }
            unsafe { libc::close(epoll) };
            Ok(())
        }
    }

    #[test]
    fn consumers_blocked_in_epoll_are_woken_at_the_end() {
        let workload = BlockedConsumer {
            woken: AtomicU64::new(0),
        };
        let placement = place(&Affinity::None, 1, 2, &[0]).unwrap();
        let start = Instant::now();
        let samples = run_timed(
            &workload,
            &placement,
            timing(0, 1),
            &[Kind::Counter],
            &mut [],
        )
        .unwrap();
        assert_eq!(samples.len(), 1);
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(workload.woken.load(Relaxed) >= 2);
    }

    #[test]
    fn timed_runs_tick_once_a_second_and_mark_warmup() {
        let samples =
            run_timed(&Spin, &unpinned(1), timing(1, 1), &[Kind::Counter], &mut []).unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples[0].warmup && !samples[1].warmup);
        // The tick fires after its deadline, never before, and each interval
        // is a second plus its tick's lateness less the previous one's (the
        // schedule does not drift), however late a loaded machine ticks.
        let mut previous_late = 0;
        for s in &samples {
            assert!(s.value(0) > Some(0));
            assert!(s.late_ns >= 0, "{s:?}");
            let expected = 1_000_000_000 + s.late_ns - previous_late;
            assert!(
                (s.elapsed_ns as i64 - expected).abs() < 5_000_000,
                "{samples:?}"
            );
            previous_late = s.late_ns;
        }
    }
}
