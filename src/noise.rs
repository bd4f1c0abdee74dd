//! What spoils a run's numbers, read from the kernel while it goes: time the
//! hypervisor stole from the CPUs, tasks waiting for a CPU (the kernel's
//! pressure stall information), other runnable tasks, the CPU clock changing
//! under the run. And the facts of the machine a reader needs to
//! reproduce a number. Reading only: nothing here changes the machine.

use std::fs;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::runner::phases::{RunObserver, RunSeconds};
use crate::stats::Sample;

/// A run's noise figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    /// CPU time stolen by the hypervisor, in % of all CPU time of the run.
    pub steal_pct: f64,
    /// The share of the run's time in which some task waited for a CPU
    /// (/proc/pressure/cpu, `some`): another task competing with the run's
    /// threads, or more threads than CPUs. `None` without PSI.
    #[serde(default)]
    pub cpu_pressure_pct: Option<f64>,
    /// Runnable tasks other than the run's own threads (`procs_running`),
    /// averaged over its ticks, and the most seen at one tick. A raw figure:
    /// on some VMs it counts a task or two that never show as running.
    pub other_runnable_mean: f64,
    pub other_runnable_max: u32,
    /// The spread of the CPUs' current frequency over the run, in % of the
    /// lowest (`None` where cpufreq is absent, as in most VMs).
    pub frequency_change_pct: Option<f64>,
}

/// Steal above this share of the CPU time makes a run suspect.
pub const STEAL_WARN_PCT: f64 = 1.0;
/// Tasks waiting for a CPU more than this share of the time competed with
/// the run.
pub const PRESSURE_WARN_PCT: f64 = 5.0;
/// A CPU clock that moved more than this changed the speed of the run.
pub const FREQUENCY_WARN_PCT: f64 = 5.0;

impl Noise {
    /// Which thresholds this run crossed: (what, figure) pairs for the report.
    pub fn crossed(&self) -> Vec<NoiseKind> {
        let mut crossed = Vec::new();
        if self.steal_pct > STEAL_WARN_PCT {
            crossed.push(NoiseKind::Steal(self.steal_pct));
        }
        if let Some(pressure) = self.cpu_pressure_pct.filter(|&p| p > PRESSURE_WARN_PCT) {
            crossed.push(NoiseKind::Pressure(pressure));
        }
        if let Some(change) = self
            .frequency_change_pct
            .filter(|&c| c > FREQUENCY_WARN_PCT)
        {
            crossed.push(NoiseKind::Frequency(change));
        }
        crossed
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoiseKind {
    Steal(f64),
    Pressure(f64),
    Frequency(f64),
}

/// Reads the noise sources at a run's start, at each tick and at its end.
pub struct NoiseMeter {
    own_threads: u32,
    start: Option<CpuTimes>,
    started: Instant,
    pressure_start: Option<u64>,
    runnable: Vec<u32>,
    frequencies: Vec<u64>,
}

#[derive(Clone, Copy, Debug)]
struct CpuTimes {
    total: u64,
    steal: u64,
}

impl NoiseMeter {
    /// `own_threads`: the run's producers and consumers, which are runnable
    /// by design (the thread that reads is counted too, and left out).
    pub fn start(own_threads: usize) -> NoiseMeter {
        let mut meter = NoiseMeter {
            own_threads: own_threads as u32 + 1,
            start: cpu_times(),
            started: Instant::now(),
            pressure_start: cpu_pressure_us(),
            runnable: Vec::new(),
            frequencies: Vec::new(),
        };
        meter.frequencies.extend(frequencies());
        meter
    }

    pub fn tick(&mut self) {
        if let Some(running) = procs_running() {
            self.runnable.push(running.saturating_sub(self.own_threads));
        }
        self.frequencies.extend(frequencies());
    }

    pub fn finish(mut self) -> Noise {
        self.frequencies.extend(frequencies());
        let steal_pct = match (self.start, cpu_times()) {
            (Some(a), Some(b)) if b.total > a.total => {
                (b.steal.saturating_sub(a.steal)) as f64 / (b.total - a.total) as f64 * 100.0
            }
            _ => 0.0,
        };
        let other_runnable_mean = match self.runnable.len() {
            0 => 0.0,
            n => self.runnable.iter().map(|&r| f64::from(r)).sum::<f64>() / n as f64,
        };
        let frequency_change_pct =
            match (self.frequencies.iter().min(), self.frequencies.iter().max()) {
                (Some(&low), Some(&high)) if low > 0 => {
                    Some((high - low) as f64 / low as f64 * 100.0)
                }
                _ => None,
            };
        let elapsed_us = self.started.elapsed().as_micros() as f64;
        let cpu_pressure_pct = match (self.pressure_start, cpu_pressure_us()) {
            (Some(a), Some(b)) if elapsed_us > 0.0 => {
                Some((b.saturating_sub(a) as f64 / elapsed_us * 100.0).min(100.0))
            }
            _ => None,
        };
        Noise {
            steal_pct,
            cpu_pressure_pct,
            other_runnable_mean,
            other_runnable_max: self.runnable.iter().copied().max().unwrap_or(0),
            frequency_change_pct,
        }
    }
}

/// The noise meter as a run's observer: it reads over the measured seconds
/// only, one tick per measured sample.
pub struct NoiseObserver {
    own_threads: usize,
    meter: Option<NoiseMeter>,
    /// Whether a measured second ended: the figures of a run stopped before
    /// its first one cover a fraction of a second of thread start-up, which
    /// says nothing of the run, so there are none.
    measured: bool,
    noise: Option<Noise>,
}

impl NoiseObserver {
    /// `own_threads`: the run's producers and consumers.
    pub fn new(own_threads: usize) -> NoiseObserver {
        NoiseObserver {
            own_threads,
            meter: None,
            measured: false,
            noise: None,
        }
    }

    /// The figures of the measured seconds, if one was measured.
    pub fn finish(self) -> Option<Noise> {
        if !self.measured {
            return None;
        }
        self.noise.or_else(|| self.meter.map(NoiseMeter::finish))
    }
}

impl RunObserver for NoiseObserver {
    fn measure_started(&mut self, _timing: RunSeconds) {
        self.meter = Some(NoiseMeter::start(self.own_threads));
    }

    fn sample(&mut self, sample: &Sample) {
        if let (false, Some(meter)) = (sample.warmup, self.meter.as_mut()) {
            meter.tick();
            self.measured = true;
        }
    }

    fn measure_ended(&mut self, _samples: &[Sample]) {
        self.noise = self.meter.take().map(NoiseMeter::finish);
    }
}

/// The all-CPU line of /proc/stat: user nice system idle iowait irq softirq
/// steal (guest time is already inside user and nice).
fn cpu_times() -> Option<CpuTimes> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    if fields.len() < 8 {
        return None;
    }
    Some(CpuTimes {
        total: fields.iter().sum(),
        steal: fields[7],
    })
}

/// The `some` stall total of /proc/pressure/cpu, in microseconds.
fn cpu_pressure_us() -> Option<u64> {
    let text = fs::read_to_string("/proc/pressure/cpu").ok()?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

fn procs_running() -> Option<u32> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|n| n.trim().parse().ok())
}

/// Every CPU's current frequency in kHz, where cpufreq exposes it.
fn frequencies() -> Vec<u64> {
    let Ok(entries) = fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| {
            fs::read_to_string(e.path().join("cpufreq/scaling_cur_freq"))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

/// The machine facts that shape a number, for a result's context.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// The kernel's command line (mitigations, isolcpus, ...).
    pub kernel_cmdline: String,
    /// The hypervisor, or "none" on bare metal.
    pub virtualization: String,
    /// `on`, `off`, `notsupported`, ... from the kernel's SMT control.
    pub smt: String,
    /// cpu0's cpufreq governor, or "none" where cpufreq is absent.
    pub cpufreq_governor: String,
}

impl Machine {
    pub fn gather() -> Machine {
        let read = |path: &str| fs::read_to_string(path).ok().map(|s| s.trim().to_string());
        Machine {
            kernel_cmdline: read("/proc/cmdline").unwrap_or_default(),
            virtualization: virtualization(),
            smt: read("/sys/devices/system/cpu/smt/control")
                .unwrap_or_else(|| "unknown".to_string()),
            cpufreq_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .unwrap_or_else(|| "none".to_string()),
        }
    }
}

/// The hypervisor as the firmware and CPU tell it: the DMI vendor and product
/// when the CPU says it runs under one, "none" when it says it does not.
fn virtualization() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let guest = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    if !guest {
        return "none".to_string();
    }
    let read = |path: &str| {
        fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let named: Vec<String> = [
        read("/sys/hypervisor/type"),
        read("/sys/class/dmi/id/sys_vendor"),
        read("/sys/class/dmi/id/product_name"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if named.is_empty() {
        "a hypervisor (unnamed)".to_string()
    } else {
        named.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_run_stopped_before_its_first_measured_second_has_no_noise_figures() {
        let timing = RunSeconds {
            warmup_secs: 0,
            duration_secs: 5,
            tick_ms: crate::config::SECOND_MS,
        };
        let second = |warmup| Sample::on_time(0, &[1], warmup);
        // Stopped with no sample, or with warm-up samples only: none.
        for samples in [vec![], vec![second(true)]] {
            let mut observer = NoiseObserver::new(1);
            observer.measure_started(timing);
            for sample in &samples {
                observer.sample(sample);
            }
            observer.measure_ended(&samples);
            assert_eq!(observer.finish(), None, "{samples:?}");
        }
        // One measured second: figures.
        let mut observer = NoiseObserver::new(1);
        observer.measure_started(timing);
        observer.sample(&second(false));
        observer.measure_ended(&[second(false)]);
        assert!(observer.finish().is_some());
    }

    /// The CPUs this process may run on.
    fn allowed_cpus() -> usize {
        // SAFETY: a zeroed cpu_set_t is a valid empty set for the kernel to fill.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set is ours and its size is given.
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
        assert_eq!(rc, 0, "sched_getaffinity");
        // SAFETY: counting the CPUs of a set the kernel filled.
        unsafe { libc::CPU_COUNT(&set) as usize }
    }

    /// A tenth of a second with one spinning thread more than this process
    /// has CPUs: at every instant those threads are runnable (they never
    /// block) and, by pigeonhole, some CPU has a task waiting. The meter
    /// must see what that implies, whatever the machine's speed: other
    /// runnable tasks at its tick (the spinners, less one that a migration
    /// may hide from the kernel's per-CPU sum) and, where the kernel has
    /// PSI, some CPU pressure. A meter that reads nothing (a default
    /// `Noise`) has none of it.
    #[test]
    fn this_machines_noise_is_read() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let spinners = allowed_cpus() + 1;
        let (stop, started) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let threads: Vec<_> = (0..spinners)
            .map(|_| {
                let (stop, started) = (Arc::clone(&stop), Arc::clone(&started));
                std::thread::spawn(move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) < spinners {
            std::thread::yield_now();
        }
        let mut meter = NoiseMeter::start(0);
        std::thread::sleep(std::time::Duration::from_millis(100));
        meter.tick();
        let noise = meter.finish();
        stop.store(true, Ordering::Relaxed);
        for thread in threads {
            thread.join().unwrap();
        }

        assert!((0.0..=100.0).contains(&noise.steal_pct), "{noise:?}");
        let seen = spinners as u32 - 1;
        assert!(
            noise.other_runnable_max >= seen,
            "{spinners} spinners: {noise:?}"
        );
        assert!(noise.other_runnable_mean >= f64::from(seen), "{noise:?}");
        match fs::read_to_string("/proc/pressure/cpu") {
            Ok(_) => {
                let pressure = noise.cpu_pressure_pct.expect("PSI is read where it exists");
                assert!(pressure > 0.0 && pressure <= 100.0, "{noise:?}");
            }
            Err(_) => assert_eq!(noise.cpu_pressure_pct, None),
        }
        // No cpufreq (most VMs), no frequency figure; with it, one.
        let cpufreq = Path::new("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").exists();
        assert_eq!(noise.frequency_change_pct.is_some(), cpufreq, "{noise:?}");

        let machine = Machine::gather();
        assert!(!machine.kernel_cmdline.is_empty(), "{machine:?}");
        assert!(!machine.virtualization.is_empty());
    }

    #[test]
    fn thresholds_name_what_they_crossed() {
        let quiet = Noise::default();
        assert!(quiet.crossed().is_empty());
        let noisy = Noise {
            steal_pct: 4.0,
            cpu_pressure_pct: Some(30.0),
            other_runnable_mean: 1.5,
            other_runnable_max: 3,
            frequency_change_pct: Some(12.0),
        };
        assert_eq!(
            noisy.crossed(),
            [
                NoiseKind::Steal(4.0),
                NoiseKind::Pressure(30.0),
                NoiseKind::Frequency(12.0)
            ]
        );
    }
}
