//! Per-CPU perf rings opened and mapped by hand (pb-custom): the BPF output
//! events, their mmapped rings and the reader of their records.

use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags};

use super::perf_buffer::perf_attr;
use super::{page_size, Settings};
use crate::bpf::skel::ringbuf::RingbufSkel;
use crate::error::{Error, Result};
use crate::perf_event;
use crate::runner::affinity::online_cpus;

/// Per-CPU perf rings opened and mapped by hand, for pb-custom.
pub(super) struct PerfRings {
    pub(super) rings: Vec<PerfRing>,
    pub(super) data_size: usize,
}

pub(super) struct PerfRing {
    pub(super) fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: each ring is read and advanced by exactly one consumer thread.
unsafe impl Send for PerfRing {}
unsafe impl Sync for PerfRing {}

impl PerfRings {
    pub(super) fn new(skel: &RingbufSkel<'_>, s: &Settings) -> Result<PerfRings> {
        let page = page_size() as usize;
        let data_size = page * s.perfbuf_pages as usize;
        let attr = perf_attr(s);
        let mut rings = Vec::new();
        for cpu in online_cpus()? {
            let fd = perf_event::open(&attr, perf_event::Target::Cpu(cpu)).map_err(|e| {
                Error::setup(format!(
                    "cannot open the BPF output event of CPU {cpu}: {e}"
                ))
            })?;
            let len = page + data_size;
            // SAFETY: mapping a perf event's ring as perf_event_open(2) documents.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(Error::setup(format!(
                    "cannot map the perf ring of CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let base =
                NonNull::new(base.cast()).ok_or_else(|| Error::setup("mmap returned NULL"))?;
            let ring = PerfRing { fd, base, len };
            perf_event::enable(ring.fd.as_raw_fd()).map_err(|e| {
                Error::setup(format!(
                    "cannot enable the BPF output event of CPU {cpu}: {e}"
                ))
            })?;
            let fd = ring.fd.as_raw_fd() as u32;
            skel.maps
                .perfbuf
                .update(
                    &(cpu as u32).to_ne_bytes(),
                    &fd.to_ne_bytes(),
                    MapFlags::ANY,
                )
                .map_err(|e| {
                    Error::setup(format!("cannot install the perf ring of CPU {cpu}: {e}"))
                })?;
            rings.push(ring);
        }
        Ok(PerfRings { rings, data_size })
    }
}

impl PerfRing {
    /// Consumes every record in the ring; returns how many were samples.
    pub(super) fn process(&self, data_size: usize) -> u64 {
        use libbpf_sys::perf_event_mmap_page as Page;
        let at = |offset: usize| {
            // SAFETY: data_head and data_tail are aligned u64 fields of the
            // mapped control page.
            unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }
        };
        let head = at(std::mem::offset_of!(Page, data_head)).load(Ordering::Acquire);
        let tail_word = at(std::mem::offset_of!(Page, data_tail));
        let mut tail = tail_word.load(Ordering::Relaxed);
        let mask = data_size as u64 - 1;
        let page = self.len - data_size;
        let mut count = 0;
        while tail < head {
            // SAFETY: records are 8-byte aligned, so a header never wraps.
            let header = unsafe {
                &*(self.base.as_ptr().add(page + (tail & mask) as usize)
                    as *const libbpf_sys::perf_event_header)
            };
            if header.type_ == libbpf_sys::PERF_RECORD_SAMPLE {
                count += 1;
            }
            tail += u64::from(header.size);
        }
        tail_word.store(tail, Ordering::Release);
        count
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `PerfRings::new`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
