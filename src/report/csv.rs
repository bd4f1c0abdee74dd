//! The CSV exporter: `#` comment lines with the options, the precision asked
//! for and the context, a header, one row per sample, one per run's summary,
//! one per fixed-work result and one per configuration's statistics over its
//! runs. Rows are typed and written by the `csv` crate, which quotes what
//! needs quoting; an empty field is a value the row's kind does not have.

use std::fmt::Write as _;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::results::cycles::{CycleRecord, StepTime};
use crate::results::{ResultFile, RunLevel, RunRecord};
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

use super::{Exporter, Rendered};
use crate::config::OutputTarget;

/// The column names, in order: [`Row`]'s fields (a test keeps them equal).
pub const HEADER: &str = "benchmark,sweep_param,sweep_value,run,kind,iteration,elapsed_ns,\
late_ns,calls,ops,hits,drops,warmup,hits_mean,hits_sd,drops_mean,drops_sd,per_producer,\
latency_ns,usecs_per_op_mean,usecs_per_op_sd,runs,headline_mean,headline_sd,headline_ci95,\
partial,percentile,value_ns,count,probes,wall_ns,user_ns,system_ns,\
us_per_probe,fired,figure,value";

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Sample,
    Summary,
    Fixed,
    /// The statistics over a configuration's runs (`--runs`, `--precision`).
    Runs,
    /// `--latency`: one row per percentile (and max and mean) of a run.
    #[serde(rename = "latency")]
    Latency,
    /// `--latency`: one row per bucket of a run's histogram, `value_ns`
    /// the bucket's highest value: enough to recompute any percentile.
    #[serde(rename = "latency_bucket")]
    LatencyBucket,
    /// An attach cycle's attach step, and its detach step.
    Attach,
    Detach,
    /// A figure of its own the benchmark kept in the run (`figure`, `value`).
    Figure,
}

/// One line of the file; `None` is written as an empty field.
#[derive(Debug, Default, Serialize)]
struct Row<'a> {
    benchmark: &'a str,
    sweep_param: &'a str,
    sweep_value: Option<u64>,
    /// Which run (1-based) of the configuration: 1 without `--runs`.
    run: Option<u32>,
    kind: Option<Kind>,
    iteration: Option<u32>,
    elapsed_ns: Option<u64>,
    late_ns: Option<i64>,
    calls: Option<u64>,
    ops: Option<u64>,
    hits: Option<u64>,
    drops: Option<u64>,
    warmup: Option<bool>,
    hits_mean: Option<f64>,
    hits_sd: Option<f64>,
    drops_mean: Option<f64>,
    drops_sd: Option<f64>,
    per_producer: Option<f64>,
    latency_ns: Option<f64>,
    usecs_per_op_mean: Option<f64>,
    usecs_per_op_sd: Option<f64>,
    /// The runs a `runs` row is over, and their headline rate (hits, or
    /// operations for the perf family): mean, between-run sd, half-width of
    /// the 95 % interval.
    runs: Option<usize>,
    headline_mean: Option<f64>,
    headline_sd: Option<f64>,
    headline_ci95: Option<f64>,
    partial: bool,
    percentile: Option<&'static str>,
    value_ns: Option<f64>,
    count: Option<u64>,
    probes: Option<usize>,
    wall_ns: Option<u64>,
    user_ns: Option<u64>,
    system_ns: Option<u64>,
    us_per_probe: Option<f64>,
    fired: Option<usize>,
    figure: Option<&'a str>,
    value: Option<f64>,
}

impl<'a> Row<'a> {
    /// The columns every row of `run` shares.
    fn lead(result: &'a ResultFile, run: &RunRecord, kind: Kind) -> Self {
        Row {
            benchmark: &result.benchmark,
            sweep_param: result.sweep.as_ref().map_or("", |s| s.param.as_str()),
            sweep_value: run.sweep_value,
            run: Some(run.repetition.unwrap_or(1)),
            kind: Some(kind),
            partial: run.partial,
            ..Row::default()
        }
    }

    fn runs(result: &'a ResultFile, level: &RunLevel) -> Self {
        let summary = Row::summary(Row::default(), &level.summary);
        Row {
            benchmark: &result.benchmark,
            sweep_param: result.sweep.as_ref().map_or("", |s| s.param.as_str()),
            sweep_value: level.sweep_value,
            kind: Some(Kind::Runs),
            runs: Some(level.headline.runs),
            headline_mean: Some(level.headline.mean),
            headline_sd: Some(level.headline.sd),
            headline_ci95: level.headline.ci95,
            partial: result.partial,
            ..summary
        }
    }

    fn sample(lead: Self, s: &Sample) -> Self {
        Row {
            iteration: Some(s.iteration),
            elapsed_ns: Some(s.elapsed_ns),
            late_ns: Some(s.late_ns),
            hits: Some(s.hits),
            drops: Some(s.drops),
            warmup: Some(s.warmup),
            ..lead
        }
    }

    fn summary(lead: Self, s: &Summary) -> Self {
        Row {
            hits_mean: Some(s.hits.mean),
            hits_sd: Some(s.hits.sd),
            drops_mean: Some(s.drops.mean),
            drops_sd: Some(s.drops.sd),
            per_producer: Some(s.per_producer),
            latency_ns: s.latency_ns,
            usecs_per_op_mean: Some(s.usecs_per_op.mean),
            usecs_per_op_sd: Some(s.usecs_per_op.sd),
            ..lead
        }
    }

    /// One step (attach or detach) of an attach cycle.
    fn step(lead: Self, cycle: &CycleRecord, step: &StepTime) -> Self {
        Row {
            probes: Some(cycle.probes),
            wall_ns: Some(step.wall_ns),
            user_ns: Some(step.user_ns),
            system_ns: Some(step.system_ns),
            us_per_probe: Some(step.us_per_probe(cycle.probes)),
            fired: cycle.fired.as_ref().map(|f| f.fired),
            ..lead
        }
    }

    fn fixed(lead: Self, f: &FixedRun) -> Self {
        Row {
            elapsed_ns: Some(f.elapsed_ns),
            calls: Some(f.calls),
            ops: Some(f.ops),
            hits: Some(f.counts.hits),
            drops: Some(f.counts.drops),
            ..lead
        }
    }
}

/// `name=value` for each field of a record, in its JSON form (so that a
/// field added to the record appears here too); a nested map's entries are
/// written as fields of their own, a null as `-`.
fn fields(record: &impl Serialize) -> String {
    fn words(value: serde_json::Value, name: Option<String>, out: &mut Vec<String>) {
        use serde_json::Value;
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    words(value, Some(key), out);
                }
            }
            value => {
                let text = match value {
                    Value::Null => "-".to_string(),
                    Value::String(s) if !s.contains(char::is_whitespace) => s,
                    other => other.to_string(),
                };
                out.push(name.map_or(text.clone(), |n| format!("{n}={text}")));
            }
        }
    }
    let mut out = Vec::new();
    // Plain structs of numbers and strings always serialise.
    if let Ok(value) = serde_json::to_value(record) {
        words(value, None, &mut out);
    }
    out.join(" ")
}

/// A run's `--latency` rows: its percentiles, then its histogram.
fn latency_rows<'a>(result: &'a ResultFile, run: &RunRecord) -> Vec<Row<'a>> {
    let Some(latency) = &run.latency else {
        return Vec::new();
    };
    let p = &latency.percentiles;
    let figures = p
        .named()
        .into_iter()
        .map(|(name, value)| (name, value as f64))
        .chain([("mean", p.mean)]);
    let mut rows: Vec<Row> = figures
        .map(|(name, value)| Row {
            percentile: Some(name),
            value_ns: Some(value),
            count: Some(p.count),
            ..Row::lead(result, run, Kind::Latency)
        })
        .collect();
    rows.extend(latency.buckets.iter().map(|&[value, count]| Row {
        value_ns: Some(value as f64),
        count: Some(count),
        ..Row::lead(result, run, Kind::LatencyBucket)
    }));
    rows
}

/// The `#` lines: what a row's numbers were measured with and on.
fn context(result: &ResultFile) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# tool: {} {} ({})",
        result.tool.name, result.tool.version, result.tool.git_revision
    );
    let _ = writeln!(out, "# options: {}", fields(&result.options));
    if let Some(precision) = &result.precision {
        let _ = writeln!(out, "# precision: {}", fields(precision));
    }
    if let Some(counts) = &result.counts {
        let _ = write!(
            out,
            "# counts: hits={} | drops={}",
            counts.hits, counts.drops
        );
        for (i, extra) in counts.extra.iter().enumerate() {
            let _ = write!(out, " | extra[{i}]={extra}");
        }
        out.push('\n');
    }
    let c = &result.context;
    let _ = writeln!(
        out,
        "# context: kernel={} cpu={} online_cpus={} date={}{}",
        c.kernel_release,
        c.cpu_model,
        c.online_cpus,
        c.date,
        c.vm.as_deref()
            .map_or(String::new(), |vm| format!(" vm={vm}"))
    );
    out
}

pub fn render(result: &ResultFile) -> Result<String> {
    let fail = |e: csv::Error| Error::runtime(format!("cannot format the CSV: {e}"));
    // The header is written by hand so that a run with no row still has one.
    let mut csv = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(context(result).into_bytes());
    csv.write_record(HEADER.split(',')).map_err(fail)?;
    for run in &result.runs {
        for s in run.samples() {
            let lead = Row::lead(result, run, Kind::Sample);
            csv.serialize(Row::sample(lead, s)).map_err(fail)?;
        }
        if let Some(s) = run.summary() {
            let lead = Row::lead(result, run, Kind::Summary);
            csv.serialize(Row::summary(lead, s)).map_err(fail)?;
        }
        if let Some(f) = run.fixed() {
            let lead = Row::lead(result, run, Kind::Fixed);
            csv.serialize(Row::fixed(lead, f)).map_err(fail)?;
        }
        if let Some(c) = run.cycle() {
            for (kind, step) in [(Kind::Attach, &c.attach), (Kind::Detach, &c.detach)] {
                let lead = Row::lead(result, run, kind);
                csv.serialize(Row::step(lead, c, step)).map_err(fail)?;
            }
        }
        for row in latency_rows(result, run) {
            csv.serialize(row).map_err(fail)?;
        }
        for (name, value) in &run.figures {
            let row = Row {
                figure: Some(name),
                value: Some(*value),
                ..Row::lead(result, run, Kind::Figure)
            };
            csv.serialize(row).map_err(fail)?;
        }
    }
    for level in &result.run_stats {
        csv.serialize(Row::runs(result, level)).map_err(fail)?;
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| Error::runtime(format!("cannot format the CSV: {}", e.error())))?;
    String::from_utf8(bytes).map_err(|e| Error::runtime(format!("cannot format the CSV: {e}")))
}

pub struct Csv;

impl Exporter for Csv {
    fn long(&self) -> &'static str {
        "csv"
    }

    fn help(&self) -> &'static str {
        "Write every sample and the summary as CSV to FILE (`-`: to stdout, as for --json)"
    }

    fn extension(&self) -> &'static str {
        "csv"
    }

    fn files(&self, result: &ResultFile, target: &OutputTarget) -> Result<Vec<Rendered>> {
        Ok(vec![(target.clone(), render(result)?.into_bytes())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header names the struct's fields, in their order.
    #[test]
    fn header_is_the_rows_field_names() {
        let mut csv = csv::Writer::from_writer(Vec::new());
        csv.serialize(Row::default()).unwrap();
        let text = String::from_utf8(csv.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next(), Some(HEADER));
    }
}
