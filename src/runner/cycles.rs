//! Attach cycles: the second kind of measurement. A cycle attaches a
//! workload's probes link by link, checks that every probe fires, and detaches
//! them, timing attach and detach in wall time and in the CPU time of the
//! attaching thread. Like the rest of the runner, it knows no benchmark.
//!
//! CPU time is the thread's (`RUSAGE_THREAD`), not the process's: the
//! progress bar ticks in a thread of its own, and only this thread makes the
//! attach and detach system calls. Work the kernel defers to its own threads
//! (RCU callbacks, say) is in neither; the wall-minus-CPU gap is the time this
//! thread spent waiting, which for a uprobe's detach is the grace periods.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use libbpf_rs::Link;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::interrupt;

/// What an attach benchmark gives the cycle runner.
pub trait CycleWorkload: Sync {
    /// Probes one cycle attaches.
    fn probes(&self) -> usize;
    /// Links those probes take: one per probe, or one for all (multi links).
    fn links(&self) -> usize;
    /// Attaches link `index` (of [`links`](Self::links)); an error names the
    /// site the kernel refused.
    fn attach(&self, index: usize) -> Result<Link>;
    /// Fires every attached site once and counts the hits each got; `None`
    /// when the sites cannot be driven from here (kernel functions).
    fn verify(&self) -> Option<Result<Fired>>;
    /// What the probes are attached with, for the report (`1 uprobe_multi
    /// link`), found after attaching: the library decides for some.
    fn attached_with(&self) -> String;
}

/// What the verify pass found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fired {
    /// Sites hit exactly once.
    pub fired: usize,
    /// Sites not hit, or hit more than once, by number (the first few).
    pub wrong: Vec<WrongSite>,
    /// How many sites were wrong in all.
    pub wrong_count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrongSite {
    pub site: usize,
    pub hits: u64,
}

/// How many wrong sites a report names.
pub const WRONG_NAMED: usize = 8;

impl Fired {
    /// Judges per-site hit counts: `(site, hits)` for every attached site.
    pub fn judge(counts: impl IntoIterator<Item = (usize, u64)>) -> Fired {
        let mut fired = Fired::default();
        for (site, hits) in counts {
            if hits == 1 {
                fired.fired += 1;
                continue;
            }
            fired.wrong_count += 1;
            if fired.wrong.len() < WRONG_NAMED {
                fired.wrong.push(WrongSite { site, hits });
            }
        }
        fired
    }
}

/// Wall and CPU time of one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub system_ns: u64,
}

impl Timing {
    /// Wall time not spent on this thread's CPU: waiting.
    pub fn waiting_ns(&self) -> u64 {
        self.wall_ns
            .saturating_sub(self.user_ns.saturating_add(self.system_ns))
    }

    /// Wall microseconds per probe.
    pub fn us_per_probe(&self, probes: usize) -> f64 {
        self.wall_ns as f64 / 1e3 / probes.max(1) as f64
    }
}

/// One cycle's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CycleRecord {
    pub probes: usize,
    pub links: usize,
    /// `1 uprobe-multi link`, `50 uprobe perf events`...
    pub attached_with: String,
    pub attach: Timing,
    pub detach: Timing,
    /// The verify pass; `None` where the sites cannot be driven.
    pub fired: Option<Fired>,
    /// The first cycle the process began: it pays what a tracer starting up
    /// pays, which a re-attach does not, and is kept out of the statistics
    /// over runs when warm cycles exist.
    #[serde(default)]
    pub cold: bool,
}

/// Whether a cycle has begun in this process.
static BEGUN: AtomicBool = AtomicBool::new(false);

/// Where a cycle is, for the progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Attaching { done: usize, of: usize },
    Verifying,
    Detaching { done: usize, of: usize },
}

/// Where an interrupt found the cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// While attaching: `attached` of `of` links were attached (and then detached).
    Attaching {
        attached: usize,
        of: usize,
    },
    Verifying,
    /// While detaching: every link was detached all the same.
    Detaching,
}

/// A cycle: its figures, or where an interrupt stopped it (everything
/// attached is detached either way).
pub enum CycleEnd {
    Done(CycleRecord),
    Interrupted(Stopped),
}

/// A point in time on both clocks.
struct Mark {
    wall: Instant,
    user_ns: u64,
    system_ns: u64,
}

impl Mark {
    fn now() -> Mark {
        let (user_ns, system_ns) = thread_cpu_ns();
        Mark {
            wall: Instant::now(),
            user_ns,
            system_ns,
        }
    }

    fn since(&self) -> Timing {
        let now = Mark::now();
        Timing {
            wall_ns: u64::try_from(now.wall.duration_since(self.wall).as_nanos())
                .unwrap_or(u64::MAX),
            user_ns: now.user_ns.saturating_sub(self.user_ns),
            system_ns: now.system_ns.saturating_sub(self.system_ns),
        }
    }
}

/// This thread's user and system CPU time, in nanoseconds.
fn thread_cpu_ns() -> (u64, u64) {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage; RUSAGE_THREAD cannot fail on Linux.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    (ns(usage.ru_utime), ns(usage.ru_stime))
}

/// Runs one cycle of `workload`, telling `progress` where it is.
pub fn run_cycle(workload: &dyn CycleWorkload, progress: &mut dyn FnMut(Step)) -> Result<CycleEnd> {
    let cold = !BEGUN.swap(true, Relaxed);
    let of = workload.links();
    let mut links = Vec::with_capacity(of);
    let start = Mark::now();
    for index in 0..of {
        if interrupt::received().is_some() {
            detach(links, progress);
            return Ok(CycleEnd::Interrupted(Stopped::Attaching {
                attached: index,
                of,
            }));
        }
        match workload.attach(index) {
            Ok(link) => links.push(link),
            Err(err) => {
                detach(links, progress);
                return Err(err);
            }
        }
        progress(Step::Attaching {
            done: index + 1,
            of,
        });
    }
    let attach = start.since();
    // A single link's attach is one system call: an interrupt during it is
    // seen here.
    if interrupt::received().is_some() {
        detach(links, progress);
        return Ok(CycleEnd::Interrupted(Stopped::Attaching {
            attached: of,
            of,
        }));
    }
    let attached_with = workload.attached_with();
    progress(Step::Verifying);
    let fired = match workload.verify() {
        Some(Err(err)) => {
            detach(links, progress);
            return Err(err);
        }
        Some(Ok(fired)) => Some(fired),
        None => None,
    };
    let verify_interrupted = interrupt::received().is_some();
    let start = Mark::now();
    detach(links, progress);
    let detach = start.since();
    if verify_interrupted {
        return Ok(CycleEnd::Interrupted(Stopped::Verifying));
    }
    if interrupt::received().is_some() {
        return Ok(CycleEnd::Interrupted(Stopped::Detaching));
    }
    Ok(CycleEnd::Done(CycleRecord {
        probes: workload.probes(),
        links: of,
        attached_with,
        attach,
        detach,
        fired,
        cold,
    }))
}

/// Detaches `links` one by one, first attached first. An interrupt does not
/// stop it: nothing may stay attached. (Detaching from several threads does
/// not help: the kernel waits for a classic uprobe's grace periods under a
/// global mutex, event_mutex; measured, 1,465 links took 143 s either way.)
fn detach(links: Vec<Link>, progress: &mut dyn FnMut(Step)) {
    let of = links.len();
    for (done, link) in links.into_iter().enumerate() {
        drop(link);
        progress(Step::Detaching { done: done + 1, of });
    }
}

/// The error of a cycle whose probes did not all fire, after its report.
pub fn not_all_fired(fired: &Fired, probes: usize) -> Option<Error> {
    (fired.fired != probes).then(|| {
        Error::runtime(format!(
            "{} of {probes} probes fired exactly once: a probe that does not fire is not attached",
            fired.fired
        ))
    })
}

/// One attach/detach cycle done beside the producers (attach churn), and
/// when it ended: the run keeps those that ended in its measured seconds.
#[derive(Clone, Copy, Debug)]
pub struct ChurnCycle {
    pub ended: Instant,
    pub attach_ns: u64,
    pub detach_ns: u64,
}

/// The churn of a run's measured seconds, as kept in its record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChurnRecord {
    /// Threads attaching and detaching (`-c`); 0: the run without churn.
    pub threads: usize,
    /// Cycles that ended within the measured seconds.
    pub cycles: u64,
    pub seconds: f64,
    /// Mean wall time of those cycles' attach and detach, µs.
    pub attach_us: f64,
    pub detach_us: f64,
}

impl ChurnRecord {
    /// The cycles of `all` that ended between `start` and `end`.
    pub fn over(threads: usize, all: &[ChurnCycle], start: Instant, end: Instant) -> ChurnRecord {
        let measured: Vec<&ChurnCycle> = all
            .iter()
            .filter(|c| c.ended >= start && c.ended <= end)
            .collect();
        let mean_us = |pick: fn(&ChurnCycle) -> u64| match measured.len() {
            0 => 0.0,
            n => measured.iter().map(|c| pick(c) as f64).sum::<f64>() / n as f64 / 1e3,
        };
        ChurnRecord {
            threads,
            cycles: measured.len() as u64,
            seconds: end.saturating_duration_since(start).as_secs_f64(),
            attach_us: mean_us(|c| c.attach_ns),
            detach_us: mean_us(|c| c.detach_ns),
        }
    }

    pub fn cycles_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.cycles as f64 / self.seconds
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_sites_are_named_and_counted() {
        let fired = Fired::judge((0..20).map(|site| (site, u64::from(site % 3 != 0))));
        assert_eq!(fired.fired, 13);
        assert_eq!(fired.wrong_count, 7);
        assert_eq!(fired.wrong[0], WrongSite { site: 0, hits: 0 });
        assert_eq!(fired.wrong[1], WrongSite { site: 3, hits: 0 });
        let twice = Fired::judge([(5, 2), (6, 1)]);
        assert_eq!(twice.wrong, [WrongSite { site: 5, hits: 2 }]);
        assert!(not_all_fired(&twice, 2).is_some());
        assert!(not_all_fired(&Fired::judge([(6, 1)]), 1).is_none());
    }

    fn cpu(t: (u64, u64)) -> u64 {
        t.0 + t.1
    }

    /// Spins on this thread until its CPU time grew by `ns` (or 20 s passed).
    fn spin_cpu(ns: u64) -> u64 {
        let before = cpu(thread_cpu_ns());
        let start = Instant::now();
        let mut x = 0u64;
        while cpu(thread_cpu_ns()) < before + ns && start.elapsed().as_secs() < 20 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        cpu(thread_cpu_ns()) - before
    }

    #[test]
    fn thread_cpu_time_is_this_threads_alone() {
        assert!(spin_cpu(20_000_000) >= 20_000_000);
        // Another thread's work (the progress bar's, say) is not counted.
        let before = cpu(thread_cpu_ns());
        let other = std::thread::spawn(|| spin_cpu(50_000_000));
        let spun = other.join().unwrap();
        assert!(spun >= 50_000_000);
        assert!(cpu(thread_cpu_ns()) - before < 10_000_000);
    }

    #[test]
    fn waiting_is_wall_minus_cpu() {
        let t = Timing {
            wall_ns: 10_000,
            user_ns: 1_000,
            system_ns: 2_000,
        };
        assert_eq!(t.waiting_ns(), 7_000);
        assert_eq!(t.us_per_probe(2), 5.0);
    }

    #[test]
    fn churn_keeps_the_cycles_that_ended_in_the_measured_seconds() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + std::time::Duration::from_millis(ms);
        let cycle = |ms, attach_ns, detach_ns| ChurnCycle {
            ended: at(ms),
            attach_ns,
            detach_ns,
        };
        // Warm-up's cycle (before 1 s) and the one after the end are out.
        let all = [
            cycle(500, 9_000, 9_000),
            cycle(1_200, 1_000, 3_000),
            cycle(2_900, 3_000, 5_000),
            cycle(3_100, 9_000, 9_000),
        ];
        let churn = ChurnRecord::over(1, &all, at(1_000), at(3_000));
        assert_eq!((churn.threads, churn.cycles), (1, 2));
        assert!((churn.seconds - 2.0).abs() < 1e-9);
        assert!((churn.cycles_per_sec() - 1.0).abs() < 1e-9);
        assert!((churn.attach_us - 2.0).abs() < 1e-9);
        assert!((churn.detach_us - 4.0).abs() < 1e-9);
        let none = ChurnRecord::over(0, &[], at(1_000), at(3_000));
        assert_eq!((none.cycles, none.attach_us), (0, 0.0));
    }
}
