//! Glue between the benchmarks and libbpf: the generated skeletons, libbpf's
//! log, privileges, errno classification, and reading the BPF hit counters.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use libbpf_rs::{OpenObject, PrintLevel};

use crate::error::{Error, Result};
use crate::runner::Counts;

/// The skeletons that build.rs generates from `bpf/*.bpf.c`.
#[allow(
    clippy::all,
    dead_code,
    non_camel_case_types,
    non_snake_case,
    unused_imports
)]
pub mod skel {
    pub mod trigger {
        include!(concat!(env!("OUT_DIR"), "/trigger.skel.rs"));
    }
    pub mod uprobe {
        include!(concat!(env!("OUT_DIR"), "/uprobe.skel.rs"));
    }
    pub mod usdt {
        include!(concat!(env!("OUT_DIR"), "/usdt.skel.rs"));
    }
}

static VERBOSE: AtomicBool = AtomicBool::new(false);
fn libbpf_log(_level: PrintLevel, msg: String) {
    if VERBOSE.load(Relaxed) {
        eprint!("{msg}");
    }
}

/// Routes libbpf's log: everything to stderr with `verbose`, nothing otherwise.
pub fn init_logging(verbose: bool) {
    VERBOSE.store(verbose, Relaxed);
    libbpf_rs::set_print(Some((PrintLevel::Debug, libbpf_log)));
}

/// ENOTSUPP is kernel-internal (524) but reaches user space from BPF paths.
const ENOTSUPP: i32 = 524;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Refuses early, with the remedy, when the process cannot load BPF programs
/// and attach probes: root or CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN).
pub fn check_privileges(bench: &str) -> Result<()> {
    let caps = effective_capabilities().unwrap_or(0);
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    Err(Error::Permission(format!(
        "{bench} loads BPF programs and attaches probes, which needs root \
         (CAP_BPF and CAP_PERFMON): run it with sudo"
    )))
}

fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

/// The errno inside a libbpf-rs error, if it carries one.
pub fn errno(err: &libbpf_rs::Error) -> Option<i32> {
    let text = format!("{err:#}");
    let start = text.rfind("(os error ")? + "(os error ".len();
    let end = start + text[start..].find(')')?;
    text[start..end].parse().ok()
}

fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EINVAL => "EINVAL",
        libc::ENODEV => "ENODEV",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EBUSY => "EBUSY",
        libc::E2BIG => "E2BIG",
        libc::ESRCH => "ESRCH",
        ENOTSUPP => "ENOTSUPP",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// Turns a failure to load `what` (a program or an object) into a sentence. A
/// kernel that refuses the program type is "unsupported"; anything else is a
/// set-up error.
pub fn load_error(what: &str, err: &libbpf_rs::Error) -> Error {
    match errno(err) {
        Some(libc::EPERM) | Some(libc::EACCES) => Error::unsupported(format!(
            "the kernel refused to load {what} (EPERM: lockdown or an LSM)"
        )),
        Some(code @ (libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP)) => Error::unsupported(format!(
            "the kernel rejected {what} ({}); `-v` shows libbpf's log",
            errno_name(code)
        )),
        _ => Error::setup(format!("cannot load {what}: {}", describe(err))),
    }
}

/// Turns a failure to attach `what` into a sentence, as [`load_error`] does.
pub fn attach_error(what: &str, err: &libbpf_rs::Error) -> Error {
    match errno(err) {
        Some(code @ (libc::ENOENT | libc::EOPNOTSUPP | libc::ENOSYS | ENOTSUPP)) => {
            Error::unsupported(format!(
                "the kernel cannot attach {what} ({})",
                errno_name(code)
            ))
        }
        Some(libc::EPERM) | Some(libc::EACCES) => Error::unsupported(format!(
            "the kernel refused to attach {what} (EPERM: lockdown or an LSM)"
        )),
        _ => Error::setup(format!("cannot attach {what}: {}", describe(err))),
    }
}

/// Whether this kernel has uprobe-multi links (Linux 6.6+), probed as libbpf
/// probes it: load a two-instruction program of that attach type, then ask
/// for a link on "/". A kernel with the link type fails that with EBADF (not
/// a regular file); an older one refuses the attach type itself.
pub fn uprobe_multi_links() -> bool {
    use libbpf_rs::libbpf_sys as sys;
    // r0 = 0; exit
    let insns = [
        sys::bpf_insn {
            code: (sys::BPF_ALU64 | sys::BPF_MOV | sys::BPF_K) as u8,
            ..Default::default()
        },
        sys::bpf_insn {
            code: (sys::BPF_JMP | sys::BPF_EXIT) as u8,
            ..Default::default()
        },
    ];
    let mut load = sys::bpf_prog_load_opts {
        sz: std::mem::size_of::<sys::bpf_prog_load_opts>() as _,
        expected_attach_type: sys::BPF_TRACE_UPROBE_MULTI,
        ..Default::default()
    };
    // SAFETY: valid instructions, license and options for the call.
    let prog = unsafe {
        sys::bpf_prog_load(
            sys::BPF_PROG_TYPE_KPROBE,
            std::ptr::null(),
            c"GPL".as_ptr(),
            insns.as_ptr(),
            insns.len() as _,
            &mut load,
        )
    };
    if prog < 0 {
        return false;
    }
    let offset: std::os::raw::c_ulong = 0;
    let mut link = sys::bpf_link_create_opts {
        sz: std::mem::size_of::<sys::bpf_link_create_opts>() as _,
        ..Default::default()
    };
    link.__bindgen_anon_1.uprobe_multi = sys::bpf_link_create_opts__bindgen_ty_1__bindgen_ty_3 {
        path: c"/".as_ptr(),
        offsets: &offset,
        cnt: 1,
        ..Default::default()
    };
    // SAFETY: prog is our fd; the options point at live locals.
    let fd = unsafe { sys::bpf_link_create(prog, -1, sys::BPF_TRACE_UPROBE_MULTI, &link) };
    let err = std::io::Error::last_os_error().raw_os_error();
    // SAFETY: closing fds this function opened.
    unsafe {
        if fd >= 0 {
            libc::close(fd);
        }
        libc::close(prog);
    }
    fd < 0 && err == Some(libc::EBADF)
}

fn describe(err: &libbpf_rs::Error) -> String {
    if VERBOSE.load(Relaxed) {
        format!("{err:#}")
    } else {
        format!("{err:#}; `-v` shows libbpf's log")
    }
}

/// Storage for a skeleton's object. Set-up leaks one small allocation per
/// benchmark run so that the loaded skeleton can live in a `'static` workload;
/// the BPF object itself is still closed when the skeleton is dropped.
pub fn object_storage() -> &'static mut MaybeUninit<OpenObject> {
    Box::leak(Box::new(MaybeUninit::uninit()))
}

/// The per-CPU hit slots of `bpf/counters.h`, read through the mmapped .bss.
pub struct HitCounters {
    first: *const u8,
    stride: usize,
    slots: usize,
}

// SAFETY: the pointer targets the mmapped .bss of a skeleton that the owning
// workload keeps alive for as long as this value; it is only read atomically.
unsafe impl Send for HitCounters {}
unsafe impl Sync for HitCounters {}

impl HitCounters {
    /// `slots` is the skeleton's `hits` array in its mmapped .bss (`None` when
    /// the kernel gave no mapping); every slot starts with its `u64`.
    pub fn new<T>(slots: Option<&[T]>) -> Result<Self> {
        let slots = slots.ok_or_else(|| Error::setup("the counters' .bss is not memory-mapped"))?;
        Ok(HitCounters {
            first: slots.as_ptr().cast(),
            stride: std::mem::size_of::<T>(),
            // Every slot, not just the CPU count: CPU ids can be sparse.
            slots: slots.len(),
        })
    }

    /// The counts as the runner wants them: hits, no drops.
    pub fn counts(&self) -> Counts {
        Counts {
            hits: self.total(),
            drops: 0,
        }
    }

    /// The sum over all CPUs' slots.
    pub fn total(&self) -> u64 {
        (0..self.slots)
            .map(|i| {
                // SAFETY: slot i lies within the mapped array, is 8-byte aligned,
                // and the kernel updates it atomically.
                let value =
                    unsafe { AtomicU64::from_ptr(self.first.add(i * self.stride) as *mut u64) };
                value.load(Relaxed)
            })
            .sum()
    }
}
