// SPDX-License-Identifier: GPL-2.0
/* The `perf bench uprobe` collection: programs on libc's usleep() that do
 * what perf's do, an empty body or one bpf_trace_printk() of a running count,
 * on entry or on return. They count nothing: the loop's time is the measure.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "programs.h"

unsigned int entries;
unsigned int returns;

/* A bpf_trace_printk() of the count of calls so far, as perf's programs. */
#define PRINTK_PROGRAM(sec, name, fmt_text, count)			\
	SEC(sec)							\
	int name(void *ctx)						\
	{								\
		char fmt[] = fmt_text;					\
									\
		bpf_trace_printk(fmt, sizeof(fmt), ++count);		\
		return 0;						\
	}

EMPTY_PROGRAM("?uprobe", usleep_empty)
PRINTK_PROGRAM("?uprobe", usleep_printk, "bench uprobe %u", entries)
EMPTY_PROGRAM("?uretprobe", usleep_empty_ret)
PRINTK_PROGRAM("?uretprobe", usleep_printk_ret, "bench uretprobe %u", returns)

char LICENSE[] SEC("license") = "GPL";
