// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * IM2COL and COL2IM over NHWC images (struct vtpu_cmd_im2col).
 *
 * Both tile their output by flat element ranges of VTPU_OPS_CHUNK-ish
 * elements, so every tile writes a disjoint range and no element is
 * written twice. IM2COL copies runs: for one window row (output row r,
 * kernel row ky) the kw * c columns are kw contiguous pixels of the image,
 * so a run is one memcpy bracketed by zeros where the window hangs over the
 * edge. COL2IM is a gather: each image element sums the columns that read
 * it, in (ky, kx) order, so the result does not depend on the tiling.
 */
#include "engine_internal.h"

static void im2col_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_window *g = &op->conv.win;
	u64 rows = (u64)g->n * g->oh * g->ow;

	if (op->opcode == VTPU_OP_IM2COL) {
		g->total = rows * g->kdim;
		g->chunk = VTPU_OPS_CHUNK;
		op->flops = 0;
		g->span = 1;
		op->ntiles = (u32)((g->total + g->chunk - 1) / g->chunk);
	} else {
		g->total = (u64)g->n * g->h * g->w * g->c;
		vtpu_window_tile(op, vtpu_taps(g->kh, g->sh, g->oh) *
				     vtpu_taps(g->kw, g->sw, g->ow));
		op->flops = rows * g->kdim;
	}
}

void vtpu_im2col_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
			 const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_im2col *ic = (const void *)cmd;

	vtpu_window_decode(&ic->win, &op->conv.win);
	op->conv.image = vtpu_operand_ptr(bufs, &ic->image);
	op->conv.cols = vtpu_operand_ptr(bufs, &ic->cols);
	im2col_tile(op);
}

/* Runs of at most this many floats are copied by a loop, not memcpy(). */
#define IM2COL_SHORT_RUN 16u

static void im2col_run(float *dst, const float *src, u64 len)
{
	u64 k;

	if (len <= IM2COL_SHORT_RUN) {
		for (k = 0; k < len; k++)
			dst[k] = src[k];
	} else {
		memcpy(dst, src, len * 4);
	}
}

static void im2col_zero(float *dst, u64 len)
{
	u64 k;

	if (len <= IM2COL_SHORT_RUN) {
		for (k = 0; k < len; k++)
			dst[k] = 0.0f;
	} else {
		memset(dst, 0, len * 4);
	}
}

/*
 * One whole row of the columns, window (n, oy, ox): kh runs of kw * c,
 * each a row of the image's pixels, or zeros where the window hangs over
 * the edge.
 */
static void im2col_row(const struct vtpu_engine_conv *cv, float *dst, u64 n,
		       u64 oy, u64 ox)
{
	const struct vtpu_engine_window *g = &cv->win;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0 = (s64)(ox * g->sw) - g->pw;
	u64 run = (u64)g->kw * g->c;
	bool inside = ix0 >= 0 && ix0 + g->kw <= g->w;
	u32 ky, kx;

	if (inside && iy0 >= 0 && iy0 + g->kh <= g->h) {
		/* all of the window is in the image: kh runs, a row apart */
		const float *src = cv->image +
			((n * g->h + (u64)iy0) * g->w + (u64)ix0) * g->c;
		u64 stride = (u64)g->w * g->c;

		for (ky = 0; ky < g->kh; ky++, src += stride, dst += run)
			im2col_run(dst, src, run);
		return;
	}
	for (ky = 0; ky < g->kh; ky++, dst += run) {
		s64 iy = iy0 + ky;
		const float *src;

		if (iy < 0 || iy >= g->h) {
			im2col_zero(dst, run);
			continue;
		}
		src = cv->image + ((n * g->h + (u64)iy) * g->w) * g->c;
		if (inside) {
			im2col_run(dst, src + (u64)ix0 * g->c, run);
			continue;
		}
		for (kx = 0; kx < g->kw; kx++) {
			s64 ix = ix0 + kx;

			if (ix < 0 || ix >= g->w)
				im2col_zero(dst + (u64)kx * g->c, g->c);
			else
				im2col_run(dst + (u64)kx * g->c,
					   src + (u64)ix * g->c, g->c);
		}
	}
}

/*
 * @len columns of im2col row (n, oy, ox) from column (ky, q) on: q
 * indexes a run of kw * c columns, one image row's pixels ix = ox * sw -
 * pw + q / c of row iy = oy * sh - ph + ky, with zeros where the window
 * hangs over the edge. The columns must stay in the row (ky * kw * c + q
 * + len <= kdim). IM2COL's partial rows and the convolution GEMMs'
 * packs (CONV, CONV_DGRAD, CONV_WGRAD gather the columns they pack,
 * which are never stored) use it; those know (ky, q) and step (n, oy,
 * ox) themselves, so that no call divides.
 */
void vtpu_im2col_cols(const struct vtpu_engine_window *g, const float *image,
		      u64 n, u64 oy, u64 ox, u32 ky, u64 q, u64 len,
		      float *dst)
{
	u64 run = (u64)g->kw * g->c;
	s64 ix0 = (s64)(ox * g->sw) - g->pw;
	u64 lo0 = ix0 < 0 ? (u64)-ix0 * g->c : 0;
	u64 hi0 = ix0 + g->kw > g->w ? (u64)(g->w - ix0) * g->c : run;

	while (len) {
		s64 iy = (s64)(oy * g->sh + ky) - g->ph;
		u64 q_end = vtpu_min_u64(run, q + len);
		u64 lo = lo0, hi = hi0;	/* the run's columns in the image */

		/* dst[0] is column q of this run */
		if (iy < 0 || iy >= g->h)
			lo = hi = q_end;
		if (q < lo)
			im2col_zero(dst, vtpu_min_u64(lo, q_end) - q);
		if (q_end > lo && hi > q) {
			u64 a = q > lo ? q : lo, b = vtpu_min_u64(hi, q_end);
			const float *src = image +
				((n * g->h + (u64)iy) * g->w) * g->c +
				(u64)(ix0 * (s64)g->c + (s64)a);

			im2col_run(dst + (a - q), src, b - a);
		}
		if (q_end > hi) {
			u64 a = q > hi ? q : hi;

			im2col_zero(dst + (a - q), q_end - a);
		}
		dst += q_end - q;
		len -= q_end - q;
		q = 0;
		ky++;
	}
}

/* IM2COL elements [e, end) of one partial row. */
static void im2col_part(const struct vtpu_engine_conv *cv, u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 run = (u64)g->kw * g->c, col = e % g->kdim, ox, oy, n;

	vtpu_xy_of(e / g->kdim, g->ow, g->oh, &ox, &oy, &n);
	vtpu_im2col_cols(g, cv->image, n, oy, ox, (u32)(col / run), col % run,
			 end - e, cv->cols + e);
}

/* IM2COL elements [e, end): partial rows at either end, whole rows between. */
static void im2col_range(const struct vtpu_engine_conv *cv, u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 row = e / g->kdim, first_end, last;
	u64 ox, oy, n;

	if (e % g->kdim) {
		first_end = vtpu_min_u64(end, (row + 1) * g->kdim);
		im2col_part(cv, e, first_end);
		e = first_end;
		row++;
	}
	last = end / g->kdim;	/* rows [row, last) are whole */
	vtpu_xy_of(row, g->ow, g->oh, &ox, &oy, &n);
	for (; row < last; row++, e += g->kdim) {
		im2col_row(cv, cv->cols + e, n, oy, ox);
		vtpu_next_xy(&ox, &oy, &n, g->ow, g->oh);
	}
	if (e < end)
		im2col_part(cv, e, end);
}

/*
 * image[e..e + len) = sum over the windows covering pixel (n, iy, ix),
 * channels c0.., of the taps of @r: the first step starts the sums at 0,
 * the later ones add to them, in the order one pass would.
 */
static void col2im_pixel(const struct vtpu_engine_conv *cv,
			 const struct vtpu_tap_range *r, u64 e,
			 u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &cv->win;
	struct vtpu_cover_walk t;
	float *dst = cv->image + e;
	u64 i;

	if (!r->r0 && !r->c0)
		memset(dst, 0, len * 4);
	vtpu_cover_start(&t, g, r, iy, ix);
	while (vtpu_cover_next(&t)) {
		const float *src = cv->cols +
			((n * g->oh + t.oy) * g->ow + t.ox) * g->kdim +
			(t.ky * g->kw + t.kx) * g->c + c0;

		for (i = 0; i < len; i++)
			dst[i] += src[i];
	}
}

void vtpu_im2col_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	const struct vtpu_engine_window *g = &op->conv.win;
	u64 e = (u64)tile * g->chunk;
	u64 end = vtpu_min_u64(e + g->chunk, g->total);

	if (op->opcode == VTPU_OP_IM2COL)
		im2col_range(&op->conv, e, end);
	else
		vtpu_window_range(&op->conv, step, e, end, true,
				  col2im_pixel);
}

int vtpu_window_describe(const struct vtpu_engine_op *op, char *buf,
			 size_t len)
{
	const struct vtpu_engine_window *w = &op->conv.win;

	return snprintf(buf, len, "%ux%ux%ux%u k%ux%u", w->n, w->h, w->w,
			w->c, w->kh, w->kw);
}
