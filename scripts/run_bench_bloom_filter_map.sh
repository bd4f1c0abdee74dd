#!/usr/bin/env bash
# The kernel's run_bench_bloom_filter_map.sh. First "Bloom filter map": for
# each value size, thread count and hash count a "value_size: V bytes, #
# threads: T, # hashes: H" subtitle, then per --nr_entries an "N entries -"
# line and bloom-lookup's and bloom-update's "X ± Y M/s (drops ...)"
# (run_common.sh's summarize) and bloom-false-positive's "P%"
# (summarize_percentage). Then "Hashmap without bloom filter vs. hashmap with
# bloom filter": per value size and hash count, hashmap-without-bloom's and
# hashmap-with-bloom's total operations on 8 threads (summarize_total). Every
# run pinned (-a), as upstream's RUN_BENCH. VALUE_SIZES, THREADS, HASHES and
# ENTRIES replace the lists (default the kernel script's: 2 4 8 16 40 bytes,
# 1 4 8 12 16 threads, 1 to 10 hashes, 10000 to 5000000 entries: thousands of
# runs); WD the warm-up and duration (default "-w2 -d5"). --markdown prints a
# Markdown table; --json DIR keeps one result file per line in DIR; --kernels
# host,6.1,6.12 one column per kernel; --runs N (or RUNS=N): each line the
# mean of N independent runs. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
script_args "$@"
read -r -a value_sizes <<<"${VALUE_SIZES:-2 4 8 16 40}"
read -r -a threads <<<"${THREADS:-1 4 8 12 16}"
read -r -a hashes <<<"${HASHES:-1 2 3 4 5 6 7 8 9 10}"
read -r -a entries <<<"${ENTRIES:-10000 50000 75000 100000 250000 500000 750000 1000000 2500000 5000000}"

# header TITLE: run_common.sh's header, in plain text only.
header() {
	((MARKDOWN || ROWS)) && return 0
	printf '\n%s\n' "$1"
	printf '%*s\n' "${#1}" '' | tr ' ' '='
}

# plain TEXT: printed in plain text only (subtitles, entry lines, tabs).
plain() {
	((MARKDOWN || ROWS)) || printf '%b' "$1"
}

prepare_bench
table_header case "summary"
header "Bloom filter map"
for v in "${value_sizes[@]}"; do
	for t in "${threads[@]}"; do
		for h in "${hashes[@]}"; do
			plain "\tvalue_size: $v bytes, # threads: $t, # hashes: $h\n"
			for e in "${entries[@]}"; do
				# shellcheck disable=SC2059 # upstream's grouping format
				plain "$(printf "%'d entries -" "$e")\n"
				opts=("${WD_ARGS[@]}" -a -p "$t" --nr_hash_funcs "$h" --nr_entries "$e" --value_size "$v")
				tag="v$v p$t h$h e$e"
				for step in "hits Lookups bloom-lookup" "hits Updates bloom-update" \
					"percentage False bloom-false-positive"; do
					read -r kind what name <<<"$step"
					case $what in
					Lookups) label="Lookups, total operations: " ;;
					Updates) label="Updates, total operations: " ;;
					False) label="False positive rate: " ;;
					esac
					((MARKDOWN || ROWS)) && label="$name $tag"
					JSON_NAME="$name-$tag"
					JSON_NAME=${JSON_NAME// /-}
					plain '\t'
					cut_line "$kind" "$label" "$name" "${opts[@]}"
				done
			done
			plain '\n'
		done
	done
done

header "Hashmap without bloom filter vs. hashmap with bloom filter (throughput, 8 threads)"
for v in "${value_sizes[@]}"; do
	for h in "${hashes[@]}"; do
		plain "\tvalue_size: $v, # hashes: $h\n"
		for e in "${entries[@]}"; do
			# shellcheck disable=SC2059 # upstream's grouping format
			plain "$(printf "%'d entries -" "$e")\n"
			opts=("${WD_ARGS[@]}" -a -p 8 --nr_hash_funcs "$h" --nr_entries "$e" --value_size "$v")
			tag="v$v p8 h$h e$e"
			for name in hashmap-without-bloom hashmap-with-bloom; do
				case $name in
				hashmap-without-bloom) label="Hashmap without bloom filter: " ;;
				*) label="Hashmap with bloom filter: " ;;
				esac
				((MARKDOWN || ROWS)) && label="$name $tag"
				JSON_NAME="$name-$tag"
				JSON_NAME=${JSON_NAME// /-}
				plain '\t'
				cut_line total "$label" "$name" "${opts[@]}"
			done
		done
		plain '\n'
	done
done
finish
