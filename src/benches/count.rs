//! The kernel runner's harness baselines (its `benchs/bench_count.c`): the
//! producers do nothing but count, so the rate is the harness's own ceiling
//! and the price of sharing one counter between threads. No BPF.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Benchmark, Info};
use crate::channels::Readings;
use crate::config::RunConfig;
use crate::error::Result;
use crate::runner::{ProducerCtx, SetUp, Workload};

pub static BENCHES: &[&dyn Benchmark] = &[
    &Count {
        info: Info::hits(
            "count-global",
            "every producer adds one to one shared atomic counter: the harness with a contended line",
        )
        .timed_per_hit(),
        shared: true,
    },
    &Count {
        info: Info::hits(
            "count-local",
            "each producer adds one to its own atomic counter, a cache line apart: the harness alone",
        )
        .timed_per_hit(),
        shared: false,
    },
];

struct Count {
    info: Info,
    /// One counter for every producer (count-global), or one each.
    shared: bool,
}

/// A counter alone on its cache line (two lines: the adjacent-line
/// prefetcher pairs them), so that only the threads meant to share it do.
#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU64);

/// The counters the producers add to; their sum is the hits.
struct Counters(Box<[Line]>);

impl Benchmark for Count {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let lines = if self.shared { 1 } else { config.producers };
        Ok(SetUp::producers(Counters(
            (0..lines.max(1)).map(|_| Line::default()).collect(),
        )))
    }
}

impl Workload for Counters {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // count-global has one line, which every producer takes.
        let line = &self.0[ctx.id % self.0.len()].0;
        // A locked add, as the kernel runner's atomic_inc (relaxed order).
        ctx.run(|| {
            line.fetch_add(1, Relaxed);
        });
        Ok(())
    }

    fn read(&self, _ops: u64) -> Readings {
        vec![Some(self.0.iter().map(|line| line.0.load(Relaxed)).sum())]
    }
}
