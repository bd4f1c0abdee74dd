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
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::Link;

use super::helper_trigger;
use super::helpers::BPF_LOOP;
use super::{Benchmark, Info};
use crate::bpf::skel::htab_mem::{HtabMemSkel, HtabMemSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::{Channel, Final, Readings, Slot, OPERATIONS};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig, TextOption};
use crate::error::{Error, Result};
use crate::figures::{Agg, Better, Figure, Sec, Show, Value};
use crate::kernel;
use crate::lines::{self, Fixed, Line, Lines, Num, Piece};
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};
use crate::trigger_path::TriggerUsed;

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
    choices: &[],
};
pub const PREALLOCATED: FlagOption = FlagOption {
    long: "preallocated",
    help: "Preallocate the hash map's elements (htab-mem)",
    output_only: false,
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

/// The map's memory as the kernel accounts it, read at each tick (a fixed
/// run: at its end).
const MEMORY_BYTES: Channel = Channel::gauge(
    "memory",
    "bytes",
    "the map's memory: memlock in its /proc/self/fdinfo entry",
)
.was(Slot::Drops);
/// The most memory any reading of the run found, the last one at its end
/// included.
const PEAK_BYTES: Channel = Channel::once(
    "peak memory",
    "bytes",
    "the most memory any reading of the map found, warm-up and the run's end included",
);

const CHANNELS: [Channel; 3] = [OPERATIONS, MEMORY_BYTES, PEAK_BYTES];

const OPS_RATE: Sec = Sec::Rate(&OPERATIONS);
const PER_PRODUCER: Sec = Sec::Div(&OPS_RATE, &Sec::Producers);
const MEMORY_MIB: Sec = Sec::Div(&Sec::Value(&MEMORY_BYTES), &Sec::Const(MIB));

/// One producer's operations per second: the kernel runner's per-prod-op,
/// the headline.
pub const PER_PROD_OP: Figure = Figure {
    name: "per-prod-op",
    unit: "operations/s per producer",
    better: Better::Higher,
    show: Show::Rate,
    value: Value::PerSecond(&PER_PRODUCER),
};

/// The map's memory over the measured seconds, lower is better.
pub const MEMORY: Figure = Figure {
    name: "memory",
    unit: "MiB",
    better: Better::Lower,
    show: Show::Decimals(2),
    value: Value::PerSecond(&MEMORY_MIB),
};

/// The most memory the map held at any reading of the run.
pub const PEAK_MEMORY: Figure = Figure {
    name: "peak memory",
    value: Value::OfRun(&Agg::Div(&Agg::Final(&PEAK_BYTES), &Agg::Const(MIB))),
    ..MEMORY
};

const KILO_2: Num = Num::fixed(7, 2).per(1e3);
const MIB_2: Num = Num::fixed(7, 2).per(MIB);

/// The kernel runner's htab-mem lines (`benchs/bench_htab_mem.c`): ops per
/// producer in k/s and the map's memory in MiB, each second and in the
/// Summary that `run_bench_htab_mem.sh` cuts with sed.
const LINES: Lines = Lines {
    tick: &[
        lines::ITER[0],
        lines::ITER[1],
        lines::ITER[2],
        lines::ITER[3],
        Piece::Text("us): per-prod-op "),
        Piece::Num(Agg::Mean(&PER_PRODUCER), KILO_2),
        Piece::Text("k/s, memory usage "),
        Piece::Num(Agg::Mean(&Sec::Value(&MEMORY_BYTES)), MIB_2),
        Piece::Text("MiB"),
    ],
    summary: &[Line::Always(&[
        Piece::Text("Summary: per-prod-op "),
        Piece::Num(Agg::Mean(&PER_PRODUCER), KILO_2),
        Piece::Text(" \u{b1} "),
        Piece::Num(Agg::Sd(&PER_PRODUCER), KILO_2),
        Piece::Text("k/s, memory usage "),
        Piece::Num(Agg::Mean(&Sec::Value(&MEMORY_BYTES)), MIB_2),
        Piece::Text(" \u{b1} "),
        Piece::Num(Agg::Sd(&Sec::Value(&MEMORY_BYTES)), MIB_2),
        Piece::Text("MiB, peak memory usage "),
        Piece::Num(Agg::Final(&PEAK_BYTES), MIB_2),
        Piece::Text("MiB"),
        Piece::Notes,
    ])],
    fixed: Fixed::Runner {
        counts: &[
            Line::Always(&[
                Piece::Text(" "),
                Piece::Num(Agg::Total(&Sec::Value(&OPERATIONS)), Num::whole(14)),
                Piece::Text(" hits"),
            ]),
            Line::Always(&[
                Piece::Text(" "),
                Piece::Num(
                    Agg::Mean(&Sec::Value(&MEMORY_BYTES)),
                    Num::fixed(14, 2).per(MIB),
                ),
                Piece::Text(" MiB memory usage"),
            ]),
        ],
        after: &[],
    },
    operation: "trigger",
    ..lines::HITS
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
    Info::hits(name, description)
        .untimed("one operation is a trigger of 64 map updates, made in BPF")
        .needs(Needs::TracepointEvent)
        .options(&OPTIONS)
        .declares(&CHANNELS, &[PER_PROD_OP, MEMORY, PEAK_MEMORY], LINES)
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

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let rhash = match self.resizable {
            true => Some(super::rhash::map_type()?),
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
                super::rhash::make_resizable(map, map_type)?;
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
            peak: AtomicU64::new(0),
            _skel: skel,
        };
        // The map must be readable now: a kernel whose fdinfo lacks the
        // figure is refused before the run, not after it.
        map_memory(map_fd)?;
        Ok(SetUp::producers(workload).from_trigger(TriggerUsed::own(helper_trigger::TP_GETPGID)))
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
    /// The most memory any reading found.
    peak: AtomicU64,
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

    /// The operations the programs counted, and the map's memory now (a
    /// failed read of it is unknown, not zero).
    fn read(&self, _ops: u64) -> Readings {
        let memory = map_memory(self.map_fd).ok();
        if let Some(bytes) = memory {
            self.peak.fetch_max(bytes, Relaxed);
        }
        vec![Some(self.hits.total()), memory]
    }

    fn facts(&self) -> Facts {
        // The end of the run may hold more than its last second did.
        if let Ok(now) = map_memory(self.map_fd) {
            self.peak.fetch_max(now, Relaxed);
        }
        Facts {
            finals: vec![Final::of(&PEAK_BYTES, self.peak.load(Relaxed) as f64)],
            ..Facts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MIB;
    use crate::report::lines::testing;

    /// The kernel runner's lines; the memory is each second's reading (a
    /// gauge, never divided by the second's length), the peak the run's.
    #[test]
    fn lines_are_the_kernel_runners() {
        let bench = "htab-mem";
        let half = 3 * 1024 * 1024 / 2;
        assert_eq!(
            testing::tick(bench, &[246_900, half], 2),
            "Iter   3 ( 12.345us): per-prod-op  123.45k/s, memory usage    1.50MiB"
        );
        let seconds = [[246_900 - 2_460, half], [246_900 + 2_460, half]];
        let peak = [("peak memory", None, 2.0 * MIB)];
        let line = testing::summary_with(bench, &seconds, 2, &peak);
        assert_eq!(
            line,
            [
                "Summary: per-prod-op  123.45 \u{b1}    1.74k/s, memory usage    1.50 \u{b1}    \
              0.00MiB, peak memory usage    2.00MiB"
            ]
        );
        // What upstream's run_common.sh cuts: the per-prod-op figure.
        let cut = line[0].split('(').next().unwrap_or("");
        let fields: Vec<&str> = cut.split(' ').skip(2).collect();
        assert!(fields.join(" ").starts_with(" 123.45 \u{b1}"), "{cut}");
        // A gauge is not a rate: 656,400 bytes read a second late is 656,400.
        let run = testing::run_with(bench, &[[1, 656_400], [1, 656_400]], 1, &peak);
        assert_eq!(run.figure("memory"), Some(656_400.0 / MIB));
        assert_eq!(run.figure("peak memory"), Some(2.0));
    }

    #[test]
    fn a_fixed_run_shows_memory_instead_of_drops() {
        let lines = testing::fixed("htab-mem", &[10, 1024 * 1024], 1);
        assert!(
            lines.contains(&"             10 hits".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"           1.00 MiB memory usage".to_string()),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.ends_with("drops")), "{lines:?}");
    }

    /// Its headline is what its runs print: one producer's operations.
    #[test]
    fn the_headline_is_per_producer() {
        let run = testing::run("htab-mem", &[[125_524, 1]], 2);
        assert_eq!(run.figure("per-prod-op"), Some(62_762.0));
    }
}
