#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the build's system packages when
# missing, checks formatting and lints, then runs every test. Run as root: the
# tests load BPF programs and attach probes for real.
#
# The order is set by the long poles on a fresh 2-CPU machine: the VMs' set-up
# (packages, virtme-ng, two Debian kernels) downloads while the code builds,
# and the VM tests (two emulated guests, minutes of wall time) run beside the
# lints and the host tests. Their output is printed when they end, after the
# host tests'. Arguments go to the host tests (a filter, say).
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
stage "building and linting"
# One pass builds and lints: the project's own crates are compiled by
# clippy-driver, as `cargo clippy` does, but to binaries (a separate
# `cargo clippy` would check every dependency again: two minutes here).
# The examples are built (and linted) too: the measurement scripts run them.
# Test binaries are taken by path from cargo's own report, so that each can
# run while cargo works on something else.
driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
	{ echo "test.sh: clippy-driver is missing (rustup component add clippy)" >&2; exit 1; }
clippy=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# scripts/test-rustc.sh runs clippy-driver, and builds the test harnesses
# without optimisation.
BENCH_CLIPPY_DRIVER=$driver RUSTC_WORKSPACE_WRAPPER=$PWD/scripts/test-rustc.sh CLIPPY_ARGS=$clippy \
	cargo test --release --no-run --lib --bins --test host --test vm --examples \
	--message-format=json-render-diagnostics >"$logs/build.json"
# executable TARGET KIND: a test binary's path from cargo's report.
executable() {
	jq -r --arg target "$1" --arg kind "$2" \
		'select(.reason == "compiler-artifact" and .profile.test and .target.name == $target
			and (.target.kind | index($kind)) and .executable != null) | .executable' \
		"$logs/build.json" | tail -n1
}
lib_tests=$(executable bench lib)
bin_tests=$(executable bench bin)
host_tests=$(executable host test)
vm_tests=$(executable vm test)
for t in "$lib_tests" "$bin_tests" "$host_tests" "$vm_tests"; do
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

stage "unit tests"
"$lib_tests" --quiet
"$bin_tests" --quiet
stage "host tests"
# What the kernel logs from here on is the tests' (scripts/kernel_log_check.sh).
kernel_since=$(cut -d' ' -f1 /proc/uptime)
# One at a time: nearly every test runs a benchmark, and those hold the probe
# lock anyway; side by side, the few that do not slowed the rest (the suite
# took 509 s on two threads, 340 s on one, here).
"$host_tests" --quiet --test-threads=1 "$@"
stage "the kernel's log since the host tests began"
scripts/kernel_log_check.sh --since "$kernel_since"

stage "waiting for the VM tests"
rc=0
wait "$vm" || rc=$?
cat "$logs/vm"
((rc == 0)) || { echo "test.sh: the VM tests failed (exit $rc)" >&2; exit "$rc"; }
stage "all passed"
