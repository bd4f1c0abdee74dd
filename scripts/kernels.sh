# The --kernels driver of the run_bench_*.sh scripts, sourced by
# parse_common_args (scripts/lib.sh) when --kernels is given: it re-runs the
# calling script ($0) once per kernel and joins what each printed.
# shellcheck shell=bash

# --kernels host,6.1,6.12: runs this script once per kernel (host: here; any
# other: in a VM of scripts/run_in_vm.sh, one boot for the whole list) and
# prints one column per kernel. A script without one-line rows (the
# breakpoint tables) prints each kernel's output in turn instead. With
# --json DIR each kernel's results go to DIR/<kernel>/.
run_on_kernels() {
	local kernel outputs=() out rc status=0 args knobs=() name
	IFS=, read -r -a kernels <<<"$KERNELS"
	prepare_bench
	# The settings the script and lib.sh take from the environment (each
	# `${NAME:-default}`) go into the guests too, or a guest runs the
	# defaults; BENCH_* are the harness's own, set per kernel.
	for name in $(grep -ohE '\$\{[A-Z_]+:-' "$0" "$root/scripts/lib.sh" | sed 's/^..//; s/:-$//' | sort -u); do
		[[ $name == BENCH_* ]] && continue
		[[ -n ${!name:-} ]] && knobs+=("$name=${!name}")
	done
	for kernel in "${kernels[@]}"; do
		args=("${ARGS[@]}")
		[[ -n $JSON_DIR ]] && args+=(--json "$JSON_DIR/$kernel")
		out=$(mktemp)
		outputs+=("$out")
		echo "$(basename "$0"): kernel $kernel..." >&2
		set +e
		if [[ $kernel == host ]]; then
			BENCH_KERNEL_ROWS=1 "$0" "${args[@]}" >"$out"
		else
			"$root/scripts/run_in_vm.sh" --kernel "$kernel" --exec -- \
				env BENCH_KERNEL_ROWS=1 "${knobs[@]}" "$0" "${args[@]}" >"$out"
		fi
		rc=$?
		set -e
		case $rc in
		0) ;;
		130 | 143) rm -f "${outputs[@]}"; exit "$rc" ;;
		*)
			echo "$(basename "$0"): kernel $kernel: exit code $rc" >&2
			status=1
			# A kernel that never ran the script still gets its column, named so.
			grep -q '^#kernel' "$out" || printf '#kernel\tfailed: exit %s\n' "$rc" >>"$out"
			;;
		esac
	done
	# Rows from any kernel (the first may be the one that failed).
	if cat "${outputs[@]}" | grep -v '^#kernel' | grep -q $'\t'; then
		kernel_columns "${kernels[@]}" -- "${outputs[@]}"
	else
		for out in "${outputs[@]}"; do
			printf '== %s (%s)\n' "${kernels[0]}" "$(sed -n 's/^#kernel\t//p' "$out")"
			kernels=("${kernels[@]:1}")
			grep -v '^#kernel' "$out" || true
		done
	fi
	rm -f "${outputs[@]}"
	return "$status"
}

# kernel_columns KERNEL... -- FILE...: joins the rows of each kernel's run by
# label, one column per kernel, in the order the labels first appear.
kernel_columns() {
	local names=() file i=0
	while [[ $1 != -- ]]; do names+=("$1"); shift; done
	shift
	# Every line tagged with its file's position, so that a kernel whose file
	# is empty (it failed) keeps its column and the next keeps its own.
	for file in "$@"; do
		i=$((i + 1))
		awk -v k="$i" '{ print k "\t" $0 }' "$file"
	done | awk -F'\t' -v k="$#" -v markdown="$MARKDOWN" -v names="$(IFS=,; echo "${names[*]}")" '
		$2 == "#kernel" { head[$1] = $3; next }
		NF >= 3 {
			if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
			cell[$2, $1] = $3
		}
		END {
			split(names, name, ",")
			t[0, 0] = "benchmark"
			for (j = 1; j <= k; j++) t[0, j] = name[j] (head[j] == "" ? "" : " (" head[j] ")")
			for (i = 1; i <= n; i++) {
				t[i, 0] = order[i]
				for (j = 1; j <= k; j++) t[i, j] = ((order[i], j) in cell) ? cell[order[i], j] : "-"
			}
			for (i = 0; i <= n; i++)
				for (j = 0; j <= k; j++)
					if (length(t[i, j]) > w[j]) w[j] = length(t[i, j])
			for (i = 0; i <= n; i++) {
				if (markdown) {
					printf "|"
					for (j = 0; j <= k; j++) printf " %s |", t[i, j]
					print ""
					if (i == 0) { printf "|"; for (j = 0; j <= k; j++) printf "---|"; print "" }
				} else {
					for (j = 0; j < k; j++) printf "%-*s  ", w[j], t[i, j]
					print t[i, k]
				}
			}
		}'
}
