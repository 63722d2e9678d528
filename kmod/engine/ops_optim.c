// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The optimizers: SGD (struct vtpu_cmd_sgd), ADAM_STEP and ADAM (struct
 * vtpu_cmd_adam_step, struct vtpu_cmd_adam), and the gradient clipping
 * they may follow, CLIP_NORM (struct vtpu_cmd_clip_norm). Each element is
 * updated independently, so tiles are chunks of elements (vtpu_ops_tile()).
 *
 * Adam's step count lives in device memory, in the state that ADAM_STEP
 * (one tile, one step) advances and ADAM reads: a stream compiled once
 * and replayed N times takes exactly N steps. The state holds 1 - beta^t
 * rather than beta^t so that a zeroed buffer means t = 0.
 */
#include "engine_internal.h"

static void optim_tile(struct vtpu_engine_op *op)
{
	u64 n = op->optim.count;

	vtpu_ops_tile(op, n);
	op->flops = n * (op->opcode == VTPU_OP_ADAM ? 16 : 4);
}

void vtpu_sgd_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		      const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_sgd *s = (const void *)cmd;
	struct vtpu_engine_optim *o = &op->optim;

	o->count = s->count;
	o->lr = vtpu_f32_from_bits(s->lr);
	o->momentum = vtpu_f32_from_bits(s->momentum);
	o->weight_decay = vtpu_f32_from_bits(s->weight_decay);
	o->flags = s->flags;
	o->param = vtpu_operand_ptr(bufs, &s->param);
	o->grad = vtpu_operand_ptr(bufs, &s->grad);
	if (s->momentum)
		o->mom = vtpu_operand_ptr(bufs, &s->mom);
	optim_tile(op);
}

void vtpu_adam_step_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_adam_step *as = (const void *)cmd;
	struct vtpu_engine_optim *o = &op->optim;

	o->count = 1;
	o->beta1 = vtpu_f32_from_bits(as->beta1);
	o->beta2 = vtpu_f32_from_bits(as->beta2);
	o->state = vtpu_operand_ptr(bufs, &as->state);
	optim_tile(op);
}

void vtpu_adam_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_adam *a = (const void *)cmd;
	struct vtpu_engine_optim *o = &op->optim;

	o->count = a->count;
	o->lr = vtpu_f32_from_bits(a->lr);
	o->beta1 = vtpu_f32_from_bits(a->beta1);
	o->beta2 = vtpu_f32_from_bits(a->beta2);
	o->eps = vtpu_f32_from_bits(a->eps);
	o->weight_decay = vtpu_f32_from_bits(a->weight_decay);
	o->flags = a->flags;
	o->param = vtpu_operand_ptr(bufs, &a->param);
	o->grad = vtpu_operand_ptr(bufs, &a->grad);
	o->mom = vtpu_operand_ptr(bufs, &a->m);
	o->vel = vtpu_operand_ptr(bufs, &a->v);
	o->state = vtpu_operand_ptr(bufs, &a->state);
	optim_tile(op);
}

#define OPTIM_SFX scalar
#include "optim_tmpl.h"

static const struct {
	void (*sgd)(const struct vtpu_engine_optim *o, u64 i0, u64 n);
	void (*adam)(const struct vtpu_engine_optim *o, u64 i0, u64 n);
} optim_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_sgd_run_scalar, vtpu_adam_run_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_sgd_run_avx2, vtpu_adam_run_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_sgd_run_avx512, vtpu_adam_run_avx512 },
};

static void adam_step_run(const struct vtpu_engine_optim *o)
{
	float *s = o->state;

	s[0] = o->beta1 * s[0] + (1.0f - o->beta1);
	s[1] = o->beta2 * s[1] + (1.0f - o->beta2);
}

void vtpu_optim_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		    void *scratch)
{
	const struct vtpu_engine_optim *o = &op->optim;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, o->count - i0);
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;

	switch (op->opcode) {
	case VTPU_OP_SGD:
		optim_levels[simd].sgd(o, i0, n);
		break;
	case VTPU_OP_ADAM_STEP:
		adam_step_run(o);
		break;
	case VTPU_OP_ADAM:
		optim_levels[simd].adam(o, i0, n);
		break;
	}
}

void vtpu_clip_norm_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_clip_norm *c = (const void *)cmd;
	struct vtpu_engine_clip *cl = &op->clip;

	cl->count = c->count;
	cl->max_norm = vtpu_f32_from_bits(c->max_norm);
	cl->sumsq = vtpu_operand_ptr(bufs, &c->sumsq);
	cl->x = vtpu_operand_ptr(bufs, &c->x);
	vtpu_ops_tile(op, cl->count);
	op->flops = cl->count;
}

/*
 * Every tile computes the same scale from sumsq (no tile writes it). A
 * NaN norm fails the comparison (x unchanged); +Inf gives a scale of 0.
 */
void vtpu_clip_norm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	const struct vtpu_engine_clip *cl = &op->clip;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, cl->count - i0), i;
	float norm = optim_sqrt_scalar(*cl->sumsq), s;
	float *x = cl->x + i0;

	if (!(norm > cl->max_norm))
		return;
	s = cl->max_norm / norm;
	for (i = 0; i < n; i++)
		x[i] *= s;
}
