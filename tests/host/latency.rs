//! `--latency`: every operation timed, counts still exact, the printed
//! percentiles reproducible from the kept histogram, refusals with a reason,
//! and Ctrl-C keeping what was measured. Real probes, real BPF.

use std::fs;

use crate::common::*;
use bench::latency::{LatencyRecord, PERCENTILES};
use bench::results::ResultFile;

/// The figures of the `Latency per ...` line, in order, p50 to max.
fn printed_percentiles(stdout: &str) -> Vec<(String, u64)> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Latency per "))
        .unwrap_or_else(|| panic!("no latency line in:\n{stdout}"));
    let figures = line.split_once("): ").unwrap().1;
    figures
        .split(" | ")
        .map(|f| {
            let (name, value) = f.split_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// The value at `percentile` of buckets `[highest ns, count]`, worked out
/// here rather than by the tool: the first bucket where the running count
/// reaches that share of the total, at least one value.
fn percentile_in(buckets: &[[u64; 2]], percentile: f64) -> u64 {
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    let wanted = ((percentile / 100.0 * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    buckets
        .iter()
        .find(|b| {
            seen += b[1];
            seen >= wanted
        })
        .map(|b| b[0])
        .unwrap_or_else(|| panic!("no bucket at {percentile} of {buckets:?}"))
}

fn latency_of(json: &std::path::Path) -> LatencyRecord {
    let file = ResultFile::load(json).unwrap();
    file.runs[0]
        .latency
        .clone()
        .expect("the run has its latency")
}

#[test]
fn counts_stay_exact_and_every_operation_is_timed() {
    let _lock = probe_lock();
    let dir = tempdir("exact");
    for (bench, repeat, producers) in [
        ("trig-uprobe-nop", "200000", "2"),
        ("trig-uretprobe-nop", "50000", "1"),
        ("trig-uprobe-multi-nop", "50000", "1"),
        ("trig-usdt-nop", "100000", "1"),
        ("trig-usermode-count", "1000003", "2"),
        ("trig-syscall-count", "100000", "1"),
    ] {
        let json = dir.join(format!("{bench}.json"));
        let out = run(&[
            "--latency",
            "-r",
            repeat,
            "-p",
            producers,
            "--json",
            json.to_str().unwrap(),
            bench,
        ]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        let repeat: u64 = repeat.parse().unwrap();
        assert_eq!(fixed_hits(&out.stdout), repeat, "{bench}:\n{}", out.stdout);
        let latency = latency_of(&json);
        assert_eq!(latency.percentiles.count, repeat, "{bench}");
        let bucketed: u64 = latency.buckets.iter().map(|b| b[1]).sum();
        assert_eq!(bucketed, repeat, "{bench}");
    }
    // perf's family counts operations: breakpoint toggles.
    let json = dir.join("toggle.json");
    let out = bench_ok(&format!(
        "--latency -r 2000 --json {} breakpoint-enable",
        json.display()
    ));
    assert_eq!(latency_of(&json).percentiles.count, 2000);
    assert!(out
        .stdout
        .contains("Latency per operation (ns, 2000 timed)"));
    assert_nothing_left();
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn printed_percentiles_are_monotone_and_the_json_reproduces_them() {
    let _lock = probe_lock();
    let (dir, json) = temp_file("reproduce", "run.json");
    let (csv, svg) = (dir.join("run.csv"), dir.join("run.svg"));
    let out = bench_ok(&format!(
        "--latency -w1 -d2 --json {} --csv {} --plot {} trig-uprobe-nop",
        json.display(),
        csv.display(),
        svg.display()
    ));
    let printed = printed_percentiles(&out.stdout);
    // The CSV has the same figures, and the buckets that make them.
    let csv = fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = bench::report::csv::HEADER.split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect())
        .collect();
    let (kind, percentile, value) = (column("kind"), column("percentile"), column("value_ns"));
    for (name, expected) in &printed {
        let row = rows
            .iter()
            .find(|r| r[kind] == "latency" && r[percentile] == name)
            .unwrap_or_else(|| panic!("no {name} row in\n{csv}"));
        assert_eq!(row[value].parse::<f64>().unwrap(), *expected as f64);
    }
    let bucketed: u64 = rows
        .iter()
        .filter(|r| r[kind] == "latency_bucket")
        .map(|r| r[column("count")].parse::<u64>().unwrap())
        .sum();
    assert!(bucketed > 0);
    assert!(fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let names: Vec<&str> = printed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["p50", "p90", "p99", "p99.9", "p99.99", "max"]);
    for pair in printed.windows(2) {
        assert!(pair[0].1 <= pair[1].1, "{printed:?}");
    }
    let latency = latency_of(&json);
    for ((name, percentile), (printed_name, value)) in PERCENTILES.iter().zip(&printed) {
        assert_eq!(name, printed_name);
        assert_eq!(
            percentile_in(&latency.buckets, *percentile),
            *value,
            "{name}"
        );
    }
    assert_eq!(latency.buckets.last().unwrap()[0], printed[5].1, "max");
    // The mean is the histogram's: each bucket's values are within 0.1 %
    // (or 1 ns) of its highest, which the buckets keep.
    let (sum, count) = latency
        .buckets
        .iter()
        .fold((0.0, 0), |(sum, n), &[v, c]| (sum + (v * c) as f64, n + c));
    let mean = latency.percentiles.mean;
    assert!(
        (sum / count as f64 - mean).abs() <= mean * 0.002 + 1.0,
        "mean {mean} of buckets averaging {}",
        sum / count as f64
    );
    // A median at most twice the mean (Markov: half the operations take at
    // least the median, so the mean is at least half of it), give or take
    // the median's bucket; and a trap takes time.
    let p50 = printed[0].1 as f64;
    assert!(
        p50 > 0.0 && p50 <= 2.0 * mean * 1.002 + 1.0,
        "p50 {p50}, mean {mean}"
    );
    // The measured ticks only: their hits, give or take the bursts that
    // straddle the ticks (a burst lasts about a millisecond, at most two,
    // and a run's measured ticks have two ends).
    let file = ResultFile::load(&json).unwrap();
    let hits: u64 = file.runs[0]
        .samples()
        .iter()
        .filter(|s| !s.warmup)
        .filter_map(|s| s.value(0))
        .sum();
    let timed = latency.percentiles.count;
    let tick_ms = u64::from(file.options.test_tick_ms.unwrap_or(1000));
    let per_tick = hits / latency.seconds.len().max(1) as u64;
    let straddled = 2 * 2 * per_tick / tick_ms + 4 * 64;
    assert!(
        timed.abs_diff(hits) <= straddled,
        "{timed} timed, {hits} hits"
    );
    assert_eq!(bucketed, timed);
    assert_eq!(latency.seconds.len(), 2);
    assert_eq!(latency.seconds[0].iteration, 1);
    // The rate is the run's: a producer's time per hit at the summary's
    // rate.
    let rate = latency.rate_ns.unwrap();
    let run = &file.runs[0];
    let per_producer = run.figure("hits").unwrap() / run.producers as f64;
    assert!(
        (rate - 1e9 / per_producer).abs() <= rate * 1e-6,
        "{rate} ns vs {per_producer} hits/s a producer"
    );
    // The mean and the rate agree within the timing's own overhead: a
    // timed operation is part of a producer's time per hit, which also
    // reads the clock and records.
    assert!(
        mean <= rate * 1.05 && mean >= rate * 0.5,
        "{mean} vs {rate}"
    );
    // So the median is at most about twice the time per hit.
    assert!(
        p50 <= 2.0 * rate * 1.05 * 1.002 + 1.0,
        "p50 {p50}, {rate} ns a hit"
    );
    // The last line is still the one scripts cut.
    assert_last_line(&out.stdout, "Summary: hits");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_give_each_percentile_its_spread() {
    let _lock = probe_lock();
    let (dir, json, out) =
        bench_ok_json("--latency --runs 3 -w0 -d1 --json {json} trig-syscall-count");
    assert_has(
        &out.stdout,
        "Latency per hit over 3 runs (ns, mean \u{b1} sd between runs): p50 ",
    );
    let file = ResultFile::load(&json).unwrap();
    let over = file.run_stats[0].latency.as_ref().unwrap();
    let per_run: u64 = file
        .runs
        .iter()
        .map(|r| r.latency.as_ref().unwrap().percentiles.count)
        .sum();
    assert_eq!(over.merged.count, per_run);
    let p50 = &over.spread[0];
    assert_eq!((p50.figure.as_str(), p50.stats.runs), ("p50", 3));
    assert_last_line(&out.stdout, "Summary: hits");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn benchmarks_whose_operation_is_not_one_hit_refuse_with_the_reason() {
    for (bench, why) in [
        (
            "trig-kernel-count",
            "fires the trigger --trig-batch-iters times",
        ),
        (
            "breakpoint-thread",
            "creates and joins a batch of --threads threads",
        ),
        ("rb-custom", "emits a batch of records"),
    ] {
        let consumers = if bench.starts_with("rb-") {
            "-c1"
        } else {
            "-c0"
        };
        let out = run(&["--latency", "-d1", consumers, bench]);
        assert_one_clear_line(&out, 2, &format!("--latency does not apply to {bench}"));
        assert_has(&out.stderr, why);
        assert!(out.stderr.contains("taken by trig-usermode-count"));
    }
}

#[test]
fn ctrl_c_keeps_the_partial_histogram() {
    let _lock = probe_lock();
    let (dir, json, child) = spawn_json("--latency -w1 -d10 --json {json} trig-uprobe-nop");
    // The second measured second, whatever the set-up took.
    let out = sigint_at(child, "Iter   2 (", 1);
    assert_eq!(out.code, 130, "{}", out.stderr);
    let stdout = &out.stdout;
    let printed = printed_percentiles(stdout);
    let file = ResultFile::load(&json).unwrap();
    assert!(file.partial);
    let latency = file.runs[0]
        .latency
        .as_ref()
        .expect("the partial histogram");
    let measured = file.runs[0].summary().cloned().unwrap().over.count();
    assert!((1..10).contains(&measured), "{measured}");
    assert_eq!(latency.seconds.len(), measured);
    assert!(latency.percentiles.count > 0);
    assert_eq!(latency.percentiles.p50, printed[0].1);
    assert_last_line(stdout, "Summary: hits");
    assert_nothing_left();
    fs::remove_dir_all(&dir).unwrap();
}
