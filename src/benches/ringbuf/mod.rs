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

mod counter;
mod epoll;
mod perf_buffer;
mod perf_rings;
mod ring;
mod sys;
mod workload;

use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

pub(crate) use self::counter::PaddedCounter;
pub(crate) use self::epoll::Epoll;
use self::perf_buffer::LibbpfPerfBuffer;
use self::perf_rings::PerfRings;
pub(crate) use self::ring::MappedRing;
use self::workload::{consumer_epolls, BufWorkload, Buffers};
use super::{memory, Benchmark, Info, Workers};
use crate::bpf::skel::ringbuf::{RingbufSkel, RingbufSkelBuilder};
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::SetUp;

pub const B2B: FlagOption = FlagOption {
    long: "rb-b2b",
    help: "Back-to-back mode: one producer starts, then each consumer emits the next batch after every wake-up",
    output_only: false,
};
pub const BATCH_CNT: NumberOption = NumberOption {
    long: "rb-batch-cnt",
    short: None,
    value_name: "CNT",
    help: "Records the BPF program emits per producer call",
    default: 500,
    min: 1,
    max: 4096,
    why_max: "the verifier walks every iteration of the batch loop",
};
pub const SAMPLED: FlagOption = FlagOption {
    long: "rb-sampled",
    help: "Notification sampling: wake consumers once every --rb-sample-rate records",
    output_only: false,
};
pub const SAMPLE_RATE: NumberOption = NumberOption {
    long: "rb-sample-rate",
    short: None,
    value_name: "RATE",
    help: "Records per consumer wake-up with --rb-sampled",
    default: 500,
    min: 1,
    max: 1 << 20,
    why_max: "",
};
pub const USE_OUTPUT: FlagOption = FlagOption {
    long: "rb-use-output",
    help: "Emit with bpf_ringbuf_output() (a copy) instead of reserve and submit",
    output_only: false,
};
pub const RINGBUF_SZ: NumberOption = NumberOption {
    long: "ringbuf-sz",
    short: None,
    value_name: "BYTES",
    help: "Size of each ring buffer, a power of two and a multiple of the page size; one per \
           consumer, all within half the available memory",
    default: 512 * 1024,
    min: 4096,
    max: 1 << 30,
    why_max: "",
};
pub const PERFBUF_SZ: NumberOption = NumberOption {
    long: "perfbuf-sz",
    short: None,
    value_name: "PAGES",
    help: "Pages of each per-CPU perf buffer, a power of two; all within half the available \
           memory",
    default: 128,
    min: 1,
    max: 1 << 16,
    why_max: "",
};

static RB_OPTIONS: [BenchOption; 6] = [
    BenchOption::Flag(B2B),
    BenchOption::Number(BATCH_CNT),
    BenchOption::Flag(SAMPLED),
    BenchOption::Number(SAMPLE_RATE),
    BenchOption::Flag(USE_OUTPUT),
    BenchOption::Number(RINGBUF_SZ),
];
static PB_OPTIONS: [BenchOption; 5] = [
    BenchOption::Flag(B2B),
    BenchOption::Number(BATCH_CNT),
    BenchOption::Flag(SAMPLED),
    BenchOption::Number(SAMPLE_RATE),
    BenchOption::Number(PERFBUF_SZ),
];

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
            workers: Workers::ProducersAndConsumers,
            ..Info::hits(name, description)
                .with_drops()
                .needs(Needs::TracepointEvent)
                .options(options)
                .untimed(
                    "one operation is a system call on which BPF emits a batch of records \
                     for consumers on other threads; its time is not one record's",
                )
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
            b2b: p.flag(&B2B),
            // Bounded by BATCH_CNT.max.
            batch: p.number(&BATCH_CNT) as u32,
            sampled: p.flag(&SAMPLED),
            rate: p.number(&SAMPLE_RATE),
            use_output: kind.is_ringbuf() && p.flag(&USE_OUTPUT),
            ringbuf_sz: if kind.is_ringbuf() {
                p.number(&RINGBUF_SZ)
            } else {
                RINGBUF_SZ.default
            },
            perfbuf_pages: if kind.is_ringbuf() {
                PERFBUF_SZ.default
            } else {
                p.number(&PERFBUF_SZ)
            },
        }
    }
}

/// With `--rb-sampled`, the consumer is woken once RATE records wait: more
/// than the buffer can hold would never wake it (every record dropped, none
/// read), so such a rate is refused.
fn wakeup_fits(kind: Kind, s: &Settings, page: u64) -> Result<()> {
    if !s.sampled {
        return Ok(());
    }
    let (record, capacity, size_flag) = if kind.is_ringbuf() {
        // Records are 8-byte aligned and a full ring holds one slot less.
        (
            RECORD_BYTES,
            s.ringbuf_sz - 8,
            format!("--ringbuf-sz {}", s.ringbuf_sz),
        )
    } else {
        (
            perf_buffer::PERF_SAMPLE_BYTES,
            s.perfbuf_pages * page - 1,
            format!("--perfbuf-sz {}", s.perfbuf_pages),
        )
    };
    let most = capacity / record;
    if s.rate > most {
        return Err(Error::usage(format!(
            "--rb-sample-rate {} wakes the consumer once {} bytes of records wait, more than \
             a buffer of {size_flag} holds, so it would never wake: give a rate of at most \
             {most}, or a larger buffer",
            s.rate,
            s.rate * record
        )));
    }
    Ok(())
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

impl Benchmark for BufBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn option_needs(&self) -> &'static [(BenchOption, FlagOption)] {
        &[(BenchOption::Number(SAMPLE_RATE), SAMPLED)]
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
        wakeup_fits(self.kind, &s, page)?;
        self.check_memory(&s, config.consumers, page)
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let s = Settings::new(self.kind, config);
        // The tracepoint's id is read from tracefs.
        kernel::ensure_tracefs().map_err(Error::unsupported)?;
        // --probe sets up with no consumers: one ring still has to exist.
        let consumers = config.consumers.clamp(1, MAX_CONSUMERS);
        let skel = self.load(&s, consumers)?;

        let possible = libbpf_rs::num_possible_cpus()
            .map_err(|e| Error::setup(format!("cannot count the possible CPUs: {e}")))?;
        let consumed: Box<[PaddedCounter]> = (0..possible.max(consumers))
            .map(|_| PaddedCounter::default())
            .collect();
        let buffers = match self.kind {
            Kind::RbLibbpf | Kind::RbCustom => {
                let rings = create_rings(&skel.maps.rings, consumers, s.ringbuf_sz)?;
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
            &skel.progs.count_rb_produce
        } else {
            &skel.progs.count_pb_produce
        };
        let link = prog
            .attach()
            .map_err(|e| bpf::attach_error("the syscalls:sys_enter_getpgid tracepoint", &e))?;
        Ok(SetUp::producers(BufWorkload {
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

impl BufBench {
    /// Refuses buffers that would take more than half the memory: a ring
    /// of --ringbuf-sz per consumer, or a perf buffer of --perfbuf-sz pages
    /// per possible CPU, all of it the kernel's.
    fn check_memory(&self, s: &Settings, consumers: usize, page: u64) -> Result<()> {
        let (bytes, given, what, option) = match self.kind.is_ringbuf() {
            true => (
                s.ringbuf_sz.saturating_mul(consumers as u64),
                format!("-c {consumers} and --ringbuf-sz {}", s.ringbuf_sz),
                "a ring buffer per consumer".to_string(),
                "--ringbuf-sz or -c",
            ),
            false => {
                let cpus = libbpf_rs::num_possible_cpus().unwrap_or(1) as u64;
                (
                    s.perfbuf_pages.saturating_mul(page).saturating_mul(cpus),
                    format!("--perfbuf-sz {}", s.perfbuf_pages),
                    format!("a perf buffer on each of {cpus} possible CPUs"),
                    "--perfbuf-sz",
                )
            }
        };
        memory::check(
            self.info.name,
            memory::Need {
                given: &given,
                what: &what,
                bytes,
                smaller: option,
            },
        )
    }

    /// Opens the ring buffer object for this run's settings and loads the
    /// program this benchmark emits with.
    fn load(&self, s: &Settings, consumers: usize) -> Result<bpf::Owned<RingbufSkel<'static>>> {
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<RingbufSkelBuilder>("the ring buffer BPF object")? };
        let rodata = bpf::rodata(
            open.maps.rodata_data.as_deref_mut(),
            "the ring buffer object",
        )?;
        rodata.batch_cnt = s.batch;
        rodata.use_output = u32::from(s.use_output);
        rodata.wakeup_data_size = if s.sampled { s.rate * RECORD_BYTES } else { 0 };
        rodata.nr_rings = consumers as u32;
        rodata.tgid = std::process::id();
        if self.kind.is_ringbuf() {
            open.progs.count_rb_produce.set_autoload(true);
        } else {
            open.progs.count_pb_produce.set_autoload(true);
        }
        let skel = open
            .load()
            .map_err(|e| bpf::load_error("the ring buffer programs", &e))?;
        Ok(bpf::Owned::new(skel, storage))
    }
}

/// Creates one ring buffer per consumer and puts it in `array`, a program's
/// array of ring buffers (the probe bodies use it too).
pub(crate) fn create_rings(array: &dyn MapCore, count: usize, size: u64) -> Result<Vec<MapHandle>> {
    let size = u32::try_from(size)
        .map_err(|_| Error::usage(format!("--ringbuf-sz {size} is too large")))?;
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    (0..count)
        .map(|i| {
            // A ring of a GiB takes a tenth of a second: a signal stops
            // between them.
            crate::interrupt::check("creating the ring buffers")?;
            let ring = MapHandle::create(MapType::RingBuf, Some("bench_ring"), 0, 0, size, &opts)
                .map_err(|e| bpf::load_error("a ring buffer map", &e))?;
            let fd = ring.as_fd().as_raw_fd() as u32;
            array
                .update(&(i as u32).to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| Error::setup(format!("cannot install ring buffer {i}: {e}")))?;
            Ok(ring)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benches::resolve_params;
    use crate::config::OptionValue::{self, Flag, Number};

    fn config(bench: &dyn Benchmark, given: &[(&'static str, OptionValue)]) -> RunConfig {
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
        assert!(resolve_params(pb, &[("rb-use-output", Flag(true))]).is_err());
    }

    #[test]
    fn impossible_configurations_are_refused() {
        let rb = super::super::find("rb-custom").unwrap();
        let mut c = config(rb, &[]);
        c.consumers = 0;
        assert!(rb.validate(&c).unwrap_err().to_string().contains("-c 1"));
        let mut c = config(rb, &[("rb-b2b", Flag(true))]);
        c.producers = 2;
        assert!(rb.validate(&c).is_err());
        let mut c = config(rb, &[("rb-b2b", Flag(true))]);
        c.repeat = Some(10);
        assert!(rb.validate(&c).is_err());
        let c = config(rb, &[("ringbuf-sz", Number(12288))]);
        assert!(rb.validate(&c).is_err());
        let c = config(
            rb,
            &[
                ("rb-b2b", Flag(true)),
                ("rb-sampled", Flag(true)),
                ("rb-batch-cnt", Number(10)),
            ],
        );
        assert!(rb.validate(&c).is_err());
        assert!(rb.validate(&config(rb, &[])).is_ok());
    }
}
