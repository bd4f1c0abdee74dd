//! libbpf's negative error codes as the tool's errors.

use crate::error::Error;

/// What `what` returned, `rc` (a negative errno), as a runtime error.
pub(super) fn os_error(what: &str, rc: i32) -> Error {
    Error::runtime(format!(
        "{what} failed: {}",
        std::io::Error::from_raw_os_error(rc.saturating_abs())
    ))
}
