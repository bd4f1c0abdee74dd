//! One invocation's runs in three steps, one module each: [`plan`] checks
//! everything the command line decides before anything runs; [`execute`]
//! runs the rounds, each run through [`one_run`], whose phases the console,
//! the profiler and the noise meter observe; [`publish`] computes the
//! statistics over runs, prints the closing lines, writes the exports and
//! words an interrupt. `app` sequences; the work is done by the runner,
//! `stats` and `report`.
//!
//! A round runs every benchmark at every sweep point once; `--runs N` is N
//! rounds. Within a round the order is rotated by one each time, so that no
//! configuration always goes first (on these machines the first of two
//! back-to-back runs tends to be the faster).

mod execute;
mod figures;
mod one_run;
mod plan;
mod publish;
mod runs;
mod sequential;

use crate::bpf;
use crate::config::RunRequest;
use crate::error::Result;
use crate::history;
use crate::report::console::Console;

pub fn run(request: &RunRequest) -> Result<()> {
    bpf::init_logging(request.verbose);
    if let Some(path) = &request.history {
        history::check_target(path)?;
    }
    let plan = plan::plan(request)?;
    let mut console = Console::new(request.outputs.stdout_taken());
    let mut runs = runs::KernelRuns::start();
    // A second Ctrl-C writes the runs completed so far before it exits.
    let mut after_run = |execution: &execute::Execution, precision| {
        publish::keep_for_hard_exit(request, &plan, execution, precision)
    };
    let execution = execute::execute(&plan, request, &mut console, &mut runs, &mut after_run);
    publish::publish(request, &plan, execution, &console)
}

#[cfg(test)]
mod mock;
#[cfg(test)]
mod tests;
