//! The PostgreSQL history, against a real server (`pg_cluster`, one for the
//! file, 127.0.0.1 and a unix socket only): the same entries and change
//! points as the SQLite file's, merge both ways, 20 writers at once, the
//! spool and `push`, a batch cut in the middle, least privilege, and each
//! fault with its sentence and exit code; no password in any output.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::pg_cluster::{cluster, feed, OWNER_PASSWORD};

const WRITER_PASSWORD: &str = "Writer-pw-93ad";

/// `bench history --history H ARGS...`, with BENCH_SPOOL in `spool`.
fn history_in(spool: &Path, history: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(bench_bin());
    cmd.args(["history", "--history", history])
        .args(args)
        .env("BENCH_SPOOL", spool)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE");
    checked(run_cmd(cmd))
}

fn history(history: &str, args: &[&str]) -> Output {
    history_in(&std::env::temp_dir(), history, args)
}

fn history_ok(h: &str, args: &[&str]) -> Output {
    let out = history(h, args);
    assert_eq!(out.code, 0, "history {args:?}: {}", out.stderr);
    out
}

/// Every output is checked for the passwords.
fn checked(out: Output) -> Output {
    for password in [OWNER_PASSWORD, WRITER_PASSWORD] {
        assert!(
            !out.stdout.contains(password) && !out.stderr.contains(password),
            "a password printed: {out:?}"
        );
    }
    out
}

/// A fresh database with a history made by `init`; its owner's URL.
fn initialised(name: &str) -> String {
    let pg = cluster();
    let db = pg.database(name);
    let url = pg.owner_url(&db);
    let out = history_ok(&url, &["init"]);
    assert_has(
        &out.stdout,
        "created the history postgresql://owner@127.0.0.1",
    );
    url
}

/// BMF files, one a value of `name`, in `dir`.
fn bmf_files(dir: &Path, name: &str, values: &[f64]) -> Vec<PathBuf> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let path = dir.join(format!("{name}-{i:03}.json"));
            let json = serde_json::json!({ name: { "throughput": { "value": value } } });
            fs::write(&path, json.to_string()).unwrap();
            path
        })
        .collect()
}

/// A SQLite history of 30 entries of `series`, stepping from 100 to 130 at
/// the 16th, with ±1 % of alternating noise.
fn seeded_sqlite(dir: &Path) -> PathBuf {
    let db = dir.join("seeded.sqlite");
    let values: Vec<f64> = (0..30)
        .map(|i| if i < 15 { 100.0 } else { 130.0 } * (1.0 + 0.01 * f64::from(i % 3) - 0.01))
        .collect();
    let files = bmf_files(dir, "series", &values);
    let script: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            format!(
                "{} history --history {} add --at @{} --label machine=m1 {} >/dev/null || exit 1",
                bench_bin().display(),
                db.display(),
                1_800_000_000 + i * 60,
                f.display()
            )
        })
        .collect();
    let status = Command::new("sh")
        .arg("-c")
        .arg(script.join("\n"))
        .status()
        .unwrap();
    assert!(status.success());
    db
}

/// What a command prints, the history's name taken out.
fn same_output(a: &str, b: &str, args: &[&str]) {
    let left = history_ok(a, args).stdout.replace(a, "H");
    let right = history_ok(b, args).stdout.replace(b, "H");
    assert_eq!(left, right, "history {args:?} differs between {a} and {b}");
}

#[test]
fn merge_both_ways_gives_the_same_history_and_change_points() {
    let dir = tempdir("pg-merge");
    let sqlite = seeded_sqlite(&dir);
    let url = initialised("merge_both");
    let out = history_ok(&url, &["merge", sqlite.to_str().unwrap()]);
    assert_has(&out.stdout, "30 new entries of 30");
    // Idempotent: a second merge adds nothing.
    let out = history_ok(&url, &["merge", sqlite.to_str().unwrap()]);
    assert_has(&out.stdout, "0 new entries of 30");
    let back = dir.join("back.sqlite");
    let back = back.to_str().unwrap();
    let out = history_ok(back, &["merge", &url]);
    assert_has(&out.stdout, "merged postgresql://owner@127.0.0.1");
    let sqlite = sqlite.to_str().unwrap();
    for args in [
        &["list"][..],
        &["show", "series"],
        &["changes", "--linear"],
        &["changes"],
        &["export", "--format", "bmf"],
    ] {
        same_output(sqlite, &url, args);
        same_output(sqlite, back, args);
    }
    let changes = history_ok(&url, &["changes", "--linear"]).stdout;
    assert_has(&changes, "series");
    let report = dir.join("page");
    history_ok(&url, &["report", report.to_str().unwrap()]);
    let page = fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        !page.contains(OWNER_PASSWORD),
        "the page holds the password"
    );
    assert_has(&page, "postgresql://owner@127.0.0.1");
}

#[test]
fn twenty_writers_from_two_machines_keep_each_entry_once() {
    let dir = tempdir("pg-writers");
    let url = initialised("writers");
    let files = bmf_files(&dir, "w", &(0..15).map(f64::from).collect::<Vec<_>>());
    // Writer i of machine m adds files i..i+5: overlapping sets, the same
    // file at the same time from one machine being one entry.
    let children: Vec<_> = (0..20)
        .map(|i| {
            let machine = if i % 2 == 0 { "host=a" } else { "host=b" };
            let machine_label = machine.replace("host", "machine");
            let mut cmd = Command::new(bench_bin());
            cmd.args(["history", "--history", &url, "add", "--at", "@1800000000"])
                .args(["--label", &machine_label, "--label", machine])
                .args(files[i / 2..i / 2 + 5].iter())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Machine a took files 0..13 (i/2 from 0 to 9, five each), b the same:
    // 14 distinct files a machine.
    let rows = cluster().psql(
        "writers",
        "SELECT count(*), count(DISTINCT uid), count(DISTINCT machine_name) FROM bench_entries",
    );
    assert_eq!(rows, "28|28|2");
}

#[test]
fn a_run_whose_store_refuses_or_is_down_keeps_its_result_and_push_delivers_it_once() {
    let dir = tempdir("pg-spool");
    let url = initialised("spool");
    let pg = cluster();
    let wrong = pg.url("owner", "Not-the-pw-0000", "spool");
    let json = dir.join("run.json");
    let mut cmd = Command::new(bench_bin());
    cmd.args(["-q", "-r", "20000", "--history", &wrong, "--json"])
        .arg(&json)
        .arg("trig-syscall-count")
        .env("BENCH_SPOOL", &dir);
    let out = checked(run_cmd(cmd));
    assert_eq!(out.code, 7, "{}", out.stderr);
    assert_has(&out.stdout, "Executed 20000 calls of trig-syscall-count");
    assert_one_clear_line(&out, 7, "refused the login of 'owner'");
    assert_has(&out.stderr, &format!("kept in {}", dir.display()));
    assert!(!out.stderr.contains("Not-the-pw-0000"), "{}", out.stderr);
    let result = fs::read_to_string(&json).unwrap();
    assert!(!result.contains("Not-the-pw-0000"), "the result file");
    let first = history_in(&dir, &url, &["push"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_has(&first.stdout, "1 new entries of 1");
    let again = history_in(&dir, &url, &["push"]);
    assert_has(&again.stdout, "nothing to push");
    assert_eq!(pg.psql("spool", "SELECT count(*) FROM bench_entries"), "1");
    // A server that is down, then back: nothing listens on a port, then a
    // forwarder to the cluster does. The spool is the store's: the same URL
    // pushes it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let down =
        format!("postgresql://owner:{OWNER_PASSWORD}@127.0.0.1:{port}/spool?sslmode=disable");
    let mut cmd = Command::new(bench_bin());
    cmd.args([
        "-q",
        "-r",
        "30000",
        "--history",
        &down,
        "trig-syscall-count",
    ])
    .env("BENCH_SPOOL", &dir);
    let out = checked(run_cmd(cmd));
    assert_has(&out.stdout, "Executed 30000 calls of trig-syscall-count");
    assert_one_clear_line(&out, 7, "cannot reach the history");
    assert_has(&out.stderr, &format!("kept in {}", dir.display()));
    forward(port, pg.port);
    let back = history_in(&dir, &down, &["push"]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert_has(&back.stdout, "1 new entries of 1");
    assert_has(
        &history_in(&dir, &down, &["push"]).stdout,
        "nothing to push",
    );
    assert_eq!(pg.psql("spool", "SELECT count(*) FROM bench_entries"), "2");
    for file in fs::read_dir(&dir).unwrap().flatten() {
        let bytes = fs::read(file.path()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for password in ["Not-the-pw-0000", OWNER_PASSWORD] {
            assert!(!text.contains(password), "{:?}", file.path());
        }
    }
}

#[test]
fn a_batch_cut_in_the_middle_leaves_nothing() {
    let dir = tempdir("pg-batch");
    let url = initialised("batch");
    let pg = cluster();
    let files = bmf_files(&dir, "b", &[1.0, 2.0, 3.0, 4.0, 5.0]);
    let add = |files: &[PathBuf]| {
        let mut cmd = Command::new(bench_bin());
        cmd.args(["history", "--history", &url, "add", "--at", "@1800000000"])
            .args(files)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    assert!(add(&files[2..3]).status().unwrap().success());
    // Another session deletes the third entry and holds its transaction
    // open: the batch's insert of that entry waits on it, its first two
    // inserted; then the server ends the batch's connection.
    // The batch starts only once psql says the delete is done: a batch
    // that ran first would find nothing to wait on (seen beside the VMs).
    let mut holder = pg
        .psql_command("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    feed(
        &mut holder,
        "BEGIN;\nDELETE FROM bench_entries;\nSELECT 'held';\n",
    );
    let mut said = String::new();
    let stdout = holder.stdout.as_mut().expect("a piped stdout");
    BufReader::new(stdout).read_line(&mut said).unwrap();
    assert_eq!(said.trim(), "held", "the holder's psql ended");
    let batch = add(&files).spawn().unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench' AND wait_event_type = 'Lock'";
    let start = Instant::now();
    while pg.psql("batch", waiting) != "1" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the batch never waited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    pg.psql(
        "batch",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench'",
    );
    let out = checked(finish_child(batch, Duration::from_secs(10), String::new()));
    feed(&mut holder, "ROLLBACK;\n");
    drop(holder.stdin.take());
    let _ = holder.wait();
    assert_one_clear_line(&out, 7, "postgresql://owner@127.0.0.1");
    assert_eq!(pg.psql("batch", "SELECT count(*) FROM bench_entries"), "1");
}

#[test]
fn a_role_that_may_insert_and_select_appends_and_reads_but_cannot_init() {
    let dir = tempdir("pg-roles");
    let url = initialised("roles");
    let pg = cluster();
    pg.psql(
        "roles",
        &format!(
            "DROP ROLE IF EXISTS writer; DROP ROLE IF EXISTS reader;
             CREATE ROLE writer LOGIN PASSWORD '{WRITER_PASSWORD}';
             CREATE ROLE reader LOGIN PASSWORD '{WRITER_PASSWORD}';
             GRANT SELECT, INSERT ON bench_schema, bench_entries, bench_figures TO writer;
             GRANT USAGE ON SEQUENCE bench_entries_id_seq TO writer;
             GRANT SELECT ON bench_schema, bench_entries, bench_figures TO reader;"
        ),
    );
    let writer = pg.url("writer", WRITER_PASSWORD, "roles");
    let reader = pg.url("reader", WRITER_PASSWORD, "roles");
    let files = bmf_files(&dir, "r", &[1.0]);
    let file = files[0].to_str().unwrap();
    let out = history_ok(&writer, &["add", file]);
    assert_has(
        &out.stdout,
        "added 1 entries to postgresql://writer@127.0.0.1",
    );
    assert_has(&history_ok(&writer, &["list"]).stdout, "r ");
    let out = history(&reader, &["add", "--at", "@1", file]);
    assert_one_clear_line(&out, 3, "the role 'reader' may not add entries");
    let other = pg.database("roles_fresh");
    pg.psql(
        "roles_fresh",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC; GRANT CONNECT ON DATABASE roles_fresh TO writer",
    );
    let out = history(&pg.url("writer", WRITER_PASSWORD, &other), &["init"]);
    assert_one_clear_line(&out, 3, "`init` needs the database's owner");
    let _ = url;
}

/// A listener on 127.0.0.1 that accepts and never answers.
fn silent_listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[test]
fn each_fault_is_one_sentence_and_its_code() {
    let pg = cluster();
    let url = initialised("faults");
    let (_listener, silent) = silent_listener();
    let foreign = pg.database("faults_foreign");
    pg.psql(
        &foreign,
        "CREATE TABLE bench_entries (id int, name text); CREATE TABLE bench_figures (x int)",
    );
    let newer = initialised("faults_newer");
    pg.psql(
        "faults_newer",
        "INSERT INTO bench_schema (version, bench_version) VALUES (99, 'future')",
    );
    let port = pg.port;
    let cases: Vec<(String, &[&str], i32, &str)> = vec![
        (
            "mysql://u:p@127.0.0.1/db".into(),
            &["list"],
            2,
            "not mysql://",
        ),
        (
            format!("postgresql://owner:{OWNER_PASSWORD}@127.0.0.1:99999/x"),
            &["list"],
            2,
            "not a PostgreSQL URL",
        ),
        (
            pg.owner_url("no_such_db"),
            &["list"],
            2,
            "has no database 'no_such_db'",
        ),
        (
            format!("postgresql://owner:{OWNER_PASSWORD}@no-such-host.invalid:{port}/x"),
            &["list"],
            7,
            "cannot reach the history",
        ),
        (
            pg.url("owner", "wrong-pw", "faults"),
            &["list"],
            7,
            "refused the login of 'owner'",
        ),
        (
            format!("postgresql://owner:{OWNER_PASSWORD}@127.0.0.1:{silent}/x?connect_timeout=1"),
            &["list"],
            7,
            "did not answer within 1 s",
        ),
        (
            pg.owner_url(&foreign),
            &["list"],
            2,
            "is not a bench history",
        ),
        (
            pg.owner_url(&foreign),
            &["init"],
            2,
            "is not a bench history",
        ),
        (newer.clone(), &["list"], 2, "newer than this bench's"),
        (newer.clone(), &["migrate"], 2, "newer than this bench's"),
        (
            pg.owner_url("postgres"),
            &["list"],
            2,
            "holds no bench history yet",
        ),
    ];
    for (history_url, args, code, needle) in cases {
        let out = history(&history_url, args);
        assert_one_clear_line(&out, code, needle);
    }
    let out = history_ok(&url, &["migrate"]);
    assert_has(&out.stdout, "nothing to do");
    // The foreign tables are left as they were.
    assert_eq!(pg.psql(&foreign, "SELECT count(*) FROM bench_entries"), "0");
}

#[test]
fn tls_is_what_sslmode_asks_of_a_real_server() {
    // The cluster's `tlsonly` database refuses TCP without TLS, so a store
    // reached there was reached through TLS; its certificate names
    // 127.0.0.1 alone and is signed by `ca.crt`.
    let pg = cluster();
    let db = pg.database("tlsonly");
    let url = |host: &str, query: String| {
        format!(
            "postgresql://owner:{OWNER_PASSWORD}@{host}:{}/{db}?{query}",
            pg.port
        )
    };
    let roots =
        |mode: &str, root: &str| format!("sslmode={mode}&sslrootcert={}", pg.root(root).display());
    let plain = history(&url("127.0.0.1", "sslmode=disable".into()), &["init"]);
    assert_one_clear_line(&plain, 7, "no encryption");
    let out = history_ok(&url("127.0.0.1", "sslmode=require".into()), &["init"]);
    assert_has(
        &out.stdout,
        "created the history postgresql://owner@127.0.0.1",
    );
    // prefer, the default, takes TLS where the server offers it.
    history_ok(&url("127.0.0.1", String::new()), &["list"]);
    history_ok(&url("127.0.0.1", roots("verify-full", "ca.crt")), &["list"]);
    // verify-ca checks the chain alone; verify-full the name too.
    history_ok(&url("localhost", roots("verify-ca", "ca.crt")), &["list"]);
    let misnamed = history(&url("localhost", roots("verify-full", "ca.crt")), &["list"]);
    assert_one_clear_line(&misnamed, 7, "certificate not valid for name \"localhost\"");
    // Another CA's roots: the chain fails, whatever the mode's name check.
    for mode in ["verify-ca", "verify-full"] {
        let unknown = history(&url("127.0.0.1", roots(mode, "other-ca.crt")), &["list"]);
        assert_one_clear_line(&unknown, 7, "invalid peer certificate");
    }
}

/// Forwards every connection to 127.0.0.1:`from` to the cluster's `to`, for
/// as long as the test process lives: a server that comes back.
fn forward(from: u16, to: u16) {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", from)).expect("the port is free again");
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", to)) else {
                continue;
            };
            let (Ok(client_read), Ok(server_read)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            for (mut from, mut to) in [(client_read, server), (server_read, client)] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
}
