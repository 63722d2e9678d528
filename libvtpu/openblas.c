// SPDX-License-Identifier: MIT
/*
 * OpenBLAS's GEMM for the cpu backend (VTPU_CPU_GEMM_OPENBLAS): the CPU
 * baseline the engine is measured against. libvtpu does not link
 * OpenBLAS: the first executor that asks for its GEMM loads it with
 * dlopen(), so a program that never asks needs neither -lopenblas nor the
 * library. VTPU_OPENBLAS in the environment names another library to load
 * (a path or a soname) instead of libopenblas.so.0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_priv.h"

#define OPENBLAS_SONAME "libopenblas.so.0"

/* CBLAS's enums, as the standard numbers them (every cblas.h agrees) */
enum {
	CBLAS_ROW_MAJOR = 101,
	CBLAS_NO_TRANS = 111,
	CBLAS_TRANS = 112,
};

typedef void cblas_sgemm_fn(int order, int trans_a, int trans_b, int m,
			    int n, int k, float alpha, const float *a,
			    int lda, const float *b, int ldb, float beta,
			    float *c, int ldc);
typedef void set_num_threads_fn(int num_threads);

/* Loaded once per process; what failed stays in @why. */
static struct {
	pthread_once_t once;
	cblas_sgemm_fn *sgemm;
	set_num_threads_fn *set_num_threads;
	char why[512];
} blas = { .once = PTHREAD_ONCE_INIT };

static void openblas_load(void)
{
	const char *lib = getenv("VTPU_OPENBLAS");
	void *h;

	if (!lib || !*lib)
		lib = OPENBLAS_SONAME;
	/* the handle stays open for the life of the process */
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(blas.why, sizeof(blas.why),
			 "OpenBLAS's GEMM needs %s, which cannot be loaded "
			 "(Debian: apt install libopenblas0): %s", lib,
			 dlerror());
		return;
	}
	blas.sgemm = (cblas_sgemm_fn *)dlsym(h, "cblas_sgemm");
	blas.set_num_threads =
		(set_num_threads_fn *)dlsym(h, "openblas_set_num_threads");
	if (!blas.sgemm || !blas.set_num_threads) {
		snprintf(blas.why, sizeof(blas.why),
			 "%s is not OpenBLAS: it lacks cblas_sgemm or "
			 "openblas_set_num_threads", lib);
		blas.sgemm = NULL;
		blas.set_num_threads = NULL;
		dlclose(h);
	}
}

const char *vtpu_cpu_openblas(void)
{
	pthread_once(&blas.once, openblas_load);
	return blas.sgemm ? NULL : blas.why;
}

void cpu_openblas_threads(int threads)
{
	if (!vtpu_cpu_openblas())
		blas.set_num_threads(threads);
}

void cpu_openblas_gemm(const struct vtpu_engine_gemm *g)
{
	int ta = (g->flags & VTPU_GEMM_TRANS_A) ? CBLAS_TRANS : CBLAS_NO_TRANS;
	int tb = (g->flags & VTPU_GEMM_TRANS_B) ? CBLAS_TRANS : CBLAS_NO_TRANS;
	u32 i, j;

	blas.sgemm(CBLAS_ROW_MAJOR, ta, tb, (int)g->m, (int)g->n, (int)g->k,
		   g->alpha, g->a, (int)g->lda, g->b, (int)g->ldb, g->beta,
		   g->c, (int)g->ldc);
	if (!(g->flags & (VTPU_GEMM_BIAS | VTPU_GEMM_RELU)))
		return;
	for (i = 0; i < g->m; i++) {
		float *c = g->c + (size_t)i * g->ldc;

		for (j = 0; j < g->n; j++) {
			float x = c[j];

			if (g->bias)
				x += g->bias[j];
			if ((g->flags & VTPU_GEMM_RELU) && x < 0.0f)
				x = 0.0f;
			c[j] = x;
		}
	}
}
