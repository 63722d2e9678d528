/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * SGD's and ADAM's loops over a chunk of elements, once per SIMD level:
 * ops_optim.c (the baseline) and ops_optim_avx2.c, ops_optim_avx512.c each
 * define OPTIM_SFX and include this file. Each element is updated on its
 * own, so the compiler vectorises the loops at the level's width; there is
 * no contraction into FMA (-ffp-contract=off, engine.mk) and sqrt and
 * division are correctly rounded instructions: every level gives the same
 * bits. At the baseline's four lanes ADAM was bound by its divider and
 * square root on a Zen 5, a quarter of mnist's step; at sixteen it runs
 * at about the memory's pace.
 */
#ifndef OPTIM_SFX
#error "define OPTIM_SFX before including this"
#endif

#include "engine_internal.h"

#define OPTIM_CAT2(a, b) a##_##b
#define OPTIM_CAT(a, b) OPTIM_CAT2(a, b)
#define OPTIM_FN(name) OPTIM_CAT(name, OPTIM_SFX)

/*
 * sqrt without libm (the kernel has none): with -fno-math-errno (engine.mk)
 * GCC emits the instruction, sqrtss or, in a vectorised loop, sqrtps;
 * both are correctly rounded, so the two give the same bits.
 */
static inline float OPTIM_FN(optim_sqrt)(float x)
{
#ifdef __CHECKER__
	return x; /* sparse does not know the builtin: it checks a stand-in */
#else
	return __builtin_sqrtf(x);
#endif
}

void OPTIM_FN(vtpu_sgd_run)(const struct vtpu_engine_optim *o, u64 i0, u64 n)
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

/*
 * The documented update p - (lr / c1) * m / (sqrt(v) / sqrt(c2) + eps),
 * with numerator and denominator multiplied by sqrt(c2): one square root
 * and one division per element where the formula has two divisions. The
 * divider is what bounds this loop at narrow widths (sqrt and div share
 * it), so that is a third less work; the result differs only in rounding.
 */
void OPTIM_FN(vtpu_adam_run)(const struct vtpu_engine_optim *o, u64 i0, u64 n)
{
	float *p = o->param + i0, *m = o->mom + i0, *v = o->vel + i0;
	const float *gr = o->grad + i0;
	float b1 = o->beta1, b2 = o->beta2;
	float wd = o->weight_decay, lr = o->lr;
	float sc2 = OPTIM_FN(optim_sqrt)(o->state[1]);
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
			p[i] = w - step * mi / (OPTIM_FN(optim_sqrt)(vi) + eps);
		}
		return;
	}
	for (i = 0; i < n; i++) {
		float w = p[i], g = gr[i] + wd * w;
		float mi = b1 * m[i] + (1.0f - b1) * g;
		float vi = b2 * v[i] + (1.0f - b2) * g * g;

		m[i] = mi;
		v[i] = vi;
		p[i] = w - step * mi / (OPTIM_FN(optim_sqrt)(vi) + eps);
	}
}

#undef OPTIM_FN
#undef OPTIM_CAT
#undef OPTIM_CAT2
