//! `bpf-nop`, the kernel runner's timing inside BPF: a syscall program run by
//! BPF_PROG_TEST_RUN times a batch of calls of an empty body per run on its
//! CPU. Set-up sizes the batch to about 10 ms and checks that twice the
//! calls take twice the time; the run keeps the measured seconds' batches,
//! and their per-call times (outliers cut) give the figures. The
//! calibration is `calibrate.rs`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{ProgramInput, ProgramMut};

use super::{Benchmark, Info};
use crate::bpf::skel::timing::{TimingSkel, TimingSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::{Channel, Final, Readings, HITS};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Better, Figure, Show, Value};
use crate::kernel;
use crate::lines::{Cond, Lines, Num, Piece};
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};
use crate::stats::timing::TimingStats;
use crate::trigger_path::{Trigger, TriggerUsed};

mod calibrate;
pub(super) use calibrate::calibrate;

/// may_goto's budget and bpf_loop's limit are 2^23 passes, and calibration
/// runs twice the batch.
const MAX_BATCH: u64 = 1 << 22;
/// The batch the first calibration step times.
const SEED_BATCH: u64 = 100;
/// The rows and columns of `bpf/timing.bpf.c`'s samples.
const TIMING_CPUS: usize = 128;
const TIMING_SAMPLES: usize = 4096;
// The lines below say "its first 4096" of a CPU's batches.
const _: () = assert!(TIMING_SAMPLES == 4096);

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
    output_only: true,
};

/// The kernel runner's loop: may_goto in a syscall program.
pub const SYSCALL_MAY_GOTO: Trigger = Trigger {
    name: "syscall-may-goto",
    words: "may_goto loop in a syscall program run by BPF_PROG_TEST_RUN",
    needs: Needs::RunProgram,
    fallback: false,
};

/// Where the kernel lacks may_goto: a bpf_loop() loop instead.
pub const SYSCALL_BPF_LOOP: Trigger = Trigger {
    name: "syscall-bpf-loop",
    words: "bpf_loop() loop in a syscall program run by BPF_PROG_TEST_RUN",
    needs: Needs::RunProgram,
    fallback: false,
};

/// The measured seconds' batches, each one's time per call, summed up once
/// the run is over (outliers cut, as the kernel runner does).
const fn per_call(name: &'static str, about: &'static str) -> Channel {
    Channel::once(name, "ns/op", about)
}
pub(super) const SAMPLES: Channel = Channel::once(
    "samples",
    "batches",
    "the measured batches the per-call times come from",
);
pub(super) const MEDIAN_NS: Channel = per_call("median", "the median time per call");
pub(super) const STDDEV_NS: Channel = per_call("stddev", "the per-call times' standard deviation");
pub(super) const CV_PCT: Channel =
    Channel::once("cv", "%", "the per-call times' coefficient of variation");
pub(super) const MIN_NS: Channel = per_call("min", "the shortest time per call");
pub(super) const P99_NS: Channel = per_call("p99", "the 99th percentile of the time per call");
pub(super) const MAX_NS: Channel = per_call("max", "the longest time per call");

/// The batches timed (a CPU's first `TIMING_SAMPLES` of the measured
/// seconds, before the outliers' cut) and the batches run meanwhile: the
/// median line says which batches its samples are.
pub(super) const BATCHES_TIMED: Channel = Channel::once(
    "batches timed",
    "batches",
    "the measured seconds' batches a CPU timed (its first 4096), before the outliers' cut",
);
pub(super) const BATCHES_RUN: Channel = Channel::once(
    "batches run",
    "batches",
    "the batches run in the measured seconds",
);

pub(super) const CHANNELS: [Channel; 10] = [
    HITS,
    SAMPLES,
    MEDIAN_NS,
    STDDEV_NS,
    CV_PCT,
    MIN_NS,
    P99_NS,
    MAX_NS,
    BATCHES_TIMED,
    BATCHES_RUN,
];

/// A time per call, in ns, as the run kept it.
const fn ns_figure(name: &'static str, value: &'static Agg) -> Figure {
    Figure {
        name,
        unit: "ns/op",
        better: Better::Lower,
        show: Show::Decimals(2),
        value: Value::OfRun(value),
    }
}

/// The per-call time's median and 99th percentile, and its spread.
pub const MEDIAN: Figure = ns_figure("median", &Agg::Final(&MEDIAN_NS));
pub const P99: Figure = ns_figure("p99", &Agg::Final(&P99_NS));
pub const CV: Figure = Figure {
    unit: "%",
    ..ns_figure("cv", &Agg::Final(&CV_PCT))
};

pub(super) const TWO: Num = Num::fixed(0, 2);
/// The batches run that no CPU timed (its slots full).
pub(super) const BATCHES_UNTIMED: Agg =
    Agg::Sub(&Agg::Final(&BATCHES_RUN), &Agg::Final(&BATCHES_TIMED));

/// Which batches the timing line's samples are: `: every batch run, less
/// outliers`, or `: the 8192 batches timed of 1663783 run (a CPU times its
/// first 4096), less outliers`.
pub(super) const WHICH_BATCHES: [Piece; 3] = [
    Piece::When(
        Cond::Not(&Cond::Positive(BATCHES_UNTIMED)),
        &[Piece::Text(": every batch run")],
    ),
    Piece::When(
        Cond::Positive(BATCHES_UNTIMED),
        &[
            Piece::Text(": the "),
            Piece::Num(Agg::Final(&BATCHES_TIMED), Num::whole(0)),
            Piece::Text(" batches timed of "),
            Piece::Num(Agg::Final(&BATCHES_RUN), Num::whole(0)),
            Piece::Text(" run (a CPU times its first 4096)"),
        ],
    ),
    Piece::Text(", less outliers"),
];
pub(super) const SAMPLE_COUNT: Agg = Agg::Final(&SAMPLES);

/// After the summary (and a fixed run's block), the kernel runner's
/// timing line, named by `$name` (a [`Piece`]): `--machine-readable`'s
/// `RESULT` line, or the median's. xdp-lb's name its scenario.
macro_rules! timing_lines {
    ($name:expr) => {
        $crate::lines::Lines {
            after_summary: &[
                $crate::lines::Line::When(
                    $crate::lines::Cond::All(&[
                        $crate::lines::Cond::Exists($crate::benches::timing::SAMPLE_COUNT),
                        $crate::lines::Cond::Not(&$crate::lines::Cond::Positive(
                            $crate::benches::timing::SAMPLE_COUNT,
                        )),
                    ]),
                    &[$crate::lines::Piece::Text("No timing samples collected.")],
                ),
                $crate::lines::Line::When(
                    $crate::lines::Cond::All(&[
                        $crate::lines::Cond::Positive($crate::benches::timing::SAMPLE_COUNT),
                        $crate::lines::Cond::Flag(&$crate::benches::timing::MACHINE_READABLE),
                    ]),
                    &[
                        $crate::lines::Piece::Text("RESULT scenario="),
                        $name,
                        $crate::lines::Piece::Text(" samples="),
                        $crate::lines::Piece::Num(
                            $crate::benches::timing::SAMPLE_COUNT,
                            $crate::lines::Num::whole(0),
                        ),
                        $crate::lines::Piece::Text(" median="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::MEDIAN_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" stddev="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::STDDEV_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" cv="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::CV_PCT),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" min="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::MIN_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" p99="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::P99_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" max="),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::MAX_NS),
                            $crate::benches::timing::TWO,
                        ),
                    ],
                ),
                $crate::lines::Line::When(
                    $crate::lines::Cond::All(&[
                        $crate::lines::Cond::Positive($crate::benches::timing::SAMPLE_COUNT),
                        $crate::lines::Cond::Not(&$crate::lines::Cond::Flag(
                            &$crate::benches::timing::MACHINE_READABLE,
                        )),
                    ]),
                    &[
                        $name,
                        $crate::lines::Piece::Text(": median "),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::MEDIAN_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" ns/op, stddev "),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::STDDEV_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(", p99 "),
                        $crate::lines::Piece::Num(
                            $crate::figures::Agg::Final(&$crate::benches::timing::P99_NS),
                            $crate::benches::timing::TWO,
                        ),
                        $crate::lines::Piece::Text(" ("),
                        $crate::lines::Piece::Num(
                            $crate::benches::timing::SAMPLE_COUNT,
                            $crate::lines::Num::whole(0),
                        ),
                        $crate::lines::Piece::Text(" samples"),
                        $crate::lines::Piece::When(
                            $crate::lines::Cond::Exists($crate::benches::timing::BATCHES_UNTIMED),
                            &$crate::benches::timing::WHICH_BATCHES,
                        ),
                        $crate::lines::Piece::Text(")"),
                    ],
                ),
            ],
            ..$crate::lines::HITS
        }
    };
}
pub(super) use timing_lines;

/// The [`Area`] of a skeleton's mapped .bss that includes `bpf/timing.h`
/// (each object's skeleton has a .bss type of its own).
macro_rules! area_of {
    ($bss:expr) => {{
        let bss = $bss;
        // SAFETY: bpf/timing.h's area in the skeleton's mapped .bss; the
        // caller keeps the skeleton in the workload beside the area.
        unsafe {
            $crate::benches::timing::Area::new(
                bss.timing_samples.as_mut_ptr().cast(),
                bss.timing_idx.as_mut_ptr(),
                std::ptr::addr_of_mut!(bss.timing_enabled).cast(),
                std::ptr::addr_of_mut!(bss.batch_iters).cast(),
            )
        }
    }};
}
pub(super) use area_of;

const LINES: Lines = timing_lines!(Piece::Bench);

pub static BENCHES: &[&dyn Benchmark] = &[&BpfNop {
    info: Info::hits(
        "bpf-nop",
        "an empty body in a BPF loop, timed per CPU inside BPF in ~10 ms batches",
    )
    .needs(Needs::RunProgram)
    .untimed("the body's calls are timed inside BPF, a batch at a time")
    .options(&[
        BenchOption::Number(BATCH_ITERS),
        BenchOption::Flag(MACHINE_READABLE),
    ])
    .declares(&CHANNELS, &[figures::HITS, MEDIAN, P99, CV], LINES),
}];

struct BpfNop {
    info: Info,
}

/// The timing area of the program's .bss, mapped into this process.
pub(super) struct Area {
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
    /// The area of a program's .bss: its `timing_samples`, `timing_idx`,
    /// `timing_enabled` and `batch_iters` (bpf/timing.h).
    ///
    /// # Safety
    /// The pointers must point into the mmapped .bss of a skeleton that
    /// outlives the value, laid out as bpf/timing.h declares them.
    pub(super) unsafe fn new(
        samples: *mut u64,
        idx: *mut u32,
        enabled: *mut u32,
        batch: *mut u32,
    ) -> Area {
        Area {
            samples,
            idx,
            enabled,
            batch,
        }
    }

    fn word(&self, ptr: *mut u32) -> &AtomicU32 {
        // SAFETY: an aligned u32 of the mapped .bss (see the type's comment).
        unsafe { AtomicU32::from_ptr(ptr) }
    }

    pub(super) fn set_enabled(&self, on: bool) {
        self.word(self.enabled).store(u32::from(on), Relaxed);
    }

    pub(super) fn set_batch(&self, batch: u64) {
        self.word(self.batch).store(batch as u32, Relaxed);
    }

    /// Forgets every sample taken.
    pub(super) fn reset(&self) {
        for cpu in 0..TIMING_CPUS {
            // SAFETY: row `cpu` of the mapped array.
            self.word(unsafe { self.idx.add(cpu) }).store(0, Relaxed);
        }
    }

    /// Every batch time taken since the last reset, CPU by CPU.
    pub(super) fn batch_times(&self) -> Vec<u64> {
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

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let mut workload = self.load(config)?;
        if workload.batch == 0 {
            workload.batch = workload.calibrate()?;
        }
        workload.area.set_batch(workload.batch);
        workload.area.reset();
        let used = workload.used.clone();
        Ok(SetUp::producers(workload).from_trigger(used))
    }

    // The batch is sized by timing it, and a machine too noisy (an emulated
    // guest) refuses the run: that says nothing of whether the kernel loads
    // and runs the program, which one run of a small batch does.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        let workload = self.load(config)?;
        workload.area.set_batch(SEED_BATCH);
        workload.run_once(&workload.program()?)?;
        let used = workload.used.clone();
        Ok(SetUp::producers(workload).from_trigger(used))
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
            Ok(skel) => (skel, TriggerUsed::own(SYSCALL_MAY_GOTO)),
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
                    path: SYSCALL_BPF_LOOP,
                    refused: Some((SYSCALL_MAY_GOTO, why)),
                };
                (skel, used)
            }
            Err(err) => return Err(bpf::load_error("the bpf-nop program", &err)),
        };
        NopWorkload::new(skel, used, config.params.number(&BATCH_ITERS))
    }
}

/// Whether the kernel lacks may_goto (6.9): one without bpf_loop (5.17)
/// does, and one that refuses bpf-nop's may_goto loop as an instruction it
/// does not know (EINVAL).
pub(super) fn lacks_may_goto() -> bool {
    lacks_bpf_loop()
        || matches!(load_program(MAY_GOTO_PROGRAM), Err(err) if bpf::errno(&err) == Some(libc::EINVAL))
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
    measured: Measured,
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
        let area = area_of!(skel
            .maps
            .bss_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the bpf-nop object's .bss is not memory-mapped"))?);
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
            SYSCALL_BPF_LOOP => BPF_LOOP_PROGRAM,
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

    fn calibrate(&self) -> Result<u64> {
        let program = self.program()?;
        calibrate(&self.area, || self.run_once(&program))
    }
}

/// The hits when the measured seconds began and ended: the batches run
/// meanwhile.
#[derive(Default)]
pub(super) struct Measured([AtomicU64; 2]);

impl Measured {
    /// At `Workload::measuring(on)`: the area timing from a clean start (or
    /// no longer), and the hits counted so far.
    pub(super) fn switch(&self, area: &Area, on: bool, hits: u64) {
        if on {
            area.reset();
        }
        area.set_enabled(on);
        self.0[usize::from(!on)].store(hits, Relaxed);
    }

    /// The batches run between the marks, of `hits_per_batch` hits each.
    pub(super) fn batches(&self, hits_per_batch: u64) -> u64 {
        let [from, to] = [0, 1].map(|i| self.0[i].load(Relaxed));
        to.saturating_sub(from) / hits_per_batch.max(1)
    }
}

/// The measured batches' per-call times, summed up (outliers cut, as the
/// kernel runner does) as the timing channels' finals, with how many
/// batches were timed of the `batches_run`.
pub(super) fn per_call_finals(area: &Area, batch: u64, batches_run: u64) -> Vec<Final> {
    let per_call: Vec<f64> = area
        .batch_times()
        .into_iter()
        .map(|ns| ns as f64 / batch as f64)
        .collect();
    let mut finals = vec![
        Final::of(&BATCHES_TIMED, per_call.len() as f64),
        Final::of(&BATCHES_RUN, batches_run as f64),
    ];
    match TimingStats::of(&per_call) {
        None => finals.push(Final::of(&SAMPLES, 0.0)),
        Some(s) => finals.extend([
            Final::of(&SAMPLES, s.samples as f64),
            Final::of(&MEDIAN_NS, s.median),
            Final::of(&STDDEV_NS, s.stddev),
            Final::of(&CV_PCT, s.cv_pct),
            Final::of(&MIN_NS, s.min),
            Final::of(&P99_NS, s.p99),
            Final::of(&MAX_NS, s.max),
        ]),
    }
    finals
}

impl Workload for NopWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let program = self.program()?;
        ctx.try_run(|| {
            self.run_once(&program)?;
            Ok(self.batch)
        })
    }

    fn read(&self, _ops: u64) -> Readings {
        self.hits.readings()
    }

    fn measuring(&self, on: bool) {
        self.measured.switch(&self.area, on, self.hits.total());
    }

    fn facts(&self) -> Facts {
        Facts {
            finals: per_call_finals(&self.area, self.batch, self.measured.batches(self.batch)),
            ..Facts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    #[test]
    fn the_timing_line_follows_the_summary() {
        let finals = [
            ("samples", None, 2712.0),
            ("median", None, 0.84),
            ("stddev", None, 0.1),
            ("cv", None, 11.9),
            ("min", None, 0.8),
            ("p99", None, 1.2),
            ("max", None, 3.0),
        ];
        let lines = testing::summary_with("bpf-nop", &[[1u64]], 1, &finals);
        assert_eq!(
            lines[1],
            "bpf-nop: median 0.84 ns/op, stddev 0.10, p99 1.20 (2712 samples)"
        );
        let none = testing::summary_with("bpf-nop", &[[1u64]], 1, &[("samples", None, 0.0)]);
        assert_eq!(none[1], "No timing samples collected.");
        let fixed = testing::fixed_with("bpf-nop", &[1], 1, &finals);
        assert_eq!(
            fixed.last().map(String::as_str),
            Some("bpf-nop: median 0.84 ns/op, stddev 0.10, p99 1.20 (2712 samples)")
        );
        let run = testing::run_with("bpf-nop", &[[1u64]], 1, &finals);
        assert_eq!(run.figure("median"), Some(0.84));
    }
}
