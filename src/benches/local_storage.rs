//! The local-storage family, under the kernel runner's names
//! (`benchs/bench_local_storage.c`): what `bpf_task_storage_get()` costs as
//! the number of task storage maps grows past the storage's cache of 16,
//! read in order (`local-storage-cache-seq-get`) or with the first map read
//! more often (`local-storage-cache-int-get`), and a hash map lookup of the
//! same shape as the control (`local-storage-cache-hashmap-control`).
//!
//! One trigger makes 10000 rounds of lookups (`bpf/local_storage.bpf.c`);
//! every lookup is a hit, and a lookup of map 0 an important hit as well.
//! The lines are the kernel runner's `local_storage_report_*`: hits
//! throughput and latency, important hits throughput.

use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, MapCore, MapFlags, MapHandle, MapType};

use super::helper_trigger::{self, Body, HelperWorkload, KernelFunction};
use super::helpers::BPF_LOOP;
use super::{Benchmark, Info};
use crate::bpf::skel::local_storage::{LocalStorageSkel, LocalStorageSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::{Channel, Readings, Slot, HITS};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Figure, Sec, Value};
use crate::interrupt;
use crate::lines::{self, mega, Fixed, Line, Lines, Num, Piece, NS_PER_HIT};
use crate::runner::{ProducerCtx, SetUp, Workload};

/// MAX_NR_MAPS in `bpf/local_storage.bpf.c`: the arrays of maps' size.
const MAX_NR_MAPS: u64 = 1000;
/// HASHMAP_SZ there: each control hash map's entries, all filled.
const HASHMAP_SZ: u64 = 4_194_304;
/// LOOKUPS_PER_TRIGGER there: bpf_loop()'s rounds per trigger.
const ROUNDS_PER_TRIGGER: u64 = 10_000;
/// What one filled control hash map takes of the kernel's memory, roughly:
/// 4 Mi preallocated elements of about 72 bytes and 4 Mi buckets of 16.
const HASHMAP_BYTES: u64 = HASHMAP_SZ * (72 + 16);

pub const NR_MAPS: NumberOption = NumberOption {
    long: "nr_maps",
    short: None,
    value_name: "NR_MAPS",
    help: "Set number of local_storage maps (or of hash maps, for the control)",
    default: 1000,
    min: 1,
    max: MAX_NR_MAPS,
    why_max: "the BPF program's arrays of maps hold 1000",
};
pub const HASHMAP_NR_KEYS_USED: NumberOption = NumberOption {
    long: "hashmap_nr_keys_used",
    short: None,
    value_name: "NR_KEYS",
    help: "When doing hashmap test, set number of hashmap keys test uses",
    default: 1000,
    min: 1,
    max: HASHMAP_SZ,
    why_max: "each hash map holds 4194304 keys",
};

/// Every storage lookup is a hit; a lookup of map 0 is an important one too.
const LOOKUPS: Channel = Channel {
    unit: "lookups",
    about: "storage lookups",
    ..HITS
};
const IMPORTANT: Channel = Channel::counter(
    "important_hits",
    "lookups",
    "lookups of map 0, the important one (counted among the hits too)",
)
.was(Slot::Drops);
const CHANNELS: [Channel; 2] = [LOOKUPS, IMPORTANT];
const IMPORTANT_RATE: Sec = Sec::Rate(&IMPORTANT);
const HITS_RATE: Sec = Sec::Rate(&LOOKUPS);

/// Lookups per second: upstream's hits.
const HITS_FIGURE: Figure = Figure {
    unit: "lookups/s",
    ..figures::HITS
};

/// Lookups of map 0 per second: upstream's `important_hits`, a rate as hits
/// are.
pub const IMPORTANT_HITS: Figure = Figure {
    name: "important_hits",
    value: Value::PerSecond(&IMPORTANT_RATE),
    ..HITS_FIGURE
};

/// The kernel runner's `local_storage_report_progress` and
/// `local_storage_report_final`: hits throughput and latency, important
/// hits throughput (the fields run_common.sh's `local_storage` cuts).
const LINES: Lines = Lines {
    tick: &[
        lines::ITER[0],
        lines::ITER[1],
        lines::ITER[2],
        lines::ITER[3],
        Piece::Text("us): hits "),
        Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
        Piece::Text("M/s important_hits "),
        Piece::Num(Agg::Mean(&IMPORTANT_RATE), mega(8)),
        Piece::Text("M/s"),
    ],
    summary: &[Line::Always(&[
        Piece::Text("Summary: hits throughput "),
        Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
        Piece::Text(" \u{b1} "),
        Piece::Num(Agg::Sd(&HITS_RATE), mega(5)),
        Piece::Text(" M ops/s, hits latency "),
        Piece::Num(NS_PER_HIT, Num::fixed(8, 3)),
        Piece::Text(" ns/op, important_hits throughput "),
        Piece::Num(Agg::Mean(&IMPORTANT_RATE), mega(8)),
        Piece::Text(" \u{b1} "),
        Piece::Num(Agg::Sd(&IMPORTANT_RATE), mega(5)),
        Piece::Text(" M ops/s"),
        Piece::Notes,
    ])],
    fixed: Fixed::Runner {
        counts: &[
            lines::HITS_COUNTS[0],
            Line::Always(&[
                Piece::Text(" "),
                Piece::Num(Agg::Total(&Sec::Value(&IMPORTANT)), Num::whole(14)),
                Piece::Text(" important_hits"),
            ]),
        ],
        after: &[],
    },
    ..lines::HITS
};

const BPF_TASK_STORAGE_GET: KernelFunction = KernelFunction {
    what: "the bpf_task_storage_get helper (task local storage)",
    name: "bpf_task_storage_get",
    since: "5.11",
};
const BPF_GET_CURRENT_TASK_BTF: KernelFunction = KernelFunction {
    what: "the bpf_get_current_task_btf helper",
    name: "bpf_get_current_task_btf",
    since: "5.11",
};

/// The one body: `body_local_storage()`, configured before load.
const BODY: Body = Body {
    name: "local_storage",
    upstream: helper_trigger::FENTRY_GETPGID,
    ops_per_trigger: ROUNDS_PER_TRIGGER,
    calls: &[BPF_LOOP, BPF_TASK_STORAGE_GET, BPF_GET_CURRENT_TASK_BTF],
};

static OPTIONS: [BenchOption; 2] = [
    BenchOption::Number(NR_MAPS),
    BenchOption::Number(HASHMAP_NR_KEYS_USED),
];

/// What the lookups read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lookups {
    /// Task storage maps 0, 1, ... in order.
    Sequential,
    /// In order, and map 0 again after every map whose index is a multiple of 3.
    Interleaved,
    /// Hash maps of HASHMAP_SZ keys, a random key below --hashmap_nr_keys_used.
    HashMap,
}

pub static BENCHES: &[&dyn Benchmark] = &[
    &local_storage(
        "local-storage-cache-seq-get",
        "bpf_task_storage_get() on --nr_maps task storage maps in turn, 10000 per trigger; \
         map 0's are the important hits",
        Lookups::Sequential,
    ),
    &local_storage(
        "local-storage-cache-int-get",
        "as local-storage-cache-seq-get, with map 0 read again after every third map \
         (interleaved)",
        Lookups::Interleaved,
    ),
    &local_storage(
        "local-storage-cache-hashmap-control",
        "the control: a hash map lookup of a random key below --hashmap_nr_keys_used, on \
         --nr_maps filled 4194304-key hash maps in turn",
        Lookups::HashMap,
    ),
];

/// Whether the control's hash maps are filled (a run) or left empty (a
/// probe, which asks only whether the kernel takes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    AllKeys,
    Nothing,
}

struct LocalStorage {
    info: Info,
    lookups: Lookups,
}

const fn local_storage(
    name: &'static str,
    description: &'static str,
    lookups: Lookups,
) -> LocalStorage {
    let info = Info::hits(name, description)
        .untimed("one operation is one trigger of 10000 rounds of lookups")
        .needs(Needs::Link)
        .options(&OPTIONS)
        .declares(&CHANNELS, &[HITS_FIGURE, IMPORTANT_HITS], LINES);
    LocalStorage { info, lookups }
}

impl Benchmark for LocalStorage {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if config.producers != 1 {
            return Err(Error::usage(format!(
                "{} takes one producer only, as the kernel runner's, got -p {}",
                self.info.name, config.producers
            )));
        }
        self.check_memory(config.params.number(&NR_MAPS))
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let nr_maps = config.params.number(&NR_MAPS);
        // Also here: set-up may come by a path that skipped validation.
        self.check_memory(nr_maps)?;
        let nr_keys = config.params.number(&HASHMAP_NR_KEYS_USED) as u32;
        self.load(nr_maps as u32, nr_keys, Fill::AllKeys)
    }

    /// The probe asks only whether the kernel takes the program and its
    /// maps: one inner map, left empty, will tell.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        let nr_keys = config.params.number(&HASHMAP_NR_KEYS_USED) as u32;
        self.load(1, nr_keys, Fill::Nothing)
    }
}

impl LocalStorage {
    /// Refuses a control run whose filled hash maps would take more than
    /// half the memory available: the kernel would find it by killing
    /// processes, not by failing the map's creation.
    fn check_memory(&self, nr_maps: u64) -> Result<()> {
        if self.lookups != Lookups::HashMap {
            return Ok(());
        }
        let needed = nr_maps * HASHMAP_BYTES;
        match super::memory::available() {
            Some(available) if needed > available / 2 => Err(Error::usage(format!(
                "{} with --nr_maps {nr_maps} would fill {nr_maps} hash maps of {HASHMAP_SZ} \
                 keys, about {} MiB, more than half of the {} MiB available (give --nr_maps \
                 1, as run_bench_local_storage.sh does)",
                self.info.name,
                needed >> 20,
                available >> 20
            ))),
            _ => Ok(()),
        }
    }

    fn load(&self, nr_maps: u32, nr_keys: u32, fill: Fill) -> Result<SetUp> {
        let lookups = self.lookups;
        let mut types = None;
        let (skel, link, used) = helper_trigger::load(&BODY, |program| {
            let mut storage = bpf::ObjectStorage::new();
            // SAFETY: this storage is opened once, and the skeleton goes into
            // an `Owned` with it (or, failing to load, drops before it).
            let mut open = LocalStorageSkelBuilder::default().open(unsafe { storage.object() })?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.tgid = std::process::id();
                rodata.use_hashmap = u32::from(lookups == Lookups::HashMap);
                rodata.interleave = u32::from(lookups == Lookups::Interleaved);
                rodata.num_maps = nr_maps;
                rodata.hashmap_num_keys = nr_keys;
            }
            for mut prog in open.open_object_mut().progs_mut() {
                if prog.name() == program {
                    prog.set_autoload(true);
                }
            }
            // The control's inner template is a preallocated 4194304-key
            // hash map: libbpf creates it to create the outer array, which
            // costs time and memory. The task storage runs put nothing in
            // that array, so a one-key template does for them.
            let small_template = match lookups {
                Lookups::HashMap => None,
                _ => Some(small_hash_template(&mut open.maps.hash_maps)?),
            };
            let outer = match lookups {
                Lookups::HashMap => &open.maps.hash_maps,
                _ => &open.maps.task_storage_maps,
            };
            // libbpf frees the outer maps' inner templates once it has
            // created them: read their types before load.
            // SAFETY: the open map is alive for this call; libbpf only reads it.
            types = unsafe {
                let template = libbpf_sys::bpf_map__inner_map(outer.as_libbpf_object().as_ptr());
                (!template.is_null()).then(|| {
                    (
                        libbpf_sys::bpf_map__btf_key_type_id(template),
                        libbpf_sys::bpf_map__btf_value_type_id(template),
                    )
                })
            };
            let loaded = open.load()?;
            // The outer array holds the template's description, not the map.
            drop(small_template);
            Ok(bpf::Owned::new(loaded, storage))
        })?;
        let types = types.ok_or_else(|| {
            Error::setup("the outer map of the local-storage object has no inner map")
        })?;
        fill_outer_map(&skel, lookups, nr_maps, types, fill)?;
        // SAFETY: both arrays are counters.h's slots in the skeleton's .bss,
        // and the skeleton is kept in the workload, dropped after them.
        let (hits, important) = unsafe {
            let bss = skel.maps.bss_data.as_deref();
            (
                HitCounters::new(bss.map(|bss| &bss.hits[..]))?,
                HitCounters::new(bss.map(|bss| &bss.important_hits[..]))?,
            )
        };
        let workload = LocalStorageWorkload {
            important,
            inner: HelperWorkload::new(skel, link, hits, BODY),
        };
        Ok(SetUp::producers(workload).from_trigger(used))
    }
}

/// Creates `nr_maps` inner maps (task storage, or filled hash maps) and puts
/// them in the outer array the lookups read. The outer array keeps each map
/// alive: their descriptors close on return.
fn fill_outer_map(
    skel: &LocalStorageSkel<'_>,
    lookups: Lookups,
    nr_maps: u32,
    (key_type, value_type): (u32, u32),
    fill: Fill,
) -> Result<()> {
    let outer = match lookups {
        Lookups::HashMap => &skel.maps.hash_maps,
        _ => &skel.maps.task_storage_maps,
    };
    // The inner maps carry the object's BTF types for key and value (the
    // template's), which task storage requires.
    // SAFETY: the loaded object is alive for this call; libbpf only reads it.
    let btf_fd =
        unsafe { libbpf_sys::bpf_object__btf_fd(skel.object().as_libbpf_object().as_ptr()) };
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
        btf_fd: btf_fd as u32,
        btf_key_type_id: key_type,
        btf_value_type_id: value_type,
        map_flags: match lookups {
            Lookups::HashMap => 0,
            _ => libbpf_sys::BPF_F_NO_PREALLOC,
        },
        ..Default::default()
    };
    let int = std::mem::size_of::<i32>() as u32;
    let mut inner_maps = Vec::with_capacity(nr_maps as usize);
    for index in 0..nr_maps {
        let inner = match lookups {
            Lookups::HashMap => MapHandle::create(
                MapType::Hash,
                None::<&str>,
                int,
                int,
                HASHMAP_SZ as u32,
                &opts,
            ),
            _ => MapHandle::create(MapType::TaskStorage, None::<&str>, int, int, 0, &opts),
        }
        .map_err(|e| Error::setup(format!("creating inner map {index} failed: {e:#}")))?;
        if lookups == Lookups::HashMap && fill == Fill::AllKeys {
            fill_hash_map(&inner)?;
        }
        inner_maps.push(inner);
    }
    let keys: Vec<u8> = (0..nr_maps).flat_map(u32::to_ne_bytes).collect();
    let fds: Vec<u8> = inner_maps
        .iter()
        .flat_map(|map| map.as_fd().as_raw_fd().to_ne_bytes())
        .collect();
    // Each update of an array of maps waits for an RCU grace period
    // (10-20 ms here); a batch waits once. Kernels without batches for it
    // take the maps one by one.
    if outer
        .update_batch(&keys, &fds, nr_maps, MapFlags::ANY, MapFlags::ANY)
        .is_ok()
    {
        return Ok(());
    }
    for (index, (key, fd)) in keys.chunks(4).zip(fds.chunks(4)).enumerate() {
        outer.update(key, fd, MapFlags::ANY).map_err(|e| {
            Error::setup(format!("putting inner map {index} in place failed: {e:#}"))
        })?;
    }
    Ok(())
}

/// Every key of a control hash map, mapped to itself, as upstream fills
/// them (its lookups find their key); in batches, which the kernel has had
/// since 5.6, where upstream makes one call per key.
fn fill_hash_map(map: &MapHandle) -> Result<()> {
    const BATCH: u32 = 1 << 16;
    let mut keys = Vec::with_capacity(BATCH as usize * 4);
    for start in (0..HASHMAP_SZ as u32).step_by(BATCH as usize) {
        // A map takes about a second to fill: a signal stops between batches.
        interrupt::check("filling the control's hash maps")?;
        keys.clear();
        for key in start..start + BATCH {
            keys.extend_from_slice(&(key as i32).to_ne_bytes());
        }
        map.update_batch(&keys, &keys, BATCH, MapFlags::ANY, MapFlags::ANY)
            .map_err(|e| Error::setup(format!("filling a control hash map failed: {e:#}")))?;
    }
    Ok(())
}

/// A one-key hash map, given to libbpf as `outer`'s inner template in place
/// of the declared one, to be kept open until the object is loaded.
fn small_hash_template(
    outer: &mut libbpf_rs::OpenMapMut<'_>,
) -> std::result::Result<MapHandle, libbpf_rs::Error> {
    let int = std::mem::size_of::<i32>() as u32;
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
        ..Default::default()
    };
    let template = MapHandle::create(MapType::Hash, None::<&str>, int, int, 1, &opts)?;
    // SAFETY: the open map is alive for this call; libbpf keeps the
    // descriptor's number, which the caller keeps open until load.
    let err = unsafe {
        libbpf_sys::bpf_map__set_inner_map_fd(
            outer.as_libbpf_object().as_ptr(),
            template.as_fd().as_raw_fd(),
        )
    };
    if err != 0 {
        return Err(libbpf_rs::Error::from_raw_os_error(-err));
    }
    Ok(template)
}

/// The helper workload, and the important hits beside its hits.
struct LocalStorageWorkload {
    important: HitCounters,
    inner: HelperWorkload<LocalStorageSkel<'static>>,
}

impl Workload for LocalStorageWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        self.inner.produce(ctx)
    }

    fn read(&self, ops: u64) -> Readings {
        let mut readings = self.inner.read(ops);
        readings.push(Some(self.important.total()));
        readings
    }
}

#[cfg(test)]
mod tests {

    /// The kernel runner's `local_storage_report_*` lines, to the space.
    #[test]
    fn lines_are_the_kernel_runners_local_storage_report() {
        use crate::report::lines::testing;
        let bench = "local-storage-cache-seq-get";
        assert_eq!(
            testing::tick(bench, &[12_345_000, 1_234_000], 1),
            "Iter   3 ( 12.345us): hits   12.345M/s important_hits    1.234M/s"
        );
        let seconds = [[12_345_000u64, 1_234_000]; 3];
        assert_eq!(
            testing::summary(bench, &seconds, 1),
            [
                "Summary: hits throughput   12.345 \u{b1} 0.000 M ops/s, hits latency   81.004 \
              ns/op, important_hits throughput    1.234 \u{b1} 0.000 M ops/s"
            ]
        );
        let fixed = testing::fixed(bench, &[20_000, 20], 1);
        assert_eq!(fixed[4], "          20000 hits");
        assert_eq!(fixed[5], "             20 important_hits");
    }
}
