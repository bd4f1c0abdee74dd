//! Hostile command lines: whatever they hold, parsing never panics, and a
//! refusal is one sentence (and clap's indented tips) with the usage exit code.

use std::ffi::OsString;

use bench::cli::{self, Command};
use bench::error::{exit, Error};
use proptest::prelude::*;

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
            "--trig-batch-iters",
            "--breakpoints",
            "--threads",
            "--passive",
            "--active",
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
            "1000",
            "1001",
            "1024",
            "1025",
            "4096",
            "16384",
            "86400",
            "86401",
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
                prop_assert!((1..=1024).contains(&c.producers));
                prop_assert!(c.consumers <= 1024);
                prop_assert!((1..=86_400).contains(&c.duration_secs));
                prop_assert!(c.warmup_secs <= 86_400);
                let bench = bench::benches::find(request.benches[0].bench).expect("a parsed name is registered");
                for option in bench.options() {
                    let value = c.params.get(option);
                    prop_assert!(option.min <= value && value <= option.max);
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
