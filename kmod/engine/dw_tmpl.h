/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * DWCONV's, DWCONV_DGRAD's and DWCONV_WGRAD's loops, once per SIMD level:
 * ops_dwconv.c (the baseline) and ops_nhwc_avx2.c, ops_nhwc_avx512.c
 * each define DW_SFX and include this file. The inner loops run along the
 * channels, contiguous in NHWC, vectorised at the level's width (by the
 * compiler, or with GCC's vector extensions in the fast paths: the
 * interior runs and WGRAD's 3x3 walk) while each element keeps its order
 * of terms; with no contraction into FMA (-ffp-contract=off, engine.mk)
 * every level gives the same bits.
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
 * DW_LANES channels whose sums stay in registers while the taps go by
 * (the pixels that dw_span() leaves to the loops of any shape):
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

/*
 * The interior: output pixels whose every tap falls on the image, so
 * with no bounds to check. With a depth multiplier of 1 (and, for DGRAD,
 * a stride of 1), the tap (ky, kx) of such a pixel's channel c is at
 * src + ky * rs + kx * cs + c, src the first tap's pixel: x at
 * (iy0, ix0) for the forward (rs, cs = a row, a pixel), dy at
 * (iy + ph, ix + pw) for DGRAD (rs, cs negative, its kernel flipped), and
 * the next pixel's src ps further along the row. DW_PIX neighbouring
 * pixels go together, their sums in registers, each weight vector
 * loaded once for them; each element still adds its taps in (ky, kx)
 * order, then the bias, then ReLU, as dw_fwd_block() and
 * dw_dgrad_block() do.
 */
#undef DW_PIX
#if defined(__AVX2__)
#define DW_PIX 4u
#else
#define DW_PIX 2u
#endif
/*
 * Pixels ahead whose newest source pixel to prefetch: the hardware does
 * not follow the blocks' walk across a pixel's cache lines.
 */
#define DW_PF 8

/*
 * The interior's and WGRAD's inner loops use GCC's vector extensions at
 * the level's width (as convpool_tmpl.h does), DW_NV vectors a block of
 * DW_LANES channels, so that the sums stay in registers; a vector's
 * lanes add and multiply as the plain C floats would. sparse does not
 * know vector types: it checks the same code with one float a "vector".
 */
#undef DWV
#undef DWVI
#undef DW_VW
#ifdef __CHECKER__
#define DWV float
#define DW_VW 1u
#elif defined(__AVX512F__)
#define DWV float __attribute__((vector_size(64)))
#define DW_VW 16u
#elif defined(__AVX2__)
#define DWV float __attribute__((vector_size(32)))
#define DW_VW 8u
#else
#define DWV float __attribute__((vector_size(16)))
#define DW_VW 4u
#endif
#define DWVI int __attribute__((vector_size(DW_VW * 4)))
#define DW_NV (DW_LANES / DW_VW)

#undef dwv_load
#undef dwv_store
#define dwv_load(p) VTPU_VEC_LOAD(DWV, p)
#define dwv_store(p, v) VTPU_VEC_STORE(p, (DWV)(v))

/* a < 0 ? 0 : a in every lane (NaN and -0 kept, as in plain C) */
static __always_inline DWV dwv_relu(DWV a)
{
#ifdef __CHECKER__
	return a < 0.0f ? 0.0f : a;
#else
	DWV z = { 0 };

	return (DWV)((DWVI)a & ~(a < z));
#endif
}

struct dw_run {
	const float *base;	/* the image (of x, or dy for DGRAD) */
	s64 off;		/* tap (0, 0) of the first pixel, channel 0 */
	s64 rs, cs, ps;		/* next tap row, tap column, pixel */
	u32 ky0, ky1, kx0, kx1;	/* the taps on the image */
	bool dgrad;
};

/*
 * channels [c0, c0 + DW_LANES) of @np (a constant) pixels from dst on,
 * taps [ky0, ky1) x [kx0, kx1) in (ky, kx) order
 */
static __always_inline void
DW_FN(dw_run_block)(const struct vtpu_engine_dwconv *d,
		    const struct dw_run *ru, float *dst, u64 pix,
		    u64 c0, const u32 np)
{
	const struct vtpu_engine_window *g = &d->win;
	bool acc = ru->dgrad && (d->flags & VTPU_CONV_ACCUMULATE);
	DWV a[DW_PIX][DW_NV], wv, z = { 0 };
	const float *s, *wp;
	u32 ky, kx, p, v;
	u64 cm = d->cm;
	s64 ps = ru->ps;

	dst += c0;
#pragma GCC unroll 16
	for (p = 0; p < np; p++)
#pragma GCC unroll 16
		for (v = 0; v < DW_NV; v++)
			a[p][v] = acc ? dwv_load(dst + p * cm + v * DW_VW) : z;
	for (ky = ru->ky0; ky < ru->ky1; ky++) {
		s = ru->base + (ru->off + (s64)pix * ps + ky * ru->rs +
				ru->kx0 * ru->cs + (s64)c0);
		wp = d->w + ((u64)ky * g->kw + ru->kx0) * cm + c0;
		for (kx = ru->kx0; kx < ru->kx1; kx++, s += ru->cs, wp += cm) {
#pragma GCC unroll 16
			for (v = 0; v < DW_NV; v++) {
				wv = dwv_load(wp + v * DW_VW);
#pragma GCC unroll 16
				for (p = 0; p < np; p++)
					a[p][v] += dwv_load(s + p * ps +
							    v * DW_VW) * wv;
			}
		}
	}
	if (!ru->dgrad && d->bias)
#pragma GCC unroll 16
		for (v = 0; v < DW_NV; v++) {
			wv = dwv_load(d->bias + c0 + v * DW_VW);
#pragma GCC unroll 16
			for (p = 0; p < np; p++)
				a[p][v] += wv;
		}
#pragma GCC unroll 16
	for (p = 0; p < np; p++)
#pragma GCC unroll 16
		for (v = 0; v < DW_NV; v++) {
			if (!ru->dgrad && (d->flags & VTPU_CONV_RELU))
				a[p][v] = dwv_relu(a[p][v]);
			dwv_store(dst + p * cm + v * DW_VW, a[p][v]);
		}
}

/*
 * @npix pixels from dst on, every channel; the channels past the last
 * block of DW_LANES, pixel by pixel (@n, @y, @x: the first pixel).
 */
static void DW_FN(dw_run_pixels)(const struct vtpu_engine_dwconv *d,
				 const struct dw_run *ru, float *dst,
				 u64 npix, u64 n, u64 y, u64 x)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 cm = d->cm, cb = cm - cm % DW_LANES, pix, c0, i;
	s64 ahead = ru->off + DW_PF * ru->ps;
	const float *pf;

	/* the newest tap row and column: the last for x, the first for dy */
	if (!ru->dgrad)
		ahead += (s64)(g->kh - 1) * ru->rs + (s64)(g->kw - 1) * ru->cs;
	for (pix = 0; pix + DW_PIX <= npix; pix += DW_PIX) {
		pf = ru->base + (ahead + (s64)pix * ru->ps);
		for (i = 0; i < DW_PIX * (u64)ru->ps; i += 64 / sizeof(float))
			__builtin_prefetch(pf + i);
		for (c0 = 0; c0 < cb; c0 += DW_LANES)
			DW_FN(dw_run_block)(d, ru, dst + pix * cm, pix, c0,
					    DW_PIX);
	}
	for (; pix < npix; pix++)
		for (c0 = 0; c0 < cb; c0 += DW_LANES)
			DW_FN(dw_run_block)(d, ru, dst + pix * cm, pix, c0, 1);
	if (cb == cm)
		return;
	for (pix = 0; pix < npix; pix++, dst += cm) {
		if (ru->dgrad)
			DW_FN(dwconv_dgrad_pixel)(d, dst + cb, n, y, x + pix,
						  cb, cm - cb);
		else
			DW_FN(dwconv_pixel)(d, dst + cb, n, y, x + pix, cb,
					    cm - cb);
	}
}

/* [*k0, *k1): the k in [0, k) with lo <= k < hi */
static inline void DW_FN(dw_clamp)(s64 lo, s64 hi, u32 k, u32 *k0, u32 *k1)
{
	*k0 = lo <= 0 ? 0 : (u32)vtpu_min_u64((u64)lo, k);
	*k1 = hi <= *k0 ? *k0 : (u32)vtpu_min_u64((u64)hi, k);
}

/*
 * How many pixels from (n, y, x) on, at most @max, go through
 * dw_run_pixels() together: a run of the row whose every tap is on the
 * image, or else 1 with its taps on the image; 0 for the loops of any
 * depth multiplier and stride. Fills @ru for them.
 */
static u64 DW_FN(dw_span)(const struct vtpu_engine_dwconv *d, bool dgrad,
			  u64 n, u64 y, u64 x, u64 max,
			  struct dw_run *ru)
{
	const struct vtpu_engine_window *g = &d->win;
	s64 iy0, ix0, lo, hi;

	if (d->mult != 1 || (dgrad && (g->sh != 1 || g->sw != 1)))
		return 0;
	ru->dgrad = dgrad;
	if (dgrad) {
		/* dy rows iy + ph - ky, columns ix + pw - kx */
		iy0 = (s64)(y + g->ph);
		ix0 = (s64)(x + g->pw);
		ru->base = d->y + n * g->oh * g->ow * d->cm;
		ru->off = (iy0 * g->ow + ix0) * (s64)d->cm;
		ru->rs = -(s64)g->ow * (s64)d->cm;
		ru->cs = -(s64)d->cm;
		ru->ps = (s64)d->cm;
		DW_FN(dw_clamp)(iy0 - g->oh + 1, iy0 + 1, g->kh, &ru->ky0,
				&ru->ky1);
		DW_FN(dw_clamp)(ix0 - g->ow + 1, ix0 + 1, g->kw, &ru->kx0,
				&ru->kx1);
		lo = (s64)g->kw - g->pw - 1;
		hi = (s64)g->ow - g->pw;
	} else {
		/* x rows oy * sh - ph + ky, columns ox * sw - pw + kx */
		iy0 = (s64)(y * g->sh) - g->ph;
		ix0 = (s64)(x * g->sw) - g->pw;
		ru->base = d->x + n * g->h * g->w * g->c;
		ru->off = (iy0 * g->w + ix0) * (s64)g->c;
		ru->rs = (s64)g->w * g->c;
		ru->cs = (s64)g->c;
		ru->ps = (s64)g->sw * g->c;
		DW_FN(dw_clamp)(-iy0, g->h - iy0, g->kh, &ru->ky0, &ru->ky1);
		DW_FN(dw_clamp)(-ix0, g->w - ix0, g->kw, &ru->kx0, &ru->kx1);
		lo = ((s64)g->pw + g->sw - 1) / g->sw;
		hi = ((s64)g->w + g->pw - g->kw) / g->sw + 1;
		if ((s64)g->w + g->pw < g->kw)
			hi = 0;
		if (hi > g->ow)
			hi = g->ow;
	}
	if (ru->ky0 || ru->ky1 < g->kh || (s64)x < lo || (s64)x >= hi)
		return 1;
	return vtpu_min_u64((u64)hi - x, max);
}

/* Output elements [e, end) of the forward or of DGRAD. */
void DW_FN(vtpu_dwconv_range)(const struct vtpu_engine_dwconv *d,
			      bool dgrad, u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 per = d->per;
	u64 c0 = e % per, x, y, n, len, run = 0;
	u64 rw = dgrad ? g->w : g->ow, rh = dgrad ? g->h : g->oh;
	struct dw_run ru;
	float *out = dgrad ? d->x : d->y;

	vtpu_xy_of(e / per, rw, rh, &x, &y, &n);
	while (e < end) {
		if (!c0 && end - e >= per)
			run = DW_FN(dw_span)(d, dgrad, n, y, x,
					     (end - e) / per, &ru);
		if (run) {
			DW_FN(dw_run_pixels)(d, &ru, out + e, run, n, y, x);
			e += run * per;
			x += run;
			if (x == rw) {
				x = 0;
				if (++y == rh) {
					y = 0;
					n++;
				}
			}
			run = 0;
			continue;
		}
		len = vtpu_min_u64(per - c0, end - e);
		if (dgrad)
			DW_FN(dwconv_dgrad_pixel)(d, out + e, n, y, x, c0,
						  len);
		else
			DW_FN(dwconv_pixel)(d, out + e, n, y, x, c0, len);
		vtpu_next_xy(&x, &y, &n, rw, rh);
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
 * WGRAD of a 3x3 kernel (a depth multiplier of 1), nv vectors of DW_VW
 * channels from o0 on: acc[t * ls, + nv * DW_VW) += tap t's products
 * over windows [r, r_end), in order. All nine taps of a window go
 * together, so that dy is read once a window, not once a tap, and nine
 * sums go side by side in registers instead of one chain; each (tap,
 * channel) still adds its windows in order, skipping those whose pixel of
 * the tap is off the image, as dw_wgrad_walk() does. With AVX-512's 32
 * registers, two vectors (adjacent cache lines of a pixel) go together.
 */
#define DW_WG_K 3u
#define DW_WG_T (DW_WG_K * DW_WG_K)
/* windows ahead to prefetch: the hardware does not follow a 256-byte stride */
#define DW_WG_PF 8
#undef DW_WG_NV
#if defined(__AVX512F__)
#define DW_WG_NV 2u
#else
#define DW_WG_NV 1u
#endif

/* a window with every tap on the image: tap (0, 0) at xp */
static __always_inline void
DW_FN(dw_wg3_win)(DWV a[DW_WG_T][DW_WG_NV], const float *xp, s64 rs, u64 c,
		  const float *dyp, const u32 nv)
{
	const float *x1 = xp + rs, *x2 = x1 + rs;
	DWV dv;
	u32 v;

#pragma GCC unroll 16
	for (v = 0; v < nv; v++) {
		dv = dwv_load(dyp + v * DW_VW);
		a[0][v] += dwv_load(xp + v * DW_VW) * dv;
		a[1][v] += dwv_load(xp + c + v * DW_VW) * dv;
		a[2][v] += dwv_load(xp + 2 * c + v * DW_VW) * dv;
		a[3][v] += dwv_load(x1 + v * DW_VW) * dv;
		a[4][v] += dwv_load(x1 + c + v * DW_VW) * dv;
		a[5][v] += dwv_load(x1 + 2 * c + v * DW_VW) * dv;
		a[6][v] += dwv_load(x2 + v * DW_VW) * dv;
		a[7][v] += dwv_load(x2 + c + v * DW_VW) * dv;
		a[8][v] += dwv_load(x2 + 2 * c + v * DW_VW) * dv;
	}
}

/*
 * windows [ox, end) of row (n, oy), dy from dyp on; those in [lo, hi)
 * have every tap on the image
 */
static __always_inline void
DW_FN(dw_wg3_row)(const struct vtpu_engine_dwconv *d, float *acc, u64 ls,
		  u64 o0, u64 n, u64 oy, u64 ox, u64 end, u64 lo, u64 hi,
		  const float *dyp, const u32 nv)
{
	const struct vtpu_engine_window *g = &d->win;
	const float *img = d->x + n * g->h * g->w * g->c + o0, *xp;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0, rs = (s64)g->w * g->c;
	s64 xs = (s64)g->sw * g->c;
	DWV a[DW_WG_T][DW_WG_NV], dv;
	bool rok[DW_WG_K], ok;
	u32 t, v;

#pragma GCC unroll 16
	for (t = 0; t < DW_WG_K; t++)
		rok[t] = iy0 + t >= 0 && iy0 + t < g->h;
#pragma GCC unroll 16
	for (t = 0; t < DW_WG_T; t++)
#pragma GCC unroll 16
		for (v = 0; v < nv; v++)
			a[t][v] = dwv_load(acc + t * ls + v * DW_VW);
	for (; ox < end; ox++, dyp += d->cm) {
		ix0 = (s64)(ox * g->sw) - g->pw;
		if (ox >= lo && ox < hi) {
			/* a run of them: three rows of three pixels */
			xp = img + (iy0 * g->w + ix0) * (s64)g->c;
			for (; ox < hi && ox < end; ox++, dyp += d->cm) {
				DW_FN(dw_wg3_win)(a, xp, rs, g->c, dyp, nv);
				__builtin_prefetch(xp + 2 * rs + xs * DW_WG_PF);
				__builtin_prefetch(dyp + d->cm * DW_WG_PF);
				xp += xs;
			}
			if (ox == end)
				break;
			ix0 = (s64)(ox * g->sw) - g->pw;
		}
#pragma GCC unroll 16
		for (v = 0; v < nv; v++) {
			dv = dwv_load(dyp + v * DW_VW);
#pragma GCC unroll 16
			for (t = 0; t < DW_WG_T; t++) {
				ok = rok[t / DW_WG_K] &&
				     ix0 + t % DW_WG_K >= 0 &&
				     ix0 + t % DW_WG_K < g->w;
				if (!ok)
					continue;
				xp = img + ((iy0 + t / DW_WG_K) * g->w + ix0 +
					    t % DW_WG_K) * (s64)g->c;
				a[t][v] += dwv_load(xp + v * DW_VW) * dv;
			}
		}
	}
#pragma GCC unroll 16
	for (t = 0; t < DW_WG_T; t++)
#pragma GCC unroll 16
		for (v = 0; v < nv; v++)
			dwv_store(acc + t * ls + v * DW_VW, a[t][v]);
}

static __always_inline void
DW_FN(dw_wg3_walk)(const struct vtpu_engine_dwconv *d, float *acc, u64 ls,
		   u64 o0, u64 r, u64 r_end, const u32 nv)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 lo0 = (g->pw + g->sw - 1) / g->sw, hi0 = 0, ox, oy, n, seg;
	u64 lo, hi;
	s64 iy0;

	if (g->w + g->pw >= DW_WG_K)
		hi0 = (g->w + g->pw - DW_WG_K) / g->sw + 1;
	vtpu_xy_of(r, g->ow, g->oh, &ox, &oy, &n);
	for (; r < r_end; r += seg, ox = 0) {
		seg = vtpu_min_u64(g->ow - ox, r_end - r);
		iy0 = (s64)(oy * g->sh) - g->ph;
		lo = 0;
		hi = 0;
		if (iy0 >= 0 && iy0 + DW_WG_K <= g->h) {
			lo = lo0;
			hi = hi0;
		}
		DW_FN(dw_wg3_row)(d, acc, ls, o0, n, oy, ox, ox + seg, lo, hi,
				  d->y + r * d->cm + o0, nv);
		if (++oy == g->oh) {
			oy = 0;
			n++;
		}
	}
}

/* dw_wg3_walk() of DW_WG_NV vectors, and of one */
static void DW_FN(dw_wg3_wide)(const struct vtpu_engine_dwconv *d,
			       float *acc, u64 ls, u64 o0, u64 r, u64 r_end)
{
	DW_FN(dw_wg3_walk)(d, acc, ls, o0, r, r_end, DW_WG_NV);
}

static void DW_FN(dw_wg3_one)(const struct vtpu_engine_dwconv *d,
			      float *acc, u64 ls, u64 o0, u64 r, u64 r_end)
{
	DW_FN(dw_wg3_walk)(d, acc, ls, o0, r, r_end, 1);
}

/*
 * dw of every tap, channels [o0, o0 + len), over windows [r, r_end) in
 * order: a step's windows, a few hundred, stay in cache while the taps go
 * over them, so x and dy come from memory once, not once a tap. The sums
 * of the step are kept in @acc (taps x len floats of scratch): loaded from
 * @dw (taps x cm floats: the op's dw, or a group's sums in its workspace;
 * zero instead with @zero), stored back at the end; each (tap, channel)
 * adds its windows in order, as one pass would.
 */
void DW_FN(vtpu_dwconv_wgrad)(const struct vtpu_engine_dwconv *d,
			      float *acc, float *dw, u64 o0, u64 len, u64 r,
			      u64 r_end, bool zero)
{
	const struct vtpu_engine_window *g = &d->win;
	u32 taps = g->kh * g->kw, t, ky, kx, m, m0 = (u32)(o0 % d->mult);
	u64 ox, oy, n, i, ci, c0 = o0 / d->mult;
	float *a, *dst;

	for (t = 0; t < taps; t++) {
		dst = dw + (u64)t * d->cm + o0;
		a = acc + (u64)t * len;
		for (i = 0; i < len; i++)
			a[i] = zero ? 0.0f : dst[i];
	}
	i = 0;
	if (d->mult == 1 && g->kh == DW_WG_K && g->kw == DW_WG_K)
		for (; i + DW_VW <= len; i += DW_VW) {
			if (DW_WG_NV > 1 && i + DW_WG_NV * DW_VW <= len) {
				DW_FN(dw_wg3_wide)(d, acc + i, len, o0 + i, r,
						   r_end);
				i += (DW_WG_NV - 1) * DW_VW;
				continue;
			}
			DW_FN(dw_wg3_one)(d, acc + i, len, o0 + i, r, r_end);
		}
	if (d->mult == 1) {
		for (; i < len; i += DW_WG_LANES)
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
		dst = dw + (u64)t * d->cm + o0;
		a = acc + (u64)t * len;
		for (i = 0; i < len; i++)
			dst[i] = a[i];
	}
}
