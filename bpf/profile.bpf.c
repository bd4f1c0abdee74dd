// SPDX-License-Identifier: GPL-2.0
/* `bench --profile`: a sampler on the software cpu-clock event of every CPU.
 * At each tick it keeps the interrupted task only if it is one of bench's own
 * threads, and counts the (thread name, kernel stack, user stack) it was
 * found in. User space reads both maps after the run and symbolizes them.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

/* Deep enough for a uprobe hit under a Rust thread's start-up frames; the
 * kernel caps stacks at kernel.perf_event_max_stack (127) anyway. */
#define PROFILE_STACK_DEPTH 64
#define PROFILE_STACKS 16384
#define PROFILE_KEYS 16384
#define TASK_COMM_LEN 16

/* bench's process id, set before load. */
const volatile __u32 target_tgid = 0;

struct sample_key {
	char comm[TASK_COMM_LEN];
	/* Negative: no stack (e.g. -EFAULT: the tick found the thread in user
	 * mode, so it has no kernel stack) or lost (-EEXIST: a hash collision
	 * in the stack map, -ENOMEM: the map is full). */
	__s32 kernel_stack;
	__s32 user_stack;
};

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, PROFILE_STACKS);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct sample_key);
	__type(value, __u64);
	__uint(max_entries, PROFILE_KEYS);
} counts SEC(".maps");

/* Set by user space while the measured seconds run: the events are
 * enabled a little before and after, when they are attached and detached. */
__u32 recording;
/* Ticks that found another process on the CPU, and samples of ours that
 * could not be counted because the counts map was full. */
__u64 other_ticks;
__u64 dropped_samples;

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sample_key key = {};
	__u64 one = 1, *count;

	if (!recording)
		return 0;
	if ((__u32)(pid_tgid >> 32) != target_tgid) {
		__sync_fetch_and_add(&other_ticks, 1);
		return 0;
	}
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.kernel_stack = bpf_get_stackid(ctx, &stacks, 0);
	key.user_stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

	count = bpf_map_lookup_elem(&counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
		return 0;
	}
	/* Another CPU may have inserted the key meanwhile: add to its count. */
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		count = bpf_map_lookup_elem(&counts, &key);
		if (count)
			__sync_fetch_and_add(count, 1);
		else
			__sync_fetch_and_add(&dropped_samples, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
