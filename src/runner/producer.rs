//! The producer loop: one loop, generic over what it does around each
//! operation ([`OpHook`]). It alone waits at the start line, counts
//! operations and calls, obeys the stop flag and the quota of a fixed-work
//! run, and tells the run when its producer is done; the hook is chosen
//! once per producer ([`ProducerCtx::run`]).

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::hooks::{Alternating, OpHook, OpTiming, Plain, Spun, Timed};
use super::inject::{Blocks, Spin};
use super::shared::{OpCounter, Shared};
use super::ticks::{ClockKind, MonotonicSource, TscSource};
use crate::error::Result;

/// The calls of [`ProducerCtx::run`]'s first burst, before a burst's time is
/// known.
pub const BURST: u64 = 64;
/// How long a burst of [`ProducerCtx::run`]'s calls is sized to last: long
/// enough that a burst's end (a look at the stop flag, a store, a clock read,
/// ~15 ns) disappears even behind a 2 ns call (0.002 %), short enough that
/// a stop is seen within a few milliseconds and each second's count is off
/// by a millisecond's calls at most.
const BURST_NS: u64 = 1_000_000;
/// The longest burst: 2^26 calls of a 2 ns call are 130 ms, a bound should
/// a clock stall make a burst look shorter than it was.
const MAX_BURST: u64 = 1 << 26;

/// Sizes [`ProducerCtx::run`]'s bursts by time: a burst twice as long as the
/// last when that one took under half of [`BURST_NS`], half as long when it
/// took over twice that.
struct BurstSizer {
    calls: u64,
    started: Instant,
}

impl BurstSizer {
    fn new(first: u64) -> BurstSizer {
        BurstSizer {
            calls: first,
            started: Instant::now(),
        }
    }

    /// The next burst's calls, from the time since the last call of this.
    fn next(&mut self) -> u64 {
        let now = Instant::now();
        let ns = u64::try_from(now.duration_since(self.started).as_nanos()).unwrap_or(u64::MAX);
        self.started = now;
        if ns < BURST_NS / 2 && self.calls < MAX_BURST {
            self.calls *= 2;
        } else if ns > BURST_NS * 2 && self.calls > 1 {
            self.calls /= 2;
        }
        self.calls
    }
}

/// What a producer thread gets: its id, its counter, and when to stop.
///
/// A producer's first [`run`](Self::run) or [`try_run`](Self::try_run) waits
/// at the start line: whatever the producer does before is per-thread set-up
/// (say, a perf event its own thread must open) and is not measured.
pub struct ProducerCtx<'a> {
    pub id: usize,
    pub(super) shared: &'a Shared,
    counter: &'a OpCounter,
    /// Fixed-work mode: how many times this producer runs its operation.
    quota: Option<u64>,
    /// The busy loop after each operation (see [`inject::Injected`]).
    spin: Option<&'a Spin>,
    started: Cell<bool>,
    finished: Cell<bool>,
}

impl<'a> ProducerCtx<'a> {
    pub(super) fn new(
        id: usize,
        shared: &'a Shared,
        quota: Option<u64>,
        spin: Option<&'a Spin>,
    ) -> ProducerCtx<'a> {
        ProducerCtx {
            id,
            shared,
            counter: &shared.counters[id],
            quota,
            spin,
            started: Cell::new(false),
            finished: Cell::new(false),
        }
    }
}

impl ProducerCtx<'_> {
    /// Runs `op` until told to stop (or `quota` times), counting one
    /// operation per call. Calls go in bursts of about a millisecond
    /// ([`BurstSizer`]) between looks at the stop flag and updates of the
    /// counter, so that the harness adds nothing measurable to even the
    /// cheapest operation.
    #[inline(always)]
    pub fn run(&self, mut op: impl FnMut()) {
        // Infallible: the operation returns nothing to fail with.
        let _ = self.hooked(BURST, move || {
            op();
            Ok(1)
        });
    }

    /// Like [`run`](Self::run) for an operation that can fail and that counts
    /// several operations per call (e.g. a batch of threads). Such an
    /// operation may be slow: the stop flag is looked at after each call.
    #[inline(always)]
    pub fn try_run(&self, op: impl FnMut() -> Result<u64>) -> Result<()> {
        self.hooked(1, op)
    }

    /// The loop with the hook this producer's run asks for, chosen once:
    /// the loop without one is the plain loop.
    #[inline(always)]
    fn hooked(&self, burst: u64, op: impl FnMut() -> Result<u64>) -> Result<()> {
        if let Some(spin) = self.spin {
            let iterations = spin.iterations;
            return match &spin.blocks {
                Some(blocks) => self.alternate(iterations, blocks, op),
                None => self.drive(&mut Spun { iterations }, burst, op),
            };
        }
        if let Some(timing) = self.shared.timing.as_deref() {
            return self.timed(timing, burst, op);
        }
        self.drive(&mut Plain, burst, op)
    }

    /// The producer loop with each operation timed into `timing`, the clock
    /// read inline (one loop per clock).
    fn timed(
        &self,
        timing: &dyn OpTiming,
        burst: u64,
        op: impl FnMut() -> Result<u64>,
    ) -> Result<()> {
        let mut recorder = timing.producer(self.id);
        let recorder = recorder.as_mut();
        match timing.clock_kind() {
            ClockKind::Tsc => self.drive(&mut Timed::<TscSource>::new(recorder), burst, op),
            ClockKind::Monotonic => {
                self.drive(&mut Timed::<MonotonicSource>::new(recorder), burst, op)
            }
        }
    }

    /// Sizing the injected spin ([`Alternating`]); runs until the stop (or
    /// as many whole pairs of blocks as the quota holds).
    fn alternate(
        &self,
        iterations: u64,
        blocks: &Blocks,
        op: impl FnMut() -> Result<u64>,
    ) -> Result<()> {
        let mut hook = Alternating::new(iterations);
        let result = self.drive(&mut hook, 1, op);
        blocks.add(hook.into_pairs());
        result
    }

    /// The producer loop: from the start line, bursts of calls of `op`
    /// through `hook` (or as many as the hook asks), until the stop or the
    /// quota; the counter updated after each burst, the calls made stored at
    /// the end, and the run told this producer is done. A `burst` of one
    /// stays one (each call may be slow); a longer one is the first burst's,
    /// the next ones sized by time.
    #[inline(always)]
    pub(super) fn drive(
        &self,
        hook: &mut impl OpHook,
        burst: u64,
        mut op: impl FnMut() -> Result<u64>,
    ) -> Result<()> {
        self.start();
        // The burst is a value the compiler cannot see, which keeps it a
        // loop: 64 unrolled back-to-back calls run measurably slower than a
        // loop of one.
        let (calls, result) = if burst > 1 {
            let mut sizer = BurstSizer::new(burst);
            self.bursts(hook, &mut op, self.quota, |room| sizer.next().min(room))
        } else {
            self.bursts(hook, &mut op, self.quota, |room| burst.min(room))
        };
        self.counter.calls.store(calls, Relaxed);
        self.finish();
        result
    }

    /// [`drive`](Self::drive)'s loop, up to `quota` calls, each burst the
    /// calls `standard` makes of the room left; the calls made.
    #[inline(always)]
    fn bursts(
        &self,
        hook: &mut impl OpHook,
        op: &mut impl FnMut() -> Result<u64>,
        quota: Option<u64>,
        mut standard: impl FnMut(u64) -> u64,
    ) -> (u64, Result<()>) {
        let stop = &self.shared.stop;
        let (mut calls, mut done) = (0u64, 0u64);
        let result = 'run: loop {
            if quota.is_some_and(|quota| calls >= quota) || stop.is_set() {
                break Ok(());
            }
            let room = quota.map_or(u64::MAX, |quota| quota - calls);
            let burst = hook.burst(standard(room), room);
            if burst == 0 {
                break Ok(());
            }
            let before = done;
            for _ in 0..burst {
                match hook.call(op) {
                    Ok(n) => done += n,
                    Err(err) => break 'run Err(err),
                }
            }
            calls += burst;
            // Only this thread writes the counter: a plain store is exact.
            self.counter.ops.store(done, Relaxed);
            hook.after_burst(done - before);
        };
        (calls, result)
    }

    /// Whether the run asked the producers to stop: for an operation that
    /// waits (on a full socket, say) and must not outlive the run.
    pub fn should_stop(&self) -> bool {
        self.shared.stop.is_set()
    }

    /// For a producer with nothing more to do (its consumers produce, say):
    /// waits at the start line if it has not yet, then until the run stops.
    pub fn wait_for_stop(&self) {
        self.start();
        self.shared.stop.wait_for(|| false);
    }

    /// Waits at the start line, once.
    pub(super) fn start(&self) {
        if !self.started.replace(true) {
            self.shared.gate.arrive_and_wait();
        }
    }

    /// Tells a fixed-work run that this producer's share is done, once; what
    /// the producer does afterwards (tearing down) is not timed.
    pub(super) fn finish(&self) {
        if !self.finished.replace(true) {
            self.shared.producer_finished();
        }
    }
}
