#!/usr/bin/env bash
# The kernel's run_bench_bpf_for.sh: bpf-for at each thread count and
# --nr_loops, a "nr_loops: N, nr_threads: T" subtitle and a "bpf_for:
# throughput: X ± Y M ops/s, latency: Z ns/op" line each (run_common.sh's
# summarize_ops), pinned threads (-a). THREADS and NR_LOOPS replace the lists
# (default the kernel script's: 1 4 8 12 16 threads, 10 to 1000000 loops); WD
# the warm-up and duration (default "-w2 -d5"). --markdown prints a Markdown
# table; --json DIR keeps one result file per line in DIR; --kernels
# host,6.1,6.12 one column per kernel; --runs N (or RUNS=N): each line the
# mean of N independent runs. It takes no other argument.
set -eufo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
loop_script bpf-for bpf_for "$@"
