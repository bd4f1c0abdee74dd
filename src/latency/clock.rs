//! The clock producers time each operation with: the CPU's time-stamp counter
//! where the kernel itself trusts it, calibrated against CLOCK_MONOTONIC, and
//! the vDSO's CLOCK_MONOTONIC otherwise.
//!
//! Measured on this machine (AMD EPYC VM, clocksource tsc), quiet: a plain
//! `rdtsc` costs 9.6 ns, `rdtscp` 19 ns, `clock_gettime(CLOCK_MONOTONIC)`
//! through the vDSO 24 ns (it reads the same counter, ordered, and scales it).
//! The readings themselves are the producer loop's ([`crate::runner::ticks`]).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::Distribution;
pub use crate::runner::ticks::{ClockKind, MonotonicSource, Source, TscSource};

/// The chosen clock: its kind, how to turn its ticks into nanoseconds, what
/// a reading costs and the floor (an empty operation, timed).
#[derive(Clone, Debug)]
pub struct Clock {
    pub kind: ClockKind,
    /// Nanoseconds per tick, in units of 2^-32.
    pub ns_per_tick_q32: u64,
    /// Mean cost of one reading, in ns.
    pub read_ns: f64,
    /// The smallest step two back-to-back readings showed, in ns: a VM's
    /// counter may advance in steps (10 ns on this machine's).
    pub resolution_ns: u64,
    /// Why the time-stamp counter was not used, when it was not.
    pub fallback_reason: Option<String>,
    /// The distribution of an empty operation timed as operations are.
    pub floor: Distribution,
}

impl Clock {
    /// The process's clock, chosen and calibrated once (about 60 ms).
    pub fn get() -> &'static Clock {
        static CLOCK: OnceLock<Clock> = OnceLock::new();
        CLOCK.get_or_init(Clock::choose)
    }

    /// Ticks to nanoseconds.
    #[inline(always)]
    pub fn ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.ns_per_tick_q32)) >> 32) as u64
    }

    fn choose() -> Clock {
        match tsc_usable().and_then(|()| calibrate_tsc()) {
            Ok(q32) => Clock::measured(ClockKind::Tsc, q32, None),
            Err(why) => Clock::measured(ClockKind::Monotonic, 1 << 32, Some(why)),
        }
    }

    fn measured(kind: ClockKind, ns_per_tick_q32: u64, fallback_reason: Option<String>) -> Clock {
        let mut clock = Clock {
            kind,
            ns_per_tick_q32,
            read_ns: 0.0,
            resolution_ns: 0,
            fallback_reason,
            floor: Distribution::new(),
        };
        let (read_ns, floor) = match kind {
            ClockKind::Tsc => clock.measure_floor::<TscSource>(),
            ClockKind::Monotonic => clock.measure_floor::<MonotonicSource>(),
        };
        clock.resolution_ns = match kind {
            ClockKind::Tsc => clock.resolution::<TscSource>(),
            ClockKind::Monotonic => clock.resolution::<MonotonicSource>(),
        };
        clock.read_ns = read_ns;
        clock.floor = floor;
        clock
    }

    /// The clock's step: the greatest common divisor of back-to-back
    /// readings' differences (a counter that advances in steps of 26 ticks
    /// never differs by less, nor by anything but multiples).
    fn resolution<S: Source>(&self) -> u64 {
        fn gcd(a: u64, b: u64) -> u64 {
            if b == 0 {
                a
            } else {
                gcd(b, a % b)
            }
        }
        let step = (0..100_000)
            .map(|_| {
                let t0 = S::now();
                let t1 = S::now();
                t1.wrapping_sub(t0)
            })
            .fold(0, gcd);
        self.ns(step).max(1)
    }

    /// Times an empty operation as the producers time theirs, and the cost
    /// of a reading: the median of 21 batches of 50,000 back to back. On this
    /// VM the cost of `rdtsc` itself varies with the host's load (9.5 ns
    /// quiet, 50 to 150 ns busy), so the median is what runs pay.
    fn measure_floor<S: Source>(&self) -> (f64, Distribution) {
        const READS: u32 = 50_000;
        const EMPTY: u32 = 200_000;
        let mut batches: Vec<f64> = (0..21)
            .map(|_| {
                let start = Instant::now();
                let mut sink = 0u64;
                for _ in 0..READS {
                    sink = sink.wrapping_add(S::now());
                }
                std::hint::black_box(sink);
                start.elapsed().as_nanos() as f64 / f64::from(READS)
            })
            .collect();
        batches.sort_by(f64::total_cmp);
        let read_ns = batches[batches.len() / 2];
        let mut floor = Distribution::new();
        for _ in 0..EMPTY {
            let t0 = S::now();
            std::hint::black_box(());
            let t1 = S::now();
            floor.record(self.ns(t1.wrapping_sub(t0)));
        }
        (read_ns, floor)
    }
}

/// Whether the time-stamp counter can be trusted across CPUs and sleeps.
fn tsc_usable() -> Result<(), String> {
    if !cfg!(target_arch = "x86_64") {
        return Err("not an x86-64 CPU".into());
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo")
        .map_err(|e| format!("cannot read /proc/cpuinfo: {e}"))?;
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    for flag in ["constant_tsc", "nonstop_tsc", "rdtscp"] {
        if !flags.split_whitespace().any(|f| f == flag) {
            return Err(format!("the CPU does not list {flag}"));
        }
    }
    // The kernel checks the counters agree across CPUs before it uses them
    // as its clocksource, and switches away when they drift.
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let source = std::fs::read_to_string(path).unwrap_or_default();
    if source.trim() != "tsc" {
        return Err(format!(
            "the kernel's clocksource is {}, not tsc",
            source.trim()
        ));
    }
    Ok(())
}

/// Nanoseconds per tick (2^-32 units), from two 25 ms spans against
/// CLOCK_MONOTONIC, which must agree within 0.1 %.
fn calibrate_tsc() -> Result<u64, String> {
    let span = || {
        let (m0, t0) = (MonotonicSource::now(), TscSource::now());
        let until = Instant::now() + Duration::from_millis(25);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let (m1, t1) = (MonotonicSource::now(), TscSource::now());
        let ticks = t1.wrapping_sub(t0);
        if ticks == 0 {
            return 0;
        }
        ((u128::from(m1.wrapping_sub(m0)) << 32) / u128::from(ticks)) as u64
    };
    let (a, b) = (span(), span());
    if a == 0 || b == 0 {
        return Err("the time-stamp counter did not advance".into());
    }
    let drift = (a as f64 - b as f64).abs() / a as f64;
    if drift > 1e-3 {
        return Err(format!(
            "two calibrations of the time-stamp counter differ by {:.2} %",
            drift * 100.0
        ));
    }
    Ok((a + b) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_agrees_with_the_monotonic_clock() {
        let clock = Clock::get();
        let read = || match clock.kind {
            ClockKind::Tsc => clock.ns(TscSource::now()),
            ClockKind::Monotonic => MonotonicSource::now(),
        };
        // Each read of the clock is bracketed by two monotonic reads, so a
        // preemption between them widens the bracket instead of failing the
        // check: the interval the clock saw must lie within the narrowest and
        // widest the monotonic clock allows, give or take 1 %.
        let bracket = || (MonotonicSource::now(), read(), MonotonicSource::now());
        let (m0, c0, m0_after) = bracket();
        std::thread::sleep(Duration::from_millis(50));
        let (m1, c1, m1_after) = bracket();
        let c = (c1 - c0) as f64;
        let (narrow, wide) = ((m1 - m0_after) as f64, (m1_after - m0) as f64);
        assert!(
            c >= narrow * 0.99 && c <= wide * 1.01,
            "clock {c} ns, monotonic between {narrow} and {wide} ns"
        );
        assert!(clock.read_ns > 0.0 && clock.read_ns < 1000.0);
        assert!(clock.floor.count() == 200_000);
        assert!(clock.floor.percentile(50.0) < 1000);
    }
}
