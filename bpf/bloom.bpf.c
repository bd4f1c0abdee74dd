// SPDX-License-Identifier: GPL-2.0
/* The bloom filter family: what a lookup or an update of a
 * BPF_MAP_TYPE_BLOOM_FILTER map costs, and what a bloom filter in front of a
 * hash map saves, measured as the kernel runner's bloom-*, hashmap-*-bloom
 * benchmarks measure it. Each body runs from the trigger helper_trigger.h
 * chooses.
 *
 * One trigger of bloom_lookup / bloom_update walks every element of the
 * array `values` with bpf_for_each_map_elem() and looks it up in (or pushes
 * it into) the bloom filter: one hit per element. One trigger of
 * hashmap_lookup makes LOOKUPS_PER_TRIGGER lookups of keys taken at a random
 * place of rand_vals (random bytes, almost never a key of the hash map),
 * asking the bloom filter first when use_bloom is set: a hit when the filter
 * says "absent" or the hash map has the key, a drop when the hash map lacks
 * it (with the filter on, a drop is a false positive of the filter).
 *
 * The map sizes, value sizes and the filter's hash count are set by user
 * space before load. Counts are kept on the stack through a trigger and
 * added to the per-CPU slots once at its end, so that they are exact.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"
#include "helper_trigger.h"

#define LOOKUPS_PER_TRIGGER 1024
/* Lookups start within the first 2 MiB of rand_vals; a key of up to 256
 * bytes starting there stays inside it.
 */
#define RAND_WINDOW_MASK ((1U << 21) - 1)
#define RAND_BYTES 2500000
#define ENOENT 2

struct bpf_map;

/* Random bytes user space writes after load. */
__u8 rand_vals[RAND_BYTES];

/* The values to look up or push: every one was pushed into `bloom` too. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(key_size, sizeof(__u32));
} values SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__uint(map_extra, 3);
} bloom SEC(".maps");

/* Its keys are its values. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
} hashmap SEC(".maps");

/* The drops, per CPU as counters.h's hits. */
struct bench_counter drops[BENCH_MAX_CPUS];

/* Set when the filter refused an operation it should not: bit 0 by the
 * array walk, bit 1 by the hash map lookups. User space stops the run.
 */
__u64 body_error = 0;

/* hashmap_lookup: ask the bloom filter first. */
const volatile bool use_bloom = false;
/* The keys' size: the step between two lookups in rand_vals (set before
 * load, in .bss as upstream has it: the verifier takes it as unknown).
 */
__u32 value_size;

static __always_inline void count_drops(__u64 n)
{
	__u32 cpu = bpf_get_smp_processor_id();

	__sync_fetch_and_add(&drops[cpu & (BENCH_MAX_CPUS - 1)].value, n);
}

struct walk {
	__u64 hits;
	bool update;
};

static __u64 filter_element(struct bpf_map *map, __u32 *key, void *value, struct walk *walk)
{
	long err;

	if (walk->update)
		err = bpf_map_push_elem(&bloom, value, 0);
	else
		err = bpf_map_peek_elem(&bloom, value);
	if (err) {
		__sync_fetch_and_or(&body_error, 1);
		return 1;
	}
	walk->hits++;
	return 0;
}

static __always_inline void walk_values(bool update)
{
	struct walk walk = { .hits = 0, .update = update };

	bpf_for_each_map_elem(&values, filter_element, &walk, 0);
	count_hits(walk.hits);
}

static __always_inline void body_bloom_lookup(void)
{
	walk_values(false);
}

static __always_inline void body_bloom_update(void)
{
	walk_values(true);
}

static __always_inline void body_hashmap_lookup(void)
{
	__u32 index = bpf_get_prandom_u32();
	__u64 hits = 0, misses = 0;

	for (int i = 0; i < LOOKUPS_PER_TRIGGER; i++, index += value_size) {
		index &= RAND_WINDOW_MASK;
		if (use_bloom) {
			long err = bpf_map_peek_elem(&bloom, rand_vals + index);

			if (err == -ENOENT) {
				hits++;
				continue;
			}
			if (err) {
				__sync_fetch_and_or(&body_error, 2);
				return;
			}
		}
		if (bpf_map_lookup_elem(&hashmap, rand_vals + index))
			hits++;
		else
			misses++;
	}
	count_hits(hits);
	count_drops(misses);
}

HELPER_ENTRIES(bloom_lookup)
HELPER_ENTRIES(bloom_update)
HELPER_ENTRIES(hashmap_lookup)

char LICENSE[] SEC("license") = "GPL";
