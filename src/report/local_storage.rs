//! The kernel runner's lines for the local-storage family
//! (`local_storage_report_progress` and `local_storage_report_final`):
//! hits and important hits, where the other lines have hits and drops. The
//! important hits travel in the run's second count.

use super::text;
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

fn mega(per_sec: f64) -> f64 {
    per_sec / 1e6
}

/// `Iter   3 ( 12.345us): hits   12.345M/s important_hits    1.234M/s`
pub fn iteration_line(sample: &Sample) -> String {
    format!(
        "Iter {:3} ({:7.3}us): hits {:8.3}M/s important_hits {:8.3}M/s",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        mega(sample.hits_per_sec()),
        mega(sample.drops_per_sec()),
    )
}

/// `Summary: hits throughput   12.345 ± 0.123 M ops/s, hits latency   81.004
/// ns/op, important_hits throughput    1.234 ± 0.012 M ops/s`: the fields
/// run_common.sh's `local_storage` cuts. The latency is the time per hit of
/// the one producer.
pub fn summary_line(summary: &Summary, emulated: bool) -> String {
    let latency = match summary.latency_ns {
        Some(ns) => format!("{ns:8.3}"),
        None => "     n/a".to_string(),
    };
    format!(
        "Summary: hits throughput {:8.3} \u{00b1} {:5.3} M ops/s, hits latency {latency} ns/op, \
         important_hits throughput {:8.3} \u{00b1} {:5.3} M ops/s{}",
        mega(summary.hits.mean),
        mega(summary.hits.sd),
        mega(summary.drops.mean),
        mega(summary.drops.sd),
        text::noisy_note(summary, emulated),
    )
}

/// A fixed run's block, the important hits where the others count drops.
pub fn fixed_lines(bench: &str, run: &FixedRun, producers: usize, emulated: bool) -> Vec<String> {
    text::fixed_lines(bench, run, producers, emulated)
        .into_iter()
        .map(|line| match line.strip_suffix(" drops") {
            Some(count) => format!("{count} important_hits"),
            None => line,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Counts;
    use crate::stats::{MeanSd, Over};

    #[test]
    fn lines_are_the_kernel_runners_local_storage_report() {
        let summary = Summary {
            over: Over::Samples(5),
            hits: MeanSd {
                mean: 12_345_000.0,
                sd: 123_000.0,
            },
            drops: MeanSd {
                mean: 1_234_000.0,
                sd: 12_000.0,
            },
            total: MeanSd {
                mean: 13_579_000.0,
                sd: 0.0,
            },
            per_producer: 12_345_000.0,
            latency_ns: Some(1e9 / 12_345_000.0),
            usecs_per_op: MeanSd { mean: 0.0, sd: 0.0 },
            max_late_ns: 0,
            noisy: false,
        };
        assert_eq!(
            summary_line(&summary, false),
            "Summary: hits throughput   12.345 \u{b1} 0.123 M ops/s, hits latency   81.004 ns/op, \
             important_hits throughput    1.234 \u{b1} 0.012 M ops/s"
        );
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: 12_345_000,
            drops: 1_234_000,
            warmup: false,
            extra: Vec::new(),
        };
        assert_eq!(
            iteration_line(&sample),
            "Iter   3 ( 12.345us): hits   12.345M/s important_hits    1.234M/s"
        );
        let run = FixedRun {
            elapsed_ns: 1_000_000_000,
            calls: 2,
            ops: 20_000,
            counts: Counts {
                hits: 20_000,
                drops: 20,
            },
        };
        let lines = fixed_lines("local-storage-cache-seq-get", &run, 1, false);
        assert_eq!(lines[4], "          20000 hits");
        assert_eq!(lines[5], "             20 important_hits");
    }
}
