// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ops_batchnorm: BATCHNORM (training and inference) and
 * BATCHNORM_GRAD against double references, the gradient against finite
 * differences of the double forward, bitwise equal on every executor.
 */
#include "test_ops.h"

struct bn_bufs {
	struct vtpu_bo x, y, gamma, beta, stats, mm, mv, dy, dx, dg, db;
};

static void bn_bufs_new(struct bn_bufs *b, size_t rc, size_t c)
{
	b->x = bo_new(rc * 4);
	b->y = bo_new(rc * 4);
	b->dy = bo_new(rc * 4);
	b->dx = bo_new(rc * 4);
	b->gamma = bo_new(c * 4);
	b->beta = bo_new(c * 4);
	b->stats = bo_new(c * 8);
	b->mm = bo_new(c * 4);
	b->mv = bo_new(c * 4);
	b->dg = bo_new(c * 4);
	b->db = bo_new(c * 4);
}

static void bn_bufs_free(struct bn_bufs *b)
{
	struct vtpu_bo *all[] = { &b->x, &b->y, &b->gamma, &b->beta,
				  &b->stats, &b->mm, &b->mv, &b->dy, &b->dx,
				  &b->dg, &b->db };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		vtpu_cpu_bo_destroy(all[i]);
}

#define BN_REF(cb, bo) VTPU_REF(vtpu_cmdbuf_use(cb, bo), 0)

static void bn_stream(struct vtpu_cmdbuf *cb, struct bn_bufs *b,
		      uint32_t rows, uint32_t c, uint32_t flags, int grad)
{
	struct vtpu_batchnorm_desc d = { .rows = rows, .channels = c,
					 .epsilon = 1e-3f, .momentum = 0.9f };

	vtpu_cmdbuf_init(cb);
	d.x = BN_REF(cb, &b->x);
	d.gamma = BN_REF(cb, &b->gamma);
	d.stats = BN_REF(cb, &b->stats);
	if (grad) {
		d.dy = BN_REF(cb, &b->dy);
		d.dx = BN_REF(cb, &b->dx);
		d.dgamma = BN_REF(cb, &b->dg);
		d.dbeta = BN_REF(cb, &b->db);
		vtpu_cmdbuf_batchnorm_grad(cb, &d);
		return;
	}
	d.flags = flags;
	d.y = BN_REF(cb, &b->y);
	d.beta = BN_REF(cb, &b->beta);
	d.moving_mean = BN_REF(cb, &b->mm);
	d.moving_var = BN_REF(cb, &b->mv);
	vtpu_cmdbuf_batchnorm(cb, &d);
}

/* Channel @c's batch mean and biased variance, in double. */
static void ref_moments(const float *x, uint32_t rows, uint32_t c,
			uint32_t ch, double *mean, double *var)
{
	double s = 0, q = 0;
	uint32_t r;

	for (r = 0; r < rows; r++)
		s += x[(size_t)r * c + ch];
	s /= rows;
	for (r = 0; r < rows; r++) {
		double d = x[(size_t)r * c + ch] - s;

		q += d * d;
	}
	*mean = s;
	*var = q / rows;
}

/* |got - want| <= tol * (1 + |want|), counted in *bad */
static void near(double got, double want, double tol, long *bad)
{
	if (!(fabs(got - want) <= tol * (1 + fabs(want))))
		(*bad)++;
}

/*
 * Both modes and the gradient at shapes that make several channel tiles
 * (more than 64 channels), several row steps (more than 64K elements per
 * tile) and a mean far from 0 (5 +- 3): y, the saved statistics, the
 * moving ones and dx, dgamma, dbeta against double references.
 */
TEST(batchnorm_reference)
{
	/* rows channels */
	static const uint32_t shapes[][2] = {
		{ 1, 1 }, { 7, 3 }, { 100, 70 }, { 5000, 16 }, { 3, 200 },
		{ 70000, 1 }, { 1500, 130 },
		/*
		 * Groups of rows summed apart (ops_batchnorm.c): 2 and 3
		 * groups of 1 and 3 channels, 16 of 64 channels with a
		 * short last group, 3 of 65 (a narrow second block) and of
		 * 256; one row of 64 and 256 channels.
		 */
		{ 300001, 1 }, { 200003, 3 }, { 65537, 64 }, { 20001, 65 },
		{ 9000, 256 }, { 1, 64 }, { 1, 256 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t rows = shapes[s][0], c = shapes[s][1], i, r, mode;
		size_t rc = (size_t)rows * c;
		struct bn_bufs b;
		float *x, *y, *g, *be, *st, *mm, *mv, *dy, *dx, *dg, *db;
		float *mm0 = malloc(c * 4), *mv0 = malloc(c * 4);
		double *mean = malloc(c * 8), *var = malloc(c * 8);
		void *k1 = malloc(rc * 4), *k2 = malloc(rc * 4);
		long bad = 0, diff = 0;

		bn_bufs_new(&b, rc, c);
		x = b.x.map, y = b.y.map, g = b.gamma.map, be = b.beta.map;
		st = b.stats.map, mm = b.mm.map, mv = b.mv.map;
		dy = b.dy.map, dx = b.dx.map, dg = b.dg.map, db = b.db.map;
		rng_seed(500 + s);
		for (i = 0; i < rc; i++) {
			x[i] = 5 + 3 * frand();
			dy[i] = frand();
		}
		for (i = 0; i < c; i++) {
			g[i] = 1 + frand() / 2;
			be[i] = frand();
			mm0[i] = frand();
			mv0[i] = 1 + frand() / 2;
			ref_moments(x, rows, c, i, &mean[i], &var[i]);
		}
		for (mode = 0; mode < 2; mode++) {
			uint32_t fl = mode ? 0 : VTPU_BATCHNORM_TRAINING;
			struct vtpu_cmdbuf cb, cbg;
			int e;

			bn_stream(&cb, &b, rows, c, fl, 0);
			bn_stream(&cbg, &b, rows, c, 0, 1);
			for (e = 0; e < ex.n; e++) {
				memcpy(mm, mm0, c * 4);
				memcpy(mv, mv0, c * 4);
				memset(y, 0xff, rc * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				diff += same_bits(y, k1, rc * 4, e);
				if (!mode) {
					memset(dx, 0xff, rc * 4);
					ASSERT_EQ(0, run(ex.cpu[e], &cbg));
					diff += same_bits(dx, k2, rc * 4, e);
				}
			}
			vtpu_cmdbuf_fini(&cb);
			vtpu_cmdbuf_fini(&cbg);
			for (i = 0; i < c; i++) {
				double m = mode ? mm0[i] : mean[i];
				double v = mode ? mv0[i] : var[i];
				double inv = 1 / sqrt(v + 1e-3f);
				double sdy = 0, sdyx = 0;

				if (!mode) {
					near(st[i], m, 1e-6, &bad);
					near(st[c + i], inv, 1e-6, &bad);
					near(mm[i], mm0[i] * 0.9f +
						    m * (1 - 0.9f), 1e-6, &bad);
					near(mv[i], mv0[i] * 0.9f +
						    v * (1 - 0.9f), 1e-6, &bad);
				} else {
					EXPECT_EQ(mm0[i], mm[i]);
					EXPECT_EQ(mv0[i], mv[i]);
				}
				for (r = 0; r < rows; r++) {
					size_t k = (size_t)r * c + i;
					double xh = (x[k] - m) * inv;

					near(y[k], g[i] * xh + be[i], 2e-6,
					     &bad);
					sdy += dy[k];
					sdyx += dy[k] * xh;
				}
				if (mode)
					continue;
				near(db[i], sdy, 1e-5, &bad);
				near(dg[i], sdyx, 1e-5, &bad);
				for (r = 0; r < rows; r++) {
					size_t k = (size_t)r * c + i;
					double xh = (x[k] - m) * inv;

					near(dx[k], g[i] * inv *
						    (dy[k] - sdy / rows -
						     xh * sdyx / rows),
					     1e-5, &bad);
				}
			}
		}
		TH_LOG("batchnorm %u x %u: %ld bad, %ld executors differ",
		       rows, c, bad, diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		bn_bufs_free(&b);
		FREE_ALL(mm0, mv0, mean, var, k1, k2);
	}
	execs_fini(&ex);
}

/*
 * VTPU_BATCHNORM_RELU, training and inference: the same bits as
 * BATCHNORM then ELEMENTWISE RELU on every executor (the statistics
 * too), and max(0, the double reference). Shapes with one group and
 * several, narrow last channel blocks and tails under a SIMD width; one
 * channel with gamma 0 and beta -0 (a signed zero the ReLU keeps).
 */
TEST(batchnorm_relu)
{
	static const uint32_t shapes[][2] = {
		{ 1, 1 }, { 7, 3 }, { 100, 70 }, { 3, 200 }, { 200003, 3 },
		{ 65537, 64 }, { 20001, 65 }, { 1, 64 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t rows = shapes[s][0], c = shapes[s][1], i, r, mode;
		size_t rc = (size_t)rows * c;
		struct bn_bufs b;
		float *x, *y, *g, *be, *st, *mm, *mv, *y2;
		float *mm0 = malloc(c * 4), *mv0 = malloc(c * 4);
		float *st1 = malloc(c * 8), *mm1 = malloc(c * 4);
		float *mv1 = malloc(c * 4);
		double *mean = malloc(c * 8), *var = malloc(c * 8);
		long bad = 0, diff = 0, zeros = 0;

		bn_bufs_new(&b, rc, c);
		x = b.x.map, y = b.y.map, g = b.gamma.map, be = b.beta.map;
		st = b.stats.map, mm = b.mm.map, mv = b.mv.map;
		y2 = b.dy.map;		/* the unfused pair's output */
		rng_seed(700 + s);
		for (i = 0; i < rc; i++)
			x[i] = 5 + 3 * frand();
		for (i = 0; i < c; i++) {
			g[i] = 1 + frand() / 2;
			be[i] = frand();
			mm0[i] = 5 + frand();
			mv0[i] = 3 + frand();
			ref_moments(x, rows, c, i, &mean[i], &var[i]);
		}
		g[c - 1] = 0.0f;
		be[c - 1] = -0.0f;
		for (mode = 0; mode < 2; mode++) {
			uint32_t fl = mode ? 0 : VTPU_BATCHNORM_TRAINING;
			struct vtpu_cmdbuf cf, cu;
			int e;

			bn_stream(&cf, &b, rows, c, fl | VTPU_BATCHNORM_RELU,
				  0);
			/* unfused: BATCHNORM into dx, then RELU into dy */
			vtpu_cmdbuf_init(&cu);
			{
				struct vtpu_batchnorm_desc d = {
					.rows = rows, .channels = c,
					.epsilon = 1e-3f, .momentum = 0.9f,
					.flags = fl,
				};

				d.x = BN_REF(&cu, &b.x);
				d.y = BN_REF(&cu, &b.dx);
				d.gamma = BN_REF(&cu, &b.gamma);
				d.beta = BN_REF(&cu, &b.beta);
				d.stats = BN_REF(&cu, &b.stats);
				d.moving_mean = BN_REF(&cu, &b.mm);
				d.moving_var = BN_REF(&cu, &b.mv);
				ASSERT_EQ(0, vtpu_cmdbuf_batchnorm(&cu, &d));
				ASSERT_EQ(0, vtpu_cmdbuf_elementwise(&cu,
					VTPU_EW_RELU, rc, 0, 0,
					BN_REF(&cu, &b.dx), VTPU_REF_NONE,
					BN_REF(&cu, &b.dy)));
			}
			for (e = 0; e < ex.n; e++) {
				memcpy(mm, mm0, c * 4);
				memcpy(mv, mv0, c * 4);
				memset(y2, 0xff, rc * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cu));
				memcpy(st1, st, c * 8);
				memcpy(mm1, mm, c * 4);
				memcpy(mv1, mv, c * 4);
				memcpy(mm, mm0, c * 4);
				memcpy(mv, mv0, c * 4);
				memset(y, 0xff, rc * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cf));
				diff += memcmp(y, y2, rc * 4) != 0;
				diff += memcmp(st, st1, c * 8) != 0;
				diff += memcmp(mm, mm1, c * 4) != 0;
				diff += memcmp(mv, mv1, c * 4) != 0;
			}
			vtpu_cmdbuf_fini(&cf);
			vtpu_cmdbuf_fini(&cu);
			for (i = 0; i < c; i++) {
				double m = mode ? mm0[i] : mean[i];
				double v = mode ? mv0[i] : var[i];
				double inv = 1 / sqrt(v + 1e-3f);

				for (r = 0; r < rows; r++) {
					size_t k = (size_t)r * c + i;
					double want = g[i] * (x[k] - m) * inv +
						      be[i];

					near(y[k], want < 0 ? 0 : want, 2e-6,
					     &bad);
					zeros += y[k] == 0;
				}
			}
		}
		TH_LOG("batchnorm relu %u x %u: %ld bad, %ld differ, %ld zeros",
		       rows, c, bad, diff, zeros);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_GT(zeros, 0);
		bn_bufs_free(&b);
		FREE_ALL(mm0, mv0, st1, mm1, mv1, mean, var);
	}
	execs_fini(&ex);
}

/*
 * A mean far larger than the deviation (10000 +- 0.01: the variance is
 * 1e-12 of the mean's square): the one-pass sums of x - x[0] and its
 * square keep the variance to double precision, which sums of x and x^2
 * would lose entirely. One group and several (ops_batchnorm.c).
 */
TEST(batchnorm_large_mean)
{
	static const uint32_t shapes[][2] = { { 5000, 3 }, { 65537, 64 } };
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t rows = shapes[s][0], c = shapes[s][1], i, r;
		size_t rc = (size_t)rows * c;
		struct bn_bufs b;
		struct vtpu_cmdbuf cb;
		float *x, *y, *st;
		void *k1 = malloc(rc * 4);
		long bad = 0, diff = 0;
		int e;

		bn_bufs_new(&b, rc, c);
		x = b.x.map, y = b.y.map, st = b.stats.map;
		rng_seed(900 + s);
		for (i = 0; i < rc; i++)
			x[i] = 10000 + 0.01f * frand();
		for (i = 0; i < c; i++) {
			((float *)b.gamma.map)[i] = 1;
			((float *)b.beta.map)[i] = 0;
		}
		bn_stream(&cb, &b, rows, c, VTPU_BATCHNORM_TRAINING, 0);
		for (e = 0; e < ex.n; e++) {
			memset(b.mm.map, 0, c * 4);
			memset(b.mv.map, 0, c * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(y, k1, rc * 4, e);
		}
		vtpu_cmdbuf_fini(&cb);
		for (i = 0; i < c; i++) {
			double m, v, inv;

			ref_moments(x, rows, c, i, &m, &v);
			inv = 1 / sqrt(v + 1e-3f);
			near(st[i], m, 1e-7, &bad);
			/* the variance itself: eps would hide its error */
			near(((float *)b.mv.map)[i], v * (1 - 0.9f), 1e-5,
			     &bad);
			near(st[c + i], inv, 1e-6, &bad);
			for (r = 0; r < rows; r++) {
				size_t k = (size_t)r * c + i;

				near(y[k], (x[k] - m) * inv, 2e-6, &bad);
			}
		}
		TH_LOG("batchnorm %u x %u, mean 1e4: %ld bad, %ld differ",
		       rows, c, bad, diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		bn_bufs_free(&b);
		free(k1);
	}
	execs_fini(&ex);
}

/* L = sum(w * y) of the double forward (training mode) */
static double ref_loss(const double *x, const double *g, const double *be,
		       const float *w, uint32_t rows, uint32_t c)
{
	double l = 0;
	uint32_t i, r;

	for (i = 0; i < c; i++) {
		double m = 0, v = 0, inv;

		for (r = 0; r < rows; r++)
			m += x[r * c + i];
		m /= rows;
		for (r = 0; r < rows; r++)
			v += (x[r * c + i] - m) * (x[r * c + i] - m);
		inv = 1 / sqrt(v / rows + 1e-3f);
		for (r = 0; r < rows; r++)
			l += w[r * c + i] *
			     (g[i] * (x[r * c + i] - m) * inv + be[i]);
	}
	return l;
}

/*
 * ref_loss()'s derivative in @v (one of x, g, be) by a central
 * difference of step @h; *v is left as it was.
 */
static double ref_loss_diff(double *v, double h, const double *x,
			    const double *g, const double *be, const float *w,
			    uint32_t rows, uint32_t c)
{
	double lp, lm;

	*v += h;
	lp = ref_loss(x, g, be, w, rows, c);
	*v -= 2 * h;
	lm = ref_loss(x, g, be, w, rows, c);
	*v += h;
	return (lp - lm) / (2 * h);
}

/*
 * BATCHNORM_GRAD against central differences of the double forward: the
 * gradient flows through the batch mean and variance.
 */
TEST(batchnorm_grad_numeric)
{
	const uint32_t rows = 6, c = 3, n = rows * c;
	const double h = 1e-4;
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_cmdbuf cb, cbg;
	struct bn_bufs b;
	double xd[18], gd[3], bd[3];
	float *x, *dx, *dg, *db;
	long bad = 0;
	uint32_t i;

	ASSERT_NE(NULL, cpu);
	bn_bufs_new(&b, n, c);
	x = b.x.map, dx = b.dx.map, dg = b.dg.map, db = b.db.map;
	rng_seed(9);
	fill_rand(x, n);
	fill_rand(b.dy.map, n);
	for (i = 0; i < c; i++) {
		((float *)b.gamma.map)[i] = 1 + frand() / 2;
		((float *)b.beta.map)[i] = frand();
		((float *)b.mv.map)[i] = 1;
	}
	bn_stream(&cb, &b, rows, c, VTPU_BATCHNORM_TRAINING, 0);
	bn_stream(&cbg, &b, rows, c, 0, 1);
	ASSERT_EQ(0, run(cpu, &cb));
	ASSERT_EQ(0, run(cpu, &cbg));
	for (i = 0; i < n; i++)
		xd[i] = x[i];
	for (i = 0; i < c; i++) {
		gd[i] = ((float *)b.gamma.map)[i];
		bd[i] = ((float *)b.beta.map)[i];
	}
	for (i = 0; i < n; i++)
		near(dx[i], ref_loss_diff(&xd[i], h, xd, gd, bd, b.dy.map,
					  rows, c), 1e-4, &bad);
	for (i = 0; i < c; i++) {
		near(dg[i], ref_loss_diff(&gd[i], h, xd, gd, bd, b.dy.map,
					  rows, c), 1e-4, &bad);
		near(db[i], ref_loss_diff(&bd[i], h, xd, gd, bd, b.dy.map,
					  rows, c), 1e-4, &bad);
	}
	EXPECT_EQ(0, bad);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cbg);
	vtpu_cpu_destroy(cpu);
	bn_bufs_free(&b);
}

TEST_HARNESS_MAIN
