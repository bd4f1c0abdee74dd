#!/usr/bin/env bash
# The two tables of the hw_breakpoint work, on this machine: thread creation
# and join with 0 and 4 inheritable breakpoints, and toggling a breakpoint with
# no threads, N passive and N active threads; slowdowns against the first row.
# N scales with the CPU count as in the seeds (parallelism CPUs/2, 20 threads a
# batch; 2xCPUs passive, CPUs-1 active). Paste the output into a commit message.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

cpus=$(nproc)
parallelism=$((cpus / 2 > 0 ? cpus / 2 : 1))
threads=20
passive=$((2 * cpus))
active=$((cpus - 1 > 0 ? cpus - 1 : 1))
timing=(-w1 -d5)

# Sets USECS to usecs/op "mean ± sd" of one run, or to why there is none.
measure() {
	bench_run "$@" "${timing[@]}" -q
	if [[ $BENCH_VERDICT == ok ]]; then
		USECS=$(tail -n1 <<<"$BENCH_OUT" | sed -e 's/.*usecs\/op *\([0-9.]*\) ± \([0-9.]*\).*/\1 ± \2/')
	else
		USECS=$BENCH_VERDICT
	fi
}

row() { # label, "mean ± sd", baseline mean
	local slowdown=-
	[[ $2 == *±* && $3 == [0-9]* ]] && slowdown=$(awk -v a="${2%% *}" -v b="$3" 'BEGIN {printf "%.2fx", a / b}')
	printf '%-16s %24s %10s\n' "$1" "$2" "$slowdown"
}

prepare_bench
printf 'breakpoint-thread: parallelism %d, %d threads per batch, %d CPUs\n' "$parallelism" "$threads" "$cpus"
printf '%-16s %24s %10s\n' breakpoints usecs/op slowdown
measure breakpoint-thread -b 0 -p "$parallelism" -t "$threads"
base=$USECS
row 0 "$base" "${base%% *}"
measure breakpoint-thread -b 4 -p "$parallelism" -t "$threads"
row 4 "$USECS" "${base%% *}"

printf '\nbreakpoint-enable: one breakpoint toggled, %d CPUs\n' "$cpus"
printf '%-16s %24s %10s\n' threads usecs/op slowdown
measure breakpoint-enable --passive 0 --active 0
base=$USECS
row none "$base" "${base%% *}"
measure breakpoint-enable --passive "$passive" --active 0
row "$passive passive" "$USECS" "${base%% *}"
measure breakpoint-enable --passive 0 --active "$active"
row "$active active" "$USECS" "${base%% *}"
finish
