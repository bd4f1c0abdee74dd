# Shared by the run_bench_*.sh scripts: options, running one benchmark, and
# printing one line (or one Markdown table row) per benchmark.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=$root/bench
failures=0
MARKDOWN=0
JSON_DIR=
ARGS=()

# Takes the scripts' common options out of "$@"; the rest goes to ARGS.
#   --markdown   print a Markdown table (for a commit message or a PR)
#   --json DIR   keep one result file per benchmark in DIR, for bench compare
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
	return 0
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
# "unsupported: <why>" when this kernel cannot run NAME. With PROBE_PATH=1 a
# last column says how the kernel handled the probe ("-" where none).
bench_line() {
	local label=$1 summary path=
	shift
	bench_run "$@"
	if [[ $BENCH_VERDICT == ok ]]; then
		summary=$(tail -n1 <<<"$BENCH_OUT" | cut -d'(' -f1 | cut -d' ' -f3-)
	else
		summary=$BENCH_VERDICT
	fi
	if ((${PROBE_PATH:-0})); then
		path=$(sed -n -e 's/^probe path: \([^ ]*\).*/\1/p' <<<"$BENCH_OUT")
		path=${path:--}
	fi
	if ((MARKDOWN)); then
		summary=$(sed -e 's/^ *//' -e 's/ *$//' <<<"$summary")
		if [[ -n $path ]]; then
			printf '| %s | %s | %s |\n' "$label" "$summary" "$path"
		else
			printf '| %s | %s |\n' "$label" "$summary"
		fi
	elif [[ -n $path ]]; then
		printf "%-15s: %-45s %s\n" "$label" "$summary" "$path"
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
