// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * AVX-512F's kernels for thin products: the narrow GEMM (n <= 16), whose
 * vectors run along M, and A^T B with few rows (m <= 16), the same
 * product turned over. Compiled with -mavx512f.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-ins for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512_narrow(const struct vtpu_gemm_step *st,
				  void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_tn(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

/*
 * When all of N fits in one 16-column panel (a classifier's 10 classes),
 * 14 x 32 microtiles would be mostly padding. The narrow kernel computes
 * C's 32 x n microtile transposed instead: vectors run along M (two zmm of
 * A per k, masked to the rows that exist) and B is broadcast, with a pair
 * of accumulators per column, so only the columns that exist cost FMAs.
 * On the way out the microtile is transposed in registers and stored with
 * masked row stores. Each k of such a thin product touches little work,
 * so the operands are read where they are stored when their layout
 * allows (f32 A stored k x m, f32 B stored k x n) instead of packed.
 */
#define GEMM_MR VTPU_GEMM_NARROW_MR
#define GEMM_NR VTPU_GEMM_NARROW_NR
#define GEMM_SUFFIX _narrow
#include "gemm_tmpl.h"

/*
 * The k loop for @nc columns, a constant once inlined: each case of
 * narrow_ukr()'s switch gets its own copy with the accumulators in
 * registers. A row p is a[p * lda + 0..31] (rows under mask @m0, @m1),
 * B's b[p * ldb + 0..nc-1]. @t gets column j of the microtile in
 * t[j][0..1] (rows 0-15, 16-31); columns from @nc on are zero.
 */
static __always_inline void narrow_acc(u32 kc, const float *a, u64 lda,
				       u16 m0, u16 m1, const float *b, u64 ldb,
				       V16F (*t)[2], u32 nc)
{
	V16F acc[16][2] GEMM_NOINIT;
	u32 p, j;

#pragma GCC unroll 16
	for (j = 0; j < nc; j++)
		acc[j][0] = acc[j][1] = (V16F){ 0 };

	for (p = 0; p < kc; p++, a += lda, b += ldb) {
		V16F a0 = gemm_maskload(a, m0);
		V16F a1 = gemm_maskload(a + 16, m1);

		/*
		 * The next microtile's row p: with A (or, in _tn, B) read
		 * in place, rows a whole stored row apart are more streams
		 * than the hardware prefetcher follows; in a packed panel
		 * it is the next row, loaded anyway.
		 */
		__builtin_prefetch(a + 32);
		__builtin_prefetch(a + 48);

#pragma GCC unroll 16
		for (j = 0; j < nc; j++) {
			float bv = b[j];

			acc[j][0] += a0 * bv;
			acc[j][1] += a1 * bv;
		}
	}
#pragma GCC unroll 16
	for (j = 0; j < 16; j++) {
		t[j][0] = j < nc ? acc[j][0] : (V16F){ 0 };
		t[j][1] = j < nc ? acc[j][1] : (V16F){ 0 };
	}
}

/* The transposed microtile @t into C[mr x nr], a row at a time. */
static void narrow_store(V16F (*t)[2], float *c, u64 ldc, u32 mr, u32 nr,
			 float alpha, float beta, const float *bias, u32 relu)
{
	u16 mask = gemm_mask(nr);
	V16F bv = bias ? gemm_maskload(bias, mask) : (V16F){ 0 };
	u32 h, r;

	for (h = 0; h < 2 && h * 16 < mr; h++, c += 16 * ldc) {
		u32 rows = gemm_min(16, mr - h * 16);
		V16F v[16] GEMM_NOINIT;

#pragma GCC unroll 16
		for (r = 0; r < 16; r++)
			v[r] = t[r][h];
		gemm_tr(v);
#pragma GCC unroll 16
		for (r = 0; r < 16; r++) {
			float *cr = c + r * ldc;
			V16F x = v[r] * alpha;

			if (r >= rows)
				break;
			if (beta != 0.0f)
				x += beta * gemm_maskload(cr, mask);
			if (bias)
				x += bv;
			if (relu)
				x = gemm_relu(x);
			gemm_maskstore(cr, x, mask);
		}
	}
}

/*
 * C[mr x nr] (mr <= 32, nr <= 16) := act(alpha * A*B + beta * C + bias)
 * over @kc k, A's rows at @a with stride @lda per k, B's at @b with @ldb.
 * @t: 16 x 2 vectors of scratch (the kernel's stack is too small for
 * them, and would zero them on every call).
 */
/* narrow_acc() for any @nc of 1..16, each a copy with constant @nc */
static void narrow_acc_any(u32 kc, const float *a, u64 lda, u16 m0, u16 m1,
			   const float *b, u64 ldb, V16F (*t)[2], u32 nc)
{
	/* every column count: B may be read in place, past nr is not ours */
	switch (nc) {
	case 1:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 1);
		break;
	case 2:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 2);
		break;
	case 3:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 3);
		break;
	case 4:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 4);
		break;
	case 5:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 5);
		break;
	case 6:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 6);
		break;
	case 7:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 7);
		break;
	case 8:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 8);
		break;
	case 9:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 9);
		break;
	case 10:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 10);
		break;
	case 11:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 11);
		break;
	case 12:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 12);
		break;
	case 13:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 13);
		break;
	case 14:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 14);
		break;
	case 15:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 15);
		break;
	default:
		narrow_acc(kc, a, lda, m0, m1, b, ldb, t, 16);
		break;
	}
}

static void narrow_ukr(u32 kc, const float *a, u64 lda, const float *b,
		       u64 ldb, float *c, u64 ldc, u32 mr, u32 nr, float alpha,
		       float beta, const float *bias, u32 relu, V16F (*t)[2])
{
	u16 m0 = gemm_mask(gemm_min(mr, 16));
	u16 m1 = gemm_mask(mr > 16 ? mr - 16 : 0);

	narrow_acc_any(kc, a, lda, m0, m1, b, ldb, t, nr);
	narrow_store(t, c, ldc, mr, nr, alpha, beta, bias, relu);
}

_Static_assert(VTPU_GEMM_KC * VTPU_GEMM_NARROW_NR + 16 * 2 * 16 <=
	       VTPU_GEMM_KC * VTPU_GEMM_NT_MAX, "narrow B panel and microtile");

/*
 * One step of a tile of a GEMM with n <= 16 (so the tile has all of N).
 * The scratch's B area holds the packed B panel and, after it, the
 * transposed microtile; a packed A panel is used once, so A is packed a
 * panel at a time, while it is hot.
 */
void vtpu_gemm_step_avx512_narrow(const struct vtpu_gemm_step *st,
				  void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	float *bp = scratch;
	V16F (*t)[2] = (V16F (*)[2])(bp + VTPU_GEMM_KC * GEMM_NR);
	float *ap = bp + VTPU_GEMM_A_OFF;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	bool f32 = g->dtype == VTPU_DTYPE_F32;
	bool a_direct = f32 && (g->flags & VTPU_GEMM_TRANS_A) && !g->implicit;
	u64 lda = a_direct ? g->lda : GEMM_MR, ldb = GEMM_NR;
	u64 ldc = vtpu_gemm_c_ld(g);
	const float *a = ap, *b = bp;
	u32 kc = st->kc, i;

	/* (B in panels has n >= VTPU_GEMM_PANEL, or TRANS_B) */
	if (f32 && !(g->flags & VTPU_GEMM_TRANS_B) && !g->flip_oc) {
		ldb = g->ldb;
		b = (const float *)g->b + st->p0 * ldb + st->j0;
	} else {
		gemm_pack_b_narrow(bp, g, st->p0, kc, st->j0, st->nt);
	}

	for (i = 0; i < st->mt; i += GEMM_MR) {
		u32 mr = gemm_min(GEMM_MR, st->mt - i);

		if (a_direct)
			a = (const float *)g->a + st->p0 * lda + st->i0 + i;
		else
			gemm_pack_a_narrow(ap, g, st->i0 + i, mr, st->p0, kc);
		narrow_ukr(kc, a, lda, b, ldb,
			   vtpu_gemm_c_at(g, st->i0 + i, st->j0), ldc, mr,
			   st->nt, g->alpha, st->beta, bias, relu, t);
	}
}

/*
 * C = alpha * A^T B + beta * C with few rows (m <= 16) and many columns,
 * A stored k x m and B k x n, f32, no epilogue: a weight gradient such as
 * a first conv's (m = 3 x 3 x 1, n = 64 filters, k = every pixel of the
 * batch). It is the narrow kernel's product turned over: B's rows are the
 * vectors (32 columns of C), A's elements the broadcasts, and each
 * accumulator pair is already a row of C, so it is stored as it is. Both
 * operands are read where they are stored: nothing is packed.
 */
void vtpu_gemm_step_avx512_tn(const struct vtpu_gemm_step *st, void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	V16F (*t)[2] = scratch;
	const float *a = (const float *)g->a + (u64)st->p0 * g->lda + st->i0;
	u64 ldc = g->ldc;
	u32 j, r, h;

	for (j = 0; j < st->nt; j += 32) {
		u32 nc = gemm_min(32, st->nt - j);
		u16 mask[2] = { gemm_mask(gemm_min(nc, 16)),
				gemm_mask(nc > 16 ? nc - 16 : 0) };
		const float *b = (const float *)g->b + (u64)st->p0 * g->ldb +
				 st->j0 + j;
		float *c = g->c + (u64)st->i0 * ldc + st->j0 + j;

		narrow_acc_any(st->kc, b, g->ldb, mask[0], mask[1], a, g->lda,
			       t, st->mt);
		for (r = 0; r < st->mt; r++, c += ldc) {
			for (h = 0; h < 2 && mask[h]; h++) {
				V16F x = t[r][h] * g->alpha;

				if (st->beta != 0.0f)
					x += st->beta *
					     gemm_maskload(c + 16 * h, mask[h]);
				gemm_maskstore(c + 16 * h, x, mask[h]);
			}
		}
	}
}

#endif /* __CHECKER__ */

/* For n <= VTPU_GEMM_NARROW_NR: AVX-512's narrow kernel and its tiling */
const struct vtpu_gemm_level vtpu_gemm_level_avx512_narrow = {
	.mr = VTPU_GEMM_NARROW_MR,
	.nr = VTPU_GEMM_NARROW_NR,
	.mt_max = VTPU_GEMM_NARROW_MT_MAX,
	.step = vtpu_gemm_step_avx512_narrow,
};
