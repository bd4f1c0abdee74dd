//! plan → execute → publish, driven from a command line with fake
//! benchmarks and mocked runs (src/app/mock.rs): the sequencing of the
//! rounds, their stops and what is printed and kept of them.

use std::path::Path;

use super::mock::{Fake, MockRuns, Transcript};
use super::{execute, plan, publish};
use crate::benches::Benchmark;
use crate::cli::{self, Command};
use crate::error::{Error, Result};
use crate::results::{PrecisionRecord, ResultFile, StopReason};
use crate::stats::Decision;

const USERMODE: &str = "trig-usermode-count";
const SYSCALL: &str = "trig-syscall-count";
const NOP: &str = "trig-uprobe-nop";

/// What one invocation did: the runs asked for, what it printed, how it
/// ended and each benchmark's result file (written with `--json`).
struct Driven {
    asked: Vec<(&'static str, Option<u32>)>,
    lines: Vec<String>,
    result: Result<()>,
    results: Vec<ResultFile>,
}

impl Driven {
    fn line_starting(&self, start: &str) -> &str {
        self.lines
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in {:#?}", self.lines))
    }

    /// The first result's precision record.
    fn precision(&self) -> PrecisionRecord {
        self.results[0]
            .precision
            .clone()
            .expect("a precision record")
    }

    /// Asserts that the line starting `start` ends with `end`.
    fn assert_line_ends(&self, start: &str, end: &str) {
        let line = self.line_starting(start);
        assert!(line.ends_with(end), "{line:?} does not end with {end:?}");
    }

    fn asked_names(&self) -> Vec<&str> {
        self.asked.iter().map(|(name, _)| *name).collect()
    }
}

/// `bench OPTIONS --json … BENCHES`, with `benches` faked and `runs` mocked.
fn drive(options: &[&str], benches: &[&'static Fake], mut runs: MockRuns) -> Driven {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let names: Vec<&str> = benches.iter().map(|b| b.info().name).collect();
    let json = match names[..] {
        [one] => dir.path().join(format!("{one}.json")),
        _ => dir.path().to_path_buf(),
    };
    let json = json.to_string_lossy().into_owned();
    let output = ["--json", &json];
    let args = ["bench"]
        .iter()
        .chain(options)
        .chain(&output)
        .chain(&names)
        .map(|a| a.into());
    let Ok(Command::Run(request)) = cli::parse(args) else {
        panic!("{options:?} {names:?} is not a run");
    };
    let find = |name: &str| {
        benches
            .iter()
            .find(|b| b.info().name == name)
            .map(|b| *b as &'static dyn Benchmark)
    };
    let plan = plan::plan_with(&request, &find).expect("a plan");
    let mut console = Transcript::default();
    let execution = execute::execute(&plan, &request, &mut console, &mut runs, &mut |_, _| {});
    let result = publish::publish(&request, &plan, execution, &console);
    let results = names
        .iter()
        .map(|name| read_result(&dir.path().join(format!("{name}.json"))))
        .collect();
    Driven {
        asked: runs.asked,
        lines: console.lines.take(),
        result,
        results,
    }
}

fn read_result(path: &Path) -> ResultFile {
    let text = std::fs::read_to_string(path).expect("the result file");
    serde_json::from_str(&text).expect("a result file")
}

#[test]
fn the_order_rotates_by_one_each_round() {
    let benches = [Fake::of(USERMODE), Fake::of(SYSCALL), Fake::of(NOP)];
    let driven = drive(
        &["--runs", "3", "-w0", "-d1"],
        &benches,
        MockRuns::default(),
    );
    assert!(driven.result.is_ok());
    let (u, s, n) = (USERMODE, SYSCALL, NOP);
    assert_eq!(driven.asked_names(), [u, s, n, s, n, u, n, u, s]);
    let runs: Vec<Option<u32>> = driven.asked.iter().map(|(_, run)| *run).collect();
    let r = Some;
    assert_eq!(runs, [r(1), r(1), r(1), r(2), r(2), r(2), r(3), r(3), r(3)]);
    driven.line_starting("Interleaved: 3 rounds, each benchmark once a round");
    for result in &driven.results {
        assert_eq!(result.runs.len(), 3);
        assert!(!result.partial);
    }
}

#[test]
fn an_interrupt_stops_the_rounds_and_the_runs_done_are_published_partial() {
    let benches = [Fake::of(USERMODE), Fake::of(SYSCALL)];
    // The third run, the first of round 2: trig-syscall-count, rotated first.
    let runs = MockRuns::default().interrupt_in(2);
    let driven = drive(&["--runs", "3", "-w0", "-d2"], &benches, runs);
    assert_eq!(driven.asked_names(), [USERMODE, SYSCALL, SYSCALL]);
    match &driven.result {
        Err(Error::Interrupted { message, code }) => {
            let (message, code) = (message.as_str(), *code);
            assert_eq!(code, 130);
            assert_eq!(
                message,
                "interrupted by SIGINT after 1 of 2 measured iterations (run 3 of 6): \
                 the summary above is partial"
            );
        }
        other => panic!("not interrupted: {other:?}"),
    }
    let [usermode, syscall] = &driven.results[..] else {
        panic!("two results");
    };
    assert!(usermode.partial && syscall.partial);
    assert_eq!((usermode.runs.len(), syscall.runs.len()), (1, 2));
    assert!(syscall.runs[1].partial && !syscall.runs[0].partial);
    driven.line_starting("Interleaved: 1 round and part of another, each benchmark once a round");
}

#[test]
fn a_first_round_stopped_part_way_is_not_called_zero_rounds() {
    let benches = [Fake::of(USERMODE), Fake::of(SYSCALL)];
    // The second run, before its first measured second: one mean to show.
    let runs = MockRuns::default().interrupt_in(1);
    let driven = drive(&["--runs", "3", "-w0", "-d1"], &benches, runs);
    assert!(matches!(
        driven.result,
        Err(Error::Interrupted { code: 130, .. })
    ));
    assert_eq!(driven.asked_names(), [USERMODE, SYSCALL]);
    driven.line_starting(
        "Interleaved: the first round stopped part-way, each benchmark at most once",
    );
    driven.line_starting("trig-usermode-count ");
    assert!(
        !driven
            .lines
            .iter()
            .any(|l| l.starts_with("Interleaved: 0 rounds")),
        "{:#?}",
        driven.lines
    );
}

/// SYSCALL alone, its runs at `rates` in turn, with `--precision 5`, one
/// second a run and the bound `bound`.
fn drive_precision(rates: &[f64], bound: [&str; 2]) -> Driven {
    let runs = MockRuns::default().rates(SYSCALL, rates);
    let options = ["--precision", "5", bound[0], bound[1], "-w0", "-d1"];
    drive(&options, &[Fake::of(SYSCALL)], runs)
}

#[test]
fn precision_stops_at_its_target_and_says_so() {
    let driven = drive_precision(&[5.0, 5.01, 4.99], ["--max-runs", "10"]);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 3, "judged from the third run on");
    let precision = driven.precision();
    assert!(precision.reached);
    assert_eq!(
        (precision.stopped_by, precision.runs),
        (StopReason::Target, 3)
    );
    driven.assert_line_ends("runs: 3, ", "; precision \u{b1}5 % reached");
}

#[test]
fn precision_stops_at_max_runs_and_says_so() {
    let driven = drive_precision(&[1.0, 3.0, 2.0, 5.0], ["--max-runs", "4"]);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 4);
    let precision = driven.precision();
    assert!(!precision.reached);
    assert_eq!(
        (precision.stopped_by, precision.runs),
        (StopReason::MaxRuns, 4)
    );
    driven.assert_line_ends(
        "runs: 4, ",
        "; precision \u{b1}5 % NOT reached: stopped at --max-runs 4",
    );
}

#[test]
fn precision_stops_at_max_time_and_says_so() {
    let driven = drive_precision(&[1.0, 3.0, 2.0, 5.0], ["--max-time", "3"]);
    assert_eq!(driven.asked.len(), 3, "a second a run, three on the clock");
    let precision = driven.precision();
    assert_eq!(precision.stopped_by, StopReason::MaxTime);
    driven.assert_line_ends(
        "runs: 3, ",
        "NOT reached: stopped at --max-time after 3 runs",
    );
}

#[test]
fn until_decided_stops_when_decided() {
    let runs = MockRuns::default()
        .rates(USERMODE, &[5.0, 5.1, 4.9])
        .rates(SYSCALL, &[2.5, 2.54, 2.46]);
    let options = ["--until-decided", "5", "--max-runs", "10", "-w0", "-d1"];
    let driven = drive(&options, &[Fake::of(USERMODE), Fake::of(SYSCALL)], runs);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 6, "decided at the first look, round 3");
    let sequential = driven.results[1].sequential.clone().expect("a record");
    assert_eq!(sequential.stopped_by, StopReason::DecidedDifferent);
    assert_eq!(sequential.decisions[0].decision, Decision::Different);
    driven.line_starting("Until decided (\u{b1}5 %): decided: different after 3 rounds");
    driven.line_starting("  trig-syscall-count: different, -50.0 %");
}

#[test]
fn until_decided_stops_at_max_runs_undecided() {
    let runs = MockRuns::default()
        .rates(USERMODE, &[5.0, 5.5, 4.5, 5.0])
        .rates(SYSCALL, &[5.1, 4.4, 5.6, 4.9]);
    let options = ["--until-decided", "5", "--max-runs", "4", "-w0", "-d1"];
    let driven = drive(&options, &[Fake::of(USERMODE), Fake::of(SYSCALL)], runs);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 8);
    let sequential = driven.results[1].sequential.clone().expect("a record");
    assert_eq!(sequential.stopped_by, StopReason::MaxRuns);
    assert_eq!(sequential.decisions[0].decision, Decision::Undecided);
    driven.line_starting("Until decided (\u{b1}5 %): NOT decided: stopped at --max-runs 4");
    driven.line_starting("  trig-syscall-count: undecided, ");
}

#[test]
fn a_failed_set_up_in_an_interleaved_run_is_reported_and_the_runs_done_kept() {
    let benches = [
        Fake::of(USERMODE),
        Fake::refusing(SYSCALL, "this kernel has no such thing"),
    ];
    let driven = drive(
        &["--runs", "2", "-w0", "-d1"],
        &benches,
        MockRuns::default(),
    );
    assert_eq!(
        driven.asked_names(),
        [USERMODE, SYSCALL],
        "stopped at the failure"
    );
    match driven.result {
        Err(Error::Unsupported(why)) => {
            assert_eq!(why, "trig-syscall-count: this kernel has no such thing")
        }
        other => panic!("not unsupported: {other:?}"),
    }
    let [usermode, syscall] = &driven.results[..] else {
        panic!("two results");
    };
    assert!(usermode.partial && syscall.partial);
    assert_eq!((usermode.runs.len(), syscall.runs.len()), (1, 0));
}

#[test]
fn until_decided_stopped_before_its_first_look_reports_no_decision() {
    let runs = MockRuns::default()
        .rates(USERMODE, &[5.0, 5.05])
        .rates(SYSCALL, &[2.5, 2.52]);
    let options = ["--until-decided", "5", "--max-runs", "2", "-w0", "-d1"];
    let driven = drive(&options, &[Fake::of(USERMODE), Fake::of(SYSCALL)], runs);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 4);
    for result in &driven.results {
        let sequential = result.sequential.clone().expect("a record");
        assert_eq!(sequential.stopped_by, StopReason::MaxRuns);
        assert_eq!(sequential.decisions[0].decision, Decision::Undecided);
    }
    driven.line_starting(
        "Until decided (\u{b1}5 %): NOT decided: stopped at --max-runs 2 after 2 rounds",
    );
    // What was seen, as not decided.
    driven.line_starting("  trig-syscall-count: undecided, -50.");
    assert!(
        !driven.lines.iter().any(|l| l.contains(": different,")),
        "{:#?}",
        driven.lines
    );
}

#[test]
fn precision_on_an_attach_benchmark_says_whether_it_was_reached() {
    const ATTACH: &str = "attach-uprobe-multi";
    let runs = MockRuns::default().rates(ATTACH, &[10.0, 12.0]);
    let options = ["--precision", "5", "--max-runs", "2", "--attach-cnt", "5"];
    let driven = drive(&options, &[Fake::of(ATTACH)], runs);
    assert!(driven.result.is_ok());
    assert_eq!(driven.asked.len(), 2);
    let precision = driven.precision();
    assert!(!precision.reached);
    assert_eq!(precision.stopped_by, StopReason::MaxRuns);
    driven.assert_line_ends(
        "runs: 2, attach ",
        "; precision \u{b1}5 % NOT reached: stopped at --max-runs 2",
    );
}

#[test]
fn the_cold_first_cycle_is_kept_apart_from_the_warm_ones() {
    const ATTACH: &str = "attach-uprobe";
    let runs = MockRuns::default()
        .cold_first()
        .rates(ATTACH, &[2060.0, 69.0, 71.0]);
    let driven = drive(
        &["--runs", "3", "--attach-cnt", "5"],
        &[Fake::of(ATTACH)],
        runs,
    );
    assert!(driven.result.is_ok(), "{:?}", driven.result);
    let cold = driven.line_starting("cold (first cycle of the process): ");
    assert!(
        cold.ends_with("attach 2060.000 \u{b5}s/probe, detach 4120.000 \u{b5}s/probe"),
        "{cold}"
    );
    let runs = driven.line_starting("runs: 2, attach 70.000 ");
    assert!(runs.contains("detach 140.000 "), "{runs}");
    let level = &driven.results[0].cycle_stats[0];
    assert_eq!(level.attach_us_per_probe.runs, 2);
    assert!((level.attach_us_per_probe.mean - 70.0).abs() < 1e-9);
    // The cold cycle stays in the record, marked.
    let cycles: Vec<bool> = driven.results[0]
        .runs
        .iter()
        .filter_map(|r| Some(r.cycle()?.cold))
        .collect();
    assert_eq!(cycles, [true, false, false]);
}

#[test]
fn attach_figures_are_times_judged_lower_is_better_each_of_them() {
    let (uprobe, multi) = ("attach-uprobe", "attach-uprobe-multi");
    let benches = [Fake::of(uprobe), Fake::of(multi)];
    // µs per probe to attach (twice that to detach), round by round: the
    // multi link takes about a tenth of the time, so it is the faster.
    let runs = MockRuns::default()
        .rates(uprobe, &[100.0, 110.0, 105.0])
        .rates(multi, &[10.0, 12.0, 11.0]);
    let driven = drive(&["--runs", "3", "--attach-cnt", "5"], &benches, runs);
    assert!(driven.result.is_ok(), "{:?}", driven.result);
    let table = driven.line_starting("benchmark ");
    assert!(table.contains("change vs attach-uprobe "), "{table}");
    let baseline = driven.line_starting("attach-uprobe attach ");
    assert!(baseline.contains("105.000 \u{b5}s/probe"), "{baseline}");
    assert!(
        !baseline.contains("/s "),
        "a time printed as a rate: {baseline}"
    );
    let detach = driven.line_starting("attach-uprobe detach ");
    assert!(
        !detach.contains("n/a"),
        "the baseline is not judged: {detach}"
    );
    for (figure, mean) in [("attach", "11.000"), ("detach", "22.000")] {
        let row = driven.line_starting(&format!("{multi} {figure} "));
        assert!(row.contains(&format!("{mean} \u{b5}s/probe")), "{row}");
        assert!(row.contains(" -89."), "about -90 %: {row}");
        assert!(row.ends_with("faster"), "a shorter time is faster: {row}");
    }
    let kept = driven.results[1].comparison.as_ref().expect("a comparison");
    assert_eq!(kept.verdict, crate::stats::Verdict::Faster);
    assert!(kept.paired.percent < -80.0, "{:?}", kept.paired);
}
