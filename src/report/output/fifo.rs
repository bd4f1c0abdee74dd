//! Writing into a FIFO: waiting for its reader, and giving up on a signal.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use super::failure::write_error;
use crate::error::{Error, Result};
use crate::interrupt;

/// How often a FIFO without a reader, or a full one, is tried again.
const FIFO_POLL: Duration = Duration::from_millis(100);

pub(super) fn is_fifo(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A FIFO's wait or write given up on a signal (Ctrl-C).
fn given_up(signal: i32, doing: &str, path: &Path, outcome: &str) -> Error {
    Error::Interrupted {
        message: format!(
            "interrupted by {} while {doing} the FIFO {}: {outcome}",
            interrupt::signal_name(signal),
            path.display()
        ),
        code: interrupt::exit_code(signal),
    }
}

/// Opens the FIFO `target` (named `path` by the user) for writing once a
/// reader has it open. Opening blocks until then, deaf to Ctrl-C: so it is
/// tried without blocking, and while there is no reader, stderr says so and
/// a signal ends the wait.
fn open_fifo(target: &Path, path: &Path) -> Result<fs::File> {
    let mut said = false;
    loop {
        let opened = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(target);
        match opened {
            Ok(file) => return Ok(file),
            // ENXIO: no reader yet.
            Err(err) if err.raw_os_error() == Some(libc::ENXIO) => {}
            Err(err) => return Err(write_error(path, &err)),
        }
        if let Some(signal) = interrupt::received() {
            let outcome = "nothing was written to it";
            return Err(given_up(signal, "waiting for a reader of", path, outcome));
        }
        if !said {
            eprintln!(
                "waiting for a reader of the FIFO {} (Ctrl-C gives up)",
                path.display()
            );
            said = true;
        }
        let stop = || interrupt::received().is_some();
        interrupt::sleep_until(Instant::now() + FIFO_POLL, stop);
    }
}

/// Writes `bytes` into the FIFO `target` for its reader, a signal ending a
/// write its reader does not take.
pub(super) fn write_fifo(target: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = open_fifo(target, path)?;
    let mut rest = bytes;
    while !rest.is_empty() {
        match file.write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                if let Some(signal) = interrupt::received() {
                    let outcome = "its reader got part of the output";
                    return Err(given_up(signal, "writing to", path, outcome));
                }
                let mut ready = libc::pollfd {
                    fd: file.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                let millis = FIFO_POLL.as_millis() as libc::c_int;
                // SAFETY: one pollfd of ours; a failure just means try again.
                unsafe { libc::poll(&mut ready, 1, millis) };
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(write_error(path, &err)),
        }
    }
    Ok(())
}
