// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * SOFTMAX_XENT (struct vtpu_cmd_softmax_xent).
 *
 * Rows are cut into chunks of about VTPU_OPS_CHUNK / 4 elements
 * (xent.rows rows each, xent.nchunks chunks) and the op has nsteps =
 * nchunks:
 *
 *  - tile 0 sums loss and correct: at step s it does chunk s, in row
 *    order, and adds its chunk's sum to *loss and *correct (step 0
 *    overwrites them). One worker, a fixed order: deterministic.
 *  - tiles 1..ngrad (only with DLOGITS or PROBS) write dlogits and probs:
 *    tile t does chunk s * ngrad + t - 1 at step s, if there is one.
 *
 * Tile 0 recomputes each row's max and log-sum-exp rather than waiting for
 * the other tiles (tiles cannot wait for each other). exp and log are
 * computed in double here (there is no libm in the kernel): |error| of
 * the float results is below an ulp or so.
 */
#include "engine_internal.h"

#define XENT_MAX_GRAD_TILES 64u

static void xent_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_xent *x = &op->xent;

	x->rows = (VTPU_OPS_CHUNK / 4) / x->n;
	if (!x->rows)
		x->rows = 1;
	x->nchunks = x->m / x->rows + (x->m % x->rows != 0);
	x->ngrad = 0;
	if (x->flags & (VTPU_XENT_DLOGITS | VTPU_XENT_PROBS))
		x->ngrad = x->nchunks < XENT_MAX_GRAD_TILES ?
				   x->nchunks : XENT_MAX_GRAD_TILES;
	op->ntiles = 1 + x->ngrad;
	op->nsteps = x->nchunks;
	op->flops = 10ull * x->m * x->n * (x->ngrad ? 2 : 1);
}

void vtpu_xent_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_softmax_xent *x = (const void *)cmd;

	op->xent.m = x->m;
	op->xent.n = x->n;
	op->xent.flags = x->flags;
	op->xent.scale = vtpu_f32_from_bits(x->scale);
	op->xent.logits = vtpu_operand_ptr(bufs, &x->logits);
	op->xent.labels = vtpu_operand_ptr(bufs, &x->labels);
	op->xent.loss = vtpu_operand_ptr(bufs, &x->loss);
	op->xent.correct = vtpu_operand_ptr(bufs, &x->correct);
	if (x->flags & VTPU_XENT_DLOGITS)
		op->xent.dlogits = vtpu_operand_ptr(bufs, &x->dlogits);
	if (x->flags & VTPU_XENT_PROBS)
		op->xent.probs = vtpu_operand_ptr(bufs, &x->probs);
	xent_tile(op);
}

/* e^x for x <= 0 (or NaN), in double: softmax only ever needs those. */
static double xent_exp(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01;
	static const double ln2_lo = 1.90821492927058770002e-10;
	double t, r, p;
	s64 k;
	u64 bits;

	if (x != x)
		return x;
	if (x < -110.0)		/* below the smallest float */
		return 0.0;
	t = x * 1.44269504088896340736;
	k = (s64)(t - 0.5);	/* t in [-159, 0]: round to nearest */
	r = (x - (double)k * ln2_hi) - (double)k * ln2_lo;
	/* Taylor to r^11 / 11!: |r| <= 0.35, error below 1e-13 */
	p = 1.0 / 39916800.0;
	p = p * r + 1.0 / 3628800.0;
	p = p * r + 1.0 / 362880.0;
	p = p * r + 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	p = p * r + 1.0;
	bits = (u64)(k + 1023) << 52;	/* 2^k, k >= -160: a normal double */
	memcpy(&t, &bits, sizeof(t));
	return p * t;
}

/* log(x) for x >= 1 (or NaN, +Inf), in double. */
static double xent_log(double x)
{
	static const double ln2 = 6.93147180559945309417e-01;
	double m, s, s2, p;
	u64 bits;
	s64 e;

	if (x != x || x > 1.7e308)
		return x;
	memcpy(&bits, &x, sizeof(bits));
	e = (s64)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	memcpy(&m, &bits, sizeof(m));	/* x = m * 2^e, m in [1, 2) */
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	/* log(m) = 2 atanh(s), |s| <= 0.172: series to s^17 */
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	p = 1.0 / 17.0;
	p = p * s2 + 1.0 / 15.0;
	p = p * s2 + 1.0 / 13.0;
	p = p * s2 + 1.0 / 11.0;
	p = p * s2 + 1.0 / 9.0;
	p = p * s2 + 1.0 / 7.0;
	p = p * s2 + 1.0 / 5.0;
	p = p * s2 + 1.0 / 3.0;
	p = p * s2 + 1.0;
	return (double)e * ln2 + 2.0 * s * p;
}

/* The row's max and its first index (NaN: the max is NaN, index 0). */
static float row_max(const float *x, u32 n, u32 *arg)
{
	float mx = x[0];
	u32 j;

	*arg = 0;
	for (j = 1; j < n; j++) {
		if (x[j] > mx) {
			mx = x[j];
			*arg = j;
		}
	}
	return mx;
}

/* Tile 0: loss and correct over the rows of chunk @step. */
static void xent_loss_chunk(const struct vtpu_engine_xent *x, u32 step)
{
	u32 i0 = step * x->rows;
	u32 i1 = x->m - i0 < x->rows ? x->m : i0 + x->rows;
	double loss = 0.0;
	u32 correct = 0, i, j, arg;

	for (i = i0; i < i1; i++) {
		const float *row = x->logits + (u64)i * x->n;
		u32 label = x->labels[i];
		double mx, sum = 0.0;

		if (label >= x->n)	/* ignored row */
			continue;
		mx = row_max(row, x->n, &arg);
		for (j = 0; j < x->n; j++)
			sum += xent_exp((double)row[j] - mx);
		loss += mx + xent_log(sum) - (double)row[label];
		correct += arg == label;
	}
	if (step == 0) {
		*x->loss = (float)(loss * x->scale);
		*x->correct = correct;
	} else {
		*x->loss += (float)(loss * x->scale);
		*x->correct += correct;
	}
}

/* Tiles 1..ngrad: probs and dlogits of the rows of chunk @c. */
static void xent_grad_chunk(const struct vtpu_engine_xent *x, u32 c)
{
	u32 i0 = c * x->rows;
	u32 i1 = x->m - i0 < x->rows ? x->m : i0 + x->rows;
	u32 i, j, arg;

	for (i = i0; i < i1; i++) {
		const float *row = x->logits + (u64)i * x->n;
		float *out = x->probs ? x->probs + (u64)i * x->n :
					x->dlogits + (u64)i * x->n;
		float *d = x->dlogits ? x->dlogits + (u64)i * x->n : NULL;
		u32 label = x->labels[i];
		double mx = row_max(row, x->n, &arg), sum = 0.0, inv;
		float pl;

		for (j = 0; j < x->n; j++) {
			double e = xent_exp((double)row[j] - mx);

			out[j] = (float)e;
			sum += e;
		}
		inv = 1.0 / sum;
		for (j = 0; j < x->n; j++)
			out[j] = (float)(out[j] * inv);
		if (!d)
			continue;
		if (label >= x->n) {	/* ignored row: no gradient */
			memset(d, 0, (u64)x->n * 4);
			continue;
		}
		pl = out[label];	/* d may be out */
		for (j = 0; j < x->n; j++)
			d[j] = x->scale * out[j];
		d[label] = x->scale * (pl - 1.0f);
	}
}

void vtpu_xent_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_xent *x = &op->xent;
	u64 c;

	if (tile == 0) {
		xent_loss_chunk(x, step);
		return;
	}
	c = (u64)step * x->ngrad + tile - 1;
	if (c < x->nchunks)
		xent_grad_chunk(x, (u32)c);
}
