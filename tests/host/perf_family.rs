//! The syscall and hardware-breakpoint benchmarks, for real.

use std::sync::mpsc;

use crate::common::*;
use bench::benches::breakpoint::Breakpoints;

/// The value of a `perf bench` figure line such as ` 0.077906 usecs/op`.
fn figure(stdout: &str, unit: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_suffix(unit)
                .map(str::trim)
                .map(str::to_string)
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no '{unit}' line in:\n{stdout}"))
}

#[test]
fn syscall_benchmarks_run_the_calls_asked_and_print_perfs_lines() {
    for (bench, perf_name, call, n) in [
        ("syscall-basic", "basic", "getppid()", "100000"),
        ("syscall-getpgid", "getpgid", "getpgid()", "100000"),
        ("syscall-fork", "fork", "fork()", "200"),
        ("syscall-execve", "execve", "execve()", "50"),
    ] {
        let out = run(&["-r", n, bench]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(
            lines[0],
            format!("# Running 'syscall/{perf_name}' benchmark:")
        );
        assert_eq!(lines[1], format!("# Executed {n} {call} calls"));
        assert!(lines[2].starts_with("     Total time: "), "{}", out.stdout);
        assert!(figure(&out.stdout, "usecs/op") > 0.0);
        assert!(figure(&out.stdout, "ops/sec") > 0.0);
        assert_eq!(
            lines.len(),
            6,
            "nothing else of the runner's:\n{}",
            out.stdout
        );
    }
}

#[test]
fn timed_syscall_runs_report_ops_and_usecs_per_op() {
    let out = run(&["-q", "-w0", "-d1", "-p2", "syscall-basic"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = out.stdout.lines().last().unwrap();
    assert!(summary.starts_with("Summary: ops "), "{summary}");
    assert!(
        summary.contains("M/s") && summary.contains("usecs/op"),
        "{summary}"
    );
    assert!(!summary.contains("usecs/op/cpu"), "{summary}");
}

#[test]
fn breakpoint_thread_creates_and_joins_the_threads_asked() {
    // 3 batches of 4 threads: 12 threads created and joined.
    let out = run(&["-r", "3", "-b", "4", "-t", "4", "breakpoint-thread"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "# Running 'breakpoint/thread' benchmark:");
    assert_eq!(
        lines[1],
        "# Created/joined 3 threads with 4 breakpoints and 1 parallelism"
    );
    let per_op = figure(&out.stdout, "usecs/op");
    let per_cpu = figure(&out.stdout, "usecs/op/cpu");
    assert!(
        per_op > 0.0 && (per_cpu - per_op).abs() < 1e-6,
        "{}",
        out.stdout
    );

    // --parallelism is perf's name for the producers.
    let out = bench_ok("-r 4 --parallelism 2 -t 2 breakpoint-thread");
    assert_has(&out.stdout, "with 1 breakpoints and 2 parallelism");
    let per_op = figure(&out.stdout, "usecs/op");
    let per_cpu = figure(&out.stdout, "usecs/op/cpu");
    assert!((per_cpu - 2.0 * per_op).abs() < 1e-3, "{}", out.stdout);
}

#[test]
fn a_timed_breakpoint_thread_run_counts_threads() {
    let out = bench_ok("-q -w0 -d1 -b 2 -t 8 breakpoint-thread");
    let summary = out.stdout.lines().last().unwrap();
    assert!(summary.contains("usecs/op/cpu"), "{summary}");
    let iter = out.stdout.lines().next().unwrap();
    assert!(iter.starts_with("Iter   0"), "{iter}");
}

#[test]
fn breakpoint_enable_toggles_with_passive_and_active_threads() {
    for (passive, active) in [(0, 0), (4, 1)] {
        let out = bench_ok(&format!(
            "-r 500 --passive {passive} --active {active} breakpoint-enable"
        ));
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[0], "# Running 'breakpoint/enable' benchmark:");
        assert_eq!(
            lines[1],
            format!(
                "# Enabled/disabled breakpoint 500 time with {passive} passive and {active} active threads"
            )
        );
        assert!(figure(&out.stdout, "usecs/op") > 0.0);
    }
}

/// The breakpoints are real: a thread created after they were installed
/// inherits them, and its accesses to the watched bytes are counted.
#[test]
fn breakpoints_are_installed_and_inherited() {
    // Started before the breakpoints exist, so it does not inherit them; it
    // writes the first byte when told its address.
    let (address_tx, address_rx) = mpsc::channel::<usize>();
    let earlier = std::thread::spawn(move || {
        let first = address_rx.recv().unwrap();
        for i in 0..5u8 {
            // SAFETY: the watched bytes outlive this thread, which is joined
            // before they are dropped.
            unsafe { std::ptr::write_volatile(first as *mut u8, i) };
        }
    });

    let breakpoints = Breakpoints::install(2).expect("hardware breakpoints are available here");
    let (first, second) = (
        breakpoints.watched(0) as usize,
        breakpoints.watched(1) as usize,
    );
    assert_eq!(breakpoints.count(0).unwrap(), 0);
    std::thread::spawn(move || {
        for i in 0..3u8 {
            // SAFETY: the watched bytes outlive this thread, which is joined below.
            unsafe { std::ptr::write_volatile(first as *mut u8, i) };
        }
        // SAFETY: as above.
        let _ = unsafe { std::ptr::read_volatile(second as *const u8) };
    })
    .join()
    .unwrap();
    assert_eq!(
        breakpoints.count(0).unwrap(),
        3,
        "three writes to the first byte"
    );
    assert_eq!(
        breakpoints.count(1).unwrap(),
        1,
        "one read of the second byte"
    );
    // The breakpoints follow the installing thread and its later children,
    // not the address: the older thread's five writes add nothing.
    address_tx.send(first).unwrap();
    earlier.join().unwrap();
    assert_eq!(breakpoints.count(0).unwrap(), 3);
    // SAFETY: as above; this thread installed them, so this write counts.
    unsafe { std::ptr::write_volatile(first as *mut u8, 9) };
    assert_eq!(
        breakpoints.count(0).unwrap(),
        4,
        "the installing thread's write"
    );
}

#[test]
fn breakpoint_limits_are_refused_with_the_reason() {
    for (args, needle) in table(
        "
        -b 5 breakpoint-thread | --breakpoints must be between 0 and 4 for breakpoint-thread (an x86 CPU has 4 hardware breakpoint slots, its debug address registers), got 5
        -t 5000 breakpoint-thread | --threads must be between 1 and 1024
        -t 1024 -p 32 breakpoint-thread | 32768 threads at once; the limit is 16384
        --passive 100000 breakpoint-enable | --passive must be between 0 and 1024
        -p 2 breakpoint-enable | -p must be 1
        --parallelism 2 syscall-basic | --parallelism is not an option of syscall-basic
        -b 2 syscall-basic | --breakpoints is not an option of syscall-basic
        ",
    ) {
        let out = bench(args);
        assert_one_clear_line(&out, 2, needle);
    }
}
