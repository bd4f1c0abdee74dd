# Shared by the scripts, functions only: the run_bench_*.sh scripts' options,
# running one benchmark and printing one line (or one Markdown table row) per
# benchmark; the measurement scripts' pairs. The --kernels driver, which
# re-runs a script per kernel, is scripts/kernels.sh.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# BENCH_BIN: a fixed binary instead of the tree's (an older build, held
# against this one).
BENCH=${BENCH_BIN:-$root/bench}
failures=0
MARKDOWN=0
JSON_DIR=
KERNELS=
RUNS=${RUNS:-1}
ARGS=()
# Set by run_on_kernels for the runs it tabulates: bench_line then prints
# "label<TAB>summary" rows, after a "#kernel<TAB>release" row.
ROWS=${BENCH_KERNEL_ROWS:-0}

# Prints the script's help: its header comment, down to its `set` line.
usage() {
	sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//'
}

# The measurement scripts work from the tree's root, with cargo on PATH (they
# build examples).
enter_root() {
	cd "$root"
	source scripts/cargo-env.sh
}

# Takes the scripts' common options out of "$@"; the rest goes to ARGS.
#   --markdown   print a Markdown table (for a commit message or a PR)
#   --json DIR   keep one result file per benchmark in DIR, for bench compare
#   --kernels L  run on each kernel of the list L (host, or one for run_in_vm.sh)
#   --runs N     (or RUNS=N) N independent runs of every benchmark, interleaved
#                round by round in one bench invocation, and bench's table of
#                means with 95 % intervals and changes from the first; how
#                many a change of 5 % needs here: the recommendation of
#                `bench calibrate BENCHMARK` (9 to 18 on a quiet 2-CPU VM)
# WD="-w0 -d1" (the environment) replaces a script's warm-up and duration
# (upstream's -w2 -d5 by default): for a quick look, or a test of the layout.
parse_common_args() {
	while (($#)); do
		case $1 in
		--markdown) MARKDOWN=1 ;;
		--json)
			[[ $# -ge 2 ]] || { echo "$(basename "$0"): --json needs a directory" >&2; exit 2; }
			JSON_DIR=$2
			shift
			;;
		--json=*) JSON_DIR=${1#--json=} ;;
		--kernels)
			[[ $# -ge 2 ]] || { echo "$(basename "$0"): --kernels needs a list such as host,6.1,6.12" >&2; exit 2; }
			KERNELS=$2
			shift
			;;
		--kernels=*) KERNELS=${1#--kernels=} ;;
		--runs)
			[[ $# -ge 2 ]] || { echo "$(basename "$0"): --runs needs a number" >&2; exit 2; }
			RUNS=$2
			shift
			;;
		--runs=*) RUNS=${1#--runs=} ;;
		-h | --help) usage; exit 0 ;;
		*) ARGS+=("$1") ;;
		esac
		shift
	done
	if [[ -n $JSON_DIR ]]; then
		mkdir -p "$JSON_DIR"
	fi
	if ! [[ $RUNS =~ ^[1-9][0-9]*$ ]]; then
		echo "$(basename "$0"): --runs takes a whole number of runs, got '$RUNS'" >&2
		exit 2
	fi
	if [[ -n $KERNELS ]] && ((RUNS > 1)); then
		echo "$(basename "$0"): --runs interleaves benchmarks on one kernel; give it without --kernels" >&2
		exit 2
	fi
	if [[ -n $KERNELS ]]; then
		# The driver re-runs this script once per kernel: not library code.
		source "$root/scripts/kernels.sh"
		run_on_kernels
		exit $?
	fi
	if ((ROWS)); then
		printf '#kernel\t%s%s\n' "$(uname -r)" "$([[ ${BENCH_VM:-} == tcg ]] && echo ', TCG: emulated')"
	fi
	return 0
}

# interleaved_table [bench options...] -- NAME...
# With RUNS > 1: runs every NAME this kernel supports in one bench invocation,
# RUNS rounds interleaved, and prints bench's closing table (Markdown with
# --markdown); then one "NAME: unsupported: <why>" line per refused NAME.
interleaved_table() {
	local options=() names=() supported=() refused=() name verdict rc out
	while (($#)) && [[ $1 != -- ]]; do
		options+=("$1")
		shift
	done
	shift
	names=("$@")
	local probed
	probed=$("$BENCH" --probe 2>/dev/null || true)
	for name in "${names[@]}"; do
		verdict=$(awk -v n="$name" '$1 == n {$1 = ""; sub(/^ +/, ""); print}' <<<"$probed")
		if [[ $verdict == ok ]]; then
			supported+=("$name")
		else
			refused+=("$name: ${verdict:-unsupported: not probed}")
		fi
	done
	((MARKDOWN)) && options+=(--markdown)
	[[ -n $JSON_DIR ]] && options+=(--json "$JSON_DIR")
	if ((${#supported[@]})); then
		set +e
		out=$("$BENCH" -q --runs "$RUNS" "${options[@]}" "${supported[@]}")
		rc=$?
		set -e
		case $rc in
		0) ;;
		130 | 143) exit "$rc" ;;
		*) failures=$((failures + 1)) ;;
		esac
		if ((MARKDOWN)); then
			# bench ends with the table, of one benchmark too.
			grep '^|' <<<"$out" || true
		elif ((${#supported[@]} == 1)); then
			# One benchmark: its runs line and Summary.
			printf '%s:\n' "${supported[0]}"
			tail -n2 <<<"$out"
		else
			sed -n '/^Interleaved:/,$p' <<<"$out"
		fi
	fi
	for name in "${refused[@]}"; do
		printf '%s\n' "$name"
	done
}

# Builds (if needed) before the first measurement, not during it.
prepare_bench() {
	"$BENCH" --list >/dev/null
}

# plain_example NAME: builds examples/NAME.rs, a bare loop a measurement script
# holds bench against, and prints the path of its binary.
plain_example() {
	cargo build --release --quiet --example "$1"
	echo "$root/target/release/examples/$1"
}

# bench_run NAME [bench options...]
# Runs one benchmark; sets BENCH_OUT to its stdout and BENCH_VERDICT to "ok",
# "unsupported: <why>" or "error: <what>". With --json DIR the result is kept in
# DIR/NAME.json (DIR/$JSON_NAME.json when set). Ctrl-C (or SIGTERM) of the
# benchmark stops the whole script.
bench_run() {
	local name=$1 err rc keep=()
	shift
	[[ -n $JSON_DIR ]] && keep=(--json "$JSON_DIR/${JSON_NAME:-$name}.json")
	err=$(mktemp)
	set +e
	BENCH_OUT=$("$BENCH" "$@" "${keep[@]}" "$name" 2>"$err")
	rc=$?
	set -e
	case $rc in
	0) BENCH_VERDICT=ok ;;
	4) BENCH_VERDICT=$(grep -m1 '^unsupported:' "$err" | sed -e "s/^unsupported: $name: /unsupported: /") ;;
	130 | 143)
		rm -f "$err"
		exit "$rc"
		;;
	*)
		# The reason is the last line: a warning may come before it.
		BENCH_VERDICT="error: $(tail -n1 "$err" | sed -e 's/^error: //')"
		failures=$((failures + 1))
		;;
	esac
	rm -f "$err"
}

# Prints a table header: plain text prints nothing, Markdown its header rows.
table_header() { # column names...
	((MARKDOWN && !ROWS)) || return 0
	local row="|" rule="|" col
	for col in "$@"; do
		row+=" $col |"
		rule+="---|"
	done
	printf '%s\n%s\n' "$row" "$rule"
}

# bench_line LABEL NAME [bench options...]
# Prints "LABEL: <summary>" as the kernel's scripts do (or a Markdown row), or
# "unsupported: <why>" when this kernel cannot run NAME. With PROBE_PATH=1 a
# last column says how the kernel handled the probe ("-" where none);
# LABEL_WIDTH (15 by default) is the label's width, as the kernel's script pads it.
bench_line() {
	local label=$1 summary path=
	shift
	bench_run "$@"
	if [[ $BENCH_VERDICT == ok ]]; then
		summary=$(tail -n1 <<<"$BENCH_OUT" | cut -d'(' -f1 | cut -d' ' -f3-)
		# The cut above drops the summary's own mark of an emulated VM.
		[[ ${BENCH_VM:-} == tcg ]] && summary="${summary% }, emulated (TCG)"
	else
		summary=$BENCH_VERDICT
	fi
	if ((${PROBE_PATH:-0})); then
		path=$(sed -n -e 's/^probe path: \([^ ]*\).*/\1/p' <<<"$BENCH_OUT")
		path=${path:--}
	fi
	if ((ROWS)); then
		# One cell per kernel: the probe path goes with the summary.
		summary=$(sed -e 's/^ *//' -e 's/ *$//' <<<"$summary")
		printf '%s\t%s\n' "$label" "$summary${path:+ ($path)}"
	elif ((MARKDOWN)); then
		summary=$(sed -e 's/^ *//' -e 's/ *$//' <<<"$summary")
		if [[ -n $path ]]; then
			printf '| %s | %s | %s |\n' "$label" "$summary" "$path"
		else
			printf '| %s | %s |\n' "$label" "$summary"
		fi
	elif [[ -n $path ]]; then
		printf "%-15s: %-45s %s\n" "$label" "$summary" "$path"
	else
		printf "%-${LABEL_WIDTH:-15}s: %s\n" "$label" "$summary"
	fi
}

# summary_row LABEL SUMMARY: one line as run_common.sh's summarize functions
# print it ("%-20s %s"), a Markdown row, or a --kernels cell.
summary_row() {
	if ((ROWS)); then
		printf '%s\t%s\n' "$1" "$2"
	elif ((MARKDOWN)); then
		printf '| %s | %s |\n' "$1" "$2"
	else
		printf '%-20s %s\n' "$1" "$2"
	fi
}

# cut_line ops|hits LABEL NAME [bench options...]: the summary as
# run_common.sh's summarize_ops ("LABEL throughput: X ± Y M ops/s, latency:
# Z ns/op", from the kernel runner's ops lines), summarize ("LABEL X ± Y M/s
# (drops ...)", from its hits lines), summarize_percentage ("LABEL P%") or
# summarize_total ("LABEL X ± Y M/s" of total operations) cuts it, or why this
# kernel cannot run NAME.
cut_line() {
	local kind=$1 label=$2 summary
	shift 2
	bench_run "$@"
	if [[ $BENCH_VERDICT != ok ]]; then
		summary_row "$label" "$BENCH_VERDICT"
		return
	fi
	summary=$(tail -n1 <<<"$BENCH_OUT")
	field() { sed -E "s/.*$1 +([0-9.]+ $2).*/\1/" <<<"$summary"; }
	case $kind in
	ops) summary_row "$label" "throughput: $(field throughput '± [0-9.]+ [KM] ops\/s'), latency: $(field latency '[mn]s\/op')" ;;
	hits) summary_row "$label" "$(field hits '± [0-9.]+M\/s') (drops $(field drops '± [0-9.]+M\/s'))" ;;
	percentage) summary_row "$label" "$(sed -E 's/.*Percentage = +([0-9]+\.[0-9]+).*/\1/' <<<"$summary")%" ;;
	total) summary_row "$label" "$(field 'total operations' '± [0-9.]+M\/s')" ;;
	esac
}

# script_args [script arguments...]: the common options, no other argument;
# sets WD_ARGS to the warm-up and duration (WD, default "-w2 -d5") and --runs.
script_args() {
	parse_common_args "$@"
	((${#ARGS[@]} == 0)) || { echo "$(basename "$0"): unexpected argument ${ARGS[0]}" >&2; exit 2; }
	read -r -a WD_ARGS <<<"${WD:--w2 -d5}"
	((RUNS > 1)) && WD_ARGS+=(--runs "$RUNS")
	return 0
}

# loop_script NAME LABEL [script arguments...]: the kernel's
# run_bench_bpf_loop.sh and run_bench_bpf_for.sh, for NAME (bpf-loop,
# bpf-for): each thread count (THREADS) and --nr_loops (NR_LOOPS), a subtitle
# and a cut_line each; in a table, the thread count and loops in the label.
loop_script() {
	local name=$1 label=$2 t i threads loops
	shift 2
	script_args "$@"
	read -r -a threads <<<"${THREADS:-1 4 8 12 16}"
	read -r -a loops <<<"${NR_LOOPS:-10 100 500 1000 5000 10000 50000 100000 500000 1000000}"
	prepare_bench
	table_header case "throughput, latency"
	for t in "${threads[@]}"; do
		for i in "${loops[@]}"; do
			JSON_NAME=$name-p$t-nr_loops$i
			if ((MARKDOWN || ROWS)); then
				cut_line ops "$label p$t nr_loops $i" "$name" "${WD_ARGS[@]}" -a -p "$t" --nr_loops "$i"
			else
				printf '\t%s\n' "nr_loops: $i, nr_threads: $t"
				cut_line ops "$label: " "$name" "${WD_ARGS[@]}" -a -p "$t" --nr_loops "$i"
				printf '\n'
			fi
		done
	done
	finish
}

# The median of numbers one per line.
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# bench_json BIN [bench options...] NAME: runs bench with its result on
# stdout (--json -); the text report, which then goes to stderr, is shown
# only when bench fails.
bench_json() {
	local err out
	err=$(mktemp)
	if ! out=$("$@" --json - 2>"$err"); then
		cat "$err" >&2
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
	printf '%s\n' "$out"
}

# json_mean BIN [bench options...] NAME: the mean rate of a timed run's
# first channel (the hits, the operations), in millions per second, read
# from its result: bench-result/3's summary.channels[0], or an older
# binary's summary.hits, the same quantity.
json_mean() {
	bench_json "$@" |
		jq -r '.runs[-1].summary | ((.channels // [.hits])[0].mean) / 1e6' |
		awk '{printf "%.6g\n", $1}'
}

# pairs LABEL COMMAND_A COMMAND_B: PAIRS (default 5) pairs of runs, each
# command (a string, evaluated) printing one number. Which side goes first
# alternates pair by pair: the first of two back-to-back runs tends to be the
# faster on these machines. Each pair is shown on stderr; sets PAIR_A and
# PAIR_B to each side's median and PAIR_RATIO to the median of the per-pair
# ratios A / B. The measurement scripts all compare through it.
pairs() {
	# Prefixed locals: the commands are evaluated here and must see the
	# caller's variables, not these.
	local _label=$1 _side_a=$2 _side_b=$3 _i _a _b _as=() _bs=() _ratios=()
	for ((_i = 0; _i < ${PAIRS:-5}; _i++)); do
		if ((_i % 2)); then
			_b=$(eval "$_side_b")
			_a=$(eval "$_side_a")
		else
			_a=$(eval "$_side_a")
			_b=$(eval "$_side_b")
		fi
		_as+=("$_a") _bs+=("$_b")
		_ratios+=("$(awk -v a="$_a" -v b="$_b" 'BEGIN {printf "%.4f", a / b}')")
		printf '  %-40s pair %d: %12s vs %12s  ratio %s\n' "$_label" "$_i" "$_a" "$_b" "${_ratios[-1]}" >&2
	done
	PAIR_A=$(printf '%s\n' "${_as[@]}" | median)
	PAIR_B=$(printf '%s\n' "${_bs[@]}" | median)
	PAIR_RATIO=$(printf '%s\n' "${_ratios[@]}" | median)
}

# pairs_line LABEL COMMAND_A COMMAND_B: pairs, then "LABEL median ratio R
# over N pairs" (A / B) on stdout.
pairs_line() {
	pairs "$@"
	printf '%-42s median ratio %s over %d pairs\n' "$1" "$PAIR_RATIO" "${PAIRS:-5}"
}

# Exits non-zero when a benchmark failed (unsupported ones are not failures).
finish() {
	((failures == 0)) || exit 1
}
