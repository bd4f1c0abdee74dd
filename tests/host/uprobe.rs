//! The uprobe family, for real: load, attach, count, detach.

use std::fs;
use std::os::unix::fs::FileExt;

use crate::common::*;
use bench::targets::{uprobe_offset, Target};

const PROBED: [&str; 16] = [
    "trig-uprobe-nop",
    "trig-uprobe-push",
    "trig-uprobe-ret",
    "trig-uprobe-nop5",
    "trig-uretprobe-nop",
    "trig-uretprobe-push",
    "trig-uretprobe-ret",
    "trig-uretprobe-nop5",
    "trig-uprobe-multi-nop",
    "trig-uprobe-multi-push",
    "trig-uprobe-multi-ret",
    "trig-uprobe-multi-nop5",
    "trig-uretprobe-multi-nop",
    "trig-uretprobe-multi-push",
    "trig-uretprobe-multi-ret",
    "trig-uretprobe-multi-nop5",
];

#[test]
fn every_probe_variant_counts_exactly_the_calls_made() {
    let _lock = probe_lock();
    for bench in PROBED {
        for (calls, producers) in [("1", "1"), ("20011", "2")] {
            assert_fixed_hits(
                &format!("-q -r {calls} -p {producers} {bench}"),
                calls.parse().unwrap(),
            );
        }
    }
}

#[test]
fn baselines_count_in_user_space() {
    // The nop target is probed by other tests: stay out of their counts.
    let _lock = probe_lock();
    for bench in ["trig-usermode-count", "trig-syscall-count"] {
        assert_fixed_hits(&format!("-q -r 123457 -p 3 {bench}"), 123_457);
    }
}

/// How far a figure printed with three decimals may be from its value.
const HALF_DIGIT: f64 = 0.000_500_1;

/// The rate of a `hits 1.234M/s` figure, in M/s.
fn rate_in(line: &str, label: &str) -> f64 {
    line.split_once(label)
        .and_then(|(_, rest)| rest.trim_start().split_once("M/s"))
        .and_then(|(figure, _)| figure.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} rate in {line:?}"))
}

#[test]
fn a_timed_run_prints_iterations_and_a_parseable_summary() {
    let _lock = probe_lock();
    let (dir, json) = temp_file("timed", "run.json");
    let out = bench_ok(&format!(
        "-w1 -d2 -a --json {} trig-uprobe-nop",
        json.display()
    ));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "Setting up benchmark 'trig-uprobe-nop'...");
    assert_eq!(lines[1], "Benchmark 'trig-uprobe-nop' started.");
    let iters: Vec<&&str> = lines.iter().filter(|l| l.starts_with("Iter ")).collect();
    assert_eq!(iters.len(), 3, "{}", out.stdout);
    let summary = lines.last().unwrap();
    assert_starts(summary, "Summary: hits ");
    // What the kernel's scripts do: tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-
    let cut = summary.split('(').next().unwrap();
    let cut: Vec<&str> = cut.split(' ').skip(2).collect();
    let cut = cut.join(" ");
    let (mean, rest) = cut.trim().split_once(" \u{b1} ").expect("mean ± sd");
    let mean: f64 = mean.parse().unwrap();
    let sd: f64 = rest.strip_suffix("M/s").expect("M/s").parse().unwrap();

    // The figures are the counts': each second's rate is its hits over its
    // time, as the result file keeps them, to the printed digit; the first
    // second is the warm-up; the summary is the mean and sd of the measured
    // seconds' rates. A probe on the target the producer calls for a
    // second fires in it.
    let result = bench::results::ResultFile::load(&json).unwrap();
    let samples = &result.runs[0].samples();
    assert_eq!(samples.len(), 3);
    let mut measured = Vec::new();
    for (sample, line) in samples.iter().zip(&iters) {
        let hits = sample.value(0).unwrap();
        assert!(hits > 0, "{sample:?}");
        let rate = hits as f64 / sample.elapsed_ns as f64 * 1e3;
        let printed = rate_in(line, "hits");
        assert!(
            (printed - rate).abs() <= HALF_DIGIT,
            "{line} for {sample:?}"
        );
        assert_eq!(sample.warmup, sample.iteration == 0, "{sample:?}");
        if !sample.warmup {
            measured.push(rate);
        }
    }
    let expected_mean = (measured[0] + measured[1]) / 2.0;
    let expected_sd = (measured[0] - measured[1]).abs() / std::f64::consts::SQRT_2;
    assert!(
        (mean - expected_mean).abs() <= HALF_DIGIT,
        "{summary}: {measured:?}"
    );
    assert!(
        (sd - expected_sd).abs() <= HALF_DIGIT,
        "{summary}: {measured:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn quiet_drops_the_set_up_chatter() {
    let _lock = probe_lock();
    let out = bench_ok("-q -w0 -d1 trig-usermode-count");
    assert!(!out.stdout.contains("Setting up"), "{}", out.stdout);
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
}

#[test]
fn no_bpf_program_outlives_the_run() {
    let _lock = probe_lock();
    bench_ok("-q -r 1000 trig-uretprobe-multi-push");
    // A multi-uprobe link's program is freed after a tasks-trace RCU grace
    // period: leftover_programs waits for it.
    assert_nothing_left();
}

/// A copy of the binary whose `nop` target starts with another instruction
/// must be refused at set-up, before anything runs.
#[test]
fn a_target_with_the_wrong_instruction_is_refused() {
    // Held throughout: the refused set-up may load the program for a moment,
    // and no_bpf_program_outlives_the_run must not see it.
    let _lock = probe_lock();
    let (dir, copy) = bin_copy("wrong-insn", "bench");
    let offset = uprobe_offset(&copy, Target::Nop.symbol()).unwrap();
    let file = fs::OpenOptions::new().write(true).open(&copy).unwrap();
    file.write_all_at(&[0x55], offset).unwrap();
    drop(file);

    let out = run_bin(&copy, &["-q", "-r", "10", "trig-uprobe-nop"]);
    assert_one_clear_line(
        &out,
        5,
        "starts with 55 instead of 90 (nop): refusing to probe it",
    );
    // The other targets of the same copy are untouched and still run.
    let out = run_bin(&copy, &["-q", "-r", "10", "trig-uprobe-push"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(fixed_hits(&out.stdout), 10);
    fs::remove_dir_all(&dir).unwrap();
}
