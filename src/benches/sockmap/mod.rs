//! The sockmap family: the kernel runner's `sockmap` benchmark (newer than
//! Linux 6.12), bytes moved between TCP sockets on loopback by BPF programs
//! in a sockmap. Two connected pairs, c1 <-> p1 and c2 <-> p2; the producer
//! sends a 128 KiB file again and again with sendfile() into one socket, and
//! consumer 0 reads c2, checking every byte. Which socket is sent into, and
//! how the bytes reach c2, is the mode:
//!
//! | mode | program | path |
//! |---|---|---|
//! | `--rx-pass` | sk_skb stream verdict, SK_PASS | p2 → c2, seen on c2's receive side |
//! | `--rx-verdict-egress` (default) | sk_skb stream verdict, redirect | c1 → p1, redirected to p2's egress → c2 |
//! | `--rx-verdict-ingress` | sk_skb stream verdict, redirect | c1 → p1, redirected to c2's ingress |
//! | `--tx-pass` | sk_msg, SK_PASS | p2 → c2, seen on p2's send side |
//! | `--tx-verdict-ingress` | sk_msg, redirect | p2's send redirected to c2's ingress |
//! | `--tx-verdict-egress` | sk_msg, redirect | p1's send redirected to p2's egress → c2 |
//!
//! The headline is what the BPF programs saw, in bytes per second; the
//! bytes sent and received are figures of their own.

mod sockets;
mod workload;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::MapCore;
use std::os::fd::{AsFd, AsRawFd, RawFd};

use super::{Benchmark, Info, Metric};
use crate::bpf::skel::sockmap::{SockmapSkel, SockmapSkelBuilder};
use crate::bpf::{self, Needs};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{self, Better, Figure};
use crate::runner::Workload;
use sockets::Sockets;
use workload::SockmapWorkload;

/// The file the producer sends, over and over (upstream's FILE_SIZE).
pub const FILE_SIZE: usize = 128 * 1024;

/// The kernel's BPF_F_INGRESS: a redirect to the target's receive queue.
const BPF_F_INGRESS: u64 = 1;

/// The counts each sample carries beside hits (the BPF bytes) and drops
/// (redirects BPF could not make), in `Sample::extra`'s order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    SentBytes = 0,
    SendCalls = 1,
    ReceivedBytes = 2,
    ReadCalls = 3,
}

/// What a run keeps (`Workload::figures`): the rates of the measured part,
/// and the totals since set-up, which a fixed-work run prints.
pub const KEPT_SENT: &str = "sent";
pub const KEPT_RECEIVED: &str = "received";
pub const KEPT_SENT_BYTES: &str = "sent bytes";
pub const KEPT_RECEIVED_BYTES: &str = "received bytes";
pub const KEPT_REFUSED: &str = "redirects refused";

/// `1234.567 MB/s`: bytes per second in upstream's unit (10^6 bytes).
fn megabytes_per_sec(bytes_per_sec: f64) -> String {
    format!("{:.3} MB/s", bytes_per_sec / 1e6)
}

fn megabytes_per_sec_with_sd(mean: f64, sd: f64) -> String {
    format!("{:.3} \u{b1} {:.3} MB/s", mean / 1e6, sd / 1e6)
}

/// The bytes the BPF programs saw per second: upstream's BPF Speed and its
/// Summary's mean.
pub const BPF_BYTES: Figure = Figure {
    name: "bpf bytes",
    unit: "BPF bytes/s",
    better: Better::Higher,
    of_run: |run| match run.fixed() {
        Some(fixed) if fixed.elapsed_ns > 0 => {
            Some(fixed.counts.hits as f64 * 1e9 / fixed.elapsed_ns as f64)
        }
        Some(_) => None,
        None => Some(run.summary()?.hits.mean),
    },
    per_second: Some(crate::stats::Sample::hits_per_sec),
    show: megabytes_per_sec,
    show_spread: megabytes_per_sec_with_sd,
};

/// The bytes the producer's sendfile() calls sent per second (Send Speed).
pub const SENT: Figure = Figure {
    name: "sent",
    unit: "sent bytes/s",
    of_run: |run| figures::kept(run, KEPT_SENT),
    per_second: None,
    ..BPF_BYTES
};

/// The bytes consumer 0 read from c2 per second (Rcv Speed).
pub const RECEIVED: Figure = Figure {
    name: "received",
    unit: "received bytes/s",
    of_run: |run| figures::kept(run, KEPT_RECEIVED),
    per_second: None,
    ..BPF_BYTES
};

const fn mode_flag(long: &'static str, help: &'static str) -> FlagOption {
    FlagOption { long, help }
}

pub const RX_NORMAL: FlagOption = mode_flag(
    "rx-normal",
    "sockmap: no BPF (declared by upstream, whose set-up refuses it; refused here too)",
);
pub const RX_PASS: FlagOption = mode_flag(
    "rx-pass",
    "sockmap: p2 sends to c2 through an sk_skb stream verdict program that passes",
);
pub const RX_VERDICT_EGRESS: FlagOption = mode_flag(
    "rx-verdict-egress",
    "sockmap: c1 sends, an sk_skb verdict redirects p1's bytes to p2's egress (the default)",
);
pub const RX_VERDICT_INGRESS: FlagOption = mode_flag(
    "rx-verdict-ingress",
    "sockmap: c1 sends, an sk_skb verdict redirects p1's bytes to c2's ingress",
);
pub const TX_NORMAL: FlagOption = mode_flag(
    "tx-normal",
    "sockmap: no BPF (declared by upstream, whose set-up refuses it; refused here too)",
);
pub const TX_PASS: FlagOption = mode_flag(
    "tx-pass",
    "sockmap: p2 sends to c2 through an sk_msg program that passes",
);
pub const TX_VERDICT_INGRESS: FlagOption = mode_flag(
    "tx-verdict-ingress",
    "sockmap: an sk_msg program redirects p2's sends to c2's ingress",
);
pub const TX_VERDICT_EGRESS: FlagOption = mode_flag(
    "tx-verdict-egress",
    "sockmap: an sk_msg program redirects p1's sends to p2's egress",
);
pub const RX_STRP: NumberOption = NumberOption {
    long: "rx-strp",
    short: None,
    value_name: "Byte",
    help: "sockmap: attach a stream parser that cuts messages of this many bytes (0: none)",
    default: 0,
    min: 0,
    max: i32::MAX as u64,
    why_max: "the parser program returns the length as an int",
};
pub const DELAY_CONSUMER: NumberOption = NumberOption {
    long: "delay-consumer",
    short: None,
    value_name: "SEC",
    help: "sockmap: the consumer starts reading this many seconds late",
    default: 0,
    min: 0,
    max: 3600,
    why_max: "an hour",
};
pub const PRODUCER_DURATION: NumberOption = NumberOption {
    long: "producer-duration",
    short: None,
    value_name: "SEC",
    help: "sockmap: the producer stops sending after this many seconds (0: never)",
    default: 0,
    min: 0,
    max: 3600,
    why_max: "an hour",
};

/// The modes, in upstream's order; the first two are refused.
const MODES: [(FlagOption, Option<Mode>); 8] = [
    (RX_NORMAL, None),
    (RX_PASS, Some(Mode::RxPass)),
    (RX_VERDICT_EGRESS, Some(Mode::RxVerdictEgress)),
    (RX_VERDICT_INGRESS, Some(Mode::RxVerdictIngress)),
    (TX_NORMAL, None),
    (TX_PASS, Some(Mode::TxPass)),
    (TX_VERDICT_INGRESS, Some(Mode::TxVerdictIngress)),
    (TX_VERDICT_EGRESS, Some(Mode::TxVerdictEgress)),
];

static OPTIONS: [BenchOption; 11] = [
    BenchOption::Flag(RX_NORMAL),
    BenchOption::Flag(RX_PASS),
    BenchOption::Number(RX_STRP),
    BenchOption::Flag(RX_VERDICT_EGRESS),
    BenchOption::Flag(RX_VERDICT_INGRESS),
    BenchOption::Flag(TX_NORMAL),
    BenchOption::Flag(TX_PASS),
    BenchOption::Flag(TX_VERDICT_INGRESS),
    BenchOption::Flag(TX_VERDICT_EGRESS),
    BenchOption::Number(DELAY_CONSUMER),
    BenchOption::Number(PRODUCER_DURATION),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    RxPass,
    RxVerdictEgress,
    RxVerdictIngress,
    TxPass,
    TxVerdictIngress,
    TxVerdictEgress,
}

impl Mode {
    /// The mode a configuration asks for: the one mode flag given, or
    /// upstream's default.
    fn of(config: &RunConfig) -> Result<Mode> {
        let given: Vec<&(FlagOption, Option<Mode>)> = MODES
            .iter()
            .filter(|(flag, _)| config.params.flag(flag))
            .collect();
        match given.as_slice() {
            [] => Ok(Mode::RxVerdictEgress),
            [(_, Some(mode))] => Ok(*mode),
            [(flag, None)] => Err(Error::usage(format!(
                "--{} runs no BPF program, and upstream's sockmap set-up refuses it too: \
                 give one of --rx-pass, --rx-verdict-egress, --rx-verdict-ingress, --tx-pass, \
                 --tx-verdict-ingress or --tx-verdict-egress",
                flag.long
            ))),
            several => Err(Error::usage(format!(
                "sockmap runs one mode at a time, got {}",
                several
                    .iter()
                    .map(|(flag, _)| format!("--{}", flag.long))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))),
        }
    }

    fn receive_side(self) -> bool {
        matches!(
            self,
            Mode::RxPass | Mode::RxVerdictEgress | Mode::RxVerdictIngress
        )
    }

    fn ingress(self) -> bool {
        matches!(self, Mode::RxVerdictIngress | Mode::TxVerdictIngress)
    }
}

pub static BENCHES: &[&dyn Benchmark] = &[&Sockmap {
    info: Info {
        metric: Metric::Sockmap,
        figures: &[BPF_BYTES, SENT, RECEIVED],
        ..Info::hits(
            "sockmap",
            "bytes through sk_skb/sk_msg programs in a sockmap between TCP sockets on \
             loopback (one mode flag: --rx-verdict-egress by default); one op is one 128 KiB \
             file sent",
        )
        .consumers(2)
        .needs(Needs::RunProgram)
        .options(&OPTIONS)
        .untimed("one operation is a 128 KiB file sent in one or more sendfile() calls")
    },
}];

struct Sockmap {
    info: Info,
}

impl Benchmark for Sockmap {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let mode = Mode::of(config)?;
        if config.producers != 1 || config.consumers != 2 {
            return Err(Error::usage(format!(
                "sockmap runs one producer and two consumers, as upstream's ('-c 2 -p 1'), \
                 got -p {} -c {}",
                config.producers, config.consumers
            )));
        }
        if config.params.number(&RX_STRP) != 0 && !mode.receive_side() {
            return Err(Error::usage(
                "--rx-strp attaches a stream parser to the receive side: give it with an --rx-* \
                 mode",
            ));
        }
        let strp = config.params.number(&RX_STRP);
        if let (Some(files), true) = (config.repeat, strp != 0) {
            // A parser passes whole messages only: a stream that does not end
            // on one keeps its last bytes from the reader for good.
            let bytes = files * FILE_SIZE as u64;
            if !bytes.is_multiple_of(strp) {
                let files_per_cut = strp / gcd(strp, FILE_SIZE as u64);
                return Err(Error::usage(format!(
                    "--rx-strp {strp} passes whole {strp}-byte messages only, and -r {files} sends \
                     {bytes} bytes, whose last {} the parser would hold back for good: give -r a \
                     multiple of {files_per_cut}, or an --rx-strp that divides {FILE_SIZE}",
                    bytes % strp
                )));
            }
        }
        if config.params.number(&PRODUCER_DURATION) != 0 && config.repeat.is_some() {
            return Err(Error::usage(
                "--producer-duration stops the producer on time, which a fixed-work run (-r) \
                 cannot: drop one of them",
            ));
        }
        Ok(())
    }

    fn setup(&self, config: &RunConfig) -> Result<Box<dyn Workload>> {
        let mode = Mode::of(config)?;
        let strp = config.params.number(&RX_STRP);
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: this storage is opened once, and the skeleton goes into an
        // `Owned` with it (or, failing to load, drops before it).
        let mut open = SockmapSkelBuilder::default()
            .open(unsafe { storage.object() })
            .map_err(|e| bpf::load_error("the sockmap BPF object", &e))?;
        let rodata = bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the sockmap object")?;
        rodata.redirect_flags = if mode.ingress() { BPF_F_INGRESS } else { 0 };
        // Within i32: the option's maximum.
        rodata.message_size = strp as u32;
        let skel = open
            .load()
            .map_err(|e| bpf::load_error("the sockmap programs (sk_skb, sk_msg)", &e))?;
        let skel = bpf::Owned::new(skel, storage);
        let sockets = Sockets::connect()?;
        let sender = plumb(&skel, &sockets, mode, strp != 0)?;
        Ok(Box::new(SockmapWorkload::new(
            skel,
            sockets,
            sender,
            config.params.number(&DELAY_CONSUMER),
            config.params.number(&PRODUCER_DURATION),
            config.repeat.is_some(),
        )?))
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    match b {
        0 => a,
        _ => gcd(b, a % b),
    }
}

/// Attaches the mode's programs to its map and puts its sockets in it (key
/// 0 the one the bytes enter, key 1 the one they are redirected to);
/// returns the socket the producer sends into.
fn plumb(
    skel: &SockmapSkel<'static>,
    sockets: &Sockets,
    mode: Mode,
    parser: bool,
) -> Result<RawFd> {
    let progs = &skel.progs;
    let (map, program, entries, sender) = match mode {
        Mode::RxPass => (
            &skel.maps.rx_sockets,
            &progs.count_skb_pass,
            vec![sockets.c2()],
            sockets.p2(),
        ),
        Mode::RxVerdictEgress => (
            &skel.maps.rx_sockets,
            &progs.count_skb_redir,
            vec![sockets.p1(), sockets.p2()],
            sockets.c1(),
        ),
        Mode::RxVerdictIngress => (
            &skel.maps.rx_sockets,
            &progs.count_skb_redir,
            vec![sockets.p1(), sockets.c2()],
            sockets.c1(),
        ),
        Mode::TxPass => (
            &skel.maps.tx_sockets,
            &progs.count_msg_pass,
            vec![sockets.p2(), sockets.c2()],
            sockets.p2(),
        ),
        Mode::TxVerdictIngress => (
            &skel.maps.tx_sockets,
            &progs.count_msg_redir,
            vec![sockets.p2(), sockets.c2()],
            sockets.p2(),
        ),
        Mode::TxVerdictEgress => (
            &skel.maps.tx_sockets,
            &progs.count_msg_redir,
            vec![sockets.p1(), sockets.p2()],
            sockets.p1(),
        ),
    };
    let map_fd = map.as_fd().as_raw_fd();
    if parser {
        progs
            .count_skb_parse
            .attach_sockmap(map_fd)
            .map_err(|e| bpf::attach_error("the stream parser to the sockmap", &e))?;
    }
    program
        .attach_sockmap(map_fd)
        .map_err(|e| bpf::attach_error("the verdict program to the sockmap", &e))?;
    for (key, fd) in entries.into_iter().enumerate() {
        map.update(
            &(key as u32).to_ne_bytes(),
            &(fd as u32).to_ne_bytes(),
            libbpf_rs::MapFlags::NO_EXIST,
        )
        .map_err(|e| {
            let why = bpf::errno(&e).map_or_else(|| e.to_string(), |n| format!("errno {n}"));
            Error::setup(format!(
                "cannot put a TCP socket in the sockmap ({why}): the kernel took the program \
                 but not the socket"
            ))
        })?;
    }
    Ok(sender)
}
