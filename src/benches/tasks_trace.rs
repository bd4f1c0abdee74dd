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

use std::sync::Mutex;

use libbpf_rs::skel::{OpenSkel, Skel};

use super::helper_trigger::{self, KernelFunction};
use super::{memory, Benchmark, Info, Metric};
use crate::bpf::skel::tasks_trace::{TasksTraceSkel, TasksTraceSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Better, Figure};
use crate::kernel;
use crate::runner::{Counts, ProducerCtx, Workload};
use crate::trigger_path::{TriggerPath, TriggerUsed};

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

/// What the workload keeps of its measured seconds, by name.
pub const KEPT_LATENCY: &str = "grace period latency";
pub const KEPT_LATENCY_SD: &str = "grace period latency sd";
pub const KEPT_TICKS: &str = "ticks per grace period";
pub const KEPT_TICKS_SD: &str = "ticks per grace period sd";
/// The measured seconds in which a grace period ended (those the means are over).
pub const KEPT_SECONDS: &str = "seconds with a grace period";

/// A grace period's mean time, in µs, lower is better.
pub const GP_LATENCY: Figure = Figure {
    name: "grace period latency",
    unit: "grace period latency us",
    better: Better::Lower,
    of_run: |run| figures::kept(run, KEPT_LATENCY),
    per_second: None,
    show: |us| format!("{us:.3} us"),
    show_spread: |us, sd| format!("{us:.3} \u{b1} {sd:.3} us"),
};

/// The kthread's system ticks per grace period (0 without `--kthread_pid`).
pub const GP_TICKS: Figure = Figure {
    name: "ticks per grace period",
    unit: "ticks per grace period",
    better: Better::Lower,
    of_run: |run| figures::kept(run, KEPT_TICKS),
    per_second: None,
    show: |ticks| format!("{ticks:.3} ticks"),
    show_spread: |ticks, sd| format!("{ticks:.3} \u{b1} {sd:.3} ticks"),
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
    info: Info {
        metric: Metric::TasksTrace,
        // The grace period first; the storage updates per second (every
        // process's getpgid() calls) last.
        figures: &[GP_LATENCY, GP_TICKS, figures::HITS],
        ..Info::hits(
            "local-storage-tasks-trace",
            "RCU Tasks Trace grace periods while --nr_procs sleepers and one producer create \
             and delete task local storage on getpgid(): grace period latency and kthread \
             ticks per grace period",
        )
        .untimed("one of its operations is one getpgid(); what it measures is grace periods")
        .needs(Needs::Link)
        .options(&OPTIONS)
    },
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

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let mut workload = attached(config)?;
        let nr_procs = config.params.number(&NR_PROCS) as usize;
        workload.sleepers = Sleepers::spawn(nr_procs)?;
        Ok(Box::new(workload))
    }

    /// Loads and attaches without forking the sleepers: the probe asks only
    /// whether the kernel takes the programs.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        Ok(Box::new(attached(config)?))
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
        gp: Mutex::new(GpLog {
            ticks_at_start,
            ..GpLog::default()
        }),
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

/// What the grace-period programs counted, as cumulative readings, and the
/// measured part's share of each second.
#[derive(Default)]
struct GpLog {
    ticks_at_start: u64,
    /// The last reading: ns of grace periods, grace periods, kthread ticks.
    last: [u64; 3],
    measuring: bool,
    /// Each measured interval's (ns, grace periods, ticks).
    measured: Vec<[u64; 3]>,
}

struct TasksTraceWorkload {
    // Fields drop in order: the sleepers die first, then the links detach,
    // then the object is closed.
    sleepers: Sleepers,
    _links: Vec<libbpf_rs::Link>,
    hits: HitCounters,
    kthread_pid: u32,
    gp: Mutex<GpLog>,
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

    /// The storage updates counted; beside them, a reading of the grace
    /// periods and ticks, whose measured share is kept.
    fn measure(&self, _ops: u64) -> Counts {
        let (ns, periods, _) = self.counters();
        let mut log = self.gp.lock().unwrap_or_else(|e| e.into_inner());
        let ticks = match self.kthread_pid {
            0 => 0,
            // A kthread gone since set-up adds no ticks.
            pid => kthread_ticks(pid).map_or(log.last[2], |t| t.saturating_sub(log.ticks_at_start)),
        };
        let now = [ns, periods, ticks];
        if log.measuring {
            let delta = [0, 1, 2].map(|i| now[i].saturating_sub(log.last[i]));
            log.measured.push(delta);
        }
        log.last = now;
        self.hits.counts()
    }

    /// The readings `measure` took, so that each second's sample carries
    /// its grace periods (for its progress lines).
    fn extra_counts(&self) -> Vec<u64> {
        let log = self.gp.lock().unwrap_or_else(|e| e.into_inner());
        log.last.to_vec()
    }

    fn measuring(&self, on: bool) {
        let mut log = self.gp.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            log.measured.clear();
        }
        log.measuring = on;
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let log = self.gp.lock().unwrap_or_else(|e| e.into_inner());
        let Some(stats) = GpStats::of(&log.measured) else {
            return Vec::new();
        };
        vec![
            (KEPT_LATENCY, stats.latency_us.0),
            (KEPT_LATENCY_SD, stats.latency_us.1),
            (KEPT_TICKS, stats.ticks.0),
            (KEPT_TICKS_SD, stats.ticks.1),
            (KEPT_SECONDS, stats.seconds as f64),
        ]
    }

    fn trigger(&self) -> Option<TriggerUsed> {
        Some(TriggerUsed {
            path: TriggerPath::FentryGetpgid,
            refused: None,
        })
    }
}

/// The means and sds (n - 1) over measured intervals of a grace period's
/// latency in µs and of ticks per grace period, as the kernel runner's
/// SUMMARY lines; intervals in which no grace period ended are left out
/// (the kernel runner's mean would be NaN).
#[derive(Debug, PartialEq)]
pub struct GpStats {
    pub latency_us: (f64, f64),
    pub ticks: (f64, f64),
    pub seconds: usize,
}

impl GpStats {
    pub fn of(intervals: &[[u64; 3]]) -> Option<GpStats> {
        let with_gp: Vec<&[u64; 3]> = intervals.iter().filter(|i| i[1] > 0).collect();
        if with_gp.is_empty() {
            return None;
        }
        let latency: Vec<f64> = with_gp
            .iter()
            .map(|i| i[0] as f64 / 1000.0 / i[1] as f64)
            .collect();
        let ticks: Vec<f64> = with_gp.iter().map(|i| i[2] as f64 / i[1] as f64).collect();
        let mean_sd = |v: &[f64]| {
            let m = crate::stats::mean_sd(v);
            (m.mean, m.sd)
        };
        Some(GpStats {
            latency_us: mean_sd(&latency),
            ticks: mean_sd(&ticks),
            seconds: with_gp.len(),
        })
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

    #[test]
    fn summaries_are_over_the_seconds_that_saw_a_grace_period() {
        // Two seconds: 4 periods of 25 ms and 2 ticks; 2 of 75 ms and 4
        // ticks; a second without a period is left out.
        let stats = GpStats::of(&[[100_000_000, 4, 2], [0, 0, 0], [150_000_000, 2, 4]]).unwrap();
        assert_eq!(stats.seconds, 2);
        assert_eq!(stats.latency_us.0, 50_000.0);
        assert!((stats.latency_us.1 - 35_355.339).abs() < 1e-3, "{stats:?}");
        assert_eq!(stats.ticks, (1.25, (2.0f64 * 0.75 * 0.75).sqrt()));
        assert_eq!(GpStats::of(&[[0, 0, 0]]), None);
    }
}
