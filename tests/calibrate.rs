//! `bench calibrate`, for real: rounds of the benchmark, the benchmark again
//! and the benchmark with an injected cost, and what they say.

mod common;

use common::*;

#[test]
fn calibrate_sizes_the_cost_runs_rounds_within_its_budget_and_recommends() {
    let _lock = probe_lock();
    let out = bench_ok("calibrate --budget 10 -w0 -d2 trig-syscall-count");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let injected = lines.iter().find(|l| l.starts_with("injected: ")).unwrap();
    // Sized in the benchmark itself: three sizing runs, each named with
    // the slowdown it measured at its iterations.
    let sizing = injected.split(" measured ").nth(1).unwrap_or_default();
    assert_eq!(sizing.matches(" % at ").count(), 3, "{injected}");
    // Iterations are whole: the slowdown they make misses the target by at
    // most half an iteration's, and one iteration of a getpgid's ~100 ns is
    // a few ns.
    let expected: f64 = injected
        .split("expected ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no expected slowdown in {injected}"));
    assert!((2.5..=7.5).contains(&expected), "{injected}");
    assert!(injected.ends_with("% slower (target 5 %)"), "{injected}");
    // The budget bounds the rounds, not a clock: three rounds of three
    // 2-second runs are past 10 s on any machine, and three is the least
    // an interval is drawn from, so a calibration that kept to its budget
    // ran exactly three.
    let rounds = lines.iter().filter(|l| l.starts_with("round ")).count();
    assert_eq!(rounds, 3, "{}", out.stdout);
    // One finding per duration up to -d, first seconds standing for shorter runs.
    assert!(
        lines.iter().any(|l| l.starts_with("  -d 1: A'/A ")),
        "{}",
        out.stdout
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  -d 2: A'/A ")),
        "{}",
        out.stdout
    );
    let last = lines.last().unwrap();
    assert!(last.starts_with("Recommendation: "), "{last}");
}

#[test]
fn calibrate_checks_a_setting_by_counting_independent_trials() {
    let _lock = probe_lock();
    let out = bench_ok("calibrate --trials 2 --runs 2 -w0 -d1 trig-uprobe-nop");
    let trials: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("trial "))
        .collect();
    assert_eq!(trials.len(), 2, "{}", out.stdout);
    for trial in trials {
        assert!(trial.contains("A/A ") && trial.contains("A/A' "), "{trial}");
    }
    let last = out.stdout.lines().last().unwrap();
    assert!(
        last.starts_with("Checked --runs 2 -d1: detected "),
        "{last}"
    );
    assert!(last.contains(" of 2, false alarms "), "{last}");
}

#[test]
fn calibrate_refuses_what_it_cannot_do_in_one_sentence() {
    for (args, needle) in table(
        "
        calibrate --effect 1 trig-usermode-count | noise floor
        calibrate trig-nothing | unknown benchmark 'trig-nothing'
        calibrate --runs 5 trig-usermode-count | --trials
        calibrate --budget 5 trig-usermode-count | 10
        ",
    ) {
        let out = bench(args);
        common::assert_one_clear_line(&out, 2, needle);
    }
}

#[test]
fn an_operation_too_short_to_slow_by_the_effect_is_unsupported() {
    // trig-usermode-count's call takes a ns or two: one iteration of the
    // loop is more than 5 % of it, and a calibration for 5 % would be one
    // for something else.
    let _lock = probe_lock();
    let out = bench("calibrate -w0 -d1 trig-usermode-count");
    common::assert_one_clear_line(&out, 4, "too short to be made 5 % slower");
    assert!(out.stderr.starts_with("unsupported: "), "{}", out.stderr);
}
