// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ADDITIVE_SCORE and ADDITIVE_SCORE_GRAD (struct vtpu_cmd_additive_score):
 * Bahdanau's scores v . tanh(q_i + k_j) per example, and their gradient.
 *
 * The tanh is the element-wise TANH's (act_tmpl.h, the op's SIMD level:
 * every level gives the same bits), over one score's units at a time in
 * scratch. The forward's tiles take chunks of scores. The gradient
 * recomputes the tanh: a row of dq (one (i, b)) is one call's, summing
 * over the keys j in order; a row of dk likewise over the queries i; dv
 * is cut into blocks of ADD_WIDTH units, a tile's steps walking the
 * (b, i) rows in order with the sums kept in scratch (a worker runs a
 * tile's steps back to back). Every sum is in double, in an order fixed
 * by the shape: the result does not depend on the workers.
 */
#include "engine_internal.h"

#define ADD_MAX_TILES 64u
#define ADD_WIDTH 64u		/* units of dv per tile */
#define ADD_WORK (1u << 16)	/* tanh per call, about */

/* Scratch: a double sum and a float per unit. */
size_t vtpu_additive_scratch_size(void)
{
	return (size_t)VTPU_ADDITIVE_MAX_UNITS * (sizeof(double) + 4);
}

static void (*const add_tanh[])(const float *x, float *z, u64 n) = {
	[VTPU_SIMD_SCALAR] = vtpu_act_tanh_scalar,
	[VTPU_SIMD_AVX2] = vtpu_act_tanh_avx2,
	[VTPU_SIMD_AVX512] = vtpu_act_tanh_avx512,
};

static u32 add_min(u64 a, u64 b)
{
	return (u32)(a < b ? a : b);
}

/* ceil(a / b) of 64-bit counts (vtpu_div_up() takes 32 bits) */
static u64 add_div_up(u64 a, u64 b)
{
	return a / b + (a % b != 0);
}

/* @per units of work per call: how many of @each fit, at least one. */
static u32 add_per(u64 each)
{
	return each >= ADD_WORK ? 1 : (u32)(ADD_WORK / each);
}

void vtpu_additive_prepare(struct vtpu_engine_op *op,
			   const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_additive_score *c = (const void *)cmd;
	struct vtpu_engine_additive *a = &op->add;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 b = c->batch, u = c->units, steps, i;

	memset(a, 0, sizeof(*a));
	a->batch = c->batch;
	a->tq = c->tq;
	a->tk = c->tk;
	a->units = c->units;
	a->grad = cmd->opcode == VTPU_OP_ADDITIVE_SCORE_GRAD;
	a->tanh = add_tanh[simd];
	a->q = vtpu_operand_ptr(bufs, &c->q);
	a->k = vtpu_operand_ptr(bufs, &c->k);
	a->v = vtpu_operand_ptr(bufs, &c->v);
	op->flops = 4ull * b * a->tq * a->tk * u;
	if (!a->grad) {
		a->s = vtpu_operand_ptr(bufs, &c->s);
		a->per = add_per(u);
		a->nchunks = add_div_up(b * a->tq * a->tk, a->per);
		a->ntiles = add_min(a->nchunks, ADD_MAX_TILES);
		op->ntiles = a->ntiles;
		op->nsteps = add_div_up(a->nchunks, a->ntiles);
		return;
	}
	a->ds = vtpu_operand_ptr(bufs, &c->s);
	a->dq = vtpu_operand_ptr(bufs, &c->dq);
	a->dk = vtpu_operand_ptr(bufs, &c->dk);
	a->dv = vtpu_operand_ptr(bufs, &c->dv);
	a->rows[0] = add_per((u64)a->tk * u);
	a->chunks[0] = add_div_up(b * a->tq, a->rows[0]);
	a->rows[1] = add_per((u64)a->tq * u);
	a->chunks[1] = add_div_up(b * a->tk, a->rows[1]);
	a->rows[2] = add_per((u64)a->tk * add_min(u, ADD_WIDTH));
	a->chunks[2] = add_div_up(u, ADD_WIDTH);
	op->nsteps = 1;
	for (i = 0; i < 3; i++) {
		a->tiles[i] = add_min(a->chunks[i], ADD_MAX_TILES);
		steps = add_div_up(a->chunks[i], a->tiles[i]);
		if (i == 2)	/* every block walks all the (b, i) rows */
			steps = add_div_up(b * a->tq, a->rows[2]);
		if (steps > op->nsteps)
			op->nsteps = (u32)steps;
	}
	a->ntiles = a->tiles[0] + a->tiles[1] + a->tiles[2];
	op->ntiles = a->ntiles;
	op->flops *= 2;
}

/* tmp[c] = tanh(q[c] + k[c]) for c < n */
static void add_th(const struct vtpu_engine_additive *a, const float *q,
		   const float *k, float *tmp, u32 n)
{
	u32 c;

	for (c = 0; c < n; c++)
		tmp[c] = q[c] + k[c];
	a->tanh(tmp, tmp, n);
}

/* Scores [i0, i1) in [B][tq][tk] order. */
static void add_fwd(const struct vtpu_engine_additive *a, u64 i0, u64 i1,
		    float *tmp)
{
	u64 bu = (u64)a->batch * a->units, i, b, t, j;
	u32 c;

	for (i = i0; i < i1; i++) {
		double sum = 0.0;

		j = i % a->tk;
		t = i / a->tk % a->tq;
		b = i / a->tk / a->tq;
		add_th(a, a->q + t * bu + b * a->units,
		       a->k + j * bu + b * a->units, tmp, a->units);
		for (c = 0; c < a->units; c++)
			sum += (double)a->v[c] * tmp[c];
		a->s[i] = (float)sum;
	}
}

/*
 * One row of dq (@keys: over the keys j, row r = (i, b)) or of dk (over
 * the queries i, row r = (j, b)): v[c] times the sum of ds (1 - t t).
 */
static void add_row(const struct vtpu_engine_additive *a, u64 r, bool keys,
		    double *acc, float *tmp)
{
	u64 bu = (u64)a->batch * a->units, b = r % a->batch, x = r / a->batch;
	u32 n = keys ? a->tk : a->tq, o, c;
	const float *mine = (keys ? a->q : a->k) + r * a->units;
	float *out = (keys ? a->dq : a->dk) + r * a->units;

	for (c = 0; c < a->units; c++)
		acc[c] = 0.0;
	for (o = 0; o < n; o++) {
		u64 si = keys ? (b * a->tq + x) * a->tk + o :
				(b * a->tq + o) * a->tk + x;
		double d = a->ds[si];

		add_th(a, mine, (keys ? a->k : a->q) + o * bu + b * a->units,
		       tmp, a->units);
		for (c = 0; c < a->units; c++)
			acc[c] += d * (1.0 - (double)tmp[c] * tmp[c]);
	}
	for (c = 0; c < a->units; c++)
		out[c] = (float)(a->v[c] * acc[c]);
}

/* dv's units [c0, c0 + w): the (b, i) rows [r0, r1) into acc */
static void add_dv(const struct vtpu_engine_additive *a, u32 c0, u32 w,
		   u64 r0, u64 r1, double *acc, float *tmp)
{
	u64 bu = (u64)a->batch * a->units, r, b, i;
	u32 j, c;

	for (r = r0; r < r1; r++) {
		b = r / a->tq;
		i = r % a->tq;
		for (j = 0; j < a->tk; j++) {
			double d = a->ds[r * a->tk + j];

			add_th(a, a->q + i * bu + b * a->units + c0,
			       a->k + (u64)j * bu + b * a->units + c0, tmp, w);
			for (c = 0; c < w; c++)
				acc[c] += d * tmp[c];
		}
	}
}

void vtpu_additive_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		       void *scratch)
{
	const struct vtpu_engine_additive *a = &op->add;
	u64 c, r0, r1, rows, r;
	double *acc = scratch;
	float *tmp = (float *)(acc + VTPU_ADDITIVE_MAX_UNITS);
	u32 kind, c0, w;

	if (!a->grad) {
		c = (u64)step * a->ntiles + tile;
		if (c >= a->nchunks)
			return;
		r1 = (u64)a->batch * a->tq * a->tk;
		r0 = c * a->per;
		add_fwd(a, r0, r1 - r0 < a->per ? r1 : r0 + a->per, tmp);
		return;
	}
	for (kind = 0; kind < 2 && tile >= a->tiles[kind]; kind++)
		tile -= a->tiles[kind];
	if (kind < 2) {		/* rows of dq or dk */
		c = (u64)step * a->tiles[kind] + tile;
		if (c >= a->chunks[kind])
			return;
		rows = (u64)a->batch * (kind ? a->tk : a->tq);
		r0 = c * a->rows[kind];
		r1 = rows - r0 < a->rows[kind] ? rows : r0 + a->rows[kind];
		for (r = r0; r < r1; r++)
			add_row(a, r, !kind, acc, tmp);
		return;
	}
	/* dv: block @tile, the (b, i) rows of this step */
	rows = (u64)a->batch * a->tq;
	r0 = (u64)step * a->rows[2];
	if (r0 >= rows)
		return;
	r1 = rows - r0 < a->rows[2] ? rows : r0 + a->rows[2];
	c0 = tile * ADD_WIDTH;
	w = add_min(a->units - c0, ADD_WIDTH);
	if (!step)
		memset(acc, 0, ADD_WIDTH * sizeof(double));
	add_dv(a, c0, w, r0, r1, acc, tmp);
	if (r1 == rows)
		for (c = 0; c < w; c++)
			a->dv[c0 + c] = (float)acc[c];
}

int vtpu_additive_describe(const struct vtpu_engine_op *op, char *buf,
			   size_t len)
{
	const struct vtpu_engine_additive *a = &op->add;

	return snprintf(buf, len, "B %u, tq %u, tk %u, units %u", a->batch,
			a->tq, a->tk, a->units);
}
