//! The CSV exporter: `#` comment lines with the context, a header, one row per
//! sample, one per summary and one per fixed-work result. Rows are typed and
//! written by the `csv` crate, which quotes what needs quoting; an empty field
//! is a value the row's kind does not have.

use std::fmt::Write as _;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::results::{ResultFile, RunRecord};
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

use super::Exporter;

/// The column names, in order: [`Row`]'s fields (a test keeps them equal).
pub const HEADER: &str = "benchmark,sweep_param,sweep_value,kind,iteration,elapsed_ns,late_ns,\
calls,ops,hits,drops,warmup,hits_mean,hits_sd,drops_mean,drops_sd,per_producer,latency_ns,\
usecs_per_op_mean,usecs_per_op_sd,partial";

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Sample,
    Summary,
    Fixed,
}

/// One line of the file; `None` is written as an empty field.
#[derive(Debug, Default, Serialize)]
struct Row<'a> {
    benchmark: &'a str,
    sweep_param: &'a str,
    sweep_value: Option<u64>,
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
    partial: bool,
}

impl<'a> Row<'a> {
    /// The columns every row of `run` shares.
    fn lead(result: &'a ResultFile, run: &RunRecord, kind: Kind) -> Self {
        Row {
            benchmark: &result.benchmark,
            sweep_param: result.sweep.as_ref().map_or("", |s| s.param.as_str()),
            sweep_value: run.sweep_value,
            kind: Some(kind),
            partial: run.partial,
            ..Row::default()
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

/// The `#` lines: what a row's numbers were measured with and on.
fn context(result: &ResultFile) -> String {
    let mut out = String::new();
    let o = &result.options;
    let params: Vec<String> = o.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(
        out,
        "# tool: {} {} ({})",
        result.tool.name, result.tool.version, result.tool.git_revision
    );
    let _ = writeln!(
        out,
        "# options: producers={} consumers={} warmup={} duration={} affinity={} repeat={} {}",
        o.producers,
        o.consumers,
        o.warmup_secs,
        o.duration_secs,
        o.affinity,
        o.repeat.map_or("-".to_string(), |r| r.to_string()),
        params.join(" ")
    );
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
        for s in &run.samples {
            let lead = Row::lead(result, run, Kind::Sample);
            csv.serialize(Row::sample(lead, s)).map_err(fail)?;
        }
        if let Some(s) = &run.summary {
            let lead = Row::lead(result, run, Kind::Summary);
            csv.serialize(Row::summary(lead, s)).map_err(fail)?;
        }
        if let Some(f) = &run.fixed {
            let lead = Row::lead(result, run, Kind::Fixed);
            csv.serialize(Row::fixed(lead, f)).map_err(fail)?;
        }
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| Error::runtime(format!("cannot format the CSV: {}", e.error())))?;
    String::from_utf8(bytes).map_err(|e| Error::runtime(format!("cannot format the CSV: {e}")))
}

pub struct Csv;

impl Exporter for Csv {
    fn flag(&self) -> &'static str {
        "--csv"
    }

    fn render(&self, result: &ResultFile) -> Result<Vec<u8>> {
        Ok(render(result)?.into_bytes())
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
