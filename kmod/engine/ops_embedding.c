// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * EMBEDDING and EMBEDDING_GRAD (struct vtpu_cmd_embedding): a lookup of
 * table rows by token id, and its adjoint, a scatter-add into the table.
 *
 * Ids are data: each one is checked against vocab as it is read, so an
 * id past the table reads and writes nothing (a zero row of y; a skipped
 * row of dy).
 *
 * The lookup is tiled as an element-wise op over y. The scatter-add
 * cannot split the ids (two of them may name one row): its tiles are
 * blocks of columns, each of which walks all ids in order, so every
 * element of the table sums its rows of dy in the order of i whatever
 * the tiles are, without atomics. Its steps bound a call: first those
 * that zero the tile's columns of the table (unless accumulating), then
 * those that walk a range of ids.
 */
#include "engine_internal.h"

/* Columns of the table a gradient tile owns, at least (a cache line). */
#define EMB_MIN_WIDTH 16u

static void embedding_grad_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_embedding *e = &op->emb;
	u32 tiles = (u32)vtpu_min_u64(op->workers, 1u << 16), width;

	/* tiles that the workers share evenly, of whole cache lines */
	width = vtpu_div_up(e->dim, tiles);
	width = vtpu_div_up(width, EMB_MIN_WIDTH) * EMB_MIN_WIDTH;
	width = (u32)vtpu_min_u64(width, VTPU_OPS_CHUNK);
	width = (u32)vtpu_min_u64(width, e->dim);
	e->width = width;
	e->rows = VTPU_OPS_CHUNK / width;
	e->zsteps = (e->flags & VTPU_EMBEDDING_ACCUMULATE) ?
			    0 : vtpu_div_up(e->vocab, e->rows);
	op->ntiles = vtpu_div_up(e->dim, width);
	op->nsteps = e->zsteps + vtpu_div_up(e->n, e->rows);
}

void vtpu_embedding_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_embedding *c = (const void *)cmd;
	struct vtpu_engine_embedding *e = &op->emb;

	e->n = c->n;
	e->vocab = c->vocab;
	e->dim = c->dim;
	e->flags = c->flags;
	e->ids = vtpu_operand_ptr(bufs, &c->ids);
	e->table = vtpu_operand_ptr(bufs, &c->table);
	e->y = vtpu_operand_ptr(bufs, &c->y);
	op->flops = (u64)e->n * e->dim;
	if (cmd->opcode == VTPU_OP_EMBEDDING_GRAD)
		embedding_grad_tile(op);
	else
		vtpu_ops_tile(op, (u64)e->n * e->dim);
}

/* EMBEDDING: elements [i0, i0 + chunk) of y, row by row */
static void embedding_fwd(const struct vtpu_engine_op *op, u32 tile)
{
	const struct vtpu_engine_embedding *e = &op->emb;
	u64 i0 = (u64)tile * op->chunk;
	u64 end = vtpu_min_u64(i0 + op->chunk, (u64)e->n * e->dim);
	u64 row = i0 / e->dim, col = i0 % e->dim, len, j;
	const float *src;
	float *dst;
	u32 id;

	for (; i0 < end; i0 += len, row++, col = 0) {
		len = vtpu_min_u64(e->dim - col, end - i0);
		dst = e->y + i0;
		id = ENGINE_LOAD_U32(&e->ids[row]);
		if (id >= e->vocab) {
			for (j = 0; j < len; j++)
				dst[j] = 0.0f;
			continue;
		}
		src = e->table + (u64)id * e->dim + col;
		for (j = 0; j < len; j++)
			dst[j] = src[j];
	}
}

/* EMBEDDING_GRAD: one step of the tile's columns [c0, c0 + w) */
static void embedding_grad(const struct vtpu_engine_op *op, u32 tile,
			   u32 step)
{
	const struct vtpu_engine_embedding *e = &op->emb;
	u64 c0 = (u64)tile * e->width, i, i1, j;
	u64 w = vtpu_min_u64(e->width, e->dim - c0);
	const float *src;
	float *dst;
	u32 id;

	if (step < e->zsteps) {
		i = (u64)step * e->rows;
		i1 = vtpu_min_u64(i + e->rows, e->vocab);
		for (; i < i1; i++) {
			dst = e->table + i * e->dim + c0;
			for (j = 0; j < w; j++)
				dst[j] = 0.0f;
		}
		return;
	}
	i = (u64)(step - e->zsteps) * e->rows;
	i1 = vtpu_min_u64(i + e->rows, e->n);
	for (; i < i1; i++) {
		id = ENGINE_LOAD_U32(&e->ids[i]);
		if (id >= e->vocab)
			continue;
		src = e->y + i * e->dim + c0;
		dst = e->table + (u64)id * e->dim + c0;
		for (j = 0; j < w; j++)
			dst[j] += src[j];
	}
}

void vtpu_embedding_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	if (op->opcode == VTPU_OP_EMBEDDING_GRAD)
		embedding_grad(op, tile, step);
	else
		embedding_fwd(op, tile);
}

/* n ids of vocab, dim columns (and the gradient's column tiles) */
int vtpu_embedding_describe(const struct vtpu_engine_op *op, char *buf,
			    size_t len)
{
	const struct vtpu_engine_embedding *e = &op->emb;

	return snprintf(buf, len, "%u of %ux%u%s", e->n, e->vocab, e->dim,
			e->flags & VTPU_EMBEDDING_ACCUMULATE ? " acc" : "");
}
