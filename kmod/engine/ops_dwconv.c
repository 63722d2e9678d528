// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * DWCONV, DWCONV_DGRAD and DWCONV_WGRAD: the depthwise convolution over
 * NHWC images (struct vtpu_cmd_dwconv) and its gradients.
 *
 * Channels are innermost in NHWC, so every loop's inner loop runs along
 * them, contiguous in x, w and y alike (with a depth multiplier of 1;
 * otherwise each input channel serves mult neighbouring outputs).
 *
 * The forward and DGRAD tile their output by flat element ranges, each
 * element summing its taps in (ky, kx) order: at most
 * VTPU_DWCONV_MAX_WORK terms, so a tile of VTPU_OPS_CHUNK / taps elements
 * is bounded work. WGRAD reduces over every window: a tile owns one tap
 * and a block of channels of dw, and its steps walk the windows in order,
 * adding to dw as they go, so the order of the sums is the windows' order
 * whatever the tiling and the number of workers.
 */
#include "engine_internal.h"

/* Elements a tile keeps however short its windows: a vectorisable run. */
#define DW_MIN_CHUNK 256u
/* WGRAD: channels of dw per tile. */
#define DW_BLOCK 512u

void vtpu_dwconv_prepare(struct vtpu_engine_op *op,
			 const struct vtpu_cmd_hdr *cmd,
			 const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_dwconv *c = (const void *)cmd;
	struct vtpu_engine_dwconv *d = &op->dw;
	struct vtpu_engine_window *g = &d->win;
	u64 taps, work;

	vtpu_dwconv_decode(c, g, &d->rows);
	d->mult = c->mult;
	d->flags = c->flags;
	d->cm = (u64)g->c * c->mult;
	d->x = vtpu_operand_ptr(bufs, &c->x);
	d->w = vtpu_operand_ptr(bufs, &c->w);
	d->y = vtpu_operand_ptr(bufs, &c->y);
	d->bias = (c->flags & VTPU_CONV_BIAS) ?
			  vtpu_operand_ptr(bufs, &c->bias) : NULL;
	taps = (u64)g->kh * g->kw;
	op->flops = 2 * d->rows * d->cm * taps;
	switch (cmd->opcode) {
	case VTPU_OP_DWCONV:
		d->total = d->rows * d->cm;
		work = taps;
		break;
	case VTPU_OP_DWCONV_DGRAD:
		d->total = (u64)g->n * g->h * g->w * g->c;
		work = taps * c->mult;
		break;
	default:
		d->block = (u32)vtpu_min_u64(d->cm, DW_BLOCK);
		d->nblocks = (u32)((d->cm + d->block - 1) / d->block);
		d->wps = VTPU_OPS_CHUNK / d->block;
		op->ntiles = (u32)(taps * d->nblocks);
		op->nsteps = (u32)((d->rows + d->wps - 1) / d->wps);
		return;
	}
	d->chunk = VTPU_OPS_CHUNK / work;
	if (d->chunk < DW_MIN_CHUNK)
		d->chunk = DW_MIN_CHUNK;
	op->ntiles = (u32)((d->total + d->chunk - 1) / d->chunk);
}

/* y[o0, o0 + len) of window (n, oy, ox) */
static void dwconv_pixel(const struct vtpu_engine_dwconv *d, float *dst,
			 u64 n, u64 oy, u64 ox, u64 o0, u64 len)
{
	const struct vtpu_engine_window *g = &d->win;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0 = (s64)(ox * g->sw) - g->pw;
	u32 ky, kx, m0 = (u32)(o0 % d->mult), m;
	u64 i, ci, c0 = o0 / d->mult;

	for (i = 0; i < len; i++)
		dst[i] = 0.0f;
	for (ky = 0; ky < g->kh; ky++) {
		s64 iy = iy0 + ky;

		if (iy < 0 || iy >= g->h)
			continue;
		for (kx = 0; kx < g->kw; kx++) {
			s64 ix = ix0 + kx;
			const float *xp, *wp;

			if (ix < 0 || ix >= g->w)
				continue;
			xp = d->x + ((n * g->h + (u64)iy) * g->w + (u64)ix) *
					    g->c;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm + o0;
			if (d->mult == 1) {
				xp += o0;
				for (i = 0; i < len; i++)
					dst[i] += xp[i] * wp[i];
				continue;
			}
			for (i = 0, ci = c0, m = m0; i < len; i++) {
				dst[i] += xp[ci] * wp[i];
				if (++m == d->mult) {
					m = 0;
					ci++;
				}
			}
		}
	}
	if (d->bias)
		for (i = 0; i < len; i++)
			dst[i] += d->bias[o0 + i];
	if (d->flags & VTPU_CONV_RELU)
		for (i = 0; i < len; i++)
			dst[i] = dst[i] < 0.0f ? 0.0f : dst[i];
}

/* dx[c0, c0 + len) of pixel (n, iy, ix) */
static void dwconv_dgrad_pixel(const struct vtpu_engine_dwconv *d, float *dst,
			       u64 n, u64 iy, u64 ix, u64 c0, u64 len)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 ty = iy + g->ph, tx = ix + g->pw, oy, ox, i, o;
	u32 ky, kx, m;

	if (!(d->flags & VTPU_CONV_ACCUMULATE))
		for (i = 0; i < len; i++)
			dst[i] = 0.0f;
	for (ky = 0; ky < g->kh && ky <= ty; ky++) {
		if ((ty - ky) % g->sh)
			continue;
		oy = (ty - ky) / g->sh;
		if (oy >= g->oh)
			continue;
		for (kx = 0; kx < g->kw && kx <= tx; kx++) {
			const float *dyp, *wp;

			if ((tx - kx) % g->sw)
				continue;
			ox = (tx - kx) / g->sw;
			if (ox >= g->ow)
				continue;
			dyp = d->y + ((n * g->oh + oy) * g->ow + ox) * d->cm;
			wp = d->w + ((u64)ky * g->kw + kx) * d->cm;
			if (d->mult == 1) {
				dyp += c0;
				wp += c0;
				for (i = 0; i < len; i++)
					dst[i] += dyp[i] * wp[i];
				continue;
			}
			for (i = 0; i < len; i++) {
				o = (c0 + i) * d->mult;
				for (m = 0; m < d->mult; m++)
					dst[i] += dyp[o + m] * wp[o + m];
			}
		}
	}
}

/* Output elements [e, end) of the forward or of DGRAD. */
static void dwconv_range(const struct vtpu_engine_dwconv *d, bool dgrad,
			 u64 e, u64 end)
{
	const struct vtpu_engine_window *g = &d->win;
	u64 per = dgrad ? g->c : d->cm;
	u64 c0 = e % per, x, y, n, len;

	if (dgrad)
		vtpu_xy_of(e / per, g->w, g->h, &x, &y, &n);
	else
		vtpu_xy_of(e / per, g->ow, g->oh, &x, &y, &n);
	while (e < end) {
		len = vtpu_min_u64(per - c0, end - e);
		if (dgrad) {
			dwconv_dgrad_pixel(d, d->x + e, n, y, x, c0, len);
			vtpu_next_xy(&x, &y, &n, g->w, g->h);
		} else {
			dwconv_pixel(d, d->y + e, n, y, x, c0, len);
			vtpu_next_xy(&x, &y, &n, g->ow, g->oh);
		}
		e += len;
		c0 = 0;
	}
}

/* dw of one tap, channels [o0, o0 + len), windows [r, r_end) in order */
static void dwconv_wgrad(const struct vtpu_engine_dwconv *d, u32 tap,
			 u64 o0, u64 len, u64 r, u64 r_end, bool first)
{
	const struct vtpu_engine_window *g = &d->win;
	u32 ky = tap / g->kw, kx = tap % g->kw, m, m0 = (u32)(o0 % d->mult);
	float *dst = d->w + (u64)tap * d->cm + o0;
	u64 ox, oy, n, i, ci, c0 = o0 / d->mult;

	if (first && !(d->flags & VTPU_CONV_ACCUMULATE))
		for (i = 0; i < len; i++)
			dst[i] = 0.0f;
	vtpu_xy_of(r, g->ow, g->oh, &ox, &oy, &n);
	for (; r < r_end; r++, vtpu_next_xy(&ox, &oy, &n, g->ow, g->oh)) {
		s64 iy = (s64)(oy * g->sh + ky) - g->ph;
		s64 ix = (s64)(ox * g->sw + kx) - g->pw;
		const float *xp, *dyp;

		if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
			continue;
		xp = d->x + ((n * g->h + (u64)iy) * g->w + (u64)ix) * g->c;
		dyp = d->y + r * d->cm + o0;
		if (d->mult == 1) {
			xp += o0;
			for (i = 0; i < len; i++)
				dst[i] += xp[i] * dyp[i];
			continue;
		}
		for (i = 0, ci = c0, m = m0; i < len; i++) {
			dst[i] += xp[ci] * dyp[i];
			if (++m == d->mult) {
				m = 0;
				ci++;
			}
		}
	}
}

void vtpu_dwconv_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	const struct vtpu_engine_dwconv *d = &op->dw;
	u64 e, end, o0, r;

	if (op->opcode == VTPU_OP_DWCONV_WGRAD) {
		o0 = (u64)(tile % d->nblocks) * d->block;
		r = (u64)step * d->wps;
		dwconv_wgrad(d, tile / d->nblocks, o0,
			     vtpu_min_u64(d->block, d->cm - o0), r,
			     vtpu_min_u64(r + d->wps, d->rows), !step);
		return;
	}
	e = (u64)tile * d->chunk;
	end = vtpu_min_u64(e + d->chunk, d->total);
	dwconv_range(d, op->opcode == VTPU_OP_DWCONV_DGRAD, e, end);
}

int vtpu_dwconv_describe(const struct vtpu_engine_op *op, char *buf,
			 size_t len)
{
	const struct vtpu_engine_window *w = &op->dw.win;

	return snprintf(buf, len, "%ux%ux%ux%u k%ux%u s%u m%u", w->n, w->h,
			w->w, w->c, w->kh, w->kw, w->sh, op->dw.mult);
}
