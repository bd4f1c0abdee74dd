//! What `--budget` must hold: the budget counts from the start, sizing
//! included, and a calibration needs its sizing runs and
//! [`MIN_ROUNDS`] rounds of three runs. Before sizing, only the runs'
//! seconds are known (the least is then a lower bound); after it, what each
//! run added to its seconds (set-up, tear-down) has been measured too.

use super::finding::MIN_ROUNDS;
use crate::error::Error;

/// Runs sizing the injected loop, after a first run of the benchmark.
pub const SIZING_RUNS: u32 = 3;
/// Measured seconds of a sizing run (no warm-up).
pub const SIZING_SECS: u32 = 2;
/// Runs in a round: A, A again, A'.
const ARMS: u32 = 3;

/// The runs' own seconds, set-up and tear-down not counted: the first run,
/// the sizing runs and the least rounds.
pub fn least_before_sizing(warmup: u32, duration: u32) -> u32 {
    let run = warmup + duration;
    run + SIZING_RUNS * SIZING_SECS + MIN_ROUNDS as u32 * ARMS * run
}

/// The least seconds once sizing has taken `sizing_secs` from the start,
/// and the seconds a round's run takes: its own, and what each sizing run
/// (the first included) added to its seconds.
pub fn least_after_sizing(sizing_secs: f64, warmup: u32, duration: u32) -> (f64, f64) {
    let run = f64::from(warmup + duration);
    let measured = run + f64::from(SIZING_RUNS * SIZING_SECS);
    let added = ((sizing_secs - measured) / f64::from(SIZING_RUNS + 1)).max(0.0);
    let per_run = run + added;
    (
        sizing_secs + (MIN_ROUNDS as u32 * ARMS) as f64 * per_run,
        per_run,
    )
}

/// Refuses a budget below the least, before anything runs.
pub fn check_before_sizing(budget: u64, warmup: u32, duration: u32) -> Result<(), Error> {
    let least = least_before_sizing(warmup, duration);
    if budget >= u64::from(least) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--budget {budget} is below the least a calibration with -w{warmup} -d{duration} takes: \
         {least} s (a first run of {run} s, {SIZING_RUNS} sizing runs of {SIZING_SECS} s and \
         {MIN_ROUNDS} rounds of {ARMS} runs of {run} s), before set-up and tear-down",
        run = warmup + duration
    )))
}

/// Refuses a budget below the least measured by sizing.
pub fn check_after_sizing(
    budget: u64,
    sizing_secs: f64,
    warmup: u32,
    duration: u32,
) -> Result<(), Error> {
    let (least, per_run) = least_after_sizing(sizing_secs, warmup, duration);
    if budget as f64 >= least {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--budget {budget} is below the least this calibration takes here: {:.0} s (sizing took \
         {sizing_secs:.1} s, and {MIN_ROUNDS} rounds of {ARMS} runs take about {per_run:.1} s a \
         run)",
        least.ceil()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_before_sizing_is_the_runs_own_seconds() {
        // -w0 -d1: 1 + 3 × 2 + 3 × 3 × 1 = 16; -w1 -d2: 3 + 6 + 27 = 36.
        assert_eq!(least_before_sizing(0, 1), 16);
        assert_eq!(least_before_sizing(1, 2), 36);
        let err = check_before_sizing(10, 0, 1).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "--budget 10 is below the least a calibration with -w0 -d1 takes: 16 s (a first \
                 run of 1 s, 3 sizing runs of 2 s and 3 rounds of 3 runs of 1 s), before set-up \
                 and tear-down"
            )
        );
        assert!(check_before_sizing(16, 0, 1).is_ok());
        assert!(check_before_sizing(180, 1, 2).is_ok());
        // The longest runs cannot be calibrated in the default budget.
        assert!(check_before_sizing(180, 1, 20).is_err());
    }

    #[test]
    fn the_least_after_sizing_carries_what_each_run_added() {
        // -w0 -d1: 7 s of runs took 9 s, 0.5 s more each of four runs; a
        // round's run takes 1.5 s, nine of them 13.5: 22.5 s in all.
        let (least, per_run) = least_after_sizing(9.0, 0, 1);
        assert!((per_run - 1.5).abs() < 1e-9 && (least - 22.5).abs() < 1e-9);
        let err = check_after_sizing(20, 9.0, 0, 1)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "--budget 20 is below the least this calibration takes here: 23 s (sizing took \
                 9.0 s, and 3 rounds of 3 runs take about 1.5 s a run)"
            )
        );
        assert!(check_after_sizing(23, 9.0, 0, 1).is_ok());
        // Sizing faster than its seconds (a clock's rounding) adds nothing.
        assert_eq!(least_after_sizing(6.9, 0, 1), (6.9 + 9.0, 1.0));
    }
}
