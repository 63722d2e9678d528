/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * DWCONV's, DWCONV_DGRAD's and DWCONV_WGRAD's loops, once per SIMD level:
 * ops_dwconv.c (the baseline) and ops_nhwc_avx2.c, ops_nhwc_avx512.c
 * each define DW_SFX and include this file. The inner loops run along the
 * channels, contiguous in NHWC, so the compiler vectorises them at the
 * level's width while each element keeps its order of terms; with no
 * contraction into FMA (-ffp-contract=off, engine.mk) every level gives
 * the same bits.
 */
#ifndef DW_SFX
#error "define DW_SFX before including this"
#endif

#include "engine_internal.h"

#define DW_CAT2(a, b) a##_##b
#define DW_CAT(a, b) DW_CAT2(a, b)
#define DW_FN(name) DW_CAT(name, DW_SFX)

/*
 * With a depth multiplier of 1, the forward and DGRAD compute blocks of
 * DW_LANES channels whose sums stay in registers while the taps go by:
 * a constant trip count and a local array, which the compiler keeps in
 * vectors. Each element adds the same terms in the same order as the
 * loops of any length below. WGRAD's sums, every tap of a block of
 * channels, stay in scratch (L1) while the windows go by, added in lanes.
 */
#define DW_LANES 16u

/* y[o0, o0 + DW_LANES) of window (n, oy, ox) */
static void DW_FN(dw_fwd_block)(const struct vtpu_engine_dwconv *d,
				float *dst, u64 n, s64 iy0, s64 ix0, u64 o0)
{
	const struct vtpu_engine_window *g = &d->win;
	float a[DW_LANES];
	u32 ky, kx, j;

	for (j = 0; j < DW_LANES; j++)
		a[j] = 0.0f;
	for (ky = 0; ky < g->kh; ky++) {
		s64 iy = iy0 + ky;

		if (iy < 0 || iy >= g->h)
			continue;
		for (kx = 0; kx < g->kw; kx++) {
			s64 ix = ix0 + kx;
			const float *xp, *wp;

			if (ix < 0 || ix >= g->w)
				continue;
			xp = d->x + ((n * g->h + (u64)iy) * g->w + (u64)ix) *
					    g->c + o0;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm + o0;
			for (j = 0; j < DW_LANES; j++)
				a[j] += xp[j] * wp[j];
		}
	}
	if (d->bias)
		for (j = 0; j < DW_LANES; j++)
			a[j] += d->bias[o0 + j];
	if (d->flags & VTPU_CONV_RELU)
		for (j = 0; j < DW_LANES; j++)
			a[j] = a[j] < 0.0f ? 0.0f : a[j];
	for (j = 0; j < DW_LANES; j++)
		dst[j] = a[j];
}

/* dx[c0, c0 + DW_LANES) of pixel (n, iy, ix) */
static void DW_FN(dw_dgrad_block)(const struct vtpu_engine_dwconv *d,
				  float *dst, u64 n, u64 iy, u64 ix, u64 c0)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 ty = iy + g->ph, tx = ix + g->pw, oy, ox;
	float a[DW_LANES];
	u32 ky, kx, j;

	for (j = 0; j < DW_LANES; j++)
		a[j] = (d->flags & VTPU_CONV_ACCUMULATE) ? dst[j] : 0.0f;
	for (ky = 0; ky < g->kh && ky <= ty; ky++) {
		if ((ty - ky) % g->sh)
			continue;
		oy = (ty - ky) / g->sh;
		if (oy >= g->oh)
			continue;
		for (kx = 0; kx < g->kw && kx <= tx; kx++) {
			const float *dyp, *wp;

			if ((tx - kx) % g->sw)
				continue;
			ox = (tx - kx) / g->sw;
			if (ox >= g->ow)
				continue;
			dyp = d->y + ((n * g->oh + oy) * g->ow + ox) * d->cm +
			      c0;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm + c0;
			for (j = 0; j < DW_LANES; j++)
				a[j] += dyp[j] * wp[j];
		}
	}
	for (j = 0; j < DW_LANES; j++)
		dst[j] = a[j];
}

/* y[o0, o0 + len) of window (n, oy, ox) */
static void DW_FN(dwconv_pixel)(const struct vtpu_engine_dwconv *d,
				float *dst, u64 n, u64 oy, u64 ox, u64 o0,
				u64 len)
{
	const struct vtpu_engine_window *g = &d->win;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0 = (s64)(ox * g->sw) - g->pw;
	u32 ky, kx, m0 = (u32)(o0 % d->mult), m;
	u64 i, ci, c0 = o0 / d->mult;

	for (; d->mult == 1 && len >= DW_LANES; len -= DW_LANES) {
		DW_FN(dw_fwd_block)(d, dst, n, iy0, ix0, o0);
		dst += DW_LANES;
		o0 += DW_LANES;
	}
	if (!len)
		return;
	for (i = 0; i < len; i++)
		dst[i] = 0.0f;
	for (ky = 0; ky < g->kh; ky++) {
		s64 iy = iy0 + ky;

		if (iy < 0 || iy >= g->h)
			continue;
		for (kx = 0; kx < g->kw; kx++) {
			s64 ix = ix0 + kx;
			const float *xp, *wp;

			if (ix < 0 || ix >= g->w)
				continue;
			xp = d->x + ((n * g->h + (u64)iy) * g->w + (u64)ix) *
					    g->c;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm + o0;
			if (d->mult == 1) {
				xp += o0;
				for (i = 0; i < len; i++)
					dst[i] += xp[i] * wp[i];
				continue;
			}
			for (i = 0, ci = c0, m = m0; i < len; i++) {
				dst[i] += xp[ci] * wp[i];
				if (++m == d->mult) {
					m = 0;
					ci++;
				}
			}
		}
	}
	if (d->bias)
		for (i = 0; i < len; i++)
			dst[i] += d->bias[o0 + i];
	if (d->flags & VTPU_CONV_RELU)
		for (i = 0; i < len; i++)
			dst[i] = dst[i] < 0.0f ? 0.0f : dst[i];
}

/* dx[c0, c0 + len) of pixel (n, iy, ix) */
static void DW_FN(dwconv_dgrad_pixel)(const struct vtpu_engine_dwconv *d,
				      float *dst, u64 n, u64 iy, u64 ix,
				      u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 ty = iy + g->ph, tx = ix + g->pw, oy, ox, i, o;
	u32 ky, kx, m;

	for (; d->mult == 1 && len >= DW_LANES; len -= DW_LANES) {
		DW_FN(dw_dgrad_block)(d, dst, n, iy, ix, c0);
		dst += DW_LANES;
		c0 += DW_LANES;
	}
	if (!len)
		return;
	if (!(d->flags & VTPU_CONV_ACCUMULATE))
		for (i = 0; i < len; i++)
			dst[i] = 0.0f;
	for (ky = 0; ky < g->kh && ky <= ty; ky++) {
		if ((ty - ky) % g->sh)
			continue;
		oy = (ty - ky) / g->sh;
		if (oy >= g->oh)
			continue;
		for (kx = 0; kx < g->kw && kx <= tx; kx++) {
			const float *dyp, *wp;

			if ((tx - kx) % g->sw)
				continue;
			ox = (tx - kx) / g->sw;
			if (ox >= g->ow)
				continue;
			dyp = d->y + ((n * g->oh + oy) * g->ow + ox) * d->cm;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm;
			if (d->mult == 1) {
				dyp += c0;
				wp += c0;
				for (i = 0; i < len; i++)
					dst[i] += dyp[i] * wp[i];
				continue;
			}
			for (i = 0; i < len; i++) {
				o = (c0 + i) * d->mult;
				for (m = 0; m < d->mult; m++)
					dst[i] += dyp[o + m] * wp[o + m];
			}
		}
	}
}

/* Output elements [e, end) of the forward or of DGRAD. */
void DW_FN(vtpu_dwconv_range)(const struct vtpu_engine_dwconv *d,
			      bool dgrad, u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 per = dgrad ? g->c : d->cm;
	u64 c0 = e % per, x, y, n, len;

	if (dgrad)
		vtpu_xy_of(e / per, g->w, g->h, &x, &y, &n);
	else
		vtpu_xy_of(e / per, g->ow, g->oh, &x, &y, &n);
	while (e < end) {
		len = vtpu_min_u64(per - c0, end - e);
		if (dgrad) {
			DW_FN(dwconv_dgrad_pixel)(d, d->x + e, n, y, x, c0,
						  len);
			vtpu_next_xy(&x, &y, &n, g->w, g->h);
		} else {
			DW_FN(dwconv_pixel)(d, d->y + e, n, y, x, c0, len);
			vtpu_next_xy(&x, &y, &n, g->ow, g->oh);
		}
		e += len;
		c0 = 0;
	}
}

/*
 * WGRAD: the most channels a walk over the windows keeps in registers,
 * four vectors of the level (more spill, with the products beside them).
 */
#undef DW_WG_LANES
#if defined(__AVX512F__)
#define DW_WG_LANES 64u
#elif defined(__AVX2__)
#define DW_WG_LANES 32u
#else
#define DW_WG_LANES 16u
#endif

/*
 * acc[0, len) (len <= DW_WG_LANES) += dw of tap (ky, kx), channels o0..
 * (a depth multiplier of 1), over windows [r, r_end) in order. The
 * windows go by in runs along a row of the output, those whose pixel of
 * the tap falls on the image. With @lanes (a constant: len), the sums stay
 * in a local array with a constant trip count, in registers, and the
 * products go to another, so that no store may alias x or dy.
 */
static __always_inline void
DW_FN(dw_wgrad_walk)(const struct vtpu_engine_dwconv *d, float *acc,
		     u32 ky, u32 kx, u64 o0, u64 len, u64 r, u64 r_end,
		     const u64 lanes)
{
	const struct vtpu_engine_window *g = &d->win;
	s64 lim = (s64)g->w + g->pw - kx;
	u64 lo0 = kx >= g->pw ? 0 : (g->pw - kx + g->sw - 1) / g->sw;
	u64 hi0 = lim <= 0 ? 0 : ((u64)lim + g->sw - 1) / g->sw;
	u64 xs = (u64)g->sw * g->c, ox, oy, n, seg, lo, hi, o, i;
	float a[DW_WG_LANES], p[DW_WG_LANES];
	const float *xp, *dyp;

	for (i = 0; i < (lanes ? lanes : len); i++)
		a[i] = acc[i];
	vtpu_xy_of(r, g->ow, g->oh, &ox, &oy, &n);
	for (; r < r_end; r += seg, ox = 0) {
		s64 iy = (s64)(oy * g->sh + ky) - g->ph;

		seg = vtpu_min_u64(g->ow - ox, r_end - r);
		lo = lo0 > ox ? lo0 : ox;
		hi = vtpu_min_u64(hi0, ox + seg);
		if (iy >= 0 && iy < g->h && lo < hi) {
			xp = d->x + ((n * g->h + (u64)iy) * g->w +
				     (lo * g->sw + kx - g->pw)) * g->c + o0;
			dyp = d->y + (r + lo - ox) * d->cm + o0;
			for (o = lo; o < hi; o++, xp += xs, dyp += d->cm) {
				if (!lanes) {
					for (i = 0; i < len; i++)
						a[i] += xp[i] * dyp[i];
					continue;
				}
				for (i = 0; i < lanes; i++)
					p[i] = xp[i] * dyp[i];
				for (i = 0; i < lanes; i++)
					a[i] += p[i];
			}
		}
		if (++oy == g->oh) {
			oy = 0;
			n++;
		}
	}
	for (i = 0; i < (lanes ? lanes : len); i++)
		acc[i] = a[i];
}

/* dw_wgrad_walk() at len's width: 16, 32, 64 channels in registers */
static void DW_FN(dw_wgrad_tap)(const struct vtpu_engine_dwconv *d,
				float *acc, u32 ky, u32 kx, u64 o0, u64 len,
				u64 r, u64 r_end)
{
	if (len == DW_WG_LANES)
		DW_FN(dw_wgrad_walk)(d, acc, ky, kx, o0, len, r, r_end,
				     DW_WG_LANES);
	else if (len == 16 && DW_WG_LANES > 16)
		DW_FN(dw_wgrad_walk)(d, acc, ky, kx, o0, len, r, r_end, 16);
	else if (len == 32 && DW_WG_LANES > 32)
		DW_FN(dw_wgrad_walk)(d, acc, ky, kx, o0, len, r, r_end, 32);
	else
		DW_FN(dw_wgrad_walk)(d, acc, ky, kx, o0, len, r, r_end, 0);
}

/*
 * dw of every tap, channels [o0, o0 + len), over windows [r, r_end) in
 * order: a step's windows, a few hundred, stay in cache while the taps go
 * over them, so x and dy come from memory once, not once a tap. The sums
 * of the step are kept in @acc (taps x len floats of scratch): loaded from
 * dw (zero on the first step unless accumulating), stored back at the
 * end; each (tap, channel) adds its windows in order, as one pass would.
 */
void DW_FN(vtpu_dwconv_wgrad)(const struct vtpu_engine_dwconv *d,
			      float *acc, u64 o0, u64 len, u64 r, u64 r_end,
			      bool first)
{
	const struct vtpu_engine_window *g = &d->win;
	u32 taps = g->kh * g->kw, t, ky, kx, m, m0 = (u32)(o0 % d->mult);
	bool zero = first && !(d->flags & VTPU_CONV_ACCUMULATE);
	u64 ox, oy, n, i, ci, c0 = o0 / d->mult;
	float *a, *dst;

	for (t = 0; t < taps; t++) {
		dst = d->w + (u64)t * d->cm + o0;
		a = acc + (u64)t * len;
		for (i = 0; i < len; i++)
			a[i] = zero ? 0.0f : dst[i];
	}
	if (d->mult == 1) {
		for (i = 0; i < len; i += DW_WG_LANES)
			for (t = 0; t < taps; t++)
				DW_FN(dw_wgrad_tap)(d, acc + (u64)t * len + i,
						    t / g->kw, t % g->kw,
						    o0 + i,
						    vtpu_min_u64(DW_WG_LANES,
								 len - i),
						    r, r_end);
		r_end = r;
	}
	vtpu_xy_of(r, g->ow, g->oh, &ox, &oy, &n);
	for (; r < r_end; r++, vtpu_next_xy(&ox, &oy, &n, g->ow, g->oh)) {
		s64 iy0 = (s64)(oy * g->sh) - g->ph;
		s64 ix0 = (s64)(ox * g->sw) - g->pw;
		const float *dyp = d->y + r * d->cm + o0;
		const float *img = d->x + n * g->h * g->w * g->c;

		for (ky = 0, a = acc; ky < g->kh; ky++) {
			s64 iy = iy0 + ky;

			if (iy < 0 || iy >= g->h) {
				a += (u64)g->kw * len;
				continue;
			}
			for (kx = 0; kx < g->kw; kx++, a += len) {
				s64 ix = ix0 + kx;
				const float *xp;

				if (ix < 0 || ix >= g->w)
					continue;
				xp = img + ((u64)iy * g->w + (u64)ix) * g->c;
				for (i = 0, ci = c0, m = m0; i < len; i++) {
					a[i] += xp[ci] * dyp[i];
					if (++m == d->mult) {
						m = 0;
						ci++;
					}
				}
			}
		}
	}
	for (t = 0; t < taps; t++) {
		dst = d->w + (u64)t * d->cm + o0;
		a = acc + (u64)t * len;
		for (i = 0; i < len; i++)
			dst[i] = a[i];
	}
}
