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
use crate::report::reporter::Reporter;
use crate::results::{ResultFile, RunRecord};
use crate::stats::{self, mean_sd, Basis, MeanSd, Verdict};

pub const AFTER_HELP: &str = "Each benchmark is judged by its headline rate: hits per second, \
or all operations per second for the perf family (syscall-*, breakpoint-*). With two runs or \
more on each side (bench --runs N), each run's mean is one observation and the change's 95 % \
interval holds the drift between runs; with one run on a side, the seconds of that run are the \
observations and the row is marked '1 run': their interval leaves the drift out, so rerun with \
--runs 3 or more before trusting it. One rule gives every verdict and the gate: a change is \
'faster' or 'slower' when its interval excludes no change (p < 0.05) and it is at least the noise \
floor (--noise); otherwise 'no significant change'. --fail-on-regression PCT fails only a row whose \
verdict is 'slower' by more than PCT. Rows of interrupted runs are marked [partial]; file names are \
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
        self.file.file_name().map_or_else(
            || self.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// The headline rate of each measured second, run by run, as the
    /// Reporter ranks the benchmark (hits, or all operations); hits for a name
    /// the registry no longer knows. Runs that measured nothing are left out.
    fn rates(&self) -> Vec<Vec<f64>> {
        let reporter = benches::find(&self.benchmark).map(Reporter::new);
        self.runs
            .iter()
            .map(|run| {
                run.samples
                    .iter()
                    .filter(|s| !s.warmup)
                    .map(|s| match &reporter {
                        Some(reporter) => reporter.sample_rate(s),
                        None => s.hits_per_sec(),
                    })
                    .collect::<Vec<f64>>()
            })
            .filter(|seconds| !seconds.is_empty())
            .collect()
    }

    /// Why there is nothing to compare, when there is not.
    fn nothing_measured(&self) -> Option<&'static str> {
        let runs = &self.runs;
        if runs.iter().any(|r| r.samples.iter().any(|s| !s.warmup)) {
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

/// The options that make two results comparable: not the timing of the run.
fn option_set(file: &ResultFile, run: &RunRecord) -> BTreeMap<String, String> {
    let mut set = BTreeMap::new();
    set.insert("producers".to_string(), run.producers.to_string());
    set.insert("consumers".to_string(), file.options.consumers.to_string());
    set.insert("affinity".to_string(), file.options.affinity.clone());
    for (k, v) in &run.params {
        set.insert(k.clone(), v.to_string());
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
        let param = result.sweep.as_ref().map(|s| s.param.clone());
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
                benchmark: result.benchmark.clone(),
                param: param.clone(),
                partial: result.partial || runs.iter().any(|r| r.partial),
                option_set: option_set(&result, head),
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
    for new_path in &args.new {
        let new = load_side(new_path)?;
        let pairs = pair_up(&old, &new, args, new_path)?;
        if args.new.len() > 1 {
            report.push(lines::section(&args.old, new_path));
        }
        report.push(lines::header());
        for (o, n) in pairs {
            let mut label = if o.benchmark == n.benchmark {
                o.label()
            } else {
                format!("{} vs {}", o.label(), n.label())
            };
            // Two files of one benchmark on a side: say which row is which.
            let repeated =
                |side: &[Entry], e: &Entry| side.iter().filter(|x| x.key() == e.key()).count() > 1;
            if repeated(&old, o) || repeated(&new, n) {
                label = format!("{label} ({} vs {})", o.file_name(), n.file_name());
            }
            let partial = match (o.partial, n.partial) {
                (true, true) => Some(Side::Both),
                (true, false) => Some(Side::Old),
                (false, true) => Some(Side::New),
                (false, false) => None,
            };
            if let Some((side, why)) = o
                .nothing_measured()
                .map(|w| ("old", w))
                .or_else(|| n.nothing_measured().map(|w| ("new", w)))
            {
                report.push(lines::nothing_to_compare(&label, side, why));
                continue;
            }
            let (old_runs, new_runs) = (o.rates(), n.rates());
            let change = stats::compare_runs(&old_runs, &new_runs);
            let verdict = change.map(|c| Verdict::of(&c, args.noise));
            single_run |= change.is_some_and(|c| c.basis == Basis::Seconds);
            report.push(lines::row(&Row {
                label: &label,
                old: side_figures(&old_runs),
                new: side_figures(&new_runs),
                runs: (old_runs.len(), new_runs.len()),
                change,
                verdict,
                partial,
            }));
            // One rule: the gate fails only what the verdict calls slower.
            if let (Some(limit), Some(change), Some(verdict)) =
                (args.fail_on_regression, change, verdict)
            {
                if verdict.fails_gate(&change, limit) {
                    regressions.push(lines::regression(&label, &change));
                }
            }
        }
    }
    if single_run {
        report.push(lines::single_run_note());
    }
    let regression = (!regressions.is_empty()).then(|| {
        Error::Regression(format!(
            "regression beyond {}%: {}",
            args.fail_on_regression.unwrap_or_default(),
            regressions.join("; ")
        ))
    });
    Ok(Comparison { report, regression })
}

/// Matches old and new entries by benchmark (and swept value), refusing what
/// should not be compared unless `--force`. Where a side holds one benchmark
/// more than once, the i-th of each side are paired.
fn pair_up<'a>(
    old: &'a [Entry],
    new: &'a [Entry],
    args: &CompareArgs,
    new_path: &Path,
) -> Result<Vec<(&'a Entry, &'a Entry)>> {
    let single_files = !args.old.is_dir() && !new_path.is_dir();
    let names = |side: &[Entry]| {
        let mut names: Vec<String> = side.iter().map(|e| e.benchmark.clone()).collect();
        names.dedup();
        names
    };
    let (old_names, new_names) = (names(old), names(new));
    let mut pairs = Vec::new();
    if single_files && old_names != new_names {
        if !args.force {
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
            return Err(Error::usage(format!(
                "{} and {} have no benchmark in common",
                args.old.display(),
                new_path.display()
            )));
        }
    }
    if !args.force {
        for (o, n) in &pairs {
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
    }
    Ok(pairs)
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
