/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test_ops.h: what the host tests of the training ops (test_ops_*.c)
 * share: the executors (every SIMD level this CPU has, with 1 and 2
 * threads), running a stream on one, random data, cpu buffers and the
 * checks (bitwise across executors; against a double reference).
 *
 * Every op runs on every executor; the outputs must be bitwise identical
 * across all of them (the ops' tiling depends on the shape only) and match
 * the part's plain C reference. No device needed.
 *
 * One binary per part: kselftest_harness.h (6.1) keeps its list of tests
 * in a static variable, so tests in another translation unit would not
 * reach TEST_HARNESS_MAIN's.
 */
#ifndef VTPU_TEST_OPS_H
#define VTPU_TEST_OPS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "vtpu.h"

/* ---- executors: every SIMD level x 1..N threads ------------------------- */

#define MAX_EXEC_THREADS 4
#define MAX_EXEC (3 * MAX_EXEC_THREADS)

struct execs {
	struct vtpu_cpu *cpu[MAX_EXEC];
	int first[MAX_EXEC];	/* its level's first executor (1 thread) */
	int n;
};

/* Every SIMD level this machine has, with 1..@threads threads each. */
static inline void execs_init_threads(struct execs *ex, int threads)
{
	int simd, t;

	memset(ex, 0, sizeof(*ex));
	for (simd = VTPU_SIMD_SCALAR; simd <= VTPU_SIMD_AVX512; simd++) {
		for (t = 1; t <= threads && t <= MAX_EXEC_THREADS; t++) {
			struct vtpu_cpu *cpu = vtpu_cpu_create(t, simd,
							       VTPU_CPU_GEMM_ENGINE);

			if (!cpu)
				continue;
			ex->first[ex->n] = t == 1;
			ex->cpu[ex->n++] = cpu;
		}
	}
}

/* Every SIMD level x {1, 2} threads. */
static inline void execs_init(struct execs *ex)
{
	execs_init_threads(ex, 2);
}

static inline void execs_fini(struct execs *ex)
{
	int i;

	for (i = 0; i < ex->n; i++)
		vtpu_cpu_destroy(ex->cpu[i]);
}

static inline int run(struct vtpu_cpu *cpu, struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job;
	int ret;

	memset(&job, 0, sizeof(job));	/* no repeat, no strides */
	ret = vtpu_cpu_run(cpu, cb, &job);

	if (ret)
		fprintf(stderr, "vtpu_cpu_run: %d (cmd %u operand %u reason %u)\n",
			ret, job.error.cmd, job.error.operand, job.error.reason);
	return ret;
}

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng_state;

static inline void rng_seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 88172645463325252ull;
}

static inline uint32_t urand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 32);
}

static inline float frand(void)
{
	return (float)((urand() >> 8) * (2.0 / 16777216.0) - 1.0);
}

static inline void fill_rand(float *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = frand();
}

static inline struct vtpu_bo bo_new(size_t bytes)
{
	struct vtpu_bo bo;

	if (vtpu_cpu_bo_create(bytes ? bytes : 4, &bo))
		abort();
	return bo;
}

/* Destroy @n buffers made by bo_new(); free @n heap blocks. */
static inline void bos_destroy(struct vtpu_bo *const *bo, size_t n)
{
	while (n--)
		vtpu_cpu_bo_destroy(*bo++);
}

static inline void free_all(void *const *p, size_t n)
{
	while (n--)
		free(*p++);
}

/* The same for a list: BOS_DESTROY(&xb, &yb), FREE_ALL(x, y) */
#define BOS_DESTROY(...)						\
	bos_destroy((struct vtpu_bo *const[]){ __VA_ARGS__ },		\
		    sizeof((struct vtpu_bo *const[]){ __VA_ARGS__ }) /	\
		    sizeof(struct vtpu_bo *))
#define FREE_ALL(...)							\
	free_all((void *const[]){ __VA_ARGS__ },			\
		 sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *))

/*
 * The bitwise check: the first executor's output is kept in @keep, every
 * later one must equal it. Returns the number of executors that differed.
 */
static inline int same_bits(const void *out, void *keep, size_t bytes, int exec)
{
	if (exec == 0) {
		memcpy(keep, out, bytes);
		return 0;
	}
	return memcmp(out, keep, bytes) != 0;
}

/* max |got - ref| over n, with NaN needing NaN; *bad counts > tol */
static inline double maxdiff(const float *got, const double *ref, size_t n,
		      double tol, long *bad)
{
	double md = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d;

		if (isnan(ref[i]) || isnan(got[i])) {
			if (!(isnan(ref[i]) && isnan(got[i])))
				(*bad)++;
			continue;
		}
		if (isinf(ref[i]) || isinf(got[i])) {
			if (got[i] != ref[i])
				(*bad)++;
			continue;
		}
		d = fabs(got[i] - ref[i]);
		if (d > md)
			md = d;
		if (d > tol * (1.0 + fabs(ref[i]))) {
			if (*bad < 5)
				fprintf(stderr, "  [%zu] got %.9g want %.9g\n",
					i, got[i], ref[i]);
			(*bad)++;
		}
	}
	return md;
}


#endif /* VTPU_TEST_OPS_H */
