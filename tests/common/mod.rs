//! Helpers shared by the integration tests: run the built binary, parse what
//! it prints, and keep probe runs from overlapping.
#![allow(dead_code)]

pub mod schema;

use std::fs::{self, File};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn bench_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bench"))
}

/// The directories the tests made, removed when the test process exits (a
/// whole suite left some 440 behind in /tmp, and a copy of the binary).
static MADE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn remove_at_exit(dir: &Path) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain function for the process's exit.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(remove_made);
    });
    MADE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_path_buf());
}

extern "C" fn remove_made() {
    if let Ok(made) = MADE.lock() {
        for dir in made.iter() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// A fresh, empty directory for one test, named by `tag` (unique among the
/// tests of one file) and the test process, removed when the process exits.
/// Others may read it: a binary copied into it runs as another user too.
pub fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-test-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    remove_at_exit(&dir);
    dir
}

/// A fresh directory as [`tempdir`], and the path of `name` in it.
pub fn temp_file(tag: &str, name: &str) -> (PathBuf, PathBuf) {
    let dir = tempdir(tag);
    let path = dir.join(name);
    (dir, path)
}

/// `line` with `{json}` standing for the path of `run.json` in a fresh
/// directory named after the running test: the directory, the path, the line.
pub fn json_line(line: &str) -> (PathBuf, PathBuf, String) {
    assert!(line.contains("{json}"), "no {{json}} in {line:?}");
    // The test harness names each test's thread after the test.
    let test = std::thread::current()
        .name()
        .unwrap_or("test")
        .replace("::", "-");
    let (dir, json) = temp_file(&test, "run.json");
    let line = line.replace("{json}", json.to_str().expect("a temporary path is UTF-8"));
    (dir, json, line)
}

/// A fresh directory for `tag` and a copy of the binary in it, named `name`.
pub fn bin_copy(tag: &str, name: &str) -> (PathBuf, PathBuf) {
    let (dir, copy) = temp_file(tag, name);
    fs::copy(bench_bin(), &copy).unwrap();
    (dir, copy)
}

#[derive(Debug)]
pub struct Output {
    pub code: i32,
    /// The signal that killed the process, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn run_cmd(mut cmd: Command) -> Output {
    let _lock = needs_probe_lock(&cmd).then(probe_lock);
    with_test_tick(&mut cmd);
    let out = cmd.output().expect("the bench binary runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn run_bin(bin: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    run_cmd(cmd)
}

pub fn run(args: &[&str]) -> Output {
    run_bin(&bench_bin(), args)
}

/// A command line as words: the tests write bench's arguments as a user
/// types them (paths from [`tempdir`] hold no blanks).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The rows of a table of cases, one a line: `command line | expected`
/// (blank lines skipped).
pub fn table(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (line, expected) = l.split_once('|').expect("a row is `line | expected`");
            (line.trim(), expected.trim())
        })
        .collect()
}

/// Runs bench with the arguments of `line`.
pub fn bench(line: &str) -> Output {
    run(&words(line))
}

/// Runs bench with the arguments of `line` and asserts that it succeeded.
pub fn bench_ok(line: &str) -> Output {
    let out = bench(line);
    assert_eq!(out.code, 0, "bench {line}: {}", out.stderr);
    out
}

/// Runs bench on `line` as [`json_line`] makes it and asserts that it
/// succeeded: the directory, the JSON file's path, the output.
pub fn bench_ok_json(line: &str) -> (PathBuf, PathBuf, Output) {
    let (dir, json, line) = json_line(line);
    (dir, json, bench_ok(&line))
}

/// Runs bench on `line`, a `--repeat` run, asserts that it succeeded and
/// counted `hits` hits, and returns its output.
pub fn assert_fixed_hits(line: &str, hits: u64) -> Output {
    let out = bench_ok(line);
    assert_eq!(
        fixed_hits(&out.stdout),
        hits,
        "bench {line}:\n{}",
        out.stdout
    );
    out
}

/// Uprobes are attached for all processes on the bench binary's inode, so two
/// probe runs at once would count each other's calls, and a run beside a
/// timed one skews its rates. The host's tests are one binary whose tests run
/// side by side, so every command that may run a benchmark holds this lock:
/// [`run_cmd`] (and the helpers built on it) for the command's length, the
/// `spawn` helpers until the test ends; a test that times or signals a run
/// holds it throughout with [`probe_lock`]. It spans test processes too
/// (`--test` binaries, nextest), and is re-entrant within a test's thread.
pub struct ProbeLock(());

/// A test thread's hold on the lock: how many [`ProbeLock`]s are alive, and
/// the locked file while any is (a spawn's is never dropped: the file closes,
/// unlocking, when the thread ends).
#[derive(Default)]
struct Hold {
    depth: usize,
    file: Option<File>,
}

thread_local! {
    static HOLD: std::cell::RefCell<Hold> = std::cell::RefCell::default();
}

pub fn probe_lock() -> ProbeLock {
    HOLD.with(|hold| {
        let mut hold = hold.borrow_mut();
        if hold.depth == 0 {
            let path = std::env::temp_dir().join("bench-tests-probe.lock");
            let file = File::create(path).expect("the lock file can be created");
            // SAFETY: flock on an open descriptor we own.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            assert_eq!(rc, 0, "flock failed");
            hold.file = Some(file);
        }
        hold.depth += 1;
    });
    ProbeLock(())
}

impl Drop for ProbeLock {
    fn drop(&mut self) {
        // At the thread's end the hold may be gone already: its file closes
        // (and unlocks) with it.
        let _ = HOLD.try_with(|hold| {
            let mut hold = hold.borrow_mut();
            hold.depth -= 1;
            if hold.depth == 0 {
                hold.file = None;
            }
        });
    }
}

/// Holds the lock until this test's thread ends: a spawned run may outlive
/// any scope the test gives it.
fn probe_lock_for_the_test() {
    std::mem::forget(probe_lock());
}

/// Whether `cmd` may run a benchmark on this kernel: anything but a VM boot
/// (its runs are in the guest's kernel) and bench's commands that run none.
fn needs_probe_lock(cmd: &Command) -> bool {
    if Path::new(cmd.get_program()).ends_with("scripts/run_in_vm.sh") {
        return false;
    }
    let first = cmd.get_args().next().and_then(|a| a.to_str());
    let quiet = [
        "compare",
        "history",
        "export",
        "man",
        "completions",
        "--list",
        "--help",
        "-h",
        "--version",
        "-V",
    ];
    !first.is_some_and(|a| quiet.contains(&a))
}

/// The tick of the suite's timed runs, in ms (`BENCH_TEST_TICK_MS`,
/// docs/testing.md): most tests check what a run prints, not its numbers,
/// and `-w1 -d2` takes 0.3 s on it instead of 3 s.
pub const TEST_TICK_MS: u32 = 100;

/// Modules whose runs keep the real one-second tick: what they make is
/// kept in a history, which refuses a test tick's files (`compare`
/// compares them when it runs on the tick itself).
const REAL_TICK_MODULES: &[&str] = &["history", "history_files", "history_page", "history_pg"];

thread_local! {
    static REAL_TICK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Puts this test's runs (those started from here on, on this thread) on
/// the real one-second tick.
pub fn real_tick() {
    REAL_TICK.with(|real| real.set(true));
}

/// Whether this test's runs take the real tick: its module is one of
/// [`REAL_TICK_MODULES`] (the harness names a test's thread `module::test`)
/// or it asked with [`real_tick`].
fn on_real_tick() -> bool {
    let thread = std::thread::current();
    let module = thread.name().and_then(|name| name.split("::").next());
    REAL_TICK.with(|real| real.get()) || module.is_some_and(|m| REAL_TICK_MODULES.contains(&m))
}

/// Gives `cmd` the test tick unless the test is on the real one or the
/// command says what its tick is (set or removed).
fn with_test_tick(cmd: &mut Command) {
    use bench::config::TEST_TICK_ENV;
    let said = cmd.get_envs().any(|(key, _)| key == TEST_TICK_ENV);
    if !said && !on_real_tick() {
        cmd.env(TEST_TICK_ENV, TEST_TICK_MS.to_string());
    }
}

pub fn fixed_hits(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(" hits"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no hits line in:\n{stdout}"))
}

/// The hits and drops of a successful `--repeat` run's report.
pub fn fixed_counts(out: &Output) -> (u64, u64) {
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let drops = out
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix(" drops"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no drops line in:\n{}", out.stdout));
    (fixed_hits(&out.stdout), drops)
}

/// Asserts that a failed run said one sentence on stderr and nothing worse.
pub fn assert_one_clear_line(out: &Output, code: i32, needle: &str) {
    assert_eq!(out.code, code, "exit code; stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr, got: {:?}",
        out.stderr
    );
    assert!(lines[0].contains(needle), "{:?} lacks {needle:?}", lines[0]);
    for noise in ["panicked", "backtrace", "libbpf:", "RUST_BACKTRACE"] {
        assert!(
            !out.stderr.contains(noise),
            "stderr has {noise:?}: {}",
            out.stderr
        );
    }
}

/// Names of the tool's BPF programs that are loaded at this moment.
pub fn loaded_programs() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|p| p.name.to_string_lossy().into_owned())
        .filter(|name| is_ours(name))
        .collect()
}

/// The prefixes of bench's program names, by which the leak checks know them.
pub const PROGRAM_PREFIXES: [&str; 6] = [
    "count_", "drive_", "empty_k", "empty_f", "usleep_", "profile_",
];

/// Whether a program of this name is bench's.
pub fn is_ours(name: &str) -> bool {
    PROGRAM_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Asserts that no program of bench's is still loaded.
pub fn assert_nothing_left() {
    assert_eq!(leftover_programs(), Vec::<String>::new());
}

/// The tool's BPF programs still loaded. The kernel frees a closed program
/// after an RCU grace period (a tasks-trace one for multi-uprobe links), so
/// this waits up to ten seconds for them to go before reporting what is left.
pub fn leftover_programs() -> Vec<String> {
    let mut left = Vec::new();
    for _ in 0..100 {
        left = loaded_programs();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    left
}

/// The processes there are now, by pid.
pub fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// Processes whose command line starts with `bin`: the tool and any child it
/// forked (a fork keeps its parent's command line).
pub fn processes_of(bin: &Path) -> Vec<i32> {
    let bin = bin.as_os_str().as_encoded_bytes();
    pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmd| cmd.split(|&b| b == 0).next() == Some(bin))
                .unwrap_or(false)
        })
        .collect()
}

/// A copy of the binary that `nobody` can run (the build directory may be
/// closed to it), made once per test process and removed when it exits.
pub fn nobody_copy() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static COPY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = COPY.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("bench-test-nobody-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        // A static is never dropped: the folder goes at exit.
        remove_at_exit(dir.path());
        let copy = dir.path().join("bench");
        std::fs::copy(bench_bin(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    });
    dir.path().join("bench")
}

/// Runs `cmd`, again while exec fails with ETXTBSY: a thread of this test
/// process that forked while the copy was open for writing keeps it "busy"
/// until that child execs.
pub fn run_exec_retrying(mut make: impl FnMut() -> Command) -> Output {
    for _ in 0..50 {
        let out = run_cmd(make());
        if !(out.code == 126 && out.stderr.contains("Text file busy")) {
            return out;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the copy of the binary stayed busy");
}

/// Runs a copy of the binary as `nobody` with `caps` as ambient capabilities
/// (setpriv's syntax: `+bpf,+perfmon`; empty: none).
pub fn run_as_nobody(caps: &str, args: &[&str]) -> Output {
    let copy = nobody_copy();
    let caps = if caps.is_empty() {
        "-all".to_string()
    } else {
        format!("-all,{caps}")
    };
    run_exec_retrying(|| {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &format!("--inh-caps={caps}"),
            &format!("--ambient-caps={caps}"),
        ])
        .arg(&copy)
        .args(args);
        cmd
    })
}

/// Sends `sig` to a child we spawned and have not reaped.
pub fn send_signal(child: &Child, sig: i32) {
    // SAFETY: the pid is our own unreaped child, so it names no other process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Reads the child's stdout (or its stderr, with `stderr`) up to the end of
/// the `nth` line (from 1) that contains `needle`, a byte at a time so that
/// nothing after it is taken from the pipe; returns what it read.
pub fn read_until(child: &mut Child, needle: &str, nth: usize, stderr: bool) -> String {
    let pipe: &mut dyn Read = match stderr {
        true => child.stderr.as_mut().unwrap(),
        false => child.stdout.as_mut().unwrap(),
    };
    let (mut seen, mut line, mut found) = (Vec::new(), Vec::new(), 0);
    let mut byte = [0u8; 1];
    loop {
        let n = pipe.read(&mut byte).unwrap();
        assert_ne!(n, 0, "no {needle:?} in {}", String::from_utf8_lossy(&seen));
        seen.push(byte[0]);
        line.push(byte[0]);
        if byte[0] == b'\n' {
            if String::from_utf8_lossy(&line).contains(needle) {
                found += 1;
                if found == nth {
                    return String::from_utf8_lossy(&seen).into_owned();
                }
            }
            line.clear();
        }
    }
}

/// Sends SIGINT to `child` once `after` has passed and collects what it
/// printed; it must exit within 30 s of the signal.
pub fn sigint_after(child: Child, after: Duration) -> Output {
    std::thread::sleep(after);
    send_signal(&child, libc::SIGINT);
    finish_child(child, Duration::from_secs(30), String::new())
}

/// Sends SIGINT to `child` once its stdout has shown the `nth` line that
/// holds `needle`, and collects what it printed; it must exit within 30 s.
pub fn sigint_at(mut child: Child, needle: &str, nth: usize) -> Output {
    let seen = read_until(&mut child, needle, nth, false);
    send_signal(&child, libc::SIGINT);
    finish_child(child, Duration::from_secs(30), seen)
}

/// Waits (at most `limit`) for a spawned child to exit and collects what it
/// printed; `stdout` holds what was already read of its stdout.
pub fn finish_child(mut child: Child, limit: Duration, mut stdout: String) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < limit, "the run did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout).unwrap();
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr).unwrap();
    }
    Output {
        code: status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout,
        stderr,
    }
}

/// Asserts that `text` holds `needle`, showing the text where it does not.
pub fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Asserts that `text` starts with `prefix`, showing the text where it does not.
pub fn assert_starts(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "{prefix:?} does not start:\n{text}"
    );
}

/// The lines of `text` from the first that starts with `prefix` (none if
/// no line does).
pub fn lines_from<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.starts_with(prefix))
        .collect()
}

/// The index of the first of `lines` that starts with `prefix`.
pub fn position_starting(lines: &[&str], prefix: &str) -> usize {
    lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?} in:\n{}", lines.join("\n")))
}

/// The first line of `text` that starts with `prefix`.
/// A summary line without the notes a disturbed run (`, noisy: a tick was
/// ... late`) or an emulated CPU adds after upstream's fields.
pub fn upstreams_part(line: &str) -> &str {
    let line = line.split(", noisy:").next().unwrap_or(line);
    line.split(", emulated (TCG)").next().unwrap_or(line)
}

pub fn line_starting<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?} in:\n{text}"))
}

/// Asserts the last line of `stdout` starts with `prefix` (the summary line
/// that scripts cut).
pub fn assert_last_line(stdout: &str, prefix: &str) {
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with(prefix), "{stdout}");
}

/// Starts `bin` with `args`, its stdout and stderr piped.
pub fn spawn_bin(bin: &Path, args: &[&str]) -> Child {
    probe_lock_for_the_test();
    let mut cmd = Command::new(bin);
    with_test_tick(&mut cmd);
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts bench with the arguments of `line`.
pub fn spawn_line(line: &str) -> Child {
    spawn(&words(line))
}

/// Starts bench on `line` as [`json_line`] makes it: the directory, the JSON
/// file's path, the child.
pub fn spawn_json(line: &str) -> (PathBuf, PathBuf, Child) {
    let (dir, json, line) = json_line(line);
    (dir, json, spawn_line(&line))
}

/// Starts bench with `args`, its stdout and stderr piped.
pub fn spawn(args: &[&str]) -> Child {
    spawn_bin(&bench_bin(), args)
}

/// Runs bench on `line` in a pids cgroup of its own (cgroup v1's pids
/// hierarchy, or v2) that holds at most `max` tasks, so that a batch of
/// threads past it cannot take the machine's pids.
pub fn in_pids_cgroup(max: u64, line: &str) -> Output {
    use std::os::unix::process::CommandExt;
    let v1 = std::path::Path::new("/sys/fs/cgroup/pids");
    let root = if v1.is_dir() {
        v1
    } else {
        std::path::Path::new("/sys/fs/cgroup")
    };
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = root.join(format!("bench-test-{}-{n}", std::process::id()));
    fs::create_dir_all(&dir).expect("a pids cgroup can be made (run as root)");
    fs::write(dir.join("pids.max"), max.to_string()).expect("pids.max is writable");
    let procs = dir.join("cgroup.procs");
    let mut cmd = Command::new(bench_bin());
    cmd.args(words(line));
    // SAFETY: the child only writes its pid to a file before it execs.
    unsafe {
        cmd.pre_exec(move || fs::write(&procs, std::process::id().to_string()));
    }
    let out = run_cmd(cmd);
    let _ = fs::remove_dir(&dir);
    out
}
