//! Samples in, summary out; runs in, run statistics out; and the tests that
//! compare two sides. Pure functions: no clocks, no I/O.

mod change;
mod edivisive;
#[cfg(test)]
mod normal;
mod power;
mod rng;
mod runs;
mod sequential;
mod student;
mod summary;
pub mod timing;

pub use change::{
    change_between, compare_runs, paired_change, paired_change_at, Basis, Better, Change,
    RunsOfSeconds, Verdict,
};
pub use edivisive::{change_points, ChangeOptions, ChangePoint};
pub use power::{
    detection_multiplier, detection_multiplier_at, paired_rounds_needed, paired_sensitivity,
    runs_sensitivity, welch_sensitivity, Sensitivity, DEFAULT_EFFECT_PCT, MAX_RUNS_NEEDED,
    NOISE_FLOOR_PCT, POWER,
};
pub use runs::{run_stats, RunStats};
pub use sequential::{alpha_per_look, sequential_look, Decision, FIRST_LOOK};
pub use student::{t_critical, t_two_sided_p, welch, Welch, ALPHA, CONFIDENCE};
pub use summary::{
    mean_sd, per_second, summarize, summarize_runs, MeanSd, Over, Sample, Summary, NOISY_LATE_NS,
};
