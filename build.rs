//! Compiles every `bpf/*.bpf.c` into a libbpf-rs skeleton in `$OUT_DIR`, and
//! lists them as modules in `$OUT_DIR/skeletons.rs`.

use std::env;
use std::fs;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

/// What `git ARGS` prints, trimmed; `None` outside git.
fn git(args: &[&str]) -> Option<String> {
    std::process::Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

/// The commit the binary is built from, for result files and the history;
/// "unknown" outside git. Rebuilt when HEAD or a branch moves: in a linked
/// worktree `.git` is a file, and HEAD is in the worktree's git directory,
/// the branches in the common one.
fn git_revision() -> String {
    let git_dir = git(&["rev-parse", "--git-dir"]).unwrap_or_else(|| ".git".to_string());
    let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| git_dir.clone());
    for path in [
        format!("{git_dir}/HEAD"),
        format!("{common}/refs/heads"),
        format!("{common}/packed-refs"),
    ] {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string())
}

/// The words a `bpf/*.bpf.c` says to be built by clang 15 or newer.
const NEEDS_NEWER_CLANG: &str = "needs clang 15+";

/// The major version of a clang binary; `None` when it does not run.
fn clang_major(clang: &str) -> Option<u32> {
    let out = std::process::Command::new(clang)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split("version ").nth(1)?;
    version.split('.').next()?.trim().parse().ok()
}

/// The first clang of version 15 or newer: `$BPF_CLANG`, `clang`, or a
/// versioned one (Debian's `clang-19`).
fn newer_clang(source: &std::path::Path) -> String {
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
    let candidates = env::var("BPF_CLANG").into_iter().chain(
        std::iter::once("clang".to_string()).chain((15..=21).rev().map(|v| format!("clang-{v}"))),
    );
    for clang in candidates {
        if clang_major(&clang).is_some_and(|major| major >= 15) {
            return clang;
        }
    }
    panic!(
        "{} needs clang 15 or newer (BTF type tags for its kptr), and none was found: \
         install one (scripts/install-deps.sh does) or name it in BPF_CLANG",
        source.display()
    )
}

/// `bpf/NAME.bpf.c`'s NAME.
fn stem(source: &std::path::Path) -> &str {
    source
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .trim_end_matches(".bpf.c")
}

/// Compiles one object into `$OUT_DIR/NAME.skel.rs`.
fn build_skeleton(source: &std::path::Path, out_dir: &std::path::Path, multiarch: &str) {
    println!("cargo:rerun-if-changed={}", source.display());
    let skeleton = out_dir.join(format!("{}.skel.rs", stem(source)));
    let mut builder = SkeletonBuilder::new();
    // Kptrs need BTF type tags, which clang emits from version 15 on; the
    // other objects keep the default clang, and so their code.
    let text = fs::read_to_string(source).unwrap_or_default();
    if text.contains(NEEDS_NEWER_CLANG) {
        builder.clang(newer_clang(source));
    }
    // BPF ISA v3 (32-bit jumps and ALU, Linux 5.1+), as the kernel's runner
    // builds its programs: at clang's default (v1) each 32-bit compare is
    // widened by two shifts, which doubled bpf-nop's timed empty loop and
    // cost trig-kernel-count's driver a fifth of its rate.
    builder
        .source(source)
        .clang_args(["-I", "bpf", "-I", multiarch, "-Wall", "-O2", "-mcpu=v3"])
        .build_and_generate(&skeleton)
        .unwrap_or_else(|err| panic!("building {}: {err:#}", source.display()));
}

fn main() {
    println!("cargo:rustc-env=BENCH_GIT_REVISION={}", git_revision());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
    // UAPI headers for asm/*.h live under the multiarch include directory on Debian.
    let multiarch = format!("/usr/include/{arch}-linux-gnu");

    println!("cargo:rerun-if-changed=bpf");
    let mut sources: Vec<PathBuf> = fs::read_dir("bpf")
        .expect("the bpf/ directory is part of the source tree")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    sources.sort();

    // Each object is compiled on a thread of its own: clang and the skeleton
    // generation are most of this script's time, and the objects are
    // independent.
    std::thread::scope(|scope| {
        for source in &sources {
            let (out_dir, multiarch) = (&out_dir, &multiarch);
            scope.spawn(move || build_skeleton(source, out_dir, multiarch));
        }
    });
    // The module list for src/bpf.rs, so that a new bpf/*.bpf.c needs no
    // hand-written include.
    let mut modules = String::new();
    for source in &sources {
        let stem = stem(source);
        modules.push_str(&format!(
            "pub mod {stem} {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/{stem}.skel.rs\"));\n}}\n"
        ));
    }
    fs::write(out_dir.join("skeletons.rs"), modules).expect("OUT_DIR is writable");
}
