//! What the user sees while bench runs: report lines on stdout (on stderr when
//! stdout carries JSON), and a progress bar on stderr over warm-up and
//! measurement, only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stats::Sample;

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
