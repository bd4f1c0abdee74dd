//! Outputs checked before a run and written safely after it: no symlink the
//! kernel's fs.protected_symlinks would refuse is followed; two outputs on
//! one file are caught through links and descriptor names; a path that
//! cannot be written (profile files included) is refused before set-up; a
//! failed write loses no other output; a FIFO without a reader says so and
//! gives up on one Ctrl-C.
//!
//! `BENCH_BIN=/path/to/bench` runs these tests against another build. Tests
//! that run a benchmark hold the probe lock: runs load BPF programs, and
//! other tests count what is loaded.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

const RUN: [&str; 4] = ["-q", "-w0", "-d1", "trig-syscall-count"];
const SWEEP: [&str; 6] = [
    "-w0",
    "-d1",
    "--sweep",
    "producers=1,2",
    "-q",
    "trig-syscall-count",
];

/// Writes "precious" to `path`, a file of root's that a followed link would
/// overwrite.
fn precious(path: PathBuf) -> PathBuf {
    fs::write(&path, "precious").unwrap();
    path
}

fn bin() -> PathBuf {
    std::env::var_os("BENCH_BIN").map_or_else(bench_bin, PathBuf::from)
}

/// Runs the binary under test (`$BENCH_BIN`, or this build's) with `args`.
fn run_args(args: &[&str]) -> Output {
    run_bin(&bin(), args)
}

fn bench_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir).args(args);
    run_cmd(cmd)
}

fn with<'a>(options: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    options.iter().chain(rest).copied().collect()
}

/// Refused with usage's exit code before anything ran: nothing on stdout.
fn assert_refused(out: &Output, needle: &str) {
    assert_one_clear_line(out, 2, needle);
    assert!(out.stdout.is_empty(), "it ran: {}", out.stdout);
}

fn lchown(path: &Path, uid: u32) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the test runs as root.
    assert_eq!(unsafe { libc::lchown(name.as_ptr(), uid, uid) }, 0);
}

fn mknod_full(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the test runs as root. 1:7 is /dev/full.
    let rc = unsafe { libc::mknod(name.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 7)) };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

const NOBODY: u32 = 65534;

#[test]
fn a_symlink_the_kernel_protects_is_not_followed() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let victim = precious(dir.path().join("victim"));
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    // A directory like /tmp: sticky and world-writable, owned by root.
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let plant = |name: &str| {
        let link = shared.join(name);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        lchown(&link, NOBODY);
        link
    };
    let link = plant("evil.json");
    let svg = plant("evil.svg");
    let l = link.to_str().unwrap();
    for args in [
        with(&["--json", l], &RUN),
        with(&["--csv", l], &RUN),
        with(&["--plot", svg.to_str().unwrap()], &SWEEP),
    ] {
        assert_refused(
            &run_args(&args),
            "fs.protected_symlinks rule forbids following",
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious", "{args:?}");
    }
    // A profile file in such a directory.
    plant("trig-syscall-count.json");
    let profile = format!("--profile={}", shared.display());
    assert_refused(
        &run_args(&with(&[&profile], &RUN)),
        "fs.protected_symlinks rule forbids following",
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!shared.join("trig-syscall-count.folded").exists());

    // The follower's own link, and a link in a directory that is not
    // shared, are followed as before.
    let own = shared.join("own.json");
    std::os::unix::fs::symlink("../mine.json", &own).unwrap();
    let out = run_args(&with(&["--json", own.to_str().unwrap()], &RUN));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.path().join("mine.json").exists());
    let private = dir.path().join("private.json");
    std::os::unix::fs::symlink("mine.json", &private).unwrap();
    lchown(&private, NOBODY);
    let out = run_args(&with(&["--json", private.to_str().unwrap()], &RUN));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn two_outputs_on_one_file_are_refused_through_links_and_descriptors() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    // Neither exists: the link leads to the other's name.
    fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("same.out", dir.path().join("link.out")).unwrap();
    let cases = table(
        "
        --json link.out --csv same.out | --json and --csv both name same.out
        --json /dev/stdout --csv /dev/stdout | --json and --csv both name /dev/stdout
        --csv - --json /dev/stdout | --json and --csv both name standard output
        --json - --csv /dev/fd/1 | --json and --csv both name /dev/fd/1
        --json - --csv /proc/self/fd/1 | --json and --csv both name /proc/self/fd/1
        --json sub/../same.out --csv ./same.out | --json and --csv both name ./same.out
        ",
    );
    for (outputs, message) in cases {
        let out = bench_in(dir.path(), &with(&words(outputs), &RUN));
        assert_refused(&out, message);
        assert!(!dir.path().join("same.out").exists(), "{outputs:?}");
    }
    // One directory for --json and --csv: NAME.json and NAME.csv.
    let d = dir.path().to_str().unwrap();
    let out = run_args(&with(&["--json", d, "--csv", d], &RUN));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.path().join("trig-syscall-count.json").is_file());
    assert!(dir.path().join("trig-syscall-count.csv").is_file());
    // Two devices (or stdout and stderr) are two outputs.
    let out = run_args(&with(
        &["--json", "/dev/null", "--csv", "/dev/stderr"],
        &RUN,
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// A read-only bind mount of a directory, unmounted when dropped: a place
/// even root cannot write.
pub(super) struct ReadOnly(pub(super) PathBuf);

impl ReadOnly {
    pub(super) fn of(source: &Path, at: &Path) -> ReadOnly {
        fs::create_dir(at).unwrap();
        let ok = |args: &[&str]| Command::new("mount").args(args).status().unwrap().success();
        let (s, a) = (source.to_str().unwrap(), at.to_str().unwrap());
        assert!(ok(&["--bind", s, a]), "bind mount");
        let read_only = ReadOnly(at.to_path_buf());
        assert!(ok(&["-o", "remount,bind,ro", a]), "read-only remount");
        read_only
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_run() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("file.json"), "").unwrap();
    let cases: [(Vec<&str>, &str); 3] = [
        (
            with(&["--json", "x.json/"], &RUN),
            "--json x.json/ cannot be written: it ends in '/'",
        ),
        (
            with(&["--csv", "file.json/"], &RUN),
            "--csv file.json/ cannot be written: it ends in '/'",
        ),
        (
            with(&["--plot", "p.svg/"], &SWEEP),
            "--plot p.svg/ cannot be written: it ends in '/'",
        ),
    ];
    // Refused, not run: nothing on stdout (a run prints its summary).
    for (args, message) in cases {
        assert_refused(&bench_in(d, &args), message);
    }
    assert!(!d.join("x.json").exists() && !d.join("p.svg").exists());

    // --profile=DIR where DIR exists and cannot be written, even by root.
    let source = d.join("source");
    fs::create_dir(&source).unwrap();
    let read_only = ReadOnly::of(&source, &d.join("ro"));
    let flag = format!("--profile={}", read_only.0.display());
    let out = bench_in(
        d,
        &with(&[&flag, "--runs", "2", "--json", "out.json"], &RUN),
    );
    assert_refused(
        &out,
        &format!(
            "--profile {}/trig-syscall-count-run1.folded cannot be written: Read-only file system",
            read_only.0.display()
        ),
    );
    drop(read_only);
    // A directory in the way of a profile file.
    fs::create_dir_all(source.join("trig-syscall-count.svg")).unwrap();
    let flag = format!("--profile={}", source.display());
    let out = run_args(&with(&[&flag], &RUN));
    assert_refused(
        &out,
        "trig-syscall-count.svg cannot be written: is a directory",
    );
    assert_eq!(
        fs::read_dir(&source).unwrap().count(),
        1,
        "a file was written"
    );
}

#[test]
fn a_failed_output_does_not_lose_the_others() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    mknod_full(&full);
    let json = dir.path().join("out.json");
    let args = [
        "--csv",
        full.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let out = run_args(&with(&args, &["-w0", "-d1", "trig-syscall-count"]));
    assert_one_clear_line(
        &out,
        1,
        &format!("cannot write {}: No space left on device", full.display()),
    );
    assert_last_line(&out.stdout, "Summary:");
    let value: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["runs"].as_array().unwrap().len(), 1);

    // A profile file that fails at the end of run 1: run 2 still runs, and
    // every other file is written.
    let profile = dir.path().join("profile");
    fs::create_dir(&profile).unwrap();
    let folded = profile.join("trig-syscall-count-run1.folded");
    mknod_full(&folded);
    fs::remove_file(&json).unwrap();
    let flag = format!("--profile={}", profile.display());
    let args = [&flag, "--runs", "2", "--json", json.to_str().unwrap()];
    let out = run_args(&with(&args, &["-w0", "-d1", "trig-syscall-count"]));
    // Noise warnings aside (a shared machine), one error.
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    let expected = format!(
        "error: cannot write {}: No space left on device",
        folded.display()
    );
    assert_eq!(
        (out.code, said),
        (1, vec![expected.as_str()]),
        "{}",
        out.stderr
    );
    assert_has(&out.stdout, "Run    2:");
    assert_last_line(&out.stdout, "Summary:");
    let value: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["runs"].as_array().unwrap().len(), 2);
    for name in [
        "run1.svg",
        "run1.json",
        "run2.folded",
        "run2.svg",
        "run2.json",
    ] {
        let path = profile.join(format!("trig-syscall-count-{name}"));
        assert!(path.is_file(), "{} missing", path.display());
    }
}

#[test]
fn a_fifo_without_a_reader_says_so_and_one_ctrl_c_ends_the_wait() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let mut child = Command::new(bin())
        .args([
            "-q",
            "-w0",
            "-d1",
            "--json",
            fifo.to_str().unwrap(),
            "trig-syscall-count",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, receive) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let waiting = format!("waiting for a reader of the FIFO {}", fifo.display());
    // The run takes a second; then bench says it waits (warnings aside).
    let until = Instant::now() + Duration::from_secs(20);
    let mut said = Vec::new();
    while let Ok(line) = receive.recv_timeout(until.saturating_duration_since(Instant::now())) {
        let done = line.starts_with(&waiting);
        said.push(line);
        if done {
            break;
        }
    }
    // SAFETY: signals to our own child, by its pid.
    let interrupt = || unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    interrupt();
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            // SAFETY: as above; the test must fail rather than hang.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        said.last().is_some_and(|l| l.starts_with(&waiting)),
        "stderr before the signal: {said:?}"
    );
    let status = status.expect("one SIGINT ended the wait");
    assert_eq!(status.code(), Some(130));
    // The child is gone, so its stderr ends and the reader stops.
    let rest: Vec<String> = receive.iter().collect();
    assert!(
        rest.iter().any(|l| l.starts_with(&format!(
            "interrupted by SIGINT while waiting for a reader of the FIFO {}",
            fifo.display()
        ))),
        "{rest:?}"
    );
}

#[test]
fn profile_files_and_other_outputs_never_share_a_file() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let flag = format!("--profile={d}");
    let out = run_args(&with(&[&flag, "--json", d], &RUN));
    assert_refused(
        &out,
        &format!(
            "--json and --profile both name {d}/trig-syscall-count.json: give each its own file"
        ),
    );
    assert_eq!(fs::read_dir(d).unwrap().count(), 0);
    // --csv into the same directory writes NAME.csv, no profile file's name.
    let out = run_args(&with(&[&flag, "--csv", d], &RUN));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.path().join("trig-syscall-count.csv").is_file());
}

#[test]
fn a_profile_directory_after_a_space_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["profiles", "out.d"] {
        let out = bench_in(dir.path(), &["--profile", name, "trig-syscall-count"]);
        assert_one_clear_line(&out, 2, &format!("write --profile={name}"));
    }
    fs::create_dir(dir.path().join("existing")).unwrap();
    let out = bench_in(dir.path(), &["--profile", "existing", "trig-syscall-count"]);
    assert_one_clear_line(
        &out,
        2,
        "--profile takes its directory after '=': --profile=existing",
    );
    // A near miss of a benchmark's name is still a typo.
    let out = bench_in(dir.path(), &["--profile", "trig-syscall-cont"]);
    assert_one_clear_line(&out, 2, "did you mean trig-syscall-count");
}

/// In a directory another user owns (not sticky, so the
/// kernel's rule does not apply), that user swaps the output's name for a
/// symlink to a root-owned file while the run measures: the link is
/// replaced by the output, and the file it pointed to is left alone.
#[test]
fn a_name_another_user_links_during_the_run_is_replaced_not_followed() {
    let _lock = probe_lock();
    let dir = tempfile::tempdir().unwrap();
    let victim = precious(dir.path().join("rootfile"));
    let theirs = dir.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o755)).unwrap();
    lchown(&theirs, NOBODY);
    for flag in ["--csv", "--json"] {
        let name = theirs.join(format!("x{flag}"));
        let mut child = Command::new(bin())
            .args(["-q", "-w0", "-d2", "trig-usermode-count", flag])
            .arg(&name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Planted as the directory's owner would: whether before or after
        // the run's check of the path, the link must not be followed.
        std::thread::sleep(Duration::from_millis(300));
        std::os::unix::fs::symlink(&victim, &name).unwrap();
        lchown(&name, NOBODY);
        let status = child.wait().unwrap();
        assert!(status.success(), "{flag}: {status:?}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious", "{flag}");
        let meta = fs::symlink_metadata(&name).unwrap();
        assert!(
            meta.is_file(),
            "{flag}: {} is not the output",
            name.display()
        );
        let text = fs::read_to_string(&name).unwrap();
        assert!(text.contains("trig-usermode-count"), "{flag}: {text}");
    }
}
