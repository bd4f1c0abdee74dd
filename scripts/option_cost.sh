#!/usr/bin/env bash
# What a global option costs: each benchmark run without and with OPTION in
# alternating invocations (which one goes first alternates too), the median of
# the per-pair ratios (with / without).
#   PAIRS=5 scripts/option_cost.sh --pid-filter trig-uprobe-nop trig-uprobe-nop5
#   scripts/option_cost.sh -s trig-uprobe-nop trig-rawtp
# Two binaries instead of an option: OPTION=--binary=PATH runs PATH as "with".
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
pairs=${PAIRS:-5}
option=${1:?usage: option_cost.sh OPTION BENCHMARK...}
shift
prepare_bench

with_bin=$BENCH with_opt=("$option")
if [[ $option == --binary=* ]]; then
	with_bin=${option#--binary=}
	with_opt=()
fi

for bench in "$@"; do
	ratios=()
	for ((i = 0; i < pairs; i++)); do
		if ((i % 2)); then
			b=$("$with_bin" -q -w1 -d3 -a "${with_opt[@]}" "$bench" | summary_mean)
			a=$("$BENCH" -q -w1 -d3 -a "$bench" | summary_mean)
		else
			a=$("$BENCH" -q -w1 -d3 -a "$bench" | summary_mean)
			b=$("$with_bin" -q -w1 -d3 -a "${with_opt[@]}" "$bench" | summary_mean)
		fi
		ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", b / a}')")
		printf '  %-24s pair %d: without %9s, with %9s M/s, ratio %s\n' "$bench" "$i" "$a" "$b" "${ratios[-1]}" >&2
	done
	printf '%-24s with %s / without: median ratio %s over %d pairs\n' \
		"$bench" "$option" "$(printf '%s\n' "${ratios[@]}" | median)" "$pairs"
done
