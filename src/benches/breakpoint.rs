//! The hardware-breakpoint family of `perf bench breakpoint`: thread creation
//! under inheritable breakpoints, and toggling a breakpoint that many threads
//! inherited.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use libbpf_rs::libbpf_sys;

use super::memory;
use super::{Benchmark, HitTiming, Info, ProducersAlias};
use crate::config::{BenchOption, NumberOption, RunConfig, MAX_THREADS};
use crate::error::{Error, Result};
use crate::lines::PerfPiece::{Calls, Param, Producers, Text};
use crate::lines::{Lines, PerfFormat};
use crate::perf_event;
use crate::runner::{ProducerCtx, SetUp, Workload};

/// Debug address registers of an x86 CPU: the most breakpoints a task can hold.
pub const SLOTS: u64 = 4;
/// Threads all batches may have at once (one batch or one kind of helper
/// may have `config::MAX_THREADS`).
const MAX_THREADS_AT_ONCE: u64 = 16_384;

const BREAKPOINTS: NumberOption = NumberOption {
    long: "breakpoints",
    short: Some('b'),
    value_name: "N",
    help: "Inheritable hardware breakpoints installed before the threads start",
    default: 1,
    min: 0,
    max: SLOTS,
    why_max: "an x86 CPU has 4 hardware breakpoint slots, its debug address registers",
};
const THREADS: NumberOption = NumberOption {
    long: "threads",
    short: Some('t'),
    value_name: "N",
    help: "Threads each producer creates and joins per batch",
    default: 1,
    min: 1,
    max: MAX_THREADS,
    why_max: "",
};
const PASSIVE: NumberOption = NumberOption {
    long: "passive",
    short: None,
    value_name: "N",
    help: "Threads blocked on a futex while the breakpoint is toggled",
    default: 0,
    min: 0,
    max: MAX_THREADS,
    why_max: "",
};
const ACTIVE: NumberOption = NumberOption {
    long: "active",
    short: None,
    value_name: "N",
    help: "Threads spinning while the breakpoint is toggled",
    default: 0,
    min: 0,
    max: MAX_THREADS,
    why_max: "",
};

// --- breakpoints -----------------------------------------------------------

const HW_BREAKPOINT_RW: u32 = 3;
const HW_BREAKPOINT_LEN_1: u64 = 1;

/// Inheritable read/write breakpoints, one per watched byte, on the calling
/// thread: threads it creates afterwards inherit them.
pub struct Breakpoints {
    fds: Vec<OwnedFd>,
    /// The watched bytes; boxed so that their addresses never move.
    watched: Box<[u8]>,
}

impl Breakpoints {
    pub fn install(count: usize) -> Result<Breakpoints> {
        let watched = vec![0u8; count].into_boxed_slice();
        let fds = watched
            .iter()
            .map(|byte| open_breakpoint(byte as *const u8))
            .collect::<Result<Vec<_>>>()?;
        Ok(Breakpoints { fds, watched })
    }

    /// The address of the `i`th watched byte.
    pub fn watched(&self, i: usize) -> *const u8 {
        &self.watched[i]
    }

    /// How many times the `i`th breakpoint fired, in this thread and in every
    /// thread that inherited it.
    pub fn count(&self, i: usize) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: reading 8 bytes into a u64 from a perf event fd we own.
        let n = unsafe {
            libc::read(
                self.fds[i].as_raw_fd(),
                (&mut value as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n != std::mem::size_of::<u64>() as isize {
            let err = std::io::Error::last_os_error();
            return Err(Error::runtime(format!(
                "cannot read the breakpoint count: {err}"
            )));
        }
        Ok(value)
    }

    fn fd(&self, i: usize) -> RawFd {
        self.fds[i].as_raw_fd()
    }
}

fn open_breakpoint(addr: *const u8) -> Result<OwnedFd> {
    let mut attr = perf_event::attr(libbpf_sys::PERF_TYPE_BREAKPOINT, 0);
    attr.set_inherit(1);
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    attr.bp_type = HW_BREAKPOINT_RW;
    attr.__bindgen_anon_3.bp_addr = addr as u64;
    attr.__bindgen_anon_4.bp_len = HW_BREAKPOINT_LEN_1;
    perf_event::open(&attr, perf_event::Target::CallingThread).map_err(breakpoint_error)
}

fn breakpoint_error(err: std::io::Error) -> Error {
    match err.raw_os_error() {
        Some(libc::ENOSPC) => Error::unsupported(
            "no hardware breakpoint slots free (ENOSPC: another user holds them)",
        ),
        Some(libc::ENODEV | libc::ENOENT | libc::EOPNOTSUPP) => {
            Error::unsupported(format!("no hardware breakpoint support ({err})"))
        }
        Some(libc::EACCES | libc::EPERM) => Error::Permission(format!(
            "perf_event_open refused a breakpoint ({err}): run as root or lower kernel.perf_event_paranoid"
        )),
        _ => Error::setup(format!("cannot install a hardware breakpoint: {err}")),
    }
}

// --- futex -------------------------------------------------------------------

// Shared futexes (no FUTEX_PRIVATE_FLAG), as perf's benchmarks use them: on
// each wait and wake the kernel looks up and pins the page behind the word,
// work a private futex skips, paid by every passive thread.
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: the futex word is a valid, aligned u32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32, count: usize) {
    let count = i32::try_from(count).unwrap_or(i32::MAX);
    // SAFETY: as above.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count);
    }
}

/// Blocks until `done` is set, as perf's passive threads do.
fn wait_until_done(done: &AtomicU32) {
    while done.load(Ordering::Relaxed) == 0 {
        futex_wait(done, 0);
    }
}

// --- breakpoint-thread -------------------------------------------------------

pub static BENCHES: &[&dyn Benchmark] = &[
    &ThreadBench {
        info: Info {
            channels: &[crate::channels::OPERATIONS],
            figures: &[crate::figures::OPERATIONS],
            lines: Lines::perf(PerfFormat {
                collection: "breakpoint",
                name: "thread",
                // perf prints the batch count here, though it says threads.
                executed: &[
                    Text("# Created/joined "),
                    Calls,
                    Text(" threads with "),
                    Param(BREAKPOINTS),
                    Text(" breakpoints and "),
                    Producers,
                    Text(" parallelism"),
                ],
                per_cpu: true,
                ops_per_sec: false,
                usecs_grouped: false,
            }),
            options: &[BenchOption::Number(BREAKPOINTS), BenchOption::Number(THREADS)],
            producers_alias: Some(ProducersAlias::Parallelism),
            timing: HitTiming::Refused(
                "one operation creates and joins a batch of --threads threads; its time is not one hit's",
            ),
            ..Info::hits(
                "breakpoint-thread",
                "create and join threads under inheritable hardware breakpoints: perf bench breakpoint thread",
            )
        },
    },
    &EnableBench {
        info: Info {
            channels: &[crate::channels::OPERATIONS],
            figures: &[crate::figures::OPERATIONS],
            lines: Lines::perf(PerfFormat {
                collection: "breakpoint",
                name: "enable",
                executed: &[
                    Text("# Enabled/disabled breakpoint "),
                    Calls,
                    Text(" time with "),
                    Param(PASSIVE),
                    Text(" passive and "),
                    Param(ACTIVE),
                    Text(" active threads"),
                ],
                per_cpu: false,
                ops_per_sec: false,
                usecs_grouped: false,
            }),
            options: &[BenchOption::Number(PASSIVE), BenchOption::Number(ACTIVE)],
            timing: HitTiming::PerHit,
            ..Info::hits(
                "breakpoint-enable",
                "disable and enable an inheritable breakpoint held by passive and active threads: perf bench breakpoint enable",
            )
        },
    },
];

struct ThreadBench {
    info: Info,
}

impl Benchmark for ThreadBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let at_once = config.params.number(&THREADS) * config.producers as u64;
        if at_once > MAX_THREADS_AT_ONCE {
            return Err(Error::usage(format!(
                "--threads times --producers is {at_once} threads at once; the limit is {MAX_THREADS_AT_ONCE}"
            )));
        }
        let given = format!(
            "--threads {} and -p {}",
            at_once / config.producers.max(1) as u64,
            config.producers
        );
        check_threads(self.info.name, &given, at_once, "--threads")
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let breakpoints = Breakpoints::install(config.params.number(&BREAKPOINTS) as usize)?;
        Ok(SetUp::producers(ThreadBatches {
            _breakpoints: breakpoints,
            threads: config.params.number(&THREADS) as usize,
        }))
    }
}

/// Producers create `threads` threads blocked on a futex, release and join
/// them, again and again; the breakpoints are inherited by every one.
struct ThreadBatches {
    _breakpoints: Breakpoints,
    threads: usize,
}

extern "C" fn passive_thread(arg: *mut c_void) -> *mut c_void {
    // SAFETY: arg is the batch's `done` word, which outlives every thread of the batch.
    let done = unsafe { &*(arg as *const AtomicU32) };
    wait_until_done(done);
    std::ptr::null_mut()
}

impl ThreadBatches {
    /// One batch; on failure, the threads already made are released and joined.
    fn batch(&self, handles: &mut Vec<libc::pthread_t>) -> Result<u64> {
        let done = AtomicU32::new(0);
        let arg = &done as *const AtomicU32 as *mut c_void;
        handles.clear();
        let mut failure = None;
        for _ in 0..self.threads {
            // SAFETY: a zeroed pthread_t is overwritten by pthread_create.
            let mut handle: libc::pthread_t = unsafe { std::mem::zeroed() };
            // SAFETY: default attributes, as perf uses; the body only reads `done`.
            let rc =
                unsafe { libc::pthread_create(&mut handle, std::ptr::null(), passive_thread, arg) };
            if rc != 0 {
                failure = Some(std::io::Error::from_raw_os_error(rc));
                break;
            }
            handles.push(handle);
        }
        done.store(1, Ordering::Relaxed);
        futex_wake(&done, handles.len());
        for &handle in handles.iter() {
            // SAFETY: joining a thread we created and have not joined.
            unsafe { libc::pthread_join(handle, std::ptr::null_mut()) };
        }
        match failure {
            None => Ok(handles.len() as u64),
            Some(err) => Err(Error::runtime(format!(
                "cannot create a thread ({err}): lower --threads or --producers"
            ))),
        }
    }
}

impl Workload for ThreadBatches {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let mut handles = Vec::with_capacity(self.threads);
        ctx.try_run(|| self.batch(&mut handles))
    }
}

/// Refuses more threads at once than the kernel lets bench start now, or
/// than half the memory holds (a kernel stack and a 64 KiB stack each).
fn check_threads(bench: &str, given: &str, count: u64, smaller: &str) -> Result<()> {
    let tasks = memory::Tasks {
        given,
        count,
        starts: &format!("starts {count} threads at once"),
        bytes_each: 128 << 10,
        each: "a thread's kernel stack, task and stack, for each",
        smaller,
    };
    memory::check_tasks(bench, tasks)
}

// --- breakpoint-enable -------------------------------------------------------

struct EnableBench {
    info: Info,
}

impl Benchmark for EnableBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if config.producers != 1 {
            return Err(Error::usage(
                "breakpoint-enable toggles one breakpoint from one thread, as perf does: -p must be 1",
            ));
        }
        let (passive, active) = (
            config.params.number(&PASSIVE),
            config.params.number(&ACTIVE),
        );
        let given = format!("--passive {passive} and --active {active}");
        check_threads(
            self.info.name,
            &given,
            passive + active,
            "--passive or --active",
        )
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        // The producer opens its own breakpoint; try one here so that a kernel
        // or CPU without them is told before anything runs.
        drop(Breakpoints::install(1)?);
        Ok(SetUp::producers(Toggle {
            passive: config.params.number(&PASSIVE) as usize,
            active: config.params.number(&ACTIVE) as usize,
        }))
    }
}

/// The producer opens one breakpoint on its own thread and starts the passive
/// and active threads, which inherit it, then toggles it: as perf's main
/// thread does. Who owns the event matters: disabling a task's event calls
/// into the CPU that task last ran on.
struct Toggle {
    passive: usize,
    active: usize,
}

/// Disables and enables the breakpoint: one operation.
fn toggle(fd: RawFd) -> Result<()> {
    perf_event::disable(fd)
        .and_then(|()| perf_event::enable(fd))
        .map_err(|err| Error::runtime(format!("cannot toggle the breakpoint: {err}")))
}

impl Workload for Toggle {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let breakpoint = Breakpoints::install(1)?;
        let done = AtomicU32::new(0);
        std::thread::scope(|scope| {
            let mut result = Ok(());
            for i in 0..self.passive + self.active {
                let done = &done;
                let spawned = std::thread::Builder::new()
                    .stack_size(64 * 1024)
                    .spawn_scoped(scope, move || {
                        if i < self.passive {
                            wait_until_done(done);
                        } else {
                            while done.load(Ordering::Relaxed) == 0 {
                                std::hint::spin_loop();
                            }
                        }
                    });
                if let Err(err) = spawned {
                    result = Err(Error::runtime(format!(
                        "cannot create a helper thread ({err}): lower --passive or --active"
                    )));
                    break;
                }
            }
            if result.is_ok() {
                // Let the passive threads block before the start line, as perf does.
                std::thread::sleep(Duration::from_millis(10));
                let fd = breakpoint.fd(0);
                result = ctx.try_run(|| toggle(fd).map(|()| 1));
            }
            done.store(1, Ordering::Relaxed);
            futex_wake(&done, usize::MAX);
            result
        })
    }
}
