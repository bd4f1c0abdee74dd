/* Hit counters shared by every benchmark family.
 *
 * One cache-line-sized slot per CPU, so that producers on different CPUs never
 * share a line; user space sums the slots through the mmapped .bss. The add is
 * atomic because two tasks can run the program on one CPU when one is preempted
 * mid-update, and the accuracy tests demand that no hit is lost.
 */
#ifndef BENCH_COUNTERS_H
#define BENCH_COUNTERS_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#define BENCH_MAX_CPUS 1024 /* a power of two: the index is masked, not checked */

struct bench_counter {
	__u64 value;
} __attribute__((aligned(128)));

struct bench_counter hits[BENCH_MAX_CPUS];

static __always_inline void count_hit(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	__sync_fetch_and_add(&hits[cpu & (BENCH_MAX_CPUS - 1)].value, 1);
}

/* One hit, for a program the kernel never runs twice at once on one CPU: a
 * kprobe or kretprobe (trace_call_bpf skips a run while another is active on
 * the CPU) or a raw tracepoint fired in process context (run with preemption
 * off, and in newer kernels also under the program's own recursion guard).
 * There a plain add is exact, and it spares the locked instruction.
 */
static __always_inline void count_hit_alone(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	hits[cpu & (BENCH_MAX_CPUS - 1)].value += 1;
}

/* n hits at once: a body that does n units of work per call (loop
 * iterations) counts them in one add.
 */
static __always_inline void count_hits(__u64 n)
{
	__u32 cpu = bpf_get_smp_processor_id();

	__sync_fetch_and_add(&hits[cpu & (BENCH_MAX_CPUS - 1)].value, n);
}

#endif
