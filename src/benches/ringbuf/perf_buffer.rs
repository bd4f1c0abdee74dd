//! libbpf's perf buffer consumer (pb-libbpf), and the perf event attributes
//! both perf buffer consumers open their events with.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::ptr::NonNull;

use libbpf_rs::libbpf_sys;

use super::counter::PaddedCounter;
use super::sys::os_error;
use super::Settings;
use crate::bpf::skel::ringbuf::RingbufSkel;
use crate::error::{Error, Result};
use crate::perf_event;

/// A perf buffer sample of ours: 8 bytes of header, the 4-byte raw size and
/// the 8 bytes of data, padded to 8 bytes.
pub(super) const PERF_SAMPLE_BYTES: u64 = 24;

/// The perf event attributes both perf buffer consumers use: BPF output
/// events, a wake-up every record or, with --rb-sampled, every RATE records.
pub(super) fn perf_attr(s: &Settings) -> libbpf_sys::perf_event_attr {
    let mut attr = perf_event::attr(
        libbpf_sys::PERF_TYPE_SOFTWARE,
        u64::from(libbpf_sys::PERF_COUNT_SW_BPF_OUTPUT),
    );
    attr.__bindgen_anon_1.sample_period = 1;
    attr.sample_type = u64::from(libbpf_sys::PERF_SAMPLE_RAW);
    attr.__bindgen_anon_2.wakeup_events = 1;
    if s.sampled {
        // Sampling by wakeup_events (upstream's way) is not sampling alone:
        // without a watermark the kernel also wakes the reader whenever half
        // the buffer has been written, so a fast consumer is woken over and
        // over whatever the rate. A watermark of RATE samples' bytes wakes it
        // every RATE records and at no other time, as the ring buffer
        // variants do by the data waiting (the kernel caps it at the buffer's
        // size: a rate the buffer cannot hold never wakes). The kernel wakes
        // once more than the watermark is written, hence one byte less.
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark =
            u32::try_from(s.rate * PERF_SAMPLE_BYTES - 1).unwrap_or(u32::MAX);
    }
    attr
}

/// libbpf's perf buffer through libbpf-sys: libbpf-rs's PerfBufferBuilder
/// cannot set the wake-up period that --rb-sampled needs.
pub(super) struct LibbpfPerfBuffer {
    pb: NonNull<libbpf_sys::perf_buffer>,
    /// What the sample callback gets: on the heap, so it stays put.
    _counters: Box<CounterSlice>,
}

/// The workload's per-CPU counters as the C callback sees them.
struct CounterSlice {
    first: *const PaddedCounter,
    len: usize,
}

// SAFETY: with one consumer only it polls; with several, each consumes only
// its own buffers, and libbpf keeps each buffer's state apart.
unsafe impl Send for LibbpfPerfBuffer {}
unsafe impl Sync for LibbpfPerfBuffer {}

/// Counts each sample into the counter of the CPU it came from.
unsafe extern "C" fn count_perf_sample(
    ctx: *mut libc::c_void,
    cpu: libc::c_int,
    event: *mut libbpf_sys::perf_event_header,
) -> libbpf_sys::bpf_perf_event_ret {
    // SAFETY: ctx is a CounterSlice over the workload's counters, which
    // outlive the perf buffer (see BufWorkload's field order), and libbpf
    // passes a valid header.
    unsafe {
        let counters = &*(ctx as *const CounterSlice);
        let cpu = cpu as usize;
        if (*event).type_ == libbpf_sys::PERF_RECORD_SAMPLE && cpu < counters.len {
            (*counters.first.add(cpu)).add(1);
        }
    }
    libbpf_sys::LIBBPF_PERF_EVENT_CONT
}

impl LibbpfPerfBuffer {
    pub(super) fn new(
        skel: &RingbufSkel<'_>,
        s: &Settings,
        counters: &[PaddedCounter],
    ) -> Result<LibbpfPerfBuffer> {
        let mut attr = perf_attr(s);
        let slice = Box::new(CounterSlice {
            first: counters.as_ptr(),
            len: counters.len(),
        });
        let opts = libbpf_sys::perf_buffer_raw_opts {
            sz: std::mem::size_of::<libbpf_sys::perf_buffer_raw_opts>() as _,
            ..Default::default()
        };
        // SAFETY: valid map fd, attr and opts; ctx points at the boxed slice,
        // which lives as long as the perf buffer.
        let pb = unsafe {
            libbpf_sys::perf_buffer__new_raw(
                skel.maps.perfbuf.as_fd().as_raw_fd(),
                s.perfbuf_pages as _,
                &mut attr,
                Some(count_perf_sample),
                &*slice as *const CounterSlice as *mut libc::c_void,
                &opts,
            )
        };
        let pb = NonNull::new(pb).ok_or_else(|| {
            Error::setup(format!(
                "cannot set up libbpf's perf buffer: {}",
                std::io::Error::last_os_error()
            ))
        })?;
        Ok(LibbpfPerfBuffer {
            pb,
            _counters: slice,
        })
    }

    pub(super) fn poll(&self) -> i32 {
        // SAFETY: a live perf buffer; see the Sync note.
        unsafe { libbpf_sys::perf_buffer__poll(self.pb.as_ptr(), -1) }
    }

    pub(super) fn consume(&self) -> i32 {
        // SAFETY: as above.
        unsafe { libbpf_sys::perf_buffer__consume(self.pb.as_ptr()) }
    }

    pub(super) fn buffer_count(&self) -> usize {
        // SAFETY: as above.
        unsafe { libbpf_sys::perf_buffer__buffer_cnt(self.pb.as_ptr()) as usize }
    }

    pub(super) fn buffer_fd(&self, idx: usize) -> Result<RawFd> {
        // SAFETY: as above; libbpf checks the index.
        match unsafe { libbpf_sys::perf_buffer__buffer_fd(self.pb.as_ptr(), idx as _) } {
            fd if fd >= 0 => Ok(fd),
            rc => Err(os_error("perf_buffer__buffer_fd", rc)),
        }
    }

    pub(super) fn consume_buffer(&self, idx: usize) -> Result<()> {
        // SAFETY: as above; only this consumer touches buffer `idx`.
        match unsafe { libbpf_sys::perf_buffer__consume_buffer(self.pb.as_ptr(), idx as _) } {
            rc if rc >= 0 => Ok(()),
            rc => Err(os_error("perf_buffer__consume_buffer", rc)),
        }
    }
}

impl Drop for LibbpfPerfBuffer {
    fn drop(&mut self) {
        // SAFETY: freed once, after every consumer has returned.
        unsafe { libbpf_sys::perf_buffer__free(self.pb.as_ptr()) };
    }
}
