#!/usr/bin/env bash
# The kernel's run_bench_bpf_hashmap_full_update.sh: bpf-hashmap-full-update
# with one producer per CPU but one (at least one), pinned (-a), -w3 -d10 as
# the kernel's run_common.sh runs it, and bench's whole output, its
# "N:hash_map_full_perf X events per sec" lines (one per CPU that ran the
# updates) before the Summary. WD replaces the warm-up and duration. --markdown
# prints a Markdown table of the per-CPU lines; --json DIR keeps the result
# file in DIR; --kernels host,6.1,6.12 one column per kernel (a row per CPU);
# --runs N (or RUNS=N): N independent runs. It takes no other argument.
set -eufo pipefail
WD=${WD:--w3 -d10}
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
script_args "$@"

nr_threads=$(($(nproc) - 1))
((nr_threads >= 1)) || nr_threads=1
prepare_bench
bench_run bpf-hashmap-full-update "${WD_ARGS[@]}" -a -p "$nr_threads"
if [[ $BENCH_VERDICT != ok ]]; then
	summary_row bpf-hashmap-full-update "$BENCH_VERDICT"
elif ((MARKDOWN || ROWS)); then
	table_header cpu "hash_map_full_perf"
	sed -n -e 's/^\([0-9]*\):hash_map_full_perf \(.*\)$/\1 \2/p' <<<"$BENCH_OUT" |
		while read -r cpu rate; do
			summary_row "cpu$cpu" "$rate"
		done
else
	printf '%s\n' "$BENCH_OUT"
fi
finish
