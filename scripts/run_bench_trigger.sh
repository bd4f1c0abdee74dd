#!/usr/bin/env bash
# One summary line per trigger benchmark, as the kernel's run_bench_trigger.sh.
# Arguments replace the default list (names without the trig- prefix);
# PROD_CNT sets the producer count. A benchmark this kernel cannot run says why
# on its line, and the script goes on. --markdown prints a Markdown table;
# --json DIR keeps one result file per benchmark in DIR, for `bench compare`.
# --kernels host,6.1,6.12 prints one column per kernel (VMs of run_in_vm.sh);
# --runs N (or RUNS=N) runs them N times, interleaved, ending in bench's table.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

benchmarks=(usermode-count kernel-count syscall-count fentry fexit fmodret
	rawtp tp kprobe kprobe-multi kretprobe kretprobe-multi)
parse_common_args "$@"
((${#ARGS[@]})) && benchmarks=("${ARGS[@]}")
prod_cnt=${PROD_CNT:-1}

read -r -a wd <<<"${WD:--w2 -d5}"
prepare_bench
if ((RUNS > 1)); then
	interleaved_table "${wd[@]}" -a -p"$prod_cnt" -- "${benchmarks[@]/#/trig-}"
	finish
	exit
fi
table_header benchmark "throughput (mean ± sd)"
for i in "${benchmarks[@]}"; do
	bench_line "$i" "trig-$i" "${wd[@]}" -a -p"$prod_cnt"
done
finish
