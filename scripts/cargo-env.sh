# Puts cargo on PATH when it is not: under sudo, rustup's toolchain usually
# lives in the invoking user's home, which sudo's environment does not name.
# shellcheck shell=bash
if ! command -v cargo >/dev/null 2>&1; then
	for home in "${CARGO_HOME:-$HOME/.cargo}" \
		${SUDO_USER:+"$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cargo"}; do
		if [[ -x $home/bin/cargo ]]; then
			PATH="$home/bin:$PATH"
			# rustup finds its toolchains next to cargo's home.
			[[ -z ${RUSTUP_HOME:-} && -d ${home%/.cargo}/.rustup ]] && export RUSTUP_HOME=${home%/.cargo}/.rustup
			export PATH
			break
		fi
	done
fi
