//! The JSON exporter: the whole result file, to a file or to stdout.

use std::path::Path;

use crate::error::Result;
use crate::results::ResultFile;

use super::write_atomically;

pub fn write(path: &Path, result: &ResultFile) -> Result<()> {
    write_atomically(path, result.to_json().as_bytes())
}
