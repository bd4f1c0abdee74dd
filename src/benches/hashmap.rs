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

use super::helper_trigger::{self, Body, HelperWorkload};
use super::helpers::{BPF_LOOP, NR_LOOPS};
use super::rhash;
use super::{hold, memory};
use super::{Benchmark, Info};
use crate::bpf::skel::hashmap::{HashmapSkel, HashmapSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::channels::{Channel, Final, HITS};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Better, Figure, Show, Value};
use crate::interrupt;
use crate::lines::{self, Line, Lines, Num, Piece, Style};
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};

/// Updates per trigger of the full map (the kernel runner's MAX_LOOP_NUM).
pub const FULL_UPDATES_PER_TRIGGER: u64 = 10_000;
/// FULL_ENTRIES in `bpf/hashmap.bpf.c`: the full map's size.
const FULL_ENTRIES: u32 = 1000;
/// MAX_KEY_SIZE in `bpf/hashmap.bpf.c`: the size of the key the body looks up.
const MAX_KEY_SIZE: u64 = 1024;
/// NR_CPUS and NR_SLOTS in `bpf/hashmap.bpf.c`: the CPUs whose times the
/// bodies keep, and the last triggers' times kept per CPU.
#[cfg(test)]
const NR_CPUS: usize = 256;
const NR_SLOTS: usize = 32;

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

/// Full updates per second inside BPF, per CPU (of its last trigger) and
/// their mean over CPUs: the kernel runner's per-CPU `hash_map_full_perf`.
const CPU_UPDATES: Channel = Channel::once_per_cpu(
    "cpu updates",
    "updates/s",
    "a CPU's full updates per second, of its last trigger, timed in BPF",
);
const UPDATES_MEAN: Channel = Channel::once(
    "updates_per_sec",
    "updates/s",
    "the CPUs' full updates per second, their mean",
);
/// Lookups per second of a trigger's loops, timed inside BPF: each CPU's
/// mean over its last 32 triggers, twice their sd, how many, their mean
/// time (the kernel runner's per-CPU `lookup X M events/sec`).
const CPU_LOOKUPS: Channel = Channel::once_per_cpu(
    "cpu lookups",
    "lookups/s",
    "a CPU's lookups per second, the mean over its kept triggers, timed in BPF",
);
const CPU_LOOKUPS_2SD: Channel = Channel::once_per_cpu(
    "cpu lookups_2sd",
    "lookups/s",
    "twice the sd of a CPU's lookups per second over its kept triggers",
);
const CPU_SAMPLES: Channel = Channel::once_per_cpu(
    "cpu samples",
    "triggers",
    "the triggers a CPU kept the time of",
);
const CPU_MS: Channel = Channel::once_per_cpu(
    "cpu ms",
    "ms",
    "the mean time of a CPU's kept triggers, whole ms",
);
const LOOKUPS_MEAN: Channel = Channel::once(
    "lookups_per_sec",
    "lookups/s",
    "the CPUs' lookups per second, their mean",
);
const NS_PER_LOOKUP_ALL: Channel = Channel::once(
    "ns_per_lookup",
    "ns/lookup",
    "the kept triggers' time over their lookups",
);

const FULL_UPDATE_CHANNELS: [Channel; 3] = [HITS, CPU_UPDATES, UPDATES_MEAN];
const LOOKUP_CHANNELS: [Channel; 7] = [
    HITS,
    CPU_LOOKUPS,
    CPU_LOOKUPS_2SD,
    CPU_SAMPLES,
    CPU_MS,
    LOOKUPS_MEAN,
    NS_PER_LOOKUP_ALL,
];

/// Full updates per second inside BPF, the mean over CPUs.
pub const UPDATES: Figure = Figure {
    name: "full-update",
    unit: "updates/s",
    better: Better::Higher,
    show: Show::Rate,
    value: Value::OfRun(&Agg::Final(&UPDATES_MEAN)),
};
/// Lookups per second of a trigger's loops, timed inside BPF, the mean
/// over CPUs.
pub const LOOKUPS: Figure = Figure {
    name: "lookup",
    unit: "lookups/s",
    value: Value::OfRun(&Agg::Final(&LOOKUPS_MEAN)),
    ..UPDATES
};
/// The time of one lookup inside BPF: the kept triggers' mean time over
/// their lookups.
pub const NS_PER_LOOKUP: Figure = Figure {
    name: "ns-per-lookup",
    unit: "ns/lookup",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::OfRun(&Agg::Final(&NS_PER_LOOKUP_ALL)),
};

/// The kernel runner's per-CPU lines before the summary.
const FULL_UPDATE_LINES: Lines = Lines {
    before_summary: &[Line::EachCpu(
        &CPU_UPDATES,
        &[
            Piece::Cpu(Num::whole(0)),
            Piece::Text(":hash_map_full_perf "),
            Piece::CpuValue(&CPU_UPDATES, Num::whole(0)),
            Piece::Text(" events per sec"),
        ],
    )],
    ..lines::HITS
};
const MILLIONS: Num = Num::fixed(0, 3).per(1e6);
const LOOKUP_LINES: Lines = Lines {
    before_summary: &[Line::EachCpu(
        &CPU_LOOKUPS,
        &[
            Piece::Text("cpu"),
            Piece::Cpu(Num::whole(0).style(Style::ZeroPadded(2))),
            Piece::Text(": lookup "),
            Piece::CpuValue(&CPU_LOOKUPS, MILLIONS),
            Piece::Text("M \u{b1} "),
            Piece::CpuValue(&CPU_LOOKUPS_2SD, MILLIONS),
            Piece::Text("M events/sec (approximated from "),
            Piece::CpuValue(&CPU_SAMPLES, Num::whole(0)),
            Piece::Text(" samples of ~"),
            Piece::CpuValue(&CPU_MS, Num::whole(0)),
            Piece::Text("ms)"),
        ],
    )],
    ..lines::HITS
};

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

/// Each CPU's updates per second (of its last trigger), and their mean.
fn full_update_finals(times: &[u64], per_trigger: u64) -> Vec<Final> {
    let mut kept = Vec::new();
    let mut rates = Vec::new();
    for (cpu, &ns) in times.iter().enumerate().filter(|(_, ns)| **ns > 0) {
        // Whole events, as the kernel runner divides.
        let rate = (per_trigger * 1_000_000_000 / ns) as f64;
        kept.push(Final::of_cpu(&CPU_UPDATES, cpu as u32, rate));
        rates.push(rate);
    }
    if !rates.is_empty() {
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        kept.push(Final::of(&UPDATES_MEAN, mean));
    }
    kept
}

/// Each CPU's lookups per second over its kept triggers (mean, twice the
/// standard deviation, how many, their mean time), the mean over CPUs, and
/// the time per lookup over every kept trigger.
fn lookup_finals(times: &[[u64; NR_SLOTS]], per_trigger: u64) -> Vec<Final> {
    let mut kept = Vec::new();
    let mut means = Vec::new();
    let (mut total_ns, mut triggers) = (0u64, 0u64);
    for (cpu, slots) in times.iter().enumerate() {
        // The kernel runner reads the slots up to the first empty one.
        let timed: Vec<u64> = slots.iter().copied().take_while(|ns| *ns > 0).collect();
        let Some(stats) = CpuLookups::of(&timed, per_trigger) else {
            continue;
        };
        let cpu_id = cpu as u32;
        kept.extend([
            Final::of_cpu(&CPU_LOOKUPS, cpu_id, stats.mean * 1e6),
            Final::of_cpu(&CPU_LOOKUPS_2SD, cpu_id, stats.spread * 1e6),
            Final::of_cpu(&CPU_SAMPLES, cpu_id, timed.len() as f64),
            Final::of_cpu(&CPU_MS, cpu_id, stats.mean_ms as f64),
        ]);
        means.push(stats.mean * 1e6);
        total_ns += timed.iter().sum::<u64>();
        triggers += timed.len() as u64;
    }
    if !means.is_empty() {
        let mean = means.iter().sum::<f64>() / means.len() as f64;
        kept.push(Final::of(&LOOKUPS_MEAN, mean));
    }
    if triggers > 0 && per_trigger > 0 {
        let ns = total_ns as f64 / (triggers * per_trigger) as f64;
        kept.push(Final::of(&NS_PER_LOOKUP_ALL, ns));
    }
    kept
}

/// One CPU's kept triggers, as the kernel runner sums them up.
#[derive(Debug, PartialEq)]
struct CpuLookups {
    /// Lookups per second, in millions: the mean of each trigger's.
    mean: f64,
    /// Twice their standard deviation (n - 1), in millions.
    spread: f64,
    /// The triggers' mean time, whole ms.
    mean_ms: u64,
}

impl CpuLookups {
    fn of(timed: &[u64], per_trigger: u64) -> Option<CpuLookups> {
        if timed.is_empty() {
            return None;
        }
        let n = timed.len() as f64;
        // Millions per second, from whole events per second.
        let rate = |ns: u64| (per_trigger * 1_000_000_000 / ns) as f64 / 1e6;
        let mean = timed.iter().map(|&ns| rate(ns)).sum::<f64>() / n;
        let variance = match timed.len() {
            1 => 0.0,
            _ => {
                timed
                    .iter()
                    .map(|&ns| (mean - rate(ns)).powi(2))
                    .sum::<f64>()
                    / (n - 1.0)
            }
        };
        let mean_ns = timed.iter().sum::<u64>() / timed.len() as u64;
        Some(CpuLookups {
            mean,
            spread: 2.0 * variance.sqrt(),
            mean_ms: mean_ns / 1_000_000,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_lines_are_the_kernel_runners() {
        let full = [
            ("cpu updates", Some(12), 2e6),
            ("cpu updates", Some(3), 1e6),
            ("updates_per_sec", None, 1.5e6),
        ];
        let lines = crate::report::lines::testing::summary_with(
            "bpf-hashmap-full-update",
            &[[1u64]],
            1,
            &full,
        );
        assert_eq!(
            lines[..2],
            [
                "3:hash_map_full_perf 1000000 events per sec",
                "12:hash_map_full_perf 2000000 events per sec"
            ]
        );
        let lookup = [
            ("cpu lookups", Some(1), 45e6),
            ("cpu lookups_2sd", Some(1), 14.142_135_6e6),
            ("cpu samples", Some(1), 2.0),
            ("cpu ms", Some(1), 22.0),
        ];
        let lines = crate::report::lines::testing::summary_with(
            "bpf-hashmap-lookup",
            &[[1u64]],
            1,
            &lookup,
        );
        assert_eq!(
            lines[0],
            "cpu01: lookup 45.000M \u{b1} 14.142M events/sec (approximated from 2 samples of ~22ms)"
        );
    }

    #[test]
    fn a_cpus_lookups_are_summed_up_as_the_kernel_runner_does() {
        // 1M lookups in 20 ms and in 25 ms: 50 and 40 M/s.
        let stats = CpuLookups::of(&[20_000_000, 25_000_000], 1_000_000).unwrap();
        assert!((stats.mean - 45.0).abs() < 1e-9, "{stats:?}");
        // sd of (50, 40) with n - 1 is 7.071; twice that.
        assert!((stats.spread - 14.142_135_6).abs() < 1e-6, "{stats:?}");
        assert_eq!(stats.mean_ms, 22);
        assert_eq!(CpuLookups::of(&[], 1), None);
    }

    #[test]
    fn slots_count_up_to_the_first_empty_one() {
        let mut times = vec![[0u64; NR_SLOTS]; NR_CPUS];
        times[1][0] = 10_000_000;
        times[1][1] = 10_000_000;
        times[1][3] = 1;
        let kept = lookup_finals(&times, 1_000_000);
        let get = |channel: &Channel, cpu: Option<u32>| {
            let found = kept.iter().find(|f| f.channel == channel && f.cpu == cpu);
            found.map(|f| f.value)
        };
        assert_eq!(get(&CPU_SAMPLES, Some(1)), Some(2.0));
        assert_eq!(get(&CPU_LOOKUPS, Some(1)), Some(100e6));
        assert_eq!(get(&LOOKUPS_MEAN, None), Some(100e6));
        assert_eq!(get(&NS_PER_LOOKUP_ALL, None), Some(10.0));
        assert_eq!(get(&CPU_SAMPLES, Some(0)), None);
    }

    #[test]
    fn full_updates_are_whole_events_per_cpu() {
        let kept = full_update_finals(&[0, 3_000_000, 0], 10_000);
        assert_eq!(
            kept,
            [
                Final::of_cpu(&CPU_UPDATES, 1, 3_333_333.0),
                Final::of(&UPDATES_MEAN, 3_333_333.0)
            ]
        );
    }
}
