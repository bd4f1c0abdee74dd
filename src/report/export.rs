//! The outputs of a run, as hyperfine's export manager has them: a list of
//! exporters, each with its target, built once from the command line; every
//! target checked before anything runs; every result written through them.
//!
//! Adding an output format: its exporter (one module of `report/`
//! implementing [`Exporter`]) and one line in [`FORMATS`]. The command line
//! takes its flag from there, the checks and the per-benchmark file names
//! ask the exporter.

use std::path::PathBuf;

use super::csv::Csv;
use super::json::Json;
use super::output;
use super::plot::Svg;
use super::profile::{self, ProfileFiles, RunStacks};
use super::Exporter;
use crate::config::{OutputTarget, Outputs, ProfileRequest};
use crate::error::Result;
use crate::results::ResultFile;

/// Every output format a flag asks for, in the order they are written.
/// (`--profile=DIR`'s files are an exporter too, but --profile is a run
/// option: [`Exports::new`] adds them.)
pub static FORMATS: &[&dyn Exporter] = &[&Json, &Csv, &Svg];

/// The exporter whose flag is `--long`.
pub fn format(long: &str) -> Option<&'static dyn Exporter> {
    FORMATS.iter().copied().find(|e| e.long() == long)
}

/// One output asked for: what writes it and where.
#[derive(Clone)]
pub struct Export {
    pub exporter: &'static dyn Exporter,
    pub target: OutputTarget,
    pub written: Written,
}

/// Which files an output writes, and so which of them its check covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// An output flag of [`FORMATS`]: one file a benchmark (or stdout).
    PerBenchmark,
    /// `--profile=DIR`: the files of each profiled run, in the directory.
    PerProfiledRun,
}

impl Export {
    /// Where `bench`'s result goes.
    pub fn target_for(&self, bench: &str) -> OutputTarget {
        match &self.target {
            OutputTarget::File(path) => OutputTarget::File(self.exporter.file_for(path, bench)),
            OutputTarget::Stdout => OutputTarget::Stdout,
        }
    }
}

/// The outputs of one invocation.
#[derive(Clone)]
pub struct Exports(Vec<Export>);

impl Exports {
    /// The exporters the command line asked for, with their targets.
    pub fn new(outputs: &Outputs, profile: Option<&ProfileRequest>) -> Exports {
        let mut list: Vec<Export> = FORMATS
            .iter()
            .filter_map(|&exporter| {
                let target = outputs.target(exporter.long())?.clone();
                Some(Export {
                    exporter,
                    target,
                    written: Written::PerBenchmark,
                })
            })
            .collect();
        if let Some(dir) = profile.and_then(|p| p.dir.clone()) {
            list.push(Export {
                exporter: &ProfileFiles,
                target: OutputTarget::File(dir),
                written: Written::PerProfiledRun,
            });
        }
        Exports(list)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Export> {
        self.0.iter()
    }

    /// Every file the outputs will write for `benches`, with its flag.
    pub fn files(&self, benches: &[&str]) -> Vec<(String, PathBuf)> {
        self.0
            .iter()
            .flat_map(|export| {
                benches
                    .iter()
                    .filter_map(move |bench| match export.target_for(bench) {
                        OutputTarget::File(path) => Some((export.exporter.flag(), path)),
                        OutputTarget::Stdout => None,
                    })
            })
            .collect()
    }

    /// Checks, before anything runs, every output: each file writable and no
    /// two outputs on one file (`--json DIR` and `--profile=DIR` would both
    /// write `DIR/NAME.json`). `profile_stems` names the runs whose profile
    /// files `--profile=DIR` may write (see [`profile_name`]).
    pub fn check(&self, benches: &[&str], profile_stems: &[String]) -> Result<()> {
        let mut all: Vec<(String, OutputTarget)> = Vec::new();
        for export in &self.0 {
            let flag = export.exporter.flag();
            match (&export.target, export.written) {
                (OutputTarget::File(dir), Written::PerProfiledRun) => {
                    for stem in profile_stems {
                        for path in profile::every_file(dir, stem) {
                            all.push((flag.clone(), OutputTarget::File(path)));
                        }
                    }
                }
                _ => {
                    for bench in benches {
                        let output = (flag.clone(), export.target_for(bench));
                        if !all.contains(&output) {
                            all.push(output);
                        }
                    }
                }
            }
        }
        output::check_outputs(&all)
    }

    /// Writes every output of every result (the profile files from
    /// `stacks`). A failure is kept for the end
    /// (see [`output::keep`]) while the other outputs are written.
    pub fn write(&self, results: &[ResultFile], stacks: &RunStacks) -> Result<()> {
        for result in results {
            for export in &self.0 {
                let target = export.target_for(&result.benchmark);
                output::keep(export.exporter.export(result, stacks, &target));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output flags write one file a benchmark; `--profile=DIR` the files
    /// of each profiled run, which its check lists one by one.
    #[test]
    fn each_output_knows_which_files_it_writes() {
        let outputs = Outputs {
            targets: vec![("json", OutputTarget::File("r.json".into()))],
        };
        let profile = ProfileRequest {
            dir: Some("prof".into()),
            freq_hz: 99,
        };
        let exports = Exports::new(&outputs, Some(&profile));
        let written: Vec<(String, Written)> = exports
            .iter()
            .map(|e| (e.exporter.flag(), e.written))
            .collect();
        assert_eq!(
            written,
            [
                ("--json".to_string(), Written::PerBenchmark),
                (ProfileFiles.flag(), Written::PerProfiledRun)
            ]
        );
        assert_eq!(Exports::new(&outputs, None).iter().count(), 1);
    }
}
