# Shared by the run_bench_*.sh scripts: run one benchmark, print one line.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=$root/bench
failures=0

# Builds (if needed) before the first measurement, not during it.
prepare_bench() {
	"$BENCH" --list >/dev/null
}

# bench_run NAME [bench options...]
# Runs one benchmark; sets BENCH_OUT to its stdout and BENCH_VERDICT to "ok",
# "unsupported: <why>" or "error: <what>". Ctrl-C (or SIGTERM) of the
# benchmark stops the whole script.
bench_run() {
	local name=$1 err rc
	shift
	err=$(mktemp)
	set +e
	BENCH_OUT=$("$BENCH" "$@" "$name" 2>"$err")
	rc=$?
	set -e
	case $rc in
	0) BENCH_VERDICT=ok ;;
	4) BENCH_VERDICT=$(head -n1 "$err" | sed -e "s/^unsupported: $name: /unsupported: /") ;;
	130 | 143)
		rm -f "$err"
		exit "$rc"
		;;
	*)
		BENCH_VERDICT="error: $(head -n1 "$err" | sed -e 's/^error: //')"
		failures=$((failures + 1))
		;;
	esac
	rm -f "$err"
}

# bench_line LABEL NAME [bench options...]
# Prints "LABEL: <summary>" as the kernel's scripts do, or "LABEL: unsupported:
# <why>" when this kernel cannot run NAME.
bench_line() {
	local label=$1 summary
	shift
	bench_run "$@"
	if [[ $BENCH_VERDICT == ok ]]; then
		summary=$(tail -n1 <<<"$BENCH_OUT" | cut -d'(' -f1 | cut -d' ' -f3-)
	else
		summary=$BENCH_VERDICT
	fi
	printf "%-15s: %s\n" "$label" "$summary"
}

# Exits non-zero when a benchmark failed (unsupported ones are not failures).
finish() {
	((failures == 0)) || exit 1
}
