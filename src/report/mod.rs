//! Reports: the one [`reporter::Reporter`] that prints a run's lines (the
//! kernel runner's text format, perf bench's), the console (lines and progress
//! bar), and the exporters of a result (JSON, CSV, SVG plot) behind one trait,
//! one module each. No output line is built outside this module.

pub mod compare;
pub mod console;
pub mod csv;
pub mod json;
pub mod listing;
pub mod output;
pub mod perf;
pub mod plot;
pub mod profile;
pub mod reporter;
pub mod text;

use crate::config::OutputTarget;
use crate::error::Result;
use crate::results::ResultFile;

/// One output format of a kept result.
pub trait Exporter {
    /// The flag that asks for it, for messages.
    fn flag(&self) -> &'static str;

    /// The whole result in this format.
    fn render(&self, result: &ResultFile) -> Result<Vec<u8>>;

    /// Writes the result to `target` (a file: whole or not at all).
    fn export(&self, result: &ResultFile, target: &OutputTarget) -> Result<()> {
        output::write(target, &self.render(result)?)
    }
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
    fn rates_are_scaled_with_their_spread() {
        assert_eq!(rate_with_sd(2_460_000.0, 9_000.0), "2.460 \u{b1} 0.009M/s");
        assert_eq!(rate_with_sd(35_123.0, 456.0), "35.123 \u{b1} 0.456K/s");
        assert_eq!(rate_with_sd(12.5, 0.5), "12.500 \u{b1} 0.500/s");
    }
}
