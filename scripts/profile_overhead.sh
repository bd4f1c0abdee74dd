#!/usr/bin/env bash
# What `--profile` costs, measured the way docs/performance.md says: pairs of
# runs interleaved (the order alternating from pair to pair), the median of
# the per-pair ratios.
#   1. With OLD set to a bench built without frame pointers: this build
#      against it (new / old), for the benchmarks frame pointers could slow.
#   2. Sampling at --profile-freq (default 999 Hz): profiled / unprofiled.
#   OLD=/path/to/bench-without-fp PAIRS=5 SECS=5 FREQ=999 scripts/profile_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
pairs=${PAIRS:-5}
secs=${SECS:-5}
freq=${FREQ:-999}

prepare_bench

compare() { # label, command A (prints M/s), command B (prints M/s): A / B
	local label=$1 a=$2 b=$3 ratios=() ra rb
	for ((i = 0; i < pairs; i++)); do
		if ((i % 2 == 0)); then
			ra=$(eval "$a")
			rb=$(eval "$b")
		else
			rb=$(eval "$b")
			ra=$(eval "$a")
		fi
		ratios+=("$(awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.4f", a / b}')")
		printf '  %-40s pair %d: %8s vs %8s M/s  ratio %s\n' "$label" "$i" "$ra" "$rb" "${ratios[-1]}" >&2
	done
	printf '%-42s median ratio %s over %d pairs\n' "$label" "$(printf '%s\n' "${ratios[@]}" | median)" "$pairs"
}

if [[ -n ${OLD:-} ]]; then
	for bench in trig-usermode-count trig-syscall-count trig-uprobe-nop; do
		compare "$bench: frame pointers / none" \
			"\"$BENCH\" -q -w1 -d$secs $bench | summary_mean" \
			"\"$OLD\" -q -w1 -d$secs $bench | summary_mean"
	done
fi
for bench in trig-uprobe-nop trig-syscall-count trig-usermode-count; do
	compare "$bench: --profile-freq $freq / unprofiled" \
		"\"$BENCH\" -q -w1 -d$secs --profile --profile-freq $freq $bench | summary_mean" \
		"\"$BENCH\" -q -w1 -d$secs $bench | summary_mean"
done
