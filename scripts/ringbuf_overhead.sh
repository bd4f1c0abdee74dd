#!/usr/bin/env bash
# rb-libbpf (-c1 -a) against a bare libbpf-rs consumer loop doing the same
# work (examples/plain_ringbuf.rs: same BPF object and ring, producer on CPU 1,
# RingBuffer polled on CPU 0), interleaved, median of the per-pair ratios of
# consumed records per second.
#   PAIRS=7 scripts/ringbuf_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cd "$root"
source scripts/cargo-env.sh
pairs=${PAIRS:-7}

prepare_bench
cargo build --release --quiet --example plain_ringbuf
plain=$root/target/release/examples/plain_ringbuf

ratios=()
for ((i = 0; i < pairs; i++)); do
	a=$("$root/bench" -q -w1 -d5 -c1 -a rb-libbpf | summary_mean)
	b=$("$plain" 5 1 500)
	ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", a / b}')")
	printf '  pair %d: rb-libbpf %8s vs plain %8s M/s  ratio %s\n' "$i" "$a" "$b" "${ratios[-1]}" >&2
done
printf 'rb-libbpf / plain libbpf-rs loop: median ratio %s over %d pairs\n' \
	"$(printf '%s\n' "${ratios[@]}" | median)" "$pairs"
