// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the sequence models' ops: EMBEDDING (a lookup by
 * token id), EMBEDDING_GRAD (its adjoint, a scatter-add) and
 * GEMM_BATCHED (attention's many small products), through libvtpu's cpu
 * backend on every SIMD level with 1 to 4 threads (each thread count
 * tiles these ops differently), against plain C references in this file.
 * Outputs must be bitwise the same whatever the threads; the embedding
 * ops' on every level too (they only copy and add), GEMM_BATCHED's on
 * each level (the levels' FMAs round differently), where it must also be
 * bitwise what GEMM commands for each product compute. ADDITIVE_SCORE
 * and its gradient (Bahdanau's scores) against a double reference and
 * finite differences of it, bitwise the same on every executor (the
 * tanh gives the same bits on every level).
 */
#include "test_ops.h"

/* ---- EMBEDDING, EMBEDDING_GRAD --------------------------------------------- */

/*
 * Random ids, some past the table (vocab itself, 0xffffffff, others), and
 * with a small vocab many repeats: the scatter-add's hard case.
 */
static void emb_ids(uint32_t *ids, uint32_t n, uint32_t vocab)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		ids[i] = urand() % (vocab + vocab / 4 + 1);
	if (n > 3) {
		ids[0] = vocab;
		ids[1] = 0xffffffffu;
		ids[2] = ids[3];	/* a repeat, whatever vocab */
	}
}

TEST(embedding)
{
	/* n vocab dim */
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 },	 { 7, 5, 3 },	  { 100, 50, 17 },
		{ 33, 1000, 64 }, { 5000, 3, 40 }, { 4000, 300, 33 },
		{ 3, 10, 70001 }, { 2, 1, 1 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t n = shapes[s][0], vocab = shapes[s][1];
		uint32_t dim = shapes[s][2], i, j;
		size_t ny = (size_t)n * dim, nt = (size_t)vocab * dim;
		struct vtpu_bo ib = bo_new((size_t)n * 4), tb = bo_new(nt * 4),
			       yb = bo_new(ny * 4), gb = bo_new(nt * 4),
			       db = bo_new(ny * 4);
		uint32_t *ids = ib.map;
		float *table = tb.map, *y = yb.map, *dt = gb.map, *dy = db.map;
		float *init = malloc(nt * 4), *rf = malloc(nt * 4);
		double *ry = malloc(ny * 8), *rg = malloc(nt * 8);
		void *k1 = malloc(ny * 4), *k2 = malloc(nt * 4);
		double lhs = 0, rhs = 0;
		long bad = 0, diff = 0, order = 0;
		struct vtpu_cmdbuf cb;
		int e, acc;

		rng_seed(2000 + s);
		emb_ids(ids, n, vocab);
		fill_rand(table, nt);
		fill_rand(dy, ny);
		fill_rand(init, nt);
		for (i = 0; i < n; i++)
			for (j = 0; j < dim; j++)
				ry[(size_t)i * dim + j] = ids[i] < vocab ?
					table[(size_t)ids[i] * dim + j] : 0.0;

		/* the lookup: exact, and on every executor the same */
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_embedding(&cb, n, vocab, dim,
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0),
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &tb), 0),
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0));
		for (e = 0; e < ex.n; e++) {
			memset(y, 0xff, ny * 4);	/* NaNs: all overwritten */
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(y, k1, ny * 4, e);
		}
		vtpu_cmdbuf_fini(&cb);
		maxdiff(y, ry, ny, 0, &bad);

		/* the scatter-add, zeroing the table first or accumulating */
		for (acc = 0; acc < 2; acc++) {
			uint32_t flags = acc ? VTPU_EMBEDDING_ACCUMULATE : 0;

			/* in f32, in the order of i: what the op promises */
			for (j = 0; j < nt; j++) {
				rf[j] = acc ? init[j] : 0.0f;
				rg[j] = acc ? init[j] : 0.0;
			}
			for (i = 0; i < n; i++) {
				if (ids[i] >= vocab)
					continue;
				for (j = 0; j < dim; j++) {
					size_t t = (size_t)ids[i] * dim + j;

					rf[t] += dy[(size_t)i * dim + j];
					rg[t] += dy[(size_t)i * dim + j];
				}
			}
			vtpu_cmdbuf_init(&cb);
			vtpu_cmdbuf_embedding_grad(&cb, n, vocab, dim, flags,
				VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0),
				VTPU_REF(vtpu_cmdbuf_use(&cb, &db), 0),
				VTPU_REF(vtpu_cmdbuf_use(&cb, &gb), 0));
			for (e = 0; e < ex.n; e++) {
				if (acc)
					memcpy(dt, init, nt * 4);
				else
					memset(dt, 0xff, nt * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				diff += same_bits(dt, k2, nt * 4, e);
			}
			vtpu_cmdbuf_fini(&cb);
			order += memcmp(dt, rf, nt * 4) != 0;
			maxdiff(dt, rg, nt, 1e-5, &bad);
		}

		/*
		 * The adjoint: <dy, EMBEDDING(table)> = <EMBEDDING_GRAD(dy),
		 * table>, dt being the zeroed gradient (recomputed: the last
		 * run accumulated).
		 */
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_embedding_grad(&cb, n, vocab, dim, 0,
				VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0),
				VTPU_REF(vtpu_cmdbuf_use(&cb, &db), 0),
				VTPU_REF(vtpu_cmdbuf_use(&cb, &gb), 0));
		ASSERT_EQ(0, run(ex.cpu[ex.n - 1], &cb));
		vtpu_cmdbuf_fini(&cb);
		for (j = 0; j < ny; j++)
			lhs += (double)dy[j] * y[j];
		for (j = 0; j < nt; j++)
			rhs += (double)dt[j] * table[j];

		TH_LOG("embedding n=%u vocab=%u dim=%u: <dy, y> %.9g, "
		       "<dtable, table> %.9g", n, vocab, dim, lhs, rhs);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(0, order);
		EXPECT_LE(fabs(lhs - rhs), 1e-5 * (1 + fabs(lhs)));
		vtpu_cpu_bo_destroy(&ib);
		vtpu_cpu_bo_destroy(&tb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&gb);
		vtpu_cpu_bo_destroy(&db);
		free(init);
		free(rf);
		free(ry);
		free(rg);
		free(k1);
		free(k2);
	}
	execs_fini(&ex);
}

/* ---- GEMM_BATCHED ------------------------------------------------------------ */

struct bg_case {
	uint32_t batch, m, n, k, flags;
	uint32_t lpad;		/* added to each leading dimension */
	uint32_t gap;		/* elements between matrices, past each */
	int shared_b;		/* stride_b = 0: one B for every product */
	float alpha, beta;
	int interleave;		/* the Cs' rows side by side (time-major) */
};

/* elements a rows x cols matrix with leading dimension ld spans */
static uint64_t span(uint64_t rows, uint64_t cols, uint64_t ld)
{
	return (rows - 1) * ld + cols;
}

TEST(gemm_batched)
{
	static const struct bg_case cases[] = {
		{ 1, 1, 1, 1, 0, 0, 0, 0, 1.0f, 0.0f, 0 },
		{ 1000, 1, 1, 1, 0, 0, 0, 0, 1.0f, 0.0f, 0 },
		{ 5, 37, 45, 300, 0, 0, 0, 0, 1.0f, 0.0f, 0 },
		{ 5, 37, 45, 300, VTPU_GEMM_TRANS_B, 3, 7, 0, 0.5f, 0.25f, 0 },
		{ 4, 130, 20, 33, VTPU_GEMM_TRANS_A, 1, 0, 0, 1.0f, 1.0f, 0 },
		{ 3, 100, 600, 70, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B, 0, 5,
		  0, -1.0f, 0.5f, 0 },
		{ 200, 16, 16, 8, VTPU_GEMM_TRANS_B, 0, 0, 0, 0.125f, 0.0f, 0 },
		{ 24, 9, 64, 64, 0, 2, 0, 1, 1.0f, 0.0f, 0 },
		{ 8, 64, 64, 32, VTPU_GEMM_TRANS_B, 0, 0, 0, 1.0f, -2.0f, 0 },
		/* small products whose grid has several tiles, grouped */
		{ 1000, 1, 33, 1, VTPU_GEMM_TRANS_A, 0, 0, 0, 1.0f, 0.0f, 0 },
		{ 300, 40, 70, 16, 0, 1, 3, 0, 1.0f, 0.5f, 0 },
		/* interleaved Cs: row i of C_b at i * ldc + b * stride_c */
		{ 64, 12, 32, 20, 0, 0, 0, 0, 1.0f, 0.0f, 1 },
		{ 7, 30, 45, 9, VTPU_GEMM_TRANS_A, 2, 3, 0, 1.0f, 1.0f, 1 },
		{ 5, 3, 200, 33, VTPU_GEMM_TRANS_B, 0, 1, 1, 0.5f, 0.0f, 1 },
		/*
		 * small products read in place on AVX-512 (gemm.c's
		 * gemm_is_small()): a decoder step's attention scores and
		 * context; rows in groups of 4 and a rest, columns in 16s and
		 * a rest, k in 16s and a rest, beta 1; the same with other
		 * alpha and beta (packed); the largest, and K one past a step
		 * (packed)
		 */
		{ 64, 1, 24, 128, VTPU_GEMM_TRANS_B, 0, 0, 0, 1.0f, 0.0f, 1 },
		{ 64, 1, 128, 24, 0, 0, 0, 0, 1.0f, 0.0f, 1 },
		{ 9, 13, 37, 47, VTPU_GEMM_TRANS_B, 1, 2, 0, 1.0f, 1.0f, 0 },
		{ 6, 11, 45, 250, 0, 3, 0, 0, 1.0f, 1.0f, 0 },
		{ 9, 13, 37, 47, VTPU_GEMM_TRANS_B, 1, 2, 0, -0.5f, 0.75f, 0 },
		{ 6, 11, 45, 250, 0, 3, 0, 0, 2.0f, -1.0f, 0 },
		{ 3, 16, 256, 256, VTPU_GEMM_TRANS_B, 0, 0, 1, 1.0f, 1.0f, 0 },
		{ 3, 16, 256, 256, 0, 0, 0, 0, 1.0f, 1.0f, 0 },
		{ 4, 2, 17, 257, VTPU_GEMM_TRANS_B, 0, 0, 0, 1.0f, 0.0f, 0 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(cases) / sizeof(cases[0]); s++) {
		const struct bg_case *t = &cases[s];
		int ta = !!(t->flags & VTPU_GEMM_TRANS_A);
		int tb = !!(t->flags & VTPU_GEMM_TRANS_B);
		uint32_t ar = ta ? t->k : t->m, ac = ta ? t->m : t->k;
		uint32_t br = tb ? t->n : t->k, bc = tb ? t->k : t->n;
		uint32_t lda = ac + t->lpad, ldb = bc + t->lpad;
		uint32_t ldc = t->n + t->lpad;
		uint64_t sa = span(ar, ac, lda) + t->gap;
		uint64_t sb = t->shared_b ? 0 : span(br, bc, ldb) + t->gap;
		uint64_t sc = span(t->m, t->n, ldc) + t->gap;

		if (t->interleave) {
			sc = t->n + t->gap;
			ldc = (t->batch - 1) * sc + t->n + t->lpad;
		}
		uint64_t na = (t->batch - 1) * sa + span(ar, ac, lda);
		uint64_t nb = (t->batch - 1) * sb + span(br, bc, ldb);
		uint64_t nc = (t->batch - 1) * sc + span(t->m, t->n, ldc);
		struct vtpu_bo ab = bo_new(na * 4), bb = bo_new(nb * 4),
			       cb_ = bo_new(nc * 4);
		float *a = ab.map, *b = bb.map, *c = cb_.map;
		float *c0 = malloc(nc * 4), *one = malloc(nc * 4);
		double *ref = malloc(nc * 8);
		void *keep = malloc(nc * 4);
		struct vtpu_gemm_batched_desc d = {
			.batch = t->batch, .m = t->m, .n = t->n, .k = t->k,
			.flags = t->flags, .lda = lda, .ldb = ldb, .ldc = ldc,
			.alpha = t->alpha, .beta = t->beta, .stride_a = sa,
			.stride_b = sb, .stride_c = sc,
		};
		struct vtpu_cmdbuf cb, cg;
		long bad = 0, diff = 0, vs_gemm = 0;
		uint64_t q, i, j, p;
		int e;

		rng_seed(3000 + s);
		fill_rand(a, na);
		fill_rand(b, nb);
		fill_rand(c0, nc);
		/* the reference; gaps and padding keep what they held */
		for (i = 0; i < nc; i++)
			ref[i] = c0[i];
		for (q = 0; q < t->batch; q++) {
			const float *aq = a + q * sa, *bq = b + q * sb;

			for (i = 0; i < t->m; i++)
				for (j = 0; j < t->n; j++) {
					double sum = 0, *r;

					for (p = 0; p < t->k; p++)
						sum += (double)(ta ? aq[p * lda + i] :
								     aq[i * lda + p]) *
						       (tb ? bq[j * ldb + p] :
							     bq[p * ldb + j]);
					r = &ref[q * sc + i * ldc + j];
					*r = t->alpha * sum +
					     (t->beta != 0 ? t->beta * *r : 0);
				}
		}

		vtpu_cmdbuf_init(&cb);
		d.a = VTPU_REF(vtpu_cmdbuf_use(&cb, &ab), 0);
		d.b = VTPU_REF(vtpu_cmdbuf_use(&cb, &bb), 0);
		d.c = VTPU_REF(vtpu_cmdbuf_use(&cb, &cb_), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_gemm_batched(&cb, &d));
		/* the same products as batch GEMM commands */
		vtpu_cmdbuf_init(&cg);
		for (q = 0; q < t->batch; q++) {
			struct vtpu_gemm_desc g = {
				.m = t->m, .n = t->n, .k = t->k,
				.flags = t->flags, .lda = lda, .ldb = ldb,
				.ldc = ldc, .alpha = t->alpha, .beta = t->beta,
			};

			g.a_buf = vtpu_cmdbuf_use(&cg, &ab);
			g.b_buf = vtpu_cmdbuf_use(&cg, &bb);
			g.c_buf = vtpu_cmdbuf_use(&cg, &cb_);
			g.a_off = q * sa * 4;
			g.b_off = q * sb * 4;
			g.c_off = q * sc * 4;
			ASSERT_EQ(0, vtpu_cmdbuf_gemm(&cg, &g));
		}
		for (e = 0; e < ex.n; e++) {
			memcpy(c, c0, nc * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cg));
			memcpy(one, c, nc * 4);
			memcpy(c, c0, nc * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			/* the same bits whatever the threads, level by level */
			diff += same_bits(c, keep, nc * 4, ex.first[e] ? 0 : e);
			/* bitwise the GEMM's own result, on each level */
			vs_gemm += memcmp(c, one, nc * 4) != 0;
		}
		vtpu_cmdbuf_fini(&cb);
		vtpu_cmdbuf_fini(&cg);
		maxdiff(c, ref, nc, 1e-5 * (1 + sqrt(t->k)), &bad);
		TH_LOG("gemm_batched %u x %ux%ux%u flags %u: %ld bad, %ld "
		       "differ across executors, %ld from GEMM", t->batch,
		       t->m, t->n, t->k, t->flags, bad, diff, vs_gemm);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(0, vs_gemm);
		vtpu_cpu_bo_destroy(&ab);
		vtpu_cpu_bo_destroy(&bb);
		vtpu_cpu_bo_destroy(&cb_);
		free(c0);
		free(one);
		free(ref);
		free(keep);
	}
	execs_fini(&ex);
}

/* ---- ADDITIVE_SCORE, ADDITIVE_SCORE_GRAD --------------------------------- */

/* s[b][i][j] = sum_c v[c] tanh(q[i][b][c] + k[j][b][c]), in double */
static void add_ref(uint32_t B, uint32_t tq, uint32_t tk, uint32_t u,
		    const double *q, const double *k, const double *v,
		    double *s)
{
	uint32_t b, i, j, c;

	for (b = 0; b < B; b++)
		for (i = 0; i < tq; i++)
			for (j = 0; j < tk; j++) {
				double sum = 0;

				for (c = 0; c < u; c++)
					sum += v[c] * tanh(q[((size_t)i * B + b) * u + c] +
							   k[((size_t)j * B + b) * u + c]);
				s[((size_t)b * tq + i) * tk + j] = sum;
			}
}

/* L = <ds, s(q, k, v)> */
static double add_loss(uint32_t B, uint32_t tq, uint32_t tk, uint32_t u,
		       const double *q, const double *k, const double *v,
		       const float *ds, double *s)
{
	size_t n = (size_t)B * tq * tk, i;
	double l = 0;

	add_ref(B, tq, tk, u, q, k, v, s);
	for (i = 0; i < n; i++)
		l += ds[i] * s[i];
	return l;
}

/* Central differences of add_loss() in each element of x[n]: into g. */
static void add_fd(uint32_t B, uint32_t tq, uint32_t tk, uint32_t u,
		   double *q, double *k, double *v, const float *ds,
		   double *s, double *x, size_t n, double *g)
{
	const double h = 1e-5;
	size_t i;

	for (i = 0; i < n; i++) {
		double x0 = x[i], lp, lm;

		x[i] = x0 + h;
		lp = add_loss(B, tq, tk, u, q, k, v, ds, s);
		x[i] = x0 - h;
		lm = add_loss(B, tq, tk, u, q, k, v, ds, s);
		x[i] = x0;
		g[i] = (lp - lm) / (2 * h);
	}
}

TEST(additive_score)
{
	/* B tq tk units */
	static const uint32_t shapes[][4] = {
		{ 1, 1, 1, 1 },	  { 2, 3, 5, 7 },     { 3, 4, 6, 20 },
		{ 4, 7, 9, 130 }, { 2, 300, 5, 16 }, { 1, 2, 700, 300 },
		{ 70, 2, 3, 8 },  { 5, 11, 1, 65 },
	};
	struct execs ex;
	size_t sh;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
		uint32_t B = shapes[sh][0], tq = shapes[sh][1];
		uint32_t tk = shapes[sh][2], u = shapes[sh][3], b, i, j, c;
		size_t nq = (size_t)tq * B * u, nk = (size_t)tk * B * u;
		size_t ns = (size_t)B * tq * tk, x;
		struct vtpu_bo qb = bo_new(nq * 4), kb = bo_new(nk * 4),
			       vb = bo_new(u * 4), sb = bo_new(ns * 4),
			       dsb = bo_new(ns * 4), dqb = bo_new(nq * 4),
			       dkb = bo_new(nk * 4), dvb = bo_new(u * 4);
		float *q = qb.map, *k = kb.map, *v = vb.map, *s = sb.map;
		float *ds = dsb.map, *dq = dqb.map, *dk = dkb.map;
		float *dv = dvb.map;
		double *rq = malloc(nq * 8), *rk = malloc(nk * 8);
		double *rv = malloc(u * 8), *rs = malloc(ns * 8);
		double *gq = calloc(nq, 8), *gk = calloc(nk, 8);
		double *gv = calloc(u, 8);
		void *keep = malloc((nq + nk + u + ns) * 4);
		struct vtpu_additive_desc d = {
			.batch = B, .tq = tq, .tk = tk, .units = u,
		};
		struct vtpu_cmdbuf cf, cg;
		long bad = 0, diff = 0, fdbad = 0;
		int e;

		rng_seed(4000 + sh);
		fill_rand(q, nq);
		fill_rand(k, nk);
		fill_rand(v, u);
		fill_rand(ds, ns);
		for (x = 0; x < nq; x++)
			rq[x] = q[x];
		for (x = 0; x < nk; x++)
			rk[x] = k[x];
		for (x = 0; x < u; x++)
			rv[x] = v[x];
		add_ref(B, tq, tk, u, rq, rk, rv, rs);
		/* the analytic gradient, in double */
		for (b = 0; b < B; b++)
			for (i = 0; i < tq; i++)
				for (j = 0; j < tk; j++) {
					double g = ds[((size_t)b * tq + i) * tk + j];

					for (c = 0; c < u; c++) {
						size_t a = ((size_t)i * B + b) * u + c;
						size_t o = ((size_t)j * B + b) * u + c;
						double t = tanh(rq[a] + rk[o]);

						gq[a] += g * rv[c] * (1 - t * t);
						gk[o] += g * rv[c] * (1 - t * t);
						gv[c] += g * t;
					}
				}

		vtpu_cmdbuf_init(&cf);
		d.q = VTPU_REF(vtpu_cmdbuf_use(&cf, &qb), 0);
		d.k = VTPU_REF(vtpu_cmdbuf_use(&cf, &kb), 0);
		d.v = VTPU_REF(vtpu_cmdbuf_use(&cf, &vb), 0);
		d.s = VTPU_REF(vtpu_cmdbuf_use(&cf, &sb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_additive_score(&cf, &d));
		vtpu_cmdbuf_init(&cg);
		d.q = VTPU_REF(vtpu_cmdbuf_use(&cg, &qb), 0);
		d.k = VTPU_REF(vtpu_cmdbuf_use(&cg, &kb), 0);
		d.v = VTPU_REF(vtpu_cmdbuf_use(&cg, &vb), 0);
		d.s = VTPU_REF(vtpu_cmdbuf_use(&cg, &dsb), 0);
		d.dq = VTPU_REF(vtpu_cmdbuf_use(&cg, &dqb), 0);
		d.dk = VTPU_REF(vtpu_cmdbuf_use(&cg, &dkb), 0);
		d.dv = VTPU_REF(vtpu_cmdbuf_use(&cg, &dvb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_additive_score_grad(&cg, &d));
		for (e = 0; e < ex.n; e++) {
			/* NaNs: every output element is written */
			memset(s, 0xff, ns * 4);
			memset(dq, 0xff, nq * 4);
			memset(dk, 0xff, nk * 4);
			memset(dv, 0xff, u * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cf));
			ASSERT_EQ(0, run(ex.cpu[e], &cg));
			diff += same_bits(s, keep, ns * 4, e);
			diff += same_bits(dq, (char *)keep + ns * 4, nq * 4, e);
			diff += same_bits(dk, (char *)keep + (ns + nq) * 4,
					  nk * 4, e);
			diff += same_bits(dv, (char *)keep + (ns + nq + nk) * 4,
					  u * 4, e);
		}
		vtpu_cmdbuf_fini(&cf);
		vtpu_cmdbuf_fini(&cg);
		maxdiff(s, rs, ns, 1e-6 * (1 + sqrt(u)), &bad);
		maxdiff(dq, gq, nq, 1e-6 * (1 + sqrt(tk)), &bad);
		maxdiff(dk, gk, nk, 1e-6 * (1 + sqrt(tq)), &bad);
		maxdiff(dv, gv, u, 1e-6 * (1 + sqrt((double)ns)), &bad);

		/* the gradient against central differences (small shapes) */
		if (ns * u * (nq + nk + u) <= 2000000) {
			double *fq = malloc(nq * 8), *fk = malloc(nk * 8);
			double *fv = malloc(u * 8);

			add_fd(B, tq, tk, u, rq, rk, rv, ds, rs, rq, nq, fq);
			add_fd(B, tq, tk, u, rq, rk, rv, ds, rs, rk, nk, fk);
			add_fd(B, tq, tk, u, rq, rk, rv, ds, rs, rv, u, fv);
			maxdiff(dq, fq, nq, 1e-5, &fdbad);
			maxdiff(dk, fk, nk, 1e-5, &fdbad);
			maxdiff(dv, fv, u, 1e-5, &fdbad);
			FREE_ALL(fq, fk, fv);
		}
		TH_LOG("additive_score B=%u tq=%u tk=%u units=%u: %ld bad, "
		       "%ld against differences, %ld differ across executors",
		       B, tq, tk, u, bad, fdbad, diff);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, fdbad);
		EXPECT_EQ(0, diff);
		BOS_DESTROY(&qb, &kb, &vb, &sb, &dsb, &dqb, &dkb, &dvb);
		FREE_ALL(rq, rk, rv, rs, gq, gk, gv, keep);
	}
	execs_fini(&ex);
}

TEST_HARNESS_MAIN
