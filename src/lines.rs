//! How a benchmark's lines print, as data: each second's line, the
//! `Summary:` line, the lines around it and a fixed run's block, each a row
//! of pieces (text, and quantities over the benchmark's channels with their
//! format). A family declares its own (the kernel runner's lines for sockmap,
//! local storage, the LPM trie...) in its own file; `report::lines` prints
//! any of them, and knows no family. The kernel runner's hits lines
//! ([`HITS`]) are the default.

use crate::channels::{Channel, DROPS, HITS as HITS_CHANNEL, OPERATIONS};
use crate::config::{FlagOption, NumberOption, TextOption};
use crate::figures::{Agg, Sec};
pub use crate::hits_lines;

/// Every line a benchmark's runs print besides the shared ones.
#[derive(Clone, Copy, Debug)]
pub struct Lines {
    /// Each second's line (a `\n` piece makes it two).
    pub tick: &'static [Piece],
    /// Whether `-q` keeps the seconds' lines (the kernel runner's `-q`
    /// hides them for local-storage-tasks-trace alone).
    pub ticks_when_quiet: bool,
    /// A timed run's closing line (`Summary: ...`, labelled `Run N:` for one
    /// of several runs), and the same over runs.
    pub summary: &'static [Line],
    /// Printed before the summary, and after a fixed run's block (the
    /// per-CPU lines of a benchmark timed inside BPF).
    pub before_summary: &'static [Line],
    /// Printed after the summary, and after a fixed run's block.
    pub after_summary: &'static [Line],
    pub fixed: Fixed,
    /// What `--latency` calls one operation.
    pub operation: &'static str,
}

/// A fixed-work (`--repeat`) run's block.
#[derive(Clone, Copy, Debug)]
pub enum Fixed {
    /// The runner's block (calls, total time, usecs/op), then these counts,
    /// then `after` (what a timed run says in its summary).
    Runner {
        counts: &'static [Line],
        after: &'static [Line],
    },
    /// `perf bench`'s block, line for line.
    Perf(PerfFormat),
}

/// One line, or none, or one per CPU.
#[derive(Clone, Copy, Debug)]
pub enum Line {
    Always(&'static [Piece]),
    /// Printed only where the condition holds.
    When(Cond, &'static [Piece]),
    /// Once for each CPU that has a value of this channel, in CPU order.
    EachCpu(&'static Channel, &'static [Piece]),
}

/// A piece of a line.
#[derive(Clone, Copy, Debug)]
pub enum Piece {
    Text(&'static str),
    /// The tick's number, in this many columns.
    Iteration(usize),
    /// How late the tick fired, in µs (`{:7.3}`).
    Late,
    /// The benchmark's name.
    Bench,
    /// The value of one of its text options (xdp-lb's `--scenario`).
    TextOf(&'static TextOption),
    /// A quantity, formatted.
    Num(Agg, Num),
    /// A quantity divided by the scale (1e6, 1e3 or 1) of a rate: perf's
    /// `ops 35.123K/s`.
    Scaled(Agg, Agg, Num),
    /// The letter of that scale (`M`, `K` or nothing).
    ScaleLetter(Agg),
    /// The CPU of an [`Line::EachCpu`] line.
    Cpu(Num),
    /// A value of that CPU.
    CpuValue(&'static Channel, Num),
    /// `, noisy: a tick was ... late` and the mark of an emulated CPU.
    Notes,
    /// One text where the condition holds, another where it does not.
    Choose(Cond, &'static str, &'static str),
    /// These pieces where the condition holds, nothing where it does not.
    When(Cond, &'static [Piece]),
}

/// How a number prints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num {
    /// Divided by this first (1e6 for M/s).
    pub scale: f64,
    pub width: usize,
    pub decimals: usize,
    pub style: Style,
    pub missing: Missing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `{:width.decimals}`.
    Fixed,
    /// A whole number, rounded toward zero, right-aligned.
    Whole,
    /// A whole number with at least this many digits (zero-padded), then
    /// right-aligned: C's `%8.3lu`.
    ZeroPadded(usize),
}

/// What prints where the quantity does not exist (no value, x/0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// `n/a`, right-aligned.
    NotAvailable,
    /// As C's printf of a double: `-nan` for 0/0, `inf` for x/0.
    CNan,
    /// 0, as the line has always printed it (a rate of nothing).
    Zero,
}

impl Num {
    pub const fn fixed(width: usize, decimals: usize) -> Num {
        Num {
            scale: 1.0,
            width,
            decimals,
            style: Style::Fixed,
            missing: Missing::NotAvailable,
        }
    }

    pub const fn whole(width: usize) -> Num {
        Num {
            style: Style::Whole,
            ..Num::fixed(width, 0)
        }
    }

    /// Divided by `scale` first.
    pub const fn per(self, scale: f64) -> Num {
        Num { scale, ..self }
    }

    pub const fn missing(self, missing: Missing) -> Num {
        Num { missing, ..self }
    }

    pub const fn style(self, style: Style) -> Num {
        Num { style, ..self }
    }
}

/// What decides whether a line prints.
#[derive(Clone, Copy, Debug)]
pub enum Cond {
    /// The benchmark's flag is on.
    Flag(&'static FlagOption),
    /// The benchmark's text option has this value.
    TextIs(&'static TextOption, &'static str),
    /// The quantity exists.
    Exists(Agg),
    /// The quantity exists and is above zero.
    Positive(Agg),
    Not(&'static Cond),
    All(&'static [Cond]),
    Any(&'static [Cond]),
}

const M: f64 = 1e6;
const HITS_RATE: Sec = Sec::Rate(&HITS_CHANNEL);
/// One producer's hits per second.
pub const PER_PRODUCER: Agg = Agg::Div(&Agg::Mean(&HITS_RATE), &Agg::Producers);
/// One producer's time per hit, in ns.
pub const NS_PER_HIT: Agg = Agg::Div(&Agg::Const(1e9), &PER_PRODUCER);

/// `Iter   3 ( 12.345us): `, the start of the kernel runner's seconds' lines.
pub const ITER: [Piece; 4] = [
    Piece::Text("Iter "),
    Piece::Iteration(3),
    Piece::Text(" ("),
    Piece::Late,
];

/// `{:width.3}` of millions.
pub const fn mega(width: usize) -> Num {
    Num::fixed(width, 3).per(M)
}

/// The kernel runner's hits lines, with `$second` (a channel's value each
/// second: the drops, or what a family counts in their place, as upstream
/// does) in the drops column: each second, the Summary, a fixed run's
/// counts. Built by a macro so that each use is a constant of its own.
#[macro_export]
macro_rules! hits_lines {
    ($second:expr) => {{
        use $crate::figures::{Agg, Sec};
        use $crate::lines::{mega, Fixed, Line, Lines, Num, Piece, ITER, NS_PER_HIT, PER_PRODUCER};
        const HITS_RATE: Sec = Sec::Rate(&$crate::channels::HITS);
        const SECOND: Sec = $second;
        const SECOND_RATE: Sec = Sec::Div(&SECOND, &Sec::Seconds);
        const TOTAL_RATE: Sec = Sec::Add(&HITS_RATE, &SECOND_RATE);
        Lines {
            tick: &[
                ITER[0],
                ITER[1],
                ITER[2],
                ITER[3],
                Piece::Text("us): hits "),
                Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
                Piece::Text("M/s ("),
                Piece::Num(PER_PRODUCER, mega(7)),
                Piece::Text("M/prod), drops "),
                Piece::Num(Agg::Mean(&SECOND_RATE), mega(8)),
                Piece::Text("M/s, total operations "),
                Piece::Num(Agg::Mean(&TOTAL_RATE), mega(8)),
                Piece::Text("M/s"),
            ],
            ticks_when_quiet: true,
            summary: &[Line::Always(&[
                Piece::Text("Summary: hits "),
                Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
                Piece::Text(" \u{b1} "),
                Piece::Num(Agg::Sd(&HITS_RATE), mega(5)),
                Piece::Text("M/s ("),
                Piece::Num(PER_PRODUCER, mega(7)),
                Piece::Text("M/prod), drops "),
                Piece::Num(Agg::Mean(&SECOND_RATE), mega(8)),
                Piece::Text(" \u{b1} "),
                Piece::Num(Agg::Sd(&SECOND_RATE), mega(5)),
                Piece::Text("M/s, total operations "),
                Piece::Num(Agg::Mean(&TOTAL_RATE), mega(8)),
                Piece::Text(" \u{b1} "),
                Piece::Num(Agg::Sd(&TOTAL_RATE), mega(5)),
                Piece::Text("M/s, latency "),
                Piece::Num(NS_PER_HIT, Num::fixed(8, 3)),
                Piece::Text(" ns/op/prod"),
                Piece::Notes,
            ])],
            before_summary: &[],
            after_summary: &[],
            fixed: Fixed::Runner {
                counts: &[
                    Line::Always(&[
                        Piece::Text(" "),
                        Piece::Num(
                            Agg::Total(&Sec::Value(&$crate::channels::HITS)),
                            Num::whole(14),
                        ),
                        Piece::Text(" hits"),
                    ]),
                    Line::Always(&[
                        Piece::Text(" "),
                        Piece::Num(Agg::Total(&SECOND), Num::whole(14)),
                        Piece::Text(" drops"),
                    ]),
                ],
                after: &[],
            },
            operation: "hit",
        }
    }};
}

/// The kernel runner's hits lines: the default.
pub const HITS: Lines = hits_lines!(Sec::Declared(&DROPS));

/// A fixed run's hits and drops, under the runner's block.
pub const HITS_COUNTS: &[Line] = match HITS.fixed {
    Fixed::Runner { counts, .. } => counts,
    Fixed::Perf(_) => &[],
};

/// The kernel runner's `ops_report_progress` and `ops_report_final`: hits
/// as operations, throughput in M ops/s and one producer's ns per op.
pub const HIT_OPS: Lines = Lines {
    tick: HIT_OPS_TICK,
    summary: &[Line::Always(HIT_OPS_SUMMARY)],
    ..HITS
};

/// `Iter   3 ( 12.345us): hits    1.234M/s (  1.234M/prod)`.
pub const HIT_OPS_TICK: &[Piece] = &[
    ITER[0],
    ITER[1],
    ITER[2],
    ITER[3],
    Piece::Text("us): hits "),
    Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
    Piece::Text("M/s ("),
    Piece::Num(PER_PRODUCER, mega(7)),
    Piece::Text("M/prod)"),
];

/// `Summary: throughput    1.234 ± 0.012 M ops/s (  1.234M ops/prod),
/// latency  810.373 ns/op`.
pub const HIT_OPS_SUMMARY: &[Piece] = &[
    Piece::Text("Summary: throughput "),
    Piece::Num(Agg::Mean(&HITS_RATE), mega(8)),
    Piece::Text(" \u{b1} "),
    Piece::Num(Agg::Sd(&HITS_RATE), mega(5)),
    Piece::Text(" M ops/s ("),
    Piece::Num(PER_PRODUCER, mega(7)),
    Piece::Text("M ops/prod), latency "),
    Piece::Num(NS_PER_HIT, Num::fixed(8, 3)),
    Piece::Text(" ns/op"),
    Piece::Notes,
];

const OPS_RATE: Sec = Sec::Rate(&OPERATIONS);
const OPS_MEAN: Agg = Agg::Mean(&OPS_RATE);
/// Microseconds per operation of all producers together, and its sd
/// carried over to first order (0 where nothing was done, as perf prints).
const USECS: Agg = Agg::Div(&Agg::Const(1e6), &OPS_MEAN);
const USECS_SD: Agg = Agg::Div(
    &Agg::Mul(&Agg::Const(1e6), &Agg::Sd(&OPS_RATE)),
    &Agg::Mul(&OPS_MEAN, &OPS_MEAN),
);
const ZERO_IF_NONE: Missing = Missing::Zero;

const OPS_SUMMARY: [Piece; 13] = [
    Piece::Text("Summary: ops "),
    Piece::Scaled(OPS_MEAN, OPS_MEAN, Num::fixed(8, 3)),
    Piece::Text(" \u{b1} "),
    Piece::Scaled(Agg::Sd(&OPS_RATE), OPS_MEAN, Num::fixed(5, 3)),
    Piece::ScaleLetter(OPS_MEAN),
    Piece::Text("/s ("),
    Piece::Scaled(
        Agg::Div(&OPS_MEAN, &Agg::Producers),
        OPS_MEAN,
        Num::fixed(7, 3),
    ),
    Piece::ScaleLetter(OPS_MEAN),
    Piece::Text("/prod), usecs/op "),
    Piece::Num(USECS, Num::fixed(10, 3).missing(ZERO_IF_NONE)),
    Piece::Text(" \u{b1} "),
    Piece::Num(USECS_SD, Num::fixed(0, 3).missing(ZERO_IF_NONE)),
    Piece::Notes,
];

/// perf's usecs/op/cpu: one producer's time per operation.
const OPS_SUMMARY_PER_CPU: [Piece; 15] = [
    OPS_SUMMARY[0],
    OPS_SUMMARY[1],
    OPS_SUMMARY[2],
    OPS_SUMMARY[3],
    OPS_SUMMARY[4],
    OPS_SUMMARY[5],
    OPS_SUMMARY[6],
    OPS_SUMMARY[7],
    OPS_SUMMARY[8],
    OPS_SUMMARY[9],
    OPS_SUMMARY[10],
    OPS_SUMMARY[11],
    Piece::Text(", usecs/op/cpu "),
    Piece::Num(
        Agg::Mul(&USECS, &Agg::Producers),
        Num::fixed(10, 3).missing(ZERO_IF_NONE),
    ),
    Piece::Notes,
];

const OPS_TICK: &[Piece] = &[
    ITER[0],
    ITER[1],
    ITER[2],
    ITER[3],
    Piece::Text("us): ops "),
    Piece::Scaled(OPS_MEAN, OPS_MEAN, Num::fixed(8, 3)),
    Piece::ScaleLetter(OPS_MEAN),
    Piece::Text("/s ("),
    Piece::Scaled(
        Agg::Div(&OPS_MEAN, &Agg::Producers),
        OPS_MEAN,
        Num::fixed(7, 3),
    ),
    Piece::ScaleLetter(OPS_MEAN),
    Piece::Text("/prod), usecs/op "),
    Piece::Num(USECS, Num::fixed(10, 3).missing(ZERO_IF_NONE)),
];

const OPS_SUMMARY_LINES: &[Line] = &[Line::Always(&OPS_SUMMARY)];
const OPS_SUMMARY_PER_CPU_LINES: &[Line] = &[Line::Always(&OPS_SUMMARY_PER_CPU)];

impl Lines {
    /// `perf bench`'s operations: ops/s and usecs/op each second and in the
    /// summary (with usecs/op/cpu where perf prints it), and perf's own
    /// block for a fixed run.
    pub const fn perf(format: PerfFormat) -> Lines {
        Lines {
            tick: OPS_TICK,
            ticks_when_quiet: true,
            summary: match format.per_cpu {
                true => OPS_SUMMARY_PER_CPU_LINES,
                false => OPS_SUMMARY_LINES,
            },
            before_summary: &[],
            after_summary: &[],
            fixed: Fixed::Perf(format),
            operation: "operation",
        }
    }
}

/// How `perf bench` reports one of its benchmarks, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfFormat {
    /// `# Running 'COLLECTION/NAME' benchmark:`
    pub collection: &'static str,
    pub name: &'static str,
    /// The line under it, piece by piece.
    pub executed: &'static [PerfPiece],
    /// perf's `usecs/op/cpu`: one producer's time per operation (also in the
    /// timed summary).
    pub per_cpu: bool,
    /// perf's `ops/sec` line.
    pub ops_per_sec: bool,
    /// The total time in microseconds, and every number with thousands
    /// separators, as perf's uprobe collection prints them.
    pub usecs_grouped: bool,
}

/// One piece of perf's `# Executed ...` line: text, or a figure of the fixed
/// run filled in when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfPiece {
    Text(&'static str),
    /// The operations the run made.
    Ops,
    /// The producers' calls (a batch of operations may be one call).
    Calls,
    Producers,
    /// The value of one of the benchmark's own options.
    Param(NumberOption),
}
