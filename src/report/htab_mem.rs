//! The kernel runner's htab-mem lines (`benchs/bench_htab_mem.c`): ops per
//! producer in k/s and the map's memory in MiB, each second and in the
//! Summary that `run_bench_htab_mem.sh` cuts with sed. A second's `drops`
//! hold the map's bytes at its end ([`crate::benches::Metric::HtabMem`]).

use super::text::noisy_note;
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

const MIB: f64 = 1024.0 * 1024.0;

/// `Iter   3 ( 12.345us): per-prod-op  123.45k/s, memory usage    1.23MiB`
pub fn iteration_line(sample: &Sample, producers: usize) -> String {
    format!(
        "Iter {:3} ({:7.3}us): per-prod-op {:7.2}k/s, memory usage {:7.2}MiB",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        sample.hits_per_sec() / producers.max(1) as f64 / 1e3,
        sample.drops as f64 / MIB,
    )
}

/// What a run kept of the map's memory, in bytes: the mean and sd of its
/// measured seconds' readings, and the peak.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memory {
    pub mean: f64,
    pub sd: f64,
    pub peak: f64,
}

/// `Summary: per-prod-op  123.45 ±    1.23k/s, memory usage    1.23 ±
/// 0.01MiB, peak memory usage    1.50MiB`. Without what the run kept (a line
/// over several runs), the memory is the mean of the seconds' readings as
/// rates (within their lateness of the reading) and the peak `n/a`.
pub fn summary_line(
    summary: &Summary,
    producers: usize,
    kept: Option<Memory>,
    emulated: bool,
) -> String {
    let per_producer = |rate: f64| rate / producers.max(1) as f64 / 1e3;
    let (mean, sd, peak) = match kept {
        Some(m) => (m.mean, m.sd, format!("{:7.2}MiB", m.peak / MIB)),
        None => (
            summary.drops.mean,
            summary.drops.sd,
            "    n/a MiB".to_string(),
        ),
    };
    format!(
        "Summary: per-prod-op {:7.2} \u{b1} {:7.2}k/s, memory usage {:7.2} \u{b1} {:7.2}MiB, \
         peak memory usage {peak}{}",
        per_producer(summary.hits.mean),
        per_producer(summary.hits.sd),
        mean / MIB,
        sd / MIB,
        noisy_note(summary, emulated),
    )
}

/// A fixed run's block: the hits, then the map's memory at the end instead
/// of drops.
pub fn fixed_lines(bench: &str, run: &FixedRun, producers: usize, emulated: bool) -> Vec<String> {
    let memory = format!(" {:>14.2} MiB memory usage", run.counts.drops as f64 / MIB);
    super::text::fixed_lines_with(bench, run, producers, emulated, vec![memory])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Counts;
    use crate::stats::{MeanSd, Over};

    #[test]
    fn lines_are_the_kernel_runners() {
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: 246_900,
            drops: 3 * 1024 * 1024 / 2,
            warmup: false,
            extra: Vec::new(),
        };
        assert_eq!(
            iteration_line(&sample, 2),
            "Iter   3 ( 12.345us): per-prod-op  123.45k/s, memory usage    1.50MiB"
        );
        let summary = Summary {
            over: Over::Samples(5),
            hits: MeanSd {
                mean: 246_900.0,
                sd: 2_460.0,
            },
            drops: MeanSd {
                mean: 1.5 * MIB,
                sd: 0.25 * MIB,
            },
            total: MeanSd {
                mean: 246_900.0,
                sd: 2_460.0,
            },
            per_producer: 123_450.0,
            latency_ns: None,
            usecs_per_op: MeanSd { mean: 0.0, sd: 0.0 },
            max_late_ns: 0,
            noisy: false,
        };
        let kept = Memory {
            mean: 1.5 * MIB,
            sd: 0.25 * MIB,
            peak: 2.0 * MIB,
        };
        let line = summary_line(&summary, 2, Some(kept), false);
        assert_eq!(
            line,
            "Summary: per-prod-op  123.45 \u{b1}    1.23k/s, memory usage    1.50 \u{b1}    0.25MiB, \
             peak memory usage    2.00MiB"
        );
        // What upstream's run_common.sh cuts: the per-prod-op figure.
        let cut = line.split('(').next().unwrap_or("");
        let fields: Vec<&str> = cut.split(' ').skip(2).collect();
        assert!(
            fields.join(" ").starts_with(" 123.45 \u{b1}    1.23k/s"),
            "{cut}"
        );
        assert!(summary_line(&summary, 2, None, false).ends_with("peak memory usage     n/a MiB"));
    }

    #[test]
    fn a_fixed_run_shows_memory_instead_of_drops() {
        let run = FixedRun {
            elapsed_ns: 1_000_000_000,
            calls: 10,
            ops: 10,
            counts: Counts {
                hits: 10,
                drops: 1024 * 1024,
            },
        };
        let lines = fixed_lines("htab-mem", &run, 1, false);
        assert!(
            lines.contains(&"             10 hits".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"           1.00 MiB memory usage".to_string()),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.ends_with("drops")), "{lines:?}");
    }
}
