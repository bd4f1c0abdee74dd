// SPDX-License-Identifier: GPL-2.0
/* Counting programs for the uprobe trigger family. A uprobe and a uretprobe
 * differ only in how they are attached, so one program serves both; the same
 * holds for the multi-uprobe link. `--body` adds work per hit (body.h).
 */
#include <linux/bpf.h>
#include <asm/ptrace.h>

static __always_inline unsigned long long body_ip(void *ctx)
{
	return ((struct pt_regs *)ctx)->rip;
}

static __always_inline const void *body_user(void *ctx)
{
	return (const void *)((struct pt_regs *)ctx)->rsp;
}

#include "body.h"

BODY_PROGRAM("uprobe", count_uprobe, BPF_F_USER_STACK)
BODY_PROGRAM("uprobe.multi", count_uprobe_multi, BPF_F_USER_STACK)

char LICENSE[] SEC("license") = "GPL";
