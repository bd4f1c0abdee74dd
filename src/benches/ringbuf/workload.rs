//! What a ring buffer run owns, and its threads: producers that make the
//! BPF program emit, and each kind of consumer's loop.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::Duration;

use libbpf_rs::{Link, MapHandle, RingBufferBuilder};

use super::counter::PaddedCounter;
use super::epoll::Epoll;
use super::perf_buffer::LibbpfPerfBuffer;
use super::perf_rings::PerfRings;
use super::ring::MappedRing;
use super::sys::os_error;
use crate::bpf::skel::ringbuf::RingbufSkel;
use crate::bpf::{HitCounters, Owned};
use crate::channels::Readings;
use crate::error::{Error, Result};
use crate::runner::{ConsumerCtx, ProducerCtx, Workload};

pub(super) enum Buffers {
    RbLibbpf(Vec<MapHandle>),
    RbCustom {
        mapped: Vec<MappedRing>,
        // After `mapped`: the mappings go before the maps are closed.
        _rings: Vec<MapHandle>,
    },
    PbLibbpf(LibbpfPerfBuffer),
    PbCustom(PerfRings),
}

pub(super) struct BufWorkload {
    // Fields drop in order: detach first, then the buffers, then the object.
    pub(super) _link: Link,
    /// Each consumer's epoll set over its share of the buffers (none for
    /// rb-libbpf, and for pb-libbpf with one consumer: libbpf has its own).
    pub(super) epolls: Vec<Epoll>,
    pub(super) buffers: Buffers,
    /// Records consumed: by consumer id, or for pb-libbpf by CPU.
    pub(super) consumed: Box<[PaddedCounter]>,
    pub(super) consumers: usize,
    pub(super) drops: HitCounters,
    pub(super) b2b: bool,
    pub(super) _skel: Owned<RingbufSkel<'static>>,
}

/// Which buffers consumer `id` of `consumers` drains: every one whose index
/// is `id` modulo the count.
fn share(buffers: usize, consumers: usize, id: usize) -> impl Iterator<Item = usize> {
    (0..buffers).filter(move |idx| idx % consumers == id)
}

/// Builds every consumer's epoll set before anything is emitted. It matters
/// for perf events: their readiness is consumed by the first look, which
/// epoll_ctl takes, so a wake-up that lands before its fd joins the set would
/// be lost and the consumer would sleep on data that is there.
pub(super) fn consumer_epolls(buffers: &Buffers, consumers: usize) -> Result<Vec<Epoll>> {
    let fds: Vec<RawFd> = match buffers {
        Buffers::RbLibbpf(_) => return Ok(Vec::new()),
        Buffers::PbLibbpf(_) if consumers == 1 => return Ok(Vec::new()),
        Buffers::RbCustom { mapped, .. } => mapped.iter().map(|r| r.fd).collect(),
        Buffers::PbLibbpf(pb) => (0..pb.buffer_count())
            .map(|idx| pb.buffer_fd(idx))
            .collect::<Result<_>>()?,
        Buffers::PbCustom(rings) => rings.rings.iter().map(|r| r.fd.as_raw_fd()).collect(),
    };
    (0..consumers)
        .map(|id| {
            let epoll = Epoll::new()?;
            for idx in share(fds.len(), consumers, id) {
                epoll.add(fds[idx], idx as u64)?;
            }
            Ok(epoll)
        })
        .collect()
}

/// One producer operation: the system call the BPF program emits on.
#[inline(always)]
fn trigger() {
    // SAFETY: getpgid(0) has no preconditions.
    unsafe { libc::syscall(libc::SYS_getpgid, 0) };
}

/// Whether a libbpf or system call result is "interrupted": the runner's
/// wake-up at the end of a run.
fn interrupted(rc: i32) -> bool {
    rc == -libc::EINTR
}

impl Workload for BufWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        if self.b2b {
            // One batch to start; from then on the consumers produce.
            let mut started = false;
            return ctx.try_run(|| {
                if started {
                    ctx.wait_for_stop();
                    return Ok(0);
                }
                started = true;
                trigger();
                Ok(1)
            });
        }
        ctx.run(trigger);
        Ok(())
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        match &self.buffers {
            Buffers::RbLibbpf(rings) => self.consume_rb_libbpf(ctx, &rings[ctx.id]),
            Buffers::RbCustom { mapped, .. } => self.consume_rb_custom(ctx, &mapped[ctx.id]),
            Buffers::PbLibbpf(pb) => self.consume_pb_libbpf(ctx, pb),
            Buffers::PbCustom(rings) => self.consume_pb_custom(ctx, rings),
        }
    }

    fn read(&self, _ops: u64) -> Readings {
        let consumed = self.consumed.iter().map(|c| c.0.load(Ordering::Relaxed));
        vec![Some(consumed.sum()), Some(self.drops.total())]
    }
}

impl BufWorkload {
    /// The loop every consumer runs: wait and process until the run stops,
    /// then drain what is left. `wait` returns false when it was interrupted.
    fn consume_loop(
        &self,
        ctx: &ConsumerCtx<'_>,
        mut wait: impl FnMut() -> Result<bool>,
        drain: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        while !ctx.should_stop() {
            if wait()? && self.b2b {
                trigger();
            }
        }
        drain()
    }

    fn consume_rb_libbpf(&self, ctx: &ConsumerCtx<'_>, ring: &MapHandle) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        let mut builder = RingBufferBuilder::new();
        builder
            .add(ring, |_record: &[u8]| {
                counter.add(1);
                0
            })
            .map_err(|e| Error::runtime(format!("cannot add the ring buffer: {e}")))?;
        let rb = builder
            .build()
            .map_err(|e| Error::runtime(format!("cannot set up the ring buffer consumer: {e}")))?;
        self.consume_libbpf(
            ctx,
            ("ring_buffer__poll", || rb.poll_raw(Duration::MAX)),
            ("ring_buffer__consume", || rb.consume_raw()),
        )
    }

    /// The loop of a consumer that libbpf's own poll drives: `poll` and
    /// `consume` (each with its name, for errors) return libbpf's counts or
    /// negative error numbers.
    fn consume_libbpf(
        &self,
        ctx: &ConsumerCtx<'_>,
        (poll_name, poll): (&str, impl Fn() -> i32),
        (consume_name, consume): (&str, impl FnOnce() -> i32),
    ) -> Result<()> {
        self.consume_loop(
            ctx,
            || match poll() {
                rc if rc >= 0 => Ok(true),
                rc if interrupted(rc) => Ok(false),
                rc => Err(os_error(poll_name, rc)),
            },
            || match consume() {
                rc if rc >= 0 => Ok(()),
                rc => Err(os_error(consume_name, rc)),
            },
        )
    }

    fn consume_rb_custom(&self, ctx: &ConsumerCtx<'_>, ring: &MappedRing) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        let epoll = &self.epolls[ctx.id];
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        self.consume_loop(
            ctx,
            || {
                let ready = epoll.wait(&mut events)?;
                if ready > 0 {
                    counter.add(ring.process());
                }
                Ok(ready > 0)
            },
            || {
                counter.add(ring.process());
                Ok(())
            },
        )
    }

    fn consume_pb_libbpf(&self, ctx: &ConsumerCtx<'_>, pb: &LibbpfPerfBuffer) -> Result<()> {
        if self.consumers == 1 {
            // One consumer: libbpf's own loop over every CPU's buffer.
            return self.consume_libbpf(
                ctx,
                ("perf_buffer__poll", || pb.poll()),
                ("perf_buffer__consume", || pb.consume()),
            );
        }
        // Several: each waits on its own share of the buffers.
        self.consume_share(ctx, pb.buffer_count(), |idx| pb.consume_buffer(idx))
    }

    fn consume_pb_custom(&self, ctx: &ConsumerCtx<'_>, rings: &PerfRings) -> Result<()> {
        let counter = &self.consumed[ctx.id];
        self.consume_share(ctx, rings.rings.len(), |idx| {
            counter.add(rings.rings[idx].process(rings.data_size));
            Ok(())
        })
    }

    /// The loop of a consumer that waits on its share of `buffers` per-CPU
    /// buffers in its epoll set and processes each that is ready.
    fn consume_share(
        &self,
        ctx: &ConsumerCtx<'_>,
        buffers: usize,
        process: impl Fn(usize) -> Result<()>,
    ) -> Result<()> {
        let mine: Vec<usize> = share(buffers, self.consumers, ctx.id).collect();
        let epoll = &self.epolls[ctx.id];
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; mine.len().max(1)];
        self.consume_loop(
            ctx,
            || {
                let ready = epoll.wait(&mut events)?;
                for event in &events[..ready] {
                    process(event.u64 as usize)?;
                }
                Ok(ready > 0)
            },
            || mine.iter().try_for_each(|&idx| process(idx)),
        )
    }
}
