// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM for AVX-512F: a 14 x 32 microkernel (28 zmm accumulators, two zmm
 * of B per k, A broadcast from memory). Compiled with -mavx512f; GCC vector
 * extensions instead of <immintrin.h>, which the kernel build cannot use.
 */
#include "gemm.h"

/*
 * sparse does not know GCC's vector extensions (__builtin_shuffle, vector
 * initializers): it checks a stand-in, the compiler the real thing.
 */
#ifdef __CHECKER__
void vtpu_gemm_step_avx512(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

#define GEMM_MR VTPU_GEMM_AVX512_MR
#define GEMM_NR VTPU_GEMM_AVX512_NR
#define GEMM_VW 16
#define GEMM_STEP_FN vtpu_gemm_step_avx512

#define V16F float __attribute__((vector_size(64)))
#define V16I int __attribute__((vector_size(64)))

#define GEMM_VEC V16F

static inline V16F gemm_loadu(const float *p)
{
	V16F v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline void gemm_storeu(float *p, V16F v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

/*
 * Transpose 16 x 16 in place: one bit of row and column index swapped
 * per stage, each a pair of two-source shuffles per row pair.
 */
static inline void gemm_tr(V16F *v)
{
	const V16I lo1 = { 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30 };
	const V16I hi1 = { 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31 };
	const V16I lo2 = { 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29 };
	const V16I hi2 = { 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31 };
	const V16I lo4 = { 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27 };
	const V16I hi4 = { 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31 };
	const V16I lo8 = { 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 };
	const V16I hi8 = { 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31 };
	u32 r;

#pragma GCC unroll 16
	for (r = 0; r < 16; r++) {
		if (!(r & 1)) {
			V16F x = v[r], y = v[r + 1];

			v[r] = __builtin_shuffle(x, y, lo1);
			v[r + 1] = __builtin_shuffle(x, y, hi1);
		}
	}
#pragma GCC unroll 16
	for (r = 0; r < 16; r++) {
		if (!(r & 2)) {
			V16F x = v[r], y = v[r + 2];

			v[r] = __builtin_shuffle(x, y, lo2);
			v[r + 2] = __builtin_shuffle(x, y, hi2);
		}
	}
#pragma GCC unroll 16
	for (r = 0; r < 16; r++) {
		if (!(r & 4)) {
			V16F x = v[r], y = v[r + 4];

			v[r] = __builtin_shuffle(x, y, lo4);
			v[r + 4] = __builtin_shuffle(x, y, hi4);
		}
	}
#pragma GCC unroll 16
	for (r = 0; r < 16; r++) {
		if (!(r & 8)) {
			V16F x = v[r], y = v[r + 8];

			v[r] = __builtin_shuffle(x, y, lo8);
			v[r + 8] = __builtin_shuffle(x, y, hi8);
		}
	}
}

#include "gemm_tmpl.h"

/* max(x, 0) that keeps NaN (and -0) */
static inline V16F gemm_relu(V16F x)
{
	V16F zero = { 0 };

	return (V16F)((V16I)x & ~(V16I)(x < zero));
}

static inline void store_row(float *c, V16F x0, V16F x1, float alpha,
			     float beta, const float *bias, u32 relu)
{
	x0 *= alpha;
	x1 *= alpha;
	if (beta != 0.0f) {
		x0 += beta * gemm_loadu(c);
		x1 += beta * gemm_loadu(c + 16);
	}
	if (bias) {
		x0 += gemm_loadu(bias);
		x1 += gemm_loadu(bias + 16);
	}
	if (relu) {
		x0 = gemm_relu(x0);
		x1 = gemm_relu(x1);
	}
	gemm_storeu(c, x0);
	gemm_storeu(c + 16, x1);
}

/*
 * The accumulators are an array indexed only in fully unrolled loops, so
 * GCC keeps all 28 in registers (check: objdump shows no stack access
 * in the k loop).
 */
static void gemm_ukr(u32 kc, const float *a, const float *b, float *c,
		     u64 ldc, u32 mr, u32 nr, float alpha, float beta,
		     const float *bias, u32 relu)
{
	V16F acc[GEMM_MR][2];
	u32 p, r;

#pragma GCC unroll 14
	for (r = 0; r < GEMM_MR; r++)
		acc[r][0] = acc[r][1] = (V16F){ 0 };

	for (p = 0; p < kc; p++, a += GEMM_MR, b += GEMM_NR) {
		V16F b0 = *(const V16F *)b;
		V16F b1 = *(const V16F *)(b + 16);

#pragma GCC unroll 14
		for (r = 0; r < GEMM_MR; r++) {
			float av = a[r];

			acc[r][0] += av * b0;
			acc[r][1] += av * b1;
		}
	}
	if (ENGINE_LIKELY(mr == GEMM_MR && nr == GEMM_NR)) {
#pragma GCC unroll 14
		for (r = 0; r < GEMM_MR; r++)
			store_row(c + r * ldc, acc[r][0], acc[r][1], alpha,
				  beta, bias, relu);
	} else {
		float t[GEMM_MR * GEMM_NR];

#pragma GCC unroll 14
		for (r = 0; r < GEMM_MR; r++) {
			gemm_storeu(t + r * GEMM_NR, acc[r][0]);
			gemm_storeu(t + r * GEMM_NR + 16, acc[r][1]);
		}
		gemm_store_edge(t, c, ldc, mr, nr, alpha, beta, bias, relu);
	}
}

#endif /* __CHECKER__ */
