//! `--latency`: the distribution of one operation's time (one hit of the
//! probed target, one system call, one breakpoint toggle).
//!
//! Producers time every operation with [`clock::Clock`] and record it in
//! their own [`Distribution`] (HdrHistogram: bounded memory, at most 0.1 %
//! relative error); [`recorder::Recorder`] collects them once a second
//! without stopping the producers, and [`RunLatency`] keeps the measured
//! seconds' merge. What is kept of it is [`LatencyRecord`].

pub mod clock;
pub mod observer;
pub mod recorder;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::stats::{self, RunStats};

/// The largest time recorded as itself: a minute. Longer operations are
/// recorded as a minute (none of the benchmarks' operations comes close).
pub const MAX_NS: u64 = 60_000_000_000;
/// Significant decimal digits kept: values within 0.1 % share a bucket.
const SIGNIFICANT_DIGITS: u8 = 3;

/// The percentiles printed and kept, with their names.
pub const PERCENTILES: [(&str, f64); 5] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
];

/// A histogram of nanoseconds.
#[derive(Clone, Debug)]
pub struct Distribution(Histogram<u64>);

impl Default for Distribution {
    fn default() -> Self {
        Distribution::new()
    }
}

impl PartialEq for Distribution {
    fn eq(&self, other: &Self) -> bool {
        self.buckets() == other.buckets()
    }
}

impl Distribution {
    pub fn new() -> Distribution {
        // Bounds within the crate's limits: creation cannot fail.
        match Histogram::new_with_bounds(1, MAX_NS, SIGNIFICANT_DIGITS) {
            Ok(histogram) => Distribution(histogram),
            Err(err) => unreachable!("fixed histogram bounds are valid: {err:?}"),
        }
    }

    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns);
    }

    pub fn add(&mut self, other: &Distribution) {
        // Same bounds on both sides: addition cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    pub fn mean(&self) -> f64 {
        self.0.mean()
    }

    pub fn max(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.max()
        }
    }

    pub fn percentile(&self, percentile: f64) -> u64 {
        self.0.value_at_percentile(percentile)
    }

    /// Every non-empty bucket as `[highest value in it, count]`, ascending:
    /// enough to recompute any percentile (see [`percentile_of_buckets`]).
    pub fn buckets(&self) -> Vec<[u64; 2]> {
        self.0
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect()
    }

    pub fn from_buckets(buckets: &[[u64; 2]]) -> Result<Distribution> {
        let mut distribution = Distribution::new();
        for &[value, count] in buckets {
            distribution.0.record_n(value, count).map_err(|_| {
                Error::usage(format!(
                    "a latency bucket of {value} ns is outside 1..{MAX_NS} ns"
                ))
            })?;
        }
        Ok(distribution)
    }

    pub fn summary(&self) -> Percentiles {
        let values: Vec<u64> = PERCENTILES
            .iter()
            .map(|&(_, p)| self.percentile(p))
            .collect();
        Percentiles {
            count: self.count(),
            mean: self.mean(),
            p50: values[0],
            p90: values[1],
            p99: values[2],
            p99_9: values[3],
            p99_99: values[4],
            max: self.max(),
        }
    }
}

/// The value at `percentile` of a histogram kept as buckets, as HdrHistogram
/// computes it: the first bucket where the running count reaches
/// ceil(percentile × total), at least one.
pub fn percentile_of_buckets(buckets: &[[u64; 2]], percentile: f64) -> u64 {
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    let wanted = ((percentile / 100.0).min(1.0) * total as f64)
        .ceil()
        .max(1.0) as u64;
    let mut seen = 0;
    for &[value, count] in buckets {
        seen += count;
        if seen >= wanted {
            return value;
        }
    }
    0
}

/// A distribution's figures, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    #[serde(rename = "p99.99")]
    pub p99_99: u64,
    pub max: u64,
}

impl Percentiles {
    /// The named figures in order, max last.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p99_9),
            ("p99.99", self.p99_99),
            ("max", self.max),
        ]
    }

    /// The figure of a name (`p99`, `max`, `mean`).
    pub fn get(&self, name: &str) -> Option<f64> {
        if name == "mean" {
            return Some(self.mean);
        }
        self.named()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v as f64)
    }
}

/// What disturbed the producers while they were measured, from
/// getrusage(RUSAGE_THREAD) around each second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disturbances {
    /// The producers gave up the CPU (blocked).
    pub voluntary_switches: u64,
    /// The producers were preempted.
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl Disturbances {
    pub fn add(&mut self, other: &Disturbances) {
        self.voluntary_switches += other.voluntary_switches;
        self.involuntary_switches += other.involuntary_switches;
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
    }
}

/// One second's latency, as the producers handed it in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecondLatency {
    pub iteration: u32,
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub disturbances: Disturbances,
}

/// How the operations were timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockRecord {
    pub kind: clock::ClockKind,
    /// Mean cost of one reading, in ns; an operation takes two.
    pub read_ns: f64,
    /// The smallest step of the clock, in ns.
    pub resolution_ns: u64,
    /// An empty operation, timed the same way.
    pub floor: Percentiles,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

impl ClockRecord {
    pub fn of(clock: &clock::Clock) -> ClockRecord {
        ClockRecord {
            kind: clock.kind,
            read_ns: clock.read_ns,
            resolution_ns: clock.resolution_ns,
            floor: clock.floor.summary(),
            fallback_reason: clock.fallback_reason.clone(),
        }
    }
}

/// A run's latency, as kept in the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyRecord {
    pub clock: ClockRecord,
    /// Over the measured seconds (all of a `--repeat` run), every producer.
    pub percentiles: Percentiles,
    /// Every producer's time per operation from the run's rate (producers ÷
    /// rate), to set against `percentiles.mean`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_ns: Option<f64>,
    pub disturbances: Disturbances,
    /// The histogram: `[highest ns of the bucket, count]`, ascending.
    pub buckets: Vec<[u64; 2]>,
    /// Each measured second (empty for a `--repeat` run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<SecondLatency>,
}

impl LatencyRecord {
    pub fn distribution(&self) -> Result<Distribution> {
        Distribution::from_buckets(&self.buckets)
    }
}

/// One latency figure over runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpread {
    /// `p50` ... `p99.99`, `max` or `mean`.
    pub figure: String,
    /// Its mean over the runs, between-run sd and 95 % interval, in ns.
    pub stats: RunStats,
}

/// The latency over a configuration's runs: the merged histogram, and each
/// percentile's spread between the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyOverRuns {
    pub merged: Percentiles,
    /// Per figure (`p50` ... `max`, `mean`): the statistics over the runs' values.
    pub spread: Vec<FigureSpread>,
    pub buckets: Vec<[u64; 2]>,
}

impl LatencyOverRuns {
    /// Over `runs` (at least two with a latency); `None` otherwise.
    pub fn of(runs: &[&LatencyRecord]) -> Option<LatencyOverRuns> {
        if runs.len() < 2 {
            return None;
        }
        let mut merged = Distribution::new();
        for run in runs {
            merged.add(&run.distribution().ok()?);
        }
        let names = PERCENTILES.iter().map(|(n, _)| *n).chain(["max", "mean"]);
        let spread = names
            .filter_map(|name| {
                let values: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| r.percentiles.get(name))
                    .collect();
                Some(FigureSpread {
                    figure: name.to_string(),
                    stats: stats::run_stats(&values)?,
                })
            })
            .collect();
        Some(LatencyOverRuns {
            merged: merged.summary(),
            spread,
            buckets: merged.buckets(),
        })
    }
}

/// A run's latency as it is collected: the measured seconds' merge.
#[derive(Debug, Default)]
pub struct RunLatency {
    /// The first measured iteration (the warm-up's length); with `None`, a
    /// fixed run, everything counts.
    first_measured: Option<u32>,
    total: Distribution,
    disturbances: Disturbances,
    seconds: Vec<SecondLatency>,
}

impl RunLatency {
    /// For a timed run whose first `warmup` seconds are not measured.
    pub fn timed(warmup: u32) -> RunLatency {
        RunLatency {
            first_measured: Some(warmup),
            ..RunLatency::default()
        }
    }

    /// For a fixed-work run: every operation counts.
    pub fn fixed() -> RunLatency {
        RunLatency::default()
    }

    /// Takes in what the producers recorded during iteration `iteration`
    /// (of a timed run); `measured` iterations had a sample taken.
    pub fn absorb(&mut self, collected: recorder::Collected, measured: u32) {
        let recorder::Collected {
            epoch,
            distribution,
            disturbances,
        } = collected;
        let Some(first) = self.first_measured else {
            self.total.add(&distribution);
            self.disturbances.add(&disturbances);
            return;
        };
        let Ok(iteration) = u32::try_from(epoch) else {
            return;
        };
        // After the last sample: counted by no sample, so not kept either.
        if iteration < first || iteration >= measured {
            return;
        }
        self.total.add(&distribution);
        self.disturbances.add(&disturbances);
        self.seconds.push(SecondLatency {
            iteration,
            count: distribution.count(),
            p50: distribution.percentile(50.0),
            p99: distribution.percentile(99.0),
            max: distribution.max(),
            disturbances,
        });
    }

    pub fn count(&self) -> u64 {
        self.total.count()
    }

    /// Takes in what the producers handed in for the iterations before
    /// `before` (all of it with `None`); `measured` samples were taken.
    pub fn take(&mut self, recorder: &recorder::Recorder, before: Option<u32>, measured: u32) {
        for collected in recorder.collect(before.map(u64::from)) {
            self.absorb(collected, measured);
        }
    }

    /// What is kept; `rate_ns` is the rate-derived time per operation.
    pub fn record(mut self, clock: &clock::Clock, rate_ns: Option<f64>) -> LatencyRecord {
        self.seconds.sort_by_key(|s| s.iteration);
        LatencyRecord {
            clock: ClockRecord::of(clock),
            percentiles: self.total.summary(),
            rate_ns,
            disturbances: self.disturbances,
            buckets: self.total.buckets(),
            seconds: self.seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_monotone_and_within_the_error_bound() {
        let mut d = Distribution::new();
        for ns in 1..=100_000u64 {
            d.record(ns);
        }
        let s = d.summary();
        let named = s.named();
        for pair in named.windows(2) {
            assert!(pair[0].1 <= pair[1].1, "{named:?}");
        }
        for (value, exact) in [(s.p50, 50_000.0), (s.p99, 99_000.0), (s.max, 100_000.0)] {
            assert!(
                (value as f64 - exact).abs() / exact < 1e-3,
                "{value} vs {exact}"
            );
        }
        assert_eq!(s.count, 100_000);
    }

    #[test]
    fn buckets_reproduce_every_percentile() {
        let mut d = Distribution::new();
        let mut x = 12345u64;
        for _ in 0..50_000 {
            // A long-tailed spread of values.
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            d.record(
                200 + (x >> 40) % 1000
                    + if x.is_multiple_of(97) {
                        x % 1_000_000
                    } else {
                        0
                    },
            );
        }
        let buckets = d.buckets();
        for p in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
            assert_eq!(percentile_of_buckets(&buckets, p), d.percentile(p), "p{p}");
        }
        let again = Distribution::from_buckets(&buckets).unwrap();
        assert_eq!(again.summary(), d.summary());
        assert!(Distribution::from_buckets(&[[MAX_NS * 10, 1]]).is_err());
    }

    #[test]
    fn over_runs_each_percentile_has_its_spread() {
        let run = |shift: u64| {
            let mut d = Distribution::new();
            (1..=1000u64).for_each(|ns| d.record(ns + shift));
            let mut latency = RunLatency::fixed();
            latency.absorb(
                recorder::Collected {
                    epoch: 0,
                    distribution: d,
                    disturbances: Disturbances::default(),
                },
                0,
            );
            latency.record(clock::Clock::get(), None)
        };
        let runs = [run(0), run(10), run(20)];
        let over = LatencyOverRuns::of(&runs.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(over.merged.count, 3000);
        let (name, p50) = (&over.spread[0].figure, &over.spread[0].stats);
        assert_eq!(name, "p50");
        assert!((p50.mean - 510.0).abs() < 1.5, "{p50:?}");
        assert!((p50.sd - 10.0).abs() < 1.0, "{p50:?}");
        assert!(LatencyOverRuns::of(&runs[..1].iter().collect::<Vec<_>>()).is_none());
    }
}
