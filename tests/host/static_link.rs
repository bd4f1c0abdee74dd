//! One file to copy: the built binary needs nothing but the C library, so it
//! runs on a test machine or VM image that has none of the build's packages.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// What the C toolchain itself brings; every other library must be linked in.
const C_LIBRARY: [&str; 6] = [
    "linux-vdso.so",
    "ld-linux",
    "libc.so",
    "libm.so",
    "libgcc_s.so",
    "libpthread.so",
];

/// ldd's lines as (soname, resolved path if any).
fn ldd(bin: &Path) -> Vec<(String, Option<PathBuf>)> {
    let out = Command::new("ldd").arg(bin).output().expect("ldd runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "ldd failed: {text}");
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?.to_string();
            // `libc.so.6 => /lib/.../libc.so.6 (0x...)`, or the loader's
            // `/lib64/ld-linux-x86-64.so.2 (0x...)`, or the vDSO's name alone.
            let path = match words.next() {
                Some("=>") => words.next().map(PathBuf::from),
                _ if name.starts_with('/') => Some(PathBuf::from(&name)),
                _ => None,
            };
            Some((name, path))
        })
        .collect()
}

#[test]
fn the_binary_needs_only_the_c_library() {
    let libs = ldd(&bench_bin());
    let names: Vec<&str> = libs.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
    for name in &names {
        let base = name.rsplit('/').next().unwrap_or(name);
        assert!(
            !base.starts_with("libelf") && !base.starts_with("libz."),
            "libelf and zlib must be linked statically, but ldd lists {name}"
        );
        assert!(
            C_LIBRARY.iter().any(|c| base.starts_with(c)),
            "{name} is not part of the C library: {names:?}"
        );
    }
}

/// Runs a real BPF benchmark in a root that holds only the binary and the
/// libraries ldd names (plus the kernel's /proc and /sys): nothing of the
/// build's packages is there to be found.
#[test]
fn the_binary_runs_a_bpf_benchmark_with_only_the_c_library_present() {
    let root = tempdir("static-root");
    for (_, path) in ldd(&bench_bin()) {
        let Some(path) = path else { continue };
        let copy = root.join(path.strip_prefix("/").unwrap());
        fs::create_dir_all(copy.parent().unwrap()).unwrap();
        // Through symlinks: the copy is the library itself.
        fs::copy(&path, &copy).unwrap();
    }
    fs::copy(bench_bin(), root.join("bench")).unwrap();
    for dir in ["proc", "sys", "tmp"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }

    let _lock = probe_lock();
    // A private mount namespace: the bind mounts vanish with it, whatever
    // happens to the test.
    let script = r#"mount --rbind /proc "$1/proc" && mount --rbind /sys "$1/sys" &&
        exec chroot "$1" /bench -q -w0 -d1 trig-syscall-count"#;
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(&root);
    let out = run_cmd(cmd);
    fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert_has(&out.stdout, "Summary: hits");
    assert_nothing_left();
}
