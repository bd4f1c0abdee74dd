// SPDX-License-Identifier: GPL-2.0
/* USDT family: a counter on the SystemTap SDT probes compiled into the bench
 * binary. libbpf's USDT support needs the maps of usdt.bpf.h in the object.
 * `--body` adds work per hit (body.h); read-user also fetches the probe's
 * arguments through libbpf's USDT argument support, as a USDT tracer does.
 */
#include <stdbool.h>
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
#include <bpf/usdt.bpf.h>

/* The sum of the arguments read-user fetched: a use, so the reads stay. */
long usdt_args_seen;

SEC("usdt")
int count_usdt(struct pt_regs *ctx)
{
	count_and_run_body(ctx, BPF_F_USER_STACK);
	if (body == BODY_READ_USER) {
		int count = bpf_usdt_arg_cnt(ctx);
		long value;

		for (int i = 0; i < BPF_USDT_MAX_ARG_CNT && i < count; i++) {
			if (!bpf_usdt_arg(ctx, i, &value))
				usdt_args_seen += value;
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
