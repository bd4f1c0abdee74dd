//! The one reporter: every line a run prints, chosen from what the benchmark
//! declared it measures ([`Metric`]). The kernel runner's lines for hits,
//! `perf bench`'s for operations.

use super::{perf, text};
use crate::benches::{Benchmark, Metric, PerfFormat};
use crate::config::{Params, RunConfig};
use crate::probe_path::ProbePath;
use crate::runner::FixedRun;
use crate::stats::{MeanSd, Sample, Summary};

#[derive(Clone, Copy, Debug)]
pub struct Reporter {
    bench: &'static str,
    metric: Metric,
}

impl Reporter {
    pub fn new(bench: &dyn Benchmark) -> Reporter {
        Reporter {
            bench: bench.name(),
            metric: bench.metric(),
        }
    }

    pub fn setting_up(&self) -> String {
        format!("Setting up benchmark '{}'...", self.bench)
    }

    pub fn started(&self) -> String {
        format!("Benchmark '{}' started.", self.bench)
    }

    /// The line that says how the kernel handled the probe.
    pub fn probe_path(&self, path: ProbePath) -> String {
        format!("probe path: {} ({})", path.name(), path.evidence())
    }

    /// The warning when the probe path cannot be found.
    pub fn probe_path_unknown(&self, why: &str) -> String {
        format!("warning: cannot tell the probe path: {why}")
    }

    /// One second's line.
    pub fn tick(&self, sample: &Sample, producers: usize) -> String {
        match self.metric {
            Metric::Hits => text::iteration_line(sample, producers),
            Metric::Ops(_) => text::ops_iteration_line(sample, producers),
        }
    }

    /// The `Summary:` line: the last line on stdout, which scripts cut.
    pub fn summary(&self, summary: &Summary, producers: usize) -> String {
        match self.metric {
            Metric::Hits => text::summary_line(summary),
            Metric::Ops(perf) => text::ops_summary_line(summary, producers, perf.per_cpu),
        }
    }

    /// One of several independent runs: its summary, labelled with its number
    /// instead of `Summary:` (which only the closing line over runs says).
    pub fn run_line(&self, run: u32, summary: &Summary, producers: usize) -> String {
        let line = self.summary(summary, producers);
        match line.strip_prefix("Summary:") {
            Some(rest) => format!("Run {run:4}:{rest}"),
            None => line,
        }
    }

    /// The report of a fixed-work (`--repeat`) run: all that run prints.
    pub fn fixed(&self, run: &FixedRun, config: &RunConfig) -> Vec<String> {
        match self.metric {
            Metric::Hits => text::fixed_lines(self.bench, run, config.producers),
            Metric::Ops(format) => perf_block(&format, run, config),
        }
    }

    /// The rate the benchmark is judged by: hits for the trigger families, all
    /// operations for the perf family.
    pub fn headline(&self, summary: &Summary) -> MeanSd {
        match self.metric {
            Metric::Hits => summary.hits,
            Metric::Ops(_) => summary.total,
        }
    }

    /// One second's headline rate: what [`Reporter::headline`] averages.
    pub fn sample_rate(&self, sample: &Sample) -> f64 {
        match self.metric {
            Metric::Hits => sample.hits_per_sec(),
            Metric::Ops(_) => sample.total_per_sec(),
        }
    }

    /// What the headline counts, for titles and axes.
    pub fn counted(&self) -> &'static str {
        match self.metric {
            Metric::Hits => "hits",
            Metric::Ops(_) => "operations",
        }
    }

    /// `# partial: ...` before the figures of an interrupted run.
    pub fn partial_fixed(&self, done: u64, of: u64) -> String {
        format!("# partial: interrupted after {done} of {of} calls")
    }

    pub fn partial_timed(&self, measured: usize, of: u32) -> String {
        format!("# partial: interrupted after {measured} of {of} measured iterations")
    }

    /// The line that says which sweep point the lines below belong to.
    pub fn sweep_point(&self, param: &str, value: u64) -> String {
        format!("# {param}={value}")
    }

    /// The table after a sweep, with its title.
    pub fn sweep_table(
        &self,
        param: &str,
        points: &[(u64, usize, MeanSd)],
        producers_swept: bool,
    ) -> Vec<String> {
        let mut lines = vec![format!("Sweep of {param} for {}:", self.bench)];
        lines.extend(text::sweep_table(param, points, producers_swept));
        lines
    }
}

/// `perf bench`'s block for a fixed run, line for line.
fn perf_block(format: &PerfFormat, run: &FixedRun, config: &RunConfig) -> Vec<String> {
    if format.usecs_grouped {
        let executed = format
            .executed
            .replace("{calls}", &perf::grouped(run.calls))
            .replace("{ops}", &perf::grouped(run.ops));
        let mut lines = vec![perf::running(format.collection, format.name), executed];
        lines.extend(perf::uprobe_figures(run));
        return lines;
    }
    let [total, blank] = perf::total_time(run);
    let usecs = perf::usecs_per_op(run, run.ops);
    let mut lines = vec![
        perf::running(format.collection, format.name),
        fill(format.executed, run, config.producers, &config.params),
        total,
        blank,
        perf::figure(usecs, "usecs/op"),
    ];
    if format.per_cpu {
        lines.push(perf::figure(
            usecs * config.producers as f64,
            "usecs/op/cpu",
        ));
    }
    if format.ops_per_sec {
        lines.push(perf::ops_per_sec(run, run.ops));
    }
    lines
}

/// Fills a [`PerfFormat::executed`] template.
fn fill(template: &str, run: &FixedRun, producers: usize, params: &Params) -> String {
    let mut line = template
        .replace("{ops}", &run.ops.to_string())
        .replace("{calls}", &run.calls.to_string())
        .replace("{producers}", &producers.to_string());
    for (name, value) in params.iter() {
        line = line.replace(&format!("{{{name}}}"), &value.to_string());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benches;
    use crate::runner::Counts;

    fn fixed(calls: u64, ops: u64) -> FixedRun {
        FixedRun {
            elapsed_ns: 779_066_000,
            calls,
            ops,
            counts: Counts {
                hits: ops,
                drops: 0,
            },
        }
    }

    #[test]
    fn every_perf_template_is_filled() {
        for bench in benches::all() {
            let Metric::Ops(format) = bench.metric() else {
                continue;
            };
            let config = bench.default_config().unwrap();
            let line = fill(format.executed, &fixed(7, 7), 3, &config.params);
            assert!(!line.contains('{'), "{}: {line}", bench.name());
        }
    }

    #[test]
    fn perf_blocks_follow_perf_bench() {
        let syscall = benches::find("syscall-basic").unwrap();
        let config = syscall.default_config().unwrap();
        let lines = Reporter::new(syscall).fixed(&fixed(10_000_000, 10_000_000), &config);
        assert_eq!(
            lines,
            [
                "# Running 'syscall/basic' benchmark:",
                "# Executed 10000000 getppid() calls",
                "     Total time: 0.779 [sec]",
                "",
                "       0.077907 usecs/op",
                "       12835882 ops/sec",
            ]
        );
        let thread = benches::find("breakpoint-thread").unwrap();
        let mut config = thread.default_config().unwrap();
        config.producers = 2;
        let lines = Reporter::new(thread).fixed(&fixed(56, 1120), &config);
        assert_eq!(
            lines[1],
            "# Created/joined 56 threads with 1 breakpoints and 2 parallelism"
        );
        assert!(lines[5].ends_with(" usecs/op/cpu"), "{lines:?}");
        assert_eq!(lines.len(), 6);
        let empty = benches::find("uprobe-empty").unwrap();
        let config = empty.default_config().unwrap();
        let lines = Reporter::new(empty).fixed(&fixed(1000, 1000), &config);
        assert_eq!(
            lines,
            [
                "# Running 'uprobe/empty' benchmark:",
                "# Executed 1,000 usleep(1000) calls",
                "     Total time: 779,066 usecs",
                "",
                " 779.066 usecs/op",
            ]
        );
    }
}
