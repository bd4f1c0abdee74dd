//! The history's entries as series, and where a series changed. A series is
//! one figure of one benchmark, in one unit with one better direction, on one
//! machine with one set of options: only those entries measure the same
//! thing (`hits` in hits/s and in ns/hit are two series). It is in time order, or in kernel
//! release order (`--by kernel`), one point per entry.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;

use super::entry::{Entry, Point};
use super::time;
use crate::stats::{change_points, Better, ChangeOptions};

/// The order of a series' points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Time,
    /// By kernel release (`5.10.0-33` before `6.1.0-18`), then time.
    Kernel,
}

/// One series: its identity, and its entries with their points.
pub struct Series<'a> {
    pub benchmark: String,
    pub figure: String,
    pub unit: String,
    pub better: Better,
    pub machine: String,
    pub options: String,
    pub points: Vec<(&'a Entry, Point)>,
}

impl Series<'_> {
    /// `benchmark figure`, with the machine and options where `several`
    /// series share the benchmark.
    pub fn title(&self) -> String {
        format!("{} {} ({})", self.benchmark, self.figure, self.unit)
    }

    pub fn values(&self) -> Vec<f64> {
        self.points.iter().map(|(_, point)| point.value).collect()
    }
}

/// What tells series apart: the entry's benchmark, machine and options,
/// and the figure's name, unit and better direction.
type SeriesKey = ((String, String, String), (String, String, Better));

/// The series of `entries` (of `figure` alone, when named), in `order`.
pub fn series<'a>(entries: &'a [Entry], figure: Option<&str>, order: Order) -> Vec<Series<'a>> {
    let mut grouped: BTreeMap<SeriesKey, Series<'a>> = BTreeMap::new();
    for entry in entries {
        for values in &entry.figures {
            if figure.is_some_and(|name| name != values.name) {
                continue;
            }
            let Some(point) = values.point() else {
                continue;
            };
            let (benchmark, machine, options) = entry.series_key();
            let key = (
                (benchmark.clone(), machine.clone(), options.clone()),
                (values.name.clone(), values.unit.clone(), values.better),
            );
            grouped
                .entry(key)
                .or_insert_with(|| Series {
                    benchmark,
                    figure: values.name.clone(),
                    unit: values.unit.clone(),
                    better: values.better,
                    machine,
                    options,
                    points: Vec::new(),
                })
                .points
                .push((entry, point));
        }
    }
    let mut all: Vec<Series<'a>> = grouped.into_values().collect();
    if order == Order::Kernel {
        for series in &mut all {
            // Stable: entries of one kernel stay in time order.
            series
                .points
                .sort_by(|(a, _), (b, _)| kernel_order(&a.kernel.release, &b.kernel.release));
        }
    }
    all
}

/// Kernel releases by their numbers (`5.10.0` < `6.1.0` < `6.12.1`), then
/// as text.
pub fn kernel_order(a: &str, b: &str) -> Ordering {
    let numbers = |release: &str| -> Vec<u64> {
        release
            .split(|c: char| !c.is_ascii_digit())
            .take_while(|part| !part.is_empty())
            .take(3)
            .filter_map(|part| part.parse().ok())
            .collect()
    };
    numbers(a).cmp(&numbers(b)).then_with(|| a.cmp(b))
}

/// Which way a change went, judged by the figure's better direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Judged {
    Regression,
    Improvement,
}

impl Judged {
    pub fn word(self) -> &'static str {
        match self {
            Judged::Regression => "regression",
            Judged::Improvement => "improvement",
        }
    }
}

/// An entry beside a change, as the change names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Beside {
    pub time: String,
    pub kernel: String,
    pub bench_version: String,
}

impl Beside {
    fn of(entry: &Entry) -> Beside {
        let mut version = entry.tool.version.clone();
        if !entry.tool.commit.is_empty() {
            version = format!("{version} ({})", entry.tool.commit);
        }
        Beside {
            time: time::show(entry.time),
            kernel: entry.kernel.release.clone(),
            bench_version: version,
        }
    }
}

/// A change point of a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub benchmark: String,
    pub figure: String,
    pub unit: String,
    pub better: Better,
    pub machine: String,
    pub options: String,
    /// The 0-based position in the series of the first entry after it.
    pub index: usize,
    /// The means of the entries' values between the change points around it.
    pub before: f64,
    pub after: f64,
    pub change_pct: f64,
    pub verdict: Judged,
    /// The permutation p-value that found it.
    pub p: f64,
    /// The entries on either side.
    pub last_before: Beside,
    pub first_after: Beside,
}

/// The change points of `series`.
pub fn changes(series: &Series<'_>, options: &ChangeOptions) -> Vec<Change> {
    change_points(&series.values(), options)
        .into_iter()
        .map(|point| {
            let up = point.mean_after > point.mean_before;
            let verdict = match up == (series.better == Better::Higher) {
                true => Judged::Improvement,
                false => Judged::Regression,
            };
            Change {
                benchmark: series.benchmark.clone(),
                figure: series.figure.clone(),
                unit: series.unit.clone(),
                better: series.better,
                machine: series.machine.clone(),
                options: series.options.clone(),
                index: point.index,
                before: point.mean_before,
                after: point.mean_after,
                change_pct: point.change_pct(),
                verdict,
                p: point.p,
                last_before: Beside::of(series.points[point.index - 1].0),
                first_after: Beside::of(series.points[point.index].0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::bare;

    fn entry(time: i64, unit: &str, better: Better, value: f64) -> Entry {
        bare(time, ("hits", unit, better), value)
    }

    /// A figure in hits/s (higher is better) and the same name in ns/hit
    /// (lower) are two series, never one.
    #[test]
    fn a_series_is_one_unit_and_one_direction() {
        let entries = [
            entry(1, "hits/s", Better::Higher, 100e6),
            entry(2, "ns/hit", Better::Lower, 9.9),
            entry(3, "hits/s", Better::Higher, 101e6),
            entry(4, "hits/s", Better::Lower, 5.0),
        ];
        let all = series(&entries, None, Order::Time);
        let shape: Vec<(&str, Better, usize)> = all
            .iter()
            .map(|s| (s.unit.as_str(), s.better, s.points.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("hits/s", Better::Higher, 2),
                ("hits/s", Better::Lower, 1),
                ("ns/hit", Better::Lower, 1)
            ]
        );
    }

    #[test]
    fn kernels_sort_by_their_numbers() {
        let mut releases = vec![
            "6.12.57+deb13-amd64",
            "6.1.0-18-amd64",
            "5.10.0-33-amd64",
            "6.18.0",
        ];
        releases.sort_by(|a, b| kernel_order(a, b));
        assert_eq!(
            releases,
            [
                "5.10.0-33-amd64",
                "6.1.0-18-amd64",
                "6.12.57+deb13-amd64",
                "6.18.0"
            ]
        );
    }
}
