// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * CONV_POOL and CONV_POOL_WGRAD (struct vtpu_cmd_conv_pool): a direct
 * convolution with its max-pool, for a network's first convolution, whose
 * few input channels make IM2COL + GEMM a poor fit (K = kh * kw * c is 9
 * for one channel) and whose output, the largest tensor of the step, would
 * be written out only to be pooled.
 *
 * CONV_POOL tiles the pooled pixels: each tile computes every output
 * channel of its pixels, each pixel's window of conv pixels in registers.
 * CONV_POOL_WGRAD tiles the output channels, CP_OB at a time (two blocks
 * on AVX-512), so that a tile owns its columns of dw and dbias; its steps
 * walk the pooled pixels in order, so every sum has one order whatever
 * the worker count or tiling. With fewer channel tiles than workers (a
 * LeNet's 6 filters are one tile), the fast path's tiles split the taps
 * (rows of dw) as well, which changes no sum either. The routes CONV_POOL leaves for it are one
 * byte per output: the window position that won, or VTPU_CONV_NO_ROUTE.
 *
 * This file is the dispatcher and the portable level; convpool_tmpl.h
 * holds the kernels.
 */
#define CP_SFX scalar
#define CP_VBYTES 16 /* SSE2, the x86-64 baseline */
#include "convpool_tmpl.h"
#include "gemm.h"

/*
 * The kernels' pad (a partial block's weights, or its rows of dw) lives
 * in the scratch's gather area, which no op keeps anything in between
 * calls (the GEMM's packed B, which its memo keeps, is before it).
 */
_Static_assert(VTPU_CONVPOOL_PAD_FLOATS >= (CP_KC + 2) * CP_OB &&
	       VTPU_CONVPOOL_PAD_FLOATS <= VTPU_GEMM_GATHER_FLOATS,
	       "CONV_POOL's pad fits the gather area");

/* Taps per CONV_POOL_WGRAD tile, at least, when tiles split them. */
#define CP_ROWS_MIN 4u

/* Multiply-adds per tile or step: ~1 ms of work on one core or less. */
#define CP_BUDGET (1u << 20)
/* Keep tile and step counts far below 2^32. */
#define CP_MAX_PIECES (1u << 24)

static void convpool_tile(struct vtpu_engine_op *op)
{
	struct vtpu_engine_convpool *cp = &op->convpool;
	u64 per_px = (u64)cp->pkh * cp->pkw * cp->win.kdim * cp->oc;
	u64 pieces;

	cp->pixels = (u64)cp->win.n * cp->ph * cp->pw;
	/*
	 * A gradient tile owns tile_oc channels: one block, or two where the
	 * registers hold both (AVX-512), halving the per-pixel overhead.
	 */
	cp->tile_oc = op->simd == VTPU_SIMD_AVX512 ? 2 * CP_OB : CP_OB;
	op->flops = 2 * per_px * cp->pixels;
	if (op->opcode == VTPU_OP_CONV_POOL_WGRAD)
		per_px = per_px / cp->oc * cp->tile_oc; /* one tile's channels */
	cp->chunk = CP_BUDGET / per_px;
	if (!cp->chunk)
		cp->chunk = 1;
	if (cp->pixels / cp->chunk >= CP_MAX_PIECES)
		cp->chunk = cp->pixels / CP_MAX_PIECES + 1;
	pieces = (cp->pixels + cp->chunk - 1) / cp->chunk;
	if (op->opcode == VTPU_OP_CONV_POOL) {
		op->ntiles = (u32)pieces;
	} else {
		u32 otiles = (cp->oc + cp->tile_oc - 1) / cp->tile_oc;
		u32 workers = op->workers ? op->workers : 1;

		cp->row_tiles = 1;
		while (cp_wgrad_is_fast(cp) &&
		       otiles * cp->row_tiles < workers &&
		       cp->win.kdim / (cp->row_tiles + 1) >= CP_ROWS_MIN)
			cp->row_tiles++;
		op->ntiles = otiles * cp->row_tiles;
		op->nsteps = (u32)pieces;
	}
}

void vtpu_convpool_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_conv_pool *c = (const void *)cmd;
	struct vtpu_engine_convpool *cp = &op->convpool;

	vtpu_convpool_decode(c, cp);
	cp->x = vtpu_operand_ptr(bufs, &c->x);
	cp->index = vtpu_operand_ptr(bufs, &c->index);
	if (c->hdr.opcode == VTPU_OP_CONV_POOL) {
		cp->w = vtpu_operand_ptr(bufs, &c->w);
		cp->bias = vtpu_operand_ptr(bufs, &c->bias);
		cp->y = vtpu_operand_ptr(bufs, &c->y);
	} else {
		cp->dw = vtpu_operand_ptr(bufs, &c->w);
		cp->dbias = vtpu_operand_ptr(bufs, &c->bias);
		cp->dy = vtpu_operand_ptr(bufs, &c->dy);
	}
	convpool_tile(op);
}

static const struct {
	void (*fwd)(const struct vtpu_engine_convpool *cp, u64 p0, u64 p1,
		    float *pad);
	void (*wgrad)(const struct vtpu_engine_convpool *cp, u32 o0, u32 len,
		      u32 k0, u32 k1, u64 p0, u64 p1, bool first, float *pad);
} cp_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_convpool_fwd_scalar,
			       vtpu_convpool_wgrad_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_convpool_fwd_avx2, vtpu_convpool_wgrad_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_convpool_fwd_avx512,
			       vtpu_convpool_wgrad_avx512 },
};

void vtpu_convpool_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		       void *scratch)
{
	const struct vtpu_engine_convpool *cp = &op->convpool;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 piece = op->opcode == VTPU_OP_CONV_POOL ? tile : step;
	u64 p0 = piece * cp->chunk;
	u64 p1 = vtpu_min_u64(p0 + cp->chunk, cp->pixels);
	float *pad = (float *)scratch + VTPU_GEMM_GATHER_OFF;
	u32 o0, rt, k0, k1;

	if (op->opcode == VTPU_OP_CONV_POOL) {
		cp_levels[simd].fwd(cp, p0, p1, pad);
		return;
	}
	/* the tile's channels, and its share of the taps */
	o0 = tile / cp->row_tiles * cp->tile_oc;
	rt = tile % cp->row_tiles;
	k0 = (u32)(rt * cp->win.kdim / cp->row_tiles);
	k1 = (u32)((rt + 1) * cp->win.kdim / cp->row_tiles);
	cp_levels[simd].wgrad(cp, o0,
			      (u32)vtpu_min_u64(cp->tile_oc, cp->oc - o0),
			      k0, k1, p0, p1, !step, pad);
}

int vtpu_convpool_describe(const struct vtpu_engine_op *op, char *buf,
			   size_t len)
{
	const struct vtpu_engine_convpool *cp = &op->convpool;

	return snprintf(buf, len, "%ux%ux%ux%u k%ux%u->%u p%ux%u", cp->win.n,
			cp->win.h, cp->win.w, cp->win.c, cp->win.kh,
			cp->win.kw, cp->oc, cp->pkh, cp->pkw);
}
