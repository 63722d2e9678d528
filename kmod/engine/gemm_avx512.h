/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * What the AVX-512F kernels share: gemm_avx512.c (the 14 x 32 GEMM
 * microkernel, and its variants that read A's rows as they are),
 * gemm_narrow_avx512.c (n <= 16, and A^T B with few rows),
 * gemm_winograd_avx512.c (Winograd CONV, CONV_DGRAD and CONV_WGRAD),
 * gemm_wgrad_avx512.c (direct CONV_WGRAD) and gemm_dgrad_avx512.c
 * (CONV_DGRAD with few channels, scattered). The width-generic vector
 * helpers are gemm_tmpl.h's at 16 lanes; here are the masked ones and the
 * 14 x 32 microkernel's k loop and store, inlined into each caller.
 * Include only from files compiled with -mavx512f.
 */
#ifndef VTPU_GEMM_AVX512_H
#define VTPU_GEMM_AVX512_H

#include "gemm.h"

/*
 * The AVX-512 level's kernels (struct vtpu_gemm_level, whose table is
 * gemm_avx512.c's), and its narrow level's table.
 */
extern const struct vtpu_gemm_level vtpu_gemm_level_avx512_narrow;
void vtpu_gemm_step_avx512_rows(const struct vtpu_gemm_step *st,
				void *scratch);
void vtpu_gemm_step_avx512_ain(const struct vtpu_gemm_step *st,
			       void *scratch);
void vtpu_gemm_step_avx512_atb(const struct vtpu_gemm_step *st,
			       void *scratch);
void vtpu_gemm_step_avx512_narrow(const struct vtpu_gemm_step *st,
				  void *scratch);
void vtpu_gemm_step_avx512_tn(const struct vtpu_gemm_step *st, void *scratch);
void vtpu_gemm_step_avx512_wino(const struct vtpu_gemm_step *st,
				void *scratch);
void vtpu_gemm_step_avx512_wino_wgrad(const struct vtpu_gemm_step *st,
				      void *scratch);
void vtpu_gemm_step_avx512_wgrad(const struct vtpu_gemm_step *st,
				 void *scratch);
void vtpu_gemm_step_avx512_dgrad(const struct vtpu_gemm_step *st,
				 void *scratch);
void vtpu_gemm_step_avx512_small(const struct vtpu_gemm_step *st,
				 void *scratch);

/*
 * sparse does not know GCC's vector extensions (__builtin_shuffle, vector
 * initializers): under it, each file defines stand-ins for its kernels,
 * and the compiler checks the real thing.
 */
#ifndef __CHECKER__

#define GEMM_VW 16
#include "gemm_tmpl.h"

#define V16F GEMM_VEC
#define V16I GEMM_VEC_I

/* The microkernel's tile: rows by two vectors of columns */
#define UKR_MR VTPU_GEMM_AVX512_MR
#define UKR_NR VTPU_GEMM_AVX512_NR

/* @m selects lanes; the others read as 0 and never fault. */
static inline V16F gemm_maskload(const float *p, u16 m)
{
	return __builtin_ia32_loadups512_mask(p, (V16F){ 0 }, m);
}

static inline void gemm_maskstore(float *p, V16F v, u16 m)
{
	__builtin_ia32_storeups512_mask(p, v, m);
}

/* Lanes 0..n-1 of a vector (n <= 16). */
static inline u16 gemm_mask(u32 n)
{
	return (u16)((1u << n) - 1);
}

/* gemm_store_row() of the columns under masks @m0 (0-15) and @m1 (16-31) */
static inline void gemm_store_row_mask(float *c, V16F x0, V16F x1, u16 m0,
				       u16 m1, float alpha, float beta,
				       const float *bias, u32 relu)
{
	x0 *= alpha;
	x1 *= alpha;
	if (beta != 0.0f) {
		x0 += beta * gemm_maskload(c, m0);
		x1 += beta * gemm_maskload(c + 16, m1);
	}
	if (bias) {
		x0 += gemm_maskload(bias, m0);
		x1 += gemm_maskload(bias + 16, m1);
	}
	if (relu) {
		x0 = gemm_relu(x0);
		x1 = gemm_relu(x1);
	}
	gemm_maskstore(c, x0, m0);
	gemm_maskstore(c + 16, x1, m1);
}

/*
 * The k loop of a microtile of @rows rows (at most MR) on @nv of each k's
 * two vectors of B (1 or 2): a last panel of at most 16 columns does half
 * the FMAs. A's element (r, p) is a[r * @rs + p * @ps]: a packed panel
 * (rs 1, ps MR), rows of gathered im2col (rs VTPU_GEMM_KC, ps 1), A
 * where it is stored m x k (rs lda, ps 1) or k x m (rs 1, ps lda), or
 * Winograd's V (gemm_winograd_avx512.c). B's row p is at b + p * @bs: a
 * packed panel's (bs UKR_NR) or B's own rows where they are stored (bs
 * ldb). @rows, @nv, @rs and @ps are constants once inlined. The
 * accumulators are an array indexed only in fully unrolled loops, so GCC
 * keeps all 28 in registers (check: objdump shows no stack access in the
 * k loop).
 */
static __always_inline void ukr_acc_bs(u32 kc, const float *a,
				       const float *b, V16F acc[UKR_MR][2],
				       u32 nv, u32 rs, u32 ps, u32 rows,
				       u64 bs)
{
	/* rows 7.. from a second base: the same 6 offsets serve both */
	const float *a7 = a + 7 * (u64)rs;
	u32 p, r;

#pragma GCC unroll 14
	for (r = 0; r < rows; r++)
		acc[r][0] = acc[r][1] = (V16F){ 0 };

	for (p = 0; p < kc; p++, a += ps, a7 += ps, b += bs) {
		/*
		 * Unaligned loads: B's panels may be read where they are
		 * stored (vtpu_gemm_step_avx512_ain(), and the packed
		 * step's), 4-byte aligned.
		 */
		V16F b0 = gemm_loadu(b);
		V16F b1 = gemm_loadu(b + 16);

#pragma GCC unroll 14
		for (r = 0; r < rows; r++) {
			float av = r < 7 ? a[r * rs] : a7[(r - 7) * rs];

			acc[r][0] += av * b0;
			if (nv == 2)
				acc[r][1] += av * b1;
		}
	}
}

/* ukr_acc_bs() on a packed panel: B's k rows a microtile wide */
static __always_inline void ukr_acc(u32 kc, const float *a, const float *b,
				    V16F acc[UKR_MR][2], u32 nv, u32 rs,
				    u32 ps, u32 rows)
{
	ukr_acc_bs(kc, a, b, acc, nv, rs, ps, rows, UKR_NR);
}

/* The accumulated microtile of @rows rows (a constant) into C[mr x nr]. */
static __always_inline void ukr_store(V16F acc[UKR_MR][2], float *c, u64 ldc,
				      u32 mr, u32 nr, float alpha, float beta,
				      const float *bias, u32 relu, u32 rows)
{
	u32 r;

	if (ENGINE_LIKELY(mr == rows && nr == UKR_NR)) {
#pragma GCC unroll 14
		for (r = 0; r < rows; r++)
			gemm_store_row(c + r * ldc, acc[r][0], acc[r][1],
				       alpha, beta, bias, relu);
	} else {
		u16 m0 = gemm_mask(gemm_min(nr, 16));
		u16 m1 = gemm_mask(nr > 16 ? nr - 16 : 0);

#pragma GCC unroll 14
		for (r = 0; r < rows; r++)
			if (r < mr)
				gemm_store_row_mask(c + r * ldc, acc[r][0],
						    acc[r][1], m0, m1, alpha,
						    beta, bias, relu);
	}
}

#endif /* __CHECKER__ */
#endif /* VTPU_GEMM_AVX512_H */
