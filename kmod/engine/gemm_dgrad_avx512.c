// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * CONV_DGRAD with few input channels, for AVX-512F: the input gradient
 * scattered from each pixel of dy instead of gathered for each pixel of
 * dx. Compiled with -mavx512f.
 *
 * As an implicit GEMM, dx = im2col(dy padded by k - 1) W', whose columns
 * are x's c channels: with c <= 16 a vector of columns is mostly empty,
 * and most of a padded window's taps lie in the padding (a 12 x 12 input
 * gradient from an 8 x 8 dy under a 5 x 5 window: 2.25 times the real
 * products). Here each pixel of dy meets the weights once: v = W dy[p],
 * the kh * kw * c values its window adds to dx, with vectors along the
 * taps, full whatever c is; then v is added into dx where the window
 * lies, a tap row at a time (kw * c floats that are consecutive in dx
 * too), clipped at the image's edge, so nothing is computed for the
 * padding.
 *
 * A tile owns whole images of dx and its steps walk their pixels of dy
 * in order: each element of dx sums its terms in one order (pixel by
 * pixel, each pixel's sum over the filters in order) whatever the worker
 * count or tiling. The weights, turned (filter-major), are packed into
 * the scratch's B area by each call.
 */
#include "gemm_avx512.h"

#ifdef __CHECKER__	/* stand-ins for sparse: gemm_avx512.h */
void vtpu_gemm_step_avx512_dgrad(const struct vtpu_gemm_step *st, void *scratch)
{
	vtpu_gemm_step_scalar(st, scratch);
}
#else

/* Vectors of v summed at a time: their accumulators stay in registers. */
#define DG_NV 8u

/*
 * v[t0 .. t0 + 16 @nv) = sum over filters o of wt[o][..] * d[o], in order
 * of o; wt's rows are @ld floats apart.
 */
static __always_inline void dg_chunk(const float *wt, u64 ld, const float *d,
				     u32 oc, float *v, const u32 nv)
{
	V16F acc[DG_NV];
	u32 o, j;

#pragma GCC unroll 8
	for (j = 0; j < nv; j++)
		acc[j] = (V16F){ 0 };
	for (o = 0; o < oc; o++, wt += ld) {
		float dv = d[o];

#pragma GCC unroll 8
		for (j = 0; j < nv; j++)
			acc[j] += gemm_loadu(wt + 16 * j) * dv;
	}
#pragma GCC unroll 8
	for (j = 0; j < nv; j++)
		gemm_storeu(v + 16 * j, acc[j]);
}

/* v = W d for one pixel of dy: @kdp taps (a multiple of 16) */
static void dg_pixel(const float *wt, u32 kdp, const float *d, u32 oc,
		     float *v)
{
	u32 t, nv;

	for (t = 0; t < kdp; t += nv * 16) {
		nv = gemm_min(DG_NV, (kdp - t) / 16);
		switch (nv) {
		case 1:
			dg_chunk(wt + t, kdp, d, oc, v + t, 1);
			break;
		case 2:
			dg_chunk(wt + t, kdp, d, oc, v + t, 2);
			break;
		case 3:
			dg_chunk(wt + t, kdp, d, oc, v + t, 3);
			break;
		case 4:
			dg_chunk(wt + t, kdp, d, oc, v + t, 4);
			break;
		case 5:
			dg_chunk(wt + t, kdp, d, oc, v + t, 5);
			break;
		case 6:
			dg_chunk(wt + t, kdp, d, oc, v + t, 6);
			break;
		case 7:
			dg_chunk(wt + t, kdp, d, oc, v + t, 7);
			break;
		default:
			dg_chunk(wt + t, kdp, d, oc, v + t, 8);
			break;
		}
	}
}

/* dst[0 .. len) += src[0 .. len), a vector at a time */
static __always_inline void dg_add(float *dst, const float *src, u32 len)
{
	u32 i;

	for (i = 0; i < len; i += 16) {
		u16 m = gemm_mask(gemm_min(16, len - i));

		gemm_maskstore(dst + i, gemm_maskload(dst + i, m) +
					gemm_maskload(src + i, m), m);
	}
}

void vtpu_gemm_step_avx512_dgrad(const struct vtpu_gemm_step *st, void *scratch)
{
	const struct vtpu_engine_gemm *g = st->g;
	const struct vtpu_engine_window *w = &g->win;
	/* the convolution's own geometry (g->win is over dy: ops_gemm.c) */
	u32 c = g->n, oc = g->flip_oc, kh = w->kh, kw = w->kw;
	u32 h = w->oh, wd = w->ow, dh = w->h, dw = w->w;
	u32 ph = kh - 1 - w->ph, pw = kw - 1 - w->pw;
	u32 kdim = kh * kw * c, kdp = vtpu_div_up(kdim, 16) * 16;
	u64 img = (u64)h * wd * c, px_img = (u64)dh * dw;
	u64 p, p1 = (u64)st->p0 + st->kc;
	float *wt = scratch, *v = wt + (u64)oc * kdp;
	struct vtpu_gemm_memo *memo =
		(struct vtpu_gemm_memo *)((float *)scratch + VTPU_GEMM_MEMO_OFF);
	float *dx = g->c + st->i0 * img;
	const float *b = g->b;
	u64 i, t, o;

	/* the B area is ours now: no packed GEMM block is kept there */
	memo->seq = 0;
	if (st->p0 == 0 && st->beta != 1.0f) {
		for (i = 0; i < st->mt * img; i++)
			dx[i] = st->beta == 0.0f ? 0.0f : st->beta * dx[i];
	}
	/* wt[o][t] = W[t][o], zeroes past kdim */
	for (o = 0; o < oc; o++) {
		for (t = 0; t < kdim; t++)
			wt[o * kdp + t] = b[t * oc + o];
		for (; t < kdp; t++)
			wt[o * kdp + t] = 0.0f;
	}
	for (p = st->p0; p < p1; p++) {
		u64 n = p / px_img, r = p - n * px_img;
		u32 oy = (u32)(r / dw), ox = (u32)(r % dw), ky, lo, hi;
		const float *d = (const float *)g->a +
				 ((u64)(st->i0 + n) * px_img + r) * oc;
		s64 ix0 = (s64)ox - pw;

		if (p >= (u64)st->mt * px_img)
			break;	/* the last tile's fewer images */
		dg_pixel(wt, kdp, d, oc, v);
		lo = ix0 < 0 ? (u32)-ix0 : 0;
		hi = ix0 + kw > wd ? (u32)(wd - ix0) : kw;
		if (lo >= hi)
			continue;
		for (ky = 0; ky < kh; ky++) {
			s64 iy = (s64)oy + ky - ph;

			if (iy < 0 || iy >= h)
				continue;
			dg_add(dx + n * img + ((u64)iy * wd + (u64)(ix0 + lo)) * c,
			       v + (ky * kw + lo) * c, (hi - lo) * c);
		}
	}
}

#endif /* __CHECKER__ */
