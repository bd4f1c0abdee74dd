//! The ring buffer family, for real: records emitted by BPF on the bench
//! process's own getpgid() calls, drained by consumer threads, counted exactly.
//! Run as root.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const VARIANTS: [&str; 4] = ["rb-libbpf", "rb-custom", "pb-libbpf", "pb-custom"];

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
    // only its accounting is checked. Woken only once the buffer is full
    // (the largest --rb-sample-rate it holds: 255 records of 16 bytes,
    // 170 samples of 24), the consumer cannot keep pace with a batch of
    // 500, so some must be dropped.
    for (bench, size, pages, rate) in [
        ("rb-libbpf", "--ringbuf-sz", "4096", "255"),
        ("rb-custom", "--ringbuf-sz", "4096", "255"),
        ("pb-libbpf", "--perfbuf-sz", "1", "170"),
        ("pb-custom", "--perfbuf-sz", "1", "170"),
    ] {
        check_accounting(bench, 1, 100, 500, &[size, pages]);
        let extra = [size, pages, "--rb-sampled", "--rb-sample-rate", rate];
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
        assert_has(summary, "drops");
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

#[test]
fn a_sample_rate_is_refused_alone_and_beyond_what_the_buffer_holds() {
    // Taken before any bench starts: a run holding the lock may count the
    // bench processes there are.
    let _lock = probe_lock();
    // Without --rb-sampled the rate does nothing: refused, as --profile-freq
    // without --profile is; in a sweep too.
    for args in [
        "-c1 --rb-sample-rate 10 rb-custom",
        "-c1 --sweep rb-sample-rate=1,2 pb-libbpf",
    ] {
        let out = bench(args);
        assert_one_clear_line(
            &out,
            2,
            "--rb-sample-rate takes effect only with --rb-sampled",
        );
    }
    // A wake-up after more records than the buffer holds never comes: the
    // default 512 KiB ring holds 32767 records of 16 bytes, 128 pages of
    // perf buffer 21845 samples of 24.
    for (bench, rate, most) in [
        ("rb-custom", "32768", "32767"),
        ("pb-libbpf", "21846", "21845"),
    ] {
        let out = run(&["-c1", "--rb-sampled", "--rb-sample-rate", rate, bench]);
        assert_one_clear_line(
            &out,
            2,
            &format!("so it would never wake: give a rate of at most {most}"),
        );
    }
    // The largest rate that fits is taken, and wakes the consumer.
    check_accounting(
        "rb-custom",
        1,
        2000,
        50,
        &["--rb-sampled", "--rb-sample-rate", "32767"],
    );
}

/// Our programs and maps that are still in the kernel, waiting up to ten
/// seconds for the RCU grace period that frees closed ones.
fn leftovers() -> Vec<String> {
    // The kernel keeps 15 bytes of a name: count_rb_produc, count_pb_produc.
    const PROGS: [&str; 2] = ["count_rb_", "count_pb_"];
    const MAPS: [&str; 3] = ["bench_ring", "rings", "perfbuf"];
    let mut left = Vec::new();
    for _ in 0..100 {
        left = libbpf_rs::query::ProgInfoIter::default()
            .map(|p| p.name.to_string_lossy().into_owned())
            .filter(|name| PROGS.iter().any(|prefix| name.starts_with(prefix)))
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

/// The processes of process group `pgid`: a run started as a group of its
/// own, and anything it forked, but no other bench run on this machine
/// (other tests' and other users').
fn processes_in_group(pgid: u32) -> Vec<i32> {
    pids()
        .filter(|pid| {
            // pid (comm) state ppid pgrp ...: the comm may hold blanks.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let fields = stat.rsplit_once(')')?.1;
                    fields.split_whitespace().nth(2)?.parse::<u32>().ok()
                })
                == Some(pgid)
        })
        .collect()
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
        // A wake-up only once a large buffer is nearly full lets the
        // consumers sleep in epoll_wait for long stretches: draining costs
        // less a sample than producing, and a large buffer makes the cost
        // of each wake-up small. (A 4 KiB ring woke them every 14 us on a
        // machine whose getpgid takes 55 ns: they never slept at once.)
        let (size_value, rate) = if size == "--ringbuf-sz" {
            ("16777216", "500000")
        } else {
            ("64", "4000")
        };
        // A process group of its own: what it leaves is found by it.
        let child = Command::new(bench_bin())
            .args([
                "-w1",
                "-d60",
                "-c2",
                "--rb-sampled",
                "--rb-sample-rate",
                rate,
                size,
                size_value,
                bench,
            ])
            .process_group(0)
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
            std::thread::sleep(Duration::from_millis(10));
        }
        send_signal(&child, libc::SIGINT);
        let out = finish_child(child, Duration::from_secs(10), String::new());
        assert_eq!(out.code, 130, "{bench}: {}", out.stdout);
        assert_eq!(processes_in_group(pid), Vec::<i32>::new(), "{bench}");
        assert_eq!(leftovers(), Vec::<String>::new(), "{bench}");
    }
}
