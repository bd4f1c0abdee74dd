//! The history, for real: a SQLite file written by runs and by `history
//! add` (two processes at once among them), its change points on synthetic
//! BMF series, merge, the exports, and the refusal of a file that is not a
//! history. The page in a real browser is `history_page.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// `bench history --history PATH ARGS...`.
pub(super) fn history(path: &Path, args: &[&str]) -> Output {
    let mut all = vec!["history", "--history", path.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&all)
}

pub(super) fn history_ok(path: &Path, args: &[&str]) -> Output {
    let out = history(path, args);
    assert_eq!(out.code, 0, "history {args:?}: {}", out.stderr);
    out
}

/// The rows of `history show`: lines that start with an entry's number.
fn shown_entries(out: &Output) -> usize {
    out.stdout
        .lines()
        .filter(|l| {
            l.trim_start()
                .split(' ')
                .next()
                .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .count()
}

/// Seeded normal deviates (splitmix64, Box–Muller), as a user's generator.
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Writes one BMF file a value (`measure` of benchmark `name`) in `dir`.
fn bmf_files(dir: &Path, name: &str, measure: &str, values: &[f64]) -> Vec<PathBuf> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let path = dir.join(format!("{name}-{i:03}.json"));
            let json = serde_json::json!({ name: { measure: { "value": value } } });
            fs::write(&path, json.to_string()).unwrap();
            path
        })
        .collect()
}

/// 40 values: `first` for 20, then `second`, with `noise` relative noise.
fn synthetic(seed: u64, first: f64, second: f64, noise: f64) -> Vec<f64> {
    let mut normal = Normal(seed);
    (0..40)
        .map(|i| if i < 20 { first } else { second })
        .map(|mean| mean * (1.0 + noise * normal.next()))
        .collect()
}

/// Adds `files` to the history, in their order.
fn add(path: &Path, files: &[PathBuf], extra: &[&str]) {
    let mut args: Vec<&str> = vec!["add"];
    args.extend_from_slice(extra);
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    history_ok(path, &args);
}

fn changes_json(path: &Path) -> Vec<Value> {
    let out = history_ok(path, &["changes", "--json"]);
    let json: Value = serde_json::from_str(&out.stdout).expect("changes --json is JSON");
    json.as_array().expect("a list of changes").clone()
}

#[test]
fn three_runs_with_history_give_three_entries() {
    let dir = tempdir("history-runs");
    let db = dir.join("runs.sqlite");
    for _ in 0..3 {
        bench_ok(&format!(
            "-q -r 20000 --history {} trig-syscall-count",
            db.display()
        ));
    }
    let out = history_ok(&db, &["show", "trig-syscall-count"]);
    assert_eq!(shown_entries(&out), 3, "{}", out.stdout);
    assert_has(&out.stdout, "higher is better");
    let list = history_ok(&db, &["list"]);
    assert_has(&list.stdout, "trig-syscall-count        3");
}

#[test]
fn two_processes_appending_twenty_each_give_forty() {
    let dir = tempdir("history-concurrent");
    let db = dir.join("both.sqlite");
    let writers: Vec<_> = ["a", "b"]
        .iter()
        .map(|side| {
            let files = bmf_files(
                &dir,
                side,
                "throughput",
                &synthetic(7, 100.0, 100.0, 0.03)[..20],
            );
            let script = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    format!(
                        "{} history --history {} add --at @{} {} >/dev/null || exit 1",
                        bench_bin().display(),
                        db.display(),
                        1_800_000_000 + i,
                        f.display()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Command::new("sh").arg("-c").arg(script).spawn().unwrap()
        })
        .collect();
    for mut writer in writers {
        assert!(writer.wait().unwrap().success(), "a writer failed");
    }
    let a = history_ok(&db, &["show", "a"]);
    let b = history_ok(&db, &["show", "b"]);
    assert_eq!(shown_entries(&a) + shown_entries(&b), 40);
}

#[test]
fn a_synthetic_step_is_one_regression_at_twenty_and_a_flat_series_none() {
    let dir = tempdir("history-synthetic");
    for seed in 1..=5 {
        let step = dir.join(format!("step-{seed}.sqlite"));
        let files = bmf_files(
            &dir,
            &format!("step{seed}"),
            "throughput",
            &synthetic(seed, 100.0, 90.0, 0.03),
        );
        add(
            &step,
            &files,
            &["--at", "2026-12-01", "--label", "machine=synthetic"],
        );
        let found = changes_json(&step);
        assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
        let change = &found[0];
        let index = change["index"].as_u64().unwrap();
        assert!((19..=21).contains(&index), "seed {seed}: {change}");
        assert_eq!(change["verdict"], "regression", "seed {seed}");
        assert_eq!(change["figure"], "throughput");
        let pct = change["change_pct"].as_f64().unwrap();
        assert!((-13.0..-7.0).contains(&pct), "seed {seed}: {pct}");
        assert!(change["before"].as_f64().unwrap() > change["after"].as_f64().unwrap());

        let flat = dir.join(format!("flat-{seed}.sqlite"));
        let files = bmf_files(
            &dir,
            &format!("flat{seed}"),
            "throughput",
            &synthetic(seed + 100, 100.0, 100.0, 0.03),
        );
        add(&flat, &files, &["--at", "2026-12-01"]);
        assert_eq!(changes_json(&flat), Vec::<Value>::new(), "seed {seed}");
    }
}

#[test]
fn a_latency_step_up_is_a_regression_and_down_an_improvement() {
    let dir = tempdir("history-latency");
    for (first, second, verdict) in [(100.0, 115.0, "regression"), (100.0, 85.0, "improvement")] {
        let db = dir.join(format!("{verdict}.sqlite"));
        let files = bmf_files(&dir, verdict, "latency", &synthetic(3, first, second, 0.02));
        add(&db, &files, &[]);
        let found = changes_json(&db);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0]["verdict"], verdict);
    }
}

#[test]
fn merging_the_same_history_twice_adds_nothing() {
    let dir = tempdir("history-merge");
    let (mine, other) = (dir.join("mine.sqlite"), dir.join("other.sqlite"));
    let files = bmf_files(&dir, "mine", "throughput", &[1.0, 2.0, 3.0]);
    add(&mine, &files, &["--label", "machine=here"]);
    let files = bmf_files(&dir, "theirs", "throughput", &[4.0, 5.0]);
    add(&other, &files, &["--label", "machine=there"]);
    let first = history_ok(&mine, &["merge", other.to_str().unwrap()]);
    assert_has(&first.stdout, "2 new entries of 2");
    let again = history_ok(&mine, &["merge", other.to_str().unwrap()]);
    assert_has(&again.stdout, "0 new entries of 2");
    let shown = history_ok(&mine, &["show", "theirs"]);
    assert_eq!(shown_entries(&shown), 2);
    assert_has(&shown.stdout, "there: ");
    // The same measurements added again (same time, same labels) are kept once.
    let again = history_ok(
        &mine,
        &[
            "add",
            "--at",
            "2026-12-01",
            "--label",
            "machine=here",
            files[0].to_str().unwrap(),
        ],
    );
    assert_has(&again.stdout, "added 1 entries");
    let twice = history_ok(
        &mine,
        &[
            "add",
            "--at",
            "2026-12-01",
            "--label",
            "machine=here",
            files[0].to_str().unwrap(),
        ],
    );
    assert_has(&twice.stdout, "added 0 entries");
}

/// Runs `args` (with `{db}` for the path) on `file` and checks that it is
/// refused in one sentence, exit 2, and left byte for byte as it was.
fn assert_refused_untouched(file: &Path, args: &[&str]) {
    let before = fs::read(file).unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{db}", file.to_str().unwrap()))
        .collect();
    let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_one_clear_line(&out, 2, "is not a bench history");
    assert_eq!(fs::read(file).unwrap(), before, "{args:?} changed the file");
    let name = file.file_name().unwrap().to_str().unwrap();
    let leftovers: Vec<_> = fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(name) && n != name)
        .collect();
    assert!(leftovers.is_empty(), "{args:?} left {leftovers:?}");
}

#[test]
fn a_file_that_is_not_a_history_is_refused_and_left_untouched() {
    let dir = tempdir("history-foreign");
    let text = dir.join("notes.txt");
    fs::write(&text, "not a database\n").unwrap();
    let foreign = dir.join("other.db");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let bmf = bmf_files(&dir, "x", "throughput", &[1.0]);
    let bmf = bmf[0].to_str().unwrap();
    for file in [&text, &foreign] {
        assert_refused_untouched(file, &["history", "--history", "{db}", "list"]);
        assert_refused_untouched(file, &["history", "--history", "{db}", "add", bmf]);
        assert_refused_untouched(
            file,
            &[
                "-q",
                "-r",
                "1000",
                "--history",
                "{db}",
                "trig-syscall-count",
            ],
        );
    }
}

#[test]
fn a_history_is_one_sqlite_file_in_wal_mode_with_its_schema_version() {
    let dir = tempdir("history-schema");
    let db = dir.join("h.sqlite");
    add(&db, &bmf_files(&dir, "s", "throughput", &[1.0]), &[]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1);
    let id: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(id, 0x626e_6368);
    drop(conn);
    // A history from a newer bench is refused, not migrated down.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let out = history(&db, &["list"]);
    assert_one_clear_line(&out, 2, "newer than this bench's");
}

#[test]
fn bmf_measures_other_than_throughput_and_latency_need_a_direction() {
    let dir = tempdir("history-better");
    let db = dir.join("h.sqlite");
    let files = bmf_files(&dir, "mem", "memory", &[10.0]);
    let out = history(&db, &["add", files[0].to_str().unwrap()]);
    assert_one_clear_line(&out, 2, "--better higher|lower");
    assert!(!db.exists(), "a refused add made the history");
    history_ok(
        &db,
        &["add", "--better", "lower", files[0].to_str().unwrap()],
    );
    let shown = history_ok(&db, &["show", "mem"]);
    assert_has(&shown.stdout, "lower is better");
}

#[test]
fn exports_write_each_tracker_s_format() {
    let dir = tempdir("history-export");
    let (_, json, _) = bench_ok_json("-q -r 20000 --runs 2 --json {json} trig-syscall-count");
    let json = json.to_str().unwrap();
    let bmf = run(&["export", "--format", "bmf", json]);
    assert_eq!(bmf.code, 0, "{}", bmf.stderr);
    let doc: Value = serde_json::from_str(&bmf.stdout).unwrap();
    let hits = &doc["trig-syscall-count"]["hits (hits/s, higher is better)"];
    assert!(hits["value"].as_f64().unwrap() > 0.0, "{doc}");
    assert!(hits["lower_value"].as_f64().unwrap() <= hits["value"].as_f64().unwrap());
    assert!(hits["upper_value"].as_f64().unwrap() >= hits["value"].as_f64().unwrap());

    let action = run(&["export", "--format", "github-action", json]);
    let list: Value = serde_json::from_str(&action.stdout).unwrap();
    assert_eq!(list[0]["name"], "trig-syscall-count hits");
    assert_eq!(list[0]["unit"], "hits/s");
    // The range is exact, as the value is: the BMF interval's very numbers.
    let range = list[0]["range"].as_str().unwrap();
    let bounds: Vec<f64> = range.split(" .. ").map(|b| b.parse().unwrap()).collect();
    assert_eq!(
        bounds,
        [
            hits["lower_value"].as_f64().unwrap(),
            hits["upper_value"].as_f64().unwrap()
        ]
    );
    let smaller = run(&[
        "export",
        "--format",
        "github-action",
        "--better",
        "lower",
        json,
    ]);
    // An empty list would fail github-action-benchmark later: refused here.
    assert_one_clear_line(&smaller, 2, "give --better higher");
    assert!(smaller.stdout.is_empty(), "{}", smaller.stdout);

    let otava = dir.join("otava");
    let out = run(&[
        "export",
        "--format",
        "otava",
        "-o",
        otava.to_str().unwrap(),
        json,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let config = fs::read_to_string(otava.join("otava.yaml")).unwrap();
    assert_has(&config, "type: csv");
    let csv = fs::read_to_string(otava.join("trig-syscall-count-hits.csv")).unwrap();
    assert_starts(
        &csv,
        "time,hits,kernel,machine,bench_version,commit,options\n",
    );
    let refused = run(&["export", "--format", "otava", json]);
    assert_one_clear_line(&refused, 2, "give --output DIR");
}

#[test]
fn a_history_that_cannot_be_written_is_refused_before_the_run() {
    let out = bench("-r 1000 --history /proc/no-such-dir/h.sqlite trig-syscall-count");
    assert_one_clear_line(&out, 2, "cannot be written");
    assert!(out.stdout.is_empty(), "the run ran: {}", out.stdout);
}

/// A run appended and its file added later are one entry, of the machine
/// `--machine` names; two machines of one model are two series; a file of
/// the layout before (no machine name) still loads.
#[test]
fn a_run_appended_and_its_file_added_later_are_one_entry() {
    let (dir, json, _) = bench_ok_json(
        "-q -r 20000 --machine lab-1 --history {json}.sqlite --json {json} trig-syscall-count",
    );
    let db = PathBuf::from(format!("{}.sqlite", json.display()));
    let again = history_ok(&db, &["add", json.to_str().unwrap()]);
    assert_has(&again.stdout, "added 0 entries");
    let shown = history_ok(&db, &["show", "trig-syscall-count"]);
    assert_eq!(shown_entries(&shown), 1, "{}", shown.stdout);
    assert_has(&shown.stdout, "; lab-1: ");

    let mut file: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let fleet = dir.join("fleet.sqlite");
    for name in ["ci-alpha", "ci-beta", ""] {
        let context = file["context"].as_object_mut().unwrap();
        match name {
            "" => context.remove("machine_name"),
            name => context.insert("machine_name".into(), Value::from(name)),
        };
        let path = dir.join(format!("machine-{name}.json"));
        fs::write(&path, file.to_string()).unwrap();
        add(&fleet, &[path], &[]);
    }
    let shown = history_ok(&fleet, &["show", "trig-syscall-count", "--figure", "hits"]);
    assert_eq!(
        shown.stdout.matches("is better").count(),
        3,
        "{}",
        shown.stdout
    );
    assert_has(&shown.stdout, "; ci-alpha: ");
    assert_has(&shown.stdout, "; ci-beta: ");
}

/// A BMF file of figures of both directions, as the export names them, is
/// added without --better, each measure with its unit and direction, and
/// exported again as it was.
#[test]
fn a_bmf_export_of_both_directions_adds_back_as_it_was() {
    let dir = tempdir("history-bmf-directions");
    let db = dir.join("h.sqlite");
    let file = dir.join("both.json");
    let doc = serde_json::json!({"b": {
        "hits (hits/s, higher is better)": {"value": 100.0},
        "median (ns/op, lower is better)": {"value": 9.5},
    }});
    fs::write(&file, doc.to_string()).unwrap();
    add(&db, &[file], &[]);
    let shown = history_ok(&db, &["show", "b"]);
    assert_has(&shown.stdout, "b hits (hits/s), higher is better");
    assert_has(&shown.stdout, "b median (ns/op), lower is better");
    let out = history_ok(&db, &["export", "--format", "bmf"]);
    let back: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(back, doc);
}
