//! The work of `rb-libbpf -c1 -a` without the runner: the same BPF object
//! and ring buffer, one producer thread calling getpgid() in a loop on CPU 1,
//! and a libbpf-rs RingBuffer polled on CPU 0 by the main thread, counting
//! records in its callback. The yardstick for `scripts/ringbuf_overhead.sh`.
//!
//!     plain_ringbuf [--b2b] [SECONDS] [WARMUP] [BATCH]
//!
//! Prints the consumed-record rate in M/s over SECONDS, after WARMUP seconds.
//! With --b2b, as `--rb-b2b`: one batch to start, then the consumer emits
//! the next one after every poll, and the producer thread does nothing else.
//!
//!     plain_ringbuf filter [ROUNDS]
//!
//! Measures what the family's trigger costs the other system calls of the
//! machine: getppid() in a loop for a quarter of a second with nothing
//! attached, with the family's program on the syscalls:sys_enter_getpgid
//! tracepoint, and with the alternative, a raw tracepoint on sys_enter whose
//! filter rejects every getppid, in turn, ROUNDS times; prints the median ns
//! per call with nothing attached and the medians of the per-round extra
//! cost of each.

use std::cell::Cell;
use std::os::fd::{AsFd, AsRawFd};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bench::bpf::skel::ringbuf::{OpenRingbufSkel, RingbufSkelBuilder};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{libbpf_sys, MapCore, MapFlags, MapHandle, MapType, RingBufferBuilder};

mod plain;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let b2b = args.first().map(String::as_str) == Some("--b2b");
    if b2b {
        args.remove(0);
    }
    if args.first().map(String::as_str) == Some("filter") {
        let rounds = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(21);
        return match filter_cost(rounds) {
            Ok((none, tp, rawtp)) => {
                println!(
                    "{none:.1} ns/call, tracepoint +{tp:.1} ns, raw tracepoint +{rawtp:.1} ns"
                );
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("plain_ringbuf: {err}");
                ExitCode::FAILURE
            }
        };
    }
    let number = |i, default| plain::number(&args, i, default);
    let (secs, warmup, batch) = (number(0, 5), number(1, 1), number(2, 500));
    plain::print_rate("plain_ringbuf", run(b2b, secs, warmup, batch as u32))
}

fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t with one bit set, for the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("cannot pin to CPU {cpu}"))
    }
}

fn trigger() {
    // SAFETY: getpgid(0) has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpgid, 0) };
}

/// The ring buffer object opened in `object` for this process, its producer
/// program to be loaded.
fn open_object(
    object: &mut std::mem::MaybeUninit<libbpf_rs::OpenObject>,
) -> Result<OpenRingbufSkel<'_>, String> {
    bench::kernel::ensure_tracefs()?;
    let mut open = RingbufSkelBuilder::default()
        .open(object)
        .map_err(|e| e.to_string())?;
    let rodata = open.maps.rodata_data.as_deref_mut().ok_or("no .rodata")?;
    rodata.tgid = std::process::id();
    open.progs.count_rb_produce.set_autoload(true);
    Ok(open)
}

fn run(b2b: bool, secs: u64, warmup: u64, batch: u32) -> Result<f64, String> {
    let mut object = std::mem::MaybeUninit::uninit();
    let mut open = open_object(&mut object)?;
    let rodata = open.maps.rodata_data.as_deref_mut().ok_or("no .rodata")?;
    rodata.batch_cnt = batch;
    rodata.nr_rings = 1;
    let skel = open.load().map_err(|e| e.to_string())?;

    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let ring = MapHandle::create(
        MapType::RingBuf,
        Some("plain_ring"),
        0,
        0,
        512 * 1024,
        &opts,
    )
    .map_err(|e| e.to_string())?;
    let fd = ring.as_fd().as_raw_fd() as u32;
    skel.maps
        .rings
        .update(&0u32.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| e.to_string())?;
    let count = Cell::new(0u64);
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&ring, |_| {
            count.set(count.get() + 1);
            0
        })
        .map_err(|e| e.to_string())?;
    let rb = builder.build().map_err(|e| e.to_string())?;
    let _link = skel
        .progs
        .count_rb_produce
        .attach()
        .map_err(|e| e.to_string())?;

    pin(0)?;
    let stop = AtomicBool::new(false);
    let rate = std::thread::scope(|scope| {
        let producer = scope.spawn(|| -> Result<(), String> {
            pin(1)?;
            if b2b {
                trigger();
                return Ok(());
            }
            while !stop.load(Ordering::Relaxed) {
                trigger();
            }
            Ok(())
        });
        let start = Instant::now();
        let measure_from = start + Duration::from_secs(warmup);
        let end = measure_from + Duration::from_secs(secs);
        let mut at_start = None;
        let result = loop {
            if rb.poll(Duration::from_millis(100)).is_err() {
                break Err("ring_buffer__poll failed".to_string());
            }
            if b2b {
                trigger();
            }
            let now = Instant::now();
            let seen = count.get();
            if at_start.is_none() && now >= measure_from {
                at_start = Some((seen, now));
            }
            if now >= end {
                let (before, from) = at_start.unwrap_or((0, start));
                break Ok((seen - before) as f64 / (now - from).as_secs_f64() / 1e6);
            }
        };
        stop.store(true, Ordering::Relaxed);
        producer
            .join()
            .map_err(|_| "the producer panicked".to_string())??;
        result
    });
    rate
}

/// ns per getppid() over a quarter of a second.
fn getppid_ns() -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < Duration::from_millis(250) {
        for _ in 0..64 {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::getppid() };
        }
        calls += 64;
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

/// The median ns per getppid() with nothing attached, and the medians of the
/// per-round extra cost with the classic and with the raw tracepoint.
fn filter_cost(rounds: usize) -> Result<(f64, f64, f64), String> {
    let mut object = std::mem::MaybeUninit::uninit();
    let mut open = open_object(&mut object)?;
    let rodata = open.maps.rodata_data.as_deref_mut().ok_or("no .rodata")?;
    rodata.syscall_nr = libc::SYS_getpgid as u64;
    open.progs.count_rawtp_sys_enter.set_autoload(true);
    let skel = open.load().map_err(|e| e.to_string())?;
    pin(0)?;
    let (mut none, mut tp, mut rawtp) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        let base = getppid_ns();
        none.push(base);
        let link = skel
            .progs
            .count_rb_produce
            .attach()
            .map_err(|e| e.to_string())?;
        tp.push(getppid_ns() - base);
        drop(link);
        let link = skel
            .progs
            .count_rawtp_sys_enter
            .attach()
            .map_err(|e| e.to_string())?;
        rawtp.push(getppid_ns() - base);
        drop(link);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok((median(&mut none), median(&mut tp), median(&mut rawtp)))
}
