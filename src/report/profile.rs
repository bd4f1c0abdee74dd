//! `--profile`'s output: the breakdown printed before the run's summary line,
//! and the files of `--profile=DIR`: folded stacks (the input of
//! flamegraph.pl, inferno and speedscope), an SVG flame graph drawn by
//! inferno, and the breakdown as JSON.

use std::path::{Path, PathBuf};

use inferno::flamegraph::{self, color::MultiPalette, Options, Palette};

use super::{Exporter, Rendered};
use crate::config::OutputTarget;
use crate::error::{Error, Result};
use crate::profile::stages::FunctionShare;
use crate::profile::{Breakdown, FrameKind, Profile};
use crate::results::ResultFile;

/// How many functions each printed list shows (the JSON keeps more).
const PRINTED_TOP: usize = 8;
/// Function names longer than this are cut at the front in the text: the
/// end of a Rust path says the most.
const NAME_WIDTH: usize = 60;

/// Where the sampler distorted what it measured: ticks that never fired
/// (lost, and left out of the time off CPU), and a kernel that throttled the
/// sampler because its interrupts took too long.
fn distortion_lines(breakdown: &Breakdown) -> Vec<String> {
    let expected = breakdown.frequency_hz as f64 * breakdown.seconds;
    let mut lines = Vec::new();
    // A tick or so per CPU is timing, not loss.
    if breakdown.missed_ticks as f64 > 0.01 * expected.max(100.0) {
        lines.push(format!(
            "  {} ticks never fired (lost, not counted as time off CPU)",
            breakdown.missed_ticks
        ));
    }
    // More than the drift between seconds: the sampler took its share.
    if let (Some(sampled), Some(unsampled)) = (breakdown.measured_rate, breakdown.warmup_rate) {
        if unsampled > 0.0 && sampled < 0.9 * unsampled {
            lines.push(format!(
                "  warning: with sampling on the rate is {:.0} % below the warm-up's (not \
                 sampled): sampling at {} Hz distorts the figures, the sampler's own time is \
                 in them; lower --profile-freq",
                (1.0 - sampled / unsampled) * 100.0,
                breakdown.frequency_hz
            ));
        }
    }
    if let Some(rate) = breakdown.throttled_to_hz {
        lines.push(format!(
            "  warning: the kernel throttled the sampler to {rate} Hz during the run (its \
             interrupts took too long): sampling at {} Hz distorts the figures, the \
             sampler's own time is in them; lower --profile-freq",
            breakdown.frequency_hz
        ));
    }
    lines
}

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
    lines.extend(distortion_lines(breakdown));
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

/// A run's profile files are named by the benchmark, the sweep point and the
/// run: `trig-uprobe-nop`, `trig-uprobe-nop-producers=2-run3`.
pub fn profile_name(bench: &str, point: Option<(String, &str)>, run: Option<u32>) -> String {
    let mut name = bench.to_string();
    if let Some((value, param)) = point {
        name.push_str(&format!("-{param}={value}"));
    }
    if let Some(run) = run {
        name.push_str(&format!("-run{run}"));
    }
    name
}

/// The files a run's profile makes in `dir`: `stem.folded`, `stem.svg` (when
/// a stack was sampled) and `stem.json`, the breakdown.
pub fn file_names(dir: &Path, stem: &str, profile: &Profile) -> Vec<PathBuf> {
    let path = |ext: &str| dir.join(format!("{stem}.{ext}"));
    let mut names = vec![path("folded")];
    if !folded(profile).is_empty() {
        names.push(path("svg"));
    }
    names.push(path("json"));
    names
}

/// Every file a run's profile may make in `dir` (the flame graph only when a
/// stack was sampled): what is checked before the run.
pub fn every_file(dir: &Path, stem: &str) -> [PathBuf; 3] {
    ["folded", "svg", "json"].map(|ext| dir.join(format!("{stem}.{ext}")))
}

/// The profiled runs' sampled stacks, by the name of their files
/// ([`profile_name`]): what the profile files are drawn from, and which the
/// result file does not keep.
#[derive(Clone, Debug, Default)]
pub struct RunStacks(Vec<(String, Profile)>);

impl RunStacks {
    /// Keeps the stacks of the run whose files are named `name`.
    pub fn keep(&mut self, name: String, profile: Profile) {
        self.0.push((name, profile));
    }

    /// The stacks of the run whose files are named `name`.
    pub fn of(&self, name: &str) -> Option<&Profile> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }
}

/// The exporter of `--profile=DIR`: each profiled run's folded stacks, flame
/// graph and breakdown, named by [`profile_name`] in the directory. Its flag
/// is --profile's own (a run option), so it is not in [`super::export::FORMATS`].
pub struct ProfileFiles;

impl Exporter for ProfileFiles {
    fn long(&self) -> &'static str {
        "profile"
    }

    fn help(&self) -> &'static str {
        "Write each run's folded stacks, flame graph and breakdown in DIR"
    }

    fn value_name(&self) -> &'static str {
        "DIR"
    }

    fn extension(&self) -> &'static str {
        "folded"
    }

    fn takes_stdout(&self) -> bool {
        false
    }

    /// One directory for every benchmark: the runs' files are named apart.
    fn file_for(&self, path: &Path, _bench: &str) -> PathBuf {
        path.to_path_buf()
    }

    /// Nothing: the stacks they are drawn from are not in the result file.
    fn files(&self, _result: &ResultFile, _target: &OutputTarget) -> Result<Vec<Rendered>> {
        Ok(Vec::new())
    }

    fn files_with(
        &self,
        result: &ResultFile,
        stacks: &RunStacks,
        target: &OutputTarget,
    ) -> Result<Vec<Rendered>> {
        let OutputTarget::File(dir) = target else {
            return Ok(Vec::new());
        };
        let param = result.sweep.as_ref().map(|s| s.param.as_str());
        let mut files = Vec::new();
        for run in &result.runs {
            let Some(breakdown) = &run.profile else {
                continue;
            };
            // A value of names (a body) is named by its label.
            let label = |value: u64| {
                result
                    .sweep
                    .as_ref()
                    .and_then(|s| s.labels.get(s.values.iter().position(|v| *v == value)?))
                    .cloned()
                    .unwrap_or_else(|| value.to_string())
            };
            let point = run.sweep_value.map(label).zip(param);
            let stem = profile_name(&result.benchmark, point, run.repetition);
            let Some(profile) = stacks.of(&stem) else {
                continue;
            };
            files.extend(run_files(dir, &stem, profile, breakdown)?);
        }
        Ok(files)
    }
}

/// One run's files, as [`file_names`] names them.
fn run_files(
    dir: &Path,
    stem: &str,
    profile: &Profile,
    breakdown: &Breakdown,
) -> Result<Vec<Rendered>> {
    let folded_text = folded(profile);
    let file = |ext: &str| OutputTarget::File(dir.join(format!("{stem}.{ext}")));
    let mut files = Vec::with_capacity(3);
    if !folded_text.is_empty() {
        let title = format!("{stem}: where the measured seconds went");
        let subtitle = format!(
            "{} samples at {} Hz over {:.2} s; kernel frames _[k], BPF programs _[j]",
            breakdown.samples, breakdown.frequency_hz, breakdown.seconds
        );
        files.push((file("svg"), flame_graph(&folded_text, &title, &subtitle)?));
    }
    files.insert(0, (file("folded"), folded_text.into_bytes()));
    // Serialising plain structs of numbers and strings cannot fail.
    let json = serde_json::to_string_pretty(breakdown).unwrap_or_default() + "\n";
    files.push((file("json"), json.into_bytes()));
    Ok(files)
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
            cpus: 1,
            throttled_to_hz: None,
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

    #[test]
    fn lost_ticks_and_a_throttled_sampler_are_said() {
        // 999 ticks expected, 45 seen: most never fired.
        let throttled = Profile {
            throttled_to_hz: Some(12_500),
            ..profile()
        };
        let lines = lines(&Breakdown::of(&throttled, 1, Some(1e6)));
        assert!(
            lines[1] == "  954 ticks never fired (lost, not counted as time off CPU)",
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("  warning: the kernel throttled the sampler to 12500 Hz"),
            "{lines:?}"
        );
        // All ticks accounted for, nothing throttled: nothing said.
        let whole = Profile {
            other_ticks: 959,
            ..profile()
        };
        let quiet = super::lines(&Breakdown::of(&whole, 1, Some(1e6)));
        assert!(!quiet.iter().any(|l| l.contains("below the warm-up")));
        // Slower with the sampler on than in the warm-up, beyond drift.
        let mut slowed = Breakdown::of(&whole, 1, Some(0.5e6));
        (slowed.measured_rate, slowed.warmup_rate) = (Some(0.5e6), Some(1e6));
        assert!(
            super::lines(&slowed)[1].starts_with(
                "  warning: with sampling on the rate is 50 % below the warm-up's (not sampled)"
            ),
            "{:?}",
            super::lines(&slowed)
        );
        (slowed.measured_rate, slowed.warmup_rate) = (Some(0.95e6), Some(1e6));
        assert!(!super::lines(&slowed).iter().any(|l| l.contains("warning")));
        assert!(!quiet
            .iter()
            .any(|l| l.contains("never fired") || l.contains("throttled")));
    }
}
