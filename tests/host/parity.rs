//! What upstream's runner and perf gained in 2025–26, for real: the probe
//! path, -s/--stacktrace, --pid-filter, the -all variants, the perf uprobe
//! collection, and the baselines doing upstream's work.

use crate::common::*;

/// The probe path a fixed run records in its JSON.
fn probe_path(bench: &str) -> Option<String> {
    let out = run(&["-q", "-r", "2000", "--json", "-", bench]);
    assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{bench}: not JSON ({e}): {}", out.stdout));
    json["runs"][0]["probe_path"].as_str().map(str::to_string)
}

/// Whether the kernel optimizes uprobes on 5-byte nops: it then has the
/// `uprobe` system call (336 on x86-64) that its trampoline makes, which
/// answers ENXIO to a call from anywhere else; a kernel without it answers
/// ENOSYS. (Not the `uretprobe` call, 335: that one kills a stray caller.)
fn kernel_optimizes_nop5() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    const NR_UPROBE: libc::c_long = 336;
    // SAFETY: the uprobe system call takes no argument and, called from
    // outside the trampoline, only fails.
    let rc = unsafe { libc::syscall(NR_UPROBE) };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
}

/// What a 5-byte nop's probe path is on this kernel.
fn nop5_path() -> &'static str {
    match kernel_optimizes_nop5() {
        true => "optimized",
        false => "emulated",
    }
}

/// The answers of an x86-64 kernel: nops and push are emulated, ret is
/// single-stepped, and a 5-byte nop becomes a call into the trampoline where
/// the kernel offers that (the uprobe system call), else it is emulated too.
/// A change here is a kernel change or broken detection.
#[test]
fn the_probe_path_is_what_the_kernel_offers() {
    let _lock = probe_lock();
    for (target, expected) in [
        ("nop", "emulated"),
        ("push", "emulated"),
        ("ret", "single-stepped"),
        ("nop5", nop5_path()),
    ] {
        for kind in ["uprobe", "uretprobe", "uprobe-multi", "uretprobe-multi"] {
            let bench = format!("trig-{kind}-{target}");
            assert_eq!(
                probe_path(&bench).as_deref(),
                Some(expected),
                "{bench}: the probe path"
            );
        }
    }
    // Upstream's usdt-nop: a lone nop (usdt_1.c), which always traps.
    assert_eq!(probe_path("trig-usdt-nop").as_deref(), Some("emulated"));
    // Upstream's usdt-nop5: usdt.h's site (nop, nop5, usdt_2.c), where libbpf
    // probes the 5-byte nop when the kernel has the uprobe syscall.
    assert_eq!(probe_path("trig-usdt-nop5").as_deref(), Some(nop5_path()));
    // usleep starts with `sub $0x28,%rsp` in this libc: single-stepped.
    let empty = probe_path("uprobe-empty");
    assert!(
        matches!(empty.as_deref(), Some("emulated" | "single-stepped")),
        "{empty:?}"
    );
    // Nothing probed, nothing to say.
    assert_eq!(probe_path("trig-syscall-count"), None);
}

#[test]
fn a_timed_run_says_the_probe_path_before_its_summary() {
    let _lock = probe_lock();
    let out = bench_ok("-w 1 -d 1 trig-uprobe-nop5");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let expected = match kernel_optimizes_nop5() {
        true => "probe path: optimized (call into [uprobes-trampoline])",
        false => "probe path: emulated",
    };
    assert!(
        lines.iter().any(|l| l.starts_with(expected)),
        "{}",
        out.stdout
    );
    assert!(
        lines.last().unwrap().starts_with("Summary:"),
        "{}",
        out.stdout
    );
}

#[test]
fn stacktrace_counts_exactly_and_is_refused_where_it_does_not_apply() {
    let _lock = probe_lock();
    for bench in words("trig-uprobe-nop trig-uretprobe-multi-nop5 trig-usdt-nop trig-usdt-nop5") {
        let out = run(&["-q", "-s", "-r", "3001", bench]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        assert_eq!(fixed_hits(&out.stdout), 3001, "{bench}");
    }
    let out = bench_ok("-q -s -r 10 trig-rawtp");
    assert_eq!(fixed_hits(&out.stdout), 1000);
    for bench in ["trig-syscall-count", "trig-kernel-count", "syscall-basic"] {
        let out = run(&["-s", "-r", "10", bench]);
        assert_one_clear_line(&out, 2, "-s/--stacktrace (--body stack) does not apply to");
    }
    let out = run(&["--pid-filter", "-r", "10", "trig-rawtp"]);
    assert_one_clear_line(&out, 2, "--pid-filter does not apply to trig-rawtp");
}

#[test]
fn pid_filter_counts_exactly() {
    let _lock = probe_lock();
    for bench in words("trig-uprobe-nop trig-uretprobe-push trig-uprobe-multi-nop5 trig-uretprobe-multi-nop trig-usdt-nop5") {
        for (calls, producers) in [("1", "1"), ("20011", "2")] {
            let out = run(&["-q", "--pid-filter", "-r", calls, "-p", producers, bench]);
            assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
            assert_eq!(
                fixed_hits(&out.stdout),
                calls.parse::<u64>().unwrap(),
                "{bench} -p {producers}"
            );
        }
    }
}

/// Two filtered runs at once each count their own calls only: the reason to
/// use --pid-filter when probe benchmarks share a machine.
#[test]
fn two_filtered_runs_at_once_do_not_count_each_other() {
    let _lock = probe_lock();
    let start = |calls: &str| spawn(&["-q", "--pid-filter", "-r", calls, "trig-uprobe-nop"]);
    let (a, b) = (start("3000000"), start("2000000"));
    for (child, calls) in [(a, 3_000_000), (b, 2_000_000)] {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(fixed_hits(&stdout), calls, "{stdout}");
    }
}

#[test]
fn upstream_baselines_count_every_call() {
    for bench in [
        "trig-usermode-count",
        "trig-syscall-count",
        "trig-usermode-nocount",
    ] {
        let out = run(&["-q", "-r", "100003", "-p", "2", bench]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        assert_eq!(fixed_hits(&out.stdout), 100_003, "{bench}");
    }
}

#[test]
fn triggers_refuse_consumers_with_the_reason() {
    let out = run(&["-c", "1", "trig-rawtp"]);
    assert_one_clear_line(
        &out,
        2,
        "trig-rawtp has no consumers (its producers trigger and a counter counts, as in the kernel runner; only --body ringbuf has consumers, to drain its events)",
    );
}

/// The -all variants put an empty program on every attachable kernel
/// function beside the counting one: where the kernel has kprobe-multi
/// links, the count is still exact (10 calls of 10 triggers); where it has
/// none, the run says why.
#[test]
fn kprobe_multi_all_counts_exactly_or_says_why_it_cannot_run_here() {
    let _lock = probe_lock();
    let fprobe_off = bench::kernel::config_is_off("CONFIG_FPROBE");
    for bench in ["trig-kprobe-multi-all", "trig-kretprobe-multi-all"] {
        let out = run(&["-q", "-r", "10", "--trig-batch-iters", "10", bench]);
        if fprobe_off {
            assert_one_clear_line(
                &out,
                4,
                &format!(
                    "unsupported: {bench}: kprobe-multi links need CONFIG_FPROBE (Linux 5.18+), which"
                ),
            );
        } else {
            assert_eq!(fixed_counts(&out), (100, 0), "{bench}:\n{}", out.stdout);
        }
    }
    assert!(leftover_programs().is_empty());
}

#[test]
fn the_perf_uprobe_collection_prints_perfs_block() {
    let _lock = probe_lock();
    for (bench, perf) in [
        ("uprobe-baseline", "baseline"),
        ("uprobe-empty", "empty"),
        ("uprobe-trace_printk", "trace_printk"),
        ("uprobe-empty_ret", "empty_ret"),
        ("uprobe-trace_printk_ret", "trace_printk_ret"),
    ] {
        let out = run(&["-r", "20", bench]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 5, "{}", out.stdout);
        assert_eq!(lines[0], format!("# Running 'uprobe/{perf}' benchmark:"));
        assert_eq!(lines[1], "# Executed 20 usleep(1000) calls");
        let total = lines[2]
            .strip_prefix("     Total time: ")
            .and_then(|l| l.strip_suffix(" usecs"))
            .unwrap_or_else(|| panic!("{}", lines[2]));
        let usecs: u64 = total.replace(',', "").parse().unwrap();
        // Twenty sleeps of a millisecond take at least 20 ms.
        assert!(usecs >= 20_000, "{usecs}");
        assert!(lines[4].ends_with(" usecs/op"), "{}", lines[4]);
    }
    assert!(leftover_programs().is_empty());
}

#[test]
fn a_run_with_s_on_a_uprobe_says_in_its_header_that_it_takes_a_user_stack() {
    let _lock = probe_lock();
    let note = "note: -s takes a user stack per hit here (BPF_F_USER_STACK); the kernel runner's -s takes no stack for uprobes and USDT";
    let out = bench_ok("-w0 -d1 -s trig-uprobe-nop");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "Setting up benchmark 'trig-uprobe-nop'...");
    assert!(lines[1].starts_with(note), "{}", out.stdout);
    // Kernel triggers take the kernel stack, as upstream's -s does.
    let out = bench_ok("-w0 -d1 -s trig-rawtp");
    assert!(!out.stdout.contains("note: -s"), "{}", out.stdout);
    // Without -s, no note.
    let out = run(&["-w0", "-d1", "trig-uprobe-nop"]);
    assert!(!out.stdout.contains("note: -s"), "{}", out.stdout);
}

#[test]
fn list_marks_who_takes_the_new_options() {
    let out = run(&["--list"]);
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"))
            .to_string()
    };
    // For a probe in user space, -s (the stack body) takes the user stack,
    // which the kernel runner's -s does not: said where the option is shown.
    for name in [
        "trig-uprobe-nop",
        "trig-uretprobe-multi-push",
        "trig-usdt-nop",
    ] {
        assert!(
            line(name).ends_with("[--body, -s: user stack, --pid-filter]"),
            "{}",
            line(name)
        );
    }
    assert!(out.stdout.lines().next().unwrap().contains(
        "[-s: user stack]: -s takes a user stack per hit, where the kernel runner's -s takes none"
    ));
    assert!(line("trig-rawtp").ends_with("[--body]"));
    assert!(line("uprobe-empty").ends_with("[--pid-filter]"));
    assert!(!line("trig-kernel-count").contains('['));
    for name in [
        "trig-kprobe-multi-all",
        "trig-kretprobe-multi-all",
        "trig-usermode-nocount",
        "uprobe-baseline",
        "uprobe-trace_printk_ret",
    ] {
        line(name);
    }
}
