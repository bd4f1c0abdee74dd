#!/usr/bin/env bash
# Installs what the build needs and a fresh Debian machine lacks: clang for the
# BPF programs, libelf-dev and zlib1g-dev (their static archives are linked into
# the binary), pkg-config and make for the vendored libbpf. Does nothing
# when all is present; needs root (apt-get) otherwise.
#
#   --browser     Debian's chromium too: the test of `bench history report`'s page
#                 opens it in a headless browser (the test command installs it
#                 beside the build; the tool itself never needs it)
#   --postgresql  Debian's PostgreSQL server too, and openssl: the tests of
#                 the PostgreSQL history start a throwaway cluster of their
#                 own, with TLS from a CA they make (the test command
#                 installs them beside the build; bench never needs them)
set -euo pipefail

# groff-base: the man page test checks `bench man` with groff; jq: the
# measurement scripts read results (--json -) with it.
packages=(clang libelf-dev zlib1g-dev pkg-config linux-libc-dev make groff-base jq)
# bpf/crypto.bpf.c needs clang 15+ (BTF type tags): where the default clang
# is older (Debian 12's is 14), a versioned one beside it. A machine without
# clang reads as version 0 (under pipefail, a missing clang must not end the
# script here).
clang_major=$({ clang --version 2>/dev/null || true; } | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -1)
if ((${clang_major:-0} < 15)) && ! command -v clang-19 >/dev/null 2>&1; then
	packages+=(clang-19)
fi
for option in "$@"; do
	case $option in
	--browser) packages+=(chromium) ;;
	--postgresql) packages+=(postgresql openssl) ;;
	*) echo "install-deps: unknown option '$option' (--browser and --postgresql are the options)" >&2; exit 2 ;;
	esac
done
missing=()
for pkg in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	[[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
	if ((EUID != 0)); then
		echo "install-deps: missing ${missing[*]}; run as root (sudo) to install them" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q "${missing[@]}" >/dev/null; then
		apt-get update -q >/dev/null
		apt-get install -y -q "${missing[@]}" >/dev/null
	fi
fi

if ! command -v cargo >/dev/null 2>&1; then
	echo "install-deps: cargo is not on PATH; install Rust (rustup) first" >&2
	exit 1
fi
