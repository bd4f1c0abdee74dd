//! One run's samples → its [`Summary`], and runs' summaries → theirs.

use serde::{Deserialize, Serialize};

/// One tick of the measure loop: what was counted since the previous tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// 0-based, warm-up ticks included.
    pub iteration: u32,
    /// Real time since the previous tick; rates are normalised by it.
    pub elapsed_ns: u64,
    /// How far past its deadline the tick fired (negative: early).
    pub late_ns: i64,
    pub hits: u64,
    pub drops: u64,
    pub warmup: bool,
    /// Counts a workload keeps beside hits and drops, each this second's
    /// share, in the order the workload gives them (`Workload::extra_counts`);
    /// empty for most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<u64>,
}

impl Sample {
    /// A second's sample taken on time, for tests.
    #[cfg(test)]
    pub fn on_time(iteration: u32, hits: u64, drops: u64, warmup: bool) -> Sample {
        Sample {
            iteration,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            hits,
            drops,
            warmup,
            extra: Vec::new(),
        }
    }

    pub fn hits_per_sec(&self) -> f64 {
        per_second(self.hits, self.elapsed_ns)
    }
    pub fn drops_per_sec(&self) -> f64 {
        per_second(self.drops, self.elapsed_ns)
    }
    pub fn total_per_sec(&self) -> f64 {
        per_second(self.hits + self.drops, self.elapsed_ns)
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

/// Rates are in events per second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// What the figures are means of: a run's measured seconds, or runs.
    /// Kept in a result file as `"samples": N` or `"runs": N`.
    #[serde(flatten)]
    pub over: Over,
    pub hits: MeanSd,
    pub drops: MeanSd,
    pub total: MeanSd,
    /// Mean hit rate of one producer.
    pub per_producer: f64,
    /// Time one producer spends per hit, in ns; `None` when nothing was hit.
    pub latency_ns: Option<f64>,
    /// Wall-clock microseconds per operation of all producers together
    /// (perf's usecs/op): the inverse of the mean rate, its sd carried over
    /// to first order, so that it agrees with ops/s even when a second saw
    /// no operation finish.
    pub usecs_per_op: MeanSd,
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

/// Microseconds per operation from a rate of operations per second: the
/// inverse of the mean, its sd carried over to first order.
fn usecs_per_op(total: MeanSd) -> MeanSd {
    if total.mean > 0.0 {
        MeanSd {
            mean: 1e6 / total.mean,
            sd: 1e6 * total.sd / (total.mean * total.mean),
        }
    } else {
        MeanSd { mean: 0.0, sd: 0.0 }
    }
}

/// Summarises the measured samples, leaving the warm-up ones out. `None` when
/// no measured sample exists (e.g. a run stopped during warm-up).
pub fn summarize(samples: &[Sample], producers: usize) -> Option<Summary> {
    let measured: Vec<&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    if measured.is_empty() {
        return None;
    }
    let rates = |f: fn(&Sample) -> f64| measured.iter().map(|s| f(s)).collect::<Vec<f64>>();
    let hits = mean_sd(&rates(Sample::hits_per_sec));
    let drops = mean_sd(&rates(Sample::drops_per_sec));
    let total = mean_sd(&rates(Sample::total_per_sec));
    let producers = producers.max(1) as f64;
    let per_producer = hits.mean / producers;
    let latency_ns = (per_producer > 0.0).then(|| 1e9 / per_producer);
    let max_late_ns = measured.iter().map(|s| s.late_ns).max().unwrap_or(0);
    let usecs_per_op = usecs_per_op(total);
    Some(Summary {
        over: Over::Samples(measured.len()),
        hits,
        drops,
        total,
        per_producer,
        latency_ns,
        usecs_per_op,
        max_late_ns,
        noisy: max_late_ns > NOISY_LATE_NS,
    })
}

/// The summary over independent runs: each figure is the mean of the runs'
/// figures and its spread the between-run sd.
/// `None` without a run.
pub fn summarize_runs(runs: &[Summary], producers: usize) -> Option<Summary> {
    if runs.is_empty() {
        return None;
    }
    let over = |f: fn(&Summary) -> f64| mean_sd(&runs.iter().map(f).collect::<Vec<f64>>());
    let hits = over(|s| s.hits.mean);
    let drops = over(|s| s.drops.mean);
    let total = over(|s| s.total.mean);
    let per_producer = hits.mean / producers.max(1) as f64;
    let usecs_per_op = usecs_per_op(total);
    let max_late_ns = runs.iter().map(|s| s.max_late_ns).max().unwrap_or(0);
    Some(Summary {
        over: Over::Runs(runs.len()),
        hits,
        drops,
        total,
        per_producer,
        latency_ns: (per_producer > 0.0).then(|| 1e9 / per_producer),
        usecs_per_op,
        max_late_ns,
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
            hits,
            drops: 0,
            warmup,
            extra: Vec::new(),
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
        let s = summarize(&samples, 1).unwrap();
        assert_eq!(s.over, Over::Samples(2));
        assert_eq!(s.hits.mean, 3_000_000.0);
        assert!((s.hits.sd - 2f64.sqrt() * 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn rates_are_normalised_by_the_real_interval() {
        // A tick 500 ms late saw 1.5 s of work: the rate must not be inflated.
        let samples = [
            sample(0, 1_000_000, 1_000_000_000, false),
            sample(1, 1_500_000, 1_500_000_000, false),
            sample(2, 500_000, 500_000_000, false),
        ];
        let s = summarize(&samples, 1).unwrap();
        assert_eq!(s.hits.mean, 1_000_000.0);
        assert_eq!(s.hits.sd, 0.0);
        assert_eq!(s.max_late_ns, 500_000_000);
        assert!(s.noisy, "a tick 500 ms late makes a noisy run");
        let on_time = [sample(0, 1_000_000, 1_000_000_000, false)];
        assert!(!summarize(&on_time, 1).unwrap().noisy);
    }

    #[test]
    fn per_producer_rate_and_latency() {
        let samples = [sample(0, 4_000_000, 1_000_000_000, false)];
        let s = summarize(&samples, 2).unwrap();
        assert_eq!(s.per_producer, 2_000_000.0);
        // Each producer gets a hit every 500 ns.
        assert_eq!(s.latency_ns, Some(500.0));
        // Together, the producers finish an operation every 0.25 us.
        assert_eq!(
            s.usecs_per_op,
            MeanSd {
                mean: 0.25,
                sd: 0.0
            }
        );
    }

    #[test]
    fn usecs_per_op_agrees_with_the_rate_even_over_an_empty_second() {
        let samples = [
            sample(0, 0, 1_000_000_000, false),
            sample(1, 4_000, 1_000_000_000, false),
        ];
        let s = summarize(&samples, 1).unwrap();
        // 4000 operations in 2 s: 500 us each.
        assert_eq!(s.total.mean, 2_000.0);
        assert_eq!(s.usecs_per_op.mean, 500.0);
    }

    #[test]
    fn drops_count_toward_total_operations() {
        let mut s = sample(0, 3_000_000, 1_000_000_000, false);
        s.drops = 1_000_000;
        let summary = summarize(&[s], 1).unwrap();
        assert_eq!(summary.drops.mean, 1_000_000.0);
        assert_eq!(summary.total.mean, 4_000_000.0);
    }

    #[test]
    fn nothing_measured_gives_no_summary() {
        assert_eq!(summarize(&[sample(0, 5, 1_000_000_000, true)], 1), None);
        let s = summarize(&[sample(0, 0, 1_000_000_000, false)], 1).unwrap();
        assert_eq!(s.latency_ns, None);
    }
}
