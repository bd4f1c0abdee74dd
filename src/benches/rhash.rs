//! The resizable hash map (BPF_MAP_TYPE_RHASH, bpf-next since June 2026),
//! which the hash map and htab-mem families run their bodies on where the
//! kernel has it: found by name in the kernel's BTF, not by release.

use std::os::unix::ffi::OsStrExt;

use libbpf_rs::{libbpf_sys, AsRawLibbpf};

use crate::error::{Error, Result};
use crate::kernel;

/// BPF_F_NO_PREALLOC: the resizable map allocates its elements on demand,
/// and refuses to be created without the flag.
pub(super) const NO_PREALLOC: u32 = 1;
/// The kernel's name of the resizable hash map type, in its BTF.
const RHASH: &str = "BPF_MAP_TYPE_RHASH";

/// The resizable hash map's type number in the running kernel (from its
/// BTF), or why it has none.
pub fn map_type() -> Result<u32> {
    let lacks = || {
        // Which release first has it is not checked here: the kernel's own
        // list of map types is what decides.
        Error::unsupported(format!(
            "this kernel has no resizable hash map (BPF_MAP_TYPE_RHASH is not among its map \
             types; this is {})",
            kernel::release()
        ))
    };
    let btf = libbpf_rs::btf::Btf::from_vmlinux().map_err(|e| {
        Error::unsupported(format!(
            "cannot read the kernel's BTF to find BPF_MAP_TYPE_RHASH: {e}"
        ))
    })?;
    let types = btf
        .type_by_name::<libbpf_rs::btf::types::Enum<'_>>("bpf_map_type")
        .ok_or_else(lacks)?;
    let value = types
        .iter()
        .find(|member| member.name.map(OsStrExt::as_bytes) == Some(RHASH.as_bytes()))
        .and_then(|member| u32::try_from(member.value).ok());
    value.ok_or_else(lacks)
}

/// Makes an open map the resizable hash map, of type number `map_type`
/// ([`map_type`]), which allocates its elements on demand.
pub fn make_resizable(
    map: &mut libbpf_rs::OpenMapMut<'_>,
    map_type: u32,
) -> std::result::Result<(), libbpf_rs::Error> {
    // SAFETY: the map is the open object's, not yet loaded; libbpf only
    // records the type.
    let rc = unsafe { libbpf_sys::bpf_map__set_type(map.as_libbpf_object().as_ptr(), map_type) };
    if rc != 0 {
        return Err(libbpf_rs::Error::from_raw_os_error(-rc));
    }
    let flags = map.map_flags() | NO_PREALLOC;
    map.set_map_flags(flags)
}
