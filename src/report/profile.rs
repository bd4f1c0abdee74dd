//! `--profile`'s output: the breakdown printed before the run's summary line,
//! and the files of `--profile=DIR`: folded stacks (the input of
//! flamegraph.pl, inferno and speedscope), an SVG flame graph drawn by
//! inferno, and the breakdown as JSON.

use std::path::{Path, PathBuf};

use inferno::flamegraph::{self, color::MultiPalette, Options, Palette};

use super::output::write_file;
use crate::error::{Error, Result};
use crate::profile::stages::FunctionShare;
use crate::profile::{Breakdown, FrameKind, Profile};

/// How many functions each printed list shows (the JSON keeps more).
const PRINTED_TOP: usize = 8;
/// Function names longer than this are cut at the front in the text: the
/// end of a Rust path says the most.
const NAME_WIDTH: usize = 60;

/// The breakdown's lines, printed before the `Summary:` line.
pub fn lines(breakdown: &Breakdown) -> Vec<String> {
    let mut lines = vec![format!(
        "Profile: {} samples at {} Hz over {:.2} s, {} on producer threads (on CPU {:.1} % of the time){}",
        breakdown.samples,
        breakdown.frequency_hz,
        breakdown.seconds,
        breakdown.producer_samples,
        breakdown.producer_on_cpu_pct,
        match breakdown.dropped_samples {
            0 => String::new(),
            n => format!(", {n} dropped (map full)"),
        }
    )];
    if breakdown.producer_samples == 0 {
        lines.push("  no sample found a producer thread: nothing to break down".to_string());
        return lines;
    }
    let per_hit = match breakdown.ns_per_hit {
        Some(ns) => format!("{ns:.1} ns per hit per producer"),
        None => "no hits to divide by".to_string(),
    };
    lines.push(format!(
        "  {:<28} {:>7} {:>9}   ({per_hit})",
        "stage", "share", "ns/hit"
    ));
    for stage in &breakdown.stages {
        lines.push(format!(
            "  {:<28} {:>5.1} % {:>9}",
            stage.stage.label(),
            stage.share_pct,
            stage
                .ns_per_hit
                .map_or_else(|| "-".to_string(), |ns| format!("{ns:.1}")),
        ));
    }
    // Time the producers were not running is no stage's: said apart.
    if let Some(off) = breakdown.off_cpu_ns_per_hit.filter(|&ns| ns >= 0.05) {
        lines.push(format!(
            "  {:<28} {:>7} {off:>9.1}",
            "off CPU (other tasks ran)", "-"
        ));
    }
    lines.push(format!(
        "  {:<NAME_WIDTH$} {:>7}",
        "top functions, self", "share"
    ));
    lines.extend(function_lines(&breakdown.top_self));
    lines.push(format!(
        "  {:<NAME_WIDTH$} {:>7}",
        "top kernel functions, inclusive", "share"
    ));
    lines.extend(function_lines(&breakdown.top_inclusive));
    if !breakdown.files.is_empty() {
        lines.push(format!("  files: {}", breakdown.files.join(", ")));
    }
    lines
}

fn function_lines(list: &[FunctionShare]) -> Vec<String> {
    list.iter()
        .take(PRINTED_TOP)
        .map(|f| {
            let name = f.function.clone();
            let count = name.chars().count();
            let name = if count > NAME_WIDTH {
                let cut: String = name.chars().skip(count - (NAME_WIDTH - 1)).collect();
                format!("\u{2026}{cut}")
            } else {
                name
            };
            format!("  {name:<NAME_WIDTH$} {:>5.1} %", f.share_pct)
        })
        .collect()
}

/// A frame's name as the folded stacks and the flame graph show it: kernel
/// frames end in `_[k]`, BPF programs (JIT code) in `_[j]`, the annotations
/// flamegraph.pl's and inferno's palettes colour by.
fn annotated(name: &str, kind: FrameKind) -> String {
    // `;` separates frames and a line ends a stack: neither may be in a name.
    let name = name.replace(';', ":").replace(['\n', '\r'], " ");
    match kind {
        FrameKind::User => name,
        FrameKind::Kernel => format!("{name}_[k]"),
        FrameKind::Bpf => format!("{name}_[j]"),
    }
}

/// The profile as folded stacks: `thread;outermost;...;innermost count`, one
/// line per distinct stack, most samples first.
pub fn folded(profile: &Profile) -> String {
    let mut text = String::new();
    for stack in &profile.stacks {
        let mut line = annotated(&stack.thread, FrameKind::User);
        for frame in stack.frames() {
            line.push(';');
            line.push_str(&annotated(&frame.name, frame.kind));
        }
        if stack.kernel_lost {
            line.push_str(";[kernel stack lost]_[k]");
        }
        text.push_str(&format!("{line} {}\n", stack.count));
    }
    text
}

/// An SVG flame graph of folded stacks.
pub fn flame_graph(folded: &str, title: &str, subtitle: &str) -> Result<Vec<u8>> {
    let mut options = Options::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle.to_string());
    options.colors = Palette::Multi(MultiPalette::Java);
    options.count_name = "samples".to_string();
    // The same function has the same colour in every graph, to compare two.
    options.hash = true;
    options.deterministic = true;
    let mut svg = Vec::new();
    let lines: Vec<&str> = folded.lines().collect();
    if lines.is_empty() {
        return Err(Error::runtime(
            "--profile: no sample of bench's threads to draw",
        ));
    }
    flamegraph::from_lines(&mut options, lines, &mut svg)
        .map_err(|e| Error::runtime(format!("--profile: cannot draw the flame graph: {e}")))?;
    Ok(svg)
}

/// Writes a run's folded stacks, flame graph and breakdown into `dir` as
/// `stem.folded`, `stem.svg` and `stem.json`; returns their paths. The
/// breakdown's `files` name them.
pub fn write_files(
    dir: &Path,
    stem: &str,
    title: &str,
    profile: &Profile,
    breakdown: &mut Breakdown,
) -> Result<Vec<PathBuf>> {
    let folded_text = folded(profile);
    let path = |ext: &str| dir.join(format!("{stem}.{ext}"));
    let (folded_path, svg_path, json_path) = (path("folded"), path("svg"), path("json"));
    breakdown.files = [&folded_path, &svg_path, &json_path]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    write_file(&folded_path, folded_text.as_bytes())?;
    let mut written = vec![folded_path];
    if !folded_text.is_empty() {
        let subtitle = format!(
            "{} samples at {} Hz over {:.2} s; kernel frames _[k], BPF programs _[j]",
            breakdown.samples, breakdown.frequency_hz, breakdown.seconds
        );
        write_file(&svg_path, &flame_graph(&folded_text, title, &subtitle)?)?;
        written.push(svg_path);
    } else {
        breakdown.files.retain(|f| !f.ends_with(".svg"));
    }
    // Serialising plain structs of numbers and strings cannot fail.
    let json = serde_json::to_string_pretty(breakdown).unwrap_or_default() + "\n";
    write_file(&json_path, json.as_bytes())?;
    written.push(json_path);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Frame, Stack};

    fn profile() -> Profile {
        let frame = |name: &str, kind| Frame {
            name: name.to_string(),
            kind,
        };
        Profile {
            freq_hz: 999,
            seconds: 1.0,
            stacks: vec![
                Stack {
                    thread: "producer-0".to_string(),
                    user: vec![frame("bench::run;x", FrameKind::User)],
                    kernel: vec![
                        frame("handle_swbp", FrameKind::Kernel),
                        frame("bpf_prog_1234_count_uprobe", FrameKind::Bpf),
                    ],
                    kernel_lost: false,
                    count: 30,
                },
                Stack {
                    thread: "producer-0".to_string(),
                    user: vec![frame("bench::run;x", FrameKind::User)],
                    kernel: Vec::new(),
                    kernel_lost: false,
                    count: 10,
                },
            ],
            other_ticks: 5,
            dropped: 0,
        }
    }

    #[test]
    fn folded_stacks_are_what_flame_graph_tools_read() {
        assert_eq!(
            folded(&profile()),
            "producer-0;bench::run:x;handle_swbp_[k];bpf_prog_1234_count_uprobe_[j] 30\n\
             producer-0;bench::run:x 10\n"
        );
    }

    #[test]
    fn the_flame_graph_is_svg_and_the_breakdown_prints() {
        let profile = profile();
        let svg = flame_graph(&folded(&profile), "t", "s").unwrap();
        let svg = String::from_utf8(svg).unwrap();
        // inferno's SVG declares its DTD.
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, options).expect("well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(svg.contains("count_uprobe"));
        assert!(flame_graph("", "t", "s").is_err());

        let breakdown = Breakdown::of(&profile, 1, Some(1e6));
        let lines = lines(&breakdown);
        assert!(
            lines[0].starts_with("Profile: 40 samples at 999 Hz"),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("BPF program") && l.contains("75.0 %")),
            "{lines:?}"
        );
    }
}
