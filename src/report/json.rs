//! The JSON exporter: the whole result file.

use crate::error::Result;
use crate::results::ResultFile;

use super::Exporter;

pub struct Json;

impl Exporter for Json {
    fn flag(&self) -> &'static str {
        "--json"
    }

    fn render(&self, result: &ResultFile) -> Result<Vec<u8>> {
        Ok(result.to_json().into_bytes())
    }
}
