//! The kernel runner's per-CPU lines of a benchmark timed inside BPF
//! (`Metric::PerCpu`), built from the figures its run kept: the hash map
//! family's `hash_map_full_perf` and `lookup` lines, exactly as the kernel
//! runner prints them.

use std::collections::BTreeMap;

use crate::benches::hashmap::{self, CpuValue};
use crate::benches::PerCpuLines;

/// `3:hash_map_full_perf 1234567 events per sec`: one CPU's full updates
/// per second, whole.
pub fn full_update_line(cpu: usize, events_per_sec: u64) -> String {
    format!("{cpu}:hash_map_full_perf {events_per_sec} events per sec")
}

/// `cpu01: lookup 45.000M ± 14.142M events/sec (approximated from 2
/// samples of ~22ms)`: one CPU's lookups per second, in millions.
pub fn lookup_line(cpu: usize, mean_m: f64, spread_m: f64, samples: u64, ms: u64) -> String {
    format!(
        "cpu{cpu:02}: lookup {mean_m:.3}M \u{b1} {spread_m:.3}M events/sec \
         (approximated from {samples} samples of ~{ms}ms)"
    )
}

/// Every CPU's line, in CPU order, for the CPUs the run kept values of.
pub fn lines(kind: PerCpuLines, kept: &BTreeMap<String, f64>) -> Vec<String> {
    let get = |cpu: usize, value: CpuValue| {
        hashmap::cpu_key(cpu, value).and_then(|key| kept.get(key).copied())
    };
    (0..hashmap::timed_cpus())
        .filter_map(|cpu| match kind {
            PerCpuLines::FullUpdate => {
                let rate = get(cpu, CpuValue::Updates)?;
                Some(full_update_line(cpu, rate as u64))
            }
            PerCpuLines::Lookup => {
                let mean = get(cpu, CpuValue::Lookups)?;
                let spread = get(cpu, CpuValue::LookupsSpread).unwrap_or(0.0);
                let samples = get(cpu, CpuValue::Samples).unwrap_or(0.0);
                let ms = get(cpu, CpuValue::Millis).unwrap_or(0.0);
                Some(lookup_line(
                    cpu,
                    mean / 1e6,
                    spread / 1e6,
                    samples as u64,
                    ms as u64,
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_kernel_runners() {
        assert_eq!(
            full_update_line(1, 3_333_333),
            "1:hash_map_full_perf 3333333 events per sec"
        );
        assert_eq!(
            lookup_line(1, 45.0, 14.142_135_6, 2, 22),
            "cpu01: lookup 45.000M \u{b1} 14.142M events/sec (approximated from 2 samples of ~22ms)"
        );
    }

    #[test]
    fn lines_come_from_the_kept_figures_in_cpu_order() {
        let mut kept = BTreeMap::new();
        for (cpu, rate) in [(12, 2e6), (3, 1e6)] {
            let key = hashmap::cpu_key(cpu, CpuValue::Updates).unwrap();
            kept.insert(key.to_string(), rate);
        }
        kept.insert("updates_per_sec".to_string(), 1.5e6);
        assert_eq!(
            lines(PerCpuLines::FullUpdate, &kept),
            [
                "3:hash_map_full_perf 1000000 events per sec",
                "12:hash_map_full_perf 2000000 events per sec"
            ]
        );
        assert!(lines(PerCpuLines::Lookup, &kept).is_empty());
    }
}
