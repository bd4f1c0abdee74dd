//! The CSV exporter: `#` comment lines with the options, the precision asked
//! for, the channels and figures and the context, a header, then one row
//! per channel of each sample, of each run's summary and of each fixed
//! run, one per value measured once, one per figure of each run, and one
//! per figure of each configuration's statistics over its runs. Rows are
//! typed and written by the `csv` crate, which quotes what needs quoting;
//! an empty field is a value the row's kind does not have.

use std::fmt::Write as _;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::results::cycles::{CycleRecord, StepTime};
use crate::results::{ChannelRecord, ResultFile, RunLevel, RunRecord};

use super::{Exporter, Rendered};
use crate::config::OutputTarget;

/// The column names, in order: [`Row`]'s fields (a test keeps them equal).
pub const HEADER: &str = "benchmark,sweep_param,sweep_value,run,kind,iteration,elapsed_ns,\
late_ns,warmup,calls,ops,channel,figure,unit,cpu,value,mean,sd,runs,ci95,\
partial,percentile,value_ns,count,probes,wall_ns,user_ns,system_ns,us_per_probe,fired";

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// A channel's value in one second.
    Sample,
    /// A channel's mean and sd over a run's measured seconds (`count` of them).
    Summary,
    /// A channel's value over a fixed run.
    Fixed,
    /// A value measured once, when the run ended (of a CPU, for some).
    Final,
    /// A figure's value in a run.
    Figure,
    /// A figure's statistics over a configuration's runs (`--runs`,
    /// `--precision`).
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
    warmup: Option<bool>,
    calls: Option<u64>,
    ops: Option<u64>,
    channel: Option<&'a str>,
    figure: Option<&'a str>,
    /// The value's unit: a channel's (per second in a summary of a count),
    /// a figure's.
    unit: Option<String>,
    cpu: Option<u32>,
    value: Option<f64>,
    mean: Option<f64>,
    sd: Option<f64>,
    /// The runs a `runs` row is over, and the half-width of their 95 %
    /// interval.
    runs: Option<usize>,
    ci95: Option<f64>,
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

    /// One row per figure of a configuration's statistics over its runs.
    fn runs(result: &'a ResultFile, level: &RunLevel) -> Vec<Self> {
        result
            .figures
            .iter()
            .filter_map(|figure| {
                let stats = level.figures.get(&figure.name)?;
                Some(Row {
                    benchmark: &result.benchmark,
                    sweep_param: result.sweep.as_ref().map_or("", |s| s.param.as_str()),
                    sweep_value: level.sweep_value,
                    kind: Some(Kind::Runs),
                    figure: Some(&figure.name),
                    unit: Some(figure.unit.clone()),
                    runs: Some(stats.runs),
                    mean: Some(stats.mean),
                    sd: Some(stats.sd),
                    ci95: stats.ci95,
                    partial: result.partial,
                    ..Row::default()
                })
            })
            .collect()
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
}

/// A channel's unit as a summary gives it: a count's per second.
fn summary_unit(channel: &ChannelRecord) -> String {
    match channel.kind.is_differenced() {
        true => format!("{}/s", channel.unit),
        false => channel.unit.clone(),
    }
}

/// Every row a run's channels, values measured once and figures make.
fn run_rows<'a>(result: &'a ResultFile, run: &'a RunRecord) -> Vec<Row<'a>> {
    let ticked: Vec<&ChannelRecord> = result
        .channels
        .iter()
        .filter(|c| c.kind.is_read_each_tick())
        .collect();
    let mut rows = Vec::new();
    let value = |lead: Row<'a>, at: usize, of: &Option<u64>| Row {
        channel: Some(&ticked[at].name),
        unit: Some(ticked[at].unit.clone()),
        value: of.map(|v| v as f64),
        ..lead
    };
    for s in run.samples() {
        for (at, of) in s.values.iter().enumerate().take(ticked.len()) {
            let lead = Row {
                iteration: Some(s.iteration),
                elapsed_ns: Some(s.elapsed_ns),
                late_ns: Some(s.late_ns),
                warmup: Some(s.warmup),
                ..Row::lead(result, run, Kind::Sample)
            };
            rows.push(value(lead, at, of));
        }
    }
    if let Some(summary) = run.summary() {
        for (at, channel) in summary.channels.iter().enumerate().take(ticked.len()) {
            rows.push(Row {
                channel: Some(&ticked[at].name),
                unit: Some(summary_unit(ticked[at])),
                mean: channel.map(|c| c.mean),
                sd: channel.map(|c| c.sd),
                count: Some(summary.over.count() as u64),
                ..Row::lead(result, run, Kind::Summary)
            });
        }
    }
    if let Some(f) = run.fixed() {
        for (at, of) in f.values.iter().enumerate().take(ticked.len()) {
            let lead = Row {
                elapsed_ns: Some(f.elapsed_ns),
                calls: Some(f.calls),
                ops: Some(f.ops),
                ..Row::lead(result, run, Kind::Fixed)
            };
            rows.push(value(lead, at, of));
        }
    }
    for once in &run.finals {
        let channel = result.channels.iter().find(|c| c.name == once.channel);
        rows.push(Row {
            channel: Some(&once.channel),
            unit: channel.map(|c| c.unit.clone()),
            cpu: once.cpu,
            value: Some(once.value),
            ..Row::lead(result, run, Kind::Final)
        });
    }
    rows
}

/// A run's figures: what it is judged by, after what it measured.
fn figure_rows<'a>(result: &'a ResultFile, run: &'a RunRecord) -> Vec<Row<'a>> {
    let figures = result.figures.iter();
    figures
        .filter_map(|figure| {
            let kept = run.figures.get(&figure.name)?;
            Some(Row {
                figure: Some(&figure.name),
                unit: Some(figure.unit.clone()),
                value: kept.value,
                ..Row::lead(result, run, Kind::Figure)
            })
        })
        .collect()
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
    let channels: Vec<String> = result
        .channels
        .iter()
        .map(|c| format!("{} ({}, {})", c.name, c.unit, fields(&c.kind)))
        .collect();
    let _ = writeln!(out, "# channels: {}", channels.join(" | "));
    let figures: Vec<String> = result
        .figures
        .iter()
        .map(|f| format!("{} ({}, {} is better)", f.name, f.unit, fields(&f.better)))
        .collect();
    let _ = writeln!(out, "# figures: {}", figures.join(" | "));
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
        for row in run_rows(result, run) {
            csv.serialize(row).map_err(fail)?;
        }
        if let Some(c) = run.cycle() {
            for (kind, step) in [(Kind::Attach, &c.attach), (Kind::Detach, &c.detach)] {
                let lead = Row::lead(result, run, kind);
                csv.serialize(Row::step(lead, c, step)).map_err(fail)?;
            }
        }
        for row in latency_rows(result, run)
            .into_iter()
            .chain(figure_rows(result, run))
        {
            csv.serialize(row).map_err(fail)?;
        }
    }
    for level in &result.run_stats {
        for row in Row::runs(result, level) {
            csv.serialize(row).map_err(fail)?;
        }
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
