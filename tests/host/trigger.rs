//! In-kernel triggers, USDT probes and `--probe`, for real.

use crate::common::*;
use bench::kernel::{config, ConfigOption};

const UNSUPPORTED: i32 = 4;
const TRACING_REFUSED: &str = "tracing programs are refused (EPERM: lockdown or an LSM)";

#[test]
fn in_kernel_triggers_count_runs_times_batch_iters() {
    let _lock = probe_lock();
    for bench in ["trig-kernel-count", "trig-tp", "trig-rawtp"] {
        for (runs, batch, producers) in [("1", "1", "1"), ("37", "7", "1"), ("500", "1000", "2")] {
            let expected = runs.parse::<u64>().unwrap() * batch.parse::<u64>().unwrap();
            let out = assert_fixed_hits(
                &format!("-q -r {runs} -p {producers} --trig-batch-iters {batch} {bench}"),
                expected,
            );
            assert!(
                out.stdout
                    .starts_with(&format!("# Executed {runs} calls of {bench}")),
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn usdt_probes_count_every_call() {
    let _lock = probe_lock();
    for bench in ["trig-usdt-nop", "trig-usdt-nop5"] {
        assert_fixed_hits(&format!("-q -r 30011 -p 2 {bench}"), 30_011);
    }
}

/// libbpf's log is `-v`'s alone, on every path into libbpf: a run, `--probe`
/// and `calibrate` (which sets a benchmark up outside a run) of benchmarks
/// this kernel refuses print bench's one reason, never libbpf's lines ("try
/// raising 'ulimit -l'?").
#[test]
fn libbpf_log_stays_behind_verbose_on_every_path() {
    let _lock = probe_lock();
    // Refused here, so calibrate ends at its set-up rather than using its budget.
    let refused: Vec<&str> = ["trig-kprobe", "trig-fentry", "attach-fentry"]
        .into_iter()
        .filter(|&b| run(&["-q", "-r", "1", b]).code == UNSUPPORTED)
        .collect();
    for bench in &refused {
        for args in [
            vec!["-w0", "-d1", bench],
            vec!["--probe", bench],
            vec!["calibrate", "--budget", "10", bench],
        ] {
            let out = run(&args);
            assert!(!out.stderr.contains("libbpf"), "{args:?}: {}", out.stderr);
            assert!(!out.stderr.contains("ulimit"), "{args:?}: {}", out.stderr);
            if args[0] == "-w0" {
                assert_one_clear_line(&out, UNSUPPORTED, &format!("unsupported: {bench}: "));
            }
        }
        // With -v the log is there: the quiet runs above did reach libbpf.
        let out = run(&["-v", "-q", "-r", "1", bench]);
        assert_eq!(out.code, UNSUPPORTED, "{bench}: {}", out.stderr);
        assert_has(&out.stderr, "libbpf: ");
    }
}

#[test]
fn batch_iters_is_bounded_and_belongs_to_the_trigger_benchmarks() {
    for (value, needle) in [
        (
            "0",
            "--trig-batch-iters must be between 1 and 1000 for trig-rawtp, got 0",
        ),
        ("1001", "must be between 1 and 1000"),
        ("-3", "expected a whole number, got '-3'"),
        ("ten", "expected a whole number, got 'ten'"),
    ] {
        let out = run(&["--trig-batch-iters", value, "trig-rawtp"]);
        assert_one_clear_line(&out, 2, needle);
    }
    let out = run(&["--trig-batch-iters", "10", "trig-uprobe-nop"]);
    assert_one_clear_line(
        &out,
        2,
        "--trig-batch-iters is not an option of trig-uprobe-nop",
    );
}

/// What a benchmark that this kernel may refuse must do: either run and count
/// exactly, or say why not with the unsupported exit code.
fn runs_or_says_why(bench: &str, expected_reason: Option<&str>) {
    let out = run(&["-q", "-r", "10", "--trig-batch-iters", "10", bench]);
    match expected_reason {
        Some(reason) => {
            assert_one_clear_line(
                &out,
                UNSUPPORTED,
                &format!("unsupported: {bench}: {reason}"),
            );
        }
        None => {
            assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
            assert_eq!(fixed_hits(&out.stdout), 100, "{bench}");
        }
    }
}

#[test]
fn kprobes_run_or_are_reported_with_the_kernel_config_as_reason() {
    let _lock = probe_lock();
    let kprobes_off = config("CONFIG_KPROBES") == ConfigOption::NotSet;
    let fprobe_off = config("CONFIG_FPROBE") == ConfigOption::NotSet;
    let kprobe_reason = kprobes_off.then_some("kprobes not available (CONFIG_KPROBES is not set)");
    let fprobe_reason = format!(
        "kprobe-multi links need CONFIG_FPROBE (Linux 5.18+), which {} is built without",
        bench::kernel::release()
    );
    let multi_reason = if fprobe_off {
        Some(fprobe_reason.as_str())
    } else {
        kprobe_reason
    };
    runs_or_says_why("trig-kprobe", kprobe_reason);
    runs_or_says_why("trig-kretprobe", kprobe_reason);
    runs_or_says_why("trig-kprobe-multi", multi_reason);
    runs_or_says_why("trig-kretprobe-multi", multi_reason);
}

#[test]
fn tracing_programs_run_or_are_reported_refused() {
    let _lock = probe_lock();
    for bench in ["trig-fentry", "trig-fexit", "trig-fmodret"] {
        let out = run(&["-q", "-r", "10", "--trig-batch-iters", "10", bench]);
        if out.code == 0 {
            assert_eq!(fixed_hits(&out.stdout), 100, "{bench}");
        } else {
            assert_one_clear_line(
                &out,
                UNSUPPORTED,
                &format!("unsupported: {bench}: {TRACING_REFUSED}"),
            );
        }
    }
}

#[test]
fn probe_lists_every_benchmark_with_a_verdict() {
    let _lock = probe_lock();
    let list = run(&["--list"]);
    let names: Vec<&str> = list
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let out = bench_ok("--probe");
    let lines: Vec<&str> = out.stdout.lines().collect();
    // One line each, in the order the verdicts were decided.
    let mut probed: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    probed.sort_unstable();
    let mut listed = names.clone();
    listed.sort_unstable();
    assert_eq!(probed, listed, "{}", out.stdout);
    for line in &lines {
        let (_, verdict) = line.split_once(char::is_whitespace).unwrap();
        let verdict = verdict.trim();
        // A helper benchmark says the fallback trigger it takes beside `ok`,
        // a probe its path and the red zone on it.
        assert!(
            verdict == "ok"
                || verdict.starts_with("ok (trigger: ")
                || verdict.starts_with("ok (probe path: ")
                || verdict.starts_with("unsupported: "),
            "{line}"
        );
    }
    let verdict = |name: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l[name.len()..].trim().to_string())
            .unwrap()
    };
    // What the benchmarks that must run here say.
    for name in [
        "trig-usermode-count",
        "trig-syscall-count",
        "trig-uprobe-nop",
        "trig-uretprobe-multi-ret",
        "trig-kernel-count",
        "trig-tp",
        "trig-rawtp",
        "trig-usdt-nop",
        "trig-usdt-nop5",
    ] {
        // A probe's `ok` goes on with its path and red zone.
        let verdict = verdict(name);
        assert!(
            verdict == "ok" || verdict.starts_with("ok (probe path: "),
            "{name}: {verdict}"
        );
    }
    // --probe and a run give the same reason.
    for name in ["trig-kprobe", "trig-fentry"] {
        let run_out = run(&["-q", "-r", "1", name]);
        if run_out.code == UNSUPPORTED {
            let reason = run_out.stderr.trim().replace(&format!("{name}: "), "");
            assert_eq!(verdict(name), reason, "{name}");
        } else {
            assert_eq!(verdict(name), "ok", "{name}");
        }
    }
}

/// Under emulation (`BENCH_VM=tcg`, as scripts/run_in_vm.sh sets it) with
/// more than one online CPU, the -all variants are refused before anything
/// is attached, by `--probe` and a run alike: attaching them killed 2-CPU
/// guests (d744f7d attached, and the guest died with an int3 oops).
#[test]
fn the_all_variants_are_refused_under_emulation_with_two_cpus() {
    let online = bench::runner::affinity::online_cpus().unwrap();
    if online.len() < 2 {
        return; // One CPU attaches them safely: nothing to refuse.
    }
    let why = format!(
        "attaching to every kernel function under emulation (TCG) with {} CPUs kills the guest",
        online.len()
    );
    let tcg = |args: &[&str]| {
        let mut cmd = std::process::Command::new(bench_bin());
        cmd.env("BENCH_VM", "tcg").args(args);
        run_cmd(cmd)
    };
    let probe = tcg(&[
        "--probe",
        "trig-kprobe-multi-all",
        "trig-kretprobe-multi-all",
    ]);
    assert_eq!(probe.code, 0, "{}", probe.stderr);
    let lines: Vec<&str> = probe.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", probe.stdout);
    for line in lines {
        assert!(line.contains(&format!("unsupported: {why}")), "{line}");
    }
    let run = tcg(&["-q", "-r", "1", "trig-kprobe-multi-all"]);
    assert_one_clear_line(&run, 4, &why);
}
