//! The soak test: a two-minute run keeps its memory flat and its per-second
//! output steady. Not part of the default suite; run it with
//! `sudo scripts/soak.sh` (or `cargo test --release --test host soak:: -- --ignored`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
#[ignore = "takes two minutes: run by scripts/soak.sh"]
fn a_two_minute_run_keeps_memory_flat_and_output_steady() {
    let _lock = probe_lock();
    let mut child = Command::new(bench_bin())
        .args(["-q", "-w0", "-d120", "trig-uprobe-nop"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let sampler = std::thread::spawn(move || {
        let start = Instant::now();
        let mut rss = Vec::new();
        while start.elapsed() < Duration::from_secs(118) {
            if let Some(kib) = rss_kib(pid) {
                rss.push((start.elapsed().as_secs(), kib));
            }
            std::thread::sleep(Duration::from_secs(5));
        }
        rss
    });
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    assert!(child.wait().unwrap().success());
    let rss = sampler.join().unwrap();

    // Memory: once running (after 10 s), the resident set does not grow.
    let settled: Vec<u64> = rss
        .iter()
        .filter(|(t, _)| *t >= 10)
        .map(|(_, k)| *k)
        .collect();
    let (first, max) = (settled[0], *settled.iter().max().unwrap());
    println!("VmRSS over the run (s, KiB): {rss:?}");
    assert!(max <= first + 256, "RSS grew from {first} KiB to {max} KiB");

    // Output: one line a second, and rates that do not drift.
    let iters: Vec<f64> = lines
        .iter()
        .filter(|l| l.starts_with("Iter"))
        .map(|l| {
            l.split("hits")
                .nth(1)
                .unwrap()
                .trim()
                .split('M')
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(iters.len(), 120);
    assert!(lines.last().unwrap().starts_with("Summary: hits"));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (early, late) = (mean(&iters[..30]), mean(&iters[90..]));
    println!("first 30 s: {early:.3} M/s, last 30 s: {late:.3} M/s");
    assert!(
        (late / early - 1.0).abs() < 0.15,
        "the rate drifted from {early} to {late} M/s"
    );
}
