// SPDX-License-Identifier: MIT
/*
 * vtpu-bench: how fast the engine's GEMM is against OpenBLAS, both run
 * through libvtpu's cpu backend on the same number of threads.
 *
 *   vtpu-bench gemm [--threads N] [--json] [--reps R] [--max S]
 *                   [--sizes LIST]
 *
 * LIST is comma-separated: "512" (square) or "MxNxK" (optionally followed
 * by ":TA", ":TB" or ":TATB"). Default: squares 64..--max (4096) and the
 * GEMMs of the example models at batch 128. Each shape is timed in @reps
 * runs of ~80 ms, engine and OpenBLAS alternately; the medians are shown.
 *
 * OpenBLAS reads OPENBLAS_CORETYPE in a library constructor, and a forced
 * core type (the shell here sets Haswell) halves its speed on AVX-512
 * hardware, so the bench re-executes itself without it before anything
 * else runs.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vtpu.h"

char *openblas_get_corename(void);
char *openblas_get_config(void);

#define REEXEC_MARK "VTPU_BENCH_CLEAN_ENV"

struct shape {
	const char *name;
	uint32_t m, n, k, flags;
};

/* The example models' GEMMs at batch 128 (im2col for the convs). */
static const struct shape model_shapes[] = {
	{ "mlp fc1 fwd", 128, 512, 784, 0 },
	{ "mlp fc2 fwd", 128, 512, 512, 0 },
	{ "mlp fc3 fwd", 128, 10, 512, 0 },
	{ "mlp fc1 dX", 128, 784, 512, VTPU_GEMM_TRANS_B },
	{ "mlp fc2 dX", 128, 512, 512, VTPU_GEMM_TRANS_B },
	{ "mlp fc3 dX", 128, 512, 10, VTPU_GEMM_TRANS_B },
	{ "mlp fc1 dW", 784, 512, 128, VTPU_GEMM_TRANS_A },
	{ "mlp fc2 dW", 512, 512, 128, VTPU_GEMM_TRANS_A },
	{ "mlp fc3 dW", 512, 10, 128, VTPU_GEMM_TRANS_A },
	{ "mnist conv 1->64", 128 * 26 * 26, 64, 9, 0 },
	{ "cifar conv 3->32", 128 * 32 * 32, 32, 27, 0 },
	{ "cifar conv 32->32", 128 * 32 * 32, 32, 288, 0 },
	{ "cifar conv 32->64", 128 * 32 * 32, 64, 288, 0 },
};

struct opts {
	int threads;
	int json;
	int reps;
	uint32_t max;
	const char *sizes;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const char *simd_name(int simd)
{
	switch (simd) {
	case VTPU_SIMD_SCALAR: return "scalar";
	case VTPU_SIMD_AVX2: return "avx2";
	case VTPU_SIMD_AVX512: return "avx512";
	default: return "?";
	}
}

struct bench {
	struct vtpu_cpu *engine, *blas;
	struct vtpu_bo a, b, c;
	struct vtpu_cmdbuf cb;
	uint8_t data[sizeof(struct vtpu_cmd_gemm)];
	const struct vtpu_bo *bos[3];
};

/* Seconds per run of the stream on @cpu, over @iters runs. */
static double time_runs(struct vtpu_cpu *cpu, struct bench *b, int iters)
{
	struct vtpu_job job;
	double t0 = now();
	int i;

	for (i = 0; i < iters; i++)
		if (vtpu_cpu_run(cpu, &b->cb, &job)) {
			fprintf(stderr, "vtpu-bench: run failed (reason %u)\n",
				job.error.reason);
			exit(1);
		}
	return (now() - t0) / iters;
}

static int bench_shape(struct bench *b, const struct opts *o,
		       const struct shape *s)
{
	int ta = !!(s->flags & VTPU_GEMM_TRANS_A);
	int tb = !!(s->flags & VTPU_GEMM_TRANS_B);
	uint64_t asz = (uint64_t)s->m * s->k * 4, bsz = (uint64_t)s->k * s->n * 4;
	uint64_t csz = (uint64_t)s->m * s->n * 4;
	struct vtpu_cmd_gemm g = { .hdr = { VTPU_OP_GEMM, sizeof(g) } };
	double flops = 2.0 * s->m * s->n * s->k, te, tb_, t;
	double *ge, *gb, med_e, med_b;
	int iters, r;
	uint64_t i;

	if (vtpu_cpu_bo_create(asz, &b->a) || vtpu_cpu_bo_create(bsz, &b->b) ||
	    vtpu_cpu_bo_create(csz, &b->c)) {
		fprintf(stderr, "vtpu-bench: out of memory for %ux%ux%u\n",
			s->m, s->n, s->k);
		return -1;
	}
	/* touch everything now: page faults are slow in a VM */
	for (i = 0; i < asz / 4; i++)
		((float *)b->a.map)[i] = (float)((i * 7) % 13) * 0.01f - 0.06f;
	for (i = 0; i < bsz / 4; i++)
		((float *)b->b.map)[i] = (float)((i * 5) % 11) * 0.01f - 0.05f;
	memset(b->c.map, 0, csz);

	g.m = s->m;
	g.n = s->n;
	g.k = s->k;
	g.flags = s->flags;
	g.lda = ta ? s->m : s->k;
	g.ldb = tb ? s->k : s->n;
	g.ldc = s->n;
	g.dtype = VTPU_DTYPE_F32;
	g.alpha = f2u(1.0f);
	g.beta = f2u(0.0f);
	g.a.buf = 0;
	g.b.buf = 1;
	g.c.buf = 2;
	memset(&b->cb, 0, sizeof(b->cb));
	memcpy(b->data, &g, sizeof(g));
	b->cb.data = b->data;
	b->cb.size = b->cb.cap = sizeof(g);
	b->bos[0] = &b->a;
	b->bos[1] = &b->b;
	b->bos[2] = &b->c;
	b->cb.bos = b->bos;
	b->cb.nhandles = 3;

	/* warm up both, then size the runs to ~80 ms */
	te = time_runs(b->engine, b, 1);
	tb_ = time_runs(b->blas, b, 1);
	t = te > tb_ ? te : tb_;
	iters = t > 0.08 ? 1 : (int)(0.08 / t);
	if (iters > 1000000)
		iters = 1000000;

	ge = calloc((size_t)o->reps, sizeof(*ge));
	gb = calloc((size_t)o->reps, sizeof(*gb));
	for (r = 0; r < o->reps; r++) {
		ge[r] = flops / time_runs(b->engine, b, iters) * 1e-9;
		gb[r] = flops / time_runs(b->blas, b, iters) * 1e-9;
	}
	qsort(ge, (size_t)o->reps, sizeof(*ge), cmp_double);
	qsort(gb, (size_t)o->reps, sizeof(*gb), cmp_double);
	med_e = ge[o->reps / 2];
	med_b = gb[o->reps / 2];

	if (o->json)
		printf("{\"shape\":\"%s\",\"m\":%u,\"n\":%u,\"k\":%u,"
		       "\"trans_a\":%d,\"trans_b\":%d,\"threads\":%d,"
		       "\"dtype\":\"f32\",\"simd\":\"%s\",\"iters\":%d,"
		       "\"reps\":%d,\"engine_gflops\":%.2f,"
		       "\"openblas_gflops\":%.2f,\"ratio\":%.3f}\n",
		       s->name, s->m, s->n, s->k, ta, tb, o->threads,
		       simd_name(vtpu_cpu_simd(b->engine)), iters, o->reps,
		       med_e, med_b, med_e / med_b);
	else
		printf("%-20s %7u %6u %6u  %s%s  %9.1f %9.1f  %6.3f\n",
		       s->name, s->m, s->n, s->k, ta ? "T" : "N",
		       tb ? "T" : "N", med_e, med_b, med_e / med_b);
	fflush(stdout);

	free(ge);
	free(gb);
	vtpu_cpu_bo_destroy(&b->a);
	vtpu_cpu_bo_destroy(&b->b);
	vtpu_cpu_bo_destroy(&b->c);
	return 0;
}

static int parse_shape(const char *tok, struct shape *s, char *name,
		       size_t namelen)
{
	unsigned int m, n, k;
	const char *colon = strchr(tok, ':');

	memset(s, 0, sizeof(*s));
	if (sscanf(tok, "%ux%ux%u", &m, &n, &k) == 3) {
		s->m = m, s->n = n, s->k = k;
	} else if (sscanf(tok, "%u", &m) == 1) {
		s->m = s->n = s->k = m;
	} else {
		return -1;
	}
	if (!s->m || !s->n || !s->k)
		return -1;
	if (colon) {
		if (strstr(colon, "TA"))
			s->flags |= VTPU_GEMM_TRANS_A;
		if (strstr(colon, "TB"))
			s->flags |= VTPU_GEMM_TRANS_B;
	}
	snprintf(name, namelen, "%s", tok);
	s->name = name;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: vtpu-bench gemm [--threads N] [--json] [--reps R] "
		"[--max S] [--sizes S,MxNxK[:TA|:TB],...]\n");
	exit(2);
}

static int cmd_gemm(const struct opts *o)
{
	struct bench b;
	char names[64][32];
	uint32_t sz;
	size_t i;

	memset(&b, 0, sizeof(b));
	b.engine = vtpu_cpu_create(o->threads, -1, VTPU_CPU_GEMM_ENGINE);
	b.blas = vtpu_cpu_create(o->threads, -1, VTPU_CPU_GEMM_OPENBLAS);
	if (!b.engine || !b.blas) {
		perror("vtpu-bench: vtpu_cpu_create");
		return 1;
	}
	if (!o->json) {
		printf("# vtpu-bench gemm: %d thread(s), engine simd %s, "
		       "OpenBLAS core %s (%s), f32, median of %d\n",
		       o->threads, simd_name(vtpu_cpu_simd(b.engine)),
		       openblas_get_corename(), openblas_get_config(),
		       o->reps);
		printf("%-20s %7s %6s %6s  %s  %9s %9s  %6s\n", "shape", "m",
		       "n", "k", "op", "engine", "openblas", "ratio");
		printf("%-20s %7s %6s %6s  %s  %9s %9s\n", "", "", "", "",
		       "  ", "GFLOP/s", "GFLOP/s");
	} else {
		printf("{\"header\":true,\"threads\":%d,\"simd\":\"%s\","
		       "\"openblas_core\":\"%s\"}\n",
		       o->threads, simd_name(vtpu_cpu_simd(b.engine)),
		       openblas_get_corename());
	}

	if (o->sizes) {
		char *list = strdup(o->sizes), *save = NULL, *tok;
		int ns = 0;

		for (tok = strtok_r(list, ",", &save); tok && ns < 64;
		     tok = strtok_r(NULL, ",", &save), ns++) {
			struct shape s;

			if (parse_shape(tok, &s, names[ns], sizeof(names[ns]))) {
				fprintf(stderr, "vtpu-bench: bad size '%s'\n",
					tok);
				return 2;
			}
			bench_shape(&b, o, &s);
		}
		free(list);
	} else {
		for (sz = 64; sz <= o->max; sz *= 2) {
			struct shape s = { "square", sz, sz, sz, 0 };

			bench_shape(&b, o, &s);
		}
		for (i = 0; i < sizeof(model_shapes) / sizeof(model_shapes[0]);
		     i++)
			bench_shape(&b, o, &model_shapes[i]);
	}
	vtpu_cpu_destroy(b.engine);
	vtpu_cpu_destroy(b.blas);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .threads = 0, .reps = 5, .max = 4096 };
	int i;

	/* before OpenBLAS's constructor sees them: run again without them */
	if (!getenv(REEXEC_MARK) &&
	    (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE"))) {
		unsetenv("OPENBLAS_CORETYPE");
		unsetenv("OPENBLAS_L2_SIZE");
		setenv(REEXEC_MARK, "1", 1);
		execv("/proc/self/exe", argv);
		perror("vtpu-bench: re-exec (OpenBLAS keeps a forced core type)");
	}

	if (argc < 2 || strcmp(argv[1], "gemm"))
		usage();
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			o.json = 1;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			o.threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			o.reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			o.max = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			o.sizes = argv[++i];
		else
			usage();
	}
	if (o.reps < 1)
		o.reps = 1;
	if (o.threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o.threads = n > 0 ? (int)n : 1;
	}
	return cmd_gemm(&o);
}
