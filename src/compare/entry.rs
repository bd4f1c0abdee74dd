//! One side of a comparison as loaded: each configuration's runs in a result
//! file, and the options that say whether two of them are comparable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::benches;
use crate::error::{Error, Result};
use crate::figures::FigureDecl;
use crate::report::compare as lines;
use crate::results::{Options, ResultFile, RunRecord};
use crate::stats::mean_sd;

/// A configuration's runs in one file (one, or one per `--runs` repetition),
/// and where they came from.
pub(super) struct Entry {
    pub(super) file: PathBuf,
    pub(super) benchmark: String,
    pub(super) param: Option<String>,
    /// The file or one of the runs was interrupted.
    pub(super) partial: bool,
    pub(super) runs: Vec<RunRecord>,
    pub(super) option_set: BTreeMap<String, String>,
    /// The identity of the interleaved invocation that wrote the file.
    pub(super) interleaved: Option<String>,
    /// What its runs are judged by, as its file declares them.
    pub(super) figures: Vec<FigureDecl>,
}

impl Entry {
    pub(super) fn sweep_value(&self) -> Option<u64> {
        self.runs.first().and_then(|r| r.sweep_value)
    }

    pub(super) fn key(&self) -> (String, Option<String>, Option<u64>) {
        (
            self.benchmark.clone(),
            self.param.clone(),
            self.sweep_value(),
        )
    }

    pub(super) fn label(&self) -> String {
        match (&self.param, self.sweep_value()) {
            (Some(param), Some(v)) => format!("{} {param}={v}", self.benchmark),
            _ => self.benchmark.clone(),
        }
    }

    pub(super) fn file_name(&self) -> String {
        lines::printable(&self.file.file_name().map_or_else(
            || self.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ))
    }

    /// Its figure `name`, as its file declares it.
    pub(super) fn figure(&self, name: &str) -> Option<&FigureDecl> {
        self.figures.iter().find(|f| f.name == name)
    }

    /// A figure's observations, run by run (each measured second's value,
    /// or the run's one value); runs that measured nothing are left out.
    pub(super) fn observations(&self, name: &str) -> Vec<Vec<f64>> {
        self.runs
            .iter()
            .filter(|run| crate::results::judged(run, &self.runs))
            .map(|run| run.within_run(name))
            .filter(|seen| !seen.is_empty())
            .collect()
    }

    /// Each measured run's mean of a figure, by its round (`repetition`).
    pub(super) fn round_means(&self, name: &str) -> Vec<(u32, f64)> {
        self.runs
            .iter()
            .filter(|run| crate::results::judged(run, &self.runs))
            .filter_map(|run| Some((run.repetition?, run.within_run(name))))
            .filter(|(_, seen)| !seen.is_empty())
            .map(|(round, seen)| (round, mean_sd(&seen).mean))
            .collect()
    }

    /// The runs' latency histograms merged, when they have them.
    pub(super) fn merged_latency(&self) -> Option<Vec<[u64; 2]>> {
        let mut merged = crate::latency::Distribution::new();
        for run in &self.runs {
            merged.add(&run.latency.as_ref()?.distribution().ok()?);
        }
        (merged.count() > 0).then(|| merged.buckets())
    }

    /// Why there is nothing to compare, when there is not.
    pub(super) fn nothing_measured(&self) -> Option<&'static str> {
        let runs = &self.runs;
        let measured = |r: &RunRecord| {
            r.cycle().is_some() || r.fixed().is_some() || r.samples().iter().any(|s| !s.warmup)
        };
        if runs.is_empty() {
            Some("holds no run (the benchmark was refused, or stopped before its first run)")
        } else if runs.iter().any(measured) {
            None
        } else if self.partial {
            Some("was interrupted before measuring")
        } else {
            Some("has no measured samples")
        }
    }
}

/// The recorded options with those that say how long a run lasted, not what
/// it measured, set alike: the only ones two comparable results may differ
/// in. The benchmark's own options are set alike too: the run's are compared
/// instead, where a sweep changed them.
fn compared_options(options: &Options) -> Options {
    Options {
        warmup_secs: 0,
        duration_secs: 0,
        repeat: None,
        params: BTreeMap::new(),
        ..options.clone()
    }
}

/// The options that make two results comparable: every recorded option (so
/// that one added later is compared too) but the timing of the run, with
/// the run's own producers and benchmark options where a sweep changed them.
fn option_set(file: &ResultFile, run: &RunRecord) -> BTreeMap<String, String> {
    let mut set = BTreeMap::new();
    // Plain structs of numbers and strings always serialise to an object.
    let options = serde_json::to_value(compared_options(&file.options));
    if let Ok(serde_json::Value::Object(options)) = options {
        for (name, value) in options {
            let value = match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            set.insert(lines::printable(&name), lines::printable(&value));
        }
    }
    set.insert("producers".to_string(), run.producers.to_string());
    for (k, v) in run.params.iter().filter(|(k, _)| benches::changes_work(k)) {
        set.insert(lines::printable(k), v.to_string());
    }
    set
}

/// The test tick `compare` runs under (`BENCH_TEST_TICK_MS`, valid), if
/// any: the test suite's, comparing its own files.
fn suite_tick() -> Option<u32> {
    crate::config::tick_from_env()
        .ok()
        .filter(|&tick| tick != crate::config::SECOND_MS)
}

/// A result file read, and brought to today's layout when it is of an
/// earlier one (today's meaning of its benchmark gives its channels and
/// figures); the note that says what it lacked, once. A file of the test
/// suite's tick is refused, but where `suite_tick` is that tick: `compare`
/// run by the suite itself on the tick ([`suite_tick`]), checking its own
/// output on files whose numbers no one keeps.
pub fn load_result(path: &Path, suite_tick: Option<u32>) -> Result<(ResultFile, Option<String>)> {
    let mut result = ResultFile::load(path)?;
    if let Some(tick_ms) = result
        .options
        .test_tick_ms
        .filter(|&t| suite_tick != Some(t))
    {
        return Err(Error::usage(format!(
            "{} was measured on the test suite's {tick_ms} ms tick ({}): its numbers check \
             output and are not for comparison or the history",
            lines::printable(&path.display().to_string()),
            crate::config::TEST_TICK_ENV
        )));
    }
    let Some(legacy) = result.legacy.clone() else {
        check_against_samples(&result, path)?;
        return Ok((result, None));
    };
    let known = benches::find(&result.benchmark);
    result.upgrade(known.map(|b| (b.channels(), b.figures())));
    let name = lines::printable(&path.display().to_string());
    let bench = lines::printable(&result.benchmark);
    Ok((result, Some(legacy.note(&name, &bench, known.is_some()))))
}

/// Refuses a file whose kept figures are not what its own runs give, by
/// today's definitions of its benchmark where the file declares its figures
/// as today's bench does (samples of 100M hits/s and a figure of 1000M/s):
/// such a file was edited, and comparing it would print a change nobody
/// measured. A benchmark this bench does not know, or knows otherwise, is
/// taken as its file says.
fn check_against_samples(result: &ResultFile, path: &Path) -> Result<()> {
    let Some(known) = benches::find(&result.benchmark) else {
        return Ok(());
    };
    let today: Vec<FigureDecl> = known.figures().iter().map(|f| f.decl()).collect();
    if result.figures != today {
        return Ok(());
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs());
    for (i, run) in result.runs.iter().enumerate() {
        let mut again = run.clone();
        again.evaluate(known.figures(), known.channels());
        for (name, kept) in &run.figures {
            let fresh = again.figures.get(name).and_then(|f| f.value);
            if let (Some(kept), Some(fresh)) = (kept.value, fresh) {
                if !close(kept, fresh) {
                    return Err(Error::usage(format!(
                        "{}: runs[{i}] keeps {} = {kept} but its own samples give {fresh}: a file bench wrote never holds that",
                        path.display(),
                        lines::printable(name)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The entries of one side: a result file, or every `.json` file of a
/// directory, in name order; with the notes its old files need.
pub(super) fn load_side(path: &Path) -> Result<(Vec<Entry>, Vec<String>)> {
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
    let mut notes = Vec::new();
    let suite_tick = suite_tick();
    for file in files {
        let (result, note) = load_result(&file, suite_tick)?;
        notes.extend(note);
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
                figures: result.figures.clone(),
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
                figures: result.figures.clone(),
                runs,
            });
        }
    }
    Ok((entries, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Body, Params, RunConfig};

    /// Two results may differ in how long their runs lasted, nothing else.
    #[test]
    fn only_the_timing_of_a_run_is_left_out() {
        let base = RunConfig::defaults(Params::default());
        let timed = Options::from_config(&base);
        let longer = Options::from_config(&RunConfig {
            warmup_secs: 7,
            duration_secs: 9,
            repeat: Some(1000),
            ..base.clone()
        });
        assert_ne!(timed, longer);
        assert_eq!(compared_options(&timed), compared_options(&longer));
        let other_body = Options::from_config(&RunConfig {
            body: Body::Ktime,
            ..base.clone()
        });
        assert_ne!(compared_options(&timed), compared_options(&other_body));
        let more_consumers = Options::from_config(&RunConfig {
            consumers: 2,
            ..base
        });
        assert_ne!(compared_options(&timed), compared_options(&more_consumers));
    }
}
