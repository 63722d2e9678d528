/* SPDX-License-Identifier: MIT */
/*
 * Between the cpu backend's executor (backend_cpu.c), its profiler
 * (profile.c) and OpenBLAS's GEMM (openblas.c). VTPU_PROFILE=1 in the
 * environment times every command of every stream an executor runs and
 * prints, when it is destroyed, where the time went (per stream, its 20
 * costliest commands; with VTPU_PROFILE=all, every command) on stderr,
 * over the runs after each stream's first.
 */
#ifndef LIBVTPU_CPU_PRIV_H
#define LIBVTPU_CPU_PRIV_H

#include "vtpu.h"
#include "vtpu_engine.h"

/*
 * One command of one stream: @ns over the runs after the stream's first,
 * @first_ns in the first. The first run pays for what the steps after
 * it find done: the first touch of its buffers' memory (a 64 MB
 * activation took 150 ms to write the first time, 9 ms after), cold
 * caches, lazily built state. Averaged in, it made a command look
 * slower in a step than alone, which it was not.
 */
struct cpu_prof_cmd {
	u32 opcode;
	char what[48];		/* its shape */
	u64 calls, ns, first_ns;
};

/* one command stream, known by its contents' address */
struct cpu_prof_stream {
	const void *data;
	u32 size, ncmds;
	u64 runs, ns, first_ns;	/* as struct cpu_prof_cmd's */
	struct cpu_prof_cmd *cmds;
};

/* an executor's profile; listed 0: not profiling */
struct cpu_prof {
	u32 listed;		/* commands listed per stream */
	int nstreams;
	struct cpu_prof_stream *streams;
};

u64 cpu_now_ns(void);

/* Read VTPU_PROFILE: prof->listed is 0 when it says not to profile. */
void cpu_prof_init(struct cpu_prof *prof);

/* The stream's profile, found or added (NULL when out of memory). */
struct cpu_prof_stream *cpu_prof_stream(struct cpu_prof *prof,
					const struct vtpu_cmdbuf *cb);

/* Say what a command is, the first time it runs. */
void cpu_prof_describe(struct cpu_prof_cmd *pc,
		       const struct vtpu_engine_op *op);

/* Print the report on stderr and forget the streams. */
void cpu_prof_print(struct cpu_prof *prof);

/*
 * OpenBLAS's GEMM (openblas.c), for executors created with
 * VTPU_CPU_GEMM_OPENBLAS, which vtpu_cpu_openblas() loaded.
 */
void cpu_openblas_threads(int threads);
void cpu_openblas_gemm(const struct vtpu_engine_gemm *g);

#endif /* LIBVTPU_CPU_PRIV_H */
