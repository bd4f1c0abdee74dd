//! The units of what the benchmarks declare, checked: every figure is a
//! quantity over channels its benchmark reads, never a sum across units,
//! and its declared unit is the one its expression makes. Tests only.

use std::collections::BTreeMap;

use super::all;
use crate::channels::Channel;
use crate::figures::{Agg, Sec, Value};
use crate::lines::{Cond, Fixed, Line, Lines, Piece};

/// A unit as powers of base units (`event/s`: event 1, s -1); scale
/// factors and counts of producers are dimensionless.
type Dim = BTreeMap<String, i32>;

/// One word of a unit, reduced to its base: singular, scale and synonyms
/// folded (ms and ns are s, MiB is byte, an op or a hit an event).
fn base(word: &str) -> Option<String> {
    let word = word.trim().to_lowercase();
    let word = match word.as_str() {
        "" | "%" | "producer" | "producers" => return None,
        "s" | "ns" | "us" | "\u{b5}s" | "ms" => "s".to_string(),
        "mib" | "kib" | "mb" | "kb" | "bytes" | "byte" => "byte".to_string(),
        w => w.strip_suffix('s').unwrap_or(w).to_string(),
    };
    Some(match word.as_str() {
        "op" | "operation" | "hit" => "event".to_string(),
        _ => word,
    })
}

/// A declared unit: words over words (`ns/op`, `operations/s per producer`).
fn parse(unit: &str) -> Dim {
    let unit = unit.replace(" per ", "/");
    let mut dim = Dim::new();
    for (i, word) in unit.split('/').enumerate() {
        if let Some(word) = base(word) {
            *dim.entry(word).or_default() += if i == 0 { 1 } else { -1 };
        }
    }
    dim.retain(|_, p| *p != 0);
    dim
}

fn combine(a: Dim, b: Dim, sign: i32) -> Dim {
    let mut out = a;
    for (word, power) in b {
        *out.entry(word).or_default() += sign * power;
    }
    out.retain(|_, p| *p != 0);
    out
}

fn channel(channels: &[Channel], named: &Channel, why: &str) -> Result<Dim, String> {
    match channels.iter().find(|c| c.name == named.name) {
        Some(c) => Ok(parse(c.unit)),
        None => Err(format!(
            "{why} reads {}, which it does not declare",
            named.name
        )),
    }
}

/// Adds or subtracts two quantities of one unit, or says they differ.
fn same(a: Dim, b: Dim, what: &str) -> Result<Dim, String> {
    match a == b || a.is_empty() || b.is_empty() {
        true => Ok(if a.is_empty() { b } else { a }),
        false => Err(format!("{what} sums {a:?} and {b:?}")),
    }
}

fn sec(e: &Sec, chans: &[Channel]) -> Result<Dim, String> {
    Ok(match *e {
        Sec::Value(c) => channel(chans, c, "a figure or line")?,
        Sec::Rate(c) => combine(channel(chans, c, "a rate")?, parse("s"), -1),
        // Its own unit where the benchmark lacks it (a zero of that unit).
        Sec::Declared(c) => match chans.iter().any(|d| d.name == c.name) {
            true => channel(chans, c, "")?,
            false => parse(c.unit),
        },
        Sec::Seconds => parse("s"),
        Sec::Producers | Sec::Const(_) => Dim::new(),
        Sec::Add(a, b) | Sec::Sub(a, b) => same(sec(a, chans)?, sec(b, chans)?, "a sum")?,
        Sec::Mul(a, b) => combine(sec(a, chans)?, sec(b, chans)?, 1),
        Sec::Div(a, b) => combine(sec(a, chans)?, sec(b, chans)?, -1),
        Sec::Trunc(a) => sec(a, chans)?,
    })
}

fn agg(e: &Agg, chans: &[Channel]) -> Result<Dim, String> {
    Ok(match *e {
        Agg::Mean(s) | Agg::Sd(s) | Agg::Max(s) | Agg::Total(s) => sec(s, chans)?,
        Agg::Seconds => parse("s"),
        Agg::Final(c) => channel(chans, c, "a value measured once")?,
        Agg::Producers | Agg::Const(_) => Dim::new(),
        Agg::Add(a, b) | Agg::Sub(a, b) => same(agg(a, chans)?, agg(b, chans)?, "a sum")?,
        Agg::Mul(a, b) => combine(agg(a, chans)?, agg(b, chans)?, 1),
        Agg::Div(a, b) => combine(agg(a, chans)?, agg(b, chans)?, -1),
        Agg::Trunc(a) => agg(a, chans)?,
    })
}

/// Every quantity a benchmark's lines print, checked as figures are.
fn lines(lines: &Lines, chans: &[Channel]) -> Result<(), String> {
    let mut rows: Vec<&[Piece]> = vec![lines.tick];
    let fixed: &[Line] = match lines.fixed {
        Fixed::Runner { counts, after } => &[counts, after].concat().leak()[..],
        Fixed::Perf(_) => &[],
    };
    let all = [
        lines.summary,
        lines.before_summary,
        lines.after_summary,
        fixed,
    ];
    for line in all.iter().flat_map(|l| l.iter()) {
        match line {
            Line::Always(p) | Line::EachCpu(_, p) => rows.push(p),
            Line::When(cond, p) => {
                check_cond(cond, chans)?;
                rows.push(p);
            }
        }
    }
    rows.into_iter()
        .try_for_each(|pieces| check_pieces(pieces, chans))
}

/// Each piece's quantities and conditions read declared channels.
fn check_pieces(pieces: &[Piece], chans: &[Channel]) -> Result<(), String> {
    for piece in pieces {
        match piece {
            Piece::Num(a, _) | Piece::ScaleLetter(a) => drop(agg(a, chans)?),
            Piece::Scaled(a, b, _) => drop((agg(a, chans)?, agg(b, chans)?)),
            Piece::CpuValue(c, _) => drop(channel(chans, c, "a per-CPU line")?),
            Piece::Choose(cond, ..) => check_cond(cond, chans)?,
            Piece::When(cond, inner) => {
                check_cond(cond, chans)?;
                check_pieces(inner, chans)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_cond(cond: &Cond, chans: &[Channel]) -> Result<(), String> {
    match cond {
        Cond::Exists(a) | Cond::Positive(a) => agg(a, chans).map(drop),
        Cond::Not(c) => check_cond(c, chans),
        Cond::All(cs) | Cond::Any(cs) => cs.iter().try_for_each(|c| check_cond(c, chans)),
        Cond::Flag(_) | Cond::TextIs(..) => Ok(()),
    }
}

#[test]
fn every_figure_is_in_the_unit_it_declares_and_sums_no_units() {
    for bench in all() {
        let chans = bench.channels();
        for figure in bench.figures() {
            let made = match figure.value {
                Value::PerSecond(s) => sec(s, chans),
                Value::OfRun(a) => agg(a, chans),
                Value::Attach | Value::Detach => continue,
            };
            let made = made.unwrap_or_else(|e| panic!("{} {}: {e}", bench.name(), figure.name));
            assert_eq!(
                made,
                parse(figure.unit),
                "{} {}: declared in {} but made of {made:?}",
                bench.name(),
                figure.name,
                figure.unit
            );
        }
        // An attach cycle prints its own lines, not these.
        if !bench.runs_cycles() {
            let checked = lines(bench.lines(), chans);
            checked.unwrap_or_else(|e| panic!("{}'s lines: {e}", bench.name()));
        }
    }
}

#[test]
fn units_are_read_as_written() {
    let events = |w: &str| (w.to_string(), 1);
    assert_eq!(
        parse("hits/s"),
        Dim::from([events("event"), ("s".into(), -1)])
    );
    assert_eq!(parse("ns/op"), parse("ms/operation"));
    assert_eq!(parse("MiB"), parse("bytes"));
    assert_eq!(parse("operations/s per producer"), parse("events/s"));
    assert_eq!(parse("%"), Dim::new());
    assert!(same(parse("bytes"), parse("events"), "x").is_err());
}
