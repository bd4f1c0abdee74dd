//! The sleeper processes of `local-storage-tasks-trace`: forked children
//! that sleep 0 to 3 seconds and call getpgid(), forever, all in step. Each asks the
//! kernel to kill it when its parent dies (PR_SET_PDEATHSIG), so that no
//! sleeper outlives bench however bench ends; dropping [`Sleepers`] kills
//! and reaps them all before that.
//!
//! A child of a threaded process may only make async-signal-safe calls
//! until it execs, and these never exec: the child's code below makes
//! system calls alone (no allocation, no formatting), and rand(), whose
//! lock no thread of bench ever takes.

use crate::error::{Error, Result};
use crate::interrupt;

/// The children forked, killed and reaped on drop.
pub struct Sleepers {
    pids: Vec<libc::pid_t>,
}

impl Sleepers {
    pub fn none() -> Sleepers {
        Sleepers { pids: Vec::new() }
    }

    /// Forks `count` sleepers; on a failure, those forked so far are killed.
    ///
    /// PR_SET_PDEATHSIG fires when the thread that forked a child ends, not
    /// the process: call this from a thread that lives as long as the run.
    pub fn spawn(count: usize) -> Result<Sleepers> {
        let mut sleepers = Sleepers {
            pids: Vec::with_capacity(count),
        };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        for i in 0..count {
            // Thousands of forks take seconds: a signal stops between them
            // (`sleepers` drops, killing those forked).
            if i % 256 == 0 {
                interrupt::check("forking the sleeper processes")?;
            }
            // SAFETY: the child runs `sleep_and_call` alone, which makes
            // async-signal-safe system calls and never returns.
            match unsafe { libc::fork() } {
                -1 => {
                    let err = std::io::Error::last_os_error();
                    // `sleepers` drops here, killing those already forked.
                    return Err(Error::setup(format!(
                        "cannot fork sleeper process {} of {count}: {err}",
                        i + 1
                    )));
                }
                0 => sleep_and_call(parent),
                pid => sleepers.pids.push(pid),
            }
        }
        Ok(sleepers)
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for &pid in &self.pids {
            // SAFETY: the pid is our own child's, not yet reaped: it cannot
            // have been reused for another process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for &pid in &self.pids {
            let mut status = 0;
            // SAFETY: reaps our own child; EINTR is retried.
            while unsafe { libc::waitpid(pid, &mut status, 0) } == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
    }
}

/// A sleeper's life: die with the parent, close what it inherited, then
/// sleep 0 to 3 seconds (the same draws in every sleeper) and call
/// getpgid(), forever.
fn sleep_and_call(parent: libc::pid_t) -> ! {
    // SAFETY: every call below is a system call (or a wrapper of one) that
    // is async-signal-safe, and rand(), whose lock is free; nothing
    // allocates.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
            || libc::getppid() != parent
        {
            // The parent died before the request took hold.
            libc::_exit(1);
        }
        // A terminal's Ctrl-C reaches the whole process group: let it end
        // a sleeper at once rather than run the parent's handler.
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        // The parent's descriptors (BPF links, maps, outputs) are not the
        // sleeper's to hold open. close_range is Linux 5.9+; an older
        // kernel leaves them open, which only delays their release until
        // the sleepers are killed.
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
        loop {
            // The C library's rand(), never seeded: every sleeper draws the
            // same pauses, so that they wake together, as the kernel
            // runner's do (its children inherit one unseeded state). Its
            // lock is free: nothing in bench calls rand().
            let pause = libc::timespec {
                tv_sec: (libc::rand() % 4) as libc::time_t,
                tv_nsec: 0,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
            libc::syscall(libc::SYS_getpgid, -1 as libc::c_long);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `pid` is a live (not yet reaped) process.
    fn exists(pid: libc::pid_t) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn sleepers_live_until_dropped() {
        let sleepers = Sleepers::spawn(3).unwrap();
        assert_eq!(sleepers.pids.len(), 3);
        let pids = sleepers.pids.clone();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(pids.iter().all(|&pid| exists(pid)), "{pids:?}");
        drop(sleepers);
        assert!(pids.iter().all(|&pid| !exists(pid)), "{pids:?}");
    }
}
