//! The htab-mem family: a BPF hash map written and emptied by BPF programs
//! under the kernel runner's use cases (`benchs/bench_htab_mem.c`), its
//! operations per producer and the memory the map holds meanwhile.
//!
//! Each trigger is a getpgid (or, for the deleting half of a pair, getppid)
//! call of a producer; a program on the syscall's sys_enter tracepoint, as
//! upstream's, makes 64 updates or deletions through bpf_loop(). The memory
//! is the map's own, as the kernel accounts it: `memlock` in the map's
//! `/proc/self/fdinfo` entry, read at each second's end (upstream reads the
//! memory cgroup it runs in; docs/upstream-parity.md says what differs).
//! `rhtab-mem` is the same on the resizable hash map, where a kernel has one.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::{Condvar, Mutex};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::Link;

use super::helper_trigger;
use super::helpers::BPF_LOOP;
use super::{Benchmark, Info, Metric};
use crate::bpf::skel::htab_mem::{HtabMemSkel, HtabMemSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig, TextOption};
use crate::error::{Error, Result};
use crate::figures::{self, Better, Figure};
use crate::kernel;
use crate::runner::{Counts, ProducerCtx, Workload};
use crate::trigger_path::{TriggerPath, TriggerUsed};

const MIB: f64 = 1024.0 * 1024.0;
/// MAX_VALUE_SIZE in `bpf/htab_mem.bpf.c`, upstream's limit.
const MAX_VALUE_SIZE: u64 = 4096;
/// The fewest entries the map has; upstream gives each CPU 64 more.
const MIN_ENTRIES: u32 = 8192;

pub const VALUE_SIZE: NumberOption = NumberOption {
    long: "value-size",
    short: None,
    value_name: "VALUE_SIZE",
    help: "Value size of the hash map's entries, in bytes (htab-mem)",
    default: 8,
    min: 1,
    max: MAX_VALUE_SIZE,
    why_max: "the zeroes every update writes are 4096 bytes, upstream's limit",
};
pub const USE_CASE: TextOption = TextOption {
    long: "use-case",
    value_name: "USE_CASE",
    help: "What the programs do to the map: overwrite|batch_add_batch_del|add_del_on_diff_cpu",
    default: "overwrite",
    max_len: 32,
};
pub const PREALLOCATED: FlagOption = FlagOption {
    long: "preallocated",
    help: "Preallocate the hash map's elements (htab-mem)",
};

static OPTIONS: [BenchOption; 3] = [
    BenchOption::Number(VALUE_SIZE),
    BenchOption::Text(USE_CASE),
    BenchOption::Flag(PREALLOCATED),
];

/// What the map's programs do, by upstream's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UseCase {
    /// Every trigger overwrites 64 keys of its CPU's walk.
    Overwrite,
    /// Every trigger adds 64 keys and deletes them again (2 ops).
    BatchAddBatchDel,
    /// Producers in pairs: one adds 64 keys, then the other deletes them.
    AddDelOnDiffCpu,
}

const USE_CASES: [(&str, UseCase); 3] = [
    ("overwrite", UseCase::Overwrite),
    ("batch_add_batch_del", UseCase::BatchAddBatchDel),
    ("add_del_on_diff_cpu", UseCase::AddDelOnDiffCpu),
];

impl UseCase {
    fn from_name(name: &str) -> Result<UseCase> {
        USE_CASES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, u)| *u)
            .ok_or_else(|| {
                let names: Vec<&str> = USE_CASES.iter().map(|(n, _)| *n).collect();
                Error::usage(format!(
                    "--use-case {name:?} is not one of htab-mem's use cases ({})",
                    names.join(", ")
                ))
            })
    }

    /// The programs of `bpf/htab_mem.bpf.c` it turns on.
    fn programs(self) -> &'static [&'static str] {
        match self {
            UseCase::Overwrite => &["count_htab_overwrite"],
            UseCase::BatchAddBatchDel => &["count_htab_batch"],
            UseCase::AddDelOnDiffCpu => &["count_htab_add", "count_htab_del"],
        }
    }
}

/// The names the run keeps the map's memory under, in bytes: the mean and
/// sd of its readings at the measured seconds' ends (a fixed run: the reading
/// at its end), and the most any reading of the run found.
pub const KEPT_MEMORY: &str = "memory";
pub const KEPT_MEMORY_SD: &str = "memory sd";
pub const KEPT_PEAK: &str = "peak memory";

/// The map's memory over the measured seconds, lower is better.
pub const MEMORY: Figure = Figure {
    name: "memory",
    unit: "memory MiB",
    better: Better::Lower,
    of_run: |run| Some(figures::kept(run, KEPT_MEMORY)? / MIB),
    per_second: None,
    show: |mib| format!("{mib:.2} MiB"),
    show_spread: |mib, sd| format!("{mib:.2} \u{b1} {sd:.2} MiB"),
};

/// The most memory the map held at any reading of the run.
pub const PEAK_MEMORY: Figure = Figure {
    name: "peak memory",
    unit: "peak memory MiB",
    of_run: |run| Some(figures::kept(run, KEPT_PEAK)? / MIB),
    ..MEMORY
};

pub static BENCHES: &[&dyn Benchmark] = &[
    &HtabMem {
        info: info(
            "htab-mem",
            "a BPF hash map written and emptied 64 keys per getpgid/getppid trigger \
             (--use-case), its ops per producer and memory in MiB",
        ),
        resizable: false,
    },
    &HtabMem {
        info: info(
            "rhtab-mem",
            "htab-mem on the resizable hash map (BPF_MAP_TYPE_RHASH, allocated on demand), \
             where the kernel has one",
        ),
        resizable: true,
    },
];

const fn info(name: &'static str, description: &'static str) -> Info {
    Info {
        metric: Metric::HtabMem,
        figures: &[figures::HITS, MEMORY, PEAK_MEMORY],
        ..Info::hits(name, description)
            .untimed("one operation is a trigger of 64 map updates, made in BPF")
            .needs(Needs::TracepointEvent)
            .options(&OPTIONS)
    }
}

struct HtabMem {
    info: Info,
    resizable: bool,
}

impl Benchmark for HtabMem {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let use_case = UseCase::from_name(config.params.text(&USE_CASE))?;
        if self.resizable && config.params.flag(&PREALLOCATED) {
            return Err(Error::usage(
                "rhtab-mem takes no --preallocated: the resizable hash map allocates its \
                 elements on demand",
            ));
        }
        if use_case == UseCase::AddDelOnDiffCpu && !config.producers.is_multiple_of(2) {
            return Err(Error::usage(
                "--use-case add_del_on_diff_cpu needs an even number of producers (-p): \
                 they add and delete in pairs",
            ));
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let rhash = match self.resizable {
            true => Some(super::hashmap::resizable_map_type()?),
            false => None,
        };
        let use_case = UseCase::from_name(config.params.text(&USE_CASE))?;
        helper_trigger::lacking(&[BPF_LOOP])?;
        kernel::ensure_tracefs().map_err(Error::unsupported)?;
        let value_size = config.params.number(&VALUE_SIZE) as u32;
        let preallocated = config.params.flag(&PREALLOCATED);
        // SAFETY: sysconf only reads; online CPUs, as upstream's get_nprocs().
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
        let producers = config.producers as u32;
        let mut storage = bpf::ObjectStorage::new();
        let load = |storage: &mut bpf::ObjectStorage| {
            // SAFETY: this storage is opened once, and the skeleton goes into
            // an `Owned` with it (or, failing to load, drops before it).
            let mut open = HtabMemSkelBuilder::default().open(unsafe { storage.object() })?;
            let map = &mut open.maps.htab;
            map.set_value_size(value_size)?;
            map.set_max_entries(MIN_ENTRIES.max(64 * cpus))?;
            if preallocated {
                map.set_map_flags(map.map_flags() & !libbpf_rs::libbpf_sys::BPF_F_NO_PREALLOC)?;
            }
            if let Some(map_type) = rhash {
                super::hashmap::make_resizable(map, map_type)?;
            }
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.tgid = std::process::id();
            }
            if let Some(data) = open.maps.data_data.as_deref_mut() {
                data.nr_thread = producers;
            }
            for mut prog in open.open_object_mut().progs_mut() {
                if use_case
                    .programs()
                    .contains(&prog.name().to_str().unwrap_or(""))
                {
                    prog.set_autoload(true);
                }
            }
            open.load()
        };
        let skel = load(&mut storage).map_err(|e| bpf::load_error("htab-mem's programs", &e))?;
        let skel = bpf::Owned::new(skel, storage);
        let mut links = Vec::new();
        for name in use_case.programs() {
            let link = (*skel)
                .object()
                .progs_mut()
                .find(|p| p.name().to_str() == Some(name))
                .ok_or_else(|| Error::setup(format!("the htab-mem object has no program {name}")))?
                .attach()
                .map_err(|e| bpf::attach_error(name, &e))?;
            links.push(link);
        }
        let map_fd = skel.maps.htab.as_fd().as_raw_fd();
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        let pairs = match use_case {
            UseCase::AddDelOnDiffCpu => {
                (0..config.producers / 2).map(|_| Pair::default()).collect()
            }
            _ => Vec::new(),
        };
        let workload = HtabMemWorkload {
            _links: links,
            hits,
            pairs,
            map_fd,
            memory: Mutex::new(MemoryLog::default()),
            _skel: skel,
        };
        // The map must be readable now: a kernel whose fdinfo lacks the
        // figure is refused before the run, not after it.
        map_memory(map_fd)?;
        Ok(Box::new(workload))
    }
}

/// The map's memory as the kernel accounts it: `memlock` of its fdinfo
/// (since Linux 6.4 the map type's own count of what it holds).
fn map_memory(fd: i32) -> Result<u64> {
    let path = format!("/proc/self/fdinfo/{fd}");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::runtime(format!("cannot read {path}: {e}")))?;
    text.lines()
        .find_map(|line| line.strip_prefix("memlock:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::runtime(format!("{path} has no memlock line")))
}

/// The readings of the map's memory so far.
#[derive(Default)]
struct MemoryLog {
    /// Every reading added up: `measure` reports it as cumulative drops,
    /// so that the runner's difference of two is the later reading.
    sum: u64,
    last: u64,
    peak: u64,
    /// The measured part of the run is on, and the readings taken in it.
    measuring: bool,
    measured: Vec<u64>,
}

impl MemoryLog {
    fn add(&mut self, bytes: u64) {
        self.sum += bytes;
        self.last = bytes;
        self.peak = self.peak.max(bytes);
        if self.measuring {
            self.measured.push(bytes);
        }
    }

    /// The mean and sd (n - 1, as upstream's) of the measured readings, or
    /// the last reading where none was measured (a fixed run).
    fn mean_sd(&self) -> (f64, f64) {
        let n = self.measured.len();
        if n == 0 {
            return (self.last as f64, 0.0);
        }
        let mean = self.measured.iter().sum::<u64>() as f64 / n as f64;
        let var = match n {
            1 => 0.0,
            _ => {
                self.measured
                    .iter()
                    .map(|&b| (b as f64 - mean).powi(2))
                    .sum::<f64>()
                    / (n - 1) as f64
            }
        };
        (mean, var.sqrt())
    }
}

/// An adder and a deleter of add_del_on_diff_cpu taking turns: the deleter
/// waits for each batch added, the adder for each batch deleted, and either
/// stops waiting when the other has left (the stop, or its quota done).
#[derive(Default)]
struct Pair {
    turns: Mutex<Turns>,
    changed: Condvar,
}

#[derive(Default)]
struct Turns {
    added: u64,
    deleted: u64,
    gone: bool,
}

impl Pair {
    fn wait_while(&self, busy: impl Fn(&Turns) -> bool) -> std::sync::MutexGuard<'_, Turns> {
        let turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        self.changed
            .wait_while(turns, |t| !t.gone && busy(t))
            .unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut Turns)) {
        change(&mut self.turns.lock().unwrap_or_else(|e| e.into_inner()));
        self.changed.notify_all();
    }
}

/// Marks a pair's producer gone when it leaves, however it leaves.
struct Leaving<'a>(&'a Pair);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.update(|t| t.gone = true);
    }
}

struct HtabMemWorkload {
    // Fields drop in order: the links detach before the object is closed.
    _links: Vec<Link>,
    hits: HitCounters,
    pairs: Vec<Pair>,
    map_fd: i32,
    memory: Mutex<MemoryLog>,
    _skel: bpf::Owned<HtabMemSkel<'static>>,
}

/// A trigger of the getpgid programs, as upstream's producers make it.
fn getpgid() {
    // SAFETY: getpgid(0) reads this process's group; no memory is touched.
    unsafe { libc::syscall(libc::SYS_getpgid, 0) };
}
/// A trigger of the deleting program.
fn getppid() {
    // SAFETY: getppid reads the parent's id; no memory is touched.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

impl Workload for HtabMemWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        if self.pairs.is_empty() {
            ctx.run(getpgid);
            return Ok(());
        }
        let pair = &self.pairs[ctx.id / 2];
        let _leaving = Leaving(pair);
        if ctx.id.is_multiple_of(2) {
            ctx.try_run(|| {
                getpgid();
                pair.update(|t| t.added += 1);
                drop(pair.wait_while(|t| t.deleted < t.added));
                Ok(1)
            })
        } else {
            ctx.try_run(|| {
                let turns = pair.wait_while(|t| t.added == t.deleted);
                if turns.added == turns.deleted {
                    // The adder has left: nothing more to delete.
                    return Ok(0);
                }
                drop(turns);
                getppid();
                pair.update(|t| t.deleted += 1);
                Ok(1)
            })
        }
    }

    /// The hits the programs counted; as drops, the running sum of the
    /// map's memory readings, one reading per call.
    fn measure(&self, _ops: u64) -> Counts {
        let bytes = map_memory(self.map_fd).unwrap_or(0);
        let mut log = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        log.add(bytes);
        Counts {
            hits: self.hits.counts().hits,
            drops: log.sum,
        }
    }

    fn measuring(&self, on: bool) {
        let mut log = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            log.measured.clear();
        }
        log.measuring = on;
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let mut log = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        // The end of the run may hold more than its last second did.
        if let Ok(now) = map_memory(self.map_fd) {
            log.peak = log.peak.max(now);
        }
        let (mean, sd) = log.mean_sd();
        vec![
            (KEPT_MEMORY, mean),
            (KEPT_MEMORY_SD, sd),
            (KEPT_PEAK, log.peak as f64),
        ]
    }

    fn trigger(&self) -> Option<TriggerUsed> {
        Some(TriggerUsed {
            path: TriggerPath::TpGetpgid,
            refused: None,
        })
    }
}
