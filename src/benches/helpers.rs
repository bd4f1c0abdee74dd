//! The helper family: what a BPF helper or kfunc costs per call, under the
//! kernel runner's names (`benchs/bench_bpf_loop.c`, `bench_bpf_for.c`,
//! `bench_strncmp.c`): `bpf_loop()` and the open-coded `bpf_for()` with an
//! empty body, per iteration, and `bpf_strncmp()` against a byte loop. Each
//! body runs from the trigger [`helper_trigger`] chooses; `helper-trigger-base`
//! measures the fallback trigger alone.

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use super::helper_trigger::{
    self, Body, HelperWorkload, KernelFunction, FENTRY_GETPGID, RAWTP_TEST_RUN, TP_GETPGID,
};
use super::{Benchmark, Info};
use crate::bpf::skel::helpers::{HelpersSkel, HelpersSkelBuilder};
use crate::bpf::{self, HitCounters};
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::Result;
use crate::figures::{self, Better, Figure, Show, Value};
use crate::lines::{self, NS_PER_HIT};
use crate::runner::SetUp;

/// The body's calls of the helper per trigger (CALLS_PER_TRIGGER in
/// `bpf/helpers.bpf.c`), as upstream's, up to 1000 iterations a call.
const CALLS_PER_TRIGGER: u64 = 1000;
/// The most iterations a trigger of the loops makes with more than one
/// call: past `--nr_loops` 1000 a trigger makes fewer calls, so that it
/// holds its CPU in the kernel (where neither the soft-lockup watchdog nor
/// Ctrl-C can interrupt it) for a few ms: at most
/// max(this, `--nr_loops`) = 8388608 iterations, 0.7 ns to 7.4 ns each
/// measured (docs/benchmarks.md, "How long a trigger holds a CPU").
const ITERATIONS_PER_TRIGGER: u64 = 1_000_000;
/// The kernel's BPF_MAX_LOOPS: bpf_loop() and bpf_iter_num_new() refuse more.
const MAX_LOOPS: u64 = 1 << 23;
/// STRNCMP_STR_SZ in `bpf/helpers.bpf.c`: the strings' size, their NUL included.
const STR_SZ: usize = 4096;

pub const NR_LOOPS: NumberOption = NumberOption {
    long: "nr_loops",
    short: None,
    value_name: "N",
    help: "Iterations of each loop: bpf_loop()'s count (bpf-loop, default 10), bpf_for()'s \
           (bpf-for, default 1000), or lookups per trigger (bpf-hashmap-lookup, default 1000000; at most 0.5 s of them, by \
           --key_size)",
    default: 10,
    min: 1,
    max: MAX_LOOPS,
    why_max: "the kernel's BPF_MAX_LOOPS: bpf_loop() and bpf_for() refuse more",
};
const NR_LOOPS_FOR: NumberOption = NumberOption {
    default: 1000,
    ..NR_LOOPS
};
pub const CMP_STR_LEN: NumberOption = NumberOption {
    long: "cmp-str-len",
    short: None,
    value_name: "LEN",
    help: "Length of the compared strings (strncmp-*)",
    default: 32,
    min: 1,
    max: STR_SZ as u64 - 1,
    why_max: "the strings are 4096 bytes, their NUL included",
};

/// One producer's time per op (a loop iteration, a comparison): the kernel
/// runner's `latency` of `ops_report_final`, lower is better.
pub const LATENCY: Figure = Figure {
    name: "latency",
    unit: "ns/op",
    better: Better::Lower,
    show: Show::Decimals(3),
    value: Value::OfRun(&NS_PER_HIT),
};

pub const BPF_LOOP: KernelFunction = KernelFunction {
    what: "the bpf_loop helper",
    name: "bpf_loop",
    since: "5.17",
};
const BPF_ITER_NUM: KernelFunction = KernelFunction {
    what: "the bpf_iter_num_new kfunc (bpf_for)",
    name: "bpf_iter_num_new",
    since: "6.4",
};
const BPF_STRNCMP: KernelFunction = KernelFunction {
    what: "the bpf_strncmp helper",
    name: "bpf_strncmp",
    since: "5.17",
};

static LOOP_OPTIONS: [BenchOption; 1] = [BenchOption::Number(NR_LOOPS)];
static FOR_OPTIONS: [BenchOption; 1] = [BenchOption::Number(NR_LOOPS_FOR)];
static STRNCMP_OPTIONS: [BenchOption; 1] = [BenchOption::Number(CMP_STR_LEN)];

pub static BENCHES: &[&dyn Benchmark] = &[
    &helper(
        "bpf-loop",
        "bpf_loop() with an empty callback, 1000 calls of --nr_loops iterations per trigger \
         (fewer past 1000 iterations: a million at most, or one call); one op is one iteration",
        Body {
            name: "bpf_loop",
            upstream: FENTRY_GETPGID,
            ops_per_trigger: CALLS_PER_TRIGGER,
            calls: &[BPF_LOOP],
        },
        Some(&LOOP_OPTIONS),
    ),
    &helper(
        "bpf-for",
        "an empty open-coded bpf_for() loop (the bpf_iter_num kfuncs), 1000 loops of \
         --nr_loops iterations per trigger (fewer past 1000 iterations: a million at most, or \
         one loop); one op is one iteration",
        Body {
            name: "bpf_for",
            upstream: FENTRY_GETPGID,
            ops_per_trigger: CALLS_PER_TRIGGER,
            calls: &[BPF_LOOP, BPF_ITER_NUM],
        },
        Some(&FOR_OPTIONS),
    ),
    &helper(
        "strncmp-no-helper",
        "compare two --cmp-str-len strings with a byte loop in BPF, once per trigger",
        Body {
            name: "strncmp_no_helper",
            upstream: TP_GETPGID,
            ops_per_trigger: 1,
            calls: &[],
        },
        Some(&STRNCMP_OPTIONS),
    ),
    &helper(
        "strncmp-helper",
        "compare two --cmp-str-len strings with bpf_strncmp(), once per trigger",
        Body {
            name: "strncmp_helper",
            upstream: TP_GETPGID,
            ops_per_trigger: 1,
            calls: &[BPF_STRNCMP],
        },
        Some(&STRNCMP_OPTIONS),
    ),
    &helper(
        "helper-trigger-base",
        "the helper benchmarks' fallback trigger alone: a raw_tp program run by \
         BPF_PROG_TEST_RUN that counts one hit",
        Body {
            name: "base",
            upstream: RAWTP_TEST_RUN,
            ops_per_trigger: 1,
            calls: &[],
        },
        None,
    ),
];

struct Helper {
    info: Info,
    body: Body,
}

/// A helper benchmark; `options` is its loop or string option (`None`:
/// the baseline). The loops report as upstream's: ops lines, and the time
/// per iteration as a figure.
const fn helper(
    name: &'static str,
    description: &'static str,
    body: Body,
    options: Option<&'static [BenchOption]>,
) -> Helper {
    let base = Info::hits(name, description)
        .untimed("one operation is one trigger, whose time is many iterations' or one run's")
        .needs(body.upstream.needs);
    let info = match options {
        Some(options) if body.ops_per_trigger > 1 => Info {
            figures: &[figures::HITS, LATENCY],
            lines: lines::HIT_OPS,
            ..base.options(options)
        },
        Some(options) => base.options(options),
        None => base,
    };
    Helper { info, body }
}

impl Benchmark for Helper {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let strings = self
            .info
            .options
            .contains(&BenchOption::Number(CMP_STR_LEN))
            .then(|| Strings::new(config.params.number(&CMP_STR_LEN) as usize));
        let nr_loops = self.info.options.iter().find_map(|o| match o {
            BenchOption::Number(n) if n.long == NR_LOOPS.long => Some(config.params.number(n)),
            _ => None,
        });
        // The loops make fewer calls of many iterations (see ITERATIONS_PER_TRIGGER).
        let body = match nr_loops {
            Some(nr_loops) => Body {
                ops_per_trigger: calls_per_trigger(nr_loops),
                ..self.body
            },
            None => self.body,
        };
        let (mut skel, link, used) = helper_trigger::load(&body, |program| {
            let mut storage = bpf::ObjectStorage::new();
            // SAFETY: this storage is opened once, and the skeleton goes into
            // an `Owned` with it (or, failing to load, drops before it).
            let mut open = HelpersSkelBuilder::default().open(unsafe { storage.object() })?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.tgid = std::process::id();
                // At most 1000: CALLS_PER_TRIGGER.
                rodata.calls_per_trigger = body.ops_per_trigger as u32;
                if let Some(strings) = &strings {
                    rodata.cmp_str_len = strings.len as u32;
                    rodata.target = strings.target;
                }
            }
            if let (Some(bss), Some(strings)) = (open.maps.bss_data.as_deref_mut(), &strings) {
                bss.str = strings.smaller;
            }
            for mut prog in open.open_object_mut().progs_mut() {
                if prog.name() == program {
                    prog.set_autoload(true);
                }
            }
            Ok(bpf::Owned::new(open.load()?, storage))
        })?;
        if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
            // Within u32: the option's maximum is BPF_MAX_LOOPS.
            bss.nr_loops = nr_loops.unwrap_or(0) as u32;
        }
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        let workload = HelperWorkload::<HelpersSkel<'static>>::new(skel, link, hits, body);
        Ok(SetUp::producers(workload).from_trigger(used))
    }
}

/// The loops' calls per trigger at `nr_loops` iterations a call: upstream's
/// 1000, fewer past 1000 iterations, one at least.
pub fn calls_per_trigger(nr_loops: u64) -> u64 {
    (ITERATIONS_PER_TRIGGER / nr_loops.max(1)).clamp(1, CALLS_PER_TRIGGER)
}

/// strncmp's two strings: `target`, digits and a NUL, and `smaller`, its
/// first `len` bytes with the last one less by one, then a NUL: every
/// comparison walks `len` bytes and finds it smaller. Upstream's digits are
/// random; which digits they are does not change the work.
struct Strings {
    len: usize,
    target: [i8; STR_SZ],
    smaller: [i8; STR_SZ],
}

impl Strings {
    fn new(len: usize) -> Strings {
        let len = len.clamp(1, STR_SZ - 1);
        let mut target = [0i8; STR_SZ];
        for (i, byte) in target[..STR_SZ - 1].iter_mut().enumerate() {
            *byte = (b'1' + (i * 7 % 9) as u8) as i8;
        }
        let mut smaller = [0i8; STR_SZ];
        smaller[..len].copy_from_slice(&target[..len]);
        smaller[len - 1] -= 1;
        Strings {
            len,
            target,
            smaller,
        }
    }
}
