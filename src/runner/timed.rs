//! The producers' loops under `--latency`: the same loops as
//! [`ProducerCtx::run`] and [`ProducerCtx::try_run`], each operation between
//! two clock readings and recorded. They are separate loops, chosen once per
//! producer, so that a run without `--latency` pays nothing for them.

use std::sync::atomic::Ordering::Relaxed;

use super::{ProducerCtx, BURST};
use crate::error::Result;
use crate::latency::clock::{ClockKind, MonotonicSource, Source, TscSource};
use crate::latency::recorder::{ProducerHistogram, Recorder};

impl ProducerCtx<'_> {
    /// [`ProducerCtx::run`], timed.
    pub(super) fn run_timed_ops(&self, recorder: &Recorder, op: impl FnMut()) {
        let mut histogram = recorder.producer(self.id);
        match recorder.clock().kind {
            ClockKind::Tsc => self.timed_loop::<TscSource>(&mut histogram, op),
            ClockKind::Monotonic => self.timed_loop::<MonotonicSource>(&mut histogram, op),
        }
    }

    /// [`ProducerCtx::try_run`], timed.
    pub(super) fn try_run_timed_ops(
        &self,
        recorder: &Recorder,
        op: impl FnMut() -> Result<u64>,
    ) -> Result<()> {
        let mut histogram = recorder.producer(self.id);
        match recorder.clock().kind {
            ClockKind::Tsc => self.try_timed_loop::<TscSource>(&mut histogram, op),
            ClockKind::Monotonic => self.try_timed_loop::<MonotonicSource>(&mut histogram, op),
        }
    }

    #[inline(always)]
    fn timed_loop<S: Source>(&self, histogram: &mut ProducerHistogram, mut op: impl FnMut()) {
        self.start();
        let stop = &self.shared.stop;
        let quota = self.quota.unwrap_or(u64::MAX);
        let mut done = 0u64;
        while done < quota && !stop.is_set() {
            let burst = BURST.min(quota - done);
            for _ in 0..burst {
                let t0 = S::now();
                op();
                let t1 = S::now();
                histogram.record(t1.wrapping_sub(t0));
            }
            done += burst;
            self.counter.ops.store(done, Relaxed);
            histogram.hand_in_if_due();
        }
        self.counter.calls.store(done, Relaxed);
        self.finish();
    }

    #[inline(always)]
    fn try_timed_loop<S: Source>(
        &self,
        histogram: &mut ProducerHistogram,
        mut op: impl FnMut() -> Result<u64>,
    ) -> Result<()> {
        self.start();
        let mut done = 0u64;
        let mut calls = 0u64;
        let quota = self.quota.unwrap_or(u64::MAX);
        let result = loop {
            if calls >= quota || self.shared.stop.is_set() {
                break Ok(());
            }
            let t0 = S::now();
            let outcome = op();
            let t1 = S::now();
            match outcome {
                Ok(n) => done += n,
                Err(err) => break Err(err),
            }
            histogram.record(t1.wrapping_sub(t0));
            calls += 1;
            self.counter.ops.store(done, Relaxed);
            histogram.hand_in_if_due();
        };
        self.counter.calls.store(calls, Relaxed);
        self.finish();
        result
    }
}
