#!/usr/bin/env bash
# Two bench binaries, the same benchmarks, interleaved (which goes first
# alternating), and the median of the per-pair ratios new/old of each
# Summary's mean (M/s, read from --json -): the check that a refactor left
# every printed number where it was.
#   OLD=/path/to/old/bench NEW=target/release/bench PAIRS=5 scripts/ab_binaries.sh [NAME...]
# NAME defaults to a benchmark of each family. Options for bench go in ARGS
# (default "-q -w1 -d3 -a").
set -euo pipefail
# Read before lib.sh, which keeps its own ARGS (the run_bench_* scripts').
bench_args=${ARGS:--q -w1 -d3 -a}
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

old=${OLD:?set OLD to the bench binary to compare against}
new=${NEW:-$root/target/release/bench}
read -r -a args <<<"$bench_args"
names=("$@")
((${#names[@]})) || names=(trig-usermode-count trig-syscall-count trig-uprobe-nop trig-uretprobe-nop
	trig-uprobe-ret trig-usdt-nop trig-kernel-count trig-rawtp syscall-basic breakpoint-thread)

printf '%-24s %12s %12s %8s\n' benchmark old new new/old
for name in "${names[@]}"; do
	pairs "$name" 'json_mean "$new" "${args[@]}" "$name"' 'json_mean "$old" "${args[@]}" "$name"'
	printf '%-24s %12.4f %12.4f %8s\n' "$name" "$PAIR_B" "$PAIR_A" "$PAIR_RATIO"
done
