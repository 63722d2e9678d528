// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the training ops (IM2COL, COL2IM, MAXPOOL(_GRAD),
 * CONV_POOL(_WGRAD), CONV(_DGRAD, _WGRAD), ELEMENTWISE, REDUCE, SOFTMAX_XENT, SGD,
 * ADAM_STEP/ADAM, CAST, DROPOUT) through
 * libvtpu's cpu backend, against plain C references in this file.
 *
 * Every op runs on every SIMD level this CPU has, with 1 and 2 threads;
 * the outputs must be bitwise identical across all of those executors
 * (the ops' tiling depends on the shape only) and match the reference.
 * Plus: COL2IM is the adjoint of IM2COL, the softmax-xent gradient
 * matches finite differences of its loss, optimizers over several
 * replays of one stream, NaN/Inf, and every validator rejection path of
 * these ops. No device needed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "../../selftests/vtpu/vtpu_denormals.h"

/* ---- executors: every SIMD level x {1, 2} threads ------------------------ */

#define MAX_EXEC 6

struct execs {
	struct vtpu_cpu *cpu[MAX_EXEC];
	int n;
};

static void execs_init(struct execs *ex)
{
	int simd, t;

	memset(ex, 0, sizeof(*ex));
	for (simd = VTPU_SIMD_SCALAR; simd <= VTPU_SIMD_AVX512; simd++) {
		for (t = 1; t <= 2; t++) {
			struct vtpu_cpu *cpu = vtpu_cpu_create(t, simd,
							       VTPU_CPU_GEMM_ENGINE);

			if (cpu)
				ex->cpu[ex->n++] = cpu;
		}
	}
}

static void execs_fini(struct execs *ex)
{
	int i;

	for (i = 0; i < ex->n; i++)
		vtpu_cpu_destroy(ex->cpu[i]);
}

static int run(struct vtpu_cpu *cpu, struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job;
	int ret;

	memset(&job, 0, sizeof(job));	/* no repeat, no strides */
	ret = vtpu_cpu_run(cpu, cb, &job);

	if (ret)
		fprintf(stderr, "vtpu_cpu_run: %d (cmd %u operand %u reason %u)\n",
			ret, job.error.cmd, job.error.operand, job.error.reason);
	return ret;
}

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 88172645463325252ull;
}

static uint32_t urand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 32);
}

static float frand(void)
{
	return (float)((urand() >> 8) * (2.0 / 16777216.0) - 1.0);
}

static void fill_rand(float *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = frand();
}

static struct vtpu_bo bo_new(size_t bytes)
{
	struct vtpu_bo bo;

	if (vtpu_cpu_bo_create(bytes ? bytes : 4, &bo))
		abort();
	return bo;
}

/*
 * The bitwise check: the first executor's output is kept in @keep, every
 * later one must equal it. Returns the number of executors that differed.
 */
static int same_bits(const void *out, void *keep, size_t bytes, int exec)
{
	if (exec == 0) {
		memcpy(keep, out, bytes);
		return 0;
	}
	return memcmp(out, keep, bytes) != 0;
}

/* max |got - ref| over n, with NaN needing NaN; *bad counts > tol */
static double maxdiff(const float *got, const double *ref, size_t n,
		      double tol, long *bad)
{
	double md = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d;

		if (isnan(ref[i]) || isnan(got[i])) {
			if (!(isnan(ref[i]) && isnan(got[i])))
				(*bad)++;
			continue;
		}
		if (isinf(ref[i]) || isinf(got[i])) {
			if (got[i] != ref[i])
				(*bad)++;
			continue;
		}
		d = fabs(got[i] - ref[i]);
		if (d > md)
			md = d;
		if (d > tol * (1.0 + fabs(ref[i]))) {
			if (*bad < 5)
				fprintf(stderr, "  [%zu] got %.9g want %.9g\n",
					i, got[i], ref[i]);
			(*bad)++;
		}
	}
	return md;
}

static struct vtpu_window win_of(const uint32_t g[10])
{
	struct vtpu_window w = {
		.n = g[0], .h = g[1], .w = g[2], .c = g[3], .kh = g[4],
		.kw = g[5], .stride_h = g[6], .stride_w = g[7],
		.pad_h = g[8], .pad_w = g[9],
	};

	return w;
}

static uint32_t out_dim(uint32_t in, uint32_t k, uint32_t s, uint32_t p)
{
	return (in + 2 * p - k) / s + 1;
}

/* Shapes: n h w c kh kw sh sw ph pw. */
static const uint32_t conv_shapes[][10] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 },
	{ 2, 5, 7, 3, 3, 3, 1, 1, 1, 1 },
	{ 3, 8, 8, 4, 3, 3, 2, 2, 1, 1 },
	{ 1, 13, 11, 5, 5, 3, 3, 2, 2, 1 },
	{ 2, 6, 6, 1, 2, 2, 2, 2, 0, 0 },
	{ 1, 7, 7, 17, 7, 7, 1, 1, 3, 3 },
	{ 1, 9, 9, 2, 2, 2, 3, 3, 0, 0 },	/* stride > k: gaps */
	{ 2, 3, 17, 3, 3, 5, 1, 4, 0, 4 },	/* pad_w = k - 1 */
	{ 4, 32, 32, 16, 3, 3, 1, 1, 1, 1 },	/* many tiles */
	{ 1, 11, 5, 1, 11, 5, 1, 1, 0, 0 },	/* one window */
};
#define NCONV (sizeof(conv_shapes) / sizeof(conv_shapes[0]))

/* ---- IM2COL / COL2IM ------------------------------------------------------ */

static double im2col_ref_at(const float *x, const uint32_t *g, uint32_t oh,
			    uint32_t ow, size_t row, size_t col)
{
	size_t K = (size_t)g[4] * g[5] * g[3];
	size_t ox = row % ow, oy = (row / ow) % oh, n = row / ow / oh;
	size_t ch = col % g[3], kx = (col / g[3]) % g[5], ky = col / g[3] / g[5];
	long iy = (long)(oy * g[6] + ky) - g[8];
	long ix = (long)(ox * g[7] + kx) - g[9];

	(void)K;
	if (iy < 0 || iy >= (long)g[1] || ix < 0 || ix >= (long)g[2])
		return 0.0;
	return x[(((size_t)n * g[1] + iy) * g[2] + ix) * g[3] + ch];
}

TEST(im2col_col2im)
{
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	TH_LOG("%d executors (SIMD levels x 1, 2 threads)", ex.n);
	for (s = 0; s < NCONV; s++) {
		const uint32_t *g = conv_shapes[s];
		struct vtpu_window w = win_of(g);
		uint32_t oh = out_dim(g[1], g[4], g[6], g[8]);
		uint32_t ow = out_dim(g[2], g[5], g[7], g[9]);
		size_t rows = (size_t)g[0] * oh * ow;
		size_t K = (size_t)g[4] * g[5] * g[3];
		size_t nimg = (size_t)g[0] * g[1] * g[2] * g[3];
		size_t ncol = rows * K, i, r;
		struct vtpu_bo xb = bo_new(nimg * 4 + 64), cb_ = bo_new(ncol * 4);
		struct vtpu_bo yb = bo_new(ncol * 4), db = bo_new(nimg * 4);
		float *x = (float *)((char *)xb.map + 64), *cols = cb_.map;
		float *y = yb.map, *dx = db.map;
		float *keep1 = malloc(ncol * 4), *keep2 = malloc(nimg * 4);
		double *ref = calloc(nimg, sizeof(double)), lhs = 0, rhs = 0;
		struct vtpu_cmdbuf cb;
		long bad = 0, bad2 = 0, diff = 0;
		double md;
		int e;

		rng_seed(s);
		fill_rand(x, nimg);
		fill_rand(y, ncol);
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_im2col(&cb, &w, VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 64),
				   VTPU_REF(vtpu_cmdbuf_use(&cb, &cb_), 0));
		vtpu_cmdbuf_col2im(&cb, &w, VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0),
				   VTPU_REF(vtpu_cmdbuf_use(&cb, &db), 0));
		for (e = 0; e < ex.n; e++) {
			memset(cols, 0xff, ncol * 4);	/* NaN: all written? */
			memset(dx, 0xff, nimg * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(cols, keep1, ncol * 4, e);
			diff += same_bits(dx, keep2, nimg * 4, e);
		}
		/* IM2COL is a copy: exact */
		for (r = 0; r < rows; r++)
			for (i = 0; i < K; i++)
				if (memcmp(&(float){ (float)im2col_ref_at(x, g, oh, ow, r, i) },
					   &cols[r * K + i], 4))
					bad++;
		/* COL2IM: scatter-add reference in double */
		for (r = 0; r < rows; r++) {
			for (i = 0; i < K; i++) {
				size_t ox = r % ow, oy = (r / ow) % oh, n = r / ow / oh;
				size_t ch = i % g[3], kx = (i / g[3]) % g[5];
				size_t ky = i / g[3] / g[5];
				long iy = (long)(oy * g[6] + ky) - g[8];
				long ix = (long)(ox * g[7] + kx) - g[9];

				lhs += (double)cols[r * K + i] * y[r * K + i];
				if (iy < 0 || iy >= (long)g[1] || ix < 0 ||
				    ix >= (long)g[2])
					continue;
				ref[(((size_t)n * g[1] + iy) * g[2] + ix) * g[3] + ch] +=
					y[r * K + i];
			}
		}
		for (i = 0; i < nimg; i++)
			rhs += (double)x[i] * dx[i];
		md = maxdiff(dx, ref, nimg, 1e-5, &bad2);
		TH_LOG("im2col %zux%zu exact (%ld bad); col2im maxdiff %.3g; "
		       "<im2col x, y> = %.9g, <x, col2im y> = %.9g",
		       rows, K, bad, md, lhs, rhs);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, bad2);
		EXPECT_EQ(0, diff);
		EXPECT_LE(fabs(lhs - rhs), 1e-5 * (1 + fabs(lhs)) * sqrt((double)ncol));
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&cb_);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&db);
		free(keep1);
		free(keep2);
		free(ref);
	}
	execs_fini(&ex);
}

/* ---- MAXPOOL / MAXPOOL_GRAD ------------------------------------------------ */

static const uint32_t pool_shapes[][10] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 },
	{ 2, 5, 5, 3, 2, 2, 2, 2, 0, 0 },
	{ 1, 7, 9, 4, 3, 3, 2, 2, 1, 1 },
	{ 3, 6, 6, 5, 3, 3, 1, 1, 1, 1 },	/* overlapping windows */
	{ 1, 13, 7, 3, 4, 2, 3, 1, 2, 1 },
	{ 8, 32, 32, 16, 2, 2, 2, 2, 0, 0 },	/* many tiles */
	{ 2, 30, 30, 9, 3, 3, 2, 2, 1, 1 },
};
#define NPOOL (sizeof(pool_shapes) / sizeof(pool_shapes[0]))

/* reference forward: first maximum in window order, NaN wins */
static void maxpool_ref(const float *x, const uint32_t *g, uint32_t oh,
			uint32_t ow, float *y, uint32_t *idx)
{
	size_t n, oy, ox, c;
	uint32_t ky, kx;

	for (n = 0; n < g[0]; n++)
	for (oy = 0; oy < oh; oy++)
	for (ox = 0; ox < ow; ox++)
	for (c = 0; c < g[3]; c++) {
		size_t o = ((n * oh + oy) * ow + ox) * g[3] + c;
		int first = 1;

		for (ky = 0; ky < g[4]; ky++) {
			for (kx = 0; kx < g[5]; kx++) {
				long iy = (long)(oy * g[6] + ky) - g[8];
				long ix = (long)(ox * g[7] + kx) - g[9];
				float v;

				if (iy < 0 || iy >= (long)g[1] || ix < 0 ||
				    ix >= (long)g[2])
					continue;
				v = x[((n * g[1] + iy) * g[2] + ix) * g[3] + c];
				if (first || v > y[o] ||
				    (isnan(v) && !isnan(y[o]))) {
					y[o] = v;
					idx[o] = (uint32_t)(iy * g[2] + ix);
				}
				first = 0;
			}
		}
	}
}

TEST(maxpool)
{
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < NPOOL; s++) {
		const uint32_t *g = pool_shapes[s];
		struct vtpu_window w = win_of(g);
		uint32_t oh = out_dim(g[1], g[4], g[6], g[8]);
		uint32_t ow = out_dim(g[2], g[5], g[7], g[9]);
		size_t nout = (size_t)g[0] * oh * ow * g[3];
		size_t nimg = (size_t)g[0] * g[1] * g[2] * g[3], i;
		struct vtpu_bo xb = bo_new(nimg * 4), yb = bo_new(nout * 4);
		struct vtpu_bo ib = bo_new(nout * 4), dyb = bo_new(nout * 4);
		struct vtpu_bo dxb = bo_new(nimg * 4), gib = bo_new(nout * 4);
		struct vtpu_bo gdxb = bo_new(nimg * 4);
		float *x = xb.map, *y = yb.map, *dy = dyb.map, *dx = dxb.map;
		float *gdx = gdxb.map;
		uint32_t *idx = ib.map, *gidx = gib.map;
		float *ry = malloc(nout * 4);
		uint32_t *ridx = malloc(nout * 4);
		double *rdx = calloc(nimg, sizeof(double));
		double *rgdx = calloc(nimg, sizeof(double));
		void *k1 = malloc(nout * 4), *k2 = malloc(nout * 4);
		void *k3 = malloc(nimg * 4), *k4 = malloc(nimg * 4);
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		double md1, md2;
		int e;

		rng_seed(100 + s);
		/* coarse values: many ties, to check "first maximum" */
		for (i = 0; i < nimg; i++)
			x[i] = (float)(int)(frand() * 4) / 4;
		if (nimg > 7) {
			x[nimg / 3] = NAN;
			x[nimg / 2] = INFINITY;
			x[nimg / 5] = -INFINITY;
		}
		fill_rand(dy, nout);
		/* garbage indices for the second backward: must not crash */
		for (i = 0; i < nout; i++)
			gidx[i] = urand() % 4 ? urand() % (g[1] * g[2]) : urand();
		vtpu_cmdbuf_init(&cb);
		{
			struct vtpu_ref rx = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
			struct vtpu_ref ry_ = VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0);
			struct vtpu_ref ri = VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0);
			struct vtpu_ref rdy = VTPU_REF(vtpu_cmdbuf_use(&cb, &dyb), 0);
			struct vtpu_ref rdx_ = VTPU_REF(vtpu_cmdbuf_use(&cb, &dxb), 0);
			struct vtpu_ref rgi = VTPU_REF(vtpu_cmdbuf_use(&cb, &gib), 0);
			struct vtpu_ref rgd = VTPU_REF(vtpu_cmdbuf_use(&cb, &gdxb), 0);

			vtpu_cmdbuf_maxpool(&cb, &w, rx, ry_, ri);
			vtpu_cmdbuf_maxpool_grad(&cb, &w, rdy, ri, rdx_);
			vtpu_cmdbuf_maxpool_grad(&cb, &w, rdy, rgi, rgd);
		}
		for (e = 0; e < ex.n; e++) {
			memset(y, 0xff, nout * 4);
			memset(idx, 0xff, nout * 4);
			memset(dx, 0xff, nimg * 4);
			memset(gdx, 0xff, nimg * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(y, k1, nout * 4, e);
			diff += same_bits(idx, k2, nout * 4, e);
			diff += same_bits(dx, k3, nimg * 4, e);
			diff += same_bits(gdx, k4, nimg * 4, e);
		}
		maxpool_ref(x, g, oh, ow, ry, ridx);
		for (i = 0; i < nout; i++)
			if (memcmp(&ry[i], &y[i], 4) || ridx[i] != idx[i]) {
				if (bad < 5)
					fprintf(stderr, "  y[%zu] %g/%u want %g/%u\n",
						i, y[i], idx[i], ry[i], ridx[i]);
				bad++;
			}
		/* backward: dy to the argmax (scatter); garbage indices
		 * count only where they name a pixel of their window */
		for (i = 0; i < nout; i++) {
			size_t c = i % g[3], pix = i / g[3];
			size_t ox = pix % ow, oy = (pix / ow) % oh, n = pix / ow / oh;
			uint32_t p = gidx[i];
			long py = p / g[2], px = p % g[2];
			long y0 = (long)(oy * g[6]) - g[8], x0 = (long)(ox * g[7]) - g[9];

			rdx[(n * g[1] * g[2] + ridx[i]) * g[3] + c] += dy[i];
			if (p < g[1] * g[2] && py >= y0 && py < y0 + (long)g[4] &&
			    px >= x0 && px < x0 + (long)g[5])
				rgdx[(n * g[1] * g[2] + p) * g[3] + c] += dy[i];
		}
		md1 = maxdiff(dx, rdx, nimg, 1e-6, &bad);
		md2 = maxdiff(gdx, rgdx, nimg, 1e-6, &bad);
		TH_LOG("maxpool %ux%ux%ux%u k%ux%u s%ux%u p%ux%u: y/index exact, "
		       "dx maxdiff %.3g, garbage-index dx maxdiff %.3g",
		       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
		       md1, md2);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&ib);
		vtpu_cpu_bo_destroy(&dyb);
		vtpu_cpu_bo_destroy(&dxb);
		vtpu_cpu_bo_destroy(&gib);
		vtpu_cpu_bo_destroy(&gdxb);
		free(ry);
		free(ridx);
		free(rdx);
		free(rgdx);
		free(k1);
		free(k2);
		free(k3);
		free(k4);
	}
	execs_fini(&ex);
}

/* ---- CONV_POOL / CONV_POOL_WGRAD ------------------------------------------ */

/*
 * Shapes: the convolution (n h w c kh kw sh sw ph pw), oc, the pooling
 * (pool_h pool_w stride_h stride_w) and flags.
 */
static const uint32_t cp_shapes[][16] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0 },
	{ 2, 6, 6, 1, 3, 3, 1, 1, 0, 0, 5, 2, 2, 2, 2, VTPU_CONV_RELU },
	{ 3, 8, 7, 3, 3, 3, 1, 1, 1, 1, 20, 2, 2, 2, 2, 0 },
	{ 2, 9, 9, 2, 3, 2, 2, 1, 1, 0, 16, 3, 2, 1, 2, VTPU_CONV_RELU },
	{ 2, 5, 5, 4, 5, 5, 1, 1, 4, 4, 7, 1, 1, 1, 1, 0 },	/* no pooling */
	{ 1, 7, 9, 3, 3, 3, 2, 2, 1, 1, 33, 3, 3, 1, 1, VTPU_CONV_RELU },
	/* whole blocks with padding: the fast paths' gathered windows */
	{ 2, 7, 6, 3, 3, 3, 1, 1, 1, 1, 32, 2, 2, 2, 2, VTPU_CONV_RELU },
	{ 2, 5, 5, 2, 3, 3, 2, 2, 1, 1, 16, 1, 1, 1, 1, 0 },
	{ 1, 6, 8, 1, 3, 3, 1, 1, 2, 1, 48, 2, 1, 2, 1, VTPU_CONV_RELU },
	/* Fashion-MNIST's first layer: several tiles and gradient steps */
	{ 12, 28, 28, 1, 3, 3, 1, 1, 0, 0, 64, 2, 2, 2, 2, VTPU_CONV_RELU },
};
#define NCP (sizeof(cp_shapes) / sizeof(cp_shapes[0]))

struct cp_geom {
	uint32_t n, h, w, c, kh, kw, sh, sw, ph, pw, oc;
	uint32_t qh, qw, qsh, qsw, flags;
	uint32_t oh, ow, yh, yw;	/* conv output, pooled output */
	size_t nx, nw, ny;
};

static struct cp_geom cp_geom(const uint32_t *s)
{
	struct cp_geom g = {
		.n = s[0], .h = s[1], .w = s[2], .c = s[3], .kh = s[4],
		.kw = s[5], .sh = s[6], .sw = s[7], .ph = s[8], .pw = s[9],
		.oc = s[10], .qh = s[11], .qw = s[12], .qsh = s[13],
		.qsw = s[14], .flags = s[15],
	};

	g.oh = out_dim(g.h, g.kh, g.sh, g.ph);
	g.ow = out_dim(g.w, g.kw, g.sw, g.pw);
	g.yh = (g.oh - g.qh) / g.qsh + 1;
	g.yw = (g.ow - g.qw) / g.qsw + 1;
	g.nx = (size_t)g.n * g.h * g.w * g.c;
	g.nw = (size_t)g.kh * g.kw * g.c * g.oc;
	g.ny = (size_t)g.n * g.yh * g.yw * g.oc;
	return g;
}

/*
 * conv(x, w) + bias at conv pixel (n, oy, ox), channel o, in double; with
 * @mag, also the sum of its terms' magnitudes there
 */
static double cp_conv_ref(const struct cp_geom *g, const float *x,
			  const float *w, const float *bias, size_t n,
			  uint32_t oy, uint32_t ox, uint32_t o, double *mag)
{
	double s = bias[o], a = fabs(s);
	uint32_t ky, kx, ci;

	for (ky = 0; ky < g->kh; ky++)
	for (kx = 0; kx < g->kw; kx++) {
		long iy = (long)(oy * g->sh + ky) - g->ph;
		long ix = (long)(ox * g->sw + kx) - g->pw;

		if (iy < 0 || iy >= (long)g->h || ix < 0 || ix >= (long)g->w)
			continue;
		for (ci = 0; ci < g->c; ci++) {
			double t = (double)x[((n * g->h + iy) * g->w + ix) *
					     g->c + ci] *
				   w[((ky * g->kw + kx) * g->c + ci) * g->oc + o];

			s += t;
			a += fabs(t);
		}
	}
	if (mag)
		*mag = a;
	return s;
}

/*
 * reference forward: y, and the routes: the window position of the first
 * maximum in window order, or VTPU_CONV_NO_ROUTE where the ReLU's output
 * is not > 0
 */
static void cp_fwd_ref(const struct cp_geom *g, const float *x,
		       const float *w, const float *bias, float *y,
		       uint8_t *idx)
{
	size_t n, py, px, o, at;
	uint32_t qy, qx;

	for (n = 0; n < g->n; n++)
	for (py = 0; py < g->yh; py++)
	for (px = 0; px < g->yw; px++)
	for (o = 0; o < g->oc; o++) {
		double best = 0;
		int first = 1;

		at = ((n * g->yh + py) * g->yw + px) * g->oc + o;
		for (qy = 0; qy < g->qh; qy++)
		for (qx = 0; qx < g->qw; qx++) {
			uint32_t oy = py * g->qsh + qy, ox = px * g->qsw + qx;
			double v = cp_conv_ref(g, x, w, bias, n, oy, ox, o,
					       NULL);

			if (first || v > best) {
				best = v;
				idx[at] = (uint8_t)(qy * g->qw + qx);
			}
			first = 0;
		}
		if ((g->flags & VTPU_CONV_RELU) && !(best > 0))
			idx[at] = VTPU_CONV_NO_ROUTE;
		if ((g->flags & VTPU_CONV_RELU) && best < 0)
			best = 0;
		y[at] = (float)best;
	}
}

/* reference gradient: dy sent by its route (names no position: dropped) */
static void cp_wgrad_ref(const struct cp_geom *g, const float *x,
			 const float *dy, const uint8_t *idx, double *dw,
			 double *db)
{
	size_t n, py, px, o, at;
	uint32_t qy, qx, ky, kx, ci;

	memset(dw, 0, g->nw * sizeof(*dw));
	memset(db, 0, g->oc * sizeof(*db));
	for (n = 0; n < g->n; n++)
	for (py = 0; py < g->yh; py++)
	for (px = 0; px < g->yw; px++)
	for (o = 0; o < g->oc; o++) {
		double gr;

		at = ((n * g->yh + py) * g->yw + px) * g->oc + o;
		gr = idx[at] < g->qh * g->qw ? dy[at] : 0;
		db[o] += gr;
		for (qy = 0; qy < g->qh; qy++)
		for (qx = 0; qx < g->qw; qx++) {
			uint32_t oy = py * g->qsh + qy, ox = px * g->qsw + qx;

			if (idx[at] != qy * g->qw + qx)
				continue;
			for (ky = 0; ky < g->kh; ky++)
			for (kx = 0; kx < g->kw; kx++) {
				long iy = (long)(oy * g->sh + ky) - g->ph;
				long ix = (long)(ox * g->sw + kx) - g->pw;

				if (iy < 0 || iy >= (long)g->h || ix < 0 ||
				    ix >= (long)g->w)
					continue;
				for (ci = 0; ci < g->c; ci++)
					dw[((ky * g->kw + kx) * g->c + ci) *
					   g->oc + o] += gr *
						x[((n * g->h + iy) * g->w + ix) *
						  g->c + ci];
			}
		}
	}
}

/* a small integer in [-k, k]: sums of products stay exact in f32 */
static float irand(int k)
{
	return (float)((int)(urand() % (2 * k + 1)) - k);
}

TEST(conv_pool)
{
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < NCP; s++) {
		const struct cp_geom g = cp_geom(cp_shapes[s]);
		struct vtpu_bo xb = bo_new(g.nx * 4), wb = bo_new(g.nw * 4);
		struct vtpu_bo bb = bo_new(g.oc * 4), yb = bo_new(g.ny * 4);
		struct vtpu_bo ib = bo_new(g.ny), dyb = bo_new(g.ny * 4);
		struct vtpu_bo dwb = bo_new(g.nw * 4), dbb = bo_new(g.oc * 4);
		struct vtpu_bo gib = bo_new(g.ny), gwb = bo_new(g.nw * 4);
		struct vtpu_bo gbb = bo_new(g.oc * 4);
		float *x = xb.map, *w = wb.map, *bias = bb.map, *dy = dyb.map;
		uint8_t *gidx = gib.map;
		float *ry = malloc(g.ny * 4);
		uint8_t *ridx = malloc(g.ny);
		double *rdw = malloc(g.nw * 8), *rdb = malloc(g.oc * 8);
		double *rgw = malloc(g.nw * 8), *rgb = malloc(g.oc * 8);
		void *keep[5];
		size_t sizes[5] = { g.ny * 4, g.ny, g.nw * 4, g.oc * 4,
				    g.nw * 4 };
		struct vtpu_conv_pool_desc d = {
			.win = { .n = g.n, .h = g.h, .w = g.w, .c = g.c,
				 .kh = g.kh, .kw = g.kw, .stride_h = g.sh,
				 .stride_w = g.sw, .pad_h = g.ph,
				 .pad_w = g.pw },
			.oc = g.oc, .pool_h = g.qh, .pool_w = g.qw,
			.pool_stride_h = g.qsh, .pool_stride_w = g.qsw,
			.flags = g.flags,
		};
		struct vtpu_conv_pool_desc dg;
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		size_t i;
		int e, k;

		for (k = 0; k < 5; k++)
			keep[k] = malloc(sizes[k]);
		rng_seed(300 + s);
		for (i = 0; i < g.nx; i++)
			x[i] = irand(2);
		for (i = 0; i < g.nw; i++)
			w[i] = irand(2);
		for (i = 0; i < g.oc; i++)
			bias[i] = irand(3);
		for (i = 0; i < g.ny; i++)
			dy[i] = irand(4);
		/* random routes for the second gradient, some naming nothing */
		for (i = 0; i < g.ny; i++)
			gidx[i] = (uint8_t)(urand() % 3 ? urand() % (g.qh * g.qw) :
					    urand());
		vtpu_cmdbuf_init(&cb);
		d.x = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
		d.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &wb), 0);
		d.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &bb), 0);
		d.y = VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0);
		d.index = VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0);
		d.dy = VTPU_REF(vtpu_cmdbuf_use(&cb, &dyb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_pool(&cb, &d));
		dg = d;
		dg.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &dwb), 0);
		dg.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &dbb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_pool_wgrad(&cb, &dg));
		dg.index = VTPU_REF(vtpu_cmdbuf_use(&cb, &gib), 0);
		dg.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &gwb), 0);
		dg.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &gbb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_pool_wgrad(&cb, &dg));

		cp_fwd_ref(&g, x, w, bias, ry, ridx);
		cp_wgrad_ref(&g, x, dy, ridx, rdw, rdb);
		cp_wgrad_ref(&g, x, dy, gidx, rgw, rgb);
		for (e = 0; e < ex.n; e++) {
			const void *out[5] = { yb.map, ib.map, dwb.map,
					       dbb.map, gwb.map };

			memset(yb.map, 0xff, g.ny * 4);
			memset(ib.map, 0xfe, g.ny);
			memset(dwb.map, 0xff, g.nw * 4);
			memset(dbb.map, 0xff, g.oc * 4);
			memset(gwb.map, 0xff, g.nw * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			/* integer data: every level's sums are exact */
			for (k = 0; k < 5; k++)
				diff += same_bits(out[k], keep[k], sizes[k], e);
			bad += memcmp(yb.map, ry, g.ny * 4) != 0;
			bad += memcmp(ib.map, ridx, g.ny) != 0;
			for (i = 0; i < g.nw; i++)
				bad += ((float *)dwb.map)[i] != rdw[i] ||
				       ((float *)gwb.map)[i] != rgw[i];
			for (i = 0; i < g.oc; i++)
				bad += ((float *)dbb.map)[i] != rdb[i] ||
				       ((float *)gbb.map)[i] != rgb[i];
		}
		TH_LOG("conv_pool %ux%ux%ux%u k%ux%u s%ux%u p%ux%u -> %u, pool "
		       "%ux%u s%ux%u%s: y, index, dw, dbias exact on %d "
		       "executors", g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw,
		       g.ph, g.pw, g.oc, g.qh, g.qw, g.qsh, g.qsw,
		       g.flags & VTPU_CONV_RELU ? ", relu" : "", ex.n);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&wb);
		vtpu_cpu_bo_destroy(&bb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&ib);
		vtpu_cpu_bo_destroy(&dyb);
		vtpu_cpu_bo_destroy(&dwb);
		vtpu_cpu_bo_destroy(&dbb);
		vtpu_cpu_bo_destroy(&gib);
		vtpu_cpu_bo_destroy(&gwb);
		vtpu_cpu_bo_destroy(&gbb);
		for (k = 0; k < 5; k++)
			free(keep[k]);
		free(ry);
		free(ridx);
		free(rdw);
		free(rdb);
		free(rgw);
		free(rgb);
	}
	execs_fini(&ex);
}

/* ---- CONV / CONV_DGRAD / CONV_WGRAD ---------------------------------------- */

/*
 * n, h, w, c, kh, kw, stride h, w, pad h, w, oc, flags. Between them:
 * both AVX-512 kernels (oc and, for DGRAD, c on either side of 16), edge
 * microtiles, several K steps (k > 256, with DGRAD's taps split across
 * a step), several row tiles, strides (no DGRAD), kh != kw.
 */
static const uint32_t cv_shapes[][12] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0 },
	{ 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 8, VTPU_CONV_BIAS },
	{ 2, 8, 8, 32, 3, 3, 1, 1, 1, 1, 40,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 1, 7, 9, 4, 3, 2, 2, 1, 1, 0, 17, VTPU_CONV_RELU },
	{ 3, 12, 12, 16, 3, 3, 1, 1, 0, 0, 64, VTPU_CONV_BIAS },
	{ 2, 16, 16, 8, 5, 5, 1, 1, 2, 2, 20, 0 },
	{ 1, 6, 6, 70, 3, 3, 1, 1, 1, 1, 3, VTPU_CONV_BIAS },
	{ 2, 9, 8, 5, 4, 3, 2, 3, 3, 2, 33, 0 },
	/* CONV_WGRAD on AVX-512's narrow kernel with a tall tile (m 720) */
	{ 4, 8, 8, 80, 3, 3, 1, 1, 1, 1, 8, VTPU_CONV_BIAS },
	/* CIFAR-10's first layer, four images: many row tiles */
	{ 4, 32, 32, 3, 3, 3, 1, 1, 1, 1, 32,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	/*
	 * Winograd (AVX-512, 3 x 3 at stride 1, 16-64 channels): odd output
	 * sizes (tiles cut at the edge), channels and columns in partial
	 * vectors; 64 channels, two or three column groups, pads 2 and 0;
	 * several tiles, blocks of WINO_TB, and CONV_WGRAD's channel splits
	 * and steps of WINO_KC Winograd tiles (512 here)
	 */
	{ 2, 7, 9, 24, 3, 3, 1, 1, 1, 1, 48,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 1, 5, 6, 64, 3, 3, 1, 1, 2, 0, 80, VTPU_CONV_BIAS },
	{ 8, 16, 16, 32, 3, 3, 1, 1, 1, 1, 32, VTPU_CONV_RELU },
};
#define NCV (sizeof(cv_shapes) / sizeof(cv_shapes[0]))

/*
 * dw, dx of the convolution given dy, in double (cp_geom's conv part);
 * with @dwmag and @dxmag, the sums of the magnitudes of their terms
 */
static void cv_grad_ref(const struct cp_geom *g, const float *x,
			const float *w, const float *dy, double *dw,
			double *dx, double *dwmag, double *dxmag)
{
	size_t n, oy, ox, o, ky, kx, ci;

	memset(dw, 0, g->nw * 8);
	memset(dx, 0, g->nx * 8);
	if (dxmag) {
		memset(dwmag, 0, g->nw * 8);
		memset(dxmag, 0, g->nx * 8);
	}
	for (n = 0; n < g->n; n++)
	for (oy = 0; oy < g->oh; oy++)
	for (ox = 0; ox < g->ow; ox++)
	for (ky = 0; ky < g->kh; ky++)
	for (kx = 0; kx < g->kw; kx++) {
		long iy = (long)(oy * g->sh + ky) - g->ph;
		long ix = (long)(ox * g->sw + kx) - g->pw;
		const float *d = dy + ((n * g->oh + oy) * g->ow + ox) * g->oc;
		size_t xi, wi;

		if (iy < 0 || iy >= (long)g->h || ix < 0 || ix >= (long)g->w)
			continue;
		xi = ((n * g->h + iy) * g->w + ix) * g->c;
		wi = (ky * g->kw + kx) * g->c;
		for (ci = 0; ci < g->c; ci++)
			for (o = 0; o < g->oc; o++) {
				double tw = (double)x[xi + ci] * d[o];
				double tx = (double)w[(wi + ci) * g->oc + o] * d[o];

				dw[(wi + ci) * g->oc + o] += tw;
				dx[xi + ci] += tx;
				if (dxmag) {
					dwmag[(wi + ci) * g->oc + o] += fabs(tw);
					dxmag[xi + ci] += fabs(tx);
				}
			}
	}
}

/* y of CONV with @flags in double, and its terms' magnitudes */
static void cv_fwd_ref(const struct cp_geom *g, const float *x,
		       const float *w, const float *bias, uint32_t flags,
		       double *y, double *mag)
{
	size_t rows = (size_t)g->n * g->oh * g->ow, i, o;

	for (i = 0; i < rows; i++)
		for (o = 0; o < g->oc; o++) {
			double *r = &y[i * g->oc + o];

			*r = cp_conv_ref(g, x, w, bias, i / (g->oh * g->ow),
					 (uint32_t)(i / g->ow % g->oh),
					 (uint32_t)(i % g->ow), (uint32_t)o,
					 &mag[i * g->oc + o]);
			if (!(flags & VTPU_CONV_BIAS))
				*r -= bias[o];
			if ((flags & VTPU_CONV_RELU) && *r < 0)
				*r = 0;
		}
}

/* How many of @n differ from @k * @ref by more than 1e-5 of @k * @mag. */
static long cv_far(const float *got, const double *ref, const double *mag,
		   size_t n, double k)
{
	long far = 0;
	size_t i;

	for (i = 0; i < n; i++)
		far += !(fabs(got[i] - k * ref[i]) <= 1e-5 * k * mag[i] + 1e-30);
	return far;
}

TEST(conv)
{
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < NCV; s++) {
		const uint32_t *v = cv_shapes[s];
		const uint32_t cps[16] = { v[0], v[1], v[2], v[3], v[4], v[5],
					   v[6], v[7], v[8], v[9], v[10], 1, 1,
					   1, 1, 0 };
		const struct cp_geom g = cp_geom(cps);
		bool dgrad = g.sh == 1 && g.sw == 1;
		struct vtpu_bo xb = bo_new(g.nx * 4), wb = bo_new(g.nw * 4);
		struct vtpu_bo bb = bo_new(g.oc * 4), yb = bo_new(g.ny * 4);
		struct vtpu_bo dyb = bo_new(g.ny * 4), dwb = bo_new(g.nw * 4);
		struct vtpu_bo dxb = bo_new(g.nx * 4);
		float *x = xb.map, *w = wb.map, *bias = bb.map, *dy = dyb.map;
		double *ry = malloc(g.ny * 8), *rdw = malloc(g.nw * 8);
		double *rdx = malloc(g.nx * 8), *ymag = malloc(g.ny * 8);
		double *dwmag = malloc(g.nw * 8), *dxmag = malloc(g.nx * 8);
		void *keep[3] = { malloc(g.ny * 4), malloc(g.nw * 4),
				  malloc(g.nx * 4) };
		const void *out[3] = { yb.map, dwb.map, dxb.map };
		size_t sizes[3] = { g.ny * 4, g.nw * 4, dgrad ? g.nx * 4 : 0 };
		struct vtpu_conv_desc d = {
			.win = { .n = g.n, .h = g.h, .w = g.w, .c = g.c,
				 .kh = g.kh, .kw = g.kw, .stride_h = g.sh,
				 .stride_w = g.sw, .pad_h = g.ph,
				 .pad_w = g.pw },
			.oc = g.oc, .flags = v[11],
		};
		struct vtpu_conv_desc dd;
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0, far = 0;
		size_t i;
		uint32_t bx, bw, bb_, by, bdy, bdw, bdx;
		int e, k;

		rng_seed(500 + s);
		for (i = 0; i < g.nx; i++)
			x[i] = irand(2);
		for (i = 0; i < g.nw; i++)
			w[i] = irand(2);
		for (i = 0; i < g.oc; i++)
			bias[i] = irand(3);
		for (i = 0; i < g.ny; i++)
			dy[i] = irand(3);
		cv_fwd_ref(&g, x, w, bias, v[11], ry, ymag);
		cv_grad_ref(&g, x, w, dy, rdw, rdx, NULL, NULL);

		/*
		 * Integer data, so every sum is exact: y; dw and dx written,
		 * then accumulated once more (twice the gradient).
		 */
		vtpu_cmdbuf_init(&cb);
		bx = vtpu_cmdbuf_use(&cb, &xb);
		bw = vtpu_cmdbuf_use(&cb, &wb);
		bb_ = vtpu_cmdbuf_use(&cb, &bb);
		by = vtpu_cmdbuf_use(&cb, &yb);
		bdy = vtpu_cmdbuf_use(&cb, &dyb);
		bdw = vtpu_cmdbuf_use(&cb, &dwb);
		bdx = vtpu_cmdbuf_use(&cb, &dxb);
		d.x = VTPU_REF(bx, 0);
		d.w = VTPU_REF(bw, 0);
		d.bias = VTPU_REF(bb_, 0);
		d.y = VTPU_REF(by, 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv(&cb, &d));
		dd = d;
		dd.flags = 0;
		dd.y = VTPU_REF(bdy, 0);
		dd.w = VTPU_REF(bdw, 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_wgrad(&cb, &dd));
		dd.flags = VTPU_CONV_ACCUMULATE;
		ASSERT_EQ(0, vtpu_cmdbuf_conv_wgrad(&cb, &dd));
		if (dgrad) {
			dd.w = VTPU_REF(bw, 0);
			dd.x = VTPU_REF(bdx, 0);
			dd.flags = 0;
			ASSERT_EQ(0, vtpu_cmdbuf_conv_dgrad(&cb, &dd));
			dd.flags = VTPU_CONV_ACCUMULATE;
			ASSERT_EQ(0, vtpu_cmdbuf_conv_dgrad(&cb, &dd));
		}
		for (e = 0; e < ex.n; e++) {
			memset(yb.map, 0xff, g.ny * 4);	/* NaN: all written? */
			memset(dwb.map, 0xff, g.nw * 4);
			memset(dxb.map, 0xff, g.nx * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			for (k = 0; k < 3; k++)
				diff += same_bits(out[k], keep[k], sizes[k], e);
			for (i = 0; i < g.ny; i++)
				bad += ((float *)yb.map)[i] != ry[i];
			for (i = 0; i < g.nw; i++)
				bad += ((float *)dwb.map)[i] != 2 * rdw[i];
			for (i = 0; dgrad && i < g.nx; i++)
				bad += ((float *)dxb.map)[i] != 2 * rdx[i];
		}

		/*
		 * Float data: y, dw and dx within 1e-5 of their terms'
		 * magnitudes of double, on every executor. (They need not
		 * agree to the bit: AVX-512's Winograd kernels round
		 * differently from the direct ones.)
		 */
		fill_rand(x, g.nx);
		fill_rand(w, g.nw);
		fill_rand(dy, g.ny);
		cv_fwd_ref(&g, x, w, bias, v[11], ry, ymag);
		cv_grad_ref(&g, x, w, dy, rdw, rdx, dwmag, dxmag);
		for (e = 0; e < ex.n; e++) {
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			/* dw and dx written, then accumulated once more */
			far += cv_far(yb.map, ry, ymag, g.ny, 1);
			far += cv_far(dwb.map, rdw, dwmag, g.nw, 2);
			if (dgrad)
				far += cv_far(dxb.map, rdx, dxmag, g.nx, 2);
		}
		TH_LOG("conv %ux%ux%ux%u k%ux%u s%ux%u p%ux%u -> %u%s%s: y, dw%s "
		       "exact on %d executors; %ld far from double on floats",
		       g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw,
		       g.oc, v[11] & VTPU_CONV_BIAS ? ", bias" : "",
		       v[11] & VTPU_CONV_RELU ? ", relu" : "",
		       dgrad ? ", dx" : "", ex.n, far);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(0, far);
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&xb);
		vtpu_cpu_bo_destroy(&wb);
		vtpu_cpu_bo_destroy(&bb);
		vtpu_cpu_bo_destroy(&yb);
		vtpu_cpu_bo_destroy(&dyb);
		vtpu_cpu_bo_destroy(&dwb);
		vtpu_cpu_bo_destroy(&dxb);
		for (k = 0; k < 3; k++)
			free(keep[k]);
		free(ry);
		free(rdw);
		free(rdx);
		free(ymag);
		free(dwmag);
		free(dxmag);
	}
	execs_fini(&ex);
}

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

/* ---- the validator ------------------------------------------------------------ */

struct rej {
	struct vtpu_cpu *cpu;
	struct vtpu_bo b0, b1;	/* 4096 bytes each */
	int fails;
};

/* Run @cmd alone on buffers b0, b1; expect @reason on @operand (0: ok). */
static void check_cmd(struct __test_metadata *_metadata, struct rej *r,
		      const char *what, const void *cmd, uint32_t reason,
		      uint32_t operand)
{
	struct vtpu_cmdbuf cb;
	struct vtpu_job job;
	char msg[256];
	int ret;

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_use(&cb, &r->b0);
	vtpu_cmdbuf_use(&cb, &r->b1);
	vtpu_cmdbuf_append(&cb, cmd);
	memset(&job, 0, sizeof(job));
	ret = vtpu_cpu_run(r->cpu, &cb, &job);
	vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
	if (reason == VTPU_ERR_NONE) {
		EXPECT_EQ(0, ret) TH_LOG("%s: %s", what, msg);
	} else {
		TH_LOG("%-40s -> %s", what, msg);
		EXPECT_EQ(-EINVAL, ret);
		EXPECT_EQ(reason, job.error.reason) TH_LOG("%s", what);
		EXPECT_EQ(operand, job.error.operand) TH_LOG("%s", what);
	}
	vtpu_cmdbuf_fini(&cb);
}

#define HDR(op, type) { .opcode = (op), .size = sizeof(struct type) }
#define OPND(b, o) { .buf = (b), .offset = (o) }

TEST(validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	/* a 4x4x2 image, 3x3 windows, pad 1: 16 rows of 18 = 1152 bytes */
	const struct vtpu_cmd_im2col ic0 = {
		.hdr = HDR(VTPU_OP_IM2COL, vtpu_cmd_im2col),
		.win = { .n = 1, .h = 4, .w = 4, .c = 2, .kh = 3, .kw = 3,
			 .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1 },
		.image = OPND(0, 0), .cols = OPND(1, 0),
	};
	const struct vtpu_cmd_pool pl0 = {
		.hdr = HDR(VTPU_OP_MAXPOOL, vtpu_cmd_pool),
		.win = { .n = 1, .h = 8, .w = 8, .c = 4, .kh = 2, .kw = 2,
			 .stride_h = 2, .stride_w = 2 },
		.x = OPND(0, 0), .y = OPND(1, 0), .index = OPND(1, 1024),
	};
	const struct vtpu_cmd_elementwise ew0 = {
		.hdr = HDR(VTPU_OP_ELEMENTWISE, vtpu_cmd_elementwise),
		.op = VTPU_EW_ADD, .count = 256,
		.x = OPND(0, 0), .y = OPND(0, 1024), .z = OPND(1, 0),
	};
	const struct vtpu_cmd_reduce rd0 = {
		.hdr = HDR(VTPU_OP_REDUCE, vtpu_cmd_reduce),
		.op = VTPU_REDUCE_COLS, .m = 16, .n = 16, .ldx = 16,
		.x = OPND(0, 0), .y = OPND(1, 0),
	};
	const struct vtpu_cmd_softmax_xent xe0 = {
		.hdr = HDR(VTPU_OP_SOFTMAX_XENT, vtpu_cmd_softmax_xent),
		.m = 8, .n = 10, .flags = VTPU_XENT_DLOGITS,
		.logits = OPND(0, 0), .labels = OPND(0, 512),
		.dlogits = OPND(1, 0), .loss = OPND(1, 512),
		.correct = OPND(1, 516),
	};
	const struct vtpu_cmd_sgd sg0 = {
		.hdr = HDR(VTPU_OP_SGD, vtpu_cmd_sgd),
		.count = 128, .lr = 0x3dcccccd, .momentum = 0x3f666666,
		.param = OPND(0, 0), .grad = OPND(1, 0), .mom = OPND(0, 1024),
	};
	const struct vtpu_cmd_adam_step as0 = {
		.hdr = HDR(VTPU_OP_ADAM_STEP, vtpu_cmd_adam_step),
		.beta1 = 0x3f666666, .state = OPND(1, 4088),
	};
	const struct vtpu_cmd_adam ad0 = {
		.hdr = HDR(VTPU_OP_ADAM, vtpu_cmd_adam),
		.count = 128, .param = OPND(0, 0), .grad = OPND(1, 0),
		.m = OPND(0, 1024), .v = OPND(0, 2048), .state = OPND(1, 4088),
	};
	const struct vtpu_cmd_cast ca0 = {
		.hdr = HDR(VTPU_OP_CAST, vtpu_cmd_cast),
		.mode = VTPU_CAST_F32_TO_BF16, .count = 1024,
		.src = OPND(0, 0), .dst = OPND(1, 0),
	};
	const struct vtpu_cmd_dropout dr0 = {
		.hdr = HDR(VTPU_OP_DROPOUT, vtpu_cmd_dropout),
		.count = 256, .rate = 0x3e800000 /* 0.25 */, .seed = 7,
		.x = OPND(0, 0), .z = OPND(1, 0), .mask = OPND(1, 1024),
		.step = OPND(0, 4092),
	};
	/*
	 * a 6x6x1 image, 3x3 taps, 8 channels, 2x2 pooling: x 144 bytes,
	 * w 288, bias 32, y and index 128 each
	 */
	const struct vtpu_cmd_conv_pool cp0 = {
		.hdr = HDR(VTPU_OP_CONV_POOL, vtpu_cmd_conv_pool),
		.win = { .n = 1, .h = 6, .w = 6, .c = 1, .kh = 3, .kw = 3,
			 .stride_h = 1, .stride_w = 1 },
		.oc = 8, .pool_h = 2, .pool_w = 2, .pool_stride_h = 2,
		.pool_stride_w = 2,
		.x = OPND(0, 0), .w = OPND(0, 256), .bias = OPND(0, 768),
		.y = OPND(1, 0), .index = OPND(1, 256),
	};
	/* its gradient: dw, dbias in b1; dy, the routes in b0 */
	const struct vtpu_cmd_conv_pool cg0 = {
		.hdr = HDR(VTPU_OP_CONV_POOL_WGRAD, vtpu_cmd_conv_pool),
		.win = cp0.win, .oc = 8, .pool_h = 2, .pool_w = 2,
		.pool_stride_h = 2, .pool_stride_w = 2,
		.x = OPND(0, 0), .w = OPND(1, 512), .bias = OPND(1, 1024),
		.dy = OPND(0, 1024), .index = OPND(0, 1536),
	};
	/*
	 * a 4x4x2 image, 3x3 taps, pad 1, 8 channels: x 128 bytes, w 576,
	 * bias 32, y 512
	 */
	const struct vtpu_cmd_conv cv0 = {
		.hdr = HDR(VTPU_OP_CONV, vtpu_cmd_conv),
		.win = { .n = 1, .h = 4, .w = 4, .c = 2, .kh = 3, .kw = 3,
			 .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1 },
		.oc = 8, .flags = VTPU_CONV_BIAS,
		.x = OPND(0, 0), .w = OPND(0, 256), .bias = OPND(0, 1024),
		.y = OPND(1, 0),
	};
	/* the gradients: dx (at x) or dw (at w) in b1, dy (at y) in b0 */
	const struct vtpu_cmd_conv cd0 = {
		.hdr = HDR(VTPU_OP_CONV_DGRAD, vtpu_cmd_conv),
		.win = cv0.win, .oc = 8,
		.x = OPND(1, 1024), .w = OPND(0, 256), .y = OPND(0, 2048),
	};
	const struct vtpu_cmd_conv cw0 = {
		.hdr = HDR(VTPU_OP_CONV_WGRAD, vtpu_cmd_conv),
		.win = cv0.win, .oc = 8,
		.x = OPND(0, 0), .w = OPND(1, 2048), .y = OPND(0, 2048),
	};
	struct vtpu_cmd_conv cv;
	struct vtpu_cmd_conv_pool cp;
	struct vtpu_cmd_dropout dr;
	struct vtpu_cmd_im2col ic;
	struct vtpu_cmd_pool pl;
	struct vtpu_cmd_elementwise ew;
	struct vtpu_cmd_reduce rd;
	struct vtpu_cmd_softmax_xent xe;
	struct vtpu_cmd_sgd sg;
	struct vtpu_cmd_adam_step as;
	struct vtpu_cmd_adam ad;
	struct vtpu_cmd_cast ca;

	ASSERT_NE(NULL, r.cpu);
#define CASE(var, base, what, mut, reason, operand)                           \
	do {                                                                  \
		var = base;                                                   \
		mut;                                                          \
		check_cmd(_metadata, &r, what, &var, reason, operand);        \
	} while (0)

	/* the baselines are valid */
	CASE(ic, ic0, "im2col ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ic, ic0, "col2im ok", ic.hdr.opcode = VTPU_OP_COL2IM,
	     VTPU_ERR_NONE, 0);
	CASE(pl, pl0, "maxpool ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(pl, pl0, "maxpool_grad ok", pl.hdr.opcode = VTPU_OP_MAXPOOL_GRAD,
	     VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise z == x ok", ew.z = ew.x, VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise z == y ok", ew.z = ew.y, VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise x, y overlap ok", ew.y.offset = 4,
	     VTPU_ERR_NONE, 0);
	CASE(rd, rd0, "reduce ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(xe, xe0, "softmax_xent ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(sg, sg0, "sgd ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(as, as0, "adam_step ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ad, ad0, "adam ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ca, ca0, "cast ok", (void)0, VTPU_ERR_NONE, 0);

	/* header */
	CASE(ew, ew0, "wrong size", ew.hdr.size -= 8, VTPU_ERR_BAD_SIZE, 0);
	CASE(ew, ew0, "opcode past the set", ew.hdr.opcode = VTPU_OP_COUNT,
	     VTPU_ERR_BAD_OPCODE, 0);

	/* IM2COL / COL2IM */
	CASE(ic, ic0, "im2col flags", ic.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(ic, ic0, "im2col pad", ic.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(ic, ic0, "im2col stride 0", ic.win.stride_w = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(ic, ic0, "im2col n 0", ic.win.n = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col c > MAX_DIM", ic.win.c = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col pad >= k", ic.win.pad_h = 3,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col oh <= 0 (h + 2 pad < k)",
	     (ic.win.kh = 7, ic.win.pad_h = 1), VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col element count overflows",
	     (ic.win.n = ic.win.h = ic.win.w = ic.win.c = VTPU_MAX_DIM),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col cols count overflows",
	     (ic.win.h = ic.win.w = 4096, ic.win.c = 64, ic.win.kh = ic.win.kw = 64,
	      ic.win.pad_h = ic.win.pad_w = 0), VTPU_ERR_BAD_SHAPE, 0);
	CASE(ic, ic0, "im2col cols out of bounds", ic.win.c = 8,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DST);
	CASE(ic, ic0, "col2im image out of bounds",
	     (ic.hdr.opcode = VTPU_OP_COL2IM, ic.image.offset = 4000),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DST);
	CASE(ic, ic0, "im2col image misaligned", ic.image.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_SRC);
	CASE(ic, ic0, "im2col bad buffer", ic.image.buf = 2,
	     VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_SRC);
	CASE(ic, ic0, "im2col operand pad", ic.cols.pad = 1,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_DST);
	CASE(ic, ic0, "im2col cols overlap image", ic.cols = ic.image,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DST);

	/* MAXPOOL / MAXPOOL_GRAD */
	CASE(pl, pl0, "maxpool flags", pl.flags = 2, VTPU_ERR_BAD_FLAGS, 0);
	CASE(pl, pl0, "maxpool h*w >= 2^32",
	     (pl.win.h = pl.win.w = 65536, pl.win.c = 1), VTPU_ERR_BAD_SHAPE, 0);
	CASE(pl, pl0, "maxpool oh <= 0", pl.win.kh = 9, VTPU_ERR_BAD_SHAPE, 0);
	CASE(pl, pl0, "maxpool index overlaps y", pl.index.offset = 128,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(pl, pl0, "maxpool y overlaps x", pl.y.buf = 0,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(pl, pl0, "maxpool index out of bounds", pl.index.offset = 3900,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_INDEX);
	CASE(pl, pl0, "maxpool_grad dx overlaps dy",
	     (pl.hdr.opcode = VTPU_OP_MAXPOOL_GRAD, pl.x = pl.y),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);
	CASE(pl, pl0, "maxpool_grad dx overlaps index",
	     (pl.hdr.opcode = VTPU_OP_MAXPOOL_GRAD, pl.x = pl.index),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);

	/* ELEMENTWISE */
	CASE(ew, ew0, "elementwise bad sub-op", ew.op = VTPU_EW_COUNT,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(ew, ew0, "elementwise pad", ew.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(ew, ew0, "elementwise alpha unused", ew.alpha = 0x3f800000,
	     VTPU_ERR_BAD_PAD, 0);
	CASE(ew, ew0, "elementwise beta unused",
	     (ew.op = VTPU_EW_AXPY, ew.beta = 1), VTPU_ERR_BAD_PAD, 0);
	CASE(ew, ew0, "elementwise count 0", ew.count = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ew, ew0, "elementwise count * 4 overflows", ew.count = 1ull << 62,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ew, ew0, "elementwise count past buffer", ew.count = 1025,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(ew, ew0, "elementwise offset near 2^64",
	     ew.y.offset = ~0ull - 3, VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_Y);
	CASE(ew, ew0, "elementwise unused y not zero",
	     (ew.op = VTPU_EW_RELU, ew.y.offset = 64), VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_Y);
	CASE(ew, ew0, "elementwise z partly overlaps x",
	     (ew.z.buf = 0, ew.z.offset = 4), VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);
	CASE(ew, ew0, "elementwise z partly overlaps y",
	     (ew.z.buf = 0, ew.z.offset = 1020), VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);
	CASE(ew, ew0, "elementwise z misaligned", ew.z.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_Z);

	/* REDUCE */
	CASE(rd, rd0, "reduce bad op", rd.op = 2, VTPU_ERR_BAD_FLAGS, 0);
	CASE(rd, rd0, "reduce m 0", rd.m = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(rd, rd0, "reduce n > MAX_DIM", (rd.n = VTPU_MAX_DIM + 1,
	     rd.ldx = rd.n), VTPU_ERR_BAD_SHAPE, 0);
	CASE(rd, rd0, "reduce ldx < n", rd.ldx = 15, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_X);
	CASE(rd, rd0, "reduce x out of bounds", rd.ldx = 1000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(rd, rd0, "reduce y overlaps x", (rd.y.buf = 0, rd.y.offset = 1000),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);

	/* SOFTMAX_XENT */
	CASE(xe, xe0, "xent flags", xe.flags = 4, VTPU_ERR_BAD_FLAGS, 0);
	CASE(xe, xe0, "xent n > MAX_CLASSES", xe.n = VTPU_XENT_MAX_CLASSES + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(xe, xe0, "xent m 0", xe.m = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(xe, xe0, "xent unused probs not zero", xe.probs.buf = 1,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_PROBS);
	CASE(xe, xe0, "xent unused dlogits not zero",
	     (xe.flags = 0, xe.dlogits.offset = 8), VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DX);
	CASE(xe, xe0, "xent dlogits overlaps logits", xe.dlogits = xe.logits,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);
	CASE(xe, xe0, "xent loss overlaps correct", xe.correct = xe.loss,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_LOSS);
	CASE(xe, xe0, "xent loss overlaps labels",
	     (xe.loss.buf = 0, xe.loss.offset = 516), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_LOSS);
	CASE(xe, xe0, "xent labels out of bounds", xe.labels.offset = 4088,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_LABELS);
	CASE(xe, xe0, "xent correct misaligned", xe.correct.offset = 518,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_CORRECT);
	CASE(xe, xe0, "xent m*n past buffer", xe.m = 200,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);

	/* SGD */
	CASE(sg, sg0, "sgd unknown flag", sg.flags = 2, VTPU_ERR_BAD_FLAGS, 0);
	CASE(sg, sg0, "sgd nesterov without momentum",
	     (sg.flags = VTPU_SGD_NESTEROV, sg.momentum = 0,
	      memset(&sg.mom, 0, sizeof(sg.mom))), VTPU_ERR_BAD_FLAGS, 0);
	CASE(sg, sg0, "sgd unused mom not zero", sg.momentum = 0,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_MOM);
	CASE(sg, sg0, "sgd count 0", sg.count = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(sg, sg0, "sgd param overlaps grad", sg.grad = sg.param,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_PARAM);
	CASE(sg, sg0, "sgd mom overlaps grad", (sg.mom.buf = 1,
	     sg.mom.offset = 256), VTPU_ERR_OVERLAP, VTPU_OPERAND_MOM);

	/* ADAM_STEP / ADAM */
	CASE(as, as0, "adam_step state out of bounds", as.state.offset = 4092,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_STATE);
	CASE(as, as0, "adam_step state misaligned", as.state.offset = 4086,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_STATE);
	CASE(ad, ad0, "adam flags", ad.flags = 2, VTPU_ERR_BAD_FLAGS, 0);
	CASE(ad, ad0, "adam count > MAX_ELEMS", ad.count = VTPU_MAX_ELEMS + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ad, ad0, "adam m overlaps v", ad.v.offset = 1028,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_MOM);
	CASE(ad, ad0, "adam v overlaps state", (ad.v.buf = 1,
	     ad.v.offset = 3584), VTPU_ERR_OVERLAP, VTPU_OPERAND_VEL);
	CASE(ad, ad0, "adam state out of bounds", ad.state.offset = 4096,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_STATE);
	CASE(ad, ad0, "adam grad bad buffer", ad.grad.buf = 7,
	     VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_GRAD);

	/* CAST */
	CASE(ca, ca0, "cast bad mode", ca.mode = 3, VTPU_ERR_BAD_DTYPE, 0);
	CASE(ca, ca0, "cast scale unused", ca.scale = 0x3f800000,
	     VTPU_ERR_BAD_PAD, 0);
	CASE(ca, ca0, "cast pad", ca.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(ca, ca0, "cast bf16 src misaligned",
	     (ca.mode = VTPU_CAST_BF16_TO_F32, ca.src.offset = 1),
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_SRC);
	CASE(ca, ca0, "cast u8 src odd offset ok",
	     (ca.mode = VTPU_CAST_U8_TO_F32, ca.src.offset = 3), VTPU_ERR_NONE, 0);
	CASE(ca, ca0, "cast count past src", ca.count = 2049,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_SRC);
	CASE(ca, ca0, "cast bf16 dst out of bounds", ca.dst.offset = 2050,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DST);
	CASE(ca, ca0, "cast dst overlaps src", (ca.dst.buf = 0,
	     ca.dst.offset = 2048), VTPU_ERR_OVERLAP, VTPU_OPERAND_DST);
	/* DROPOUT */
	CASE(dr, dr0, "dropout ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(dr, dr0, "dropout in place", dr.z = dr.x, VTPU_ERR_NONE, 0);
	CASE(dr, dr0, "dropout rate 1", dr.rate = 0x3f800000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(dr, dr0, "dropout rate -0.5", dr.rate = 0xbf000000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(dr, dr0, "dropout rate NaN", dr.rate = 0x7fc00000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(dr, dr0, "dropout flags", dr.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(dr, dr0, "dropout pad", dr.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(dr, dr0, "dropout count 0", dr.count = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dr, dr0, "dropout mask past its buffer", dr.mask.offset = 3200,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_MASK);
	CASE(dr, dr0, "dropout mask overlaps x", dr.mask = dr.x,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_MASK);
	CASE(dr, dr0, "dropout z half over x", (dr.z.buf = 0,
	     dr.z.offset = 512), VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);
	CASE(dr, dr0, "dropout z over mask", dr.z = dr.mask,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);
	CASE(dr, dr0, "dropout z over step", (dr.z.buf = 0,
	     dr.z.offset = 3072), VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);
	CASE(dr, dr0, "dropout step misaligned", dr.step.offset = 4090,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_STEP);

	/* CONV_POOL / CONV_POOL_WGRAD */
	CASE(cp, cp0, "conv_pool ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cp, cp0, "conv_pool relu ok", cp.flags = VTPU_CONV_RELU,
	     VTPU_ERR_NONE, 0);
	CASE(cp, cp0, "conv_pool without pooling ok",
	     (cp.pool_h = cp.pool_w = 1, cp.pool_stride_h = 1,
	      cp.pool_stride_w = 1, cp.oc = 2), VTPU_ERR_NONE, 0);
	CASE(cp, cg0, "conv_pool_wgrad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cp, cg0, "conv_pool_wgrad routes at any byte",
	     cp.index.offset = 1537, VTPU_ERR_NONE, 0);
	CASE(cp, cg0, "conv_pool_wgrad flags", cp.flags = VTPU_CONV_RELU,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(cp, cp0, "conv_pool flags", cp.flags = 2, VTPU_ERR_BAD_FLAGS, 0);
	CASE(cp, cp0, "conv_pool oc 0", cp.oc = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool pool 0 high", cp.pool_h = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool pool wider than the conv", cp.pool_w = 5,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool pool stride 0", cp.pool_stride_w = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(cp, cp0, "conv_pool conv stride 0", cp.win.stride_h = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(cp, cp0, "conv_pool pad >= k", cp.win.pad_w = 3,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool weights past 2^36 elements",
	     (cp.win.c = 1u << 24, cp.oc = 1u << 24), VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool dy set",
	     cp.dy = (struct vtpu_operand)OPND(0, 1024), VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DY);
	CASE(cp, cg0, "conv_pool_wgrad y set",
	     cp.y = (struct vtpu_operand)OPND(0, 2048), VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_Y);
	CASE(cp, cp0, "conv_pool 255 window positions",
	     (cp.win.h = 20, cp.win.w = 20, cp.pool_h = 15, cp.pool_w = 17,
	      cp.oc = 1), VTPU_ERR_BAD_SHAPE, 0);
	CASE(cp, cp0, "conv_pool x buffer 5", cp.x.buf = 5,
	     VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_X);
	CASE(cp, cp0, "conv_pool w past its buffer", cp.w.offset = 4000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_W);
	CASE(cp, cp0, "conv_pool bias misaligned", cp.bias.offset = 770,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_BIAS);
	CASE(cp, cp0, "conv_pool y over x", cp.y = cp.x, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(cp, cp0, "conv_pool index over y", cp.index.offset = 64,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(cp, cp0, "conv_pool index past its buffer",
	     cp.index.offset = 4090, VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_INDEX);
	CASE(cp, cp0, "conv_pool y over w", (cp.y.buf = 0,
	     cp.y.offset = 512), VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(cp, cg0, "conv_pool_wgrad dw over dy", cp.w = cp.dy,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DW);
	CASE(cp, cg0, "conv_pool_wgrad dbias over index",
	     cp.bias = cp.index, VTPU_ERR_OVERLAP, VTPU_OPERAND_DBIAS);
	CASE(cp, cg0, "conv_pool_wgrad dbias over dw",
	     cp.bias.offset = 768, VTPU_ERR_OVERLAP, VTPU_OPERAND_DW);
	CASE(cp, cg0, "conv_pool_wgrad dw over the routes",
	     cp.index = (struct vtpu_operand)OPND(1, 600), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DW);
	CASE(cp, cg0, "conv_pool_wgrad dy past its buffer",
	     cp.dy.offset = 4064, VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DY);

	CASE(cv, cv0, "conv ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cv, cv0, "conv relu, no bias ok",
	     (cv.flags = VTPU_CONV_RELU, cv.bias = (struct vtpu_operand){ 0 }),
	     VTPU_ERR_NONE, 0);
	CASE(cv, cd0, "conv_dgrad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cv, cd0, "conv_dgrad accumulate ok",
	     cv.flags = VTPU_CONV_ACCUMULATE, VTPU_ERR_NONE, 0);
	CASE(cv, cw0, "conv_wgrad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cv, cw0, "conv_wgrad stride 2 ok",
	     (cv.win.stride_h = 2, cv.win.stride_w = 2, cv.y.offset = 3584),
	     VTPU_ERR_NONE, 0);
	CASE(cv, cv0, "conv accumulate", cv.flags |= VTPU_CONV_ACCUMULATE,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(cv, cd0, "conv_dgrad bias flag", cv.flags = VTPU_CONV_BIAS,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(cv, cw0, "conv_wgrad relu", cv.flags = VTPU_CONV_RELU,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(cv, cv0, "conv unknown flag", cv.flags = 8, VTPU_ERR_BAD_FLAGS, 0);
	CASE(cv, cv0, "conv oc 0", cv.oc = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(cv, cv0, "conv stride 0", cv.win.stride_w = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(cv, cd0, "conv_dgrad stride 2", cv.win.stride_h = 2,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(cv, cv0, "conv pad >= k", cv.win.pad_h = 3, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(cv, cv0, "conv windows past 2^24",
	     (cv.win = (struct vtpu_window){ .n = 1u << 24, .h = 2, .w = 1,
					     .c = 1, .kh = 1, .kw = 1,
					     .stride_h = 1, .stride_w = 1 }),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cv, cd0, "conv_dgrad kh*kw*oc past 2^24", cv.oc = 1u << 21,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cv, cv0, "conv bias set without the flag", cv.flags = 0,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_BIAS);
	CASE(cv, cw0, "conv_wgrad bias set", cv.bias.offset = 64,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_BIAS);
	CASE(cv, cv0, "conv x buffer 5", cv.x.buf = 5, VTPU_ERR_BAD_BUFFER,
	     VTPU_OPERAND_X);
	CASE(cv, cv0, "conv w past its buffer", cv.w.offset = 4000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_W);
	CASE(cv, cv0, "conv y misaligned", cv.y.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_Y);
	CASE(cv, cv0, "conv y over x", cv.y = cv.x, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(cv, cv0, "conv y over bias", (cv.y.buf = 0, cv.y.offset = 640),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(cv, cd0, "conv_dgrad dx over w",
	     cv.x = (struct vtpu_operand)OPND(0, 768), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DX);
	CASE(cv, cd0, "conv_dgrad dx past its buffer", cv.x.offset = 4000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DX);
	CASE(cv, cw0, "conv_wgrad dw over dy", cv.w = cv.y, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DW);
	CASE(cv, cw0, "conv_wgrad dy past its buffer", cv.y.offset = 3712,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DY);
#undef CASE

	vtpu_cpu_destroy(r.cpu);
	vtpu_cpu_bo_destroy(&r.b0);
	vtpu_cpu_bo_destroy(&r.b1);
}

/* A GEMM in panels that breaks their rules: rejected, and said in words. */
TEST(gemm_panels_rejected_in_words)
{
	static const struct {
		const char *what;
		uint32_t flags, n, k, ldb, ldc, dtype, reason, operand;
	} cases[] = {
		{ "B in panels, n = 16", VTPU_GEMM_B_PANELS, 16, 32, 16, 16,
		  VTPU_DTYPE_F32, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_B },
		{ "B^T in panels, k = 16",
		  VTPU_GEMM_B_PANELS | VTPU_GEMM_TRANS_B, 32, 16, 16, 32,
		  VTPU_DTYPE_F32, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_B },
		{ "B in panels, ldb 40", VTPU_GEMM_B_PANELS, 32, 32, 40, 32,
		  VTPU_DTYPE_F32, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_B },
		{ "B in panels, bf16", VTPU_GEMM_B_PANELS, 32, 32, 32, 32,
		  VTPU_DTYPE_BF16, VTPU_ERR_BAD_DTYPE, VTPU_OPERAND_B },
		{ "C in panels, n = 48", VTPU_GEMM_C_PANELS, 48, 32, 48, 48,
		  VTPU_DTYPE_F32, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_C },
		{ "C in panels, ldc 33", VTPU_GEMM_C_PANELS, 32, 32, 32, 33,
		  VTPU_DTYPE_F32, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_C },
	};
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_bo b0 = bo_new(4096), b1 = bo_new(4096);
	size_t i;

	ASSERT_NE(NULL, cpu);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vtpu_cmd_gemm g = {
			.hdr = HDR(VTPU_OP_GEMM, vtpu_cmd_gemm),
			.m = 4, .n = cases[i].n, .k = cases[i].k,
			.flags = cases[i].flags, .lda = cases[i].k,
			.ldb = cases[i].ldb, .ldc = cases[i].ldc,
			.dtype = cases[i].dtype,
			.a = OPND(0, 0), .b = OPND(1, 0), .c = OPND(0, 2048),
		};
		struct vtpu_cmdbuf cb;
		struct vtpu_job job = { 0 };
		char msg[256];

		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_use(&cb, &b0);
		vtpu_cmdbuf_use(&cb, &b1);
		vtpu_cmdbuf_append(&cb, &g);
		EXPECT_EQ(-EINVAL, vtpu_cpu_run(cpu, &cb, &job));
		vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
		TH_LOG("%-24s -> %s", cases[i].what, msg);
		EXPECT_EQ(cases[i].reason, job.error.reason);
		EXPECT_EQ(cases[i].operand, job.error.operand);
		EXPECT_NE(NULL, strstr(msg, "is in panels"));
		vtpu_cmdbuf_fini(&cb);
	}
	vtpu_cpu_destroy(cpu);
	vtpu_cpu_bo_destroy(&b0);
	vtpu_cpu_bo_destroy(&b1);
}

TEST_HARNESS_MAIN
