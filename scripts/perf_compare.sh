#!/usr/bin/env bash
# bench's perf family against `perf bench` (Debian's linux-perf), the same work
# on both sides (--repeat), interleaved pair by pair; prints the median ratio
# of usecs/op (bench / perf) per case. Run as root.
#   PAIRS=7 scripts/perf_compare.sh
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
PAIRS=${PAIRS:-7}
command -v perf >/dev/null || { echo "perf_compare: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
prepare_bench

# bench's usecs/op of a fixed run, from its result: elapsed time over the
# operations of all producers.
bench_usecs() {
	bench_json "$BENCH" -q "$@" | jq -r '.runs[-1].fixed | .elapsed_ns / 1000 / .ops'
}
# perf's, from its text (it has no other form). awk reads to the end: leaving
# early would close the pipe under the writer.
perf_usecs() { perf bench "$@" 2>/dev/null | awk '$2 == "usecs/op" && !found {print $1; found = 1}'; }

compare() { # label, bench arguments, perf arguments: bench / perf
	local ours theirs
	read -ra ours <<<"$2"
	read -ra theirs <<<"$3"
	pairs_line "$1" 'bench_usecs "${ours[@]}"' 'perf_usecs "${theirs[@]}"'
}

cpus=$(nproc)
compare "syscall basic" "-r 10000000 syscall-basic" "syscall basic"
compare "breakpoint thread -b0" "-r 200 -b 0 -p 1 -t 20 breakpoint-thread" \
	"--repeat=200 breakpoint thread --breakpoints=0 --parallelism=1 --threads=20"
compare "breakpoint thread -b4" "-r 200 -b 4 -p 1 -t 20 breakpoint-thread" \
	"--repeat=200 breakpoint thread --breakpoints=4 --parallelism=1 --threads=20"
compare "breakpoint enable" "-r 20000 --passive 0 --active 0 breakpoint-enable" \
	"--repeat=20000 breakpoint enable --passive=0 --active=0"
compare "breakpoint enable passive=$((2 * cpus))" "-r 20000 --passive $((2 * cpus)) --active 0 breakpoint-enable" \
	"--repeat=20000 breakpoint enable --passive=$((2 * cpus)) --active=0"
