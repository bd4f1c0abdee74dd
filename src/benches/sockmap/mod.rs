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

use super::{Benchmark, Info};
use crate::bpf::skel::sockmap::{SockmapSkel, SockmapSkelBuilder};
use crate::bpf::{self, Needs};
use crate::channels::{Channel, Slot};
use crate::config::{BenchOption, FlagOption, NumberOption, RunConfig};
use crate::error::{Error, Result};
use crate::figures::{Agg, Better, Figure, Sec, Show, Value};
use crate::lines::{self, Cond, Fixed, Line, Lines, Num, Piece, Style};
use crate::runner::SetUp;
use sockets::Sockets;
use workload::SockmapWorkload;

/// The file the producer sends, over and over (upstream's FILE_SIZE).
pub const FILE_SIZE: usize = 128 * 1024;

/// The kernel's BPF_F_INGRESS: a redirect to the target's receive queue.
const BPF_F_INGRESS: u64 = 1;

/// The counters the producer and consumer keep, in their array's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    SentBytes = 0,
    SendCalls = 1,
    ReceivedBytes = 2,
    ReadCalls = 3,
}

const BPF: Channel = Channel::counter(
    "bpf bytes",
    "bytes",
    "bytes the BPF programs saw (sk_skb verdict, or sk_msg)",
)
.was(Slot::Hits);
const REFUSED: Channel = Channel::counter(
    "redirects refused",
    "redirects",
    "redirects the BPF programs asked for and the kernel refused",
)
.was(Slot::Drops);
const SENT_BYTES: Channel = Channel::counter(
    "sent bytes",
    "bytes",
    "bytes the producer's sendfile() calls sent",
)
.was(Slot::Extra(0));
const SEND_CALLS: Channel =
    Channel::counter("send calls", "calls", "the producer's sendfile() calls").was(Slot::Extra(1));
const RECEIVED_BYTES: Channel = Channel::counter(
    "received bytes",
    "bytes",
    "bytes consumer 0 read from the receiving socket",
)
.was(Slot::Extra(2));
const READ_CALLS: Channel =
    Channel::counter("read calls", "calls", "consumer 0's read() calls").was(Slot::Extra(3));
const CHANNELS: [Channel; 6] = [
    BPF,
    REFUSED,
    SENT_BYTES,
    SEND_CALLS,
    RECEIVED_BYTES,
    READ_CALLS,
];

/// Megabytes (10^6 bytes, upstream's unit) per second.
const fn megabytes(channel: &'static Channel) -> Sec {
    Sec::Rate(channel)
}
const BPF_RATE: Sec = megabytes(&BPF);
const BPF_MBPS: Sec = Sec::Div(&BPF_RATE, &Sec::Const(1e6));

/// The bytes the BPF programs saw per second, in MB/s: upstream's BPF Speed
/// and its Summary's mean.
pub const BPF_BYTES: Figure = Figure {
    name: "bpf bytes",
    unit: "MB/s",
    better: Better::Higher,
    show: Show::Decimals(3),
    value: Value::PerSecond(&BPF_MBPS),
};

/// The bytes the producer's sendfile() calls sent per second (Send Speed).
pub const SENT: Figure = Figure {
    name: "sent",
    value: Value::PerSecond(&Sec::Div(&Sec::Rate(&SENT_BYTES), &Sec::Const(1e6))),
    ..BPF_BYTES
};

/// The bytes consumer 0 read per second (Rcv Speed).
pub const RECEIVED: Figure = Figure {
    name: "received",
    value: Value::PerSecond(&Sec::Div(&Sec::Rate(&RECEIVED_BYTES), &Sec::Const(1e6))),
    ..BPF_BYTES
};

const MB_8: Num = Num::fixed(8, 3).per(1e6);
const SENT_TOTAL: Agg = Agg::Total(&Sec::Value(&SENT_BYTES));
const RECEIVED_TOTAL: Agg = Agg::Total(&Sec::Value(&RECEIVED_BYTES));
const UNREAD: Agg = Agg::Sub(&SENT_TOTAL, &RECEIVED_TOTAL);

/// Before a run's Summary, where consumer 0 read less than nine tenths of
/// what the producer sent: where the rest went. The producer's sendfile()
/// counts what the kernel took, and a redirect queues it for c2 without
/// waiting for the reader, so a timed run ends with much of it unread (a
/// `-r` run reads it all: 2.6 GB sent in 0.22 s by `-r 20000` arrived over
/// the next 4.5 s, on this host).
const UNREAD_LINE: Line = Line::When(
    Cond::Positive(Agg::Sub(
        &Agg::Mul(&SENT_TOTAL, &Agg::Const(0.9)),
        &RECEIVED_TOTAL,
    )),
    &[
        Piece::Text("# "),
        Piece::Num(UNREAD, Num::fixed(0, 0).per(1e6)),
        Piece::Text(" MB of the "),
        Piece::Num(SENT_TOTAL, Num::fixed(0, 0).per(1e6)),
        Piece::Text(" MB sent were still queued in the kernel, unread, when the run ended ("),
        Piece::Num(Agg::Total(&Sec::Value(&REFUSED)), Num::whole(0)),
        Piece::Text(
            " redirects refused): the kernel takes what the producer sends and queues it for \
             c2 without waiting for the reader; a -r run reads every byte",
        ),
    ],
);
/// A count of a fixed run, under its block.
macro_rules! count_line {
    ($channel:expr, $words:expr) => {
        Line::Always(&[
            Piece::Text(" "),
            Piece::Num(Agg::Total(&Sec::Value(&$channel)), Num::whole(14)),
            Piece::Text($words),
        ])
    };
}

/// The kernel runner's `sockmap` lines: each second the send, BPF and
/// receive speeds in MB/s with the send and read calls, and a `Summary:` of
/// the megabytes the BPF programs saw (printed as C's `%8.3lu`: at least
/// three digits, zero-padded, in eight columns) and their mean per second.
const LINES: Lines = Lines {
    tick: &[
        lines::ITER[0],
        lines::ITER[1],
        lines::ITER[2],
        lines::ITER[3],
        Piece::Text("us): Send Speed "),
        Piece::Num(Agg::Mean(&Sec::Rate(&SENT_BYTES)), MB_8),
        Piece::Text(" MB/s ("),
        Piece::Num(Agg::Mean(&Sec::Rate(&SEND_CALLS)), Num::fixed(8, 3)),
        Piece::Text(" calls/s), BPF Speed "),
        Piece::Num(Agg::Mean(&BPF_RATE), MB_8),
        Piece::Text(" MB/s, Rcv Speed "),
        Piece::Num(Agg::Mean(&Sec::Rate(&RECEIVED_BYTES)), MB_8),
        Piece::Text(" MB/s ("),
        Piece::Num(Agg::Mean(&Sec::Rate(&READ_CALLS)), Num::fixed(8, 3)),
        Piece::Text(" calls/s)"),
    ],
    summary: &[Line::Always(&[
        Piece::Text("Summary: total trans "),
        Piece::Num(
            Agg::Mul(&Agg::Mean(&BPF_MBPS), &Agg::Seconds),
            Num::whole(8).style(Style::ZeroPadded(3)),
        ),
        Piece::Text(" MB \u{b1} "),
        Piece::Num(Agg::Mean(&BPF_MBPS), Num::fixed(5, 3)),
        Piece::Text(" MB/s"),
        Piece::Notes,
    ])],
    before_summary: &[UNREAD_LINE],
    fixed: Fixed::Runner {
        counts: &[
            count_line!(BPF, " hits"),
            count_line!(REFUSED, " drops"),
            count_line!(SENT_BYTES, " bytes sent"),
            count_line!(RECEIVED_BYTES, " bytes received"),
            count_line!(REFUSED, " redirects refused"),
        ],
        after: &[],
    },
    ..lines::HITS
};

const fn mode_flag(long: &'static str, help: &'static str) -> FlagOption {
    FlagOption {
        long,
        help,
        output_only: false,
    }
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
    info: Info::hits(
        "sockmap",
        "bytes through sk_skb/sk_msg programs in a sockmap between TCP sockets on \
         loopback (one mode flag: --rx-verdict-egress by default); one op is one 128 KiB \
         file sent",
    )
    .consumers(2)
    .needs(Needs::RunProgram)
    .options(&OPTIONS)
    .untimed("one operation is a 128 KiB file sent in one or more sendfile() calls")
    .declares(&CHANNELS, &[BPF_BYTES, SENT, RECEIVED], LINES),
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

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
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
        Ok(SetUp::producers(SockmapWorkload::new(
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

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    #[test]
    fn lines_are_the_kernel_runners() {
        let values = [1_234_567_000, 0, 1_300_000_000, 9876, 1_200_000_000, 1234];
        assert_eq!(
            testing::tick("sockmap", &values, 1),
            "Iter   3 ( 12.345us): Send Speed 1300.000 MB/s (9876.000 calls/s), BPF Speed \
             1234.567 MB/s, Rcv Speed 1200.000 MB/s (1234.000 calls/s)"
        );
        let ten = vec![values; 10];
        assert_eq!(
            testing::summary("sockmap", &ten, 1),
            ["Summary: total trans    12345 MB \u{00b1} 1234.567 MB/s"]
        );
        let small = vec![[1_500_000u64, 0, 0, 0, 0, 0]; 10];
        assert_eq!(
            testing::summary("sockmap", &small, 1),
            ["Summary: total trans      015 MB \u{00b1} 1.500 MB/s"]
        );
    }

    #[test]
    fn a_run_that_read_far_less_than_it_sent_says_where_the_rest_is() {
        let unread = [[1_000_000, 0, 4_230_000_000, 10, 770_000_000, 10]];
        assert_eq!(
            testing::summary("sockmap", &unread, 1),
            [
                "# 3460 MB of the 4230 MB sent were still queued in the kernel, unread, when the \
                 run ended (0 redirects refused): the kernel takes what the producer sends and \
                 queues it for c2 without waiting for the reader; a -r run reads every byte",
                "Summary: total trans      001 MB \u{00b1} 1.000 MB/s",
            ]
        );
        let most_read = [[1_000_000, 0, 1_000_000_000, 10, 950_000_000, 10]];
        assert_eq!(testing::summary("sockmap", &most_read, 1).len(), 1);
    }

    #[test]
    fn fixed_lines_show_the_byte_counts() {
        let lines = testing::fixed("sockmap", &[262_144, 0, 262_144, 2, 262_144, 5], 1);
        assert_eq!(
            lines[lines.len() - 3..],
            [
                "         262144 bytes sent",
                "         262144 bytes received",
                "              0 redirects refused",
            ]
        );
    }
}
