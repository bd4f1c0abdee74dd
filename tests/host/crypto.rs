//! The crypto kfuncs' benchmarks, for real: every operation is one
//! encryption (or decryption) the BPF program counted, and what the kernel or
//! the cipher refuses is said in one line.

use crate::common::*;

const USAGE: i32 = 2;
const UNSUPPORTED: i32 = 4;

#[test]
fn every_operation_is_one_counted_encryption() {
    let _lock = probe_lock();
    for bench in ["crypto-encrypt", "crypto-decrypt"] {
        for (calls, len, producers) in [("1", "16", "1"), ("37", "32", "1"), ("301", "256", "2")] {
            let out = run(&[
                "-q",
                "-r",
                calls,
                "-p",
                producers,
                "--crypto-len",
                len,
                bench,
            ]);
            assert_eq!(out.code, 0, "{bench}: {}", out.stderr);
            // 64 repetitions of the program per BPF_PROG_TEST_RUN call.
            let expected = calls.parse::<u64>().unwrap() * 64;
            assert_eq!(
                fixed_hits(&out.stdout),
                expected,
                "{bench}:\n{}",
                out.stdout
            );
            assert_has(
                &out.stdout,
                &format!("# Executed {calls} calls of {bench} ({expected} operations)"),
            );
        }
    }
}

#[test]
fn timed_runs_print_the_kernel_runners_lines() {
    let _lock = probe_lock();
    let out = bench_ok("-w0 -d1 crypto-encrypt");
    let iter = out.stdout.lines().find(|l| l.starts_with("Iter ")).unwrap();
    assert!(
        iter.contains(": hits ") && iter.contains(", drops "),
        "{iter}"
    );
    let last = out.stdout.lines().last().unwrap();
    assert!(last.starts_with("Summary: hits "), "{last}");
}

#[test]
fn what_the_cipher_or_the_kernel_refuses_is_said() {
    let _lock = probe_lock();
    let out = bench("-q -r 1 --crypto-cipher nosuch(aes) crypto-encrypt");
    assert_one_clear_line(&out, UNSUPPORTED, "unsupported: crypto-encrypt: ");
    assert_has(&out.stderr, "nosuch(aes)");
    // ecb(aes) takes whole 16-byte blocks.
    let out = bench("-q -r 1 --crypto-len 20 crypto-decrypt");
    assert_one_clear_line(
        &out,
        USAGE,
        "error: bpf_crypto_decrypt refused a 20-byte packet",
    );
    // The range says both ends, and why: 4c30c63 said "between 1 and 256"
    // and refused 1 to 13 with another sentence.
    for len in [13, 257] {
        let out = bench(&format!("-q -r 1 --crypto-len {len} crypto-encrypt"));
        assert_one_clear_line(
            &out,
            USAGE,
            &format!(
                "--crypto-len must be between 14 and 256 for crypto-encrypt (a tc program's test \
                 run takes a packet of an Ethernet header at least, and the destination buffer \
                 holds 256 bytes), got {len}"
            ),
        );
    }
    for line in [
        "-q -r 1 --crypto-cipher 0123456789abcdef0123456789abcdef0 crypto-encrypt",
        "-q -r 1 --crypto-len 16 trig-kernel-count",
    ] {
        assert_eq!(bench(line).code, USAGE, "{line}");
    }
}
