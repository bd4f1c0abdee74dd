//! The USDT family: a counter on the SystemTap SDT sites compiled into the
//! bench binary, attached through libbpf's USDT support.

use std::path::Path;

use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{UprobeMultiOpts, UprobeOpts};

use super::body;
use super::uprobe::{attach_pid, ProbedTarget};
use super::{Benchmark, Info};
use crate::bpf;
use crate::bpf::skel::usdt::UsdtSkelBuilder;
use crate::bpf::Needs;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::kernel;
use crate::red_zone::{self, Site};
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
    &UsdtBench {
        info: Info::trigger(
            "trig-usdt-nop10",
            "USDT probe whose site is a nop and the 10-byte nop (usdt.h since July 2026): probed at the 10-byte nop where the kernel has the uprobe syscall, as libbpf 1.8 does",
        )
        .needs(Needs::Usdt)
        .user_stacktrace()
        .pid_filter()
        .timed_per_hit(),
        target: Target::UsdtNop10,
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
        let site = targets::resolve(exe, self.target)?;
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
        let pid = attach_pid(config);
        let program = &skel.progs.count_usdt;
        // libbpf 1.8 probes usdt.h's nop,nop10 site at its 10-byte nop where
        // the kernel has the uprobe syscall; the libbpf 1.7 bench links knows
        // only the nop,nop5 pair, so bench puts that probe there itself.
        let at_second = self.target == Target::UsdtNop10 && kernel::has_uprobe_syscall();
        let link = if at_second {
            let nop10 = usize::try_from(site + 1)
                .map_err(|_| Error::setup(format!("offset {site:#x} does not fit in usize")))?;
            attach_at(program, pid, nop10).map_err(|e| nop10_attach_error(&e))?
        } else {
            program
                .attach_usdt(pid, exe, Target::USDT_PROVIDER, self.target.name())
                .map_err(|e| usdt_attach_error(pid, &e))?
        };
        // The instruction probed: the vendored libbpf 1.7 puts the nop,nop5
        // pair's probe on its 5-byte nop where the uprobe syscall answers
        // ENXIO, as 6.18's does; 7.x's answers EPROTO, which 1.7 takes for
        // no syscall (1.8 knows it).
        let probed_second = at_second
            || (self.target == Target::UsdtNop5
                && kernel::uprobe_syscall_answer() == Some(libc::ENXIO));
        let red_zone = red_zone::found(Site::of(self.target, probed_second), |site| {
            attach_at(program, pid, site)
                .map_err(|e| bpf::attach_error("the red zone check's probe", &e))
        });
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits = unsafe { bpf::hit_counters!(skel)? };
        let found = red_zone.as_ref().ok().copied();
        let workload = ProbedTarget::new(link, body, hits, skel, self.target, red_zone);
        let workload = if at_second {
            workload.at_second()
        } else {
            workload
        };
        Ok(SetUp::producers(workload).with_red_zone(found))
    }
}

/// The USDT program attached at `offset` of this executable, as libbpf
/// attaches it at a site: through a uprobe-multi link where the kernel has
/// them (libbpf then loads it for one, and a perf-event uprobe is refused),
/// a uprobe otherwise. No argument spec goes with it: bench's sites have no
/// arguments.
fn attach_at(
    program: &libbpf_rs::ProgramMut<'_>,
    pid: i32,
    offset: usize,
) -> std::result::Result<libbpf_rs::Link, libbpf_rs::Error> {
    let exe = Path::new(SELF_EXE);
    if bpf::uprobe_multi_links() {
        let opts = UprobeMultiOpts {
            offsets: vec![offset],
            ..Default::default()
        };
        program.attach_uprobe_multi_with_opts(pid, exe, "", opts)
    } else {
        program.attach_uprobe_with_opts(pid, exe, offset, UprobeOpts::default())
    }
}

/// Why the probe on usdt.h's 10-byte nop did not attach.
fn nop10_attach_error(err: &libbpf_rs::Error) -> Error {
    if bpf::errno(err) == Some(bpf::ENOTSUPP) {
        return Error::unsupported(format!(
            "this kernel has the uprobe syscall, so the site is probed at its 10-byte nop (as \
             libbpf 1.8 does), and {}",
            super::uprobe::nop10_refused().replacen("this kernel", "it", 1)
        ));
    }
    bpf::attach_error("the USDT probe on the 10-byte nop", err)
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
