#!/usr/bin/env bash
# A seed's headline reproduced: the benchmark its cover letter quotes, run as
# it ran it, with bench and (where perf has the benchmark) perf bench,
# interleaved, then each side's median. Run as root; raw outputs, result
# files and the plot are kept in --out (default target/reproduce/SEED).
#
#   sudo scripts/reproduce.sh breakpoint-series
#   sudo scripts/reproduce.sh --rounds 2 perf-syscall
#
# Seeds:
#   breakpoint-series  perf/hw_breakpoint "Optimize for thousands of tasks",
#                      merged for 6.1: `-r 30 breakpoint thread -b 4 -p 64 -t 64`
#                      on Debian's 5.10 and 6.1 in VMs (--cpus vCPUs, emulated),
#                      bench and perf in each boot, the kernels alternating
#                      round by round; the medians, the speed-up 5.10 -> 6.1
#                      per tool, bench/perf per kernel, `bench compare` of the
#                      two kernels, and a sweep of --threads on both drawn in
#                      one SVG (scripts/plot_sweeps.py)
#   perf-breakpoint    "tools/perf: add breakpoint benchmarks": perf bench
#                      breakpoint thread and enable against bench's
#                      breakpoint-thread and breakpoint-enable on this host,
#                      scaled to its CPUs as scripts/run_bench_breakpoint.sh
#   perf-syscall       "perf: add 'perf bench syscall'": perf bench syscall
#                      basic against bench's syscall-basic on this host
#   uprobes            "selftests/bpf: extend uprobe/uretprobe triggering
#                      benchmarks": scripts/run_bench_uprobes.sh on each kernel
#                      of --kernels (default host,6.1,6.12), one column each,
#                      with rows saying whether the kernel has the uretprobe
#                      syscall (6.11+) and the uprobe syscall (nop5 optimized)
#   kernel-history     the kernels' history in one command: a headline set
#                      (trig-uprobe-nop, trig-uprobe-nop5, trig-uretprobe-nop,
#                      trig-usdt-nop, trig-syscall-count, trig-kernel-count,
#                      and breakpoint-thread at the breakpoint-series seed's
#                      -r 30 -b 4 -p 64 -t 64) --rounds times in one boot of
#                      each kernel of --kernels (default 5.10,6.1,6.12,newest,
#                      host; 2 vCPUs, emulated), every run kept in one history
#                      (OUT/history.sqlite; rounds add to those an earlier run
#                      left in OUT); then the change points in kernel order
#                      and the page (OUT/page/index.html)
#
# Options:
#   --rounds N    rounds (breakpoint-series: VM boots per kernel; the host
#                 seeds: pairs of runs); default 3, or ROUNDS
#   --out DIR     where raw outputs go (under the repository for the VM seeds:
#                 the guest writes there)
#   --kernels L   the kernels of the uprobes and kernel-history seeds
#   --cpus N      breakpoint-series: the guests' vCPUs (default 4, or CPUS).
#                 The series removed work done per task for each CPU, so
#                 its gain grows with the CPUs: with 2 it is x3-5 and at the
#                 mercy of the host's load, with 4 about x10
#   --report-only breakpoint-series: print the tables of the runs kept in
#                 --out again, running nothing; kernel-history: the history
#                 made again from the result files kept in --out, its change
#                 points and the page
# Installs linux-perf with apt when perf is missing.
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

me=$(basename "$0")
seeds=(breakpoint-series perf-breakpoint perf-syscall uprobes kernel-history)
refuse() {
	echo "$me: $*" >&2
	exit 2
}

seed= out= rounds=${ROUNDS:-3} kernels= report_only=0 cpus=${CPUS:-4}
while (($#)); do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--rounds) (($# >= 2)) || refuse "--rounds needs a number"; rounds=$2; shift ;;
	--rounds=*) rounds=${1#*=} ;;
	--out) (($# >= 2)) || refuse "--out needs a directory"; out=$2; shift ;;
	--out=*) out=${1#*=} ;;
	--kernels) (($# >= 2)) || refuse "--kernels needs a list such as host,6.1,6.12"; kernels=$2; shift ;;
	--kernels=*) kernels=${1#*=} ;;
	--cpus) (($# >= 2)) || refuse "--cpus needs a number"; cpus=$2; shift ;;
	--cpus=*) cpus=${1#*=} ;;
	--report-only) report_only=1 ;;
	-*) refuse "unknown option '$1' (--help lists the options)" ;;
	*)
		[[ -z $seed ]] || refuse "one seed at a time, got '$seed' and '$1'"
		seed=$1
		;;
	esac
	shift
done
[[ -n $seed ]] || refuse "name a seed: ${seeds[*]}"
[[ " ${seeds[*]} " == *" $seed "* ]] || refuse "unknown seed '$seed': give one of ${seeds[*]}"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || refuse "--rounds takes a whole number, got '$rounds'"
[[ $cpus =~ ^[1-9][0-9]*$ ]] || refuse "--cpus takes a whole number, got '$cpus'"
out=${out:-$root/target/reproduce/$seed}
if [[ -z $kernels ]]; then
	kernels=host,6.1,6.12
	[[ $seed == kernel-history ]] && kernels=5.10,6.1,6.12,newest,host
fi

# The seed's breakpoint benchmark, as the cover letter ran it.
series_bench=(-r 30 -b 4 -p 64 -t 64 breakpoint-thread)
series_perf=(-r 30 breakpoint thread -b 4 -p 64 -t 64)
# The sweep: threads per batch, at a parallelism that keeps 5.10's emulated
# runs to minutes.
sweep_threads=1,2,4,8,16,32,64
sweep_parallelism=8

# --- In the guest (breakpoint-series): one round on this kernel. -----------
# REPRO_GUEST=ROUND: bench and perf once each (which goes first alternates by
# round), and in round 1 the sweep; outputs in $out/$(kernel)/.
if [[ -n ${REPRO_GUEST:-} ]]; then
	r=$REPRO_GUEST dir=$out/$REPRO_KERNEL
	mkdir -p "$dir"
	uname -r >"$dir/release"
	nproc >"$dir/cpus"
	bin=$root/target/release/bench
	run_bench() { "$bin" -q "${series_bench[@]}" --json "$dir/bench-$r.json" >"$dir/bench-$r.txt" 2>&1; }
	run_perf() { perf bench "${series_perf[@]}" >"$dir/perf-$r.txt" 2>&1; }
	if ((r % 2)); then run_bench; run_perf; else run_perf; run_bench; fi
	if ((r == 1)); then
		"$bin" -q -w1 -d3 -b 4 -p "$sweep_parallelism" --sweep "threads=$sweep_threads" \
			--json "$dir/sweep.json" breakpoint-thread >"$dir/sweep.txt" 2>&1
	fi
	exit 0
fi

((EUID == 0)) || refuse "run it as root (sudo): it installs perf, boots VMs and loads BPF"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"

need_perf() {
	command -v perf >/dev/null && return 0
	echo "$me: installing linux-perf" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-perf >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends linux-perf >/dev/null; } ||
		{ echo "$me: apt-get could not install linux-perf" >&2; exit 1; }
}

# The machine, for the page: date, CPUs, load.
machine() {
	printf '# %s, %s CPUs, load average %s, %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)" "$(uname -r)"
}

# perf's figure of its text: the first "usecs/op", or "Total time".
perf_field() { # FILE usecs|total
	case $2 in
	usecs) awk '$2 == "usecs/op" && !f {print $1; f = 1}' "$1" ;;
	total) awk '/Total time:/ && !f {print $3; f = 1}' "$1" ;;
	esac
}
# bench's, from its result file: wall time per operation, and in all.
bench_field() { # FILE usecs|total
	case $2 in
	usecs) jq -r '.runs[-1].fixed | .elapsed_ns / 1000 / .ops' "$1" ;;
	total) jq -r '.runs[-1].fixed.elapsed_ns / 1e9' "$1" ;;
	esac
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

breakpoint_series() {
	need_perf
	prepare_bench
	((report_only)) && { series_report; return; }
	local r k order dir
	machine | tee "$out/machine"
	echo "bench ${series_bench[*]}  |  perf bench ${series_perf[*]}  |  $cpus vCPUs" | tee -a "$out/machine"
	for ((r = 1; r <= rounds; r++)); do
		# Which kernel boots first alternates round by round.
		order=(5.10 6.1)
		((r % 2)) || order=(6.1 5.10)
		for k in "${order[@]}"; do
			echo "$me: round $r of $rounds, kernel $k (load $(cut -d' ' -f1 /proc/loadavg))" >&2
			scripts/run_in_vm.sh --kernel "$k" --cpus "$cpus" --timeout 3600 --exec -- \
				env REPRO_GUEST="$r" REPRO_KERNEL="$k" scripts/reproduce.sh --out "$out" "$seed" ||
				{ echo "$me: the $k guest failed in round $r" >&2; exit 1; }
		done
	done
	machine | tee -a "$out/machine"
	series_report
}

# The vCPUs the kept runs had (as the guest counted them).
guest_cpus() {
	cat "$out/5.10/cpus" 2>/dev/null || echo "$cpus"
}

# The tables of the runs kept in $out: each tool's median per kernel, the
# speed-ups, bench/perf, bench compare of the kernels, the sweep plot.
series_report() {
	local tool f b p k r
	[[ -f $out/6.1/bench-1.json ]] || refuse "$out holds no run of $seed to report"
	printf '\n%-6s %-22s %10s %12s %12s\n' kernel release tool "total s" "usecs/op" | tee "$out/table"
	# The rounds both kernels finished.
	rounds=$(find "$out/5.10" "$out/6.1" -name 'perf-*.txt' | wc -l)
	rounds=$((rounds / 2))
	for k in 5.10 6.1; do
		dir=$out/$k
		for ((r = 1; r <= rounds; r++)); do
			printf '%s\t%s\t%s\t%s\t%s\n' "$k" bench "$r" "$(bench_field "$dir/bench-$r.json" total)" "$(bench_field "$dir/bench-$r.json" usecs)"
			printf '%s\t%s\t%s\t%s\t%s\n' "$k" perf "$r" "$(perf_field "$dir/perf-$r.txt" total)" "$(perf_field "$dir/perf-$r.txt" usecs)"
		done
	done >"$out/runs.tsv"
	declare -A med
	for k in 5.10 6.1; do
		for tool in bench perf; do
			med[$k,$tool]=$(awk -F'\t' -v k="$k" -v t="$tool" '$1 == k && $2 == t {print $4}' "$out/runs.tsv" | median)
			med[$k,$tool,usecs]=$(awk -F'\t' -v k="$k" -v t="$tool" '$1 == k && $2 == t {print $5}' "$out/runs.tsv" | median)
		done
	done
	for k in 5.10 6.1; do
		for tool in bench perf; do
			printf '%-6s %-22s %10s %12.3f %12.1f\n' "$k" "$(cat "$out/$k/release")" "$tool" \
				"${med[$k,$tool]}" "${med[$k,$tool,usecs]}"
		done
	done | tee -a "$out/table"
	printf '\nmedians of %d rounds (total time), guests of %s vCPUs (TCG)\n' "$rounds" "$(guest_cpus)" | tee -a "$out/table"
	for tool in bench perf; do
		printf 'speed-up 5.10 -> 6.1, %-5s x%s\n' "$tool" "$(ratio "${med[5.10,$tool]}" "${med[6.1,$tool]}")"
	done | tee -a "$out/table"
	for k in 5.10 6.1; do
		# bench/perf of each boot (they ran back to back), then the median.
		b=$(for ((r = 1; r <= rounds; r++)); do
			f=$(awk -F'\t' -v k="$k" -v r="$r" '$1 == k && $3 == r && $2 == "bench" {b = $4} $1 == k && $3 == r && $2 == "perf" {p = $4} END {printf "%.4f\n", b / p}' "$out/runs.tsv")
			echo "$f"
		done | median)
		printf 'bench/perf on %-5s %s (median of the per-boot ratios)\n' "$k" "$b"
	done | tee -a "$out/table"
	# The cover-letter table: each kernel's bench runs in one file.
	for k in 5.10 6.1; do
		jq -s '.[0] + {runs: [.[].runs[]]}' "$out/$k"/bench-*.json >"$out/bench-$k.json"
	done
	printf '\n$ bench compare bench-5.10.json bench-6.1.json\n' | tee -a "$out/table"
	"$BENCH" compare "$out/bench-5.10.json" "$out/bench-6.1.json" | tee -a "$out/table" || true
	p=$out/breakpoint-sweep.svg
	python3 scripts/plot_sweeps.py --title "breakpoint-thread -b 4 -p $sweep_parallelism under TCG, $(guest_cpus) vCPUs" \
		-o "$p" "$out/5.10/sweep.json" "$out/6.1/sweep.json"
	printf '\nsweep of threads: %s\n' "$p" | tee -a "$out/table"
	for k in 5.10 6.1; do
		printf '== %s\n' "$k"
		sed -n '/^Sweep of/,$p' "$out/$k/sweep.txt"
	done | tee -a "$out/table"
}

# host_pairs LABEL BENCH_ARGS PERF_ARGS: ROUNDS pairs, bench and perf
# alternating, usecs/op each; one line with each side's median and the
# median ratio bench/perf. Sets PAIR_A (bench) and PAIR_B (perf).
host_pairs() {
	local ours theirs
	read -ra ours <<<"$2"
	read -ra theirs <<<"$3"
	PAIRS=$rounds pairs "$1" \
		'bench_json "$BENCH" -q "${ours[@]}" | jq -r ".runs[-1].fixed | .elapsed_ns / 1000 / .ops"' \
		'perf bench "${theirs[@]}" 2>/dev/null | awk "\$2 == \"usecs/op\" && !f {print \$1; f = 1}"' 2>>"$out/pairs.log"
	printf '%-34s %12.3f %12.3f %10s\n' "$1" "$PAIR_A" "$PAIR_B" "$PAIR_RATIO" | tee -a "$out/table"
}
host_header() {
	machine | tee "$out/machine"
	printf '%-34s %12s %12s %10s\n' case "bench us/op" "perf us/op" bench/perf | tee "$out/table"
}

perf_breakpoint() {
	need_perf
	prepare_bench
	local cpus parallelism passive active b0 b4 e0 ep ea
	cpus=$(nproc)
	parallelism=$((cpus / 2 > 0 ? cpus / 2 : 1))
	passive=$((2 * cpus))
	active=$((cpus - 1 > 0 ? cpus - 1 : 1))
	host_header
	host_pairs "thread -b 0 -p $parallelism -t 20" "-r 200 -b 0 -p $parallelism -t 20 breakpoint-thread" \
		"--repeat=200 breakpoint thread --breakpoints=0 --parallelism=$parallelism --threads=20"
	b0=("$PAIR_A" "$PAIR_B")
	host_pairs "thread -b 4 -p $parallelism -t 20" "-r 200 -b 4 -p $parallelism -t 20 breakpoint-thread" \
		"--repeat=200 breakpoint thread --breakpoints=4 --parallelism=$parallelism --threads=20"
	b4=("$PAIR_A" "$PAIR_B")
	host_pairs "enable --passive 0 --active 0" "-r 20000 --passive 0 --active 0 breakpoint-enable" \
		"--repeat=20000 breakpoint enable --passive=0 --active=0"
	e0=("$PAIR_A" "$PAIR_B")
	host_pairs "enable --passive $passive --active 0" "-r 20000 --passive $passive --active 0 breakpoint-enable" \
		"--repeat=20000 breakpoint enable --passive=$passive --active=0"
	ep=("$PAIR_A" "$PAIR_B")
	host_pairs "enable --passive 0 --active $active" "-r 20000 --passive 0 --active $active breakpoint-enable" \
		"--repeat=20000 breakpoint enable --passive=0 --active=$active"
	ea=("$PAIR_A" "$PAIR_B")
	{
		printf '\nslowdowns (medians)                  bench        perf\n'
		printf '%-34s %10sx %10sx\n' "4 breakpoints / none" "$(ratio "${b4[0]}" "${b0[0]}")" "$(ratio "${b4[1]}" "${b0[1]}")"
		printf '%-34s %10sx %10sx\n' "$passive passive / none" "$(ratio "${ep[0]}" "${e0[0]}")" "$(ratio "${ep[1]}" "${e0[1]}")"
		printf '%-34s %10sx %10sx\n' "$active active / none" "$(ratio "${ea[0]}" "${e0[0]}")" "$(ratio "${ea[1]}" "${e0[1]}")"
	} | tee -a "$out/table"
	machine | tee -a "$out/machine"
}

perf_syscall() {
	need_perf
	prepare_bench
	host_header
	host_pairs "syscall basic (10,000,000 getppid)" "-r 10000000 syscall-basic" "syscall basic"
	machine | tee -a "$out/machine"
}

# One kernel's rows for kernel_columns: the uprobes script's, then whether
# the kernel has the uretprobe syscall (a uretprobe returns by a syscall,
# not a trap: 6.11+) and the uprobe syscall (a nop5 site becomes a call).
uprobes_rows() {
	local has
	has() { grep -q -w "$1" /proc/kallsyms && echo yes || echo no; }
	BENCH_KERNEL_ROWS=1 scripts/run_bench_uprobes.sh --json "$out/$REPRO_KERNEL"
	printf 'uretprobe syscall\t%s\n' "$(has __x64_sys_uretprobe)"
	printf 'uprobe syscall (nop5)\t%s\n' "$(has __x64_sys_uprobe)"
}

uprobes() {
	prepare_bench
	local k files=() list
	IFS=, read -r -a list <<<"$kernels"
	machine | tee "$out/machine"
	for k in "${list[@]}"; do
		echo "$me: kernel $k (load $(cut -d' ' -f1 /proc/loadavg))" >&2
		if [[ $k == host ]]; then
			REPRO_KERNEL=host uprobes_rows >"$out/rows-$k"
		else
			scripts/run_in_vm.sh --kernel "$k" --cpus 2 --timeout 3600 --exec -- \
				env REPRO_UPROBES=1 REPRO_KERNEL="$k" ${WD:+WD="$WD"} scripts/reproduce.sh --out "$out" "$seed" >"$out/rows-$k" ||
				echo "$me: kernel $k failed" >&2
		fi
		files+=("$out/rows-$k")
	done
	machine | tee -a "$out/machine"
	source scripts/kernels.sh
	kernel_columns "${list[@]}" -- "${files[@]}" | tee "$out/table"
	MARKDOWN=1 kernel_columns "${list[@]}" -- "${files[@]}" >"$out/table.md"
}

# In a uprobes guest: this kernel's rows.
if [[ -n ${REPRO_UPROBES:-} ]]; then
	uprobes_rows
	exit 0
fi

# --- kernel-history ---------------------------------------------------------
# The headline set, as bench names it; breakpoint-thread apart, at the
# breakpoint-series seed's parameters.
history_benches=(trig-uprobe-nop trig-uprobe-nop5 trig-uretprobe-nop trig-usdt-nop
	trig-syscall-count trig-kernel-count)

# One kernel's rounds (in its guest, or on the host): result files in
# $out/$REPRO_KERNEL/, made by the copy of bench in $out (one binary for
# every kernel, whatever is rebuilt meanwhile). A benchmark the kernel cannot
# run says so and the rest go on.
history_rounds() {
	local dir=$out/$REPRO_KERNEL r b bin=("$out/bench")
	# On the host, each run holds the test suite's probe lock, so that it
	# does not disturb the leak checks of tests running beside it.
	[[ $REPRO_KERNEL == host ]] && bin=(flock "${TMPDIR:-/tmp}/bench-tests-probe.lock" "$out/bench")
	mkdir -p "$dir"
	uname -r >"$dir/release"
	uname -v >"$dir/version"
	# Rounds add to those kept from an earlier run of the seed.
	local first
	first=$(find "$dir" -name 'breakpoint-thread-*.txt' | wc -l)
	for ((r = first + 1; r <= first + rounds; r++)); do
		for b in "${history_benches[@]}"; do
			"${bin[@]}" -q -w1 -d3 --json "$dir/$b-$r.json" "$b" >"$dir/$b-$r.txt" 2>&1 ||
				echo "$me: $REPRO_KERNEL: $b failed: $(tail -n1 "$dir/$b-$r.txt")" >&2
		done
		"${bin[@]}" -q "${series_bench[@]}" --json "$dir/breakpoint-thread-$r.json" >"$dir/breakpoint-thread-$r.txt" 2>&1 ||
			echo "$me: $REPRO_KERNEL: breakpoint-thread failed: $(tail -n1 "$dir/breakpoint-thread-$r.txt")" >&2
	done
}

if [[ -n ${REPRO_HISTORY:-} ]]; then
	history_rounds
	exit 0
fi

# The history made from the result files kept in $out (each kernel's, with
# its `uname -v`) by the tree's bench, its change points in kernel order, and
# the page.
history_report() {
	local db=$out/history.sqlite dir files bin=$root/target/release/bench
	rm -f "$db" "$db-wal" "$db-shm"
	for dir in "$out"/*/; do
		[[ -f $dir/release ]] || continue
		files=("$dir"*.json)
		[[ -e ${files[0]} ]] || continue
		"$bin" history --history "$db" add --label "kernel-version=$(cat "$dir/version")" "${files[@]}"
	done
	[[ -f $db ]] || refuse "$out holds no run of $seed to report"
	"$bin" history --history "$db" list | tee "$out/list"
	"$bin" history --history "$db" changes --by kernel | tee "$out/changes"
	"$bin" history --history "$db" changes --by kernel --json >"$out/changes.json"
	"$bin" history --history "$db" report --by kernel "$out/page"
}

kernel_history() {
	local k list
	prepare_bench
	if ((report_only)); then
		history_report
		return
	fi
	IFS=, read -r -a list <<<"$kernels"
	cp "$root/target/release/bench" "$out/bench"
	machine | tee "$out/machine"
	for k in "${list[@]}"; do
		echo "$me: kernel $k, $rounds rounds (load $(cut -d' ' -f1 /proc/loadavg))" >&2
		if [[ $k == host ]]; then
			REPRO_KERNEL=host history_rounds
		else
			scripts/run_in_vm.sh --kernel "$k" --cpus 2 --timeout 7200 --exec -- \
				env REPRO_HISTORY=1 REPRO_KERNEL="$k" scripts/reproduce.sh --rounds "$rounds" --out "$out" "$seed" ||
				echo "$me: the $k guest failed" >&2
		fi
	done
	machine | tee -a "$out/machine"
	history_report
}

case $seed in
breakpoint-series) breakpoint_series ;;
perf-breakpoint) perf_breakpoint ;;
perf-syscall) perf_syscall ;;
uprobes) uprobes ;;
kernel-history) kernel_history ;;
esac
echo "$me: outputs in $out" >&2
