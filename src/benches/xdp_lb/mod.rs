//! `xdp-lb`, the kernel runner's XDP load balancer (`bench_xdp_lb`): one
//! scenario's packet (`--scenario`, `packet.rs`) run through
//! `bpf/xdp_lb.bpf.c` by BPF_PROG_TEST_RUN, a batch of packets timed per run
//! inside BPF as `bpf-nop`'s are (`timing.rs`: its area, calibration,
//! finals and lines, the scenario's name heading them).

mod packet;

use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType, ProgramInput, ProgramMut};

use super::timing::{self, timing_lines, Area, Measured, MACHINE_READABLE};
use super::{Benchmark, Info};
use crate::bpf::skel::xdp_lb::{XdpLbSkel, XdpLbSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::config::{BenchOption, RunConfig, TextOption};
use crate::error::{Error, Result};
use crate::figures;
use crate::kernel;
use crate::lines::{Lines, Piece};
use crate::runner::ticks::{MonotonicSource, Source};
use crate::runner::{Facts, ProducerCtx, SetUp, Workload};
use packet::Scenario;

pub const SCENARIO: TextOption = TextOption {
    long: "scenario",
    value_name: "NAME",
    help: "The packet and path to time, by the kernel runner's scenario names",
    default: "",
    max_len: 32,
    choices: &packet::NAMES,
};

const LINES: Lines = timing_lines!(Piece::TextOf(&SCENARIO));

pub static BENCHES: &[&dyn Benchmark] = &[&XdpLb {
    info: Info::hits(
        "xdp-lb",
        "an XDP load balancer (parse, VIP, connection table or consistent hash, encapsulation) \
         on one scenario's packet, timed per packet inside BPF",
    )
    .needs(Needs::RunProgram)
    .untimed("the packets are timed inside BPF, a batch at a time")
    .options(&[
        BenchOption::Text(SCENARIO),
        BenchOption::Flag(MACHINE_READABLE),
    ])
    .declares(
        &timing::CHANNELS,
        &[figures::HITS, timing::MEDIAN, timing::P99, timing::CV],
        LINES,
    ),
}];

/// The rings of consistent hashing: 16 VIPs of 65537 slots.
const RING_ENTRIES: u32 = 16 * 65537;
/// Each CPU's connection table, as the kernel runner sizes it.
const FLOWS_PER_CPU: u32 = 100_000;
/// The rows of the timing area (bpf/timing.h), the CPUs a table is made for.
const TIMING_CPUS: usize = 128;

struct XdpLb {
    info: Info,
}

impl Benchmark for XdpLb {
    fn info(&self) -> &Info {
        &self.info
    }

    // Before anything is set up or printed, as every option's check.
    fn validate(&self, config: &RunConfig) -> Result<()> {
        scenario_of(config.params.text(&SCENARIO)).map(|_| ())
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let scenario = scenario_of(config.params.text(&SCENARIO))?;
        let mut workload = LbWorkload::load(scenario)?;
        workload.batch = match scenario.fixed_batch {
            0 => {
                let program = workload.program()?;
                timing::calibrate(&workload.area, || workload.run_once(&program).map(|_| ()))?
            }
            fixed => fixed,
        };
        workload.prepare()?;
        Ok(SetUp::producers(workload))
    }

    // Without --scenario, `--probe` asks whether the kernel loads and runs
    // the program: the first scenario's packet, one small batch.
    fn setup_to_probe(&self, config: &RunConfig) -> Result<SetUp> {
        let name = match config.params.text(&SCENARIO) {
            "" => packet::NAMES[0],
            name => name,
        };
        let mut workload = LbWorkload::load(scenario_of(name)?)?;
        workload.batch = 10;
        workload.prepare()?;
        Ok(SetUp::producers(workload))
    }
}

/// The scenario named; the names were checked against the table when the
/// command line was read, and a missing one by `validate`.
fn scenario_of(name: &str) -> Result<&'static Scenario> {
    packet::find(name).ok_or_else(missing_scenario)
}

/// The refusal of a run without `--scenario`: upstream's has no default.
fn missing_scenario() -> Error {
    Error::usage(format!(
        "xdp-lb needs --scenario NAME, one of: {}",
        packet::NAMES.join(", ")
    ))
}

/// Producers run the program on the scenario's packet; it times its
/// batches and counts its packets.
struct LbWorkload {
    area: Area,
    hits: HitCounters,
    measured: Measured,
    batch: u64,
    scenario: &'static Scenario,
    packet: Vec<u8>,
    /// Each CPU's connection table, referenced by the array of maps too.
    _tables: Vec<MapHandle>,
    skel: bpf::Owned<XdpLbSkel<'static>>,
}

impl LbWorkload {
    /// The object loaded, its maps filled for `scenario`, its timing area
    /// mapped.
    fn load(scenario: &'static Scenario) -> Result<LbWorkload> {
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let open = XdpLbSkelBuilder::default()
            .open(unsafe { storage.object() })
            .map_err(|e| bpf::load_error("the xdp-lb object", &e))?;
        let skel = open.load().map_err(|e| {
            // Upstream's loop is can_loop: may_goto, an opcode older
            // verifiers reject as unknown (5.10 refuses the object's
            // timing area first, E2BIG).
            if timing::lacks_may_goto() {
                Error::unsupported(kernel::needs_linux(
                    "xdp-lb's loop is upstream's can_loop, and the may_goto instruction needs",
                    "6.9",
                ))
            } else {
                bpf::load_error("the xdp-lb program", &e)
            }
        })?;
        let mut skel = bpf::Owned::new(skel, storage);
        let tables = fill_maps(&skel, scenario)?;
        let area = timing::area_of!(skel
            .maps
            .bss_data
            .as_deref_mut()
            .ok_or_else(|| Error::setup("the xdp-lb object's .bss is not memory-mapped"))?);
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(LbWorkload {
            area,
            hits,
            measured: Measured::default(),
            batch: 0,
            scenario,
            packet: scenario.packet(),
            _tables: tables,
            skel,
        })
    }

    fn program(&self) -> Result<ProgramMut<'_>> {
        self.skel
            .object()
            .progs_mut()
            .find(|p| p.name() == "count_xdp_lb")
            .ok_or_else(|| Error::setup("the xdp-lb object has no program count_xdp_lb"))
    }

    /// One run: a batch of packets and one more; the last one's verdict
    /// and the packet it left.
    fn run_once(&self, program: &ProgramMut<'_>) -> Result<(u32, Vec<u8>)> {
        let mut out = vec![0u8; self.packet.len() + 64];
        let input = ProgramInput {
            data_in: Some(&self.packet),
            data_out: Some(&mut out),
            ..Default::default()
        };
        let output = program.test_run(input).map_err(|e| {
            Error::runtime(format!("BPF_PROG_TEST_RUN of count_xdp_lb failed: {e:#}"))
        })?;
        let len = output.data.map_or(0, |data| data.len());
        let verdict = output.return_value;
        out.truncate(len);
        Ok((verdict, out))
    }

    /// The batch set, a cold table seeded (its flow's first packet misses,
    /// the alternating rest hit, as upstream's), and one run checked: the
    /// scenario's verdict and, when it encapsulates, the outer header's
    /// size and tunnel address. Then the sources randomized, if asked.
    fn prepare(&mut self) -> Result<()> {
        self.area.set_batch(self.batch);
        let program = self.program()?;
        let bss = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .ok_or_else(|| Error::setup("the xdp-lb object's .bss is not memory-mapped"))?;
        let flags = std::ptr::addr_of!(bss.cold_table).cast_mut();
        let mask = std::ptr::addr_of!(bss.src_mask).cast_mut();
        if self.scenario.cold_table {
            // SAFETY: a volatile u32 of the mapped .bss, read by the program.
            unsafe { std::ptr::write_volatile(flags, 1) };
            self.run_once(&program)?;
        }
        self.check(&program)?;
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(mask, self.scenario.src_mask) };
        self.area.reset();
        Ok(())
    }

    fn check(&self, program: &ProgramMut<'_>) -> Result<()> {
        let (verdict, out) = self.run_once(program)?;
        let fail = |what: String| {
            Error::setup(format!(
                "xdp-lb's scenario {} ({}) failed its check: {what}",
                self.scenario.name, self.scenario.description
            ))
        };
        if verdict != self.scenario.action {
            return Err(fail(format!(
                "the program returned {verdict}, not {}",
                self.scenario.action
            )));
        }
        if verdict == packet::XDP_TX {
            let (len, at, tunnel) = self.scenario.encapsulated(self.packet.len());
            if out.len() != len || out.get(at..at + tunnel.len()) != Some(&tunnel[..]) {
                return Err(fail(format!(
                    "the encapsulated packet is {} bytes, not {len}, or not to the tunnel {tunnel:02x?}",
                    out.len()
                )));
            }
        }
        Ok(())
    }
}

/// The maps as the scenario needs them: its VIP (when it is balanced), the
/// rings all on backend 1, the two backends, the router's MAC, a connection
/// table for each CPU (its flow in each, when warm), the watched VIP. The
/// tables made.
fn fill_maps(skel: &XdpLbSkel<'_>, scenario: &Scenario) -> Result<Vec<MapHandle>> {
    let failed = |what: &str, e: libbpf_rs::Error| {
        Error::setup(format!("cannot fill xdp-lb's {what} map: {e:#}"))
    };
    let maps = &skel.maps;
    let balanced = scenario.action == packet::XDP_TX;
    if balanced {
        maps.vips
            .update(&scenario.vip_key(), &scenario.vip_meta(), MapFlags::ANY)
            .map_err(|e| failed("vips", e))?;
        maps.watched_vip
            .update(&0u32.to_ne_bytes(), &scenario.vip_key(), MapFlags::ANY)
            .map_err(|e| failed("watched_vip", e))?;
    }
    let keys: Vec<u8> = (0..RING_ENTRIES).flat_map(u32::to_ne_bytes).collect();
    let values: Vec<u8> = (0..RING_ENTRIES)
        .flat_map(|_| packet::BACKEND_V4.to_ne_bytes())
        .collect();
    maps.rings
        .update_batch(&keys, &values, RING_ENTRIES, MapFlags::ANY, MapFlags::ANY)
        .map_err(|e| failed("rings", e))?;
    let router = [&packet::ROUTER_MAC[..], &[0, 0]].concat();
    maps.router
        .update(&0u32.to_ne_bytes(), &router, MapFlags::ANY)
        .map_err(|e| failed("router", e))?;
    for (index, flags, v4) in [
        (packet::BACKEND_V4, 0, packet::TUNNEL_V4),
        (packet::BACKEND_V6, packet::F_IPV6, 0),
    ] {
        let v6 = packet::key_address(&packet::TUNNEL_V6, true);
        let backend = [&v4.to_be_bytes()[..], &v6, &[flags, 0, 0, 0]].concat();
        maps.backends
            .update(&index.to_ne_bytes(), &backend, MapFlags::ANY)
            .map_err(|e| failed("backends", e))?;
    }
    flow_tables(skel, scenario)
}

/// A connection table for each CPU, in the array of maps, holding the
/// scenario's flow when it is warm.
fn flow_tables(skel: &XdpLbSkel<'_>, scenario: &Scenario) -> Result<Vec<MapHandle>> {
    let cpus = libbpf_rs::num_possible_cpus()
        .map_err(|e| Error::setup(format!("cannot count the possible CPUs: {e:#}")))?;
    if cpus > TIMING_CPUS {
        return Err(Error::setup(format!(
            "xdp-lb times at most {TIMING_CPUS} CPUs, and this machine has {cpus} possible"
        )));
    }
    let key = scenario.flow_key();
    // CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
    let now = MonotonicSource::now();
    let mut entry = scenario.backend().to_ne_bytes().to_vec();
    entry.extend_from_slice(&[0; 4]);
    entry.extend_from_slice(&if scenario.proto == 17 { now } else { 0 }.to_ne_bytes());
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let mut tables = Vec::with_capacity(cpus);
    for cpu in 0..cpus as u32 {
        let table = MapHandle::create(
            MapType::LruHash,
            Some("flow_table"),
            key.len() as u32,
            entry.len() as u32,
            FLOWS_PER_CPU,
            &opts,
        )
        .map_err(|e| Error::setup(format!("cannot create CPU {cpu}'s flow table: {e:#}")))?;
        if scenario.warm_table {
            table
                .update(&key, &entry, MapFlags::ANY)
                .map_err(|e| Error::setup(format!("cannot warm CPU {cpu}'s flow table: {e:#}")))?;
        }
        let fd = table.as_fd().as_raw_fd() as u32;
        skel.maps
            .flow_tables
            .update(&cpu.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error::setup(format!("cannot place CPU {cpu}'s flow table: {e:#}")))?;
        tables.push(table);
    }
    Ok(tables)
}

impl Workload for LbWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let program = self.program()?;
        ctx.try_run(|| {
            self.run_once(&program)?;
            Ok(self.batch + 1)
        })
    }

    fn read(&self, _ops: u64) -> Readings {
        self.hits.readings()
    }

    fn measuring(&self, on: bool) {
        self.measured.switch(&self.area, on, self.hits.total());
    }

    fn facts(&self) -> Facts {
        // A run's hits are its batch and the packet whose verdict it returns.
        let batches = self.measured.batches(self.batch + 1);
        Facts {
            finals: timing::per_call_finals(&self.area, self.batch, batches),
            ..Facts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    #[test]
    fn the_timing_line_is_named_by_the_scenario() {
        let finals = [
            ("samples", None, 100.0),
            ("median", None, 41.5),
            ("stddev", None, 1.25),
            ("cv", None, 3.0),
            ("min", None, 40.0),
            ("p99", None, 47.0),
            ("max", None, 60.0),
        ];
        let lines = testing::summary_with("xdp-lb", &[[1u64]], 1, &finals);
        assert!(lines[1].ends_with(": median 41.50 ns/op, stddev 1.25, p99 47.00 (100 samples)"));
    }
}
