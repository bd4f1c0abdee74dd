# Shared by the run_bench_*.sh scripts: options, running one benchmark, and
# printing one line (or one Markdown table row) per benchmark.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=$root/bench
failures=0
MARKDOWN=0
JSON_DIR=
KERNELS=
RUNS=${RUNS:-1}
ARGS=()
# Set by run_on_kernels for the runs it tabulates: bench_line then prints
# "label<TAB>summary" rows, after a "#kernel<TAB>release" row.
ROWS=${BENCH_KERNEL_ROWS:-0}

# Takes the scripts' common options out of "$@"; the rest goes to ARGS.
#   --markdown   print a Markdown table (for a commit message or a PR)
#   --json DIR   keep one result file per benchmark in DIR, for bench compare
#   --kernels L  run on each kernel of the list L (host, or one for run_in_vm.sh)
#   --runs N     (or RUNS=N) N independent runs of every benchmark, interleaved
#                round by round in one bench invocation, and bench's table of
#                means with 95 % intervals and changes from the first
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
	if [[ -n $KERNELS ]] && ((RUNS > 1)); then
		echo "$(basename "$0"): --runs interleaves benchmarks on one kernel; give it without --kernels" >&2
		exit 2
	fi
	if [[ -n $KERNELS ]]; then
		run_on_kernels
		exit $?
	fi
	if ((ROWS)); then
		printf '#kernel\t%s%s\n' "$(uname -r)" "$([[ ${BENCH_VM:-} == tcg ]] && echo ', TCG: emulated')"
	fi
	return 0
}

# --kernels host,6.1,6.12: runs this script once per kernel (host: here; any
# other: in a VM of scripts/run_in_vm.sh, one boot for the whole list) and
# prints one column per kernel. A script without one-line rows (the
# breakpoint tables) prints each kernel's output in turn instead. With
# --json DIR each kernel's results go to DIR/<kernel>/.
run_on_kernels() {
	local kernel outputs=() out rc status=0 args
	IFS=, read -r -a kernels <<<"$KERNELS"
	prepare_bench
	for kernel in "${kernels[@]}"; do
		args=("${ARGS[@]}")
		[[ -n $JSON_DIR ]] && args+=(--json "$JSON_DIR/$kernel")
		out=$(mktemp)
		outputs+=("$out")
		echo "$(basename "$0"): kernel $kernel..." >&2
		set +e
		if [[ $kernel == host ]]; then
			BENCH_KERNEL_ROWS=1 "$0" "${args[@]}" >"$out"
		else
			"$root/scripts/run_in_vm.sh" --kernel "$kernel" --exec -- \
				env BENCH_KERNEL_ROWS=1 ${PROD_CNT:+PROD_CNT=$PROD_CNT} "$0" "${args[@]}" >"$out"
		fi
		rc=$?
		set -e
		case $rc in
		0) ;;
		130 | 143) rm -f "${outputs[@]}"; exit "$rc" ;;
		*)
			echo "$(basename "$0"): kernel $kernel: exit code $rc" >&2
			status=1
			;;
		esac
	done
	if grep -v '^#kernel' "${outputs[0]}" | grep -q $'\t'; then
		kernel_columns "${kernels[@]}" -- "${outputs[@]}"
	else
		for out in "${outputs[@]}"; do
			printf '== %s (%s)\n' "${kernels[0]}" "$(sed -n 's/^#kernel\t//p' "$out")"
			kernels=("${kernels[@]:1}")
			grep -v '^#kernel' "$out" || true
		done
	fi
	rm -f "${outputs[@]}"
	return "$status"
}

# kernel_columns KERNEL... -- FILE...: joins the rows of each kernel's run by
# label, one column per kernel, in the order the labels first appear.
kernel_columns() {
	local names=()
	while [[ $1 != -- ]]; do names+=("$1"); shift; done
	shift
	awk -F'\t' -v markdown="$MARKDOWN" -v names="$(IFS=,; echo "${names[*]}")" '
		FNR == 1 { k++ }
		$1 == "#kernel" { head[k] = $2; next }
		NF >= 2 {
			if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
			cell[$1, k] = $2
		}
		END {
			split(names, name, ",")
			t[0, 0] = "benchmark"
			for (j = 1; j <= k; j++) t[0, j] = name[j] (head[j] == "" ? "" : " (" head[j] ")")
			for (i = 1; i <= n; i++) {
				t[i, 0] = order[i]
				for (j = 1; j <= k; j++) t[i, j] = ((order[i], j) in cell) ? cell[order[i], j] : "-"
			}
			for (i = 0; i <= n; i++)
				for (j = 0; j <= k; j++)
					if (length(t[i, j]) > w[j]) w[j] = length(t[i, j])
			for (i = 0; i <= n; i++) {
				if (markdown) {
					printf "|"
					for (j = 0; j <= k; j++) printf " %s |", t[i, j]
					print ""
					if (i == 0) { printf "|"; for (j = 0; j <= k; j++) printf "---|"; print "" }
				} else {
					for (j = 0; j < k; j++) printf "%-*s  ", w[j], t[i, j]
					print t[i, k]
				}
			}
		}' "$@"
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
# last column says how the kernel handled the probe ("-" where none).
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
