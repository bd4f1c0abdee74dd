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
