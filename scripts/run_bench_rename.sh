#!/usr/bin/env bash
# One summary line per rename benchmark, as the kernel's run_bench_rename.sh:
# base, kprobe, kretprobe, rawtp, fentry, fexit (rename-*, -w2 -d5 -a), each
# "%-10s: <summary>". Arguments replace the default list (names without the
# rename- prefix). A benchmark this kernel cannot run says why on its line, and
# the script goes on. --markdown prints a Markdown table; --json DIR keeps one
# result file per benchmark in DIR, for `bench compare`. --kernels host,6.1,6.12
# prints one column per kernel (VMs of run_in_vm.sh); --runs N (or RUNS=N)
# runs them N times, interleaved, ending in bench's table.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

benchmarks=(base kprobe kretprobe rawtp fentry fexit)
parse_common_args "$@"
((${#ARGS[@]})) && benchmarks=("${ARGS[@]}")

read -r -a wd <<<"${WD:--w2 -d5}"
prepare_bench
if ((RUNS > 1)); then
	interleaved_table "${wd[@]}" -a -- "${benchmarks[@]/#/rename-}"
	finish
	exit
fi
LABEL_WIDTH=10
table_header benchmark "throughput (mean ± sd)"
for i in "${benchmarks[@]}"; do
	bench_line "$i" "rename-$i" "${wd[@]}" -a
done
finish
