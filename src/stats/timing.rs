//! Timings taken inside BPF, a batch of calls at a time: the batch sized to a
//! target time, the check that a batch's time is proportional to its calls,
//! the interquartile cut of outliers and the figures of what is left (the
//! kernel runner's `bench_bpf_timing.c` method, its rules written again).

/// What one batch should take.
pub const TARGET_BATCH_NS: u64 = 10_000_000;
/// The fewest calls a batch makes.
pub const MIN_BATCH: u64 = 100;
/// How far 2N calls may be from twice N calls' time, as a fraction of 2.
pub const PROPORTIONALITY_TOLERANCE: f64 = 0.05;
/// Fewer values than this are not cut: quartiles of so few say little.
const MIN_TO_CUT: usize = 8;

/// The calls a batch makes to take [`TARGET_BATCH_NS`], from `calls` that
/// took `time_ns`, within `MIN_BATCH..=max`. From the total, not a whole
/// number of ns per call: a call under a nanosecond would truncate to 0
/// and size the batch at its minimum, where the two time readings around
/// it outweigh the calls (the kernel runner does that, and warns).
pub fn batch_for(time_ns: u64, calls: u64, max: u64) -> u64 {
    match time_ns {
        0 => MIN_BATCH,
        ns => {
            let batch = u128::from(TARGET_BATCH_NS) * u128::from(calls) / u128::from(ns);
            u64::try_from(batch)
                .unwrap_or(u64::MAX)
                .clamp(MIN_BATCH, max.max(MIN_BATCH))
        }
    }
}

/// The median of a few times (the upper one of an even count), `None` for
/// none: what a calibration step keeps of its runs.
pub fn median_of(times: &[u64]) -> Option<u64> {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

/// A batch of 2N calls that did not take twice the time of N.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Disproportion {
    /// Time of 2N over time of N.
    pub ratio: f64,
    /// How far the ratio is from 2, in percent of 2.
    pub error_pct: f64,
}

/// Whether `time_2n` is twice `time_n` within [`PROPORTIONALITY_TOLERANCE`]:
/// when it is not, a batch's time is not its calls' (a fixed cost per batch,
/// or noise), and no per-call figure can be taken from it. Two zero times
/// (no sample) are a disproportion as well: nothing shows proportionality.
pub fn proportionality(time_n: u64, time_2n: u64) -> Result<(), Disproportion> {
    let ratio = match time_n {
        0 => f64::INFINITY,
        n => time_2n as f64 / n as f64,
    };
    let error = (ratio - 2.0).abs() / 2.0;
    match error <= PROPORTIONALITY_TOLERANCE {
        true => Ok(()),
        false => Err(Disproportion {
            ratio,
            error_pct: error * 100.0,
        }),
    }
}

/// The values of `sorted` (ascending) within 1.5 interquartile ranges of
/// the quartiles; all of them when there are fewer than eight.
pub fn iqr_cut(sorted: &[f64]) -> &[f64] {
    let n = sorted.len();
    if n < MIN_TO_CUT {
        return sorted;
    }
    let (q1, q3) = (sorted[n / 4], sorted[3 * n / 4]);
    let iqr = q3 - q1;
    let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let start = sorted.iter().take_while(|&&v| v < low).count();
    let end = n - sorted.iter().rev().take_while(|&&v| v > high).count();
    &sorted[start..end.max(start)]
}

/// The value at percentile `pct` of `sorted` (the lower rank, as the
/// kernel runner takes it).
pub fn percentile(sorted: &[f64], pct: f64) -> f64 {
    let rank = ((sorted.len() as f64 * pct / 100.0) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(rank).copied().unwrap_or(0.0)
}

/// The figures of per-call times, after the cut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimingStats {
    /// Values kept after the cut.
    pub samples: usize,
    pub median: f64,
    /// Sample standard deviation (n − 1).
    pub stddev: f64,
    /// Coefficient of variation, percent: stddev over mean.
    pub cv_pct: f64,
    pub min: f64,
    pub p99: f64,
    pub max: f64,
}

impl TimingStats {
    /// The figures of `values` (any order) after the interquartile cut;
    /// `None` without values.
    pub fn of(values: &[f64]) -> Option<TimingStats> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let kept = iqr_cut(&sorted);
        let n = kept.len();
        let (&min, &max) = (kept.first()?, kept.last()?);
        let mean = kept.iter().sum::<f64>() / n as f64;
        let squares: f64 = kept.iter().map(|v| (v - mean) * (v - mean)).sum();
        let stddev = match n {
            1 => 0.0,
            n => (squares / (n - 1) as f64).sqrt(),
        };
        Some(TimingStats {
            samples: n,
            median: kept[n / 2],
            stddev,
            cv_pct: if mean > 0.0 {
                stddev / mean * 100.0
            } else {
                0.0
            },
            min,
            p99: percentile(kept, 99.0),
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_sized_to_ten_milliseconds_within_its_bounds() {
        assert_eq!(batch_for(100_000, 100, 8_000_000), 10_000);
        assert_eq!(batch_for(0, 100, 8_000_000), MIN_BATCH);
        assert_eq!(batch_for(100_000_000, 100, 8_000_000), MIN_BATCH);
        assert_eq!(batch_for(100, 100, 8_000_000), 8_000_000);
        // 100 calls in 60 ns (0.6 ns a call): not a batch of the minimum.
        assert_eq!(batch_for(60, 100, 100_000_000), 16_666_666);
        assert_eq!(median_of(&[5, 1, 9, 3, 7]), Some(5));
        assert_eq!(median_of(&[]), None);
    }

    #[test]
    fn twice_the_calls_must_take_twice_the_time() {
        assert_eq!(proportionality(10_000_000, 20_000_000), Ok(()));
        assert_eq!(proportionality(10_000_000, 20_900_000), Ok(()));
        assert_eq!(proportionality(10_000_000, 19_100_000), Ok(()));
        // A fixed cost per batch as large as the calls: 2N takes 1.5 N.
        let fixed = proportionality(10_000_000, 15_000_000).unwrap_err();
        assert!((fixed.ratio - 1.5).abs() < 1e-9, "{fixed:?}");
        assert!((fixed.error_pct - 25.0).abs() < 1e-9, "{fixed:?}");
        assert!(proportionality(10_000_000, 21_100_000).is_err());
        assert!(proportionality(0, 0).is_err());
    }

    #[test]
    fn outliers_past_one_and_a_half_iqr_are_cut() {
        let mut values: Vec<f64> = (0..20).map(|i| 10.0 + f64::from(i % 5) * 0.1).collect();
        values.push(100.0);
        values.push(-50.0);
        values.sort_by(f64::total_cmp);
        let kept = iqr_cut(&values);
        assert_eq!(kept.len(), 20);
        assert!(kept.iter().all(|v| (10.0..=10.4).contains(v)));
        // Too few to cut.
        let few = [1.0, 2.0, 100.0];
        assert_eq!(iqr_cut(&few), &few);
    }

    #[test]
    fn the_figures_follow_the_kernel_runners_definitions() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = TimingStats::of(&values).unwrap();
        assert_eq!(s.samples, 100);
        assert_eq!(s.median, 51.0, "sorted[n / 2]");
        assert_eq!(s.p99, 100.0, "sorted[(int)(n * 0.99)]");
        assert_eq!((s.min, s.max), (1.0, 100.0));
        // Sample sd of 1..=100: sqrt(841.666…).
        assert!((s.stddev - 29.011_491).abs() < 1e-5, "{}", s.stddev);
        assert!((s.cv_pct - 29.011_491 / 50.5 * 100.0).abs() < 1e-3);
        let one = TimingStats::of(&[3.0]).unwrap();
        assert_eq!((one.samples, one.stddev, one.p99), (1, 0.0, 3.0));
        assert_eq!(TimingStats::of(&[]), None);
    }
}
