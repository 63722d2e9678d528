// SPDX-License-Identifier: MIT
/*
 * vtpu-bench gemm: GEMM GFLOP/s of the engine (libvtpu's cpu backend) with
 * f32 and bf16 inputs against OpenBLAS's cblas_sgemm on as many threads;
 * or, with --device, of a device against OpenBLAS on one thread.
 *
 *   vtpu-bench gemm [--threads N] [--json] [--reps R] [--device PATH]
 *                   [--dtype f32|bf16|both] [--max S] [--sizes LIST]
 *
 * LIST is comma-separated: "512" (square) or "MxNxK", optionally followed
 * by ":TA", ":TB" or ":TATB". Default: squares 64..--max (4096) and the
 * GEMMs of the example models at batch 128. Each executor runs each shape
 * in R reps of ~80 ms, the executors taking turns; medians are shown.
 *
 * bf16: A and B hold the same values rounded to bf16, C is f32. Debian's
 * OpenBLAS has no sbgemm, so the bf16 ratio is against its f32 sgemm of
 * the same shape: what the engine's bf16 saves over plain f32 BLAS.
 *
 * --device: each GEMM is a job on the device (buffers from BO_CREATE, one
 * SUBMIT with an out-fence, a wait on the fence), run by the device's own
 * workers; OpenBLAS runs on one thread in the same process, in turns with
 * it. Also timed: the round trip of an empty job (a NOP submitted, its
 * fence signalled), in microseconds and as a multiple of a getppid()
 * syscall timed in the same run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "vtpu.h"
#include "vtpu_engine.h"

#define TARGET_S 0.08 /* seconds per executor per rep */

#define DT_F32 (1 << 0)
#define DT_BF16 (1 << 1)

struct shape {
	const char *name;
	uint32_t m, n, k, flags;
};

/* The example models' GEMMs at batch 128 (im2col for the convs). */
static const struct shape model_shapes[] = {
	{ "mlp fc1 fwd", 128, 512, 784, 0 },
	{ "mlp fc2 fwd", 128, 512, 512, 0 },
	{ "mlp fc3 fwd", 128, 10, 512, 0 },
	{ "mlp fc1 dX", 128, 784, 512, VTPU_GEMM_TRANS_B },
	{ "mlp fc2 dX", 128, 512, 512, VTPU_GEMM_TRANS_B },
	{ "mlp fc3 dX", 128, 512, 10, VTPU_GEMM_TRANS_B },
	{ "mlp fc1 dW", 784, 512, 128, VTPU_GEMM_TRANS_A },
	{ "mlp fc2 dW", 512, 512, 128, VTPU_GEMM_TRANS_A },
	{ "mlp fc3 dW", 512, 10, 128, VTPU_GEMM_TRANS_A },
	{ "mnist conv 1->64", 128 * 26 * 26, 64, 9, 0 },
	{ "cifar conv 3->32", 128 * 32 * 32, 32, 27, 0 },
	{ "cifar conv 32->32", 128 * 32 * 32, 32, 288, 0 },
	{ "cifar conv 32->64", 128 * 32 * 32, 64, 288, 0 },
};

struct gemm_opts {
	struct bench_opts b;
	int dtypes;		/* DT_* */
	uint32_t max;		/* largest default square */
	const char *sizes;	/* --sizes, or NULL */
};

/* Where the operands live: process memory (cpu backend) or a device. */
struct place {
	struct vtpu_dev *dev;	/* NULL: process memory */
	uint32_t queue;
};

/* One shape's operands: A and B as f32 and as bf16, C. */
struct operands {
	struct vtpu_bo a, b, a16, b16, c;
	struct vtpu_cmdbuf cb32, cb16;	/* the GEMM on f32, on bf16 */
};

static int bo_alloc(const struct place *pl, uint64_t size, struct vtpu_bo *bo)
{
	memset(bo, 0, sizeof(*bo));
	return pl->dev ? vtpu_bo_create(pl->dev, size, bo) :
			 vtpu_cpu_bo_create(size, bo);
}

static void bo_free(const struct place *pl, struct vtpu_bo *bo)
{
	if (!bo->map)
		return;
	if (pl->dev)
		vtpu_bo_destroy(pl->dev, bo);
	else
		vtpu_cpu_bo_destroy(bo);
}

static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* Deterministic values in [-0.06, 0.06], f32 and bf16. */
static void fill(float *f, uint16_t *h, uint64_t n, uint32_t mul,
		 uint32_t mod)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		f[i] = (float)((i * mul) % mod) * 0.01f - 0.005f * (mod - 1);
		h[i] = to_bf16(f[i]);
	}
}

static void gemm_cmd(struct vtpu_cmdbuf *cb, const struct shape *s,
		     uint32_t dtype, const struct vtpu_bo *a,
		     const struct vtpu_bo *b, const struct vtpu_bo *c)
{
	struct vtpu_gemm_desc g = {
		.m = s->m, .n = s->n, .k = s->k, .flags = s->flags,
		.dtype = dtype, .alpha = 1.0f, .beta = 0.0f,
	};

	vtpu_cmdbuf_init(cb);
	g.a_buf = vtpu_cmdbuf_use(cb, a);
	g.b_buf = vtpu_cmdbuf_use(cb, b);
	g.c_buf = vtpu_cmdbuf_use(cb, c);
	vtpu_cmdbuf_gemm(cb, &g);
}

static void operands_free(const struct place *pl, struct operands *op)
{
	vtpu_cmdbuf_fini(&op->cb32);
	vtpu_cmdbuf_fini(&op->cb16);
	bo_free(pl, &op->a);
	bo_free(pl, &op->b);
	bo_free(pl, &op->a16);
	bo_free(pl, &op->b16);
	bo_free(pl, &op->c);
}

/* Return: 0 or -errno (the buffers do not fit). */
static int operands_init(const struct place *pl, const struct shape *s,
			 struct operands *op)
{
	uint64_t na = (uint64_t)s->m * s->k, nb = (uint64_t)s->k * s->n;
	int ret;

	memset(op, 0, sizeof(*op));
	ret = bo_alloc(pl, na * 4, &op->a);
	if (!ret)
		ret = bo_alloc(pl, nb * 4, &op->b);
	if (!ret)
		ret = bo_alloc(pl, na * 2, &op->a16);
	if (!ret)
		ret = bo_alloc(pl, nb * 2, &op->b16);
	if (!ret)
		ret = bo_alloc(pl, (uint64_t)s->m * s->n * 4, &op->c);
	if (ret) {
		operands_free(pl, op);
		return ret;
	}
	/* touches everything now: page faults are slow in a VM */
	fill(op->a.map, op->a16.map, na, 7, 13);
	fill(op->b.map, op->b16.map, nb, 5, 11);
	gemm_cmd(&op->cb32, s, VTPU_DTYPE_F32, &op->a, &op->b, &op->c);
	gemm_cmd(&op->cb16, s, VTPU_DTYPE_BF16, &op->a16, &op->b16, &op->c);
	return op->cb32.error ? op->cb32.error : op->cb16.error;
}

#define RUNNER(name_, run_, ctx_, work_)                                       \
	((struct bench_runner){ .name = name_, .run = run_, .ctx = ctx_,       \
				.work = work_ })

/* ---- executors ----------------------------------------------------------- */

/*
 * What is measured: the engine (the cpu backend on --threads threads,
 * beside OpenBLAS on as many) or a device (its own workers, beside
 * OpenBLAS on one thread).
 */
struct gemm_bench {
	const struct gemm_opts *o;
	struct place pl;		/* the executor's memory, and queue */
	struct vtpu_cpu *engine;	/* NULL: the device runs the GEMMs */
	struct vtpu_cpu *blas;
	const char *executor;		/* "engine" or "device" */
	char json[192];			/* the executor's fields, JSON */
};

/* One run of @cb: on @cpu (run_cpu) or as a job in @pl (run_dev). */
struct job_run {
	struct vtpu_cpu *cpu;
	const struct place *pl;
	const struct vtpu_cmdbuf *cb;
};

static int run_cpu(void *p)
{
	struct job_run *r = p;
	struct vtpu_job job = { 0 };

	return vtpu_cpu_run(r->cpu, r->cb, &job);
}

/* One job: submit with an out-fence, wait for the fence. */
static int run_dev(void *p)
{
	struct job_run *r = p;
	struct vtpu_job job = { .queue = r->pl->queue, .want_out_fence = 1 };
	int ret;

	ret = vtpu_submit(r->pl->dev, r->cb, &job);
	if (ret)
		return ret;
	ret = vtpu_fence_wait(job.out_fence, -1);
	close(job.out_fence);
	return ret;
}

static int run_getppid(void *p)
{
	syscall(SYS_getppid);
	return 0;
}

/* ---- output --------------------------------------------------------------- */

static void table_header(const char *executor)
{
	printf("%-20s %7s %6s %6s  %s  %4s f32  openblas  ratio   %4s bf16  "
	       "ratio\n", "shape", "m", "n", "k", "op", executor, executor);
	printf("%-20s %7s %6s %6s  %s  %9s %9s %6s   %9s\n", "", "", "", "",
	       "  ", "GFLOP/s", "GFLOP/s", "", "GFLOP/s");
}

/* A rate in GFLOP/s, or "-" when not measured (@r NULL). */
static void rate_cell(const struct bench_runner *r)
{
	if (r)
		printf(r->rate >= 10 ? " %9.1f" : " %9.3f", r->rate);
	else
		printf(" %9s", "-");
}

static void ratio_cell(const struct bench_runner *r,
		       const struct bench_runner *base)
{
	if (r && base->rate > 0)
		printf(" %6.3f", r->rate / base->rate);
	else
		printf(" %6s", "-");
}

/* A table row, or a JSON row per dtype; @f32, @bf16 may be NULL. */
static void print_row(const struct gemm_bench *gb, const struct shape *s,
		      const struct bench_runner *f32,
		      const struct bench_runner *blas,
		      const struct bench_runner *bf16)
{
	static const char *const ops[] = { "NN", "TN", "NT", "TT" };
	int ta = !!(s->flags & VTPU_GEMM_TRANS_A);
	int tb = !!(s->flags & VTPU_GEMM_TRANS_B);
	const struct bench_runner *r;
	int d;

	if (!gb->o->b.json) {
		printf("%-20s %7u %6u %6u  %s ", s->name, s->m, s->n, s->k,
		       ops[ta + 2 * tb]);
		rate_cell(f32);
		rate_cell(blas);
		ratio_cell(f32, blas);
		printf("  ");
		rate_cell(bf16);
		ratio_cell(bf16, blas);
		printf("\n");
		fflush(stdout);
		return;
	}
	for (d = 0; d < 2; d++) {
		r = d ? bf16 : f32;
		if (!r)
			continue;
		printf("{\"shape\":\"%s\",\"m\":%u,\"n\":%u,\"k\":%u,"
		       "\"trans_a\":%d,\"trans_b\":%d,\"dtype\":\"%s\","
		       "\"executor\":\"%s\",%s,\"iters\":%d,\"reps\":%d,"
		       "\"%s_gflops\":%.3f,\"openblas_gflops\":%.3f,"
		       "\"ratio\":%.3f}\n", s->name, s->m, s->n, s->k, ta, tb,
		       d ? "bf16" : "f32", gb->executor, gb->json, r->iters,
		       gb->o->b.reps, gb->executor, r->rate, blas->rate,
		       r->rate / blas->rate);
	}
	fflush(stdout);
}

/* Say why a run failed; a rejected stream gets the validator's reason. */
static void print_failure(const struct gemm_bench *gb, const struct shape *s,
			  int err, const struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job = { .queue = gb->pl.queue };
	char msg[256] = "";
	uint32_t status;
	int ret = 0;

	/* once more, for the explanation */
	if (err == -EINVAL && gb->engine)
		ret = vtpu_cpu_run(gb->engine, cb, &job);
	else if (err == -EINVAL)
		ret = vtpu_submit(gb->pl.dev, cb, &job);
	if (ret && job.error.reason)
		vtpu_job_strerror(cb, &job, msg, sizeof(msg));
	else if (!ret && !gb->engine && err == -EINVAL)
		vtpu_wait(gb->pl.dev, gb->pl.queue, job.seqno, -1, &status,
			  NULL);
	fprintf(stderr, "vtpu-bench: %ux%ux%u on the %s: %s%s%s\n", s->m, s->n,
		s->k, gb->executor, strerror(-err), *msg ? ": " : "", msg);
}

/* ---- the measurements ----------------------------------------------------- */

static int bench_shape(struct gemm_bench *gb, const struct shape *s)
{
	const struct gemm_opts *o = gb->o;
	int (*run)(void *) = gb->engine ? run_cpu : run_dev;
	struct job_run x32, x16, b32;
	struct bench_runner r[3];
	struct operands op;
	double gflop = 2e-9 * s->m * s->n * s->k;
	int n = 0, i32 = -1, ib, i16 = -1, ret;

	ret = operands_init(&gb->pl, s, &op);
	if (ret) {
		fprintf(stderr, "vtpu-bench: %ux%ux%u on the %s: %s\n", s->m,
			s->n, s->k, gb->executor, strerror(-ret));
		return ret;
	}
	x32 = (struct job_run){ gb->engine, &gb->pl, &op.cb32 };
	x16 = (struct job_run){ gb->engine, &gb->pl, &op.cb16 };
	b32 = (struct job_run){ gb->blas, NULL, &op.cb32 };
	if (o->dtypes & DT_F32) {
		i32 = n;
		r[n++] = RUNNER("f32", run, &x32, gflop);
	}
	ib = n;
	r[n++] = RUNNER("openblas", run_cpu, &b32, gflop);
	if (o->dtypes & DT_BF16) {
		i16 = n;
		r[n++] = RUNNER("bf16", run, &x16, gflop);
	}
	ret = bench_compare(r, n, o->b.reps, TARGET_S, NULL);
	if (ret)
		print_failure(gb, s, ret,
			      i16 >= 0 && r[i16].err ? &op.cb16 : &op.cb32);
	else
		print_row(gb, s, i32 >= 0 ? &r[i32] : NULL, &r[ib],
			  i16 >= 0 ? &r[i16] : NULL);
	operands_free(&gb->pl, &op);
	return ret;
}

/* The round trip of an empty job, against a getppid() syscall. */
static int bench_nop(struct gemm_bench *gb)
{
	struct vtpu_cmd_hdr nop = { VTPU_OP_NOP, sizeof(nop) };
	struct vtpu_cmdbuf cb;
	struct job_run d = { NULL, &gb->pl, &cb };
	struct bench_runner r[2] = {
		RUNNER("nop job", run_dev, &d, 1),
		RUNNER("getppid", run_getppid, NULL, 1),
	};
	double nop_us, sys_us;
	int ret;

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_append(&cb, &nop);
	ret = bench_compare(r, 2, gb->o->b.reps, TARGET_S, NULL);
	vtpu_cmdbuf_fini(&cb);
	if (ret) {
		fprintf(stderr, "vtpu-bench: empty job: %s\n", strerror(-ret));
		return ret;
	}
	nop_us = 1e6 / r[0].rate;
	sys_us = 1e6 / r[1].rate;
	if (gb->o->b.json)
		printf("{\"nop\":true,\"executor\":\"device\",%s,\"iters\":%d,"
		       "\"reps\":%d,\"nop_us\":%.3f,\"getppid_us\":%.4f,"
		       "\"nop_in_syscalls\":%.1f}\n", gb->json, r[0].iters,
		       gb->o->b.reps, nop_us, sys_us, nop_us / sys_us);
	else
		printf("# empty job (NOP submit -> fence signalled): %.1f us = "
		       "%.0f x getppid() (%.3f us)\n", nop_us, nop_us / sys_us,
		       sys_us);
	fflush(stdout);
	return 0;
}

/* ---- setup ---------------------------------------------------------------- */

static int engine_begin(struct gemm_bench *gb)
{
	const struct gemm_opts *o = gb->o;
	const char *simd;

	gb->executor = "engine";
	gb->engine = vtpu_cpu_create(o->b.threads, -1, VTPU_CPU_GEMM_ENGINE);
	gb->blas = vtpu_cpu_create(o->b.threads, -1, VTPU_CPU_GEMM_OPENBLAS);
	if (!gb->engine || !gb->blas) {
		perror("vtpu-bench: vtpu_cpu_create");
		return -1;
	}
	simd = vtpu_engine_simd_name((uint32_t)vtpu_cpu_simd(gb->engine));
	snprintf(gb->json, sizeof(gb->json), "\"threads\":%d,\"simd\":\"%s\"",
		 o->b.threads, simd);
	if (o->b.json) {
		printf("{\"header\":true,\"executor\":\"engine\",%s,"
		       "\"openblas_core\":\"%s\",\"openblas_detected\":\"%s\"}\n",
		       gb->json, openblas_get_corename(),
		       bench_openblas_detected());
		return 0;
	}
	printf("# vtpu-bench gemm: %d thread(s), engine simd %s, OpenBLAS core "
	       "%s (%s), median of %d\n# bf16: A and B bf16, C f32; its ratio "
	       "is to OpenBLAS f32 (sgemm)\n", o->b.threads, simd,
	       bench_openblas_core(), openblas_get_config(), o->b.reps);
	table_header("eng");
	return 0;
}

static int device_begin(struct gemm_bench *gb)
{
	const struct gemm_opts *o = gb->o;
	uint64_t simd = 0, cores = 0;
	int ret;

	gb->executor = "device";
	gb->pl.dev = vtpu_open(o->b.device);
	if (!gb->pl.dev) {
		fprintf(stderr, "vtpu-bench: %s: %s%s\n", o->b.device,
			strerror(errno), vtpu_open_hint(errno));
		return -1;
	}
	ret = vtpu_queue_create(gb->pl.dev, VTPU_QUEUE_PRIORITY_NORMAL,
				&gb->pl.queue);
	if (!ret)
		ret = vtpu_get_param(gb->pl.dev, VTPU_PARAM_SIMD_LEVEL, &simd);
	if (!ret)
		ret = vtpu_get_param(gb->pl.dev, VTPU_PARAM_NUM_CORES, &cores);
	if (ret) {
		fprintf(stderr, "vtpu-bench: %s: %s\n", o->b.device,
			strerror(-ret));
		return -1;
	}
	gb->blas = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_OPENBLAS);
	if (!gb->blas) {
		perror("vtpu-bench: vtpu_cpu_create");
		return -1;
	}
	snprintf(gb->json, sizeof(gb->json),
		 "\"device\":\"%s\",\"simd\":\"%s\",\"cores\":%llu,"
		 "\"openblas_threads\":1", o->b.device,
		 vtpu_engine_simd_name((uint32_t)simd),
		 (unsigned long long)cores);
	if (o->b.json)
		printf("{\"header\":true,\"executor\":\"device\",%s,"
		       "\"openblas_core\":\"%s\",\"openblas_detected\":\"%s\"}\n",
		       gb->json, openblas_get_corename(),
		       bench_openblas_detected());
	else
		printf("# vtpu-bench gemm --device %s: simd %s, %llu core(s); "
		       "OpenBLAS core %s on 1 thread; median of %d\n",
		       o->b.device, vtpu_engine_simd_name((uint32_t)simd),
		       (unsigned long long)cores, bench_openblas_core(),
		       o->b.reps);
	ret = bench_nop(gb);
	if (!ret && !o->b.json)
		table_header("dev");
	return ret;
}

static void gemm_bench_end(struct gemm_bench *gb)
{
	vtpu_cpu_destroy(gb->engine);
	vtpu_cpu_destroy(gb->blas);
	if (gb->pl.dev) {
		vtpu_queue_destroy(gb->pl.dev, gb->pl.queue);
		vtpu_close(gb->pl.dev);
	}
}

/* ---- the subcommand ------------------------------------------------------- */

static int parse_shape(const char *tok, struct shape *s, char *name,
		       size_t namelen)
{
	unsigned int m, n, k;
	const char *colon = strchr(tok, ':');

	memset(s, 0, sizeof(*s));
	if (sscanf(tok, "%ux%ux%u", &m, &n, &k) == 3)
		s->m = m, s->n = n, s->k = k;
	else if (sscanf(tok, "%u", &m) == 1)
		s->m = s->n = s->k = m;
	else
		return -1;
	if (!s->m || !s->n || !s->k)
		return -1;
	if (colon) {
		if (strstr(colon, "TA"))
			s->flags |= VTPU_GEMM_TRANS_A;
		if (strstr(colon, "TB"))
			s->flags |= VTPU_GEMM_TRANS_B;
	}
	snprintf(name, namelen, "%s", tok);
	s->name = name;
	return 0;
}

/* Every shape: --sizes, else the default squares and model shapes. */
static int for_each_shape(struct gemm_bench *gb)
{
	const struct gemm_opts *o = gb->o;
	char name[32];
	struct shape s;
	size_t i;
	int fails = 0;

	if (o->sizes) {
		char *list = strdup(o->sizes), *save = NULL, *tok;

		for (tok = strtok_r(list, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (parse_shape(tok, &s, name, sizeof(name))) {
				fprintf(stderr, "vtpu-bench: bad size '%s'\n",
					tok);
				free(list);
				return -1;
			}
			fails += !!bench_shape(gb, &s);
		}
		free(list);
		return fails;
	}
	for (s = (struct shape){ "square", 64, 64, 64, 0 }; s.m <= o->max;
	     s.m *= 2, s.n = s.k = s.m)
		fails += !!bench_shape(gb, &s);
	for (i = 0; i < sizeof(model_shapes) / sizeof(model_shapes[0]); i++)
		fails += !!bench_shape(gb, &model_shapes[i]);
	return fails;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: vtpu-bench gemm %s\n"
		"                       [--dtype f32|bf16|both] [--max S] "
		"[--sizes S,MxNxK[:TA|:TB|:TATB],...]\n", BENCH_OPTS_USAGE);
	return 2;
}

int bench_gemm(int argc, char **argv)
{
	struct gemm_opts o = { .dtypes = DT_F32 | DT_BF16, .max = 4096 };
	struct gemm_bench gb;
	int i, ret;

	bench_opts_init(&o.b);
	for (i = 1; i < argc; i++) {
		ret = bench_opt(&o.b, argc, argv, &i);
		if (ret > 0)
			continue;
		if (ret < 0 || i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--max")) {
			o.max = (uint32_t)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--sizes")) {
			o.sizes = argv[++i];
		} else if (!strcmp(argv[i], "--dtype")) {
			i++;
			if (!strcmp(argv[i], "f32"))
				o.dtypes = DT_F32;
			else if (!strcmp(argv[i], "bf16"))
				o.dtypes = DT_BF16;
			else if (!strcmp(argv[i], "both"))
				o.dtypes = DT_F32 | DT_BF16;
			else
				return usage();
		} else {
			return usage();
		}
	}
	bench_opts_done(&o.b);

	memset(&gb, 0, sizeof(gb));
	gb.o = &o;
	ret = o.b.device ? device_begin(&gb) : engine_begin(&gb);
	if (!ret)
		ret = for_each_shape(&gb);
	gemm_bench_end(&gb);
	return ret ? 1 : 0;
}
