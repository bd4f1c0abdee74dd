//! Files created and renamed relative to a directory descriptor opened
//! without following a link, so that what is written is what was checked.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::path::names;

pub(super) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Opens the directory `dir`, which [`walk`] found free of symlinks, one
/// component at a time and following none: a directory swapped for a link
/// since (by a user who owns it) makes this fail instead of leading
/// elsewhere. Files are then created and renamed relative to it.
pub(super) fn open_directory(dir: &Path) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path; the descriptor is owned below.
    let root = check(unsafe { libc::open(c"/".as_ptr(), flags) })?;
    // SAFETY: a new descriptor that nothing else owns.
    let mut fd = unsafe { OwnedFd::from_raw_fd(root) };
    let absolute = std::env::current_dir()?.join(dir);
    for name in names(&absolute) {
        let name = c_name(&name)?;
        // SAFETY: as above, relative to a directory descriptor we own.
        let next = unsafe { libc::openat(fd.as_raw_fd(), name.as_ptr(), flags | libc::O_NOFOLLOW) };
        // SAFETY: as above.
        fd = unsafe { OwnedFd::from_raw_fd(check(next)?) };
    }
    Ok(fd)
}

/// A file created in `dir` beside `path`'s name, exclusively and under an
/// unguessable name, so that nothing planted in a shared directory is
/// followed; its name, to rename or remove it.
pub(super) fn temporary_beside(dir: &OwnedFd, path: &Path) -> io::Result<(CString, fs::File)> {
    let base = path.file_name().unwrap_or_default().as_bytes();
    for _ in 0..100 {
        let mut random = [0u8; 8];
        // SAFETY: fills the 8 bytes of our buffer.
        let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
        if got != random.len() as isize {
            return Err(io::Error::last_os_error());
        }
        let suffix = format!(".{:016x}.tmp", u64::from_ne_bytes(random));
        let name = c_name(std::ffi::OsStr::from_bytes(
            &[b".", base, suffix.as_bytes()].concat(),
        ))?;
        // As File::create would: 0666 less the umask.
        let flags =
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        // SAFETY: a NUL-terminated name relative to a directory we own.
        let fd =
            unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o666 as libc::c_uint) };
        match check(fd) {
            // SAFETY: a new descriptor that nothing else owns.
            Ok(fd) => return Ok((name, unsafe { fs::File::from_raw_fd(fd) })),
            Err(err) if err.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EEXIST))
}

pub(super) fn remove_in(dir: &OwnedFd, name: &CString) {
    // SAFETY: a NUL-terminated name relative to a directory we own; a
    // failure leaves a stray temporary file, nothing worse.
    unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
}

/// Replaces the regular file `target` (or creates it) with `bytes`, whole:
/// a synced temporary file beside it, renamed over it, keeping its mode. The
/// rename replaces whatever holds the name then, a link planted since
/// included, rather than following it.
pub(super) fn replace(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = open_directory(directory_of(target))?;
    let name = c_name(target.file_name().unwrap_or_default())?;
    let (temp, mut file) = temporary_beside(&dir, target)?;
    let mut written = || -> io::Result<()> {
        if let Some(meta) = fs::symlink_metadata(target).ok().filter(|m| m.is_file()) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        let (at, temp, to) = (dir.as_raw_fd(), temp.as_ptr(), name.as_ptr());
        // SAFETY: two NUL-terminated names relative to a directory we own.
        check(unsafe { libc::renameat(at, temp, at, to) }).map(drop)
    };
    let result = written();
    if result.is_err() {
        remove_in(&dir, &temp);
    }
    result
}
