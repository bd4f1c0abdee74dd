//! `--profile` for real: the sampler attached to this kernel's cpu-clock
//! events, the stacks it finds, the breakdown, the files and a clean exit.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// The stage table of a breakdown (JSON) as (stage, share %) pairs.
fn stages(breakdown: &Value) -> Vec<(String, f64)> {
    breakdown["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap().to_string(),
                s["share_pct"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn share(breakdown: &Value, stage: &str) -> f64 {
    stages(breakdown)
        .into_iter()
        .find(|(s, _)| s == stage)
        .map_or(0.0, |(_, share)| share)
}

fn largest_stage(breakdown: &Value) -> String {
    stages(breakdown)
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(s, _)| s)
        .expect("a stage")
}

/// The breakdown a run of `bench` with `opts` and `--json -` reports.
fn profiled(opts: &[&str], bench: &str) -> Value {
    let out = run(&[opts, &["--json", "-", bench]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut result: Value = serde_json::from_str(&out.stdout).unwrap();
    result["runs"][0]["profile"].take()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Asserts that `svg` is a well-formed SVG document.
fn assert_svg(path: &Path) {
    let text = fs::read_to_string(path).unwrap();
    // inferno's SVG declares its DTD.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
}

fn profiler_left() -> bool {
    libbpf_rs::query::ProgInfoIter::default().any(|p| p.name.to_string_lossy() == "profile_sample")
}

#[test]
fn a_uprobe_hit_is_broken_down_with_its_stacks_and_flame_graph() {
    let _lock = probe_lock();
    let dir = tempdir("uprobe");
    let flag = format!("--profile={}", dir.display());
    let out = bench_ok(&format!("-w1 -d3 {flag} trig-uprobe-nop"));

    // The breakdown comes before the summary, which stays the last line.
    let lines: Vec<&str> = out.stdout.lines().collect();
    let profile = position_starting(&lines, "Profile: ");
    assert!(lines.last().unwrap().starts_with("Summary: hits "));
    for needle in [
        "stage",
        "user code",
        "trap entry and exit",
        "BPF program",
        "top functions, self",
    ] {
        assert!(
            lines[profile..]
                .iter()
                .any(|l| l.trim_start().starts_with(needle)),
            "no {needle:?} line in:\n{}",
            out.stdout
        );
    }

    let folded = fs::read_to_string(dir.join("trig-uprobe-nop.folded")).unwrap();
    assert_has(&folded, "uprobe_notify_resume");
    assert!(
        folded.contains("count_uprobe"),
        "the counting program is named:\n{folded}"
    );
    assert!(
        folded.contains("bench_target_nop"),
        "the probed function is named"
    );
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').expect("stack count");
        assert!(
            stack.starts_with("producer-") || stack.starts_with("bench"),
            "{line}"
        );
        assert!(count.parse::<u64>().unwrap() > 0, "{line}");
    }
    assert_svg(&dir.join("trig-uprobe-nop.svg"));

    let breakdown = read_json(&dir.join("trig-uprobe-nop.json"));
    // Three seconds at 999 Hz: up to 3000 samples of the one producer; far
    // fewer only when the (shared) machine kept it off the CPU.
    let samples = breakdown["producer_samples"].as_u64().unwrap();
    assert!(samples > 100, "only {samples} samples: {breakdown}");
    // A hit is mostly kernel work: the trap, the lookup, the handler and the
    // program; "other kernel" is small when the table names the path.
    let kernel: f64 = [
        "trap_entry_exit",
        "probe_lookup",
        "handler_dispatch",
        "bpf_program",
    ]
    .iter()
    .map(|s| share(&breakdown, s))
    .sum();
    assert!(kernel > 50.0, "{breakdown}");
    for stage in [
        "probe_lookup",
        "handler_dispatch",
        "bpf_program",
        "user_code",
    ] {
        assert!(share(&breakdown, stage) > 0.0, "{stage}: {breakdown}");
    }
    assert!(share(&breakdown, "other_kernel") < 10.0, "{breakdown}");
    let total: f64 = stages(&breakdown).iter().map(|(_, s)| s).sum();
    assert!((total - 100.0).abs() < 0.01, "{total}");
    assert!(!profiler_left(), "the sampler is still loaded");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_in_kernel_trigger_is_mostly_its_bpf_program_and_a_loop_is_all_user_code() {
    let _lock = probe_lock();
    let breakdown = &profiled(&["-q", "-w1", "-d2", "--profile"], "trig-kernel-count");
    assert_eq!(largest_stage(breakdown), "bpf_program", "{breakdown}");
    assert!(
        breakdown["top_self"][0]["function"]
            .as_str()
            .unwrap()
            .ends_with("_drive_count"),
        "{breakdown}"
    );
    // Without DIR nothing is written, and the JSON says so.
    assert!(breakdown.get("files").is_none(), "{breakdown}");

    // Five ticks: 500 samples of its producer at 1 kHz on an idle CPU, 250
    // beside a CPU hog, five times the 50 judged enough.
    let breakdown = &profiled(&["-q", "-w0", "-d5", "--profile"], "trig-usermode-count");
    assert!(share(breakdown, "user_code") > 90.0, "{breakdown}");
    assert!(
        breakdown["producer_samples"].as_u64().unwrap() > 50,
        "{breakdown}"
    );
}

#[test]
fn sweeps_and_runs_profile_every_point_and_run_by_name() {
    let _lock = probe_lock();
    let dir = tempdir("sweep");
    let flag = format!("--profile={}", dir.display());
    let json = dir.join("result.json");
    bench_ok(&format!("-q -w0 -d1 --runs 2 --sweep producers=1,2 --profile-freq 499 {flag} --json {} trig-syscall-count", json.display()));
    for point in ["producers=1", "producers=2"] {
        for run in ["run1", "run2"] {
            for ext in ["folded", "svg", "json"] {
                let file = dir.join(format!("trig-syscall-count-{point}-{run}.{ext}"));
                assert!(file.exists(), "{} is missing", file.display());
            }
        }
    }
    let result = read_json(&json);
    // Recorded with the options, so that compare holds it against the other side.
    assert_eq!(result["options"]["profile_freq_hz"], 499);
    for run in result["runs"].as_array().unwrap() {
        let breakdown = &run["profile"];
        assert_eq!(breakdown["frequency_hz"], 499);
        assert_eq!(breakdown["files"].as_array().unwrap().len(), 3);
        // getpgid's own work is no stage of a probe: it is "other kernel",
        // with the syscall's entry and exit beside it.
        assert!(share(breakdown, "other_kernel") > 0.0, "{breakdown}");
        assert!(share(breakdown, "trap_entry_exit") > 0.0, "{breakdown}");
        assert_eq!(share(breakdown, "bpf_program"), 0.0, "{breakdown}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_writes_the_partial_profile_and_leaves_nothing_attached() {
    let _lock = probe_lock();
    let dir = tempdir("interrupt");
    let mut cmd = Command::new(bench_bin());
    cmd.args([
        "-w1",
        "-d30",
        &format!("--profile={}", dir.display()),
        "trig-uprobe-nop",
    ]);
    cmd.stdout(std::process::Stdio::piped());
    cmd.stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Past the warm-up, into the measured seconds.
    let out = sigint_at(child, "Iter   1 (", 1);
    assert_eq!(out.code, 130, "{}", out.stderr);
    let stdout = &out.stdout;
    assert_has(stdout, "Profile: ");
    let breakdown = read_json(&dir.join("trig-uprobe-nop.json"));
    assert!(breakdown["producer_samples"].as_u64().unwrap() > 0);
    assert!(breakdown["seconds"].as_f64().unwrap() < 5.0, "{breakdown}");
    assert_svg(&dir.join("trig-uprobe-nop.svg"));
    assert!(!profiler_left(), "the sampler is still loaded");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_profile_options_are_refused_in_one_sentence() {
    let file = tempdir("bad").join("a-file");
    fs::write(&file, "").unwrap();
    let flag = format!("--profile={}", file.display());
    let cases: [(&[&str], &str); 4] = [
        (
            &["--profile-freq", "99", "trig-uprobe-nop"],
            "give --profile too",
        ),
        (&["--profile", "-r", "10", "trig-uprobe-nop"], "--repeat"),
        (&[&flag, "trig-uprobe-nop"], "is not a directory"),
        (&["--profile", "/tmp", "trig-uprobe-nop"], "--profile=/tmp"),
    ];
    for (args, needle) in cases {
        let out = run(args);
        assert_one_clear_line(&out, 2, needle);
    }
}

#[test]
fn sampling_that_distorts_the_figures_is_said() {
    let _lock = probe_lock();
    let (dir, json) = temp_file("distort", "r.json");
    // The kernel lowers its sampling limit by itself when sampling
    // interrupts take too long (as this test's may): stay within it.
    let limit: u64 = fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let freq = limit.min(50_000);
    let out = bench_ok(&format!(
        "-w1 -d2 --profile --profile-freq {freq} --json {} trig-uprobe-nop",
        json.display()
    ));
    // 50 000 samples a second cost a uprobe hit several times its price
    // (1.8 µs against 0.4 here): the warm-up, not sampled, shows it.
    assert!(
        out.stdout.contains("warning: with sampling on the rate is")
            && out.stdout.contains(&format!(
                "below the warm-up's (not sampled): sampling at {freq} Hz distorts the figures"
            )),
        "{}",
        out.stdout
    );
    let result = read_json(&json);
    let breakdown = &result["runs"][0]["profile"];
    let (sampled, unsampled) = (
        breakdown["measured_rate"].as_f64().unwrap(),
        breakdown["warmup_rate"].as_f64().unwrap(),
    );
    assert!(sampled < 0.9 * unsampled, "{breakdown}");
    assert!(breakdown["missed_ticks"].is_u64(), "{breakdown}");
    fs::remove_dir_all(&dir).unwrap();
}
