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
 * every window: the windows split into groups of consecutive ones (a
 * count from the shape only), and a tile owns one group and a block of
 * channels of dw, every tap of them (one pass over x and dy, not one a
 * tap); its steps walk the group's windows in order, the sums in
 * scratch. The first group sums into dw, the others into the op's
 * workspace, and a second phase adds those to dw in group order: each
 * element of dw is the same sum whatever the block, the tiling and the
 * number of workers.
 */
#include "engine_internal.h"

/* Elements a tile keeps however short its windows: a vectorisable run. */
#define DW_MIN_CHUNK 256u
/*
 * WGRAD: the workers' tiles come from groups of windows: as many as the
 * workspace holds the sums of (the first group's go to dw), at most
 * DW_WG_GROUPS, at least DW_WG_GROUP_ROWS windows each. A tile's block
 * of channels is at most DW_WG_BLOCK, two AVX-512 vectors: one walk of a
 * step's windows (dw_wg3_wide()), long enough for its prefetches to pay
 * (a block of 128 channels walked each step's 56 windows four times, and
 * ran 1.1-1.2x slower than blocks of 32 or 64). While the op has fewer
 * than DW_WG_TILES tiles, its blocks halve, down to DW_WG_MIN (a cache
 * line); the tile's sums, taps x block floats, stay in scratch (and L1),
 * at most DW_WG_ACC. Before the groups, the channels alone split the
 * work, in blocks of 16 for 64 channels, each tile reading one cache line
 * of every pixel of x and dy: 1.13-1.24x slower on two threads (64
 * images of 32 x 32 x 32 to 8 x 8 x 256). Functions of the shape only.
 */
#define DW_WG_BLOCK 32u
#define DW_WG_MIN 16u
#define DW_WG_TILES 4u
#define DW_WG_ACC 4096u
#define DW_WG_GROUPS 8u
#define DW_WG_GROUP_ROWS 256u

size_t vtpu_dwconv_scratch_size(void)
{
	return DW_WG_ACC * sizeof(float);
}

/* WGRAD's tiles: DW_WG_BLOCK's comment above */
static void vtpu_dwconv_prepare_wgrad(struct vtpu_engine_op *op, u64 taps)
{
	struct vtpu_engine_dwconv *d = &op->dw;
	u64 groups = 1 + VTPU_ENGINE_WORK_BYTES / sizeof(float) /
			     (taps * d->cm);

	groups = vtpu_min_u64(groups, DW_WG_GROUPS);
	groups = vtpu_min_u64(groups, d->rows / DW_WG_GROUP_ROWS);
	if (!groups)
		groups = 1;
	d->grows = (d->rows + groups - 1) / groups;
	d->groups = (u32)((d->rows + d->grows - 1) / d->grows); /* none empty */
	d->block = (u32)vtpu_min_u64(d->cm, DW_WG_BLOCK);
	if (d->block > DW_WG_ACC / taps)
		d->block = (u32)(DW_WG_ACC / taps);
	while (d->block / 2 >= DW_WG_MIN &&
	       d->groups * ((d->cm + d->block - 1) / d->block) < DW_WG_TILES)
		d->block /= 2;
	d->nblocks = (u32)((d->cm + d->block - 1) / d->block);
	d->wps = VTPU_OPS_CHUNK / (taps * d->block);
	if (!d->wps)
		d->wps = 1;
	op->ntiles = d->groups * d->nblocks;
	op->nsteps = (u32)((d->grows + d->wps - 1) / d->wps);
	if (d->groups > 1) {
		op->nphases = 2;
		op->phase_end[0] = op->ntiles;
		op->ntiles += d->nblocks;
		op->phase_end[1] = op->ntiles;
	}
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
		vtpu_dwconv_prepare_wgrad(op, taps);
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
	void (*wgrad)(const struct vtpu_engine_dwconv *d, float *acc,
		      float *dw, u64 o0, u64 len, u64 r, u64 r_end, bool zero);
} dw_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_dwconv_range_scalar,
			       vtpu_dwconv_wgrad_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_dwconv_range_avx2, vtpu_dwconv_wgrad_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_dwconv_range_avx512,
			       vtpu_dwconv_wgrad_avx512 },
};

/*
 * WGRAD's tile: group g's windows into dw (g = 0) or into the workspace,
 * taps x cm floats a group past the first; in the second phase, the
 * groups' sums added to dw in group order.
 */
static void dwconv_wgrad_run(const struct vtpu_engine_op *op, u32 tile,
			     u32 step, void *scratch)
{
	const struct vtpu_engine_dwconv *d = &op->dw;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 taps = (u64)d->win.kh * d->win.kw, per = taps * d->cm;
	float *work = vtpu_op_work(op), *dw = d->w;
	u64 o0, len, r, end, i, t;
	u32 g;

	if (op->nphases > 1 && tile >= op->phase_end[0]) {
		o0 = (u64)(tile - op->phase_end[0]) * d->block;
		len = vtpu_min_u64(d->block, d->cm - o0);
		if (step)
			return;
		for (g = 1; g < d->groups; g++)
			for (t = 0; t < taps; t++) {
				float *dst = d->w + t * d->cm + o0;
				const float *src = work + (g - 1) * per +
						   t * d->cm + o0;

				for (i = 0; i < len; i++)
					dst[i] += src[i];
			}
		return;
	}
	g = tile / d->nblocks;
	o0 = (u64)(tile % d->nblocks) * d->block;
	r = (u64)g * d->grows;
	end = vtpu_min_u64(r + d->grows, d->rows);
	r += (u64)step * d->wps;
	if (r >= end)
		return;	/* a short last group's idle step */
	if (g)
		dw = work + (g - 1) * per;
	dw_levels[simd].wgrad(d, scratch, dw, o0,
			      vtpu_min_u64(d->block, d->cm - o0), r,
			      vtpu_min_u64(r + d->wps, end),
			      !step && (g || !(d->flags & VTPU_CONV_ACCUMULATE)));
}

void vtpu_dwconv_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch)
{
	const struct vtpu_engine_dwconv *d = &op->dw;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 e, end;

	if (op->opcode == VTPU_OP_DWCONV_WGRAD) {
		dwconv_wgrad_run(op, tile, step, scratch);
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

	return snprintf(buf, len, "%ux%ux%ux%u k%ux%u s%u m%u%s", w->n, w->h,
			w->w, w->c, w->kh, w->kw, w->sh, op->dw.mult,
			op->opcode == VTPU_OP_DWCONV_WGRAD &&
					op->dw.groups > 1 ? " grouped" : "");
}
