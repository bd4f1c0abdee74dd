// SPDX-License-Identifier: GPL-2.0
/* bpf-nop: the kernel runner's per-CPU timing inside BPF. Each run of the
 * syscall program (BPF_PROG_TEST_RUN) calls an empty body batch_iters times
 * between two bpf_ktime_get_ns() readings and, while user space has timing
 * on, keeps the batch's time in this CPU's row of samples. The loop is
 * bpf_loop's (which the verifier inlines into a plain loop calling the
 * body), not upstream's can_loop, which needs clang 19's may_goto.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

#define TIMING_CPUS 128	/* a power of two: the row is masked, not checked */
#define TIMING_SAMPLES 4096

__u64 timing_samples[TIMING_CPUS][TIMING_SAMPLES];
__u32 timing_idx[TIMING_CPUS];

/* Written by user space between runs and while they run. */
volatile __u32 batch_iters;
volatile __u32 timing_enabled;

static long empty_body(__u64 index, void *ctx)
{
	return 0;
}

static __always_inline void keep_sample(__u32 cpu, __u64 elapsed_ns)
{
	__u32 idx;

	if (!timing_enabled)
		return;
	idx = timing_idx[cpu];
	if (idx >= TIMING_SAMPLES)
		return;
	timing_samples[cpu][idx] = elapsed_ns;
	timing_idx[cpu] = idx + 1;
}

SEC("?syscall")
int drive_nop(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id() & (TIMING_CPUS - 1);
	__u64 start = bpf_ktime_get_ns();
	long done = bpf_loop(batch_iters, empty_body, NULL, 0);

	keep_sample(cpu, bpf_ktime_get_ns() - start);
	/* The calls the loop made, outside the timed span: the count is exact
	 * without a per-call atomic the body does not have upstream.
	 */
	if (done > 0)
		__sync_fetch_and_add(&hits[bpf_get_smp_processor_id() & (BENCH_MAX_CPUS - 1)].value,
				     done);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
