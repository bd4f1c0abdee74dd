//! `bench`: measures what kernel instrumentation costs.

pub mod app;
pub mod attach;
pub mod benches;
pub mod bpf;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod config;
pub mod error;
pub mod figures;
pub mod interrupt;
pub mod kernel;
pub mod latency;
pub mod lists;
pub mod noise;
pub mod perf_event;
pub mod probe;
pub mod probe_path;
pub mod profile;
pub mod progress;
pub mod report;
pub mod results;
pub mod runner;
pub mod stats;
pub mod sweep;
pub mod targets;
