//! Where writing to a path leads: one of this process's descriptors, a file
//! opened in place, or a regular file to replace; every symlink on the way
//! followed as the kernel would, and refused where it would refuse it.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// How many symlinks a path may go through, as the kernel allows (ELOOP).
const MAX_LINKS: usize = 40;

/// What writing to a path means.
pub(super) enum Destination {
    /// A name of one of this process's descriptors (`/dev/stdout`,
    /// `/dev/fd/N`, `/proc/self/fd/N`): written through the descriptor, at
    /// its offset, as a shell redirection expects.
    Descriptor(RawFd),
    /// An existing file that is not a regular one (a device, a FIFO, a
    /// socket), or a file of /proc: opened and written in place.
    Stream(PathBuf),
    /// A regular file, existing or not, every symlink on the way followed:
    /// written beside it and renamed over it. Its directories are real ones,
    /// and a rename replaces a link planted at the name later rather than
    /// following it, so the file written is the one checked.
    Regular(PathBuf),
}

/// The descriptor of this process that `path` names, if it names one:
/// writing there means writing to the descriptor, whatever it is open on.
pub(super) fn descriptor_named(path: &Path) -> Option<RawFd> {
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
pub(super) fn in_proc(path: &Path) -> bool {
    path.starts_with("/proc")
}

/// A file of our own on descriptor `fd`, sharing its offset.
pub(super) fn duplicate(fd: RawFd) -> io::Result<fs::File> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; a closed one fails with EBADF.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` is a new descriptor that nothing else owns.
    Ok(unsafe { fs::File::from_raw_fd(copy) })
}

/// Refuses to follow the symlink `link` of the directory `dir` where the
/// kernel's fs.protected_symlinks does: in a sticky, world-writable directory
/// (/tmp), a link owned neither by the follower nor by the directory's owner
/// may be a trap laid by another user, root being no exception. The rule
/// holds here whether the sysctl is set or not.
pub(super) fn check_protected(dir: &Path, link: &Path, link_meta: &fs::Metadata) -> io::Result<()> {
    let dir_meta = fs::metadata(dir)?;
    let shared = dir_meta.mode() & 0o1002 == 0o1002;
    // SAFETY: geteuid cannot fail.
    let follower = unsafe { libc::geteuid() };
    let owner = link_meta.uid();
    if !shared || owner == follower || owner == dir_meta.uid() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is a symlink owned by uid {owner} in the sticky, world-writable directory {}, \
             which the kernel's fs.protected_symlinks rule forbids following",
            link.display(),
            dir.display()
        ),
    ))
}

/// `path`'s names, to walk one by one: `..` kept, `.` dropped.
pub(super) fn names(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Whether this process may write through the symlink of `dir` that `meta`
/// describes: not when both the link and its directory belong to another
/// user (neither this process's nor root), who then controls the name and
/// where it leads, and could have planted the link while a run measured.
fn trusted_link(dir: &Path, meta: &fs::Metadata) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let ours = |uid: u32| uid == me || uid == 0;
    ours(meta.uid()) || fs::metadata(dir).is_ok_and(|d| ours(d.uid()))
}

/// Follows every symlink of `path`, in its directories as at its end, as the
/// kernel would and checking each with [`check_protected`]; a last name that
/// is a symlink another user controls ([`trusted_link`]) is not followed but
/// stands for itself, to be replaced. The result is the absolute path
/// it leads to, whose existing components are real, and whose last ones may
/// not exist yet. A walk into /proc stops there: its links (`self`, `fd/N`)
/// are the kernel's to follow.
pub(super) fn walk(path: &Path) -> io::Result<PathBuf> {
    let mut done = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir()?
    };
    let mut todo = names(path);
    todo.reverse();
    let (mut links, mut missing) = (0, false);
    while let Some(name) = todo.pop() {
        if in_proc(&done) || missing {
            done.push(name);
            continue;
        }
        if name == ".." {
            // `done` holds no link: its parent is the real one.
            done.pop();
            continue;
        }
        let next = done.join(&name);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                check_protected(&done, &next, &meta)?;
                if todo.is_empty() && !trusted_link(&done, &meta) {
                    // The output's own name, linked by someone else: its owner
                    // chose where it leads (planted during a run, say), so the
                    // link is replaced, never written through.
                    done = next;
                    continue;
                }
                let target = fs::read_link(&next)?;
                if target.is_absolute() {
                    done = PathBuf::from("/");
                }
                todo.extend(names(&target).into_iter().rev());
            }
            Ok(_) => done = next,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing = true;
                done = next;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(done)
}

/// Decides how to write `path`, its symlinks followed by [`walk`].
pub(super) fn destination(path: &Path) -> io::Result<Destination> {
    if let Some(fd) = descriptor_named(path) {
        return Ok(Destination::Descriptor(fd));
    }
    let target = walk(path)?;
    if let Some(fd) = descriptor_named(&target) {
        return Ok(Destination::Descriptor(fd));
    }
    if in_proc(&target) {
        return Ok(Destination::Stream(target));
    }
    // As the kernel reads it, a final '/' asks for a directory.
    let wants_directory = path.as_os_str().as_encoded_bytes().ends_with(b"/");
    match fs::symlink_metadata(&target) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )),
        _ if wants_directory => Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!(
                "it ends in '/', which names a directory, and {} is not one",
                target.display()
            ),
        )),
        Ok(meta) if meta.is_file() => Ok(Destination::Regular(target)),
        // Only an untrusted link is left unfollowed by the walk.
        Ok(meta) if meta.file_type().is_symlink() => Ok(Destination::Regular(target)),
        Ok(_) => Ok(Destination::Stream(target)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Destination::Regular(target)),
        Err(err) => Err(err),
    }
}

/// The flags that open a stream: never through a link planted after the
/// walk, but /proc's names are links the kernel resolves.
pub(super) fn stream_flags(target: &Path) -> libc::c_int {
    if in_proc(target) {
        0
    } else {
        libc::O_NOFOLLOW
    }
}
