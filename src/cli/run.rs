//! A run's command line translated into a [`RunRequest`]: each benchmark's
//! configuration, the sweep, the repetition and the outputs, checked before
//! anything runs.

use std::path::{Path, PathBuf};

use clap::ArgMatches;

use super::applies::{check_consumers, check_given, chosen_body, producers, read_bytes};
use super::args::Cli;
use super::{given, output_target, unknown_benchmark};
use crate::benches::{self, applies, Benchmark, RunOption};
use crate::config::{
    BenchOption, BenchRequest, Body, OptionValue, OutputTarget, Outputs, ProfileRequest,
    Repetition, RunConfig, RunRequest, SweepName, SweepParam, SweepSpec, SECOND_MS, TEST_TICK_ENV,
};
use crate::error::{Error, Result};
use crate::report::{export, output};
use crate::runner::affinity::Affinity;
use crate::sweep::{self, SweepRequest};

/// A run: the benchmarks with their configurations, checked, and what to do
/// with the results.
pub(super) fn run_command(cli: Cli, matches: &ArgMatches) -> Result<RunRequest> {
    if cli.benches.is_empty() {
        return Err(Error::usage(
            "no benchmark named: give one, e.g. `bench trig-uprobe-nop` (see --list)",
        ));
    }
    check_combinations(&cli, matches)?;
    let profile = profile_request(&cli, matches)?;
    let given_options = given_options(matches);
    let body = chosen_body(&cli)?;
    let mut requests: Vec<BenchRequest> = Vec::with_capacity(cli.benches.len());
    let mut sweep = None;
    for name in &cli.benches {
        let bench = benches::find(name).ok_or_else(|| unknown_benchmark(name))?;
        if requests.iter().any(|r| r.bench == bench.name()) {
            return Err(Error::usage(format!("{name} is named twice")));
        }
        let (request, spec) = bench_request(bench, &cli, matches, &given_options, body)?;
        requests.push(request);
        sweep = spec;
    }
    if let ([only], None) = (&requests[..], &sweep) {
        sweep = body_comparison(only, &cli)?;
    }
    let outputs = outputs(matches);
    if requests.len() > 1 {
        check_several(cli.run.repeat.is_some(), sweep.is_some(), &outputs)?;
    }
    if cli.run.markdown && (sweep.is_some() || cli.run.repeat.is_some()) {
        return Err(Error::usage(
            "--markdown prints the closing table of timed runs; a sweep prints its own table, \
             and --repeat has none",
        ));
    }
    check_outputs(&outputs)?;
    if cli.run.history.is_some() && requests.iter().any(|r| r.config.tick_ms != SECOND_MS) {
        return Err(Error::usage(format!(
            "--history keeps numbers for comparison, and {TEST_TICK_ENV} shortens the tick for \
             the test suite's output checks: unset it to append to a history"
        )));
    }
    Ok(RunRequest {
        benches: requests,
        repetition: Repetition {
            runs: cli.run.runs.unwrap_or(1) as u32,
            precision: cli.run.precision,
            until_decided: cli.run.until_decided,
            max_runs: cli.run.max_runs as u32,
            max_secs: cli.run.max_time,
        },
        sweep,
        outputs,
        markdown: cli.run.markdown,
        effect_pct: cli.run.effect,
        quiet: cli.quiet,
        verbose: cli.verbose,
        profile,
        history: cli.run.history.clone(),
        machine: cli.run.machine.clone(),
    })
}

/// Options that need or exclude one another.
pub(super) fn check_combinations(cli: &Cli, matches: &ArgMatches) -> Result<()> {
    let needs_sweep = export::FORMATS
        .iter()
        .find(|e| e.needs_sweep() && matches.contains_id(e.long()) && given(matches, e.long()));
    // --latency draws the percentile distribution, sweep or not.
    if let (Some(exporter), None, false) = (needs_sweep, &cli.run.sweep, cli.run.latency) {
        return Err(Error::usage(format!(
            "{} draws a sweep: give --sweep PARAM=LIST too",
            exporter.flag()
        )));
    }
    let bodies_swept = cli
        .run
        .sweep
        .as_ref()
        .is_some_and(|s| s.param == SweepName::Body);
    if let (Some(exporter), true) = (needs_sweep, bodies_swept) {
        return Err(Error::usage(format!(
            "{} draws a sweep of numbers; a sweep of bodies ends with its table of costs instead",
            exporter.flag()
        )));
    }
    if cli.run.sweep.is_some() && cli.run.repeat.is_some() {
        return Err(Error::usage(
            "--sweep compares timed runs; it does not combine with --repeat",
        ));
    }
    if cli.run.until_decided.is_some() && cli.benches.len() < 2 {
        return Err(Error::usage(
            "--until-decided judges changes between benchmarks: name two or more, interleaved",
        ));
    }
    if cli.run.repeat.is_some() && cli.run.precision.is_some() {
        return Err(Error::usage(
            "--precision adds timed runs; it does not combine with --repeat (--runs N does)",
        ));
    }
    for (id, flag) in [("max_runs", "--max-runs"), ("max_time", "--max-time")] {
        if given(matches, id) && cli.run.precision.is_none() && cli.run.until_decided.is_none() {
            return Err(Error::usage(format!(
                "{flag} bounds --precision or --until-decided: give one of them too"
            )));
        }
    }
    Ok(())
}

/// What several benchmarks (interleaved) cannot do.
pub(super) fn check_several(repeat: bool, swept: bool, outputs: &Outputs) -> Result<()> {
    let several = |what: &str| {
        Error::usage(format!(
            "{what} keeps one benchmark's result: name one benchmark, or run them one by one"
        ))
    };
    if repeat {
        return Err(several("--repeat"));
    }
    if swept {
        return Err(several("--sweep"));
    }
    if outputs.stdout_taken() {
        return Err(several("an output to standard output (-)"));
    }
    for (flag, path) in outputs.files() {
        if !path.is_dir() {
            return Err(Error::usage(format!(
                "with several benchmarks, {flag} names a directory (one file per benchmark), \
                 and {} is none",
                path.display()
            )));
        }
    }
    Ok(())
}

/// `--profile[=DIR]` and `--profile-freq`, checked.
pub(super) fn profile_request(cli: &Cli, matches: &ArgMatches) -> Result<Option<ProfileRequest>> {
    let Some(dir) = &cli.run.profile else {
        if given(matches, "profile_freq") {
            return Err(Error::usage(
                "--profile-freq sets --profile's rate: give --profile too",
            ));
        }
        return Ok(None);
    };
    if cli.run.repeat.is_some() {
        return Err(Error::usage(
            "--profile samples the measured seconds of timed runs; it does not combine with --repeat",
        ));
    }
    // `--profile DIR` reads DIR as a benchmark: say how to give it, unless
    // the name is a near miss of a benchmark's.
    if dir.is_none() {
        let unknown = cli
            .benches
            .iter()
            .find(|name| benches::find(name).is_none());
        if let Some(name) = unknown {
            if name.contains('/') || Path::new(name).exists() {
                return Err(Error::usage(format!(
                    "'{name}' is not a benchmark; --profile takes its directory after '=': --profile={name}"
                )));
            }
            if benches::suggestions(name).is_empty() {
                return Err(Error::usage(format!(
                    "unknown benchmark '{name}'; if it is --profile's directory, write --profile={name}"
                )));
            }
        }
    }
    Ok(Some(ProfileRequest {
        dir: dir.clone(),
        freq_hz: cli.run.profile_freq,
    }))
}

/// One named benchmark's configuration (and sweep) from the options given.
pub(super) fn bench_request(
    bench: &'static dyn Benchmark,
    cli: &Cli,
    matches: &ArgMatches,
    given_options: &[(&'static str, OptionValue)],
    body: Body,
) -> Result<(BenchRequest, Option<SweepSpec>)> {
    let params = benches::resolve_params(bench, given_options)?;
    let given_names: Vec<&str> = given_options.iter().map(|(name, _)| *name).collect();
    benches::check_option_needs(bench, &given_names, &params)?;
    check_given(bench, matches)?;
    check_consumers(bench, cli, body)?;
    let affinity =
        if cli.run.affinity || cli.run.prod_affinity.is_some() || cli.run.cons_affinity.is_some() {
            Affinity::Auto {
                producers: cli.run.prod_affinity.clone().map(|l| l.0),
                consumers: cli.run.cons_affinity.clone().map(|l| l.0),
            }
        } else {
            Affinity::None
        };
    if cli.run.repeat.is_some() {
        for (id, flag) in [("warmup", "-w/--warmup"), ("duration", "-d/--duration")] {
            if given(matches, id) {
                return Err(Error::usage(format!(
                    "--repeat runs a fixed amount of work, not for a time: {flag} does not apply"
                )));
            }
        }
    }
    let config = RunConfig {
        producers: producers(bench, cli)? as usize,
        consumers: match given(matches, "consumers") {
            true => cli.run.consumers as usize,
            false => bench.info().default_consumers,
        },
        warmup_secs: cli.run.warmup as u32,
        duration_secs: cli.run.duration as u32,
        tick_ms: crate::config::tick_from_env().map_err(Error::usage)?,
        affinity,
        repeat: cli.run.repeat,
        params,
        body,
        read_bytes: read_bytes(cli),
        pid_filter: cli.run.pid_filter,
        latency: cli.run.latency,
    };
    // Before the benchmark's own checks, which may ask for more of an option
    // that does not apply at all.
    bench.check_global_options(&config)?;
    let sweep = match &cli.run.sweep {
        Some(request) => Some(sweep_spec(request, bench, matches, &config)?),
        None => {
            bench.validate(&config)?;
            None
        }
    };
    Ok((
        BenchRequest {
            bench: bench.name(),
            config,
        },
        sweep,
    ))
}

/// `--body KIND` of one benchmark's timed run, KIND not the count: the count
/// runs beside it, interleaved as a sweep of two bodies, so that the body's
/// cost per hit is measured. `-s` is upstream's option and runs alone.
pub(super) fn body_comparison(request: &BenchRequest, cli: &Cli) -> Result<Option<SweepSpec>> {
    let body = match cli.body {
        Some(body) if body != Body::Count && cli.run.repeat.is_none() => body,
        _ => return Ok(None),
    };
    let Some(bench) = benches::find(request.bench).filter(|b| b.takes_bodies()) else {
        return Ok(None);
    };
    let spec = SweepSpec {
        param: SweepParam::Body,
        values: vec![Body::Count.index(), body.index()],
    };
    drop(sweep::points(&spec, bench, &request.config)?);
    Ok(Some(spec))
}

/// `--sweep` resolved against `bench`, every point checked as its own run
/// would be, before anything runs.
pub(super) fn sweep_spec(
    request: &SweepRequest,
    bench: &'static dyn Benchmark,
    matches: &ArgMatches,
    config: &RunConfig,
) -> Result<SweepSpec> {
    let spec = sweep::resolve(request, bench)?;
    if sweep::is_producers(&spec) {
        let flag = format!("--sweep {}", spec.param.name());
        applies::check(bench, RunOption::Producers, &flag)?;
    }
    // The swept value replaces the option's: both given is a mistake.
    let (set_by, flag) = match spec.param {
        SweepParam::Producers { .. } => (
            ["producers", "parallelism"]
                .into_iter()
                .find(|id| given(matches, id)),
            "-p/--producers (or --parallelism)".to_string(),
        ),
        SweepParam::Option(option) => (
            given(matches, option.long()).then_some(option.long()),
            format!("--{}", option.long()),
        ),
        SweepParam::Body => (
            (given(matches, "body") || given(matches, "stacktrace")).then_some("body"),
            "--body (or -s)".to_string(),
        ),
        SweepParam::Consumers => (
            given(matches, "consumers").then_some("consumers"),
            "-c/--consumers".to_string(),
        ),
    };
    if set_by.is_some() {
        return Err(Error::usage(format!(
            "--sweep {} sets each run's {}; drop {flag}",
            spec.param.name(),
            spec.param.name()
        )));
    }
    drop(sweep::points(&spec, bench, config)?);
    Ok(spec)
}

/// The outputs given, each with its target.
pub(super) fn outputs(matches: &ArgMatches) -> Outputs {
    let targets = export::FORMATS
        .iter()
        .filter_map(|exporter| {
            let path = matches.get_one::<PathBuf>(exporter.long())?.clone();
            let target = match exporter.takes_stdout() {
                true => output_target(path),
                false => OutputTarget::File(path),
            };
            Some((exporter.long(), target))
        })
        .collect();
    Outputs { targets }
}

pub(super) fn check_outputs(outputs: &Outputs) -> Result<()> {
    let on_stdout: Vec<&str> = outputs
        .targets
        .iter()
        .filter(|(_, target)| *target == OutputTarget::Stdout)
        .map(|(long, _)| *long)
        .collect();
    if let [first, second, ..] = on_stdout[..] {
        return Err(Error::usage(format!(
            "--{first} - and --{second} - both ask for standard output: only one may take it"
        )));
    }
    for (long, target) in &outputs.targets {
        if let (Some(exporter), OutputTarget::File(path)) = (export::format(long), target) {
            exporter.check_name(path).map_err(Error::usage)?;
        }
    }
    let targets: Vec<(String, OutputTarget)> = outputs
        .targets
        .iter()
        .map(|(long, target)| (format!("--{long}"), target.clone()))
        .collect();
    output::check_distinct(&targets)
}

pub(super) fn given_options(matches: &ArgMatches) -> Vec<(&'static str, OptionValue)> {
    benches::all_options()
        .into_iter()
        .filter_map(|o| match o {
            BenchOption::Flag(o) => matches
                .get_flag(o.long)
                .then_some((o.long, OptionValue::Flag(true))),
            BenchOption::Number(o) => matches
                .get_one::<u64>(o.long)
                .map(|&v| (o.long, OptionValue::Number(v))),
            // Leaked once per invocation: a value is plain `Copy` data.
            BenchOption::Text(o) => matches.get_one::<String>(o.long).map(|v| {
                let text: &'static str = Box::leak(v.clone().into_boxed_str());
                (o.long, OptionValue::Text(text))
            }),
        })
        .collect()
}
