//! The local-storage family (local-storage-cache-seq-get, -int-get,
//! -hashmap-control) for real: exact hits and important hits per trigger,
//! upstream's lines, the trigger said, and the refusals.

use crate::common::*;

const USAGE: i32 = 2;

/// bpf_loop()'s rounds per trigger, as upstream's.
const ROUNDS: u64 = 10_000;

/// The hits and important hits one trigger makes with `nr_maps` maps: one
/// lookup per round of map `round % nr_maps`, and, interleaved, one more of
/// map 0 after every map whose index is a multiple of 3.
fn per_trigger(nr_maps: u64, interleaved: bool) -> (u64, u64) {
    let (mut hits, mut important) = (0, 0);
    for round in 0..ROUNDS {
        let map = round % nr_maps;
        hits += 1;
        important += u64::from(map == 0);
        if interleaved && map.is_multiple_of(3) {
            hits += 1;
            important += 1;
        }
    }
    (hits, important)
}

/// `N important_hits` of a fixed run's block.
fn fixed_important(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(" important_hits"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no important_hits line in:\n{stdout}"))
}

#[test]
fn every_lookup_and_every_lookup_of_map_0_counts() {
    let _lock = probe_lock();
    for (bench, nr_maps, calls, interleaved) in [
        ("local-storage-cache-seq-get", 7, 3, false),
        ("local-storage-cache-seq-get", 1000, 1, false),
        ("local-storage-cache-int-get", 17, 2, true),
        ("local-storage-cache-int-get", 1, 1, true),
    ] {
        let out = bench_ok(&format!("-q -r {calls} --nr_maps {nr_maps} {bench}"));
        let (hits, important) = per_trigger(nr_maps, interleaved);
        assert_eq!(fixed_hits(&out.stdout), calls * hits, "{bench} {nr_maps}");
        assert_eq!(
            fixed_important(&out.stdout),
            calls * important,
            "{bench} {nr_maps}"
        );
        assert_has(
            &out.stdout,
            &format!(
                "# Executed {calls} calls of {bench} ({} operations)",
                calls * ROUNDS
            ),
        );
    }
    assert_nothing_left();
}

/// The control fills a 4194304-key hash map (a few seconds): one run, one
/// map, whose every lookup is of map 0.
#[test]
fn the_hashmap_control_counts_every_lookup_as_important() {
    let _lock = probe_lock();
    let out = bench_ok(
        "-q -r 2 --nr_maps 1 --hashmap_nr_keys_used 10 local-storage-cache-hashmap-control",
    );
    assert_eq!(fixed_hits(&out.stdout), 2 * ROUNDS);
    assert_eq!(fixed_important(&out.stdout), 2 * ROUNDS);
    assert_nothing_left();
}

/// Upstream's lines, which run_common.sh's local_storage cuts, and the
/// trigger in the header.
#[test]
fn timed_runs_print_upstreams_local_storage_lines() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 --nr_maps 3 local-storage-cache-int-get");
    let header = line_starting(&out.stdout, "trigger: ");
    assert!(
        header.ends_with("(upstream's)")
            || header.contains("(fallback: upstream's fentry on getpgid is refused here: "),
        "{header}"
    );
    let iter = line_starting(&out.stdout, "Iter   0 (");
    assert!(
        iter.contains("us): hits ") && iter.contains("M/s important_hits "),
        "{iter}"
    );
    let last = out.stdout.lines().last().unwrap();
    assert!(last.starts_with("Summary: hits throughput "), "{last}");
    assert!(
        last.contains(" M ops/s, hits latency ")
            && last.contains(" ns/op, important_hits throughput "),
        "{last}"
    );
    let upstreams = upstreams_part(last);
    assert!(upstreams.ends_with(" M ops/s"), "{last}");
}

#[test]
fn bad_values_and_more_producers_are_refused() {
    for (line, expected) in table(
        "
        --nr_maps 0 local-storage-cache-seq-get | --nr_maps must be between 1 and 1000 for local-storage-cache-seq-get
        --nr_maps 1001 local-storage-cache-int-get | (the BPF program's arrays of maps hold 1000), got 1001
        --hashmap_nr_keys_used 4194305 local-storage-cache-hashmap-control | --hashmap_nr_keys_used must be between 1 and 4194304
        -p 2 local-storage-cache-seq-get | takes one producer only, as the kernel runner's, got -p 2
        -c 1 local-storage-cache-int-get | local-storage-cache-int-get has no consumers
        --latency local-storage-cache-seq-get | --latency does not apply to local-storage-cache-seq-get
        local-storage-cache-hashmap-control | with --nr_maps 1000 would fill 1000 hash maps of 4194304 keys
        ",
    ) {
        let out = bench(line);
        assert_one_clear_line(&out, USAGE, expected);
    }
}
