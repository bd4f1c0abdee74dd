//! The work of `attach-uprobe-multi` without bench's runner: load the same
//! BPF object, attach one uprobe-multi link over the first N attach sites
//! with a bare libbpf call, run every site once, and detach. The yardstick
//! for `scripts/attach_overhead.sh`.
//!
//!     plain_attach N
//!
//! Prints `ATTACH_MS DETACH_MS FIRED`: wall milliseconds of the attach call
//! and of the detach (closing the link), and the sites that fired once.

use std::ffi::CString;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use bench::attach::sites;
use bench::bpf::skel::attach::AttachSkelBuilder;
use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::AsRawLibbpf;

fn main() -> ExitCode {
    let Some(count) = std::env::args()
        .nth(1)
        .and_then(|n| n.parse::<usize>().ok())
    else {
        eprintln!("usage: plain_attach N");
        return ExitCode::from(2);
    };
    match run(count) {
        Ok((attach_ms, detach_ms, fired)) => {
            println!("{attach_ms:.3} {detach_ms:.3} {fired}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("plain_attach: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(count: usize) -> Result<(f64, f64, usize), String> {
    if count == 0 || count > sites::SITE_COUNT {
        return Err(format!("N must be between 1 and {}", sites::SITE_COUNT));
    }
    let exe = Path::new("/proc/self/exe");
    let offsets: Vec<std::os::raw::c_ulong> = sites::offsets(exe, 0..count)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|o| o as std::os::raw::c_ulong)
        .collect();
    // Lives until the process exits, as the skeleton opened in it does.
    let object = Box::leak(Box::new(std::mem::MaybeUninit::uninit()));
    let mut open = AttachSkelBuilder::default()
        .open(object)
        .map_err(|e| e.to_string())?;
    open.maps
        .rodata_data
        .as_deref_mut()
        .ok_or("no .rodata")?
        .sites_base = sites::address(0) as u64;
    for mut prog in open.open_object_mut().progs_mut() {
        prog.set_autoload(prog.name() == "count_site_multi");
    }
    let skel = open.load().map_err(|e| e.to_string())?;
    let path = CString::new("/proc/self/exe").map_err(|e| e.to_string())?;
    let opts = libbpf_sys::bpf_uprobe_multi_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_uprobe_multi_opts>() as _,
        offsets: offsets.as_ptr(),
        cnt: offsets.len() as _,
        ..Default::default()
    };
    let prog = skel.progs.count_site_multi.as_libbpf_object();
    let start = Instant::now();
    // SAFETY: a loaded program, a NUL-terminated path and options that point
    // at live locals.
    let link = unsafe {
        libbpf_sys::bpf_program__attach_uprobe_multi(
            prog.as_ptr(),
            -1,
            path.as_ptr(),
            std::ptr::null(),
            &opts,
        )
    };
    let attach = start.elapsed();
    if link.is_null() {
        return Err(format!(
            "attach failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    for site in 0..count {
        sites::fire(site);
    }
    let bss = skel.maps.bss_data.as_deref().ok_or("no .bss")?;
    let fired = bss.site_hits[..count].iter().filter(|&&h| h == 1).count();
    let start = Instant::now();
    // SAFETY: the link this function attached, destroyed once.
    unsafe { libbpf_sys::bpf_link__destroy(link) };
    let detach = start.elapsed();
    Ok((
        attach.as_secs_f64() * 1e3,
        detach.as_secs_f64() * 1e3,
        fired,
    ))
}
