// SPDX-License-Identifier: GPL-2.0
/* The local-storage-tasks-trace benchmark: how long an RCU Tasks Trace grace
 * period takes while many tasks exist and task-local storage is created and
 * freed all the time (the kernel runner's local-storage-tasks-trace).
 *
 * Every getpgid() on the machine (the producer's, and each sleeper's when it
 * wakes) creates the calling task's storage and deletes it again: a delete
 * frees its element after a Tasks Trace grace period, so the grace-period
 * kthread never idles, and each of its grace periods walks every task. Two
 * more programs on the kthread's own steps time each grace period, from the
 * step before it (rcu_tasks_trace_pregp_step) to the one after it
 * (rcu_tasks_trace_postgp).
 *
 * All three are fentry programs: a kernel that refuses tracing programs, or
 * lacks the two functions, cannot run the benchmark (user space says which).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

/* The syscall's entry on x86-64, the architecture bench's targets are for. */
#define SYS_GETPGID "__x64_sys_getpgid"

struct task_struct;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, int);
} task_storage SEC(".maps");

/* Read by user space through the mmapped .bss: grace periods ended, their
 * summed time in ns, and whether the two steps ran out of order.
 */
__u64 gp_hits;
__u64 gp_times;
__u64 unexpected;
/* The start of the grace period under way; 0 when none is. */
__u64 current_gp_start;
__u8 postgp_seen;

/* One create and delete of the calling task's storage: one hit. */
SEC("fentry/" SYS_GETPGID)
int count_tt_storage(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	int *value;

	value = bpf_task_storage_get(&task_storage, task, NULL,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!value)
		return 0;
	*value = 3;
	bpf_task_storage_delete(&task_storage, task);
	count_hit();
	return 0;
}

SEC("fentry/rcu_tasks_trace_pregp_step")
int count_tt_pregp(void *ctx)
{
	current_gp_start = bpf_ktime_get_ns();
	return 0;
}

SEC("fentry/rcu_tasks_trace_postgp")
int count_tt_postgp(void *ctx)
{
	/* The first end may close a grace period begun before the programs
	 * were attached: it is not timed (the kernel runner times it from
	 * boot). After that, an end without a start means the two steps are
	 * not paired as the benchmark assumes.
	 */
	if (!current_gp_start) {
		if (postgp_seen)
			__sync_fetch_and_add(&unexpected, 1);
		postgp_seen = 1;
		return 0;
	}
	__sync_fetch_and_add(&gp_times, bpf_ktime_get_ns() - current_gp_start);
	__sync_fetch_and_add(&gp_hits, 1);
	current_gp_start = 0;
	postgp_seen = 1;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
