#!/usr/bin/env bash
# One summary line per uprobe and USDT benchmark, as the kernel's
# run_bench_uprobes.sh. Arguments replace the default list (names without the
# trig- prefix).
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

benchmarks=(usermode-count syscall-count {uprobe,uretprobe}-{nop,push,ret,nop5} usdt-nop usdt-nop5)
(($#)) && benchmarks=("$@")

prepare_bench
for i in "${benchmarks[@]}"; do
	bench_line "$i" "trig-$i" -w2 -d5 -a
done
finish
