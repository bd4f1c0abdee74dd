//! The bloom filter family (bloom-lookup, bloom-update, bloom-false-positive,
//! hashmap-without-bloom, hashmap-with-bloom) for real: exact counts per
//! trigger, upstream's lines (the false hits' percentage among them), the
//! false-positive rate as a figure of runs, the trigger each run says it
//! took, and the refusals.

use crate::common::*;

const USAGE: i32 = 2;

/// The hash map lookups one trigger makes, as upstream's.
const LOOKUPS_PER_TRIGGER: u64 = 1024;

/// A trigger of the bloom bodies walks every value of the array once: one
/// hit per value, whatever the filter's shape, on one producer or two.
#[test]
fn a_walk_counts_every_value() {
    let _lock = probe_lock();
    for name in ["bloom-lookup", "bloom-update"] {
        for (calls, producers, options) in [
            (7, 1, "--nr_entries 13"),
            (
                20,
                2,
                "--nr_entries 1000 --nr_hash_funcs 15 --value_size 256",
            ),
        ] {
            let out = bench(&format!("-q -r {calls} -p {producers} {options} {name}"));
            let entries: u64 = options.split_whitespace().nth(1).unwrap().parse().unwrap();
            assert_eq!(
                fixed_counts(&out),
                (calls * entries, 0),
                "{name} {options}: {}",
                out.stdout
            );
        }
    }
    assert_nothing_left();
}

/// A trigger of the hash map body makes 1024 lookups, each a hit or a drop;
/// random 8-byte keys are (all but surely) absent, so without the filter
/// every one is a drop, and with it every drop is a false positive, which
/// the false-positive benchmark counts twice in its total, as upstream does.
#[test]
fn hashmap_lookups_are_counted_1024_per_trigger() {
    let _lock = probe_lock();
    let calls = 11;
    let lookups = calls * LOOKUPS_PER_TRIGGER;
    for name in [
        "hashmap-without-bloom",
        "hashmap-with-bloom",
        "bloom-false-positive",
    ] {
        let out = bench(&format!("-q -r {calls} -p 2 --nr_entries 100 {name}"));
        let (hits, drops) = fixed_counts(&out);
        assert_eq!(hits + drops, lookups, "{name}: {}", out.stdout);
        if name == "hashmap-without-bloom" {
            assert_eq!(drops, lookups, "{}", out.stdout);
        } else {
            // 100 values in a filter sized for 100: the filter rules most
            // random keys out.
            assert!(hits > drops, "{name}: {}", out.stdout);
        }
        if name == "bloom-false-positive" {
            let line = format!(
                " {drops} false hits of {} total operations. Percentage = ",
                hits + 2 * drops
            );
            assert_has(&out.stdout, &line);
        }
    }
    assert_nothing_left();
}

/// With 2-byte values and 65536 entries the hash map holds every key: every
/// lookup is a hit.
#[test]
fn a_full_hash_map_finds_every_key() {
    let _lock = probe_lock();
    let out = bench("-q -r 5 --value_size 2 --nr_entries 65536 hashmap-without-bloom");
    assert_eq!(fixed_counts(&out), (5 * LOOKUPS_PER_TRIGGER, 0));
}

/// Upstream's false_hits lines, per second and in the Summary (which
/// run_common.sh's summarize_percentage cuts after "Percentage ="); the rate
/// is a figure of runs, lower is better; the trigger is said.
#[test]
fn the_false_positive_rate_is_upstreams_line_and_a_figure() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 --runs 2 --nr_hash_funcs 1 bloom-false-positive");
    let header = line_starting(&out.stdout, "trigger: ");
    assert!(
        header.contains("(fallback: upstream's fentry on getpgid is refused here: ")
            || header.ends_with("(upstream's)"),
        "{header}"
    );
    let tick = line_starting(&out.stdout, "Iter   0 (");
    assert!(
        tick.contains(" false hits of ") && tick.contains(" total operations. Percentage = "),
        "{tick}"
    );
    assert!(tick.ends_with(" %"), "{tick}");
    assert_has(&out.stdout, "runs: 2, false-positive ");
    let last = upstreams_part(out.stdout.lines().last().unwrap());
    assert!(last.starts_with("Summary: "), "{last}");
    let percent = last
        .split_once("Percentage =  ")
        .and_then(|(_, rest)| rest.strip_suffix(" %"))
        .and_then(|p| p.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no percentage in {last:?}"));
    assert!((0.0..100.0).contains(&percent), "{last}");
    assert_nothing_left();
}

/// A sweep's table prints the false-positive percentage as a percentage,
/// with no per-producer column: it is no rate.
#[test]
fn a_sweep_of_the_false_positive_rate_tables_percentages() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 --sweep nr_hash_funcs=1,3 bloom-false-positive");
    let title = "Sweep of nr_hash_funcs for bloom-false-positive:";
    let table: Vec<&str> = out.stdout.lines().skip_while(|l| *l != title).collect();
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert!(!table[1].contains("per producer"), "{}", table[1]);
    for row in &table[2..] {
        assert!(row.contains(" %") && !row.contains("/s"), "{row}");
    }
    assert_nothing_left();
}

#[test]
fn out_of_range_options_are_refused_with_the_reason() {
    for (line, expected) in table(
        "
        --nr_hash_funcs 0 bloom-lookup | --nr_hash_funcs must be between 1 and 15 for bloom-lookup
        --nr_hash_funcs 16 bloom-update | --nr_hash_funcs must be between 1 and 15 for bloom-update
        --value_size 1 hashmap-with-bloom | --value_size must be between 2 and 256 for hashmap-with-bloom, got 1
        --value_size 257 bloom-lookup | --value_size must be between 2 and 256
        --nr_entries 0 bloom-lookup | --nr_entries must be between 1 and 4294967295 for bloom-lookup
        --value_size 2 --nr_entries 65537 hashmap-without-bloom | not enough unique values for hashmap-without-bloom
        --value_size 3 --nr_entries 16777217 bloom-lookup | is more than the 16777216 distinct values
        --nr_loops 5 bloom-lookup | --nr_loops is not an option of bloom-lookup
        -c 1 bloom-false-positive | bloom-false-positive has no consumers
        --latency bloom-lookup | --latency does not apply to bloom-lookup
        ",
    ) {
        let out = bench(line);
        assert_one_clear_line(&out, USAGE, expected);
    }
}
