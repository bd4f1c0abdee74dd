//! `--profile`: where a hit's time goes. A BPF program on the software
//! cpu-clock event of every online CPU (`bpf/profile.bpf.c`) counts the kernel
//! and user stacks that its ticks find bench's own threads in, during the
//! measured seconds only; [`symbolize`] names the frames (kallsyms for the
//! kernel and BPF programs, the ELF files of this process for user space), and
//! [`stages`] turns the stacks into the breakdown the report prints.
//!
//! cpu-clock is an hrtimer, not a PMU interrupt: it works in VMs without a
//! PMU, but it cannot fire while interrupts are off, so time spent with
//! interrupts disabled is charged to where they are enabled again.

pub mod stages;
pub mod symbolize;

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{Link, MapCore, MapFlags};

use crate::bpf::skel::profile::{ProfileSkel, ProfileSkelBuilder};
use crate::bpf::{self};
use crate::error::{Error, Result};
use crate::perf_event;
use crate::runner::affinity;
use crate::runner::phases::{RunObserver, RunSeconds};

pub use stages::Breakdown;
pub use symbolize::{Frame, FrameKind};

/// `bpf/profile.bpf.c`'s stack depth: a stack map value is this many addresses.
const STACK_DEPTH: usize = 64;
const COMM_LEN: usize = 16;
const EFAULT: i32 = -libc::EFAULT;

/// One stack the ticks found, symbolized, and how many ticks found it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stack {
    /// The thread's name: `producer-0`, `consumer-1`, `bench` (the thread
    /// that measures).
    pub thread: String,
    /// User frames, outermost first.
    pub user: Vec<Frame>,
    /// Kernel frames (BPF programs among them), outermost first; empty when
    /// the tick found the thread in user mode.
    pub kernel: Vec<Frame>,
    /// The kernel stack could not be recorded (a collision or a full stack
    /// map): the tick was in the kernel, but where is unknown.
    pub kernel_lost: bool,
    pub count: u64,
}

impl Stack {
    /// Whether this is one of the threads a hit happens on.
    pub fn is_producer(&self) -> bool {
        self.thread.starts_with("producer-")
    }

    /// Every frame, outermost first: the user part, then the kernel part.
    pub fn frames(&self) -> impl Iterator<Item = &Frame> {
        self.user.iter().chain(&self.kernel)
    }

    /// The innermost frame: where the tick found the thread.
    pub fn leaf(&self) -> Option<&Frame> {
        self.kernel.last().or(self.user.last())
    }
}

/// What one run's sampling gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub freq_hz: u64,
    /// The wall time sampling was on.
    pub seconds: f64,
    pub stacks: Vec<Stack>,
    /// Ticks that found another process (or the idle task) on a CPU.
    pub other_ticks: u64,
    /// Samples of ours that the counts map had no room for.
    pub dropped: u64,
    /// The CPUs sampled (one cpu-clock event each).
    pub cpus: usize,
    /// `kernel.perf_event_max_sample_rate` after the run, when the kernel
    /// lowered it below the frequency asked during the run: its sampling
    /// interrupts took too long, and it throttled them.
    pub throttled_to_hz: Option<u64>,
}

/// The sampler of one run: loaded and attached before the run, switched on
/// when the measured seconds start and off when they end. Dropping it
/// detaches every perf event and unloads the program.
pub struct Profiler {
    // Fields drop in order: the links (which own and close the perf events)
    // before the object.
    links: Vec<Link>,
    /// The perf events, owned by the links above, for enabling them.
    events: Vec<RawFd>,
    skel: bpf::Owned<ProfileSkel<'static>>,
    freq_hz: u64,
    started: Option<Instant>,
    sampled: Duration,
}

/// The profiler as a run's observer: sampling on over the measured seconds,
/// read while the benchmark is still loaded (its programs are named from
/// kallsyms).
pub struct ProfileObserver {
    profiler: Option<Profiler>,
    profile: Option<Result<Profile>>,
}

impl ProfileObserver {
    /// Attaches the sampler, switched off: whatever can fail fails here.
    pub fn attach(freq_hz: u64) -> Result<ProfileObserver> {
        Ok(ProfileObserver {
            profiler: Some(Profiler::attach(freq_hz)?),
            profile: None,
        })
    }

    /// What was sampled; `None` when the run never reached its tear-down.
    pub fn finish(self) -> Result<Option<Profile>> {
        self.profile.transpose()
    }
}

impl RunObserver for ProfileObserver {
    fn measure_started(&mut self, _timing: RunSeconds) {
        if let Some(profiler) = self.profiler.as_mut() {
            profiler.start();
        }
    }

    fn measure_ended(&mut self, _samples: &[crate::stats::Sample]) {
        if let Some(profiler) = self.profiler.as_mut() {
            profiler.stop();
        }
    }

    fn tearing_down(&mut self) {
        self.profile = self.profiler.take().map(Profiler::collect);
    }
}

/// Why sampling is impossible here, as a sentence after `unsupported: `.
fn refused(what: &str, err: &std::io::Error) -> Error {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| format!("; kernel.perf_event_paranoid is {}", s.trim()))
        .unwrap_or_default();
    match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Error::unsupported(format!(
            "--profile: the kernel forbids {what} ({err}{paranoid})"
        )),
        Some(libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::ENOSYS) => {
            Error::unsupported(format!("--profile: this kernel has no {what} ({err})"))
        }
        _ => Error::setup(format!("--profile: cannot open {what}: {err}")),
    }
}

/// The most samples per second the kernel accepts (its
/// `kernel.perf_event_max_sample_rate`), if it says.
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Opens a disabled cpu-clock sampling event on `cpu`, for every task.
fn open_cpu_clock(cpu: usize, freq_hz: u64) -> std::io::Result<OwnedFd> {
    let mut attr = perf_event::attr(
        libbpf_sys::PERF_TYPE_SOFTWARE,
        u64::from(libbpf_sys::PERF_COUNT_SW_CPU_CLOCK),
    );
    attr.__bindgen_anon_1.sample_freq = freq_hz;
    attr.set_freq(1);
    attr.set_disabled(1);
    perf_event::open(&attr, perf_event::Target::Cpu(cpu))
}

impl Profiler {
    /// Loads the sampler and attaches it, switched off, to a cpu-clock event
    /// on every online CPU: whatever can fail fails here, before the run.
    pub fn attach(freq_hz: u64) -> Result<Profiler> {
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<ProfileSkelBuilder>("the profiler's BPF object")? };
        let rodata = bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the profiler object")?;
        rodata.target_tgid = std::process::id();
        let skel = open.load().map_err(|e| match bpf::errno(&e) {
            Some(libc::EPERM | libc::EACCES) => Error::unsupported(
                "--profile: the kernel refused to load a perf_event BPF program (EPERM: lockdown or an LSM)",
            ),
            _ => bpf::load_error("the profiler's perf_event program", &e),
        })?;
        let skel = bpf::Owned::new(skel, storage);
        let mut profiler = Profiler {
            links: Vec::new(),
            events: Vec::new(),
            skel,
            freq_hz,
            started: None,
            sampled: Duration::ZERO,
        };
        for cpu in affinity::online_cpus()? {
            let event = open_cpu_clock(cpu, freq_hz)
                .map_err(|e| refused("cpu-clock sampling events (perf_event_open)", &e))?;
            let raw = event.as_raw_fd();
            let link = profiler
                .skel
                .progs
                .profile_sample
                .attach_perf_event(raw)
                .map_err(|e| match bpf::errno(&e) {
                    Some(code @ (libc::EPERM | libc::EACCES)) => refused(
                        "BPF programs on perf events",
                        &std::io::Error::from_raw_os_error(code),
                    ),
                    _ => bpf::attach_error("the profiler to a cpu-clock event", &e),
                })?;
            // The link owns the event from here, and closes it on detach.
            let _ = event.into_raw_fd();
            profiler.links.push(link);
            profiler.events.push(raw);
            // Attaching enables the event: off until the measured seconds.
            // A failure leaves it sampling the set-up too: not worth failing for.
            let _ = perf_event::disable(raw);
        }
        Ok(profiler)
    }

    /// The `recording` switch in the program's .bss.
    fn recording(&self) -> Option<&AtomicU32> {
        let bss = self.skel.maps.bss_data.as_deref()?;
        // SAFETY: the .bss is mmapped for as long as the skeleton lives, and
        // the word is aligned; the BPF program only reads it.
        Some(unsafe { AtomicU32::from_ptr(std::ptr::addr_of!(bss.recording).cast_mut()) })
    }

    /// Starts sampling (the measured seconds begin).
    pub fn start(&mut self) {
        if self.started.is_some() {
            return;
        }
        if let Some(recording) = self.recording() {
            recording.store(1, Relaxed);
        }
        for &event in &self.events {
            let _ = perf_event::enable(event);
        }
        self.started = Some(Instant::now());
    }

    /// Stops sampling (the measured seconds are over, or interrupted).
    pub fn stop(&mut self) {
        let Some(started) = self.started.take() else {
            return;
        };
        for &event in &self.events {
            let _ = perf_event::disable(event);
        }
        if let Some(recording) = self.recording() {
            recording.store(0, Relaxed);
        }
        self.sampled += started.elapsed();
    }

    /// Reads what was sampled and names every frame. Call it while the
    /// benchmark's programs are still loaded: they are named from kallsyms.
    pub fn collect(mut self) -> Result<Profile> {
        self.stop();
        let cpus = self.events.len();
        // Detach first: nothing samples while the maps are read.
        self.links.clear();
        self.events.clear();
        let unsymbolized = self.read_samples()?;
        let names = symbolize::Names::resolve(
            unsymbolized.iter().map(|s| s.user.as_slice()),
            unsymbolized.iter().map(|s| s.kernel.as_slice()),
        )?;
        let (other_ticks, dropped) = self
            .skel
            .maps
            .bss_data
            .as_deref()
            .map_or((0, 0), |bss| (bss.other_ticks, bss.dropped_samples));
        Ok(Profile {
            freq_hz: self.freq_hz,
            seconds: self.sampled.as_secs_f64(),
            stacks: merge_by_name(unsymbolized, &names),
            other_ticks,
            dropped,
            cpus,
            throttled_to_hz: max_sample_rate().filter(|&max| max < self.freq_hz),
        })
    }

    /// Every sampled stack with its addresses, not yet named.
    fn read_samples(&self) -> Result<Vec<AddressedSample>> {
        let maps = &self.skel.maps;
        let mut raw = Vec::new();
        for key in maps.counts.keys() {
            let Some(value) = maps
                .counts
                .lookup(&key, MapFlags::ANY)
                .map_err(|e| Error::runtime(format!("--profile: cannot read a count: {e}")))?
            else {
                continue;
            };
            if let Some(sample) = RawSample::parse(&key, &value) {
                raw.push(sample);
            }
        }
        let stack_of = |id: i32| -> Option<Vec<u64>> {
            let id = u32::try_from(id).ok()?;
            let value = maps
                .stacks
                .lookup(&id.to_ne_bytes(), MapFlags::ANY)
                .ok()
                .flatten()?;
            Some(
                value
                    .chunks_exact(8)
                    .take(STACK_DEPTH)
                    .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
                    .take_while(|&ip| ip != 0)
                    .collect(),
            )
        };
        Ok(raw
            .into_iter()
            .map(|sample| {
                let user = stack_of(sample.user_stack).unwrap_or_default();
                let kernel = stack_of(sample.kernel_stack);
                // -EFAULT: no kernel stack because the tick was in user mode.
                let kernel_lost = kernel.is_none() && sample.kernel_stack != EFAULT;
                AddressedSample {
                    sample,
                    user,
                    kernel: kernel.unwrap_or_default(),
                    kernel_lost,
                }
            })
            .collect())
    }
}

/// A sample's stacks as addresses, before naming.
struct AddressedSample {
    sample: RawSample,
    user: Vec<u64>,
    kernel: Vec<u64>,
    kernel_lost: bool,
}

/// Names the samples' stacks and merges those that differ in addresses only
/// (another call site in the same function): one stack by name, most
/// sampled first.
fn merge_by_name(samples: Vec<AddressedSample>, names: &symbolize::Names) -> Vec<Stack> {
    let mut merged: HashMap<(String, Vec<Frame>, Vec<Frame>, bool), u64> = HashMap::new();
    for s in samples {
        let key = (
            s.sample.comm,
            names.user_stack(&s.user),
            names.kernel_stack(&s.kernel),
            s.kernel_lost,
        );
        *merged.entry(key).or_default() += s.sample.count;
    }
    let mut stacks: Vec<Stack> = merged
        .into_iter()
        .map(|((thread, user, kernel, kernel_lost), count)| Stack {
            thread,
            user,
            kernel,
            kernel_lost,
            count,
        })
        .collect();
    stacks.sort_by(|a, b| {
        (b.count, &a.thread, &a.user, &a.kernel).cmp(&(a.count, &b.thread, &b.user, &b.kernel))
    });
    stacks
}

/// One entry of the counts map.
struct RawSample {
    comm: String,
    kernel_stack: i32,
    user_stack: i32,
    count: u64,
}

impl RawSample {
    /// `struct sample_key` and its count, as the map holds them.
    fn parse(key: &[u8], value: &[u8]) -> Option<RawSample> {
        let comm = key.get(..COMM_LEN)?;
        let comm = CStr::from_bytes_until_nul(comm)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(comm).into_owned());
        let int = |at: usize| -> Option<i32> {
            Some(i32::from_ne_bytes(key.get(at..at + 4)?.try_into().ok()?))
        };
        Some(RawSample {
            comm,
            kernel_stack: int(COMM_LEN)?,
            user_stack: int(COMM_LEN + 4)?,
            count: u64::from_ne_bytes(value.get(..8)?.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_entries_are_read_as_the_program_writes_them() {
        let mut key = b"producer-0\0\0\0\0\0\0".to_vec();
        key.extend((-14i32).to_ne_bytes());
        key.extend(7i32.to_ne_bytes());
        let sample = RawSample::parse(&key, &42u64.to_ne_bytes()).unwrap();
        assert_eq!(sample.comm, "producer-0");
        assert_eq!((sample.kernel_stack, sample.user_stack), (EFAULT, 7));
        assert_eq!(sample.count, 42);
        assert!(RawSample::parse(&key[..10], &[0; 8]).is_none());
    }

    #[test]
    fn a_kernel_that_forbids_sampling_is_unsupported() {
        let forbidden = std::io::Error::from_raw_os_error(libc::EACCES);
        let err = refused("cpu-clock sampling events", &forbidden);
        assert_eq!(err.exit_code(), crate::error::exit::UNSUPPORTED);
        assert!(err
            .to_string()
            .starts_with("unsupported: --profile: the kernel forbids"));
        let missing = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            refused("x", &missing).exit_code(),
            crate::error::exit::UNSUPPORTED
        );
        let other = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(refused("x", &other).exit_code(), crate::error::exit::SETUP);
    }
}
