//! The red zone on each probe path, the nop10 family's verdict, and
//! xdp-lb's lines, for real on this kernel.

use crate::common::*;

/// The `probe path:` line of a short timed run of `bench`.
fn probe_path_line(bench_name: &str) -> String {
    let out = bench_ok(&format!("-w0 -d1 {bench_name}"));
    out.stdout
        .lines()
        .find(|line| line.starts_with("probe path:"))
        .unwrap_or_else(|| panic!("{bench_name} printed no probe path line:\n{}", out.stdout))
        .to_string()
}

/// A trap leaves the red zone alone; a call over a 5-byte nop (this
/// host's optimized path, Linux 6.18) pushes its return address and the
/// trampoline's three registers into it: 32 bytes. The check must see
/// exactly that: a target that did not fill and verify its red zone would
/// report it intact, and this test fails.
#[test]
fn the_red_zone_is_checked_on_every_probe_path() {
    let _lock = probe_lock();
    for trap in ["trig-uprobe-nop", "trig-uprobe-push", "trig-uprobe-ret"] {
        let line = probe_path_line(trap);
        assert!(line.ends_with(", red zone intact"), "{trap}: {line}");
    }
    let line = probe_path_line("trig-uprobe-nop5");
    if line.starts_with("probe path: optimized") {
        assert!(
            line.ends_with(", red zone clobbered (32 bytes)"),
            "the optimized 5-byte nop: {line}"
        );
    } else {
        assert!(line.ends_with(", red zone intact"), "{line}");
    }
    let probe = bench_ok("--probe trig-uprobe-nop5 trig-uprobe-ret");
    assert!(
        probe
            .stdout
            .contains("(probe path: single-stepped, red zone intact)"),
        "{}",
        probe.stdout
    );
}

/// The 10-byte nop: counted exactly where the kernel probes it, else
/// `unsupported:` naming the prefix the kernel refuses, in --probe and in
/// a run (exit 4).
#[test]
fn the_nop10_family_counts_or_says_what_the_kernel_lacks() {
    let _lock = probe_lock();
    let names = [
        "trig-uprobe-nop10",
        "trig-uretprobe-nop10",
        "trig-uprobe-multi-nop10",
        "trig-uretprobe-multi-nop10",
        "trig-usdt-nop10",
    ];
    for name in names {
        let probe = bench_ok(&format!("--probe {name}"));
        if probe.stdout.contains(" ok") {
            assert_fixed_hits(&format!("-q -r 1001 {name}"), 1001);
            continue;
        }
        assert!(
            probe.stdout.contains("unsupported: ")
                && probe
                    .stdout
                    .contains("refuses the CS segment-override prefix 0x2e"),
            "{name}: {}",
            probe.stdout
        );
        let run = bench(&format!("-q -r 10 {name}"));
        assert_eq!(run.code, 4, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains("cannot probe the 10-byte nop"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn xdp_lb_prints_the_kernel_runners_lines() {
    // A tenth of a second's 34 batches once left one untimed at the run's
    // end (the line then said "33 batches timed of 34"): a second's keep
    // every batch timed.
    real_tick();
    let _lock = probe_lock();
    // The scenario of a fixed batch: calibration's proportionality check
    // refuses a run on a machine others load.
    let out = bench_ok("-q -w0 -d1 xdp-lb --scenario tcp-v4-lru-warmup");
    let last = out.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("tcp-v4-lru-warmup: median ")
            && last.contains(" ns/op, stddev ")
            && last.contains(", p99 ")
            && last.ends_with(" samples: every batch run, less outliers)"),
        "{}",
        out.stdout
    );
    let out = bench_ok("-q -w0 -d1 --machine-readable xdp-lb --scenario tcp-v4-lru-warmup");
    let last = out.stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("RESULT scenario=tcp-v4-lru-warmup samples=") && last.contains(" median="),
        "{}",
        out.stdout
    );
    let missing = bench("-q -w0 -d1 xdp-lb");
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("xdp-lb needs --scenario NAME"),
        "{}",
        missing.stderr
    );
}

/// A missing or unknown `--scenario` is refused before anything is set up
/// or printed (d744f7d printed `Setting up…` first), in one sentence that
/// lists the kernel runner's scenarios, as the help does (d744f7d's help
/// said `[default ]`).
#[test]
fn xdp_lb_refuses_a_scenario_before_anything_is_printed() {
    let names = "tcp-v4-lru-hit, tcp-v4-ch, tcp-v6-lru-hit";
    for (args, needle) in [
        ("-w0 -d1 xdp-lb", "xdp-lb needs --scenario NAME, one of: "),
        (
            "-w0 -d1 --scenario nosuch xdp-lb",
            "--scenario \"nosuch\" is not one of xdp-lb's: ",
        ),
    ] {
        let out = bench(args);
        assert_one_clear_line(&out, 2, needle);
        assert!(out.stderr.contains(names), "{}", out.stderr);
        assert!(
            out.stderr
                .trim_end()
                .ends_with("drop-v4-options, drop-v6-frag"),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{args}: {}", out.stdout);
    }
    let help = bench_ok("--help").stdout;
    let scenario = help
        .split("--scenario <NAME>")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default()
        .to_string();
    assert!(
        scenario.contains(names) && scenario.trim_end().ends_with("drop-v6-frag) [required]"),
        "{scenario}"
    );
    assert!(!help.contains("[default ]"), "{help}");
}
