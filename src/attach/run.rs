//! One run of an attach benchmark: one cycle (attach link by link, verify,
//! detach, each step timed on the wall clock and the thread's CPU clock),
//! with the progress bar and the report lines, into the run's record.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use libbpf_rs::Link;

use crate::error::Result;
use crate::interrupt;
use crate::report::attach as lines;
use crate::report::console::Console;
use crate::report::text;
use crate::results::cycles::{AttachedWith, CycleRecord, Skipped, StepTime};
use crate::results::{CycleLevel, Outcome, PrecisionRecord, RunRecord};
use crate::runner::cycles::{self, CycleWorkload, Step, Stopped};
use crate::runner::StoppedAt;
use crate::stats;

/// Runs one cycle of `workload` and reports it (as run `run` of several when
/// numbered); the phase an interrupt stopped it in, if one did.
pub fn one_cycle(
    workload: &dyn CycleWorkload,
    record: &mut RunRecord,
    console: &mut Console,
    run: Option<u32>,
) -> Result<Option<StoppedAt>> {
    console.start_cycle_bar(workload.links());
    let outcome = run_cycle(workload, &mut |step| console.cycle_step(step));
    console.finish_bar();
    let cycle = match outcome? {
        CycleEnd::Interrupted(stopped) => {
            record.partial = true;
            return Ok(Some(StoppedAt::Cycle(stopped)));
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

/// A cycle: its figures, or where an interrupt stopped it (everything
/// attached is detached either way).
enum CycleEnd {
    Done(CycleRecord),
    Interrupted(Stopped),
}

/// A point in time on both clocks.
struct Mark {
    wall: Instant,
    user_ns: u64,
    system_ns: u64,
}

impl Mark {
    fn now() -> Mark {
        let (user_ns, system_ns) = cycles::thread_cpu_ns();
        Mark {
            wall: Instant::now(),
            user_ns,
            system_ns,
        }
    }

    fn since(&self) -> StepTime {
        let now = Mark::now();
        StepTime {
            wall_ns: u64::try_from(now.wall.duration_since(self.wall).as_nanos())
                .unwrap_or(u64::MAX),
            user_ns: now.user_ns.saturating_sub(self.user_ns),
            system_ns: now.system_ns.saturating_sub(self.system_ns),
        }
    }
}

/// Whether a cycle has begun in this process.
static BEGUN: AtomicBool = AtomicBool::new(false);

/// Runs one cycle of `workload`, telling `progress` where it is.
fn run_cycle(workload: &dyn CycleWorkload, progress: &mut dyn FnMut(Step)) -> Result<CycleEnd> {
    let cold = !BEGUN.swap(true, Relaxed);
    let of = workload.links();
    let mut links = Vec::with_capacity(of);
    let start = Mark::now();
    for index in 0..of {
        if interrupt::received().is_some() {
            detach(links, progress);
            return Ok(CycleEnd::Interrupted(Stopped::Attaching {
                attached: index,
                of,
            }));
        }
        match workload.attach(index) {
            Ok(link) => links.push(link),
            Err(err) => {
                detach(links, progress);
                return Err(err);
            }
        }
        progress(Step::Attaching {
            done: index + 1,
            of,
        });
    }
    let attach = start.since();
    // A single link's attach is one system call: an interrupt during it is
    // seen here.
    if interrupt::received().is_some() {
        detach(links, progress);
        return Ok(CycleEnd::Interrupted(Stopped::Attaching {
            attached: of,
            of,
        }));
    }
    let attached_with = AttachedWith {
        links: crate::attach::link_types(),
        skipped: Skipped::of(&workload.skipped()),
    };
    progress(Step::Verifying);
    let fired = match workload.verify() {
        Some(Err(err)) => {
            detach(links, progress);
            return Err(err);
        }
        Some(Ok(fired)) => Some(fired),
        None => None,
    };
    let verify_interrupted = interrupt::received().is_some();
    let start = Mark::now();
    detach(links, progress);
    let detach = start.since();
    if verify_interrupted {
        return Ok(CycleEnd::Interrupted(Stopped::Verifying));
    }
    if interrupt::received().is_some() {
        return Ok(CycleEnd::Interrupted(Stopped::Detaching));
    }
    Ok(CycleEnd::Done(CycleRecord {
        probes: workload.probes(),
        links: of,
        attached_with,
        attach,
        detach,
        fired,
        cold,
    }))
}

/// Detaches `links` one by one, first attached first. An interrupt does not
/// stop it: nothing may stay attached. (Detaching from several threads does
/// not help: the kernel waits for a classic uprobe's grace periods under a
/// global mutex, event_mutex; measured, 1,465 links took 143 s either way.)
fn detach(links: Vec<Link>, progress: &mut dyn FnMut(Step)) {
    let of = links.len();
    for (done, link) in links.into_iter().enumerate() {
        crate::interrupt::detaching(|| drop(link));
        progress(Step::Detaching { done: done + 1, of });
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
            .filter(|r| crate::results::judged(r, runs))
            .filter_map(|r| r.cycle())
            .collect();
        let cold = runs.iter().filter_map(|r| r.cycle()).find(|c| c.cold);
        if let (Some(cold), None) = (cold, sweep) {
            if !cycles.iter().any(|c| c.cold) {
                cold_lines.push(lines::cold_line(cold));
            }
        }
        let per_probe = |pick: fn(&CycleRecord) -> &StepTime| {
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
