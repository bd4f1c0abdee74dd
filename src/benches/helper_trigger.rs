//! The trigger a helper benchmark's BPF body runs from, chosen once for
//! every family whose body upstream runs from a program on getpgid
//! (`bpf/helper_trigger.h` defines each body's entry points).
//!
//! Upstream's trigger is the default: fentry on the getpgid syscall (or its
//! sys_enter tracepoint), the producers calling getpgid() of no process
//! ([`NO_SUCH_PID`]). Where the kernel refuses it (this host refuses tracing
//! programs: EPERM), the same body runs from a raw_tp program that each
//! producer runs with BPF_PROG_TEST_RUN, one run per trigger; the workload
//! says which ([`TriggerUsed`]), and the run's header line, `--probe` and the
//! result file repeat it.

use libbpf_rs::skel::Skel;
use libbpf_rs::{Link, ProgramInput};

use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::{ProducerCtx, Workload};
use crate::trigger_path::{Trigger, TriggerUsed};

/// Upstream's trigger of most helper and map benchmarks: fentry on the
/// getpgid system call.
pub const FENTRY_GETPGID: Trigger = Trigger {
    name: "fentry-getpgid",
    words: "fentry on getpgid",
    needs: Needs::Link,
    fallback: false,
};

/// Upstream's trigger of htab-mem and strncmp: the getpgid tracepoint.
pub const TP_GETPGID: Trigger = Trigger {
    name: "tp-getpgid",
    words: "tracepoint syscalls:sys_enter_getpgid",
    needs: Needs::TracepointEvent,
    fallback: false,
};

/// The fallback: the same body in a raw_tp program each producer runs with
/// BPF_PROG_TEST_RUN.
pub const RAWTP_TEST_RUN: Trigger = Trigger {
    name: "rawtp-test-run",
    words: "raw_tp program run by BPF_PROG_TEST_RUN",
    needs: Needs::RunProgram,
    fallback: true,
};

/// What the producers ask getpgid() for: a pid no task has, so that the
/// kernel's lookup finds nothing and the call fails with ESRCH. Upstream's
/// producers for these benchmarks (`bench_strncmp.c`, `bench_bpf_loop.c`)
/// call `syscall(__NR_getpgid)` with no argument, and the register holds
/// what glibc's wrapper left there: -144 for every call of the 6.12 runner
/// (`perf record -e raw_syscalls:sys_enter`), each one failing with ESRCH.
/// trig-syscall-count's producer, whose register holds its thread id, makes
/// a lookup that finds its task instead: 50 to 70 ns more per call on a
/// 2-CPU EPYC VM, about a fifth of the system call.
const NO_SUCH_PID: libc::c_long = -1;

/// A body of `bpf/helper_trigger.h`: its name there, the trigger upstream
/// runs it from, and the operations one trigger makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Body {
    /// `body_<name>()`, whose entry points are `count_<name>_fentry`,
    /// `count_<name>_tp` and `drive_<name>`.
    pub name: &'static str,
    /// Upstream's trigger; the fallback itself for a benchmark that measures
    /// the fallback alone.
    pub upstream: Trigger,
    /// What one trigger counts as operations (the body's calls of the
    /// helper: CALLS_PER_TRIGGER for the loops).
    pub ops_per_trigger: u64,
    /// The kernel functions the body calls, checked before loading so that
    /// an older kernel's refusal names what it lacks.
    pub calls: &'static [KernelFunction],
}

/// A helper or kfunc a body calls, and the first release that has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelFunction {
    /// For messages: "the bpf_loop helper".
    pub what: &'static str,
    pub name: &'static str,
    pub since: &'static str,
}

/// The first of `calls` the running kernel lacks, as a refusal; none where
/// the kernel's BTF cannot be read (loading then says what it can).
pub fn lacking(calls: &[KernelFunction]) -> Result<()> {
    match calls
        .iter()
        .find(|call| kernel::btf_has_func(call.name) == Some(false))
    {
        Some(call) => Err(Error::unsupported(kernel::needs_linux(
            &format!("{} needs", call.what),
            call.since,
        ))),
        None => Ok(()),
    }
}

impl Body {
    /// The program of the body's entry point for `path`.
    fn program(&self, path: Trigger) -> String {
        match path {
            FENTRY_GETPGID => format!("count_{}_fentry", self.name),
            TP_GETPGID => format!("count_{}_tp", self.name),
            RAWTP_TEST_RUN => format!("drive_{}", self.name),
            // Another family's trigger: no body has an entry for it, and
            // loading the name says so.
            other => format!("count_{}_{}", self.name, other.name),
        }
    }
}

/// Loads the body's entry for upstream's trigger and attaches it; where the
/// kernel refuses it, loads the raw_tp fallback instead. `load(program)`
/// opens, configures and loads the object with that one program on.
pub fn load<S: Skel<'static>>(
    body: &Body,
    mut load: impl FnMut(&str) -> std::result::Result<bpf::Owned<S>, libbpf_rs::Error>,
) -> Result<(bpf::Owned<S>, Option<Link>, TriggerUsed)> {
    lacking(body.calls)?;
    let upstream = body.upstream;
    let refused = match upstream {
        RAWTP_TEST_RUN => None,
        _ => match attached(body, &mut load) {
            Ok((skel, link)) => {
                let used = TriggerUsed {
                    path: upstream,
                    refused: None,
                };
                return Ok((skel, Some(link), used));
            }
            // A refusal this kernel makes of the program type: fall back.
            Err(Error::Unsupported(why)) => Some((upstream, why)),
            Err(err) => return Err(err),
        },
    };
    let program = body.program(RAWTP_TEST_RUN);
    let skel = load(&program).map_err(|e| bpf::load_error(&program, &e))?;
    let used = TriggerUsed {
        path: RAWTP_TEST_RUN,
        refused,
    };
    Ok((skel, None, used))
}

/// The body on upstream's trigger, loaded and attached.
fn attached<S: Skel<'static>>(
    body: &Body,
    load: &mut impl FnMut(&str) -> std::result::Result<bpf::Owned<S>, libbpf_rs::Error>,
) -> Result<(bpf::Owned<S>, Link)> {
    if body.upstream == TP_GETPGID {
        // The tracepoint's id is read from tracefs.
        kernel::ensure_tracefs().map_err(Error::unsupported)?;
    }
    let program = body.program(body.upstream);
    let skel = load(&program).map_err(|e| bpf::load_error(&program, &e))?;
    let link = find(&*skel, &program)?
        .attach()
        .map_err(|e| bpf::attach_error(&program, &e))?;
    Ok((skel, link))
}

fn find<'a, S: Skel<'static>>(skel: &'a S, program: &str) -> Result<libbpf_rs::ProgramMut<'a>> {
    skel.object()
        .progs_mut()
        .find(|p| p.name() == program)
        .ok_or_else(|| Error::setup(format!("the helper object has no program {program}")))
}

/// A helper benchmark after set-up: producers trigger the body, the body
/// counts its hits per CPU.
pub struct HelperWorkload<S> {
    // Fields drop in order: the link detaches before the object is closed.
    link: Option<Link>,
    hits: HitCounters,
    body: Body,
    skel: bpf::Owned<S>,
}

impl<S> HelperWorkload<S> {
    /// `hits` reads the counters of `skel`'s `.bss`.
    pub fn new(
        skel: bpf::Owned<S>,
        link: Option<Link>,
        hits: HitCounters,
        body: Body,
    ) -> HelperWorkload<S> {
        HelperWorkload {
            link,
            hits,
            body,
            skel,
        }
    }

    /// The loaded object, for a family that reads what its body kept.
    pub fn skel(&self) -> &bpf::Owned<S> {
        &self.skel
    }
}

impl<S: Skel<'static> + Sync> Workload for HelperWorkload<S> {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let ops = self.body.ops_per_trigger;
        if self.link.is_some() {
            // SAFETY: getpgid only reads a process group; of no process, it
            // fails with ESRCH.
            let getpgid = || unsafe { libc::syscall(libc::SYS_getpgid, NO_SUCH_PID) };
            if ops == 1 {
                ctx.run(|| {
                    getpgid();
                });
                return Ok(());
            }
            return ctx.try_run(|| {
                getpgid();
                Ok(ops)
            });
        }
        let program = self.body.program(RAWTP_TEST_RUN);
        let driver = find(&*self.skel, &program)?;
        ctx.try_run(|| {
            // No input, no output: what raw_tp test runs take.
            driver.test_run(ProgramInput::default()).map_err(|e| {
                Error::runtime(format!("BPF_PROG_TEST_RUN of {program} failed: {e:#}"))
            })?;
            Ok(ops)
        })
    }

    fn read(&self, _ops: u64) -> Readings {
        self.hits.readings()
    }
}
