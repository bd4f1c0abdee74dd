//! The kernel runner's harness baselines (count-global, count-local) and its
//! rename family, for real: exact counts with `--repeat`, and the kernel's
//! refusals with the trigger family's words.

use crate::common::*;
use bench::kernel::{config, ConfigOption};

const UNSUPPORTED: i32 = 4;

/// `-r REPEAT -p PRODUCERS` of `bench` prints `# Executed REPEAT calls`,
/// REPEAT hits and no drop, for each case.
fn counts_exactly(bench: &str, cases: &[(&str, &str)]) {
    for (repeat, producers) in cases {
        let out = run(&["-q", "-r", repeat, "-p", producers, bench]);
        let expected = repeat.parse::<u64>().unwrap();
        assert_eq!(
            fixed_counts(&out),
            (expected, 0),
            "{bench} -r {repeat} -p {producers}:\n{}",
            out.stdout
        );
        let executed = format!("# Executed {repeat} calls of {bench}");
        assert!(out.stdout.starts_with(&executed), "{}", out.stdout);
    }
}

#[test]
fn the_harness_baselines_count_every_operation() {
    for bench in ["count-global", "count-local"] {
        counts_exactly(bench, &[("1", "1"), ("100003", "1"), ("100003", "2")]);
    }
}

/// Every write of a thread's name fires task_rename once, and the program
/// counts it: the writes are all hits, none a drop (a write the program did
/// not see).
#[test]
fn every_rename_fires_the_raw_tracepoint_once() {
    let _lock = probe_lock();
    for bench in ["rename-base", "rename-rawtp"] {
        counts_exactly(bench, &[("1", "1"), ("20011", "1"), ("20011", "2")]);
    }
}

/// The kprobe and tracing variants run and count, or are refused with the
/// words of trig-kprobe and trig-fentry, by `--probe` and a run alike.
#[test]
fn rename_probes_run_or_say_why_as_the_triggers_do() {
    let _lock = probe_lock();
    let kprobes_off = config("CONFIG_KPROBES") == ConfigOption::NotSet;
    for (bench, trigger) in [
        ("rename-kprobe", "trig-kprobe"),
        ("rename-kretprobe", "trig-kprobe"),
        ("rename-fentry", "trig-fentry"),
        ("rename-fexit", "trig-fentry"),
    ] {
        let out = run(&["-q", "-r", "1000", bench]);
        let theirs = run(&["-q", "-r", "1", trigger]);
        if out.code == 0 {
            assert_eq!(fixed_counts(&out), (1000, 0), "{bench}");
            assert_eq!(theirs.code, 0, "{bench} ran, {trigger} did not");
            continue;
        }
        assert_eq!(theirs.code, UNSUPPORTED, "{trigger}: {}", theirs.stderr);
        let reason = theirs.stderr.trim().replace(trigger, bench);
        assert_one_clear_line(&out, UNSUPPORTED, &reason);
        if bench.contains("kprobe") && kprobes_off {
            assert_has(&reason, "kprobes not available (CONFIG_KPROBES is not set)");
        }
        let probed = run(&["--probe", bench]);
        assert_eq!(probed.code, 0, "{}", probed.stderr);
        let verdict = reason.replace(&format!("{bench}: "), "");
        assert_eq!(
            probed.stdout.trim().strip_prefix(bench).map(str::trim),
            Some(verdict.as_str()),
            "{bench}"
        );
    }
}
