//! The threads of a run: spawning and pinning them, releasing them at the
//! start line, stopping and joining them.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use super::affinity::{pin_current_thread, Placement};
use super::hooks::OpTiming;
use super::inject::Spin;
use super::producer::ProducerCtx;
use super::shared::{install_wake_handler, ConsumerSlot, OpCounter, Shared, StartGate, StopFlag};
use super::Workload;
use crate::error::{Error, Result};

/// What a consumer thread gets.
pub struct ConsumerCtx<'a> {
    pub id: usize,
    stop: &'a StopFlag,
}

impl ConsumerCtx<'_> {
    pub fn should_stop(&self) -> bool {
        self.stop.is_set()
    }
}

/// Runs `body` on a worker thread after pinning it; failures and panics become
/// the run's error.
fn guarded(shared: &Shared, cpu: Option<usize>, who: &str, body: impl FnOnce() -> Result<()>) {
    let result = cpu.map_or(Ok(()), pin_current_thread).and_then(|()| {
        catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
            let what = crate::error::panic_message(payload.as_ref());
            Err(Error::runtime(format!("{who} panicked: {what}")))
        })
    });
    if let Err(err) = result {
        shared.fail(err);
    }
}

/// Requests the stop and wakes the consumers when dropped, so that the
/// workers end even when the measuring thread unwinds: otherwise the scope
/// would wait for them forever.
struct StopOnDrop<'a>(&'a Shared);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop.set();
        self.0.wake_consumers_until_done();
    }
}

/// Starts the consumers and producers, runs `main` once all are at the start
/// line, then stops and joins them. `quotas` sets fixed-work mode.
pub(super) fn with_threads<R>(
    workload: &dyn Workload,
    spin: Option<&Spin>,
    placement: &Placement,
    quotas: Option<&[u64]>,
    timing: Option<Arc<dyn OpTiming>>,
    main: impl FnOnce(&Shared, Instant) -> R,
) -> Result<R> {
    let shared = Shared {
        stop: StopFlag::default(),
        gate: StartGate::default(),
        counters: (0..placement.producers.len())
            .map(|_| OpCounter::default())
            .collect(),
        consumers: (0..placement.consumers.len())
            .map(|_| ConsumerSlot::default())
            .collect(),
        producers_done: AtomicUsize::new(0),
        last_finish: Mutex::new(None),
        failure: Mutex::new(None),
        timing,
    };
    if !placement.consumers.is_empty() {
        install_wake_handler()?;
    }
    let result = thread::scope(|scope| {
        let spawned = spawn_consumers(scope, &shared, workload, placement)
            + spawn_producers(scope, &shared, workload, spin, placement, quotas);
        shared.gate.wait_arrivals(spawned);
        // The clock starts before the gate opens: a producer may finish a
        // short fixed run before this thread is scheduled again.
        let start = Instant::now();
        let _stop = StopOnDrop(&shared);
        shared.gate.open();
        (!shared.failed()).then(|| main(&shared, start))
    });
    let failure = shared
        .failure
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    match (failure, result) {
        (Some(err), _) => Err(err),
        (None, Some(result)) => Ok(result),
        (None, None) => Err(Error::runtime("the run stopped before it started")),
    }
}

/// Starts a consumer thread per placed consumer; how many started.
fn spawn_consumers<'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    shared: &'scope Shared,
    workload: &'scope dyn Workload,
    placement: &Placement,
) -> usize {
    let mut spawned = 0;
    for (id, &cpu) in placement.consumers.iter().enumerate() {
        let spawn = thread::Builder::new()
            .name(format!("consumer-{id}"))
            .spawn_scoped(scope, move || {
                let slot = &shared.consumers[id];
                // SAFETY: pthread_self has no preconditions.
                *slot.thread.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(unsafe { libc::pthread_self() });
                let arrived = Cell::new(false);
                guarded(shared, cpu, &format!("consumer {id}"), || {
                    arrived.set(true);
                    shared.gate.arrive_and_wait();
                    // Even when the run is already over (a short fixed
                    // run can end before a consumer is scheduled): the
                    // consumer still drains what the producers left.
                    workload.consume(&ConsumerCtx {
                        id,
                        stop: &shared.stop,
                    })
                });
                // One that could not be pinned still arrives, or the
                // others would be held at the start line forever.
                if !arrived.get() {
                    shared.gate.arrive_and_wait();
                }
                slot.done.store(true, Relaxed);
            });
        match spawn {
            Ok(_) => spawned += 1,
            Err(e) => {
                shared.consumers[id].done.store(true, Relaxed);
                shared.fail(Error::runtime(format!("cannot start consumer {id}: {e}")))
            }
        }
    }
    spawned
}

/// Starts a producer thread per placed producer, each with its quota in
/// fixed-work mode; how many started.
fn spawn_producers<'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    shared: &'scope Shared,
    workload: &'scope dyn Workload,
    spin: Option<&'scope Spin>,
    placement: &Placement,
    quotas: Option<&[u64]>,
) -> usize {
    let mut spawned = 0;
    for (id, &cpu) in placement.producers.iter().enumerate() {
        let quota = quotas.map(|q| q[id]);
        let spawn = thread::Builder::new()
            .name(format!("producer-{id}"))
            .spawn_scoped(scope, move || {
                let ctx = ProducerCtx::new(id, shared, quota, spin);
                guarded(shared, cpu, &format!("producer {id}"), || {
                    workload.produce(&ctx)
                });
                // A producer that failed before its start line still
                // arrives there, so that the others are not held forever.
                ctx.start();
                ctx.finish();
            });
        match spawn {
            Ok(_) => spawned += 1,
            Err(e) => shared.fail(Error::runtime(format!("cannot start producer {id}: {e}"))),
        }
    }
    spawned
}
