//! The consumers' counts, one cache line each.

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter alone on its cache line, so consumers never share one.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct PaddedCounter(pub(crate) AtomicU64);

impl PaddedCounter {
    #[inline(always)]
    pub(crate) fn add(&self, n: u64) {
        // Only one consumer writes a given counter: a plain load and store is
        // exact and cheaper than an atomic add.
        let c = &self.0;
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}
