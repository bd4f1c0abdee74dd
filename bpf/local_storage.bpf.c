// SPDX-License-Identifier: GPL-2.0
/* The local-storage family: what a task-local storage lookup costs as the
 * number of storage maps a task carries grows (the kernel runner's
 * local-storage-cache-seq-get and -int-get), against a hash map lookup of
 * the same key space (local-storage-cache-hashmap-control).
 *
 * One trigger runs LOOKUPS_PER_TRIGGER rounds through bpf_loop(). Round i
 * looks up map i % num_maps of an array of maps: in a task storage map, the
 * current task's value (created on first use), or in a hash map, a random
 * key below hashmap_num_keys. With interleave, every round whose map index
 * is a multiple of 3 also looks up map 0, the "important" one. Every lookup
 * counts a hit; a lookup of map 0 also counts an important hit. The body
 * runs from the trigger helper_trigger.h chooses.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"
#include "helper_trigger.h"

/* Keep in step with src/benches/local_storage.rs. */
#define MAX_NR_MAPS 1000
#define HASHMAP_SZ 4194304
#define LOOKUPS_PER_TRIGGER 10000

struct task_struct;

/* User space creates the inner maps and puts them in: the declared inner
 * map is only their template.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_NR_MAPS);
	__type(key, int);
	__type(value, int);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
		__uint(map_flags, BPF_F_NO_PREALLOC);
		__type(key, int);
		__type(value, int);
	});
} task_storage_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MAX_NR_MAPS);
	__type(key, int);
	__type(value, int);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__uint(max_entries, HASHMAP_SZ);
		__type(key, int);
		__type(value, int);
	});
} hash_maps SEC(".maps");

/* Lookups of map 0, per CPU as hits are. */
struct bench_counter important_hits[BENCH_MAX_CPUS];

/* Set before load. */
const volatile __u32 use_hashmap = 0;
const volatile __u32 interleave = 0;
const volatile __u32 num_maps = 1;
const volatile __u32 hashmap_num_keys = 1;

struct rounds {
	struct task_struct *task;
	__u64 hits;
	__u64 important;
};

static __always_inline void lookup_in(__u32 map_index, struct rounds *rounds)
{
	void *inner;
	int key = 0;

	if (use_hashmap)
		inner = bpf_map_lookup_elem(&hash_maps, &map_index);
	else
		inner = bpf_map_lookup_elem(&task_storage_maps, &map_index);
	if (!inner)
		return;
	if (use_hashmap) {
		key = bpf_get_prandom_u32() % hashmap_num_keys;
		bpf_map_lookup_elem(inner, &key);
	} else {
		bpf_task_storage_get(inner, rounds->task, &key,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	}
	rounds->hits++;
	if (map_index == 0)
		rounds->important++;
}

static long one_round(__u32 index, void *data)
{
	struct rounds *rounds = data;
	__u32 map_index = index % num_maps;

	lookup_in(map_index, rounds);
	if (interleave && map_index % 3 == 0)
		lookup_in(0, rounds);
	return 0;
}

static __always_inline void body_local_storage(void)
{
	struct rounds rounds = {
		.task = bpf_get_current_task_btf(),
	};
	__u32 cpu;

	bpf_loop(LOOKUPS_PER_TRIGGER, one_round, &rounds, 0);
	count_hits(rounds.hits);
	cpu = bpf_get_smp_processor_id();
	__sync_fetch_and_add(&important_hits[cpu & (BENCH_MAX_CPUS - 1)].value,
			     rounds.important);
}

HELPER_ENTRIES(local_storage)

char LICENSE[] SEC("license") = "GPL";
