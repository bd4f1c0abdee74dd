//! Who creates the storage: upstream's programs where the kernel takes and
//! runs them (an LSM program on socket_post_create, a tp_btf program on
//! sched_process_fork), else a cgroup/sock_create program on bench's own
//! cgroup for the same sockets, each seen to create storage before a run.

use std::os::fd::AsRawFd;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Link;

use super::StorageType;
use crate::bpf::skel::local_storage_create::{
    LocalStorageCreateSkel, LocalStorageCreateSkelBuilder,
};
use crate::bpf::{self, HitCounters, Needs};
use crate::error::{Error, Result};
use crate::trigger_path::{Trigger, TriggerUsed};

/// Upstream's LSM program, which creates socket storage for a new socket.
pub const LSM_SOCKET_POST_CREATE: Trigger = Trigger {
    name: "lsm-socket-post-create",
    words: "lsm.s program on socket_post_create",
    needs: Needs::Link,
    fallback: false,
};
/// Where LSM programs are refused: a cgroup program on bench's own cgroup.
pub const CGROUP_SOCK_CREATE: Trigger = Trigger {
    name: "cgroup-sock-create",
    words: "cgroup/sock_create program on bench's cgroup",
    needs: Needs::Link,
    fallback: false,
};
/// Upstream's program for task storage.
pub const TP_BTF_SCHED_PROCESS_FORK: Trigger = Trigger {
    name: "tp-btf-sched-process-fork",
    words: "tp_btf program on sched_process_fork",
    needs: Needs::Link,
    fallback: false,
};

/// The loaded object with the program that creates `storage_type`'s
/// storage attached, and which program that is.
pub(super) fn creator(storage_type: StorageType) -> Result<(Skel, Link, TriggerUsed)> {
    match storage_type {
        StorageType::Task => {
            let program = "count_task_fork";
            let skel = load(program, StorageType::Task)?;
            let link = attach(&skel, program)?;
            Ok((skel, link, TriggerUsed::own(TP_BTF_SCHED_PROCESS_FORK)))
        }
        StorageType::Socket => socket_creator(),
    }
}

pub(super) type Skel = bpf::Owned<LocalStorageCreateSkel<'static>>;

/// The object loaded with the kmalloc counter and `creator` on, for this
/// process, and only the storage map of `storage_type` created: a kernel
/// without task storage (before 5.11) would refuse the whole object for its
/// task storage map.
fn load(creator: &str, storage_type: StorageType) -> Result<Skel> {
    let mut storage = bpf::ObjectStorage::new();
    let open = |storage: &mut bpf::ObjectStorage| {
        // SAFETY: this storage is opened once, and the skeleton goes into an
        // `Owned` with it (or, failing to load, drops before it).
        let mut open =
            LocalStorageCreateSkelBuilder::default().open(unsafe { storage.object() })?;
        if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
            rodata.bench_pid = std::process::id();
        }
        match storage_type {
            StorageType::Socket => open.maps.task_storage_map.set_autocreate(false)?,
            StorageType::Task => open.maps.sk_storage_map.set_autocreate(false)?,
        }
        for mut prog in open.open_object_mut().progs_mut() {
            if prog.name() == creator || prog.name() == "count_kmalloc" {
                prog.set_autoload(true);
            }
        }
        open.load()
    };
    let skel = open(&mut storage).map_err(|e| bpf::load_error(creator, &e))?;
    Ok(bpf::Owned::new(skel, storage))
}

/// Attaches `program` of `skel` where its section says.
pub(super) fn attach(skel: &Skel, program: &str) -> Result<Link> {
    program_of(skel, program)?
        .attach()
        .map_err(|e| bpf::attach_error(program, &e))
}

fn program_of<'a>(skel: &'a Skel, program: &str) -> Result<libbpf_rs::ProgramMut<'a>> {
    use libbpf_rs::skel::Skel as _;
    skel.object()
        .progs_mut()
        .find(|p| p.name() == program)
        .ok_or_else(|| {
            Error::setup(format!(
                "the local-storage-create object has no program {program}"
            ))
        })
}

/// The socket storage's creator: upstream's LSM program where the kernel
/// takes it and runs it, else the cgroup/sock_create program.
fn socket_creator() -> Result<(Skel, Link, TriggerUsed)> {
    let refused = match lsm_creator() {
        Ok((skel, link)) => {
            return Ok((skel, link, TriggerUsed::own(LSM_SOCKET_POST_CREATE)));
        }
        Err(Error::Unsupported(why)) => why,
        Err(err) => return Err(err),
    };
    let (skel, link) = cgroup_creator().map_err(|err| match err {
        Error::Unsupported(why) => Error::unsupported(format!(
            "the kernel refuses upstream's LSM program for socket storage ({refused}), and its \
             cgroup/sock_create fallback ({why})"
        )),
        err => err,
    })?;
    let used = TriggerUsed {
        path: CGROUP_SOCK_CREATE,
        refused: Some((LSM_SOCKET_POST_CREATE, refused)),
    };
    Ok((skel, link, used))
}

/// The cgroup/sock_create program on this process's cgroup, seen to create
/// storage for a socket.
fn cgroup_creator() -> Result<(Skel, Link)> {
    let program = "count_sock_cgroup";
    let cgroup = own_cgroup().map_err(Error::unsupported)?;
    let dir = std::fs::File::open(&cgroup)
        .map_err(|e| Error::setup(format!("cannot open cgroup {}: {e}", cgroup.display())))?;
    let skel = load(program, StorageType::Socket)?;
    let link = program_of(&skel, program)?
        .attach_cgroup(dir.as_raw_fd())
        .map_err(|e| bpf::attach_error(&format!("{program} to {}", cgroup.display()), &e))?;
    if !creates_for_a_socket(&skel)? {
        return Err(Error::setup(format!(
            "{program} on {} created no storage for a socket of this process",
            cgroup.display()
        )));
    }
    Ok((skel, link))
}

/// Upstream's LSM program, loaded, attached, and seen to run: a kernel whose
/// active LSMs leave out the BPF LSM attaches it and never calls it.
fn lsm_creator() -> Result<(Skel, Link)> {
    let program = "count_sock_lsm";
    let skel = load(program, StorageType::Socket)?;
    let link = attach(&skel, program)?;
    if !creates_for_a_socket(&skel)? {
        return Err(Error::unsupported(format!(
            "{program} attached but never ran: the BPF LSM is not among the kernel's active \
             LSMs (lsm= on its command line)"
        )));
    }
    Ok((skel, link))
}

/// Whether one socket this process creates gets its storage now.
fn creates_for_a_socket(skel: &Skel) -> Result<bool> {
    // SAFETY: as in `setup`; the counter is dropped before the skeleton.
    let hits = unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
    let before = hits.total();
    // SAFETY: a socket of our own, closed at once.
    let fd = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return Err(Error::setup(format!(
            "cannot create an IPv6 UDP socket: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: closes the socket just created.
    unsafe { libc::close(fd) };
    Ok(hits.total() > before)
}

/// This process's cgroup in the cgroup v2 hierarchy, from
/// /proc/self/mountinfo (where it is mounted) and /proc/self/cgroup.
fn own_cgroup() -> std::result::Result<std::path::PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    // `ID PARENT MAJ:MIN ROOT MOUNT OPTIONS... - TYPE SOURCE SUPER`
    let (root, mount) = mountinfo
        .lines()
        .find_map(|line| {
            let (fields, after) = line.split_once(" - ")?;
            (after.split_whitespace().next()? == "cgroup2").then_some(())?;
            let fields: Vec<&str> = fields.split_whitespace().collect();
            Some((fields.get(3)?.to_string(), fields.get(4)?.to_string()))
        })
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = cgroups
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2 cgroup")?;
    let below_root = own.strip_prefix(root.trim_end_matches('/')).unwrap_or(own);
    let path = std::path::Path::new(&mount).join(below_root.trim_start_matches('/'));
    match path.is_dir() {
        true => Ok(path),
        false => Err(format!(
            "this process's cgroup {} is not there",
            path.display()
        )),
    }
}
