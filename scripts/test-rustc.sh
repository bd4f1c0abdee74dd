#!/usr/bin/env bash
# The rustc wrapper scripts/test.sh builds the project's own crates with:
# clippy lints every target, and the test harnesses (`--test`: the unit and
# integration test binaries) build without optimisation. What those binaries
# run is assertions, not measured loops (the host tests measure the bench
# binary, which keeps the release profile), and at opt-level 3 the library's
# unit-test build alone took 80 s of CPU of the test command's ten minutes.
# Called by cargo as RUSTC_WORKSPACE_WRAPPER: $1 is rustc, then its arguments.
set -euo pipefail
driver=${BENCH_CLIPPY_DRIVER:?scripts/test.sh sets BENCH_CLIPPY_DRIVER}
for arg in "$@"; do
	if [[ $arg == --test ]]; then
		# The last -C opt-level given wins.
		exec "$driver" "$@" -C opt-level=0
	fi
done
exec "$driver" "$@"
