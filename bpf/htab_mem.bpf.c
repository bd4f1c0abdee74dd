// SPDX-License-Identifier: GPL-2.0
/* The htab-mem family: what a BPF hash map costs to write and to empty, and
 * how much memory it holds meanwhile, under the kernel runner's use cases.
 * One trigger (a getpgid or getppid call of this process) makes OPS_PER_CALL
 * updates or deletions through bpf_loop(); hits are the triggers' operations
 * as upstream counts them: 1 per overwrite, add or delete trigger, 2 per
 * trigger that adds then deletes a batch. The calls of other processes are
 * ignored (tgid), so that a fixed run's count is exact.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

#define OPS_PER_CALL 64
#define MAX_VALUE_SIZE 4096

/* Value size, entries and flags are set before load; the key is 4 bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, 4);
	__uint(value_size, 8);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} htab SEC(".maps");

const volatile __u32 tgid = 0;

/* The producers: each CPU starts its walk of the keys at its own number
 * and steps by this, so that CPUs write mostly different keys.
 */
__u32 nr_thread = 1;

/* What every update writes: zeros, as many as the value size. */
const char zeroes[MAX_VALUE_SIZE];

struct walk {
	__u32 key;
	__u32 step;
	__u64 flags;
};

static int update_one(__u32 index, struct walk *walk)
{
	bpf_map_update_elem(&htab, &walk->key, zeroes, walk->flags);
	walk->key += walk->step;
	return 0;
}

static int delete_one(__u32 index, struct walk *walk)
{
	bpf_map_delete_elem(&htab, &walk->key);
	walk->key += walk->step;
	return 0;
}

static __always_inline int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == tgid;
}

/* A walk from this CPU's first key; `paired`: two producers, an adder and
 * a deleter, share the walk of one pair.
 */
static __always_inline struct walk walk_from_here(int paired, __u64 flags)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct walk walk = {
		.key = paired ? cpu / 2 : cpu,
		.step = paired ? nr_thread / 2 : nr_thread,
		.flags = flags,
	};
	return walk;
}

/* Overwrite: existing keys take a new value (created the first time). */
SEC("?tp/syscalls/sys_enter_getpgid")
int count_htab_overwrite(void *ctx)
{
	struct walk walk;

	if (!ours())
		return 0;
	walk = walk_from_here(0, BPF_ANY);
	bpf_loop(OPS_PER_CALL, update_one, &walk, 0);
	count_hit();
	return 0;
}

/* A batch added, then the same batch deleted, by one trigger. */
SEC("?tp/syscalls/sys_enter_getpgid")
int count_htab_batch(void *ctx)
{
	struct walk walk;

	if (!ours())
		return 0;
	walk = walk_from_here(0, BPF_ANY);
	bpf_loop(OPS_PER_CALL, update_one, &walk, 0);
	walk = walk_from_here(0, 0);
	bpf_loop(OPS_PER_CALL, delete_one, &walk, 0);
	count_hits(2);
	return 0;
}

/* Add on one CPU (getpgid), delete on another (getppid): the freed
 * elements go back to another CPU's cache than the one they came from.
 */
SEC("?tp/syscalls/sys_enter_getpgid")
int count_htab_add(void *ctx)
{
	struct walk walk;

	if (!ours())
		return 0;
	walk = walk_from_here(1, BPF_NOEXIST);
	bpf_loop(OPS_PER_CALL, update_one, &walk, 0);
	count_hit();
	return 0;
}

SEC("?tp/syscalls/sys_enter_getppid")
int count_htab_del(void *ctx)
{
	struct walk walk;

	if (!ours())
		return 0;
	walk = walk_from_here(1, 0);
	bpf_loop(OPS_PER_CALL, delete_one, &walk, 0);
	count_hit();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
