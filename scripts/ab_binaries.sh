#!/usr/bin/env bash
# Two bench binaries, the same benchmarks, interleaved A B A B ..., and the
# median of the per-pair ratios new/old of each Summary's mean: the check that
# a refactor left every printed number where it was.
#   OLD=/path/to/old/bench NEW=target/release/bench PAIRS=5 scripts/ab_binaries.sh [NAME...]
# NAME defaults to a benchmark of each family. Options for bench go in ARGS
# (default "-q -w1 -d3 -a").
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

old=${OLD:?set OLD to the bench binary to compare against}
new=${NEW:-$root/target/release/bench}
pairs=${PAIRS:-5}
read -r -a args <<<"${ARGS:--q -w1 -d3 -a}"
names=("$@")
((${#names[@]})) || names=(trig-usermode-count trig-syscall-count trig-uprobe-nop trig-uretprobe-nop
	trig-uprobe-ret trig-usdt-nop trig-kernel-count trig-rawtp syscall-basic breakpoint-thread)

printf '%-24s %12s %12s %8s\n' benchmark old new new/old
for name in "${names[@]}"; do
	ratios=() olds=() news=()
	for ((i = 0; i < pairs; i++)); do
		# Alternate which goes first: the first of two back-to-back runs
		# tends to be the faster on these machines.
		if ((i % 2)); then
			b=$("$new" "${args[@]}" "$name" | summary_mean)
			a=$("$old" "${args[@]}" "$name" | summary_mean)
		else
			a=$("$old" "${args[@]}" "$name" | summary_mean)
			b=$("$new" "${args[@]}" "$name" | summary_mean)
		fi
		olds+=("$a") news+=("$b")
		ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", b / a}')")
	done
	printf '%-24s %12s %12s %8s\n' "$name" \
		"$(printf '%s\n' "${olds[@]}" | median)" "$(printf '%s\n' "${news[@]}" | median)" \
		"$(printf '%s\n' "${ratios[@]}" | median)"
done
