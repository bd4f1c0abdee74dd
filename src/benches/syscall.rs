//! The syscall family of `perf bench syscall`: getppid, getpgid, fork, execve.

use std::ffi::CString;

use super::{Benchmark, ReportStyle, RunConfig};
use crate::error::{Error, Result};
use crate::report::perf;
use crate::runner::{FixedRun, ProducerCtx, Workload};

pub static BENCHES: &[&dyn Benchmark] = &[
    &SyscallBench {
        call: Call::Getppid,
    },
    &SyscallBench {
        call: Call::Getpgid,
    },
    &SyscallBench { call: Call::Fork },
    &SyscallBench { call: Call::Execve },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Getppid,
    Getpgid,
    Fork,
    Execve,
}

struct SyscallBench {
    call: Call,
}

/// What the child of `syscall-execve` runs.
const EXECVE_PATH: &str = "/bin/true";

impl Benchmark for SyscallBench {
    fn name(&self) -> &'static str {
        match self.call {
            Call::Getppid => "syscall-basic",
            Call::Getpgid => "syscall-getpgid",
            Call::Fork => "syscall-fork",
            Call::Execve => "syscall-execve",
        }
    }

    fn description(&self) -> &'static str {
        match self.call {
            Call::Getppid => "getppid(2) in a loop, as perf bench syscall basic",
            Call::Getpgid => "getpgid(2) in a loop, as perf bench syscall getpgid",
            Call::Fork => {
                "fork(2), the child exits at once, the parent waits: perf bench syscall fork"
            }
            Call::Execve => {
                "fork(2) and the child execs /bin/true, the parent waits: perf bench syscall execve"
            }
        }
    }

    fn setup(&self, _config: &RunConfig) -> Result<Box<dyn Workload>> {
        Ok(match self.call {
            Call::Getppid => Box::new(Simple(libc::SYS_getppid)),
            Call::Getpgid => Box::new(Simple(libc::SYS_getpgid)),
            Call::Fork => Box::new(Fork { exec: None }),
            Call::Execve => {
                let path = CString::new(EXECVE_PATH).map_err(|e| Error::setup(e.to_string()))?;
                if !std::path::Path::new(EXECVE_PATH).exists() {
                    return Err(Error::setup(format!(
                        "{EXECVE_PATH} is missing: syscall-execve execs it"
                    )));
                }
                Box::new(Fork { exec: Some(path) })
            }
        })
    }

    fn report_style(&self) -> ReportStyle {
        ReportStyle::Ops { per_cpu: false }
    }

    fn report_fixed(&self, _config: &RunConfig, run: &FixedRun) -> Vec<String> {
        let (name, call) = match self.call {
            Call::Getppid => ("basic", "getppid()"),
            Call::Getpgid => ("getpgid", "getpgid()"),
            Call::Fork => ("fork", "fork()"),
            Call::Execve => ("execve", "execve()"),
        };
        let [total, blank] = perf::total_time(run);
        vec![
            perf::running("syscall", name),
            format!("# Executed {} {call} calls", run.ops),
            total,
            blank,
            perf::figure(perf::usecs_per_op(run, run.ops), "usecs/op"),
            perf::ops_per_sec(run, run.ops),
        ]
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
