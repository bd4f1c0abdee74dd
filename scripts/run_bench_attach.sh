#!/usr/bin/env bash
# What attaching and detaching probes costs: every attach-* benchmark at a few
# probe counts, one line each ("LABEL attach: X µs/probe, detach Y µs/probe,
# N of N fired"). Classic uprobes stop at 50: each one's detach waits for RCU
# grace periods (about 0.1 s each on 6.18 here). Arguments replace the default
# list of FAMILY=N1,N2 items (e.g. uprobe=1,10 uprobe-multi=50000).
# --markdown prints a Markdown table; --json DIR keeps one result file per
# line in DIR (attach-FAMILY-N.json), ready for `bench compare`. --kernels
# host,6.1,6.12 prints one column per kernel, each other kernel booted in a VM
# (run_in_vm.sh; under TCG the times are relative only). --runs N (or RUNS=N)
# runs N cycles of each and prints the mean ± between-run sd.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

items=(uprobe=1,10,50 uprobe-multi=1,100,10000,50000 usdt=1,100,10000,50000
	kprobe=10,100 kprobe-multi=10,1000 fentry=1)
parse_common_args "$@"
((${#ARGS[@]})) && items=("${ARGS[@]}")

repeat=()
((RUNS > 1)) && repeat=(--runs "$RUNS")
prepare_bench
table_header "benchmark" "attach, detach per probe; fired"
for item in "${items[@]}"; do
	family=${item%%=*}
	[[ $item == *=* ]] || { echo "$(basename "$0"): expected FAMILY=N1,N2, got '$item'" >&2; exit 2; }
	IFS=, read -r -a counts <<<"${item#*=}"
	for n in "${counts[@]}"; do
		JSON_NAME="attach-$family-$n" bench_line "$family $n attach" "attach-$family" \
			--attach-cnt "$n" "${repeat[@]}"
	done
done
finish
