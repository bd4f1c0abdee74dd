//! Where results go: standard output, whose failures become an error rather
//! than a panic, and output files, written whole or not at all without ever
//! turning a device, a FIFO or a symlink into a regular file, nor following
//! a symlink the kernel's fs.protected_symlinks would not. Every output is
//! checked before a run; a failure to write one at the end is kept while the
//! others are written.

mod dirfd;
mod failure;
mod fifo;
mod path;
mod sinks;

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

use crate::config::OutputTarget;
use crate::error::{Error, Result};
use dirfd::{directory_of, open_directory, remove_in, replace, temporary_beside};
pub use failure::reason;
use failure::{stdout_error, write_error};
use fifo::{is_fifo, write_fifo};
use path::{destination, duplicate, stream_flags, Destination};
pub use sinks::check_distinct;

/// The first failure to write to standard output, as the sentence to exit
/// with: set by [`print`] alone, read by [`stdout_failure`] (main, through
/// [`with_kept_failures`], at the end).
static STDOUT_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Writes `text` to standard output. A failure (a full disk, a closed
/// terminal) is kept for [`stdout_failure`] and later writes are skipped, so
/// that a run goes on to write its files. A closed pipe never gets here: with
/// SIGPIPE's default action (set in main) the kernel ends the process quietly.
pub fn print(text: &str) {
    let mut failure = STDOUT_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    if failure.is_some() {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(err) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        *failure = Some(stdout_error(&err));
    }
}

/// [`print`] of one line.
pub fn print_line(line: &str) {
    print(&format!("{line}\n"));
}

/// Writes `bytes` to standard output now, failing at once.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|err| Error::runtime(stdout_error(&err)))
}

/// The first failed write to standard output, if one failed.
pub fn stdout_failure() -> Option<Error> {
    let failure = STDOUT_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    failure.clone().map(Error::Runtime)
}

/// Writes `bytes` to `target`: standard output, or a path (see [`write_file`]).
pub fn write(target: &OutputTarget, bytes: &[u8]) -> Result<()> {
    match target {
        OutputTarget::Stdout => write_stdout(bytes),
        OutputTarget::File(path) => write_file(path, bytes),
    }
}

/// [`write`] for a command that a signal ends at once
/// (`interrupt::end_at_first`): a file is finished, or not begun, before the
/// process ends, so that no temporary file is left beside it. Standard
/// output is not waited for: a reader that stopped reading would hold the
/// signal off.
pub fn write_before_exit(target: &OutputTarget, bytes: &[u8]) -> Result<()> {
    match target {
        OutputTarget::Stdout => write_stdout(bytes),
        OutputTarget::File(_) => crate::interrupt::last_write(|| write(target, bytes)),
    }
}

/// Writes `bytes` to `path` whole or not at all. A regular file (or a new
/// name) gets a temporary file beside it, synced, then renamed over it; a
/// symlink is followed (unless [`check_protected`](path::check_protected) refuses it) and its
/// target replaced so; a device, FIFO or descriptor name is opened and
/// written in place.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |e: io::Error| write_error(path, &e);
    match destination(path).map_err(fail)? {
        Destination::Descriptor(fd) => {
            let mut file = duplicate(fd).map_err(fail)?;
            file.write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(fail)
        }
        Destination::Stream(target) if is_fifo(&target) => write_fifo(&target, path, bytes),
        Destination::Stream(target) => {
            let mut file = OpenOptions::new()
                .write(true)
                .custom_flags(stream_flags(&target))
                .open(target)
                .map_err(fail)?;
            file.write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(fail)
        }
        Destination::Regular(target) => replace(&target, bytes).map_err(fail),
    }
}

/// Proves that `path` can be written, without changing it: for a regular
/// file or a new name, a file is created and removed beside it; anything else
/// is opened for writing. The error is the reason, for the caller's sentence.
pub fn prove_writable(path: &Path) -> std::result::Result<(), String> {
    if path.as_os_str().is_empty() || path.file_name().is_none() {
        return Err("it names no file".into());
    }
    match destination(path).map_err(|e| reason(&e))? {
        Destination::Descriptor(fd) => {
            // SAFETY: F_GETFL only reads the descriptor's flags.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if flags < 0 {
                return Err(reason(&io::Error::last_os_error()));
            }
            match flags & libc::O_ACCMODE {
                libc::O_WRONLY | libc::O_RDWR => Ok(()),
                _ => Err(format!("descriptor {fd} is not open for writing")),
            }
        }
        Destination::Stream(target) => {
            // Opening a FIFO would hand its reader an end of file: ask the
            // kernel about permission instead.
            if is_fifo(&target) {
                let name = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())
                    .map_err(|_| "the path holds a NUL byte".to_string())?;
                // SAFETY: a NUL-terminated path; access() only reads it.
                if unsafe { libc::access(name.as_ptr(), libc::W_OK) } != 0 {
                    return Err(reason(&io::Error::last_os_error()));
                }
                return Ok(());
            }
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | stream_flags(&target))
                .open(&target)
                .map(drop)
                .map_err(|e| reason(&e))
        }
        Destination::Regular(target) => {
            let dir = directory_of(&target);
            if !dir.is_dir() {
                return Err(format!("the directory {} does not exist", dir.display()));
            }
            let made = open_directory(dir).and_then(|at| {
                let (name, _) = temporary_beside(&at, &target)?;
                remove_in(&at, &name);
                Ok(())
            });
            made.map_err(|e| reason(&e))
        }
    }
}

/// [`prove_writable`] for the output of `flag`, as the usage error that
/// refuses it.
pub fn check_writable(flag: &str, path: &Path) -> Result<()> {
    prove_writable(path).map_err(|why| {
        Error::usage(format!(
            "{flag} {} cannot be written: {why}",
            path.display()
        ))
    })
}

/// Checks, before anything runs, every output a run will write: each one
/// writable, and no two on one file.
pub fn check_outputs(outputs: &[(String, OutputTarget)]) -> Result<()> {
    for (flag, target) in outputs {
        if let OutputTarget::File(path) = target {
            check_writable(flag, path)?;
        }
    }
    check_distinct(outputs)
}

/// Failures to write outputs, kept so that the others are still written:
/// added by [`keep`] alone, taken once by [`with_kept_failures`] (main, at
/// the end).
static KEPT: Mutex<Vec<Error>> = Mutex::new(Vec::new());

/// Keeps the failure of one output's write, if it failed, and goes on.
pub fn keep(result: Result<()>) {
    if let Err(err) = result {
        KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(err);
    }
}

/// `result` with the failures kept by [`keep`] and [`print`]: an outcome
/// that failed anyway keeps its error, else a signal that ended a write
/// (for its exit code) or the first failure; the others are said on stderr.
pub fn with_kept_failures(result: Result<()>) -> Result<()> {
    let mut kept: Vec<Error> = stdout_failure().into_iter().collect();
    kept.append(&mut KEPT.lock().unwrap_or_else(|e| e.into_inner()));
    let chosen = match result {
        Err(err) => Some(err),
        Ok(()) => kept
            .iter()
            .position(|e| matches!(e, Error::Interrupted { .. }))
            .or((!kept.is_empty()).then_some(0))
            .map(|at| kept.remove(at)),
    };
    for other in &kept {
        match other {
            Error::Interrupted { .. } => eprintln!("{other}"),
            _ => eprintln!("error: {other}"),
        }
    }
    chosen.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::path::{descriptor_named, in_proc, walk};
    use super::sinks::sinks;
    use super::*;
    use std::fs;

    #[test]
    fn atomic_writes_leave_the_file_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_file(&path, b"{}\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
        // A failed write leaves neither a half file nor the temporary one.
        let missing = dir.path().join("no-such-dir").join("out.json");
        assert!(write_file(&missing, b"x").is_err());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
    }

    #[test]
    fn a_walk_follows_every_link_to_a_name_that_may_not_exist() {
        let dir = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(real.join("d")).unwrap();
        std::os::unix::fs::symlink("d", real.join("via")).unwrap();
        std::os::unix::fs::symlink("../new.json", real.join("d/link")).unwrap();
        // A link in a directory, a link at the end, `..`, a missing end.
        assert_eq!(walk(&real.join("via/link")).unwrap(), real.join("new.json"));
        assert_eq!(
            walk(&real.join("d/../missing/../x")).unwrap(),
            real.join("missing/../x")
        );
        let same = |a: &str, b: &str| {
            let sink = |p: &str| sinks(&OutputTarget::File(real.join(p)));
            sink(a).iter().any(|s| sink(b).contains(s))
        };
        assert!(same("via/link", "new.json"));
        assert!(!same("via/link", "d/new.json"));
        assert!(destination(&real.join("new.json/")).is_err());
        // A directory swapped for a link after the walk is not followed.
        assert!(open_directory(&real.join("d")).is_ok());
        assert!(open_directory(&real.join("via")).is_err());
        assert!(matches!(
            destination(Path::new("/dev/fd/1")),
            Ok(Destination::Descriptor(1))
        ));
    }

    #[test]
    fn reasons_lose_the_os_error_suffix() {
        let err = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(reason(&err), "No space left on device");
    }

    #[test]
    fn descriptor_names_are_recognised() {
        assert_eq!(descriptor_named(Path::new("/dev/stdout")), Some(1));
        assert_eq!(descriptor_named(Path::new("/proc/self/fd/7")), Some(7));
        assert_eq!(descriptor_named(Path::new("/dev/fd/3")), Some(3));
        assert_eq!(descriptor_named(Path::new("/tmp/dev/stdout")), None);
        assert!(!in_proc(Path::new("/tmp/proc/x")));
    }
}
