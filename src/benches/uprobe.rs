//! The uprobe trigger family: the user-space and syscall baselines, and a BPF
//! counter on uprobes, uretprobes and multi-uprobes over each probe target.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{Link, UprobeMultiOpts, UprobeOpts};

use super::body::{self, BodyState};
use super::{Benchmark, Info};
use crate::bpf::skel::uprobe::UprobeSkelBuilder;
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::channels::Readings;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::kernel;
use crate::probe_path::{self, ProbePath};
use crate::red_zone::{self, RedZoneFound, Site};
use crate::runner::{ConsumerCtx, Facts, ProducerCtx, SetUp, Workload};
use crate::targets::{self, Target, SELF_EXE};

pub static BENCHES: &[&dyn Benchmark] = &[
    &Baseline {
        info: Info::trigger(
            "trig-usermode-count",
            "call the nop target and count it atomically in user space, no probe: the baseline",
        )
        .timed_per_hit(),
        work: BaselineOp::CallNop,
    },
    &Baseline {
        info: Info::trigger(
            "trig-syscall-count",
            "getpgid(own tid) and an atomic count in user space: the syscall baseline",
        )
        .timed_per_hit(),
        work: BaselineOp::Getpgid,
    },
    &Baseline {
        info: Info::trigger(
            "trig-usermode-nocount",
            "call the nop target, counted per burst: the harness's ceiling",
        )
        .timed_per_hit(),
        work: BaselineOp::CallNopUncounted,
    },
    &probe(
        "trig-uprobe-nop",
        Attach::Uprobe,
        Target::Nop,
        "uprobe on a nop",
    ),
    &probe(
        "trig-uprobe-push",
        Attach::Uprobe,
        Target::Push,
        "uprobe on push %rbp",
    ),
    &probe(
        "trig-uprobe-ret",
        Attach::Uprobe,
        Target::Ret,
        "uprobe on ret",
    ),
    &probe(
        "trig-uprobe-nop5",
        Attach::Uprobe,
        Target::Nop5,
        "uprobe on a 5-byte nop",
    ),
    &probe(
        "trig-uprobe-nop10",
        Attach::Uprobe,
        Target::Nop10,
        "uprobe on the 10-byte nop (upstream's bytes)",
    ),
    &probe(
        "trig-uretprobe-nop",
        Attach::Uretprobe,
        Target::Nop,
        "uretprobe on a function starting with nop",
    ),
    &probe(
        "trig-uretprobe-push",
        Attach::Uretprobe,
        Target::Push,
        "uretprobe on a function starting with push %rbp",
    ),
    &probe(
        "trig-uretprobe-ret",
        Attach::Uretprobe,
        Target::Ret,
        "uretprobe on a function that is just ret",
    ),
    &probe(
        "trig-uretprobe-nop5",
        Attach::Uretprobe,
        Target::Nop5,
        "uretprobe on a function starting with a 5-byte nop",
    ),
    &probe(
        "trig-uretprobe-nop10",
        Attach::Uretprobe,
        Target::Nop10,
        "uretprobe on a function starting with the 10-byte nop",
    ),
    &probe(
        "trig-uprobe-multi-nop",
        Attach::UprobeMulti,
        Target::Nop,
        "uprobe-multi link on a nop",
    ),
    &probe(
        "trig-uprobe-multi-push",
        Attach::UprobeMulti,
        Target::Push,
        "uprobe-multi link on push %rbp",
    ),
    &probe(
        "trig-uprobe-multi-ret",
        Attach::UprobeMulti,
        Target::Ret,
        "uprobe-multi link on ret",
    ),
    &probe(
        "trig-uprobe-multi-nop5",
        Attach::UprobeMulti,
        Target::Nop5,
        "uprobe-multi link on a 5-byte nop",
    ),
    &probe(
        "trig-uprobe-multi-nop10",
        Attach::UprobeMulti,
        Target::Nop10,
        "uprobe-multi link on the 10-byte nop",
    ),
    &probe(
        "trig-uretprobe-multi-nop",
        Attach::UretprobeMulti,
        Target::Nop,
        "uretprobe-multi link, function starting with nop",
    ),
    &probe(
        "trig-uretprobe-multi-push",
        Attach::UretprobeMulti,
        Target::Push,
        "uretprobe-multi link, function starting with push %rbp",
    ),
    &probe(
        "trig-uretprobe-multi-ret",
        Attach::UretprobeMulti,
        Target::Ret,
        "uretprobe-multi link, function that is just ret",
    ),
    &probe(
        "trig-uretprobe-multi-nop5",
        Attach::UretprobeMulti,
        Target::Nop5,
        "uretprobe-multi link, function starting with a 5-byte nop",
    ),
    &probe(
        "trig-uretprobe-multi-nop10",
        Attach::UretprobeMulti,
        Target::Nop10,
        "uretprobe-multi link, function starting with the 10-byte nop",
    ),
];

/// A baseline: producers do `work` and count in user space, nothing probed.
struct Baseline {
    info: Info,
    work: BaselineOp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BaselineOp {
    /// Call the nop target, then an atomic increment of a counter slot, as
    /// the kernel runner's usermode-count.
    CallNop,
    /// getpgid of the caller's own thread id (a pid lookup in the kernel),
    /// then the same increment, as the kernel runner's syscall-count.
    Getpgid,
    /// Call the nop target; the runner's per-burst store is the only count.
    CallNopUncounted,
}

/// Counter slots, as many as the kernel runner's: a thread's slot is picked
/// by a multiplicative hash of its thread id, each slot on its own line.
const SLOTS: usize = 256;

#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU64);

/// The baselines' user-space counters.
struct Counted {
    work: BaselineOp,
    slots: Box<[Slot]>,
}

impl Benchmark for Baseline {
    fn info(&self) -> &Info {
        &self.info
    }
    fn setup(&self, _config: &RunConfig) -> Result<SetUp> {
        Ok(SetUp::producers(Counted {
            work: self.work,
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
        }))
    }
}

/// The slot of the thread with id `tid`: the top byte of its Fibonacci hash.
fn slot_of(tid: u32) -> usize {
    (tid.wrapping_mul(2_654_435_769) >> 24) as usize
}

impl Workload for Counted {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        let slot = &self.slots[slot_of(tid as u32)].0;
        // One loop per kind, each with its operation inlined: the cheapest
        // operations must not pay for an indirect call.
        match self.work {
            BaselineOp::CallNop => ctx.run(|| {
                targets::call_nop();
                slot.fetch_add(1, Relaxed);
            }),
            // SAFETY: getpgid only reads a process group.
            BaselineOp::Getpgid => ctx.run(|| {
                unsafe { libc::syscall(libc::SYS_getpgid, libc::c_long::from(tid)) };
                slot.fetch_add(1, Relaxed);
            }),
            BaselineOp::CallNopUncounted => ctx.run(targets::call_nop),
        }
        Ok(())
    }

    fn read(&self, ops: u64) -> Readings {
        let hits = match self.work {
            BaselineOp::CallNopUncounted => ops,
            BaselineOp::CallNop | BaselineOp::Getpgid => {
                self.slots.iter().map(|s| s.0.load(Relaxed)).sum()
            }
        };
        vec![Some(hits)]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attach {
    Uprobe,
    Uretprobe,
    UprobeMulti,
    UretprobeMulti,
}

impl Attach {
    fn is_return(self) -> bool {
        matches!(self, Attach::Uretprobe | Attach::UretprobeMulti)
    }
    fn is_multi(self) -> bool {
        matches!(self, Attach::UprobeMulti | Attach::UretprobeMulti)
    }
    fn what(self) -> &'static str {
        match self {
            Attach::Uprobe => "a uprobe",
            Attach::Uretprobe => "a uretprobe",
            Attach::UprobeMulti => "a uprobe-multi link",
            Attach::UretprobeMulti => "a uretprobe-multi link",
        }
    }
}

/// A BPF program that only counts, on one target, attached one way.
struct UprobeBench {
    info: Info,
    attach: Attach,
    target: Target,
}

const fn probe(
    name: &'static str,
    attach: Attach,
    target: Target,
    description: &'static str,
) -> UprobeBench {
    UprobeBench {
        info: Info::trigger(name, description)
            .needs(match attach {
                Attach::UprobeMulti | Attach::UretprobeMulti => Needs::Link,
                Attach::Uprobe | Attach::Uretprobe => Needs::UprobeEvent,
            })
            .user_stacktrace()
            .pid_filter()
            .timed_per_hit(),
        attach,
        target,
    }
}

impl Benchmark for UprobeBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let exe = Path::new(SELF_EXE);
        let offset = targets::resolve(exe, self.target)?;
        let offset = usize::try_from(offset)
            .map_err(|_| Error::setup(format!("offset {offset:#x} does not fit in usize")))?;

        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<UprobeSkelBuilder>("the uprobe BPF object")? };
        // Load only the program this benchmark attaches.
        open.progs
            .count_uprobe
            .set_autoload(!self.attach.is_multi());
        open.progs
            .count_uprobe_multi
            .set_autoload(self.attach.is_multi());
        body::configure(
            bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the uprobe object")?,
            config,
        );
        let skel = open
            .load()
            .map_err(|e| bpf::load_error(&body::program("the counting program", config), &e))?;
        let skel = bpf::Owned::new(skel, storage);
        // SAFETY: `body_drops` is counters.h's slot layout, and the skeleton
        // is kept in the workload, dropped after the body.
        let body = unsafe { body::body_state!(config, skel)? };

        let pid = attach_pid(config);
        let retprobe = self.attach.is_return();
        let link = if self.attach.is_multi() {
            let opts = UprobeMultiOpts {
                offsets: vec![offset],
                retprobe,
                ..Default::default()
            };
            skel.progs
                .count_uprobe_multi
                .attach_uprobe_multi_with_opts(pid, exe, "", opts)
        } else {
            let opts = UprobeOpts {
                retprobe,
                ..Default::default()
            };
            skel.progs
                .count_uprobe
                .attach_uprobe_with_opts(pid, exe, offset, opts)
        }
        .map_err(|e| self.attach_refused(&e))?;
        // The red zone on this probe's path: the same program on the red
        // zone site of the same instruction, entered as a uprobe (a
        // uretprobe's path is its entry probe's).
        let red_zone = red_zone::found(Site::of(self.target, false), |site| {
            if self.attach.is_multi() {
                let opts = UprobeMultiOpts {
                    offsets: vec![site],
                    ..Default::default()
                };
                skel.progs
                    .count_uprobe_multi
                    .attach_uprobe_multi_with_opts(pid, exe, "", opts)
            } else {
                skel.progs.count_uprobe.attach_uprobe_with_opts(
                    pid,
                    exe,
                    site,
                    UprobeOpts::default(),
                )
            }
            .map_err(|e| bpf::attach_error("the red zone check's probe", &e))
        });

        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits = unsafe { bpf::hit_counters!(skel)? };
        let found = red_zone.as_ref().ok().copied();
        let workload = ProbedTarget::new(link, body, hits, skel, self.target, red_zone);
        Ok(SetUp::producers(workload).with_red_zone(found))
    }
}

impl UprobeBench {
    /// Why the kernel refused to attach, naming the missing link type when
    /// the kernel lacks it.
    fn attach_refused(&self, err: &libbpf_rs::Error) -> Error {
        if self.attach.is_multi() && !bpf::uprobe_multi_links() {
            return Error::unsupported(kernel::needs_linux("uprobe-multi links need", "6.6"));
        }
        if self.target == Target::Nop10 && bpf::errno(err) == Some(bpf::ENOTSUPP) {
            return Error::unsupported(nop10_refused());
        }
        bpf::attach_error(self.attach.what(), err)
    }
}

/// Why a kernel refuses a probe on the 10-byte nop: its uprobe instruction
/// check (`uprobe_init_insn`) rejects any instruction with a CS segment
/// override prefix (0x2e) with ENOTSUPP, and the nop is one; kernels that
/// optimize the 10-byte nop exempt that exact nop from the check.
pub(super) fn nop10_refused() -> String {
    format!(
        "this kernel cannot probe the 10-byte nop ({}): its uprobe instruction check refuses \
         the CS segment-override prefix 0x2e (ENOTSUPP); {}",
        targets::Target::Nop10.instruction(),
        kernel::needs_linux("probing and optimizing that nop needs", NOP10_FIRST)
    )
}

/// The first Linux release seen to take (and optimize) the 10-byte nop:
/// Debian's 7.2.13 and 7.3.4 do, 6.12 and 6.18 refuse it (docs/kernels.md).
pub(super) const NOP10_FIRST: &str = "7.2";

/// The pid probes are attached for: this process with `--pid-filter`, every
/// process (-1) otherwise.
pub(super) fn attach_pid(config: &RunConfig) -> i32 {
    if config.pid_filter {
        // A pid always fits: the kernel's pid_max is at most 2^22.
        std::process::id() as i32
    } else {
        -1
    }
}

/// Producers call the probed target; the BPF program counts the hits. The
/// USDT family uses it too, with its own skeleton.
pub(super) struct ProbedTarget<S> {
    // Fields drop in order: the link detaches before the object is closed.
    _link: Link,
    /// After the link: the ringbuf body's consumers are done before its
    /// rings go.
    body: BodyState,
    hits: HitCounters,
    _skel: S,
    target: Target,
    /// The red zone on the probe's path, checked at set-up.
    red_zone: Result<RedZoneFound>,
    /// A USDT site probed at its second instruction (the nop after the
    /// first `nop`), where bench put it rather than libbpf.
    at_second: bool,
}

impl<S> ProbedTarget<S> {
    pub(super) fn new(
        link: Link,
        body: BodyState,
        hits: HitCounters,
        skel: S,
        target: Target,
        red_zone: Result<RedZoneFound>,
    ) -> Self {
        // The red zone check hit the site with the program attached.
        body.discard_pending();
        ProbedTarget {
            _link: link,
            body,
            hits,
            _skel: skel,
            target,
            red_zone,
            at_second: false,
        }
    }

    /// The same, for a USDT site that bench probed at its second
    /// instruction.
    pub(super) fn at_second(self) -> Self {
        ProbedTarget {
            at_second: true,
            ..self
        }
    }
}

impl<S: Sync> Workload for ProbedTarget<S> {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // SAFETY: every target is a function that takes and returns nothing.
        self.target
            .with_fn(|target| ctx.run(|| unsafe { target() }));
        Ok(())
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        self.body.consume(ctx)
    }

    fn read(&self, _ops: u64) -> Readings {
        self.body.readings(&self.hits)
    }

    fn facts(&self) -> Facts {
        let path = match self.target {
            Target::UsdtNop5 => self.target.with_fn(nop_pair_path),
            Target::UsdtNop10 if self.at_second => self
                .target
                .with_fn(|site| probe_path::detect_at(site as usize as u64 + 1)),
            Target::UsdtNop10 => self
                .target
                .with_fn(|site| probe_path::detect(site, &[0x90])),
            _ => {
                let original = self.target.expected_bytes();
                self.target
                    .with_fn(|function| probe_path::detect(function, original))
            }
        };
        Facts {
            probe_path: Some(path),
            red_zone: Some(self.red_zone.clone()),
            ..Facts::default()
        }
    }
}

/// The path of the probe on a `nop; nop5` USDT site: libbpf put it on the
/// 5-byte nop (where the kernel has the uprobe syscall) when the first nop is
/// untouched, else on that nop.
fn nop_pair_path(site: unsafe extern "C" fn()) -> Result<ProbePath> {
    // SAFETY: the site is a function in this binary's mapped text; volatile
    // because the kernel rewrites it behind the compiler's back.
    let first = unsafe { std::ptr::read_volatile(site as *const u8) };
    if first == 0x90 {
        probe_path::detect_at(site as usize as u64 + 1)
    } else {
        probe_path::detect(site, &[0x90])
    }
}
