//! The hash map family (bpf-hashmap-full-update, bpf-hashmap-lookup and
//! their rhashmap pair) for real: exact counts of updates and lookups, the
//! kernel runner's per-CPU lines, the figures timed inside BPF, and the
//! refusals (bad values, a kernel without the resizable hash map).

use crate::common::*;

const USAGE: i32 = 2;

/// Updates per trigger of the full map, as upstream's.
const UPDATES_PER_TRIGGER: u64 = 10_000;

fn is_full_update_line(line: &str) -> bool {
    let Some((cpu, rest)) = line.split_once(":hash_map_full_perf ") else {
        return false;
    };
    let rate = rest.strip_suffix(" events per sec").unwrap_or("");
    cpu.parse::<u32>().is_ok() && rate.parse::<u64>().is_ok_and(|r| r > 0)
}

/// `cpuNN: lookup X.XXXM ± Y.YYYM events/sec (approximated from N samples of ~Mms)`.
fn lookup_line_samples(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("cpu")?;
    let (cpu, rest) = rest.split_once(": lookup ")?;
    let (mean, rest) = rest.split_once("M \u{b1} ")?;
    let (spread, rest) = rest.split_once("M events/sec (approximated from ")?;
    let (samples, rest) = rest.split_once(" samples of ~")?;
    let ms = rest.strip_suffix("ms)")?;
    (cpu.len() == 2
        && cpu.parse::<u32>().is_ok()
        && mean.parse::<f64>().is_ok_and(|m| m > 0.0)
        && spread.parse::<f64>().is_ok()
        && ms.parse::<u64>().is_ok())
    .then(|| samples.parse().ok())?
}

/// None of this family's programs (their names cut to 15 bytes by the
/// kernel) is loaded after its runs; other families' tests may have theirs
/// loaded at the same moment.
fn assert_none_of_ours_left() {
    let ours: Vec<String> = loaded_programs()
        .into_iter()
        .filter(|p| {
            [
                "count_full_upd",
                "count_lookup",
                "drive_full_upd",
                "drive_lookup",
            ]
            .iter()
            .any(|prefix| p.starts_with(prefix))
        })
        .collect();
    assert!(ours.is_empty(), "left loaded: {ours:?}");
}

#[test]
fn full_updates_count_every_update_and_print_upstreams_lines() {
    let _lock = probe_lock();
    for (calls, producers) in [(1, 1), (7, 2)] {
        let out = assert_fixed_hits(
            &format!("-q -r {calls} -p {producers} bpf-hashmap-full-update"),
            calls * UPDATES_PER_TRIGGER,
        );
        let lines: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.contains(":hash_map_full_perf "))
            .collect();
        assert!(!lines.is_empty(), "{}", out.stdout);
        assert!(lines.iter().all(|l| is_full_update_line(l)), "{lines:?}");
    }
    assert_none_of_ours_left();
}

#[test]
fn lookups_count_every_lookup_with_every_option() {
    let _lock = probe_lock();
    // (options, triggers, lookups per trigger: nr_loops / nr_entries loops
    // of nr_entries lookups). One producer: the key looked up is one for
    // every CPU, as upstream's, so that two producers' loops change each
    // other's key mid-lookup, and a loop that misses ends early.
    for (options, calls, per_trigger) in [
        ("--nr_loops 1000 --nr_entries 10", 3, 1000),
        ("--nr_loops 1009 --nr_entries 10", 4, 1000),
        ("--nr_loops 7 --nr_entries 7 --max_entries 7", 5, 7),
        ("--nr_loops 600 --nr_entries 300 --key_size 1024", 2, 600),
        (
            "--nr_loops 100 --nr_entries 50 --key_size 3 --map_flags 1",
            2,
            100,
        ),
        ("--nr_loops 100 --nr_entries 50 --map_flags 0x1", 2, 100),
    ] {
        let line = format!("-q -r {calls} {options} bpf-hashmap-lookup");
        let out = bench(&line);
        assert_eq!(out.code, 0, "bench {line}: {}", out.stderr);
        assert_eq!(fixed_hits(&out.stdout), calls * per_trigger, "{line}");
        let samples: u64 = out.stdout.lines().filter_map(lookup_line_samples).sum();
        // Every trigger is one sample, on the CPU it ran on (32 kept per CPU).
        assert_eq!(samples, calls, "{line}: {}", out.stdout);
    }
    assert_none_of_ours_left();
}

/// The resizable pair runs where the kernel has BPF_MAP_TYPE_RHASH, and
/// says what it lacks elsewhere.
#[test]
fn rhashmaps_run_or_name_the_map_type_the_kernel_lacks() {
    let _lock = probe_lock();
    let probe = bench_ok("--probe bpf-rhashmap-full-update bpf-rhashmap-lookup");
    for (name, line, hits) in [
        (
            "bpf-rhashmap-full-update",
            "-q -r 3 bpf-rhashmap-full-update",
            3 * UPDATES_PER_TRIGGER,
        ),
        (
            "bpf-rhashmap-lookup",
            "-q -r 3 --nr_loops 100 --nr_entries 10 bpf-rhashmap-lookup",
            300,
        ),
    ] {
        let verdict = line_starting(&probe.stdout, name);
        if verdict.contains("unsupported:") {
            assert_has(
                verdict,
                "no resizable hash map (BPF_MAP_TYPE_RHASH is not among its map types",
            );
            let out = bench(line);
            assert_ne!(out.code, 0);
            assert_has(&out.stderr, "BPF_MAP_TYPE_RHASH");
            assert!(!out.stderr.contains("libbpf:"), "{}", out.stderr);
        } else {
            assert_fixed_hits(line, hits);
        }
    }
    assert_none_of_ours_left();
}

/// The times inside BPF are figures: kept in the result file, and with
/// `--runs` each gets its interval.
#[test]
fn the_times_in_bpf_are_figures() {
    let _lock = probe_lock();
    let (_dir, json, out) = bench_ok_json(
        "-w0 -d1 --json {json} --nr_loops 100000 --nr_entries 100 bpf-hashmap-lookup",
    );
    let last = out.stdout.lines().last().unwrap();
    assert!(last.starts_with("Summary: hits "), "{}", out.stdout);
    assert!(
        out.stdout.lines().any(|l| lookup_line_samples(l).is_some()),
        "{}",
        out.stdout
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let figures = &result["runs"][0]["figures"];
    let lookups = figures["lookup"]["value"].as_f64().unwrap();
    let ns = figures["ns-per-lookup"]["value"].as_f64().unwrap();
    assert!(lookups > 0.0 && ns > 0.0, "{figures}");
    // Each CPU's lookups are values of their own, one a CPU.
    let finals = result["runs"][0]["finals"].as_array().unwrap();
    assert!(
        finals
            .iter()
            .any(|f| f["channel"] == "cpu lookups" && f["cpu"].is_u64()),
        "{finals:?}"
    );
    let out = bench_ok("-q -w0 -d1 --runs 2 --nr_loops 100000 --nr_entries 100 bpf-hashmap-lookup");
    assert_has(&out.stdout, "runs: 2, ns-per-lookup ");
    assert_has(&out.stdout, "runs: 2, lookup ");
}

#[test]
fn bad_values_are_refused_with_the_reason() {
    for (line, expected) in table(
        "
        --nr_entries 1001 bpf-hashmap-lookup | --nr_entries 1001 is more than --max_entries 1000
        --max_entries 10 bpf-rhashmap-lookup | --nr_entries 500 is more than --max_entries 10
        --nr_loops 499 bpf-hashmap-lookup | --nr_loops 499 is less than --nr_entries 500
        --key_size 0 bpf-hashmap-lookup | --key_size must be between 1 and 1024
        --key_size 1025 bpf-hashmap-lookup | --key_size must be between 1 and 1024
        --nr_loops 8388609 bpf-hashmap-lookup | --nr_loops must be between 1 and 8388608
        --max_entries 0 bpf-hashmap-lookup | --max_entries must be between 1 and 4294967295
        --map_flags 4294967296 bpf-hashmap-lookup | --map_flags must be between 0 and 4294967295
        --key_size 8 bpf-hashmap-full-update | --key_size is not an option of bpf-hashmap-full-update
        -c 1 bpf-hashmap-full-update | bpf-hashmap-full-update has no consumers
        ",
    ) {
        let out = bench(line);
        assert_one_clear_line(&out, USAGE, expected);
    }
}
