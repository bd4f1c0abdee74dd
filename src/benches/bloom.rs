//! The bloom filter family, under the kernel runner's names
//! (`benchs/bench_bloom_filter_map.c`): lookups in and updates of a
//! BPF_MAP_TYPE_BLOOM_FILTER map, the filter's false-positive rate, and a
//! hash map's lookups with and without a bloom filter in front of it. Each
//! body (`bpf/bloom.bpf.c`) runs from the trigger [`helper_trigger`]
//! chooses.

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::helper_trigger::{self, Body, HelperWorkload, KernelFunction};
use super::{hold, memory};
use super::{Benchmark, Info};
use crate::bpf::skel::bloom::{BloomSkel, BloomSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::{Channel, Readings, Slot, HITS};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{Agg, Better, Figure, Sec, Show, Value};
use crate::interrupt;
use crate::lines::{self, hits_lines, Fixed, Line, Lines, Missing, Num, Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};

/// LOOKUPS_PER_TRIGGER in `bpf/bloom.bpf.c`: the hash map lookups one
/// trigger makes, as upstream's.
pub const LOOKUPS_PER_TRIGGER: u64 = 1024;

pub const NR_ENTRIES: NumberOption = NumberOption {
    long: "nr_entries",
    short: None,
    value_name: "NR_ENTRIES",
    help: super::NR_ENTRIES_HELP,
    default: 1000,
    min: 1,
    max: u32::MAX as u64,
    why_max: "a map's max_entries is 32 bits",
};
pub const NR_HASH_FUNCS: NumberOption = NumberOption {
    long: "nr_hash_funcs",
    short: None,
    value_name: "NR_HASH_FUNCS",
    help: "Number of hash functions of the bloom filter",
    default: 3,
    min: 1,
    max: 15,
    why_max: "the bloom filter map keeps the count in map_extra's low 4 bits",
};
pub const VALUE_SIZE: NumberOption = NumberOption {
    long: "value_size",
    short: None,
    value_name: "VALUE_SIZE",
    help: "Size in bytes of the bloom filter's values (and the hash map's keys)",
    default: 8,
    min: 2,
    max: 256,
    why_max: "",
};

static OPTIONS: [BenchOption; 3] = [
    BenchOption::Number(NR_ENTRIES),
    BenchOption::Number(NR_HASH_FUNCS),
    BenchOption::Number(VALUE_SIZE),
];

/// The map type, named by the function that allocates it.
const BLOOM_FILTER_MAP: KernelFunction = KernelFunction {
    what: "the bloom filter map (BPF_MAP_TYPE_BLOOM_FILTER)",
    name: "bloom_map_alloc",
    since: "5.16",
};
const FOR_EACH_MAP_ELEM: KernelFunction = KernelFunction {
    what: "the bpf_for_each_map_elem helper",
    name: "bpf_for_each_map_elem",
    since: "5.13",
};

/// A hash map body's lookups answered: the filter ruled the key out, or the
/// map held it.
const ANSWERED: Channel = Channel {
    unit: "lookups",
    about: "lookups the bloom filter ruled out or the hash map held",
    ..HITS
};
/// A hash map body's lookups of a key the map lacks: behind the filter, its
/// false positives.
const MISSES: Channel = Channel::counter(
    "misses",
    "lookups",
    "lookups of a key the hash map lacks (behind the bloom filter: its false positives)",
)
.was(Slot::Drops);
const HASHMAP_CHANNELS: [Channel; 2] = [ANSWERED, MISSES];

const ANSWERED_RATE: Sec = Sec::Rate(&ANSWERED);
const LOOKUPS_RATE: Sec = Sec::Add(&ANSWERED_RATE, &Sec::Rate(&MISSES));

/// Every lookup a hash map body made, per second: the work, whatever the
/// answers.
pub const LOOKUPS: Figure = Figure {
    name: "lookups",
    unit: "lookups/s",
    better: Better::Higher,
    show: Show::Rate,
    value: Value::PerSecond(&LOOKUPS_RATE),
};

/// Upstream's total: a false hit counted both as a false hit and as a drop,
/// and the total adding hits, drops and false hits, so a false hit weighs
/// twice.
const TOTAL: Sec = Sec::Add(
    &Sec::Value(&ANSWERED),
    &Sec::Mul(&Sec::Const(2.0), &Sec::Value(&MISSES)),
);
const PERCENT: Sec = Sec::Div(&Sec::Mul(&Sec::Const(100.0), &Sec::Value(&MISSES)), &TOTAL);

/// The share of the operations that were false hits, in per cent, as the
/// kernel runner counts it. Lower is better.
pub const FALSE_POSITIVE: Figure = Figure {
    name: "false-positive",
    unit: "%",
    better: Better::Lower,
    show: Show::Decimals(2),
    value: Value::PerSecond(&PERCENT),
};

/// "F false hits of T total operations. Percentage =": the kernel runner's
/// words, over a second (one space after "=") or a run (two).
macro_rules! false_hits {
    ($false:expr, $total:expr, $percent:expr, $gap:expr) => {
        [
            Piece::Num($false, Num::whole(0)),
            Piece::Text(" false hits of "),
            Piece::Num($total, Num::whole(0)),
            Piece::Text($gap),
            Piece::Num($percent, Num::fixed(0, 2).missing(Missing::Zero)),
            Piece::Text(" %"),
        ]
    };
}
const FALSE_HITS: Agg = Agg::Total(&Sec::Value(&MISSES));
const TOTAL_OPS: Agg = Agg::Total(&TOTAL);
const RUN_PERCENT: Agg = Agg::Div(&Agg::Mul(&Agg::Const(100.0), &FALSE_HITS), &TOTAL_OPS);
const SECOND_WORDS: [Piece; 6] = false_hits!(
    FALSE_HITS,
    TOTAL_OPS,
    RUN_PERCENT,
    " total operations. Percentage = "
);
const RUN_WORDS: [Piece; 6] = false_hits!(
    FALSE_HITS,
    TOTAL_OPS,
    RUN_PERCENT,
    " total operations. Percentage =  "
);
const HASHMAP_LINES: Lines = hits_lines!(Sec::Value(&MISSES));

/// The kernel runner's `false_hits_report_progress` and
/// `false_hits_report_final` (run_common.sh's `summarize_percentage` cuts
/// the figure after "Percentage =").
const FALSE_HITS_LINES: Lines = Lines {
    tick: &[
        lines::ITER[0],
        lines::ITER[1],
        lines::ITER[2],
        lines::ITER[3],
        Piece::Text("us): "),
        SECOND_WORDS[0],
        SECOND_WORDS[1],
        SECOND_WORDS[2],
        SECOND_WORDS[3],
        SECOND_WORDS[4],
        SECOND_WORDS[5],
    ],
    summary: &[Line::Always(&[
        Piece::Text("Summary: "),
        RUN_WORDS[0],
        RUN_WORDS[1],
        RUN_WORDS[2],
        RUN_WORDS[3],
        RUN_WORDS[4],
        RUN_WORDS[5],
        Piece::Notes,
    ])],
    fixed: Fixed::Runner {
        counts: &[
            match HASHMAP_LINES.fixed {
                Fixed::Runner { counts, .. } => counts[0],
                Fixed::Perf(_) => Line::Always(&[]),
            },
            match HASHMAP_LINES.fixed {
                Fixed::Runner { counts, .. } => counts[1],
                Fixed::Perf(_) => Line::Always(&[]),
            },
            Line::Always(&[
                Piece::Text(" "),
                SECOND_WORDS[0],
                SECOND_WORDS[1],
                SECOND_WORDS[2],
                SECOND_WORDS[3],
                SECOND_WORDS[4],
                SECOND_WORDS[5],
            ]),
        ],
        after: &[],
    },
    ..HASHMAP_LINES
};

/// What a benchmark of the family does per trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Walk the array, peek each value in the filter.
    Lookup,
    /// Walk the array, push each value into the filter.
    Update,
    /// Hash map lookups of random keys, the filter asked first or not.
    Hashmap { use_bloom: bool },
}

impl Mode {
    fn uses_hashmap(self) -> bool {
        matches!(self, Mode::Hashmap { .. })
    }
}

pub static BENCHES: &[&dyn Benchmark] = &[
    &bloom(
        "bloom-lookup",
        "bpf_for_each_map_elem() over --nr_entries array values, each looked up in a bloom \
         filter (bpf_map_peek_elem) per trigger; one hit is one lookup",
        "bloom_lookup",
        Mode::Lookup,
    ),
    &bloom(
        "bloom-update",
        "bpf_for_each_map_elem() over --nr_entries array values, each pushed into a bloom \
         filter (bpf_map_push_elem) per trigger; one hit is one update",
        "bloom_update",
        Mode::Update,
    ),
    &bloom(
        "bloom-false-positive",
        "1024 lookups of random keys per trigger in a bloom filter, then in a hash map of \
         --nr_entries random keys where the filter says maybe: the filter's false positives",
        "hashmap_lookup",
        Mode::Hashmap { use_bloom: true },
    ),
    &bloom(
        "hashmap-without-bloom",
        "1024 lookups of random keys per trigger in a hash map of --nr_entries random keys; a \
         hit is a key found, a drop one missing",
        "hashmap_lookup",
        Mode::Hashmap { use_bloom: false },
    ),
    &bloom(
        "hashmap-with-bloom",
        "1024 lookups of random keys per trigger in a hash map of --nr_entries random keys, a \
         bloom filter asked first; a hit is a key the filter rules out or the map has",
        "hashmap_lookup",
        Mode::Hashmap { use_bloom: true },
    ),
];

struct Bloom {
    info: Info,
    body: Body,
    mode: Mode,
}

const fn bloom(
    name: &'static str,
    description: &'static str,
    body: &'static str,
    mode: Mode,
) -> Bloom {
    let base = Info::hits(name, description)
        .untimed("one operation is one trigger, whose time is many lookups or updates")
        .needs(Needs::Link)
        .options(&OPTIONS);
    let info = match (name.as_bytes(), mode) {
        (b"bloom-false-positive", _) => base.declares(
            &HASHMAP_CHANNELS,
            &[FALSE_POSITIVE, LOOKUPS],
            FALSE_HITS_LINES,
        ),
        (_, Mode::Hashmap { .. }) => base.declares(&HASHMAP_CHANNELS, &[LOOKUPS], HASHMAP_LINES),
        (_, Mode::Lookup | Mode::Update) => base,
    };
    let calls: &'static [KernelFunction] = match mode {
        Mode::Hashmap { .. } => &[BLOOM_FILTER_MAP],
        Mode::Lookup | Mode::Update => &[BLOOM_FILTER_MAP, FOR_EACH_MAP_ELEM],
    };
    Bloom {
        info,
        body: Body {
            name: body,
            upstream: helper_trigger::FENTRY_GETPGID,
            ops_per_trigger: 1,
            calls,
        },
        mode,
    }
}

/// The options' values, as set-up takes them.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    nr_entries: u32,
    nr_hash_funcs: u64,
    value_size: u32,
}

impl Sizes {
    fn of(config: &RunConfig) -> Sizes {
        Sizes {
            // Within u32 and 256: the options' maxima.
            nr_entries: config.params.number(&NR_ENTRIES) as u32,
            nr_hash_funcs: config.params.number(&NR_HASH_FUNCS),
            value_size: config.params.number(&VALUE_SIZE) as u32,
        }
    }
}

impl Benchmark for Bloom {
    fn info(&self) -> &Info {
        &self.info
    }

    /// Values of fewer than 8 bytes have too few distinct values for a large
    /// --nr_entries of unique keys; upstream refuses it for every benchmark
    /// of the family.
    fn validate(&self, config: &RunConfig) -> Result<()> {
        let sizes = Sizes::of(config);
        if sizes.value_size < 8 {
            let distinct = 1u64 << (sizes.value_size * 8);
            if u64::from(sizes.nr_entries) > distinct {
                return Err(Error::usage(format!(
                    "--nr_entries {} is more than the {distinct} distinct values of \
                     --value_size {} bytes: not enough unique values for {}",
                    sizes.nr_entries, sizes.value_size, self.info.name
                )));
            }
        }
        self.check_walk(sizes)?;
        self.check_memory(sizes)
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        self.validate(config)?;
        let sizes = Sizes::of(config);
        let mode = self.mode;
        let (mut skel, link, used) = helper_trigger::load(&self.body, |program| {
            let mut storage = bpf::ObjectStorage::new();
            // SAFETY: this storage is opened once, and the skeleton goes into
            // an `Owned` with it (or, failing to load, drops before it).
            let mut open = BloomSkelBuilder::default().open(unsafe { storage.object() })?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.tgid = std::process::id();
                rodata.use_bloom = mode == (Mode::Hashmap { use_bloom: true });
            }
            if let Some(bss) = open.maps.bss_data.as_deref_mut() {
                bss.value_size = sizes.value_size;
            }
            let maps = &mut open.maps;
            maps.values.set_max_entries(sizes.nr_entries)?;
            maps.values.set_value_size(sizes.value_size)?;
            maps.bloom.set_max_entries(sizes.nr_entries)?;
            maps.bloom.set_value_size(sizes.value_size)?;
            maps.bloom.set_map_extra(sizes.nr_hash_funcs)?;
            maps.hashmap.set_max_entries(sizes.nr_entries)?;
            maps.hashmap.set_key_size(sizes.value_size)?;
            maps.hashmap.set_value_size(sizes.value_size)?;
            // The map a body does not use is not made: a preallocated hash
            // map of millions of keys would cost memory and time for nothing.
            maps.values.set_autocreate(!mode.uses_hashmap())?;
            maps.hashmap.set_autocreate(mode.uses_hashmap())?;
            for mut prog in open.open_object_mut().progs_mut() {
                if prog.name() == program {
                    prog.set_autoload(true);
                }
            }
            Ok(bpf::Owned::new(open.load()?, storage))
        })?;
        populate(&mut skel, mode, sizes)?;
        let bss = skel.maps.bss_data.as_deref();
        // SAFETY: `hits` and `drops` are counters.h's slots, `body_error` a
        // u64; the skeleton is kept in the workload beside the counters,
        // dropped after them.
        let (hits, drops, error) = unsafe {
            (
                HitCounters::new(bss.map(|bss| &bss.hits[..]))?,
                HitCounters::new(bss.map(|bss| &bss.drops[..]))?,
                HitCounters::new(bss.map(|bss| std::slice::from_ref(&bss.body_error)))?,
            )
        };
        let workload = BloomWorkload {
            misses: self.mode.uses_hashmap().then_some(drops),
            error,
            inner: HelperWorkload::new(skel, link, hits, self.body),
        };
        Ok(SetUp::producers(workload).from_trigger(used))
    }
}

/// The time of one element of a walk in ns, at most: measured on a 2-CPU
/// EPYC VM over walks of 1 and 4 million values (lookups: 23 ns with 8-byte
/// values and one hash, 137 with 15 hashes, 131 with 256-byte values, 1506
/// with both, 185 with 8-byte values and 15 hashes in a filter of 32 MiB;
/// updates: 39, 181, 122, 1599 and 317), with a margin.
fn ns_per_element(sizes: Sizes) -> f64 {
    50.0 + sizes.nr_hash_funcs as f64 * (30.0 + 0.5 * f64::from(sizes.value_size))
}

impl Bloom {
    /// Refuses a walk whose trigger would hold its CPU too long: one trigger
    /// walks every value.
    fn check_walk(&self, sizes: Sizes) -> Result<()> {
        let what = match self.mode {
            Mode::Lookup => "bloom filter lookups",
            Mode::Update => "bloom filter updates",
            Mode::Hashmap { .. } => return Ok(()),
        };
        let work = hold::TriggerWork {
            ops: u64::from(sizes.nr_entries),
            ns_per_op: ns_per_element(sizes),
        };
        let given = format!(
            "--nr_entries {}, --nr_hash_funcs {} and --value_size {}",
            sizes.nr_entries, sizes.nr_hash_funcs, sizes.value_size
        );
        hold::check(self.info.name, &given, what, work, "--nr_entries")
    }

    /// Refuses maps that would take too much memory: the bloom filter, and
    /// the array of values (the walks) or the preallocated hash map.
    fn check_memory(&self, sizes: Sizes) -> Result<()> {
        let (n, v) = (u64::from(sizes.nr_entries), u64::from(sizes.value_size));
        let filter = memory::bloom_filter_bytes(n, sizes.nr_hash_funcs);
        let (bytes, what) = match self.mode.uses_hashmap() {
            true => (
                filter + memory::hash_map_bytes(n, n, v, v),
                "a bloom filter and a preallocated hash map",
            ),
            false => (
                filter + memory::array_bytes(n, v),
                "a bloom filter and an array of values",
            ),
        };
        let given = format!("--nr_entries {n} and --value_size {v}");
        memory::check(
            self.info.name,
            memory::Need {
                given: &given,
                what,
                bytes,
                smaller: "--nr_entries",
            },
        )
    }
}

/// Fills the maps as upstream does: `nr_entries` random values in the array
/// (the bloom bodies) or as the hash map's unique keys (the hash map body),
/// each pushed into the bloom filter too where a body asks it; then the
/// random bytes the hash map body takes its keys from.
fn populate(skel: &mut bpf::Owned<BloomSkel<'static>>, mode: Mode, sizes: Sizes) -> Result<()> {
    let failed = |what: &str, e: libbpf_rs::Error| {
        Error::setup(format!(
            "filling the bloom benchmark's {what} failed: {e:#}"
        ))
    };
    let fill_bloom = mode != Mode::Hashmap { use_bloom: false };
    let size = sizes.value_size as usize;
    // Random values drawn in batches: one getrandom() per batch, not per value.
    let mut batch = vec![0u8; size * 4096];
    let mut drawn = batch.len();
    let mut index = 0u32;
    while index < sizes.nr_entries {
        if drawn == batch.len() {
            // Millions of values take seconds: a signal stops between batches.
            interrupt::check("filling the bloom benchmark's maps")?;
            fill_random(&mut batch)?;
            drawn = 0;
        }
        let value = &batch[drawn..drawn + size];
        drawn += size;
        if mode.uses_hashmap() {
            match skel.maps.hashmap.update(value, value, MapFlags::NO_EXIST) {
                Ok(()) => {}
                // Drawn before: draw another.
                Err(e) if e.kind() == libbpf_rs::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(failed("hash map", e)),
            }
        } else {
            skel.maps
                .values
                .update(&index.to_ne_bytes(), value, MapFlags::ANY)
                .map_err(|e| failed("array", e))?;
        }
        if fill_bloom {
            skel.maps
                .bloom
                .update(&[], value, MapFlags::ANY)
                .map_err(|e| failed("bloom filter", e))?;
        }
        index += 1;
    }
    let bss = skel
        .maps
        .bss_data
        .as_deref_mut()
        .ok_or_else(|| Error::setup("the bloom benchmark's .bss is not memory-mapped"))?;
    fill_random(&mut bss.rand_vals)
}

/// `buf` full of random bytes from the kernel.
fn fill_random(buf: &mut [u8]) -> Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: the kernel writes at most `rest.len()` bytes into `rest`.
        let got = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if got < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::setup(format!("getrandom() failed: {err}")));
        }
        filled += got as usize;
    }
    Ok(())
}

/// A bloom benchmark after set-up: the helper workload, and the drops and
/// the error flag of the family's own body.
struct BloomWorkload {
    /// A hash map body's misses (`drops` in `bpf/bloom.bpf.c`).
    misses: Option<HitCounters>,
    error: HitCounters,
    // Last: the counters above point into its .bss.
    inner: HelperWorkload<BloomSkel<'static>>,
}

impl Workload for BloomWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        self.inner.produce(ctx)?;
        match self.error.total() {
            0 => Ok(()),
            bits => Err(Error::runtime(format!(
                "the bloom filter refused an operation it should take (error bits {bits:#x}: \
                 1 a lookup or update of a value, 2 a lookup of a random key)"
            ))),
        }
    }

    fn read(&self, ops: u64) -> Readings {
        let mut readings = self.inner.read(ops);
        readings.extend(self.misses.as_ref().map(|misses| Some(misses.total())));
        readings
    }
}

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    /// The kernel runner's false-hits lines, to the space: a false hit is
    /// counted twice in the total, and run_common.sh's `percentage` finds the
    /// figure after "Percentage =".
    #[test]
    fn false_hits_lines_are_the_kernel_runners() {
        let bench = "bloom-false-positive";
        assert_eq!(
            testing::tick(bench, &[1012, 12], 1),
            "Iter   3 ( 12.345us): 12 false hits of 1036 total operations. Percentage = 1.16 %"
        );
        let seconds: Vec<[u64; 2]> = vec![[1012, 12]; 5];
        assert_eq!(
            testing::summary(bench, &seconds, 1),
            ["Summary: 60 false hits of 5180 total operations. Percentage =  1.16 %"]
        );
        let fixed = testing::fixed(bench, &[90, 10], 1);
        assert_eq!(
            fixed.last().map(String::as_str),
            Some(" 10 false hits of 110 total operations. Percentage = 9.09 %")
        );
        assert!(
            fixed.contains(&"             10 drops".to_string()),
            "{fixed:?}"
        );
    }

    /// Without the filter, random keys are never in the map: the work is
    /// every lookup, not the keys found.
    #[test]
    fn the_hash_maps_are_judged_by_their_lookups() {
        for name in ["hashmap-without-bloom", "hashmap-with-bloom"] {
            let bench = super::super::find(name).unwrap();
            assert_eq!(bench.headline().name, "lookups");
            let run = testing::run(name, &[[0, 35_000_000]; 3], 1);
            assert_eq!(run.figure("lookups"), Some(35_000_000.0));
        }
        assert_eq!(
            testing::tick("hashmap-without-bloom", &[0, 1_000_000], 1),
            "Iter   3 ( 12.345us): hits    0.000M/s (  0.000M/prod), drops    1.000M/s, \
             total operations    1.000M/s"
        );
    }
}
