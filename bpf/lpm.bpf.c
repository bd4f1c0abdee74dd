// SPDX-License-Identifier: GPL-2.0
/* The LPM trie family: what one lookup, insert, update or delete of an
 * LPM_TRIE map costs, and how long the kernel takes to free a full one,
 * measured as the kernel runner's lpm-trie-* benchmarks measure it.
 *
 * drive_lpm is an XDP program that user space runs with BPF_PROG_TEST_RUN
 * (upstream's trigger, which every kernel here allows); one run makes
 * LPM_LOOPS operations with bpf_loop(), fewer when insert or delete reach
 * the last key, and counts each as a hit. The time the loop took is added to
 * op_ns, the operations to op_count, so that set-up can report the time per
 * operation measured inside BPF, without the map's refills.
 *
 * The free benchmark times the kernel's bpf_map_free_deferred() for maps
 * named trie_free_map with an fentry/fexit pair (off by default: set-up turns
 * them on).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "counters.h"

#define LPM_LOOPS 10000
#define MAX_ENTRIES 100000000
#define OBJ_NAME_LEN 16

/* What one run of drive_lpm does (set before each run by user space). */
enum lpm_op {
	LPM_NOOP = 0,
	LPM_BASELINE,
	LPM_LOOKUP,
	LPM_INSERT,
	LPM_UPDATE,
	LPM_DELETE,
};

/* drive_lpm's return values besides a negative errno. */
#define LPM_DONE 0
#define LPM_REFILL 1 /* insert or delete reached the last key: reset the trie */

struct lpm_key {
	__u32 prefixlen;
	__u32 data;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct lpm_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MAX_ENTRIES);
} trie_map SEC(".maps");

/* Set by user space before the runs. */
__u32 nr_entries = 0;
__u32 prefixlen = 0;
__u32 random_keys = 0;
__u32 op = LPM_NOOP;

/* Time spent in the operations' loops (or freeing), and how many. */
__u64 op_ns = 0;
__u64 op_count = 0;

/* The next key in order; one producer at a time writes it for the
 * benchmarks that depend on the order (insert, delete).
 */
static __u32 next_key;

static __always_inline void make_key(struct lpm_key *key)
{
	key->prefixlen = prefixlen;
	if (random_keys)
		key->data = bpf_get_prandom_u32() % nr_entries;
	else
		key->data = next_key++ % nr_entries;
}

static int op_noop(__u32 index, void *ctx)
{
	return 0;
}

/* The key's making alone: what lookup and update pay beside the map. */
static int op_baseline(__u32 index, void *ctx)
{
	struct lpm_key key;
	volatile __u32 sink;

	make_key(&key);
	sink = key.data;
	(void)sink;
	return 0;
}

static int op_lookup(__u32 index, int *status)
{
	struct lpm_key key;

	make_key(&key);
	if (!bpf_map_lookup_elem(&trie_map, &key)) {
		*status = -2; /* -ENOENT: every key is in the trie */
		return 1;
	}
	return 0;
}

static int op_insert(__u32 index, int *status)
{
	struct lpm_key key;
	__u32 one = 1;
	long err;

	make_key(&key);
	err = bpf_map_update_elem(&trie_map, &key, &one, BPF_NOEXIST);
	if (err) {
		*status = err;
		return 1;
	}
	if (key.data == nr_entries - 1) {
		*status = LPM_REFILL;
		return 1;
	}
	return 0;
}

static int op_update(__u32 index, int *status)
{
	struct lpm_key key;
	__u32 one = 1;
	long err;

	make_key(&key);
	err = bpf_map_update_elem(&trie_map, &key, &one, BPF_EXIST);
	if (err) {
		*status = err;
		return 1;
	}
	return 0;
}

static int op_delete(__u32 index, int *status)
{
	struct lpm_key key;
	long err;

	make_key(&key);
	err = bpf_map_delete_elem(&trie_map, &key);
	if (err) {
		*status = err;
		return 1;
	}
	if (key.data == nr_entries - 1) {
		*status = LPM_REFILL;
		return 1;
	}
	return 0;
}

SEC("?xdp")
int drive_lpm(struct xdp_md *ctx)
{
	int status = LPM_DONE;
	__u64 start = bpf_ktime_get_ns();
	long done;

	switch (op) {
	case LPM_NOOP:
		done = bpf_loop(LPM_LOOPS, op_noop, NULL, 0);
		break;
	case LPM_BASELINE:
		done = bpf_loop(LPM_LOOPS, op_baseline, NULL, 0);
		break;
	case LPM_LOOKUP:
		done = bpf_loop(LPM_LOOPS, op_lookup, &status, 0);
		break;
	case LPM_INSERT:
		done = bpf_loop(LPM_LOOPS, op_insert, &status, 0);
		break;
	case LPM_UPDATE:
		done = bpf_loop(LPM_LOOPS, op_update, &status, 0);
		break;
	case LPM_DELETE:
		done = bpf_loop(LPM_LOOPS, op_delete, &status, 0);
		break;
	default:
		return -22; /* -EINVAL */
	}
	__sync_fetch_and_add(&op_ns, bpf_ktime_get_ns() - start);
	if (done > 0) {
		__sync_fetch_and_add(&op_count, done);
		count_hits(done);
	}
	return status;
}

/* Just what the free program reads of a map, relocated against the
 * kernel's BTF (CO-RE).
 */
struct work_struct {
	int unused;
} __attribute__((preserve_access_index));

struct bpf_map {
	enum bpf_map_type map_type;
	char name[OBJ_NAME_LEN];
	struct work_struct work;
} __attribute__((preserve_access_index));

static __u64 free_started;

/* bpf_map_free_deferred(struct work_struct *work): work is the map's. */
SEC("?fentry/bpf_map_free_deferred")
int count_lpm_free_entry(__u64 *ctx)
{
	char *work = (char *)ctx[0];
	struct bpf_map *map;
	char name[OBJ_NAME_LEN] = {};
	__u32 type = 0;

	map = (struct bpf_map *)(work - bpf_core_field_offset(struct bpf_map, work));
	bpf_probe_read_kernel(&type, sizeof(type), &map->map_type);
	if (type != BPF_MAP_TYPE_LPM_TRIE)
		return 0;
	bpf_probe_read_kernel_str(name, sizeof(name), map->name);
	if (bpf_strncmp(name, sizeof(name), "trie_free_map"))
		return 0;
	free_started = bpf_ktime_get_ns();
	return 0;
}

SEC("?fexit/bpf_map_free_deferred")
int count_lpm_free_exit(__u64 *ctx)
{
	__u64 started = free_started;

	if (!started)
		return 0;
	free_started = 0;
	__sync_fetch_and_add(&op_ns, bpf_ktime_get_ns() - started);
	__sync_fetch_and_add(&op_count, 1);
	count_hit();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
