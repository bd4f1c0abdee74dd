//! Every way out of bench is clean: signals at each phase, errors, panics,
//! SIGKILL; nothing stays loaded or running. Also late ticks and odd paths.
//! Every test holds the probe lock: they time signals against a run, and a
//! run hogging the CPUs next to them would shift that timing.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use bench::benches;
use bench::results::ResultFile;
use bench::runner::{self, affinity, ProducerCtx, Workload};

/// Waits for the child (at most 20 s) and collects what it printed.
fn finish(child: Child) -> Output {
    finish_child(child, Duration::from_secs(20), String::new())
}

/// The number after `field` in a /proc status text (hex for the signal masks).
fn proc_field(status: &str, field: &str) -> u64 {
    let value = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"))
        .trim();
    match field.ends_with("Pnd:") {
        true => u64::from_str_radix(value, 16).unwrap(),
        false => value.parse().unwrap(),
    }
}

/// Waits (at most 10 s, looking every 200 us) until the child's
/// /proc/PID/status satisfies `ready`.
fn wait_for(child: &Child, ready: impl Fn(&str) -> bool) {
    let start = std::time::Instant::now();
    loop {
        let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        if ready(&status) {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{status}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn sigint_during_warmup_reports_nothing_measured_and_detaches() {
    let _lock = probe_lock();
    let (dir, json, child) = spawn_json("-w5 -d5 --json {json} trig-uprobe-nop");
    let out = sigint_at(child, "started.", 1);
    assert_one_clear_line(
        &out,
        130,
        "interrupted by SIGINT during warm-up: nothing was measured",
    );
    assert!(!out.stdout.contains("Summary"), "{}", out.stdout);
    let file = ResultFile::load(&json).unwrap();
    assert!(file.partial && file.runs[0].partial);
    assert!(file.runs[0].summary().is_none());
    assert!(file.runs[0].samples().iter().all(|s| s.warmup));
    assert_nothing_left();
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigint_during_measurement_prints_a_partial_summary() {
    let _lock = probe_lock();
    let (dir, json, child) = spawn_json("-w1 -d10 --json {json} trig-uretprobe-nop");
    // The second measured second, whatever the set-up took.
    let out = sigint_at(child, "Iter   2 (", 1);
    assert_one_clear_line(&out, 130, "the summary above is partial");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines.last().unwrap().starts_with("Summary: hits"),
        "{}",
        out.stdout
    );
    // About two iterations were measured by then; the marker, the message
    // and the file agree on how many.
    let file = ResultFile::load(&json).unwrap();
    assert!(file.partial);
    let measured = file.runs[0].summary().cloned().unwrap().over.count();
    assert!((1..10).contains(&measured), "{measured}");
    let marker = format!("# partial: interrupted after {measured} of 10 measured iterations");
    assert_eq!(lines[lines.len() - 2], marker, "{}", out.stdout);
    assert!(out
        .stderr
        .contains(&format!("after {measured} of 10 measured iterations")));
    assert_nothing_left();
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_exits_143_and_a_second_signal_exits_at_once() {
    let _lock = probe_lock();
    let mut child = spawn_bin(&bench_bin(), &["-w1", "-d10", "trig-usdt-nop"]);
    let seen = read_until(&mut child, "Iter   1 (", 1, false);
    send_signal(&child, libc::SIGTERM);
    let out = finish_child(child, Duration::from_secs(20), seen);
    assert_one_clear_line(
        &out,
        143,
        "measured iterations: the summary above is partial",
    );

    // Four producers' batches of 1024 threads under 4 breakpoints take a
    // good 100 ms on two CPUs and the first Ctrl-C lets them finish; the
    // second must not wait for them. Rounds enough that the run cannot end
    // first; the first Ctrl-C once a batch is in flight, the second once the
    // first was taken (two pending SIGINTs would merge into one).
    let child = spawn_line("-r 1000 -p 4 -b 4 -t 1024 breakpoint-thread");
    wait_for(&child, |status| proc_field(status, "Threads:") > 100);
    send_signal(&child, libc::SIGINT);
    wait_for(&child, |status| proc_field(status, "ShdPnd:") & 0x2 == 0);
    send_signal(&child, libc::SIGINT);
    let out = finish(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(
        out.stdout.is_empty(),
        "the second Ctrl-C waited for the report: {}",
        out.stdout
    );
    assert_nothing_left();
}

#[test]
fn an_interrupted_sweep_keeps_the_points_it_measured() {
    let _lock = probe_lock();
    let (dir, json, child) =
        spawn_json("-q -w0 -d3 --sweep producers=1,2 --json {json} trig-syscall-count");
    // Point 2's first measured second, whatever the set-ups took.
    let out = sigint_at(child, "Iter   0 (", 2);
    assert_one_clear_line(
        &out,
        130,
        "measured iterations (sweep point 2 of 2): the summary above is partial",
    );
    assert_has(&out.stdout, "Sweep of producers");
    let file = ResultFile::load(&json).unwrap();
    assert!(file.partial);
    assert_eq!(file.runs.len(), 2);
    assert!(!file.runs[0].partial && file.runs[1].partial);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_interrupted_fork_benchmark_leaves_no_child() {
    // The signal comes at a time in the run's seconds.
    real_tick();
    let _lock = probe_lock();
    let (dir, copy) = bin_copy("fork", "bench");
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let child = spawn_bin(&copy, &["-w0", "-d10", "-p2", "syscall-fork"]);
        std::thread::sleep(Duration::from_millis(1200));
        send_signal(&child, sig);
        let out = finish(child);
        if sig == libc::SIGINT {
            assert_eq!(out.code, 130, "{}", out.stderr);
        }
        // Give an orphan a moment (up to 10 s) to exit and be reaped.
        let start = std::time::Instant::now();
        while !processes_of(&copy).is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(processes_of(&copy), Vec::<i32>::new(), "after signal {sig}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigkill_leaves_nothing_loaded_or_pinned() {
    let _lock = probe_lock();
    let mut child = spawn_bin(&bench_bin(), &["-w1", "-d10", "trig-uprobe-multi-push"]);
    read_until(&mut child, "started.", 1, false);
    // Something to leave behind: the run is attached when killed.
    let loaded = loaded_programs();
    assert!(!loaded.is_empty(), "nothing loaded once started");
    send_signal(&child, libc::SIGKILL);
    finish(child);
    assert_nothing_left();
    // bench pins nothing, so bpffs (where mounted) holds nothing of it.
    let pinned: Vec<_> = fs::read_dir("/sys/fs/bpf")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("bench"))
        .collect();
    assert!(pinned.is_empty(), "{pinned:?}");
}

#[test]
fn error_paths_leave_nothing_loaded() {
    let _lock = probe_lock();
    // Loaded, then refused at attach (kprobes), or refused at load (fentry),
    // or run normally: every one leaves nothing behind.
    for args in [
        "-q -r 10 trig-kprobe",
        "-q -r 10 trig-fentry",
        "-q -r 10 trig-kretprobe-multi",
        "-q -r 10 trig-tp",
    ] {
        let out = bench(args);
        assert!(out.code == 0 || out.code == 4, "{args:?}: {}", out.stderr);
        assert_eq!(leftover_programs(), Vec::<String>::new(), "{args:?}");
    }
}

/// A producer that panics mid-run, around a real uprobe workload set up in
/// this test process (whose binary holds the probe targets too).
#[test]
fn a_panicking_producer_still_detaches_everything() {
    let _lock = probe_lock();
    struct PanicsMidRun {
        _uprobe: bench::runner::SetUp,
    }
    impl Workload for PanicsMidRun {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> bench::error::Result<()> {
            let mut calls = 0;
            ctx.run(|| {
                calls += 1;
                assert!(calls < 1000, "a producer bug");
            });
            Ok(())
        }
    }
    bench::bpf::init_logging(false);
    let uprobe = benches::find("trig-uprobe-nop").unwrap();
    let config = uprobe.default_config().unwrap();
    let workload = PanicsMidRun {
        _uprobe: uprobe.setup(&config).unwrap(),
    };
    let placement = affinity::place(&affinity::Affinity::None, 1, 0, &[0]).unwrap();
    let kinds = [bench::channels::Kind::Counter];
    let err = runner::run_fixed(&workload, &placement, 100_000, &kinds, &mut []).unwrap_err();
    assert_eq!(err.to_string(), "producer 0 panicked: a producer bug");
    assert!(!loaded_programs().is_empty(), "the set-up loaded nothing");
    drop(workload);
    assert_nothing_left();
}

#[test]
fn a_late_tick_is_normalised_and_flagged_noisy() {
    // A tick late by the seconds this test stops the run for.
    real_tick();
    let _lock = probe_lock();
    let mut child = spawn_bin(
        &bench_bin(),
        &["-q", "-w0", "-d4", "--json", "-", "trig-syscall-count"],
    );
    // Freeze the whole process from the first tick (its line on stderr, with
    // the JSON on stdout) across the second: that one fires ~300 ms late.
    let seen = read_until(&mut child, "Iter   0 (", 1, true);
    send_signal(&child, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1300));
    send_signal(&child, libc::SIGCONT);
    let mut out = finish(child);
    out.stderr.insert_str(0, &seen);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // With the JSON on stdout, the text report goes to stderr.
    let summary = out.stderr.lines().last().unwrap();
    assert_has(summary, "noisy: a tick was");

    let file: ResultFile = serde_json::from_str(&out.stdout).unwrap();
    let samples = &file.runs[0].samples();
    assert_eq!(samples.len(), 4, "{samples:?}");
    let (at, late) = samples
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| s.late_ns)
        .unwrap();
    assert!(at > 0, "the first tick was before the freeze: {samples:?}");
    assert!(late.late_ns > bench::stats::NOISY_LATE_NS, "{samples:?}");
    let summary = file.runs[0].summary().cloned().unwrap();
    assert!(
        summary.noisy && summary.max_late_ns == late.late_ns,
        "{summary:?}"
    );
    // The late iteration reports its real interval, not a full second's
    // worth: a second plus its lateness, less the previous tick's.
    let expected = 1_000_000_000 + late.late_ns - samples[at - 1].late_ns;
    assert!(
        (late.elapsed_ns as i64 - expected).abs() < 1_000_000,
        "{samples:?}"
    );
    // The next tick keeps to the schedule, so its interval is that much
    // shorter.
    if let Some(next) = samples.get(at + 1) {
        assert!(
            (next.elapsed_ns as i64) < 1_000_000_000 - late.late_ns / 2,
            "{samples:?}"
        );
    }
    assert_nothing_left();
}

#[test]
fn a_path_with_spaces_a_symlink_and_a_replaced_binary_still_resolve() {
    let _lock = probe_lock();
    let (dir, copy) = bin_copy("paths", "my bench");
    let link = dir.join("link to bench");
    symlink(&copy, &link).unwrap();
    for bin in [&copy, &link] {
        let out = run_bin(bin, &["-q", "-r", "1000", "trig-uprobe-push"]);
        assert_eq!(out.code, 0, "{}: {}", bin.display(), out.stderr);
        assert_eq!(fixed_hits(&out.stdout), 1000);
    }

    // Replace the file while it runs (as a rebuild does): the sweep's second
    // set-up still probes the running binary through /proc/self/exe.
    let child = spawn_bin(
        &copy,
        &[
            "-q",
            "-w0",
            "-d1",
            "--sweep",
            "producers=1,2",
            "trig-uprobe-nop",
        ],
    );
    std::thread::sleep(Duration::from_millis(500));
    fs::remove_file(&copy).unwrap();
    fs::write(&copy, b"#!/bin/sh\nexit 99\n").unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table = lines_from(&out.stdout, "Sweep of");
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert_nothing_left();
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn more_threads_than_cpus_get_a_warning() {
    let _lock = probe_lock();
    let online = affinity::online_cpus().unwrap().len();
    let producers = (online + 1).to_string();
    let out = bench_ok(&format!("-q -r 100 -p {producers} trig-syscall-count"));
    assert!(
        out.stderr.starts_with(&format!(
            "warning: {producers} threads on {online} online CPUs"
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn the_scripts_stop_on_ctrl_c() {
    let _lock = probe_lock();
    use std::os::unix::process::CommandExt;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run_bench_uprobes.sh");
    let child = Command::new("bash")
        .arg(&script)
        .args(["usermode-count", "syscall-count"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    // Ctrl-C reaches the whole foreground process group.
    // SAFETY: signalling the process group we just made.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    let out = finish(child);
    // The shell either dies of the SIGINT or exits 130 after the benchmark did.
    assert!(
        out.code == 130 || out.signal == Some(libc::SIGINT),
        "{out:?}"
    );
    assert!(
        !out.stdout.contains("syscall-count"),
        "went on: {}",
        out.stdout
    );
}
