//! Attach churn: producers hit a probed site while consumer threads attach
//! and detach uprobes on other sites in a loop, as the kernel developers'
//! uprobe stress tool does. The hit rate shows what attaching elsewhere costs
//! the probes already in place (locks, grace periods, the breakpoint's text
//! patching); the churners' cycle rate and times show what attaching costs
//! while probes are being hit. `-c 0` runs the same hits without churn: the
//! rate the churned runs are held against.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use libbpf_rs::{Link, UprobeOpts};

use super::{attach, Benchmark, Info};
use crate::attach::sites;
use crate::bpf::skel::attach::AttachSkel;
use crate::bpf::{self, Needs};
use crate::channels::Readings;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::runner::cycles::ChurnCycle;
use crate::runner::{ConsumerCtx, Facts, ProducerCtx, SetUp, Workload};
use crate::targets::SELF_EXE;

/// The site the producers hit; the churners take the others.
const HIT_SITE: usize = 0;
/// The most churning threads: their detaches wait on one another (two ran
/// 11 cycles/s against one's 8), so more add threads, not churn.
const MAX_CHURNERS: usize = 64;

struct ChurnBench {
    info: Info,
}

pub static BENCHES: &[&dyn Benchmark] = &[&ChurnBench {
    info: Info::hits(
        "attach-churn",
        "hit a uprobe while -c N threads attach and detach uprobes on other sites (-c 0: no churn)",
    )
    .consumers(1)
    .needs(Needs::UprobeEvent)
    // A producer's operation is one call of the probed site, one hit: its
    // time is a hit's latency while the churners attach and detach.
    .timed_per_hit(),
}];

impl Benchmark for ChurnBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        if config.consumers > MAX_CHURNERS {
            return Err(Error::usage(format!(
                "attach-churn takes at most {MAX_CHURNERS} churning threads, got -c {}",
                config.consumers
            )));
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let exe = Path::new(SELF_EXE);
        // Site 0 is hit; the churners take the other sites in turn.
        let offsets = sites::offsets(exe, 0..sites::SITE_COUNT)?;
        let skel = attach::load_object(PROGRAM)?;
        let mut churn = Churn {
            hit_link: None,
            skel,
            offsets,
            churners: config.consumers,
            hits: Mutex::new(Wrapping::default()),
            cycles: Mutex::new(Vec::new()),
            next_cycle: AtomicU64::new(0),
        };
        churn.hit_link = Some(churn.attach_site(HIT_SITE)?);
        Ok(SetUp::producers(churn))
    }
}

const PROGRAM: &str = "count_site_uprobe";

/// A 32-bit BPF counter read into 64 bits: the counters of the attach
/// object are u32 (one per site), which a long run at millions of hits a
/// second wraps.
#[derive(Default)]
struct Wrapping {
    last: u32,
    total: u64,
}

impl Wrapping {
    fn update(&mut self, now: u32) -> u64 {
        self.total += u64::from(now.wrapping_sub(self.last));
        self.last = now;
        self.total
    }
}

struct Churn {
    /// The producers' probe, attached for the whole run (detached first).
    hit_link: Option<Link>,
    skel: bpf::Owned<AttachSkel<'static>>,
    /// The file offset of every site.
    offsets: Vec<usize>,
    churners: usize,
    hits: Mutex<Wrapping>,
    cycles: Mutex<Vec<ChurnCycle>>,
    /// Cycles started, over all churners: picks each cycle's site.
    next_cycle: AtomicU64,
}

impl Churn {
    fn attach_site(&self, site: usize) -> Result<Link> {
        let program = attach::program(&self.skel, PROGRAM)?;
        let offset = self.offsets[site];
        program
            .attach_uprobe_with_opts(-1, Path::new(SELF_EXE), offset, UprobeOpts::default())
            .map_err(|e| {
                bpf::attach_error(
                    &format!("the uprobe on attach site {site} (offset {offset:#x})"),
                    &e,
                )
            })
    }

    /// The hit count of `site`, as the BPF counter holds it (32 bits).
    fn site_hits(&self, site: usize) -> Result<u32> {
        let hits = attach::site_hits(&self.skel, site..site + 1)?;
        Ok(hits.first().map_or(0, |&h| h as u32))
    }

    /// One churn cycle on `site`: attach, fire the site once (a probe that
    /// does not fire is not attached), detach.
    fn cycle(&self, site: usize) -> Result<ChurnCycle> {
        let start = Instant::now();
        let link = self.attach_site(site)?;
        let attached = Instant::now();
        let before = self.site_hits(site)?;
        sites::fire(site);
        let fired = self.site_hits(site)?.wrapping_sub(before);
        let detaching = Instant::now();
        drop(link);
        let ended = Instant::now();
        if fired != 1 {
            return Err(Error::runtime(format!(
                "the churned uprobe on attach site {site} was attached but hit {fired} times \
                 when its site ran once"
            )));
        }
        Ok(ChurnCycle {
            ended,
            attach_ns: attached.duration_since(start).as_nanos() as u64,
            detach_ns: ended.duration_since(detaching).as_nanos() as u64,
        })
    }
}

impl Workload for Churn {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        ctx.run(|| sites::fire(HIT_SITE));
        Ok(())
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        let others = self.offsets.len() - 1;
        while !ctx.should_stop() {
            let n = self.next_cycle.fetch_add(1, Relaxed) as usize;
            let cycle = self.cycle(1 + n % others)?;
            self.cycles
                .lock()
                .map_err(|_| Error::runtime("a churning thread panicked"))?
                .push(cycle);
        }
        Ok(())
    }

    fn read(&self, _ops: u64) -> Readings {
        // A failed read of the site's hits is unknown, not zero.
        let hits = match (self.hits.lock(), self.site_hits(HIT_SITE)) {
            (Ok(mut hits), Ok(now)) => Some(hits.update(now)),
            _ => None,
        };
        vec![hits]
    }

    fn facts(&self) -> Facts {
        let cycles = self.cycles.lock().map(|c| c.clone()).unwrap_or_default();
        Facts {
            churn: Some((self.churners, cycles)),
            ..Facts::default()
        }
    }
}
