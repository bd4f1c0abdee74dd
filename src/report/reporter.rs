//! The one reporter: every line a run prints, chosen from what the benchmark
//! declared it measures ([`Metric`]). The kernel runner's lines for hits,
//! `perf bench`'s for operations.

use super::{
    false_hits, frac_second, htab_mem, latency, local_storage, local_storage_create, per_cpu, perf,
    sockmap, sweep_tables, tasks_trace, text,
};
use std::collections::BTreeMap;

use crate::benches::{timing, Benchmark, Metric, PerfFormat, Piece};
use crate::config::{OptionValue, RunConfig};
use crate::latency::{LatencyOverRuns, LatencyRecord};
use crate::probe_path::ProbePath;
use crate::runner::FixedRun;
use crate::stats::{MeanSd, Sample, Summary};

#[derive(Clone, Copy, Debug)]
pub struct Reporter {
    bench: &'static str,
    metric: Metric,
    /// The machine emulates its CPU (a TCG VM): its times are marked.
    emulated: bool,
}

impl Reporter {
    pub fn new(bench: &dyn Benchmark) -> Reporter {
        Reporter {
            bench: bench.name(),
            metric: bench.metric(),
            emulated: false,
        }
    }

    /// Marks every summary as emulated when `emulated` (gathered with the
    /// run's context, not read while formatting).
    pub fn emulated(self, emulated: bool) -> Reporter {
        Reporter { emulated, ..self }
    }

    pub fn setting_up(&self) -> String {
        format!("Setting up benchmark '{}'...", self.bench)
    }

    /// Under the set-up line of a `-s` run of a probe in user space.
    pub fn user_stack_note(&self) -> String {
        "note: -s takes a user stack per hit here (BPF_F_USER_STACK); the kernel runner's -s \
         takes no stack for uprobes and USDT, so the two -s figures are not the same work"
            .to_string()
    }

    /// Under the set-up line of a `--body printk` run.
    pub fn printk_note(&self) -> String {
        "note: --body printk writes every hit into the kernel's one shared trace buffer: \
         other users of trace_pipe see it, and what it held before is overwritten"
            .to_string()
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
            Metric::Hits | Metric::PerCpu(_) => text::iteration_line(sample, producers),
            Metric::Ops(_) => text::ops_iteration_line(sample, producers),
            Metric::HitOps => text::hit_ops_iteration_line(sample, producers),
            Metric::HtabMem => htab_mem::iteration_line(sample, producers),
            Metric::FalseHits => false_hits::iteration_line(sample),
            Metric::LocalStorage => local_storage::iteration_line(sample),
            Metric::LocalStorageCreate => local_storage_create::iteration_line(sample, producers),
            Metric::Sockmap => sockmap::iteration_line(sample),
            Metric::TasksTrace => tasks_trace::iteration_lines(sample),
            Metric::FracSecond(scale) => frac_second::iteration_line(sample, producers, scale),
        }
    }

    /// Whether `-q` keeps the per-second lines: the kernel runner's `-q`
    /// hides them for local-storage-tasks-trace alone.
    pub fn ticks_when_quiet(&self) -> bool {
        self.metric != Metric::TasksTrace
    }

    /// The `Summary:` line: the last line on stdout, which scripts cut.
    pub fn summary(&self, summary: &Summary, producers: usize) -> String {
        match self.metric {
            Metric::Hits | Metric::PerCpu(_) => text::summary_line(summary, self.emulated),
            Metric::HitOps => text::hit_ops_summary_line(summary, self.emulated),
            Metric::HtabMem => htab_mem::summary_line(summary, producers, None, self.emulated),
            Metric::FalseHits => false_hits::summary_line(summary, self.emulated),
            Metric::LocalStorage => local_storage::summary_line(summary, self.emulated),
            Metric::LocalStorageCreate => {
                local_storage_create::summary_line(summary, producers, self.emulated)
            }
            Metric::Sockmap => sockmap::summary_line(summary, self.emulated),
            Metric::TasksTrace => tasks_trace::summary_lines(&BTreeMap::new()),
            Metric::FracSecond(scale) => frac_second::summary_line(
                summary,
                producers,
                &BTreeMap::new(),
                scale,
                self.emulated,
            ),
            Metric::Ops(perf) => {
                text::ops_summary_line(summary, producers, perf.per_cpu, self.emulated)
            }
        }
    }

    /// The `Summary:` line of one run, with what the run kept of its own
    /// (htab-mem's peak memory).
    pub fn summary_kept(
        &self,
        summary: &Summary,
        producers: usize,
        kept: &BTreeMap<String, f64>,
    ) -> String {
        match self.metric {
            Metric::HtabMem => {
                use crate::benches::htab_mem::{KEPT_MEMORY, KEPT_MEMORY_SD, KEPT_PEAK};
                let get = |name: &str| kept.get(name).copied();
                let memory = match (get(KEPT_MEMORY), get(KEPT_MEMORY_SD), get(KEPT_PEAK)) {
                    (Some(mean), Some(sd), Some(peak)) => Some(htab_mem::Memory { mean, sd, peak }),
                    _ => None,
                };
                htab_mem::summary_line(summary, producers, memory, self.emulated)
            }
            Metric::TasksTrace => tasks_trace::summary_lines(kept),
            Metric::FracSecond(scale) => {
                frac_second::summary_line(summary, producers, kept, scale, self.emulated)
            }
            _ => self.summary(summary, producers),
        }
    }

    /// The `Summary:` line over runs, with what each run kept (the LPM
    /// trie's rates over BPF-measured time); the others' is
    /// [`summary`](Self::summary)'s.
    pub fn summary_over_runs(
        &self,
        summary: &Summary,
        producers: usize,
        kept: &[&BTreeMap<String, f64>],
    ) -> String {
        match self.metric {
            Metric::FracSecond(scale) => frac_second::summary_line(
                summary,
                producers,
                &frac_second::over_runs(kept),
                scale,
                self.emulated,
            ),
            _ => self.summary(summary, producers),
        }
    }

    /// [`run_line`](Self::run_line) with what the run kept.
    pub fn run_line_kept(
        &self,
        run: u32,
        summary: &Summary,
        producers: usize,
        kept: &BTreeMap<String, f64>,
    ) -> String {
        let line = self.summary_kept(summary, producers, kept);
        match line.strip_prefix("Summary:") {
            Some(rest) => format!("Run {run:4}:{rest}"),
            None => line,
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
            Metric::Hits
            | Metric::HitOps
            | Metric::PerCpu(_)
            | Metric::Sockmap
            | Metric::TasksTrace
            | Metric::FracSecond(_) => {
                text::fixed_lines(self.bench, run, config.producers, self.emulated)
            }
            Metric::HtabMem => {
                htab_mem::fixed_lines(self.bench, run, config.producers, self.emulated)
            }
            Metric::FalseHits => {
                let mut lines = text::fixed_lines(self.bench, run, config.producers, self.emulated);
                lines.push(false_hits::fixed_line(&run.counts));
                lines
            }
            Metric::Ops(format) => perf_block(&format, run, config),
            Metric::LocalStorage => {
                local_storage::fixed_lines(self.bench, run, config.producers, self.emulated)
            }
            Metric::LocalStorageCreate => {
                local_storage_create::fixed_lines(self.bench, run, config.producers, self.emulated)
            }
        }
    }

    /// The kernel runner's closing line of a benchmark timed inside BPF
    /// (`bpf-nop`), from the figures its run kept (`--machine-readable`: its
    /// `RESULT` line); `None` for a run that kept no timing.
    pub fn bpf_timing(&self, kept: &BTreeMap<String, f64>, config: &RunConfig) -> Option<String> {
        let samples = *kept.get(timing::KEPT_SAMPLES)? as u64;
        let get = |name| kept.get(name).copied().unwrap_or(0.0);
        let (median, stddev, p99) = (
            get(timing::KEPT_MEDIAN),
            get(timing::KEPT_STDDEV),
            get(timing::KEPT_P99),
        );
        let machine_readable = config
            .params
            .iter()
            .any(|(k, v)| k == timing::MACHINE_READABLE.long && v == OptionValue::Flag(true));
        Some(match (samples, machine_readable) {
            (0, _) => "No timing samples collected.".to_string(),
            (_, true) => format!(
                "RESULT scenario={} samples={samples} median={median:.2} stddev={stddev:.2} \
                 cv={:.2} min={:.2} p99={p99:.2} max={:.2}",
                self.bench,
                get(timing::KEPT_CV),
                get(timing::KEPT_MIN),
                get(timing::KEPT_MAX)
            ),
            (_, false) => format!(
                "{}: median {median:.2} ns/op, stddev {stddev:.2}, p99 {p99:.2} ({samples} samples{})",
                self.bench,
                batches_used(kept)
            ),
        })
    }

    /// The kernel runner's per-CPU lines of a benchmark timed inside BPF
    /// (`Metric::PerCpu`), and sockmap's note of the bytes left unread,
    /// from the figures its run kept: printed before its
    /// summary (a fixed run's, after its block); none for other benchmarks.
    pub fn per_cpu(&self, kept: &BTreeMap<String, f64>) -> Vec<String> {
        match self.metric {
            Metric::PerCpu(kind) => per_cpu::lines(kind, kept),
            Metric::Sockmap => sockmap::unread_lines(kept),
            _ => Vec::new(),
        }
    }

    /// The lines a fixed-work run adds from the figures it kept (the sockmap
    /// benchmark's byte counts); none for the others.
    pub fn kept_lines(&self, kept: &BTreeMap<String, f64>) -> Vec<String> {
        match self.metric {
            Metric::Sockmap => sockmap::fixed_lines(kept),
            Metric::LocalStorageCreate => local_storage_create::error_lines(kept),
            Metric::TasksTrace => tasks_trace::summary_lines(kept)
                .lines()
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The lines a timed run prints after its Summary from the figures it
    /// kept (local-storage-create's failed creations); none for the others.
    pub fn after_summary(&self, kept: &BTreeMap<String, f64>) -> Vec<String> {
        match self.metric {
            Metric::LocalStorageCreate => local_storage_create::error_lines(kept),
            _ => Vec::new(),
        }
    }

    /// One operation, as `--latency` names it.
    fn timed_unit(&self) -> &'static str {
        match self.metric {
            Metric::Hits
            | Metric::HitOps
            | Metric::PerCpu(_)
            | Metric::FalseHits
            | Metric::LocalStorage
            | Metric::LocalStorageCreate
            | Metric::Sockmap
            | Metric::TasksTrace
            | Metric::FracSecond(_) => "hit",
            Metric::HtabMem => "trigger",
            Metric::Ops(_) => "operation",
        }
    }

    /// A run's `--latency` lines, printed before its summary.
    pub fn latency(&self, latency: &LatencyRecord) -> Vec<String> {
        latency::run_lines(latency, self.timed_unit())
    }

    /// The `--latency` lines over runs.
    pub fn latency_over_runs(&self, latency: &LatencyOverRuns) -> Vec<String> {
        latency::over_runs_lines(latency, self.timed_unit())
    }

    /// `# partial: ...` before the figures of an interrupted run.
    pub fn partial_fixed(&self, done: u64, of: u64) -> String {
        format!("# partial: interrupted after {done} of {of} calls")
    }

    pub fn partial_timed(&self, measured: usize, of: u32) -> String {
        format!("# partial: interrupted after {measured} of {of} measured iterations")
    }

    /// The table after a sweep, with its title.
    pub fn sweep_table(
        &self,
        param: &str,
        points: &[(u64, usize, MeanSd)],
        producers_swept: bool,
    ) -> Vec<String> {
        let mut lines = vec![format!("Sweep of {param} for {}:", self.bench)];
        lines.extend(sweep_tables::sweep_table(param, points, producers_swept));
        lines
    }

    /// The table of a body sweep: each body's rate, time and cost per hit.
    pub fn body_table(&self, rows: &[crate::results::BodyRow]) -> Vec<String> {
        let mut lines = vec![sweep_tables::body_table_title(self.bench, rows)];
        lines.extend(sweep_tables::body_table(rows));
        lines
    }
}

/// `perf bench`'s block for a fixed run, line for line.
fn perf_block(format: &PerfFormat, run: &FixedRun, config: &RunConfig) -> Vec<String> {
    if format.usecs_grouped {
        let executed = fill(format, run, config, perf::grouped);
        let mut lines = vec![perf::running(format.collection, format.name), executed];
        lines.extend(perf::uprobe_figures(run));
        return lines;
    }
    let [total, blank] = perf::total_time(run);
    let usecs = perf::usecs_per_op(run, run.ops);
    let mut lines = vec![
        perf::running(format.collection, format.name),
        fill(format, run, config, |n| n.to_string()),
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

/// Writes a [`PerfFormat::executed`] line: the run's operations and calls
/// as `figure` writes them (perf groups the digits of some), the producers and
/// the options as they are.
fn fill(
    format: &PerfFormat,
    run: &FixedRun,
    config: &RunConfig,
    figure: fn(u64) -> String,
) -> String {
    format
        .executed
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.to_string(),
            Piece::Ops => figure(run.ops),
            Piece::Calls => figure(run.calls),
            Piece::Producers => config.producers.to_string(),
            Piece::Param(option) => config.params.number(option).to_string(),
        })
        .collect()
}

/// Which of bpf-nop's batches its timing line's samples are: `: every
/// batch run, less outliers`, or of how many run, where a CPU's slots
/// (`timing::TIMED_PER_CPU`) filled before the run ended.
fn batches_used(kept: &BTreeMap<String, f64>) -> String {
    let (Some(&timed), Some(&run)) = (kept.get(timing::KEPT_TIMED), kept.get(timing::KEPT_BATCHES))
    else {
        return String::new();
    };
    match timed >= run {
        true => ": every batch run, less outliers".to_string(),
        false => format!(
            ": the {timed:.0} batches timed of {run:.0} run (a CPU times its first {}), less \
             outliers",
            timing::TIMED_PER_CPU
        ),
    }
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

    /// Every option a perf line shows is one its benchmark declares
    /// (reading another panics).
    #[test]
    fn every_perf_line_fills_from_its_own_options() {
        for bench in benches::all() {
            let Metric::Ops(format) = bench.metric() else {
                continue;
            };
            let config = bench.default_config().unwrap();
            let line = fill(&format, &fixed(7, 7), &config, |n| n.to_string());
            assert!(line.starts_with("# ") && line.contains('7'), "{line}");
        }
    }

    /// The lines of a fixed run of `name` with `producers`.
    fn fixed_lines(name: &str, producers: usize, calls: u64, ops: u64) -> Vec<String> {
        let bench = benches::find(name).unwrap();
        let mut config = bench.default_config().unwrap();
        config.producers = producers;
        Reporter::new(bench).fixed(&fixed(calls, ops), &config)
    }

    #[test]
    fn perf_blocks_follow_perf_bench() {
        let lines = fixed_lines("syscall-basic", 1, 10_000_000, 10_000_000);
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
        let lines = fixed_lines("breakpoint-thread", 2, 56, 1120);
        assert_eq!(
            lines[1],
            "# Created/joined 56 threads with 1 breakpoints and 2 parallelism"
        );
        assert!(lines[5].ends_with(" usecs/op/cpu"), "{lines:?}");
        assert_eq!(lines.len(), 6);
        let lines = fixed_lines("uprobe-empty", 1, 1000, 1000);
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
