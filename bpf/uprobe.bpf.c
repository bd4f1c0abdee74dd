// SPDX-License-Identifier: GPL-2.0
/* Counting programs for the uprobe trigger family. A uprobe and a uretprobe
 * differ only in how they are attached, so one program serves both; the same
 * holds for the multi-uprobe link.
 */
#include <linux/bpf.h>
#include "counters.h"
#include "stack.h"

SEC("uprobe")
int count_uprobe(void *ctx)
{
	count_hit();
	take_stack(ctx, BPF_F_USER_STACK);
	return 0;
}

SEC("uprobe.multi")
int count_uprobe_multi(void *ctx)
{
	count_hit();
	take_stack(ctx, BPF_F_USER_STACK);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
