//! Which options of a run apply to which benchmark, as the command line
//! checks them: the answers come from the benchmarks' declarations
//! ([`crate::benches::applies`]); here they meet what was given.

use crate::benches::{self, body, Benchmark, ProducersAlias};
use crate::config::{Body, DEFAULT_READ_BYTES};
use crate::error::{Error, Result};

use super::args::{consumer_takers, Cli};

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
        let why = match (
            bench.info().workers.why_no_consumers(),
            bench.takes_bodies(),
        ) {
            (Some(why), true) => {
                format!("{why}; only --body ringbuf has consumers, to drain its events")
            }
            (why, _) => why.unwrap_or_default().to_string(),
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
    match &cli.run.sweep {
        Some(request) if request.param == "body" => request
            .values
            .iter()
            .filter_map(|&v| Body::from_index(v))
            .collect(),
        _ => vec![body],
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
        Some(n) if bench.producers_alias() == Some(ProducersAlias::Parallelism) => Ok(n),
        Some(_) => {
            let takers: Vec<&str> = benches::all()
                .filter(|b| b.producers_alias() == Some(ProducersAlias::Parallelism))
                .map(|b| b.name())
                .collect();
            Err(Error::usage(format!(
                "--parallelism is not an option of {}; use -p/--producers (it is taken by {})",
                bench.name(),
                takers.join(", ")
            )))
        }
    }
}
