// SPDX-License-Identifier: GPL-2.0
/* The crypto kfuncs' family (Linux 6.10+). A syscall program, run once at
 * set-up with BPF_PROG_TEST_RUN, makes a crypto context with
 * bpf_crypto_ctx_create and keeps it in a map; a tc program, run on a packet
 * by BPF_PROG_TEST_RUN, encrypts (or decrypts) the packet into a buffer and
 * counts every call. Every program is off by default: set-up turns on the
 * context maker and the one direction a benchmark measures.
 *
 * Built by a newer clang than the others (build.rs): needs clang 15+, whose
 * BTF carries the type tag that makes the map's pointer a kptr.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "counters.h"

/* The kernel's own layout (include/linux/bpf_crypto.h): only its name and
 * size matter to the verifier, which finds the type by name in its BTF.
 */
struct bpf_crypto_params {
	char type[14];
	__u8 reserved[2];
	char algo[128];
	__u8 key[256];
	__u32 key_len;
	__u32 authsize;
};

/* Opaque to BPF; declared as a struct so that the kptr below names it. */
struct bpf_crypto_ctx {
	int opaque;
};

extern struct bpf_crypto_ctx *bpf_crypto_ctx_create(const struct bpf_crypto_params *params,
						    __u32 params__sz, int *err) __ksym;
extern void bpf_crypto_ctx_release(struct bpf_crypto_ctx *ctx) __ksym;
extern int bpf_crypto_encrypt(struct bpf_crypto_ctx *ctx, const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst, const struct bpf_dynptr *siv) __ksym;
extern int bpf_crypto_decrypt(struct bpf_crypto_ctx *ctx, const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst, const struct bpf_dynptr *siv) __ksym;
extern int bpf_dynptr_from_skb(struct __sk_buff *skb, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;

struct held_ctx {
	struct bpf_crypto_ctx __kptr *ctx;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct held_ctx);
	__uint(max_entries, 1);
} crypto_ctx SEC(".maps");

/* The packet's length: set before load. */
const volatile __u32 len = 16;

/* Filled by user space (type, algorithm, key) before the set-up program
 * runs: a global, as it is too large for the BPF stack.
 */
struct bpf_crypto_params params;

/* Where the result goes, and the last status: 0, or the negative errno of
 * the context's creation (at set-up) or of the last encryption.
 */
char dst[256];
int status;

SEC("?syscall")
int drive_crypto_setup(void *args)
{
	struct bpf_crypto_ctx *cctx, *old;
	struct held_ctx *held;
	__u32 zero = 0;
	int err = 0;

	cctx = bpf_crypto_ctx_create(&params, sizeof(params), &err);
	if (!cctx) {
		status = err ? err : -22;
		return 0;
	}
	held = bpf_map_lookup_elem(&crypto_ctx, &zero);
	if (!held) {
		bpf_crypto_ctx_release(cctx);
		status = -2;
		return 0;
	}
	old = bpf_kptr_xchg(&held->ctx, cctx);
	if (old)
		bpf_crypto_ctx_release(old);
	status = 0;
	return 0;
}

/* The packet in, `len` bytes of dst out, no IV (as the kernel runner's). */
static __always_inline int crypt(struct __sk_buff *skb, int decrypt)
{
	struct bpf_dynptr src, out, iv;
	struct bpf_crypto_ctx *cctx;
	struct held_ctx *held;
	__u32 zero = 0;

	held = bpf_map_lookup_elem(&crypto_ctx, &zero);
	if (!held)
		return 0;
	cctx = held->ctx;
	if (!cctx) {
		status = -2;
		return 0;
	}
	bpf_dynptr_from_skb(skb, 0, &src);
	bpf_dynptr_from_mem(dst, len, 0, &out);
	bpf_dynptr_from_mem(dst, 0, 0, &iv);
	if (decrypt)
		status = bpf_crypto_decrypt(cctx, &src, &out, &iv);
	else
		status = bpf_crypto_encrypt(cctx, &src, &out, &iv);
	count_hit();
	return 0;
}

SEC("?tc")
int drive_encrypt(struct __sk_buff *skb)
{
	return crypt(skb, 0);
}

SEC("?tc")
int drive_decrypt(struct __sk_buff *skb)
{
	return crypt(skb, 1);
}

char LICENSE[] SEC("license") = "GPL";
