// SPDX-License-Identifier: GPL-2.0
/* The hash map family: what an update of a full hash map and a lookup in a
 * hash map cost, measured as the kernel runner's bpf-hashmap-full-update and
 * bpf-hashmap-lookup measure them. Each body runs from the trigger
 * helper_trigger.h chooses and times itself with bpf_ktime_get_ns(), per CPU;
 * hits are the updates tried (full_update) and the lookups made (lookup).
 * Set-up may turn either map into a resizable hash map (BPF_MAP_TYPE_RHASH,
 * allocated on demand) before load: the bodies do not change.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"
#include "helper_trigger.h"

#define NR_CPUS 256
#define CPU_MASK (NR_CPUS - 1)

/* full_update: a map of FULL_ENTRIES entries that user space fills before
 * the run, so that every update of a key it does not hold finds it full.
 */
#define FULL_ENTRIES 1000

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, FULL_ENTRIES);
} full_map SEC(".maps");

/* Updates per trigger, set after load. */
__u64 full_nr_loops = 0;
/* Each CPU's time of its last trigger's updates, in ns. */
__u64 __attribute__((__aligned__(256))) full_time[NR_CPUS];

static int update_callback(__u32 index, __u32 *key)
{
	__u64 value = 1;

	bpf_map_update_elem(&full_map, key, &value, BPF_ANY);
	return 0;
}

/* Updates of a key one past the filled ones (a key per CPU): each one
 * looks for a free element in a full map and fails.
 */
static __always_inline void body_full_update(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 key = cpu + FULL_ENTRIES;
	__u64 start = bpf_ktime_get_ns();
	long done;

	done = bpf_loop(full_nr_loops, update_callback, &key, 0);
	full_time[cpu & CPU_MASK] = bpf_ktime_get_ns() - start;
	if (done > 0)
		count_hits(done);
}

/* lookup: set-up gives the map its key size, entries and flags before load,
 * and fills keys 1..nr_entries; the rest of each key is the same words.
 */
#define MAX_KEY_SIZE 1024
#define NR_SLOTS 32

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64));
	__uint(max_entries, 1000);
} lookup_map SEC(".maps");

/* Set after load: lookups per inner loop, inner loops per trigger. */
__u64 nr_entries = 0;
__u64 nr_loops = 0;
/* The key looked up, shared by every CPU as the kernel runner's is: only
 * its first word changes, to another key the map holds.
 */
__u32 __attribute__((__aligned__(8))) key[MAX_KEY_SIZE / 4];

/* Each CPU's times of its last NR_SLOTS triggers, in ns, and how many it made. */
__u64 __attribute__((__aligned__(256))) times_index[NR_CPUS];
__u64 __attribute__((__aligned__(256))) times[NR_CPUS][NR_SLOTS];

static int lookup_callback(__u32 index, void *unused)
{
	key[0] = index + 1;
	return bpf_map_lookup_elem(&lookup_map, key) ? 0 : 1;
}

static int lookup_loop_callback(__u32 index, __u64 *looked_up)
{
	long done = bpf_loop(nr_entries, lookup_callback, NULL, 0);

	*looked_up += done;
	return done ? 0 : 1;
}

static __always_inline void body_lookup(void)
{
	__u32 cpu = bpf_get_smp_processor_id() & CPU_MASK;
	__u64 slot = times_index[cpu] % NR_SLOTS;
	__u64 looked_up = 0;
	__u64 start = bpf_ktime_get_ns();

	bpf_loop(nr_loops, lookup_loop_callback, &looked_up, 0);
	times[cpu][slot] = bpf_ktime_get_ns() - start;
	times_index[cpu] += 1;
	if (looked_up)
		count_hits(looked_up);
}

HELPER_ENTRIES(full_update)
HELPER_ENTRIES(lookup)

char LICENSE[] SEC("license") = "GPL";
