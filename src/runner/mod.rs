//! Threads, affinity, the stop flag and the measure loop. The runner knows no
//! benchmark: it drives any [`Workload`] and announces the run's phases and
//! samples to its observers ([`phases`]).

pub mod affinity;
pub mod cycles;
pub mod inject;
pub mod phases;
mod timed;

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::interrupt;
use crate::latency::recorder::Recorder;
use crate::stats::Sample;
use affinity::{pin_current_thread, Placement};
use phases::{announce, Observers, Timing};

/// Where a run was when an interrupt stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before a run started (between sweep points).
    Between,
    SetUp,
    WarmUp,
    /// `measured` of `of` measured iterations were done.
    Measuring {
        measured: usize,
        of: u32,
    },
    /// A fixed-work run had done `done` of `of` calls.
    Fixed {
        done: u64,
        of: u64,
    },
    /// An attach cycle, at this step.
    Cycle(cycles::Stopped),
}

/// What a benchmark counted since it was set up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub hits: u64,
    pub drops: u64,
}

/// A benchmark after set-up: the bodies its threads run and the counters it reads.
pub trait Workload: Sync {
    /// The producer body. It loops through [`ProducerCtx::run`] or
    /// [`ProducerCtx::try_run`], which count operations and stop on time.
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()>;

    /// The consumer body, for benchmarks that have consumers; returns when
    /// [`ConsumerCtx::should_stop`] says so. When the run stops, a consumer
    /// blocked in a system call (epoll_wait, say) is interrupted with EINTR,
    /// again and again until it returns: treat EINTR as "look at
    /// `should_stop`". Counts the consumer adds after the stop (draining what
    /// is left) are part of a fixed-work run's result.
    fn consume(&self, _ctx: &ConsumerCtx<'_>) -> Result<()> {
        Ok(())
    }

    /// Cumulative counts since set-up. `ops` is what the producers counted in
    /// user space; a benchmark whose hits are counted elsewhere (in BPF) reads
    /// its own counters instead.
    fn measure(&self, ops: u64) -> Counts {
        Counts {
            hits: ops,
            drops: 0,
        }
    }

    /// For a probe benchmark, how the kernel handles its probe, found now
    /// (the runner asks after the probe has been hit); `None` for the others.
    fn probe_path(&self) -> Option<Result<crate::probe_path::ProbePath>> {
        None
    }

    /// The busy loop each operation pays on top of its own cost: none but
    /// under `bench calibrate` (see [`inject::Injected`]).
    fn injected_spin(&self) -> Option<&inject::Spin> {
        None
    }

    /// For an attach benchmark, what its cycles attach: the runner drives
    /// cycles instead of producers.
    fn cycles(&self) -> Option<&dyn cycles::CycleWorkload> {
        None
    }

    /// For a benchmark whose consumers attach and detach probes while the
    /// producers hit (attach churn), the cycles they have finished so far
    /// (the run keeps those of its measured seconds) and the churning
    /// threads; `None` for the others.
    fn churn(&self) -> Option<(usize, Vec<cycles::ChurnCycle>)> {
        None
    }
}

/// One producer's counts, alone on their cache line so that producers never
/// write to a line another producer writes. `ops` is updated as the producer
/// goes; `calls` (operation bodies run) once, when it stops.
#[repr(align(128))]
#[derive(Default)]
struct OpCounter {
    ops: AtomicU64,
    calls: AtomicU64,
}

/// A stop request: the run's own (its end, or a failure) or the user's
/// (Ctrl-C, SIGTERM), which every run obeys.
#[derive(Default)]
struct StopFlag {
    flag: AtomicBool,
}

impl StopFlag {
    fn is_set(&self) -> bool {
        self.flag.load(Relaxed) || interrupt::received().is_some()
    }

    fn set(&self) {
        self.flag.store(true, Relaxed);
        interrupt::wake_sleepers();
    }

    /// Wakes the sleepers to look again, without requesting a stop.
    fn wake(&self) {
        interrupt::wake_sleepers();
    }

    /// Sleeps until `deadline`; false when woken early by a stop request.
    fn sleep_until(&self, deadline: Instant) -> bool {
        interrupt::sleep_until(deadline, || self.is_set())
    }

    /// Waits until `done()` holds or a stop is requested.
    fn wait_for(&self, done: impl Fn() -> bool) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        interrupt::sleep_until(far, || done() || self.is_set());
    }

    /// Waits until `done()` holds, stop request or not (each [`Self::wake`]
    /// makes it look again).
    fn wait_regardless(&self, done: impl Fn() -> bool) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        interrupt::sleep_until(far, done);
    }
}

/// Holds every thread at the start line until all are pinned and set.
#[derive(Default)]
struct StartGate {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartGate {
    fn arrive_and_wait(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        self.changed.notify_all();
        while !state.1 {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn wait_arrivals(&self, count: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 < count {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn open(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 = true;
        self.changed.notify_all();
    }
}

/// Calls [`ProducerCtx::run`] makes between looks at the stop flag: 64 calls
/// of the slowest operation it drives (a single-stepped uprobe, ~15 us) stop
/// within a millisecond.
pub const BURST: u64 = 64;

/// What a producer thread gets: its id, its counter, and when to stop.
///
/// A producer's first [`run`](Self::run) or [`try_run`](Self::try_run) waits
/// at the start line: whatever the producer does before is per-thread set-up
/// (say, a perf event its own thread must open) and is not measured.
pub struct ProducerCtx<'a> {
    pub id: usize,
    shared: &'a Shared,
    counter: &'a OpCounter,
    /// Fixed-work mode: how many times this producer runs its operation.
    quota: Option<u64>,
    /// The busy loop after each operation (see [`Workload::injected_spin`]).
    spin: Option<&'a inject::Spin>,
    started: Cell<bool>,
    finished: Cell<bool>,
}

impl ProducerCtx<'_> {
    /// Runs `op` until told to stop (or `quota` times), counting one
    /// operation per call. Calls go in bursts of [`BURST`] between looks at
    /// the stop flag and updates of the counter, so that the harness adds next
    /// to nothing to even the cheapest operation. (Sizing `bench calibrate`'s
    /// injected spin, it runs timed blocks instead: [`Self::run_alternating`].)
    #[inline(always)]
    pub fn run(&self, mut op: impl FnMut()) {
        // The injected cost, decided once: the loop without it is unchanged.
        if let Some(spin) = self.spin {
            let iterations = spin.iterations;
            if let Some(blocks) = &spin.blocks {
                // Infallible: the operation returns nothing to fail with.
                let _ = self.run_alternating(
                    || {
                        op();
                        Ok(1)
                    },
                    iterations,
                    blocks,
                );
                return;
            }
            return self.run_plain(move || {
                op();
                inject::spin(iterations);
            });
        }
        if let Some(recorder) = self.shared.latency.as_deref() {
            return self.run_timed_ops(recorder, op);
        }
        self.run_plain(op)
    }

    #[inline(always)]
    fn run_plain(&self, mut op: impl FnMut()) {
        self.start();
        let stop = &self.shared.stop;
        let mut done = 0u64;
        match self.quota {
            None => {
                // An opaque trip count keeps the burst a loop: 64 unrolled
                // back-to-back calls run measurably slower than a loop of one.
                let burst = std::hint::black_box(BURST);
                while !stop.is_set() {
                    for _ in 0..burst {
                        op();
                    }
                    done += BURST;
                    // Only this thread writes the counter: a plain store is exact.
                    self.counter.ops.store(done, Relaxed);
                }
            }
            Some(quota) => {
                while done < quota && !stop.is_set() {
                    let burst = BURST.min(quota - done);
                    for _ in 0..burst {
                        op();
                    }
                    done += burst;
                    self.counter.ops.store(done, Relaxed);
                }
            }
        }
        self.counter.calls.store(done, Relaxed);
        self.finish();
    }

    /// Like [`run`](Self::run) for an operation that can fail and that counts
    /// several operations per call (e.g. a batch of threads).
    #[inline(always)]
    pub fn try_run(&self, mut op: impl FnMut() -> Result<u64>) -> Result<()> {
        // The injected cost, decided once: the loop without it is unchanged.
        if let Some(spin) = self.spin {
            let iterations = spin.iterations;
            if let Some(blocks) = &spin.blocks {
                return self.run_alternating(op, iterations, blocks);
            }
            return self.try_run_plain(move || {
                let n = op()?;
                inject::spin(iterations.saturating_mul(n));
                Ok(n)
            });
        }
        if let Some(recorder) = self.shared.latency.as_deref() {
            return self.try_run_timed_ops(recorder, op);
        }
        self.try_run_plain(op)
    }

    #[inline(always)]
    fn try_run_plain(&self, mut op: impl FnMut() -> Result<u64>) -> Result<()> {
        self.start();
        let mut done = 0u64;
        let mut calls = 0u64;
        let quota = self.quota.unwrap_or(u64::MAX);
        let result = loop {
            if calls >= quota || self.shared.stop.is_set() {
                break Ok(());
            }
            match op() {
                Ok(n) => done += n,
                Err(err) => break Err(err),
            }
            calls += 1;
            self.counter.ops.store(done, Relaxed);
        };
        self.counter.calls.store(calls, Relaxed);
        self.finish();
        result
    }

    /// Sizing the injected cost: blocks of calls alternately without and
    /// with `iterations` of the spin an operation, each block timed into
    /// `blocks`. A block grows until it takes [`inject::BLOCK_NS`], so that
    /// the clock costs next to nothing beside it; the pairs before that are
    /// not kept. Runs until the stop (or the quota).
    fn run_alternating(
        &self,
        mut op: impl FnMut() -> Result<u64>,
        iterations: u64,
        blocks: &inject::Blocks,
    ) -> Result<()> {
        self.start();
        let quota = self.quota.unwrap_or(u64::MAX);
        let (mut calls, mut done) = (0u64, 0u64);
        let mut block = 1u64;
        let mut pairs = Vec::new();
        let mut timed = |spin: bool, block: u64, calls: &mut u64| -> Result<(u64, u64)> {
            let start = Instant::now();
            let mut ops = 0;
            for _ in 0..block {
                let n = op()?;
                if spin {
                    inject::spin(iterations.saturating_mul(n));
                }
                ops += n;
            }
            *calls += block;
            Ok((nanos(start.elapsed()), ops))
        };
        let mut pair_up = || -> Result<()> {
            while calls.saturating_add(2 * block) <= quota && !self.shared.stop.is_set() {
                let (without_ns, without_ops) = timed(false, block, &mut calls)?;
                let (with_ns, with_ops) = timed(true, block, &mut calls)?;
                done += without_ops + with_ops;
                self.counter.ops.store(done, Relaxed);
                if without_ns < inject::BLOCK_NS && block < 1 << 20 {
                    block *= 2;
                } else {
                    pairs.push(inject::BlockPair {
                        without_ns,
                        without_ops,
                        with_ns,
                        with_ops,
                    });
                }
            }
            Ok(())
        };
        let result = pair_up();
        blocks.add(pairs);
        self.counter.calls.store(calls, Relaxed);
        self.finish();
        result
    }

    /// For a producer with nothing more to do (its consumers produce, say):
    /// waits at the start line if it has not yet, then until the run stops.
    pub fn wait_for_stop(&self) {
        self.start();
        self.shared.stop.wait_for(|| false);
    }

    /// Waits at the start line, once.
    fn start(&self) {
        if !self.started.replace(true) {
            self.shared.gate.arrive_and_wait();
        }
    }

    /// Tells a fixed-work run that this producer's share is done, once; what
    /// the producer does afterwards (tearing down) is not timed.
    fn finish(&self) {
        if !self.finished.replace(true) {
            let now = Instant::now();
            let mut last = self
                .shared
                .last_finish
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *last = Some(last.map_or(now, |t| t.max(now)));
            drop(last);
            self.shared.producers_done.fetch_add(1, Relaxed);
            self.shared.stop.wake();
        }
    }
}

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

/// Where the runner finds a consumer thread to interrupt it.
#[derive(Default)]
struct ConsumerSlot {
    thread: Mutex<Option<libc::pthread_t>>,
    /// Set once the thread has nothing left to do but exit.
    done: AtomicBool,
}

/// The signal that interrupts a consumer's blocking system call when the run
/// stops. Its handler does nothing and is installed without SA_RESTART, so
/// the call fails with EINTR instead of resuming.
fn wake_signal() -> i32 {
    libc::SIGRTMIN()
}

extern "C" fn on_wake_signal(_signal: libc::c_int) {}

fn install_wake_handler() -> Result<()> {
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

struct Shared {
    stop: StopFlag,
    gate: StartGate,
    counters: Vec<OpCounter>,
    consumers: Vec<ConsumerSlot>,
    producers_done: AtomicUsize,
    /// When the last producer to finish its fixed share did.
    last_finish: Mutex<Option<Instant>>,
    failure: Mutex<Option<Error>>,
    /// `--latency`: where the producers' timed operations go.
    latency: Option<Arc<Recorder>>,
}

impl Shared {
    fn total_ops(&self) -> u64 {
        self.counters.iter().map(|c| c.ops.load(Relaxed)).sum()
    }

    fn total_calls(&self) -> u64 {
        self.counters.iter().map(|c| c.calls.load(Relaxed)).sum()
    }

    /// Records the first failure and stops everyone.
    fn fail(&self, err: Error) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(err);
        drop(failure);
        self.stop.set();
    }

    fn failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Interrupts the consumers until every one has returned. A signal that
    /// lands just before a consumer blocks is lost, hence the repetition.
    fn wake_consumers_until_done(&self) {
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
fn with_threads<R>(
    workload: &dyn Workload,
    placement: &Placement,
    quotas: Option<&[u64]>,
    latency: Option<Arc<Recorder>>,
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
        latency,
    };
    if !placement.consumers.is_empty() {
        install_wake_handler()?;
    }
    let result = thread::scope(|scope| {
        let spawned = spawn_consumers(scope, &shared, workload, placement)
            + spawn_producers(scope, &shared, workload, placement, quotas);
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
    placement: &Placement,
    quotas: Option<&[u64]>,
) -> usize {
    let mut spawned = 0;
    for (id, &cpu) in placement.producers.iter().enumerate() {
        let quota = quotas.map(|q| q[id]);
        let spawn = thread::Builder::new()
            .name(format!("producer-{id}"))
            .spawn_scoped(scope, move || {
                let ctx = ProducerCtx {
                    id,
                    shared,
                    counter: &shared.counters[id],
                    quota,
                    spin: workload.injected_spin(),
                    started: Cell::new(false),
                    finished: Cell::new(false),
                };
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

/// Runs `warmup + duration` one-second iterations and returns every sample
/// (warm-up ones marked), announcing the start of warm-up and of measurement,
/// each sample and the end of measurement to `observers`.
pub fn run_timed(
    workload: &dyn Workload,
    placement: &Placement,
    timing: Timing,
    observers: &mut Observers<'_, '_>,
) -> Result<Vec<Sample>> {
    let Timing {
        warmup_secs: warmup,
        duration_secs: duration,
    } = timing;
    // Counted before any producer runs, so the first sample misses nothing.
    let before = workload.measure(0);
    let latency = phases::producer_timing(observers);
    with_threads(workload, placement, None, latency, |shared, start| {
        let mut samples = Vec::with_capacity((warmup + duration) as usize);
        if warmup > 0 {
            announce(observers, |o| o.warmup_started(timing));
        } else {
            announce(observers, |o| o.measure_started(timing));
        }
        let mut prev_time = start;
        let mut prev = before;
        for iteration in 0..warmup + duration {
            let deadline = start + Duration::from_secs(u64::from(iteration) + 1);
            if !shared.stop.sleep_until(deadline) {
                break;
            }
            let now = Instant::now();
            let counts = workload.measure(shared.total_ops());
            // The histograms' second ends where the counts' does.
            if let Some(recorder) = &shared.latency {
                recorder.advance(u64::from(iteration) + 1);
            }
            let sample = Sample {
                iteration,
                elapsed_ns: nanos(now - prev_time),
                late_ns: signed_nanos(now, deadline),
                hits: counts.hits.saturating_sub(prev.hits),
                drops: counts.drops.saturating_sub(prev.drops),
                warmup: iteration < warmup,
            };
            announce(observers, |o| o.sample(&sample));
            samples.push(sample);
            if iteration + 1 == warmup {
                announce(observers, |o| o.measure_started(timing));
            }
            prev = counts;
            prev_time = now;
        }
        if samples.len() >= warmup as usize {
            announce(observers, |o| o.measure_ended(&samples));
        }
        samples
    })
}

/// The result of a fixed-work run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedRun {
    /// From the start line until the last producer finished.
    pub elapsed_ns: u64,
    /// Operation bodies run (e.g. BPF_PROG_TEST_RUN calls).
    pub calls: u64,
    /// Operations the producers counted.
    pub ops: u64,
    /// What the benchmark counted (e.g. BPF hits) during the run.
    pub counts: Counts,
}

impl FixedRun {
    /// One producer's time per operation, in ns; `None` without operations.
    pub fn ns_per_op(&self, producers: usize) -> Option<f64> {
        (self.ops > 0).then(|| self.elapsed_ns as f64 * producers as f64 / self.ops as f64)
    }
}

/// Splits `repeat` calls over the producers, the remainder to the first ones.
pub fn quotas(repeat: u64, producers: usize) -> Vec<u64> {
    let n = producers.max(1) as u64;
    (0..n)
        .map(|i| repeat / n + u64::from(i < repeat % n))
        .collect()
}

/// Runs exactly `repeat` producer operations in total and reports the time;
/// announces its start to `observers` (its end is announced by the caller,
/// once the counts are read).
pub fn run_fixed(
    workload: &dyn Workload,
    placement: &Placement,
    repeat: u64,
    observers: &mut Observers<'_, '_>,
) -> Result<FixedRun> {
    let quotas = quotas(repeat, placement.producers.len());
    let before = workload.measure(0);
    let latency = phases::producer_timing(observers);
    let (elapsed_ns, calls, ops) = with_threads(
        workload,
        placement,
        Some(&quotas),
        latency,
        |shared, start| {
            announce(observers, |o| o.fixed_started(repeat));
            let producers = shared.counters.len();
            let all_done = || shared.producers_done.load(Relaxed) == producers;
            shared.stop.wait_for(all_done);
            // A stop request (Ctrl-C) ends that wait at once, while each
            // producer still ends its burst and then stores the calls it
            // made: wait for them all, so that a stopped run reports the
            // work it did.
            shared.stop.wait_regardless(all_done);
            let last = *shared.last_finish.lock().unwrap_or_else(|e| e.into_inner());
            let elapsed_ns = nanos(last.unwrap_or_else(Instant::now) - start);
            (elapsed_ns, shared.total_calls(), shared.total_ops())
        },
    )?;
    let after = workload.measure(ops);
    Ok(FixedRun {
        elapsed_ns,
        calls,
        ops,
        counts: Counts {
            hits: after.hits.saturating_sub(before.hits),
            drops: after.drops.saturating_sub(before.drops),
        },
    })
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn signed_nanos(now: Instant, deadline: Instant) -> i64 {
    match now.checked_duration_since(deadline) {
        Some(late) => i64::try_from(late.as_nanos()).unwrap_or(i64::MAX),
        None => -i64::try_from((deadline - now).as_nanos()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use affinity::{place, Affinity};

    /// A producer that spins on nothing, for the runner's tests.
    pub(super) struct Spin;
    impl Workload for Spin {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.run(|| std::hint::black_box(()));
            Ok(())
        }
    }

    struct Fails;
    impl Workload for Fails {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.try_run(|| Err(Error::runtime("the operation failed")))
        }
    }

    fn timing(warmup_secs: u32, duration_secs: u32) -> Timing {
        Timing {
            warmup_secs,
            duration_secs,
        }
    }

    fn unpinned(producers: usize) -> Placement {
        place(&Affinity::None, producers, 0, &[0]).unwrap()
    }

    #[test]
    fn quotas_split_the_work_exactly() {
        assert_eq!(quotas(10, 3), vec![4, 3, 3]);
        assert_eq!(quotas(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(quotas(7, 1), vec![7]);
    }

    #[test]
    fn fixed_runs_do_exactly_the_work_asked() {
        /// Counts its own bodies per producer, apart from the runner's
        /// counters, and reports them (from a non-zero start) as hits.
        struct Tally([AtomicU64; 3]);
        impl Workload for Tally {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.run(|| {
                    self.0[ctx.id].fetch_add(1, Relaxed);
                });
                Ok(())
            }
            fn measure(&self, _ops: u64) -> Counts {
                Counts {
                    hits: self.0.iter().map(|c| c.load(Relaxed)).sum(),
                    drops: 0,
                }
            }
        }
        let tally = Tally([AtomicU64::new(7), AtomicU64::new(0), AtomicU64::new(0)]);
        let run = run_fixed(&tally, &unpinned(3), 100_003, &mut []).unwrap();
        let bodies: Vec<u64> = tally.0.iter().map(|c| c.load(Relaxed)).collect();
        assert_eq!(bodies, [7 + 33_335, 33_334, 33_334]);
        assert_eq!((run.calls, run.ops), (100_003, 100_003));
        assert_eq!(run.counts.hits, 100_003, "the count since the start");

        // A call that does several operations: calls and ops part.
        struct Batches;
        impl Workload for Batches {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Ok(5))
            }
        }
        let run = run_fixed(&Batches, &unpinned(2), 1001, &mut []).unwrap();
        assert_eq!((run.calls, run.ops), (1001, 5005));
    }

    /// Hands the producers a recorder and collects what they hand in.
    struct Timed(
        std::sync::Arc<Recorder>,
        Vec<crate::latency::recorder::Collected>,
    );
    impl phases::RunObserver for Timed {
        fn producer_timing(&self) -> Option<std::sync::Arc<Recorder>> {
            Some(self.0.clone())
        }
        fn sample(&mut self, sample: &Sample) {
            let before = u64::from(sample.iteration);
            self.1.extend(self.0.collect(Some(before)));
        }
    }

    fn timed(producers: usize) -> Timed {
        Timed(std::sync::Arc::new(Recorder::new(producers)), Vec::new())
    }

    #[test]
    fn timed_operations_keep_the_counts_exact_and_are_all_recorded() {
        let mut observer = timed(3);
        let run = run_fixed(&Spin, &unpinned(3), 100_003, &mut [&mut observer]).unwrap();
        assert_eq!((run.calls, run.ops), (100_003, 100_003));
        let recorded: u64 = observer
            .0
            .collect(None)
            .iter()
            .map(|c| c.distribution.count())
            .sum();
        assert_eq!(recorded, 100_003);

        struct Single;
        impl Workload for Single {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                ctx.try_run(|| Ok(1))
            }
        }
        let mut observer = timed(2);
        let run = run_fixed(&Single, &unpinned(2), 1001, &mut [&mut observer]).unwrap();
        assert_eq!((run.calls, run.ops), (1001, 1001));
        let recorded: u64 = observer
            .0
            .collect(None)
            .iter()
            .map(|c| c.distribution.count())
            .sum();
        assert_eq!(recorded, 1001);
    }

    #[test]
    fn timed_runs_hand_in_a_histogram_per_second() {
        let mut observer = timed(1);
        let timing = Timing {
            warmup_secs: 0,
            duration_secs: 2,
        };
        let samples = run_timed(&Spin, &unpinned(1), timing, &mut [&mut observer]).unwrap();
        let mut collected = std::mem::take(&mut observer.1);
        collected.extend(observer.0.collect(None));
        let epochs: Vec<u64> = collected.iter().map(|c| c.epoch).collect();
        assert_eq!(
            epochs,
            [0, 1, 2],
            "two seconds and the tail after the last tick"
        );
        // Each second's histogram holds that second's operations, give or
        // take the burst that straddles the tick.
        for (sample, c) in samples.iter().zip(&collected) {
            let n = c.distribution.count();
            assert!(
                n.abs_diff(sample.hits) <= 2 * BURST,
                "{n} vs {}",
                sample.hits
            );
        }
    }

    #[test]
    fn a_failing_producer_fails_the_run() {
        let err = run_fixed(&Fails, &unpinned(2), 10, &mut []).unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
        let err = run_timed(&Fails, &unpinned(1), timing(0, 3), &mut []).unwrap_err();
        assert_eq!(err.to_string(), "the operation failed");
    }

    #[test]
    fn what_a_producer_does_before_its_start_line_is_not_timed() {
        struct SlowSetup;
        impl Workload for SlowSetup {
            fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
                std::thread::sleep(Duration::from_millis(300));
                ctx.run(|| std::hint::black_box(()));
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            }
        }
        let run = run_fixed(&SlowSetup, &unpinned(2), 1000, &mut []).unwrap();
        assert_eq!(run.calls, 1000);
        assert!(run.elapsed_ns < 250_000_000, "{} ns", run.elapsed_ns);
    }

    #[test]
    fn a_panicking_producer_fails_the_run() {
        struct Panics;
        impl Workload for Panics {
            fn produce(&self, _ctx: &ProducerCtx<'_>) -> Result<()> {
                panic!("boom")
            }
        }
        let err = run_fixed(&Panics, &unpinned(1), 1, &mut []).unwrap_err();
        assert_eq!(err.to_string(), "producer 0 panicked: boom");
    }

    /// A consumer that sleeps in epoll_wait on an empty set, as one waiting
    /// on an idle buffer does: only the runner's wake-up can end its wait.
    struct BlockedConsumer {
        woken: AtomicU64,
    }
    impl Workload for BlockedConsumer {
        fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
            ctx.wait_for_stop();
            Ok(())
        }
        fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
            // SAFETY: plain epoll calls on a descriptor this function owns.
            let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            assert!(epoll >= 0);
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            while !ctx.should_stop() {
                let n = unsafe { libc::epoll_wait(epoll, &mut event, 1, -1) };
                assert_eq!(n, -1, "nothing can be ready");
                assert_eq!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EINTR)
                );
                self.woken.fetch_add(1, Relaxed);
            }
            unsafe { libc::close(epoll) };
            Ok(())
        }
    }

    #[test]
    fn consumers_blocked_in_epoll_are_woken_at_the_end() {
        let workload = BlockedConsumer {
            woken: AtomicU64::new(0),
        };
        let placement = place(&Affinity::None, 1, 2, &[0]).unwrap();
        let start = Instant::now();
        let samples = run_timed(&workload, &placement, timing(0, 1), &mut []).unwrap();
        assert_eq!(samples.len(), 1);
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(workload.woken.load(Relaxed) >= 2);
    }

    #[test]
    fn timed_runs_tick_once_a_second_and_mark_warmup() {
        let samples = run_timed(&Spin, &unpinned(1), timing(1, 1), &mut []).unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples[0].warmup && !samples[1].warmup);
        // The tick fires after its deadline, never before, and each interval
        // is a second plus its tick's lateness less the previous one's (the
        // schedule does not drift), however late a loaded machine ticks.
        let mut previous_late = 0;
        for s in &samples {
            assert!(s.hits > 0);
            assert!(s.late_ns >= 0, "{s:?}");
            let expected = 1_000_000_000 + s.late_ns - previous_late;
            assert!(
                (s.elapsed_ns as i64 - expected).abs() < 5_000_000,
                "{samples:?}"
            );
            previous_late = s.late_ns;
        }
    }
}
