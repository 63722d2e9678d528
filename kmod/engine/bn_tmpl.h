/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * BATCHNORM's and BATCHNORM_GRAD's passes over a tile's rows, once per
 * SIMD level: ops_batchnorm.c (the baseline) and ops_nhwc_avx2.c,
 * ops_nhwc_avx512.c each define BN_SFX and include this file. The loops
 * run along the tile's channels, contiguous in NHWC, so the compiler
 * vectorises them at the level's width while each channel's sums keep
 * their row order; the arithmetic is in double with no contraction into
 * FMA (-ffp-contract=off, engine.mk) and sqrt is the correctly rounded
 * instruction: every level gives the same bits.
 */
#if !defined(BN_SFX) || !defined(BN_LANES)
#error "define BN_SFX and BN_LANES before including this"
#endif

#include "engine_internal.h"

#define BN_CAT2(a, b) a##_##b
#define BN_CAT(a, b) BN_CAT2(a, b)
#define BN_FN(name) BN_CAT(name, BN_SFX)

/* sqrt without libm: see optim_sqrt() in ops_optim.c */
static inline double BN_FN(bn_sqrt)(double x)
{
#ifdef __CHECKER__
	return x;
#else
	return __builtin_sqrt(x);
#endif
}

/*
 * The passes over rows [r0, r1) of BN_LANES channels (the including
 * file's choice: what the level's registers hold), whose sums stay in
 * registers from row to row (a constant trip count and local arrays: the
 * compiler keeps them in vectors); the same operations, in the same
 * order, as the loops of any width below. A tile runs its lanes one after
 * the other over the step's rows, which the first lane brought into the
 * cache.
 *
 * The forward's sums are of d = x - x[0] and d * d, x[0] the channel's
 * value in row 0: one pass for the mean and the variance, and no
 * cancellation between a large mean and a small variance as long as
 * x[0] is not many deviations from the mean (ops_batchnorm.c).
 */

static void BN_FN(bn_sums_lanes)(const struct vtpu_engine_bn *b, u32 c0,
				u32 r0, u32 r1, double *acc0, double *acc1)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	const float *dy = b->dy ? b->dy + (u64)r0 * cs + c0 : NULL;
	double s0[BN_LANES], s1[BN_LANES], m[BN_LANES], iv[BN_LANES];
	u32 r, j;

	for (j = 0; j < BN_LANES; j++) {
		s0[j] = acc0[j];
		s1[j] = acc1[j];
		if (b->grad) {
			m[j] = b->stats[c0 + j];
			iv[j] = b->stats[b->channels + c0 + j];
		} else {
			m[j] = b->x[c0 + j];
			iv[j] = 0.0;
		}
	}
	if (b->grad) {
		for (r = r0; r < r1; r++, x += cs, dy += cs)
			for (j = 0; j < BN_LANES; j++) {
				double xh = (x[j] - m[j]) * iv[j];

				s0[j] += dy[j];
				s1[j] += dy[j] * xh;
			}
	} else {
		for (r = r0; r < r1; r++, x += cs)
			for (j = 0; j < BN_LANES; j++) {
				double d = x[j] - m[j];

				s0[j] += d;
				s1[j] += d * d;
			}
	}
	for (j = 0; j < BN_LANES; j++) {
		acc0[j] = s0[j];
		acc1[j] = s1[j];
	}
}

static void BN_FN(bn_write_lanes)(const struct vtpu_engine_bn *b, u32 c0,
				 u32 r0, u32 r1, const double *acc0,
				 const double *acc1)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	const float *dy = b->dy ? b->dy + (u64)r0 * cs + c0 : NULL;
	double a0[BN_LANES], a1[BN_LANES], m[BN_LANES], iv[BN_LANES];
	double g[BN_LANES], be[BN_LANES];
	float *y = b->y + (u64)r0 * cs + c0;
	u32 r, j;

	for (j = 0; j < BN_LANES; j++) {
		a0[j] = acc0[j];
		a1[j] = acc1[j];
		g[j] = b->gamma[c0 + j];
		if (b->grad) {
			m[j] = b->stats[c0 + j];
			iv[j] = b->stats[b->channels + c0 + j];
			be[j] = 0.0;
		} else {
			m[j] = iv[j] = 0.0;
			be[j] = b->beta[c0 + j];
		}
	}
	if (!b->grad && b->relu) {	/* as ELEMENTWISE RELU after it */
		for (r = r0; r < r1; r++, x += cs, y += cs)
			for (j = 0; j < BN_LANES; j++) {
				float v = (float)((x[j] - a0[j]) * a1[j] *
						  g[j] + be[j]);

				y[j] = v < 0.0f ? 0.0f : v;
			}
		return;
	}
	if (!b->grad) {
		for (r = r0; r < r1; r++, x += cs, y += cs)
			for (j = 0; j < BN_LANES; j++)
				y[j] = (float)((x[j] - a0[j]) * a1[j] * g[j] +
					       be[j]);
		return;
	}
	for (r = r0; r < r1; r++, x += cs, dy += cs, y += cs)
		for (j = 0; j < BN_LANES; j++) {
			double xh = (x[j] - m[j]) * iv[j];

			y[j] = (float)(g[j] * iv[j] *
				       (dy[j] - a0[j] - xh * a1[j]));
		}
}

/*
 * Add channels [c0, c0 + w)'s sums over rows [r0, r1) to acc0, acc1: the
 * forward's of d and d * d, the gradient's of dy and dy * xhat.
 */
void BN_FN(vtpu_bn_sums)(const struct vtpu_engine_bn *b, u32 c0, u32 w,
			 u32 r0, u32 r1, double *acc0, double *acc1)
{
	const float *x, *dy;
	double xh, d, m, iv;
	u32 r, j, j0;

	for (j0 = 0; j0 + BN_LANES <= w; j0 += BN_LANES)
		BN_FN(bn_sums_lanes)(b, c0 + j0, r0, r1, acc0 + j0,
				     acc1 + j0);
	for (r = j0 < w ? r0 : r1; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		if (!b->grad) {
			for (j = j0; j < w; j++) {
				m = b->x[c0 + j];
				d = x[j] - m;
				acc0[j] += d;
				acc1[j] += d * d;
			}
			continue;
		}
		dy = b->dy + (u64)r * b->channels + c0;
		for (j = j0; j < w; j++) {
			m = b->stats[c0 + j];
			iv = b->stats[b->channels + c0 + j];
			xh = (x[j] - m) * iv;
			acc0[j] += dy[j];
			acc1[j] += dy[j] * xh;
		}
	}
}

/*
 * Write rows [r0, r1) of channels [c0, c0 + w): the forward's y from
 * acc0 = mean and acc1 = inv_std (and the ReLU of it with b->relu), the
 * gradient's dx from acc0 = dbeta /
 * rows and acc1 = dgamma / rows.
 */
void BN_FN(vtpu_bn_write)(const struct vtpu_engine_bn *b, u32 c0, u32 w,
			  u32 r0, u32 r1, const double *acc0,
			  const double *acc1)
{
	const float *x, *dy;
	double xh, g, m, iv;
	float *y, v;
	u32 r, j, j0;

	for (j0 = 0; j0 + BN_LANES <= w; j0 += BN_LANES)
		BN_FN(bn_write_lanes)(b, c0 + j0, r0, r1, acc0 + j0,
				      acc1 + j0);
	for (r = j0 < w ? r0 : r1; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		y = b->y + (u64)r * b->channels + c0;
		if (!b->grad) {
			for (j = j0; j < w; j++) {
				g = b->gamma[c0 + j];
				v = (float)((x[j] - acc0[j]) * acc1[j] * g +
					    (double)b->beta[c0 + j]);
				y[j] = b->relu && v < 0.0f ? 0.0f : v;
			}
			continue;
		}
		dy = b->dy + (u64)r * b->channels + c0;
		for (j = j0; j < w; j++) {
			g = b->gamma[c0 + j];
			m = b->stats[c0 + j];
			iv = b->stats[b->channels + c0 + j];
			xh = (x[j] - m) * iv;
			y[j] = (float)(g * iv * (dy[j] - acc0[j] - xh * acc1[j]));
		}
	}
}
