//! The `sockmap` benchmark's lines, as the kernel runner prints them: each
//! second the send, BPF and receive speeds in MB/s (10^6 bytes) with the
//! send and read calls, and a `Summary:` of the bytes the BPF programs saw.

use std::collections::BTreeMap;

use crate::benches::sockmap::{Extra, KEPT_RECEIVED_BYTES, KEPT_REFUSED, KEPT_SENT_BYTES};
use crate::stats::{per_second, Sample, Summary};

fn megabytes(bytes_per_sec: f64) -> f64 {
    bytes_per_sec / 1e6
}

/// `Iter   3 (  12.345us): Send Speed 1234.567 MB/s ( 9876.000 calls/s), BPF
/// Speed 1234.567 MB/s, Rcv Speed 1234.567 MB/s ( 1234.000 calls/s)`.
pub fn iteration_line(sample: &Sample) -> String {
    let rate = |which: Extra| {
        let count = sample.extra.get(which as usize).copied().unwrap_or(0);
        per_second(count, sample.elapsed_ns)
    };
    format!(
        "Iter {:3} ({:7.3}us): Send Speed {:8.3} MB/s ({:8.3} calls/s), BPF Speed {:8.3} MB/s, \
         Rcv Speed {:8.3} MB/s ({:8.3} calls/s)",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        megabytes(rate(Extra::SentBytes)),
        rate(Extra::SendCalls),
        megabytes(sample.hits_per_sec()),
        megabytes(rate(Extra::ReceivedBytes)),
        rate(Extra::ReadCalls),
    )
}

/// `Summary: total trans      012 MB ± 1234.567 MB/s`: the megabytes the BPF
/// programs saw over the measured seconds (printed as C's `%8.3lu`: at least
/// three digits, zero-padded, in eight columns) and their mean per second.
pub fn summary_line(summary: &Summary, emulated: bool) -> String {
    let mean = megabytes(summary.hits.mean);
    let total = (mean * summary.over.count() as f64) as u64;
    let digits = format!("{total:03}");
    format!(
        "Summary: total trans {digits:>8} MB \u{00b1} {mean:5.3} MB/s{}",
        super::text::noisy_note(summary, emulated)
    )
}

/// The byte counts of a fixed-work run, under its usual block: what the
/// producer sent, what the receiving socket read, what BPF refused to
/// redirect. Nothing for a run that kept none.
pub fn fixed_lines(kept: &BTreeMap<String, f64>) -> Vec<String> {
    let (Some(sent), Some(received)) = (kept.get(KEPT_SENT_BYTES), kept.get(KEPT_RECEIVED_BYTES))
    else {
        return Vec::new();
    };
    let refused = kept.get(KEPT_REFUSED).copied().unwrap_or(0.0);
    vec![
        format!(" {:>14} bytes sent", *sent as u64),
        format!(" {:>14} bytes received", *received as u64),
        format!(" {:>14} redirects refused", refused as u64),
    ]
}

/// Before a run's Summary, where consumer 0 read less than nine tenths of
/// what the producer sent: where the rest went. The producer's sendfile()
/// counts what the kernel took, and a redirect queues it for c2 without
/// waiting for the reader, so a timed run ends with much of it unread (a
/// `-r` run reads it all: 2.6 GB sent in 0.22 s by `-r 20000` arrived over
/// the next 4.5 s, on this host).
pub fn unread_lines(kept: &BTreeMap<String, f64>) -> Vec<String> {
    let (Some(&sent), Some(&received)) = (kept.get(KEPT_SENT_BYTES), kept.get(KEPT_RECEIVED_BYTES))
    else {
        return Vec::new();
    };
    if received >= 0.9 * sent {
        return Vec::new();
    }
    let refused = kept.get(KEPT_REFUSED).copied().unwrap_or(0.0) as u64;
    vec![format!(
        "# {:.0} MB of the {:.0} MB sent were still queued in the kernel, unread, when the run \
         ended ({refused} redirects refused): the kernel takes what the producer sends and \
         queues it for c2 without waiting for the reader; a -r run reads every byte",
        (sent - received) / 1e6,
        sent / 1e6
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{MeanSd, Over};

    #[test]
    fn lines_are_the_kernel_runners() {
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: 1_234_567_000,
            drops: 0,
            warmup: false,
            extra: vec![1_300_000_000, 9876, 1_200_000_000, 1234],
        };
        assert_eq!(
            iteration_line(&sample),
            "Iter   3 ( 12.345us): Send Speed 1300.000 MB/s (9876.000 calls/s), BPF Speed \
             1234.567 MB/s, Rcv Speed 1200.000 MB/s (1234.000 calls/s)"
        );
        let mut summary = crate::stats::summarize(&[sample], 1).unwrap();
        summary.hits = MeanSd {
            mean: 1_234_567_000.0,
            sd: 1.0,
        };
        summary.over = Over::Samples(10);
        summary.noisy = false;
        assert_eq!(
            summary_line(&summary, false),
            "Summary: total trans    12345 MB \u{00b1} 1234.567 MB/s"
        );
        summary.hits.mean = 1_500_000.0;
        assert_eq!(
            summary_line(&summary, false),
            "Summary: total trans      015 MB \u{00b1} 1.500 MB/s"
        );
    }

    #[test]
    fn fixed_lines_show_the_kept_byte_counts() {
        let kept: BTreeMap<String, f64> = [
            (KEPT_SENT_BYTES.to_string(), 262_144.0),
            (KEPT_RECEIVED_BYTES.to_string(), 262_144.0),
        ]
        .into();
        assert_eq!(
            fixed_lines(&kept),
            [
                "         262144 bytes sent",
                "         262144 bytes received",
                "              0 redirects refused",
            ]
        );
        assert!(fixed_lines(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn a_run_that_read_far_less_than_it_sent_says_where_the_rest_is() {
        let kept = |sent: f64, received: f64| -> BTreeMap<String, f64> {
            [
                (KEPT_SENT_BYTES.to_string(), sent),
                (KEPT_RECEIVED_BYTES.to_string(), received),
            ]
            .into()
        };
        assert_eq!(
            unread_lines(&kept(4_230e6, 770e6)),
            [
                "# 3460 MB of the 4230 MB sent were still queued in the kernel, unread, when the \
              run ended (0 redirects refused): the kernel takes what the producer sends and \
              queues it for c2 without waiting for the reader; a -r run reads every byte"
            ]
        );
        assert!(unread_lines(&kept(1000.0, 950.0)).is_empty());
        assert!(unread_lines(&BTreeMap::new()).is_empty());
    }
}
