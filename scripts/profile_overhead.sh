#!/usr/bin/env bash
# What `--profile` costs, measured the way docs/performance.md says: pairs of
# runs interleaved (the order alternating from pair to pair), the median of
# the per-pair ratios.
#   1. With OLD set to a bench built without frame pointers: this build
#      against it (new / old), for the benchmarks frame pointers could slow;
#      with CPU_TIME=1 as operations per second of CPU time (perf stat's
#      task-clock over a fixed-work run of REPEAT operations), which other
#      tasks taking the CPU away do not change.
#   2. Sampling at --profile-freq (default 999 Hz): profiled / unprofiled;
#      with CPU_TIME=1, --profile-freq FREQ against --profile-freq 1 (the same
#      set-up and symbolization, next to no samples), as hits per second of
#      the process's CPU time over a -w0 run.
#   OLD=/path/to/bench-without-fp PAIRS=5 SECS=5 FREQ=999 scripts/profile_overhead.sh
# NO_SAMPLING=1 leaves out the second part.
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
secs=${SECS:-5}
freq=${FREQ:-999}

prepare_bench

# cpu_rate BIN N BENCH: millions of operations per second of the process's
# CPU time, for a fixed-work run of N operations.
cpu_rate() {
	local msec
	msec=$(perf stat -x, -e task-clock -- "$1" -q -r "$2" "$3" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}')
	awk -v n="$2" -v ms="$msec" 'BEGIN {printf "%.3f", n / ms / 1000}'
}

if [[ -n ${OLD:-} ]]; then
	for bench in trig-usermode-count trig-syscall-count trig-uprobe-nop; do
		if [[ -n ${CPU_TIME:-} ]]; then
			case $bench in
			trig-usermode-count) n=500000000 ;;
			trig-syscall-count) n=10000000 ;;
			*) n=2000000 ;;
			esac
			pairs_line "$bench: frame pointers / none (CPU time)" \
				"cpu_rate \"$BENCH\" $n $bench" "cpu_rate \"$OLD\" $n $bench"
		else
			pairs_line "$bench: frame pointers / none" \
				"json_mean \"$BENCH\" -q -w1 -d$secs $bench" \
				"json_mean \"$OLD\" -q -w1 -d$secs $bench"
		fi
	done
fi
[[ -n ${NO_SAMPLING:-} ]] && exit 0

# cpu_timed_rate BIN FREQ BENCH: millions of hits per second of CPU time of
# a profiled -w0 run of $secs seconds.
cpu_timed_rate() {
	local stat mean msec
	stat=$(mktemp)
	mean=$(json_mean perf stat -x, -e task-clock -o "$stat" -- "$1" -q -w0 -d"$secs" --profile --profile-freq "$2" "$3")
	msec=$(awk -F, '/task-clock/ {print $1}' "$stat")
	rm -f "$stat"
	awk -v m="$mean" -v s="$secs" -v ms="$msec" 'BEGIN {printf "%.3f", m * s / (ms / 1000)}'
}

for bench in trig-uprobe-nop trig-syscall-count trig-usermode-count; do
	if [[ -n ${CPU_TIME:-} ]]; then
		pairs_line "$bench: --profile-freq $freq / 1 (CPU time)" \
			"cpu_timed_rate \"$BENCH\" $freq $bench" "cpu_timed_rate \"$BENCH\" 1 $bench"
		continue
	fi
	pairs_line "$bench: --profile-freq $freq / unprofiled" \
		"json_mean \"$BENCH\" -q -w1 -d$secs --profile --profile-freq $freq $bench" \
		"json_mean \"$BENCH\" -q -w1 -d$secs $bench"
done
