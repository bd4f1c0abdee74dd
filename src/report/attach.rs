//! The lines of an attach cycle: what was attached, the attach and detach
//! times (wall, CPU, and the gap: waiting) with their µs/probe, how many
//! probes fired, and the `Summary:` line, which scripts cut with
//! `tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-` to `X µs/probe, detach Y
//! µs/probe, N of N fired`.

use crate::results::cycles::{ChurnRecord, CycleRecord, StepTime};
use crate::results::CycleLevel;
use crate::runner::cycles::{Fired, Step, Stopped};
use crate::stats::RunStats;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `probes: 10000 in 1 uprobe_multi link`.
pub fn attached_line(record: &CycleRecord) -> String {
    format!("probes: {} in {}", record.probes, record.attached_with)
}

/// `attach   12.345 ms wall (cpu 0.100 user + 12.000 sys, waiting 0.245 ms):    1.234 µs/probe`.
pub fn step_line(step: &str, timing: &StepTime, probes: usize) -> String {
    format!(
        "{step} {:10.3} ms wall (cpu {:.3} user + {:.3} sys, waiting {:.3} ms): {:10.3} \u{b5}s/probe",
        ms(timing.wall_ns),
        ms(timing.user_ns),
        ms(timing.system_ns),
        ms(timing.waiting_ns()),
        timing.us_per_probe(probes),
    )
}

/// `verify   10000 of 10000 fired`, naming the sites that did not fire once.
pub fn fired_line(fired: Option<&Fired>, probes: usize) -> String {
    let Some(fired) = fired else {
        return "verify   not checked: kernel functions cannot be driven from here".to_string();
    };
    let mut line = format!("verify   {} of {probes} fired", fired.fired);
    if fired.wrong_count > 0 {
        let named: Vec<String> = fired
            .wrong
            .iter()
            .map(|w| format!("site {} ({} hits)", w.site, w.hits))
            .collect();
        let more = fired.wrong_count - fired.wrong.len();
        line.push_str(&format!("; wrong: {}", named.join(", ")));
        if more > 0 {
            line.push_str(&format!(" and {more} more"));
        }
    }
    line
}

/// `N of N fired`, or `fired: not checked`.
fn fired_words(fired: Option<&Fired>, probes: usize) -> String {
    match fired {
        Some(fired) => format!("{} of {probes} fired", fired.fired),
        None => "fired: not checked".to_string(),
    }
}

/// Every line of one cycle, ending with its `Summary:` line.
pub fn cycle_lines(record: &CycleRecord) -> Vec<String> {
    vec![
        attached_line(record),
        step_line("attach", &record.attach, record.probes),
        fired_line(record.fired.as_ref(), record.probes),
        step_line("detach", &record.detach, record.probes),
        summary_line(record),
    ]
}

/// Above a lone cycle's summary: what it measured.
pub fn lone_cold_line() -> String {
    "cold: the first cycle of this process, what a tracer starting up pays; --runs N \
     measures the warm cycles after it"
        .to_string()
}

/// `cold (first cycle of the process): attach 2060.000 µs/probe, detach
/// 105.000 µs/probe`: the cycle kept out of the statistics over runs.
pub fn cold_line(record: &CycleRecord) -> String {
    format!(
        "cold (first cycle of the process): attach {:.3} \u{b5}s/probe, detach {:.3} \u{b5}s/probe",
        record.attach.us_per_probe(record.probes),
        record.detach.us_per_probe(record.probes)
    )
}

/// `Summary: attach 1.234 µs/probe, detach 4.400 µs/probe, 10000 of 10000
/// fired (10000 probes, 1 uprobe_multi link; wall 12.3 + 44.0 ms, waiting
/// 0.2 + 33.8 ms)`.
pub fn summary_line(record: &CycleRecord) -> String {
    format!(
        "Summary: attach {:.3} \u{b5}s/probe, detach {:.3} \u{b5}s/probe, {} ({} probes, {}; \
         attach {:.3} ms, detach {:.3} ms wall; waiting {:.3} + {:.3} ms)",
        record.attach.us_per_probe(record.probes),
        record.detach.us_per_probe(record.probes),
        fired_words(record.fired.as_ref(), record.probes),
        record.probes,
        record.attached_with,
        ms(record.attach.wall_ns),
        ms(record.detach.wall_ns),
        ms(record.attach.waiting_ns()),
        ms(record.detach.waiting_ns()),
    )
}

/// The attach figures over repeated cycles: `runs: 3, attach 1.234 µs/probe
/// ± 2.1 % (95 % CI), between-run sd 0.9 %; detach ...`.
pub fn runs_line(attach: &RunStats, detach: &RunStats) -> String {
    let one = |name: &str, stats: &RunStats| {
        let interval = match stats.ci_percent() {
            Some(pct) => format!("\u{b1} {pct:.1} % (95 % CI)"),
            None => "(one run: no interval)".to_string(),
        };
        let sd = if stats.mean > 0.0 {
            stats.sd / stats.mean * 100.0
        } else {
            0.0
        };
        format!(
            "{name} {:.3} \u{b5}s/probe {interval}, between-run sd {sd:.1} %",
            stats.mean
        )
    };
    format!(
        "runs: {}, {}; {}",
        attach.runs,
        one("attach", attach),
        one("detach", detach)
    )
}

/// The closing `Summary:` over repeated cycles.
pub fn runs_summary(level: &CycleLevel) -> String {
    let (attach, detach) = (&level.attach_us_per_probe, &level.detach_us_per_probe);
    format!(
        "Summary: attach {:.3} \u{b1} {:.3} \u{b5}s/probe, detach {:.3} \u{b1} {:.3} \u{b5}s/probe, \
         {} of {} cycles all fired ({} probes; mean \u{b1} between-run sd)",
        attach.mean, attach.sd, detach.mean, detach.sd, level.all_fired, attach.runs, level.probes
    )
}

/// The table after a sweep of `param`: µs/probe of attach and detach by
/// value, with the 95 % interval where there were runs enough.
pub fn sweep_table(bench: &str, param: &str, levels: &[CycleLevel]) -> Vec<String> {
    let figure = |stats: &RunStats| match stats.ci_percent() {
        Some(pct) => format!("{:.3} \u{b1} {pct:.1} %", stats.mean),
        None => format!("{:.3}", stats.mean),
    };
    let mut lines = vec![
        format!("Sweep of {param} for {bench}:"),
        format!(
            "{param:>12} {:>22} {:>22} {:>8}",
            "attach \u{b5}s/probe", "detach \u{b5}s/probe", "fired"
        ),
    ];
    for level in levels {
        lines.push(format!(
            "{:>12} {:>22} {:>22} {:>8}",
            level.sweep_value.map_or("-".to_string(), |v| v.to_string()),
            figure(&level.attach_us_per_probe),
            figure(&level.detach_us_per_probe),
            format!("{}/{}", level.all_fired, level.attach_us_per_probe.runs),
        ));
    }
    lines
}

/// The words of the progress bar for `step`.
pub fn step_words(step: Step) -> &'static str {
    match step {
        Step::Attaching { .. } => "attaching",
        Step::Verifying => "verifying",
        Step::Detaching { .. } => "detaching",
    }
}

/// `while attaching (12 of 50 links attached)`: where an interrupt found a
/// cycle.
pub fn stopped_words(stopped: Stopped) -> String {
    match stopped {
        Stopped::Attaching { attached, of } => {
            format!("while attaching ({attached} of {of} links attached)")
        }
        Stopped::Verifying => "while verifying".to_string(),
        Stopped::Detaching => "while detaching".to_string(),
    }
}

/// `churn: 1 thread, 47 attach/detach cycles in 5.00 s: 9.40 cycles/s; attach
/// 271.3 µs, detach 105234.0 µs a cycle (means)`, or the run without churn.
pub fn churn_line(churn: &ChurnRecord) -> String {
    if churn.threads == 0 {
        return "churn: none (-c 0): the hit rate without churn, to hold churned runs against"
            .to_string();
    }
    format!(
        "churn: {} thread{}, {} attach/detach cycles in {:.2} s: {:.2} cycles/s; attach {:.1} \u{b5}s, \
         detach {:.1} \u{b5}s a cycle (means)",
        churn.threads,
        if churn.threads == 1 { "" } else { "s" },
        churn.cycles,
        churn.seconds,
        churn.cycles_per_sec(),
        churn.attach_us,
        churn.detach_us,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::cycles::WrongSite;

    fn record() -> CycleRecord {
        CycleRecord {
            probes: 10_000,
            links: 1,
            attached_with: "1 uprobe_multi link".parse().unwrap(),
            attach: StepTime {
                wall_ns: 12_340_000,
                user_ns: 100_000,
                system_ns: 12_000_000,
            },
            detach: StepTime {
                wall_ns: 44_000_000,
                user_ns: 0,
                system_ns: 10_000_000,
            },
            fired: Some(Fired {
                fired: 10_000,
                wrong: Vec::new(),
                wrong_count: 0,
            }),
            cold: false,
        }
    }

    #[test]
    fn the_summary_cuts_to_the_figures() {
        let line = summary_line(&record());
        let before_paren = line.split('(').next().unwrap();
        let cut: Vec<&str> = before_paren.split(' ').skip(2).collect();
        assert_eq!(
            cut.join(" "),
            "1.234 \u{b5}s/probe, detach 4.400 \u{b5}s/probe, 10000 of 10000 fired "
        );
    }

    #[test]
    fn steps_show_the_waiting_gap() {
        let line = step_line("detach", &record().detach, 10_000);
        assert!(line.contains("waiting 34.000 ms"), "{line}");
        assert!(line.ends_with("4.400 \u{b5}s/probe"), "{line}");
    }

    #[test]
    fn wrong_sites_are_named() {
        let fired = Fired {
            fired: 8,
            wrong: vec![
                WrongSite { site: 3, hits: 0 },
                WrongSite { site: 7, hits: 2 },
            ],
            wrong_count: 2,
        };
        assert_eq!(
            fired_line(Some(&fired), 10),
            "verify   8 of 10 fired; wrong: site 3 (0 hits), site 7 (2 hits)"
        );
    }
}
