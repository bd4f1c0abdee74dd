#!/usr/bin/env bash
# One summary line per uprobe benchmark, as the kernel's run_bench_uprobes.sh.
# Arguments replace the default list (names without the trig- prefix).
set -eufo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)

benchmarks=(usermode-count syscall-count {uprobe,uretprobe}-{nop,push,ret,nop5})
(($#)) && benchmarks=("$@")

# Build (if needed) before the first measurement, not during it.
"$root/bench" --list >/dev/null

for i in "${benchmarks[@]}"; do
	summary=$("$root/bench" -w2 -d5 -a "trig-$i" | tail -n1 | cut -d'(' -f1 | cut -d' ' -f3-)
	printf "%-15s: %s\n" "$i" "$summary"
done
