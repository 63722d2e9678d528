// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM for AVX-512F: a 14 x 32 microkernel (28 zmm accumulators, two zmm
 * of B per k, A broadcast from memory), and its variants that read A's
 * rows as gathered (CONV, CONV_DGRAD) or as stored (a plain f32 GEMM),
 * or A^T B's two operands as stored (a weight gradient).
 * Compiled with -mavx512f; GCC vector extensions and builtins instead of
 * <immintrin.h>, which the kernel build cannot use. The level's other
 * kernels, and what they share with these, are named in gemm_avx512.h.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-ins for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_rows(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_ain(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_atb(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

#define GEMM_MR VTPU_GEMM_AVX512_MR
#define GEMM_NR VTPU_GEMM_AVX512_NR
#define GEMM_STEP_FN vtpu_gemm_step_avx512

#include "gemm_tmpl.h"

/*
 * A microtile of @rows rows (a constant) from A's element (r, p) at
 * a[r * @rs + p * @ps]: the k loop, then the store.
 */
static __always_inline void ukr_run(u32 kc, const float *a, const float *b,
				    float *c, u64 ldc, u32 mr, u32 nr,
				    float alpha, float beta, const float *bias,
				    u32 relu, u32 rs, u32 ps, u32 rows, u64 bs)
{
	V16F acc[GEMM_MR][2];

	if (ENGINE_LIKELY(nr > 16))
		ukr_acc_bs(kc, a, b, acc, 2, rs, ps, rows, bs);
	else
		ukr_acc_bs(kc, a, b, acc, 1, rs, ps, rows, bs);
	ukr_store(acc, c, ldc, mr, nr, alpha, beta, bias, relu, rows);
}

/*
 * A tile's last microtile of at most UKR_SHORT rows runs on 8 rows: with
 * 16 accumulators the FMAs still hide their latency and outnumber the
 * loads, so its FMAs cost what they do in a full microtile, and there
 * are only 8 rows of them, not 14. (Tiles of 64 rows, 4 * 14 + 8, then
 * compute no padding; vtpu_gemm_prepare() sizes them so.)
 */
#define UKR_SHORT VTPU_GEMM_AVX512_MR_SHORT

static void gemm_ukr(u32 kc, const float *a, const float *b, float *c,
		     u64 ldc, u32 mr, u32 nr, float alpha, float beta,
		     const float *bias, u32 relu)
{
	if (mr <= UKR_SHORT)
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu, 1,
			GEMM_MR, UKR_SHORT, GEMM_NR);
	else
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu, 1,
			GEMM_MR, GEMM_MR, GEMM_NR);
}

/*
 * The k loop of a microtile of @rows rows whose A rows are read where
 * they are. The k block's @kc columns are runs of @run, the first from
 * its column @q on: row r's first run starts at base[r], its s-th (s >
 * 0) at column 0 of base[r] - q + s * step[r]. A row of the image read
 * in place has step w * c (a tap row); a row gathered into the scratch
 * has step run. The sums are ukr_acc_bs()'s, in its order.
 */
static __always_inline void ukr_acc_runs(u32 kc, u32 q, u64 run,
					 const float *const *base,
					 const u64 *step, const float *b,
					 V16F acc[GEMM_MR][2], u32 nv,
					 u32 rows)
{
	u32 s, r, t;

#pragma GCC unroll 14
	for (r = 0; r < rows; r++)
		acc[r][0] = acc[r][1] = (V16F){ 0 };
	for (s = 0; kc; s++) {
		u32 len = (u32)vtpu_min_u64(run - (s ? 0 : q), kc);
		const float *pp[GEMM_MR];

#pragma GCC unroll 14
		for (r = 0; r < rows; r++)
			pp[r] = base[r] + (s ? s * step[r] - q : 0);
		for (t = 0; t < len; t++, b += GEMM_NR) {
			V16F b0 = gemm_loadu(b);
			V16F b1 = gemm_loadu(b + 16);

#pragma GCC unroll 14
			for (r = 0; r < rows; r++) {
				float av = pp[r][t];

				acc[r][0] += av * b0;
				if (nv == 2)
					acc[r][1] += av * b1;
			}
		}
		kc -= len;
	}
}

/* ukr_acc_runs() on @rows rows (a constant), then the store */
static __always_inline void ukr_runs(u32 kc, u32 q, u64 run,
				     const float *const *base,
				     const u64 *step, const float *b,
				     float *c, u64 ldc, u32 mr, u32 nr,
				     float alpha, float beta,
				     const float *bias, u32 relu, u32 rows)
{
	V16F acc[GEMM_MR][2];

	if (ENGINE_LIKELY(nr > 16))
		ukr_acc_runs(kc, q, run, base, step, b, acc, 2, rows);
	else
		ukr_acc_runs(kc, q, run, base, step, b, acc, 1, rows);
	ukr_store(acc, c, ldc, mr, nr, alpha, beta, bias, relu, rows);
}

/*
 * One function per row count: inlined into one, their frames added up
 * past the kernel's bound.
 */
static noinline void ukr_runs_short(u32 kc, u32 q, u64 run,
				    const float *const *base,
				    const u64 *step, const float *b,
				    float *c, u64 ldc, u32 mr, u32 nr,
				    float alpha, float beta,
				    const float *bias, u32 relu)
{
	ukr_runs(kc, q, run, base, step, b, c, ldc, mr, nr, alpha, beta,
		 bias, relu, UKR_SHORT);
}

static noinline void ukr_runs_full(u32 kc, u32 q, u64 run,
				   const float *const *base, const u64 *step,
				   const float *b, float *c, u64 ldc, u32 mr,
				   u32 nr, float alpha, float beta,
				   const float *bias, u32 relu)
{
	ukr_runs(kc, q, run, base, step, b, c, ldc, mr, nr, alpha, beta,
		 bias, relu, GEMM_MR);
}

/* A microtile of mr rows on 8 rows if they are few, else on 14 */
static void gemm_ukr_runs(u32 kc, u32 q, u64 run, const float *const *base,
			  const u64 *step, const float *b, float *c, u64 ldc,
			  u32 mr, u32 nr, float alpha, float beta,
			  const float *bias, u32 relu)
{
	if (mr <= UKR_SHORT)
		ukr_runs_short(kc, q, run, base, step, b, c, ldc, mr, nr,
			       alpha, beta, bias, relu);
	else
		ukr_runs_full(kc, q, run, base, step, b, c, ldc, mr, nr,
			      alpha, beta, bias, relu);
}

/* A vector at @d, whole while it fits before @room */
static __always_inline void edge_store(float *d, V16F v, const float *room)
{
	if (d + 16 <= room)
		gemm_storeu(d, v);
	else
		gemm_maskstore(d, v, gemm_mask((u32)(room - d)));
}

/* Zeros in [d, d + len), and maybe some after it before @room */
static __always_inline void edge_zero(float *d, u64 len, const float *room)
{
	u64 t;

	for (t = 0; t < len; t += 16)
		edge_store(d + t, (V16F){ 0 }, room);
}

/*
 * vtpu_im2col_cols() a vector at a time, for a window over the edge:
 * @kc columns of im2col row (n, oy, ox) from column (ky, q) on, into @d,
 * a row of VTPU_GEMM_KC floats. A run is its zeros before the image, its
 * columns in the image and its zeros after, in that order, each written
 * in whole vectors whose lanes past the part are the next part's to
 * rewrite (or the next run's, or past kc in the row's room). No load is
 * masked but one that would read past the image: a masked load behind
 * these stores waited for them, a quarter of a 7 x 7 convolution's time.
 */
static void edge_gather(const struct vtpu_engine_window *w,
			const float *image, u64 n, u64 oy, u64 ox, u32 ky,
			u64 q, u32 kc, float *d)
{
	u64 run = (u64)w->kw * w->c, t;
	s64 ix0 = (s64)(ox * w->sw) - w->pw;
	s64 iy = (s64)(oy * w->sh + ky) - w->ph;
	/* the run's columns in the image */
	u64 lo = ix0 < 0 ? (u64)-ix0 * w->c : 0;
	u64 hi = ix0 + w->kw > w->w ? (u64)(w->w - ix0) * w->c : run;
	const float *room = d + VTPU_GEMM_KC;
	const float *end = image + (u64)w->n * w->h * w->w * w->c;

	for (; kc; q = 0, iy++) {
		u32 len = (u32)vtpu_min_u64(run - q, kc);
		u64 a = q > lo ? q : lo, b = vtpu_min_u64(hi, q + len);

		if (iy >= 0 && iy < w->h && a < b) {
			/* column a of the run, in the image */
			const float *src = image +
				((n * w->h + (u64)iy) * w->w) * w->c +
				(u64)(ix0 * (s64)w->c + (s64)a);

			edge_zero(d, a - q, room);
			for (t = 0; t < b - a; t += 16)
				edge_store(d + (a - q) + t,
					   src + t + 16 <= end ?
					   gemm_loadu(src + t) :
					   gemm_maskload(src + t, gemm_mask(
						(u32)vtpu_min_u64(b - a - t,
								  16))),
					   room);
			edge_zero(d + (b - q), q + len - b, room);
		} else {
			edge_zero(d, len, room);
		}
		d += len;
		kc -= len;
	}
}

/*
 * A step of CONV or CONV_DGRAD (g->implicit, A stored m x k): the packed
 * GEMM gathers each im2col row and then transposes MR of them at a time
 * into a panel, and with 32 or 64 filters each element then meets only
 * two or four vectors of B. Here A's rows are read as they are, by a
 * microkernel that broadcasts from each row's runs of kw * c floats: a
 * window inside the image in place (its runs one image row apart), a
 * window over the edge gathered with its zeros into the scratch first.
 * Copying every window cost as much as its FMAs with few channels (a 7 x
 * 7 first layer on RGB), and the transpose's shuffles (on the port that
 * also does FMAs) are gone too; the sums are the same, in the same order,
 * so the results are the packed kernel's bits.
 */
void vtpu_gemm_step_avx512_rows(const struct vtpu_gemm_step *st,
				void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	const float *image = g->a;
	float *bp = scratch;
	float *ap = bp + VTPU_GEMM_A_OFF;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	u64 run = (u64)w->kw * w->c, ox, oy, n;
	u64 wc = (u64)w->w * w->c;
	u32 kc = st->kc, ky = (u32)(st->p0 / run), i, j;
	u64 q = st->p0 - ky * run;
	/* the k block's last tap row */
	u32 ky_last = (u32)((st->p0 + kc - 1) / run);
	const float *base[GEMM_MR];
	u64 step[GEMM_MR];

	gemm_pack_b(bp, g, st->p0, kc, st->j0, st->nt);
	vtpu_xy_of(st->i0, w->ow, w->oh, &ox, &oy, &n);
	for (i = 0; i < st->mt; i += GEMM_MR) {
		u32 mr = gemm_min(GEMM_MR, st->mt - i), r;
		float *c = g->c + (u64)(st->i0 + i) * g->ldc + st->j0;

		for (r = 0; r < mr; r++) {
			s64 ix0 = (s64)(ox * w->sw) - w->pw;
			s64 iy0 = (s64)(oy * w->sh) - w->ph;

			if (ix0 < 0 || ix0 + w->kw > w->w || iy0 + ky < 0 ||
			    iy0 + ky_last >= w->h) {
				float *d = ap + (u64)r * VTPU_GEMM_KC;

				edge_gather(w, image, n, oy, ox, ky, q, kc, d);
				base[r] = d;
				step[r] = run;
			} else {
				base[r] = image + ((n * w->h + (u64)iy0 + ky) *
						   w->w + (u64)ix0) * w->c + q;
				step[r] = wc;
			}
			vtpu_next_xy(&ox, &oy, &n, w->ow, w->oh);
		}
		/* rows past the tile: any row's, as they are not stored */
		for (; r < GEMM_MR; r++) {
			base[r] = base[0];
			step[r] = step[0];
		}
		for (j = 0; j < st->nt; j += GEMM_NR)
			gemm_ukr_runs(kc, (u32)q, run, base, step,
				      bp + (u64)j * kc, c + j, g->ldc, mr,
				      gemm_min(GEMM_NR, st->nt - j), g->alpha,
				      st->beta, bias ? bias + j : NULL, relu);
	}
}

/*
 * How many of @mt rows run as 14-row microtiles, the rest as 8-row ones:
 * the count that computes the fewest rows (128 = 8 * 14 + 2 * 8, not
 * 9 * 14 + 8 with 6 rows of padding). As 14 = 6 (mod 8), giving up at
 * most three 14-row microtiles reaches every remainder.
 */
static u32 ain_full_tiles(u32 mt)
{
	u32 q = mt / GEMM_MR, best = q, t, cost, best_cost = ~0u;

	for (t = 0; t < 4 && t <= q; t++) {
		u32 full = (q - t) * GEMM_MR, rest = mt - full;

		cost = full + (rest + UKR_SHORT - 1) / UKR_SHORT * UKR_SHORT;
		if (cost < best_cost) {
			best_cost = cost;
			best = q - t;
		}
	}
	return best;
}

/* B's panels are read as packed ones (vtpu_gemm_step_avx512_ain()) */
_Static_assert(GEMM_NR == VTPU_GEMM_PANEL, "a panel is a microtile wide");

/*
 * A microtile of @rows (14 or 8) rows of A, @mr of them real, A's element
 * (r, p) at a[r * @rs + p * @ps], by B's rows @bs apart
 */
static __always_inline void ukr_strided(u32 kc, const float *a, u64 rs,
					u64 ps, const float *b, u64 bs,
					float *c, u64 ldc, u32 mr, u32 nr,
					float alpha, float beta,
					const float *bias, u32 relu, u32 rows)
{
	u32 r;

	/*
	 * C's rows, read after the k loop when beta is not 0: they come
	 * from wherever the previous command left them (a recurrent step
	 * adds h U to gates made long before), so their loads start now
	 */
	for (r = 0; beta != 0.0f && r < mr; r++) {
		__builtin_prefetch(c + r * ldc, 1);
		__builtin_prefetch(c + r * ldc + nr - 1, 1);
	}
	if (rows == GEMM_MR)
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu,
			rs, ps, GEMM_MR, bs);
	else
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu,
			rs, ps, UKR_SHORT, bs);
}

/*
 * ukr_strided() on A's rows @rs apart (A where it is stored m x k, or its
 * last rows copied)
 */
static noinline void ain_ukr(u32 kc, const float *a, u64 rs, const float *b,
			     u64 bs, float *c, u64 ldc, u32 mr, u32 nr,
			     float alpha, float beta, const float *bias,
			     u32 relu, u32 rows)
{
	ukr_strided(kc, a, rs, 1, b, bs, c, ldc, mr, nr, alpha, beta, bias,
		    relu, rows);
}

/*
 * ukr_strided() on A's columns, k rows @ps apart (A where it is stored k
 * x m, or its last rows, columns of the stored matrix, copied)
 */
static noinline void atb_ukr(u32 kc, const float *a, u64 ps, const float *b,
			     u64 bs, float *c, u64 ldc, u32 mr, u32 nr,
			     float alpha, float beta, const float *bias,
			     u32 relu, u32 rows)
{
	ukr_strided(kc, a, 1, ps, b, bs, c, ldc, mr, nr, alpha, beta, bias,
		    relu, rows);
}

/*
 * A tile of at most this many rows reads B where it is stored (k x n,
 * f32, whole panels): each k row of its panel is met by at most five
 * microtiles, too few to pay for packing it. A recurrent step's 64 x 128
 * x 128 products, a decoder step's dense layers.
 */
#define AIN_B_IN_PLACE_MT 64

/*
 * A plain f32 GEMM with A stored m x k (a dense layer's activations, a
 * batch of rows): the microkernel broadcasts from A's rows where they are
 * stored, lda apart, so A is never packed, and a tile can hold all of M
 * with only B's columns split among tiles: B is then packed once per
 * GEMM (vtpu_gemm_prepare()), or, for a tile of few rows, read where it
 * is stored. Rows run as 14-row microtiles and then 8-row ones
 * (ain_full_tiles()); a last partial one is copied into the scratch
 * first, so that nothing past row m is read.
 */
void vtpu_gemm_step_avx512_ain(const struct vtpu_gemm_step *st,
			       void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	float *bp = scratch;
	float *ap = bp + VTPU_GEMM_A_OFF;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	const float *a = (const float *)g->a + (u64)st->i0 * g->lda + st->p0;
	u32 kc = st->kc, lda = g->lda, mt = st->mt, i = 0, j, r, mr;
	u32 full = ain_full_tiles(mt) * GEMM_MR;
	u64 ldc = vtpu_gemm_c_ld(g), pstride = kc, bs = GEMM_NR;
	/* B's panels are the packed panels, k apart: read in place */
	const float *b = gemm_b_panels(st, &pstride);

	if (!b && !(g->flags & (VTPU_GEMM_B_PANELS | VTPU_GEMM_TRANS_B)) &&
	    !g->flip_oc && mt <= AIN_B_IN_PLACE_MT && !(st->nt % GEMM_NR)) {
		/* B's rows where they are stored, ldb apart */
		b = (const float *)g->b + (u64)st->p0 * g->ldb + st->j0;
		pstride = 1;
		bs = g->ldb;
	} else if (!b) {
		gemm_pack_b(bp, g, st->p0, kc, st->j0, st->nt);
		b = bp;
	}
	for (; i + UKR_SHORT <= mt; i += mr) {
		mr = i < full ? GEMM_MR : UKR_SHORT;
		for (r = i + mr; r < i + 2 * mr && r < mt; r++)
			gemm_prefetch_row(a, (u64)r * lda, kc, 2);
		for (j = 0; j < st->nt; j += GEMM_NR)
			ain_ukr(kc, a + (u64)i * lda, lda, b + j * pstride, bs,
				vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j), ldc,
				mr, gemm_min(GEMM_NR, st->nt - j), g->alpha,
				st->beta, bias ? bias + j : NULL, relu, mr);
	}
	if (i == mt)
		return;
	mr = mt - i;
	for (r = 0; r < UKR_SHORT; r++) {
		float *d = ap + (u64)r * VTPU_GEMM_KC;

		if (r < mr)
			memcpy(d, a + (u64)(i + r) * lda, kc * sizeof(float));
		else
			memset(d, 0, kc * sizeof(float));
	}
	for (j = 0; j < st->nt; j += GEMM_NR)
		ain_ukr(kc, ap, VTPU_GEMM_KC, b + j * pstride, bs,
			vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j), ldc, mr,
			gemm_min(GEMM_NR, st->nt - j), g->alpha, st->beta,
			bias ? bias + j : NULL, relu, UKR_SHORT);
}

/*
 * Ask for the rows of A and B that the tile's next step reads (its
 * columns of them), a microtile's share: the one of @mr rows at (@i, @j)
 * asks for the next step's rows in proportion to its place in the tile,
 * row by row. A long-K A^T B streams its operands from memory once (the
 * step before read them into the caches, where the microtiles meet them
 * again); the hardware prefetchers fell behind those strided rows.
 */
static void atb_prefetch_next(const struct vtpu_gemm_step *st, u32 i, u32 j,
			      u32 mr)
{
	const struct vtpu_engine_gemm *g = st->g;
	u64 p0 = (u64)st->p0 + st->kc, area = (u64)st->mt * st->nt, at, r, r1;
	u32 kn;

	if (p0 >= g->k)
		return;
	kn = gemm_min(g->kc, g->k - (u32)p0);
	at = (u64)i * st->nt + (u64)mr * j;
	r1 = p0 + kn * (at + (u64)mr * gemm_min(GEMM_NR, st->nt - j)) / area;
	for (r = p0 + kn * at / area; r < r1; r++) {
		gemm_prefetch_row(g->a, r * g->lda + st->i0, st->mt, 2);
		gemm_prefetch_row(g->b, r * g->ldb + st->j0, st->nt, 2);
	}
}

/*
 * A^T B, f32, A stored k x m and B stored k x n (gemm.c's gemm_is_atb():
 * a weight gradient over the pixels of a batch, 64 x 64 x 65536): both
 * are read where they are stored, A's element (r, p) at a[p * lda + r]
 * and B's rows ldb apart, so neither is packed. Packing had cost a third
 * of such a product even with the operands in the caches, and with
 * them in memory it waited on every load before the FMAs began. Rows run
 * as 14-row microtiles and then 8-row ones (ain_full_tiles()); the last
 * rows, fewer than 8, are copied into the scratch first and the last
 * columns, fewer than 32, packed, so that nothing past A's column m or
 * B's column n is read. Each element of C is the same chain of FMAs over
 * k as in the packed kernel: the same bits.
 */
void vtpu_gemm_step_avx512_atb(const struct vtpu_gemm_step *st,
			       void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	float *bp = scratch;
	float *ap = bp + VTPU_GEMM_A_OFF;
	struct vtpu_gemm_memo *memo =
		(struct vtpu_gemm_memo *)(bp + VTPU_GEMM_MEMO_OFF);
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	const float *a = (const float *)g->a + (u64)st->p0 * g->lda + st->i0;
	const float *b = (const float *)g->b + (u64)st->p0 * g->ldb + st->j0;
	u32 kc = st->kc, mt = st->mt, nt = st->nt, i, j, r, p, mr;
	u32 full = ain_full_tiles(mt) * GEMM_MR;
	u32 nfull = nt / GEMM_NR * GEMM_NR;
	u64 ldc = vtpu_gemm_c_ld(g), lda = g->lda, ldb = g->ldb, ps;
	const float *ai;

	if (nfull < nt) {
		/* the B area is ours now: no packed GEMM block is kept there */
		memo->seq = 0;
		gemm_pack_b(bp, g, st->p0, kc, st->j0 + nfull, nt - nfull);
	}
	for (i = 0; i < mt; i += mr) {
		if (i + UKR_SHORT <= mt) {
			mr = i < full ? GEMM_MR : UKR_SHORT;
			ai = a + i;
			ps = lda;
		} else {
			/* the last rows, as an 8-row panel */
			mr = mt - i;
			for (p = 0; p < kc; p++)
				for (r = 0; r < UKR_SHORT; r++)
					ap[p * UKR_SHORT + r] =
						r < mr ? a[p * lda + i + r] :
							 0.0f;
			ai = ap;
			ps = UKR_SHORT;
		}
		for (j = 0; j < nt; j += GEMM_NR) {
			atb_prefetch_next(st, i, j, gemm_min(mr, mt - i));
			atb_ukr(kc, ai, ps, j < nfull ? b + j : bp,
				j < nfull ? ldb : GEMM_NR,
				vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j), ldc,
				mr, gemm_min(GEMM_NR, nt - j), g->alpha,
				st->beta, bias ? bias + j : NULL, relu,
				mr > UKR_SHORT ? GEMM_MR : UKR_SHORT);
		}
	}
}

#endif /* __CHECKER__ */

const struct vtpu_gemm_level vtpu_gemm_level_avx512 = {
	.mr = VTPU_GEMM_AVX512_MR,
	.nr = VTPU_GEMM_AVX512_NR,
	.mr_short = VTPU_GEMM_AVX512_MR_SHORT,
	.mt_max = VTPU_GEMM_MT_MAX,
	.step = vtpu_gemm_step_avx512,
	.narrow = &vtpu_gemm_level_avx512_narrow,
	.tn = vtpu_gemm_step_avx512_tn,
	.rows = vtpu_gemm_step_avx512_rows,
	.ain = vtpu_gemm_step_avx512_ain,
	.atb = vtpu_gemm_step_avx512_atb,
	.wgrad = vtpu_gemm_step_avx512_wgrad,
	.wino = vtpu_gemm_step_avx512_wino,
	.wino_wgrad = vtpu_gemm_step_avx512_wino_wgrad,
	.dgrad = vtpu_gemm_step_avx512_dgrad,
	.small = vtpu_gemm_step_avx512_small,
};
