#!/usr/bin/env bash
# The kernel's own runner (tools/testing/selftests/bpf/bench, built as
# docs/upstream-parity.md says) against bench: the benchmark of the same name
# on both, with the same options, PAIRS pairs interleaved (which goes first
# alternating), each run's rate read from its Summary line, and the median of
# the per-pair ratios bench/upstream.
#   UPSTREAM=/path/to/upstream/bench PAIRS=3 scripts/upstream_compare.sh [OPTION...] NAME...
# OPTIONs go to both runners, each in its joined form: -wN -dN -a -pN -cN
# (default -w1 -d3 -a), and a family's own as --name=value
# (--nr_entries=1000). --markdown prints the table as Markdown. A NAME one
# of the two cannot run on this kernel is skipped with the reason; BENCH_BIN
# picks another bench build. Each pair is shown on stderr.
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

me=$(basename "$0")
refuse() {
	echo "$me: $*" >&2
	exit 2
}

upstream=${UPSTREAM:-}
[[ -n $upstream ]] || refuse "set UPSTREAM to the kernel runner's bench binary (docs/upstream-parity.md says how to build it)"
[[ -f $upstream && -x $upstream ]] || refuse "UPSTREAM=$upstream is not an executable file"
[[ ${PAIRS:-5} =~ ^[1-9][0-9]*$ ]] || refuse "PAIRS takes a whole number of pairs, got '$PAIRS'"

opts=() names=() timing=0
for arg in "$@"; do
	case $arg in
	--markdown) MARKDOWN=1 ;;
	--[a-z]*=*)
		# A family's option, read the same way by both (the kernel's runner
		# takes argp's joined long form).
		[[ $arg =~ ^--[a-z][a-z_-]*=[^[:space:]]+$ ]] ||
			refuse "a family's option goes to both runners as --name=value, got '$arg'"
		opts+=("$arg")
		;;
	-*)
		# Both runners must read an option the same way: the kernel's
		# refuses -w0 and takes no space between an option and its value
		# here, where the names follow.
		[[ $arg =~ ^-(a|[wdpc][1-9][0-9]*)$ ]] ||
			refuse "options go to both runners as -wN -dN -a -pN -cN (N from 1) or --name=value, got '$arg'"
		opts+=("$arg")
		[[ $arg == -c* ]] || timing=1
		;;
	*) names+=("$arg") ;;
	esac
done
((${#names[@]})) || refuse "name at least one benchmark, such as trig-rawtp"
((timing)) || opts=(-w1 -d3 -a "${opts[@]}")

# run_upstream ARG...: the kernel's runner. It reads tracepoint ids from
# tracefs and expects it mounted; where the host has none mounted, it gets one
# in a mount namespace of its own, as bench does for itself.
run_upstream() {
	if [[ -d /sys/kernel/tracing/events ]]; then
		"$upstream" "$@"
	else
		# The inner shell expands its own "$0" "$@".
		# shellcheck disable=SC2016
		unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing && exec "$0" "$@"' "$upstream" "$@"
	fi
}

# summary_rate NAME SIDE COMMAND...: runs one benchmark and prints the first
# number of its Summary line (hits or throughput in M/s; htab-mem's
# per-producer k ops/s: the same unit on both sides), of its first per-CPU
# lookup line (bpf-hashmap-lookup's M lookups/s), or its median line's calls
# per second (bpf-nop, xdp-lb). A failed run ends the script.
summary_rate() {
	local name=$1 side=$2 out rate err
	shift 2
	err=$(mktemp)
	if ! out=$("$@" "${opts[@]}" "$name" 2>"$err"); then
		echo "$me: $name: $side failed: $(tail -n1 "$err")" >&2
		rm -f "$err"
		exit 1
	fi
	rm -f "$err"
	# bpf-hashmap-lookup: the kernel's runner prints no Summary, but
	# "cpuNN: lookup X.XXXM ± ..." per CPU, timed inside BPF; bench prints the
	# same line, and both sides are read from it (the first CPU's).
	rate=$(sed -n -e 's/^cpu[0-9]*: lookup \([0-9][0-9.]*\)M .*/\1/p' <<<"$out" | head -n1)
	# bpf-nop and xdp-lb: the median time a call inside BPF ("NAME: median X
	# ns/op" on both sides), as calls per second (1000 / X M/s), so that the
	# ratio reads as every other: higher is faster.
	[[ -n $rate ]] ||
		rate=$(awk '$2 == "median" && $4 == "ns/op," && $3 > 0 {printf "%.3f\n", 1000 / $3; exit}' <<<"$out")
	[[ -n $rate ]] ||
		rate=$(sed -n -e 's/^Summary: [^0-9]*\([0-9][0-9.]*\).*/\1/p' <<<"$out" | head -n1)
	if [[ -z $rate ]]; then
		echo "$me: $name: $side printed no Summary line" >&2
		exit 1
	fi
	printf '%s\n' "$rate"
}

# Why NAME cannot run on both here, or nothing. bench says it without running
# (--probe); the kernel's runner only by running, so it runs for a second.
refusal() {
	local name=$1 verdict out
	verdict=$(awk -v n="$name" '$1 == n {$1 = ""; sub(/^ +/, ""); print}' <<<"$probed")
	if [[ -z $verdict ]]; then
		echo "bench has no benchmark of that name"
	# "ok (trigger: ...)": bench runs it, on the trigger it names.
	elif [[ $verdict != ok && $verdict != "ok ("* ]]; then
		echo "bench: $verdict"
	elif ! grep -qxF -- "- $name" <<<"$upstream_list"; then
		echo "the kernel's runner has no benchmark of that name"
	# With the options as given (a family's, the producers): the last -w -d
	# win.
	elif ! out=$(run_upstream "${opts[@]}" -w1 -d1 "$name" 2>&1 >/dev/null); then
		# Its reason is the last line of its stderr.
		echo "the kernel's runner fails here: $(tail -n1 <<<"$out")"
	fi
}

prepare_bench
# Only the names asked for are probed: probing every benchmark would attach the
# -all variants to every kernel function, minutes under emulation (and what
# killed 2-CPU emulated guests).
known=$("$BENCH" --list | awk '{print $1}')
ours=()
for name in "${names[@]}"; do
	grep -qxF -- "$name" <<<"$known" && ours+=("$name")
done
probed=
if ((${#ours[@]})); then
	probed=$("$BENCH" --probe "${ours[@]}" 2>/dev/null || true)
fi
upstream_list=$("$upstream" --list 2>/dev/null || true)

if ((MARKDOWN)); then
	printf '| benchmark | upstream (M/s) | bench (M/s) | bench/upstream |\n|---|---|---|---|\n'
else
	printf '%-28s %14s %12s %15s\n' benchmark 'upstream M/s' 'bench M/s' bench/upstream
fi
for name in "${names[@]}"; do
	why=$(refusal "$name")
	if [[ -n $why ]]; then
		if ((MARKDOWN)); then
			printf '| %s | skipped: %s | | |\n' "$name" "$why"
		else
			printf '%s: skipped: %s\n' "$name" "$why"
		fi
		continue
	fi
	# The commands are evaluated inside pairs, hence the single quotes.
	# shellcheck disable=SC2016
	pairs "$name bench vs upstream" 'summary_rate "$name" bench "$BENCH"' \
		'summary_rate "$name" upstream run_upstream'
	if ((MARKDOWN)); then
		printf '| %s | %s | %s | %s |\n' "$name" "$PAIR_B" "$PAIR_A" "$PAIR_RATIO"
	else
		printf '%-28s %14s %12s %15s\n' "$name" "$PAIR_B" "$PAIR_A" "$PAIR_RATIO"
	fi
done
