/* --body KIND: what a counting program does per hit besides counting, so that
 * the cost of a real tracer's work can be measured against the bare count.
 * The body is a read-only constant set before load: rodata is frozen, so the
 * verifier knows it and removes every other body's code, and the hot path
 * pays for the chosen body alone (no branch is left on it).
 *
 * The values follow `config::Body` in src/config.rs.
 */
#ifndef BENCH_BODY_H
#define BENCH_BODY_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

#define BODY_COUNT 0
#define BODY_KTIME 1
#define BODY_HASH 2
#define BODY_RINGBUF 3
#define BODY_READ_USER 4
#define BODY_STACK 5
#define BODY_PRINTK 6

const volatile __u32 body = BODY_COUNT;
/* read-user: bytes read per hit, at most READ_USER_MAX. */
const volatile __u32 read_bytes = 64;
/* ringbuf: one ring per consumer; a hit goes to ring cpu % nr_rings. */
const volatile __u32 nr_rings = 1;

/* stack: what the kernel runner's -s takes, into a per-CPU buffer. */
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

/* ktime: the latency tool's per-CPU sum and count of durations. */
struct latency {
	__u64 total_ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct latency);
} latency SEC(".maps");

/* hash: the per-thread aggregation tool's map, hits by thread id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} per_thread SEC(".maps");

/* ringbuf: the event tracer's fixed-size record. */
struct event {
	__u32 pid;
	__u32 tid;
	__u64 timestamp_ns;
	__u64 ip;
	__u8 payload[40];
};

#define BODY_MAX_RINGS 64

struct body_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* Only a template: user space creates the rings at their real size. */
	__uint(max_entries, 1 << 16);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, BODY_MAX_RINGS);
	__type(key, __u32);
	__array(values, struct body_ring);
} rings SEC(".maps");

/* Events no ring had room for, per CPU, as the ring buffer family counts. */
struct bench_counter body_drops[BENCH_MAX_CPUS];

/* read-user: where the bytes read go, per CPU. */
#define READ_USER_MAX 4096

struct user_bytes {
	__u8 bytes[READ_USER_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct user_bytes);
} user_buffer SEC(".maps");

static __always_inline void body_ktime(void)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct latency *slot;

	slot = bpf_map_lookup_elem(&latency, &zero);
	if (slot) {
		slot->total_ns += bpf_ktime_get_ns() - start;
		slot->count++;
	}
}

static __always_inline void body_hash(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 one = 1, *hits;

	/* Look up, else insert: the aggregation idiom of libbpf-tools. */
	hits = bpf_map_lookup_elem(&per_thread, &tid);
	if (hits)
		__sync_fetch_and_add(hits, 1);
	else
		bpf_map_update_elem(&per_thread, &tid, &one, BPF_NOEXIST);
}

static __always_inline void body_drop(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	__sync_fetch_and_add(&body_drops[cpu & (BENCH_MAX_CPUS - 1)].value, 1);
}

static __always_inline void body_ringbuf(__u64 ip)
{
	__u32 idx = bpf_get_smp_processor_id() % nr_rings;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct event *event;
	void *ring;

	ring = bpf_map_lookup_elem(&rings, &idx);
	if (!ring) {
		/* Not reached once set-up has filled every slot. */
		body_drop();
		return;
	}
	event = bpf_ringbuf_reserve(ring, sizeof(*event), 0);
	if (!event) {
		body_drop();
		return;
	}
	event->pid = pid_tgid >> 32;
	event->tid = (__u32)pid_tgid;
	event->timestamp_ns = bpf_ktime_get_ns();
	event->ip = ip;
	bpf_ringbuf_submit(event, 0);
}

static __always_inline void body_read_user(const void *from)
{
	__u32 zero = 0;
	struct user_bytes *buffer;
	__u32 size = read_bytes;

	buffer = bpf_map_lookup_elem(&user_buffer, &zero);
	if (!buffer)
		return;
	if (size > READ_USER_MAX)
		size = READ_USER_MAX;
	bpf_probe_read_user(buffer->bytes, size, from);
}

/* stack_flags: 0 for the kernel stack (kernel probes), BPF_F_USER_STACK for
 * the stack of the probed process (uprobes, USDT: a kernel stack there is
 * empty).
 */
static __always_inline void body_stack(void *ctx, __u64 stack_flags)
{
	__u32 zero = 0;
	struct bench_stack *buffer;

	buffer = bpf_map_lookup_elem(&stack_buffer, &zero);
	if (buffer)
		bpf_get_stack(ctx, buffer->ips, sizeof(buffer->ips), stack_flags);
}

static __always_inline void body_printk(void)
{
	char fmt[] = "bench body %u";

	bpf_trace_printk(fmt, sizeof(fmt), bpf_get_smp_processor_id());
}

/* Counts the hit, then runs the body. Each test is on a constant: the
 * verifier keeps one arm and drops the tests. The file that includes this one
 * defines, before it, body_ip(ctx) (the address ringbuf events carry) and
 * body_user(ctx) (where read-user reads: the probed thread's stack); they are
 * called in their arms only, so no other body pays for them.
 */
static __always_inline void count_and_run_body(void *ctx, __u64 stack_flags)
{
	count_hit();
	if (body == BODY_KTIME)
		body_ktime();
	else if (body == BODY_HASH)
		body_hash();
	else if (body == BODY_RINGBUF)
		body_ringbuf(body_ip(ctx));
	else if (body == BODY_READ_USER)
		body_read_user(body_user(ctx));
	else if (body == BODY_STACK)
		body_stack(ctx, stack_flags);
	else if (body == BODY_PRINTK)
		body_printk();
}

/* A program that counts a hit and runs the body, and nothing else;
 * stack_flags as count_and_run_body's.
 */
#define BODY_PROGRAM(sec, name, stack_flags)		\
	SEC(sec)					\
	int name(void *ctx)				\
	{						\
		count_and_run_body(ctx, stack_flags);	\
		return 0;				\
	}

#endif
