//! What the producer loop does around each operation ([`OpHook`]): nothing
//! (the plain loop: a zero-sized hook that compiles away), the injected spin
//! of `bench calibrate` and its alternating timed blocks
//! ([`super::inject`]), or, under `--latency`, each operation between two
//! clock readings, its ticks handed to whoever times the run ([`OpTiming`],
//! the latency recorder). The clock is read inline, so that the readings
//! bracket the operation alone.

use std::marker::PhantomData;
use std::time::Instant;

use super::inject::{self, BlockPair};
use super::ticks::{nanos, ClockKind, Source};
use crate::error::Result;

/// What the producer loop does around each operation, and how many it makes
/// between looks at the stop flag. Each hook is a type of its own, so that
/// the loop is compiled once per hook and an empty one costs nothing.
pub(super) trait OpHook {
    /// The calls of the next burst: `standard` (what the loop would make)
    /// unless the hook paces the loop itself; `room` calls are left of a
    /// fixed-work quota (`u64::MAX` without one). Zero ends the loop.
    #[inline(always)]
    fn burst(&mut self, standard: u64, _room: u64) -> u64 {
        standard
    }

    /// Runs one operation; what it counted.
    fn call(&mut self, op: &mut impl FnMut() -> Result<u64>) -> Result<u64>;

    /// After a burst that counted `ops` operations, once the producer's
    /// counter shows them.
    #[inline(always)]
    fn after_burst(&mut self, _ops: u64) {}
}

/// No hook: the operation alone.
pub(super) struct Plain;

impl OpHook for Plain {
    #[inline(always)]
    fn call(&mut self, op: &mut impl FnMut() -> Result<u64>) -> Result<u64> {
        op()
    }
}

/// The injected spin after each call of the operation, however many
/// operations the call counted (a trigger of 1000 loops, a batch of passes):
/// a fixed cost per call can be sized for a call of any length, where one
/// per counted operation could not be smaller than one iteration.
pub(super) struct Spun {
    pub(super) iterations: u64,
}

impl OpHook for Spun {
    #[inline(always)]
    fn call(&mut self, op: &mut impl FnMut() -> Result<u64>) -> Result<u64> {
        let n = op()?;
        inject::spin(self.iterations);
        Ok(n)
    }
}

/// Sizing the injected spin: blocks of calls alternately without and with
/// the spin, each block timed, a pair of them kept in `pairs`. A block grows
/// until it takes [`inject::BLOCK_NS`], so that the clock costs next to
/// nothing beside it; the pairs before that are not kept.
pub(super) struct Alternating {
    iterations: u64,
    /// Calls per block.
    block: u64,
    /// Whether this block pays the spin (the second of its pair).
    spinning: bool,
    started: Instant,
    /// The block without the spin of the pair under way: ns, operations.
    without: (u64, u64),
    pairs: Vec<BlockPair>,
}

impl Alternating {
    pub(super) fn new(iterations: u64) -> Alternating {
        Alternating {
            iterations,
            block: 1,
            spinning: false,
            started: Instant::now(),
            without: (0, 0),
            pairs: Vec::new(),
        }
    }

    /// The pairs kept.
    pub(super) fn into_pairs(self) -> Vec<BlockPair> {
        self.pairs
    }
}

impl OpHook for Alternating {
    #[inline(always)]
    fn burst(&mut self, _standard: u64, room: u64) -> u64 {
        // A pair starts only with room for both its blocks.
        if !self.spinning && room < self.block.saturating_mul(2) {
            return 0;
        }
        self.started = Instant::now();
        self.block
    }

    #[inline(always)]
    fn call(&mut self, op: &mut impl FnMut() -> Result<u64>) -> Result<u64> {
        let n = op()?;
        if self.spinning {
            inject::spin(self.iterations);
        }
        Ok(n)
    }

    /// A block's time per call, as the spin is paid per call ([`Spun`]).
    fn after_burst(&mut self, _ops: u64) {
        let ns = nanos(self.started.elapsed());
        let calls = self.block;
        if !self.spinning {
            self.without = (ns, calls);
            self.spinning = true;
            return;
        }
        self.spinning = false;
        let (without_ns, without_calls) = self.without;
        if without_ns < inject::BLOCK_NS && self.block < 1 << 20 {
            self.block *= 2;
        } else {
            self.pairs.push(BlockPair {
                without_ns,
                without_calls,
                with_ns: ns,
                with_calls: calls,
            });
        }
    }
}

/// What times the producers' operations (`--latency`), as the runner sees it.
pub trait OpTiming: Send + Sync {
    /// The clock the producers read around each operation.
    fn clock_kind(&self) -> ClockKind;

    /// Producer `id`'s recording side, taken before its start line; it hands
    /// in what it holds when dropped.
    fn producer(&self, id: usize) -> Box<dyn OpRecorder + '_>;

    /// The measuring thread's tick: what producers record from now on
    /// belongs to second `epoch`.
    fn advance(&self, epoch: u64);
}

/// One producer's recording side of an [`OpTiming`].
pub trait OpRecorder {
    /// Records one operation of `ticks` clock ticks (after the second reading).
    fn record(&mut self, ticks: u64);

    /// Between bursts: hands in what was recorded if the second has moved on.
    fn between_bursts(&mut self);
}

/// Each operation timed with `S` into `recorder`.
pub(super) struct Timed<'r, S> {
    recorder: &'r mut dyn OpRecorder,
    clock: PhantomData<S>,
}

impl<'r, S: Source> Timed<'r, S> {
    pub(super) fn new(recorder: &'r mut dyn OpRecorder) -> Timed<'r, S> {
        Timed {
            recorder,
            clock: PhantomData,
        }
    }
}

impl<S: Source> OpHook for Timed<'_, S> {
    #[inline(always)]
    fn call(&mut self, op: &mut impl FnMut() -> Result<u64>) -> Result<u64> {
        let t0 = S::now();
        let outcome = op();
        let t1 = S::now();
        if outcome.is_ok() {
            self.recorder.record(t1.wrapping_sub(t0));
        }
        outcome
    }

    #[inline(always)]
    fn after_burst(&mut self, _ops: u64) {
        self.recorder.between_bursts();
    }
}
