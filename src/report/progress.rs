//! A progress bar on stderr over warm-up and measurement, only when stderr is
//! a terminal: logs and pipes get the plain lines alone.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stats::Sample;

pub struct Progress {
    bar: Option<ProgressBar>,
    warmup: u32,
}

impl Progress {
    pub fn new(warmup: u32, duration: u32) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
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
        Progress { bar, warmup }
    }

    /// Prints a line on stdout without tearing the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    pub fn advance(&self, sample: &Sample) {
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(sample.iteration) + 1);
            if sample.iteration + 1 >= self.warmup {
                bar.set_message("measuring");
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
