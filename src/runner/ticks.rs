//! The counters a timed producer reads around each operation: the CPU's
//! time-stamp counter, or the vDSO's CLOCK_MONOTONIC. Which one is used, and
//! how its ticks become nanoseconds, is the latency clock's choice
//! (`latency::clock`); the producer loop only reads it.
//!
//! Plain `rdtsc` is not ordered with the work it brackets, so the counter is
//! read with `rdtscp` (it waits for every earlier instruction) and `lfence`
//! after it (no later instruction starts before the read).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which clock times the operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// The time-stamp counter, invariant (constant_tsc, nonstop_tsc) and the
    /// kernel's own clocksource, so synchronised across CPUs.
    Tsc,
    /// clock_gettime(CLOCK_MONOTONIC), through the vDSO.
    Monotonic,
}

impl ClockKind {
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Tsc => "tsc",
            ClockKind::Monotonic => "monotonic",
        }
    }
}

/// A clock's raw reading: counter ticks, or nanoseconds.
pub trait Source {
    fn now() -> u64;
}

/// The time-stamp counter, read in order with the work around it.
pub struct TscSource;

impl Source for TscSource {
    #[inline(always)]
    fn now() -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            let mut aux = 0u32;
            // SAFETY: rdtscp and lfence have no preconditions; the clock is
            // only chosen where /proc/cpuinfo lists rdtscp.
            unsafe {
                let ticks = std::arch::x86_64::__rdtscp(&mut aux);
                std::arch::x86_64::_mm_lfence();
                ticks
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            MonotonicSource::now()
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub struct MonotonicSource;

impl Source for MonotonicSource {
    #[inline(always)]
    fn now() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec and a clock every Linux has; it cannot fail.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
}

/// A duration in whole nanoseconds, saturated.
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
