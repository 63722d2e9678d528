// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the engine through libvtpu's cpu backend: GEMM on every
 * SIMD level this CPU has, and in OpenBLAS mode, against a double-precision
 * triple loop (and cblas_sgemm), over edge shapes, transposes, strides,
 * alpha/beta, bias+ReLU, NaN/Inf, f32 and bf16 inputs (the reference widens
 * bf16 exactly); plus FILL/COPY/NOP, a rejected stream, and the bound on
 * one call's work. No device needed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_engine.h"
#include "../../selftests/vtpu/vtpu_gen.h"

#define EPS 5.96e-8 /* 2^-24 */

/* ---- a hand-built command stream on cpu buffers ------------------------- */

struct stream {
	struct vtpu_cmdbuf cb;
	uint8_t data[4096];
	const struct vtpu_bo *bos[8];
};

static void stream_init(struct stream *s)
{
	memset(s, 0, sizeof(*s));
	s->cb.data = s->data;
	s->cb.cap = sizeof(s->data);
	s->cb.bos = s->bos;
}

static uint32_t stream_use(struct stream *s, const struct vtpu_bo *bo)
{
	uint32_t i;

	for (i = 0; i < s->cb.nhandles; i++)
		if (s->bos[i] == bo)
			return i;
	s->bos[s->cb.nhandles] = bo;
	return s->cb.nhandles++;
}

static void stream_add(struct stream *s, const void *cmd)
{
	const struct vtpu_cmd_hdr *h = cmd;

	memcpy(s->data + s->cb.size, cmd, h->size);
	s->cb.size += h->size;
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* ---- data ----------------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;

static float frand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 40) * (2.0 / 16777216.0) - 1.0);
}

static void fill_rand(float *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = frand();
}

/* bf16 bits of @f, rounded to nearest even (NaN stays NaN). */
static uint16_t to_bf16(float f)
{
	uint32_t u = f2u(f);

	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* The f32 a bf16 widens to (exactly). */
static float from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * Store @n values of @v into @dst as f32 or, with @bf16, as bf16 (then @v
 * is rounded in place to what the device sees).
 */
static void store_elems(void *dst, float *v, size_t n, int bf16)
{
	size_t i;

	if (!bf16) {
		memcpy(dst, v, n * 4);
		return;
	}
	for (i = 0; i < n; i++) {
		((uint16_t *)dst)[i] = to_bf16(v[i]);
		v[i] = from_bf16(((uint16_t *)dst)[i]);
	}
}

/* ---- one GEMM case ------------------------------------------------------- */

struct gemm_case {
	uint32_t m, n, k, flags;
	uint32_t lda_pad, ldb_pad, ldc_pad; /* added to the natural ld */
	float alpha, beta;
	int nan_c;	 /* fill C with NaN (beta must be 0) */
	int poison_a;	 /* put NaN and Inf in A */
	int bf16;	 /* A and B are bf16 */
	int guard;	 /* each operand ends where an unmapped page begins */
	int exact;	 /* A, B multiples of 1/8 in [-2, 2]: C must be exact */
	int a_as_rows;	 /* with TRANS_A: op(A) as drawn without it */
	int b_as_rows;	 /* with TRANS_B: op(B) as drawn without it */
	int bits_only;	 /* no reference: the caller compares @out's bits */
	float *out;	 /* if set: gets C (m x n, row-major) as computed */
};

/* Where element (i, j) of a matrix with @cols columns is in panels. */
static size_t panel_idx(size_t rows, size_t i, size_t j)
{
	return ((j / VTPU_GEMM_PANEL) * rows + i) * VTPU_GEMM_PANEL +
	       j % VTPU_GEMM_PANEL;
}

/*
 * A buffer holding @bytes at *@off: with @guard, they end where a
 * PROT_NONE page begins, so that reading or writing one byte past them
 * faults; else they start at @lead. Return: 0 or -1.
 */
static int case_bo_create(size_t bytes, size_t lead, int guard,
			  struct vtpu_bo *bo, uint64_t *off)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size;
	char *map;

	if (!guard) {
		*off = lead;
		return vtpu_cpu_bo_create(bytes + lead, bo) ? -1 : 0;
	}
	size = (bytes + page - 1) / page * page;
	map = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	if (mprotect(map + size, page, PROT_NONE)) {
		munmap(map, size + page);
		return -1;
	}
	bo->handle = 0;
	bo->map = map;
	bo->size = size;
	*off = size - bytes;
	return 0;
}

static void case_bo_destroy(struct vtpu_bo *bo, int guard)
{
	if (guard && bo->map)
		munmap(bo->map, bo->size + (size_t)sysconf(_SC_PAGESIZE));
	else
		vtpu_cpu_bo_destroy(bo);
	bo->map = NULL;
}

/* Executors: SIMD levels, or -2 for OpenBLAS mode. */
#define EXEC_OPENBLAS -2

static struct vtpu_cpu *exec_create(int exec, int threads)
{
	if (exec == EXEC_OPENBLAS)
		return vtpu_cpu_create(threads, -1, VTPU_CPU_GEMM_OPENBLAS);
	return vtpu_cpu_create(threads, exec, VTPU_CPU_GEMM_ENGINE);
}

static float relu_ref(float x)
{
	return x < 0.0f ? 0.0f : x;
}

/* @x, @rows x @cols, stored transposed: @cols x @rows */
static void transpose(float *x, uint32_t rows, uint32_t cols)
{
	size_t sz = (size_t)rows * cols;
	float *t = malloc(sz * 4);
	uint32_t i, j;

	if (!t)
		abort();
	memcpy(t, x, sz * 4);
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			x[(size_t)j * rows + i] = t[(size_t)i * cols + j];
	free(t);
}

/*
 * Run @gc on @cpu; compare with a double triple loop over what the device
 * sees (bf16 widened exactly; the OpenBLAS variants check cblas_sgemm the
 * same way). Returns the number of bad elements; *maxratio gets the worst
 * |got - ref| / tolerance.
 */
static long run_case(struct vtpu_cpu *cpu, const struct gemm_case *gc,
		     double *maxratio)
{
	uint32_t m = gc->m, n = gc->n, k = gc->k;
	int ta = !!(gc->flags & VTPU_GEMM_TRANS_A);
	int tb = !!(gc->flags & VTPU_GEMM_TRANS_B);
	int bpan = !!(gc->flags & VTPU_GEMM_B_PANELS);
	int cpan = !!(gc->flags & VTPU_GEMM_C_PANELS);
	uint32_t lda = (ta ? m : k) + gc->lda_pad;
	uint32_t ldb = (tb ? k : n) + gc->ldb_pad;
	uint32_t ldc = n + gc->ldc_pad;
	/* B as stored, rows x ldb; C's element (i, j) at CI(i, j) */
	size_t brows = tb ? n : k;
#define CI(i, j) (cpan ? panel_idx(m, i, j) : (size_t)(i) * ldc + (j))
	size_t asz = (size_t)(ta ? k : m) * lda, bsz = brows * ldb;
	size_t csz = (size_t)m * ldc, es = gc->bf16 ? 2 : 4;
	struct vtpu_bo abo = { 0 }, bbo = { 0 }, cbo = { 0 }, biasbo = { 0 };
	uint64_t aoff, boff, coff, biasoff;
	struct vtpu_cmd_gemm cmd;
	struct stream s;
	struct vtpu_job job = { 0 };
	float *a, *b, *c, *c0, *bias, *cref;
	long bad = 0;
	uint32_t i, j, p;
	int ret;

	*maxratio = 0;
	/* A at an offset, to exercise operand offsets */
	if (case_bo_create(asz * es, 256, gc->guard, &abo, &aoff) ||
	    case_bo_create(bsz * es, 0, gc->guard, &bbo, &boff) ||
	    case_bo_create(csz * 4, 0, gc->guard, &cbo, &coff) ||
	    case_bo_create(n * 4, 0, gc->guard, &biasbo, &biasoff))
		return -1;
	/* a and b: the values the device sees, for the reference */
	a = malloc(asz * 4);
	b = malloc(bsz * 4);
	c = (float *)((char *)cbo.map + coff);
	bias = (float *)((char *)biasbo.map + biasoff);
	fill_rand(a, asz);
	if (ta && gc->a_as_rows && lda == m)
		transpose(a, m, k);	/* drawn m x k, as without TRANS_A */
	fill_rand(b, bsz);
	if (tb && gc->b_as_rows && ldb == k)
		transpose(b, k, n);	/* drawn k x n, as without TRANS_B */
	if (gc->exact) {
		for (i = 0; i < asz; i++)
			a[i] = floorf(a[i] * 16) / 8;
		for (i = 0; i < bsz; i++)
			b[i] = floorf(b[i] * 16) / 8;
	}
	fill_rand(bias, n);
	if (gc->nan_c)
		for (i = 0; i < csz; i++)
			c[i] = NAN;
	else
		fill_rand(c, csz);
	if (cpan) {
		/* C's element (i, j) as the row-major case draws it */
		float *t = malloc(csz * 4);

		memcpy(t, c, csz * 4);
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				c[CI(i, j)] = t[(size_t)i * ldc + j];
		free(t);
	}
	if (gc->poison_a) {
		/* row m/2: a NaN at k/2; row m/3: +Inf at 0 */
		uint32_t r1 = m / 2, r2 = m / 3;

		a[ta ? (size_t)(k / 2) * lda + r1 : (size_t)r1 * lda + k / 2] = NAN;
		if (r2 != r1)
			a[ta ? r2 : (size_t)r2 * lda] = INFINITY;
	}
	store_elems((char *)abo.map + aoff, a, asz, gc->bf16);
	if (bpan) {
		/* f32 only; ldb is the stored matrix's column count */
		float *bd = (float *)((char *)bbo.map + boff);

		for (i = 0; i < brows; i++)
			for (j = 0; j < ldb; j++)
				bd[panel_idx(brows, i, j)] = b[(size_t)i * ldb + j];
	} else {
		store_elems((char *)bbo.map + boff, b, bsz, gc->bf16);
	}
	c0 = malloc(csz * 4);
	cref = malloc(csz * 4);
	memcpy(c0, c, csz * 4);

	/* the reference, in double */
	for (i = 0; i < m && !gc->bits_only; i++) {
		for (j = 0; j < n; j++) {
			double acc = 0, x;

			for (p = 0; p < k; p++) {
				double av = ta ? a[(size_t)p * lda + i] :
						 a[(size_t)i * lda + p];
				double bv = tb ? b[(size_t)j * ldb + p] :
						 b[(size_t)p * ldb + j];

				acc += av * bv;
			}
			x = gc->alpha * acc;
			if (gc->beta != 0.0f)
				x += gc->beta * (double)c0[CI(i, j)];
			if (gc->flags & VTPU_GEMM_BIAS)
				x += bias[j];
			if (gc->flags & VTPU_GEMM_RELU)
				x = relu_ref((float)x);
			cref[CI(i, j)] = (float)x;
		}
	}

	stream_init(&s);
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = VTPU_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.m = m;
	cmd.n = n;
	cmd.k = k;
	cmd.flags = gc->flags;
	cmd.lda = lda;
	cmd.ldb = ldb;
	cmd.ldc = ldc;
	cmd.dtype = gc->bf16 ? VTPU_DTYPE_BF16 : VTPU_DTYPE_F32;
	cmd.alpha = f2u(gc->alpha);
	cmd.beta = f2u(gc->beta);
	cmd.a.buf = stream_use(&s, &abo);
	cmd.a.offset = aoff;
	cmd.b.buf = stream_use(&s, &bbo);
	cmd.b.offset = boff;
	cmd.c.buf = stream_use(&s, &cbo);
	cmd.c.offset = coff;
	if (gc->flags & VTPU_GEMM_BIAS) {
		cmd.bias.buf = stream_use(&s, &biasbo);
		cmd.bias.offset = biasoff;
	}
	stream_add(&s, &cmd);
	ret = vtpu_cpu_run(cpu, &s.cb, &job);
	if (ret) {
		fprintf(stderr, "vtpu_cpu_run: %d (cmd %u operand %u reason %u)\n",
			ret, job.error.cmd, job.error.operand, job.error.reason);
		bad = -1;
		goto out;
	}

	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			size_t idx = CI(i, j);
			double mag = 0, tol, d;
			float got = c[idx], want;

			if (gc->out)
				gc->out[(size_t)i * n + j] = got;
			if (gc->bits_only)
				continue;
			want = cref[idx];
			for (p = 0; p < k; p++) {
				double av = ta ? a[(size_t)p * lda + i] :
						 a[(size_t)i * lda + p];
				double bv = tb ? b[(size_t)j * ldb + p] :
						 b[(size_t)p * ldb + j];

				mag += fabs(av * bv);
			}
			mag = fabs(gc->alpha) * mag;
			if (gc->beta != 0.0f)
				mag += fabs(gc->beta * c0[idx]);
			if (gc->flags & VTPU_GEMM_BIAS)
				mag += fabs(bias[j]);
			tol = gc->exact ? 0 : 2.0 * (k + 3) * EPS * mag + 1e-30;

			if (isnan(want) || isinf(want) || isnan(mag) ||
			    isinf(mag)) {
				/* non-finite: NaN where the reference has NaN,
				 * the same infinity, else finite or not alike */
				if (isnan(want) ? !isnan(got) :
				    isinf(want) ? got != want : !isfinite(got)) {
					if (bad < 5)
						fprintf(stderr,
							"  C[%u][%u] = %g, want %g\n",
							i, j, got, want);
					bad++;
				}
				continue;
			}
			d = fabs((double)got - want);
			if (gc->exact ? got != want : !(d <= tol)) {
				if (bad < 5)
					fprintf(stderr,
						"  C[%u][%u] = %.8g, want %.8g (tol %.3g)\n",
						i, j, got, want, tol);
				bad++;
			}
			if (!gc->exact && d / tol > *maxratio)
				*maxratio = d / tol;
		}
		/* padding past n is never written */
		for (j = n; j < ldc; j++) {
			size_t idx = (size_t)i * ldc + j;

			if (memcmp(&c[idx], &c0[idx], 4)) {
				if (bad < 5)
					fprintf(stderr, "  C[%u][%u] pad written\n",
						i, j);
				bad++;
			}
		}
	}
out:
	free(a);
	free(b);
	free(c0);
	free(cref);
	case_bo_destroy(&abo, gc->guard);
	case_bo_destroy(&bbo, gc->guard);
	case_bo_destroy(&cbo, gc->guard);
	case_bo_destroy(&biasbo, gc->guard);
	return bad;
#undef CI
}

/* ---- fixtures: one per executor -------------------------------------- */

FIXTURE(gemm)
{
	struct vtpu_cpu *cpu;
};

FIXTURE_VARIANT(gemm)
{
	int exec;
	int threads;
};

FIXTURE_VARIANT_ADD(gemm, scalar) { .exec = VTPU_SIMD_SCALAR, .threads = 2 };
FIXTURE_VARIANT_ADD(gemm, avx2) { .exec = VTPU_SIMD_AVX2, .threads = 2 };
FIXTURE_VARIANT_ADD(gemm, avx512) { .exec = VTPU_SIMD_AVX512, .threads = 2 };
FIXTURE_VARIANT_ADD(gemm, avx512_1thread) { .exec = VTPU_SIMD_AVX512, .threads = 1 };
FIXTURE_VARIANT_ADD(gemm, avx512_3threads) { .exec = VTPU_SIMD_AVX512, .threads = 3 };
FIXTURE_VARIANT_ADD(gemm, openblas) { .exec = EXEC_OPENBLAS, .threads = 2 };

FIXTURE_SETUP(gemm)
{
	self->cpu = exec_create(variant->exec, variant->threads);
	if (!self->cpu && errno == EOPNOTSUPP)
		SKIP(return, "this CPU lacks SIMD level %d", variant->exec);
	ASSERT_NE(NULL, self->cpu);
}

/*
 * 6.1's harness runs the body after a SKIP in FIXTURE_SETUP: every gemm
 * test starts with this, so a level the CPU lacks is skipped, not run.
 */
#define NEED_CPU()                                                             \
	do {                                                                   \
		if (!self->cpu)                                                \
			return;                                                \
	} while (0)

FIXTURE_TEARDOWN(gemm)
{
	vtpu_cpu_destroy(self->cpu);
}

static int check_cases(struct __test_metadata *_metadata, struct vtpu_cpu *cpu,
		       const struct gemm_case *cases, int ncases)
{
	static const uint32_t trans[] = { 0, VTPU_GEMM_TRANS_A,
					  VTPU_GEMM_TRANS_B,
					  VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B };
	double worst = 0;
	int i, t, fails = 0;

	for (i = 0; i < ncases; i++) {
		for (t = 0; t < 4; t++) {
			struct gemm_case gc = cases[i];
			double ratio;
			long bad;

			gc.flags |= trans[t];
			bad = run_case(cpu, &gc, &ratio);
			if (bad) {
				TH_LOG("%ux%ux%u%s flags %#x alpha %g beta %g: %ld bad",
				       gc.m, gc.n, gc.k, gc.bf16 ? " bf16" : "",
				       gc.flags, gc.alpha, gc.beta, bad);
				fails++;
			}
			if (ratio > worst)
				worst = ratio;
		}
	}
	TH_LOG("%d cases x 4 transposes, worst |diff|/tol %.3f", ncases, worst);
	return fails;
}

TEST_F(gemm, shapes)
{
	static const struct gemm_case cases[] = {
		{ 1, 1, 1, .alpha = 1 },
		{ 7, 13, 17, .alpha = 1 },
		{ 1, 300, 50, .alpha = 1 },
		{ 300, 1, 50, .alpha = 1 },
		{ 64, 64, 1, .alpha = 1 },
		{ 33, 65, 129, .alpha = 1 },
		{ 15, 33, 257, .alpha = 1 },
		{ 29, 37, 3000, .alpha = 1 },
		{ 200, 10, 512, .alpha = 1 },
		{ 128, 100, 10, .alpha = 1 },
		{ 301, 803, 270, .alpha = 1 },
		/* A's rows 4 KiB apart: packed, not read in place (gemm.c) */
		{ 40, 70, 1024, .alpha = 1 },
	};

	NEED_CPU();
	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

TEST_F(gemm, strides_alpha_beta_bias_relu)
{
	NEED_CPU();
#define C(m_, n_, k_, fl, pa, pb, pc, al, be)                                  \
	{ .m = m_, .n = n_, .k = k_, .flags = fl, .lda_pad = pa,               \
	  .ldb_pad = pb, .ldc_pad = pc, .alpha = al, .beta = be }
	static const struct gemm_case cases[] = {
		C(7, 13, 17, 0, 3, 5, 7, 1.0f, 1.0f),
		C(31, 47, 300, VTPU_GEMM_BIAS, 1, 2, 3, -0.5f, 0.75f),
		C(45, 70, 33, VTPU_GEMM_RELU, 16, 0, 1, 2.0f, -1.0f),
		C(90, 129, 600, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0, 0, 0, 1.0f,
		  0.0f),
		C(1, 1, 1, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1, 1, 1, 0.25f, 0.5f),
		C(150, 33, 5, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 2, 3, 4, 1.5f,
		  0.0f),
		/* lda 2048: rows 8 KiB apart, A packed */
		C(30, 64, 1000, VTPU_GEMM_BIAS, 1048, 0, 0, 1.0f, 0.5f),
	};
#undef C

	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

/*
 * Products whose K is split into parts (gemm.c: a small C, a long K): two
 * and four parts, beta and alpha, padded strides, bf16, a K that is not a
 * multiple of the step, against the double reference.
 */
TEST_F(gemm, long_k_split)
{
	static const struct gemm_case cases[] = {
		{ 64, 64, 9000, .alpha = 1.0f },
		{ 16, 48, 20000, .lda_pad = 3, .ldb_pad = 5, .ldc_pad = 7,
		  .alpha = -0.5f, .beta = 0.5f },
		{ 40, 96, 8300, .alpha = 1.0f, .beta = 1.0f },
		{ 9, 64, 17000, .alpha = 2.0f },
		{ 32, 64, 8500, .alpha = 1.0f, .bf16 = 1 },
	};

	NEED_CPU();

	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

TEST_F(gemm, beta0_nan_c_vanishes)
{
	static const struct gemm_case cases[] = {
		{ 7, 13, 17, .alpha = 1, .nan_c = 1 },
		{ 50, 70, 300, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1, 1, 5,
		  .alpha = 0.5f, .nan_c = 1 },
		{ 1, 1, 1, .alpha = 1, .nan_c = 1 },
		{ 9, 64, 600, .alpha = 1, .nan_c = 1 },	/* _tn with A^T */
	};

	NEED_CPU();
	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

TEST_F(gemm, nan_inf_propagate)
{
	static const struct gemm_case cases[] = {
		{ 9, 20, 30, .alpha = 1, .poison_a = 1 },
		{ 40, 70, 600, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, .alpha = 1,
		  .beta = 1, .poison_a = 1 },
	};

	NEED_CPU();
	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

/*
 * bf16 A and B, f32 accumulation: the same shapes, edges and epilogues as
 * f32 (OpenBLAS mode runs them on the engine too), and exact results when
 * every product and partial sum is representable.
 */
TEST_F(gemm, bf16)
{
	NEED_CPU();
#define C(m_, n_, k_, fl, pa, pb, pc, al, be)                                  \
	{ .m = m_, .n = n_, .k = k_, .flags = fl, .lda_pad = pa,               \
	  .ldb_pad = pb, .ldc_pad = pc, .alpha = al, .beta = be, .bf16 = 1 }
	static const struct gemm_case cases[] = {
		C(1, 1, 1, 0, 0, 0, 0, 1.0f, 0.0f),
		C(7, 13, 17, 0, 3, 5, 7, 1.0f, 1.0f),
		C(1, 300, 50, 0, 0, 0, 0, 1.0f, 0.0f),
		C(300, 1, 50, 0, 1, 1, 0, 1.0f, 0.0f),
		C(33, 65, 129, VTPU_GEMM_BIAS, 1, 0, 2, -0.5f, 0.75f),
		C(15, 33, 257, VTPU_GEMM_RELU, 0, 0, 0, 2.0f, -1.0f),
		C(29, 37, 3000, 0, 0, 0, 0, 1.0f, 0.0f),
		C(200, 10, 512, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0, 0, 0, 1.0f,
		  0.0f),
		C(128, 100, 10, 0, 2, 2, 2, 1.0f, 0.5f),
		C(301, 803, 270, 0, 0, 0, 0, 1.0f, 0.0f),
		{ 9, 20, 30, .alpha = 1, .poison_a = 1, .bf16 = 1 },
		{ 50, 70, 300, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1, 1, 5,
		  .alpha = 0.5f, .nan_c = 1, .bf16 = 1 },
		{ 8, 8, 16, .alpha = 1, .bf16 = 1, .exact = 1 },
		{ 61, 45, 700, .alpha = 1, .bf16 = 1, .exact = 1 },
		{ 130, 7, 300, .alpha = 1, .bf16 = 1, .exact = 1 },
	};
#undef C

	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

/*
 * Narrow N (the AVX-512 kernel for n <= 16 reads f32 operands in place
 * and stores with masks) and edge tiles, every operand ending at an
 * unmapped page: an access past any of them faults.
 */
TEST_F(gemm, narrow_and_edges_at_page_end)
{
	NEED_CPU();
#define C(m_, n_, k_, fl, al, be, h)                                            \
	{ .m = m_, .n = n_, .k = k_, .flags = fl, .alpha = al, .beta = be,     \
	  .bf16 = h, .guard = 1 }
	static const struct gemm_case cases[] = {
		C(1, 1, 1, 0, 1.0f, 0.0f, 0),
		C(128, 10, 512, 0, 1.0f, 0.0f, 0),
		C(512, 10, 128, 0, 1.0f, 0.0f, 0),
		C(33, 16, 300, VTPU_GEMM_BIAS, 1.0f, 0.5f, 0),
		C(47, 15, 17, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, -1.0f, 1.0f, 0),
		C(17, 3, 700, 0, 0.5f, 0.0f, 0),
		C(100, 7, 40, VTPU_GEMM_RELU, 1.0f, -1.0f, 0),
		C(15, 33, 31, VTPU_GEMM_BIAS, 1.0f, 1.0f, 0),
		C(29, 17, 64, 0, 1.0f, 0.0f, 0),
		C(9000, 3, 20, VTPU_GEMM_BIAS, 1.0f, 0.5f, 0),
		C(64, 64, 64, 0, 1.0f, 0.0f, 0),
		C(43, 10, 65, VTPU_GEMM_BIAS, 1.0f, 0.0f, 1),
		C(15, 33, 31, VTPU_GEMM_RELU, 1.0f, 1.0f, 1),
		C(17, 3, 700, 0, 0.5f, 0.0f, 1),
		C(8200, 12, 33, 0, 1.0f, 0.0f, 1),
		/* A^T B with m <= 16 < n: the AVX-512 _tn kernel */
		C(9, 64, 14196, 0, 1.0f, 0.0f, 0),
		C(9, 64, 700, 0, 0.5f, 1.0f, 0),
		C(16, 17, 300, 0, -1.0f, 0.5f, 0),
		C(1, 33, 1000, 0, 1.0f, 0.0f, 0),
		C(5, 100, 257, 0, 2.0f, -1.0f, 0),
		C(11, 47, 3, 0, 1.0f, 1.0f, 0),
	};
#undef C

	ASSERT_EQ(0, check_cases(_metadata, self->cpu, cases,
				 sizeof(cases) / sizeof(cases[0])));
}

/*
 * The panel layout (VTPU_GEMM_B_PANELS, VTPU_GEMM_C_PANELS): B read from
 * its panels (on AVX-512, in place by the kernel of A read in place and
 * by the packed kernel) and
 * C written to them give the bits the row-major GEMM gives, on every path
 * it can take: tiles split both ways, edge microtiles, n <= 16 with B
 * transposed (the narrow kernel), beta, bias and ReLU, operands ending at
 * an unmapped page.
 */
/* minutes at the scalar level in the sanitizers' build (test-asan) */
TEST_F_TIMEOUT(gemm, panels_match_row_major, 600)
{
	NEED_CPU();
#define C(m_, n_, k_, fl, al, be)                                              \
	{ .m = m_, .n = n_, .k = k_, .flags = fl, .alpha = al, .beta = be,     \
	  .guard = 1 }
	static const struct gemm_case cases[] = {
		C(128, 512, 784, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1.0f, 0.0f),
		C(784, 512, 128, 0, 1.0f, 0.0f),
		C(128, 512, 512, 0, 1.0f, 0.0f),
		C(1, 32, 32, 0, 1.0f, 0.0f),
		C(37, 96, 64, VTPU_GEMM_BIAS, 0.5f, 1.0f),
		C(301, 160, 288, VTPU_GEMM_RELU, -1.0f, 0.5f),
		C(9, 64, 320, 0, 1.0f, 0.0f),
		C(100, 10, 64, VTPU_GEMM_BIAS, 1.0f, 0.0f),
		C(1000, 32, 3000, 0, 1.0f, 0.5f),
		C(64, 64, 8448, 0, 1.0f, 0.5f),	/* K split */
		/*
		 * A's rows 4 KiB apart: A packed, and on AVX-512 B's panels
		 * read in place by the packed kernel (gemm_tmpl.h)
		 */
		C(130, 96, 1024, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 1.0f, 0.0f),
	};
#undef C
	static const uint32_t trans[] = { 0, VTPU_GEMM_TRANS_A,
					  VTPU_GEMM_TRANS_B,
					  VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B };
	static const uint32_t panels[] = { VTPU_GEMM_B_PANELS,
					   VTPU_GEMM_C_PANELS,
					   VTPU_GEMM_B_PANELS |
						   VTPU_GEMM_C_PANELS };
	int i, t, q, runs = 0;

	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		for (t = 0; t < 4; t++) {
			struct gemm_case gc = cases[i];
			size_t csz = (size_t)gc.m * gc.n;
			float *rows = malloc(csz * 4), *pan = malloc(csz * 4);
			uint32_t bcols;
			double ratio;

			ASSERT_TRUE(rows && pan);
			gc.flags |= trans[t];
			bcols = (gc.flags & VTPU_GEMM_TRANS_B) ? gc.k : gc.n;
			gc.out = rows;
			ASSERT_EQ(0, run_case(self->cpu, &gc, &ratio));
			for (q = 0; q < 3; q++) {
				struct gemm_case pc = gc;

				pc.flags |= panels[q];
				if ((pc.flags & VTPU_GEMM_B_PANELS) &&
				    bcols % VTPU_GEMM_PANEL)
					continue;
				if ((pc.flags & VTPU_GEMM_C_PANELS) &&
				    gc.n % VTPU_GEMM_PANEL)
					continue;
				/*
				 * The same A, B, C and bias: the same seed.
				 * The first run of gc checked it against the
				 * reference; these compare bits.
				 */
				rng_state = 88172645463325252ull + i;
				pc.out = pan;
				pc.bits_only = 1;
				ASSERT_EQ(0, run_case(self->cpu, &pc, &ratio))
				TH_LOG("%ux%ux%u flags %#x", pc.m, pc.n, pc.k,
				       pc.flags);
				gc.out = rows;
				gc.bits_only = 1;
				rng_state = 88172645463325252ull + i;
				ASSERT_EQ(0, run_case(self->cpu, &gc, &ratio));
				runs++;
				/* (OpenBLAS runs the row-major one) */
				if (variant->exec == EXEC_OPENBLAS)
					continue;
				ASSERT_EQ(0, memcmp(rows, pan, csz * 4))
				TH_LOG("%ux%ux%u flags %#x: not the row-major bits",
				       pc.m, pc.n, pc.k, pc.flags);
			}
			free(rows);
			free(pan);
		}
	}
	TH_LOG("%d GEMMs with panels, each the row-major one's bits", runs);
	ASSERT_LE(90, runs);
}

/*
 * Each case run as drawn and again with @flag (TRANS_A or TRANS_B, the
 * operand drawn the same and stored the other way: a_as_rows, b_as_rows)
 * must give the same bits; the draws seeded from @seed. Returns how many
 * cases differed.
 */
static int stored_keeps_bits(struct __test_metadata *_metadata,
			     struct vtpu_cpu *cpu,
			     const struct gemm_case *cases, int ncases,
			     uint32_t flag, uint64_t seed)
{
	int i, differ = 0;

	for (i = 0; i < ncases; i++) {
		struct gemm_case gc = cases[i], tc = cases[i];
		size_t csz = (size_t)gc.m * gc.n;
		float *rows = malloc(csz * 4), *tr = malloc(csz * 4);
		double ratio;

		if (!rows || !tr)
			return -1;
		rng_state = 88172645463325252ull + seed + i;
		gc.out = rows;
		EXPECT_EQ(0, run_case(cpu, &gc, &ratio));
		rng_state = 88172645463325252ull + seed + i;
		tc.flags |= flag;
		tc.out = tr;
		EXPECT_EQ(0, run_case(cpu, &tc, &ratio));
		if (memcmp(rows, tr, csz * 4)) {
			TH_LOG("%ux%ux%u flags %#x: %s stored the other way "
			       "changed the bits", gc.m, gc.n, gc.k, gc.flags,
			       flag == VTPU_GEMM_TRANS_A ? "A" : "B");
			differ++;
		}
		free(rows);
		free(tr);
	}
	return differ;
}

/*
 * The same op(A), stored m x k or k x m (TRANS_A), gives the same bits:
 * every path sums each element's k in order, whichever way it reads A
 * (on AVX-512 the 14 x 32 kernel reads a k x m A and its k x n B where
 * they are stored, copies A's last rows under 8 and packs B's last
 * columns under 32, and packs both when their rows are a multiple of 4
 * KiB apart; an m x k A is read in place or packed by other paths).
 * Tiles of 14- and 8-row microtiles, a partial one, partial columns, one
 * to three steps of k, the narrow kernel, bias, ReLU and beta.
 */
/* a case for stored_keeps_bits(): A and B drawn as if not transposed */
#define C(m_, n_, k_, fl, be)                                                  \
	{ .m = m_, .n = n_, .k = k_, .flags = fl, .alpha = 1.0f, .beta = be,   \
	  .guard = 1, .a_as_rows = 1, .b_as_rows = 1 }

TEST_F(gemm, trans_a_keeps_bits)
{
	NEED_CPU();
	static const struct gemm_case cases[] = {
		C(784, 512, 128, 0, 0.0f),
		C(512, 512, 128, VTPU_GEMM_C_PANELS, 0.0f),
		C(300, 96, 128, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0.0f),
		C(131, 70, 300, VTPU_GEMM_BIAS, 0.5f),
		C(29, 40, 33, VTPU_GEMM_TRANS_B, 1.0f),
		C(200, 10, 128, 0, 0.0f),
		C(64, 64, 8448, 0, 0.5f),	/* K split (gemm.c) */
		C(20, 48, 40, 0, 1.0f),		/* 14 + 6 rows, 32 + 16 */
		C(29, 33, 513, VTPU_GEMM_RELU, 0.0f),	/* 14 + 8 + 7 */
		C(37, 1024, 64, 0, 0.0f),	/* B's rows 4 KiB apart */
		C(1024, 40, 30, VTPU_GEMM_BIAS, 0.0f),	/* and A's */
		/* alpha and beta that neither epilogue may contract away */
		{ .m = 45, .n = 70, .k = 300, .flags = VTPU_GEMM_BIAS,
		  .alpha = 0.75f, .beta = -1.25f, .guard = 1, .a_as_rows = 1,
		  .b_as_rows = 1 },
	};
	/* (OpenBLAS runs it its own way) */
	if (variant->exec == EXEC_OPENBLAS)
		SKIP(return, "the engine's paths only");
	EXPECT_EQ(0, stored_keeps_bits(_metadata, self->cpu, cases,
				       sizeof(cases) / sizeof(cases[0]),
				       VTPU_GEMM_TRANS_A, 0));
}

/*
 * B stored k x n is read where it is stored by a tile of few rows on
 * AVX-512 (gemm_avx512.c's AIN_B_IN_PLACE_MT), packed otherwise; stored
 * n x k (TRANS_B) it is always packed. Both must give the same bits: rows
 * in 14s and 8s and a rest, k over one step and over two, beta, bias and
 * ReLU, panels of 32 columns and a last one of 16 (packed both ways).
 */
TEST_F(gemm, b_in_place_keeps_bits)
{
	NEED_CPU();
	static const struct gemm_case cases[] = {
		C(64, 128, 128, 0, 1.0f),	/* a recurrent step's */
		C(64, 128, 32, VTPU_GEMM_BIAS, 0.0f),
		C(1, 32, 7, 0, 0.0f),
		C(13, 64, 300, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0.5f),
		C(22, 96, 257, 0, 0.0f),
		C(50, 256, 64, VTPU_GEMM_RELU, 0.0f),
		C(63, 80, 40, 0, 1.0f),
		C(65, 128, 128, 0, 0.0f),	/* packed both ways */
	};
#undef C
	if (variant->exec == EXEC_OPENBLAS)
		SKIP(return, "the engine's paths only");
	EXPECT_EQ(0, stored_keeps_bits(_metadata, self->cpu, cases,
				       sizeof(cases) / sizeof(cases[0]),
				       VTPU_GEMM_TRANS_B, 100));
}

/* Engine and OpenBLAS agree on a chain of GEMMs in one stream. */
TEST_F(gemm, chain_matches_openblas)
{
	NEED_CPU();
	enum { M = 130, K1 = 200, N1 = 150, N2 = 70 };
	struct vtpu_bo x, w1, h, w2, y, bias;
	struct vtpu_cpu *ref;
	float *y1;
	struct stream s;
	struct vtpu_cmd_gemm g1 = { 0 }, g2;
	struct vtpu_job job = { 0 };
	double maxd = 0;
	int run, i;

	ref = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_OPENBLAS);
	ASSERT_NE(NULL, ref);
	ASSERT_EQ(0, vtpu_cpu_bo_create(M * K1 * 4, &x));
	ASSERT_EQ(0, vtpu_cpu_bo_create(K1 * N1 * 4, &w1));
	ASSERT_EQ(0, vtpu_cpu_bo_create(M * N1 * 4, &h));
	ASSERT_EQ(0, vtpu_cpu_bo_create(N1 * N2 * 4, &w2));
	ASSERT_EQ(0, vtpu_cpu_bo_create(M * N2 * 4, &y));
	ASSERT_EQ(0, vtpu_cpu_bo_create(N1 * 4, &bias));
	fill_rand(x.map, M * K1);
	fill_rand(w1.map, K1 * N1);
	fill_rand(w2.map, N1 * N2);
	fill_rand(bias.map, N1);

	stream_init(&s);
	g1.hdr.opcode = VTPU_OP_GEMM;
	g1.hdr.size = sizeof(g1);
	g1.m = M, g1.n = N1, g1.k = K1;
	g1.flags = VTPU_GEMM_BIAS | VTPU_GEMM_RELU;
	g1.lda = K1, g1.ldb = N1, g1.ldc = N1;
	g1.alpha = f2u(1.0f);
	g1.a.buf = stream_use(&s, &x);
	g1.b.buf = stream_use(&s, &w1);
	g1.c.buf = stream_use(&s, &h);
	g1.bias.buf = stream_use(&s, &bias);
	g2 = g1;
	g2.n = N2, g2.k = N1;
	g2.flags = 0;
	g2.lda = N1, g2.ldb = N2, g2.ldc = N2;
	g2.a.buf = stream_use(&s, &h);
	g2.b.buf = stream_use(&s, &w2);
	g2.c.buf = stream_use(&s, &y);
	g2.bias.buf = 0;
	stream_add(&s, &g1);
	stream_add(&s, &g2);

	y1 = malloc(M * N2 * 4);
	for (run = 0; run < 2; run++) {
		ASSERT_EQ(0, vtpu_cpu_run(run ? self->cpu : ref, &s.cb, &job));
		if (!run)
			memcpy(y1, y.map, M * N2 * 4);
	}
	for (i = 0; i < M * N2; i++) {
		double d = fabs(((float *)y.map)[i] - y1[i]);

		if (d > maxd)
			maxd = d;
	}
	TH_LOG("two chained GEMMs vs OpenBLAS: maxdiff %.3g", maxd);
	EXPECT_LT(maxd, 1e-3);
	free(y1);
	vtpu_cpu_destroy(ref);
	vtpu_cpu_bo_destroy(&x);
	vtpu_cpu_bo_destroy(&w1);
	vtpu_cpu_bo_destroy(&h);
	vtpu_cpu_bo_destroy(&w2);
	vtpu_cpu_bo_destroy(&y);
	vtpu_cpu_bo_destroy(&bias);
}

/* ---- memory ops, and a stream the validator rejects -------------------- */

TEST(fill_copy_nop)
{
	enum { N = 100003 };
	struct vtpu_cpu *cpu = vtpu_cpu_create(2, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_cmd_fill f = { .hdr = { VTPU_OP_FILL, sizeof(f) } };
	struct vtpu_cmd_copy cp = { .hdr = { VTPU_OP_COPY, sizeof(cp) } };
	struct vtpu_cmd_hdr nop = { VTPU_OP_NOP, sizeof(nop) };
	struct vtpu_bo a, b;
	struct vtpu_job job = { 0 };
	struct stream s;
	float *fa, *fb;
	int i, bad = 0;

	ASSERT_NE(NULL, cpu);
	ASSERT_EQ(0, vtpu_cpu_bo_create(N * 4 + 8, &a));
	ASSERT_EQ(0, vtpu_cpu_bo_create(N * 4 + 8, &b));
	stream_init(&s);
	f.count = N;
	f.value = f2u(2.5f);
	f.dst.buf = stream_use(&s, &a);
	f.dst.offset = 4;
	cp.bytes = (uint64_t)N * 4;
	cp.dst.buf = stream_use(&s, &b);
	cp.src.buf = f.dst.buf;
	cp.src.offset = 4;
	stream_add(&s, &nop);
	stream_add(&s, &f);
	stream_add(&s, &nop);
	stream_add(&s, &cp);
	ASSERT_EQ(0, vtpu_cpu_run(cpu, &s.cb, &job));
	fa = a.map;
	fb = b.map;
	EXPECT_EQ(0.0f, fa[0]);
	EXPECT_EQ(0.0f, fa[N + 1]);
	for (i = 0; i < N; i++)
		bad += fa[i + 1] != 2.5f || fb[i] != 2.5f;
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0.0f, fb[N]);
	vtpu_cpu_bo_destroy(&a);
	vtpu_cpu_bo_destroy(&b);
	vtpu_cpu_destroy(cpu);
}

/*
 * The smaps entry of the mapping that holds @addr (the kernel may have
 * merged a buffer's mapping with a neighbour of the same flags): whether
 * there is one, and its THPeligible field (-1 if it has none).
 */
static bool smaps_of(const void *addr, int *thp_eligible)
{
	unsigned long a = (unsigned long)(uintptr_t)addr, lo, hi;
	bool in = false, found = false;
	char line[256];
	FILE *f = fopen("/proc/self/smaps", "r");

	*thp_eligible = -1;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = lo <= a && a < hi;
			found |= in;
		} else if (in && !strncmp(line, "THPeligible:", 12)) {
			*thp_eligible = atoi(line + 12);
		}
	}
	fclose(f);
	return found;
}

/*
 * The cpu backend's buffers of 2 MiB and more start on a 2 MiB boundary
 * and ask for transparent huge pages (MADV_HUGEPAGE): eligible for them
 * wherever the kernel's THP is not "never" (then they get 4 KiB pages).
 * Smaller ones do not ask (not eligible under the default "madvise").
 * Either way zeroed, writable to the last byte, and gone once destroyed.
 */
TEST(large_buffers_huge_pages)
{
	static const uint64_t sizes[] = { 4096, 100000, (2u << 20) - 4096,
					  2u << 20, (6u << 20) + 12345 };
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	bool thp = f && fgets(mode, sizeof(mode), f) && !strstr(mode, "[never]");
	unsigned int i;

	if (f)
		fclose(f);
	mode[strcspn(mode, "\n")] = '\0';
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct vtpu_bo bo;
		uint64_t j, nonzero = 0;
		bool huge = sizes[i] >= (2u << 20);
		uint8_t *p;
		int elig;

		ASSERT_EQ(0, vtpu_cpu_bo_create(sizes[i], &bo));
		p = bo.map;
		EXPECT_EQ(0u, bo.size % 4096);
		EXPECT_LE(sizes[i], bo.size);
		EXPECT_EQ(0u, (uintptr_t)p % (huge ? 2u << 20 : 4096));
		for (j = 0; j < bo.size; j += 64)
			nonzero += p[j] != 0;
		EXPECT_EQ(0u, nonzero);
		p[bo.size - 1] = 1;
		ASSERT_TRUE(smaps_of(p, &elig));
		/* (with THP "always" the kernel may offer a small one too) */
		if (thp && elig >= 0 && (huge || strstr(mode, "[madvise]")))
			EXPECT_EQ(huge ? 1 : 0, elig)
		TH_LOG("%llu bytes at %p: THPeligible %d (THP: %s)",
		       (unsigned long long)sizes[i], (void *)p, elig, mode);
		vtpu_cpu_bo_destroy(&bo);
		EXPECT_FALSE(smaps_of(p, &elig));
	}
}

TEST(rejected_stream)
{
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_cmd_fill f = { .hdr = { VTPU_OP_FILL, sizeof(f) } };
	struct vtpu_cmd_hdr nop = { VTPU_OP_NOP, sizeof(nop) };
	struct vtpu_bo a;
	struct vtpu_job job = { 0 };
	struct stream s;

	ASSERT_NE(NULL, cpu);
	ASSERT_EQ(0, vtpu_cpu_bo_create(4096, &a));
	stream_init(&s);
	f.count = 1025; /* one element past the buffer */
	f.dst.buf = stream_use(&s, &a);
	stream_add(&s, &nop);
	stream_add(&s, &f);
	EXPECT_EQ(-EINVAL, vtpu_cpu_run(cpu, &s.cb, &job));
	EXPECT_EQ(1, job.error.cmd);
	EXPECT_EQ(8, job.error.offset);
	EXPECT_EQ(VTPU_OPERAND_DST, job.error.operand);
	EXPECT_EQ(VTPU_ERR_OUT_OF_BOUNDS, job.error.reason);
	vtpu_cpu_bo_destroy(&a);

	/* an empty stream: refused as VTPU_IOCTL_SUBMIT refuses it */
	stream_init(&s);
	EXPECT_EQ(-EINVAL, vtpu_cpu_run(cpu, &s.cb, &job));
	vtpu_cpu_destroy(cpu);
}

TEST(simd_levels)
{
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);

	ASSERT_NE(NULL, cpu);
	TH_LOG("best SIMD level here: %d", vtpu_cpu_simd(cpu));
	EXPECT_GE(vtpu_cpu_simd(cpu), VTPU_SIMD_SCALAR);
	vtpu_cpu_destroy(cpu);
	EXPECT_EQ(NULL, vtpu_cpu_create(1, 7, VTPU_CPU_GEMM_ENGINE));
	EXPECT_EQ(NULL, vtpu_cpu_create(1, 0, 9));
}

/*
 * libvtpu loads OpenBLAS only for VTPU_CPU_GEMM_OPENBLAS (openblas.c).
 * When it cannot (here $VTPU_OPENBLAS names a library that is not there),
 * such an executor is refused with ENOENT, the reason names the library,
 * and the engine's executors do not care. Each TEST runs in a process of
 * its own: nothing has tried to load OpenBLAS in this one yet.
 */
TEST(openblas_missing_is_named)
{
	const char *lib = "/nonexistent/libvtpu-test-openblas.so.0";
	struct vtpu_cpu *cpu;
	const char *why;

	ASSERT_EQ(0, setenv("VTPU_OPENBLAS", lib, 1));
	errno = 0;
	cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_OPENBLAS);
	EXPECT_EQ(NULL, cpu);
	EXPECT_EQ(ENOENT, errno);
	if (cpu)
		vtpu_cpu_destroy(cpu);
	why = vtpu_cpu_openblas();
	ASSERT_NE(NULL, why);
	TH_LOG("%s", why);
	EXPECT_NE(NULL, strstr(why, lib));
	/* it is not retried with every executor: the same answer */
	EXPECT_EQ(why, vtpu_cpu_openblas());

	cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	ASSERT_NE(NULL, cpu);
	vtpu_cpu_destroy(cpu);
}

/* Without $VTPU_OPENBLAS, libopenblas.so.0 loads (the test's premise). */
TEST(openblas_loads)
{
	struct vtpu_cpu *cpu;

	unsetenv("VTPU_OPENBLAS");
	EXPECT_EQ(NULL, vtpu_cpu_openblas()) TH_LOG("%s", vtpu_cpu_openblas());
	cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_OPENBLAS);
	ASSERT_NE(NULL, cpu);
	vtpu_cpu_destroy(cpu);
}

/*
 * One call of vtpu_engine_op_run() is bounded work (vtpu_engine.h): the
 * module runs each in one kernel_fpu section, without preemption. Big
 * GEMMs and convolutions of every kind, on every level's kernels, must
 * split into (tile, step) calls of at most CALL_FLOPS_MAX flops (as
 * op->flops counts them: 2 m n k, whatever the algorithm), about a
 * millisecond with AVX-512. Only prepared, not run.
 */
/*
 * A worker's tiles of one packed GEMM that share their columns pack B
 * once (struct vtpu_gemm_memo). The next GEMM, the same command on the
 * same buffers after B has changed, must pack B again: its C must be the
 * bits a fresh executor computes from the new B. Two tiles of A^T B (a
 * weight gradient) share B on one worker; on two or three, tiles meet
 * again in the second GEMM. Every level's packed kernel.
 */
TEST(packed_b_kept_within_one_op)
{
	enum { M = 300, N = 96, K = 128 };
	struct vtpu_bo a, b, b2, c1, c2;
	struct vtpu_cmd_copy cp = { .hdr = { VTPU_OP_COPY, sizeof(cp) } };
	struct vtpu_cmd_gemm g = { .hdr = { VTPU_OP_GEMM, sizeof(g) } };
	float *want1 = malloc(M * N * 4), *want2 = malloc(M * N * 4);
	float *b0 = malloc(K * N * 4);
	static const int threads[] = { 1, 2, 3 };
	int simd, t, ran = 0;
	struct stream s, one;

	ASSERT_NE(NULL, want1);
	ASSERT_NE(NULL, want2);
	ASSERT_NE(NULL, b0);
	ASSERT_EQ(0, vtpu_cpu_bo_create(K * M * 4, &a));
	ASSERT_EQ(0, vtpu_cpu_bo_create(K * N * 4, &b));
	ASSERT_EQ(0, vtpu_cpu_bo_create(K * N * 4, &b2));
	ASSERT_EQ(0, vtpu_cpu_bo_create(M * N * 4, &c1));
	ASSERT_EQ(0, vtpu_cpu_bo_create(M * N * 4, &c2));
	fill_rand(a.map, K * M);
	fill_rand(b0, K * N);
	fill_rand(b2.map, K * N);

	/* C1 = A^T B; B = B2; C2 = A^T B */
	stream_init(&s);
	g.m = M, g.n = N, g.k = K;
	g.flags = VTPU_GEMM_TRANS_A;
	g.lda = M, g.ldb = N, g.ldc = N;
	g.alpha = f2u(1.0f);
	g.a.buf = stream_use(&s, &a);
	g.b.buf = stream_use(&s, &b);
	g.c.buf = stream_use(&s, &c1);
	stream_add(&s, &g);
	cp.bytes = K * N * 4;
	cp.dst.buf = g.b.buf;
	cp.src.buf = stream_use(&s, &b2);
	stream_add(&s, &cp);
	g.c.buf = stream_use(&s, &c2);
	stream_add(&s, &g);
	/* the GEMM alone, on a fresh executor */
	stream_init(&one);
	g.a.buf = stream_use(&one, &a);
	g.b.buf = stream_use(&one, &b);
	g.c.buf = stream_use(&one, &c1);
	stream_add(&one, &g);

	for (simd = VTPU_SIMD_SCALAR; simd <= VTPU_SIMD_AVX512; simd++) {
		for (t = 0; t < 3; t++) {
			struct vtpu_cpu *cpu;
			struct vtpu_job job = { 0 };
			int src;

			/* want1 from B as it was, want2 from B2 */
			for (src = 0; src < 2; src++) {
				cpu = vtpu_cpu_create(threads[t], simd,
						      VTPU_CPU_GEMM_ENGINE);
				if (!cpu && errno == EOPNOTSUPP)
					goto next_level;
				ASSERT_NE(NULL, cpu);
				memcpy(b.map, src ? b2.map : b0, K * N * 4);
				ASSERT_EQ(0, vtpu_cpu_run(cpu, &one.cb, &job));
				memcpy(src ? want2 : want1, c1.map, M * N * 4);
				vtpu_cpu_destroy(cpu);
			}
			cpu = vtpu_cpu_create(threads[t], simd,
					      VTPU_CPU_GEMM_ENGINE);
			ASSERT_NE(NULL, cpu);
			memcpy(b.map, b0, K * N * 4);
			ASSERT_EQ(0, vtpu_cpu_run(cpu, &s.cb, &job));
			vtpu_cpu_destroy(cpu);
			EXPECT_EQ(0, memcmp(want1, c1.map, M * N * 4))
				TH_LOG("level %d, %d threads: the first GEMM",
				       simd, threads[t]);
			EXPECT_EQ(0, memcmp(want2, c2.map, M * N * 4))
				TH_LOG("level %d, %d threads: the second GEMM "
				       "used the first one's B", simd,
				       threads[t]);
			ran++;
		}
next_level:;
	}
	TH_LOG("%d runs", ran);
	EXPECT_LE(2, ran);
	vtpu_cpu_bo_destroy(&a);
	vtpu_cpu_bo_destroy(&b);
	vtpu_cpu_bo_destroy(&b2);
	vtpu_cpu_bo_destroy(&c1);
	vtpu_cpu_bo_destroy(&c2);
	free(want1);
	free(want2);
	free(b0);
}

/*
 * How many workers share a GEMM changes its tiles (plain GEMMs want two
 * per worker), never its bits: each element is summed the same way
 * whichever tile holds it. Every path the planner can pick (A read in
 * place, packed, narrow, A^T B with few rows, the 8-row microtile, B
 * transposed, bias + ReLU, beta) on every SIMD level, on 1 to 9 threads.
 */
TEST(tiling_keeps_bits)
{
	static const struct { uint32_t m, n, k, flags; float beta; } cases[] = {
		{ 128, 512, 784, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0 },
		{ 784, 512, 128, VTPU_GEMM_TRANS_A, 0 },
		{ 128, 512, 512, VTPU_GEMM_TRANS_B, 0 },
		{ 301, 803, 270, VTPU_GEMM_BIAS, 0.5f },
		{ 1000, 10, 300, 0, 0 },
		{ 16, 700, 900, VTPU_GEMM_TRANS_A, 0 },
		{ 50, 200, 600, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B, 1 },
		/* K split into parts (gemm.c) */
		{ 64, 64, 9000, VTPU_GEMM_TRANS_A, 0 },
		{ 16, 100, 20000, 0, 1 },
		/* a weight gradient's columns split on 2+ workers */
		{ 64, 130, 8448, VTPU_GEMM_TRANS_A, 0.5f },
		/*
		 * column tiles as many as the workers, each within
		 * VTPU_GEMM_NT_MAX: A packed (rows 4 KiB apart); A in
		 * place with 5 rows past the 8-row microtile (copied
		 * after B's block in the scratch), B transposed
		 */
		{ 64, 512, 4096, 0, 0 },
		{ 13, 1536, 256, 0, 0 },
		{ 13, 1536, 256, VTPU_GEMM_TRANS_B, 0 },
		/*
		 * 3 x 3 tiles of 4 steps, A packed: on one worker, tiles
		 * that sweep the three row tiles of a column (gemm.c), the
		 * bias and ReLU on each row tile's last step
		 */
		{ 800, 1100, 1024, VTPU_GEMM_BIAS | VTPU_GEMM_RELU, 0 },
	};
	static const int threads[] = { 1, 2, 3, 4, 9 };
	const int nthreads = sizeof(threads) / sizeof(threads[0]);
	int simd, t, i, differ = 0, ran = 0;

	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		uint32_t m = cases[i].m, n = cases[i].n, k = cases[i].k;
		size_t asz = (size_t)m * k, bsz = (size_t)k * n, csz = (size_t)m * n;
		struct vtpu_bo a, b, c, bias;
		float *c0 = malloc(csz * 4), *keep = malloc(csz * 4);
		struct vtpu_cmdbuf cb;

		ASSERT_NE(NULL, c0);
		ASSERT_NE(NULL, keep);
		ASSERT_EQ(0, vtpu_cpu_bo_create(asz * 4, &a));
		ASSERT_EQ(0, vtpu_cpu_bo_create(bsz * 4, &b));
		ASSERT_EQ(0, vtpu_cpu_bo_create(csz * 4, &c));
		ASSERT_EQ(0, vtpu_cpu_bo_create(n * 4, &bias));
		fill_rand(a.map, asz);
		fill_rand(b.map, bsz);
		fill_rand(bias.map, n);
		fill_rand(c0, csz);
		vtpu_cmdbuf_init(&cb);
		ASSERT_EQ(0, vtpu_cmdbuf_gemm(&cb, &(struct vtpu_gemm_desc){
			.m = m, .n = n, .k = k, .flags = cases[i].flags,
			.dtype = VTPU_DTYPE_F32, .alpha = 1,
			.beta = cases[i].beta,
			.a_buf = vtpu_cmdbuf_use(&cb, &a),
			.b_buf = vtpu_cmdbuf_use(&cb, &b),
			.c_buf = vtpu_cmdbuf_use(&cb, &c),
			.bias_buf = (cases[i].flags & VTPU_GEMM_BIAS) ?
					    vtpu_cmdbuf_use(&cb, &bias) : 0 }));
		for (simd = VTPU_SIMD_SCALAR; simd <= VTPU_SIMD_AVX512; simd++) {
			for (t = 0; t < nthreads; t++) {
				struct vtpu_cpu *cpu =
					vtpu_cpu_create(threads[t], simd,
							VTPU_CPU_GEMM_ENGINE);
				struct vtpu_job job = { 0 };

				if (!cpu && errno == EOPNOTSUPP)
					break;
				ASSERT_NE(NULL, cpu);
				memcpy(c.map, c0, csz * 4);
				ASSERT_EQ(0, vtpu_cpu_run(cpu, &cb, &job));
				vtpu_cpu_destroy(cpu);
				ran++;
				if (t == 0) {
					memcpy(keep, c.map, csz * 4);
				} else if (memcmp(keep, c.map, csz * 4)) {
					TH_LOG("%ux%ux%u flags %#x, level %d: "
					       "%d threads differ from 1",
					       m, n, k, cases[i].flags, simd,
					       threads[t]);
					differ++;
				}
			}
		}
		vtpu_cmdbuf_fini(&cb);
		vtpu_cpu_bo_destroy(&a);
		vtpu_cpu_bo_destroy(&b);
		vtpu_cpu_bo_destroy(&c);
		vtpu_cpu_bo_destroy(&bias);
		free(c0);
		free(keep);
	}
	TH_LOG("%d runs", ran);
	EXPECT_EQ(0, differ);
}

/*
 * The pool's hand-over (backend_cpu.c): a chain of commands of several
 * tiles each, x += 1 four hundred times over 96K floats, run again and
 * again with pauses of up to 0.6 ms between runs, so that helpers are
 * sometimes spinning, sometimes asleep (past CPU_SPIN_NS) and woken, and
 * sometimes arrive after the caller has taken every tile (their slot is
 * then withdrawn). Every run must give exactly x0 + 400; executors are
 * destroyed right after a run, with their helpers in any of those states.
 */
TEST(pool_hand_over)
{
	static const int threads[] = { 2, 3, 4, 9 };
	const uint64_t n = 96 * 1024, chain = 400;
	struct vtpu_bo x, one;
	struct vtpu_cmdbuf cb;
	uint64_t i, bad = 0, runs = 0;
	int t, r;

	ASSERT_EQ(0, vtpu_cpu_bo_create(n * 4, &x));
	ASSERT_EQ(0, vtpu_cpu_bo_create(n * 4, &one));
	for (i = 0; i < n; i++)
		((float *)one.map)[i] = 1.0f;
	vtpu_cmdbuf_init(&cb);
	for (i = 0; i < chain; i++) {
		uint32_t xb = vtpu_cmdbuf_use(&cb, &x);

		ASSERT_EQ(0, vtpu_cmdbuf_elementwise(
				     &cb, VTPU_EW_ADD, n, 0, 0, VTPU_REF(xb, 0),
				     VTPU_REF(vtpu_cmdbuf_use(&cb, &one), 0),
				     VTPU_REF(xb, 0)));
	}
	rng_state = 88172645463325252ull;
	for (t = 0; t < (int)(sizeof(threads) / sizeof(threads[0])); t++) {
		for (r = 0; r < 6; r++) {
			struct vtpu_cpu *cpu = vtpu_cpu_create(
				threads[t], -1, VTPU_CPU_GEMM_ENGINE);
			int k;

			ASSERT_NE(NULL, cpu);
			for (k = 0; k < 8; k++) {
				struct vtpu_job job = { 0 };

				for (i = 0; i < n; i++)
					((float *)x.map)[i] = (float)(i % 1000);
				ASSERT_EQ(0, vtpu_cpu_run(cpu, &cb, &job));
				for (i = 0; i < n; i++)
					bad += ((float *)x.map)[i] !=
					       (float)(i % 1000 + chain);
				runs++;
				usleep((useconds_t)((frand() + 1.0f) * 300));
			}
			vtpu_cpu_destroy(cpu);
		}
	}
	TH_LOG("%llu runs of %llu commands", (unsigned long long)runs,
	       (unsigned long long)chain);
	EXPECT_EQ(0, bad);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_bo_destroy(&x);
	vtpu_cpu_bo_destroy(&one);
}

/* Float @i of region @k (@r bytes each) of a snapshot. */
static float at(const uint8_t *snap, int k, uint64_t r, uint32_t i)
{
	float f;

	memcpy(&f, snap + k * r + (uint64_t)i * 4, sizeof(f));
	return f;
}

/*
 * The element-wise ops (ELEMENTWISE, CAST, DROPOUT, SGD, ADAM) and column
 * sums share their tiles out by the number of workers (vtpu_ops_tile()),
 * never changing a bit: one stream of each, on sizes that one, two, three
 * and more workers tile differently, on 1 to 9 threads, compared whole.
 */
TEST(ops_tiling_keeps_bits)
{
	static const uint32_t counts[] = { 65536, 100003, 669706 };
	static const int threads[] = { 1, 2, 3, 4, 9 };
	const int nthreads = sizeof(threads) / sizeof(threads[0]);
	int c, t, differ = 0;

	for (c = 0; c < (int)(sizeof(counts) / sizeof(counts[0])); c++) {
		uint32_t n = counts[c], m = 128, cols = n / m, i, kept;
		uint64_t r = ((uint64_t)n + 15) / 16 * 16 * 4; /* a region */
		struct vtpu_cmd_elementwise add = {
			.hdr = { VTPU_OP_ELEMENTWISE, sizeof(add) },
			.op = VTPU_EW_ADD, .count = n,
		};
		struct vtpu_cmd_elementwise rg = {
			.hdr = { VTPU_OP_ELEMENTWISE, sizeof(rg) },
			.op = VTPU_EW_RELU_GRAD, .count = n,
		};
		struct vtpu_cmd_cast cast = {
			.hdr = { VTPU_OP_CAST, sizeof(cast) },
			.mode = VTPU_CAST_U8_TO_F32, .count = n,
			.scale = f2u(1.0f / 255), .shift = f2u(-0.5f),
		};
		struct vtpu_cmd_adam_step as = {
			.hdr = { VTPU_OP_ADAM_STEP, sizeof(as) },
			.beta1 = f2u(0.9f), .beta2 = f2u(0.999f),
		};
		struct vtpu_cmd_adam adam = {
			.hdr = { VTPU_OP_ADAM, sizeof(adam) }, .count = n,
			.lr = f2u(1e-3f), .beta1 = f2u(0.9f),
			.beta2 = f2u(0.999f), .eps = f2u(1e-7f),
			.weight_decay = f2u(1e-4f),
		};
		struct vtpu_cmd_sgd sgd = {
			.hdr = { VTPU_OP_SGD, sizeof(sgd) }, .count = n,
			.lr = f2u(0.01f), .momentum = f2u(0.9f),
			.flags = VTPU_SGD_NESTEROV,
		};
		struct vtpu_cmd_dropout drop = {
			.hdr = { VTPU_OP_DROPOUT, sizeof(drop) }, .count = n,
			.rate = f2u(0.3f), .seed = 7,
		};
		struct vtpu_cmd_reduce rc = {
			.hdr = { VTPU_OP_REDUCE, sizeof(rc) },
			.op = VTPU_REDUCE_COLS, .m = m, .n = cols, .ldx = cols,
			.alpha = f2u(1.0f),
		};
		struct vtpu_cmd_reduce rr = rc;
		struct vtpu_bo bo;
		struct stream s;
		uint8_t *keep, *in;
		float *f;

		ASSERT_EQ(0, vtpu_cpu_bo_create(17 * r, &bo));
		keep = malloc(17 * r);
		in = malloc(17 * r);
		ASSERT_NE(NULL, keep);
		ASSERT_NE(NULL, in);
		stream_init(&s);
		/* regions: 0 x, 1 y, 6 p, 7 g, 8 m, 9 v, 10 p', 11 mom in */
		for (i = 0; i < 12; i++)
			fill_rand((float *)((uint8_t *)bo.map + i * r), n);
		f = (float *)((uint8_t *)bo.map + 9 * r);
		for (i = 0; i < n; i++)
			f[i] = fabsf(f[i]);
		for (i = 0; i < n; i++)
			((uint8_t *)bo.map + 4 * r)[i] = (uint8_t)(i * 7919);
#define REGION(o, k) ((o).buf = stream_use(&s, &bo), (o).offset = (k) * r)
		REGION(add.x, 0), REGION(add.y, 1), REGION(add.z, 2);
		REGION(rg.x, 0), REGION(rg.y, 1), REGION(rg.z, 3);
		REGION(cast.src, 4), REGION(cast.dst, 5);
		REGION(as.state, 16);
		REGION(adam.param, 6), REGION(adam.grad, 7);
		REGION(adam.m, 8), REGION(adam.v, 9), REGION(adam.state, 16);
		REGION(sgd.param, 10), REGION(sgd.grad, 7), REGION(sgd.mom, 11);
		REGION(drop.x, 0), REGION(drop.z, 12), REGION(drop.mask, 13);
		REGION(drop.step, 16);
		drop.step.offset += 64;
		REGION(rc.x, 1), REGION(rc.y, 14);
		rr.op = VTPU_REDUCE_ROWS;
		REGION(rr.x, 1), REGION(rr.y, 15);
#undef REGION
		stream_add(&s, &add);
		stream_add(&s, &rg);
		stream_add(&s, &cast);
		stream_add(&s, &as);
		stream_add(&s, &adam);
		stream_add(&s, &sgd);
		stream_add(&s, &drop);
		stream_add(&s, &rc);
		stream_add(&s, &rr);
		memcpy(in, bo.map, 17 * r);
		for (t = 0; t < nthreads; t++) {
			struct vtpu_cpu *cpu = vtpu_cpu_create(
				threads[t], -1, VTPU_CPU_GEMM_ENGINE);
			struct vtpu_job job = { 0 };

			ASSERT_NE(NULL, cpu);
			memcpy(bo.map, in, 17 * r);
			ASSERT_EQ(0, vtpu_cpu_run(cpu, &s.cb, &job));
			vtpu_cpu_destroy(cpu);
			if (t == 0) {
				memcpy(keep, bo.map, 17 * r);
			} else if (memcmp(keep, bo.map, 17 * r)) {
				TH_LOG("%u elements: %d threads differ from 1",
				       n, threads[t]);
				differ++;
			}
		}
		/* the ops ran, to their last element */
		EXPECT_EQ(at(in, 0, r, n - 1) + at(in, 1, r, n - 1),
			  at(keep, 2, r, n - 1));
		EXPECT_EQ((float)in[4 * r + n - 1] * (1.0f / 255) - 0.5f,
			  at(keep, 5, r, n - 1));
		EXPECT_NE(at(in, 6, r, n - 1), at(keep, 6, r, n - 1));
		EXPECT_NE(at(in, 10, r, n - 1), at(keep, 10, r, n - 1));
		/* dropout's last 1024: about 70% kept, z = x * mask */
		for (i = n - 1024, kept = 0; i < n; i++) {
			float mk = at(keep, 13, r, i);

			kept += mk != 0.0f;
			EXPECT_TRUE(mk == 0.0f || mk == 1.0f / (1.0f - 0.3f));
			EXPECT_EQ(at(in, 0, r, i) * mk, at(keep, 12, r, i));
		}
		EXPECT_LT(600u, kept);
		EXPECT_GT(830u, kept);
		EXPECT_NE(0.0f, at(keep, 14, r, cols - 1));
		EXPECT_NE(0.0f, at(keep, 15, r, m - 1));
		free(in);
		free(keep);
		vtpu_cpu_bo_destroy(&bo);
	}
	EXPECT_EQ(0, differ);
}

#define CALL_FLOPS_MAX (128ull << 20)

/*
 * A dense layer's GEMM, f32 with A stored m x k, reads A in place on
 * AVX-512 and splits only its columns while tiles keep 64 of them: two
 * tiles per worker, each of all rows. On three workers (the module's two
 * cores and its dispatcher) 512 columns make six tiles of 96 columns:
 * the planner must look at the tiles it will really make (whole
 * microtiles of 32 columns), not at the ones it asked for (five of 103,
 * which are four of 128, after which it split the rows). Only prepared.
 */
/*
 * B in panels is read where it is stored by the AVX-512 kernel that
 * broadcasts from A's stored rows (a plain f32 GEMM), and operands are
 * only 4-byte aligned: its loads must assume no more (they assumed 64
 * bytes, and B's panels at a 12-byte offset were a general protection
 * fault: in the kernel, an oops any client could cause). B in panels at
 * byte offsets 4..60, m = 4 (A's rows copied to the scratch first) and
 * m = 22 (14 rows read in place, then 8): the bits of B row-major.
 */
TEST(panels_read_in_place_unaligned)
{
	enum { N = 64, K = 20, MMAX = 22 };
	static const uint32_t ms[] = { 4, 22 };
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_bo a, b, bp, c;
	uint32_t off, mi, i, p, j, bad = 0;
	float *fa, *fb, *fp, *fc;

	ASSERT_NE(NULL, cpu);
	ASSERT_EQ(0, vtpu_cpu_bo_create(MMAX * K * 4, &a));
	ASSERT_EQ(0, vtpu_cpu_bo_create(K * N * 4, &b));
	ASSERT_EQ(0, vtpu_cpu_bo_create(K * N * 4 + 64, &bp));
	ASSERT_EQ(0, vtpu_cpu_bo_create(2 * MMAX * N * 4, &c));
	fa = a.map;
	fb = b.map;
	fc = c.map;
	for (i = 0; i < MMAX * K; i++)
		fa[i] = (float)((i * 7) % 13) - 6.0f;
	for (i = 0; i < K * N; i++)
		fb[i] = (float)((i * 5) % 11) / 4.0f - 1.0f;
	for (off = 4; off < 64; off += 8) {
		fp = (float *)((uint8_t *)bp.map + off);
		for (p = 0; p < K; p++)
			for (j = 0; j < N; j++)
				fp[((j / 32) * K + p) * 32 + j % 32] = fb[p * N + j];
		for (mi = 0; mi < 2; mi++) {
			struct vtpu_cmd_gemm g = {
				.hdr = { VTPU_OP_GEMM, sizeof(g) },
				.m = ms[mi], .n = N, .k = K, .lda = K,
				.ldb = N, .ldc = N, .dtype = VTPU_DTYPE_F32,
				.alpha = f2u(1.0f),
			};
			struct vtpu_job job = { 0 };
			struct stream s;

			stream_init(&s);
			g.a.buf = stream_use(&s, &a);
			g.b.buf = stream_use(&s, &b);
			g.c.buf = stream_use(&s, &c);
			stream_add(&s, &g);
			g.flags = VTPU_GEMM_B_PANELS;
			g.b = (struct vtpu_operand){ stream_use(&s, &bp), 0, off };
			g.c.offset = MMAX * N * 4;
			stream_add(&s, &g);
			ASSERT_EQ(0, vtpu_cpu_run(cpu, &s.cb, &job));
			bad += memcmp(fc, fc + MMAX * N, ms[mi] * N * 4) != 0;
		}
	}
	TH_LOG("B in panels at offsets 4..60, simd level %d: %u differ",
	       vtpu_cpu_simd(cpu), bad);
	EXPECT_EQ(0, bad);
	vtpu_cpu_bo_destroy(&a);
	vtpu_cpu_bo_destroy(&b);
	vtpu_cpu_bo_destroy(&bp);
	vtpu_cpu_bo_destroy(&c);
	vtpu_cpu_destroy(cpu);
}

/*
 * @op: a GEMM of @m x @n x @k with @flags, f32, prepared for AVX-512 on
 * @workers workers (its operands at a dummy buffer: not run). Return: 0
 * or the builder's -errno.
 */
static int prepare_gemm(struct vtpu_engine_op *op, uint32_t m, uint32_t n,
			uint32_t k, uint32_t flags, uint32_t workers)
{
	static uint8_t dummy[64];
	struct vtpu_engine_buf bufs[3];
	struct vtpu_cmdbuf cb;
	uint32_t i, pos = 0;
	int ret;

	for (i = 0; i < 3; i++)
		bufs[i] = (struct vtpu_engine_buf){ dummy, sizeof(dummy) };
	vtpu_cmdbuf_init(&cb);
	ret = vtpu_cmdbuf_gemm(&cb, &(struct vtpu_gemm_desc){
		.m = m, .n = n, .k = k, .flags = flags,
		.dtype = VTPU_DTYPE_F32, .alpha = 1,
		.a_buf = 0, .b_buf = 1, .c_buf = 2 });
	if (!ret)
		vtpu_engine_op_prepare(op, vtpu_engine_next(cb.data, cb.size,
							    &pos),
				       bufs, VTPU_SIMD_AVX512, workers);
	vtpu_cmdbuf_fini(&cb);
	return ret;
}

TEST(dense_tiles_split_columns)
{
	static const uint32_t ks[] = { 784, 512 };
	uint32_t w, i;

	for (i = 0; i < 2; i++) {
		for (w = 1; w <= 3; w++) {
			struct vtpu_engine_op op;

			ASSERT_EQ(0, prepare_gemm(&op, 128, 512, ks[i], 0, w));
			EXPECT_EQ(2 * w, op.ntiles)
			TH_LOG("128x512x%u on %u workers: %u tiles", ks[i], w,
			       op.ntiles);
			EXPECT_LE(128u, op.gemm.mt)
			TH_LOG("128x512x%u on %u workers: tiles of %u rows",
			       ks[i], w, op.gemm.mt);
		}
	}
}

/*
 * A dense layer's GEMM whose tile loop stopped between the workers and
 * twice them takes as many tiles as workers (cifar10's 64 x 512 x 4096,
 * A packed: 3 tiles on 2 workers had been two rounds), never a tile
 * wider than VTPU_GEMM_NT_MAX columns (13 x 1536: 3 tiles of 512 stay
 * 3).
 */
TEST(dense_tiles_match_workers)
{
	struct vtpu_engine_op op;

	ASSERT_EQ(0, prepare_gemm(&op, 64, 512, 4096, 0, 2));
	EXPECT_EQ(2u, op.ntiles);
	ASSERT_EQ(0, prepare_gemm(&op, 64, 512, 4096, 0, 1));
	EXPECT_EQ(2u, op.ntiles);
	ASSERT_EQ(0, prepare_gemm(&op, 13, 1536, 256, 0, 2));
	EXPECT_EQ(3u, op.ntiles);
	EXPECT_GE(512u, op.gemm.nt);
}

/*
 * A weight gradient's product with a small C and a long K splits K into
 * parts (gemm.c: a tile or two would keep one worker busy and the others
 * waiting), as many as the shape says whatever the workers; a short K, an
 * epilogue or a C too large for the op's workspace does not.
 */
TEST(gemm_splits_long_k)
{
	static const struct {
		uint32_t m, n, k, flags, parts;
	} cases[] = {
		{ 64, 64, 65536, VTPU_GEMM_TRANS_A, 2 },
		{ 32, 64, 65536, VTPU_GEMM_TRANS_A, 2 },
		{ 16, 64, 65536, VTPU_GEMM_TRANS_A, 4 },
		{ 64, 64, 9000, 0, 2 },
		{ 64, 64, 8191, VTPU_GEMM_TRANS_A, 0 },
		{ 64, 128, 65536, VTPU_GEMM_TRANS_A, 0 },
		{ 64, 64, 65536, VTPU_GEMM_TRANS_A | VTPU_GEMM_RELU, 0 },
	};
	uint32_t w, i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (w = 1; w <= 3; w++) {
			struct vtpu_engine_op op;

			ASSERT_EQ(0, prepare_gemm(&op, cases[i].m, cases[i].n,
						  cases[i].k, cases[i].flags,
						  w));
			EXPECT_EQ(cases[i].parts, op.gemm.ksplit)
			TH_LOG("%ux%ux%u flags %#x on %u workers: K in %u parts",
			       cases[i].m, cases[i].n, cases[i].k,
			       cases[i].flags, w, op.gemm.ksplit);
			if (cases[i].parts) {
				EXPECT_EQ(2u, op.nphases);
				EXPECT_EQ(op.phase_end[0] + 1, op.ntiles);
			}
		}
	}
}

/* Elements an embedding op's call touches, at most (VTPU_OPS_CHUNK). */
#define EMB_CALL_MAX 65536u

/*
 * A gather (AVGPOOL_GRAD, MAXPOOL_GRAD, COL2IM) walks, for each pixel, the
 * taps of the windows that may cover it: no more than there are windows.
 * A global pool (a 64 x 64 window at stride 1, one window) has one tap a
 * pixel, so it runs as one step; counted as 64 x 64 taps it ran in 16
 * steps, each walking them, 15 times its forward's time. A 40 x 40
 * window over 42 x 42 (3 x 3 windows) has 9.
 */
TEST(gather_taps_bounded_by_windows)
{
	static uint8_t dummy[64];
	struct vtpu_engine_buf bufs[3];
	struct vtpu_window glob = { .n = 2, .h = 64, .w = 64, .c = 64,
				    .kh = 64, .kw = 64, .stride_h = 1,
				    .stride_w = 1 };
	struct vtpu_window three = { .n = 1, .h = 42, .w = 42, .c = 8,
				     .kh = 40, .kw = 40, .stride_h = 1,
				     .stride_w = 1 };
	const struct vtpu_cmd_hdr *cmd;
	struct vtpu_cmdbuf cb;
	uint32_t pos = 0, b, cmds = 0;

	vtpu_cmdbuf_init(&cb);
	ASSERT_EQ(0, vtpu_cmdbuf_avgpool_grad(&cb, &glob, 1, 1,
					      VTPU_REF(0, 0), VTPU_REF(1, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_maxpool_grad(&cb, &glob, VTPU_REF(0, 0),
					      VTPU_REF(1, 0), VTPU_REF(2, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_col2im(&cb, &glob, VTPU_REF(0, 0),
					VTPU_REF(1, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_avgpool_grad(&cb, &three, 3, 3,
					      VTPU_REF(0, 0), VTPU_REF(1, 0)));
	ASSERT_EQ(0, cb.error);
	for (b = 0; b < 3; b++)
		bufs[b] = (struct vtpu_engine_buf){ dummy, sizeof(dummy) };
	while ((cmd = vtpu_engine_next(cb.data, cb.size, &pos))) {
		struct vtpu_engine_op op;
		uint64_t taps = cmds < 3 ? 1 : 9;

		vtpu_engine_op_prepare(&op, cmd, bufs, VTPU_SIMD_AVX512, 1);
		EXPECT_EQ(1, op.nsteps);
		/* each pixel's taps, all in its step */
		EXPECT_EQ(taps, op.conv.win.span);
		cmds++;
	}
	EXPECT_EQ(4, cmds);
	vtpu_cmdbuf_fini(&cb);
}

/* The most tanh one call of an ADDITIVE_SCORE(_GRAD) computes. */
static uint64_t additive_call(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_additive *a = &op->add;
	uint64_t u = a->units, w = u < 64 ? u : 64, m;

	if (!a->grad)
		return a->per * u;
	m = (uint64_t)a->rows[0] * a->tk * u;
	if ((uint64_t)a->rows[1] * a->tq * u > m)
		m = (uint64_t)a->rows[1] * a->tq * u;
	if ((uint64_t)a->rows[2] * a->tk * w > m)
		m = (uint64_t)a->rows[2] * a->tk * w;
	return m;
}

TEST(calls_bounded)
{
	static const struct { uint32_t m, n, k, flags, dtype; } gemms[] = {
		{ 4096, 4096, 4096, 0, VTPU_DTYPE_F32 },
		{ 4096, 4096, 4096, VTPU_GEMM_TRANS_A, VTPU_DTYPE_F32 },
		{ 4096, 4096, 4096, VTPU_GEMM_TRANS_B, VTPU_DTYPE_BF16 },
		{ 1 << 20, 10, 4096, 0, VTPU_DTYPE_F32 },	/* narrow */
		{ 16, 4096, 1 << 20, VTPU_GEMM_TRANS_A, VTPU_DTYPE_F32 },
	};
	/* n h w c kh kw oc: Winograd's, the rows kernel's, direct WGRAD's */
	static const uint32_t convs[][7] = {
		{ 256, 32, 32, 64, 3, 3, 64 },
		{ 64, 64, 64, 3, 3, 3, 32 },
		{ 16, 32, 32, 256, 5, 5, 256 },
		{ 64, 16, 16, 1024, 3, 3, 64 },
		{ 4, 8, 8, 60000, 3, 3, 32 },
	};
	/* n vocab dim */
	static const uint32_t embs[][3] = {
		{ 1 << 24, 1 << 24, 4096 },
		{ 4096, 4096, 1 << 24 },
		{ 1, 1 << 24, 4096 },
		{ 1 << 24, 1, 1 },
	};
	static const struct {
		uint32_t batch, m, n, k, flags;
	} bgemms[] = {
		{ 2, 4096, 4096, 4096, 0 },
		{ 2, 4096, 4096, 4096, VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B },
		{ 1 << 20, 16, 16, 16, VTPU_GEMM_TRANS_B },
		{ 1 << 24, 8, 16, 64, 0 },
		{ 1 << 20, 1, 1, 1, 0 },
		{ 1000, 1, 1, 1 << 24, 0 },
		{ 4, 16, 4096, 1 << 20, VTPU_GEMM_TRANS_A },
		{ 64, 512, 512, 1 << 16, VTPU_GEMM_TRANS_B },
	};
	/*
	 * ADDITIVE_SCORE: B tq tk units: the longest rows of dq, of dk, the
	 * most examples, the most scores, the widest units
	 */
	static const uint32_t adds[][4] = {
		{ 2, 64, VTPU_ADDITIVE_MAX_WORK / 64, 64 },
		{ 2, VTPU_ADDITIVE_MAX_WORK, 1, 1 },
		{ VTPU_MAX_DIM, 1, 1, VTPU_ADDITIVE_MAX_UNITS },
		{ 1, 1 << 18, 1 << 18, 1 },
		{ 1 << 12, 64, 64, VTPU_ADDITIVE_MAX_UNITS / 64 },
	};
	/* LSTM_CELL: B H, gates [B][4H] of up to 2^36 elements */
	static const uint32_t lstms[][2] = {
		{ VTPU_MAX_DIM, 1024 }, { 1, VTPU_MAX_DIM },
		{ 1024, VTPU_MAX_DIM }, { 64, 128 },
	};
	/* IMAGE_AUGMENT: n h w c oh ow */
	static const uint32_t augs[][6] = {
		{ 1, 1, 1, VTPU_MAX_DIM, 1, 1 },
		{ VTPU_MAX_DIM, 64, 64, 1, 1, 1 },
		{ 1, VTPU_MAX_DIM, 4096, 1, VTPU_MAX_DIM, 4096 },
		{ 4096, 1, VTPU_MAX_DIM, 1, 1, 3 },
		{ 1 << 12, 1 << 12, 1 << 12, 1, 1 << 11, 1 << 12 },
	};
	/* ARGMAX: m n ldx */
	static const uint32_t argmaxes[][3] = {
		{ 1, VTPU_MAX_DIM, 0 }, { VTPU_MAX_DIM, 1, 0 },
		{ VTPU_MAX_DIM, 4096, 0 }, { 3, 65537, 0 },
		{ 16, VTPU_MAX_DIM, 0xffffffffu },
	};
	/* BATCHNORM: rows channels */
	static const uint32_t bns[][2] = {
		{ VTPU_MAX_DIM, 4096 }, { 1, VTPU_MAX_DIM },
		{ VTPU_MAX_DIM, 1 }, { 65537, 65 }, { 4096, VTPU_MAX_DIM / 256 },
	};
	/*
	 * DWCONV: n h w c k mult: the most taps, the most filters per
	 * channel, the widest rows of channels, the most windows (WGRAD's
	 * steps)
	 */
	static const uint32_t dwconvs[][6] = {
		{ 64, 256, 256, 2048, 16, 1 },
		{ 1 << 16, 16, 16, 1, 1, VTPU_DWCONV_MAX_WORK },
		{ 2, 3, 3, 1 << 16, 1, VTPU_DWCONV_MAX_WORK },
		{ 1 << 20, 16, 16, 1, 3, 2 },
	};
	static uint8_t dummy[64];
	struct vtpu_engine_buf bufs[4];
	struct vtpu_cmdbuf cb;
	const struct vtpu_cmd_hdr *cmd;
	uint32_t pos = 0, b, simd, i, cmds = 0;
	long over = 0;

	/* operands name buffers 0-2: prepare() only resolves them in bufs */
	vtpu_cmdbuf_init(&cb);
	for (i = 0; i < sizeof(gemms) / sizeof(gemms[0]); i++)
		ASSERT_EQ(0, vtpu_cmdbuf_gemm(&cb, &(struct vtpu_gemm_desc){
			.m = gemms[i].m, .n = gemms[i].n, .k = gemms[i].k,
			.flags = gemms[i].flags, .dtype = gemms[i].dtype,
			.alpha = 1, .a_buf = 0, .b_buf = 1, .c_buf = 2 }));
	for (i = 0; i < sizeof(convs) / sizeof(convs[0]); i++) {
		const uint32_t *v = convs[i];
		struct vtpu_conv_desc d = {
			.win = { .n = v[0], .h = v[1], .w = v[2], .c = v[3],
				 .kh = v[4], .kw = v[5], .stride_h = 1,
				 .stride_w = 1, .pad_h = v[4] / 2,
				 .pad_w = v[5] / 2 },
			.oc = v[6], .x = VTPU_REF(0, 0), .w = VTPU_REF(1, 0),
			.y = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_conv(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_conv_dgrad(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_conv_wgrad(&cb, &d));
	}
	/*
	 * Windows far past 16 x 16: every output scans millions of positions
	 * (MAXPOOL), every pixel gathers from a million windows
	 * (MAXPOOL_GRAD) or from 16384 (COL2IM); they run in steps.
	 */
	ASSERT_EQ(0, vtpu_cmdbuf_maxpool(&cb, &(struct vtpu_window){
		.n = 1, .h = 2048, .w = 2048, .c = 256, .kh = 2048, .kw = 2048,
		.stride_h = 1, .stride_w = 1 },
		VTPU_REF(0, 0), VTPU_REF(1, 0), VTPU_REF(2, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_maxpool_grad(&cb, &(struct vtpu_window){
		.n = 1, .h = 1024, .w = 1024, .c = 16, .kh = 1024, .kw = 1024,
		.stride_h = 1, .stride_w = 1, .pad_h = 1023, .pad_w = 1023 },
		VTPU_REF(0, 0), VTPU_REF(1, 0), VTPU_REF(2, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_col2im(&cb, &(struct vtpu_window){
		.n = 1, .h = 128, .w = 128, .c = 1, .kh = 128, .kw = 128,
		.stride_h = 1, .stride_w = 1, .pad_h = 127, .pad_w = 127 },
		VTPU_REF(0, 0), VTPU_REF(1, 0)));
	/* AVGPOOL: a global pool of 4M positions; its gradient's 1M taps */
	ASSERT_EQ(0, vtpu_cmdbuf_avgpool(&cb, &(struct vtpu_window){
		.n = 1, .h = 2048, .w = 2048, .c = 256, .kh = 2048, .kw = 2048,
		.stride_h = 1, .stride_w = 1 }, 1, 1,
		VTPU_REF(0, 0), VTPU_REF(1, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_avgpool_grad(&cb, &(struct vtpu_window){
		.n = 1, .h = 1024, .w = 1024, .c = 16, .kh = 1024, .kw = 1024,
		.stride_h = 1, .stride_w = 1, .pad_h = 1023, .pad_w = 1023 },
		1024, 1024, VTPU_REF(0, 0), VTPU_REF(1, 0)));
	/* CONV_POOL at its limit: one pooled pixel's work is the call's */
	for (i = 0; i < 2; i++) {
		struct vtpu_conv_pool_desc d = {
			.win = { .n = 2, .h = 64, .w = 64, .c = 1, .kh = 64,
				 .kw = 64, .stride_h = 1, .stride_w = 1 },
			.oc = VTPU_CONV_POOL_MAX_WORK / 4096, .pool_h = 1,
			.pool_w = 1, .pool_stride_h = 1, .pool_stride_w = 1,
			.x = VTPU_REF(0, 0), .w = VTPU_REF(1, 0),
			.bias = VTPU_REF(2, 0), .y = VTPU_REF(3, 0),
			.dy = VTPU_REF(3, 0), .index = VTPU_REF(0, 0),
		};

		ASSERT_EQ(0, i ? vtpu_cmdbuf_conv_pool_wgrad(&cb, &d) :
				 vtpu_cmdbuf_conv_pool(&cb, &d));
	}
	/*
	 * The embedding ops at their limits: the most ids, the widest rows,
	 * the largest table (the gradient zeroes it in steps first), the
	 * table scattered to with and without zeroing it.
	 */
	for (i = 0; i < sizeof(embs) / sizeof(embs[0]); i++) {
		ASSERT_EQ(0, vtpu_cmdbuf_embedding(&cb, embs[i][0], embs[i][1],
						   embs[i][2], VTPU_REF(0, 0),
						   VTPU_REF(1, 0),
						   VTPU_REF(2, 0)));
		ASSERT_EQ(0, vtpu_cmdbuf_embedding_grad(&cb, embs[i][0],
			embs[i][1], embs[i][2], i % 2 ?
			VTPU_EMBEDDING_ACCUMULATE : 0, VTPU_REF(0, 0),
			VTPU_REF(2, 0), VTPU_REF(1, 0)));
	}
	/* batches of products at GEMM's limits, and of the smallest */
	for (i = 0; i < sizeof(bgemms) / sizeof(bgemms[0]); i++)
		ASSERT_EQ(0, vtpu_cmdbuf_gemm_batched(&cb,
			&(struct vtpu_gemm_batched_desc){
			.batch = bgemms[i].batch, .m = bgemms[i].m,
			.n = bgemms[i].n, .k = bgemms[i].k,
			.flags = bgemms[i].flags, .alpha = 1,
			.stride_a = (uint64_t)bgemms[i].m * bgemms[i].k,
			.stride_b = (uint64_t)bgemms[i].k * bgemms[i].n,
			.stride_c = (uint64_t)bgemms[i].m * bgemms[i].n,
			.a = VTPU_REF(0, 0), .b = VTPU_REF(1, 0),
			.c = VTPU_REF(2, 0) }));
	/*
	 * SOFTMAX, SOFTMAX_GRAD: rows of the largest n, the most rows; the
	 * loss with MEAN_VALID, whose dlogits tiles count 2^24 labels first
	 */
	for (i = 0; i < 4; i++) {
		struct vtpu_softmax_desc d = {
			.m = i & 1 ? VTPU_MAX_DIM : 1u << 20,
			.n = i & 1 ? 4096 : VTPU_SOFTMAX_MAX_COLS,
			.rows_per_group = 7,
			.flags = VTPU_SOFTMAX_FLAGS, .x = VTPU_REF(0, 0),
			.y = VTPU_REF(1, 0), .dy = VTPU_REF(2, 0),
			.lengths = VTPU_REF(3, 0),
		};

		ASSERT_EQ(0, i < 2 ? vtpu_cmdbuf_softmax(&cb, &d) :
				     vtpu_cmdbuf_softmax_grad(&cb, &d));
	}
	ASSERT_EQ(0, vtpu_cmdbuf_softmax_xent(&cb, &(struct vtpu_xent_desc){
		.m = VTPU_MAX_DIM, .n = 4096, .scale = 1,
		.flags = VTPU_XENT_FLAGS, .logits = VTPU_REF(0, 0),
		.labels = VTPU_REF(1, 0), .dlogits = VTPU_REF(2, 0),
		.loss = VTPU_REF(3, 0), .correct = VTPU_REF(3, 4),
		.probs = VTPU_REF(1, 0) }));
	/*
	 * Gradient clipping: one long row's sum of squares runs in steps,
	 * a square matrix's in tiles of rows; the largest activation and
	 * CLIP_NORM in tiles of elements.
	 */
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_SUMSQ_ROWS,
						i ? VTPU_MAX_DIM : 1,
						VTPU_MAX_DIM, 0, 1.0f, 1.0f,
						VTPU_REF(0, 0), VTPU_REF(1, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_elementwise(&cb, VTPU_EW_TANH, VTPU_MAX_ELEMS,
					     0, 0, VTPU_REF(0, 0),
					     VTPU_REF_NONE, VTPU_REF(1, 0)));
	ASSERT_EQ(0, vtpu_cmdbuf_clip_norm(&cb, VTPU_MAX_ELEMS, 1.0f,
					   VTPU_REF(1, 0), VTPU_REF(0, 0)));
	/*
	 * ARGMAX: the longest row (in steps), the most rows of one column,
	 * the most elements in rows of 4096, a row just past a step, rows
	 * 2^32 - 1 apart
	 */
	for (i = 0; i < sizeof(argmaxes) / sizeof(argmaxes[0]); i++)
		ASSERT_EQ(0, vtpu_cmdbuf_argmax(&cb, argmaxes[i][0],
						argmaxes[i][1], argmaxes[i][2],
						VTPU_REF(0, 0),
						VTPU_REF(1, 0)));
	/* BATCHNORM: training, inference and the gradient of each shape */
	for (i = 0; i < sizeof(bns) / sizeof(bns[0]); i++) {
		struct vtpu_batchnorm_desc d = {
			.rows = bns[i][0], .channels = bns[i][1],
			.epsilon = 1e-3f, .momentum = 0.99f,
			.x = VTPU_REF(0, 0), .y = VTPU_REF(1, 0),
			.gamma = VTPU_REF(2, 0), .beta = VTPU_REF(2, 0),
			.stats = VTPU_REF(2, 0), .moving_mean = VTPU_REF(2, 0),
			.moving_var = VTPU_REF(2, 0), .dy = VTPU_REF(1, 0),
			.dx = VTPU_REF(1, 0), .dgamma = VTPU_REF(2, 0),
			.dbeta = VTPU_REF(2, 0),
		};

		d.flags = VTPU_BATCHNORM_TRAINING;
		ASSERT_EQ(0, vtpu_cmdbuf_batchnorm(&cb, &d));
		d.flags = 0;
		ASSERT_EQ(0, vtpu_cmdbuf_batchnorm(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_batchnorm_grad(&cb, &d));
	}
	for (i = 0; i < sizeof(dwconvs) / sizeof(dwconvs[0]); i++) {
		const uint32_t *v = dwconvs[i];
		struct vtpu_dwconv_desc d = {
			.win = { .n = v[0], .h = v[1], .w = v[2], .c = v[3],
				 .kh = v[4], .kw = v[4], .stride_h = 1,
				 .stride_w = 1, .pad_h = v[4] / 2,
				 .pad_w = v[4] / 2 },
			.oh = v[1], .ow = v[2], .mult = v[5],
			.x = VTPU_REF(0, 0), .w = VTPU_REF(1, 0),
			.y = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_dwconv(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_dgrad(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_dwconv_wgrad(&cb, &d));
	}
	/*
	 * IMAGE_AUGMENT: one pixel of the most channels, the most images of
	 * one element (a draw each), the largest image, the widest rows,
	 * 2^36 elements to 2^35
	 */
	for (i = 0; i < sizeof(augs) / sizeof(augs[0]); i++) {
		struct vtpu_augment_desc d = {
			.n = augs[i][0], .h = augs[i][1], .w = augs[i][2],
			.c = augs[i][3], .oh = augs[i][4], .ow = augs[i][5],
			.flags = VTPU_AUGMENT_FLAGS, .x = VTPU_REF(0, 0),
			.y = VTPU_REF(1, 0), .step = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_image_augment(&cb, &d));
	}
	for (i = 0; i < sizeof(adds) / sizeof(adds[0]); i++) {
		struct vtpu_additive_desc d = {
			.batch = adds[i][0], .tq = adds[i][1], .tk = adds[i][2],
			.units = adds[i][3], .q = VTPU_REF(0, 0),
			.k = VTPU_REF(1, 0), .v = VTPU_REF(2, 0),
			.s = VTPU_REF(3, 0), .dq = VTPU_REF(0, 0),
			.dk = VTPU_REF(1, 0), .dv = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_additive_score(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_additive_score_grad(&cb, &d));
	}
	/*
	 * The LSTM cell and its gradient at the largest spans (2^36 gate
	 * elements): the most rows, the widest row, both with many cells
	 */
	for (i = 0; i < sizeof(lstms) / sizeof(lstms[0]); i++) {
		struct vtpu_lstm_desc d = {
			.batch = lstms[i][0], .hidden = lstms[i][1],
			.row_stride = 4ull * lstms[i][1],
			.gate_stride = lstms[i][1],
			.gates = VTPU_REF(0, 0), .c_prev = VTPU_REF(1, 0),
			.act = VTPU_REF(2, 0), .c = VTPU_REF(3, 0),
			.tc = VTPU_REF(1, 0), .h = VTPU_REF(1, 0),
			.dh = VTPU_REF(1, 0), .dc_next = VTPU_REF(3, 0),
			.dgates = VTPU_REF(0, 0), .dc_prev = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_lstm_cell(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_lstm_cell_grad(&cb, &d));
	}
	ASSERT_EQ(0, cb.error);
	for (b = 0; b < 4; b++)
		bufs[b] = (struct vtpu_engine_buf){ dummy, sizeof(dummy) };
	while ((cmd = vtpu_engine_next(cb.data, cb.size, &pos))) {
		for (simd = VTPU_SIMD_SCALAR; simd <= VTPU_SIMD_AVX512; simd++) {
			/* fewest workers: fewest, largest tiles */
			struct vtpu_engine_op op;
			uint64_t per;

			vtpu_engine_op_prepare(&op, cmd, bufs, simd, 1);
			per = op.flops / ((uint64_t)op.ntiles * op.nsteps);
			/*
			 * The embedding ops move memory: elements a call
			 * touches, at most the ops' chunk (65536), whatever
			 * the average says.
			 */
			if (cmd->opcode == VTPU_OP_EMBEDDING)
				per = op.chunk > EMB_CALL_MAX ? ~0ull : 0;
			if (cmd->opcode == VTPU_OP_EMBEDDING_GRAD)
				per = (uint64_t)op.emb.rows * op.emb.width >
					      EMB_CALL_MAX ? ~0ull : 0;
			/* ARGMAX reads tblock x sblock elements a call */
			if (cmd->opcode == VTPU_OP_ARGMAX)
				per = (uint64_t)op.argmax.tblock *
					      op.argmax.sblock >
					      EMB_CALL_MAX ? ~0ull : 0;
			/* BATCHNORM reads width x rblock elements a call */
			if (cmd->opcode == VTPU_OP_BATCHNORM ||
			    cmd->opcode == VTPU_OP_BATCHNORM_GRAD)
				per = (uint64_t)op.bn.width * op.bn.rblock >
					      EMB_CALL_MAX ? ~0ull : 0;
			/* IMAGE_AUGMENT copies (and draws for) chunk */
			if (cmd->opcode == VTPU_OP_IMAGE_AUGMENT)
				per = op.chunk > EMB_CALL_MAX ? ~0ull : 0;
			/* ADDITIVE_SCORE(_GRAD): the tanh a call computes */
			if (cmd->opcode == VTPU_OP_ADDITIVE_SCORE ||
			    cmd->opcode == VTPU_OP_ADDITIVE_SCORE_GRAD)
				per = additive_call(&op) >
					      VTPU_ADDITIVE_MAX_WORK ? ~0ull : 0;
			/* LSTM_CELL(_GRAD): chunk cells of ~8 passes a call */
			if (cmd->opcode == VTPU_OP_LSTM_CELL ||
			    cmd->opcode == VTPU_OP_LSTM_CELL_GRAD)
				per = op.lstm.chunk * 8 > EMB_CALL_MAX ?
					      ~0ull : 0;
			/*
			 * Winograd's commands multiply (f + 2)^2 products
			 * where the nominal flops count 9 f^2 (gemm.c bounds
			 * what a call multiplies)
			 */
			if ((cmd->opcode == VTPU_OP_CONV ||
			     cmd->opcode == VTPU_OP_CONV_DGRAD ||
			     cmd->opcode == VTPU_OP_CONV_WGRAD) &&
			    op.gemm.wino)
				per = per * (op.gemm.wino_f + 2) *
				      (op.gemm.wino_f + 2) /
				      (9 * op.gemm.wino_f * op.gemm.wino_f);
			if (per > CALL_FLOPS_MAX && over++ < 5)
				TH_LOG("command %u (opcode %u), level %u: %u "
				       "tiles x %u steps, %.0f MFLOP a call",
				       cmds, cmd->opcode, simd, op.ntiles,
				       op.nsteps, per / 1e6);
		}
		cmds++;
	}
	TH_LOG("%u commands on %d levels: %ld calls over %llu MFLOP", cmds,
	       VTPU_SIMD_AVX512 + 1, over, CALL_FLOPS_MAX >> 20);
	EXPECT_EQ(25 + 2 * sizeof(embs) / sizeof(embs[0]) +
		  sizeof(bgemms) / sizeof(bgemms[0]) + 5 + 4 +
		  sizeof(argmaxes) / sizeof(argmaxes[0]) +
		  3 * sizeof(bns) / sizeof(bns[0]) +
		  3 * sizeof(dwconvs) / sizeof(dwconvs[0]) +
		  2 /* AVGPOOL(_GRAD) */ +
		  sizeof(augs) / sizeof(augs[0]) +
		  2 * sizeof(adds) / sizeof(adds[0]) +
		  2 * sizeof(lstms) / sizeof(lstms[0]), cmds);
	EXPECT_EQ(0, over);
	vtpu_cmdbuf_fini(&cb);
}

/*
 * CONV_POOL's least unit of work, one pooled pixel, is bounded in the
 * uAPI: one more output channel past VTPU_CONV_POOL_MAX_WORK is rejected.
 */
/*
 * Which Winograd each 3 x 3 convolution takes on AVX-512 (gemm.c:
 * wino_f(), wino_f_wgrad()): F(4 x 4) where it multiplies a fifth less
 * than F(2 x 2), over at most 128 channels for CONV and CONV_DGRAD (the
 * latter's channels are oc), on outputs of 16 x 16 or more for CONV_WGRAD;
 * F(2 x 2) elsewhere; none under 16 channels (nor CONV_DGRAD into 16
 * columns or fewer). n, h, w, c, oc, and the F of CONV, CONV_DGRAD,
 * CONV_WGRAD (0: not Winograd).
 */
TEST(winograd_tile_sizes)
{
	static const uint32_t convs[][8] = {
		{ 8, 32, 32, 32, 32, 4, 4, 4 },
		{ 2, 16, 16, 128, 72, 4, 4, 4 },
		{ 2, 14, 14, 64, 64, 4, 4, 2 },
		{ 2, 6, 6, 32, 32, 2, 2, 2 },	/* 6 x 6: tiles past the edge */
		{ 2, 16, 16, 130, 64, 2, 4, 4 },
		{ 2, 16, 16, 64, 256, 4, 2, 4 },
		{ 2, 16, 16, 8, 32, 0, 0, 0 },	/* (DGRAD: 8 columns) */
	};
	static uint8_t dummy[64];
	struct vtpu_engine_buf bufs[3];
	struct vtpu_cmdbuf cb;
	const struct vtpu_cmd_hdr *cmd;
	uint32_t pos = 0, b, i, k = 0;

	vtpu_cmdbuf_init(&cb);
	for (i = 0; i < sizeof(convs) / sizeof(convs[0]); i++) {
		const uint32_t *v = convs[i];
		struct vtpu_conv_desc d = {
			.win = { .n = v[0], .h = v[1], .w = v[2], .c = v[3],
				 .kh = 3, .kw = 3, .stride_h = 1,
				 .stride_w = 1, .pad_h = 1, .pad_w = 1 },
			.oc = v[4], .x = VTPU_REF(0, 0), .w = VTPU_REF(1, 0),
			.y = VTPU_REF(2, 0),
		};

		ASSERT_EQ(0, vtpu_cmdbuf_conv(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_conv_dgrad(&cb, &d));
		ASSERT_EQ(0, vtpu_cmdbuf_conv_wgrad(&cb, &d));
	}
	ASSERT_EQ(0, cb.error);
	for (b = 0; b < 3; b++)	/* prepare() only resolves the operands */
		bufs[b] = (struct vtpu_engine_buf){ dummy, sizeof(dummy) };
	for (; (cmd = vtpu_engine_next(cb.data, cb.size, &pos)); k++) {
		const uint32_t *v = convs[k / 3];
		struct vtpu_engine_op op;

		vtpu_engine_op_prepare(&op, cmd, bufs, VTPU_SIMD_AVX512, 2);
		EXPECT_EQ(v[5 + k % 3], op.gemm.wino ? op.gemm.wino_f : 0);
		if (v[5 + k % 3] != (op.gemm.wino ? op.gemm.wino_f : 0))
			TH_LOG("%ux%ux%ux%u -> %u, command %u of 3: F %u",
			       v[0], v[1], v[2], v[3], v[4], k % 3 + 1,
			       op.gemm.wino ? op.gemm.wino_f : 0);
	}
	EXPECT_EQ(3 * sizeof(convs) / sizeof(convs[0]), k);
	vtpu_cmdbuf_fini(&cb);
}

TEST(conv_pool_work_limit)
{
	const uint64_t sizes[4] = { 1ull << 40, 1ull << 40, 1ull << 40,
				    1ull << 40 };
	uint32_t extra, op;

	for (op = VTPU_OP_CONV_POOL; op <= VTPU_OP_CONV_POOL_WGRAD; op++) {
		for (extra = 0; extra < 2; extra++) {
			struct vtpu_conv_pool_desc d = {
				.win = { .n = 1, .h = 64, .w = 64, .c = 1,
					 .kh = 32, .kw = 32, .stride_h = 1,
					 .stride_w = 1 },
				.oc = VTPU_CONV_POOL_MAX_WORK / 4096 + extra,
				.pool_h = 2, .pool_w = 2, .pool_stride_h = 2,
				.pool_stride_w = 2, .x = VTPU_REF(0, 0),
				.w = VTPU_REF(1, 0), .bias = VTPU_REF(2, 0),
				.y = VTPU_REF(3, 0), .dy = VTPU_REF(3, 0),
				.index = VTPU_REF(3, 1ull << 36),
			};
			struct vtpu_engine_error err;
			struct vtpu_cmdbuf cb;
			int ret;

			vtpu_cmdbuf_init(&cb);
			ASSERT_EQ(0, op == VTPU_OP_CONV_POOL ?
				  vtpu_cmdbuf_conv_pool(&cb, &d) :
				  vtpu_cmdbuf_conv_pool_wgrad(&cb, &d));
			ret = vtpu_engine_validate(cb.data, cb.size, sizes, 4,
						   &err);
			if (extra) {
				EXPECT_EQ(-EINVAL, ret);
				EXPECT_EQ(VTPU_ERR_BAD_SHAPE, err.reason);
			} else {
				EXPECT_EQ(0, ret)
				TH_LOG("opcode %u: reason %u, operand %u", op,
				       err.reason, err.operand);
			}
			vtpu_cmdbuf_fini(&cb);
		}
	}
}

/* ---- commands that run together (vtpu_engine_group_add()) --------------- */

/* Every operand vtpu_engine_operand() knows is one of the command's spans. */
TEST(spans_cover_every_operand)
{
	static uint8_t mem[64];
	struct vtpu_engine_buf bufs[1] = { { mem, sizeof(mem) } };
	struct vtpu_engine_span spans[VTPU_ENGINE_SPANS_MAX];
	uint64_t cmd[64];
	uint32_t op, id, have, n, bad = 0;

	for (op = 0; op < VTPU_OP_COUNT; op++) {
		struct vtpu_cmd_hdr *h = (void *)cmd;
		const struct vtpu_operand *o;
		uint64_t bytes;

		memset(cmd, 0, sizeof(cmd));
		h->opcode = op;
		h->size = vtpu_engine_cmd_size(op);
		ASSERT_GE(sizeof(cmd), h->size);
		for (id = 0, have = 0; id < 64; id++)
			have += !vtpu_engine_operand(h, id, &o, &bytes);
		n = vtpu_engine_spans(h, bufs, spans);
		if (n != have || n > VTPU_ENGINE_SPANS_MAX) {
			TH_LOG("opcode %u: %u operands, %u spans", op, have, n);
			bad++;
		}
	}
	EXPECT_EQ(0, bad);
}

/* Is @p in one of the spans (the written ones only, with @write)? */
static int in_spans(const struct vtpu_engine_span *sp, uint32_t n,
		    const uint8_t *p, int write)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if ((!write || sp[i].write) && p >= sp[i].lo && p < sp[i].hi)
			return 1;
	return 0;
}

/* One command alone, every tile and step in order, on one worker. */
static void run_alone(const struct vtpu_cmd_hdr *cmd,
		      const struct vtpu_engine_buf *bufs, int simd,
		      void *scratch)
{
	struct vtpu_engine_op op;
	uint32_t tile, step;

	vtpu_engine_op_prepare(&op, cmd, bufs, (uint32_t)simd, 1);
	for (tile = 0; tile < op.ntiles; tile++)
		for (step = 0; step < op.nsteps; step++)
			vtpu_engine_op_run(&op, tile, step, scratch);
}

/*
 * @nb cpu buffers of @size bytes for random streams, their engine views
 * (@bufs), and two spare copies of each (@x, @y).
 */
struct rand_bufs {
	uint32_t nb;
	size_t size;
	struct vtpu_bo bos[GEN_MAXBUF];
	struct vtpu_engine_buf bufs[GEN_MAXBUF];
	uint8_t *x[GEN_MAXBUF], *y[GEN_MAXBUF];
};

static int rand_bufs_init(struct rand_bufs *r, uint32_t nb, size_t size)
{
	uint32_t b;

	memset(r, 0, sizeof(*r));
	r->nb = nb;
	r->size = size;
	for (b = 0; b < nb; b++) {
		if (vtpu_cpu_bo_create(size, &r->bos[b]))
			return -1;
		r->x[b] = malloc(size);
		r->y[b] = malloc(size);
		if (!r->x[b] || !r->y[b])
			return -1;
		r->bufs[b] = (struct vtpu_engine_buf){ r->bos[b].map, size };
	}
	return 0;
}

static void rand_bufs_fini(struct rand_bufs *r)
{
	uint32_t b;

	for (b = 0; b < r->nb; b++) {
		free(r->x[b]);
		free(r->y[b]);
		if (r->bos[b].map)
			vtpu_cpu_bo_destroy(&r->bos[b]);
	}
}

/*
 * vtpu_gen.h's generator, alone: every opcode it makes (every one with an
 * entry in the engine's table and a shape there) appears, and every
 * stream it makes passes the validator, on one iteration and on two with
 * its strides. The guest's stress and fuzz tests and the tests below
 * build on it.
 */
TEST(gen_streams_valid)
{
	enum { NB = 4, SIZE = 32768, STREAMS = 2000 };
	uint32_t seen[VTPU_OP_COUNT] = { 0 };
	uint32_t i, b, op, pos, cmds = 0, kinds = 0, known = 0;
	const struct vtpu_cmd_hdr *cmd;
	struct vtpu_engine_error err;
	uint64_t sizes[NB], strides[NB];
	struct vtpu_cmdbuf cb;
	struct rand_bufs r;
	struct gen_rng rng;
	struct gen_ctx g;
	char msg[256];

	ASSERT_EQ(0, rand_bufs_init(&r, NB, SIZE));
	vtpu_cmdbuf_init(&cb);
	gen_seed(&rng, 11);
	for (i = 0; i < STREAMS; i++) {
		gen_start(&g, &rng, &cb, r.bos, NB);
		gen_stream(&g, 8);
		ASSERT_EQ(0, cb.error);
		for (pos = 0; (cmd = vtpu_engine_next(cb.data, cb.size, &pos));
		     cmds++)
			seen[cmd->opcode]++;
		for (b = 0; b < NB; b++) {
			sizes[b] = SIZE;
			strides[b] = gen_stride(&g, b, SIZE);
		}
		memset(&err, 0, sizeof(err));
		if (vtpu_engine_validate(cb.data, cb.size, sizes, NB, &err)) {
			struct vtpu_job job = { 0 };

			job.error.cmd = err.cmd;
			job.error.operand = err.operand;
			job.error.reason = err.reason;
			vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
			ASSERT_TRUE(0) TH_LOG("stream %u: %s", i, msg);
		}
		ASSERT_EQ(0, vtpu_engine_validate_iters(cb.data, cb.size, sizes,
							NB, strides, 0, 2,
							&err))
			TH_LOG("stream %u, twice: reason %u, cmd %u", i,
			       err.reason, err.cmd);
	}
	for (op = 0; op < VTPU_OP_COUNT; op++) {
		known += gen_known(op);
		kinds += seen[op] != 0;
		EXPECT_EQ(gen_known(op), seen[op] != 0)
			TH_LOG("%s: %u commands", vtpu_engine_op_name(op),
			       seen[op]);
	}
	TH_LOG("%u streams, %u commands of %u opcodes (of %u the generator "
	       "knows), all valid", STREAMS, cmds, kinds, known);
	vtpu_cmdbuf_fini(&cb);
	rand_bufs_fini(&r);
}

/*
 * What vtpu_engine_spans() says a command writes is all it writes, and
 * what it says the command touches is all it reads: random valid streams
 * (vtpu_gen.h: every opcode it knows), each command run alone, then again
 * with every byte outside its spans changed. A write outside the write
 * spans, or a result that changes, is an operand validate.c's table has
 * wrong: grouped beside another command, this one would race with it.
 */
TEST(spans_hold_every_write)
{
	enum { NB = 3, SIZE = 32768, STREAMS = 300 };
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE);
	struct vtpu_engine_span sp[VTPU_ENGINE_SPANS_MAX];
	const struct vtpu_cmd_hdr *cmd;
	uint32_t i, b, n, pos, cmds = 0, fp;
	uint64_t j, wild = 0, leaky = 0;
	uint8_t **before, **after, *m;
	struct vtpu_cmdbuf cb;
	struct rand_bufs r;
	struct gen_rng rng;
	struct gen_ctx g;
	void *scratch;
	int simd;

	ASSERT_NE(NULL, cpu);
	simd = vtpu_cpu_simd(cpu);
	scratch = aligned_alloc(64, vtpu_engine_scratch_size());
	ASSERT_NE(NULL, scratch);
	memset(scratch, 0, vtpu_engine_scratch_size());
	ASSERT_EQ(0, rand_bufs_init(&r, NB, SIZE));
	before = r.x;
	after = r.y;
	vtpu_cmdbuf_init(&cb);
	gen_seed(&rng, 42);
	fp = vtpu_engine_fp_enter();
	for (i = 0; i < STREAMS; i++) {
		gen_start(&g, &rng, &cb, r.bos, NB);
		gen_stream(&g, 4);
		ASSERT_EQ(0, cb.error);
		for (pos = 0; (cmd = vtpu_engine_next(cb.data, cb.size, &pos));
		     cmds++) {
			n = vtpu_engine_spans(cmd, r.bufs, sp);
			ASSERT_GE(VTPU_ENGINE_SPANS_MAX, n);
			for (b = 0; b < NB; b++)
				memcpy(before[b], r.bos[b].map, SIZE);
			run_alone(cmd, r.bufs, simd, scratch);
			for (b = 0; b < NB; b++) {
				m = r.bos[b].map;
				memcpy(after[b], m, SIZE);
				for (j = 0; j < SIZE; j++)
					if (m[j] != before[b][j] &&
					    !in_spans(sp, n, m + j, 1) &&
					    wild++ < 3)
						TH_LOG("opcode %u wrote byte %llu of buffer %u",
						       cmd->opcode,
						       (unsigned long long)j, b);
			}
			/* the same inputs, and garbage everywhere else */
			for (b = 0; b < NB; b++) {
				m = r.bos[b].map;
				for (j = 0; j < SIZE; j++)
					m[j] = in_spans(sp, n, m + j, 0) ?
						       before[b][j] :
						       (uint8_t)gen_next(&rng);
			}
			run_alone(cmd, r.bufs, simd, scratch);
			for (b = 0; b < NB; b++) {
				m = r.bos[b].map;
				for (j = 0; j < SIZE; j++)
					if (in_spans(sp, n, m + j, 1) &&
					    m[j] != after[b][j] && leaky++ < 3)
						TH_LOG("opcode %u read outside its spans",
						       cmd->opcode);
				memcpy(m, after[b], SIZE);
			}
		}
	}
	vtpu_engine_fp_leave(fp);
	TH_LOG("%u commands of %u random streams: %llu bytes written "
	       "outside the write spans, %llu results that read outside the spans",
	       cmds, STREAMS, (unsigned long long)wild,
	       (unsigned long long)leaky);
	EXPECT_EQ(0, wild);
	EXPECT_EQ(0, leaky);
	rand_bufs_fini(&r);
	vtpu_cmdbuf_fini(&cb);
	free(scratch);
	vtpu_cpu_destroy(cpu);
}

/*
 * Phases (vtpu_engine_group_phase()): a group of a one-phase op, a
 * two-phase REDUCE COLS (65537 x 64: 13 groups of 5 steps) and another
 * one-phase op has two phases; the first holds every tile of the
 * one-phase ops and the REDUCE's first phase, the second only the
 * REDUCE's second-phase tiles, and each group tile maps to its op's
 * tile. Run that way, each phase's tiles last first, it gives the bits of
 * the ops run alone in order, and the exact column sums.
 */
TEST(group_phases)
{
	const uint32_t m = 65537, n = 64;
	float *x = malloc((size_t)m * n * 4), *y = calloc(n, 4);
	float *e = calloc(4096, 4), *y1 = malloc(n * 4), *e1 = malloc(4096 * 4);
	struct vtpu_engine_buf bufs[3] = { { x, (uint64_t)m * n * 4 },
					   { y, n * 4 }, { e, 4096 * 4 } };
	struct vtpu_engine_group *grp = calloc(1, sizeof(*grp));
	struct vtpu_engine_op *alone = malloc(sizeof(*alone));
	void *scratch = aligned_alloc(64, vtpu_engine_scratch_size());
	struct vtpu_cmd_elementwise ew = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(ew) }, .op = VTPU_EW_RELU,
		.count = 1024, .x = { 2, 0, 0 }, .z = { 2, 0, 4096 },
	};
	struct vtpu_cmd_elementwise ew2 = ew;
	struct vtpu_cmd_reduce red = {
		.hdr = { VTPU_OP_REDUCE, sizeof(red) }, .op = VTPU_REDUCE_COLS,
		.m = m, .n = n, .ldx = n, .alpha = f2u(1.0f),
		.x = { 0, 0, 0 }, .y = { 1, 0, 0 },
	};
	const void *cmds[3] = { &ew, &red, &ew2 };
	uint32_t i, j, p, t, tile, step, lo, bad = 0;
	const struct vtpu_engine_op *op;

	ASSERT_NE(NULL, grp);
	ASSERT_NE(NULL, scratch);
	ew2.x.offset = 8192;
	ew2.z.offset = 12288;
	for (i = 0; i < (size_t)m * n; i++)
		x[i] = (float)(int)(i % 7) - 3;	/* exact sums */
	for (i = 0; i < 4096; i++)
		e[i] = (float)(int)(i % 5) - 2;
	/* alone, in order */
	for (i = 0; i < 3; i++) {
		vtpu_engine_op_prepare(alone, cmds[i], bufs, VTPU_SIMD_SCALAR, 2);
		for (t = 0; t < alone->ntiles; t++)
			for (step = 0; step < alone->nsteps; step++)
				vtpu_engine_op_run(alone, t, step, scratch);
	}
	memcpy(y1, y, n * 4);
	memcpy(e1, e, 4096 * 4);
	for (j = 0; j < n; j++) {
		double want = 0;

		for (i = 0; i < m; i++)
			want += x[(size_t)i * n + j];
		bad += y1[j] != want;
	}
	EXPECT_EQ(0, bad);
	memset(y, 0xff, n * 4);
	memset(e + 1024, 0xff, 1024 * 4);
	memset(e + 3072, 0xff, 1024 * 4);

	vtpu_engine_group_clear(grp);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(true, vtpu_engine_group_add(grp, cmds[i], bufs,
						      VTPU_SIMD_SCALAR, 2, 4));
	ASSERT_EQ(2, grp->op[1].nphases);
	EXPECT_EQ(1, grp->op[0].nphases);
	EXPECT_EQ(2, grp->nphases);
	EXPECT_EQ(13, grp->op[1].reduce.groups);
	for (p = 0; p < grp->nphases; p++) {
		vtpu_engine_group_phase(grp, p);
		lo = p ? grp->op[1].phase_end[0] : 0;
		EXPECT_EQ(p ? grp->op[1].phase_end[1] - lo :
			      grp->op[0].ntiles + grp->op[1].phase_end[0] +
				      grp->op[2].ntiles,
			  grp->ntiles);
		for (t = grp->ntiles; t-- > 0;) {
			op = vtpu_engine_group_tile(grp, t, &tile);
			if (p)
				EXPECT_EQ(&grp->op[1], op);
			EXPECT_LT(tile, op->phase_end[op->nphases - 1]);
			if (op == &grp->op[1])
				EXPECT_EQ(p, tile >= op->phase_end[0]);
			for (step = 0; step < op->nsteps; step++)
				vtpu_engine_op_run(op, tile, step, scratch);
		}
	}
	EXPECT_EQ(0, memcmp(y, y1, n * 4));
	EXPECT_EQ(0, memcmp(e, e1, 4096 * 4));
	free(scratch);
	free(alone);
	free(grp);
	free(x);
	free(y);
	free(e);
	free(y1);
	free(e1);
}

/* Would the command join @grp? (It is prepared as the candidate.) */
static int joins(struct vtpu_engine_group *grp, const void *cmd,
		 const struct vtpu_engine_buf *bufs, uint32_t max_ops)
{
	if (vtpu_engine_group_add(grp, cmd, bufs, VTPU_SIMD_SCALAR, 2, max_ops))
		return 1;
	vtpu_engine_group_restart(grp);
	return 0;
}

/*
 * Which commands group: readers of one tensor do; a reader of what the
 * group writes (RAW), a writer of what it reads (WAR) or writes (WAW)
 * does not, also through a second handle of the same buffer; a group
 * holds VTPU_ENGINE_GROUP_MAX ops, and max_ops 1 keeps every one alone.
 */
TEST(group_decisions)
{
	static float mem[2][4096];
	/* buffer 2 is buffer 0 again, as two handles of one BO would be */
	struct vtpu_engine_buf bufs[3] = { { mem[0], sizeof(mem[0]) },
					   { mem[1], sizeof(mem[1]) },
					   { mem[0], sizeof(mem[0]) } };
	struct vtpu_engine_group *grp = calloc(1, sizeof(*grp));
	struct vtpu_cmd_gemm g1 = {
		.hdr = { VTPU_OP_GEMM, sizeof(g1) }, .m = 8, .n = 8, .k = 8,
		.lda = 8, .ldb = 8, .ldc = 8, .dtype = VTPU_DTYPE_F32,
		.alpha = f2u(1.0f),
		.a = { 0, 0, 0 }, .b = { 0, 0, 256 }, .c = { 1, 0, 0 },
	};
	struct vtpu_cmd_gemm g2 = g1;
	struct vtpu_cmd_reduce red = {
		.hdr = { VTPU_OP_REDUCE, sizeof(red) }, .op = VTPU_REDUCE_COLS,
		.m = 8, .n = 8, .ldx = 8, .alpha = f2u(1.0f),
		.x = { 0, 0, 0 }, .y = { 1, 0, 1024 },
	};
	struct vtpu_cmd_elementwise ew = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(ew) }, .op = VTPU_EW_RELU,
		.count = 64, .x = { 1, 0, 0 }, .z = { 1, 0, 2048 },
	};
	struct vtpu_cmd_fill fill = {
		.hdr = { VTPU_OP_FILL, sizeof(fill) }, .count = 16,
		.dst = { 0, 0, 0 },
	};
	int i;

	ASSERT_NE(NULL, grp);
	g2.c.offset = 512;
	/* two GEMMs and a column sum, all reading A: one group */
	EXPECT_EQ(1, joins(grp, &g1, bufs, 4));
	EXPECT_EQ(1, joins(grp, &red, bufs, 4));
	EXPECT_EQ(1, joins(grp, &g2, bufs, 4));
	EXPECT_EQ(3, grp->nops);
	EXPECT_EQ(grp->op[0].ntiles + grp->op[1].ntiles + grp->op[2].ntiles,
		  grp->ntiles);
	/* reads g1's C (RAW): the group runs first, and it starts the next */
	EXPECT_EQ(0, joins(grp, &ew, bufs, 4));
	EXPECT_EQ(1, grp->nops);
	EXPECT_EQ(VTPU_OP_ELEMENTWISE, grp->op[0].opcode);
	/* writes A, which g1 reads (WAR) */
	vtpu_engine_group_clear(grp);
	EXPECT_EQ(1, joins(grp, &g1, bufs, 4));
	EXPECT_EQ(0, joins(grp, &fill, bufs, 4));
	/* the same, through buffer 2, the same memory as buffer 0 */
	vtpu_engine_group_clear(grp);
	fill.dst.buf = 2;
	EXPECT_EQ(1, joins(grp, &g1, bufs, 4));
	EXPECT_EQ(0, joins(grp, &fill, bufs, 4));
	/* writes what the group writes (WAW) */
	EXPECT_EQ(0, joins(grp, &fill, bufs, 4));
	/* disjoint fills: a group holds VTPU_ENGINE_GROUP_MAX */
	vtpu_engine_group_clear(grp);
	for (i = 0; i <= VTPU_ENGINE_GROUP_MAX; i++) {
		fill.dst = (struct vtpu_operand){ 1, 0, 64u * i };
		EXPECT_EQ(i < VTPU_ENGINE_GROUP_MAX, joins(grp, &fill, bufs, 4));
	}
	/* max_ops 1: alone */
	vtpu_engine_group_clear(grp);
	fill.dst.offset = 0;
	EXPECT_EQ(1, joins(grp, &fill, bufs, 1));
	fill.dst.offset = 64;
	EXPECT_EQ(0, joins(grp, &fill, bufs, 1));
	free(grp);
}

/*
 * Grouped, a stream computes the bits it computes one command at a time:
 * random valid streams (vtpu_gen.h; outputs are fresh regions, inputs
 * fresh or an earlier command's output, so some commands depend on
 * others and some do not), every other one repeated twice with random
 * per-iteration strides (the second iteration sees every buffer shifted),
 * on three threads, grouped and with VTPU_GROUP_MAX=1. A command grouped
 * beside one it depends on would read or clobber a tensor while the other
 * writes it.
 */
TEST(groups_keep_bits)
{
	enum { NB = 4, SIZE = 32768, STREAMS = 400 };
	struct vtpu_engine_group *grp = calloc(1, sizeof(*grp));
	uint32_t i, b, pos, cmds = 0, joined = 0, differ = 0, strided = 0;
	uint64_t strides[NB];
	struct vtpu_cpu *grouped, *alone;
	const struct vtpu_cmd_hdr *cmd;
	uint8_t **init, **want;
	struct vtpu_cmdbuf cb;
	struct rand_bufs r;
	struct vtpu_job job;
	struct gen_rng rng;
	struct gen_ctx g;

	ASSERT_NE(NULL, grp);
	grouped = vtpu_cpu_create(3, -1, VTPU_CPU_GEMM_ENGINE);
	setenv("VTPU_GROUP_MAX", "1", 1);
	alone = vtpu_cpu_create(3, -1, VTPU_CPU_GEMM_ENGINE);
	unsetenv("VTPU_GROUP_MAX");
	ASSERT_NE(NULL, grouped);
	ASSERT_NE(NULL, alone);
	ASSERT_EQ(0, rand_bufs_init(&r, NB, SIZE));
	init = r.x;
	want = r.y;
	vtpu_cmdbuf_init(&cb);
	gen_seed(&rng, 7);
	for (i = 0; i < STREAMS; i++) {
		gen_start(&g, &rng, &cb, r.bos, NB);
		gen_stream(&g, 8);
		ASSERT_EQ(0, cb.error);
		/* how many commands join a group (the executors' decisions) */
		vtpu_engine_group_clear(grp);
		for (pos = 0; (cmd = vtpu_engine_next(cb.data, cb.size, &pos));
		     cmds++)
			if (joins(grp, cmd, r.bufs, VTPU_ENGINE_GROUP_MAX) &&
			    grp->nops > 1)
				joined++;
		for (b = 0; b < NB; b++)
			memcpy(init[b], r.bos[b].map, SIZE);
		/* every other stream twice (a group per iteration), moved */
		for (b = 0; b < NB; b++) {
			strides[b] = gen_stride(&g, b, SIZE);
			strided += i % 2 && strides[b];
		}
		memset(&job, 0, sizeof(job));
		job.repeat = 1 + i % 2;
		job.strides = strides;
		ASSERT_EQ(0, vtpu_cpu_run(alone, &cb, &job));
		for (b = 0; b < NB; b++) {
			memcpy(want[b], r.bos[b].map, SIZE);
			memcpy(r.bos[b].map, init[b], SIZE);
		}
		memset(&job, 0, sizeof(job));
		job.repeat = 1 + i % 2;
		job.strides = strides;
		ASSERT_EQ(0, vtpu_cpu_run(grouped, &cb, &job));
		for (b = 0; b < NB; b++)
			if (memcmp(want[b], r.bos[b].map, SIZE) && differ++ < 3)
				TH_LOG("stream %u: buffer %u differs", i, b);
	}
	TH_LOG("%u streams, %u commands, %u of them joined a group, %u "
	       "buffers moved in a second iteration: %u streams differ",
	       STREAMS, cmds, joined, strided, differ);
	EXPECT_LT(cmds / 10, joined);
	EXPECT_LT(STREAMS / 2, strided);
	EXPECT_EQ(0, differ);
	rand_bufs_fini(&r);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cpu_destroy(grouped);
	vtpu_cpu_destroy(alone);
	free(grp);
}

TEST_HARNESS_MAIN
