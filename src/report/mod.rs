//! Reports: the one [`reporter::Reporter`] that prints a run's lines (the
//! kernel runner's text format, perf bench's), the console (lines and progress
//! bar), and the exporters of a result (JSON, CSV, SVG plot, profile files)
//! behind one trait, one module each, listed once in [`export`]. No output
//! line is built outside this module.

pub mod attach;
pub mod attach_plot;
pub mod bmf;
pub mod calibrate;
pub mod chart;
pub mod compare;
pub mod console;
pub mod csv;
pub mod export;
pub mod github_action;
pub mod history;
pub mod history_page;
pub mod history_plot;
pub mod json;
pub mod latency;
pub mod latency_plot;
pub mod lines;
pub mod listing;
pub mod otava;
pub mod output;
pub mod perf;
pub mod plot;
pub mod profile;
pub mod reporter;
pub mod sweep_tables;
pub mod text;

use std::path::{Path, PathBuf};

use crate::config::OutputTarget;
use crate::error::Result;
use crate::results::ResultFile;
use profile::RunStacks;

/// One output format of a kept result: its command-line flag, how a target
/// is checked and named, and how the result is written there. Registered
/// once, in [`export::FORMATS`].
pub trait Exporter: Sync {
    /// The long option that asks for it, without dashes (`json`).
    fn long(&self) -> &'static str;

    /// Its `--help` line.
    fn help(&self) -> &'static str;

    /// The placeholder of its value in `--help`.
    fn value_name(&self) -> &'static str {
        "FILE"
    }

    /// The extension of the file it writes for one benchmark in a directory
    /// (`DIR/NAME.json`).
    fn extension(&self) -> &'static str;

    /// Whether `-` means standard output (the text report then goes to
    /// stderr); otherwise `-` is a file name.
    fn takes_stdout(&self) -> bool {
        true
    }

    /// Whether it draws a sweep, and so needs `--sweep`.
    fn needs_sweep(&self) -> bool {
        false
    }

    /// A refusal of `path` by this format alone (a plot not named `.svg`),
    /// as the usage error's sentence.
    fn check_name(&self, _path: &Path) -> std::result::Result<(), String> {
        Ok(())
    }

    /// The flag, for messages: `--json`.
    fn flag(&self) -> String {
        format!("--{}", self.long())
    }

    /// Where `bench`'s result goes when the target is `path`: the path
    /// itself, or `DIR/NAME.EXT` in a directory.
    fn file_for(&self, path: &Path, bench: &str) -> PathBuf {
        if path.is_dir() {
            path.join(format!("{bench}.{}", self.extension()))
        } else {
            path.to_path_buf()
        }
    }

    /// The files `result` makes at `target`, with their bytes: one for a
    /// format of one document, several for one with a file per run.
    fn files(&self, result: &ResultFile, target: &OutputTarget) -> Result<Vec<Rendered>>;

    /// The files `result` makes at `target`, given also the profiled runs'
    /// sampled stacks, which the result file does not keep: only the profile
    /// files draw on them.
    fn files_with(
        &self,
        result: &ResultFile,
        _stacks: &RunStacks,
        target: &OutputTarget,
    ) -> Result<Vec<Rendered>> {
        self.files(result, target)
    }

    /// Writes the result's files (each whole or not at all); a file that
    /// fails is kept for the end (see [`output::keep`]) while the others are
    /// written.
    fn export(&self, result: &ResultFile, stacks: &RunStacks, target: &OutputTarget) -> Result<()> {
        for (target, bytes) in self.files_with(result, stacks, target)? {
            output::keep(output::write(&target, &bytes));
        }
        Ok(())
    }
}

/// A file an exporter made, and where it goes.
pub type Rendered = (OutputTarget, Vec<u8>);

pub use crate::figures::{rate_with_sd, scaled};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_scaled_with_their_spread() {
        assert_eq!(rate_with_sd(2_460_000.0, 9_000.0), "2.460 \u{b1} 0.009M/s");
        assert_eq!(rate_with_sd(35_123.0, 456.0), "35.123 \u{b1} 0.456K/s");
        assert_eq!(rate_with_sd(12.5, 0.5), "12.500 \u{b1} 0.500/s");
    }
}
