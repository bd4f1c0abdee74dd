//! `bench compare OLD NEW...`: is the difference real? For each benchmark in
//! both, old and new mean ± sd of its headline rate, the change, and a verdict
//! from Welch's t-test on the measured samples and a noise floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::benches;
use crate::error::{Error, Result};
use crate::report::compare::{self as lines, Row, Side};
use crate::report::reporter::Reporter;
use crate::results::{ResultFile, RunRecord};
use crate::stats::{mean_sd, welch};

/// The significance level of the t-test.
pub const ALPHA: f64 = 0.05;

/// The verdict when a change is not shown to be real.
pub const NO_CHANGE: &str = "no significant change";

pub const AFTER_HELP: &str = "Each benchmark is judged by its headline rate: hits per second, \
or all operations per second for the perf family (syscall-*, breakpoint-*). A change is 'faster' \
or 'slower' when it is larger than the noise floor and Welch's t-test on the per-second samples \
gives p < 0.05; otherwise it is 'no significant change'. Rows of interrupted runs are marked \
[partial]; file names are shown where a benchmark has more than one file. Exit codes: 0 ok, \
2 bad usage, 6 a regression beyond --fail-on-regression.";

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

/// A measured run and where it came from.
struct Entry {
    file: PathBuf,
    benchmark: String,
    param: Option<String>,
    /// The file or the run was interrupted.
    partial: bool,
    run: RunRecord,
    option_set: BTreeMap<String, String>,
}

impl Entry {
    fn key(&self) -> (String, Option<String>, Option<u64>) {
        (
            self.benchmark.clone(),
            self.param.clone(),
            self.run.sweep_value,
        )
    }

    fn label(&self) -> String {
        match (&self.param, self.run.sweep_value) {
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

    /// The headline rate of each measured second, as the Reporter ranks the
    /// benchmark (hits, or all operations); hits for a name the registry no
    /// longer knows.
    fn rates(&self) -> Vec<f64> {
        let reporter = benches::find(&self.benchmark).map(Reporter::new);
        self.run
            .samples
            .iter()
            .filter(|s| !s.warmup)
            .map(|s| match &reporter {
                Some(reporter) => reporter.sample_rate(s),
                None => s.hits_per_sec(),
            })
            .collect()
    }

    /// Why there is nothing to compare, when there is not.
    fn nothing_measured(&self) -> Option<&'static str> {
        if self.run.samples.iter().any(|s| !s.warmup) {
            None
        } else if self.run.fixed.is_some() {
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
        for run in &result.runs {
            entries.push(Entry {
                file: file.clone(),
                benchmark: result.benchmark.clone(),
                param: param.clone(),
                partial: result.partial || run.partial,
                option_set: option_set(&result, run),
                run: run.clone(),
            });
        }
    }
    Ok(entries)
}

/// The verdict on one pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub change_pct: f64,
    pub p: Option<f64>,
    pub word: &'static str,
}

/// Compares two sets of per-second rates.
pub fn judge(old: &[f64], new: &[f64], noise_pct: f64) -> Verdict {
    let (o, n) = (mean_sd(old), mean_sd(new));
    let change_pct = if o.mean > 0.0 {
        (n.mean - o.mean) / o.mean * 100.0
    } else {
        0.0
    };
    let p = welch(old, new).map(|w| w.p);
    let significant = p.is_some_and(|p| p < ALPHA);
    let word = if change_pct.abs() < noise_pct || !significant {
        NO_CHANGE
    } else if change_pct > 0.0 {
        "faster"
    } else {
        "slower"
    };
    Verdict {
        change_pct,
        p,
        word,
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
            let (old_rates, new_rates) = (o.rates(), n.rates());
            let v = judge(&old_rates, &new_rates, args.noise);
            report.push(lines::row(&Row {
                label: &label,
                old: mean_sd(&old_rates),
                new: mean_sd(&new_rates),
                change_pct: v.change_pct,
                word: v.word,
                p: v.p,
                partial,
            }));
            if let Some(limit) = args.fail_on_regression {
                // The gate is its own floor: significant and slower than
                // allowed, whatever --noise says.
                if v.p.is_some_and(|p| p < ALPHA) && -v.change_pct > limit {
                    regressions.push(lines::regression(&label, -v.change_pct, v.p));
                }
            }
        }
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

    /// Per-second rates around `mean` with a 0.3% spread.
    fn rates(mean: f64) -> Vec<f64> {
        [0.997, 1.002, 1.0, 0.999, 1.003, 0.998, 1.001, 1.0]
            .iter()
            .map(|f| f * mean)
            .collect()
    }

    #[test]
    fn a_20_percent_drop_is_a_significant_slowdown() {
        let v = judge(&rates(1e6), &rates(0.8e6), 2.0);
        assert_eq!(v.word, "slower");
        assert!((v.change_pct + 20.0).abs() < 1e-9);
        assert!(v.p.unwrap() < 1e-6);
        assert_eq!(judge(&rates(1e6), &rates(1.2e6), 2.0).word, "faster");
    }

    #[test]
    fn half_a_percent_is_noise() {
        let v = judge(&rates(1e6), &rates(1.005e6), 2.0);
        assert_eq!(v.word, NO_CHANGE);
        // Even when significant, a change under the floor is noise.
        let tight: Vec<f64> = rates(1e6).iter().map(|r| 1e6 + (r - 1e6) / 100.0).collect();
        let moved: Vec<f64> = tight.iter().map(|r| r * 1.005).collect();
        let v = judge(&tight, &moved, 2.0);
        assert!(v.p.unwrap() < ALPHA);
        assert_eq!(v.word, NO_CHANGE);
    }

    #[test]
    fn a_large_but_noisy_change_is_not_called() {
        let old = [1.0e6, 2.0e6, 0.5e6];
        let new = [1.5e6, 0.7e6, 2.2e6];
        assert_eq!(judge(&old, &new, 2.0).word, NO_CHANGE);
    }
}
