//! Bad input through the built binary: one sentence, a documented exit code.

use crate::common::*;

const USAGE: i32 = 2;
const PERMISSION: i32 = 3;

#[test]
fn bad_command_lines_get_one_sentence_and_exit_2() {
    let cases = table(
        "
        trig-uprobe-nopp | unknown benchmark 'trig-uprobe-nopp'; did you mean trig-uprobe-nop
        uprobe-push | did you mean trig-uprobe-push
        no-such-thing | unknown benchmark 'no-such-thing'; `bench --list` shows them all
        | no benchmark named
        trig-syscall-count extra | unknown benchmark 'extra'
        -d 0 trig-syscall-count | '--duration <SEC>': must be between 1 and 86400
        -d -5 trig-syscall-count | expected a whole number, got '-5'
        -w x trig-syscall-count | '--warmup <SEC>': expected a whole number, got 'x'
        -p 0 trig-syscall-count | '--producers <N>': must be between 1 and 1024
        -p -1 trig-syscall-count | expected a whole number, got '-1'
        -r 0 trig-syscall-count | '--repeat <N>'
        --prod-affinity 0- trig-syscall-count | not a CPU number
        --prod-affinity 3-1 trig-syscall-count | runs backwards
        --cons-affinity= trig-syscall-count | the CPU list is empty
        --prod-affinity 4095 trig-syscall-count | names CPU 4095, which is not online
        --prod-affinity 0 -p 2 trig-syscall-count | lists 1 CPU(s) but 2 producers
        -c 1 trig-uprobe-nop | trig-uprobe-nop has no consumers
        ",
    );
    for (args, needle) in cases {
        let out = bench(args);
        assert_one_clear_line(&out, USAGE, needle);
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed on stdout: {}",
            out.stdout
        );
    }
}

/// An attach benchmark's run is one attach cycle on one thread: the options
/// of producer threads, of counted work and of timed seconds would do
/// nothing there, and are refused by name, as -s, -c and --latency are.
#[test]
fn attach_cycles_refuse_the_options_they_would_ignore() {
    let cases = table(
        "
        -p 3 attach-uprobe-multi | -p/--producers does not apply to attach-uprobe-multi: it runs attach cycles on one thread; it is taken by every benchmark but attach-uprobe,
        --parallelism 2 attach-uprobe-multi | --parallelism does not apply to attach-uprobe-multi
        -r 5 attach-uprobe-multi | -r/--repeat does not apply to attach-uprobe-multi: each of its runs is one attach cycle, not a count of operations
        --profile=PROFILE_DIR attach-uprobe-multi | --profile does not apply to attach-uprobe-multi: it samples measured seconds, and an attach cycle has none
        --profile attach-uprobe-multi | --profile does not apply to attach-uprobe-multi
        -a attach-uprobe-multi | -a/--affinity does not apply to attach-uprobe-multi: it runs attach cycles on one thread, which no option pins
        --prod-affinity 0 attach-uprobe-multi | --prod-affinity does not apply to attach-uprobe-multi
        -w5 -d30 attach-uprobe-multi | -w/--warmup does not apply to attach-uprobe-multi: each of its runs is one attach cycle, not a time
        -d 30 attach-uprobe-multi | -d/--duration does not apply to attach-uprobe-multi
        --sweep producers=1,3 attach-usdt | --sweep producers does not apply to attach-usdt: it runs attach cycles on one thread
        -c 1 attach-usdt | attach-usdt has no consumers (it runs attach cycles on one thread)
        -s attach-uprobe | -s/--stacktrace (--body stack) does not apply to attach-uprobe
        --latency attach-kprobe | --latency does not apply to attach-kprobe
        ",
    );
    let dir = tempdir("attach-profile");
    for (line, needle) in cases {
        let line = line.replace("PROFILE_DIR", &dir.display().to_string());
        let out = bench(&format!("--attach-cnt 1 {line}"));
        assert_one_clear_line(&out, USAGE, needle);
        assert!(out.stdout.is_empty(), "{line}: {}", out.stdout);
    }
    let written = std::fs::read_dir(&dir).map_or(0, |d| d.count());
    assert_eq!(written, 0, "--profile wrote into {}", dir.display());
    std::fs::remove_dir_all(&dir).ok();
}

/// attach-churn is no attach cycle: its producers hit a probe while -c N
/// threads attach and detach, so the options of threads and of counted work
/// are its own.
#[test]
fn attach_churn_takes_producers_and_a_count() {
    let out = bench_ok("-q -p 2 -c 1 -r 1000 attach-churn");
    assert_eq!(fixed_counts(&out), (1000, 0), "{}", out.stdout);
}

/// An option that does not apply at all is named first, before the
/// benchmark's own checks ask for more of another one.
#[test]
fn the_real_reason_is_said_at_once() {
    for line in ["--latency rb-custom", "-c 1 --latency rb-custom"] {
        let out = bench(line);
        assert_one_clear_line(&out, USAGE, "--latency does not apply to rb-custom:");
    }
    // A range of one value is said as one value.
    let out = bench("--attach-cnt 2 attach-fentry");
    assert_one_clear_line(
        &out,
        USAGE,
        "--attach-cnt can only be 1 for attach-fentry (an fentry program has one function), got 2",
    );
    assert!(!out.stderr.contains("between 1 and 1"), "{}", out.stderr);
}

#[test]
fn list_names_every_benchmark_with_a_description() {
    let out = run(&["--list"]);
    assert_eq!(out.code, 0);
    for name in [
        "trig-usermode-count",
        "trig-syscall-count",
        "trig-uprobe-nop5",
        "trig-uretprobe-multi-ret",
    ] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name));
        let line = line.unwrap_or_else(|| panic!("{name} missing from --list"));
        assert!(
            line.split_whitespace().count() > 2,
            "{name} has no description"
        );
    }
}

#[test]
fn without_privileges_a_probe_benchmark_says_what_it_lacks() {
    let _lock = probe_lock();
    // No capability: each family says what it does and what that needs.
    let out = run_as_nobody("", &["-q", "-r", "10", "trig-uprobe-nop"]);
    assert_one_clear_line(
        &out,
        PERMISSION,
        "trig-uprobe-nop attaches a BPF program to a uprobe perf event, which needs \
         CAP_SYS_ADMIN; this process lacks CAP_SYS_ADMIN: run it as root (sudo)",
    );
    let out = run_as_nobody("", &["-q", "-r", "10", "trig-kernel-count"]);
    assert_one_clear_line(
        &out,
        PERMISSION,
        "trig-kernel-count loads and runs a BPF program, which needs CAP_BPF and \
         CAP_PERFMON; this process lacks CAP_BPF and CAP_PERFMON",
    );
    // CAP_BPF and CAP_PERFMON load and link, but a uprobe perf event needs
    // CAP_SYS_ADMIN on this kernel (found by trying: EACCES otherwise).
    let out = run_as_nobody("+bpf,+perfmon", &["-q", "-r", "10", "trig-uprobe-nop"]);
    assert_one_clear_line(&out, PERMISSION, "this process lacks CAP_SYS_ADMIN");
    let out = run_as_nobody("+bpf", &["-q", "-r", "10", "trig-rawtp"]);
    assert_one_clear_line(&out, PERMISSION, "this process lacks CAP_PERFMON");
    // Every call counted: trig-kernel-count's call is a test run of 100
    // triggers (--trig-batch-iters' default).
    for (bench, hits) in [("trig-uprobe-multi-nop", 10), ("trig-kernel-count", 1000)] {
        let out = run_as_nobody("+bpf,+perfmon", &["-q", "-r", "10", bench]);
        assert_eq!(fixed_counts(&out), (hits, 0), "{bench}: {}", out.stdout);
    }
    let out = run_as_nobody("+sys_admin", &["-q", "-r", "10", "trig-uprobe-nop"]);
    assert_eq!(fixed_counts(&out), (10, 0), "{}", out.stdout);

    // A benchmark that loads nothing runs unprivileged, and counts.
    let out = run_as_nobody("", &["-q", "-r", "10", "trig-syscall-count"]);
    assert_eq!(fixed_counts(&out), (10, 0), "{}", out.stdout);
}

#[test]
fn help_and_version_exit_0() {
    let out = run(&["--help"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("--prod-affinity"));
    assert!(out.stdout.contains("Exit codes"));
    let out = run(&["--version"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("bench "));
}
