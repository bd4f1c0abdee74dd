#!/usr/bin/env bash
# The kernel's run_bench_local_storage.sh: "Hashmap Control", then "Local
# Storage", each under its underlined header; a "num keys: N" subtitle and a
# "hashmap (control) sequential    get: " line per --hashmap_nr_keys_used (one
# map), a "num_maps: N" subtitle and the sequential and interleaved get lines
# per --nr_maps, each "hits throughput: X ± Y M ops/s, hits latency: Z ns/op,
# important_hits throughput: A ± B M ops/s" as run_common.sh's
# summarize_local_storage cuts it. NUM_KEYS and NR_MAPS replace the lists
# (default the kernel script's: 10 1000 10000 100000 4194304 keys, 1 10 16 17
# 24 32 100 1000 maps); WD the warm-up and duration (default "-w1 -d5", the
# runner's defaults, which the kernel script keeps). Each control run first
# fills a 4194304-key hash map, a few seconds. --markdown prints a Markdown
# table; --json DIR keeps one result file per line in DIR; --kernels
# host,6.1,6.12 one column per kernel; --runs N (or RUNS=N): each line the
# mean of N independent runs. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
WD=${WD:--w1 -d5} script_args "$@"
read -r -a num_keys <<<"${NUM_KEYS:-10 1000 10000 100000 4194304}"
read -r -a nr_maps <<<"${NR_MAPS:-1 10 16 17 24 32 100 1000}"

# The kernel script's header: the title, underlined.
header() {
	((MARKDOWN || ROWS)) && return 0
	printf '\n%s\n%s\n' "$1" "${1//?/=}"
}

subtitle() {
	((MARKDOWN || ROWS)) || printf '\t%s\n' "$1"
}

# local_storage_line LABEL NAME [bench options...]: the three figures of the
# Summary line, cut as run_common.sh's local_storage cuts them.
local_storage_line() {
	local label=$1 summary
	shift
	bench_run "$@"
	if [[ $BENCH_VERDICT != ok ]]; then
		summary_row "$label" "$BENCH_VERDICT"
		return
	fi
	summary=$(tail -n1 <<<"$BENCH_OUT")
	field() { sed -E "s/.*$1 +([0-9.]+ $2).*/\1/" <<<"$summary"; }
	summary_row "$label" "hits throughput: $(field ' hits throughput' '± [0-9.]+ M ops\/s'), hits latency: $(field ' hits latency' 'ns\/op'), important_hits throughput: $(field 'important_hits throughput' '± [0-9.]+ M ops\/s')"
}

# The label: the kernel script's, or in a table the case.
label() { # kernel-script-label table-label
	if ((MARKDOWN || ROWS)); then echo "$2"; else echo "$1"; fi
}

prepare_bench
table_header case "hits throughput, hits latency, important_hits throughput"
header "Hashmap Control"
for i in "${num_keys[@]}"; do
	subtitle "num keys: $i"
	JSON_NAME=local-storage-cache-hashmap-control-keys$i
	local_storage_line "$(label "hashmap (control) sequential    get: " "hashmap-control keys $i")" \
		local-storage-cache-hashmap-control "${WD_ARGS[@]}" --nr_maps 1 --hashmap_nr_keys_used "$i"
	((MARKDOWN || ROWS)) || printf '\n'
done

header "Local Storage"
for i in "${nr_maps[@]}"; do
	subtitle "num_maps: $i"
	JSON_NAME=local-storage-cache-seq-get-maps$i
	local_storage_line "$(label "local_storage cache sequential  get: " "seq-get nr_maps $i")" \
		local-storage-cache-seq-get "${WD_ARGS[@]}" --nr_maps "$i"
	JSON_NAME=local-storage-cache-int-get-maps$i
	local_storage_line "$(label "local_storage cache interleaved get: " "int-get nr_maps $i")" \
		local-storage-cache-int-get "${WD_ARGS[@]}" --nr_maps "$i"
	((MARKDOWN || ROWS)) || printf '\n'
done
finish
