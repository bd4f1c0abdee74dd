//! `bench`: measures what kernel instrumentation costs.

pub mod app;
pub mod benches;
pub mod bpf;
pub mod cli;
pub mod compare;
pub mod config;
pub mod error;
pub mod interrupt;
pub mod kernel;
pub mod lists;
pub mod noise;
pub mod probe;
pub mod probe_path;
pub mod profile;
pub mod report;
pub mod results;
pub mod runner;
pub mod stats;
pub mod sweep;
pub mod targets;
