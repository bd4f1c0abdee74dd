//! `--body KIND` on the probe families' counting programs (`bpf/body.h`): the
//! read-only data that picks the body, and the ringbuf body's rings and
//! consumers, built from the ring buffer family's pieces.

use std::sync::atomic::Ordering;

use libbpf_rs::{MapCore, MapHandle};

use super::ringbuf::{create_rings, Epoll, MappedRing, PaddedCounter};
use crate::bpf::HitCounters;
use crate::channels::Readings;
use crate::config::{Body, RunConfig};
use crate::error::Result;
use crate::runner::ConsumerCtx;

/// As many rings as `BODY_MAX_RINGS` in `bpf/body.h`, so many consumers.
pub const MAX_CONSUMERS: usize = 64;
/// Each consumer's ring: the ring buffer family's default size, room for
/// about 7000 of the body's 72-byte records (64 bytes and the header).
const RING_BYTES: u64 = 512 * 1024;

/// The read-only data of a program that includes `bpf/body.h`; every such
/// skeleton has the same three fields.
pub trait BodyRodata {
    fn set(&mut self, body: u32, read_bytes: u32, nr_rings: u32);
}

macro_rules! body_rodata {
    ($($skel:ident),*) => {$(
        impl BodyRodata for crate::bpf::skel::$skel::types::rodata {
            fn set(&mut self, body: u32, read_bytes: u32, nr_rings: u32) {
                self.body = body;
                self.read_bytes = read_bytes;
                self.nr_rings = nr_rings;
            }
        }
    )*};
}
body_rodata!(uprobe, usdt, trigger);

/// [`BodyState::new`] for a loaded skeleton of a program that includes
/// `bpf/body.h`: its `rings` map and its `body_drops` slots. Unsafe as
/// `BodyState::new` is, so it goes inside the caller's `unsafe` block.
macro_rules! body_state {
    ($config:expr, $skel:expr) => {
        $crate::benches::body::BodyState::new(
            $config,
            &$skel.maps.rings,
            $skel
                .maps
                .bss_data
                .as_deref()
                .map(|bss| &bss.body_drops[..]),
        )
    };
}
pub(crate) use body_state;

/// The rings a run needs: one per consumer, at least one (`--probe` sets up
/// without consumers).
fn ring_count(config: &RunConfig) -> usize {
    config.consumers.clamp(1, MAX_CONSUMERS)
}

/// Sets the body of `config` in a program's read-only data, before load.
pub fn configure(rodata: &mut dyn BodyRodata, config: &RunConfig) {
    rodata.set(
        config.body.bpf_value(),
        config.read_bytes,
        ring_count(config) as u32,
    );
}

/// What the body adds to a workload after load: for ringbuf, the rings in
/// the program's array, their consumers' counts and the events dropped.
pub struct BodyState {
    rings: Option<BodyRings>,
}

struct BodyRings {
    // Fields drop in order: the mappings go before the maps are closed.
    mapped: Vec<MappedRing>,
    _maps: Vec<MapHandle>,
    epolls: Vec<Epoll>,
    /// Events consumed, by consumer.
    consumed: Box<[PaddedCounter]>,
    drops: HitCounters,
}

impl BodyState {
    /// For the ringbuf body, creates the rings and puts them in `rings` (the
    /// program's array of ring buffers, before it is attached); `drops` are
    /// body.h's per-CPU drop slots in the mapped .bss.
    ///
    /// # Safety
    /// As [`HitCounters::new`]: `drops` must be `body_drops` of a skeleton
    /// that outlives the returned value.
    pub unsafe fn new<T>(
        config: &RunConfig,
        rings: &dyn MapCore,
        drops: Option<&[T]>,
    ) -> Result<BodyState> {
        if config.body != Body::Ringbuf {
            return Ok(BodyState { rings: None });
        }
        let count = ring_count(config);
        let maps = create_rings(rings, count, RING_BYTES)?;
        let mapped = maps
            .iter()
            .map(|map| MappedRing::new(map, RING_BYTES))
            .collect::<Result<Vec<_>>>()?;
        let epolls = mapped
            .iter()
            .map(|ring| {
                let epoll = Epoll::new()?;
                epoll.add(ring.fd, 0)?;
                Ok(epoll)
            })
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: passed on from the caller's promise.
        let drops = unsafe { HitCounters::new(drops)? };
        Ok(BodyState {
            rings: Some(BodyRings {
                mapped,
                _maps: maps,
                epolls,
                consumed: (0..count).map(|_| PaddedCounter::default()).collect(),
                drops,
            }),
        })
    }

    /// The hits and drops of a workload whose programs counted `hits`: for
    /// ringbuf, as the ring buffer family counts, events consumed and events
    /// dropped (together, the hits); the hits and no drop otherwise (no
    /// other body has a ring to drop from).
    pub fn readings(&self, hits: &HitCounters) -> Readings {
        match &self.rings {
            None => vec![Some(hits.total()), Some(0)],
            Some(rings) => {
                let consumed = rings.consumed.iter().map(|c| c.0.load(Ordering::Relaxed));
                vec![Some(consumed.sum()), Some(rings.drops.total())]
            }
        }
    }

    /// Discards the events already in the rings: those of hits before the
    /// run (the red zone check's), which its consumers must not count.
    pub fn discard_pending(&self) {
        if let Some(rings) = &self.rings {
            for ring in &rings.mapped {
                ring.process();
            }
        }
    }

    /// A consumer: drains its ring until the run stops, then what is left.
    pub fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        let Some(rings) = &self.rings else {
            return Ok(());
        };
        let (Some(ring), Some(epoll), Some(counter)) = (
            rings.mapped.get(ctx.id),
            rings.epolls.get(ctx.id),
            rings.consumed.get(ctx.id),
        ) else {
            return Ok(());
        };
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 1];
        while !ctx.should_stop() {
            if epoll.wait(&mut events)? > 0 {
                counter.add(ring.process());
            }
        }
        counter.add(ring.process());
        Ok(())
    }
}

/// What a load error names: `what`, and the body when it is not the count
/// (a kernel may refuse one body's helper and not the others').
pub fn program(what: &str, config: &RunConfig) -> String {
    match config.body {
        Body::Count => what.to_string(),
        body => format!("{what} with the {} body", body.name()),
    }
}
