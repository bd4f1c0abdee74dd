#!/usr/bin/env bash
# The kernel's run_bench_local_storage_rcu_tasks_trace.sh: finds the RCU
# Tasks Trace kthread (pgrep rcu_tasks_trace_kthread; "error: Couldn't find
# rcu_tasks_trace_kthread" and exit 1 without it) and runs
# local-storage-tasks-trace quietly with --nr_procs 15000 sleepers,
# --kthread_pid that kthread and -d 600, printing the two SUMMARY lines:
# "SUMMARY tasks_trace grace period latency<TAB>avg X us<TAB>stddev Y us" and
# "SUMMARY ticks per tasks_trace grace period<TAB>avg T<TAB>stddev U". For a
# quick look NR_PROCS and DURATION replace 15000 and 600 (WD replaces the
# whole warm-up and duration, "-w1 -d600" by default). A kernel that refuses
# fentry programs or lacks the grace-period functions gets one "unsupported:
# <why>" line. --markdown prints a Markdown table; --json DIR keeps the result
# file in DIR; --kernels host,6.1,6.12 one column per kernel; --runs N (or
# RUNS=N): the means of N independent runs. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
WD=${WD:--w1 -d${DURATION:-600}}
script_args "$@"

kthread_pid=$(pgrep rcu_tasks_trace_kthread || true)
if [[ -z $kthread_pid ]]; then
	echo "error: Couldn't find rcu_tasks_trace_kthread"
	exit 1
fi

prepare_bench
bench_run local-storage-tasks-trace "${WD_ARGS[@]}" -q --nr_procs "${NR_PROCS:-15000}" \
	--kthread_pid "$kthread_pid"
if [[ $BENCH_VERDICT != ok ]]; then
	summary_row local-storage-tasks-trace "$BENCH_VERDICT"
elif ((MARKDOWN || ROWS)); then
	table_header figure "avg, stddev"
	while IFS=$'\t' read -r what avg stddev; do
		summary_row "${what#SUMMARY }" "$avg, $stddev"
	done < <(grep '^SUMMARY ' <<<"$BENCH_OUT")
else
	grep '^SUMMARY ' <<<"$BENCH_OUT"
fi
finish
