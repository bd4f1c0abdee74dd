//! Independent runs, stated precision and interleaving, for real: the runs
//! are set up, measured and torn down each time, and the statistics over them
//! come out on stdout and in the JSON. The timed ones take the probe lock: two
//! at once on two CPUs would skew each other's rates.

use std::fs;

use crate::common::*;
use bench::results::ResultFile;

/// What `cut -d'(' -f1 | cut -d' ' -f3-` leaves of a line.
fn kernel_cut(line: &str) -> String {
    let first = line.split('(').next().unwrap();
    first.split(' ').skip(2).collect::<Vec<_>>().join(" ")
}

#[test]
fn runs_report_each_run_then_the_statistics_over_them() {
    let _lock = probe_lock();
    let (dir, path, out) = bench_ok_json("-q -w0 -d1 --runs 3 --json {json} trig-syscall-count");
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
    assert_starts(last, "Summary: hits ");
    let cut = kernel_cut(last);
    assert!(cut.trim().ends_with("M/s"), "{cut}");

    let result = ResultFile::load(&path).unwrap();
    let repetitions: Vec<Option<u32>> = result.runs.iter().map(|r| r.repetition).collect();
    assert_eq!(repetitions, [Some(1), Some(2), Some(3)]);
    assert!(result.runs.iter().all(|r| r.noise.is_some()));
    let level = &result.run_stats[0];
    let headline = &level.figures[&result.figures[0].name];
    assert_eq!(headline.runs, 3);
    // The closing figures are the run means' mean and spread.
    let means: Vec<f64> = result
        .runs
        .iter()
        .map(|r| r.summary().cloned().unwrap().channels[0].unwrap().mean)
        .collect();
    let mean = means.iter().sum::<f64>() / 3.0;
    assert!((headline.mean - mean).abs() < 1e-6 * mean);
    assert!(headline.ci95.unwrap() > 0.0);
    assert_eq!(level.summary.over, bench::stats::Over::Runs(3));
    assert!(!result.context.machine.kernel_cmdline.is_empty());

    // A file of the first layout, whose run-level summary counted its runs
    // under "samples", reads with the runs as runs (a file 4c30c63 wrote,
    // relabelled as that layout).
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/4c30c63-htab-mem.json"
    );
    let mut old: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fixture).unwrap()).unwrap();
    old["schema"] = "bench-result/1".into();
    let summary = old["run_stats"][0]["summary"].as_object_mut().unwrap();
    let runs = summary.remove("runs").unwrap();
    summary.insert("samples".into(), runs);
    let old_path = dir.join("old.json");
    fs::write(&old_path, old.to_string()).unwrap();
    let read = ResultFile::load(&old_path).unwrap();
    assert_eq!(read.run_stats[0].summary.over, bench::stats::Over::Runs(2));
    assert_eq!(
        read.runs[0].summary().cloned().unwrap().over,
        bench::stats::Over::Samples(2)
    );
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_precision_out_of_reach_stops_at_the_cap_and_says_so() {
    let _lock = probe_lock();
    let (dir, path, out) = bench_ok_json(
        "-q -w0 -d1 --precision 0.0001 --max-runs 3 --json {json} trig-syscall-count",
    );
    let runs_line = out.stdout.lines().rev().nth(1).unwrap();
    assert_has(
        runs_line,
        "precision \u{b1}0.0001 % NOT reached: stopped at --max-runs 3",
    );
    let result = ResultFile::load(&path).unwrap();
    let precision = result.precision.unwrap();
    assert!(!precision.reached);
    assert_eq!(
        (precision.stopped_by.name(), precision.runs),
        ("max-runs", 3)
    );
    assert_eq!(result.runs.len(), 3);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_reachable_precision_stops_as_soon_as_it_is_reached() {
    let _lock = probe_lock();
    // Where it stops depends on the machine (a loaded CI machine needed 4
    // runs where a quiet one needs 3), so the check recomputes the interval
    // after each printed run and expects the stop at the first run, from the
    // third on, whose 95 % interval is within ±50 %: no sooner, no later.
    let out = bench_ok("-q -w0 -d1 --precision 50 --max-runs 6 trig-usermode-count");
    let rates: Vec<f64> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("Run "))
        .map(|l| words(l)[3].parse().unwrap())
        .collect();
    let reached = |k: usize| {
        let runs = &rates[..k];
        let mean = runs.iter().sum::<f64>() / k as f64;
        let var = runs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
        let t = [4.303, 3.182, 2.776, 2.571][k - 3];
        t * (var / k as f64).sqrt() / mean * 100.0 <= 50.0
    };
    let expected = (3..=6).find(|&k| k <= rates.len() && reached(k));
    match expected {
        Some(k) => {
            assert_eq!(rates.len(), k, "{}", out.stdout);
            assert_has(&out.stdout, "precision \u{b1}50 % reached");
        }
        None => {
            assert_eq!(rates.len(), 6, "{}", out.stdout);
            assert_has(&out.stdout, "NOT reached: stopped at --max-runs 6");
        }
    }
}

#[test]
fn several_benchmarks_run_interleaved_with_the_order_rotated() {
    let _lock = probe_lock();
    let dir = tempdir("interleaved");
    let out = bench_ok(&format!(
        "-q -w0 -d1 --runs 2 --json {} trig-uprobe-nop trig-uprobe-nop5",
        dir.display()
    ));
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
        .filter(|l| !l.starts_with("note: "))
        .collect();
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert!(
        table[1].ends_with("verdict (paired by round)"),
        "{}",
        table[1]
    );
    assert_starts(table[2], "trig-uprobe-nop ");
    // The second row's change from the first, with its interval.
    assert_starts(table[3], "trig-uprobe-nop5");
    assert_has(table[3], "% [");
    // An undecided row says what the rounds could have seen.
    if table[3].contains("no significant change") {
        assert!(table[3].contains("(could see \u{b1}"), "{}", table[3]);
        assert_has(&out.stdout, "\nnote: 'could see");
    }
    for name in ["trig-uprobe-nop", "trig-uprobe-nop5"] {
        let text = fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        let result: ResultFile = serde_json::from_str(&text).unwrap();
        assert_eq!(result.benchmark, name);
        assert_eq!(result.runs.len(), 2);
        // The second records its change from the first: paired, with the
        // unpaired figure and the detectable effect beside it.
        match &result.comparison {
            None => assert_eq!(name, "trig-uprobe-nop"),
            Some(c) => {
                assert_eq!(c.baseline, "trig-uprobe-nop");
                assert_eq!(c.basis, "paired-by-round");
                assert_eq!(c.paired.basis, bench::stats::Basis::PairedRuns);
                assert_eq!(c.unpaired.unwrap().basis, bench::stats::Basis::Runs);
                let s = c.sensitivity.unwrap();
                assert!(s.detectable_pct >= 2.0 && s.effect_pct == 5.0, "{s:?}");
            }
        }
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn markdown_tables_are_markdown() {
    let out = bench_ok(
        "-q -w0 -d1 --runs 2 --markdown --effect 3 trig-usermode-count trig-syscall-count",
    );
    let table: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert_starts(table[0], "| benchmark | hits (mean) | 95 % CI | change vs trig-usermode-count (paired by round) | verdict | detectable (80 % power) |");
    assert_eq!(table[1], "|---|---|---|---|---|---|");
    // The detectable effect, and the rounds --effect 3 would need.
    assert!(
        table[3].contains("| could see \u{b1}") && table[3].contains("3 % "),
        "{}",
        table[3]
    );
    assert_starts(table[3], "| trig-syscall-count |");
}

#[test]
fn runs_refuse_what_they_cannot_combine_with() {
    for (args, needle) in table(
        "
        --precision 5 -r 5 trig-syscall-count | --precision adds timed runs; it does not combine with --repeat
        --runs 2 --precision 3 trig-syscall-count | cannot be used with
        --runs 0 trig-syscall-count | between 1 and 1000
        --precision 0 trig-syscall-count | more than 0
        --json /tmp/x.json trig-syscall-count trig-usermode-count | names a directory
        trig-syscall-count trig-syscall-count | named twice
        ",
    ) {
        let out = bench(args);
        crate::common::assert_one_clear_line(&out, 2, needle);
    }
}

#[test]
fn compare_judges_runs_by_their_means_and_marks_single_runs() {
    let _lock = probe_lock();
    let dir = tempdir("compare-runs");
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for name in ["a.json", "b.json"] {
        bench_ok(&format!(
            "-q -w0 -d1 --runs 3 --json {} trig-usermode-count",
            file(name)
        ));
    }
    let out = run(&["compare", &file("a.json"), &file("b.json")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row = line_starting(&out.stdout, "trig-usermode-count");
    // Three runs a side: the run means are the observations.
    assert_has(row, ", 3+3 runs");
    assert!(row.contains(" % [") && row.contains("]"), "{row}");
    assert!(!out.stdout.contains("note: '1 run'"), "{}", out.stdout);
    // Beside "no significant change", what the runs could have seen: with a
    // 50 % noise floor, nothing under 50 %, and 5 % never.
    let out = run(&["compare", "--noise", "50", &file("a.json"), &file("b.json")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row = line_starting(&out.stdout, "trig-usermode-count");
    let seen = row
        .split("3+3 runs; could see \u{b1}")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|pct| pct.parse::<f64>().ok());
    assert!(seen.is_some_and(|pct| pct >= 50.0), "{row}");
    assert!(row.ends_with(" %, 5 % is out of reach)"), "{row}");
    assert_has(&out.stdout, "\nnote: 'could see");

    let one = file("one.json");
    bench_ok(&format!("-q -w0 -d2 --json {one} trig-usermode-count"));
    let out = run(&["compare", &file("a.json"), &one]);
    assert_has(&out.stdout, "1 run: drift not captured");
    assert_has(&out.stdout, "\nnote: '1 run' rows");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compare_pairs_the_files_of_one_interleaved_invocation_by_round() {
    let _lock = probe_lock();
    let dir = tempdir("compare-paired");
    bench_ok(&format!(
        "-q -w0 -d1 --runs 3 --json {} trig-usermode-count trig-syscall-count",
        dir.display()
    ));
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (a, b) = (
        file("trig-usermode-count.json"),
        file("trig-syscall-count.json"),
    );
    let out = bench_ok(&format!("compare {a} {b}"));
    let row = line_starting(&out.stdout, "trig-usermode-count vs trig-syscall-count");
    assert_has(row, "slower (p=");
    assert_has(row, ", 3 rounds, paired by round)");
    // A file of another invocation proves nothing of the rounds: Welch.
    let other = file("other.json");
    bench_ok(&format!(
        "-q -w0 -d1 --runs 3 --json {other} trig-syscall-count"
    ));
    let out = bench_ok(&format!("compare --force {a} {other}"));
    assert_has(&out.stdout, ", 3+3 runs");
    assert!(!out.stdout.contains("paired"), "{}", out.stdout);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn until_decided_stops_when_the_change_is_decided_and_says_why() {
    let _lock = probe_lock();
    let dir = tempdir("until-decided");
    let out = bench_ok(&format!("-q -w0 -d1 --until-decided 5 --max-runs 6 --json {} trig-usermode-count trig-syscall-count", dir.display()));
    // A system call is two orders of magnitude slower than a function call:
    // decided at the first look, round 3, on a quiet machine; a loaded one
    // may take a look or two more.
    assert_has(
        &out.stdout,
        "# trig-usermode-count, run 3 until decided or 6 runs",
    );
    assert!(
        out.stdout
            .contains("Until decided (\u{b1}5 %): decided: different after ")
            && out.stdout.contains(
                " rounds; each look at 98.75 % confidence (0.05 / 4 planned looks, Bonferroni)"
            ),
        "{}",
        out.stdout
    );
    assert_has(&out.stdout, "\n  trig-syscall-count: different, -9");
    let text = fs::read_to_string(dir.join("trig-syscall-count.json")).unwrap();
    let result: ResultFile = serde_json::from_str(&text).unwrap();
    let sequential = result.sequential.unwrap();
    // A ~98 % difference is decided at the first look on a quiet machine;
    // a loaded one may need a look or two more, never past the maximum.
    assert_eq!(
        (sequential.stopped_by.name(), sequential.looks),
        ("decided-different", 4),
        "{}",
        out.stdout
    );
    assert!((3..=6).contains(&sequential.runs), "{}", out.stdout);
    assert_eq!(
        sequential.decisions[0].decision,
        bench::stats::Decision::Different
    );
    fs::remove_dir_all(dir).unwrap();
    for (args, needle) in table(
        "
        --until-decided 5 trig-syscall-count | name two or more
        --until-decided 5 --runs 3 trig-syscall-count trig-usermode-count | cannot be used with
        ",
    ) {
        crate::common::assert_one_clear_line(&bench(args), 2, needle);
    }
}
