//! perf_event_open(2) and the two ioctls bench uses on its events, written
//! once for the hardware breakpoints, the hand-opened perf buffer rings and
//! the profiler's cpu-clock events.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use libbpf_rs::libbpf_sys::{self, perf_event_attr};

/// What an event watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The calling thread, on whichever CPU it runs (pid 0, cpu -1).
    CallingThread,
    /// Every task on one CPU (pid -1, that cpu).
    Cpu(usize),
}

/// The attributes of an event of `type_` and `config`, every other field
/// zero (the neutral value of each) for the caller to set.
pub fn attr(type_: u32, config: u64) -> perf_event_attr {
    perf_event_attr {
        type_,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config,
        ..Default::default()
    }
}

/// Opens an event, close-on-exec so no child that execs keeps it.
pub fn open(attr: &perf_event_attr, target: Target) -> io::Result<OwnedFd> {
    let (pid, cpu): (libc::pid_t, libc::c_int) = match target {
        Target::CallingThread => (0, -1),
        Target::Cpu(cpu) => (
            -1,
            libc::c_int::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
        ),
    };
    // SAFETY: attr is a valid perf_event_attr whose `size` says so, and the
    // group fd -1 means none.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const perf_event_attr,
            pid,
            cpu,
            -1 as libc::c_int,
            libc::c_ulong::from(libbpf_sys::PERF_FLAG_FD_CLOEXEC),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: perf_event_open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `_IO('$', 0)` and `_IO('$', 1)` from linux/perf_event.h, which neither the
/// libc crate nor libbpf-sys carries.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// Starts the event counting (and sampling).
pub fn enable(fd: RawFd) -> io::Result<()> {
    ioctl(fd, PERF_EVENT_IOC_ENABLE)
}

/// Stops the event.
pub fn disable(fd: RawFd) -> io::Result<()> {
    ioctl(fd, PERF_EVENT_IOC_DISABLE)
}

fn ioctl(fd: RawFd, request: libc::c_ulong) -> io::Result<()> {
    // SAFETY: a perf event ioctl without argument; a descriptor that is not a
    // perf event only makes it fail.
    if unsafe { libc::ioctl(fd, request as _, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A software task-clock event on this thread, as every caller's events
    /// are opened: it needs no hardware and no privilege beyond the
    /// paranoid level's default for one's own thread.
    #[test]
    fn an_event_opens_enables_and_disables() {
        let attr = attr(
            libbpf_sys::PERF_TYPE_SOFTWARE,
            u64::from(libbpf_sys::PERF_COUNT_SW_TASK_CLOCK),
        );
        let fd = open(&attr, Target::CallingThread).unwrap();
        enable(fd.as_raw_fd()).unwrap();
        disable(fd.as_raw_fd()).unwrap();
        // SAFETY: fcntl F_GETFD on an open descriptor.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        assert!(enable(-1).is_err());
    }
}
