//! `bench compare OLD NEW...`: is the difference real? For each benchmark in
//! both, old and new mean ± sd of its headline rate, the change with its 95 %
//! confidence interval, and a verdict. With two runs or more on each side the
//! runs are the observations (their means, Welch's t); with one run on a side
//! only its seconds are, and the row says that the drift between runs is not
//! in the interval.

mod entry;
mod latency;
mod pairing;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::figures::FigureDecl;
use crate::report::compare::{self as lines, Row, Side};
use crate::stats::{self, mean_sd, Basis, Better, Change, MeanSd, Sensitivity, Verdict};
pub use entry::load_result;
use entry::{load_side, Entry};
use latency::{latency_rows, latency_series, write_plot};
use pairing::{pair_label, pair_up, partial_side, Pairing};

pub const AFTER_HELP: &str = "Each benchmark is judged by its headline rate: hits per second, \
or all operations per second for the perf family (syscall-*, breakpoint-*); a --repeat run's \
rate is what it counted over its whole time, one observation a run (record several with \
--runs N -r M). With two runs or \
more on each side (bench --runs N), each run's mean is one observation and the change's 95 % \
interval holds the drift between runs; with one run on a side, the seconds of that run are the \
observations and the row is marked '1 run': their interval leaves the drift out, so rerun with \
--runs 3 or more before trusting it. One rule gives every verdict and the gate: a change is \
'faster' or 'slower' when its interval excludes no change (p < 0.05) and it is at least the noise \
floor (--noise); otherwise 'no significant change'. --fail-on-regression PCT fails only a row whose \
verdict is 'slower' by more than PCT. Beside 'no significant change', what the runs could have \
detected (95 % confidence, 80 % power) and the runs a side that would detect --effect PCT. Two \
files written by one interleaved invocation (bench A B --runs N --json DIR) are paired round by \
round, as its closing table is. Results of --latency runs add a row per latency figure \
(p50 ... max, mean; ns): its change, with an interval from two runs a side (or, for p50 and p99, \
from the seconds of one run); a longer time is 'slower'. --gate p99 (or another figure) makes \
--fail-on-regression judge that figure instead of the rate. Rows of interrupted runs are marked [partial]; file names are \
shown where a benchmark has more than one file. Exit codes: 0 ok, 2 bad usage, 6 a regression \
beyond --fail-on-regression.";

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The baseline: a result file, or a directory of them.
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// Results to hold against the baseline: files or directories.
    #[arg(value_name = "NEW", required = true)]
    new: Vec<PathBuf>,
    /// Changes smaller than PCT percent are not called a change.
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = percent,
          allow_hyphen_values = true)]
    noise: f64,
    /// Exit with code 6 when a benchmark got significantly slower by more than PCT percent.
    #[arg(long, value_name = "PCT", value_parser = percent, allow_hyphen_values = true)]
    fail_on_regression: Option<f64>,
    /// Compare even different benchmarks or option sets.
    #[arg(long)]
    force: bool,
    /// A benchmark found on one side only, or one that measured nothing or
    /// too little to judge on a side, does not fail --fail-on-regression (it
    /// is listed either way).
    #[arg(long)]
    allow_missing: bool,
    /// The change to plan runs for: beside "no significant change", how many
    /// runs a side would detect PCT percent.
    #[arg(long, value_name = "PCT", default_value_t = stats::DEFAULT_EFFECT_PCT,
          value_parser = percent, allow_hyphen_values = true)]
    effect: f64,
    /// What --fail-on-regression judges: the headline rate (`rate`), or a
    /// latency figure of --latency runs (p50, p90, p99, p99.9, p99.99, max, mean).
    #[arg(long, value_name = "WHAT", default_value = "rate", value_parser = Gate::parse)]
    gate: Gate,
    /// Draw the latency distributions of both sides (results of --latency
    /// runs), one line each, in FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// What `--fail-on-regression` judges (`--gate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// The headline figures' rows.
    Rate,
    /// One latency figure of `--latency` runs, by its name in the rows.
    Latency(&'static str),
}

/// The latency figures `--gate` takes.
const LATENCY_GATES: [&str; 7] = ["p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"];

impl Gate {
    fn parse(text: &str) -> std::result::Result<Gate, String> {
        match LATENCY_GATES.iter().find(|&&name| name == text) {
            Some(name) => Ok(Gate::Latency(name)),
            None if text == "rate" => Ok(Gate::Rate),
            None => Err(format!(
                "expected one of rate, {}",
                LATENCY_GATES.join(", ")
            )),
        }
    }

    /// Whether it judges the latency figure `name`.
    fn judges_latency(self, name: &str) -> bool {
        matches!(self, Gate::Latency(gate) if gate == name)
    }
}

fn percent(text: &str) -> std::result::Result<f64, String> {
    let value: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("expected a percentage, got '{text}'"))?;
    if !(0.0..=1000.0).contains(&value) {
        return Err("must be between 0 and 1000".into());
    }
    Ok(value)
}

/// What one side of a pair shows: mean ± sd of its run means (several
/// runs), or of its seconds (one run); `None` for a side without one.
fn side_figures(runs: &[Vec<f64>]) -> Option<MeanSd> {
    if runs.len() >= 2 {
        Some(mean_sd(
            &runs.iter().map(|r| mean_sd(r).mean).collect::<Vec<f64>>(),
        ))
    } else {
        let seen: Vec<f64> = runs.iter().flatten().copied().collect();
        (!seen.is_empty()).then(|| mean_sd(&seen))
    }
}

/// The figures a pair is judged by: the old side's, in its order, then
/// those only the new side has; each as its own file declares it (the old
/// side's where both do).
fn pair_figures(o: &Entry, n: &Entry) -> Vec<FigureDecl> {
    let mut figures = o.figures.clone();
    for figure in &n.figures {
        if o.figure(&figure.name).is_none() {
            figures.push(figure.clone());
        }
    }
    figures
}

/// Why a figure both sides have cannot be compared, when it cannot: the
/// files declare it in two units, or with two better directions (which
/// would judge it?).
fn unlike(o: &Entry, n: &Entry, name: &str, label: &str) -> Option<String> {
    let (old, new) = (o.figure(name)?, n.figure(name)?);
    if old.unit != new.unit {
        return Some(lines::unlike_units(label, &old.name, &old.unit, &new.unit));
    }
    (old.better != new.better).then(|| lines::unlike_directions(label, &old.name, old.better))
}

/// Lists the configurations found on one side only; each fails the gate
/// unless `--allow-missing`.
fn report_missing(
    missing: &[(String, Side)],
    args: &CompareArgs,
    new_path: &Path,
    report: &mut Vec<String>,
    regressions: &mut Vec<String>,
) {
    for (label, absent_from) in missing {
        let absent_from = if *absent_from == Side::Old {
            &args.old
        } else {
            new_path
        };
        report.push(lines::missing(label, absent_from));
        if args.fail_on_regression.is_some() && !args.allow_missing {
            regressions.push(lines::missing_regression(label, absent_from));
        }
    }
}

/// The latency rows of a pair under its rate's row, and the regressions
/// `--gate` finds in them.
fn latency_lines(
    o: &Entry,
    n: &Entry,
    args: &CompareArgs,
    label: &str,
    report: &mut Vec<String>,
    regressions: &mut Vec<String>,
) -> Result<()> {
    let latency = latency_rows(o, n, args.noise);
    if let (Gate::Latency(gate), true) = (args.gate, latency.is_empty()) {
        return Err(Error::usage(format!(
            "--gate {gate} judges a latency percentile, and {label} has none on both sides (record them with --latency)"
        )));
    }
    for figure in latency {
        report.push(lines::latency_row(&figure));
        if let (Some(limit), Some(change), Some(verdict), true) = (
            args.fail_on_regression,
            figure.change,
            figure.verdict,
            args.gate.judges_latency(&figure.name),
        ) {
            if verdict.fails_gate(&change, Better::Lower, limit) {
                regressions.push(lines::latency_regression(label, &figure.name, &change));
            }
        }
    }
    Ok(())
}

/// What a comparison gives: its report, and the regression that fails it.
pub struct Comparison {
    pub report: Vec<String>,
    pub regression: Option<Error>,
}

/// What the rows of a comparison add up to as they are made.
#[derive(Default)]
struct Tally {
    report: Vec<String>,
    regressions: Vec<String>,
    /// A row judged one run a side by its seconds.
    single_run: bool,
    /// A row of no significant change that says what it could have seen.
    undecided: bool,
}

impl Tally {
    /// A row per figure of a pair (the old side's, then the new side's
    /// own), each judged by its direction, and what the gate says of it.
    fn figure_rows(&mut self, (o, n): (&Entry, &Entry), label: &str, args: &CompareArgs) {
        let partial = partial_side(o, n);
        let figures = pair_figures(o, n);
        for figure in &figures {
            let label = match figures.len() {
                1 => label.to_string(),
                _ => lines::figure_label(label, &figure.name),
            };
            if let Some(line) = unlike(o, n, &figure.name, &label) {
                self.report.push(line);
                continue;
            }
            let (old_runs, new_runs) = (o.observations(&figure.name), n.observations(&figure.name));
            let (old_side, new_side) = (side_figures(&old_runs), side_figures(&new_runs));
            if [old_side, new_side]
                .iter()
                .flatten()
                .any(|s| !s.mean.is_finite() || !s.sd.is_finite())
            {
                self.report.push(lines::overflowing(&label, &figure.name));
                continue;
            }
            let (change, verdict, sensitivity) =
                judge((o, n), figure, (&old_runs, &new_runs), args);
            self.single_run |= change.is_some_and(|c| c.basis == Basis::Seconds);
            self.undecided |=
                sensitivity.is_some() && verdict == Some(Verdict::NoSignificantChange);
            self.report.push(lines::row(&Row {
                label: &label,
                figure,
                old: old_side,
                new: new_side,
                runs: (old_runs.len(), new_runs.len()),
                change,
                verdict,
                sensitivity,
                partial,
            }));
            let gate = rate_gate(args, &label, figure, (change, verdict));
            self.regressions.extend(gate);
        }
    }
}

pub fn run(args: &CompareArgs) -> Result<Comparison> {
    let (old, notes) = load_side(&args.old)?;
    let mut tally = Tally {
        report: notes,
        ..Tally::default()
    };
    let mut plotted: Vec<(String, Vec<[u64; 2]>)> = Vec::new();
    for new_path in &args.new {
        let (new, notes) = load_side(new_path)?;
        // A file on both sides (compared with itself) says its note once.
        for note in notes {
            if !tally.report.contains(&note) {
                tally.report.push(note);
            }
        }
        let Pairing { pairs, missing } = pair_up(&old, &new, (&args.old, new_path), args.force)?;
        if args.new.len() > 1 {
            tally.report.push(lines::section(&args.old, new_path));
        }
        tally.report.push(lines::header());
        let (report, regressions) = (&mut tally.report, &mut tally.regressions);
        report_missing(&missing, args, new_path, report, regressions);
        plotted.extend(latency_series(&pairs));
        for (o, n) in pairs {
            let label = pair_label(&old, &new, o, n);
            if let Some((side, why)) = o
                .nothing_measured()
                .map(|w| ("old", w))
                .or_else(|| n.nothing_measured().map(|w| ("new", w)))
            {
                tally
                    .report
                    .push(lines::nothing_to_compare(&label, side, why));
                // A benchmark that stopped working on one side must not pass
                // the gate by having nothing to judge.
                if args.fail_on_regression.is_some() && !args.allow_missing {
                    let line = lines::unmeasured_regression(&label, side, why);
                    tally.regressions.push(line);
                }
                continue;
            }
            tally.figure_rows((o, n), &label, args);
            let (report, regressions) = (&mut tally.report, &mut tally.regressions);
            latency_lines(o, n, args, &label, report, regressions)?;
        }
    }
    let Tally {
        mut report,
        regressions,
        single_run,
        undecided,
    } = tally;
    if single_run {
        report.push(lines::single_run_note());
    }
    if undecided {
        report.push(lines::detectable_note(args.effect));
    }
    let regression = (!regressions.is_empty()).then(|| {
        Error::Regression(format!(
            "regression beyond {}%: {}",
            args.fail_on_regression.unwrap_or_default(),
            regressions.join("; ")
        ))
    });
    if let Some(path) = &args.plot {
        write_plot(path, &plotted)?;
    }
    Ok(Comparison { report, regression })
}

/// What `--fail-on-regression` says of one rate row, when it fails it. One
/// rule: the gate fails only what the verdict calls slower, and what could
/// not be judged at all (unless `--allow-missing`).
fn rate_gate(
    args: &CompareArgs,
    label: &str,
    figure: &FigureDecl,
    (change, verdict): (Option<Change>, Option<Verdict>),
) -> Option<String> {
    let limit = args
        .fail_on_regression
        .filter(|_| args.gate == Gate::Rate)?;
    match (change, verdict) {
        (Some(change), Some(verdict)) => verdict
            .fails_gate(&change, figure.better, limit)
            .then(|| lines::regression(label, &change)),
        _ => (!args.allow_missing).then(|| lines::unjudged_regression(label)),
    }
}

/// The change between two sides' runs, its verdict, and what the runs could
/// have detected: paired round by round where the files prove one
/// interleaved invocation wrote them, by Welch's test on the run means
/// otherwise.
fn judge(
    (o, n): (&Entry, &Entry),
    figure: &FigureDecl,
    (old, new): (&[Vec<f64>], &[Vec<f64>]),
    args: &CompareArgs,
) -> (Option<Change>, Option<Verdict>, Option<Sensitivity>) {
    let (change, sensitivity) = match paired_rounds(o, n, &figure.name) {
        Some((old, new)) => (
            stats::paired_change(&old, &new),
            stats::paired_sensitivity(&old, &new, args.effect, args.noise),
        ),
        None => (
            stats::compare_runs(old, new),
            stats::runs_sensitivity(old, new, args.effect, args.noise),
        ),
    };
    let verdict = change.map(|c| Verdict::of(&c, figure.better, args.noise));
    (change, verdict, sensitivity)
}

/// The run means of the rounds both sides ran, in round order, when the
/// files prove they came from one interleaved invocation (the same
/// `interleaved` identity); `None` otherwise, or with fewer than two.
fn paired_rounds(old: &Entry, new: &Entry, figure: &str) -> Option<(Vec<f64>, Vec<f64>)> {
    if old.interleaved.is_none() || old.interleaved != new.interleaved {
        return None;
    }
    let new_rounds = new.round_means(figure);
    let (old_means, new_means): (Vec<f64>, Vec<f64>) = old
        .round_means(figure)
        .into_iter()
        .filter_map(|(round, a)| {
            let b = new_rounds.iter().find(|(r, _)| *r == round)?.1;
            Some((a, b))
        })
        .unzip();
    (old_means.len() >= 2).then_some((old_means, new_means))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_a_side_shows_its_seconds_several_their_run_means() {
        let one = vec![vec![1.0, 2.0, 3.0]];
        assert_eq!(side_figures(&one), Some(mean_sd(&[1.0, 2.0, 3.0])));
        let three = vec![vec![1.0, 3.0], vec![5.0], vec![8.0, 10.0]];
        assert_eq!(side_figures(&three), Some(mean_sd(&[2.0, 5.0, 9.0])));
        assert_eq!(side_figures(&[]), None);
    }

    #[test]
    fn the_gate_is_the_rate_or_one_latency_figure() {
        assert_eq!(Gate::parse("rate"), Ok(Gate::Rate));
        assert_eq!(Gate::parse("p99.9"), Ok(Gate::Latency("p99.9")));
        assert!(Gate::parse("p99.9").unwrap().judges_latency("p99.9"));
        assert!(!Gate::parse("p99").unwrap().judges_latency("p99.9"));
        assert!(!Gate::Rate.judges_latency("mean"));
        let err = Gate::parse("p42").unwrap_err();
        assert_eq!(
            err,
            "expected one of rate, p50, p90, p99, p99.9, p99.99, max, mean"
        );
    }
}
