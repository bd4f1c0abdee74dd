#!/usr/bin/env bash
# Runs bench on another kernel: boots it in a VM (virtme-ng) on this machine's
# own root filesystem, with the working directory shared read-write, and runs
# the same bench binary inside. Output streams as it comes; --json/--csv files
# written in (or below) the working directory are there after the run.
#
#   sudo scripts/run_in_vm.sh --kernel 6.12 -- -q -r 100000 trig-kprobe
#   sudo scripts/run_in_vm.sh --kernel /boot/vmlinuz-6.1.0-57-amd64 -- --probe
#   sudo scripts/run_in_vm.sh --kernel 6.1 --exec -- scripts/run_bench_uprobes.sh
#
# Options:
#   --kernel PATH|VERSION  a kernel image (vmlinuz, bzImage, or a built kernel
#                          tree), or a Debian version: 6.1, 6.12 (the newest
#                          package of that series apt knows) or an exact one
#                          (6.12.117+deb12-amd64). Debian kernels are
#                          downloaded with apt-get download and unpacked into
#                          the cache; the host's /boot is left alone.
#   --accel auto|kvm|tcg   KVM, or TCG (emulation). auto (the default) uses KVM
#                          when a test boot with it works, TCG otherwise; the
#                          answer is cached per host kernel.
#   --cpus N, --memory M   the guest's CPUs (default: the host's) and memory
#                          (default 2G)
#   --timeout SEC          stop the guest after SEC seconds (exit 124)
#   --exec                 the words after -- are a command (a script of the
#                          repository, say) rather than bench's arguments
#   --verbose              show the guest kernel's console on stderr (its
#                          messages: an oops or a panic that ends the guest)
#   --prepare              set up only (packages, virtme-ng, the kernel, the
#                          KVM check) and boot nothing: the test command warms
#                          the cache with it while it builds
#
# Inside the guest BENCH_VM is kvm or tcg; bench records it in the results'
# context and marks every summary of a TCG run as emulated: emulated times
# are not performance numbers, but every count is exact.
#
# Installs what it needs when missing: qemu-system-x86, busybox-static, kmod
# (depmod), udev (the guest's init needs it to find its I/O ports) and
# python3-venv with apt, and virtme-ng from PyPI into a virtual environment in
# the cache. Cache: $BENCH_VM_CACHE, default ~/.cache/bench-vm.
# Exit code: the guest command's, or 2 (bad arguments), 1 (set-up failed).
set -euo pipefail

source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
cache=${BENCH_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bench-vm}
virtme_ng_version=1.42

kernel= accel=auto cpus= memory=2G timeout= exec_mode=0 verbose=0 prepare=0
die() {
	echo "run_in_vm: $1" >&2
	exit "${2:-1}"
}
need_value() { (($# >= 2)) || die "$1 needs a value" 2; }
while (($#)); do
	case $1 in
	--kernel) need_value "$@"; kernel=$2; shift ;;
	--kernel=*) kernel=${1#*=} ;;
	--accel) need_value "$@"; accel=$2; shift ;;
	--accel=*) accel=${1#*=} ;;
	--cpus) need_value "$@"; cpus=$2; shift ;;
	--memory) need_value "$@"; memory=$2; shift ;;
	--timeout) need_value "$@"; timeout=$2; shift ;;
	--exec) exec_mode=1 ;;
	--verbose) verbose=1 ;;
	--prepare) prepare=1 ;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' (bench's arguments go after --)" 2 ;;
	esac
	shift
done
[[ -n $kernel ]] || die "--kernel PATH|VERSION is required" 2
[[ $accel == auto || $accel == kvm || $accel == tcg ]] || die "--accel takes auto, kvm or tcg" 2
[[ -z $timeout || $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout takes whole seconds" 2
[[ -z $cpus || $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus takes a count" 2
[[ $memory =~ ^[1-9][0-9]*[KMGT]?$ ]] || die "--memory takes a size such as 2G or 512M, got '$memory'" 2
# A path must be a kernel: a bzImage (its setup header says HdrS at 0x202) or
# a built tree; anything else is a version, checked against apt below.
if [[ -e $kernel ]]; then
	if [[ -d $kernel ]]; then
		[[ -f $kernel/arch/x86/boot/bzImage ]] ||
			die "--kernel $kernel is a directory but not a built kernel tree (no arch/x86/boot/bzImage)" 2
	elif [[ ! -r $kernel ]]; then
		die "--kernel $kernel cannot be read" 2
	elif [[ $(dd if="$kernel" bs=1 skip=514 count=4 2>/dev/null) != HdrS ]]; then
		die "--kernel $kernel is not a kernel image (no x86 boot header)" 2
	fi
fi
(($#)) || ((prepare)) || die "nothing to run: give bench's arguments after --" 2
((EUID == 0)) || die "run it as root (sudo): it installs packages and boots a VM whose bench loads BPF" 3

mkdir -p "$cache"
# One set-up at a time: two runs started together (the tests do) would fight
# over dpkg's lock and the cache.
exec 9>"$cache/.lock"
flock 9

log() { echo "run_in_vm: $*" >&2; }

install_packages() {
	local pkg status missing=()
	for pkg in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		[[ $status == "install ok installed" ]] || missing+=("$pkg")
	done
	((${#missing[@]})) || return 0
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
			die "apt-get could not install ${missing[*]}"
	fi
}

install_virtme_ng() {
	install_packages qemu-system-x86 busybox-static kmod udev python3-venv
	venv=$cache/venv-virtme-ng-$virtme_ng_version
	if [[ ! -x $venv/bin/vng ]]; then
		log "installing virtme-ng $virtme_ng_version into $venv"
		rm -rf "$venv"
		python3 -m venv "$venv" || die "cannot create a Python virtual environment in $venv"
		"$venv/bin/pip" install -q --disable-pip-version-check "virtme-ng==$virtme_ng_version" >&2 ||
			{ rm -rf "$venv"; die "pip could not install virtme-ng $virtme_ng_version"; }
	fi
	# vng runs virtme-run by name.
	export PATH=$venv/bin:$PATH
}

# The newest Debian package for a version: 6.1 -> linux-image-6.1.0-N-amd64-unsigned,
# 6.12 -> linux-image-6.12.N+debM-amd64-unsigned; an exact release names its own.
debian_package() {
	local version=${1%-amd64} pattern names
	pattern="^linux-image-$(sed -e 's/[.+]/\\&/g' <<<"$version")([.-][^ ]*)?-amd64-unsigned\$"
	names=$(apt-cache pkgnames linux-image- | grep -E "$pattern" | grep -v -e '-cloud-' -e '-rt-' || true)
	if [[ -z $names ]]; then
		apt-get update -q >/dev/null
		names=$(apt-cache pkgnames linux-image- | grep -E "$pattern" | grep -v -e '-cloud-' -e '-rt-' || true)
	fi
	local name
	for name in $(sort -V -r <<<"$names"); do
		# Only a package apt can download.
		if [[ $(apt-cache policy "$name") == *"Candidate: "[0-9]* ]]; then
			echo "$name"
			return 0
		fi
	done
	return 1
}

# Sets KIMG (the image to boot) and KCONFIG (its configuration, when known).
resolve_kernel() {
	KCONFIG=
	if [[ -e $kernel ]]; then
		KIMG=$(readlink -f "$kernel")
		local dir=${KIMG%/*} base=${KIMG##*/}
		[[ -f $dir/config-${base#vmlinuz-} ]] && KCONFIG=$dir/config-${base#vmlinuz-}
		[[ -d $KIMG && -f $KIMG/.config ]] && KCONFIG=$KIMG/.config
		return 0
	fi
	[[ $kernel =~ ^[0-9]+\.[0-9]+[0-9a-z.+-]*$ ]] ||
		die "--kernel '$kernel' is neither a file nor a kernel version such as 6.12" 2
	local pkg dir tmp deb
	pkg=$(debian_package "$kernel") ||
		die "apt knows no Debian kernel package for $kernel (apt-cache search linux-image lists them)" 2
	dir=$cache/kernels/$pkg
	if [[ ! -d $dir ]]; then
		log "downloading $pkg"
		tmp=$(mktemp -d "$cache/kernels.XXXXXX")
		(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			{ rm -rf "$tmp"; die "apt-get download $pkg failed"; }
		deb=("$tmp"/*.deb)
		mkdir "$tmp/tree"
		dpkg-deb -x "${deb[0]}" "$tmp/tree" || { rm -rf "$tmp"; die "cannot unpack ${deb[0]}"; }
		mkdir -p "$cache/kernels"
		mv "$tmp/tree" "$dir"
		rm -rf "$tmp"
	fi
	KIMG=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -n1)
	[[ -n $KIMG ]] || die "$pkg holds no boot/vmlinuz-*"
	KCONFIG=$(ls "$dir"/boot/config-* 2>/dev/null | head -n1)
}
# The kernel first: a mistyped version is refused (2) before any set-up.
resolve_kernel
install_virtme_ng

vng_args=(--run "$KIMG" --user root --cwd "$PWD" --rwdir "$PWD" --memory "$memory")
[[ -n $cpus ]] && vng_args+=(--cpus "$cpus")

# KVM guests stop at boot on some hosts ("KVM internal error ... emulation
# failure" under nested virtualisation, and qemu then waits forever): try a
# short boot once, watch for that, and remember the answer for this host.
kvm_works() {
	[[ -w /dev/kvm ]] || return 1
	local mark
	mark=$cache/kvm-$(uname -r)
	if [[ ! -f $mark ]]; then
		log "checking whether KVM guests boot here (at most 60 s, once)"
		local out pid verdict=no
		out=$(mktemp)
		# In a process group of its own: vng's qemu is a grandchild.
		setsid vng "${vng_args[@]}" -- true >"$out" 2>&1 </dev/null &
		pid=$!
		for _ in $(seq 120); do
			if ! kill -0 "$pid" 2>/dev/null; then
				wait "$pid" && verdict=yes
				break
			fi
			grep -q 'KVM internal error\|emulation failure' "$out" && break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM -- -"$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
		rm -f "$out"
		echo "$verdict" >"$mark"
	fi
	[[ $(cat "$mark") == yes ]]
}

case $accel in
auto) if kvm_works; then accel=kvm; else accel=tcg; fi ;;
kvm) [[ -w /dev/kvm ]] || die "--accel kvm: /dev/kvm is missing or not writable" ;;
esac
[[ $accel == tcg ]] && vng_args+=(--disable-kvm)
if ((prepare)); then
	log "ready: ${KIMG} with ${accel^^}"
	exit 0
fi
((verbose)) && vng_args+=(--verbose)

# Set-up done: let another run set up while this one boots.
flock -u 9

if ((exec_mode)); then
	command=$(printf '%q ' "$@")
else
	"$root/bench" --list >/dev/null # builds the binary when it is stale
	command="$(printf '%q' "$root/target/release/bench") $(printf '%q ' "$@")"
fi
guest="export BENCH_VM=$accel;"
# Debian keeps the configuration beside the image; bench reads it from
# /boot/config-\$(uname -r). Show it there, on a tmpfs of the guest only.
if [[ -n $KCONFIG && $KCONFIG != /boot/* ]]; then
	guest+=" mount -t tmpfs bench-boot /boot && cp $(printf '%q' "$KCONFIG") /boot/config-\$(uname -r);"
fi
guest+=" $command"

log "booting ${KIMG} with ${accel^^}$([[ $accel == tcg ]] && echo ' (emulated: times are not performance numbers)')"
# The command reaches the guest on the kernel's command line, which holds 2 KiB
# at most: hand it a script on the (shared) root filesystem instead.
guest_script=$(mktemp "$cache/guest.XXXXXX")
trap 'rm -f "$guest_script"' EXIT
printf '%s\n' "$guest" >"$guest_script"
run=(vng "${vng_args[@]}" -- "bash $guest_script")
[[ -n $timeout ]] && run=(timeout -k 10 "$timeout" "${run[@]}")
# qemu reopens the guest's output through /proc/self/fd, which would truncate
# a file given as stdout or stderr: hand it pipes.
set +e
"${run[@]}" > >(cat) 2> >(cat >&2)
rc=$?
wait
exit "$rc"
