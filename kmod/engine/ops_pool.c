// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * MAXPOOL and MAXPOOL_GRAD over NHWC images (struct vtpu_cmd_pool).
 *
 * Forward tiles the output (n, oy, ox, c) by flat element ranges: each
 * output element scans its window in (ky, kx) order and keeps the first
 * maximum (a NaN beats any number, the first NaN stays). Backward is a
 * gather, like COL2IM: each dx element sums, in (ky, kx) order, dy of the
 * windows that cover it and whose index names it. An index can be any
 * value user space left in memory: it is only ever compared, never used
 * as an address.
 */
#include "engine_internal.h"

/*
 * Elements a tile keeps however long their windows: a run of channels
 * long enough to vectorise. Longer windows are cut into steps instead.
 */
#define WINDOW_MIN_CHUNK 256u

void vtpu_window_tile(struct vtpu_engine_op *op, u64 work)
{
	struct vtpu_engine_window *g = &op->conv.win;

	g->chunk = VTPU_OPS_CHUNK / work;
	g->span = work;
	if (g->chunk < WINDOW_MIN_CHUNK) {
		/*
		 * A window too long for one call (past 16 x 16): each step
		 * takes the next VTPU_OPS_CHUNK / WINDOW_MIN_CHUNK positions
		 * of every element's window, in the order one pass would.
		 */
		g->chunk = WINDOW_MIN_CHUNK;
		g->span = VTPU_OPS_CHUNK / WINDOW_MIN_CHUNK;
		op->nsteps = (u32)((work + g->span - 1) / g->span);
	}
	op->ntiles = (u32)((g->total + g->chunk - 1) / g->chunk);
}

/* MAXPOOL's and AVGPOOL's tiles: @forward over y, else over dx */
static void pool_tile(struct vtpu_engine_op *op, bool forward)
{
	struct vtpu_engine_window *g = &op->conv.win;

	if (forward) {
		g->total = (u64)g->n * g->oh * g->ow * g->c;
		vtpu_window_tile(op, (u64)g->kh * g->kw);
	} else {
		g->total = (u64)g->n * g->h * g->w * g->c;
		vtpu_window_tile(op, vtpu_taps(g->kh, g->sh, g->oh) *
				     vtpu_taps(g->kw, g->sw, g->ow));
	}
	op->flops = (u64)g->n * g->oh * g->ow * g->c * g->kh * g->kw;
}

void vtpu_pool_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_pool *pl = (const void *)cmd;

	vtpu_pool_decode(pl, &op->conv.win);
	op->conv.x = vtpu_operand_ptr(bufs, &pl->x);
	op->conv.y = vtpu_operand_ptr(bufs, &pl->y);
	op->conv.index = vtpu_operand_ptr(bufs, &pl->index);
	pool_tile(op, op->opcode == VTPU_OP_MAXPOOL);
}

/*
 * AVGPOOL and AVGPOOL_GRAD (struct vtpu_cmd_avgpool), tiled like MAXPOOL
 * and MAXPOOL_GRAD: the forward sums each window's pixels in (ky, kx)
 * order (the step holding position 0 zeroes y, the one holding the last
 * position divides by the count), the backward gathers dy / count of the
 * windows that cover each dx pixel, in (ky, kx) order.
 */
void vtpu_avgpool_prepare(struct vtpu_engine_op *op,
			  const struct vtpu_cmd_hdr *cmd,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_avgpool *pl = (const void *)cmd;
	struct vtpu_engine_window *g = &op->conv.win;

	vtpu_avgpool_decode(pl, g);
	op->conv.x = vtpu_operand_ptr(bufs, &pl->x);
	op->conv.y = vtpu_operand_ptr(bufs, &pl->y);
	pool_tile(op, op->opcode == VTPU_OP_AVGPOOL);
}

/*
 * The loops at this file's width (the baseline); the AVX2 and AVX-512
 * builds of the same loops are in ops_nhwc_*.c, and all give the same
 * bits (pool_tmpl.h).
 */
#define POOL_SFX scalar
#include "pool_tmpl.h"

static void (*const pool_levels[])(const struct vtpu_engine_op *op,
				   u32 step, u64 e, u64 end) = {
	[VTPU_SIMD_SCALAR] = vtpu_pool_range_scalar,
	[VTPU_SIMD_AVX2] = vtpu_pool_range_avx2,
	[VTPU_SIMD_AVX512] = vtpu_pool_range_avx512,
};

/* The pools' tiles: the forward ones over windows, the gathers over pixels */
void vtpu_pool_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_window *g = &op->conv.win;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 e = (u64)tile * g->chunk;
	u64 end = vtpu_min_u64(e + g->chunk, g->total);

	pool_levels[simd](op, step, e, end);
}
