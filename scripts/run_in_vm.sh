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
#                          tree), or a Debian version: a series (5.10, 6.1,
#                          6.12, 7.3: the newest package of that series), an exact
#                          one (6.12.117+deb12-amd64), or newest (the newest
#                          kernel Debian has, from unstable). Debian kernels are
#                          downloaded with apt-get download and unpacked into
#                          the cache; the host's /boot is left alone. A series
#                          the host's apt lacks (5.10: Debian 11) is looked up
#                          in a private apt configuration in the cache
#                          (bullseye, bookworm, trixie, trixie-backports,
#                          sid: 7.3 is trixie-backports'); the host's apt
#                          sources are never changed.
#   --list-kernels         print the Debian series reachable and the package
#                          each one means, then exit
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

kernel= accel=auto cpus= memory=2G timeout= exec_mode=0 verbose=0 prepare=0 list_kernels=0
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
	--list-kernels) list_kernels=1 ;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option '$1' (bench's arguments go after --)" 2 ;;
	esac
	shift
done
[[ -n $kernel ]] || ((list_kernels)) || die "--kernel PATH|VERSION is required" 2
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
(($#)) || ((prepare)) || ((list_kernels)) || die "nothing to run: give bench's arguments after --" 2
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

# Debian's suites from bullseye (5.10) to sid, in an apt configuration of the
# cache's own: a series the host's apt lacks is found there, and the host's
# sources and lists are left as they are. Read again once a day.
private_apt=$cache/apt
private_apt_opts=(-o "Dir::Etc::SourceList=$private_apt/sources.list"
	-o "Dir::Etc::SourceParts=$private_apt/empty" -o "Dir::Etc::Preferences=/dev/null"
	-o "Dir::Etc::PreferencesParts=$private_apt/empty" -o "Dir::State::Lists=$private_apt/lists"
	-o "Dir::Cache=$private_apt/cache" -o "APT::Sandbox::User=root")
private_apt_sources() {
	local keyring=/usr/share/keyrings/debian-archive-keyring.gpg suite
	for suite in bullseye bookworm trixie; do
		printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' "$keyring" "$suite"
		printf 'deb [signed-by=%s] http://deb.debian.org/debian-security %s-security main\n' "$keyring" "$suite"
	done
	# trixie-backports: Debian's 7.3 (the series the kernel runner's nop10
	# benchmarks came with) is served there and nowhere else.
	printf 'deb [signed-by=%s] http://deb.debian.org/debian trixie-backports main\n' "$keyring"
	printf 'deb [signed-by=%s] http://deb.debian.org/debian sid main\n' "$keyring"
}
private_apt_update() {
	local sources
	sources=$(private_apt_sources)
	# Read again once a day, and at once when the suites listed changed.
	[[ -f $private_apt/updated && -z $(find "$private_apt/updated" -mmin +1440) &&
		$(cat "$private_apt/sources.list" 2>/dev/null) == "$sources" ]] && return 0
	mkdir -p "$private_apt/empty" "$private_apt/lists/partial" "$private_apt/cache/archives/partial"
	printf '%s\n' "$sources" >"$private_apt/sources.list"
	log "reading Debian's package lists (bullseye to sid, trixie-backports) into $private_apt"
	apt-get "${private_apt_opts[@]}" update -q >/dev/null 2>&1 ||
		die "apt-get could not read Debian's package lists into $private_apt"
	touch "$private_apt/updated"
}

# newest_package host|private ERE: the newest downloadable linux-image package
# matching ERE, an unsigned one where the series has them.
newest_package() {
	local apt_cache=(apt-cache) names name
	[[ $1 == private ]] && apt_cache+=("${private_apt_opts[@]}")
	names=$("${apt_cache[@]}" pkgnames linux-image- 2>/dev/null | grep -E "$2" |
		grep -v -e '-cloud-' -e '-rt-' -e '-dbg' || true)
	# The newest version first; of one version, the unsigned package (the same
	# kernel, without the signed package's indirection).
	for name in $(awk 'NF { key = $0; sub(/-unsigned$/, "", key); print key "\t" ($0 == key) "\t" $0 }' <<<"$names" |
		sort -t "$(printf '\t')" -k1,1Vr -k2,2n | cut -f3); do
		if [[ $("${apt_cache[@]}" policy "$name" 2>/dev/null) == *"Candidate: "[0-9]* ]]; then
			echo "$name"
			return 0
		fi
	done
	return 1
}

# debian_package VERSION: "host PACKAGE" or "private PACKAGE". A series (6.1,
# 6.12) or exact release from the host's apt where it has one (as the tests'
# kernels always came), else from the private configuration; newest: the
# newest kernel of them all.
debian_package() {
	local version=${1%-amd64} pattern
	if [[ $version == newest ]]; then
		pattern='^linux-image-[0-9]+\.[0-9]+[^ ]*-amd64(-unsigned)?$'
	else
		pattern="^linux-image-$(sed -e 's/[.+]/\\&/g' <<<"$version")([.-][^ ]*)?-amd64(-unsigned)?\$"
		local name
		if name=$(newest_package host "$pattern"); then
			echo "host $name"
			return 0
		fi
		if ((EUID == 0)) && [[ -z ${BENCH_VM_NO_HOST_UPDATE:-} ]]; then
			apt-get update -q >/dev/null 2>&1 || true
			export BENCH_VM_NO_HOST_UPDATE=1
			if name=$(newest_package host "$pattern"); then
				echo "host $name"
				return 0
			fi
		fi
	fi
	private_apt_update
	name=$(newest_package private "$pattern") || return 1
	echo "private $name"
}

# --list-kernels: each series this script can boot by name, and its package.
list_kernels() {
	local series found
	private_apt_update
	# The host's lists once, not once a series.
	apt-get update -q >/dev/null 2>&1 || true
	export BENCH_VM_NO_HOST_UPDATE=1
	for series in 5.10 6.1 6.12 7.2 7.3 newest; do
		if found=$(debian_package "$series"); then
			printf '%-7s %s (%s apt)\n' "$series" "${found#* }" "${found%% *}"
		else
			printf '%-7s unreachable: no Debian package found\n' "$series"
		fi
	done
}

# download_kernel SOURCE PACKAGE DIR: the package unpacked into DIR. Where
# Debian splits the image (unstable: linux-image-X depends on linux-binary-X,
# linux-modules-X and linux-base-X), the parts are unpacked together.
download_kernel() {
	local apt=(apt-get) apt_cache=(apt-cache) tmp deb parts
	[[ $1 == private ]] && apt+=("${private_apt_opts[@]}") && apt_cache+=("${private_apt_opts[@]}")
	parts=$("${apt_cache[@]}" depends "$2" 2>/dev/null |
		grep -o -E 'linux-(binary|modules|base)-[^ ]+' | sort -u || true)
	[[ -n $parts ]] || parts=$2
	log "downloading $(tr '\n' ' ' <<<"$parts")"
	tmp=$(mktemp -d "$cache/kernels.XXXXXX")
	# shellcheck disable=SC2086 # one word per package
	(cd "$tmp" && "${apt[@]}" download -q $parts >/dev/null 2>&1) ||
		{ rm -rf "$tmp"; die "apt-get download $2 failed"; }
	mkdir "$tmp/tree"
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$tmp/tree" || { rm -rf "$tmp"; die "cannot unpack $deb"; }
	done
	mkdir -p "$cache/kernels"
	mv "$tmp/tree" "$3"
	rm -rf "$tmp"
}

first_file() {
	local file
	for file in "$@"; do
		[[ -f $file ]] && { echo "$file"; return 0; }
	done
	return 0
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
	[[ $kernel == newest || $kernel =~ ^[0-9]+\.[0-9]+[0-9a-z.+-]*$ ]] ||
		die "--kernel '$kernel' is neither a file nor a kernel version such as 6.12" 2
	local found pkg dir
	found=$(debian_package "$kernel") ||
		die "Debian has no kernel package for $kernel (scripts/run_in_vm.sh --list-kernels lists the series)" 2
	pkg=${found#* }
	dir=$cache/kernels/$pkg
	[[ -d $dir ]] || download_kernel "${found%% *}" "$pkg" "$dir"
	# Older packages keep the image in boot/, unstable's in usr/lib/modules/.
	KIMG=$(first_file "$dir"/boot/vmlinuz-* "$dir"/usr/lib/modules/*/vmlinuz)
	[[ -n $KIMG ]] || die "$pkg holds no vmlinuz"
	KCONFIG=$(first_file "$dir"/boot/config-* "$dir"/usr/lib/modules/*/config)
}
if ((list_kernels)); then
	list_kernels
	exit 0
fi
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
