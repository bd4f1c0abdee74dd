// SPDX-License-Identifier: GPL-2.0
/* In-kernel trigger family. A driver program, run from user space with
 * BPF_PROG_TEST_RUN, calls the probed kernel function batch_iters times per
 * run, so one syscall yields batch_iters triggers and the syscall's own cost
 * is spread over them. Every program is off by default ("?" sections): set-up
 * turns on the one driver and the one counter a benchmark needs, so a program
 * this kernel refuses never blocks another benchmark. `--body` adds work per
 * hit to the counting programs (body.h).
 */
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>

/* ringbuf events of kernel probes carry no address: the probed site is one. */
static __always_inline unsigned long long body_ip(void *ctx)
{
	return 0;
}

/* read-user: the stack of the thread that triggered, the producer in its
 * BPF_PROG_TEST_RUN call, found through its saved user registers.
 */
static __always_inline const void *body_user(void *ctx)
{
	struct pt_regs *regs;

	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return regs ? (const void *)regs->rsp : 0;
}

#include "body.h"
#include "programs.h"

/* Set before load; rodata is frozen, so the verifier sees a constant bound. */
const volatile __u32 batch_iters = 1;

/* The baseline: the driver counts and calls the helper the probes go on,
 * with nothing attached to it, as the kernel runner's kernel-count does.
 */
SEC("?raw_tp")
int drive_count(void *ctx)
{
	for (__u32 i = 0; i < batch_iters; i++) {
		count_hit();
		(void)bpf_get_numa_node_id();
	}
	return 0;
}

/* Calls the helper that fentry/fexit/kprobe programs are attached to. */
SEC("?raw_tp")
int drive_helper(void *ctx)
{
	for (__u32 i = 0; i < batch_iters; i++)
		(void)bpf_get_numa_node_id();
	return 0;
}

/* The kfunc fires the bpf_test_run:bpf_trigger_tp tracepoint on every call. */
extern int bpf_modify_return_test_tp(int nonce) __ksym __weak;

SEC("?raw_tp")
int drive_kfunc(void *ctx)
{
	for (__u32 i = 0; i < batch_iters; i++)
		(void)bpf_modify_return_test_tp(0);
	return 0;
}

BODY_PROGRAM("?tp/bpf_test_run/bpf_trigger_tp", count_tp, 0)
BODY_PROGRAM("?raw_tp/bpf_trigger_tp", count_rawtp, 0)

SEC("?fmod_ret/bpf_modify_return_test_tp")
int count_fmodret(void *ctx)
{
	count_and_run_body(ctx, 0);
	/* -EINVAL, as the kernel runner's: the kfunc's body is skipped. */
	return -22;
}

BODY_PROGRAM("?fentry/bpf_get_numa_node_id", count_fentry, 0)
BODY_PROGRAM("?fexit/bpf_get_numa_node_id", count_fexit, 0)
BODY_PROGRAM("?kprobe/bpf_get_numa_node_id", count_kprobe, 0)
BODY_PROGRAM("?kretprobe/bpf_get_numa_node_id", count_kretprobe, 0)
BODY_PROGRAM("?kprobe.multi/bpf_get_numa_node_id", count_kprobe_multi, 0)
BODY_PROGRAM("?kretprobe.multi/bpf_get_numa_node_id", count_kretprobe_multi, 0)

/* trig-k(ret)probe-multi-all: an empty program on every attachable kernel
 * function (set-up gives the list), beside the counting program above.
 */
EMPTY_PROGRAM("?kprobe.multi", empty_kprobe_multi)
EMPTY_PROGRAM("?kretprobe.multi", empty_kretprobe_multi)

char LICENSE[] SEC("license") = "GPL";
