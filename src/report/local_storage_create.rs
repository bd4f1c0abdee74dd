//! The kernel runner's local-storage-create lines
//! (`benchs/bench_local_storage_create.c`): creations in k/s, per producer,
//! and the kmallocs of the whole system per creation, each second and in the
//! Summary; after it, the line of failed creations when there were any.
//! Hits are the creations, drops the kmallocs
//! ([`crate::benches::Metric::LocalStorageCreate`]).

use std::collections::BTreeMap;

use super::text::noisy_note;
use crate::benches::local_storage_create::{
    KEPT_CREATE_ERRORS, KEPT_PTHREAD_ERRORS, KEPT_SOCKET_ERRORS,
};
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

/// `kmallocs / creates` as C prints a double of it: `inf` and `-nan` (x86's
/// 0.0 / 0.0) where nothing was created.
fn per_create(kmallocs: f64, creates: f64, width: usize) -> String {
    let ratio = kmallocs / creates;
    match ratio {
        r if r.is_nan() => format!("{:>width$}", "-nan"),
        r if r.is_infinite() => format!("{:>width$}", "inf"),
        r => format!("{r:width$.2}"),
    }
}

/// `Iter   3 ( 12.345us): creates  123.456k/s ( 61.728k/prod), 4.12 kmallocs/create`
pub fn iteration_line(sample: &Sample, producers: usize) -> String {
    let per_sec = sample.hits_per_sec() / 1e3;
    format!(
        "Iter {:3} ({:7.3}us): creates {:8.3}k/s ({:7.3}k/prod), {} kmallocs/create",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        per_sec,
        per_sec / producers.max(1) as f64,
        per_create(sample.drops as f64, sample.hits as f64, 3),
    )
}

/// `Summary: creates  123.456 ± 1.234k/s ( 61.728k/prod), 4.12 kmallocs/create`:
/// the kmallocs per creation of the whole run (its means' ratio: every
/// second lasts about as long).
pub fn summary_line(summary: &Summary, producers: usize, emulated: bool) -> String {
    let mean = summary.hits.mean / 1e3;
    format!(
        "Summary: creates {mean:8.3} \u{b1} {:5.3}k/s ({:7.3}k/prod), {} kmallocs/create{}",
        summary.hits.sd / 1e3,
        mean / producers.max(1) as f64,
        per_create(summary.drops.mean, summary.hits.mean, 4),
        noisy_note(summary, emulated),
    )
}

/// A fixed run's block: the creations as hits, then the kmallocs and their
/// count per creation instead of drops.
pub fn fixed_lines(bench: &str, run: &FixedRun, producers: usize, emulated: bool) -> Vec<String> {
    let kmallocs = vec![
        format!(" {:>14} kmallocs", run.counts.drops),
        format!(
            " {} kmallocs/create",
            per_create(run.counts.drops as f64, run.counts.hits as f64, 14)
        ),
    ];
    super::text::fixed_lines_with(bench, run, producers, emulated, kmallocs)
}

/// `socket() errors 3 create_errs 0`, after the Summary of a run where a
/// socket (or thread) or its storage could not be created; none otherwise.
pub fn error_lines(kept: &BTreeMap<String, f64>) -> Vec<String> {
    let get = |name: &str| kept.get(name).copied().unwrap_or(0.0) as u64;
    let create = get(KEPT_CREATE_ERRORS);
    let (call, owner) = match kept.contains_key(KEPT_PTHREAD_ERRORS) {
        true => ("pthread_create", get(KEPT_PTHREAD_ERRORS)),
        false => ("socket", get(KEPT_SOCKET_ERRORS)),
    };
    match owner > 0 || create > 0 {
        true => vec![format!("{call}() errors {owner} create_errs {create}")],
        false => Vec::new(),
    }
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
            hits: 123_456,
            drops: 508_638,
            warmup: false,
            extra: Vec::new(),
        };
        assert_eq!(
            iteration_line(&sample, 2),
            "Iter   3 ( 12.345us): creates  123.456k/s ( 61.728k/prod), 4.12 kmallocs/create"
        );
        let none = Sample {
            hits: 0,
            drops: 0,
            ..sample.clone()
        };
        assert!(iteration_line(&none, 1).ends_with("(  0.000k/prod), -nan kmallocs/create"));
        let summary = Summary {
            over: Over::Samples(5),
            hits: MeanSd {
                mean: 123_456.0,
                sd: 1_234.0,
            },
            drops: MeanSd {
                mean: 508_638.72,
                sd: 100.0,
            },
            total: MeanSd {
                mean: 123_456.0,
                sd: 1_234.0,
            },
            per_producer: 61_728.0,
            latency_ns: None,
            usecs_per_op: MeanSd { mean: 0.0, sd: 0.0 },
            max_late_ns: 0,
            noisy: false,
        };
        let line = summary_line(&summary, 2, false);
        assert_eq!(
            line,
            "Summary: creates  123.456 \u{b1} 1.234k/s ( 61.728k/prod), 4.12 kmallocs/create"
        );
        // What run_common.sh's cut takes from a Summary: the rate and its sd.
        let cut = line.split('(').next().unwrap_or("");
        let fields: Vec<&str> = cut.split(' ').skip(2).collect();
        assert_eq!(fields.join(" "), " 123.456 \u{b1} 1.234k/s ");
    }

    #[test]
    fn a_fixed_run_shows_kmallocs_instead_of_drops() {
        let run = FixedRun {
            elapsed_ns: 1_000_000_000,
            calls: 10,
            ops: 320,
            counts: Counts {
                hits: 320,
                drops: 1_440,
            },
        };
        let lines = fixed_lines("local-storage-create", &run, 1, false);
        assert!(
            lines.contains(&"            320 hits".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"           1440 kmallocs".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"           4.50 kmallocs/create".to_string()),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.ends_with("drops")), "{lines:?}");
    }

    #[test]
    fn failures_are_said_after_the_summary_only_when_there_were_some() {
        let mut kept = BTreeMap::new();
        kept.insert(KEPT_SOCKET_ERRORS.to_string(), 0.0);
        kept.insert(KEPT_CREATE_ERRORS.to_string(), 0.0);
        assert!(error_lines(&kept).is_empty());
        kept.insert(KEPT_SOCKET_ERRORS.to_string(), 3.0);
        assert_eq!(error_lines(&kept), ["socket() errors 3 create_errs 0"]);
        let mut kept = BTreeMap::new();
        kept.insert(KEPT_PTHREAD_ERRORS.to_string(), 0.0);
        kept.insert(KEPT_CREATE_ERRORS.to_string(), 2.0);
        assert_eq!(
            error_lines(&kept),
            ["pthread_create() errors 0 create_errs 2"]
        );
    }
}
