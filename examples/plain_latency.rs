//! The yardstick of `--latency`: a plain loop that times each call of a
//! benchmark's target the same way (rdtscp then lfence on both sides) and
//! takes exact percentiles of the sorted times, alternated round by round
//! with the runner's timed producer on the same attached probe.
//!
//!     plain_latency [BENCHMARK] [ROUNDS] [CALLS]
//!
//! BENCHMARK is a uprobe, uretprobe or USDT benchmark, or a user-space
//! baseline (default trig-uprobe-nop); each round times CALLS calls
//! (default 1,000,000) plainly, then one second of the runner. Prints each
//! round's p50 and p99 from both, and the median of the p50 ratios. Needs
//! root, as the benchmark does.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench::benches;
use bench::latency::observer::LatencyObserver;
use bench::runner::affinity::{self, Affinity};
use bench::runner::phases::{RunObserver, RunSeconds};
use bench::runner::{run_timed, Prepared};
use bench::targets::Target;

#[cfg(target_arch = "x86_64")]
fn ticks() -> u64 {
    let mut aux = 0u32;
    // SAFETY: rdtscp and lfence have no preconditions on x86-64.
    unsafe {
        let t = std::arch::x86_64::__rdtscp(&mut aux);
        std::arch::x86_64::_mm_lfence();
        t
    }
}

/// Nanoseconds per tick, against the monotonic clock over 100 ms.
fn ns_per_tick() -> f64 {
    let (i0, t0) = (Instant::now(), ticks());
    std::thread::sleep(Duration::from_millis(100));
    let (i1, t1) = (Instant::now(), ticks());
    (i1 - i0).as_nanos() as f64 / (t1 - t0) as f64
}

/// `calls` calls of `target`, each timed; the sorted times in ns.
fn plain(target: unsafe extern "C" fn(), calls: usize, scale: f64) -> Vec<f64> {
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t0 = ticks();
        // SAFETY: every target takes and returns nothing.
        unsafe { target() };
        let t1 = ticks();
        times.push((t1 - t0) as f64 * scale);
    }
    times.sort_by(f64::total_cmp);
    times
}

fn at(sorted: &[f64], percentile: f64) -> f64 {
    let rank = ((percentile / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("trig-uprobe-nop", String::as_str);
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let calls: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let bench = benches::find(name).ok_or(format!("unknown benchmark {name}"))?;
    let target = match name {
        "trig-usdt-nop" => Target::UsdtNop,
        "trig-usdt-nop5" => Target::UsdtNop5,
        n if n.ends_with("-push") => Target::Push,
        n if n.ends_with("-ret") => Target::Ret,
        n if n.ends_with("-nop5") => Target::Nop5,
        _ => Target::Nop,
    };
    let mut config = bench.default_config().map_err(|e| e.to_string())?;
    config.latency = true;
    let Prepared::Producers(workload) = bench.setup(&config).map_err(|e| e.to_string())?.run else {
        return Err(format!("{name} runs attach cycles, not producers"));
    };
    let kinds = bench.ticked_kinds();
    let online = affinity::online_cpus().map_err(|e| e.to_string())?;
    let placement = affinity::place(&Affinity::None, 1, 0, &online).map_err(|e| e.to_string())?;
    let scale = ns_per_tick();
    let mut ratios = Vec::new();
    println!("round  plain p50   p99 | runner p50   p99 (ns) | ratio of p50s");
    for round in 1..=rounds {
        let times = target.with_fn(|f| plain(f, calls, scale));
        let mut latency = LatencyObserver::new(1, Some(0));
        let timing = RunSeconds {
            warmup_secs: 0,
            duration_secs: 1,
            tick_ms: bench::config::SECOND_MS,
        };
        run_timed(
            workload.as_ref(),
            &placement,
            timing,
            &kinds,
            &mut [&mut latency],
        )
        .map_err(|e| e.to_string())?;
        latency.tearing_down();
        let record = latency.finish(None);
        let p = record.percentiles;
        let ratio = p.p50 as f64 / at(&times, 50.0);
        ratios.push(ratio);
        println!(
            "{round:5} {:10.0} {:5.0} | {:10} {:5}          | {ratio:.3}",
            at(&times, 50.0),
            at(&times, 99.0),
            p.p50,
            p.p99
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio (runner / plain) of p50: {:.3}",
        ratios[ratios.len() / 2]
    );
    Ok(())
}
