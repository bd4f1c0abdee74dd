//! One run of an attach benchmark: one cycle, with the progress bar and the
//! report lines, into the run's record.

use crate::error::Result;
use crate::figures;
use crate::report::attach as lines;
use crate::report::console::Console;
use crate::report::text;
use crate::results::{CycleLevel, Outcome, PrecisionRecord, RunRecord};
use crate::runner::cycles::{self, CycleEnd, CycleRecord, CycleWorkload, Timing};
use crate::runner::Phase;
use crate::stats;

/// Runs one cycle of `workload` and reports it (as run `run` of several when
/// numbered); the phase an interrupt stopped it in, if one did.
pub fn one_cycle(
    workload: &dyn CycleWorkload,
    record: &mut RunRecord,
    console: &mut Console,
    run: Option<u32>,
) -> Result<Option<Phase>> {
    console.start_cycle_bar(workload.links());
    let outcome = cycles::run_cycle(workload, &mut |step| console.cycle_step(step));
    console.finish_bar();
    let cycle = match outcome? {
        CycleEnd::Interrupted(stopped) => {
            record.partial = true;
            return Ok(Some(Phase::Cycle(stopped)));
        }
        CycleEnd::Done(cycle) => cycle,
    };
    let mut report = lines::cycle_lines(&cycle);
    // A lone cycle says what it is; numbered runs say it over the runs.
    if cycle.cold && run.is_none() {
        report.insert(report.len().saturating_sub(1), lines::lone_cold_line());
    }
    if let (Some(run), Some(summary)) = (run, report.last_mut()) {
        if let Some(rest) = summary.strip_prefix("Summary:") {
            *summary = format!("Run {run:4}:{rest}");
        }
    }
    for line in report {
        console.line(&line);
    }
    let wrong = cycle
        .fired
        .as_ref()
        .and_then(|fired| cycles::not_all_fired(fired, cycle.probes));
    record.outcome = Outcome::Cycle(cycle);
    match wrong {
        Some(err) => Err(err),
        None => Ok(None),
    }
}

/// The statistics of every configuration's cycles (one per run), and the
/// lines that close the runs: the table of a sweep, or the figures over
/// repeated runs and what `precision` came to.
pub fn over_runs<'a>(
    bench: &str,
    points: impl Iterator<Item = (Option<u64>, &'a Vec<RunRecord>)>,
    sweep: Option<&str>,
    precision: Option<&PrecisionRecord>,
) -> (Vec<String>, Vec<CycleLevel>) {
    let mut levels = Vec::new();
    let mut cold_lines = Vec::new();
    for (sweep_value, runs) in points {
        // The cold cycle is a quantity of its own: warm cycles, where any.
        let cycles: Vec<&CycleRecord> = runs
            .iter()
            .filter(|r| figures::counts(r, runs))
            .filter_map(|r| r.cycle())
            .collect();
        let cold = runs.iter().filter_map(|r| r.cycle()).find(|c| c.cold);
        if let (Some(cold), None) = (cold, sweep) {
            if !cycles.iter().any(|c| c.cold) {
                cold_lines.push(lines::cold_line(cold));
            }
        }
        let per_probe = |pick: fn(&CycleRecord) -> &Timing| {
            let values: Vec<f64> = cycles
                .iter()
                .map(|c| pick(c).us_per_probe(c.probes))
                .collect();
            stats::run_stats(&values)
        };
        let (Some(attach), Some(detach), Some(first)) = (
            per_probe(|c| &c.attach),
            per_probe(|c| &c.detach),
            cycles.first(),
        ) else {
            continue;
        };
        levels.push(CycleLevel {
            sweep_value,
            probes: first.probes,
            attach_us_per_probe: attach,
            detach_us_per_probe: detach,
            all_fired: cycles
                .iter()
                .filter(|c| c.fired.as_ref().is_some_and(|f| f.fired == c.probes))
                .count(),
        });
    }
    let lines = match (sweep, levels.as_slice()) {
        (Some(param), _) => lines::sweep_table(bench, param, &levels),
        (None, [level]) if level.attach_us_per_probe.runs >= 2 => {
            // As the rate benchmarks' runs line ends.
            let mut runs = lines::runs_line(&level.attach_us_per_probe, &level.detach_us_per_probe);
            runs.push_str(&precision.map(text::precision_words).unwrap_or_default());
            cold_lines.extend([runs, lines::runs_summary(level)]);
            cold_lines
        }
        _ => cold_lines,
    };
    (lines, levels)
}
