// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_submit: jobs on /dev/vtpu0. GEMM against OpenBLAS, FILL and COPY,
 * fences and WAIT, ordering, every validation error the command stream can
 * provoke (with error_cmd/operand/reason checked), bad submit arguments, and
 * lifetime: closing the fd or a buffer while a job is in flight.
 *
 * Runs against the real module (in the VM); skips when /dev/vtpu0 is absent.
 * Floating point in the guest is ~100x slower than on the host, so shapes
 * stay small except in the "long job" used to keep a queue busy.
 */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_denormals.h"

#define DEV_PATH "/dev/vtpu0"

/*
 * The long job: GEMMs of LONG_N^3 in one stream, as many as this device
 * needs to be busy for LONG_MS (long_reps()), at least LONG_REPS: eight
 * take seconds in the emulated guest, and a few ms at native speed (UML,
 * or the host with vtpu-vm --host).
 */
#define LONG_N 256
#define LONG_REPS 8
#define LONG_MS 400
#define LONG_REPS_MAX 4096

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint32_t rng_state = 0x12345678;

static float frand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f;
}

static void fill_rand(float *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = frand();
}

FIXTURE(submit)
{
	struct vtpu_dev *dev;
	int fd;
	uint32_t q;
	long page;
};

FIXTURE_SETUP(submit)
{
	self->page = sysconf(_SC_PAGESIZE);
	self->fd = -1;
	self->dev = vtpu_open(DEV_PATH);
	if (!self->dev)
		return;
	self->fd = vtpu_fd(self->dev);
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &self->q));
}

FIXTURE_TEARDOWN(submit)
{
	if (self->dev)
		vtpu_close(self->dev);
}

/* SKIP in FIXTURE_SETUP still runs the body in 6.1's harness: check here. */
#define NEED_DEV()                                                             \
	do {                                                                   \
		if (!self->dev)                                                \
			SKIP(return, "%s: %s (is vtpu.ko loaded?)", DEV_PATH,  \
			     strerror(errno));                                 \
	} while (0)

static void bo_new(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		   uint64_t size, struct vtpu_bo *bo)
{
	int ret = vtpu_bo_create(dev, size, bo);

	ASSERT_EQ(0, ret) TH_LOG("vtpu_bo_create(%llu): %s",
				 (unsigned long long)size, strerror(-ret));
}

/* Submit @cb on @q and wait for it; asserts it ends DONE. */
static void run_job(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		    uint32_t q, struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job = { .queue = q, .in_fence = -1 };
	char msg[256];
	uint32_t status = 99;
	int32_t jerr = 0;
	int ret;

	ret = vtpu_submit(dev, cb, &job);
	ASSERT_EQ(0, ret) TH_LOG("submit: %s; %s", strerror(-ret),
				 vtpu_job_strerror(cb, &job, msg, sizeof(msg)));
	ret = vtpu_wait(dev, q, job.seqno, -1, &status, &jerr);
	ASSERT_EQ(0, ret) TH_LOG("wait: %s", strerror(-ret));
	ASSERT_EQ(VTPU_JOB_DONE, status) TH_LOG("job ended %s, error %d",
						vtpu_status_name(status), jerr);
	EXPECT_EQ(0, jerr);
}

/*
 * Append @reps of the long job's GEMMs: C = A * B, LONG_N^3. The
 * data does not matter (zeros cost the same), only the time it takes.
 */
struct long_job {
	struct vtpu_bo a, b, c;
	int reps;	/* GEMMs that keep the device busy for LONG_MS */
};

static void long_job_append(struct vtpu_cmdbuf *cb, struct long_job *lj,
			    int reps)
{
	struct vtpu_gemm_desc g = {
		.m = LONG_N, .n = LONG_N, .k = LONG_N, .alpha = 1.0f,
	};
	int i;

	g.a_buf = vtpu_cmdbuf_use(cb, &lj->a);
	g.b_buf = vtpu_cmdbuf_use(cb, &lj->b);
	g.c_buf = vtpu_cmdbuf_use(cb, &lj->c);
	for (i = 0; i < reps; i++)
		vtpu_cmdbuf_gemm(cb, &g);
}

/* Times LONG_REPS GEMMs on their own queue and scales them to LONG_MS. */
static int long_reps(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		     struct long_job *lj)
{
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { 0 };
	uint32_t q, status;
	double t, reps;

	ASSERT_EQ(0, vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q));
	vtpu_cmdbuf_init(&cb);
	long_job_append(&cb, lj, LONG_REPS);
	job.queue = q;
	t = now_ms();
	ASSERT_EQ(0, vtpu_submit(dev, &cb, &job));
	ASSERT_EQ(0, vtpu_wait(dev, q, job.seqno, -1, &status, NULL));
	t = now_ms() - t;
	vtpu_cmdbuf_fini(&cb);
	vtpu_queue_destroy(dev, q);
	reps = LONG_REPS * (LONG_MS / (t > 0.01 ? t : 0.01));
	return reps < LONG_REPS ? LONG_REPS :
	       reps > LONG_REPS_MAX ? LONG_REPS_MAX : (int)reps;
}

static void long_job_init(struct __test_metadata *_metadata,
			  struct vtpu_dev *dev, struct long_job *lj)
{
	const uint64_t sz = (uint64_t)LONG_N * LONG_N * 4;

	bo_new(_metadata, dev, sz, &lj->a);
	bo_new(_metadata, dev, sz, &lj->b);
	bo_new(_metadata, dev, sz, &lj->c);
	lj->reps = long_reps(_metadata, dev, lj);
}

static void long_job_fini(struct vtpu_dev *dev, struct long_job *lj)
{
	vtpu_bo_destroy(dev, &lj->a);
	vtpu_bo_destroy(dev, &lj->b);
	vtpu_bo_destroy(dev, &lj->c);
}

/* ---- GEMM against OpenBLAS ------------------------------------------------ */

struct gemm_case {
	uint32_t m, n, k, flags;
	float alpha, beta;
	uint32_t pad_a, pad_b, pad_c;	/* ld = row length + pad */
	int one_buffer;			/* A, B, C, bias in one BO */
};

/* Case tables: shape, flags, alpha, beta [, ld pads [, one buffer]]. */
#define GEMM(m_, n_, k_, f_, al_, be_, ...)                                    \
	{ .m = m_, .n = n_, .k = k_, .flags = f_, .alpha = al_, .beta = be_,   \
	  __VA_ARGS__ }
#define PADS(a_, b_, c_) .pad_a = a_, .pad_b = b_, .pad_c = c_

static void check_gemm(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		       uint32_t q, const struct gemm_case *gc)
{
	const int ta = !!(gc->flags & VTPU_GEMM_TRANS_A);
	const int tb = !!(gc->flags & VTPU_GEMM_TRANS_B);
	const uint32_t m = gc->m, n = gc->n, k = gc->k;
	const uint32_t ar = ta ? k : m, ac = ta ? m : k;
	const uint32_t br = tb ? n : k, bc = tb ? k : n;
	const uint32_t lda = ac + gc->pad_a, ldb = bc + gc->pad_b;
	const uint32_t ldc = n + gc->pad_c;
	const size_t asz = (size_t)ar * lda * 4, bsz = (size_t)br * ldb * 4;
	const size_t csz = (size_t)m * ldc * 4, biassz = (size_t)n * 4;
	struct vtpu_bo bos[4], *bp[4];
	struct vtpu_gemm_desc g = { 0 };
	struct vtpu_cmdbuf cb;
	float *A, *B, *C, *bias, *C0, *ref;
	double maxdiff = 0, tol = 1e-5 * k + 1e-6;
	uint32_t i, j;
	int nbad = 0, nbos;
	size_t off[4] = { 0, 0, 0, 0 };

	/* Byte offsets 64-aligned when everything shares one buffer. */
	if (gc->one_buffer) {
		off[1] = (asz + 63) & ~(size_t)63;
		off[2] = off[1] + ((bsz + 63) & ~(size_t)63);
		off[3] = off[2] + ((csz + 63) & ~(size_t)63);
		nbos = 1;
		bo_new(_metadata, dev, off[3] + biassz, &bos[0]);
		bp[0] = bp[1] = bp[2] = bp[3] = &bos[0];
	} else {
		nbos = 4;
		bo_new(_metadata, dev, asz, &bos[0]);
		bo_new(_metadata, dev, bsz, &bos[1]);
		bo_new(_metadata, dev, csz, &bos[2]);
		bo_new(_metadata, dev, biassz, &bos[3]);
		for (i = 0; i < 4; i++)
			bp[i] = &bos[i];
	}
	A = (float *)((char *)bp[0]->map + off[0]);
	B = (float *)((char *)bp[1]->map + off[1]);
	C = (float *)((char *)bp[2]->map + off[2]);
	bias = (float *)((char *)bp[3]->map + off[3]);
	fill_rand(A, asz / 4);
	fill_rand(B, bsz / 4);
	fill_rand(bias, n);
	C0 = malloc(csz);
	ref = malloc(csz);
	ASSERT_NE(NULL, C0);
	ASSERT_NE(NULL, ref);
	fill_rand(C0, csz / 4);
	if (gc->beta == 0.0f)	/* C must not be read: NaNs vanish */
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				C0[(size_t)i * ldc + j] = NAN;
	memcpy(C, C0, csz);

	/* The reference, on the same inputs. */
	memcpy(ref, C0, csz);
	if (gc->beta == 0.0f)
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				ref[(size_t)i * ldc + j] = 0;
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, m, n, k, gc->alpha, A, lda,
		    B, ldb, gc->beta, ref, ldc);
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			float *r = &ref[(size_t)i * ldc + j];

			if (gc->flags & VTPU_GEMM_BIAS)
				*r += bias[j];
			if ((gc->flags & VTPU_GEMM_RELU) && *r < 0)
				*r = 0;
		}
	}

	vtpu_cmdbuf_init(&cb);
	g.m = m;
	g.n = n;
	g.k = k;
	g.flags = gc->flags;
	/* ld 0 means packed: exercise the library's default when unpadded. */
	g.lda = gc->pad_a ? lda : 0;
	g.ldb = gc->pad_b ? ldb : 0;
	g.ldc = gc->pad_c ? ldc : 0;
	g.dtype = VTPU_DTYPE_F32;
	g.alpha = gc->alpha;
	g.beta = gc->beta;
	g.a_buf = vtpu_cmdbuf_use(&cb, bp[0]);
	g.b_buf = vtpu_cmdbuf_use(&cb, bp[1]);
	g.c_buf = vtpu_cmdbuf_use(&cb, bp[2]);
	if (gc->flags & VTPU_GEMM_BIAS)
		g.bias_buf = vtpu_cmdbuf_use(&cb, bp[3]);
	g.a_off = off[0];
	g.b_off = off[1];
	g.c_off = off[2];
	g.bias_off = (gc->flags & VTPU_GEMM_BIAS) ? off[3] : 0;
	ASSERT_EQ(0, vtpu_cmdbuf_gemm(&cb, &g));
	EXPECT_EQ((uint32_t)(gc->one_buffer ? 1 : (gc->flags & VTPU_GEMM_BIAS) ? 4 : 3),
		  cb.nhandles);
	run_job(_metadata, dev, q, &cb);

	for (i = 0; i < m; i++) {
		for (j = 0; j < ldc; j++) {
			size_t x = (size_t)i * ldc + j;
			double d;

			if (j >= n) {	/* padding of C is left alone */
				if (memcmp(&C[x], &C0[x], 4))
					nbad++;
				continue;
			}
			d = fabs((double)C[x] - ref[x]);
			if (!(d <= tol * (1 + fabs(ref[x])))) {
				if (nbad < 5)
					TH_LOG("C[%u][%u] = %g, expected %g", i,
					       j, C[x], ref[x]);
				nbad++;
				continue;
			}
			if (d > maxdiff)
				maxdiff = d;
		}
	}
	EXPECT_EQ(0, nbad);
	TH_LOG("GEMM m=%u n=%u k=%u flags=0x%x alpha=%g beta=%g ld=%u/%u/%u%s: %d bad, maxdiff %.3g vs OpenBLAS",
	       m, n, k, gc->flags, gc->alpha, gc->beta, lda, ldb, ldc,
	       gc->one_buffer ? " (one buffer)" : "", nbad, maxdiff);

	vtpu_cmdbuf_fini(&cb);
	for (i = 0; i < (uint32_t)nbos; i++)
		vtpu_bo_destroy(dev, &bos[i]);
	free(C0);
	free(ref);
}

TEST_F(submit, gemm_small)
{
	static const struct gemm_case cases[] = {
		GEMM(1, 1, 1, 0, 1.0f, 0.0f),
		GEMM(16, 16, 16, 0, 1.0f, 0.0f),
		GEMM(17, 33, 9, 0, 1.0f, 0.0f),
		GEMM(5, 1, 7, 0, 1.0f, 0.0f),
		GEMM(1, 31, 3, 0, 1.0f, 0.0f),
		GEMM(3, 5, 1, 0, 1.0f, 0.0f),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

TEST_F(submit, gemm_64)
{
	const struct gemm_case gc = GEMM(64, 64, 64, 0, 1.0f, 0.0f);

	NEED_DEV();
	check_gemm(_metadata, self->dev, self->q, &gc);
}

TEST_F(submit, gemm_transposes)
{
	static const struct gemm_case cases[] = {
		GEMM(13, 7, 29, VTPU_GEMM_TRANS_A, 1.0f, 0.0f),
		GEMM(13, 7, 29, VTPU_GEMM_TRANS_B, 1.0f, 0.0f),
		GEMM(13, 7, 29, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B, 1.0f, 0.0f),
		GEMM(32, 48, 40, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B, 1.0f, 0.0f),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

/*
 * A small C and a long K: the engine splits K into parts, the later ones
 * summed in the op's workspace and added to C by a second phase (the
 * device's workers run the phases as they run BATCHNORM's).
 */
TEST_F(submit, gemm_long_k)
{
	static const struct gemm_case cases[] = {
		GEMM(16, 32, 8448, VTPU_GEMM_TRANS_A, 1.0f, 0.5f),
		GEMM(8, 40, 20000, 0, -1.0f, 0.0f),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

TEST_F(submit, gemm_alpha_beta)
{
	static const struct gemm_case cases[] = {
		GEMM(19, 23, 11, 0, 0.5f, 2.0f),
		GEMM(19, 23, 11, 0, -1.25f, -0.5f),
		GEMM(8, 8, 8, VTPU_GEMM_TRANS_B, 0.0f, 1.0f),
		GEMM(24, 10, 33, VTPU_GEMM_TRANS_A, 2.0f, 1.0f),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

TEST_F(submit, gemm_bias_relu)
{
	static const struct gemm_case cases[] = {
		GEMM(9, 21, 13, VTPU_GEMM_BIAS, 1.0f, 0.0f),
		GEMM(9, 21, 13, VTPU_GEMM_RELU, 1.0f, 0.0f),
		GEMM(9, 21, 13, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1.0f, 0.0f),
		GEMM(33, 17, 20, VTPU_GEMM_BIAS | VTPU_GEMM_RELU | VTPU_GEMM_TRANS_B, 0.75f, 0.5f),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

TEST_F(submit, gemm_strides_offsets)
{
	static const struct gemm_case cases[] = {
		GEMM(12, 20, 14, 0, 1.0f, 0.0f, PADS(3, 5, 2)),
		GEMM(12, 20, 14, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B, 1.0f, 1.0f, PADS(1, 7, 4)),
		GEMM(12, 20, 14, VTPU_GEMM_BIAS, 1.0f, 0.0f, PADS(0, 0, 0), .one_buffer = 1),
		GEMM(7, 9, 11, VTPU_GEMM_TRANS_A | VTPU_GEMM_BIAS, 1.0f, 1.0f, PADS(2, 2, 2), .one_buffer = 1),
		/*
		 * C fills its buffer to the last byte, and its last columns
		 * are an edge tile read back for beta: QEMU 7.2's TCG reads
		 * 16 bytes for a scalar FMA's memory operand, so folding that
		 * read into vfmadd231ss faulted on the page after the buffer
		 * and panicked the guest (vtpu_ld_reg() keeps it a load).
		 */
		GEMM(128, 8, 5, 0, 1.0f, 1.0f, PADS(0, 0, 0)),
		GEMM(256, 20, 3, 0, 0.5f, 1.0f, PADS(0, 0, 0)),
	};
	size_t i;

	NEED_DEV();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gemm(_metadata, self->dev, self->q, &cases[i]);
}

/*
 * CONV_POOL whose weights fill their buffer to the last byte, with one
 * output channel (the kernels' scalar path, its FMAs reading w) and 1024
 * taps: the emulator's 16-byte read of the last weight must not happen
 * (see gemm_strides_offsets). Integer data: the result is exact.
 */
TEST_F(submit, conv_pool_weights_at_buffer_end)
{
	const uint32_t h = 9, w = 9, c = 16, kh = 8, kw = 8, oc = 1;
	const uint32_t kdim = kh * kw * c, oh = h - kh + 1, ow = w - kw + 1;
	struct vtpu_bo xb, wb, bb, yb, ib;
	struct vtpu_conv_pool_desc d = {
		.win = { .n = 1, .h = h, .w = w, .c = c, .kh = kh, .kw = kw,
			 .stride_h = 1, .stride_w = 1 },
		.oc = oc, .pool_h = oh, .pool_w = ow, .pool_stride_h = 1,
		.pool_stride_w = 1,
	};
	struct vtpu_cmdbuf cb;
	float *x, *wt, *bias, *y;
	uint8_t *route;
	uint32_t o, q, t, bad = 0;

	NEED_DEV();
	ASSERT_EQ(4096u, kdim * oc * 4);
	bo_new(_metadata, self->dev, h * w * c * 4, &xb);
	bo_new(_metadata, self->dev, kdim * oc * 4, &wb);
	bo_new(_metadata, self->dev, oc * 4, &bb);
	bo_new(_metadata, self->dev, oc * 4, &yb);
	bo_new(_metadata, self->dev, oc, &ib);
	x = xb.map;
	wt = wb.map;
	bias = bb.map;
	for (t = 0; t < h * w * c; t++)
		x[t] = (float)((int)(t * 7 % 5) - 2);
	for (t = 0; t < kdim * oc; t++)
		wt[t] = (float)((int)(t * 3 % 5) - 2);
	for (o = 0; o < oc; o++)
		bias[o] = (float)o;
	vtpu_cmdbuf_init(&cb);
	d.x = VTPU_REF(vtpu_cmdbuf_use(&cb, &xb), 0);
	d.w = VTPU_REF(vtpu_cmdbuf_use(&cb, &wb), 0);
	d.bias = VTPU_REF(vtpu_cmdbuf_use(&cb, &bb), 0);
	d.y = VTPU_REF(vtpu_cmdbuf_use(&cb, &yb), 0);
	d.index = VTPU_REF(vtpu_cmdbuf_use(&cb, &ib), 0);
	ASSERT_EQ(0, vtpu_cmdbuf_conv_pool(&cb, &d));
	run_job(_metadata, self->dev, self->q, &cb);
	y = yb.map;
	route = ib.map;
	/* the first maximum over the 2 x 2 conv outputs, and where it was */
	for (o = 0; o < oc; o++) {
		double best = 0;
		uint32_t at = 0;

		for (q = 0; q < oh * ow; q++) {
			uint32_t oy = q / ow, ox = q % ow, ky, kx, ci;
			double v = bias[o];

			for (ky = 0; ky < kh; ky++)
				for (kx = 0; kx < kw; kx++)
					for (ci = 0; ci < c; ci++)
						v += (double)x[((oy + ky) * w + ox + kx) * c + ci] *
						     wt[((ky * kw + kx) * c + ci) * oc + o];
			if (!q || v > best) {
				best = v;
				at = q;
			}
		}
		bad += y[o] != (float)best || route[o] != at;
	}
	EXPECT_EQ(0u, bad);
	TH_LOG("CONV_POOL, 1 channel, weights up to their buffer's last byte: %u of %u wrong",
	       bad, oc);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &xb);
	vtpu_bo_destroy(self->dev, &wb);
	vtpu_bo_destroy(self->dev, &bb);
	vtpu_bo_destroy(self->dev, &yb);
	vtpu_bo_destroy(self->dev, &ib);
}

static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);	/* exact for the values used below */
}

TEST_F(submit, gemm_bf16)
{
	const uint32_t m = 8, n = 8, k = 16;
	struct vtpu_bo a, b, c;
	struct vtpu_gemm_desc g = { 0 };
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q };
	uint16_t *A, *B;
	float Af[8 * 16], Bf[16 * 8], *C, ref;
	char msg[256];
	uint32_t i, j, l, status;
	int nbad = 0, ret;

	NEED_DEV();
	bo_new(_metadata, self->dev, m * k * 2, &a);
	bo_new(_metadata, self->dev, k * n * 2, &b);
	bo_new(_metadata, self->dev, m * n * 4, &c);
	A = a.map;
	B = b.map;
	C = c.map;
	/* Multiples of 1/8 in [-2, 2]: exact in bf16 and in the products. */
	for (i = 0; i < m * k; i++) {
		Af[i] = (float)((int)(i * 7 % 33) - 16) / 8;
		A[i] = to_bf16(Af[i]);
	}
	for (i = 0; i < k * n; i++) {
		Bf[i] = (float)((int)(i * 5 % 29) - 14) / 8;
		B[i] = to_bf16(Bf[i]);
	}
	vtpu_cmdbuf_init(&cb);
	g.m = m;
	g.n = n;
	g.k = k;
	g.dtype = VTPU_DTYPE_BF16;
	g.alpha = 1.0f;
	g.a_buf = vtpu_cmdbuf_use(&cb, &a);
	g.b_buf = vtpu_cmdbuf_use(&cb, &b);
	g.c_buf = vtpu_cmdbuf_use(&cb, &c);
	ASSERT_EQ(0, vtpu_cmdbuf_gemm(&cb, &g));
	ret = vtpu_submit(self->dev, &cb, &job);
	ASSERT_EQ(0, ret) TH_LOG("bf16 GEMM (documented in the uapi) rejected: %s",
				 vtpu_job_strerror(&cb, &job, msg, sizeof(msg)));
	ASSERT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, -1, &status,
			       NULL));
	ASSERT_EQ(VTPU_JOB_DONE, status);
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			ref = 0;
			for (l = 0; l < k; l++)
				ref += Af[i * k + l] * Bf[l * n + j];
			if (C[i * n + j] != ref)
				nbad++;
		}
	}
	EXPECT_EQ(0, nbad);
	TH_LOG("bf16 GEMM %ux%ux%u with exactly representable inputs: %d wrong",
	       m, n, k, nbad);
	vtpu_cmdbuf_fini(&cb);
}

TEST_F(submit, gemm_chain_in_one_stream)
{
	/* D = (A * B) * E: the second GEMM reads the first one's output. */
	const uint32_t n = 24;
	struct vtpu_bo a, b, c, d, e;
	struct vtpu_gemm_desc g1 = { .m = n, .n = n, .k = n, .alpha = 1.0f };
	struct vtpu_gemm_desc g2 = g1;
	struct vtpu_cmdbuf cb;
	float *ab, *ref, maxdiff = 0;
	uint32_t i;

	NEED_DEV();
	bo_new(_metadata, self->dev, n * n * 4, &a);
	bo_new(_metadata, self->dev, n * n * 4, &b);
	bo_new(_metadata, self->dev, n * n * 4, &c);
	bo_new(_metadata, self->dev, n * n * 4, &d);
	bo_new(_metadata, self->dev, n * n * 4, &e);
	fill_rand(a.map, n * n);
	fill_rand(b.map, n * n);
	fill_rand(e.map, n * n);
	ab = calloc(n * n, 4);
	ref = calloc(n * n, 4);
	ASSERT_NE(NULL, ab);
	ASSERT_NE(NULL, ref);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
		    a.map, n, b.map, n, 0.0f, ab, n);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
		    ab, n, e.map, n, 0.0f, ref, n);

	vtpu_cmdbuf_init(&cb);
	g1.a_buf = vtpu_cmdbuf_use(&cb, &a);
	g1.b_buf = vtpu_cmdbuf_use(&cb, &b);
	g1.c_buf = vtpu_cmdbuf_use(&cb, &c);
	g2.a_buf = vtpu_cmdbuf_use(&cb, &c);
	g2.b_buf = vtpu_cmdbuf_use(&cb, &e);
	g2.c_buf = vtpu_cmdbuf_use(&cb, &d);
	EXPECT_EQ(5, cb.nhandles) TH_LOG("vtpu_cmdbuf_use must dedup");
	vtpu_cmdbuf_fill(&cb, g1.c_buf, 0, n * n, 99.0f);
	vtpu_cmdbuf_gemm(&cb, &g1);
	vtpu_cmdbuf_gemm(&cb, &g2);
	run_job(_metadata, self->dev, self->q, &cb);
	for (i = 0; i < n * n; i++) {
		float diff = fabsf(((float *)d.map)[i] - ref[i]);

		if (!(diff <= maxdiff))
			maxdiff = isnan(diff) ? INFINITY : diff;
	}
	EXPECT_GE(1e-3f, maxdiff);
	TH_LOG("FILL, GEMM, GEMM in one stream run in order: maxdiff %g",
	       maxdiff);
	free(ab);
	free(ref);
	vtpu_cmdbuf_fini(&cb);
}

/* ---- FILL and COPY ---------------------------------------------------------- */

TEST_F(submit, fill_copy)
{
	struct vtpu_bo x, y;
	struct vtpu_cmdbuf cb;
	const uint32_t count = 1000;
	uint8_t *yb, *xb;
	float *xf;
	uint32_t i;
	int bad = 0;

	NEED_DEV();
	bo_new(_metadata, self->dev, 3 * 4096, &x);
	bo_new(_metadata, self->dev, 3 * 4096, &y);
	vtpu_cmdbuf_init(&cb);
	/* x[16..1016) = 3.25; y[3..3+4001) = x-bytes [60..4061) */
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 64, count, 3.25f);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &y), 3,
			 vtpu_cmdbuf_use(&cb, &x), 60, 4 * count + 1);
	run_job(_metadata, self->dev, self->q, &cb);

	xf = x.map;
	xb = x.map;
	yb = y.map;
	for (i = 0; i < 16; i++)
		bad += xf[i] != 0.0f;
	for (i = 16; i < 16 + count; i++)
		bad += xf[i] != 3.25f;
	for (i = (16 + count) * 4; i < x.size; i++)
		bad += xb[i] != 0;
	EXPECT_EQ(0, bad) TH_LOG("FILL wrote outside or wrong values");
	bad = 0;
	for (i = 0; i < y.size; i++) {
		uint8_t want = (i >= 3 && i < 3 + 4 * count + 1) ?
				       xb[60 + i - 3] : 0;
		bad += yb[i] != want;
	}
	EXPECT_EQ(0, bad) TH_LOG("COPY wrote outside or wrong bytes");
	TH_LOG("FILL of %u floats at offset 64 and an unaligned COPY of %u bytes land exactly",
	       count, 4 * count + 1);
	vtpu_cmdbuf_fini(&cb);
}

/* ---- denormals ------------------------------------------------------------- */

/*
 * The device flushes denormals, as the cpu backend does
 * (test_ops_elementwise): a denormal operand reads as 0 and a denormal
 * result is 0, in an element-wise op and in a GEMM. The workers set the
 * mode inside each kernel_fpu_begin()/end() section.
 */
TEST_F(submit, denormals_flushed)
{
	const uint32_t n = 3000;
	struct vtpu_bo xb, yb, zb, ab, bb, cbo;
	const struct denorm_bufs d = { &xb, &yb, &zb, &ab, &bb, &cbo, n };
	struct vtpu_cmdbuf cb;
	long bad;

	NEED_DEV();
	bo_new(_metadata, self->dev, n * 4, &xb);
	bo_new(_metadata, self->dev, n * 4, &yb);
	bo_new(_metadata, self->dev, n * 4, &zb);
	bo_new(_metadata, self->dev, DENORM_GM * DENORM_GK * 4, &ab);
	bo_new(_metadata, self->dev, DENORM_GK * DENORM_GN * 4, &bb);
	bo_new(_metadata, self->dev, DENORM_GM * DENORM_GN * 4, &cbo);
	vtpu_cmdbuf_init(&cb);
	ASSERT_EQ(0, denorm_setup(&cb, &d));
	run_job(_metadata, self->dev, self->q, &cb);
	bad = denorm_bad(&d);
	EXPECT_EQ(0, bad) TH_LOG("%ld results kept a denormal", bad);
	TH_LOG("denormal operands and results flushed to 0 (MUL, GEMM)");
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &xb);
	vtpu_bo_destroy(self->dev, &yb);
	vtpu_bo_destroy(self->dev, &zb);
	vtpu_bo_destroy(self->dev, &ab);
	vtpu_bo_destroy(self->dev, &bb);
	vtpu_bo_destroy(self->dev, &cbo);
}

/* ---- fences and WAIT --------------------------------------------------------- */

static void one_fill(struct vtpu_cmdbuf *cb, struct vtpu_bo *bo, float v)
{
	vtpu_cmdbuf_fill(cb, vtpu_cmdbuf_use(cb, bo), 0, 16, v);
}

TEST_F(submit, out_fence)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q, .want_out_fence = 1 };
	struct sync_file_info info = { 0 };
	struct pollfd pfd;

	NEED_DEV();
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	one_fill(&cb, &x, 7.0f);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
	ASSERT_LE(0, job.out_fence);
	EXPECT_EQ(0, vtpu_fence_wait(job.out_fence, 20000));
	pfd.fd = job.out_fence;
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(0, xioctl(job.out_fence, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(1, info.status);
	EXPECT_EQ(7.0f, ((float *)x.map)[15]);
	TH_LOG("out-fence %d (\"%s\") signals, polls readable, status %d; vtpu_fence_wait returns 0",
	       job.out_fence, info.name, info.status);
	close(job.out_fence);

	/* Without the flag there is no fence. */
	job.want_out_fence = 0;
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
	EXPECT_EQ(-1, job.out_fence);
	vtpu_cmdbuf_fini(&cb);
}

TEST_F(submit, wait_done)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_job j1 = { .queue = self->q }, j2 = { .queue = self->q };
	uint32_t status = 99;
	int32_t jerr = 99;

	NEED_DEV();
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	one_fill(&cb, &x, 1.0f);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j1));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j2));
	EXPECT_LT(0, j1.seqno);
	EXPECT_EQ(j1.seqno + 1, j2.seqno);
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, j2.seqno, -1, &status,
			       &jerr));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	EXPECT_EQ(0, jerr);
	status = 99;
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, j1.seqno, 0, &status,
			       &jerr));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	TH_LOG("seqnos %llu, %llu are consecutive; WAIT reports %s, and polling a done job too",
	       (unsigned long long)j1.seqno, (unsigned long long)j2.seqno,
	       vtpu_status_name(status));
	vtpu_cmdbuf_fini(&cb);
}

TEST_F(submit, wait_bad)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q };
	struct vtpu_wait w = { 0 };
	uint32_t status, q2;

	NEED_DEV();
	/* A queue with no jobs has no valid seqno. */
	w.queue_id = self->q;
	w.seqno = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_WAIT, &w));

	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	one_fill(&cb, &x, 1.0f);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
	EXPECT_EQ(-EINVAL, vtpu_wait(self->dev, self->q, job.seqno + 1, -1,
				     &status, NULL));
	EXPECT_EQ(-EINVAL, vtpu_wait(self->dev, self->q, UINT64_MAX, 0,
				     &status, NULL));
	EXPECT_EQ(-EINVAL, vtpu_wait(self->dev, self->q, 0, -1, &status,
				     NULL));
	EXPECT_EQ(-ENOENT, vtpu_wait(self->dev, self->q + 1000, job.seqno, -1,
				     &status, NULL));
	/* Seqnos are per queue. */
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_LOW,
				       &q2));
	EXPECT_EQ(-EINVAL, vtpu_wait(self->dev, q2, job.seqno, 0, &status,
				     NULL));
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, -1, &status,
			       NULL));
	TH_LOG("WAIT past the last seqno, on seqno 0, on another queue's seqno give EINVAL; unknown queue ENOENT");
	vtpu_cmdbuf_fini(&cb);
}

TEST_F_TIMEOUT(submit, wait_timeout, 120)
{
	struct long_job lj;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q, .want_out_fence = 1 };
	uint32_t status = 99;
	double t0, t1, t2;
	int ret;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	vtpu_cmdbuf_init(&cb);
	long_job_append(&cb, &lj, lj.reps);
	t0 = now_ms();
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));

	ret = vtpu_wait(self->dev, self->q, job.seqno, 0, &status, NULL);
	EXPECT_EQ(-ETIME, ret) TH_LOG("the long job was already done?");
	EXPECT_EQ(VTPU_JOB_PENDING, status);
	t1 = now_ms();
	ret = vtpu_wait(self->dev, self->q, job.seqno, 1000000, &status, NULL);
	t1 = now_ms() - t1;
	EXPECT_EQ(-ETIME, ret);
	EXPECT_LE(0.9, t1) TH_LOG("a 1 ms wait returned after %.3f ms", t1);
	EXPECT_EQ(-ETIME, vtpu_fence_wait(job.out_fence, 0));

	ret = vtpu_wait(self->dev, self->q, job.seqno, -1, &status, NULL);
	t2 = now_ms() - t0;
	EXPECT_EQ(0, ret);
	EXPECT_EQ(VTPU_JOB_DONE, status);
	status = 99;
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, 0, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	EXPECT_EQ(0, vtpu_fence_wait(job.out_fence, 0));
	TH_LOG("long job (%d x %d^3 GEMM, %.0f ms): polling gives ETIME/pending, a 1 ms wait took %.2f ms, then done",
	       lj.reps, LONG_N, t2, t1);
	close(job.out_fence);
	vtpu_cmdbuf_fini(&cb);
	long_job_fini(self->dev, &lj);
}

TEST_F_TIMEOUT(submit, in_fence, 120)
{
	struct long_job lj;
	struct vtpu_bo x, y;
	struct vtpu_cmdbuf cb1, cb2;
	struct vtpu_job j1 = { .queue = self->q, .want_out_fence = 1 };
	struct vtpu_job j2 = { .want_out_fence = 1 };
	uint32_t q2, status, i;
	int bad = 0, ret;
	int pipefd[2];

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_HIGH,
				       &q2));
	long_job_init(_metadata, self->dev, &lj);
	bo_new(_metadata, self->dev, 4096, &x);
	bo_new(_metadata, self->dev, 4096, &y);

	/* Job 1: long, then x = 1. Job 2, on another queue: y = x. */
	vtpu_cmdbuf_init(&cb1);
	long_job_append(&cb1, &lj, lj.reps / 2);
	vtpu_cmdbuf_fill(&cb1, vtpu_cmdbuf_use(&cb1, &x), 0, 1024, 1.0f);
	vtpu_cmdbuf_init(&cb2);
	vtpu_cmdbuf_copy(&cb2, vtpu_cmdbuf_use(&cb2, &y), 0,
			 vtpu_cmdbuf_use(&cb2, &x), 0, 4096);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb1, &j1));
	j2.queue = q2;
	j2.in_fence = j1.out_fence;
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb2, &j2));
	ret = vtpu_fence_wait(j2.out_fence, 60000);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, j1.seqno, 0, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status)
		TH_LOG("job 2 ended before the job it waited for");
	for (i = 0; i < 1024; i++)
		bad += ((float *)y.map)[i] != 1.0f;
	EXPECT_EQ(0, bad) TH_LOG("job 2 ran before job 1's fence signalled");

	/* An already signalled in-fence does not hold a job back. */
	j2.want_out_fence = 0;
	EXPECT_EQ(0, vtpu_submit(self->dev, &cb2, &j2));
	EXPECT_EQ(0, vtpu_wait(self->dev, q2, j2.seqno, -1, &status, NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);

	/* Something that is not a sync_file is refused. */
	ASSERT_EQ(0, pipe(pipefd));
	j2.in_fence = pipefd[0];
	ret = vtpu_submit(self->dev, &cb2, &j2);
	EXPECT_EQ(-EINVAL, ret);
	close(pipefd[0]);
	close(pipefd[1]);
	TH_LOG("a job gated on another queue's out-fence runs after it; a pipe as in-fence gives %d",
	       ret);
	close(j1.out_fence);
	vtpu_cmdbuf_fini(&cb1);
	vtpu_cmdbuf_fini(&cb2);
	long_job_fini(self->dev, &lj);
}

TEST_F_TIMEOUT(submit, queue_order, 120)
{
	struct long_job lj;
	struct vtpu_bo x, y;
	struct vtpu_cmdbuf cb1, cb2, cb3;
	struct vtpu_job j1 = { .queue = self->q }, j2 = { .queue = self->q };
	struct vtpu_job j3 = { .queue = self->q };
	uint32_t status, i;
	int bad = 0;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	bo_new(_metadata, self->dev, 4096, &x);
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb1);
	vtpu_cmdbuf_init(&cb2);
	vtpu_cmdbuf_init(&cb3);
	long_job_append(&cb1, &lj, lj.reps / 2);
	vtpu_cmdbuf_fill(&cb1, vtpu_cmdbuf_use(&cb1, &x), 0, 1024, 1.0f);
	vtpu_cmdbuf_copy(&cb2, vtpu_cmdbuf_use(&cb2, &y), 0,
			 vtpu_cmdbuf_use(&cb2, &x), 0, 4096);
	vtpu_cmdbuf_fill(&cb3, vtpu_cmdbuf_use(&cb3, &x), 0, 1024, 2.0f);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb1, &j1));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb2, &j2));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb3, &j3));
	EXPECT_EQ(j1.seqno + 1, j2.seqno);
	EXPECT_EQ(j2.seqno + 1, j3.seqno);

	ASSERT_EQ(0, vtpu_wait(self->dev, self->q, j3.seqno, -1, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, j1.seqno, 0, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	EXPECT_EQ(0, vtpu_wait(self->dev, self->q, j2.seqno, 0, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	for (i = 0; i < 1024; i++) {
		bad += ((float *)y.map)[i] != 1.0f;
		bad += ((float *)x.map)[i] != 2.0f;
	}
	EXPECT_EQ(0, bad);
	TH_LOG("three jobs on one queue (long+fill, copy, fill) ran in submission order");
	vtpu_cmdbuf_fini(&cb1);
	vtpu_cmdbuf_fini(&cb2);
	vtpu_cmdbuf_fini(&cb3);
	long_job_fini(self->dev, &lj);
}

/* ---- rejected command streams ----------------------------------------------- */

/*
 * Every stream is: NOP, a valid FILL, then the bad command, so the error
 * must name command 2 at byte 40. Buffers 0..3 are 8192 bytes each; the
 * base GEMM is 16x16x16 f32 with A, B, C in buffers 0, 1, 2.
 */
#define BAD_CMD 2
#define BAD_OFF (8 + 32)
#define NBUF 4
#define BUFSZ 8192

static struct vtpu_cmd_gemm base_gemm(void)
{
	struct vtpu_cmd_gemm g;
	const float one = 1.0f;

	memset(&g, 0, sizeof(g));
	g.hdr.opcode = VTPU_OP_GEMM;
	g.hdr.size = sizeof(g);
	g.m = g.n = g.k = 16;
	g.lda = g.ldb = g.ldc = 16;
	g.dtype = VTPU_DTYPE_F32;
	memcpy(&g.alpha, &one, 4);
	g.a.buf = 0;
	g.b.buf = 1;
	g.c.buf = 2;
	return g;
}

static struct vtpu_cmd_fill base_fill(void)
{
	struct vtpu_cmd_fill f;

	memset(&f, 0, sizeof(f));
	f.hdr.opcode = VTPU_OP_FILL;
	f.hdr.size = sizeof(f);
	f.count = 16;
	f.dst.buf = 3;
	return f;
}

static struct vtpu_cmd_copy base_copy(void)
{
	struct vtpu_cmd_copy c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = VTPU_OP_COPY;
	c.hdr.size = sizeof(c);
	c.bytes = 64;
	c.dst.buf = 3;
	c.src.buf = 0;
	return c;
}

static void put_hdr(struct vtpu_cmdbuf *cb, uint32_t at, uint32_t opcode,
		    uint32_t size)
{
	struct vtpu_cmd_hdr h = { .opcode = opcode, .size = size };

	memcpy(cb->data + at, &h, sizeof(h));
}

enum bad_kind { K_GEMM, K_FILL, K_COPY, K_RAW };

struct bad_case {
	const char *name;
	enum bad_kind kind;
	void (*gemm)(struct vtpu_cmd_gemm *g);
	void (*fill)(struct vtpu_cmd_fill *f);
	void (*copy)(struct vtpu_cmd_copy *c);
	void (*raw)(struct vtpu_cmdbuf *cb);	/* appends the bad command */
	uint32_t reason;
	int operand;	/* -1: not checked */
};

/* raw streams */
static void r_truncated(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_gemm g = base_gemm();

	vtpu_cmdbuf_append(cb, &g);
	cb->size -= 16;
}

static void r_size_zero(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_hdr h = { VTPU_OP_NOP, 8 };

	vtpu_cmdbuf_append(cb, &h);
	vtpu_cmdbuf_append(cb, &h);
	put_hdr(cb, BAD_OFF, VTPU_OP_NOP, 0);
}

static void r_size_odd(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_hdr h = { VTPU_OP_NOP, 8 };

	vtpu_cmdbuf_append(cb, &h);
	vtpu_cmdbuf_append(cb, &h);
	put_hdr(cb, BAD_OFF, VTPU_OP_NOP, 12);
}

static void r_nop_16(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_hdr h = { VTPU_OP_NOP, 8 };

	vtpu_cmdbuf_append(cb, &h);
	vtpu_cmdbuf_append(cb, &h);
	put_hdr(cb, BAD_OFF, VTPU_OP_NOP, 16);
}

static void r_gemm_size(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_gemm g = base_gemm();
	struct vtpu_cmd_hdr h = { VTPU_OP_NOP, 8 };

	vtpu_cmdbuf_append(cb, &g);
	vtpu_cmdbuf_append(cb, &h);
	put_hdr(cb, BAD_OFF, VTPU_OP_GEMM, sizeof(g) + 8);
}

static void r_fill_short(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_fill f = base_fill();

	vtpu_cmdbuf_append(cb, &f);
	put_hdr(cb, BAD_OFF, VTPU_OP_FILL, sizeof(f) - 8);
}

static void r_opcode(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_hdr h = { 99, 8 };

	vtpu_cmdbuf_append(cb, &h);
}

static void r_opcode_count(struct vtpu_cmdbuf *cb)
{
	struct vtpu_cmd_hdr h = { VTPU_OP_COUNT, 8 };

	vtpu_cmdbuf_append(cb, &h);
}

/* GEMM mutators */
/* the lowest bit no flag uses (the flags are bits 0 up) */
static void g_flags(struct vtpu_cmd_gemm *g)
{
	g->flags |= VTPU_GEMM_FLAGS + 1;
}
static void g_flags_top(struct vtpu_cmd_gemm *g) { g->flags |= 1u << 31; }
static void g_pad_a(struct vtpu_cmd_gemm *g) { g->a.pad = 1; }
static void g_pad_c(struct vtpu_cmd_gemm *g) { g->c.pad = 0x80000000u; }
static void g_m0(struct vtpu_cmd_gemm *g) { g->m = 0; }
static void g_n0(struct vtpu_cmd_gemm *g) { g->n = 0; }
static void g_k0(struct vtpu_cmd_gemm *g) { g->k = 0; }
static void g_mbig(struct vtpu_cmd_gemm *g) { g->m = VTPU_MAX_DIM + 1; }
static void g_lda(struct vtpu_cmd_gemm *g) { g->lda = 15; }
static void g_lda_t(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_TRANS_A;
	g->m = 20;
	g->lda = 19;	/* >= k but < m */
	g->ldc = 16;
}
static void g_ldb(struct vtpu_cmd_gemm *g) { g->ldb = 1; }
static void g_ldb_t(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_TRANS_B;
	g->k = 20;
	g->lda = 20;
	g->ldb = 19;	/* >= n but < k */
}
static void g_ldc(struct vtpu_cmd_gemm *g) { g->ldc = 15; }
static void g_dtype(struct vtpu_cmd_gemm *g) { g->dtype = 7; }
/* the panel layout: whole panels, a packed leading dimension, f32 */
static void g_bpan_n(struct vtpu_cmd_gemm *g) { g->flags = VTPU_GEMM_B_PANELS; }
static void g_bpan_k(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_B_PANELS | VTPU_GEMM_TRANS_B;
	g->n = g->ldb = g->ldc = 32;	/* B's stored columns are k = 16 */
}
static void g_bpan_ld(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_B_PANELS;
	g->n = g->ldc = 32;
	g->ldb = 33;
}
static void g_bpan_bf16(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_B_PANELS;
	g->n = g->ldb = g->ldc = 32;
	g->dtype = VTPU_DTYPE_BF16;
}
static void g_cpan_n(struct vtpu_cmd_gemm *g) { g->flags = VTPU_GEMM_C_PANELS; }
static void g_cpan_ld(struct vtpu_cmd_gemm *g)
{
	g->flags = VTPU_GEMM_C_PANELS;
	g->n = g->ldb = 32;
	g->ldc = 64;
}
static void g_buf_b(struct vtpu_cmd_gemm *g) { g->b.buf = NBUF; }
static void g_buf_c(struct vtpu_cmd_gemm *g) { g->c.buf = UINT32_MAX; }
static void g_buf_bias(struct vtpu_cmd_gemm *g)
{
	g->flags |= VTPU_GEMM_BIAS;
	g->bias.buf = NBUF + 1;
}
static void g_oob_b(struct vtpu_cmd_gemm *g)
{
	/* B is 64 x 64 f32 = 16384 bytes from 4096 in an 8192-byte buffer */
	g->m = 4;
	g->n = 64;
	g->k = 64;
	g->lda = 64;
	g->ldb = 64;
	g->ldc = 64;
	g->b.offset = 4096;
}
static void g_oob_c(struct vtpu_cmd_gemm *g) { g->c.offset = BUFSZ - 1020; }
static void g_oob_a_wrap(struct vtpu_cmd_gemm *g)
{
	g->a.offset = UINT64_MAX - 3;	/* offset + extent wraps to small */
}
static void g_oob_a_wrap2(struct vtpu_cmd_gemm *g)
{
	g->a.offset = 0ull - 1024;	/* offset + extent == 2^64 == 0 */
}
static void g_oob_ld_huge(struct vtpu_cmd_gemm *g)
{
	g->m = VTPU_MAX_DIM;
	g->k = 1;
	g->lda = UINT32_MAX;
	g->ldb = 16;
}
static void g_oob_bias(struct vtpu_cmd_gemm *g)
{
	g->flags |= VTPU_GEMM_BIAS;
	g->bias.buf = 3;
	g->bias.offset = BUFSZ - 32;	/* 64 bytes needed */
}
static void g_align_a(struct vtpu_cmd_gemm *g) { g->a.offset = 2; }
static void g_align_c(struct vtpu_cmd_gemm *g) { g->c.offset = 6; }
static void g_overlap(struct vtpu_cmd_gemm *g) { g->c.buf = 0; }

/* FILL and COPY mutators */
static void f_pad(struct vtpu_cmd_fill *f) { f->dst.pad = 1; }
static void f_count0(struct vtpu_cmd_fill *f) { f->count = 0; }
static void f_buf(struct vtpu_cmd_fill *f) { f->dst.buf = NBUF; }
static void f_oob(struct vtpu_cmd_fill *f) { f->count = BUFSZ / 4 + 1; }
static void f_oob_max(struct vtpu_cmd_fill *f) { f->count = UINT32_MAX; }
static void f_oob_off(struct vtpu_cmd_fill *f) { f->dst.offset = BUFSZ; }
static void f_align(struct vtpu_cmd_fill *f) { f->dst.offset = 1; }
static void c_pad(struct vtpu_cmd_copy *c) { c->src.pad = 1; }
static void c_bytes0(struct vtpu_cmd_copy *c) { c->bytes = 0; }
static void c_buf(struct vtpu_cmd_copy *c) { c->src.buf = 1000; }
static void c_oob(struct vtpu_cmd_copy *c) { c->bytes = BUFSZ + 1; }
static void c_oob_wrap(struct vtpu_cmd_copy *c)
{
	c->src.offset = UINT64_MAX - 7;
	c->bytes = 16;
}
static void c_overlap(struct vtpu_cmd_copy *c)
{
	c->src.buf = 3;
	c->src.offset = 32;
}

#define GC(n, fn, r, o) { n, K_GEMM, fn, NULL, NULL, NULL, r, o }
#define FC(n, fn, r, o) { n, K_FILL, NULL, fn, NULL, NULL, r, o }
#define CC(n, fn, r, o) { n, K_COPY, NULL, NULL, fn, NULL, r, o }
#define RC(n, fn, r, o) { n, K_RAW, NULL, NULL, NULL, fn, r, o }

static const struct bad_case bad_cases[] = {
	RC("stream ends inside a GEMM", r_truncated, VTPU_ERR_TRUNCATED,
	   VTPU_OPERAND_NONE),
	RC("hdr.size 0", r_size_zero, VTPU_ERR_BAD_SIZE, VTPU_OPERAND_NONE),
	RC("hdr.size 12", r_size_odd, VTPU_ERR_BAD_SIZE, VTPU_OPERAND_NONE),
	RC("NOP of 16 bytes", r_nop_16, VTPU_ERR_BAD_SIZE, VTPU_OPERAND_NONE),
	RC("GEMM 8 bytes too long", r_gemm_size, VTPU_ERR_BAD_SIZE,
	   VTPU_OPERAND_NONE),
	RC("FILL 8 bytes too short", r_fill_short, VTPU_ERR_BAD_SIZE,
	   VTPU_OPERAND_NONE),
	RC("opcode 99", r_opcode, VTPU_ERR_BAD_OPCODE, VTPU_OPERAND_NONE),
	RC("opcode VTPU_OP_COUNT", r_opcode_count, VTPU_ERR_BAD_OPCODE,
	   VTPU_OPERAND_NONE),
	GC("GEMM flag bit 4", g_flags, VTPU_ERR_BAD_FLAGS, VTPU_OPERAND_NONE),
	GC("GEMM flag bit 31", g_flags_top, VTPU_ERR_BAD_FLAGS,
	   VTPU_OPERAND_NONE),
	GC("GEMM a.pad", g_pad_a, VTPU_ERR_BAD_PAD, VTPU_OPERAND_A),
	GC("GEMM c.pad", g_pad_c, VTPU_ERR_BAD_PAD, VTPU_OPERAND_C),
	FC("FILL dst.pad", f_pad, VTPU_ERR_BAD_PAD, VTPU_OPERAND_DST),
	CC("COPY src.pad", c_pad, VTPU_ERR_BAD_PAD, VTPU_OPERAND_SRC),
	GC("GEMM m 0", g_m0, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	GC("GEMM n 0", g_n0, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	GC("GEMM k 0", g_k0, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	GC("GEMM m > MAX_DIM", g_mbig, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	FC("FILL count 0", f_count0, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	CC("COPY bytes 0", c_bytes0, VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_NONE),
	GC("GEMM lda < k", g_lda, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_A),
	GC("GEMM TRANS_A lda < m", g_lda_t, VTPU_ERR_BAD_STRIDE,
	   VTPU_OPERAND_A),
	GC("GEMM ldb < n", g_ldb, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_B),
	GC("GEMM TRANS_B ldb < k", g_ldb_t, VTPU_ERR_BAD_STRIDE,
	   VTPU_OPERAND_B),
	GC("GEMM ldc < n", g_ldc, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_C),
	GC("GEMM dtype 7", g_dtype, VTPU_ERR_BAD_DTYPE, -1),
	GC("GEMM B_PANELS n = 16", g_bpan_n, VTPU_ERR_BAD_SHAPE,
	   VTPU_OPERAND_B),
	GC("GEMM B_PANELS TRANS_B k = 16", g_bpan_k, VTPU_ERR_BAD_SHAPE,
	   VTPU_OPERAND_B),
	GC("GEMM B_PANELS ldb > n", g_bpan_ld, VTPU_ERR_BAD_STRIDE,
	   VTPU_OPERAND_B),
	GC("GEMM B_PANELS bf16", g_bpan_bf16, VTPU_ERR_BAD_DTYPE,
	   VTPU_OPERAND_B),
	GC("GEMM C_PANELS n = 16", g_cpan_n, VTPU_ERR_BAD_SHAPE,
	   VTPU_OPERAND_C),
	GC("GEMM C_PANELS ldc > n", g_cpan_ld, VTPU_ERR_BAD_STRIDE,
	   VTPU_OPERAND_C),
	GC("GEMM b.buf == handle_count", g_buf_b, VTPU_ERR_BAD_BUFFER,
	   VTPU_OPERAND_B),
	GC("GEMM c.buf 2^32-1", g_buf_c, VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_C),
	GC("GEMM bias.buf past the list", g_buf_bias, VTPU_ERR_BAD_BUFFER,
	   VTPU_OPERAND_BIAS),
	FC("FILL dst.buf == handle_count", f_buf, VTPU_ERR_BAD_BUFFER,
	   VTPU_OPERAND_DST),
	CC("COPY src.buf 1000", c_buf, VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_SRC),
	GC("GEMM B past its buffer", g_oob_b, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_B),
	GC("GEMM C past its buffer", g_oob_c, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_C),
	GC("GEMM a.offset 2^64-4 (wraps)", g_oob_a_wrap,
	   VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_A),
	GC("GEMM a.offset 2^64-1024 (sum is 2^64)", g_oob_a_wrap2,
	   VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_A),
	GC("GEMM m=2^24 lda=2^32-1", g_oob_ld_huge, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_A),
	GC("GEMM bias past its buffer", g_oob_bias, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_BIAS),
	FC("FILL one float too many", f_oob, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_DST),
	FC("FILL count 2^32-1", f_oob_max, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_DST),
	FC("FILL at the buffer's end", f_oob_off, VTPU_ERR_OUT_OF_BOUNDS,
	   VTPU_OPERAND_DST),
	CC("COPY one byte too many", c_oob, VTPU_ERR_OUT_OF_BOUNDS, -1),
	CC("COPY src.offset 2^64-8 (wraps)", c_oob_wrap,
	   VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_SRC),
	GC("GEMM a.offset 2", g_align_a, VTPU_ERR_MISALIGNED, VTPU_OPERAND_A),
	GC("GEMM c.offset 6", g_align_c, VTPU_ERR_MISALIGNED, VTPU_OPERAND_C),
	FC("FILL dst.offset 1", f_align, VTPU_ERR_MISALIGNED,
	   VTPU_OPERAND_DST),
	GC("GEMM C == A", g_overlap, VTPU_ERR_OVERLAP, -1),
	CC("COPY src overlaps dst", c_overlap, VTPU_ERR_OVERLAP, -1),
};

/* A small GEMM that must still work: the device survived. */
static void check_alive(struct __test_metadata *_metadata,
			struct vtpu_dev *dev, uint32_t q)
{
	const struct gemm_case gc = GEMM(8, 8, 8, 0, 1.0f, 0.0f);

	check_gemm(_metadata, dev, q, &gc);
}

static void build_bad(struct vtpu_cmdbuf *cb, struct vtpu_bo *bos,
		      const struct bad_case *bc)
{
	struct vtpu_cmd_hdr nop = { VTPU_OP_NOP, 8 };
	struct vtpu_cmd_fill okfill = base_fill();
	int i;

	vtpu_cmdbuf_reset(cb);
	for (i = 0; i < NBUF; i++)
		vtpu_cmdbuf_use(cb, &bos[i]);
	vtpu_cmdbuf_append(cb, &nop);
	vtpu_cmdbuf_append(cb, &okfill);
	switch (bc->kind) {
	case K_GEMM: {
		struct vtpu_cmd_gemm g = base_gemm();

		bc->gemm(&g);
		vtpu_cmdbuf_append(cb, &g);
		break;
	}
	case K_FILL: {
		struct vtpu_cmd_fill f = base_fill();

		bc->fill(&f);
		vtpu_cmdbuf_append(cb, &f);
		break;
	}
	case K_COPY: {
		struct vtpu_cmd_copy c = base_copy();

		bc->copy(&c);
		vtpu_cmdbuf_append(cb, &c);
		break;
	}
	case K_RAW:
		bc->raw(cb);
		break;
	}
}

TEST_F_TIMEOUT(submit, bad_streams, 300)
{
	struct vtpu_bo bos[NBUF];
	struct vtpu_cmdbuf cb;
	char msg[512];
	size_t i, n = sizeof(bad_cases) / sizeof(bad_cases[0]);
	int i_bo, fails = 0;

	NEED_DEV();
	for (i_bo = 0; i_bo < NBUF; i_bo++)
		bo_new(_metadata, self->dev, BUFSZ, &bos[i_bo]);
	vtpu_cmdbuf_init(&cb);

	/* The harness must build valid streams: the base ones pass. */
	{
		struct vtpu_cmd_gemm g = base_gemm();
		struct vtpu_cmd_copy c = base_copy();

		vtpu_cmdbuf_reset(&cb);
		for (i_bo = 0; i_bo < NBUF; i_bo++)
			vtpu_cmdbuf_use(&cb, &bos[i_bo]);
		vtpu_cmdbuf_append(&cb, &g);
		vtpu_cmdbuf_append(&cb, &c);
		run_job(_metadata, self->dev, self->q, &cb);
	}

	for (i = 0; i < n; i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct vtpu_job job = { .queue = self->q };
		int ret, ok;

		build_bad(&cb, bos, bc);
		ASSERT_EQ(0, cb.error) TH_LOG("%s: building failed", bc->name);
		ret = vtpu_submit(self->dev, &cb, &job);
		vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
		ok = ret == -EINVAL && job.error.reason == bc->reason &&
		     job.error.cmd == BAD_CMD && job.error.offset == BAD_OFF &&
		     (bc->operand < 0 ||
		      job.error.operand == (uint32_t)bc->operand);
		EXPECT_TRUE(ok) TH_LOG("%s: got %d cmd %u offset %u operand %u reason %u, expected -EINVAL cmd %d offset %d operand %d reason %u",
				       bc->name, ret, job.error.cmd,
				       job.error.offset, job.error.operand,
				       job.error.reason, BAD_CMD, BAD_OFF,
				       bc->operand, bc->reason);
		if (!ok)
			fails++;
		if (ret == 0) {
			uint32_t st;

			/* Accepted: let it end before the next one. */
			vtpu_wait(self->dev, self->q, job.seqno, -1, &st, NULL);
		}
		TH_LOG("%-40s -> %s", bc->name, msg);
		check_alive(_metadata, self->dev, self->q);
	}

	/* The text names the operand, its extent and the buffer's size. */
	for (i = 0; i < n; i++)
		if (!strcmp(bad_cases[i].name, "GEMM B past its buffer"))
			break;
	ASSERT_LT(i, n);
	build_bad(&cb, bos, &bad_cases[i]);
	{
		struct vtpu_job job = { .queue = self->q };

		EXPECT_EQ(-EINVAL, vtpu_submit(self->dev, &cb, &job));
		vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
		EXPECT_EQ(0, strcmp(msg, "command 2 (GEMM): operand B [offset 4096 + 16384 bytes] exceeds buffer 1 (8192 bytes)"))
			TH_LOG("text: %s", msg);
	}

	/* A bad command first: index 0, byte 0. */
	{
		struct vtpu_cmd_hdr h = { 99, 8 };
		struct vtpu_job job = { .queue = self->q };

		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_append(&cb, &h);
		EXPECT_EQ(-EINVAL, vtpu_submit(self->dev, &cb, &job));
		EXPECT_EQ(0, job.error.cmd);
		EXPECT_EQ(0, job.error.offset);
		EXPECT_EQ(VTPU_ERR_BAD_OPCODE, job.error.reason);
	}
	check_alive(_metadata, self->dev, self->q);
	TH_LOG("%zu rejected streams (%d not as expected); the device ran a good GEMM after each",
	       n, fails);
	vtpu_cmdbuf_fini(&cb);
}

/* ---- bad submit arguments --------------------------------------------------- */

TEST_F(submit, bad_args)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_submit s, good;
	uint64_t max_cmds, max_handles;
	uint32_t bad_handles[2];
	void *hole;
	int ret;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_get_param(self->dev, VTPU_PARAM_MAX_CMDS_SIZE,
				    &max_cmds));
	ASSERT_EQ(0, vtpu_get_param(self->dev, VTPU_PARAM_MAX_HANDLES,
				    &max_handles));
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	one_fill(&cb, &x, 5.0f);

	memset(&good, 0, sizeof(good));
	good.cmds_ptr = (uintptr_t)cb.data;
	good.cmds_size = cb.size;
	good.handles_ptr = (uintptr_t)cb.handles;
	good.handle_count = cb.nhandles;
	good.queue_id = self->q;
	good.in_fence_fd = -1;
	s = good;
	ASSERT_EQ(0, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	EXPECT_EQ(-1, s.out_fence_fd);
	EXPECT_EQ(VTPU_ERR_NONE, s.error_reason);

	/* A handle that does not exist. */
	bad_handles[0] = x.handle;
	bad_handles[1] = 0xdead;
	s = good;
	s.handles_ptr = (uintptr_t)bad_handles;
	s.handle_count = 2;
	EXPECT_EQ(-ENOENT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	EXPECT_EQ(VTPU_ERR_NONE, s.error_reason);

	s = good;
	s.flags = (VTPU_SUBMIT_FLAGS + 1) & ~VTPU_SUBMIT_FLAGS; /* first unknown */
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));

	s = good;
	s.cmds_size = 0;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s.cmds_size = 12;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s.cmds_size = 4;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s = good;
	s.cmds_size = (uint32_t)((max_cmds + 8) & ~7ull);
	if (max_cmds + 8 <= UINT32_MAX) {
		ret = xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s);
		EXPECT_TRUE(ret == -EINVAL || ret == -E2BIG)
			TH_LOG("cmds_size past MAX_CMDS_SIZE gave %d", ret);
	}
	s = good;
	if (max_handles < UINT32_MAX) {
		s.handle_count = (uint32_t)max_handles + 1;
		ret = xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s);
		EXPECT_TRUE(ret == -EINVAL || ret == -E2BIG)
			TH_LOG("handle_count past MAX_HANDLES gave %d", ret);
	}

	/* Bad user pointers. */
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	s = good;
	s.cmds_ptr = (uintptr_t)hole;
	EXPECT_EQ(-EFAULT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s.cmds_ptr = 16;
	EXPECT_EQ(-EFAULT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s.cmds_ptr = 0xffff800000000000ull;	/* kernel address */
	EXPECT_EQ(-EFAULT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	s = good;
	s.handles_ptr = (uintptr_t)hole;
	EXPECT_EQ(-EFAULT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));
	munmap(hole, 4096);

	s = good;
	s.queue_id = self->q + 1000;
	EXPECT_EQ(-ENOENT, xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s));

	/* IN_FENCE with no fd. */
	s = good;
	s.flags = VTPU_SUBMIT_IN_FENCE;
	s.in_fence_fd = -1;
	ret = xioctl(self->fd, VTPU_IOCTL_SUBMIT, &s);
	EXPECT_TRUE(ret == -EINVAL || ret == -EBADF)
		TH_LOG("IN_FENCE with fd -1 gave %d", ret);

	/* A longer struct: zero tail accepted, non-zero tail E2BIG. */
	{
		struct {
			struct vtpu_submit s;
			uint64_t tail[2];
		} big;
		unsigned long nr = _IOC(_IOC_READ | _IOC_WRITE,
					VTPU_IOCTL_BASE, 0x06, sizeof(big));

		memset(&big, 0, sizeof(big));
		big.s = good;
		EXPECT_EQ(0, xioctl(self->fd, nr, &big));
		big.s = good;
		big.tail[1] = 1;
		EXPECT_EQ(-E2BIG, xioctl(self->fd, nr, &big));
	}

	/* The library refuses a stream whose building failed. */
	{
		struct vtpu_job job = { .queue = self->q };
		struct vtpu_cmd_hdr h = { VTPU_OP_NOP, 4 };

		EXPECT_EQ(-EINVAL, vtpu_cmdbuf_append(&cb, &h));
		EXPECT_EQ(-EINVAL, vtpu_submit(self->dev, &cb, &job));
		EXPECT_EQ(VTPU_ERR_NONE, job.error.reason);
	}

	check_alive(_metadata, self->dev, self->q);
	TH_LOG("bad handle ENOENT, bad flags/sizes EINVAL, bad pointers EFAULT, bad queue ENOENT, longer struct OK/E2BIG; device still works");
	vtpu_cmdbuf_fini(&cb);
}

/* ---- lifetime ------------------------------------------------------------------ */

TEST_F_TIMEOUT(submit, close_fd_with_job_in_flight, 120)
{
	struct vtpu_bo_create bc[3];
	struct vtpu_queue_create qc = { .priority = VTPU_QUEUE_PRIORITY_NORMAL };
	struct vtpu_cmdbuf cb;
	struct vtpu_submit s, s2;
	struct vtpu_gemm_desc g = {
		.m = LONG_N, .n = LONG_N, .k = LONG_N, .alpha = 1.0f,
		.a_buf = 0, .b_buf = 1, .c_buf = 2,
	};
	uint32_t handles[3], q2;
	struct vtpu_dev *dev2;
	double t0, t_close, t_fence;
	int fd2, i, ret, ret2, reps;
	struct long_job cal;

	NEED_DEV();
	/* twice the long job, timed on this client's own buffers */
	long_job_init(_metadata, self->dev, &cal);
	reps = 2 * cal.reps;
	long_job_fini(self->dev, &cal);
	/* Raw, unmapped buffers: a mapping would keep the file open. */
	fd2 = open(DEV_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	for (i = 0; i < 3; i++) {
		memset(&bc[i], 0, sizeof(bc[i]));
		bc[i].size = (uint64_t)LONG_N * LONG_N * 4;
		ASSERT_EQ(0, xioctl(fd2, VTPU_IOCTL_BO_CREATE, &bc[i]));
		handles[i] = bc[i].handle;
	}
	ASSERT_EQ(0, xioctl(fd2, VTPU_IOCTL_QUEUE_CREATE, &qc));
	vtpu_cmdbuf_init(&cb);
	for (i = 0; i < reps; i++)
		vtpu_cmdbuf_gemm(&cb, &g);
	memset(&s, 0, sizeof(s));
	s.cmds_ptr = (uintptr_t)cb.data;
	s.cmds_size = cb.size;
	s.handles_ptr = (uintptr_t)handles;
	s.handle_count = 3;
	s.queue_id = qc.queue_id;
	s.flags = VTPU_SUBMIT_OUT_FENCE;
	s.in_fence_fd = -1;
	ASSERT_EQ(0, xioctl(fd2, VTPU_IOCTL_SUBMIT, &s));
	/* A second job behind it, never started. */
	s2 = s;
	ASSERT_EQ(0, xioctl(fd2, VTPU_IOCTL_SUBMIT, &s2));
	/* Let the first one start (it runs for LONG_MS or more). */
	usleep(100 * 1000);

	t0 = now_ms();
	EXPECT_EQ(0, close(fd2));
	t_close = now_ms() - t0;
	ret = vtpu_fence_wait(s.out_fence_fd, 60000);
	ret2 = vtpu_fence_wait(s2.out_fence_fd, 60000);
	t_fence = now_ms() - t0;
	EXPECT_NE(-ETIME, ret) TH_LOG("the running job's fence never signalled");
	EXPECT_NE(-ETIME, ret2) TH_LOG("the queued job's fence never signalled");
	EXPECT_GT(0, ret2) TH_LOG("the queued job ran although its client went away");
	close(s.out_fence_fd);
	close(s2.out_fence_fd);

	/* The same client and a new one both work. */
	check_alive(_metadata, self->dev, self->q);
	dev2 = vtpu_open(DEV_PATH);
	ASSERT_NE(NULL, dev2);
	ASSERT_EQ(0, vtpu_queue_create(dev2, VTPU_QUEUE_PRIORITY_NORMAL, &q2));
	check_alive(_metadata, dev2, q2);
	vtpu_close(dev2);
	TH_LOG("closed the fd with a %d x %d^3 job running and one queued: close took %.1f ms, the fences signalled after %.1f ms with %d, %d; the device works after",
	       reps, LONG_N, t_close, t_fence, ret, ret2);
	vtpu_cmdbuf_fini(&cb);
}

TEST_F_TIMEOUT(submit, close_bo_with_job_queued, 120)
{
	struct long_job lj;
	struct vtpu_bo a, b, c;
	struct vtpu_cmdbuf cb1, cb2;
	struct vtpu_job j1 = { .queue = self->q }, j2 = { .queue = self->q };
	struct vtpu_gemm_desc g = { .m = 16, .n = 16, .k = 16, .alpha = 1.0f };
	struct vtpu_bo_close bcl = { 0 };
	struct vtpu_bo_info bi = { 0 };
	float ref[16 * 16];
	uint32_t status, i;
	double maxdiff = 0;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	bo_new(_metadata, self->dev, 16 * 16 * 4, &a);
	bo_new(_metadata, self->dev, 16 * 16 * 4, &b);
	bo_new(_metadata, self->dev, 16 * 16 * 4, &c);
	fill_rand(a.map, 256);
	fill_rand(b.map, 256);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 16, 16, 16,
		    1.0f, a.map, 16, b.map, 16, 0.0f, ref, 16);

	vtpu_cmdbuf_init(&cb1);
	vtpu_cmdbuf_init(&cb2);
	long_job_append(&cb1, &lj, lj.reps / 2);
	g.a_buf = vtpu_cmdbuf_use(&cb2, &a);
	g.b_buf = vtpu_cmdbuf_use(&cb2, &b);
	g.c_buf = vtpu_cmdbuf_use(&cb2, &c);
	vtpu_cmdbuf_gemm(&cb2, &g);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb1, &j1));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb2, &j2));

	/* Close all three handles (keeping the mappings) while j2 waits. */
	bcl.handle = a.handle;
	EXPECT_EQ(0, xioctl(self->fd, VTPU_IOCTL_BO_CLOSE, &bcl));
	bcl.handle = b.handle;
	EXPECT_EQ(0, xioctl(self->fd, VTPU_IOCTL_BO_CLOSE, &bcl));
	bcl.handle = c.handle;
	EXPECT_EQ(0, xioctl(self->fd, VTPU_IOCTL_BO_CLOSE, &bcl));
	bi.handle = c.handle;
	EXPECT_EQ(-ENOENT, xioctl(self->fd, VTPU_IOCTL_BO_INFO, &bi));
	status = 99;
	vtpu_wait(self->dev, self->q, j1.seqno, 0, &status, NULL);
	EXPECT_NE(VTPU_JOB_DONE, status)
		TH_LOG("the long job ended before the handles were closed");

	ASSERT_EQ(0, vtpu_wait(self->dev, self->q, j2.seqno, -1, &status,
			       NULL));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	for (i = 0; i < 256; i++) {
		double d = fabs(((float *)c.map)[i] - ref[i]);

		if (!(d <= maxdiff))
			maxdiff = isnan(d) ? INFINITY : d;
	}
	EXPECT_GE(1e-4, maxdiff);
	TH_LOG("closed A, B, C handles while their job was queued: it ended %s, result through the old mapping maxdiff %g",
	       vtpu_status_name(status), maxdiff);
	munmap(a.map, a.size);
	munmap(b.map, b.size);
	munmap(c.map, c.size);
	vtpu_cmdbuf_fini(&cb1);
	vtpu_cmdbuf_fini(&cb2);
	long_job_fini(self->dev, &lj);
}

TEST_F_TIMEOUT(submit, queue_destroy_cancels, 120)
{
	struct long_job lj;
	struct vtpu_cmdbuf cb;
	struct vtpu_job j1 = { .want_out_fence = 1 }, j2 = { .want_out_fence = 1 };
	uint32_t q2;
	int r1, r2;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &q2));
	long_job_init(_metadata, self->dev, &lj);
	vtpu_cmdbuf_init(&cb);
	long_job_append(&cb, &lj, lj.reps);
	j1.queue = j2.queue = q2;
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j1));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j2));
	usleep(100 * 1000);	/* let job 1 start */
	EXPECT_EQ(0, vtpu_queue_destroy(self->dev, q2));
	r1 = vtpu_fence_wait(j1.out_fence, 60000);
	r2 = vtpu_fence_wait(j2.out_fence, 60000);
	EXPECT_NE(-ETIME, r1);
	EXPECT_NE(-ETIME, r2);
	EXPECT_GT(0, r2) TH_LOG("the queued job was not cancelled");
	EXPECT_EQ(-ENOENT, vtpu_wait(self->dev, q2, j1.seqno, 0, NULL, NULL));
	check_alive(_metadata, self->dev, self->q);
	TH_LOG("QUEUE_DESTROY with a job running and one queued: fences signalled with %d and %d",
	       r1, r2);
	close(j1.out_fence);
	close(j2.out_fence);
	vtpu_cmdbuf_fini(&cb);
	long_job_fini(self->dev, &lj);
}

TEST_HARNESS_MAIN
