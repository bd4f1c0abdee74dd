//! The attach family for real: every family that works here attaches N
//! probes, sees each fire exactly once and detaches them, at N=1 and a larger
//! N; the refused ones say why; an interrupt at any step detaches everything.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::*;
use bench::kernel::{config, ConfigOption};
use bench::results::ResultFile;

const UNSUPPORTED: i32 = 4;

/// Runs `bench` with `--attach-cnt n`, checks its report and result, and
/// that nothing stays loaded: each of the n probes fired exactly once.
fn cycle(bench: &str, n: usize, link_kind: &str) {
    checked_cycle(bench, n, link_kind, true);
}

/// Runs one attach cycle of `bench` over `n` probes and checks what it
/// says of it, line by line, against its result file: the probes attached
/// in `link_kind`, attach and detach timed, and, where the sites can be
/// driven (`verified`), every probe fired exactly once; where they cannot
/// (kernel functions), that the firing was not checked. Nothing stays
/// loaded.
fn checked_cycle(bench: &str, n: usize, link_kind: &str, verified: bool) {
    let dir = tempdir(&format!("{bench}-{n}"));
    let json = dir.join("run.json");
    let count = n.to_string();
    let out = run(&[
        bench,
        "--attach-cnt",
        &count,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{bench} {n}: {}", out.stderr);
    let result = ResultFile::load(&json).unwrap();
    let cycle = result.runs[0].cycle().unwrap();
    assert_eq!(cycle.probes, n, "{bench}");
    assert_has(&cycle.attached_with.to_string(), link_kind);
    assert!(cycle.attach.wall_ns > 0 && cycle.detach.wall_ns > 0);
    // The cycle's lines, in order, after the set-up line.
    let lines = lines_from(&out.stdout, "probes: ");
    assert_eq!(lines.len(), 6, "{bench} {n}:\n{}", out.stdout);
    assert_eq!(lines[0], format!("probes: {n} in {}", cycle.attached_with));
    assert!(lines[1].starts_with("attach "), "{}", out.stdout);
    assert!(lines[3].starts_with("detach "), "{}", out.stdout);
    let fired_words = if verified {
        let fired = cycle.fired.as_ref().expect("the firing was checked");
        assert_eq!((fired.fired, fired.wrong_count), (n, 0), "{bench} {n}");
        assert_eq!(lines[2], format!("verify   {n} of {n} fired"));
        format!(", {n} of {n} fired (")
    } else {
        assert!(cycle.fired.is_none(), "{bench}: {:?}", cycle.fired);
        assert_eq!(
            lines[2],
            "verify   not checked: kernel functions cannot be driven from here"
        );
        ", fired: not checked (".to_string()
    };
    // A lone cycle is the process's first: it says it is the cold one.
    assert!(
        lines[4].starts_with("cold: the first cycle"),
        "{}",
        out.stdout
    );
    let last = lines[5];
    assert_starts(last, "Summary: attach ");
    assert_has(last, &fired_words);
    assert!(
        last.contains(&format!("({n} probes, {};", cycle.attached_with)),
        "{last}"
    );
    assert_eq!(
        leftover_attach_programs(),
        Vec::<String>::new(),
        "{bench} {n}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_working_family_attaches_fires_exactly_n_and_detaches() {
    let _lock = probe_lock();
    cycle("attach-uprobe", 1, "1 perf link");
    cycle("attach-uprobe", 12, "12 perf links");
    cycle("attach-uprobe-multi", 1, "1 uprobe_multi link");
    cycle("attach-uprobe-multi", 50_000, "1 uprobe_multi link");
    // libbpf picks the multi link where the kernel has it (6.6+).
    let usdt_link = match bench::bpf::uprobe_multi_links() {
        true => "1 uprobe_multi link",
        false => "perf link",
    };
    cycle("attach-usdt", 1, usdt_link);
    cycle("attach-usdt", 10_000, usdt_link);
}

/// libbpf attaches USDT sites through one uprobe-multi link where the
/// kernel has them, and a link needs CAP_BPF and CAP_PERFMON alone: with
/// those two, attach-usdt runs its cycle (every site fires once) and
/// `--probe` finds it ok, as attach-uprobe-multi and trig-usdt-nop. Without
/// the link type it takes uprobe perf events, and asks for CAP_SYS_ADMIN.
#[test]
fn attach_usdt_asks_for_the_capabilities_of_the_link_it_takes() {
    let _lock = probe_lock();
    let args = ["-q", "attach-usdt", "--attach-cnt", "10"];
    if !bench::bpf::uprobe_multi_links() {
        let out = run_as_nobody("+bpf,+perfmon", &args);
        assert_one_clear_line(&out, 3, "through uprobe perf events");
        return;
    }
    for bench in ["attach-usdt", "attach-uprobe-multi"] {
        let out = run_as_nobody("+bpf,+perfmon", &[bench, "--attach-cnt", "10"]);
        assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
        assert_has(&out.stdout, "verify   10 of 10 fired");
        assert_has(&out.stdout, "probes: 10 in 1 uprobe_multi link");
    }
    let out = run_as_nobody(
        "+bpf,+perfmon",
        &["--probe", "attach-usdt", "trig-usdt-nop"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for bench in ["attach-usdt", "trig-usdt-nop"] {
        let line = line_starting(&out.stdout, bench);
        // Past `ok`, a probe's path and its red zone.
        assert_eq!(words(line)[..2], [bench, "ok"], "{}", out.stdout);
    }
    // Without them, the refusal names the link and the two capabilities.
    let out = run_as_nobody("", &args);
    assert_one_clear_line(
        &out,
        3,
        "attach-usdt attaches a BPF program to USDT sites through a uprobe-multi link, \
         which needs CAP_BPF and CAP_PERFMON; this process lacks CAP_BPF and CAP_PERFMON",
    );
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
}

#[test]
fn the_kernel_families_run_or_say_why() {
    let _lock = probe_lock();
    let kprobes_off = config("CONFIG_KPROBES") == ConfigOption::NotSet;
    let fprobe_off = config("CONFIG_FPROBE") == ConfigOption::NotSet;
    let fprobe = format!(
        "kprobe-multi links need CONFIG_FPROBE (Linux 5.18+), which {} is built without",
        bench::kernel::release()
    );
    let kprobe = "kprobes not available (CONFIG_KPROBES is not set)";
    for (bench, reason, link_kind) in [
        (
            "attach-kprobe",
            kprobes_off.then_some(kprobe),
            "10 perf links",
        ),
        (
            "attach-kprobe-multi",
            if fprobe_off {
                Some(fprobe.as_str())
            } else {
                kprobes_off.then_some(kprobe)
            },
            "1 kprobe_multi link",
        ),
    ] {
        match reason {
            Some(reason) => assert_one_clear_line(
                &run(&[bench, "--attach-cnt", "10"]),
                UNSUPPORTED,
                &format!("unsupported: {bench}: {reason}"),
            ),
            // Kernel functions cannot be driven from here: the cycle says
            // so, and attaches and detaches all ten.
            None => checked_cycle(bench, 10, link_kind, false),
        }
    }
    // Whether this kernel lets tracing programs load is found by trying.
    let out = run(&["attach-fentry", "--attach-cnt", "1"]);
    if out.code == 0 {
        checked_cycle("attach-fentry", 1, "1 tracing link", false);
    } else {
        assert_one_clear_line(
            &out,
            UNSUPPORTED,
            "unsupported: attach-fentry: tracing programs are refused (EPERM: lockdown or an LSM)",
        );
    }
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
}

#[test]
fn bad_counts_are_refused_in_one_sentence() {
    let out = run(&["attach-usdt", "--attach-cnt", "7"]);
    assert_one_clear_line(&out, 2, "of 1, 10, 100, 1000, 10000, 50000 sites");
    let out = run(&["attach-uprobe", "--attach-cnt", "70000"]);
    assert_one_clear_line(&out, 2, "--attach-cnt must be between 1 and 61111");
    let out = run(&["attach-uprobe-multi", "--attach-cnt", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn repeated_runs_give_an_interval_on_attach_and_detach_times() {
    let _lock = probe_lock();
    let (dir, json, out) =
        bench_ok_json("attach-uprobe-multi --attach-cnt 1000 --runs 3 --json {json}");
    // The process's first, cold cycle is kept apart from the two warm ones.
    assert_has(&out.stdout, "cold (first cycle of the process): attach ");
    assert_has(&out.stdout, "runs: 2, attach ");
    let last = out.stdout.lines().last().unwrap();
    assert_has(last, "2 of 2 cycles all fired");
    let result = ResultFile::load(&json).unwrap();
    assert_eq!(result.runs.len(), 3);
    let cold: Vec<bool> = result
        .runs
        .iter()
        .map(|r| r.cycle().unwrap().cold)
        .collect();
    assert_eq!(cold, [true, false, false]);
    let level = &result.cycle_stats[0];
    assert_eq!(level.attach_us_per_probe.runs, 2);
    assert!(level.attach_us_per_probe.ci95.is_some());
    assert!(level.detach_us_per_probe.ci95.is_some());
    assert_eq!(level.all_fired, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// This family's programs still loaded (other families' programs may be
/// loaded by other test processes on this machine).
fn leftover_attach_programs() -> Vec<String> {
    leftover_programs()
        .into_iter()
        .filter(|name| name.starts_with("count_site") || name.starts_with("empty_fentry"))
        .collect()
}

/// The BPF links `pid` holds.
fn links_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter(|info| info.contains("link_type:"))
        .count()
}

/// Polls (every millisecond, at most 30 s) until `ready` says so.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(30), "never {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends SIGINT and collects the exit (at most 120 s: each attached classic
/// uprobe takes about 0.1 s to detach).
fn interrupt(child: Child) -> Output {
    send_signal(&child, libc::SIGINT);
    finish_child(child, Duration::from_secs(120), String::new())
}

#[test]
fn sigint_mid_attach_detaches_what_was_attached() {
    let _lock = probe_lock();
    let child = spawn(&["attach-uprobe", "--attach-cnt", "50000"]);
    let pid = child.id();
    wait_until("attached a link", || links_of(pid) > 0);
    let out = interrupt(child);
    assert_one_clear_line(&out, 130, "interrupted by SIGINT while attaching (");
    assert_has(&out.stderr, "of 50000 links attached)");
    assert!(!out.stdout.contains("Summary"), "{}", out.stdout);
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
}

#[test]
fn sigint_mid_detach_detaches_all_and_keeps_the_cycles_measured() {
    let _lock = probe_lock();
    let (dir, json, child) = spawn_json("attach-uprobe --attach-cnt 20 --runs 5 --json {json}");
    let pid = child.id();
    // The first cycle attaches 20 links and detaches them (about 0.1 s
    // each; a link's count drops at once, its wait comes after); a later one
    // attaches 20 again: interrupt its detach. Each state watched lasts a
    // second or more: none links between two cycles lasts only the last
    // link's wait, which a loaded machine's poll can miss.
    wait_until("attached the first cycle", || links_of(pid) >= 15);
    wait_until("detaching the first cycle", || links_of(pid) < 15);
    wait_until("attached the second cycle", || links_of(pid) >= 15);
    wait_until("detaching the second cycle", || {
        (1..15).contains(&links_of(pid))
    });
    let out = interrupt(child);
    assert_one_clear_line(&out, 130, "interrupted by SIGINT while detaching");
    assert_has(&out.stdout, "Run    1: attach ");
    let result = ResultFile::load(&json).unwrap();
    assert!(result.partial);
    // The watch above can miss a quick detach and catch the next cycle's:
    // the interrupted cycle is the last, and each one before it was measured.
    let (interrupted, measured) = result.runs.split_last().unwrap();
    assert!(
        (1..5).contains(&measured.len()),
        "{} cycles measured before the interrupted one",
        measured.len()
    );
    assert!(measured.iter().all(|r| r.cycle().is_some() && !r.partial));
    assert!(interrupted.cycle().is_none() && interrupted.partial);
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_second_sigint_mid_detach_still_writes_the_completed_runs() {
    let _lock = probe_lock();
    let (dir, json, mut child) = spawn_json("attach-uprobe --attach-cnt 20 --runs 3 --json {json}");
    let pid = child.id();
    let seen = read_until(&mut child, "Run    1: attach ", 1, false);
    // Run 2 attaches its 20 links (about 0.1 s each to detach), then detaches.
    wait_until("attached the second cycle", || links_of(pid) >= 15);
    wait_until("detaching the second cycle", || {
        (3..15).contains(&links_of(pid))
    });
    send_signal(&child, libc::SIGINT);
    // The second once the first was taken: two pending SIGINTs merge.
    wait_until("took the first SIGINT", || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        !status
            .lines()
            .any(|l| l.starts_with("ShdPnd:") && !l.ends_with("0000000000000000"))
    });
    send_signal(&child, libc::SIGINT);
    let out = finish_child(child, Duration::from_secs(120), seen);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert_has(&out.stderr, "interrupted by SIGINT twice");
    let result = ResultFile::load(&json).unwrap();
    assert!(result.partial);
    assert_eq!(result.runs.len(), 1, "only run 1 was completed");
    assert!(result.runs[0].cycle().is_some() && !result.runs[0].partial);
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_summary_line_cuts_to_the_figures() {
    let _lock = probe_lock();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} attach-uprobe-multi --attach-cnt 100 | tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-",
            bench_bin().display()
        ))
        .output()
        .unwrap();
    let cut = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<&str> = cut.trim().split(' ').collect();
    assert!(fields[0].parse::<f64>().is_ok(), "{cut}");
    assert_eq!(fields[1], "\u{b5}s/probe,", "{cut}");
    assert_eq!(fields[2], "detach", "{cut}");
    assert!(cut.trim().ends_with("100 of 100 fired"), "{cut}");
}

/// attach-churn's run: its hit rate, and the churn its result keeps.
fn churn_run(args: &[&str]) -> (f64, bench::results::cycles::ChurnRecord, String) {
    let (dir, json) = temp_file("churn", "run.json");
    let mut all = vec![
        "attach-churn",
        "-w0",
        "-d1",
        "--json",
        json.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = run(&all);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    let result = ResultFile::load(&json).unwrap();
    let record = &result.runs[0];
    let hits = record.figure("hits").unwrap();
    let churn = record
        .churn()
        .cloned()
        .expect("attach-churn keeps its churn");
    std::fs::remove_dir_all(&dir).unwrap();
    (hits, churn, out.stdout)
}

#[test]
fn churn_attaches_and_detaches_beside_the_hits_and_leaves_nothing() {
    // Attach/detach cycles of about 0.1 s each fill the run's seconds.
    real_tick();
    let _lock = probe_lock();
    // Without churn: hits, no cycles, and the line that says so.
    let (hits, churn, stdout) = churn_run(&["-c", "0"]);
    assert!(hits > 10_000.0, "{stdout}");
    assert_eq!((churn.threads, churn.cycles), (0, 0));
    assert_has(&stdout, "churn: none (-c 0)");

    // The default churns with one thread: each of its cycles attached a
    // uprobe that fired once (a cycle whose probe did not fire fails the
    // run), in the measured seconds, with attach and detach timed.
    let (hits, churn, stdout) = churn_run(&[]);
    assert!(hits > 1_000.0, "{stdout}");
    assert_eq!(churn.threads, 1);
    assert!(churn.cycles >= 2, "{churn:?}");
    assert!((churn.seconds - 1.0).abs() < 0.5, "{churn:?}");
    assert!(churn.attach_us > 0.0 && churn.detach_us > 0.0, "{churn:?}");
    assert!(
        stdout.contains(&format!(
            "churn: 1 thread, {} attach/detach cycles in ",
            churn.cycles
        )),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .lines()
            .last()
            .map(|l| l.starts_with("Summary: hits")),
        Some(true),
        "{stdout}"
    );
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
}

#[test]
fn a_churn_sweep_over_consumers_runs_each_count() {
    // Attach/detach cycles of about 0.1 s each fill the run's seconds.
    real_tick();
    let _lock = probe_lock();
    let (dir, json, _) = bench_ok_json("attach-churn -w0 -d1 --sweep consumers=0,2 --json {json}");
    let result = ResultFile::load(&json).unwrap();
    let threads: Vec<usize> = result
        .runs
        .iter()
        .map(|r| r.churn().unwrap().threads)
        .collect();
    assert_eq!(threads, vec![0, 2]);
    assert!(result.runs[1].churn().unwrap().cycles >= 2);
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
    // -c and the sweep both set the consumers: refused.
    let out = run(&["attach-churn", "-c", "1", "--sweep", "consumers=0,1"]);
    assert_one_clear_line(
        &out,
        2,
        "--sweep consumers sets each run's consumers; drop -c",
    );
}

/// attach-churn's producers call the probed site once per operation, one
/// hit each, so `--latency` times hits: every call without churn, and hits
/// while a churner attaches and detaches beside them.
#[test]
fn churn_latency_times_one_hit_per_operation() {
    let _lock = probe_lock();
    let (dir, json) = temp_file("churn-latency", "run.json");
    let path = json.to_str().unwrap();
    let out = run(&[
        "--latency",
        "-r",
        "20000",
        "-c",
        "0",
        "--json",
        path,
        "attach-churn",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(fixed_hits(&out.stdout), 20_000, "{}", out.stdout);
    let latency = ResultFile::load(&json).unwrap().runs[0].latency.clone();
    assert_eq!(latency.expect("timed").percentiles.count, 20_000);
    let out = run(&[
        "--latency",
        "-w0",
        "-d1",
        "-c",
        "1",
        "--json",
        path,
        "attach-churn",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run = &ResultFile::load(&json).unwrap().runs[0];
    let timed = run.latency.as_ref().expect("timed").percentiles.count;
    assert!(timed > 0, "{}", out.stdout);
    assert_eq!(run.churn().expect("churned").threads, 1);
    assert_eq!(leftover_attach_programs(), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A lone cycle is the process's first, cold one, and says so above its
/// summary (which stays the last line, for the scripts' cut).
#[test]
fn a_lone_cycle_says_it_is_the_cold_one() {
    let out = bench_ok("--attach-cnt 5 attach-uprobe-multi");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let n = lines.len();
    assert!(n >= 2, "{}", out.stdout);
    assert!(
        lines[n - 2].starts_with("cold: the first cycle of this process"),
        "{}",
        out.stdout
    );
    assert!(
        lines[n - 1].starts_with("Summary: attach "),
        "{}",
        out.stdout
    );
}
