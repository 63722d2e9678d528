// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * AVX-512F's kernel for GEMM_BATCHED's small products, attention's: the
 * scores Q K^T of a few queries against their keys, and the context P V
 * of a few rows. A decoder step's are 1 x 24 x 128 and 1 x 128 x 24, 64
 * of them a command; packing each product's B and running the 8-row
 * microkernel on one real row took 0.7 us a product, the packing and the
 * padding rows most of it. Here the operands are read where they are
 * stored (f32, one step along K: gemm.c's gemm_is_small()).
 *
 * Each element of C is what the packed kernels make of it, bit for bit:
 * the FMA chain over k, in order, from zero, then gemm_store_row_mask()'s
 * epilogue. A B (B stored k x n): A's element broadcast times B's row.
 * A B^T (B stored n x k): B's rows are contiguous in k, so 16 of them by
 * 16 k at a time are transposed in registers (gemm_tr()) and then used
 * as B's rows would be. Compiled with -mavx512f -mfma.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-in for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512_small(const struct vtpu_gemm_step *st,
				 void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

/*
 * C's rows [0, @rows) (a constant once inlined, at most SMALL_ROWS), its
 * 16 columns from B's row @b on (@w of them), for A B^T: per 16 k, the
 * 16 rows of B (those past @w read as zeros) transposed, then each row
 * of C takes them in k order.
 */
#define SMALL_ROWS 4u

static __always_inline void small_nt_block(const float *a, u64 lda,
					   const float *b, u64 ldb, u32 kc,
					   float *c, u64 ldc, u32 w,
					   float alpha, float beta, u32 rows)
{
	V16F acc[SMALL_ROWS] GEMM_NOINIT, t[16] GEMM_NOINIT;
	u16 mw = gemm_mask(w);
	u32 p0, p, r, len;

#pragma GCC unroll 4
	for (r = 0; r < rows; r++)
		acc[r] = (V16F){ 0 };
	for (p0 = 0; p0 < kc; p0 += 16) {
		len = gemm_min(kc - p0, 16);
#pragma GCC unroll 16
		for (r = 0; r < 16; r++)
			t[r] = r < w ? gemm_maskload(b + r * ldb + p0,
						     gemm_mask(len)) :
				       (V16F){ 0 };
		gemm_tr(t);
		for (p = 0; p < len; p++) {
#pragma GCC unroll 4
			for (r = 0; r < rows; r++)
				acc[r] += a[r * lda + p0 + p] * t[p];
		}
	}
#pragma GCC unroll 4
	for (r = 0; r < rows; r++)
		gemm_store_row_mask(c + r * ldc, acc[r], (V16F){ 0 }, mw, 0,
				    alpha, beta, NULL, 0);
}

/* C[i0 + i][j0..j0 + nt) for A B^T, i < @mt; @a, @b at i0, j0 */
static void small_nt(const struct vtpu_gemm_step *st, const float *a,
		     const float *b)
{
	const struct vtpu_engine_gemm *g = st->g;
	u64 ldc = vtpu_gemm_c_ld(g);
	u32 i, j, rows, w;

	for (j = 0; j < st->nt; j += 16) {
		w = gemm_min(st->nt - j, 16);
		for (i = 0; i < st->mt; i += rows) {
			float *c = vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j);
			const float *ai = a + (u64)i * g->lda;
			const float *bj = b + (u64)j * g->ldb;

			rows = gemm_min(st->mt - i, SMALL_ROWS);
			switch (rows) {
			case 1:
				small_nt_block(ai, g->lda, bj, g->ldb, st->kc,
					       c, ldc, w, g->alpha, st->beta,
					       1);
				break;
			case 2:
				small_nt_block(ai, g->lda, bj, g->ldb, st->kc,
					       c, ldc, w, g->alpha, st->beta,
					       2);
				break;
			case 3:
				small_nt_block(ai, g->lda, bj, g->ldb, st->kc,
					       c, ldc, w, g->alpha, st->beta,
					       3);
				break;
			default:
				small_nt_block(ai, g->lda, bj, g->ldb, st->kc,
					       c, ldc, w, g->alpha, st->beta,
					       SMALL_ROWS);
				break;
			}
		}
	}
}

/* C[i][j0..j0 + nt) = alpha * A_i B + beta * C, 32 columns at a time */
static void small_nn_row(const float *a, const float *b, u64 ldb, u32 kc,
			 float *c, u32 nt, float alpha, float beta)
{
	u32 j, p;

	for (j = 0; j < nt; j += 32) {
		u32 w = gemm_min(nt - j, 32);
		u16 m0 = gemm_mask(gemm_min(w, 16));
		u16 m1 = gemm_mask(w > 16 ? w - 16 : 0);
		V16F acc0 = (V16F){ 0 }, acc1 = (V16F){ 0 };
		const float *bp = b + j;

		for (p = 0; p < kc; p++, bp += ldb) {
			float av = a[p];

			acc0 += av * gemm_maskload(bp, m0);
			acc1 += av * gemm_maskload(bp + 16, m1);
		}
		gemm_store_row_mask(c + j, acc0, acc1, m0, m1, alpha, beta,
				    NULL, 0);
	}
}

void vtpu_gemm_step_avx512_small(const struct vtpu_gemm_step *st,
				 void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const float *a = (const float *)g->a + (u64)st->i0 * g->lda + st->p0;
	const float *b = g->b;
	u32 i;

	if (g->flags & VTPU_GEMM_TRANS_B) {
		small_nt(st, a, b + (u64)st->j0 * g->ldb + st->p0);
		return;
	}
	b += (u64)st->p0 * g->ldb + st->j0;
	for (i = 0; i < st->mt; i++, a += g->lda)
		small_nn_row(a, b, g->ldb, st->kc,
			     vtpu_gemm_c_at(g, st->i0 + i, st->j0), st->nt,
			     g->alpha, st->beta);
}

#endif /* __CHECKER__ */
