//! The kernel runner's lines for the LPM trie's insert, delete and free
//! (`frac_second_report_progress` and `frac_second_report_final`): the rate
//! of operations over the time the BPF side measured them, which is a
//! fraction of each second (the rest empties or refills the trie, or waits
//! for the next free), in M ops/s and ns/op or K ops/s and ms/op.

use std::collections::BTreeMap;

use super::text;
use crate::benches::lpm::{
    measured_rate, EXTRA_MEASURED_NS, EXTRA_MEASURED_OPS, KEPT_FRAC_LATENCY_NS, KEPT_FRAC_RATE,
    KEPT_FRAC_RATE_SD,
};
use crate::benches::FracScale;
use crate::stats::{Sample, Summary};

impl FracScale {
    /// What a rate in operations per second is divided by, and its letter.
    fn rate(self) -> (f64, char) {
        match self {
            FracScale::MegaOpsNs => (1e6, 'M'),
            FracScale::KiloOpsMs => (1e3, 'K'),
        }
    }

    /// What a time in ns is divided by, and its unit.
    fn time(self) -> (f64, &'static str) {
        match self {
            FracScale::MegaOpsNs => (1.0, "ns"),
            FracScale::KiloOpsMs => (1e6, "ms"),
        }
    }
}

/// `Iter   3 ( 12.345us): hits    1.234K/s (  1.234K/prod)`, the rate over
/// the second's measured time.
pub fn iteration_line(sample: &Sample, producers: usize, scale: FracScale) -> String {
    let (divisor, letter) = scale.rate();
    let get = |at: usize| sample.extra.get(at).copied().unwrap_or(0);
    let rate = measured_rate(get(EXTRA_MEASURED_OPS), get(EXTRA_MEASURED_NS)) / divisor;
    format!(
        "Iter {:3} ({:7.3}us): hits {rate:8.3}{letter}/s ({:7.3}{letter}/prod)",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        rate / producers.max(1) as f64,
    )
}

/// `Summary: throughput    1.234 ± 0.012 K ops/s (  1.234K ops/prod),
/// latency  810.000 ms/op`, from the figures the run kept: the mean and sd
/// of its seconds' measured rates, and the mean of their whole nanoseconds
/// per operation ([`over_runs`] over runs). A summary without them is the
/// ops line of the wall-time rate.
pub fn summary_line(
    summary: &Summary,
    producers: usize,
    kept: &BTreeMap<String, f64>,
    scale: FracScale,
    emulated: bool,
) -> String {
    let get = |name: &str| kept.get(name).copied();
    let (Some(rate), Some(sd), Some(latency_ns)) = (
        get(KEPT_FRAC_RATE),
        get(KEPT_FRAC_RATE_SD),
        get(KEPT_FRAC_LATENCY_NS),
    ) else {
        return text::hit_ops_summary_line(summary, emulated);
    };
    let (divisor, letter) = scale.rate();
    let (time_divisor, unit) = scale.time();
    let producers = producers.max(1) as f64;
    format!(
        "Summary: throughput {:8.3} \u{00b1} {:5.3} {letter} ops/s ({:7.3}{letter} ops/prod), \
         latency {:8.3} {unit}/op{}",
        rate / divisor,
        sd / divisor,
        rate / divisor / producers,
        latency_ns / time_divisor / producers,
        text::noisy_note(summary, emulated),
    )
}

/// The kept figures of a summary over runs: the mean and between-run sd of
/// the runs' measured rates and the mean of their latencies (each run one
/// observation, as the wall-time summary over runs counts them); empty
/// when a run kept none.
pub fn over_runs(runs: &[&BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut rates = Vec::with_capacity(runs.len());
    let mut latencies = Vec::with_capacity(runs.len());
    for kept in runs {
        match (kept.get(KEPT_FRAC_RATE), kept.get(KEPT_FRAC_LATENCY_NS)) {
            (Some(rate), Some(latency)) => {
                rates.push(*rate);
                latencies.push(*latency);
            }
            _ => return BTreeMap::new(),
        }
    }
    if rates.is_empty() {
        return BTreeMap::new();
    }
    let n = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / n;
    let sd = if rates.len() > 1 {
        (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    [
        (KEPT_FRAC_RATE, mean),
        (KEPT_FRAC_RATE_SD, sd),
        (KEPT_FRAC_LATENCY_NS, latencies.iter().sum::<f64>() / n),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{MeanSd, Over};

    fn sample(ops: u64, ns: u64) -> Sample {
        Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: ops,
            drops: 0,
            warmup: false,
            extra: vec![ns, ops],
        }
    }

    fn summary() -> Summary {
        let zero = MeanSd { mean: 0.0, sd: 0.0 };
        Summary {
            over: Over::Samples(3),
            hits: MeanSd { mean: 4.0, sd: 0.5 },
            drops: zero,
            total: zero,
            per_producer: 4.0,
            latency_ns: Some(2.5e8),
            usecs_per_op: zero,
            max_late_ns: 0,
            noisy: false,
        }
    }

    #[test]
    fn lines_are_the_kernel_runners_frac_second_lines() {
        // Free: 3 tries freed in 12.5 ms of free time is 240 frees a second.
        assert_eq!(
            iteration_line(&sample(3, 12_500_000), 1, FracScale::KiloOpsMs),
            "Iter   3 ( 12.345us): hits    0.240K/s (  0.240K/prod)"
        );
        // Insert: 10000 keys in 2 ms is 5 M a second.
        assert_eq!(
            iteration_line(&sample(10_000, 2_000_000), 1, FracScale::MegaOpsNs),
            "Iter   3 ( 12.345us): hits    5.000M/s (  5.000M/prod)"
        );
        assert_eq!(
            iteration_line(&sample(0, 0), 1, FracScale::KiloOpsMs),
            "Iter   3 ( 12.345us): hits    0.000K/s (  0.000K/prod)"
        );
        let kept: BTreeMap<String, f64> = [
            (KEPT_FRAC_RATE, 240.0),
            (KEPT_FRAC_RATE_SD, 12.5),
            (KEPT_FRAC_LATENCY_NS, 4_166_666.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            summary_line(&summary(), 1, &kept, FracScale::KiloOpsMs, false),
            "Summary: throughput    0.240 \u{b1} 0.013 K ops/s (  0.240K ops/prod), \
             latency    4.167 ms/op"
        );
        let kept: BTreeMap<String, f64> = [
            (KEPT_FRAC_RATE, 5_000_000.0),
            (KEPT_FRAC_RATE_SD, 120_000.0),
            (KEPT_FRAC_LATENCY_NS, 200.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            summary_line(&summary(), 1, &kept, FracScale::MegaOpsNs, false),
            "Summary: throughput    5.000 \u{b1} 0.120 M ops/s (  5.000M ops/prod), \
             latency  200.000 ns/op"
        );
        // Over runs: each run one observation.
        let first: BTreeMap<String, f64> = [(KEPT_FRAC_RATE, 200.0), (KEPT_FRAC_LATENCY_NS, 5e6)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let second: BTreeMap<String, f64> = [(KEPT_FRAC_RATE, 300.0), (KEPT_FRAC_LATENCY_NS, 3e6)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let kept = over_runs(&[&first, &second]);
        assert_eq!(
            summary_line(&summary(), 1, &kept, FracScale::KiloOpsMs, false),
            "Summary: throughput    0.250 \u{b1} 0.071 K ops/s (  0.250K ops/prod), \
             latency    4.000 ms/op"
        );
        assert!(over_runs(&[&first, &BTreeMap::new()]).is_empty());
        // Without them: the wall-time ops line.
        assert!(
            summary_line(&summary(), 1, &BTreeMap::new(), FracScale::KiloOpsMs, false)
                .ends_with(" ns/op")
        );
    }
}
