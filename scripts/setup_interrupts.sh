#!/usr/bin/env bash
# How long bench takes to stop after Ctrl-C in the middle of its longest
# set-ups, on an idle CPU: the promise of docs/exit-codes.md (within a second)
# measured where it is made. Each line below is started, sent SIGINT once its
# set-up has run for the time given, and timed from the signal to its exit;
# RUNS times each (default 5), then the median and the largest. The host test
# (tests/host/limits.rs) runs the same set-ups and allows five times the
# promise, so that a loaded machine does not fail the suite.
#   RUNS=5 scripts/setup_interrupts.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
case ${1-} in
'') ;;
-h | --help) usage; exit 0 ;;
*) echo "setup_interrupts: it takes no arguments (RUNS=N in the environment sets the runs)" >&2; exit 2 ;;
esac
enter_root
prepare_bench
runs=${RUNS:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "setup_interrupts: RUNS must be a positive whole number" >&2; exit 2; }

out=$(mktemp)
pid=
# Nothing left running when the script is stopped itself.
trap '[[ -n $pid ]] && kill -INT "$pid" 2>/dev/null; rm -f "$out"' EXIT

# stop_time AFTER_SECS BENCH_ARGS...: seconds from the SIGINT to the exit.
stop_time() {
	local after=$1
	shift
	"$BENCH" "$@" >"$out" 2>&1 &
	pid=$!
	until grep -q "Setting up benchmark" "$out"; do
		kill -0 "$pid" 2>/dev/null || { cat "$out" >&2; echo "setup_interrupts: bench $* ended before its set-up" >&2; exit 1; }
		sleep 0.01
	done
	sleep "$after"
	local sent
	sent=$(date +%s.%N)
	kill -INT "$pid"
	local rc=0
	wait "$pid" || rc=$?
	pid=
	((rc == 130)) || { cat "$out" >&2; echo "setup_interrupts: bench $* exited $rc, not 130" >&2; exit 1; }
	grep -q "interrupted by SIGINT during set-up" "$out" ||
		{ cat "$out" >&2; echo "setup_interrupts: bench $* was not in its set-up" >&2; exit 1; }
	echo "$(date +%s.%N) - $sent" | bc
}

# line AFTER_SECS BENCH_ARGS...: the median and largest of RUNS stops.
line() {
	local after=$1
	shift
	local times=()
	for ((i = 0; i < runs; i++)); do
		times+=("$(stop_time "$after" "$@")")
	done
	local largest
	largest=$(printf '%s\n' "${times[@]}" | sort -g | tail -n1)
	printf '%-95s median %.3f s, largest %.3f s of %d\n' "$*" \
		"$(printf '%s\n' "${times[@]}" | median)" "$largest" "$runs"
}

line 0.5 -w1 -d5 --nr_entries 10000000 hashmap-with-bloom
line 0.5 -w1 -d5 --nr_entries 3000000 --max_entries 3000000 --nr_loops 3000000 bpf-hashmap-lookup
line 0.5 -w1 -d5 --nr_entries 20000000 lpm-trie-lookup
line 0.5 -w1 -d5 --nr_maps 3 local-storage-cache-hashmap-control
