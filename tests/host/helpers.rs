//! The helper family (bpf-loop, bpf-for, strncmp-*, helper-trigger-base)
//! for real: exact counts, the trigger each run says it took, upstream's ops
//! lines, the time per op as a figure in every output, and the refusals.

use std::fs;

use crate::common::*;

const USAGE: i32 = 2;

/// The calls of the helper each trigger of a loop makes, as upstream's.
const CALLS_PER_TRIGGER: u64 = 1000;

/// `# Executed N calls of BENCH (M operations) ...`: the operations.
fn fixed_ops(stdout: &str) -> u64 {
    let line = line_starting(stdout, "# Executed ");
    let ops = line.split_once('(').map_or("", |(_, rest)| rest);
    ops.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no operations in {line:?}"))
}

#[test]
fn loops_count_every_iteration() {
    let _lock = probe_lock();
    for bench in ["bpf-loop", "bpf-for"] {
        for (calls, nr_loops, producers) in [(1, 1, 1), (37, 7, 1), (20, 100, 2)] {
            let out = bench_ok(&format!(
                "-q -r {calls} -p {producers} --nr_loops {nr_loops} {bench}"
            ));
            let ops = fixed_ops(&out.stdout);
            assert_eq!(ops, calls * CALLS_PER_TRIGGER, "{bench}: {}", out.stdout);
            assert_eq!(
                fixed_hits(&out.stdout),
                ops * nr_loops,
                "{bench}: {}",
                out.stdout
            );
        }
    }
    assert_nothing_left();
}

/// Past 1000 iterations a call, a trigger makes fewer calls: at most a
/// million iterations, or one call of `--nr_loops`, so that it holds its CPU
/// in the kernel for milliseconds (4c30c63 made 1000 calls at every value:
/// 8388608 × 1000 iterations, a soft lockup; the largest values run in a
/// guest, tests/vm.rs). The values here cost that build at most 2.5e8
/// iterations a trigger, under 2 s even at its slowest, 7.4 ns each.
#[test]
fn a_trigger_makes_at_most_a_million_iterations_past_1000_a_call() {
    let _lock = probe_lock();
    for bench in ["bpf-loop", "bpf-for"] {
        for (nr_loops, calls) in [(1000, 1000), (1001, 999), (100_000, 10), (250_000, 4)] {
            let out = bench_ok(&format!("-q -r 2 --nr_loops {nr_loops} {bench}"));
            assert_eq!(
                fixed_hits(&out.stdout),
                2 * calls * nr_loops,
                "{bench} --nr_loops {nr_loops}: {}",
                out.stdout
            );
        }
    }
    assert_nothing_left();
}

/// Every comparison counts, whatever the length; on upstream's trigger (the
/// getpgid tracepoint) the calls of other processes do not.
#[test]
fn strncmp_counts_every_comparison_of_its_own() {
    let _lock = probe_lock();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Another process's getpgid calls, all through the runs.
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: getpgid only reads a process group.
                unsafe { libc::getpgid(0) };
            }
        });
        for bench in ["strncmp-no-helper", "strncmp-helper"] {
            for len in [1, 64, 4095] {
                let out = bench_ok(&format!("-q -r 20011 -p 2 --cmp-str-len {len} {bench}"));
                assert_eq!(fixed_hits(&out.stdout), 20_011, "{bench} {len}");
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

#[test]
fn the_baseline_counts_each_trigger_once() {
    let out = bench_ok("-r 501 -p 2 helper-trigger-base");
    assert_eq!(fixed_hits(&out.stdout), 501);
    assert_has(&out.stdout, "(the helper benchmarks' fallback, alone)");
}

/// The trigger a loop ran from, in the header line, `--probe` and the
/// result file; on this host (fentry refused) the fallback.
#[test]
fn the_trigger_is_said_in_header_probe_and_result() {
    let dir = tempdir("helpers-trigger");
    let json = dir.join("loop.json");
    let csv = dir.join("loop.csv");
    let out = bench_ok(&format!(
        "-w0 -d1 --json {} --csv {} bpf-loop",
        json.display(),
        csv.display()
    ));
    let header = line_starting(&out.stdout, "trigger: ");
    let fallback = header.contains("(fallback: upstream's fentry on getpgid is refused here: ");
    let (kept, verdict) = match fallback {
        true => (
            "rawtp-test-run",
            "ok (trigger: raw_tp program run by BPF_PROG_TEST_RUN",
        ),
        false => ("fentry-getpgid", "ok"),
    };
    assert!(fallback || header.ends_with("(upstream's)"), "{header}");
    let result: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let schema = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/result-schema.json"
    ));
    let schema: serde_json::Value = serde_json::from_str(&schema.unwrap()).unwrap();
    let errors = crate::common::schema::errors(&schema, &result);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let run = &result["runs"][0];
    assert_eq!(run["trigger"], kept, "{run}");
    // The time per op: one producer's time per iteration.
    let latency = run["figures"]["latency"]["value"].as_f64().unwrap();
    let hits = run["figures"]["hits"]["value"].as_f64().unwrap();
    assert!(
        (latency - 1e9 / hits).abs() < 1e-6 * latency,
        "{latency} {hits}"
    );
    let csv = fs::read_to_string(&csv).unwrap();
    let header_row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("benchmark,"))
        .unwrap()
        .split(',')
        .collect();
    let column = header_row.iter().position(|c| *c == "value").unwrap();
    let figure = csv
        .lines()
        .find(|l| l.contains(",figure,") && l.contains(",latency,"))
        .unwrap();
    let value: f64 = figure.split(',').nth(column).unwrap().parse().unwrap();
    assert!((value - latency).abs() < 1e-6 * latency, "{figure}");

    let probe = bench_ok("--probe bpf-loop bpf-for");
    for line in probe.stdout.lines() {
        assert!(
            line.split_once("  ").unwrap().1.trim().starts_with(verdict),
            "{line}"
        );
    }
}

/// The summary is upstream's ops_report_final, which run_common.sh's
/// summarize_ops cuts; the strncmp pair keeps upstream's hits lines.
#[test]
fn loops_print_upstreams_ops_lines() {
    let out = bench_ok("-w0 -d1 --nr_loops 5 bpf-for");
    assert_has(&out.stdout, "Iter   0 (");
    let last = out.stdout.lines().last().unwrap();
    assert!(last.starts_with("Summary: throughput "), "{last}");
    assert!(
        last.contains(" M ops/s (") && last.contains("M ops/prod), latency "),
        "{last}"
    );
    // Upstream's line ends with the latency; a disturbed run's note may follow.
    let upstreams = upstreams_part(last);
    assert!(upstreams.ends_with(" ns/op"), "{last}");
    let out = bench_ok("-w0 -d1 strncmp-helper");
    assert_last_line(&out.stdout, "Summary: hits ");
}

/// The time per op is a figure: `--runs` gives its interval, a sweep draws
/// it under the rate.
#[test]
fn the_time_per_op_is_a_figure_of_runs_and_sweeps() {
    let out = bench_ok("-q -w0 -d1 --runs 2 --nr_loops 3 bpf-loop");
    assert_has(&out.stdout, "runs: 2, latency ");
    let svg = tempdir("helpers-sweep").join("loops.svg");
    bench_ok(&format!(
        "-q -w0 -d1 --sweep nr_loops=1,10 --plot {} bpf-loop",
        svg.display()
    ));
    let svg = fs::read_to_string(&svg).unwrap();
    assert_has(&svg, "hits per second by nr_loops");
    assert_has(&svg, "latency ns/op by nr_loops");
}

#[test]
fn out_of_range_options_are_refused_with_the_reason() {
    for (line, expected) in table(
        "
        --nr_loops 0 bpf-loop | --nr_loops must be between 1 and 8388608 for bpf-loop (the kernel's BPF_MAX_LOOPS
        --nr_loops 8388609 bpf-for | --nr_loops must be between 1 and 8388608 for bpf-for
        --cmp-str-len 4096 strncmp-helper | (the strings are 4096 bytes, their NUL included), got 4096
        --cmp-str-len 0 strncmp-no-helper | --cmp-str-len must be between 1 and 4095
        --nr_loops 5 strncmp-helper | --nr_loops is not an option of strncmp-helper; it is taken by bpf-loop, bpf-for
        -c 1 bpf-loop | bpf-loop has no consumers
        --latency bpf-for | --latency does not apply to bpf-for
        ",
    ) {
        let out = bench(line);
        assert_one_clear_line(&out, USAGE, expected);
    }
}
