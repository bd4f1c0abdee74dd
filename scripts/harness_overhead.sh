#!/usr/bin/env bash
# What the harness costs, measured the way docs/performance.md says: each
# benchmark interleaved with a bare loop doing the same work, the median of the
# per-pair ratios; then syscall-count on 2 producers against 1, interleaved.
# The bare loops count nothing per call, so they are held against the
# benchmarks that do the same: trig-usermode-nocount (the nop target) and
# syscall-getpgid (getpgid(0)); trig-usermode-count and trig-syscall-count do
# the kernel runner's per-call counting besides.
#   PAIRS=5 scripts/harness_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
enter_root

prepare_bench
plain=$(plain_example plain_loop)

pairs_line "usermode-nocount / plain loop" \
	'json_mean "$BENCH" -q -w1 -d5 trig-usermode-nocount' '"$plain" nop 5 1'
pairs_line "syscall-getpgid / plain loop" \
	'json_mean "$BENCH" -q -w1 -d5 syscall-getpgid' '"$plain" getpgid 5 1'
pairs_line "syscall-count -p2 -a / -p1 -a" \
	'json_mean "$BENCH" -q -w1 -d5 -p2 -a trig-syscall-count' \
	'json_mean "$BENCH" -q -w1 -d5 -p1 -a trig-syscall-count'
