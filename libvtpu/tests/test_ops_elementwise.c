// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the element-wise ops (ELEMENTWISE, CAST, DROPOUT,
 * REDUCE) through libvtpu's cpu backend, on every executor (test_ops.h),
 * against plain C references in this file, NaN/Inf included; and that
 * the engine flushes denormals (vtpu_denormals.h's check, which
 * vtpu_submit runs on the device).
 */
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

static int ew_uses_y(uint32_t op)
{
	return op != VTPU_EW_SCALE && op != VTPU_EW_RELU &&
	       op != VTPU_EW_ADD_SCALAR;
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

					if (memcmp(&want, &z[i], 4) &&
					    !(isnan(want) && isnan(z[i])))
						bad++;
				}
				if (ci == 3)
					TH_LOG("elementwise op %u count %llu %s: %ld "
					       "mismatches (exact)", op,
					       (unsigned long long)n,
					       inplace == 0 ? "z" : inplace == 1 ?
					       "in place z=x" : "in place z=y", bad);
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

/* ---- REDUCE ---------------------------------------------------------------- */

TEST(reduce)
{
	/* m n ldx-pad */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 0 }, { 7, 13, 3 }, { 1000, 3, 0 }, { 3, 70000, 5 },
		{ 300, 2500, 0 }, { 131072, 10, 0 }, { 1, 100003, 0 },
	};
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1];
		uint32_t ldx = n + shapes[s][2], op;

		for (op = 0; op < 2; op++) {
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
				 * f32, so any order gives the exact result */
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
				       op ? "rows" : "cols", m, n, ldx, beta, md);
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

TEST_HARNESS_MAIN
