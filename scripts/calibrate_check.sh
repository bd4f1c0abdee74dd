#!/usr/bin/env bash
# Does bench's recommendation hold? Calibrates for a benchmark, then at the
# recommended settings counts TRIALS independent comparisons of A against A
# slowed by EFFECT % (detections, want >= 8 of 10) and of A against A (false
# alarms, want <= 1 of 10); then TRIES interleaved runs of the benchmark
# against OTHER, each judged by bench's table.
#   BUDGET=180 TRIALS=10 MAX_RUNS=12 TRIES=3 scripts/calibrate_check.sh \
#       [BENCHMARK [OTHER]]
# MAX_RUNS caps the rounds used when the recommendation asks for more (the
# script says so): on a busy shared machine it can ask for hundreds.
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
bench=${1:-trig-uprobe-nop}
other=${2:-trig-uprobe-push}
budget=${BUDGET:-180}
trials=${TRIALS:-10}
max_runs=${MAX_RUNS:-12}
tries=${TRIES:-3}
effect=${EFFECT:-5}

# BENCH_BIN: a fixed binary, so that editing the sources mid-check rebuilds nothing.

prepare_bench
echo "# $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "\$ bench calibrate --budget $budget --effect $effect $bench"
calibration=$("$BENCH" calibrate --budget "$budget" --effect "$effect" "$bench")
printf '%s\n' "$calibration" | grep -v '^round '
recommended=$(printf '%s\n' "$calibration" | tail -n1)
runs=$(sed -n 's/.*use `--runs \([0-9]*\) .*/\1/p' <<<"$recommended")
warmup=$(sed -n 's/.*use `--runs [0-9]* -w\([0-9]*\) .*/\1/p' <<<"$recommended")
duration=$(sed -n 's/.*use `--runs [0-9]* -w[0-9]* -d\([0-9]*\).*/\1/p' <<<"$recommended")
if [[ -z $runs ]]; then
	echo "no recommendation: nothing to check"
	exit 1
fi
if ((runs > max_runs)); then
	echo "note: the recommendation asks for $runs rounds; checking at MAX_RUNS=$max_runs instead"
	runs=$max_runs
fi
settings=(--runs "$runs" -w"$warmup" -d"$duration")

echo "\$ bench calibrate --trials $trials ${settings[*]} --effect $effect $bench"
check=$("$BENCH" calibrate --trials "$trials" "${settings[@]}" --effect "$effect" "$bench")
printf '%s\n' "$check" | grep -v '^round '
last=$(printf '%s\n' "$check" | tail -n1)
detected=$(sed -n 's/.*detected \([0-9]*\) of.*/\1/p' <<<"$last")
alarms=$(sed -n 's/.*false alarms \([0-9]*\) of.*/\1/p' <<<"$last")
verdict=FAIL
((detected * 10 >= 8 * trials && alarms * 10 <= trials)) && verdict=PASS
echo "criterion (detected >= 8 in 10, false alarms <= 1 in 10): $verdict"

for ((i = 1; i <= tries; i++)); do
	echo "\$ bench -q ${settings[*]} $bench $other   # try $i"
	"$BENCH" -q "${settings[@]}" "$bench" "$other" | grep -E "^($bench|$other) " | tail -n1
done
