//! Independent runs, stated precision and interleaving, for real: the runs
//! are set up, measured and torn down each time, and the statistics over them
//! come out on stdout and in the JSON.

mod common;

use std::fs;

use bench::results::ResultFile;
use common::{probe_lock, run, tempdir};

/// What `cut -d'(' -f1 | cut -d' ' -f3-` leaves of a line.
fn kernel_cut(line: &str) -> String {
    let first = line.split('(').next().unwrap();
    first.split(' ').skip(2).collect::<Vec<_>>().join(" ")
}

#[test]
fn runs_report_each_run_then_the_statistics_over_them() {
    let dir = tempdir("runs");
    let path = dir.join("r.json");
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--runs",
        "3",
        "--json",
        path.to_str().unwrap(),
        "trig-syscall-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let headers: Vec<&&str> = lines.iter().filter(|l| l.starts_with("# run ")).collect();
    assert_eq!(headers, [&"# run 1 of 3", &"# run 2 of 3", &"# run 3 of 3"]);
    let run_lines = lines.iter().filter(|l| l.starts_with("Run ")).count();
    assert_eq!(run_lines, 3, "{}", out.stdout);
    // Only the closing line over the runs says Summary, and it is last.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("Summary:")).count(),
        1
    );
    let runs_line = lines[lines.len() - 2];
    assert!(
        runs_line.starts_with("runs: 3, hits ") && runs_line.contains("% (95 % CI)"),
        "{runs_line}"
    );
    let last = lines.last().unwrap();
    assert!(last.starts_with("Summary: hits "), "{last}");
    let cut = kernel_cut(last);
    assert!(cut.trim().ends_with("M/s"), "{cut}");

    let result: ResultFile = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let repetitions: Vec<Option<u32>> = result.runs.iter().map(|r| r.repetition).collect();
    assert_eq!(repetitions, [Some(1), Some(2), Some(3)]);
    assert!(result.runs.iter().all(|r| r.noise.is_some()));
    let level = &result.run_stats[0];
    assert_eq!(level.headline.runs, 3);
    // The closing figures are the run means' mean and spread.
    let means: Vec<f64> = result
        .runs
        .iter()
        .map(|r| r.summary.unwrap().hits.mean)
        .collect();
    let mean = means.iter().sum::<f64>() / 3.0;
    assert!((level.headline.mean - mean).abs() < 1e-6 * mean);
    assert!(level.headline.ci95.unwrap() > 0.0);
    assert_eq!(level.summary.samples, 3);
    assert!(!result.context.machine.kernel_cmdline.is_empty());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_precision_out_of_reach_stops_at_the_cap_and_says_so() {
    let dir = tempdir("precision");
    let path = dir.join("p.json");
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--precision",
        "0.0001",
        "--max-runs",
        "3",
        "--json",
        path.to_str().unwrap(),
        "trig-syscall-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs_line = out.stdout.lines().rev().nth(1).unwrap();
    assert!(
        runs_line.contains("precision \u{b1}0.0001 % NOT reached: stopped at --max-runs 3"),
        "{runs_line}"
    );
    let result: ResultFile = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let precision = result.precision.unwrap();
    assert!(!precision.reached);
    assert_eq!(
        (precision.stopped_by.as_str(), precision.runs),
        ("max-runs", 3)
    );
    assert_eq!(result.runs.len(), 3);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_reachable_precision_stops_as_soon_as_it_is_reached() {
    // usermode-count is steady to a fraction of a percent: three runs (the
    // least an interval is judged from) reach ±50 %.
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--precision",
        "50",
        "--max-runs",
        "6",
        "trig-usermode-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("# run 3 until"), "{}", out.stdout);
    assert!(!out.stdout.contains("# run 4 "), "{}", out.stdout);
    assert!(
        out.stdout.contains("precision \u{b1}50 % reached"),
        "{}",
        out.stdout
    );
}

#[test]
fn several_benchmarks_run_interleaved_with_the_order_rotated() {
    let _lock = probe_lock();
    let dir = tempdir("interleaved");
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--runs",
        "2",
        "--json",
        dir.to_str().unwrap(),
        "trig-uprobe-nop",
        "trig-uprobe-nop5",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let headers: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("# trig-"))
        .collect();
    assert_eq!(
        headers,
        [
            "# trig-uprobe-nop, run 1 of 2",
            "# trig-uprobe-nop5, run 1 of 2",
            "# trig-uprobe-nop5, run 2 of 2",
            "# trig-uprobe-nop, run 2 of 2",
        ]
    );
    let table: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Interleaved: 2 rounds"))
        .collect();
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert!(table[2].starts_with("trig-uprobe-nop "), "{}", table[2]);
    // The second row's change from the first, with its interval.
    assert!(table[3].starts_with("trig-uprobe-nop5"), "{}", table[3]);
    assert!(table[3].contains("% ["), "{}", table[3]);
    for name in ["trig-uprobe-nop", "trig-uprobe-nop5"] {
        let text = fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        let result: ResultFile = serde_json::from_str(&text).unwrap();
        assert_eq!(result.benchmark, name);
        assert_eq!(result.runs.len(), 2);
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn markdown_tables_are_markdown() {
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--runs",
        "2",
        "--markdown",
        "trig-usermode-count",
        "trig-syscall-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert!(table[0].starts_with("| benchmark | hits (mean) | 95 % CI |"));
    assert_eq!(table[1], "|---|---|---|---|---|");
    assert!(
        table[3].starts_with("| trig-syscall-count |"),
        "{}",
        table[3]
    );
}

#[test]
fn runs_refuse_what_they_cannot_combine_with() {
    for (args, needle) in [
        (
            &["--runs", "2", "-r", "5", "trig-syscall-count"][..],
            "--repeat",
        ),
        (
            &["--runs", "2", "--precision", "3", "trig-syscall-count"][..],
            "cannot be used with",
        ),
        (
            &["--runs", "0", "trig-syscall-count"][..],
            "between 1 and 1000",
        ),
        (
            &["--precision", "0", "trig-syscall-count"][..],
            "more than 0",
        ),
        (
            &[
                "--json",
                "/tmp/x.json",
                "trig-syscall-count",
                "trig-usermode-count",
            ][..],
            "names a directory",
        ),
        (
            &["trig-syscall-count", "trig-syscall-count"][..],
            "named twice",
        ),
    ] {
        let out = run(args);
        common::assert_one_clear_line(&out, 2, needle);
    }
}

#[test]
fn compare_judges_runs_by_their_means_and_marks_single_runs() {
    let dir = tempdir("compare-runs");
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for name in ["a.json", "b.json"] {
        let out = run(&[
            "-q",
            "-w0",
            "-d1",
            "--runs",
            "3",
            "--json",
            &file(name),
            "trig-usermode-count",
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let out = run(&["compare", &file("a.json"), &file("b.json")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("trig-usermode-count"))
        .unwrap();
    // Three runs a side: the run means are the observations.
    assert!(row.contains(", 3+3 runs)"), "{row}");
    assert!(row.contains(" % [") && row.contains("]"), "{row}");
    assert!(!out.stdout.contains("note: "), "{}", out.stdout);

    let one = file("one.json");
    let out = run(&["-q", "-w0", "-d2", "--json", &one, "trig-usermode-count"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(&["compare", &file("a.json"), &one]);
    assert!(
        out.stdout.contains("1 run: drift not captured"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\nnote: '1 run' rows"),
        "{}",
        out.stdout
    );
    fs::remove_dir_all(dir).unwrap();
}
