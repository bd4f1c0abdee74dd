//! How a failed write is said: the reason without Rust's decoration, and
//! the sentence naming what could not be written.

use std::io;
use std::path::Path;

use crate::error::Error;

/// An I/O error's reason without Rust's ` (os error N)` suffix.
pub fn reason(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

pub(super) fn stdout_error(err: &io::Error) -> String {
    format!("cannot write to standard output: {}", reason(err))
}

pub(super) fn write_error(path: &Path, err: &io::Error) -> Error {
    Error::runtime(format!("cannot write {}: {}", path.display(), reason(err)))
}
