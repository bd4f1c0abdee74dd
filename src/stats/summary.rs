//! One run's samples → its [`Summary`], and runs' summaries → theirs.

use serde::{Deserialize, Serialize};

/// One tick of the measure loop: each channel's share of the second since
/// the previous tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// 0-based, warm-up ticks included.
    pub iteration: u32,
    /// Real time since the previous tick; rates are normalised by it.
    pub elapsed_ns: u64,
    /// How far past its deadline the tick fired (negative: early).
    pub late_ns: i64,
    pub warmup: bool,
    /// Each channel read every tick, in the order the benchmark declared
    /// them: a counter's count in this second, a gauge's reading at its
    /// end; `None` where a reading failed.
    pub values: Vec<Option<u64>>,
}

impl Sample {
    /// A second's sample taken on time, for tests.
    #[cfg(test)]
    pub fn on_time(iteration: u32, values: &[u64], warmup: bool) -> Sample {
        Sample {
            iteration,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            warmup,
            values: values.iter().map(|v| Some(*v)).collect(),
        }
    }

    /// Channel `at`'s value in this second.
    pub fn value(&self, at: usize) -> Option<u64> {
        *self.values.get(at)?
    }
}

/// `count` events over `elapsed_ns` as events per second; 0 for an empty interval.
pub fn per_second(count: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        return 0.0;
    }
    count as f64 * 1e9 / elapsed_ns as f64
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanSd {
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two values.
    pub sd: f64,
}

pub fn mean_sd(values: &[f64]) -> MeanSd {
    let n = values.len();
    if n == 0 {
        return MeanSd { mean: 0.0, sd: 0.0 };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return MeanSd { mean, sd: 0.0 };
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    MeanSd {
        mean,
        sd: var.sqrt(),
    }
}

/// What a run's seconds (or runs) came to, channel by channel: never a
/// sum across channels, whose units differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// What the figures are means of: a run's measured seconds, or runs.
    /// Kept in a result file as `"samples": N` or `"runs": N`.
    #[serde(flatten)]
    pub over: Over,
    /// Each channel read every tick, in the samples' order: the mean and sd
    /// of its rate per second (a counter, a duration) or of its readings (a
    /// gauge); `None` where no second has a value.
    pub channels: Vec<Option<MeanSd>>,
    /// The latest tick, in ns past its deadline.
    pub max_late_ns: i64,
    /// A tick was more than [`NOISY_LATE_NS`] late: the machine was busy with
    /// something else, and the run deserves suspicion.
    pub noisy: bool,
}

/// What a [`Summary`]'s figures are means of, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Over {
    /// The measured (non-warm-up) seconds of one run.
    Samples(usize),
    /// Independent runs, each one observation.
    Runs(usize),
}

impl Over {
    pub fn count(self) -> usize {
        match self {
            Over::Samples(n) | Over::Runs(n) => n,
        }
    }
}

/// How late a tick may fire before the run is called noisy.
pub const NOISY_LATE_NS: i64 = 50_000_000;

/// Summarises the measured samples, leaving the warm-up ones out; `rates`
/// says, channel by channel, whether its values are counts to be divided by
/// each second's length. `None` when no measured sample exists (e.g. a run
/// stopped during warm-up).
pub fn summarize(samples: &[Sample], rates: &[bool]) -> Option<Summary> {
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    if measured.is_empty() {
        return None;
    }
    let channels = rates
        .iter()
        .enumerate()
        .map(|(at, &rate)| {
            let values: Vec<f64> = measured
                .iter()
                .filter_map(|s| {
                    let value = s.value(at)?;
                    Some(match rate {
                        true => per_second(value, s.elapsed_ns),
                        false => value as f64,
                    })
                })
                .collect();
            (!values.is_empty()).then(|| mean_sd(&values))
        })
        .collect();
    let max_late_ns = measured.iter().map(|s| s.late_ns).max().unwrap_or(0);
    Some(Summary {
        over: Over::Samples(measured.len()),
        channels,
        max_late_ns,
        noisy: max_late_ns > NOISY_LATE_NS,
    })
}

/// The summary over independent runs: each channel's mean of the runs'
/// means, its spread the between-run sd. `None` without a run.
pub fn summarize_runs(runs: &[Summary]) -> Option<Summary> {
    let width = runs.iter().map(|s| s.channels.len()).max()?;
    let channels = (0..width)
        .map(|at| {
            let means: Vec<f64> = runs
                .iter()
                .filter_map(|s| Some(s.channels.get(at).copied()??.mean))
                .collect();
            (!means.is_empty()).then(|| mean_sd(&means))
        })
        .collect();
    Some(Summary {
        over: Over::Runs(runs.len()),
        channels,
        max_late_ns: runs.iter().map(|s| s.max_late_ns).max().unwrap_or(0),
        noisy: runs.iter().any(|s| s.noisy),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(iteration: u32, hits: u64, elapsed_ns: u64, warmup: bool) -> Sample {
        Sample {
            iteration,
            elapsed_ns,
            late_ns: elapsed_ns as i64 - 1_000_000_000,
            warmup,
            values: vec![Some(hits)],
        }
    }

    #[test]
    fn sd_uses_n_minus_one() {
        let m = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m.mean, 5.0);
        // Population sd is 2.0; the sample sd is sqrt(32/7).
        assert!((m.sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{}", m.sd);
    }

    #[test]
    fn one_value_has_no_spread_and_none_has_no_mean() {
        assert_eq!(mean_sd(&[3.0]), MeanSd { mean: 3.0, sd: 0.0 });
        assert_eq!(mean_sd(&[]), MeanSd { mean: 0.0, sd: 0.0 });
    }

    #[test]
    fn warmup_samples_are_left_out() {
        let samples = [
            sample(0, 999_000_000, 1_000_000_000, true),
            sample(1, 2_000_000, 1_000_000_000, false),
            sample(2, 4_000_000, 1_000_000_000, false),
        ];
        let s = summarize(&samples, &[true]).unwrap();
        assert_eq!(s.over, Over::Samples(2));
        let hits = s.channels[0].unwrap();
        assert_eq!(hits.mean, 3_000_000.0);
        assert!((hits.sd - 2f64.sqrt() * 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn rates_are_normalised_by_the_real_interval() {
        // A tick 500 ms late saw 1.5 s of work: the rate must not be inflated.
        let samples = [
            sample(0, 1_000_000, 1_000_000_000, false),
            sample(1, 1_500_000, 1_500_000_000, false),
            sample(2, 500_000, 500_000_000, false),
        ];
        let s = summarize(&samples, &[true]).unwrap();
        assert_eq!(
            s.channels[0],
            Some(MeanSd {
                mean: 1_000_000.0,
                sd: 0.0
            })
        );
        assert_eq!(s.max_late_ns, 500_000_000);
        assert!(s.noisy, "a tick 500 ms late makes a noisy run");
        let on_time = [sample(0, 1_000_000, 1_000_000_000, false)];
        assert!(!summarize(&on_time, &[true]).unwrap().noisy);
    }

    /// A gauge's readings are not divided by the second's length: a memory
    /// of 656,400 bytes read every second is 656,400, however late a tick.
    #[test]
    fn gauges_are_means_of_their_readings() {
        let samples = [
            sample(0, 656_400, 1_000_000_000, false),
            sample(1, 656_400, 1_200_000_000, false),
        ];
        let s = summarize(&samples, &[false]).unwrap();
        assert_eq!(
            s.channels[0],
            Some(MeanSd {
                mean: 656_400.0,
                sd: 0.0
            })
        );
    }

    #[test]
    fn a_failed_reading_is_left_out_not_counted_as_zero() {
        let mut failed = sample(1, 0, 1_000_000_000, false);
        failed.values = vec![None];
        let samples = [sample(0, 4_000, 1_000_000_000, false), failed];
        let s = summarize(&samples, &[false]).unwrap();
        assert_eq!(
            s.channels[0],
            Some(MeanSd {
                mean: 4_000.0,
                sd: 0.0
            })
        );
        let mut none = sample(0, 0, 1_000_000_000, false);
        none.values = vec![None];
        assert_eq!(summarize(&[none], &[true]).unwrap().channels, [None]);
    }

    #[test]
    fn runs_are_summed_up_by_their_means() {
        let one = summarize(&[sample(0, 2_000, 1_000_000_000, false)], &[true]).unwrap();
        let two = summarize(&[sample(0, 4_000, 1_000_000_000, false)], &[true]).unwrap();
        let over = summarize_runs(&[one, two]).unwrap();
        assert_eq!(over.over, Over::Runs(2));
        let hits = over.channels[0].unwrap();
        assert_eq!(hits.mean, 3_000.0);
        assert!((hits.sd - 2f64.sqrt() * 1_000.0).abs() < 1e-9);
        assert_eq!(summarize_runs(&[]), None);
    }

    #[test]
    fn nothing_measured_gives_no_summary() {
        assert_eq!(
            summarize(&[sample(0, 5, 1_000_000_000, true)], &[true]),
            None
        );
    }
}
