//! Prints any benchmark's declared lines ([`crate::lines::Lines`]): a
//! second's, a run's, the runs', a fixed run's block. Each piece's quantity
//! is worked out over one second, one run or several runs by the rules of
//! [`crate::figures::expr`]; nothing here knows a family.

use crate::config::{OptionValue, Params};
use crate::figures::{scaled, Agg, FinalOf, View};
use crate::lines::{Cond, Fixed, Line, Lines, Missing, Num, Piece, Style};
use crate::runner::FixedRun;
use crate::stats::Sample;

/// What a line is worked out over: one second or run, or several runs.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    One(&'a View<'a>),
    Runs(&'a [View<'a>]),
}

impl Scope<'_> {
    fn value(&self, agg: &Agg) -> f64 {
        match self {
            Scope::One(view) => agg.of(view),
            Scope::Runs(runs) => agg.over(runs),
        }
    }
}

/// The notes a summary ends with: the latest tick of a noisy run, and
/// whether the CPU was emulated.
#[derive(Clone, Copy, Debug, Default)]
pub struct Notes {
    /// A tick this late (ns) made the run noisy.
    pub noisy_late_ns: Option<i64>,
    pub emulated: bool,
}

/// The mark of a run whose times come from an emulated CPU (a TCG VM).
pub const EMULATED: &str = ", emulated (TCG): not a performance number";

impl Notes {
    fn words(&self) -> String {
        let noisy = self.noisy_late_ns.map_or(String::new(), |late| {
            format!(", noisy: a tick was {:.1} ms late", late as f64 / 1e6)
        });
        noisy + if self.emulated { EMULATED } else { "" }
    }
}

/// Prints one benchmark's lines with a run's parameters.
pub struct Printer<'a> {
    pub lines: &'a Lines,
    pub bench: &'a str,
    /// The benchmark's own options, for lines that depend on them.
    pub params: &'a Params,
    pub notes: Notes,
}

/// What one line is printed with besides its scope.
struct Context<'a> {
    scope: Scope<'a>,
    iteration: u32,
    late_ns: i64,
    cpu: Option<(u32, &'a [FinalOf<'a>])>,
}

impl Printer<'_> {
    /// One second's line(s), from its sample within the run's `view`.
    pub fn tick(&self, view: &View, sample: &Sample) -> String {
        let second = view.second(crate::figures::Frame {
            values: &sample.values,
            elapsed_ns: sample.elapsed_ns,
        });
        let context = Context {
            scope: Scope::One(&second),
            iteration: sample.iteration,
            late_ns: sample.late_ns,
            cpu: None,
        };
        self.pieces(self.lines.tick, &context)
    }

    /// The summary of one run, or over several.
    pub fn summary(&self, scope: Scope) -> Vec<String> {
        self.each(self.lines.summary, scope)
    }

    pub fn before_summary(&self, view: &View) -> Vec<String> {
        self.each(self.lines.before_summary, Scope::One(view))
    }

    pub fn after_summary(&self, view: &View) -> Vec<String> {
        self.each(self.lines.after_summary, Scope::One(view))
    }

    /// The counts under the runner's block of a fixed run, and what follows
    /// it; `None` for a benchmark that prints perf's block instead.
    pub fn fixed_counts(&self, view: &View) -> Option<(Vec<String>, Vec<String>)> {
        let Fixed::Runner { counts, after } = self.lines.fixed else {
            return None;
        };
        Some((
            self.each(counts, Scope::One(view)),
            self.each(after, Scope::One(view)),
        ))
    }

    /// The printed lines of `lines` over `scope`.
    fn each(&self, lines: &[Line], scope: Scope) -> Vec<String> {
        let context = Context {
            scope,
            iteration: 0,
            late_ns: 0,
            cpu: None,
        };
        let mut out = Vec::new();
        for line in lines {
            match line {
                Line::Always(pieces) => out.push(self.pieces(pieces, &context)),
                Line::When(cond, pieces) => {
                    if self.holds(cond, &context) {
                        out.push(self.pieces(pieces, &context));
                    }
                }
                Line::EachCpu(channel, pieces) => {
                    let Scope::One(view) = scope else { continue };
                    let mut cpus: Vec<u32> = view
                        .finals
                        .iter()
                        .filter(|(name, _, _)| *name == channel.name)
                        .filter_map(|(_, cpu, _)| *cpu)
                        .collect();
                    cpus.sort_unstable();
                    for cpu in cpus {
                        let at_cpu = Context {
                            cpu: Some((cpu, &view.finals)),
                            ..context
                        };
                        out.push(self.pieces(pieces, &at_cpu));
                    }
                }
            }
        }
        out
    }

    fn holds(&self, cond: &Cond, context: &Context) -> bool {
        match cond {
            Cond::Flag(flag) => self
                .params
                .iter()
                .any(|(k, v)| k == flag.long && v == OptionValue::Flag(true)),
            Cond::TextIs(option, text) => self.params.text(option) == *text,
            Cond::Exists(agg) => context.scope.value(agg).is_finite(),
            Cond::Positive(agg) => context.scope.value(agg) > 0.0,
            Cond::Not(cond) => !self.holds(cond, context),
            Cond::All(conds) => conds.iter().all(|c| self.holds(c, context)),
            Cond::Any(conds) => conds.iter().any(|c| self.holds(c, context)),
        }
    }

    fn pieces(&self, pieces: &[Piece], context: &Context) -> String {
        let mut out = String::new();
        for piece in pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Iteration(width) => out.push_str(&format!("{:width$}", context.iteration)),
                Piece::Late => out.push_str(&format!("{:7.3}", context.late_ns as f64 / 1e3)),
                Piece::Bench => out.push_str(self.bench),
                Piece::TextOf(option) => out.push_str(self.params.text(option)),
                Piece::Num(agg, num) => out.push_str(&number(context.scope.value(agg), num)),
                Piece::Scaled(agg, by, num) => {
                    let by = context.scope.value(by);
                    let divisor = match scaled(by) {
                        (_, "M") => 1e6,
                        (_, "K") => 1e3,
                        _ => 1.0,
                    };
                    out.push_str(&number(context.scope.value(agg) / divisor, num));
                }
                Piece::ScaleLetter(agg) => out.push_str(scaled(context.scope.value(agg)).1),
                Piece::Cpu(num) => {
                    let cpu = context.cpu.map_or(f64::NAN, |(cpu, _)| f64::from(cpu));
                    out.push_str(&number(cpu, num));
                }
                Piece::CpuValue(channel, num) => {
                    let value = context.cpu.and_then(|(cpu, finals)| {
                        finals
                            .iter()
                            .find(|(name, at, _)| *name == channel.name && *at == Some(cpu))
                            .map(|(_, _, v)| *v)
                    });
                    out.push_str(&number(value.unwrap_or(f64::NAN), num));
                }
                Piece::Notes => out.push_str(&self.notes.words()),
                Piece::Choose(cond, yes, no) => {
                    out.push_str(if self.holds(cond, context) { yes } else { no })
                }
                Piece::When(cond, pieces) => {
                    if self.holds(cond, context) {
                        out.push_str(&self.pieces(pieces, context));
                    }
                }
            }
        }
        out
    }
}

/// A number as `num` says: scaled, in its columns, or what stands for a
/// quantity that does not exist.
pub fn number(value: f64, num: &Num) -> String {
    let value = value / num.scale;
    let width = num.width;
    if !value.is_finite() {
        return match num.missing {
            Missing::NotAvailable => format!("{:>width$}", "n/a"),
            Missing::CNan if value.is_nan() => format!("{:>width$}", "-nan"),
            Missing::CNan => format!("{:>width$}", "inf"),
            Missing::Zero => number(0.0, &Num { scale: 1.0, ..*num }),
        };
    }
    match num.style {
        Style::Fixed => format!("{value:width$.prec$}", prec = num.decimals),
        Style::Whole => format!("{:>width$}", value.trunc() as i64),
        Style::ZeroPadded(digits) => {
            format!("{:>width$}", format!("{:0digits$}", value.trunc() as i64))
        }
    }
}

/// The runner's block of a fixed run, before its counts: the calls, the
/// total time, one operation's time.
pub fn runner_block(bench: &str, run: &FixedRun, producers: usize) -> Vec<String> {
    let secs = run.elapsed_ns / 1_000_000_000;
    let millis = run.elapsed_ns % 1_000_000_000 / 1_000_000;
    let usecs_per_op = if run.ops == 0 {
        0.0
    } else {
        run.elapsed_ns as f64 / 1e3 / run.ops as f64
    };
    let operations = if run.ops == run.calls {
        String::new()
    } else {
        format!(" ({} operations)", run.ops)
    };
    vec![
        format!(
            "# Executed {} calls of {bench}{operations} on {producers} producer{}",
            run.calls,
            if producers == 1 { "" } else { "s" }
        ),
        format!(" {:>14}: {secs}.{millis:03} [sec]", "Total time"),
        String::new(),
        format!(" {usecs_per_op:14.6} usecs/op"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_does() {
        let ratio = Num::fixed(4, 2).missing(Missing::CNan);
        assert_eq!(number(f64::NAN, &ratio), "-nan");
        assert_eq!(number(f64::INFINITY, &ratio), " inf");
        assert_eq!(number(4.1234, &ratio), "4.12");
        assert_eq!(number(f64::NAN, &Num::fixed(8, 3)), "     n/a");
        assert_eq!(
            number(f64::INFINITY, &Num::fixed(10, 3).missing(Missing::Zero)),
            "     0.000"
        );
        let c_lu = Num::whole(8).style(Style::ZeroPadded(3));
        assert_eq!(number(12.9, &c_lu), "     012");
        assert_eq!(number(12345.0, &c_lu), "   12345");
        assert_eq!(number(2_460_000.0, &Num::fixed(8, 3).per(1e6)), "   2.460");
        assert_eq!(number(320.0, &Num::whole(14)), "           320");
    }
}

/// Lines of a registered benchmark over made-up counts, for the families'
/// tests of their declared lines.
#[cfg(test)]
pub mod testing {
    use crate::benches;
    use crate::results::{FinalRecord, Outcome, RunRecord};
    use crate::runner::affinity::{place, Affinity};
    use crate::runner::FixedRun;
    use crate::stats::Sample;

    use super::super::reporter::Reporter;

    fn sample(iteration: u32, values: &[u64]) -> Sample {
        Sample {
            iteration,
            elapsed_ns: 1_000_000_000,
            late_ns: 12_345,
            warmup: false,
            values: values.iter().map(|v| Some(*v)).collect(),
        }
    }

    fn record(
        name: &str,
        producers: usize,
        outcome: Outcome,
        finals: &[(&str, Option<u32>, f64)],
    ) -> RunRecord {
        let bench = benches::find(name).expect("a registered benchmark");
        let mut config = bench.default_config().expect("its defaults");
        config.producers = producers;
        let placement = place(&Affinity::None, producers, 0, &[0]).expect("a placement");
        let mut run = RunRecord::new(&config, &placement);
        run.outcome = outcome;
        run.finals = finals
            .iter()
            .map(|(channel, cpu, value)| FinalRecord {
                channel: channel.to_string(),
                cpu: *cpu,
                value: *value,
            })
            .collect();
        run.evaluate(bench.figures(), bench.channels());
        run
    }

    /// A timed run of these seconds, each a second long, its figures worked out.
    pub fn run<S: AsRef<[u64]>>(name: &str, seconds: &[S], producers: usize) -> RunRecord {
        run_with(name, seconds, producers, &[])
    }

    /// [`run`] with values measured once.
    pub fn run_with<S: AsRef<[u64]>>(
        name: &str,
        seconds: &[S],
        producers: usize,
        finals: &[(&str, Option<u32>, f64)],
    ) -> RunRecord {
        let samples = seconds
            .iter()
            .enumerate()
            .map(|(i, s)| Sample {
                late_ns: 0,
                ..sample(i as u32, s.as_ref())
            })
            .collect();
        let bench = benches::find(name).expect("a registered benchmark");
        let rates: Vec<bool> = crate::channels::ticked(bench.channels())
            .map(|c| c.kind.is_differenced())
            .collect();
        record(name, producers, Outcome::timed(samples, &rates), finals)
    }

    /// Its line of a second (the fourth, 12.345 µs late) with these values.
    pub fn tick(name: &str, values: &[u64], producers: usize) -> String {
        let bench = benches::find(name).expect("a registered benchmark");
        let config = bench.default_config().expect("its defaults");
        Reporter::new(bench).tick(&sample(3, values), producers, &config.params)
    }

    /// The closing lines of a timed run of these seconds.
    pub fn summary<S: AsRef<[u64]>>(name: &str, seconds: &[S], producers: usize) -> Vec<String> {
        summary_with(name, seconds, producers, &[])
    }

    /// [`summary`] with values measured once.
    pub fn summary_with<S: AsRef<[u64]>>(
        name: &str,
        seconds: &[S],
        producers: usize,
        finals: &[(&str, Option<u32>, f64)],
    ) -> Vec<String> {
        let bench = benches::find(name).expect("a registered benchmark");
        let config = bench.default_config().expect("its defaults");
        let run = run_with(name, seconds, producers, finals);
        Reporter::new(bench).run_lines(&run, None, &config.params)
    }

    /// Everything a fixed run of a second with these counts prints (10 calls,
    /// as many operations as the first count).
    pub fn fixed(name: &str, values: &[u64], producers: usize) -> Vec<String> {
        fixed_with(name, values, producers, &[])
    }

    /// [`fixed`] with values measured once.
    pub fn fixed_with(
        name: &str,
        values: &[u64],
        producers: usize,
        finals: &[(&str, Option<u32>, f64)],
    ) -> Vec<String> {
        let bench = benches::find(name).expect("a registered benchmark");
        let mut config = bench.default_config().expect("its defaults");
        config.producers = producers;
        let run = FixedRun {
            elapsed_ns: 1_000_000_000,
            calls: 10,
            ops: values.first().copied().unwrap_or(0),
            values: values.iter().map(|v| Some(*v)).collect(),
        };
        let record = record(name, producers, Outcome::Fixed { run, churn: None }, finals);
        Reporter::new(bench).fixed(&record, &config)
    }
}
