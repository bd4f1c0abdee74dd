//! The ring buffer family: producers make a BPF program emit records, into a
//! BPF ring buffer (`rb-*`) or the perf buffer (`pb-*`), and consumer threads
//! drain them. Hits are records consumed; drops are records the BPF side
//! could not reserve or output. Names and options follow the kernel's
//! `benchs/bench_ringbufs.c`.
//!
//! Each producer operation is one getpgid() system call, on which a program
//! on the syscalls:sys_enter_getpgid tracepoint (`bpf/ringbuf.bpf.c`) emits
//! `--rb-batch-cnt` records.
//! Each consumer owns one ring buffer (the BPF side writes to ring
//! `cpu % consumers`), or, for the perf buffer, the per-CPU buffers whose
//! index is its id modulo the consumer count.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType, RingBufferBuilder};

use super::{Benchmark, Info};
use crate::bpf::skel::ringbuf::{RingbufSkel, RingbufSkelBuilder};
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::config::{BenchOption, RunConfig};
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::affinity::online_cpus;
use crate::runner::{ConsumerCtx, Counts, ProducerCtx, Workload};

pub const B2B: BenchOption = BenchOption::flag(
    "rb-b2b",
    "Back-to-back mode: one producer starts, then each consumer emits the next batch after every wake-up",
);
pub const BATCH_CNT: BenchOption = BenchOption {
    long: "rb-batch-cnt",
    short: None,
    value_name: "CNT",
    help: "Records the BPF program emits per producer call",
    default: 500,
    min: 1,
    max: 4096,
    why_max: "the verifier walks every iteration of the batch loop",
};
pub const SAMPLED: BenchOption = BenchOption::flag(
    "rb-sampled",
    "Notification sampling: wake consumers once every --rb-sample-rate records",
);
pub const SAMPLE_RATE: BenchOption = BenchOption {
    long: "rb-sample-rate",
    short: None,
    value_name: "RATE",
    help: "Records per consumer wake-up with --rb-sampled",
    default: 500,
    min: 1,
    max: 1 << 20,
    why_max: "",
};
pub const USE_OUTPUT: BenchOption = BenchOption::flag(
    "rb-use-output",
    "Emit with bpf_ringbuf_output() (a copy) instead of reserve and submit",
);
pub const RINGBUF_SZ: BenchOption = BenchOption {
    long: "ringbuf-sz",
    short: None,
    value_name: "BYTES",
    help: "Size of each ring buffer, a power of two and a multiple of the page size",
    default: 512 * 1024,
    min: 4096,
    max: 1 << 30,
    why_max: "",
};
pub const PERFBUF_SZ: BenchOption = BenchOption {
    long: "perfbuf-sz",
    short: None,
    value_name: "PAGES",
    help: "Pages of each per-CPU perf buffer, a power of two",
    default: 128,
    min: 1,
    max: 1 << 16,
    why_max: "",
};

static RB_OPTIONS: [BenchOption; 6] =
    [B2B, BATCH_CNT, SAMPLED, SAMPLE_RATE, USE_OUTPUT, RINGBUF_SZ];
static PB_OPTIONS: [BenchOption; 5] = [B2B, BATCH_CNT, SAMPLED, SAMPLE_RATE, PERFBUF_SZ];

/// As many rings as `MAX_RINGS` in `bpf/ringbuf.bpf.c`, so many consumers.
const MAX_CONSUMERS: usize = 64;
/// A ring buffer record: 8 bytes of header, 8 of data.
const RECORD_BYTES: u64 = 16;

pub static BENCHES: &[&dyn Benchmark] = &[
    &buf(
        "rb-libbpf",
        "BPF ring buffer, drained by libbpf's consumer (libbpf-rs RingBuffer)",
        Kind::RbLibbpf,
        &RB_OPTIONS,
    ),
    &buf(
        "rb-custom",
        "BPF ring buffer, drained by a hand-written consumer over the mmapped ring",
        Kind::RbCustom,
        &RB_OPTIONS,
    ),
    &buf(
        "pb-libbpf",
        "perf buffer, drained by libbpf's perf_buffer consumer",
        Kind::PbLibbpf,
        &PB_OPTIONS,
    ),
    &buf(
        "pb-custom",
        "perf buffer, drained by a hand-written consumer over the mmapped per-CPU rings",
        Kind::PbCustom,
        &PB_OPTIONS,
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    RbLibbpf,
    RbCustom,
    PbLibbpf,
    PbCustom,
}

impl Kind {
    fn is_ringbuf(self) -> bool {
        matches!(self, Kind::RbLibbpf | Kind::RbCustom)
    }
}

struct BufBench {
    info: Info,
    kind: Kind,
}

const fn buf(
    name: &'static str,
    description: &'static str,
    kind: Kind,
    options: &'static [BenchOption],
) -> BufBench {
    BufBench {
        info: Info {
            consumers: true,
            ..Info::hits(name, description)
                .needs(Needs::TracepointEvent)
                .options(options)
        },
        kind,
    }
}

/// The options of one run, read once.
#[derive(Clone, Copy, Debug)]
struct Settings {
    b2b: bool,
    batch: u32,
    sampled: bool,
    rate: u64,
    use_output: bool,
    ringbuf_sz: u64,
    perfbuf_pages: u64,
}

impl Settings {
    fn new(kind: Kind, config: &RunConfig) -> Settings {
        let p = &config.params;
        Settings {
            b2b: p.get(&B2B) != 0,
            // Bounded by BATCH_CNT.max.
            batch: p.get(&BATCH_CNT) as u32,
            sampled: p.get(&SAMPLED) != 0,
            rate: p.get(&SAMPLE_RATE),
            use_output: kind.is_ringbuf() && p.get(&USE_OUTPUT) != 0,
            ringbuf_sz: if kind.is_ringbuf() {
                p.get(&RINGBUF_SZ)
            } else {
                RINGBUF_SZ.default
            },
            perfbuf_pages: if kind.is_ringbuf() {
                PERFBUF_SZ.default
            } else {
                p.get(&PERFBUF_SZ)
            },
        }
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

impl Benchmark for BufBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let s = Settings::new(self.kind, config);
        let name = self.info.name;
        if config.consumers == 0 {
            return Err(Error::usage(format!(
                "{name} drains its buffer with consumer threads: give -c 1 (or more)"
            )));
        }
        if config.consumers > MAX_CONSUMERS {
            return Err(Error::usage(format!(
                "{name} takes at most {MAX_CONSUMERS} consumers, got -c {}",
                config.consumers
            )));
        }
        if s.b2b && config.producers > 1 {
            return Err(Error::usage(format!(
                "--rb-b2b makes sense with one producer only (the consumers produce), got -p {}",
                config.producers
            )));
        }
        if s.b2b && config.repeat.is_some() {
            return Err(Error::usage(
                "--rb-b2b does not combine with --repeat: its consumers produce, so no \
                 producer quota bounds the work",
            ));
        }
        if s.b2b && s.sampled && s.rate > u64::from(s.batch) {
            return Err(Error::usage(format!(
                "--rb-sample-rate {} is larger than --rb-batch-cnt {}: in back-to-back mode \
                 no batch would ever wake the consumer",
                s.rate, s.batch
            )));
        }
        let page = page_size();
        if self.kind.is_ringbuf() && (!s.ringbuf_sz.is_power_of_two() || s.ringbuf_sz < page) {
            return Err(Error::usage(format!(
                "--ringbuf-sz must be a power of two and at least a page ({page} bytes), got {}",
                s.ringbuf_sz
            )));
        }
        if !self.kind.is_ringbuf() && !s.perfbuf_pages.is_power_of_two() {
            return Err(Error::usage(format!(
                "--perfbuf-sz must be a power of two, got {}",
                s.perfbuf_pages
            )));
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let s = Settings::new(self.kind, config);
        // The tracepoint's id is read from tracefs.
        kernel::ensure_tracefs().map_err(Error::unsupported)?;
        // --probe sets up with no consumers: one ring still has to exist.
        let consumers = config.consumers.clamp(1, MAX_CONSUMERS);
        let mut open = RingbufSkelBuilder::default()
            .open(bpf::object_storage())
            .map_err(|e| bpf::load_error("the ring buffer BPF object", &e))?;
        let rodata = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the ring buffer object has no .rodata"))?;
        rodata.batch_cnt = s.batch;
        rodata.use_output = u32::from(s.use_output);
        rodata.wakeup_data_size = if s.sampled { s.rate * RECORD_BYTES } else { 0 };
        rodata.nr_rings = consumers as u32;
        rodata.tgid = std::process::id();
        if self.kind.is_ringbuf() {
            open.progs.rb_produce.set_autoload(true);
        } else {
            open.progs.pb_produce.set_autoload(true);
        }
        let skel = open
            .load()
            .map_err(|e| bpf::load_error("the ring buffer programs", &e))?;

        let possible = libbpf_rs::num_possible_cpus()
            .map_err(|e| Error::setup(format!("cannot count the possible CPUs: {e}")))?;
        let consumed: Box<[PaddedCounter]> = (0..possible.max(consumers))
            .map(|_| PaddedCounter::default())
            .collect();
        let buffers = match self.kind {
            Kind::RbLibbpf | Kind::RbCustom => {
                let rings = create_rings(&skel, consumers, s.ringbuf_sz)?;
                if self.kind == Kind::RbLibbpf {
                    Buffers::RbLibbpf(rings)
                } else {
                    let mapped = rings
                        .iter()
                        .map(|ring| MappedRing::new(ring, s.ringbuf_sz))
                        .collect::<Result<Vec<_>>>()?;
                    Buffers::RbCustom {
                        mapped,
                        _rings: rings,
                    }
                }
            }
            Kind::PbLibbpf => Buffers::PbLibbpf(LibbpfPerfBuffer::new(&skel, &s, &consumed)?),
            Kind::PbCustom => Buffers::PbCustom(PerfRings::new(&skel, &s)?),
        };
        let epolls = consumer_epolls(&buffers, consumers)?;
        // SAFETY: `drops` has counters.h's slot layout, and the skeleton is
        // kept in the workload, dropped after the counters.
        let drops =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.drops[..]))? };
        // Attached last: nothing is emitted before every buffer is in place.
        let prog = if self.kind.is_ringbuf() {
            &skel.progs.rb_produce
        } else {
            &skel.progs.pb_produce
        };
        let link = prog
            .attach()
            .map_err(|e| bpf::attach_error("the syscalls:sys_enter_getpgid tracepoint", &e))?;
        Ok(Box::new(BufWorkload {
            _link: link,
            epolls,
            buffers,
            consumed,
            consumers,
            drops,
            b2b: s.b2b,
            _skel: skel,
        }))
    }
}

/// Creates one ring buffer per consumer and puts it in the program's array.
fn create_rings(skel: &RingbufSkel<'_>, count: usize, size: u64) -> Result<Vec<MapHandle>> {
    let size = u32::try_from(size)
        .map_err(|_| Error::usage(format!("--ringbuf-sz {size} is too large")))?;
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    (0..count)
        .map(|i| {
            let ring = MapHandle::create(MapType::RingBuf, Some("bench_ring"), 0, 0, size, &opts)
                .map_err(|e| bpf::load_error("a ring buffer map", &e))?;
            let fd = ring.as_fd().as_raw_fd() as u32;
            skel.maps
                .rings
                .update(&(i as u32).to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| Error::setup(format!("cannot install ring buffer {i}: {e}")))?;
            Ok(ring)
        })
        .collect()
}

/// A counter alone on its cache line, so consumers never share one.
#[repr(align(128))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

impl PaddedCounter {
    #[inline(always)]
    fn add(&self, n: u64) {
        // Only one consumer writes a given counter: a plain load and store is
        // exact and cheaper than an atomic add.
        let c = &self.0;
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

enum Buffers {
    RbLibbpf(Vec<MapHandle>),
    RbCustom {
        mapped: Vec<MappedRing>,
        // After `mapped`: the mappings go before the maps are closed.
        _rings: Vec<MapHandle>,
    },
    PbLibbpf(LibbpfPerfBuffer),
    PbCustom(PerfRings),
}

struct BufWorkload {
    // Fields drop in order: detach first, then the buffers, then the object.
    _link: Link,
    /// Each consumer's epoll set over its share of the buffers (none for
    /// rb-libbpf, and for pb-libbpf with one consumer: libbpf has its own).
    epolls: Vec<Epoll>,
    buffers: Buffers,
    /// Records consumed: by consumer id, or for pb-libbpf by CPU.
    consumed: Box<[PaddedCounter]>,
    consumers: usize,
    drops: HitCounters,
    b2b: bool,
    _skel: RingbufSkel<'static>,
}

/// Which buffers consumer `id` of `consumers` drains: every one whose index
/// is `id` modulo the count.
fn share(buffers: usize, consumers: usize, id: usize) -> impl Iterator<Item = usize> {
    (0..buffers).filter(move |idx| idx % consumers == id)
}

/// Builds every consumer's epoll set before anything is emitted. It matters
/// for perf events: their readiness is consumed by the first look, which
/// epoll_ctl takes, so a wake-up that lands before its fd joins the set would
/// be lost and the consumer would sleep on data that is there.
fn consumer_epolls(buffers: &Buffers, consumers: usize) -> Result<Vec<Epoll>> {
    let fds: Vec<RawFd> = match buffers {
        Buffers::RbLibbpf(_) => return Ok(Vec::new()),
        Buffers::PbLibbpf(_) if consumers == 1 => return Ok(Vec::new()),
        Buffers::RbCustom { mapped, .. } => mapped.iter().map(|r| r.fd).collect(),
        Buffers::PbLibbpf(pb) => (0..pb.buffer_count())
            .map(|idx| pb.buffer_fd(idx))
            .collect::<Result<_>>()?,
        Buffers::PbCustom(rings) => rings.rings.iter().map(|r| r.fd.as_raw_fd()).collect(),
    };
    (0..consumers)
        .map(|id| {
            let epoll = Epoll::new()?;
            for idx in share(fds.len(), consumers, id) {
                epoll.add(fds[idx], idx as u64)?;
            }
            Ok(epoll)
        })
        .collect()
}

/// One producer operation: the system call the BPF program emits on.
#[inline(always)]
fn trigger() {
    // SAFETY: getpgid(0) has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpgid, 0) };
}

/// Whether a libbpf or system call result is "interrupted": the runner's
/// wake-up at the end of a run.
fn interrupted(rc: i32) -> bool {
    rc == -libc::EINTR
}

fn os_error(what: &str, rc: i32) -> Error {
    Error::runtime(format!(
        "{what} failed: {}",
        std::io::Error::from_raw_os_error(rc.saturating_abs())
    ))
}

impl Workload for BufWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        if self.b2b {
            // One batch to start; from then on the consumers produce.
            let mut started = false;
            return ctx.try_run(|| {
                if started {
                    ctx.wait_for_stop();
                    return Ok(0);
                }
                started = true;
                trigger();
                Ok(1)
            });
        }
        ctx.run(trigger);
        Ok(())
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        match &self.buffers {
            Buffers::RbLibbpf(rings) => self.consume_rb_libbpf(ctx, &rings[ctx.id]),
            Buffers::RbCustom { mapped, .. } => self.consume_rb_custom(ctx, &mapped[ctx.id]),
            Buffers::PbLibbpf(pb) => self.consume_pb_libbpf(ctx, pb),
            Buffers::PbCustom(rings) => self.consume_pb_custom(ctx, rings),
        }
    }

    fn measure(&self, _ops: u64) -> Counts {
        Counts {
            hits: self
                .consumed
                .iter()
                .map(|c| c.0.load(Ordering::Relaxed))
                .sum(),
            drops: self.drops.total(),
        }
    }
}

impl BufWorkload {
    /// The loop every consumer runs: wait and process until the run stops,
    /// then drain what is left. `wait` returns false when it was interrupted.
    fn consume_loop(
        &self,
        ctx: &ConsumerCtx<'_>,
        mut wait: impl FnMut() -> Result<bool>,
        drain: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        while !ctx.should_stop() {
            if wait()? && self.b2b {
                trigger();
            }
        }
        drain()
    }

    fn consume_rb_libbpf(&self, ctx: &ConsumerCtx<'_>, ring: &MapHandle) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        let mut builder = RingBufferBuilder::new();
        builder
            .add(ring, |_record: &[u8]| {
                counter.add(1);
                0
            })
            .map_err(|e| Error::runtime(format!("cannot add the ring buffer: {e}")))?;
        let rb = builder
            .build()
            .map_err(|e| Error::runtime(format!("cannot set up the ring buffer consumer: {e}")))?;
        self.consume_loop(
            ctx,
            || match rb.poll_raw(Duration::MAX) {
                rc if rc >= 0 => Ok(true),
                rc if interrupted(rc) => Ok(false),
                rc => Err(os_error("ring_buffer__poll", rc)),
            },
            || match rb.consume_raw() {
                rc if rc >= 0 => Ok(()),
                rc => Err(os_error("ring_buffer__consume", rc)),
            },
        )
    }

    fn consume_rb_custom(&self, ctx: &ConsumerCtx<'_>, ring: &MappedRing) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        let epoll = &self.epolls[ctx.id];
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        self.consume_loop(
            ctx,
            || {
                let ready = epoll.wait(&mut events)?;
                if ready > 0 {
                    counter.add(ring.process());
                }
                Ok(ready > 0)
            },
            || {
                counter.add(ring.process());
                Ok(())
            },
        )
    }

    fn consume_pb_libbpf(&self, ctx: &ConsumerCtx<'_>, pb: &LibbpfPerfBuffer) -> Result<()> {
        if self.consumers == 1 {
            // One consumer: libbpf's own loop over every CPU's buffer.
            return self.consume_loop(
                ctx,
                || match pb.poll() {
                    rc if rc >= 0 => Ok(true),
                    rc if interrupted(rc) => Ok(false),
                    rc => Err(os_error("perf_buffer__poll", rc)),
                },
                || match pb.consume() {
                    rc if rc >= 0 => Ok(()),
                    rc => Err(os_error("perf_buffer__consume", rc)),
                },
            );
        }
        // Several: each waits on its own share of the buffers.
        let mine: Vec<usize> = share(pb.buffer_count(), self.consumers, ctx.id).collect();
        let epoll = &self.epolls[ctx.id];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; mine.len().max(1)];
        self.consume_loop(
            ctx,
            || {
                let ready = epoll.wait(&mut events)?;
                for event in &events[..ready] {
                    pb.consume_buffer(event.u64 as usize)?;
                }
                Ok(ready > 0)
            },
            || mine.iter().try_for_each(|&idx| pb.consume_buffer(idx)),
        )
    }

    fn consume_pb_custom(&self, ctx: &ConsumerCtx<'_>, rings: &PerfRings) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        let mine: Vec<usize> = share(rings.rings.len(), self.consumers, ctx.id).collect();
        let epoll = &self.epolls[ctx.id];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; mine.len().max(1)];
        let process = |idx: usize| counter.add(rings.rings[idx].process(rings.data_size));
        self.consume_loop(
            ctx,
            || {
                let ready = epoll.wait(&mut events)?;
                for event in &events[..ready] {
                    process(event.u64 as usize);
                }
                Ok(ready > 0)
            },
            || {
                mine.iter().for_each(|&idx| process(idx));
                Ok(())
            },
        )
    }
}

/// An epoll instance of a consumer's own.
struct Epoll(OwnedFd);

impl Epoll {
    fn new() -> Result<Epoll> {
        // SAFETY: epoll_create1 has no preconditions.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Error::runtime(format!(
                "epoll_create1 failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a new descriptor that nothing else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn add(&self, fd: RawFd, data: u64) -> Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: data,
        };
        // SAFETY: both descriptors are open and `event` is valid for the call.
        let rc =
            unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) };
        if rc < 0 {
            return Err(Error::setup(format!(
                "epoll_ctl failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// Blocks until a buffer is ready; 0 when interrupted.
    fn wait(&self, events: &mut [libc::epoll_event]) -> Result<usize> {
        // SAFETY: `events` is valid for as many entries as passed.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                -1,
            )
        };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(Error::runtime(format!("epoll_wait failed: {err}")));
        }
        Ok(n as usize)
    }
}

/// A BPF ring buffer mapped for a hand-written consumer: the consumer
/// position page writable, the producer position page and the data (mapped
/// twice in a row by the kernel, so no record wraps) read-only.
struct MappedRing {
    fd: RawFd,
    consumer: NonNull<u8>,
    producer: NonNull<u8>,
    page: usize,
    size: usize,
}

// SAFETY: the mappings are owned by this value and each ring is read and
// advanced by exactly one consumer thread.
unsafe impl Send for MappedRing {}
unsafe impl Sync for MappedRing {}

const RINGBUF_BUSY_BIT: u32 = 1 << 31;
const RINGBUF_DISCARD_BIT: u32 = 1 << 30;
const RINGBUF_HDR_SZ: u64 = 8;

impl MappedRing {
    fn new(ring: &MapHandle, size: u64) -> Result<MappedRing> {
        let fd = ring.as_fd().as_raw_fd();
        let page = page_size() as usize;
        let size = size as usize;
        let map = |len: usize, prot: i32, offset: usize| -> Result<NonNull<u8>> {
            // SAFETY: mapping a ring buffer map's fd as the kernel documents.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd,
                    offset as libc::off_t,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(Error::setup(format!(
                    "cannot map the ring buffer: {}",
                    std::io::Error::last_os_error()
                )));
            }
            NonNull::new(ptr.cast()).ok_or_else(|| Error::setup("mmap returned NULL"))
        };
        let consumer = map(page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = match map(page + 2 * size, libc::PROT_READ, page) {
            Ok(p) => p,
            Err(err) => {
                // SAFETY: unmapping what was just mapped.
                unsafe { libc::munmap(consumer.as_ptr().cast(), page) };
                return Err(err);
            }
        };
        Ok(MappedRing {
            fd,
            consumer,
            producer,
            page,
            size,
        })
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the position is the first, 8-byte aligned word of its page.
        unsafe { AtomicU64::from_ptr(self.consumer.as_ptr().cast()) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: as above.
        unsafe { AtomicU64::from_ptr(self.producer.as_ptr().cast()) }
    }

    /// Consumes every committed record; returns how many there were
    /// (discarded ones are skipped, not counted).
    fn process(&self) -> u64 {
        let mask = self.size as u64 - 1;
        // SAFETY: the data area follows the producer page.
        let data = unsafe { self.producer.as_ptr().add(self.page) };
        let mut cons = self.consumer_pos().load(Ordering::Acquire);
        let mut count = 0;
        loop {
            let prod = self.producer_pos().load(Ordering::Acquire);
            let start = cons;
            while cons < prod {
                // SAFETY: headers are 8-byte aligned inside the data area.
                let header =
                    unsafe { AtomicU32::from_ptr(data.add((cons & mask) as usize).cast()) };
                let len = header.load(Ordering::Acquire);
                if len & RINGBUF_BUSY_BIT != 0 {
                    break;
                }
                if len & RINGBUF_DISCARD_BIT == 0 {
                    count += 1;
                }
                let body = u64::from(len & !(RINGBUF_BUSY_BIT | RINGBUF_DISCARD_BIT));
                cons += (body + RINGBUF_HDR_SZ + 7) & !7;
            }
            if cons == start {
                return count;
            }
            self.consumer_pos().store(cons, Ordering::Release);
            // A busy record stops the pass; look again only if it moved on.
            if cons < prod {
                return count;
            }
        }
    }
}

impl Drop for MappedRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the two mappings made in `new`.
        unsafe {
            libc::munmap(self.consumer.as_ptr().cast(), self.page);
            libc::munmap(self.producer.as_ptr().cast(), self.page + 2 * self.size);
        }
    }
}

/// A perf buffer sample of ours: 8 bytes of header, the 4-byte raw size and
/// the 8 bytes of data, padded to 8 bytes.
const PERF_SAMPLE_BYTES: u64 = 24;

/// The perf event attributes both perf buffer consumers use: BPF output
/// events, a wake-up every record or, with --rb-sampled, every RATE records.
fn perf_attr(s: &Settings) -> libbpf_sys::perf_event_attr {
    let mut attr = libbpf_sys::perf_event_attr {
        type_: libbpf_sys::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32,
        config: u64::from(libbpf_sys::PERF_COUNT_SW_BPF_OUTPUT),
        __bindgen_anon_1: libbpf_sys::perf_event_attr__bindgen_ty_1 { sample_period: 1 },
        sample_type: u64::from(libbpf_sys::PERF_SAMPLE_RAW),
        __bindgen_anon_2: libbpf_sys::perf_event_attr__bindgen_ty_2 { wakeup_events: 1 },
        ..Default::default()
    };
    if s.sampled {
        // Sampling by wakeup_events (upstream's way) is not sampling alone:
        // without a watermark the kernel also wakes the reader whenever half
        // the buffer has been written, so a fast consumer is woken over and
        // over whatever the rate. A watermark of RATE samples' bytes wakes it
        // every RATE records and at no other time, as the ring buffer
        // variants do by the data waiting (the kernel caps it at the buffer's
        // size: a rate the buffer cannot hold never wakes). The kernel wakes
        // once more than the watermark is written, hence one byte less.
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark =
            u32::try_from(s.rate * PERF_SAMPLE_BYTES - 1).unwrap_or(u32::MAX);
    }
    attr
}

/// libbpf's perf buffer through libbpf-sys: libbpf-rs's PerfBufferBuilder
/// cannot set the wake-up period that --rb-sampled needs.
struct LibbpfPerfBuffer {
    pb: NonNull<libbpf_sys::perf_buffer>,
    /// What the sample callback gets: on the heap, so it stays put.
    _counters: Box<CounterSlice>,
}

/// The workload's per-CPU counters as the C callback sees them.
struct CounterSlice {
    first: *const PaddedCounter,
    len: usize,
}

// SAFETY: with one consumer only it polls; with several, each consumes only
// its own buffers, and libbpf keeps each buffer's state apart.
unsafe impl Send for LibbpfPerfBuffer {}
unsafe impl Sync for LibbpfPerfBuffer {}

/// Counts each sample into the counter of the CPU it came from.
unsafe extern "C" fn count_perf_sample(
    ctx: *mut libc::c_void,
    cpu: libc::c_int,
    event: *mut libbpf_sys::perf_event_header,
) -> libbpf_sys::bpf_perf_event_ret {
    // SAFETY: ctx is a CounterSlice over the workload's counters, which
    // outlive the perf buffer (see BufWorkload's field order), and libbpf
    // passes a valid header.
    unsafe {
        let counters = &*(ctx as *const CounterSlice);
        let cpu = cpu as usize;
        if (*event).type_ == libbpf_sys::PERF_RECORD_SAMPLE && cpu < counters.len {
            (*counters.first.add(cpu)).add(1);
        }
    }
    libbpf_sys::LIBBPF_PERF_EVENT_CONT
}

impl LibbpfPerfBuffer {
    fn new(
        skel: &RingbufSkel<'_>,
        s: &Settings,
        counters: &[PaddedCounter],
    ) -> Result<LibbpfPerfBuffer> {
        let mut attr = perf_attr(s);
        let slice = Box::new(CounterSlice {
            first: counters.as_ptr(),
            len: counters.len(),
        });
        let opts = libbpf_sys::perf_buffer_raw_opts {
            sz: std::mem::size_of::<libbpf_sys::perf_buffer_raw_opts>() as _,
            ..Default::default()
        };
        // SAFETY: valid map fd, attr and opts; ctx points at the boxed slice,
        // which lives as long as the perf buffer.
        let pb = unsafe {
            libbpf_sys::perf_buffer__new_raw(
                skel.maps.perfbuf.as_fd().as_raw_fd(),
                s.perfbuf_pages as _,
                &mut attr,
                Some(count_perf_sample),
                &*slice as *const CounterSlice as *mut libc::c_void,
                &opts,
            )
        };
        let pb = NonNull::new(pb).ok_or_else(|| {
            Error::setup(format!(
                "cannot set up libbpf's perf buffer: {}",
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(LibbpfPerfBuffer {
            pb,
            _counters: slice,
        })
    }

    fn poll(&self) -> i32 {
        // SAFETY: a live perf buffer; see the Sync note.
        unsafe { libbpf_sys::perf_buffer__poll(self.pb.as_ptr(), -1) }
    }

    fn consume(&self) -> i32 {
        // SAFETY: as above.
        unsafe { libbpf_sys::perf_buffer__consume(self.pb.as_ptr()) }
    }

    fn buffer_count(&self) -> usize {
        // SAFETY: as above.
        unsafe { libbpf_sys::perf_buffer__buffer_cnt(self.pb.as_ptr()) as usize }
    }

    fn buffer_fd(&self, idx: usize) -> Result<RawFd> {
        // SAFETY: as above; libbpf checks the index.
        match unsafe { libbpf_sys::perf_buffer__buffer_fd(self.pb.as_ptr(), idx as _) } {
            fd if fd >= 0 => Ok(fd),
            rc => Err(os_error("perf_buffer__buffer_fd", rc)),
        }
    }

    fn consume_buffer(&self, idx: usize) -> Result<()> {
        // SAFETY: as above; only this consumer touches buffer `idx`.
        match unsafe { libbpf_sys::perf_buffer__consume_buffer(self.pb.as_ptr(), idx as _) } {
            rc if rc >= 0 => Ok(()),
            rc => Err(os_error("perf_buffer__consume_buffer", rc)),
        }
    }
}

impl Drop for LibbpfPerfBuffer {
    fn drop(&mut self) {
        // SAFETY: freed once, after every consumer has returned.
        unsafe { libbpf_sys::perf_buffer__free(self.pb.as_ptr()) };
    }
}

/// From linux/perf_event.h, which the libc crate does not carry.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// Per-CPU perf rings opened and mapped by hand, for pb-custom.
struct PerfRings {
    rings: Vec<PerfRing>,
    data_size: usize,
}

struct PerfRing {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: each ring is read and advanced by exactly one consumer thread.
unsafe impl Send for PerfRing {}
unsafe impl Sync for PerfRing {}

impl PerfRings {
    fn new(skel: &RingbufSkel<'_>, s: &Settings) -> Result<PerfRings> {
        let page = page_size() as usize;
        let data_size = page * s.perfbuf_pages as usize;
        let attr = perf_attr(s);
        let mut rings = Vec::new();
        for cpu in online_cpus()? {
            // SAFETY: a valid attr; the result is checked.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr,
                    -1,
                    cpu as libc::c_int,
                    -1,
                    PERF_FLAG_FD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(Error::setup(format!(
                    "cannot open the BPF output event of CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // SAFETY: a new descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
            let len = page + data_size;
            // SAFETY: mapping a perf event's ring as perf_event_open(2) documents.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(Error::setup(format!(
                    "cannot map the perf ring of CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let base =
                NonNull::new(base.cast()).ok_or_else(|| Error::setup("mmap returned NULL"))?;
            let ring = PerfRing { fd, base, len };
            // SAFETY: enabling the event we own.
            if unsafe { libc::ioctl(ring.fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) } < 0 {
                return Err(Error::setup(format!(
                    "cannot enable the BPF output event of CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let fd = ring.fd.as_raw_fd() as u32;
            skel.maps
                .perfbuf
                .update(
                    &(cpu as u32).to_ne_bytes(),
                    &fd.to_ne_bytes(),
                    MapFlags::ANY,
                )
                .map_err(|e| {
                    Error::setup(format!("cannot install the perf ring of CPU {cpu}: {e}"))
                })?;
            rings.push(ring);
        }
        Ok(PerfRings { rings, data_size })
    }
}

impl PerfRing {
    /// Consumes every record in the ring; returns how many were samples.
    fn process(&self, data_size: usize) -> u64 {
        use libbpf_sys::perf_event_mmap_page as Page;
        let at = |offset: usize| {
            // SAFETY: data_head and data_tail are aligned u64 fields of the
            // mapped control page.
            unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }
        };
        let head = at(std::mem::offset_of!(Page, data_head)).load(Ordering::Acquire);
        let tail_word = at(std::mem::offset_of!(Page, data_tail));
        let mut tail = tail_word.load(Ordering::Relaxed);
        let mask = data_size as u64 - 1;
        let page = self.len - data_size;
        let mut count = 0;
        while tail < head {
            // SAFETY: records are 8-byte aligned, so a header never wraps.
            let header = unsafe {
                &*(self.base.as_ptr().add(page + (tail & mask) as usize)
                    as *const libbpf_sys::perf_event_header)
            };
            if header.type_ == libbpf_sys::PERF_RECORD_SAMPLE {
                count += 1;
            }
            tail += u64::from(header.size);
        }
        tail_word.store(tail, Ordering::Release);
        count
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `PerfRings::new`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benches::resolve_params;

    fn config(bench: &dyn Benchmark, given: &[(&'static str, u64)]) -> RunConfig {
        RunConfig {
            consumers: 1,
            params: resolve_params(bench, given).unwrap(),
            ..bench.default_config().unwrap()
        }
    }

    #[test]
    fn options_follow_the_kernel_runner() {
        let rb = super::super::find("rb-libbpf").unwrap();
        let c = config(rb, &[]);
        let s = Settings::new(Kind::RbLibbpf, &c);
        assert_eq!((s.batch, s.rate, s.ringbuf_sz), (500, 500, 512 * 1024));
        assert!(!s.b2b && !s.sampled && !s.use_output);
        let pb = super::super::find("pb-custom").unwrap();
        assert_eq!(
            Settings::new(Kind::PbCustom, &config(pb, &[])).perfbuf_pages,
            128
        );
        assert!(resolve_params(pb, &[("rb-use-output", 1)]).is_err());
    }

    #[test]
    fn impossible_configurations_are_refused() {
        let rb = super::super::find("rb-custom").unwrap();
        let mut c = config(rb, &[]);
        c.consumers = 0;
        assert!(rb.validate(&c).unwrap_err().to_string().contains("-c 1"));
        let mut c = config(rb, &[("rb-b2b", 1)]);
        c.producers = 2;
        assert!(rb.validate(&c).is_err());
        let mut c = config(rb, &[("rb-b2b", 1)]);
        c.repeat = Some(10);
        assert!(rb.validate(&c).is_err());
        let c = config(rb, &[("ringbuf-sz", 12288)]);
        assert!(rb.validate(&c).is_err());
        let c = config(
            rb,
            &[("rb-b2b", 1), ("rb-sampled", 1), ("rb-batch-cnt", 10)],
        );
        assert!(rb.validate(&c).is_err());
        assert!(rb.validate(&config(rb, &[])).is_ok());
    }
}
