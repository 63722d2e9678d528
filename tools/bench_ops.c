// SPDX-License-Identifier: MIT
/*
 * vtpu-bench ops: single commands of the image networks (issue 27's
 * Xception- and ResNet-style layers), one at a time, on the cpu backend.
 *
 *   vtpu-bench ops [--threads N] [--json] [--reps R] [--batch N]
 *                  [--size S] [--channels C]
 *
 * A layer of --batch (default 64) images of --size x --size (32) pixels
 * and --channels (64) channels, NHWC: a tensor of T bytes. Most of its
 * commands are bound by memory, not arithmetic: each row gives the
 * command's time and the bytes it must move at least (in units of T: an
 * element-wise add reads two tensors and writes one, 3 T) per second,
 * and that rate against the element-wise add's, the stream the machine
 * sustains. The pointwise convolution's GEMMs (forward: pixels x C x C;
 * weight gradient: C x C x pixels, A transposed) and the strided 1 x 1
 * shortcut's CONV and CONV_WGRAD (C / 2 channels to C at stride 2) are
 * arithmetic: GFLOP/s, against OpenBLAS's on the same threads (when it
 * is there).
 *
 * All rows take turns (bench_compare: a rep of each, then the next), so
 * that a shared machine's load hits them alike; the median of --reps
 * (default 5) is shown, and each ratio is the median of the paired
 * reps' ratios. The inputs are set once (batch norm's gradient and the
 * pool's gradient after their forward, whose statistics and indices they
 * read); the commands write their outputs, so every rep does the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vtpu.h"

#define MAX_ROWS 16

/* One command on one executor. */
struct op_row {
	const char *name;
	const char *unit;	/* "GB/s" or "GFLOP/s" */
	double work;		/* GB or GFLOP a command */
	double moved;		/* memory rows: the tensors it moves (x T) */
	int vs;			/* the row its ratio is against, or -1 */
	struct vtpu_cpu *cpu;
	struct vtpu_cmdbuf cb;
};

static int run_row(void *ctx)
{
	struct op_row *r = ctx;
	struct vtpu_job job;

	memset(&job, 0, sizeof(job));
	return vtpu_cpu_run(r->cpu, &r->cb, &job);
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: vtpu-bench ops " BENCH_OPTS_USAGE "\n"
		"                      [--batch N] [--size S] [--channels C]\n");
	exit(status);
}

static int bo_new(struct vtpu_bo *bo, uint64_t bytes, uint32_t seed)
{
	float *p;
	uint64_t i;

	if (vtpu_cpu_bo_create(bytes, bo))
		return -1;
	p = bo->map;
	/* values of either sign around 1, no two channels alike */
	for (i = 0; i < bytes / 4; i++)
		p[i] = (float)((i * 2654435761u + seed) % 1024) / 512.0f -
		       0.9f;
	return 0;
}

#define REF(cb, bo) VTPU_REF(vtpu_cmdbuf_use(cb, bo), 0)

int bench_ops(int argc, char **argv)
{
	struct bench_opts o;
	uint32_t batch = 64, size = 32, ch = 64, rows, i, n = 0;
	struct vtpu_bo x, y, dy, dx, g, be, st, mm, mv, dg, db, w, px, pi, wc;
	struct vtpu_cpu *cpu, *blas;
	struct op_row row[MAX_ROWS];
	struct bench_runner run[MAX_ROWS];
	double *rates, t_gb;
	uint64_t t;
	int a, ret = 0, reps;

	bench_opts_init(&o);
	for (a = 1; a < argc; a++) {
		int c = bench_opt(&o, argc, argv, &a);

		if (c < 0)
			usage(2);
		if (c)
			continue;
		if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))
			usage(0);
		if (a + 1 >= argc)
			usage(2);
		if (!strcmp(argv[a], "--batch"))
			batch = (uint32_t)atoi(argv[++a]);
		else if (!strcmp(argv[a], "--size"))
			size = (uint32_t)atoi(argv[++a]);
		else if (!strcmp(argv[a], "--channels"))
			ch = (uint32_t)atoi(argv[++a]);
		else
			usage(2);
	}
	bench_opts_done(&o);
	if (o.device || !batch || size < 4 || size > 1024 || !ch ||
	    ch > 4096 || (uint64_t)batch * size * size * ch > (1ull << 28)) {
		fprintf(stderr, "vtpu-bench ops: the cpu backend only, and "
				"1 <= batch, 4 <= size <= 1024, 1 <= channels "
				"<= 4096, at most 2^28 elements\n");
		return 2;
	}
	reps = o.reps;
	rows = batch * size * size;
	t = (uint64_t)rows * ch * 4;
	t_gb = (double)t / 1e9;

	cpu = vtpu_cpu_create(o.threads, -1, VTPU_CPU_GEMM_ENGINE);
	if (!cpu) {
		perror("vtpu-bench ops: cpu backend");
		return 1;
	}
	blas = vtpu_cpu_create(o.threads, -1, VTPU_CPU_GEMM_OPENBLAS);
	if (bo_new(&x, t, 1) || bo_new(&y, t, 2) || bo_new(&dy, t, 3) ||
	    bo_new(&dx, t, 4) || bo_new(&g, ch * 4, 5) ||
	    bo_new(&be, ch * 4, 6) || bo_new(&st, ch * 8, 7) ||
	    bo_new(&mm, ch * 4, 8) || bo_new(&mv, ch * 4, 9) ||
	    bo_new(&dg, ch * 4, 10) || bo_new(&db, ch * 4, 11) ||
	    bo_new(&w, 9 * ch * 4, 12) || bo_new(&px, t, 13) ||
	    bo_new(&pi, t, 14) || bo_new(&wc, (uint64_t)ch * ch * 4, 15)) {
		perror("vtpu-bench ops: buffers");
		return 1;
	}

#define ROW(nm, unit_, work_, moved_, vs_, exec)                               \
	do {                                                                   \
		row[n] = (struct op_row){ .name = nm, .unit = unit_,           \
					  .work = work_, .moved = moved_,      \
					  .vs = vs_, .cpu = exec };            \
		vtpu_cmdbuf_init(&row[n].cb);                                  \
	} while (0)
#define DONE() (n++)

	/* 0: the stream: z = x + y */
	ROW("ew_add", "GB/s", 3 * t_gb, 3, -1, cpu);
	ret |= vtpu_cmdbuf_elementwise(&row[n].cb, VTPU_EW_ADD, (uint64_t)rows * ch,
				0, 0, REF(&row[n].cb, &x),
				REF(&row[n].cb, &dy), REF(&row[n].cb, &y));
	DONE();
	for (a = 0; a < 2; a++) {
		/*
		 * The forward (training, ReLU): the statistics, then y, x
		 * read twice and y written; the gradient: the sums (x, dy),
		 * then dx (x, dy again), five tensors. Each builder takes
		 * its own fields of the description.
		 */
		struct vtpu_batchnorm_desc d = {
			.rows = rows, .channels = ch, .epsilon = 1e-3f,
			.momentum = 0.99f,
			.flags = a ? 0 : VTPU_BATCHNORM_TRAINING |
					 VTPU_BATCHNORM_RELU,
		};
		struct vtpu_cmdbuf *cb;

		ROW(a ? "batchnorm_grad" : "batchnorm", "GB/s",
		    (a ? 5 : 3) * t_gb, a ? 5 : 3, 0, cpu);
		cb = &row[n].cb;
		d.x = REF(cb, &x);
		d.gamma = REF(cb, &g);
		d.stats = REF(cb, &st);
		if (a) {
			d.dy = REF(cb, &dy);
			d.dx = REF(cb, &dx);
			d.dgamma = REF(cb, &dg);
			d.dbeta = REF(cb, &db);
			ret |= vtpu_cmdbuf_batchnorm_grad(cb, &d);
		} else {
			d.y = REF(cb, &y);
			d.beta = REF(cb, &be);
			d.moving_mean = REF(cb, &mm);
			d.moving_var = REF(cb, &mv);
			ret |= vtpu_cmdbuf_batchnorm(cb, &d);
		}
		DONE();
	}
	{
		struct vtpu_dwconv_desc d = {
			.win = { .n = batch, .h = size, .w = size, .c = ch,
				 .kh = 3, .kw = 3, .stride_h = 1,
				 .stride_w = 1, .pad_h = 1, .pad_w = 1 },
			.oh = size, .ow = size, .mult = 1,
		};
		struct vtpu_cmdbuf *cb;

		/* x or dx, y or dy: the forward, DGRAD, WGRAD (dw at w) */
		static const struct {
			const char *name;
			int (*build)(struct vtpu_cmdbuf *cb,
				     const struct vtpu_dwconv_desc *d);
			int grad_x, grad_y;
		} dw[] = {
			{ "dwconv", vtpu_cmdbuf_dwconv, 0, 0 },
			{ "dwconv_dgrad", vtpu_cmdbuf_dwconv_dgrad, 1, 1 },
			{ "dwconv_wgrad", vtpu_cmdbuf_dwconv_wgrad, 0, 1 },
		};
		int v;

		for (v = 0; v < 3; v++) {
			ROW(dw[v].name, "GB/s", 2 * t_gb, 2, 0, cpu);
			cb = &row[n].cb;
			d.x = REF(cb, dw[v].grad_x ? &dx : &x);
			d.w = REF(cb, &w);
			d.y = REF(cb, dw[v].grad_y ? &dy : &y);
			ret |= dw[v].build(cb, &d);
			DONE();
		}
	}
	{
		/* Keras' 3x3 / 2 'same' pooling of an even size (xception) */
		struct vtpu_window pw = {
			.n = batch, .h = size, .w = size, .c = ch, .kh = 3,
			.kw = 3, .stride_h = 2, .stride_w = 2,
		};
		uint32_t fl = VTPU_POOL_PAD_END_H | VTPU_POOL_PAD_END_W;
		struct vtpu_cmdbuf *cb;

		/* x read, y and index written: a quarter tensor each */
		ROW("maxpool", "GB/s", 1.5 * t_gb, 1.5, 0, cpu);
		cb = &row[n].cb;
		ret |= vtpu_cmdbuf_maxpool_padded(cb, &pw, fl, REF(cb, &x),
					   REF(cb, &px), REF(cb, &pi));
		DONE();
		ROW("maxpool_grad", "GB/s", 1.5 * t_gb, 1.5, 0, cpu);
		cb = &row[n].cb;
		ret |= vtpu_cmdbuf_maxpool_grad_padded(cb, &pw, fl, REF(cb, &px),
						REF(cb, &pi), REF(cb, &dx));
		DONE();
	}
	{
		/*
		 * The pointwise convolution's forward and weight gradient
		 * (GEMMs), and the strided 1 x 1 shortcut's (xception's and
		 * resnet's: C / 2 channels at stride 2 to C, CONV and
		 * CONV_WGRAD)
		 */
		struct vtpu_gemm_desc fw = {
			.m = rows, .n = ch, .k = ch, .dtype = VTPU_DTYPE_F32,
			.alpha = 1,
		};
		struct vtpu_gemm_desc wg = {
			.m = ch, .n = ch, .k = rows,
			.flags = VTPU_GEMM_TRANS_A, .dtype = VTPU_DTYPE_F32,
			.alpha = 1,
		};
		struct vtpu_conv_desc sc = {
			.win = { .n = batch, .h = size, .w = size,
				 .c = ch / 2 ? ch / 2 : 1, .kh = 1, .kw = 1,
				 .stride_h = 2, .stride_w = 2 },
			.oc = ch,
		};
		double gf = 2.0 * rows * ch * ch / 1e9;
		/* y or dy: the forward, WGRAD (dw at w), as the dwconv rows */
		static const struct {
			const char *name, *blas_name;
			int (*build)(struct vtpu_cmdbuf *cb,
				     const struct vtpu_conv_desc *d);
		} sct[] = {
			{ "shortcut_s2", "shortcut_s2:openblas",
			  vtpu_cmdbuf_conv },
			{ "shortcut_s2_wgrad", "shortcut_s2_wgrad:openblas",
			  vtpu_cmdbuf_conv_wgrad },
		};
		double gs = 2.0 * batch * ((size + 1) / 2) * ((size + 1) / 2) *
			    sc.win.c * ch / 1e9;
		int e, v, first = (int)n;

		for (e = 0; e < (blas ? 2 : 1); e++) {
			struct vtpu_cpu *ex = e ? blas : cpu;
			struct vtpu_cmdbuf *cb;

/* the row's twin on OpenBLAS: the engine's four rows, then its four */
#define VS(r) (e || !blas ? -1 : first + 4 + (r))
			ROW(e ? "pointwise:openblas" : "pointwise", "GFLOP/s",
			    gf, 0, VS(0), ex);
			cb = &row[n].cb;
			fw.a_buf = vtpu_cmdbuf_use(cb, &x);
			fw.b_buf = vtpu_cmdbuf_use(cb, &wc);
			fw.c_buf = vtpu_cmdbuf_use(cb, &y);
			ret |= vtpu_cmdbuf_gemm(cb, &fw);
			DONE();
			ROW(e ? "pointwise_wgrad:openblas" : "pointwise_wgrad",
			    "GFLOP/s", gf, 0, VS(1), ex);
			cb = &row[n].cb;
			wg.a_buf = vtpu_cmdbuf_use(cb, &x);
			wg.b_buf = vtpu_cmdbuf_use(cb, &dy);
			wg.c_buf = vtpu_cmdbuf_use(cb, &wc);
			ret |= vtpu_cmdbuf_gemm(cb, &wg);
			DONE();
			for (v = 0; v < 2; v++) {
				ROW(e ? sct[v].blas_name : sct[v].name,
				    "GFLOP/s", gs, 0, VS(2 + v), ex);
				cb = &row[n].cb;
				sc.x = REF(cb, &x);
				sc.w = REF(cb, &wc);
				sc.y = REF(cb, v ? &dy : &y);
				ret |= sct[v].build(cb, &sc);
				DONE();
			}
#undef VS
		}
	}
#undef ROW
#undef DONE

	if (ret) {
		fprintf(stderr, "vtpu-bench ops: a command would not build "
				"(%d): the shape is past a limit\n", ret);
		return 1;
	}
	/* what the gradients read: the forwards' statistics and indices */
	if (run_row(&row[1]) || run_row(&row[6])) {
		fprintf(stderr, "vtpu-bench ops: a forward failed\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		run[i] = (struct bench_runner){ .name = row[i].name,
						.run = run_row, .ctx = &row[i],
						.work = row[i].work };
	rates = calloc((size_t)n * reps, sizeof(*rates));
	if (!rates || bench_compare(run, (int)n, reps, 0.05, rates)) {
		fprintf(stderr, "vtpu-bench ops: %s failed\n",
			rates ? "a command" : "memory");
		return 1;
	}

	if (o.json)
		printf("{\"bench\":\"ops\",\"header\":true,\"batch\":%u,\"size\":%u,\"channels\":%u,\"tensor_mb\":%.2f,\"threads\":%d,\"reps\":%d,\"openblas\":%s}\n",
		       batch, size, ch, t / 1e6, o.threads, reps,
		       blas ? "true" : "false");
	else
		printf("# vtpu-bench ops: %u x %ux%u x %u channels (a tensor: %.1f MB), %d threads, median of %d%s\n"
		       "# memory rows: the tensors a command moves at least, per second, against an element-wise add's (the stream)\n"
		       "# GEMM rows: GFLOP/s against OpenBLAS's on the same threads\n"
		       "%-27s %9s %9s %8s %7s %7s %7s\n",
		       batch, size, size, ch, t / 1e6, o.threads, reps,
		       blas ? "" : " (no OpenBLAS: no GEMM baseline)",
		       "command", "ms", "rate", "unit", "ratio", "min",
		       "max");
	for (i = 0; i < n; i++) {
		double ratio = 0, lo = 0, hi = 0, *p = NULL;
		int k, v = row[i].vs;

		if (v >= 0) {
			p = calloc((size_t)reps, sizeof(*p));
			if (!p)
				return 1;
			for (k = 0; k < reps; k++)
				p[k] = rates[i * reps + k] /
				       rates[v * reps + k];
			lo = hi = p[0];
			for (k = 1; k < reps; k++) {
				lo = p[k] < lo ? p[k] : lo;
				hi = p[k] > hi ? p[k] : hi;
			}
			ratio = bench_median(p, reps);
			free(p);
		}
		if (o.json)
			printf("{\"bench\":\"ops\",\"command\":\"%s\",\"ms\":%.4f,\"rate\":%.2f,\"unit\":\"%s\",\"tensors\":%.1f,\"vs\":%s%s%s,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f}\n",
			       row[i].name, row[i].work / run[i].rate * 1e3,
			       run[i].rate, row[i].unit, row[i].moved,
			       v >= 0 ? "\"" : "",
			       v >= 0 ? row[v].name : "null",
			       v >= 0 ? "\"" : "", ratio, lo, hi);
		else if (v >= 0)
			printf("%-27s %9.3f %9.1f %8s %6.2fx %6.2fx %6.2fx\n",
			       row[i].name, row[i].work / run[i].rate * 1e3,
			       run[i].rate, row[i].unit, ratio, lo, hi);
		else
			printf("%-27s %9.3f %9.1f %8s %7s %7s %7s\n",
			       row[i].name, row[i].work / run[i].rate * 1e3,
			       run[i].rate, row[i].unit, "-", "-", "-");
	}
	for (i = 0; i < n; i++)
		vtpu_cmdbuf_fini(&row[i].cb);
	free(rates);
	vtpu_cpu_destroy(cpu);
	if (blas)
		vtpu_cpu_destroy(blas);
	return 0;
}
