#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the build's system packages when
# missing, checks formatting and lints, then runs every test. Run as root: the
# tests load BPF programs and attach probes for real.
#
# The order is set by the long poles on a fresh 2-CPU machine: the VMs' set-up
# (packages, virtme-ng, two Debian kernels) downloads while the code builds;
# the VM tests (two emulated guests, minutes of wall time) and the host tests
# start as soon as the binary and their harnesses are built, and the rest of
# the build (the unit tests, the examples) goes on beside them. The unit and
# VM tests' output is printed when they end, after the host tests'.
# Arguments go to the host tests (a filter, say).
#
# Exit code: 0 when everything passed, else the first failure's.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
source scripts/cargo-env.sh

started=$SECONDS
stage() { echo "test.sh: $1 ($((SECONDS - started)) s)" >&2; }

scripts/install-deps.sh
logs=$(mktemp -d "${TMPDIR:-/tmp}/bench-test.XXXXXX")
children=()
cleanup() {
	local pid
	# By session: `timeout` (in run_in_vm.sh) moves qemu to a process group
	# of its own, and a guest left running would eat a CPU for minutes.
	for pid in "${children[@]}"; do
		pkill -TERM -s "$pid" 2>/dev/null || true
	done
	rm -rf "$logs"
}
trap cleanup EXIT

# Each in a session of its own, so that the trap above ends its qemu too.
# The browser of the history page's test and the PostgreSQL server of the
# PostgreSQL history's tests come first, in the same chain: one apt-get at
# a time.
stage "setting the browser and the VMs up in the background"
setsid bash -c 'scripts/install-deps.sh --browser --postgresql && scripts/run_in_vm.sh --prepare --kernel 6.12 && scripts/run_in_vm.sh --prepare --kernel 6.1' \
	>"$logs/prepare" 2>&1 </dev/null &
prepare=$!
children+=("$prepare")

cargo fmt --all -- --check
# One pass builds and lints: the project's own crates are compiled by
# clippy-driver, as `cargo clippy` does, but to binaries (a separate
# `cargo clippy` would check every dependency again: two minutes here).
# scripts/test-rustc.sh runs clippy-driver, and builds the test harnesses
# without optimisation. Test binaries are taken by path from cargo's own
# report.
driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
	{ echo "test.sh: clippy-driver is missing (rustup component add clippy)" >&2; exit 1; }
clippy=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# build REPORT TARGETS...: builds and lints, cargo's report in $logs/REPORT.
build() {
	local report=$1
	shift
	BENCH_CLIPPY_DRIVER=$driver RUSTC_WORKSPACE_WRAPPER=$PWD/scripts/test-rustc.sh CLIPPY_ARGS=$clippy \
		cargo test --release --no-run "$@" --message-format=json-render-diagnostics >"$logs/$report.json"
}
# executable REPORT TARGET KIND: a test binary's path from cargo's report.
executable() {
	jq -r --arg target "$2" --arg kind "$3" \
		'select(.reason == "compiler-artifact" and .profile.test and .target.name == $target
			and (.target.kind | index($kind)) and .executable != null) | .executable' \
		"$logs/$1.json" | tail -n1
}
# The build is in two parts: first what the host and VM tests need (the
# binary and their harnesses), so that they start as soon as it is there;
# then, beside them, the library's unit tests and the examples (linted, and
# run by the measurement scripts), where the build would otherwise leave a
# CPU idle while it finishes the library's test harness.
stage "building and linting bench and its integration tests"
build first --bins --test host --test vm
bin_tests=$(executable first bench bin)
host_tests=$(executable first host test)
vm_tests=$(executable first vm test)
for t in "$bin_tests" "$host_tests" "$vm_tests"; do
	[[ -x $t ]] || { echo "test.sh: a test binary is missing from cargo's report" >&2; exit 1; }
done

stage "waiting for the browser's and the VMs' set-up"
if ! wait "$prepare"; then
	cat "$logs/prepare" >&2
	echo "test.sh: the browser's or the VMs' set-up failed" >&2
	exit 1
fi
stage "VM tests started in the background"
# One guest at a time: each emulated CPU takes a host CPU whole, and two at
# once left the host tests none while they ran.
setsid "$vm_tests" --test-threads=1 >"$logs/vm" 2>&1 </dev/null &
vm=$!
children+=("$vm")

stage "the library's unit tests and the examples: built, linted and run in the background"
# unit_tests: the second part of the build, then the unit tests; their
# output is printed after the host tests'.
unit_tests() {
	build second --lib --examples
	local lib_tests
	lib_tests=$(executable second bench lib)
	[[ -x $lib_tests ]] || { echo "test.sh: the unit tests are missing from cargo's report" >&2; exit 1; }
	"$lib_tests" --quiet
	"$bin_tests" --quiet
}
export -f build executable unit_tests
export driver clippy logs bin_tests
setsid bash -c 'set -euo pipefail; unit_tests' >"$logs/unit" 2>&1 </dev/null &
unit=$!
children+=("$unit")

stage "host tests"
# What the kernel logs from here on is the tests' (scripts/kernel_log_check.sh).
kernel_since=$(cut -d' ' -f1 /proc/uptime)
# One at a time: nearly every test runs a benchmark, and those hold the
# probe lock anyway.
"$host_tests" --quiet --test-threads=1 "$@"
stage "the kernel's log since the host tests began"
scripts/kernel_log_check.sh --since "$kernel_since"

stage "waiting for the unit tests"
rc=0
wait "$unit" || rc=$?
cat "$logs/unit"
((rc == 0)) || { echo "test.sh: the unit tests' build, lints or run failed (exit $rc)" >&2; exit "$rc"; }

stage "waiting for the VM tests"
wait "$vm" || rc=$?
cat "$logs/vm"
((rc == 0)) || { echo "test.sh: the VM tests failed (exit $rc)" >&2; exit "$rc"; }
stage "all passed"
