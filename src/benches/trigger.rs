//! The in-kernel trigger family: a driver program run with BPF_PROG_TEST_RUN
//! calls the probed kernel function `--trig-batch-iters` times per run, and a
//! counting program on that function counts every trigger.

use std::path::Path;

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{KprobeMultiOpts, Link, ProgramInput};

use super::body::{self, BodyState};
use super::{Benchmark, Info};
use crate::bpf::skel::trigger::{TriggerSkel, TriggerSkelBuilder};
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::channels::Readings;
use crate::config::{BenchOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::kernel;
use crate::progress::{self, Progress};
use crate::runner::{affinity, ConsumerCtx, ProducerCtx, SetUp, Workload};

pub const BATCH_ITERS: NumberOption = NumberOption {
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
        "the driver counts in BPF and calls the helper, nothing probed: the in-kernel baseline",
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
    &KernelTrigger {
        all: Some("empty_kprobe_multi"),
        ..trigger(
            "trig-kprobe-multi-all",
            DRIVE_HELPER,
            counter(
                "count_kprobe_multi",
                "the kprobe-multi link",
                Class::Kprobe { multi: true },
            ),
            "kprobe-multi-link, plus an empty one on every attachable kernel function",
        )
    },
    &KernelTrigger {
        all: Some("empty_kretprobe_multi"),
        ..trigger(
            "trig-kretprobe-multi-all",
            DRIVE_HELPER,
            counter(
                "count_kretprobe_multi",
                "the kretprobe-multi link",
                Class::Kprobe { multi: true },
            ),
            "kretprobe-multi link, plus an empty one on every attachable kernel function",
        )
    },
];

/// The kfunc that the kfunc driver calls (Linux 6.10+).
const KFUNC: &str = "bpf_modify_return_test_tp";

struct KernelTrigger {
    info: Info,
    /// The driver program's name.
    driver: &'static str,
    /// The counting program; none for the baseline, whose driver counts.
    probe: Option<Probe>,
    /// The -all variants: the empty program put on every attachable kernel
    /// function besides the counting one.
    all: Option<&'static str>,
}

const fn trigger(
    name: &'static str,
    driver: &'static str,
    probe: Option<Probe>,
    description: &'static str,
) -> KernelTrigger {
    let info = Info::trigger(name, description)
        .untimed(
            "one producer call is a BPF_PROG_TEST_RUN that fires the trigger \
             --trig-batch-iters times in the kernel; a call's time is a batch's, and \
             a batch average is not a hit's tail",
        )
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
        .options(&[BenchOption::Number(BATCH_ITERS)]);
    KernelTrigger {
        // Every counting program takes a body; the baseline has none, and
        // its driver's counts are read the same way (no record to drop).
        info: match probe {
            Some(_) => info.bodies(),
            None => info.with_drops(),
        },
        driver,
        probe,
        all: None,
    }
}

/// The refusal of kprobe-multi links on a kernel built without fprobe.
fn no_fprobe() -> Error {
    Error::unsupported(format!(
        "kprobe-multi links need CONFIG_FPROBE (Linux 5.18+), which {} is built without",
        kernel::release()
    ))
}

impl KernelTrigger {
    /// What the kernel (or the machine) lacks for this benchmark, found
    /// before loading.
    fn check_kernel(&self) -> Result<()> {
        if self.probe.is_some_and(|p| p.class == Class::Tracepoint) {
            kernel::ensure_tracefs().map_err(Error::unsupported)?;
        }
        if self.all.is_some() {
            let cpus = affinity::online_cpus().map_or(1, |cpus| cpus.len());
            if let Some(refusal) = emulated_smp_refusal(kernel::vm().as_deref(), cpus) {
                return Err(refusal);
            }
        }
        // Say why before listing tens of thousands of functions.
        if self.all.is_some() && kernel::config_is_off("CONFIG_FPROBE") {
            return Err(no_fprobe());
        }
        Ok(())
    }

    /// Why the kernel refused to load this benchmark's programs.
    fn load_refused(&self, err: &libbpf_rs::Error, config: &RunConfig) -> Error {
        if self.driver == DRIVE_KFUNC && kernel::btf_has_func(KFUNC) == Some(false) {
            return Error::unsupported(kernel::needs_linux(
                &format!("the {KFUNC} kfunc needs"),
                "6.10",
            ));
        }
        let Some(probe) = self.probe else {
            return bpf::load_error("the driver program", err);
        };
        if probe.class == Class::Tracing {
            if let Some(refusal) = tracing_refusal(err) {
                return refusal;
            }
        }
        bpf::load_error(
            &body::program(&format!("{} or its driver", probe.what), config),
            err,
        )
    }

    /// Why the kernel refused to attach, with the kernel's configuration as
    /// the witness where it explains the refusal.
    fn attach_refused(&self, probe: Probe, err: &libbpf_rs::Error) -> Error {
        if let Class::Kprobe { multi } = probe.class {
            if let Some(refusal) = kprobe_refusal(multi) {
                return refusal;
            }
        }
        bpf::attach_error(probe.what, err)
    }
}

/// Why the kernel refused to load a tracing program (fentry, fexit,
/// fmod_ret): EPERM is lockdown or an LSM; `None` for another error.
pub fn tracing_refusal(err: &libbpf_rs::Error) -> Option<Error> {
    (bpf::errno(err) == Some(libc::EPERM))
        .then(|| Error::unsupported("tracing programs are refused (EPERM: lockdown or an LSM)"))
}

/// The -all variants under emulation (TCG) with more than one CPU: the
/// kernel patches the call sites of every attachable function (42,359 on
/// Debian's 6.12) while another emulated CPU runs them, and 2-CPU guests
/// died of it, with an int3 oops and a panic, whether the functions came
/// in links of 2,000 or all at once (docs/kernels.md). One emulated CPU
/// attaches them safely.
pub fn emulated_smp_refusal(vm: Option<&str>, cpus: usize) -> Option<Error> {
    (vm == Some("tcg") && cpus > 1).then(|| {
        Error::unsupported(format!(
            "attaching to every kernel function under emulation (TCG) with {cpus} CPUs kills \
             the guest (an int3 oops: the kernel patches the call sites the other emulated \
             CPUs are running); boot it with one CPU (scripts/run_in_vm.sh --cpus 1)"
        ))
    })
}

/// Why this kernel cannot have kprobes (`multi`: kprobe-multi links), with
/// its configuration as the witness; `None` when nothing says it cannot.
pub fn kprobe_refusal(multi: bool) -> Option<Error> {
    if multi && kernel::config_is_off("CONFIG_FPROBE") {
        return Some(no_fprobe());
    }
    if kernel::config_is_off("CONFIG_KPROBES") {
        return Some(Error::unsupported(
            "kprobes not available (CONFIG_KPROBES is not set)",
        ));
    }
    if !multi && !Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        return Some(Error::unsupported("kprobes not available (no kprobe PMU)"));
    }
    None
}

impl Benchmark for KernelTrigger {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        self.set_up(config, usize::MAX)
    }

    // The -all variants ask here whether the kernel takes an empty program
    // on many functions: the first few hundred, not every one (an attach
    // of all takes 20-90 s in an emulated guest, of 2,000 some 15 s).
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        self.set_up(config, PROBED_FUNCTIONS)
    }
}

impl KernelTrigger {
    /// The set-up, the -all variants' empty program on at most `functions`
    /// of the attachable functions.
    fn set_up(&self, config: &RunConfig, functions: usize) -> Result<SetUp> {
        let batch = config.params.number(&BATCH_ITERS);
        self.check_kernel()?;
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<TriggerSkelBuilder>("the trigger BPF object")? };
        let rodata = bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the trigger object")?;
        rodata.batch_iters = u32::try_from(batch)
            .map_err(|_| Error::usage(format!("--trig-batch-iters {batch} is too large")))?;
        body::configure(rodata, config);
        // Every program is off by default: turn on this benchmark's two (three
        // for the -all variants).
        let wanted = |name: &std::ffi::OsStr| {
            name == self.driver
                || self.probe.is_some_and(|p| name == p.program)
                || self.all.is_some_and(|empty| name == empty)
        };
        for mut prog in open.open_object_mut().progs_mut() {
            if wanted(prog.name()) {
                prog.set_autoload(true);
            }
        }
        let skel = open.load().map_err(|e| self.load_refused(&e, config))?;
        let skel = bpf::Owned::new(skel, storage);
        // SAFETY: `body_drops` is counters.h's slot layout, and the skeleton
        // is kept in the workload, dropped after the body.
        let body = unsafe { body::body_state!(config, skel)? };

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
        let everywhere = match self.all {
            Some(empty) => {
                attach_everywhere(&find(empty)?, empty == "empty_kretprobe_multi", functions)?
            }
            None => Vec::new(),
        };
        // The driver is found again by each producer; check it exists now.
        find(self.driver)?;
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits = unsafe { bpf::hit_counters!(skel)? };
        Ok(SetUp::producers(DrivenTrigger {
            _everywhere: everywhere,
            _link: link,
            body,
            hits,
            driver: self.driver,
            batch,
            skel,
        }))
    }
}

/// Functions attached per kprobe-multi link by the -all variants: small
/// enough that progress shows and Ctrl-C is seen between links.
const ALL_CHUNK: usize = 2000;
/// The functions `--probe` attaches the -all variants' empty program to.
const PROBED_FUNCTIONS: usize = 500;

/// Kernel functions the kernel runner leaves out of its -all variants: idle
/// and RCU functions that a probe makes misbehave ("suspicious RCU usage"),
/// functions called from the probe path itself (recursion inflates the
/// cost), and the benchmark's own probed helper, which has its counter.
fn skipped_function(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "arch_cpu_idle",
        "default_idle",
        "bpf_dispatcher_xdp_func",
        "migrate_disable",
        "migrate_enable",
        "rcu_read_unlock_strict",
        "preempt_count_add",
        "preempt_count_sub",
        "__rcu_read_lock",
        "__rcu_read_unlock",
        "bpf_get_numa_node_id",
    ];
    EXACT.contains(&name)
        || name.starts_with("rcu_")
        || name.starts_with("__ftrace_invalid_address__")
}

/// The attachable functions of the kernel proper (not modules) listed in
/// `available_filter_functions` text, without duplicates or skipped ones.
pub fn attachable_functions(listing: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    listing
        .lines()
        .filter(|line| !line.contains('['))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| !skipped_function(name))
        .filter(|name| seen.insert(*name))
        .map(str::to_string)
        .collect()
}

/// This kernel's attachable functions (see [`attachable_functions`]), from
/// tracefs; refused when there is none.
pub fn attachable_kernel_functions() -> Result<Vec<String>> {
    kernel::ensure_tracefs().map_err(Error::unsupported)?;
    let tracefs = kernel::tracefs().ok_or_else(|| Error::unsupported("tracefs is not mounted"))?;
    let path = Path::new(tracefs).join("available_filter_functions");
    let listing = std::fs::read_to_string(&path)
        .map_err(|e| Error::setup(format!("cannot read {}: {e}", path.display())))?;
    let functions = attachable_functions(&listing);
    if functions.is_empty() {
        return Err(Error::unsupported(format!(
            "{} lists no function to attach to",
            path.display()
        )));
    }
    Ok(functions)
}

/// Attaches `empty` to every attachable kernel function (the first `most`
/// of them), a chunk per link, with progress on stderr; stops cleanly
/// (dropping what is attached) at a Ctrl-C.
fn attach_everywhere(
    empty: &libbpf_rs::ProgramMut<'_>,
    retprobe: bool,
    most: usize,
) -> Result<Vec<Link>> {
    let mut functions = attachable_kernel_functions()?;
    functions.truncate(most);
    let mut links = Vec::new();
    for (i, chunk) in functions.chunks(ALL_CHUNK).enumerate() {
        // Dropping the links detaches them.
        if let Err(err) = interrupt::check("attaching to every kernel function") {
            progress::tell(Progress::Finished);
            return Err(err);
        }
        progress::tell(Progress::Attaching {
            done: i * ALL_CHUNK + chunk.len(),
            of: functions.len(),
        });
        let opts = KprobeMultiOpts {
            symbols: chunk.to_vec(),
            retprobe,
            ..Default::default()
        };
        let link = empty
            .attach_kprobe_multi_with_opts(opts)
            .map_err(|e| bpf::attach_error("the kprobe-multi link on every function", &e));
        match link {
            Ok(link) => links.push(link),
            Err(err) => {
                progress::tell(Progress::Finished);
                return Err(err);
            }
        }
    }
    progress::tell(Progress::Finished);
    Ok(links)
}

/// Producers run the driver; the counting program (or the driver) counts.
struct DrivenTrigger {
    // Fields drop in order: the links detach before the object is closed.
    _everywhere: Vec<Link>,
    _link: Option<Link>,
    /// After the links: the ringbuf body's consumers are done before its
    /// rings go.
    body: BodyState,
    hits: HitCounters,
    /// The driver program's name in `skel`.
    driver: &'static str,
    batch: u64,
    skel: bpf::Owned<TriggerSkel<'static>>,
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

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        self.body.consume(ctx)
    }

    fn read(&self, _ops: u64) -> Readings {
        self.body.readings(&self.hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_list_follows_the_kernel_runner() {
        let listing = "do_sys_open\n\
                       rcu_note_context_switch\n\
                       default_idle\n\
                       vfs_read\n\
                       do_sys_open\n\
                       bpf_get_numa_node_id\n\
                       __ftrace_invalid_address___123\n\
                       e1000_probe [e1000]\n\
                       migrate_disable\n";
        assert_eq!(attachable_functions(listing), ["do_sys_open", "vfs_read"]);
    }

    /// Only an emulated guest of more than one CPU refuses the -all
    /// variants, and it says why and what to do.
    #[test]
    fn every_function_is_refused_under_emulation_with_two_cpus() {
        for (vm, cpus) in [(None, 2), (Some("kvm"), 64), (Some("tcg"), 1)] {
            assert!(emulated_smp_refusal(vm, cpus).is_none(), "{vm:?} {cpus}");
        }
        let why = emulated_smp_refusal(Some("tcg"), 2).map(|e| e.to_string());
        let why = why.unwrap_or_default();
        assert!(
            why.contains("under emulation (TCG) with 2 CPUs kills the guest")
                && why.ends_with("boot it with one CPU (scripts/run_in_vm.sh --cpus 1)"),
            "{why}"
        );
    }
}
