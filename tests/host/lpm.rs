//! The LPM trie family (lpm-trie-*) for real: exact counts of map
//! operations, insert and delete stopping a run at the last key as
//! upstream's do, the time per operation kept in the result file, and the
//! refusals of bad options.

use crate::common::*;

const USAGE: i32 = 2;
/// The operations of one XDP test run (LPM_LOOPS in `bpf/lpm.bpf.c`).
const LOOPS_PER_RUN: u64 = 10_000;

/// Every run makes 10000 operations, whatever the producers or the keys;
/// `-r` counts the runs of all the producers together.
#[test]
fn full_runs_count_every_operation() {
    let _lock = probe_lock();
    for bench in [
        "lpm-trie-noop",
        "lpm-trie-baseline",
        "lpm-trie-lookup",
        "lpm-trie-update",
    ] {
        for extra in ["", "--random --prefix_len 24"] {
            let out = bench_ok(&format!("-q -r 3 -p 2 --nr_entries 100 {extra} {bench}"));
            assert_eq!(
                fixed_hits(&out.stdout),
                3 * LOOPS_PER_RUN,
                "{bench} {extra}: {}",
                out.stdout
            );
        }
    }
    assert_nothing_left();
}

/// Insert and delete end a run at the last key and reset the trie: with
/// 25000 keys the runs make 10000, 10000, 5000, then again from key 0.
#[test]
fn insert_and_delete_stop_at_the_last_key() {
    let _lock = probe_lock();
    for bench in ["lpm-trie-insert", "lpm-trie-delete"] {
        let out = bench_ok(&format!("-q -r 5 --nr_entries 25000 {bench}"));
        assert_eq!(fixed_hits(&out.stdout), 45_000, "{bench}: {}", out.stdout);
        let out = bench_ok(&format!("-q -r 7 --nr_entries 300 {bench}"));
        assert_eq!(fixed_hits(&out.stdout), 7 * 300, "{bench}: {}", out.stdout);
    }
    assert_nothing_left();
}

/// The time per operation measured in BPF is kept in the result file.
#[test]
fn the_time_per_operation_is_kept() {
    let _lock = probe_lock();
    let (_dir, json, _) = bench_ok_json("-q -r 2 --nr_entries 1000 --json {json} lpm-trie-insert");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the result file")).unwrap();
    let ns = result["runs"][0]["figures"]["op-time"]["value"].as_f64();
    assert!(ns.is_some_and(|ns| ns > 0.0), "{result}");
}

/// Upstream's summary line: throughput in M ops/s and latency in ns/op;
/// insert's and delete's over the time measured inside BPF, whose seconds
/// the result file keeps beside their figures.
#[test]
fn timed_runs_print_the_ops_lines() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 --nr_entries 1000 lpm-trie-lookup");
    let summary = upstreams_part(line_starting(&out.stdout, "Summary: throughput "));
    assert!(
        summary.contains(" M ops/s (") && summary.ends_with(" ns/op"),
        "{summary}"
    );
    let (_dir, json, out) =
        bench_ok_json("-w0 -d1 --nr_entries 1000 --json {json} lpm-trie-delete");
    let iter = line_starting(&out.stdout, "Iter   0 (");
    assert!(
        iter.contains("M/s (") && iter.ends_with("M/prod)"),
        "{iter}"
    );
    let summary = upstreams_part(line_starting(&out.stdout, "Summary: throughput "));
    assert!(
        summary.contains(" M ops/s (") && summary.ends_with(" ns/op"),
        "{summary}"
    );
    // The time the BPF side measured, and its operations: channels of
    // their own, each second.
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the result file")).unwrap();
    let names: Vec<&str> = result["channels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["hits", "measured time", "measured operations"]);
    let second = &result["runs"][0]["samples"][0]["values"];
    assert!(second[1].as_u64().is_some_and(|ns| ns > 0), "{second}");
}

#[test]
fn bad_options_are_refused_with_one_sentence() {
    for (line, words) in [
        ("lpm-trie-lookup", "needs --nr_entries"),
        ("--nr_entries 0 lpm-trie-noop", "needs --nr_entries"),
        (
            "--nr_entries 100 --prefix_len 6 lpm-trie-lookup",
            "too small for --nr_entries",
        ),
        (
            "--nr_entries 10 --prefix_len 33 lpm-trie-lookup",
            "--prefix_len",
        ),
        ("--nr_entries 10 -p 2 lpm-trie-insert", "single producer"),
        ("--nr_entries 10 -p 2 lpm-trie-free", "single producer"),
        (
            "--nr_entries 10 --random lpm-trie-delete",
            "does not support --random",
        ),
        ("--nr_entries 10 -c 1 lpm-trie-update", "consumers"),
    ] {
        let out = bench(&format!("-q -r 1 {line}"));
        assert_eq!(out.code, USAGE, "{line}: {}", out.stderr);
        assert_has(&out.stderr, words);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{line}: {}",
            out.stderr
        );
    }
}

/// Where the kernel refuses fentry/fexit (this host), lpm-trie-free says
/// so instead of failing, and leaves nothing loaded.
#[test]
fn free_runs_or_says_why_not() {
    let _lock = probe_lock();
    let out = bench("-q -r 2 --nr_entries 1000 lpm-trie-free");
    if out.code == 0 {
        assert_eq!(fixed_hits(&out.stdout), 2, "{}", out.stdout);
    } else {
        assert!(out.stderr.starts_with("unsupported: "), "{}", out.stderr);
        assert_has(&out.stderr, "bpf_map_free_deferred");
    }
    assert_nothing_left();
}

/// `--probe` sets each up without --nr_entries (a trie of one key).
#[test]
fn probe_needs_no_nr_entries() {
    let _lock = probe_lock();
    let out = bench("--probe lpm-trie-noop lpm-trie-lookup lpm-trie-delete lpm-trie-free");
    assert_has(&out.stdout, "lpm-trie-lookup");
    for line in out.stdout.lines().filter(|l| l.starts_with("lpm-trie-")) {
        let verdict = line.split_whitespace().nth(1).unwrap_or("");
        assert!(verdict == "ok" || verdict == "unsupported:", "{line}");
    }
    assert_nothing_left();
}
