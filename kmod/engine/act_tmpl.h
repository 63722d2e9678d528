/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * SIGMOID and TANH over a run of floats, once per SIMD level (ACT_SFX;
 * the including file's flags give the vector width). Each element is
 * computed from e^-|x| in float, sixteen lanes to a 512-bit vector (they
 * were computed in double: an LSTM cell's five activations took most of
 * its time): sigmoid's last division is in double and rounded once,
 * tanh's is in float. Within 1.51 ulp of the exact value: every float
 * below 90 in magnitude was checked against libm's double, past it both
 * saturate exactly; test_ops_elementwise sweeps them. The same operations
 * in the same order, with no branch, so the compiler vectorises the loop
 * at the level's width and every level gives the same bits (the files are
 * built with -ffp-contract=off: no fused multiply-add changes a
 * rounding). Only for code that runs between kernel_fpu_begin() and
 * kernel_fpu_end().
 */
#include "engine_internal.h"

#define ACT_CAT2(a, b) a##_##b
#define ACT_CAT(a, b) ACT_CAT2(a, b)
#define ACT_FN(name) ACT_CAT(name, ACT_SFX)

/*
 * e^x for x <= 0 or NaN, in float: x = k ln2 + r with k the nearest
 * integer to x / ln2 (the 1.5 * 2^23 rounding trick: round to nearest even,
 * no conversion instruction), r in [-ln2/2, ln2/2] from the two-part ln2
 * (k * ACT_LN2_HI is exact: its 15 bits times k's 8), e^r from its Taylor
 * series to r^7 (the next term is below 5.3e-9 of it, 0.05 ulp) summed as
 * 1 + (r + r^2 p(r)), so that only the last addition rounds at 1's scale,
 * times 2^k made from k's bits. Below ACT_EXP_MIN e^x is under FLT_MIN: 0, as
 * the engine flushes denormals anyway. Plain float operations in a fixed
 * order, so every level gives the same bits.
 */
#define ACT_LN2_HI 0.693145751953125f
#define ACT_LN2_LO 1.42860682030941723212e-6f
#define ACT_ROUNDER 12582912.0f		/* 1.5 * 2^23 */
#define ACT_EXP_MIN -87.5f

static inline float ACT_FN(act_expf)(float x)
{
	float xc = x < ACT_EXP_MIN ? ACT_EXP_MIN : x;	/* NaN stays NaN */
	float s = xc * 1.44269504088896341f + ACT_ROUNDER;
	float k = s - ACT_ROUNDER, r, p, t;
	u32 bits;

	r = (xc - k * ACT_LN2_HI) - k * ACT_LN2_LO;
	p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = 1.0f + (r + (r * r) * p);
	/* s's low mantissa bits hold k: 2^k's exponent field is k + 127 */
	memcpy(&bits, &s, sizeof(bits));
	bits = (bits - 0x4b400000u + 127u) << 23;
	memcpy(&t, &bits, sizeof(t));
	return x < ACT_EXP_MIN ? 0.0f : p * t;
}

/* 1 / (1 + e^-x), or e^x / (1 + e^x) for x < 0: no cancellation */
void ACT_FN(vtpu_act_sigmoid)(const float *x, float *z, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		float v = x[i], e = ACT_FN(act_expf)(v < 0.0f ? v : -v);

		z[i] = (float)((v < 0.0f ? (double)e : 1.0) / (1.0 + e));
	}
}

/* @m with the sign bit of @v: tanh's oddness, bit for bit (-0 kept) */
static inline float ACT_FN(act_signed)(float m, float v)
{
	u32 bm, bv;

	memcpy(&bm, &m, sizeof(bm));
	memcpy(&bv, &v, sizeof(bv));
	bm = (bm & 0x7fffffffu) | (bv & 0x80000000u);
	memcpy(&m, &bm, sizeof(m));
	return m;
}

/*
 * tanh |x| = (1 - t) / (1 + t), t = e^-2|x|; below 0.625, where 1 - t
 * would lose bits of t's rounding, |x| + |x| x^2 q(x^2) with q a degree-5
 * polynomial fitted to tanh on [0, 0.625] (off by under 1e-9 of it).
 * Both are computed and one chosen, no branch; then the sign of x, so
 * tanh is odd bit for bit and keeps -0.
 */
void ACT_FN(vtpu_act_tanh)(const float *x, float *z, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		float v = x[i], a = v < 0.0f ? -v : v, p, t, q;

		t = a * a;
		p = 0.00215359078720212f;
		p = p * t - 0.008189946413040161f;
		p = p * t + 0.021706251427531242f;
		p = p * t - 0.05394788831472397f;
		p = p * t + 0.13333216309547424f;
		p = p * t - 0.3333333134651184f;
		p = a + a * (t * p);
		t = ACT_FN(act_expf)(-2.0f * a);
		q = (1.0f - t) / (1.0f + t);
		z[i] = ACT_FN(act_signed)(a < 0.625f ? p : q, v);
	}
}
