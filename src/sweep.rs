//! `--sweep PARAM=LIST`: the same benchmark once per value of one parameter.

use crate::benches::{self, Benchmark};
use crate::config::{RunConfig, SweepParam, SweepSpec, MAX_THREADS};
use crate::error::{Error, Result};
use crate::lists::{parse_ranges, ListSyntax};

/// The most values one sweep may take.
pub const MAX_POINTS: usize = 256;

/// `--sweep` as written: a parameter name, not yet resolved against the
/// benchmark, and its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepRequest {
    pub param: String,
    pub values: Vec<u64>,
}

/// Parses `producers=1,2,4` or `trig-batch-iters=1..8` (an inclusive range).
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
    Ok(SweepRequest {
        param: param.to_string(),
        values,
    })
}

/// Resolves the swept parameter against `bench`: the producer count (or the
/// benchmark's name for it), or one of the benchmark's options.
pub fn resolve(request: &SweepRequest, bench: &dyn Benchmark) -> Result<SweepSpec> {
    let name = request.param.as_str();
    let param = if name == "producers" {
        SweepParam::Producers { name: "producers" }
    } else if let Some(alias) = bench.producers_alias().filter(|a| *a == name) {
        SweepParam::Producers { name: alias }
    } else if let Some(option) = bench.options().iter().find(|o| o.long == name) {
        SweepParam::Option(*option)
    } else {
        let names: Vec<&str> = bench.options().iter().map(|o| o.long).collect();
        return Err(Error::usage(format!(
            "--sweep {name}: {} has no such option; it sweeps producers{}",
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
                SweepParam::Option(option) => {
                    let mut given: Vec<(&'static str, u64)> = config.params.iter().collect();
                    for entry in given.iter_mut().filter(|(name, _)| *name == option.long) {
                        entry.1 = value;
                    }
                    config.params = benches::resolve_params(bench, &given)?;
                }
            }
            bench.validate(&config)?;
            Ok(config)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse() {
        let s = parse_spec("producers=1,2,4").unwrap();
        assert_eq!((s.param.as_str(), s.values), ("producers", vec![1, 2, 4]));
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
        assert!(matches!(spec.param, SweepParam::Option(o) if o.long == "threads"));
        let nop = benches::find("trig-uprobe-nop").unwrap();
        let err = resolve(&parse_spec("threads=1").unwrap(), nop).unwrap_err();
        assert!(err.to_string().contains("has no such option"), "{err}");
        assert!(resolve(&parse_spec("parallelism=1").unwrap(), nop).is_err());
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
