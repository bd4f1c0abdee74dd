//! The hand-written consumer of a BPF ring buffer (rb-custom): the ring
//! mapped into this process and read as the kernel lays it out.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use libbpf_rs::MapHandle;

use super::page_size;
use crate::error::{Error, Result};

/// A BPF ring buffer mapped for a hand-written consumer: the consumer
/// position page writable, the producer position page and the data (mapped
/// twice in a row by the kernel, so no record wraps) read-only.
pub(crate) struct MappedRing {
    pub(crate) fd: RawFd,
    consumer: NonNull<u8>,
    producer: NonNull<u8>,
    page: usize,
    size: usize,
}

// SAFETY: the mappings are owned by this value and each ring is read and
// advanced by exactly one consumer thread.
unsafe impl Send for MappedRing {}
unsafe impl Sync for MappedRing {}

const RINGBUF_BUSY_BIT: u32 = 1 << 31;
const RINGBUF_DISCARD_BIT: u32 = 1 << 30;
const RINGBUF_HDR_SZ: u64 = 8;

impl MappedRing {
    pub(crate) fn new(ring: &MapHandle, size: u64) -> Result<MappedRing> {
        let fd = ring.as_fd().as_raw_fd();
        let page = page_size() as usize;
        let size = size as usize;
        let map = |len: usize, prot: i32, offset: usize| -> Result<NonNull<u8>> {
            // SAFETY: mapping a ring buffer map's fd as the kernel documents.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd,
                    offset as libc::off_t,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(Error::setup(format!(
                    "cannot map the ring buffer: {}",
                    std::io::Error::last_os_error()
                )));
            }
            NonNull::new(ptr.cast()).ok_or_else(|| Error::setup("mmap returned NULL"))
        };
        let consumer = map(page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = match map(page + 2 * size, libc::PROT_READ, page) {
            Ok(p) => p,
            Err(err) => {
                // SAFETY: unmapping what was just mapped.
                unsafe { libc::munmap(consumer.as_ptr().cast(), page) };
                return Err(err);
            }
        };
        Ok(MappedRing {
            fd,
            consumer,
            producer,
            page,
            size,
        })
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the position is the first, 8-byte aligned word of its page.
        unsafe { AtomicU64::from_ptr(self.consumer.as_ptr().cast()) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: as above.
        unsafe { AtomicU64::from_ptr(self.producer.as_ptr().cast()) }
    }

    /// Consumes every committed record; returns how many there were
    /// (discarded ones are skipped, not counted).
    pub(crate) fn process(&self) -> u64 {
        let mask = self.size as u64 - 1;
        // SAFETY: the data area follows the producer page.
        let data = unsafe { self.producer.as_ptr().add(self.page) };
        let mut cons = self.consumer_pos().load(Ordering::Acquire);
        let mut count = 0;
        loop {
            let prod = self.producer_pos().load(Ordering::Acquire);
            let start = cons;
            while cons < prod {
                // SAFETY: headers are 8-byte aligned inside the data area.
                let header =
                    unsafe { AtomicU32::from_ptr(data.add((cons & mask) as usize).cast()) };
                let len = header.load(Ordering::Acquire);
                if len & RINGBUF_BUSY_BIT != 0 {
                    break;
                }
                if len & RINGBUF_DISCARD_BIT == 0 {
                    count += 1;
                }
                let body = u64::from(len & !(RINGBUF_BUSY_BIT | RINGBUF_DISCARD_BIT));
                cons += (body + RINGBUF_HDR_SZ + 7) & !7;
            }
            if cons == start {
                return count;
            }
            self.consumer_pos().store(cons, Ordering::Release);
            // A busy record stops the pass; look again only if it moved on.
            if cons < prod {
                return count;
            }
        }
    }
}

impl Drop for MappedRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the two mappings made in `new`.
        unsafe {
            libc::munmap(self.consumer.as_ptr().cast(), self.page);
            libc::munmap(self.producer.as_ptr().cast(), self.page + 2 * self.size);
        }
    }
}
