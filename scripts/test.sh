#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the build's system packages when
# missing, checks formatting and lints, then runs every test. Run as root: the
# tests load BPF programs and attach probes for real.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
source scripts/cargo-env.sh

scripts/install-deps.sh
cargo fmt --all -- --check
cargo clippy --release --all-targets --quiet -- -D warnings
cargo test --release --quiet "$@"
