//! The batch a run times: sized by timing a small one, then checked for
//! proportionality (twice the calls take twice the time) on one CPU, in
//! pairs of N and 2N calls' runs, before any per-call time is taken from it
//! (the kernel runner's `bpf_bench_calibrate`, which only warns).

use super::{Area, MAX_BATCH, SEED_BATCH};
use crate::error::{Error, Result};
use crate::runner::affinity;
use crate::stats::timing::{self, Disproportion};

/// The runs each calibration step takes the median (the seed) or the
/// least (N and 2N calls) of.
const CALIBRATE_RUNS: usize = 5;
/// Pairs of N and 2N calls timed before a run is refused: noise that breaks
/// one pair seldom breaks three in a row, a cost that grows with the calls
/// breaks every one.
const CALIBRATE_TRIES: usize = 3;

/// The median time of a few runs (`run`) of `batch` calls.
fn median_time(area: &Area, batch: u64, run: &impl Fn() -> Result<()>) -> Result<u64> {
    let times = (0..CALIBRATE_RUNS)
        .map(|_| one_time(area, batch, run))
        .collect::<Result<Vec<u64>>>()?;
    Ok(timing::median_of(&times).unwrap_or(0))
}

/// The time of one run of `batch` calls (`run`); 0 when none was taken.
fn one_time(area: &Area, batch: u64, run: &impl Fn() -> Result<()>) -> Result<u64> {
    area.reset();
    area.set_batch(batch);
    area.set_enabled(true);
    let ran = run();
    area.set_enabled(false);
    ran?;
    Ok(area.batch_times().first().copied().unwrap_or(0))
}

/// The least time of [`CALIBRATE_RUNS`] runs of `batch` calls and of as
/// many of twice the calls, run in turn: a drift (the load, a clock) weighs
/// on both alike, and noise only ever adds time.
fn paired_times(area: &Area, batch: u64, run: &impl Fn() -> Result<()>) -> Result<(u64, u64)> {
    let (mut time_n, mut time_2n) = (u64::MAX, u64::MAX);
    for _ in 0..CALIBRATE_RUNS {
        time_n = time_n.min(one_time(area, batch, run)?);
        time_2n = time_2n.min(one_time(area, 2 * batch, run)?);
    }
    Ok((time_n, time_2n))
}

/// The batch that takes about 10 ms, `run` running one batch, checked for
/// proportionality: up to [`CALIBRATE_TRIES`] pairs of N and 2N calls'
/// times, the first within 5 % of twice keeping the batch. When none is,
/// the run is refused (exit 5) with the nearest ratio, as no per-call time
/// can be taken from batches whose time is not their calls'.
pub fn calibrate(area: &Area, run: impl Fn() -> Result<()>) -> Result<u64> {
    // One CPU throughout: a call's time moves by a fifth from one CPU (and
    // moment) to another on a shared VM (pass-non-ip's 10.6 to 13.0 ns/op),
    // and N timed on one and 2N on another is no proportion of the calls.
    let _pinned = affinity::pin_here().ok();
    let seed = median_time(area, SEED_BATCH, &run)?;
    let batch = timing::batch_for(seed, SEED_BATCH, MAX_BATCH);
    let mut misses = Vec::new();
    for _ in 0..CALIBRATE_TRIES {
        let (time_n, time_2n) = paired_times(area, batch, &run)?;
        match timing::proportionality(time_n, time_2n) {
            Ok(()) => return Ok(batch),
            Err(miss) => misses.push(miss),
        }
    }
    Err(Error::setup(disproportion_refusal(batch, &misses)))
}

/// The refusal after every try missed: the nearest ratio decides, and the
/// others follow it.
fn disproportion_refusal(batch: u64, misses: &[Disproportion]) -> String {
    let nearest = misses
        .iter()
        .min_by(|a, b| a.error_pct.total_cmp(&b.error_pct))
        .copied()
        .unwrap_or(Disproportion {
            ratio: f64::INFINITY,
            error_pct: f64::INFINITY,
        });
    let ratios: Vec<String> = misses.iter().map(|m| format!("{:.3}", m.ratio)).collect();
    format!(
        "proportionality check failed (2N/N ratio={:.3}, expected=2.000, error={:.1}%) for \
         N = {batch} calls, the nearest of {} tries ({}): a batch's time is not proportional \
         to its calls (system noise, or a fixed cost per batch), so no per-call time is taken",
        nearest.ratio,
        nearest.error_pct,
        misses.len(),
        ratios.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

    use super::super::{TIMING_CPUS, TIMING_SAMPLES};
    use super::*;

    /// The memory of bpf/timing.h's area, and the program that writes it:
    /// each run (the `n`th, from 1) takes `ns(n, batch)` and keeps it as
    /// the program does while timing is on.
    struct FakeProgram {
        samples: Vec<AtomicU64>,
        idx: Vec<AtomicU32>,
        enabled: AtomicU32,
        batch: AtomicU32,
        runs: Cell<u64>,
    }

    impl FakeProgram {
        fn new() -> FakeProgram {
            FakeProgram {
                samples: (0..TIMING_CPUS * TIMING_SAMPLES)
                    .map(|_| AtomicU64::new(0))
                    .collect(),
                idx: (0..TIMING_CPUS).map(|_| AtomicU32::new(0)).collect(),
                enabled: AtomicU32::new(0),
                batch: AtomicU32::new(0),
                runs: Cell::new(0),
            }
        }

        fn area(&self) -> Area {
            // SAFETY: the area's layout, in memory that outlives it.
            unsafe {
                Area::new(
                    self.samples[0].as_ptr(),
                    self.idx[0].as_ptr(),
                    self.enabled.as_ptr(),
                    self.batch.as_ptr(),
                )
            }
        }

        fn run(&self, ns: impl Fn(u64, u64) -> u64) -> Result<()> {
            self.runs.set(self.runs.get() + 1);
            let time = ns(self.runs.get(), u64::from(self.batch.load(Relaxed)));
            let at = self.idx[0].load(Relaxed) as usize;
            if self.enabled.load(Relaxed) == 1 && at < TIMING_SAMPLES {
                self.samples[at].store(time, Relaxed);
                self.idx[0].store(at as u32 + 1, Relaxed);
            }
            Ok(())
        }
    }

    /// The machine slows by a fifth after the first ten runs (the seed's
    /// and five more): N's and 2N's runs in turn, each step's least, see
    /// the calls' proportion. Taken one step after the other (every N run
    /// before the slowdown, every 2N run after, as before), it was a
    /// ratio of 2.4 and a refusal.
    #[test]
    fn a_drift_between_the_steps_is_no_disproportion() {
        let program = FakeProgram::new();
        let area = program.area();
        let slower = |run: u64, batch: u64| match run <= 10 {
            true => 10 * batch,
            false => 12 * batch,
        };
        let batch = calibrate(&area, || program.run(slower)).expect("proportional");
        assert_eq!(batch, timing::batch_for(1000, SEED_BATCH, MAX_BATCH));
    }

    /// A fixed cost per batch (here growing after the first try) breaks
    /// every try: the run is refused by the nearest ratio, every try's
    /// after it.
    #[test]
    fn a_cost_per_batch_is_refused_with_every_tries_ratio() {
        let program = FakeProgram::new();
        let area = program.area();
        let fixed = |run: u64, batch: u64| match run <= 15 {
            true => 10 * batch + 100_000,
            false => 10 * batch + 200_000,
        };
        let why = calibrate(&area, || program.run(fixed))
            .unwrap_err()
            .to_string();
        assert!(
            why.starts_with(
                "proportionality check failed (2N/N ratio=1.497, expected=2.000, error=25.1%) \
                 for N = 9900 calls, the nearest of 3 tries (1.497, 1.331, 1.331): "
            ),
            "{why}"
        );
    }
}
