//! The history against what users do to files and processes: inputs that are
//! not regular files, many writers creating one history at once, readers
//! without write access (another user, an immutable file), Ctrl-C during a
//! long search, escapes in names, mistyped figures and odd paths. No
//! benchmark runs: BMF files and the fixtures, added with `history add`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::history::{history, history_ok};
use super::output_safety::ReadOnly;
use crate::common::*;

/// A BMF file of one value of `measure` of `name`, at `path`.
fn bmf(path: &Path, name: &str, measure: &str, value: f64) -> PathBuf {
    let json = serde_json::json!({ name: { measure: { "value": value } } });
    fs::write(path, json.to_string()).unwrap();
    path.to_path_buf()
}

/// `count` BMF files of `name` in `dir`, values around 100 with a step.
fn series_files(dir: &Path, name: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let step = if i < count / 2 { 100.0 } else { 90.0 };
            let value = step + (i % 7) as f64 * 0.3 + i as f64 * 1e-4;
            let path = dir.join(format!("{name}-{i:04}.json"));
            bmf(&path, name, "throughput", value)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// Waits for `child` at most a minute (killing it past that: a tool that
/// reads a device never ends) and collects what it printed.
fn bounded(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} was still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    finish_child(child, Duration::from_secs(1), String::new())
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string naming a path in our own directory.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

/// A FIFO blocked `history add`, /dev/zero (named or through a `.json`
/// link) ate the memory: refused before a byte is read, exit 2.
#[test]
fn add_refuses_what_is_not_a_regular_file_before_reading() {
    let dir = tempdir("hf-not-files");
    let db = dir.join("h.sqlite");
    let fifo = dir.join("ff");
    mkfifo(&fifo);
    let link = dir.join("zz.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for (file, needle) in [
        (fifo.as_path(), "ff is not a regular file"),
        (Path::new("/dev/zero"), "/dev/zero is not a regular file"),
        (link.as_path(), "zz.json is not a regular file"),
    ] {
        let db_arg = db.to_str().unwrap();
        let child = spawn(&[
            "history",
            "--history",
            db_arg,
            "add",
            file.to_str().unwrap(),
        ]);
        let out = bounded(child, &format!("history add {}", file.display()));
        assert_one_clear_line(&out, 2, needle);
        assert_has(&out.stderr, "result files (--json) and BMF files");
    }
    assert!(!db.exists(), "a refused add made the history");
    let _ = fs::remove_dir_all(&dir);
}

/// Up to twenty processes creating one new history at the same moment: each
/// one's entry lands (creation, WAL mode and the check of what the file is
/// were not one transaction: a writer failed at once, saying the file
/// "stayed locked for 60 s" or was another program's).
#[test]
fn writers_creating_one_history_at_once_all_land() {
    let dir = tempdir("hf-creators");
    for (round, writers) in [2, 2, 2, 2, 6, 6, 12, 20].into_iter().enumerate() {
        let db = dir.join(format!("new-{round}.sqlite"));
        let files: Vec<PathBuf> = (0..writers)
            .map(|w| {
                bmf(
                    &dir.join(format!("w{round}-{w}.json")),
                    &format!("w{w}"),
                    "throughput",
                    1.0,
                )
            })
            .collect();
        let children: Vec<Child> = files
            .iter()
            .map(|file| {
                Command::new(bench_bin())
                    .args(["history", "--history", db.to_str().unwrap(), "add"])
                    .arg(file)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = bounded(child, "a writer");
            assert_eq!(
                out.code, 0,
                "round {round} ({writers} writers): {}",
                out.stderr
            );
            assert_has(&out.stdout, "added 1 entries");
        }
        let list = history_ok(&db, &["list"]);
        let benchmarks = list.stdout.lines().filter(|l| l.starts_with('w')).count();
        assert_eq!(benchmarks, writers, "round {round}: {}", list.stdout);
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A root-made history in a root-owned folder is read by another user, as
/// docs/history.md shows after a `sudo` run; an immutable history and one on
/// a read-only mount too, and a run or an add that cannot append to it is
/// refused before anything is done.
#[test]
fn a_history_is_read_where_it_cannot_be_written_and_refused_as_a_target() {
    let dir = tempdir("hf-readers");
    let db = dir.join("root.sqlite");
    let files = series_files(&dir, "r", 12);
    let mut args = vec!["add", "--label", "machine=lab"];
    args.extend(files.iter().map(String::as_str));
    history_ok(&db, &args);
    let out_dir = dir.join("out");
    fs::create_dir(&out_dir).unwrap();
    fs::set_permissions(&out_dir, fs::Permissions::from_mode(0o777)).unwrap();
    let db_arg = db.to_str().unwrap();
    let page = out_dir.join("page");
    let reads: [&[&str]; 5] = [
        &["list"],
        &["show", "r"],
        &["changes"],
        &["export", "--format", "bmf"],
        &["report", page.to_str().unwrap()],
    ];
    for read in reads {
        let mut args = vec!["history", "--history", db_arg];
        args.extend_from_slice(read);
        let out = run_as_nobody("", &args);
        assert_eq!(out.code, 0, "as nobody, {read:?}: {}", out.stderr);
    }
    assert!(page.join("index.html").exists());
    let add = run_as_nobody("", &["history", "--history", db_arg, "add", &files[0]]);
    assert_one_clear_line(&add, 2, "cannot be written: Permission denied");

    let chattr = |flag: &str| Command::new("chattr").arg(flag).arg(&db).status().unwrap();
    assert!(chattr("+i").success(), "chattr +i");
    let listed = history(&db, &["list"]);
    let refused = run(&["-r", "1000", "--history", db_arg, "trig-syscall-count"]);
    let added = history(&db, &["add", &files[0]]);
    assert!(chattr("-i").success(), "chattr -i");
    assert_eq!(listed.code, 0, "an immutable history: {}", listed.stderr);
    assert_has(&listed.stdout, "r               12");
    assert_one_clear_line(&refused, 2, "cannot be written: Operation not permitted");
    assert!(refused.stdout.is_empty(), "the run ran: {}", refused.stdout);
    assert_one_clear_line(&added, 2, "cannot be written: Operation not permitted");

    // On a read-only mount, where not even root makes the WAL's index.
    let source = dir.join("source");
    fs::create_dir(&source).unwrap();
    fs::copy(&db, source.join("h.sqlite")).unwrap();
    let mount = ReadOnly::of(&source, &dir.join("ro"));
    let on_mount = mount.0.join("h.sqlite");
    let listed = history(&on_mount, &["list"]);
    let added = history(&on_mount, &["add", &files[0]]);
    drop(mount);
    assert_eq!(listed.code, 0, "on a read-only mount: {}", listed.stderr);
    assert_has(&listed.stdout, "r               12");
    assert_one_clear_line(&added, 2, "cannot be written: Read-only file system");
    let _ = fs::remove_dir_all(&dir);
}

/// Sends `signal` to `child` once it has worked a while, and checks it
/// ended on it (130 or 143) in one line that says nothing of result files
/// or attached programs.
fn assert_ends_on(child: Child, signal: i32, code: i32, name: &str) {
    std::thread::sleep(Duration::from_millis(300));
    send_signal(&child, signal);
    // Far beyond a second, so that a busy machine cannot fail it; the
    // searches would take minutes.
    let out = finish_child(child, Duration::from_secs(20), String::new());
    assert_eq!(out.code, code, "{}", out.stderr);
    assert_eq!(out.stderr.trim(), format!("interrupted by {name}"));
}

/// `changes --permutations 100000` and `report` over a long series went on
/// after SIGINT; the second signal spoke of result files and attached
/// programs. Each ends on the first, exit 130 or 143.
#[test]
fn a_long_search_ends_on_the_first_signal() {
    let dir = tempdir("hf-signals");
    let db = dir.join("long.sqlite");
    let files = series_files(&dir, "long", 300);
    let mut args = vec!["add"];
    args.extend(files.iter().map(String::as_str));
    history_ok(&db, &args);
    let db_arg = db.to_str().unwrap();
    let search = ["--permutations", "100000"];
    let mut changes = vec!["history", "--history", db_arg, "changes"];
    changes.extend_from_slice(&search);
    assert_ends_on(spawn(&changes), libc::SIGINT, 130, "SIGINT");
    let page = dir.join("page");
    let mut report = vec![
        "history",
        "--history",
        db_arg,
        "report",
        page.to_str().unwrap(),
    ];
    report.extend_from_slice(&search);
    assert_ends_on(spawn(&report), libc::SIGTERM, 143, "SIGTERM");
    assert!(!page.join("index.html").exists(), "the page was written");
    let _ = fs::remove_dir_all(&dir);
}

/// Names, kernels and labels are printed with their control characters
/// escaped, as `compare` prints them.
#[test]
fn terminal_escapes_in_a_history_never_reach_the_terminal() {
    let dir = tempdir("hf-escapes");
    let db = dir.join("h.sqlite");
    let name = "evil\u{1b}]0;PWNED\u{7}\u{1b}[2J";
    let mut args = vec![
        "add".to_string(),
        "--label".into(),
        "machine=m\u{1b}[31m".into(),
        "--label".into(),
        "kernel=6.\u{1b}[1m".into(),
    ];
    for (i, value) in [
        100.0, 100.0, 100.0, 100.0, 100.0, 50.0, 50.0, 50.0, 50.0, 50.0,
    ]
    .iter()
    .enumerate()
    {
        let file = bmf(&dir.join(format!("e{i}.json")), name, "throughput", *value);
        args.extend(["--at".into(), format!("@{}", 1_800_000_000 + i)]);
        args.push(file.to_str().unwrap().into());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        history_ok(&db, &refs);
        args.truncate(5);
    }
    for read in [&["list"][..], &["show", name], &["changes"]] {
        let out = history_ok(&db, read);
        for text in [&out.stdout, &out.stderr] {
            assert!(!text.contains(['\u{1b}', '\u{7}']), "{read:?}: {text:?}");
        }
        assert_has(&out.stdout, "evil\\u{1b}]0;PWNED\\u{7}");
    }
    let changes = history_ok(&db, &["changes"]);
    assert_has(&changes.stdout, "m\\u{1b}[31m");
    assert_has(&changes.stdout, "kernel 6.\\u{1b}[1m");
    // The plot is XML that parses, with the escapes written out.
    let plot = dir.join("p.svg");
    history_ok(&db, &["show", name, "--plot", plot.to_str().unwrap()]);
    let svg = fs::read_to_string(&plot).unwrap();
    roxmltree::Document::parse(&svg).expect("the plot is well-formed XML");
    let _ = fs::remove_dir_all(&dir);
}

/// A mistyped `--figure` passed a gate: `changes` said "no change point in 0
/// series", `report` wrote an empty page, both exit 0.
#[test]
fn a_figure_no_entry_has_is_refused_naming_those_there_are() {
    let dir = tempdir("hf-figure");
    let db = dir.join("h.sqlite");
    let file = bmf(&dir.join("a.json"), "a", "throughput", 1.0);
    history_ok(&db, &["add", file.to_str().unwrap()]);
    let page = dir.join("page");
    for args in [
        vec!["changes", "--figure", "nosuch"],
        vec!["report", page.to_str().unwrap(), "--figure", "nosuch"],
        vec!["show", "a", "--figure", "nosuch"],
    ] {
        let out = history(&db, &args);
        assert_one_clear_line(
            &out,
            2,
            "no entry has a figure 'nosuch'; the figures there are: throughput",
        );
    }
    assert!(!page.exists(), "the refused report made its directory");
    let _ = fs::remove_dir_all(&dir);
}

/// Runs `args` on the history `file` and checks that it is refused, exit 2,
/// in one line that names no SQL, and left byte for byte as it was.
fn assert_refused_untouched(file: &Path, args: &[&str]) {
    let before = fs::read(file).unwrap();
    let out = history(file, args);
    assert_one_clear_line(&out, 2, "is not a bench history");
    assert!(!out.stderr.contains("CREATE"), "{}", out.stderr);
    assert_eq!(fs::read(file).unwrap(), before, "{args:?} changed the file");
}

/// The smaller ones of the history: a path ending in '/', a report onto a
/// file, a partial result file, foreign databases shaped like a history.
#[test]
fn odd_paths_partial_files_and_near_histories_are_said_in_a_sentence() {
    let dir = tempdir("hf-smaller");
    let file = bmf(&dir.join("a.json"), "a", "throughput", 1.0);
    let file = file.to_str().unwrap();
    let slash = format!("{}/", dir.join("newdir").display());
    let out = history(Path::new(&slash), &["add", file]);
    assert_one_clear_line(&out, 2, "ends in '/'");
    assert!(!dir.join("newdir").exists(), "a file named newdir was made");

    let db = dir.join("h.sqlite");
    history_ok(&db, &["add", file]);
    let taken = dir.join("base.json");
    fs::write(&taken, "{}").unwrap();
    let out = history(&db, &["report", taken.to_str().unwrap()]);
    assert_one_clear_line(&out, 2, "base.json is a file, not a directory");
    assert_eq!(fs::read_to_string(&taken).unwrap(), "{}");

    let fixture = fs::read_to_string("tests/fixtures/4c30c63-trig-uprobe-nop.json").unwrap();
    let mut partial: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    partial["partial"] = true.into();
    for run in partial["runs"].as_array_mut().unwrap() {
        run["partial"] = true.into();
    }
    let partial_file = dir.join("partial.json");
    fs::write(&partial_file, partial.to_string()).unwrap();
    let out = history_ok(&db, &["add", partial_file.to_str().unwrap()]);
    assert_has(&out.stdout, "added 0 entries");
    assert_has(
        &out.stderr,
        "partial.json adds no entry: every run in it was interrupted",
    );

    let shaped = dir.join("shaped.db");
    let conn = rusqlite::Connection::open(&shaped).unwrap();
    conn.execute_batch("CREATE TABLE entries (id INTEGER PRIMARY KEY, x TEXT);")
        .unwrap();
    drop(conn);
    let versioned = dir.join("versioned.db");
    let conn = rusqlite::Connection::open(&versioned).unwrap();
    conn.pragma_update(None, "user_version", 5).unwrap();
    drop(conn);
    // Marked as a history, but with tables and no schema version: the
    // migration's SQL was dumped into the error.
    let marked = dir.join("marked.db");
    let conn = rusqlite::Connection::open(&marked).unwrap();
    conn.pragma_update(None, "application_id", 0x626e_6368)
        .unwrap();
    conn.execute_batch("CREATE TABLE entries (id INTEGER PRIMARY KEY, x TEXT);")
        .unwrap();
    drop(conn);
    for foreign in [&shaped, &versioned, &marked] {
        assert_refused_untouched(foreign, &["add", file]);
        assert_refused_untouched(foreign, &["list"]);
    }
    let _ = fs::remove_dir_all(&dir);
}
