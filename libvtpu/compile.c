// SPDX-License-Identifier: MIT
/*
 * The compiler: a graph and a batch size in, one command stream out.
 *
 * 1. Emit: walk the nodes forward, emitting each op's commands; for a
 *    training program, the loss emits its gradient, the nodes are walked
 *    backward emitting each op's gradient commands (reverse-mode autodiff:
 *    a node's gradient is written by its first contribution and added to
 *    by the others), then the optimizer updates every parameter at once.
 *    Operands name "storages" (a tensor's memory) rather than buffers.
 * 2. Plan: every activation storage lives from the first command that
 *    touches it to the last; storages whose lifetimes do not overlap share
 *    memory (greedy, largest first), so the arena is a fraction of the sum.
 * 3. Lower: rewrite every operand to (buffer, offset) with the engine's
 *    own operand table (vtpu_engine_operand), so the compiler never keeps
 *    a second list of where each command keeps its operands.
 *
 * The stream is compiled once and replayed every step: everything that
 * changes between steps (the batch, the step count Adam needs) is in
 * device memory, walked by the submission's per-iteration strides.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_priv.h"
#include "util_priv.h"
#include "vtpu_engine.h"

#define ALIGN 64
#define MAX_OPERAND_ID 63
/* The cols workspace of a strided conv's dx (GEMM + COL2IM) per chunk. */
#define CONV_CHUNK_BYTES (4u << 20)
/* Per chunk of a convolution fused with its pooling: its output (+ cols). */
#define FUSED_CHUNK_BYTES (4u << 20)

struct store {
	enum vg_buf buf;
	uint64_t bytes;
	uint64_t base;
	int first, last; /* command indices touching it (work only) */
};

/* A tensor: a storage and an offset in it. sid 0 is "none". */
struct tref {
	int sid;
	uint64_t off;
};

/*
 * What an LSTM or a GRU keeps for its gradient, time-major: h of steps
 * -1..T-1 ([T + 1][B][H]: step -1 the initial state) and the gates'
 * activations, gate-major ([4][T][B][H], so that each gate of a step is
 * one contiguous block for the element-wise commands). An LSTM's slots
 * are its gates i, f, g, o; it keeps c ([T + 1][B][H]) and tanh(c)
 * ([T][B][H]) too. A GRU's are z, r, the recurrent part of the candidate
 * (h U_h + b_rh, which r scales) and the candidate h~ (x W_h + b_ih
 * until the step); it keeps the sums of z's and r's two biases (bsum,
 * [2][H]) and ones ([T * B]) that broadcast b_rh.
 */
struct rnn_bufs {
	struct tref hx, act;
	struct tref cx, tc;	/* LSTM */
	struct tref bsum, ones;	/* GRU */
};

struct cx {
	const struct vtpu_graph *g;
	enum vg_prog_kind kind;
	uint32_t B;
	const struct vg_optim *opt;
	struct vg_state_layout sl;
	struct vtpu_cmdbuf cb;
	struct store *st;
	int nst, st_cap;
	struct tref *val, *grad, *aux; /* per node */
	bool *needs_grad;
	int *pool_of;	/* conv node -> the maxpool fused with it, or -1 */
	bool *relu_folded; /* a ReLU node run by its CONV_POOL (VTPU_CONV_RELU),
			    * or of a ReLU's output: its value is its input */
	bool *pool_relu;   /* a maxpool node whose CONV_POOL runs that ReLU */
	bool *want_bwd;	   /* an LSTM or GRU whose states (only) have
			    * gradients */
	bool *dec;	   /* decoding: a node run step by step */
	int *bn_into;	   /* a conv or dense node -> the batch norm folded
			    * into it, or -1 */
	int *bn_relu;	   /* a batch norm node -> the ReLU it runs
			    * (VTPU_BATCHNORM_RELU), or -1 */
	struct tref *wf, *bf; /* its folded weights and bias */
	int step;	   /* the step being emitted, or -1: all of them */
	int bwd_node;	   /* the node whose backward pass is being emitted */
	bool unfused_lstm; /* VTPU_UNFUSED_LSTM: ELEMENTWISE, not LSTM_CELL */
	struct rnn_bufs *rnn; /* per LSTM or GRU node */
	int state, images, labels, metrics, grads;
	uint32_t bwd_at; /* where the backward pass starts in cb */
	uint32_t opt_at; /* where the optimizer's commands start in cb, if
			  * they are all at the end (else 0) */
	int err;
};

static int new_store(struct cx *cx, enum vg_buf buf, uint64_t bytes)
{
	struct store *s;

	if (cx->nst == cx->st_cap) {
		int cap = cx->st_cap ? 2 * cx->st_cap : 64;
		void *p = realloc(cx->st, cap * sizeof(*cx->st));

		if (!p) {
			cx->err = -ENOMEM;
			return 0;
		}
		cx->st = p;
		cx->st_cap = cap;
	}
	s = &cx->st[cx->nst];
	memset(s, 0, sizeof(*s));
	s->buf = buf;
	s->bytes = bytes;
	s->first = -1;
	return cx->nst++;
}

static struct tref work(struct cx *cx, uint64_t bytes)
{
	return (struct tref){ new_store(cx, VG_BUF_WORK, bytes), 0 };
}

static struct tref at(int sid, uint64_t off)
{
	return (struct tref){ sid, off };
}

static struct vtpu_operand opnd(struct tref t)
{
	return (struct vtpu_operand){ .buf = (uint32_t)t.sid, .offset = t.off };
}

static void emit(struct cx *cx, const void *cmd)
{
	int ret = vtpu_cmdbuf_append(&cx->cb, cmd);

	if (ret && !cx->err)
		cx->err = ret;
}

static struct tref param(struct cx *cx, int p)
{
	return at(cx->state, cx->sl.params +
				     cx->g->params[p].offset * sizeof(float));
}

static struct tref param_grad(struct cx *cx, int p)
{
	return at(cx->grads, cx->g->params[p].offset * sizeof(float));
}

/* ---- emitters, one per command ------------------------------------------ */

static void gemm(struct cx *cx, uint32_t m, uint32_t n, uint32_t k,
		 uint32_t flags, struct tref a, struct tref b, struct tref c,
		 struct tref bias, float beta)
{
	struct vtpu_cmd_gemm cmd = {
		.hdr = { VTPU_OP_GEMM, sizeof(cmd) },
		.m = m, .n = n, .k = k, .flags = flags,
		.lda = flags & VTPU_GEMM_TRANS_A ? m : k,
		.ldb = flags & VTPU_GEMM_TRANS_B ? k : n,
		.ldc = n, .dtype = VTPU_DTYPE_F32,
		.alpha = f32_bits(1.0f), .beta = f32_bits(beta),
		.a = opnd(a), .b = opnd(b), .c = opnd(c),
	};

	if (flags & VTPU_GEMM_BIAS)
		cmd.bias = opnd(bias);
	emit(cx, &cmd);
}

/* A GEMM on sub-matrices: explicit leading dimensions, no bias. */
static void gemm_ld(struct cx *cx, uint32_t m, uint32_t n, uint32_t k,
		    uint32_t flags, struct tref a, uint32_t lda, struct tref b,
		    uint32_t ldb, struct tref c, uint32_t ldc, float beta)
{
	struct vtpu_cmd_gemm cmd = {
		.hdr = { VTPU_OP_GEMM, sizeof(cmd) },
		.m = m, .n = n, .k = k, .flags = flags,
		.lda = lda, .ldb = ldb, .ldc = ldc, .dtype = VTPU_DTYPE_F32,
		.alpha = f32_bits(1.0f), .beta = f32_bits(beta),
		.a = opnd(a), .b = opnd(b), .c = opnd(c),
	};

	emit(cx, &cmd);
}

/* One product per example, or per gate: C_i = op(A_i) op(B_i) + beta C_i. */
struct bgemm {
	uint32_t batch, m, n, k, flags, lda, ldb, ldc;
	uint64_t sa, sb, sc;	/* strides, elements */
	struct tref a, b, c;
	float beta;
};

static void gemm_batched(struct cx *cx, const struct bgemm *g)
{
	struct vtpu_cmd_gemm_batched cmd = {
		.hdr = { VTPU_OP_GEMM_BATCHED, sizeof(cmd) },
		.batch = g->batch, .m = g->m, .n = g->n, .k = g->k,
		.flags = g->flags, .lda = g->lda, .ldb = g->ldb, .ldc = g->ldc,
		.dtype = VTPU_DTYPE_F32, .alpha = f32_bits(1.0f),
		.beta = f32_bits(g->beta), .stride_a = g->sa,
		.stride_b = g->sb, .stride_c = g->sc,
		.a = opnd(g->a), .b = opnd(g->b), .c = opnd(g->c),
	};

	emit(cx, &cmd);
}

static void ew(struct cx *cx, uint32_t op, uint64_t count, struct tref x,
	       struct tref y, struct tref z)
{
	struct vtpu_cmd_elementwise cmd = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(cmd) },
		.op = op, .count = count,
		.x = opnd(x), .y = opnd(y), .z = opnd(z),
	};

	emit(cx, &cmd);
}

static void reduce_cols(struct cx *cx, uint32_t m, uint32_t n, struct tref x,
			struct tref y, float beta)
{
	struct vtpu_cmd_reduce cmd = {
		.hdr = { VTPU_OP_REDUCE, sizeof(cmd) },
		.op = VTPU_REDUCE_COLS, .m = m, .n = n, .ldx = n,
		.alpha = f32_bits(1.0f), .beta = f32_bits(beta),
		.x = opnd(x), .y = opnd(y),
	};

	emit(cx, &cmd);
}

/* @count floats of zeros at @dst. */
static void zeros(struct cx *cx, struct tref dst, uint32_t count)
{
	struct vtpu_cmd_fill cmd = {
		.hdr = { VTPU_OP_FILL, sizeof(cmd) },
		.count = count, .dst = opnd(dst),
	};

	emit(cx, &cmd);
}

/* How many inputs of the graph's nodes are node @x. */
static int consumers(const struct vtpu_graph *g, int x)
{
	int k, j, uses = 0;

	for (k = 0; k < g->nnodes; k++)
		for (j = 0; j < VG_MAX_IN; j++)
			uses += g->nodes[k].in[j] == x;
	return uses;
}

/*
 * Node @i's bias gradient: the column sums of its @m rows of @dz. A bias
 * added just before a batch norm (no activation between, nothing else
 * reading the node) shifts every row of a channel alike, and the training
 * step's normalisation subtracts the batch mean again: the loss does not
 * depend on it, its gradient is 0 exactly (the sum of the batch norm's
 * input gradient over rows is 0 but for rounding), so it is written as 0
 * instead of summed. Keras' ResNet and Xception blocks (conv, batch norm)
 * have such biases unless use_bias=False.
 */
static void bias_grad(struct cx *cx, int i, uint32_t m, struct tref dz)
{
	const struct vtpu_graph *g = cx->g;
	const struct vg_node *n = &g->nodes[i];
	int k;

	if (n->act == VTPU_ACT_NONE && consumers(g, i) == 1) {
		for (k = 0; k < g->nnodes; k++)
			if (g->nodes[k].in[0] == i)
				break;
		if (k < g->nnodes && g->nodes[k].op == VG_BATCHNORM) {
			zeros(cx, param_grad(cx, n->bias), n->c);
			return;
		}
	}
	reduce_cols(cx, m, n->c, dz, param_grad(cx, n->bias), 0.0f);
}

static struct vtpu_window window(const struct vg_node *in, uint32_t n,
				 const struct vg_node *node)
{
	return (struct vtpu_window){
		.n = n, .h = in->h, .w = in->w, .c = in->c,
		.kh = node->kh, .kw = node->kw,
		.stride_h = node->stride_h, .stride_w = node->stride_w,
		.pad_h = node->pad_h, .pad_w = node->pad_w,
	};
}

static void im2col(struct cx *cx, uint32_t opcode, struct vtpu_window win,
		   struct tref image, struct tref cols)
{
	struct vtpu_cmd_im2col cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.win = win, .image = opnd(image), .cols = opnd(cols),
	};

	emit(cx, &cmd);
}

/* ---- gradients ------------------------------------------------------------ */

/*
 * Where a contribution to node x's gradient goes: the gradient itself if
 * this is the first one, else a temporary that grad_end() adds in.
 */
static struct tref grad_begin(struct cx *cx, int x, struct tref *tmp)
{
	uint64_t bytes = cx->B * vg_node_size(&cx->g->nodes[x]) * 4;

	if (!cx->grad[x].sid) {
		cx->grad[x] = work(cx, bytes);
		*tmp = at(0, 0);
		return cx->grad[x];
	}
	*tmp = work(cx, bytes);
	return *tmp;
}

/*
 * Add @g to node x's gradient: in place, unless grad_pass() shared x's
 * buffer with a node whose backward pass is still to come (the passes run
 * from the last node; the one running now included), which reads it
 * then: an add's other input, whose gradient is the add's too, say. The
 * sum then goes to a buffer of x's own; the bits are the same.
 */
static void grad_add(struct cx *cx, int x, struct tref g)
{
	uint64_t bytes = cx->B * vg_node_size(&cx->g->nodes[x]) * 4;
	struct tref sum = cx->grad[x];
	bool shared = false;
	int j;

	for (j = 0; j <= cx->bwd_node && !shared; j++) {
		uint64_t len = cx->B * vg_node_size(&cx->g->nodes[j]) * 4;

		shared = j != x && cx->grad[j].sid == sum.sid &&
			 cx->grad[j].off < sum.off + bytes &&
			 sum.off < cx->grad[j].off + len;
	}
	if (shared)
		sum = work(cx, bytes);
	ew(cx, VTPU_EW_ADD, bytes / 4, cx->grad[x], g, sum);
	cx->grad[x] = sum;
}

static void grad_end(struct cx *cx, int x, struct tref tmp)
{
	if (tmp.sid)
		grad_add(cx, x, tmp);
}

/* A gradient that is just passed on (flatten, add): share it if we can. */
static void grad_pass(struct cx *cx, int x, struct tref g)
{
	if (!cx->needs_grad[x])
		return;
	if (!cx->grad[x].sid)
		cx->grad[x] = g;
	else
		grad_add(cx, x, g);
}

/* dz: the gradient before the activation (ReLU's mask applied to dy). */
static struct tref act_grad(struct cx *cx, int i, struct tref dy)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t count = cx->B * vg_node_size(n);
	struct tref dz;

	if (n->act != VTPU_ACT_RELU && n->act != VTPU_ACT_TANH)
		return dy;
	dz = work(cx, count * 4);
	/* from the output: > 0 exactly where the input is; 1 - tanh^2 */
	ew(cx, n->act == VTPU_ACT_RELU ? VTPU_EW_RELU_GRAD : VTPU_EW_TANH_GRAD,
	   count, cx->val[i], dy, dz);
	return dz;
}

/* ---- ops: forward and backward ------------------------------------------ */

static struct tref shifted(struct tref t, uint64_t bytes)
{
	return at(t.sid, t.off + bytes);
}

/*
 * The rows of node @i's output the op emits now: all of them, or when
 * decoding step by step, the current step's block of a sequence.
 */
static uint64_t first_row(const struct cx *cx, int i, uint32_t *rows)
{
	const struct vg_node *n = &cx->g->nodes[i];

	if (cx->step < 0 || !n->seq) {
		*rows = (uint32_t)vg_node_rows(n, cx->B);
		return 0;
	}
	*rows = cx->B;
	return (uint64_t)cx->step * cx->B;
}

/* @i's output, made on its first use (a step emits one block of it). */
static void alloc_val(struct cx *cx, int i, uint64_t bytes)
{
	if (!cx->val[i].sid)
		cx->val[i] = work(cx, bytes);
}

/*
 * A dense layer: rows of its input (examples, or steps of a sequence) times
 * W, plus b. Over a concatenation, each part times its block of W's rows.
 */
/*
 * Fold batch norm node @j into the weights of node @i (eval and predict):
 * s = gamma / sqrt(moving_var + eps) per output channel, W' = W * s and
 * b' = (b - moving_mean) * s + beta, both by BATCHNORM in inference mode
 * (W' with zero moving mean and beta), on the device every run: the
 * weights change between runs.
 */
static void bn_fold(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i], *bn = &cx->g->nodes[j];
	uint32_t c = n->c;
	uint32_t k = (uint32_t)(cx->g->params[n->weight].count / c);
	struct tref zero = work(cx, (uint64_t)c * 4);
	struct vtpu_cmd_fill fill = {
		.hdr = { VTPU_OP_FILL, sizeof(fill) },
		.count = c, .dst = opnd(zero),
	};
	struct vtpu_cmd_batchnorm cmd = {
		.hdr = { VTPU_OP_BATCHNORM, sizeof(cmd) },
		.rows = k, .channels = c, .epsilon = f32_bits(bn->eps),
		.momentum = f32_bits(bn->rate),
		.x = opnd(param(cx, n->weight)),
		.gamma = opnd(param(cx, bn->weight)),
		.beta = opnd(zero), .moving_mean = opnd(zero),
		.moving_var = opnd(param(cx, bn->mvar)),
	};

	cx->wf[i] = work(cx, (uint64_t)k * c * 4);
	cx->bf[i] = work(cx, (uint64_t)c * 4);
	emit(cx, &fill);
	cmd.y = opnd(cx->wf[i]);
	emit(cx, &cmd);
	cmd.rows = 1;
	cmd.x = opnd(param(cx, n->bias));
	cmd.y = opnd(cx->bf[i]);
	cmd.beta = opnd(param(cx, bn->bias));
	cmd.moving_mean = opnd(param(cx, bn->mmean));
	emit(cx, &cmd);
}

/* Node @i's weights and bias as its forward reads them: folded or not. */
static struct tref fwd_w(struct cx *cx, int i)
{
	if (cx->bn_into && cx->bn_into[i] >= 0)
		return cx->wf[i];
	return param(cx, cx->g->nodes[i].weight);
}

static struct tref fwd_b(struct cx *cx, int i)
{
	if (cx->bn_into && cx->bn_into[i] >= 0)
		return cx->bf[i];
	return param(cx, cx->g->nodes[i].bias);
}

static void dense_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	uint32_t k = (uint32_t)(n->seq ? in->c : vg_node_size(in)), rows;
	uint64_t r0 = first_row(cx, i, &rows);
	uint32_t flags = VTPU_GEMM_BIAS;
	struct tref y;

	if (cx->bn_into && cx->bn_into[i] >= 0)
		bn_fold(cx, i, cx->bn_into[i]);
	alloc_val(cx, i, vg_node_rows(n, cx->B) * n->c * 4);
	y = shifted(cx->val[i], r0 * n->c * 4);
	if (in->op == VG_CONCAT) {
		int x0 = in->in[0], x1 = in->in[1];
		uint32_t k0 = cx->g->nodes[x0].c, k1 = cx->g->nodes[x1].c;
		struct tref w = param(cx, n->weight);

		gemm(cx, rows, n->c, k0, VTPU_GEMM_BIAS,
		     shifted(cx->val[x0], r0 * k0 * 4), w, y,
		     param(cx, n->bias), 0.0f);
		gemm(cx, rows, n->c, k1, 0, shifted(cx->val[x1], r0 * k1 * 4),
		     shifted(w, (uint64_t)k0 * n->c * 4), y, at(0, 0), 1.0f);
		if (n->act == VTPU_ACT_RELU)
			ew(cx, VTPU_EW_RELU, (uint64_t)rows * n->c, y, at(0, 0),
			   y);
	} else {
		if (n->act == VTPU_ACT_RELU)
			flags |= VTPU_GEMM_RELU;
		if (cx->g->params[n->weight].panels)
			flags |= VTPU_GEMM_B_PANELS;
		gemm(cx, rows, n->c, k, flags,
		     shifted(cx->val[n->in[0]], r0 * k * 4),
		     fwd_w(cx, i), y, fwd_b(cx, i), 0.0f);
	}
	if (n->act == VTPU_ACT_TANH)
		ew(cx, VTPU_EW_TANH, (uint64_t)rows * n->c, y, at(0, 0), y);
}

/* dW (rows @w0 on of it) = x^T dz and dx += dz W^T, for input @x. */
static void dense_part_bwd(struct cx *cx, int i, int x, uint32_t k,
			   uint64_t w0, struct tref dz)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t rows = (uint32_t)vg_node_rows(n, cx->B);
	/* dW in W's layout: the optimizer updates them element by element */
	uint32_t c_panels = 0, b_panels = 0;
	struct tref dx, tmp;

	if (cx->g->params[n->weight].panels) {
		c_panels = VTPU_GEMM_C_PANELS;
		b_panels = VTPU_GEMM_B_PANELS;
	}
	gemm(cx, k, n->c, rows, VTPU_GEMM_TRANS_A | c_panels, cx->val[x], dz,
	     shifted(param_grad(cx, n->weight), w0 * n->c * 4), at(0, 0),
	     0.0f);
	if (cx->needs_grad[x]) {
		dx = grad_begin(cx, x, &tmp);
		gemm(cx, rows, k, n->c, VTPU_GEMM_TRANS_B | b_panels, dz,
		     shifted(param(cx, n->weight), w0 * n->c * 4), dx, at(0, 0),
		     0.0f);
		grad_end(cx, x, tmp);
	}
}

static void dense_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	struct tref dz = act_grad(cx, i, cx->grad[i]);

	/* db = column sums of dz */
	bias_grad(cx, i, (uint32_t)vg_node_rows(n, cx->B), dz);
	if (in->op == VG_CONCAT) {
		dense_part_bwd(cx, i, in->in[0], cx->g->nodes[in->in[0]].c, 0,
			       dz);
		dense_part_bwd(cx, i, in->in[1], cx->g->nodes[in->in[1]].c,
			       cx->g->nodes[in->in[0]].c, dz);
		return;
	}
	dense_part_bwd(cx, i, n->in[0],
		       (uint32_t)(n->seq ? in->c : vg_node_size(in)), 0, dz);
}

static struct vtpu_ref ref(struct tref t)
{
	return VTPU_REF((uint32_t)t.sid, t.off);
}

/*
 * A convolution runs as CONV, its gradients as CONV_WGRAD and CONV_DGRAD:
 * each one GEMM whose A, the im2col columns, is gathered from the image
 * as the GEMM packs it and never stored. A command covers @cnt images,
 * at most VTPU_MAX_DIM windows (conv_images()).
 */
static struct vtpu_conv_desc conv_desc(struct cx *cx, int i, uint32_t cnt)
{
	const struct vg_node *n = &cx->g->nodes[i];

	return (struct vtpu_conv_desc){
		.win = window(&cx->g->nodes[n->in[0]], cnt, n),
		.oc = n->c,
	};
}

static void conv_emit(struct cx *cx, uint32_t opcode,
		      const struct vtpu_conv_desc *d)
{
	int ret = opcode == VTPU_OP_CONV	     ? vtpu_cmdbuf_conv(&cx->cb, d) :
		  opcode == VTPU_OP_CONV_WGRAD ? vtpu_cmdbuf_conv_wgrad(&cx->cb, d) :
						  vtpu_cmdbuf_conv_dgrad(&cx->cb, d);

	if (ret && !cx->err)
		cx->err = ret;
}

/* Images per convolution command: its windows are GEMM rows. */
static uint32_t conv_images(struct cx *cx, const struct vg_node *n)
{
	uint64_t nb = VTPU_MAX_DIM / ((uint64_t)n->h * n->w);

	if (nb < 1)
		nb = 1;
	return nb > cx->B ? cx->B : (uint32_t)nb;
}

/* Images per chunk of the cols workspace (a strided dx: GEMM + COL2IM). */
static uint32_t conv_chunk(struct cx *cx, const struct vg_node *n,
			   uint64_t kdim)
{
	uint64_t per_image = (uint64_t)n->h * n->w * kdim * 4;
	uint64_t nb = CONV_CHUNK_BYTES / per_image;

	if (nb < 1)
		nb = 1;
	return nb > cx->B ? cx->B : (uint32_t)nb;
}

/*
 * dx for images b..b+cnt from dz (those images' conv gradient at @dz):
 * CONV_DGRAD, which wants stride 1; else dcols = dz W^T into @cols, which
 * then scatters by COL2IM.
 */
static void conv_dx(struct cx *cx, int i, uint32_t b, uint32_t cnt,
		    struct tref dz, struct tref dx, struct tref cols)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	uint64_t kdim = (uint64_t)n->kh * n->kw * in->c;
	struct vtpu_conv_desc d = conv_desc(cx, i, cnt);

	dx = at(dx.sid, dx.off + b * vg_node_size(in) * 4);
	if (n->stride_h == 1 && n->stride_w == 1) {
		d.x = ref(dx);
		d.w = ref(param(cx, n->weight));
		d.y = ref(dz);
		conv_emit(cx, VTPU_OP_CONV_DGRAD, &d);
		return;
	}
	gemm(cx, cnt * n->h * n->w, (uint32_t)kdim, n->c, VTPU_GEMM_TRANS_B, dz,
	     param(cx, n->weight), cols, at(0, 0), 0.0f);
	im2col(cx, VTPU_OP_COL2IM, d.win, dx, cols);
}

/* The cols workspace conv_dx() needs for @cnt images (none: stride 1). */
static struct tref conv_dx_cols(struct cx *cx, int i, uint32_t cnt)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t kdim = (uint64_t)n->kh * n->kw * cx->g->nodes[n->in[0]].c;

	if (n->stride_h == 1 && n->stride_w == 1)
		return at(0, 0);
	return work(cx, (uint64_t)cnt * n->h * n->w * kdim * 4);
}

/*
 * The gradients of images b..b+cnt, from their conv gradient at @dz: dw
 * (summed over the chunks: the first overwrites) and, with @dx, theirs.
 */
static void conv_grads(struct cx *cx, int i, uint32_t b, uint32_t cnt,
		       struct tref dz, struct tref dx, struct tref cols)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct tref x = cx->val[n->in[0]];
	struct vtpu_conv_desc d = conv_desc(cx, i, cnt);

	d.flags = b ? VTPU_CONV_ACCUMULATE : 0;
	d.x = ref(at(x.sid,
		     x.off + b * vg_node_size(&cx->g->nodes[n->in[0]]) * 4));
	d.w = ref(param_grad(cx, n->weight));
	d.y = ref(dz);
	conv_emit(cx, VTPU_OP_CONV_WGRAD, &d);
	if (dx.sid)
		conv_dx(cx, i, b, cnt, dz, dx, cols);
}

static void conv_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t in_img = vg_node_size(&cx->g->nodes[n->in[0]]) * 4;
	uint64_t out_img = vg_node_size(n) * 4;
	uint32_t nb = conv_images(cx, n), b, cnt;
	struct tref x = cx->val[n->in[0]];
	struct vtpu_conv_desc d;

	if (cx->pool_of[i] >= 0) /* emitted with its pooling */
		return;
	if (cx->bn_into && cx->bn_into[i] >= 0)
		bn_fold(cx, i, cx->bn_into[i]);
	cx->val[i] = work(cx, cx->B * out_img);
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		d = conv_desc(cx, i, cnt);
		d.flags = VTPU_CONV_BIAS |
			  (n->act == VTPU_ACT_RELU ? VTPU_CONV_RELU : 0);
		d.x = ref(at(x.sid, x.off + b * in_img));
		d.w = ref(fwd_w(cx, i));
		d.bias = ref(fwd_b(cx, i));
		d.y = ref(at(cx->val[i].sid, cx->val[i].off + b * out_img));
		conv_emit(cx, VTPU_OP_CONV, &d);
	}
}

static void conv_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int xi = n->in[0];
	const struct vg_node *in = &cx->g->nodes[xi];
	uint64_t kdim = (uint64_t)n->kh * n->kw * in->c;
	uint64_t out_img = vg_node_size(n) * 4;
	uint32_t nb = conv_images(cx, n), b, cnt;
	struct tref dz = act_grad(cx, i, cx->grad[i]), cols = at(0, 0);
	struct tref dx = at(0, 0), tmp = at(0, 0);

	if (cx->needs_grad[xi]) {
		dx = grad_begin(cx, xi, &tmp);
		if (n->stride_h != 1 || n->stride_w != 1)
			nb = conv_chunk(cx, n, kdim);
		cols = conv_dx_cols(cx, i, nb);
	}
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		conv_grads(cx, i, b, cnt, at(dz.sid, dz.off + b * out_img), dx,
			   cols);
	}
	bias_grad(cx, i, cx->B * n->h * n->w, dz);
	if (dx.sid)
		grad_end(cx, xi, tmp);
}

/*
 * A depthwise convolution is one DWCONV over the whole batch (its limits
 * are on elements, not GEMM rows), its gradients DWCONV_WGRAD and
 * DWCONV_DGRAD; the bias gradient is dz's column sum, as a conv's. A
 * separable one is a DWCONV without bias into aux, then its pointwise
 * half: a GEMM of aux [pixels, c] by the [c, filters] kernel, with the
 * bias and the ReLU, and the two GEMMs of its gradients; no window.
 */
static struct vtpu_dwconv_desc dw_desc(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];

	return (struct vtpu_dwconv_desc){
		.win = window(&cx->g->nodes[n->in[0]], cx->B, n),
		.oh = n->h, .ow = n->w, .mult = n->mult,
	};
}

static void dw_emit(struct cx *cx, uint32_t opcode,
		    const struct vtpu_dwconv_desc *d)
{
	int ret = opcode == VTPU_OP_DWCONV ? vtpu_cmdbuf_dwconv(&cx->cb, d) :
		  opcode == VTPU_OP_DWCONV_WGRAD ?
			  vtpu_cmdbuf_dwconv_wgrad(&cx->cb, d) :
			  vtpu_cmdbuf_dwconv_dgrad(&cx->cb, d);

	if (ret && !cx->err)
		cx->err = ret;
}

/* The depthwise part's gradients, from dz at its output @y's shape. */
static void dw_grads(struct cx *cx, int i, struct tref dz)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int xi = n->in[0];
	struct vtpu_dwconv_desc d = dw_desc(cx, i);
	struct tref dx, tmp;

	d.x = ref(cx->val[xi]);
	d.w = ref(param_grad(cx, n->weight));
	d.y = ref(dz);
	dw_emit(cx, VTPU_OP_DWCONV_WGRAD, &d);
	if (!cx->needs_grad[xi])
		return;
	dx = grad_begin(cx, xi, &tmp);
	d.x = ref(dx);
	d.w = ref(param(cx, n->weight));
	dw_emit(cx, VTPU_OP_DWCONV_DGRAD, &d);
	grad_end(cx, xi, tmp);
}

static void dwconv_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct vtpu_dwconv_desc d = dw_desc(cx, i);

	cx->val[i] = work(cx, cx->B * vg_node_size(n) * 4);
	d.flags = VTPU_CONV_BIAS |
		  (n->act == VTPU_ACT_RELU ? VTPU_CONV_RELU : 0);
	d.x = ref(cx->val[n->in[0]]);
	d.w = ref(param(cx, n->weight));
	d.bias = ref(param(cx, n->bias));
	d.y = ref(cx->val[i]);
	dw_emit(cx, VTPU_OP_DWCONV, &d);
}

static void dwconv_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct tref dz = act_grad(cx, i, cx->grad[i]);

	bias_grad(cx, i, cx->B * n->h * n->w, dz);
	dw_grads(cx, i, dz);
}

/* Images per pointwise GEMM: its pixels are GEMM rows (or its k). */
static uint32_t sep_images(struct cx *cx, const struct vg_node *n)
{
	uint64_t nb = VTPU_MAX_DIM / ((uint64_t)n->h * n->w);

	if (nb < 1)
		nb = 1;
	return nb > cx->B ? cx->B : (uint32_t)nb;
}

static void sepconv_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t c = cx->g->nodes[n->in[0]].c, px = n->h * n->w;
	uint32_t nb = sep_images(cx, n), b, cnt;
	uint32_t flags = VTPU_GEMM_BIAS |
			 (n->act == VTPU_ACT_RELU ? VTPU_GEMM_RELU : 0);
	struct vtpu_dwconv_desc d = dw_desc(cx, i);
	struct tref t;

	t = cx->aux[i] = work(cx, (uint64_t)cx->B * px * c * 4);
	cx->val[i] = work(cx, cx->B * vg_node_size(n) * 4);
	d.x = ref(cx->val[n->in[0]]);
	d.w = ref(param(cx, n->weight));
	d.y = ref(t);
	dw_emit(cx, VTPU_OP_DWCONV, &d);
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		gemm(cx, cnt * px, n->c, c, flags,
		     shifted(t, (uint64_t)b * px * c * 4),
		     param(cx, n->weight2),
		     shifted(cx->val[i], (uint64_t)b * px * n->c * 4),
		     param(cx, n->bias), 0.0f);
	}
}

static void sepconv_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t c = cx->g->nodes[n->in[0]].c, px = n->h * n->w;
	uint32_t nb = sep_images(cx, n), b, cnt;
	struct tref dz = act_grad(cx, i, cx->grad[i]), t = cx->aux[i];
	struct tref dt = work(cx, (uint64_t)cx->B * px * c * 4);
	uint64_t at_t, at_z;

	bias_grad(cx, i, cx->B * px, dz);
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		at_t = (uint64_t)b * px * c * 4;
		at_z = (uint64_t)b * px * n->c * 4;
		/* dW_pointwise (+)= t^T dz; dt = dz W_pointwise^T */
		gemm(cx, c, n->c, cnt * px, VTPU_GEMM_TRANS_A, shifted(t, at_t),
		     shifted(dz, at_z), param_grad(cx, n->weight2), at(0, 0),
		     b ? 1.0f : 0.0f);
		gemm(cx, cnt * px, c, n->c, VTPU_GEMM_TRANS_B,
		     shifted(dz, at_z), param(cx, n->weight2),
		     shifted(dt, at_t), at(0, 0), 0.0f);
	}
	dw_grads(cx, i, dt);
}

/*
 * A convolution whose only consumer is a max-pool runs fused with it,
 * chunk by chunk of the batch: the convolution's output exists one
 * cache-sized chunk at a time and is never written out whole. A ReLU on
 * the convolution moves after the pooling (max commutes with ReLU, and
 * so do their gradients), where it touches a quarter of the data.
 */
static uint32_t fused_chunk(struct cx *cx, const struct vg_node *n)
{
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	uint64_t kdim = (uint64_t)n->kh * n->kw * in->c;
	uint64_t per_image = (uint64_t)n->h * n->w * n->c * 4, nb;
	uint32_t most = conv_images(cx, n);	/* at most the batch */

	/* a strided dx goes through the cols workspace */
	if (n->stride_h != 1 || n->stride_w != 1)
		per_image += (uint64_t)n->h * n->w * kdim * 4;
	nb = FUSED_CHUNK_BYTES / per_image;
	if (nb < 1)
		nb = 1;
	return nb > most ? most : (uint32_t)nb;
}

static void convpool_pool(struct cx *cx, uint32_t opcode, int i, int j,
			  uint32_t b, uint32_t cnt, struct tref conv,
			  struct tref pool)
{
	const struct vg_node *c = &cx->g->nodes[i], *p = &cx->g->nodes[j];
	uint64_t out = vg_node_size(p) * 4 * b;
	struct vtpu_cmd_pool cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.win = window(c, cnt, p),
		.x = opnd(conv),
		.y = opnd(at(pool.sid, pool.off + out)),
		.index = opnd(at(cx->aux[j].sid, out)),
	};

	emit(cx, &cmd);
}

/*
 * A fused pair whose convolution's input needs no gradient (a network's
 * first convolution: its input is data) and has few taps runs as one
 * direct CONV_POOL, and its gradient as one CONV_POOL_WGRAD: with K =
 * kh * kw * c as small as 9, IM2COL + GEMM would move far more memory
 * than they compute, and the conv output is never written out at all.
 * (Up to the device's limit on one pooled pixel's work.)
 */
#define DIRECT_KDIM_MAX 32

static bool convpool_direct(const struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i], *p = &cx->g->nodes[j];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];

	return !cx->needs_grad[n->in[0]] && !p->pad_h && !p->pad_w &&
	       (uint64_t)n->kh * n->kw * in->c <= DIRECT_KDIM_MAX &&
	       (uint64_t)p->kh * p->kw * n->kh * n->kw * in->c * n->c <=
		       VTPU_CONV_POOL_MAX_WORK;
}

static struct vtpu_conv_pool_desc convpool_desc(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i], *p = &cx->g->nodes[j];

	return (struct vtpu_conv_pool_desc){
		.win = window(&cx->g->nodes[n->in[0]], cx->B, n),
		.oc = n->c,
		.pool_h = p->kh, .pool_w = p->kw,
		.pool_stride_h = p->stride_h, .pool_stride_w = p->stride_w,
		.flags = n->act == VTPU_ACT_RELU || cx->pool_relu[j] ?
				 VTPU_CONV_RELU : 0,
	};
}

/* CONV_POOL or its gradient, through libvtpu's builder of the pair. */
static void convpool_emit(struct cx *cx, bool wgrad,
			  const struct vtpu_conv_pool_desc *d)
{
	int ret = wgrad ? vtpu_cmdbuf_conv_pool_wgrad(&cx->cb, d) :
			  vtpu_cmdbuf_conv_pool(&cx->cb, d);

	if (ret && !cx->err)
		cx->err = ret;
}

static void convpool_fwd_im2col(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	uint64_t in_img = vg_node_size(in) * 4;
	uint64_t pooled = cx->B * vg_node_size(&cx->g->nodes[j]);
	uint32_t nb = fused_chunk(cx, n), b, cnt;
	struct tref conv = work(cx, nb * vg_node_size(n) * 4);
	struct tref x = cx->val[n->in[0]];
	struct vtpu_conv_desc d;

	cx->val[j] = work(cx, pooled * 4);
	cx->aux[j] = work(cx, pooled * 4);
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		d = conv_desc(cx, i, cnt);
		d.flags = VTPU_CONV_BIAS;
		d.x = ref(at(x.sid, x.off + b * in_img));
		d.w = ref(param(cx, n->weight));
		d.bias = ref(param(cx, n->bias));
		d.y = ref(conv);
		conv_emit(cx, VTPU_OP_CONV, &d);
		convpool_pool(cx, VTPU_OP_MAXPOOL, i, j, b, cnt, conv,
			      cx->val[j]);
	}
	if (n->act == VTPU_ACT_RELU)
		ew(cx, VTPU_EW_RELU, pooled, cx->val[j], at(0, 0), cx->val[j]);
}

static void convpool_bwd_im2col(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int xi = n->in[0];
	uint32_t nb = fused_chunk(cx, n), b, cnt;
	uint64_t pooled = cx->B * vg_node_size(&cx->g->nodes[j]);
	struct tref dpool = cx->grad[j], cols = at(0, 0);
	struct tref dconv = work(cx, nb * vg_node_size(n) * 4);
	struct tref dx = at(0, 0), tmp = at(0, 0);

	/* the conv's ReLU ran on the pooled values: its mask is theirs */
	if (n->act == VTPU_ACT_RELU) {
		dpool = work(cx, pooled * 4);
		ew(cx, VTPU_EW_RELU_GRAD, pooled, cx->val[j], cx->grad[j],
		   dpool);
	}
	/*
	 * The bias gradient is the column sum of dconv, and MAXPOOL_GRAD
	 * routes each pooled gradient to exactly one conv output: the same
	 * sum over the pooled gradient, a quarter of the data for 2x2.
	 */
	reduce_cols(cx, (uint32_t)(pooled / n->c), n->c, dpool,
		    param_grad(cx, n->bias), 0.0f);
	if (cx->needs_grad[xi]) {
		dx = grad_begin(cx, xi, &tmp);
		cols = conv_dx_cols(cx, i, nb);
	}
	for (b = 0; b < cx->B; b += cnt) {
		cnt = cx->B - b < nb ? cx->B - b : nb;
		convpool_pool(cx, VTPU_OP_MAXPOOL_GRAD, i, j, b, cnt, dconv,
			      dpool);
		conv_grads(cx, i, b, cnt, dconv, dx, cols);
	}
	if (dx.sid)
		grad_end(cx, xi, tmp);
}

static void convpool_fwd(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t pooled = cx->B * vg_node_size(&cx->g->nodes[j]);
	struct vtpu_conv_pool_desc d;

	if (!convpool_direct(cx, i, j)) {
		convpool_fwd_im2col(cx, i, j);
		return;
	}
	d = convpool_desc(cx, i, j);
	cx->val[j] = work(cx, pooled * 4);
	cx->aux[j] = work(cx, pooled);	/* u8 routes */
	d.x = ref(cx->val[n->in[0]]);
	d.w = ref(param(cx, n->weight));
	d.bias = ref(param(cx, n->bias));
	d.y = ref(cx->val[j]);
	d.index = ref(cx->aux[j]);
	convpool_emit(cx, false, &d);
}

/* The direct path's gradient: the ReLU's mask (in the routes) and dbias. */
static void convpool_bwd(struct cx *cx, int i, int j)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct vtpu_conv_pool_desc d;

	if (!convpool_direct(cx, i, j)) {
		convpool_bwd_im2col(cx, i, j);
		return;
	}
	/* the builder leaves out flags and y: the routes carry the mask */
	d = convpool_desc(cx, i, j);
	d.x = ref(cx->val[n->in[0]]);
	d.w = ref(param_grad(cx, n->weight));
	d.bias = ref(param_grad(cx, n->bias));
	d.dy = ref(cx->grad[j]);
	d.index = ref(cx->aux[j]);
	convpool_emit(cx, true, &d);
}

/* The pooling of a fused pair runs as part of its convolution. */
static int fused_conv(const struct cx *cx, int j)
{
	int i = cx->g->nodes[j].in[0];

	return cx->pool_of[i] == j ? i : -1;
}

static void pool_cmd(struct cx *cx, uint32_t opcode, int i, struct tref x,
		     struct tref y)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct vtpu_cmd_pool cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.win = window(&cx->g->nodes[n->in[0]], cx->B, n),
		.flags = n->pool_end,
		.x = opnd(x), .y = opnd(y), .index = opnd(cx->aux[i]),
	};

	emit(cx, &cmd);
}

static void pool_fwd(struct cx *cx, int i)
{
	int c = fused_conv(cx, i);
	uint64_t bytes = cx->B * vg_node_size(&cx->g->nodes[i]) * 4;

	if (c >= 0) {
		convpool_fwd(cx, c, i);
		return;
	}
	cx->val[i] = work(cx, bytes);
	cx->aux[i] = work(cx, bytes); /* u32 argmax per output */
	pool_cmd(cx, VTPU_OP_MAXPOOL, i, cx->val[cx->g->nodes[i].in[0]],
		 cx->val[i]);
}

static void pool_bwd(struct cx *cx, int i)
{
	int x = cx->g->nodes[i].in[0];
	struct tref dx, tmp;

	if (fused_conv(cx, i) >= 0) {
		convpool_bwd(cx, x, i);
		return;
	}
	if (!cx->needs_grad[x])
		return;
	dx = grad_begin(cx, x, &tmp);
	pool_cmd(cx, VTPU_OP_MAXPOOL_GRAD, i, dx, cx->grad[i]);
	grad_end(cx, x, tmp);
}

static void avgpool_cmd(struct cx *cx, uint32_t opcode, int i,
			struct tref x, struct tref y)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct vtpu_cmd_avgpool cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.win = window(&cx->g->nodes[n->in[0]], cx->B, n),
		.oh = n->h, .ow = n->w, .x = opnd(x), .y = opnd(y),
	};

	emit(cx, &cmd);
}

static void avgpool_fwd(struct cx *cx, int i)
{
	cx->val[i] = work(cx, cx->B * vg_node_size(&cx->g->nodes[i]) * 4);
	avgpool_cmd(cx, VTPU_OP_AVGPOOL, i, cx->val[cx->g->nodes[i].in[0]],
		    cx->val[i]);
}

static void avgpool_bwd(struct cx *cx, int i)
{
	int x = cx->g->nodes[i].in[0];
	struct tref dx, tmp;

	if (!cx->needs_grad[x])
		return;
	dx = grad_begin(cx, x, &tmp);
	avgpool_cmd(cx, VTPU_OP_AVGPOOL_GRAD, i, dx, cx->grad[i]);
	grad_end(cx, x, tmp);
}

static void relu_fwd(struct cx *cx, int i)
{
	uint64_t count = cx->B * vg_node_size(&cx->g->nodes[i]);
	int x = cx->g->nodes[i].in[0];

	/* run by its CONV_POOL or its BATCHNORM: their output is its value */
	if (cx->relu_folded[i] || cx->bn_relu[x] == i) {
		cx->val[i] = cx->val[x];
		return;
	}

	cx->val[i] = work(cx, count * 4);
	ew(cx, VTPU_EW_RELU, count, cx->val[cx->g->nodes[i].in[0]], at(0, 0),
	   cx->val[i]);
}

static void relu_bwd(struct cx *cx, int i)
{
	int x = cx->g->nodes[i].in[0];
	uint64_t count = cx->B * vg_node_size(&cx->g->nodes[i]);
	struct tref dx, tmp;

	if (!cx->needs_grad[x])
		return;
	if (cx->relu_folded[i]) {
		grad_pass(cx, x, cx->grad[i]);
		return;
	}
	dx = grad_begin(cx, x, &tmp);
	ew(cx, VTPU_EW_RELU_GRAD, count, cx->val[i], cx->grad[i], dx);
	grad_end(cx, x, tmp);
}

static void add_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t count = cx->B * vg_node_size(n);

	cx->val[i] = work(cx, count * 4);
	ew(cx, VTPU_EW_ADD, count, cx->val[n->in[0]], cx->val[n->in[1]],
	   cx->val[i]);
}

/*
 * The rescaling that is the only reader of the input @i, folded into its
 * cast from bytes, or -1.
 */
static int folded_rescale(const struct vtpu_graph *g, int i)
{
	int j, k, r = -1;

	for (j = i + 1; j < g->nnodes; j++)
		for (k = 0; k < VG_MAX_IN; k++) {
			if (g->nodes[j].in[k] != i)
				continue;
			if (r >= 0 || g->nodes[j].op != VG_RESCALE)
				return -1;
			r = j;
		}
	return r;
}

static void input_fwd(struct cx *cx, int i)
{
	uint64_t count = cx->B * vg_node_size(&cx->g->nodes[i]);
	float scale = cx->g->input_scale, shift = cx->g->input_shift;
	int r = folded_rescale(cx->g, i);
	struct vtpu_cmd_cast cmd = {
		.hdr = { VTPU_OP_CAST, sizeof(cmd) },
		.mode = VTPU_CAST_U8_TO_F32, .count = count,
		.src = opnd(at(cx->images, 0)),
	};

	if (r >= 0) {	/* (b * s + t) * s' + t' = b * s s' + (t s' + t') */
		shift = shift * cx->g->nodes[r].scale + cx->g->nodes[r].offset;
		scale *= cx->g->nodes[r].scale;
	}
	cmd.scale = f32_bits(scale);
	cmd.shift = f32_bits(shift);
	cx->val[i] = work(cx, count * 4);
	cmd.dst = opnd(cx->val[i]);
	emit(cx, &cmd);
}

/*
 * The examples the loss is the mean over: the batch, or a replica's share
 * of it times the replicas (vtpu_model_compile_replicated()), so that the
 * replicas' losses and gradients sum to the global batch's mean.
 */
static float loss_rows(const struct cx *cx)
{
	return (float)((double)cx->B *
		       (cx->opt && cx->opt->replicas ? cx->opt->replicas : 1));
}

/* Loss, correct count, and (training) dlogits or (predict) probs. */
static void loss_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int x = n->in[0];
	uint32_t classes = n->c, rows = (uint32_t)vg_node_rows(n, cx->B);
	/* a sequence: the mean over the steps that are not padding */
	struct vtpu_cmd_softmax_xent cmd = {
		.hdr = { VTPU_OP_SOFTMAX_XENT, sizeof(cmd) },
		.m = rows, .n = classes,
		.flags = n->seq ? VTPU_XENT_MEAN_VALID : 0,
		.scale = f32_bits(n->seq ? 1.0f : 1.0f / loss_rows(cx)),
		.logits = opnd(cx->val[x]),
		.labels = opnd(at(cx->labels, 0)),
		.loss = opnd(at(cx->metrics, VG_METRIC_LOSS)),
		.correct = opnd(at(cx->metrics, VG_METRIC_CORRECT)),
	};

	if (cx->kind == VG_PROG_TRAIN) {
		cmd.flags |= VTPU_XENT_DLOGITS;
		cx->grad[x] = work(cx, (uint64_t)rows * classes * 4);
		cmd.dlogits = opnd(cx->grad[x]);
	} else if (cx->kind == VG_PROG_PREDICT) {
		cmd.flags |= VTPU_XENT_PROBS;
		cmd.probs = opnd(at(cx->metrics, VG_METRIC_PROBS));
	}
	emit(cx, &cmd);
}

/*
 * Training: a random crop or flip drawn anew each step (the step counter
 * dropout advances); otherwise the centre crop, no flip (Keras).
 */
static void augment_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *in = &cx->g->nodes[n->in[0]];
	struct vtpu_cmd_image_augment cmd = {
		.hdr = { VTPU_OP_IMAGE_AUGMENT, sizeof(cmd) },
		.n = cx->B, .h = in->h, .w = in->w, .c = in->c,
		.oh = n->h, .ow = n->w,
		.seed = cx->g->seed * 0x9e3779b9u + (uint32_t)i,
		.flags = cx->kind == VG_PROG_TRAIN ? n->aug_flags : 0,
		.x = opnd(cx->val[n->in[0]]),
		.step = opnd(at(cx->state, cx->sl.step)),
	};

	if (!cmd.flags && n->h == in->h && n->w == in->w) {
		cx->val[i] = cx->val[n->in[0]];
		return;
	}
	cx->val[i] = work(cx, cx->B * vg_node_size(n) * 4);
	cmd.y = opnd(cx->val[i]);
	emit(cx, &cmd);
}

/* y = x * scale + offset, unless the input's cast did it (input_fwd) */
static void rescale_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t count = cx->B * vg_node_size(n);
	struct vtpu_cmd_elementwise cmd = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(cmd) },
		.op = VTPU_EW_SCALE, .count = count,
		.alpha = f32_bits(n->scale),
		.x = opnd(cx->val[n->in[0]]),
	};

	if (cx->g->nodes[n->in[0]].op == VG_INPUT &&
	    folded_rescale(cx->g, n->in[0]) == i) {
		cx->val[i] = cx->val[n->in[0]];
		return;
	}
	cx->val[i] = work(cx, count * 4);
	cmd.z = opnd(cx->val[i]);
	emit(cx, &cmd);
	if (n->offset != 0.0f) {
		cmd.op = VTPU_EW_ADD_SCALAR;
		cmd.alpha = f32_bits(n->offset);
		cmd.x = cmd.z;
		emit(cx, &cmd);
	}
}

static void rescale_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int x = n->in[0];
	struct tref dx, tmp;
	struct vtpu_cmd_elementwise cmd = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(cmd) },
		.op = VTPU_EW_SCALE, .count = cx->B * vg_node_size(n),
		.alpha = f32_bits(n->scale),
		.x = opnd(cx->grad[i]),
	};

	if (!cx->needs_grad[x])
		return;
	dx = grad_begin(cx, x, &tmp);
	cmd.z = opnd(dx);
	emit(cx, &cmd);
	grad_end(cx, x, tmp);
}

/* Training: z = x * mask, a new mask each step; otherwise the identity. */
static void dropout_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t count = cx->B * vg_node_size(n);
	struct vtpu_cmd_dropout cmd = {
		.hdr = { VTPU_OP_DROPOUT, sizeof(cmd) },
		.count = count, .rate = f32_bits(n->rate),
		.seed = cx->g->seed * 0x9e3779b9u + (uint32_t)i,
		.x = opnd(cx->val[n->in[0]]),
		.step = opnd(at(cx->state, cx->sl.step)),
	};

	if (cx->kind != VG_PROG_TRAIN) {
		cx->val[i] = cx->val[n->in[0]];
		return;
	}
	cx->val[i] = work(cx, count * 4);
	cx->aux[i] = work(cx, count * 4);
	cmd.z = opnd(cx->val[i]);
	cmd.mask = opnd(cx->aux[i]);
	emit(cx, &cmd);
}

static void dropout_bwd(struct cx *cx, int i)
{
	int x = cx->g->nodes[i].in[0];
	uint64_t count = cx->B * vg_node_size(&cx->g->nodes[i]);
	struct tref dx, tmp;

	if (!cx->needs_grad[x])
		return;
	dx = grad_begin(cx, x, &tmp);
	ew(cx, VTPU_EW_MUL, count, cx->grad[i], cx->aux[i], dx);
	grad_end(cx, x, tmp);
}

/*
 * Batch norm over rows = batch * h * w, per channel. Training (and an
 * eval program of a graph with bn_batch_stats, for vtpu_gradcheck):
 * the batch's statistics, saved in aux for the backward, and the moving
 * ones updated in the state; otherwise the moving ones. The moving
 * statistics are parameters with a zero gradient: the optimizer leaves
 * them as they are. With a ReLU fused (plan_bn_relu()) y is the ReLU's
 * output, which relu_fwd() names and relu_bwd()'s mask reads: nothing
 * reads the batch norm's own output (its gradient reads x).
 */
static void bn_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	bool train = cx->kind == VG_PROG_TRAIN || cx->g->bn_batch_stats;
	struct vtpu_cmd_batchnorm cmd = {
		.hdr = { VTPU_OP_BATCHNORM, sizeof(cmd) },
		.rows = cx->B * n->h * n->w, .channels = n->c,
		.epsilon = f32_bits(n->eps), .momentum = f32_bits(n->rate),
		.x = opnd(cx->val[n->in[0]]),
		.gamma = opnd(param(cx, n->weight)),
		.beta = opnd(param(cx, n->bias)),
		.moving_mean = opnd(param(cx, n->mmean)),
		.moving_var = opnd(param(cx, n->mvar)),
	};
	int k, p[2] = { n->mmean, n->mvar };

	if (cx->bn_into && cx->bn_into[n->in[0]] == i) {
		cx->val[i] = cx->val[n->in[0]];	/* folded: its input is it */
		return;
	}
	cx->val[i] = work(cx, cx->B * vg_node_size(n) * 4);
	cmd.y = opnd(cx->val[i]);
	if (cx->bn_relu[i] >= 0)
		cmd.flags |= VTPU_BATCHNORM_RELU;
	if (train) {
		cmd.flags |= VTPU_BATCHNORM_TRAINING;
		cx->aux[i] = work(cx, (uint64_t)n->c * 8);
		cmd.stats = opnd(cx->aux[i]);
	}
	emit(cx, &cmd);
	for (k = 0; cx->kind == VG_PROG_TRAIN && k < 2; k++)
		zeros(cx, param_grad(cx, p[k]), n->c);
}

static void bn_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int x = n->in[0];
	struct vtpu_cmd_batchnorm_grad cmd = {
		.hdr = { VTPU_OP_BATCHNORM_GRAD, sizeof(cmd) },
		.rows = cx->B * n->h * n->w, .channels = n->c,
		.x = opnd(cx->val[x]), .dy = opnd(cx->grad[i]),
		.gamma = opnd(param(cx, n->weight)),
		.stats = opnd(cx->aux[i]),
		.dgamma = opnd(param_grad(cx, n->weight)),
		.dbeta = opnd(param_grad(cx, n->bias)),
	};
	struct tref dx, tmp = at(0, 0);

	if (cx->needs_grad[x]) {
		dx = grad_begin(cx, x, &tmp);
	} else {
		/* the parameters' gradients still: dx to a scratch */
		dx = work(cx, cx->B * vg_node_size(n) * 4);
	}
	cmd.dx = opnd(dx);
	emit(cx, &cmd);
	if (cx->needs_grad[x])
		grad_end(cx, x, tmp);
}

static void flatten_fwd(struct cx *cx, int i)
{
	cx->val[i] = cx->val[cx->g->nodes[i].in[0]];
}

static void flatten_bwd(struct cx *cx, int i)
{
	grad_pass(cx, cx->g->nodes[i].in[0], cx->grad[i]);
}

static void add_bwd(struct cx *cx, int i)
{
	grad_pass(cx, cx->g->nodes[i].in[0], cx->grad[i]);
	grad_pass(cx, cx->g->nodes[i].in[1], cx->grad[i]);
}

/* ---- sequences ------------------------------------------------------- */

/* Token ids [T][B] at the input's offset; its lengths [B] follow them. */
static void tokens_fwd(struct cx *cx, int i)
{
	cx->val[i] = at(cx->images,
			vg_tokens_offset(cx->g, cx->g->nodes[i].slot, cx->B));
}

static struct tref token_lengths(struct cx *cx, int tokens)
{
	const struct vg_node *t = &cx->g->nodes[tokens];

	return at(cx->images, vg_tokens_offset(cx->g, t->slot, cx->B) +
				      (uint64_t)t->h * cx->B * 4);
}

static void embedding_cmd(struct cx *cx, uint32_t opcode, int i,
			  struct tref table, struct tref y)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_param *p = &cx->g->params[n->weight];
	uint32_t rows;
	uint64_t r0 = first_row(cx, i, &rows);
	struct vtpu_cmd_embedding cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.n = rows, .vocab = (uint32_t)p->dims[0], .dim = n->c,
		.ids = opnd(shifted(cx->val[n->in[0]], r0 * 4)),
		.table = opnd(table), .y = opnd(shifted(y, r0 * n->c * 4)),
	};

	emit(cx, &cmd);
}

static void embedding_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];

	alloc_val(cx, i, vg_node_rows(n, cx->B) * n->c * 4);
	embedding_cmd(cx, VTPU_OP_EMBEDDING, i, param(cx, n->weight),
		      cx->val[i]);
}

static void embedding_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];

	embedding_cmd(cx, VTPU_OP_EMBEDDING_GRAD, i, param_grad(cx, n->weight),
		      cx->grad[i]);
}

/* Step @t's block of a time-major [..][B][H] buffer, gate @gate of @act. */
static struct tref step_of(struct cx *cx, struct tref t, uint32_t units,
			   uint64_t step)
{
	return shifted(t, step * cx->B * units * 4);
}

static struct tref gate_of(struct cx *cx, int i, int gate, uint64_t step)
{
	const struct vg_node *n = &cx->g->nodes[i];

	return step_of(cx, cx->rnn[i].act, n->c,
		       (uint64_t)gate * n->h + step);
}

/* The step's block is the initial state (a copy) or zeros. */
static void rnn_init(struct cx *cx, int node, struct tref dst, uint64_t n)
{
	if (node >= 0) {
		struct vtpu_cmd_copy cmd = {
			.hdr = { VTPU_OP_COPY, sizeof(cmd) },
			.bytes = n * 4, .dst = opnd(dst),
			.src = opnd(cx->val[node]),
		};

		emit(cx, &cmd);
	} else {
		zeros(cx, dst, (uint32_t)n);
	}
}

enum { GATE_I, GATE_F, GATE_G, GATE_O };
/* A GRU's slots: the recurrent part of h~ apart, as r scales it alone. */
enum { GRU_Z, GRU_R, GRU_RH, GRU_HH };

/* Which slot of the gates' buffer each gate's column block of W or U feeds. */
static const int lstm_slots[] = { GATE_I, GATE_F, GATE_G, GATE_O };
static const int gru_wslots[] = { GRU_Z, GRU_R, GRU_HH };
static const int gru_uslots[] = { GRU_Z, GRU_R, GRU_RH };

/* The buffers of a layer of @slots slots, the initial h. */
static void rnn_begin(struct cx *cx, int i, uint32_t slots)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t bh = (uint64_t)cx->B * n->c, T = n->h;
	struct rnn_bufs *l = &cx->rnn[i];

	l->hx = work(cx, (T + 1) * bh * 4);
	l->act = work(cx, slots * T * bh * 4);
	cx->val[i] = step_of(cx, l->hx, n->c, 1);
	rnn_init(cx, n->in[1], l->hx, bh);
}

/*
 * The input's part of steps t0..t0+nt-1 for the gate whose columns of W
 * are block @wg of @gates: x W_wg + @bias into slot @slot.
 */
static void rnn_input_gemm(struct cx *cx, int i, uint32_t t0, uint32_t nt,
			   uint32_t gates, uint32_t wg, int slot,
			   struct tref bias)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, d = cx->g->nodes[n->in[0]].c;
	struct vtpu_cmd_gemm cmd = {
		.hdr = { VTPU_OP_GEMM, sizeof(cmd) },
		.m = nt * cx->B, .n = H, .k = d,
		.flags = VTPU_GEMM_BIAS, .lda = d, .ldb = gates * H,
		.ldc = H, .dtype = VTPU_DTYPE_F32,
		.alpha = f32_bits(1.0f),
		.a = opnd(step_of(cx, cx->val[n->in[0]], d, t0)),
		.b = opnd(shifted(param(cx, n->weight), (uint64_t)wg * H * 4)),
		.c = opnd(gate_of(cx, i, slot, t0)), .bias = opnd(bias),
	};

	emit(cx, &cmd);
}

/*
 * Step t's h U added to the first @gates slots of the gates (U's column
 * blocks side by side, the slots T * B * H apart): one GEMM_BATCHED. At
 * step 0 from zeros, nothing to add.
 */
static void rnn_recurrent(struct cx *cx, int i, uint64_t t, uint32_t gates)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c;
	struct bgemm rec = {
		.batch = gates, .m = cx->B, .n = H, .k = H,
		.lda = H, .ldb = gates * H, .ldc = H,
		.sa = 0, .sb = H, .sc = (uint64_t)n->h * cx->B * H,
		.a = step_of(cx, cx->rnn[i].hx, H, t),
		.b = param(cx, n->weight2), .c = gate_of(cx, i, 0, t),
		.beta = 1.0f,
	};

	if (t || n->in[1] >= 0)
		gemm_batched(cx, &rec);
}

struct rnn_kind {
	void (*begin)(struct cx *cx, int i);
	void (*input_part)(struct cx *cx, int i, uint32_t t0, uint32_t nt);
	void (*step)(struct cx *cx, int i, uint64_t t, struct tref tmp);
};

/*
 * Forward, unrolled: the input's part of every step's gates as GEMMs
 * over all T * B rows first, then per step the recurrent part (one
 * GEMM_BATCHED) and the cell's element-wise step. Decoding, one step at
 * a time, its input's part too.
 */
static void rnn_fwd(struct cx *cx, int i, const struct rnn_kind *k)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct tref tmp = work(cx, (uint64_t)cx->B * n->c * 4);
	uint32_t t;

	if (cx->step > 0) {
		k->input_part(cx, i, cx->step, 1);
		k->step(cx, i, cx->step, tmp);
		return;
	}
	k->begin(cx, i);
	k->input_part(cx, i, 0, cx->step < 0 ? n->h : 1);
	for (t = 0; t < (cx->step < 0 ? n->h : 1); t++)
		k->step(cx, i, t, tmp);
}

/* An LSTM's buffers: h and the gates, c and tanh(c); its initial state. */
static void lstm_begin(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t bh = (uint64_t)cx->B * n->c, T = n->h;
	struct rnn_bufs *l = &cx->rnn[i];

	rnn_begin(cx, i, 4);
	l->cx = work(cx, (T + 1) * bh * 4);
	l->tc = work(cx, T * bh * 4);
	rnn_init(cx, n->in[2], l->cx, bh);
}

/* The input's part of steps t0..t0+nt-1's gates: x W + b, gate by gate. */
static void lstm_input_part(struct cx *cx, int i, uint32_t t0, uint32_t nt)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t g;

	for (g = 0; g < 4; g++)
		rnn_input_gemm(cx, i, t0, nt, 4, g, lstm_slots[g],
			       shifted(param(cx, n->bias),
				       (uint64_t)g * n->c * 4));
}

/*
 * Step t: h W_rec added to the gates, then one LSTM_CELL: i, f, o =
 * sigmoid, g = tanh (the gates in place), c = f c' + i g, tanh(c) (kept
 * for the backward), h = o tanh(c). With VTPU_UNFUSED_LSTM, the nine
 * element-wise commands that give the same bits instead.
 */
static void lstm_step(struct cx *cx, int i, uint64_t t, struct tref tmp)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c;
	uint64_t bh = (uint64_t)cx->B * H;
	const struct rnn_bufs *l = &cx->rnn[i];
	struct tref c = step_of(cx, l->cx, H, t + 1);

	rnn_recurrent(cx, i, t, 4);
	if (!cx->unfused_lstm) {
		struct vtpu_cmd_lstm_cell cmd = {
			.hdr = { VTPU_OP_LSTM_CELL, sizeof(cmd) },
			.batch = cx->B, .hidden = H, .row_stride = H,
			.gate_stride = (uint64_t)n->h * bh,
			.gates = opnd(gate_of(cx, i, GATE_I, t)),
			.c_prev = opnd(step_of(cx, l->cx, H, t)),
			.act = opnd(gate_of(cx, i, GATE_I, t)), .c = opnd(c),
			.tc = opnd(step_of(cx, l->tc, H, t)),
			.h = opnd(step_of(cx, l->hx, H, t + 1)),
		};

		emit(cx, &cmd);
		return;
	}
	ew(cx, VTPU_EW_SIGMOID, bh, gate_of(cx, i, GATE_I, t), at(0, 0),
	   gate_of(cx, i, GATE_I, t));
	ew(cx, VTPU_EW_SIGMOID, bh, gate_of(cx, i, GATE_F, t), at(0, 0),
	   gate_of(cx, i, GATE_F, t));
	ew(cx, VTPU_EW_TANH, bh, gate_of(cx, i, GATE_G, t), at(0, 0),
	   gate_of(cx, i, GATE_G, t));
	ew(cx, VTPU_EW_SIGMOID, bh, gate_of(cx, i, GATE_O, t), at(0, 0),
	   gate_of(cx, i, GATE_O, t));
	ew(cx, VTPU_EW_MUL, bh, gate_of(cx, i, GATE_F, t),
	   step_of(cx, l->cx, H, t), c);
	ew(cx, VTPU_EW_MUL, bh, gate_of(cx, i, GATE_I, t),
	   gate_of(cx, i, GATE_G, t), tmp);
	ew(cx, VTPU_EW_ADD, bh, c, tmp, c);
	ew(cx, VTPU_EW_TANH, bh, c, at(0, 0), step_of(cx, l->tc, H, t));
	ew(cx, VTPU_EW_MUL, bh, gate_of(cx, i, GATE_O, t),
	   step_of(cx, l->tc, H, t), step_of(cx, l->hx, H, t + 1));
}

static void lstm_fwd(struct cx *cx, int i)
{
	static const struct rnn_kind lstm = {
		lstm_begin, lstm_input_part, lstm_step,
	};

	rnn_fwd(cx, i, &lstm);
}

/*
 * A GRU's buffers: h and the slots z, r, h U_h + b_rh and h~; b_i + b_r
 * of z and r (they are only ever summed), ones that broadcast b_rh.
 */
static void gru_begin(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c;
	uint64_t rows = (uint64_t)n->h * cx->B;
	struct rnn_bufs *l = &cx->rnn[i];
	struct vtpu_cmd_fill ones = {
		.hdr = { VTPU_OP_FILL, sizeof(ones) },
		.count = (uint32_t)rows, .value = f32_bits(1.0f),
	};

	rnn_begin(cx, i, 4);
	l->bsum = work(cx, 2ull * H * 4);
	l->ones = work(cx, rows * 4);
	ones.dst = opnd(l->ones);
	emit(cx, &ones);
	ew(cx, VTPU_EW_ADD, 2ull * H, param(cx, n->bias),
	   shifted(param(cx, n->bias), 3ull * H * 4), l->bsum);
}

/*
 * The input's part of steps t0..t0+nt-1: x W_z + b_iz + b_rz, the same for
 * r, x W_h + b_ih; and b_rh, where the step adds h U_h (ones times b_rh:
 * a GEMM of depth 1 broadcasts it exactly).
 */
static void gru_input_part(struct cx *cx, int i, uint32_t t0, uint32_t nt)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct rnn_bufs *l = &cx->rnn[i];
	uint32_t H = n->c;
	struct tref b = param(cx, n->bias);

	rnn_input_gemm(cx, i, t0, nt, 3, 0, GRU_Z, l->bsum);
	rnn_input_gemm(cx, i, t0, nt, 3, 1, GRU_R, shifted(l->bsum, H * 4ull));
	rnn_input_gemm(cx, i, t0, nt, 3, 2, GRU_HH, shifted(b, 2ull * H * 4));
	gemm_ld(cx, nt * cx->B, H, 1, 0, l->ones, 1,
		shifted(b, 5ull * H * 4), 3 * H, gate_of(cx, i, GRU_RH, t0), H,
		0.0f);
}

/*
 * Step t: h U added to z, r and the recurrent part of h~, then eight
 * element-wise commands: z, r = sigmoid, h~ = tanh(h~ + r (h U_h + b_rh)),
 * h' = z h + (1 - z) h~ = h~ + z (h - h~).
 */
static void gru_step(struct cx *cx, int i, uint64_t t, struct tref tmp)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c;
	uint64_t bh = (uint64_t)cx->B * H;
	const struct rnn_bufs *l = &cx->rnn[i];
	struct tref z = gate_of(cx, i, GRU_Z, t), r = gate_of(cx, i, GRU_R, t);
	struct tref rh = gate_of(cx, i, GRU_RH, t);
	struct tref hh = gate_of(cx, i, GRU_HH, t);

	rnn_recurrent(cx, i, t, 3);
	ew(cx, VTPU_EW_SIGMOID, bh, z, at(0, 0), z);
	ew(cx, VTPU_EW_SIGMOID, bh, r, at(0, 0), r);
	ew(cx, VTPU_EW_MUL, bh, r, rh, tmp);
	ew(cx, VTPU_EW_ADD, bh, hh, tmp, hh);
	ew(cx, VTPU_EW_TANH, bh, hh, at(0, 0), hh);
	ew(cx, VTPU_EW_SUB, bh, step_of(cx, l->hx, H, t), hh, tmp);
	ew(cx, VTPU_EW_MUL, bh, z, tmp, tmp);
	ew(cx, VTPU_EW_ADD, bh, hh, tmp, step_of(cx, l->hx, H, t + 1));
}

static void gru_fwd(struct cx *cx, int i)
{
	static const struct rnn_kind gru = {
		gru_begin, gru_input_part, gru_step,
	};

	rnn_fwd(cx, i, &gru);
}

/* h (and an LSTM's c) after the last step: views of the layer's buffers. */
static void rnn_state_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *l = &cx->g->nodes[n->in[0]];
	const struct rnn_bufs *b = &cx->rnn[n->in[0]];

	cx->val[i] = step_of(cx, n->slot ? b->cx : b->hx, l->c, l->h);
}

static void rnn_state_bwd(struct cx *cx, int i)
{
	cx->want_bwd[cx->g->nodes[i].in[0]] = true;
}

/* The gradient of a state output of layer @i (slot 0 h, 1 c), or none. */
static struct tref rnn_state_grad(struct cx *cx, int i, int slot)
{
	const struct vg_node *s;
	int k;

	for (k = i + 1; k < cx->g->nnodes; k++) {
		s = &cx->g->nodes[k];
		if ((s->op == VG_LSTM_STATE || s->op == VG_GRU_STATE) &&
		    s->in[0] == i && s->slot == slot)
			return cx->grad[k];
	}
	return at(0, 0);
}

/* dh of every step [T][B][H]: from the sequence output and the last h. */
static void rnn_dh(struct cx *cx, int i, struct tref dhs)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t bh = (uint64_t)cx->B * n->c;
	struct tref dh_last = rnn_state_grad(cx, i, 0);

	if (cx->grad[i].sid) {
		struct vtpu_cmd_copy cmd = {
			.hdr = { VTPU_OP_COPY, sizeof(cmd) },
			.bytes = n->h * bh * 4, .dst = opnd(dhs),
			.src = opnd(cx->grad[i]),
		};

		emit(cx, &cmd);
	} else {
		rnn_init(cx, -1, dhs, n->h * bh);
	}
	if (dh_last.sid)
		ew(cx, VTPU_EW_ADD, bh, step_of(cx, dhs, n->c, n->h - 1),
		   dh_last, step_of(cx, dhs, n->c, n->h - 1));
}

/*
 * dst (+)= the @gates gates' dz [rows, H] (slots @slots of @dz0, the slots
 * @gate_stride apart) times their column blocks of @w^T. With @tmp (room
 * for @gates products, and the slots 0, 1, ...): the products as one
 * GEMM_BATCHED into @tmp, the workers sharing them, then added to dst in
 * gate order by ELEMENTWISE ADDs: each sum is the one the GEMMs with
 * beta 1 make (acc + C, rounded once), so the bits are the same. A
 * backward step's four 64x128x128 products, each transposing its block of
 * U as it packs it, ran on one worker each.
 */
static void rnn_back_gates(struct cx *cx, int i, struct tref dz0,
			   uint64_t gate_stride, const int *slots,
			   uint32_t gates, uint32_t rows, struct tref w,
			   uint32_t wrows, struct tref dst, bool add,
			   struct tref tmp)
{
	uint32_t H = cx->g->nodes[i].c, g;
	uint64_t rw = (uint64_t)rows * wrows;
	struct bgemm prod = {
		.batch = gates, .m = rows, .n = wrows, .k = H,
		.flags = VTPU_GEMM_TRANS_B, .lda = H, .ldb = gates * H,
		.ldc = wrows, .sa = gate_stride, .sb = H, .sc = rw,
		.a = dz0, .b = w, .c = tmp,
	};
	struct tref sum = dst;

	for (g = 0; tmp.sid && g < gates; g++)
		if (slots[g] != (int)g)
			tmp = at(0, 0);
	if (!tmp.sid) {
		for (g = 0; g < gates; g++)
			gemm_ld(cx, rows, wrows, H, VTPU_GEMM_TRANS_B,
				shifted(dz0, slots[g] * gate_stride * 4), H,
				shifted(w, (uint64_t)g * H * 4), gates * H,
				dst, wrows, add || g ? 1.0f : 0.0f);
		return;
	}
	gemm_batched(cx, &prod);
	if (!add)
		sum = tmp;	/* dst = p_0 + p_1 + ... */
	for (g = add ? 0 : 1; g < gates; g++) {
		ew(cx, VTPU_EW_ADD, rw, sum, shifted(tmp, g * rw * 4), dst);
		sum = dst;
	}
}

/*
 * Over all steps at once, from the gates' dz (slots T * B * H apart):
 * dW = x^T dz, dW_rec = h'^T dz, the bias's sums of dz (a GRU's second
 * row, @two_biases, those of the recurrent slots) and dx.
 */
static void rnn_param_grads(struct cx *cx, int i, struct tref dz,
			    uint32_t gates, const int *wslots,
			    const int *uslots, bool two_biases)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, B = cx->B, T = n->h, d = cx->g->nodes[n->in[0]].c;
	uint64_t gs = (uint64_t)T * B * H;
	struct tref db = param_grad(cx, n->bias), dx, tmp;
	uint32_t g;

	for (g = 0; g < gates; g++) {
		struct tref dzw = shifted(dz, wslots[g] * gs * 4);
		struct tref dzu = shifted(dz, uslots[g] * gs * 4);

		gemm_ld(cx, d, H, T * B, VTPU_GEMM_TRANS_A, cx->val[n->in[0]],
			d, dzw, H,
			shifted(param_grad(cx, n->weight), g * H * 4ull),
			gates * H, 0.0f);
		gemm_ld(cx, H, H, T * B, VTPU_GEMM_TRANS_A, cx->rnn[i].hx, H,
			dzu, H, shifted(param_grad(cx, n->weight2),
					g * H * 4ull),
			gates * H, 0.0f);
		reduce_cols(cx, T * B, H, dzw, shifted(db, g * H * 4ull), 0.0f);
		if (two_biases)
			reduce_cols(cx, T * B, H, dzu,
				    shifted(db, (gates + g) * H * 4ull), 0.0f);
	}
	if (cx->needs_grad[n->in[0]]) {
		dx = grad_begin(cx, n->in[0], &tmp);
		rnn_back_gates(cx, i, dz, gs, wslots, gates, T * B,
			       param(cx, n->weight), d, dx, false, at(0, 0));
		grad_end(cx, n->in[0], tmp);
	}
}

/*
 * Step t's gates' dz (at @dzt, the slots @gs apart) from dh and dc, and
 * dc of the step before in @dc: one LSTM_CELL_GRAD, or with
 * VTPU_UNFUSED_LSTM twelve element-wise commands with the same bits
 * (@y their temporary).
 */
static void lstm_cell_bwd(struct cx *cx, int i, uint64_t t, struct tref dh,
			  struct tref dc, struct tref dzt, struct tref y)
{
	uint32_t H = cx->g->nodes[i].c;
	uint64_t bh = (uint64_t)cx->B * H, gs = cx->g->nodes[i].h * bh;
	const struct rnn_bufs *l = &cx->rnn[i];
	struct tref tc = step_of(cx, l->tc, H, t);
	struct tref cp = step_of(cx, l->cx, H, t);
	struct tref gi = gate_of(cx, i, GATE_I, t);
	struct tref gf = gate_of(cx, i, GATE_F, t);
	struct tref gg = gate_of(cx, i, GATE_G, t);
	struct tref go = gate_of(cx, i, GATE_O, t);
	struct vtpu_cmd_lstm_cell_grad cmd = {
		.hdr = { VTPU_OP_LSTM_CELL_GRAD, sizeof(cmd) },
		.batch = cx->B, .hidden = H, .row_stride = H,
		.gate_stride = gs, .act = opnd(gi), .c_prev = opnd(cp),
		.tc = opnd(tc), .dh = opnd(dh), .dc_next = opnd(dc),
		.dgates = opnd(dzt), .dc_prev = opnd(dc),
	};

	if (!cx->unfused_lstm) {
		emit(cx, &cmd);
		return;
	}
	/* dc += dh o (1 - tanh(c)^2) */
	ew(cx, VTPU_EW_MUL, bh, dh, go, y);
	ew(cx, VTPU_EW_TANH_GRAD, bh, tc, y, y);
	ew(cx, VTPU_EW_ADD, bh, y, dc, dc);
	/* the gates' dz: o from dh tanh(c); i, f, g from dc */
	ew(cx, VTPU_EW_MUL, bh, dh, tc, y);
	ew(cx, VTPU_EW_SIGMOID_GRAD, bh, go, y, shifted(dzt, GATE_O * gs * 4));
	ew(cx, VTPU_EW_MUL, bh, dc, gg, y);
	ew(cx, VTPU_EW_SIGMOID_GRAD, bh, gi, y, shifted(dzt, GATE_I * gs * 4));
	ew(cx, VTPU_EW_MUL, bh, dc, cp, y);
	ew(cx, VTPU_EW_SIGMOID_GRAD, bh, gf, y, shifted(dzt, GATE_F * gs * 4));
	ew(cx, VTPU_EW_MUL, bh, dc, gi, y);
	ew(cx, VTPU_EW_TANH_GRAD, bh, gg, y, shifted(dzt, GATE_G * gs * 4));
	/* dc of the step before: through the forget gate */
	ew(cx, VTPU_EW_MUL, bh, dc, gf, dc);
}

/*
 * Backward through time: per step (last first) the cell's gradient
 * (lstm_cell_bwd()) gives the gates' dz from dh and dc, then dh of the
 * step before gets dz W_rec^T; after the loop, dW, dW_rec, db and dx
 * each over all steps at once.
 */
static void lstm_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, T = n->h, B = cx->B;
	uint64_t bh = (uint64_t)B * H, gs = (uint64_t)T * bh, t;
	struct tref dc_last = rnn_state_grad(cx, i, 1);
	struct tref dhs = work(cx, T * bh * 4), dc = work(cx, bh * 4);
	struct tref dz = work(cx, 4 * gs * 4), y = at(0, 0);
	struct tref u = param(cx, n->weight2), prods = work(cx, 4 * bh * 4);
	struct tref dx, tmp;

	if (cx->unfused_lstm)
		y = work(cx, bh * 4);
	rnn_dh(cx, i, dhs);
	rnn_init(cx, -1, dc, bh);
	if (dc_last.sid)
		ew(cx, VTPU_EW_ADD, bh, dc, dc_last, dc);

	for (t = T; t-- > 0;) {
		struct tref dzt = step_of(cx, dz, H, t);

		lstm_cell_bwd(cx, i, t, step_of(cx, dhs, H, t), dc, dzt, y);
		if (t)
			rnn_back_gates(cx, i, dzt, gs, lstm_slots, 4, B, u, H,
				       step_of(cx, dhs, H, t - 1), true, prods);
	}
	/* the initial state's gradients */
	if (n->in[1] >= 0 && cx->needs_grad[n->in[1]]) {
		dx = grad_begin(cx, n->in[1], &tmp);
		rnn_back_gates(cx, i, dz, gs, lstm_slots, 4, B, u, H, dx,
			       false, prods);
		grad_end(cx, n->in[1], tmp);
	}
	if (n->in[2] >= 0 && cx->needs_grad[n->in[2]])
		grad_pass(cx, n->in[2], dc);
	rnn_param_grads(cx, i, dz, 4, lstm_slots, lstm_slots, false);
}

/*
 * Backward through time: dh of steps -1..T-1 ([T + 1][B][H], step -1 the
 * initial h's); per step (last first) nine element-wise commands give
 * the slots' dz from dh (h~'s and that of its recurrent part, r times
 * it), then dh of the step before gets dh z and dz U^T; after the loop,
 * dW, dU, db and dx each over all steps at once.
 */
static void gru_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, T = n->h, B = cx->B;
	uint64_t bh = (uint64_t)B * H, gs = (uint64_t)T * bh, t;
	const struct rnn_bufs *l = &cx->rnn[i];
	bool dinit = n->in[1] >= 0 && cx->needs_grad[n->in[1]];
	struct tref dhs = work(cx, (T + 1) * bh * 4);
	struct tref dz = work(cx, 4 * gs * 4), y = work(cx, bh * 4);
	struct tref prods = work(cx, 3 * bh * 4);

	rnn_dh(cx, i, step_of(cx, dhs, H, 1));
	for (t = T; t-- > 0;) {
		struct tref dh = step_of(cx, dhs, H, t + 1);
		struct tref prev = step_of(cx, dhs, H, t);
		struct tref z = gate_of(cx, i, GRU_Z, t);
		struct tref r = gate_of(cx, i, GRU_R, t);
		struct tref rh = gate_of(cx, i, GRU_RH, t);
		struct tref hh = gate_of(cx, i, GRU_HH, t);
		struct tref dzt = step_of(cx, dz, H, t);
		struct tref dhh = shifted(dzt, GRU_HH * gs * 4);

		/* z: dh (h - h~) through the sigmoid */
		ew(cx, VTPU_EW_SUB, bh, step_of(cx, l->hx, H, t), hh, y);
		ew(cx, VTPU_EW_MUL, bh, dh, y, y);
		ew(cx, VTPU_EW_SIGMOID_GRAD, bh, z, y,
		   shifted(dzt, GRU_Z * gs * 4));
		/* h~: dh (1 - z) through the tanh; r times it for h U_h */
		ew(cx, VTPU_EW_MUL, bh, z, dh, y);
		ew(cx, VTPU_EW_SUB, bh, dh, y, y);
		ew(cx, VTPU_EW_TANH_GRAD, bh, hh, y, dhh);
		ew(cx, VTPU_EW_MUL, bh, dhh, r, shifted(dzt, GRU_RH * gs * 4));
		/* r: dh~ (h U_h + b_rh) through the sigmoid */
		ew(cx, VTPU_EW_MUL, bh, dhh, rh, y);
		ew(cx, VTPU_EW_SIGMOID_GRAD, bh, r, y,
		   shifted(dzt, GRU_R * gs * 4));
		if (!t && !dinit)
			break;
		/* dh of the step before: through z and through U */
		if (t) {
			ew(cx, VTPU_EW_MUL, bh, dh, z, y);
			ew(cx, VTPU_EW_ADD, bh, prev, y, prev);
		} else {
			ew(cx, VTPU_EW_MUL, bh, dh, z, prev);
		}
		rnn_back_gates(cx, i, dzt, gs, gru_uslots, 3, B,
			       param(cx, n->weight2), H, prev, true, prods);
	}
	if (dinit)
		grad_pass(cx, n->in[1], dhs);
	rnn_param_grads(cx, i, dz, 3, gru_wslots, gru_uslots, true);
}

/*
 * Luong attention, per example b: scores S_b = Q_b V_b^T [Tq, Tk], P_b =
 * softmax over the keys (masked past the example's length), context
 * P_b V_b. Q and V are time-major, so example b's rows are at b * H with
 * leading dimension B * H: GEMM_BATCHED over the examples, the context's
 * rows interleaved as the output sequence's are.
 */
static void attention_softmax(struct cx *cx, int i, uint32_t opcode,
			      uint32_t nq, struct tref x, struct tref y,
			      struct tref dy)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *v = &cx->g->nodes[n->in[1]];
	struct vtpu_cmd_softmax cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.m = cx->B * nq, .n = v->h, .rows_per_group = nq,
		.x = opnd(x), .y = opnd(y), .dy = opnd(dy),
	};

	if (n->mask >= 0) {
		cmd.flags = VTPU_SOFTMAX_LENGTHS;
		cmd.lengths = opnd(token_lengths(cx, n->mask));
	}
	emit(cx, &cmd);
}

/*
 * C_b = op(A_b) op(B_b) over the examples b: a sequence operand (time-
 * major: example b's rows at b * H, leading dimension B * H) or @nq x Tk
 * scores per example, packed.
 */
static void attn_gemm(struct cx *cx, int i, uint32_t nq, uint32_t flags,
		      uint32_t m, uint32_t nn, uint32_t k, struct tref a,
		      bool a_seq, struct tref b, bool b_seq, struct tref c,
		      bool c_seq, float beta)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, B = cx->B;
	uint32_t tk = cx->g->nodes[n->in[1]].h;
	uint64_t sm = (uint64_t)nq * tk;
	struct bgemm bg = {
		.batch = B, .m = m, .n = nn, .k = k, .flags = flags,
		.lda = a_seq ? B * H : tk, .ldb = b_seq ? B * H : tk,
		.ldc = c_seq ? B * H : tk,
		.sa = a_seq ? H : sm, .sb = b_seq ? H : sm,
		.sc = c_seq ? H : sm, .a = a, .b = b, .c = c, .beta = beta,
	};

	gemm_batched(cx, &bg);
}

/* The forward of query steps q0..q0+nq-1 (all of them, or a decode step). */
static void attention_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, tk = cx->g->nodes[n->in[1]].h, rows;
	uint64_t q0 = first_row(cx, i, &rows) / cx->B;
	uint32_t nq = rows / cx->B;
	struct tref q, v = cx->val[n->in[1]], s, p;

	s = work(cx, (uint64_t)cx->B * nq * tk * 4);
	p = work(cx, (uint64_t)cx->B * nq * tk * 4);
	alloc_val(cx, i, (uint64_t)cx->B * n->h * H * 4);
	if (cx->step < 0)
		cx->aux[i] = p;
	q = shifted(cx->val[n->in[0]], q0 * cx->B * H * 4);
	attn_gemm(cx, i, nq, VTPU_GEMM_TRANS_B, nq, tk, H, q, true, v, true, s,
		  false, 0.0f);
	attention_softmax(cx, i, VTPU_OP_SOFTMAX, nq, s, p, at(0, 0));
	attn_gemm(cx, i, nq, 0, nq, H, tk, p, false, v, true,
		  shifted(cx->val[i], q0 * cx->B * H * 4), true, 0.0f);
}

static void attention_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint32_t H = n->c, tq = n->h, tk = cx->g->nodes[n->in[1]].h;
	uint64_t scores = (uint64_t)cx->B * tq * tk * 4;
	int qi = n->in[0], vi = n->in[1];
	struct tref q = cx->val[qi], v = cx->val[vi], dctx = cx->grad[i];
	struct tref dp = work(cx, scores), ds = work(cx, scores), dx, tmp;

	/* dP_b = dctx_b V_b^T, dS = the softmax's gradient */
	attn_gemm(cx, i, tq, VTPU_GEMM_TRANS_B, tq, tk, H, dctx, true, v, true, dp,
		  false, 0.0f);
	attention_softmax(cx, i, VTPU_OP_SOFTMAX_GRAD, tq, ds, cx->aux[i], dp);
	if (cx->needs_grad[qi]) {	/* dQ_b = dS_b V_b */
		dx = grad_begin(cx, qi, &tmp);
		attn_gemm(cx, i, tq, 0, tq, H, tk, ds, false, v, true, dx, true,
			  0.0f);
		grad_end(cx, qi, tmp);
	}
	if (cx->needs_grad[vi]) {	/* dV_b = P_b^T dctx_b + dS_b^T Q_b */
		dx = grad_begin(cx, vi, &tmp);
		attn_gemm(cx, i, tq, VTPU_GEMM_TRANS_A, tk, H, tq, cx->aux[i],
			  false, dctx, true, dx, true, 0.0f);
		attn_gemm(cx, i, tq, VTPU_GEMM_TRANS_A, tk, H, tq, ds, false, q,
			  true, dx, true, 1.0f);
		grad_end(cx, vi, tmp);
	}
}

/*
 * Bahdanau attention: the keys K = V W2 ([Tk][B][U], once: before the
 * first step when decoding), the queries' projections Qp = Q W1, the
 * scores v . tanh(Qp_t + K_s) by ADDITIVE_SCORE in the packed [B][Tq][Tk]
 * layout of Luong's, then the same masked softmax and context P_b V_b.
 * aux holds K, then Qp and P over all the steps (what the gradient
 * reads).
 */
static uint32_t add_units(const struct cx *cx, int i)
{
	return (uint32_t)cx->g->params[cx->g->nodes[i].bias].count;
}

static struct tref add_aux(struct cx *cx, int i, int part)
{
	const struct vg_node *n = &cx->g->nodes[i];
	uint64_t u = add_units(cx, i), tk = cx->g->nodes[n->in[1]].h;
	uint64_t kb = tk * cx->B * u * 4, qb = (uint64_t)n->h * cx->B * u * 4;

	return shifted(cx->aux[i], part == 0 ? 0 : part == 1 ? kb : kb + qb);
}

static void add_score(struct cx *cx, int i, uint32_t opcode, uint32_t nq,
		      struct tref q, struct tref s, struct tref dq,
		      struct tref dk)
{
	const struct vg_node *n = &cx->g->nodes[i];
	struct vtpu_cmd_additive_score cmd = {
		.hdr = { opcode, sizeof(cmd) },
		.batch = cx->B, .tq = nq, .tk = cx->g->nodes[n->in[1]].h,
		.units = add_units(cx, i), .q = opnd(q),
		.k = opnd(add_aux(cx, i, 0)), .v = opnd(param(cx, n->bias)),
		.s = opnd(s),
	};

	if (opcode == VTPU_OP_ADDITIVE_SCORE_GRAD) {
		cmd.dq = opnd(dq);
		cmd.dk = opnd(dk);
		cmd.dv = opnd(param_grad(cx, n->bias));
	}
	emit(cx, &cmd);
}

static void additive_fwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	const struct vg_node *q = &cx->g->nodes[n->in[0]];
	const struct vg_node *v = &cx->g->nodes[n->in[1]];
	uint32_t H = n->c, tk = v->h, u = add_units(cx, i), rows, nq;
	uint64_t q0 = first_row(cx, i, &rows) / cx->B;
	uint64_t sb;
	struct tref qp, s, p;

	nq = rows / cx->B;
	sb = (uint64_t)cx->B * nq * tk * 4;
	if (!cx->aux[i].sid) {	/* the keys: once */
		cx->aux[i] = work(cx, ((uint64_t)tk + n->h) * cx->B * u * 4 +
					      (uint64_t)cx->B * n->h * tk * 4);
		gemm(cx, tk * cx->B, u, v->c, 0, cx->val[n->in[1]],
		     param(cx, n->weight2), add_aux(cx, i, 0), at(0, 0), 0.0f);
	}
	alloc_val(cx, i, (uint64_t)cx->B * n->h * H * 4);
	qp = shifted(add_aux(cx, i, 1), q0 * cx->B * u * 4);
	gemm(cx, rows, u, q->c, 0,
	     shifted(cx->val[n->in[0]], q0 * cx->B * q->c * 4),
	     param(cx, n->weight), qp, at(0, 0), 0.0f);
	s = work(cx, sb);
	p = cx->step < 0 ? add_aux(cx, i, 2) : work(cx, sb);
	add_score(cx, i, VTPU_OP_ADDITIVE_SCORE, nq, qp, s, at(0, 0),
		  at(0, 0));
	attention_softmax(cx, i, VTPU_OP_SOFTMAX, nq, s, p, at(0, 0));
	attn_gemm(cx, i, nq, 0, nq, H, tk, p, false, cx->val[n->in[1]], true,
		  shifted(cx->val[i], q0 * cx->B * H * 4), true, 0.0f);
}

static void additive_bwd(struct cx *cx, int i)
{
	const struct vg_node *n = &cx->g->nodes[i];
	int qi = n->in[0], vi = n->in[1];
	const struct vg_node *q = &cx->g->nodes[qi], *v = &cx->g->nodes[vi];
	uint32_t H = n->c, tq = n->h, tk = v->h, u = add_units(cx, i);
	uint64_t scores = (uint64_t)cx->B * tq * tk * 4;
	struct tref dctx = cx->grad[i], p = add_aux(cx, i, 2);
	struct tref dp = work(cx, scores), ds = work(cx, scores);
	struct tref dqp = work(cx, (uint64_t)tq * cx->B * u * 4);
	struct tref dkp = work(cx, (uint64_t)tk * cx->B * u * 4), dx, tmp;

	/* dP_b = dctx_b V_b^T, dS through the softmax, then the scores */
	attn_gemm(cx, i, tq, VTPU_GEMM_TRANS_B, tq, tk, H, dctx, true,
		  cx->val[vi], true, dp, false, 0.0f);
	attention_softmax(cx, i, VTPU_OP_SOFTMAX_GRAD, tq, ds, p, dp);
	add_score(cx, i, VTPU_OP_ADDITIVE_SCORE_GRAD, tq, add_aux(cx, i, 1),
		  ds, dqp, dkp);
	/* dW1 = Q^T dQp, dW2 = V^T dK */
	gemm(cx, q->c, u, tq * cx->B, VTPU_GEMM_TRANS_A, cx->val[qi], dqp,
	     param_grad(cx, n->weight), at(0, 0), 0.0f);
	gemm(cx, v->c, u, tk * cx->B, VTPU_GEMM_TRANS_A, cx->val[vi], dkp,
	     param_grad(cx, n->weight2), at(0, 0), 0.0f);
	if (cx->needs_grad[qi]) {	/* dQ = dQp W1^T */
		dx = grad_begin(cx, qi, &tmp);
		gemm(cx, tq * cx->B, q->c, u, VTPU_GEMM_TRANS_B, dqp,
		     param(cx, n->weight), dx, at(0, 0), 0.0f);
		grad_end(cx, qi, tmp);
	}
	if (cx->needs_grad[vi]) {	/* dV_b = P_b^T dctx_b + dK W2^T */
		dx = grad_begin(cx, vi, &tmp);
		attn_gemm(cx, i, tq, VTPU_GEMM_TRANS_A, tk, H, tq, p, false,
			  dctx, true, dx, true, 0.0f);
		gemm(cx, tk * cx->B, v->c, u, VTPU_GEMM_TRANS_B, dkp,
		     param(cx, n->weight2), dx, at(0, 0), 1.0f);
		grad_end(cx, vi, tmp);
	}
}

/* A concatenation is read in parts by the dense layer that takes it. */
static void concat_fwd(struct cx *cx, int i)
{
	(void)cx;
	(void)i;
}

/* The op table: one entry per node type, as kann has. */
static const struct {
	void (*fwd)(struct cx *cx, int i);
	void (*bwd)(struct cx *cx, int i); /* NULL: nothing to propagate */
} ops[] = {
	[VG_INPUT] = { input_fwd, NULL },
	[VG_DENSE] = { dense_fwd, dense_bwd },
	[VG_CONV2D] = { conv_fwd, conv_bwd },
	[VG_MAXPOOL] = { pool_fwd, pool_bwd },
	[VG_RELU] = { relu_fwd, relu_bwd },
	[VG_FLATTEN] = { flatten_fwd, flatten_bwd },
	[VG_ADD] = { add_fwd, add_bwd },
	[VG_DROPOUT] = { dropout_fwd, dropout_bwd },
	[VG_TOKENS] = { tokens_fwd, NULL },
	[VG_EMBEDDING] = { embedding_fwd, embedding_bwd },
	[VG_LSTM] = { lstm_fwd, lstm_bwd },
	[VG_LSTM_STATE] = { rnn_state_fwd, rnn_state_bwd },
	[VG_GRU] = { gru_fwd, gru_bwd },
	[VG_GRU_STATE] = { rnn_state_fwd, rnn_state_bwd },
	[VG_ATTENTION] = { attention_fwd, attention_bwd },
	[VG_ADDITIVE_ATTENTION] = { additive_fwd, additive_bwd },
	[VG_CONCAT] = { concat_fwd, NULL },
	[VG_BATCHNORM] = { bn_fwd, bn_bwd },
	[VG_DWCONV2D] = { dwconv_fwd, dwconv_bwd },
	[VG_SEPCONV2D] = { sepconv_fwd, sepconv_bwd },
	[VG_AVGPOOL] = { avgpool_fwd, avgpool_bwd },
	[VG_GLOBAL_AVGPOOL] = { avgpool_fwd, avgpool_bwd },
	[VG_AUGMENT] = { augment_fwd, NULL },
	[VG_RESCALE] = { rescale_fwd, rescale_bwd },
	[VG_LOSS] = { loss_fwd, NULL },
};

/* Mutable view of an operand the engine's table locates. */
static struct vtpu_operand *operand_at(struct vtpu_cmd_hdr *cmd, uint32_t id,
				       uint64_t *bytes)
{
	const struct vtpu_operand *o;

	if (vtpu_engine_operand(cmd, id, &o, bytes))
		return NULL;
	return (struct vtpu_operand *)((uint8_t *)cmd +
				       ((const uint8_t *)o -
					(const uint8_t *)cmd));
}

/*
 * The optimizer's update of parameters [p0, p1) (consecutive in the
 * parameter block): one ADAM or SGD over their floats, and the
 * alignment gaps between them.
 */
static void update(struct cx *cx, int p0, int p1)
{
	const struct vg_optim *o = cx->opt;
	const struct vg_param *a = &cx->g->params[p0];
	const struct vg_param *z = &cx->g->params[p1 - 1];
	uint64_t off = a->offset * sizeof(float);
	uint64_t count = z->offset + z->count - a->offset;
	struct tref p = at(cx->state, cx->sl.params + off);
	struct tref g = at(cx->grads, off);
	struct tref m = at(cx->state, cx->sl.mom + off);

	if (o->kind == VTPU_OPT_ADAM) {
		struct vtpu_cmd_adam adam = {
			.hdr = { VTPU_OP_ADAM, sizeof(adam) },
			.count = count, .lr = f32_bits(o->lr),
			.beta1 = f32_bits(o->beta1),
			.beta2 = f32_bits(o->beta2),
			.eps = f32_bits(o->eps),
			.param = opnd(p), .grad = opnd(g), .m = opnd(m),
			.v = opnd(at(cx->state, cx->sl.vel + off)),
			.state = opnd(at(cx->state, cx->sl.adam_state)),
		};

		emit(cx, &adam);
	} else {
		struct vtpu_cmd_sgd sgd = {
			.hdr = { VTPU_OP_SGD, sizeof(sgd) },
			.count = count, .lr = f32_bits(o->lr),
			.momentum = f32_bits(o->momentum),
			.param = opnd(p), .grad = opnd(g),
		};

		if (o->momentum != 0.0f)
			sgd.mom = opnd(m);
		emit(cx, &sgd);
	}
}

static void adam_step(struct cx *cx)
{
	struct vtpu_cmd_adam_step step = {
		.hdr = { VTPU_OP_ADAM_STEP, sizeof(step) },
		.beta1 = f32_bits(cx->opt->beta1),
		.beta2 = f32_bits(cx->opt->beta2),
		.state = opnd(at(cx->state, cx->sl.adam_state)),
	};

	if (cx->opt->kind == VTPU_OPT_ADAM)
		emit(cx, &step);
}

/* The commands that keep a core's FMA units busy. */
static bool compute_bound(uint32_t opcode)
{
	switch (opcode) {
	case VTPU_OP_GEMM:
	case VTPU_OP_GEMM_BATCHED:
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD:
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD:
		return true;
	}
	return false;
}

/*
 * Mark in @last[] command @idx for the parameters whose values or
 * gradients the operand [lo, hi) of store @sid covers.
 */
static void mark_params(struct cx *cx, int sid, uint64_t lo, uint64_t hi,
			int idx, int *last)
{
	const struct vtpu_graph *g = cx->g;
	uint64_t base;
	int p;

	if (sid == cx->state)
		base = cx->sl.params;
	else if (sid == cx->grads)
		base = 0;
	else
		return;
	for (p = 0; p < g->nparams; p++) {
		uint64_t a = base + g->params[p].offset * sizeof(float);
		uint64_t z = a + g->params[p].count * sizeof(float);

		if (lo < z && a < hi)
			last[p] = idx;
	}
}

/*
 * Parameters this large (in floats: 16 MiB of Adam's moments and
 * weights, a 28 MiB pass with the gradient and the writes) are updated
 * early: their passes stream from memory, not from the caches.
 */
#define UPDATE_EARLY_MIN (1u << 20)

/*
 * Where each parameter's update goes (@after[p]: after command number
 * after[p], or -1: at the end). A large parameter's update (Adam: seven
 * streams) is bound by memory; once the backward pass has made its
 * gradient and will not read the parameter or the gradient again, the
 * update can run beside the next compute-bound command (the previous
 * layer's weight gradient), while much of the gradient is still in the
 * caches, instead of at the end after every other gradient has gone
 * through them. The executors run such neighbours as one group, the
 * caller taking tiles from its front and the helpers from its end
 * (backend_cpu.c, vtpu_sched.c). A 784-2048-2048-10 MLP's step ran 2-6%
 * faster so in one set of alternating runs, within the noise in another;
 * smaller updates (a 512-unit MLP's) ran slower early, beside a short
 * GEMM, than at the end on both cores (performance.md). Each element's
 * update is the same wherever it runs: so are the bits.
 */
static void place_updates(struct cx *cx, int *after)
{
	const struct vtpu_graph *g = cx->g;
	struct vtpu_cmd_hdr *cmd;
	struct vtpu_operand *o;
	uint32_t pos = 0, bwd = 0, id;
	uint64_t bytes;
	int *last = malloc(g->nparams * sizeof(*last));
	int *heavy = NULL, n = 0, idx, p;

	for (p = 0; p < g->nparams; p++)
		after[p] = -1;
	for (idx = 0; vtpu_engine_next(cx->cb.data, cx->cb.size, &pos);)
		idx++;
	heavy = malloc((idx + 1) * sizeof(*heavy));
	if (!last || !heavy) {
		free(last);
		free(heavy);
		return;		/* all at the end, as when split */
	}
	for (p = 0; p < g->nparams; p++)
		last[p] = -1;
	for (pos = 0; (cmd = (struct vtpu_cmd_hdr *)(uintptr_t)
			vtpu_engine_next(cx->cb.data, cx->cb.size, &pos));
	     n++) {
		if ((uint32_t)((uint8_t *)cmd - cx->cb.data) < cx->bwd_at)
			bwd = n + 1;	/* the first backward command */
		heavy[n] = compute_bound(cmd->opcode);
		for (id = 1; id <= MAX_OPERAND_ID; id++)
			if ((o = operand_at(cmd, id, &bytes)) && o->buf)
				mark_params(cx, (int)o->buf, o->offset,
					    o->offset + bytes, n, last);
	}
	/* heavy[i]: the first compute-bound command from i on, or -1 */
	heavy[n] = -1;
	for (idx = n - 1; idx >= 0; idx--)
		heavy[idx] = heavy[idx] ? idx : heavy[idx + 1];
	for (p = 0; p < g->nparams; p++)
		if (g->params[p].count >= UPDATE_EARLY_MIN && last[p] >= 0 &&
		    heavy[last[p] + 1] >= (int)bwd)
			after[p] = heavy[last[p] + 1];
	free(last);
	free(heavy);
}

/* The updates placed at @at, consecutive parameters in one command */
static void updates_at(struct cx *cx, const int *after, int at)
{
	int p = 0, q;

	while (p < cx->g->nparams) {
		for (q = p; q < cx->g->nparams && after[q] == at; q++)
			;
		if (q > p)
			update(cx, p, q);
		p = q > p ? q : p + 1;
	}
}

/*
 * The optimizer: every parameter's update, each at the place
 * place_updates() finds, or all at the end in one command when the
 * stream is to be split (a replica's gradients are summed across
 * devices before the update: vg_program_split()).
 */
static void optimizer(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	struct vtpu_cmdbuf old = cx->cb;
	uint32_t pos = 0, at0;
	int *after, n = 0;

	if (cx->opt->split) {
		cx->opt_at = cx->cb.size;
		adam_step(cx);
		update(cx, 0, g->nparams);
		return;
	}
	after = malloc(g->nparams * sizeof(*after));
	if (!after) {
		cx->err = -ENOMEM;
		return;
	}
	place_updates(cx, after);
	/* the stream again, with the updates after their commands */
	vtpu_cmdbuf_init(&cx->cb);
	adam_step(cx);
	for (at0 = 0; vtpu_engine_next(old.data, old.size, &pos); n++) {
		emit(cx, old.data + at0);
		at0 = pos;
		updates_at(cx, after, n);
	}
	updates_at(cx, after, -1);
	vtpu_cmdbuf_fini(&old);
	free(after);
}

/* ---- plan and lower --------------------------------------------------- */

static int cmp_size_desc(const void *a, const void *b, void *arg)
{
	const struct store *st = arg;
	uint64_t x = st[*(const int *)a].bytes, y = st[*(const int *)b].bytes;

	return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

/* Every operand in use (non-zero) of every command, in stream order. */
#define for_each_operand(cb, cmd, o, idx, id, bytes)                           \
	for (uint32_t pos_ = 0;                                                \
	     ((cmd) = (struct vtpu_cmd_hdr *)(uintptr_t)vtpu_engine_next(      \
		      (cb)->data, (cb)->size, &pos_)) != NULL;                 \
	     (idx)++)                                                          \
		for ((id) = 1; (id) <= MAX_OPERAND_ID; (id)++)                 \
			if (((o) = operand_at((cmd), (id), &(bytes))) &&       \
			    (o)->buf)

static void lifetimes(struct cx *cx)
{
	struct vtpu_cmd_hdr *cmd;
	struct vtpu_operand *o;
	uint64_t bytes;
	uint32_t id;
	int idx = 0;

	for_each_operand(&cx->cb, cmd, o, idx, id, bytes) {
		struct store *s = &cx->st[o->buf];

		if (s->first < 0)
			s->first = idx;
		s->last = idx;
	}
}

/* Greedy: largest first, at the lowest offset free for its lifetime. */
static uint64_t plan(struct cx *cx, uint64_t *naive)
{
	int *order = malloc(cx->nst * sizeof(*order));
	int n = 0, i, j;
	uint64_t top = 0, off;
	bool moved;

	*naive = 0;
	if (!order) {
		cx->err = -ENOMEM;
		return 0;
	}
	for (i = 1; i < cx->nst; i++)
		if (cx->st[i].buf == VG_BUF_WORK && cx->st[i].first >= 0)
			order[n++] = i;
	qsort_r(order, n, sizeof(*order), cmp_size_desc, cx->st);

	for (i = 0; i < n; i++) {
		struct store *s = &cx->st[order[i]];
		uint64_t size = (s->bytes + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);

		*naive += size;
		off = 0;
		do { /* bump past every placed, live-overlapping conflict */
			moved = false;
			for (j = 0; j < i; j++) {
				struct store *t = &cx->st[order[j]];
				uint64_t tsize = (t->bytes + ALIGN - 1) &
						 ~(uint64_t)(ALIGN - 1);

				if (t->last < s->first || s->last < t->first)
					continue;
				if (off < t->base + tsize &&
				    t->base < off + size) {
					off = t->base + tsize;
					moved = true;
				}
			}
		} while (moved);
		s->base = off;
		if (off + size > top)
			top = off + size;
	}
	free(order);
	return top;
}

static void lower(struct cx *cx)
{
	struct vtpu_cmd_hdr *cmd;
	struct vtpu_operand *o;
	uint64_t bytes;
	uint32_t id;
	int idx = 0;

	for_each_operand(&cx->cb, cmd, o, idx, id, bytes) {
		const struct store *s = &cx->st[o->buf];

		o->buf = s->buf;
		o->offset += s->base;
	}
}

/* ---- the driver ------------------------------------------------------- */

/*
 * Eval and predict: a batch norm whose input is a conv or a dense layer
 * without activation, that feeds nothing else, is folded into its weights
 * (bn_fold()); unless the graph says no (vtpu_compile_opts.no_bn_fold),
 * or normalises with the batch's statistics (vtpu_gradcheck). Kernels in
 * panels are not: their columns are not rows of the output channels.
 */
static void plan_bn_folding(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int i, x;

	for (i = 0; i < g->nnodes; i++)
		cx->bn_into[i] = -1;
	if ((cx->kind != VG_PROG_EVAL && cx->kind != VG_PROG_PREDICT) ||
	    g->bn_nofold || g->bn_batch_stats)
		return;
	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n;

		if (g->nodes[i].op != VG_BATCHNORM)
			continue;
		x = g->nodes[i].in[0];
		n = &g->nodes[x];
		if ((n->op != VG_DENSE && n->op != VG_CONV2D) ||
		    n->act != VTPU_ACT_NONE || n->bias < 0 || n->seq ||
		    consumers(g, x) != 1 || g->params[n->weight].panels ||
		    cx->pool_of[x] >= 0 ||
		    (n->op == VG_DENSE && g->nodes[n->in[0]].op == VG_CONCAT))
			continue;
		cx->bn_into[x] = i;
	}
}

/* A conv feeding only a max-pool is fused with it (see convpool_fwd). */
static void plan_fusion(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int i, k, uses;

	for (i = 0; i < g->nnodes; i++) {
		cx->pool_of[i] = -1;
		if (g->nodes[i].op != VG_CONV2D)
			continue;
		uses = consumers(g, i);
		for (k = i + 1; k < g->nnodes; k++)
			if (uses == 1 && g->nodes[k].op == VG_MAXPOOL &&
			    g->nodes[k].in[0] == i && !g->nodes[k].pad_h &&
			    !g->nodes[k].pad_w && !g->nodes[k].pool_end)
				cx->pool_of[i] = k;
	}
}

/*
 * A ReLU whose input is a direct pair's pooling, and nothing else uses
 * that pooling: CONV_POOL applies it (max commutes with ReLU), and the
 * gradient's mask is CONV_POOL_WGRAD's. The ReLU node only names the
 * pooled values and passes its gradient through.
 *
 * A ReLU of a ReLU's output (Xception's blocks open with one, and its
 * first block's input is the stem's ReLU) is its input, bit for bit:
 * x < 0 ? 0 : x leaves +0, -0, NaN and the positives as they are. Its
 * gradient passes through too, since the inner ReLU's mask (its output
 * > 0) is the outer one's: both ELEMENTWISE passes go, and the inner
 * ReLU's gradient sums what it received in the same order as before.
 */
static void plan_relu_folding(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int r, j, k;

	for (r = 0; r < g->nnodes; r++) {
		if (g->nodes[r].op != VG_RELU)
			continue;
		j = g->nodes[r].in[0];
		if (j >= 0 && g->nodes[j].op == VG_RELU) {
			cx->relu_folded[r] = true;
			continue;
		}
		if (g->nodes[j].op != VG_MAXPOOL)
			continue;
		k = g->nodes[j].in[0];
		if (cx->pool_of[k] != j || !convpool_direct(cx, k, j))
			continue;
		if (consumers(g, j) == 1)
			cx->relu_folded[r] = cx->pool_relu[j] = true;
	}
}

/*
 * A ReLU whose input is a batch norm that nothing else reads, and that is
 * not folded into a conv's weights (then the ReLU runs): BATCHNORM
 * applies it (VTPU_BATCHNORM_RELU, the same bits as the pair), one pass
 * over the activations less in every program. The ReLU's gradient is
 * unchanged: RELU_GRAD's mask is the fused output.
 */
static void plan_bn_relu(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int r, x;

	for (r = 0; r < g->nnodes; r++)
		cx->bn_relu[r] = -1;
	for (r = 0; r < g->nnodes; r++) {
		if (g->nodes[r].op != VG_RELU)
			continue;
		x = g->nodes[r].in[0];
		if (x < 0 || g->nodes[x].op != VG_BATCHNORM ||
		    consumers(g, x) != 1 ||
		    cx->bn_into[g->nodes[x].in[0]] == x)
			continue;
		cx->bn_relu[x] = r;
	}
}

static void mark_needs_grad(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int i, j;

	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];

		cx->needs_grad[i] = n->weight >= 0;
		for (j = 0; j < VG_MAX_IN; j++)
			if (n->in[j] >= 0 && cx->needs_grad[n->in[j]])
				cx->needs_grad[i] = true;
	}
}

/*
 * Greedy decoding in one stream: the nodes that do not depend on the
 * generated input (the encoder) run once; then, step by step, the ones
 * that do (embedding, LSTM, GRU, attention, dense: each emits its step's
 * block), and ARGMAX of the step's logits gives the ids the next step
 * reads, written where the generated input's ids are (the host puts
 * <start> in step 0) and into the metrics, [T][batch] at VG_METRIC_PROBS.
 */
static bool decodable(const struct vg_node *n)
{
	switch (n->op) {
	case VG_TOKENS: case VG_EMBEDDING: case VG_LSTM: case VG_LSTM_STATE:
	case VG_GRU: case VG_GRU_STATE: case VG_ATTENTION: case VG_CONCAT:
	case VG_ADDITIVE_ATTENTION:
	case VG_DENSE: case VG_DROPOUT: case VG_LOSS:
		return true;
	default:
		return false;
	}
}

/*
 * Can node @i, which depends on the generated input, run step by step:
 * does step t read only what steps 0..t wrote? A sequence op of the
 * generated length, whose other operands are whole before the first step
 * (attention's keys and mask, from the encoder); a recurrent layer's last
 * state only if nothing reads it (it exists after the last step).
 */
static bool decodable_at(const struct cx *cx, int i, uint32_t T)
{
	const struct vg_node *n = &cx->g->nodes[i];

	if (!decodable(n))
		return false;
	if (n->op == VG_LSTM_STATE || n->op == VG_GRU_STATE)
		return !consumers(cx->g, i);
	if (n->op == VG_LOSS)
		return true;
	if (!n->seq || n->h != T)
		return false;
	return (n->op != VG_ATTENTION && n->op != VG_ADDITIVE_ATTENTION) ||
	       (!cx->dec[n->in[1]] && (n->mask < 0 || !cx->dec[n->mask]));
}

static void decode(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	int slot = g->decode_slot, i, j, logits = g->nodes[g->loss].in[0];
	const struct vg_node *tok;
	uint32_t T, t, V = g->nodes[logits].c;

	if (slot < 0 || slot >= g->ntokens) {
		cx->err = -EINVAL;
		return;
	}
	tok = &g->nodes[g->tokens[slot]];
	T = tok->h;
	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];

		cx->dec[i] = i == g->tokens[slot];
		for (j = 0; j < VG_MAX_IN; j++)
			if (n->in[j] >= 0 && cx->dec[n->in[j]])
				cx->dec[i] = true;
		if (cx->dec[i] && !decodable_at(cx, i, T)) {
			cx->err = -EOPNOTSUPP;
			return;
		}
	}
	if (!cx->dec[logits] || !g->nodes[logits].seq) {
		cx->err = -EINVAL;
		return;
	}
	for (i = 0; i < g->nnodes && !cx->err; i++)
		if (!cx->dec[i] && g->nodes[i].op != VG_LOSS)
			ops[g->nodes[i].op].fwd(cx, i);
	for (t = 0; t < T && !cx->err; t++) {
		struct tref ids = at(cx->metrics,
				     VG_METRIC_PROBS + (uint64_t)t * cx->B * 4);
		struct vtpu_cmd_argmax am = {
			.hdr = { VTPU_OP_ARGMAX, sizeof(am) },
			.m = cx->B, .n = V, .ldx = V,
			.y = opnd(ids),
		};

		cx->step = (int)t;
		for (i = 0; i < g->nnodes && !cx->err; i++)
			if (cx->dec[i] && g->nodes[i].op != VG_LOSS)
				ops[g->nodes[i].op].fwd(cx, i);
		am.x = opnd(shifted(cx->val[logits],
				    (uint64_t)t * cx->B * V * 4));
		emit(cx, &am);
		if (t + 1 < T) {
			struct vtpu_cmd_copy cp = {
				.hdr = { VTPU_OP_COPY, sizeof(cp) },
				.bytes = (uint64_t)cx->B * 4,
				.dst = opnd(shifted(cx->val[g->tokens[slot]],
						    (uint64_t)(t + 1) * cx->B *
							    4)),
				.src = opnd(ids),
			};

			emit(cx, &cp);
		}
	}
	cx->step = -1;
}

/*
 * A layer the loss does not depend on (nothing on the way to the loss
 * reads its output) gets no gradient commands; its parameters' gradients
 * are zero, written so, not whatever the arena held: the optimizer reads
 * every parameter's.
 */
static void zero_dead_grads(struct cx *cx)
{
	const struct vtpu_graph *g = cx->g;
	bool *live = calloc(g->nnodes, sizeof(*live));
	int i, j;

	if (!live) {
		cx->err = -ENOMEM;
		return;
	}
	live[g->loss] = true;
	for (i = g->nnodes - 1; i >= 0; i--)
		for (j = 0; live[i] && j < VG_MAX_IN; j++)
			if (g->nodes[i].in[j] >= 0)
				live[g->nodes[i].in[j]] = true;
	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];
		int p[3] = { n->weight, n->weight2, n->bias }, k;

		for (k = 0; !live[i] && k < 3; k++) {
			struct vtpu_cmd_fill fill = {
				.hdr = { VTPU_OP_FILL, sizeof(fill) },
			};

			if (p[k] < 0)
				continue;
			fill.count = (uint32_t)g->params[p[k]].count;
			fill.dst = opnd(param_grad(cx, p[k]));
			emit(cx, &fill);
		}
	}
	free(live);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int vg_compile(const struct vtpu_graph *g, enum vg_prog_kind kind,
	       uint32_t batch, const struct vg_optim *opt,
	       struct vg_program *prog)
{
	double t0 = now_ms();
	const char *unfused = getenv("VTPU_UNFUSED_LSTM");
	struct cx cx = { .g = g, .kind = kind, .B = batch, .opt = opt,
			  .step = -1,
			  .unfused_lstm = unfused && atoi(unfused) > 0 };
	uint32_t classes;
	int i;

	memset(prog, 0, sizeof(*prog));
	if ((g->input < 0 && !g->ntokens) || g->loss < 0 || !batch ||
	    !g->nparam_floats)
		return -EINVAL;
	classes = g->nodes[g->loss].c;
	vg_state_layout(g, opt->kind, &cx.sl);
	vtpu_cmdbuf_init(&cx.cb);
	cx.val = calloc(g->nnodes, sizeof(*cx.val));
	cx.grad = calloc(g->nnodes, sizeof(*cx.grad));
	cx.aux = calloc(g->nnodes, sizeof(*cx.aux));
	cx.needs_grad = calloc(g->nnodes, sizeof(*cx.needs_grad));
	cx.pool_of = calloc(g->nnodes, sizeof(*cx.pool_of));
	cx.relu_folded = calloc(g->nnodes, sizeof(*cx.relu_folded));
	cx.pool_relu = calloc(g->nnodes, sizeof(*cx.pool_relu));
	cx.want_bwd = calloc(g->nnodes, sizeof(*cx.want_bwd));
	cx.rnn = calloc(g->nnodes, sizeof(*cx.rnn));
	cx.dec = calloc(g->nnodes, sizeof(*cx.dec));
	cx.bn_into = malloc(g->nnodes * sizeof(*cx.bn_into));
	cx.bn_relu = malloc(g->nnodes * sizeof(*cx.bn_relu));
	cx.wf = calloc(g->nnodes, sizeof(*cx.wf));
	cx.bf = calloc(g->nnodes, sizeof(*cx.bf));
	if (!cx.val || !cx.grad || !cx.aux || !cx.needs_grad || !cx.pool_of ||
	    !cx.relu_folded || !cx.pool_relu || !cx.want_bwd || !cx.rnn ||
	    !cx.dec || !cx.bn_into || !cx.bn_relu || !cx.wf || !cx.bf) {
		cx.err = -ENOMEM;
		goto out;
	}

	new_store(&cx, VG_BUF_STATE, 0); /* sid 0: "none" */
	cx.state = new_store(&cx, VG_BUF_STATE, cx.sl.bytes);
	cx.images = new_store(&cx, VG_BUF_IMAGES, 0);
	cx.labels = new_store(&cx, VG_BUF_LABELS, 0);
	cx.metrics = new_store(&cx, VG_BUF_METRICS, 0);
	if (kind == VG_PROG_TRAIN)
		cx.grads = new_store(&cx, VG_BUF_WORK,
				     g->nparam_floats * sizeof(float));
	mark_needs_grad(&cx);
	plan_fusion(&cx);
	plan_relu_folding(&cx);
	plan_bn_folding(&cx);
	plan_bn_relu(&cx);

	if (kind == VG_PROG_TRAIN && g->ndropout) {
		/* one step more: the dropout masks of this step are new */
		struct vtpu_cmd_elementwise bump = {
			.hdr = { VTPU_OP_ELEMENTWISE, sizeof(bump) },
			.op = VTPU_EW_ADD_SCALAR, .count = 1,
			.alpha = f32_bits(1.0f),
			.x = opnd(at(cx.state, cx.sl.step)),
			.z = opnd(at(cx.state, cx.sl.step)),
		};

		emit(&cx, &bump);
	}
	if (kind == VG_PROG_DECODE)
		decode(&cx);
	else
		for (i = 0; i < g->nnodes && !cx.err; i++)
			ops[g->nodes[i].op].fwd(&cx, i);
	if (kind == VG_PROG_TRAIN) {
		cx.bwd_at = cx.cb.size;
		for (i = g->nnodes - 1; i >= 0 && !cx.err; i--)
			if (ops[g->nodes[i].op].bwd &&
			    (cx.grad[i].sid || cx.want_bwd[i])) {
				cx.bwd_node = i;
				ops[g->nodes[i].op].bwd(&cx, i);
			}
		zero_dead_grads(&cx);
		optimizer(&cx);
	}
	if (cx.err || cx.cb.error) {
		cx.err = cx.err ?: cx.cb.error;
		goto out;
	}

	lifetimes(&cx);
	if (kind == VG_PROG_TRAIN)	/* read after the run: gradcheck.c */
		cx.st[cx.grads].last = INT_MAX;
	prog->work_bytes = plan(&cx, &prog->naive_bytes);
	if (kind == VG_PROG_TRAIN)
		prog->grads_offset = cx.st[cx.grads].base;
	lower(&cx);
	if (cx.err)
		goto out;

	prog->kind = kind;
	prog->batch = batch;
	prog->opt_at = cx.opt_at;
	prog->cb = cx.cb;
	memset(&cx.cb, 0, sizeof(cx.cb));
	for (i = 0; i < VG_NBUFS; i++) /* placeholders, bound by vg_run() */
		vtpu_cmdbuf_use(&prog->cb, &prog->slots[i]);
	prog->commands = 0;
	for (uint32_t pos = 0; vtpu_engine_next(prog->cb.data, prog->cb.size,
						 &pos);)
		prog->commands++;
	prog->metrics_stride = VG_METRIC_PROBS +
		(kind == VG_PROG_PREDICT ?
			 vg_node_rows(&g->nodes[g->loss], batch) * classes * 4 :
		 kind == VG_PROG_DECODE ?
			 vg_node_rows(&g->nodes[g->loss], batch) * 4 :
			 0);
	prog->compile_ms = now_ms() - t0;
out:
	vtpu_cmdbuf_fini(&cx.cb);
	free(cx.st);
	free(cx.val);
	free(cx.grad);
	free(cx.aux);
	free(cx.needs_grad);
	free(cx.pool_of);
	free(cx.relu_folded);
	free(cx.pool_relu);
	free(cx.want_bwd);
	free(cx.rnn);
	free(cx.dec);
	free(cx.bn_into);
	free(cx.bn_relu);
	free(cx.wf);
	free(cx.bf);
	return cx.err;
}

void vg_program_set_lr(struct vg_program *prog, float lr)
{
	uint32_t bits = f32_bits(lr), pos = 0, at;
	const struct vtpu_cmd_hdr *cmd;

	for (at = 0; (cmd = vtpu_engine_next(prog->cb.data, prog->cb.size,
					     &pos)); at = pos) {
		if (cmd->opcode == VTPU_OP_ADAM)
			at += offsetof(struct vtpu_cmd_adam, lr);
		else if (cmd->opcode == VTPU_OP_SGD)
			at += offsetof(struct vtpu_cmd_sgd, lr);
		else
			continue;
		memcpy(prog->cb.data + at, &bits, sizeof(bits));
	}
}

int vg_program_split(struct vg_program *train, struct vg_program *update)
{
	uint32_t pos, at;
	int i, ret = 0;

	memset(update, 0, sizeof(*update));
	if (train->kind != VG_PROG_TRAIN || !train->opt_at ||
	    train->opt_at >= train->cb.size)
		return -EINVAL;
	vtpu_cmdbuf_init(&update->cb);
	for (i = 0; i < VG_NBUFS; i++) /* the same placeholders, in order */
		vtpu_cmdbuf_use(&update->cb, &update->slots[i]);
	for (pos = train->opt_at; !ret && pos < train->cb.size;) {
		at = pos;
		if (!vtpu_engine_next(train->cb.data, train->cb.size, &pos))
			break;
		ret = vtpu_cmdbuf_append(&update->cb, train->cb.data + at);
		update->commands++;
	}
	ret = ret ?: update->cb.error;
	if (ret) {
		vg_program_fini(update);
		return ret;
	}
	update->kind = VG_PROG_TRAIN;
	update->batch = train->batch;
	update->work_bytes = train->work_bytes;
	update->naive_bytes = train->naive_bytes;
	update->grads_offset = train->grads_offset;
	train->cb.size = train->opt_at;
	train->commands -= update->commands;
	train->opt_at = 0;
	return 0;
}

void vg_program_fini(struct vg_program *prog)
{
	vtpu_cmdbuf_fini(&prog->cb);
	memset(prog, 0, sizeof(*prog));
}
