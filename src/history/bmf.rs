//! Reading the Bencher Metric Format (BMF), which many tools write: an
//! object of benchmarks, each an object of measures, each with a `value`
//! and optionally `lower_value` and `upper_value`. A BMF file carries no
//! time, kernel or machine: those come from `--at` and `--label`.

use serde_json::Value;

use super::entry::FigureValues;
use crate::stats::Better;

/// One benchmark of a BMF file and its measures.
#[derive(Debug)]
pub struct BmfBenchmark {
    pub name: String,
    pub figures: Vec<FigureValues>,
}

/// Which way a measure is better: Bencher's built-in `throughput` higher,
/// `latency` lower; any other, `other` (from `--better`), or `None`.
pub fn better_of(measure: &str, other: Option<Better>) -> Option<Better> {
    match measure {
        "throughput" => Some(Better::Higher),
        "latency" => Some(Better::Lower),
        _ => other,
    }
}

/// The unit of a measure: Bencher's built-ins', else the measure's name.
fn unit_of(measure: &str) -> String {
    match measure {
        "throughput" => "operations/s".to_string(),
        "latency" => "ns".to_string(),
        other => other.to_string(),
    }
}

/// A figure's measure name in BMF, which keeps nothing of a measure but its
/// name: `NAME (UNIT, higher is better)`; Bencher's built-ins keep theirs.
/// [`read`] takes the figure back from it.
pub fn measure_name(name: &str, unit: &str, better: Better) -> String {
    if better_of(name, None) == Some(better) && unit_of(name) == unit {
        return name.to_string();
    }
    let word = match better {
        Better::Higher => "higher",
        Better::Lower => "lower",
    };
    format!("{name} ({unit}, {word} is better)")
}

/// The figure a [`measure_name`] names: its name, unit and direction.
fn named_figure(measure: &str) -> Option<(String, String, Better)> {
    let inner = measure.strip_suffix(" is better)")?;
    let (better, inner) = match inner.strip_suffix(", higher") {
        Some(rest) => (Better::Higher, rest),
        None => (Better::Lower, inner.strip_suffix(", lower")?),
    };
    let (name, unit) = inner.rsplit_once(" (")?;
    (!name.is_empty() && !unit.is_empty()).then(|| (name.to_string(), unit.to_string(), better))
}

/// Whether `json` looks like BMF rather than another JSON file: an object
/// whose every value is an object of objects that hold a `value`.
pub fn looks_like_bmf(json: &Value) -> bool {
    json.as_object().is_some_and(|benchmarks| {
        !benchmarks.is_empty()
            && benchmarks.values().all(|measures| {
                measures
                    .as_object()
                    .is_some_and(|m| !m.is_empty() && m.values().all(|v| v.get("value").is_some()))
            })
    })
}

/// The benchmarks of a BMF document; the error is one sentence.
pub fn read(json: &Value, better: Option<Better>) -> Result<Vec<BmfBenchmark>, String> {
    let benchmarks = json
        .as_object()
        .ok_or("a BMF file is a JSON object of benchmarks")?;
    let mut read = Vec::new();
    for (name, measures) in benchmarks {
        let measures = measures
            .as_object()
            .ok_or_else(|| format!("benchmark '{name}' is not an object of measures"))?;
        let mut figures = Vec::new();
        for (measure, metric) in measures {
            let number = |key: &str| -> Result<Option<f64>, String> {
                match metric.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => v
                        .as_f64()
                        .filter(|x| x.is_finite())
                        .map(Some)
                        .ok_or_else(|| {
                            format!("'{name}' measure '{measure}': {key} is not a number")
                        }),
                }
            };
            let value = number("value")?
                .ok_or_else(|| format!("'{name}' measure '{measure}' has no value"))?;
            let (figure, unit, better) = match named_figure(measure) {
                Some(named) => named,
                None => {
                    let better = better_of(measure, better).ok_or_else(|| {
                        format!(
                            "measure '{measure}' of '{name}' is neither throughput nor latency: say which way it is better with --better higher|lower"
                        )
                    })?;
                    (measure.clone(), unit_of(measure), better)
                }
            };
            figures.push(FigureValues {
                name: figure,
                unit,
                better,
                values: vec![value],
                low: number("lower_value")?,
                high: number("upper_value")?,
            });
        }
        read.push(BmfBenchmark {
            name: name.clone(),
            figures,
        });
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmf_is_read_with_bencher_s_directions() {
        let json: Value = serde_json::from_str(
            r#"{"a": {"throughput": {"value": 5.0, "lower_value": 4.0, "upper_value": 6.0},
                      "latency": {"value": 2.5}}}"#,
        )
        .unwrap();
        assert!(looks_like_bmf(&json));
        let read = read(&json, None).unwrap();
        assert_eq!(read[0].name, "a");
        let by_name = |n: &str| read[0].figures.iter().find(|f| f.name == n).unwrap();
        assert_eq!(by_name("throughput").better, Better::Higher);
        assert_eq!(by_name("throughput").low, Some(4.0));
        assert_eq!(by_name("latency").better, Better::Lower);
        let other: Value = serde_json::from_str(r#"{"a": {"memory": {"value": 1}}}"#).unwrap();
        assert!(super::read(&other, None).unwrap_err().contains("--better"));
        assert!(super::read(&other, Some(Better::Lower)).is_ok());
        // A measure bench wrote says its unit and direction: no --better.
        let named: Value = serde_json::from_str(
            r#"{"a": {"hits (hits/s, higher is better)": {"value": 1},
                      "median (ns/op, lower is better)": {"value": 2}}}"#,
        )
        .unwrap();
        let back = super::read(&named, Some(Better::Higher)).unwrap();
        let figures: Vec<(&str, &str, Better)> = back[0]
            .figures
            .iter()
            .map(|f| (f.name.as_str(), f.unit.as_str(), f.better))
            .collect();
        assert_eq!(
            figures,
            [
                ("hits", "hits/s", Better::Higher),
                ("median", "ns/op", Better::Lower)
            ]
        );
        assert_eq!(
            measure_name("median", "ns/op", Better::Lower),
            "median (ns/op, lower is better)"
        );
        assert_eq!(
            measure_name("throughput", "operations/s", Better::Higher),
            "throughput"
        );
        assert!(!looks_like_bmf(
            &serde_json::json!({"schema": "bench-result/2"})
        ));
    }
}
