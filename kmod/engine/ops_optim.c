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

/*
 * sqrt without libm (the kernel has none): with -fno-math-errno (engine.mk)
 * GCC emits the instruction, sqrtss or, in a vectorised loop, sqrtps;
 * both are correctly rounded, so the two give the same bits.
 */
static float optim_sqrt(float x)
{
#ifdef __CHECKER__
	return x; /* sparse does not know the builtin: it checks a stand-in */
#else
	return __builtin_sqrtf(x);
#endif
}

static void sgd_run(const struct vtpu_engine_optim *o, u64 i0, u64 n)
{
	float *p = o->param + i0, *b = o->mom ? o->mom + i0 : NULL;
	const float *gr = o->grad + i0;
	float lr = o->lr, mu = o->momentum, wd = o->weight_decay;
	bool nesterov = o->flags & VTPU_SGD_NESTEROV;
	u64 i;

	if (!b) {
		for (i = 0; i < n; i++)
			p[i] = p[i] - lr * (gr[i] + wd * p[i]);
		return;
	}
	for (i = 0; i < n; i++) {
		float g = gr[i] + wd * p[i];
		float v = mu * b[i] + g;

		b[i] = v;
		p[i] = p[i] - lr * (nesterov ? g + mu * v : v);
	}
}

static void adam_step_run(const struct vtpu_engine_optim *o)
{
	float *s = o->state;

	s[0] = o->beta1 * s[0] + (1.0f - o->beta1);
	s[1] = o->beta2 * s[1] + (1.0f - o->beta2);
}

/*
 * The documented update p - (lr / c1) * m / (sqrt(v) / sqrt(c2) + eps),
 * with numerator and denominator multiplied by sqrt(c2): one square root
 * and one division per element where the formula has two divisions. The
 * divider is what bounds this loop (sqrt and div share it), so that is a
 * third less work; the result differs only in rounding.
 */
static void adam_run(const struct vtpu_engine_optim *o, u64 i0, u64 n)
{
	float *p = o->param + i0, *m = o->mom + i0, *v = o->vel + i0;
	const float *gr = o->grad + i0;
	float b1 = o->beta1, b2 = o->beta2;
	float wd = o->weight_decay, lr = o->lr;
	float sc2 = optim_sqrt(o->state[1]);
	float step = lr / o->state[0] * sc2, eps = o->eps * sc2;
	bool decoupled = o->flags & VTPU_ADAM_DECOUPLED;
	u64 i;

	/* two loops, not a branch per element: both vectorise */
	if (decoupled) {
		for (i = 0; i < n; i++) {
			float g = gr[i], w = p[i] - lr * wd * p[i];
			float mi = b1 * m[i] + (1.0f - b1) * g;
			float vi = b2 * v[i] + (1.0f - b2) * g * g;

			m[i] = mi;
			v[i] = vi;
			p[i] = w - step * mi / (optim_sqrt(vi) + eps);
		}
		return;
	}
	for (i = 0; i < n; i++) {
		float w = p[i], g = gr[i] + wd * w;
		float mi = b1 * m[i] + (1.0f - b1) * g;
		float vi = b2 * v[i] + (1.0f - b2) * g * g;

		m[i] = mi;
		v[i] = vi;
		p[i] = w - step * mi / (optim_sqrt(vi) + eps);
	}
}

void vtpu_optim_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		    void *scratch)
{
	const struct vtpu_engine_optim *o = &op->optim;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, o->count - i0);

	switch (op->opcode) {
	case VTPU_OP_SGD:
		sgd_run(o, i0, n);
		break;
	case VTPU_OP_ADAM_STEP:
		adam_step_run(o);
		break;
	case VTPU_OP_ADAM:
		adam_run(o, i0, n);
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
	float norm = optim_sqrt(*cl->sumsq), s;
	float *x = cl->x + i0;

	if (!(norm > cl->max_norm))
		return;
	s = cl->max_norm / norm;
	for (i = 0; i < n; i++)
		x[i] *= s;
}
