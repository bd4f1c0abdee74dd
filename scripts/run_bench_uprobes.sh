#!/usr/bin/env bash
# One summary line per uprobe and USDT benchmark, as the kernel's
# run_bench_uprobes.sh (7.3's list: usermode-count, syscall-count,
# {uprobe,uretprobe}-{nop,push,ret,nop10}, usdt-nop, usdt-nop10). On a kernel
# that cannot probe the 10-byte nop (bench --probe says so: before 7.2) the
# nop5 rows stand in for the nop10 ones, and one line first says why.
# Arguments replace the default list (names without the trig- prefix);
# --list prints the list this kernel gets (and that line) and runs nothing. --markdown prints a Markdown table; --json DIR keeps one result
# file per benchmark in DIR, ready for `bench compare`. --kernels host,6.1,6.12
# prints one column per kernel, each other kernel booted in a VM (run_in_vm.sh).
# --runs N (or RUNS=N) runs them all N times, interleaved, and prints bench's
# table with 95 % intervals and each one's change from the first.
# The last column says how the kernel handled each probe: emulated,
# single-stepped or optimized.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

list_only=0
[[ ${1:-} == --list ]] && list_only=1 && shift
parse_common_args "$@"
read -r -a wd <<<"${WD:--w2 -d5}"
prepare_bench

# The kernel runner's list, the 10-byte nop's rows where this kernel probes
# it (asked of bench, not read from the version); else the 5-byte nop's, and
# NOP10_ABSENT says why.
nop=nop10 NOP10_ABSENT=
if ((${#ARGS[@]} == 0)); then
	verdict=$("$BENCH" --probe trig-uprobe-nop10 2>&1 |
		awk '$1 == "trig-uprobe-nop10" { $1 = ""; sub(/^ +/, ""); print }' || true)
	if [[ $verdict != ok* ]]; then
		nop=nop5
		NOP10_ABSENT="no nop10 rows, the nop5 ones stand in: trig-uprobe-nop10 ${verdict:-has no verdict from bench --probe}"
	fi
fi
benchmarks=(usermode-count syscall-count {uprobe,uretprobe}-{nop,push,ret,$nop} usdt-nop "usdt-$nop")
((${#ARGS[@]})) && benchmarks=("${ARGS[@]}")
if ((list_only)); then
	[[ -n $NOP10_ABSENT ]] && printf '%s\n' "$NOP10_ABSENT"
	printf '%s\n' "${benchmarks[@]}"
	exit 0
fi
if [[ -n $NOP10_ABSENT ]]; then
	if ((ROWS)); then
		printf 'nop10\t%s\n' "absent: ${NOP10_ABSENT#*: }"
	else
		printf '%s\n' "$NOP10_ABSENT"
	fi
fi
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
