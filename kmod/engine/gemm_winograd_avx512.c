// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Winograd F(2 x 2, 3 x 3) and F(4 x 4, 3 x 3) for AVX-512F: CONV,
 * CONV_DGRAD and CONV_WGRAD of a 3 x 3 window at stride 1, their GEMMs on
 * the 14 x 32 microkernel's k loop (gemm_avx512.h). Compiled with
 * -mavx512f.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-ins for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512_wino(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}

void vtpu_gemm_step_avx512_wino_wgrad(const struct vtpu_gemm_step *st,
				      void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

/*
 * CONV and CONV_DGRAD with a 3 x 3 window at stride 1 and 16 to 256 input
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
 * their patches into V and the 16 GEMMs on the 14 x 32 microkernel into M,
 * VTPU_WINO_CMAX channels at a time (M summed over them in their order),
 * and M through A into C, with the epilogue (beta, bias, ReLU). The
 * results differ from the direct kernel's in rounding only; on small
 * integers, where every sum is exact, they are the same. CONV_WGRAD of
 * the same convolutions follows the same way (further below). F(4 x 4,
 * 3 x 3), next, does the same with larger tiles.
 */
#define WINO_TB VTPU_WINO_TB	/* Winograd tiles per block */
#define WINO_CP VTPU_WINO_CMAX	/* V's row pitch: channels at a time */
#define WINO_MP VTPU_WINO_NT	/* M's row pitch: a tile's columns at most */
#define WINO_V_OFF VTPU_WINO_U_FLOATS
#define WINO_M_OFF (WINO_V_OFF + 16 * WINO_TB * WINO_CP)
#define WINO4_TB VTPU_WINO4_TB
/* (below the memo of the B block the plain GEMM steps packed) */
_Static_assert(WINO_M_OFF + 16 * WINO_TB * WINO_MP <= VTPU_GEMM_MEMO_OFF &&
		       VTPU_WINO4_U_FLOATS + 36 * WINO4_TB * (WINO_CP + WINO_MP) <=
			       VTPU_GEMM_MEMO_OFF,
	       "Winograd's U, V and M fit in the GEMM scratch");
_Static_assert(VTPU_WINO4_U_FLOATS / 36 / VTPU_WINO4_CMAX >= UKR_NR,
	       "F(4 x 4)'s U holds a panel of its most channels");
_Static_assert(VTPU_WINO_CMAX_ALL * UKR_NR <= VTPU_WINO_U_FLOATS / 16 &&
		       VTPU_WINO_CMAX * VTPU_WINO_NT <= VTPU_WINO_U_FLOATS / 16,
	       "U holds a panel of the most channels, CMAX's tiles whole");

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
 * F(4 x 4, 3 x 3) takes each 4 x 4 block of outputs from the 6 x 6 patch
 * around it, 36 products for 16 outputs (the direct convolution's 144),
 * with Lavin and Gray's transforms on the points 0, +-1, +-2 and infinity:
 *
 *   B^T = | 4  0 -5  0  1  0 |   G = | 1/4    0    0  |   A^T = | 1 1  1 1  1 0 |
 *         | 0 -4 -4  1  1  0 |       | -1/6 -1/6 -1/6 |         | 0 1 -1 2 -2 0 |
 *         | 0  4 -4 -1  1  0 |       | -1/6  1/6 -1/6 |         | 0 1  1 4  4 0 |
 *         | 0 -2 -1  2  1  0 |       | 1/24 1/12  1/6 |         | 0 1 -1 8 -8 1 |
 *         | 0  2 -1 -2  1  0 |       | 1/24 -1/12 1/6 |
 *         | 0  4  0 -5  0  1 |       | 0      0    1  |
 *
 * G's sixths would round even a filter of small integers: the kernels
 * take 6 G, whose entries are halves and quarters, and divide the output
 * by 36 (CONV_WGRAD: dw = (6 G)^T dU (6 G) / 36). On small integers every
 * sum is then exact, the division too, and the result the same as the
 * direct kernel's. On floats it rounds more than F(2 x 2): within 2.6e-6
 * of the terms' magnitudes in test_ops_conv (F(2 x 2): 5e-7; the bar is
 * 1e-5). The weight gradient rounds most at the image's edges, up to
 * 1.0e-5 on a 4 x 5 image: it takes F(4 x 4) on outputs of 16 x 16 or
 * more only (gemm.c: wino_f_wgrad()).
 *
 * gemm.c (wino_f()) takes F(4 x 4) for CONV and CONV_DGRAD over at most
 * VTPU_WINO4_CMAX channels where it multiplies a fifth less than F(2 x 2)
 * at least. A step is as F(2 x 2)'s, with 36 GEMMs, blocks of WINO4_TB
 * tiles, and each tile's transforms done in two passes through V, M or Z
 * (36 vectors would not stay in registers).
 */

/* B^T d of a column (or, then, d B of a row) of a 6 x 6 patch into t */
static __always_inline void wino4_in(const V16F *d, V16F *t)
{
	V16F a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1];
	V16F c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);

	t[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
	t[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
	t[1] = a + b;
	t[2] = a - b;
	t[3] = c + e;
	t[4] = c - e;
}

/* 6 G g of a filter's column (or g (6 G)^T of a row) into u[0..5] */
static __always_inline void wino4_g(V16F g0, V16F g1, V16F g2, V16F *u)
{
	V16F p = g0 + g2, q = 0.25f * g0 + g2;

	u[0] = 1.5f * g0;
	u[1] = -(p + g1);
	u[2] = g1 - p;
	u[3] = q + 0.5f * g1;
	u[4] = q - 0.5f * g1;
	u[5] = 6.0f * g2;
}

/*
 * (6 G) g (6 G)^T of a 3 x 3 filter (g[row * 3 + col]): transform x to d
 * + x * @xs
 */
static __always_inline void wino4_filter(const V16F *g, float *d, u64 xs)
{
	V16F h[18] GEMM_NOINIT, u[6] GEMM_NOINIT;
	u32 i, x;

	/* h = 6 G g (6 x 3), column by column */
#pragma GCC unroll 3
	for (i = 0; i < 3; i++) {
		wino4_g(g[i], g[3 + i], g[6 + i], u);
#pragma GCC unroll 6
		for (x = 0; x < 6; x++)
			h[x * 3 + i] = u[x];
	}
	/* then h (6 G)^T, row by row */
#pragma GCC unroll 6
	for (i = 0; i < 6; i++) {
		wino4_g(h[i * 3], h[i * 3 + 1], h[i * 3 + 2], u);
#pragma GCC unroll 6
		for (x = 0; x < 6; x++)
			gemm_storeu(d + (u64)(i * 6 + x) * xs, u[x]);
	}
}

/* A^T m of a column (or m A of a row) of M, 6 into y[0..3] */
static __always_inline void wino4_out_1d(const V16F *m, V16F *y)
{
	V16F a = m[1] + m[2], b = m[1] - m[2];
	V16F c = m[3] + m[4], e = m[3] - m[4];

	y[0] = m[0] + a + c;
	y[1] = b + 2.0f * e;
	y[2] = a + 4.0f * c;
	y[3] = b + 8.0f * e + m[5];
}

/* A y of a column (or y A^T of a row) of dY, 4 into z[0..5] */
static __always_inline void wino4_z_1d(const V16F *y, V16F *z)
{
	V16F e = y[0] + y[2], o = y[1] + y[3];
	V16F e4 = y[0] + 4.0f * y[2], o4 = 2.0f * y[1] + 8.0f * y[3];

	z[0] = y[0];
	z[1] = e + o;
	z[2] = e - o;
	z[3] = e4 + o4;
	z[4] = e4 - o4;
	z[5] = y[3];
}

/* (6 G)^T d of a column (or d (6 G) of a row) of dU, 6 into r[0..2] */
static __always_inline void wino4_gt(const V16F *d, V16F *r)
{
	V16F p = d[1] + d[2], s = d[3] + d[4];

	r[0] = 1.5f * d[0] - p + 0.25f * s;
	r[1] = d[2] - d[1] + 0.5f * (d[3] - d[4]);
	r[2] = s - p + 6.0f * d[5];
}

/*
 * A line of a tile's transforms, in place: the vectors at p + i * @st
 * through @k, WINO4_IN (B^T, 6 of them into 6), WINO4_OUT (A^T, 6 into
 * 4) or WINO4_Z (A, 4 into 6), stored back from p. The second pass of
 * each of F(4 x 4)'s transforms, and the first of the output's.
 */
#define WINO4_IN 0
#define WINO4_OUT 1
#define WINO4_Z 2

static __always_inline void wino4_line(float *p, u64 st, u32 k)
{
	u32 nin = k == WINO4_Z ? 4 : 6, nout = k == WINO4_OUT ? 4 : 6, i;
	V16F a[6] GEMM_NOINIT, b[6] GEMM_NOINIT;

#pragma GCC unroll 6
	for (i = 0; i < nin; i++)
		a[i] = gemm_loadu(p + i * st);
	if (k == WINO4_IN)
		wino4_in(a, b);
	else if (k == WINO4_OUT)
		wino4_out_1d(a, b);
	else
		wino4_z_1d(a, b);
#pragma GCC unroll 6
	for (i = 0; i < nout; i++)
		gemm_storeu(p + i * st, b[i]);
}

/*
 * U for the step's columns: u[((xi * np + jp) * c + ci) * 32 + col], np
 * panels of 32 columns (the microkernel's B panels). A filter's tap t of
 * channel ci for column j is B's element (t * c + ci, j): in CONV's
 * weights, stored [9 * c, ldb], a row of columns is consecutive; in
 * CONV_DGRAD's (flip_oc), it is W[(8 - t) * n + j][ci], flip_oc apart.
 * F(@tf x @tf, 3 x 3): (@tf + 2)^2 transforms xi.
 */
static __always_inline void wino_u(const struct vtpu_gemm_step *st, u32 tf,
				   float *u)
{
	const struct vtpu_engine_gemm *g = st->g;
	const float *b = g->b;
	u32 c = g->win.c, np = (st->nt + UKR_NR - 1) / UKR_NR, j, ci, t, x;
	V16I idx = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

	idx *= (int)g->flip_oc;
	for (j = 0; j < st->nt; j += 16) {
		u16 m = gemm_mask(gemm_min(16, st->nt - j));
		u32 col = st->j0 + j;

		for (ci = 0; ci < c; ci++) {
			V16F f[9] GEMM_NOINIT, w[16] GEMM_NOINIT;
			float *d = u + ((u64)(j / UKR_NR) * c + ci) * UKR_NR +
				   j % UKR_NR;

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
			if (tf == 4) {
				wino4_filter(f, d, (u64)np * c * UKR_NR);
				continue;
			}
			wino_filter(f, w);
#pragma GCC unroll 16
			for (x = 0; x < 16; x++)
				gemm_storeu(d + (u64)x * np * c * UKR_NR, w[x]);
		}
	}
}

/*
 * F(4 x 4)'s V of one tile and 16 channels (or the @m of them), the
 * patch's pixel (r, s) at a + r * @rs + s * @cs, into transform xi at vt
 * + xi * @xs: the columns' B^T d, stored, then each row's (B^T d) B in
 * place (36 vectors would not stay in registers). With @full, the patch
 * is inside the image and all 16 channels are loaded; else its pixels
 * outside it (@ry, @rx) load nothing.
 */
static __always_inline void wino4_v(const float *a, u64 rs, u64 cs,
				    bool full, const bool *ry, const bool *rx,
				    u16 m, float *vt, u64 xs)
{
	V16F d[6] GEMM_NOINIT, t[6] GEMM_NOINIT;
	u32 r, s;

#pragma GCC unroll 6
	for (s = 0; s < 6; s++) {
#pragma GCC unroll 6
		for (r = 0; r < 6; r++)
			d[r] = full ? gemm_loadu(a + r * rs + s * cs) :
				      gemm_maskload(a + r * rs + s * cs,
						    ry[r] && rx[s] ? m : 0);
		wino4_in(d, t);
#pragma GCC unroll 6
		for (r = 0; r < 6; r++)
			gemm_storeu(vt + (u64)(r * 6 + s) * xs, t[r]);
	}
#pragma GCC unroll 6
	for (r = 0; r < 6; r++)
		wino4_line(vt + (u64)r * 6 * xs, xs, WINO4_IN);
}

/*
 * V of channels @c0..@c0+@ct for @nt Winograd tiles of F(@f x @f, 3 x 3)
 * (at most @tb), the first at (@tx, @ty) of image @n: v[(xi * @tb + t) *
 * WINO_CP + ci - c0].
 */
static __always_inline void wino_v(const struct vtpu_engine_gemm *g, u32 f,
				   u32 tb, u64 tx, u64 ty, u64 n, u32 nt,
				   u32 c0, u32 ct, float *v)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 twx = vtpu_div_up(w->ow, f), twy = vtpu_div_up(w->oh, f);
	u64 rs = (u64)w->w * w->c;
	u32 t, ci, r, s, x;

	for (t = 0; t < nt; t++) {
		s64 iy0 = (s64)(f * ty) - w->ph, ix0 = (s64)(f * tx) - w->pw;
		s64 o0 = (((s64)n * w->h + iy0) * w->w + ix0) * w->c + c0;
		bool inside = iy0 >= 0 && iy0 + f + 2 <= w->h && ix0 >= 0 &&
			      ix0 + f + 2 <= w->w;
		bool ry[6], rx[6];

		for (r = 0; r < f + 2; r++) {
			ry[r] = iy0 + r >= 0 && iy0 + r < w->h;
			rx[r] = ix0 + r >= 0 && ix0 + r < w->w;
		}
		for (ci = 0; ci < ct; ci += 16) {
			u16 m = gemm_mask(gemm_min(16, ct - ci));
			const float *a = (const float *)g->a + o0 + ci;
			float *vt = v + (u64)t * WINO_CP + ci;
			V16F d[16] GEMM_NOINIT;

			if (f == 4) {
				/* (two bodies: the test out of the loops) */
				if (inside && m == 0xffff)
					wino4_v(a, rs, w->c, true, ry, rx, m,
						vt, (u64)tb * WINO_CP);
				else
					wino4_v(a, rs, w->c, false, ry, rx, m,
						vt, (u64)tb * WINO_CP);
				continue;
			}
			/*
			 * A tile inside the image, 16 channels: plain loads
			 * (a masked load waits for the stores before it:
			 * 3-4% of the op). Else pixels outside the image
			 * (the padding) load nothing under an empty mask:
			 * no branches, so d stays in registers.
			 */
			if (inside && m == 0xffff) {
#pragma GCC unroll 16
				for (x = 0; x < 16; x++)
					d[x] = gemm_loadu(a + (x / 4) * rs +
							  (x % 4) * w->c);
			} else {
#pragma GCC unroll 16
				for (x = 0; x < 16; x++) {
					r = x / 4;
					s = x % 4;
					d[x] = gemm_maskload(a + r * rs +
							     s * w->c,
							     ry[r] && rx[s] ?
							     m : 0);
				}
			}
			wino_in(d);
			/* (unrolled: stored from registers, not a copy) */
#pragma GCC unroll 16
			for (x = 0; x < 16; x++)
				gemm_storeu(vt + (u64)x * tb * WINO_CP, d[x]);
		}
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
}

/*
 * Ask for what the next block will load while this one multiplies: the
 * @nt Winograd tiles (g->wino_f outputs a side) after the @skip from
 * (@tx, @ty) of image @n (none past the op's last, g->wino), the lines
 * of x's channels @c0..@c0+@ct of each patch (none if @ct is 0), and of
 * dy's columns @o0..@o0+@ot of each tile's outputs (none if @ot is 0). A
 * patch's first two rows and columns are the ones above and left of it,
 * asked for with the tiles before, except at an image's top row and a
 * row's start.
 *
 * In a training step x and dy come from memory, not the caches, and the
 * transforms' strided loads found the hardware prefetchers behind: with
 * the caches flushed before each run, CONV_WGRAD of 64 x 16x16 x 32 into
 * 32 filters took 1.36-1.41 ms on two threads without this and 0.78-0.81
 * with it, the forward 0.79-0.84 and 0.72-0.73; hot in the caches, the
 * same with and without.
 */
static noinline void wino_prefetch(const struct vtpu_engine_gemm *g, u64 tx,
				   u64 ty, u64 n, u32 skip, u32 nt, u32 c0,
				   u32 ct, u32 o0, u32 ot)
{
	const struct vtpu_engine_window *w = &g->win;
	u32 f = g->wino_f, t, r, s;
	u64 twx = vtpu_div_up(w->ow, f), twy = vtpu_div_up(w->oh, f), at;

	for (t = 0; t < skip; t++)
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	at = (n * twy + ty) * twx + tx;
	if (at >= g->wino)
		return;
	nt = (u32)vtpu_min_u64(nt, g->wino - at);
	for (t = 0; t < nt; t++) {
		s64 iy0 = (s64)(f * ty) - w->ph, ix0 = (s64)(f * tx) - w->pw;

		for (r = ct && ty ? 2 : 0; ct && r < f + 2; r++) {
			if (iy0 + r < 0 || iy0 + r >= w->h)
				continue;
			for (s = tx ? 2 : 0; s < f + 2; s++)
				if (ix0 + s >= 0 && ix0 + s < w->w)
					gemm_prefetch_row(g->a,
						(((s64)n * w->h + iy0 + r) *
						 w->w + ix0 + s) * w->c + c0,
						ct, 2);
		}
		for (r = 0; ot && r < f * f; r++) {
			u64 oy = f * ty + r / f, ox = f * tx + r % f;

			if (oy < w->oh && ox < w->ow)
				gemm_prefetch_row(g->b,
					((n * w->oh + oy) * w->ow + ox) *
					g->ldb + o0, ot, 2);
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

/*
 * F(4 x 4)'s A^T M A / 36 of Winograd tile @t of a block of WINO4_TB into
 * C, as wino_out(): the columns' A^T m, stored over M's first four rows
 * (M is not read again), then each row's (A^T M) A.
 */
static void wino4_out(const struct vtpu_gemm_step *st, float *mb, u32 t,
		      u64 tx, u64 ty, u64 n)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	const float *bias = g->bias ? g->bias + st->j0 : NULL;
	u32 relu = g->flags & VTPU_GEMM_RELU, j, r, s;
	u64 xs = (u64)WINO4_TB * WINO_MP;

	for (j = 0; j < st->nt; j += 16) {
		u16 m = gemm_mask(gemm_min(16, st->nt - j));
		float *mt = mb + (u64)t * WINO_MP + j;
		V16F mm[6] GEMM_NOINIT, y[4] GEMM_NOINIT;

#pragma GCC unroll 6
		for (s = 0; s < 6; s++)
			wino4_line(mt + s * xs, 6 * xs, WINO4_OUT);
		for (r = 0; r < 4; r++) {
			u64 oy = 4 * ty + r;

			if (oy >= w->oh)
				break;
#pragma GCC unroll 6
			for (s = 0; s < 6; s++)
				mm[s] = gemm_loadu(mt + (r * 6 + s) * xs);
			wino4_out_1d(mm, y);
#pragma GCC unroll 4
			for (s = 0; s < 4; s++) {
				u64 ox = 4 * tx + s;

				/* exact, where a product by 1/36 rounds */
				if (ox < w->ow)
					gemm_store_row_mask(g->c + ((n * w->oh +
						oy) * w->ow + ox) * g->ldc +
						st->j0 + j, y[s] / 36.0f,
						y[s], m, 0, g->alpha, st->beta,
						bias ? bias + j : NULL, relu);
			}
		}
	}
}

/*
 * M (@nt rows of a product, @cols columns of a panel, pitch WINO_MP) = V
 * (pitch WINO_CP) x U's panel @bp over @ck channels, plus @beta M.
 */
static void wino_m(const float *bp, const float *v, float *m, u32 ck,
		   u32 nt, u32 cols, float beta)
{
	u32 r;

	for (r = 0; r < nt; r += UKR_MR) {
		V16F acc[UKR_MR][2];

		if (cols > 16)
			ukr_acc(ck, v + (u64)r * WINO_CP, bp, acc, 2, WINO_CP,
				1, UKR_MR);
		else
			ukr_acc(ck, v + (u64)r * WINO_CP, bp, acc, 1, WINO_CP,
				1, UKR_MR);
		ukr_store(acc, m + (u64)r * WINO_MP, WINO_MP, UKR_MR, UKR_NR,
			  1.0f, beta, NULL, 0, UKR_MR);
	}
}

/*
 * A step of CONV or CONV_DGRAD in F(@f x @f, 3 x 3): U at the scratch's
 * start, then V and M of blocks of @tb tiles, (@f + 2)^2 of each.
 */
static __always_inline void wino_step(const struct vtpu_gemm_step *st,
				      float *u, u32 f, u32 tb, u64 v_off)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	u32 xn = (f + 2) * (f + 2);
	float *v = u + v_off, *mb = v + (u64)xn * tb * WINO_CP;
	u64 twx = vtpu_div_up(w->ow, f), twy = vtpu_div_up(w->oh, f), tx, ty, n;
	u32 c = w->c, np = (st->nt + UKR_NR - 1) / UKR_NR, i, t, x, jp;
	u32 c0, ck;

	wino_u(st, f, u);
	vtpu_xy_of(st->i0, twx, twy, &tx, &ty, &n);
	for (i = 0; i < st->mt; i += tb) {
		u32 nt = gemm_min(tb, st->mt - i);

		for (c0 = 0; c0 < c; c0 += ck) {
			ck = gemm_min(WINO_CP, c - c0);
			wino_v(g, f, tb, tx, ty, n, nt, c0, ck, v);
			/* the next block's patches, if this step has one */
			if (i + nt < st->mt)
				wino_prefetch(g, tx, ty, n, nt,
					      gemm_min(tb, st->mt - i - nt),
					      c0, ck, 0, 0);
			for (x = 0; x < xn; x++) {
				for (jp = 0; jp < np; jp++)
					wino_m(u + (((u64)x * np + jp) * c +
						    c0) * UKR_NR,
					       v + (u64)x * tb * WINO_CP,
					       mb + (u64)x * tb * WINO_MP +
					       jp * UKR_NR, ck, nt,
					       gemm_min(UKR_NR,
							st->nt - jp * UKR_NR),
					       c0 ? 1.0f : 0.0f);
			}
		}
		for (t = 0; t < nt; t++) {
			if (f == 4)
				wino4_out(st, mb, t, tx, ty, n);
			else
				wino_out(st, mb, t, tx, ty, n);
			vtpu_next_xy(&tx, &ty, &n, twx, twy);
		}
	}
}

void vtpu_gemm_step_avx512_wino(const struct vtpu_gemm_step *st,
				void *scratch)
{
	if (st->g->wino_f == 4)
		wino_step(st, scratch, 4, WINO4_TB, VTPU_WINO4_U_FLOATS);
	else
		wino_step(st, scratch, 2, WINO_TB, WINO_V_OFF);
}

/*
 * CONV_WGRAD of the same convolutions: the forward's Y = A^T (U (.) V) A
 * is linear in U, so the gradient of U is, per tile, V (.) Z with
 *
 *   Z = A dY A^T   (dY the tile's 2 x 2 outputs' gradient, 4 x 4)
 *
 * and dU[xi][c][o] = sum over tiles of V[xi][t][c] Z[xi][t][o]: 16 GEMMs
 * with K the tiles, on 8-row microtiles of channels (no rows wasted for
 * 8, 16, ... channels) by the 32 columns of a panel of Z. Then dw = G^T dU
 * G. A tile of the op is a range of channels by up to VTPU_WINO_WG_NT
 * columns, reading all pixels; a step is some blocks of WINO_TB Winograd
 * tiles, whose dU, transformed, it adds to dw (beta 1 after the first
 * step). A block's V serves every panel of the tile's columns: V, not Z,
 * is the costly transform (16 pixels' loads a tile), and with a panel a
 * tile, a layer of 128 columns computed it four times. F(4 x 4)'s is the
 * same with Z = A dY A^T of 4 x 4 outputs, 6 x 6, and 36 GEMMs (its dU
 * bounds its tiles to VTPU_WINO4_WG_NT columns).
 */
#define WINO_ROWS VTPU_GEMM_AVX512_MR_SHORT /* the short microtile's */
#define WINO_Z_OFF (16 * WINO_TB * WINO_CP)
#define WINO_DU_OFF (WINO_Z_OFF + 16 * WINO_TB * UKR_NR)
/* dU of panel p, transform xi, channel ci: [(p * 16 + xi) * CMAX + ci][32] */
#define WINO_DU_PANEL (16 * VTPU_WINO_CMAX * UKR_NR)
/* F(4 x 4)'s likewise, 36 transforms, tiles of at most WINO4_WG_NT columns */
#define WINO4_Z_OFF (36 * WINO4_TB * WINO_CP)
#define WINO4_DU_OFF (WINO4_Z_OFF + 36 * WINO4_TB * UKR_NR)
#define WINO4_DU_PANEL (36 * VTPU_WINO_CMAX * UKR_NR)
_Static_assert(WINO_DU_OFF + VTPU_WINO_WG_NT / UKR_NR * WINO_DU_PANEL <=
		       VTPU_GEMM_MEMO_OFF &&
		       WINO4_DU_OFF + VTPU_WINO4_WG_NT / UKR_NR *
				       WINO4_DU_PANEL <= VTPU_GEMM_MEMO_OFF,
	       "Winograd's V, Z and dU fit in the GEMM scratch");

/*
 * Z of columns @o0..@o0+@ot (at most 32) for @nt Winograd tiles from
 * (@tx, @ty) of image @n: z[(xi * WINO_TB + t) * 32 + o - o0]; outputs
 * past the image's edge count as 0.
 */
static noinline void wino_z(const struct vtpu_engine_gemm *g, u64 tx,
			    u64 ty, u64 n, u32 nt, u32 o0, u32 ot, float *z)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 twx = (w->ow + 1) / 2, twy = (w->oh + 1) / 2;
	u32 t, j, x;

	for (t = 0; t < nt; t++) {
		bool inside = 2 * ty + 1 < w->oh && 2 * tx + 1 < w->ow;

		for (j = 0; j < ot; j += 16) {
			u16 m = gemm_mask(gemm_min(16, ot - j));
			V16F y[4], q[8] GEMM_NOINIT;

			/* plain loads where they can be: wino_v() */
#pragma GCC unroll 4
			for (x = 0; x < 4; x++) {
				u64 oy = 2 * ty + x / 2, ox = 2 * tx + x % 2;
				const float *p = (const float *)g->b +
					((n * w->oh + oy) * w->ow + ox) *
					g->ldb + o0 + j;

				if (inside && m == 0xffff)
					y[x] = gemm_loadu(p);
				else
					y[x] = gemm_maskload(p, oy < w->oh &&
							     ox < w->ow ?
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
					       UKR_NR + j;

				gemm_storeu(d, q[2 * x]);
				gemm_storeu(d + WINO_TB * UKR_NR,
					    q[2 * x] + q[2 * x + 1]);
				gemm_storeu(d + 2 * WINO_TB * UKR_NR,
					    q[2 * x] - q[2 * x + 1]);
				gemm_storeu(d + 3 * WINO_TB * UKR_NR,
					    -q[2 * x + 1]);
			}
		}
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
}

/* dw (rows t * c + c0.., columns o0..) += G^T dU G, with the step's beta */
static noinline void wino_dw(const struct vtpu_gemm_step *st,
			     const float *du)
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
				d[x] = gemm_loadu(du + (u64)j / UKR_NR *
						  WINO_DU_PANEL +
						  ((u64)x * VTPU_WINO_CMAX +
						   ci) * UKR_NR + j % UKR_NR);
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

/* wino_v() for CONV_WGRAD, out of line: one copy of each */
static noinline void wino_v2(const struct vtpu_engine_gemm *g, u64 tx,
			     u64 ty, u64 n, u32 nt, u32 c0, u32 ct, float *v)
{
	wino_v(g, 2, WINO_TB, tx, ty, n, nt, c0, ct, v);
}

static noinline void wino_v4(const struct vtpu_engine_gemm *g, u64 tx,
			     u64 ty, u64 n, u32 nt, u32 c0, u32 ct, float *v)
{
	wino_v(g, 4, WINO4_TB, tx, ty, n, nt, c0, ct, v);
}

/*
 * F(4 x 4)'s Z = A dY A^T (dY 4 x 4, Z 6 x 6) of columns @o0..@o0+@ot
 * (at most 32) for @nt Winograd tiles from (@tx, @ty) of image @n:
 * z[(xi * WINO4_TB + t) * 32 + o - o0], as wino_z(): the columns' A dy,
 * stored, then each row's (A dY) A^T in place.
 */
static noinline void wino4_z(const struct vtpu_engine_gemm *g, u64 tx,
			     u64 ty, u64 n, u32 nt, u32 o0, u32 ot, float *z)
{
	const struct vtpu_engine_window *w = &g->win;
	u64 twx = vtpu_div_up(w->ow, 4), twy = vtpu_div_up(w->oh, 4);
	u64 xs = (u64)WINO4_TB * UKR_NR;
	u32 t, j, r, s;

	for (t = 0; t < nt; t++) {
		for (j = 0; j < ot; j += 16) {
			u16 m = gemm_mask(gemm_min(16, ot - j));
			float *zt = z + (u64)t * UKR_NR + j;
			V16F y[4] GEMM_NOINIT, q[6] GEMM_NOINIT;

			for (s = 0; s < 4; s++) {
				u64 ox = 4 * tx + s;

#pragma GCC unroll 4
				for (r = 0; r < 4; r++) {
					u64 oy = 4 * ty + r;

					y[r] = gemm_maskload((const float *)
						g->b + ((n * w->oh + oy) *
						w->ow + ox) * g->ldb + o0 + j,
						oy < w->oh && ox < w->ow ?
						m : 0);
				}
				wino4_z_1d(y, q);
#pragma GCC unroll 6
				for (r = 0; r < 6; r++)
					gemm_storeu(zt + (r * 6 + s) * xs, q[r]);
			}
#pragma GCC unroll 6
			for (r = 0; r < 6; r++)
				wino4_line(zt + r * 6 * xs, xs, WINO4_Z);
		}
		vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
}

/*
 * F(4 x 4)'s dw (rows t * c + c0.., columns o0..) += (6 G)^T dU (6 G) /
 * 36, with the step's beta: the columns' (6 G)^T du in registers, then
 * each row's times 6 G.
 */
static noinline void wino4_dw(const struct vtpu_gemm_step *st,
			      const float *du)
{
	const struct vtpu_engine_gemm *g = st->g;
	u32 c = g->win.c, ci, j, x, k;

	for (ci = 0; ci < st->mt; ci++) {
		for (j = 0; j < st->nt; j += 16) {
			u16 m = gemm_mask(gemm_min(16, st->nt - j));
			const float *dp = du + (u64)j / UKR_NR * WINO4_DU_PANEL +
					  (u64)ci * UKR_NR + j % UKR_NR;
			V16F d[6] GEMM_NOINIT, t[18] GEMM_NOINIT, r[3];

#pragma GCC unroll 6
			for (x = 0; x < 6; x++) {
#pragma GCC unroll 6
				for (k = 0; k < 6; k++)
					d[k] = gemm_loadu(dp + (u64)(k * 6 + x) *
							  VTPU_WINO_CMAX *
							  UKR_NR);
				wino4_gt(d, r);
				t[x] = r[0];
				t[6 + x] = r[1];
				t[12 + x] = r[2];
			}
#pragma GCC unroll 3
			for (x = 0; x < 3; x++) {
				wino4_gt(t + 6 * x, r);
				for (k = 0; k < 3; k++)
					gemm_store_row_mask(g->c + ((u64)(3 *
						x + k) * c + st->i0 + ci) *
						g->ldc + st->j0 + j,
						r[k] / 36.0f, r[k], m, 0, 1.0f,
						st->beta, NULL, 0);
			}
		}
	}
}

/*
 * dU (@xn transforms of @mt channels by a panel's @ot columns, at @dp) =
 * V x Z over @nt tiles of a block of @tb, plus @beta dU
 */
static noinline void wino_du(const float *v, const float *z, float *dp,
			     u32 xn, u32 tb, u32 nt, u32 mt, u32 ot,
			     float beta)
{
	u32 x, r;

	for (x = 0; x < xn; x++) {
		for (r = 0; r < mt; r += WINO_ROWS) {
			const float *a = v + (u64)x * tb * WINO_CP + r;
			const float *b = z + (u64)x * tb * UKR_NR;
			float *c = dp + ((u64)x * VTPU_WINO_CMAX + r) * UKR_NR;
			V16F acc[UKR_MR][2];

			if (ot > 16)
				ukr_acc(nt, a, b, acc, 2, 1, WINO_CP,
					WINO_ROWS);
			else
				ukr_acc(nt, a, b, acc, 1, 1, WINO_CP,
					WINO_ROWS);
			ukr_store(acc, c, UKR_NR, gemm_min(WINO_ROWS, mt - r),
				  UKR_NR, 1.0f, beta, NULL, 0, WINO_ROWS);
		}
	}
}

/*
 * A step of CONV_WGRAD in F(@f x @f, 3 x 3): V of a block of @tb tiles,
 * Z of a panel of it at @z_off, dU of the tile's panels at @du_off, each
 * @du_panel.
 */
static __always_inline void wino_wgrad_step(const struct vtpu_gemm_step *st,
					    float *v, u32 f, u32 tb,
					    u64 z_off, u64 du_off,
					    u64 du_panel)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	float *z = v + z_off, *du = v + du_off;
	u64 twx = vtpu_div_up(w->ow, f), twy = vtpu_div_up(w->oh, f), tx, ty, n;
	u32 xn = (f + 2) * (f + 2), i, t, jp;

	vtpu_xy_of(st->p0, twx, twy, &tx, &ty, &n);
	for (i = 0; i < st->kc; i += tb) {
		u32 nt = gemm_min(tb, st->kc - i);
		float beta = i ? 1.0f : 0.0f;

		if (f == 4)
			wino_v4(g, tx, ty, n, nt, st->i0, st->mt, v);
		else
			wino_v2(g, tx, ty, n, nt, st->i0, st->mt, v);
		/* the next block, of this step or the next (this tile's too) */
		wino_prefetch(g, tx, ty, n, nt, tb, st->i0, st->mt, st->j0,
			      st->nt);
		for (jp = 0; jp < st->nt; jp += UKR_NR) {
			u32 ot = gemm_min(UKR_NR, st->nt - jp);
			float *dp = du + (u64)jp / UKR_NR * du_panel;

			if (f == 4)
				wino4_z(g, tx, ty, n, nt, st->j0 + jp, ot, z);
			else
				wino_z(g, tx, ty, n, nt, st->j0 + jp, ot, z);
			wino_du(v, z, dp, xn, tb, nt, st->mt, ot, beta);
		}
		for (t = 0; t < nt; t++)
			vtpu_next_xy(&tx, &ty, &n, twx, twy);
	}
	if (f == 4)
		wino4_dw(st, du);
	else
		wino_dw(st, du);
}

void vtpu_gemm_step_avx512_wino_wgrad(const struct vtpu_gemm_step *st,
				      void *scratch)
{
	if (st->g->wino_f == 4)
		wino_wgrad_step(st, scratch, 4, WINO4_TB, WINO4_Z_OFF,
				WINO4_DU_OFF, WINO4_DU_PANEL);
	else
		wino_wgrad_step(st, scratch, 2, WINO_TB, WINO_Z_OFF,
				WINO_DU_OFF, WINO_DU_PANEL);
}

#endif /* __CHECKER__ */
