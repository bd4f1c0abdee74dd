//! Run means → [`RunStats`]: the spread between runs and the interval of
//! their mean.

use serde::{Deserialize, Serialize};

use super::student::{t_critical, CONFIDENCE};
use super::summary::{mean_sd, MeanSd};

/// Independent runs of one benchmark: each run's mean rate is one
/// observation, and their spread is what a comparison must beat.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    pub runs: usize,
    /// The mean of the run means.
    pub mean: f64,
    /// The between-run standard deviation (n − 1); 0 for one run.
    pub sd: f64,
    /// Half the width of the 95 % confidence interval of the mean (Student's
    /// t); `None` for a single run, which says nothing of the drift.
    pub ci95: Option<f64>,
}

impl RunStats {
    /// The interval's half-width as a percentage of the mean.
    pub fn ci_percent(&self) -> Option<f64> {
        let half = self.ci95?;
        (self.mean != 0.0).then(|| half / self.mean.abs() * 100.0)
    }
}

/// The statistics of `run_means`; `None` when there is none.
pub fn run_stats(run_means: &[f64]) -> Option<RunStats> {
    let n = run_means.len();
    if n == 0 {
        return None;
    }
    let MeanSd { mean, sd } = mean_sd(run_means);
    let ci95 = (n >= 2)
        .then(|| t_critical(CONFIDENCE, (n - 1) as f64))
        .flatten()
        .map(|t| t * sd / (n as f64).sqrt());
    Some(RunStats {
        runs: n,
        mean,
        sd,
        ci95,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_statistics_give_the_t_interval() {
        let stats = run_stats(&[10.0, 12.0, 11.0, 13.0, 9.0]).unwrap();
        assert_eq!(stats.mean, 11.0);
        // sd = sqrt(2.5); half-width = 2.776 × sd / sqrt(5).
        let half = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((stats.ci95.unwrap() - half).abs() < 1e-4, "{stats:?}");
        assert!((stats.ci_percent().unwrap() - half / 11.0 * 100.0).abs() < 1e-3);
        assert_eq!(run_stats(&[5.0]).unwrap().ci95, None);
        assert_eq!(run_stats(&[]), None);
    }
}
