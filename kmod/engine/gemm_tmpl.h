/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The GEMM macro-kernel, instantiated once per SIMD level: gemm.c
 * (portable), gemm_avx2.c and gemm_avx512.c each define
 *
 *   GEMM_MR, GEMM_NR   the microtile (rows x columns of C)
 *   GEMM_STEP_FN       the name of the exported step function
 *   GEMM_VW            optional: floats per vector, with GEMM_VEC (the
 *                      type), gemm_loadu(), gemm_storeu() and gemm_tr()
 *                      defined (vector packing)
 *
 * then include this file, and then define gemm_ukr() (declared here), so
 * that packing and the loops around the microkernel are compiled with the
 * level's instruction set and constant panel sizes.
 *
 * Packed layouts (zero-padded past the matrix edge):
 *   A micro-panel: ap[p * MR + r] = op(A)[i0 + r][p0 + p]
 *   B micro-panel: bp[p * NR + c] = op(B)[p0 + p][j0 + c]
 */
#ifndef GEMM_MR
#error "define GEMM_MR, GEMM_NR and GEMM_STEP_FN before including this"
#endif

/*
 * C[mr x nr] := act(alpha * A*B + beta * C + bias): @a and @b are packed
 * micro-panels of @kc; C is never read when @beta == 0; @bias (NULL: none)
 * points at this microtile's first column; @relu as VTPU_GEMM_RELU.
 */
static void gemm_ukr(u32 kc, const float *a, const float *b, float *c,
		     u64 ldc, u32 mr, u32 nr, float alpha, float beta,
		     const float *bias, u32 relu);

/*
 * Packing reads the operands once per tile, mostly from L3 or memory:
 * prefetch a few stored rows ahead (the hardware prefetcher does not
 * cross pages, and each stored row may be its own page). Prefetches past
 * the end of a matrix are harmless (they never fault).
 */
#define GEMM_PF_ROWS 3

static inline void gemm_prefetch_row(const float *p, u32 n)
{
	u32 i;

	for (i = 0; i < n; i += 16)
		__builtin_prefetch(p + i);
}

/* Stored rows per block in the row-wise packs. */
#define GEMM_PB 8

/* One NR-float panel row (unaligned source). */
static inline void gemm_copy_nr(float *d, const float *s)
{
#ifdef GEMM_VW
	u32 i;

	for (i = 0; i < GEMM_NR; i += GEMM_VW)
		*(GEMM_VEC *)(d + i) = gemm_loadu(s + i);
#else
	__builtin_memcpy(d, s, GEMM_NR * 4);
#endif
}

static inline u32 gemm_min(u32 a, u32 b)
{
	return a < b ? a : b;
}

/* An accumulated microtile @t (MR x NR, row-major) into C, element-wise. */
static inline void gemm_store_edge(const float *t, float *c, u64 ldc, u32 mr,
				   u32 nr, float alpha, float beta,
				   const float *bias, u32 relu)
{
	u32 i, j;

	for (i = 0; i < mr; i++, t += GEMM_NR, c += ldc) {
		for (j = 0; j < nr; j++) {
			float x = alpha * t[j];

			if (beta != 0.0f)
				x += beta * c[j];
			if (bias)
				x += bias[j];
			if (relu && x < 0.0f)
				x = 0.0f;
			c[j] = x;
		}
	}
}

static inline float gemm_bf16(const void *p, u64 idx)
{
	u32 bits = (u32)((const u16 *)p)[idx] << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Element (row, col) of a stored matrix, f32 or bf16. */
#define GEMM_ELEM(g, base, idx)                                                \
	((g)->dtype == VTPU_DTYPE_BF16 ? gemm_bf16(base, idx) :                  \
					 ((const float *)(base))[idx])

#ifdef GEMM_VW
/*
 * Transposing packs in vector registers, GEMM_VW k at a time; the level
 * provides GEMM_VEC (GEMM_VW floats), unaligned gemm_loadu/storeu() and
 * gemm_tr() (transpose GEMM_VW vectors in place). A rows go in a GEMM_VW-row transpose whose
 * rows past MR are zero; each result vector is stored whole, so a store
 * runs GEMM_VW - MR floats into the next k's slot (rewritten by the next
 * store) and, at the end of the panel, into the scratch's slack.
 */
static void gemm_pack_a_rows(float *ap, const float *src, u64 lda, u32 kc)
{
	u32 p = 0, r, q;

	for (; p + GEMM_VW <= kc; p += GEMM_VW) {
		GEMM_VEC v[GEMM_VW];

		for (r = 0; r < GEMM_MR; r++) {
			__builtin_prefetch(src + r * lda + p + 4 * GEMM_VW);
			v[r] = gemm_loadu(src + r * lda + p);
		}
		for (; r < GEMM_VW; r++)
			v[r] = (GEMM_VEC){ 0 };
		gemm_tr(v);
		for (q = 0; q < GEMM_VW; q++)
			gemm_storeu(ap + (p + q) * GEMM_MR, v[q]);
	}
	for (; p < kc; p++)
		for (r = 0; r < GEMM_MR; r++)
			ap[p * GEMM_MR + r] = src[r * lda + p];
}

/* NR stored rows of B (n x k) into one panel, in GEMM_VW-square blocks. */
static void gemm_pack_b_cols(float *bp, const float *src, u64 ldb, u32 kc)
{
	u32 p = 0, h, r, q;

	for (; p + GEMM_VW <= kc; p += GEMM_VW) {
		for (h = 0; h < GEMM_NR; h += GEMM_VW) {
			GEMM_VEC v[GEMM_VW];

			for (r = 0; r < GEMM_VW; r++) {
				__builtin_prefetch(src + (h + r) * ldb + p +
						   4 * GEMM_VW);
				v[r] = gemm_loadu(src + (h + r) * ldb + p);
			}
			gemm_tr(v);
			for (q = 0; q < GEMM_VW; q++)
				*(GEMM_VEC *)(bp + (p + q) * GEMM_NR + h) = v[q];
		}
	}
	for (; p < kc; p++)
		for (h = 0; h < GEMM_NR; h++)
			bp[p * GEMM_NR + h] = src[h * ldb + p];
}
#endif

/*
 * The tile's A block, rows i0..i0+mt, k p0..p0+kc, as consecutive MR-row
 * panels (kc * MR floats each). Stored rows are read in order so that the
 * hardware prefetcher follows (a panel at a time would touch a new page
 * per k when A is stored k x m).
 */
static void gemm_pack_a(float *ap, const struct vtpu_engine_gemm *g, u32 i0,
			u32 mt, u32 p0, u32 kc)
{
	u64 lda = g->lda, pstride = (u64)kc * GEMM_MR;
	u32 full = mt / GEMM_MR, rest = mt - full * GEMM_MR;
	u32 p, r, i;

	if (g->dtype == VTPU_DTYPE_F32 && (g->flags & VTPU_GEMM_TRANS_A)) {
		/* stored k x m: row p holds all the block's rows */
		const float *src = (const float *)g->a + p0 * lda + i0;

		for (p = 0; p < kc; p++, src += lda) {
			float *d = ap + p * GEMM_MR;

			gemm_prefetch_row(src + GEMM_PF_ROWS * lda, mt);
			for (i = 0; i < full; i++, d += pstride)
				__builtin_memcpy(d, src + i * GEMM_MR,
						 GEMM_MR * 4);
			if (rest) {
				for (r = 0; r < rest; r++)
					d[r] = src[full * GEMM_MR + r];
				for (; r < GEMM_MR; r++)
					d[r] = 0.0f;
			}
		}
		return;
	}
	if (g->dtype == VTPU_DTYPE_F32) {
		/* stored m x k: transpose MR rows at a time */
		for (i = 0; i <= full; i++, ap += pstride) {
			const float *src = (const float *)g->a +
					   (u64)(i0 + i * GEMM_MR) * lda + p0;
			u32 mr = i < full ? GEMM_MR : rest;

			if (!mr)
				break;
#ifdef GEMM_VW
			if (mr == GEMM_MR) {
				gemm_pack_a_rows(ap, src, lda, kc);
				continue;
			}
#endif
			for (r = 0; r < mr; r++, src += lda)
				for (p = 0; p < kc; p++)
					ap[p * GEMM_MR + r] = src[p];
			for (; r < GEMM_MR; r++)
				for (p = 0; p < kc; p++)
					ap[p * GEMM_MR + r] = 0.0f;
		}
		return;
	}
	/* bf16: widen while packing */
	for (i = 0; i < mt; i += GEMM_MR, ap += pstride) {
		u32 mr = gemm_min(GEMM_MR, mt - i);
		float *d = ap;

		for (p = 0; p < kc; p++, d += GEMM_MR) {
			for (r = 0; r < mr; r++) {
				u64 idx = (g->flags & VTPU_GEMM_TRANS_A) ?
						  (u64)(p0 + p) * lda + i0 + i + r :
						  (u64)(i0 + i + r) * lda + p0 + p;
				d[r] = gemm_bf16(g->a, idx);
			}
			for (; r < GEMM_MR; r++)
				d[r] = 0.0f;
		}
	}
}

/*
 * The tile's B block, k p0..p0+kc, columns j0..j0+nt, as consecutive
 * NR-column panels (kc * NR floats each).
 */
static void gemm_pack_b(float *bp, const struct vtpu_engine_gemm *g, u32 p0,
			u32 kc, u32 j0, u32 nt)
{
	u64 ldb = g->ldb, pstride = (u64)kc * GEMM_NR;
	u32 full = nt / GEMM_NR, rest = nt - full * GEMM_NR;
	u32 p, c, j;

	if (g->dtype == VTPU_DTYPE_F32 && !(g->flags & VTPU_GEMM_TRANS_B)) {
		/*
		 * stored k x n: GEMM_PB rows at a time, panel by panel, so
		 * that reads stay on a few pages and writes are sequential
		 * (row by row across panels, every write would hit the
		 * same L1 set: panels are a power of two apart)
		 */
		const float *src = (const float *)g->b + p0 * ldb + j0;

		for (p = 0; p < kc; p += GEMM_PB, src += GEMM_PB * ldb) {
			u32 pb = gemm_min(GEMM_PB, kc - p);
			float *d = bp + p * GEMM_NR;
			u32 q;

			for (q = 0; q < pb; q++)
				gemm_prefetch_row(src + (GEMM_PB + q) * ldb, nt);
			for (j = 0; j < full; j++, d += pstride)
				for (q = 0; q < pb; q++)
					gemm_copy_nr(d + q * GEMM_NR,
						     src + q * ldb + j * GEMM_NR);
			if (rest) {
				for (q = 0; q < pb; q++) {
					const float *sr = src + q * ldb +
							  full * GEMM_NR;

					for (c = 0; c < rest; c++)
						d[q * GEMM_NR + c] = sr[c];
					for (; c < GEMM_NR; c++)
						d[q * GEMM_NR + c] = 0.0f;
				}
			}
		}
		return;
	}
	if (g->dtype == VTPU_DTYPE_F32) {
		/* stored n x k: transpose NR columns at a time */
		for (j = 0; j <= full; j++, bp += pstride) {
			const float *src = (const float *)g->b +
					   (u64)(j0 + j * GEMM_NR) * ldb + p0;
			u32 nr = j < full ? GEMM_NR : rest;

			if (!nr)
				break;
#ifdef GEMM_VW
			if (nr == GEMM_NR) {
				gemm_pack_b_cols(bp, src, ldb, kc);
				continue;
			}
#endif
			for (c = 0; c < nr; c++, src += ldb)
				for (p = 0; p < kc; p++)
					bp[p * GEMM_NR + c] = src[p];
			for (; c < GEMM_NR; c++)
				for (p = 0; p < kc; p++)
					bp[p * GEMM_NR + c] = 0.0f;
		}
		return;
	}
	for (j = 0; j < nt; j += GEMM_NR, bp += pstride) {
		u32 nr = gemm_min(GEMM_NR, nt - j);
		float *d = bp;

		for (p = 0; p < kc; p++, d += GEMM_NR) {
			for (c = 0; c < nr; c++) {
				u64 idx = (g->flags & VTPU_GEMM_TRANS_B) ?
						  (u64)(j0 + j + c) * ldb + p0 + p :
						  (u64)(p0 + p) * ldb + j0 + j + c;
				d[c] = gemm_bf16(g->b, idx);
			}
			for (; c < GEMM_NR; c++)
				d[c] = 0.0f;
		}
	}
}

void GEMM_STEP_FN(const struct vtpu_gemm_step *st, void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	float *bp = scratch;
	float *ap = bp + (u64)VTPU_GEMM_KC * VTPU_GEMM_NT_MAX;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	u64 ldc = g->ldc;
	u32 kc = st->kc, i, j;

	gemm_pack_b(bp, g, st->p0, kc, st->j0, st->nt);
	gemm_pack_a(ap, g, st->i0, st->mt, st->p0, kc);

	for (i = 0; i < st->mt; i += GEMM_MR) {
		u32 mr = gemm_min(GEMM_MR, st->mt - i);
		float *c = g->c + (u64)(st->i0 + i) * ldc + st->j0;
		const float *a = ap + (u64)i * kc;

		for (j = 0; j < st->nt; j += GEMM_NR)
			gemm_ukr(kc, a, bp + (u64)j * kc, c + j, ldc, mr,
				 gemm_min(GEMM_NR, st->nt - j), g->alpha,
				 st->beta, bias ? bias + j : NULL, relu);
	}
}
