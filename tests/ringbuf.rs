//! The ring buffer family, for real: records emitted by BPF on the bench
//! process's own getpgid() calls, drained by consumer threads, counted exactly.
//! Run as root.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const VARIANTS: [&str; 4] = ["rb-libbpf", "rb-custom", "pb-libbpf", "pb-custom"];

/// The hits and drops of a `--repeat` run's report.
fn fixed_counts(out: &Output) -> (u64, u64) {
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let drops = out
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(" drops"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no drops line in:\n{}", out.stdout));
    (fixed_hits(&out.stdout), drops)
}

/// Runs `calls` producer calls of `batch` records each and checks that every
/// record was either consumed or dropped, none lost and none counted twice.
fn check_accounting(bench: &str, consumers: u32, calls: u64, batch: u64, extra: &[&str]) -> u64 {
    let repeat = calls.to_string();
    let batch_arg = batch.to_string();
    let consumers = format!("-c{consumers}");
    let mut args = vec![
        "--repeat",
        &repeat,
        &consumers,
        "--rb-batch-cnt",
        &batch_arg,
    ];
    args.extend_from_slice(extra);
    args.push(bench);
    let out = run(&args);
    let (hits, drops) = fixed_counts(&out);
    assert!(
        out.stdout
            .contains(&format!("# Executed {calls} calls of {bench}")),
        "{}",
        out.stdout
    );
    assert_eq!(
        hits + drops,
        calls * batch,
        "{bench} {args:?}: {hits} consumed + {drops} dropped"
    );
    drops
}

#[test]
fn every_record_is_consumed_or_dropped_exactly() {
    let _lock = probe_lock();
    for bench in VARIANTS {
        for consumers in [1, 2] {
            let drops = check_accounting(bench, consumers, 200, 50, &[]);
            // A buffer this large never fills with 50 records at a time.
            assert_eq!(drops, 0, "{bench} -c{consumers}");
            // Sampled wake-ups leave records in the buffer at the end: only
            // the final drain brings them in.
            check_accounting(
                bench,
                consumers,
                200,
                50,
                &["--rb-sampled", "--rb-sample-rate", "40"],
            );
        }
    }
    for consumers in [1, 2] {
        check_accounting("rb-custom", consumers, 200, 50, &["--rb-use-output"]);
        check_accounting("rb-libbpf", consumers, 200, 50, &["--rb-use-output"]);
    }
}

#[test]
fn a_buffer_too_small_drops_and_counts_every_drop() {
    let _lock = probe_lock();
    // 500 records of 16 bytes in one call cannot fit in a 4 KiB ring, nor
    // 500 perf samples in one page per CPU, unless a consumer drains the
    // buffer while the batch is written: woken at every record, a consumer
    // on the other CPU can keep pace, so the plain run may drop nothing and
    // only its accounting is checked. With no wake-up during the run
    // (2^20 records' worth never fits), the first batch fills the buffer
    // and the rest must be dropped.
    let never_wake = ["--rb-sampled", "--rb-sample-rate", "1048576"];
    for (bench, size, pages) in [
        ("rb-libbpf", "--ringbuf-sz", "4096"),
        ("rb-custom", "--ringbuf-sz", "4096"),
        ("pb-libbpf", "--perfbuf-sz", "1"),
        ("pb-custom", "--perfbuf-sz", "1"),
    ] {
        check_accounting(bench, 1, 100, 500, &[size, pages]);
        let mut extra = vec![size, pages];
        extra.extend_from_slice(&never_wake);
        let drops = check_accounting(bench, 1, 100, 500, &extra);
        assert!(drops > 0, "{bench}");
    }
}

#[test]
fn a_timed_run_reports_hits_and_drops_per_second() {
    let _lock = probe_lock();
    for extra in [
        &[][..],
        &["--rb-b2b"][..],
        &["--rb-b2b", "--rb-sampled"][..],
    ] {
        let mut args = vec!["-w1", "-d1", "-c1"];
        args.extend_from_slice(extra);
        args.push("rb-libbpf");
        let out = run(&args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let summary = out.stdout.lines().last().unwrap_or_default();
        assert!(summary.starts_with("Summary: hits"), "{}", out.stdout);
        assert!(summary.contains("drops"), "{summary}");
        let hits: f64 = summary
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{summary}"));
        assert!(hits > 0.0, "{args:?}: {summary}");
    }
}

#[test]
fn consumers_are_refused_where_there_are_none_and_required_here() {
    let _lock = probe_lock();
    let out = run(&["-c1", "trig-syscall-count"]);
    assert_one_clear_line(&out, 2, "rb-libbpf, rb-custom, pb-libbpf, pb-custom");
    let out = run(&["rb-libbpf"]);
    assert_one_clear_line(&out, 2, "give -c 1");
    let out = run(&["-c1", "-p2", "--rb-b2b", "pb-custom"]);
    assert_one_clear_line(&out, 2, "one producer only");
    let out = run(&["-c1", "--repeat", "10", "--rb-b2b", "rb-custom"]);
    assert_one_clear_line(&out, 2, "does not combine with --repeat");
    let out = run(&["-c1", "--ringbuf-sz", "12288", "rb-custom"]);
    assert_one_clear_line(&out, 2, "power of two");
    let out = run(&["-c1", "--rb-use-output", "pb-libbpf"]);
    assert_one_clear_line(&out, 2, "--rb-use-output is not an option of pb-libbpf");
}

/// Our programs and maps that are still in the kernel, waiting up to ten
/// seconds for the RCU grace period that frees closed ones.
fn leftovers() -> Vec<String> {
    const PROGS: [&str; 2] = ["rb_produce", "pb_produce"];
    const MAPS: [&str; 3] = ["bench_ring", "rings", "perfbuf"];
    let mut left = Vec::new();
    for _ in 0..100 {
        left = libbpf_rs::query::ProgInfoIter::default()
            .map(|p| p.name.to_string_lossy().into_owned())
            .filter(|name| PROGS.contains(&name.as_str()))
            .chain(
                libbpf_rs::query::MapInfoIter::default()
                    .map(|m| m.name.to_string_lossy().into_owned())
                    .filter(|name| MAPS.contains(&name.as_str())),
            )
            .collect();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    left
}

/// How many of `pid`'s consumer threads are sleeping in epoll_wait now.
fn consumers_in_epoll(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|task| {
            let dir = task.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            let wchan = std::fs::read_to_string(dir.join("wchan")).ok()?;
            (comm.starts_with("consumer-")
                && (wchan.contains("epoll") || wchan.starts_with("ep_poll")))
            .then_some(())
        })
        .count()
}

#[test]
fn ctrl_c_while_consumers_block_leaves_nothing_behind() {
    let _lock = probe_lock();
    assert_eq!(leftovers(), Vec::<String>::new(), "left from before");
    for (bench, size) in [
        ("rb-libbpf", "--ringbuf-sz"),
        ("rb-custom", "--ringbuf-sz"),
        ("pb-libbpf", "--perfbuf-sz"),
        ("pb-custom", "--perfbuf-sz"),
    ] {
        // A wake-up every 2^20 records never comes: the buffer is full (and
        // the rest dropped) long before, so the consumers soon sleep in
        // epoll_wait for good.
        let size_value = if size == "--ringbuf-sz" { "4096" } else { "1" };
        let mut child = Command::new(bench_bin())
            .args([
                "-w1",
                "-d60",
                "-c2",
                "--rb-sampled",
                "--rb-sample-rate",
                "1048576",
                size,
                size_value,
                bench,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signal once both consumers are seen asleep in epoll_wait at once.
        let pid = child.id();
        let start = Instant::now();
        while consumers_in_epoll(pid) < 2 {
            // Generous: on a loaded 2-CPU machine a consumer thread can wait
            // seconds for a CPU before it gets to block.
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{bench}: the consumers never blocked"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: signalling a child we spawned and have not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{bench} did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        assert_eq!(status.code(), Some(130), "{bench}: {stdout}");
        assert!(processes_of(&bench_bin()).is_empty(), "{bench}");
        assert_eq!(leftovers(), Vec::<String>::new(), "{bench}");
    }
}
