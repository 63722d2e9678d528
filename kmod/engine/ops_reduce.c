// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * REDUCE (struct vtpu_cmd_reduce): row or column sums of a matrix, or
 * row sums of its squares (SUMSQ_ROWS, tiled as ROWS); ARGMAX (struct
 * vtpu_cmd_argmax), a row reduction too, at the end.
 *
 * Each tile owns a block of outputs; its steps walk the reduced dimension
 * in blocks, in order. A step sums its block into a partial (scratch for
 * column sums, a register for row sums) and adds it to y, which step 0
 * initialises to beta * y (or 0 when beta is 0). The steps' blocks depend
 * on m and n only, so the result is the same on any number of workers.
 *
 * Column sums of many rows and few columns (a bias gradient, 65536 x 64)
 * split the rows into groups (a number that depends on m and n only) and
 * run in two phases (vtpu_engine.h): the first's tiles sum a group's
 * blocks of rows, in order, into the op's workspace; the second's add
 * the groups' sums to y, in group order.
 */
#include "engine_internal.h"

/* Column sums: columns per tile; partials live in scratch. */
#define REDUCE_COLS_BLOCK 1024u

/* Column sums: elements a tile of row groups sums, about; most groups. */
#define REDUCE_TILE_ELEMS (256u * 1024)
#define REDUCE_GROUPS_MAX 16u

size_t vtpu_reduce_scratch_size(void)
{
	return REDUCE_COLS_BLOCK * sizeof(float);
}

/*
 * Column sums in groups of rows: how many groups (1: none), a function of
 * the shape, each a whole number of steps; their float sums, [groups][n],
 * fit in the workspace.
 */
static u32 reduce_groups(struct vtpu_engine_reduce *r, u32 cblocks)
{
	u64 want = ((u64)r->m * r->n + REDUCE_TILE_ELEMS - 1) /
		   REDUCE_TILE_ELEMS;
	u64 g = (want + cblocks - 1) / cblocks;
	u64 most = VTPU_ENGINE_WORK_BYTES / (sizeof(float) * r->n);
	u32 nblocks = vtpu_div_up(r->m, r->sblock);

	if (g > REDUCE_GROUPS_MAX)
		g = REDUCE_GROUPS_MAX;
	if (g > most)
		g = most;
	if (g < 2)
		return 1;
	r->gsteps = vtpu_div_up(nblocks, (u32)g);
	return vtpu_div_up(nblocks, r->gsteps);	/* none empty */
}

static void reduce_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_reduce *r = &op->reduce;
	u32 width;

	if (r->op == VTPU_REDUCE_COLS) {
		width = r->n < REDUCE_COLS_BLOCK ? r->n : REDUCE_COLS_BLOCK;
		r->tblock = width;
		r->sblock = VTPU_OPS_CHUNK / width;
		r->groups = reduce_groups(r, vtpu_div_up(r->n, width));
		if (r->groups > 1) {
			/* (phase 1's tiles use step 0 only) */
			op->nphases = 2;
			op->phase_end[0] = r->groups * vtpu_div_up(r->n, width);
			op->ntiles = op->phase_end[0] + vtpu_div_up(r->n, width);
			op->phase_end[1] = op->ntiles;
			op->nsteps = r->gsteps;
			op->flops = 2ull * r->m * r->n;
			return;
		}
		/*
		 * Columns shared out among the workers when there is work for
		 * them (a bias gradient, 128 x 512, ran on one of two), whole
		 * vectors each. The steps stay as they were: a column's sum
		 * does not depend on its tile.
		 */
		if (vtpu_div_up(r->n, width) < op->workers &&
		    (u64)r->m * r->n >= 2ull * VTPU_OPS_MIN_CHUNK)
			r->tblock = vtpu_div_up(vtpu_div_up(r->n, op->workers),
						16) * 16;
		op->ntiles = vtpu_div_up(r->n, r->tblock);
		op->nsteps = vtpu_div_up(r->m, r->sblock);
	} else {
		r->sblock = r->n < VTPU_OPS_CHUNK ? r->n : VTPU_OPS_CHUNK;
		r->tblock = VTPU_OPS_CHUNK / r->sblock;
		op->ntiles = vtpu_div_up(r->m, r->tblock);
		op->nsteps = vtpu_div_up(r->n, r->sblock);
	}
	op->flops = 2ull * r->m * r->n;
}

void vtpu_reduce_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
			 const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_reduce *r = (const void *)cmd;

	op->reduce.op = r->op;
	op->reduce.m = r->m;
	op->reduce.n = r->n;
	op->reduce.ldx = r->ldx;
	op->reduce.alpha = vtpu_f32_from_bits(r->alpha);
	op->reduce.beta = vtpu_f32_from_bits(r->beta);
	op->reduce.x = vtpu_operand_ptr(bufs, &r->x);
	op->reduce.y = vtpu_operand_ptr(bufs, &r->y);
	reduce_tile(op);
}

/* y[j] = beta * y[j] (or 0), the start of a sum. */
static float reduce_init(const struct vtpu_engine_reduce *r, float y)
{
	return r->beta != 0.0f ? r->beta * y : 0.0f;
}

static void reduce_cols(const struct vtpu_engine_reduce *r, u32 tile,
			u32 step, float *acc)
{
	u32 j0 = tile * r->tblock, i0 = step * r->sblock;
	u32 nc = r->n - j0 < r->tblock ? r->n - j0 : r->tblock;
	u32 nr = r->m - i0 < r->sblock ? r->m - i0 : r->sblock;
	const float *x = r->x + (u64)i0 * r->ldx + j0;
	float *y = r->y + j0;
	float a = r->alpha;
	u32 i, j;

	for (j = 0; j < nc; j++)
		acc[j] = a * x[j];
	for (i = 1; i < nr; i++) {
		const float *row = x + (u64)i * r->ldx;

		for (j = 0; j < nc; j++)
			acc[j] += a * row[j];
	}
	for (j = 0; j < nc; j++)
		y[j] = (step ? y[j] : reduce_init(r, y[j])) + acc[j];
}

/* 8 interleaved partial sums (vectorisable, fixed order), then folded. */
static float sum_row(const float *x, u32 n, float a)
{
	float s[8] = { 0 };
	u32 j, k;

	for (j = 0; j + 8 <= n; j += 8)
		for (k = 0; k < 8; k++)
			s[k] += a * x[j + k];
	for (k = 0; j < n; j++, k++)
		s[k] += a * x[j];
	return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/* The same for a * x[j]^2, in the same order. */
static float sumsq_row(const float *x, u32 n, float a)
{
	float s[8] = { 0 };
	u32 j, k;

	for (j = 0; j + 8 <= n; j += 8)
		for (k = 0; k < 8; k++)
			s[k] += a * (x[j + k] * x[j + k]);
	for (k = 0; j < n; j++, k++)
		s[k] += a * (x[j] * x[j]);
	return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

/*
 * ROWS and SUMSQ_ROWS: a tile owns tblock rows, a step sblock columns of
 * them (a long row, m = 1, is one tile of many steps).
 */
static void reduce_rows(const struct vtpu_engine_reduce *r, u32 tile,
			u32 step)
{
	u32 i0 = tile * r->tblock, j0 = step * r->sblock;
	u32 nr = r->m - i0 < r->tblock ? r->m - i0 : r->tblock;
	u32 nc = r->n - j0 < r->sblock ? r->n - j0 : r->sblock;
	u32 i;

	for (i = 0; i < nr; i++) {
		const float *x = r->x + (u64)(i0 + i) * r->ldx + j0;
		float *y = r->y + i0 + i;
		float part = r->op == VTPU_REDUCE_SUMSQ_ROWS ?
				     sumsq_row(x, nc, r->alpha) :
				     sum_row(x, nc, r->alpha);

		*y = (step ? *y : reduce_init(r, *y)) + part;
	}
}

/*
 * COLS in groups: phase 0's tile (g, block) sums the group's steps into
 * its part of the workspace, phase 1's tile (block) adds the groups'
 * sums to y in group order.
 */
static void reduce_cols_groups(const struct vtpu_engine_op *op, u32 tile,
			       u32 step, float *acc)
{
	const struct vtpu_engine_reduce *r = &op->reduce;
	u32 cblocks = vtpu_div_up(r->n, r->tblock), g, j0, nc, i0, nr, i, j;
	float *work = vtpu_op_work(op), *part, *y;
	const float *x;
	float a = r->alpha;

	if (tile >= op->phase_end[0]) {
		if (step)
			return;
		j0 = (tile - op->phase_end[0]) * r->tblock;
		nc = r->n - j0 < r->tblock ? r->n - j0 : r->tblock;
		y = r->y + j0;
		for (j = 0; j < nc; j++)
			acc[j] = work[j0 + j];
		for (g = 1; g < r->groups; g++)
			for (j = 0; j < nc; j++)
				acc[j] += work[(u64)g * r->n + j0 + j];
		for (j = 0; j < nc; j++)
			y[j] = reduce_init(r, y[j]) + acc[j];
		return;
	}
	g = tile / cblocks;
	j0 = tile % cblocks * r->tblock;
	nc = r->n - j0 < r->tblock ? r->n - j0 : r->tblock;
	i0 = (g * r->gsteps + step) * r->sblock;
	part = work + (u64)g * r->n + j0;
	if (!step)
		for (j = 0; j < nc; j++)
			part[j] = 0.0f;
	if (i0 >= r->m)
		return;		/* the last group's idle steps */
	nr = r->m - i0 < r->sblock ? r->m - i0 : r->sblock;
	x = r->x + (u64)i0 * r->ldx + j0;
	for (j = 0; j < nc; j++)
		acc[j] = a * x[j];
	for (i = 1; i < nr; i++) {
		const float *row = x + (u64)i * r->ldx;

		for (j = 0; j < nc; j++)
			acc[j] += a * row[j];
	}
	for (j = 0; j < nc; j++)
		part[j] += acc[j];
}

void vtpu_reduce_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	if (op->reduce.op == VTPU_REDUCE_COLS && op->reduce.groups > 1)
		reduce_cols_groups(op, tile, step, scratch);
	else if (op->reduce.op == VTPU_REDUCE_COLS)
		reduce_cols(&op->reduce, tile, step, scratch);
	else
		reduce_rows(&op->reduce, tile, step);
}

int vtpu_reduce_describe(const struct vtpu_engine_op *op, char *buf,
			 size_t len)
{
	if (op->reduce.groups > 1)
		return snprintf(buf, len, "op %u, %ux%u, %u groups",
				op->reduce.op, op->reduce.m, op->reduce.n,
				op->reduce.groups);
	return snprintf(buf, len, "op %u, %ux%u", op->reduce.op, op->reduce.m,
			op->reduce.n);
}

/*
 * ARGMAX: tiled as REDUCE ROWS, a tile owns tblock rows and a step sblock
 * columns of them. Between steps a row's best so far is its index in y
 * (which this command alone writes); its value is x at that index. A y
 * that is not an index of the columns already seen (only a user who
 * writes y under a running job makes one) restarts the row at the step's
 * first column: y stays below n and x is never read out of bounds.
 */
void vtpu_argmax_prepare(struct vtpu_engine_op *op,
			 const struct vtpu_cmd_hdr *cmd,
			 const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_argmax *c = (const void *)cmd;
	struct vtpu_engine_argmax *a = &op->argmax;

	a->m = c->m;
	a->n = c->n;
	a->ldx = c->ldx;
	a->x = vtpu_operand_ptr(bufs, &c->x);
	a->y = vtpu_operand_ptr(bufs, &c->y);
	a->sblock = a->n < VTPU_OPS_CHUNK ? a->n : VTPU_OPS_CHUNK;
	a->tblock = VTPU_OPS_CHUNK / a->sblock;
	op->ntiles = vtpu_div_up(a->m, a->tblock);
	op->nsteps = vtpu_div_up(a->n, a->sblock);
	op->flops = (u64)a->m * a->n;
}

/*
 * The first maximum of row x: the best so far, x[best], against x[j..end)
 * (best < j). NaN is above every number, so the first NaN ends the search.
 */
static u32 argmax_cols(const float *x, u32 best, u32 j, u32 end)
{
	float b = x[best], v;

	if (b != b)
		return best;
	for (; j < end; j++) {
		v = x[j];
		if (v > b) {
			b = v;
			best = j;
		} else if (v != v) {
			return j;
		}
	}
	return best;
}

void vtpu_argmax_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	const struct vtpu_engine_argmax *a = &op->argmax;
	u32 i0 = tile * a->tblock, j0 = step * a->sblock;
	u32 nr = a->m - i0 < a->tblock ? a->m - i0 : a->tblock;
	u32 end = a->n - j0 < a->sblock ? a->n : j0 + a->sblock;
	u32 i, best, j;

	for (i = 0; i < nr; i++) {
		const float *x = a->x + (u64)(i0 + i) * a->ldx;
		u32 *y = a->y + i0 + i;

		best = step ? ENGINE_LOAD_U32(y) : 0;
		j = j0;
		if (best >= j0) {	/* step 0, or a y that is no index */
			best = j0;
			j = j0 + 1;
		}
		*y = argmax_cols(x, best, j, end);
	}
}

int vtpu_argmax_describe(const struct vtpu_engine_op *op, char *buf,
			 size_t len)
{
	return snprintf(buf, len, "%ux%u", op->argmax.m, op->argmax.n);
}
