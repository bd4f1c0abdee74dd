//! Quantities over channels, as data: what one second holds ([`Sec`]), and
//! what a run's seconds come to ([`Agg`]). A figure is one of them with a
//! unit and a better direction; a line of the kernel runner's is a row of
//! them with a format. Evaluated over a [`View`]: one second, one run, or
//! several runs, by the same rules everywhere.
//!
//! Values are `f64`; a quantity that does not exist (a reading that failed,
//! a division by zero, a second with nothing to average) is NaN or infinite,
//! left out of every mean and printed as the line says.

use crate::channels::Channel;
use crate::stats::mean_sd;

/// A quantity in one second, or over a fixed run taken as one long second.
#[derive(Clone, Copy, Debug)]
pub enum Sec {
    /// A channel's value: a counter's count, a duration's ns, a gauge's
    /// reading.
    Value(&'static Channel),
    /// A channel's value per second of the frame.
    Rate(&'static Channel),
    /// A channel's value, or 0 for a benchmark that does not read it (the
    /// kernel runner's lines print 0 drops for a benchmark that cannot drop).
    Declared(&'static Channel),
    /// The frame's length, in seconds.
    Seconds,
    /// The producers of the run.
    Producers,
    Const(f64),
    Add(&'static Sec, &'static Sec),
    Sub(&'static Sec, &'static Sec),
    Mul(&'static Sec, &'static Sec),
    /// NaN for 0/0, infinite for x/0, as C divides doubles.
    Div(&'static Sec, &'static Sec),
    /// Rounded toward zero (the kernel runner's integer division).
    Trunc(&'static Sec),
}

/// A quantity of a run: its measured seconds taken together. Over several
/// runs each node is taken over the runs' values of it (see [`View`]).
#[derive(Clone, Copy, Debug)]
pub enum Agg {
    /// The mean over the measured seconds where the quantity exists.
    Mean(&'static Sec),
    /// Their sd (n - 1); over runs, the sd of the runs' means.
    Sd(&'static Sec),
    Max(&'static Sec),
    /// Their sum (of a count: the run's whole count).
    Total(&'static Sec),
    /// How many seconds were measured (a fixed run: its length).
    Seconds,
    /// A value measured once at the run's end.
    Final(&'static Channel),
    Producers,
    Const(f64),
    Add(&'static Agg, &'static Agg),
    Sub(&'static Agg, &'static Agg),
    Mul(&'static Agg, &'static Agg),
    Div(&'static Agg, &'static Agg),
    Trunc(&'static Agg),
}

/// One frame: a second's values, or a fixed run's.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Each channel read every tick, in the run's channel order.
    pub values: &'a [Option<u64>],
    pub elapsed_ns: u64,
}

/// A value measured once: its channel's name, its CPU (of a per-CPU
/// channel), the value.
pub type FinalOf<'a> = (&'a str, Option<u32>, f64);

/// What a quantity is evaluated over.
pub struct View<'a> {
    /// The names of the channels read each tick, in the frames' order.
    pub ticked: &'a [&'a str],
    pub producers: usize,
    pub frames: Vec<Frame<'a>>,
    /// A fixed run: its one frame is its whole length, not a second.
    pub fixed: bool,
    /// The values measured once.
    pub finals: Vec<FinalOf<'a>>,
}

impl Sec {
    pub fn at(&self, view: &View, frame: &Frame) -> f64 {
        let position = |channel: &Channel| view.ticked.iter().position(|n| *n == channel.name);
        let value = |channel: &Channel| {
            position(channel)
                .and_then(|at| *frame.values.get(at)?)
                .map_or(f64::NAN, |v| v as f64)
        };
        let seconds = frame.elapsed_ns as f64 / 1e9;
        match *self {
            Sec::Value(channel) => value(channel),
            Sec::Rate(channel) => match frame.elapsed_ns {
                0 => 0.0,
                _ => value(channel) / seconds,
            },
            Sec::Declared(channel) => match position(channel) {
                Some(_) => value(channel),
                None => 0.0,
            },
            Sec::Seconds => seconds,
            Sec::Producers => view.producers.max(1) as f64,
            Sec::Const(c) => c,
            Sec::Add(a, b) => a.at(view, frame) + b.at(view, frame),
            Sec::Sub(a, b) => a.at(view, frame) - b.at(view, frame),
            Sec::Mul(a, b) => a.at(view, frame) * b.at(view, frame),
            Sec::Div(a, b) => a.at(view, frame) / b.at(view, frame),
            Sec::Trunc(a) => a.at(view, frame).trunc(),
        }
    }

    /// Its value in each frame of `view` where it exists.
    pub fn each(&self, view: &View) -> Vec<f64> {
        view.frames
            .iter()
            .map(|frame| self.at(view, frame))
            .filter(|v| v.is_finite())
            .collect()
    }
}

impl Agg {
    /// Its value over one run's (or one second's) `view`.
    pub fn of(&self, view: &View) -> f64 {
        let finite = |values: Vec<f64>| (!values.is_empty()).then_some(values);
        match *self {
            Agg::Mean(sec) => finite(sec.each(view)).map_or(f64::NAN, |v| mean_sd(&v).mean),
            Agg::Sd(sec) => finite(sec.each(view)).map_or(f64::NAN, |v| mean_sd(&v).sd),
            Agg::Max(sec) => finite(sec.each(view)).map_or(f64::NAN, |v| {
                v.into_iter().fold(f64::NEG_INFINITY, f64::max)
            }),
            Agg::Total(sec) => finite(sec.each(view)).map_or(f64::NAN, |v| v.iter().sum()),
            Agg::Seconds => match view.fixed {
                true => view.frames.iter().map(|f| f.elapsed_ns as f64 / 1e9).sum(),
                false => view.frames.len() as f64,
            },
            Agg::Final(channel) => view
                .finals
                .iter()
                .find(|(name, cpu, _)| *name == channel.name && cpu.is_none())
                .map_or(f64::NAN, |(_, _, v)| *v),
            Agg::Producers => view.producers.max(1) as f64,
            Agg::Const(c) => c,
            Agg::Add(a, b) => a.of(view) + b.of(view),
            Agg::Sub(a, b) => a.of(view) - b.of(view),
            Agg::Mul(a, b) => a.of(view) * b.of(view),
            Agg::Div(a, b) => a.of(view) / b.of(view),
            Agg::Trunc(a) => a.of(view).trunc(),
        }
    }

    /// Its value over several runs: a mean is the mean of the runs' means,
    /// an sd their sd (the spread between runs), a maximum the largest, a
    /// total, a count of seconds or a value measured once the runs' mean.
    pub fn over(&self, runs: &[View]) -> f64 {
        let each = |agg: &Agg| -> Vec<f64> {
            runs.iter()
                .map(|view| agg.of(view))
                .filter(|v| v.is_finite())
                .collect()
        };
        let mean = |values: Vec<f64>| match values.is_empty() {
            true => f64::NAN,
            false => mean_sd(&values).mean,
        };
        match *self {
            Agg::Sd(sec) => {
                let means = each(&Agg::Mean(sec));
                match means.is_empty() {
                    true => f64::NAN,
                    false => mean_sd(&means).sd,
                }
            }
            Agg::Max(_) => each(self).into_iter().fold(f64::NAN, f64::max),
            Agg::Mean(_) | Agg::Total(_) | Agg::Seconds | Agg::Final(_) => mean(each(self)),
            Agg::Producers | Agg::Const(_) => self.of(runs.first().unwrap_or(&View::empty())),
            Agg::Add(a, b) => a.over(runs) + b.over(runs),
            Agg::Sub(a, b) => a.over(runs) - b.over(runs),
            Agg::Mul(a, b) => a.over(runs) * b.over(runs),
            Agg::Div(a, b) => a.over(runs) / b.over(runs),
            Agg::Trunc(a) => a.over(runs).trunc(),
        }
    }

    /// The channels it reads, for the check that a benchmark declares them.
    pub fn channels(&self, out: &mut Vec<&'static Channel>) {
        match *self {
            Agg::Mean(sec) | Agg::Sd(sec) | Agg::Max(sec) | Agg::Total(sec) => sec.channels(out),
            Agg::Final(channel) => out.push(channel),
            Agg::Seconds | Agg::Producers | Agg::Const(_) => {}
            Agg::Add(a, b) | Agg::Sub(a, b) | Agg::Mul(a, b) | Agg::Div(a, b) => {
                a.channels(out);
                b.channels(out);
            }
            Agg::Trunc(a) => a.channels(out),
        }
    }
}

impl Sec {
    /// The channels it reads.
    pub fn channels(&self, out: &mut Vec<&'static Channel>) {
        match *self {
            Sec::Value(channel) | Sec::Rate(channel) => out.push(channel),
            // Optional by definition: not a channel the benchmark must read.
            Sec::Declared(_) => {}
            Sec::Seconds | Sec::Producers | Sec::Const(_) => {}
            Sec::Add(a, b) | Sec::Sub(a, b) | Sec::Mul(a, b) | Sec::Div(a, b) => {
                a.channels(out);
                b.channels(out);
            }
            Sec::Trunc(a) => a.channels(out),
        }
    }
}

impl<'a> View<'a> {
    /// A view of no frame over channels named `ticked`.
    pub fn new(ticked: &'a [&'a str]) -> View<'a> {
        View {
            ticked,
            producers: 1,
            frames: Vec::new(),
            fixed: false,
            finals: Vec::new(),
        }
    }

    /// A view of nothing: every quantity over it is NaN, but constants.
    pub fn empty() -> View<'static> {
        View::new(&[])
    }

    /// The same view, of one of its frames alone (a second's line).
    pub fn second<'b>(&'b self, frame: Frame<'b>) -> View<'b> {
        View {
            ticked: self.ticked,
            producers: self.producers,
            frames: vec![frame],
            fixed: false,
            finals: self.finals.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::{DROPS, HITS};

    const RATE: Sec = Sec::Rate(&HITS);
    const NAMES: [&str; 2] = ["hits", "drops"];

    fn view(frames: &[(u64, u64)]) -> View<'static> {
        let frames: Vec<Frame<'static>> = frames
            .iter()
            .map(|&(hits, elapsed_ns)| Frame {
                values: Box::leak(vec![Some(hits), None].into_boxed_slice()),
                elapsed_ns,
            })
            .collect();
        View {
            ticked: &NAMES,
            producers: 2,
            frames,
            fixed: false,
            finals: vec![("median", None, 7.5)],
        }
    }

    #[test]
    fn a_run_is_its_seconds_taken_together() {
        let run = view(&[(1_000, 1_000_000_000), (3_000, 1_000_000_000)]);
        assert_eq!(Agg::Mean(&RATE).of(&run), 2_000.0);
        assert!((Agg::Sd(&RATE).of(&run) - 2f64.sqrt() * 1_000.0).abs() < 1e-9);
        assert_eq!(Agg::Max(&RATE).of(&run), 3_000.0);
        assert_eq!(Agg::Total(&Sec::Value(&HITS)).of(&run), 4_000.0);
        assert_eq!(Agg::Seconds.of(&run), 2.0);
        const PER_PRODUCER: Agg = Agg::Div(&Agg::Mean(&RATE), &Agg::Producers);
        assert_eq!(PER_PRODUCER.of(&run), 1_000.0);
    }

    #[test]
    fn what_does_not_exist_is_left_out() {
        let run = view(&[(1_000, 1_000_000_000)]);
        // The drops reading failed: not a zero.
        assert!(Agg::Mean(&Sec::Rate(&DROPS)).of(&run).is_nan());
        const RATIO: Sec = Sec::Div(&Sec::Value(&DROPS), &Sec::Value(&HITS));
        assert!(Agg::Mean(&RATIO).of(&run).is_nan());
        let with_empty = view(&[(0, 1_000_000_000), (10, 1_000_000_000)]);
        const PER_HIT: Sec = Sec::Div(&Sec::Const(100.0), &Sec::Value(&HITS));
        assert_eq!(Agg::Mean(&PER_HIT).of(&with_empty), 10.0, "1/0 is left out");
    }

    #[test]
    fn over_runs_a_mean_is_of_means_and_an_sd_between_them() {
        let runs = [
            view(&[(1_000, 1_000_000_000), (3_000, 1_000_000_000)]),
            view(&[(4_000, 1_000_000_000)]),
        ];
        assert_eq!(Agg::Mean(&RATE).over(&runs), 3_000.0);
        assert!((Agg::Sd(&RATE).over(&runs) - 2f64.sqrt() * 1_000.0).abs() < 1e-9);
        assert_eq!(Agg::Max(&RATE).over(&runs), 4_000.0);
        assert_eq!(Agg::Total(&Sec::Value(&HITS)).over(&runs), 4_000.0);
        assert_eq!(Agg::Seconds.over(&runs), 1.5);
        const MEDIAN: Channel = Channel::once("median", "ns", "");
        assert_eq!(Agg::Final(&MEDIAN).over(&runs), 7.5);
        assert!(Agg::Mean(&RATE).over(&[]).is_nan());
    }
}
