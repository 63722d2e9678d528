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
#ifndef BN_SFX
#error "define BN_SFX before including this"
#endif

#include "engine_internal.h"

#define BN_CAT2(a, b) a##_##b
#define BN_CAT(a, b) BN_CAT2(a, b)
#define BN_FN(name) BN_CAT(name, BN_SFX)

/* sqrt without libm: see optim_sqrt() in optim_tmpl.h */
static inline double BN_FN(bn_sqrt)(double x)
{
#ifdef __CHECKER__
	return x;
#else
	return __builtin_sqrt(x);
#endif
}

/*
 * The passes over rows [r0, r1) of the tile's channels [c0, c0 + w): row
 * after row, each row's w channels in one loop that the compiler
 * vectorises at the level's width, so that the tile's rows are read whole
 * and in order (lanes of channels one after the other, each reading one
 * cache line of every row, ran at half the bandwidth: the prefetchers
 * follow a stride worse than a stream). The sums are @acc0, @acc1 and the
 * per-channel constants @k (both in L1: scratch, or the op's workspace);
 * each channel's sums take the rows in order, the same operations in the
 * same order at every width.
 *
 * The forward's sums are of d = x - x[0] and d * d, x[0] the channel's
 * value in row 0: one pass for the mean and the variance, and no
 * cancellation between a large mean and a small variance as long as
 * x[0] is not many deviations from the mean (ops_batchnorm.c).
 */

/*
 * The most channels a loop sums at once, in a local array (in L1, and
 * known not to alias the inputs: sums kept where the caller keeps them,
 * scratch or the workspace, ran 1.6x slower), with a constant trip count
 * for 64 and 32 channels; other widths run the same loop with the trip
 * count known at run time.
 */
#define BN_REG_LANES 64u

static __always_inline void
BN_FN(bn_sums_n)(const struct vtpu_engine_bn *b, const float *x,
		 const float *dy, u32 rows, double *acc0, double *acc1,
		 const double *m, const double *iv, u32 w, const u32 lanes)
{
	const u64 cs = b->channels;
	double s0[BN_REG_LANES], s1[BN_REG_LANES];
	const u32 n = lanes ? lanes : w;
	u32 r, j;

	for (j = 0; j < n; j++) {
		s0[j] = acc0[j];
		s1[j] = acc1[j];
	}
	if (dy) {
		for (r = 0; r < rows; r++, x += cs, dy += cs)
			for (j = 0; j < n; j++) {
				double xh = (x[j] - m[j]) * iv[j];

				s0[j] += dy[j];
				s1[j] += dy[j] * xh;
			}
	} else {
		for (r = 0; r < rows; r++, x += cs)
			for (j = 0; j < n; j++) {
				double d = x[j] - m[j];

				s0[j] += d;
				s1[j] += d * d;
			}
	}
	for (j = 0; j < n; j++) {
		acc0[j] = s0[j];
		acc1[j] = s1[j];
	}
}

/* bn_sums_n() for @w <= BN_REG_LANES channels: 64 and 32 in registers */
static void BN_FN(bn_sums_part)(const struct vtpu_engine_bn *b,
				const float *x, const float *dy, u32 rows,
				double *acc0, double *acc1, const double *m,
				const double *iv, u32 w)
{
	if (w == BN_REG_LANES)
		BN_FN(bn_sums_n)(b, x, dy, rows, acc0, acc1, m, iv, w,
				 BN_REG_LANES);
	else if (w == 32)
		BN_FN(bn_sums_n)(b, x, dy, rows, acc0, acc1, m, iv, w, 32);
	else
		BN_FN(bn_sums_n)(b, x, dy, rows, acc0, acc1, m, iv, w, 0);
}

/* Rows a block of wider rows' sums take, a few KiB of each operand */
#define BN_ROWS 8u

/*
 * Add channels [c0, c0 + w)'s sums over rows [r0, r1) to acc0, acc1: the
 * forward's of d and d * d, the gradient's of dy and dy * xhat. @k holds
 * 2 * w doubles of scratch.
 */
void BN_FN(vtpu_bn_sums)(const struct vtpu_engine_bn *b, u32 c0, u32 w,
			 u32 r0, u32 r1, double *acc0, double *acc1,
			 double *k)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	const float *dy = b->grad ? b->dy + (u64)r0 * cs + c0 : NULL;
	double *m = k, *iv = k + w;
	u32 r, n, j;

	for (j = 0; j < w; j++) {
		if (b->grad) {
			m[j] = b->stats[c0 + j];
			iv[j] = b->stats[b->channels + c0 + j];
		} else {
			m[j] = b->x[c0 + j];
		}
	}
	if (w <= BN_REG_LANES) {
		BN_FN(bn_sums_part)(b, x, dy, r1 - r0, acc0, acc1, m, iv, w);
		return;
	}
	/*
	 * Wider rows: blocks of BN_ROWS rows (in L1), each block's
	 * channels BN_REG_LANES at a time, so that the rows are still
	 * read whole and in order
	 */
	for (r = r0; r < r1; r += n) {
		n = r1 - r < BN_ROWS ? r1 - r : BN_ROWS;
		for (j = 0; j < w; j += BN_REG_LANES)
			BN_FN(bn_sums_part)(b, x + j, dy ? dy + j : NULL, n,
					    acc0 + j, acc1 + j, m + j, iv + j,
					    w - j < BN_REG_LANES ?
						    w - j : BN_REG_LANES);
		x += (u64)n * cs;
		dy = dy ? dy + (u64)n * cs : NULL;
	}
}

/*
 * Write rows [r0, r1) of channels [c0, c0 + w): the forward's y from
 * acc0 = mean and acc1 = inv_std (and the ReLU of it with b->relu), the
 * gradient's dx from acc0 = dbeta / rows and acc1 = dgamma / rows. @k
 * holds 4 * w doubles of scratch.
 */
void BN_FN(vtpu_bn_write)(const struct vtpu_engine_bn *b, u32 c0, u32 w,
			  u32 r0, u32 r1, const double *acc0,
			  const double *acc1, double *k)
{
	const u64 cs = b->channels;
	const float *x = b->x + (u64)r0 * cs + c0;
	const float *dy = b->grad ? b->dy + (u64)r0 * cs + c0 : NULL;
	double *g = k, *m = k + w, *iv = k + 2 * w, *be = k + 3 * w;
	float *y = b->y + (u64)r0 * cs + c0;
	u32 r, j;

	for (j = 0; j < w; j++) {
		g[j] = b->gamma[c0 + j];
		if (b->grad) {
			m[j] = b->stats[c0 + j];
			iv[j] = b->stats[b->channels + c0 + j];
		} else {
			be[j] = b->beta[c0 + j];
		}
	}
	if (!b->grad && b->relu) {	/* as ELEMENTWISE RELU after it */
		for (r = r0; r < r1; r++, x += cs, y += cs)
			for (j = 0; j < w; j++) {
				float v = (float)((x[j] - acc0[j]) * acc1[j] *
						  g[j] + be[j]);

				y[j] = v < 0.0f ? 0.0f : v;
			}
		return;
	}
	if (!b->grad) {
		for (r = r0; r < r1; r++, x += cs, y += cs)
			for (j = 0; j < w; j++)
				y[j] = (float)((x[j] - acc0[j]) * acc1[j] *
					       g[j] + be[j]);
		return;
	}
	for (r = r0; r < r1; r++, x += cs, dy += cs, y += cs)
		for (j = 0; j < w; j++) {
			double xh = (x[j] - m[j]) * iv[j];

			y[j] = (float)(g[j] * iv[j] *
				       (dy[j] - acc0[j] - xh * acc1[j]));
		}
}
