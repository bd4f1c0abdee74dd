//! Facts about the running kernel that explain what it can and cannot do.

use std::fs;
use std::io::Read;

use flate2::read::GzDecoder;

/// The kernel release, as `uname -r` prints it.
pub fn release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The state of one build option (`CONFIG_...`) of the running kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigOption {
    /// Built in (`y`), a module (`m`) or a value.
    Set(String),
    NotSet,
    /// Neither /proc/config.gz nor /boot/config-<release> could be read.
    Unknown,
}

/// Looks `name` up in the running kernel's configuration.
pub fn config(name: &str) -> ConfigOption {
    match read_config() {
        Some(text) => lookup(&text, name),
        None => ConfigOption::Unknown,
    }
}

fn read_config() -> Option<String> {
    let mut text = String::new();
    if let Ok(file) = fs::File::open("/proc/config.gz") {
        if GzDecoder::new(file).read_to_string(&mut text).is_ok() {
            return Some(text);
        }
    }
    fs::read_to_string(format!("/boot/config-{}", release())).ok()
}

fn lookup(config: &str, name: &str) -> ConfigOption {
    let not_set = format!("# {name} is not set");
    for line in config.lines() {
        if line == not_set {
            return ConfigOption::NotSet;
        }
        if let Some(value) = line
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
        {
            return ConfigOption::Set(value.to_string());
        }
    }
    // Options that depend on a disabled one are left out entirely.
    ConfigOption::NotSet
}

/// How many more tasks (threads or processes) the kernel lets this process
/// start now, and what says so: the least of kernel.pid_max and
/// kernel.threads-max less the tasks there are (/proc/loadavg), and of its
/// pids cgroup's pids.max less its pids.current. `None` where /proc cannot
/// tell.
pub fn task_room() -> Option<(u64, String)> {
    let pid_max = read_number("/proc/sys/kernel/pid_max")?;
    let threads_max = read_number("/proc/sys/kernel/threads-max").unwrap_or(u64::MAX);
    let loadavg = fs::read_to_string("/proc/loadavg").ok()?;
    // "0.10 0.20 0.30 2/523 12345": runnable/existing tasks.
    let tasks = loadavg.split_whitespace().nth(3)?.split('/').nth(1)?;
    let existing: u64 = tasks.parse().ok()?;
    let (limit, name) = match pid_max <= threads_max {
        true => (pid_max, "kernel.pid_max"),
        false => (threads_max, "kernel.threads-max"),
    };
    let system = (
        limit.saturating_sub(existing),
        format!("{name} is {limit} and {existing} tasks exist"),
    );
    match cgroup_task_room() {
        Some(cgroup) if cgroup.0 < system.0 => Some(cgroup),
        _ => Some(system),
    }
}

/// The tasks this process's pids cgroup has room for, where it has a limit:
/// cgroup v1's pids hierarchy or v2's, at their usual mount points.
fn cgroup_task_room() -> Option<(u64, String)> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let dir = cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let dir = match controllers {
            "pids" => format!("/sys/fs/cgroup/pids{path}"),
            "" => format!("/sys/fs/cgroup{path}"),
            _ => return None,
        };
        std::path::Path::new(&format!("{dir}/pids.max"))
            .exists()
            .then_some(dir)
    })?;
    let max = read_number(&format!("{dir}/pids.max"))?;
    let current = read_number(&format!("{dir}/pids.current"))?;
    let why = format!("its pids cgroup's pids.max is {max} and {current} tasks are in it");
    Some((max.saturating_sub(current), why))
}

/// A file's number (`None` for "max" and the like).
fn read_number(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether the configuration says `name` is off (and not merely unknown).
pub fn config_is_off(name: &str) -> bool {
    config(name) == ConfigOption::NotSet
}

/// `uprobe-multi links need Linux 6.6+ (this is 6.1.0-57-amd64)`: a refusal
/// that names the missing piece and the first release that has it.
pub fn needs_linux(what_needs: &str, version: &str) -> String {
    format!("{what_needs} Linux {version}+ (this is {})", release())
}

/// How the kernel answers the uprobe syscall (x86-64) called from outside a
/// uprobe trampoline: with ENXIO (6.18), EPROTO (7.x), or ENOSYS where it
/// has none. The errno.
pub fn uprobe_syscall_answer() -> Option<i32> {
    const NR_UPROBE: libc::c_long = 336;
    // SAFETY: the uprobe syscall takes no arguments, and outside a uprobe
    // trampoline it only returns an error.
    let ret = unsafe { libc::syscall(NR_UPROBE) };
    (ret < 0)
        .then(|| std::io::Error::last_os_error().raw_os_error())
        .flatten()
}

/// Whether the kernel has the uprobe syscall (Linux 6.18+), found as libbpf
/// 1.8 finds it (EPROTO), or as 1.7 did on 6.18 (ENXIO).
pub fn has_uprobe_syscall() -> bool {
    matches!(uprobe_syscall_answer(), Some(libc::ENXIO | libc::EPROTO))
}

/// Whether the kernel's BTF describes a function `name` (every kfunc has an
/// entry), as libbpf resolves a kfunc; `None` when the BTF cannot be read.
pub fn btf_has_func(name: &str) -> Option<bool> {
    let btf = libbpf_rs::btf::Btf::from_vmlinux().ok()?;
    Some(
        btf.type_by_name::<libbpf_rs::btf::types::Func<'_>>(name)
            .is_some(),
    )
}

/// How the VM that `scripts/run_in_vm.sh` started runs this process (`kvm`,
/// or `tcg`: emulated), from the BENCH_VM variable it sets in the guest.
pub fn vm() -> Option<String> {
    std::env::var("BENCH_VM").ok().filter(|v| !v.is_empty())
}

/// Where tracefs is mounted, if anywhere.
pub fn tracefs() -> Option<&'static str> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|dir| std::path::Path::new(dir).join("events").is_dir())
}

/// Makes tracefs visible to this thread, which classic tracepoints need (the
/// event id is read from it). When it is not mounted, it is mounted in a
/// private mount namespace: the mount lives and dies with this process and
/// the system's mounts are left as they were. In a threaded process only the
/// calling thread enters the new namespace, so call it from the thread that
/// goes on to attach (set-up runs on the main thread).
pub fn ensure_tracefs() -> Result<(), String> {
    if tracefs().is_some() {
        return Ok(());
    }
    let os_err = || std::io::Error::last_os_error().to_string();
    // SAFETY: plain syscalls with valid NUL-terminated strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(format!(
                "tracefs is not mounted and a private mount namespace cannot be made ({})",
                os_err()
            ));
        }
        // Keep the new mount from propagating back to the system's namespace.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!(
                "tracefs is not mounted and mounts cannot be made private ({})",
                os_err()
            ));
        }
        if libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!(
                "tracefs is not mounted and cannot be mounted ({})",
                os_err()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_looked_up_exactly() {
        let text = "CONFIG_UPROBES=y\n# CONFIG_KPROBES is not set\nCONFIG_KPROBES_ON_FTRACE=y\nCONFIG_LSM=\"bpf\"\n";
        assert_eq!(
            lookup(text, "CONFIG_UPROBES"),
            ConfigOption::Set("y".into())
        );
        assert_eq!(lookup(text, "CONFIG_KPROBES"), ConfigOption::NotSet);
        assert_eq!(
            lookup(text, "CONFIG_LSM"),
            ConfigOption::Set("\"bpf\"".into())
        );
        assert_eq!(lookup(text, "CONFIG_FPROBE"), ConfigOption::NotSet);
    }

    #[test]
    fn the_release_is_what_uname_says() {
        // SAFETY: utsname is arrays of bytes, for which zero is valid.
        let mut name: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: uname writes into the utsname it is given, which we own.
        assert_eq!(unsafe { libc::uname(&mut name) }, 0);
        // SAFETY: uname wrote a NUL-terminated string into the field.
        let uname = unsafe { std::ffi::CStr::from_ptr(name.release.as_ptr()) };
        assert_eq!(release(), uname.to_str().unwrap());
    }
}
