#!/usr/bin/env bash
# trig-rawtp and trig-tp against a bare libbpf loop doing the same test-run
# calls (examples/plain_trigger.rs), interleaved, median of per-pair ratios;
# then the trigger table at --trig-batch-iters 1, 10 and 100.
#   PAIRS=5 scripts/trigger_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
source scripts/cargo-env.sh
pairs=${PAIRS:-5}

prepare_bench
cargo build --release --quiet --example plain_trigger
plain=$root/target/release/examples/plain_trigger

for kind in rawtp tp; do
	ratios=()
	for ((i = 0; i < pairs; i++)); do
		a=$("$root/bench" -q -w1 -d5 "trig-$kind" | summary_mean)
		b=$("$plain" "$kind" 5 1 100)
		ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", a / b}')")
		printf '  trig-%-6s pair %d: %8s vs plain %8s M/s  ratio %s\n' "$kind" "$i" "$a" "$b" "${ratios[-1]}" >&2
	done
	printf 'trig-%-6s / plain libbpf loop: median ratio %s over %d pairs\n' \
		"$kind" "$(printf '%s\n' "${ratios[@]}" | median)" "$pairs"
done

printf '\n%-22s %22s %22s %22s\n' benchmark batch=1 batch=10 batch=100
for b in kernel-count rawtp tp; do
	printf '%-22s' "trig-$b"
	for n in 1 10 100; do
		printf ' %22s' "$("$root/bench" -q -w1 -d5 --trig-batch-iters "$n" "trig-$b" | tail -n1 | cut -d'(' -f1 | cut -d' ' -f3- | xargs)"
	done
	printf '\n'
done
