//! The two kinds of run: timed (a sample every second, `run_timed`) and
//! fixed work (exactly so many operations, `run_fixed`).

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::phases::{self, announce, Observers, RunSeconds};
use super::threads::with_threads;
use super::ticks::nanos;
use super::{affinity::Placement, Workload};
use crate::channels::{self, Kind};
use crate::error::{Error, Result};
use crate::stats::Sample;

/// One snapshot of every channel the workload reads each tick, checked
/// against the kinds its benchmark declared.
fn read(workload: &dyn Workload, ops: u64, kinds: &[Kind]) -> Result<Vec<Option<u64>>> {
    let readings = workload.read(ops);
    if readings.len() != kinds.len() {
        return Err(Error::runtime(format!(
            "the workload read {} channels where its benchmark declares {}",
            readings.len(),
            kinds.len()
        )));
    }
    Ok(readings)
}

/// Runs `warmup + duration` one-second iterations and returns every sample
/// (warm-up ones marked), announcing the start of warm-up and of measurement,
/// each sample and the end of measurement to `observers`. `kinds` are the
/// kinds of the channels the workload reads each tick, in its order.
pub fn run_timed(
    workload: &dyn Workload,
    placement: &Placement,
    timing: RunSeconds,
    kinds: &[Kind],
    observers: &mut Observers<'_, '_>,
) -> Result<Vec<Sample>> {
    let RunSeconds {
        warmup_secs: warmup,
        duration_secs: duration,
        tick_ms,
    } = timing;
    let tick = Duration::from_millis(u64::from(tick_ms));
    let (workload, spin) = super::unwrap_injected(workload);
    // Counted before any producer runs, so the first sample misses nothing.
    let before = read(workload, 0, kinds)?;
    let op_timing = phases::producer_timing(observers);
    with_threads(
        workload,
        spin,
        placement,
        None,
        op_timing,
        |shared, start| {
            let mut samples = Vec::with_capacity((warmup + duration) as usize);
            if warmup > 0 {
                announce(observers, |o| o.warmup_started(timing));
            } else {
                workload.measuring(true);
                announce(observers, |o| o.measure_started(timing));
            }
            let mut prev_time = start;
            let mut prev = before;
            for iteration in 0..warmup + duration {
                let deadline = start + tick * (iteration + 1);
                if !shared.stop.sleep_until(deadline) {
                    break;
                }
                let now = Instant::now();
                let readings = match read(workload, shared.total_ops(), kinds) {
                    Ok(readings) => readings,
                    Err(err) => {
                        shared.fail(err);
                        break;
                    }
                };
                // The histograms' second ends where the counts' does.
                if let Some(timing) = &shared.timing {
                    timing.advance(u64::from(iteration) + 1);
                }
                let sample = Sample {
                    iteration,
                    elapsed_ns: nanos(now - prev_time),
                    late_ns: signed_nanos(now, deadline),
                    warmup: iteration < warmup,
                    values: channels::share(kinds, &readings, &prev),
                };
                announce(observers, |o| o.sample(&sample));
                samples.push(sample);
                if iteration + 1 == warmup {
                    workload.measuring(true);
                    announce(observers, |o| o.measure_started(timing));
                }
                prev = readings;
                prev_time = now;
            }
            workload.measuring(false);
            if samples.len() >= warmup as usize {
                announce(observers, |o| o.measure_ended(&samples));
            }
            samples
        },
    )
}

/// The result of a fixed-work run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedRun {
    /// From the start line until the last producer finished.
    pub elapsed_ns: u64,
    /// Operation bodies run (e.g. BPF_PROG_TEST_RUN calls).
    pub calls: u64,
    /// Operations the producers counted.
    pub ops: u64,
    /// Each channel read every tick, over the run: a counter's count from
    /// the start line to the end, a gauge's reading at the end; `None`
    /// where a reading failed.
    pub values: Vec<Option<u64>>,
}

impl FixedRun {
    /// One producer's time per operation, in ns; `None` without operations.
    pub fn ns_per_op(&self, producers: usize) -> Option<f64> {
        (self.ops > 0).then(|| self.elapsed_ns as f64 * producers as f64 / self.ops as f64)
    }
}

/// Splits `repeat` calls over the producers, the remainder to the first ones.
pub fn quotas(repeat: u64, producers: usize) -> Vec<u64> {
    let n = producers.max(1) as u64;
    (0..n)
        .map(|i| repeat / n + u64::from(i < repeat % n))
        .collect()
}

/// Runs exactly `repeat` producer operations in total and reports the time;
/// announces its start to `observers` (its end is announced by the caller,
/// once the counts are read). `kinds` as for [`run_timed`].
pub fn run_fixed(
    workload: &dyn Workload,
    placement: &Placement,
    repeat: u64,
    kinds: &[Kind],
    observers: &mut Observers<'_, '_>,
) -> Result<FixedRun> {
    let (workload, spin) = super::unwrap_injected(workload);
    let quotas = quotas(repeat, placement.producers.len());
    let before = read(workload, 0, kinds)?;
    let op_timing = phases::producer_timing(observers);
    workload.measuring(true);
    let threads = with_threads(
        workload,
        spin,
        placement,
        Some(&quotas),
        op_timing,
        |shared, start| {
            announce(observers, |o| o.fixed_started(repeat));
            let producers = shared.counters.len();
            let all_done = || shared.producers_done.load(Relaxed) == producers;
            shared.stop.wait_for(all_done);
            // A stop request (Ctrl-C) ends that wait at once, while each
            // producer still ends its burst and then stores the calls it
            // made: wait for them all, so that a stopped run reports the
            // work it did.
            shared.stop.wait_regardless(all_done);
            let last = *shared.last_finish.lock().unwrap_or_else(|e| e.into_inner());
            let elapsed_ns = nanos(last.unwrap_or_else(Instant::now) - start);
            (elapsed_ns, shared.total_calls(), shared.total_ops())
        },
    );
    workload.measuring(false);
    let (elapsed_ns, calls, ops) = threads?;
    let after = read(workload, ops, kinds)?;
    Ok(FixedRun {
        elapsed_ns,
        calls,
        ops,
        values: channels::share(kinds, &after, &before),
    })
}

fn signed_nanos(now: Instant, deadline: Instant) -> i64 {
    match now.checked_duration_since(deadline) {
        Some(late) => i64::try_from(late.as_nanos()).unwrap_or(i64::MAX),
        None => -i64::try_from((deadline - now).as_nanos()).unwrap_or(i64::MAX),
    }
}
