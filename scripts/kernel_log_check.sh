#!/usr/bin/env bash
# What the kernel said while the tests ran: a leaked uprobe, a soft lockup, an
# RCU stall, a BUG or an oops, or a WARNING whose splat names a bench process,
# fails the suite with the line that said it.
#   scripts/kernel_log_check.sh [--since UPTIME_SECONDS] [LOG]
# LOG is a file in dmesg's format (`[ 123.456] text`); without it, `dmesg`.
# Lines stamped at or before --since (read from /proc/uptime when the tests
# began) are not the tests'. Exit 0: nothing found; 1: found (printed);
# 2: bad arguments or the log cannot be read.
set -euo pipefail

since=0
while (($#)); do
	case $1 in
	--since)
		[[ ${2:-} =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "kernel_log_check: --since takes seconds since boot" >&2; exit 2; }
		since=$2
		shift 2
		;;
	-*) echo "kernel_log_check: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
if (($#)); then
	[[ -r $1 ]] || { echo "kernel_log_check: cannot read $1" >&2; exit 2; }
	log=$(cat -- "$1")
else
	log=$(dmesg 2>&1) || { echo "kernel_log_check: cannot read the kernel's log: $log" >&2; exit 2; }
fi

found=$(awk -v since="$since" '
	# A splat names its task a few lines after its WARNING line.
	function flush() { if (warning != "" && named) print warning; warning = ""; named = 0 }
	{
		if (!match($0, /^\[ *[0-9]+\.[0-9]+\]/)) next
		stamp = substr($0, 2, RLENGTH - 2) + 0
		if (stamp <= since) next
		if (warning != "") {
			if ($0 ~ /Comm: bench/) named = 1
			if (++after > 6) flush()
		}
		if ($0 ~ /leaking uprobe|soft lockup|hard LOCKUP|detected (expedited )?stalls?|self-detected stall|RCU stall|BUG:|Oops/) print
		else if ($0 ~ /WARNING:/) { flush(); warning = $0; after = 0; named = ($0 ~ /bench/) }
	}
	END { flush() }' <<<"$log")
if [[ -n $found ]]; then
	echo "kernel_log_check: the kernel said, while the tests ran:" >&2
	echo "$found" >&2
	exit 1
fi
