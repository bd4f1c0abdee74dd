#!/usr/bin/env bash
# The lpm-trie-* benchmarks (the kernel runner's bench_lpm_trie_map.c, Linux
# 6.17+; upstream ships no run script for them, so this one prints in the
# form of run_common.sh's): for each --nr_entries, a "nr_entries: N,
# prefix_len: P" subtitle, then one "NAME: throughput: X ± Y M ops/s,
# latency: Z ns/op" line (summarize_ops) per benchmark, in order noop,
# baseline, lookup, update, insert, delete, and free, whose line is in
# K ops/s and ms/op ("unsupported: ..." where the kernel refuses its
# fentry/fexit).
# NR_ENTRIES replaces the sizes (default 10000 100000 1000000), PREFIX_LEN
# the prefix length (default 32), RANDOM_KEYS=1 adds --random to the benchmarks
# that take it; WD the warm-up and duration (default "-w2 -d5"). --markdown
# prints a Markdown table; --json DIR keeps one result file per line in DIR;
# --kernels host,6.1,6.12 one column per kernel; --runs N (or RUNS=N): each
# line the mean of N independent runs. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
script_args "$@"
read -r -a sizes <<<"${NR_ENTRIES:-10000 100000 1000000}"
prefix_len=${PREFIX_LEN:-32}
random=()
((${RANDOM_KEYS:-0})) && random=(--random)

prepare_bench
table_header case "throughput, latency"
for n in "${sizes[@]}"; do
	opts=(--nr_entries "$n" --prefix_len "$prefix_len")
	((MARKDOWN || ROWS)) || printf '\t%s\n' "nr_entries: $n, prefix_len: $prefix_len"
	for op in noop baseline lookup update insert delete free; do
		JSON_NAME=lpm-trie-$op-$n
		label="$op: "
		((MARKDOWN || ROWS)) && label="$op nr_entries $n"
		case $op in
		insert | delete | free) cut_line ops "$label" "lpm-trie-$op" "${WD_ARGS[@]}" "${opts[@]}" ;;
		*) cut_line ops "$label" "lpm-trie-$op" "${WD_ARGS[@]}" "${opts[@]}" ${random[@]+"${random[@]}"} ;;
		esac
	done
	((MARKDOWN || ROWS)) || printf '\n'
done
finish
