#!/usr/bin/env bash
# The kernel's run_bench_strncmp.sh: strncmp-no-helper and strncmp-helper at
# each --cmp-str-len, a "no-helper-N  X ± Y M/s (drops ...)" line each
# (run_common.sh's summarize). LENS replaces the lengths (default the kernel
# script's: 1 8 64 512 2048 4095); WD the warm-up and duration (default
# "-w2 -d5"). --markdown prints a Markdown table; --json DIR keeps one result
# file per line in DIR; --kernels host,6.1,6.12 one column per kernel; --runs
# N (or RUNS=N): each line the mean of N independent runs. It takes no other
# argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
script_args "$@"
read -r -a lens <<<"${LENS:-1 8 64 512 2048 4095}"

prepare_bench
table_header case "hits (mean ± sd)"
for s in "${lens[@]}"; do
	for b in no-helper helper; do
		JSON_NAME=strncmp-$b-$s
		cut_line hits "$b-$s" "strncmp-$b" "${WD_ARGS[@]}" --cmp-str-len "$s"
	done
done
finish
