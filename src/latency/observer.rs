//! `--latency` as an observer of a run's phases: it hands the producers its
//! recorder before they start, collects their histograms at each sample
//! (the previous second's, handed in by then) and the rest at tear-down,
//! when every producer has handed in its last.

use std::sync::Arc;

use super::recorder::Recorder;
use super::{LatencyRecord, RunLatency};
use crate::runner::phases::RunObserver;
use crate::runner::Workload;
use crate::stats::Sample;

pub struct LatencyObserver {
    recorder: Arc<Recorder>,
    run: RunLatency,
    /// Samples taken so far: the histograms after the last are not kept.
    samples: u32,
}

impl LatencyObserver {
    /// For `producers` producers; `warmup` seconds of a timed run are left
    /// out, `None` is a fixed-work run (everything counts).
    pub fn new(producers: usize, warmup: Option<u32>) -> LatencyObserver {
        LatencyObserver {
            recorder: Arc::new(Recorder::new(producers)),
            run: warmup.map_or_else(RunLatency::fixed, RunLatency::timed),
            samples: 0,
        }
    }

    /// What is kept, once the run is over; `rate_ns` is the time per
    /// operation of one producer from the run's rate.
    pub fn finish(self, rate_ns: Option<f64>) -> LatencyRecord {
        self.run.record(self.recorder.clock(), rate_ns)
    }
}

impl RunObserver for LatencyObserver {
    fn producer_timing(&self) -> Option<Arc<Recorder>> {
        Some(Arc::clone(&self.recorder))
    }

    fn sample(&mut self, sample: &Sample) {
        self.samples = sample.iteration + 1;
        self.run
            .take(&self.recorder, Some(sample.iteration), u32::MAX);
    }

    fn tearing_down(&mut self, _workload: &dyn Workload) {
        self.run.take(&self.recorder, None, self.samples);
    }
}
