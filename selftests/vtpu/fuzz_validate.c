// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_validate: the command-stream validator under libFuzzer (clang,
 * -fsanitize=fuzzer,address,undefined; built and run by fuzz.mk).
 *
 * The validator is the device's only defence against user space: a stream
 * it accepts is run by the kernel's workers on kernel memory. So each
 * input is a job (buffer sizes, per-buffer strides, first iteration,
 * repeat, and a command stream) given to vtpu_engine_validate_iters();
 * when it accepts, the stream is run by the engine (op_prepare/op_run,
 * every tile and step, one thread, scalar level) on heap buffers of
 * exactly those sizes, for the first and the last iteration, so that an
 * accepted command that reaches outside its buffers is an ASan report
 * rather than a kernel memory corruption. Buffers larger than
 * FUZZ_EXEC_MAX are only validated (sizes up to 2^64 test the overflow
 * checks).
 *
 * Input: struct fuzz_job (little-endian, as on x86), then the stream,
 * cut down to a multiple of 8 bytes.
 *
 * Built with -DFUZZ_SEEDS instead (make fuzz-corpus), this file is a
 * program that writes the seed corpus: valid jobs of every opcode, each
 * checked to pass the validator and run, into the directory it is given.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu_engine.h"

#define FUZZ_MAX_BUFS 8
#define FUZZ_EXEC_MAX (16u * 1024)	/* bytes: bigger jobs are not run */
#define FUZZ_STRIDES (1u << 0)		/* fuzz_job.flags: use strides[] */

/**
 * struct fuzz_job - the head of every input
 * @nbufs: buffers the job names, taken modulo FUZZ_MAX_BUFS + 1
 * @flags: FUZZ_STRIDES
 * @repeat: iterations (0 counts as 1)
 * @first: the first iteration's number
 * @sizes: bytes of each buffer
 * @strides: bytes per iteration of each buffer (with FUZZ_STRIDES)
 */
struct fuzz_job {
	uint8_t nbufs;
	uint8_t flags;
	uint16_t repeat;
	uint32_t first;
	uint64_t sizes[FUZZ_MAX_BUFS];
	uint64_t strides[FUZZ_MAX_BUFS];
};

static void *scratch;

/* Every (tile, step) of every command, in order, as one worker would. */
static void run_iteration(const void *cmds, uint32_t size,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_hdr *cmd;
	struct vtpu_engine_op op;
	uint32_t pos = 0, tile, step;

	while ((cmd = vtpu_engine_next(cmds, size, &pos))) {
		vtpu_engine_op_prepare(&op, cmd, bufs, VTPU_SIMD_SCALAR, 1);
		for (tile = 0; tile < op.ntiles; tile++)
			for (step = 0; step < op.nsteps; step++)
				vtpu_engine_op_run(&op, tile, step, scratch);
	}
}

/* Run an accepted job on buffers of exactly its sizes. */
static void run_job(const struct fuzz_job *job, uint32_t nbufs,
		    const void *cmds, uint32_t size)
{
	struct vtpu_engine_buf bufs[FUZZ_MAX_BUFS];
	uint8_t *mem[FUZZ_MAX_BUFS];
	uint64_t iters[2], last;
	uint32_t i, j;

	if (!scratch) {
		scratch = aligned_alloc(64, vtpu_engine_scratch_size());
		if (!scratch)
			abort();
		memset(scratch, 0, vtpu_engine_scratch_size());
	}
	for (j = 0; j < nbufs; j++) {
		mem[j] = malloc(job->sizes[j] ? job->sizes[j] : 1);
		if (!mem[j])
			abort();
		/* 0x3f3f3f3f: 0.75f; any value is valid input */
		memset(mem[j], 0x3f, job->sizes[j]);
	}
	/* offsets grow with the iteration: the first and last are the edges */
	last = (uint64_t)job->first + (job->repeat ? job->repeat : 1) - 1;
	iters[0] = job->first;
	iters[1] = last;
	for (i = 0; i < (last > job->first ? 2u : 1u); i++) {
		for (j = 0; j < nbufs; j++) {
			uint64_t shift = (job->flags & FUZZ_STRIDES) ?
						 job->strides[j] * iters[i] : 0;

			bufs[j].base = mem[j] + shift;
			bufs[j].size = job->sizes[j] - shift;
		}
		run_iteration(cmds, size, bufs);
	}
	for (j = 0; j < nbufs; j++)
		free(mem[j]);
}

/* Return: 1 if the job was accepted (and ran, when small enough). */
static int fuzz_one(const uint8_t *data, size_t len)
{
	struct fuzz_job job;
	struct vtpu_engine_error err;
	uint64_t sizes[FUZZ_MAX_BUFS];
	uint32_t nbufs, size, j;
	int small = 1, ret;
	void *cmds;

	if (len < sizeof(job))
		return 0;
	memcpy(&job, data, sizeof(job));
	data += sizeof(job);
	len -= sizeof(job);
	nbufs = job.nbufs % (FUZZ_MAX_BUFS + 1);
	size = (uint32_t)(len > 65536 ? 65536 : len) & ~7u;

	/* the stream as the kernel has it: a copy, 8-byte aligned */
	cmds = malloc(size ? size : 1);
	if (!cmds)
		abort();
	memcpy(cmds, data, size);
	for (j = 0; j < nbufs; j++) {
		sizes[j] = job.sizes[j];
		small &= job.sizes[j] <= FUZZ_EXEC_MAX;
	}
	ret = vtpu_engine_validate_iters(cmds, size, sizes, nbufs,
					 (job.flags & FUZZ_STRIDES) ?
						 job.strides : NULL,
					 job.first, job.repeat, &err);
	if (ret && ret != -EINVAL)
		abort();
	if (!ret && small)
		run_job(&job, nbufs, cmds, size);
	free(cmds);
	return !ret;
}

#ifndef FUZZ_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	fuzz_one(data, len);
	return 0;
}

#else /* FUZZ_SEEDS: the seed corpus */

#include "vtpu.h"

static const char *outdir;
static int nseeds, nbad;

/* Buffers of the seeds: their sizes only; commands name them 0, 1, ... */
static struct vtpu_bo seed_bos[FUZZ_MAX_BUFS];

/* Write @cb as a job on buffers of @sizes (bytes), checking it passes. */
static void seed(const char *name, const struct vtpu_cmdbuf *cb,
		 const uint64_t *sizes, uint32_t nbufs, uint32_t repeat,
		 const uint64_t *strides)
{
	struct fuzz_job job = { .nbufs = (uint8_t)nbufs, .repeat = (uint16_t)repeat };
	char path[512];
	uint8_t *buf;
	size_t len = sizeof(job) + cb->size;
	FILE *f;

	memcpy(job.sizes, sizes, nbufs * sizeof(*sizes));
	if (strides) {
		job.flags = FUZZ_STRIDES;
		memcpy(job.strides, strides, nbufs * sizeof(*strides));
	}
	buf = malloc(len);
	memcpy(buf, &job, sizeof(job));
	memcpy(buf + sizeof(job), cb->data, cb->size);
	if (cb->error || !fuzz_one(buf, len)) {
		fprintf(stderr, "fuzz seeds: %s is not a valid job\n", name);
		nbad++;
	}
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		nbad++;
	}
	free(buf);
	nseeds++;
}

/* A stream naming buffers 0..n-1 in order. */
static void stream_begin(struct vtpu_cmdbuf *cb, uint32_t n)
{
	uint32_t i;

	vtpu_cmdbuf_init(cb);
	for (i = 0; i < n; i++)
		vtpu_cmdbuf_use(cb, &seed_bos[i]);
}

#define R(b, o) VTPU_REF(b, o)

static void seeds_gemm(void)
{
	static const uint64_t sz[] = { 4096, 4096, 4096, 256 };
	struct vtpu_gemm_desc g = { .m = 7, .n = 10, .k = 13, .alpha = 1.0f,
				    .a_buf = 0, .b_buf = 1, .c_buf = 2 };
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 4);
	vtpu_cmdbuf_gemm(&cb, &g);
	seed("gemm", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	g.flags = VTPU_GEMM_TRANS_A | VTPU_GEMM_BIAS | VTPU_GEMM_RELU;
	g.beta = 0.5f;
	g.bias_buf = 3;
	g.lda = 9;
	g.c_off = 64;
	vtpu_cmdbuf_gemm(&cb, &g);
	seed("gemm_ta_bias_relu", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	g = (struct vtpu_gemm_desc){ .m = 33, .n = 17, .k = 20,
				     .flags = VTPU_GEMM_TRANS_B,
				     .dtype = VTPU_DTYPE_BF16, .alpha = 2.0f,
				     .a_buf = 0, .b_buf = 1, .c_buf = 2,
				     .a_off = 2 };
	vtpu_cmdbuf_gemm(&cb, &g);
	seed("gemm_bf16_tb", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_fini(&cb);
}

static void seeds_memory(void)
{
	static const uint64_t sz[] = { 4096, 4096 };
	struct vtpu_cmd_hdr nop = { VTPU_OP_NOP, sizeof(nop) };
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 0);
	vtpu_cmdbuf_append(&cb, &nop);
	seed("nop", &cb, sz, 0, 0, NULL);
	stream_begin(&cb, 2);
	vtpu_cmdbuf_fill(&cb, 0, 8, 100, 1.5f);
	seed("fill", &cb, sz, 2, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_copy(&cb, 1, 3, 0, 5, 1000);
	seed("copy", &cb, sz, 2, 0, NULL);
	vtpu_cmdbuf_fini(&cb);
}

static void seeds_window(void)
{
	static const uint64_t sz[] = { 4096, 8192, 4096 };
	struct vtpu_window w = { .n = 2, .h = 5, .w = 6, .c = 3, .kh = 3,
				 .kw = 2, .stride_h = 1, .stride_w = 2,
				 .pad_h = 1, .pad_w = 1 };
	struct vtpu_window p = { .n = 2, .h = 6, .w = 6, .c = 4, .kh = 2,
				 .kw = 2, .stride_h = 2, .stride_w = 2 };
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 3);
	vtpu_cmdbuf_im2col(&cb, &w, R(0, 0), R(1, 0));
	seed("im2col", &cb, sz, 3, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_col2im(&cb, &w, R(1, 0), R(0, 4));
	seed("col2im", &cb, sz, 3, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_maxpool(&cb, &p, R(0, 0), R(1, 0), R(2, 0));
	seed("maxpool", &cb, sz, 3, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_maxpool_grad(&cb, &p, R(1, 0), R(2, 0), R(0, 0));
	seed("maxpool_grad", &cb, sz, 3, 0, NULL);
	vtpu_cmdbuf_fini(&cb);
}

static void seeds_vector(void)
{
	static const uint64_t sz[] = { 4096, 4096, 4096, 4096 };
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 4);
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_AXPBY, 300, 0.5f, 2.0f, R(0, 0),
				R(1, 0), R(2, 0));
	seed("ew_axpby", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_RELU, 1000, 0, 0, R(0, 0),
				VTPU_REF_NONE, R(0, 0));
	seed("ew_relu_inplace", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_RELU_GRAD, 257, 0, 0, R(0, 0),
				R(1, 4), R(2, 8));
	seed("ew_relu_grad", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_COLS, 9, 11, 13, 1.0f, 0.0f,
			   R(0, 0), R(1, 0));
	seed("reduce_cols", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_ROWS, 20, 30, 0, 0.5f, 1.0f,
			   R(0, 0), R(1, 0));
	seed("reduce_rows", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_cast(&cb, VTPU_CAST_F32_TO_BF16, 100, 0, 0, R(0, 0),
			 R(1, 2));
	seed("cast_f32_bf16", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_cast(&cb, VTPU_CAST_BF16_TO_F32, 100, 0, 0, R(1, 2),
			 R(0, 0));
	seed("cast_bf16_f32", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_cast(&cb, VTPU_CAST_U8_TO_F32, 333, 1.0f / 255, -0.5f,
			 R(1, 1), R(0, 0));
	seed("cast_u8_f32", &cb, sz, 4, 0, NULL);
	vtpu_cmdbuf_fini(&cb);
}

static void seeds_train(void)
{
	static const uint64_t sz[] = { 4096, 4096, 4096, 4096, 4096, 4096 };
	struct vtpu_xent_desc x = {
		.m = 8, .n = 10, .scale = 0.125f,
		.flags = VTPU_XENT_DLOGITS | VTPU_XENT_PROBS,
		.logits = R(0, 0), .labels = R(1, 0), .dlogits = R(2, 0),
		.loss = R(3, 0), .correct = R(3, 4), .probs = R(4, 0),
	};
	struct vtpu_adam_desc a = {
		.count = 200, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f,
		.eps = 1e-8f, .weight_decay = 0.01f,
		.flags = VTPU_ADAM_DECOUPLED, .param = R(0, 0),
		.grad = R(1, 0), .m = R(2, 0), .v = R(3, 0), .state = R(4, 0),
	};
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 6);
	vtpu_cmdbuf_softmax_xent(&cb, &x);
	seed("softmax_xent", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	x.flags = 0;
	x.dlogits = x.probs = VTPU_REF_NONE;
	vtpu_cmdbuf_softmax_xent(&cb, &x);
	seed("softmax_xent_loss_only", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_sgd(&cb, 500, 0.1f, 0.9f, 1e-4f, VTPU_SGD_NESTEROV,
			R(0, 0), R(1, 0), R(2, 0));
	seed("sgd_nesterov", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_sgd(&cb, 500, 0.1f, 0, 0, 0, R(0, 0), R(1, 0),
			VTPU_REF_NONE);
	seed("sgd", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_adam_step(&cb, 0.9f, 0.999f, R(4, 0));
	vtpu_cmdbuf_adam(&cb, &a);
	seed("adam", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_dropout(&cb, 300, 0.25f, 7, R(0, 0), R(1, 0), R(2, 0),
			    R(3, 0));
	seed("dropout", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_dropout(&cb, 1000, 0.5f, 1, R(0, 0), R(0, 0), R(2, 0),
			    R(3, 8));
	seed("dropout_inplace", &cb, sz, 6, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	{
		struct vtpu_conv_pool_desc cp = {
			.win = { .n = 1, .h = 6, .w = 6, .c = 1, .kh = 3,
				 .kw = 3, .stride_h = 1, .stride_w = 1 },
			.oc = 16, .pool_h = 2, .pool_w = 2,
			.pool_stride_h = 2, .pool_stride_w = 2,
			.flags = VTPU_CONV_RELU,
			.x = R(0, 0), .w = R(1, 0), .bias = R(2, 0),
			.y = R(3, 0), .index = R(4, 0), .dy = R(5, 0),
		};

		vtpu_cmdbuf_conv_pool(&cb, &cp);
		seed("conv_pool", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		cp.w = R(1, 1024);
		cp.bias = R(2, 1024);
		vtpu_cmdbuf_conv_pool_wgrad(&cb, &cp);
		seed("conv_pool_wgrad", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_reset(&cb);
	{
		/* 5x5x4 images, 3x3 taps, pad 1, 16 channels */
		struct vtpu_conv_desc cv = {
			.win = { .n = 2, .h = 5, .w = 5, .c = 4, .kh = 3,
				 .kw = 3, .stride_h = 1, .stride_w = 1,
				 .pad_h = 1, .pad_w = 1 },
			.oc = 16, .flags = VTPU_CONV_BIAS | VTPU_CONV_RELU,
			.x = R(0, 0), .w = R(1, 0), .bias = R(2, 0),
			.y = R(3, 0),
		};

		vtpu_cmdbuf_conv(&cb, &cv);
		seed("conv", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		cv.flags = VTPU_CONV_ACCUMULATE;
		cv.x = R(4, 0);
		vtpu_cmdbuf_conv_dgrad(&cb, &cv);
		seed("conv_dgrad", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		cv.x = R(0, 0);
		cv.w = R(5, 0);
		vtpu_cmdbuf_conv_wgrad(&cb, &cv);
		seed("conv_wgrad", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_reset(&cb);
	{
		/* the depthwise ops: 5x5x4 images, 3x3 taps, stride 2, x2 */
		struct vtpu_dwconv_desc dw = {
			.win = { .n = 2, .h = 5, .w = 5, .c = 4, .kh = 3,
				 .kw = 3, .stride_h = 2, .stride_w = 2,
				 .pad_h = 1, .pad_w = 1 },
			.oh = 3, .ow = 3, .mult = 2,
			.flags = VTPU_CONV_BIAS | VTPU_CONV_RELU,
			.x = R(0, 0), .w = R(1, 0), .bias = R(2, 0),
			.y = R(3, 0),
		};

		vtpu_cmdbuf_dwconv(&cb, &dw);
		seed("dwconv", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		dw.flags = VTPU_CONV_ACCUMULATE;
		dw.x = R(4, 0);
		vtpu_cmdbuf_dwconv_dgrad(&cb, &dw);
		seed("dwconv_dgrad", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		dw.x = R(0, 0);
		dw.w = R(5, 0);
		vtpu_cmdbuf_dwconv_wgrad(&cb, &dw);
		seed("dwconv_wgrad", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_reset(&cb);
	{
		/* batch norm over 40 rows of 8 channels: train, infer, grad */
		struct vtpu_batchnorm_desc bn = {
			.rows = 40, .channels = 8, .epsilon = 1e-3f,
			.momentum = 0.99f, .flags = VTPU_BATCHNORM_TRAINING,
			.x = R(0, 0), .y = R(1, 0), .gamma = R(2, 0),
			.beta = R(2, 64), .stats = R(2, 128),
			.moving_mean = R(2, 256), .moving_var = R(2, 512),
			.dy = R(3, 0), .dx = R(4, 0), .dgamma = R(5, 0),
			.dbeta = R(5, 64),
		};

		vtpu_cmdbuf_batchnorm(&cb, &bn);
		seed("batchnorm", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		bn.flags = VTPU_BATCHNORM_TRAINING | VTPU_BATCHNORM_RELU;
		vtpu_cmdbuf_batchnorm(&cb, &bn);
		seed("batchnorm_relu", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		bn.flags = 0;
		bn.stats = VTPU_REF_NONE;
		vtpu_cmdbuf_batchnorm(&cb, &bn);
		seed("batchnorm_infer", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		bn.stats = R(2, 128);
		vtpu_cmdbuf_batchnorm_grad(&cb, &bn);
		seed("batchnorm_grad", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_reset(&cb);
	{
		/* 'same' pools over 2x5x5x4 images: 3x3 windows, stride 2 */
		struct vtpu_window pw = {
			.n = 2, .h = 5, .w = 5, .c = 4, .kh = 3, .kw = 3,
			.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
		};
		struct vtpu_augment_desc au = {
			.n = 2, .h = 5, .w = 5, .c = 4, .oh = 3, .ow = 4,
			.seed = 7, .flags = VTPU_AUGMENT_FLAGS, .x = R(0, 0),
			.y = R(1, 0), .step = R(2, 0),
		};

		vtpu_cmdbuf_avgpool(&cb, &pw, 3, 3, R(0, 0), R(1, 0));
		seed("avgpool", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_avgpool_grad(&cb, &pw, 3, 3, R(1, 0), R(0, 0));
		seed("avgpool_grad", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		pw.pad_h = 0;
		pw.pad_w = 0;
		vtpu_cmdbuf_maxpool_padded(&cb, &pw, VTPU_POOL_PAD_END_H |
					   VTPU_POOL_PAD_END_W, R(0, 0),
					   R(1, 0), R(2, 0));
		seed("maxpool_pad_end", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_image_augment(&cb, &au);
		seed("image_augment", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_reset(&cb);
	{
		/* Bahdanau scores: 3 queries, 4 keys, batch 2, 5 units */
		struct vtpu_additive_desc ad = {
			.batch = 2, .tq = 3, .tk = 4, .units = 5,
			.q = R(0, 0), .k = R(1, 0), .v = R(2, 0), .s = R(3, 0),
			.dq = R(4, 0), .dk = R(5, 0), .dv = R(2, 64),
		};

		vtpu_cmdbuf_additive_score(&cb, &ad);
		seed("additive_score", &cb, sz, 6, 0, NULL);
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_additive_score_grad(&cb, &ad);
		seed("additive_score_grad", &cb, sz, 6, 0, NULL);
	}
	vtpu_cmdbuf_fini(&cb);
}

/* A training-like stream, repeated over a dataset with strides. */
/* The sequence ops (issue 26): embeddings, batched GEMM, masked softmax,
 * the activations, gradient clipping, the mean over valid rows, ARGMAX
 * feeding an EMBEDDING (greedy decoding). */
static void seeds_seq(void)
{
	static const uint64_t sz[] = { 4096, 4096, 4096, 4096, 4096 };
	struct vtpu_gemm_batched_desc g = {
		.batch = 3, .m = 5, .n = 6, .k = 4, .flags = VTPU_GEMM_TRANS_B,
		.alpha = 0.5f, .stride_a = 20, .stride_b = 24, .stride_c = 30,
		.a = R(0, 0), .b = R(1, 0), .c = R(2, 0),
	};
	struct vtpu_softmax_desc sm = {
		.m = 12, .n = 7, .rows_per_group = 4,
		.flags = VTPU_SOFTMAX_LENGTHS | VTPU_SOFTMAX_CAUSAL,
		.x = R(0, 0), .y = R(1, 0), .dy = VTPU_REF_NONE,
		.lengths = R(3, 0),
	};
	struct vtpu_xent_desc x = {
		.m = 8, .n = 10, .scale = 1.0f,
		.flags = VTPU_XENT_DLOGITS | VTPU_XENT_MEAN_VALID,
		.logits = R(0, 0), .labels = R(1, 0), .dlogits = R(2, 0),
		.loss = R(3, 0), .correct = R(3, 4), .probs = VTPU_REF_NONE,
	};
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 5);
	vtpu_cmdbuf_embedding(&cb, 9, 5, 7, R(0, 0), R(1, 0), R(2, 0));
	seed("embedding", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_embedding_grad(&cb, 9, 5, 7, VTPU_EMBEDDING_ACCUMULATE,
				   R(0, 0), R(2, 0), R(1, 0));
	seed("embedding_grad", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_gemm_batched(&cb, &g);
	seed("gemm_batched", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_softmax(&cb, &sm);
	seed("softmax_masked", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	sm.x = R(2, 0);
	sm.dy = R(4, 0);
	vtpu_cmdbuf_softmax_grad(&cb, &sm);
	seed("softmax_grad", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_softmax_xent(&cb, &x);
	seed("softmax_xent_mean_valid", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_SIGMOID, 200, 0, 0, R(0, 0),
				VTPU_REF_NONE, R(1, 0));
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_SIGMOID_GRAD, 200, 0, 0, R(1, 0),
				R(2, 0), R(3, 0));
	seed("ew_sigmoid", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_TANH, 300, 0, 0, R(0, 0),
				VTPU_REF_NONE, R(0, 0));
	vtpu_cmdbuf_elementwise(&cb, VTPU_EW_TANH_GRAD, 300, 0, 0, R(0, 0),
				R(2, 0), R(3, 0));
	seed("ew_tanh", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_SUMSQ_ROWS, 1, 500, 0, 1.0f, 0.0f,
			   R(0, 0), R(4, 0));
	vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_SUMSQ_ROWS, 1, 300, 0, 1.0f, 1.0f,
			   R(1, 0), R(4, 0));
	vtpu_cmdbuf_clip_norm(&cb, 500, 1.0f, R(4, 0), R(0, 0));
	vtpu_cmdbuf_clip_norm(&cb, 300, 1.0f, R(4, 0), R(1, 0));
	seed("clip_norm", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	/* greedy decoding: the logits' argmax are the next step's ids */
	vtpu_cmdbuf_argmax(&cb, 6, 37, 40, R(0, 0), R(1, 0));
	vtpu_cmdbuf_embedding(&cb, 6, 37, 8, R(1, 0), R(2, 0), R(3, 0));
	seed("argmax", &cb, sz, 5, 0, NULL);
	vtpu_cmdbuf_reset(&cb);
	{
		/*
		 * an LSTM step and its gradient, B 3, H 8: the gates as
		 * compile.c keeps them (planes, here of 2 steps), in place
		 */
		struct vtpu_lstm_desc ls = {
			.batch = 3, .hidden = 8, .row_stride = 8,
			.gate_stride = 48, .gates = R(0, 96), .act = R(0, 96),
			.c_prev = R(1, 0), .c = R(1, 128), .tc = R(1, 256),
			.h = R(1, 384), .dh = R(2, 0), .dc_next = R(3, 0),
			.dgates = R(4, 0), .dc_prev = R(3, 0),
		};

		vtpu_cmdbuf_lstm_cell(&cb, &ls);
		vtpu_cmdbuf_lstm_cell_grad(&cb, &ls);
		seed("lstm_cell", &cb, sz, 5, 0, NULL);
	}
	vtpu_cmdbuf_fini(&cb);
}

static void seeds_repeat(void)
{
	static const uint64_t sz[] = { 16384, 4096, 4096, 4096 };
	static const uint64_t strides[] = { 512, 0, 0, 0 };
	struct vtpu_gemm_desc g = { .m = 4, .n = 8, .k = 32, .alpha = 1.0f,
				    .a_buf = 0, .b_buf = 1, .c_buf = 2 };
	struct vtpu_cmdbuf cb;

	stream_begin(&cb, 4);
	vtpu_cmdbuf_gemm(&cb, &g);
	vtpu_cmdbuf_reduce(&cb, VTPU_REDUCE_COLS, 4, 8, 0, 1.0f, 1.0f,
			   R(2, 0), R(3, 0));
	vtpu_cmdbuf_sgd(&cb, 256, 0.01f, 0, 0, 0, R(1, 0), R(2, 0),
			VTPU_REF_NONE);
	seed("repeat_strides", &cb, sz, 4, 20, strides);
	vtpu_cmdbuf_fini(&cb);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	seeds_gemm();
	seeds_memory();
	seeds_window();
	seeds_vector();
	seeds_train();
	seeds_seq();
	seeds_repeat();
	printf("fuzz seeds: %d written to %s, %d bad\n", nseeds, outdir, nbad);
	return nbad ? 1 : 0;
}

#endif /* FUZZ_SEEDS */
