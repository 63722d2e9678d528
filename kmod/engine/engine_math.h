/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * exp and log for the engine's FP code, in double (there is no libm in the
 * kernel). For the ranges softmax and the activations need; |error| of a
 * float result rounded from them is below an ulp or so. Only for code that
 * runs between kernel_fpu_begin() and kernel_fpu_end() (the ops' run()).
 */
#ifndef VTPU_ENGINE_MATH_H
#define VTPU_ENGINE_MATH_H

#include "engine_internal.h"

#define VTPU_LN2_HI 6.93147180369123816490e-01
#define VTPU_LN2_LO 1.90821492927058770002e-10

/*
 * e^r for |r| <= 0.35 (x - k ln2): Taylor to r^11 / 11!, error below
 * 1e-13. Shared by vtpu_exp_nonpos() and the vectorised activations
 * (act_tmpl.h), which must compute the same bits.
 */
static inline double vtpu_exp_poly(double r)
{
	double p;

	p = 1.0 / 39916800.0;
	p = p * r + 1.0 / 3628800.0;
	p = p * r + 1.0 / 362880.0;
	p = p * r + 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	return p * r + 1.0;
}

/* e^x for x <= 0 (or NaN), in double: softmax only ever needs those. */
static inline double vtpu_exp_nonpos(double x)
{
	double t, r, p;
	s64 k;
	u64 bits;

	if (x != x)
		return x;
	if (x < -110.0)		/* below the smallest float */
		return 0.0;
	t = x * 1.44269504088896340736;
	k = (s64)(t - 0.5);	/* t in [-159, 0]: round to nearest */
	r = (x - (double)k * VTPU_LN2_HI) - (double)k * VTPU_LN2_LO;
	p = vtpu_exp_poly(r);
	bits = (u64)(k + 1023) << 52;	/* 2^k, k >= -160: a normal double */
	memcpy(&t, &bits, sizeof(t));
	return p * t;
}

/* log(x) for x >= 1 (or NaN, +Inf), in double. */
static inline double vtpu_log_ge1(double x)
{
	static const double ln2 = 6.93147180559945309417e-01;
	double m, s, s2, p;
	u64 bits;
	s64 e;

	if (x != x || x > 1.7e308)
		return x;
	memcpy(&bits, &x, sizeof(bits));
	e = (s64)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	memcpy(&m, &bits, sizeof(m));	/* x = m * 2^e, m in [1, 2) */
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	/* log(m) = 2 atanh(s), |s| <= 0.172: series to s^17 */
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	p = 1.0 / 17.0;
	p = p * s2 + 1.0 / 15.0;
	p = p * s2 + 1.0 / 13.0;
	p = p * s2 + 1.0 / 11.0;
	p = p * s2 + 1.0 / 9.0;
	p = p * s2 + 1.0 / 7.0;
	p = p * s2 + 1.0 / 5.0;
	p = p * s2 + 1.0 / 3.0;
	p = p * s2 + 1.0;
	return (double)e * ln2 + 2.0 * s * p;
}

#endif /* VTPU_ENGINE_MATH_H */
