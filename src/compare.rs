//! `bench compare OLD NEW...`: is the difference real? For each benchmark in
//! both, old and new mean ± sd of its headline rate, the change with its 95 %
//! confidence interval, and a verdict. With two runs or more on each side the
//! runs are the observations (their means, Welch's t); with one run on a side
//! only its seconds are, and the row says that the drift between runs is not
//! in the interval.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::benches;
use crate::error::{Error, Result};
use crate::report::compare::{self as lines, Row, Side};
use crate::results::{ResultFile, RunRecord};
use crate::runner::cycles::{CycleRecord, Timing};
use crate::stats::{self, mean_sd, Basis, Change, MeanSd, Sensitivity, Verdict};

pub const AFTER_HELP: &str = "Each benchmark is judged by its headline rate: hits per second, \
or all operations per second for the perf family (syscall-*, breakpoint-*). With two runs or \
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
    #[arg(long, value_name = "WHAT", default_value = "rate", value_parser = gate)]
    gate: String,
    /// Draw the latency distributions of both sides (results of --latency
    /// runs), one line each, in FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// The figures `--gate` takes.
const GATES: [&str; 8] = [
    "rate", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean",
];

fn gate(text: &str) -> std::result::Result<String, String> {
    match GATES.contains(&text) {
        true => Ok(text.to_string()),
        false => Err(format!("expected one of {}", GATES.join(", "))),
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

/// A configuration's runs in one file (one, or one per `--runs` repetition),
/// and where they came from.
struct Entry {
    file: PathBuf,
    benchmark: String,
    param: Option<String>,
    /// The file or one of the runs was interrupted.
    partial: bool,
    runs: Vec<RunRecord>,
    option_set: BTreeMap<String, String>,
    /// The identity of the interleaved invocation that wrote the file.
    interleaved: Option<String>,
}

impl Entry {
    fn sweep_value(&self) -> Option<u64> {
        self.runs.first().and_then(|r| r.sweep_value)
    }

    fn key(&self) -> (String, Option<String>, Option<u64>) {
        (
            self.benchmark.clone(),
            self.param.clone(),
            self.sweep_value(),
        )
    }

    fn label(&self) -> String {
        match (&self.param, self.sweep_value()) {
            (Some(param), Some(v)) => format!("{} {param}={v}", self.benchmark),
            _ => self.benchmark.clone(),
        }
    }

    fn file_name(&self) -> String {
        lines::printable(&self.file.file_name().map_or_else(
            || self.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ))
    }

    /// The headline rate of each measured second, run by run, as the
    /// benchmark's metric ranks it (hits, or all operations); hits for a name
    /// the registry no longer knows. Runs that measured nothing are left out.
    fn rates(&self) -> Vec<Vec<f64>> {
        self.rates_of_every_run()
            .into_iter()
            .filter(|seconds| !seconds.is_empty())
            .collect()
    }

    /// [`rates`](Self::rates), one entry per run, empty where a run measured
    /// nothing.
    fn rates_of_every_run(&self) -> Vec<Vec<f64>> {
        let metric = benches::find(&self.benchmark).map(|b| b.metric());
        self.runs
            .iter()
            .map(|run| {
                run.samples
                    .iter()
                    .filter(|s| !s.warmup)
                    .map(|s| match &metric {
                        Some(metric) => metric.sample_rate(s),
                        None => s.hits_per_sec(),
                    })
                    .collect::<Vec<f64>>()
            })
            .collect()
    }

    /// Each measured run's mean headline rate, by its round (`repetition`).
    fn round_means(&self) -> Vec<(u32, f64)> {
        self.runs
            .iter()
            .zip(self.rates_of_every_run())
            .filter_map(|(run, seconds)| Some((run.repetition?, seconds)))
            .filter(|(_, seconds)| !seconds.is_empty())
            .map(|(round, seconds)| (round, mean_sd(&seconds).mean))
            .collect()
    }

    /// The runs' latency histograms merged, when they have them.
    fn merged_latency(&self) -> Option<Vec<[u64; 2]>> {
        let mut merged = crate::latency::Distribution::new();
        for run in &self.runs {
            merged.add(&run.latency.as_ref()?.distribution().ok()?);
        }
        (merged.count() > 0).then(|| merged.buckets())
    }

    /// What the pair is judged by: the headline rate, or for an attach
    /// benchmark two figures, each run's attach and detach rates in probes
    /// per second, so that a lower time per probe is the faster.
    fn figures(&self) -> Vec<(Option<&'static str>, Vec<Vec<f64>>)> {
        if !self.runs.iter().any(|r| r.cycle.is_some()) {
            return vec![(None, self.rates())];
        }
        let per_sec = |pick: fn(&CycleRecord) -> &Timing| {
            self.runs
                .iter()
                .filter_map(|r| r.cycle.as_ref())
                .map(|c| vec![1e6 / pick(c).us_per_probe(c.probes)])
                .collect()
        };
        vec![
            (Some("attach"), per_sec(|c| &c.attach)),
            (Some("detach"), per_sec(|c| &c.detach)),
        ]
    }

    /// Why there is nothing to compare, when there is not.
    fn nothing_measured(&self) -> Option<&'static str> {
        let runs = &self.runs;
        let measured = |r: &RunRecord| r.cycle.is_some() || r.samples.iter().any(|s| !s.warmup);
        if runs.is_empty() {
            Some("holds no run (the benchmark was refused, or stopped before its first run)")
        } else if runs.iter().any(measured) {
            None
        } else if runs.iter().any(|r| r.fixed.is_some()) {
            Some("is a --repeat run, with no per-second samples")
        } else if self.partial {
            Some("was interrupted before measuring")
        } else {
            Some("has no measured samples")
        }
    }
}

/// The recorded options that say how long a run lasted, not what it measured:
/// the only ones two comparable results may differ in.
const TIMING_OPTIONS: [&str; 3] = ["warmup_secs", "duration_secs", "repeat"];

/// The options that make two results comparable: every recorded option (so
/// that one added later is compared too) but the timing of the run, with
/// the run's own producers and benchmark options where a sweep changed them.
fn option_set(file: &ResultFile, run: &RunRecord) -> BTreeMap<String, String> {
    let mut set = BTreeMap::new();
    // Plain structs of numbers and strings always serialise to an object.
    if let Ok(serde_json::Value::Object(options)) = serde_json::to_value(&file.options) {
        for (name, value) in options {
            if TIMING_OPTIONS.contains(&name.as_str()) || name == "params" {
                continue;
            }
            let value = match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            set.insert(lines::printable(&name), lines::printable(&value));
        }
    }
    set.insert("producers".to_string(), run.producers.to_string());
    for (k, v) in &run.params {
        set.insert(lines::printable(k), v.to_string());
    }
    set
}

fn load_side(path: &Path) -> Result<Vec<Entry>> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(Error::usage(format!(
                "{} holds no .json result file",
                path.display()
            )));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut entries = Vec::new();
    for file in files {
        let result = ResultFile::load(&file)?;
        // Names come from files anyone could have written: never let them
        // drive the terminal.
        let benchmark = lines::printable(&result.benchmark);
        let param = result.sweep.as_ref().map(|s| lines::printable(&s.param));
        if result.runs.is_empty() {
            entries.push(Entry {
                file: file.clone(),
                benchmark,
                param,
                partial: result.partial,
                option_set: BTreeMap::new(),
                runs: Vec::new(),
                interleaved: result.interleaved.clone(),
            });
            continue;
        }
        // One entry per configuration: a sweep's points, each with all its
        // repetitions, in the order they first appear.
        let mut first: Vec<&RunRecord> = Vec::new();
        for run in &result.runs {
            if !first.iter().any(|f| f.sweep_value == run.sweep_value) {
                first.push(run);
            }
        }
        for head in first {
            let runs: Vec<RunRecord> = result
                .runs
                .iter()
                .filter(|r| r.sweep_value == head.sweep_value)
                .cloned()
                .collect();
            entries.push(Entry {
                file: file.clone(),
                benchmark: benchmark.clone(),
                param: param.clone(),
                partial: result.partial || runs.iter().any(|r| r.partial),
                option_set: option_set(&result, head),
                interleaved: result.interleaved.clone(),
                runs,
            });
        }
    }
    Ok(entries)
}

/// What one side of a pair shows: mean ± sd of its run means (several
/// runs), or of its seconds (one run).
fn side_figures(runs: &[Vec<f64>]) -> MeanSd {
    if runs.len() >= 2 {
        mean_sd(&runs.iter().map(|r| mean_sd(r).mean).collect::<Vec<f64>>())
    } else {
        mean_sd(&runs.iter().flatten().copied().collect::<Vec<f64>>())
    }
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
    if args.gate != "rate" && latency.is_empty() {
        return Err(Error::usage(format!(
            "--gate {} judges a latency percentile, and {label} has none on both sides (record them with --latency)",
            args.gate
        )));
    }
    for figure in latency {
        report.push(lines::latency_row(&figure));
        if let (Some(limit), Some(change), Some(verdict), true) = (
            args.fail_on_regression,
            figure.change,
            figure.verdict,
            figure.name == args.gate,
        ) {
            if verdict.fails_time_gate(&change, limit) {
                regressions.push(lines::latency_regression(label, &figure.name, &change));
            }
        }
    }
    Ok(())
}

/// Each latency figure of a pair whose both sides have one: old and new
/// (the runs' mean), and the change with its interval where there are
/// observations to give one: two runs a side, or the seconds of one run for
/// p50 and p99.
fn latency_rows(old: &Entry, new: &Entry, noise: f64) -> Vec<lines::LatencyFigure> {
    let per_run = |e: &Entry, name: &str| -> Vec<f64> {
        e.runs
            .iter()
            .filter_map(|r| r.latency.as_ref()?.percentiles.get(name))
            .collect()
    };
    let per_second = |e: &Entry, name: &str| -> Vec<f64> {
        let runs: Vec<_> = e.runs.iter().filter_map(|r| r.latency.as_ref()).collect();
        runs.iter()
            .flat_map(|l| &l.seconds)
            .filter_map(|s| match name {
                "p50" => Some(s.p50 as f64),
                "p99" => Some(s.p99 as f64),
                _ => None,
            })
            .collect()
    };
    let names = crate::latency::PERCENTILES
        .iter()
        .map(|(n, _)| *n)
        .chain(["max", "mean"]);
    names
        .filter_map(|name| {
            let (o, n) = (per_run(old, name), per_run(new, name));
            if o.is_empty() || n.is_empty() {
                return None;
            }
            let change = if o.len() >= 2 && n.len() >= 2 {
                stats::change_between(&o, &n, Basis::Runs)
            } else {
                stats::change_between(
                    &per_second(old, name),
                    &per_second(new, name),
                    Basis::Seconds,
                )
            };
            Some(lines::LatencyFigure {
                name: name.to_string(),
                old: mean_sd(&o).mean,
                new: mean_sd(&n).mean,
                verdict: change.map(|c| Verdict::of_time(&c, noise)),
                change,
            })
        })
        .collect()
}

/// Each side's latency histogram, named, for `--plot`.
fn latency_series(pairs: &[(&Entry, &Entry)]) -> Vec<(String, Vec<[u64; 2]>)> {
    pairs
        .iter()
        .flat_map(|(o, n)| [("old", *o), ("new", *n)])
        .filter_map(|(side, entry)| {
            let buckets = entry.merged_latency()?;
            Some((format!("{} ({side})", entry.label()), buckets))
        })
        .collect()
}

/// `--plot`: every side's latency distribution in one SVG.
fn write_plot(path: &Path, plotted: &[(String, Vec<[u64; 2]>)]) -> Result<()> {
    if !path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("svg"))
    {
        return Err(Error::usage(format!(
            "--plot writes SVG: give a file name ending in .svg, not {}",
            path.display()
        )));
    }
    if plotted.is_empty() {
        return Err(Error::usage(
            "--plot draws latency distributions, and no compared result has one (record them with --latency)",
        ));
    }
    let series: Vec<(&str, &[[u64; 2]])> = plotted
        .iter()
        .map(|(name, buckets)| (name.as_str(), buckets.as_slice()))
        .collect();
    let svg = crate::report::latency_plot::distribution("Latency distribution", &series)?;
    crate::report::output::write(
        &crate::config::OutputTarget::File(path.to_path_buf()),
        svg.as_bytes(),
    )
}

/// What a comparison gives: its report, and the regression that fails it.
pub struct Comparison {
    pub report: Vec<String>,
    pub regression: Option<Error>,
}

pub fn run(args: &CompareArgs) -> Result<Comparison> {
    let old = load_side(&args.old)?;
    let mut report = Vec::new();
    let mut regressions = Vec::new();
    let mut single_run = false;
    let mut undecided = false;
    let mut plotted: Vec<(String, Vec<[u64; 2]>)> = Vec::new();
    for new_path in &args.new {
        let new = load_side(new_path)?;
        let Pairing { pairs, missing } = pair_up(&old, &new, args, new_path)?;
        if args.new.len() > 1 {
            report.push(lines::section(&args.old, new_path));
        }
        report.push(lines::header());
        report_missing(&missing, args, new_path, &mut report, &mut regressions);
        plotted.extend(latency_series(&pairs));
        for (o, n) in pairs {
            let label = pair_label(&old, &new, o, n);
            let partial = partial_side(o, n);
            if let Some((side, why)) = o
                .nothing_measured()
                .map(|w| ("old", w))
                .or_else(|| n.nothing_measured().map(|w| ("new", w)))
            {
                report.push(lines::nothing_to_compare(&label, side, why));
                // A benchmark that stopped working on one side must not pass
                // the gate by having nothing to judge.
                if args.fail_on_regression.is_some() && !args.allow_missing {
                    regressions.push(lines::unmeasured_regression(&label, side, why));
                }
                continue;
            }
            for ((figure, old_runs), (_, new_runs)) in o.figures().into_iter().zip(n.figures()) {
                let label = match figure {
                    Some(figure) => lines::figure_label(&label, figure),
                    None => label.clone(),
                };
                let (change, verdict, sensitivity) = judge(o, n, &old_runs, &new_runs, args);
                single_run |= change.is_some_and(|c| c.basis == Basis::Seconds);
                undecided |= sensitivity.is_some() && verdict == Some(Verdict::NoSignificantChange);
                report.push(lines::row(&Row {
                    label: &label,
                    old: side_figures(&old_runs),
                    new: side_figures(&new_runs),
                    runs: (old_runs.len(), new_runs.len()),
                    change,
                    verdict,
                    sensitivity,
                    partial,
                }));
                regressions.extend(rate_gate(args, &label, change, verdict));
            }
            latency_lines(o, n, args, &label, &mut report, &mut regressions)?;
        }
    }
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
    change: Option<Change>,
    verdict: Option<Verdict>,
) -> Option<String> {
    let limit = args.fail_on_regression.filter(|_| args.gate == "rate")?;
    match (change, verdict) {
        (Some(change), Some(verdict)) => verdict
            .fails_gate(&change, limit)
            .then(|| lines::regression(label, &change)),
        _ => (!args.allow_missing).then(|| lines::unjudged_regression(label)),
    }
}

/// A pair's row label: the benchmark (both, when they differ), and the
/// files when a side has two of one benchmark.
fn pair_label(old: &[Entry], new: &[Entry], o: &Entry, n: &Entry) -> String {
    let label = if o.benchmark == n.benchmark {
        o.label()
    } else {
        format!("{} vs {}", o.label(), n.label())
    };
    // Two files of one benchmark on a side: say which row is which.
    let repeated =
        |side: &[Entry], e: &Entry| side.iter().filter(|x| x.key() == e.key()).count() > 1;
    if repeated(old, o) || repeated(new, n) {
        return format!("{label} ({} vs {})", o.file_name(), n.file_name());
    }
    label
}

/// Which side of a pair was interrupted, if any.
fn partial_side(o: &Entry, n: &Entry) -> Option<Side> {
    match (o.partial, n.partial) {
        (true, true) => Some(Side::Both),
        (true, false) => Some(Side::Old),
        (false, true) => Some(Side::New),
        (false, false) => None,
    }
}

/// The pairs to compare, and the configurations found on one side only
/// (with the side that lacks them).
struct Pairing<'a> {
    pairs: Vec<(&'a Entry, &'a Entry)>,
    missing: Vec<(String, Side)>,
}

/// The change between two sides' runs, its verdict, and what the runs could
/// have detected: paired round by round where the files prove one
/// interleaved invocation wrote them, by Welch's test on the run means
/// otherwise.
fn judge(
    o: &Entry,
    n: &Entry,
    old: &[Vec<f64>],
    new: &[Vec<f64>],
    args: &CompareArgs,
) -> (Option<Change>, Option<Verdict>, Option<Sensitivity>) {
    let (change, sensitivity) = match paired_rounds(o, n) {
        Some((old, new)) => (
            stats::paired_change(&old, &new),
            stats::paired_sensitivity(&old, &new, args.effect, args.noise),
        ),
        None => (
            stats::compare_runs(old, new),
            stats::runs_sensitivity(old, new, args.effect, args.noise),
        ),
    };
    let verdict = change.map(|c| Verdict::of(&c, args.noise));
    (change, verdict, sensitivity)
}

/// The run means of the rounds both sides ran, in round order, when the
/// files prove they came from one interleaved invocation (the same
/// `interleaved` identity); `None` otherwise, or with fewer than two.
fn paired_rounds(old: &Entry, new: &Entry) -> Option<(Vec<f64>, Vec<f64>)> {
    if old.interleaved.is_none() || old.interleaved != new.interleaved {
        return None;
    }
    let new_rounds = new.round_means();
    let (old_means, new_means): (Vec<f64>, Vec<f64>) = old
        .round_means()
        .into_iter()
        .filter_map(|(round, a)| {
            let b = new_rounds.iter().find(|(r, _)| *r == round)?.1;
            Some((a, b))
        })
        .unzip();
    (old_means.len() >= 2).then_some((old_means, new_means))
}

/// Matches old and new entries by benchmark (and swept value), refusing what
/// should not be compared unless `--force`. Where a side holds one benchmark
/// more than once, the i-th of each side are paired.
fn pair_up<'a>(
    old: &'a [Entry],
    new: &'a [Entry],
    args: &CompareArgs,
    new_path: &Path,
) -> Result<Pairing<'a>> {
    let single_files = !args.old.is_dir() && !new_path.is_dir();
    let names = |side: &[Entry]| {
        let mut names: Vec<String> = side.iter().map(|e| e.benchmark.clone()).collect();
        names.dedup();
        names
    };
    let (old_names, new_names) = (names(old), names(new));
    let mut pairs = Vec::new();
    let mut missing = Vec::new();
    // Files one interleaved invocation wrote hold different benchmarks by design.
    let invocation = old.first().and_then(|e| e.interleaved.as_ref());
    let one_invocation = invocation.is_some()
        && old
            .iter()
            .chain(new)
            .all(|e| e.interleaved.as_ref() == invocation);
    if single_files && old_names != new_names {
        if !args.force && !one_invocation {
            return Err(Error::usage(format!(
                "{} holds {} but {} holds {}: different benchmarks (--force compares them anyway)",
                args.old.display(),
                old_names.join(", "),
                new_path.display(),
                new_names.join(", ")
            )));
        }
        pairs.extend(old.iter().zip(new.iter()));
    } else {
        for (side, lacking) in [(old, Side::New), (new, Side::Old)] {
            let other = if lacking == Side::New { new } else { old };
            let mut seen = Vec::new();
            for e in side
                .iter()
                .filter(|e| !other.iter().any(|o| o.key() == e.key()))
            {
                if !seen.contains(&e.key()) {
                    seen.push(e.key());
                    missing.push((e.label(), lacking));
                }
            }
        }
        let mut keys: Vec<_> = old.iter().map(Entry::key).collect();
        keys.dedup();
        for key in keys {
            let olds: Vec<&Entry> = old.iter().filter(|e| e.key() == key).collect();
            let news: Vec<&Entry> = new.iter().filter(|e| e.key() == key).collect();
            if news.is_empty() {
                continue;
            }
            for i in 0..olds.len().max(news.len()) {
                pairs.push((olds[i.min(olds.len() - 1)], news[i.min(news.len() - 1)]));
            }
        }
        if pairs.is_empty() {
            return Err(no_configuration_in_common(old, new, &args.old, new_path));
        }
    }
    if !args.force {
        same_options(&pairs)?;
    }
    Ok(Pairing { pairs, missing })
}

/// Refuses pairs whose runs had different option sets.
fn same_options(pairs: &[(&Entry, &Entry)]) -> Result<()> {
    // A side with no run has no options to hold against the other.
    let with_runs = pairs
        .iter()
        .filter(|(o, n)| !o.runs.is_empty() && !n.runs.is_empty());
    for (o, n) in with_runs {
        let mut names = o.option_set.keys().chain(n.option_set.keys());
        if let Some(name) = names.find(|k| o.option_set.get(*k) != n.option_set.get(*k)) {
            let old_value = o.option_set.get(name).map_or("(none)", String::as_str);
            let new_value = n.option_set.get(name).map_or("(none)", String::as_str);
            return Err(Error::usage(format!(
                "{}: {} ran with {name}={old_value} but {} with {name}={new_value}: different option sets (--force compares them anyway)",
                o.label(),
                o.file.display(),
                n.file.display()
            )));
        }
    }
    Ok(())
}

/// Why two sides share no configuration: different benchmarks, or one
/// benchmark swept on one side (or over other values) and not on the other.
fn no_configuration_in_common(
    old: &[Entry],
    new: &[Entry],
    old_path: &Path,
    new_path: &Path,
) -> Error {
    let shared = old
        .iter()
        .any(|o| new.iter().any(|n| n.benchmark == o.benchmark));
    if !shared {
        return Error::usage(format!(
            "{} and {} have no benchmark in common",
            old_path.display(),
            new_path.display()
        ));
    }
    let configurations = |side: &[Entry]| {
        let mut labels: Vec<String> = side.iter().map(Entry::label).collect();
        labels.dedup();
        labels.join(", ")
    };
    Error::usage(format!(
        "{} holds {} but {} holds {}: the same benchmark, but no configuration in common \
         (a sweep is compared with a sweep over the same values)",
        old_path.display(),
        configurations(old),
        new_path.display(),
        configurations(new)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_a_side_shows_its_seconds_several_their_run_means() {
        let one = vec![vec![1.0, 2.0, 3.0]];
        assert_eq!(side_figures(&one), mean_sd(&[1.0, 2.0, 3.0]));
        let three = vec![vec![1.0, 3.0], vec![5.0], vec![8.0, 10.0]];
        assert_eq!(side_figures(&three), mean_sd(&[2.0, 5.0, 9.0]));
    }
}
