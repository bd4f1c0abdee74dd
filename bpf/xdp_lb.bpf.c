// SPDX-License-Identifier: GPL-2.0
/* xdp-lb: the kernel runner's XDP load balancer (bench_xdp_lb), a Katran-like
 * program run by BPF_PROG_TEST_RUN on one packet a scenario builds. Per
 * packet: parse Ethernet, IPv4 or IPv6 and the ports; look the VIP up; find
 * the backend in this CPU's connection table (an LRU hash in an array of
 * maps) or by consistent hashing (jhash into the VIP's ring), inserting the
 * flow; count; and encapsulate (IPIP, IPv4-in-IPv6 or IP6IP6) for XDP_TX.
 * Each run times batch_iters packets (timing.h), undoing the encapsulation
 * between them, then processes one more whose verdict it returns.
 */
#include <stddef.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "counters.h"
#include "timing.h"

#define F_IPV6 1u
#define F_LRU_BYPASS 2u
#define RING_SLOTS 65537u /* a VIP's consistent-hash ring */
#define VIPS 16
#define BACKENDS 512
#define FLOWS_PER_CPU 100000
#define NS_PER_SEC 1000000000ull
#define NEW_FLOWS_PER_SEC 100000000 /* the flood guard, never reached here */
#define UDP_FLOW_TIMEOUT_NS 30000000000ull
#define FRAGMENT_BITS 0x3fff
#define GOLDEN 2654435761u
#define FRAGMENT_HEADER 44

/* Counters: one per VIP, then these. */
enum {
	C_VIP_PACKETS = VIPS, /* packets for a VIP; second: table misses */
	C_TX,
	C_PASS,
	C_DROP,
	C_NEW_FLOWS,	      /* flows this second; second: when it began */
	C_TCP_MISSES,
	COUNTERS,
};

struct flow {
	__be32 src[4];
	__be32 dst[4];
	__u16 ports[2];
	__u8 proto;
	__u8 pad[3];
};

struct vip_key {
	__be32 addr[4];
	__u16 port;
	__u8 proto;
	__u8 pad;
};

struct vip_meta {
	__u32 flags;
	__u32 vip_num;
};

struct flow_entry {
	__u32 backend;
	__u64 atime;
};

struct backend {
	__be32 addr;
	__be32 addr6[4];
	__u8 flags;
};

struct pair {
	__u64 first;
	__u64 second;
};

struct router {
	__u8 mac[6];
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct vip_key);
	__type(value, struct vip_meta);
} vips SEC(".maps");

struct flow_table {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct flow);
	__type(value, struct flow_entry);
	__uint(max_entries, FLOWS_PER_CPU);
} flow_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, TIMING_CPUS);
	__array(values, struct flow_table);
} flow_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIPS * RING_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BACKENDS);
	__type(key, __u32);
	__type(value, struct backend);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTERS);
	__type(key, __u32);
	__type(value, struct pair);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BACKENDS);
	__type(key, __u32);
	__type(value, struct pair);
} backend_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct router);
} router SEC(".maps");

/* The VIP whose table misses are counted per backend. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vip_key);
} watched_vip SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BACKENDS);
	__type(key, __u32);
	__type(value, __u32);
} watched_misses SEC(".maps");

/* Set by user space before the measured runs. */
volatile __u32 src_mask;   /* randomize the source address under it */
volatile __u32 cold_table; /* a new source each run: the table misses */
__u32 run_number;

static __always_inline __u32 rotl(__u32 word, unsigned int by)
{
	return (word << by) | (word >> ((-by) & 31));
}

/* Bob Jenkins' lookup3 mixing, as the kernel's jhash. */
#define MIX(a, b, c)                                       \
	do {                                               \
		a -= c; a ^= rotl(c, 4); c += b;           \
		b -= a; b ^= rotl(a, 6); a += c;           \
		c -= b; c ^= rotl(b, 8); b += a;           \
		a -= c; a ^= rotl(c, 16); c += b;          \
		b -= a; b ^= rotl(a, 19); a += c;          \
		c -= b; c ^= rotl(b, 4); b += a;           \
	} while (0)
#define FINAL(a, b, c)                                     \
	do {                                               \
		c ^= b; c -= rotl(b, 14);                  \
		a ^= c; a -= rotl(c, 11);                  \
		b ^= a; b -= rotl(a, 25);                  \
		c ^= b; c -= rotl(b, 16);                  \
		a ^= c; a -= rotl(c, 4);                   \
		b ^= a; b -= rotl(a, 14);                  \
		c ^= b; c -= rotl(b, 24);                  \
	} while (0)
#define JHASH_SEED 0xdeadbeef

static __always_inline __u32 hash_two(__u32 a, __u32 b, __u32 seed)
{
	__u32 c = 0;

	seed += JHASH_SEED + (2 << 2);
	a += seed;
	b += seed;
	c += seed;
	FINAL(a, b, c);
	return c;
}

static __always_inline __u32 hash_four(const __u32 *k, __u32 seed)
{
	__u32 a, b, c;

	a = b = c = JHASH_SEED + (4 << 2) + seed;
	a += k[0];
	b += k[1];
	c += k[2];
	MIX(a, b, c);
	a += k[3];
	FINAL(a, b, c);
	return c;
}

static __always_inline void add(void *map, __u32 key, __u64 first, __u64 second)
{
	struct pair *p = bpf_map_lookup_elem(map, &key);

	if (p) {
		p->first += first;
		p->second += second;
	}
}

/* The flood guard: new flows in this second, against a limit. */
static __always_inline bool flooded(void)
{
	__u32 key = C_NEW_FLOWS;
	struct pair *p = bpf_map_lookup_elem(&counts, &key);
	__u64 now;

	if (!p)
		return true;
	now = bpf_ktime_get_ns();
	if (now - p->second > NS_PER_SEC) {
		p->first = 1;
		p->second = now;
		return false;
	}
	return ++p->first > NEW_FLOWS_PER_SEC;
}

static __always_inline struct backend *from_table(void *table, struct flow *flow, __u32 *at)
{
	struct flow_entry *entry = bpf_map_lookup_elem(table, flow);

	if (!entry)
		return NULL;
	if (flow->proto == IPPROTO_UDP) {
		__u64 now = bpf_ktime_get_ns();

		if (now - entry->atime > UDP_FLOW_TIMEOUT_NS)
			return NULL;
		entry->atime = now;
	}
	*at = entry->backend;
	return bpf_map_lookup_elem(&backends, at);
}

static __always_inline struct backend *from_ring(struct flow *flow, struct vip_meta *vip,
						 bool v6, void *table, bool rst, __u32 *at)
{
	bool flood = flooded();
	__u32 hash, slot, *pos;
	struct backend *found;

	if (v6)
		hash = hash_two(hash_four(flow->src, VIPS), *(__u32 *)flow->ports, RING_SLOTS);
	else
		hash = hash_two(flow->src[0], *(__u32 *)flow->ports, RING_SLOTS);
	slot = RING_SLOTS * vip->vip_num + hash % RING_SLOTS;
	pos = bpf_map_lookup_elem(&rings, &slot);
	if (!pos)
		return NULL;
	*at = *pos;
	found = bpf_map_lookup_elem(&backends, at);
	if (!found)
		return NULL;
	if (!(vip->flags & F_LRU_BYPASS) && !flood && !rst) {
		struct flow_entry entry = { .backend = *at };

		if (flow->proto == IPPROTO_UDP)
			entry.atime = bpf_ktime_get_ns();
		bpf_map_update_elem(table, flow, &entry, BPF_ANY);
	}
	return found;
}

static __always_inline void count_watched_miss(struct vip_key *vip, __u32 backend)
{
	__u32 zero = 0, *misses;
	struct vip_key *watched = bpf_map_lookup_elem(&watched_vip, &zero);

	if (!watched || watched->addr[0] != vip->addr[0] || watched->addr[1] != vip->addr[1] ||
	    watched->addr[2] != vip->addr[2] || watched->addr[3] != vip->addr[3] ||
	    watched->port != vip->port || watched->proto != vip->proto)
		return;
	misses = bpf_map_lookup_elem(&watched_misses, &backend);
	if (misses)
		*misses += 1;
}

/* Prepends an outer header of `outer` bytes: the Ethernet header moves to
 * the front (its source the old destination, its destination the router),
 * the outer IP header follows it. NULL when the packet cannot grow.
 */
static __always_inline void *grow(struct xdp_md *xdp, int outer, __u16 proto, const __u8 *mac)
{
	struct ethhdr *eth, *old;
	void *data, *end;

	if (bpf_xdp_adjust_head(xdp, -outer))
		return NULL;
	data = (void *)(long)xdp->data;
	end = (void *)(long)xdp->data_end;
	eth = data;
	old = data + outer;
	if ((void *)(eth + 1) > end || (void *)(old + 1) > end || data + ETH_HLEN + outer > end)
		return NULL;
	__builtin_memcpy(eth->h_source, old->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	eth->h_proto = bpf_htons(proto);
	return data + ETH_HLEN;
}

static __always_inline int wrap_v4(struct xdp_md *xdp, __be32 src, __be32 dst, __u16 len,
				   const __u8 *mac)
{
	struct iphdr *ip = grow(xdp, sizeof(*ip), ETH_P_IP, mac);
	__u16 *word;
	__u32 sum = 0;

	if (!ip)
		return -1;
	__builtin_memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_IPIP;
	ip->tot_len = bpf_htons(len + sizeof(*ip));
	ip->saddr = src;
	ip->daddr = dst;
	word = (__u16 *)ip;
#pragma clang loop unroll(full)
	for (int i = 0; i < (int)sizeof(*ip) / 2; i++)
		sum += word[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = ~sum;
	return 0;
}

static __always_inline int wrap_v6(struct xdp_md *xdp, const __be32 *src, const __be32 *dst,
				   __u8 next, __u16 len, const __u8 *mac)
{
	struct ipv6hdr *ip6 = grow(xdp, sizeof(*ip6), ETH_P_IPV6, mac);

	if (!ip6)
		return -1;
	__builtin_memset(ip6, 0, sizeof(*ip6));
	ip6->version = 6;
	ip6->nexthdr = next;
	ip6->payload_len = bpf_htons(len);
	ip6->hop_limit = 64;
	__builtin_memcpy(&ip6->saddr, src, 16);
	__builtin_memcpy(&ip6->daddr, dst, 16);
	return 0;
}

static __always_inline int verdict(int action)
{
	__u32 key = action == XDP_TX ? C_TX : action == XDP_PASS ? C_PASS : C_DROP;
	struct pair *p = bpf_map_lookup_elem(&counts, &key);

	if (p)
		p->first += 1;
	return action;
}

static __noinline int balance(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data, *end = (void *)(long)xdp->data_end;
	struct ethhdr *eth = data;
	struct flow flow = {};
	struct vip_key vip = {};
	struct vip_meta *meta;
	struct backend *to = NULL;
	struct router *via;
	struct pair *vip_packets;
	struct udphdr *ports;
	__be32 tunnel_src[4];
	__u32 at = 0, key;
	__u16 len;
	__u8 proto;
	bool v6, syn = false, rst = false;
	void *table, *l4;

	if ((void *)(eth + 1) > end)
		return verdict(XDP_DROP);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr == FRAGMENT_HEADER)
			return verdict(XDP_DROP);
		v6 = true;
		len = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
		proto = ip6->nexthdr;
		__builtin_memcpy(flow.src, &ip6->saddr, 16);
		__builtin_memcpy(flow.dst, &ip6->daddr, 16);
		__builtin_memcpy(vip.addr, &ip6->daddr, 16);
		l4 = ip6 + 1;
	} else if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl != 5 || (ip->frag_off & bpf_htons(FRAGMENT_BITS)))
			return verdict(XDP_DROP);
		v6 = false;
		len = bpf_ntohs(ip->tot_len);
		proto = ip->protocol;
		flow.src[0] = ip->saddr;
		flow.dst[0] = ip->daddr;
		vip.addr[0] = ip->daddr;
		l4 = ip + 1;
	} else {
		return verdict(XDP_PASS);
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return verdict(XDP_PASS);
	ports = l4;
	if ((void *)(ports + 1) > end)
		return verdict(XDP_DROP);
	flow.ports[0] = ports->source;
	flow.ports[1] = ports->dest;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;

		if ((void *)(tcp + 1) > end)
			return verdict(XDP_DROP);
		syn = tcp->syn;
		rst = tcp->rst;
	}
	flow.proto = proto;
	vip.port = flow.ports[1];
	vip.proto = proto;

	meta = bpf_map_lookup_elem(&vips, &vip);
	if (!meta)
		return verdict(XDP_PASS);
	key = C_VIP_PACKETS;
	vip_packets = bpf_map_lookup_elem(&counts, &key);
	if (!vip_packets)
		return verdict(XDP_DROP);
	vip_packets->first += 1;
	key = bpf_get_smp_processor_id();
	table = bpf_map_lookup_elem(&flow_tables, &key);
	if (!table)
		return verdict(XDP_DROP);
	if (!(meta->flags & F_LRU_BYPASS) && !syn)
		to = from_table(table, &flow, &at);
	if (!to) {
		if (proto == IPPROTO_TCP)
			add(&counts, C_TCP_MISSES, 1, 0);
		to = from_ring(&flow, meta, v6, table, rst, &at);
		if (!to)
			return verdict(XDP_DROP);
		count_watched_miss(&vip, at);
		vip_packets->second += 1;
	}
	key = 0;
	via = bpf_map_lookup_elem(&router, &key);
	if (!via)
		return verdict(XDP_DROP);
	add(&counts, meta->vip_num, 1, len);
	add(&backend_counts, at, 1, len);

	if (v6 || (to->flags & F_IPV6)) {
		tunnel_src[0] = 1; /* 0100::/64, RFC 6666's discard prefix */
		tunnel_src[1] = 0;
		tunnel_src[2] = 0;
		tunnel_src[3] = flow.src[0] ^ flow.ports[0];
		if (wrap_v6(xdp, tunnel_src, to->addr6, v6 ? IPPROTO_IPV6 : IPPROTO_IPIP, len,
			    via->mac))
			return verdict(XDP_DROP);
	} else {
		/* 172.16/12 with the source port and address folded in. */
		__u32 src = ((__u32)bpf_htons(flow.ports[0]) << 16) ^ flow.src[0];

		if (wrap_v4(xdp, (src & 0xffff0000) | 4268, to->addr, len, via->mac))
			return verdict(XDP_DROP);
	}
	return verdict(XDP_TX);
}

/* Back to the packet as it came: the outer header dropped, the Ethernet
 * header restored.
 */
static __always_inline int unwrap(struct xdp_md *xdp, const struct ethhdr *original)
{
	struct ethhdr *eth = (void *)(long)xdp->data;
	int outer;

	if ((void *)(eth + 1) > (void *)(long)xdp->data_end)
		return -1;
	outer = eth->h_proto == bpf_htons(ETH_P_IPV6) ? sizeof(struct ipv6hdr) :
							 sizeof(struct iphdr);
	if (bpf_xdp_adjust_head(xdp, outer))
		return -1;
	eth = (void *)(long)xdp->data;
	if ((void *)(eth + 1) > (void *)(long)xdp->data_end)
		return -1;
	__builtin_memcpy(eth, original, sizeof(*eth));
	return 0;
}

static __always_inline void xor_source(struct xdp_md *xdp, int at, __u32 value, bool replace)
{
	__u32 *src = (void *)(long)xdp->data + at;

	if ((void *)(src + 1) <= (void *)(long)xdp->data_end)
		*src = replace ? value : *src ^ value;
}

SEC("xdp")
int count_xdp_lb(struct xdp_md *xdp)
{
	struct ethhdr *eth = (void *)(long)xdp->data;
	__u32 cpu = bpf_get_smp_processor_id() & (TIMING_CPUS - 1);
	__u32 random = 0, poison = 0, done;
	struct ethhdr original;
	int source, action = XDP_DROP;
	__u64 start;

	if ((void *)(eth + 1) > (void *)(long)xdp->data_end)
		return XDP_DROP;
	__builtin_memcpy(&original, eth, sizeof(original));
	source = ETH_HLEN + (original.h_proto == bpf_htons(ETH_P_IPV6) ?
				     offsetof(struct ipv6hdr, saddr) :
				     offsetof(struct iphdr, saddr));
	if (src_mask)
		random = bpf_get_prandom_u32() | 1;
	if (cold_table) {
		/* A source no run used: every packet of this run misses. */
		run_number++;
		poison = (run_number + bpf_get_smp_processor_id()) * GOLDEN;
		xor_source(xdp, source, poison, false);
	}

	start = bpf_ktime_get_ns();
	for (done = 0; done < batch_iters && loop_budget_left(); done++) {
		if (balance(xdp) == XDP_TX) {
			if (unwrap(xdp, &original))
				return XDP_DROP;
			if (random) {
				random ^= random << 13;
				random ^= random >> 17;
				random ^= random << 5;
				xor_source(xdp, source, random & src_mask, true);
			}
		}
		if (cold_table)
			xor_source(xdp, source, poison, false);
	}
	keep_sample(cpu, bpf_ktime_get_ns() - start);
	action = balance(xdp);
	count_hits(done + 1);
	return action;
}

char LICENSE[] SEC("license") = "GPL";
