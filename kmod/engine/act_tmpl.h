/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * SIGMOID and TANH over a run of floats, once per SIMD level (ACT_SFX;
 * the including file's flags give the vector width). Each element is
 * computed in double from e^-|x| and rounded once, as the scalar form
 * always was: the same operations in the same order, with no branch, so
 * the compiler vectorises the loop at the level's width and every level
 * gives the same bits (the files are built with -ffp-contract=off: no
 * fused multiply-add changes a rounding). Only for code that runs between
 * kernel_fpu_begin() and kernel_fpu_end().
 */
#include "engine_internal.h"
#include "engine_math.h"

#define ACT_CAT2(a, b) a##_##b
#define ACT_CAT(a, b) ACT_CAT2(a, b)
#define ACT_FN(name) ACT_CAT(name, ACT_SFX)

/*
 * trunc() of a double in [-160, 0]: an instruction from SSE4.1 on; the
 * baseline's conversion to an integer and back otherwise (no libm; and
 * for sparse, which does not know the builtin).
 */
#if defined(ACT_ROUND_INSN) && !defined(__CHECKER__)
#define ACT_TRUNC(v) __builtin_trunc(v)
#else
#define ACT_TRUNC(v) ((double)(s64)(v))
#endif

/*
 * e^x for x <= 0 or NaN (vtpu_exp_nonpos()'s steps): below -110 it is
 * e^-110, 1.7e-48, which rounds to the same float results as 0 would.
 * 2^k is made from the bits of k + 1023 + 2^52 (k + 1023 in [863, 1023]
 * lands in the low mantissa bits), not by a conversion to an integer.
 */
static inline double ACT_FN(act_exp)(double x)
{
	double t, r, p, kd, s;
	u64 bits;

	x = x < -110.0 ? -110.0 : x;	/* NaN stays NaN */
	t = x * 1.44269504088896340736;
	kd = ACT_TRUNC(t - 0.5);	/* t in [-159, 0]: to nearest */
	r = (x - kd * VTPU_LN2_HI) - kd * VTPU_LN2_LO;
	p = vtpu_exp_poly(r);
	s = kd + (1023.0 + 4503599627370496.0);
	memcpy(&bits, &s, sizeof(bits));
	bits <<= 52;
	memcpy(&t, &bits, sizeof(t));
	return p * t;
}

/* 1 / (1 + e^-x), or e^x / (1 + e^x) for x < 0: no cancellation */
void ACT_FN(vtpu_act_sigmoid)(const float *x, float *z, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		double v = x[i], e = ACT_FN(act_exp)(v < 0.0 ? v : -v);

		z[i] = (float)((v < 0.0 ? e : 1.0) / (1.0 + e));
	}
}

/*
 * tanh |x| = (1 - t) / (1 + t), t = e^-2|x|, with the sign of x; below
 * 1/16, where 1 - t would cancel, the Taylor series to x^11 (the next
 * term is below 1e-14 of x), which keeps -0. Both are computed and one
 * chosen: no branch.
 */
void ACT_FN(vtpu_act_tanh)(const float *x, float *z, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		double v = x[i], a = v < 0.0 ? -v : v, p, t, q;

		t = v * v;
		p = -1382.0 / 155925.0;
		p = p * t + 62.0 / 2835.0;
		p = p * t - 17.0 / 315.0;
		p = p * t + 2.0 / 15.0;
		p = p * t - 1.0 / 3.0;
		p = v * (1.0 + t * p);
		t = ACT_FN(act_exp)(-2.0 * a);
		q = (1.0 - t) / (1.0 + t);
		q = v < 0.0 ? -q : q;
		z[i] = (float)(a < 0.0625 ? p : q);
	}
}
