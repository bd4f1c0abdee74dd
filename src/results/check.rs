//! What a result file read back must hold for its figures to mean anything:
//! bench never writes otherwise, so a file that breaks these was edited or
//! damaged, and comparing it would print numbers nobody measured.

use std::path::Path;

use super::ResultFile;
use crate::error::{Error, Result};
use crate::latency::Percentiles;

/// Refuses `file` (read from `path`) when a figure cannot be: one declared
/// twice (which of its units would its values be in?), an interval that
/// lasted no time (its rates would be 0 or infinite) or percentiles that
/// fall as they rise (p50 above p99).
pub fn check_figures(file: &ResultFile, path: &Path) -> Result<()> {
    let refuse = |field: String, why: &str| {
        Err(Error::usage(format!(
            "{}: {field} {why}: a file bench wrote never holds that",
            path.display()
        )))
    };
    for (i, figure) in file.figures.iter().enumerate() {
        if let Some(twice) = file.figures[..i].iter().find(|f| f.name == figure.name) {
            let why = format!(
                "declares '{}' twice ({} and {})",
                figure.name, twice.unit, figure.unit
            );
            return refuse(format!("figures[{i}]"), &why);
        }
    }
    for (i, run) in file.runs.iter().enumerate() {
        if let Some(j) = run.samples().iter().position(|s| s.elapsed_ns == 0) {
            return refuse(format!("runs[{i}].samples[{j}].elapsed_ns"), "is 0");
        }
        if run.fixed().is_some_and(|f| f.elapsed_ns == 0) {
            return refuse(format!("runs[{i}].fixed.elapsed_ns"), "is 0");
        }
        let Some(latency) = &run.latency else {
            continue;
        };
        if let Some(why) = falling(&latency.percentiles) {
            return refuse(format!("runs[{i}].latency.percentiles"), &why);
        }
        for (j, s) in latency.seconds.iter().enumerate() {
            let named = [("p50", s.p50), ("p99", s.p99), ("max", s.max)];
            if let Some(why) = first_fall(&named) {
                return refuse(format!("runs[{i}].latency.seconds[{j}]"), &why);
            }
        }
    }
    for (k, level) in file.run_stats.iter().enumerate() {
        if let Some(why) = level.latency.as_ref().and_then(|l| falling(&l.merged)) {
            return refuse(format!("run_stats[{k}].latency.merged"), &why);
        }
    }
    Ok(())
}

fn falling(percentiles: &Percentiles) -> Option<String> {
    first_fall(&percentiles.named())
}

/// The first figure above the next one, in words (`has p50 900 above p99
/// 800`); `None` when they never fall.
fn first_fall(named: &[(&str, u64)]) -> Option<String> {
    named.windows(2).find_map(|pair| {
        let [(low_name, low), (high_name, high)] = pair else {
            return None;
        };
        (low > high).then(|| format!("has {low_name} {low} above {high_name} {high}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falling_percentiles_are_named() {
        let rising = [("p50", 100), ("p99", 100), ("max", 900)];
        assert_eq!(first_fall(&rising), None);
        let edited = [("p50", 1200), ("p99", 900), ("max", 2000)];
        assert_eq!(
            first_fall(&edited).as_deref(),
            Some("has p50 1200 above p99 900")
        );
    }
}
