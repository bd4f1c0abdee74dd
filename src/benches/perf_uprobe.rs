//! The `perf bench uprobe` collection: a loop of libc's `usleep(1000)`, bare
//! (`uprobe-baseline`) or with a BPF program on usleep's entry or return that
//! does nothing or one `bpf_trace_printk`. The time per call, against the
//! baseline's, is the probe's cost seen by a sleeping program. perf's
//! `--loop` is `--repeat` here (perf's default is 1000).

use std::path::Path;

use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{Link, UprobeOpts};

use super::uprobe::attach_pid;
use super::{Benchmark, Info};
use crate::bpf::skel::perf_uprobe::{PerfUprobeSkel, PerfUprobeSkelBuilder};
use crate::bpf::{self, Needs};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::lines::PerfPiece::{Calls, Text};
use crate::lines::{Lines, PerfFormat};
use crate::probe_path;
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};

/// The library and function perf probes.
const LIBC: &str = "libc.so.6";
const FUNCTION: &str = "usleep";
/// perf sleeps a millisecond per call.
const SLEEP_USECS: libc::useconds_t = 1000;

pub static BENCHES: &[&dyn Benchmark] = &[
    &perf(
        "uprobe-baseline",
        "baseline",
        None,
        "usleep(1000) in a loop, nothing attached: perf bench uprobe baseline",
    ),
    &perf(
        "uprobe-empty",
        "empty",
        Some(("usleep_empty", false)),
        "usleep(1000) with an empty BPF program on its entry: perf bench uprobe empty",
    ),
    &perf(
        "uprobe-trace_printk",
        "trace_printk",
        Some(("usleep_printk", false)),
        "usleep(1000) with a bpf_trace_printk on its entry: perf bench uprobe trace_printk",
    ),
    &perf(
        "uprobe-empty_ret",
        "empty_ret",
        Some(("usleep_empty_ret", true)),
        "usleep(1000) with an empty BPF program on its return: perf bench uprobe empty_ret",
    ),
    &perf(
        "uprobe-trace_printk_ret",
        "trace_printk_ret",
        Some(("usleep_printk_ret", true)),
        "usleep(1000) with a bpf_trace_printk on its return: perf bench uprobe trace_printk_ret",
    ),
];

struct PerfUprobe {
    info: Info,
    /// The program and whether it goes on the return; none for the baseline.
    program: Option<(&'static str, bool)>,
}

const fn perf(
    name: &'static str,
    perf_name: &'static str,
    program: Option<(&'static str, bool)>,
    description: &'static str,
) -> PerfUprobe {
    let info = Info {
        channels: &[crate::channels::OPERATIONS],
        figures: &[crate::figures::OPERATIONS],
        lines: Lines::perf(PerfFormat {
            collection: "uprobe",
            name: perf_name,
            executed: &[Text("# Executed "), Calls, Text(" usleep(1000) calls")],
            per_cpu: false,
            ops_per_sec: false,
            usecs_grouped: true,
        }),
        ..Info::hits(name, description).timed_per_hit()
    };
    PerfUprobe {
        info: match program {
            Some(_) => info.needs(Needs::UprobeEvent).pid_filter(),
            None => info,
        },
        program,
    }
}

impl Benchmark for PerfUprobe {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let Some((program, retprobe)) = self.program else {
            return Ok(SetUp::producers(Sleeper { probe: None }));
        };
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open =
            unsafe { storage.open::<PerfUprobeSkelBuilder>("the uprobe collection's BPF object")? };
        for mut prog in open.open_object_mut().progs_mut() {
            if prog.name() == program {
                prog.set_autoload(true);
            }
        }
        let skel = open
            .load()
            .map_err(|e| bpf::load_error("the usleep program", &e))?;
        let skel = bpf::Owned::new(skel, storage);
        let progs = &skel.progs;
        let prog = match program {
            "usleep_empty" => &progs.usleep_empty,
            "usleep_printk" => &progs.usleep_printk,
            "usleep_empty_ret" => &progs.usleep_empty_ret,
            "usleep_printk_ret" => &progs.usleep_printk_ret,
            _ => {
                return Err(Error::setup(format!(
                    "the BPF object has no program {program}"
                )))
            }
        };
        let opts = UprobeOpts {
            retprobe,
            func_name: Some(FUNCTION.to_string()),
            ..Default::default()
        };
        let what = match retprobe {
            true => "a uretprobe on libc's usleep",
            false => "a uprobe on libc's usleep",
        };
        let link = prog
            .attach_uprobe_with_opts(attach_pid(config), Path::new(LIBC), 0, opts)
            .map_err(|e| bpf::attach_error(what, &e))?;
        Ok(SetUp::producers(Sleeper {
            probe: Some((link, skel)),
        }))
    }
}

/// Where this process's usleep is: the probed function, as the dynamic
/// linker bound it.
fn usleep_address() -> Result<u64> {
    // SAFETY: dlsym with the default handle and a NUL-terminated name.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"usleep".as_ptr()) };
    if address.is_null() {
        return Err(Error::runtime("the dynamic linker does not know usleep"));
    }
    Ok(address as u64)
}

/// Producers sleep a millisecond per operation, probed or not.
struct Sleeper {
    // The link drops (detaches) before the object closes.
    probe: Option<(Link, bpf::Owned<PerfUprobeSkel<'static>>)>,
}

impl Workload for Sleeper {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // One count per call, not per burst of 64: at a millisecond a call,
        // a burst would make each second's sample move in steps of 64.
        ctx.try_run(|| {
            // SAFETY: usleep only sleeps.
            unsafe { libc::usleep(SLEEP_USECS) };
            Ok(1)
        })
    }

    fn facts(&self) -> Facts {
        Facts {
            probe_path: self
                .probe
                .as_ref()
                .map(|_| usleep_address().and_then(probe_path::detect_at)),
            ..Facts::default()
        }
    }
}
