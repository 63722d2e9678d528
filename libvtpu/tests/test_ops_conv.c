// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the convolution and pooling ops (IM2COL, COL2IM,
 * MAXPOOL(_GRAD), AVGPOOL(_GRAD), CONV_POOL(_WGRAD), CONV(_DGRAD, _WGRAD)) through
 * libvtpu's cpu backend, on every executor (test_ops.h), against plain C
 * references in this file; and COL2IM is the adjoint of IM2COL.
 */
#include "test_ops.h"

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
	{ 1, 20, 19, 2, 17, 18, 1, 1, 8, 9 },	/* 306 taps: COL2IM steps */
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
		BOS_DESTROY(&xb, &cb_, &yb, &db);
		FREE_ALL(keep1, keep2, ref);
	}
	execs_fini(&ex);
}

/* ---- MAXPOOL / MAXPOOL_GRAD ------------------------------------------------ */

/* n h w c kh kw sh sw ph pw, and VTPU_POOL_PAD_END_* flags */
static const uint32_t pool_shapes[][11] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0 },
	{ 2, 5, 5, 3, 2, 2, 2, 2, 0, 0, 0 },
	{ 1, 7, 9, 4, 3, 3, 2, 2, 1, 1, 0 },
	{ 3, 6, 6, 5, 3, 3, 1, 1, 1, 1, 0 },	/* overlapping windows */
	{ 1, 13, 7, 3, 4, 2, 3, 1, 2, 1, 0 },
	{ 8, 32, 32, 16, 2, 2, 2, 2, 0, 0, 0 },	/* many tiles */
	{ 2, 30, 30, 9, 3, 3, 2, 2, 1, 1, 0 },
	{ 1, 40, 37, 3, 20, 17, 3, 2, 10, 8, 0 },	/* 340 positions */
	{ 2, 19, 23, 2, 17, 19, 1, 1, 8, 9, 0 },	/* 323 taps */
	/* Keras' 'same' with an odd total: 3x3 stride 2 on 8 x 8 (ResNet) */
	{ 2, 8, 8, 3, 3, 3, 2, 2, 0, 0, VTPU_POOL_FLAGS },
	{ 1, 5, 6, 2, 2, 2, 2, 2, 0, 0, VTPU_POOL_PAD_END_H },
	{ 1, 1, 1, 2, 2, 2, 2, 2, 0, 0, VTPU_POOL_FLAGS },
	{ 1, 9, 10, 3, 4, 4, 1, 1, 1, 1, VTPU_POOL_PAD_END_W },
	/* runs of 16 channels in registers, and the rest; with steps */
	{ 2, 12, 11, 37, 3, 3, 2, 2, 1, 1, VTPU_POOL_FLAGS },
	{ 1, 40, 37, 18, 20, 17, 3, 2, 10, 8, 0 },
	/* whole windows in one step: blocks of 64, 32, 16 and the rest */
	{ 2, 9, 11, 117, 3, 3, 2, 2, 1, 1, 0 },
	{ 1, 7, 8, 70, 3, 3, 2, 2, 0, 0, VTPU_POOL_FLAGS },
	{ 1, 10, 9, 64, 2, 3, 3, 4, 1, 2, 0 },	/* pixels no window covers */
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
		uint32_t eh = !!(g[10] & VTPU_POOL_PAD_END_H);
		uint32_t ew = !!(g[10] & VTPU_POOL_PAD_END_W);
		uint32_t oh = (g[1] + 2 * g[8] + eh - g[4]) / g[6] + 1;
		uint32_t ow = (g[2] + 2 * g[9] + ew - g[5]) / g[7] + 1;
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

			if (g[10]) {
				vtpu_cmdbuf_maxpool_padded(&cb, &w, g[10], rx,
							   ry_, ri);
				vtpu_cmdbuf_maxpool_grad_padded(&cb, &w, g[10],
								rdy, ri, rdx_);
				vtpu_cmdbuf_maxpool_grad_padded(&cb, &w, g[10],
								rdy, rgi, rgd);
			} else {
				vtpu_cmdbuf_maxpool(&cb, &w, rx, ry_, ri);
				vtpu_cmdbuf_maxpool_grad(&cb, &w, rdy, ri, rdx_);
				vtpu_cmdbuf_maxpool_grad(&cb, &w, rdy, rgi, rgd);
			}
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
		TH_LOG("maxpool %ux%ux%ux%u k%ux%u s%ux%u p%ux%u end %u: y/index "
		       "exact, dx maxdiff %.3g, garbage-index dx maxdiff %.3g",
		       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
		       g[10], md1, md2);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &yb, &ib, &dyb, &dxb, &gib, &gdxb);
		FREE_ALL(ry, ridx, rdx, rgdx, k1, k2, k3, k4);
	}
	execs_fini(&ex);
}

/* ---- AVGPOOL / AVGPOOL_GRAD ---------------------------------------------- */

/* Shapes: n h w c kh kw sh sw and 1 for Keras' padding='same'. */
static const uint32_t avg_shapes[][9] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0 },
	{ 1, 1, 1, 2, 2, 2, 2, 2, 1 },		/* a window past a 1x1 image */
	{ 2, 5, 5, 3, 2, 2, 2, 2, 0 },
	{ 2, 5, 5, 3, 2, 2, 2, 2, 1 },		/* odd size, same: bottom pad */
	{ 1, 8, 8, 4, 3, 3, 2, 2, 1 },		/* even size, same: asymmetric */
	{ 1, 7, 9, 4, 3, 3, 2, 2, 1 },
	{ 3, 6, 7, 5, 3, 3, 1, 1, 1 },		/* overlapping windows */
	{ 1, 13, 7, 3, 4, 2, 3, 1, 1 },
	{ 1, 13, 7, 3, 4, 2, 3, 1, 0 },
	{ 4, 7, 7, 37, 7, 7, 1, 1, 0 },		/* global */
	{ 2, 3, 5, 300, 3, 5, 1, 1, 0 },	/* global, many channels */
	{ 1, 40, 37, 3, 40, 37, 1, 1, 0 },	/* global, 1480 positions: steps */
	{ 2, 19, 23, 2, 17, 19, 1, 1, 1 },	/* 323 taps: the gradient's */
	{ 8, 32, 32, 16, 2, 2, 2, 2, 0 },	/* many tiles */
	{ 2, 12, 11, 37, 3, 3, 2, 2, 1 },
	{ 1, 40, 37, 18, 40, 37, 1, 1, 0 },	/* steps, 16 + 2 channels */
	/* whole windows in one step: blocks of 64, 32, 16 and the rest */
	{ 2, 9, 11, 117, 3, 3, 2, 2, 1 },
	{ 1, 8, 8, 70, 4, 4, 4, 4, 0 },
	{ 1, 10, 9, 33, 2, 3, 3, 4, 0 },	/* pixels no window covers */
};
#define NAVG (sizeof(avg_shapes) / sizeof(avg_shapes[0]))

/* Keras' output size and leading pad of one axis */
static void keras_axis(uint32_t in, uint32_t k, uint32_t s, int same,
		       uint32_t *out, uint32_t *pad)
{
	long total;

	if (!same) {
		*out = (in - k) / s + 1;
		*pad = 0;
		return;
	}
	*out = (in + s - 1) / s;
	total = (long)(*out - 1) * s + k - in;
	*pad = total > 0 ? (uint32_t)(total / 2) : 0;
}

/* y = avgpool(x) in double; the window's count excludes padding */
static void avgpool_ref(const double *x, const struct vtpu_window *w,
			uint32_t oh, uint32_t ow, double *y)
{
	size_t n, oy, ox, c, o = 0;
	uint32_t ky, kx;

	for (n = 0; n < w->n; n++)
	for (oy = 0; oy < oh; oy++)
	for (ox = 0; ox < ow; ox++)
	for (c = 0; c < w->c; c++, o++) {
		double sum = 0;
		long cnt = 0;

		for (ky = 0; ky < w->kh; ky++)
			for (kx = 0; kx < w->kw; kx++) {
				long iy = (long)(oy * w->stride_h + ky) - w->pad_h;
				long ix = (long)(ox * w->stride_w + kx) - w->pad_w;

				if (iy < 0 || iy >= (long)w->h || ix < 0 ||
				    ix >= (long)w->w)
					continue;
				sum += x[((n * w->h + iy) * w->w + ix) * w->c + c];
				cnt++;
			}
		y[o] = sum / cnt;
	}
}

TEST(avgpool)
{
	struct execs ex;
	size_t s;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < NAVG; s++) {
		const uint32_t *g = avg_shapes[s];
		struct vtpu_window w = {
			.n = g[0], .h = g[1], .w = g[2], .c = g[3], .kh = g[4],
			.kw = g[5], .stride_h = g[6], .stride_w = g[7],
		};
		uint32_t oh, ow;
		size_t nout, nimg, i, t;
		struct vtpu_bo xb, yb, dyb, dxb;
		float *x, *y, *dy, *dx;
		double *xd, *yd, *yp;
		void *k1, *k2;
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		double md1, md2 = 0;
		int e;

		keras_axis(g[1], g[4], g[6], g[8], &oh, &w.pad_h);
		keras_axis(g[2], g[5], g[7], g[8], &ow, &w.pad_w);
		nout = (size_t)g[0] * oh * ow * g[3];
		nimg = (size_t)g[0] * g[1] * g[2] * g[3];
		xb = bo_new(nimg * 4);
		yb = bo_new(nout * 4);
		dyb = bo_new(nout * 4);
		dxb = bo_new(nimg * 4);
		x = xb.map;
		y = yb.map;
		dy = dyb.map;
		dx = dxb.map;
		xd = malloc(nimg * sizeof(double));
		yd = malloc(nout * sizeof(double));
		yp = malloc(nout * sizeof(double));
		k1 = malloc(nout * 4);
		k2 = malloc(nimg * 4);
		rng_seed(300 + s);
		fill_rand(x, nimg);
		fill_rand(dy, nout);
		for (i = 0; i < nimg; i++)
			xd[i] = x[i];
		vtpu_cmdbuf_init(&cb);
		ASSERT_EQ(0, vtpu_cmdbuf_avgpool(&cb, &w, oh, ow,
			VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0),
			VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0)));
		ASSERT_EQ(0, vtpu_cmdbuf_avgpool_grad(&cb, &w, oh, ow,
			VTPU_REF(vtpu_cmdbuf_use(&cb, &dyb), 0),
			VTPU_REF(vtpu_cmdbuf_use(&cb, &dxb), 0)));
		for (e = 0; e < ex.n; e++) {
			memset(y, 0xff, nout * 4);
			memset(dx, 0xff, nimg * 4);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			diff += same_bits(y, k1, nout * 4, e);
			diff += same_bits(dx, k2, nimg * 4, e);
		}
		avgpool_ref(xd, &w, oh, ow, yd);
		md1 = maxdiff(y, yd, nout, 1e-5, &bad);
		/*
		 * The gradient of L = sum dy * avgpool(x), by central
		 * differences of the double forward at each of up to 40
		 * elements of x (L is linear: the step is exact).
		 */
		for (t = 0; t < 40 && t < nimg; t++) {
			size_t j = nimg <= 40 ? t : (size_t)urand() % nimg;
			double lp = 0, lm = 0, fd;

			xd[j] = (double)x[j] + 0.5;
			avgpool_ref(xd, &w, oh, ow, yp);
			for (i = 0; i < nout; i++)
				lp += dy[i] * yp[i];
			xd[j] = (double)x[j] - 0.5;
			avgpool_ref(xd, &w, oh, ow, yp);
			for (i = 0; i < nout; i++)
				lm += dy[i] * yp[i];
			xd[j] = x[j];
			fd = lp - lm;
			if (fabs(fd - dx[j]) > 1e-5 * (1 + fabs(fd)))
				bad++;
			if (fabs(fd - dx[j]) > md2)
				md2 = fabs(fd - dx[j]);
		}
		TH_LOG("avgpool %ux%ux%ux%u k%ux%u s%ux%u p%ux%u o%ux%u: "
		       "y maxdiff %.3g, dx vs finite differences %.3g",
		       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		       w.pad_h, w.pad_w, oh, ow, md1, md2);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &yb, &dyb, &dxb);
		FREE_ALL(xd, yd, yp, k1, k2);
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
	/*
	 * AVX-512's four blocks at a time, then a whole block (gathered
	 * windows), then a partial one; dw in registers or not (2 x 9 taps)
	 */
	{ 2, 8, 8, 2, 3, 3, 1, 1, 1, 1, 80, 2, 2, 2, 2, VTPU_CONV_RELU },
	{ 2, 9, 9, 1, 3, 3, 1, 1, 0, 0, 70, 2, 2, 2, 2, 0 },
	/*
	 * Few filters: a partial block on the fast paths (alone, after whole
	 * ones, with gathered windows, the largest patch), and gradient
	 * tiles that split the taps (not the 2 x 2 window's 4: one tile).
	 * A LeNet's first layer: several tiles and steps.
	 */
	{ 24, 28, 28, 1, 5, 5, 1, 1, 0, 0, 6, 2, 2, 2, 2, VTPU_CONV_RELU },
	{ 3, 12, 12, 2, 4, 4, 1, 1, 1, 1, 10, 2, 2, 2, 2, 0 },
	{ 2, 10, 10, 1, 3, 3, 1, 1, 0, 0, 40, 2, 2, 2, 2, VTPU_CONV_RELU },
	{ 2, 6, 6, 1, 2, 2, 1, 1, 0, 0, 1, 2, 2, 2, 2, 0 },
	{ 2, 9, 9, 3, 2, 2, 1, 1, 1, 0, 3, 2, 1, 2, 1, VTPU_CONV_RELU },
	/*
	 * No padding (windows at a base plus each position's delta) with
	 * channels, unequal conv and pool strides, a pool stride that is
	 * not the window's: four and two blocks, two positions; and 25
	 * taps on one tile (dw's rows in registers 9, 9 and 7 at a time).
	 */
	{ 2, 11, 9, 3, 3, 2, 2, 1, 0, 0, 64, 2, 2, 1, 2, VTPU_CONV_RELU },
	{ 2, 10, 9, 2, 2, 3, 1, 2, 0, 0, 32, 2, 1, 2, 1, 0 },
	{ 4, 12, 12, 1, 5, 5, 1, 1, 0, 0, 32, 2, 2, 2, 2, VTPU_CONV_RELU },
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
/* The CONV_POOL command of @g, its operands to be filled in. */
static struct vtpu_conv_pool_desc cp_desc(const struct cp_geom *g)
{
	return (struct vtpu_conv_pool_desc){
		.win = { .n = g->n, .h = g->h, .w = g->w, .c = g->c,
			 .kh = g->kh, .kw = g->kw, .stride_h = g->sh,
			 .stride_w = g->sw, .pad_h = g->ph, .pad_w = g->pw },
		.oc = g->oc, .pool_h = g->qh, .pool_w = g->qw,
		.pool_stride_h = g->qsh, .pool_stride_w = g->qsw,
		.flags = g->flags,
	};
}

/* CONV_POOL's operands in @cb: x, w, bias, y and the routes */
static void cp_use(struct vtpu_cmdbuf *cb, struct vtpu_conv_pool_desc *d,
		   struct vtpu_bo *x, struct vtpu_bo *w, struct vtpu_bo *bias,
		   struct vtpu_bo *y, struct vtpu_bo *index)
{
	d->x = VTPU_REF(vtpu_cmdbuf_use(cb, x), 0);
	d->w = VTPU_REF(vtpu_cmdbuf_use(cb, w), 0);
	d->bias = VTPU_REF(vtpu_cmdbuf_use(cb, bias), 0);
	d->y = VTPU_REF(vtpu_cmdbuf_use(cb, y), 0);
	d->index = VTPU_REF(vtpu_cmdbuf_use(cb, index), 0);
}

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

			/* MAXPOOL's rule: the first maximum; a NaN wins */
			if (first || v > best || (isnan(v) && !isnan(best))) {
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
		struct vtpu_conv_pool_desc d = cp_desc(&g);
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
		cp_use(&cb, &d, &xb, &wb, &bb, &yb, &ib);
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
		BOS_DESTROY(&xb, &wb, &bb, &yb, &ib, &dyb, &dwb, &dbb, &gib,
			    &gwb, &gbb);
		for (k = 0; k < 5; k++)
			free(keep[k]);
		FREE_ALL(ry, ridx, rdw, rdb, rgw, rgb);
	}
	execs_fini(&ex);
}

/*
 * CONV_POOL where inputs are NaN or infinite: the NaN-aware pooling rule
 * (the first NaN of a window wins, then the first maximum) on the fast
 * paths' four blocks at a time, a whole block and a partial one, with and
 * without the ReLU, on every level and worker count: y (NaN where the
 * reference has one) and the routes exactly the reference's.
 */
TEST(conv_pool_nan)
{
	static const uint32_t shapes[][16] = {
		{ 3, 12, 12, 1, 3, 3, 1, 1, 0, 0, 70, 2, 2, 2, 2,
		  VTPU_CONV_RELU },
		{ 2, 10, 10, 2, 3, 3, 1, 1, 1, 1, 64, 2, 2, 2, 2, 0 },
	};
	struct execs ex;
	size_t s, i;
	int e;

	execs_init(&ex);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct cp_geom g = cp_geom(shapes[s]);
		struct vtpu_bo xb = bo_new(g.nx * 4), wb = bo_new(g.nw * 4);
		struct vtpu_bo bb = bo_new(g.oc * 4), yb = bo_new(g.ny * 4);
		struct vtpu_bo ib = bo_new(g.ny);
		float *x = xb.map, *w = wb.map, *bias = bb.map, *y = yb.map;
		float *ry = malloc(g.ny * 4);
		uint8_t *ridx = malloc(g.ny);
		struct vtpu_conv_pool_desc d = cp_desc(&g);
		struct vtpu_cmdbuf cb;
		long bad = 0, nans = 0;

		rng_seed(1300 + s);
		for (i = 0; i < g.nx; i++)
			x[i] = i % 97 == 0 ? NAN :
			       i % 89 == 0 ? (i & 1 ? INFINITY : -INFINITY) :
			       irand(2);
		for (i = 0; i < g.nw; i++)
			w[i] = irand(2);
		for (i = 0; i < g.oc; i++)
			bias[i] = irand(3);
		vtpu_cmdbuf_init(&cb);
		cp_use(&cb, &d, &xb, &wb, &bb, &yb, &ib);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_pool(&cb, &d));
		cp_fwd_ref(&g, x, w, bias, ry, ridx);
		for (i = 0; i < g.ny; i++)
			nans += isnan(ry[i]);
		for (e = 0; e < ex.n; e++) {
			memset(yb.map, 0xff, g.ny * 4);
			memset(ib.map, 0xfe, g.ny);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			for (i = 0; i < g.ny; i++)
				bad += (isnan(y[i]) != isnan(ry[i]) ||
					(!isnan(ry[i]) && y[i] != ry[i])) ||
				       ((uint8_t *)ib.map)[i] != ridx[i];
		}
		TH_LOG("conv_pool with NaN and infinite inputs, %u filters%s: "
		       "%ld of %zu outputs NaN, y and routes the reference's "
		       "on %d executors", g.oc,
		       g.flags & VTPU_CONV_RELU ? ", relu" : "", nans, g.ny,
		       ex.n);
		EXPECT_GT(nans, 0);
		EXPECT_EQ(0, bad);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &wb, &bb, &yb, &ib);
		FREE_ALL(ry, ridx);
	}
	execs_fini(&ex);
}

/*
 * CONV_POOL_WGRAD's tiles split the taps when there are fewer channel
 * tiles than workers: on 1 to 4 threads, real-valued data (sums that
 * round), the same bits on every worker count, and within rounding of the
 * reference; a few filters (a partial block) and a whole block plus one.
 */
TEST(conv_pool_wgrad_tap_tiles)
{
	static const uint32_t shapes[][16] = {
		{ 8, 28, 28, 1, 5, 5, 1, 1, 0, 0, 6, 2, 2, 2, 2,
		  VTPU_CONV_RELU },
		{ 4, 14, 14, 2, 4, 4, 1, 1, 2, 2, 17, 2, 2, 2, 2, 0 },
	};
	size_t s, i;

	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		const struct cp_geom g = cp_geom(shapes[s]);
		struct vtpu_bo xb = bo_new(g.nx * 4), ib = bo_new(g.ny);
		struct vtpu_bo dyb = bo_new(g.ny * 4), dwb = bo_new(g.nw * 4);
		struct vtpu_bo dbb = bo_new(g.oc * 4);
		float *x = xb.map, *dy = dyb.map, *keep = malloc(g.nw * 4);
		float *keepb = malloc(g.oc * 4);
		uint8_t *idx = ib.map;
		double *rdw = malloc(g.nw * 8), *rdb = malloc(g.oc * 8), md;
		struct vtpu_conv_pool_desc d = cp_desc(&g);
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0;
		int t;

		rng_seed(900 + s);
		for (i = 0; i < g.nx; i++)
			x[i] = frand();
		for (i = 0; i < g.ny; i++) {
			dy[i] = frand();
			idx[i] = (uint8_t)(urand() % 4 ? urand() % (g.qh * g.qw) :
					   VTPU_CONV_NO_ROUTE);
		}
		cp_wgrad_ref(&g, x, dy, idx, rdw, rdb);
		vtpu_cmdbuf_init(&cb);
		d.x = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
		d.index = VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0);
		d.dy = VTPU_REF(vtpu_cmdbuf_use(&cb, &dyb), 0);
		d.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &dwb), 0);
		d.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &dbb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_conv_pool_wgrad(&cb, &d));
		for (t = 1; t <= 4; t++) {
			struct vtpu_cpu *cpu = vtpu_cpu_create(t, -1,
							       VTPU_CPU_GEMM_ENGINE);

			ASSERT_NE(NULL, cpu);
			memset(dwb.map, 0xff, g.nw * 4);
			memset(dbb.map, 0xff, g.oc * 4);
			ASSERT_EQ(0, run(cpu, &cb));
			diff += same_bits(dwb.map, keep, g.nw * 4, t - 1);
			diff += same_bits(dbb.map, keepb, g.oc * 4, t - 1);
			vtpu_cpu_destroy(cpu);
		}
		md = maxdiff(dwb.map, rdw, g.nw, 1e-3, &bad);
		md += maxdiff(dbb.map, rdb, g.oc, 1e-3, &bad);
		TH_LOG("conv_pool_wgrad %ux%ux%ux%u k%ux%u -> %u on 1-4 threads: "
		       "same bits, max diff %g", g.n, g.h, g.w, g.c, g.kh,
		       g.kw, g.oc, md);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &ib, &dyb, &dwb, &dbb);
		FREE_ALL(keep, keepb, rdw, rdb);
	}
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
	{ 4, 8, 8, 40, 3, 6, 1, 1, 1, 2, 8, VTPU_CONV_BIAS },
	/* CIFAR-10's first layer, four images: many row tiles */
	{ 4, 32, 32, 3, 3, 3, 1, 1, 1, 1, 32,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	/*
	 * Winograd (AVX-512, 3 x 3 at stride 1, 16-256 channels; CONV in
	 * F(4 x 4) on these three, DGRAD on the first and the third): odd
	 * output sizes (tiles cut at the edge), channels and columns in
	 * partial vectors; 64 channels, two or three column groups, pads 2
	 * and 0; several tiles, blocks of WINO_TB, and CONV_WGRAD's channel
	 * splits and steps: 256 F(4 x 4) tiles in two steps of 224, 588 F(2 x
	 * 2) tiles (14 x 14: F(2 x 2)'s weight gradient) in two of 448
	 */
	{ 2, 7, 9, 24, 3, 3, 1, 1, 1, 1, 48,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 1, 5, 6, 64, 3, 3, 1, 1, 2, 0, 80, VTPU_CONV_BIAS },
	{ 16, 16, 16, 32, 3, 3, 1, 1, 1, 1, 32, VTPU_CONV_RELU },
	{ 12, 14, 14, 32, 3, 3, 1, 1, 1, 1, 32, 0 },
	/*
	 * Winograd over more than VTPU_WINO_CMAX (64) channels, taken 64 at
	 * a time: 130 (tiles of 32 columns, a last chunk of 2 channels; its
	 * DGRAD 72 channels by 130 columns), 256 (four chunks; DGRAD 40),
	 * DGRAD over 256; CONV_WGRAD's channels split into tiles of 64 at
	 * most; 96 in F(4 x 4) (two chunks, columns in tiles of 32)
	 */
	{ 2, 6, 7, 130, 3, 3, 1, 1, 1, 1, 72,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 1, 5, 5, 256, 3, 3, 1, 1, 1, 1, 40, 0 },
	{ 1, 4, 5, 48, 3, 3, 1, 1, 1, 1, 256, VTPU_CONV_BIAS },
	{ 2, 8, 8, 96, 3, 3, 1, 1, 1, 1, 40, VTPU_CONV_BIAS },
	/*
	 * Few channels (a LeNet's second layer): CONV with 16 and 7 columns
	 * on AVX-512's rows kernel with one vector of columns (CONV_DGRAD's
	 * 6 channels are scattered, below); windows over the edge (DGRAD's
	 * pad 4), edge microtiles
	 */
	{ 4, 12, 12, 6, 5, 5, 1, 1, 0, 0, 16,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 2, 14, 13, 6, 5, 5, 1, 1, 2, 2, 7, VTPU_CONV_BIAS },
	/*
	 * CONV_DGRAD scattered from dy (AVX-512, c <= 16): pads of k - 1
	 * (windows that barely touch the image), uneven pads, tiles of
	 * several images and a short last one, steps within an image
	 */
	{ 20, 9, 9, 4, 3, 3, 1, 1, 2, 2, 5, 0 },
	{ 3, 7, 10, 2, 3, 5, 1, 1, 0, 3, 9, VTPU_CONV_BIAS },
	{ 2, 16, 16, 16, 5, 5, 1, 1, 0, 0, 256, 0 },
	/*
	 * The rows kernel's k blocks starting inside a run, windows over the
	 * edge gathered from there and windows read in place whose block
	 * misses the rows over the edge: a run of 120 in blocks of 180 (the
	 * second from tap row 1, column 60), a run of 300 longer than the
	 * block, and CONV and CONV_DGRAD (24 and 20 channels) both split
	 * inside a run of 120 with pads of 2
	 */
	{ 1, 9, 9, 40, 3, 3, 2, 2, 1, 1, 32, VTPU_CONV_BIAS },
	{ 1, 7, 7, 100, 3, 3, 2, 2, 1, 1, 24, 0 },
	{ 1, 8, 8, 24, 5, 5, 1, 1, 2, 2, 20, VTPU_CONV_RELU },
	/*
	 * Strided 1 x 1 shortcuts (xception's, resnet's): CONV_WGRAD in
	 * AVX-512's blocks of rows from 12 channels on (32: three blocks
	 * by two column groups; 12: one block, odd sizes), a vector of
	 * columns a tile below (11)
	 */
	{ 4, 16, 16, 32, 1, 1, 2, 2, 0, 0, 64, 0 },
	{ 3, 9, 11, 12, 1, 1, 2, 2, 0, 0, 24, VTPU_CONV_BIAS },
	{ 2, 10, 10, 11, 1, 1, 2, 2, 0, 0, 20, 0 },
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
		BOS_DESTROY(&xb, &wb, &bb, &yb, &dyb, &dwb, &dxb);
		for (k = 0; k < 3; k++)
			free(keep[k]);
		FREE_ALL(ry, rdw, rdx, ymag, dwmag, dxmag);
	}
	execs_fini(&ex);
}

/*
 * AVX-512's Winograd commands tile by the workers: CONV_WGRAD its
 * channels and columns (one tile a worker, fewest passes over x and dy),
 * CONV and CONV_DGRAD their Winograd tiles, in blocks cut differently.
 * Their sums must not depend on them. Real-valued data (sums that
 * round), 1 to 4 threads on every level: y, dx and dw the same bits as
 * the level's one thread, within 1e-5 of the terms' magnitudes of double
 * (F(4 x 4)'s transforms scale by up to 8 and round more than F(2 x
 * 2)'s). n, h, w, c, oc:
 * - 64 channels into 128 on 30 x 30 (F(4 x 4): 256 tiles; the weight
 *   gradient in two steps, tiles of 64 columns);
 * - 130 into 72 (CONV F(2 x 2), its weight gradient's channels in three);
 * - 32 into 32 on 8 x 8 (the weight gradient in F(2 x 2), split by
 *   channels);
 * - 48 into 256 (two weight-gradient tiles of 128 columns at least;
 *   DGRAD over 256 channels in F(2 x 2));
 * - 200 into 40;
 * - 64 into 128 on 14 x 14 (the weight gradient in F(2 x 2), 784 tiles
 *   in three steps; one tile on one thread, its columns split on more: a
 *   step's length that followed the tile's size would fail here);
 * - 100 into 40 (F(4 x 4), weight-gradient channel tiles of 56 and 44);
 * - 32 into 64 on 30 x 30 (F(4 x 4)'s blocks of 28 tiles, several a
 *   worker), 64 into 48 on 9 x 11 (tiles past the edge), 24 into 80 on
 *   12 x 12 (a partial vector of channels, two column groups), 128 into
 *   72 on 16 x 16 (channels in two chunks, columns in groups of 32;
 *   DGRAD 72 into 128).
 */
static const uint32_t wino_workers_shapes[][5] = {
	{ 4, 30, 30, 64, 128 }, { 1, 6, 7, 130, 72 }, { 4, 8, 8, 32, 32 },
	{ 1, 5, 5, 48, 256 }, { 1, 7, 6, 200, 40 }, { 16, 14, 14, 64, 128 },
	{ 2, 16, 16, 100, 40 }, { 4, 30, 30, 32, 64 }, { 2, 9, 11, 64, 48 },
	{ 3, 12, 12, 24, 80 }, { 2, 16, 16, 128, 72 },
};

TEST(winograd_any_workers)
{
	int (*const add[3])(struct vtpu_cmdbuf *cb,
			    const struct vtpu_conv_desc *d) = {
		vtpu_cmdbuf_conv, vtpu_cmdbuf_conv_dgrad,
		vtpu_cmdbuf_conv_wgrad,
	};
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(wino_workers_shapes) /
			sizeof(wino_workers_shapes[0]); s++) {
		const uint32_t *v = wino_workers_shapes[s];
		const uint32_t cps[16] = { v[0], v[1], v[2], v[3], 3, 3, 1, 1,
					   1, 1, v[4], 1, 1, 1, 1, 0 };
		const struct cp_geom g = cp_geom(cps);
		struct vtpu_bo xb = bo_new(g.nx * 4), wb = bo_new(g.nw * 4);
		struct vtpu_bo yb = bo_new(g.ny * 4), dyb = bo_new(g.ny * 4);
		struct vtpu_bo dwb = bo_new(g.nw * 4), dxb = bo_new(g.nx * 4);
		double *ry = malloc(g.ny * 8), *ymag = malloc(g.ny * 8);
		double *rdw = malloc(g.nw * 8), *rdx = malloc(g.nx * 8);
		double *dwmag = malloc(g.nw * 8), *dxmag = malloc(g.nx * 8);
		float *zero = calloc(g.oc, 4);	/* (the reference's bias) */
		void *keep[3] = { malloc(g.ny * 4), malloc(g.nx * 4),
				  malloc(g.nw * 4) };
		const void *out[3] = { yb.map, dxb.map, dwb.map };
		const size_t sizes[3] = { g.ny * 4, g.nx * 4, g.nw * 4 };
		struct vtpu_conv_desc d = {
			.win = { .n = g.n, .h = g.h, .w = g.w, .c = g.c,
				 .kh = 3, .kw = 3, .stride_h = 1,
				 .stride_w = 1, .pad_h = 1, .pad_w = 1 },
			.oc = g.oc,
		};
		struct vtpu_cmdbuf cb;
		long diff = 0, far = 0;
		int e, k;

		ASSERT_TRUE(ry && ymag && rdw && rdx && dwmag && dxmag &&
			    zero && keep[0] && keep[1] && keep[2]);
		rng_seed(900 + s);
		fill_rand(xb.map, g.nx);
		fill_rand(wb.map, g.nw);
		fill_rand(dyb.map, g.ny);
		cv_fwd_ref(&g, xb.map, wb.map, zero, VTPU_CONV_BIAS, ry, ymag);
		cv_grad_ref(&g, xb.map, wb.map, dyb.map, rdw, rdx, dwmag, dxmag);
		/* y = CONV(x, w), dx = DGRAD(dy, w), dw = WGRAD(x, dy) */
		vtpu_cmdbuf_init(&cb);
		for (k = 0; k < 3; k++) {
			struct vtpu_conv_desc dk = d;

			dk.x = VTPU_REF(vtpu_cmdbuf_use(&cb, k == 1 ? &dxb :
							&xb), 0);
			dk.w = VTPU_REF(vtpu_cmdbuf_use(&cb, k == 2 ? &dwb :
							&wb), 0);
			dk.y = VTPU_REF(vtpu_cmdbuf_use(&cb, k ? &dyb : &yb),
					0);
			ASSERT_EQ(0, add[k](&cb, &dk));
		}
		for (e = 0; e < ex.n; e++) {
			for (k = 0; k < 3; k++)
				memset((void *)out[k], 0xff, sizes[k]);
			ASSERT_EQ(0, run(ex.cpu[e], &cb));
			for (k = 0; k < 3; k++) {
				if (ex.first[e])
					memcpy(keep[k], out[k], sizes[k]);
				else
					diff += memcmp(keep[k], out[k],
						       sizes[k]) != 0;
			}
			far += cv_far(yb.map, ry, ymag, g.ny, 1);
			far += cv_far(dxb.map, rdx, dxmag, g.nx, 1);
			far += cv_far(dwb.map, rdw, dwmag, g.nw, 1);
		}
		TH_LOG("conv %ux%ux%ux%u -> %u, y, dx and dw on 1-4 threads: "
		       "%ld differ from one thread, %ld far from double", g.n,
		       g.h, g.w, g.c, g.oc, diff, far);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(0, far);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &wb, &yb, &dyb, &dwb, &dxb);
		FREE_ALL(ry, ymag, rdw, rdx, dwmag, dxmag, zero, keep[0],
			 keep[1], keep[2]);
	}
	execs_fini(&ex);
}

/* ---- DWCONV / DWCONV_DGRAD / DWCONV_WGRAD ---------------------------------- */

/*
 * n, h, w, c, kh, kw, stride h, w, top pad, left pad, oh, ow, mult,
 * flags: SAME and VALID, strides 1 and 2, TensorFlow's SAME with an odd
 * total padding (more below and right), odd sizes, depth multipliers 1
 * to 3, several forward tiles, WGRAD's channel blocks of 16 and 32
 * channels (kept in registers) and of others, several WGRAD steps
 * (windows). The interior runs of the forward and of DGRAD (every tap on
 * the image) and WGRAD's 3x3 walk beside the border pixels and the
 * loops of any shape: runs of several lengths, channels past the blocks
 * of 16 (20, 33, 8), fewer than a block (8), a 5x5 kernel, a forward
 * stride of 2, an uneven padding (2 above and below, none beside), a
 * depth multiplier of 2 with a stride of 1. WGRAD's groups of windows
 * (ops_dwconv.c: two to eight, from 256 windows up), a group's several
 * steps, with a depth multiplier and a 5x5 kernel, with 400 channels in
 * 13 blocks, and a short last group with a step of nothing to do (21 x
 * 25 x 2 windows in 4 groups of 263, 131 a step).
 */
static const uint32_t dw_shapes[][14] = {
	{ 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0 },
	{ 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 5, 5, 1, VTPU_CONV_BIAS },
	{ 2, 7, 6, 4, 3, 3, 2, 2, 0, 0, 3, 2, 2,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 1, 8, 8, 5, 3, 3, 2, 2, 0, 0, 4, 4, 1, 0 },
	{ 3, 9, 7, 3, 5, 3, 2, 1, 2, 1, 5, 7, 2, VTPU_CONV_BIAS },
	{ 2, 6, 5, 2, 2, 4, 1, 2, 1, 1, 6, 3, 3, VTPU_CONV_RELU },
	{ 4, 20, 20, 64, 3, 3, 1, 1, 1, 1, 20, 20, 1, VTPU_CONV_BIAS },
	{ 2, 6, 6, 600, 3, 3, 2, 2, 1, 1, 3, 3, 1, 0 },
	{ 40, 30, 30, 1, 3, 3, 1, 1, 1, 1, 30, 30, 1, 0 },
	{ 2, 9, 9, 32, 3, 3, 2, 2, 1, 1, 5, 5, 1, 0 },
	{ 3, 10, 11, 16, 5, 5, 1, 2, 2, 2, 10, 6, 1, VTPU_CONV_BIAS },
	{ 3, 11, 13, 20, 3, 3, 1, 1, 1, 1, 11, 13, 1,
	  VTPU_CONV_BIAS | VTPU_CONV_RELU },
	{ 2, 12, 12, 48, 5, 5, 1, 1, 2, 2, 12, 12, 1, 0 },
	{ 2, 14, 15, 33, 3, 3, 2, 2, 1, 1, 7, 8, 1, VTPU_CONV_RELU },
	{ 2, 10, 10, 64, 3, 3, 1, 1, 2, 0, 12, 8, 1, VTPU_CONV_BIAS },
	{ 1, 24, 24, 8, 3, 3, 1, 1, 1, 1, 24, 24, 1, 0 },
	{ 2, 9, 10, 24, 3, 3, 1, 1, 1, 1, 9, 10, 2, VTPU_CONV_BIAS },
	{ 3, 16, 16, 12, 5, 5, 1, 1, 2, 2, 16, 16, 2, 0 },
	{ 8, 12, 12, 400, 3, 3, 1, 1, 1, 1, 12, 12, 1, 0 },
	{ 2, 21, 25, 20, 5, 5, 1, 1, 2, 2, 21, 25, 1, 0 },
};

struct dw_geom {
	uint32_t n, h, w, c, kh, kw, sh, sw, ph, pw, oh, ow, mult, flags;
	size_t nx, nw, ny, cm;
};

static struct dw_geom dw_geom(const uint32_t *v)
{
	struct dw_geom g = { v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
			     v[8], v[9], v[10], v[11], v[12], v[13],
			     0, 0, 0, 0 };

	g.cm = (size_t)g.c * g.mult;
	g.nx = (size_t)g.n * g.h * g.w * g.c;
	g.nw = (size_t)g.kh * g.kw * g.cm;
	g.ny = (size_t)g.n * g.oh * g.ow * g.cm;
	return g;
}

/* x (float @xf, or double @xd) at (n, iy, ix, ci), 0 outside the image */
static double dw_x(const struct dw_geom *g, const float *xf, const double *xd,
		   size_t n, long iy, long ix, size_t ci)
{
	size_t i;

	if (iy < 0 || iy >= (long)g->h || ix < 0 || ix >= (long)g->w)
		return 0;
	i = ((n * g->h + iy) * g->w + ix) * g->c + ci;
	return xf ? xf[i] : xd[i];
}

/* y (+ bias, act per @flags) and |terms| of every output, in double */
static void dw_fwd_ref(const struct dw_geom *g, const double *x,
		       const float *xf, const float *w, const float *bias,
		       uint32_t flags, double *y, double *mag)
{
	size_t n, oy, ox, o, ky, kx, i = 0;

	for (n = 0; n < g->n; n++)
		for (oy = 0; oy < g->oh; oy++)
			for (ox = 0; ox < g->ow; ox++)
				for (o = 0; o < g->cm; o++, i++) {
					double s = 0, m = 0, t;

					for (ky = 0; ky < g->kh; ky++)
						for (kx = 0; kx < g->kw; kx++) {
							long iy = (long)(oy * g->sh + ky) - g->ph;
							long ix = (long)(ox * g->sw + kx) - g->pw;
							double xv = dw_x(g, xf, x, n, iy, ix, o / g->mult);

							t = xv * w[(ky * g->kw + kx) * g->cm + o];
							s += t;
							m += fabs(t);
						}
					if (flags & VTPU_CONV_BIAS) {
						s += bias[o];
						m += fabs(bias[o]);
					}
					if ((flags & VTPU_CONV_RELU) && s < 0)
						s = 0;
					y[i] = s;
					if (mag)
						mag[i] = m;
				}
}

/* dw and dx given dy (the adjoints of the forward), and their |terms| */
static void dw_grad_ref(const struct dw_geom *g, const float *x,
			const float *w, const float *dy, double *dw,
			double *dx, double *dwmag, double *dxmag)
{
	size_t n, oy, ox, o, ky, kx, r = 0;

	memset(dw, 0, g->nw * 8);
	memset(dx, 0, g->nx * 8);
	memset(dwmag, 0, g->nw * 8);
	memset(dxmag, 0, g->nx * 8);
	for (n = 0; n < g->n; n++)
		for (oy = 0; oy < g->oh; oy++)
			for (ox = 0; ox < g->ow; ox++, r++)
				for (ky = 0; ky < g->kh; ky++)
					for (kx = 0; kx < g->kw; kx++) {
						long iy = (long)(oy * g->sh + ky) - g->ph;
						long ix = (long)(ox * g->sw + kx) - g->pw;
						size_t xi, wi;

						if (iy < 0 || iy >= (long)g->h || ix < 0 || ix >= (long)g->w)
							continue;
						for (o = 0; o < g->cm; o++) {
							double d = dy[r * g->cm + o];

							xi = ((n * g->h + iy) * g->w + ix) * g->c + o / g->mult;
							wi = (ky * g->kw + kx) * g->cm + o;
							dw[wi] += x[xi] * d;
							dwmag[wi] += fabs(x[xi] * d);
							dx[xi] += w[wi] * d;
							dxmag[xi] += fabs(w[wi] * d);
						}
					}
}

/* sum(dy * forward(x, w)) in double: what the gradients differentiate */
static double dw_loss(const struct dw_geom *g, const double *x,
		      const float *w, const float *dy, double *y)
{
	double l = 0;
	size_t i;

	dw_fwd_ref(g, x, NULL, w, NULL, 0, y, NULL);
	for (i = 0; i < g->ny; i++)
		l += y[i] * dy[i];
	return l;
}

/*
 * The reference gradients against central differences of the double
 * forward at a few elements of x and w: the engine's gradients are checked
 * against the reference, the reference here against the forward.
 */
static long dw_fd_check(const struct dw_geom *g, const float *x, float *w,
			const float *dy, const double *rdx, const double *rdw)
{
	double *xd = malloc(g->nx * 8), *y = malloc(g->ny * 8), h = 1e-3;
	long bad = 0;
	size_t i, k;

	for (i = 0; i < g->nx; i++)
		xd[i] = x[i];
	for (k = 0; k < 12; k++) {
		double lp, lm, fd, save;
		float ws;

		i = urand() % g->nx;
		save = xd[i];
		xd[i] = save + h;
		lp = dw_loss(g, xd, w, dy, y);
		xd[i] = save - h;
		lm = dw_loss(g, xd, w, dy, y);
		xd[i] = save;
		fd = (lp - lm) / (2 * h);
		bad += !(fabs(fd - rdx[i]) <= 1e-6 * (1 + fabs(fd)));
		i = urand() % g->nw;
		ws = w[i];
		w[i] = ws + 0.125f;	/* exact in float: linear in w */
		lp = dw_loss(g, xd, w, dy, y);
		w[i] = ws - 0.125f;
		lm = dw_loss(g, xd, w, dy, y);
		w[i] = ws;
		fd = (lp - lm) / 0.25;
		bad += !(fabs(fd - rdw[i]) <= 1e-6 * (1 + fabs(fd)));
	}
	free(xd);
	free(y);
	return bad;
}

TEST(dwconv)
{
	struct execs ex;
	size_t s;

	execs_init_threads(&ex, 4);
	ASSERT_GT(ex.n, 0);
	for (s = 0; s < sizeof(dw_shapes) / sizeof(dw_shapes[0]); s++) {
		const struct dw_geom g = dw_geom(dw_shapes[s]);
		struct vtpu_bo xb = bo_new(g.nx * 4), wb = bo_new(g.nw * 4);
		struct vtpu_bo bb = bo_new(g.cm * 4), yb = bo_new(g.ny * 4);
		struct vtpu_bo dyb = bo_new(g.ny * 4), dwb = bo_new(g.nw * 4);
		struct vtpu_bo dxb = bo_new(g.nx * 4);
		float *x = xb.map, *w = wb.map, *bias = bb.map, *dy = dyb.map;
		double *ry = malloc(g.ny * 8), *rdw = malloc(g.nw * 8);
		double *rdx = malloc(g.nx * 8), *ymag = malloc(g.ny * 8);
		double *dwmag = malloc(g.nw * 8), *dxmag = malloc(g.nx * 8);
		void *keep[3] = { malloc(g.ny * 4), malloc(g.nw * 4),
				  malloc(g.nx * 4) };
		const void *out[3] = { yb.map, dwb.map, dxb.map };
		size_t sizes[3] = { g.ny * 4, g.nw * 4, g.nx * 4 };
		struct vtpu_dwconv_desc d = {
			.win = { .n = g.n, .h = g.h, .w = g.w, .c = g.c,
				 .kh = g.kh, .kw = g.kw, .stride_h = g.sh,
				 .stride_w = g.sw, .pad_h = g.ph,
				 .pad_w = g.pw },
			.oh = g.oh, .ow = g.ow, .mult = g.mult,
			.flags = g.flags,
		};
		struct vtpu_dwconv_desc dd;
		struct vtpu_cmdbuf cb;
		long bad = 0, diff = 0, far = 0, fdbad;
		size_t i;
		int e, k, pass;

		rng_seed(1300 + s);
		vtpu_cmdbuf_init(&cb);
		d.x = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
		d.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &wb), 0);
		d.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &bb), 0);
		d.y = VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv(&cb, &d));
		/* dw and dx written, then accumulated once more */
		dd = d;
		dd.flags = 0;
		dd.y = VTPU_REF(vtpu_cmdbuf_use(&cb, &dyb), 0);
		dd.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &dwb), 0);
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_wgrad(&cb, &dd));
		dd.flags = VTPU_CONV_ACCUMULATE;
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_wgrad(&cb, &dd));
		dd.w = d.w;
		dd.x = VTPU_REF(vtpu_cmdbuf_use(&cb, &dxb), 0);
		dd.flags = 0;
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_dgrad(&cb, &dd));
		dd.flags = VTPU_CONV_ACCUMULATE;
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_dgrad(&cb, &dd));

		/*
		 * Pass 0, integers: every sum exact, so equal to double; pass
		 * 1, floats: within 1e-5 of the terms' magnitudes, and the same
		 * bits on every executor (SIMD level, 1 to 4 threads).
		 */
		for (pass = 0; pass < 2; pass++) {
			for (i = 0; i < g.nx; i++)
				x[i] = pass ? frand() : irand(2);
			for (i = 0; i < g.nw; i++)
				w[i] = pass ? frand() : irand(2);
			for (i = 0; i < g.cm; i++)
				bias[i] = pass ? frand() : irand(3);
			for (i = 0; i < g.ny; i++)
				dy[i] = pass ? frand() : irand(3);
			dw_fwd_ref(&g, NULL, x, w, bias, g.flags, ry, ymag);
			dw_grad_ref(&g, x, w, dy, rdw, rdx, dwmag, dxmag);
			for (e = 0; e < ex.n; e++) {
				memset(yb.map, 0xff, g.ny * 4);	/* all written? */
				memset(dwb.map, 0xff, g.nw * 4);
				memset(dxb.map, 0xff, g.nx * 4);
				ASSERT_EQ(0, run(ex.cpu[e], &cb));
				for (k = 0; k < 3; k++)
					diff += same_bits(out[k], keep[k],
							  sizes[k], e);
				if (pass) {
					far += cv_far(yb.map, ry, ymag, g.ny, 1);
					far += cv_far(dwb.map, rdw, dwmag, g.nw, 2);
					far += cv_far(dxb.map, rdx, dxmag, g.nx, 2);
					continue;
				}
				for (i = 0; i < g.ny; i++)
					bad += ((float *)yb.map)[i] != ry[i];
				for (i = 0; i < g.nw; i++)
					bad += ((float *)dwb.map)[i] != 2 * rdw[i];
				for (i = 0; i < g.nx; i++)
					bad += ((float *)dxb.map)[i] != 2 * rdx[i];
			}
		}
		fdbad = dw_fd_check(&g, x, w, dy, rdx, rdw);
		TH_LOG("dwconv %ux%ux%ux%u k%ux%u s%ux%u p%ux%u -> %ux%ux%u "
		       "(x%u)%s%s: exact on integers, %ld far on floats, %ld "
		       "bad finite differences, %d executors",
		       g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw,
		       g.oh, g.ow, (unsigned)g.cm, g.mult,
		       g.flags & VTPU_CONV_BIAS ? ", bias" : "",
		       g.flags & VTPU_CONV_RELU ? ", relu" : "", far, fdbad,
		       ex.n);
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, diff);
		EXPECT_EQ(0, far);
		EXPECT_EQ(0, fdbad);
		vtpu_cmdbuf_fini(&cb);
		BOS_DESTROY(&xb, &wb, &bb, &yb, &dyb, &dwb, &dxb);
		for (k = 0; k < 3; k++)
			free(keep[k]);
		FREE_ALL(ry, rdw, rdx, ymag, dwmag, dxmag);
	}
	execs_fini(&ex);
}

TEST_HARNESS_MAIN
