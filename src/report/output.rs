//! Where results go: standard output, whose failures become an error rather
//! than a panic, and output files, written whole or not at all without ever
//! turning a device, a FIFO or a symlink into a regular file, nor following
//! a symlink the kernel's fs.protected_symlinks would not. Every output is
//! checked before a run; a failure to write one at the end is kept while the
//! others are written.

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::OutputTarget;
use crate::error::{Error, Result};
use crate::interrupt;

/// How many symlinks a path may go through, as the kernel allows (ELOOP).
const MAX_LINKS: usize = 40;
/// How often a FIFO without a reader, or a full one, is tried again.
const FIFO_POLL: Duration = Duration::from_millis(100);

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
    /// A regular file, existing or not, every symlink on the way followed:
    /// written beside it and renamed over it. Its directories are real ones,
    /// and a rename replaces a link planted at the name later rather than
    /// following it, so the file written is the one checked.
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

/// Refuses to follow the symlink `link` of the directory `dir` where the
/// kernel's fs.protected_symlinks does: in a sticky, world-writable directory
/// (/tmp), a link owned neither by the follower nor by the directory's owner
/// may be a trap laid by another user, root being no exception. The rule
/// holds here whether the sysctl is set or not.
fn check_protected(dir: &Path, link: &Path, link_meta: &fs::Metadata) -> io::Result<()> {
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
fn names(path: &Path) -> Vec<OsString> {
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
fn walk(path: &Path) -> io::Result<PathBuf> {
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
fn destination(path: &Path) -> io::Result<Destination> {
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

fn directory_of(path: &Path) -> &Path {
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
fn open_directory(dir: &Path) -> io::Result<OwnedFd> {
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
fn temporary_beside(dir: &OwnedFd, path: &Path) -> io::Result<(CString, fs::File)> {
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

fn remove_in(dir: &OwnedFd, name: &CString) {
    // SAFETY: a NUL-terminated name relative to a directory we own; a
    // failure leaves a stray temporary file, nothing worse.
    unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
}

fn is_fifo(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// The flags that open a stream: never through a link planted after the
/// walk, but /proc's names are links the kernel resolves.
fn stream_flags(target: &Path) -> libc::c_int {
    if in_proc(target) {
        0
    } else {
        libc::O_NOFOLLOW
    }
}

fn write_error(path: &Path, err: &io::Error) -> Error {
    Error::runtime(format!("cannot write {}: {}", path.display(), reason(err)))
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
fn write_fifo(target: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
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

/// Replaces the regular file `target` (or creates it) with `bytes`, whole:
/// a synced temporary file beside it, renamed over it, keeping its mode. The
/// rename replaces whatever holds the name then, a link planted since
/// included, rather than following it.
fn replace(target: &Path, bytes: &[u8]) -> io::Result<()> {
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

/// Writes `bytes` to `path` whole or not at all. A regular file (or a new
/// name) gets a temporary file beside it, synced, then renamed over it; a
/// symlink is followed (unless [`check_protected`] refuses it) and its
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

/// What an output ends up writing into, to find two outputs on one file.
#[derive(PartialEq, Eq, Hash)]
enum Sink {
    Descriptor(RawFd),
    Inode(u64, u64),
    Name(PathBuf),
}

/// Where `target` writes: its descriptor, or the file its links lead to (by
/// inode when it exists, by name in any case). A device has none: writing
/// one twice (/dev/null) loses nothing.
fn sinks(target: &OutputTarget) -> Vec<Sink> {
    let path = match target {
        OutputTarget::Stdout => return vec![Sink::Descriptor(1)],
        OutputTarget::File(path) => path,
    };
    let end = match destination(path) {
        Ok(Destination::Descriptor(fd)) => return vec![Sink::Descriptor(fd)],
        Ok(Destination::Stream(end)) if !is_fifo(&end) && !in_proc(&end) => return Vec::new(),
        Ok(Destination::Stream(end) | Destination::Regular(end)) => end,
        // A directory (`--json DIR --csv DIR` write NAME.json and NAME.csv
        // in it), or a path the writability check refuses.
        Err(_) => return Vec::new(),
    };
    let mut sinks: Vec<Sink> = fs::metadata(&end)
        .map(|m| Sink::Inode(m.dev(), m.ino()))
        .into_iter()
        .collect();
    sinks.push(Sink::Name(end));
    sinks
}

fn shown(target: &OutputTarget) -> String {
    match target {
        OutputTarget::Stdout => "standard output".to_string(),
        OutputTarget::File(path) => path.display().to_string(),
    }
}

/// Refuses two of `outputs` (each with the option that asked for it) that
/// write one file: one name spelt two ways or reached through a symlink,
/// even before the file exists; one descriptor (`-`, `/dev/stdout`,
/// `/dev/fd/1`); one FIFO.
pub fn check_distinct(outputs: &[(String, OutputTarget)]) -> Result<()> {
    let mut seen: HashMap<Sink, usize> = HashMap::new();
    for (i, (flag, target)) in outputs.iter().enumerate() {
        for sink in sinks(target) {
            match seen.get(&sink) {
                Some(&first) if first != i => {
                    return Err(Error::usage(format!(
                        "{} and {flag} both name {}: give each its own file",
                        outputs[first].0,
                        shown(target)
                    )))
                }
                _ => drop(seen.insert(sink, i)),
            }
        }
    }
    Ok(())
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

/// Failures to write outputs, kept so that the others are still written;
/// said at the end by [`with_kept_failures`].
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
