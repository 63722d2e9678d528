// SPDX-License-Identifier: MIT
/*
 * libvtpu command streams: a growable, 8-byte-aligned byte stream of
 * commands (uapi/linux/vtpu.h's command set) and the list of buffers the
 * commands name by index (vtpu_job_strerror(), which explains a stream the
 * validator rejected, is in explain.c).
 *
 * Appends never fail loudly: the first failure is kept in cb->error and
 * vtpu_submit() returns it, so a builder can append a whole program and
 * check once.
 */
#include <errno.h>
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
		       const struct vtpu_window *win, uint32_t flags,
		       struct vtpu_ref x, struct vtpu_ref y,
		       struct vtpu_ref index)
{
	struct vtpu_cmd_pool c;

	CMD_INIT(&c, opcode);
	c.win = *win;
	c.flags = flags;
	c.x = opnd(x);
	c.y = opnd(y);
	c.index = opnd(index);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_maxpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			struct vtpu_ref x, struct vtpu_ref y,
			struct vtpu_ref index)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL, win, 0, x, y, index);
}

int vtpu_cmdbuf_maxpool_padded(struct vtpu_cmdbuf *cb,
			       const struct vtpu_window *win, uint32_t flags,
			       struct vtpu_ref x, struct vtpu_ref y,
			       struct vtpu_ref index)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL, win, flags, x, y, index);
}

int vtpu_cmdbuf_maxpool_grad_padded(struct vtpu_cmdbuf *cb,
				    const struct vtpu_window *win,
				    uint32_t flags, struct vtpu_ref dy,
				    struct vtpu_ref index, struct vtpu_ref dx)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL_GRAD, win, flags, dx, dy,
			   index);
}

int vtpu_cmdbuf_maxpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, struct vtpu_ref dy,
			     struct vtpu_ref index, struct vtpu_ref dx)
{
	return cmdbuf_pool(cb, VTPU_OP_MAXPOOL_GRAD, win, 0, dx, dy, index);
}

static int cmdbuf_avgpool(struct vtpu_cmdbuf *cb, uint32_t opcode,
			  const struct vtpu_window *win, uint32_t oh,
			  uint32_t ow, struct vtpu_ref x, struct vtpu_ref y)
{
	struct vtpu_cmd_avgpool c;

	CMD_INIT(&c, opcode);
	c.win = *win;
	c.oh = oh;
	c.ow = ow;
	c.x = opnd(x);
	c.y = opnd(y);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_avgpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			uint32_t oh, uint32_t ow, struct vtpu_ref x,
			struct vtpu_ref y)
{
	return cmdbuf_avgpool(cb, VTPU_OP_AVGPOOL, win, oh, ow, x, y);
}

int vtpu_cmdbuf_avgpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, uint32_t oh,
			     uint32_t ow, struct vtpu_ref dy, struct vtpu_ref dx)
{
	return cmdbuf_avgpool(cb, VTPU_OP_AVGPOOL_GRAD, win, oh, ow, dx, dy);
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

static int cmdbuf_dwconv(struct vtpu_cmdbuf *cb, uint32_t opcode,
			 const struct vtpu_dwconv_desc *d)
{
	struct vtpu_cmd_dwconv c;

	CMD_INIT(&c, opcode);
	c.win = d->win;
	c.oh = d->oh;
	c.ow = d->ow;
	c.mult = d->mult;
	c.flags = d->flags;
	c.x = opnd(d->x);
	c.w = opnd(d->w);
	c.y = opnd(d->y);
	if (opcode == VTPU_OP_DWCONV && (d->flags & VTPU_CONV_BIAS))
		c.bias = opnd(d->bias);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_dwconv(struct vtpu_cmdbuf *cb, const struct vtpu_dwconv_desc *d)
{
	return cmdbuf_dwconv(cb, VTPU_OP_DWCONV, d);
}

int vtpu_cmdbuf_dwconv_dgrad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_dwconv_desc *d)
{
	return cmdbuf_dwconv(cb, VTPU_OP_DWCONV_DGRAD, d);
}

int vtpu_cmdbuf_dwconv_wgrad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_dwconv_desc *d)
{
	return cmdbuf_dwconv(cb, VTPU_OP_DWCONV_WGRAD, d);
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

int vtpu_cmdbuf_argmax(struct vtpu_cmdbuf *cb, uint32_t m, uint32_t n,
		       uint32_t ldx, struct vtpu_ref x, struct vtpu_ref y)
{
	struct vtpu_cmd_argmax c;

	CMD_INIT(&c, VTPU_OP_ARGMAX);
	c.m = m;
	c.n = n;
	c.ldx = ldx ? ldx : n;
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

static int cmdbuf_softmax(struct vtpu_cmdbuf *cb, uint32_t opcode,
			  const struct vtpu_softmax_desc *d)
{
	struct vtpu_cmd_softmax c;

	CMD_INIT(&c, opcode);
	c.m = d->m;
	c.n = d->n;
	c.rows_per_group = d->rows_per_group ? d->rows_per_group : 1;
	c.flags = d->flags;
	c.x = opnd(d->x);
	c.y = opnd(d->y);
	if (opcode == VTPU_OP_SOFTMAX_GRAD)
		c.dy = opnd(d->dy);
	if (d->flags & VTPU_SOFTMAX_LENGTHS)
		c.lengths = opnd(d->lengths);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_softmax(struct vtpu_cmdbuf *cb,
			const struct vtpu_softmax_desc *d)
{
	return cmdbuf_softmax(cb, VTPU_OP_SOFTMAX, d);
}

int vtpu_cmdbuf_softmax_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_softmax_desc *d)
{
	return cmdbuf_softmax(cb, VTPU_OP_SOFTMAX_GRAD, d);
}

static int cmdbuf_additive(struct vtpu_cmdbuf *cb, uint32_t opcode,
			   const struct vtpu_additive_desc *d)
{
	struct vtpu_cmd_additive_score c;

	CMD_INIT(&c, opcode);
	c.batch = d->batch;
	c.tq = d->tq;
	c.tk = d->tk;
	c.units = d->units;
	c.q = opnd(d->q);
	c.k = opnd(d->k);
	c.v = opnd(d->v);
	c.s = opnd(d->s);
	if (opcode == VTPU_OP_ADDITIVE_SCORE_GRAD) {
		c.dq = opnd(d->dq);
		c.dk = opnd(d->dk);
		c.dv = opnd(d->dv);
	}
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_additive_score(struct vtpu_cmdbuf *cb,
			       const struct vtpu_additive_desc *d)
{
	return cmdbuf_additive(cb, VTPU_OP_ADDITIVE_SCORE, d);
}

int vtpu_cmdbuf_additive_score_grad(struct vtpu_cmdbuf *cb,
				    const struct vtpu_additive_desc *d)
{
	return cmdbuf_additive(cb, VTPU_OP_ADDITIVE_SCORE_GRAD, d);
}

int vtpu_cmdbuf_lstm_cell(struct vtpu_cmdbuf *cb,
			  const struct vtpu_lstm_desc *d)
{
	struct vtpu_cmd_lstm_cell c;

	CMD_INIT(&c, VTPU_OP_LSTM_CELL);
	c.batch = d->batch;
	c.hidden = d->hidden;
	c.row_stride = d->row_stride;
	c.gate_stride = d->gate_stride;
	c.gates = opnd(d->gates);
	c.c_prev = opnd(d->c_prev);
	c.act = opnd(d->act);
	c.c = opnd(d->c);
	c.tc = opnd(d->tc);
	c.h = opnd(d->h);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_lstm_cell_grad(struct vtpu_cmdbuf *cb,
			       const struct vtpu_lstm_desc *d)
{
	struct vtpu_cmd_lstm_cell_grad c;

	CMD_INIT(&c, VTPU_OP_LSTM_CELL_GRAD);
	c.batch = d->batch;
	c.hidden = d->hidden;
	c.row_stride = d->row_stride;
	c.gate_stride = d->gate_stride;
	c.act = opnd(d->act);
	c.c_prev = opnd(d->c_prev);
	c.tc = opnd(d->tc);
	c.dh = opnd(d->dh);
	c.dc_next = opnd(d->dc_next);
	c.dgates = opnd(d->dgates);
	c.dc_prev = opnd(d->dc_prev);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_batchnorm(struct vtpu_cmdbuf *cb,
			  const struct vtpu_batchnorm_desc *d)
{
	struct vtpu_cmd_batchnorm c;

	CMD_INIT(&c, VTPU_OP_BATCHNORM);
	c.rows = d->rows;
	c.channels = d->channels;
	c.flags = d->flags;
	c.epsilon = f32_bits(d->epsilon);
	c.momentum = f32_bits(d->momentum);
	c.x = opnd(d->x);
	c.y = opnd(d->y);
	c.gamma = opnd(d->gamma);
	c.beta = opnd(d->beta);
	if (d->flags & VTPU_BATCHNORM_TRAINING)
		c.stats = opnd(d->stats);
	c.moving_mean = opnd(d->moving_mean);
	c.moving_var = opnd(d->moving_var);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_batchnorm_grad(struct vtpu_cmdbuf *cb,
			       const struct vtpu_batchnorm_desc *d)
{
	struct vtpu_cmd_batchnorm_grad c;

	CMD_INIT(&c, VTPU_OP_BATCHNORM_GRAD);
	c.rows = d->rows;
	c.channels = d->channels;
	c.flags = d->flags;
	c.x = opnd(d->x);
	c.dy = opnd(d->dy);
	c.gamma = opnd(d->gamma);
	c.stats = opnd(d->stats);
	c.dx = opnd(d->dx);
	c.dgamma = opnd(d->dgamma);
	c.dbeta = opnd(d->dbeta);
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

int vtpu_cmdbuf_clip_norm(struct vtpu_cmdbuf *cb, uint64_t count,
			  float max_norm, struct vtpu_ref sumsq,
			  struct vtpu_ref x)
{
	struct vtpu_cmd_clip_norm c;

	CMD_INIT(&c, VTPU_OP_CLIP_NORM);
	c.count = count;
	c.max_norm = f32_bits(max_norm);
	c.sumsq = opnd(sumsq);
	c.x = opnd(x);
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

int vtpu_cmdbuf_image_augment(struct vtpu_cmdbuf *cb,
			      const struct vtpu_augment_desc *d)
{
	struct vtpu_cmd_image_augment c;

	CMD_INIT(&c, VTPU_OP_IMAGE_AUGMENT);
	c.n = d->n;
	c.h = d->h;
	c.w = d->w;
	c.c = d->c;
	c.oh = d->oh;
	c.ow = d->ow;
	c.seed = d->seed;
	c.flags = d->flags;
	c.x = opnd(d->x);
	c.y = opnd(d->y);
	c.step = opnd(d->step);
	return vtpu_cmdbuf_append(cb, &c);
}

static int cmdbuf_embedding(struct vtpu_cmdbuf *cb, uint32_t opcode,
			    uint32_t n, uint32_t vocab, uint32_t dim,
			    uint32_t flags, struct vtpu_ref ids,
			    struct vtpu_ref table, struct vtpu_ref y)
{
	struct vtpu_cmd_embedding c;

	CMD_INIT(&c, opcode);
	c.n = n;
	c.vocab = vocab;
	c.dim = dim;
	c.flags = flags;
	c.ids = opnd(ids);
	c.table = opnd(table);
	c.y = opnd(y);
	return vtpu_cmdbuf_append(cb, &c);
}

int vtpu_cmdbuf_embedding(struct vtpu_cmdbuf *cb, uint32_t n, uint32_t vocab,
			  uint32_t dim, struct vtpu_ref ids,
			  struct vtpu_ref table, struct vtpu_ref y)
{
	return cmdbuf_embedding(cb, VTPU_OP_EMBEDDING, n, vocab, dim, 0, ids,
				table, y);
}

int vtpu_cmdbuf_embedding_grad(struct vtpu_cmdbuf *cb, uint32_t n,
			       uint32_t vocab, uint32_t dim, uint32_t flags,
			       struct vtpu_ref ids, struct vtpu_ref dy,
			       struct vtpu_ref dtable)
{
	return cmdbuf_embedding(cb, VTPU_OP_EMBEDDING_GRAD, n, vocab, dim,
				flags, ids, dtable, dy);
}

int vtpu_cmdbuf_gemm_batched(struct vtpu_cmdbuf *cb,
			     const struct vtpu_gemm_batched_desc *g)
{
	struct vtpu_cmd_gemm_batched c;

	CMD_INIT(&c, VTPU_OP_GEMM_BATCHED);
	c.batch = g->batch;
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
	c.stride_a = g->stride_a;
	c.stride_b = g->stride_b;
	c.stride_c = g->stride_c;
	c.a = opnd(g->a);
	c.b = opnd(g->b);
	c.c = opnd(g->c);
	return vtpu_cmdbuf_append(cb, &c);
}
