//! The kernel runner's text format. Scripts parse the last line with
//! `tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-`: keep the field layout.

use super::{rate_with_sd, scaled};
use crate::noise::{Noise, NoiseKind};
use crate::results::PrecisionRecord;
use crate::runner::{FixedRun, Phase};
use crate::stats::{Change, MeanSd, RunStats, Sample, Summary, Verdict};

fn mega(per_sec: f64) -> f64 {
    per_sec / 1e6
}

/// `Iter   3 (  12.345us): hits    1.234M/s (  1.234M/prod), drops ...`; the
/// figure in parentheses is how late the tick fired.
pub fn iteration_line(sample: &Sample, producers: usize) -> String {
    let hits = mega(sample.hits_per_sec());
    format!(
        "Iter {:3} ({:7.3}us): hits {:8.3}M/s ({:7.3}M/prod), drops {:8.3}M/s, total operations {:8.3}M/s",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        hits,
        hits / producers.max(1) as f64,
        mega(sample.drops_per_sec()),
        mega(sample.total_per_sec()),
    )
}

/// `Summary: hits    1.234 ± 0.012M/s (  1.234M/prod), drops ..., latency ...`.
/// The latency (per producer, per hit) goes last so the first fields stay
/// where the kernel's scripts cut them.
pub fn summary_line(summary: &Summary) -> String {
    let latency = match summary.latency_ns {
        Some(ns) => format!("{ns:8.3} ns/op/prod"),
        None => "     n/a ns/op/prod".to_string(),
    };
    format!(
        "Summary: hits {:8.3} \u{00b1} {:5.3}M/s ({:7.3}M/prod), drops {:8.3} \u{00b1} {:5.3}M/s, \
         total operations {:8.3} \u{00b1} {:5.3}M/s, latency {latency}{}",
        mega(summary.hits.mean),
        mega(summary.hits.sd),
        mega(summary.per_producer),
        mega(summary.drops.mean),
        mega(summary.drops.sd),
        mega(summary.total.mean),
        mega(summary.total.sd),
        noisy_note(summary),
    )
}

/// `, noisy: a tick was 123.4 ms late`, for a run a busy machine disturbed,
/// and the mark of an emulated VM.
fn noisy_note(summary: &Summary) -> String {
    let noisy = if summary.noisy {
        format!(
            ", noisy: a tick was {:.1} ms late",
            summary.max_late_ns as f64 / 1e6
        )
    } else {
        String::new()
    };
    noisy + crate::kernel::emulation_note()
}

/// `Iter   3 (  12.345us): ops   35.123K/s ( 35.123K/prod), usecs/op     28.471`
pub fn ops_iteration_line(sample: &Sample, producers: usize) -> String {
    let rate = sample.total_per_sec();
    let (value, unit) = scaled(rate);
    let usecs = if rate > 0.0 { 1e6 / rate } else { 0.0 };
    format!(
        "Iter {:3} ({:7.3}us): ops {value:8.3}{unit}/s ({:7.3}{unit}/prod), usecs/op {usecs:10.3}",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        value / producers.max(1) as f64,
    )
}

/// `Summary: ops   35.123 ± 0.456K/s ( 35.123K/prod), usecs/op 28.471 ± 0.370`,
/// and with `per_cpu` perf's usecs/op/cpu (one producer's time per operation).
pub fn ops_summary_line(summary: &Summary, producers: usize, per_cpu: bool) -> String {
    let (mean, unit) = scaled(summary.total.mean);
    let factor = mean / summary.total.mean.max(f64::MIN_POSITIVE);
    let mut line = format!(
        "Summary: ops {mean:8.3} \u{00b1} {:5.3}{unit}/s ({:7.3}{unit}/prod), usecs/op {:10.3} \u{00b1} {:.3}",
        summary.total.sd * factor,
        mean / producers.max(1) as f64,
        summary.usecs_per_op.mean,
        summary.usecs_per_op.sd,
    );
    if per_cpu {
        line.push_str(&format!(
            ", usecs/op/cpu {:10.3}",
            summary.usecs_per_op.mean * producers as f64
        ));
    }
    line + &noisy_note(summary)
}

/// The report of a fixed-work (`--repeat`) run, in `perf bench`'s layout with
/// the counted hits and drops added.
pub fn fixed_lines(bench: &str, run: &FixedRun, producers: usize) -> Vec<String> {
    let secs = run.elapsed_ns / 1_000_000_000;
    let millis = run.elapsed_ns % 1_000_000_000 / 1_000_000;
    let usecs_per_op = if run.ops == 0 {
        0.0
    } else {
        run.elapsed_ns as f64 / 1e3 / run.ops as f64
    };
    let operations = if run.ops == run.calls {
        String::new()
    } else {
        format!(" ({} operations)", run.ops)
    };
    let mut lines = vec![
        format!(
            "# Executed {} calls of {bench}{operations} on {producers} producer{}",
            run.calls,
            if producers == 1 { "" } else { "s" }
        ),
        format!(" {:>14}: {secs}.{millis:03} [sec]", "Total time"),
        String::new(),
        format!(" {usecs_per_op:14.6} usecs/op"),
        format!(" {:>14} hits", run.counts.hits),
        format!(" {:>14} drops", run.counts.drops),
    ];
    let emulated = crate::kernel::emulation_note();
    if !emulated.is_empty() {
        lines.push(format!("# {}", emulated.trim_start_matches(", ")));
    }
    lines
}

/// The table after a sweep: each value's rate, per-producer rate, the rate
/// relative to the first value and, for producers, the scaling efficiency.
pub fn sweep_table(
    param: &str,
    points: &[(u64, usize, MeanSd)],
    producers_swept: bool,
) -> Vec<String> {
    let mut lines = vec![format!(
        "{param:>16} {:>24} {:>14} {:>9}{}",
        "mean \u{00b1} sd",
        "per producer",
        "relative",
        if producers_swept { "  efficiency" } else { "" }
    )];
    let Some(&(first_value, _, first)) = points.first() else {
        return lines;
    };
    for &(value, producers, rate) in points {
        let (per_producer, unit) = scaled(rate.mean / producers.max(1) as f64);
        let relative = if first.mean > 0.0 {
            rate.mean / first.mean
        } else {
            0.0
        };
        let mut line = format!(
            "{value:>16} {:>24} {:>11.3}{unit}/s {relative:>9.3}",
            rate_with_sd(rate.mean, rate.sd),
            per_producer
        );
        if producers_swept && first_value > 0 {
            let ideal = value as f64 / first_value as f64;
            line.push_str(&format!(" {:>10.1}%", relative / ideal * 100.0));
        }
        lines.push(line);
    }
    lines
}

/// The warning for more threads than CPUs.
pub fn oversubscribed_warning(threads: usize, cpus: usize) -> String {
    format!("warning: {threads} threads on {cpus} online CPUs share them: the rates will show it")
}

/// What an interrupted run tells the user, once its report is out: `done`
/// runs of `points` (sweep points) were recorded, the last stopped in `phase`.
/// `unit` names what `done` and `points` count: "sweep point", or "run" when
/// runs are repeated or interleaved.
pub fn interrupted(signal: &str, phase: Phase, done: usize, points: usize, unit: &str) -> String {
    let by = format!("interrupted by {signal}");
    let point = match points {
        1 => String::new(),
        n => format!(" ({unit} {} of {n})", done.max(1)),
    };
    match phase {
        Phase::Between if done == 0 => format!("{by} before the first run: nothing was measured"),
        Phase::Between => format!("{by} after {done} of {points} {unit}s"),
        Phase::SetUp => format!("{by} during set-up{point}: nothing was measured"),
        Phase::WarmUp | Phase::Measuring { measured: 0, .. } => {
            format!("{by} during warm-up{point}: nothing was measured")
        }
        Phase::Measuring { measured, of } => format!(
            "{by} after {measured} of {of} measured iterations{point}: the summary above is partial"
        ),
        Phase::Fixed { done: calls, of } => {
            format!("{by} after {calls} of {of} calls{point}: the report above is partial")
        }
    }
}

/// `# trig-uprobe-nop, producers=2, run 3 of 5`: which run the lines below
/// belong to; `None` when there is nothing to tell apart.
pub fn run_header(
    bench: Option<&str>,
    point: Option<(u64, &str)>,
    run: Option<(u32, String)>,
) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(bench) = bench {
        parts.push(bench.to_string());
    }
    if let Some((value, param)) = point {
        parts.push(format!("{param}={value}"));
    }
    if let Some((run, of)) = run {
        parts.push(format!("run {run} {of}"));
    }
    (!parts.is_empty()).then(|| format!("# {}", parts.join(", ")))
}

/// A rate with its unit: `1.874M/s`.
fn rate(per_sec: f64) -> String {
    let (value, unit) = scaled(per_sec);
    format!("{value:.3}{unit}/s")
}

/// `runs: 5, hits 1.874M/s ± 1.6 % (95 % CI), between-run sd 0.8 %`, and
/// what `--precision` came to.
pub fn runs_line(stats: &RunStats, counted: &str, precision: Option<&PrecisionRecord>) -> String {
    let spread = |sd: f64| {
        if stats.mean > 0.0 {
            sd / stats.mean * 100.0
        } else {
            0.0
        }
    };
    let interval = match stats.ci_percent() {
        Some(pct) => format!("\u{00b1} {pct:.1} % (95 % CI)"),
        None => "(one run: no interval, the drift between runs is unknown)".to_string(),
    };
    let mut line = format!(
        "runs: {}, {counted} {} {interval}, between-run sd {:.1} %",
        stats.runs,
        rate(stats.mean),
        spread(stats.sd)
    );
    if let Some(p) = precision {
        line.push_str(&match (p.reached, p.stopped_by.as_str()) {
            (true, _) => format!("; precision \u{00b1}{} % reached", p.target_pct),
            (false, "max-runs") => format!(
                "; precision \u{00b1}{} % NOT reached: stopped at --max-runs {}",
                p.target_pct, p.runs
            ),
            (false, "max-time") => format!(
                "; precision \u{00b1}{} % NOT reached: stopped at --max-time after {} runs",
                p.target_pct, p.runs
            ),
            (false, _) => format!(
                "; precision \u{00b1}{} % NOT reached: interrupted after {} runs",
                p.target_pct, p.runs
            ),
        });
    }
    line
}

/// `warning: ...` lines for the noise a run saw past its thresholds.
pub fn noise_warnings(noise: &Noise) -> Vec<String> {
    noise
        .crossed()
        .into_iter()
        .map(|kind| match kind {
            NoiseKind::Steal(pct) => format!(
                "warning: the hypervisor stole {pct:.1} % of the CPU time during this run: its numbers are suspect"
            ),
            NoiseKind::Pressure(pct) => format!(
                "warning: tasks waited for a CPU {pct:.1} % of the time during this run: something competed with it"
            ),
            NoiseKind::Frequency(pct) => format!(
                "warning: the CPU clock moved by {pct:.1} % during this run: pin the governor (performance)"
            ),
        })
        .collect()
}

/// One benchmark of an interleaved invocation, for the closing table.
#[derive(Clone, Debug)]
pub struct TableRow {
    pub bench: &'static str,
    pub unit: &'static str,
    pub stats: RunStats,
    /// The change from the first benchmark, over the rounds both ran.
    pub change: Option<Change>,
    pub verdict: Option<Verdict>,
}

fn interval_text(stats: &RunStats) -> String {
    match stats.ci_percent() {
        Some(pct) => format!("\u{00b1} {pct:.1} %"),
        None => "n/a".to_string(),
    }
}

fn change_text(change: &Change) -> String {
    format!(
        "{:+.1} % [{:+.1}, {:+.1}]",
        change.percent, change.low, change.high
    )
}

/// The closing table of several interleaved benchmarks.
pub fn interleaved_table(
    rows: &[TableRow],
    rounds: u32,
    precision: Option<&PrecisionRecord>,
) -> Vec<String> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let mut lines = vec![format!(
        "Interleaved: {rounds} round{}, each benchmark once a round, the order rotated{}",
        if rounds == 1 { "" } else { "s" },
        match precision {
            Some(p) if p.reached => format!("; precision \u{00b1}{} % reached", p.target_pct),
            Some(p) => format!(
                "; precision \u{00b1}{} % NOT reached ({})",
                p.target_pct, p.stopped_by
            ),
            None => String::new(),
        }
    )];
    lines.push(format!(
        "{:<28} {:>12} {:>10}  {:<32} {}",
        "benchmark",
        "mean",
        "95 % CI",
        format!("change vs {}", first.bench),
        "verdict"
    ));
    for row in rows {
        let (change, verdict) = match (&row.change, row.verdict) {
            (Some(change), Some(verdict)) => (change_text(change), verdict.words()),
            _ if std::ptr::eq(row, first) => (String::new(), ""),
            _ => ("n/a (fewer than 2 rounds)".to_string(), ""),
        };
        lines.push(
            format!(
                "{:<28} {:>12} {:>10}  {:<32} {}",
                row.bench,
                rate(row.stats.mean),
                interval_text(&row.stats),
                change,
                verdict
            )
            .trim_end()
            .to_string(),
        );
    }
    lines
}

/// The same table in Markdown, for a commit message or a pull request.
pub fn interleaved_markdown(rows: &[TableRow]) -> Vec<String> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let mut lines = vec![
        format!(
            "| benchmark | {} (mean) | 95 % CI | change vs {} | verdict |",
            first.unit, first.bench
        ),
        "|---|---|---|---|---|".to_string(),
    ];
    for row in rows {
        let (change, verdict) = match (&row.change, row.verdict) {
            (Some(change), Some(verdict)) => (change_text(change), verdict.words()),
            _ => (String::new(), ""),
        };
        lines.push(format!(
            "| {} | {} | {} | {change} | {verdict} |",
            row.bench,
            rate(row.stats.mean),
            interval_text(&row.stats)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Counts;
    use crate::stats::MeanSd;

    /// What `cut -d'(' -f1 | cut -d' ' -f3-` leaves of a line.
    fn kernel_cut(line: &str) -> String {
        let first = line.split('(').next().unwrap();
        first.split(' ').skip(2).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn the_summary_survives_the_kernel_scripts_cut() {
        let summary = Summary {
            samples: 5,
            hits: MeanSd {
                mean: 1_234_000.0,
                sd: 12_000.0,
            },
            drops: MeanSd { mean: 0.0, sd: 0.0 },
            total: MeanSd {
                mean: 1_234_000.0,
                sd: 12_000.0,
            },
            per_producer: 1_234_000.0,
            latency_ns: Some(810.373),
            usecs_per_op: MeanSd {
                mean: 0.810,
                sd: 0.008,
            },
            max_late_ns: 0,
            noisy: false,
        };
        let line = summary_line(&summary);
        assert!(line.starts_with("Summary: hits    1.234 \u{b1} 0.012M/s (  1.234M/prod), drops    0.000 \u{b1} 0.000M/s, total operations    1.234 \u{b1} 0.012M/s"), "{line}");
        assert!(line.ends_with("latency  810.373 ns/op/prod"), "{line}");
        assert_eq!(kernel_cut(&line).trim(), "1.234 \u{b1} 0.012M/s");
        let noisy = Summary {
            noisy: true,
            max_late_ns: 123_400_000,
            ..summary
        };
        let line = summary_line(&noisy);
        assert!(
            line.ends_with("latency  810.373 ns/op/prod, noisy: a tick was 123.4 ms late"),
            "{line}"
        );
        assert_eq!(kernel_cut(&line).trim(), "1.234 \u{b1} 0.012M/s");
    }

    #[test]
    fn ops_lines_pick_a_unit_and_stay_cuttable() {
        let summary = Summary {
            samples: 5,
            hits: MeanSd {
                mean: 35_123.0,
                sd: 456.0,
            },
            drops: MeanSd { mean: 0.0, sd: 0.0 },
            total: MeanSd {
                mean: 35_123.0,
                sd: 456.0,
            },
            per_producer: 35_123.0,
            latency_ns: Some(28_471.0),
            usecs_per_op: MeanSd {
                mean: 28.471,
                sd: 0.37,
            },
            max_late_ns: 0,
            noisy: false,
        };
        let line = ops_summary_line(&summary, 2, true);
        assert_eq!(
            line,
            "Summary: ops   35.123 \u{b1} 0.456K/s ( 17.561K/prod), usecs/op     28.471 \u{b1} 0.370, usecs/op/cpu     56.942"
        );
        assert_eq!(kernel_cut(&line).trim(), "35.123 \u{b1} 0.456K/s");
    }

    #[test]
    fn sweep_tables_show_relative_rate_and_efficiency() {
        let points = [
            (
                1,
                1,
                MeanSd {
                    mean: 10e6,
                    sd: 0.1e6,
                },
            ),
            (
                2,
                2,
                MeanSd {
                    mean: 19e6,
                    sd: 0.2e6,
                },
            ),
        ];
        let lines = sweep_table("producers", &points, true);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].contains("19.000 \u{b1} 0.200M/s"), "{}", lines[2]);
        assert!(lines[2].contains("9.500M/s"), "{}", lines[2]);
        assert!(
            lines[2].contains("1.900") && lines[2].ends_with("95.0%"),
            "{}",
            lines[2]
        );
        let lines = sweep_table("breakpoints", &points, false);
        assert!(!lines[0].contains("efficiency"));
    }

    #[test]
    fn iteration_lines_show_lateness_in_microseconds() {
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_012_345,
            late_ns: 12_345,
            hits: 1_234_015,
            drops: 0,
            warmup: false,
        };
        assert_eq!(
            iteration_line(&sample, 1),
            "Iter   3 ( 12.345us): hits    1.234M/s (  1.234M/prod), drops    0.000M/s, total operations    1.234M/s"
        );
    }

    #[test]
    fn fixed_runs_report_time_per_op_and_counts() {
        let run = FixedRun {
            elapsed_ns: 2_500_000_000,
            calls: 1_000_000,
            ops: 1_000_000,
            counts: Counts {
                hits: 1_000_000,
                drops: 0,
            },
        };
        let lines = fixed_lines("trig-uprobe-nop", &run, 2);
        assert_eq!(
            lines[0],
            "# Executed 1000000 calls of trig-uprobe-nop on 2 producers"
        );
        assert_eq!(lines[1], "     Total time: 2.500 [sec]");
        assert_eq!(lines[3], "       2.500000 usecs/op");
        assert_eq!(lines[4], "        1000000 hits");
        let batched = FixedRun {
            calls: 10,
            ops: 1000,
            ..run
        };
        let lines = fixed_lines("trig-rawtp", &batched, 1);
        assert_eq!(
            lines[0],
            "# Executed 10 calls of trig-rawtp (1000 operations) on 1 producer"
        );
    }
}
