//! The kernel runner's rename family (its `benchs/bench_rename.c` and
//! `progs/test_overhead.c`): a producer renames the process by writing its
//! name to `/proc/self/comm`, which runs `__set_task_comm` and fires the
//! `task:task_rename` tracepoint, with nothing attached (`rename-base`) or one
//! program that only counts on that path. The operations are the writes, as
//! the kernel runner counts them.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::Link;

use super::trigger::{kprobe_refusal, tracing_refusal};
use super::{Benchmark, Info};
use crate::bpf::skel::rename::{RenameSkel, RenameSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::channels::{Channel, Slot, HITS};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Sec};
use crate::lines::{self, Cond, Line, Lines, Num, Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};

/// Writes the attached program did not see (a kprobe's misses, say): hits
/// are the writes it saw, and hits and misses together the writes.
const MISSED: Channel = Channel::counter(
    "missed",
    "writes",
    "writes to /proc/self/comm the attached program did not see",
)
.was(Slot::Drops);

const WITH_PROGRAM: [Channel; 2] = [HITS, MISSED];
const MISSED_TOTAL: Agg = Agg::Total(&Sec::Declared(&MISSED));

/// The hits lines, and after them the writes a program missed, if any.
const LINES: Lines = Lines {
    after_summary: &[Line::When(
        Cond::Positive(MISSED_TOTAL),
        &[
            Piece::Text("warning: the program missed "),
            Piece::Num(MISSED_TOTAL, Num::whole(0)),
            Piece::Text(" of the writes it should have seen"),
        ],
    )],
    ..lines::HITS
};

pub static BENCHES: &[&dyn Benchmark] = &[
    &rename(
        "rename-base",
        None,
        "write the process's name to /proc/self/comm (__set_task_comm), nothing attached: the baseline",
    ),
    &rename(
        "rename-kprobe",
        Some(Probe::KPROBE),
        "rename-base with a kprobe on __set_task_comm that only counts",
    ),
    &rename(
        "rename-kretprobe",
        Some(Probe::KRETPROBE),
        "rename-base with a kretprobe on __set_task_comm that only counts",
    ),
    &rename(
        "rename-rawtp",
        Some(Probe::RAWTP),
        "rename-base with a raw tracepoint program on task_rename that only counts",
    ),
    &rename(
        "rename-fentry",
        Some(Probe::FENTRY),
        "rename-base with an fentry program on __set_task_comm that only counts",
    ),
    &rename(
        "rename-fexit",
        Some(Probe::FEXIT),
        "rename-base with an fexit program on __set_task_comm that only counts",
    ),
];

/// A program of `bpf/rename.bpf.c` and how the kernel may refuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    program: &'static str,
    /// For messages: "the kprobe".
    what: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Kprobe,
    RawTracepoint,
    /// fentry, fexit: refused under lockdown or by an LSM.
    Tracing,
}

impl Probe {
    const KPROBE: Probe = Probe::new("count_rename_kprobe", "the kprobe", Kind::Kprobe);
    const KRETPROBE: Probe = Probe::new("count_rename_kretprobe", "the kretprobe", Kind::Kprobe);
    const RAWTP: Probe = Probe::new(
        "count_rename_rawtp",
        "the raw tracepoint program",
        Kind::RawTracepoint,
    );
    const FENTRY: Probe = Probe::new("count_rename_fentry", "the fentry program", Kind::Tracing);
    const FEXIT: Probe = Probe::new("count_rename_fexit", "the fexit program", Kind::Tracing);

    const fn new(program: &'static str, what: &'static str, kind: Kind) -> Probe {
        Probe {
            program,
            what,
            kind,
        }
    }
}

struct Rename {
    info: Info,
    /// The counting program; none for the baseline.
    probe: Option<Probe>,
}

const fn rename(name: &'static str, probe: Option<Probe>, description: &'static str) -> Rename {
    Rename {
        info: Info::hits(name, description)
            .timed_per_hit()
            .needs(match probe {
                None => Needs::Nothing,
                Some(Probe {
                    kind: Kind::Kprobe, ..
                }) => Needs::KprobeEvent,
                Some(_) => Needs::Link,
            })
            .declares(
                match probe {
                    None => &[HITS],
                    Some(_) => &WITH_PROGRAM,
                },
                &[figures::HITS],
                LINES,
            ),
        probe,
    }
}

impl Benchmark for Rename {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, _config: &RunConfig) -> Result<SetUp> {
        let probe = match self.probe {
            Some(probe) => Some(attach(probe)?),
            None => None,
        };
        Ok(SetUp::producers(Renames {
            probe,
            missed: AtomicU64::new(0),
        }))
    }
}

/// Loads `probe`'s program, counting this process's renames, and attaches it.
fn attach(probe: Probe) -> Result<Attached> {
    let mut storage = bpf::ObjectStorage::new();
    // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
    // with it.
    let mut open = unsafe { storage.open::<RenameSkelBuilder>("the rename BPF object")? };
    let rodata = bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the rename object")?;
    rodata.own_tgid = std::process::id();
    for mut prog in open.open_object_mut().progs_mut() {
        if prog.name() == probe.program {
            prog.set_autoload(true);
        }
    }
    let skel = open.load().map_err(|err| {
        let refusal = match probe.kind {
            Kind::Tracing => tracing_refusal(&err),
            Kind::Kprobe | Kind::RawTracepoint => None,
        };
        refusal.unwrap_or_else(|| bpf::load_error(probe.what, &err))
    })?;
    let skel = bpf::Owned::new(skel, storage);
    let link = skel
        .object()
        .progs_mut()
        .find(|p| p.name() == probe.program)
        .ok_or_else(|| {
            Error::setup(format!(
                "the rename object has no program {}",
                probe.program
            ))
        })?
        .attach()
        .map_err(|err| {
            let refusal = match probe.kind {
                Kind::Kprobe => kprobe_refusal(false),
                Kind::Tracing | Kind::RawTracepoint => None,
            };
            refusal.unwrap_or_else(|| bpf::attach_error(probe.what, &err))
        })?;
    // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
    // `Attached` beside the counters, dropped after them.
    let hits = unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
    Ok(Attached {
        _link: link,
        hits,
        _skel: skel,
    })
}

/// The attached program and its counter.
struct Attached {
    // Fields drop in order: the link detaches before the object is closed.
    _link: Link,
    /// The program's runs in this process.
    hits: HitCounters,
    _skel: bpf::Owned<RenameSkel<'static>>,
}

struct Renames {
    probe: Option<Attached>,
    /// Writes the program did not see, the most found so far.
    missed: AtomicU64,
}

/// The bytes the kernel runner's producer writes at each rename:
/// "test_overhead" and its NUL.
const WRITE_BYTES: usize = 14;

/// The process's comm file (the thread group leader's, `/proc/self/comm`,
/// which the kernel runner's producer writes), opened for writing, and the
/// buffer each write sends: the leader's name as the file reads, padded with
/// NULs to the runner's write size. The kernel copies the whole buffer and
/// keeps the name up to the first NUL, so the work is the runner's and the
/// name stays the process's own (in `--profile`, say).
fn leader_comm() -> Result<(File, Vec<u8>)> {
    let path = "/proc/self/comm";
    let fail = |e: std::io::Error| Error::setup(format!("cannot use {path}: {e}"));
    let mut name = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut name))
        .map_err(fail)?;
    if name.last() == Some(&b'\n') {
        name.pop();
    }
    if name.len() < WRITE_BYTES {
        name.resize(WRITE_BYTES, 0);
    }
    let file = File::options().write(true).open(path).map_err(fail)?;
    Ok((file, name))
}

impl Workload for Renames {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let (mut file, name) = leader_comm()?;
        ctx.try_run(|| {
            file.write(&name).map_err(|e| {
                Error::runtime(format!(
                    "writing the process's name to /proc/self/comm failed: {e}"
                ))
            })?;
            Ok(1)
        })
    }

    /// The writes the producers counted, as the kernel runner counts them;
    /// with a program attached, those it did not see are missed rather than
    /// hits (so hits are writes seen, and hits and misses are the writes).
    fn read(&self, ops: u64) -> Readings {
        match &self.probe {
            None => vec![Some(ops)],
            Some(probe) => {
                let (hits, missed) = split_writes(ops, probe.hits.total(), &self.missed);
                vec![Some(hits), Some(missed)]
            }
        }
    }
}

/// `ops` writes, of which the program saw `seen` (read after `ops`), as
/// hits and misses. A write fires the program before the producer counts
/// it, so `seen` is ahead of `ops` unless the program missed writes;
/// `missed` keeps the most found, so that misses never go back when it runs
/// ahead again.
fn split_writes(ops: u64, seen: u64, missed: &AtomicU64) -> (u64, u64) {
    let unseen = ops.saturating_sub(seen);
    let missed = missed.fetch_max(unseen, Relaxed).max(unseen);
    (ops.saturating_sub(missed), missed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_program_missed_are_counted_and_stay_so() {
        let missed = AtomicU64::new(0);
        let counts = |ops, seen| split_writes(ops, seen, &missed);
        assert_eq!(counts(0, 0), (0, 0));
        // The program ahead of the producers' count: every write seen.
        assert_eq!(counts(10, 11), (10, 0));
        assert_eq!(counts(20, 17), (17, 3));
        // A write seen but not yet counted: the three missed stay missed.
        assert_eq!(counts(30, 28), (27, 3));
        assert_eq!(counts(40, 35), (35, 5));
    }
}
