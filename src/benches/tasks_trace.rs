//! `local-storage-tasks-trace`, the kernel runner's benchmark of what task
//! local storage costs RCU Tasks Trace (`benchs/bench_local_storage_rcu_tasks_trace.c`):
//! `--nr_procs` sleeper processes wake now and then and call getpgid(), as
//! the one producer does without pause; a program on getpgid creates and
//! deletes the caller's task storage, whose free waits for a Tasks Trace
//! grace period, so the grace-period kthread walks every task again and
//! again. Two more programs time each grace period (its kthread's steps
//! before and after it), and `--kthread_pid` names the kthread whose system
//! ticks are read from /proc each second.
//!
//! Its figures are the grace period's latency (µs) and the kthread's ticks
//! per grace period, each a mean over the measured seconds with its sd, as
//! the kernel runner's two `SUMMARY` lines. Every program is fentry, and the
//! grace-period steps have no tracepoint: a kernel that refuses fentry
//! programs (this host) or lacks the two functions cannot run it, and says so.

use libbpf_rs::skel::{OpenSkel, Skel};

use super::helper_trigger::{self, KernelFunction, FENTRY_GETPGID};
use super::memory;
use super::{Benchmark, Info};
use crate::bpf::skel::tasks_trace::{TasksTraceSkel, TasksTraceSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::{Channel, Readings, Slot, HITS};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Better, Figure, Sec, Show, Value};
use crate::kernel;
use crate::lines::{self, Fixed, Line, Lines, Missing, Num, Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};
use crate::trigger_path::TriggerUsed;

mod sleepers;
use sleepers::Sleepers;

/// What one sleeper takes, roughly: its 16 KiB kernel stack, its task, the
/// page tables fork copies from bench, and the pages it writes.
const SLEEPER_BYTES: u64 = 256 << 10;
/// The kernel runner's limit of sleeper processes (MAX_SLEEP_PROCS).
const MAX_SLEEP_PROCS: u64 = 150_000;
/// The kernel's PID_MAX_LIMIT on 64-bit: no pid is larger.
const PID_MAX_LIMIT: u64 = 4_194_304;

pub const NR_PROCS: NumberOption = NumberOption {
    long: "nr_procs",
    short: None,
    value_name: "NR_PROCS",
    help: "Set number of user processes to spin up (local-storage-tasks-trace); within the \
           tasks the kernel allows now and half the available memory",
    default: 1000,
    min: 1,
    max: MAX_SLEEP_PROCS,
    why_max: "the kernel runner's limit of sleeper processes",
};
pub const KTHREAD_PID: NumberOption = NumberOption {
    long: "kthread_pid",
    short: None,
    value_name: "PID",
    help: "Pid of rcu_tasks_trace kthread for ticks tracking (local-storage-tasks-trace; \
           0, the default: no ticks)",
    default: 0,
    min: 0,
    max: PID_MAX_LIMIT,
    why_max: "the kernel's PID_MAX_LIMIT",
};

/// Storage updates: every process's getpgid() calls the program saw.
const UPDATES: Channel = Channel {
    unit: "updates",
    about: "task storage updates: the getpgid() calls the storage program saw",
    ..HITS
};
/// Storage updates per second.
const UPDATES_FIGURE: Figure = Figure {
    unit: "updates/s",
    ..figures::HITS
};
const GP_NS: Channel = Channel::duration(
    "grace period time",
    "the RCU Tasks Trace grace periods' time, from their first step to their end, summed",
)
.was(Slot::Extra(0));
const GRACE_PERIODS: Channel = Channel::counter(
    "grace periods",
    "grace periods",
    "RCU Tasks Trace grace periods that ended",
)
.was(Slot::Extra(1));
const TICKS: Channel = Channel::counter(
    "kthread ticks",
    "ticks",
    "the RCU Tasks Trace kthread's system-time ticks (0 without --kthread_pid, as upstream)",
)
.was(Slot::Extra(2));
const CHANNELS: [Channel; 4] = [UPDATES, GP_NS, GRACE_PERIODS, TICKS];

/// A second's mean grace period, in ns, and in µs; its ticks per grace
/// period. A second in which none ended has neither (left out of the
/// means, where the kernel runner's would be NaN).
const LATENCY_NS: Sec = Sec::Div(&Sec::Value(&GP_NS), &Sec::Value(&GRACE_PERIODS));
const LATENCY_US: Sec = Sec::Div(&LATENCY_NS, &Sec::Const(1e3));
const TICKS_PER_GP: Sec = Sec::Div(&Sec::Value(&TICKS), &Sec::Value(&GRACE_PERIODS));

/// A grace period's mean time, in µs, lower is better.
pub const GP_LATENCY: Figure = Figure {
    name: "grace period latency",
    unit: "us/grace period",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::PerSecond(&LATENCY_US),
};

/// The kthread's system ticks per grace period (0 without `--kthread_pid`).
pub const GP_TICKS: Figure = Figure {
    name: "ticks per grace period",
    unit: "ticks/grace period",
    value: Value::PerSecond(&TICKS_PER_GP),
    ..GP_LATENCY
};

/// As C prints a double: `-nan` where nothing ended.
const C_6: Num = Num::fixed(0, 6).missing(Missing::CNan);
const C_3: Num = Num::fixed(0, 3).missing(Missing::CNan);
/// The kernel runner's two `SUMMARY` lines.
const SUMMARY: &[Line] = &[
    Line::Always(&[
        Piece::Text("SUMMARY tasks_trace grace period latency\tavg "),
        Piece::Num(Agg::Mean(&LATENCY_US), C_3),
        Piece::Text(" us\tstddev "),
        Piece::Num(Agg::Sd(&LATENCY_US), C_3),
        Piece::Text(" us"),
    ]),
    Line::Always(&[
        Piece::Text("SUMMARY ticks per tasks_trace grace period\tavg "),
        Piece::Num(Agg::Mean(&TICKS_PER_GP), C_3),
        Piece::Text("\tstddev "),
        Piece::Num(Agg::Sd(&TICKS_PER_GP), C_3),
    ]),
];

/// The kernel runner's local-storage-tasks-trace lines: each second the
/// mean grace period and the ticks per grace period (hidden by `-q`, as
/// upstream's), and the two `SUMMARY` lines (after a fixed run's block too).
const LINES: Lines = Lines {
    tick: &[
        Piece::Text("Iter "),
        Piece::Iteration(0),
        Piece::Text("\t avg tasks_trace grace period latency\t"),
        Piece::Num(Agg::Mean(&LATENCY_NS), C_6),
        Piece::Text(" ns\nIter "),
        Piece::Iteration(0),
        Piece::Text("\t avg ticks per tasks_trace grace period\t"),
        Piece::Num(Agg::Mean(&TICKS_PER_GP), C_6),
    ],
    ticks_when_quiet: false,
    summary: SUMMARY,
    fixed: Fixed::Runner {
        counts: lines::HITS_COUNTS,
        after: SUMMARY,
    },
    ..lines::HITS
};

/// The helper the storage program calls (with bpf_get_current_task_btf,
/// of the same release).
const TASK_STORAGE_GET: KernelFunction = KernelFunction {
    what: "the bpf_task_storage_get helper",
    name: "bpf_task_storage_get",
    since: "5.11",
};

/// The kernel functions the grace-period programs attach to.
const GP_STEPS: [&str; 2] = ["rcu_tasks_trace_pregp_step", "rcu_tasks_trace_postgp"];
/// The programs, attached in this order (as upstream's).
const PROGRAMS: [&str; 3] = ["count_tt_storage", "count_tt_pregp", "count_tt_postgp"];

static OPTIONS: [BenchOption; 2] = [
    BenchOption::Number(NR_PROCS),
    BenchOption::Number(KTHREAD_PID),
];

pub static BENCHES: &[&dyn Benchmark] = &[&TasksTrace {
    // The grace period first; the storage updates per second (every
    // process's getpgid() calls) last.
    info: Info::hits(
        "local-storage-tasks-trace",
        "RCU Tasks Trace grace periods while --nr_procs sleepers and one producer create \
         and delete task local storage on getpgid(): grace period latency and kthread \
         ticks per grace period",
    )
    .untimed("one of its operations is one getpgid(); what it measures is grace periods")
    .needs(Needs::Link)
    .options(&OPTIONS)
    .declares(&CHANNELS, &[GP_LATENCY, GP_TICKS, UPDATES_FIGURE], LINES),
}];

struct TasksTrace {
    info: Info,
}

impl Benchmark for TasksTrace {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if config.producers != 1 {
            return Err(Error::usage(format!(
                "local-storage-tasks-trace runs one producer only (-p 1), as the kernel \
                 runner's does, got -p {}",
                config.producers
            )));
        }
        let nr_procs = config.params.number(&NR_PROCS);
        memory::check_tasks(
            self.info.name,
            memory::Tasks {
                given: &format!("--nr_procs {nr_procs}"),
                count: nr_procs,
                starts: &format!("forks {nr_procs} sleeper processes"),
                bytes_each: SLEEPER_BYTES,
                each: "a sleeper process's kernel stack, task and page tables, for each",
                smaller: "--nr_procs",
            },
        )
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let mut workload = attached(config)?;
        let nr_procs = config.params.number(&NR_PROCS) as usize;
        workload.sleepers = Sleepers::spawn(nr_procs)?;
        Ok(SetUp::producers(workload).from_trigger(TriggerUsed::own(FENTRY_GETPGID)))
    }

    /// Loads and attaches without forking the sleepers: the probe asks only
    /// whether the kernel takes the programs.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        let workload = attached(config)?;
        Ok(SetUp::producers(workload).from_trigger(TriggerUsed::own(FENTRY_GETPGID)))
    }
}

/// Why the benchmark cannot run on a kernel that lacks one of the
/// grace-period steps (`None`: both are there, or the BTF cannot say).
fn lacking_steps() -> Option<String> {
    let missing = GP_STEPS
        .iter()
        .find(|name| kernel::btf_has_func(name) == Some(false))?;
    Some(format!(
        "this kernel ({}) has no function {missing} to time RCU Tasks Trace grace periods \
         from: Linux 5.8 brought it, and kernels that build RCU Tasks Trace on SRCU no \
         longer have it",
        kernel::release()
    ))
}

/// The programs loaded and attached, the kthread's ticks read once.
fn attached(config: &RunConfig) -> Result<TasksTraceWorkload> {
    helper_trigger::lacking(&[TASK_STORAGE_GET])?;
    if let Some(why) = lacking_steps() {
        return Err(Error::unsupported(why));
    }
    let kthread_pid = config.params.number(&KTHREAD_PID) as u32;
    let mut storage = bpf::ObjectStorage::new();
    // SAFETY: this storage is opened once, and the skeleton goes into an
    // `Owned` with it (or, failing to load, drops before it).
    let open = unsafe { storage.open::<TasksTraceSkelBuilder>("local-storage-tasks-trace") }?;
    let skel = open.load().map_err(|e| {
        no_fentry(bpf::load_error(
            "local-storage-tasks-trace's fentry programs",
            &e,
        ))
    })?;
    let skel = bpf::Owned::new(skel, storage);
    let ticks_at_start = match kthread_pid {
        0 => 0,
        pid => kthread_ticks(pid)?,
    };
    let mut links = Vec::new();
    for name in PROGRAMS {
        let link = skel
            .object()
            .progs_mut()
            .find(|p| p.name().to_str() == Some(name))
            .ok_or_else(|| Error::setup(format!("the tasks-trace object has no program {name}")))?
            .attach()
            .map_err(|e| no_fentry(bpf::attach_error(name, &e)))?;
        links.push(link);
    }
    // SAFETY: `hits` is counters.h's array, and the skeleton is kept in the
    // workload beside the counters, dropped after them.
    let hits = unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
    Ok(TasksTraceWorkload {
        sleepers: Sleepers::none(),
        _links: links,
        hits,
        kthread_pid,
        ticks_at_start,
        skel,
    })
}

/// A refusal of the programs, said as what the benchmark lacks.
fn no_fentry(err: Error) -> Error {
    match err {
        Error::Unsupported(why) => Error::unsupported(format!(
            "it needs fentry programs on getpgid and on the RCU Tasks Trace kthread's \
             grace-period steps, which have no fallback, and {why}"
        )),
        other => other,
    }
}

/// The kthread's system time in ticks (field 15 of /proc/PID/stat).
fn kthread_ticks(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::setup(format!("cannot read {path} (--kthread_pid {pid}): {e}")))?;
    stime_of(&text).ok_or_else(|| Error::setup(format!("{path} has no system time field")))
}

/// Field 15 (stime) of a /proc/PID/stat line; the command in field 2 may
/// hold spaces and parentheses, so the fields are counted after its last ')'.
fn stime_of(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Fields 3 onwards: stime is the 13th of them.
    after_comm.split_whitespace().nth(12)?.parse().ok()
}

struct TasksTraceWorkload {
    // Fields drop in order: the sleepers die first, then the links detach,
    // then the object is closed.
    sleepers: Sleepers,
    _links: Vec<libbpf_rs::Link>,
    hits: HitCounters,
    kthread_pid: u32,
    /// The kthread's ticks at set-up, which its readings count from.
    ticks_at_start: u64,
    skel: bpf::Owned<TasksTraceSkel<'static>>,
}

impl TasksTraceWorkload {
    /// The programs' cumulative counters: ns of grace periods, grace
    /// periods, and whether the steps ran out of order.
    fn counters(&self) -> (u64, u64, bool) {
        match self.skel.maps.bss_data.as_deref() {
            // SAFETY: plain reads of the mmapped .bss, which BPF programs
            // update concurrently (a torn read is impossible for aligned u64).
            Some(bss) => unsafe {
                (
                    std::ptr::read_volatile(&bss.gp_times),
                    std::ptr::read_volatile(&bss.gp_hits),
                    std::ptr::read_volatile(&bss.unexpected) != 0,
                )
            },
            None => (0, 0, false),
        }
    }
}

impl Workload for TasksTraceWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        ctx.try_run(|| {
            // SAFETY: getpgid only reads a process group; of no process
            // (-1), it fails with ESRCH, as the kernel runner's call does.
            unsafe { libc::syscall(libc::SYS_getpgid, -1 as libc::c_long) };
            if self.counters().2 {
                return Err(Error::runtime(
                    "rcu_tasks_trace_postgp ran without rcu_tasks_trace_pregp_step before it, \
                     so the grace-period times cannot be trusted",
                ));
            }
            Ok(1)
        })
    }

    /// The storage updates, and the grace periods' time, count and the
    /// kthread's ticks (a failed read of those is unknown, not zero).
    fn read(&self, _ops: u64) -> Readings {
        let (ns, periods, _) = self.counters();
        let ticks = match self.kthread_pid {
            0 => Some(0),
            pid => kthread_ticks(pid)
                .ok()
                .map(|t| t.saturating_sub(self.ticks_at_start)),
        };
        vec![Some(self.hits.total()), Some(ns), Some(periods), ticks]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stime_is_field_15_whatever_the_command() {
        let stat = "29 (rcu_tasks_trace_kthread) I 2 0 0 0 -1 2129984 0 0 0 0 7 1234 0 0 20 0";
        assert_eq!(stime_of(stat), Some(1234));
        let odd = "7 (a b) c)) S 1 7 7 0 -1 4194560 10 0 0 0 3 42 0 0";
        assert_eq!(stime_of(odd), Some(42));
        assert_eq!(stime_of("garbage"), None);
    }

    /// The kernel runner's lines, to the tab; the summary is over the
    /// seconds in which a grace period ended.
    #[test]
    fn lines_are_the_kernel_runners() {
        use crate::report::lines::testing;
        let bench = "local-storage-tasks-trace";
        assert_eq!(
            testing::tick(bench, &[12, 90_000_000, 4, 2], 1),
            "Iter 3\t avg tasks_trace grace period latency\t22500000.000000 ns\n\
             Iter 3\t avg ticks per tasks_trace grace period\t0.500000"
        );
        assert_eq!(
            testing::tick(bench, &[12, 0, 0, 0], 1),
            "Iter 3\t avg tasks_trace grace period latency\t-nan ns\n\
             Iter 3\t avg ticks per tasks_trace grace period\t-nan"
        );
        // Two seconds: 4 periods of 25 ms and 2 ticks; 2 of 75 ms and 4
        // ticks; a second without a period is left out.
        let seconds = [[1, 100_000_000, 4, 2], [1, 0, 0, 0], [1, 150_000_000, 2, 4]];
        assert_eq!(
            testing::summary(bench, &seconds, 1),
            [
                "SUMMARY tasks_trace grace period latency\tavg 50000.000 us\tstddev 35355.339 us",
                "SUMMARY ticks per tasks_trace grace period\tavg 1.250\tstddev 1.061"
            ]
        );
        let none = testing::summary(bench, &[[1u64, 0, 0, 0]], 1);
        assert!(none[0].contains("avg -nan us"), "{none:?}");
        let run = testing::run(bench, &seconds, 1);
        assert_eq!(run.figure("grace period latency"), Some(50_000.0));
    }
}
