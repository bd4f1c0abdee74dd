//! A known extra cost per operation, for `bench calibrate`: a busy loop of a
//! set number of iterations after each of the producers' operations (each
//! call, however many operations it counts: a trigger of 1000 loops), so that
//! a benchmark can be made slower by an amount that is measured, not assumed.

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use super::{ProducerCtx, Workload};
use crate::error::Result;

/// Burns `iterations` rounds of two dependent multiplies, in registers:
/// within a call each waits for the one before, so a round takes their
/// latency (calls back to back may still overlap, which is why the cost is
/// sized in the benchmark itself). A loop through memory (a value stored and loaded
/// back) was not steady: the CPU sometimes renames the store away, and its
/// cost per round doubled or halved from one run to the next.
#[inline(never)]
pub fn spin(iterations: u64) {
    if iterations == 0 {
        return;
    }
    let mut x = 1u64;
    let mut n = iterations;
    // SAFETY: the loop touches only the two registers it is given.
    unsafe {
        std::arch::asm!(
            "2:",
            "imul {x}, {x}",
            "imul {x}, {x}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            options(nomem, nostack),
        );
    }
    black_box((x, n));
}

/// The CPU time this thread has used, in ns: unlike the wall clock, it does
/// not count the time other tasks had the CPU (the machine may be shared).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The CPU time one iteration of [`spin`] takes in one long loop, in ns:
/// the fastest of a few timed batches. A first guess only: short spins
/// called back to back overlap in the pipeline and cost less an iteration.
pub fn ns_per_iteration() -> f64 {
    const ITERATIONS: u64 = 5_000_000;
    (0..5)
        .map(|_| {
            let start = thread_cpu_ns();
            spin(black_box(ITERATIONS));
            thread_cpu_ns().saturating_sub(start) as f64 / ITERATIONS as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The CPU time of one call of `spin(iterations)` among many back to back,
/// as the producers make them, in ns: the fastest of a few timed batches.
pub fn ns_per_call(iterations: u64) -> f64 {
    // About 2 million iterations a batch, whatever the call's length: a
    // floor of a thousand calls made a batch of 1 ms calls take a second.
    let calls = (2_000_000 / iterations.max(1)).max(10);
    (0..5)
        .map(|_| {
            let start = thread_cpu_ns();
            for _ in 0..calls {
                spin(black_box(iterations));
            }
            thread_cpu_ns().saturating_sub(start) as f64 / calls as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The iterations of [`spin`] that take about `ns`, at least one.
pub fn iterations_for(ns: f64, ns_per_iteration: f64) -> u64 {
    (ns / ns_per_iteration).round().max(1.0) as u64
}

/// The iterations of [`spin`] whose call costs about `ns` of CPU time, sized
/// on calls as the producers make them, and what such a call measured.
pub fn sized_for(ns: f64) -> (u64, f64) {
    let mut iterations = iterations_for(ns, ns_per_iteration());
    let mut per_call = ns_per_call(iterations);
    for _ in 0..3 {
        let next = iterations_for(ns, per_call / iterations as f64);
        if next == iterations {
            break;
        }
        iterations = next;
        per_call = ns_per_call(iterations);
    }
    (iterations, per_call)
}

/// The cost a workload's producers add to every operation.
pub struct Spin {
    /// Iterations of [`spin`] after each operation.
    pub iterations: u64,
    /// Sizing: operations go in blocks alternately without and with the
    /// spin, each block timed, so that what the spin adds to this very
    /// operation is measured in place, paired block by block.
    pub blocks: Option<Arc<Blocks>>,
}

/// A block without the spin and the block with it that followed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BlockPair {
    pub without_ns: u64,
    pub without_calls: u64,
    pub with_ns: u64,
    pub with_calls: u64,
}

impl BlockPair {
    /// The wall ns an operation took in this pair without and with the
    /// spin; `None` for a block that made no operation.
    fn per_op(&self) -> Option<(f64, f64)> {
        (self.without_calls > 0 && self.with_calls > 0).then(|| {
            (
                self.without_ns as f64 / self.without_calls as f64,
                self.with_ns as f64 / self.with_calls as f64,
            )
        })
    }
}

/// The timed block pairs of a sizing run, from every producer.
#[derive(Debug, Default)]
pub struct Blocks {
    pairs: Mutex<Vec<BlockPair>>,
}

/// Blocks double in calls until one without the spin takes this long
/// (200–400 µs, then): the clock's own cost (tens of ns) is a
/// ten-thousandth of it, and the few operations after a switch that the
/// switch itself may slow are a small part of the block's. Pairs of
/// shorter blocks are not kept.
pub const BLOCK_NS: u64 = 200_000;

/// What a sizing run's block pairs say of the spin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinEffect {
    /// Median wall ns of an operation without the spin.
    pub op_ns: f64,
    /// Median over pairs of the slowdown the spin made, as a fraction of
    /// the rate: 1 − (ns an operation without) / (ns an operation with).
    pub slowdown: f64,
    pub pairs: usize,
}

fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

impl Blocks {
    pub fn add(&self, pairs: Vec<BlockPair>) {
        self.pairs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(pairs);
    }

    /// The medians over the pairs (a preemption slows one block of a pair,
    /// either one, so the median shrugs it off where a mean would not);
    /// `None` with no pair.
    pub fn measured(&self) -> Option<SpinEffect> {
        let pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let per_op: Vec<(f64, f64)> = pairs.iter().filter_map(BlockPair::per_op).collect();
        let mut without: Vec<f64> = per_op.iter().map(|p| p.0).collect();
        let mut slowdown: Vec<f64> = per_op.iter().map(|(a, b)| 1.0 - a / b).collect();
        Some(SpinEffect {
            op_ns: median(&mut without)?,
            slowdown: median(&mut slowdown)?,
            pairs: per_op.len(),
        })
    }
}

/// A benchmark's workload whose every operation pays `spin`. The runner
/// unwraps it ([`Workload::injected`]) and runs the inner workload itself,
/// asking it everything but the spin: no method is forwarded by hand, so
/// none can be missed.
pub struct Injected {
    pub inner: Box<dyn Workload>,
    pub spin: Spin,
}

impl Workload for Injected {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        self.inner.produce(ctx)
    }

    fn injected(&self) -> Option<(&dyn Workload, &Spin)> {
        Some((self.inner.as_ref(), &self.spin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::affinity::Placement;
    use crate::runner::run_fixed;

    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    /// An operation that costs next to nothing, and the CPU time its
    /// producer spent in the runner's loop (the machine is shared: wall time
    /// would count other tasks' turns).
    struct Empty {
        cpu_ns: Arc<AtomicU64>,
    }

    impl Workload for Empty {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            let start = thread_cpu_ns();
            ctx.run(|| {
                black_box(0u64);
            });
            self.cpu_ns.store(thread_cpu_ns() - start, Relaxed);
            Ok(())
        }
    }

    /// CPU ns per operation of `ops` operations through the runner's loop,
    /// with `spin` injected.
    fn ns_per_op(spin: u64, ops: u64) -> f64 {
        let placement = Placement {
            consumers: vec![],
            producers: vec![None],
        };
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let injected = Injected {
            inner: Box::new(Empty {
                cpu_ns: Arc::clone(&cpu_ns),
            }),
            spin: Spin {
                iterations: spin,
                blocks: None,
            },
        };
        let run = run_fixed(
            &injected,
            &placement,
            ops,
            &[crate::channels::Kind::Counter],
            &mut [],
        )
        .unwrap();
        assert_eq!(run.ops, ops);
        cpu_ns.load(Relaxed) as f64 / ops as f64
    }

    /// CPU ns of `spin(iterations)` called alone, `calls` times.
    fn ns_alone(iterations: u64, calls: u64) -> f64 {
        let start = thread_cpu_ns();
        for _ in 0..calls {
            spin(black_box(iterations));
        }
        (thread_cpu_ns() - start) as f64 / calls as f64
    }

    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    /// An operation of `iterations` of the spin itself: tens of ns, so
    /// that a sizing block reaches its length within a few thousand.
    struct Spinning {
        iterations: u64,
    }

    impl Workload for Spinning {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.run(|| spin(black_box(self.iterations)));
            Ok(())
        }
    }

    /// What the sizing blocks measure through the runner's loop: an
    /// operation of 10 iterations, `iterations` more in alternate blocks,
    /// a million operations at most.
    fn measured_in_blocks(iterations: u64) -> SpinEffect {
        let placement = Placement {
            consumers: vec![],
            producers: vec![None],
        };
        let blocks = Arc::new(Blocks::default());
        let injected = Injected {
            inner: Box::new(Spinning { iterations: 10 }),
            spin: Spin {
                iterations,
                blocks: Some(Arc::clone(&blocks)),
            },
        };
        let ops = 1_000_000;
        let run = run_fixed(
            &injected,
            &placement,
            ops,
            &[crate::channels::Kind::Counter],
            &mut [],
        )
        .unwrap();
        assert!(
            run.ops > 0 && run.ops <= ops,
            "{} of {ops} operations",
            run.ops
        );
        blocks.measured().expect("no block pair was timed")
    }

    #[test]
    fn sizing_blocks_alternate_without_and_with_the_spin() {
        // 25 iterations after an operation of 10: the median pair's block
        // with the spin is the slower by about 0.7 of its time when idle
        // (0.49 was seen in CI, where load lengthened the operation to
        // 62 ns). A runner that spun in neither block, or in both, would
        // read near 0, and one that spun in the block without it below 0:
        // the floor of 0.2 parts those from a spin paid where it belongs.
        let odds = |m: &SpinEffect| m.slowdown / (1.0 - m.slowdown);
        let short = measured_in_blocks(25);
        assert!(short.slowdown > 0.2, "{short:?}");
        // Sixteen times the iterations, about sixteen times the odds (the
        // spin's ns over the operation's): what sizing scales by. Only a
        // floor, eight times below: a runner that ignored the iterations
        // would read 1, and load tends to inflate the longer blocks more
        // (10.3 was seen beside two emulated VMs at four times the
        // iterations), or the shorter (1.8 beside the host tests and a VM,
        // where the odds of a 95 % slowdown were the ratio's, 100 against
        // 400 iterations). The operation alone stays what it was: a spin
        // paid in the block without it would make it dozens of times longer.
        let long = measured_in_blocks(400);
        let scaled = odds(&long) / odds(&short);
        assert!(scaled > 2.0, "{short:?} {long:?}");
        assert!(long.op_ns < 5.0 * short.op_ns, "{short:?} {long:?}");
    }

    #[test]
    fn the_runner_adds_the_spin_to_every_operation() {
        // Whether the runner pays the spin after each operation, not how
        // closely the spin's cost repeats: that depends on the shared
        // machine (a CI run saw 1.2 where it was 1.0), and `bench calibrate`
        // measures what it adds in the benchmark itself and prints it on
        // every run ("injected: ... measured 5.2 % at 25 ..."). A runner that skipped
        // the spin would add nothing; one that paid it twice, twice as much.
        // Five interleaved repetitions, CPU time only, the median judged.
        let (spin, claimed) = sized_for(200.0);
        assert!(claimed > 0.0, "the sizing measured {claimed} ns");
        let ops = 500_000;
        let mut ratios = Vec::new();
        for _ in 0..5 {
            let bare = ns_per_op(0, ops);
            let with_spin = ns_per_op(spin, ops);
            let alone = ns_alone(spin, ops);
            ratios.push((with_spin - bare) / alone);
        }
        let ratio = median(ratios);
        assert!(
            (0.5..1.6).contains(&ratio),
            "the runner added {ratio:.3} times the spin's own cost ({spin} iterations)"
        );
    }
}
