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

#define TIMING_CPUS 128	/* a power of two: the row is masked, not checked */
#define TIMING_SAMPLES 4096

__u64 timing_samples[TIMING_CPUS][TIMING_SAMPLES];
__u32 timing_idx[TIMING_CPUS];

/* Written by user space between runs and while they run. */
volatile __u32 batch_iters;
volatile __u32 timing_enabled;

/* may_goto (BPF_JMP | BPF_JCOND, 0xe5, registers 0, imm 0): the verifier
 * makes it a countdown on the stack that jumps once the budget is spent.
 * Clang before 19 has no builtin that emits it, so the instruction is
 * written out; its offset counts 8-byte instructions after its own. The
 * offset goes in a 4-byte word whose upper half is imm's lower: clang 14
 * places a label difference written as a 2-byte word wrongly.
 */
static __always_inline bool loop_budget_left(void)
{
	asm volatile goto("1: .byte 0xe5\n\t"
			  ".byte 0\n\t"
			  ".long ((%l[spent] - 1b - 8) / 8) & 0xffff\n\t"
			  ".short 0"
			  :::: spent);
	return true;
spent:
	return false;
}

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
