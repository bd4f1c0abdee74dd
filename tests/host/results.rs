//! Results you can keep, compare, sweep and plot: JSON against its documented
//! schema, CSV, atomic writes, compare verdicts and exit codes, sweeps and plots.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use bench::results::{Outcome, ResultFile};
use bench::stats::Over;
use serde_json::Value;

/// Every way `value` breaks docs/result-schema.json, by a validator of every
/// keyword the schema uses (`enum`, `minimum`, `oneOf` and the rest), which
/// refuses a schema with a keyword it does not check.
fn schema_errors(value: &Value) -> Vec<String> {
    crate::common::schema::errors(&schema(), value)
}

fn validate(value: &Value) {
    let errors = schema_errors(value);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The result of a run of bench with `args` and `--json -`, checked against
/// the schema.
fn run_json(args: &[&str]) -> Value {
    let out = run(&[args, &["--json", "-"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let value: Value = serde_json::from_str(&out.stdout).unwrap();
    validate(&value);
    value
}

/// The result `text`, checked against the schema and read back into the
/// structs field for field.
fn checked(text: &str) -> ResultFile {
    let value: Value = serde_json::from_str(text).unwrap();
    validate(&value);
    let parsed: ResultFile = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
    parsed
}

/// The result file at `path`, checked as [`checked`] does.
fn checked_file(path: &Path) -> ResultFile {
    checked(&fs::read_to_string(path).unwrap())
}

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/result-schema.json");
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn json_round_trips_and_matches_its_documented_schema() {
    let (dir, path, _) = bench_ok_json("-q -w1 -d2 -p2 -a --json {json} trig-syscall-count");
    // Round trip: the structs read back what was written, field for field.
    let parsed = checked_file(&path);

    assert_eq!(parsed.schema, "bench-result/3");
    assert_eq!(parsed.benchmark, "trig-syscall-count");
    assert!(!parsed.partial);
    assert_eq!(parsed.options.producers, 2);
    assert_eq!(parsed.options.affinity, "auto");
    assert!(!parsed.context.kernel_release.is_empty());
    let run = &parsed.runs[0];
    assert_eq!(run.samples().len(), 3);
    assert!(run.samples()[0].warmup && !run.samples()[1].warmup);
    assert_eq!(run.placement.producers.len(), 2);
    assert!(run.placement.producers.iter().all(Option::is_some));
    let summary = run.summary().cloned().unwrap();
    assert_eq!(summary.over, Over::Samples(2));
    // The file says what it read: one channel, the hits, and its figure.
    assert_eq!(parsed.ticked(), ["hits"]);
    assert_eq!(parsed.figures[0].name, "hits");
    assert_eq!(parsed.figures[0].unit, "hits/s");
    // The summary is what the samples say, and so is the figure.
    let rates: Vec<f64> = run.samples()[1..]
        .iter()
        .map(|s| s.value(0).unwrap() as f64 * 1e9 / s.elapsed_ns as f64)
        .collect();
    let hits = summary.channels[0].unwrap();
    assert!((hits.mean - (rates[0] + rates[1]) / 2.0).abs() < 1e-6 * hits.mean);
    assert!(close(run.figure("hits").unwrap(), hits.mean));
    assert_eq!(run.within_run("hits").len(), 2);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn interleaved_results_record_their_change_in_the_documented_schema() {
    let dir = tempdir("interleaved-json");
    bench_ok(&format!(
        "-q -w0 -d1 --runs 2 --json {} trig-usermode-count trig-syscall-count",
        dir.display()
    ));
    for name in ["trig-usermode-count", "trig-syscall-count"] {
        let parsed = checked_file(&dir.join(format!("{name}.json")));
        assert_eq!(parsed.comparison.is_some(), name == "trig-syscall-count");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_profiled_run_keeps_its_breakdown_in_the_documented_schema() {
    let value = run_json(&["-q", "-w0", "-d1", "--profile", "trig-syscall-count"]);
    let parsed: ResultFile = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
    let profile = parsed.runs[0].profile.as_ref().expect("a profile");
    assert!(profile.producer_samples > 0, "{profile:?}");
    assert!(!profile.stages.is_empty());
}

#[test]
fn a_latency_run_keeps_its_histogram_in_the_documented_schema() {
    let out = bench_ok("-q -w0 -d1 --runs 2 --latency --json - trig-syscall-count");
    let parsed = checked(&out.stdout);
    assert!(parsed.options.latency);
    assert!(parsed.runs.iter().all(|r| r.latency.is_some()));
    assert!(parsed.run_stats[0].latency.is_some());
}

#[test]
fn json_to_stdout_moves_the_text_to_stderr() {
    let out = bench_ok("-w0 -d1 --json - trig-usermode-count");
    let value: Value = serde_json::from_str(&out.stdout).expect("stdout is only JSON");
    assert_eq!(value["benchmark"], "trig-usermode-count");
    assert_has(&out.stderr, "Summary: hits");
}

/// A CSV row read back with the column types the file promises; an empty
/// field is `None`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CsvRow {
    benchmark: String,
    sweep_param: String,
    sweep_value: Option<u64>,
    run: Option<u32>,
    kind: String,
    iteration: Option<u32>,
    elapsed_ns: Option<u64>,
    late_ns: Option<i64>,
    warmup: Option<bool>,
    calls: Option<u64>,
    ops: Option<u64>,
    channel: Option<String>,
    figure: Option<String>,
    unit: Option<String>,
    cpu: Option<u32>,
    value: Option<f64>,
    mean: Option<f64>,
    sd: Option<f64>,
    runs: Option<usize>,
    ci95: Option<f64>,
    partial: bool,
    percentile: Option<String>,
    value_ns: Option<f64>,
    count: Option<u64>,
    probes: Option<usize>,
    wall_ns: Option<u64>,
    user_ns: Option<u64>,
    system_ns: Option<u64>,
    us_per_probe: Option<f64>,
    fired: Option<usize>,
}

/// The `#` lines and the typed rows of a CSV file, its header checked.
fn read_csv(path: &Path) -> (Vec<String>, Vec<CsvRow>) {
    let text = fs::read_to_string(path).unwrap();
    let comments = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header.join(","), bench::report::csv::HEADER);
    let rows = reader
        .deserialize()
        .collect::<Result<Vec<CsvRow>, _>>()
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    (comments, rows)
}

/// A run of `bench` with `opts` writing a CSV and a JSON file into a fresh
/// directory (`tag`): that directory, the JSON read back, and the CSV's `#`
/// lines and rows.
fn run_csv_json(
    tag: &str,
    opts: &[&str],
    bench: &str,
) -> (PathBuf, ResultFile, Vec<String>, Vec<CsvRow>) {
    let dir = tempdir(tag);
    let (csv, json) = (dir.join("run.csv"), dir.join("run.json"));
    let files = [
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let out = run(&[opts, &files, &[bench]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file = ResultFile::load(&json).unwrap();
    let (comments, rows) = read_csv(&csv);
    (dir, file, comments, rows)
}

/// Equal as far as the decimal forms of JSON and CSV carry a float.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn csv_has_the_samples_and_summary_the_json_of_the_same_run_has() {
    let (dir, file, comments, rows) = run_csv_json("csv", &["-q", "-w1", "-d2"], "syscall-basic");
    // Without --latency, the latency columns stay empty.
    assert!(rows
        .iter()
        .all(|r| r.percentile.is_none() && r.value_ns.is_none()));

    assert_eq!(comments.len(), 5, "{comments:?}");
    assert!(comments[0].starts_with("# tool: bench "), "{comments:?}");
    assert!(
        comments[1].starts_with(
            "# options: affinity=none consumers=0 duration_secs=2 producers=1 repeat=- test_tick_ms=100 warmup_secs=1"
        ),
        "{comments:?}"
    );
    // What it read and what it is judged by, as the JSON says it.
    assert_eq!(comments[2], "# channels: operations (operations, counter)");
    assert_eq!(
        comments[3],
        "# figures: operations (operations/s, higher is better)"
    );
    let kernel = format!("# context: kernel={} ", file.context.kernel_release);
    assert!(comments[4].starts_with(&kernel), "{comments:?}");

    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["sample", "sample", "sample", "summary", "figure"]);
    let run = &file.runs[0];
    for (row, sample) in rows.iter().zip(run.samples()) {
        assert_eq!(row.benchmark, "syscall-basic");
        assert_eq!((row.sweep_param.as_str(), row.sweep_value), ("", None));
        assert_eq!(row.iteration, Some(sample.iteration));
        assert_eq!(row.elapsed_ns, Some(sample.elapsed_ns));
        assert_eq!(row.late_ns, Some(sample.late_ns));
        assert_eq!(row.warmup, Some(sample.warmup));
        assert_eq!(row.channel.as_deref(), Some("operations"));
        assert_eq!(row.unit.as_deref(), Some("operations"));
        assert_eq!(row.value, sample.value(0).map(|v| v as f64));
        assert_eq!((row.calls, row.ops, row.mean), (None, None, None));
        assert!(!row.partial);
    }
    assert!(run.samples()[1].value(0) > Some(0), "{:?}", run.samples());

    let summary = run.summary().cloned().unwrap();
    let row = &rows[3];
    let operations = summary.channels[0].unwrap();
    assert_eq!(row.unit.as_deref(), Some("operations/s"));
    assert!(close(row.mean.unwrap(), operations.mean), "{row:?}");
    assert!(close(row.sd.unwrap(), operations.sd), "{row:?}");
    assert_eq!(row.count, Some(2));
    let figure = &rows[4];
    assert_eq!(figure.figure.as_deref(), Some("operations"));
    assert!(close(
        figure.value.unwrap(),
        run.figure("operations").unwrap()
    ));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_carries_each_run_the_statistics_over_runs_and_every_option() {
    let _lock = probe_lock();
    let (dir, file, comments, rows) = run_csv_json(
        "csv-runs",
        &[
            "-q",
            "-w0",
            "-d1",
            "-s",
            "--pid-filter",
            "--precision",
            "0.001",
            "--max-runs",
            "2",
        ],
        "trig-uprobe-nop",
    );
    assert!(
        comments[1].contains(" pid_filter=true ") && comments[1].contains(" stacktrace=true "),
        "{comments:?}"
    );
    assert_eq!(
        comments[2],
        "# precision: reached=false runs=2 stopped_by=max-runs target_pct=0.001"
    );
    let runs: Vec<(Option<u32>, &str)> = rows.iter().map(|r| (r.run, r.kind.as_str())).collect();
    let per_run = |n| {
        [
            (Some(n), "sample"),
            (Some(n), "sample"),
            (Some(n), "summary"),
            (Some(n), "summary"),
            (Some(n), "figure"),
        ]
    };
    let expected: Vec<_> = [per_run(1), per_run(2)]
        .concat()
        .into_iter()
        .chain([(None, "runs")])
        .collect();
    assert_eq!(runs, expected);
    let level = &file.run_stats[0];
    let row = rows.last().unwrap();
    let hits = &level.figures["hits"];
    assert_eq!((row.runs, row.figure.as_deref()), (Some(2), Some("hits")));
    for (csv, json) in [
        (row.mean, hits.mean),
        (row.sd, hits.sd),
        (row.ci95, hits.ci95.unwrap()),
    ] {
        assert!(close(csv.unwrap(), json), "{row:?} against {level:?}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_of_a_fixed_run_has_one_fixed_row_a_channel() {
    let (dir, file, comments, rows) =
        run_csv_json("csv-fixed", &["-q", "-r", "1000"], "syscall-basic");
    let fixed = file.runs[0].fixed().cloned().unwrap();
    assert!(comments[1].contains(" repeat=1000 "), "{comments:?}");
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["fixed", "figure"]);
    let row = &rows[0];
    assert_eq!(row.ops, Some(1000));
    assert_eq!(row.elapsed_ns, Some(fixed.elapsed_ns));
    assert_eq!(row.calls, Some(fixed.calls));
    assert_eq!(row.channel.as_deref(), Some("operations"));
    assert_eq!(row.value, Some(1000.0));
    assert_eq!((row.iteration, row.warmup, row.mean), (None, None, None));
    fs::remove_dir_all(&dir).unwrap();
}

/// A counter, a gauge and a value measured once, in CSV as in JSON: the
/// extra counts the file's own table names are rows of their own.
#[test]
fn csv_names_every_channel_the_json_declares() {
    let (dir, file, comments, rows) =
        run_csv_json("csv-channels", &["-q", "-w0", "-d1"], "htab-mem");
    assert_eq!(
        comments[2],
        "# channels: operations (operations, counter) | memory (bytes, gauge) | peak memory \
         (bytes, final)"
    );
    assert!(comments[3].starts_with("# figures: per-prod-op (operations/s per producer, higher is better) | memory (MiB, lower is better)"), "{comments:?}");
    let channels: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == "sample")
        .filter_map(|r| r.channel.as_deref())
        .collect();
    assert_eq!(channels, ["operations", "memory"]);
    let memory = rows
        .iter()
        .find(|r| r.kind == "sample" && r.channel.as_deref() == Some("memory"))
        .unwrap();
    assert_eq!(memory.unit.as_deref(), Some("bytes"));
    assert_eq!(
        memory.value,
        file.runs[0].samples()[0].value(1).map(|v| v as f64)
    );
    let peak = rows.iter().find(|r| r.kind == "final").unwrap();
    assert_eq!(peak.channel.as_deref(), Some("peak memory"));
    assert_eq!(
        Some(peak.value.unwrap()),
        Some(file.runs[0].finals[0].value)
    );
    assert_eq!(peak.cpu, None);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_killed_run_leaves_no_half_file() {
    let (dir, _, mut child) = spawn_json("-q -w0 -d30 --json {json} trig-usermode-count");
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    fs::remove_dir_all(&dir).unwrap();
}

/// A result file with per-second samples around `mean` (0.3% spread).
fn synthetic(dir: &Path, name: &str, bench: &str, producers: usize, mean: f64) -> PathBuf {
    let out = run(&["-q", "-w0", "-d1", "--json", "-", "trig-usermode-count"]);
    let mut file: ResultFile = serde_json::from_str(&out.stdout).unwrap();
    file.benchmark = bench.to_string();
    file.options.producers = producers;
    let run = &mut file.runs[0];
    run.producers = producers;
    let samples = [0.997, 1.002, 1.0, 0.999, 1.003, 0.998, 1.001, 1.0]
        .iter()
        .enumerate()
        .map(|(i, f)| bench::stats::Sample {
            iteration: i as u32,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            warmup: false,
            values: vec![Some((mean * f) as u64)],
        })
        .collect();
    run.outcome = Outcome::timed(samples, &[true]);
    // Its figures, as trig-usermode-count's (hits per second) would be.
    let counted = bench::benches::find("trig-usermode-count").unwrap();
    run.evaluate(counted.figures(), counted.channels());
    let path = dir.join(name);
    fs::write(&path, file.to_json()).unwrap();
    path
}

/// Runs `bench compare` on `files`, after `options` (words).
fn compare(options: &str, files: &[&Path]) -> Output {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    bench(&format!("compare {options} {}", files.join(" ")))
}

#[test]
fn compare_calls_a_20_percent_drop_slower_and_half_a_percent_noise() {
    let dir = tempdir("compare");
    let old = synthetic(&dir, "old.json", "trig-uprobe-nop", 1, 2.0e6);
    let slower = synthetic(&dir, "slower.json", "trig-uprobe-nop", 1, 1.6e6);
    let same = synthetic(&dir, "same.json", "trig-uprobe-nop", 1, 2.01e6);

    let out = compare("", &[&old, &slower]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = line_starting(&out.stdout, "trig-uprobe-nop");
    assert!(
        line.contains("-20.00 % [") && line.contains("slower (p=0.000, 1 run: drift not captured)"),
        "{line}"
    );

    let out = compare("", &[&old, &same]);
    let line = line_starting(&out.stdout, "trig-uprobe-nop");
    assert!(
        line.contains("+0.50 % [") && line.contains("no significant change"),
        "{line}"
    );

    // The gate: exit 6 beyond the allowed slowdown, 0 within it.
    let out = compare("--fail-on-regression 5", &[&old, &slower]);
    assert_one_clear_line(&out, 6, "trig-uprobe-nop is 20.0% slower");
    let out = compare("--fail-on-regression 25", &[&old, &slower]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_refuses_different_benchmarks_and_option_sets_unless_forced() {
    let dir = tempdir("refuse");
    let a = synthetic(&dir, "a.json", "trig-uprobe-nop", 1, 2.0e6);
    let b = synthetic(&dir, "b.json", "trig-uprobe-nop5", 1, 5.0e6);
    let c = synthetic(&dir, "c.json", "trig-uprobe-nop", 2, 4.0e6);

    let out = compare("", &[&a, &b]);
    assert_one_clear_line(
        &out,
        2,
        "different benchmarks (--force compares them anyway)",
    );
    let out = compare("", &[&a, &c]);
    assert_one_clear_line(&out, 2, "producers=1 but");
    let out = compare("--force", &[&a, &b]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_has(&out.stdout, "faster");
    let out = compare("", &[&a, &dir.join("nope.json")]);
    assert_one_clear_line(&out, 2, "cannot read");
    let out = compare("--noise x", &[&a, &a]);
    assert_one_clear_line(&out, 2, "expected a percentage");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sweep_runs_each_value_and_plots_one_point_per_value() {
    let dir = tempdir("sweep");
    let (json, svg) = (dir.join("sweep.json"), dir.join("sweep.svg"));
    let csv_path = dir.join("sweep.csv");
    let out = bench_ok(&format!(
        "-q -w0 -d1 --sweep producers=1,2 --json {} --csv {} --plot {} trig-syscall-count",
        json.display(),
        csv_path.display(),
        svg.display()
    ));
    let table = lines_from(&out.stdout, "Sweep of producers");
    assert_eq!(table.len(), 4, "{}", out.stdout);
    assert_has(table[1], "efficiency");

    let file = ResultFile::load(&json).unwrap();
    assert_eq!(file.sweep.as_ref().unwrap().values, vec![1, 2]);
    assert_eq!(file.runs.len(), 2);
    assert_eq!(file.runs[1].sweep_value, Some(2));
    assert_eq!(file.runs[1].producers, 2);

    // One sample and one summary per value, each row naming its value.
    let (_, rows) = read_csv(&csv_path);
    let points: Vec<(&str, Option<u64>, &str)> = rows
        .iter()
        .map(|r| (r.sweep_param.as_str(), r.sweep_value, r.kind.as_str()))
        .collect();
    assert_eq!(
        points,
        [
            ("producers", Some(1), "sample"),
            ("producers", Some(1), "summary"),
            ("producers", Some(1), "figure"),
            ("producers", Some(2), "sample"),
            ("producers", Some(2), "summary"),
            ("producers", Some(2), "figure"),
        ]
    );

    let text = fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the plot is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let circles = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count();
    assert_eq!(circles, 2, "one point per value");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sweep_values_are_checked_before_anything_runs() {
    for (args, needle) in table(
        "
        --sweep producers=0,1 trig-syscall-count | producers must be between 1 and 1024
        --sweep trig-batch-iters=1,5000 trig-rawtp | --trig-batch-iters must be between 1 and 1000
        --sweep bogus=1,2 trig-rawtp | trig-rawtp has no such option; it sweeps producers, body, trig-batch-iters
        --sweep breakpoints=0,5 breakpoint-thread | an x86 CPU has 4 hardware breakpoint slots
        --plot x.svg trig-rawtp | --plot draws a sweep
        --sweep producers=1 -r 5 trig-rawtp | does not combine with --repeat
        --sweep use-case=0,1 htab-mem | --sweep use-case: --use-case takes a word, and a sweep varies numbers and flags only: run each value of --use-case on its own
        -c 1 --sweep rb-b2b=0,2 rb-libbpf | --sweep rb-b2b=2: a flag takes 0 (off) and 1 (on)
        ",
    ) {
        let out = bench(args);
        assert_one_clear_line(&out, 2, needle);
    }
}

/// The validator is a real one: a result of `--precision` passes, and each
/// thing the schema forbids (a stop reason it does not list, a count below
/// its minimum, a run-level summary that counts both seconds and runs, a
/// stage that is not a string) is refused.
#[test]
fn the_schema_refuses_what_it_forbids() {
    let value = run_json(&[
        "-q",
        "-w0",
        "-d1",
        "--precision",
        "0.001",
        "--max-runs",
        "2",
        "trig-syscall-count",
    ]);
    assert_eq!(value["precision"]["stopped_by"], "max-runs");
    assert_eq!(value["run_stats"][0]["summary"]["runs"], 2);

    let refused = |change: &dyn Fn(&mut Value), needle: &str| {
        let mut broken = value.clone();
        change(&mut broken);
        let errors = schema_errors(&broken);
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "{needle}: {errors:?}"
        );
    };
    refused(
        &|v| v["precision"]["stopped_by"] = "whenever".into(),
        "/precision/stopped_by",
    );
    refused(
        &|v| v["run_stats"][0]["summary"]["runs"] = 0.into(),
        "/run_stats/0/summary/runs",
    );
    refused(
        &|v| v["run_stats"][0]["summary"]["samples"] = 2.into(),
        "/run_stats/0/summary",
    );
    refused(
        &|v| {
            v["runs"][0]["profile"] = serde_json::json!({"stages": [{"stage": 3}]});
        },
        "/runs/0/profile/stages/0/stage",
    );
}

/// Every profile stage the code can write is one the schema lists.
#[test]
fn the_schema_lists_every_profile_stage() {
    let schema = schema();
    let listed = &schema["properties"]["runs"]["items"]["properties"]["profile"]["properties"]
        ["stages"]["items"]["properties"]["stage"]["enum"];
    let listed = listed.as_array().expect("an enum of stages");
    for stage in bench::profile::stages::Stage::ALL {
        let name = serde_json::to_value(stage).unwrap();
        assert!(listed.contains(&name), "{name} is not in the schema");
    }
}

#[test]
fn an_attach_result_matches_the_documented_schema() {
    let _lock = probe_lock();
    let (dir, path, _) =
        bench_ok_json("attach-uprobe-multi --sweep attach-cnt=10,100 --runs 2 --json {json}");
    let parsed = checked_file(&path);
    assert_eq!(parsed.runs.len(), 4);
    assert_eq!(parsed.cycle_stats.len(), 2);
    assert_eq!(parsed.cycle_stats[1].probes, 100);
    assert_eq!(parsed.cycle_stats[1].all_fired, 2);
    // The CSV has an attach and a detach row per cycle, as the JSON says.
    let csv_path = dir.join("attach.csv");
    bench_ok(&format!(
        "attach-uprobe-multi --attach-cnt 10 --csv {}",
        csv_path.display()
    ));
    let (_, rows) = read_csv(&csv_path);
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["attach", "detach", "figure", "figure"]);
    for row in rows.iter().filter(|r| r.kind != "figure") {
        assert_eq!((row.probes, row.fired), (Some(10), Some(10)));
        assert!(row.user_ns.is_some() && row.system_ns.is_some());
        let wall = row.wall_ns.unwrap() as f64;
        assert!((row.us_per_probe.unwrap() - wall / 1e3 / 10.0).abs() < 1e-6 * wall);
    }
    let facts = parsed.context.detach_facts.unwrap();
    assert!(
        ["0", "1"].contains(&facts.rcu_expedited.as_str()),
        "{facts:?}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// The test tick (docs/testing.md) is kept out of what keeps numbers: its
/// file says so, `compare` refuses it (unless run on the tick itself, as
/// this suite's compare tests are), `history add` always, a run with
/// `--history` refuses the variable, and a tick out of bounds is refused.
#[test]
fn the_test_tick_is_said_and_refused_where_numbers_are_kept() {
    let (dir, json, _) = bench_ok_json("-q -w0 -d1 --json {json} trig-usermode-count");
    let file = checked_file(&json);
    assert_eq!(file.options.test_tick_ms, Some(TEST_TICK_MS));
    let path = json.to_str().unwrap();
    let refusal = format!(
        "was measured on the test suite's {TEST_TICK_MS} ms tick (BENCH_TEST_TICK_MS): its \
         numbers check output and are not for comparison or the history"
    );
    let off_tick = |args: &[&str]| {
        let mut cmd = std::process::Command::new(bench_bin());
        cmd.args(args).env_remove("BENCH_TEST_TICK_MS");
        run_cmd(cmd)
    };
    assert_one_clear_line(&off_tick(&["compare", path, path]), 2, &refusal);
    bench_ok(&format!("compare {path} {path}"));
    let history = dir.join("h.sqlite");
    let history = history.to_str().unwrap();
    let add = ["history", "--history", history, "add", path];
    assert_one_clear_line(&off_tick(&add), 2, &refusal);
    assert_one_clear_line(&run(&add), 2, &refusal);
    let out = bench(&format!(
        "-q -w0 -d1 --history {history} trig-usermode-count"
    ));
    assert_one_clear_line(&out, 2, "--history keeps numbers for comparison");
    assert!(!dir.join("h.sqlite").exists(), "a refused history was made");
    let mut cmd = std::process::Command::new(bench_bin());
    cmd.args(["-q", "-w0", "-d1", "trig-usermode-count"])
        .env("BENCH_TEST_TICK_MS", "5");
    assert_one_clear_line(
        &run_cmd(cmd),
        2,
        "BENCH_TEST_TICK_MS=5 is not a tick in milliseconds from 20 to 1000 (it is for the test suite)",
    );
    fs::remove_dir_all(dir).unwrap();
}
