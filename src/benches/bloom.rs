//! The bloom filter family, under the kernel runner's names
//! (`benchs/bench_bloom_filter_map.c`): lookups in and updates of a
//! BPF_MAP_TYPE_BLOOM_FILTER map, the filter's false-positive rate, and a
//! hash map's lookups with and without a bloom filter in front of it. Each
//! body (`bpf/bloom.bpf.c`) runs from the trigger [`helper_trigger`]
//! chooses.

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::helper_trigger::{self, Body, HelperWorkload, KernelFunction};
use super::{hold, memory, Benchmark, Info, Metric};
use crate::bpf::skel::bloom::{BloomSkel, BloomSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Better, Figure};
use crate::interrupt;
use crate::runner::{Counts, ProducerCtx, Workload};
use crate::stats::Sample;
use crate::trigger_path::{TriggerPath, TriggerUsed};

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

/// The share of the operations that were false hits, in per cent, as the
/// kernel runner counts it: a false hit (the filter said "maybe", the hash
/// map lacked the key) is counted both as a false hit and as a drop, and
/// the total adds hits, drops and false hits, so a false hit weighs twice
/// in the total. Lower is better.
pub const FALSE_POSITIVE: Figure = Figure {
    name: "false-positive",
    unit: "false positive %",
    better: Better::Lower,
    of_run: |run| match run.fixed() {
        Some(fixed) => false_positive_percent(fixed.counts.hits as f64, fixed.counts.drops as f64),
        None => {
            let summary = run.summary()?;
            false_positive_percent(summary.hits.mean, summary.drops.mean)
        }
    },
    per_second: Some(|sample: &Sample| {
        false_positive_percent(sample.hits as f64, sample.drops as f64).unwrap_or(0.0)
    }),
    show: |percent| format!("{percent:.2} %"),
    show_spread: |percent, sd| format!("{percent:.2} \u{b1} {sd:.2} %"),
};

/// Upstream's percentage of false hits (`drops` here: with the filter on,
/// every drop is one) among hits + drops + false hits; `None` of nothing.
pub fn false_positive_percent(hits: f64, false_hits: f64) -> Option<f64> {
    let total = hits + 2.0 * false_hits;
    (total > 0.0).then(|| false_hits / total * 100.0)
}

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
    let info = match name.as_bytes() {
        b"bloom-false-positive" => Info {
            metric: Metric::FalseHits,
            figures: &[FALSE_POSITIVE, figures::HITS],
            ..base
        },
        _ => base,
    };
    let calls: &'static [KernelFunction] = match mode {
        Mode::Hashmap { .. } => &[BLOOM_FILTER_MAP],
        Mode::Lookup | Mode::Update => &[BLOOM_FILTER_MAP, FOR_EACH_MAP_ELEM],
    };
    Bloom {
        info,
        body: Body {
            name: body,
            upstream: TriggerPath::FentryGetpgid,
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

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
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
        Ok(Box::new(BloomWorkload {
            drops,
            error,
            inner: HelperWorkload::new(skel, link, hits, used, self.body),
        }))
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
    drops: HitCounters,
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

    fn measure(&self, ops: u64) -> Counts {
        Counts {
            drops: self.drops.total(),
            ..self.inner.measure(ops)
        }
    }

    fn trigger(&self) -> Option<TriggerUsed> {
        self.inner.trigger()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn false_positives_weigh_twice_in_the_total_as_upstream_counts_them() {
        // 10 false hits of 90 + 10 + 10 operations.
        let percent = false_positive_percent(90.0, 10.0).unwrap();
        assert!((percent - 100.0 * 10.0 / 110.0).abs() < 1e-9, "{percent}");
        assert_eq!(false_positive_percent(0.0, 0.0), None);
        assert_eq!((FALSE_POSITIVE.show)(9.0909), "9.09 %");
    }
}
