//! The USDT family: a counter on the SystemTap SDT sites compiled into the
//! bench binary, attached through libbpf's USDT support.

use std::path::Path;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use super::uprobe::{attach_pid, ProbedTarget};
use super::{Benchmark, Info};
use crate::bpf::skel::usdt::UsdtSkelBuilder;
use crate::bpf::Needs;
use crate::bpf::{self, HitCounters};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::runner::Workload;
use crate::targets::{self, Target, SELF_EXE};

pub static BENCHES: &[&dyn Benchmark] = &[
    &UsdtBench {
        info: Info::hits("trig-usdt-nop", "USDT probe whose site is a nop")
            .needs(Needs::Link)
            .stacktrace()
            .pid_filter(),
        target: Target::UsdtNop,
    },
    &UsdtBench {
        info: Info::hits("trig-usdt-nop5", "USDT probe whose site is a 5-byte nop")
            .needs(Needs::Link)
            .stacktrace()
            .pid_filter(),
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

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let exe = Path::new(SELF_EXE);
        // libbpf finds the site through the note; the site is the function's
        // first instruction, so the symbol check vouches for the instruction.
        targets::resolve(exe, self.target)?;
        let mut open = UsdtSkelBuilder::default()
            .open(bpf::object_storage())
            .map_err(|e| bpf::load_error("the USDT BPF object", &e))?;
        open.maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the USDT object has no .rodata"))?
            .stacktrace = u32::from(config.stacktrace);
        let skel = open
            .load()
            .map_err(|e| bpf::load_error("the USDT counting program", &e))?;
        let link = skel
            .progs
            .count_usdt
            .attach_usdt(
                attach_pid(config),
                exe,
                Target::USDT_PROVIDER,
                self.target.name(),
            )
            .map_err(|e| bpf::attach_error("the USDT probe", &e))?;
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(Box::new(ProbedTarget {
            _link: link,
            hits,
            _skel: skel,
            target: self.target,
        }))
    }
}
