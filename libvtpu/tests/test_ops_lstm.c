// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the fused LSTM cell: LSTM_CELL against a double
 * reference of the cell, LSTM_CELL_GRAD against a double reference of its
 * formulas and against central differences of the double forward; both
 * bitwise the same on every SIMD level with 1 to 4 threads, whatever the
 * gates' layout (rows [B][4H] or planes with gaps), in place as out of
 * place, and bitwise what the unfused ELEMENTWISE sequence compile.c
 * emits with VTPU_UNFUSED_LSTM gives, on every level.
 */
#include "test_ops.h"

static double sig(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/* A layout of the 4-gate operands: gate k, row r, column j. */
struct ls_layout {
	uint32_t bt, hid;
	uint64_t rs, gs;
};

static uint64_t ls_at(const struct ls_layout *l, uint32_t k, size_t r,
		      uint32_t j)
{
	return k * l->gs + r * l->rs + j;
}

/* elements a 4-gate operand spans */
static uint64_t ls_span(const struct ls_layout *l)
{
	return 3 * l->gs + (l->bt - 1) * l->rs + l->hid;
}

/* [B][4H] (@planes 0) or planes with padded rows and gaps between them */
static struct ls_layout ls_make(uint32_t bt, uint32_t hid, int planes)
{
	struct ls_layout l = { bt, hid, 4ull * hid, hid };

	if (planes) {
		l.rs = hid + 3;
		l.gs = (uint64_t)bt * l.rs + 7;
	}
	return l;
}

/* The cell in double from z (layout @l) and c_prev [B][H]. */
static void ref_cell(const struct ls_layout *l, const double *z,
		     const double *cp, size_t r, uint32_t j, double *c,
		     double *h)
{
	double i = sig(z[ls_at(l, 0, r, j)]), f = sig(z[ls_at(l, 1, r, j)]);
	double g = tanh(z[ls_at(l, 2, r, j)]), o = sig(z[ls_at(l, 3, r, j)]);

	*c = f * cp[r * l->hid + j] + i * g;
	*h = o * tanh(*c);
}

/* The operands, each its own buffer. */
struct ls_bufs {
	struct vtpu_bo z, cp, act, c, tc, h, dh, dcn, dz, dcp;
};

static void ls_bufs_new(struct ls_bufs *b, const struct ls_layout *l)
{
	size_t n = (size_t)l->bt * l->hid, s = ls_span(l);

	b->z = bo_new(s * 4);
	b->act = bo_new(s * 4);
	b->dz = bo_new(s * 4);
	b->cp = bo_new(n * 4);
	b->c = bo_new(n * 4);
	b->tc = bo_new(n * 4);
	b->h = bo_new(n * 4);
	b->dh = bo_new(n * 4);
	b->dcn = bo_new(n * 4);
	b->dcp = bo_new(n * 4);
}

static void ls_bufs_free(struct ls_bufs *b)
{
	BOS_DESTROY(&b->z, &b->cp, &b->act, &b->c, &b->tc, &b->h, &b->dh,
		    &b->dcn, &b->dz, &b->dcp);
}

/*
 * LSTM_CELL then LSTM_CELL_GRAD. In place with @inplace: act over z, dz
 * over act, dc_prev over dc_next (the gradient destroys act and dc_next).
 */
static void ls_stream(struct vtpu_cmdbuf *cb, struct ls_bufs *b,
		      const struct ls_layout *l, int inplace)
{
	struct vtpu_lstm_desc d = { .batch = l->bt, .hidden = l->hid,
				    .row_stride = l->rs, .gate_stride = l->gs };

	vtpu_cmdbuf_init(cb);
	d.gates = VTPU_REF(vtpu_cmdbuf_use(cb, &b->z), 0);
	d.c_prev = VTPU_REF(vtpu_cmdbuf_use(cb, &b->cp), 0);
	d.act = inplace ? d.gates : VTPU_REF(vtpu_cmdbuf_use(cb, &b->act), 0);
	d.c = VTPU_REF(vtpu_cmdbuf_use(cb, &b->c), 0);
	d.tc = VTPU_REF(vtpu_cmdbuf_use(cb, &b->tc), 0);
	d.h = VTPU_REF(vtpu_cmdbuf_use(cb, &b->h), 0);
	d.dh = VTPU_REF(vtpu_cmdbuf_use(cb, &b->dh), 0);
	d.dc_next = VTPU_REF(vtpu_cmdbuf_use(cb, &b->dcn), 0);
	d.dgates = inplace ? d.act : VTPU_REF(vtpu_cmdbuf_use(cb, &b->dz), 0);
	d.dc_prev = inplace ? d.dc_next :
			      VTPU_REF(vtpu_cmdbuf_use(cb, &b->dcp), 0);
	vtpu_cmdbuf_lstm_cell(cb, &d);
	vtpu_cmdbuf_lstm_cell_grad(cb, &d);
}

/* z mostly in [-4, 4], with a few saturating, huge and signed zeros */
static void fill_gates(float *z, size_t n)
{
	static const float odd[] = { 30.0f, -30.0f, 1e30f, -1e30f, 0.0f,
				     -0.0f, 1e-20f };
	size_t i;

	for (i = 0; i < n; i++)
		z[i] = urand() % 50 ? frand() * 4 : odd[urand() % 7];
}

/* the 4-gate operand @x of layout @l as [4][B][H] */
static void ls_gather(const struct ls_layout *l, const float *x, float *out)
{
	uint32_t k, j;
	size_t r, q = 0;

	for (k = 0; k < 4; k++)
		for (r = 0; r < l->bt; r++)
			for (j = 0; j < l->hid; j++)
				out[q++] = x[ls_at(l, k, r, j)];
}

/*
 * The forward and the gradient against double references, every
 * executor bitwise the same, both layouts the same, in place the same as
 * out of place; shapes from one cell to several tiles cut mid-row.
 */
TEST(lstm_reference)
{
	/* B H */
	static const uint32_t shapes[][2] = {
		{ 1, 1 }, { 2, 3 }, { 3, 17 }, { 5, 100 }, { 64, 256 },
		{ 7, 3000 }, { 300, 41 }, { 1, 20000 },
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	TH_LOG("%d executors", ex.n);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t bt = shapes[s][0], hid = shapes[s][1], j, k;
		size_t n = (size_t)bt * hid, i, r;
		float *canon[2][6];
		int p, q;

		for (p = 0; p < 2; p++)
			for (q = 0; q < 6; q++)
				canon[p][q] = malloc(n * 16);
		for (p = 0; p < 2; p++) {	/* rows, planes */
			struct ls_layout l = ls_make(bt, hid, p);
			size_t sp = ls_span(&l);
			struct ls_bufs b;
			double *rz = malloc(sp * 8), *rcp = malloc(n * 8);
			double *ra = malloc(sp * 8), *rc = malloc(n * 8);
			double *rh = malloc(n * 8), *rtc = malloc(n * 8);
			double *rdz = malloc(sp * 8), *rdcp = malloc(n * 8);
			double *rh2 = malloc(n * 32);
			void *keep[6], *z0 = malloc(sp * 4);
			void *dcn0 = malloc(n * 4);
			const float *act, *cp, *tc, *dh, *dcn;
			double ma, mc, mt, mh, mdz, mdc;
			long bad = 0, diff = 0;
			struct vtpu_cmdbuf cb;
			int e;

			for (q = 0; q < 6; q++)
				keep[q] = malloc(sp * 4);
			ls_bufs_new(&b, &l);
			act = b.act.map;
			cp = b.cp.map;
			tc = b.tc.map;
			dh = b.dh.map;
			dcn = b.dcn.map;
			/* the same values in either layout */
			rng_seed(11 + s);
			fill_gates(canon[p][0], 4 * n);
			memset(b.z.map, 0, sp * 4);
			for (k = 0, q = 0; k < 4; k++)
				for (r = 0; r < bt; r++)
					for (j = 0; j < hid; j++)
						((float *)b.z.map)
						[ls_at(&l, k, r, j)] =
							canon[p][0][q++];
			fill_rand(b.cp.map, n);
			fill_rand(b.dh.map, n);
			fill_rand(b.dcn.map, n);
			for (i = 0; i < n; i++)
				((float *)b.cp.map)[i] *= 3;
			memcpy(z0, b.z.map, sp * 4);
			memcpy(dcn0, b.dcn.map, n * 4);
			for (i = 0; i < sp; i++)
				rz[i] = ((float *)b.z.map)[i];
			for (k = 0; k < 4; k++)
				for (r = 0; r < bt; r++)
					for (j = 0; j < hid; j++) {
						uint64_t a = ls_at(&l, k, r, j);

						ra[a] = k == 2 ? tanh(rz[a]) :
								 sig(rz[a]);
					}
			for (i = 0; i < n; i++)
				rcp[i] = cp[i];
			for (r = 0; r < bt; r++)
				for (j = 0; j < hid; j++)
					ref_cell(&l, rz, rcp, r, j,
						 &rc[r * hid + j],
						 &rh[r * hid + j]);
			for (i = 0; i < n; i++)
				rtc[i] = tanh(rc[i]);

			ls_stream(&cb, &b, &l, 0);
			for (e = 0; e < ex.n; e++) {
				memset(b.act.map, 0xff, sp * 4);
				memset(b.dz.map, 0xff, sp * 4);
				memset(b.c.map, 0xff, n * 4);
				memset(b.tc.map, 0xff, n * 4);
				memset(b.h.map, 0xff, n * 4);
				memset(b.dcp.map, 0xff, n * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				diff += same_bits(b.act.map, keep[0], sp * 4,
						  e);
				diff += same_bits(b.c.map, keep[1], n * 4, e);
				diff += same_bits(b.tc.map, keep[2], n * 4, e);
				diff += same_bits(b.h.map, keep[3], n * 4, e);
				diff += same_bits(b.dz.map, keep[4], sp * 4,
						  e);
				diff += same_bits(b.dcp.map, keep[5], n * 4,
						  e);
			}
			vtpu_cmdbuf_fini(&cb);
			/* the gradient's formulas in double, from its inputs */
			for (r = 0; r < bt; r++) {
				for (j = 0; j < hid; j++) {
					size_t c1 = r * hid + j;
					double gi = act[ls_at(&l, 0, r, j)];
					double gf = act[ls_at(&l, 1, r, j)];
					double gg = act[ls_at(&l, 2, r, j)];
					double go = act[ls_at(&l, 3, r, j)];
					double t = tc[c1];
					double dc = dh[c1] * go * (1 - t * t) +
						    dcn[c1];

					rdz[ls_at(&l, 0, r, j)] =
						dc * gg * gi * (1 - gi);
					rdz[ls_at(&l, 1, r, j)] =
						dc * cp[c1] * gf * (1 - gf);
					rdz[ls_at(&l, 2, r, j)] =
						dc * gi * (1 - gg * gg);
					rdz[ls_at(&l, 3, r, j)] =
						dh[c1] * t * go * (1 - go);
					rdcp[c1] = dc * gf;
				}
			}
			/* act and dz as [4][B][H] against their references */
			ls_gather(&l, act, canon[p][1]);
			ls_gather(&l, b.dz.map, canon[p][2]);
			for (k = 0, i = 0; k < 4; k++)
				for (r = 0; r < bt; r++)
					for (j = 0; j < hid; j++, i++) {
						rz[i] = ra[ls_at(&l, k, r, j)];
						rh2[i] = rdz[ls_at(&l, k, r, j)];
					}
			ma = maxdiff(canon[p][1], rz, 4 * n, 1.2e-7, &bad);
			mdz = maxdiff(canon[p][2], rh2, 4 * n, 2e-6, &bad);
			mc = maxdiff(b.c.map, rc, n, 1e-6, &bad);
			mt = maxdiff(tc, rtc, n, 1e-6, &bad);
			mh = maxdiff(b.h.map, rh, n, 1e-6, &bad);
			mdc = maxdiff(b.dcp.map, rdcp, n, 2e-6, &bad);
			TH_LOG("lstm B=%u H=%u %s: act %.3g c %.3g tc %.3g h %.3g dz %.3g dc_prev %.3g",
			       bt, hid, p ? "planes" : "rows", ma, mc, mt,
			       mh, mdz, mdc);
			EXPECT_EQ(0, bad);
			EXPECT_EQ(0, diff);
			memcpy(canon[p][3], b.c.map, n * 4);
			memcpy(canon[p][3] + n, b.tc.map, n * 4);
			memcpy(canon[p][3] + 2 * n, b.h.map, n * 4);
			memcpy(canon[p][3] + 3 * n, b.dcp.map, n * 4);

			/* in place: the same bits */
			ls_stream(&cb, &b, &l, 1);
			ASSERT_EQ(0, run(ex.cpu[ex.n - 1], &cb));
			vtpu_cmdbuf_fini(&cb);
			/* the cells of dz (not the gaps between them) */
			ls_gather(&l, b.z.map, canon[p][4]);
			EXPECT_EQ(0, memcmp(canon[p][4], canon[p][2], n * 16));
			EXPECT_EQ(0, memcmp(b.c.map, keep[1], n * 4));
			EXPECT_EQ(0, memcmp(b.tc.map, keep[2], n * 4));
			EXPECT_EQ(0, memcmp(b.h.map, keep[3], n * 4));
			EXPECT_EQ(0, memcmp(b.dcn.map, keep[5], n * 4));
			ls_bufs_free(&b);
			for (q = 0; q < 6; q++)
				free(keep[q]);
			FREE_ALL(z0, dcn0, rz, rcp, ra, rc, rh, rtc, rdz,
				 rdcp, rh2);
		}
		/* both layouts: the same gates in, the same bits out */
		EXPECT_EQ(0, memcmp(canon[0][1], canon[1][1], n * 16));
		EXPECT_EQ(0, memcmp(canon[0][2], canon[1][2], n * 16));
		EXPECT_EQ(0, memcmp(canon[0][3], canon[1][3], n * 16));
		for (p = 0; p < 2; p++)
			for (q = 0; q < 6; q++)
				free(canon[p][q]);
	}
	execs_fini(&ex);
}

/* loss = <wh, h> + <wc, c> of the double forward */
static double ref_loss(const struct ls_layout *l, const double *z,
		       const double *cp, const double *wh, const double *wc)
{
	double loss = 0, c, h;
	uint32_t r, j;

	for (r = 0; r < l->bt; r++)
		for (j = 0; j < l->hid; j++) {
			ref_cell(l, z, cp, r, j, &c, &h);
			loss += wh[r * l->hid + j] * h + wc[r * l->hid + j] * c;
		}
	return loss;
}

/*
 * dgates and dc_prev are the gradients of loss = <wh, h> + <wc, c> (dh =
 * wh, dc_next = wc) by central differences of the double forward in every
 * z and c_prev, in both layouts.
 */
TEST(lstm_grad_finite_differences)
{
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	const uint32_t bt = 3, hid = 5, n = bt * hid;
	double cp[15], wh[15], wc[15], md = 0;
	long bad = 0;
	int p;

	ASSERT_NE(NULL, cpu);
	for (p = 0; p < 2; p++) {
		struct ls_layout l = ls_make(bt, hid, p);
		size_t sp = ls_span(&l);
		double *z = calloc(sp, 8);
		const float *dz, *dcp;
		struct vtpu_cmdbuf cb;
		struct ls_bufs b;
		uint32_t i, k, r, j;

		ls_bufs_new(&b, &l);
		dz = b.dz.map;
		dcp = b.dcp.map;
		rng_seed(5);
		memset(b.z.map, 0, sp * 4);
		for (k = 0; k < 4; k++)
			for (r = 0; r < bt; r++)
				for (j = 0; j < hid; j++) {
					uint64_t a = ls_at(&l, k, r, j);

					z[a] = ((float *)b.z.map)[a] =
						frand() * 3;
				}
		for (i = 0; i < n; i++) {
			cp[i] = ((float *)b.cp.map)[i] = frand() * 2;
			wh[i] = ((float *)b.dh.map)[i] = frand();
			wc[i] = ((float *)b.dcn.map)[i] = frand();
		}
		ls_stream(&cb, &b, &l, 0);
		ASSERT_EQ(0, run(cpu, &cb));
		vtpu_cmdbuf_fini(&cb);
		for (i = 0; i < 5 * n; i++) {
			uint64_t a = i < 4 * n ? ls_at(&l, i / n, i % n / hid,
						       i % hid) : 0;
			double *x = i < 4 * n ? &z[a] : &cp[i - 4 * n];
			double got = i < 4 * n ? dz[a] : dcp[i - 4 * n];
			double x0 = *x, hs = 1e-5, fp, fm, err;

			*x = x0 + hs;
			fp = ref_loss(&l, z, cp, wh, wc);
			*x = x0 - hs;
			fm = ref_loss(&l, z, cp, wh, wc);
			*x = x0;
			err = fabs((fp - fm) / (2 * hs) - got);
			if (err > md)
				md = err;
			if (err > 1e-5) {
				if (bad < 5)
					fprintf(stderr, "  [%u] got %.9g want %.9g\n",
						i, got, (fp - fm) / (2 * hs));
				bad++;
			}
		}
		TH_LOG("%s: max |grad - finite difference| %.3g",
		       p ? "planes" : "rows", md);
		ls_bufs_free(&b);
		free(z);
	}
	EXPECT_EQ(0, bad);
	vtpu_cpu_destroy(cpu);
}

/*
 * compile.c's step, in floats of one buffer: the gates' planes (T steps
 * of [B][H] each, this step the second), c_prev, c, tc, h, dh, dc, the
 * planes of dz, and the unfused form's temporaries tmp and y.
 */
enum { U_T = 3, U_STEP = 1 };

struct u_regions {
	uint64_t n, gs, z, cp, c, tc, h, dh, dc, dz, tmp, y, end;
};

static struct u_regions u_regions(uint64_t n)
{
	struct u_regions u = { .n = n, .gs = U_T * n };

	u.z = 0;
	u.cp = 4 * u.gs;
	u.c = u.cp + n;
	u.tc = u.c + n;
	u.h = u.tc + n;
	u.dh = u.h + n;
	u.dc = u.dh + n;
	u.dz = u.dc + n;
	u.tmp = u.dz + 4 * u.gs;
	u.y = u.tmp + n;
	u.end = u.y + n;
	return u;
}

/* The step as compile.c emits it: fused, or ELEMENTWISE (@unfused). */
static void u_stream(struct vtpu_cmdbuf *cb, struct vtpu_bo *bo,
		     const struct u_regions *u, uint32_t bt, uint32_t hid,
		     int unfused)
{
	uint64_t n = u->n, st = U_STEP * n;
	uint64_t gi = u->z + st, gf = gi + u->gs, gg = gf + u->gs;
	uint64_t go = gg + u->gs, dz = u->dz + st;
	uint32_t k;

#define R(off) VTPU_REF(k, (uint64_t)(off) * 4)
#define EW(op, x, y, z)                                                        \
	vtpu_cmdbuf_elementwise(cb, VTPU_EW_##op, n, 0, 0, R(x), y, R(z))
#define NONE VTPU_REF_NONE
	vtpu_cmdbuf_init(cb);
	k = vtpu_cmdbuf_use(cb, bo);
	if (!unfused) {
		struct vtpu_lstm_desc d = {
			.batch = bt, .hidden = hid, .row_stride = hid,
			.gate_stride = u->gs, .gates = R(gi), .act = R(gi),
			.c_prev = R(u->cp), .c = R(u->c), .tc = R(u->tc),
			.h = R(u->h), .dh = R(u->dh), .dc_next = R(u->dc),
			.dgates = R(dz), .dc_prev = R(u->dc),
		};

		vtpu_cmdbuf_lstm_cell(cb, &d);
		vtpu_cmdbuf_lstm_cell_grad(cb, &d);
		return;
	}
	EW(SIGMOID, gi, NONE, gi);
	EW(SIGMOID, gf, NONE, gf);
	EW(TANH, gg, NONE, gg);
	EW(SIGMOID, go, NONE, go);
	EW(MUL, gf, R(u->cp), u->c);
	EW(MUL, gi, R(gg), u->tmp);
	EW(ADD, u->c, R(u->tmp), u->c);
	EW(TANH, u->c, NONE, u->tc);
	EW(MUL, go, R(u->tc), u->h);
	EW(MUL, u->dh, R(go), u->y);
	EW(TANH_GRAD, u->tc, R(u->y), u->y);
	EW(ADD, u->y, R(u->dc), u->dc);
	EW(MUL, u->dh, R(u->tc), u->y);
	EW(SIGMOID_GRAD, go, R(u->y), dz + 3 * u->gs);
	EW(MUL, u->dc, R(gg), u->y);
	EW(SIGMOID_GRAD, gi, R(u->y), dz);
	EW(MUL, u->dc, R(u->cp), u->y);
	EW(SIGMOID_GRAD, gf, R(u->y), dz + u->gs);
	EW(MUL, u->dc, R(gi), u->y);
	EW(TANH_GRAD, gg, R(u->y), dz + 2 * u->gs);
	EW(MUL, u->dc, R(gf), u->dc);
#undef NONE
#undef EW
#undef R
}

/*
 * The fused ops give bitwise what the unfused ELEMENTWISE sequence gives
 * (compile.c's step, in place as compile.c runs it), on every SIMD level
 * and thread count; the buffers compared whole but for the temporaries.
 */
TEST(lstm_equals_unfused)
{
	static const uint32_t shapes[][2] = {
		{ 1, 1 }, { 3, 17 }, { 64, 128 }, { 64, 256 }, { 7, 3000 },
	};
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t bt = shapes[s][0], hid = shapes[s][1];
		struct u_regions u = u_regions((uint64_t)bt * hid);
		struct vtpu_bo f = bo_new(u.end * 4), e0 = bo_new(u.end * 4);
		float *init = malloc(u.end * 4);
		long differ = 0;
		int e, mode;

		rng_seed(40 + s);
		fill_gates(init, 4 * u.gs);
		fill_rand(init + u.cp, u.end - u.cp);
		for (e = 0; e < ex.n; e++) {
			for (mode = 0; mode < 2; mode++) {
				struct vtpu_bo *bo = mode ? &e0 : &f;
				struct vtpu_cmdbuf cb;

				memcpy(bo->map, init, u.end * 4);
				u_stream(&cb, bo, &u, bt, hid, mode);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				vtpu_cmdbuf_fini(&cb);
			}
			/* all but tmp and y */
			differ += memcmp(f.map, e0.map, u.tmp * 4) != 0;
		}
		TH_LOG("B=%u H=%u: %ld of %d executors differ", bt, hid,
		       differ, ex.n);
		EXPECT_EQ(0, differ);
		/* and the step did something: h is not c_prev's copy */
		EXPECT_NE(0, memcmp((float *)f.map + u.h, init + u.h,
				    u.n * 4));
		vtpu_cpu_bo_destroy(&f);
		vtpu_cpu_bo_destroy(&e0);
		free(init);
	}
	execs_fini(&ex);
}

TEST_HARNESS_MAIN
