//! The JSON exporter: the whole result file.

use crate::error::Result;
use crate::results::ResultFile;

use super::{Exporter, Rendered};
use crate::config::OutputTarget;

pub struct Json;

impl Exporter for Json {
    fn long(&self) -> &'static str {
        "json"
    }

    fn help(&self) -> &'static str {
        "Write every sample and the summary, with the context, as JSON to FILE (`-`: to \
         stdout, the text report then going to stderr). With several benchmarks, a \
         directory: one NAME.json each"
    }

    fn extension(&self) -> &'static str {
        "json"
    }

    fn files(&self, result: &ResultFile, target: &OutputTarget) -> Result<Vec<Rendered>> {
        Ok(vec![(target.clone(), result.to_json().into_bytes())])
    }
}
