//! The scripts' own logic, run for real: `--kernels` columns when a kernel
//! fails, run_in_vm.sh's argument checks before any set-up, arguments a
//! script does not take, and the Markdown table of runs of one benchmark.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// The cells of the Markdown row that starts with `| label |`.
fn cells(markdown: &str, label: &str) -> Vec<String> {
    markdown
        .lines()
        .find(|l| l.starts_with(&format!("| {label} |")))
        .unwrap_or_else(|| panic!("no {label} row in:\n{markdown}"))
        .trim_matches('|')
        .split(" | ")
        .map(|c| c.trim().to_string())
        .collect()
}

#[test]
fn a_failed_kernel_keeps_its_own_column() {
    let _lock = probe_lock();
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_trigger.sh"));
        cmd.env("WD", "-w0 -d1");
        cmd.args(["--markdown", "--kernels", "host,bogus,host", "kernel-count"]);
        cmd
    });
    // A kernel failed: the script says so in its exit code.
    assert_eq!(out.code, 1, "{}", out.stderr);
    let header = cells(&out.stdout, "benchmark");
    assert_eq!(header.len(), 4, "{}", out.stdout);
    assert!(
        header[1].starts_with("host (") && header[3].starts_with("host ("),
        "{header:?}"
    );
    assert_eq!(header[2], "bogus (failed: exit 2)");
    let row = cells(&out.stdout, "kernel-count");
    assert!(row[1].contains("M/s") && row[3].contains("M/s"), "{row:?}");
    assert_eq!(row[2], "-", "{row:?}");

    // The first kernel failing: still a table, not the raw rows.
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_trigger.sh"));
        cmd.env("WD", "-w0 -d1");
        cmd.args(["--kernels", "bogus,host", "kernel-count"]);
        cmd
    });
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!out.stdout.contains('\t'), "{:?}", out.stdout);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("benchmark") && lines[0].contains("bogus (failed: exit 2)"),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].starts_with("kernel-count") && lines[1].contains(" -  "),
        "{}",
        out.stdout
    );
}

#[test]
fn run_in_vm_refuses_bad_arguments_before_any_set_up() {
    let dir = tempdir("vm-args");
    // Stand-ins that record any package or Python set-up: none may happen.
    let log = dir.join("setup.log");
    let bin = dir.join("bin");
    fs::create_dir(&bin).unwrap();
    for tool in ["apt-get", "dpkg-query", "python3"] {
        let path = bin.join(tool);
        fs::write(
            &path,
            format!(
                "#!/bin/sh\necho {tool} \"$@\" >>{}\nexit 0\n",
                log.display()
            ),
        )
        .unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let cache = dir.join("cache");
    for (args, needle) in table(
        "
        --kernel /etc/passwd | --kernel /etc/passwd is not a kernel image
        --kernel /tmp | is a directory but not a built kernel tree
        --kernel 6.1 --memory lots | --memory takes a size such as 2G or 512M, got 'lots'
        --kernel 9.99 | apt knows no Debian kernel package for 9.99
        ",
    ) {
        let out = run_cmd({
            let mut cmd = Command::new(script("run_in_vm.sh"));
            cmd.args(words(args)).args(["--", "--list"]);
            cmd.env("PATH", &path).env("BENCH_VM_CACHE", &cache);
            cmd
        });
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        let setup = fs::read_to_string(&log).unwrap_or_default();
        assert!(
            !setup.contains("install") && !setup.contains("python3"),
            "{args:?} set things up first: {setup}"
        );
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_breakpoint_script_refuses_arguments_it_would_ignore() {
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_breakpoint.sh"));
        cmd.env("WD", "-w0 -d1");
        cmd.arg("thread");
        cmd
    });
    assert_one_clear_line(&out, 2, "unexpected argument thread");
}

#[test]
fn runs_of_one_benchmark_give_the_markdown_table() {
    let _lock = probe_lock();
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_uprobes.sh"));
        cmd.env("WD", "-w0 -d1");
        cmd.env("RUNS", "2").args(["--markdown", "syscall-count"]);
        cmd
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("| benchmark | hits (mean) | 95 % CI |"),
        "{}",
        out.stdout
    );
    let row = cells(&out.stdout, "trig-syscall-count");
    assert!(row[1].ends_with("M/s"), "{row:?}");
}

/// The helper scripts print upstream's lines: run_common.sh's summarize_ops
/// for the loops (under a subtitle, then a blank line), summarize for strncmp.
#[test]
fn the_helper_scripts_print_upstreams_lines() {
    let _lock = probe_lock();
    let script_out = |name: &str, env: &[(&str, &str)], args: &[&str]| {
        let out = run_cmd({
            let mut cmd = Command::new(script(name));
            cmd.env("WD", "-w0 -d1")
                .envs(env.iter().copied())
                .args(args);
            cmd
        });
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        out.stdout
    };
    let number = "[0-9]+\\.[0-9]+";
    let ops = regex_lite(&format!(
        "^bpf_loop: +throughput: {number} ± {number} M ops/s, latency: {number} ns/op$"
    ));
    let out = script_out(
        "run_bench_bpf_loop.sh",
        &[("THREADS", "1"), ("NR_LOOPS", "10 100")],
        &[],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(lines[0], "\tnr_loops: 10, nr_threads: 1");
    assert_eq!(lines[3], "\tnr_loops: 100, nr_threads: 1");
    assert!(ops(lines[1]) && ops(lines[4]), "{out}");
    assert!(lines[2].is_empty() && lines[5].is_empty(), "{out}");

    let out = script_out("run_bench_strncmp.sh", &[("LENS", "8")], &[]);
    let hits = |label: &str| {
        regex_lite(&format!(
            "^{label} +{number} ± {number}M/s \\(drops {number} ± {number}M/s\\)$"
        ))
    };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        hits("no-helper-8")(lines[0]) && hits("helper-8")(lines[1]),
        "{out}"
    );
    assert_eq!(lines[0].find(char::is_numeric), Some(10), "{out}");

    let out = script_out(
        "run_bench_bpf_for.sh",
        &[("THREADS", "1"), ("NR_LOOPS", "10")],
        &["--markdown"],
    );
    let row = cells(&out, "bpf_for p1 nr_loops 10");
    assert!(
        row[1].starts_with("throughput: ") && row[1].ends_with(" ns/op"),
        "{row:?}"
    );

    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_strncmp.sh"));
        cmd.arg("helper");
        cmd
    });
    assert_one_clear_line(&out, 2, "unexpected argument helper");
}

/// A matcher for the few regular-expression pieces these lines need, by
/// grep: classes, `+`, anchors.
fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
    let pattern = pattern.to_string();
    move |line: &str| {
        let out = Command::new("grep")
            .args(["-Eq", &pattern])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(line.as_bytes())?;
                child.wait()
            })
            .unwrap();
        out.success()
    }
}
