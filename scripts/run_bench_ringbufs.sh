#!/usr/bin/env bash
# The ring buffer and perf buffer table of the kernel's run_bench_ringbufs.sh:
# hits and drops per second for each consumer, with one producer and parallel
# producers, sampled notification, back-to-back mode, the effect of the
# sample rate, reserve+commit against output, producer and consumer on one
# CPU, and multi-producer contention. Every run has one consumer (-c1) and
# pinned threads (-a). PROD_LIST sets the producer counts of the last two
# sections (default: the kernel script's, 1 to 52); WD sets warm-up and
# duration (default "-w2 -d5"). --markdown prints Markdown tables; --json DIR
# keeps one result file per line in DIR (SECTION-LABEL.json), for `bench compare`. The kernel's
# overwrite-mode section (--rb-overwrite, no consumer) is not part of it.
# --runs N (or RUNS=N): each line is the mean of N independent runs, ± the
# between-run sd. The kernel's script passes --rb-sample-rate without
# --rb-sampled in two sections, where it does nothing; bench refuses that, so
# those lines leave it out (the same work).
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

parse_common_args "$@"
((${#ARGS[@]} == 0)) || { echo "$(basename "$0"): unexpected argument ${ARGS[0]}" >&2; exit 2; }
read -r -a prods <<<"${PROD_LIST:-1 2 3 4 8 12 16 20 24 28 32 36 40 44 48 52}"
read -r -a wd <<<"${WD:--w2 -d5}"
((RUNS > 1)) && wd+=(--runs "$RUNS")
consumers=(rb-libbpf rb-custom pb-libbpf pb-custom)
section_no=0

section() { # title
	section_no=$((section_no + 1))
	if ((MARKDOWN)); then
		printf '\n### %s\n\n' "$1"
		table_header case "hits (mean ± sd)" "drops (mean ± sd)"
	else
		printf '\n%s\n%s\n' "$1" "$(sed 's/./=/g' <<<"$1")"
	fi
}

# rb_line LABEL NAME [bench options...]: "LABEL  hits (drops ...)" as the
# kernel's script prints it.
rb_line() {
	local label=$1 summary hits drops
	shift
	JSON_NAME=$section_no-$(tr -c 'A-Za-z0-9_-' '_' <<<"$label" | sed 's/_*$//')
	bench_run "$@" -c1 "${wd[@]}" -a
	if [[ $BENCH_VERDICT == ok ]]; then
		summary=$(tail -n1 <<<"$BENCH_OUT")
		hits=$(sed -E 's/.*hits +([0-9.]+ ± [0-9.]+M\/s).*/\1/' <<<"$summary")
		drops=$(sed -E 's/.*drops +([0-9.]+ ± [0-9.]+M\/s).*/\1/' <<<"$summary")
	else
		hits=$BENCH_VERDICT
		drops=
	fi
	if ((MARKDOWN)); then
		printf '| %s | %s | %s |\n' "$label" "$hits" "$drops"
	elif [[ -n $drops ]]; then
		printf '%-20s %s (drops %s)\n' "$label" "$hits" "$drops"
	else
		printf '%-20s %s\n' "$label" "$hits"
	fi
}

prepare_bench

section "Single-producer, parallel producer"
for b in "${consumers[@]}"; do
	rb_line "$b" "$b"
done

section "Single-producer, parallel producer, sampled notification"
for b in "${consumers[@]}"; do
	rb_line "$b" "$b" --rb-sampled
done

section "Single-producer, back-to-back mode"
for b in "${consumers[@]}"; do
	rb_line "$b" "$b" --rb-b2b
	rb_line "$b-sampled" "$b" --rb-sampled --rb-b2b
done

section "Ringbuf back-to-back, effect of sample rate"
for n in 1 5 10 25 50 100 250 500 1000 2000 3000; do
	rb_line "rb-sampled-$n" rb-custom --rb-b2b --rb-batch-cnt "$n" --rb-sampled --rb-sample-rate "$n"
done

section "Perfbuf back-to-back, effect of sample rate"
for n in 1 5 10 25 50 100 250 500 1000 2000 3000; do
	rb_line "pb-sampled-$n" pb-custom --rb-b2b --rb-batch-cnt "$n" --rb-sampled --rb-sample-rate "$n"
done

section "Ringbuf back-to-back, reserve+commit vs output"
rb_line reserve rb-custom --rb-b2b
rb_line output rb-custom --rb-b2b --rb-use-output

section "Ringbuf sampled, reserve+commit vs output"
rb_line reserve-sampled rb-custom --rb-sampled
rb_line output-sampled rb-custom --rb-sampled --rb-use-output

section "Single-producer, consumer/producer competing on the same CPU, low batch count"
for b in "${consumers[@]}"; do
	rb_line "$b" "$b" --rb-batch-cnt 1 --prod-affinity 0 --cons-affinity 0
done

section "Ringbuf, multi-producer contention"
for n in "${prods[@]}"; do
	rb_line "rb-libbpf nr_prod $n" rb-libbpf -p"$n" --rb-batch-cnt 50
done

section "Perfbuf, multi-producer"
for n in "${prods[@]}"; do
	rb_line "pb-libbpf nr_prod $n" pb-libbpf -p"$n" --rb-batch-cnt 50
done
finish
