#!/usr/bin/env bash
# bench's history against the trackers' own tools: Apache Otava reads the
# CSV that `bench history export --format otava` writes and finds its change
# points beside bench's (`otava analyze`, and Otava's original E-divisive
# with its permutation test on the same values); the BMF export is validated
# against Bencher's published JSON schema (scripts/bmf.schema.json, from
# bencher.dev/bmf.json) with Python's jsonschema; and Otava reads a
# PostgreSQL history itself (a throwaway server on 127.0.0.1, its postgres
# tests against the CSV's and bench's --linear). Prints Markdown tables.
#
#   scripts/history_trackers.sh                      # synthetic series, 5 seeds
#   scripts/history_trackers.sh --history H.sqlite   # every series of a history
#   scripts/history_trackers.sh --no-postgres        # without the PostgreSQL part
#
# Installs apache-otava and jsonschema from PyPI into a virtual environment
# in $BENCH_TRACKERS_VENV (default ~/.cache/bench-trackers) the first time;
# python3-venv with apt when missing. Exit code: 0, or 1 when a BMF file is
# not valid or Otava cannot read a CSV.
set -euo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

venv=${BENCH_TRACKERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/bench-trackers}
if [[ ! -x $venv/bin/otava ]]; then
	python3 -m venv "$venv" 2>/dev/null || {
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
		python3 -m venv "$venv"
	}
	"$venv/bin/pip" install -q apache-otava==0.8.0 jsonschema >&2
fi
prepare_bench
args=()
postgres=1
for arg in "$@"; do
	if [[ $arg == --no-postgres ]]; then postgres=0; else args+=("$arg"); fi
done
if ((postgres)); then
	source "$root/scripts/pg_throwaway.sh"
	pg_start "$(mktemp -d /tmp/bench-trackers-pg.XXXXXX)" trackers
	trap pg_stop EXIT
	# The URL (its password) through the environment, not the command line.
	export BENCH_TRACKERS_POSTGRES=$PG_URL
	args+=(--postgres-shown "$PG_SHOWN")
fi
PATH=$venv/bin:$PATH "$venv/bin/python" "$root/scripts/history_trackers.py" --bench "$root/target/release/bench" "${args[@]}"
