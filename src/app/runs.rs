//! What the rounds ask of the world: one run done, whether a signal asked
//! to stop, how long the rounds have taken, and where lines go. In
//! production the kernel does the run ([`KernelRuns`], through
//! [`one_run`]), the signal thread answers and the console prints; the unit
//! tests give a mock of each, so that the sequencing runs in milliseconds.

use std::time::Instant;

use super::one_run::{one_run, Ran, RunAsk};
use crate::error::Result;
use crate::interrupt;
use crate::report::console::Console;

/// Where the lines of the rounds and of their close go.
pub(super) trait Lines {
    fn line(&self, line: &str);
    fn warn(&self, line: &str);
}

impl Lines for Console {
    fn line(&self, line: &str) {
        Console::line(self, line);
    }
    fn warn(&self, line: &str) {
        Console::warn(self, line);
    }
}

/// How the rounds get one run done, and learn of a stop and of time; `C`
/// is where the run's lines go.
pub(super) trait Runs<C: Lines> {
    /// Sets up, runs and reports one configuration.
    fn one_run(&mut self, ask: RunAsk, console: &mut C) -> Result<Ran>;

    /// The signal that asked bench to stop, if one did.
    fn interrupted(&self) -> Option<i32>;

    /// Whole seconds since the rounds started.
    fn elapsed_secs(&self) -> u64;
}

/// The real thing: the kernel runs, the signal thread stops, the clock
/// on the wall.
pub(super) struct KernelRuns {
    started: Instant,
}

impl KernelRuns {
    /// Its clock starts now.
    pub fn start() -> KernelRuns {
        KernelRuns {
            started: Instant::now(),
        }
    }
}

impl Runs<Console> for KernelRuns {
    fn one_run(&mut self, ask: RunAsk, console: &mut Console) -> Result<Ran> {
        one_run(ask, console)
    }

    fn interrupted(&self) -> Option<i32> {
        interrupt::received()
    }

    fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}
