// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the sequence models' softmax ops: SOFTMAX (masked by
 * lengths per group of rows, causal), SOFTMAX_GRAD (against a double
 * reference and against finite differences of the masked softmax), and
 * SOFTMAX_XENT's mean over the valid rows (VTPU_XENT_MEAN_VALID), and
 * ARGMAX (greedy decoding: logits to the next step's token ids), through
 * libvtpu's cpu backend on every SIMD level with 1 to 4 threads: bitwise
 * the same on all of them, and close to plain C references in double.
 */
#include <float.h>

#include "test_ops.h"

/* Row r's valid columns, as the uAPI defines them. */
static uint32_t ref_valid(uint32_t r, uint32_t n, uint32_t g, uint32_t flags,
			  const uint32_t *len)
{
	uint32_t v = n;

	if ((flags & VTPU_SOFTMAX_LENGTHS) && len[r / g] < v)
		v = len[r / g];
	if ((flags & VTPU_SOFTMAX_CAUSAL) && r % g < v)
		v = r % g + 1;
	return v;
}

/* The masked softmax of one row in double. */
static void ref_softmax_row(const double *x, double *y, uint32_t n,
			    uint32_t v)
{
	double mx, sum = 0;
	uint32_t j;

	for (j = 0; j < n; j++)
		y[j] = 0;
	if (!v)
		return;
	mx = x[0];
	for (j = 1; j < v; j++)
		if (x[j] > mx)
			mx = x[j];
	for (j = 0; j < v; j++)
		sum += exp(x[j] - mx);
	for (j = 0; j < v; j++)
		y[j] = exp(x[j] - mx) / sum;
}

struct sm_bufs {
	struct vtpu_bo x, y, dy, dx, len;
};

static void sm_bufs_new(struct sm_bufs *b, size_t mn, size_t groups)
{
	b->x = bo_new(mn * 4);
	b->y = bo_new(mn * 4);
	b->dy = bo_new(mn * 4);
	b->dx = bo_new(mn * 4);
	b->len = bo_new(groups * 4);
}

static void sm_bufs_free(struct sm_bufs *b)
{
	vtpu_cpu_bo_destroy(&b->x);
	vtpu_cpu_bo_destroy(&b->y);
	vtpu_cpu_bo_destroy(&b->dy);
	vtpu_cpu_bo_destroy(&b->dx);
	vtpu_cpu_bo_destroy(&b->len);
}

/* SOFTMAX (x -> y), or SOFTMAX_GRAD (y, dy -> dx) with @grad. */
static void sm_stream(struct vtpu_cmdbuf *cb, struct sm_bufs *b, uint32_t m,
		      uint32_t n, uint32_t g, uint32_t flags, int grad)
{
	struct vtpu_softmax_desc d = { .m = m, .n = n, .rows_per_group = g,
				       .flags = flags };

	vtpu_cmdbuf_init(cb);
	d.x = VTPU_REF(vtpu_cmdbuf_use(cb, grad ? &b->dx : &b->x), 0);
	d.y = VTPU_REF(vtpu_cmdbuf_use(cb, &b->y), 0);
	if (grad)
		d.dy = VTPU_REF(vtpu_cmdbuf_use(cb, &b->dy), 0);
	if (flags & VTPU_SOFTMAX_LENGTHS)
		d.lengths = VTPU_REF(vtpu_cmdbuf_use(cb, &b->len), 0);
	if (grad)
		vtpu_cmdbuf_softmax_grad(cb, &d);
	else
		vtpu_cmdbuf_softmax(cb, &d);
}

/* Masked outputs must be +0.0f exactly; returns how many are not. */
static long masked_not_zero(const float *out, uint32_t m, uint32_t n,
			    uint32_t g, uint32_t flags, const uint32_t *len)
{
	long bad = 0;
	uint32_t i, j;

	for (i = 0; i < m; i++)
		for (j = ref_valid(i, n, g, flags, len); j < n; j++) {
			uint32_t bits;

			memcpy(&bits, &out[(size_t)i * n + j], 4);
			bad += bits != 0;
		}
	return bad;
}

/*
 * SOFTMAX and SOFTMAX_GRAD against double references, every mask: no
 * lengths, lengths 0, 1, n - 1, n, n + 1 and 2^32 - 1 per group, groups
 * of 1 to 7 rows, causal; up to 69 chunks (more than the 64 tiles).
 */
TEST(softmax_masked)
{
	/* m n g */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 }, { 6, 5, 1 }, { 12, 9, 3 }, { 35, 17, 7 },
		{ 64, 40, 8 }, { 3, 65536, 1 }, { 1100, 1000, 50 },
		{ 2000, 3, 4 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	TH_LOG("%d executors", ex.n);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1], g = shapes[s][2];
		uint32_t ng = (m + g - 1) / g, i, j, flags;
		size_t mn = (size_t)m * n;
		struct sm_bufs b;
		float *x, *y, *dy, *dx;
		uint32_t *len;
		double *rx = malloc(n * 8), *ry = malloc(mn * 8);
		double *rdx = malloc(mn * 8);
		void *k1 = malloc(mn * 4), *k2 = malloc(mn * 4);

		sm_bufs_new(&b, mn, ng);
		x = b.x.map, y = b.y.map, dy = b.dy.map, dx = b.dx.map;
		len = b.len.map;
		rng_seed(77 + s);
		for (i = 0; i < mn; i++) {
			x[i] = frand() * 10;
			dy[i] = frand();
		}
		for (i = 0; i < ng; i++) {
			/* 0, 1, n - 1, n, n + 1, 2^32 - 1, or any below n */
			static const uint32_t kinds = 7;
			uint32_t k = urand() % kinds;

			len[i] = k == 0 ? 0 : k == 1 ? 1 : k == 2 ? n - 1 :
				 k == 3 ? n : k == 4 ? n + 1 :
				 k == 5 ? 0xffffffffu : urand() % n;
		}
		if (ng > 6) {	/* each at least once */
			len[0] = 0, len[1] = 1, len[2] = n, len[3] = n + 1;
			len[4] = 0xffffffffu, len[5] = n / 2;
		}
		for (flags = 0; flags <= VTPU_SOFTMAX_FLAGS; flags++) {
			long bad = 0, diff = 0, zero = 0;
			double mdy, mdx;
			struct vtpu_cmdbuf cb, cbg;
			int e;

			for (i = 0; i < m; i++) {
				uint32_t v = ref_valid(i, n, g, flags, len);

				for (j = 0; j < n; j++)
					rx[j] = x[(size_t)i * n + j];
				ref_softmax_row(rx, ry + (size_t)i * n, n, v);
			}
			sm_stream(&cb, &b, m, n, g, flags, 0);
			sm_stream(&cbg, &b, m, n, g, flags, 1);
			for (e = 0; e < ex.n; e++) {
				memset(y, 0xff, mn * 4);
				memset(dx, 0xff, mn * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				ASSERT_EQ(0, run(ex.cpu[e], &cbg));
				diff += same_bits(y, k1, mn * 4, e);
				diff += same_bits(dx, k2, mn * 4, e);
			}
			vtpu_cmdbuf_fini(&cb);
			vtpu_cmdbuf_fini(&cbg);
			/* dx's reference from the op's y and dy, in double */
			for (i = 0; i < m; i++) {
				uint32_t v = ref_valid(i, n, g, flags, len);
				const float *yr = y + (size_t)i * n;
				const float *dyr = dy + (size_t)i * n;
				double sum = 0;

				for (j = 0; j < n; j++)
					rdx[(size_t)i * n + j] = 0;
				for (j = 0; j < v; j++)
					sum += (double)dyr[j] * yr[j];
				for (j = 0; j < v; j++)
					rdx[(size_t)i * n + j] =
						yr[j] * (dyr[j] - sum);
			}
			mdy = maxdiff(y, ry, mn, 2e-7, &bad);
			mdx = maxdiff(dx, rdx, mn, 2e-7, &bad);
			zero += masked_not_zero(y, m, n, g, flags, len);
			zero += masked_not_zero(dx, m, n, g, flags, len);
			TH_LOG("softmax m=%u n=%u g=%u flags %u: y maxdiff "
			       "%.3g, dx maxdiff %.3g", m, n, g, flags, mdy,
			       mdx);
			EXPECT_EQ(0, bad);
			EXPECT_EQ(0, diff);
			EXPECT_EQ(0, zero);
		}
		sm_bufs_free(&b);
		free(rx);
		free(ry);
		free(rdx);
		free(k1);
		free(k2);
	}
	execs_fini(&ex);
}

/* A decoder's mask, by hand: 2 sequences of 3 queries, lengths 2 and 3. */
TEST(softmax_causal_by_hand)
{
	const uint32_t m = 6, n = 3;
	struct sm_bufs b;
	struct vtpu_cmdbuf cb;
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);
	/* valid columns per row: min(length, query + 1) */
	static const uint32_t want[6] = { 1, 2, 2, 1, 2, 3 };
	float *y;
	uint32_t i, j;

	ASSERT_NE(NULL, cpu);
	sm_bufs_new(&b, m * n, 2);
	for (i = 0; i < m * n; i++)
		((float *)b.x.map)[i] = 0.5f;	/* uniform over the valid */
	((uint32_t *)b.len.map)[0] = 2;
	((uint32_t *)b.len.map)[1] = 3;
	sm_stream(&cb, &b, m, n, 3,
		  VTPU_SOFTMAX_LENGTHS | VTPU_SOFTMAX_CAUSAL, 0);
	ASSERT_EQ(0, run(cpu, &cb));
	y = b.y.map;
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			EXPECT_EQ(j < want[i] ? 1.0f / want[i] : 0.0f,
				  y[i * n + j])
			TH_LOG("row %u column %u: %g", i, j, y[i * n + j]);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(cpu);
	sm_bufs_free(&b);
}

/* Logits of +-1e30, -inf and a masked NaN: finite, no NaN. */
TEST(softmax_large_logits)
{
	const uint32_t m = 3, n = 4;
	struct sm_bufs b;
	struct vtpu_cmdbuf cb, cbg;
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	float *x, *y, *dx;
	uint32_t i;

	ASSERT_NE(NULL, cpu);
	sm_bufs_new(&b, m * n, m);
	x = b.x.map, y = b.y.map, dx = b.dx.map;
	/* row 0: two at 1e30; row 1: -1e30 and 0; row 2: NaN masked off */
	x[0] = 1e30f, x[1] = -1e30f, x[2] = 0, x[3] = 1e30f;
	x[4] = -1e30f, x[5] = 0, x[6] = -INFINITY, x[7] = -1e30f;
	x[8] = 1e30f, x[9] = -1e30f, x[10] = NAN, x[11] = NAN;
	for (i = 0; i < m * n; i++)
		((float *)b.dy.map)[i] = 1.0f + i;
	((uint32_t *)b.len.map)[0] = 4;
	((uint32_t *)b.len.map)[1] = 4;
	((uint32_t *)b.len.map)[2] = 2;
	sm_stream(&cb, &b, m, n, 1, VTPU_SOFTMAX_LENGTHS, 0);
	sm_stream(&cbg, &b, m, n, 1, VTPU_SOFTMAX_LENGTHS, 1);
	ASSERT_EQ(0, run(cpu, &cb));
	ASSERT_EQ(0, run(cpu, &cbg));
	for (i = 0; i < m * n; i++) {
		EXPECT_TRUE(isfinite(y[i])) TH_LOG("y[%u] = %g", i, y[i]);
		EXPECT_TRUE(isfinite(dx[i])) TH_LOG("dx[%u] = %g", i, dx[i]);
	}
	EXPECT_EQ(0.5f, y[0]);
	EXPECT_EQ(0.0f, y[1]);
	EXPECT_EQ(0.0f, y[2]);
	EXPECT_EQ(0.5f, y[3]);
	EXPECT_EQ(1.0f, y[5]);
	EXPECT_EQ(0.0f, y[4] + y[6] + y[7]);
	EXPECT_EQ(1.0f, y[8]);
	EXPECT_EQ(0.0f, y[9] + y[10] + y[11]);
	/* dx = y (dy - sum dy y): row 0 = 0.5 (1 - 2.5), 0.5 (4 - 2.5) */
	EXPECT_EQ(-0.75f, dx[0]);
	EXPECT_EQ(0.75f, dx[3]);
	EXPECT_EQ(0.0f, dx[8]);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cbg);
	vtpu_cpu_destroy(cpu);
	sm_bufs_free(&b);
}

/*
 * SOFTMAX_GRAD is the Jacobian-vector product of the masked softmax:
 * dx_i = d/dx_i sum_j dy_j softmax(x)_j, by central differences of the
 * double reference forward (masked x change nothing: dx = 0 there).
 */
TEST(softmax_grad_finite_differences)
{
	const uint32_t m = 8, n = 6, g = 4;
	const uint32_t flags = VTPU_SOFTMAX_LENGTHS | VTPU_SOFTMAX_CAUSAL;
	struct sm_bufs b;
	struct vtpu_cmdbuf cb, cbg;
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	double rx[6], yp[6], ym[6], md = 0;
	float *x, *dy, *dx;
	uint32_t *len, i, j, k;
	long bad = 0;

	ASSERT_NE(NULL, cpu);
	sm_bufs_new(&b, m * n, 2);
	x = b.x.map, dy = b.dy.map, dx = b.dx.map, len = b.len.map;
	rng_seed(9);
	for (i = 0; i < m * n; i++) {
		x[i] = frand() * 3;
		dy[i] = frand();
	}
	len[0] = 3;
	len[1] = 100;
	sm_stream(&cb, &b, m, n, g, flags, 0);
	sm_stream(&cbg, &b, m, n, g, flags, 1);
	ASSERT_EQ(0, run(cpu, &cb));
	ASSERT_EQ(0, run(cpu, &cbg));
	for (i = 0; i < m; i++) {
		uint32_t v = ref_valid(i, n, g, flags, len);

		for (k = 0; k < n; k++) {
			const double h = 1e-5;
			double fp = 0, fm = 0, fd, err;

			for (j = 0; j < n; j++)
				rx[j] = x[i * n + j];
			rx[k] += h;
			ref_softmax_row(rx, yp, n, v);
			rx[k] -= 2 * h;
			ref_softmax_row(rx, ym, n, v);
			for (j = 0; j < n; j++) {
				fp += dy[i * n + j] * yp[j];
				fm += dy[i * n + j] * ym[j];
			}
			fd = (fp - fm) / (2 * h);
			err = fabs(fd - dx[i * n + k]);
			if (err > md)
				md = err;
			if (err > 1e-6 || (k >= v && dx[i * n + k] != 0.0f))
				bad++;
		}
	}
	TH_LOG("softmax_grad vs finite differences: maxdiff %.3g", md);
	EXPECT_EQ(0, bad);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cbg);
	vtpu_cpu_destroy(cpu);
	sm_bufs_free(&b);
}

/* ---- SOFTMAX_XENT with VTPU_XENT_MEAN_VALID -------------------------------- */

/*
 * loss and dlogits scaled by scale / (rows with a label < n): mixed
 * valid and ignored rows, more than one counting step (m > 65536), none
 * valid; bitwise the same on every executor.
 */
TEST(xent_mean_valid)
{
	/* m n, ignored one row in `skip` (0: all ignored) */
	static const uint32_t shapes[][3] = {
		{ 5, 10, 2 }, { 37, 3, 3 }, { 300, 1000, 4 }, { 70000, 3, 5 },
		{ 3, 65536, 2 }, { 16, 7, 0 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1];
		uint32_t skip = shapes[s][2], i, j, valid = 0;
		size_t mn = (size_t)m * n;
		struct vtpu_bo lb = bo_new(mn * 4), yb = bo_new(m * 4);
		struct vtpu_bo db = bo_new(mn * 4), sb = bo_new(16);
		float *x = lb.map, *d = db.map, *loss = sb.map;
		uint32_t *lab = yb.map;
		double *rd = malloc(mn * 8), rloss = 0;
		void *k1 = malloc(mn * 4);
		float scale = 0.5f, keep_loss = 0;
		struct vtpu_xent_desc xd = {
			.m = m, .n = n, .scale = scale,
			.flags = VTPU_XENT_DLOGITS | VTPU_XENT_MEAN_VALID,
		};
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		double mdd;
		int e;

		rng_seed(300 + s);
		for (i = 0; i < mn; i++)
			x[i] = frand() * 8;
		for (i = 0; i < m; i++) {
			lab[i] = urand() % n;
			if (!skip || i % skip == 1)
				lab[i] = i % 2 ? n : 0xfffffff0u;
			valid += lab[i] < n;
		}
		for (i = 0; i < m; i++) {
			const float *r = x + (size_t)i * n;
			double mx = r[0], sum = 0;

			for (j = 1; j < n; j++)
				if (r[j] > mx)
					mx = r[j];
			for (j = 0; j < n; j++)
				sum += exp(r[j] - mx);
			for (j = 0; j < n; j++)
				rd[(size_t)i * n + j] = lab[i] < n ?
					(double)scale / valid *
					(exp(r[j] - mx) / sum - (j == lab[i])) : 0;
			if (lab[i] < n)
				rloss += mx + log(sum) - r[lab[i]];
		}
		rloss = valid ? rloss * scale / valid : 0;

		vtpu_cmdbuf_init(&cb);
		xd.logits = VTPU_REF(vtpu_cmdbuf_use(&cb, &lb), 0);
		xd.labels = VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0);
		xd.dlogits = VTPU_REF(vtpu_cmdbuf_use(&cb, &db), 0);
		xd.loss = VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0);
		xd.correct = VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 8);
		vtpu_cmdbuf_softmax_xent(&cb, &xd);
		for (e = 0; e < ex.n; e++) {
			memset(d, 0xff, mn * 4);
			memset(sb.map, 0xff, 16);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(d, k1, mn * 4, e);
			if (e == 0)
				keep_loss = *loss;
			diff += memcmp(&keep_loss, loss, 4) != 0;
		}
		vtpu_cmdbuf_fini(&cb);
		mdd = maxdiff(d, rd, mn, 2e-6 / (valid ? valid : 1), &bad);
		TH_LOG("xent mean_valid m=%u n=%u, %u valid: loss %.9g want "
		       "%.9g, dlogits maxdiff %.3g", m, n, valid, *loss, rloss,
		       mdd);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_LE(fabs(*loss - rloss), 1e-6 * (1 + fabs(rloss)));
		if (!valid) {
			EXPECT_EQ(0.0f, *loss);
			for (i = 0; i < mn; i++)
				bad += d[i] != 0.0f;
			EXPECT_EQ(0, bad);
		}
		vtpu_cpu_bo_destroy(&lb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&db);
		vtpu_cpu_bo_destroy(&sb);
		free(rd);
		free(k1);
	}
	execs_fini(&ex);
}

/* ---- ARGMAX -------------------------------------------------------------- */

/* x as the engine reads it: denormals are 0 (DAZ) */
static double ref_daz(float v)
{
	return v != 0.0f && fabsf(v) < FLT_MIN ? 0.0 : v;
}

/* The first maximum of a row: the first NaN, else the first max (>). */
static uint32_t ref_argmax(const float *x, uint32_t n)
{
	uint32_t j, best = 0;
	double b = ref_daz(x[0]);

	for (j = 0; j < n; j++)
		if (isnan(x[j]))
			return j;
	for (j = 1; j < n; j++)
		if (ref_daz(x[j]) > b)
			b = ref_daz(x[j]), best = j;
	return best;
}

/* Row @r's values: one of 9 kinds, ties, NaN and infinities among them. */
static void argmax_row(float *x, uint32_t n, uint32_t r)
{
	uint32_t j, p = urand() % n, q = urand() % n;

	for (j = 0; j < n; j++) {
		switch (r % 9) {
		case 0:	/* distinct-ish random */
			x[j] = frand() * 100;
			break;
		case 1:	/* few values: many ties */
			x[j] = (float)(urand() % 4);
			break;
		case 2:	/* all equal */
			x[j] = 2.5f;
			break;
		case 3:	/* NaNs (p and q) among numbers and +inf */
			x[j] = urand() % 7 ? frand() : INFINITY;
			break;
		case 4:	/* all -inf */
			x[j] = -INFINITY;
			break;
		case 5:	/* +inf at p and q */
			x[j] = frand() * 1e38f;
			break;
		case 6:	/* +0, -0 and denormals: all ties under DAZ */
			x[j] = urand() % 3 == 0 ? -0.0f :
			       urand() % 2 ? 1e-40f : -1e-40f;
			break;
		case 7:	/* the max at the last column */
			x[j] = -frand() - 2;
			break;
		default:	/* a tie of p and q, steps apart in long rows */
			x[j] = frand();
			break;
		}
	}
	if (r % 9 == 3) {
		x[p] = NAN;
		x[q] = -NAN;
	} else if (r % 9 == 5) {
		x[p] = INFINITY;
		x[q] = INFINITY;
	} else if (r % 9 == 7) {
		x[n - 1] = 0.0f;
	} else if (r % 9 == 8) {
		x[p] = 7.0f;
		x[q] = 7.0f;
	}
}

/*
 * ARGMAX against the reference: every row kind, ldx > n (the columns past
 * n are NaN: never read), rows longer than a step (a maximum, a tie and a
 * NaN in a later step), more rows than one tile; y starts as garbage (the
 * later steps read the earlier ones' index); bitwise the same on every
 * executor, 1 to 4 threads.
 */
TEST(argmax_reference)
{
	/* m n ldx */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 }, { 9, 1, 3 }, { 18, 5, 9 }, { 45, 100, 100 },
		{ 300, 257, 300 }, { 9, 200000, 200003 }, { 70000, 3, 4 },
		{ 4, 65537, 65537 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1];
		uint32_t ldx = shapes[s][2], i, j;
		size_t mx = (size_t)(m - 1) * ldx + n;
		struct vtpu_bo xb = bo_new(mx * 4), yb = bo_new(m * 4);
		float *x = xb.map;
		uint32_t *y = yb.map, *want = malloc(m * 4);
		void *keep = malloc(m * 4);
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		int e;

		rng_seed(500 + s);
		for (i = 0; i < m; i++) {
			argmax_row(x + (size_t)i * ldx, n, i);
			for (j = n; j < ldx && i + 1 < m; j++)
				x[(size_t)i * ldx + j] = NAN;
			want[i] = ref_argmax(x + (size_t)i * ldx, n);
		}
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_argmax(&cb, m, n, ldx,
				   VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0),
				   VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0));
		for (e = 0; e < ex.n; e++) {
			memset(y, e & 1 ? 0xff : 0x7f, m * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(y, keep, m * 4, e);
		}
		for (i = 0; i < m; i++)
			if (y[i] != want[i] && bad++ < 5)
				TH_LOG("row %u (kind %u): %u, want %u", i,
				       i % 9, y[i], want[i]);
		TH_LOG("argmax m=%u n=%u ldx=%u: %ld wrong", m, n, ldx, bad);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&yb);
		free(want);
		free(keep);
	}
	execs_fini(&ex);
}

/* The NaN and tie rules by hand, as numpy.argmax answers them. */
TEST(argmax_by_hand)
{
	static const float rows[][4] = {
		{ 1, 3, 3, 2 },			/* tie: 1 */
		{ -INFINITY, -INFINITY, -INFINITY, -INFINITY },	/* 0 */
		{ 1, NAN, INFINITY, NAN },	/* first NaN: 1 */
		{ INFINITY, 1, INFINITY, NAN },	/* NaN beats +inf: 3 */
		{ -0.0f, 0.0f, -1, -0.0f },	/* +0 ties -0: 0 */
		{ -5, -4, -3, -2 },		/* 3 */
	};
	static const uint32_t want[] = { 1, 0, 1, 3, 0, 3 };
	const uint32_t m = 6, n = 4;
	struct vtpu_bo xb = bo_new(sizeof(rows)), yb = bo_new(m * 4);
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_cmdbuf cb;
	uint32_t i;

	ASSERT_NE(NULL, cpu);
	memcpy(xb.map, rows, sizeof(rows));
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_argmax(&cb, m, n, 0, VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0),
			   VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0));
	ASSERT_EQ(0, run(cpu, &cb));
	for (i = 0; i < m; i++)
		EXPECT_EQ(want[i], ((uint32_t *)yb.map)[i])
			TH_LOG("row %u", i);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&xb);
	vtpu_cpu_bo_destroy(&yb);
}

/*
 * Greedy decoding's step in one stream: ARGMAX's indices are the next
 * EMBEDDING's ids, so the embedded rows are the table's rows at the
 * logits' maxima.
 */
TEST(argmax_feeds_embedding)
{
	const uint32_t b = 5, vocab = 37, dim = 6;
	struct vtpu_bo lb = bo_new(b * vocab * 4), ib = bo_new(b * 4);
	struct vtpu_bo tb = bo_new(vocab * dim * 4), eb = bo_new(b * dim * 4);
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);
	float *logits = lb.map, *table = tb.map, *emb = eb.map;
	struct vtpu_cmdbuf cb;
	uint32_t i, j, want;
	int il, ii;

	ASSERT_NE(NULL, cpu);
	rng_seed(41);
	fill_rand(logits, b * vocab);
	fill_rand(table, vocab * dim);
	vtpu_cmdbuf_init(&cb);
	il = vtpu_cmdbuf_use(&cb, &lb);
	ii = vtpu_cmdbuf_use(&cb, &ib);
	vtpu_cmdbuf_argmax(&cb, b, vocab, 0, VTPU_REF(il, 0), VTPU_REF(ii, 0));
	vtpu_cmdbuf_embedding(&cb, b, vocab, dim, VTPU_REF(ii, 0),
			      VTPU_REF(vtpu_cmdbuf_use(&cb, &tb), 0),
			      VTPU_REF(vtpu_cmdbuf_use(&cb, &eb), 0));
	ASSERT_EQ(0, run(cpu, &cb));
	for (i = 0; i < b; i++) {
		want = ref_argmax(logits + i * vocab, vocab);
		EXPECT_EQ(want, ((uint32_t *)ib.map)[i]);
		for (j = 0; j < dim; j++)
			EXPECT_EQ(table[want * dim + j], emb[i * dim + j]);
	}
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&lb);
	vtpu_cpu_bo_destroy(&ib);
	vtpu_cpu_bo_destroy(&tb);
	vtpu_cpu_bo_destroy(&eb);
}

TEST_HARNESS_MAIN
