# Shared by the run_bench_*.sh scripts: run one benchmark, print one line.
# shellcheck shell=bash

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=$root/bench
failures=0

# Builds (if needed) before the first measurement, not during it.
prepare_bench() {
	"$BENCH" --list >/dev/null
}

# bench_line LABEL NAME [bench options...]
# Prints "LABEL: <summary>" as the kernel's scripts do, or "LABEL: unsupported:
# <why>" when this kernel cannot run NAME. Ctrl-C (or SIGTERM) of the
# benchmark stops the whole script.
bench_line() {
	local label=$1 name=$2 err out rc summary
	shift 2
	err=$(mktemp)
	set +e
	out=$("$BENCH" "$@" "$name" 2>"$err")
	rc=$?
	set -e
	case $rc in
	0) summary=$(tail -n1 <<<"$out" | cut -d'(' -f1 | cut -d' ' -f3-) ;;
	4) summary=$(head -n1 "$err" | sed -e "s/^unsupported: $name: /unsupported: /") ;;
	130 | 143)
		rm -f "$err"
		exit "$rc"
		;;
	*)
		summary="error: $(head -n1 "$err" | sed -e 's/^error: //')"
		failures=$((failures + 1))
		;;
	esac
	rm -f "$err"
	printf "%-15s: %s\n" "$label" "$summary"
}

# Exits non-zero when a benchmark failed (unsupported ones are not failures).
finish() {
	((failures == 0)) || exit 1
}
