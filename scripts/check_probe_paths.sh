#!/usr/bin/env bash
# The uprobe and USDT benchmarks on this kernel: --probe of each (its probe
# path and red zone, or why the kernel cannot run it), exact counts of the
# nop10 family with --repeat, and the probe path line of a timed run of each
# nop5 and nop10 benchmark. For other kernels, in a VM:
#
#   sudo scripts/run_in_vm.sh --kernel 7.3 --exec -- scripts/check_probe_paths.sh
#
# BENCH names the binary (default target/release/bench), REPEAT the calls of
# each counted run (default 2000: every hit traps under emulation).
set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
bench=${BENCH:-target/release/bench}
repeat=${REPEAT:-2000}
names=(trig-uprobe-nop trig-uprobe-push trig-uprobe-ret trig-uprobe-nop5 trig-uprobe-nop10
	trig-uretprobe-nop5 trig-uretprobe-nop10 trig-uprobe-multi-nop5 trig-uprobe-multi-nop10
	trig-uretprobe-multi-nop5 trig-uretprobe-multi-nop10 trig-usdt-nop trig-usdt-nop5 trig-usdt-nop10)
echo "kernel: $(uname -r)"
"$bench" --probe "${names[@]}"
for name in "${names[@]}"; do
	[[ $name == *nop5 || $name == *nop10 ]] || continue
	echo "== $name"
	# A kernel that cannot run it said why above; the run says it again.
	"$bench" -q -r "$repeat" "$name" 2>&1 | grep -E 'hits|unsupported' | head -n 2
	"$bench" -w0 -d1 "$name" 2>&1 | grep -E '^probe path|warning' | head -n 2
done
