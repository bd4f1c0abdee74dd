# Shared by the run_bench_*.sh scripts: options, running one benchmark, and
# printing one line (or one Markdown table row) per benchmark.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=$root/bench
failures=0
MARKDOWN=0
JSON_DIR=
RUNS=${RUNS:-1}
ARGS=()

# Takes the scripts' common options out of "$@"; the rest goes to ARGS.
#   --markdown   print a Markdown table (for a commit message or a PR)
#   --json DIR   keep one result file per benchmark in DIR, for bench compare
#   --runs N     (or RUNS=N) N independent runs of every benchmark, interleaved
#                round by round in one bench invocation, and bench's table of
#                means with 95 % intervals and changes from the first
parse_common_args() {
	while (($#)); do
		case $1 in
		--markdown) MARKDOWN=1 ;;
		--runs)
			[[ $# -ge 2 ]] || { echo "$(basename "$0"): --runs needs a number" >&2; exit 2; }
			RUNS=$2
			shift
			;;
		--runs=*) RUNS=${1#--runs=} ;;
		--json)
			[[ $# -ge 2 ]] || { echo "$(basename "$0"): --json needs a directory" >&2; exit 2; }
			JSON_DIR=$2
			shift
			;;
		--json=*) JSON_DIR=${1#--json=} ;;
		-h | --help)
			sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//'
			exit 0
			;;
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
		if ((${#supported[@]} == 1)); then
			# One benchmark has no table: its runs line and Summary.
			printf '%s:\n' "${supported[0]}"
			tail -n2 <<<"$out"
		elif ((MARKDOWN)); then
			grep '^|' <<<"$out" || true
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
	((MARKDOWN)) || return 0
	local row="|" rule="|" col
	for col in "$@"; do
		row+=" $col |"
		rule+="---|"
	done
	printf '%s\n%s\n' "$row" "$rule"
}

# bench_line LABEL NAME [bench options...]
# Prints "LABEL: <summary>" as the kernel's scripts do (or a Markdown row), or
# "unsupported: <why>" when this kernel cannot run NAME.
bench_line() {
	local label=$1 summary
	shift
	bench_run "$@"
	if [[ $BENCH_VERDICT == ok ]]; then
		summary=$(tail -n1 <<<"$BENCH_OUT" | cut -d'(' -f1 | cut -d' ' -f3-)
	else
		summary=$BENCH_VERDICT
	fi
	if ((MARKDOWN)); then
		printf '| %s | %s |\n' "$label" "$(sed -e 's/^ *//' -e 's/ *$//' <<<"$summary")"
	else
		printf "%-15s: %s\n" "$label" "$summary"
	fi
}

# For the measurement scripts: the mean of a Summary line read on stdin, and
# the median of numbers one per line.
summary_mean() { tail -n1 | cut -d'(' -f1 | cut -d' ' -f3- | awk '{print $1}'; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# Exits non-zero when a benchmark failed (unsupported ones are not failures).
finish() {
	((failures == 0)) || exit 1
}
