//! A known extra cost per operation, for `bench calibrate`: a busy loop of a
//! set number of iterations after each of the producers' operations, so that
//! a benchmark can be made slower by an amount that is measured, not assumed.

use std::hint::black_box;

use super::{ConsumerCtx, Counts, ProducerCtx, Workload};
use crate::error::Result;

/// Burns `iterations` rounds of a loop the compiler cannot remove or fold.
#[inline(never)]
pub fn spin(iterations: u64) {
    let mut x = 0u64;
    for i in 0..iterations {
        x = black_box(x.wrapping_add(i));
    }
    black_box(x);
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
    let calls = (2_000_000 / iterations.max(1)).max(1_000);
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

/// A benchmark's workload whose every operation costs `spin` iterations more.
pub struct Injected {
    pub inner: Box<dyn Workload>,
    pub spin: u64,
}

impl Workload for Injected {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        self.inner.produce(ctx)
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        self.inner.consume(ctx)
    }

    fn measure(&self, ops: u64) -> Counts {
        self.inner.measure(ops)
    }

    fn probe_path(&self) -> Option<Result<crate::probe_path::ProbePath>> {
        self.inner.probe_path()
    }

    fn injected_spin(&self) -> u64 {
        self.spin
    }

    fn churn(&self) -> Option<(usize, Vec<super::cycles::ChurnCycle>)> {
        self.inner.churn()
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
            spin,
        };
        let run = run_fixed(&injected, &placement, ops, &mut []).unwrap();
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

    #[test]
    fn the_runner_adds_the_spin_to_every_operation() {
        // Whether the runner pays the spin after each operation, not how
        // closely the spin's cost repeats: that depends on the shared
        // machine (a CI run saw 1.2 where it was 1.0), and `bench calibrate`
        // measures and prints it on every run ("injected: ... ns per
        // operation ... (a run with the cost alone)"). A runner that skipped
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
