// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * DWCONV, DWCONV_DGRAD and DWCONV_WGRAD: the depthwise convolution over
 * NHWC images (struct vtpu_cmd_dwconv) and its gradients.
 *
 * Channels are innermost in NHWC, so every loop's inner loop runs along
 * them, contiguous in x, w and y alike (with a depth multiplier of 1;
 * otherwise each input channel serves mult neighbouring outputs).
 *
 * The forward and DGRAD tile their output by flat element ranges (of
 * whole pixels where a tile holds one), each element summing its taps in
 * (ky, kx) order: at most VTPU_DWCONV_MAX_WORK terms, so a tile of at
 * most VTPU_OPS_CHUNK / taps elements is bounded work. WGRAD reduces over
 * every window: a tile owns a block of channels of dw, every tap of them
 * (one pass over x and dy, not one a tap), and its steps walk the windows
 * in order, the sums in scratch, so each element of dw adds its windows
 * in their order whatever the block, the tiling and the number of
 * workers.
 */
#include "engine_internal.h"

/* Elements a tile keeps however short its windows: a vectorisable run. */
#define DW_MIN_CHUNK 256u
/*
 * WGRAD: channels of dw per tile, at most DW_WG_BLOCK, halved down to
 * DW_WG_MIN (a cache line of x and dy) while there are fewer than
 * DW_WG_TILES tiles, and at most DW_WG_ACC / taps: the tile's sums, taps
 * x block floats, stay in scratch (and L1). A function of the shape only.
 */
#define DW_WG_BLOCK 64u
#define DW_WG_MIN 16u
#define DW_WG_TILES 4u
#define DW_WG_ACC 4096u

size_t vtpu_dwconv_scratch_size(void)
{
	return DW_WG_ACC * sizeof(float);
}

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
		d->per = d->cm;
		d->total = d->rows * d->per;
		work = taps;
		break;
	case VTPU_OP_DWCONV_DGRAD:
		d->per = g->c;
		d->total = (u64)g->n * g->h * g->w * d->per;
		work = taps * c->mult;
		break;
	default:
		d->block = (u32)vtpu_min_u64(d->cm, DW_WG_BLOCK);
		while (d->block / 2 >= DW_WG_MIN &&
		       (d->cm + d->block - 1) / d->block < DW_WG_TILES)
			d->block /= 2;
		if (d->block > DW_WG_ACC / taps)
			d->block = (u32)(DW_WG_ACC / taps);
		d->nblocks = (u32)((d->cm + d->block - 1) / d->block);
		d->wps = VTPU_OPS_CHUNK / (taps * d->block);
		if (!d->wps)
			d->wps = 1;
		op->ntiles = d->nblocks;
		op->nsteps = (u32)((d->rows + d->wps - 1) / d->wps);
		return;
	}
	d->chunk = VTPU_OPS_CHUNK / work;
	if (d->chunk < DW_MIN_CHUNK)
		d->chunk = DW_MIN_CHUNK;
	/*
	 * Whole pixels (every channel of one), where a tile holds one: a
	 * tile that starts or ends inside a pixel computes that pixel's
	 * channels on the loops of any shape, element by element (the runs
	 * go by whole pixels), which cost 3-14% of a DWCONV or DWCONV_DGRAD
	 * (64 images of 8x8 to 32x32, 32 to 256 channels; about 7300
	 * elements a tile). The bits do not change: every path adds an
	 * element's terms in the same order.
	 */
	if (d->chunk >= d->per)
		d->chunk -= d->chunk % d->per;
	op->ntiles = (u32)((d->total + d->chunk - 1) / d->chunk);
}

/*
 * The loops at this file's width (the baseline); the AVX2 and AVX-512
 * builds of the same loops are in ops_nhwc_*.c, and all give the same
 * bits (dw_tmpl.h).
 */
#define DW_SFX scalar
#include "dw_tmpl.h"

static const struct {
	void (*range)(const struct vtpu_engine_dwconv *d, bool dgrad, u64 e,
		      u64 end);
	void (*wgrad)(const struct vtpu_engine_dwconv *d, float *acc, u64 o0,
		      u64 len, u64 r, u64 r_end, bool first);
} dw_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_dwconv_range_scalar,
			       vtpu_dwconv_wgrad_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_dwconv_range_avx2, vtpu_dwconv_wgrad_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_dwconv_range_avx512,
			       vtpu_dwconv_wgrad_avx512 },
};

void vtpu_dwconv_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	const struct vtpu_engine_dwconv *d = &op->dw;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 e, end, o0, r;

	if (op->opcode == VTPU_OP_DWCONV_WGRAD) {
		o0 = (u64)tile * d->block;
		r = (u64)step * d->wps;
		dw_levels[simd].wgrad(d, scratch, o0,
				      vtpu_min_u64(d->block, d->cm - o0), r,
				      vtpu_min_u64(r + d->wps, d->rows),
				      !step);
		return;
	}
	e = (u64)tile * d->chunk;
	end = vtpu_min_u64(e + d->chunk, d->total);
	dw_levels[simd].range(d, op->opcode == VTPU_OP_DWCONV_DGRAD, e, end);
}

int vtpu_dwconv_describe(const struct vtpu_engine_op *op, char *buf,
			 size_t len)
{
	const struct vtpu_engine_window *w = &op->dw.win;

	return snprintf(buf, len, "%ux%ux%ux%u k%ux%u s%u m%u", w->n, w->h,
			w->w, w->c, w->kh, w->kw, w->sh, op->dw.mult);
}
