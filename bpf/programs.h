/* Programs written once for every family that has them. */
#ifndef BENCH_PROGRAMS_H
#define BENCH_PROGRAMS_H

#include <bpf/bpf_helpers.h>

/* A program that does nothing: what it costs is being attached, entered and
 * left.
 */
#define EMPTY_PROGRAM(sec, name)	\
	SEC(sec)			\
	int name(void *ctx)		\
	{				\
		return 0;		\
	}

#endif
