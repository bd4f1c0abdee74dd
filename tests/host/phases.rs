//! What a run says about itself when it ends early or briefly: interrupted
//! fixed runs report the work done, the phase an interrupt hit is named
//! right without warm-up, a single run has no between-run spread, the
//! closing table of several benchmarks is printed after one round, and the
//! options of a run are refused where no run happens.

use std::process::Child;
use std::time::Duration;

use crate::common::*;
use bench::results::ResultFile;

/// Sends SIGINT, waits for the child (at most 30 s) and collects its output;
/// `stdout` holds what was read of stdout before.
fn interrupt(child: Child, stdout: String) -> Output {
    send_signal(&child, libc::SIGINT);
    finish_child(child, Duration::from_secs(30), stdout)
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {text}"))
        + prefix.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn an_interrupted_fixed_run_reports_the_calls_it_made() {
    let _lock = probe_lock();
    let (dir, json, child) = spawn_json("-q -r 100000000 --json {json} trig-syscall-count");
    std::thread::sleep(Duration::from_millis(1500));
    let out = interrupt(child, String::new());
    assert_one_clear_line(&out, 130, "interrupted by SIGINT after ");
    let calls = number_after(&out.stdout, "# partial: interrupted after ");
    assert!(calls > 0, "{}", out.stdout);
    assert_eq!(
        number_after(&out.stdout, "# Executed "),
        calls,
        "{}",
        out.stdout
    );
    assert_eq!(number_after(&out.stderr, "after "), calls, "{}", out.stderr);
    // One getpgid() per call, each counted by the BPF program: exact.
    assert_eq!(fixed_hits(&out.stdout), calls, "{}", out.stdout);
    let fixed = ResultFile::load(&json).unwrap().runs[0]
        .fixed()
        .cloned()
        .unwrap();
    assert_eq!(
        (fixed.calls, fixed.ops, fixed.values[0]),
        (calls, calls, Some(calls))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_warmup_an_interrupt_before_the_first_second_is_not_in_warmup() {
    let _lock = probe_lock();
    // A run alone, one of several, one point of a sweep.
    for args in [
        "-w0 -d5 trig-syscall-count",
        "-w0 -d5 --runs 2 trig-syscall-count",
        "-w0 -d5 --sweep producers=1,2 trig-syscall-count",
    ] {
        let mut child = spawn_line(args);
        let seen = read_until(&mut child, "started.", 1, false);
        let out = interrupt(child, seen);
        assert_one_clear_line(
            &out,
            130,
            "interrupted by SIGINT before the first measured second",
        );
        assert!(!out.stderr.contains("warm-up"), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn one_run_stopped_by_max_time_has_no_spread_between_runs() {
    // --max-time is in seconds: ten runs fit one on the test tick.
    real_tick();
    let _lock = probe_lock();
    let out = bench_ok("-q -w0 -d1 --precision 0.5 --max-time 1 trig-syscall-count");
    let runs_line = line_starting(&out.stdout, "runs: ");
    assert_starts(runs_line, "runs: 1,");
    assert!(!runs_line.contains("between-run sd 0.0 %"), "{runs_line}");
    assert!(!runs_line.contains("1 runs"), "{runs_line}");
    assert_has(runs_line, "stopped at --max-time after 1 run");
}

#[test]
fn a_tiny_precision_is_printed_in_a_few_characters() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 --precision 1e-300 --max-runs 2 trig-syscall-count");
    for line in out.stdout.lines() {
        assert!(line.len() < 200, "{line}");
    }
    assert_has(&out.stdout, "# run 1 until \u{b1}1e-300 % or 2 runs");
    assert_has(&out.stdout, "precision \u{b1}1e-300 % NOT reached");
}

#[test]
fn several_benchmarks_end_with_their_table_after_one_round() {
    let _lock = probe_lock();
    let names = ["trig-syscall-count", "trig-usermode-nocount"];
    let out = run(&["-q", "-w0", "-d1", names[0], names[1]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table = out
        .stdout
        .split("Interleaved: 1 round,")
        .nth(1)
        .unwrap_or_else(|| panic!("{}", out.stdout));
    for name in names {
        assert!(table.lines().any(|l| l.starts_with(name)), "{}", out.stdout);
    }
    let out = run(&["-q", "-w0", "-d1", "--markdown", names[0], names[1]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 4, "{}", out.stdout);
    assert!(
        rows[2].starts_with(&format!("| {} |", names[0])),
        "{rows:?}"
    );
    assert!(
        rows[3].starts_with(&format!("| {} |", names[1])),
        "{rows:?}"
    );
}

#[test]
fn markdown_takes_one_benchmark_too() {
    let _lock = probe_lock();
    let out = bench_ok("-q -w0 -d1 --runs 2 --markdown trig-syscall-count");
    let rows: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 3, "{}", out.stdout);
    assert!(rows[2].starts_with("| trig-syscall-count |"), "{rows:?}");
}

#[test]
fn the_options_of_a_run_are_refused_where_nothing_runs() {
    // --probe takes -s and --pid-filter, as the runs it stands for would,
    // and refuses them for a benchmark whose run refuses them.
    let cases = table(
        "
        --list -s | cannot be used with
        --list --pid-filter | cannot be used with
        --list --csv x.csv | cannot be used with
        --probe -d 3 | cannot be used with
        --probe --runs 2 trig-syscall-count | cannot be used with
        --probe -s trig-syscall-count | does not apply
        --probe --pid-filter trig-syscall-count | does not apply
        ",
    );
    for (args, needle) in cases {
        assert_one_clear_line(&bench(args), 2, needle);
    }
}
