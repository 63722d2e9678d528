// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * SOFTMAX and SOFTMAX_GRAD (struct vtpu_cmd_softmax): a masked softmax
 * over the last axis, as attention needs, and its gradient.
 *
 * Every row's valid columns are a prefix [0, v) (the lengths, clamped to
 * n, and the causal bound r % g + 1), so a row is three passes over v
 * columns and a fill of the rest. Rows are cut into chunks of at most
 * VTPU_OPS_CHUNK / SOFTMAX_WEIGHT elements (SOFTMAX_GRAD_WEIGHT for the
 * gradient), but of one row at least (a row is at most
 * VTPU_SOFTMAX_MAX_COLS); tile t does chunks t, t + ntiles, ... one per
 * step. A row is one call's and its sums run in column order: the result
 * does not depend on the workers. exp and the sums are in double
 * (engine_math.h).
 */
#include "engine_internal.h"
#include "engine_math.h"

#define SOFTMAX_MAX_TILES 64u
/*
 * What an element costs, in element-wise elements (vtpu_ops_tile()): a
 * softmax element's exp in double, scalar, took 8-9 ns, the gradient's
 * two passes about a third of that, an ELEMENTWISE element 0.3 ns
 */
#define SOFTMAX_WEIGHT 24u
#define SOFTMAX_GRAD_WEIGHT 8u

void vtpu_softmax_prepare(struct vtpu_engine_op *op,
			  const struct vtpu_cmd_hdr *cmd,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_softmax *c = (const void *)cmd;
	struct vtpu_engine_softmax *s = &op->softmax;
	u32 weight;

	s->m = c->m;
	s->n = c->n;
	s->group = c->rows_per_group;
	s->flags = c->flags;
	s->grad = cmd->opcode == VTPU_OP_SOFTMAX_GRAD;
	s->lengths = NULL;
	if (c->flags & VTPU_SOFTMAX_LENGTHS)
		s->lengths = vtpu_operand_ptr(bufs, &c->lengths);
	if (s->grad) {
		s->out = vtpu_operand_ptr(bufs, &c->x);
		s->y = vtpu_operand_ptr(bufs, &c->y);
		s->x = vtpu_operand_ptr(bufs, &c->dy);
	} else {
		s->x = vtpu_operand_ptr(bufs, &c->x);
		s->out = vtpu_operand_ptr(bufs, &c->y);
		s->y = NULL;
	}
	/*
	 * Chunks of rows the size of ELEMENTWISE's tiles (vtpu_ops_tile()),
	 * an element counting for @weight: a decoder step's 64 x 24 is then
	 * shared by two workers
	 */
	weight = s->grad ? SOFTMAX_GRAD_WEIGHT : SOFTMAX_WEIGHT;
	vtpu_ops_tile(op, (u64)s->m * s->n * weight);
	s->rows = (u32)(op->chunk / ((u64)s->n * weight));
	if (!s->rows)
		s->rows = 1;
	s->nchunks = vtpu_div_up(s->m, s->rows);
	s->ntiles = s->nchunks < SOFTMAX_MAX_TILES ? s->nchunks :
						      SOFTMAX_MAX_TILES;
	op->ntiles = s->ntiles;
	op->nsteps = vtpu_div_up(s->nchunks, s->ntiles);
	op->flops = (s->grad ? 4ull : 10ull) * s->m * s->n;
}

/* Row @r's valid columns: [0, v). */
static u32 softmax_valid(const struct vtpu_engine_softmax *s, u32 r)
{
	u32 v = s->n, len;

	if (s->lengths) {
		len = ENGINE_LOAD_U32(&s->lengths[r / s->group]);
		if (len < v)
			v = len;
	}
	if ((s->flags & VTPU_SOFTMAX_CAUSAL) && r % s->group < v)
		v = r % s->group + 1;
	return v;
}

static void softmax_row(const float *x, float *y, u32 v)
{
	double mx, sum = 0.0, inv;
	u32 j;

	mx = x[0];
	for (j = 1; j < v; j++)
		if (x[j] > mx)
			mx = x[j];
	for (j = 0; j < v; j++) {
		double e = vtpu_exp_nonpos((double)x[j] - mx);

		y[j] = (float)e;
		sum += e;
	}
	inv = 1.0 / sum;	/* sum >= 1: the max's term is 1 */
	for (j = 0; j < v; j++)
		y[j] = (float)(y[j] * inv);
}

static void softmax_grad_row(const float *y, const float *dy, float *dx,
			     u32 v)
{
	double s = 0.0;
	u32 j;

	for (j = 0; j < v; j++)
		s += (double)dy[j] * y[j];
	for (j = 0; j < v; j++)
		dx[j] = (float)(y[j] * ((double)dy[j] - s));
}

void vtpu_softmax_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		      void *scratch)
{
	const struct vtpu_engine_softmax *s = &op->softmax;
	u64 c = (u64)step * s->ntiles + tile, off;
	u32 i0, i1, i, v;

	if (c >= s->nchunks)
		return;
	i0 = (u32)c * s->rows;
	i1 = s->m - i0 < s->rows ? s->m : i0 + s->rows;
	for (i = i0; i < i1; i++) {
		off = (u64)i * s->n;
		v = softmax_valid(s, i);
		if (v && s->grad)
			softmax_grad_row(s->y + off, s->x + off, s->out + off,
					 v);
		else if (v)
			softmax_row(s->x + off, s->out + off, v);
		if (v < s->n)
			memset(s->out + off + v, 0, (u64)(s->n - v) * 4);
	}
}

int vtpu_softmax_describe(const struct vtpu_engine_op *op, char *buf,
			  size_t len)
{
	const struct vtpu_engine_softmax *s = &op->softmax;

	return snprintf(buf, len, "%ux%u, g %u, flags 0x%x", s->m, s->n,
			s->group, s->flags);
}
