#!/usr/bin/env bash
# The soak test: a two-minute uprobe run whose memory must stay flat and whose
# per-second output must stay steady. Separate from the default suite.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
source scripts/cargo-env.sh
scripts/install-deps.sh
exec cargo test --release --test host soak:: -- --ignored --nocapture
