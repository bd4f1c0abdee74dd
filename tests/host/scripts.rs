//! The scripts' own logic, run for real: `--kernels` columns when a kernel
//! fails, run_in_vm.sh's argument checks before any set-up, arguments a
//! script does not take, the Markdown table of runs of one benchmark, and
//! upstream_compare.sh against stand-ins for the kernel's runner, and
//! reproduce.sh's help and its refusal of a seed it does not know.

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

/// Runs the script `name` with `args` and `env`, each benchmark for a
/// second without warm-up (WD).
fn quick(name: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(script(name));
    cmd.env("WD", "-w0 -d1")
        .envs(env.iter().copied())
        .args(args);
    run_cmd(cmd)
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
    let out = quick(
        "run_bench_trigger.sh",
        &[],
        &["--markdown", "--kernels", "host,bogus,host", "kernel-count"],
    );
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
    let out = quick(
        "run_bench_trigger.sh",
        &[],
        &["--kernels", "bogus,host", "kernel-count"],
    );
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
        --kernel 9.99 | Debian has no kernel package for 9.99
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
    let out = quick("run_bench_breakpoint.sh", &[], &["thread"]);
    assert_one_clear_line(&out, 2, "unexpected argument thread");
}

#[test]
fn reproduce_refuses_an_unknown_seed_and_says_which_it_knows() {
    let out = quick("reproduce.sh", &[], &["breakpoints"]);
    assert_one_clear_line(
        &out,
        2,
        "unknown seed 'breakpoints': give one of breakpoint-series perf-breakpoint perf-syscall uprobes",
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let out = quick("reproduce.sh", &[], &[]);
    assert_one_clear_line(&out, 2, "name a seed: breakpoint-series");
    let out = quick("reproduce.sh", &[], &["--rounds", "0", "perf-syscall"]);
    assert_one_clear_line(&out, 2, "--rounds takes a whole number, got '0'");
    let out = quick("reproduce.sh", &[], &["--cpus", "two", "breakpoint-series"]);
    assert_one_clear_line(&out, 2, "--cpus takes a whole number, got 'two'");
}

#[test]
fn reproduce_help_lists_every_seed_and_option() {
    let out = quick("reproduce.sh", &[], &["--help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    for needle in [
        "breakpoint-series",
        "perf-breakpoint",
        "perf-syscall",
        "uprobes",
        "--rounds N",
        "--out DIR",
        "--kernels L",
        "--cpus N",
        "-r 30 breakpoint thread -b 4 -p 64 -t 64",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
    // The header comment only, without its marks or the code after it.
    assert!(!out.stdout.contains("set -e"), "{}", out.stdout);
    assert!(
        !out.stdout.lines().any(|l| l.starts_with('#')),
        "{}",
        out.stdout
    );
}

#[test]
fn runs_of_one_benchmark_give_the_markdown_table() {
    let _lock = probe_lock();
    let out = quick(
        "run_bench_uprobes.sh",
        &[("RUNS", "2")],
        &["--markdown", "syscall-count"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("| benchmark | hits (mean) | 95 % CI |"),
        "{}",
        out.stdout
    );
    let row = cells(&out.stdout, "trig-syscall-count");
    // A rate with its unit prefix: K/s on a loaded machine, M/s on a quiet one.
    let rate = row[1]
        .trim_end_matches("/s")
        .trim_end_matches(['K', 'M', 'G']);
    assert!(
        row[1].ends_with("/s") && rate.parse::<f64>().is_ok(),
        "{row:?}"
    );
}

#[test]
fn upstream_compare_refuses_what_it_cannot_compare_before_any_run() {
    let dir = tempdir("upstream-args");
    let not_exec = dir.join("bench");
    fs::write(&not_exec, "").unwrap();
    for (line, needle) in table(
        "
        - trig-rawtp | set UPSTREAM to the kernel runner's bench binary
        NOT_EXEC trig-rawtp | is not an executable file
        /bin/true -w 1 trig-rawtp | options go to both runners as -wN -dN -a -pN -cN (N from 1) or --name=value, got '-w'
        /bin/true --nr_loops 5 bpf-loop | got '--nr_loops'
        /bin/true --nr_loops= bpf-loop | a family's option goes to both runners as --name=value, got '--nr_loops='
        /bin/true -w0 trig-rawtp | got '-w0'
        /bin/true -s trig-rawtp | got '-s'
        /bin/true -a | name at least one benchmark
        ",
    ) {
        let (upstream, args) = line.split_once(' ').unwrap();
        let out = run_cmd({
            let mut cmd = Command::new(script("upstream_compare.sh"));
            match upstream {
                "-" => cmd.env_remove("UPSTREAM"),
                "NOT_EXEC" => cmd.env("UPSTREAM", &not_exec),
                path => cmd.env("UPSTREAM", path),
            };
            // Nothing may run: a bench that does not exist would say so.
            cmd.env("BENCH_BIN", dir.join("no-bench"));
            cmd.args(words(args));
            cmd
        });
        assert_one_clear_line(&out, 2, needle);
        assert!(out.stdout.is_empty(), "{line:?}: {}", out.stdout);
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// A stand-in for the kernel's runner: lists `trig-usermode-count` and
/// `bpf-loop` and runs them as `body` says.
fn stand_in_upstream(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("upstream-bench");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --list ]; then printf 'Available benchmarks:\\n- trig-usermode-count\\n- bpf-loop\\n'; exit 0; fi\n{body}\n"
    );
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn upstream_compare_skips_what_either_runner_cannot_run_and_divides_the_rest() {
    let _lock = probe_lock();
    let dir = tempdir("upstream-stand-in");
    let compare = |upstream: &Path, names: &[&str]| {
        run_cmd({
            let mut cmd = Command::new(script("upstream_compare.sh"));
            cmd.env("UPSTREAM", upstream).env("PAIRS", "1");
            cmd.env("BENCH_BIN", bench_bin());
            cmd.args(["-w1", "-d1", "-a"]).args(names);
            cmd
        })
    };
    let failing = stand_in_upstream(&dir, "echo 'failed to open skeleton' >&2; exit 1");
    let out = compare(&failing, &["trig-usermode-count", "no-such-benchmark"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "trig-usermode-count: skipped: the kernel's runner fails here: failed to open skeleton"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("no-such-benchmark: skipped: bench has no benchmark of that name"),
        "{}",
        out.stdout
    );

    // A fixed 50 M/s upstream: the row holds it, bench's own rate, and their ratio.
    let fixed = stand_in_upstream(
        &dir,
        "echo 'Summary: hits   50.000 \u{b1} 0.100M/s ( 50.000M/prod), drops    0.000 \u{b1} 0.000M/s'",
    );
    let out = compare(&fixed, &["trig-usermode-count"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row: Vec<&str> = out
        .stdout
        .lines()
        .find(|l| l.starts_with("trig-usermode-count "))
        .unwrap_or_else(|| panic!("no row in:\n{}", out.stdout))
        .split_whitespace()
        .collect();
    let (upstream, ours, ratio): (f64, f64, f64) = (
        row[1].parse().unwrap(),
        row[2].parse().unwrap(),
        row[3].parse().unwrap(),
    );
    assert_eq!(upstream, 50.0, "{row:?}");
    assert!(ours > 0.0, "{row:?}");
    assert!((ratio - ours / 50.0).abs() < 1e-3, "{row:?}");
    assert!(out.stderr.contains("pair 0:"), "{}", out.stderr);

    // A family's option reaches the kernel's runner, in its check and its
    // runs: the stand-in runs only when given it.
    let picky = stand_in_upstream(
        &dir,
        "case \"$*\" in *--nr_loops=7*) echo 'Summary: throughput    2.000 \u{b1} 0.010 M ops/s';; *) exit 1;; esac",
    );
    let out = compare(&picky, &["--nr_loops=7", "bpf-loop"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("bpf-loop ") && l.split_whitespace().nth(1) == Some("2.000")),
        "{}",
        out.stdout
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// run_bench_rename.sh prints upstream's lines: `%-10s: <summary>` for each
/// of upstream's six, in its order, a refused one with its reason.
#[test]
fn the_rename_script_prints_upstreams_lines() {
    let _lock = probe_lock();
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_rename.sh"));
        cmd.env("WD", "-w0 -d1");
        cmd
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let names = ["base", "kprobe", "kretprobe", "rawtp", "fentry", "fexit"];
    assert_eq!(lines.len(), names.len(), "{}", out.stdout);
    for (line, name) in lines.iter().zip(names) {
        let (label, summary) = line.split_at(12);
        assert_eq!(label, format!("{name:<10}: "), "{line:?}");
        let measured = summary.split_whitespace().collect::<Vec<_>>();
        let refused = summary.starts_with("unsupported: ");
        assert!(
            refused || (measured.len() == 3 && measured[2].ends_with("/s")),
            "{line:?}"
        );
        if ["base", "rawtp"].contains(&name) {
            assert!(!refused, "{line:?}");
        }
    }
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

/// The kernel's run_bench_bpf_hashmap_full_update.sh prints the runner's
/// whole output: bench's has the per-CPU lines before its Summary.
#[test]
fn the_hashmap_script_prints_upstreams_lines() {
    let _lock = probe_lock();
    let out = quick("run_bench_bpf_hashmap_full_update.sh", &[], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let full_perf = regex_lite("^[0-9]+:hash_map_full_perf [0-9]+ events per sec$");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let first = lines
        .iter()
        .position(|l| full_perf(l))
        .expect("a per-CPU line");
    assert!(
        lines[first..].iter().take_while(|l| full_perf(l)).count() >= 1,
        "{}",
        out.stdout
    );
    assert!(
        lines.last().unwrap().starts_with("Summary: hits "),
        "{}",
        out.stdout
    );
    let out = quick("run_bench_bpf_hashmap_full_update.sh", &[], &["--markdown"]);
    let row = regex_lite("^| cpu[0-9]+ | [0-9]+ events per sec |$");
    assert!(out.stdout.lines().any(row), "{}", out.stdout);
    let out = quick("run_bench_bpf_hashmap_full_update.sh", &[], &["cpu"]);
    assert_one_clear_line(&out, 2, "unexpected argument cpu");
}

/// run_bench_bloom_filter_map.sh prints upstream's layout: headers,
/// subtitles, "N entries -" and the three summarize kinds' lines.
#[test]
fn the_bloom_script_prints_upstreams_lines() {
    let _lock = probe_lock();
    let out = run_cmd({
        let mut cmd = Command::new(script("run_bench_bloom_filter_map.sh"));
        cmd.envs([
            ("WD", "-w0 -d1"),
            ("VALUE_SIZES", "8"),
            ("THREADS", "1"),
            ("HASHES", "3"),
            ("ENTRIES", "1000"),
        ]);
        cmd
    });
    assert_eq!(out.code, 0, "{}", out.stderr);
    let number = "[0-9]+\\.[0-9]+";
    let rate = format!("{number} ± {number}M/s");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 17, "{}", out.stdout);
    assert_eq!(lines[1..3], ["Bloom filter map", "================"]);
    assert_eq!(lines[3], "\tvalue_size: 8 bytes, # threads: 1, # hashes: 3");
    assert_eq!(lines[4], "1000 entries -");
    let hits = |label: &str| regex_lite(&format!("^\t{label} +{rate} \\(drops {rate}\\)$"));
    assert!(hits("Lookups, total operations:")(lines[5]), "{}", lines[5]);
    assert!(hits("Updates, total operations:")(lines[6]), "{}", lines[6]);
    assert!(
        regex_lite(&format!("^\tFalse positive rate: +{number}%$"))(lines[7]),
        "{}",
        lines[7]
    );
    assert_eq!(
        lines[10],
        "Hashmap without bloom filter vs. hashmap with bloom filter (throughput, 8 threads)"
    );
    assert_eq!(lines[12], "\tvalue_size: 8, # hashes: 3");
    assert!(
        regex_lite(&format!("^\tHashmap without bloom filter: +{rate}$"))(lines[14]),
        "{}",
        lines[14]
    );
    assert!(
        regex_lite(&format!("^\tHashmap with bloom filter: +{rate}$"))(lines[15]),
        "{}",
        lines[15]
    );
}

/// The main job runs the kernel runner's list (7.3's run_bench_uprobes.sh):
/// the nop10 rows where bench probes the 10-byte nop; else the nop5 rows,
/// after one line saying why (d744f7d ran nop5 everywhere, silently).
#[test]
fn the_uprobes_job_follows_the_kernel_runners_list() {
    let _lock = probe_lock();
    let out = quick("run_bench_uprobes.sh", &[], &["--list"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let probe = bench_ok("--probe trig-uprobe-nop10").stdout;
    let nop = match probe.contains(" ok") {
        true => "nop10",
        false => "nop5",
    };
    let mut want: Vec<String> = ["usermode-count", "syscall-count"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for kind in ["uprobe", "uretprobe"] {
        for target in ["nop", "push", "ret", nop] {
            want.push(format!("{kind}-{target}"));
        }
    }
    want.extend(["usdt-nop".to_string(), format!("usdt-{nop}")]);
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    if nop == "nop5" {
        let why = lines.remove(0);
        let verdict = probe
            .split_once("unsupported: ")
            .map_or("", |(_, v)| v.trim());
        assert_eq!(
            why,
            format!(
                "no nop10 rows, the nop5 ones stand in: trig-uprobe-nop10 unsupported: {verdict}"
            )
        );
        assert!(verdict.contains("10-byte nop"), "{why}");
    }
    assert_eq!(lines, want, "{}", out.stdout);
}

/// The suite's last look at the kernel's log: a leaked uprobe, a stall, a
/// BUG, or a WARNING naming a bench process after the tests began fails it
/// with the line; the same before they began, or another task's warning,
/// does not.
#[test]
fn the_kernel_log_check_fails_on_a_leaked_uprobe_and_names_it() {
    let dir = tempdir("kernel-log");
    let check = |log: &str, since: &str| {
        let path = dir.join("dmesg");
        fs::write(&path, log).unwrap();
        let out = Command::new(script("kernel_log_check.sh"))
            .args(["--since", since])
            .arg(&path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let leak = "[10987.394328] uprobe: bench:11487 failed to unregister, leaking uprobe\n";
    let clean = "[  100.000000] EXT4-fs (vda): mounted filesystem\n\
                 [  101.000000] rcupdate.rcu_cpu_stall_cputime=1\n";
    let (code, said) = check(&format!("{clean}{leak}"), "100");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("bench:11487 failed to unregister, leaking uprobe"),
        "{said}"
    );
    assert_eq!(
        check(&format!("{clean}{leak}"), "10988").0,
        Some(0),
        "before the tests"
    );
    assert_eq!(check(clean, "0").0, Some(0));
    let stall = "[  200.5] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n";
    assert_eq!(check(stall, "0").0, Some(1));
    let warning = |comm: &str| {
        format!(
            "[  300.0] WARNING: CPU: 1 PID: 9 at kernel/trace/x.c:1 f+0x1/0x2\n\
             [  300.0] Modules linked in:\n\
             [  300.0] CPU: 1 UID: 0 PID: 9 Comm: {comm} Not tainted 6.18.44\n"
        )
    };
    let (code, said) = check(&warning("bench"), "0");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("WARNING: CPU: 1 PID: 9"), "{said}");
    assert_eq!(check(&warning("kworker/1:0"), "0").0, Some(0));
    fs::remove_dir_all(&dir).unwrap();
}
