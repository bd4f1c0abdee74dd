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

use serde::{Deserialize, Serialize};

use crate::error::Result;
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

/// What a benchmark counted since it was set up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub hits: u64,
    pub drops: u64,
}

/// A benchmark after set-up: the bodies its threads run and the counters it reads.
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

    /// Cumulative counts since set-up. `ops` is what the producers counted in
    /// user space; a benchmark whose hits are counted elsewhere (in BPF) reads
    /// its own counters instead.
    fn measure(&self, ops: u64) -> Counts {
        Counts {
            hits: ops,
            drops: 0,
        }
    }

    /// Cumulative counts kept beside hits and drops, in a fixed order (the
    /// sockmap benchmark's bytes sent, send calls, bytes received and read
    /// calls): each timed sample carries its second's share of each
    /// (`Sample::extra`). Empty for most.
    fn extra_counts(&self) -> Vec<u64> {
        Vec::new()
    }

    /// For a probe benchmark, how the kernel handles its probe, found now
    /// (the runner asks after the probe has been hit); `None` for the others.
    fn probe_path(&self) -> Option<Result<crate::probe_path::ProbePath>> {
        None
    }

    /// Under `bench calibrate`, a workload wrapped to pay a busy loop after
    /// each operation ([`inject::Injected`]): the workload it wraps and the
    /// spin; `None` for the others. The runner unwraps it on entry and asks
    /// everything else of the wrapped workload, so nothing is forwarded.
    fn injected(&self) -> Option<(&dyn Workload, &inject::Spin)> {
        None
    }

    /// For an attach benchmark, what its cycles attach: the runner drives
    /// cycles instead of producers.
    fn cycles(&self) -> Option<&dyn cycles::CycleWorkload> {
        None
    }

    /// For a benchmark whose consumers attach and detach probes while the
    /// producers hit (attach churn), the cycles they have finished so far
    /// (the run keeps those of its measured seconds) and the churning
    /// threads; `None` for the others.
    fn churn(&self) -> Option<(usize, Vec<cycles::ChurnCycle>)> {
        None
    }

    /// The measured part of a run begins (`true`: the measured seconds, or
    /// a fixed run's start) or ends (`false`), on the measuring thread while
    /// the producers run: a workload that times its own operations (inside
    /// BPF) keeps the timings between the two alone.
    fn measuring(&self, _on: bool) {}

    /// Figures of its own the benchmark measured besides its counts (the
    /// memory a map uses, a share of lookups), by name, asked while it is
    /// still set up after the run; the run keeps them, and the figures it
    /// declares read them (`figures::kept`).
    fn figures(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// For a benchmark whose BPF body runs from a trigger it chose at set-up
    /// (upstream's, or a fallback the kernel allows), which one; `None` for
    /// the others.
    fn trigger(&self) -> Option<crate::trigger_path::TriggerUsed> {
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
            fn measure(&self, _ops: u64) -> Counts {
                Counts {
                    hits: self.0.iter().map(|c| c.load(Relaxed)).sum(),
                    drops: 0,
                }
            }
        }
        let tally = Tally([AtomicU64::new(7), AtomicU64::new(0), AtomicU64::new(0)]);
        let run = run_fixed(&tally, &unpinned(3), 100_003, &mut []).unwrap();
        let bodies: Vec<u64> = tally.0.iter().map(|c| c.load(Relaxed)).collect();
        assert_eq!(bodies, [7 + 33_335, 33_334, 33_334]);
        assert_eq!((run.calls, run.ops), (100_003, 100_003));
        assert_eq!(run.counts.hits, 100_003, "the count since the start");

        // A call that does several operations: calls and ops part.
        struct Batches;
        impl Workload for Batches {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Ok(5))
            }
        }
        let run = run_fixed(&Batches, &unpinned(2), 1001, &mut []).unwrap();
        assert_eq!((run.calls, run.ops), (1001, 5005));
    }

    #[test]
    fn a_failing_producer_fails_the_run() {
        let err = run_fixed(&Fails, &unpinned(2), 10, &mut []).unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
        let err = run_timed(&Fails, &unpinned(1), timing(0, 3), &mut []).unwrap_err();
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
        let run = run_fixed(&SlowSetup, &unpinned(2), 1000, &mut []).unwrap();
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
        let err = run_fixed(&Panics, &unpinned(1), 1, &mut []).unwrap_err();
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
        let samples = run_timed(&workload, &placement, timing(0, 1), &mut []).unwrap();
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
        let samples = run_timed(&Spin, &unpinned(1), timing(1, 1), &mut []).unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples[0].warmup && !samples[1].warmup);
        // The tick fires after its deadline, never before, and each interval
        // is a second plus its tick's lateness less the previous one's (the
        // schedule does not drift), however late a loaded machine ticks.
        let mut previous_late = 0;
        for s in &samples {
            assert!(s.hits > 0);
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
