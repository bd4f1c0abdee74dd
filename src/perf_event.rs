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

/// Counts how often the calling thread executes the instruction at an
/// address, with an execute hardware breakpoint on it: the kernel's count,
/// for tests that must see code run rather than trust that it did.
#[cfg(test)]
pub(crate) struct ExecutionCounter(OwnedFd);

#[cfg(test)]
impl ExecutionCounter {
    /// `HW_BREAKPOINT_X` of linux/hw_breakpoint.h.
    const EXECUTE: u32 = 4;

    /// An execute breakpoint on `address`, counting from zero, for this
    /// thread only (other threads running the same code add nothing).
    pub(crate) fn at(address: usize) -> io::Result<ExecutionCounter> {
        open(&Self::attr(address), Target::CallingThread).map(ExecutionCounter)
    }

    fn attr(address: usize) -> perf_event_attr {
        let mut attr = attr(libbpf_sys::PERF_TYPE_BREAKPOINT, 0);
        attr.set_exclude_kernel(1);
        attr.set_exclude_hv(1);
        attr.bp_type = Self::EXECUTE;
        attr.__bindgen_anon_3.bp_addr = address as u64;
        // An execute breakpoint's length is a long's (x86 requires it).
        attr.__bindgen_anon_4.bp_len = std::mem::size_of::<libc::c_long>() as u64;
        attr
    }

    /// Moves the breakpoint to `address` (PERF_EVENT_IOC_MODIFY_ATTRIBUTES,
    /// much cheaper than a new event); the count goes on from where it was.
    pub(crate) fn move_to(&self, address: usize) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        /// `_IOW('$', 11, __u64 *)`.
        const PERF_EVENT_IOC_MODIFY_ATTRIBUTES: libc::c_ulong = 0x4008_240b;
        let mut attr = Self::attr(address);
        // SAFETY: the ioctl reads a perf_event_attr whose `size` says so.
        let rc = unsafe {
            libc::ioctl(
                self.0.as_raw_fd(),
                PERF_EVENT_IOC_MODIFY_ATTRIBUTES as _,
                &mut attr as *mut perf_event_attr,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The executions counted so far.
    pub(crate) fn count(&self) -> u64 {
        use std::os::fd::AsRawFd;
        let mut value = 0u64;
        // SAFETY: reading 8 bytes into a u64 from a perf event fd we own.
        let n = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                (&mut value as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        assert_eq!(
            n,
            8,
            "reading the breakpoint's count: {}",
            io::Error::last_os_error()
        );
        value
    }
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
