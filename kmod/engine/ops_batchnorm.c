// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * BATCHNORM and BATCHNORM_GRAD (struct vtpu_cmd_batchnorm, _grad): batch
 * normalisation per channel over the rows, and its gradient.
 *
 * A tile owns a block of at most BN_WIDTH channels of a group of rows, its
 * steps walking the group's rows in blocks of about VTPU_OPS_CHUNK
 * elements. TRAINING sums x - x[0] and its square over the rows (the mean
 * and the variance, bn_stats()), then writes y; inference only writes y;
 * the gradient sums dy and dy * xhat, then writes dx. The sums are in
 * double, in row order within a group.
 *
 * How many groups (bn_groups()) depends on the shape only. With one group,
 * a tile does both passes over all rows of its channels, its sums in
 * scratch from one step to the next (a worker runs a tile's steps back to
 * back). With more, the op has two phases (vtpu_engine.h): the first's
 * tiles sum their group's rows into the op's workspace, [groups][2][C]
 * doubles; the second's add those up for their channels, group after
 * group, and write their group's rows, the tiles of group 0 saving the
 * statistics (or dgamma, dbeta). Either way a channel's sums depend on the
 * shape only, never on the workers, and a 64-channel layer of 65536 rows
 * (which would be one tile) keeps every worker busy.
 */
#include "engine_internal.h"

/*
 * Channels per tile: whole rows of up to 256 channels (the widest layers
 * of the image networks). Narrower tiles (two workers on 64 channels,
 * each reading half of every row; 64-channel tiles of a 128-channel
 * layer, each reading 256 of every 512 bytes) ran at half the speed of
 * one worker streaming whole rows: more workers take groups of rows
 * instead.
 */
#define BN_WIDTH 256u

/* Elements a tile's pass reads, about; the most groups of rows. */
#define BN_TILE_ELEMS (256u * 1024)
#define BN_GROUPS_MAX 16u

/*
 * Scratch: two double accumulators per channel of the tile, and four
 * doubles of its constants (bn_tmpl.h).
 */
#define BN_SCRATCH_K (2 * BN_WIDTH)

size_t vtpu_batchnorm_scratch_size(void)
{
	return (BN_SCRATCH_K + 4 * BN_WIDTH) * sizeof(double);
}

/*
 * Groups of rows: enough for about one tile per BN_TILE_ELEMS elements,
 * at most BN_GROUPS_MAX, and with sums (@work) at most what the op's
 * workspace holds, two doubles per channel and group.
 */
static u32 bn_groups(u32 rows, u32 channels, u32 cblocks, bool work)
{
	u64 want = ((u64)rows * channels + BN_TILE_ELEMS - 1) / BN_TILE_ELEMS;
	u64 g = (want + cblocks - 1) / cblocks;
	u64 most = VTPU_ENGINE_WORK_BYTES / (2 * sizeof(double) * channels);

	if (g > BN_GROUPS_MAX)
		g = BN_GROUPS_MAX;
	if (work && g > most)
		g = most;
	if (g > rows)
		g = rows;
	return g ? (u32)g : 1;
}

void vtpu_batchnorm_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_batchnorm *f = (const void *)cmd;
	const struct vtpu_cmd_batchnorm_grad *g = (const void *)cmd;
	struct vtpu_engine_bn *b = &op->bn;
	bool sums;

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
	} else {
		b->train = f->flags & VTPU_BATCHNORM_TRAINING;
		b->relu = f->flags & VTPU_BATCHNORM_RELU;
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
	}
	sums = b->grad || b->train;
	b->width = b->channels < BN_WIDTH ? b->channels : BN_WIDTH;
	b->cblocks = vtpu_div_up(b->channels, b->width);
	b->groups = bn_groups(b->rows, b->channels, b->cblocks, sums);
	b->grows = vtpu_div_up(b->rows, b->groups);
	b->groups = vtpu_div_up(b->rows, b->grows);	/* none empty */
	b->rblock = VTPU_OPS_CHUNK / b->width;
	b->nblocks = vtpu_div_up(b->grows, b->rblock);
	b->passes = sums && b->groups == 1 ? 2 : 1;
	op->ntiles = b->groups * b->cblocks;
	op->nsteps = b->passes * b->nblocks;
	if (sums && b->groups > 1) {
		op->nphases = 2;
		op->phase_end[0] = op->ntiles;
		op->ntiles *= 2;
		op->phase_end[1] = op->ntiles;
	}
	op->flops = 4ull * (sums ? 2 : 1) * b->rows * b->channels;
}

/*
 * The passes at this file's width (the baseline); the AVX2 and AVX-512
 * builds of the same loops are in ops_nhwc_*.c, and all give the same
 * bits (bn_tmpl.h).
 */
#define BN_SFX scalar
#include "bn_tmpl.h"

static const struct {
	void (*sums)(const struct vtpu_engine_bn *b, u32 c0, u32 w, u32 r0,
		     u32 r1, double *acc0, double *acc1, double *k);
	void (*write)(const struct vtpu_engine_bn *b, u32 c0, u32 w, u32 r0,
		      u32 r1, const double *acc0, const double *acc1,
		      double *k);
} bn_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_bn_sums_scalar, vtpu_bn_write_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_bn_sums_avx2, vtpu_bn_write_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_bn_sums_avx512, vtpu_bn_write_avx512 },
};

/*
 * The end of the sums of channels [c0, c0 + w), whatever level made them
 * (this is the baseline's code for all): turn them into what the second
 * pass reads, in place, and with @save write the command's outputs. The
 * forward's: acc0 = mean = x[0] + s0 / rows, acc1 = inv_std from the
 * biased variance s1 / rows - (s0 / rows)^2 (not below 0), then stats and
 * the moving statistics. The gradient's: dbeta = s0 and dgamma = s1, then
 * acc0, acc1 = s0 / rows, s1 / rows.
 */
static void bn_stats(const struct vtpu_engine_bn *b, u32 c0, u32 w,
		     double *acc0, double *acc1, bool save)
{
	double n = b->rows, mom = b->momentum, d, var;
	u32 j, c;

	for (j = 0; j < w; j++) {
		c = c0 + j;
		if (b->grad) {
			if (save) {
				b->dbeta[c] = (float)acc0[j];
				b->dgamma[c] = (float)acc1[j];
			}
			acc0[j] /= n;
			acc1[j] /= n;
			continue;
		}
		d = acc0[j] / n;
		var = acc1[j] / n - d * d;
		if (var < 0.0)
			var = 0.0;
		acc0[j] = b->x[c] + d;
		acc1[j] = 1.0 / bn_sqrt_scalar(var + b->eps);
		if (!save)
			continue;
		b->stats[c] = (float)acc0[j];
		b->stats[b->channels + c] = (float)acc1[j];
		b->mmean[c] = (float)(b->mmean[c] * mom + acc0[j] * (1.0 - mom));
		b->mvar[c] = (float)(b->mvar[c] * mom + var * (1.0 - mom));
	}
}

/* Channels [c0, c0 + w)'s sums: groups' partial sums, in group order. */
static void bn_gather(const struct vtpu_engine_bn *b, const double *work,
		      u32 c0, u32 w, double *acc0, double *acc1)
{
	const u64 cs = b->channels;
	u32 g, j;

	for (j = 0; j < w; j++) {
		acc0[j] = work[c0 + j];
		acc1[j] = work[cs + c0 + j];
	}
	for (g = 1; g < b->groups; g++)
		for (j = 0; j < w; j++) {
			acc0[j] += work[2 * g * cs + c0 + j];
			acc1[j] += work[(2 * g + 1) * cs + c0 + j];
		}
}

void vtpu_batchnorm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	const struct vtpu_engine_bn *b = &op->bn;
	double *acc0 = scratch, *acc1 = acc0 + BN_WIDTH;
	double *kon = (double *)scratch + BN_SCRATCH_K;
	double *work = vtpu_op_work(op);
	u32 pass = step / b->nblocks, k = step % b->nblocks;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u32 phase = 0, g, c0, w, j, r0, r1, end;

	if (op->nphases > 1 && tile >= op->phase_end[0]) {
		phase = 1;
		tile -= op->phase_end[0];
	}
	g = tile / b->cblocks;
	c0 = tile % b->cblocks * b->width;
	w = b->channels - c0 < b->width ? b->channels - c0 : b->width;
	if (g >= b->groups)
		return;
	r0 = g * b->grows;
	end = b->rows - r0 < b->grows ? b->rows : r0 + b->grows;
	r0 += k * b->rblock;
	r1 = end - r0 < b->rblock ? end : r0 + b->rblock;
	if (r0 > end)
		r0 = r1 = end;	/* a short last group's idle step */

	if (!b->grad && !b->train) {		/* inference: one pass */
		if (!k)
			for (j = 0; j < w; j++) {
				acc0[j] = b->mmean[c0 + j];
				acc1[j] = (double)b->mvar[c0 + j] + b->eps;
				acc1[j] = 1.0 / bn_sqrt_scalar(acc1[j]);
			}
		bn_levels[simd].write(b, c0, w, r0, r1, acc0, acc1, kon);
		return;
	}
	if (op->nphases > 1 && !phase) {	/* the group's sums */
		acc0 = work + 2ull * g * b->channels + c0;
		acc1 = acc0 + b->channels;
		if (!k)
			for (j = 0; j < w; j++)
				acc0[j] = acc1[j] = 0.0;
		bn_levels[simd].sums(b, c0, w, r0, r1, acc0, acc1, kon);
		return;
	}
	if (op->nphases > 1) {			/* all groups' sums, then y */
		if (!k) {
			bn_gather(b, work, c0, w, acc0, acc1);
			bn_stats(b, c0, w, acc0, acc1, !g);
		}
		bn_levels[simd].write(b, c0, w, r0, r1, acc0, acc1, kon);
		return;
	}
	if (pass) {				/* one group: y */
		bn_levels[simd].write(b, c0, w, r0, r1, acc0, acc1, kon);
		return;
	}
	if (!k)
		for (j = 0; j < w; j++)
			acc0[j] = acc1[j] = 0.0;
	bn_levels[simd].sums(b, c0, w, r0, r1, acc0, acc1, kon);
	if (k + 1 == b->nblocks)
		bn_stats(b, c0, w, acc0, acc1, true);
}

int vtpu_batchnorm_describe(const struct vtpu_engine_op *op, char *buf,
			    size_t len)
{
	const struct vtpu_engine_bn *b = &op->bn;

	return snprintf(buf, len, "%u rows x %u channels%s%s, %u groups",
			b->rows, b->channels,
			b->grad ? "" : b->train ? ", training" : ", inference",
			b->relu ? ", relu" : "", b->groups);
}
