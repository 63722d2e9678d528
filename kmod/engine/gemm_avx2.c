// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM for AVX2+FMA: a 6 x 16 microkernel (12 ymm accumulators, two ymm
 * of B per k, A broadcast from memory). Compiled with -mavx2 -mfma; GCC vector
 * extensions instead of <immintrin.h>, which the kernel build cannot use.
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

#define V8F float __attribute__((vector_size(32)))
#define V8I int __attribute__((vector_size(32)))
#define V8U unsigned int __attribute__((vector_size(32)))
#define V8H unsigned short __attribute__((vector_size(16)))

#define GEMM_VEC V8F

static inline V8F gemm_loadu(const float *p)
{
	V8F v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

/* 8 bf16 widened to f32 (exact: the bits go to the top half) */
static inline V8F gemm_loadu_bf16(const u16 *p)
{
	V8H h;

	__builtin_memcpy(&h, p, sizeof(h));
	return (V8F)(__builtin_convertvector(h, V8U) << 16);
}

static inline void gemm_storeu(float *p, V8F v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

/*
 * Transpose 8 x 8 in place: one bit of row and column index swapped
 * per stage, each a pair of two-source shuffles per row pair.
 */
static inline void gemm_tr(V8F *v)
{
	const V8I lo1 = { 0, 8, 2, 10, 4, 12, 6, 14 };
	const V8I hi1 = { 1, 9, 3, 11, 5, 13, 7, 15 };
	const V8I lo2 = { 0, 1, 8, 9, 4, 5, 12, 13 };
	const V8I hi2 = { 2, 3, 10, 11, 6, 7, 14, 15 };
	const V8I lo4 = { 0, 1, 2, 3, 8, 9, 10, 11 };
	const V8I hi4 = { 4, 5, 6, 7, 12, 13, 14, 15 };
	u32 r;

#pragma GCC unroll 8
	for (r = 0; r < 8; r++) {
		if (!(r & 1)) {
			V8F x = v[r], y = v[r + 1];

			v[r] = __builtin_shuffle(x, y, lo1);
			v[r + 1] = __builtin_shuffle(x, y, hi1);
		}
	}
#pragma GCC unroll 8
	for (r = 0; r < 8; r++) {
		if (!(r & 2)) {
			V8F x = v[r], y = v[r + 2];

			v[r] = __builtin_shuffle(x, y, lo2);
			v[r + 2] = __builtin_shuffle(x, y, hi2);
		}
	}
#pragma GCC unroll 8
	for (r = 0; r < 8; r++) {
		if (!(r & 4)) {
			V8F x = v[r], y = v[r + 4];

			v[r] = __builtin_shuffle(x, y, lo4);
			v[r + 4] = __builtin_shuffle(x, y, hi4);
		}
	}
}

#include "gemm_tmpl.h"

/* max(x, 0) that keeps NaN (and -0) */
static inline V8F gemm_relu(V8F x)
{
	V8F zero = { 0 };

	return (V8F)((V8I)x & ~(V8I)(x < zero));
}

static inline void store_row(float *c, V8F x0, V8F x1, float alpha,
			     float beta, const float *bias, u32 relu)
{
	x0 *= alpha;
	x1 *= alpha;
	if (beta != 0.0f) {
		x0 += beta * gemm_loadu(c);
		x1 += beta * gemm_loadu(c + 8);
	}
	if (bias) {
		x0 += gemm_loadu(bias);
		x1 += gemm_loadu(bias + 8);
	}
	if (relu) {
		x0 = gemm_relu(x0);
		x1 = gemm_relu(x1);
	}
	gemm_storeu(c, x0);
	gemm_storeu(c + 8, x1);
}

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
			store_row(c + r * ldc, acc[r][0], acc[r][1], alpha,
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
