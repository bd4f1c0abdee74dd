// SPDX-License-Identifier: GPL-2.0
/* The `perf bench uprobe` collection: programs on libc's usleep() that do
 * what perf's do, an empty body or one bpf_trace_printk() of a running count,
 * on entry or on return. They count nothing: the loop's time is the measure.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

unsigned int entries;
unsigned int returns;

SEC("?uprobe")
int usleep_empty(void *ctx)
{
	return 0;
}

SEC("?uprobe")
int usleep_printk(void *ctx)
{
	char fmt[] = "bench uprobe %u";

	bpf_trace_printk(fmt, sizeof(fmt), ++entries);
	return 0;
}

SEC("?uretprobe")
int usleep_empty_ret(void *ctx)
{
	return 0;
}

SEC("?uretprobe")
int usleep_printk_ret(void *ctx)
{
	char fmt[] = "bench uretprobe %u";

	bpf_trace_printk(fmt, sizeof(fmt), ++returns);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
