// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * CONV_WGRAD, direct, for AVX-512F: the weight gradient summed in
 * registers from x and dy where they are stored, nothing packed.
 * Compiled with -mavx512f.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-ins for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512_wgrad(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

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
 * 16 v on): the step's sum, into C. With @pf, dy is prefetched @pf floats
 * ahead.
 */
static __always_inline void wg_block(const struct vtpu_gemm_step *st, u32 ky,
				     u32 q0, u32 rows, u32 nv, u64 masks,
				     u64 pf, float *c)
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
			for (v = 0; v < nv; v++) {
				if (pf)
					__builtin_prefetch(d + pf + 16 * v);
				dv[v] = gemm_maskload(d + 16 * v, m[v]);
			}
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
					  u64 masks, u64 pf, float *c)
{
	switch (rows) {
	case 1:
		wg_block(st, ky, q0, 1, nv, masks, pf, c);
		break;
	case 2:
		wg_block(st, ky, q0, 2, nv, masks, pf, c);
		break;
	case 3:
		wg_block(st, ky, q0, 3, nv, masks, pf, c);
		break;
	case 4:
		wg_block(st, ky, q0, 4, nv, masks, pf, c);
		break;
	case 5:
		wg_block(st, ky, q0, 5, nv, masks, pf, c);
		break;
	case 6:
		wg_block(st, ky, q0, 6, nv, masks, pf, c);
		break;
	case 7:
		wg_block(st, ky, q0, 7, nv, masks, pf, c);
		break;
	case 8:
		wg_block(st, ky, q0, 8, nv, masks, pf, c);
		break;
	case 9:
		wg_block(st, ky, q0, 9, nv, masks, pf, c);
		break;
	case 10:
		wg_block(st, ky, q0, 10, nv, masks, pf, c);
		break;
	case 11:
		wg_block(st, ky, q0, 11, nv, masks, pf, c);
		break;
	default:
		wg_block(st, ky, q0, 12, nv, masks, pf, c);
		break;
	}
}

static noinline void wg_block_any(const struct vtpu_gemm_step *st, u32 ky,
				  u32 q0, u32 rows, u32 nv, u64 masks, u64 pf,
				  float *c)
{
	/* the common case, two whole vectors: constant masks, plain loads */
	if (masks == 0xffffffffu)
		wg_block_rows(st, ky, q0, rows, 2, 0xffffffffu, pf, c);
	else if (nv == 1)
		wg_block_rows(st, ky, q0, rows, 1, masks, pf, c);
	else
		wg_block_rows(st, ky, q0, rows, 2, masks, pf, c);
}

_Static_assert(VTPU_WG_RMAX == 12 && VTPU_WG_NT == 32,
	       "wg_block_any() has a case for every block");

/*
 * dy streams by once a step, in the step's first block (the others find
 * it in the caches), a vector or two of each pixel's row: a stride the
 * hardware prefetchers did not keep ahead of. A first layer's (27 rows,
 * few FMAs a line of dy) waited on it: 64 x 64x64 x 3 into 64 filters took
 * 20 ms on one thread, 8.5 with dy prefetched WG_PF_PIXELS ahead. Only
 * for a dy larger than the caches hold (WG_PF_BYTES): where it is in them
 * (a LeNet's second layer, 1.2 MB), the prefetches cost 10%.
 */
#define WG_PF_PIXELS 64
#define WG_PF_BYTES (4u << 20)

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
	u64 masks = 0, pf = 0;

	if ((u64)g->k * g->ldb * sizeof(float) > WG_PF_BYTES)
		pf = (u64)WG_PF_PIXELS * g->ldb;
	for (v = 0; v < 2; v++)
		masks |= (u64)gemm_mask(st->nt > 16 * v ?
					gemm_min(st->nt - 16 * v, 16) : 0)
			 << (16 * v);
	while (row < st->i0 + st->mt) {
		u32 ky = row / run, q = row - ky * run;
		u32 bi = (u32)(((u64)q * nb + run - 1) / run);
		u32 q1 = (u32)((u64)(bi + 1) * run / nb);

		wg_block_any(st, ky, q, q1 - q, nv, masks,
			     row == st->i0 ? pf : 0,
			     g->c + (u64)row * g->ldc + st->j0);
		row += q1 - q;
	}
}

#endif /* __CHECKER__ */
