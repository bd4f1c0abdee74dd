//! Hostile command lines: whatever they hold, parsing never panics, and a
//! refusal is one sentence (and clap's indented tips) with the usage exit code.

use std::ffi::OsString;

use bench::benches;
use bench::cli::{self, Command};
use bench::config::{BenchOption, MAX_RUNS, MAX_SECONDS, MAX_THREADS};
use bench::error::{exit, Error};
use proptest::prelude::*;

/// The limits the library enforces, and one past each: the global ones and
/// every benchmark option's range.
fn limits() -> Vec<String> {
    let mut limits = vec![MAX_THREADS, MAX_SECONDS, MAX_RUNS];
    for option in benches::all_options() {
        if let BenchOption::Number(o) = option {
            limits.extend([o.min, o.max]);
        }
    }
    limits
        .into_iter()
        .flat_map(|n| [n.to_string(), (n + 1).to_string()])
        .collect()
}

/// Every benchmark option, as typed on a command line.
fn option_flags() -> Vec<String> {
    benches::all_options()
        .iter()
        .map(|o| format!("--{}", o.long()))
        .collect()
}

/// Pieces of command lines: real flags, numbers at and past their limits,
/// benchmark names, junk, unicode and empty strings.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "-w",
            "-d",
            "-p",
            "-c",
            "-a",
            "-r",
            "-q",
            "-v",
            "-l",
            "-b",
            "-t",
            "--warmup",
            "--duration",
            "--producers",
            "--consumers",
            "--affinity",
            "--prod-affinity",
            "--cons-affinity",
            "--repeat",
            "--parallelism",
            "--sweep",
            "--plot",
            "--json",
            "--csv",
            "--probe",
            "--list",
            "--",
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "0",
            "1",
            "4",
            "5",
            "16384",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "1e3",
            "0x10",
            " 3",
            "",
            "0-1",
            "1-0",
            "0,1",
            "0-4095",
            "producers=1,2",
            "producers=0..3",
            "breakpoints=0..9",
            "trig-batch-iters=1..3",
            "=",
            "..",
        ])
        .prop_map(str::to_string),
        prop::sample::select(option_flags()),
        prop::sample::select(limits()),
        prop::sample::select(vec![
            "trig-uprobe-nop",
            "trig-rawtp",
            "breakpoint-thread",
            "breakpoint-enable",
            "syscall-basic",
            "trig-kprobe",
            "compare",
            "uprobe-nop",
        ])
        .prop_map(str::to_string),
        any::<String>(),
        "[a-z0-9=,.-]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn parsing_never_panics_and_refuses_in_one_sentence(words in prop::collection::vec(word(), 0..7)) {
        let args = std::iter::once(OsString::from("bench")).chain(words.iter().map(OsString::from));
        match cli::parse(args) {
            Ok(Command::Run(request)) => {
                let c = &request.benches[0].config;
                prop_assert!((1..=MAX_THREADS).contains(&(c.producers as u64)));
                prop_assert!(c.consumers as u64 <= MAX_THREADS);
                prop_assert!((1..=MAX_SECONDS).contains(&u64::from(c.duration_secs)));
                prop_assert!(u64::from(c.warmup_secs) <= MAX_SECONDS);
                let bench = benches::find(request.benches[0].bench).expect("a parsed name is registered");
                for option in bench.options() {
                    if let BenchOption::Number(option) = option {
                        let value = c.params.number(option);
                        prop_assert!(option.min <= value && value <= option.max);
                    }
                }
            }
            Ok(_) => {}
            Err(err) => {
                let message = err.to_string();
                prop_assert!(!message.is_empty());
                // One sentence; clap's tips and the names of missing
                // arguments follow it on indented lines.
                for line in message.lines().skip(1) {
                    prop_assert!(line.starts_with("  "), "{:?}: {}", words, message);
                }
                prop_assert!(matches!(err, Error::Usage(_)), "{:?}: {:?}", words, err);
                prop_assert_eq!(err.exit_code(), exit::USAGE);
            }
        }
    }
}
