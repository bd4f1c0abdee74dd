//! What the threads of a run share: their counters, the stop flag, the
//! start line, the consumers' slots and the signal that wakes a consumer
//! blocked in a system call when the run stops.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use super::hooks::OpTiming;
use crate::error::{Error, Result};
use crate::interrupt;

/// One producer's counts, alone on their cache line so that producers never
/// write to a line another producer writes. `ops` is updated as the producer
/// goes; `calls` (operation bodies run) once, when it stops.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct OpCounter {
    pub(super) ops: AtomicU64,
    pub(super) calls: AtomicU64,
}

/// A stop request: the run's own (its end, or a failure) or the user's
/// (Ctrl-C, SIGTERM), which every run obeys.
#[derive(Default)]
pub(super) struct StopFlag {
    flag: AtomicBool,
}

impl StopFlag {
    #[inline(always)]
    pub(super) fn is_set(&self) -> bool {
        self.flag.load(Relaxed) || interrupt::received().is_some()
    }

    pub(super) fn set(&self) {
        self.flag.store(true, Relaxed);
        interrupt::wake_sleepers();
    }

    /// Wakes the sleepers to look again, without requesting a stop.
    pub(super) fn wake(&self) {
        interrupt::wake_sleepers();
    }

    /// Sleeps until `deadline`; false when woken early by a stop request.
    pub(super) fn sleep_until(&self, deadline: Instant) -> bool {
        interrupt::sleep_until(deadline, || self.is_set())
    }

    /// Waits until `done()` holds or a stop is requested.
    pub(super) fn wait_for(&self, done: impl Fn() -> bool) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        interrupt::sleep_until(far, || done() || self.is_set());
    }

    /// Waits until `done()` holds, stop request or not (each [`Self::wake`]
    /// makes it look again).
    pub(super) fn wait_regardless(&self, done: impl Fn() -> bool) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        interrupt::sleep_until(far, done);
    }
}

/// Holds every thread at the start line until all are pinned and set.
#[derive(Default)]
pub(super) struct StartGate {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartGate {
    pub(super) fn arrive_and_wait(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        self.changed.notify_all();
        while !state.1 {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(super) fn wait_arrivals(&self, count: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 < count {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(super) fn open(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 = true;
        self.changed.notify_all();
    }
}

/// Where the runner finds a consumer thread to interrupt it.
#[derive(Default)]
pub(super) struct ConsumerSlot {
    pub(super) thread: Mutex<Option<libc::pthread_t>>,
    /// Set once the thread has nothing left to do but exit.
    pub(super) done: AtomicBool,
}

/// The signal that interrupts a consumer's blocking system call when the run
/// stops. Its handler does nothing and is installed without SA_RESTART, so
/// the call fails with EINTR instead of resuming.
fn wake_signal() -> i32 {
    libc::SIGRTMIN()
}

extern "C" fn on_wake_signal(_signal: libc::c_int) {}

pub(super) fn install_wake_handler() -> Result<()> {
    static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            // SAFETY: a zeroed sigaction with an empty mask and a handler
            // that touches nothing is a valid argument.
            let rc = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_wake_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(wake_signal(), &action, std::ptr::null_mut())
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            }
        })
        .clone()
        .map_err(|e| Error::runtime(format!("cannot install the consumers' wake-up signal: {e}")))
}

/// What every thread of a run shares.
pub(super) struct Shared {
    pub(super) stop: StopFlag,
    pub(super) gate: StartGate,
    pub(super) counters: Vec<OpCounter>,
    pub(super) consumers: Vec<ConsumerSlot>,
    pub(super) producers_done: AtomicUsize,
    /// When the last producer to finish its fixed share did.
    pub(super) last_finish: Mutex<Option<Instant>>,
    pub(super) failure: Mutex<Option<Error>>,
    /// `--latency`: what times the producers' operations.
    pub(super) timing: Option<Arc<dyn OpTiming>>,
}

impl Shared {
    pub(super) fn total_ops(&self) -> u64 {
        self.counters.iter().map(|c| c.ops.load(Relaxed)).sum()
    }

    pub(super) fn total_calls(&self) -> u64 {
        self.counters.iter().map(|c| c.calls.load(Relaxed)).sum()
    }

    /// A producer has done its share: the last one to finish ends a
    /// fixed-work run's time.
    pub(super) fn producer_finished(&self) {
        let now = Instant::now();
        let mut last = self.last_finish.lock().unwrap_or_else(|e| e.into_inner());
        *last = Some(last.map_or(now, |t| t.max(now)));
        drop(last);
        self.producers_done.fetch_add(1, Relaxed);
        self.stop.wake();
    }

    /// Records the first failure and stops everyone.
    pub(super) fn fail(&self, err: Error) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(err);
        drop(failure);
        self.stop.set();
    }

    pub(super) fn failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Interrupts the consumers until every one has returned. A signal that
    /// lands just before a consumer blocks is lost, hence the repetition.
    pub(super) fn wake_consumers_until_done(&self) {
        loop {
            let mut pending = false;
            for slot in &self.consumers {
                if slot.done.load(Relaxed) {
                    continue;
                }
                pending = true;
                let thread = *slot.thread.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(thread) = thread {
                    // SAFETY: the thread belongs to the enclosing scope and is
                    // not joined before this loop ends; signalling a thread
                    // that has just exited is harmless (ESRCH).
                    unsafe { libc::pthread_kill(thread, wake_signal()) };
                }
            }
            if !pending {
                return;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
}
