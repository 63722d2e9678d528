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
 * the other tiles (tiles cannot wait for each other).
 *
 * VTPU_XENT_MEAN_VALID scales by scale / v, v the rows with a label < n,
 * which no tile knows before it has read every label. So tile 0 keeps its
 * sum (in double) and its count of valid rows in scratch from step to
 * step (a worker runs a tile's steps back to back) and writes the mean so
 * far at every step; and with DLOGITS, each dlogits tile first spends
 * xent.ncount steps counting the labels, XENT_COUNT_CHUNK a step, into its
 * scratch, then does its chunks at steps ncount, ncount + 1, ... Every
 * tile counts in the same order: the same v, whatever the workers. exp and log are
 * computed in double here (there is no libm in the kernel): |error| of
 * the float results is below an ulp or so.
 */
#include "engine_internal.h"
#include "engine_math.h"

#define XENT_MAX_GRAD_TILES 64u
/* MEAN_VALID: labels a dlogits tile counts per step */
#define XENT_COUNT_CHUNK VTPU_OPS_CHUNK

/* What a MEAN_VALID tile carries in scratch from one step to the next. */
struct xent_state {
	double loss;		/* tile 0: the loss's sum so far */
	u64 valid;		/* rows with a label < n so far */
};

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
	x->ncount = 0;
	if ((x->flags & VTPU_XENT_MEAN_VALID) &&
	    (x->flags & VTPU_XENT_DLOGITS)) {
		x->ncount = vtpu_div_up(x->m, XENT_COUNT_CHUNK);
		if (x->ncount + vtpu_div_up(x->nchunks, x->ngrad) > op->nsteps)
			op->nsteps = x->ncount +
				     vtpu_div_up(x->nchunks, x->ngrad);
	}
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
static void xent_loss_chunk(const struct vtpu_engine_xent *x, u32 step,
			    struct xent_state *st)
{
	u32 i0 = step * x->rows;
	u32 i1 = x->m - i0 < x->rows ? x->m : i0 + x->rows;
	double loss = 0.0;
	u32 correct = 0, valid = 0, i, j, arg;

	for (i = i0; i < i1; i++) {
		const float *row = x->logits + (u64)i * x->n;
		u32 label = ENGINE_LOAD_U32(&x->labels[i]);
		double mx, sum = 0.0;

		if (label >= x->n)	/* ignored row */
			continue;
		mx = row_max(row, x->n, &arg);
		for (j = 0; j < x->n; j++)
			sum += vtpu_exp_nonpos((double)row[j] - mx);
		loss += mx + vtpu_log_ge1(sum) - (double)row[label];
		correct += arg == label;
		valid++;
	}
	if (step == 0)
		*x->correct = correct;
	else
		*x->correct += correct;
	if (x->flags & VTPU_XENT_MEAN_VALID) {
		if (step == 0)
			memset(st, 0, sizeof(*st));
		st->loss += loss;
		st->valid += valid;
		*x->loss = st->valid ?
			(float)(st->loss * x->scale / (double)st->valid) : 0.0f;
	} else if (step == 0) {
		*x->loss = (float)(loss * x->scale);
	} else {
		*x->loss += (float)(loss * x->scale);
	}
}

/* A dlogits tile's counting step @step (MEAN_VALID): labels < n. */
static void xent_count_chunk(const struct vtpu_engine_xent *x, u32 step,
			     struct xent_state *st)
{
	u64 i0 = (u64)step * XENT_COUNT_CHUNK;
	u64 i1 = vtpu_min_u64(i0 + XENT_COUNT_CHUNK, x->m), i;
	u64 valid = 0;

	for (i = i0; i < i1; i++)
		valid += x->labels[i] < x->n;
	if (step == 0)
		st->valid = 0;
	st->valid += valid;
}

/* Tiles 1..ngrad: probs and dlogits (times @scale) of chunk @c's rows. */
static void xent_grad_chunk(const struct vtpu_engine_xent *x, u32 c,
			    float scale)
{
	u32 i0 = c * x->rows;
	u32 i1 = x->m - i0 < x->rows ? x->m : i0 + x->rows;
	u32 i, j, arg;

	for (i = i0; i < i1; i++) {
		const float *row = x->logits + (u64)i * x->n;
		float *out = x->probs ? x->probs + (u64)i * x->n :
					x->dlogits + (u64)i * x->n;
		float *d = x->dlogits ? x->dlogits + (u64)i * x->n : NULL;
		u32 label = ENGINE_LOAD_U32(&x->labels[i]);
		double mx = row_max(row, x->n, &arg), sum = 0.0, inv;
		float pl;

		for (j = 0; j < x->n; j++) {
			double e = vtpu_exp_nonpos((double)row[j] - mx);

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
			d[j] = scale * out[j];
		d[label] = scale * (pl - 1.0f);
	}
}

void vtpu_xent_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_xent *x = &op->xent;
	struct xent_state *st = scratch;
	float scale = x->scale;
	u64 c;

	if (tile == 0) {
		if (step < x->nchunks)
			xent_loss_chunk(x, step, st);
		return;
	}
	if (step < x->ncount) {
		xent_count_chunk(x, step, st);
		return;
	}
	if (x->ncount)
		scale = st->valid ?
			(float)((double)x->scale / (double)st->valid) : 0.0f;
	c = (u64)(step - x->ncount) * x->ngrad + tile - 1;
	if (c < x->nchunks)
		xent_grad_chunk(x, (u32)c, scale);
}
