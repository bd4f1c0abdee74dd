//! What a run is judged by: the figures a benchmark declares, each a
//! quantity over its channels ([`expr`]) with a unit, the direction that is
//! better and how it prints. A run keeps every figure's value (and each
//! second's, where it has them), and a result file carries their table
//! ([`FigureDecl`]): the statistics over runs, `--precision`, the closing
//! table, `compare`, the exports and the history read those, never the
//! binary's idea of the benchmark.

pub mod expr;

use serde::{Deserialize, Serialize};

use crate::channels::{Channel, HITS as HITS_CHANNEL, OPERATIONS as OPERATIONS_CHANNEL};
pub use crate::stats::Better;
pub use expr::{Agg, FinalOf, Frame, Sec, View};

/// One figure of a benchmark.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// Its name, unique within a benchmark (`hits`, `memory`, `attach`).
    pub name: &'static str,
    /// The unit of its value (`hits/s`, `MiB`, `µs/probe`).
    pub unit: &'static str,
    pub better: Better,
    pub show: Show,
    pub value: Value,
}

/// Where a figure's value comes from.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// A quantity each second: the run's value is its mean over the measured
    /// seconds (a fixed run: over its whole length), and one run is judged
    /// against another by the seconds.
    PerSecond(&'static Sec),
    /// A quantity of the whole run, one value a run.
    OfRun(&'static Agg),
    /// An attach cycle's wall time to attach, per probe, in µs.
    Attach,
    /// An attach cycle's wall time to detach, per probe, in µs.
    Detach,
}

/// How a figure's value prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Show {
    /// A rate scaled to M or K per second: `2.460M/s`.
    Rate,
    /// So many decimals, then the unit: `0.63 MiB`.
    Decimals(u8),
}

/// A figure as a result file declares it: what its values are, without
/// how they were worked out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureDecl {
    pub name: String,
    pub unit: String,
    pub better: Better,
    pub show: Show,
    /// Each measured second has a value of it (an observation within a run).
    #[serde(default)]
    pub per_second: bool,
}

impl Figure {
    /// Its declaration in a result file.
    pub fn decl(&self) -> FigureDecl {
        FigureDecl {
            name: self.name.to_string(),
            unit: self.unit.to_string(),
            better: self.better,
            show: self.show,
            per_second: matches!(self.value, Value::PerSecond(_)),
        }
    }

    /// The channels it reads.
    pub fn channels(&self) -> Vec<&'static Channel> {
        let mut out = Vec::new();
        match self.value {
            Value::PerSecond(sec) => sec.channels(&mut out),
            Value::OfRun(agg) => agg.channels(&mut out),
            Value::Attach | Value::Detach => {}
        }
        out
    }
}

impl FigureDecl {
    /// A value as the lines print it.
    pub fn show(&self, value: f64) -> String {
        match self.show {
            Show::Rate => rate(value),
            Show::Decimals(d) => format!("{value:.*} {}", d as usize, self.unit),
        }
    }

    /// A mean with its spread, both in the mean's unit.
    pub fn show_spread(&self, mean: f64, sd: f64) -> String {
        match self.show {
            Show::Rate => rate_with_sd(mean, sd),
            Show::Decimals(d) => {
                let d = d as usize;
                format!("{mean:.d$} \u{b1} {sd:.d$} {}", self.unit)
            }
        }
    }
}

/// One run's value of a figure, and each measured second's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureRun {
    /// `null` where the run has none (nothing measured, or a quantity
    /// that does not exist: a ratio over no event).
    pub value: Option<f64>,
    /// The measured seconds' values, for a figure of each second (those
    /// where it exists); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds: Vec<f64>,
}

/// The rate of hits: the kernel runner's headline.
pub const HITS: Figure = Figure {
    name: "hits",
    unit: "hits/s",
    better: Better::Higher,
    show: Show::Rate,
    value: Value::PerSecond(&Sec::Rate(&HITS_CHANNEL)),
};

/// The rate of operations: perf's headline.
pub const OPERATIONS: Figure = Figure {
    name: "operations",
    unit: "operations/s",
    value: Value::PerSecond(&Sec::Rate(&OPERATIONS_CHANNEL)),
    ..HITS
};

/// The wall time an attach cycle took to attach, per probe.
pub const ATTACH: Figure = Figure {
    name: "attach",
    unit: "\u{b5}s/probe",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::Attach,
};

/// The wall time an attach cycle took to detach, per probe.
pub const DETACH: Figure = Figure {
    name: "detach",
    value: Value::Detach,
    ..ATTACH
};

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

/// `2.460M/s`.
pub fn rate(per_sec: f64) -> String {
    let (value, unit) = scaled(per_sec);
    format!("{value:.3}{unit}/s")
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
    fn rates_are_scaled_and_times_are_not() {
        assert_eq!(rate(2_460_000.0), "2.460M/s");
        assert_eq!(rate(2_610.0), "2.610K/s");
        assert_eq!(rate_with_sd(2_460_000.0, 9_000.0), "2.460 \u{b1} 0.009M/s");
        let attach = ATTACH.decl();
        assert_eq!(attach.show(2_609.6), "2609.600 \u{b5}s/probe");
        assert_eq!(
            attach.show_spread(1.5, 0.25),
            "1.500 \u{b1} 0.250 \u{b5}s/probe"
        );
        assert_eq!(HITS.decl().show(2_460_000.0), "2.460M/s");
        assert_eq!(HITS.better, Better::Higher);
        assert_eq!(ATTACH.better, Better::Lower);
        assert_ne!(ATTACH.decl(), DETACH.decl());
        assert!(HITS.decl().per_second && !ATTACH.decl().per_second);
    }
}
