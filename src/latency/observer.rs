//! `--latency` as an observer of a run's phases: it hands the producers its
//! recorder before they start, collects their histograms at each sample
//! (the previous second's, handed in by then) and the rest at tear-down,
//! when every producer has handed in its last.

use std::sync::Arc;

use super::recorder::Recorder;
use super::{LatencyRecord, RunLatency};
use crate::runner::phases::RunObserver;
use crate::runner::OpTiming;
use crate::stats::Sample;

pub struct LatencyObserver {
    recorder: Arc<Recorder>,
    run: RunLatency,
    /// Samples taken so far: the histograms after the last are not kept.
    samples: u32,
}

impl LatencyObserver {
    /// For `producers` producers; `warmup` seconds of a timed run are left
    /// out, `None` is a fixed-work run (everything counts).
    pub fn new(producers: usize, warmup: Option<u32>) -> LatencyObserver {
        LatencyObserver {
            recorder: Arc::new(Recorder::new(producers)),
            run: warmup.map_or_else(RunLatency::fixed, RunLatency::timed),
            samples: 0,
        }
    }

    /// What is kept, once the run is over; `rate_ns` is the time per
    /// operation of one producer from the run's rate.
    pub fn finish(self, rate_ns: Option<f64>) -> LatencyRecord {
        self.run.record(self.recorder.clock(), rate_ns)
    }
}

impl RunObserver for LatencyObserver {
    fn producer_timing(&self) -> Option<Arc<dyn OpTiming>> {
        Some(Arc::clone(&self.recorder) as Arc<dyn OpTiming>)
    }

    fn sample(&mut self, sample: &Sample) {
        self.samples = sample.iteration + 1;
        self.run
            .take(&self.recorder, Some(sample.iteration), u32::MAX);
    }

    fn tearing_down(&mut self) {
        self.run.take(&self.recorder, None, self.samples);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::Kind;
    use crate::error::{Error, Result};
    use crate::latency::recorder::Collected;
    use crate::runner::affinity::{place, Affinity, Placement};
    use crate::runner::phases::RunSeconds;
    use crate::runner::{run_fixed, run_timed, ProducerCtx, Workload};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// A producer that spins on nothing.
    struct Spin;
    impl Workload for Spin {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.run(|| std::hint::black_box(()));
            Ok(())
        }
    }

    fn unpinned(producers: usize) -> Placement {
        place(&Affinity::None, producers, 0, &[0]).unwrap()
    }

    /// Hands the producers a recorder and collects what they hand in.
    struct Timed(Arc<Recorder>, Vec<Collected>);
    impl RunObserver for Timed {
        fn producer_timing(&self) -> Option<Arc<dyn OpTiming>> {
            Some(self.0.clone() as Arc<dyn OpTiming>)
        }
        fn sample(&mut self, sample: &Sample) {
            let before = u64::from(sample.iteration);
            self.1.extend(self.0.collect(Some(before)));
        }
    }

    fn timed(producers: usize) -> Timed {
        Timed(Arc::new(Recorder::new(producers)), Vec::new())
    }

    /// Runs `work` for `calls` on `producers` with a timed observer: the
    /// calls and operations the run counted, and the operations recorded.
    fn fixed_and_recorded(work: &dyn Workload, producers: usize, calls: u64) -> (u64, u64, u64) {
        let mut observer = timed(producers);
        let run = run_fixed(
            work,
            &unpinned(producers),
            calls,
            &[Kind::Counter],
            &mut [&mut observer],
        )
        .unwrap();
        let recorded: u64 = observer
            .0
            .collect(None)
            .iter()
            .map(|c| c.distribution.count())
            .sum();
        (run.calls, run.ops, recorded)
    }

    #[test]
    fn timed_operations_keep_the_counts_exact_and_are_all_recorded() {
        assert_eq!(
            fixed_and_recorded(&Spin, 3, 100_003),
            (100_003, 100_003, 100_003)
        );

        struct Single;
        impl Workload for Single {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Ok(1))
            }
        }
        assert_eq!(fixed_and_recorded(&Single, 2, 1001), (1001, 1001, 1001));
    }

    #[test]
    fn timed_runs_hand_in_a_histogram_per_second() {
        /// Spins, counting every operation it makes.
        struct Counted(AtomicU64);
        impl Workload for Counted {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.run(|| {
                    self.0.fetch_add(1, Relaxed);
                });
                Ok(())
            }
        }
        let work = Counted(AtomicU64::new(0));
        let mut observer = timed(1);
        let timing = RunSeconds {
            warmup_secs: 0,
            duration_secs: 2,
            tick_ms: crate::config::SECOND_MS,
        };
        let samples = run_timed(
            &work,
            &unpinned(1),
            timing,
            &[Kind::Counter],
            &mut [&mut observer],
        )
        .unwrap();
        assert_eq!(samples.len(), 2);
        let mut collected = std::mem::take(&mut observer.1);
        collected.extend(observer.0.collect(None));
        let epochs: Vec<u64> = collected.iter().map(|c| c.epoch).collect();
        // Two seconds, and the tail after the last tick when the producer
        // ran again before it saw the stop (on a loaded machine it may not).
        assert!(
            epochs == [0, 1] || epochs == [0, 1, 2],
            "two seconds and the tail: {epochs:?}"
        );
        // Every operation is in one second's histogram or the tail's. Which
        // second holds the few made between a tick's count and its turn of
        // the histograms depends on the scheduler, so no bound on that is
        // asserted: a loaded machine can stretch it.
        let recorded: u64 = collected.iter().map(|c| c.distribution.count()).sum();
        assert_eq!(recorded, work.0.load(Relaxed));
        assert!(collected[..2].iter().all(|c| c.distribution.count() > 0));
    }

    #[test]
    fn a_failing_timed_operation_is_not_recorded() {
        struct Fails;
        impl Workload for Fails {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Err(Error::runtime("the operation failed")))
            }
        }
        let mut observer = timed(1);
        let err = run_fixed(
            &Fails,
            &unpinned(1),
            10,
            &[Kind::Counter],
            &mut [&mut observer],
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
        assert!(observer
            .0
            .collect(None)
            .iter()
            .all(|c| c.distribution.count() == 0));
    }
}
