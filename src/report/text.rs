//! The kernel runner's text format. Scripts parse the last line with
//! `tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-`: keep the field layout.

use super::scaled;
use crate::config::Repetition;
use crate::figures::Figure;
use crate::noise::{Noise, NoiseKind};
use crate::results::{PrecisionRecord, SequentialRecord, StopReason};
use crate::runner::{FixedRun, StoppedAt};
use crate::stats::{Change, RunStats, Sample, Sensitivity, Summary, Verdict};
use crate::trigger_path::{TriggerPath, TriggerUsed};

fn mega(per_sec: f64) -> f64 {
    per_sec / 1e6
}

/// `Iter   3 (  12.345us): hits    1.234M/s (  1.234M/prod), drops ...`; the
/// figure in parentheses is how late the tick fired.
pub fn iteration_line(sample: &Sample, producers: usize) -> String {
    format!(
        "{}, drops {:8.3}M/s, total operations {:8.3}M/s",
        hit_ops_iteration_line(sample, producers),
        mega(sample.drops_per_sec()),
        mega(sample.total_per_sec()),
    )
}

/// `Summary: hits    1.234 ± 0.012M/s (  1.234M/prod), drops ..., latency ...`.
/// The latency (per producer, per hit) goes last so the first fields stay
/// where the kernel's scripts cut them.
pub fn summary_line(summary: &Summary, emulated: bool) -> String {
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
        noisy_note(summary, emulated),
    )
}

/// The mark of a run whose times come from an emulated CPU (a TCG VM).
const EMULATED: &str = ", emulated (TCG): not a performance number";

/// `, noisy: a tick was 123.4 ms late`, for a run a busy machine disturbed,
/// and the mark of an emulated VM.
pub(super) fn noisy_note(summary: &Summary, emulated: bool) -> String {
    let noisy = if summary.noisy {
        format!(
            ", noisy: a tick was {:.1} ms late",
            summary.max_late_ns as f64 / 1e6
        )
    } else {
        String::new()
    };
    noisy + if emulated { EMULATED } else { "" }
}

/// `Iter   3 (  12.345us): hits    1.234M/s (  1.234M/prod)`: the kernel
/// runner's `ops_report_progress`.
pub fn hit_ops_iteration_line(sample: &Sample, producers: usize) -> String {
    let hits = mega(sample.hits_per_sec());
    format!(
        "Iter {:3} ({:7.3}us): hits {:8.3}M/s ({:7.3}M/prod)",
        sample.iteration,
        sample.late_ns as f64 / 1e3,
        hits,
        hits / producers.max(1) as f64,
    )
}

/// `Summary: throughput    1.234 ± 0.012 M ops/s (  1.234M ops/prod), latency
/// 810.373 ns/op`: the kernel runner's `ops_report_final`, whose latency is
/// one producer's time per op (run_common.sh's `summarize_ops` cuts both).
pub fn hit_ops_summary_line(summary: &Summary, emulated: bool) -> String {
    let latency = match summary.latency_ns {
        Some(ns) => format!("{ns:8.3}"),
        None => "     n/a".to_string(),
    };
    format!(
        "Summary: throughput {:8.3} \u{00b1} {:5.3} M ops/s ({:7.3}M ops/prod), latency {latency} ns/op{}",
        mega(summary.hits.mean),
        mega(summary.hits.sd),
        mega(summary.per_producer),
        noisy_note(summary, emulated),
    )
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
pub fn ops_summary_line(
    summary: &Summary,
    producers: usize,
    per_cpu: bool,
    emulated: bool,
) -> String {
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
    line + &noisy_note(summary, emulated)
}

/// A fixed-work (`--repeat`) run's report: `perf bench`'s layout, plus hits and drops.
pub fn fixed_lines(bench: &str, run: &FixedRun, producers: usize, emulated: bool) -> Vec<String> {
    let drops = vec![format!(" {:>14} drops", run.counts.drops)];
    fixed_lines_with(bench, run, producers, emulated, drops)
}

/// [`fixed_lines`] with `second` in place of its drops line (memory, kmallocs).
pub fn fixed_lines_with(
    bench: &str,
    run: &FixedRun,
    producers: usize,
    emulated: bool,
    second: Vec<String>,
) -> Vec<String> {
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
    ];
    lines.extend(second);
    if emulated {
        lines.push(format!("# {}", EMULATED.trim_start_matches(", ")));
    }
    lines
}

/// `trigger: raw_tp program run by BPF_PROG_TEST_RUN (fallback: upstream's
/// fentry on getpgid is refused here: ...)`: a helper benchmark's header line,
/// and its `--probe` note.
pub fn trigger_line(used: &TriggerUsed) -> String {
    let words = used.path.words();
    match &used.refused {
        None if used.path == TriggerPath::RawtpTestRun => {
            format!("trigger: {words} (the helper benchmarks' fallback, alone)")
        }
        None => format!("trigger: {words} (upstream's)"),
        Some((upstream, why)) => format!(
            "trigger: {words} (fallback: upstream's {} is refused here: {why})",
            upstream.words()
        ),
    }
}

/// The warning for more threads than CPUs.
pub fn oversubscribed_warning(threads: usize, cpus: usize) -> String {
    format!("warning: {threads} threads on {cpus} online CPUs share them: the rates will show it")
}

/// What an interrupted run tells the user, once its report is out: `done`
/// runs of `points` (sweep points) were recorded, the last stopped in `phase`.
/// `unit` names what `done` and `points` count: "sweep point", or "run" when
/// runs are repeated or interleaved.
pub fn interrupted(
    signal: &str,
    phase: StoppedAt,
    done: usize,
    points: usize,
    unit: &str,
) -> String {
    let by = format!("interrupted by {signal}");
    let point = match points {
        1 => String::new(),
        n => format!(" ({unit} {} of {n})", done.max(1)),
    };
    match phase {
        StoppedAt::Between if done == 0 => {
            format!("{by} before the first run: nothing was measured")
        }
        StoppedAt::Between => format!("{by} after {done} of {points} {unit}s"),
        StoppedAt::SetUp => format!("{by} during set-up{point}: nothing was measured"),
        StoppedAt::WarmUp => format!("{by} during warm-up{point}: nothing was measured"),
        StoppedAt::Measuring { measured: 0, .. } => {
            format!("{by} before the first measured second{point}: nothing was measured")
        }
        StoppedAt::Measuring { measured, of } => format!(
            "{by} after {measured} of {of} measured iterations{point}: the summary above is partial"
        ),
        StoppedAt::Fixed { done: calls, of } => {
            format!("{by} after {calls} of {of} calls{point}: the report above is partial")
        }
        StoppedAt::Cycle(stopped) => format!(
            "{by} {}{point}: every probe was detached; that cycle is not counted",
            super::attach::stopped_words(stopped)
        ),
    }
}

/// `# trig-uprobe-nop, producers=2, run 3 of 5`: which run the lines below
/// belong to; `None` when there is nothing to tell apart.
pub fn run_header(
    bench: Option<&str>,
    point: Option<(impl std::fmt::Display, &str)>,
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

/// `runs: 5, hits 1.874M/s ± 1.6 % (95 % CI), between-run sd 0.8 %`, and
/// what `--precision` came to.
pub fn runs_line(stats: &RunStats, figure: &Figure, precision: Option<&PrecisionRecord>) -> String {
    let (counted, value) = (figure.unit, (figure.show)(stats.mean));
    let spread = |sd: f64| {
        if stats.mean > 0.0 {
            sd / stats.mean * 100.0
        } else {
            0.0
        }
    };
    let mut line = match stats.ci_percent() {
        Some(pct) => format!(
            "runs: {}, {counted} {value} \u{00b1} {pct:.1} % (95 % CI), between-run sd {:.1} %",
            stats.runs,
            spread(stats.sd)
        ),
        // One run has no spread between runs to show.
        None => format!(
            "runs: {}, {counted} {value} (one run: no interval, the drift between runs is unknown)",
            stats.runs,
        ),
    };
    if let Some(p) = precision {
        line.push_str(&precision_words(p));
    }
    line
}

/// What `--precision` came to, as the end of a runs line: `; precision ±3 %
/// reached`, or why not.
pub fn precision_words(p: &PrecisionRecord) -> String {
    let target = percent(p.target_pct);
    match (p.reached, p.stopped_by) {
        (true, _) => format!("; precision \u{00b1}{target} % reached"),
        (false, StopReason::MaxRuns) => format!(
            "; precision \u{00b1}{target} % NOT reached: stopped at --max-runs {}",
            p.runs
        ),
        (false, StopReason::MaxTime) => format!(
            "; precision \u{00b1}{target} % NOT reached: stopped at --max-time after {}",
            runs(p.runs)
        ),
        (false, _) => format!(
            "; precision \u{00b1}{target} % NOT reached: interrupted after {}",
            runs(p.runs)
        ),
    }
}

/// `1 run`, `3 runs`.
fn runs(n: u32) -> String {
    format!("{n} run{}", if n == 1 { "" } else { "s" })
}

/// A percentage as given, in a few characters: `3`, `0.5`, `1e-300`.
pub fn percent(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 10 {
        plain
    } else {
        format!("{value:e}")
    }
}

/// Which run of how many the lines below belong to: `of 5`, or
/// `until ±3 % or 20 runs` for `--precision`.
pub fn runs_label(repetition: &Repetition) -> String {
    match (repetition.precision, repetition.until_decided) {
        (Some(target), _) => format!(
            "until \u{00b1}{} % or {} runs",
            percent(target),
            repetition.max_runs
        ),
        (None, Some(_)) => format!("until decided or {} runs", repetition.max_runs),
        (None, None) => format!("of {}", repetition.runs),
    }
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

/// One figure of a benchmark of an interleaved invocation, for the closing table.
#[derive(Clone, Debug)]
pub struct TableRow {
    pub bench: &'static str,
    /// The benchmark, and the figure's name where it has several.
    pub label: String,
    pub figure: &'static Figure,
    pub stats: RunStats,
    /// The change from the first benchmark, paired by round over the rounds
    /// both ran.
    pub change: Option<Change>,
    /// The same change by Welch's test on the run means, as if unpaired.
    pub unpaired: Option<Change>,
    pub verdict: Option<Verdict>,
    /// What the paired rounds could have detected.
    pub sensitivity: Option<Sensitivity>,
}

/// The verdict's words, and beside "no significant change" what the rounds
/// could have seen.
fn verdict_text(row: &TableRow, verdict: Verdict) -> String {
    match (verdict, &row.sensitivity) {
        (Verdict::NoSignificantChange, Some(s)) => format!(
            "{} ({})",
            verdict.words(),
            super::compare::detectable(s, "rounds")
        ),
        _ => verdict.words().to_string(),
    }
}

/// After the table of `--until-decided`: why the rounds stopped, at what
/// adjusted level, and each change as the last look judged it.
pub fn sequential_lines(record: &SequentialRecord) -> Vec<String> {
    let why = match record.stopped_by {
        StopReason::DecidedDifferent => "decided: different".to_string(),
        StopReason::DecidedEquivalent => {
            format!("decided: equivalent within \u{00b1}{} %", record.within_pct)
        }
        StopReason::Decided => "decided".to_string(),
        StopReason::MaxRuns => format!("NOT decided: stopped at --max-runs {}", record.max_runs),
        StopReason::MaxTime => "NOT decided: stopped at --max-time".to_string(),
        StopReason::Target | StopReason::Interrupt => "NOT decided: interrupted".to_string(),
    };
    let mut lines = vec![format!(
        "Until decided (\u{00b1}{} %): {why} after {} rounds; each look at {:.2} % confidence \
         (0.05 / {} planned looks, Bonferroni)",
        record.within_pct,
        record.runs,
        (1.0 - record.alpha_per_look) * 100.0,
        record.looks
    )];
    for d in &record.decisions {
        let word = match d.decision {
            crate::stats::Decision::Different => "different",
            crate::stats::Decision::Equivalent => "equivalent",
            crate::stats::Decision::Undecided => "undecided",
        };
        lines.push(format!(
            "  {}: {word}, {} at the adjusted level",
            d.benchmark,
            change_text(&d.change)
        ));
    }
    lines
}

/// After an interleaved table with an undecided row: what "could see" means.
pub fn interleaved_notes(rows: &[TableRow]) -> Vec<String> {
    rows.iter()
        .find(|r| r.verdict == Some(Verdict::NoSignificantChange) && r.sensitivity.is_some())
        .and_then(|r| r.sensitivity)
        .map(|s| {
            vec![format!(
                "note: 'could see \u{00b1}X %': a change of \u{00b1}X % would have been detected (95 % \
                 confidence, 80 % power) with these rounds, from the spread of their per-round \
                 ratios and the noise floor; 'needs N' is the rounds that would detect {} % (--effect).",
                s.effect_pct
            )]
        })
        .unwrap_or_default()
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

/// The closing table of several interleaved benchmarks, after `rounds`
/// complete rounds and, when `begun`, part of one more (a stop part-way).
pub fn interleaved_table(
    rows: &[TableRow],
    (rounds, begun): (u32, bool),
    precision: Option<&PrecisionRecord>,
) -> Vec<String> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    let done = match (rounds, begun) {
        (0, _) => "the first round stopped part-way, each benchmark at most once".to_string(),
        (n, true) => format!(
            "{n} round{} and part of another, each benchmark once a round, the order rotated",
            if n == 1 { "" } else { "s" }
        ),
        (n, false) => format!(
            "{n} round{}, each benchmark once a round, the order rotated",
            if n == 1 { "" } else { "s" }
        ),
    };
    let mut lines = vec![format!(
        "Interleaved: {done}{}",
        match precision {
            Some(p) if p.reached =>
                format!("; precision \u{00b1}{} % reached", percent(p.target_pct)),
            Some(p) => format!(
                "; precision \u{00b1}{} % NOT reached ({})",
                percent(p.target_pct),
                p.stopped_by.name()
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
        "verdict (paired by round)"
    ));
    for row in rows {
        let (change, verdict) = match (&row.change, row.verdict) {
            (Some(change), Some(verdict)) => (change_text(change), verdict_text(row, verdict)),
            // The first benchmark is what the others are judged against.
            _ if row.bench == first.bench => (String::new(), String::new()),
            _ => ("n/a (fewer than 2 rounds)".to_string(), String::new()),
        };
        lines.push(
            format!(
                "{:<28} {:>12} {:>10}  {:<32} {}",
                row.label,
                (row.figure.show)(row.stats.mean),
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
    // One unit heads the column when every row has it.
    let unit = match rows.iter().all(|r| r.figure.unit == first.figure.unit) {
        true => format!("{} (mean)", first.figure.unit),
        false => "mean".to_string(),
    };
    let mut lines = vec![
        format!(
            "| benchmark | {unit} | 95 % CI | change vs {} (paired by round) | verdict | detectable (80 % power) |",
            first.bench
        ),
        "|---|---|---|---|---|---|".to_string(),
    ];
    for row in rows {
        let (change, verdict) = match (&row.change, row.verdict) {
            (Some(change), Some(verdict)) => (change_text(change), verdict.words()),
            _ => (String::new(), ""),
        };
        let detectable = row
            .sensitivity
            .map(|s| super::compare::detectable(&s, "rounds"))
            .unwrap_or_default();
        lines.push(format!(
            "| {} | {} | {} | {change} | {verdict} | {detectable} |",
            row.label,
            (row.figure.show)(row.stats.mean),
            interval_text(&row.stats)
        ));
    }
    lines
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::runner::Counts;
    use crate::stats::MeanSd;

    /// What `cut -d'(' -f1 | cut -d' ' -f3-` leaves of a line.
    fn kernel_cut(line: &str) -> String {
        let first = line.split('(').next().unwrap();
        first.split(' ').skip(2).collect::<Vec<_>>().join(" ")
    }

    /// Five samples of `rate` ± `sd` hits a second from one producer, no
    /// drops, on time.
    pub(in crate::report) fn one_producer_summary(rate: f64, sd: f64) -> Summary {
        let ns = 1e9 / rate;
        Summary {
            over: crate::stats::Over::Samples(5),
            hits: MeanSd { mean: rate, sd },
            drops: MeanSd { mean: 0.0, sd: 0.0 },
            total: MeanSd { mean: rate, sd },
            per_producer: rate,
            latency_ns: Some(ns),
            usecs_per_op: MeanSd {
                mean: ns / 1000.0,
                sd: ns / 1000.0 * sd / rate,
            },
            max_late_ns: 0,
            noisy: false,
        }
    }

    #[test]
    fn the_summary_survives_the_kernel_scripts_cut() {
        let summary = one_producer_summary(1_234_000.0, 12_000.0);
        let line = summary_line(&summary, false);
        assert!(line.starts_with("Summary: hits    1.234 \u{b1} 0.012M/s (  1.234M/prod), drops    0.000 \u{b1} 0.000M/s, total operations    1.234 \u{b1} 0.012M/s"), "{line}");
        assert!(line.ends_with("latency  810.373 ns/op/prod"), "{line}");
        assert_eq!(kernel_cut(&line).trim(), "1.234 \u{b1} 0.012M/s");
        let noisy = Summary {
            noisy: true,
            max_late_ns: 123_400_000,
            ..summary
        };
        let line = summary_line(&noisy, false);
        assert!(
            line.ends_with("latency  810.373 ns/op/prod, noisy: a tick was 123.4 ms late"),
            "{line}"
        );
        assert_eq!(kernel_cut(&line).trim(), "1.234 \u{b1} 0.012M/s");
    }

    #[test]
    fn ops_lines_pick_a_unit_and_stay_cuttable() {
        // Rounded as perf rounds: usecs/op/cpu is twice the printed figure.
        let summary = Summary {
            usecs_per_op: MeanSd {
                mean: 28.471,
                sd: 0.37,
            },
            ..one_producer_summary(35_123.0, 456.0)
        };
        let line = ops_summary_line(&summary, 2, true, false);
        assert_eq!(
            line,
            "Summary: ops   35.123 \u{b1} 0.456K/s ( 17.561K/prod), usecs/op     28.471 \u{b1} 0.370, usecs/op/cpu     56.942"
        );
        assert_eq!(kernel_cut(&line).trim(), "35.123 \u{b1} 0.456K/s");
    }

    #[test]
    fn hit_ops_lines_are_the_kernel_runners_ops_report() {
        let line = hit_ops_summary_line(&one_producer_summary(1_234_000.0, 12_000.0), false);
        assert_eq!(line, "Summary: throughput    1.234 \u{b1} 0.012 M ops/s (  1.234M ops/prod), latency  810.373 ns/op");
        let sample = Sample {
            iteration: 3,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            hits: 1_234_000,
            drops: 0,
            warmup: false,
            extra: Vec::new(),
        };
        let line = hit_ops_iteration_line(&sample, 2);
        assert_eq!(
            line,
            "Iter   3 ( 12.345us): hits    1.234M/s (  0.617M/prod)"
        );
        let refused = Some((TriggerPath::FentryGetpgid, "EPERM".to_string()));
        let line = trigger_line(&TriggerUsed {
            path: TriggerPath::RawtpTestRun,
            refused,
        });
        assert!(line.ends_with("(fallback: upstream's fentry on getpgid is refused here: EPERM)"));
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
            extra: Vec::new(),
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
        let lines = fixed_lines("trig-uprobe-nop", &run, 2, false);
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
        let lines = fixed_lines("trig-rawtp", &batched, 1, false);
        assert_eq!(
            lines[0],
            "# Executed 10 calls of trig-rawtp (1000 operations) on 1 producer"
        );
    }
}
