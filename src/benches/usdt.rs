//! The USDT family: a counter on the SystemTap SDT sites compiled into the
//! bench binary, attached through libbpf's USDT support.

use std::path::Path;

use libbpf_rs::skel::OpenSkel;

use super::body;
use super::uprobe::{attach_pid, ProbedTarget};
use super::{Benchmark, Info};
use crate::bpf;
use crate::bpf::skel::usdt::UsdtSkelBuilder;
use crate::bpf::Needs;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::SetUp;
use crate::targets::{self, Target, SELF_EXE};

pub static BENCHES: &[&dyn Benchmark] = &[
    &UsdtBench {
        info: Info::trigger(
            "trig-usdt-nop",
            "USDT probe whose site is a lone nop (sdt.h; the kernel runner's usdt-nop): always a trap",
        )
        .needs(Needs::Usdt)
        .user_stacktrace()
        .pid_filter()
        .timed_per_hit(),
        target: Target::UsdtNop,
    },
    &UsdtBench {
        info: Info::trigger(
            "trig-usdt-nop5",
            "USDT probe whose site is a nop and a 5-byte nop (libbpf's usdt.h): libbpf probes the 5-byte nop where the kernel has the uprobe syscall",
        )
        .needs(Needs::Usdt)
        .user_stacktrace()
        .pid_filter()
        .timed_per_hit(),
        target: Target::UsdtNop5,
    },
];

struct UsdtBench {
    info: Info,
    target: Target,
}

impl Benchmark for UsdtBench {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let exe = Path::new(SELF_EXE);
        // libbpf finds the site through the note; the site is the function's
        // first instruction, so the symbol check vouches for the instruction.
        targets::resolve(exe, self.target)?;
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<UsdtSkelBuilder>("the USDT BPF object")? };
        body::configure(
            bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the USDT object")?,
            config,
        );
        let skel = open.load().map_err(|e| {
            bpf::load_error(&body::program("the USDT counting program", config), &e)
        })?;
        let skel = bpf::Owned::new(skel, storage);
        // SAFETY: `body_drops` is counters.h's slot layout, and the skeleton
        // is kept in the workload, dropped after the body.
        let body = unsafe { body::body_state!(config, skel)? };
        let link = skel
            .progs
            .count_usdt
            .attach_usdt(
                attach_pid(config),
                exe,
                Target::USDT_PROVIDER,
                self.target.name(),
            )
            .map_err(|e| usdt_attach_error(attach_pid(config), &e))?;
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits = unsafe { bpf::hit_counters!(skel)? };
        let workload = ProbedTarget::new(link, body, hits, skel, self.target);
        Ok(SetUp::producers(workload))
    }
}

/// Why the USDT probe did not attach. Without BPF cookies (before 5.15)
/// libbpf finds a site's spec by its address, which in a position-independent
/// executable is known only for one process: attaching for every process is
/// refused (EOPNOTSUPP), attaching for this one (`--pid-filter`) works.
fn usdt_attach_error(pid: i32, err: &libbpf_rs::Error) -> Error {
    let refused = bpf::errno(err) == Some(libc::EOPNOTSUPP);
    if pid == -1 && refused && kernel::btf_has_func("bpf_get_attach_cookie_trace") == Some(false) {
        return Error::unsupported(format!(
            "{}; --pid-filter attaches to this process alone, which works",
            kernel::needs_linux(
                "USDT probes of a position-independent executable, for every process, \
                 need BPF cookies:",
                "5.15"
            )
        ));
    }
    bpf::attach_error("the USDT probe", err)
}
