//! One run's record: where it ran, with what, and its outcome, which is one
//! of three kinds (timed seconds, a fixed count of operations, an attach
//! cycle). The JSON keeps the flat form it always had (`samples`, `summary`,
//! `fixed`, `cycle`, `churn` side by side): [`RunRecordWire`] is that form,
//! and a file whose run holds two kinds at once is refused on reading.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cycles::{ChurnRecord, CycleRecord};
use crate::channels::{Channel, Final};
use crate::config::RunConfig;
use crate::figures::{Figure, FigureRun, Frame, Value, View};
use crate::latency::LatencyRecord;
use crate::noise::Noise;
use crate::probe_path::ProbePath;
use crate::profile::Breakdown;
use crate::runner::affinity::Placement;
use crate::runner::FixedRun;
use crate::stats::{Sample, Summary};

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Seconds of ticks: every tick, warm-up ones marked, and the summary
    /// over the measured ones (absent when none was measured). A run stopped
    /// before it measured anything is one with no tick.
    Timed {
        samples: Vec<Sample>,
        summary: Option<Summary>,
        /// For attach churn: the cycles the churning threads finished in
        /// the measured seconds.
        churn: Option<ChurnRecord>,
    },
    /// A fixed-work (`--repeat`) run.
    Fixed {
        run: FixedRun,
        /// For attach churn: the cycles finished while the work was done.
        churn: Option<ChurnRecord>,
    },
    /// An attach benchmark's cycle: attach and detach times, what fired.
    Cycle(CycleRecord),
}

impl Outcome {
    /// A timed run that ticked `samples`, summarized (`rates`: which
    /// channels are counts per second, see [`crate::stats::summarize`]).
    pub fn timed(samples: Vec<Sample>, rates: &[bool]) -> Outcome {
        Outcome::Timed {
            summary: crate::stats::summarize(&samples, rates),
            samples,
            churn: None,
        }
    }

    /// A run that measured nothing (yet).
    pub fn nothing() -> Outcome {
        Outcome::Timed {
            samples: Vec::new(),
            summary: None,
            churn: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RunRecordWire", into = "RunRecordWire")]
pub struct RunRecord {
    /// The swept parameter's value for this run.
    pub sweep_value: Option<u64>,
    /// The producer count and options this run had (they differ from
    /// `options` where swept).
    pub producers: usize,
    pub params: BTreeMap<String, u64>,
    /// The CPU of each thread (`null`: not pinned): the affinity used.
    pub placement: PlacementRecord,
    pub partial: bool,
    /// What it measured.
    pub outcome: Outcome,
    /// Which of the independent runs this is (1-based), with `--runs`.
    pub repetition: Option<u32>,
    /// What disturbed this run: steal, other runnable tasks, clock changes.
    pub noise: Option<Noise>,
    /// For a uprobe, uretprobe, multi or USDT run: how the kernel handled
    /// the probe, found after the warm-up from the bytes at the probed
    /// address and the special mappings.
    pub probe_path: Option<ProbePath>,
    /// With `--profile`: where the measured seconds went.
    pub profile: Option<Breakdown>,
    /// With `--latency`: the distribution of an operation's time.
    pub latency: Option<LatencyRecord>,
    /// Every figure of its benchmark, by name: the run's value and each
    /// measured second's.
    pub figures: BTreeMap<String, FigureRun>,
    /// The values measured once, when the run ended.
    pub finals: Vec<FinalRecord>,
    /// For a benchmark whose BPF body runs from a trigger it chose: which
    /// (`rawtp-test-run` where the kernel refused upstream's).
    pub trigger: Option<String>,
}

/// A value measured once, at the end of a run: of a channel, and of a CPU
/// for a per-CPU one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalRecord {
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    pub value: f64,
}

impl From<&Final> for FinalRecord {
    fn from(value: &Final) -> FinalRecord {
        FinalRecord {
            channel: value.channel.name.to_string(),
            cpu: value.cpu,
            value: value.value,
        }
    }
}

/// A run's record as the result file lays it out (`docs/result-schema.json`):
/// the outcome's parts as fields of their own, the absent ones `null` or left
/// out as they always were.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecordWire {
    sweep_value: Option<u64>,
    producers: usize,
    params: BTreeMap<String, u64>,
    placement: PlacementRecord,
    partial: bool,
    samples: Vec<Sample>,
    summary: Option<Summary>,
    fixed: Option<FixedRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repetition: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noise: Option<Noise>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probe_path: Option<ProbePath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<Breakdown>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency: Option<LatencyRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cycle: Option<CycleRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    churn: Option<ChurnRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    figures: BTreeMap<String, FigureRun>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finals: Vec<FinalRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trigger: Option<String>,
}

impl From<RunRecord> for RunRecordWire {
    fn from(run: RunRecord) -> RunRecordWire {
        let (samples, summary, fixed, cycle, churn) = match run.outcome {
            Outcome::Timed {
                samples,
                summary,
                churn,
            } => (samples, summary, None, None, churn),
            Outcome::Fixed { run, churn } => (Vec::new(), None, Some(run), None, churn),
            Outcome::Cycle(cycle) => (Vec::new(), None, None, Some(cycle), None),
        };
        RunRecordWire {
            sweep_value: run.sweep_value,
            producers: run.producers,
            params: run.params,
            placement: run.placement,
            partial: run.partial,
            samples,
            summary,
            fixed,
            repetition: run.repetition,
            noise: run.noise,
            probe_path: run.probe_path,
            profile: run.profile,
            latency: run.latency,
            cycle,
            churn,
            figures: run.figures,
            finals: run.finals,
            trigger: run.trigger,
        }
    }
}

impl TryFrom<RunRecordWire> for RunRecord {
    type Error = String;

    fn try_from(wire: RunRecordWire) -> Result<RunRecord, String> {
        let timed = !wire.samples.is_empty() || wire.summary.is_some();
        let outcome = match (wire.fixed, wire.cycle) {
            (Some(_), Some(_)) => return Err(both("a fixed run", "an attach cycle")),
            (Some(_), None) if timed => return Err(both("a fixed run", "timed samples")),
            (None, Some(_)) if timed => return Err(both("an attach cycle", "timed samples")),
            (None, Some(_)) if wire.churn.is_some() => {
                return Err(both("an attach cycle", "attach churn"))
            }
            (Some(run), None) => Outcome::Fixed {
                run,
                churn: wire.churn,
            },
            (None, Some(cycle)) => Outcome::Cycle(cycle),
            (None, None) => Outcome::Timed {
                samples: wire.samples,
                summary: wire.summary,
                churn: wire.churn,
            },
        };
        Ok(RunRecord {
            sweep_value: wire.sweep_value,
            producers: wire.producers,
            params: wire.params,
            placement: wire.placement,
            partial: wire.partial,
            outcome,
            repetition: wire.repetition,
            noise: wire.noise,
            probe_path: wire.probe_path,
            profile: wire.profile,
            latency: wire.latency,
            figures: wire.figures,
            finals: wire.finals,
            trigger: wire.trigger,
        })
    }
}

/// The refusal of a run that holds two kinds of outcome.
fn both(one: &str, other: &str) -> String {
    format!("a run holds both {one} and {other}, which bench never writes")
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementRecord {
    pub producers: Vec<Option<usize>>,
    pub consumers: Vec<Option<usize>>,
}

impl From<&Placement> for PlacementRecord {
    fn from(p: &Placement) -> Self {
        PlacementRecord {
            producers: p.producers.clone(),
            consumers: p.consumers.clone(),
        }
    }
}

impl RunRecord {
    /// The record of a run about to start with `config` on `placement`:
    /// what it measures is filled in as it goes.
    pub fn new(config: &RunConfig, placement: &Placement) -> RunRecord {
        RunRecord {
            sweep_value: None,
            producers: config.producers,
            params: params_record(config),
            placement: placement.into(),
            partial: false,
            outcome: Outcome::nothing(),
            repetition: None,
            noise: None,
            probe_path: None,
            profile: None,
            latency: None,
            figures: BTreeMap::new(),
            finals: Vec::new(),
            trigger: None,
        }
    }

    /// Keeps what set-up and the workload said of the run: the trigger its
    /// body ran from, the values it measured once.
    pub fn keep_facts(
        &mut self,
        trigger: Option<&crate::trigger_path::TriggerUsed>,
        finals: &[Final],
    ) {
        self.trigger = trigger.map(|used| used.path.name.to_string());
        self.finals = finals.iter().map(FinalRecord::from).collect();
    }

    /// The run as quantities are worked out over it: its measured seconds
    /// (or its fixed frame) and its finals, the channels read each tick
    /// named by `ticked`.
    pub fn view<'a>(&'a self, ticked: &'a [&'a str]) -> View<'a> {
        let (frames, fixed) = match &self.outcome {
            Outcome::Timed { samples, .. } => (
                samples
                    .iter()
                    .filter(|s| !s.warmup)
                    .map(|s| Frame {
                        values: &s.values,
                        elapsed_ns: s.elapsed_ns,
                    })
                    .collect(),
                false,
            ),
            Outcome::Fixed { run, .. } => (
                vec![Frame {
                    values: &run.values,
                    elapsed_ns: run.elapsed_ns,
                }],
                true,
            ),
            Outcome::Cycle(_) => (Vec::new(), false),
        };
        View {
            ticked,
            producers: self.producers,
            frames,
            fixed,
            finals: self
                .finals
                .iter()
                .map(|f| (f.channel.as_str(), f.cpu, f.value))
                .collect(),
        }
    }

    /// Works out and keeps every figure of `figures` for this run, over its
    /// channels (`channels`, as its benchmark declares them).
    pub fn evaluate(&mut self, figures: &[Figure], channels: &[Channel]) {
        let ticked: Vec<&str> = crate::channels::ticked(channels).map(|c| c.name).collect();
        let kept = figures
            .iter()
            .map(|figure| (figure.name.to_string(), self.figure_run(figure, &ticked)))
            .collect();
        self.figures = kept;
    }

    fn figure_run(&self, figure: &Figure, ticked: &[&str]) -> FigureRun {
        let finite = |v: f64| v.is_finite().then_some(v);
        match figure.value {
            Value::PerSecond(sec) => {
                let view = self.view(ticked);
                let seconds = match self.fixed() {
                    Some(_) => Vec::new(),
                    None => sec.each(&view),
                };
                FigureRun {
                    value: finite(crate::figures::Agg::Mean(sec).of(&view)),
                    seconds,
                }
            }
            Value::OfRun(agg) => FigureRun {
                value: finite(agg.of(&self.view(ticked))),
                seconds: Vec::new(),
            },
            Value::Attach | Value::Detach => FigureRun {
                value: self.cycle().map(|cycle| {
                    let step = match figure.value {
                        Value::Attach => &cycle.attach,
                        _ => &cycle.detach,
                    };
                    step.us_per_probe(cycle.probes)
                }),
                seconds: Vec::new(),
            },
        }
    }

    /// Its value of the figure `name`, where it has one.
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.figures.get(name)?.value
    }

    /// Its observations of the figure `name` for judging one run against
    /// another: each measured second's value, or the run's one value.
    pub fn within_run(&self, name: &str) -> Vec<f64> {
        match self.figures.get(name) {
            Some(kept) if !kept.seconds.is_empty() => kept.seconds.clone(),
            Some(kept) => kept.value.into_iter().collect(),
            None => Vec::new(),
        }
    }

    /// Every tick of a timed run; none for the other kinds.
    pub fn samples(&self) -> &[Sample] {
        match &self.outcome {
            Outcome::Timed { samples, .. } => samples,
            _ => &[],
        }
    }

    /// A timed run's summary over its measured seconds.
    pub fn summary(&self) -> Option<&Summary> {
        match &self.outcome {
            Outcome::Timed { summary, .. } => summary.as_ref(),
            _ => None,
        }
    }

    /// A fixed-work run's result.
    pub fn fixed(&self) -> Option<&FixedRun> {
        match &self.outcome {
            Outcome::Fixed { run, .. } => Some(run),
            _ => None,
        }
    }

    /// An attach benchmark's cycle.
    pub fn cycle(&self) -> Option<&CycleRecord> {
        match &self.outcome {
            Outcome::Cycle(cycle) => Some(cycle),
            _ => None,
        }
    }

    /// Attach churn's cycles beside the producers.
    pub fn churn(&self) -> Option<&ChurnRecord> {
        match &self.outcome {
            Outcome::Timed { churn, .. } | Outcome::Fixed { churn, .. } => churn.as_ref(),
            Outcome::Cycle(_) => None,
        }
    }
}

/// The options' values as the result file keeps them (flags as 0 and 1).
pub fn params_record(config: &RunConfig) -> BTreeMap<String, u64> {
    config
        .params
        .iter()
        .filter_map(|(k, v)| Some((k.to_string(), v.as_number()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn record(outcome: Outcome) -> RunRecord {
        RunRecord {
            sweep_value: None,
            producers: 1,
            params: BTreeMap::new(),
            placement: PlacementRecord {
                producers: vec![None],
                consumers: Vec::new(),
            },
            partial: false,
            outcome,
            repetition: None,
            noise: None,
            probe_path: Some(ProbePath::SingleStepped),
            profile: None,
            latency: None,
            figures: BTreeMap::new(),
            finals: Vec::new(),
            trigger: Some("rawtp-test-run".to_string()),
        }
    }

    fn fixed() -> FixedRun {
        FixedRun {
            elapsed_ns: 1_000,
            calls: 10,
            ops: 10,
            values: vec![Some(10)],
        }
    }

    #[test]
    fn each_kind_of_outcome_keeps_the_flat_layout_and_reads_back() {
        let sample = Sample {
            iteration: 0,
            elapsed_ns: 1_000_000_000,
            late_ns: 0,
            warmup: false,
            values: vec![Some(5), None],
        };
        let churn = Some(ChurnRecord::default());
        let kinds = [
            Outcome::nothing(),
            Outcome::timed(vec![sample], &[true, true]),
            Outcome::Fixed {
                run: fixed(),
                churn,
            },
            Outcome::Cycle(CycleRecord::default()),
        ];
        for outcome in kinds {
            let run = record(outcome);
            let json: Value = serde_json::to_value(&run).unwrap();
            let keys: Vec<&str> = json
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            for key in ["samples", "summary", "fixed"] {
                assert!(keys.contains(&key), "{keys:?}");
            }
            assert_eq!(json["probe_path"], "single-stepped");
            assert_eq!(json["trigger"], "rawtp-test-run");
            let back: RunRecord = serde_json::from_value(json).unwrap();
            assert_eq!(back, run);
        }
    }

    #[test]
    fn a_run_of_two_kinds_is_refused() {
        let mut json = serde_json::to_value(record(Outcome::Fixed {
            run: fixed(),
            churn: None,
        }))
        .unwrap();
        json["cycle"] = serde_json::to_value(CycleRecord::default()).unwrap();
        let err = serde_json::from_value::<RunRecord>(json).unwrap_err();
        assert!(
            err.to_string()
                .contains("both a fixed run and an attach cycle"),
            "{err}"
        );
    }
}
