// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM for AVX-512F: a 14 x 32 microkernel (28 zmm accumulators, two zmm
 * of B per k, A broadcast from memory), and for n <= 16 a narrow one that
 * runs its vectors along M instead (below). Compiled with -mavx512f; GCC
 * vector extensions and builtins instead of <immintrin.h>, which the
 * kernel build cannot use.
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

void vtpu_gemm_step_avx512_narrow(const struct vtpu_gemm_step *st,
				  void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_tn(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_wgrad(const struct vtpu_gemm_step *st,
				 void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_rows(const struct vtpu_gemm_step *st,
				void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_ain(const struct vtpu_gemm_step *st,
			       void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_wino(const struct vtpu_gemm_step *st,
				void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_wino_wgrad(const struct vtpu_gemm_step *st,
				      void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

#define GEMM_MR VTPU_GEMM_AVX512_MR
#define GEMM_NR VTPU_GEMM_AVX512_NR
#define GEMM_VW 16
#define GEMM_STEP_FN vtpu_gemm_step_avx512

#include "gemm_tmpl.h"

#define V16F GEMM_VEC
#define V16I GEMM_VEC_I

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
 * (rs 1, ps MR), rows of gathered im2col (rs VTPU_GEMM_KC, ps 1), or
 * Winograd's V (below). @rows, @nv, @rs and @ps are constants once
 * inlined. The accumulators are an array indexed only in fully unrolled
 * loops, so GCC keeps all 28 in registers (check: objdump shows no stack
 * access in the k loop).
 */
static __always_inline void ukr_acc(u32 kc, const float *a, const float *b,
				    V16F acc[GEMM_MR][2], u32 nv, u32 rs,
				    u32 ps, u32 rows)
{
	/* rows 7.. from a second base: the same 6 offsets serve both */
	const float *a7 = a + 7 * (u64)rs;
	u32 p, r;

#pragma GCC unroll 14
	for (r = 0; r < rows; r++)
		acc[r][0] = acc[r][1] = (V16F){ 0 };

	for (p = 0; p < kc; p++, a += ps, a7 += ps, b += GEMM_NR) {
		/*
		 * Unaligned loads: B's panels may be read where they are
		 * stored (vtpu_gemm_step_avx512_ain()), 4-byte aligned.
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

/* The accumulated microtile of @rows rows (a constant) into C[mr x nr]. */
static __always_inline void ukr_store(V16F acc[GEMM_MR][2], float *c, u64 ldc,
				      u32 mr, u32 nr, float alpha, float beta,
				      const float *bias, u32 relu, u32 rows)
{
	u32 r;

	if (ENGINE_LIKELY(mr == rows && nr == GEMM_NR)) {
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

/*
 * A microtile of @rows rows (a constant) from A's element (r, p) at
 * a[r * @rs + p * @ps]: the k loop, then the store.
 */
static __always_inline void ukr_run(u32 kc, const float *a, const float *b,
				    float *c, u64 ldc, u32 mr, u32 nr,
				    float alpha, float beta, const float *bias,
				    u32 relu, u32 rs, u32 ps, u32 rows)
{
	V16F acc[GEMM_MR][2];

	if (ENGINE_LIKELY(nr > 16))
		ukr_acc(kc, a, b, acc, 2, rs, ps, rows);
	else
		ukr_acc(kc, a, b, acc, 1, rs, ps, rows);
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
			GEMM_MR, UKR_SHORT);
	else
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu, 1,
			GEMM_MR, GEMM_MR);
}

/* gemm_ukr() with A as rows VTPU_GEMM_KC floats apart */
static void gemm_ukr_rows(u32 kc, const float *a, const float *b, float *c,
			  u64 ldc, u32 mr, u32 nr, float alpha, float beta,
			  const float *bias, u32 relu)
{
	if (mr <= UKR_SHORT)
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu,
			VTPU_GEMM_KC, 1, UKR_SHORT);
	else
		ukr_run(kc, a, b, c, ldc, mr, nr, alpha, beta, bias, relu,
			VTPU_GEMM_KC, 1, GEMM_MR);
}

/*
 * vtpu_im2col_cols(), with the common case inline: a window inside the
 * image is kh runs of kw * c consecutive floats, copied a vector at a
 * time.
 */
static __always_inline void rows_gather(const struct vtpu_engine_window *w,
					const float *image, u64 n, u64 oy,
					u64 ox, u32 ky, u64 q, u32 kc, float *d)
{
	u64 run = (u64)w->kw * w->c, t;
	s64 ix0 = (s64)(ox * w->sw) - w->pw, iy0 = (s64)(oy * w->sh) - w->ph;
	u32 ky_last = (u32)((ky * run + q + kc - 1) / run);
	const float *src;

	if (ix0 < 0 || ix0 + w->kw > w->w || iy0 + ky < 0 ||
	    iy0 + ky_last >= w->h) {
		vtpu_im2col_cols(w, image, n, oy, ox, ky, q, kc, d);
		return;
	}
	src = image + ((n * w->h + (u64)(iy0 + ky)) * w->w + (u64)ix0) * w->c;
	while (kc) {
		u32 len = (u32)vtpu_min_u64(run - q, kc);
		u16 m;

		for (t = 0; t + 16 <= len; t += 16)
			gemm_storeu(d + t, gemm_loadu(src + q + t));
		m = gemm_mask(len - (u32)t);
		if (m)
			gemm_maskstore(d + t, gemm_maskload(src + q + t, m), m);
		d += len;
		kc -= len;
		q = 0;
		src += (u64)w->w * w->c;	/* the next tap row */
	}
}

/*
 * A step of CONV or CONV_DGRAD (g->implicit, A stored m x k): the packed
 * GEMM gathers each im2col row and then transposes MR of them at a time
 * into a panel, and with 32 or 64 filters each element then meets only
 * two or four vectors of B. Here the gathered rows are A: row i of the
 * tile at ap + i * VTPU_GEMM_KC, read by a microkernel that broadcasts
 * from MR rows at constant distances. The transpose's shuffles (on the
 * port that also does FMAs) are gone; the sums are the same, in the same
 * order, so the results are the packed kernel's bits.
 */
void vtpu_gemm_step_avx512_rows(const struct vtpu_gemm_step *st,
				void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	float *bp = scratch;
	float *ap = bp + VTPU_GEMM_A_OFF;
	const float *bias = (st->last && g->bias) ? g->bias + st->j0 : NULL;
	u32 relu = st->last && (g->flags & VTPU_GEMM_RELU);
	u64 run = (u64)w->kw * w->c, ox, oy, n;
	u32 kc = st->kc, ky = (u32)(st->p0 / run), i, j;
	u64 q = st->p0 - ky * run;

	gemm_pack_b(bp, g, st->p0, kc, st->j0, st->nt);
	vtpu_xy_of(st->i0, w->ow, w->oh, &ox, &oy, &n);
	for (i = 0; i < st->mt; i += GEMM_MR) {
		u32 mr = gemm_min(GEMM_MR, st->mt - i), r;
		float *c = g->c + (u64)(st->i0 + i) * g->ldc + st->j0;

		/* MR rows, while they stay in L1; past the tile: zeros */
		for (r = 0; r < mr; r++) {
			rows_gather(w, g->a, n, oy, ox, ky, q, kc,
				    ap + (u64)r * VTPU_GEMM_KC);
			vtpu_next_xy(&ox, &oy, &n, w->ow, w->oh);
		}
		for (; r < (mr <= UKR_SHORT ? UKR_SHORT : GEMM_MR); r++)
			memset(ap + (u64)r * VTPU_GEMM_KC, 0,
			       kc * sizeof(float));
		for (j = 0; j < st->nt; j += GEMM_NR)
			gemm_ukr_rows(kc, ap, bp + (u64)j * kc, c + j, g->ldc,
				      mr, gemm_min(GEMM_NR, st->nt - j),
				      g->alpha, st->beta,
				      bias ? bias + j : NULL, relu);
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

/* A microtile of @rows (14 or 8) of A's rows where they are stored */
static noinline void ain_ukr(u32 kc, const float *a, u32 lda,
			     const float *b, float *c, u64 ldc, u32 nr,
			     float alpha, float beta, const float *bias,
			     u32 relu, u32 rows)
{
	if (rows == GEMM_MR)
		ukr_run(kc, a, b, c, ldc, GEMM_MR, nr, alpha, beta, bias, relu,
			lda, 1, GEMM_MR);
	else
		ukr_run(kc, a, b, c, ldc, UKR_SHORT, nr, alpha, beta, bias,
			relu, lda, 1, UKR_SHORT);
}

/*
 * A plain f32 GEMM with A stored m x k (a dense layer's activations, a
 * batch of rows): the microkernel broadcasts from A's rows where they are
 * stored, lda apart, so A is never packed, and a tile can hold all of M
 * with only B's columns split among tiles: B is then packed once per
 * GEMM (vtpu_gemm_prepare()). Rows run as 14-row microtiles and then
 * 8-row ones (ain_full_tiles()); a last partial one is copied into the
 * scratch first, so that nothing past row m is read.
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
	u64 ldc = vtpu_gemm_c_ld(g), pstride = kc;
	const float *b = bp;

	if ((g->flags & (VTPU_GEMM_B_PANELS | VTPU_GEMM_TRANS_B)) ==
	    VTPU_GEMM_B_PANELS) {
		/* B's panels are the packed panels, k apart: read in place */
		b = (const float *)g->b + (u64)st->j0 * g->k +
		    (u64)st->p0 * GEMM_NR;
		pstride = g->k;
	} else {
		gemm_pack_b(bp, g, st->p0, kc, st->j0, st->nt);
	}
	for (; i + UKR_SHORT <= mt; i += mr) {
		mr = i < full ? GEMM_MR : UKR_SHORT;
		for (j = 0; j < st->nt; j += GEMM_NR)
			ain_ukr(kc, a + (u64)i * lda, lda, b + j * pstride,
				vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j), ldc,
				gemm_min(GEMM_NR, st->nt - j), g->alpha,
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
		gemm_ukr_rows(kc, ap, b + j * pstride,
			      vtpu_gemm_c_at(g, st->i0 + i, st->j0 + j), ldc,
			      mr, gemm_min(GEMM_NR, st->nt - j), g->alpha,
			      st->beta, bias ? bias + j : NULL, relu);
}

/* ---- Winograd F(2 x 2, 3 x 3) -------------------------------------------- */

/*
 * CONV and CONV_DGRAD with a 3 x 3 window at stride 1 and 16 to 64 input
 * channels (gemm.c: gemm_is_wino()) take each 2 x 2 block of output
 * pixels, a Winograd tile, from the 4 x 4 input patch d around it:
 *
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A      per input channel, summed
 *
 * where g is a filter's 3 x 3 taps, (.) multiplies element-wise, and
 * B^T, G and A^T hold only 0, +-1 and 1/2 (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2015). The sum over
 * input channels of each of the 16 products is a GEMM,
 *
 *   M[xi][t][o] = sum_c V[xi][t][c] U[xi][c][o],  V = B^T d B, U = G g G^T,
 *
 * 16 multiplies per tile, channel and filter where the direct convolution
 * does 36: 2.25 times fewer. The transforms are adds, done a vector of
 * channels at a time.
 *
 * A step is a tile's whole job (K in one step): it transforms its
 * columns' filters into U, then takes its Winograd tiles WINO_TB at a time:
 * their patches into V, the 16 GEMMs on the 14 x 32 microkernel into M,
 * and M through A into C, with the epilogue (beta, bias, ReLU). The
 * results differ from the direct kernel's in rounding only; on small
 * integers, where every sum is exact, they are the same. CONV_WGRAD of
 * the same convolutions follows the same way (further below).
 */
#define WINO_TB (GEMM_MR * 4)	/* Winograd tiles per block */
#define WINO_CP VTPU_WINO_CMAX	/* V's row pitch: channels at most */
#define WINO_MP VTPU_WINO_NT	/* M's row pitch: a tile's columns at most */
#define WINO_V_OFF (16 * VTPU_WINO_CMAX * VTPU_WINO_NT)
#define WINO_M_OFF (WINO_V_OFF + 16 * WINO_TB * WINO_CP)
_Static_assert(WINO_M_OFF + 16 * WINO_TB * WINO_MP <=
		       VTPU_GEMM_SCRATCH_FLOATS,
	       "Winograd's U, V and M fit in the GEMM scratch");

/* B^T d B of one 4 x 4 patch (d[row * 4 + col]), in place */
static __always_inline void wino_in(V16F *d)
{
	V16F t[16] GEMM_NOINIT;
	u32 i;

#pragma GCC unroll 4
	for (i = 0; i < 4; i++) {
		t[0 + i] = d[0 + i] - d[8 + i];
		t[4 + i] = d[4 + i] + d[8 + i];
		t[8 + i] = d[8 + i] - d[4 + i];
		t[12 + i] = d[4 + i] - d[12 + i];
	}
#pragma GCC unroll 4
	for (i = 0; i < 16; i += 4) {
		d[i + 0] = t[i + 0] - t[i + 2];
		d[i + 1] = t[i + 1] + t[i + 2];
		d[i + 2] = t[i + 2] - t[i + 1];
		d[i + 3] = t[i + 1] - t[i + 3];
	}
}

/* G g G^T of a 3 x 3 filter (g[row * 3 + col]) into u[16] */
static __always_inline void wino_filter(const V16F *g, V16F *u)
{
	V16F t[12] GEMM_NOINIT;
	V16F h = { 0 };
	u32 i;

	h += 0.5f;
#pragma GCC unroll 3
	for (i = 0; i < 3; i++) {
		t[0 + i] = g[0 + i];
		t[3 + i] = h * (g[0 + i] + g[3 + i] + g[6 + i]);
		t[6 + i] = h * (g[0 + i] - g[3 + i] + g[6 + i]);
		t[9 + i] = g[6 + i];
	}
#pragma GCC unroll 4
	for (i = 0; i < 4; i++) {
		u[i * 4 + 0] = t[i * 3 + 0];
		u[i * 4 + 1] = h * (t[i * 3 + 0] + t[i * 3 + 1] + t[i * 3 + 2]);
		u[i * 4 + 2] = h * (t[i * 3 + 0] - t[i * 3 + 1] + t[i * 3 + 2]);
		u[i * 4 + 3] = t[i * 3 + 2];
	}
}

/*
 * U for the step's columns: u[((xi * np + jp) * c + ci) * 32 + col], np
 * panels of 32 columns (the microkernel's B panels). A filter's tap t of
 * channel ci for column j is B's element (t * c + ci, j): in CONV's
 * weights, stored [9 * c, ldb], a row of columns is consecutive; in
 * CONV_DGRAD's (flip_oc), it is W[(8 - t) * n + j][ci], flip_oc apart.
 */
static void wino_u(const struct vtpu_gemm_step *st, float *u)
{
	const struct vtpu_engine_gemm *g = st->g;
	const float *b = g->b;
	u32 c = g->win.c, np = (st->nt + GEMM_NR - 1) / GEMM_NR, j, ci, t, x;
	V16I idx = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

	idx *= (int)g->flip_oc;
	for (j = 0; j < st->nt; j += 16) {
		u16 m = gemm_mask(gemm_min(16, st->nt - j));
		u32 col = st->j0 + j;

		for (ci = 0; ci < c; ci++) {
			V16F f[9] GEMM_NOINIT, w[16] GEMM_NOINIT;
			float *d = u + ((u64)(j / GEMM_NR) * c + ci) * GEMM_NR +
				   j % GEMM_NR;

#pragma GCC unroll 9
			for (t = 0; t < 9; t++) {
				if (!g->flip_oc) {
					f[t] = gemm_maskload(b + ((u64)t * c + ci) *
							     g->ldb + col, m);
					continue;
				}
				f[t] = __builtin_ia32_gathersiv16sf(
					(V16F){ 0 },
					b + ((u64)(8 - t) * g->n + col) *
					g->flip_oc + ci, idx, m, 4);
			}
			wino_filter(f, w);
			for (x = 0; x < 16; x++)
				gemm_storeu(d + (u64)x * np * c * GEMM_NR, w[x]);
		}
	}
}

/*
 * V of channels @c0..@c0+@ct for @nt Winograd tiles (at most WINO_TB), the
 * first at (@tx, @ty) of image @n: v[(xi * WINO_TB + t) * WINO_CP + ci -
 * c0].
 */
static void wino_v(const struct vtpu_engine_gemm *g, u64 tx, u64 ty, u64 n,
		   u32 nt, u32 c0, u32 ct, float *v)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 twx = (w->ow + 1) / 2, twy = (w->oh + 1) / 2;
	u32 t, ci, r, s, x;

	for (t = 0; t < nt; t++) {
		s64 iy0 = (s64)(2 * ty) - w->ph, ix0 = (s64)(2 * tx) - w->pw;
		s64 o0 = (((s64)n * w->h + iy0) * w->w + ix0) * w->c + c0;
		bool ry[4], rx[4];

		for (r = 0; r < 4; r++) {
			ry[r] = iy0 + r >= 0 && iy0 + r < w->h;
			rx[r] = ix0 + r >= 0 && ix0 + r < w->w;
		}
		for (ci = 0; ci < ct; ci += 16) {
			u16 m = gemm_mask(gemm_min(16, ct - ci));
			V16F d[16] GEMM_NOINIT;

			/*
			 * Pixels outside the image (the padding) load
			 * nothing under an empty mask: no branches, so d
			 * stays in registers
			 */
#pragma GCC unroll 16
			for (x = 0; x < 16; x++) {
				r = x / 4;
				s = x % 4;
				d[x] = gemm_maskload((const float *)g->a +
						     (o0 + ((s64)r * w->w + s) *
						      w->c + ci),
						     ry[r] && rx[s] ? m : 0);
			}
			wino_in(d);
			for (x = 0; x < 16; x++)
				gemm_storeu(v + ((u64)x * WINO_TB + t) *
					    WINO_CP + ci, d[x]);
		}
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
}

/*
 * A^T M A of Winograd tile @t of the block into C, the tile at (@tx, @ty)
 * of image @n, with the GEMM's epilogue; outputs past the image's edge
 * (odd sizes) are not stored.
 */
static void wino_out(const struct vtpu_gemm_step *st, const float *mb, u32 t,
		     u64 tx, u64 ty, u64 n)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	const float *bias = g->bias ? g->bias + st->j0 : NULL;
	u32 relu = g->flags & VTPU_GEMM_RELU, j, x;

	for (j = 0; j < st->nt; j += 16) {
		u16 m = gemm_mask(gemm_min(16, st->nt - j));
		V16F mm[16] GEMM_NOINIT, r[8] GEMM_NOINIT, y[4] GEMM_NOINIT;

#pragma GCC unroll 16
		for (x = 0; x < 16; x++)
			mm[x] = gemm_loadu(mb + ((u64)x * WINO_TB + t) *
					   WINO_MP + j);
#pragma GCC unroll 4
		for (x = 0; x < 4; x++) {
			r[x] = mm[x] + mm[4 + x] + mm[8 + x];
			r[4 + x] = mm[4 + x] - mm[8 + x] - mm[12 + x];
		}
#pragma GCC unroll 2
		for (x = 0; x < 2; x++) {
			y[2 * x] = r[4 * x] + r[4 * x + 1] + r[4 * x + 2];
			y[2 * x + 1] = r[4 * x + 1] - r[4 * x + 2] -
				       r[4 * x + 3];
		}
		for (x = 0; x < 4; x++) {
			u64 oy = 2 * ty + x / 2, ox = 2 * tx + x % 2;

			if (oy < w->oh && ox < w->ow)
				gemm_store_row_mask(g->c + ((n * w->oh + oy) *
							    w->ow + ox) *
							    g->ldc + st->j0 + j,
						    y[x], y[x], m, 0, g->alpha,
						    st->beta,
						    bias ? bias + j : NULL,
						    relu);
		}
	}
}

void vtpu_gemm_step_avx512_wino(const struct vtpu_gemm_step *st,
				void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	float *u = scratch, *v = u + WINO_V_OFF, *mb = u + WINO_M_OFF;
	u64 twx = (w->ow + 1) / 2, twy = (w->oh + 1) / 2, tx, ty, n;
	u32 c = w->c, np = (st->nt + GEMM_NR - 1) / GEMM_NR, i, t, x, jp, r;

	wino_u(st, u);
	vtpu_xy_of(st->i0, twx, twy, &tx, &ty, &n);
	for (i = 0; i < st->mt; i += WINO_TB) {
		u32 nt = gemm_min(WINO_TB, st->mt - i);

		wino_v(g, tx, ty, n, nt, 0, c, v);
		for (x = 0; x < 16; x++) {
			for (jp = 0; jp < np; jp++) {
				const float *bp = u + ((u64)x * np + jp) *
						      c * GEMM_NR;
				u32 cols = gemm_min(GEMM_NR,
						    st->nt - jp * GEMM_NR);

				for (r = 0; r < nt; r += GEMM_MR) {
					V16F acc[GEMM_MR][2];
					u64 row = (u64)x * WINO_TB + r;

					if (cols > 16)
						ukr_acc(c, v + row * WINO_CP,
							bp, acc, 2, WINO_CP,
							1, GEMM_MR);
					else
						ukr_acc(c, v + row * WINO_CP,
							bp, acc, 1, WINO_CP,
							1, GEMM_MR);
					ukr_store(acc, mb + row * WINO_MP +
						  jp * GEMM_NR, WINO_MP,
						  GEMM_MR, GEMM_NR, 1.0f,
						  0.0f, NULL, 0, GEMM_MR);
				}
			}
		}
		for (t = 0; t < nt; t++) {
			wino_out(st, mb, t, tx, ty, n);
			vtpu_next_xy(&tx, &ty, &n, twx, twy);
		}
	}
}

/*
 * CONV_WGRAD of the same convolutions: the forward's Y = A^T (U (.) V) A
 * is linear in U, so the gradient of U is, per tile, V (.) Z with
 *
 *   Z = A dY A^T   (dY the tile's 2 x 2 outputs' gradient, 4 x 4)
 *
 * and dU[xi][c][o] = sum over tiles of V[xi][t][c] Z[xi][t][o]: 16 GEMMs
 * with K the tiles, on 8-row microtiles of channels (no rows wasted for
 * 8, 16, ... channels) by the 32 columns of Z's panel. Then dw = G^T dU G.
 * A tile of the op is a range of channels by a column group, reading all
 * pixels; a step is WINO_KC Winograd tiles, whose dU, transformed, it
 * adds to dw (beta 1 after the first step).
 */
#define WINO_ROWS UKR_SHORT	/* the 8-row microtile of short tiles */
#define WINO_Z_OFF (16 * WINO_TB * WINO_CP)
#define WINO_DU_OFF (WINO_Z_OFF + 16 * WINO_TB * GEMM_NR)
_Static_assert(WINO_DU_OFF + 16 * VTPU_WINO_CMAX * GEMM_NR <=
		       VTPU_GEMM_SCRATCH_FLOATS,
	       "Winograd's V, Z and dU fit in the GEMM scratch");

/*
 * Z of columns @o0..@o0+@ot (at most 32) for @nt Winograd tiles from
 * (@tx, @ty) of image @n: z[(xi * WINO_TB + t) * 32 + o - o0]; outputs
 * past the image's edge count as 0.
 */
static void wino_z(const struct vtpu_engine_gemm *g, u64 tx, u64 ty, u64 n,
		   u32 nt, u32 o0, u32 ot, float *z)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 twx = (w->ow + 1) / 2, twy = (w->oh + 1) / 2;
	u32 t, j, x;

	for (t = 0; t < nt; t++) {
		for (j = 0; j < ot; j += 16) {
			u16 m = gemm_mask(gemm_min(16, ot - j));
			V16F y[4], q[8] GEMM_NOINIT;

#pragma GCC unroll 4
			for (x = 0; x < 4; x++) {
				u64 oy = 2 * ty + x / 2, ox = 2 * tx + x % 2;

				y[x] = gemm_maskload((const float *)g->b +
						     ((n * w->oh + oy) * w->ow +
						      ox) * g->ldb + o0 + j,
						     oy < w->oh && ox < w->ow ?
						     m : 0);
			}
			/* Q = A dY (4 x 2), then Z = Q A^T, row by row */
#pragma GCC unroll 2
			for (x = 0; x < 2; x++) {
				q[0 + x] = y[x];
				q[2 + x] = y[x] + y[2 + x];
				q[4 + x] = y[x] - y[2 + x];
				q[6 + x] = -y[2 + x];
			}
#pragma GCC unroll 4
			for (x = 0; x < 4; x++) {
				float *d = z + ((u64)(4 * x) * WINO_TB + t) *
					       GEMM_NR + j;

				gemm_storeu(d, q[2 * x]);
				gemm_storeu(d + WINO_TB * GEMM_NR,
					    q[2 * x] + q[2 * x + 1]);
				gemm_storeu(d + 2 * WINO_TB * GEMM_NR,
					    q[2 * x] - q[2 * x + 1]);
				gemm_storeu(d + 3 * WINO_TB * GEMM_NR,
					    -q[2 * x + 1]);
			}
		}
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
}

/* dw (rows t * c + c0.., columns o0..) += G^T dU G, with the step's beta */
static void wino_dw(const struct vtpu_gemm_step *st, const float *du)
{
	const struct vtpu_engine_gemm *g = st->g;
	u32 c = g->win.c, ci, j, x;

	for (ci = 0; ci < st->mt; ci++) {
		for (j = 0; j < st->nt; j += 16) {
			u16 m = gemm_mask(gemm_min(16, st->nt - j));
			V16F d[16] GEMM_NOINIT, t[12] GEMM_NOINIT;
			V16F h = { 0 };

			h += 0.5f;
#pragma GCC unroll 16
			for (x = 0; x < 16; x++)
				d[x] = gemm_loadu(du + ((u64)x *
							VTPU_WINO_CMAX + ci) *
							GEMM_NR + j);
			/* T = G^T dU (3 x 4), then T G, row by row */
#pragma GCC unroll 4
			for (x = 0; x < 4; x++) {
				V16F e = h * (d[4 + x] + d[8 + x]);

				t[x] = d[x] + e;
				t[4 + x] = h * (d[4 + x] - d[8 + x]);
				t[8 + x] = e + d[12 + x];
			}
#pragma GCC unroll 3
			for (x = 0; x < 3; x++) {
				V16F e = h * (t[4 * x + 1] + t[4 * x + 2]);
				V16F r[3] = {
					t[4 * x] + e,
					h * (t[4 * x + 1] - t[4 * x + 2]),
					e + t[4 * x + 3],
				};
				u32 k;

				for (k = 0; k < 3; k++)
					gemm_store_row_mask(g->c + ((u64)(3 *
						x + k) * c + st->i0 + ci) *
						g->ldc + st->j0 + j, r[k],
						r[k], m, 0, 1.0f, st->beta,
						NULL, 0);
			}
		}
	}
}

void vtpu_gemm_step_avx512_wino_wgrad(const struct vtpu_gemm_step *st,
				      void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	float *v = scratch, *z = v + WINO_Z_OFF, *du = v + WINO_DU_OFF;
	u64 twx = (w->ow + 1) / 2, twy = (w->oh + 1) / 2, tx, ty, n;
	u32 i, x, r, t;

	vtpu_xy_of(st->p0, twx, twy, &tx, &ty, &n);
	for (i = 0; i < st->kc; i += WINO_TB) {
		u32 nt = gemm_min(WINO_TB, st->kc - i);
		float beta = i ? 1.0f : 0.0f;

		wino_v(g, tx, ty, n, nt, st->i0, st->mt, v);
		wino_z(g, tx, ty, n, nt, st->j0, st->nt, z);
		for (x = 0; x < 16; x++) {
			for (r = 0; r < st->mt; r += WINO_ROWS) {
				const float *a = v + (u64)x * WINO_TB *
						     WINO_CP + r;
				float *c = du + ((u64)x * VTPU_WINO_CMAX + r) *
						GEMM_NR;
				u32 mr = gemm_min(WINO_ROWS, st->mt - r);
				V16F acc[GEMM_MR][2];

				if (st->nt > 16)
					ukr_acc(nt, a, z + (u64)x * WINO_TB *
						GEMM_NR, acc, 2, 1, WINO_CP,
						WINO_ROWS);
				else
					ukr_acc(nt, a, z + (u64)x * WINO_TB *
						GEMM_NR, acc, 1, 1, WINO_CP,
						WINO_ROWS);
				ukr_store(acc, c, GEMM_NR, mr, GEMM_NR, 1.0f,
					  beta, NULL, 0, WINO_ROWS);
			}
		}
		for (t = 0; t < nt; t++)
			vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
	wino_dw(st, du);
}

/* ---- narrow N ------------------------------------------------------------ */

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
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_STEP_FN
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

/* ---- CONV_WGRAD, direct --------------------------------------------------- */

/*
 * CONV_WGRAD's product, dw = im2col(x)^T dy, is the tap rows of the
 * filters (kh * kw * c) by the filters (oc), summed over every output
 * pixel. As a packed GEMM, each gathered and packed element of im2col
 * meets only oc columns: with 32 filters, packing costs about as much as
 * the FMAs. This kernel packs nothing. A block of R rows of dw, all in
 * one tap row ky, and one or two vectors of its columns stay in
 * registers while the step's pixels stream by. Per pixel, it loads the
 * vectors of dy and broadcasts R elements of x, both where they are
 * stored: a tap row of a window is kw * c elements that are consecutive
 * in the image too. Where the window hangs over the image's edge, the
 * block's elements are gathered with zeros; where all of them are
 * outside, the pixel adds nothing and is skipped.
 *
 * Each element of dw still sums its step's pixels in order, from zero,
 * and then adds that to C, as the GEMM does: the results are the GEMM's
 * bits (a skipped term is a product of zero, which changes no sum).
 */

/*
 * dw rows q0..q0+@rows of tap row @ky (at most VTPU_WG_RMAX) at @c, @nv
 * vectors of columns from j0 on under @masks (vector v's lanes in bits
 * 16 v on): the step's sum, into C.
 */
static __always_inline void wg_block(const struct vtpu_gemm_step *st, u32 ky,
				     u32 q0, u32 rows, u32 nv, u64 masks,
				     float *c)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	const float *x = g->a;
	const float *dy = (const float *)g->b + (u64)st->p0 * g->ldb + st->j0;
	s64 rowlen = (s64)w->w * w->c, e_step = (s64)w->sw * w->c;
	V16F acc[VTPU_WG_RMAX][2] GEMM_NOINIT;
	float tmp[VTPU_WG_RMAX];
	u32 left = st->kc, r, v;
	u64 ox, oy, n;
	u16 m[2];

	/* locals, not loaded again per pixel (the stores to tmp may alias) */
#pragma GCC unroll 2
	for (v = 0; v < nv; v++)
		m[v] = (u16)(masks >> (16 * v));

#pragma GCC unroll 12
	for (r = 0; r < rows; r++)
#pragma GCC unroll 2
		for (v = 0; v < nv; v++)
			acc[r][v] = (V16F){ 0 };

	vtpu_xy_of(st->p0, w->ow, w->oh, &ox, &oy, &n);
	while (left) {
		u32 cnt = (u32)vtpu_min_u64(left, w->ow - ox), todo = cnt, i;
		s64 iy = (s64)(oy * w->sh + ky) - w->ph;
		s64 e = ((s64)(ox * w->sw) - w->pw) * w->c + q0;
		const float *row = x, *d = dy;

		if (iy >= 0 && iy < w->h)
			row += (n * w->h + (u64)iy) * (u64)rowlen;
		else
			todo = 0;	/* the tap row is padding */
		for (i = 0; i < todo; i++, e += e_step, d += g->ldb) {
			const float *s = tmp;
			V16F dv[2];

			if (ENGINE_LIKELY(e >= 0 && e + rows <= rowlen)) {
				s = row + e;
			} else if (e + rows <= 0 || e >= rowlen) {
				continue;
			} else {
				for (r = 0; r < rows; r++)
					tmp[r] = e + r >= 0 && e + r < rowlen ?
							 row[e + r] : 0.0f;
			}
#pragma GCC unroll 2
			for (v = 0; v < nv; v++)
				dv[v] = gemm_maskload(d + 16 * v, m[v]);
#pragma GCC unroll 12
			for (r = 0; r < rows; r++) {
				float xv = s[r];

#pragma GCC unroll 2
				for (v = 0; v < nv; v++)
					acc[r][v] += xv * dv[v];
			}
		}
		dy += (u64)cnt * g->ldb;
		left -= cnt;
		ox += cnt - 1;	/* the row's last pixel, then the next */
		vtpu_next_xy(&ox, &oy, &n, w->ow, w->oh);
	}

	/* into C as the GEMM's microkernel stores (alpha is 1 for a conv) */
#pragma GCC unroll 12
	for (r = 0; r < rows; r++, c += g->ldc) {
#pragma GCC unroll 2
		for (v = 0; v < nv; v++) {
			V16F y = acc[r][v] * g->alpha;

			if (st->beta != 0.0f)
				y += st->beta * gemm_maskload(c + 16 * v, m[v]);
			gemm_maskstore(c + 16 * v, y, m[v]);
		}
	}
}

/* wg_block() with @rows constant: a copy per row count (and @nv) */
static __always_inline void wg_block_rows(const struct vtpu_gemm_step *st,
					  u32 ky, u32 q0, u32 rows, u32 nv,
					  u64 masks, float *c)
{
	switch (rows) {
	case 1:
		wg_block(st, ky, q0, 1, nv, masks, c);
		break;
	case 2:
		wg_block(st, ky, q0, 2, nv, masks, c);
		break;
	case 3:
		wg_block(st, ky, q0, 3, nv, masks, c);
		break;
	case 4:
		wg_block(st, ky, q0, 4, nv, masks, c);
		break;
	case 5:
		wg_block(st, ky, q0, 5, nv, masks, c);
		break;
	case 6:
		wg_block(st, ky, q0, 6, nv, masks, c);
		break;
	case 7:
		wg_block(st, ky, q0, 7, nv, masks, c);
		break;
	case 8:
		wg_block(st, ky, q0, 8, nv, masks, c);
		break;
	case 9:
		wg_block(st, ky, q0, 9, nv, masks, c);
		break;
	case 10:
		wg_block(st, ky, q0, 10, nv, masks, c);
		break;
	case 11:
		wg_block(st, ky, q0, 11, nv, masks, c);
		break;
	default:
		wg_block(st, ky, q0, 12, nv, masks, c);
		break;
	}
}

static noinline void wg_block_any(const struct vtpu_gemm_step *st, u32 ky,
				  u32 q0, u32 rows, u32 nv, u64 masks,
				  float *c)
{
	/* the common case, two whole vectors: constant masks, plain loads */
	if (masks == 0xffffffffu)
		wg_block_rows(st, ky, q0, rows, 2, 0xffffffffu, c);
	else if (nv == 1)
		wg_block_rows(st, ky, q0, rows, 1, masks, c);
	else
		wg_block_rows(st, ky, q0, rows, 2, masks, c);
}

_Static_assert(VTPU_WG_RMAX == 12 && VTPU_WG_NT == 32,
	       "wg_block_any() has a case for every block");

/*
 * One step of a tile of a direct CONV_WGRAD: rows i0..i0+mt of dw, which
 * start and end on blocks (gemm.c: each tap row of kw * c rows is cut
 * into g->wg_nb blocks of nearly equal size), columns j0..j0+nt (nt <=
 * 32: one or two vectors, the last one masked).
 */
void vtpu_gemm_step_avx512_wgrad(const struct vtpu_gemm_step *st,
				 void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	u32 run = g->win.kw * g->win.c, nb = g->wg_nb;
	u32 nv = (st->nt + 15) / 16, row = st->i0, v;
	u64 masks = 0;

	for (v = 0; v < 2; v++)
		masks |= (u64)gemm_mask(st->nt > 16 * v ?
					gemm_min(st->nt - 16 * v, 16) : 0)
			 << (16 * v);
	while (row < st->i0 + st->mt) {
		u32 ky = row / run, q = row - ky * run;
		u32 bi = (u32)(((u64)q * nb + run - 1) / run);
		u32 q1 = (u32)((u64)(bi + 1) * run / nb);

		wg_block_any(st, ky, q, q1 - q, nv, masks,
			     g->c + (u64)row * g->ldc + st->j0);
		row += q1 - q;
	}
}

#endif /* __CHECKER__ */
