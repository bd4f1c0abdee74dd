//! `--sweep PARAM=LIST`: the same benchmark once per value of one parameter.

use crate::benches::{self, applies, Benchmark};
use crate::channels::{DROPS, HITS};
use crate::config::{BenchOption, Body, RunConfig, SweepName, SweepParam, SweepSpec, MAX_THREADS};
use crate::error::{Error, Result};
use crate::figures::{Agg, Sec};
use crate::lists::{parse_ranges, ListSyntax};
pub use crate::results::BodyRow;
use crate::results::RunRecord;
use crate::stats::{self, MeanSd};

/// The most values one sweep may take.
pub const MAX_POINTS: usize = 256;

/// `--sweep` as parsed: the parameter, not yet resolved against the
/// benchmark, and its values (a body's index in [`Body::ALL`] for `body`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepRequest {
    pub param: SweepName,
    pub values: Vec<u64>,
}

impl SweepRequest {
    /// The bodies swept, for a sweep of bodies.
    pub fn bodies(&self) -> Option<Vec<Body>> {
        (self.param == SweepName::Body).then(|| {
            self.values
                .iter()
                .filter_map(|&v| Body::from_index(v))
                .collect()
        })
    }
}

/// Parses `body=count,ktime`: the bodies by name, kept as their indices in
/// [`Body::ALL`].
fn parse_bodies(list: &str) -> std::result::Result<Vec<u64>, String> {
    let mut values = Vec::new();
    for name in list.split(',').map(str::trim) {
        let body = Body::from_name(name)
            .ok_or_else(|| format!("'{name}' is not a body; the bodies are {}", Body::names()))?;
        if values.contains(&body.index()) {
            return Err(format!("the body {name} is listed twice"));
        }
        values.push(body.index());
    }
    Ok(values)
}

/// Parses `producers=1,2,4`, `trig-batch-iters=1..8` (an inclusive range) or
/// `body=count,ktime` (names).
pub fn parse_spec(text: &str) -> std::result::Result<SweepRequest, String> {
    const SYNTAX: ListSyntax = ListSyntax {
        range: "..",
        item: "a whole number",
        range_name: "range",
    };
    let (param, list) = text
        .split_once('=')
        .ok_or_else(|| format!("expected PARAM=LIST such as producers=1,2,4, got '{text}'"))?;
    let param = param.trim();
    if param.is_empty() {
        return Err("the parameter name is empty".into());
    }
    let param = SweepName::parse(param);
    if param == SweepName::Body {
        return Ok(SweepRequest {
            param,
            values: parse_bodies(list)?,
        });
    }
    let mut values = Vec::new();
    for (lo, hi) in parse_ranges(list, &SYNTAX)? {
        if hi - lo >= MAX_POINTS as u64 || values.len() + (hi - lo) as usize >= MAX_POINTS {
            return Err(format!("a sweep takes at most {MAX_POINTS} values"));
        }
        values.extend(lo..=hi);
    }
    let mut seen = Vec::new();
    for v in &values {
        if seen.contains(v) {
            return Err(format!("the value {v} is listed twice"));
        }
        seen.push(*v);
    }
    Ok(SweepRequest { param, values })
}

/// Resolves the swept parameter against `bench`: the producer count (or the
/// benchmark's name for it), or one of the benchmark's options.
pub fn resolve(request: &SweepRequest, bench: &dyn Benchmark) -> Result<SweepSpec> {
    let Some(param) = applies::sweep_param(bench, &request.param) else {
        let name = request.param.as_str();
        let names: Vec<&str> = bench.options().iter().map(|o| o.long()).collect();
        let body = if bench.takes_bodies() { ", body" } else { "" };
        let consumers = if bench.has_consumers() {
            ", consumers"
        } else {
            ""
        };
        return Err(Error::usage(format!(
            "--sweep {name}: {} has no such option; it sweeps producers{body}{consumers}{}",
            bench.name(),
            names.iter().map(|n| format!(", {n}")).collect::<String>()
        )));
    };
    Ok(SweepSpec {
        param,
        values: request.values.clone(),
    })
}

/// Whether `spec` sweeps the producer count (under either of its names).
pub fn is_producers(spec: &SweepSpec) -> bool {
    matches!(spec.param, SweepParam::Producers { .. })
}

/// The configuration of each point, each checked as a single run would be.
pub fn points(spec: &SweepSpec, bench: &dyn Benchmark, base: &RunConfig) -> Result<Vec<RunConfig>> {
    spec.values
        .iter()
        .map(|&value| {
            let mut config = base.clone();
            match spec.param {
                SweepParam::Producers { name } => {
                    if value == 0 || value > MAX_THREADS {
                        return Err(Error::usage(format!(
                            "--sweep {name}={value}: producers must be between 1 and {MAX_THREADS}"
                        )));
                    }
                    config.producers = value as usize;
                }
                SweepParam::Body => {
                    let body = Body::from_index(value).ok_or_else(|| {
                        Error::usage(format!("--sweep body: no body has the index {value}"))
                    })?;
                    // Consumers drain the ringbuf body's ring, and only it has one.
                    if body != Body::Ringbuf {
                        config.consumers = 0;
                    }
                    config.body = body;
                    bench.check_global_options(&config)?;
                }
                SweepParam::Consumers => {
                    if value > MAX_THREADS {
                        return Err(Error::usage(format!(
                            "--sweep consumers={value}: consumers must be at most {MAX_THREADS}"
                        )));
                    }
                    config.consumers = value as usize;
                }
                SweepParam::Option(option) => {
                    let Some(value) = option.value_from_number(value) else {
                        let long = option.long();
                        return Err(Error::usage(match option {
                            BenchOption::Text(_) => format!(
                                "--sweep {long}: --{long} takes a word, and a sweep varies \
                                 numbers and flags only: run each value of --{long} on its own"
                            ),
                            _ => format!("--sweep {long}={value}: a flag takes 0 (off) and 1 (on)"),
                        }));
                    };
                    let mut given: Vec<_> = config.params.iter().collect();
                    for entry in given.iter_mut().filter(|(name, _)| *name == option.long()) {
                        entry.1 = value;
                    }
                    config.params = benches::resolve_params(bench, &given)?;
                    benches::check_option_needs(bench, &[option.long()], &config.params)?;
                }
            }
            bench.validate(&config)?;
            Ok(config)
        })
        .collect()
}

/// A probe's rate: its hits and the events its body dropped, per second.
const HITS_RATE: Sec = Sec::Rate(&HITS);
const DROPS_RATE: Sec = Sec::Div(&Sec::Declared(&DROPS), &Sec::Seconds);
const PROBE_RATE: Sec = Sec::Add(&HITS_RATE, &DROPS_RATE);

/// A run's mean of a rate per second; `None` without a measured second.
fn mean_of(run: &RunRecord, rate: &'static Sec, ticked: &[&str]) -> Option<f64> {
    let mean = Agg::Mean(rate).of(&run.view(ticked));
    mean.is_finite().then_some(mean)
}

/// One producer's time per hit in a run, from its probe rate.
fn ns_per_hit(run: &RunRecord, ticked: &[&str]) -> Option<f64> {
    let rate = mean_of(run, &PROBE_RATE, ticked)?;
    (rate > 0.0).then(|| run.producers.max(1) as f64 * 1e9 / rate)
}

/// The table of a body sweep: each body's rate and its cost per hit against
/// the count. `records` are the runs of each value, in round order;
/// `ticked` names the channels the benchmark reads each tick.
pub fn body_rows(values: &[u64], records: &[Vec<RunRecord>], ticked: &[&str]) -> Vec<BodyRow> {
    let count = values
        .iter()
        .position(|&v| Body::from_index(v) == Some(Body::Count));
    values
        .iter()
        .zip(records)
        .enumerate()
        .filter_map(|(i, (&value, runs))| {
            let body = Body::from_index(value)?;
            let measured: Vec<&RunRecord> = runs.iter().filter(|r| r.summary().is_some()).collect();
            let rate = match measured[..] {
                [] => return None,
                // One run: the mean and sd of its seconds.
                [one] => MeanSd {
                    mean: mean_of(one, &PROBE_RATE, ticked)?,
                    sd: Agg::Sd(&PROBE_RATE).of(&one.view(ticked)),
                },
                _ => {
                    let means: Vec<f64> = measured
                        .iter()
                        .filter_map(|r| mean_of(r, &PROBE_RATE, ticked))
                        .collect();
                    let stats = stats::run_stats(&means)?;
                    MeanSd {
                        mean: stats.mean,
                        sd: stats.sd,
                    }
                }
            };
            let sum = |rate: &'static Sec| -> f64 {
                measured
                    .iter()
                    .filter_map(|r| mean_of(r, rate, ticked))
                    .sum()
            };
            let (hits, drops) = (sum(&HITS_RATE), sum(&DROPS_RATE));
            let producers = runs.first().map_or(1, |r| r.producers.max(1));
            let cost_ns = count.filter(|&c| c != i).and_then(|c| {
                let paired: Vec<f64> = records[c]
                    .iter()
                    .zip(runs)
                    .filter_map(|(base, run)| {
                        Some(ns_per_hit(run, ticked)? - ns_per_hit(base, ticked)?)
                    })
                    .collect();
                stats::run_stats(&paired)
            });
            Some(BodyRow {
                body: body.name(),
                rate,
                drops_pct: if hits + drops > 0.0 {
                    drops / (hits + drops) * 100.0
                } else {
                    0.0
                },
                ns_per_hit: if rate.mean > 0.0 {
                    producers as f64 * 1e9 / rate.mean
                } else {
                    0.0
                },
                cost_ns,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse() {
        let s = parse_spec("producers=1,2,4").unwrap();
        assert_eq!((s.param, s.values), (SweepName::Producers, vec![1, 2, 4]));
        let s = parse_spec("rb-b2b=0,1").unwrap();
        assert_eq!(s.param, SweepName::Other("rb-b2b".into()));
        assert_eq!(s.bodies(), None);
        assert_eq!(
            parse_spec("trig-batch-iters=1..4").unwrap().values,
            vec![1, 2, 3, 4]
        );
        assert_eq!(
            parse_spec("breakpoints=0,2..3").unwrap().values,
            vec![0, 2, 3]
        );
    }

    #[test]
    fn parameters_resolve_against_the_benchmark() {
        let thread = benches::find("breakpoint-thread").unwrap();
        let spec = resolve(&parse_spec("parallelism=1,2").unwrap(), thread).unwrap();
        assert_eq!(
            spec.param,
            SweepParam::Producers {
                name: "parallelism"
            }
        );
        let spec = resolve(&parse_spec("threads=1,2").unwrap(), thread).unwrap();
        assert!(matches!(spec.param, SweepParam::Option(o) if o.long() == "threads"));
        let nop = benches::find("trig-uprobe-nop").unwrap();
        let err = resolve(&parse_spec("threads=1").unwrap(), nop).unwrap_err();
        assert!(err.to_string().contains("has no such option"), "{err}");
        assert!(resolve(&parse_spec("parallelism=1").unwrap(), nop).is_err());
    }

    #[test]
    fn bodies_sweep_by_name() {
        let s = parse_spec("body=count, ktime,ringbuf").unwrap();
        let names: Vec<&str> = s
            .values
            .iter()
            .map(|&v| Body::from_index(v).unwrap().name())
            .collect();
        assert_eq!(names, ["count", "ktime", "ringbuf"]);
        assert_eq!(
            s.bodies(),
            Some(vec![Body::Count, Body::Ktime, Body::Ringbuf])
        );
        assert!(parse_spec("body=count,nope")
            .unwrap_err()
            .contains("'nope' is not a body"));
        assert!(parse_spec("body=ktime,ktime")
            .unwrap_err()
            .contains("listed twice"));
        let nop = benches::find("trig-uprobe-nop").unwrap();
        assert_eq!(resolve(&s, nop).unwrap().param, SweepParam::Body);
        let baseline = benches::find("trig-syscall-count").unwrap();
        assert!(resolve(&s, baseline).is_err());
        // Only the ringbuf point keeps the consumers.
        let base = RunConfig {
            consumers: 2,
            ..nop.default_config().unwrap()
        };
        let points = points(&resolve(&s, nop).unwrap(), nop, &base).unwrap();
        let kept: Vec<(Body, usize)> = points.iter().map(|c| (c.body, c.consumers)).collect();
        assert_eq!(
            kept,
            [(Body::Count, 0), (Body::Ktime, 0), (Body::Ringbuf, 2)]
        );
    }

    /// A run of `producers` whose probe hit `hits` and dropped `drops` a
    /// second.
    fn run(producers: usize, hits: u64, drops: u64) -> RunRecord {
        let sample = stats::Sample {
            iteration: 0,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            warmup: false,
            values: vec![Some(hits), Some(drops)],
        };
        RunRecord {
            sweep_value: None,
            producers,
            params: Default::default(),
            placement: crate::results::PlacementRecord {
                producers: vec![None; producers],
                consumers: Vec::new(),
            },
            partial: false,
            outcome: crate::results::Outcome::timed(vec![sample], &[true, true]),
            repetition: None,
            noise: None,
            probe_path: None,
            profile: None,
            latency: None,
            figures: Default::default(),
            finals: Vec::new(),
            trigger: None,
        }
    }

    const TICKED: [&str; 2] = ["hits", "drops"];

    #[test]
    fn a_body_costs_its_time_per_hit_over_the_count_paired_by_round() {
        // count at 1 M/s then 2 M/s (1000 and 500 ns/hit); ktime at 0.5 and
        // 1 M/s (2000 and 1000 ns/hit): +1000 and +500 ns, mean +750.
        let values = [
            Body::Count.index(),
            Body::Ktime.index(),
            Body::Ringbuf.index(),
        ];
        let records = vec![
            vec![run(1, 1_000_000, 0), run(1, 2_000_000, 0)],
            vec![run(1, 500_000, 0), run(1, 1_000_000, 0)],
            // Dropped events are hits too: 0.25 + 0.25 M/s is 2000 ns/hit.
            vec![run(1, 250_000, 250_000), run(1, 250_000, 250_000)],
        ];
        let rows = body_rows(&values, &records, &TICKED);
        assert_eq!(rows[0].body, "count");
        assert_eq!(rows[0].cost_ns, None);
        let ktime = rows[1].cost_ns.unwrap();
        assert_eq!((ktime.runs, ktime.mean), (2, 750.0));
        assert!(ktime.ci95.is_some());
        let ringbuf = &rows[2];
        assert_eq!(ringbuf.drops_pct, 50.0);
        assert_eq!(ringbuf.ns_per_hit, 2000.0);
        assert_eq!(ringbuf.cost_ns.unwrap().mean, (1000.0 + 1500.0) / 2.0);
        // Per producer: two producers sharing 2 M/s take 1000 ns a hit each.
        let rows = body_rows(&values[..1], &[vec![run(2, 2_000_000, 0)]], &TICKED);
        assert_eq!(rows[0].ns_per_hit, 1000.0);
        // Without the count in the sweep, there is nothing to subtract.
        let rows = body_rows(&values[1..2], &records[1..2], &TICKED);
        assert_eq!(rows[0].cost_ns, None);
    }

    #[test]
    fn bad_specs_say_why() {
        for (text, needle) in [
            ("producers", "expected PARAM=LIST"),
            ("=1,2", "name is empty"),
            ("producers=1,x", "'x' is not a whole number"),
            ("producers=4..1", "runs backwards"),
            ("producers=1..100000", "at most 256 values"),
            ("producers=1,1", "listed twice"),
            ("producers=", "'' is not a whole number"),
        ] {
            let err = parse_spec(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
