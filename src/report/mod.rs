//! Reports: the one [`reporter::Reporter`] that prints a run's lines (the
//! kernel runner's text format, perf bench's), the console (lines and progress
//! bar), and the exporters of a result (JSON, CSV, SVG plot) behind one trait,
//! one module each. No output line is built outside this module.

pub mod console;
pub mod csv;
pub mod json;
pub mod perf;
pub mod plot;
pub mod profile;
pub mod reporter;
pub mod text;

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::results::ResultFile;

/// One output format of a kept result.
pub trait Exporter {
    /// The flag that asks for it, for messages.
    fn flag(&self) -> &'static str;

    /// The whole result in this format.
    fn render(&self, result: &ResultFile) -> Result<Vec<u8>>;

    /// Writes the result to `path`, whole or not at all.
    fn export(&self, result: &ResultFile, path: &Path) -> Result<()> {
        write_atomically(path, &self.render(result)?)
    }
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file in the
/// same directory, synced, then renamed over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: std::io::Error| Error::runtime(format!("cannot write {}: {e}", path.display()));
    let name = path
        .file_name()
        .ok_or_else(|| Error::usage(format!("{} names no file", path.display())))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(e) = written.and_then(|()| fs::rename(&temp, path)) {
        let _ = fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// A rate scaled to a readable unit: (value, "M"), (value, "K") or (value, "").
pub fn scaled(per_sec: f64) -> (f64, &'static str) {
    if per_sec >= 1e6 {
        (per_sec / 1e6, "M")
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "K")
    } else {
        (per_sec, "")
    }
}

/// `mean ± sd` of a rate, both in the mean's unit: `2.460 ± 0.009M/s`.
pub fn rate_with_sd(mean: f64, sd: f64) -> String {
    let (value, unit) = scaled(mean);
    let factor = if mean > 0.0 { value / mean } else { 1.0 };
    format!("{value:.3} \u{00b1} {:.3}{unit}/s", sd * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_leave_the_file_or_nothing() {
        let dir = std::env::temp_dir().join(format!("bench-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        write_atomically(&path, b"{}\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
        // A failed write leaves neither a half file nor the temporary one.
        let missing = dir.join("no-such-dir").join("out.json");
        assert!(write_atomically(&missing, b"x").is_err());
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rates_are_scaled_with_their_spread() {
        assert_eq!(rate_with_sd(2_460_000.0, 9_000.0), "2.460 \u{b1} 0.009M/s");
        assert_eq!(rate_with_sd(35_123.0, 456.0), "35.123 \u{b1} 0.456K/s");
        assert_eq!(rate_with_sd(12.5, 0.5), "12.500 \u{b1} 0.500/s");
    }
}
