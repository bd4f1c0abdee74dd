//! `--until-decided`: after each round, every benchmark's change from the
//! first over the rounds so far, judged at the level adjusted for the
//! planned looks; the rounds stop when all are decided or a bound is reached.

use super::figures::runs_means;
use super::plan::Plan;
use crate::config::Repetition;
use crate::results::{RunRecord, SequentialDecision, SequentialRecord, StopReason};
use crate::stats::{self, Decision};

/// Where `--until-decided` stands over the first `rounds` (complete) rounds
/// of `records`, its stop reason `reason`. Before the first look
/// ([`stats::FIRST_LOOK`]) nothing is decided: each change is what was seen.
pub(super) fn record(
    plan: &Plan,
    records: &[Vec<Vec<RunRecord>>],
    rounds: u32,
    (repetition, within): (&Repetition, f64),
    reason: StopReason,
) -> SequentialRecord {
    let benches = &plan.benches;
    let alpha = stats::alpha_per_look(repetition.max_runs);
    let looked = rounds >= stats::FIRST_LOOK;
    let means = |b: usize| {
        let mut means = runs_means(benches[b].bench.headline().name, &records[b][0]);
        // A round stopped part-way is no look.
        means.truncate(rounds as usize);
        means
    };
    let first = means(0);
    let decisions = (1..benches.len())
        .filter_map(|b| {
            let (old, new): (Vec<f64>, Vec<f64>) = first
                .iter()
                .zip(means(b))
                .filter_map(|(a, b)| Some(((*a)?, b?)))
                .unzip();
            let (decision, change) =
                stats::sequential_look(&old, &new, alpha, within, stats::NOISE_FLOOR_PCT)?;
            Some(SequentialDecision {
                benchmark: benches[b].bench.name().to_string(),
                decision: if looked {
                    decision
                } else {
                    Decision::Undecided
                },
                change,
            })
        })
        .collect();
    SequentialRecord {
        within_pct: within,
        max_runs: repetition.max_runs,
        looks: repetition.max_runs.saturating_sub(stats::FIRST_LOOK) + 1,
        alpha_per_look: alpha,
        stopped_by: reason,
        runs: rounds,
        decisions,
    }
}

/// After `rounds` rounds: the record that stops them, if they stop.
pub(super) fn decided(
    plan: &Plan,
    records: &[Vec<Vec<RunRecord>>],
    rounds: u32,
    repetition: &Repetition,
    elapsed: u64,
) -> Option<SequentialRecord> {
    let within = repetition.until_decided?;
    let look = (repetition, within);
    let mut record = record(plan, records, rounds, look, StopReason::Interrupt);
    record.stopped_by = stop(&record, rounds, repetition, elapsed)?;
    Some(record)
}

/// Why the rounds stop after `rounds`, `elapsed` seconds in, if they do.
fn stop(
    record: &SequentialRecord,
    rounds: u32,
    repetition: &Repetition,
    elapsed: u64,
) -> Option<StopReason> {
    let all = |d: Decision| record.decisions.iter().all(|x| x.decision == d);
    let decided = rounds >= stats::FIRST_LOOK
        && !record.decisions.is_empty()
        && record
            .decisions
            .iter()
            .all(|x| x.decision != Decision::Undecided);
    if decided && all(Decision::Different) {
        Some(StopReason::DecidedDifferent)
    } else if decided && all(Decision::Equivalent) {
        Some(StopReason::DecidedEquivalent)
    } else if decided {
        Some(StopReason::Decided)
    } else if rounds >= repetition.max_runs {
        Some(StopReason::MaxRuns)
    } else if elapsed >= repetition.max_secs {
        Some(StopReason::MaxTime)
    } else {
        None
    }
}
