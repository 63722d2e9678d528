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

static void pool_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_window *g = &op->conv.win;

	if (op->opcode == VTPU_OP_MAXPOOL) {
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
	pool_tile(op);
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
	s64 y0 = (s64)(oy * g->sh) - g->ph, x0 = (s64)(ox * g->sw) - g->pw;
	s64 ky0 = y0 < 0 ? -y0 : 0, kx0 = x0 < 0 ? -x0 : 0;
	s64 ky1 = y0 + g->kh > g->h ? g->h - y0 : g->kh;
	s64 kx1 = x0 + g->kw > g->w ? g->w - x0 : g->kw;
	float *y = cv->y + out;
	u32 *idx = cv->index + out;
	bool first = (u64)ky0 * g->kw + (u64)kx0 >=
		     r->r0 * g->kw + r->c0;
	s64 ky, kx, kx_lo, kx_hi;
	u64 i;

	/* pad < k: the window always holds a pixel */
	for (ky = ky0 > (s64)r->r0 ? ky0 : (s64)r->r0;
	     ky < ky1 && ky <= (s64)r->r1; ky++) {
		kx_lo = ky == (s64)r->r0 && (s64)r->c0 > kx0 ? (s64)r->c0 : kx0;
		kx_hi = ky == (s64)r->r1 && (s64)r->c1 < kx1 ? (s64)r->c1 : kx1;
		for (kx = kx_lo; kx < kx_hi; kx++) {
			u64 pix = (u64)(y0 + ky) * g->w + (u64)(x0 + kx);
			const float *src = cv->x +
				(n * g->h * g->w + pix) * g->c + c0;
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
}

static void maxpool_range(const struct vtpu_engine_conv *cv, u32 step,
			  u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 c0 = e % g->c, ox, oy, n;
	struct vtpu_tap_range r;

	vtpu_tap_range(g, step, (u64)g->kh * g->kw, g->kw, &r);
	vtpu_xy_of(e / g->c, g->ow, g->oh, &ox, &oy, &n);

	while (e < end) {
		u64 len = vtpu_min_u64(g->c - c0, end - e);

		maxpool_window(cv, &r, e, n, oy, ox, c0, len);
		e += len;
		c0 = 0;
		vtpu_next_xy(&ox, &oy, &n, g->ow, g->oh);
	}
}

/* dx [0..len) of pixel (n, iy, ix), channels c0.., over the taps of @r */
static void maxpool_grad_pixel(const struct vtpu_engine_conv *cv,
			       const struct vtpu_tap_range *r, u64 e,
			       u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	u32 ky0 = vtpu_first_tap(iy, g->ph, g->sh, g->kh, g->oh);
	u32 kx0 = vtpu_first_tap(ix, g->pw, g->sw, g->kw, g->ow);
	u32 p = (u32)(iy * g->w + ix);
	float *dx = cv->x + e;
	u64 ky, kx, ty, tx, tx_hi;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(dx, 0, len * 4);
	for (ty = r->r0, ky = ky0 + ty * g->sh;
	     ky < g->kh && ky <= iy + g->ph && ty <= r->r1;
	     ty++, ky += g->sh) {
		u64 oy = (iy + g->ph - ky) / g->sh;

		tx = ty == r->r0 ? r->c0 : 0;
		tx_hi = ty == r->r1 ? r->c1 : ~0ull;
		for (kx = kx0 + tx * g->sw;
		     kx < g->kw && kx <= ix + g->pw && tx < tx_hi;
		     tx++, kx += g->sw) {
			u64 ox = (ix + g->pw - kx) / g->sw;
			u64 o = ((n * g->oh + oy) * g->ow + ox) * g->c + c0;
			const float *dy = cv->y + o;
			const u32 *idx = cv->index + o;

			/* dy loaded unconditionally: the select vectorises */
			for (i = 0; i < len; i++) {
				float v = dy[i];

				dx[i] += idx[i] == p ? v : 0.0f;
			}
		}
	}
}

static void maxpool_grad_range(const struct vtpu_engine_conv *cv, u32 step,
			       u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 ntx = vtpu_taps(g->kw, g->sw);
	u64 c0 = e % g->c, ix, iy, n;
	struct vtpu_tap_range r;

	vtpu_tap_range(g, step, vtpu_taps(g->kh, g->sh) * ntx, ntx, &r);
	vtpu_xy_of(e / g->c, g->w, g->h, &ix, &iy, &n);

	while (e < end) {
		u64 len = vtpu_min_u64(g->c - c0, end - e);

		maxpool_grad_pixel(cv, &r, e, n, iy, ix, c0, len);
		e += len;
		c0 = 0;
		vtpu_next_xy(&ix, &iy, &n, g->w, g->h);
	}
}

void vtpu_pool_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_window *g = &op->conv.win;
	u64 e = (u64)tile * g->chunk;
	u64 end = vtpu_min_u64(e + g->chunk, g->total);

	if (op->opcode == VTPU_OP_MAXPOOL)
		maxpool_range(&op->conv, step, e, end);
	else
		maxpool_grad_range(&op->conv, step, e, end);
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
	if (op->opcode == VTPU_OP_AVGPOOL) {
		g->total = (u64)g->n * g->oh * g->ow * g->c;
		vtpu_window_tile(op, (u64)g->kh * g->kw);
	} else {
		g->total = (u64)g->n * g->h * g->w * g->c;
		vtpu_window_tile(op, vtpu_taps(g->kh, g->sh) *
				     vtpu_taps(g->kw, g->sw));
	}
	op->flops = (u64)g->n * g->oh * g->ow * g->c * g->kh * g->kw;
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
	s64 y0 = (s64)(oy * g->sh) - g->ph, x0 = (s64)(ox * g->sw) - g->pw;
	s64 ky0 = y0 < 0 ? -y0 : 0, kx0 = x0 < 0 ? -x0 : 0;
	s64 ky1 = y0 + g->kh > g->h ? g->h - y0 : g->kh;
	s64 kx1 = x0 + g->kw > g->w ? g->w - x0 : g->kw;
	float *y = cv->y + out;
	s64 ky, kx, kx_lo, kx_hi;
	float cnt;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(y, 0, len * 4);
	for (ky = ky0 > (s64)r->r0 ? ky0 : (s64)r->r0;
	     ky < ky1 && ky <= (s64)r->r1; ky++) {
		kx_lo = ky == (s64)r->r0 && (s64)r->c0 > kx0 ? (s64)r->c0 : kx0;
		kx_hi = ky == (s64)r->r1 && (s64)r->c1 < kx1 ? (s64)r->c1 : kx1;
		for (kx = kx_lo; kx < kx_hi; kx++) {
			u64 pix = (u64)(y0 + ky) * g->w + (u64)(x0 + kx);
			const float *src = cv->x +
				(n * g->h * g->w + pix) * g->c + c0;

			for (i = 0; i < len; i++)
				y[i] += src[i];
		}
	}
	if (r->r1 + 1 == g->kh && r->c1 == g->kw) {
		/* pad < k and the last window starts inside: cnt >= 1 */
		cnt = (float)(avg_extent(oy, g->sh, g->ph, g->kh, g->h) *
			      avg_extent(ox, g->sw, g->pw, g->kw, g->w));
		for (i = 0; i < len; i++)
			y[i] /= cnt;
	}
}

static void avgpool_range(const struct vtpu_engine_conv *cv, u32 step,
			  u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 c0 = e % g->c, ox, oy, n;
	struct vtpu_tap_range r;

	vtpu_tap_range(g, step, (u64)g->kh * g->kw, g->kw, &r);
	vtpu_xy_of(e / g->c, g->ow, g->oh, &ox, &oy, &n);

	while (e < end) {
		u64 len = vtpu_min_u64(g->c - c0, end - e);

		avgpool_window(cv, &r, e, n, oy, ox, c0, len);
		e += len;
		c0 = 0;
		vtpu_next_xy(&ox, &oy, &n, g->ow, g->oh);
	}
}

/* dx [0..len) of pixel (n, iy, ix), channels c0.., over the taps of @r */
static void avgpool_grad_pixel(const struct vtpu_engine_conv *cv,
			       const struct vtpu_tap_range *r, u64 e,
			       u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	u32 ky0 = vtpu_first_tap(iy, g->ph, g->sh, g->kh, g->oh);
	u32 kx0 = vtpu_first_tap(ix, g->pw, g->sw, g->kw, g->ow);
	float *dx = cv->x + e;
	u64 ky, kx, ty, tx, tx_hi;
	float cnt;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(dx, 0, len * 4);
	for (ty = r->r0, ky = ky0 + ty * g->sh;
	     ky < g->kh && ky <= iy + g->ph && ty <= r->r1;
	     ty++, ky += g->sh) {
		u64 oy = (iy + g->ph - ky) / g->sh;
		u64 rows = avg_extent(oy, g->sh, g->ph, g->kh, g->h);

		tx = ty == r->r0 ? r->c0 : 0;
		tx_hi = ty == r->r1 ? r->c1 : ~0ull;
		for (kx = kx0 + tx * g->sw;
		     kx < g->kw && kx <= ix + g->pw && tx < tx_hi;
		     tx++, kx += g->sw) {
			u64 ox = (ix + g->pw - kx) / g->sw;
			u64 o = ((n * g->oh + oy) * g->ow + ox) * g->c + c0;
			const float *dy = cv->y + o;

			cnt = (float)(rows * avg_extent(ox, g->sw, g->pw,
							 g->kw, g->w));
			for (i = 0; i < len; i++)
				dx[i] += dy[i] / cnt;
		}
	}
}

static void avgpool_grad_range(const struct vtpu_engine_conv *cv, u32 step,
			       u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 ntx = vtpu_taps(g->kw, g->sw);
	u64 c0 = e % g->c, ix, iy, n;
	struct vtpu_tap_range r;

	vtpu_tap_range(g, step, vtpu_taps(g->kh, g->sh) * ntx, ntx, &r);
	vtpu_xy_of(e / g->c, g->w, g->h, &ix, &iy, &n);

	while (e < end) {
		u64 len = vtpu_min_u64(g->c - c0, end - e);

		avgpool_grad_pixel(cv, &r, e, n, iy, ix, c0, len);
		e += len;
		c0 = 0;
		vtpu_next_xy(&ix, &iy, &n, g->w, g->h);
	}
}

void vtpu_avgpool_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		      void *scratch)
{
	const struct vtpu_engine_window *g = &op->conv.win;
	u64 e = (u64)tile * g->chunk;
	u64 end = vtpu_min_u64(e + g->chunk, g->total);

	if (op->opcode == VTPU_OP_AVGPOOL)
		avgpool_range(&op->conv, step, e, end);
	else
		avgpool_grad_range(&op->conv, step, e, end);
}
