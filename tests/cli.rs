//! Bad input through the built binary: one sentence, a documented exit code.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use common::*;

const USAGE: i32 = 2;
const PERMISSION: i32 = 3;

#[test]
fn bad_command_lines_get_one_sentence_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["trig-uprobe-nopp"],
            "unknown benchmark 'trig-uprobe-nopp'; did you mean trig-uprobe-nop",
        ),
        (&["uprobe-push"], "did you mean trig-uprobe-push"),
        (
            &["no-such-thing"],
            "unknown benchmark 'no-such-thing'; `bench --list` shows them all",
        ),
        (&[], "no benchmark named"),
        (
            &["trig-syscall-count", "extra"],
            "unknown benchmark 'extra'",
        ),
        (
            &["-d", "0", "trig-syscall-count"],
            "'--duration <SEC>': must be between 1 and 86400",
        ),
        (
            &["-d", "-5", "trig-syscall-count"],
            "expected a whole number, got '-5'",
        ),
        (
            &["-w", "x", "trig-syscall-count"],
            "'--warmup <SEC>': expected a whole number, got 'x'",
        ),
        (
            &["-p", "0", "trig-syscall-count"],
            "'--producers <N>': must be between 1 and 1024",
        ),
        (
            &["-p", "-1", "trig-syscall-count"],
            "expected a whole number, got '-1'",
        ),
        (&["-r", "0", "trig-syscall-count"], "'--repeat <N>'"),
        (
            &["--prod-affinity", "0-", "trig-syscall-count"],
            "not a CPU number",
        ),
        (
            &["--prod-affinity", "3-1", "trig-syscall-count"],
            "runs backwards",
        ),
        (
            &["--cons-affinity", "", "trig-syscall-count"],
            "the CPU list is empty",
        ),
        (
            &["--prod-affinity", "4095", "trig-syscall-count"],
            "names CPU 4095, which is not online",
        ),
        (
            &["--prod-affinity", "0", "-p", "2", "trig-syscall-count"],
            "lists 1 CPU(s) but 2 producers",
        ),
        (
            &["-c", "1", "trig-uprobe-nop"],
            "trig-uprobe-nop has no consumers",
        ),
        (
            &["--no-such-flag", "trig-uprobe-nop"],
            "unexpected argument '--no-such-flag'",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
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
fn without_privileges_a_probe_benchmark_says_how_to_run_it() {
    // The binary may live under a directory `nobody` cannot enter: run a copy.
    let dir = tempdir("nobody");
    let copy = dir.join("bench");
    fs::copy(bench_bin(), &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();

    let mut cmd = Command::new(&copy);
    cmd.args(["-q", "-r", "10", "trig-uprobe-nop"])
        .uid(65534)
        .gid(65534);
    let out = run_cmd(cmd);
    assert_one_clear_line(
        &out,
        PERMISSION,
        "needs root (CAP_BPF and CAP_PERFMON): run it with sudo",
    );

    // A benchmark that loads nothing runs unprivileged.
    let mut cmd = Command::new(&copy);
    cmd.args(["-q", "-r", "10", "trig-syscall-count"])
        .uid(65534)
        .gid(65534);
    let out = run_cmd(cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    fs::remove_dir_all(&dir).unwrap();
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
