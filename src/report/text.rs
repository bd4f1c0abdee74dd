//! The kernel runner's text format. Scripts parse the last line with
//! `tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-`: keep the field layout.

use crate::config::Repetition;
use crate::figures::FigureDecl;
use crate::noise::{Noise, NoiseKind};
use crate::probe_path::ProbePath;
use crate::red_zone::RedZoneFound;
use crate::results::{PrecisionRecord, SequentialRecord, StopReason};
use crate::runner::StoppedAt;
use crate::stats::{Change, RunStats, Sensitivity, Verdict};
use crate::trigger_path::TriggerUsed;

/// `trigger: raw_tp program run by BPF_PROG_TEST_RUN (fallback: upstream's
/// fentry on getpgid is refused here: ...)`: a helper benchmark's header line,
/// and its `--probe` note.
pub fn trigger_line(used: &TriggerUsed) -> String {
    let words = used.path.words;
    match &used.refused {
        None if used.path.fallback => {
            format!("trigger: {words} (the helper benchmarks' fallback, alone)")
        }
        None => format!("trigger: {words} (upstream's)"),
        Some((upstream, why)) => format!(
            "trigger: {words} (fallback: upstream's {} is refused here: {why})",
            upstream.words
        ),
    }
}

/// `red zone intact` or `red zone clobbered (N bytes)`, and the site's path
/// when it is not `path`, the benchmark's own (the check probes a site of
/// the same instruction, which should take the same path).
pub fn red_zone_words(found: &RedZoneFound, path: ProbePath) -> String {
    let words = found.red_zone.words();
    if found.path == path {
        words
    } else {
        format!("{words} on the {} path", found.path.name())
    }
}

/// `--probe`'s note for a probe benchmark: the path of its red zone check's
/// site and what it left of the red zone.
pub fn red_zone_note(found: &RedZoneFound) -> String {
    format!(
        "probe path: {}, {}",
        found.path.name(),
        found.red_zone.words()
    )
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
pub fn runs_line(
    stats: &RunStats,
    figure: &FigureDecl,
    precision: Option<&PrecisionRecord>,
) -> String {
    let (counted, value) = (&figure.name, figure.show(stats.mean));
    let spread = |sd: f64| {
        if stats.mean > 0.0 {
            sd / stats.mean * 100.0
        } else {
            0.0
        }
    };
    let mut line = match (stats.ci_percent(), stats.ci95) {
        (Some(pct), _) => format!(
            "runs: {}, {counted} {value} \u{00b1} {pct:.1} % (95 % CI), between-run sd {:.1} %",
            stats.runs,
            spread(stats.sd)
        ),
        // A mean of 0 (no false positive in any run) has no relative
        // spread: the interval is said in the figure's own unit.
        (None, Some(half)) => format!(
            "runs: {}, {counted} {value} \u{00b1} {} (95 % CI), between-run sd {}",
            stats.runs,
            figure.show(half),
            figure.show(stats.sd)
        ),
        // One run has no spread between runs to show.
        (None, None) => format!(
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
    pub figure: FigureDecl,
    pub stats: RunStats,
    /// The first benchmark has the same figure (else no change is judged).
    pub in_baseline: bool,
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
    match (stats.ci_percent(), stats.ci95) {
        (Some(pct), _) => format!("\u{00b1} {pct:.1} %"),
        // A mean of 0: the half-width itself, as no percentage of it exists.
        (None, Some(half)) => format!("\u{00b1} {half:.3}"),
        (None, None) => "n/a".to_string(),
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
            _ if !row.in_baseline => (
                format!("n/a ({} has no {})", first.bench, row.figure.name),
                String::new(),
            ),
            _ => ("n/a (fewer than 2 rounds)".to_string(), String::new()),
        };
        lines.push(
            format!(
                "{:<28} {:>12} {:>10}  {:<32} {}",
                row.label,
                row.figure.show(row.stats.mean),
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
        true => format!("{} (mean)", first.figure.name),
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
            row.figure.show(row.stats.mean),
            interval_text(&row.stats)
        ));
    }
    lines
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn a_fallback_trigger_says_why() {
        use crate::benches::helper_trigger::{FENTRY_GETPGID, RAWTP_TEST_RUN};
        let refused = Some((FENTRY_GETPGID, "EPERM".to_string()));
        let line = trigger_line(&TriggerUsed {
            path: RAWTP_TEST_RUN,
            refused,
        });
        assert!(line.ends_with("(fallback: upstream's fentry on getpgid is refused here: EPERM)"));
    }

    #[test]
    fn runs_of_a_zero_mean_have_an_interval_in_the_figures_unit() {
        let percent = FigureDecl {
            name: "false-positive".to_string(),
            unit: "%".to_string(),
            better: crate::stats::Better::Lower,
            show: crate::figures::Show::Decimals(2),
            per_second: true,
        };
        let two = crate::stats::run_stats(&[0.0, 0.0]).unwrap();
        let line = runs_line(&two, &percent, None);
        assert_eq!(
            line,
            "runs: 2, false-positive 0.00 % \u{b1} 0.00 % (95 % CI), between-run sd 0.00 %"
        );
        let one = crate::stats::run_stats(&[0.0]).unwrap();
        assert!(runs_line(&one, &percent, None).contains("(one run: no interval"));
        assert_eq!(interval_text(&two), "\u{b1} 0.000");
    }
}
