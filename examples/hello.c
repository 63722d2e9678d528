// SPDX-License-Identifier: MIT
/*
 * vtpu-hello: the smallest complete trip through the device.
 *
 * Opens /dev/vtpuN, allocates three buffers, fills A and B through their
 * mappings, submits one GEMM (C = relu(A * B + bias)) on a queue, waits
 * on the job's out-fence (a sync_file), and checks C against OpenBLAS on
 * the CPU. Prints each step, and exits non-zero if anything is off.
 *
 *   vtpu-hello [/dev/vtpu0] [M N K]
 *   vtpu-hello --help | --version
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vtpu.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "vtpu-hello: %s: %s\n", what, strerror(-err));
	return 1;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: vtpu-hello [DEVICE] [M N K]\n"
		"One GEMM, C = relu(A * B + bias) with A M x K and B K x N,\n"
		"through DEVICE (default /dev/vtpu0; default sizes 64 48 80),\n"
		"checked against OpenBLAS on the CPU.\n"
		"  --help     this text\n"
		"  --version  print the version and exit\n");
	return f == stdout ? 0 : 2;
}

/* A matrix size: a whole number from 1 to 16384, or -1. */
static int dim(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	return errno || *end || end == arg || v < 1 || v > 16384 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
	const char *path = "/dev/vtpu0";
	int m = 64, n = 48, k = 80;
	struct vtpu_bo a, b, c, bias;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .in_fence = -1, .want_out_fence = 1 };
	uint64_t simd, cores, ver;
	float *ref, *pa, *pb, *pc, *pbias;
	double t0, maxdiff = 0, scale = 0;
	char why[256];
	uint32_t q;
	int i, ret;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout);
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("vtpu-hello %s\n", VTPU_VERSION);
		return 0;
	}
	if (argc > 1 && argv[1][0] == '-') {
		fprintf(stderr, "vtpu-hello: unknown option '%s'\n", argv[1]);
		return usage(stderr);
	}
	if (argc != 1 && argc != 2 && argc != 5)
		return usage(stderr);
	if (argc > 1)
		path = argv[1];
	if (argc == 5) {
		m = dim(argv[2]);
		n = dim(argv[3]);
		k = dim(argv[4]);
		if (m < 0 || n < 0 || k < 0) {
			fprintf(stderr, "vtpu-hello: M, N and K must be whole numbers from 1 to 16384\n");
			return usage(stderr);
		}
	}

	struct vtpu_dev *dev = vtpu_open(path);

	if (!dev) {
		fprintf(stderr, "vtpu-hello: open %s: %s%s\n", path,
			strerror(errno), vtpu_open_hint(errno));
		return 1;
	}
	vtpu_get_param(dev, VTPU_PARAM_API_VERSION, &ver);
	vtpu_get_param(dev, VTPU_PARAM_SIMD_LEVEL, &simd);
	vtpu_get_param(dev, VTPU_PARAM_NUM_CORES, &cores);
	printf("opened %s: api %llu, %llu matrix cores, simd level %llu\n",
	       path, (unsigned long long)ver, (unsigned long long)cores,
	       (unsigned long long)simd);

	ret = vtpu_bo_create(dev, (uint64_t)m * k * 4, &a);
	if (!ret)
		ret = vtpu_bo_create(dev, (uint64_t)k * n * 4, &b);
	if (!ret)
		ret = vtpu_bo_create(dev, (uint64_t)m * n * 4, &c);
	if (!ret)
		ret = vtpu_bo_create(dev, (uint64_t)n * 4, &bias);
	if (ret)
		return fail("buffer create", ret);
	pa = a.map;
	pb = b.map;
	pc = c.map;
	pbias = bias.map;
	srand(1);
	for (i = 0; i < m * k; i++)
		pa[i] = (float)rand() / RAND_MAX - 0.5f;
	for (i = 0; i < k * n; i++)
		pb[i] = (float)rand() / RAND_MAX - 0.5f;
	for (i = 0; i < n; i++)
		pbias[i] = 0.01f * i - 0.2f;
	printf("allocated A %dx%d, B %dx%d, C %dx%d, bias %d (mapped, zeroed)\n",
	       m, k, k, n, m, n, n);

	ret = vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q);
	if (ret)
		return fail("queue create", ret);

	vtpu_cmdbuf_init(&cb);
	ret = vtpu_cmdbuf_gemm(&cb, &(struct vtpu_gemm_desc){
		.m = m, .n = n, .k = k,
		.flags = VTPU_GEMM_BIAS | VTPU_GEMM_RELU,
		.dtype = VTPU_DTYPE_F32, .alpha = 1.0f, .beta = 0.0f,
		.a_buf = vtpu_cmdbuf_use(&cb, &a),
		.b_buf = vtpu_cmdbuf_use(&cb, &b),
		.c_buf = vtpu_cmdbuf_use(&cb, &c),
		.bias_buf = vtpu_cmdbuf_use(&cb, &bias),
	});
	if (ret)
		return fail("encode", ret);

	job.queue = q;
	t0 = now_ms();
	ret = vtpu_submit(dev, &cb, &job);
	if (ret) {
		if (job.error.reason != VTPU_ERR_NONE)
			fprintf(stderr, "vtpu-hello: rejected: %s\n",
				vtpu_job_strerror(&cb, &job, why, sizeof(why)));
		return fail("submit", ret);
	}
	printf("submitted GEMM as job %llu on queue %u, out-fence fd %d\n",
	       (unsigned long long)job.seqno, q, job.out_fence);
	ret = vtpu_fence_wait(job.out_fence, 60000);
	if (ret)
		return fail("fence wait", ret);
	printf("fence signalled after %.1f ms\n", now_ms() - t0);
	close(job.out_fence);

	/* The reference: OpenBLAS on the CPU, then the same epilogue. */
	ref = malloc(sizeof(*ref) * m * n);
	if (!ref)
		return fail("malloc", -ENOMEM);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
		    pa, k, pb, n, 0.0f, ref, n);
	for (i = 0; i < m * n; i++) {
		float r = ref[i] + pbias[i % n];

		r = r > 0 ? r : 0;
		if (fabs(pc[i] - r) > maxdiff)
			maxdiff = fabs(pc[i] - r);
		if (fabs(r) > scale)
			scale = fabs(r);
	}
	printf("C vs OpenBLAS: max |diff| %.3g (max |C| %.3g)\n", maxdiff,
	       scale);

	free(ref);
	vtpu_cmdbuf_fini(&cb);
	vtpu_queue_destroy(dev, q);
	vtpu_bo_destroy(dev, &a);
	vtpu_bo_destroy(dev, &b);
	vtpu_bo_destroy(dev, &c);
	vtpu_bo_destroy(dev, &bias);
	vtpu_close(dev);

	if (!(maxdiff <= 1e-5 * (k + scale))) {
		printf("FAIL: the device's result differs from the CPU's\n");
		return 1;
	}
	printf("OK: the device computed relu(A*B + bias) correctly\n");
	return 0;
}
