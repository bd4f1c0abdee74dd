//! The hash map family, under the kernel runner's names
//! (`benchs/bench_bpf_hashmap_full_update.c`, `bench_bpf_hashmap_lookup.c`):
//! what an update of a full hash map costs (10000 updates per trigger of a
//! key the map does not hold), and what a lookup costs (`--nr_loops`
//! lookups per trigger, `--nr_entries` keys in turn). Each body times itself
//! inside BPF, per CPU; the run keeps those times as figures and prints the
//! kernel runner's per-CPU lines from them. The `rhashmap` pair runs the same
//! bodies on the resizable hash map (BPF_MAP_TYPE_RHASH), where the kernel
//! has it. Each body runs from the trigger [`helper_trigger`] chooses.

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

mod cpu_times;

use super::helper_trigger::{self, Body, HelperWorkload};
use super::helpers::{BPF_LOOP, NR_LOOPS};
use super::rhash;
use super::{hold, memory};
use super::{Benchmark, Info};
use crate::bpf::skel::hashmap::{HashmapSkel, HashmapSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures;
use crate::interrupt;
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};
use cpu_times::{full_update_finals, lookup_finals};
use cpu_times::{FULL_UPDATE_CHANNELS, FULL_UPDATE_LINES, LOOKUP_CHANNELS, LOOKUP_LINES};
pub use cpu_times::{LOOKUPS, NS_PER_LOOKUP, UPDATES};

/// Updates per trigger of the full map (the kernel runner's MAX_LOOP_NUM).
pub const FULL_UPDATES_PER_TRIGGER: u64 = 10_000;
/// FULL_ENTRIES in `bpf/hashmap.bpf.c`: the full map's size.
const FULL_ENTRIES: u32 = 1000;
/// MAX_KEY_SIZE in `bpf/hashmap.bpf.c`: the size of the key the body looks up.
const MAX_KEY_SIZE: u64 = 1024;

pub const KEY_SIZE: NumberOption = NumberOption {
    long: "key_size",
    short: None,
    value_name: "KEY_SIZE",
    help: "The hashmap key size (max 1024)",
    default: 4,
    min: 1,
    max: MAX_KEY_SIZE,
    why_max: "the key the BPF program looks up is 1024 bytes",
};
pub const MAP_FLAGS: NumberOption = NumberOption {
    long: "map_flags",
    short: None,
    value_name: "MAP_FLAGS",
    help: "The hashmap flags passed to BPF_MAP_CREATE",
    default: 0,
    min: 0,
    max: u32::MAX as u64,
    why_max: "BPF_MAP_CREATE's flags are 32 bits",
};
pub const MAX_ENTRIES: NumberOption = NumberOption {
    long: "max_entries",
    short: None,
    value_name: "MAX_ENTRIES",
    help: "The hashmap max entries (within half the available memory)",
    default: 1000,
    min: 1,
    max: u32::MAX as u64,
    why_max: "BPF_MAP_CREATE's max_entries is 32 bits",
};
pub const NR_ENTRIES: NumberOption = NumberOption {
    long: "nr_entries",
    short: None,
    value_name: "NR_ENTRIES",
    help: super::NR_ENTRIES_HELP,
    default: 500,
    min: 1,
    max: u32::MAX as u64,
    why_max: "the keys are 32-bit",
};
const LOOKUP_NR_LOOPS: NumberOption = NumberOption {
    default: 1_000_000,
    ..NR_LOOPS
};

static LOOKUP_OPTIONS: [BenchOption; 5] = [
    BenchOption::Number(KEY_SIZE),
    BenchOption::Number(MAP_FLAGS),
    BenchOption::Number(MAX_ENTRIES),
    BenchOption::Number(NR_ENTRIES),
    BenchOption::Number(LOOKUP_NR_LOOPS),
];

/// Which hash map a benchmark runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapKind {
    Hash,
    /// BPF_MAP_TYPE_RHASH, where the kernel has it.
    Resizable,
}

/// Which body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    FullUpdate,
    Lookup,
}

struct Hashmap {
    info: Info,
    work: Work,
    map: MapKind,
}

const fn hashmap(
    name: &'static str,
    description: &'static str,
    work: Work,
    map: MapKind,
) -> Hashmap {
    let base = Info::hits(name, description)
        .untimed("one operation is one trigger, whose time is thousands of map operations")
        .needs(Needs::Link);
    let info = match work {
        Work::FullUpdate => base.declares(
            &FULL_UPDATE_CHANNELS,
            &[figures::HITS, UPDATES],
            FULL_UPDATE_LINES,
        ),
        Work::Lookup => base.options(&LOOKUP_OPTIONS).declares(
            &LOOKUP_CHANNELS,
            &[figures::HITS, LOOKUPS, NS_PER_LOOKUP],
            LOOKUP_LINES,
        ),
    };
    Hashmap { info, work, map }
}

pub static BENCHES: &[&dyn Benchmark] = &[
    &hashmap(
        "bpf-hashmap-full-update",
        "10000 updates per trigger of a key a full hash map (1000 entries, preallocated) does \
         not hold; hits are updates, also timed in BPF per CPU",
        Work::FullUpdate,
        MapKind::Hash,
    ),
    &hashmap(
        "bpf-rhashmap-full-update",
        "bpf-hashmap-full-update on the resizable hash map (BPF_MAP_TYPE_RHASH, bpf-next since June 2026)",
        Work::FullUpdate,
        MapKind::Resizable,
    ),
    &hashmap(
        "bpf-hashmap-lookup",
        "--nr_loops lookups per trigger of --nr_entries keys in a hash map; hits are lookups, \
         also timed in BPF per CPU",
        Work::Lookup,
        MapKind::Hash,
    ),
    &hashmap(
        "bpf-rhashmap-lookup",
        "bpf-hashmap-lookup on the resizable hash map (BPF_MAP_TYPE_RHASH, bpf-next since June 2026)",
        Work::Lookup,
        MapKind::Resizable,
    ),
];

/// A lookup's time in ns, at most, by key size: measured in a map of a
/// million keys, far past the caches, on a 2-CPU EPYC VM (82 ns with 4-byte
/// keys, 179 with 64, 412 with 256, 712 with 512, 1034 with 1024; 128 with
/// 4-byte keys in a map of 8 million), with a margin.
fn ns_per_lookup(key_size: u32) -> f64 {
    130.0 + f64::from(key_size)
}

/// The lookup options as set-up uses them.
#[derive(Clone, Copy, Debug)]
struct Lookup {
    key_size: u32,
    map_flags: u32,
    max_entries: u32,
    nr_entries: u32,
    /// Inner loops per trigger: the kernel runner's nr_loops / nr_entries.
    outer: u64,
}

impl Lookup {
    fn of(config: &RunConfig) -> Lookup {
        let number = |o: &NumberOption| config.params.number(o);
        // Within u32: each option's maximum.
        let nr_entries = number(&NR_ENTRIES) as u32;
        Lookup {
            key_size: number(&KEY_SIZE) as u32,
            map_flags: number(&MAP_FLAGS) as u32,
            max_entries: number(&MAX_ENTRIES) as u32,
            nr_entries,
            outer: number(&LOOKUP_NR_LOOPS) / u64::from(nr_entries.max(1)),
        }
    }

    fn per_trigger(&self) -> u64 {
        self.outer * u64::from(self.nr_entries)
    }

    /// The key's words after the first: the same in every key.
    fn words(&self) -> [u32; MAX_KEY_SIZE as usize / 4] {
        let mut words = [0u32; MAX_KEY_SIZE as usize / 4];
        for (i, word) in words
            .iter_mut()
            .enumerate()
            .take(self.key_size as usize / 4)
            .skip(1)
        {
            *word = 2_654_435_761u32.wrapping_mul(i as u32);
        }
        words
    }
}

impl Benchmark for Hashmap {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if self.work != Work::Lookup {
            return Ok(());
        }
        let lookup = Lookup::of(config);
        if lookup.nr_entries > lookup.max_entries {
            return Err(Error::usage(format!(
                "--nr_entries {} is more than --max_entries {} for {}: the map cannot hold them",
                lookup.nr_entries, lookup.max_entries, self.info.name
            )));
        }
        if lookup.outer == 0 {
            return Err(Error::usage(format!(
                "--nr_loops {} is less than --nr_entries {} for {}: a trigger would look up \
                 nothing (it makes --nr_loops / --nr_entries loops over the entries)",
                config.params.number(&LOOKUP_NR_LOOPS),
                lookup.nr_entries,
                self.info.name
            )));
        }
        self.check_lookup_costs(&lookup, config.params.number(&LOOKUP_NR_LOOPS))
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        // Also here: the memory available may have changed since the plan.
        self.validate(config)?;
        let rhash = match self.map {
            MapKind::Hash => None,
            MapKind::Resizable => Some(rhash::map_type()?),
        };
        let lookup = (self.work == Work::Lookup).then(|| Lookup::of(config));
        let body = Body {
            name: match self.work {
                Work::FullUpdate => "full_update",
                Work::Lookup => "lookup",
            },
            upstream: helper_trigger::FENTRY_GETPGID,
            ops_per_trigger: lookup.map_or(FULL_UPDATES_PER_TRIGGER, |l| l.per_trigger()),
            calls: &[BPF_LOOP],
        };
        let (mut skel, link, used) = helper_trigger::load(&body, |program| {
            let mut storage = bpf::ObjectStorage::new();
            // SAFETY: this storage is opened once, and the skeleton goes into
            // an `Owned` with it (or, failing to load, drops before it).
            let mut open = HashmapSkelBuilder::default().open(unsafe { storage.object() })?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.tgid = std::process::id();
            }
            // The map the body does not use is not created.
            let (used_map, unused_map) = match lookup {
                Some(_) => (&mut open.maps.lookup_map, &mut open.maps.full_map),
                None => (&mut open.maps.full_map, &mut open.maps.lookup_map),
            };
            unused_map.set_autocreate(false)?;
            if let Some(lookup) = lookup {
                used_map.set_key_size(lookup.key_size)?;
                used_map.set_value_size(8)?;
                used_map.set_max_entries(lookup.max_entries)?;
                used_map.set_map_flags(lookup.map_flags)?;
            }
            if let Some(map_type) = rhash {
                rhash::make_resizable(used_map, map_type)?;
            }
            for mut prog in open.open_object_mut().progs_mut() {
                if prog.name() == program {
                    prog.set_autoload(true);
                }
            }
            Ok(bpf::Owned::new(open.load()?, storage))
        })?;
        match lookup {
            None => fill_full_map(&skel)?,
            Some(lookup) => fill_lookup_map(&mut skel, &lookup)?,
        }
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            bss.full_nr_loops = FULL_UPDATES_PER_TRIGGER;
            if let Some(lookup) = lookup {
                bss.nr_entries = u64::from(lookup.nr_entries);
                bss.nr_loops = lookup.outer;
            }
        }
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        let workload = HashmapWorkload {
            inner: HelperWorkload::new(skel, link, hits, body),
            work: self.work,
            per_trigger: body.ops_per_trigger,
        };
        Ok(SetUp::producers(workload).from_trigger(used))
    }
}

impl Hashmap {
    /// Refuses a lookup trigger that would hold its CPU too long, and a map
    /// that would take too much memory (all of max_entries when
    /// preallocated, as BPF_F_NO_PREALLOC does not ask).
    fn check_lookup_costs(&self, lookup: &Lookup, nr_loops: u64) -> Result<()> {
        let name = self.info.name;
        let (key_size, max_entries) = (lookup.key_size, lookup.max_entries);
        let work = hold::TriggerWork {
            ops: lookup.per_trigger(),
            ns_per_op: ns_per_lookup(key_size),
        };
        let given = format!("--nr_loops {nr_loops} and --key_size {key_size}");
        let what = format!("lookups of {key_size}-byte keys");
        hold::check(name, &given, &what, work, "--nr_loops")?;
        let preallocated = self.map == MapKind::Hash && lookup.map_flags & rhash::NO_PREALLOC == 0;
        let (elements, what) = match preallocated {
            true => (max_entries, "the hash map, preallocated"),
            false => (lookup.nr_entries, "the hash map"),
        };
        let [max, elements, key] = [max_entries, elements, key_size].map(u64::from);
        let bytes = memory::hash_map_bytes(max, elements, key, 8);
        let given = format!("--max_entries {max_entries} and --key_size {key_size}");
        memory::check(
            name,
            memory::Need {
                given: &given,
                what,
                bytes,
                smaller: "--max_entries",
            },
        )
    }
}

fn map_error(what: &str, e: &libbpf_rs::Error) -> Error {
    Error::setup(format!("filling the {what} map failed: {e:#}"))
}

/// Fills the full map: keys 0 to 999, none of them the bodies' keys.
fn fill_full_map(skel: &HashmapSkel<'static>) -> Result<()> {
    for i in 0..FULL_ENTRIES {
        skel.maps
            .full_map
            .update(&i.to_ne_bytes(), &u64::from(i).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_error("full", &e))?;
    }
    Ok(())
}

/// Fills keys 1..=nr_entries (the first word; the others the same in
/// every key), and gives the body the same words.
fn fill_lookup_map(skel: &mut HashmapSkel<'static>, lookup: &Lookup) -> Result<()> {
    let mut words = lookup.words();
    if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
        bss.key = words;
    }
    let size = lookup.key_size as usize;
    for i in 0..u64::from(lookup.nr_entries) {
        // Millions of keys take seconds: a signal stops between them.
        if i % 4096 == 0 {
            interrupt::check("filling the lookup map")?;
        }
        words[0] = (i + 1) as u32;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        skel.maps
            .lookup_map
            .update(&bytes[..size], &i.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_error("lookup", &e))?;
    }
    Ok(())
}

/// A hash map benchmark after set-up: the helper workload, and the times
/// its body kept.
struct HashmapWorkload {
    inner: HelperWorkload<HashmapSkel<'static>>,
    work: Work,
    /// Map operations per trigger.
    per_trigger: u64,
}

impl Workload for HashmapWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        self.inner.produce(ctx)
    }

    fn read(&self, ops: u64) -> Readings {
        self.inner.read(ops)
    }

    fn facts(&self) -> Facts {
        let finals = match self.inner.skel().maps.bss_data.as_deref() {
            None => Vec::new(),
            Some(bss) => match self.work {
                Work::FullUpdate => full_update_finals(&bss.full_time, self.per_trigger),
                Work::Lookup => lookup_finals(&bss.times, self.per_trigger),
            },
        };
        Facts {
            finals,
            ..Facts::default()
        }
    }
}
