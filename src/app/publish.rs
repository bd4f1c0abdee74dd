//! After the runs: the statistics over runs, the closing lines (the sweep
//! table, the runs line, the table of interleaved benchmarks), the result of
//! each benchmark, its exports, and the words of an interrupt.

use super::execute::Execution;
use super::figures::{run_level, runs_means};
use super::plan::{BenchPlan, Plan};
use super::runs::Lines;
use crate::config::{RunRequest, SweepParam};
use crate::error::{Error, Result};
use crate::figures::Figure;
use crate::interrupt;
use crate::latency::LatencyOverRuns;
use crate::report::profile::RunStacks;
use crate::report::text::{self, TableRow};
use crate::results::Tool;
use crate::results::{
    self, ChannelRecord, ComparisonRecord, Options, PrecisionRecord, ResultFile, RunLevel,
    RunRecord, SequentialRecord, SweepInfo,
};
use crate::runner::StoppedAt;
use crate::stats::{self, Basis, Change, RunStats, Sensitivity, Verdict};
use crate::sweep;

/// The noise floor of the closing table's verdicts, as `bench compare`'s default.
const TABLE_NOISE_PCT: f64 = stats::NOISE_FLOOR_PCT;

/// One figure of a benchmark in the closing table, before the changes are
/// computed: the benchmark, the figure, each run's value and their statistics.
struct TableEntry<'a> {
    bench: &'a BenchPlan,
    figure: &'static Figure,
    means: Vec<Option<f64>>,
    stats: RunStats,
}

pub(super) fn publish(
    request: &RunRequest,
    plan: &Plan,
    mut execution: Execution,
    console: &dyn Lines,
) -> Result<()> {
    let failure = execution.failure.take();
    let interrupted = execution.interrupted.take();
    // A failure part-way keeps the runs already measured.
    if execution
        .records
        .iter()
        .flatten()
        .all(|runs| runs.is_empty())
    {
        if let Some(err) = failure {
            return Err(err);
        }
    }
    let partial = interrupted.is_some() || failure.is_some();
    let stacks = std::mem::take(&mut execution.stacks);
    let results = assemble(request, plan, execution, partial, console);
    interrupt::last_write(|| plan.exports.write(&results, &stacks))?;
    if let Some(path) = &request.history {
        crate::history::append_results(path, &results)?;
    }
    match (failure, interrupted) {
        (Some(err), _) => Err(err),
        (None, Some((signal, phase))) => Err(interruption(request, plan, &results, signal, phase)),
        (None, None) => Ok(()),
    }
}

/// Keeps, for a second Ctrl-C, the files of the runs completed so far: that
/// one exits at once, and writes them first (marked partial).
pub(super) fn keep_for_hard_exit(
    request: &RunRequest,
    plan: &Plan,
    execution: &Execution,
    precision: Option<PrecisionRecord>,
) {
    if plan.exports.iter().next().is_none() {
        return;
    }
    let so_far = Execution {
        records: execution.records.clone(),
        rounds: execution.rounds,
        failure: None,
        interrupted: None,
        precision,
        sequential: execution.sequential.clone(),
        stacks: RunStacks::default(),
    };
    let stacks = execution.stacks.clone();
    let results = assemble(request, plan, so_far, true, &Silent);
    let exports = plan.exports.clone();
    interrupt::set_last_words(Box::new(move || {
        // Its failures are kept for an end that will not come: nothing to say.
        let _ = exports.write(&results, &stacks);
    }));
}

/// Lines nobody reads: the files kept for a second Ctrl-C are assembled as
/// the real close would be, without printing it.
struct Silent;

impl Lines for Silent {
    fn line(&self, _line: &str) {}
    fn warn(&self, _line: &str) {}
}

/// The statistics over runs, the closing lines, and the result of each
/// benchmark.
fn assemble(
    request: &RunRequest,
    plan: &Plan,
    execution: Execution,
    partial: bool,
    console: &dyn Lines,
) -> Vec<ResultFile> {
    let Execution {
        records,
        rounds,
        precision,
        sequential,
        ..
    } = execution;
    // A round stopped part-way leaves more runs to some than `rounds`.
    let begun = records
        .iter()
        .flatten()
        .any(|runs| runs.len() > rounds as usize);
    let mut results = Vec::with_capacity(plan.benches.len());
    let invocation = results::invocation_id();
    let mut table = Vec::new();
    for (bench, points) in plan.benches.iter().zip(records) {
        let cycles = bench.bench.runs_cycles();
        let cycle_stats = match cycles {
            true => cycle_levels(request, bench, &points, precision.as_ref(), console),
            false => Vec::new(),
        };
        let run_stats = run_levels(bench, &points, request.repetition.is_repeated());
        if !cycles {
            sweep_lines(request, bench, &points, &run_stats, console);
        }
        table.extend(runs_lines(
            request, plan, bench, &points, &run_stats, &precision, console,
        ));
        let runs = points.into_iter().flatten().collect();
        let mut result = result_file(request, plan, bench, runs, run_stats, partial, &precision);
        result.sequential = sequential.clone();
        result.interleaved = plan.several().then(|| invocation.clone());
        result.cycle_stats = cycle_stats;
        results.push(result);
    }
    if !table.is_empty() {
        let rows = comparison_rows(&table, request.effect_pct);
        closing_table(
            request,
            &rows,
            (rounds, begun),
            &precision,
            &sequential,
            console,
        );
        attach_comparisons(&mut results, &rows);
    }
    results
}

/// The table that closes a sweep of a rate benchmark: the rate at each
/// point, or each body's cost against the count.
fn sweep_lines(
    request: &RunRequest,
    bench: &BenchPlan,
    points: &[Vec<RunRecord>],
    run_stats: &[RunLevel],
    console: &dyn Lines,
) {
    let Some(spec) = &request.sweep else { return };
    let lines = if spec.param == SweepParam::Body {
        // A body's cost against the count, paired run by run.
        bench.reporter.body_table(&sweep::body_rows(
            &spec.values,
            points,
            &bench.bench.ticked_names(),
        ))
    } else {
        let rows = sweep_rows(bench, points, run_stats);
        let producers_swept = sweep::is_producers(spec);
        bench.reporter.sweep_table(
            spec.param.name(),
            &bench.bench.headline().decl(),
            &rows,
            producers_swept,
        )
    };
    for line in lines {
        console.line(&line);
    }
}

/// The closing table of several benchmarks (after `rounds` complete rounds,
/// and part of another when `begun`), text or Markdown, what
/// `--until-decided` decided, and what "could see" means.
fn closing_table(
    request: &RunRequest,
    rows: &[TableRow],
    rounds: (u32, bool),
    precision: &Option<PrecisionRecord>,
    sequential: &Option<SequentialRecord>,
    console: &dyn Lines,
) {
    let mut lines = if request.markdown {
        text::interleaved_markdown(rows)
    } else {
        text::interleaved_table(rows, rounds, precision.as_ref())
    };
    if let Some(sequential) = sequential {
        lines.extend(text::sequential_lines(sequential));
    }
    lines.extend(text::interleaved_notes(rows));
    for line in lines {
        console.line(&line);
    }
}

/// An attach benchmark's statistics over its cycles, with their closing
/// lines (the sweep table, or the figures over repeated runs).
fn cycle_levels(
    request: &RunRequest,
    bench: &BenchPlan,
    points: &[Vec<RunRecord>],
    precision: Option<&PrecisionRecord>,
    console: &dyn Lines,
) -> Vec<results::CycleLevel> {
    let (lines, levels) = crate::attach::run::over_runs(
        bench.bench.name(),
        bench.points.iter().map(|p| p.value).zip(points),
        request.sweep.as_ref().map(|s| s.param.name()),
        precision,
    );
    for line in lines {
        console.line(&line);
    }
    levels
}

/// The statistics over runs of each point (repeated runs only).
fn run_levels(bench: &BenchPlan, points: &[Vec<RunRecord>], repeated: bool) -> Vec<RunLevel> {
    if !repeated {
        return Vec::new();
    }
    bench
        .points
        .iter()
        .zip(points)
        .filter_map(|(point, runs)| {
            let summaries: Vec<stats::Summary> =
                runs.iter().filter_map(|r| r.summary().cloned()).collect();
            let latencies: Vec<_> = runs.iter().filter_map(|r| r.latency.as_ref()).collect();
            // The headline must have its statistics; the others where they can.
            run_level(bench.bench.headline().name, runs)?;
            let figures = bench
                .bench
                .figures()
                .iter()
                .filter_map(|f| Some((f.name.to_string(), run_level(f.name, runs)?)))
                .collect();
            Some(RunLevel {
                sweep_value: point.value,
                figures,
                summary: stats::summarize_runs(&summaries)?,
                latency: LatencyOverRuns::of(&latencies),
            })
        })
        .collect()
}

/// The sweep table's rows: each point's rate over its runs, or its one run's.
fn sweep_rows(
    bench: &BenchPlan,
    points: &[Vec<RunRecord>],
    run_stats: &[RunLevel],
) -> Vec<(u64, usize, stats::MeanSd)> {
    bench
        .points
        .iter()
        .zip(points)
        .filter_map(|(point, runs)| {
            let headline = bench.bench.headline().name;
            let level = run_stats.iter().find(|l| l.sweep_value == point.value);
            let rate = match level.and_then(|l| l.figures.get(headline)) {
                Some(stats) => stats::MeanSd {
                    mean: stats.mean,
                    sd: stats.sd,
                },
                // One run: the mean and sd of its measured seconds.
                None => {
                    let seconds = runs.first()?.within_run(headline);
                    (!seconds.is_empty()).then(|| stats::mean_sd(&seconds))?
                }
            };
            Some((point.value?, point.config.producers, rate))
        })
        .collect()
}

/// The lines over the runs of one benchmark (not swept): printed at once for
/// a benchmark alone run several times; its entry of the closing table when
/// there is one (several benchmarks, or `--markdown`), even after one round:
/// one entry a figure it is judged by.
fn runs_lines<'a>(
    request: &RunRequest,
    plan: &Plan,
    bench: &'a BenchPlan,
    points: &[Vec<RunRecord>],
    run_stats: &[RunLevel],
    precision: &Option<PrecisionRecord>,
    console: &dyn Lines,
) -> Vec<TableEntry<'a>> {
    let (Some(point), Some(runs), None) = (bench.points.first(), points.first(), &request.sweep)
    else {
        return Vec::new();
    };
    if let (Some(level), false) = (run_stats.first(), plan.several()) {
        for line in level
            .latency
            .iter()
            .flat_map(|l| bench.reporter.latency_over_runs(l))
        {
            console.line(&line);
        }
        let headline = bench.bench.headline();
        if let Some(stats) = level.figures.get(headline.name) {
            console.line(&text::runs_line(
                stats,
                &headline.decl(),
                precision.as_ref(),
            ));
        }
        // The figures beside the headline (an attach cycle's are its own lines).
        let others = bench.bench.figures()[1..].iter();
        for figure in others.filter(|_| !bench.bench.runs_cycles()) {
            if let Some(stats) = level.figures.get(figure.name) {
                console.line(&text::runs_line(stats, &figure.decl(), None));
            }
        }
        for line in bench.reporter.summary_over_runs(runs, &point.config.params) {
            console.line(&line);
        }
    } else if runs.len() >= 2 && runs.iter().all(|r| r.fixed().is_some()) && !plan.several() {
        // Fixed-work runs (--repeat) have no Summary to average: their
        // headline over the runs is the closing line.
        let headline = bench.bench.headline();
        if let Some(stats) = run_level(headline.name, runs) {
            console.line(&text::runs_line(&stats, &headline.decl(), None));
        }
    }
    if !(plan.several() || request.markdown) {
        return Vec::new();
    }
    bench
        .bench
        .figures()
        .iter()
        .filter_map(|figure| {
            Some(TableEntry {
                bench,
                figure,
                means: runs_means(figure.name, runs),
                stats: run_level(figure.name, runs)?,
            })
        })
        .collect()
}

/// One benchmark's kept result.
fn result_file(
    request: &RunRequest,
    plan: &Plan,
    bench: &BenchPlan,
    runs: Vec<RunRecord>,
    run_stats: Vec<RunLevel>,
    partial: bool,
    precision: &Option<PrecisionRecord>,
) -> ResultFile {
    ResultFile {
        schema: results::SCHEMA.to_string(),
        tool: Tool::this(),
        context: plan.context.clone(),
        benchmark: bench.bench.name().to_string(),
        options: Options::from_config(&bench.base)
            .profiled(request.profile.as_ref().map(|p| p.freq_hz)),
        sweep: request.sweep.as_ref().map(|s| SweepInfo {
            param: s.param.name().to_string(),
            values: s.values.clone(),
            labels: match s.param {
                SweepParam::Body => s.values.iter().map(|&v| s.param.label(v)).collect(),
                _ => Vec::new(),
            },
        }),
        partial,
        runs,
        run_stats,
        precision: precision.clone(),
        comparison: None,
        interleaved: None,
        sequential: None,
        cycle_stats: Vec::new(),
        channels: bench
            .bench
            .channels()
            .iter()
            .map(ChannelRecord::from)
            .collect(),
        figures: bench.bench.figures().iter().map(Figure::decl).collect(),
        legacy: None,
    }
}

/// The error that says what an interrupt stopped, and how far the runs got.
fn interruption(
    request: &RunRequest,
    plan: &Plan,
    results: &[ResultFile],
    signal: i32,
    phase: StoppedAt,
) -> Error {
    let points: usize = plan.benches.iter().map(|b| b.points.len()).sum();
    let unit = if request.repetition.is_repeated() || plan.several() {
        "run"
    } else {
        "sweep point"
    };
    Error::Interrupted {
        message: text::interrupted(
            interrupt::signal_name(signal),
            phase,
            results.iter().map(|r| r.runs.len()).sum(),
            points * request.repetition.rounds().max(1) as usize,
            unit,
        ),
        code: interrupt::exit_code(signal),
    }
}

/// The closing table of interleaved benchmarks: each one's figures and, for
/// all but the first benchmark, each figure's change from the first's same
/// figure over the rounds they shared, judged the way the figure is better.
fn comparison_rows(table: &[TableEntry], effect_pct: f64) -> Vec<TableRow> {
    let Some(first) = table.first().map(|e| e.bench.bench.name()) else {
        return Vec::new();
    };
    let baseline = |figure: &Figure| {
        table
            .iter()
            .find(|e| e.bench.bench.name() == first && e.figure.name == figure.name)
    };
    table
        .iter()
        .map(|entry| {
            let bench = entry.bench.bench;
            let base = baseline(entry.figure);
            let judged = base
                .filter(|_| bench.name() != first)
                .map(|base| judge_rounds(&base.means, &entry.means, effect_pct));
            let (change, unpaired, sensitivity) = judged.unwrap_or_default();
            let better = entry.figure.better;
            TableRow {
                bench: bench.name(),
                label: match bench.figures().len() {
                    1 => bench.name().to_string(),
                    _ => format!("{} {}", bench.name(), entry.figure.name),
                },
                figure: entry.figure.decl(),
                stats: entry.stats,
                in_baseline: base.is_some(),
                verdict: change.map(|c| Verdict::of(&c, better, TABLE_NOISE_PCT)),
                change,
                unpaired,
                sensitivity,
            }
        })
        .collect()
}

/// The change from `first` to `other` over the rounds both measured: paired
/// by round, unpaired (Welch on the same run means), and what the paired
/// rounds could have detected.
fn judge_rounds(
    first: &[Option<f64>],
    other: &[Option<f64>],
    effect_pct: f64,
) -> (Option<Change>, Option<Change>, Option<Sensitivity>) {
    let (old, new): (Vec<f64>, Vec<f64>) = first
        .iter()
        .zip(other)
        .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
        .unzip();
    (
        stats::paired_change(&old, &new),
        stats::change_between(&old, &new, Basis::Runs),
        stats::paired_sensitivity(&old, &new, effect_pct, TABLE_NOISE_PCT),
    )
}

/// Each interleaved result but the first's records its change from the
/// first, as the closing table judged it.
fn attach_comparisons(results: &mut [ResultFile], rows: &[TableRow]) {
    let Some(first) = rows.first() else {
        return;
    };
    // Each result records its headline's change: its first row.
    for result in results.iter_mut() {
        let Some(row) = rows.iter().find(|r| r.bench == result.benchmark) else {
            continue;
        };
        if let (Some(paired), Some(verdict)) = (row.change, row.verdict) {
            result.comparison = Some(ComparisonRecord {
                baseline: first.bench.to_string(),
                basis: "paired-by-round".to_string(),
                noise_pct: TABLE_NOISE_PCT,
                paired,
                unpaired: row.unpaired,
                verdict,
                sensitivity: row.sensitivity,
            });
        }
    }
}
