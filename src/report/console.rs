//! What the user sees while bench runs: report lines on stdout (on stderr when
//! stdout carries JSON), and a progress bar on stderr over warm-up and
//! measurement, only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::reporter::Reporter;
use crate::config::{Params, RunConfig};
use crate::runner::cycles::Step;
use crate::runner::phases::{RunObserver, RunSeconds};
use crate::stats::Sample;
use crate::trigger_path::TriggerUsed;

pub struct Console {
    to_stderr: bool,
    bar: Option<ProgressBar>,
    warmup: u32,
}

impl Console {
    pub fn new(to_stderr: bool) -> Self {
        Console {
            to_stderr,
            bar: None,
            warmup: 0,
        }
    }

    /// Prints one report line without tearing the bar.
    pub fn line(&self, line: &str) {
        let print = || {
            if self.to_stderr {
                eprintln!("{line}");
            } else {
                super::output::print_line(line);
            }
        };
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// A warning: always on stderr, without tearing the bar.
    pub fn warn(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Shows the bar for a timed run, if stderr is a terminal.
    pub fn start_bar(&mut self, warmup: u32, duration: u32) {
        self.warmup = warmup;
        self.bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(u64::from(warmup + duration)),
                ProgressDrawTarget::stderr(),
            );
            let style = ProgressStyle::with_template("{spinner} {msg:10} [{bar:30}] {pos}/{len} s")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(if warmup > 0 { "warm-up" } else { "measuring" });
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
    }

    pub fn advance(&self, sample: &Sample) {
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(sample.iteration) + 1);
            if sample.iteration + 1 >= self.warmup {
                bar.set_message("measuring");
            }
        }
    }

    /// Shows a bar over an attach cycle's links, if stderr is a terminal and
    /// there are enough links for it to move.
    pub fn start_cycle_bar(&mut self, links: usize) {
        self.bar = (std::io::stderr().is_terminal() && links > 1).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(links as u64), ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template("{spinner} {msg:10} [{bar:30}] {pos}/{len} links")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
    }

    /// Moves the cycle bar to `step`.
    pub fn cycle_step(&self, step: Step) {
        if let Some(bar) = &self.bar {
            bar.set_message(super::attach::step_words(step));
            match step {
                Step::Attaching { done, .. } => bar.set_position(done as u64),
                Step::Verifying => {}
                Step::Detaching { done, of } => bar.set_position((of - done) as u64),
            }
        }
    }

    pub fn finish_bar(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.finish_bar();
    }
}

/// The console as a run's observer: the set-up chatter, the progress bar and
/// one line per second.
pub struct RunConsole<'a> {
    console: &'a mut Console,
    reporter: Reporter,
    producers: usize,
    /// The benchmark's own options, which its lines may read.
    params: &'a Params,
    /// Whether the set-up lines are printed (not with -q, nor for a fixed run).
    chatter: bool,
    /// A `-s` run of a probe in user space: its set-up line says that the
    /// stack is the user's, which the kernel runner's `-s` does not take.
    user_stack: bool,
    printk: bool,
    /// Says the trigger a helper benchmark's body runs from, once set up.
    trigger: bool,
    started: bool,
}

impl<'a> RunConsole<'a> {
    pub fn new(
        console: &'a mut Console,
        reporter: Reporter,
        config: &'a RunConfig,
        chatter: bool,
    ) -> RunConsole<'a> {
        RunConsole {
            console,
            reporter,
            producers: config.producers,
            params: &config.params,
            chatter,
            user_stack: false,
            printk: false,
            trigger: false,
            started: false,
        }
    }

    /// Says under the set-up line that `-s` takes a user stack here.
    pub fn user_stack_note(self, user_stack: bool) -> RunConsole<'a> {
        RunConsole { user_stack, ..self }
    }

    /// Says under the set-up line that `--body printk` fills the shared
    /// trace buffer.
    pub fn printk_note(self, printk: bool) -> RunConsole<'a> {
        RunConsole { printk, ..self }
    }

    /// Says, once set up, which trigger the body runs from (for benchmarks
    /// that choose one): even for a fixed run, whose figures it changes.
    pub fn trigger_note(self, trigger: bool) -> RunConsole<'a> {
        RunConsole { trigger, ..self }
    }

    /// The run has started: say so, and show the bar over its seconds.
    fn start(&mut self, timing: RunSeconds) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        if self.chatter {
            self.console.line(&self.reporter.started());
        }
        self.console
            .start_bar(timing.warmup_secs, timing.duration_secs);
    }
}

impl RunObserver for RunConsole<'_> {
    fn setting_up(&mut self) {
        if self.chatter {
            self.console.line(&self.reporter.setting_up());
            if self.user_stack {
                self.console.line(&self.reporter.user_stack_note());
            }
            if self.printk {
                self.console.line(&self.reporter.printk_note());
            }
        }
    }

    fn set_up(&mut self, trigger: Option<&TriggerUsed>) {
        if let Some(used) = trigger.filter(|_| self.trigger) {
            self.console.line(&super::text::trigger_line(used));
        }
    }

    fn warmup_started(&mut self, timing: RunSeconds) {
        self.start(timing);
    }

    fn measure_started(&mut self, timing: RunSeconds) {
        self.start(timing);
    }

    fn sample(&mut self, sample: &Sample) {
        // The bar first, so that it redraws in its new state under the line.
        self.console.advance(sample);
        if self.chatter || self.reporter.ticks_when_quiet() {
            let line = self.reporter.tick(sample, self.producers, self.params);
            self.console.line(&line);
        }
    }

    fn measure_ended(&mut self, _samples: &[Sample]) {
        self.console.finish_bar();
    }

    fn tearing_down(&mut self) {
        self.console.finish_bar();
    }
}

/// The last words of a failed command, on stderr: `error: ...`, or the
/// sentence of an unsupported feature (naming the benchmark of a run of one)
/// or of an interrupt as it is.
pub fn error(err: &crate::error::Error, bench: Option<&str>) {
    use crate::error::Error;
    match (err, bench) {
        (Error::Unsupported(why), Some(bench)) => eprintln!("unsupported: {bench}: {why}"),
        (Error::Unsupported(_), None) | (Error::Interrupted { .. }, _) => eprintln!("{err}"),
        _ => eprintln!("error: {err}"),
    }
}

/// A second SIGINT or SIGTERM (`signal`): bench exits at once.
pub fn interrupted_twice(signal: &str) {
    eprintln!(
        "interrupted by {signal} twice: exiting at once; result files hold the completed runs, \
         marked partial, and the kernel releases what is still attached"
    );
}

/// A signal (`signal`) ended a command that had nothing to keep: bench
/// exits at once.
pub fn interrupted(signal: &str) {
    eprintln!("interrupted by {signal}");
}

/// A piece of libbpf's log (`-v`), as libbpf wrote it.
pub fn libbpf_log(text: &str) {
    eprint!("{text}");
}

/// A bug's one line, instead of a backtrace.
pub fn internal_error(thread: &str, what: &str) {
    eprintln!("error: internal error in thread {thread}: {what}");
}

/// A warning found before the console exists (while planning), on stderr.
pub fn warning(line: &str) {
    eprintln!("{line}");
}

/// Draws the progress of a long set-up on stderr, redrawn in place: not a
/// report line, so never on stdout.
pub fn draw_progress(progress: crate::progress::Progress) {
    use crate::progress::Progress;
    match progress {
        Progress::Attaching { done, of } => {
            eprint!("\rattaching to kernel functions: {done} of {of}")
        }
        Progress::Finished => eprintln!(),
    }
}
