// SPDX-License-Identifier: GPL-2.0
/* The attach family: programs whose cost is in being attached and detached.
 * Every attached site counts its own hits, found by the probed address, so
 * that the verify pass can name a site that did not fire. The kernel-side
 * programs are empty: their sites cannot be driven from user space.
 */
#define __TARGET_ARCH_x86
#include <stdbool.h>
#include <linux/bpf.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

/* Must equal src/attach/sites.rs's SITE_COUNT rounded up to a power of two. */
#define ATTACH_MAX_SITES 65536
/* Bytes between two sites (src/attach/sites.rs's SITE_STRIDE). */
#define ATTACH_SITE_SHIFT 3

/* The run-time address of site 0, set before load. */
const volatile __u64 sites_base = 0;

__u32 site_hits[ATTACH_MAX_SITES];
/* Hits at an address that is no site: must stay 0. */
__u64 stray_hits;

static __always_inline void count_site(struct pt_regs *ctx)
{
	__u64 index = (PT_REGS_IP(ctx) - sites_base) >> ATTACH_SITE_SHIFT;

	if (index < ATTACH_MAX_SITES)
		__sync_fetch_and_add(&site_hits[index], 1);
	else
		__sync_fetch_and_add(&stray_hits, 1);
}

SEC("uprobe")
int count_site_uprobe(struct pt_regs *ctx)
{
	count_site(ctx);
	return 0;
}

SEC("uprobe.multi")
int count_site_multi(struct pt_regs *ctx)
{
	count_site(ctx);
	return 0;
}

SEC("usdt")
int count_site_usdt(struct pt_regs *ctx)
{
	count_site(ctx);
	return 0;
}

SEC("kprobe")
int empty_kprobe(void *ctx)
{
	return 0;
}

SEC("kprobe.multi")
int empty_kprobe_multi(void *ctx)
{
	return 0;
}

SEC("fentry/bpf_fentry_test1")
int empty_fentry(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
