#!/usr/bin/env bash
# What a global option costs: each benchmark run without and with OPTION in
# alternating invocations (which one goes first alternates too), the median of
# the per-pair ratios (with / without).
#   PAIRS=5 scripts/option_cost.sh --pid-filter trig-uprobe-nop trig-uprobe-nop5
#   scripts/option_cost.sh -s trig-uprobe-nop trig-rawtp
# Two binaries instead of an option: OPTION=--binary=PATH runs PATH as "with".
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
option=${1:?usage: option_cost.sh OPTION BENCHMARK...}
shift
prepare_bench

with_bin=$BENCH with_opt=("$option")
if [[ $option == --binary=* ]]; then
	with_bin=${option#--binary=}
	with_opt=()
fi

for bench in "$@"; do
	pairs "$bench" 'json_mean "$with_bin" -q -w1 -d3 -a "${with_opt[@]}" "$bench"' \
		'json_mean "$BENCH" -q -w1 -d3 -a "$bench"'
	printf '%-24s with %s / without: median ratio %s over %d pairs\n' \
		"$bench" "$option" "$PAIR_RATIO" "${PAIRS:-5}"
done
