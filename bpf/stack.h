/* -s/--stacktrace: the counting programs also take a stack per hit, so that
 * the cost of a stack capture can be measured, as the kernel runner's option
 * does (bpf_get_stack into a per-CPU buffer). Set before load; rodata is
 * frozen, so the verifier drops the capture when it is off.
 */
#ifndef BENCH_STACK_H
#define BENCH_STACK_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 stacktrace = 0;

#define BENCH_STACK_DEPTH 128

struct bench_stack {
	__u64 ips[BENCH_STACK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_stack);
} stack_buffer SEC(".maps");

/* flags: 0 for the kernel stack (kernel probes), BPF_F_USER_STACK for the
 * stack of the probed process (uprobes, USDT: a kernel stack there is empty).
 */
static __always_inline void take_stack(void *ctx, __u64 flags)
{
	__u32 zero = 0;
	struct bench_stack *buffer;

	if (!stacktrace)
		return;
	buffer = bpf_map_lookup_elem(&stack_buffer, &zero);
	if (buffer)
		bpf_get_stack(ctx, buffer->ips, sizeof(buffer->ips), flags);
}

#endif
