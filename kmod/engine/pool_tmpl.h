/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * MAXPOOL's, MAXPOOL_GRAD's, AVGPOOL's and AVGPOOL_GRAD's loops, once per
 * SIMD level: ops_pool.c (the baseline) and ops_nhwc_avx2.c,
 * ops_nhwc_avx512.c each define POOL_SFX and include this file. The loops
 * run along the channels, contiguous in NHWC.
 *
 * When a step takes the whole window (or, for the gathers, all the taps:
 * every pool whose window fits one call), each output element or dx pixel
 * knows its pixels (or covering windows) up front: plain loops over them,
 * no walk, and the maxima and indices, or the sums, of a block of up to
 * 64 channels (four runs of POOL_LANES, in local arrays with a constant
 * trip count) stay in registers while the pixels go by, so that each one
 * is read 256 bytes in order rather than one cache line of every pixel
 * per run of 16 (a stride the prefetchers follow badly). The sums start
 * as 0 + the first term, as in memory from 0. Otherwise (windows cut into
 * steps) MAXPOOL takes runs of POOL_LANES channels and walks the window
 * for each; AVGPOOL and the gathers walk it once per pixel for the whole
 * run of channels, the sums in memory. Each element takes the same terms
 * in the same order either way and at every width (comparisons, sums in
 * (ky, kx) order, one division), so every path and level gives the same
 * bits.
 */
#ifndef POOL_SFX
#error "define POOL_SFX before including this"
#endif

#include "engine_internal.h"

#define POOL_CAT2(a, b) a##_##b
#define POOL_CAT(a, b) POOL_CAT2(a, b)
#define POOL_FN(name) POOL_CAT(name, POOL_SFX)

#define POOL_LANES 16u
#define POOL_BLOCK 64u

/*
 * y, index [0..len) (@lanes, a constant, if not 0) of window (n, oy, ox),
 * channels c0.., over the window positions of @r. The step that holds the
 * window's first pixel starts y and index from it; the later ones go on
 * from what they hold.
 */
static __always_inline void
POOL_FN(maxpool_run)(const struct vtpu_engine_conv *cv,
		     const struct vtpu_tap_range *r, float *y, u32 *idx,
		     u64 n, u64 oy, u64 ox, u64 c0, u64 len, const u64 lanes)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 i, m = lanes ? lanes : len;
	float b[POOL_LANES];
	u32 k[POOL_LANES];
	struct vtpu_window_walk w;
	bool first;

	vtpu_window_start(&w, g, r, oy, ox);
	first = (u64)w.ky0 * g->kw + (u64)w.kx0 >= r->r0 * g->kw + r->c0;
	if (!first)
		for (i = 0; i < m; i++) {
			b[i] = y[i];
			k[i] = idx[i];
		}
	/* pad < k: the window always holds a pixel */
	while (vtpu_window_next(&w)) {
		u64 pix = (u64)(w.y0 + w.ky) * g->w + (u64)(w.x0 + w.kx);
		const float *src = cv->x + (n * g->h * g->w + pix) * g->c + c0;
		u32 p = (u32)pix;

		if (first) {
			for (i = 0; i < m; i++) {
				b[i] = src[i];
				k[i] = p;
			}
			first = false;
			continue;
		}
		for (i = 0; i < m; i++) {
			float v = src[i], o = b[i];
			bool take = v > o || (v != v && o == o);

			b[i] = take ? v : o;
			k[i] = take ? p : k[i];
		}
	}
	if (first)
		return;
	for (i = 0; i < m; i++) {
		y[i] = b[i];
		idx[i] = k[i];
	}
}

/*
 * Whether the step takes all of the window positions or taps (@rows of
 * @ncols): one step, the loops without the walks.
 */
static inline bool POOL_FN(whole)(const struct vtpu_tap_range *r, u64 rows,
				  u64 ncols)
{
	return !r->r0 && !r->c0 && r->r1 + 1 == rows && r->c1 == ncols;
}

/*
 * The channels a whole-window path takes next of @len: a block of
 * POOL_BLOCK, two or one runs of POOL_LANES (constant widths, whose
 * values stay in registers), or the rest.
 */
static inline u64 POOL_FN(whole_width)(u64 len)
{
	if (len >= POOL_BLOCK)
		return POOL_BLOCK;
	if (len >= 2 * POOL_LANES)
		return 2 * POOL_LANES;
	return len >= POOL_LANES ? POOL_LANES : len;
}

/* One position of MAXPOOL for @m lanes: b, k against pixel @p's s */
static __always_inline void POOL_FN(max_tap)(const float *s, u32 p, float *b,
					     u32 *k, u64 m)
{
	u64 i;

	for (i = 0; i < m; i++) {
		float v = s[i], o = b[i];
		bool take = v > o || (v != v && o == o);

		b[i] = take ? v : o;
		k[i] = take ? p : k[i];
	}
}

/* @m lanes of b, k from pixel @p's s */
static __always_inline void POOL_FN(max_load)(const float *s, u32 p, float *b,
					      u32 *k, u64 m)
{
	u64 i;

	for (i = 0; i < m; i++) {
		b[i] = s[i];
		k[i] = p;
	}
}

/* @m lanes of y, index from b, k */
static __always_inline void POOL_FN(max_store)(float *y, u32 *q,
					       const float *b, const u32 *k,
					       u64 m)
{
	u64 i;

	for (i = 0; i < m; i++) {
		y[i] = b[i];
		q[i] = k[i];
	}
}

/*
 * maxpool_run()'s y, index [0..len) when the step takes the whole window:
 * its ny x nx pixels on the image from @src (channel c0 of its first
 * pixel, @p0) in (ky, kx) order, row stride @rs, pixel stride @cs, without
 * the walk. @lanes: POOL_BLOCK, four runs of POOL_LANES in registers, each
 * position reading a pixel's 256 bytes in order; POOL_LANES; or 0, @len.
 */
static __always_inline void
POOL_FN(maxpool_whole_run)(const float *src, u32 p0, u64 ny, u64 nx, u64 w,
			   u64 rs, u64 cs, float *y, u32 *idx, u64 len,
			   const u64 lanes)
{
	const u64 l = POOL_LANES;
	u64 ky, kx, m = lanes ? l : len;
	float b0[POOL_LANES], b1[POOL_LANES], b2[POOL_LANES], b3[POOL_LANES];
	u32 k0[POOL_LANES], k1[POOL_LANES], k2[POOL_LANES], k3[POOL_LANES];
	const float *s;

	POOL_FN(max_load)(src, p0, b0, k0, m);
	if (lanes >= 2 * l)
		POOL_FN(max_load)(src + l, p0, b1, k1, l);
	if (lanes == POOL_BLOCK) {
		POOL_FN(max_load)(src + 2 * l, p0, b2, k2, l);
		POOL_FN(max_load)(src + 3 * l, p0, b3, k3, l);
	}
	for (ky = 0; ky < ny; ky++) {
		for (kx = ky ? 0 : 1; kx < nx; kx++) {
			u32 p = p0 + (u32)(ky * w + kx);

			s = src + ky * rs + kx * cs;
			POOL_FN(max_tap)(s, p, b0, k0, m);
			if (lanes < 2 * l)
				continue;
			POOL_FN(max_tap)(s + l, p, b1, k1, l);
			if (lanes < POOL_BLOCK)
				continue;
			POOL_FN(max_tap)(s + 2 * l, p, b2, k2, l);
			POOL_FN(max_tap)(s + 3 * l, p, b3, k3, l);
		}
	}
	POOL_FN(max_store)(y, idx, b0, k0, m);
	if (lanes < 2 * l)
		return;
	POOL_FN(max_store)(y + l, idx + l, b1, k1, l);
	if (lanes < POOL_BLOCK)
		return;
	POOL_FN(max_store)(y + 2 * l, idx + 2 * l, b2, k2, l);
	POOL_FN(max_store)(y + 3 * l, idx + 3 * l, b3, k3, l);
}

/* MAXPOOL's window (n, oy, ox) when the step takes all of it */
static void POOL_FN(maxpool_whole)(const struct vtpu_engine_conv *cv,
				   const struct vtpu_tap_range *r, float *y,
				   u32 *idx, u64 n, u64 oy, u64 ox, u64 c0,
				   u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 pix, ny, nx, w, gw = g->w, cs = g->c, rs = gw * cs;
	struct vtpu_window_walk wk;
	const float *src;

	vtpu_window_start(&wk, g, r, oy, ox);
	if (wk.ky1 <= wk.ky0 || wk.kx1 <= wk.kx0)
		return;
	ny = (u64)(wk.ky1 - wk.ky0);
	nx = (u64)(wk.kx1 - wk.kx0);
	pix = (u64)(wk.y0 + wk.ky0) * g->w + (u64)(wk.x0 + wk.kx0);
	src = cv->x + (n * g->h * g->w + pix) * g->c + c0;
	for (; len; len -= w, src += w, y += w, idx += w) {
		w = POOL_FN(whole_width)(len);
		if (w == POOL_BLOCK)
			POOL_FN(maxpool_whole_run)(src, (u32)pix, ny, nx, gw,
						   rs, cs, y, idx, w,
						   POOL_BLOCK);
		else if (w == 2 * POOL_LANES)
			POOL_FN(maxpool_whole_run)(src, (u32)pix, ny, nx, gw,
						   rs, cs, y, idx, w,
						   2 * POOL_LANES);
		else if (w == POOL_LANES)
			POOL_FN(maxpool_whole_run)(src, (u32)pix, ny, nx, gw,
						   rs, cs, y, idx, w,
						   POOL_LANES);
		else
			POOL_FN(maxpool_whole_run)(src, (u32)pix, ny, nx, gw,
						   rs, cs, y, idx, w, 0);
	}
}

static void POOL_FN(maxpool_window)(const struct vtpu_engine_conv *cv,
				    const struct vtpu_tap_range *r, u64 out,
				    u64 n, u64 oy, u64 ox, u64 c0, u64 len)
{
	float *y = cv->y + out;
	u32 *idx = cv->index + out;

	if (POOL_FN(whole)(r, cv->win.kh, cv->win.kw)) {
		POOL_FN(maxpool_whole)(cv, r, y, idx, n, oy, ox, c0, len);
		return;
	}
	for (; len >= POOL_LANES; len -= POOL_LANES) {
		POOL_FN(maxpool_run)(cv, r, y, idx, n, oy, ox, c0, POOL_LANES,
				     POOL_LANES);
		y += POOL_LANES;
		idx += POOL_LANES;
		c0 += POOL_LANES;
	}
	if (len)
		POOL_FN(maxpool_run)(cv, r, y, idx, n, oy, ox, c0, len, 0);
}

/*
 * The windows along one axis that cover image row or column @i (window
 * o starts at o * s - pad, length k, of @on) when the step takes all the
 * taps: from the last one, @hi, down @count of them, in the order of the
 * taps (vtpu_cover_next()).
 */
static inline void POOL_FN(cover_axis)(u64 i, u32 pad, u32 s, u32 k, u32 on,
				       u64 *hi, u64 *count)
{
	u64 ii = i + pad, o = ii / s, kk, m = 0;

	if (o > (u64)on - 1)
		o = (u64)on - 1;
	for (kk = ii - o * s; kk < k && m <= o; kk += s)
		m++;
	*hi = o;
	*count = m;
}

/*
 * One covering window of MAXPOOL_GRAD for @m lanes: d += v named @p, or
 * (@first) d = 0 + it, as the sum in memory from 0 (not a loop zeroing d:
 * made a memset(), it would keep the sums out of registers).
 */
static __always_inline void POOL_FN(grad_tap)(const float *v, const u32 *q,
					      u32 p, float *d, u64 m,
					      bool first)
{
	u64 i;

	/* dy loaded unconditionally: the select vectorises */
	if (first)
		for (i = 0; i < m; i++)
			d[i] = 0.0f + (q[i] == p ? v[i] : 0.0f);
	else
		for (i = 0; i < m; i++)
			d[i] += q[i] == p ? v[i] : 0.0f;
}

/*
 * maxpool_grad_pixel()'s dx [0..len) of pixel @p when the step takes all
 * the taps: dy, index at @o (channel c0 of the last covering window),
 * then back @ny rows of windows (stride @rs) by @nx windows (stride @cs),
 * at least one, the sums in registers; @lanes as maxpool_whole_run's.
 */
static __always_inline void
POOL_FN(maxpool_grad_whole_run)(const float *dy, const u32 *idx, u32 p,
				u64 ny, u64 nx, u64 rs, u64 cs, float *dx,
				u64 len, const u64 lanes)
{
	const u64 l = POOL_LANES;
	u64 i, a, b, m = lanes ? l : len;
	float d0[POOL_LANES], d1[POOL_LANES], d2[POOL_LANES], d3[POOL_LANES];

	for (a = 0; a < ny; a++) {
		for (b = 0; b < nx; b++) {
			const float *v = dy - a * rs - b * cs;
			const u32 *q = idx - a * rs - b * cs;
			bool first = !a && !b;

			POOL_FN(grad_tap)(v, q, p, d0, m, first);
			if (lanes < 2 * l)
				continue;
			POOL_FN(grad_tap)(v + l, q + l, p, d1, l, first);
			if (lanes < POOL_BLOCK)
				continue;
			POOL_FN(grad_tap)(v + 2 * l, q + 2 * l, p, d2, l, first);
			POOL_FN(grad_tap)(v + 3 * l, q + 3 * l, p, d3, l, first);
		}
	}
	for (i = 0; i < m; i++)
		dx[i] = d0[i];
	if (lanes < 2 * l)
		return;
	for (i = 0; i < l; i++)
		dx[l + i] = d1[i];
	if (lanes < POOL_BLOCK)
		return;
	for (i = 0; i < l; i++)
		dx[2 * l + i] = d2[i];
	for (i = 0; i < l; i++)
		dx[3 * l + i] = d3[i];
}

/* MAXPOOL_GRAD's pixel (n, iy, ix) when the step takes all the taps */
static void POOL_FN(maxpool_grad_whole)(const struct vtpu_engine_conv *cv,
					float *dx, u64 n, u64 iy, u64 ix,
					u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	u32 p = (u32)(iy * g->w + ix);
	u64 oy, ox, ny, nx, o, w, rs = (u64)g->ow * g->c;
	const float *dy;
	const u32 *idx;

	POOL_FN(cover_axis)(iy, g->ph, g->sh, g->kh, g->oh, &oy, &ny);
	POOL_FN(cover_axis)(ix, g->pw, g->sw, g->kw, g->ow, &ox, &nx);
	if (!ny || !nx) {
		/* no window covers the pixel (strides past the kernel) */
		for (o = 0; o < len; o++)
			dx[o] = 0.0f;
		return;
	}
	o = ((n * g->oh + oy) * g->ow + ox) * g->c + c0;
	dy = cv->y + o;
	idx = cv->index + o;
	for (; len; len -= w, dy += w, idx += w, dx += w) {
		w = POOL_FN(whole_width)(len);
		if (w == POOL_BLOCK)
			POOL_FN(maxpool_grad_whole_run)(dy, idx, p, ny, nx, rs,
							g->c, dx, w,
							POOL_BLOCK);
		else if (w == 2 * POOL_LANES)
			POOL_FN(maxpool_grad_whole_run)(dy, idx, p, ny, nx, rs,
							g->c, dx, w,
							2 * POOL_LANES);
		else if (w == POOL_LANES)
			POOL_FN(maxpool_grad_whole_run)(dy, idx, p, ny, nx, rs,
							g->c, dx, w,
							POOL_LANES);
		else
			POOL_FN(maxpool_grad_whole_run)(dy, idx, p, ny, nx, rs,
							g->c, dx, w, 0);
	}
}

/*
 * dx [0..len) of pixel (n, iy, ix), channels c0.., over the taps of @r:
 * dy of the windows whose index names it. The gathers walk the covering
 * windows once for the whole run of channels (the walk divides), dx in
 * memory.
 */
static void POOL_FN(maxpool_grad_pixel)(const struct vtpu_engine_conv *cv,
					const struct vtpu_tap_range *r, u64 e,
					u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_cover_walk t;
	u32 p = (u32)(iy * g->w + ix);
	float *dx = cv->x + e;
	u64 i;

	if (POOL_FN(whole)(r, vtpu_taps(g->kh, g->sh, g->oh),
			   vtpu_taps(g->kw, g->sw, g->ow))) {
		POOL_FN(maxpool_grad_whole)(cv, dx, n, iy, ix, c0, len);
		return;
	}
	if (!r->r0 && !r->c0)
		for (i = 0; i < len; i++)
			dx[i] = 0.0f;
	vtpu_cover_start(&t, g, r, iy, ix);
	while (vtpu_cover_next(&t)) {
		u64 o = ((n * g->oh + t.oy) * g->ow + t.ox) * g->c + c0;
		const float *dy = cv->y + o;
		const u32 *idx = cv->index + o;

		/* dy loaded unconditionally: the select vectorises */
		for (i = 0; i < len; i++) {
			float v = dy[i];

			dx[i] += idx[i] == p ? v : 0.0f;
		}
	}
}

/* Pixels of the image in window o (start o * s - pad, length k, of n). */
static inline u64 POOL_FN(avg_extent)(u64 o, u32 s, u32 pad, u32 k, u32 n)
{
	s64 a = (s64)(o * s) - pad, b = a + k;

	if (a < 0)
		a = 0;
	if (b > (s64)n)
		b = n;
	return (u64)(b - a);
}

/*
 * One term of the average pools for @m lanes: d += s (or, @div, s / cnt),
 * or (@first) d = 0 + it, as the sums in memory from 0.
 */
static __always_inline void POOL_FN(avg_tap)(const float *s, float cnt,
					     float *d, u64 m, bool first,
					     const bool div)
{
	u64 i;

	if (first)
		for (i = 0; i < m; i++)
			d[i] = 0.0f + (div ? s[i] / cnt : s[i]);
	else
		for (i = 0; i < m; i++)
			d[i] += div ? s[i] / cnt : s[i];
}

/* @m lanes of y from d (@div: divided by cnt) */
static __always_inline void POOL_FN(avg_out)(float *y, const float *d,
					     float cnt, u64 m, const bool div)
{
	u64 i;

	for (i = 0; i < m; i++)
		y[i] = div ? d[i] / cnt : d[i];
}

/*
 * The average pools' sums of [0..len) when the step takes all of the
 * window or the taps, in registers (@lanes as maxpool_whole_run's):
 * AVGPOOL (@grad false) sums its ny x nx pixels from @src in (ky, kx)
 * order, rows @rs apart, pixels @cs apart, and divides by @cnt;
 * AVGPOOL_GRAD sums dy / count of its covering windows from the last one,
 * @src, back (rows @rs, windows @cs apart), the counts from windows
 * (@oy, @ox) back.
 */
static __always_inline void
POOL_FN(avg_whole_run)(const struct vtpu_engine_window *g, const float *src,
		       u64 ny, u64 nx, u64 rs, u64 cs, float cnt, u64 oy,
		       u64 ox, float *y, u64 len, const u64 lanes,
		       const bool grad)
{
	const u64 l = POOL_LANES;
	u64 a, b, m = lanes ? l : len;
	float d0[POOL_LANES], d1[POOL_LANES], d2[POOL_LANES], d3[POOL_LANES];

	for (a = 0; a < ny; a++) {
		for (b = 0; b < nx; b++) {
			const float *v = grad ? src - a * rs - b * cs :
					 src + a * rs + b * cs;
			bool first = !a && !b;

			if (grad)
				cnt = (float)(POOL_FN(avg_extent)(oy - a, g->sh,
								  g->ph, g->kh,
								  g->h) *
					      POOL_FN(avg_extent)(ox - b, g->sw,
								  g->pw, g->kw,
								  g->w));
			POOL_FN(avg_tap)(v, cnt, d0, m, first, grad);
			if (lanes < 2 * l)
				continue;
			POOL_FN(avg_tap)(v + l, cnt, d1, l, first, grad);
			if (lanes < POOL_BLOCK)
				continue;
			POOL_FN(avg_tap)(v + 2 * l, cnt, d2, l, first, grad);
			POOL_FN(avg_tap)(v + 3 * l, cnt, d3, l, first, grad);
		}
	}
	POOL_FN(avg_out)(y, d0, cnt, m, !grad);
	if (lanes < 2 * l)
		return;
	POOL_FN(avg_out)(y + l, d1, cnt, l, !grad);
	if (lanes < POOL_BLOCK)
		return;
	POOL_FN(avg_out)(y + 2 * l, d2, cnt, l, !grad);
	POOL_FN(avg_out)(y + 3 * l, d3, cnt, l, !grad);
}

/* avg_whole_run() over [0..len): blocks of 64, runs of 16, the rest */
static __always_inline void
POOL_FN(avg_whole)(const struct vtpu_engine_window *g, const float *src,
		   u64 ny, u64 nx, u64 rs, float cnt, u64 oy, u64 ox, float *y,
		   u64 len, const bool grad)
{
	u64 w;

	for (; len; len -= w, src += w, y += w) {
		w = POOL_FN(whole_width)(len);
		if (w == POOL_BLOCK)
			POOL_FN(avg_whole_run)(g, src, ny, nx, rs, g->c, cnt,
					       oy, ox, y, w, POOL_BLOCK, grad);
		else if (w == 2 * POOL_LANES)
			POOL_FN(avg_whole_run)(g, src, ny, nx, rs, g->c, cnt,
					       oy, ox, y, w, 2 * POOL_LANES,
					       grad);
		else if (w == POOL_LANES)
			POOL_FN(avg_whole_run)(g, src, ny, nx, rs, g->c, cnt,
					       oy, ox, y, w, POOL_LANES, grad);
		else
			POOL_FN(avg_whole_run)(g, src, ny, nx, rs, g->c, cnt,
					       oy, ox, y, w, 0, grad);
	}
}

/*
 * AVGPOOL's y [0..len) of window (n, oy, ox), channels c0..: each window
 * walked once for the whole run (short windows: walking one per lanes
 * cost more than the sums in memory).
 */
static void POOL_FN(avgpool_window)(const struct vtpu_engine_conv *cv,
				    const struct vtpu_tap_range *r, u64 out,
				    u64 n, u64 oy, u64 ox, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_window_walk w;
	float *y = cv->y + out;
	float cnt;
	u64 i;

	vtpu_window_start(&w, g, r, oy, ox);
	if (POOL_FN(whole)(r, g->kh, g->kw) && w.ky0 < w.ky1 &&
	    w.kx0 < w.kx1) {
		i = (u64)(w.y0 + w.ky0) * g->w + (u64)(w.x0 + w.kx0);
		cnt = (float)(POOL_FN(avg_extent)(oy, g->sh, g->ph, g->kh,
						  g->h) *
			      POOL_FN(avg_extent)(ox, g->sw, g->pw, g->kw,
						  g->w));
		POOL_FN(avg_whole)(g, cv->x + (n * g->h * g->w + i) * g->c + c0,
				   (u64)(w.ky1 - w.ky0), (u64)(w.kx1 - w.kx0),
				   (u64)g->w * g->c, cnt, 0, 0, y, len, false);
		return;
	}
	if (!r->r0 && !r->c0)
		for (i = 0; i < len; i++)
			y[i] = 0.0f;
	while (vtpu_window_next(&w)) {
		u64 pix = (u64)(w.y0 + w.ky) * g->w + (u64)(w.x0 + w.kx);
		const float *src = cv->x + (n * g->h * g->w + pix) * g->c + c0;

		for (i = 0; i < len; i++)
			y[i] += src[i];
	}
	if (r->r1 + 1 == g->kh && r->c1 == g->kw) {
		/* pad < k and the last window starts inside: cnt >= 1 */
		cnt = (float)(POOL_FN(avg_extent)(oy, g->sh, g->ph, g->kh,
						  g->h) *
			      POOL_FN(avg_extent)(ox, g->sw, g->pw, g->kw,
						  g->w));
		for (i = 0; i < len; i++)
			y[i] /= cnt;
	}
}

/* AVGPOOL_GRAD's dx [0..len) of pixel (n, iy, ix), as MAXPOOL_GRAD's */
static void POOL_FN(avgpool_grad_pixel)(const struct vtpu_engine_conv *cv,
					const struct vtpu_tap_range *r, u64 e,
					u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_cover_walk t;
	float *dx = cv->x + e;
	u64 i, oy, ox, ny, nx;
	float cnt;

	if (POOL_FN(whole)(r, vtpu_taps(g->kh, g->sh, g->oh),
			   vtpu_taps(g->kw, g->sw, g->ow))) {
		POOL_FN(cover_axis)(iy, g->ph, g->sh, g->kh, g->oh, &oy, &ny);
		POOL_FN(cover_axis)(ix, g->pw, g->sw, g->kw, g->ow, &ox, &nx);
		if (ny && nx) {
			i = ((n * g->oh + oy) * g->ow + ox) * g->c + c0;
			POOL_FN(avg_whole)(g, cv->y + i, ny, nx,
					   (u64)g->ow * g->c, 0.0f, oy, ox, dx,
					   len, true);
			return;
		}
	}
	if (!r->r0 && !r->c0)
		for (i = 0; i < len; i++)
			dx[i] = 0.0f;
	vtpu_cover_start(&t, g, r, iy, ix);
	while (vtpu_cover_next(&t)) {
		u64 o = ((n * g->oh + t.oy) * g->ow + t.ox) * g->c + c0;
		const float *dy = cv->y + o;

		cnt = (float)(POOL_FN(avg_extent)(t.oy, g->sh, g->ph, g->kh,
						  g->h) *
			      POOL_FN(avg_extent)(t.ox, g->sw, g->pw, g->kw,
						  g->w));
		for (i = 0; i < len; i++)
			dx[i] += dy[i] / cnt;
	}
}

/* Elements [e, end) of a pool's tile at step @step (vtpu_pool_run()) */
void POOL_FN(vtpu_pool_range)(const struct vtpu_engine_op *op, u32 step,
			      u64 e, u64 end)
{
	switch (op->opcode) {
	case VTPU_OP_MAXPOOL:
		vtpu_window_range(&op->conv, step, e, end, false,
				  POOL_FN(maxpool_window));
		break;
	case VTPU_OP_MAXPOOL_GRAD:
		vtpu_window_range(&op->conv, step, e, end, true,
				  POOL_FN(maxpool_grad_pixel));
		break;
	case VTPU_OP_AVGPOOL:
		vtpu_window_range(&op->conv, step, e, end, false,
				  POOL_FN(avgpool_window));
		break;
	default:	/* VTPU_OP_AVGPOOL_GRAD */
		vtpu_window_range(&op->conv, step, e, end, true,
				  POOL_FN(avgpool_grad_pixel));
	}
}
