//! The htab-mem family for real: exact op counts per use case, upstream's
//! lines, the refusals, and the map's memory figure against the kernel's own
//! accounting of the map (its fdinfo, read here from outside the process).

use std::fs;
use std::time::Duration;

use crate::common::*;

const USAGE: i32 = 2;
const UNSUPPORTED: i32 = 4;
const MIB: f64 = 1024.0 * 1024.0;

#[test]
fn every_use_case_counts_its_ops_exactly() {
    let _lock = probe_lock();
    // (use case, producers, ops per trigger): a trigger of batch_add_batch_del
    // adds and deletes, two ops, as upstream counts them.
    for (use_case, producers, per_trigger) in [
        ("overwrite", 1, 1),
        ("overwrite", 2, 1),
        ("batch_add_batch_del", 2, 2),
        ("add_del_on_diff_cpu", 2, 1),
        ("add_del_on_diff_cpu", 4, 1),
    ] {
        for prealloc in ["", "--preallocated"] {
            assert_fixed_hits(
                &format!("-q -r 400 -p {producers} htab-mem --use-case {use_case} {prealloc}"),
                400 * per_trigger,
            );
        }
    }
    assert_nothing_left();
}

#[test]
fn bad_values_are_refused_in_one_sentence() {
    for (line, needle) in [
        (
            "htab-mem --value-size 4097 -r 1",
            "--value-size must be between 1 and 4096",
        ),
        (
            "htab-mem --value-size 0 -r 1",
            "--value-size must be between 1 and 4096",
        ),
        (
            "htab-mem --use-case overwrit -r 1",
            "is not one of htab-mem's use cases",
        ),
        (
            "htab-mem --use-case add_del_on_diff_cpu -p 3 -r 2",
            "needs an even number of producers",
        ),
    ] {
        assert_one_clear_line(&bench(line), USAGE, needle);
    }
}

#[test]
fn rhtab_mem_names_what_the_kernel_lacks() {
    let out = bench("-r 1 rhtab-mem");
    assert_one_clear_line(&out, UNSUPPORTED, "resizable hash map");
}

/// The Summary as upstream prints it, its fields where
/// run_bench_htab_mem.sh's sed takes them.
#[test]
fn the_lines_are_upstreams() {
    let out = bench_ok("-w0 -d1 -a -p 2 htab-mem --use-case batch_add_batch_del");
    assert_has(
        &out.stdout,
        "trigger: tracepoint syscalls:sys_enter_getpgid (upstream's)",
    );
    assert_starts(line_starting(&out.stdout, "Iter "), "Iter   0 (");
    assert_has(line_starting(&out.stdout, "Iter "), "): per-prod-op ");
    let summary = line_starting(&out.stdout, "Summary:");
    assert_last_line(&out.stdout, "Summary: per-prod-op ");
    for piece in ["k/s, memory usage ", "MiB, peak memory usage ", "MiB"] {
        assert_has(summary, piece);
    }
    let peak = summary.rsplit("peak memory usage").next().unwrap_or("");
    let peak: f64 = peak.trim().trim_end_matches("MiB").parse().unwrap();
    assert!(peak > 0.0, "{summary}");
}

/// The bytes the kernel accounts to the process's BPF hash map of 4096-byte
/// values: `memlock` of its fdinfo, read from outside while the run runs.
fn kernel_accounted(pid: u32) -> Option<u64> {
    for entry in fs::read_dir(format!("/proc/{pid}/fdinfo")).ok()?.flatten() {
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        if field("map_type:").as_deref() == Some("1")
            && field("value_size:").as_deref() == Some("4096")
        {
            return field("memlock:")?.parse().ok();
        }
    }
    None
}

/// A preallocated map holds all its elements from the start: the figure is
/// constant, the kernel's `memlock` of the map (read here from outside)
/// within 5 %, and about the size of its elements and buckets (max(8192, 64
/// per CPU) entries, one spare per CPU, 48 bytes of element header, the
/// 4-byte key rounded to 8, 16-byte buckets), again within 5 %.
#[test]
fn the_memory_figure_is_the_kernels_accounting() {
    let _lock = probe_lock();
    let dir = tempdir("htab-mem-memory");
    let json = dir.join("run.json");
    let mut child = spawn_line(&format!(
        "-w0 -d2 -a --json {} htab-mem --preallocated --value-size 4096",
        json.display()
    ));
    let seen = read_until(&mut child, "Iter ", 1, false);
    let accounted = kernel_accounted(child.id()).expect("the map's fdinfo while it runs");
    let out = finish_child(child, Duration::from_secs(30), seen);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = line_starting(&out.stdout, "Summary:");
    let mean: f64 = summary
        .split("memory usage")
        .nth(1)
        .and_then(|s| s.split('\u{b1}').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no memory in {summary}"));
    let kernel_mib = accounted as f64 / MIB;
    assert!(
        (mean - kernel_mib).abs() <= 0.05 * kernel_mib,
        "bench says {mean} MiB, the kernel's fdinfo {kernel_mib} MiB"
    );
    // SAFETY: sysconf only reads.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64;
    let entries = (64.0 * cpus).max(8192.0);
    let estimate = ((entries + cpus) * (48.0 + 8.0 + 4096.0) + entries * 16.0) / MIB;
    assert!(
        (mean - estimate).abs() <= 0.05 * estimate,
        "bench says {mean} MiB, the elements and buckets are {estimate} MiB"
    );
    // The result file says that its second channel is the memory, a gauge
    // in bytes, and every second's reading is the kernel's.
    let result: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let memory = &result["channels"][1];
    assert_eq!(
        (&memory["name"], &memory["unit"], &memory["kind"]),
        (&"memory".into(), &"bytes".into(), &"gauge".into()),
        "{result}"
    );
    let figure = &result["figures"][1];
    assert_eq!(
        (&figure["unit"], &figure["better"]),
        (&"MiB".into(), &"lower".into())
    );
    let samples = result["runs"][0]["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "{result}");
    for sample in samples {
        let bytes = sample["values"][1].as_f64().unwrap();
        assert!(
            (bytes - accounted as f64).abs() <= 0.05 * accounted as f64,
            "a second's memory {bytes}, the kernel's fdinfo {accounted} bytes"
        );
    }
    let mib = result["runs"][0]["figures"]["memory"]["value"]
        .as_f64()
        .unwrap();
    assert!((mib - kernel_mib).abs() <= 0.05 * kernel_mib, "{mib} MiB");
    assert_nothing_left();
}
