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
		vtpu_window_tile(op, vtpu_taps(g->kh, g->sh) *
				     vtpu_taps(g->kw, g->sw));
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
 * y, index [0..len) of window (n, oy, ox), channels c0.., over the window
 * positions of @r. The step that holds the window's first pixel starts
 * y and index from it; the later ones go on from what they hold.
 */
static void maxpool_window(const struct vtpu_engine_conv *cv,
			   const struct vtpu_tap_range *r, u64 out,
			   u64 n, u64 oy, u64 ox, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_window_walk w;
	float *y = cv->y + out;
	u32 *idx = cv->index + out;
	bool first;
	u64 i;

	vtpu_window_start(&w, g, r, oy, ox);
	first = (u64)w.ky0 * g->kw + (u64)w.kx0 >= r->r0 * g->kw + r->c0;
	/* pad < k: the window always holds a pixel */
	while (vtpu_window_next(&w)) {
		u64 pix = (u64)(w.y0 + w.ky) * g->w + (u64)(w.x0 + w.kx);
		const float *src = cv->x + (n * g->h * g->w + pix) * g->c + c0;
		u32 p = (u32)pix;

		if (first) {
			memcpy(y, src, len * 4);
			for (i = 0; i < len; i++)
				idx[i] = p;
			first = false;
			continue;
		}
		for (i = 0; i < len; i++) {
			float v = src[i], b = y[i];
			bool take = v > b || (v != v && b == b);

			y[i] = take ? v : b;
			idx[i] = take ? p : idx[i];
		}
	}
}

/* dx [0..len) of pixel (n, iy, ix), channels c0.., over the taps of @r */
static void maxpool_grad_pixel(const struct vtpu_engine_conv *cv,
			       const struct vtpu_tap_range *r, u64 e,
			       u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_cover_walk t;
	u32 p = (u32)(iy * g->w + ix);
	float *dx = cv->x + e;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(dx, 0, len * 4);
	vtpu_cover_start(&t, g, r, iy, ix);
	while (vtpu_cover_next(&t)) {
		u64 o = ((n * g->oh + t.oy) * g->ow + t.ox) * g->c + c0;
		const float *dy = cv->y + o;
		const u32 *idx = cv->index + o;

		/* dy loaded unconditionally: the select vectorises */
		for (i = 0; i < len; i++) {
			float v = dy[i];

			dx[i] += idx[i] == p ? v : 0.0f;
		}
	}
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

/* Pixels of the image in window o (start o * s - pad, length k, of n). */
static u64 avg_extent(u64 o, u32 s, u32 pad, u32 k, u32 n)
{
	s64 a = (s64)(o * s) - pad, b = a + k;

	if (a < 0)
		a = 0;
	if (b > (s64)n)
		b = n;
	return (u64)(b - a);
}

static void avgpool_window(const struct vtpu_engine_conv *cv,
			   const struct vtpu_tap_range *r, u64 out,
			   u64 n, u64 oy, u64 ox, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_window_walk w;
	float *y = cv->y + out;
	float cnt;
	u64 i;

	vtpu_window_start(&w, g, r, oy, ox);
	if (!r->r0 && !r->c0)
		memset(y, 0, len * 4);
	while (vtpu_window_next(&w)) {
		u64 pix = (u64)(w.y0 + w.ky) * g->w + (u64)(w.x0 + w.kx);
		const float *src = cv->x + (n * g->h * g->w + pix) * g->c + c0;

		for (i = 0; i < len; i++)
			y[i] += src[i];
	}
	if (r->r1 + 1 == g->kh && r->c1 == g->kw) {
		/* pad < k and the last window starts inside: cnt >= 1 */
		cnt = (float)(avg_extent(oy, g->sh, g->ph, g->kh, g->h) *
			      avg_extent(ox, g->sw, g->pw, g->kw, g->w));
		for (i = 0; i < len; i++)
			y[i] /= cnt;
	}
}

/* dx [0..len) of pixel (n, iy, ix), channels c0.., over the taps of @r */
static void avgpool_grad_pixel(const struct vtpu_engine_conv *cv,
			       const struct vtpu_tap_range *r, u64 e,
			       u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_cover_walk t;
	float *dx = cv->x + e;
	float cnt;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(dx, 0, len * 4);
	vtpu_cover_start(&t, g, r, iy, ix);
	while (vtpu_cover_next(&t)) {
		u64 o = ((n * g->oh + t.oy) * g->ow + t.ox) * g->c + c0;
		const float *dy = cv->y + o;

		cnt = (float)(avg_extent(t.oy, g->sh, g->ph, g->kh, g->h) *
			      avg_extent(t.ox, g->sw, g->pw, g->kw, g->w));
		for (i = 0; i < len; i++)
			dx[i] += dy[i] / cnt;
	}
}

/* The pools' tiles: the forward ones over windows, the gathers over pixels */
void vtpu_pool_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_window *g = &op->conv.win;
	u64 e = (u64)tile * g->chunk;
	u64 end = vtpu_min_u64(e + g->chunk, g->total);

	switch (op->opcode) {
	case VTPU_OP_MAXPOOL:
		vtpu_window_range(&op->conv, step, e, end, false,
				  maxpool_window);
		break;
	case VTPU_OP_MAXPOOL_GRAD:
		vtpu_window_range(&op->conv, step, e, end, true,
				  maxpool_grad_pixel);
		break;
	case VTPU_OP_AVGPOOL:
		vtpu_window_range(&op->conv, step, e, end, false,
				  avgpool_window);
		break;
	default:	/* VTPU_OP_AVGPOOL_GRAD */
		vtpu_window_range(&op->conv, step, e, end, true,
				  avgpool_grad_pixel);
	}
}
