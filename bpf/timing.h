/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel runner's timing inside BPF, shared by bpf-nop and xdp-lb: each
 * run times a batch of batch_iters passes of a body between two
 * bpf_ktime_get_ns() readings and, while user space has timing on, keeps
 * the batch's time in its CPU's row of samples (src/benches/timing.rs's
 * Area reads them). loop_budget_left() is may_goto (Linux 6.9+), the
 * runner's can_loop.
 */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stdbool.h>
#include <linux/bpf.h>

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

#endif
