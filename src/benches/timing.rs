//! `bpf-nop`, the kernel runner's timing inside BPF: a syscall program run by
//! BPF_PROG_TEST_RUN times a batch of calls of an empty body per run on its
//! CPU. Set-up sizes the batch to about 10 ms and checks that twice the
//! calls take twice the time; the run keeps the measured seconds' batches,
//! and their per-call times (outliers cut) give the figures.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{ProgramInput, ProgramMut};

use super::{Benchmark, Info};
use crate::bpf::skel::timing::{TimingSkel, TimingSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Better, Figure};
use crate::kernel;
use crate::results::RunRecord;
use crate::runner::{Counts, ProducerCtx, Workload};
use crate::stats::timing::{self, TimingStats};
use crate::trigger_path::{TriggerPath, TriggerUsed};

/// may_goto's budget and bpf_loop's limit are 2^23 passes, and calibration
/// runs twice the batch.
const MAX_BATCH: u64 = 1 << 22;
/// The runs each calibration step takes the median of.
const CALIBRATE_RUNS: usize = 5;
/// The batch the first calibration step times.
const SEED_BATCH: u64 = 100;
/// The rows and columns of `bpf/timing.bpf.c`'s samples.
const TIMING_CPUS: usize = 128;
const TIMING_SAMPLES: usize = 4096;
/// The batches a CPU times while measuring: the first TIMING_SAMPLES.
pub const TIMED_PER_CPU: usize = TIMING_SAMPLES;

pub const BATCH_ITERS: NumberOption = NumberOption {
    long: "batch-iters",
    short: None,
    value_name: "N",
    help: "Calls of the body per timed batch (0: sized to about 10 ms and checked)",
    default: 0,
    min: 0,
    max: MAX_BATCH,
    why_max: "calibration times twice the batch, and a program's loop makes at most 2^23 passes",
};

pub const MACHINE_READABLE: FlagOption = FlagOption {
    long: "machine-readable",
    help: "Print the timing as a machine-readable RESULT line",
};

/// What the run keeps (`Workload::figures`), by name.
pub const KEPT_SAMPLES: &str = "samples";
/// The batches timed (the first TIMING_SAMPLES a CPU, before the outliers'
/// cut) and the batches run, over the measured seconds.
pub const KEPT_TIMED: &str = "batches timed";
pub const KEPT_BATCHES: &str = "batches run";
pub const KEPT_MEDIAN: &str = "median";
pub const KEPT_STDDEV: &str = "stddev";
pub const KEPT_CV: &str = "cv";
pub const KEPT_MIN: &str = "min";
pub const KEPT_P99: &str = "p99";
pub const KEPT_MAX: &str = "max";

/// A time per call, in ns, as the run kept it.
const fn ns_figure(
    name: &'static str,
    unit: &'static str,
    of_run: fn(&RunRecord) -> Option<f64>,
) -> Figure {
    Figure {
        name,
        unit,
        better: Better::Lower,
        of_run,
        per_second: None,
        show: ns_per_op,
        show_spread: ns_per_op_with_sd,
    }
}

/// The per-call time's median and 99th percentile, and its spread.
pub const MEDIAN: Figure = ns_figure("median", "median ns/op", |run| {
    figures::kept(run, KEPT_MEDIAN)
});
pub const P99: Figure = ns_figure("p99", "p99 ns/op", |run| figures::kept(run, KEPT_P99));
pub const CV: Figure = Figure {
    name: "cv",
    unit: "cv %",
    better: Better::Lower,
    of_run: |run| figures::kept(run, KEPT_CV),
    per_second: None,
    show: |pct| format!("{pct:.2} %"),
    show_spread: |mean, sd| format!("{mean:.2} \u{b1} {sd:.2} %"),
};

fn ns_per_op(ns: f64) -> String {
    format!("{ns:.2} ns/op")
}

fn ns_per_op_with_sd(mean: f64, sd: f64) -> String {
    format!("{mean:.2} \u{b1} {sd:.2} ns/op")
}

pub static BENCHES: &[&dyn Benchmark] = &[&BpfNop {
    info: Info {
        figures: &[figures::HITS, MEDIAN, P99, CV],
        ..Info::hits(
            "bpf-nop",
            "an empty body in a BPF loop, timed per CPU inside BPF in ~10 ms batches",
        )
        .needs(Needs::RunProgram)
        .untimed("the body's calls are timed inside BPF, a batch at a time")
        .options(&[
            BenchOption::Number(BATCH_ITERS),
            BenchOption::Flag(MACHINE_READABLE),
        ])
    },
}];

struct BpfNop {
    info: Info,
}

/// The timing area of the program's .bss, mapped into this process.
struct Area {
    samples: *mut u64,
    idx: *mut u32,
    enabled: *mut u32,
    batch: *mut u32,
}

// SAFETY: the pointers target the mmapped .bss of the skeleton that the
// owning workload keeps alive as long as this value; every access is atomic.
unsafe impl Send for Area {}
unsafe impl Sync for Area {}

impl Area {
    fn word(&self, ptr: *mut u32) -> &AtomicU32 {
        // SAFETY: an aligned u32 of the mapped .bss (see the type's comment).
        unsafe { AtomicU32::from_ptr(ptr) }
    }

    fn set_enabled(&self, on: bool) {
        self.word(self.enabled).store(u32::from(on), Relaxed);
    }

    fn set_batch(&self, batch: u64) {
        self.word(self.batch).store(batch as u32, Relaxed);
    }

    /// Forgets every sample taken.
    fn reset(&self) {
        for cpu in 0..TIMING_CPUS {
            // SAFETY: row `cpu` of the mapped array.
            self.word(unsafe { self.idx.add(cpu) }).store(0, Relaxed);
        }
    }

    /// Every batch time taken since the last reset, CPU by CPU.
    fn batch_times(&self) -> Vec<u64> {
        let mut times = Vec::new();
        for cpu in 0..TIMING_CPUS {
            // SAFETY: row `cpu` of the mapped arrays.
            let taken = self.word(unsafe { self.idx.add(cpu) }).load(Relaxed) as usize;
            for i in 0..taken.min(TIMING_SAMPLES) {
                // SAFETY: within row `cpu`, an aligned u64 of the mapping.
                let slot =
                    unsafe { AtomicU64::from_ptr(self.samples.add(cpu * TIMING_SAMPLES + i)) };
                match slot.load(Relaxed) {
                    0 => {}
                    ns => times.push(ns),
                }
            }
        }
        times
    }
}

impl Benchmark for BpfNop {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let mut workload = self.load(config)?;
        if workload.batch == 0 {
            workload.batch = workload.calibrate()?;
        }
        workload.area.set_batch(workload.batch);
        workload.area.reset();
        Ok(Box::new(workload))
    }

    // The batch is sized by timing it, and a machine too noisy (an emulated
    // guest) refuses the run: that says nothing of whether the kernel loads
    // and runs the program, which one run of a small batch does.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let workload = self.load(config)?;
        workload.area.set_batch(SEED_BATCH);
        workload.run_once(&workload.program()?)?;
        Ok(Box::new(workload))
    }
}

/// The program that times the batches: the kernel runner's may_goto loop,
/// or, where the kernel lacks may_goto, a bpf_loop() loop.
const MAY_GOTO_PROGRAM: &str = "drive_nop";
const BPF_LOOP_PROGRAM: &str = "drive_nop_bpf_loop";

impl BpfNop {
    /// The program loaded, its timing area mapped, the batch as asked: the
    /// may_goto loop where the kernel takes it, else the bpf_loop() one,
    /// said as the run's trigger.
    fn load(&self, config: &RunConfig) -> Result<NopWorkload> {
        let (skel, used) = match load_program(MAY_GOTO_PROGRAM) {
            Ok(skel) => {
                let used = TriggerUsed {
                    path: TriggerPath::SyscallMayGoto,
                    refused: None,
                };
                (skel, used)
            }
            // The verifier rejects an instruction it does not know with
            // EINVAL; any other refusal is not about the loop, but on a
            // kernel without bpf_loop (before 5.17, which also lacks the
            // syscall program type: 5.10 answers E2BIG) that lack says why.
            Err(err) if bpf::errno(&err) == Some(libc::EINVAL) || lacks_bpf_loop() => {
                super::helper_trigger::lacking(&[super::helpers::BPF_LOOP])?;
                let skel = load_program(BPF_LOOP_PROGRAM)
                    .map_err(|e| bpf::load_error("the bpf-nop program", &e))?;
                let why = kernel::needs_linux("the may_goto instruction needs", "6.9");
                let used = TriggerUsed {
                    path: TriggerPath::SyscallBpfLoop,
                    refused: Some((TriggerPath::SyscallMayGoto, why)),
                };
                (skel, used)
            }
            Err(err) => return Err(bpf::load_error("the bpf-nop program", &err)),
        };
        NopWorkload::new(skel, used, config.params.number(&BATCH_ITERS))
    }
}

/// Whether the kernel's BTF says it has no bpf_loop helper.
fn lacks_bpf_loop() -> bool {
    super::helper_trigger::lacking(&[super::helpers::BPF_LOOP]).is_err()
}

/// The object loaded with `program` alone on.
fn load_program(
    program: &str,
) -> std::result::Result<bpf::Owned<TimingSkel<'static>>, libbpf_rs::Error> {
    let mut storage = bpf::ObjectStorage::new();
    // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
    // with it.
    let mut open = TimingSkelBuilder::default().open(unsafe { storage.object() })?;
    for mut prog in open.open_object_mut().progs_mut() {
        prog.set_autoload(prog.name() == program);
    }
    let skel = open.load()?;
    Ok(bpf::Owned::new(skel, storage))
}

/// Producers run the program; it times its batches and counts its calls.
struct NopWorkload {
    area: Area,
    hits: HitCounters,
    /// The hits (passes) when the measured seconds began and ended.
    measured: [AtomicU64; 2],
    batch: u64,
    used: TriggerUsed,
    skel: bpf::Owned<TimingSkel<'static>>,
}

impl NopWorkload {
    fn new(
        mut skel: bpf::Owned<TimingSkel<'static>>,
        used: TriggerUsed,
        batch: u64,
    ) -> Result<NopWorkload> {
        let bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the bpf-nop object's .bss is not memory-mapped"))?;
        let area = Area {
            samples: bss.timing_samples.as_mut_ptr().cast(),
            idx: bss.timing_idx.as_mut_ptr(),
            enabled: std::ptr::addr_of_mut!(bss.timing_enabled).cast(),
            batch: std::ptr::addr_of_mut!(bss.batch_iters).cast(),
        };
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(NopWorkload {
            area,
            hits,
            measured: Default::default(),
            batch,
            used,
            skel,
        })
    }

    /// The loaded program that times the batches.
    fn program(&self) -> Result<ProgramMut<'_>> {
        let name = self.program_name();
        self.skel
            .object()
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| Error::setup(format!("the bpf-nop object has no program {name}")))
    }

    fn program_name(&self) -> &'static str {
        match self.used.path {
            TriggerPath::SyscallBpfLoop => BPF_LOOP_PROGRAM,
            _ => MAY_GOTO_PROGRAM,
        }
    }

    /// One batch: one run of `program` (found once by the caller, not per run).
    fn run_once(&self, program: &ProgramMut<'_>) -> Result<()> {
        program.test_run(ProgramInput::default()).map_err(|e| {
            Error::runtime(format!(
                "BPF_PROG_TEST_RUN of {} failed: {e:#}",
                self.program_name()
            ))
        })?;
        Ok(())
    }

    /// The median time of a few runs of `batch` calls.
    fn median_time(&self, batch: u64) -> Result<u64> {
        self.area.reset();
        self.area.set_batch(batch);
        self.area.set_enabled(true);
        let program = self.program()?;
        let runs: Result<()> = (0..CALIBRATE_RUNS).try_for_each(|_| self.run_once(&program));
        self.area.set_enabled(false);
        runs?;
        Ok(timing::median_of(&self.area.batch_times()).unwrap_or(0))
    }

    /// The batch that takes about 10 ms, checked for proportionality: a
    /// failed check refuses the run (exit 5), as no per-call time can be
    /// taken from batches whose time is not their calls'.
    fn calibrate(&self) -> Result<u64> {
        let seed = self.median_time(SEED_BATCH)?;
        let batch = timing::batch_for(seed / SEED_BATCH, MAX_BATCH);
        let time_n = self.median_time(batch)?;
        let time_2n = self.median_time(2 * batch)?;
        timing::proportionality(time_n, time_2n).map_err(|d| {
            Error::setup(format!(
                "proportionality check failed (2N/N ratio={:.3}, expected=2.000, \
                 error={:.1}%) for N = {batch} calls: a batch's time is not proportional to its \
                 calls (system noise, or a fixed cost per batch), so no per-call time is taken",
                d.ratio, d.error_pct
            ))
        })?;
        Ok(batch)
    }
}

impl Workload for NopWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let program = self.program()?;
        ctx.try_run(|| {
            self.run_once(&program)?;
            Ok(self.batch)
        })
    }

    fn measure(&self, _ops: u64) -> Counts {
        self.hits.counts()
    }

    fn trigger(&self) -> Option<TriggerUsed> {
        Some(self.used.clone())
    }

    fn measuring(&self, on: bool) {
        if on {
            self.area.reset();
        }
        self.area.set_enabled(on);
        self.measured[usize::from(!on)].store(self.hits.total(), Relaxed);
    }

    fn figures(&self) -> Vec<(&'static str, f64)> {
        let per_call: Vec<f64> = self
            .area
            .batch_times()
            .into_iter()
            .map(|ns| ns as f64 / self.batch as f64)
            .collect();
        let [from, to] = [0, 1].map(|i| self.measured[i].load(Relaxed));
        let batches = (to.saturating_sub(from) / self.batch.max(1)) as f64;
        let counted = [(KEPT_TIMED, per_call.len() as f64), (KEPT_BATCHES, batches)];
        let Some(s) = TimingStats::of(&per_call) else {
            return vec![(KEPT_SAMPLES, 0.0)];
        };
        vec![
            counted[0],
            counted[1],
            (KEPT_SAMPLES, s.samples as f64),
            (KEPT_MEDIAN, s.median),
            (KEPT_STDDEV, s.stddev),
            (KEPT_CV, s.cv_pct),
            (KEPT_MIN, s.min),
            (KEPT_P99, s.p99),
            (KEPT_MAX, s.max),
        ]
    }
}
