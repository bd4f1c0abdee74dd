#!/usr/bin/env bash
# A fleet on one machine: three machines' results meet in one PostgreSQL
# history. Starts a throwaway PostgreSQL server (Debian's package, a cluster
# in a temporary folder, listening on 127.0.0.1 at a free port and on a unix
# socket, nowhere else), then runs the job on this host and in two kernel
# guests at once (scripts/run_in_vm.sh). Each guest writes its result files
# into a folder it shares with the host (never over the network); the host
# pushes them into the store (`bench history add`) while its own runs append
# (`--history`). Ends with `bench history changes` and the page over every
# kernel, written to target/fleet/page/index.html.
#
#   sudo scripts/fleet.sh                          # guests 6.12 and 6.1
#   sudo scripts/fleet.sh --kernels "6.12 6.1" --runs 5
#
# The job: --runs fixed-count runs of each of trig-syscall-count and
# trig-uprobe-nop (counts, so an emulated guest finishes). The password is
# passed to bench through PGPASSWORD, never on a command line.
# Exit code: 0, or the first failing step's.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BENCH=${BENCH:-$root/target/release/bench}
JOB=(trig-syscall-count trig-uprobe-nop)

# --job DIR RUNS [HISTORY]: the job itself, on whichever machine runs it:
# result files in DIR, and appended to HISTORY when given.
if [[ ${1:-} == --job ]]; then
	dir=$2 runs=$3 history=${4:-}
	mkdir -p "$dir"
	for ((i = 0; i < runs; i++)); do
		for name in "${JOB[@]}"; do
			"$BENCH" -q -r 20000 --json "$dir/$name-$i.json" ${history:+--history "$history"} "$name"
		done
	done
	exit 0
fi

kernels=(6.12 6.1)
runs=3
while (($#)); do
	case $1 in
	--kernels) read -r -a kernels <<<"$2"; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "fleet.sh: unknown option '$1' (--kernels, --runs)" >&2; exit 2 ;;
	esac
done
((EUID == 0)) || { echo "fleet.sh: run as root (the guests and the BPF runs need it)" >&2; exit 2; }
[[ -x $BENCH ]] || (cd "$root" && source scripts/cargo-env.sh && cargo build --release -q)

source "$root/scripts/pg_throwaway.sh"
out=$root/target/fleet
rm -rf "$out"
mkdir -p "$out"
pg_start "$(mktemp -d /tmp/bench-fleet-pg.XXXXXX)" fleet
trap pg_stop EXIT
export PGPASSWORD=$POSTGRES_PASSWORD
store=$PG_SHOWN
history() { "$BENCH" history --history "$store" "$@"; }

echo "# store: $store (127.0.0.1 and a unix socket only)"
history init
guests=()
for kernel in "${kernels[@]}"; do
	# The guest sees the repository read-write: its results land in
	# target/fleet/guest-KERNEL, and the host reads them there.
	"$root/scripts/run_in_vm.sh" --kernel "$kernel" --exec -- \
		scripts/fleet.sh --job "target/fleet/guest-$kernel" "$runs" \
		>"$out/guest-$kernel.log" 2>&1 &
	guests+=($!)
	echo "# guest $kernel started (pid $!)"
done

# push_guests: every guest result file so far into the store; a file
# pushed twice is one entry.
push_guests() {
	local kernel files
	for kernel in "${kernels[@]}"; do
		files=("$out/guest-$kernel"/*.json)
		[[ -e ${files[0]} ]] || continue
		history add --label "machine=guest-$kernel" "${files[@]}" | sed "s/^/# guest $kernel: /"
	done
}

"$0" --job "$out/host" "$runs" "$store" &
host=$!
while kill -0 "${guests[@]}" 2>/dev/null || kill -0 "$host" 2>/dev/null; do
	push_guests
	sleep 20
done
rc=0
wait "$host" || rc=$?
for pid in "${guests[@]}"; do
	wait "$pid" || rc=$?
done
push_guests
echo
history list
echo
history changes --by kernel
history report --by kernel "$out/page"
exit "$rc"
