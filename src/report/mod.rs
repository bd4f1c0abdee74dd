//! Reports: the kernel runner's text format, perf bench's, the progress bar.

pub mod perf;
pub mod progress;
pub mod text;
