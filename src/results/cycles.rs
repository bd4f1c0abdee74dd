//! What an attach benchmark keeps of a cycle, and attach churn of its
//! measured seconds: result types, which the report, the figures and
//! `compare` read. The cycles themselves are run by `attach/run.rs`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::runner::cycles::{ChurnCycle, Fired};

/// Wall and CPU time of one step of a cycle (its attach, or its detach).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTime {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub system_ns: u64,
}

impl StepTime {
    /// Wall time not spent on this thread's CPU: waiting.
    pub fn waiting_ns(&self) -> u64 {
        self.wall_ns
            .saturating_sub(self.user_ns.saturating_add(self.system_ns))
    }

    /// Wall microseconds per probe.
    pub fn us_per_probe(&self, probes: usize) -> f64 {
        self.wall_ns as f64 / 1e3 / probes.max(1) as f64
    }
}

/// What a cycle's probes were attached with: the BPF links this process held
/// once they were, by the kernel's link type (as `/proc/self/fdinfo` says,
/// so that it says what libbpf chose where libbpf chooses), and the kernel
/// functions left out because kprobes refuse them. The result file keeps the
/// sentence the report prints: `1 uprobe_multi link`, `20 perf_event links;
/// skipped 2 functions kprobes refuse: a, b`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachedWith {
    /// Links by the kernel's link type.
    pub links: BTreeMap<String, usize>,
    pub skipped: Skipped,
}

/// The functions a cycle left out: how many, and those the sentence names
/// (every one of up to four; the first three of more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub count: usize,
    pub named: Vec<String>,
}

/// The most names a skipped list spells out; past it, three and a count.
const NAMED_MAX: usize = 4;

impl Skipped {
    /// The functions `names`, as the sentence keeps them.
    pub fn of(names: &[String]) -> Skipped {
        let named = match names.len() {
            n if n <= NAMED_MAX => names.to_vec(),
            _ => names[..NAMED_MAX - 1].to_vec(),
        };
        Skipped {
            count: names.len(),
            named,
        }
    }
}

impl fmt::Display for AttachedWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.links.is_empty() {
            f.write_str("no link")?;
        }
        for (i, (kind, n)) in self.links.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{n} {kind} link{}", plural(*n))?;
        }
        let Skipped { count, named } = &self.skipped;
        if *count == 0 {
            return Ok(());
        }
        write!(
            f,
            "; skipped {count} function{} kprobes refuse: {}",
            plural(*count),
            named.join(", ")
        )?;
        if *count > named.len() {
            write!(f, " and {} more", count - named.len())?;
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl FromStr for AttachedWith {
    type Err = String;

    /// Reads back the sentence [`Display`](fmt::Display) writes.
    fn from_str(text: &str) -> Result<AttachedWith, String> {
        let bad = || format!("'{text}' does not say what a cycle attached with");
        let (links_text, skipped_text) = match text.split_once("; skipped ") {
            Some((links, skipped)) => (links, Some(skipped)),
            None => (text, None),
        };
        let mut links = BTreeMap::new();
        if links_text != "no link" {
            for item in links_text.split(", ") {
                let (n, rest) = item.split_once(' ').ok_or_else(bad)?;
                let kind = rest
                    .strip_suffix(" links")
                    .or_else(|| rest.strip_suffix(" link"))
                    .ok_or_else(bad)?;
                links.insert(kind.to_string(), n.parse().map_err(|_| bad())?);
            }
        }
        let skipped = match skipped_text {
            None => Skipped::default(),
            Some(rest) => {
                let (count, rest) = rest.split_once(' ').ok_or_else(bad)?;
                let (_, names) = rest.split_once(": ").ok_or_else(bad)?;
                let names = match names.strip_suffix(" more") {
                    Some(listed) => listed.rsplit_once(" and ").ok_or_else(bad)?.0,
                    None => names,
                };
                Skipped {
                    count: count.parse().map_err(|_| bad())?,
                    named: names.split(", ").map(str::to_string).collect(),
                }
            }
        };
        Ok(AttachedWith { links, skipped })
    }
}

impl Serialize for AttachedWith {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AttachedWith {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AttachedWith, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One cycle's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CycleRecord {
    pub probes: usize,
    pub links: usize,
    pub attached_with: AttachedWith,
    pub attach: StepTime,
    pub detach: StepTime,
    /// The verify pass; `None` where the sites cannot be driven.
    pub fired: Option<Fired>,
    /// The first cycle the process began: it pays what a tracer starting up
    /// pays, which a re-attach does not, and is kept out of the statistics
    /// over runs when warm cycles exist.
    #[serde(default)]
    pub cold: bool,
}

/// The churn of a run's measured seconds, as kept in its record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChurnRecord {
    /// Threads attaching and detaching (`-c`); 0: the run without churn.
    pub threads: usize,
    /// Cycles that ended within the measured seconds.
    pub cycles: u64,
    pub seconds: f64,
    /// Mean wall time of those cycles' attach and detach, µs.
    pub attach_us: f64,
    pub detach_us: f64,
}

impl ChurnRecord {
    /// The cycles of `all` that ended between `start` and `end`.
    pub fn over(
        threads: usize,
        all: &[ChurnCycle],
        start: std::time::Instant,
        end: std::time::Instant,
    ) -> ChurnRecord {
        let measured: Vec<&ChurnCycle> = all
            .iter()
            .filter(|c| c.ended >= start && c.ended <= end)
            .collect();
        let mean_us = |pick: fn(&ChurnCycle) -> u64| match measured.len() {
            0 => 0.0,
            n => measured.iter().map(|c| pick(c) as f64).sum::<f64>() / n as f64 / 1e3,
        };
        ChurnRecord {
            threads,
            cycles: measured.len() as u64,
            seconds: end.saturating_duration_since(start).as_secs_f64(),
            attach_us: mean_us(|c| c.attach_ns),
            detach_us: mean_us(|c| c.detach_ns),
        }
    }

    pub fn cycles_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.cycles as f64 / self.seconds
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn waiting_is_wall_minus_cpu() {
        let t = StepTime {
            wall_ns: 10_000,
            user_ns: 1_000,
            system_ns: 2_000,
        };
        assert_eq!(t.waiting_ns(), 7_000);
        assert_eq!(t.us_per_probe(2), 5.0);
    }

    #[test]
    fn what_a_cycle_attached_with_reads_back_as_written() {
        let names = |n: usize| (0..n).map(|i| format!("f{i}")).collect::<Vec<_>>();
        let with = |links: &[(&str, usize)], skipped: usize| AttachedWith {
            links: links.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            skipped: Skipped::of(&names(skipped)),
        };
        let cases = [
            (with(&[], 0), "no link"),
            (with(&[("uprobe_multi", 1)], 0), "1 uprobe_multi link"),
            (
                with(&[("perf_event", 20), ("kprobe_multi", 1)], 0),
                "1 kprobe_multi link, 20 perf_event links",
            ),
            (
                with(&[("perf_event", 3)], 1),
                "3 perf_event links; skipped 1 function kprobes refuse: f0",
            ),
            (
                with(&[("perf_event", 3)], 4),
                "3 perf_event links; skipped 4 functions kprobes refuse: f0, f1, f2, f3",
            ),
            (
                with(&[("perf_event", 3)], 7),
                "3 perf_event links; skipped 7 functions kprobes refuse: f0, f1, f2 and 4 more",
            ),
        ];
        for (value, text) in cases {
            assert_eq!(value.to_string(), text);
            assert_eq!(text.parse::<AttachedWith>(), Ok(value.clone()), "{text}");
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<AttachedWith>(&json).unwrap(), value);
        }
        assert!("50 uprobe perf events".parse::<AttachedWith>().is_err());
    }

    #[test]
    fn churn_keeps_the_cycles_that_ended_in_the_measured_seconds() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + std::time::Duration::from_millis(ms);
        let cycle = |ms, attach_ns, detach_ns| ChurnCycle {
            ended: at(ms),
            attach_ns,
            detach_ns,
        };
        // Warm-up's cycle (before 1 s) and the one after the end are out.
        let all = [
            cycle(500, 9_000, 9_000),
            cycle(1_200, 1_000, 3_000),
            cycle(2_900, 3_000, 5_000),
            cycle(3_100, 9_000, 9_000),
        ];
        let churn = ChurnRecord::over(1, &all, at(1_000), at(3_000));
        assert_eq!((churn.threads, churn.cycles), (1, 2));
        assert!((churn.seconds - 2.0).abs() < 1e-9);
        assert!((churn.cycles_per_sec() - 1.0).abs() < 1e-9);
        assert!((churn.attach_us - 2.0).abs() < 1e-9);
        assert!((churn.detach_us - 4.0).abs() < 1e-9);
        let none = ChurnRecord::over(0, &[], at(1_000), at(3_000));
        assert_eq!((none.cycles, none.attach_us), (0, 0.0));
    }
}
