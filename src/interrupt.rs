//! Ctrl-C and SIGTERM. The first one asks every loop to stop, so that the run
//! detaches everything and reports what it measured; a second one writes the
//! files of the runs completed so far (their "last words", kept after each
//! run) and exits at once, and the kernel closes every link and perf event
//! with the process. A command that attaches nothing and measures nothing
//! (`history`, `compare`, `export`) ends at the first one ([`end_at_first`]).

use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, RwLock};
use std::time::Instant;

use crate::error::{Error, Result};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Every sleeper of the run waits here, so that the signal thread can wake
/// whoever is waiting without knowing who.
static LOCK: Mutex<()> = Mutex::new(());
static WAKE: Condvar = Condvar::new();
/// What a second signal does before it exits: write what was completed.
type LastWords = Box<dyn FnOnce() + Send>;
static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// Set by [`end_at_first`]: the first signal ends the process, saying so
/// with this.
static AT_FIRST: Mutex<Option<fn(&str)>> = Mutex::new(None);

/// For a command with nothing attached and no partial result to keep: from
/// now on the first signal ends the process at once (exit 130 or 143), `say`
/// given the signal's name; one that came already does so now. A file being
/// written in [`last_write`] is finished first; SQLite's journal undoes a
/// transaction cut short.
pub fn end_at_first(say: fn(&str)) {
    *AT_FIRST.lock().unwrap_or_else(|e| e.into_inner()) = Some(say);
    if let Some(signal) = received() {
        exit_now(signal, say);
    }
}

/// Detaches under way, each a reader: a second signal takes the writer's
/// side before it ends the process. The kernel removes a uprobe from a
/// process's memory under a killable lock, so a thread killed by the exit
/// in the middle of a detach leaves the probe behind for good ("failed to
/// unregister, leaking uprobe", from `__uprobe_unregister`); waiting for the
/// detach in hand (a grace period or two) and starting no other lets the
/// kernel close the rest with the process, after its memory is gone.
static DETACHING: RwLock<()> = RwLock::new(());

/// Runs `detach` (a link dropped, a workload torn down) so that a second
/// signal waits for its end before the process exits.
pub fn detaching<T>(detach: impl FnOnce() -> T) -> T {
    let _detaching = DETACHING.read().unwrap_or_else(|e| e.into_inner());
    detach()
}

/// Sets what a second signal does before exiting, in place of what was set.
pub fn set_last_words(words: LastWords) {
    *LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()) = Some(words);
}

/// Runs `write` (the final outputs) with the last words dropped, a second
/// signal meanwhile waiting for it to end: a file is never written twice at once.
pub fn last_write<T>(write: impl FnOnce() -> T) -> T {
    let mut words = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner());
    *words = None;
    write()
}

/// The second signal: writes what was completed, says so with `say` (given
/// the signal's name: the words are the report's), then ends the process
/// without waiting for the run (closing our descriptors detaches all).
fn exit_now(signal: i32, say: fn(&str)) -> ! {
    let words = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(words) = words {
        words();
    }
    say(signal_name(signal));
    // Held until the exit: no detach starts after the one in hand ends.
    let _no_detach = DETACHING.write().unwrap_or_else(|e| e.into_inner());
    // SAFETY: _exit ends the process without running anything else.
    unsafe { libc::_exit(i32::from(exit_code(signal))) }
}

/// The signal that asked bench to stop, if one did.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

/// For a long set-up (a map filled, processes started): an error that stops
/// it once a signal has come, which the runner takes for a run that never
/// started; `during` says what was under way ("filling the bloom filter").
pub fn check(during: &str) -> Result<()> {
    match received() {
        Some(signal) => Err(Error::Interrupted {
            message: format!("interrupted by {} while {during}", signal_name(signal)),
            code: exit_code(signal),
        }),
        None => Ok(()),
    }
}

/// The exit code for a run stopped by `signal`: 130 for SIGINT, 143 for SIGTERM.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(1)
}

pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Wakes every sleeper to look at its stop condition again.
pub fn wake_sleepers() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    WAKE.notify_all();
}

/// Sleeps until `deadline` or until `stop()` holds (checked whenever a
/// sleeper is woken); false when stopped early.
pub fn sleep_until(deadline: Instant, stop: impl Fn() -> bool) -> bool {
    let mut guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        guard = match WAKE.wait_timeout(guard, deadline - now) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// Takes SIGINT and SIGTERM away from the default action and gives them to a
/// thread of their own. Call first thing in `main`, before any other thread
/// exists, so that every later thread inherits the blocked mask. `say` is
/// called with the signal's name when a second one ends the process at once.
pub fn install(say: fn(&str)) {
    // SAFETY: plain signal-mask calls on a set we own.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut signal = 0;
            // SAFETY: sigwait on the set blocked above.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                continue;
            }
            let first = SIGNAL.compare_exchange(0, signal, Relaxed, Relaxed).is_ok();
            let at_first = *AT_FIRST.lock().unwrap_or_else(|e| e.into_inner());
            match (at_first, first) {
                (Some(at_first), _) => exit_now(signal, at_first),
                (None, false) => exit_now(signal, say),
                (None, true) => wake_sleepers(),
            }
        });
    if spawned.is_err() {
        // Without the thread, fall back to the default actions: no partial
        // report, but the kernel still cleans up.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}
