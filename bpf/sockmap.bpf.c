// SPDX-License-Identifier: GPL-2.0
/* The sockmap family: the kernel runner's `sockmap` benchmark, bytes moved
 * between TCP sockets on loopback by sk_skb (receive side) and sk_msg (send
 * side) programs attached to a sockmap. Every program adds the bytes it sees
 * to `bytes_seen`; the redirecting ones send everything to the socket at key
 * 1 of their map, on its egress or (BPF_F_INGRESS) its ingress queue, and
 * count what the kernel refused to redirect. Set before load by user space:
 * the redirect direction and the stream parser's message size.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Which queue of the target socket a redirect goes to: 0 (egress) or
 * BPF_F_INGRESS.
 */
const volatile __u64 redirect_flags = 0;
/* --rx-strp: the length the stream parser gives every message. */
const volatile __u32 message_size = 0;

/* Shared by the producer's and the kernel's CPUs: one atomic add each. */
__u64 bytes_seen = 0;
__u64 redirects_refused = 0;

#define TARGET_KEY 1

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} rx_sockets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} tx_sockets SEC(".maps");

SEC("sk_skb/stream_parser")
int count_skb_parse(struct __sk_buff *skb)
{
	return message_size;
}

SEC("sk_skb/stream_verdict")
int count_skb_redir(struct __sk_buff *skb)
{
	int verdict = bpf_sk_redirect_map(skb, &rx_sockets, TARGET_KEY, redirect_flags);

	if (verdict != SK_PASS)
		__sync_fetch_and_add(&redirects_refused, 1);
	__sync_fetch_and_add(&bytes_seen, skb->len);
	return verdict;
}

SEC("sk_skb/stream_verdict")
int count_skb_pass(struct __sk_buff *skb)
{
	__sync_fetch_and_add(&bytes_seen, skb->len);
	return SK_PASS;
}

SEC("sk_msg")
int count_msg_redir(struct sk_msg_md *msg)
{
	int verdict;

	__sync_fetch_and_add(&bytes_seen, msg->size);
	verdict = bpf_msg_redirect_map(msg, &tx_sockets, TARGET_KEY, redirect_flags);
	if (verdict != SK_PASS)
		__sync_fetch_and_add(&redirects_refused, 1);
	return verdict;
}

SEC("sk_msg")
int count_msg_pass(struct sk_msg_md *msg)
{
	__sync_fetch_and_add(&bytes_seen, msg->size);
	return SK_PASS;
}

char _license[] SEC("license") = "GPL";
