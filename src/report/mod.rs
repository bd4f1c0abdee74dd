//! Reports: the kernel runner's text lines, the progress bar.

pub mod progress;
pub mod text;
