//! The work of `trig-rawtp` and `trig-tp` without the runner: load the same
//! BPF object with libbpf, attach the counter, and call BPF_PROG_TEST_RUN on the
//! driver in a bare loop. The yardstick for `scripts/trigger_overhead.sh`.
//!
//!     plain_trigger <rawtp|tp> [SECONDS] [WARMUP] [BATCH]
//!
//! Prints the hit rate in M/s over SECONDS, after WARMUP seconds.

use std::os::fd::{AsFd, AsRawFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench::bpf::skel::trigger::TriggerSkelBuilder;
use bench::bpf::HitCounters;
use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

mod plain;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tp = match args.first().map(String::as_str) {
        Some("rawtp") => false,
        Some("tp") => true,
        _ => {
            eprintln!("usage: plain_trigger <rawtp|tp> [SECONDS] [WARMUP] [BATCH]");
            return ExitCode::from(2);
        }
    };
    let number = |i, default| plain::number(&args, i, default);
    let (secs, warmup, batch) = (number(1, 5), number(2, 1), number(3, 100));
    plain::print_rate("plain_trigger", run(tp, secs, warmup, batch as u32))
}

fn run(tp: bool, secs: u64, warmup: u64, batch: u32) -> Result<f64, String> {
    if tp {
        bench::kernel::ensure_tracefs()?;
    }
    let mut object = std::mem::MaybeUninit::uninit();
    let mut open = TriggerSkelBuilder::default()
        .open(&mut object)
        .map_err(|e| e.to_string())?;
    open.maps
        .rodata_data
        .as_deref_mut()
        .ok_or("no .rodata")?
        .batch_iters = batch;
    open.progs.drive_kfunc.set_autoload(true);
    if tp {
        open.progs.count_tp.set_autoload(true);
    } else {
        open.progs.count_rawtp.set_autoload(true);
    }
    let skel = open.load().map_err(|e| e.to_string())?;
    let prog = if tp {
        &skel.progs.count_tp
    } else {
        &skel.progs.count_rawtp
    };
    let _link = prog.attach().map_err(|e| e.to_string())?;
    // SAFETY: `hits` is counters.h's array, and `skel` outlives `hits`.
    let hits = unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..])) }
        .map_err(|e| e.to_string())?;
    let fd = skel.progs.drive_kfunc.as_fd().as_raw_fd();

    // All zero but its size: asks for no input or output.
    let mut opts = libbpf_sys::bpf_test_run_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
        ..Default::default()
    };
    let mut loop_for = |secs: u64| -> Result<(u64, Duration), String> {
        let before = hits.total();
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        loop {
            for _ in 0..64 {
                // SAFETY: fd is the loaded driver's; opts is valid for the call.
                if unsafe { libbpf_sys::bpf_prog_test_run_opts(fd, &mut opts) } < 0 {
                    return Err(std::io::Error::last_os_error().to_string());
                }
            }
            let now = Instant::now();
            if now >= end {
                return Ok((hits.total() - before, now - start));
            }
        }
    };
    loop_for(warmup)?;
    let (count, elapsed) = loop_for(secs)?;
    Ok(count as f64 / elapsed.as_secs_f64() / 1e6)
}
