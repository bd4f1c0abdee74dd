//! The lines of `--latency`: a run's percentiles, how they were timed, what
//! disturbed the producers, and the percentiles' spread over runs.

use crate::latency::{Disturbances, LatencyOverRuns, LatencyRecord, Percentiles};

/// `p50 521 | p90 560 | ... | max 412000`, in ns.
pub fn percentiles_line(p: &Percentiles) -> String {
    p.named()
        .iter()
        .map(|(name, value)| format!("{name} {value}"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A run's lines; `unit` is `hit` or `operation`.
pub fn run_lines(latency: &LatencyRecord, unit: &str) -> Vec<String> {
    let p = &latency.percentiles;
    let mut lines = vec![
        format!(
            "Latency per {unit} (ns, {} timed): {}",
            p.count,
            percentiles_line(p)
        ),
        mean_line(p.mean, latency.rate_ns),
    ];
    let clock = &latency.clock;
    let mut timing = format!(
        "Timing: {} clock, {:.1} ns a reading, {} ns steps; floor (an empty operation timed) p50 {} | p99 {} ns",
        clock.kind.name(),
        clock.read_ns,
        clock.resolution_ns,
        clock.floor.p50,
        clock.floor.p99
    );
    if let Some(why) = &clock.fallback_reason {
        timing.push_str(&format!(" (not the tsc: {why})"));
    }
    lines.push(timing);
    lines.push(disturbances_line(&latency.disturbances));
    lines
}

/// The distribution's mean against the run's rate.
fn mean_line(mean: f64, rate_ns: Option<f64>) -> String {
    match rate_ns {
        Some(rate) if rate > 0.0 => format!(
            "Latency mean {mean:.1} ns; from the rate {rate:.1} ns ({:+.1} %: the rate also pays the loop and the clock outside the timed span)",
            (mean / rate - 1.0) * 100.0
        ),
        _ => format!("Latency mean {mean:.1} ns; no rate to set it against"),
    }
}

fn disturbances_line(d: &Disturbances) -> String {
    format!(
        "Producers while measured: {} context switches ({} involuntary), {} page faults ({} major)",
        d.voluntary_switches + d.involuntary_switches,
        d.involuntary_switches,
        d.minor_faults + d.major_faults,
        d.major_faults
    )
}

/// The lines over runs: each figure's mean ± between-run sd, then the merge.
pub fn over_runs_lines(latency: &LatencyOverRuns, unit: &str) -> Vec<String> {
    let runs = latency.spread.first().map_or(0, |f| f.stats.runs);
    let spread = latency
        .spread
        .iter()
        .filter(|f| f.figure != "mean")
        .map(|f| {
            format!(
                "{} {:.0} \u{00b1} {:.0}",
                f.figure, f.stats.mean, f.stats.sd
            )
        })
        .collect::<Vec<_>>()
        .join(" | ");
    vec![
        format!(
            "Latency per {unit} over {runs} runs (ns, mean \u{00b1} sd between runs): {spread}"
        ),
        format!(
            "Latency per {unit}, the {runs} runs merged (ns, {} timed): {}",
            latency.merged.count,
            percentiles_line(&latency.merged)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_read_in_order() {
        let p = Percentiles {
            count: 10,
            mean: 1.0,
            p50: 1,
            p90: 2,
            p99: 3,
            p99_9: 4,
            p99_99: 5,
            max: 6,
        };
        assert_eq!(
            percentiles_line(&p),
            "p50 1 | p90 2 | p99 3 | p99.9 4 | p99.99 5 | max 6"
        );
        assert_eq!(
            mean_line(99.0, Some(100.0)),
            "Latency mean 99.0 ns; from the rate 100.0 ns (-1.0 %: the rate also pays the loop and the clock outside the timed span)"
        );
    }
}
