//! Output paths: a device, a FIFO or a symlink keeps being what it is; the
//! temporary file cannot be planted; an unwritable path is refused before
//! set-up; `-` is stdout for --csv as for --json; one path is one output.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;
use serde_json::Value;

const RUN: [&str; 4] = ["-q", "-w0", "-d1", "trig-syscall-count"];

fn run_with(flag: &str, path: &Path) -> Output {
    let mut args = vec![flag, path.to_str().unwrap()];
    args.extend(RUN);
    run(&args)
}

fn mknod_char(path: &Path, major: u32, minor: u32) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the test runs as root.
    let rc = unsafe {
        libc::mknod(
            name.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

#[test]
fn a_device_is_written_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // Private copies of /dev/null and /dev/full: were they replaced, only
    // this directory would suffer.
    let null = dir.path().join("null");
    let full = dir.path().join("full");
    mknod_char(&null, 1, 3);
    mknod_char(&full, 1, 7);
    for flag in ["--json", "--csv"] {
        let out = run_with(flag, &null);
        assert_eq!(out.code, 0, "{flag}: {}", out.stderr);
        assert!(fs::metadata(&null).unwrap().file_type().is_char_device());
        let out = run_with(flag, &full);
        assert_one_clear_line(
            &out,
            1,
            &format!("cannot write {}: No space left on device", full.display()),
        );
        assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
    }
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "left behind: {names:?}");
}

#[test]
fn a_fifo_is_written_to_its_reader() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            fs::File::open(fifo)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            text
        })
    };
    let out = run_with("--json", &fifo);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Checked before joining: a FIFO replaced by a file leaves its reader
    // blocked for good, and the test must fail rather than hang.
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let text = reader.join().unwrap();
    let value: Value = serde_json::from_str(&text).expect("the reader got the JSON");
    assert_eq!(value["benchmark"], "trig-syscall-count");
}

#[test]
fn a_symlink_is_followed_and_its_target_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("results").join("run.json");
    fs::create_dir(target.parent().unwrap()).unwrap();
    fs::write(&target, "old").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("results/run.json", &link).unwrap();
    let out = run_with("--json", &link);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let value: Value = serde_json::from_str(&fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(value["benchmark"], "trig-syscall-count");
    // The replaced file keeps its mode; nothing else is left beside it.
    assert_eq!(fs::metadata(&target).unwrap().mode() & 0o777, 0o640);
    assert_eq!(fs::read_dir(target.parent().unwrap()).unwrap().count(), 1);

    // A dangling link: its target is created.
    let dangling = dir.path().join("next.json");
    std::os::unix::fs::symlink("results/next.json", &dangling).unwrap();
    let out = run_with("--csv", &dangling);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let csv = fs::read_to_string(dir.path().join("results/next.json")).unwrap();
    assert!(csv.contains(bench::report::csv::HEADER));
}

#[test]
fn a_planted_temporary_name_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    let out_path = dir.path().join("out.json");
    let mut child = Command::new(bench_bin())
        .args(["-q", "-w0", "-d2", "--json", out_path.to_str().unwrap()])
        .arg("trig-syscall-count")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The name a predictable writer would use, planted while the run runs.
    let planted = dir.path().join(format!(".out.json.{}.tmp", child.id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    let value: Value = serde_json::from_str(&fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(value["benchmark"], "trig-syscall-count");
}

#[test]
fn an_unwritable_output_is_refused_before_set_up() {
    let out = bench("-w0 -d30 --json /proc/x.json trig-syscall-count");
    assert_one_clear_line(
        &out,
        2,
        "--json /proc/x.json cannot be written: No such file or directory",
    );
    assert!(out.stdout.is_empty(), "it set up: {}", out.stdout);

    // As nobody, into a directory only root may write.
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let private = dir.path().join("private");
    fs::create_dir(&private).unwrap();
    let csv = private.join("out.csv");
    let copy = nobody_copy();
    let out = run_exec_retrying(|| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&copy)
            .args([
                "-w0",
                "-d30",
                "--csv",
                csv.to_str().unwrap(),
                "trig-syscall-count",
            ]);
        cmd
    });
    assert_one_clear_line(
        &out,
        2,
        &format!(
            "--csv {} cannot be written: Permission denied",
            csv.display()
        ),
    );
    assert!(out.stdout.is_empty(), "it set up: {}", out.stdout);
    assert_eq!(fs::read_dir(&private).unwrap().count(), 0);
}

#[test]
fn a_dash_is_stdout_for_csv_too() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bin_in(
        dir.path(),
        &["-w0", "-d1", "--csv", "-", "trig-syscall-count"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<&str> = out.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows[0], bench::report::csv::HEADER, "{}", out.stdout);
    assert!(out.stderr.contains("Summary:"), "the text goes to stderr");
    assert!(
        !dir.path().join("-").exists(),
        "a file named '-' was written"
    );
}

#[test]
fn two_outputs_on_one_path_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let p = path.to_str().unwrap();
    let same = format!("{}/./out", dir.path().display());
    for args in [
        vec!["--json", p, "--csv", p],
        vec!["--json", p, "--csv", &same],
    ] {
        let mut args = args.clone();
        args.extend(RUN);
        let out = run(&args);
        assert_one_clear_line(&out, 2, "--json and --csv both name");
    }
    let out = run(&["--json", "-", "--csv", "-", "trig-syscall-count"]);
    assert_one_clear_line(
        &out,
        2,
        "--json - and --csv - both ask for standard output: only one may take it",
    );
    assert!(!path.exists());
}

/// Runs the binary with `dir` as its working directory.
fn run_bin_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bench_bin());
    cmd.current_dir(dir).args(args);
    run_cmd(cmd)
}

#[test]
fn a_descriptor_name_is_written_at_the_descriptor() {
    // `--json /dev/stdout > file`: the JSON follows the text in the file, as
    // a redirection means, rather than overwriting it from the start.
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.txt");
    let status = Command::new(bench_bin())
        .args(["-w0", "-d1", "--json", "/dev/stdout", "trig-syscall-count"])
        .stdout(fs::File::create(&out_path).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let text = fs::read_to_string(&out_path).unwrap();
    assert_starts(&text, "Setting up benchmark");
    let json_at = text.find("{\n").expect("the JSON follows");
    let value: Value = serde_json::from_str(&text[json_at..]).unwrap();
    assert_eq!(value["benchmark"], "trig-syscall-count");
    assert!(fs::metadata(&out_path).unwrap().is_file());
}
