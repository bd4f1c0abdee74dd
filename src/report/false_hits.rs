//! The kernel runner's lines for a benchmark whose drops are false hits
//! (`bench_bloom_filter_map.c`'s bloom-false-positive):
//! `false_hits_report_progress` and `false_hits_report_final`.

use super::text;
use crate::runner::Counts;
use crate::stats::{Over, Sample, Summary};

/// "F false hits of T total operations. Percentage = P": the kernel
/// runner's words for a body whose drops are its false hits, the total
/// adding hits, drops and false hits as upstream's does.
/// `gap` is what follows "=": upstream's progress line has one space, its
/// summary two.
fn false_hits_words(hits: u64, false_hits: u64, gap: &str) -> String {
    let total = hits + 2 * false_hits;
    let percent = match total {
        0 => 0.0,
        _ => false_hits as f64 / total as f64 * 100.0,
    };
    format!("{false_hits} false hits of {total} total operations. Percentage ={gap}{percent:.2} %")
}

/// `Iter   3 (  12.345us): 12 false hits of 1036 total operations.
/// Percentage = 1.16 %`: the kernel runner's `false_hits_report_progress`.
pub fn iteration_line(sample: &Sample) -> String {
    format!(
        "Iter {:3} ({:7.3}us): {}",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        false_hits_words(sample.hits, sample.drops, " ")
    )
}

/// `Summary: 120 false hits of 10360 total operations. Percentage =  1.16 %`:
/// the kernel runner's `false_hits_report_final` (run_common.sh's
/// `summarize_percentage` cuts the figure after "Percentage ="). The counts
/// are the measured seconds' (rate times seconds); over runs, one run's
/// second on average.
pub fn summary_line(summary: &Summary, emulated: bool) -> String {
    let seconds = match summary.over {
        Over::Samples(n) => n as f64,
        Over::Runs(_) => 1.0,
    };
    let hits = (summary.hits.mean * seconds).round() as u64;
    let false_hits = (summary.drops.mean * seconds).round() as u64;
    format!(
        "Summary: {}{}",
        false_hits_words(hits, false_hits, "  "),
        text::noisy_note(summary, emulated)
    )
}

/// A fixed-work run's false hits, under its counts.
pub fn fixed_line(counts: &Counts) -> String {
    format!(" {}", false_hits_words(counts.hits, counts.drops, " "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text::tests::one_producer_summary;
    use crate::stats::MeanSd;

    /// The kernel runner's false-hits lines, to the space: a false hit is
    /// counted twice in the total, and run_common.sh's `percentage` finds the
    /// figure after "Percentage =".
    #[test]
    fn false_hits_lines_are_the_kernel_runners() {
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: 1012,
            drops: 12,
            warmup: false,
            extra: Vec::new(),
        };
        assert_eq!(
            iteration_line(&sample),
            "Iter   3 ( 12.345us): 12 false hits of 1036 total operations. Percentage = 1.16 %"
        );
        let summary = Summary {
            hits: MeanSd {
                mean: 1012.0,
                sd: 3.0,
            },
            drops: MeanSd {
                mean: 12.0,
                sd: 1.0,
            },
            ..one_producer_summary(1024.0, 3.0)
        };
        let line = summary_line(&summary, false);
        assert_eq!(
            line,
            "Summary: 60 false hits of 5180 total operations. Percentage =  1.16 %"
        );
        let counts = Counts {
            hits: 90,
            drops: 10,
        };
        assert_eq!(
            fixed_line(&counts),
            " 10 false hits of 110 total operations. Percentage = 9.09 %"
        );
    }
}
