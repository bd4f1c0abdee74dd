//! What the hash map bodies' times inside BPF become: each CPU's rates as
//! the kernel runner sums them up, their means, and its per-CPU lines.

use crate::channels::{Channel, Final, HITS};
use crate::figures::{Agg, Better, Figure, Show, Value};
use crate::lines::{self, Line, Lines, Num, Piece, Style};

/// NR_CPUS and NR_SLOTS in `bpf/hashmap.bpf.c`: the CPUs whose times the
/// bodies keep, and the last triggers' times kept per CPU.
#[cfg(test)]
const NR_CPUS: usize = 256;
const NR_SLOTS: usize = 32;

/// Full updates per second inside BPF, per CPU (of its last trigger) and
/// their mean over CPUs: the kernel runner's per-CPU `hash_map_full_perf`.
const CPU_UPDATES: Channel = Channel::once_per_cpu(
    "cpu updates",
    "updates/s",
    "a CPU's full updates per second, of its last trigger, timed in BPF",
);
const UPDATES_MEAN: Channel = Channel::once(
    "updates_per_sec",
    "updates/s",
    "the CPUs' full updates per second, their mean",
);
/// Lookups per second of a trigger's loops, timed inside BPF: each CPU's
/// mean over its last 32 triggers, twice their sd, how many, their mean
/// time (the kernel runner's per-CPU `lookup X M events/sec`).
const CPU_LOOKUPS: Channel = Channel::once_per_cpu(
    "cpu lookups",
    "lookups/s",
    "a CPU's lookups per second, the mean over its kept triggers, timed in BPF",
);
const CPU_LOOKUPS_2SD: Channel = Channel::once_per_cpu(
    "cpu lookups_2sd",
    "lookups/s",
    "twice the sd of a CPU's lookups per second over its kept triggers",
);
const CPU_SAMPLES: Channel = Channel::once_per_cpu(
    "cpu samples",
    "triggers",
    "the triggers a CPU kept the time of",
);
const CPU_MS: Channel = Channel::once_per_cpu(
    "cpu ms",
    "ms",
    "the mean time of a CPU's kept triggers, whole ms",
);
const LOOKUPS_MEAN: Channel = Channel::once(
    "lookups_per_sec",
    "lookups/s",
    "the CPUs' lookups per second, their mean",
);
const NS_PER_LOOKUP_ALL: Channel = Channel::once(
    "ns_per_lookup",
    "ns/lookup",
    "the kept triggers' time over their lookups",
);

pub(super) const FULL_UPDATE_CHANNELS: [Channel; 3] = [HITS, CPU_UPDATES, UPDATES_MEAN];
pub(super) const LOOKUP_CHANNELS: [Channel; 7] = [
    HITS,
    CPU_LOOKUPS,
    CPU_LOOKUPS_2SD,
    CPU_SAMPLES,
    CPU_MS,
    LOOKUPS_MEAN,
    NS_PER_LOOKUP_ALL,
];

/// Full updates per second inside BPF, the mean over CPUs.
pub const UPDATES: Figure = Figure {
    name: "full-update",
    unit: "updates/s",
    better: Better::Higher,
    show: Show::Rate,
    value: Value::OfRun(&Agg::Final(&UPDATES_MEAN)),
};
/// Lookups per second of a trigger's loops, timed inside BPF, the mean
/// over CPUs.
pub const LOOKUPS: Figure = Figure {
    name: "lookup",
    unit: "lookups/s",
    value: Value::OfRun(&Agg::Final(&LOOKUPS_MEAN)),
    ..UPDATES
};
/// The time of one lookup inside BPF: the kept triggers' mean time over
/// their lookups.
pub const NS_PER_LOOKUP: Figure = Figure {
    name: "ns-per-lookup",
    unit: "ns/lookup",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::OfRun(&Agg::Final(&NS_PER_LOOKUP_ALL)),
};

/// The kernel runner's per-CPU lines before the summary.
pub(super) const FULL_UPDATE_LINES: Lines = Lines {
    before_summary: &[Line::EachCpu(
        &CPU_UPDATES,
        &[
            Piece::Cpu(Num::whole(0)),
            Piece::Text(":hash_map_full_perf "),
            Piece::CpuValue(&CPU_UPDATES, Num::whole(0)),
            Piece::Text(" events per sec"),
        ],
    )],
    ..lines::HITS
};
const MILLIONS: Num = Num::fixed(0, 3).per(1e6);
pub(super) const LOOKUP_LINES: Lines = Lines {
    before_summary: &[Line::EachCpu(
        &CPU_LOOKUPS,
        &[
            Piece::Text("cpu"),
            Piece::Cpu(Num::whole(0).style(Style::ZeroPadded(2))),
            Piece::Text(": lookup "),
            Piece::CpuValue(&CPU_LOOKUPS, MILLIONS),
            Piece::Text("M \u{b1} "),
            Piece::CpuValue(&CPU_LOOKUPS_2SD, MILLIONS),
            Piece::Text("M events/sec (approximated from "),
            Piece::CpuValue(&CPU_SAMPLES, Num::whole(0)),
            Piece::Text(" samples of ~"),
            Piece::CpuValue(&CPU_MS, Num::whole(0)),
            Piece::Text("ms)"),
        ],
    )],
    ..lines::HITS
};

/// Each CPU's updates per second (of its last trigger), and their mean.
pub(super) fn full_update_finals(times: &[u64], per_trigger: u64) -> Vec<Final> {
    let mut kept = Vec::new();
    let mut rates = Vec::new();
    for (cpu, &ns) in times.iter().enumerate().filter(|(_, ns)| **ns > 0) {
        // Whole events, as the kernel runner divides.
        let rate = (per_trigger * 1_000_000_000 / ns) as f64;
        kept.push(Final::of_cpu(&CPU_UPDATES, cpu as u32, rate));
        rates.push(rate);
    }
    if !rates.is_empty() {
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        kept.push(Final::of(&UPDATES_MEAN, mean));
    }
    kept
}

/// Each CPU's lookups per second over its kept triggers (mean, twice the
/// standard deviation, how many, their mean time), the mean over CPUs, and
/// the time per lookup over every kept trigger.
pub(super) fn lookup_finals(times: &[[u64; NR_SLOTS]], per_trigger: u64) -> Vec<Final> {
    let mut kept = Vec::new();
    let mut means = Vec::new();
    let (mut total_ns, mut triggers) = (0u64, 0u64);
    for (cpu, slots) in times.iter().enumerate() {
        // The kernel runner reads the slots up to the first empty one.
        let timed: Vec<u64> = slots.iter().copied().take_while(|ns| *ns > 0).collect();
        let Some(stats) = CpuLookups::of(&timed, per_trigger) else {
            continue;
        };
        let cpu_id = cpu as u32;
        kept.extend([
            Final::of_cpu(&CPU_LOOKUPS, cpu_id, stats.mean * 1e6),
            Final::of_cpu(&CPU_LOOKUPS_2SD, cpu_id, stats.spread * 1e6),
            Final::of_cpu(&CPU_SAMPLES, cpu_id, timed.len() as f64),
            Final::of_cpu(&CPU_MS, cpu_id, stats.mean_ms as f64),
        ]);
        means.push(stats.mean * 1e6);
        total_ns += timed.iter().sum::<u64>();
        triggers += timed.len() as u64;
    }
    if !means.is_empty() {
        let mean = means.iter().sum::<f64>() / means.len() as f64;
        kept.push(Final::of(&LOOKUPS_MEAN, mean));
    }
    if triggers > 0 && per_trigger > 0 {
        let ns = total_ns as f64 / (triggers * per_trigger) as f64;
        kept.push(Final::of(&NS_PER_LOOKUP_ALL, ns));
    }
    kept
}

/// One CPU's kept triggers, as the kernel runner sums them up.
#[derive(Debug, PartialEq)]
struct CpuLookups {
    /// Lookups per second, in millions: the mean of each trigger's.
    mean: f64,
    /// Twice their standard deviation (n - 1), in millions.
    spread: f64,
    /// The triggers' mean time, whole ms.
    mean_ms: u64,
}

impl CpuLookups {
    fn of(timed: &[u64], per_trigger: u64) -> Option<CpuLookups> {
        if timed.is_empty() {
            return None;
        }
        let n = timed.len() as f64;
        // Millions per second, from whole events per second.
        let rate = |ns: u64| (per_trigger * 1_000_000_000 / ns) as f64 / 1e6;
        let mean = timed.iter().map(|&ns| rate(ns)).sum::<f64>() / n;
        let variance = match timed.len() {
            1 => 0.0,
            _ => {
                timed
                    .iter()
                    .map(|&ns| (mean - rate(ns)).powi(2))
                    .sum::<f64>()
                    / (n - 1.0)
            }
        };
        let mean_ns = timed.iter().sum::<u64>() / timed.len() as u64;
        Some(CpuLookups {
            mean,
            spread: 2.0 * variance.sqrt(),
            mean_ms: mean_ns / 1_000_000,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_lines_are_the_kernel_runners() {
        let full = [
            ("cpu updates", Some(12), 2e6),
            ("cpu updates", Some(3), 1e6),
            ("updates_per_sec", None, 1.5e6),
        ];
        let lines = crate::report::lines::testing::summary_with(
            "bpf-hashmap-full-update",
            &[[1u64]],
            1,
            &full,
        );
        assert_eq!(
            lines[..2],
            [
                "3:hash_map_full_perf 1000000 events per sec",
                "12:hash_map_full_perf 2000000 events per sec"
            ]
        );
        let lookup = [
            ("cpu lookups", Some(1), 45e6),
            ("cpu lookups_2sd", Some(1), 14.142_135_6e6),
            ("cpu samples", Some(1), 2.0),
            ("cpu ms", Some(1), 22.0),
        ];
        let lines = crate::report::lines::testing::summary_with(
            "bpf-hashmap-lookup",
            &[[1u64]],
            1,
            &lookup,
        );
        assert_eq!(
            lines[0],
            "cpu01: lookup 45.000M \u{b1} 14.142M events/sec (approximated from 2 samples of ~22ms)"
        );
    }

    #[test]
    fn a_cpus_lookups_are_summed_up_as_the_kernel_runner_does() {
        // 1M lookups in 20 ms and in 25 ms: 50 and 40 M/s.
        let stats = CpuLookups::of(&[20_000_000, 25_000_000], 1_000_000).unwrap();
        assert!((stats.mean - 45.0).abs() < 1e-9, "{stats:?}");
        // sd of (50, 40) with n - 1 is 7.071; twice that.
        assert!((stats.spread - 14.142_135_6).abs() < 1e-6, "{stats:?}");
        assert_eq!(stats.mean_ms, 22);
        assert_eq!(CpuLookups::of(&[], 1), None);
    }

    #[test]
    fn slots_count_up_to_the_first_empty_one() {
        let mut times = vec![[0u64; NR_SLOTS]; NR_CPUS];
        times[1][0] = 10_000_000;
        times[1][1] = 10_000_000;
        times[1][3] = 1;
        let kept = lookup_finals(&times, 1_000_000);
        let get = |channel: &Channel, cpu: Option<u32>| {
            let found = kept.iter().find(|f| f.channel == channel && f.cpu == cpu);
            found.map(|f| f.value)
        };
        assert_eq!(get(&CPU_SAMPLES, Some(1)), Some(2.0));
        assert_eq!(get(&CPU_LOOKUPS, Some(1)), Some(100e6));
        assert_eq!(get(&LOOKUPS_MEAN, None), Some(100e6));
        assert_eq!(get(&NS_PER_LOOKUP_ALL, None), Some(10.0));
        assert_eq!(get(&CPU_SAMPLES, Some(0)), None);
    }

    #[test]
    fn full_updates_are_whole_events_per_cpu() {
        let kept = full_update_finals(&[0, 3_000_000, 0], 10_000);
        assert_eq!(
            kept,
            [
                Final::of_cpu(&CPU_UPDATES, 1, 3_333_333.0),
                Final::of(&UPDATES_MEAN, 3_333_333.0)
            ]
        );
    }
}
