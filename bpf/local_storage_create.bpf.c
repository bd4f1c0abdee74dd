// SPDX-License-Identifier: GPL-2.0
/* The local-storage-create benchmark: what creating a BPF local storage
 * costs, as the kernel runner's local-storage-create measures it. The
 * producers create owners in batches (sockets, or threads), and a program
 * that sees each new owner creates its 64-byte storage with
 * BPF_LOCAL_STORAGE_GET_F_CREATE. Each creation counts a hit; a creation the
 * kernel refused counts in create_errs. A raw_tp program counts every
 * kmalloc of the whole system, as upstream's does, for the kmallocs per
 * creation.
 *
 * Every program is off by default ("?" sections): set-up turns on the
 * kmalloc counter and one creator.
 * - count_sock_lsm: upstream's, a sleepable LSM program on
 *   socket_post_create, for the sockets this process creates.
 * - count_sock_cgroup: where the kernel refuses LSM programs, a
 *   cgroup/sock_create program on this process's cgroup (v2) creates the
 *   same storage for the same sockets: the kernel runs it for every inet
 *   socket created in that cgroup, in the creating task's context.
 * - count_task_fork: upstream's, a tp_btf program on sched_process_fork,
 *   for the threads this process's producers create (not those its main
 *   thread starts: the producers themselves, which the runner starts after
 *   set-up).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

/* Its older name (Linux 5.2) in older UAPI headers. */
#ifndef BPF_LOCAL_STORAGE_GET_F_CREATE
#define BPF_LOCAL_STORAGE_GET_F_CREATE BPF_SK_STORAGE_GET_F_CREATE
#endif

/* The kernel's own, read with CO-RE: only the fields used. */
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

struct sock;

struct socket {
	struct sock *sk;
} __attribute__((preserve_access_index));

/* Set before load: this process. */
const volatile __u32 bench_pid = 0;

/* One slot each, shared by every CPU: one atomic add per event, as
 * upstream's counters (bench_counter, so that user space reads them as it
 * reads the hits).
 */
struct bench_counter kmallocs[1];
struct bench_counter create_errs[1];

struct storage {
	__u8 data[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct storage);
} sk_storage_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct storage);
} task_storage_map SEC(".maps");

static __always_inline void created(void *storage)
{
	if (storage)
		count_hit();
	else
		__sync_fetch_and_add(&create_errs[0].value, 1);
}

static __always_inline int from_bench(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == bench_pid;
}

/* kmalloc(call_site, ptr, bytes_req, bytes_alloc, gfp_flags, node): the
 * arguments changed across releases; only the call is counted.
 */
SEC("?raw_tp/kmalloc")
int count_kmalloc(void *ctx)
{
	__sync_fetch_and_add(&kmallocs[0].value, 1);
	return 0;
}

/* socket_post_create(sock, family, type, protocol, kern) */
SEC("?lsm.s/socket_post_create")
int count_sock_lsm(__u64 *ctx)
{
	struct socket *sock = (struct socket *)ctx[0];
	struct sock *sk = sock->sk;

	if (!from_bench() || !sk)
		return 0;
	created(bpf_sk_storage_get(&sk_storage_map, sk, NULL,
				   BPF_LOCAL_STORAGE_GET_F_CREATE));
	return 0;
}

SEC("?cgroup/sock_create")
int count_sock_cgroup(struct bpf_sock *sk)
{
	if (from_bench())
		created(bpf_sk_storage_get(&sk_storage_map, sk, NULL,
					   BPF_LOCAL_STORAGE_GET_F_CREATE));
	/* Let every socket be created. */
	return 1;
}

/* sched_process_fork(parent, child), in the parent's context. */
SEC("?tp_btf/sched_process_fork")
int count_task_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];

	if (parent->tgid != bench_pid || parent->pid == bench_pid)
		return 0;
	created(bpf_task_storage_get(&task_storage_map, child, NULL,
				     BPF_LOCAL_STORAGE_GET_F_CREATE));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
