//! Which options of a run apply to which benchmark, as the command line
//! checks them: the answers come from the benchmarks' declarations
//! ([`crate::benches::applies`]); here they meet what was given.

use clap::ArgMatches;

use crate::benches::{applies, body, Applies, Benchmark, RunOption};
use crate::config::{Body, DEFAULT_READ_BYTES};
use crate::error::{Error, Result};

use super::args::{consumer_takers, Cli};
use super::given;

/// The arguments of a run that not every benchmark takes, by clap id, with
/// the option of [`RunOption`] each one is and its name in a refusal. The
/// consumers, the body, `--latency` and `--pid-filter` are checked on the
/// configuration instead, where sweeps and the ringbuf body have their say.
const OPTION_ARGS: &[(&str, RunOption, &str)] = &[
    ("producers", RunOption::Producers, "-p/--producers"),
    ("parallelism", RunOption::Producers, "--parallelism"),
    ("affinity", RunOption::Affinity, "-a/--affinity"),
    ("prod_affinity", RunOption::Affinity, "--prod-affinity"),
    ("repeat", RunOption::Repeat, "-r/--repeat"),
    ("warmup", RunOption::Seconds, "-w/--warmup"),
    ("duration", RunOption::Seconds, "-d/--duration"),
    ("profile", RunOption::Profile, "--profile"),
    ("profile_freq", RunOption::Profile, "--profile-freq"),
];

/// Refuses, by name, each option given on the command line that does not
/// apply to `bench`.
pub(super) fn check_given(bench: &dyn Benchmark, matches: &ArgMatches) -> Result<()> {
    for &(id, option, flag) in OPTION_ARGS {
        if given(matches, id) {
            applies::check(bench, option, flag)?;
        }
    }
    Ok(())
}

/// Consumers go only to benchmarks that have them, or to the ringbuf body.
pub(super) fn check_consumers(bench: &dyn Benchmark, cli: &Cli, body: Body) -> Result<()> {
    let ringbuf_body = bench.takes_bodies() && bodies_in_play(cli, body).contains(&Body::Ringbuf);
    if bench.takes_bodies() {
        check_body_options(bench, cli, body)?;
    }
    if bench.has_consumers() || ringbuf_body {
        return Ok(());
    }
    if cli.run.consumers > 0 {
        // The kernel runner's triggers refuse consumers too.
        let why = match bench.info().applies(RunOption::Consumers) {
            Applies::No(Some(why)) => why,
            Applies::No(None) | Applies::Yes => "",
        };
        let why = match bench.takes_bodies() {
            true => format!("{why}; only --body ringbuf has consumers, to drain its events"),
            false => why.to_string(),
        };
        return Err(Error::usage(format!(
            "{} has no consumers ({why}), so -c/--consumers must be 0 ({})",
            bench.name(),
            consumer_takers()
        )));
    }
    if cli.run.cons_affinity.is_some() {
        return Err(Error::usage(format!(
            "{} has no consumers for --cons-affinity to pin ({})",
            bench.name(),
            consumer_takers()
        )));
    }
    Ok(())
}

/// `--read-bytes`, or its default.
pub(super) fn read_bytes(cli: &Cli) -> u32 {
    cli.run.read_bytes.map_or(DEFAULT_READ_BYTES, |n| n as u32)
}

/// `-s` is `--body stack`; both given must agree.
pub(super) fn chosen_body(cli: &Cli) -> Result<Body> {
    match (cli.run.stacktrace, cli.body) {
        (true, Some(body)) if body != Body::Stack => Err(Error::usage(format!(
            "-s/--stacktrace is --body stack: it does not combine with --body {}",
            body.name()
        ))),
        (true, _) => Ok(Body::Stack),
        (false, body) => Ok(body.unwrap_or_default()),
    }
}

/// The bodies a run of `cli` uses: the swept ones, or the one given.
pub(super) fn bodies_in_play(cli: &Cli, body: Body) -> Vec<Body> {
    match cli.run.sweep.as_ref().and_then(|request| request.bodies()) {
        Some(bodies) => bodies,
        None => vec![body],
    }
}

/// The options that go with a body: consumers drain the ringbuf body's ring
/// and nothing else; --read-bytes sizes the read-user body's read.
pub(super) fn check_body_options(bench: &dyn Benchmark, cli: &Cli, body: Body) -> Result<()> {
    let bodies = bodies_in_play(cli, body);
    let ringbuf = bodies.contains(&Body::Ringbuf);
    let name = bench.name();
    if ringbuf && cli.run.consumers == 0 {
        return Err(Error::usage(format!(
            "the ringbuf body's events are drained by consumer threads: give -c 1 (or more) \
             for {name} (a ring nobody drains measures drops, not a tracer)"
        )));
    }
    if cli.run.consumers > body::MAX_CONSUMERS as u64 {
        return Err(Error::usage(format!(
            "the ringbuf body takes at most {} consumers, got -c {}",
            body::MAX_CONSUMERS,
            cli.run.consumers
        )));
    }
    if cli.run.read_bytes.is_some() && !bodies.contains(&Body::ReadUser) {
        return Err(Error::usage(
            "--read-bytes sizes the read-user body's read: give --body read-user too",
        ));
    }
    Ok(())
}

/// -p, or --parallelism for the benchmarks that take that name for it.
pub(super) fn producers(bench: &dyn Benchmark, cli: &Cli) -> Result<u64> {
    match cli.run.parallelism {
        None => Ok(cli.run.producers),
        Some(n) if bench.info().applies(RunOption::Parallelism).yes() => Ok(n),
        Some(_) => {
            let takers = applies::takers(RunOption::Parallelism);
            Err(Error::usage(format!(
                "--parallelism is not an option of {}; use -p/--producers (it is taken by {})",
                bench.name(),
                takers.join(", ")
            )))
        }
    }
}
