//! The shell completions and the man pages, generated from the clap
//! definitions.

use super::args::command;
use super::Shell;
use crate::error::{Error, Result};
use crate::report::output;

/// The completion script for `shell`, generated from the clap definitions.
pub fn completions(shell: Shell) -> Vec<u8> {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "bench", &mut script);
    script
}

/// The pages of the manual (docs/, beside README.md in the source tree) each
/// man page points to in its SEE ALSO section: the pages README.md links to.
pub(super) fn manual_pages(page: &str) -> &'static [(&'static str, &'static str)] {
    match page {
        "bench-compare" => &[
            ("docs/results.md", "keep, compare and sweep results"),
            (
                "docs/sensitivity.md",
                "is the difference real: runs, interleaving, calibrate",
            ),
            ("docs/exit-codes.md", "exit codes"),
        ],
        "bench-calibrate" => &[
            (
                "docs/sensitivity.md",
                "is the difference real: runs, interleaving, calibrate",
            ),
            (
                "docs/running.md",
                "running a benchmark and reading a result",
            ),
            ("docs/exit-codes.md", "exit codes"),
        ],
        "bench-history" | "bench-export" => &[
            (
                "docs/history.md",
                "the history: keep results, find where a number changed",
            ),
            ("docs/results.md", "keep, compare and sweep results"),
            ("docs/exit-codes.md", "exit codes"),
        ],
        "bench-completions" | "bench-man" => &[
            ("docs/README.md", "the index of the manual"),
            (
                "docs/running.md",
                "running a benchmark and reading a result",
            ),
        ],
        _ => &[
            ("docs/README.md", "the index of the manual"),
            (
                "docs/running.md",
                "running a benchmark and reading a result: options, figures, privileges",
            ),
            (
                "docs/benchmarks.md",
                "the benchmark families, and what this kernel can run",
            ),
            ("docs/attach.md", "attach and detach, churn"),
            ("docs/latency.md", "the latency of a hit and its tail"),
            (
                "docs/bodies.md",
                "probe bodies: what a tracer costs per hit",
            ),
            ("docs/results.md", "keep, compare and sweep results"),
            (
                "docs/history.md",
                "the history: keep results, find where a number changed",
            ),
            (
                "docs/sensitivity.md",
                "is the difference real: runs, interleaving, calibrate",
            ),
            ("docs/kernels.md", "other kernels in a VM"),
            ("docs/profiles.md", "where the time goes"),
            ("docs/scripts.md", "the scripts"),
            ("docs/exit-codes.md", "exit codes, interrupts and leftovers"),
        ],
    }
}

/// The SEE ALSO section of man page `page`, in roff: the manual's pages, by
/// their paths in the source tree.
pub(super) fn see_also(page: &str) -> String {
    // The paths and descriptions hold no roff control characters at a line's
    // start; a hyphen is written \- as clap_mangen writes it.
    let roman = |text: &str| text.replace('-', "\\-");
    let mut roff = String::from(
        ".SH \"SEE ALSO\"\nThe manual, in the source tree of bench (README.md, then docs/):\n",
    );
    for (path, what) in manual_pages(page) {
        roff.push_str(&format!(".TP\n{}\n{}\n", roman(path), roman(what)));
    }
    roff
}

/// The man page, in roff, generated from the clap definitions: bench(1),
/// or with a subcommand's name its own page (bench-compare(1) and so on, the
/// pages bench(1) points to). Each ends with the manual's pages (SEE ALSO).
pub fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>> {
    // `bench help` is clap's; it has no page for SEE ALSO to point to.
    let cmd = command().disable_help_subcommand(true);
    let (cmd, page_name) = match subcommand {
        None => (cmd, "bench"),
        Some(name) => {
            let sub = cmd
                .find_subcommand(name)
                .cloned()
                .ok_or_else(|| Error::usage(format!("bench has no subcommand '{name}'")))?;
            // clap names are static: one per subcommand with a page.
            let page: &'static str = match name {
                "compare" => "bench-compare",
                "calibrate" => "bench-calibrate",
                "history" => "bench-history",
                "export" => "bench-export",
                "completions" => "bench-completions",
                _ => "bench-man",
            };
            (sub.name(page).bin_name(format!("bench {name}")), page)
        }
    };
    let mut page = Vec::new();
    // The header names the version on every page (a subcommand has none of
    // its own, and clap would leave it out).
    let source = format!("{page_name} {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(cmd)
        .source(source)
        .render(&mut page)
        .map_err(|e| {
            Error::runtime(format!(
                "cannot render the man page: {}",
                output::reason(&e)
            ))
        })?;
    // SEE ALSO goes before VERSION, where man pages keep it.
    let see_also = see_also(page_name);
    let at = find_bytes(&page, b"\n.SH VERSION\n").map_or(page.len(), |at| at + 1);
    page.splice(at..at, see_also.into_bytes());
    Ok(page)
}

/// Where `needle` first occurs in `haystack`.
pub(super) fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
