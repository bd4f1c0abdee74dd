//! local-storage-tasks-trace: the refusals of its options and of more than
//! one producer, and, where the kernel refuses fentry programs (this host),
//! the one sentence that says why it cannot run; where it can, a short
//! fixed run prints both SUMMARY lines and leaves no sleeper behind; and
//! upstream's script, shortened, prints the same verdict.

use crate::common::*;

const USAGE: i32 = 2;
const UNSUPPORTED: i32 = 4;
const NAME: &str = "local-storage-tasks-trace";

#[test]
fn refuses_what_upstream_refuses_and_says_why_it_cannot_run() {
    for (args, needle) in [
        ("-p 2", "runs one producer only (-p 1)"),
        ("-c 1", "has no consumers"),
        ("--nr_procs 0", "--nr_procs must be between 1 and 150000"),
        (
            "--nr_procs 150001",
            "--nr_procs must be between 1 and 150000",
        ),
        (
            "--kthread_pid 4194305",
            "--kthread_pid must be between 0 and 4194304",
        ),
    ] {
        let out = bench(&format!("-q -w0 -d1 {args} {NAME}"));
        assert_one_clear_line(&out, USAGE, needle);
    }

    let _lock = probe_lock();
    let probe = bench(&format!("--probe {NAME}"));
    let verdict = lines_from(&probe.stdout, NAME).join("\n");
    let run = bench(&format!("-q -r 3 --nr_procs 2 {NAME}"));
    if verdict.contains("unsupported:") {
        assert_has(&verdict, "fentry programs");
        assert_one_clear_line(&run, UNSUPPORTED, &format!("unsupported: {NAME}: "));
        assert_has(&run.stderr, "fentry programs");
    } else {
        assert_eq!(run.code, 0, "{}", run.stderr);
        // Every process's getpgid() counts: the producer's three at least.
        assert!(fixed_hits(&run.stdout) >= 3, "{}", run.stdout);
        assert_has(
            &run.stdout,
            "SUMMARY tasks_trace grace period latency\tavg ",
        );
        assert_has(
            &run.stdout,
            "SUMMARY ticks per tasks_trace grace period\tavg ",
        );
    }
    assert!(processes_of(&bench_bin()).is_empty(), "a sleeper is left");
    assert_nothing_left();

    // Upstream's script, shortened: its SUMMARY lines, or why not.
    let mut cmd = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scripts/run_bench_local_storage_rcu_tasks_trace.sh"),
    );
    cmd.env("WD", "-w0 -d1").env("NR_PROCS", "2");
    let script = run_cmd(cmd);
    assert_eq!(script.code, 0, "{}", script.stderr);
    if verdict.contains("unsupported:") {
        assert_starts(
            &script.stdout,
            &format!("{NAME} unsupported: it needs fentry programs"),
        );
        assert_eq!(script.stdout.lines().count(), 1, "{}", script.stdout);
    } else {
        let lines: Vec<&str> = script.stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{}", script.stdout);
        assert!(
            lines.iter().all(|l| l.starts_with("SUMMARY ")),
            "{}",
            script.stdout
        );
    }
    assert!(processes_of(&bench_bin()).is_empty(), "a sleeper is left");
}
