//! What the history keeps of one result: the benchmark, each figure with
//! its unit, better direction and per-run values, and the context that
//! makes the numbers comparable (kernel, machine, bench, the options that
//! change the work, the time). Plain values: nothing here knows how a
//! figure was measured, so entries from a result file, a BMF file or
//! another machine's history are alike.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::{run_stats, Better};

/// One entry of the history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// Names the measurement wherever it is kept: the same result added or
    /// merged twice is one entry.
    pub uid: String,
    pub benchmark: String,
    /// Seconds since the epoch (UTC) when it was measured.
    pub time: i64,
    pub kernel: KernelId,
    pub machine: MachineId,
    pub tool: ToolId,
    /// The options that change the work (producers, the benchmark's own).
    pub options: BTreeMap<String, String>,
    /// What else its source said (`--label KEY=VALUE`).
    pub labels: BTreeMap<String, String>,
    /// Where it came from: `run`, `result-file` or `bmf`.
    pub source: String,
    pub figures: Vec<FigureValues>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelId {
    pub release: String,
    /// `uname -v`: the build, where known.
    pub version: String,
}

/// The machine, as far as its source says: a host name where known, the
/// CPU and how many, and whether it ran virtualised (`none`, a hypervisor,
/// or `tcg` for an emulated guest).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct MachineId {
    pub name: String,
    pub cpu_model: String,
    pub cpus: u32,
    pub virtualised: String,
}

impl MachineId {
    /// How it is shown and told apart from the others.
    pub fn label(&self) -> String {
        let mut label = String::new();
        if !self.name.is_empty() {
            label = format!("{}: ", self.name);
        }
        label.push_str(if self.cpu_model.is_empty() {
            "unknown CPU"
        } else {
            &self.cpu_model
        });
        if self.cpus > 0 {
            label.push_str(&format!(", {} CPUs", self.cpus));
        }
        if !self.virtualised.is_empty() && self.virtualised != "none" {
            label.push_str(&format!(", {}", self.virtualised));
        }
        label
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolId {
    pub version: String,
    pub commit: String,
}

/// One figure of an entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureValues {
    pub name: String,
    pub unit: String,
    pub better: Better,
    /// One value a run (a BMF measure has one).
    pub values: Vec<f64>,
    /// The interval its source gave (a BMF measure's lower and upper
    /// values); absent for per-run values, whose interval is computed.
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// A figure's value in an entry and its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl FigureValues {
    /// Its value (the mean of the runs) and its interval: the 95 %
    /// confidence interval over two runs or more, else what the source gave,
    /// else the value itself. Where every value is positive (a rate, a time)
    /// the interval is taken on their logarithms, as `bench compare`'s: a
    /// quantity that cannot be negative never gets a negative bound (two runs
    /// of 90K and 110K give 27.8K .. 356.0K, not -27.1K .. 227.1K).
    pub fn point(&self) -> Option<Point> {
        let stats = run_stats(&self.values)?;
        let (low, high) = match (stats.ci95, self.low, self.high) {
            (Some(half), _, _) => match log_interval(&self.values) {
                Some((low, high)) => (low.min(stats.mean), high.max(stats.mean)),
                None => (stats.mean - half, stats.mean + half),
            },
            (None, Some(low), Some(high)) => (low, high),
            _ => (stats.mean, stats.mean),
        };
        Some(Point {
            value: stats.mean,
            low,
            high,
        })
    }
}

/// The 95 % interval of `values` on their logarithms, back on their scale;
/// `None` unless every value is positive and there are two or more.
fn log_interval(values: &[f64]) -> Option<(f64, f64)> {
    if values.iter().any(|&v| v <= 0.0 || !v.is_finite()) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let stats = run_stats(&logs)?;
    let half = stats.ci95?;
    Some(((stats.mean - half).exp(), (stats.mean + half).exp()))
}

impl Entry {
    pub fn figure(&self, name: &str) -> Option<&FigureValues> {
        self.figures.iter().find(|f| f.name == name)
    }

    /// The options, as one line: `producers=1 repeat=30`.
    pub fn options_line(&self) -> String {
        let words: Vec<String> = self
            .options
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        words.join(" ")
    }

    /// What a series holds together: entries of one benchmark, machine and
    /// options are comparable, others are not.
    pub fn series_key(&self) -> (String, String, String) {
        (
            self.benchmark.clone(),
            self.machine.label(),
            self.options_line(),
        )
    }
}

/// The `--label` keys that fill an entry's context rather than its labels.
pub const CONTEXT_LABELS: &[&str] = &[
    "kernel",
    "kernel-version",
    "machine",
    "cpu",
    "cpus",
    "virtualised",
    "version",
    "commit",
];

impl Entry {
    /// `labels` applied: the keys of [`CONTEXT_LABELS`] set the kernel, the
    /// machine and bench's version (what a BMF file, or an older result
    /// file, does not carry); the others are kept as labels. Then the uid.
    pub fn labelled(mut self, labels: &BTreeMap<String, String>) -> Entry {
        for (key, value) in labels {
            let value = value.clone();
            match key.as_str() {
                "kernel" => self.kernel.release = value,
                "kernel-version" => self.kernel.version = value,
                "machine" => self.machine.name = value,
                "cpu" => self.machine.cpu_model = value,
                "cpus" => self.machine.cpus = value.parse().unwrap_or(self.machine.cpus),
                "virtualised" => self.machine.virtualised = value,
                "version" => self.tool.version = value,
                "commit" => self.tool.commit = value,
                _ => {
                    self.labels.insert(key.clone(), value);
                }
            }
        }
        self.uid = self.content_uid();
        self
    }
}

/// The uid of an entry made of `parts`: two FNV-1a hashes (64 bits each,
/// two offset bases) of its identifying text, in hex. Stable across
/// machines and versions, as merge needs.
pub fn uid_of(parts: &[&str]) -> String {
    let hash = |basis: u64| {
        parts.iter().fold(basis, |h, part| {
            part.bytes()
                .chain(std::iter::once(0xff))
                .fold(h, |h, byte| {
                    (h ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
                })
        })
    };
    format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x6c62_272e_07bb_0142)
    )
}

impl Entry {
    /// The uid its measurement gives: the benchmark, the time, the kernel's
    /// release, the machine, bench, the options and every figure's values.
    /// Not what may be known or not of the same result (`uname -v`, the host
    /// name, labels, its source): a run appended with `--history` and its
    /// result file added later are one entry.
    pub fn content_uid(&self) -> String {
        let figures: Vec<String> = self
            .figures
            .iter()
            .map(|f| {
                format!(
                    "{}|{}|{:?}|{:?}|{:?}|{:?}",
                    f.name, f.unit, f.better, f.values, f.low, f.high
                )
            })
            .collect();
        let options = self.options_line();
        let time = self.time.to_string();
        let cpus = self.machine.cpus.to_string();
        let mut parts = vec![
            self.benchmark.as_str(),
            &time,
            &self.kernel.release,
            &self.machine.name,
            &self.machine.cpu_model,
            &cpus,
            &self.machine.virtualised,
            &self.tool.version,
            &self.tool.commit,
            &options,
        ];
        parts.extend(figures.iter().map(String::as_str));
        uid_of(&parts)
    }
}

/// An entry of benchmark `b` at `time` with one figure, `name` in `unit`,
/// of one value, nothing else known: what the tests build series of.
#[cfg(test)]
pub fn bare(time: i64, (name, unit, better): (&str, &str, Better), value: f64) -> Entry {
    Entry {
        uid: String::new(),
        benchmark: "b".into(),
        time,
        kernel: KernelId::default(),
        machine: MachineId::default(),
        tool: ToolId::default(),
        options: BTreeMap::new(),
        labels: BTreeMap::new(),
        source: "bmf".into(),
        figures: vec![FigureValues {
            name: name.into(),
            unit: unit.into(),
            better,
            values: vec![value],
            low: None,
            high: None,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_the_mean_with_its_interval() {
        let figure = FigureValues {
            name: "hits".into(),
            unit: "hits/s".into(),
            better: Better::Higher,
            values: vec![10.0, 12.0, 11.0],
            low: None,
            high: None,
        };
        let point = figure.point().unwrap();
        assert!((point.value - 11.0).abs() < 1e-12);
        assert!(point.low < 11.0 && point.high > 11.0);
        // Two runs far apart: the interval of a rate stays above zero.
        let rate = FigureValues {
            values: vec![50e3, 150e3],
            ..figure.clone()
        };
        let wide = rate.point().unwrap();
        assert!(wide.low > 0.0 && wide.low < 50e3, "{wide:?}");
        assert!(wide.high > 150e3, "{wide:?}");
        // A figure that may be negative keeps the interval on its values.
        let signed = FigureValues {
            values: vec![-1.0, 1.0],
            ..figure.clone()
        };
        assert!(signed.point().unwrap().low < -1.0);
        let bmf = FigureValues {
            values: vec![5.0],
            low: Some(4.0),
            high: Some(6.5),
            ..figure
        };
        assert_eq!(
            bmf.point(),
            Some(Point {
                value: 5.0,
                low: 4.0,
                high: 6.5
            })
        );
    }

    #[test]
    fn uids_tell_contents_apart() {
        assert_eq!(uid_of(&["a", "b"]), uid_of(&["a", "b"]));
        assert_ne!(uid_of(&["a", "b"]), uid_of(&["ab"]));
        assert_eq!(uid_of(&["x"]).len(), 32);
    }
}
