#!/usr/bin/env bash
# The kernel's run_bench_htab_mem.sh: htab-mem for each use case (overwrite,
# batch_add_batch_del, add_del_on_diff_cpu) with 8 producers (-p8, PRODUCERS
# replaces it: an even number) and pinned threads (-a), first on a
# preallocated map ("preallocated"), then on one whose elements come from the
# BPF memory allocator ("normal bpf ma"); a "NAME  per-prod-op: X ± Yk/s, avg
# mem: A ± BMiB, peak mem: CMiB" line each, as the kernel's script cuts the
# Summary. bench's memory is the map's own (its fdinfo memlock), not a memory
# cgroup's (docs/upstream-parity.md). WD sets warm-up and duration (default
# "-w2 -d5"). --markdown prints Markdown tables; --json DIR keeps one result
# file per line in DIR; --kernels host,6.1,6.12 one column per kernel; --runs
# N (or RUNS=N): each line the mean of N independent runs (its peak "n/a").
# It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
script_args "$@"
producers=${PRODUCERS:-8}

# htab_mem_line SECTION USE-CASE [bench options...]: one use case's line.
htab_mem_line() {
	local section=$1 use_case=$2 summary label=$2 ops mem peak
	shift 2
	JSON_NAME=htab-mem-$section-$use_case
	((MARKDOWN || ROWS)) && label="$section $use_case"
	bench_run htab-mem "${WD_ARGS[@]}" -a -p "$producers" --use-case "$use_case" "$@"
	if [[ $BENCH_VERDICT != ok ]]; then
		summary_row "$label" "$BENCH_VERDICT"
		return
	fi
	summary=$(tail -n1 <<<"$BENCH_OUT")
	ops=$(sed -E 's/.* per-prod-op +([0-9]+\.[0-9]+ ± +[0-9]+\.[0-9]+k\/s).*/\1/' <<<"$summary")
	mem=$(sed -E 's/.* memory usage +([0-9]+\.[0-9]+ ± +[0-9]+\.[0-9]+MiB).*/\1/' <<<"$summary")
	peak=$(sed -E -n 's/.* peak memory usage +([0-9]+\.[0-9]+MiB).*/\1/p' <<<"$summary")
	summary_row "$label" "per-prod-op: $ops, avg mem: $mem, peak mem: ${peak:-n/a}"
}

section() { # title, bench options...
	local title=$1 use_case
	shift
	if ((MARKDOWN && !ROWS)); then
		printf '\n### %s\n\n' "$title"
	elif ((!ROWS)); then
		printf '\n%s\n%s\n' "$title" "$(sed 's/./=/g' <<<"$title")"
	fi
	table_header case "per-prod-op, avg mem, peak mem"
	for use_case in overwrite batch_add_batch_del add_del_on_diff_cpu; do
		htab_mem_line "$title" "$use_case" "$@"
	done
}

prepare_bench
section preallocated --preallocated
section "normal bpf ma"
finish
