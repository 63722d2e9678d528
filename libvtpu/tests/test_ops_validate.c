// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the validator's rejections of the training ops and
 * of GEMM in panels, through libvtpu's cpu backend: every rejection path,
 * with its reason, its operand and its words.
 */
#include "test_ops.h"

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

static void rej_fini(struct rej *r)
{
	vtpu_cpu_destroy(r->cpu);
	vtpu_cpu_bo_destroy(&r->b0);
	vtpu_cpu_bo_destroy(&r->b1);
}

/* In a TEST with a struct rej r: var = base, changed by @mut, checked. */
#define CASE(var, base, what, mut, reason, operand)                           \
	do {                                                                  \
		var = base;                                                   \
		mut;                                                          \
		check_cmd(_metadata, &r, what, &var, reason, operand);        \
	} while (0)
/*
 * Operand @opnd's (var.@fld's) four rejections: its offset @past past
 * its buffer, its offset @odd misaligned, a bad buffer, its pad set.
 */
#define OPERAND_CASES(var, base, what, fld, opnd, past, odd)                 \
	do {                                                                  \
		CASE(var, base, what " past its buffer",                      \
		     var.fld.offset = (past), VTPU_ERR_OUT_OF_BOUNDS, opnd);  \
		CASE(var, base, what " misaligned", var.fld.offset = (odd),   \
		     VTPU_ERR_MISALIGNED, opnd);                              \
		CASE(var, base, what " bad buffer", var.fld.buf = 2,          \
		     VTPU_ERR_BAD_BUFFER, opnd);                              \
		CASE(var, base, what " operand pad", var.fld.pad = 1,         \
		     VTPU_ERR_BAD_PAD, opnd);                                 \
	} while (0)

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
	/* 8x8x4 image, 3x3 windows, stride 2, pad 0 top/left: 4x4 out */
	const struct vtpu_cmd_avgpool ap0 = {
		.hdr = HDR(VTPU_OP_AVGPOOL, vtpu_cmd_avgpool),
		.win = { .n = 1, .h = 8, .w = 8, .c = 4, .kh = 3, .kw = 3,
			 .stride_h = 2, .stride_w = 2 },
		.oh = 4, .ow = 4, .x = OPND(0, 0), .y = OPND(1, 0),
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
	/* x: 256 floats in b0; sumsq: one float in b1 */
	const struct vtpu_cmd_clip_norm cn0 = {
		.hdr = HDR(VTPU_OP_CLIP_NORM, vtpu_cmd_clip_norm),
		.count = 256, .max_norm = 0x3f800000 /* 1.0 */,
		.sumsq = OPND(1, 4092), .x = OPND(0, 0),
	};
	/* x: 16 rows of 12 in rows of 16 (1008 bytes) in b0; y: 16 u32 in b1 */
	const struct vtpu_cmd_argmax am0 = {
		.hdr = HDR(VTPU_OP_ARGMAX, vtpu_cmd_argmax),
		.m = 16, .n = 12, .ldx = 16,
		.x = OPND(0, 0), .y = OPND(1, 0),
	};
	/* x: 2 images 6x5x3 (720 bytes) in b0; y: 2 of 4x3x3 (288) in b1 */
	const struct vtpu_cmd_image_augment ia0 = {
		.hdr = HDR(VTPU_OP_IMAGE_AUGMENT, vtpu_cmd_image_augment),
		.n = 2, .h = 6, .w = 5, .c = 3, .oh = 4, .ow = 3,
		.flags = VTPU_AUGMENT_FLAGS, .seed = 9,
		.x = OPND(0, 0), .y = OPND(1, 0), .step = OPND(1, 1024),
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
	/*
	 * 8 rows of 12, groups of 3 rows: x, y, dy 384 bytes each, lengths
	 * 3 u32s; the gradient writes dx at x
	 */
	const struct vtpu_cmd_softmax sm0 = {
		.hdr = HDR(VTPU_OP_SOFTMAX, vtpu_cmd_softmax),
		.m = 8, .n = 12, .rows_per_group = 3,
		.flags = VTPU_SOFTMAX_LENGTHS | VTPU_SOFTMAX_CAUSAL,
		.x = OPND(0, 0), .y = OPND(1, 0), .lengths = OPND(0, 1024),
	};
	const struct vtpu_cmd_softmax sg0g = {
		.hdr = HDR(VTPU_OP_SOFTMAX_GRAD, vtpu_cmd_softmax),
		.m = 8, .n = 12, .rows_per_group = 3,
		.flags = VTPU_SOFTMAX_LENGTHS,
		.x = OPND(1, 0), .y = OPND(0, 0), .dy = OPND(0, 512),
		.lengths = OPND(0, 1024),
	};
	struct vtpu_cmd_softmax sm;
	struct vtpu_cmd_conv cv;
	struct vtpu_cmd_conv_pool cp;
	struct vtpu_cmd_dropout dr;
	struct vtpu_cmd_im2col ic;
	struct vtpu_cmd_pool pl;
	struct vtpu_cmd_avgpool ap;
	struct vtpu_cmd_elementwise ew;
	struct vtpu_cmd_reduce rd;
	struct vtpu_cmd_softmax_xent xe;
	struct vtpu_cmd_sgd sg;
	struct vtpu_cmd_adam_step as;
	struct vtpu_cmd_adam ad;
	struct vtpu_cmd_cast ca;
	struct vtpu_cmd_clip_norm cn;
	struct vtpu_cmd_argmax am;
	struct vtpu_cmd_image_augment ia;

	ASSERT_NE(NULL, r.cpu);

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
	CASE(pl, pl0, "maxpool flags", pl.flags = 4, VTPU_ERR_BAD_FLAGS, 0);
	CASE(pl, pl0, "maxpool end pads ok", pl.flags = VTPU_POOL_FLAGS,
	     VTPU_ERR_NONE, 0);
	CASE(pl, pl0, "maxpool end pad, pad_h + 1 >= kh",
	     (pl.flags = VTPU_POOL_PAD_END_H, pl.win.pad_h = 1),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(pl, pl0, "maxpool end pad, y past its buffer",
	     (pl.flags = VTPU_POOL_PAD_END_H, pl.win.stride_h = 1,
	      pl.index.offset = 3968), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_INDEX);
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

	/* AVGPOOL / AVGPOOL_GRAD */
	CASE(ap, ap0, "avgpool ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ap, ap0, "avgpool_grad ok", ap.hdr.opcode = VTPU_OP_AVGPOOL_GRAD,
	     VTPU_ERR_NONE, 0);
	CASE(ap, ap0, "avgpool global ok",
	     (ap.win.kh = ap.win.kw = 8, ap.oh = ap.ow = 1), VTPU_ERR_NONE, 0);
	CASE(ap, ap0, "avgpool flags", ap.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(ap, ap0, "avgpool pad", ap.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(ap, ap0, "avgpool stride 0", ap.win.stride_w = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(ap, ap0, "avgpool pad_h >= kh", ap.win.pad_h = 3,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ap, ap0, "avgpool oh 0", ap.oh = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(ap, ap0, "avgpool last window past the image", ap.ow = 5,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(ap, ap0, "avgpool c 0", ap.win.c = 0, VTPU_ERR_BAD_SHAPE, 0);
	/* the fuzzer's: a 131075 x 131072 window over 5x5 images ran for ever */
	CASE(ap, ap0, "avgpool window taller than the padded image",
	     ap.win.kh = ap.win.h + 2 * ap.win.pad_h + 2, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(ap, ap0, "avgpool window wider than the padded image",
	     ap.win.kw = 131072, VTPU_ERR_BAD_SHAPE, 0);
	CASE(ap, ap0, "avgpool huge", (ap.win.n = ap.win.h = ap.win.w =
	     ap.win.c = 1u << 20), VTPU_ERR_BAD_SHAPE, 0);
	CASE(ap, ap0, "avgpool y overlaps x", ap.y.buf = 0,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(ap, ap0, "avgpool_grad dx overlaps dy",
	     (ap.hdr.opcode = VTPU_OP_AVGPOOL_GRAD, ap.x = ap.y),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);
	OPERAND_CASES(ap, ap0, "avgpool x", x, VTPU_OPERAND_X, 3500, 2);
	OPERAND_CASES(ap, ap0, "avgpool y", y, VTPU_OPERAND_Y, 3900, 2);

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
	CASE(rd, rd0, "reduce sumsq_rows ok", rd.op = VTPU_REDUCE_SUMSQ_ROWS,
	     VTPU_ERR_NONE, 0);
	CASE(rd, rd0, "reduce sumsq_rows y[m] out of bounds",
	     (rd.op = VTPU_REDUCE_SUMSQ_ROWS, rd.m = 1, rd.n = 1024,
	      rd.ldx = 1024, rd.y.offset = 4096), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_Y);
	CASE(rd, rd0, "reduce sumsq_rows y overlaps x",
	     (rd.op = VTPU_REDUCE_SUMSQ_ROWS, rd.y.buf = 0, rd.y.offset = 60),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(rd, rd0, "reduce bad op", rd.op = VTPU_REDUCE_SUMSQ_ROWS + 1,
	     VTPU_ERR_BAD_FLAGS, 0);
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
	CASE(xe, xe0, "xent flags", xe.flags = 8, VTPU_ERR_BAD_FLAGS, 0);
	CASE(xe, xe0, "xent mean over the valid rows ok",
	     xe.flags |= VTPU_XENT_MEAN_VALID, VTPU_ERR_NONE, 0);
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

	/* SOFTMAX / SOFTMAX_GRAD */
	CASE(sm, sm0, "softmax ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(sm, sm0, "softmax without lengths ok",
	     (sm.flags = 0, memset(&sm.lengths, 0, sizeof(sm.lengths))),
	     VTPU_ERR_NONE, 0);
	CASE(sm, sg0g, "softmax_grad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(sm, sm0, "softmax flags", sm.flags = 4, VTPU_ERR_BAD_FLAGS, 0);
	CASE(sm, sg0g, "softmax_grad flags", sm.flags = 1u << 31,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(sm, sm0, "softmax m 0", sm.m = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax n 0", sm.n = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax n > MAX_COLS", sm.n = VTPU_SOFTMAX_MAX_COLS + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax m > MAX_DIM", sm.m = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax m * n > MAX_ELEMS",
	     (sm.m = VTPU_MAX_DIM, sm.n = VTPU_SOFTMAX_MAX_COLS),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax rows_per_group 0", sm.rows_per_group = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sg0g, "softmax_grad rows_per_group 0",
	     sm.rows_per_group = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(sm, sm0, "softmax dy set",
	     sm.dy = (struct vtpu_operand)OPND(0, 2048), VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DY);
	CASE(sm, sm0, "softmax unused lengths set",
	     sm.flags = VTPU_SOFTMAX_CAUSAL, VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_LENGTHS);
	CASE(sm, sm0, "softmax y past its buffer", sm.y.offset = 3800,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_Y);
	CASE(sm, sm0, "softmax m * n past the buffers", sm.m = 100,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_Y);
	CASE(sm, sm0, "softmax x past its buffer", sm.x.offset = 3716,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(sm, sm0, "softmax x bad buffer", sm.x.buf = 2,
	     VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_X);
	/* 8 rows in groups of 1: 8 lengths, 32 bytes, 4 past the buffer */
	CASE(sm, sm0, "softmax lengths past its buffer",
	     (sm.rows_per_group = 1, sm.lengths.offset = 4068),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_LENGTHS);
	CASE(sm, sm0, "softmax lengths of groups of 3 fit",
	     sm.lengths.offset = 4084, VTPU_ERR_NONE, 0);
	CASE(sm, sm0, "softmax lengths misaligned", sm.lengths.offset = 1026,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_LENGTHS);
	CASE(sm, sm0, "softmax y overlaps x", (sm.y.buf = 0,
	     sm.y.offset = 380), VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(sm, sm0, "softmax y overlaps lengths", (sm.y.buf = 0,
	     sm.y.offset = 1024 - 384 + 4), VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(sm, sm0, "softmax in place", sm.y = sm.x, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(sm, sg0g, "softmax_grad dx overlaps dy", sm.x = sm.dy,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);
	CASE(sm, sg0g, "softmax_grad dx overlaps y", (sm.x.buf = 0,
	     sm.x.offset = 200), VTPU_ERR_OVERLAP, VTPU_OPERAND_DX);
	CASE(sm, sg0g, "softmax_grad dy past its buffer",
	     sm.dy.offset = 3800, VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DY);
	CASE(sm, sg0g, "softmax_grad y and dy may overlap",
	     sm.dy = sm.y, VTPU_ERR_NONE, 0);

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

	/* ELEMENTWISE's activations: y and alpha as their table says */
	CASE(ew, ew0, "elementwise sigmoid ok",
	     (ew.op = VTPU_EW_SIGMOID, memset(&ew.y, 0, sizeof(ew.y))),
	     VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise tanh in place ok",
	     (ew.op = VTPU_EW_TANH, memset(&ew.y, 0, sizeof(ew.y)),
	      ew.z = ew.x), VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise sigmoid_grad ok",
	     ew.op = VTPU_EW_SIGMOID_GRAD, VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise tanh_grad z == y ok",
	     (ew.op = VTPU_EW_TANH_GRAD, ew.z = ew.y), VTPU_ERR_NONE, 0);
	CASE(ew, ew0, "elementwise sigmoid unused y not zero",
	     ew.op = VTPU_EW_SIGMOID, VTPU_ERR_BAD_PAD, VTPU_OPERAND_Y);
	CASE(ew, ew0, "elementwise tanh unused y not zero",
	     ew.op = VTPU_EW_TANH, VTPU_ERR_BAD_PAD, VTPU_OPERAND_Y);
	CASE(ew, ew0, "elementwise tanh alpha unused",
	     (ew.op = VTPU_EW_TANH, memset(&ew.y, 0, sizeof(ew.y)),
	      ew.alpha = 0x3f800000), VTPU_ERR_BAD_PAD, 0);
	CASE(ew, ew0, "elementwise sigmoid_grad beta unused",
	     (ew.op = VTPU_EW_SIGMOID_GRAD, ew.beta = 1), VTPU_ERR_BAD_PAD, 0);
	CASE(ew, ew0, "elementwise tanh_grad y past its buffer",
	     (ew.op = VTPU_EW_TANH_GRAD, ew.y.offset = 3076),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_Y);
	CASE(ew, ew0, "elementwise sigmoid_grad z partly over y",
	     (ew.op = VTPU_EW_SIGMOID_GRAD, ew.z.buf = 0, ew.z.offset = 1028),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Z);

	/* CLIP_NORM */
	CASE(cn, cn0, "clip_norm ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(cn, cn0, "clip_norm largest max_norm ok", cn.max_norm = 0x7f7fffff,
	     VTPU_ERR_NONE, 0);
	CASE(cn, cn0, "clip_norm smallest max_norm ok", cn.max_norm = 0x00800000,
	     VTPU_ERR_NONE, 0);
	CASE(cn, cn0, "clip_norm max_norm 0", cn.max_norm = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm -0", cn.max_norm = 0x80000000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm -1", cn.max_norm = 0xbf800000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm denormal", cn.max_norm = 0x00000001,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm +Inf", cn.max_norm = 0x7f800000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm NaN", cn.max_norm = 0x7fc00000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm max_norm -NaN", cn.max_norm = 0xffc00000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm pad", cn.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(cn, cn0, "clip_norm count 0", cn.count = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm count > MAX_ELEMS",
	     cn.count = VTPU_MAX_ELEMS + 1, VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm count * 4 overflows", cn.count = 1ull << 62,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(cn, cn0, "clip_norm x past its buffer", cn.count = 1025,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(cn, cn0, "clip_norm x misaligned", cn.x.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_X);
	OPERAND_CASES(cn, cn0, "clip_norm sumsq", sumsq, VTPU_OPERAND_SUMSQ,
		      4096, 4090);
	CASE(cn, cn0, "clip_norm x over sumsq (its last element)",
	     (cn.sumsq.buf = 0, cn.sumsq.offset = 1020), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_X);
	CASE(cn, cn0, "clip_norm sumsq just past x ok",
	     (cn.sumsq.buf = 0, cn.sumsq.offset = 1024), VTPU_ERR_NONE, 0);

	/* ARGMAX */
	CASE(am, am0, "argmax ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(am, am0, "argmax ldx == n ok", am.ldx = 12, VTPU_ERR_NONE, 0);
	CASE(am, am0, "argmax 1 x 1 ok", (am.m = am.n = am.ldx = 1),
	     VTPU_ERR_NONE, 0);
	CASE(am, am0, "argmax y just past x ok",
	     (am.y.buf = 0, am.y.offset = 1008), VTPU_ERR_NONE, 0);
	CASE(am, am0, "argmax flags 1", am.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(am, am0, "argmax flags top bit", am.flags = 0x80000000u,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(am, am0, "argmax m 0", am.m = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(am, am0, "argmax n 0", am.n = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(am, am0, "argmax m > MAX_DIM", am.m = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(am, am0, "argmax n > MAX_DIM", (am.n = VTPU_MAX_DIM + 1,
	     am.ldx = am.n), VTPU_ERR_BAD_SHAPE, 0);
	CASE(am, am0, "argmax ldx < n", am.ldx = 11, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_X);
	CASE(am, am0, "argmax ldx 0", am.ldx = 0, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_X);
	CASE(am, am0, "argmax m * ldx > MAX_ELEMS",
	     (am.m = VTPU_MAX_DIM, am.ldx = 1u << 13), VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(am, am0, "argmax m * ldx > MAX_ELEMS (ldx 2^32 - 1)",
	     (am.m = 17, am.ldx = 0xffffffffu), VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(am, am0, "argmax m * ldx == MAX_ELEMS, past its buffer",
	     (am.m = VTPU_MAX_DIM, am.ldx = 1u << 12),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(am, am0, "argmax m * ldx just below 2^36, past its buffer",
	     (am.m = 16, am.ldx = 0xffffffffu), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_X);
	CASE(am, am0, "argmax x rows past its buffer", am.ldx = 1000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	OPERAND_CASES(am, am0, "argmax x", x, VTPU_OPERAND_X, 4096, 2);
	OPERAND_CASES(am, am0, "argmax y", y, VTPU_OPERAND_INDEX, 4096 - 60, 1);
	CASE(am, am0, "argmax y over x's last element",
	     (am.y.buf = 0, am.y.offset = 1004), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_INDEX);
	CASE(am, am0, "argmax y in x's row gap (x's span)",
	     (am.y.buf = 0, am.y.offset = 48, am.m = 1), VTPU_ERR_NONE, 0);
	CASE(am, am0, "argmax y in x's row gap, two rows",
	     (am.y.buf = 0, am.y.offset = 48, am.m = 2), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_INDEX);

	/* IMAGE_AUGMENT */
	CASE(ia, ia0, "augment ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(ia, ia0, "augment centre, no flip ok", ia.flags = 0,
	     VTPU_ERR_NONE, 0);
	CASE(ia, ia0, "augment whole image ok", (ia.oh = 6, ia.ow = 5),
	     VTPU_ERR_NONE, 0);
	CASE(ia, ia0, "augment step in x's buffer ok",
	     (ia.step.buf = 0, ia.step.offset = 720), VTPU_ERR_NONE, 0);
	CASE(ia, ia0, "augment flags 4", ia.flags = 4, VTPU_ERR_BAD_FLAGS, 0);
	CASE(ia, ia0, "augment flags top bit", ia.flags = 0x80000000u,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(ia, ia0, "augment n 0", ia.n = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(ia, ia0, "augment h 0", ia.h = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(ia, ia0, "augment w 0", ia.w = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(ia, ia0, "augment c 0", ia.c = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(ia, ia0, "augment c > MAX_DIM", ia.c = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_X);
	CASE(ia, ia0, "augment oh 0", ia.oh = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment ow 0", ia.ow = 0, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment oh > h", ia.oh = 7, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment ow > w", ia.ow = 6, VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment n*h*w*c > MAX_ELEMS",
	     (ia.n = ia.h = ia.w = ia.c = VTPU_MAX_DIM), VTPU_ERR_BAD_SHAPE,
	     VTPU_OPERAND_X);
	CASE(ia, ia0, "augment n*h*w > MAX_ELEMS, c 1",
	     (ia.n = ia.h = VTPU_MAX_DIM, ia.w = 1u << 12, ia.c = 1),
	     VTPU_ERR_BAD_SHAPE, VTPU_OPERAND_X);
	CASE(ia, ia0, "augment n*h*w*c == MAX_ELEMS, past its buffer",
	     (ia.n = VTPU_MAX_DIM, ia.h = 1u << 10, ia.w = 4, ia.c = 1),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	CASE(ia, ia0, "augment x too small for n", ia.n = 12,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_X);
	OPERAND_CASES(ia, ia0, "augment x", x, VTPU_OPERAND_X, 4096 - 716,
		      2);
	OPERAND_CASES(ia, ia0, "augment y", y, VTPU_OPERAND_Y, 4096 - 284,
		      2);
	OPERAND_CASES(ia, ia0, "augment step", step, VTPU_OPERAND_STEP,
		      4096, 1025);
	CASE(ia, ia0, "augment y over x's last element",
	     (ia.y.buf = 0, ia.y.offset = 716), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment y over step",
	     (ia.step.offset = 284), VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(ia, ia0, "augment y just past x ok",
	     (ia.y.buf = 0, ia.y.offset = 720, ia.step.buf = 0,
	      ia.step.offset = 0), VTPU_ERR_NONE, 0);

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

	rej_fini(&r);
}

/* DWCONV, DWCONV_DGRAD, DWCONV_WGRAD: every rejection path. */
TEST(additive_validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	/* B 2, tq 3, tk 4, units 5: q 120 bytes, k 160, v 20, s 96 */
	const struct vtpu_cmd_additive_score as0 = {
		.hdr = HDR(VTPU_OP_ADDITIVE_SCORE, vtpu_cmd_additive_score),
		.batch = 2, .tq = 3, .tk = 4, .units = 5,
		.q = OPND(0, 0), .k = OPND(0, 256), .v = OPND(0, 512),
		.s = OPND(1, 0),
	};
	/* the gradient: ds in b0, dq, dk and dv in b1 */
	const struct vtpu_cmd_additive_score ag0 = {
		.hdr = HDR(VTPU_OP_ADDITIVE_SCORE_GRAD,
			   vtpu_cmd_additive_score),
		.batch = 2, .tq = 3, .tk = 4, .units = 5,
		.q = OPND(0, 0), .k = OPND(0, 256), .v = OPND(0, 512),
		.s = OPND(0, 1024), .dq = OPND(1, 0), .dk = OPND(1, 256),
		.dv = OPND(1, 512),
	};
	struct vtpu_cmd_additive_score as;

	ASSERT_NE(NULL, r.cpu);

	CASE(as, as0, "additive ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(as, ag0, "additive_grad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(as, ag0, "additive_grad inputs may overlap",
	     as.k = as.q, VTPU_ERR_NONE, 0);
	/* flags, pad, shape */
	CASE(as, as0, "additive flags", as.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(as, ag0, "additive_grad flags", as.flags = 1u << 31,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(as, as0, "additive pad", as.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(as, as0, "additive batch 0", as.batch = 0, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(as, as0, "additive tq 0", as.tq = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, ag0, "additive_grad tk 0", as.tk = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive units 0", as.units = 0, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(as, as0, "additive units past the limit",
	     as.units = VTPU_ADDITIVE_MAX_UNITS + 1, VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive batch past 2^24", as.batch = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive tq * units past the work limit",
	     (as.units = 64, as.tq = VTPU_ADDITIVE_MAX_WORK / 64 + 1),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, ag0, "additive_grad tk * units past the work limit",
	     (as.units = 4096, as.tk = 65), VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive B * tq * tk past 2^36",
	     (as.units = 1, as.batch = 1u << 20, as.tq = 1u << 10,
	      as.tk = 1u << 10), VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive B * tk * units past 2^36",
	     (as.units = 4096, as.batch = VTPU_MAX_DIM, as.tk = 2),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(as, as0, "additive largest scores fit the shape, not b1",
	     (as.units = 1, as.batch = 1u << 18, as.tq = 1u << 9,
	      as.tk = 1u << 9), VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_C);
	/* unused operands of the forward */
	CASE(as, as0, "additive dq set", as.dq = ag0.dq, VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DA);
	CASE(as, as0, "additive dk set", as.dk.offset = 4, VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DB);
	CASE(as, as0, "additive dv set", as.dv.buf = 1, VTPU_ERR_BAD_PAD,
	     VTPU_OPERAND_DW);
	/* operands */
	OPERAND_CASES(as, as0, "additive s", s, VTPU_OPERAND_C, 4096 - 92, 2);
	OPERAND_CASES(as, as0, "additive q", q, VTPU_OPERAND_A, 4096 - 116, 1);
	OPERAND_CASES(as, as0, "additive k", k, VTPU_OPERAND_B, 4096 - 156, 3);
	OPERAND_CASES(as, as0, "additive v", v, VTPU_OPERAND_W, 4096 - 16, 2);
	OPERAND_CASES(as, ag0, "additive_grad dq", dq, VTPU_OPERAND_DA,
		      4096 - 116, 1);
	OPERAND_CASES(as, ag0, "additive_grad dk", dk, VTPU_OPERAND_DB,
		      4096 - 156, 1);
	OPERAND_CASES(as, ag0, "additive_grad dv", dv, VTPU_OPERAND_DW,
		      4096 - 16, 1);
	OPERAND_CASES(as, ag0, "additive_grad ds", s, VTPU_OPERAND_C,
		      4096 - 92, 1);
	/* overlaps */
	CASE(as, as0, "additive s overlaps q", as.s = as.q, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_C);
	CASE(as, as0, "additive s overlaps v", (as.s.buf = 0,
	     as.s.offset = 500), VTPU_ERR_OVERLAP, VTPU_OPERAND_C);
	CASE(as, ag0, "additive_grad dq overlaps dk", as.dq.offset = 200,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DA);
	CASE(as, ag0, "additive_grad dk overlaps ds", as.dk = ag0.s,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DB);
	CASE(as, ag0, "additive_grad dv overlaps q", as.dv = ag0.q,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DW);
	EXPECT_EQ(0, r.fails);
	rej_fini(&r);
}

/* What the library says of @cmd, run alone on b0, b1: in @msg. */
static void words_of(struct rej *r, const void *cmd, char *msg, size_t len)
{
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { 0 };

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_use(&cb, &r->b0);
	vtpu_cmdbuf_use(&cb, &r->b1);
	vtpu_cmdbuf_append(&cb, cmd);
	vtpu_cpu_run(r->cpu, &cb, &job);
	vtpu_job_strerror(&cb, &job, msg, len);
	vtpu_cmdbuf_fini(&cb);
}

TEST(lstm_validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	/*
	 * B 2, H 3, gates [B][4H] (gate stride 3, row stride 12): 24 floats,
	 * 96 bytes; the states 24 bytes each
	 */
	const struct vtpu_cmd_lstm_cell lf0 = {
		.hdr = HDR(VTPU_OP_LSTM_CELL, vtpu_cmd_lstm_cell),
		.batch = 2, .hidden = 3, .row_stride = 12, .gate_stride = 3,
		.gates = (struct vtpu_operand)OPND(0, 0), .c_prev = (struct vtpu_operand)OPND(0, 128),
		.act = (struct vtpu_operand)OPND(1, 0), .c = (struct vtpu_operand)OPND(1, 128), .tc = (struct vtpu_operand)OPND(1, 192),
		.h = (struct vtpu_operand)OPND(1, 256),
	};
	/* the gradient: its inputs in b0, its outputs in b1 */
	const struct vtpu_cmd_lstm_cell_grad lg0 = {
		.hdr = HDR(VTPU_OP_LSTM_CELL_GRAD, vtpu_cmd_lstm_cell_grad),
		.batch = 2, .hidden = 3, .row_stride = 12, .gate_stride = 3,
		.act = (struct vtpu_operand)OPND(0, 0), .c_prev = (struct vtpu_operand)OPND(0, 128), .tc = (struct vtpu_operand)OPND(0, 192),
		.dh = (struct vtpu_operand)OPND(0, 256), .dc_next = (struct vtpu_operand)OPND(0, 320),
		.dgates = (struct vtpu_operand)OPND(1, 0), .dc_prev = (struct vtpu_operand)OPND(1, 128),
	};
	struct vtpu_cmd_lstm_cell lf;
	struct vtpu_cmd_lstm_cell_grad lg;
	char msg[512];

	ASSERT_NE(NULL, r.cpu);

	CASE(lf, lf0, "lstm ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(lg, lg0, "lstm_grad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(lf, lf0, "lstm planes [4][B][H]",
	     (lf.row_stride = 3, lf.gate_stride = 6), VTPU_ERR_NONE, 0);
	CASE(lg, lg0, "lstm_grad planes with gaps",
	     (lg.row_stride = 5, lg.gate_stride = 100,
	      lg.dc_prev.offset = 2048), VTPU_ERR_NONE, 0);
	CASE(lf, lf0, "lstm act over gates (in place)", lf.act = lf.gates,
	     VTPU_ERR_NONE, 0);
	CASE(lg, lg0, "lstm_grad dgates over act, dc_prev over dc_next",
	     (lg.dgates = lg.act, lg.dc_prev = lg.dc_next), VTPU_ERR_NONE, 0);
	CASE(lg, lg0, "lstm_grad inputs may overlap",
	     (lg.dh = lg.c_prev, lg.tc.offset = 4), VTPU_ERR_NONE, 0);
	/* flags, pad, shape */
	CASE(lf, lf0, "lstm flags", lf.flags = 1, VTPU_ERR_BAD_FLAGS, 0);
	CASE(lg, lg0, "lstm_grad flags", lg.flags = 1u << 31,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(lf, lf0, "lstm pad", lf.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(lg, lg0, "lstm_grad pad", lg.pad = 1u << 31, VTPU_ERR_BAD_PAD,
	     0);
	CASE(lf, lf0, "lstm batch 0", lf.batch = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(lg, lg0, "lstm_grad hidden 0", lg.hidden = 0, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(lf, lf0, "lstm batch past 2^24", lf.batch = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(lf, lf0, "lstm hidden past 2^24", lf.hidden = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(lg, lg0, "lstm_grad B * H past 2^36",
	     (lg.batch = VTPU_MAX_DIM, lg.hidden = VTPU_MAX_DIM,
	      lg.row_stride = 4ull * VTPU_MAX_DIM,
	      lg.gate_stride = VTPU_MAX_DIM), VTPU_ERR_BAD_SHAPE, 0);
	/* strides: the forward names gates, the gradient act */
	CASE(lf, lf0, "lstm row stride below H", lf.row_stride = 2,
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lg, lg0, "lstm_grad gate stride below H", lg.gate_stride = 2,
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_ACT);
	CASE(lf, lf0, "lstm gate stride 0", lf.gate_stride = 0,
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lf, lf0, "lstm strides H, H: gate 1 of row 0 is gate 0 of row 1",
	     (lf.row_stride = 3, lf.gate_stride = 3), VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_GATES);
	CASE(lf, lf0, "lstm rows one short of the four gates",
	     lf.row_stride = 11, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lg, lg0, "lstm_grad planes one short of B rows",
	     (lg.row_stride = 3, lg.gate_stride = 5), VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_ACT);
	/* what the library says of one: the rule, with its numbers */
	lf = lf0;
	lf.row_stride = 11;
	words_of(&r, &lf, msg, sizeof(msg));
	EXPECT_NE(NULL, strstr(msg, "operand gates: row_stride 11, "
			       "gate_stride 3 (B 2, H 3)")) TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "(B - 1) * row_stride + H = 14)"))
		TH_LOG("%s", msg);
	EXPECT_NE(NULL, strstr(msg, "3 * gate_stride + H = 12)"))
		TH_LOG("%s", msg);
	CASE(lf, lf0, "lstm gate stride past 2^36",
	     (lf.row_stride = 3, lf.gate_stride = VTPU_MAX_ELEMS + 1),
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lg, lg0, "lstm_grad row stride past 2^36",
	     lg.row_stride = VTPU_MAX_ELEMS + 1, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_ACT);
	CASE(lf, lf0, "lstm strides of 2^64 / 3: no wrap",
	     (lf.row_stride = 3, lf.gate_stride = ~0ull / 3 + 1),
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lf, lf0, "lstm span past 2^36 (strides each in range)",
	     (lf.batch = 1u << 20, lf.hidden = 16, lf.row_stride = 1u << 17,
	      lf.gate_stride = 16), VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_GATES);
	CASE(lf, lf0, "lstm largest span fits the shape, not b0",
	     (lf.batch = 1u << 20, lf.hidden = 16, lf.row_stride = 1u << 16,
	      lf.gate_stride = 16), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_GATES);
	CASE(lg, lg0, "lstm_grad gaps past b0's end",
	     lg.gate_stride = 400, VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_ACT);
	/* operands */
	OPERAND_CASES(lf, lf0, "lstm gates", gates, VTPU_OPERAND_GATES,
		      4096 - 92, 2);
	OPERAND_CASES(lf, lf0, "lstm c_prev", c_prev, VTPU_OPERAND_CELL_PREV,
		      4096 - 20, 1);
	OPERAND_CASES(lf, lf0, "lstm act", act, VTPU_OPERAND_ACT, 4096 - 92,
		      3);
	OPERAND_CASES(lf, lf0, "lstm c", c, VTPU_OPERAND_CELL, 4096 - 20, 2);
	OPERAND_CASES(lf, lf0, "lstm tc", tc, VTPU_OPERAND_TANH_CELL,
		      4096 - 20, 2);
	OPERAND_CASES(lf, lf0, "lstm h", h, VTPU_OPERAND_HIDDEN, 4096 - 20, 1);
	OPERAND_CASES(lg, lg0, "lstm_grad act", act, VTPU_OPERAND_ACT,
		      4096 - 92, 2);
	OPERAND_CASES(lg, lg0, "lstm_grad c_prev", c_prev,
		      VTPU_OPERAND_CELL_PREV, 4096 - 20, 1);
	OPERAND_CASES(lg, lg0, "lstm_grad tc", tc, VTPU_OPERAND_TANH_CELL,
		      4096 - 20, 1);
	OPERAND_CASES(lg, lg0, "lstm_grad dh", dh, VTPU_OPERAND_DHIDDEN,
		      4096 - 20, 3);
	OPERAND_CASES(lg, lg0, "lstm_grad dc_next", dc_next,
		      VTPU_OPERAND_DCELL, 4096 - 20, 2);
	OPERAND_CASES(lg, lg0, "lstm_grad dgates", dgates, VTPU_OPERAND_DGATES,
		      4096 - 92, 1);
	OPERAND_CASES(lg, lg0, "lstm_grad dc_prev", dc_prev,
		      VTPU_OPERAND_DCELL_PREV, 4096 - 20, 1);
	/* overlaps: in place is exactly the same place, nothing else */
	CASE(lf, lf0, "lstm act a float past gates", lf.act = (struct vtpu_operand)OPND(0, 4),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_ACT);
	CASE(lf, lf0, "lstm act overlaps c_prev", lf.act = (struct vtpu_operand)OPND(0, 64),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_ACT);
	CASE(lf, lf0, "lstm c overlaps c_prev", lf.c = lf0.c_prev,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_CELL);
	CASE(lf, lf0, "lstm c overlaps act", lf.c.offset = 80,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_ACT);
	CASE(lf, lf0, "lstm tc overlaps h", lf.tc.offset = 240,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_TANH_CELL);
	CASE(lf, lf0, "lstm h overlaps gates", lf.h = (struct vtpu_operand)OPND(0, 8),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_HIDDEN);
	CASE(lf, lf0, "lstm h over act in place (names act, the first)",
	     (lf.act = lf.gates, lf.h = lf.gates), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_ACT);
	CASE(lg, lg0, "lstm_grad dgates a float past act",
	     lg.dgates = (struct vtpu_operand)OPND(0, 4), VTPU_ERR_OVERLAP, VTPU_OPERAND_DGATES);
	CASE(lg, lg0, "lstm_grad dgates overlaps tc", lg.dgates = (struct vtpu_operand)OPND(0, 160),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DGATES);
	CASE(lg, lg0, "lstm_grad dgates overlaps dc_next",
	     lg.dgates = (struct vtpu_operand)OPND(0, 300), VTPU_ERR_OVERLAP, VTPU_OPERAND_DGATES);
	CASE(lg, lg0, "lstm_grad dc_prev a float past dc_next",
	     lg.dc_prev = (struct vtpu_operand)OPND(0, 324), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DCELL_PREV);
	CASE(lg, lg0, "lstm_grad dc_prev over dh", lg.dc_prev = lg0.dh,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DCELL_PREV);
	CASE(lg, lg0, "lstm_grad dc_prev overlaps act", lg.dc_prev = (struct vtpu_operand)OPND(0, 8),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_DCELL_PREV);
	CASE(lg, lg0, "lstm_grad dc_prev overlaps dgates",
	     lg.dc_prev = (struct vtpu_operand)OPND(1, 88), VTPU_ERR_OVERLAP, VTPU_OPERAND_DGATES);
	EXPECT_EQ(0, r.fails);
	rej_fini(&r);
}

TEST(dwconv_validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	/*
	 * a 5x5x2 image, 3x3 taps, stride 2, SAME (top/left pad 1), two
	 * filters per channel: x 200 bytes, w 144, bias 16, y 3x3x4 144
	 */
	const struct vtpu_cmd_dwconv dc0 = {
		.hdr = HDR(VTPU_OP_DWCONV, vtpu_cmd_dwconv),
		.win = { .n = 1, .h = 5, .w = 5, .c = 2, .kh = 3, .kw = 3,
			 .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1 },
		.oh = 3, .ow = 3, .mult = 2, .flags = VTPU_CONV_BIAS,
		.x = OPND(0, 0), .w = OPND(0, 256), .bias = OPND(0, 512),
		.y = OPND(1, 0),
	};
	/* the gradients: dx (at x) or dw (at w) in b1, dy (at y) in b0 */
	const struct vtpu_cmd_dwconv dd0 = {
		.hdr = HDR(VTPU_OP_DWCONV_DGRAD, vtpu_cmd_dwconv),
		.win = dc0.win, .oh = 3, .ow = 3, .mult = 2,
		.x = OPND(1, 1024), .w = OPND(0, 256), .y = OPND(0, 1024),
	};
	const struct vtpu_cmd_dwconv dw0 = {
		.hdr = HDR(VTPU_OP_DWCONV_WGRAD, vtpu_cmd_dwconv),
		.win = dc0.win, .oh = 3, .ow = 3, .mult = 2,
		.x = OPND(0, 0), .w = OPND(1, 2048), .y = OPND(0, 1024),
	};
	struct vtpu_cmd_dwconv dc;

	ASSERT_NE(NULL, r.cpu);

	CASE(dc, dc0, "dwconv ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(dc, dc0, "dwconv relu, no bias ok",
	     (dc.flags = VTPU_CONV_RELU, dc.bias = dd0.bias), VTPU_ERR_NONE,
	     0);
	CASE(dc, dc0, "dwconv VALID with a bottom pad ok",
	     (dc.win.pad_h = 0, dc.win.pad_w = 0), VTPU_ERR_NONE, 0);
	CASE(dc, dd0, "dwconv_dgrad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(dc, dd0, "dwconv_dgrad accumulate ok",
	     dc.flags = VTPU_CONV_ACCUMULATE, VTPU_ERR_NONE, 0);
	CASE(dc, dw0, "dwconv_wgrad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(dc, dw0, "dwconv_wgrad accumulate ok",
	     dc.flags = VTPU_CONV_ACCUMULATE, VTPU_ERR_NONE, 0);
	/* flags */
	CASE(dc, dc0, "dwconv accumulate", dc.flags |= VTPU_CONV_ACCUMULATE,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(dc, dd0, "dwconv_dgrad bias flag", dc.flags = VTPU_CONV_BIAS,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(dc, dw0, "dwconv_wgrad relu", dc.flags = VTPU_CONV_RELU,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(dc, dc0, "dwconv unknown flag", dc.flags = 8, VTPU_ERR_BAD_FLAGS,
	     0);
	/* geometry */
	CASE(dc, dc0, "dwconv stride 0", dc.win.stride_w = 0,
	     VTPU_ERR_BAD_STRIDE, 0);
	CASE(dc, dw0, "dwconv_wgrad stride past 2^24",
	     dc.win.stride_h = VTPU_MAX_DIM + 1, VTPU_ERR_BAD_STRIDE, 0);
	CASE(dc, dc0, "dwconv pad >= k", dc.win.pad_h = 3, VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(dc, dc0, "dwconv c 0", dc.win.c = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dc0, "dwconv oh 0", dc.oh = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dd0, "dwconv_dgrad ow 0", dc.ow = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dc0, "dwconv a window below the image", dc.oh = 4,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dw0, "dwconv_wgrad a window right of the image",
	     (dc.win.pad_w = 0, dc.ow = 3, dc.win.w = 4), VTPU_ERR_BAD_SHAPE,
	     0);
	CASE(dc, dc0, "dwconv mult 0", dc.mult = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dc0, "dwconv kh*kw*mult past the work limit",
	     dc.mult = VTPU_DWCONV_MAX_WORK / 9 + 1, VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dc0, "dwconv c*mult past 2^24",
	     (dc.win.kh = dc.win.kw = 1, dc.win.pad_h = dc.win.pad_w = 0,
	      dc.win.c = 1u << 17, dc.mult = 256), VTPU_ERR_BAD_SHAPE, 0);
	CASE(dc, dd0, "dwconv_dgrad dy past 2^36 elements",
	     (dc.win.kh = dc.win.kw = 1, dc.win.pad_h = dc.win.pad_w = 0,
	      dc.win.stride_h = dc.win.stride_w = 1, dc.win.n = 1u << 10,
	      dc.win.h = dc.win.w = 1u << 10, dc.win.c = 1,
	      dc.oh = dc.ow = 1u << 10, dc.mult = 128),
	     VTPU_ERR_BAD_SHAPE, 0);
	/* unused operands */
	CASE(dc, dc0, "dwconv bias set without the flag", dc.flags = 0,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_BIAS);
	CASE(dc, dw0, "dwconv_wgrad bias set", dc.bias.offset = 64,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_BIAS);
	/* operands */
	OPERAND_CASES(dc, dc0, "dwconv y", y, VTPU_OPERAND_Y, 4096 - 140, 2);
	OPERAND_CASES(dc, dc0, "dwconv x", x, VTPU_OPERAND_X, 4096 - 196, 1);
	OPERAND_CASES(dc, dc0, "dwconv w", w, VTPU_OPERAND_W, 4096 - 140, 3);
	OPERAND_CASES(dc, dc0, "dwconv bias", bias, VTPU_OPERAND_BIAS,
		      4096 - 12, 514);
	OPERAND_CASES(dc, dd0, "dwconv_dgrad dx", x, VTPU_OPERAND_DX,
		      4096 - 196, 1026);
	OPERAND_CASES(dc, dd0, "dwconv_dgrad dy", y, VTPU_OPERAND_DY,
		      4096 - 140, 1025);
	OPERAND_CASES(dc, dw0, "dwconv_wgrad dw", w, VTPU_OPERAND_DW,
		      4096 - 140, 2050);
	CASE(dc, dc0, "dwconv y over x", dc.y = dc.x, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(dc, dc0, "dwconv y over bias", (dc.y.buf = 0, dc.y.offset = 448),
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(dc, dd0, "dwconv_dgrad dx over w",
	     (dc.x.buf = 0, dc.x.offset = 200), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DX);
	CASE(dc, dw0, "dwconv_wgrad dw over dy", dc.w = dc.y, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DW);

	rej_fini(&r);
}

/* EMBEDDING, EMBEDDING_GRAD and GEMM_BATCHED: every rejection path. */
TEST(seq_ops_validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	/* 16 ids (64 bytes), a table of 8 x 16 (512), y 16 x 16 (1024) */
	const struct vtpu_cmd_embedding em0 = {
		.hdr = HDR(VTPU_OP_EMBEDDING, vtpu_cmd_embedding),
		.n = 16, .vocab = 8, .dim = 16,
		.ids = OPND(0, 0), .table = OPND(0, 512), .y = OPND(1, 0),
	};
	/* the gradient: dtable in b1, ids and dy in b0 */
	const struct vtpu_cmd_embedding eg0 = {
		.hdr = HDR(VTPU_OP_EMBEDDING_GRAD, vtpu_cmd_embedding),
		.n = 16, .vocab = 8, .dim = 16,
		.ids = OPND(0, 0), .table = OPND(1, 2048), .y = OPND(0, 1024),
	};
	/* 4 products of 4 x 4 x 4, packed: 256 bytes for each operand */
	const struct vtpu_cmd_gemm_batched bg0 = {
		.hdr = HDR(VTPU_OP_GEMM_BATCHED, vtpu_cmd_gemm_batched),
		.batch = 4, .m = 4, .n = 4, .k = 4, .lda = 4, .ldb = 4,
		.ldc = 4, .alpha = 0x3f800000, .stride_a = 16, .stride_b = 16,
		.stride_c = 16, .a = OPND(0, 0), .b = OPND(0, 256),
		.c = OPND(1, 0),
	};
	struct vtpu_cmd_embedding em;
	struct vtpu_cmd_gemm_batched bg;

	ASSERT_NE(NULL, r.cpu);

	/* EMBEDDING, EMBEDDING_GRAD */
	CASE(em, em0, "embedding ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(em, em0, "embedding ids over the table ok",
	     em.ids = em.table, VTPU_ERR_NONE, 0);
	CASE(em, eg0, "embedding_grad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(em, eg0, "embedding_grad accumulate ok",
	     em.flags = VTPU_EMBEDDING_ACCUMULATE, VTPU_ERR_NONE, 0);
	CASE(em, em0, "embedding accumulate",
	     em.flags = VTPU_EMBEDDING_ACCUMULATE, VTPU_ERR_BAD_FLAGS, 0);
	CASE(em, eg0, "embedding_grad unknown flag", em.flags = 2,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(em, em0, "embedding n 0", em.n = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, em0, "embedding vocab 0", em.vocab = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, eg0, "embedding_grad vocab 0", em.vocab = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, em0, "embedding dim 0", em.dim = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, em0, "embedding dim > MAX_DIM", em.dim = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, em0, "embedding n * dim past the element limit",
	     (em.n = VTPU_MAX_DIM, em.dim = VTPU_MAX_DIM),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, eg0, "embedding_grad vocab * dim past the element limit",
	     (em.vocab = VTPU_MAX_DIM, em.dim = VTPU_MAX_DIM),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(em, em0, "embedding table too small", em.vocab = 100,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_W);
	CASE(em, em0, "embedding ids past their buffer", em.ids.offset = 4040,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_INDEX);
	CASE(em, em0, "embedding ids misaligned", em.ids.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_INDEX);
	CASE(em, em0, "embedding y too small", em.n = 65,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_Y);
	CASE(em, em0, "embedding y over the table",
	     em.y = (struct vtpu_operand)OPND(0, 1000), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_Y);
	CASE(em, em0, "embedding y over the ids", em.ids = em.y,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(em, eg0, "embedding_grad dtable over dy",
	     em.table = (struct vtpu_operand)OPND(0, 1536), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DW);
	CASE(em, eg0, "embedding_grad dtable over the ids",
	     em.ids = (struct vtpu_operand)OPND(1, 2048), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DW);
	CASE(em, eg0, "embedding_grad dtable too small", em.vocab = 33,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_DW);
	CASE(em, eg0, "embedding_grad dy bad buffer", em.y.buf = 2,
	     VTPU_ERR_BAD_BUFFER, VTPU_OPERAND_DY);

	/* GEMM_BATCHED */
	CASE(bg, bg0, "gemm_batched ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched one B for all ok", bg.stride_b = 0,
	     VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched turned, with gaps ok",
	     (bg.flags = VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B,
	      bg.stride_c = 20), VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched batch 1, stride_c 0 ok",
	     (bg.batch = 1, bg.stride_c = 0), VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched bf16 at 2 bytes ok",
	     (bg.dtype = VTPU_DTYPE_BF16, bg.a.offset = 2), VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched bias", bg.flags = VTPU_GEMM_BIAS,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(bg, bg0, "gemm_batched C in panels", bg.flags = VTPU_GEMM_C_PANELS,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(bg, bg0, "gemm_batched pad", bg.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(bg, bg0, "gemm_batched batch 0", bg.batch = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bg, bg0, "gemm_batched batch > MAX_DIM",
	     bg.batch = VTPU_MAX_DIM + 1, VTPU_ERR_BAD_SHAPE, 0);
	CASE(bg, bg0, "gemm_batched k 0", bg.k = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(bg, bg0, "gemm_batched batch * m * n > 2^31",
	     (bg.batch = 1u << 23, bg.m = 16, bg.n = 17, bg.ldc = 17),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bg, bg0, "gemm_batched dtype", bg.dtype = 7, VTPU_ERR_BAD_DTYPE,
	     0);
	CASE(bg, bg0, "gemm_batched lda < k", bg.lda = 3, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_A);
	CASE(bg, bg0, "gemm_batched ldb < k (turned)",
	     (bg.flags = VTPU_GEMM_TRANS_B, bg.n = 2, bg.ldc = 2, bg.ldb = 3),
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_B);
	CASE(bg, bg0, "gemm_batched ldc < n", bg.ldc = 3, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched stride_a past the element limit",
	     bg.stride_a = VTPU_MAX_ELEMS + 1, VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_A);
	CASE(bg, bg0, "gemm_batched stride_b past the element limit",
	     bg.stride_b = ~0ull, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_B);
	CASE(bg, bg0, "gemm_batched Cs overlap (stride_c < one C)",
	     bg.stride_c = 15, VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched one C for all", bg.stride_c = 0,
	     VTPU_ERR_BAD_STRIDE, VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched Cs overlap (ldc padding)",
	     (bg.ldc = 8, bg.stride_c = 27), VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched Cs' rows interleaved ok",
	     (bg.ldc = 16, bg.stride_c = 4), VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "gemm_batched interleaved, ldc short of the batch",
	     (bg.ldc = 15, bg.stride_c = 4), VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched interleaved, rows overlap",
	     (bg.ldc = 16, bg.stride_c = 3), VTPU_ERR_BAD_STRIDE,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched As past their buffer", bg.stride_a = 1000,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_A);
	CASE(bg, bg0, "gemm_batched far strides, no overflow",
	     (bg.batch = VTPU_MAX_DIM, bg.m = bg.n = bg.k = 1,
	      bg.lda = bg.ldb = bg.ldc = 1, bg.stride_a = VTPU_MAX_ELEMS,
	      bg.stride_c = VTPU_MAX_ELEMS),
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_A);
	CASE(bg, bg0, "gemm_batched Cs past their buffer", bg.c.offset = 3900,
	     VTPU_ERR_OUT_OF_BOUNDS, VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched A misaligned", bg.a.offset = 2,
	     VTPU_ERR_MISALIGNED, VTPU_OPERAND_A);
	CASE(bg, bg0, "gemm_batched Cs over the As",
	     bg.c = (struct vtpu_operand)OPND(0, 128), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched Cs over the Bs",
	     bg.b = (struct vtpu_operand)OPND(1, 200), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_C);
	CASE(bg, bg0, "gemm_batched C gap over an A",
	     (bg.stride_c = 64, bg.a = (struct vtpu_operand)OPND(1, 100),
	      bg.stride_a = 0), VTPU_ERR_OVERLAP, VTPU_OPERAND_C);

	/* the batched GEMM's strides, said in words */
	{
		char msg[256];

		bg = bg0;
		bg.stride_c = 15;
		words_of(&r, &bg, msg, sizeof(msg));
		EXPECT_NE(NULL, strstr(msg, "stride_c 15 is smaller than one "
				       "C (16 elements)")) TH_LOG("%s", msg);
		bg = bg0;
		bg.stride_b = VTPU_MAX_ELEMS + 1;
		words_of(&r, &bg, msg, sizeof(msg));
		EXPECT_NE(NULL, strstr(msg, "operand B: stride 68719476737"))
			TH_LOG("%s", msg);
		bg = bg0;
		bg.lda = 2;
		words_of(&r, &bg, msg, sizeof(msg));
		EXPECT_NE(NULL, strstr(msg, "operand A: leading dimension 2"))
			TH_LOG("%s", msg);
	}

	rej_fini(&r);
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

/*
 * BATCHNORM and BATCHNORM_GRAD: 16 rows x 8 channels. Forward: x, y,
 * gamma, beta in b0; stats, moving mean and variance in b1. Gradient: x,
 * dy, gamma, stats in b0; dx, dgamma, dbeta in b1.
 */
TEST(batchnorm_validator)
{
	struct rej r = { .cpu = vtpu_cpu_create(1, -1, VTPU_CPU_GEMM_ENGINE),
			 .b0 = bo_new(4096), .b1 = bo_new(4096) };
	const struct vtpu_cmd_batchnorm bn0 = {
		.hdr = HDR(VTPU_OP_BATCHNORM, vtpu_cmd_batchnorm),
		.rows = 16, .channels = 8, .flags = VTPU_BATCHNORM_TRAINING,
		.epsilon = 0x3a83126f /* 1e-3 */,
		.momentum = 0x3f7d70a4 /* 0.99 */,
		.x = OPND(0, 0), .y = OPND(0, 512), .gamma = OPND(0, 1024),
		.beta = OPND(0, 1056), .stats = OPND(1, 0),
		.moving_mean = OPND(1, 64), .moving_var = OPND(1, 96),
	};
	const struct vtpu_cmd_batchnorm_grad bg0 = {
		.hdr = HDR(VTPU_OP_BATCHNORM_GRAD, vtpu_cmd_batchnorm_grad),
		.rows = 16, .channels = 8,
		.x = OPND(0, 0), .dy = OPND(0, 512), .gamma = OPND(0, 1024),
		.stats = OPND(0, 1056), .dx = OPND(1, 0),
		.dgamma = OPND(1, 512), .dbeta = OPND(1, 544),
	};
	struct vtpu_cmd_batchnorm bn;
	struct vtpu_cmd_batchnorm_grad bg;

	ASSERT_NE(NULL, r.cpu);
	CASE(bn, bn0, "batchnorm ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm inference ok",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 }),
	     VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm momentum 0 ok", bn.momentum = 0,
	     VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm momentum 1 ok", bn.momentum = 0x3f800000,
	     VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm inference, moving stats in y's buffer ok",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 },
	      bn.moving_mean.buf = 0, bn.moving_mean.offset = 2048,
	      bn.moving_var = bn.moving_mean),
	     VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm relu ok",
	     bn.flags = VTPU_BATCHNORM_TRAINING | VTPU_BATCHNORM_RELU,
	     VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm inference relu ok",
	     (bn.flags = VTPU_BATCHNORM_RELU,
	      bn.stats = (struct vtpu_operand){ 0 }), VTPU_ERR_NONE, 0);
	CASE(bn, bn0, "batchnorm flags 4", bn.flags = 4, VTPU_ERR_BAD_FLAGS, 0);
	CASE(bn, bn0, "batchnorm unknown flag with relu",
	     bn.flags = VTPU_BATCHNORM_RELU | (1u << 31), VTPU_ERR_BAD_FLAGS,
	     0);
	CASE(bn, bn0, "batchnorm pad", bn.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(bn, bn0, "batchnorm rows 0", bn.rows = 0, VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm channels 0", bn.channels = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm rows > MAX_DIM", bn.rows = VTPU_MAX_DIM + 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm rows * channels > MAX_ELEMS",
	     (bn.rows = VTPU_MAX_DIM, bn.channels = VTPU_MAX_DIM),
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm epsilon 0", bn.epsilon = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm epsilon denormal", bn.epsilon = 1,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm epsilon negative", bn.epsilon = 0xba83126f,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm epsilon inf", bn.epsilon = 0x7f800000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm epsilon NaN", bn.epsilon = 0x7fc00000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm momentum > 1", bn.momentum = 0x3f800001,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm momentum -0", bn.momentum = 0x80000000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm momentum NaN", bn.momentum = 0x7fc00000,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bn, bn0, "batchnorm inference with stats", bn.flags = 0,
	     VTPU_ERR_BAD_PAD, VTPU_OPERAND_STATE);
	OPERAND_CASES(bn, bn0, "batchnorm x", x, VTPU_OPERAND_X, 4096 - 508, 2);
	OPERAND_CASES(bn, bn0, "batchnorm y", y, VTPU_OPERAND_Y, 4096 - 508, 2);
	OPERAND_CASES(bn, bn0, "batchnorm gamma", gamma, VTPU_OPERAND_W,
		      4096 - 28, 2);
	OPERAND_CASES(bn, bn0, "batchnorm beta", beta, VTPU_OPERAND_BIAS,
		      4096 - 28, 2);
	OPERAND_CASES(bn, bn0, "batchnorm stats", stats, VTPU_OPERAND_STATE,
		      4096 - 60, 2);
	OPERAND_CASES(bn, bn0, "batchnorm moving mean", moving_mean,
		      VTPU_OPERAND_MOM, 4096 - 28, 2);
	OPERAND_CASES(bn, bn0, "batchnorm moving var", moving_var,
		      VTPU_OPERAND_VEL, 4096 - 28, 2);
	CASE(bn, bn0, "batchnorm y over x", bn.y.offset = 4,
	     VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);
	CASE(bn, bn0, "batchnorm stats over the moving mean",
	     bn.stats.offset = 40, VTPU_ERR_OVERLAP, VTPU_OPERAND_STATE);
	CASE(bn, bn0, "batchnorm moving mean == moving var",
	     bn.moving_var = bn.moving_mean, VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_MOM);
	CASE(bn, bn0, "batchnorm moving var over gamma",
	     bn.moving_var = bn.gamma, VTPU_ERR_OVERLAP, VTPU_OPERAND_VEL);
	/* inference checks every operand it reads (beta was once missed) */
	CASE(bn, bn0, "batchnorm inference: beta past its buffer",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 },
	      bn.beta.offset = 4096 - 28), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_BIAS);
	CASE(bn, bn0, "batchnorm inference: gamma past its buffer",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 },
	      bn.gamma.offset = 4096 - 28), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_W);
	CASE(bn, bn0, "batchnorm inference: x past its buffer",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 },
	      bn.x.offset = 4096 - 508), VTPU_ERR_OUT_OF_BOUNDS,
	     VTPU_OPERAND_X);
	CASE(bn, bn0, "batchnorm inference: y over the moving mean",
	     (bn.flags = 0, bn.stats = (struct vtpu_operand){ 0 },
	      bn.moving_mean = bn.y), VTPU_ERR_OVERLAP, VTPU_OPERAND_Y);

	CASE(bg, bg0, "batchnorm_grad ok", (void)0, VTPU_ERR_NONE, 0);
	CASE(bg, bg0, "batchnorm_grad flags 1", bg.flags = 1,
	     VTPU_ERR_BAD_FLAGS, 0);
	CASE(bg, bg0, "batchnorm_grad pad", bg.pad = 1, VTPU_ERR_BAD_PAD, 0);
	CASE(bg, bg0, "batchnorm_grad rows 0", bg.rows = 0,
	     VTPU_ERR_BAD_SHAPE, 0);
	CASE(bg, bg0, "batchnorm_grad channels > MAX_DIM",
	     bg.channels = VTPU_MAX_DIM + 1, VTPU_ERR_BAD_SHAPE, 0);
	OPERAND_CASES(bg, bg0, "batchnorm_grad dy", dy, VTPU_OPERAND_DY,
		      4096 - 508, 2);
	OPERAND_CASES(bg, bg0, "batchnorm_grad stats", stats,
		      VTPU_OPERAND_STATE, 4096 - 60, 2);
	OPERAND_CASES(bg, bg0, "batchnorm_grad dx", dx, VTPU_OPERAND_DX,
		      4096 - 508, 2);
	OPERAND_CASES(bg, bg0, "batchnorm_grad dgamma", dgamma,
		      VTPU_OPERAND_DW, 4096 - 28, 2);
	OPERAND_CASES(bg, bg0, "batchnorm_grad dbeta", dbeta,
		      VTPU_OPERAND_DBIAS, 4096 - 28, 2);
	CASE(bg, bg0, "batchnorm_grad dx over dy",
	     (bg.dx.buf = 0, bg.dx.offset = 512), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DX);
	CASE(bg, bg0, "batchnorm_grad dgamma == dbeta",
	     bg.dbeta = bg.dgamma, VTPU_ERR_OVERLAP, VTPU_OPERAND_DW);
	CASE(bg, bg0, "batchnorm_grad dbeta over stats",
	     (bg.dbeta.buf = 0, bg.dbeta.offset = 1060), VTPU_ERR_OVERLAP,
	     VTPU_OPERAND_DBIAS);

	rej_fini(&r);
}

TEST_HARNESS_MAIN
