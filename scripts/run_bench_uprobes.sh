#!/usr/bin/env bash
# One summary line per uprobe and USDT benchmark, as the kernel's
# run_bench_uprobes.sh. Arguments replace the default list (names without the
# trig- prefix). --markdown prints a Markdown table; --json DIR keeps one result
# file per benchmark in DIR, ready for `bench compare`. --kernels host,6.1,6.12
# prints one column per kernel, each other kernel booted in a VM (run_in_vm.sh).
# --runs N (or RUNS=N) runs them all N times, interleaved, and prints bench's
# table with 95 % intervals and each one's change from the first.
# The last column says how the kernel handled each probe: emulated,
# single-stepped or optimized.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

benchmarks=(usermode-count syscall-count {uprobe,uretprobe}-{nop,push,ret,nop5} usdt-nop usdt-nop5)
parse_common_args "$@"
((${#ARGS[@]})) && benchmarks=("${ARGS[@]}")

read -r -a wd <<<"${WD:--w2 -d5}"
prepare_bench
if ((RUNS > 1)); then
	interleaved_table "${wd[@]}" -a -- "${benchmarks[@]/#/trig-}"
	finish
	exit
fi
PROBE_PATH=1
table_header benchmark "throughput (mean ± sd)" "probe path"
for i in "${benchmarks[@]}"; do
	bench_line "$i" "trig-$i" "${wd[@]}" -a
done
finish
