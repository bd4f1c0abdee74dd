#!/usr/bin/env bash
# What --latency costs and whether its times are right, measured the way
# docs/performance.md says: each benchmark's rate with and without --latency,
# interleaved pair by pair, the median of the per-pair ratios; then the p50 of
# trig-uprobe-nop against examples/plain_latency.rs, a plain loop timing each
# call the same way, alternated round by round on the same probe.
#   PAIRS=5 scripts/latency_cost.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
enter_root
PAIRS=${PAIRS:-5}

prepare_bench
plain=$(plain_example plain_latency)

for name in trig-uprobe-nop trig-syscall-count trig-usermode-count; do
	pairs_line "$name with --latency / without" \
		'json_mean "$BENCH" -q --latency -w1 -d3 "$name"' \
		'json_mean "$BENCH" -q -w1 -d3 "$name"'
done
"$plain" trig-uprobe-nop "$PAIRS"
