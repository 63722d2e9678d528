// SPDX-License-Identifier: MIT
/*
 * libvtpu command streams: a growable, 8-byte-aligned byte stream of
 * commands (uapi/linux/vtpu.h's command set) and the list of buffers the
 * commands name by index, plus vtpu_job_strerror(), which explains a
 * stream the validator rejected.
 *
 * Appends never fail loudly: the first failure is kept in cb->error and
 * vtpu_submit() returns it, so a builder can append a whole program and
 * check once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtpu.h"
#include "vtpu_engine.h"
#include "util_priv.h"

#define CMDBUF_MIN_CAP 256
#define CMDBUF_MIN_HANDLES 8

void vtpu_cmdbuf_init(struct vtpu_cmdbuf *cb)
{
	memset(cb, 0, sizeof(*cb));
}

void vtpu_cmdbuf_fini(struct vtpu_cmdbuf *cb)
{
	free(cb->data);
	free(cb->handles);
	free(cb->bos);
	memset(cb, 0, sizeof(*cb));
}

void vtpu_cmdbuf_reset(struct vtpu_cmdbuf *cb)
{
	cb->size = 0;
	cb->nhandles = 0;
	cb->error = 0;
}

static void cmdbuf_fail(struct vtpu_cmdbuf *cb, int err)
{
	if (!cb->error)
		cb->error = err;
}

/*
 * The opening every builder shares, as liburing's io_uring_prep_rw(): zero
 * the command and fill in its header, the size from the engine's table. A
 * struct that is not the size the table says gets size 0, which
 * vtpu_cmdbuf_append() refuses.
 */
static void cmd_init(struct vtpu_cmd_hdr *hdr, size_t len, uint32_t opcode)
{
	memset(hdr, 0, len);
	hdr->opcode = opcode;
	hdr->size = vtpu_engine_cmd_size(opcode) == len ? (uint32_t)len : 0;
}

#define CMD_INIT(c, opcode) cmd_init(&(c)->hdr, sizeof(*(c)), (opcode))

uint32_t vtpu_cmdbuf_use(struct vtpu_cmdbuf *cb, const struct vtpu_bo *bo)
{
	uint32_t i;

	for (i = 0; i < cb->nhandles; i++)
		if (cb->bos[i] == bo)
			return i;

	if (cb->nhandles == cb->handles_cap) {
		uint32_t cap = cb->handles_cap ? cb->handles_cap * 2 :
						 CMDBUF_MIN_HANDLES;
		uint32_t *h;
		const struct vtpu_bo **b;

		if (cap <= cb->handles_cap) {
			cmdbuf_fail(cb, -E2BIG);
			return UINT32_MAX;
		}
		h = realloc(cb->handles, (size_t)cap * sizeof(*h));
		if (!h) {
			cmdbuf_fail(cb, -ENOMEM);
			return UINT32_MAX;
		}
		cb->handles = h;
		b = realloc(cb->bos, (size_t)cap * sizeof(*b));
		if (!b) {
			cmdbuf_fail(cb, -ENOMEM);
			return UINT32_MAX;
		}
		cb->bos = b;
		cb->handles_cap = cap;
	}
	cb->handles[cb->nhandles] = bo->handle;
	cb->bos[cb->nhandles] = bo;
	return cb->nhandles++;
}

int vtpu_cmdbuf_append(struct vtpu_cmdbuf *cb, const void *cmd)
{
	struct vtpu_cmd_hdr hdr;
	uint32_t need;

	memcpy(&hdr, cmd, sizeof(hdr));
	/* The next command must start 8-byte aligned. */
	if (hdr.size < sizeof(hdr) || hdr.size % 8) {
		cmdbuf_fail(cb, -EINVAL);
		return -EINVAL;
	}
	if (hdr.size > UINT32_MAX - cb->size) {
		cmdbuf_fail(cb, -E2BIG);
		return -E2BIG;
	}
	need = cb->size + hdr.size;
	if (need > cb->cap) {
		uint64_t cap = cb->cap ? cb->cap : CMDBUF_MIN_CAP;
		uint8_t *d;

		while (cap < need)
			cap *= 2;
		if (cap > UINT32_MAX)
			cap = UINT32_MAX & ~7u;
		d = realloc(cb->data, cap);
		if (!d) {
			cmdbuf_fail(cb, -ENOMEM);
			return -ENOMEM;
		}
		cb->data = d;
		cb->cap = (uint32_t)cap;
	}
	memcpy(cb->data + cb->size, cmd, hdr.size);
	cb->size = need;
	return 0;
}

int vtpu_cmdbuf_gemm(struct vtpu_cmdbuf *cb, const struct vtpu_gemm_desc *g)
{
	struct vtpu_cmd_gemm c;

	CMD_INIT(&c, VTPU_OP_GEMM);
	c.m = g->m;
	c.n = g->n;
	c.k = g->k;
	c.flags = g->flags;
	c.lda = g->lda ? g->lda : (g->flags & VTPU_GEMM_TRANS_A) ? g->m : g->k;
	c.ldb = g->ldb ? g->ldb : (g->flags & VTPU_GEMM_TRANS_B) ? g->k : g->n;
	c.ldc = g->ldc ? g->ldc : g->n;
	c.dtype = g->dtype;
	c.alpha = f32_bits(g->alpha);
	c.beta = f32_bits(g->beta);
	c.a.buf = g->a_buf;
	c.a.offset = g->a_off;
	c.b.buf = g->b_buf;
	c.b.offset = g->b_off;
	c.c.buf = g->c_buf;
	c.c.offset = g->c_off;
	c.bias.buf = g->bias_buf;
	c.bias.offset = g->bias_off;
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_fill(struct vtpu_cmdbuf *cb, uint32_t buf, uint64_t off,
		     uint32_t count, float value)
{
	struct vtpu_cmd_fill c;

	CMD_INIT(&c, VTPU_OP_FILL);
	c.count = count;
	c.value = f32_bits(value);
	c.dst.buf = buf;
	c.dst.offset = off;
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_copy(struct vtpu_cmdbuf *cb, uint32_t dst_buf,
		     uint64_t dst_off, uint32_t src_buf, uint64_t src_off,
		     uint64_t bytes)
{
	struct vtpu_cmd_copy c;

	CMD_INIT(&c, VTPU_OP_COPY);
	c.bytes = bytes;
	c.dst.buf = dst_buf;
	c.dst.offset = dst_off;
	c.src.buf = src_buf;
	c.src.offset = src_off;
	return vtpu_cmdbuf_append(cb, &c);
}

/* ---- the training ops ------------------------------------------------------ */

static struct vtpu_operand opnd(struct vtpu_ref r)
{
	struct vtpu_operand o = { .buf = r.buf, .offset = r.off };

	return o;
}

static int cmdbuf_window(struct vtpu_cmdbuf *cb, uint32_t opcode,
			 const struct vtpu_window *win, struct vtpu_ref image,
			 struct vtpu_ref cols)
{
	struct vtpu_cmd_im2col c;

	CMD_INIT(&c, opcode);
	c.win = *win;
	c.image = opnd(image);
	c.cols = opnd(cols);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_im2col(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref image, struct vtpu_ref cols)
{
	return cmdbuf_window(cb, VTPU_OP_IM2COL, win, image, cols);
}

int vtpu_cmdbuf_col2im(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref cols, struct vtpu_ref image)
{
	return cmdbuf_window(cb, VTPU_OP_COL2IM, win, image, cols);
}

static int cmdbuf_pool(struct vtpu_cmdbuf *cb, uint32_t opcode,
		       const struct vtpu_window *win, struct vtpu_ref x,
		       struct vtpu_ref y, struct vtpu_ref index)
{
	struct vtpu_cmd_pool c;

	CMD_INIT(&c, opcode);
	c.win = *win;
	c.x = opnd(x);
	c.y = opnd(y);
	c.index = opnd(index);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_maxpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			struct vtpu_ref x, struct vtpu_ref y,
			struct vtpu_ref index)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL, win, x, y, index);
}

int vtpu_cmdbuf_maxpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, struct vtpu_ref dy,
			     struct vtpu_ref index, struct vtpu_ref dx)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL_GRAD, win, dx, dy, index);
}

static int cmdbuf_conv_pool(struct vtpu_cmdbuf *cb, uint32_t opcode,
			    const struct vtpu_conv_pool_desc *d)
{
	bool wgrad = opcode == VTPU_OP_CONV_POOL_WGRAD;
	struct vtpu_cmd_conv_pool c;

	CMD_INIT(&c, opcode);
	c.win = d->win;
	c.oc = d->oc;
	c.pool_h = d->pool_h;
	c.pool_w = d->pool_w;
	c.pool_stride_h = d->pool_stride_h;
	c.pool_stride_w = d->pool_stride_w;
	c.x = opnd(d->x);
	c.w = opnd(d->w);
	c.bias = opnd(d->bias);
	c.index = opnd(d->index);
	if (wgrad) {
		c.dy = opnd(d->dy);
	} else {
		c.flags = d->flags;
		c.y = opnd(d->y);
	}
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_conv_pool(struct vtpu_cmdbuf *cb,
			  const struct vtpu_conv_pool_desc *d)
{
	return cmdbuf_conv_pool(cb, VTPU_OP_CONV_POOL, d);
}

int vtpu_cmdbuf_conv_pool_wgrad(struct vtpu_cmdbuf *cb,
				const struct vtpu_conv_pool_desc *d)
{
	return cmdbuf_conv_pool(cb, VTPU_OP_CONV_POOL_WGRAD, d);
}

static int cmdbuf_conv(struct vtpu_cmdbuf *cb, uint32_t opcode,
		       const struct vtpu_conv_desc *d)
{
	struct vtpu_cmd_conv c;

	CMD_INIT(&c, opcode);
	c.win = d->win;
	c.oc = d->oc;
	c.flags = d->flags;
	c.x = opnd(d->x);
	c.w = opnd(d->w);
	c.y = opnd(d->y);
	if (opcode == VTPU_OP_CONV && (d->flags & VTPU_CONV_BIAS))
		c.bias = opnd(d->bias);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_conv(struct vtpu_cmdbuf *cb, const struct vtpu_conv_desc *d)
{
	return cmdbuf_conv(cb, VTPU_OP_CONV, d);
}

int vtpu_cmdbuf_conv_dgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d)
{
	return cmdbuf_conv(cb, VTPU_OP_CONV_DGRAD, d);
}

int vtpu_cmdbuf_conv_wgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d)
{
	return cmdbuf_conv(cb, VTPU_OP_CONV_WGRAD, d);
}

int vtpu_cmdbuf_elementwise(struct vtpu_cmdbuf *cb, uint32_t op,
			    uint64_t count, float alpha, float beta,
			    struct vtpu_ref x, struct vtpu_ref y,
			    struct vtpu_ref z)
{
	struct vtpu_cmd_elementwise c;

	CMD_INIT(&c, VTPU_OP_ELEMENTWISE);
	c.op = op;
	c.count = count;
	c.alpha = f32_bits(alpha);
	c.beta = f32_bits(beta);
	c.x = opnd(x);
	c.y = opnd(y);
	c.z = opnd(z);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_reduce(struct vtpu_cmdbuf *cb, uint32_t op, uint32_t m,
		       uint32_t n, uint32_t ldx, float alpha, float beta,
		       struct vtpu_ref x, struct vtpu_ref y)
{
	struct vtpu_cmd_reduce c;

	CMD_INIT(&c, VTPU_OP_REDUCE);
	c.op = op;
	c.m = m;
	c.n = n;
	c.ldx = ldx ? ldx : n;
	c.alpha = f32_bits(alpha);
	c.beta = f32_bits(beta);
	c.x = opnd(x);
	c.y = opnd(y);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_softmax_xent(struct vtpu_cmdbuf *cb,
			     const struct vtpu_xent_desc *d)
{
	struct vtpu_cmd_softmax_xent c;

	CMD_INIT(&c, VTPU_OP_SOFTMAX_XENT);
	c.m = d->m;
	c.n = d->n;
	c.flags = d->flags;
	c.scale = f32_bits(d->scale);
	c.logits = opnd(d->logits);
	c.labels = opnd(d->labels);
	c.dlogits = opnd(d->dlogits);
	c.loss = opnd(d->loss);
	c.correct = opnd(d->correct);
	c.probs = opnd(d->probs);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_sgd(struct vtpu_cmdbuf *cb, uint64_t count, float lr,
		    float momentum, float weight_decay, uint32_t flags,
		    struct vtpu_ref param, struct vtpu_ref grad,
		    struct vtpu_ref mom)
{
	struct vtpu_cmd_sgd c;

	CMD_INIT(&c, VTPU_OP_SGD);
	c.count = count;
	c.lr = f32_bits(lr);
	c.momentum = f32_bits(momentum);
	c.weight_decay = f32_bits(weight_decay);
	c.flags = flags;
	c.param = opnd(param);
	c.grad = opnd(grad);
	c.mom = opnd(mom);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_adam_step(struct vtpu_cmdbuf *cb, float beta1, float beta2,
			  struct vtpu_ref state)
{
	struct vtpu_cmd_adam_step c;

	CMD_INIT(&c, VTPU_OP_ADAM_STEP);
	c.beta1 = f32_bits(beta1);
	c.beta2 = f32_bits(beta2);
	c.state = opnd(state);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_adam(struct vtpu_cmdbuf *cb, const struct vtpu_adam_desc *d)
{
	struct vtpu_cmd_adam c;

	CMD_INIT(&c, VTPU_OP_ADAM);
	c.count = d->count;
	c.lr = f32_bits(d->lr);
	c.beta1 = f32_bits(d->beta1);
	c.beta2 = f32_bits(d->beta2);
	c.eps = f32_bits(d->eps);
	c.weight_decay = f32_bits(d->weight_decay);
	c.flags = d->flags;
	c.param = opnd(d->param);
	c.grad = opnd(d->grad);
	c.m = opnd(d->m);
	c.v = opnd(d->v);
	c.state = opnd(d->state);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_cast(struct vtpu_cmdbuf *cb, uint32_t mode, uint64_t count,
		     float scale, float shift, struct vtpu_ref src,
		     struct vtpu_ref dst)
{
	struct vtpu_cmd_cast c;

	CMD_INIT(&c, VTPU_OP_CAST);
	c.mode = mode;
	c.count = count;
	c.scale = f32_bits(scale);
	c.shift = f32_bits(shift);
	c.src = opnd(src);
	c.dst = opnd(dst);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_dropout(struct vtpu_cmdbuf *cb, uint64_t count, float rate,
			uint32_t seed, struct vtpu_ref x, struct vtpu_ref z,
			struct vtpu_ref mask, struct vtpu_ref step)
{
	struct vtpu_cmd_dropout d;

	CMD_INIT(&d, VTPU_OP_DROPOUT);
	d.count = count;
	d.rate = f32_bits(rate);
	d.seed = seed;
	d.x = opnd(x);
	d.z = opnd(z);
	d.mask = opnd(mask);
	d.step = opnd(step);
	return vtpu_cmdbuf_append(cb, &d);
}

/* ---- explaining a rejected stream ---------------------------------------- */

struct strbuf {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->pos >= sb->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->pos, sb->len - sb->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->pos += (size_t)n;
}

static const char *operand_name(uint32_t operand)
{
	static const char *const names[] = {
		[VTPU_OPERAND_NONE] = "-",  [VTPU_OPERAND_A] = "A",
		[VTPU_OPERAND_B] = "B",	    [VTPU_OPERAND_C] = "C",
		[VTPU_OPERAND_BIAS] = "bias", [VTPU_OPERAND_DST] = "dst",
		[VTPU_OPERAND_SRC] = "src",
		[VTPU_OPERAND_X] = "x",	    [VTPU_OPERAND_Y] = "y",
		[VTPU_OPERAND_Z] = "z",	    [VTPU_OPERAND_DX] = "dx",
		[VTPU_OPERAND_DY] = "dy",   [VTPU_OPERAND_INDEX] = "index",
		[VTPU_OPERAND_LABELS] = "labels",
		[VTPU_OPERAND_LOSS] = "loss",
		[VTPU_OPERAND_CORRECT] = "correct",
		[VTPU_OPERAND_PROBS] = "probs",
		[VTPU_OPERAND_PARAM] = "param",
		[VTPU_OPERAND_GRAD] = "grad",
		[VTPU_OPERAND_MOM] = "mom", [VTPU_OPERAND_VEL] = "vel",
		[VTPU_OPERAND_STATE] = "state",
		[VTPU_OPERAND_MASK] = "mask", [VTPU_OPERAND_STEP] = "step",
		[VTPU_OPERAND_W] = "w", [VTPU_OPERAND_DW] = "dw",
		[VTPU_OPERAND_DBIAS] = "dbias",
	};

	if (operand < sizeof(names) / sizeof(names[0]))
		return names[operand];
	return "?";
}

static uint32_t cmd_size_for(uint32_t opcode)
{
	return vtpu_engine_cmd_size(opcode);
}

/*
 * One operand of a decoded command: where it is, how many bytes the
 * validator requires it to span (vtpu_engine_operand(), so the numbers are
 * the validator's own) and, for GEMM matrices, the stored shape.
 */
struct operand_info {
	const struct vtpu_operand *op;
	uint64_t extent;
	uint32_t align;
	/* GEMM matrices: the stored shape and its leading dimension */
	uint32_t rows, cols, ld;
	const char *ld_name;
};

static uint32_t dtype_size(uint32_t dtype)
{
	return dtype == VTPU_DTYPE_BF16 ? 2 : 4;
}

/* Return: 0 and *oi filled, or -1 when @cmd has no such operand. */
static int operand_lookup(const void *cmd, uint32_t avail, uint32_t operand,
			  struct operand_info *oi)
{
	struct vtpu_cmd_hdr hdr;

	memset(oi, 0, sizeof(*oi));
	memcpy(&hdr, cmd, sizeof(hdr));
	if (!cmd_size_for(hdr.opcode) || avail < cmd_size_for(hdr.opcode) ||
	    hdr.size != cmd_size_for(hdr.opcode))
		return -1;
	if (vtpu_engine_operand(cmd, operand, &oi->op, &oi->extent))
		return -1;

	oi->align = hdr.opcode == VTPU_OP_COPY ? 1 : 4;
	if (hdr.opcode == VTPU_OP_CAST) {
		const struct vtpu_cmd_cast *c = cmd;
		int src = operand == VTPU_OPERAND_SRC;

		if (c->mode == VTPU_CAST_F32_TO_BF16)
			oi->align = src ? 4 : 2;
		else if (c->mode == VTPU_CAST_BF16_TO_F32)
			oi->align = src ? 2 : 4;
		else
			oi->align = src ? 1 : 4;
	}
	if (hdr.opcode == VTPU_OP_REDUCE && operand == VTPU_OPERAND_X) {
		const struct vtpu_cmd_reduce *r = cmd;

		oi->rows = r->m;
		oi->cols = r->n;
		oi->ld = r->ldx;
		oi->ld_name = "ldx";
	}
	if (hdr.opcode == VTPU_OP_GEMM) {
		const struct vtpu_cmd_gemm *g = cmd;
		int ta = !!(g->flags & VTPU_GEMM_TRANS_A);
		int tb = !!(g->flags & VTPU_GEMM_TRANS_B);

		switch (operand) {
		case VTPU_OPERAND_A:
			oi->rows = ta ? g->k : g->m;
			oi->cols = ta ? g->m : g->k;
			oi->ld = g->lda;
			oi->ld_name = "lda";
			oi->align = dtype_size(g->dtype);
			break;
		case VTPU_OPERAND_B:
			oi->rows = tb ? g->n : g->k;
			oi->cols = tb ? g->k : g->n;
			oi->ld = g->ldb;
			oi->ld_name = "ldb";
			oi->align = dtype_size(g->dtype);
			break;
		case VTPU_OPERAND_C:
			oi->rows = g->m;
			oi->cols = g->n;
			oi->ld = g->ldc;
			oi->ld_name = "ldc";
			break;
		}
	}
	return 0;
}

/*
 * A GEMM operand in panels (VTPU_GEMM_B_PANELS, VTPU_GEMM_C_PANELS) that
 * breaks their rules; false if the error is not about those.
 */
static bool explain_panels(struct strbuf *sb, const void *cmd, uint32_t avail,
			   uint32_t reason, uint32_t operand, const char *oname)
{
	const struct vtpu_cmd_gemm *g = cmd;
	uint32_t flag, cols, ld;

	if (!cmd || avail < sizeof(*g) || g->hdr.opcode != VTPU_OP_GEMM)
		return false;
	if (operand == VTPU_OPERAND_B) {
		flag = VTPU_GEMM_B_PANELS;
		cols = (g->flags & VTPU_GEMM_TRANS_B) ? g->k : g->n;
		ld = g->ldb;
	} else if (operand == VTPU_OPERAND_C) {
		flag = VTPU_GEMM_C_PANELS;
		cols = g->n;
		ld = g->ldc;
	} else {
		return false;
	}
	if (!(g->flags & flag))
		return false;
	switch (reason) {
	case VTPU_ERR_BAD_SHAPE:
		sb_printf(sb, "operand %s is in panels: its %u columns (as "
			  "stored) must be a multiple of %u", oname, cols,
			  VTPU_GEMM_PANEL);
		return true;
	case VTPU_ERR_BAD_STRIDE:
		sb_printf(sb, "operand %s is in panels: its leading dimension "
			  "must be its %u columns, not %u", oname, cols, ld);
		return true;
	case VTPU_ERR_BAD_DTYPE:
		sb_printf(sb, "operand %s is in panels, which hold f32 only "
			  "(dtype %u)", oname, g->dtype);
		return true;
	}
	return false;
}

static void explain_flags(struct strbuf *sb, const void *cmd,
			  const struct vtpu_cmd_hdr *hdr, uint32_t avail)
{
	if (hdr->opcode == VTPU_OP_GEMM && avail >= sizeof(struct vtpu_cmd_gemm)) {
		const struct vtpu_cmd_gemm *g = cmd;

		sb_printf(sb, "unknown flag bits 0x%x (flags 0x%x; known 0x%x)",
			  g->flags & ~VTPU_GEMM_FLAGS, g->flags,
			  VTPU_GEMM_FLAGS);
		return;
	}
	if (avail >= cmd_size_for(hdr->opcode)) {
		switch (hdr->opcode) {
		case VTPU_OP_ELEMENTWISE:
			sb_printf(sb, "unknown elementwise op %u (known 0..%u)",
				  ((const struct vtpu_cmd_elementwise *)cmd)->op,
				  VTPU_EW_COUNT - 1);
			return;
		case VTPU_OP_REDUCE:
			sb_printf(sb, "unknown reduce op %u",
				  ((const struct vtpu_cmd_reduce *)cmd)->op);
			return;
		case VTPU_OP_SGD:
			sb_printf(sb, "flags 0x%x: unknown bits, or NESTEROV "
				  "without momentum",
				  ((const struct vtpu_cmd_sgd *)cmd)->flags);
			return;
		case VTPU_OP_IM2COL:
		case VTPU_OP_COL2IM:
		case VTPU_OP_MAXPOOL:
		case VTPU_OP_MAXPOOL_GRAD:
			sb_printf(sb, "flags must be zero");
			return;
		case VTPU_OP_CONV:
			sb_printf(sb, "flags 0x%x: CONV knows VTPU_CONV_BIAS "
				  "and VTPU_CONV_RELU",
				  ((const struct vtpu_cmd_conv *)cmd)->flags);
			return;
		case VTPU_OP_CONV_DGRAD:
		case VTPU_OP_CONV_WGRAD:
			sb_printf(sb, "flags 0x%x: the gradients know "
				  "VTPU_CONV_ACCUMULATE only",
				  ((const struct vtpu_cmd_conv *)cmd)->flags);
			return;
		}
	}
	sb_printf(sb, "unknown flag bits set");
}

static void explain_shape(struct strbuf *sb, const void *cmd,
			  const struct vtpu_cmd_hdr *hdr, uint32_t avail)
{
	if (avail < cmd_size_for(hdr->opcode)) {
		sb_printf(sb, "a dimension is 0 or too large");
		return;
	}
	switch (hdr->opcode) {
	case VTPU_OP_GEMM: {
		const struct vtpu_cmd_gemm *g = cmd;

		sb_printf(sb, "shape m=%u n=%u k=%u: every dimension must be "
			  "1..%u", g->m, g->n, g->k, VTPU_MAX_DIM);
		return;
	}
	case VTPU_OP_FILL: {
		uint32_t count = ((const struct vtpu_cmd_fill *)cmd)->count;

		sb_printf(sb, count ? "count %u is too large" :
				      "count %u: nothing to fill", count);
		return;
	}
	case VTPU_OP_COPY: {
		unsigned long long bytes =
			((const struct vtpu_cmd_copy *)cmd)->bytes;

		sb_printf(sb, bytes ? "%llu bytes is too large" :
				      "%llu bytes: nothing to copy", bytes);
		return;
	}
	case VTPU_OP_IM2COL:
	case VTPU_OP_COL2IM:
	case VTPU_OP_MAXPOOL:
	case VTPU_OP_MAXPOOL_GRAD: {
		/* both commands start with hdr, win */
		const struct vtpu_window *w =
			&((const struct vtpu_cmd_im2col *)cmd)->win;

		sb_printf(sb, "window n=%u h=%u w=%u c=%u k=%ux%u stride "
			  "%ux%u pad %ux%u: dimensions must be 1..%u, pad < "
			  "k, h + 2 pad >= k, and every tensor at most %llu "
			  "elements (pooling: h*w < 2^32)", w->n, w->h, w->w,
			  w->c, w->kh, w->kw, w->stride_h, w->stride_w,
			  w->pad_h, w->pad_w, VTPU_MAX_DIM,
			  (unsigned long long)VTPU_MAX_ELEMS);
		return;
	}
	case VTPU_OP_SOFTMAX_XENT: {
		const struct vtpu_cmd_softmax_xent *x = cmd;

		sb_printf(sb, "m=%u n=%u: m must be 1..%u and n 1..%u",
			  x->m, x->n, VTPU_MAX_DIM, VTPU_XENT_MAX_CLASSES);
		return;
	}
	case VTPU_OP_REDUCE: {
		const struct vtpu_cmd_reduce *r = cmd;

		sb_printf(sb, "m=%u n=%u: every dimension must be 1..%u",
			  r->m, r->n, VTPU_MAX_DIM);
		return;
	}
	case VTPU_OP_ELEMENTWISE:
	case VTPU_OP_SGD:
	case VTPU_OP_ADAM:
	case VTPU_OP_CAST:
		sb_printf(sb, "count must be 1..%llu",
			  (unsigned long long)VTPU_MAX_ELEMS);
		return;
	case VTPU_OP_DROPOUT:
		sb_printf(sb, "count must be 1..%llu and rate in [0, 1)",
			  (unsigned long long)VTPU_MAX_ELEMS);
		return;
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD: {
		const struct vtpu_cmd_conv_pool *c = cmd;
		const struct vtpu_window *w = &c->win;

		sb_printf(sb, "conv n=%u h=%u w=%u c=%u k=%ux%u stride %ux%u "
			  "pad %ux%u -> oc=%u, pool %ux%u stride %ux%u: "
			  "dimensions 1..%u, pad < k, h + 2 pad >= k, the pool "
			  "window within the conv output and at most 254 "
			  "positions, every tensor at most %llu elements", w->n, w->h, w->w,
			  w->c, w->kh, w->kw, w->stride_h, w->stride_w,
			  w->pad_h, w->pad_w, c->oc, c->pool_h, c->pool_w,
			  c->pool_stride_h, c->pool_stride_w, VTPU_MAX_DIM,
			  (unsigned long long)VTPU_MAX_ELEMS);
		return;
	}
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD: {
		const struct vtpu_cmd_conv *c = cmd;
		const struct vtpu_window *w = &c->win;

		sb_printf(sb, "conv n=%u h=%u w=%u c=%u k=%ux%u stride %ux%u "
			  "pad %ux%u -> oc=%u: dimensions 1..%u, pad < k, h + "
			  "2 pad >= k; windows (n*oh*ow), pixels (n*h*w), "
			  "kh*kw*c and kh*kw*oc at most %u; every tensor at "
			  "most %llu elements", w->n, w->h, w->w, w->c, w->kh,
			  w->kw, w->stride_h, w->stride_w, w->pad_h, w->pad_w,
			  c->oc, VTPU_MAX_DIM, VTPU_MAX_DIM,
			  (unsigned long long)VTPU_MAX_ELEMS);
		return;
	}
	}
	sb_printf(sb, "a dimension is 0 or too large");
}

/*
 * VTPU_ERR_BAD_STRIDE_REPEAT names a buffer (error.cmd), not a command: its
 * stride is not a multiple of 4, or the job's last iteration (first_iter +
 * repeat - 1) would start at or past the buffer's end.
 */
static void explain_stride_repeat(struct strbuf *sb,
				  const struct vtpu_cmdbuf *cb,
				  const struct vtpu_job *job)
{
	const uint32_t j = job->error.cmd;
	const unsigned long long first = job->first_iter;
	const unsigned long long last = first + (job->repeat ? job->repeat : 1) - 1;
	unsigned long long stride, size, fit;

	sb_printf(sb, "buffer %u: ", j);
	if (!job->strides || !cb || j >= cb->nhandles || !cb->bos ||
	    !cb->bos[j]) {
		sb_printf(sb, "its repeat stride is not a multiple of 4 or "
			  "walks past the buffer by iteration %llu", last);
		return;
	}
	stride = job->strides[j];
	size = cb->bos[j]->size;
	if (stride % 4) {
		sb_printf(sb, "repeat stride %llu is not a multiple of 4",
			  stride);
		return;
	}
	/* iterations 0..fit-1 start inside the buffer; iteration fit does not */
	if (!stride)
		fit = ~0ull;
	else if (stride >= size)
		fit = 1;
	else
		fit = (size + stride - 1) / stride;
	if (fit <= last && fit > first)
		sb_printf(sb, "repeat stride %llu walks past its %llu bytes "
			  "after %llu of %llu iterations (iteration %llu "
			  "would start at byte %llu)", stride, size,
			  fit - first, last - first + 1, fit, fit * stride);
	else
		sb_printf(sb, "repeat stride %llu: iterations %llu..%llu do "
			  "not fit its %llu bytes", stride, first, last, size);
}

char *vtpu_job_strerror(const struct vtpu_cmdbuf *cb,
			const struct vtpu_job *job, char *buf, size_t len)
{
	struct strbuf sb = { .buf = buf, .len = len };
	const uint32_t reason = job->error.reason;
	const uint32_t operand = job->error.operand;
	const uint32_t off = job->error.offset;
	struct vtpu_cmd_hdr hdr = { 0 };
	struct operand_info oi;
	const uint8_t *cmd = NULL;
	uint32_t avail = 0;
	const char *oname = operand_name(operand);

	if (!buf || !len)
		return buf;
	buf[0] = '\0';

	if (reason == VTPU_ERR_NONE) {
		sb_printf(&sb, "not a command-stream error");
		return buf;
	}
	if (reason == VTPU_ERR_BAD_STRIDE_REPEAT) {
		explain_stride_repeat(&sb, cb, job);
		return buf;
	}

	/* The failing command, as far as the stream holds it. */
	if (cb && cb->data && off % 8 == 0 && off < cb->size) {
		cmd = cb->data + off;
		avail = cb->size - off;
		if (avail >= sizeof(hdr))
			memcpy(&hdr, cmd, sizeof(hdr));
		if (hdr.size && hdr.size < avail)
			avail = hdr.size;
	}

	if (cmd && avail >= sizeof(hdr))
		sb_printf(&sb, "command %u (%s): ", job->error.cmd,
			  vtpu_opcode_name(hdr.opcode));
	else
		sb_printf(&sb, "command %u at byte %u: ", job->error.cmd, off);

	switch (reason) {
	case VTPU_ERR_TRUNCATED:
		if (!cmd || cb->size - off < sizeof(hdr))
			sb_printf(&sb, "the stream (%u bytes) ends inside the "
				  "command header", cb ? cb->size : 0);
		else
			sb_printf(&sb, "the command is %u bytes but the stream "
				  "(%u bytes) ends %u bytes into it",
				  hdr.size, cb->size, cb->size - off);
		break;
	case VTPU_ERR_BAD_SIZE:
		if (cmd_size_for(hdr.opcode))
			sb_printf(&sb, "size %u is wrong for %s (must be %u)",
				  hdr.size, vtpu_opcode_name(hdr.opcode),
				  cmd_size_for(hdr.opcode));
		else
			sb_printf(&sb, "size %u is not a non-zero multiple "
				  "of 8", hdr.size);
		break;
	case VTPU_ERR_BAD_OPCODE:
		sb_printf(&sb, "unknown opcode %u", hdr.opcode);
		break;
	case VTPU_ERR_BAD_FLAGS:
		explain_flags(&sb, cmd, &hdr, avail);
		break;
	case VTPU_ERR_BAD_PAD:
		if (operand == VTPU_OPERAND_BIAS &&
		    hdr.opcode == VTPU_OP_GEMM &&
		    avail >= sizeof(struct vtpu_cmd_gemm) &&
		    !(((const struct vtpu_cmd_gemm *)cmd)->flags &
		      VTPU_GEMM_BIAS))
			sb_printf(&sb, "operand bias is unused (no "
				  "VTPU_GEMM_BIAS) and must be all zero");
		else if (operand != VTPU_OPERAND_NONE &&
			 hdr.opcode >= VTPU_OP_IM2COL)
			sb_printf(&sb, "operand %s: its pad is not zero, or the "
				  "command does not use it and it is not all "
				  "zero", oname);
		else if (operand != VTPU_OPERAND_NONE)
			sb_printf(&sb, "operand %s: pad field is not zero",
				  oname);
		else if (hdr.opcode >= VTPU_OP_IM2COL)
			sb_printf(&sb, "a pad field, or a scalar the command "
				  "does not use, is not zero");
		else
			sb_printf(&sb, "a pad field is not zero");
		break;
	case VTPU_ERR_BAD_SHAPE:
		if (!explain_panels(&sb, cmd, avail, reason, operand, oname))
			explain_shape(&sb, cmd, &hdr, avail);
		break;
	case VTPU_ERR_BAD_STRIDE:
		if (explain_panels(&sb, cmd, avail, reason, operand, oname))
			break;
		if (cmd && !operand_lookup(cmd, avail, operand, &oi) &&
		    oi.ld_name)
			sb_printf(&sb, "operand %s: %s %u is smaller than its "
				  "row length %u (stored %u x %u)", oname,
				  oi.ld_name, oi.ld, oi.cols, oi.rows, oi.cols);
		else if (operand == VTPU_OPERAND_NONE &&
			 hdr.opcode == VTPU_OP_CONV_DGRAD)
			sb_printf(&sb, "CONV_DGRAD wants stride 1x1 (larger "
				  "strides: GEMM and COL2IM)");
		else if (operand == VTPU_OPERAND_NONE)
			sb_printf(&sb, "a window's stride is 0 or above %u",
				  VTPU_MAX_DIM);
		else
			sb_printf(&sb, "operand %s: leading dimension too "
				  "small", oname);
		break;
	case VTPU_ERR_BAD_DTYPE:
		if (explain_panels(&sb, cmd, avail, reason, operand, oname))
			break;
		if (hdr.opcode == VTPU_OP_GEMM &&
		    avail >= sizeof(struct vtpu_cmd_gemm))
			sb_printf(&sb, "dtype %u is unknown or unsupported",
				  ((const struct vtpu_cmd_gemm *)cmd)->dtype);
		else if (hdr.opcode == VTPU_OP_CAST &&
			 avail >= sizeof(struct vtpu_cmd_cast))
			sb_printf(&sb, "unknown cast mode %u",
				  ((const struct vtpu_cmd_cast *)cmd)->mode);
		else
			sb_printf(&sb, "unknown or unsupported dtype");
		break;
	case VTPU_ERR_BAD_BUFFER:
		if (cmd && !operand_lookup(cmd, avail, operand, &oi))
			sb_printf(&sb, "operand %s names buffer %u but the job "
				  "has only %u buffers", oname, oi.op->buf,
				  cb->nhandles);
		else
			sb_printf(&sb, "operand %s names a buffer index >= the "
				  "job's %u buffers", oname,
				  cb ? cb->nhandles : 0);
		break;
	case VTPU_ERR_OUT_OF_BOUNDS:
		if (cmd && !operand_lookup(cmd, avail, operand, &oi)) {
			sb_printf(&sb, "operand %s [offset %llu + %llu bytes] "
				  "exceeds buffer %u", oname,
				  (unsigned long long)oi.op->offset,
				  (unsigned long long)oi.extent, oi.op->buf);
			if (oi.op->buf < cb->nhandles && cb->bos[oi.op->buf])
				sb_printf(&sb, " (%llu bytes)",
					  (unsigned long long)
					  cb->bos[oi.op->buf]->size);
			if (oi.op->offset > UINT64_MAX - oi.extent)
				sb_printf(&sb, "; the sum overflows 64 bits");
		} else {
			sb_printf(&sb, "operand %s extends past its buffer",
				  oname);
		}
		break;
	case VTPU_ERR_MISALIGNED:
		if (cmd && !operand_lookup(cmd, avail, operand, &oi))
			sb_printf(&sb, "operand %s offset %llu is not a "
				  "multiple of %u bytes", oname,
				  (unsigned long long)oi.op->offset, oi.align);
		else
			sb_printf(&sb, "operand %s offset is misaligned",
				  oname);
		break;
	case VTPU_ERR_OVERLAP:
		sb_printf(&sb, "output operand %s overlaps an input", oname);
		break;
	case VTPU_ERR_READ_ONLY:
		sb_printf(&sb, "it writes a buffer this client imported "
			  "read-only (exported without O_RDWR)");
		break;
	default:
		sb_printf(&sb, "unknown reason %u (operand %s)", reason,
			  oname);
		break;
	}
	return buf;
}
