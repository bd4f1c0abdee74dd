//! An epoll set of a consumer's own: the consumers that do not use libbpf's
//! loop wait on their share of the buffers through one.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::{Error, Result};

/// An epoll instance of a consumer's own.
pub(crate) struct Epoll(OwnedFd);

impl Epoll {
    pub(crate) fn new() -> Result<Epoll> {
        // SAFETY: epoll_create1 has no preconditions.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Error::runtime(format!(
                "epoll_create1 failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a new descriptor that nothing else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn add(&self, fd: RawFd, data: u64) -> Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: data,
        };
        // SAFETY: both descriptors are open and `event` is valid for the call.
        let rc =
            unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) };
        if rc < 0 {
            return Err(Error::setup(format!(
                "epoll_ctl failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// Blocks until a buffer is ready; 0 when interrupted.
    pub(crate) fn wait(&self, events: &mut [libc::epoll_event]) -> Result<usize> {
        // SAFETY: `events` is valid for as many entries as passed.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                -1,
            )
        };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(Error::runtime(format!("epoll_wait failed: {err}")));
        }
        Ok(n as usize)
    }
}
