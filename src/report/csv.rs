//! The CSV exporter: `#` comment lines with the context, a header, one row per
//! sample, one per summary and one per fixed-work result.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::Result;
use crate::results::ResultFile;

use super::write_atomically;

pub const HEADER: &str = "benchmark,sweep_param,sweep_value,kind,iteration,elapsed_ns,late_ns,\
calls,ops,hits,drops,warmup,hits_mean,hits_sd,drops_mean,drops_sd,per_producer,latency_ns,\
usecs_per_op_mean,usecs_per_op_sd,partial";

pub fn render(result: &ResultFile) -> String {
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
    let _ = writeln!(out, "{HEADER}");
    let param = result.sweep.as_ref().map_or("", |s| s.param.as_str());
    for run in &result.runs {
        let lead = format!(
            "{},{param},{}",
            result.benchmark,
            run.sweep_value.map_or(String::new(), |v| v.to_string())
        );
        for s in &run.samples {
            let _ = writeln!(
                out,
                "{lead},sample,{},{},{},,,{},{},{},,,,,,,,,{}",
                s.iteration, s.elapsed_ns, s.late_ns, s.hits, s.drops, s.warmup, run.partial
            );
        }
        if let Some(s) = &run.summary {
            let _ = writeln!(
                out,
                "{lead},summary,,,,,,,,,{},{},{},{},{},{},{},{},{}",
                s.hits.mean,
                s.hits.sd,
                s.drops.mean,
                s.drops.sd,
                s.per_producer,
                s.latency_ns.map_or(String::new(), |l| l.to_string()),
                s.usecs_per_op.mean,
                s.usecs_per_op.sd,
                run.partial
            );
        }
        if let Some(f) = &run.fixed {
            let _ = writeln!(
                out,
                "{lead},fixed,,{},,{},{},{},{},,,,,,,,,,{}",
                f.elapsed_ns, f.calls, f.ops, f.counts.hits, f.counts.drops, run.partial
            );
        }
    }
    out
}

pub fn write(path: &Path, result: &ResultFile) -> Result<()> {
    write_atomically(path, render(result).as_bytes())
}
