//! What `bench compare` says of awkward inputs: partial runs, runs interrupted
//! before measuring, two different benchmarks forced together, several files
//! of one benchmark, a large change that is not significant, and the rate each
//! benchmark is ranked by.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bench::results::ResultFile;
use bench::stats::{summarize, Sample};
use common::*;

/// A real result file to start from (context, tool, options), made once.
fn template() -> ResultFile {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    let text = TEMPLATE.get_or_init(|| {
        let out = run(&["-q", "-w0", "-d1", "--json", "-", "trig-usermode-count"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    });
    serde_json::from_str(text).unwrap()
}

/// Per-second samples: `hits` and `drops` scaled by each factor.
fn samples(hits: f64, drops: f64, factors: &[f64], warmup: bool) -> Vec<Sample> {
    factors
        .iter()
        .enumerate()
        .map(|(i, f)| Sample {
            iteration: i as u32,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            hits: (hits * f) as u64,
            drops: (drops * f) as u64,
            warmup,
        })
        .collect()
}

const STEADY: [f64; 8] = [0.997, 1.002, 1.0, 0.999, 1.003, 0.998, 1.001, 1.0];

fn write(dir: &Path, name: &str, bench: &str, samples: Vec<Sample>, partial: bool) -> PathBuf {
    let mut file = template();
    file.benchmark = bench.to_string();
    file.partial = partial;
    let run = &mut file.runs[0];
    run.partial = partial;
    run.summary = summarize(&samples, 1);
    run.samples = samples;
    let path = dir.join(name);
    fs::write(&path, file.to_json()).unwrap();
    path
}

fn compare(args: &[&Path], flags: &[&str]) -> Output {
    let mut all: Vec<String> = vec!["compare".into()];
    all.extend(flags.iter().map(|s| s.to_string()));
    all.extend(args.iter().map(|p| p.to_str().unwrap().to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = run(&all);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// The table's rows: not its header, nor the closing note on single runs.
fn rows(out: &Output) -> Vec<String> {
    out.stdout
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("note: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn partial_runs_are_marked_and_an_unmeasured_one_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = write(
        d,
        "whole.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY, false),
        false,
    );
    let partial = write(
        d,
        "partial.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY[..3], false),
        true,
    );
    let rows_ = rows(&compare(&[&whole, &partial], &[]));
    assert_eq!(rows_.len(), 1);
    assert!(rows_[0].ends_with("[partial: new]"), "{}", rows_[0]);

    // Interrupted during warm-up: only warm-up samples, no summary.
    let warm = write(
        d,
        "warm.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &[1.0], true),
        true,
    );
    let row = &rows(&compare(&[&whole, &warm], &[]))[0];
    assert!(
        row.contains("nothing to compare: the new run was interrupted before measuring"),
        "{row}"
    );
    assert!(!row.contains("--repeat"), "{row}");
}

#[test]
fn forced_benchmarks_show_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = write(
        d,
        "a.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY, false),
        false,
    );
    let b = write(
        d,
        "b.json",
        "trig-uprobe-nop5",
        samples(5e6, 0.0, &STEADY, false),
        false,
    );
    let row = &rows(&compare(&[&a, &b], &["--force"]))[0];
    assert!(
        row.starts_with("trig-uprobe-nop vs trig-uprobe-nop5 "),
        "{row}"
    );
    assert!(row.contains("faster"), "{row}");
}

#[test]
fn several_files_of_one_benchmark_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    fs::create_dir(&old).unwrap();
    fs::create_dir(&new).unwrap();
    write(
        &old,
        "base.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY, false),
        false,
    );
    write(
        &new,
        "first.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY, false),
        false,
    );
    write(
        &new,
        "second.json",
        "trig-uprobe-nop",
        samples(1.6e6, 0.0, &STEADY, false),
        false,
    );
    let rows_ = rows(&compare(&[&old, &new], &[]));
    assert_eq!(rows_.len(), 2, "{rows_:?}");
    assert!(
        rows_[0].starts_with("trig-uprobe-nop (base.json vs first.json)"),
        "{}",
        rows_[0]
    );
    assert!(
        rows_[1].starts_with("trig-uprobe-nop (base.json vs second.json)"),
        "{}",
        rows_[1]
    );
    assert!(rows_[1].contains("slower"), "{}", rows_[1]);
}

#[test]
fn a_large_change_that_is_not_significant_is_no_significant_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let old = write(
        d,
        "old.json",
        "trig-uprobe-nop",
        samples(1e6, 0.0, &[1.0, 2.0, 0.5], false),
        false,
    );
    let new = write(
        d,
        "new.json",
        "trig-uprobe-nop",
        samples(1e6, 0.0, &[0.5, 0.6, 0.9], false),
        false,
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert!(row.contains(" no significant change (p="), "{row}");
    assert!(!row.contains("noise"), "{row}");
}

#[test]
fn the_perf_family_is_ranked_by_all_operations_as_in_its_sweep_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Equal hits, 50 % more operations in all: the perf family's headline
    // (total operations) moved, its hits did not.
    let old = write(
        d,
        "old.json",
        "syscall-basic",
        samples(1e6, 1e6, &STEADY, false),
        false,
    );
    let new = write(
        d,
        "new.json",
        "syscall-basic",
        samples(1e6, 2e6, &STEADY, false),
        false,
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert!(row.contains("+50.00 %") && row.contains("faster"), "{row}");
    assert!(
        row.contains("2.000 ± ") && row.contains("3.000 ± "),
        "{row}"
    );
    // The trigger families are ranked by hits.
    let old = write(
        d,
        "old.json",
        "trig-uprobe-nop",
        samples(1e6, 1e6, &STEADY, false),
        false,
    );
    let new = write(
        d,
        "new.json",
        "trig-uprobe-nop",
        samples(1e6, 2e6, &STEADY, false),
        false,
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert!(row.contains("no significant change"), "{row}");
}
