//! The syscall and hardware-breakpoint benchmarks, for real.

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::mpsc;

use crate::common::*;
use bench::benches::breakpoint::Breakpoints;
use bench::perf_event;
use bench::results::ResultFile;
use libbpf_rs::libbpf_sys;

/// The ids of tracepoints (`syscalls/sys_enter_getppid`), from tracefs,
/// which need not be mounted: it is, in a mount namespace of its own that
/// ends with the shell.
fn tracepoint_ids(events: &[&str]) -> Vec<u64> {
    let out = Command::new("unshare")
        .args([
            "--mount",
            "sh",
            "-c",
            "mount -t tracefs nodev /sys/kernel/tracing && \
             for e in \"$@\"; do cat /sys/kernel/tracing/events/$e/id || exit; done",
            "sh",
        ])
        .args(events)
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tracepoint ids of {events:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(|l| l.trim().parse().unwrap()).collect()
}

/// Counts tracepoint hits the kernel's way (perf counters, no BPF) in the
/// calling thread and every task it creates from now on: a bench run
/// started from this thread, its threads and the processes it forks.
struct KernelCounts(Vec<OwnedFd>);

impl KernelCounts {
    fn start(events: &[&str]) -> KernelCounts {
        let fds = tracepoint_ids(events)
            .into_iter()
            .map(|id| {
                let mut attr = perf_event::attr(libbpf_sys::PERF_TYPE_TRACEPOINT, id);
                attr.set_inherit(1);
                perf_event::open(&attr, perf_event::Target::CallingThread)
                    .expect("a tracepoint counter (run as root)")
            })
            .collect();
        KernelCounts(fds)
    }

    /// The counts so far, in the order of the events: complete once the
    /// tasks created have exited (an exiting task adds its count to its
    /// parent's).
    fn read(&self) -> Vec<u64> {
        self.0
            .iter()
            .map(|fd| {
                let mut value = 0u64;
                // SAFETY: reading 8 bytes into a u64 from a perf event fd we own.
                let n = unsafe { libc::read(fd.as_raw_fd(), (&mut value as *mut u64).cast(), 8) };
                assert_eq!(n, 8, "{}", std::io::Error::last_os_error());
                value
            })
            .collect()
    }
}

/// Runs bench with `line` and counts `events` in it and everything it
/// starts (the run's own tasks, and its start from this thread, included).
fn counted(line: &str, events: &[&str]) -> (Output, Vec<u64>) {
    let counts = KernelCounts::start(events);
    let out = bench(line);
    (out, counts.read())
}

/// What each of `events` counts per operation, seen from outside: a run of
/// `line` with `n` operations and one with `2n`, whose counts must differ
/// by `n` times the event's count per operation (whatever the run does
/// besides is the same in both), and the first count at least `n` times it.
/// Returns both runs' output.
fn per_operation(line: &str, n: u64, events: &[(&str, u64)]) -> [Output; 2] {
    let names: Vec<&str> = events.iter().map(|e| e.0).collect();
    let (once, first) = counted(&line.replace("{n}", &n.to_string()), &names);
    let (twice, second) = counted(&line.replace("{n}", &(2 * n).to_string()), &names);
    for (out, counts) in [(&once, &first), (&twice, &second)] {
        assert_eq!(out.code, 0, "{line}: {}", out.stderr);
        assert_eq!(counts.len(), events.len());
    }
    for (i, (event, per_op)) in events.iter().enumerate() {
        assert_eq!(
            second[i] - first[i],
            n * per_op,
            "{line}: {event} per operation, {n} operations more ({} then {})",
            first[i],
            second[i]
        );
        assert!(
            first[i] >= n * per_op,
            "{line}: {} {event} for {n} operations",
            first[i]
        );
    }
    [once, twice]
}

const GETPPID: &str = "syscalls/sys_enter_getppid";
const GETPGID: &str = "syscalls/sys_enter_getpgid";
const IOCTL: &str = "syscalls/sys_enter_ioctl";
/// A new process or thread (every clone).
const FORK: &str = "sched/sched_process_fork";
/// A successful execve.
const EXEC: &str = "sched/sched_process_exec";

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

/// Each run makes the calls it says it made: the kernel counts them (the
/// system call's tracepoint; a fork and an exec by the scheduler's), one
/// per operation.
#[test]
fn syscall_benchmarks_run_the_calls_asked_and_print_perfs_lines() {
    for (bench, perf_name, call, n, events) in [
        (
            "syscall-basic",
            "basic",
            "getppid()",
            100_000,
            &[(GETPPID, 1), (GETPGID, 0)][..],
        ),
        (
            "syscall-getpgid",
            "getpgid",
            "getpgid()",
            100_000,
            &[(GETPGID, 1), (GETPPID, 0)][..],
        ),
        (
            "syscall-fork",
            "fork",
            "fork()",
            200,
            &[(FORK, 1), (EXEC, 0)][..],
        ),
        (
            "syscall-execve",
            "execve",
            "execve()",
            50,
            &[(FORK, 1), (EXEC, 1)][..],
        ),
    ] {
        let runs = per_operation(&format!("-r {{n}} {bench}"), n, events);
        for (out, n) in runs.iter().zip([n, 2 * n]) {
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
}

#[test]
fn timed_syscall_runs_report_ops_and_usecs_per_op() {
    let out = bench_ok("-q -w0 -d1 -p2 syscall-basic");
    let summary = out.stdout.lines().last().unwrap();
    assert_starts(summary, "Summary: ops ");
    // The rate's unit follows its size (K/s on a loaded machine, M/s on a
    // quiet one), as the kernel runner's does.
    assert!(
        (summary.contains("M/s (") || summary.contains("K/s ("))
            && summary.contains("/prod), usecs/op "),
        "{summary}"
    );
    assert!(!summary.contains("usecs/op/cpu"), "{summary}");
}

#[test]
fn breakpoint_thread_creates_and_joins_the_threads_asked() {
    // 3 batches of 4 threads: 12 threads created (the kernel counts each
    // clone); 6 batches, 12 more.
    let [out, _] = per_operation("-r {n} -b 4 -t 4 breakpoint-thread", 3, &[(FORK, 4)]);
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

    // --parallelism is perf's name for the producers: -r counts the
    // batches of all of them.
    let [out, _] = per_operation(
        "-r {n} --parallelism 2 -t 2 breakpoint-thread",
        4,
        &[(FORK, 2)],
    );
    assert_has(&out.stdout, "with 1 breakpoints and 2 parallelism");
    let per_op = figure(&out.stdout, "usecs/op");
    let per_cpu = figure(&out.stdout, "usecs/op/cpu");
    assert!((per_cpu - 2.0 * per_op).abs() < 1e-3, "{}", out.stdout);
}

/// A timed run counts threads, created in batches of 8, each one a thread
/// the kernel saw created: at least as many new tasks as the samples'
/// hits (more: the run's own threads, and batches outside the measured
/// second), and the hits whole batches.
#[test]
fn a_timed_breakpoint_thread_run_counts_threads() {
    let (dir, json) = temp_file("timed-threads", "run.json");
    let (out, counts) = counted(
        &format!(
            "-q -w0 -d1 -b 2 -t 8 --json {} breakpoint-thread",
            json.display()
        ),
        &[FORK],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = out.stdout.lines().last().unwrap();
    assert_has(summary, "usecs/op/cpu");
    let iter = out.stdout.lines().next().unwrap();
    assert_starts(iter, "Iter   0");
    let result = ResultFile::load(&json).unwrap();
    let threads: u64 = result.runs[0]
        .samples()
        .iter()
        .filter_map(|s| s.value(0))
        .sum();
    assert!(threads > 0, "no thread in a second: {}", out.stdout);
    assert_eq!(threads % 8, 0, "{threads} threads are not batches of 8");
    assert!(
        counts[0] >= threads,
        "the kernel saw {} tasks created for {threads} threads counted",
        counts[0]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A toggle is two ioctls (disable, enable) the kernel counts; the passive
/// and active threads are created once, whatever the toggles.
#[test]
fn breakpoint_enable_toggles_with_passive_and_active_threads() {
    let mut threads = Vec::new();
    for (passive, active) in [(0, 0), (4, 1)] {
        let line = format!("-r {{n}} --passive {passive} --active {active} breakpoint-enable");
        let runs = per_operation(&line, 500, &[(IOCTL, 2), (FORK, 0)]);
        for (out, n) in runs.iter().zip([500, 1000]) {
            let lines: Vec<&str> = out.stdout.lines().collect();
            assert_eq!(lines[0], "# Running 'breakpoint/enable' benchmark:");
            assert_eq!(
                lines[1],
                format!(
                    "# Enabled/disabled breakpoint {n} time with {passive} passive and {active} active threads"
                )
            );
            assert!(figure(&out.stdout, "usecs/op") > 0.0);
        }
        let (out, counts) = counted(&line.replace("{n}", "500"), &[FORK]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        threads.push(counts[0]);
    }
    assert_eq!(
        threads[1] - threads[0],
        4 + 1,
        "the passive and active threads"
    );
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
