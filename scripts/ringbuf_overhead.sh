#!/usr/bin/env bash
# rb-libbpf (-c1 -a) against a bare libbpf-rs consumer loop doing the same
# work (examples/plain_ringbuf.rs: same BPF object and ring, producer on CPU 1,
# RingBuffer polled on CPU 0), in the default and the back-to-back mode,
# interleaved, median of the per-pair ratios of consumed records per second.
# Then what the trigger costs the machine's other system calls.
#   PAIRS=7 MODES="default b2b" SECS=5 scripts/ringbuf_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
enter_root
PAIRS=${PAIRS:-7}
secs=${SECS:-5}
read -r -a modes <<<"${MODES:-default b2b}"


prepare_bench
plain=$(plain_example plain_ringbuf)

for mode in "${modes[@]}"; do
	flag=()
	[[ $mode == b2b ]] && flag=(--rb-b2b)
	pairs_line "rb-libbpf ($mode) / plain libbpf-rs loop" \
		'json_mean "$BENCH" -q -w1 -d"$secs" -c1 -a "${flag[@]}" rb-libbpf' \
		'"$plain" ${flag:+--b2b} "$secs" 1 500'
done
printf 'getppid() with nothing attached, and the extra cost of each trigger: %s\n' "$("$plain" filter 41)"
