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
#include "programs.h"

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

/* A program that counts its site's hit. */
#define SITE_PROGRAM(sec, name)			\
	SEC(sec)				\
	int name(struct pt_regs *ctx)		\
	{					\
		count_site(ctx);		\
		return 0;			\
	}

SITE_PROGRAM("uprobe", count_site_uprobe)
SITE_PROGRAM("uprobe.multi", count_site_multi)
SITE_PROGRAM("usdt", count_site_usdt)

EMPTY_PROGRAM("kprobe", empty_kprobe)
EMPTY_PROGRAM("kprobe.multi", empty_kprobe_multi)
EMPTY_PROGRAM("fentry/bpf_fentry_test1", empty_fentry)

char LICENSE[] SEC("license") = "GPL";
