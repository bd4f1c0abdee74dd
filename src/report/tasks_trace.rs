//! `local-storage-tasks-trace`'s lines, as the kernel runner prints them:
//! each second two `Iter` lines (the mean grace period latency in ns, the
//! kthread's ticks per grace period, `%lf` each), and at the end two
//! `SUMMARY` lines (means and sds over the measured seconds).

use std::collections::BTreeMap;

use crate::benches::tasks_trace::{KEPT_LATENCY, KEPT_LATENCY_SD, KEPT_TICKS, KEPT_TICKS_SD};
use crate::stats::Sample;

/// `a / b` as C's `printf("%lf")` prints it on x86-64 glibc: a second
/// without a grace period divides by zero, and C prints `-nan` for 0/0
/// (the x86 default NaN has its sign bit set) and `inf` for n/0.
fn c_ratio(a: f64, b: f64) -> String {
    if b != 0.0 {
        format!("{:.6}", a / b)
    } else if a == 0.0 {
        "-nan".to_string()
    } else {
        "inf".to_string()
    }
}

/// The two lines of one second (joined by a newline); `Sample::extra` holds
/// the second's grace-period ns, grace periods and kthread ticks.
pub fn iteration_lines(sample: &Sample) -> String {
    let extra = |i: usize| sample.extra.get(i).copied().unwrap_or(0) as f64;
    let (ns, periods, ticks) = (extra(0), extra(1), extra(2));
    let iter = sample.iteration;
    format!(
        "Iter {iter}\t avg tasks_trace grace period latency\t{} ns\n\
         Iter {iter}\t avg ticks per tasks_trace grace period\t{}",
        c_ratio(ns, periods),
        c_ratio(ticks, periods)
    )
}

/// The two `SUMMARY` lines (joined by a newline), from the figures the run
/// kept; `-nan`, as C prints the kernel runner's 0/0, for a run in which no
/// grace period ended.
pub fn summary_lines(kept: &BTreeMap<String, f64>) -> String {
    let get = |name: &str| match kept.get(name) {
        Some(value) => format!("{value:.3}"),
        None => "-nan".to_string(),
    };
    format!(
        "SUMMARY tasks_trace grace period latency\tavg {} us\tstddev {} us\n\
         SUMMARY ticks per tasks_trace grace period\tavg {}\tstddev {}",
        get(KEPT_LATENCY),
        get(KEPT_LATENCY_SD),
        get(KEPT_TICKS),
        get(KEPT_TICKS_SD)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_kernel_runners() {
        let mut sample = Sample::on_time(3, 12, 0, false);
        sample.extra = vec![90_000_000, 4, 2];
        assert_eq!(
            iteration_lines(&sample),
            "Iter 3\t avg tasks_trace grace period latency\t22500000.000000 ns\n\
             Iter 3\t avg ticks per tasks_trace grace period\t0.500000"
        );
        sample.extra = vec![0, 0, 0];
        assert_eq!(
            iteration_lines(&sample),
            "Iter 3\t avg tasks_trace grace period latency\t-nan ns\n\
             Iter 3\t avg ticks per tasks_trace grace period\t-nan"
        );
        let kept: BTreeMap<String, f64> = [
            (KEPT_LATENCY.to_string(), 22_500.25),
            (KEPT_LATENCY_SD.to_string(), 1_000.5),
            (KEPT_TICKS.to_string(), 0.5),
            (KEPT_TICKS_SD.to_string(), 0.0),
        ]
        .into();
        assert_eq!(
            summary_lines(&kept),
            "SUMMARY tasks_trace grace period latency\tavg 22500.250 us\tstddev 1000.500 us\n\
             SUMMARY ticks per tasks_trace grace period\tavg 0.500\tstddev 0.000"
        );
        assert!(summary_lines(&BTreeMap::new()).contains("avg -nan us"));
    }
}
