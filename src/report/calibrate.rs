//! The lines of `bench calibrate`.

use crate::calibrate::finding::{calls, Finding, Injection, RECOMMENDED_POWER};
use crate::stats::Change;

/// Before the first run, which sizes the injected cost.
pub fn sizing(bench: &str) -> String {
    format!("Sizing the injected cost in {bench} itself...")
}

/// `injected: 26 loop iterations ...`: the loop, what each sizing run
/// measured in the benchmark, and the slowdown expected from them.
pub fn injection(i: &Injection) -> String {
    let runs: Vec<String> = i
        .sizing
        .runs
        .iter()
        .map(|r| format!("{:.1} % at {}", r.measured.slowdown * 100.0, r.iterations))
        .collect();
    let op_ns = i.sizing.runs.last().map_or(0.0, |r| r.measured.op_ns);
    let pairs: usize = i.sizing.runs.iter().map(|r| r.measured.pairs).sum();
    format!(
        "injected: {} loop iterations after each operation ({:.1} ns of CPU timed alone); in the \
         benchmark itself ({:.0} ns an operation), {} timed block pairs without and with it \
         measured {} iterations: expected {:.1} % slower (target {} %)",
        i.sizing.iterations,
        i.cpu_ns,
        op_ns,
        pairs,
        runs.join(", "),
        i.expected_pct(),
        i.target_pct
    )
}

fn change(c: &Option<Change>) -> String {
    match c {
        Some(c) => format!("{:+.1} % [{:+.1}, {:+.1}]", c.percent, c.low, c.high),
        None => "n/a".to_string(),
    }
}

/// A round's ratios, as they come.
pub fn round(index: usize, (again, slowed): (Option<f64>, Option<f64>)) -> String {
    let ratio = |c: Option<f64>| c.map_or("n/a".to_string(), |c| format!("{c:+.1} %"));
    format!(
        "round {index:3}: A/A {:>8}, A/A' {:>8}",
        ratio(again),
        ratio(slowed)
    )
}

/// One trial of `--trials`: both changes and what they were called.
pub fn trial(index: u32, judged: &(Option<Change>, Option<Change>)) -> String {
    let (alarm, detected) = calls(judged);
    format!(
        "trial {index:3}: A/A {:<26} {:<16} A/A' {:<26} {}",
        change(&judged.0),
        if alarm { "FALSE ALARM" } else { "no change" },
        change(&judged.1),
        if detected { "detected" } else { "MISSED" }
    )
}

/// The findings per run duration, and what the figures mean.
pub fn findings(findings: &[Finding], rounds: usize, effect: f64) -> Vec<String> {
    let mut lines = vec![format!(
        "Calibrated over {rounds} rounds (A, A again, A' {effect} % slower; interleaved, paired by round):"
    )];
    for f in findings {
        let needs = match f.rounds_needed {
            Some(n) => format!("{effect} % needs {n} rounds"),
            None => format!("{effect} % is out of reach (more than 1000 rounds)"),
        };
        let rates = match f.rates {
            Some((d, a)) => format!(
                "drawn at that count: detected {:.0} %, false alarms {:.0} %",
                d * 100.0,
                a * 100.0
            ),
            None => "too few rounds measured to draw that many".to_string(),
        };
        let cost = f
            .cost_secs
            .map_or(String::new(), |c| format!(", ~{c:.0} s a comparison"));
        lines.push(format!(
            "  -d {}: A'/A {}, per-round sd {:.1} %; {needs} ({:.0} % power){cost}; {rates}",
            f.seconds,
            change(&f.observed),
            f.log_sd * 100.0,
            RECOMMENDED_POWER * 100.0
        ));
    }
    lines
}

/// The last line when the rounds stopped (interrupted) before there were
/// enough to estimate their spread: nothing is concluded from them.
pub fn too_few_rounds(rounds: usize, least: usize) -> String {
    let plural = if rounds == 1 { "" } else { "s" };
    format!(
        "Stopped after {rounds} round{plural}: too few to estimate the per-round spread (needs \
         {least}); no recommendation"
    )
}

/// The last line: what to use here to see the effect.
pub fn recommendation(
    best: Option<&Finding>,
    bench: &str,
    effect: f64,
    warmup: u32,
    affinity: bool,
) -> String {
    let Some(f) = best else {
        return format!(
            "Recommendation: none: {effect} % is out of reach of {bench} on this machine now"
        );
    };
    let n = f.rounds_needed.unwrap_or_default();
    let a = if affinity { " -a" } else { "" };
    let rates = match f.rates {
        Some((d, al)) => format!(
            "drawn from the measured rounds: detected {:.0} of {}, false alarms {:.0} of {}",
            d * 10.0,
            10,
            al * 10.0,
            10
        ),
        None => "not observed: too few rounds measured; raise --budget".to_string(),
    };
    format!(
        "Recommendation: use `--runs {n} -w{warmup} -d{}{a}` (bench --runs {n} -w{warmup} -d{}{a} \
         {bench} OTHER) to see {effect} % here ({rates})",
        f.seconds, f.seconds
    )
}

/// The last line of `--trials`: the counts.
pub fn checked(
    runs: usize,
    seconds: u32,
    (detected, alarms, trials): (usize, usize, usize),
    injection: &Injection,
    overall: Option<Change>,
) -> String {
    format!(
        "Checked --runs {runs} -d{seconds}: detected {detected} of {trials}, false alarms {alarms} of \
         {trials} (injected: expected {:.1} % slower, measured {} over all rounds)",
        injection.expected_pct(),
        change(&overall)
    )
}
