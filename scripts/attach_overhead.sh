#!/usr/bin/env bash
# attach-uprobe-multi against a bare libbpf call attaching the same sites
# (examples/plain_attach.rs), interleaved, median of per-pair ratios of the
# attach time (and of the detach time), at N probes.
#   PAIRS=9 N=10000 scripts/attach_overhead.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
enter_root
pairs=${PAIRS:-9}
n=${N:-10000}

prepare_bench
plain=$(plain_example plain_attach)

attach_ratios=()
detach_ratios=()
for ((i = 0; i < pairs; i++)); do
	# The Summary's parentheses hold "attach A ms, detach D ms wall".
	read -r a d < <("$root/bench" attach-uprobe-multi --attach-cnt "$n" | tail -n1 |
		sed -e 's/.*; attach \([0-9.]*\) ms, detach \([0-9.]*\) ms wall.*/\1 \2/')
	read -r pa pd fired < <("$plain" "$n")
	[[ $fired == "$n" ]] || { echo "plain_attach: $fired of $n fired" >&2; exit 1; }
	attach_ratios+=("$(awk -v a="$a" -v b="$pa" 'BEGIN {printf "%.4f", a / b}')")
	detach_ratios+=("$(awk -v a="$d" -v b="$pd" 'BEGIN {printf "%.4f", a / b}')")
	printf '  pair %d: attach %8s vs plain %8s ms (ratio %s), detach %8s vs %8s ms (ratio %s)\n' \
		"$i" "$a" "$pa" "${attach_ratios[-1]}" "$d" "$pd" "${detach_ratios[-1]}" >&2
done
printf 'attach-uprobe-multi N=%d / plain libbpf: attach median ratio %s, detach median ratio %s over %d pairs\n' \
	"$n" "$(printf '%s\n' "${attach_ratios[@]}" | median)" \
	"$(printf '%s\n' "${detach_ratios[@]}" | median)" "$pairs"
