// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the training step's ops: the loss (SOFTMAX_XENT,
 * its gradient against finite differences of the loss it computes, NaN)
 * and the optimizers (SGD, ADAM_STEP/ADAM over several replays of one
 * stream), through libvtpu's cpu backend, on every executor
 * (test_ops.h), against plain C references in this file.
 */
#include "test_ops.h"

/* ---- SOFTMAX_XENT ------------------------------------------------------------ */

struct xent_bufs {
	struct vtpu_bo lb, yb, db, pb, sb;	/* logits labels dlogits probs stats */
};

static void xent_stream(struct vtpu_cmdbuf *cb, struct xent_bufs *b,
			uint32_t m, uint32_t n, uint32_t flags, float scale)
{
	struct vtpu_xent_desc d = { .m = m, .n = n, .flags = flags,
				    .scale = scale };

	vtpu_cmdbuf_init(cb);
	d.logits = VTPU_REF(vtpu_cmdbuf_use(cb, &b->lb), 0);
	d.labels = VTPU_REF(vtpu_cmdbuf_use(cb, &b->yb), 0);
	d.loss = VTPU_REF(vtpu_cmdbuf_use(cb, &b->sb), 0);
	d.correct = VTPU_REF(vtpu_cmdbuf_use(cb, &b->sb), 8);
	if (flags & VTPU_XENT_DLOGITS)
		d.dlogits = VTPU_REF(vtpu_cmdbuf_use(cb, &b->db), 0);
	if (flags & VTPU_XENT_PROBS)
		d.probs = VTPU_REF(vtpu_cmdbuf_use(cb, &b->pb), 0);
	vtpu_cmdbuf_softmax_xent(cb, &d);
}

TEST(softmax_xent)
{
	/* m n */
	static const uint32_t shapes[][2] = {
		{ 1, 1 }, { 5, 10 }, { 37, 3 }, { 300, 1000 }, { 3, 65536 },
		{ 2000, 10 }, { 64, 4097 },
	};
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t m = shapes[s][0], n = shapes[s][1], i, j;
		size_t mn = (size_t)m * n;
		struct xent_bufs b = {
			bo_new(mn * 4), bo_new(m * 4), bo_new(mn * 4),
			bo_new(mn * 4), bo_new(16),
		};
		float *x = b.lb.map, *d = b.db.map, *p = b.pb.map;
		uint32_t *lab = b.yb.map;
		float *loss = b.sb.map;
		uint32_t *correct = (uint32_t *)((char *)b.sb.map + 8);
		double *rp = malloc(mn * 8), *rd = malloc(mn * 8), rloss = 0;
		void *k1 = malloc(mn * 4), *k2 = malloc(mn * 4);
		float scale = 1.0f / m, keep_loss = 0;
		uint32_t rcorrect = 0, keep_correct = 0;
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		double mdp, mdd;
		int e, f;

		rng_seed(1000 + s);
		for (i = 0; i < mn; i++)
			x[i] = frand() * 8;
		for (i = 0; i < m; i++)
			lab[i] = urand() % n;
		if (m > 3) {
			lab[1] = n;		/* ignored rows */
			lab[2] = 0xffffffffu;
			x[(size_t)3 * n] = x[(size_t)3 * n + n - 1] = 30.0f; /* tie */
			lab[3] = n - 1;		/* first argmax is 0: wrong */
		}
		/* reference in double */
		for (i = 0; i < m; i++) {
			const float *r = x + (size_t)i * n;
			double mx = r[0], sum = 0;
			uint32_t arg = 0;

			for (j = 1; j < n; j++)
				if (r[j] > mx) {
					mx = r[j];
					arg = j;
				}
			for (j = 0; j < n; j++)
				sum += exp(r[j] - mx);
			for (j = 0; j < n; j++) {
				rp[(size_t)i * n + j] = exp(r[j] - mx) / sum;
				rd[(size_t)i * n + j] = lab[i] < n ?
					scale * (rp[(size_t)i * n + j] - (j == lab[i])) : 0;
			}
			if (lab[i] < n) {
				rloss += mx + log(sum) - r[lab[i]];
				rcorrect += arg == lab[i];
			}
		}
		rloss *= scale;
		for (f = 0; f < 2; f++) {
			uint32_t flags = f ? VTPU_XENT_DLOGITS | VTPU_XENT_PROBS : 0;

			xent_stream(&cb, &b, m, n, flags, scale);
			for (e = 0; e < ex.n; e++) {
				memset(d, 0xff, mn * 4);
				memset(p, 0xff, mn * 4);
				memset(b.sb.map, 0xff, 16);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				if (f) {
					diff += same_bits(d, k1, mn * 4, e);
					diff += same_bits(p, k2, mn * 4, e);
				} else {
					/* without grad flags: nothing else written */
					EXPECT_EQ(0xffffffffu, *(uint32_t *)d);
				}
				if (e == 0 && f == 0) {
					keep_loss = *loss;
					keep_correct = *correct;
				}
				diff += memcmp(&keep_loss, loss, 4) != 0;
				diff += keep_correct != *correct;
			}
			vtpu_cmdbuf_fini(&cb);
		}
		mdp = maxdiff(p, rp, mn, 2e-6, &bad);
		mdd = maxdiff(d, rd, mn, 2e-6 * scale, &bad);
		TH_LOG("softmax_xent m=%u n=%u: loss %.9g want %.9g, correct %u "
		       "want %u, probs maxdiff %.3g, dlogits maxdiff %.3g",
		       m, n, *loss, rloss, *correct, rcorrect, mdp, mdd);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(rcorrect, *correct);
		EXPECT_LE(fabs(*loss - rloss), 1e-5 * (1 + fabs(rloss)));
		vtpu_cpu_bo_destroy(&b.lb);
		vtpu_cpu_bo_destroy(&b.yb);
		vtpu_cpu_bo_destroy(&b.db);
		vtpu_cpu_bo_destroy(&b.pb);
		vtpu_cpu_bo_destroy(&b.sb);
		free(rp);
		free(rd);
		free(k1);
		free(k2);
	}
	execs_fini(&ex);
}

/* dlogits against central differences of the loss the op computes. */
TEST(softmax_xent_gradcheck)
{
	const uint32_t m = 4, n = 7;
	struct xent_bufs b = { bo_new(m * n * 4), bo_new(m * 4),
			       bo_new(m * n * 4), bo_new(4), bo_new(16) };
	float *x = b.lb.map, *d = b.db.map, *loss = b.sb.map;
	uint32_t *lab = b.yb.map, i;
	float g[4 * 7];
	struct vtpu_cmdbuf cb, cbl;
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	double md = 0;
	long bad = 0;

	ASSERT_NE(NULL, cpu);
	rng_seed(5);
	for (i = 0; i < m * n; i++)
		x[i] = frand() * 3;
	for (i = 0; i < m; i++)
		lab[i] = urand() % n;
	lab[2] = 99;	/* ignored: zero gradient */
	xent_stream(&cb, &b, m, n, VTPU_XENT_DLOGITS, 1.0f / m);
	xent_stream(&cbl, &b, m, n, 0, 1.0f / m);
	ASSERT_EQ(0, run(cpu, &cb));
	memcpy(g, d, sizeof(g));
	for (i = 0; i < m * n; i++) {
		const float h = 1.0f / 64;	/* exact in x +- h */
		float x0 = x[i];
		double lp, lm, fd, err;

		x[i] = x0 + h;
		ASSERT_EQ(0, run(cpu, &cbl));
		lp = *loss;
		x[i] = x0 - h;
		ASSERT_EQ(0, run(cpu, &cbl));
		lm = *loss;
		x[i] = x0;
		fd = (lp - lm) / (2.0 * h);
		err = fabs(fd - g[i]);
		if (err > md)
			md = err;
		/* truncation O(h^2 / m) plus float rounding of the loss */
		if (err > 1e-4)
			bad++;
	}
	TH_LOG("softmax_xent gradient vs finite differences: maxdiff %.3g", md);
	EXPECT_EQ(0, bad);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cbl);
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&b.lb);
	vtpu_cpu_bo_destroy(&b.yb);
	vtpu_cpu_bo_destroy(&b.db);
	vtpu_cpu_bo_destroy(&b.pb);
	vtpu_cpu_bo_destroy(&b.sb);
}

TEST(softmax_xent_nan)
{
	const uint32_t m = 3, n = 5;
	struct xent_bufs b = { bo_new(m * n * 4), bo_new(m * 4),
			       bo_new(m * n * 4), bo_new(m * n * 4), bo_new(16) };
	float *x = b.lb.map, *d = b.db.map;
	uint32_t *lab = b.yb.map, i;
	struct vtpu_cmdbuf cb;
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);

	ASSERT_NE(NULL, cpu);
	for (i = 0; i < m * n; i++)
		x[i] = (float)i / 4;
	for (i = 0; i < m; i++)
		lab[i] = i;
	x[1 * n + 3] = NAN;		/* row 1 */
	x[2 * n + 0] = -INFINITY;	/* row 2: finite result */
	xent_stream(&cb, &b, m, n, VTPU_XENT_DLOGITS | VTPU_XENT_PROBS, 1.0f);
	ASSERT_EQ(0, run(cpu, &cb));
	TH_LOG("loss with a NaN logit: %g; dlogits row 1: %g, row 2: %g %g",
	       *(float *)b.sb.map, d[n], d[2 * n], d[2 * n + 2]);
	EXPECT_TRUE(isnan(*(float *)b.sb.map));
	EXPECT_TRUE(isnan(d[n + 3]));
	EXPECT_TRUE(isfinite(d[2 * n + 2]));
	EXPECT_EQ(0.0f, d[2 * n + 0]);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&b.lb);
	vtpu_cpu_bo_destroy(&b.yb);
	vtpu_cpu_bo_destroy(&b.db);
	vtpu_cpu_bo_destroy(&b.pb);
	vtpu_cpu_bo_destroy(&b.sb);
}

/* ---- SGD, ADAM: replaying one stream ------------------------------------------ */

TEST(sgd_replays)
{
	const uint64_t n = 65536 * 2 + 3;
	/* lr momentum wd flags */
	static const float cfg[][4] = {
		{ 0.1f, 0.0f, 0.0f, 0 },
		{ 0.05f, 0.9f, 1e-4f, 0 },
		{ 0.05f, 0.9f, 1e-3f, VTPU_SGD_NESTEROV },
	};
	struct execs ex;
	size_t c;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (c = 0; c < 3; c++) {
		struct vtpu_bo pb = bo_new(n * 4), gb = bo_new(n * 4), mb = bo_new(n * 4);
		float *p = pb.map, *gr = gb.map, *mo = mb.map;
		float *p0 = malloc(n * 4), *rp = malloc(n * 4), *rm = calloc(n, 4);
		void *keep = malloc(n * 4);
		float lr = cfg[c][0], mu = cfg[c][1], wd = cfg[c][2];
		uint32_t flags = (uint32_t)cfg[c][3];
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		double md = 0;
		uint64_t i;
		int e, t;

		rng_seed(77 + c);
		fill_rand(p0, n);
		fill_rand(gr, n);
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_sgd(&cb, n, lr, mu, wd, flags,
				VTPU_REF(vtpu_cmdbuf_use(&cb, &pb), 0),
				VTPU_REF(vtpu_cmdbuf_use(&cb, &gb), 0),
				mu != 0 ? VTPU_REF(vtpu_cmdbuf_use(&cb, &mb), 0) :
					  VTPU_REF_NONE);
		memcpy(rp, p0, n * 4);
		for (t = 0; t < 5; t++)
			for (i = 0; i < n; i++) {
				float g = gr[i] + wd * rp[i];

				if (mu != 0) {
					rm[i] = mu * rm[i] + g;
					g = flags ? g + mu * rm[i] : rm[i];
				}
				rp[i] = rp[i] - lr * g;
			}
		for (e = 0; e < ex.n; e++) {
			memcpy(p, p0, n * 4);
			memset(mo, 0, n * 4);
			for (t = 0; t < 5; t++)	/* the same stream, 5 times */
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(p, keep, n * 4, e);
		}
		for (i = 0; i < n; i++) {
			double d = fabs((double)p[i] - rp[i]);

			if (d > md)
				md = d;
			if (d > 1e-6 * (1 + fabs(rp[i])))
				bad++;
		}
		TH_LOG("sgd lr %g momentum %g wd %g%s, 5 replays: maxdiff %.3g",
		       lr, mu, wd, flags ? " nesterov" : "", md);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&pb);
		vtpu_cpu_bo_destroy(&gb);
		vtpu_cpu_bo_destroy(&mb);
		free(p0);
		free(rp);
		free(rm);
		free(keep);
	}
	execs_fini(&ex);
}

TEST(adam_replays)
{
	/* two parameter tensors sharing one step state, as a compiled
	 * training step would; the gradients change between replays */
	const uint64_t n1 = 65536 + 5, n2 = 9;
	const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
	struct execs ex;
	int decoupled;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (decoupled = 0; decoupled < 2; decoupled++) {
		const uint64_t n = n1 + n2;
		const float wd = decoupled ? 0.01f : 1e-4f;
		struct vtpu_bo pb = bo_new(n * 4), gb = bo_new(n * 4);
		struct vtpu_bo mb = bo_new(n * 4), vb = bo_new(n * 4);
		struct vtpu_bo sb = bo_new(8);
		float *p = pb.map, *gr = gb.map, *mo = mb.map, *ve = vb.map;
		float *st = sb.map;
		float *p0 = malloc(n * 4), *rp = malloc(n * 4);
		float *rm = calloc(n, 4), *rv = calloc(n, 4);
		float *grads = malloc(n * 4 * 6);
		void *keep = malloc(n * 4);
		struct vtpu_cmdbuf cb;
		struct vtpu_adam_desc d = { .lr = lr, .beta1 = b1, .beta2 = b2,
					    .eps = eps, .weight_decay = wd,
					    .flags = decoupled ? VTPU_ADAM_DECOUPLED : 0 };
		float c1 = 0, c2 = 0;
		long bad = 0, diff = 0;
		double md = 0, mdt = 0;
		uint64_t i;
		int e, t;

		rng_seed(4242 + decoupled);
		fill_rand(p0, n);
		fill_rand(grads, n * 6);
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_adam_step(&cb, b1, b2,
				      VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0));
		d.state = VTPU_REF(vtpu_cmdbuf_use(&cb, &sb), 0);
		d.count = n1;
		d.param = VTPU_REF(vtpu_cmdbuf_use(&cb, &pb), 0);
		d.grad = VTPU_REF(vtpu_cmdbuf_use(&cb, &gb), 0);
		d.m = VTPU_REF(vtpu_cmdbuf_use(&cb, &mb), 0);
		d.v = VTPU_REF(vtpu_cmdbuf_use(&cb, &vb), 0);
		vtpu_cmdbuf_adam(&cb, &d);
		d.count = n2;
		d.param.off = d.grad.off = d.m.off = d.v.off = n1 * 4;
		vtpu_cmdbuf_adam(&cb, &d);

		/* reference: the documented update with t counted here */
		memcpy(rp, p0, n * 4);
		for (t = 0; t < 6; t++) {
			const float *g_t = grads + (size_t)t * n;

			c1 = b1 * c1 + (1.0f - b1);
			c2 = b2 * c2 + (1.0f - b2);
			for (i = 0; i < n; i++) {
				float w = rp[i], g = g_t[i];

				if (decoupled)
					w = w - lr * wd * w;
				else
					g = g + wd * w;
				rm[i] = b1 * rm[i] + (1.0f - b1) * g;
				rv[i] = b2 * rv[i] + (1.0f - b2) * g * g;
				rp[i] = w - (lr / c1) * rm[i] /
					(sqrtf(rv[i]) / sqrtf(c2) + eps);
			}
		}
		for (e = 0; e < ex.n; e++) {
			memcpy(p, p0, n * 4);
			memset(mo, 0, n * 4);
			memset(ve, 0, n * 4);
			memset(st, 0, 8);	/* zeroed state: t = 0 */
			for (t = 0; t < 6; t++) {
				memcpy(gr, grads + (size_t)t * n, n * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
			}
			diff += same_bits(p, keep, n * 4, e);
		}
		for (i = 0; i < n; i++) {
			double dd = fabs((double)p[i] - rp[i]);

			if (dd > md)
				md = dd;
			if (dd > 1e-6 * (1 + fabs(rp[i])))
				bad++;
		}
		/* the state against the closed form 1 - beta^t */
		mdt = fabs(st[0] - (1 - pow(b1, 6))) + fabs(st[1] - (1 - pow(b2, 6)));
		TH_LOG("adam%s over 6 replays of one stream: param maxdiff %.3g; "
		       "state {%.9g, %.9g} vs 1-beta^6 off by %.3g",
		       decoupled ? "w" : "", md, st[0], st[1], mdt);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_LE(mdt, 1e-6);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&pb);
		vtpu_cpu_bo_destroy(&gb);
		vtpu_cpu_bo_destroy(&mb);
		vtpu_cpu_bo_destroy(&vb);
		vtpu_cpu_bo_destroy(&sb);
		free(p0);
		free(rp);
		free(rm);
		free(rv);
		free(grads);
		free(keep);
	}
	execs_fini(&ex);
}

TEST_HARNESS_MAIN
