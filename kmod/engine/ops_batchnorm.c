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

/* sqrt without libm: see optim_sqrt() in ops_optim.c */
static double bn_sqrt(double x)
{
#ifdef __CHECKER__
	return x;
#else
	return __builtin_sqrt(x);
#endif
}

/*
 * The end of the statistics: turn the sums of channel c (j in the tile)
 * into acc0 = mean and acc1 = inv_std, save them, update the moving ones.
 */
static void bn_stats_done(const struct vtpu_engine_bn *b, u32 c, double *m,
			  double *v)
{
	double var = *v / b->rows, mom = b->momentum;
	double inv = 1.0 / bn_sqrt(var + b->eps);

	b->stats[c] = (float)*m;
	b->stats[b->channels + c] = (float)inv;
	b->mmean[c] = (float)(b->mmean[c] * mom + *m * (1.0 - mom));
	b->mvar[c] = (float)(b->mvar[c] * mom + var * (1.0 - mom));
	*v = inv;
}

static void bn_forward(const struct vtpu_engine_bn *b, u32 pass, u32 k,
		       u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
		       double *acc1)
{
	const float *x;
	u32 r, j;

	if (!b->train) {
		pass = 2;
		if (!k)
			for (j = 0; j < w; j++) {
				acc0[j] = b->mmean[c0 + j];
				acc1[j] = 1.0 / bn_sqrt((double)b->mvar[c0 + j] +
							b->eps);
			}
	}
	if (pass < 2 && !k)
		for (j = 0; j < w; j++)
			(pass ? acc1 : acc0)[j] = 0.0;
	for (r = r0; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		if (pass == 0) {
			for (j = 0; j < w; j++)
				acc0[j] += x[j];
		} else if (pass == 1) {
			for (j = 0; j < w; j++) {
				double d = x[j] - acc0[j];

				acc1[j] += d * d;
			}
		} else {
			float *y = b->y + (u64)r * b->channels + c0;

			for (j = 0; j < w; j++)
				y[j] = (float)((x[j] - acc0[j]) * acc1[j] *
					       b->gamma[c0 + j] +
					       b->beta[c0 + j]);
		}
	}
	if (k + 1 < b->nblocks || pass == 2)
		return;
	for (j = 0; j < w; j++) {
		if (pass == 0)
			acc0[j] /= b->rows;
		else
			bn_stats_done(b, c0 + j, &acc0[j], &acc1[j]);
	}
}

static void bn_backward(const struct vtpu_engine_bn *b, u32 pass, u32 k,
			u32 c0, u32 w, u32 r0, u32 r1, double *acc0,
			double *acc1)
{
	const float *mean = b->stats + c0, *inv = b->stats + b->channels + c0;
	const float *x, *dy;
	u32 r, j;

	if (!pass && !k)
		for (j = 0; j < w; j++)
			acc0[j] = acc1[j] = 0.0;
	for (r = r0; r < r1; r++) {
		x = b->x + (u64)r * b->channels + c0;
		dy = b->dy + (u64)r * b->channels + c0;
		if (!pass) {
			for (j = 0; j < w; j++) {
				double xh = ((double)x[j] - mean[j]) * inv[j];

				acc0[j] += dy[j];
				acc1[j] += dy[j] * xh;
			}
		} else {
			float *dx = b->y + (u64)r * b->channels + c0;

			for (j = 0; j < w; j++) {
				double xh = ((double)x[j] - mean[j]) * inv[j];

				dx[j] = (float)((double)b->gamma[c0 + j] *
						inv[j] *
						(dy[j] - acc0[j] - xh * acc1[j]));
			}
		}
	}
	if (pass || k + 1 < b->nblocks)
		return;
	for (j = 0; j < w; j++) {
		b->dbeta[c0 + j] = (float)acc0[j];
		b->dgamma[c0 + j] = (float)acc1[j];
		acc0[j] /= b->rows;
		acc1[j] /= b->rows;
	}
}

void vtpu_batchnorm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	const struct vtpu_engine_bn *b = &op->bn;
	double *acc0 = scratch, *acc1 = acc0 + BN_WIDTH;
	u32 pass = step / b->nblocks, k = step % b->nblocks;
	u32 c0 = tile * b->width, w = b->width, r0, r1;

	if (c0 >= b->channels)
		return;
	if (b->channels - c0 < w)
		w = b->channels - c0;
	r0 = k * b->rblock;
	r1 = b->rows - r0 < b->rblock ? b->rows : r0 + b->rblock;
	if (b->grad)
		bn_backward(b, pass, k, c0, w, r0, r1, acc0, acc1);
	else
		bn_forward(b, pass, k, c0, w, r0, r1, acc0, acc1);
}

int vtpu_batchnorm_describe(const struct vtpu_engine_op *op, char *buf,
			    size_t len)
{
	const struct vtpu_engine_bn *b = &op->bn;

	return snprintf(buf, len, "%u rows x %u channels%s", b->rows,
			b->channels,
			b->grad ? "" : b->train ? ", training" : ", inference");
}
