// SPDX-License-Identifier: GPL-2.0
/* Ring buffer and perf buffer family. Every getpgid() of the benchmark's own
 * process emits batch_cnt 8-byte records, into a BPF ring buffer
 * (count_rb_produce) or the perf buffer (count_pb_produce); consumer threads
 * in user space drain them. The programs' names start with count_, as every
 * program of bench's does, so that the tests' leak checks see them.
 *
 * The trigger is the syscalls:sys_enter_getpgid tracepoint, filtered by
 * process: fentry on the syscall (what the kernel's selftests use) is refused
 * where lockdown or the BPF LSM forbid tracing programs, and syscall
 * tracepoints take BPF programs on every kernel that has ring buffers. The
 * filter lets records be counted exactly: only the benchmark's calls produce.
 *
 * There is one ring buffer per consumer (an array of maps that user space
 * fills); a producer writes to ring cpu % nr_rings, the way a perf buffer
 * gives each CPU its own buffer.
 */
#include <linux/bpf.h>
#include "counters.h"

#define MAX_RINGS 64

struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* Only a template: user space creates the rings at their real size. */
	__uint(max_entries, 1 << 16);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_RINGS);
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} perfbuf SEC(".maps");

/* Set before load; rodata is frozen, so the verifier sees constant bounds. */
const volatile __u32 batch_cnt = 500;
const volatile __u32 use_output = 0;
/* Non-zero: wake the consumer only once this much data is waiting. */
const volatile __u64 wakeup_data_size = 0;
const volatile __u32 nr_rings = 1;
const volatile __u32 tgid = 0;
/* For count_rawtp_sys_enter only. */
const volatile __u64 syscall_nr = 0;

__u64 sample_val = 42;

/* Records the BPF side could not reserve or output, per CPU. */
struct bench_counter drops[BENCH_MAX_CPUS];

static __always_inline void count_drop(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	__sync_fetch_and_add(&drops[cpu & (BENCH_MAX_CPUS - 1)].value, 1);
}

static __always_inline int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == tgid;
}

static __always_inline __u64 wakeup_flags(void *ring)
{
	if (!wakeup_data_size)
		return 0;
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_data_size ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

SEC("?tp/syscalls/sys_enter_getpgid")
int count_rb_produce(void *ctx)
{
	__u32 idx;
	void *ring;
	__u64 *rec;

	if (!ours())
		return 0;
	idx = bpf_get_smp_processor_id() % nr_rings;
	ring = bpf_map_lookup_elem(&rings, &idx);
	if (!ring) {
		/* Not reached once set-up has filled every slot. */
		for (__u32 i = 0; i < batch_cnt; i++)
			count_drop();
		return 0;
	}
	if (use_output) {
		for (__u32 i = 0; i < batch_cnt; i++) {
			if (bpf_ringbuf_output(ring, &sample_val, sizeof(sample_val),
					       wakeup_flags(ring)))
				count_drop();
		}
		return 0;
	}
	for (__u32 i = 0; i < batch_cnt; i++) {
		rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
		if (!rec) {
			count_drop();
			continue;
		}
		*rec = sample_val;
		bpf_ringbuf_submit(rec, wakeup_flags(ring));
	}
	return 0;
}

SEC("?tp/syscalls/sys_enter_getpgid")
int count_pb_produce(void *ctx)
{
	if (!ours())
		return 0;
	for (__u32 i = 0; i < batch_cnt; i++) {
		if (bpf_perf_event_output(ctx, &perfbuf, BPF_F_CURRENT_CPU,
					  &sample_val, sizeof(sample_val)))
			count_drop();
	}
	return 0;
}

/* Not a benchmark: the raw tracepoint the classic one was chosen over, with
 * the filter it would need, for examples/plain_ringbuf.rs to measure what
 * each costs the machine's other system calls.
 */
SEC("?raw_tp/sys_enter")
int count_rawtp_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (ctx->args[1] != syscall_nr || !ours())
		return 0;
	count_drop();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
