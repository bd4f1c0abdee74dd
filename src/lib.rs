//! `bench`: measures what kernel instrumentation costs.

pub mod benches;
pub mod bpf;
pub mod cli;
pub mod error;
pub mod kernel;
pub mod probe;
pub mod report;
pub mod runner;
pub mod stats;
pub mod targets;
