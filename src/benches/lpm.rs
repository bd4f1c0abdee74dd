//! The LPM trie family: what one operation on a BPF_MAP_TYPE_LPM_TRIE map
//! costs, under the kernel runner's names (`benchs/bench_lpm_trie_map.c`,
//! Linux 6.17+): lookup, insert, update and delete of the keys
//! `0..--nr_entries` with `--prefix_len` bits, in order or (`--random`) at
//! random, and the time the kernel takes to free a full trie.
//!
//! As upstream's, the operations run in an XDP program that the producers
//! run with BPF_PROG_TEST_RUN; one run is 10000 operations through
//! bpf_loop(), each counted as a hit, fewer when insert or delete reach the
//! last key and the map must be emptied or refilled (in user space, between
//! runs). `lpm-trie-noop` is the loop alone and `lpm-trie-baseline` the loop
//! and the making of a key, what lookup and update pay besides the map.
//! `lpm-trie-free` creates a trie, fills it, closes it, and times the kernel's
//! `bpf_map_free_deferred()` of it with fentry/fexit; a kernel that refuses
//! those programs cannot run it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType, ProgramInput};

use super::helper_trigger;
use super::helpers::{BPF_LOOP, LATENCY};
use super::{hold, memory};
use super::{Benchmark, Info};
use crate::bpf::skel::lpm::{LpmSkel, LpmSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::channels::{Channel, Slot, HITS};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Better, Figure, Sec, Show, Value};
use crate::interrupt;
use crate::lines::{self, Cond, Line, Lines, Missing, Num, Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};

/// LPM_LOOPS in `bpf/lpm.bpf.c`: the operations of one program run.
const LOOPS_PER_RUN: u64 = 10_000;
/// An Ethernet header: the smallest packet an XDP test run takes (its
/// content is not read).
const ETH_HLEN: usize = 14;
/// The freed trie's name, which the fentry program looks for.
const FREE_MAP_NAME: &str = "trie_free_map";
/// MAX_ENTRIES in `bpf/lpm.bpf.c`, the freed trie's too.
const MAX_ENTRIES: u32 = 100_000_000;
/// The longest a freed trie may take to be freed before the run gives up.
const FREE_WAIT: Duration = Duration::from_secs(30);

pub const NR_ENTRIES: NumberOption = NumberOption {
    long: "nr_entries",
    short: None,
    value_name: "NR_ENTRIES",
    help: super::NR_ENTRIES_HELP,
    default: 0,
    min: 0,
    max: u32::MAX as u64,
    why_max: "the keys are 32-bit",
};
pub const PREFIX_LEN: NumberOption = NumberOption {
    long: "prefix_len",
    short: None,
    value_name: "PREFIX_LEN",
    help: "Number of prefix bits to use in the LPM trie",
    default: 32,
    min: 1,
    max: 32,
    why_max: "the trie's keys have 32 bits of data",
};
pub const RANDOM: FlagOption = FlagOption {
    long: "random",
    help: "Access random keys during op (lpm-trie-noop, -baseline, -lookup, -update)",
    output_only: false,
};

static OPTIONS: [BenchOption; 3] = [
    BenchOption::Number(NR_ENTRIES),
    BenchOption::Number(PREFIX_LEN),
    BenchOption::Flag(RANDOM),
];

/// The time the BPF side measured around the operations alone, and the
/// operations in it (insert, delete and free).
const MEASURED_NS: Channel = Channel::duration(
    "measured time",
    "the time the BPF side measured around the map operations alone",
)
.was(Slot::Extra(0));
const MEASURED_OPS: Channel = Channel::counter(
    "measured operations",
    "operations",
    "the map operations in that time",
)
.was(Slot::Extra(1));
const MEASURED_CHANNELS: [Channel; 3] = [HITS, MEASURED_NS, MEASURED_OPS];

/// Operations per second of measured time: the kernel runner's rate for
/// insert, delete and free, whose wall time also pays for emptying and
/// refilling the trie.
const FRAC_RATE: Sec = Sec::Div(
    &Sec::Value(&MEASURED_OPS),
    &Sec::Div(&Sec::Value(&MEASURED_NS), &Sec::Const(1e9)),
);
/// A second's whole nanoseconds per operation (the kernel runner divides
/// integers there).
const FRAC_NS: Sec = Sec::Trunc(&Sec::Div(
    &Sec::Value(&MEASURED_NS),
    &Sec::Value(&MEASURED_OPS),
));
/// The time per operation measured inside BPF, over the run's operations.
const OP_NS: Agg = Agg::Div(
    &Agg::Total(&Sec::Value(&MEASURED_NS)),
    &Agg::Total(&Sec::Value(&MEASURED_OPS)),
);

/// The time per operation measured inside BPF around the operations alone:
/// upstream's latency for insert and delete, whose rate over wall time also
/// pays for emptying and refilling the trie.
pub const OP_TIME: Figure = Figure {
    name: "op-time",
    unit: "ns/op",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::OfRun(&OP_NS),
};

/// The time the kernel took to free one full trie (bpf_map_free_deferred),
/// in milliseconds: upstream's lpm-trie-free latency.
pub const FREE_TIME: Figure = Figure {
    name: "free-time",
    unit: "ms/op",
    value: Value::OfRun(&Agg::Div(&OP_NS, &Agg::Const(1e6))),
    ..OP_TIME
};

/// The kernel runner's `frac_second_report_progress` and
/// `frac_second_report_final`: rates over the time the BPF side measured in
/// each second; without a second that measured an operation, the ops lines.
macro_rules! frac_lines {
    ($scale:expr, $letter:expr, $time_scale:expr, $time_unit:expr) => {{
        const RATE: Agg = Agg::Mean(&FRAC_RATE);
        Lines {
            tick: &[
                lines::ITER[0],
                lines::ITER[1],
                lines::ITER[2],
                lines::ITER[3],
                Piece::Text("us): hits "),
                Piece::Num(RATE, Num::fixed(8, 3).per($scale).missing(Missing::Zero)),
                Piece::Text(concat!($letter, "/s (")),
                Piece::Num(
                    Agg::Div(&RATE, &Agg::Producers),
                    Num::fixed(7, 3).per($scale).missing(Missing::Zero),
                ),
                Piece::Text(concat!($letter, "/prod)")),
            ],
            summary: &[
                Line::When(
                    Cond::Exists(RATE),
                    &[
                        Piece::Text("Summary: throughput "),
                        Piece::Num(RATE, Num::fixed(8, 3).per($scale)),
                        Piece::Text(" \u{b1} "),
                        Piece::Num(Agg::Sd(&FRAC_RATE), Num::fixed(5, 3).per($scale)),
                        Piece::Text(concat!(" ", $letter, " ops/s (")),
                        Piece::Num(
                            Agg::Div(&RATE, &Agg::Producers),
                            Num::fixed(7, 3).per($scale),
                        ),
                        Piece::Text(concat!($letter, " ops/prod), latency ")),
                        Piece::Num(
                            Agg::Div(&Agg::Mean(&FRAC_NS), &Agg::Producers),
                            Num::fixed(8, 3).per($time_scale),
                        ),
                        Piece::Text(concat!(" ", $time_unit, "/op")),
                        Piece::Notes,
                    ],
                ),
                Line::When(Cond::Not(&Cond::Exists(RATE)), lines::HIT_OPS_SUMMARY),
            ],
            ..lines::HITS
        }
    }};
}
/// Insert and delete: millions of operations per second, ns per operation.
const MEGA_LINES: Lines = frac_lines!(1e6, "M", 1.0, "ns");
/// Free: thousands of tries per second, ms per trie.
const KILO_LINES: Lines = frac_lines!(1e3, "K", 1e6, "ms");

/// What a run of the XDP program does: `enum lpm_op` in `bpf/lpm.bpf.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Noop = 0,
    Baseline = 1,
    Lookup = 2,
    Insert = 3,
    Update = 4,
    Delete = 5,
    /// Not a program run: create, fill and close tries.
    Free = 6,
}

impl Op {
    /// The trie is full at the start (lookup, update and delete need keys).
    fn starts_full(self) -> bool {
        matches!(self, Op::Lookup | Op::Update | Op::Delete)
    }
    /// It puts keys in a trie: lookup, update, delete (a full trie), insert
    /// (refilled by batch), free (a trie filled per operation). Noop and
    /// baseline make keys in BPF and need none in bench.
    fn fills(self) -> bool {
        !matches!(self, Op::Noop | Op::Baseline)
    }
    /// Its runs depend on the order of keys and on refills: one producer,
    /// keys in order. These are also the ones whose rates are over the
    /// time measured inside BPF (`frac_lines!`).
    fn sequential(self) -> bool {
        matches!(self, Op::Insert | Op::Delete | Op::Free)
    }
}

pub static BENCHES: &[&dyn Benchmark] = &[
    &lpm(
        "lpm-trie-noop",
        "bpf_loop() with an empty callback, 10000 per XDP test run: the harness alone",
        Op::Noop,
    ),
    &lpm(
        "lpm-trie-baseline",
        "make an LPM trie key in a bpf_loop() callback, 10000 per XDP test run: what lookup \
         and update pay besides the map",
        Op::Baseline,
    ),
    &lpm(
        "lpm-trie-lookup",
        "look up keys of a full LPM trie, 10000 per XDP test run",
        Op::Lookup,
    ),
    &lpm(
        "lpm-trie-insert",
        "insert keys into an empty LPM trie, up to 10000 per XDP test run (emptied when full)",
        Op::Insert,
    ),
    &lpm(
        "lpm-trie-update",
        "update keys of a full LPM trie, 10000 per XDP test run",
        Op::Update,
    ),
    &lpm(
        "lpm-trie-delete",
        "delete keys from a full LPM trie, up to 10000 per XDP test run (refilled when empty)",
        Op::Delete,
    ),
    &lpm(
        "lpm-trie-free",
        "create, fill and close an LPM trie; the kernel's free of it timed with fentry/fexit \
         on bpf_map_free_deferred, one hit per trie freed",
        Op::Free,
    ),
];

struct Lpm {
    info: Info,
    op: Op,
}

const fn lpm(name: &'static str, description: &'static str, op: Op) -> Lpm {
    let base = Info::hits(name, description)
        .untimed("one operation is a program run of up to 10000 map operations")
        .options(&OPTIONS);
    let info = match op {
        Op::Free => base.needs(Needs::Link).declares(
            &MEASURED_CHANNELS,
            &[figures::HITS, FREE_TIME],
            KILO_LINES,
        ),
        Op::Insert | Op::Delete => base.needs(Needs::RunProgram).declares(
            &MEASURED_CHANNELS,
            &[figures::HITS, LATENCY, OP_TIME],
            MEGA_LINES,
        ),
        _ => base.needs(Needs::RunProgram).declares(
            &[HITS],
            &[figures::HITS, LATENCY],
            lines::HIT_OPS,
        ),
    };
    Lpm { info, op }
}

impl Benchmark for Lpm {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let name = self.info.name;
        let nr_entries = config.params.number(&NR_ENTRIES);
        let prefix_len = config.params.number(&PREFIX_LEN);
        if nr_entries == 0 {
            return Err(Error::usage(format!(
                "{name} needs --nr_entries N (1 or more): the number of keys in the trie"
            )));
        }
        if (1u64 << prefix_len) < nr_entries {
            return Err(Error::usage(format!(
                "--prefix_len {prefix_len} is too small for --nr_entries {nr_entries}: \
                 {prefix_len} bits make {} distinct keys",
                1u64 << prefix_len
            )));
        }
        self.check_sizes(nr_entries)?;
        if self.op.sequential() {
            if config.producers != 1 {
                return Err(Error::usage(format!(
                    "{name} requires a single producer (-p 1): its keys follow one order"
                )));
            }
            if config.params.flag(&RANDOM) {
                return Err(Error::usage(format!("{name} does not support --random")));
            }
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        helper_trigger::lacking(&[BPF_LOOP])?;
        // A run's --nr_entries is 1 or more (validate); `--probe` sets up
        // without one, and a trie of one key says as much.
        let nr_entries = (config.params.number(&NR_ENTRIES) as u32).max(1);
        let prefix_len = config.params.number(&PREFIX_LEN) as u32;
        self.check_sizes(u64::from(nr_entries))?;
        // No key for noop and baseline: --nr_entries only bounds their
        // keys, made in BPF.
        let keys = Keys::new(if self.op.fills() { nr_entries } else { 0 }, prefix_len);
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an
        // `Owned` with it.
        let mut open = unsafe { storage.open::<LpmSkelBuilder>("the LPM trie BPF object")? };
        let wanted: &[&str] = match self.op {
            Op::Free => &["count_lpm_free_entry", "count_lpm_free_exit"],
            _ => &["drive_lpm"],
        };
        for mut prog in open.open_object_mut().progs_mut() {
            if wanted.iter().any(|w| prog.name() == *w) {
                prog.set_autoload(true);
            }
        }
        let what = match self.op {
            Op::Free => "lpm-trie-free's fentry/fexit programs on bpf_map_free_deferred",
            _ => "the LPM trie programs",
        };
        let mut skel = open.load().map_err(|e| bpf::load_error(what, &e))?;
        {
            let bss =
                skel.maps.bss_data.as_deref_mut().ok_or_else(|| {
                    Error::setup("the LPM trie object's .bss is not memory-mapped")
                })?;
            bss.nr_entries = nr_entries;
            bss.prefixlen = prefix_len;
            bss.random_keys = u32::from(config.params.flag(&RANDOM));
            bss.op = self.op as u32;
        }
        let mut links = Vec::new();
        if self.op == Op::Free {
            // Only the pair turned on above: the others are not loaded.
            for prog in skel.object().progs_mut() {
                let name = prog.name().to_string_lossy().into_owned();
                if wanted.contains(&name.as_str()) {
                    links.push(prog.attach().map_err(|e| bpf::attach_error(&name, &e))?);
                }
            }
        } else if self.op.starts_full() {
            keys.fill(&skel.maps.trie_map, || interrupt::received().is_some())?;
            interrupt::check("filling the LPM trie")?;
        }
        let skel = bpf::Owned::new(skel, storage);
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(SetUp::producers(LpmWorkload {
            _links: links,
            hits,
            op: self.op,
            keys,
            packet: [0; ETH_HLEN],
            skel,
        }))
    }
}

impl Lpm {
    /// Refuses a trie the benchmark cannot fill or afford: more keys than it
    /// holds, more memory than there is, a free that would hold a CPU too
    /// long. Noop and baseline put no key in a trie.
    fn check_sizes(&self, nr_entries: u64) -> Result<()> {
        let name = self.info.name;
        if !self.op.fills() {
            return Ok(());
        }
        if nr_entries > u64::from(MAX_ENTRIES) {
            return Err(Error::usage(format!(
                "--nr_entries {nr_entries} is more than the {MAX_ENTRIES} keys {name}'s trie \
                 holds (its max_entries, as upstream's)"
            )));
        }
        let given = format!("--nr_entries {nr_entries}");
        let bytes = nr_entries * (KEY_BYTES + NODE_BYTES);
        let what = "the keys in bench and the trie's nodes in the kernel";
        memory::check(
            name,
            memory::Need {
                given: &given,
                what,
                bytes,
                smaller: "--nr_entries",
            },
        )?;
        if self.op == Op::Free {
            let work = hold::TriggerWork {
                ops: nr_entries,
                ns_per_op: FREE_NS_PER_KEY,
            };
            hold::check(
                name,
                &given,
                "keys for the kernel to free",
                work,
                "--nr_entries",
            )?;
        }
        Ok(())
    }
}

/// What one key takes in bench: its 8 bytes and its value's 4.
const KEY_BYTES: u64 = 12;
/// What one key takes in the kernel's trie, at most: its node is 32 bytes
/// (the kernel's fdinfo), with the intermediate nodes 46 bytes a key of
/// slab (SUnreclaim, a trie of 8 million keys, 6.18).
const NODE_BYTES: u64 = 64;
/// The kernel's free of a trie, per key, at most: `trie_free()` walks down
/// from the root for every node it frees, without a pause (no
/// cond_resched), so a trie's free holds the CPU of the worker that runs
/// it. 3.1 us a key under emulation (6.12 guest, TCG: 306 ms for 100000
/// keys), which runs BPF and map code 3.4 times slower than the 2-CPU EPYC
/// VM it runs on: 0.9 us there, 1 us with a margin.
const FREE_NS_PER_KEY: f64 = 1000.0;

/// The keys `0..nr_entries` with their prefix length, and a value of 1 for
/// each, laid out for the batch calls.
struct Keys {
    keys: Vec<u8>,
    values: Vec<u8>,
}

impl Keys {
    fn new(count: u32, prefix_len: u32) -> Keys {
        let mut keys = Vec::with_capacity(count as usize * 8);
        let mut values = Vec::with_capacity(count as usize * 4);
        for data in 0..count {
            keys.extend_from_slice(&prefix_len.to_ne_bytes());
            keys.extend_from_slice(&data.to_ne_bytes());
            values.extend_from_slice(&1u32.to_ne_bytes());
        }
        Keys { keys, values }
    }

    /// Puts every key in `map`, a batch at a time, until `stop()` says the
    /// run is over: one call of millions of keys would keep the thread in
    /// the kernel for seconds, deaf to a signal.
    fn fill(&self, map: &dyn MapCore, stop: impl Fn() -> bool) -> Result<()> {
        let batches = self
            .keys
            .chunks(BATCH * 8)
            .zip(self.values.chunks(BATCH * 4));
        for (keys, values) in batches {
            if stop() {
                break;
            }
            let count = (keys.len() / 8) as u32;
            map.update_batch(keys, values, count, MapFlags::ANY, MapFlags::ANY)
                .map_err(|e| Error::runtime(format!("filling the LPM trie failed: {e}")))?;
        }
        Ok(())
    }

    /// Takes every key out of `map`, a batch at a time, as [`Keys::fill`].
    fn empty(&self, map: &dyn MapCore, stop: impl Fn() -> bool) -> Result<()> {
        for keys in self.keys.chunks(BATCH * 8) {
            if stop() {
                break;
            }
            map.delete_batch(keys, (keys.len() / 8) as u32, MapFlags::ANY, MapFlags::ANY)
                .map_err(|e| Error::runtime(format!("emptying the LPM trie failed: {e}")))?;
        }
        Ok(())
    }
}

/// Keys per batch call: about 10 ms of the kernel's work.
const BATCH: usize = 1 << 16;

/// Producers run the XDP program (or, for free, create and drop tries); the
/// programs count the hits.
struct LpmWorkload {
    // Fields drop in order: the links detach before the object is closed.
    _links: Vec<libbpf_rs::Link>,
    hits: HitCounters,
    op: Op,
    keys: Keys,
    packet: [u8; ETH_HLEN],
    skel: bpf::Owned<LpmSkel<'static>>,
}

impl LpmWorkload {
    /// The BPF side's running totals: time in the operations, and how many.
    fn op_totals(&self) -> (u64, u64) {
        self.skel.maps.bss_data.as_deref().map_or((0, 0), |bss| {
            // SAFETY: aligned u64 fields of the mapped .bss, which the BPF
            // programs update atomically.
            unsafe {
                (
                    AtomicU64::from_ptr(&bss.op_ns as *const u64 as *mut u64)
                        .load(Ordering::Relaxed),
                    AtomicU64::from_ptr(&bss.op_count as *const u64 as *mut u64)
                        .load(Ordering::Relaxed),
                )
            }
        })
    }

    /// One trie created, filled and closed, and its free waited for (the
    /// fexit program counts it), so that every trie a run makes is counted.
    fn free_one(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let before = self.op_totals().1;
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
            map_flags: libbpf_sys::BPF_F_NO_PREALLOC,
            ..Default::default()
        };
        let map = MapHandle::create(
            MapType::LpmTrie,
            Some(FREE_MAP_NAME),
            8,
            4,
            MAX_ENTRIES,
            &opts,
        )
        .map_err(|e| Error::runtime(format!("creating an LPM trie failed: {e}")))?;
        self.keys.fill(&map, || ctx.should_stop())?;
        drop(map);
        let started = Instant::now();
        // The free is the kernel's, in a worker: a stop need not wait for it.
        while self.op_totals().1 == before && !ctx.should_stop() {
            if started.elapsed() > FREE_WAIT {
                return Err(Error::runtime(format!(
                    "the kernel did not free the LPM trie within {} s",
                    FREE_WAIT.as_secs()
                )));
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}

impl Workload for LpmWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        if self.op == Op::Free {
            return ctx.try_run(|| {
                self.free_one(ctx)?;
                Ok(1)
            });
        }
        let program = self
            .skel
            .object()
            .progs_mut()
            .find(|p| p.name() == "drive_lpm")
            .ok_or_else(|| Error::setup("the LPM trie object has no program drive_lpm"))?;
        let stop = || ctx.should_stop();
        ctx.try_run(|| {
            let before = self.op_totals().1;
            let input = ProgramInput {
                data_in: Some(&self.packet),
                ..Default::default()
            };
            let out = program.test_run(input).map_err(|e| {
                Error::runtime(format!("BPF_PROG_TEST_RUN of drive_lpm failed: {e:#}"))
            })?;
            match out.return_value as i32 {
                0 => Ok(LOOPS_PER_RUN),
                1 => {
                    // Insert filled the trie, or delete emptied it: reset it,
                    // and count what this run did (one producer runs these).
                    let done = self.op_totals().1 - before;
                    match self.op {
                        Op::Insert => self.keys.empty(&self.skel.maps.trie_map, stop)?,
                        _ => self.keys.fill(&self.skel.maps.trie_map, stop)?,
                    }
                    Ok(done)
                }
                status => Err(Error::runtime(format!(
                    "drive_lpm failed: {} (op {:?})",
                    std::io::Error::from_raw_os_error(-status),
                    self.op
                ))),
            }
        })
    }

    /// The hits, and for insert, delete and free the BPF side's measured
    /// time and its operations, read together.
    fn read(&self, _ops: u64) -> Readings {
        let hits = Some(self.hits.total());
        match self.op.sequential() {
            true => {
                let (ns, ops) = self.op_totals();
                vec![hits, Some(ns), Some(ops)]
            }
            false => vec![hits],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    #[test]
    fn lines_are_the_kernel_runners_frac_second_lines() {
        assert_eq!(
            testing::tick("lpm-trie-free", &[3, 12_500_000, 3], 1),
            "Iter   3 ( 12.345us): hits    0.240K/s (  0.240K/prod)"
        );
        assert_eq!(
            testing::tick("lpm-trie-insert", &[10_000, 2_000_000, 10_000], 1),
            "Iter   3 ( 12.345us): hits    5.000M/s (  5.000M/prod)"
        );
        assert_eq!(
            testing::tick("lpm-trie-free", &[0, 0, 0], 1),
            "Iter   3 ( 12.345us): hits    0.000K/s (  0.000K/prod)"
        );
        // 200 and 300 tries a second of measured time, 5 and 3.33 ms each.
        let seconds = [[2u64, 10_000_000, 2], [3, 10_000_000, 3]];
        assert_eq!(
            testing::summary("lpm-trie-free", &seconds, 1),
            [
                "Summary: throughput    0.250 \u{b1} 0.071 K ops/s (  0.250K ops/prod), \
              latency    4.167 ms/op"
            ]
        );
        let seconds = [[10_000u64, 2_000_000, 10_000]; 3];
        assert_eq!(
            testing::summary("lpm-trie-delete", &seconds, 1),
            [
                "Summary: throughput    5.000 \u{b1} 0.000 M ops/s (  5.000M ops/prod), \
              latency  200.000 ns/op"
            ]
        );
        // No second measured an operation: the ops line of the hits.
        let none = testing::summary("lpm-trie-delete", &[[4u64, 0, 0]], 1);
        assert!(
            none[0].starts_with("Summary: throughput    0.000 \u{b1}"),
            "{none:?}"
        );
        assert!(none[0].ends_with(" ns/op"), "{none:?}");
        let run = testing::run("lpm-trie-free", &seconds, 1);
        assert_eq!(run.figure("free-time"), Some(0.0002));
    }
}
