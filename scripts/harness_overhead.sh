#!/usr/bin/env bash
# What the harness costs, measured the way docs/performance.md says: each
# benchmark interleaved with a bare loop doing the same work, the median of the
# per-pair ratios; then syscall-count on 2 producers against 1, interleaved.
# The bare loops count nothing per call, so they are held against the
# benchmarks that do the same: trig-usermode-nocount (the nop target) and
# syscall-getpgid (getpgid(0)); trig-usermode-count and trig-syscall-count do
# the kernel runner's per-call counting besides.
#   PAIRS=5 scripts/harness_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
source scripts/cargo-env.sh
pairs=${PAIRS:-5}

prepare_bench
cargo build --release --quiet --example plain_loop
plain=$root/target/release/examples/plain_loop

compare() { # label, command A (prints M/s), command B (prints M/s)
	local label=$1 a=$2 b=$3 ratios=() ra rb
	for ((i = 0; i < pairs; i++)); do
		ra=$(eval "$a")
		rb=$(eval "$b")
		ratios+=("$(awk -v a="$ra" -v b="$rb" 'BEGIN {printf "%.4f", a / b}')")
		printf '  %-34s pair %d: %8s vs %8s M/s  ratio %s\n' "$label" "$i" "$ra" "$rb" "${ratios[-1]}" >&2
	done
	printf '%-36s median ratio %s over %d pairs\n' "$label" "$(printf '%s\n' "${ratios[@]}" | median)" "$pairs"
}

compare "usermode-nocount / plain loop" \
	'"$root/bench" -q -w1 -d5 trig-usermode-nocount | summary_mean' '"$plain" nop 5 1'
compare "syscall-getpgid / plain loop" \
	'"$root/bench" -q -w1 -d5 syscall-getpgid | summary_mean' '"$plain" getpgid 5 1'
compare "syscall-count -p2 -a / -p1 -a" \
	'"$root/bench" -q -w1 -d5 -p2 -a trig-syscall-count | summary_mean' \
	'"$root/bench" -q -w1 -d5 -p1 -a trig-syscall-count | summary_mean'
