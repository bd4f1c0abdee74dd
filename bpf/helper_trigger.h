/* Where a helper benchmark's body runs from.
 *
 * The kernel runner runs each body from a program on the getpgid system call
 * (fentry on the syscall for bpf-loop and bpf-for, the syscalls:
 * sys_enter_getpgid tracepoint for strncmp), its producers calling getpgid().
 * A kernel may refuse tracing programs (lockdown, the BPF LSM: EPERM); then
 * the same body runs from a raw_tp program that user space runs with
 * BPF_PROG_TEST_RUN, one run per trigger. HELPER_ENTRIES(body) defines the
 * three entry points of body_<body>(), all off by default ("?" sections):
 * set-up turns on the one it uses. The getpgid entries run the body for this
 * process's calls only (tgid, set before load), so that its hits are exact
 * while other processes call getpgid.
 */
#ifndef BENCH_HELPER_TRIGGER_H
#define BENCH_HELPER_TRIGGER_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The syscall's entry on x86-64, the architecture bench's targets are for. */
#define SYS_GETPGID "__x64_sys_getpgid"

const volatile __u32 tgid = 0;

static __always_inline int called_by_bench(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == tgid;
}

/* An entry on getpgid: the body, for this process's calls. */
#define GETPGID_ENTRY(section, program, body)			\
SEC(section)							\
int program(void *ctx)						\
{								\
	if (called_by_bench())					\
		body();						\
	return 0;						\
}

#define HELPER_ENTRIES(body)					\
GETPGID_ENTRY("?fentry/" SYS_GETPGID, count_##body##_fentry, body_##body) \
GETPGID_ENTRY("?tp/syscalls/sys_enter_getpgid", count_##body##_tp, body_##body) \
								\
SEC("?raw_tp")							\
int drive_##body(void *ctx)					\
{								\
	body_##body();						\
	return 0;						\
}

#endif
