#!/usr/bin/env bash
# trig-rawtp and trig-tp against a bare libbpf loop doing the same test-run
# calls (examples/plain_trigger.rs), interleaved, median of per-pair ratios;
# then the trigger table at --trig-batch-iters 1, 10 and 100.
#   PAIRS=5 scripts/trigger_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
enter_root

prepare_bench
plain=$(plain_example plain_trigger)

for kind in rawtp tp; do
	pairs_line "trig-$kind / plain libbpf loop" \
		'json_mean "$BENCH" -q -w1 -d5 "trig-$kind"' '"$plain" "$kind" 5 1 100'
done

printf '\n%-22s %22s %22s %22s\n' benchmark batch=1 batch=10 batch=100
for b in kernel-count rawtp tp; do
	printf '%-22s' "trig-$b"
	for n in 1 10 100; do
		printf ' %22s' "$("$root/bench" -q -w1 -d5 --trig-batch-iters "$n" "trig-$b" | tail -n1 | cut -d'(' -f1 | cut -d' ' -f3- | xargs)"
	done
	printf '\n'
done
