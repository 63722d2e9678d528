// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the element-wise ops (ELEMENTWISE, CAST, DROPOUT,
 * REDUCE) through libvtpu's cpu backend, on every executor (test_ops.h),
 * against plain C references in this file, NaN/Inf included; and that
 * the engine flushes denormals (vtpu_denormals.h's check, which
 * vtpu_submit runs on the device).
 */
#include <float.h>

#include "test_ops.h"
#include "../../selftests/vtpu/vtpu_denormals.h"

/* ---- denormals ------------------------------------------------------------- */

/*
 * The engine flushes denormals (vtpu_engine_fp_enter()): a denormal
 * operand reads as 0 (DAZ) and a denormal result is 0 (FTZ), in the
 * element-wise ops and in the GEMM kernels alike, on every executor and
 * in its helper threads (the MUL is big enough for every worker to take
 * tiles); and the caller's own arithmetic keeps IEEE denormals after a
 * run.
 */
TEST(denormals_flushed)
{
	const size_t n = 65536 * 3 + 13;
	struct vtpu_bo xb = bo_new(n * 4), yb = bo_new(n * 4), zb = bo_new(n * 4);
	struct vtpu_bo ab = bo_new(DENORM_GM * DENORM_GK * 4);
	struct vtpu_bo bb = bo_new(DENORM_GK * DENORM_GN * 4);
	struct vtpu_bo cb_ = bo_new(DENORM_GM * DENORM_GN * 4);
	const struct denorm_bufs d = { &xb, &yb, &zb, &ab, &bb, &cb_, n };
	volatile float tiny = 1e-20f, prod = 0;
	struct vtpu_cmdbuf cb;
	struct execs ex;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	vtpu_cmdbuf_init(&cb);
	ASSERT_EQ(0, denorm_setup(&cb, &d));
	for (e = 0; e < ex.n; e++) {
		long bad;

		denorm_poison(&d);
		ASSERT_EQ(0, run(ex.cpu[e], &cb));
		bad = denorm_bad(&d);
		EXPECT_EQ(0, bad) TH_LOG("executor %d: %ld results kept a denormal",
					 e, bad);
		prod = tiny * tiny;
		EXPECT_NE(0.0f, prod) TH_LOG("the caller's MXCSR was left changed");
	}
	TH_LOG("denormal operands and results flushed on %d executors; "
	       "the caller keeps IEEE denormals (1e-20^2 = %g)", ex.n,
	       (double)prod);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&yb);
	vtpu_cpu_bo_destroy(&zb);
	vtpu_cpu_bo_destroy(&ab);
	vtpu_cpu_bo_destroy(&bb);
	vtpu_cpu_bo_destroy(&cb_);
	execs_fini(&ex);
}

/* ---- ELEMENTWISE ------------------------------------------------------------ */

static float ew_ref(uint32_t op, float x, float y, float a, float b)
{
	switch (op) {
	case VTPU_EW_ADD: return x + y;
	case VTPU_EW_SUB: return x - y;
	case VTPU_EW_MUL: return x * y;
	case VTPU_EW_SCALE: return a * x;
	case VTPU_EW_AXPY: return a * x + y;
	case VTPU_EW_AXPBY: return a * x + b * y;
	case VTPU_EW_RELU: return x < 0.0f ? 0.0f : x;
	case VTPU_EW_RELU_GRAD: return x > 0.0f ? y : 0.0f;
	case VTPU_EW_ADD_SCALAR: return x + a;
	}
	return NAN;
}

/* The activations and their gradients (x: the activation's output). */
static int ew_is_activation(uint32_t op)
{
	return op == VTPU_EW_SIGMOID || op == VTPU_EW_SIGMOID_GRAD ||
	       op == VTPU_EW_TANH || op == VTPU_EW_TANH_GRAD;
}

static double sigmoid_ref(double x)
{
	return x < 0 ? exp(x) / (1.0 + exp(x)) : 1.0 / (1.0 + exp(-x));
}

static double act_ref(uint32_t op, double x, double y)
{
	switch (op) {
	case VTPU_EW_SIGMOID: return sigmoid_ref(x);
	case VTPU_EW_SIGMOID_GRAD: return y * x * (1.0 - x);
	case VTPU_EW_TANH: return tanh(x);
	case VTPU_EW_TANH_GRAD: return y * (1.0 - x * x);
	}
	return NAN;
}

/* An ulp of a float near |v| (that of FLT_MIN below it: flushed). */
static double ulp_of(double v)
{
	v = fabs(v);
	if (v < FLT_MIN)
		v = FLT_MIN;
	return ldexp(1.0, ilogb(v) - 23);
}

/*
 * Within the op's bound of the double reference: SIGMOID and TANH two
 * ulps (act_tmpl.h's are within 1.5); the gradients the rounding
 * of three float operations, 1 - x * x's product included.
 */
static int act_close(uint32_t op, float x, float y, float got)
{
	double want = act_ref(op, x, y), tol;

	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	if (op == VTPU_EW_SIGMOID || op == VTPU_EW_TANH)
		/* a denormal result may be flushed to 0 (FTZ) */
		tol = fabs(want) < FLT_MIN ? FLT_MIN : 2 * ulp_of(want);
	else
		tol = 4 * FLT_EPSILON * (fabs(want) + fabs((double)y) *
					 ((double)x * x + fabs(x))) + FLT_MIN;
	return fabs(got - want) <= tol;
}

static int ew_uses_y(uint32_t op)
{
	return op != VTPU_EW_SCALE && op != VTPU_EW_RELU &&
	       op != VTPU_EW_ADD_SCALAR && op != VTPU_EW_SIGMOID &&
	       op != VTPU_EW_TANH;
}

TEST(elementwise)
{
	static const uint64_t counts[] = { 1, 7, 65536, 65536 * 3 + 13 };
	struct execs ex;
	uint32_t op;
	size_t ci;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (op = 0; op < VTPU_EW_COUNT; op++) {
		for (ci = 0; ci < 4; ci++) {
			uint64_t n = counts[ci], i;
			int inplace;

			for (inplace = 0; inplace < 3; inplace++) {
				struct vtpu_bo xb = bo_new(n * 4), yb = bo_new(n * 4);
				struct vtpu_bo zb = bo_new(n * 4);
				float *x = xb.map, *y = yb.map, *z;
				float *x0 = malloc(n * 4), *y0 = malloc(n * 4);
				void *keep = malloc(n * 4);
				int uses_a = op == VTPU_EW_SCALE || op == VTPU_EW_AXPY ||
					     op == VTPU_EW_AXPBY ||
					     op == VTPU_EW_ADD_SCALAR;
				float a = uses_a ? 1.5f : 0.0f;
				float b = op == VTPU_EW_AXPBY ? -0.75f : 0.0f;
				struct vtpu_cmdbuf cb;
				struct vtpu_ref rx, ry, rz;
				long bad = 0, diff = 0;
				int e;

				if (inplace == 2 && !ew_uses_y(op)) {
					vtpu_cpu_bo_destroy(&xb);
					vtpu_cpu_bo_destroy(&yb);
					vtpu_cpu_bo_destroy(&zb);
					free(x0);
					free(y0);
					free(keep);
					continue;
				}
				rng_seed(op * 10 + ci);
				fill_rand(x0, n);
				fill_rand(y0, n);
				if (n > 5) {
					x0[1] = NAN;
					y0[2] = NAN;
					x0[3] = INFINITY;
					x0[4] = -0.0f;
					x0[5] = 0.0f;
				}
				vtpu_cmdbuf_init(&cb);
				rx = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
				ry = ew_uses_y(op) ?
					VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0) :
					VTPU_REF_NONE;
				rz = inplace == 0 ? VTPU_REF(vtpu_cmdbuf_use(&cb, &zb), 0) :
				     inplace == 1 ? rx : ry;
				z = inplace == 0 ? zb.map : inplace == 1 ? x : y;
				vtpu_cmdbuf_elementwise(&cb, op, n, a, b, rx, ry, rz);
				for (e = 0; e < ex.n; e++) {
					memcpy(x, x0, n * 4);
					memcpy(y, y0, n * 4);
					ASSERT_EQ(0, run(ex.cpu[e], &cb));
					diff += same_bits(z, keep, n * 4, e);
				}
				for (i = 0; i < n; i++) {
					float want = ew_ref(op, x0[i], y0[i], a, b);

					if (ew_is_activation(op))
						bad += !act_close(op, x0[i], y0[i],
								  z[i]);
					else if (memcmp(&want, &z[i], 4) &&
						 !(isnan(want) && isnan(z[i])))
						bad++;
				}
				if (ci == 3)
					TH_LOG("elementwise op %u count %llu %s: %ld "
					       "mismatches (%s)", op,
					       (unsigned long long)n,
					       inplace == 0 ? "z" : inplace == 1 ?
					       "in place z=x" : "in place z=y", bad,
					       ew_is_activation(op) ? "ulps" : "exact");
				EXPECT_EQ(0, bad);
				EXPECT_EQ(0, diff);
				vtpu_cmdbuf_fini(&cb);
				vtpu_cpu_bo_destroy(&xb);
				vtpu_cpu_bo_destroy(&yb);
				vtpu_cpu_bo_destroy(&zb);
				free(x0);
				free(y0);
				free(keep);
			}
		}
	}
	execs_fini(&ex);
}

/* Run one activation sub-op over x[n] into z[n] (y: dy, or NULL). */
static void act_run(struct __test_metadata *_metadata, struct vtpu_cpu *cpu,
		    uint32_t op, struct vtpu_bo *xb, struct vtpu_bo *yb,
		    struct vtpu_bo *zb, uint64_t n)
{
	struct vtpu_cmdbuf cb;

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_elementwise(&cb, op, n, 0, 0,
				VTPU_REF(vtpu_cmdbuf_use(&cb, xb), 0),
				yb ? VTPU_REF(vtpu_cmdbuf_use(&cb, yb), 0) :
				     VTPU_REF_NONE,
				VTPU_REF(vtpu_cmdbuf_use(&cb, zb), 0));
	ASSERT_EQ(0, run(cpu, &cb));
	vtpu_cmdbuf_fini(&cb);
}

/*
 * SIGMOID and TANH over [-40, 40] in fine steps, the tails far past their
 * saturation, the cut-over of tanh's polynomial (0.625), e^x's floor
 * (-87.5, below which it is 0; FLT_MIN is e^-87.34) and special values:
 * within 2 ulps of libm in double, bitwise the same on every executor,
 * monotone, in [0, 1] and [-1, 1], saturated exactly at +-1 (and 0),
 * tanh odd bitwise (-0 kept), NaN kept.
 */
TEST(activations)
{
	static const float special[] = {
		0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, -1e-8f, 0.0625f,
		-0.0625f, 0.06249999f, 0.06250001f, 0.625f, -0.625f,
		0.62499994f, -0.62499994f, 0.62500006f, -0.62500006f,
		-87.0f, -87.33f, -87.34f, -87.49f, -87.5f, -87.51f, 87.5f,
		43.66f, -43.76f,
		9.0f, 9.1f, 17.0f, 88.7f,
		-88.7f, 103.9f, -103.9f, 110.0f, -110.0f, 200.0f, -200.0f,
		1e30f, -1e30f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN,
	};
	const uint64_t ns = sizeof(special) / sizeof(special[0]);
	const uint64_t nsweep = 400001, n = nsweep + ns;
	struct vtpu_bo xb = bo_new(n * 4), zb = bo_new(n * 4);
	struct vtpu_bo mb = bo_new(n * 4);
	float *x = xb.map, *z = zb.map, *neg = mb.map;
	void *keep = malloc(n * 4);
	uint32_t ops[2] = { VTPU_EW_SIGMOID, VTPU_EW_TANH }, k;
	struct execs ex;
	uint64_t i;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (i = 0; i < nsweep; i++)
		x[i] = (float)(-40.0 + 80.0 * i / (nsweep - 1));
	memcpy(x + nsweep, special, sizeof(special));
	for (k = 0; k < 2; k++) {
		uint32_t op = ops[k];
		long bad = 0, range = 0, mono = 0, odd = 0, diff = 0;
		double worst = 0;

		for (e = 0; e < ex.n; e++) {
			memset(z, 0, n * 4);
			act_run(_metadata, ex.cpu[e], op, &xb, NULL, &zb, n);
			diff += same_bits(z, keep, n * 4, e);
		}
		for (i = 0; i < n; i++) {
			double want = act_ref(op, x[i], 0), u;

			if (isnan(want)) {
				bad += !isnan(z[i]);
				continue;
			}
			u = fabs(z[i] - want) / ulp_of(want);
			if (u > worst && fabs(want) >= FLT_MIN)
				worst = u;
			bad += !act_close(op, x[i], 0, z[i]);
			range += op == VTPU_EW_SIGMOID ?
				 !(z[i] >= 0.0f && z[i] <= 1.0f) :
				 !(z[i] >= -1.0f && z[i] <= 1.0f);
			if (i && i < nsweep && z[i] < z[i - 1])
				mono++;
		}
		/* saturation, exactly */
		for (i = nsweep; i < n; i++) {
			if (!(fabs(x[i]) >= 20.0f))
				continue;
			/* sigmoid's left tail is 0 only below FLT_MIN */
			if (op == VTPU_EW_SIGMOID && x[i] < 0 &&
			    act_ref(op, x[i], 0) >= FLT_MIN)
				continue;
			if (op == VTPU_EW_TANH)
				bad += z[i] != (x[i] > 0 ? 1.0f : -1.0f);
			else
				bad += z[i] != (x[i] > 0 ? 1.0f : 0.0f);
		}
		if (op == VTPU_EW_TANH) {
			/* odd, bitwise: tanh(-x) == -tanh(x), -0 included */
			for (i = 0; i < n; i++)
				x[i] = -x[i];
			memcpy(keep, z, n * 4);
			act_run(_metadata, ex.cpu[0], op, &xb, NULL, &mb, n);
			for (i = 0; i < n; i++) {
				float m = -((float *)keep)[i];

				x[i] = -x[i];
				if (memcmp(&m, &neg[i], 4) &&
				    !(isnan(m) && isnan(neg[i])))
					odd++;
			}
			EXPECT_TRUE(signbit(z[nsweep + 1]) && z[nsweep + 1] == 0)
			TH_LOG("tanh(-0) = %g", (double)z[nsweep + 1]);
		} else {
			EXPECT_EQ(0.5f, z[nsweep]);
		}
		TH_LOG("%s over %llu points: worst %.2f ulp, %ld outside the "
		       "bound, %ld out of range, %ld not monotone, %ld not odd, "
		       "executors differing %ld",
		       op == VTPU_EW_SIGMOID ? "sigmoid" : "tanh",
		       (unsigned long long)n, worst, bad, range, mono, odd,
		       diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, range);
		EXPECT_EQ(0, mono);
		EXPECT_EQ(0, odd);
		EXPECT_EQ(0, diff);
		EXPECT_GE(2.0, worst);
	}
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&zb);
	vtpu_cpu_bo_destroy(&mb);
	free(keep);
	execs_fini(&ex);
}

/*
 * The gradients, checked against central differences of the forward
 * function in double: for s = SIGMOID(x) (the engine's), SIGMOID_GRAD(s,
 * dy) must be dy * (sigmoid(x + h) - sigmoid(x - h)) / 2h, and the same
 * for TANH. The bound is the engine's float rounding of s (an ulp, which
 * 1 - s and 1 - s^2 magnify where the function saturates) with the
 * difference's own error far below it.
 */
TEST(activation_grads_fd)
{
	const uint64_t n = 65536 * 2 + 11;
	struct vtpu_bo xb = bo_new(n * 4), sb = bo_new(n * 4);
	struct vtpu_bo yb = bo_new(n * 4), gb = bo_new(n * 4);
	float *x = xb.map, *sv = sb.map, *dy = yb.map, *g = gb.map;
	const double h = 1e-4;
	struct execs ex;
	uint32_t k;
	uint64_t i;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	rng_seed(77);
	for (i = 0; i < n; i++) {
		x[i] = 5.0f * frand();	/* to where the slope is 1e-2 */
		dy[i] = frand();
	}
	for (k = 0; k < 2; k++) {
		uint32_t fwd = k ? VTPU_EW_TANH : VTPU_EW_SIGMOID;
		uint32_t bwd = k ? VTPU_EW_TANH_GRAD : VTPU_EW_SIGMOID_GRAD;
		double worst = 0;
		long bad = 0;

		act_run(_metadata, ex.cpu[ex.n - 1], fwd, &xb, NULL, &sb, n);
		act_run(_metadata, ex.cpu[ex.n - 1], bwd, &sb, &yb, &gb, n);
		for (i = 0; i < n; i++) {
			double xd = x[i], fd, tol, err;

			fd = k ? (tanh(xd + h) - tanh(xd - h)) / (2 * h) :
				 (sigmoid_ref(xd + h) - sigmoid_ref(xd - h)) /
					 (2 * h);
			fd *= dy[i];
			/* ulp(s) times d/ds of the gradient, twice, + rounding */
			tol = fabs(dy[i]) * (4 * ulp_of(sv[i]) + 1e-7) +
			      4 * FLT_EPSILON * fabs(fd);
			err = fabs(g[i] - fd);
			if (err / (fabs(dy[i]) + 1e-30) > worst)
				worst = err / (fabs(dy[i]) + 1e-30);
			bad += !(err <= tol);
		}
		TH_LOG("%s against central differences of %s over %llu: "
		       "worst |error| / |dy| %.3g, %ld outside the bound",
		       k ? "tanh_grad" : "sigmoid_grad", k ? "tanh" : "sigmoid",
		       (unsigned long long)n, worst, bad);
		EXPECT_EQ(0, bad);
	}
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&sb);
	vtpu_cpu_bo_destroy(&yb);
	vtpu_cpu_bo_destroy(&gb);
	execs_fini(&ex);
}

/* ---- CAST ------------------------------------------------------------------ */

static uint16_t bf16_ref(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	/* round half to even on the 16 dropped bits */
	{
		uint32_t lo = u & 0xffff, hi = u >> 16;

		if (lo > 0x8000 || (lo == 0x8000 && (hi & 1)))
			hi++;
		return (uint16_t)hi;
	}
}

TEST(cast)
{
	const uint64_t n = 65536 * 2 + 77;
	struct execs ex;
	struct vtpu_bo fb = bo_new(n * 4), hb = bo_new(n * 2 + 2);
	struct vtpu_bo f2b = bo_new(n * 4), ub = bo_new(n + 1);
	struct vtpu_bo f3b = bo_new(n * 4);
	float *f = fb.map, *f2 = f2b.map, *f3 = f3b.map;
	uint16_t *h = (uint16_t *)((char *)hb.map + 2);
	uint8_t *u = (uint8_t *)ub.map + 1;
	void *keep = malloc(n * 4 * 3);
	struct vtpu_cmdbuf cb;
	long bad = 0, diff = 0;
	uint64_t i;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	rng_seed(7);
	for (i = 0; i < n; i++) {
		uint32_t bits = urand();

		/* half the values exactly at a tie, to check even rounding */
		if (i % 2)
			bits = (bits & 0xffff0000u) | 0x8000u;
		memcpy(&f[i], &bits, 4);
		u[i] = (uint8_t)urand();
	}
	f[0] = NAN;
	f[1] = -INFINITY;
	f[2] = 3.4028235e38f;	/* rounds up to inf */
	f[3] = -0.0f;
	f[4] = 1.0f + 1.0f / 256;	/* tie, even: stays 1.0 */
	vtpu_cmdbuf_init(&cb);
	{
		struct vtpu_ref rf = VTPU_REF(vtpu_cmdbuf_use(&cb, &fb), 0);
		struct vtpu_ref rh = VTPU_REF(vtpu_cmdbuf_use(&cb, &hb), 2);
		struct vtpu_ref rf2 = VTPU_REF(vtpu_cmdbuf_use(&cb, &f2b), 0);
		struct vtpu_ref ru = VTPU_REF(vtpu_cmdbuf_use(&cb, &ub), 1);
		struct vtpu_ref rf3 = VTPU_REF(vtpu_cmdbuf_use(&cb, &f3b), 0);

		vtpu_cmdbuf_cast(&cb, VTPU_CAST_F32_TO_BF16, n, 0, 0, rf, rh);
		vtpu_cmdbuf_cast(&cb, VTPU_CAST_BF16_TO_F32, n, 0, 0, rh, rf2);
		vtpu_cmdbuf_cast(&cb, VTPU_CAST_U8_TO_F32, n, 1.0f / 255, -0.5f,
				 ru, rf3);
	}
	for (e = 0; e < ex.n; e++) {
		memset(h, 0, n * 2);
		memset(f2, 0, n * 4);
		memset(f3, 0, n * 4);
		ASSERT_EQ(0, run(ex.cpu[e], &cb));
		diff += same_bits(f2, keep, n * 4, e);
		diff += same_bits(f3, (char *)keep + n * 4, n * 4, e);
	}
	for (i = 0; i < n; i++) {
		uint16_t want = bf16_ref(f[i]);
		uint32_t back = (uint32_t)h[i] << 16, got2;
		float w3 = (float)u[i] * (1.0f / 255) + -0.5f;

		memcpy(&got2, &f2[i], 4);
		if (h[i] != want || got2 != back || memcmp(&w3, &f3[i], 4)) {
			if (bad < 5)
				fprintf(stderr, "  [%llu] %08x -> %04x want %04x\n",
					(unsigned long long)i,
					*(uint32_t *)&f[i], h[i], want);
			bad++;
		}
	}
	TH_LOG("cast f32->bf16->f32 and u8->f32 over %llu: %ld mismatches "
	       "(exact); bf16(1+2^-8) = %04x, bf16(FLT_MAX) = %04x, "
	       "bf16(NaN) = %04x", (unsigned long long)n, bad, h[4], h[2], h[0]);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, diff);
	EXPECT_EQ(0x3f80, h[4]);
	EXPECT_EQ(0x7f80, h[2]);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_bo_destroy(&fb);
	vtpu_cpu_bo_destroy(&hb);
	vtpu_cpu_bo_destroy(&f2b);
	vtpu_cpu_bo_destroy(&ub);
	vtpu_cpu_bo_destroy(&f3b);
	free(keep);
	execs_fini(&ex);
}

/* ---- DROPOUT ------------------------------------------------------------- */

TEST(dropout)
{
	const uint64_t n = 65536 * 3 + 5;
	const float rate = 0.3f, scale = 1.0f / (1.0f - 0.3f);
	struct execs ex;
	struct vtpu_bo xb = bo_new(n * 4), zb = bo_new(n * 4),
		       mb = bo_new(n * 4), sb = bo_new(4);
	float *x = xb.map, *z = zb.map, *mask = mb.map, *step = sb.map;
	float *first = malloc(n * 4);
	void *keep = malloc(n * 4);
	struct vtpu_cmdbuf cb, inplace;
	long bad = 0, diff = 0, same_as_step1 = 0;
	uint64_t i, kept = 0;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	rng_seed(11);
	fill_rand(x, n);
	vtpu_cmdbuf_init(&cb);
	{
		struct vtpu_ref rx = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
		struct vtpu_ref rz = VTPU_REF(vtpu_cmdbuf_use(&cb, &zb), 0);
		struct vtpu_ref rm = VTPU_REF(vtpu_cmdbuf_use(&cb, &mb), 0);
		struct vtpu_ref rs = VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0);

		vtpu_cmdbuf_dropout(&cb, n, rate, 1234, rx, rz, rm, rs);
	}
	*step = 1.0f;
	for (e = 0; e < ex.n; e++) {
		memset(z, 0, n * 4);
		ASSERT_EQ(0, run(ex.cpu[e], &cb));
		diff += same_bits(mask, keep, n * 4, e);
	}
	for (i = 0; i < n; i++) {
		kept += mask[i] != 0.0f;
		if ((mask[i] != 0.0f && mask[i] != scale) ||
		    z[i] != x[i] * mask[i])
			bad++;
	}
	memcpy(first, mask, n * 4);
	/* another step: another mask; the same step again: the same mask */
	*step = 2.0f;
	ASSERT_EQ(0, run(ex.cpu[0], &cb));
	for (i = 0; i < n; i++)
		same_as_step1 += mask[i] == first[i];
	*step = 1.0f;
	ASSERT_EQ(0, run(ex.cpu[0], &cb));
	EXPECT_EQ(0, memcmp(mask, first, n * 4));
	/* in place: z is x */
	vtpu_cmdbuf_init(&inplace);
	{
		struct vtpu_ref rx = VTPU_REF(vtpu_cmdbuf_use(&inplace, &xb), 0);
		struct vtpu_ref rm = VTPU_REF(vtpu_cmdbuf_use(&inplace, &mb), 0);
		struct vtpu_ref rs = VTPU_REF(vtpu_cmdbuf_use(&inplace, &sb), 0);

		vtpu_cmdbuf_dropout(&inplace, n, rate, 1234, rx, rx, rm, rs);
	}
	memcpy(keep, x, n * 4);
	ASSERT_EQ(0, run(ex.cpu[0], &inplace));
	for (i = 0; i < n; i++)
		bad += x[i] != ((float *)keep)[i] * first[i];

	TH_LOG("dropout rate %.1f over %llu: kept %.4f (want %.4f), %ld wrong, "
	       "executors differing %ld, step 2 shares %.3f of step 1's mask",
	       rate, (unsigned long long)n, (double)kept / n, 1.0 - rate, bad,
	       diff, (double)same_as_step1 / n);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, diff);
	EXPECT_GT(0.005, fabs((double)kept / n - (1.0 - rate)));
	/* independent masks agree where both keep or both drop: .7^2+.3^2 */
	EXPECT_GT(0.01, fabs((double)same_as_step1 / n - 0.58));
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&inplace);
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&zb);
	vtpu_cpu_bo_destroy(&mb);
	vtpu_cpu_bo_destroy(&sb);
	free(first);
	free(keep);
	execs_fini(&ex);
}

/* ---- IMAGE_AUGMENT ------------------------------------------------------- */

/* The uAPI's draws, written out again from struct vtpu_cmd_image_augment. */
static uint64_t aug_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void aug_ref_draw(const struct vtpu_augment_desc *d, uint32_t step,
			 uint32_t i, uint32_t *r0, uint32_t *q0, int *flip)
{
	uint64_t key = aug_mix(((uint64_t)d->seed << 32 | step) +
			       0x9e3779b97f4a7c15ull);
	uint64_t h = aug_mix(key + i);

	if (d->flags & VTPU_AUGMENT_RANDOM_CROP) {
		*r0 = (uint32_t)(((h >> 32) * (d->h - d->oh + 1)) >> 32);
		*q0 = (uint32_t)(((h & 0xffffffffull) * (d->w - d->ow + 1)) >>
				 32);
	} else {
		*r0 = (d->h - d->oh) / 2;
		*q0 = (d->w - d->ow) / 2;
	}
	*flip = (d->flags & VTPU_AUGMENT_FLIP_H) && (aug_mix(h) >> 63);
}

static void aug_ref(const struct vtpu_augment_desc *d, uint32_t step,
		    const float *x, float *y)
{
	uint32_t i, r, q, k, r0, q0, col;
	int flip;

	for (i = 0; i < d->n; i++) {
		aug_ref_draw(d, step, i, &r0, &q0, &flip);
		for (r = 0; r < d->oh; r++)
			for (q = 0; q < d->ow; q++)
				for (k = 0; k < d->c; k++) {
					col = q0 + (flip ? d->ow - 1 - q : q);
					*y++ = x[(((size_t)i * d->h + r0 + r) *
						  d->w + col) * d->c + k];
				}
	}
}

/* One IMAGE_AUGMENT of @d on its own buffers; x, y, step refs are set. */
static void aug_stream(struct vtpu_cmdbuf *cb, struct vtpu_augment_desc *d,
		       struct vtpu_bo *xb, struct vtpu_bo *yb,
		       struct vtpu_bo *sb)
{
	vtpu_cmdbuf_init(cb);
	d->x = VTPU_REF(vtpu_cmdbuf_use(cb, xb), 0);
	d->y = VTPU_REF(vtpu_cmdbuf_use(cb, yb), 0);
	d->step = VTPU_REF(vtpu_cmdbuf_use(cb, sb), 0);
	vtpu_cmdbuf_image_augment(cb, d);
}

/*
 * Every output element against the reference's draws, on every executor
 * with 1..4 threads (bitwise the same), at steps 0, 1 and 7 and a step
 * counter that is no step number (read as 0).
 */
TEST(image_augment)
{
	/* n h w c oh ow flags */
	static const uint32_t shapes[][7] = {
		{ 1, 1, 1, 1, 1, 1, 3 }, { 4, 8, 8, 3, 8, 8, 2 },
		{ 9, 10, 12, 3, 7, 9, 3 }, { 9, 10, 12, 3, 7, 9, 0 },
		{ 5, 11, 13, 2, 4, 13, 1 }, { 64, 32, 32, 3, 28, 28, 3 },
		{ 3, 40, 50, 1000, 39, 3, 3 }, { 70000, 3, 2, 1, 2, 1, 3 },
	};
	static const float steps[] = { 0, 1, 7, -3, 0.5f };
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		struct vtpu_augment_desc d = {
			.n = shapes[s][0], .h = shapes[s][1],
			.w = shapes[s][2], .c = shapes[s][3],
			.oh = shapes[s][4], .ow = shapes[s][5],
			.flags = shapes[s][6], .seed = 77 + (uint32_t)s,
		};
		size_t nx = (size_t)d.n * d.h * d.w * d.c;
		size_t ny = (size_t)d.n * d.oh * d.ow * d.c;
		struct vtpu_bo xb = bo_new(nx * 4), yb = bo_new(ny * 4);
		struct vtpu_bo sb = bo_new(4);
		float *want = malloc(ny * 4), *y = yb.map;
		void *keep = malloc(ny * 4);
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		size_t t, i;
		int e;

		rng_seed(900 + s);
		fill_rand(xb.map, nx);
		aug_stream(&cb, &d, &xb, &yb, &sb);
		for (t = 0; t < sizeof(steps) / sizeof(steps[0]); t++) {
			*(float *)sb.map = steps[t];
			aug_ref(&d, steps[t] == 1 || steps[t] == 7 ?
				(uint32_t)steps[t] : 0, xb.map, want);
			for (e = 0; e < ex.n; e++) {
				memset(y, e & 1 ? 0xff : 0, ny * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				diff += same_bits(y, keep, ny * 4, e);
			}
			for (i = 0; i < ny; i++)
				if (memcmp(&y[i], &want[i], 4) && bad++ < 5)
					TH_LOG("element %zu: %g, want %g", i,
					       y[i], want[i]);
		}
		TH_LOG("augment %ux%ux%ux%u to %ux%u flags %u: %ld wrong, "
		       "%ld executors differ", d.n, d.h, d.w, d.c, d.oh, d.ow,
		       d.flags, bad, diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&sb);
		free(want);
		free(keep);
	}
	execs_fini(&ex);
}

/*
 * The draws' distribution, read from the outputs alone: x holds each
 * pixel's index, so an output's first pixel names its offsets and its
 * order its flip. Every row offset, column offset and flip about as often
 * as the others (within 10% of the mean over 40000 images: about 8
 * standard deviations), offsets of one image independent of the step's;
 * without RANDOM_CROP the centre, without FLIP_H no flip.
 */
TEST(image_augment_distribution)
{
	enum { N = 40000, H = 6, W = 9, OH = 3, OW = 4 };
	struct vtpu_augment_desc d = {
		.n = N, .h = H, .w = W, .c = 1, .oh = OH, .ow = OW,
		.flags = VTPU_AUGMENT_RANDOM_CROP | VTPU_AUGMENT_FLIP_H,
		.seed = 5,
	};
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_bo xb = bo_new((size_t)N * H * W * 4);
	struct vtpu_bo yb = bo_new((size_t)N * OH * OW * 4), sb = bo_new(4);
	uint32_t rows[H - OH + 1] = { 0 }, cols[W - OW + 1] = { 0 };
	uint32_t flips = 0, same = 0, i, r0, q0, *first = malloc(N * 4);
	long bad;
	float *x = xb.map, *y = yb.map;
	struct vtpu_cmdbuf cb;
	int flip, round;
	size_t j;

	ASSERT_NE(NULL, cpu);
	for (j = 0; j < (size_t)N * H * W; j++)
		x[j] = (float)(j % (H * W));
	aug_stream(&cb, &d, &xb, &yb, &sb);
	for (round = 0; round < 2; round++) {
		*(float *)sb.map = (float)(round + 3);
		ASSERT_EQ(0, run(cpu, &cb));
		for (i = 0; i < N; i++) {
			const float *p = y + (size_t)i * OH * OW;
			uint32_t v = (uint32_t)p[0];

			flip = p[1] < p[0];
			r0 = v / W;
			q0 = v % W - (flip ? OW - 1 : 0);
			if (round) {
				same += first[i] == v;
				continue;
			}
			first[i] = v;
			rows[r0]++;
			cols[q0]++;
			flips += flip;
		}
	}
	for (i = 0, bad = 0; i <= H - OH; i++)
		if (fabs(rows[i] * (H - OH + 1.0) / N - 1) > 0.1 && ++bad)
			TH_LOG("row offset %u: %u of %u", i, rows[i], N);
	for (i = 0; i <= W - OW; i++)
		if (fabs(cols[i] * (W - OW + 1.0) / N - 1) > 0.1 && ++bad)
			TH_LOG("column offset %u: %u of %u", i, cols[i], N);
	EXPECT_EQ(0, bad);
	EXPECT_GT(0.02, fabs((double)flips / N - 0.5));
	/* another step, new draws: the same first pixel by chance only */
	EXPECT_GT(0.05, (double)same / N);
	TH_LOG("%u images: flipped %u, another step's first pixel the same "
	       "for %u", N, flips, same);
	vtpu_cmdbuf_fini(&cb);

	/* the centre, unflipped: Keras' inference */
	d.flags = 0;
	aug_stream(&cb, &d, &xb, &yb, &sb);
	ASSERT_EQ(0, run(cpu, &cb));
	for (i = 0, same = 0; i < N; i++)
		same += y[(size_t)i * OH * OW] == (H - OH) / 2 * W + (W - OW) / 2 &&
			y[(size_t)i * OH * OW + 1] > y[(size_t)i * OH * OW];
	EXPECT_EQ(N, same);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&yb);
	vtpu_cpu_bo_destroy(&sb);
	free(first);
}

/* ---- REDUCE ---------------------------------------------------------------- */

TEST(reduce)
{
	/* m n ldx-pad */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 0 }, { 7, 13, 3 }, { 1000, 3, 0 }, { 3, 70000, 5 },
		{ 300, 2500, 0 }, { 131072, 10, 0 }, { 1, 100003, 0 },
		/* COLS in groups of rows: 13 (a 1-row last step), 5, 11 */
		{ 65537, 64, 0 }, { 20001, 65, 2 }, { 9000, 300, 0 },
	};
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1];
		uint32_t ldx = n + shapes[s][2], op;

		for (op = 0; op <= VTPU_REDUCE_SUMSQ_ROWS; op++) {
			int b;

			for (b = 0; b < 2; b++) {
				uint32_t ny = op == VTPU_REDUCE_COLS ? n : m, i, j;
				size_t nx = (size_t)(m - 1) * ldx + n;
				struct vtpu_bo xb = bo_new(nx * 4), yb = bo_new(ny * 4);
				float *x = xb.map, *y = yb.map;
				float *y0 = malloc(ny * 4);
				double *ref = calloc(ny, sizeof(double));
				void *keep = malloc(ny * 4);
				float alpha = 0.5f, beta = b ? 0.25f : 0.0f;
				struct vtpu_cmdbuf cb;
				long bad = 0, diff = 0;
				double md = 0;
				int e;

				rng_seed(s * 4 + op * 2 + b);
				/* quarter integers: every partial sum is exact in
				 * f32 (their squares' too, below 2^24 / 32), so any
				 * order gives the exact result */
				for (i = 0; i < nx; i++)
					x[i] = (float)(int)(frand() * 16) / 4;
				for (i = 0; i < ny; i++)
					y0[i] = (float)(int)(frand() * 16) / 4;
				if (!b)	/* beta 0: y not read, NaN vanishes */
					for (i = 0; i < ny; i++)
						y0[i] = NAN;
				for (i = 0; i < m; i++)
					for (j = 0; j < n; j++) {
						double v = alpha * (double)x[(size_t)i * ldx + j];

						if (op == VTPU_REDUCE_SUMSQ_ROWS)
							v *= x[(size_t)i * ldx + j];

						ref[op == VTPU_REDUCE_COLS ? j : i] += v;
					}
				for (i = 0; i < ny; i++)
					if (b)
						ref[i] += beta * (double)y0[i];
				vtpu_cmdbuf_init(&cb);
				vtpu_cmdbuf_reduce(&cb, op, m, n, ldx, alpha, beta,
						   VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0),
						   VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0));
				for (e = 0; e < ex.n; e++) {
					memcpy(y, y0, ny * 4);
					ASSERT_EQ(0, run(ex.cpu[e], &cb));
					diff += same_bits(y, keep, ny * 4, e);
				}
				for (i = 0; i < ny; i++) {
					double d = fabs(y[i] - ref[i]);

					if (!(d == 0))
						bad++;
					if (d > md)
						md = d;
				}
				TH_LOG("reduce %s m=%u n=%u ldx=%u beta=%g: maxdiff %.3g (exact data)",
				       op == VTPU_REDUCE_COLS ? "cols" :
				       op == VTPU_REDUCE_ROWS ? "rows" : "sumsq_rows",
				       m, n, ldx, beta, md);
				EXPECT_EQ(0, bad);
				EXPECT_EQ(0, diff);
				vtpu_cmdbuf_fini(&cb);
				vtpu_cpu_bo_destroy(&xb);
				vtpu_cpu_bo_destroy(&yb);
				free(y0);
				free(ref);
				free(keep);
			}
		}
	}
	execs_fini(&ex);
}

/* ---- CLIP_NORM ---------------------------------------------------------- */

/*
 * Clipping by the global norm of gradients in three buffers, as
 * torch.nn.utils.clip_grad_norm_ and Keras's global_clipnorm do: REDUCE
 * SUMSQ_ROWS (m = 1) sums each buffer's squares into one scalar, beta 0
 * for the first and 1 for the others, then one CLIP_NORM per buffer.
 * Against a double reference for max_norm below the norm (clipped), above
 * it and equal to it (unchanged, bitwise); bitwise the same on every
 * executor.
 */
TEST(clip_norm_global)
{
	static const uint64_t sizes[3] = { 7, 65536 * 3 + 5, 1000 };
	static const double ratios[3] = { 0.25, 2.0, 1.0 };
	struct vtpu_bo gb[3], sb = bo_new(4);
	float *g0[3], *keep[3], *sumsq = sb.map;
	double ss = 0, norm;
	struct execs ex;
	uint32_t k, r;
	uint64_t i;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	rng_seed(31);
	for (k = 0; k < 3; k++) {
		gb[k] = bo_new(sizes[k] * 4);
		g0[k] = malloc(sizes[k] * 4);
		keep[k] = malloc(sizes[k] * 4);
		for (i = 0; i < sizes[k]; i++) {
			g0[k][i] = frand() * (k + 1);
			ss += (double)g0[k][i] * g0[k][i];
		}
	}
	norm = sqrt(ss);
	for (r = 0; r < 3; r++) {
		/* equal: the float nearest sqrt(ss) is the norm the op sees */
		float max_norm = r == 2 ? sqrtf((float)ss) : (float)(norm * ratios[r]);
		double scale;
		long bad = 0, diff = 0;
		double worst = 0;
		struct vtpu_cmdbuf cb;
		struct vtpu_ref rs;

		vtpu_cmdbuf_init(&cb);
		rs = VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0);
		for (k = 0; k < 3; k++)
			vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_SUMSQ_ROWS, 1,
					   (uint32_t)sizes[k], 0, 1.0f,
					   k ? 1.0f : 0.0f,
					   VTPU_REF(vtpu_cmdbuf_use(&cb, &gb[k]), 0),
					   rs);
		for (k = 0; k < 3; k++)
			vtpu_cmdbuf_clip_norm(&cb, sizes[k], max_norm, rs,
					      VTPU_REF(vtpu_cmdbuf_use(&cb, &gb[k]), 0));
		ASSERT_EQ(0, cb.error);
		for (e = 0; e < ex.n; e++) {
			*sumsq = NAN;	/* beta 0: not read */
			for (k = 0; k < 3; k++)
				memcpy(gb[k].map, g0[k], sizes[k] * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			for (k = 0; k < 3; k++)
				diff += same_bits(gb[k].map, keep[k],
						  sizes[k] * 4, e);
		}
		EXPECT_GE(1e-6, fabs(*sumsq - ss) / ss)
		TH_LOG("sumsq %.9g, want %.9g", (double)*sumsq, ss);
		scale = norm > max_norm ? max_norm / norm : 1.0;
		for (k = 0; k < 3; k++) {
			const float *g = gb[k].map;

			for (i = 0; i < sizes[k]; i++) {
				double want = g0[k][i] * scale;
				double err = fabs(g[i] - want);

				if (scale == 1.0)
					bad += g[i] != g0[k][i];
				else
					bad += !(err <= 1e-6 * fabs(want) +
							1e-30);
				if (want != 0 && err / fabs(want) > worst)
					worst = err / fabs(want);
			}
		}
		TH_LOG("clip_norm over 3 buffers, norm %.6g, max_norm %.6g: "
		       "scale %.6g, worst relative error %.3g, %ld wrong, "
		       "executors differing %ld", norm, (double)max_norm, scale,
		       worst, bad, diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
	}
	for (k = 0; k < 3; k++) {
		vtpu_cpu_bo_destroy(&gb[k]);
		free(g0[k]);
		free(keep[k]);
	}
	vtpu_cpu_bo_destroy(&sb);
	execs_fini(&ex);
}

/*
 * CLIP_NORM's rule on a given sumsq: scaled by max_norm / sqrt(sumsq)
 * exactly when that norm is above max_norm; +Inf scales by 0 (torch's
 * max_norm / inf; an Inf element becomes NaN); NaN and a negative sumsq
 * (NaN norm) leave x unchanged; a denormal sumsq reads as 0 (DAZ).
 */
TEST(clip_norm_rule)
{
	static const struct { float sumsq, max_norm, scale; } cases[] = {
		{ 4.0f, 1.0f, 0.5f },		/* norm 2: halved, exactly */
		{ 4.0f, 2.0f, 1.0f },		/* norm == max_norm: kept */
		{ 4.0f, 3.0f, 1.0f },		/* below: kept */
		{ 0.0f, 1.0f, 1.0f },		/* all zero gradients */
		{ 1e-40f, 2e-38f, 1.0f },	/* denormal: 0 */
		{ 0x1p100f, 0x1p-10f, 0x1p-60f },	/* norm 2^50 */
		{ INFINITY, 1.0f, 0.0f },	/* overflowed: 0 */
		{ NAN, 1.0f, 1.0f },		/* NaN: kept */
		{ -4.0f, 1.0f, 1.0f },		/* negative: NaN norm, kept */
	};
	const uint64_t n = 65536 * 2 + 3;
	struct vtpu_bo xb = bo_new(n * 4), sb = bo_new(4);
	float *x = xb.map, *x0 = malloc(n * 4);
	struct execs ex;
	size_t c;
	uint64_t i;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	rng_seed(5);
	fill_rand(x0, n);
	x0[1] = INFINITY;
	x0[2] = NAN;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct vtpu_cmdbuf cb;
		long bad = 0;

		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_clip_norm(&cb, n, cases[c].max_norm,
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0),
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0));
		for (e = 0; e < ex.n; e++) {
			*(float *)sb.map = cases[c].sumsq;
			memcpy(x, x0, n * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			for (i = 0; i < n; i++) {
				float want = cases[c].scale == 1.0f ? x0[i] :
					     x0[i] * cases[c].scale;

				if (memcmp(&want, &x[i], 4) &&
				    !(isnan(want) && isnan(x[i])))
					bad++;
			}
		}
		TH_LOG("clip_norm sumsq %g max_norm %g: scale %g, %ld wrong",
		       (double)cases[c].sumsq, (double)cases[c].max_norm,
		       (double)cases[c].scale, bad);
		EXPECT_EQ(0, bad);
		vtpu_cmdbuf_fini(&cb);
	}
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&sb);
	free(x0);
	execs_fini(&ex);
}

TEST_HARNESS_MAIN
