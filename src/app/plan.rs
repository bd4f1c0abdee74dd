//! Everything decided before the first set-up: each benchmark's points (its
//! configuration at each sweep value) and CPUs, where the outputs go, the
//! privileges, and the machine's context.

use crate::benches::{self, Benchmark};
use crate::bpf;
use crate::config::{BenchRequest, ProfileRequest, RunConfig, RunRequest};
use crate::error::{Error, Result};
use crate::profile;
use crate::report::export::Exports;
use crate::report::profile::profile_name;
use crate::report::reporter::Reporter;
use crate::report::{console, text};
use crate::results::Context;
use crate::runner::affinity::{self, Placement};
use crate::sweep;

/// Everything decided before the first set-up.
pub(super) struct Plan {
    pub benches: Vec<BenchPlan>,
    pub context: Context,
    /// The outputs, built once: checked here, written by `publish`.
    pub exports: Exports,
}

pub(super) struct BenchPlan {
    pub bench: &'static dyn Benchmark,
    pub reporter: Reporter,
    pub base: RunConfig,
    pub points: Vec<Point>,
}

/// One configuration to run: the swept value (if any), its configuration and
/// CPUs.
pub(super) struct Point {
    pub value: Option<u64>,
    pub config: RunConfig,
    pub placement: Placement,
}

impl Plan {
    /// Every (benchmark, point) pair, by index: what one round runs.
    pub fn cells(&self) -> Vec<(usize, usize)> {
        self.benches
            .iter()
            .enumerate()
            .flat_map(|(b, bench)| (0..bench.points.len()).map(move |p| (b, p)))
            .collect()
    }

    pub fn several(&self) -> bool {
        self.benches.len() > 1
    }
}

/// Checks every benchmark's and point's configuration and CPUs, where the
/// outputs go, and the privileges, so that a mistake is found before anything
/// runs.
pub(super) fn plan(request: &RunRequest) -> Result<Plan> {
    plan_with(request, &benches::find)
}

/// A benchmark by name: the registry's lookup, or the tests' own.
pub(super) type Lookup<'a> = &'a dyn Fn(&str) -> Option<&'static dyn Benchmark>;

/// [`plan`], the benchmarks found by `find`.
pub(super) fn plan_with(request: &RunRequest, find: Lookup) -> Result<Plan> {
    let online = affinity::online_cpus()?;
    let mut context = Context::gather(&online);
    if let Some(name) = &request.machine {
        context.machine_name = name.clone();
    }
    // Gathered here, not read while formatting: an emulated CPU marks the
    // summaries.
    let emulated = context.vm.as_deref() == Some("tcg");
    let plans = request
        .benches
        .iter()
        .map(|wanted| bench_plan(wanted, request, find, &online, emulated))
        .collect::<Result<Vec<_>>>()?;
    if let Some(profile) = &request.profile {
        check_profile(profile)?;
    }
    let exports = Exports::new(&request.outputs, request.profile.as_ref());
    let names: Vec<&str> = plans.iter().map(|p| p.bench.name()).collect();
    exports.check(&names, &profile_stems(request, &plans))?;
    for plan in &plans {
        if plan.bench.needs_bpf() {
            bpf::check_privileges(plan.bench.name(), plan.bench.needs())?;
        }
    }
    let threads = plans
        .iter()
        .flat_map(|b| &b.points)
        .map(|p| p.config.producers + p.config.consumers)
        .max()
        .unwrap_or(0);
    if threads > online.len() {
        console::warning(&text::oversubscribed_warning(threads, online.len()));
    }
    Ok(Plan {
        benches: plans,
        context,
        exports,
    })
}

/// The name of every run `--profile=DIR` may write files for: each
/// benchmark, sweep point and run (see `execute`).
fn profile_stems(request: &RunRequest, plans: &[BenchPlan]) -> Vec<String> {
    if request
        .profile
        .as_ref()
        .and_then(|p| p.dir.as_ref())
        .is_none()
    {
        return Vec::new();
    }
    let runs: Vec<Option<u32>> = match &request.repetition {
        r if r.is_repeated() => (1..=r.rounds()).map(Some).collect(),
        _ => vec![None],
    };
    let mut stems = Vec::new();
    for plan in plans {
        for point in &plan.points {
            for &run in &runs {
                // Named as the run's files are: a body by its name.
                let point = point
                    .value
                    .zip(request.sweep.as_ref())
                    .map(|(value, spec)| (spec.param.label(value), spec.param.name()));
                stems.push(profile_name(plan.bench.name(), point, run));
            }
        }
    }
    stems
}

/// One benchmark's points and their CPUs.
fn bench_plan(
    wanted: &BenchRequest,
    request: &RunRequest,
    find: Lookup,
    online: &[usize],
    emulated: bool,
) -> Result<BenchPlan> {
    let bench = find(wanted.bench)
        .ok_or_else(|| Error::usage(format!("unknown benchmark '{}'", wanted.bench)))?;
    bench.check_global_options(&wanted.config)?;
    let configs: Vec<(Option<u64>, RunConfig)> = match &request.sweep {
        None => vec![(None, wanted.config.clone())],
        Some(spec) => spec
            .values
            .iter()
            .map(|&v| Some(v))
            .zip(sweep::points(spec, bench, &wanted.config)?)
            .collect(),
    };
    let points = configs
        .into_iter()
        .map(|(value, config)| {
            let placement =
                affinity::place(&config.affinity, config.producers, config.consumers, online)?;
            Ok(Point {
                value,
                config,
                placement,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(BenchPlan {
        bench,
        reporter: Reporter::new(bench).emulated(emulated),
        base: wanted.config.clone(),
        points,
    })
}

/// `--profile`: the privileges it needs, a rate the kernel allows, and its
/// directory (created if missing).
fn check_profile(profile: &ProfileRequest) -> Result<()> {
    // A BPF program on a cpu-clock perf event: CAP_BPF and CAP_PERFMON.
    bpf::check_privileges("--profile", bpf::Needs::Link)?;
    if let Some(max) = profile::max_sample_rate().filter(|&max| profile.freq_hz > max) {
        return Err(Error::usage(format!(
            "--profile-freq {} is above this kernel's limit of {max} samples per second \
             (kernel.perf_event_max_sample_rate)",
            profile.freq_hz
        )));
    }
    if let Some(dir) = &profile.dir {
        if dir.exists() && !dir.is_dir() {
            return Err(Error::usage(format!(
                "--profile={} is not a directory",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::usage(format!(
                "--profile={}: cannot create it: {e}",
                dir.display()
            ))
        })?;
    }
    Ok(())
}
