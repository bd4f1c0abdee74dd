// SPDX-License-Identifier: GPL-2.0
/* bpf-nop: the kernel runner's per-CPU timing inside BPF. Each run of the
 * syscall program (BPF_PROG_TEST_RUN) makes batch_iters passes of an empty
 * loop between two bpf_ktime_get_ns() readings and, while user space has
 * timing on, keeps the batch's time in this CPU's row of samples.
 *
 * drive_nop's loop is the kernel runner's: each pass reads the batch size
 * and asks may_goto whether the program's loop budget is left. A kernel
 * without may_goto (before 6.9) refuses it; drive_nop_bpf_loop then makes
 * the passes as bpf_loop() calls of an empty callback, a loop of other cost.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

#include "timing.h"

static long empty_body(__u64 index, void *ctx)
{
	return 0;
}

/* The passes the loop made, added outside the timed span: the count is
 * exact without a per-pass atomic the timed loop does not have upstream.
 * No test of `done` first: a branch the verifier can decide from the
 * counter's value makes it track the counter exactly, and the may_goto
 * loop's states then never converge.
 */
static __always_inline void count_passes(__u64 done)
{
	__sync_fetch_and_add(&hits[bpf_get_smp_processor_id() & (BENCH_MAX_CPUS - 1)].value, done);
}

SEC("?syscall")
int drive_nop(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id() & (TIMING_CPUS - 1);
	__u64 start = bpf_ktime_get_ns();
	__u32 done;

	for (done = 0; done < batch_iters && loop_budget_left(); done++)
		;
	keep_sample(cpu, bpf_ktime_get_ns() - start);
	count_passes(done);
	return 0;
}

SEC("?syscall")
int drive_nop_bpf_loop(void *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id() & (TIMING_CPUS - 1);
	__u64 start = bpf_ktime_get_ns();
	long done = bpf_loop(batch_iters, empty_body, NULL, 0);

	keep_sample(cpu, bpf_ktime_get_ns() - start);
	if (done > 0)
		count_passes(done);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
