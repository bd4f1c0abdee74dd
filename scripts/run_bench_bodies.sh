#!/usr/bin/env bash
# What a probe's body costs: for each benchmark, every --body in one bench
# invocation (a sweep, interleaved round by round), one line per body with
# the probe's rate, its time per hit and the body's cost per hit over the
# count's. Arguments replace the default list (names without the trig-
# prefix); BODIES=count,ktime,... replaces the bodies (count first: the costs
# are against it). The ringbuf body gets one consumer (-c1). --markdown prints
# a Markdown table; --json DIR keeps one result file per benchmark in DIR;
# --kernels host,6.12 prints one column per kernel (VMs of run_in_vm.sh);
# --runs N (or RUNS=N) runs every body N times, the costs then with their
# 95 % intervals. A benchmark this kernel cannot run says why on its line.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

benchmarks=(uprobe-nop usdt-nop kprobe rawtp)
bodies=${BODIES:-count,ktime,hash,ringbuf,read-user,stack,printk}
parse_common_args "$@"
((${#ARGS[@]})) && benchmarks=("${ARGS[@]}")

# body_rows LABEL: one row per body of the table that ends BENCH_OUT. A row of
# bench's table is "BODY RATE ± SD NS/HIT COST... DROPS%".
body_rows() {
	local label=$1
	sed -n '/^Bodies of /,$p' <<<"$BENCH_OUT" | tail -n +3 |
		awk -v label="$label" -v rows="$ROWS" -v markdown="$MARKDOWN" '{
			rate = $2 " ± " $4
			cost = $6
			for (i = 7; i < NF; i++) cost = cost " " $i
			drops = ($NF == "0.0%") ? "" : ", drops " $NF
			over = (cost == "(reference)") ? "" : ", " cost " over count"
			if (rows)
				printf "%s %s\t%s ns/hit%s (%s%s)\n", label, $1, $5, over, rate, drops
			else if (markdown)
				printf "| %s | %s | %s | %s | %s | %s |\n", label, $1, rate, $5, cost, $NF
			else
				printf "%-15s %-10s %24s %10s ns/hit  cost %-28s%s\n", label, $1, rate, $5, cost, drops
		}'
}

consumers=()
[[ ,$bodies, == *,ringbuf,* ]] && consumers=(-c1)

read -r -a wd <<<"${WD:--w1 -d3}"
prepare_bench
table_header benchmark body "rate (mean ± sd)" "ns/hit" "body cost ns/hit" drops
for i in "${benchmarks[@]}"; do
	JSON_NAME="trig-$i" bench_run "trig-$i" -q "${wd[@]}" -a "${consumers[@]}" --runs "$RUNS" --sweep "body=$bodies"
	if [[ $BENCH_VERDICT == ok ]]; then
		body_rows "$i"
	elif ((ROWS)); then
		printf '%s\t%s\n' "$i" "$BENCH_VERDICT"
	elif ((MARKDOWN)); then
		printf '| %s | | %s | | | |\n' "$i" "$BENCH_VERDICT"
	else
		printf '%-15s %s\n' "$i" "$BENCH_VERDICT"
	fi
done
finish
