//! `--body KIND`, for real: every body on the uprobe, USDT and kernel trigger
//! programs counts every hit; the ringbuf body's events are consumed or
//! dropped, each exactly once; the count body's loaded program keeps nothing
//! of the others; the cost table; the refusals. Run as root.

use std::collections::HashSet;

use crate::common::*;
use bench::config::{Body, RunConfig};
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};

/// The bodies that run without consumers.
const PLAIN_BODIES: [&str; 6] = ["count", "ktime", "hash", "read-user", "stack", "printk"];

/// Hits per producer call: the kernel triggers fire --trig-batch-iters (100)
/// times per call.
fn per_call(bench: &str) -> u64 {
    match bench {
        "trig-rawtp" | "trig-tp" => 100,
        _ => 1,
    }
}

#[test]
fn every_body_counts_every_hit() {
    let _lock = probe_lock();
    for bench in words("trig-uprobe-nop trig-uretprobe-multi-push trig-usdt-nop trig-rawtp trig-tp")
    {
        for body in PLAIN_BODIES {
            let out = run(&["-q", "-p2", "-r", "2001", "--body", body, bench]);
            assert_eq!(
                fixed_counts(&out),
                (2001 * per_call(bench), 0),
                "{bench} --body {body}"
            );
        }
    }
    // The most the read-user body reads, and -s, upstream's stack body.
    let out = bench("-q -r 1000 --body read-user --read-bytes 4096 trig-usdt-nop");
    assert_eq!(fixed_counts(&out), (1000, 0));
    let out = bench("-q -r 1000 -s --body stack trig-uprobe-nop");
    assert_eq!(fixed_counts(&out), (1000, 0));
}

#[test]
fn ringbuf_events_are_consumed_or_dropped_exactly() {
    let _lock = probe_lock();
    for consumers in ["-c1", "-c2"] {
        for (bench, calls) in [
            ("trig-uprobe-nop", 20_000),
            ("trig-usdt-nop", 20_000),
            ("trig-uretprobe-nop", 5_000),
            // 100 events a call, faster than a consumer drains: drops.
            ("trig-rawtp", 5_000),
        ] {
            let repeat = calls.to_string();
            let out = run(&["-q", "-r", &repeat, consumers, "--body", "ringbuf", bench]);
            let (consumed, dropped) = fixed_counts(&out);
            assert_eq!(
                consumed + dropped,
                calls * per_call(bench),
                "{bench} {consumers}: {consumed} consumed + {dropped} dropped"
            );
            assert!(consumed > 0, "{bench} {consumers}: nothing consumed");
        }
    }
    // The drop path is counted too, not only the consumed one. A consumer
    // on another CPU may keep up on a quiet machine; one on the producer's
    // CPU drains only when the scheduler takes the CPU from a producer that
    // puts 1,000 events a call (the most trig-rawtp allows) into a ring of
    // 16,384: about 60 % of the events are dropped here.
    {
        let out = bench("-q -r 100 -c1 --prod-affinity 0 --cons-affinity 0 --trig-batch-iters 1000 --body ringbuf trig-rawtp");
        let (consumed, dropped) = fixed_counts(&out);
        assert_eq!(consumed + dropped, 100 * 1000, "{}", out.stdout);
        assert!(dropped > 0, "no run dropped an event: {}", out.stdout);
    }
}

/// The ids of the loaded programs named `name`, with their instructions as
/// the verifier left them.
fn programs(name: &str) -> Vec<(u32, Vec<u8>)> {
    let opts = ProgInfoQueryOptions::default().include_xlated_prog_insns(true);
    ProgInfoIter::with_query_opts(opts)
        .filter(|p| p.name.to_str() == Some(name))
        .map(|p| (p.id, p.xlated_prog_insns))
        .collect()
}

/// What a program does, read from its instructions: the helpers it calls and
/// how many conditional jumps it has.
fn calls_and_branches(insns: &[u8]) -> (Vec<i32>, usize) {
    const BPF_JMP: u8 = 0x05;
    const BPF_CALL: u8 = 0x80;
    const BPF_EXIT: u8 = 0x90;
    const BPF_JA: u8 = 0x00;
    let mut calls = Vec::new();
    let mut branches = 0;
    for insn in insns.chunks_exact(8) {
        let code = insn[0];
        if code & 0x07 != BPF_JMP {
            continue;
        }
        match code & 0xf0 {
            BPF_CALL => calls.push(i32::from_le_bytes([insn[4], insn[5], insn[6], insn[7]])),
            BPF_EXIT | BPF_JA => {}
            _ => branches += 1,
        }
    }
    (calls, branches)
}

/// Loads trig-uprobe-nop's program with `body` and reads it back. A
/// program of the same name that another process loads meanwhile makes it
/// try again.
fn loaded_with(body: Body) -> Vec<u8> {
    let bench = bench::benches::find("trig-uprobe-nop").unwrap();
    let config = RunConfig {
        body,
        consumers: usize::from(body == Body::Ringbuf),
        ..bench.default_config().unwrap()
    };
    for _ in 0..5 {
        let before: HashSet<u32> = programs("count_uprobe").into_iter().map(|p| p.0).collect();
        let workload = bench.setup(&config).unwrap();
        let mut ours: Vec<(u32, Vec<u8>)> = programs("count_uprobe")
            .into_iter()
            .filter(|p| !before.contains(&p.0))
            .collect();
        drop(workload);
        if ours.len() == 1 {
            let (id, insns) = ours.remove(0);
            // Dropping the workload unloads the program (the kernel frees it
            // a moment later).
            let gone = (0..200).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                !programs("count_uprobe").iter().any(|p| p.0 == id)
            });
            assert!(
                gone,
                "{body:?}: program {id} is still loaded after the drop"
            );
            return insns;
        }
    }
    panic!("{body:?}: another process kept loading count_uprobe programs");
}

/// The kernel's name of each helper `calls` calls: after fix-up a call's
/// immediate is the helper's offset from `__bpf_call_base` (kallsyms, root).
fn helper_names(calls: &[i32]) -> Vec<String> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let symbols: Vec<(u64, &str)> = kallsyms
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = u64::from_str_radix(fields.next()?, 16).ok()?;
            Some((address, fields.nth(1)?))
        })
        .collect();
    let base = symbols
        .iter()
        .find(|(_, name)| *name == "__bpf_call_base")
        .map(|(address, _)| *address)
        .expect("kallsyms names __bpf_call_base (run as root)");
    calls
        .iter()
        .map(|&offset| {
            let target = base.wrapping_add_signed(i64::from(offset));
            symbols
                .iter()
                .find(|(address, _)| *address == target)
                .map_or_else(|| format!("{target:#x}"), |(_, name)| name.to_string())
        })
        .collect()
}

#[test]
fn the_verifier_leaves_the_chosen_body_alone() {
    let _lock = probe_lock();
    // The count: a CPU id (inlined by the verifier) and an atomic add; no
    // test of the body is left, nothing of the other bodies.
    let count = loaded_with(Body::Count);
    assert_eq!(calls_and_branches(&count), (Vec::new(), 0));
    // The helpers each body keeps, by name (array lookups are inlined).
    for (body, wanted) in [
        (Body::Ktime, &["bpf_ktime_get_ns", "bpf_ktime_get_ns"][..]),
        (
            Body::Ringbuf,
            &[
                "bpf_get_current_pid_tgid",
                "bpf_ringbuf_reserve",
                "bpf_ktime_get_ns",
                "bpf_ringbuf_submit",
            ][..],
        ),
        (Body::ReadUser, &["bpf_probe_read_user"][..]),
        (Body::Stack, &["bpf_get_stack"][..]),
        (Body::Printk, &["bpf_trace_printk"][..]),
    ] {
        let insns = loaded_with(body);
        let names = helper_names(&calls_and_branches(&insns).0);
        assert_eq!(names, wanted, "{body:?}");
        assert!(
            insns.len() > count.len(),
            "{body:?} is no longer than the count"
        );
    }
    // The hash: the thread id, then the map's own lookup and update.
    let names = helper_names(&calls_and_branches(&loaded_with(Body::Hash)).0);
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names[0], "bpf_get_current_pid_tgid");
    assert!(
        names[1].contains("lookup") && names[2].contains("update"),
        "{names:?}"
    );
}

#[test]
fn a_body_run_ends_with_its_cost_against_the_count() {
    let _lock = probe_lock();
    let out = bench_ok("-q -w0 -d1 --body ktime trig-uprobe-nop");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let table = position_starting(&lines, "Bodies of trig-uprobe-nop");
    assert!(
        lines.contains(&"# body=count") && lines.contains(&"# body=ktime"),
        "{}",
        out.stdout
    );
    let row = |body: &str| {
        lines[table..]
            .iter()
            .find(|l| l.split_whitespace().next() == Some(body))
            .unwrap_or_else(|| panic!("no {body} row in:\n{}", out.stdout))
            .to_string()
    };
    assert!(row("count").contains("(reference)"));
    let cost = row("ktime");
    let figure = cost.split_whitespace().nth(5).unwrap_or_default();
    assert!(figure.starts_with(['+', '-']), "no cost in: {cost}");
    figure
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("not a number: {cost}"));

    // Two runs each: the cost has its interval; the ringbuf row its drops.
    let out = bench_ok("-q -w0 -d1 --runs 2 -c1 --sweep body=count,ringbuf trig-rawtp");
    let ringbuf = out
        .stdout
        .lines()
        .rfind(|l| l.split_whitespace().next() == Some("ringbuf"))
        .unwrap_or_else(|| panic!("no ringbuf row in:\n{}", out.stdout));
    assert!(
        ringbuf.contains("(95 % CI)") && ringbuf.ends_with('%'),
        "{ringbuf}"
    );
}

#[test]
fn bodies_are_kept_in_results_and_profiled() {
    let _lock = probe_lock();
    let (dir, json, out) =
        bench_ok_json("-q -w1 -d1 --profile --body hash --json {json} trig-usdt-nop");
    assert_has(&out.stdout, "top kernel functions");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(file["options"]["body"], "hash");
    assert_eq!(file["sweep"]["param"], "body");
    assert_eq!(
        file["sweep"]["labels"],
        serde_json::json!(["count", "hash"])
    );
    assert_eq!(file["runs"].as_array().map(Vec::len), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bodies_are_refused_where_they_do_not_apply() {
    let cases = table(
        "
        --body ringbuf -r 10 trig-uprobe-nop | give -c 1 (or more)
        --body ktime -c1 -r 10 trig-uprobe-nop | only --body ringbuf has consumers
        -c1 --sweep body=count,ktime trig-uprobe-nop | only --body ringbuf has consumers
        --body ktime -r 10 trig-syscall-count | --body does not apply to trig-syscall-count
        --body ktime -r 10 trig-kernel-count | --body does not apply to trig-kernel-count
        --body stack -r 10 rb-custom -c1 | -s/--stacktrace (--body stack) does not apply to rb-custom
        --body nothing trig-uprobe-nop | 'nothing' is not a body; the bodies are count, ktime, hash
        -s --body ktime trig-uprobe-nop | -s/--stacktrace is --body stack
        --read-bytes 8 --body ktime trig-uprobe-nop | give --body read-user too
        --read-bytes 5000 --body read-user trig-uprobe-nop | too large: at most 4096
        --sweep body=count,bogus trig-uprobe-nop | 'bogus' is not a body
        --sweep body=count,ktime --body hash trig-uprobe-nop | drop --body
        --sweep body=count trig-syscall-count | has no such option
        --probe --body ktime trig-syscall-count | --body does not apply to trig-syscall-count
        --body ringbuf -c 65 trig-uprobe-nop | at most 64 consumers
        --sweep body=count,ktime --plot x.svg trig-uprobe-nop | a sweep of bodies ends with its table of costs
        ",
    );
    for (args, needle) in cases {
        assert_one_clear_line(&bench(args), 2, needle);
    }
}

/// A kprobe benchmark with a body: on a kernel without kprobes it says
/// why, whatever the body; on one with them, the body runs and counts
/// every hit (10 calls of 100 triggers). `--probe` says the same.
#[test]
fn kernels_without_the_probe_say_why_whatever_the_body() {
    let _lock = probe_lock();
    let kprobes = !bench::kernel::config_is_off("CONFIG_KPROBES");
    let out = run(&["-q", "-r", "10", "--body", "ktime", "trig-kprobe"]);
    match kprobes {
        true => assert_eq!(fixed_counts(&out), (1000, 0), "{}", out.stdout),
        false => {
            assert_one_clear_line(&out, 4, "kprobes not available (CONFIG_KPROBES is not set)")
        }
    }
    let out = bench_ok("--probe --body ringbuf trig-kprobe trig-uprobe-nop");
    let line = |bench: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(bench))
            .unwrap_or_else(|| panic!("no {bench} line in:\n{}", out.stdout))
    };
    match kprobes {
        true => assert!(line("trig-kprobe").ends_with(" ok"), "{}", out.stdout),
        false => assert!(
            line("trig-kprobe").contains("unsupported: kprobes"),
            "{}",
            out.stdout
        ),
    }
    assert!(
        line("trig-uprobe-nop").contains(" ok (probe path: "),
        "{}",
        out.stdout
    );
}

/// `--body printk` says under its set-up line what it does to the shared
/// trace buffer; another body does not.
#[test]
fn printk_says_it_fills_the_shared_trace_buffer() {
    let note = "note: --body printk writes every hit into the kernel's one shared trace buffer";
    let out = bench_ok("-w0 -d1 --body printk trig-uprobe-nop");
    let setting_up = out
        .stdout
        .find("Setting up benchmark")
        .expect("a set-up line");
    let said = out
        .stdout
        .find(note)
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(said > setting_up, "{}", out.stdout);
    let out = bench_ok("-w0 -d1 --body ktime trig-uprobe-nop");
    assert!(
        !out.stdout.contains("note: --body printk"),
        "{}",
        out.stdout
    );
}
