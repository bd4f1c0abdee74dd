//! The in-kernel trigger family: a driver program run with BPF_PROG_TEST_RUN
//! calls the probed kernel function `--trig-batch-iters` times per run, and a
//! counting program on that function counts every trigger.

use std::path::Path;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, ProgramInput};

use super::{Benchmark, Info};
use crate::bpf::skel::trigger::{TriggerSkel, TriggerSkelBuilder};
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::config::{BenchOption, RunConfig};
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::{Counts, ProducerCtx, Workload};

pub const BATCH_ITERS: BenchOption = BenchOption {
    long: "trig-batch-iters",
    short: None,
    value_name: "N",
    help: "Triggers per BPF_PROG_TEST_RUN call of the in-kernel driver",
    default: 100,
    min: 1,
    max: 1000,
    why_max: "",
};

/// The driver programs of `bpf/trigger.bpf.c`, by what they call in their loop.
/// Nothing: the driver counts itself.
const DRIVE_COUNT: &str = "drive_count";
/// The bpf_get_numa_node_id helper.
const DRIVE_HELPER: &str = "drive_helper";
/// The bpf_modify_return_test_tp kfunc, which fires bpf_trigger_tp.
const DRIVE_KFUNC: &str = "drive_kfunc";

/// A counting program of `bpf/trigger.bpf.c` and how the kernel may refuse it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    program: &'static str,
    /// For messages: "the kprobe".
    what: &'static str,
    class: Class,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// A classic tracepoint: its id comes from tracefs.
    Tracepoint,
    RawTracepoint,
    /// fentry, fexit, fmod_ret: refused under lockdown or by an LSM.
    Tracing,
    Kprobe {
        multi: bool,
    },
}

const fn counter(program: &'static str, what: &'static str, class: Class) -> Option<Probe> {
    Some(Probe {
        program,
        what,
        class,
    })
}

pub static BENCHES: &[&dyn Benchmark] = &[
    &trigger(
        "trig-kernel-count",
        DRIVE_COUNT,
        None,
        "the driver counts in BPF, nothing probed: the in-kernel baseline",
    ),
    &trigger(
        "trig-fentry",
        DRIVE_HELPER,
        counter("count_fentry", "the fentry program", Class::Tracing),
        "fentry program on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-fexit",
        DRIVE_HELPER,
        counter("count_fexit", "the fexit program", Class::Tracing),
        "fexit program on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-fmodret",
        DRIVE_KFUNC,
        counter("count_fmodret", "the fmod_ret program", Class::Tracing),
        "fmod_ret program on the bpf_modify_return_test_tp kfunc",
    ),
    &trigger(
        "trig-rawtp",
        DRIVE_KFUNC,
        counter(
            "count_rawtp",
            "the raw tracepoint program",
            Class::RawTracepoint,
        ),
        "raw tracepoint program on bpf_trigger_tp",
    ),
    &trigger(
        "trig-tp",
        DRIVE_KFUNC,
        counter("count_tp", "the tracepoint program", Class::Tracepoint),
        "tracepoint program on bpf_test_run:bpf_trigger_tp",
    ),
    &trigger(
        "trig-kprobe",
        DRIVE_HELPER,
        counter("count_kprobe", "the kprobe", Class::Kprobe { multi: false }),
        "kprobe on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kretprobe",
        DRIVE_HELPER,
        counter(
            "count_kretprobe",
            "the kretprobe",
            Class::Kprobe { multi: false },
        ),
        "kretprobe on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kprobe-multi",
        DRIVE_HELPER,
        counter(
            "count_kprobe_multi",
            "the kprobe-multi link",
            Class::Kprobe { multi: true },
        ),
        "kprobe-multi link on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kretprobe-multi",
        DRIVE_HELPER,
        counter(
            "count_kretprobe_multi",
            "the kretprobe-multi link",
            Class::Kprobe { multi: true },
        ),
        "kretprobe-multi link on bpf_get_numa_node_id",
    ),
];

/// The kfunc that the kfunc driver calls (Linux 6.10+).
const KFUNC: &str = "bpf_modify_return_test_tp";

struct KernelTrigger {
    info: Info,
    /// The driver program's name.
    driver: &'static str,
    /// The counting program; none for the baseline, whose driver counts.
    probe: Option<Probe>,
}

const fn trigger(
    name: &'static str,
    driver: &'static str,
    probe: Option<Probe>,
    description: &'static str,
) -> KernelTrigger {
    KernelTrigger {
        info: Info::hits(name, description)
            .needs(match probe {
                None => Needs::RunProgram,
                Some(Probe {
                    class: Class::Tracepoint,
                    ..
                }) => Needs::TracepointEvent,
                Some(Probe {
                    class: Class::Kprobe { multi: false },
                    ..
                }) => Needs::KprobeEvent,
                Some(_) => Needs::Link,
            })
            .options(&[BATCH_ITERS]),
        driver,
        probe,
    }
}

impl KernelTrigger {
    /// Why the kernel refused to load this benchmark's programs.
    fn load_refused(&self, err: &libbpf_rs::Error) -> Error {
        if self.driver == DRIVE_KFUNC && kernel::btf_has_func(KFUNC) == Some(false) {
            return Error::unsupported(kernel::needs_linux(
                &format!("the {KFUNC} kfunc needs"),
                "6.10",
            ));
        }
        let Some(probe) = self.probe else {
            return bpf::load_error("the driver program", err);
        };
        if probe.class == Class::Tracing && bpf::errno(err) == Some(libc::EPERM) {
            return Error::unsupported("tracing programs are refused (EPERM: lockdown or an LSM)");
        }
        bpf::load_error(&format!("{} or its driver", probe.what), err)
    }

    /// Why the kernel refused to attach, with the kernel's configuration as
    /// the witness where it explains the refusal.
    fn attach_refused(&self, probe: Probe, err: &libbpf_rs::Error) -> Error {
        if let Class::Kprobe { multi } = probe.class {
            if multi && kernel::config_is_off("CONFIG_FPROBE") {
                return Error::unsupported(format!(
                    "kprobe-multi links need CONFIG_FPROBE (Linux 5.18+), which {} is built without",
                    kernel::release()
                ));
            }
            if kernel::config_is_off("CONFIG_KPROBES") {
                return Error::unsupported("kprobes not available (CONFIG_KPROBES is not set)");
            }
            if !multi && !Path::new("/sys/bus/event_source/devices/kprobe").exists() {
                return Error::unsupported("kprobes not available (no kprobe PMU)");
            }
        }
        bpf::attach_error(probe.what, err)
    }
}

impl Benchmark for KernelTrigger {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let batch = config.params.get(&BATCH_ITERS);
        if self.probe.is_some_and(|p| p.class == Class::Tracepoint) {
            kernel::ensure_tracefs().map_err(Error::unsupported)?;
        }
        let mut open = TriggerSkelBuilder::default()
            .open(bpf::object_storage())
            .map_err(|e| bpf::load_error("the trigger BPF object", &e))?;
        let rodata = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the trigger object has no .rodata"))?;
        rodata.batch_iters = u32::try_from(batch)
            .map_err(|_| Error::usage(format!("--trig-batch-iters {batch} is too large")))?;
        // Every program is off by default: turn on this benchmark's two.
        let wanted = |name: &std::ffi::OsStr| {
            name == self.driver || self.probe.is_some_and(|p| name == p.program)
        };
        for mut prog in open.open_object_mut().progs_mut() {
            if wanted(prog.name()) {
                prog.set_autoload(true);
            }
        }
        let skel = open.load().map_err(|e| self.load_refused(&e))?;

        let find = |name: &str| {
            skel.object()
                .progs_mut()
                .find(|p| p.name() == name)
                .ok_or_else(|| Error::setup(format!("the trigger object has no program {name}")))
        };
        let link = match self.probe {
            Some(probe) => Some(
                find(probe.program)?
                    .attach()
                    .map_err(|e| self.attach_refused(probe, &e))?,
            ),
            None => None,
        };
        // The driver is found again by each producer; check it exists now.
        find(self.driver)?;
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(Box::new(DrivenTrigger {
            _link: link,
            hits,
            driver: self.driver,
            batch,
            skel,
        }))
    }
}

/// Producers run the driver; the counting program (or the driver) counts.
struct DrivenTrigger {
    // Fields drop in order: the link detaches before the object is closed.
    _link: Option<Link>,
    hits: HitCounters,
    /// The driver program's name in `skel`.
    driver: &'static str,
    batch: u64,
    skel: TriggerSkel<'static>,
}

impl Workload for DrivenTrigger {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let driver = self
            .skel
            .object()
            .progs_mut()
            .find(|p| p.name() == self.driver)
            .ok_or_else(|| {
                Error::setup(format!("the trigger object has no program {}", self.driver))
            })?;
        ctx.try_run(|| {
            // No input, no output: what raw_tp test runs take.
            driver.test_run(ProgramInput::default()).map_err(|e| {
                Error::runtime(format!("BPF_PROG_TEST_RUN of the driver failed: {e:#}"))
            })?;
            Ok(self.batch)
        })
    }

    fn measure(&self, _ops: u64) -> Counts {
        self.hits.counts()
    }
}
