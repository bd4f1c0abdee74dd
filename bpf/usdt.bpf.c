// SPDX-License-Identifier: GPL-2.0
/* USDT family: a counter on the SystemTap SDT probes compiled into the bench
 * binary. libbpf's USDT support needs the maps of usdt.bpf.h in the object.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include "counters.h"
#include "stack.h"
#include <bpf/usdt.bpf.h>

SEC("usdt")
int count_usdt(struct pt_regs *ctx)
{
	count_hit();
	take_stack(ctx, BPF_F_USER_STACK);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
