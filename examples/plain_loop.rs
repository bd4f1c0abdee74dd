//! The work of `trig-usermode-count` and `trig-syscall-count` without the
//! harness: one thread, a bare loop, a local counter. It is the yardstick that
//! `scripts/harness_overhead.sh` compares the runner against.
//!
//!     plain_loop <nop|getpgid> [SECONDS] [WARMUP]
//!
//! Prints the rate in M/s over SECONDS, after WARMUP seconds of the same loop.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench::targets;

fn getpgid() {
    // SAFETY: getpgid(0) only reads the caller's process group.
    black_box(unsafe { libc::syscall(libc::SYS_getpgid, 0) });
}

/// Calls `op` for `secs` seconds; reads the clock once every 4096 calls.
/// Generic, so that the call to the target is as direct as the runner's.
fn count_for(secs: u64, op: impl Fn()) -> (u64, Duration) {
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut calls = 0u64;
    loop {
        for _ in 0..4096 {
            op();
        }
        calls += 4096;
        let now = Instant::now();
        if now >= end {
            return (calls, now - start);
        }
    }
}

/// Warms up, then measures; generic so that each operation is called directly.
fn measure<F: Fn() + Copy>(secs: u64, warmup: u64, op: F) -> (u64, Duration) {
    count_for(warmup, op);
    count_for(secs, op)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (secs, warmup) = (number(1, 5), number(2, 1));
    let (calls, elapsed) = match args.first().map(String::as_str) {
        Some("nop") => measure(secs, warmup, targets::call_nop),
        Some("getpgid") => measure(secs, warmup, getpgid),
        _ => {
            eprintln!("usage: plain_loop <nop|getpgid> [SECONDS] [WARMUP]");
            return ExitCode::from(2);
        }
    };
    println!("{:.3}", calls as f64 / elapsed.as_secs_f64() / 1e6);
    ExitCode::SUCCESS
}
