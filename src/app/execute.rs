//! The rounds: every benchmark at every point once a round, the order rotated
//! by one each round, until the runs asked for are done, `--precision` is
//! met or gives up, or something stops them.

use super::figures::widest_interval;
use super::one_run::{Profiling, Ran, RunAsk};
use super::plan::{BenchPlan, Plan};
use super::runs::{Lines, Runs};
use super::sequential;
use crate::config::{Repetition, RunRequest};
use crate::error::{Error, Result};
use crate::report::profile::{profile_name, RunStacks};
use crate::report::text;
use crate::results::{PrecisionRecord, RunRecord, SequentialRecord, StopReason};
use crate::runner::StoppedAt;

/// `--precision` judges the interval from this many runs on.
const PRECISION_MIN_RUNS: u32 = 3;

/// What the runs gave: per benchmark, per point, the records in run order;
/// and why they stopped, if early.
pub(super) struct Execution {
    pub records: Vec<Vec<Vec<RunRecord>>>,
    pub rounds: u32,
    pub failure: Option<Error>,
    /// The signal and where it found the run it stopped.
    pub interrupted: Option<(i32, StoppedAt)>,
    pub precision: Option<PrecisionRecord>,
    /// With `--until-decided`: the last look and why the rounds stopped.
    pub sequential: Option<SequentialRecord>,
    /// With `--profile=DIR`: the profiled runs' stacks, for their files.
    pub stacks: RunStacks,
}

impl Execution {
    /// No run yet.
    fn none(plan: &Plan) -> Execution {
        Execution {
            records: plan
                .benches
                .iter()
                .map(|b| b.points.iter().map(|_| Vec::new()).collect())
                .collect(),
            rounds: 0,
            failure: None,
            interrupted: None,
            precision: None,
            sequential: None,
            stacks: RunStacks::default(),
        }
    }
}

/// What is done with the runs so far after each completed run, with the
/// `--precision` record an interrupt then would give.
pub(super) type AfterRun<'a> = dyn FnMut(&Execution, Option<PrecisionRecord>) + 'a;

/// Runs the rounds `request` asks for over `plan`, each run done by `runs`,
/// its lines on `console`; `after_run` after each run completed.
pub(super) fn execute<C: Lines>(
    plan: &Plan,
    request: &RunRequest,
    console: &mut C,
    runs: &mut impl Runs<C>,
    after_run: &mut AfterRun,
) -> Execution {
    let repetition = &request.repetition;
    let mut execution = Execution::none(plan);
    let cells = plan.cells();
    'rounds: for round in 0..repetition.rounds() {
        let mut order = cells.clone();
        order.rotate_left(round as usize % cells.len().max(1));
        for (b, p) in order {
            if let Some(signal) = runs.interrupted() {
                execution.interrupted = Some((signal, StoppedAt::Between));
                break 'rounds;
            }
            match run_cell(plan, request, console, runs, (b, p), round) {
                Ok(Ran {
                    record,
                    stacks,
                    phase,
                }) => {
                    execution.records[b][p].push(record);
                    if let Some((name, profile)) = stacks {
                        execution.stacks.keep(name, profile);
                    }
                    if let (Some(phase), Some(signal)) = (phase, runs.interrupted()) {
                        execution.interrupted = Some((signal, phase));
                        break 'rounds;
                    }
                    let precision =
                        precision_record(repetition, StopReason::Interrupt, execution.rounds);
                    after_run(&execution, precision);
                }
                Err(err) => {
                    execution.failure = Some(named_failure(plan, &plan.benches[b], err));
                    break 'rounds;
                }
            }
        }
        execution.rounds = round + 1;
        let widest = || widest_interval(&plan.benches, &execution.records);
        let elapsed = runs.elapsed_secs();
        if let Some(reason) = precision_stop(repetition, execution.rounds, widest, elapsed) {
            execution.precision = precision_record(repetition, reason, execution.rounds);
            break;
        }
        let records = &execution.records;
        if let Some(record) =
            sequential::decided(plan, records, execution.rounds, repetition, elapsed)
        {
            execution.sequential = Some(record);
            break;
        }
    }
    if let (Some(within), None) = (repetition.until_decided, &execution.sequential) {
        let reason = match execution.interrupted.is_some() || execution.failure.is_some() {
            true => StopReason::Interrupt,
            false => StopReason::MaxRuns,
        };
        let records = &execution.records;
        let look = (repetition, within);
        execution.sequential = Some(sequential::record(
            plan,
            records,
            execution.rounds,
            look,
            reason,
        ));
    }
    if execution.precision.is_none() {
        execution.precision = precision_record(repetition, StopReason::Interrupt, execution.rounds);
    }
    execution
}

/// Runs benchmark `b` at point `p` in `round`: its header, the run, the
/// noise it saw.
fn run_cell<C: Lines>(
    plan: &Plan,
    request: &RunRequest,
    console: &mut C,
    runs: &mut impl Runs<C>,
    (b, p): (usize, usize),
    round: u32,
) -> Result<Ran> {
    let repetition = &request.repetition;
    let bench = &plan.benches[b];
    let point = &bench.points[p];
    // The swept value as shown: a number, or a body's name.
    let swept = point
        .value
        .zip(request.sweep.as_ref())
        .map(|(value, spec)| (spec.param.label(value), spec.param.name()));
    let run = repetition.is_repeated().then_some(round + 1);
    let header = text::run_header(
        plan.several().then(|| bench.bench.name()),
        swept.clone(),
        run.map(|run| (run, text::runs_label(repetition))),
    );
    if let Some(header) = header {
        // Not chatter: it says which run the lines below belong to.
        console.line(&header);
    }
    let profiling = request.profile.as_ref().map(|profile| Profiling {
        request: profile,
        name: profile_name(bench.bench.name(), swept, run),
    });
    let ask = RunAsk {
        bench,
        point,
        run,
        quiet: request.quiet,
        profiling,
    };
    let mut ran = runs.one_run(ask, console)?;
    let record = &mut ran.record;
    record.sweep_value = point.value;
    record.repetition = run;
    // Where the user asked for statistics over runs, say which runs the
    // machine disturbed; a single run keeps its output as it always was (the
    // JSON has the figures).
    if let (Some(noise), true) = (&record.noise, repetition.is_repeated()) {
        for warning in text::noise_warnings(noise) {
            console.warn(&warning);
        }
    }
    Ok(ran)
}

/// With several benchmarks, an unsupported one is named in the error.
fn named_failure(plan: &Plan, bench: &BenchPlan, err: Error) -> Error {
    match (plan.several(), err) {
        (true, Error::Unsupported(why)) => {
            Error::Unsupported(format!("{}: {why}", bench.bench.name()))
        }
        (_, err) => err,
    }
}

/// Why `--precision` stops after `rounds` rounds, if it does: the interval
/// reached (judged from [`PRECISION_MIN_RUNS`] runs on), the run cap, or the
/// time budget (`elapsed` seconds of it gone). `None` without `--precision`.
fn precision_stop(
    repetition: &Repetition,
    rounds: u32,
    widest: impl FnOnce() -> Option<f64>,
    elapsed: u64,
) -> Option<StopReason> {
    let target = repetition.precision?;
    if rounds >= PRECISION_MIN_RUNS && widest().is_some_and(|w| w <= target) {
        Some(StopReason::Target)
    } else if rounds >= repetition.rounds() {
        Some(StopReason::MaxRuns)
    } else if elapsed >= repetition.max_secs {
        Some(StopReason::MaxTime)
    } else {
        None
    }
}

/// What `--precision` reached, for the record; `None` without it.
fn precision_record(
    repetition: &Repetition,
    reason: StopReason,
    runs: u32,
) -> Option<PrecisionRecord> {
    Some(PrecisionRecord {
        target_pct: repetition.precision?,
        reached: reason == StopReason::Target,
        stopped_by: reason,
        runs,
    })
}
