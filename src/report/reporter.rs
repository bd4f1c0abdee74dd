//! The one reporter: every line a run prints, from what the benchmark
//! declared: its [`Lines`] (the kernel runner's, or perf's) over its
//! channels, printed by [`super::lines`].

use super::lines::{runner_block, Notes, Printer, Scope};
use super::{latency, perf, sweep_tables, text};

use crate::benches::Benchmark;
use crate::channels::{self, Channel};
use crate::config::{Params, RunConfig};
use crate::figures::{FigureDecl, View};
use crate::latency::{LatencyOverRuns, LatencyRecord};
use crate::lines::{Fixed, Lines, PerfFormat, PerfPiece};
use crate::probe_path::ProbePath;
use crate::red_zone::RedZoneFound;
use crate::results::RunRecord;
use crate::runner::FixedRun;
use crate::stats::{MeanSd, Sample};

#[derive(Clone, Copy, Debug)]
pub struct Reporter {
    bench: &'static str,
    lines: &'static Lines,
    channels: &'static [Channel],
    /// The machine emulates its CPU (a TCG VM): its times are marked.
    emulated: bool,
}

impl Reporter {
    pub fn new(bench: &'static dyn Benchmark) -> Reporter {
        Reporter {
            bench: bench.name(),
            lines: &bench.info().lines,
            channels: bench.channels(),
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

    /// The line that says how the kernel handled the probe, and what its
    /// path left of a leaf function's red zone.
    pub fn probe_path(&self, path: ProbePath, red_zone: Option<&RedZoneFound>) -> String {
        let mut line = format!("probe path: {} ({})", path.name(), path.evidence());
        if let Some(found) = red_zone {
            line += &format!(", {}", text::red_zone_words(found, path));
        }
        line
    }

    /// The warning when the red zone could not be checked.
    pub fn red_zone_unknown(&self, why: &str) -> String {
        format!("warning: cannot check the red zone: {why}")
    }

    /// The warning when the probe path cannot be found.
    pub fn probe_path_unknown(&self, why: &str) -> String {
        format!("warning: cannot tell the probe path: {why}")
    }

    /// The names of the channels read each tick, in the samples' order.
    fn ticked(&self) -> Vec<&'static str> {
        channels::ticked(self.channels).map(|c| c.name).collect()
    }

    fn printer<'a>(&'a self, params: &'a Params, notes: Notes) -> Printer<'a> {
        Printer {
            lines: self.lines,
            bench: self.bench,
            params,
            notes,
        }
    }

    /// One second's line.
    pub fn tick(&self, sample: &Sample, producers: usize, params: &Params) -> String {
        let ticked = self.ticked();
        let view = View {
            producers,
            ..View::new(&ticked)
        };
        self.printer(params, Notes::default()).tick(&view, sample)
    }

    /// Whether `-q` keeps the per-second lines.
    pub fn ticks_when_quiet(&self) -> bool {
        self.lines.ticks_when_quiet
    }

    /// A timed run's closing lines: those before its summary, the
    /// `Summary:` (the last line on stdout, which scripts cut; `Run N:`
    /// for one of several runs), and those after it.
    pub fn run_lines(&self, record: &RunRecord, run: Option<u32>, params: &Params) -> Vec<String> {
        let ticked = self.ticked();
        let view = record.view(&ticked);
        let notes = Notes {
            noisy_late_ns: record.summary().filter(|s| s.noisy).map(|s| s.max_late_ns),
            emulated: self.emulated,
        };
        let printer = self.printer(params, notes);
        let mut lines = printer.before_summary(&view);
        lines.extend(printer.summary(Scope::One(&view)).into_iter().map(|line| {
            match (run, line.strip_prefix("Summary:")) {
                (Some(run), Some(rest)) => format!("Run {run:4}:{rest}"),
                _ => line,
            }
        }));
        lines.extend(printer.after_summary(&view));
        lines
    }

    /// The `Summary:` line over independent runs.
    pub fn summary_over_runs(&self, records: &[RunRecord], params: &Params) -> Vec<String> {
        let ticked = self.ticked();
        let views: Vec<View> = records.iter().map(|r| r.view(&ticked)).collect();
        let summaries = records.iter().filter_map(|r| r.summary());
        let notes = Notes {
            noisy_late_ns: summaries.filter(|s| s.noisy).map(|s| s.max_late_ns).max(),
            emulated: self.emulated,
        };
        self.printer(params, notes).summary(Scope::Runs(&views))
    }

    /// The report of a fixed-work (`--repeat`) run: all that run prints.
    pub fn fixed(&self, record: &RunRecord, config: &RunConfig) -> Vec<String> {
        let Some(run) = record.fixed() else {
            return Vec::new();
        };
        let ticked = self.ticked();
        let view = record.view(&ticked);
        let notes = Notes {
            noisy_late_ns: None,
            emulated: self.emulated,
        };
        let printer = self.printer(&config.params, notes);
        let mut lines = match self.lines.fixed {
            Fixed::Perf(format) => perf_block(&format, run, config),
            Fixed::Runner { .. } => runner_block(self.bench, run, config.producers),
        };
        if let Some((counts, after)) = printer.fixed_counts(&view) {
            lines.extend(counts);
            if self.emulated {
                lines.push(format!(
                    "# {}",
                    super::lines::EMULATED.trim_start_matches(", ")
                ));
            }
            lines.extend(printer.before_summary(&view));
            lines.extend(after);
        } else {
            lines.extend(printer.before_summary(&view));
        }
        lines.extend(printer.after_summary(&view));
        lines
    }

    /// A run's `--latency` lines, printed before its summary.
    pub fn latency(&self, latency: &LatencyRecord) -> Vec<String> {
        latency::run_lines(latency, self.lines.operation)
    }

    /// The `--latency` lines over runs.
    pub fn latency_over_runs(&self, latency: &LatencyOverRuns) -> Vec<String> {
        latency::over_runs_lines(latency, self.lines.operation)
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
        figure: &FigureDecl,
        points: &[(u64, usize, MeanSd)],
        producers_swept: bool,
    ) -> Vec<String> {
        let mut lines = vec![format!("Sweep of {param} for {}:", self.bench)];
        lines.extend(sweep_tables::sweep_table(
            param,
            figure,
            points,
            producers_swept,
        ));
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
            PerfPiece::Text(text) => text.to_string(),
            PerfPiece::Ops => figure(run.ops),
            PerfPiece::Calls => figure(run.calls),
            PerfPiece::Producers => config.producers.to_string(),
            PerfPiece::Param(option) => config.params.number(option).to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benches;
    use crate::results::Outcome;
    use crate::runner::affinity::{place, Affinity};

    fn fixed(calls: u64, ops: u64) -> FixedRun {
        FixedRun {
            elapsed_ns: 779_066_000,
            calls,
            ops,
            values: vec![Some(ops), Some(0)],
        }
    }

    /// Every option a perf line shows is one its benchmark declares
    /// (reading another panics).
    #[test]
    fn every_perf_line_fills_from_its_own_options() {
        for bench in benches::all() {
            let Fixed::Perf(format) = bench.lines().fixed else {
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
        let placement = place(&Affinity::None, producers, 0, &[0]).unwrap();
        let mut record = RunRecord::new(&config, &placement);
        record.outcome = Outcome::Fixed {
            run: fixed(calls, ops),
            churn: None,
        };
        Reporter::new(bench).fixed(&record, &config)
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

    /// What `cut -d'(' -f1 | cut -d' ' -f3-` leaves of a line.
    fn kernel_cut(line: &str) -> String {
        let first = line.split('(').next().unwrap();
        first.split(' ').skip(2).collect::<Vec<_>>().join(" ")
    }

    /// The hits lines of the kernel runner, whose Summary scripts cut.
    #[test]
    fn the_summary_survives_the_kernel_scripts_cut() {
        use crate::report::lines::testing;
        let seconds = [[1_222_000u64, 0], [1_246_000, 0]];
        let line = &testing::summary("trig-uprobe-nop", &seconds, 1)[0];
        assert_eq!(
            line,
            "Summary: hits    1.234 \u{b1} 0.017M/s (  1.234M/prod), drops    0.000 \u{b1} \
             0.000M/s, total operations    1.234 \u{b1} 0.017M/s, latency  810.373 ns/op/prod"
        );
        assert_eq!(kernel_cut(line).trim(), "1.234 \u{b1} 0.017M/s");
        // A benchmark that cannot drop prints no drops, as upstream's.
        let counted = testing::summary("trig-usermode-count", &[[1_234_000u64]], 1);
        assert!(
            counted[0].contains("drops    0.000 \u{b1} 0.000M/s"),
            "{counted:?}"
        );
        assert_eq!(
            testing::tick("trig-uprobe-nop", &[1_234_015, 0], 1),
            "Iter   3 ( 12.345us): hits    1.234M/s (  1.234M/prod), drops    0.000M/s, total \
             operations    1.234M/s"
        );
    }

    #[test]
    fn a_noisy_or_emulated_run_says_so_after_its_figures() {
        let mut run =
            crate::report::lines::testing::run("trig-uprobe-nop", &[[1_234_000u64, 0]], 1);
        if let Outcome::Timed {
            summary: Some(summary),
            ..
        } = &mut run.outcome
        {
            summary.noisy = true;
            summary.max_late_ns = 123_400_000;
        }
        let bench = benches::find("trig-uprobe-nop").unwrap();
        let config = bench.default_config().unwrap();
        let line = &Reporter::new(bench)
            .emulated(true)
            .run_lines(&run, Some(2), &config.params)[0];
        assert!(line.starts_with("Run    2: hits    1.234 \u{b1}"), "{line}");
        assert!(
            line.ends_with(
                "latency  810.373 ns/op/prod, noisy: a tick was 123.4 ms late, emulated (TCG): \
                 not a performance number"
            ),
            "{line}"
        );
    }

    #[test]
    fn ops_lines_pick_a_unit_and_stay_cuttable() {
        use crate::report::lines::testing;
        let seconds = [[35_123u64 - 456], [35_123 + 456]];
        let line = &testing::summary("breakpoint-thread", &seconds, 2)[0];
        assert!(
            line.starts_with("Summary: ops   35.123 \u{b1} 0.645K/s ( 17.561K/prod), usecs/op     28.471 \u{b1} 0.523, usecs/op/cpu     56.943"),
            "{line}"
        );
        assert_eq!(kernel_cut(line).trim(), "35.123 \u{b1} 0.645K/s");
        assert_eq!(
            testing::tick("syscall-basic", &[35_123], 1),
            "Iter   3 ( 12.345us): ops   35.123K/s ( 35.123K/prod), usecs/op     28.471"
        );
    }

    #[test]
    fn hit_ops_lines_are_the_kernel_runners_ops_report() {
        use crate::report::lines::testing;
        let line = &testing::summary("bpf-loop", &[[1_234_000u64; 1]; 3], 1)[0];
        assert_eq!(
            line,
            "Summary: throughput    1.234 \u{b1} 0.000 M ops/s (  1.234M ops/prod), latency  810.373 ns/op"
        );
        assert_eq!(
            testing::tick("bpf-loop", &[1_234_000], 2),
            "Iter   3 ( 12.345us): hits    1.234M/s (  0.617M/prod)"
        );
    }

    #[test]
    fn fixed_runs_report_time_per_op_and_counts() {
        let lines = fixed_lines("trig-uprobe-nop", 2, 1_000_000, 1_000_000);
        assert_eq!(
            lines[0],
            "# Executed 1000000 calls of trig-uprobe-nop on 2 producers"
        );
        assert_eq!(lines[1], "     Total time: 0.779 [sec]");
        assert_eq!(lines[3], "       0.779066 usecs/op");
        assert_eq!(lines[4], "        1000000 hits");
        assert_eq!(lines[5], "              0 drops");
        let lines = fixed_lines("trig-rawtp", 1, 10, 1000);
        assert_eq!(
            lines[0],
            "# Executed 10 calls of trig-rawtp (1000 operations) on 1 producer"
        );
    }
}
