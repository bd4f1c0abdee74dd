//! The lines of `--list` and `--probe`, and the JSON of `--probe --json`.

use crate::benches::{self, Benchmark};
use crate::results::{ProbeFile, ProbeOutcome as Outcome, ProbeStatus as Status};

/// `--list`: a title, then every benchmark with its description.
pub fn list_lines() -> Vec<String> {
    let width = benches::all().map(|b| b.name().len()).max().unwrap_or(0);
    let mut lines = vec![
        "Available benchmarks ([--body]: takes --body KIND and -s, its stack body: a kernel \
         stack per hit as the kernel runner's -s; [-s: user stack]: -s takes a user stack per \
         hit, where the kernel runner's -s takes none; [--pid-filter]: takes --pid-filter):"
            .to_string(),
    ];
    lines.extend(benches::all().map(|b: &dyn Benchmark| {
        let mut takes = Vec::new();
        if b.takes_bodies() {
            takes.push("--body");
        }
        if b.takes_user_stack() {
            takes.push("-s: user stack");
        }
        if b.takes_pid_filter() {
            takes.push("--pid-filter");
        }
        let takes = match takes.is_empty() {
            true => String::new(),
            false => format!(" [{}]", takes.join(", ")),
        };
        format!("  {:width$}  {}{takes}", b.name(), b.description())
    }));
    lines
}

/// `--probe`: one benchmark's line, `ok` or why not, its name padded to
/// `width` (the longest name probed).
pub fn probe_line(o: &Outcome, width: usize) -> String {
    let reason = o.reason.as_deref().unwrap_or("");
    let outcome = match o.status {
        Status::Ok if reason.is_empty() => "ok".to_string(),
        Status::Ok => format!("ok ({reason})"),
        Status::Unsupported => format!("unsupported: {reason}"),
        Status::Permission => reason.to_string(),
        Status::Error => format!("error: {reason}"),
    };
    format!("{:width$}  {outcome}", o.name)
}

/// `--probe --json`: the whole file, pretty-printed.
pub fn probe_json(file: &ProbeFile) -> String {
    // Plain strings and enums: serialising them cannot fail.
    let mut text = serde_json::to_string_pretty(file).unwrap_or_default();
    text.push('\n');
    text
}
