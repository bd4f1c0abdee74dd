//! Collecting the producers' histograms without stopping them.
//!
//! Each producer records into its own [`Distribution`], touched by no other
//! thread. The sampler moves an epoch on at every tick; a producer that sees
//! it moved (it looks between bursts, where it also updates its counter)
//! hands its histogram in to its slot, tagged with the epoch it was recorded
//! in, and takes an empty one back from the same slot. The slot's lock is held
//! for a push and a pop, once a second by each side, so that neither waits on
//! the other in practice. The sampler merges what was handed in a tick later,
//! when every producer has had the time to hand in.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use super::clock::{Clock, ClockKind};
use super::{Distribution, Disturbances};
use crate::runner::{OpRecorder, OpTiming};

/// The shared side: the epoch and one slot per producer.
pub struct Recorder {
    clock: &'static Clock,
    epoch: AtomicU64,
    slots: Vec<Slot>,
}

/// One producer's hand-in, on its own cache line.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    handed: Mutex<Handed>,
}

#[derive(Default)]
struct Handed {
    full: Vec<Collected>,
    /// Emptied histograms for the producer to take back, so that it never
    /// allocates while it runs.
    empty: Vec<Distribution>,
}

/// What one producer recorded during one epoch.
#[derive(Debug)]
pub struct Collected {
    /// The sampler's iteration it was recorded in (0 for a fixed run).
    pub epoch: u64,
    pub distribution: Distribution,
    pub disturbances: Disturbances,
}

impl Recorder {
    pub fn new(producers: usize) -> Recorder {
        Recorder {
            clock: Clock::get(),
            epoch: AtomicU64::new(0),
            slots: (0..producers)
                .map(|_| {
                    let slot = Slot::default();
                    // Two spares each: one to swap in, one for the lag.
                    if let Ok(mut handed) = slot.handed.lock() {
                        handed.empty = vec![Distribution::new(), Distribution::new()];
                    }
                    slot
                })
                .collect(),
        }
    }

    pub fn clock(&self) -> &'static Clock {
        self.clock
    }

    /// The sampler's tick: what producers record from now on belongs to
    /// `epoch`.
    pub fn advance(&self, epoch: u64) {
        self.epoch.store(epoch, Relaxed);
    }

    /// Producer `id`'s recording side; hands in what is left when dropped.
    pub fn producer(&self, id: usize) -> ProducerHistogram<'_> {
        ProducerHistogram {
            recorder: self,
            slot: &self.slots[id],
            local: self.take_empty(id),
            epoch: self.epoch.load(Relaxed),
            usage: thread_usage(),
        }
    }

    /// Takes what was handed in for epochs before `before` (every epoch with
    /// `None`), merged per epoch over the producers, oldest first. The
    /// producers' histograms go back to them emptied.
    pub fn collect(&self, before: Option<u64>) -> Vec<Collected> {
        let mut merged: Vec<Collected> = Vec::new();
        for slot in &self.slots {
            let ready: Vec<Collected> = {
                let mut handed = slot.handed.lock().unwrap_or_else(|e| e.into_inner());
                let (ready, later) = std::mem::take(&mut handed.full)
                    .into_iter()
                    .partition(|c| before.is_none_or(|b| c.epoch < b));
                handed.full = later;
                ready
            };
            for mut one in ready {
                match merged.iter_mut().find(|m| m.epoch == one.epoch) {
                    Some(m) => {
                        m.distribution.add(&one.distribution);
                        m.disturbances.add(&one.disturbances);
                        one.distribution.reset();
                        give_back(slot, one.distribution);
                    }
                    None => merged.push(one),
                }
            }
        }
        merged.sort_by_key(|c| c.epoch);
        merged
    }

    fn take_empty(&self, id: usize) -> Distribution {
        let mut handed = self.slots[id]
            .handed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        handed.empty.pop().unwrap_or_default()
    }
}

impl OpTiming for Recorder {
    fn clock_kind(&self) -> ClockKind {
        self.clock.kind
    }

    fn producer(&self, id: usize) -> Box<dyn OpRecorder + '_> {
        Box::new(Recorder::producer(self, id))
    }

    fn advance(&self, epoch: u64) {
        Recorder::advance(self, epoch);
    }
}

fn give_back(slot: &Slot, distribution: Distribution) {
    let mut handed = slot.handed.lock().unwrap_or_else(|e| e.into_inner());
    if handed.empty.len() < 2 {
        handed.empty.push(distribution);
    }
}

/// A producer's own histogram and the epoch it records in.
pub struct ProducerHistogram<'a> {
    recorder: &'a Recorder,
    slot: &'a Slot,
    local: Distribution,
    epoch: u64,
    /// getrusage at the start of the epoch.
    usage: Usage,
}

impl ProducerHistogram<'_> {
    pub fn clock(&self) -> &'static Clock {
        self.recorder.clock
    }

    /// Records one operation of `ticks` clock ticks.
    #[inline(always)]
    pub fn record(&mut self, ticks: u64) {
        let ns = self.recorder.clock.ns(ticks);
        self.local.record(ns);
    }

    /// Hands the histogram in if the sampler has moved the epoch on: called
    /// between bursts.
    #[inline(always)]
    pub fn hand_in_if_due(&mut self) {
        if self.recorder.epoch.load(Relaxed) != self.epoch {
            self.hand_in();
        }
    }

    #[cold]
    #[inline(never)]
    fn hand_in(&mut self) {
        let usage = thread_usage();
        let disturbances = usage.since(&self.usage);
        self.usage = usage;
        let next = self.recorder.epoch.load(Relaxed);
        let mut handed = self.slot.handed.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = handed.empty.pop().unwrap_or_default();
        let full = std::mem::replace(&mut self.local, fresh);
        handed.full.push(Collected {
            epoch: self.epoch,
            distribution: full,
            disturbances,
        });
        drop(handed);
        self.epoch = next;
    }
}

impl OpRecorder for ProducerHistogram<'_> {
    fn record(&mut self, ticks: u64) {
        ProducerHistogram::record(self, ticks);
    }

    fn between_bursts(&mut self) {
        self.hand_in_if_due();
    }
}

impl Drop for ProducerHistogram<'_> {
    fn drop(&mut self) {
        self.hand_in();
    }
}

/// The producer thread's context switches and faults so far.
#[derive(Clone, Copy, Default)]
struct Usage {
    nvcsw: i64,
    nivcsw: i64,
    minflt: i64,
    majflt: i64,
}

impl Usage {
    fn since(&self, before: &Usage) -> Disturbances {
        let d = |now: i64, then: i64| now.saturating_sub(then).max(0) as u64;
        Disturbances {
            voluntary_switches: d(self.nvcsw, before.nvcsw),
            involuntary_switches: d(self.nivcsw, before.nivcsw),
            minor_faults: d(self.minflt, before.minflt),
            major_faults: d(self.majflt, before.majflt),
        }
    }
}

fn thread_usage() -> Usage {
    // SAFETY: a zeroed rusage is a valid argument for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD of the calling thread; it fails only for a bad
    // `who`, and then the zeroes stand.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    Usage {
        nvcsw: usage.ru_nvcsw,
        nivcsw: usage.ru_nivcsw,
        minflt: usage.ru_minflt,
        majflt: usage.ru_majflt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_handed_in_by_epoch_and_merged() {
        let recorder = Recorder::new(2);
        let recorded = std::sync::Barrier::new(3);
        std::thread::scope(|scope| {
            for id in 0..2 {
                let (recorder, recorded) = (&recorder, &recorded);
                scope.spawn(move || {
                    let mut producer = recorder.producer(id);
                    for _ in 0..10 {
                        producer.local.record(100);
                    }
                    recorded.wait();
                    // Wait for the sampler's tick, then hand in.
                    while recorder.epoch.load(Relaxed) == 0 {
                        std::thread::yield_now();
                    }
                    producer.hand_in_if_due();
                    for _ in 0..5 {
                        producer.local.record(200);
                    }
                });
            }
            recorded.wait();
            recorder.advance(1);
        });
        let collected = recorder.collect(None);
        assert_eq!(collected.len(), 2);
        assert_eq!(collected[0].epoch, 0);
        assert_eq!(collected[0].distribution.count(), 20);
        assert_eq!(collected[1].epoch, 1);
        assert_eq!(collected[1].distribution.count(), 10);
        assert_eq!(collected[1].distribution.percentile(50.0), 200);
        assert!(recorder.collect(None).is_empty());
    }
}
