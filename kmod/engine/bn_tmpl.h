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
 * The end of the statistics: turn the sums of channel c (j in the tile)
 * into acc0 = mean and acc1 = inv_std, save them, update the moving ones.
 */
static void BN_FN(bn_stats_done)(const struct vtpu_engine_bn *b, u32 c,
				 double *m, double *v)
{
	double var = *v / b->rows, mom = b->momentum;
	double inv = 1.0 / BN_FN(bn_sqrt)(var + b->eps);

	b->stats[c] = (float)*m;
	b->stats[b->channels + c] = (float)inv;
	b->mmean[c] = (float)(b->mmean[c] * mom + *m * (1.0 - mom));
	b->mvar[c] = (float)(b->mvar[c] * mom + var * (1.0 - mom));
	*v = inv;
}

/*
 * The passes over rows [r0, r1) of BN_LANES channels (the including
 * file's choice: what the level's registers hold), whose sums stay in
 * registers from row to row (a constant trip count and local arrays: the
 * compiler keeps them in vectors); the same operations, in the same
 * order, as the loops of any width below. A tile runs its lanes one after
 * the other over the step's rows, which the first lane brought into the
 * cache.
 */

static void BN_FN(bn_fwd_lanes)(const struct vtpu_engine_bn *b, u32 pass,
			       u32 c0, u32 r0, u32 r1, double *acc0,
			       double *acc1)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	double s[BN_LANES], m[BN_LANES], g[BN_LANES], be[BN_LANES];
	float *y = b->y + (u64)r0 * cs + c0;
	u32 r, j;

	for (j = 0; j < BN_LANES; j++) {
		m[j] = acc0[j];
		s[j] = acc1[j];
		g[j] = b->gamma[c0 + j];
		be[j] = b->beta[c0 + j];
	}
	if (pass == 0) {
		for (r = r0; r < r1; r++, x += cs)
			for (j = 0; j < BN_LANES; j++)
				m[j] += x[j];
		for (j = 0; j < BN_LANES; j++)
			acc0[j] = m[j];
	} else if (pass == 1) {
		for (r = r0; r < r1; r++, x += cs)
			for (j = 0; j < BN_LANES; j++) {
				double d = x[j] - m[j];

				s[j] += d * d;
			}
		for (j = 0; j < BN_LANES; j++)
			acc1[j] = s[j];
	} else {
		for (r = r0; r < r1; r++, x += cs, y += cs)
			for (j = 0; j < BN_LANES; j++)
				y[j] = (float)((x[j] - m[j]) * s[j] * g[j] +
					       be[j]);
	}
}

static void BN_FN(bn_bwd_lanes)(const struct vtpu_engine_bn *b, u32 pass,
			       u32 c0, u32 r0, u32 r1, double *acc0,
			       double *acc1)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	const float *dy = b->dy + (u64)r0 * cs + c0;
	double s0[BN_LANES], s1[BN_LANES], m[BN_LANES], iv[BN_LANES];
	double g[BN_LANES];
	float *dx = b->y + (u64)r0 * cs + c0;
	u32 r, j;

	for (j = 0; j < BN_LANES; j++) {
		s0[j] = acc0[j];
		s1[j] = acc1[j];
		m[j] = b->stats[c0 + j];
		iv[j] = b->stats[b->channels + c0 + j];
		g[j] = b->gamma[c0 + j];
	}
	if (!pass) {
		for (r = r0; r < r1; r++, x += cs, dy += cs)
			for (j = 0; j < BN_LANES; j++) {
				double xh = (x[j] - m[j]) * iv[j];

				s0[j] += dy[j];
				s1[j] += dy[j] * xh;
			}
		for (j = 0; j < BN_LANES; j++) {
			acc0[j] = s0[j];
			acc1[j] = s1[j];
		}
		return;
	}
	for (r = r0; r < r1; r++, x += cs, dy += cs, dx += cs)
		for (j = 0; j < BN_LANES; j++) {
			double xh = (x[j] - m[j]) * iv[j];

			dx[j] = (float)(g[j] * iv[j] *
					(dy[j] - s0[j] - xh * s1[j]));
		}
}

void BN_FN(vtpu_bn_forward)(const struct vtpu_engine_bn *b, u32 pass, u32 k,
			    u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
			    double *acc1)
{
	const float *x;
	u32 r, j, j0;

	if (!b->train) {
		pass = 2;
		if (!k)
			for (j = 0; j < w; j++) {
				acc0[j] = b->mmean[c0 + j];
				acc1[j] = (double)b->mvar[c0 + j] + b->eps;
				acc1[j] = 1.0 / BN_FN(bn_sqrt)(acc1[j]);
			}
	}
	if (pass < 2 && !k)
		for (j = 0; j < w; j++)
			(pass ? acc1 : acc0)[j] = 0.0;
	for (j0 = 0; j0 + BN_LANES <= w; j0 += BN_LANES)
		BN_FN(bn_fwd_lanes)(b, pass, c0 + j0, r0, r1, acc0 + j0,
				    acc1 + j0);
	for (r = j0 < w ? r0 : r1; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		if (pass == 0) {
			for (j = j0; j < w; j++)
				acc0[j] += x[j];
		} else if (pass == 1) {
			for (j = j0; j < w; j++) {
				double d = x[j] - acc0[j];

				acc1[j] += d * d;
			}
		} else {
			float *y = b->y + (u64)r * b->channels + c0;

			for (j = j0; j < w; j++)
				y[j] = (float)((x[j] - acc0[j]) * acc1[j] *
					       b->gamma[c0 + j] +
					       b->beta[c0 + j]);
		}
	}
	if (k + 1 < b->nblocks || pass == 2)
		return;
	for (j = 0; j < w; j++) {
		if (pass == 0)
			acc0[j] /= b->rows;
		else
			BN_FN(bn_stats_done)(b, c0 + j, &acc0[j], &acc1[j]);
	}
}

void BN_FN(vtpu_bn_backward)(const struct vtpu_engine_bn *b, u32 pass, u32 k,
			     u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
			     double *acc1)
{
	const float *mean = b->stats + c0, *inv = b->stats + b->channels + c0;
	const float *x, *dy;
	u32 r, j, j0;

	if (!pass && !k)
		for (j = 0; j < w; j++)
			acc0[j] = acc1[j] = 0.0;
	for (j0 = 0; j0 + BN_LANES <= w; j0 += BN_LANES)
		BN_FN(bn_bwd_lanes)(b, pass, c0 + j0, r0, r1, acc0 + j0,
				    acc1 + j0);
	for (r = j0 < w ? r0 : r1; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		dy = b->dy + (u64)r * b->channels + c0;
		if (!pass) {
			for (j = j0; j < w; j++) {
				double xh = ((double)x[j] - mean[j]) * inv[j];

				acc0[j] += dy[j];
				acc1[j] += dy[j] * xh;
			}
		} else {
			float *dx = b->y + (u64)r * b->channels + c0;

			for (j = j0; j < w; j++) {
				double xh = ((double)x[j] - mean[j]) * inv[j];

				double t = dy[j] - acc0[j] - xh * acc1[j];

				dx[j] = (float)((double)b->gamma[c0 + j] *
						inv[j] * t);
			}
		}
	}
	if (pass || k + 1 < b->nblocks)
		return;
	for (j = 0; j < w; j++) {
		b->dbeta[c0 + j] = (float)acc0[j];
		b->dgamma[c0 + j] = (float)acc1[j];
		acc0[j] /= b->rows;
		acc1[j] /= b->rows;
	}
}
