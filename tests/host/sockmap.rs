//! The sockmap benchmark for real: exact byte counts through each mode's
//! path with `-r`, upstream's per-second and Summary lines, and the
//! refusals of what upstream refuses.

use crate::common::*;

const USAGE: i32 = 2;
/// The file the producer sends per operation.
const FILE_SIZE: u64 = 128 * 1024;

/// ` N WORDS`: the count before `words` in a fixed run's report.
fn count(stdout: &str, words: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(words))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {words:?} line in:\n{stdout}"))
}

/// Every byte sent arrives at c2 and is seen once by the BPF program, in
/// each mode where the kernel runs the program once per byte.
#[test]
fn every_byte_goes_through_the_path() {
    let _lock = probe_lock();
    for (mode, files) in [
        ("--rx-verdict-egress", 3),
        ("--rx-verdict-ingress", 2),
        ("--rx-pass", 2),
        ("--tx-pass", 2),
        ("--tx-verdict-ingress", 2),
    ] {
        let out = bench_ok(&format!("-q -r {files} sockmap {mode}"));
        let bytes = files * FILE_SIZE;
        assert_eq!(count(&out.stdout, " bytes sent"), bytes, "{mode}");
        assert_eq!(count(&out.stdout, " bytes received"), bytes, "{mode}");
        assert_eq!(fixed_hits(&out.stdout), bytes, "{mode}: {}", out.stdout);
        assert_eq!(count(&out.stdout, " redirects refused"), 0, "{mode}");
    }
    assert_nothing_left();
}

/// Where the kernel runs the program more than once over some bytes (a
/// redirect to a full egress queue is retried; the parser's verdict sees
/// whole buffers), the bytes still arrive, every one, and none is missed.
#[test]
fn retried_paths_still_deliver_every_byte() {
    let _lock = probe_lock();
    for mode in ["--tx-verdict-egress", "--rx-strp 1024"] {
        let out = bench_ok(&format!("-q -r 2 sockmap {mode}"));
        let bytes = 2 * FILE_SIZE;
        assert_eq!(count(&out.stdout, " bytes sent"), bytes, "{mode}");
        assert_eq!(count(&out.stdout, " bytes received"), bytes, "{mode}");
        assert!(fixed_hits(&out.stdout) >= bytes, "{mode}: {}", out.stdout);
    }
    assert_nothing_left();
}

/// Upstream's lines: per second, the three speeds; the Summary's total MB
/// printed as C's `%8.3lu`.
#[test]
fn timed_runs_print_upstreams_lines() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 sockmap --tx-verdict-ingress");
    let tick = line_starting(&out.stdout, "Iter   0 (");
    for words in [
        "Send Speed ",
        " MB/s (",
        "calls/s), BPF Speed ",
        "Rcv Speed ",
    ] {
        assert!(tick.contains(words), "{tick}");
    }
    let summary = upstreams_part(out.stdout.lines().last().unwrap());
    assert!(summary.starts_with("Summary: total trans "), "{summary}");
    let total = summary["Summary: total trans ".len()..].split_at(8).0;
    assert!(total.trim().len() >= 3, "{summary}");
    assert!(summary.contains(" MB \u{b1} ") && summary.ends_with(" MB/s"));
    assert_nothing_left();
}

#[test]
fn what_upstream_refuses_is_refused() {
    for (line, words) in [
        (
            "-r 1 sockmap --rx-normal",
            "--rx-normal runs no BPF program",
        ),
        (
            "-r 1 sockmap --tx-normal",
            "--tx-normal runs no BPF program",
        ),
        (
            "-r 1 sockmap --rx-pass --tx-pass",
            "one mode at a time, got --rx-pass and --tx-pass",
        ),
        ("-r 1 -c 1 sockmap", "one producer and two consumers"),
        ("-r 1 -p 2 sockmap", "one producer and two consumers"),
        ("-r 1 sockmap --tx-pass --rx-strp 100", "--rx-strp attaches"),
        ("-r 1 sockmap --producer-duration 1", "--producer-duration"),
        ("-r 1 sockmap --delay-consumer -1", "delay-consumer"),
    ] {
        let out = bench(line);
        assert_eq!(out.code, USAGE, "{line}: {}", out.stderr);
        assert!(out.stderr.contains(words), "{line}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{line}: {}",
            out.stderr
        );
    }
}
