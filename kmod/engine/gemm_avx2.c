// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM for AVX2+FMA: a 6 x 16 microkernel (12 ymm accumulators, two ymm
 * of B per k, A broadcast from memory). Compiled with -mavx2 -mfma; the
 * vector helpers it shares with AVX-512 are gemm_tmpl.h's, at 8 lanes.
 */
#include "gemm.h"

/*
 * sparse does not know GCC's vector extensions (__builtin_shuffle, vector
 * initializers): it checks a stand-in, the compiler the real thing.
 */
#ifdef __CHECKER__
void vtpu_gemm_step_avx2(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

#define GEMM_MR VTPU_GEMM_AVX2_MR
#define GEMM_NR VTPU_GEMM_AVX2_NR
#define GEMM_VW 8
#define GEMM_STEP_FN vtpu_gemm_step_avx2

#include "gemm_tmpl.h"

#define V8F GEMM_VEC

/*
 * The accumulators are an array indexed only in fully unrolled loops, so
 * GCC keeps all 12 in registers (check: objdump shows no stack access
 * in the k loop).
 */
static void gemm_ukr(u32 kc, const float *a, const float *b, float *c,
		     u64 ldc, u32 mr, u32 nr, float alpha, float beta,
		     const float *bias, u32 relu)
{
	V8F acc[GEMM_MR][2];
	u32 p, r;

#pragma GCC unroll 6
	for (r = 0; r < GEMM_MR; r++)
		acc[r][0] = acc[r][1] = (V8F){ 0 };

	for (p = 0; p < kc; p++, a += GEMM_MR, b += GEMM_NR) {
		V8F b0 = *(const V8F *)b;
		V8F b1 = *(const V8F *)(b + 8);

#pragma GCC unroll 6
		for (r = 0; r < GEMM_MR; r++) {
			float av = a[r];

			acc[r][0] += av * b0;
			acc[r][1] += av * b1;
		}
	}
	if (ENGINE_LIKELY(mr == GEMM_MR && nr == GEMM_NR)) {
#pragma GCC unroll 6
		for (r = 0; r < GEMM_MR; r++)
			gemm_store_row(c + r * ldc, acc[r][0], acc[r][1], alpha,
				  beta, bias, relu);
	} else {
		float t[GEMM_MR * GEMM_NR] GEMM_NOINIT;

#pragma GCC unroll 6
		for (r = 0; r < GEMM_MR; r++) {
			gemm_storeu(t + r * GEMM_NR, acc[r][0]);
			gemm_storeu(t + r * GEMM_NR + 8, acc[r][1]);
		}
		gemm_store_edge(t, c, ldc, mr, nr, alpha, beta, bias, relu);
	}
}

#endif /* __CHECKER__ */

const struct vtpu_gemm_level vtpu_gemm_level_avx2 = {
	.mr = VTPU_GEMM_AVX2_MR,
	.nr = VTPU_GEMM_AVX2_NR,
	.mt_max = VTPU_GEMM_MT_MAX,
	.step = vtpu_gemm_step_avx2,
};
