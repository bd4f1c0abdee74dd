#!/usr/bin/env bash
# The two tables of the hw_breakpoint work, on this machine: thread creation
# and join with 0 and 4 inheritable breakpoints, and toggling a breakpoint with
# no threads, N passive and N active threads; slowdowns against the first row.
# N scales with the CPU count as in the seeds (parallelism CPUs/2, 20 threads a
# batch; 2xCPUs passive, CPUs-1 active). Paste the output into a commit message.
# --markdown prints Markdown tables; --json DIR keeps each run's result in DIR.
# --kernels host,6.1,6.12 prints the tables of each kernel in turn (VMs of run_in_vm.sh).
# --runs N (or RUNS=N): each row is the mean of N independent runs, ± the
# between-run sd. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
parse_common_args "$@"
((${#ARGS[@]} == 0)) || { echo "$(basename "$0"): unexpected argument ${ARGS[0]} (it runs its two tables, and takes only --markdown, --json, --kernels and --runs)" >&2; exit 2; }

cpus=$(nproc)
parallelism=$((cpus / 2 > 0 ? cpus / 2 : 1))
threads=20
passive=$((2 * cpus))
active=$((cpus - 1 > 0 ? cpus - 1 : 1))
read -r -a timing <<<"${WD:--w1 -d5}"
((RUNS > 1)) && timing+=(--runs "$RUNS")

# measure FILE-NAME BENCHMARK [options...]: sets USECS to usecs/op "mean ± sd"
# of one run, or to why there is none.
measure() {
	JSON_NAME=$1
	shift
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
	if ((MARKDOWN)); then
		printf '| %s | %s | %s |\n' "$1" "$2" "$slowdown"
	else
		printf '%-16s %24s %10s\n' "$1" "$2" "$slowdown"
	fi
}

header() { # first column name
	if ((MARKDOWN)); then
		table_header "$1" usecs/op slowdown
	else
		printf '%-16s %24s %10s\n' "$1" usecs/op slowdown
	fi
}

prepare_bench
printf 'breakpoint-thread: parallelism %d, %d threads per batch, %d CPUs\n' "$parallelism" "$threads" "$cpus"
header breakpoints
measure thread-b0 breakpoint-thread -b 0 -p "$parallelism" -t "$threads"
base=$USECS
row 0 "$base" "${base%% *}"
measure thread-b4 breakpoint-thread -b 4 -p "$parallelism" -t "$threads"
row 4 "$USECS" "${base%% *}"

printf '\nbreakpoint-enable: one breakpoint toggled, %d CPUs\n' "$cpus"
header threads
measure enable breakpoint-enable --passive 0 --active 0
base=$USECS
row none "$base" "${base%% *}"
measure enable-passive breakpoint-enable --passive "$passive" --active 0
row "$passive passive" "$USECS" "${base%% *}"
measure enable-active breakpoint-enable --passive 0 --active "$active"
row "$active active" "$USECS" "${base%% *}"
finish
