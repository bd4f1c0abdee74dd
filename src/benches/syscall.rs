//! The syscall family of `perf bench syscall`: getppid, getpgid, fork, execve.

use std::ffi::CString;

use super::{Benchmark, Info};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::lines::PerfPiece::{Ops, Text};
use crate::lines::{Lines, PerfFormat, PerfPiece as Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};

pub static BENCHES: &[&dyn Benchmark] = &[
    &syscall(
        "syscall-basic",
        "basic",
        &[Text("# Executed "), Ops, Text(" getppid() calls")],
        Call::Simple(libc::SYS_getppid),
        "getppid(2) in a loop, as perf bench syscall basic",
    ),
    &syscall(
        "syscall-getpgid",
        "getpgid",
        &[Text("# Executed "), Ops, Text(" getpgid() calls")],
        Call::Simple(libc::SYS_getpgid),
        "getpgid(2) in a loop, as perf bench syscall getpgid",
    ),
    &syscall(
        "syscall-fork",
        "fork",
        &[Text("# Executed "), Ops, Text(" fork() calls")],
        Call::Fork,
        "fork(2), the child exits at once, the parent waits: perf bench syscall fork",
    ),
    &syscall(
        "syscall-execve",
        "execve",
        &[Text("# Executed "), Ops, Text(" execve() calls")],
        Call::Execve,
        "fork(2) and the child execs /bin/true, the parent waits: perf bench syscall execve",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    /// A syscall without side effects, by number.
    Simple(libc::c_long),
    Fork,
    Execve,
}

struct SyscallBench {
    info: Info,
    call: Call,
}

const fn syscall(
    name: &'static str,
    perf_name: &'static str,
    executed: &'static [Piece],
    call: Call,
    description: &'static str,
) -> SyscallBench {
    SyscallBench {
        info: Info {
            channels: &[crate::channels::OPERATIONS],
            figures: &[crate::figures::OPERATIONS],
            lines: Lines::perf(PerfFormat {
                collection: "syscall",
                name: perf_name,
                executed,
                per_cpu: false,
                ops_per_sec: true,
                usecs_grouped: false,
            }),
            ..Info::hits(name, description).timed_per_hit()
        },
        call,
    }
}

/// What the child of `syscall-execve` runs.
const EXECVE_PATH: &str = "/bin/true";

impl Benchmark for SyscallBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, _config: &RunConfig) -> Result<SetUp> {
        Ok(match self.call {
            Call::Simple(nr) => SetUp::producers(Simple(nr)),
            Call::Fork => SetUp::producers(Fork { exec: None }),
            Call::Execve => {
                let path = CString::new(EXECVE_PATH).map_err(|e| Error::setup(e.to_string()))?;
                if !std::path::Path::new(EXECVE_PATH).exists() {
                    return Err(Error::setup(format!(
                        "{EXECVE_PATH} is missing: syscall-execve execs it"
                    )));
                }
                SetUp::producers(Fork { exec: Some(path) })
            }
        })
    }
}

/// A syscall without side effects, by number.
struct Simple(libc::c_long);

impl Workload for Simple {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let nr = self.0;
        // SAFETY: getppid and getpgid(0) only read the caller's process ids.
        ctx.run(|| unsafe {
            libc::syscall(nr, 0);
        });
        Ok(())
    }
}

/// fork, optionally exec in the child, and wait for it.
struct Fork {
    exec: Option<CString>,
}

impl Workload for Fork {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // Everything the child touches is prepared before fork: after it, the
        // child of a threaded process may only make async-signal-safe calls.
        let argv: Vec<*const libc::c_char> = match &self.exec {
            Some(path) => vec![path.as_ptr(), std::ptr::null()],
            None => Vec::new(),
        };
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        ctx.try_run(|| {
            // SAFETY: the child only calls execve and _exit.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                let err = std::io::Error::last_os_error();
                return Err(Error::runtime(format!("fork failed: {err}")));
            }
            if pid == 0 {
                // SAFETY: argv and envp are NULL-terminated arrays of valid strings.
                unsafe {
                    if let Some(path) = &self.exec {
                        libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
                    }
                    libc::_exit(if self.exec.is_some() { 127 } else { 0 });
                }
            }
            let mut status = 0;
            // SAFETY: waiting for our own child.
            if unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
                let err = std::io::Error::last_os_error();
                return Err(Error::runtime(format!("waitpid failed: {err}")));
            }
            if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                return Err(Error::runtime(match &self.exec {
                    Some(_) => {
                        format!("the child could not exec {EXECVE_PATH} (status {status:#x})")
                    }
                    None => format!("the forked child failed (status {status:#x})"),
                }));
            }
            Ok(1)
        })
    }
}
