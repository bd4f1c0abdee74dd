//! What `bench compare` says of awkward inputs: partial runs, runs interrupted
//! before measuring, two different benchmarks forced together, several files
//! of one benchmark, a large change that is not significant, and the rate each
//! benchmark is ranked by.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::*;
use bench::results::{Outcome, ResultFile};
use bench::stats::Sample;

/// A real result file to start from (context, tool, options), made once.
fn template() -> ResultFile {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    let text = TEMPLATE.get_or_init(|| {
        let out = bench_ok("-q -w0 -d1 --json - trig-usermode-count");
        out.stdout
    });
    let mut file: ResultFile = serde_json::from_str(text).unwrap();
    // Its samples are replaced by each test's: the tick they were taken
    // on is no more theirs.
    file.options.test_tick_ms = None;
    file
}

/// Per-second samples: `hits` and `drops` scaled by each factor.
fn samples(hits: f64, drops: f64, factors: &[f64], warmup: bool) -> Vec<Sample> {
    factors
        .iter()
        .enumerate()
        .map(|(i, f)| Sample {
            iteration: i as u32,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            warmup,
            values: vec![Some((hits * f) as u64), Some((drops * f) as u64)],
        })
        .collect()
}

/// `run`'s samples, summed up and its figures worked out, as a run of
/// `bench` would have them (a benchmark the registry lacks as
/// trig-uprobe-nop); the file's tables to match.
fn measured(file: &mut ResultFile, bench: &str) {
    let known = bench::benches::find(bench)
        .or_else(|| bench::benches::find("trig-uprobe-nop"))
        .unwrap();
    file.channels = known.channels().iter().map(Into::into).collect();
    file.figures = known.figures().iter().map(|f| f.decl()).collect();
    for run in &mut file.runs {
        if let Outcome::Timed {
            samples, summary, ..
        } = &mut run.outcome
        {
            *summary = bench::stats::summarize(samples, &[true, true]);
        }
        run.evaluate(known.figures(), known.channels());
    }
}

const STEADY: [f64; 8] = [0.997, 1.002, 1.0, 0.999, 1.003, 0.998, 1.001, 1.0];

fn write(dir: &Path, name: &str, bench: &str, samples: Vec<Sample>, partial: bool) -> PathBuf {
    let mut file = template();
    file.benchmark = bench.to_string();
    file.partial = partial;
    let run = &mut file.runs[0];
    run.partial = partial;
    run.outcome = Outcome::timed(samples, &[true, true]);
    measured(&mut file, bench);
    let path = dir.join(name);
    fs::write(&path, file.to_json()).unwrap();
    path
}

/// `old.json` and `new.json` in `dir`: whole runs of `bench` with these samples.
fn old_new(dir: &Path, bench: &str, old: Vec<Sample>, new: Vec<Sample>) -> (PathBuf, PathBuf) {
    (
        write(dir, "old.json", bench, old, false),
        write(dir, "new.json", bench, new, false),
    )
}

/// A whole run of `bench` in `dir`/`name`: `hits` a second, steady.
fn steady(dir: &Path, name: &str, bench: &str, hits: f64) -> PathBuf {
    write(dir, name, bench, samples(hits, 0.0, &STEADY, false), false)
}

fn compare(args: &[&Path], flags: &[&str]) -> Output {
    let out = compare_any(args, flags);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// The table's rows: not its header, nor the closing note on single runs.
fn rows(out: &Output) -> Vec<String> {
    out.stdout
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("note: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn partial_runs_are_marked_and_an_unmeasured_one_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = steady(d, "whole.json", "trig-uprobe-nop", 2e6);
    let partial = write(
        d,
        "partial.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY[..3], false),
        true,
    );
    let rows_ = rows(&compare(&[&whole, &partial], &[]));
    assert_eq!(rows_.len(), 1);
    assert!(rows_[0].ends_with("[partial: new]"), "{}", rows_[0]);

    // Interrupted during warm-up: only warm-up samples, no summary.
    let warm = write(
        d,
        "warm.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &[1.0], true),
        true,
    );
    let row = &rows(&compare(&[&whole, &warm], &[]))[0];
    assert_has(
        row,
        "nothing to compare: the new run was interrupted before measuring",
    );
    assert!(!row.contains("--repeat"), "{row}");
}

#[test]
fn forced_benchmarks_show_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = steady(d, "a.json", "trig-uprobe-nop", 2e6);
    let b = steady(d, "b.json", "trig-uprobe-nop5", 5e6);
    let row = &rows(&compare(&[&a, &b], &["--force"]))[0];
    assert_starts(row, "trig-uprobe-nop vs trig-uprobe-nop5 ");
    assert_has(row, "faster");
}

#[test]
fn several_files_of_one_benchmark_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    fs::create_dir(&old).unwrap();
    fs::create_dir(&new).unwrap();
    steady(&old, "base.json", "trig-uprobe-nop", 2e6);
    steady(&new, "first.json", "trig-uprobe-nop", 2e6);
    steady(&new, "second.json", "trig-uprobe-nop", 1.6e6);
    let rows_ = rows(&compare(&[&old, &new], &[]));
    assert_eq!(rows_.len(), 2, "{rows_:?}");
    assert_starts(&rows_[0], "trig-uprobe-nop (base.json vs first.json)");
    assert_starts(&rows_[1], "trig-uprobe-nop (base.json vs second.json)");
    assert_has(&rows_[1], "slower");
}

#[test]
fn a_large_change_that_is_not_significant_is_no_significant_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (old, new) = old_new(
        d,
        "trig-uprobe-nop",
        samples(1e6, 0.0, &[1.0, 2.0, 0.5], false),
        samples(1e6, 0.0, &[0.5, 0.6, 0.9], false),
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert!(row.contains(" no significant change (p="), "{row}");
    assert!(!row.contains("noise"), "{row}");
}

#[test]
fn the_perf_family_is_ranked_by_all_operations_as_in_its_sweep_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 50 % more operations: the perf family's headline, its one channel.
    let (old, new) = old_new(
        d,
        "syscall-basic",
        samples(2e6, 0.0, &STEADY, false),
        samples(3e6, 0.0, &STEADY, false),
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert!(row.contains("+50.00 %") && row.contains("faster"), "{row}");
    assert!(
        row.contains("2.000 ± ") && row.contains("3.000 ± "),
        "{row}"
    );
    // The trigger families are ranked by hits.
    let (old, new) = old_new(
        d,
        "trig-uprobe-nop",
        samples(1e6, 1e6, &STEADY, false),
        samples(1e6, 2e6, &STEADY, false),
    );
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    assert_has(row, "no significant change");
}

/// `bench compare` with `flags` and `args`, whatever its exit code.
fn compare_any(args: &[&Path], flags: &[&str]) -> Output {
    let mut all: Vec<String> = vec!["compare".into()];
    all.extend(flags.iter().map(|s| s.to_string()));
    all.extend(args.iter().map(|p| p.to_str().unwrap().to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    run(&all)
}

/// Rewrites the result file at `path` with `change` applied.
fn edit(path: &Path, change: impl FnOnce(&mut ResultFile)) {
    let mut file: ResultFile = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    change(&mut file);
    fs::write(path, file.to_json()).unwrap();
}

#[test]
fn every_recorded_option_that_changes_the_work_is_compared() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = steady(d, "plain.json", "trig-uprobe-nop", 2e6);
    type Change = fn(&mut ResultFile);
    let changes: [(&str, Change, &str); 4] = [
        (
            "stack.json",
            |f| f.options.stacktrace = true,
            "stacktrace=(none)",
        ),
        (
            "pid.json",
            |f| f.options.pid_filter = true,
            "pid_filter=(none)",
        ),
        ("cons.json", |f| f.options.consumers = 1, "consumers=0"),
        (
            "prof.json",
            |f| f.options.profile_freq_hz = Some(999),
            "profile_freq_hz=(none)",
        ),
    ];
    for (name, change, needle) in changes {
        let other = steady(d, name, "trig-uprobe-nop", 0.8e6);
        edit(&other, change);
        let out = compare_any(&[&plain, &other], &[]);
        assert_one_clear_line(&out, 2, needle);
        assert_has(&out.stderr, "different option sets");
        assert_eq!(compare_any(&[&plain, &other], &["--force"]).code, 0);
    }
    // How long a run lasted is not what it measured.
    let longer = steady(d, "longer.json", "trig-uprobe-nop", 2e6);
    edit(&longer, |f| {
        f.options.warmup_secs = 7;
        f.options.duration_secs = 9;
    });
    assert_eq!(compare_any(&[&plain, &longer], &[]).code, 0);
}

#[test]
fn a_benchmark_on_one_side_only_is_listed_and_fails_the_gate() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let both = samples(2e6, 0.0, &STEADY, false);
    write(
        old.path(),
        "a.json",
        "trig-syscall-count",
        both.clone(),
        false,
    );
    write(
        old.path(),
        "b.json",
        "trig-usermode-count",
        both.clone(),
        false,
    );
    write(
        new.path(),
        "b.json",
        "trig-usermode-count",
        both.clone(),
        false,
    );
    write(new.path(), "c.json", "trig-uprobe-nop", both, false);
    let out = compare_any(&[old.path(), new.path()], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let missing: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("missing from"))
        .collect();
    assert_eq!(missing.len(), 2, "{}", out.stdout);
    assert!(
        missing[0].starts_with("trig-syscall-count")
            && missing[0].ends_with(&new.path().display().to_string())
    );
    assert!(
        missing[1].starts_with("trig-uprobe-nop")
            && missing[1].ends_with(&old.path().display().to_string())
    );
    let out = compare_any(&[old.path(), new.path()], &["--fail-on-regression", "5"]);
    assert_eq!(out.code, 6, "{}", out.stderr);
    assert!(
        out.stderr.contains("trig-syscall-count is missing from")
            && out.stderr.contains("trig-uprobe-nop is missing from")
            && out.stderr.contains("--allow-missing"),
        "{}",
        out.stderr
    );
    let out = compare_any(
        &[old.path(), new.path()],
        &["--fail-on-regression", "5", "--allow-missing"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn files_with_no_run_and_a_sweep_against_a_plain_run_get_precise_messages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = steady(d, "plain.json", "trig-uprobe-nop", 2e6);
    // A benchmark refused in an interleaved run leaves a file with no run.
    let empty = write(
        d,
        "empty.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &STEADY, false),
        true,
    );
    edit(&empty, |f| f.runs.clear());
    for pair in [
        [plain.as_path(), empty.as_path()],
        [empty.as_path(), empty.as_path()],
    ] {
        let out = compare_any(&pair, &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout.contains("nothing to compare: the")
                && out
                    .stdout
                    .contains("run holds no run (the benchmark was refused"),
            "{}",
            out.stdout
        );
    }
    let swept = steady(d, "swept.json", "trig-uprobe-nop", 2e6);
    edit(&swept, |f| {
        f.sweep = Some(bench::results::SweepInfo {
            param: "producers".into(),
            values: vec![1],
            labels: Vec::new(),
        });
        f.runs[0].sweep_value = Some(1);
    });
    let out = compare_any(&[&plain, &swept], &[]);
    assert_one_clear_line(
        &out,
        2,
        "holds trig-uprobe-nop producers=1: the same benchmark, but no configuration in common",
    );
}

#[test]
fn control_characters_from_a_file_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let evil = "trig-\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake-row";
    let a = steady(d, "a.json", evil, 2e6);
    let b = steady(d, "b.json", evil, 2e6);
    let out = compare_any(&[&a, &b], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'),
        "{:?}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 3, "{:?}", out.stdout);
    assert!(
        out.stdout
            .contains(r"trig-\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake-row"),
        "{:?}",
        out.stdout
    );
    // In an error too: an option's value from the file.
    edit(&b, |f| f.options.affinity = "x\u{1b}[31m".into());
    let out = compare_any(&[&a, &b], &[]);
    assert_eq!(out.code, 2);
    assert!(
        !out.stderr.contains('\u{1b}') && out.stderr.contains(r"\u{1b}[31m"),
        "{:?}",
        out.stderr
    );
}

/// What is not a regular file is refused before a
/// byte is read — a device that never ends (/dev/zero, directly or through a
/// symlink in a results directory) ate the machine's memory, and a FIFO with
/// no writer blocked `compare` past SIGTERM. Exit 2, one sentence, at once.
#[test]
fn what_is_not_a_regular_file_is_refused_before_reading() {
    let dir = tempdir("compare-not-files");
    let base = steady(&dir, "base.json", "trig-usermode-count", 1e8);
    let results = dir.join("results");
    fs::create_dir(&results).unwrap();
    steady(&results, "a.json", "trig-usermode-count", 1e8);
    std::os::unix::fs::symlink("/dev/zero", results.join("zz.json")).unwrap();
    let fifo = dir.join("ff");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string naming a path in our own directory.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);

    for (new, needle) in [
        (Path::new("/dev/zero"), "/dev/zero is not a regular file"),
        (results.as_path(), "zz.json is not a regular file"),
        (fifo.as_path(), "ff is not a regular file"),
    ] {
        // A tool that reads them never ends: kill it rather than hang, or
        // let it take the machine's memory.
        let mut child = spawn(&["compare", base.to_str().unwrap(), new.to_str().unwrap()]);
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("compare was still reading {} after a minute", new.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = finish_child(child, std::time::Duration::from_secs(1), String::new());
        assert_one_clear_line(&out, 2, needle);
    }
    let _ = fs::remove_dir_all(&dir);
}

/// `--fail-on-regression` fails a benchmark whose new side
/// measured nothing (interrupted in warm-up, refused, no run at all) or too
/// little to judge (one measured second), as it fails a missing one, unless
/// `--allow-missing` says that is expected.
#[test]
fn the_gate_fails_what_could_not_be_judged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = steady(d, "whole.json", "trig-uprobe-nop", 2e6);
    let warm = write(
        d,
        "warm.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &[1.0], true),
        true,
    );
    let short = write(
        d,
        "short.json",
        "trig-uprobe-nop",
        samples(2e6, 0.0, &[1.0], false),
        false,
    );
    let refused = d.join("refused.json");
    fs::copy(&whole, &refused).unwrap();
    edit(&refused, |f| f.runs.clear());
    for (new, needle) in [
        (&warm, "the new run was interrupted before measuring"),
        (&refused, "the new run holds no run"),
        (&short, "too few samples to judge"),
    ] {
        let out = compare_any(&[&whole, new], &["--fail-on-regression", "5"]);
        assert_eq!(out.code, 6, "{}: {}", new.display(), out.stderr);
        assert!(
            out.stderr.contains(needle) && out.stderr.contains("--allow-missing"),
            "{}",
            out.stderr
        );
        let out = compare_any(
            &[&whole, new],
            &["--fail-on-regression", "5", "--allow-missing"],
        );
        assert_eq!(out.code, 0, "{}: {}", new.display(), out.stderr);
    }
    // A whole run on both sides still passes a gate it is within.
    let out = compare_any(&[&whole, &whole], &["--fail-on-regression", "5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// An attach benchmark is judged by its times, attach and detach each, and
/// a longer time is slower: a real file's cycle, made four runs of known
/// times, against the same runs with every attach taking twice as long.
#[test]
fn attach_times_are_compared_as_times_longer_is_slower() {
    let dir = tempdir("compare-attach");
    let old = dir.join("old.json");
    let args = ["-q", "--attach-cnt", "5", "--json", old.to_str().unwrap()];
    let out = run(&[&args[..], &["attach-uprobe-multi"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let real: ResultFile = serde_json::from_str(&fs::read_to_string(&old).unwrap()).unwrap();
    // µs per probe of each run; 5 probes.
    let side = |attach: [u64; 4], path: &Path| {
        let mut file = real.clone();
        file.runs = attach
            .iter()
            .enumerate()
            .map(|(i, us)| {
                let mut run = real.runs[0].clone();
                run.repetition = Some(i as u32 + 1);
                let Outcome::Cycle(cycle) = &mut run.outcome else {
                    panic!("an attach cycle: {:?}", run.outcome)
                };
                cycle.attach.wall_ns = us * 1000 * cycle.probes as u64;
                cycle.detach.wall_ns = [300, 310, 290, 305][i] * 1000 * cycle.probes as u64;
                // The times changed: so do the figures the file keeps.
                let bench = bench::benches::find("attach-uprobe-multi").unwrap();
                run.evaluate(bench.figures(), bench.channels());
                run
            })
            .collect();
        fs::write(path, file.to_json()).unwrap();
    };
    let new = dir.join("new.json");
    side([100, 102, 98, 101], &old);
    side([200, 204, 196, 202], &new);
    let out = bench_ok(&format!("compare {} {}", old.display(), new.display()));
    let attach = line_starting(&out.stdout, "attach-uprobe-multi attach ");
    assert_has(attach, "100.250 \u{b1} 1.708 \u{b5}s/probe");
    assert_has(attach, "+100.00 %");
    assert_has(attach, "slower");
    let detach = line_starting(&out.stdout, "attach-uprobe-multi detach ");
    assert_has(detach, "+0.00 %");
    assert_has(detach, "no significant change");
    let gate = run(&[
        "compare",
        "--fail-on-regression",
        "10",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
    ]);
    assert_eq!(
        gate.code, 6,
        "a doubled attach time fails the gate: {}",
        gate.stdout
    );
    // The other way round, half the time is faster and passes the gate.
    let back = run(&[
        "compare",
        "--fail-on-regression",
        "10",
        new.to_str().unwrap(),
        old.to_str().unwrap(),
    ]);
    assert_eq!(back.code, 0, "{}", back.stdout);
    let attach = line_starting(&back.stdout, "attach-uprobe-multi attach ");
    assert!(
        attach.contains("-50.00 %") && attach.contains("faster"),
        "{attach}"
    );
}

#[test]
fn hand_edited_figures_that_cannot_be_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = steady(d, "good.json", "trig-usermode-count", 2e6);
    let no_time = steady(d, "no-time.json", "trig-usermode-count", 2e6);
    edit(&no_time, |f| {
        if let Outcome::Timed { samples, .. } = &mut f.runs[0].outcome {
            samples[3].elapsed_ns = 0;
        }
    });
    let out = compare_any(&[&good, &no_time], &[]);
    assert_one_clear_line(&out, 2, "no-time.json: runs[0].samples[3].elapsed_ns is 0");
    // A latency run, its p50 then raised above its p99.
    let timed = d.join("timed.json");
    bench_ok(&format!(
        "-q --latency -r 100000 --json {} trig-usermode-count",
        timed.display()
    ));
    let edited = d.join("edited.json");
    fs::copy(&timed, &edited).unwrap();
    edit(&edited, |f| {
        let percentiles = &mut f.runs[0].latency.as_mut().unwrap().percentiles;
        percentiles.p50 = percentiles.p99 + 1000;
    });
    // The first figure that falls is named: p50 now lies above p90 too.
    let out = compare_any(&[&timed, &edited], &[]);
    assert_one_clear_line(&out, 2, "edited.json: runs[0].latency.percentiles has p50");
    assert_has(&out.stderr, "above p90");
}

#[test]
fn a_rate_that_fell_is_never_shown_falling_by_more_than_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Three noisy runs against three much slower steady ones: an interval on
    // the difference of the means went below -100 % here.
    let side = |name: &str, levels: &[f64]| {
        let path = write(
            d,
            name,
            "trig-usermode-count",
            samples(1.0, 0.0, &STEADY, false),
            false,
        );
        let levels = levels.to_vec();
        edit(&path, move |f| {
            let first = f.runs[0].clone();
            f.runs = levels
                .iter()
                .enumerate()
                .map(|(i, &level)| {
                    let mut run = first.clone();
                    run.repetition = Some(i as u32 + 1);
                    run.outcome = Outcome::timed(samples(level, 0.0, &STEADY, false), &[true]);
                    run
                })
                .collect();
            let name = f.benchmark.clone();
            measured(f, &name);
        });
        path
    };
    let old = side("old.json", &[1e6, 3e6, 5e6]);
    let new = side("new.json", &[1e5, 1.2e5, 1.4e5]);
    let row = &rows(&compare(&[&old, &new], &[]))[0];
    let interval = row
        .split('[')
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no interval in {row}"));
    let low: f64 = interval
        .split(',')
        .next()
        .and_then(|low| low.trim().trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no lower bound in {row}"));
    assert!(low > -100.0, "{row}");
}

/// Fixed-work runs (`--runs N -r M`) are compared by their rates, one value a
/// run: the cover-letter table of a patch measured with `-r`.
#[test]
fn repeat_runs_are_compared_run_by_run() {
    let dir = tempdir("compare-repeat");
    let mut files = Vec::new();
    for side in ["old", "new"] {
        let path = dir.join(format!("{side}.json"));
        let out = bench_ok(&format!(
            "-q --runs 2 -r 20000 --json {} syscall-basic",
            path.display()
        ));
        assert_has(&out.stdout, "runs: 2, operations ");
        files.push(path);
    }
    let out = run(&[
        "compare",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row = line_starting(&out.stdout, "syscall-basic");
    assert!(row.contains("/s") && row.contains('%'), "{row}");
    assert!(!row.contains("--repeat"), "{row}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Two real runs of `bench` (`args` before its name), written to `dir`.
fn two_runs(dir: &Path, bench: &str, args: &str) -> (PathBuf, PathBuf) {
    let _lock = probe_lock();
    let paths = (dir.join("a.json"), dir.join("b.json"));
    for path in [&paths.0, &paths.1] {
        bench_ok(&format!("-q {args} --json {} {bench}", path.display()));
    }
    paths
}

/// `compare`'s rows with the benchmark's name cut off their start, their
/// columns' padding (which the name's length sets) folded.
fn rows_after(out: &Output, name: &str) -> Vec<String> {
    rows(out)
        .iter()
        .map(|r| r.strip_prefix(name).unwrap_or_else(|| panic!("{r}")))
        .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// A result file carries the table of what it measured: compared under a
/// name this bench does not know, it gives the rows, units and verdicts it
/// gives under its own (a map's memory in MiB, lower is better; sockmap's
/// megabytes per second).
#[test]
fn a_file_is_compared_by_what_it_says_not_by_its_name() {
    for (bench, args) in [("htab-mem", "-w0 -d2"), ("sockmap", "-w0 -d2")] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = two_runs(dir.path(), bench, args);
        let known = rows_after(&compare(&[&a, &b], &[]), bench);
        let figures = bench::benches::find(bench).unwrap().figures();
        assert_eq!(known.len(), figures.len(), "{known:?}");
        if bench == "htab-mem" {
            let memory = known.iter().find(|r| r.starts_with("memory ")).unwrap();
            assert_has(memory, " MiB");
        }
        for path in [&a, &b] {
            edit(path, |f| f.benchmark = "renamed-since".to_string());
        }
        let unknown = rows_after(&compare(&[&a, &b], &[]), "renamed-since");
        assert_eq!(unknown, known, "{bench}");
    }
}

/// A file 4c30c63 wrote (bench-result/2: hits, drops and extra counts whose
/// meaning lived in the binary) loads, says once what it lacks, and is
/// compared with a file of today's by today's meaning of its benchmark.
#[test]
fn a_file_of_the_layout_before_compares_against_a_new_one() {
    // The old file's runs took seconds: so do the new ones it is held to.
    real_tick();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    for (bench, args) in [
        ("htab-mem", "-w0 -d2"),
        ("sockmap", "-w0 -d2"),
        ("trig-uprobe-nop", "-w0 -d2"),
    ] {
        let old = fixtures.join(format!("4c30c63-{bench}.json"));
        let new = dir.path().join(format!("{bench}.json"));
        {
            let _lock = probe_lock();
            bench_ok(&format!("-q {args} --json {} {bench}", new.display()));
        }
        let out = compare(&[&old, &new], &[]);
        let notes: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.starts_with("note: "))
            .collect();
        assert!(
            notes[0].contains("was written as bench-result/2"),
            "{}",
            out.stdout
        );
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("bench-result/2"))
                .count(),
            1,
            "{}",
            out.stdout
        );
        let rows = rows(&out);
        let figures = bench::benches::find(bench).unwrap().figures();
        for figure in figures {
            let label = match figures.len() {
                1 => format!("{bench} "),
                _ => format!("{bench} {} ", figure.name),
            };
            let row = rows.iter().find(|r| r.starts_with(&label));
            let row = row.unwrap_or_else(|| panic!("no {label:?} in {}", out.stdout));
            // Both sides have it (one run a side judges no value of a run).
            assert!(!row.contains("side has no"), "{row}");
        }
    }
    // The old htab-mem's memory was its drops: now a gauge of bytes, in MiB.
    let (old, _) =
        bench::compare::load_result(&fixtures.join("4c30c63-htab-mem.json"), None).unwrap();
    let seconds = old.runs[0].samples();
    let bytes =
        seconds.iter().filter_map(|s| s.value(1)).sum::<u64>() as f64 / seconds.len() as f64;
    let mib = old.runs[0].figure("memory").unwrap();
    assert!(
        (mib - bytes / (1024.0 * 1024.0)).abs() < 1e-3,
        "{mib} MiB of {bytes} bytes"
    );
    assert_eq!(old.figures[1].unit, "MiB");
}

/// A file of an earlier layout compared with itself says what it lacks
/// once, not once a side.
#[test]
fn a_file_compared_with_itself_says_its_note_once() {
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/4c30c63-htab-mem.json");
    let out = compare(&[&old, &old], &[]);
    let notes = out.stdout.matches("was written as bench-result/2").count();
    assert_eq!(notes, 1, "{}", out.stdout);
}

/// Writes `file` as `name` in `dir`.
fn written(dir: &Path, name: &str, file: &ResultFile) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, file.to_json()).unwrap();
    path
}

/// `--machine-readable` changes only what bpf-nop prints: runs with and
/// without it are compared, and make one history series.
#[test]
fn an_output_only_option_splits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = [0, 1]
        .iter()
        .map(|&flag| {
            let mut file = template();
            file.benchmark = "bpf-nop".into();
            file.context.date = format!("2026-12-0{}T00:00:00Z", flag + 1);
            file.options.params.insert("machine-readable".into(), flag);
            file.options.params.insert("batch-iters".into(), 0);
            for run in &mut file.runs {
                run.params.insert("machine-readable".into(), flag);
                run.params.insert("batch-iters".into(), 0);
            }
            written(dir.path(), &format!("mr{flag}.json"), &file)
        })
        .collect();
    let out = compare_any(&[&files[0], &files[1]], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let db = dir.path().join("h.sqlite");
    let db = db.to_str().unwrap();
    let mut add = vec!["history", "--history", db, "add"];
    add.extend(files.iter().map(|f| f.to_str().unwrap()));
    assert_eq!(run(&add).code, 0);
    let shown = run(&[
        "history",
        "--history",
        db,
        "show",
        "bpf-nop",
        "--figure",
        "hits",
    ]);
    assert_eq!(
        shown.stdout.matches("is better").count(),
        1,
        "{}",
        shown.stdout
    );
    assert!(
        !shown.stdout.contains("machine-readable"),
        "{}",
        shown.stdout
    );
}

/// A file that contradicts itself or the other side is refused with a
/// sentence, never judged: a figure of two directions, a figure declared
/// twice, figures its own samples do not give, values too large to add up.
#[test]
fn files_that_contradict_themselves_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let old = written(dir.path(), "old.json", &template());

    let mut lower = template();
    lower.figures[0].better = bench::stats::Better::Lower;
    let lower = written(dir.path(), "lower.json", &lower);
    let out = compare(&[&old, &lower], &[]);
    assert_has(
        &out.stdout,
        "is higher-is-better on the old side, lower-is-better on the new",
    );

    let mut twice = template();
    let mut other = twice.figures[0].clone();
    other.unit = "ns/hit".into();
    twice.figures.push(other);
    let twice = written(dir.path(), "twice.json", &twice);
    assert_one_clear_line(&compare_any(&[&old, &twice], &[]), 2, "twice");

    let mut inflated = template();
    let name = inflated.figures[0].name.clone();
    let kept = inflated.runs[0].figures.get_mut(&name).unwrap();
    kept.value = kept.value.map(|v| v * 10.0);
    let inflated = written(dir.path(), "inflated.json", &inflated);
    assert_one_clear_line(
        &compare_any(&[&old, &inflated], &[]),
        2,
        "its own samples give",
    );

    let huge = |name: &str, scale: f64| {
        let mut file = template();
        file.benchmark = "not-a-benchmark".into();
        let figure = file.figures[0].name.clone();
        let kept = file.runs[0].figures.get_mut(&figure).unwrap();
        kept.seconds = vec![1.7e308 * scale; 4];
        kept.value = Some(1.7e308 * scale);
        written(dir.path(), name, &file)
    };
    let out = compare(&[&huge("a.json", 1.0), &huge("b.json", 0.9)], &[]);
    assert_has(&out.stdout, "too large to compute with");
    assert!(
        !out.stdout.contains("inf") && !out.stdout.contains("NaN"),
        "{}",
        out.stdout
    );
}
