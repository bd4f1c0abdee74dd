//! `--sweep PARAM=LIST`: the same benchmark once per value of one parameter.

use crate::benches::{self, Benchmark};
use crate::config::{RunConfig, SweepSpec, MAX_THREADS};
use crate::error::{Error, Result};

/// The most values one sweep may take.
pub const MAX_POINTS: usize = 256;

/// Parses `producers=1,2,4` or `trig-batch-iters=1..8` (an inclusive range).
pub fn parse_spec(text: &str) -> std::result::Result<SweepSpec, String> {
    let (param, list) = text
        .split_once('=')
        .ok_or_else(|| format!("expected PARAM=LIST such as producers=1,2,4, got '{text}'"))?;
    let param = param.trim();
    if param.is_empty() {
        return Err("the parameter name is empty".into());
    }
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{}' is not a whole number", s.trim()))
    };
    let mut values = Vec::new();
    for part in list.split(',') {
        match part.split_once("..") {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!("the range '{}' runs backwards", part.trim()));
                }
                if hi - lo >= MAX_POINTS as u64 {
                    return Err(format!("a sweep takes at most {MAX_POINTS} values"));
                }
                values.extend(lo..=hi);
            }
            None => values.push(number(part)?),
        }
        if values.len() > MAX_POINTS {
            return Err(format!("a sweep takes at most {MAX_POINTS} values"));
        }
    }
    let mut seen = Vec::new();
    for v in &values {
        if seen.contains(v) {
            return Err(format!("the value {v} is listed twice"));
        }
        seen.push(*v);
    }
    Ok(SweepSpec {
        param: param.to_string(),
        values,
    })
}

/// Whether `spec` sweeps the producer count (under either of its names).
pub fn is_producers(spec: &SweepSpec) -> bool {
    matches!(spec.param.as_str(), "producers" | "parallelism")
}

/// The configuration of each point, each checked as a single run would be.
pub fn points(spec: &SweepSpec, bench: &dyn Benchmark, base: &RunConfig) -> Result<Vec<RunConfig>> {
    let known = match spec.param.as_str() {
        "producers" => true,
        alias @ "parallelism" => bench.producers_alias() == Some(alias),
        option => bench.options().iter().any(|o| o.long == option),
    };
    if !known {
        let names: Vec<&str> = bench.options().iter().map(|o| o.long).collect();
        return Err(Error::usage(format!(
            "--sweep {}: {} has no such option; it sweeps producers{}",
            spec.param,
            bench.name(),
            names.iter().map(|n| format!(", {n}")).collect::<String>()
        )));
    }
    spec.values
        .iter()
        .map(|&value| {
            let mut config = base.clone();
            if is_producers(spec) {
                if value == 0 || value > MAX_THREADS {
                    return Err(Error::usage(format!(
                        "--sweep producers={value}: producers must be between 1 and {MAX_THREADS}"
                    )));
                }
                config.producers = value as usize;
            } else {
                let mut given: Vec<(&'static str, u64)> = config.params.iter().collect();
                for entry in given.iter_mut().filter(|(name, _)| *name == spec.param) {
                    entry.1 = value;
                }
                config.params = benches::resolve_params(bench, &given)?;
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
