//! What the plain examples that print a rate share: their numeric arguments
//! and their one line of output.

use std::process::ExitCode;

/// The argument at `i` as a number, or `default` when it is missing or not one.
pub fn number(args: &[String], i: usize, default: u64) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Prints the rate in M/s, or `name`'s error on stderr, and the exit code
/// that goes with it.
pub fn print_rate(name: &str, rate: Result<f64, String>) -> ExitCode {
    match rate {
        Ok(rate) => {
            println!("{rate:.3}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{name}: {err}");
            ExitCode::FAILURE
        }
    }
}
