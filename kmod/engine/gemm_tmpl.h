/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The GEMM macro-kernel, instantiated once per SIMD level and microtile:
 * gemm.c (portable), gemm_avx2.c, gemm_avx512.c (the 14 x 32 kernel) and
 * gemm_narrow_avx512.c (the narrow one) each define
 *
 *   GEMM_MR, GEMM_NR   the microtile (rows x columns of the packed panels)
 *   GEMM_STEP_FN       the name of the exported step function (without
 *                      it, only the packing functions are defined)
 *   GEMM_SUFFIX        optional: appended to the names of this
 *                      instantiation's functions (GEMM_FN()), so that a
 *                      file can include this more than once
 *   GEMM_VW            optional: floats per vector (8 or 16), for the
 *                      width-generic vector helpers below (GEMM_VEC, the
 *                      type, gemm_loadu(), gemm_loadu_bf16(), gemm_storeu(),
 *                      gemm_tr(), gemm_relu(), gemm_store_row()) and vector
 *                      packing
 *
 * then include this file, and then define GEMM_FN(gemm_ukr) (declared
 * here when GEMM_STEP_FN is defined), so that packing and the loops around
 * the microkernel are compiled with the level's instruction set and
 * constant panel sizes. Before including it again, undefine GEMM_MR,
 * GEMM_NR, GEMM_STEP_FN and GEMM_SUFFIX. A file whose kernels pack nothing
 * may define GEMM_VW alone: it then gets only the width-generic helpers.
 *
 * Packed layouts (zero-padded past the matrix edge), always f32: bf16
 * operands are widened while packing, which is exact:
 *   A micro-panel: ap[p * MR + r] = op(A)[i0 + r][p0 + p]
 *   B micro-panel: bp[p * NR + c] = op(B)[p0 + p][j0 + c]
 */
#if !defined(GEMM_MR) && !defined(GEMM_VW)
#error "define GEMM_MR and GEMM_NR, or GEMM_VW, before including this"
#endif

/* ---- once per file: what does not depend on the microtile ---------------- */

#ifndef VTPU_GEMM_TMPL_COMMON
#define VTPU_GEMM_TMPL_COMMON

#define GEMM_CAT2(a, b) a##b
#define GEMM_CAT(a, b) GEMM_CAT2(a, b)

/*
 * Packing reads the operands once per tile, mostly from L3 or memory:
 * prefetch a few stored rows ahead (the hardware prefetcher does not
 * cross pages, and each stored row may be its own page). Prefetches past
 * the end of a matrix are harmless (they never fault).
 */
#define GEMM_PF_ROWS 3

/* The cache lines of @n elements of 1 << @shift bytes from element @idx. */
static inline void gemm_prefetch_row(const void *base, u64 idx, u32 n,
				     u32 shift)
{
	const u8 *p = (const u8 *)base + (idx << shift);
	u32 i, bytes = n << shift;

	for (i = 0; i < bytes; i += 64)
		__builtin_prefetch(p + i);
}

/* Stored rows per block in the row-wise packs. */
#define GEMM_PB 8

static inline u32 gemm_min(u32 a, u32 b)
{
	return a < b ? a : b;
}

static inline float gemm_bf16(const void *p, u64 idx)
{
	u32 bits = (u32)((const u16 *)p)[idx] << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Element @idx of a stored matrix: bf16 (@h, widened) or f32. */
static __always_inline float gemm_elem(const void *base, u64 idx, bool h)
{
	return h ? gemm_bf16(base, idx) : ((const float *)base)[idx];
}

/*
 * For arrays of vectors that are written before they are read: a kernel
 * built with -ftrivial-auto-var-init=zero would clear them on every call
 * (a kilobyte per transpose in the packing loops).
 */
#if defined(__has_attribute)
#if __has_attribute(__uninitialized__)
#define GEMM_NOINIT __attribute__((__uninitialized__))
#endif
#endif
#ifndef GEMM_NOINIT
#define GEMM_NOINIT
#endif

#ifdef GEMM_VW
/*
 * The level's vectors, GEMM_VW lanes, and what every vector level does
 * with them the same way at its own width. GCC vector extensions instead
 * of <immintrin.h>, which the kernel build cannot use.
 */
#define GEMM_VEC float __attribute__((vector_size(4 * GEMM_VW)))
#define GEMM_VEC_I int __attribute__((vector_size(4 * GEMM_VW)))
#define GEMM_VEC_U unsigned int __attribute__((vector_size(4 * GEMM_VW)))
#define GEMM_VEC_H unsigned short __attribute__((vector_size(2 * GEMM_VW)))

static inline GEMM_VEC gemm_loadu(const float *p)
{
	GEMM_VEC v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

/* GEMM_VW bf16 widened to f32 (exact: the bits go to the top half) */
static inline GEMM_VEC gemm_loadu_bf16(const u16 *p)
{
	GEMM_VEC_H h;

	__builtin_memcpy(&h, p, sizeof(h));
	return (GEMM_VEC)(__builtin_convertvector(h, GEMM_VEC_U) << 16);
}

static inline void gemm_storeu(float *p, GEMM_VEC v)
{
	__builtin_memcpy(p, &v, sizeof(v));
}

/* The integer vector of f(lane, b), lane by lane */
#define GEMM_LANES8(f, b)                                                      \
	((GEMM_VEC_I){ f(0, b), f(1, b), f(2, b), f(3, b), f(4, b), f(5, b),   \
		       f(6, b), f(7, b) })
#define GEMM_LANES16(f, b)                                                     \
	((GEMM_VEC_I){ f(0, b), f(1, b), f(2, b), f(3, b), f(4, b), f(5, b),   \
		       f(6, b), f(7, b), f(8, b), f(9, b), f(10, b), f(11, b), \
		       f(12, b), f(13, b), f(14, b), f(15, b) })
#define GEMM_LANES(f, b) GEMM_CAT(GEMM_LANES, GEMM_VW)(f, b)

/*
 * Stage @b of the transpose swaps bit @b of the row and the column index:
 * rows r and r + b (r without bit b) become the two shuffles of the pair,
 * @lo and @hi, whose lane indices GEMM_TR_LO() and GEMM_TR_HI() give.
 */
#define GEMM_TR_LO(i, b) ((i) & (b) ? (i) - (b) + GEMM_VW : (i))
#define GEMM_TR_HI(i, b) ((i) & (b) ? (i) + GEMM_VW : (i) + (b))

static __always_inline void gemm_tr_stage(GEMM_VEC *v, u32 b, GEMM_VEC_I lo,
					  GEMM_VEC_I hi)
{
	u32 r;

#pragma GCC unroll 16
	for (r = 0; r < GEMM_VW; r++) {
		if (!(r & b)) {
			GEMM_VEC x = v[r], y = v[r + b];

			v[r] = __builtin_shuffle(x, y, lo);
			v[r + b] = __builtin_shuffle(x, y, hi);
		}
	}
}

#define GEMM_TR_STAGE(v, b)                                                    \
	gemm_tr_stage(v, b, GEMM_LANES(GEMM_TR_LO, b),                         \
		      GEMM_LANES(GEMM_TR_HI, b))

/*
 * Transpose GEMM_VW x GEMM_VW in place: one bit of row and column index
 * swapped per stage, each a pair of two-source shuffles per row pair.
 */
static inline void gemm_tr(GEMM_VEC *v)
{
	GEMM_TR_STAGE(v, 1);
	GEMM_TR_STAGE(v, 2);
	GEMM_TR_STAGE(v, 4);
#if GEMM_VW > 8
	GEMM_TR_STAGE(v, 8);
#endif
}

/* max(x, 0) that keeps NaN (and -0) */
static inline GEMM_VEC gemm_relu(GEMM_VEC x)
{
	GEMM_VEC zero = { 0 };

	return (GEMM_VEC)((GEMM_VEC_I)x & ~(GEMM_VEC_I)(x < zero));
}

/*
 * A row of two vectors of a microtile, @x0 and @x1, into C at @c with the
 * epilogue: alpha, beta * C (C unread when beta == 0), bias, ReLU.
 */
static inline void gemm_store_row(float *c, GEMM_VEC x0, GEMM_VEC x1,
				  float alpha, float beta, const float *bias,
				  u32 relu)
{
	x0 *= alpha;
	x1 *= alpha;
	if (beta != 0.0f) {
		x0 += beta * gemm_loadu(c);
		x1 += beta * gemm_loadu(c + GEMM_VW);
	}
	if (bias) {
		x0 += gemm_loadu(bias);
		x1 += gemm_loadu(bias + GEMM_VW);
	}
	if (relu) {
		x0 = gemm_relu(x0);
		x1 = gemm_relu(x1);
	}
	gemm_storeu(c, x0);
	gemm_storeu(c + GEMM_VW, x1);
}

/* GEMM_VW elements from @idx on, as floats. */
static __always_inline GEMM_VEC gemm_ldv(const void *base, u64 idx, bool h)
{
	return h ? gemm_loadu_bf16((const u16 *)base + idx) :
		   gemm_loadu((const float *)base + idx);
}
#endif

/*
 * The transposing pack (A stored m x k, B stored n x k): @rows stored rows
 * from element @src on, @ld apart, k 0..kc of each, into a panel with
 * d[p * w + r] (columns r past @rows zero); @w is MR or NR, a constant
 * once inlined. With vectors, GEMM_VW k at a time through gemm_tr(), each
 * result vector stored whole: with w < GEMM_VW a store runs GEMM_VW - w
 * floats into the next k's slot (rewritten by the next store) and, at the
 * end of the panel, into the scratch's slack.
 */
static __always_inline void gemm_pack_tr(float *d, u32 w, const void *m,
					 u64 src, u64 ld, u32 kc, u32 rows,
					 bool h)
{
	u32 p = 0, q, r;

#ifdef GEMM_VW
	for (; p + GEMM_VW <= kc; p += GEMM_VW) {
		for (q = 0; q < w; q += GEMM_VW) {
			u32 nv = q < rows ? gemm_min(GEMM_VW, rows - q) : 0;
			u64 s = src + q * ld + p;
			GEMM_VEC v[GEMM_VW] GEMM_NOINIT;

			/* unrolled, so that v can live in registers */
#pragma GCC unroll 16
			for (r = 0; r < GEMM_VW; r++, s += ld) {
				v[r] = (GEMM_VEC){ 0 };
				if (r < nv) {
					gemm_prefetch_row(m, s + 4 * GEMM_VW, 1,
							  2 - h);
					v[r] = gemm_ldv(m, s, h);
				}
			}
			gemm_tr(v);
			for (r = 0; r < GEMM_VW; r++)
				gemm_storeu(d + (p + r) * w + q, v[r]);
		}
	}
#endif
	/* the rest (all of it without vectors), a stored row at a time */
	for (r = 0; r < rows; r++)
		for (q = p; q < kc; q++)
			d[q * w + r] = gemm_elem(m, src + r * ld + q, h);
	for (; r < w; r++)
		for (q = p; q < kc; q++)
			d[q * w + r] = 0.0f;
}

/*
 * @n stored rows (@kc elements each) into panels of @w rows, @dstride
 * floats apart (kc * w when the panels hold just these @kc).
 */
static __always_inline void gemm_pack_tr_panels(float *d, u64 dstride, u32 w,
						const void *m, u64 src, u64 ld,
						u32 kc, u32 n, bool h)
{
	u32 i;

	for (i = 0; i < n; i += w, d += dstride, src += w * ld) {
		/* two copies: full panels with a constant row count */
		if (n - i >= w)
			gemm_pack_tr(d, w, m, src, ld, kc, w, h);
		else
			gemm_pack_tr(d, w, m, src, ld, kc, n - i, h);
	}
}

/* @n (a multiple of GEMM_VW, or any without vectors) elements of a row. */
static __always_inline void gemm_copy_row(float *d, const void *base, u64 idx,
					  u32 n, bool h)
{
	u32 i;

#ifdef GEMM_VW
	for (i = 0; i < n; i += GEMM_VW)
		*(GEMM_VEC *)(d + i) = gemm_ldv(base, idx + i, h);
#else
	if (!h) {
		__builtin_memcpy(d, (const float *)base + idx, n * 4);
		return;
	}
	for (i = 0; i < n; i++)
		d[i] = gemm_bf16(base, idx + i);
#endif
}

#endif /* VTPU_GEMM_TMPL_COMMON */

#ifdef GEMM_MR

/* ---- per microtile -------------------------------------------------------- */

#undef GEMM_FN
#ifdef GEMM_SUFFIX
#define GEMM_FN(name) GEMM_CAT(name, GEMM_SUFFIX)
#else
#define GEMM_FN(name) name
#endif

#ifdef GEMM_STEP_FN
/*
 * C[mr x nr] := act(alpha * A*B + beta * C + bias): @a and @b are packed
 * micro-panels of @kc; C is never read when @beta == 0; @bias (NULL: none)
 * points at this microtile's first column; @relu as VTPU_GEMM_RELU.
 */
static void GEMM_FN(gemm_ukr)(u32 kc, const float *a, const float *b,
			      float *c, u64 ldc, u32 mr, u32 nr, float alpha,
			      float beta, const float *bias, u32 relu);
#endif

/* An accumulated microtile @t (MR x NR, row-major) into C, element-wise. */
static inline void GEMM_FN(gemm_store_edge)(const float *t, float *c, u64 ldc,
					    u32 mr, u32 nr, float alpha,
					    float beta, const float *bias,
					    u32 relu)
{
	u32 i, j;

	for (i = 0; i < mr; i++, t += GEMM_NR, c += ldc) {
		for (j = 0; j < nr; j++) {
			float x = alpha * t[j];

			if (beta != 0.0f)
				x += beta * vtpu_ld_reg(&c[j]);
			if (bias)
				x += bias[j];
			if (relu && x < 0.0f)
				x = 0.0f;
			c[j] = x;
		}
	}
}

/*
 * A convolution's implicit A (g->implicit), stored m x k: rows i0..i0+mt
 * of the im2col of the image, gathered MR rows at a time into @tmp (MR x
 * kc, row-major) and transposed into the panels as a stored A would be.
 */
static noinline void GEMM_FN(gemm_pack_a_im2col)(float *ap,
						  const struct vtpu_engine_gemm *g,
						  u32 i0, u32 mt, u32 p0,
						  u32 kc, float *tmp)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 run = (u64)w->kw * w->c, ox, oy, n;
	u32 ky = (u32)(p0 / run), i, r;
	u64 q = p0 - ky * run;

	vtpu_xy_of(i0, w->ow, w->oh, &ox, &oy, &n);
	for (i = 0; i < mt; i += GEMM_MR, ap += (u64)kc * GEMM_MR) {
		u32 rows = gemm_min(GEMM_MR, mt - i);

		for (r = 0; r < rows; r++) {
			vtpu_im2col_cols(w, g->a, n, oy, ox, ky, q, kc,
					 tmp + (u64)r * kc);
			vtpu_next_xy(&ox, &oy, &n, w->ow, w->oh);
		}
		if (rows == GEMM_MR)
			gemm_pack_tr(ap, GEMM_MR, tmp, 0, kc, kc, GEMM_MR,
				     false);
		else
			gemm_pack_tr(ap, GEMM_MR, tmp, 0, kc, kc, rows, false);
	}
}

/*
 * The tile's A block, rows i0..i0+mt, k p0..p0+kc, as consecutive MR-row
 * panels (kc * MR floats each). Stored rows are read in order so that the
 * hardware prefetcher follows (a panel at a time would touch a new page
 * per k when A is stored k x m). @h: A is bf16. A convolution's implicit
 * A is gathered into the scratch's gather area (gemm.h), after @ap's.
 */
static __always_inline void GEMM_FN(gemm_pack_a_dt)(float *ap,
						    const struct vtpu_engine_gemm *g,
						    u32 i0, u32 mt, u32 p0,
						    u32 kc, bool h)
{
	u64 lda = g->lda, pstride = (u64)kc * GEMM_MR;
	u32 full = mt / GEMM_MR, rest = mt - full * GEMM_MR;
	float *tmp = ap + (VTPU_GEMM_GATHER_OFF - VTPU_GEMM_A_OFF);
	const void *a = g->a;
	u64 src = (u64)p0 * lda + i0;
	u64 run, q = 0, ox = 0, oy = 0, n = 0;
	u32 p, r, i, ky = 0;

	if (!(g->flags & VTPU_GEMM_TRANS_A)) {
		if (g->implicit) {
			GEMM_FN(gemm_pack_a_im2col)(ap, g, i0, mt, p0, kc, tmp);
			return;
		}
		/* stored m x k: transpose MR rows at a time */
		gemm_pack_tr_panels(ap, (u64)kc * GEMM_MR, GEMM_MR, g->a,
				    (u64)i0 * lda + p0, lda, kc, mt, h);
		return;
	}
	/* stored k x m: row p holds all the block's rows */
	if (g->implicit) {
		/* A's row p is im2col row p0 + p, from column i0 on */
		run = (u64)g->win.kw * g->win.c;
		ky = (u32)(i0 / run);
		q = i0 - ky * run;
		vtpu_xy_of(p0, g->win.ow, g->win.oh, &ox, &oy, &n);
	}
	for (p = 0; p < kc; p++, src += lda) {
		float *d = ap + p * GEMM_MR;

		if (g->implicit) {
			/* the row, gathered (f32: h is false) */
			vtpu_im2col_cols(&g->win, g->a, n, oy, ox, ky, q, mt,
					 tmp);
			vtpu_next_xy(&ox, &oy, &n, g->win.ow, g->win.oh);
			a = tmp;
			src = 0;
		} else {
			gemm_prefetch_row(a, src + GEMM_PF_ROWS * lda, mt,
					  2 - h);
		}
		for (i = 0; i < full; i++, d += pstride) {
			if (h)
				for (r = 0; r < GEMM_MR; r++)
					d[r] = gemm_bf16(a,
							 src + i * GEMM_MR + r);
			else
				__builtin_memcpy(d, (const float *)a + src +
						 i * GEMM_MR, GEMM_MR * 4);
		}
		/* one loop: a zero-fill loop would become a memset call */
		for (r = 0; rest && r < GEMM_MR; r++) {
			u64 s = src + full * GEMM_MR + r;

			d[r] = r < rest ? gemm_elem(a, s, h) : 0.0f;
		}
	}
}

/*
 * CONV_DGRAD's B (g->flip_oc): the weights W [taps * n, oc] turned, B[(t,
 * o)][j] = W[(taps - 1 - t) * n + j][o]. Within one tap t, B's rows are
 * W's tap taps - 1 - t, stored n x oc: each tap's run of k packs as a
 * stored n x k block of leading dimension oc.
 */
static noinline void GEMM_FN(gemm_pack_b_flip)(float *bp,
						      const struct vtpu_engine_gemm *g,
						      u32 p0, u32 kc, u32 j0,
						      u32 nt)
{
	u32 oc = g->flip_oc, taps = g->k / oc, j, p, t, o, len;

	for (j = 0; j < nt; j += GEMM_NR, bp += (u64)kc * GEMM_NR) {
		u32 cols = gemm_min(GEMM_NR, nt - j);

		for (p = 0; p < kc; p += len) {
			u64 src;

			t = (p0 + p) / oc;
			o = p0 + p - t * oc;
			len = gemm_min(oc - o, kc - p);
			src = ((u64)(taps - 1 - t) * g->n + j0 + j) * oc + o;
			if (cols == GEMM_NR)
				gemm_pack_tr(bp + (u64)p * GEMM_NR, GEMM_NR,
					     g->b, src, oc, len, GEMM_NR,
					     false);
			else
				gemm_pack_tr(bp + (u64)p * GEMM_NR, GEMM_NR,
					     g->b, src, oc, len, cols, false);
		}
	}
}

/*
 * @kc rows of @nt columns of a row-major matrix (from element @src, rows
 * @ldb apart) as consecutive NR-column panels (kc * NR floats each).
 * GEMM_PB rows at a time, panel by panel, so that reads stay on a few
 * pages and writes are sequential (row by row across panels, every write
 * would hit the same L1 set: panels are a power of two apart).
 */
static __always_inline void GEMM_FN(gemm_pack_b_rows)(float *bp,
						      const void *b, u64 src,
						      u64 ldb, u32 kc, u32 nt,
						      bool h)
{
	u64 pstride = (u64)kc * GEMM_NR;
	u32 full = nt / GEMM_NR, rest = nt - full * GEMM_NR;
	u32 p, c, j, q;

	for (p = 0; p < kc; p += GEMM_PB, src += GEMM_PB * ldb) {
		u32 pb = gemm_min(GEMM_PB, kc - p);
		float *d = bp + p * GEMM_NR;

		for (q = 0; q < pb; q++)
			gemm_prefetch_row(b, src + (GEMM_PB + q) * ldb, nt,
					  2 - h);
		for (j = 0; j < full; j++, d += pstride)
			for (q = 0; q < pb; q++)
				gemm_copy_row(d + q * GEMM_NR, b,
					      src + q * ldb + j * GEMM_NR,
					      GEMM_NR, h);
		for (q = 0; rest && q < pb; q++) {
			u64 s = src + q * ldb + full * GEMM_NR;
			float *dq = d + q * GEMM_NR;

			/* as in gemm_pack_a_dt(): no zero-fill loop */
			for (c = 0; c < GEMM_NR; c++)
				dq[c] = c < rest ? gemm_elem(b, s + c, h) :
						   0.0f;
		}
	}
}

/*
 * B stored in panels (VTPU_GEMM_B_PANELS, f32): panel q of the stored
 * matrix holds its columns q * P.. q * P + P - 1 (P = VTPU_GEMM_PANEL),
 * row after row, P apart. The tile's block is packed a run of columns
 * within one panel at a time: each run is a row-major block of leading
 * dimension P. NR divides P and tiles start at multiples of NR, so runs
 * start at multiples of NR too.
 */
static noinline void GEMM_FN(gemm_pack_b_panels)(float *bp,
						 const struct vtpu_engine_gemm *g,
						 u32 p0, u32 kc, u32 j0,
						 u32 nt)
{
	const u32 w = VTPU_GEMM_PANEL;
	u32 p, j, len, o;
	u64 q;

	if (!(g->flags & VTPU_GEMM_TRANS_B)) {
		/* stored k x n: a run of B's columns */
		for (j = 0; j < nt; j += len) {
			q = (j0 + j) / w;
			o = (j0 + j) % w;
			len = gemm_min(w - o, nt - j);
			GEMM_FN(gemm_pack_b_rows)(bp + (u64)j * kc, g->b,
						  (q * g->k + p0) * w + o, w,
						  kc, len, false);
		}
		return;
	}
	/* stored n x k: rows p.. of every NR-column panel from one k-panel */
	for (p = 0; p < kc; p += len) {
		q = (p0 + p) / w;
		o = (p0 + p) % w;
		len = gemm_min(w - o, kc - p);
		gemm_pack_tr_panels(bp + (u64)p * GEMM_NR, (u64)kc * GEMM_NR,
				    GEMM_NR, g->b, (q * g->n + j0) * w + o, w,
				    len, nt, false);
	}
}

/*
 * The tile's B block, k p0..p0+kc, columns j0..j0+nt, as consecutive
 * NR-column panels (kc * NR floats each). @h: B is bf16.
 */
static __always_inline void GEMM_FN(gemm_pack_b_dt)(float *bp,
						    const struct vtpu_engine_gemm *g,
						    u32 p0, u32 kc, u32 j0,
						    u32 nt, bool h)
{
	u64 ldb = g->ldb;

	if (g->flip_oc) {
		GEMM_FN(gemm_pack_b_flip)(bp, g, p0, kc, j0, nt);
		return;
	}
	if (g->flags & VTPU_GEMM_B_PANELS) {
		GEMM_FN(gemm_pack_b_panels)(bp, g, p0, kc, j0, nt);
		return;
	}
	if (g->flags & VTPU_GEMM_TRANS_B) {
		/* stored n x k: transpose NR columns at a time */
		gemm_pack_tr_panels(bp, (u64)kc * GEMM_NR, GEMM_NR, g->b,
				    (u64)j0 * ldb + p0, ldb, kc, nt, h);
		return;
	}
	/* stored k x n */
	GEMM_FN(gemm_pack_b_rows)(bp, g->b, (u64)p0 * ldb + j0, ldb, kc, nt, h);
}

/* One copy of each pack per dtype, with constant panel sizes. */
static void GEMM_FN(gemm_pack_a)(float *ap, const struct vtpu_engine_gemm *g,
				 u32 i0, u32 mt, u32 p0, u32 kc)
{
	if (g->dtype == VTPU_DTYPE_BF16)
		GEMM_FN(gemm_pack_a_dt)(ap, g, i0, mt, p0, kc, true);
	else
		GEMM_FN(gemm_pack_a_dt)(ap, g, i0, mt, p0, kc, false);
}

static void GEMM_FN(gemm_pack_b)(float *bp, const struct vtpu_engine_gemm *g,
				 u32 p0, u32 kc, u32 j0, u32 nt)
{
	if (g->dtype == VTPU_DTYPE_BF16)
		GEMM_FN(gemm_pack_b_dt)(bp, g, p0, kc, j0, nt, true);
	else
		GEMM_FN(gemm_pack_b_dt)(bp, g, p0, kc, j0, nt, false);
}

/* B's panels as stored are the kernel's packed panels (AVX-512's) */
#define GEMM_PANELS_ARE_PACKED (GEMM_NR == VTPU_GEMM_PANEL)

/*
 * The step's block of B where it is stored, if B is in panels (f32,
 * whole panels: validate.c) and those are this level's packed panels:
 * each panel's k rows, the next panel's @pstride floats on. NULL if not.
 */
static inline const float *GEMM_FN(gemm_b_panels)(const struct vtpu_gemm_step *st,
						 u64 *pstride)
{
	const struct vtpu_engine_gemm *g = st->g;

	if (!GEMM_PANELS_ARE_PACKED || g->dtype != VTPU_DTYPE_F32 ||
	    g->flip_oc ||
	    (g->flags & (VTPU_GEMM_B_PANELS | VTPU_GEMM_TRANS_B)) !=
		    VTPU_GEMM_B_PANELS)
		return NULL;
	*pstride = g->k;
	return (const float *)g->b + (u64)st->j0 * g->k +
	       (u64)st->p0 * GEMM_NR;
}

#ifdef GEMM_STEP_FN
void GEMM_STEP_FN(const struct vtpu_gemm_step *st, void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	float *bp = scratch;
	float *ap = bp + VTPU_GEMM_A_OFF;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	struct vtpu_gemm_memo *memo =
		(struct vtpu_gemm_memo *)(bp + VTPU_GEMM_MEMO_OFF);
	u64 ldc = vtpu_gemm_c_ld(g), pstride = st->kc;
	u32 kc = st->kc, i, j;
	/*
	 * B's panels read where they are, as the A-in-place kernel reads
	 * them (a dense layer's weights with A's rows 4 KiB apart, which
	 * packs A: cifar10's 128 x 512 x 4096); else its packed block
	 */
	const float *b = GEMM_FN(gemm_b_panels)(st, &pstride);

	if (!b) {
		b = bp;
		/* not the block this worker's previous call of the op left? */
		if (memo->seq != st->seq || memo->b != g->b ||
		    memo->j0 != st->j0 || memo->nt != st->nt ||
		    memo->p0 != st->p0 || memo->kc != kc) {
			GEMM_FN(gemm_pack_b)(bp, g, st->p0, kc, st->j0,
					     st->nt);
			*memo = (struct vtpu_gemm_memo){ st->seq, g->b,
							 st->j0, st->nt,
							 st->p0, kc };
		}
	}
	GEMM_FN(gemm_pack_a)(ap, g, st->i0, st->mt, st->p0, kc);

	for (i = 0; i < st->mt; i += GEMM_MR) {
		u32 mr = gemm_min(GEMM_MR, st->mt - i);
		const float *a = ap + (u64)i * kc;

		for (j = 0; j < st->nt; j += GEMM_NR)
			GEMM_FN(gemm_ukr)(kc, a, b + (u64)j * pstride,
					  vtpu_gemm_c_at(g, st->i0 + i,
							 st->j0 + j),
					  ldc,
					  mr, gemm_min(GEMM_NR, st->nt - j),
					  g->alpha, st->beta,
					  bias ? bias + j : NULL, relu);
	}
}
#endif /* GEMM_STEP_FN */

#endif /* GEMM_MR */
