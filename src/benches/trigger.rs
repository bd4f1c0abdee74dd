//! The in-kernel trigger family: a driver program run with BPF_PROG_TEST_RUN
//! calls the probed kernel function `--trig-batch-iters` times per run, and a
//! counting program on that function counts every trigger.

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenProgramMut, ProgramMut};

use super::{BenchOption, Benchmark, RunConfig};
use crate::bpf::skel::trigger::{TriggerSkel, TriggerSkelBuilder};
use crate::bpf::{self, HitCounters};
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

pub static BENCHES: &[&dyn Benchmark] = &[
    &trigger(
        "trig-kernel-count",
        Driver::Count,
        Probe::None,
        "the driver counts in BPF, nothing probed: the in-kernel baseline",
    ),
    &trigger(
        "trig-fentry",
        Driver::Helper,
        Probe::Fentry,
        "fentry program on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-fexit",
        Driver::Helper,
        Probe::Fexit,
        "fexit program on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-fmodret",
        Driver::Kfunc,
        Probe::Fmodret,
        "fmod_ret program on the bpf_modify_return_test_tp kfunc",
    ),
    &trigger(
        "trig-rawtp",
        Driver::Kfunc,
        Probe::RawTp,
        "raw tracepoint program on bpf_trigger_tp",
    ),
    &trigger(
        "trig-tp",
        Driver::Kfunc,
        Probe::Tp,
        "tracepoint program on bpf_test_run:bpf_trigger_tp",
    ),
    &trigger(
        "trig-kprobe",
        Driver::Helper,
        Probe::Kprobe,
        "kprobe on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kretprobe",
        Driver::Helper,
        Probe::Kretprobe,
        "kretprobe on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kprobe-multi",
        Driver::Helper,
        Probe::KprobeMulti,
        "kprobe-multi link on bpf_get_numa_node_id",
    ),
    &trigger(
        "trig-kretprobe-multi",
        Driver::Helper,
        Probe::KretprobeMulti,
        "kretprobe-multi link on bpf_get_numa_node_id",
    ),
];

/// The kfunc that the Kfunc driver calls (Linux 6.10+).
const KFUNC: &str = "bpf_modify_return_test_tp";

/// What the driver program calls in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Driver {
    /// Nothing: it counts itself.
    Count,
    /// The bpf_get_numa_node_id helper.
    Helper,
    /// The bpf_modify_return_test_tp kfunc, which fires bpf_trigger_tp.
    Kfunc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    None,
    Tp,
    RawTp,
    Fmodret,
    Fentry,
    Fexit,
    Kprobe,
    Kretprobe,
    KprobeMulti,
    KretprobeMulti,
}

impl Probe {
    fn what(self) -> &'static str {
        match self {
            Probe::None => "nothing",
            Probe::Tp => "the tracepoint program",
            Probe::RawTp => "the raw tracepoint program",
            Probe::Fmodret => "the fmod_ret program",
            Probe::Fentry => "the fentry program",
            Probe::Fexit => "the fexit program",
            Probe::Kprobe => "the kprobe",
            Probe::Kretprobe => "the kretprobe",
            Probe::KprobeMulti => "the kprobe-multi link",
            Probe::KretprobeMulti => "the kretprobe-multi link",
        }
    }

    fn is_tracing(self) -> bool {
        matches!(self, Probe::Fentry | Probe::Fexit | Probe::Fmodret)
    }

    fn is_kprobe(self) -> bool {
        matches!(
            self,
            Probe::Kprobe | Probe::Kretprobe | Probe::KprobeMulti | Probe::KretprobeMulti
        )
    }
}

struct KernelTrigger {
    name: &'static str,
    description: &'static str,
    driver: Driver,
    probe: Probe,
}

const fn trigger(
    name: &'static str,
    driver: Driver,
    probe: Probe,
    description: &'static str,
) -> KernelTrigger {
    KernelTrigger {
        name,
        description,
        driver,
        probe,
    }
}

/// The programs of `skel` that a benchmark turns on, by role.
fn driver_prog<'a, 'obj>(
    progs: &'a mut crate::bpf::skel::trigger::OpenTriggerProgs<'obj>,
    driver: Driver,
) -> &'a mut OpenProgramMut<'obj> {
    match driver {
        Driver::Count => &mut progs.drive_count,
        Driver::Helper => &mut progs.drive_helper,
        Driver::Kfunc => &mut progs.drive_kfunc,
    }
}

fn probe_prog<'a, 'obj>(
    progs: &'a mut crate::bpf::skel::trigger::OpenTriggerProgs<'obj>,
    probe: Probe,
) -> Option<&'a mut OpenProgramMut<'obj>> {
    Some(match probe {
        Probe::None => return None,
        Probe::Tp => &mut progs.count_tp,
        Probe::RawTp => &mut progs.count_rawtp,
        Probe::Fmodret => &mut progs.count_fmodret,
        Probe::Fentry => &mut progs.count_fentry,
        Probe::Fexit => &mut progs.count_fexit,
        Probe::Kprobe => &mut progs.count_kprobe,
        Probe::Kretprobe => &mut progs.count_kretprobe,
        Probe::KprobeMulti => &mut progs.count_kprobe_multi,
        Probe::KretprobeMulti => &mut progs.count_kretprobe_multi,
    })
}

fn loaded_prog<'a, 'obj>(
    skel: &'a TriggerSkel<'obj>,
    probe: Probe,
) -> Option<&'a ProgramMut<'obj>> {
    let progs = &skel.progs;
    Some(match probe {
        Probe::None => return None,
        Probe::Tp => &progs.count_tp,
        Probe::RawTp => &progs.count_rawtp,
        Probe::Fmodret => &progs.count_fmodret,
        Probe::Fentry => &progs.count_fentry,
        Probe::Fexit => &progs.count_fexit,
        Probe::Kprobe => &progs.count_kprobe,
        Probe::Kretprobe => &progs.count_kretprobe,
        Probe::KprobeMulti => &progs.count_kprobe_multi,
        Probe::KretprobeMulti => &progs.count_kretprobe_multi,
    })
}

impl KernelTrigger {
    /// Why the kernel refused to load this benchmark's programs.
    fn load_refused(&self, err: &libbpf_rs::Error) -> Error {
        if self.driver == Driver::Kfunc && kernel::btf_has_func(KFUNC) == Some(false) {
            return Error::unsupported(kernel::needs_linux(
                &format!("the {KFUNC} kfunc needs"),
                "6.10",
            ));
        }
        if self.probe.is_tracing() && bpf::errno(err) == Some(libc::EPERM) {
            return Error::unsupported("tracing programs are refused (EPERM: lockdown or an LSM)");
        }
        let what = match self.probe {
            Probe::None => "the driver program".to_string(),
            probe => format!("{} or its driver", probe.what()),
        };
        bpf::load_error(&what, err)
    }

    /// Why the kernel refused to attach, with the kernel's configuration as
    /// the witness where it explains the refusal.
    fn attach_refused(&self, err: &libbpf_rs::Error) -> Error {
        if self.probe.is_kprobe() {
            let multi = matches!(self.probe, Probe::KprobeMulti | Probe::KretprobeMulti);
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
        bpf::attach_error(self.probe.what(), err)
    }
}

impl Benchmark for KernelTrigger {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn options(&self) -> &'static [BenchOption] {
        &[BATCH_ITERS]
    }
    fn needs_bpf(&self) -> bool {
        true
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let batch = config.params.get(BATCH_ITERS.long);
        if self.probe == Probe::Tp {
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
        driver_prog(&mut open.progs, self.driver).set_autoload(true);
        if let Some(prog) = probe_prog(&mut open.progs, self.probe) {
            prog.set_autoload(true);
        }
        let skel = open.load().map_err(|e| self.load_refused(&e))?;

        let link = match loaded_prog(&skel, self.probe) {
            Some(prog) => Some(prog.attach().map_err(|e| self.attach_refused(&e))?),
            None => None,
        };
        let driver_fd = match self.driver {
            Driver::Count => skel.progs.drive_count.as_fd().as_raw_fd(),
            Driver::Helper => skel.progs.drive_helper.as_fd().as_raw_fd(),
            Driver::Kfunc => skel.progs.drive_kfunc.as_fd().as_raw_fd(),
        };
        let hits = HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))?;
        Ok(Box::new(DrivenTrigger {
            _link: link,
            hits,
            driver_fd,
            batch,
            _skel: skel,
        }))
    }
}

/// Producers run the driver; the counting program (or the driver) counts.
struct DrivenTrigger {
    // Fields drop in order: the link detaches before the object is closed.
    _link: Option<Link>,
    hits: HitCounters,
    /// Owned by the skeleton below, which outlives every producer.
    driver_fd: i32,
    batch: u64,
    _skel: TriggerSkel<'static>,
}

impl Workload for DrivenTrigger {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // SAFETY: a zeroed bpf_test_run_opts with its size set is the "no
        // input, no output" request that raw_tp test runs take.
        let mut opts: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
        opts.sz = std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _;
        ctx.try_run(|| {
            // SAFETY: the fd is a loaded program's and opts is valid for the call.
            let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(self.driver_fd, &mut opts) };
            if rc < 0 {
                let err = std::io::Error::from_raw_os_error(-rc);
                return Err(Error::runtime(format!(
                    "BPF_PROG_TEST_RUN of the driver failed: {err}"
                )));
            }
            Ok(self.batch)
        })
    }

    fn measure(&self, _ops: u64) -> Counts {
        self.hits.counts()
    }
}
