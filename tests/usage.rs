//! What a new user tries on the command line: whole clap messages, conflicts
//! named rather than options ignored, the last of a repeated option, numbers
//! past their limits, `compare` as a subcommand, `--probe BENCH...` and its
//! JSON, a full stdout, and the generated completions and man page.

mod common;

use std::fs::{self, File};
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

const USAGE: i32 = 2;

/// Asserts a usage error whose first line holds `first` and whose other
/// lines (clap's tips) hold `rest`, with no usage dump.
fn assert_usage(args: &[&str], first: &str, rest: &str) {
    let out = run(args);
    assert_eq!(out.code, USAGE, "{args:?}: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(lines[0].contains(first), "{args:?}: {:?}", out.stderr);
    assert!(
        lines[1..].join("\n").contains(rest),
        "{args:?}: {:?}",
        out.stderr
    );
    for noise in ["Usage:", "panicked", "For more information"] {
        assert!(!out.stderr.contains(noise), "{args:?}: {:?}", out.stderr);
    }
    assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
}

#[test]
fn usage_errors_keep_clap_whole_message_and_tips() {
    assert_usage(
        &["compare"],
        "the following required arguments were not provided:",
        "<OLD>",
    );
    assert_usage(
        &["compare", "a"],
        "the following required arguments were not provided:",
        "<NEW>",
    );
    for (typo, meant) in [
        ("--durration", "'--duration'"),
        ("--jsn", "'--json'"),
        ("--producer", "'--producers'"),
    ] {
        assert_usage(
            &[typo, "1", "trig-syscall-count"],
            &format!("unexpected argument '{typo}'"),
            &format!("tip: a similar argument exists: {meant}"),
        );
    }
}

#[test]
fn options_that_would_be_ignored_are_refused_by_name() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--list", "trig-uprobe-nop"],
            "'--list' cannot be used with '[BENCHMARK]...'",
        ),
        (
            &["--list", "--json", "F"],
            "'--list' cannot be used with '--json <FILE>'",
        ),
        (
            &["--probe", "-d", "3"],
            "'--probe' cannot be used with '--duration <SEC>'",
        ),
        (
            &["--probe", "--trig-batch-iters", "3"],
            "'--probe' cannot be used with '--trig-batch-iters <N>'",
        ),
        (
            &["-r", "5", "-w", "3", "-d", "7", "trig-syscall-count"],
            "--repeat runs a fixed amount of work, not for a time: -w/--warmup does not apply",
        ),
        (
            &["-r", "5", "-d", "7", "trig-syscall-count"],
            "-d/--duration does not apply",
        ),
        (
            &["--sweep", "producers=1,2", "-p", "2", "trig-syscall-count"],
            "--sweep producers sets each run's producers; drop -p/--producers",
        ),
        (
            &["--sweep", "threads=1,2", "-t", "5", "breakpoint-thread"],
            "--sweep threads sets each run's threads; drop --threads",
        ),
        (
            &["--cons-affinity", "0", "trig-uprobe-nop"],
            "trig-uprobe-nop has no consumers for --cons-affinity to pin (taken by rb-libbpf, rb-custom, pb-libbpf, pb-custom)",
        ),
        (
            &["-c", "1", "trig-uprobe-nop"],
            "(taken by rb-libbpf, rb-custom, pb-libbpf, pb-custom)",
        ),
        (
            &["-d", "3", "compare", "a", "b"],
            "--duration is an option of a run, not of `bench compare`",
        ),
        (
            &["--markdown", "trig-syscall-count"],
            "--markdown prints the table of several benchmarks: name two or more",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
        assert_one_clear_line(&out, USAGE, needle);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
}

#[test]
fn consumers_help_says_which_benchmarks_have_them() {
    let out = run(&["--help"]);
    assert_eq!(out.code, 0);
    let help = out.stdout;
    assert!(
        help.contains("Consumer threads (taken by rb-libbpf, rb-custom, pb-libbpf, pb-custom)"),
        "{help}"
    );
    assert!(!help.contains("for benchmarks that have them"), "{help}");
}

#[test]
fn the_last_of_a_repeated_option_wins() {
    let out = run(&[
        "-q",
        "-q",
        "-d",
        "3",
        "-d",
        "1",
        "-w",
        "2",
        "-w0",
        "--json",
        "-",
        "trig-syscall-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let value: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(value["options"]["duration_secs"], 1);
    assert_eq!(value["options"]["warmup_secs"], 0);
    assert_eq!(value["runs"][0]["samples"].as_array().unwrap().len(), 1);
}

#[test]
fn numbers_past_their_limits_say_the_limit() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-d", "99999999999999999999", "trig-syscall-count"],
            "'--duration <SEC>': too large: at most 86400",
        ),
        (
            &["-d", "86401", "trig-syscall-count"],
            "too large: at most 86400",
        ),
        (
            &["-r", "0", "trig-syscall-count"],
            "'--repeat <N>': must be at least 1",
        ),
        (
            &["--prod-affinity", "-1", "trig-syscall-count"],
            "'-1' is not a CPU number",
        ),
        (
            &["--prod-affinity=-1", "trig-syscall-count"],
            "'-1' is not a CPU number",
        ),
        (
            &["compare", "--noise", "-1", "a", "b"],
            "'--noise <PCT>': must be between 0 and 1000",
        ),
        (
            &[
                "--plot",
                "x.png",
                "--sweep",
                "producers=1",
                "trig-syscall-count",
            ],
            "--plot writes SVG: give a file name ending in .svg, not x.png",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
        assert_one_clear_line(&out, USAGE, needle);
    }
}

#[test]
fn compare_is_a_subcommand_of_bench() {
    let out = run(&["compare", "--help"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout
            .contains("Usage: bench compare [OPTIONS] <OLD> <NEW>..."),
        "{}",
        out.stdout
    );
    let out = run(&["--help"]);
    assert!(
        out.stdout
            .contains("Usage: bench [OPTIONS] [BENCHMARK]... [COMMAND]"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  compare      Compare result files"),
        "{}",
        out.stdout
    );
    // -q and -v are shared with compare.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let out = run(&[
        "-q",
        "-w0",
        "-d1",
        "--json",
        file.to_str().unwrap(),
        "trig-syscall-count",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let f = file.to_str().unwrap();
    let out = run(&["-q", "compare", f, f]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("trig-syscall-count"), "{}", out.stdout);
}

#[test]
fn per_op_figures_are_defined_once() {
    let out = run(&["--help"]);
    assert!(
        out.stdout
            .contains("'usecs/op' is wall-clock time divided by the operations of all producers"),
        "{}",
        out.stdout
    );
    // The latency is one producer's time per operation, and says so.
    let out = run(&["-q", "-w0", "-d1", "-p2", "trig-syscall-count"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = out.stdout.lines().last().unwrap();
    assert!(summary.contains(" ns/op/prod"), "{summary}");
}

#[test]
fn probe_takes_benchmarks_and_writes_json() {
    let out = run(&["--probe", "trig-syscall-count", "syscall-basic"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(lines[0].starts_with("trig-syscall-count") && lines[0].ends_with(" ok"));
    assert!(lines[1].starts_with("syscall-basic") && lines[1].ends_with(" ok"));

    let out = run(&["--probe", "trig-uprobe-nopp"]);
    assert_one_clear_line(&out, USAGE, "did you mean trig-uprobe-nop");

    let out = run(&[
        "--probe",
        "--json",
        "-",
        "trig-syscall-count",
        "breakpoint-enable",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let value: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(value["schema"], "bench-probe/1");
    assert_eq!(value["partial"], false);
    let benches = value["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 2);
    assert_eq!(benches[0]["name"], "trig-syscall-count");
    assert_eq!(benches[0]["status"], "ok");
    assert!(benches[0]["reason"].is_null());
    assert!(value["kernel_release"].is_string());

    // An unsupported one carries its reason; to a file as well.
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probe.json");
    let out = run(&["--probe", "--json", path.to_str().unwrap(), "trig-kprobe"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let value: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let kprobe = &value["benchmarks"][0];
    if kprobe["status"] != "ok" {
        assert_eq!(kprobe["status"], "unsupported", "{kprobe}");
        assert!(
            kprobe["reason"].as_str().unwrap().contains("kprobe"),
            "{kprobe}"
        );
    }
}

#[test]
fn a_full_stdout_is_one_sentence_and_exit_1() {
    // With --json -, the text report goes to stderr before the error.
    let mut cmd = Command::new(bench_bin());
    cmd.args(["-w0", "-d1", "--json", "-", "trig-syscall-count"])
        .stdout(File::options().write(true).open("/dev/full").unwrap());
    let out = run_cmd(cmd);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.lines().last(),
        Some("error: cannot write to standard output: No space left on device")
    );
    for args in [
        &["--list"][..],
        &["-q", "-w0", "-d1", "syscall-basic"][..],
        &["--probe", "trig-syscall-count"][..],
        &["-q", "-r", "10", "syscall-basic"][..],
    ] {
        let mut cmd = Command::new(bench_bin());
        cmd.args(args)
            .stdout(File::options().write(true).open("/dev/full").unwrap());
        let out = run_cmd(cmd);
        assert_one_clear_line(
            &out,
            1,
            "error: cannot write to standard output: No space left on device",
        );
    }
}

#[test]
fn a_closed_pipe_still_ends_the_run_quietly() {
    let mut child = Command::new(bench_bin())
        .args(["--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completions_name_options_and_benchmarks() {
    let out = run(&["completions", "bash"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("--duration"));
    assert!(out.stdout.contains("trig-uprobe-nop"));
    assert!(out.stdout.contains("compare"));
    // bash itself accepts the script.
    let status = Command::new("bash")
        .args(["-n", "-c", &out.stdout])
        .status()
        .unwrap();
    assert!(status.success());
    let out = run(&["completions", "zsh"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("--duration"));
    assert!(out.stdout.contains("trig-uprobe-nop"));
    // clap_complete's fish script completes options and commands only.
    let out = run(&["completions", "fish"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("duration"));
    assert!(out.stdout.contains("compare"));
    let out = run(&["completions", "powershell"]);
    assert_eq!(out.code, USAGE);
}

#[test]
fn the_man_page_is_valid_roff() {
    let out = run(&["man"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // clap_mangen defines the apostrophe string before the title.
    let first_macro = out
        .stdout
        .lines()
        .find(|l| !l.starts_with(".ie") && !l.starts_with(".el"))
        .unwrap();
    assert!(first_macro.starts_with(".TH bench 1"), "{first_macro}");
    assert!(
        out.stdout.contains("\\-\\-duration"),
        "options are documented"
    );
    assert!(out.stdout.contains("compare"), "commands are documented");
    // groff with every warning on finds nothing to say.
    let mut groff = Command::new("groff")
        .args(["-man", "-ww", "-z", "-Tutf8"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff is installed (scripts/install-deps.sh)");
    use std::io::Write;
    groff
        .stdin
        .take()
        .unwrap()
        .write_all(out.stdout.as_bytes())
        .unwrap();
    let checked = groff.wait_with_output().unwrap();
    assert!(checked.status.success());
    assert!(
        checked.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[test]
fn the_progress_bar_says_measuring_once_warm_up_is_over() {
    // The bar is drawn only on a terminal: run under script(1)'s pty.
    let command = format!("{} -w1 -d2 trig-syscall-count", bench_bin().display());
    let out = run_cmd({
        let mut cmd = Command::new("script");
        cmd.args(["-qec", &command, "/dev/null"]);
        cmd
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    let screen = out.stdout;
    let warm_up_line = screen.find("Iter   0").expect("the warm-up iteration");
    assert!(screen[..warm_up_line].contains("warm-up"), "{screen}");
    let after = &screen[warm_up_line..];
    assert!(
        !after.contains("warm-up"),
        "the bar still says warm-up: {after}"
    );
    assert!(after.contains("measuring"), "{after}");
}
