//! The attach family: what attaching and detaching N probes costs. Each
//! benchmark sets up a BPF object and hands the cycle runner a
//! [`CycleWorkload`]: how to attach each of its links, and how to check that
//! every attached probe fires (src/attach/run.rs times the rest).

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{KprobeMultiOpts, Link, UprobeMultiOpts, UprobeOpts};

use super::trigger::{attachable_kernel_functions, kprobe_refusal};
use super::{Benchmark, Info, Workers};
use crate::attach::sites;
use crate::bpf::skel::attach::{AttachSkel, AttachSkelBuilder};
use crate::bpf::{self, Needs};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures;
use crate::runner::cycles::{CycleWorkload, Fired};
use crate::runner::{Prepared, SetUp};
use crate::targets::SELF_EXE;

/// `--attach-cnt N`, upstream's name; each family has its own default and
/// bound.
const fn attach_cnt(default: u64, max: u64, why_max: &'static str) -> BenchOption {
    BenchOption::Number(NumberOption {
        long: "attach-cnt",
        short: None,
        value_name: "N",
        help: "Probes attached (and detached) per cycle",
        default,
        min: 1,
        max,
        why_max,
    })
}

/// The `--attach-cnt` of `config`, for a benchmark of this family.
fn probe_count(info: &Info, config: &RunConfig) -> usize {
    match info.options.first() {
        Some(BenchOption::Number(option)) => config.params.number(option) as usize,
        _ => 0,
    }
}

const SITES_MAX: &str = "the attach sites compiled into bench";

/// How a benchmark attaches its probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// One classic uprobe (a perf event and its link) per site.
    Uprobe,
    /// One uprobe-multi link over every site.
    UprobeMulti,
    /// One libbpf USDT attach over a group of sites sharing a probe name.
    Usdt,
    /// One classic kprobe per kernel function.
    Kprobe,
    /// One kprobe-multi link over the functions.
    KprobeMulti,
    /// One fentry program on its function.
    Fentry,
}

struct AttachBench {
    info: Info,
    kind: Kind,
}

const fn bench(name: &'static str, description: &'static str, kind: Kind, needs: Needs) -> Info {
    Info {
        workers: Workers::Cycles,
        // A cycle's times are its record's, not channels read each tick.
        channels: &[],
        figures: &[figures::ATTACH, figures::DETACH],
        ..Info::hits(name, description)
    }
    .needs(needs)
    .options(match kind {
        Kind::Uprobe => UPROBE_CNT,
        Kind::UprobeMulti => UPROBE_MULTI_CNT,
        Kind::Usdt => USDT_CNT,
        Kind::Kprobe => KPROBE_CNT,
        Kind::KprobeMulti => KPROBE_MULTI_CNT,
        Kind::Fentry => FENTRY_CNT,
    })
}

// Classic uprobes default to few: detaching each one waits for grace periods
// (about 155 ms each on 6.18 here).
const UPROBE_CNT: &[BenchOption] = &[attach_cnt(20, sites::SITE_COUNT as u64, SITES_MAX)];
const UPROBE_MULTI_CNT: &[BenchOption] = &[attach_cnt(10_000, sites::SITE_COUNT as u64, SITES_MAX)];
const USDT_CNT: &[BenchOption] = &[attach_cnt(10_000, 50_000, "the largest USDT site group")];
const KPROBE_CNT: &[BenchOption] = &[attach_cnt(100, 100_000, "")];
const KPROBE_MULTI_CNT: &[BenchOption] = &[attach_cnt(10_000, 100_000, "")];
const FENTRY_CNT: &[BenchOption] = &[attach_cnt(1, 1, "an fentry program has one function")];

pub static BENCHES: &[&dyn Benchmark] = &[
    &AttachBench {
        info: bench(
            "attach-uprobe",
            "attach and detach N classic uprobes, one link per site",
            Kind::Uprobe,
            Needs::UprobeEvent,
        ),
        kind: Kind::Uprobe,
    },
    &AttachBench {
        info: bench(
            "attach-uprobe-multi",
            "attach and detach one uprobe-multi link over N sites",
            Kind::UprobeMulti,
            Needs::Link,
        ),
        kind: Kind::UprobeMulti,
    },
    &AttachBench {
        info: bench(
            "attach-usdt",
            "attach and detach N USDT sites of one probe name through libbpf",
            Kind::Usdt,
            Needs::Usdt,
        ),
        kind: Kind::Usdt,
    },
    &AttachBench {
        info: bench(
            "attach-kprobe",
            "attach and detach N classic kprobes on kernel functions",
            Kind::Kprobe,
            Needs::KprobeEvent,
        ),
        kind: Kind::Kprobe,
    },
    &AttachBench {
        info: bench(
            "attach-kprobe-multi",
            "attach and detach one kprobe-multi link over N kernel functions",
            Kind::KprobeMulti,
            Needs::Link,
        ),
        kind: Kind::KprobeMulti,
    },
    &AttachBench {
        info: bench(
            "attach-fentry",
            "attach and detach an fentry program",
            Kind::Fentry,
            Needs::Link,
        ),
        kind: Kind::Fentry,
    },
];

impl Kind {
    /// The program of bpf/attach.bpf.c this kind attaches.
    fn program(self) -> &'static str {
        match self {
            Kind::Uprobe => "count_site_uprobe",
            Kind::UprobeMulti => "count_site_multi",
            Kind::Usdt => "count_site_usdt",
            Kind::Kprobe => "empty_kprobe",
            Kind::KprobeMulti => "empty_kprobe_multi",
            Kind::Fentry => "empty_fentry",
        }
    }
}

/// Where the probes go: sites in bench (their numbers and file offsets, and
/// the USDT probe name of the group), or kernel functions.
enum Places {
    Sites {
        range: Range<usize>,
        offsets: Vec<usize>,
        usdt_name: Option<String>,
    },
    Functions(Vec<String>),
    Fentry,
}

impl AttachBench {
    /// Finds the places for `count` probes, refusing what this kernel or
    /// bench cannot give before anything is loaded.
    fn places(&self, count: usize) -> Result<Places> {
        let exe = Path::new(SELF_EXE);
        if self.kind == Kind::UprobeMulti && !bpf::uprobe_multi_links() {
            return Err(Error::unsupported(crate::kernel::needs_linux(
                "uprobe-multi links need",
                "6.6",
            )));
        }
        match self.kind {
            Kind::Uprobe | Kind::UprobeMulti => Ok(Places::Sites {
                range: 0..count,
                offsets: sites::offsets(exe, 0..count)?,
                usdt_name: None,
            }),
            Kind::Usdt => {
                let (name, range) = usdt_group(count)?;
                Ok(Places::Sites {
                    offsets: sites::offsets(exe, range.clone())?,
                    range,
                    usdt_name: Some(name),
                })
            }
            Kind::Kprobe | Kind::KprobeMulti => {
                if let Some(refusal) = kprobe_refusal(self.kind == Kind::KprobeMulti) {
                    return Err(refusal);
                }
                let mut functions = attachable_kernel_functions()?;
                if functions.len() < count {
                    return Err(Error::usage(format!(
                        "--attach-cnt {count}: this kernel has {} attachable functions",
                        functions.len()
                    )));
                }
                // Classic kprobes keep the rest as spares: a function the
                // kprobe code refuses (a NOKPROBE one, a name several
                // functions share) is skipped for the next, and named.
                if self.kind == Kind::KprobeMulti {
                    functions.truncate(count);
                }
                Ok(Places::Functions(functions))
            }
            Kind::Fentry => Ok(Places::Fentry),
        }
    }
}

/// The USDT group of `count` sites, or why there is none.
fn usdt_group(count: usize) -> Result<(String, Range<usize>)> {
    sites::usdt_group(count).ok_or_else(|| {
        Error::usage(format!(
            "--attach-cnt {count}: attach-usdt attaches one group of USDT sites sharing a \
             probe name, of {} sites",
            sites::USDT_GROUPS.map(|g| g.to_string()).join(", ")
        ))
    })
}

impl Benchmark for AttachBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if self.kind == Kind::Usdt {
            usdt_group(probe_count(&self.info, config))?;
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let count = probe_count(&self.info, config);
        let places = self.places(count)?;
        let skel = load_object(self.kind.program())?;
        let cycles = Attachments {
            kind: self.kind,
            count,
            places,
            skel,
            next_function: AtomicUsize::new(0),
            skipped: Mutex::new(Vec::new()),
        };
        Ok(SetUp {
            run: Prepared::Cycles(Box::new(cycles)),
            trigger: None,
            red_zone: None,
        })
    }
}

/// A loaded attach benchmark: what its cycles attach, and where.
struct Attachments {
    kind: Kind,
    count: usize,
    places: Places,
    skel: bpf::Owned<AttachSkel<'static>>,
    /// Classic kprobes: the next function of the list to try.
    next_function: AtomicUsize,
    /// Classic kprobes: the functions the kernel refused to kprobe.
    skipped: Mutex<Vec<String>>,
}

/// Functions a classic kprobe may be refused on before the cycle gives up.
const MAX_SKIPPED: usize = 1_000;

impl Attachments {
    fn program(&self) -> Result<libbpf_rs::ProgramMut<'_>> {
        program(&self.skel, self.kind.program())
    }

    fn site_hits(&self, range: Range<usize>) -> Result<Vec<u64>> {
        site_hits(&self.skel, range)
    }
}

/// Opens bpf/attach.bpf.c with the sites' address set and only `program`
/// loaded.
pub(super) fn load_object(program: &str) -> Result<bpf::Owned<AttachSkel<'static>>> {
    let mut storage = bpf::ObjectStorage::new();
    // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
    // with it.
    let mut open = unsafe { storage.open::<AttachSkelBuilder>("the attach BPF object")? };
    bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the attach object")?.sites_base =
        sites::address(0) as u64;
    for mut prog in open.open_object_mut().progs_mut() {
        prog.set_autoload(prog.name() == program);
    }
    let skel = open.load().map_err(|e| match bpf::errno(&e) {
        Some(libc::EPERM) if program == Kind::Fentry.program() => {
            Error::unsupported("tracing programs are refused (EPERM: lockdown or an LSM)")
        }
        _ => bpf::load_error("the attach program", &e),
    })?;
    Ok(bpf::Owned::new(skel, storage))
}

/// The loaded `name` of the attach object.
pub(super) fn program<'a>(
    skel: &'a bpf::Owned<AttachSkel<'static>>,
    name: &str,
) -> Result<libbpf_rs::ProgramMut<'a>> {
    skel.object()
        .progs_mut()
        .find(|p| p.name() == name)
        .ok_or_else(|| Error::setup(format!("the attach object has no program {name}")))
}

/// The hit count of every site in `range`, read from the mmapped .bss.
pub(super) fn site_hits(
    skel: &bpf::Owned<AttachSkel<'static>>,
    range: Range<usize>,
) -> Result<Vec<u64>> {
    let bss = skel
        .maps
        .bss_data
        .as_deref()
        .ok_or_else(|| Error::setup("the attach object's .bss is not memory-mapped"))?;
    let slots = bss
        .site_hits
        .get(range.clone())
        .ok_or_else(|| Error::setup(format!("sites {range:?} are beyond the BPF counters")))?;
    // SAFETY: each slot is a live, aligned u32 of the mapping that BPF
    // programs update atomically; `bss` keeps the mapping borrowed.
    Ok(slots
        .iter()
        .map(|slot| u64::from(unsafe { std::ptr::read_volatile(slot) }))
        .collect())
}

impl Attachments {
    /// The next classic kprobe: on the next function of the list the kernel
    /// lets a kprobe on. The ftrace list holds functions kprobes refuse
    /// (NOKPROBE_SYMBOL: EINVAL; a name several functions share:
    /// EADDRNOTAVAIL; one gone: ENOENT): those are skipped and named.
    fn attach_kprobe(
        &self,
        program: &libbpf_rs::ProgramMut<'_>,
        functions: &[String],
    ) -> Result<Link> {
        loop {
            let i = self.next_function.fetch_add(1, Relaxed);
            let function = functions.get(i).ok_or_else(|| {
                Error::unsupported(format!(
                    "this kernel lets kprobes on fewer than {} of its attachable functions",
                    self.count
                ))
            })?;
            let error = match program.attach_kprobe(false, function) {
                Ok(link) => return Ok(link),
                Err(error) => error,
            };
            let refused = matches!(
                bpf::errno(&error),
                Some(libc::EINVAL | libc::EADDRNOTAVAIL | libc::ENOENT)
            );
            let mut skipped = self
                .skipped
                .lock()
                .map_err(|_| Error::runtime("a thread panicked while attaching"))?;
            if !refused || skipped.len() >= MAX_SKIPPED {
                return Err(bpf::attach_error(
                    &format!("the kprobe on {function}"),
                    &error,
                ));
            }
            skipped.push(function.clone());
        }
    }

    /// Runs every site of `range` once and judges the hits each got.
    fn fire_sites(&self, range: Range<usize>) -> Result<Fired> {
        let before = self.site_hits(range.clone())?;
        for site in range.clone() {
            sites::fire(site);
        }
        let after = self.site_hits(range.clone())?;
        Ok(Fired::judge(
            range
                .zip(before.iter().zip(&after))
                .map(|(site, (b, a))| (site, a.saturating_sub(*b))),
        ))
    }
}

impl CycleWorkload for Attachments {
    fn probes(&self) -> usize {
        self.count
    }

    fn links(&self) -> usize {
        match self.kind {
            Kind::Uprobe | Kind::Kprobe => self.count,
            _ => 1,
        }
    }

    fn attach(&self, index: usize) -> Result<Link> {
        let program = self.program()?;
        let exe = Path::new(SELF_EXE);
        match &self.places {
            Places::Sites {
                range,
                offsets,
                usdt_name,
            } => match (self.kind, usdt_name) {
                (Kind::Usdt, Some(name)) => program
                    .attach_usdt(-1, exe, sites::USDT_PROVIDER, name)
                    .map_err(|e| {
                        bpf::attach_error(
                            &format!("the USDT probe {}:{name}", sites::USDT_PROVIDER),
                            &e,
                        )
                    }),
                (Kind::UprobeMulti, _) => {
                    let opts = UprobeMultiOpts {
                        offsets: offsets.clone(),
                        ..Default::default()
                    };
                    program
                        .attach_uprobe_multi_with_opts(-1, exe, "", opts)
                        .map_err(|e| {
                            bpf::attach_error(
                                &format!("the uprobe-multi link over {} sites", offsets.len()),
                                &e,
                            )
                        })
                }
                _ => {
                    let offset = offsets[index];
                    program
                        .attach_uprobe_with_opts(-1, exe, offset, UprobeOpts::default())
                        .map_err(|e| {
                            bpf::attach_error(
                                &format!(
                                    "the uprobe on attach site {} (offset {offset:#x})",
                                    range.start + index
                                ),
                                &e,
                            )
                        })
                }
            },
            Places::Functions(functions) => match self.kind {
                Kind::KprobeMulti => {
                    let opts = KprobeMultiOpts {
                        symbols: functions.clone(),
                        ..Default::default()
                    };
                    program
                        .attach_kprobe_multi_with_opts(opts)
                        .map_err(|e| bpf::attach_error("the kprobe-multi link", &e))
                }
                _ => self.attach_kprobe(&program, functions),
            },
            Places::Fentry => program
                .attach()
                .map_err(|e| bpf::attach_error("the fentry program", &e)),
        }
    }

    fn verify(&self) -> Option<Result<Fired>> {
        match &self.places {
            Places::Sites { range, .. } => Some(self.fire_sites(range.clone())),
            _ => None,
        }
    }

    fn skipped(&self) -> Vec<String> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
