// SPDX-License-Identifier: GPL-2.0
/* The helper family: what a BPF helper or kfunc costs per call, measured as
 * the kernel runner's bpf-loop, bpf-for and strncmp benchmarks measure it.
 * Each body runs from the trigger helper_trigger.h chooses; a trigger of the
 * loop bodies makes CALLS_PER_TRIGGER calls, as upstream's do, so that the
 * trigger's own cost is spread over them (fewer past 1000 iterations a
 * call). Hits are what one op of the benchmark is: loop iterations for the
 * loops, comparisons that found the string smaller for strncmp (every one
 * does), triggers for the baseline.
 */
#include <linux/bpf.h>
#include <linux/version.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"
#include "helper_trigger.h"

/* The iterator's state, in the UAPI header since 6.4: defined here for
 * older headers (the kernel checks the kfuncs' argument by its name).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));
#endif

#define CALLS_PER_TRIGGER 1000
#define STRNCMP_STR_SZ 4096

/* Set after load, as upstream sets its own: the verifier sees no bound. */
__u32 nr_loops = 0;
/* The loops' calls per trigger, set before load: CALLS_PER_TRIGGER, fewer
 * when nr_loops is large, so that a trigger never holds its CPU in the
 * kernel for more than a few ms (helpers.rs says how many). A constant to
 * the verifier, which then walks the calls made alone.
 */
const volatile __u32 calls_per_trigger = CALLS_PER_TRIGGER;

/* strncmp: set before load. str is target with its last compared byte one
 * smaller, so every comparison finds it smaller and counts.
 */
const volatile __u32 cmp_str_len = 1;
const char target[STRNCMP_STR_SZ];
char str[STRNCMP_STR_SZ];

/* The baseline: the trigger alone, one hit per trigger. */
static __always_inline void body_base(void)
{
	count_hit();
}

static int empty_callback(__u32 index, void *data)
{
	return 0;
}

/* bpf_loop() with an empty callback; counts the iterations it reports. */
static __always_inline void body_bpf_loop(void)
{
	for (int i = 0; i < CALLS_PER_TRIGGER; i++) {
		long done;

		if (i >= calls_per_trigger)
			break;
		done = bpf_loop(nr_loops, empty_callback, NULL, 0);
		if (done > 0)
			count_hits(done);
	}
}

/* An empty open-coded loop: bpf_iter_num_new/next/destroy behind bpf_for(). */
static int open_coded_loop(__u32 index, void *data)
{
	int i;

	bpf_for(i, 0, (int)nr_loops)
		;
	count_hits(nr_loops);
	return 0;
}

/* calls_per_trigger open-coded loops, called by bpf_loop() as upstream's. */
static __always_inline void body_bpf_for(void)
{
	bpf_loop(calls_per_trigger, open_coded_loop, NULL, 0);
}

/* The byte loop the helper replaces. */
static __always_inline int byte_strncmp(const char *s1, __u32 sz, const char *s2)
{
	int diff = 0;

	for (__u32 i = 0; i < sz; i++) {
		diff = (unsigned char)s1[i] - (unsigned char)s2[i];
		if (diff || !s1[i])
			break;
	}
	return diff;
}

static __always_inline void body_strncmp_no_helper(void)
{
	if (byte_strncmp(str, cmp_str_len + 1, target) < 0)
		count_hit();
}

static __always_inline void body_strncmp_helper(void)
{
	if (bpf_strncmp(str, cmp_str_len + 1, target) < 0)
		count_hit();
}

HELPER_ENTRIES(base)
HELPER_ENTRIES(bpf_loop)
HELPER_ENTRIES(bpf_for)
HELPER_ENTRIES(strncmp_no_helper)
HELPER_ENTRIES(strncmp_helper)

char LICENSE[] SEC("license") = "GPL";
