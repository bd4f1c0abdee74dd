//! `bpf-nop`, the timing inside BPF, for real: the calls the program counts
//! are the batches run, its closing line is the kernel runner's, and a
//! calibration either holds or refuses the run in one line.

use crate::common::*;

const USAGE: i32 = 2;
const SETUP: i32 = 5;

/// The words of the kernel runner's human line, and its sample count.
fn human_line(line: &str) -> u64 {
    let rest = line.strip_prefix("bpf-nop: median ").expect(line);
    let (median, rest) = rest.split_once(" ns/op, stddev ").expect(line);
    let (stddev, rest) = rest.split_once(", p99 ").expect(line);
    let (p99, rest) = rest.split_once(" (").expect(line);
    for figure in [median, stddev, p99] {
        let (_, decimals) = figure.split_once('.').expect(line);
        assert_eq!(decimals.len(), 2, "{line}");
        figure.parse::<f64>().expect(line);
    }
    let (samples, which) = rest.split_once(" samples").expect(line);
    assert!(which.ends_with(", less outliers)"), "{line}");
    samples.parse().expect(line)
}

/// The median's line says which batches it is of: every batch a short run
/// made, or, where batches of a thousand passes ran by the million, the
/// first 4096 each CPU timed (4c30c63 said "(N samples)" alone).
#[test]
fn the_median_says_which_batches_it_comes_from() {
    let _lock = probe_lock();
    let out = bench_ok("-q -r 20 --batch-iters 100000 bpf-nop");
    assert_has(
        out.stdout.lines().last().unwrap(),
        " samples: every batch run, less outliers)",
    );
    let out = bench_ok("-q -w0 -d1 --batch-iters 1000 bpf-nop");
    let last = out.stdout.lines().last().unwrap();
    let which = last.split(" samples: the ").nth(1).expect(last);
    let (timed, rest) = which.split_once(" batches timed of ").expect(last);
    let (run, rest) = rest
        .split_once(" run (a CPU times its first 4096)")
        .expect(last);
    let (timed, run): (u64, u64) = (timed.parse().expect(last), run.parse().expect(last));
    // Each CPU the producer ran on timed its first 4096 or, where it ran
    // fewer there (a busy CPU it visited briefly), every one: at least one
    // CPU's 4096, at most every CPU's.
    // SAFETY: sysconf reads a constant of the system.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
    assert!(
        (4096..=4096 * cpus).contains(&timed) && timed < run,
        "{last}"
    );
    assert_eq!(rest, ", less outliers)", "{last}");
}

#[test]
fn the_program_counts_every_call_of_every_batch() {
    let _lock = probe_lock();
    for (calls, batch) in [("1", "100"), ("37", "1000"), ("200", "4096")] {
        let out = run(&["-q", "-r", calls, "--batch-iters", batch, "bpf-nop"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let expected = calls.parse::<u64>().unwrap() * batch.parse::<u64>().unwrap();
        assert_eq!(fixed_hits(&out.stdout), expected, "{}", out.stdout);
        // One sample a batch, fewer after the outliers' cut, never more.
        let last = out.stdout.lines().last().unwrap();
        let samples = human_line(last);
        assert!(samples >= 1 && samples <= calls.parse().unwrap(), "{last}");
    }
}

#[test]
fn machine_readable_is_the_kernel_runners_result_line() {
    let _lock = probe_lock();
    let out = bench_ok("-q -r 50 --batch-iters 2000 --machine-readable bpf-nop");
    let last = out.stdout.lines().last().unwrap();
    let keys: Vec<&str> = last
        .split(' ')
        .skip(1)
        .map(|pair| pair.split_once('=').expect(last).0)
        .collect();
    assert!(
        last.starts_with("RESULT scenario=bpf-nop samples="),
        "{last}"
    );
    assert_eq!(
        keys,
        ["scenario", "samples", "median", "stddev", "cv", "min", "p99", "max"],
        "{last}"
    );
    let value = |key: &str| -> f64 {
        let pair = last
            .split(' ')
            .find(|p| p.starts_with(&format!("{key}=")))
            .unwrap();
        pair.split_once('=').unwrap().1.parse().expect(last)
    };
    assert!(
        value("min") <= value("median") && value("median") <= value("p99"),
        "{last}"
    );
    assert!(value("p99") <= value("max"), "{last}");
}

/// The calibrated run, once: on a quiet machine the check holds and the run
/// closes with the timing line; where noise breaks proportionality, the run
/// is refused in one sentence with exit 5 (the check's own arithmetic is
/// unit-tested on synthetic timings in `stats::timing`).
#[test]
fn a_calibrated_run_holds_its_check_or_refuses_the_run() {
    let _lock = probe_lock();
    let out = bench("-w0 -d1 bpf-nop");
    match out.code {
        0 => {
            let last = out.stdout.lines().last().unwrap();
            assert!(human_line(last) > 0, "{last}");
        }
        SETUP => assert_one_clear_line(
            &out,
            SETUP,
            "error: proportionality check failed (2N/N ratio=",
        ),
        code => panic!("exit {code}: {}", out.stderr),
    }
}

#[test]
fn its_options_are_checked() {
    for line in [
        "-q -r 1 --batch-iters 4194305 bpf-nop",
        "-q -r 1 -c 1 bpf-nop",
        "-q -r 1 --machine-readable trig-kernel-count",
    ] {
        assert_eq!(bench(line).code, USAGE, "{line}");
    }
}

/// The loop it times, in the header line and the result file: the kernel
/// runner's may_goto loop on a kernel that has may_goto (6.9+), counted
/// exactly; the bpf_loop() loop, said as the fallback, on an older one.
#[test]
fn the_loop_is_the_kernel_runners_where_the_kernel_has_may_goto() {
    let _lock = probe_lock();
    let (_dir, json, out) = bench_ok_json("-r 3 --batch-iters 1000 --json {json} bpf-nop");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (numbers.next().unwrap(), numbers.next().unwrap());
    let (kept, upstreams) = match version >= (6, 9) {
        true => ("syscall-may-goto", true),
        false => ("syscall-bpf-loop", false),
    };
    let header = line_starting(&out.stdout, "trigger: ");
    assert_eq!(header.ends_with("(upstream's)"), upstreams, "{header}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["runs"][0]["trigger"], kept, "{result}");
    assert_eq!(fixed_hits(&out.stdout), 3000, "{}", out.stdout);
}
