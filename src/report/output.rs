//! Where results go: standard output, whose failures become an error rather
//! than a panic, and output files, written whole or not at all without ever
//! turning a device, a FIFO or a symlink into a regular file.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::OutputTarget;
use crate::error::{Error, Result};

/// The first failure to write to standard output, as the sentence to exit with.
static STDOUT_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// An I/O error's reason without Rust's ` (os error N)` suffix.
pub fn reason(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn stdout_error(err: &io::Error) -> String {
    format!("cannot write to standard output: {}", reason(err))
}

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

/// What writing to a path means.
enum Destination {
    /// A name of one of this process's descriptors (`/dev/stdout`,
    /// `/dev/fd/N`, `/proc/self/fd/N`): written through the descriptor, at
    /// its offset, as a shell redirection expects.
    Descriptor(RawFd),
    /// An existing file that is not a regular one (a device, a FIFO, a
    /// socket), or a file of /proc: opened and written in place.
    Stream(PathBuf),
    /// A regular file, existing or not, after following symlinks: written
    /// beside it and renamed over it.
    Regular(PathBuf),
}

/// The descriptor of this process that `path` names, if it names one:
/// writing there means writing to the descriptor, whatever it is open on.
fn descriptor_named(path: &Path) -> Option<RawFd> {
    match path.to_str()? {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        name => ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix)?.parse().ok()),
    }
}

/// Other files of /proc (another process's descriptors, kernel files): opened
/// in place, never replaced.
fn in_proc(path: &Path) -> bool {
    path.starts_with("/proc")
}

/// A file of our own on descriptor `fd`, sharing its offset.
fn duplicate(fd: RawFd) -> io::Result<fs::File> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; a closed one fails with EBADF.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` is a new descriptor that nothing else owns.
    Ok(unsafe { fs::File::from_raw_fd(copy) })
}

/// Follows `path`'s symlinks, to decide how to write it.
fn destination(path: &Path) -> io::Result<Destination> {
    let mut current = path.to_path_buf();
    // A loop of links ends in ELOOP from the kernel; this bound just keeps us
    // from spinning on one before we ask.
    for _ in 0..40 {
        if let Some(fd) = descriptor_named(&current) {
            return Ok(Destination::Descriptor(fd));
        }
        if in_proc(&current) {
            return Ok(Destination::Stream(current));
        }
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(meta) if meta.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory",
                ))
            }
            Ok(meta) if meta.is_file() => return Ok(Destination::Regular(current)),
            Ok(_) => return Ok(Destination::Stream(current)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Ok(Destination::Regular(current))
            }
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A temporary file beside `path`, created exclusively under an unguessable
/// name, so that nothing planted in a shared directory is followed.
fn temporary_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        // As File::create would: 0666 less the umask.
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(directory_of(path))
}

/// Writes `bytes` to `path` whole or not at all. A regular file (or a new
/// name) gets a temporary file beside it, synced, then renamed over it; a
/// symlink is followed and its target replaced so; a device, FIFO or
/// descriptor name is opened and written in place.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail =
        |e: io::Error| Error::runtime(format!("cannot write {}: {}", path.display(), reason(&e)));
    match destination(path).map_err(fail)? {
        Destination::Descriptor(fd) => {
            let mut file = duplicate(fd).map_err(fail)?;
            file.write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(fail)
        }
        Destination::Stream(target) => {
            let mut file = OpenOptions::new().write(true).open(target).map_err(fail)?;
            file.write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(fail)
        }
        Destination::Regular(target) => {
            let mut temp = temporary_beside(&target).map_err(fail)?;
            if let Ok(meta) = fs::metadata(&target) {
                // Keep the mode of the file being replaced.
                temp.as_file()
                    .set_permissions(meta.permissions())
                    .map_err(fail)?;
            }
            temp.write_all(bytes)
                .and_then(|()| temp.as_file().sync_all())
                .map_err(fail)?;
            // On failure the temporary file is removed as it drops.
            temp.persist(&target).map_err(|e| fail(e.error))?;
            Ok(())
        }
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
            if fs::metadata(&target).is_ok_and(|m| m.file_type().is_fifo()) {
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
                .custom_flags(libc::O_NONBLOCK)
                .open(&target)
                .map(drop)
                .map_err(|e| reason(&e))
        }
        Destination::Regular(target) => {
            let dir = directory_of(&target);
            if !dir.is_dir() {
                return Err(format!("the directory {} does not exist", dir.display()));
            }
            temporary_beside(&target).map(drop).map_err(|e| reason(&e))
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

/// Whether two output paths name one file: the same existing file, or the
/// same name in the same directory.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (fs::metadata(a), fs::metadata(b)) {
        // Writing one device twice (/dev/null) loses nothing.
        let regular = x.is_file() || x.file_type().is_fifo();
        return regular && x.dev() == y.dev() && x.ino() == y.ino();
    }
    let canonical = |p: &Path| {
        let dir = fs::canonicalize(directory_of(p)).unwrap_or_else(|_| directory_of(p).into());
        dir.join(p.file_name().unwrap_or_default())
    };
    canonical(a) == canonical(b)
}

#[cfg(test)]
mod tests {
    use super::*;

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
