//! What a sockmap run owns, and its threads: the producer sending the file
//! with sendfile(), consumer 0 reading c2 (consumer 1 has nothing to do in
//! the BPF modes, as upstream's), and the counters both keep.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::sockets::{self, Sockets};
use super::{Extra, FILE_SIZE};
use crate::bpf::skel::sockmap::SockmapSkel;
use crate::bpf::Owned;
use crate::channels::Readings;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::runner::{ConsumerCtx, ProducerCtx, Workload};

/// How long the consumer of a fixed-work run waits, once the producer is
/// done, for bytes still on their way without any arriving before it gives
/// up on them; and how long it drains at most.
const DRAIN_PATIENCE: Duration = Duration::from_secs(2);
const DRAIN_AT_MOST: Duration = Duration::from_secs(60);

/// A counter on a cache line of its own: the producer and the consumer
/// update theirs on two CPUs.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }
    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

pub(super) struct SockmapWorkload {
    // Fields drop in order: the sockets close (leaving the map) before the
    // programs and maps are unloaded.
    sockets: Sockets,
    file: OwnedFd,
    /// The file's bytes, which the received ones are checked against.
    expected: Vec<u8>,
    sender: RawFd,
    delay_consumer: Duration,
    producer_duration: Option<u64>,
    counts: [Counter; 4],
    producer_done: AtomicBool,
    producer_failed: AtomicBool,
    /// A fixed-work run: the consumer reads what was sent to the last byte.
    drain: bool,
    skel: Owned<SockmapSkel<'static>>,
}

impl SockmapWorkload {
    pub(super) fn new(
        skel: Owned<SockmapSkel<'static>>,
        sockets: Sockets,
        sender: RawFd,
        delay_consumer: u64,
        producer_duration: u64,
        drain: bool,
    ) -> Result<SockmapWorkload> {
        sockets::set_nonblocking(sender)?;
        Ok(SockmapWorkload {
            file: sockets::pattern_file()?,
            expected: sockets::pattern(),
            sockets,
            sender,
            delay_consumer: Duration::from_secs(delay_consumer),
            producer_duration: (producer_duration > 0).then_some(producer_duration),
            counts: Default::default(),
            producer_done: AtomicBool::new(false),
            producer_failed: AtomicBool::new(false),
            drain,
            skel,
        })
    }

    fn count(&self, which: Extra) -> &Counter {
        &self.counts[which as usize]
    }

    fn snapshot(&self) -> [u64; 4] {
        [0, 1, 2, 3].map(|i| self.counts[i].get())
    }

    /// The BPF programs' counters: bytes seen, redirects refused.
    fn bpf_counts(&self) -> (u64, u64) {
        match self.skel.maps.bss_data.as_deref() {
            // SAFETY: the .bss is mapped for as long as the skeleton lives;
            // the programs write it concurrently, so it is read volatile.
            Some(bss) => unsafe {
                (
                    std::ptr::read_volatile(&bss.bytes_seen),
                    std::ptr::read_volatile(&bss.redirects_refused),
                )
            },
            None => (0, 0),
        }
    }

    /// Sends the whole file into the sending socket, in as many sendfile()
    /// calls as the socket takes; a full socket is tried again at once, as
    /// upstream's producer does, until the run stops.
    fn send_file(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let mut offset: libc::off_t = 0;
        while (offset as usize) < FILE_SIZE {
            self.count(Extra::SendCalls).add(1);
            let left = FILE_SIZE - offset as usize;
            // SAFETY: both descriptors live as long as `self`; sendfile
            // advances `offset` itself.
            let sent =
                unsafe { libc::sendfile(self.sender, self.file.as_raw_fd(), &mut offset, left) };
            if sent >= 0 {
                self.count(Extra::SentBytes).add(sent as u64);
                continue;
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN | libc::ENOMEM | libc::ENOBUFS | libc::EINTR) => {
                    if ctx.should_stop() {
                        return Ok(());
                    }
                }
                _ => {
                    return Err(Error::runtime(format!(
                        "sendfile() into the sending socket failed: {err}"
                    )))
                }
            }
        }
        Ok(())
    }

    /// Reads what is there into `buf`, checks it and counts it; the bytes
    /// read, `None` for nothing now (EINTR, EAGAIN).
    fn read_some(&self, buf: &mut [u8], position: &mut usize) -> Result<Option<usize>> {
        self.count(Extra::ReadCalls).add(1);
        // SAFETY: reading into a buffer this thread owns.
        let n = unsafe { libc::read(self.sockets.c2(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN) => Ok(None),
                _ => Err(Error::runtime(format!("reading c2 failed: {err}"))),
            };
        }
        if n == 0 {
            return Err(Error::runtime(
                "c2 was closed by its peer while the benchmark ran",
            ));
        }
        let n = n as usize;
        sockets::verify(&buf[..n], &self.expected, position)?;
        self.count(Extra::ReceivedBytes).add(n as u64);
        Ok(Some(n))
    }

    /// Once a fixed-work run is over: reads what the producer sent that has
    /// not arrived yet, until all has or none comes for [`DRAIN_PATIENCE`],
    /// so that the run counts every byte it sent. (A timed run leaves what
    /// is under way: in some modes the kernel queues far more than the
    /// reader gets each second.)
    fn drain(&self, buf: &mut [u8], position: &mut usize) -> Result<()> {
        sockets::set_nonblocking(self.sockets.c2())?;
        let started = Instant::now();
        let mut last_progress = started;
        loop {
            let done = self.producer_done.load(Relaxed);
            let missing =
                self.count(Extra::SentBytes).get() > self.count(Extra::ReceivedBytes).get();
            if (done && !missing)
                || last_progress.elapsed() > DRAIN_PATIENCE
                || started.elapsed() > DRAIN_AT_MOST
            {
                return Ok(());
            }
            let mut poll = libc::pollfd {
                fd: self.sockets.c2(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd on a descriptor `self` owns.
            unsafe { libc::poll(&mut poll, 1, 50) };
            if self.read_some(buf, position)?.is_some() {
                last_progress = Instant::now();
            }
        }
    }
}

impl Workload for SockmapWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let mut started: Option<Instant> = None;
        let result = ctx.try_run(|| {
            let started = *started.get_or_insert_with(Instant::now);
            if let Some(limit) = self.producer_duration {
                if started.elapsed().as_secs() > limit {
                    ctx.wait_for_stop();
                    return Ok(0);
                }
            }
            self.send_file(ctx)?;
            Ok(1)
        });
        self.producer_failed.store(result.is_err(), Relaxed);
        self.producer_done.store(true, Relaxed);
        result
    }

    fn consume(&self, ctx: &ConsumerCtx<'_>) -> Result<()> {
        if ctx.id != 0 {
            // Upstream's second consumer serves only the mode without BPF.
            return Ok(());
        }
        let start = Instant::now();
        while start.elapsed() < self.delay_consumer {
            // A fixed-work run reads all it sent, however late it starts:
            // the producer's end does not cut the delay short; Ctrl-C and a
            // failure do.
            let over = match self.drain {
                true => interrupt::received().is_some() || self.producer_failed.load(Relaxed),
                false => ctx.should_stop(),
            };
            if over {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut buf = vec![0u8; FILE_SIZE];
        let mut position = 0;
        while !ctx.should_stop() {
            self.read_some(&mut buf, &mut position)?;
        }
        match self.drain {
            true => self.drain(&mut buf, &mut position),
            false => Ok(()),
        }
    }

    /// The BPF programs' bytes and refusals, and the threads' counters,
    /// read together.
    fn read(&self, _ops: u64) -> Readings {
        let (bytes, refused) = self.bpf_counts();
        let mut readings = vec![Some(bytes), Some(refused)];
        readings.extend(self.snapshot().map(Some));
        readings
    }
}
