// SPDX-License-Identifier: GPL-2.0
/* The rename family: a producer writes its own name to its comm file, which
 * runs __set_task_comm and fires the task:task_rename tracepoint; one program
 * of each kind sits on that path and does nothing but count. Every program is
 * off by default ("?" sections): set-up turns on the one a benchmark needs, so
 * a program this kernel refuses never blocks another.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

/* This process: any task that execs or renames itself fires the tracepoint,
 * and only this process's renames are the benchmark's. Set before load.
 */
const volatile __u32 own_tgid = 0;

static __always_inline bool own_rename(void)
{
	return (__u32)(bpf_get_current_pid_tgid() >> 32) == own_tgid;
}

/* kprobes and raw tracepoints never overlap themselves on a CPU: the plain
 * add. fentry and fexit run preemptible, under a recursion guard only since
 * 5.12: the atomic one.
 */
static __always_inline void count_own_rename(void)
{
	if (own_rename())
		count_hit_alone();
}

static __always_inline void count_own_rename_preemptible(void)
{
	if (own_rename())
		count_hit();
}

SEC("?kprobe/__set_task_comm")
int count_rename_kprobe(void *ctx)
{
	count_own_rename();
	return 0;
}

SEC("?kretprobe/__set_task_comm")
int count_rename_kretprobe(void *ctx)
{
	count_own_rename();
	return 0;
}

SEC("?raw_tp/task_rename")
int count_rename_rawtp(void *ctx)
{
	count_own_rename();
	return 0;
}

SEC("?fentry/__set_task_comm")
int count_rename_fentry(void *ctx)
{
	count_own_rename_preemptible();
	return 0;
}

SEC("?fexit/__set_task_comm")
int count_rename_fexit(void *ctx)
{
	count_own_rename_preemptible();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
