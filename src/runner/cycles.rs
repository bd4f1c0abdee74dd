//! Attach cycles: the second kind of measurement. A cycle attaches a
//! workload's probes link by link, checks that every probe fires, and detaches
//! them, timing attach and detach in wall time and in the CPU time of the
//! attaching thread. Here is what a benchmark gives a cycle, what its verify
//! pass finds, where it is and the clock; `attach/run.rs` runs it and
//! `results/cycles.rs` keeps it. Like the rest of the runner, it knows no
//! benchmark.
//!
//! CPU time is the thread's (`RUSAGE_THREAD`), not the process's: the
//! progress bar ticks in a thread of its own, and only this thread makes the
//! attach and detach system calls. Work the kernel defers to its own threads
//! (RCU callbacks, say) is in neither; the wall-minus-CPU gap is the time this
//! thread spent waiting, which for a uprobe's detach is the grace periods.

use std::time::Instant;

use libbpf_rs::Link;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
    /// The kernel functions left out because kprobes refuse them, asked
    /// after attaching (none, for probes on this process's sites).
    fn skipped(&self) -> Vec<String>;
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

/// This thread's user and system CPU time, in nanoseconds.
pub fn thread_cpu_ns() -> (u64, u64) {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage; RUSAGE_THREAD cannot fail on Linux.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    (ns(usage.ru_utime), ns(usage.ru_stime))
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
}
