// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * BATCHNORM and BATCHNORM_GRAD (struct vtpu_cmd_batchnorm, _grad): batch
 * normalisation per channel over the rows, and its gradient.
 *
 * A tile owns a block of at most BN_WIDTH channels and does every pass
 * over them, its steps walking the rows in blocks of about
 * VTPU_OPS_CHUNK elements: TRAINING sums x (the mean), then the squared
 * deviations (the variance), then writes y; inference only writes y;
 * the gradient sums dy and dy * xhat, then writes dx. The sums are in
 * double, kept in scratch from one step to the next (a worker runs a
 * tile's steps back to back), in row order: a channel's sums depend on
 * the shape only, never on the workers.
 */
#include "engine_internal.h"

/*
 * Channels per tile: whole rows of a 64-channel layer. Narrower tiles
 * (two workers on 64 channels, each reading half of every row) ran its
 * 16 MB forward slower than one worker streaming whole rows.
 */
#define BN_WIDTH 64u

/* Scratch: two double accumulators per channel of the tile. */
size_t vtpu_batchnorm_scratch_size(void)
{
	return 2 * BN_WIDTH * sizeof(double);
}

void vtpu_batchnorm_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_batchnorm *f = (const void *)cmd;
	const struct vtpu_cmd_batchnorm_grad *g = (const void *)cmd;
	struct vtpu_engine_bn *b = &op->bn;

	memset(b, 0, sizeof(*b));
	b->grad = cmd->opcode == VTPU_OP_BATCHNORM_GRAD;
	b->rows = f->rows;
	b->channels = f->channels;
	if (b->grad) {
		b->x = vtpu_operand_ptr(bufs, &g->x);
		b->dy = vtpu_operand_ptr(bufs, &g->dy);
		b->gamma = vtpu_operand_ptr(bufs, &g->gamma);
		b->stats = vtpu_operand_ptr(bufs, &g->stats);
		b->y = vtpu_operand_ptr(bufs, &g->dx);
		b->dgamma = vtpu_operand_ptr(bufs, &g->dgamma);
		b->dbeta = vtpu_operand_ptr(bufs, &g->dbeta);
		b->passes = 2;
	} else {
		b->train = f->flags & VTPU_BATCHNORM_TRAINING;
		b->eps = vtpu_f32_from_bits(f->epsilon);
		b->momentum = vtpu_f32_from_bits(f->momentum);
		b->x = vtpu_operand_ptr(bufs, &f->x);
		b->y = vtpu_operand_ptr(bufs, &f->y);
		b->gamma = vtpu_operand_ptr(bufs, &f->gamma);
		b->beta = vtpu_operand_ptr(bufs, &f->beta);
		b->mmean = vtpu_operand_ptr(bufs, &f->moving_mean);
		b->mvar = vtpu_operand_ptr(bufs, &f->moving_var);
		if (b->train)
			b->stats = vtpu_operand_ptr(bufs, &f->stats);
		b->passes = b->train ? 3 : 1;
	}
	b->width = b->channels < BN_WIDTH ? b->channels : BN_WIDTH;
	b->rblock = VTPU_OPS_CHUNK / b->width;
	b->nblocks = vtpu_div_up(b->rows, b->rblock);
	op->ntiles = vtpu_div_up(b->channels, b->width);
	op->nsteps = b->passes * b->nblocks;
	op->flops = 4ull * b->passes * b->rows * b->channels;
}

/*
 * The passes at this file's width (the baseline); the AVX2 and AVX-512
 * builds of the same loops are in ops_nhwc_*.c, and all give the same
 * bits (bn_tmpl.h).
 */
#define BN_SFX scalar
#define BN_LANES 4u
#include "bn_tmpl.h"

static const struct {
	void (*forward)(const struct vtpu_engine_bn *b, u32 pass, u32 k,
			u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
			double *acc1);
	void (*backward)(const struct vtpu_engine_bn *b, u32 pass, u32 k,
			 u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
			 double *acc1);
} bn_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_bn_forward_scalar,
			       vtpu_bn_backward_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_bn_forward_avx2, vtpu_bn_backward_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_bn_forward_avx512,
			       vtpu_bn_backward_avx512 },
};

void vtpu_batchnorm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	const struct vtpu_engine_bn *b = &op->bn;
	double *acc0 = scratch, *acc1 = acc0 + BN_WIDTH;
	u32 pass = step / b->nblocks, k = step % b->nblocks;
	u32 c0 = tile * b->width, w = b->width, r0, r1;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;

	if (c0 >= b->channels)
		return;
	if (b->channels - c0 < w)
		w = b->channels - c0;
	r0 = k * b->rblock;
	r1 = b->rows - r0 < b->rblock ? b->rows : r0 + b->rblock;
	if (b->grad)
		bn_levels[simd].backward(b, pass, k, c0, w, r0, r1, acc0, acc1);
	else
		bn_levels[simd].forward(b, pass, k, c0, w, r0, r1, acc0, acc1);
}

int vtpu_batchnorm_describe(const struct vtpu_engine_op *op, char *buf,
			    size_t len)
{
	const struct vtpu_engine_bn *b = &op->bn;

	return snprintf(buf, len, "%u rows x %u channels%s", b->rows,
			b->channels,
			b->grad ? "" : b->train ? ", training" : ", inference");
}
