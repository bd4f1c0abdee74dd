//! Glue between the benchmarks and libbpf: the generated skeletons, libbpf's
//! log, privileges, errno classification, and reading the BPF hit counters.

use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use libbpf_rs::skel::SkelBuilder;
use libbpf_rs::{OpenObject, PrintLevel};

use crate::error::{Error, Result};

/// The skeletons that build.rs generates from `bpf/*.bpf.c`, one module each.
#[allow(
    clippy::all,
    dead_code,
    non_camel_case_types,
    non_snake_case,
    unused_imports
)]
pub mod skel {
    include!(concat!(env!("OUT_DIR"), "/skeletons.rs"));
}

static VERBOSE: AtomicBool = AtomicBool::new(false);
/// Where libbpf's log goes with `-v`: the report's, set by `main`.
static LOG_SINK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

thread_local! {
    /// The last map libbpf failed to create on this thread, and why
    /// (`lookup_map`, `-E2BIG`): a load that fails there failed for the map,
    /// not for a program. Cleared when an object is opened.
    static MAP_FAILURE: std::cell::RefCell<Option<(String, String)>> =
        const { std::cell::RefCell::new(None) };
}

/// `map 'NAME': failed to create: -ERR`, libbpf's line for a map the kernel
/// would not create: the map and the error.
fn map_failure(msg: &str) -> Option<(String, String)> {
    let rest = &msg[msg.find("map '")? + "map '".len()..];
    let (name, rest) = rest.split_once('\'')?;
    let why = rest.strip_prefix(": failed to create: ")?;
    Some((name.to_string(), why.trim().to_string()))
}

fn libbpf_log(_level: PrintLevel, msg: String) {
    if let Some(failure) = map_failure(&msg) {
        MAP_FAILURE.with(|last| *last.borrow_mut() = Some(failure));
    }
    if VERBOSE.load(Relaxed) {
        if let Some(sink) = LOG_SINK.get() {
            sink(&msg);
        }
    }
}

/// Sets where libbpf's log is written with `-v` (once; later calls change
/// nothing).
pub fn log_to(sink: fn(&str)) {
    let _ = LOG_SINK.set(sink);
}

/// Routes libbpf's log: everything to stderr with `verbose`, nothing otherwise.
pub fn init_logging(verbose: bool) {
    VERBOSE.store(verbose, Relaxed);
    route_libbpf_log();
}

/// Puts libbpf's log behind `-v`. libbpf's own default prints its warnings
/// to stderr, so every way into libbpf here (an object opened, a feature
/// probed) installs this first, whether or not a command called
/// [`init_logging`].
fn route_libbpf_log() {
    static ROUTED: std::sync::Once = std::sync::Once::new();
    ROUTED.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Debug, libbpf_log)));
    });
}

/// ENOTSUPP is kernel-internal (524) but reaches user space from BPF paths.
pub const ENOTSUPP: i32 = 524;

/// A capability the kernel asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    Bpf,
    Perfmon,
    SysAdmin,
    /// To read tracefs, which is root's alone.
    DacReadSearch,
}

impl Cap {
    fn bit(self) -> u32 {
        match self {
            Cap::DacReadSearch => 2,
            Cap::SysAdmin => 21,
            Cap::Perfmon => 38,
            Cap::Bpf => 39,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Cap::Bpf => "CAP_BPF",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::DacReadSearch => "CAP_DAC_READ_SEARCH",
        }
    }

    /// Whether a process with the capability bits `caps` has it, or one the
    /// kernel takes instead: bpf_capable() and perfmon_capable() accept
    /// CAP_SYS_ADMIN; CAP_DAC_OVERRIDE reads any file too.
    fn held_in(self, caps: u64) -> bool {
        let has = |bit: u32| caps & (1u64 << bit) != 0;
        const CAP_DAC_OVERRIDE: u32 = 1;
        has(self.bit())
            || match self {
                Cap::Bpf | Cap::Perfmon => has(Cap::SysAdmin.bit()),
                Cap::DacReadSearch => has(CAP_DAC_OVERRIDE),
                Cap::SysAdmin => false,
            }
    }
}

/// What a benchmark's set-up asks of the kernel, and so which capabilities it
/// needs. Found by running each family as `nobody` with ambient capabilities
/// (`setpriv --ambient-caps`) on Linux 6.18; see docs/running.md, Privileges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing a process may not do anyway.
    Nothing,
    /// Loads a BPF program and runs it with BPF_PROG_TEST_RUN.
    RunProgram,
    /// Loads BPF programs and attaches them with BPF links (raw tracepoint,
    /// fentry and the like, multi-uprobe, kprobe-multi).
    Link,
    /// Loads a BPF program and attaches it to USDT sites through libbpf,
    /// which takes one uprobe-multi link where the kernel has them (as
    /// [`Needs::Link`]) and a uprobe perf event per site where it has not
    /// (as [`Needs::UprobeEvent`]): the link decides, so the kernel does.
    Usdt,
    /// Loads a BPF program and attaches it to a uprobe perf event: the kernel
    /// creates those for CAP_SYS_ADMIN only (perf_uprobe_event_init), since
    /// CAP_PERFMON alone let a process plant uprobes in any file.
    UprobeEvent,
    /// Loads a BPF program and attaches it to a kprobe perf event.
    KprobeEvent,
    /// Loads a BPF program and attaches it to a tracepoint perf event, whose
    /// id is read from tracefs (mounted in a private mount namespace when it
    /// is not mounted: CAP_SYS_ADMIN), a file system only root may read.
    TracepointEvent,
}

impl Needs {
    /// What these needs come to on this kernel: [`Needs::Usdt`] becomes
    /// the needs of the link libbpf will take; the others stay.
    pub fn on_this_kernel(self) -> Needs {
        match self {
            // Unknown (the probe itself needs CAP_BPF): the link a 6.6+
            // kernel gives; an older one refuses the attach with EACCES,
            // which `attach_error` words.
            Needs::Usdt => match uprobe_multi_support() {
                Some(false) => Needs::UprobeEvent,
                Some(true) | None => Needs::Link,
            },
            needs => needs,
        }
    }

    /// What the set-up does, for the message that refuses it.
    pub fn does(self) -> &'static str {
        match self {
            Needs::Usdt => match self.on_this_kernel() {
                Needs::UprobeEvent => {
                    "attaches a BPF program to USDT sites through uprobe perf events \
                     (this kernel has no uprobe-multi links)"
                }
                _ => "attaches a BPF program to USDT sites through a uprobe-multi link",
            },
            Needs::Nothing => "needs no privilege",
            Needs::RunProgram => "loads and runs a BPF program",
            Needs::Link => "loads BPF programs and attaches them with BPF links",
            Needs::UprobeEvent => "attaches a BPF program to a uprobe perf event",
            Needs::KprobeEvent => "attaches a BPF program to a kprobe perf event",
            Needs::TracepointEvent => {
                "mounts tracefs and attaches a BPF program to a tracepoint perf event"
            }
        }
    }

    /// The capabilities, every one required.
    pub fn caps(self) -> &'static [Cap] {
        match self {
            Needs::Nothing => &[],
            Needs::Usdt => self.on_this_kernel().caps(),
            Needs::RunProgram | Needs::Link | Needs::KprobeEvent => &[Cap::Bpf, Cap::Perfmon],
            Needs::UprobeEvent => &[Cap::SysAdmin],
            Needs::TracepointEvent => &[Cap::SysAdmin, Cap::DacReadSearch],
        }
    }

    /// `CAP_BPF and CAP_PERFMON`.
    pub fn caps_text(self) -> String {
        let names: Vec<&str> = self.caps().iter().map(|c| c.name()).collect();
        names.join(" and ")
    }
}

/// Refuses early, naming what is missing, when the process lacks a
/// capability that `needs` requires.
pub fn check_privileges(bench: &str, needs: Needs) -> Result<()> {
    let caps = effective_capabilities().unwrap_or(0);
    let missing: Vec<&str> = needs
        .caps()
        .iter()
        .filter(|cap| !cap.held_in(caps))
        .map(|cap| cap.name())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Permission(format!(
        "{bench} {}, which needs {}; this process lacks {}: run it as root (sudo)",
        needs.does(),
        needs.caps_text(),
        missing.join(" and ")
    )))
}

/// Whether the process holds CAP_SYS_ADMIN, with which the kernel's own
/// capability checks all pass.
fn fully_privileged() -> bool {
    effective_capabilities().is_some_and(|caps| Cap::SysAdmin.held_in(caps))
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
        libc::ENOMEM => "ENOMEM",
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
    if let Some((map, why)) = MAP_FAILURE.with(|last| last.borrow_mut().take()) {
        return map_error(&map, &why, err);
    }
    match errno(err) {
        // Without every capability, a refusal is most likely for want of one.
        Some(code @ (libc::EPERM | libc::EACCES)) if !fully_privileged() => {
            Error::Permission(format!(
                "the kernel refused to load {what} ({}): loading needs CAP_BPF and \
                 CAP_PERFMON, or CAP_SYS_ADMIN: run it as root (sudo)",
                errno_name(code)
            ))
        }
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

/// A load that failed because the kernel would not create `map`: sizes it
/// will not allocate (ENOMEM, E2BIG) are the options' (exit 2); a map or
/// flag it does not know, unsupported; the rest, set-up errors.
fn map_error(map: &str, why: &str, err: &libbpf_rs::Error) -> Error {
    let code = errno(err);
    let said = code.map_or_else(|| why.to_string(), errno_name);
    match code {
        Some(libc::ENOMEM | libc::E2BIG) => Error::usage(format!(
            "the kernel would not create the map '{map}' ({said}): its size, from the \
             benchmark's options, is more than the kernel gives; give smaller ones"
        )),
        Some(libc::EPERM | libc::EACCES) if !fully_privileged() => Error::Permission(format!(
            "the kernel refused to create the map '{map}' ({said}): it needs CAP_BPF, or \
             CAP_SYS_ADMIN: run it as root (sudo)"
        )),
        Some(libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP) => Error::unsupported(format!(
            "the kernel refused to create the map '{map}' ({said}): it has no such map, or not \
             with these options (type, sizes, flags)"
        )),
        _ => Error::setup(format!(
            "the kernel could not create the map '{map}' ({said}); `-v` shows libbpf's log"
        )),
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
        // perf_event_open's capability checks answer EACCES (uprobe perf
        // events need CAP_SYS_ADMIN): without it, that is the likely reason.
        Some(libc::EACCES) if !fully_privileged() => Error::Permission(format!(
            "the kernel refused to attach {what} (EACCES): it needs CAP_SYS_ADMIN here, \
             which this process lacks (perf_event_paranoid is {}): run it as root (sudo)",
            perf_event_paranoid()
        )),
        Some(code @ (libc::EPERM | libc::EACCES)) => Error::unsupported(format!(
            "the kernel refused to attach {what} ({}: lockdown or an LSM)",
            errno_name(code)
        )),
        _ => Error::setup(format!("cannot attach {what}: {}", describe(err))),
    }
}

fn perf_event_paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// Whether this kernel has uprobe-multi links (Linux 6.6+), probed as libbpf
/// probes it: load a two-instruction program of that attach type, then ask
/// for a link on "/". A kernel with the link type fails that with EBADF (not
/// a regular file); an older one refuses the attach type itself.
pub fn uprobe_multi_links() -> bool {
    uprobe_multi_support() == Some(true)
}

/// Whether this kernel has uprobe-multi links, probed once: `None` when the
/// process may not load the probe's program (no CAP_BPF), so cannot tell.
fn uprobe_multi_support() -> Option<bool> {
    static SUPPORT: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(probe_uprobe_multi_links)
}

fn probe_uprobe_multi_links() -> Option<bool> {
    use libbpf_rs::libbpf_sys as sys;
    route_libbpf_log();
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
        // An old kernel refuses the attach type (EINVAL); EPERM says only
        // that this process may not load programs.
        return match -prog {
            libc::EPERM | libc::EACCES if !fully_privileged() => None,
            _ => Some(false),
        };
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
    Some(fd < 0 && err == Some(libc::EBADF))
}

fn describe(err: &libbpf_rs::Error) -> String {
    if VERBOSE.load(Relaxed) {
        format!("{err:#}")
    } else {
        format!("{err:#}; `-v` shows libbpf's log")
    }
}

/// An open skeleton's read-only data (`open.maps.rodata_data`), to set
/// before load; `what` names the object when it has none.
pub fn rodata<'a, T>(data: Option<&'a mut T>, what: &str) -> Result<&'a mut T> {
    data.ok_or_else(|| Error::setup(format!("{what} has no .rodata")))
}

/// The storage of one skeleton's BPF object. A skeleton borrows it for as
/// long as it lives, and a workload is `'static`, so the borrow is `'static`
/// and the storage must outlive the skeleton: [`Owned`] keeps the two
/// together and frees the storage after the skeleton (which closes the
/// object in it) — nothing is left behind per run.
pub struct ObjectStorage(NonNull<MaybeUninit<OpenObject>>);

// SAFETY: plain memory that only the skeleton opened in it reads and writes;
// this value itself only frees it.
unsafe impl Send for ObjectStorage {}
unsafe impl Sync for ObjectStorage {}

impl ObjectStorage {
    #[allow(clippy::new_without_default)]
    pub fn new() -> ObjectStorage {
        route_libbpf_log();
        // A map failure logged before this object was opened is not its own.
        MAP_FAILURE.with(|last| last.borrow_mut().take());
        ObjectStorage(NonNull::from(Box::leak(Box::new(MaybeUninit::uninit()))))
    }

    /// Where to open a skeleton.
    ///
    /// # Safety
    /// Call it once, and drop whatever borrows the result before this value:
    /// put the loaded skeleton in an [`Owned`] with this storage, and let an
    /// open skeleton that fails to load drop before it (declare the storage
    /// first).
    pub unsafe fn object(&mut self) -> &'static mut MaybeUninit<OpenObject> {
        // SAFETY: the allocation lives until `drop`, and the caller keeps
        // every borrow shorter than that.
        unsafe { &mut *self.0.as_ptr() }
    }

    /// Opens skeleton `B`'s object here; `what` names the object in an error.
    ///
    /// # Safety
    /// As [`ObjectStorage::object`].
    pub unsafe fn open<B>(&mut self, what: &str) -> Result<B::Output>
    where
        B: SkelBuilder<'static> + Default,
    {
        // SAFETY: the caller's, as `object`'s.
        B::default()
            .open(unsafe { self.object() })
            .map_err(|e| load_error(what, &e))
    }
}

impl Drop for ObjectStorage {
    fn drop(&mut self) {
        // SAFETY: allocated by Box in `new`, freed once; the skeleton that
        // used it (and dropped the object in it) is gone, per `object`'s
        // contract.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// A loaded skeleton and the storage of its object, dropped in that order
/// (the fields' order).
pub struct Owned<S> {
    skel: S,
    _storage: ObjectStorage,
}

impl<S> Owned<S> {
    /// `skel` must have been opened in `storage` (see
    /// [`ObjectStorage::object`]).
    pub fn new(skel: S, storage: ObjectStorage) -> Owned<S> {
        Owned {
            skel,
            _storage: storage,
        }
    }
}

impl<S> std::ops::Deref for Owned<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.skel
    }
}

impl<S> std::ops::DerefMut for Owned<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.skel
    }
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
    /// `slots` is a skeleton's `hits` array in its mmapped .bss (`None` when
    /// the kernel gave no mapping). The value keeps a pointer into that
    /// mapping, without its lifetime: the skeleton's and this value's live in
    /// one workload, which no safe type can express.
    ///
    /// # Safety
    /// Every `T` must start with the 8-byte-aligned `u64` of `bpf/counters.h`
    /// that BPF programs update atomically, and the mapping must outlive the
    /// returned value (keep the skeleton in the same workload, dropped after).
    pub unsafe fn new<T>(slots: Option<&[T]>) -> Result<Self> {
        let slots = slots.ok_or_else(|| Error::setup("the counters' .bss is not memory-mapped"))?;
        Ok(HitCounters {
            first: slots.as_ptr().cast(),
            stride: std::mem::size_of::<T>(),
            // Every slot, not just the CPU count: CPU ids can be sparse.
            slots: slots.len(),
        })
    }

    /// The one reading of a benchmark that reads hits alone.
    pub fn readings(&self) -> crate::channels::Readings {
        vec![Some(self.total())]
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

/// [`HitCounters::new`] over a loaded skeleton's `hits` array (`bpf/counters.h`
/// in its .bss). Unsafe as `new` is, so it goes inside the caller's `unsafe`
/// block.
macro_rules! hit_counters {
    ($skel:expr) => {
        $crate::bpf::HitCounters::new($skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))
    };
}
pub(crate) use hit_counters;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libbpf_s_line_for_a_map_it_could_not_create_names_the_map() {
        assert_eq!(
            map_failure("libbpf: map 'lookup_map': failed to create: -E2BIG\n"),
            Some(("lookup_map".to_string(), "-E2BIG".to_string()))
        );
        assert_eq!(
            map_failure("libbpf: map 'x': created successfully, fd=5"),
            None
        );
        assert_eq!(
            map_failure("libbpf: prog 'drive_x': failed to load: -EINVAL"),
            None
        );
    }
}
