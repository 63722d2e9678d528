// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The command-stream validator: the device's only line of defence against
 * user space. Everything here is integer code, built without floating
 * point in the kernel, so it may run outside kernel_fpu_begin()/end().
 *
 * Overflow: dimensions are at most VTPU_MAX_DIM (2^24) and leading
 * dimensions at most 2^32, so an operand's extent ((rows - 1) * ld + cols)
 * * esize stays below 2^59; offsets are compared as "offset <= size &&
 * extent <= size - offset", never added. The training ops' element counts
 * are products of up to six dimensions: every partial product is checked
 * against VTPU_MAX_ELEMS (2^36) by division before it is formed, so
 * extents stay below 2^38 bytes.
 */
#include "engine_internal.h"

struct vtpu_engine_check {
	const u64 *buf_sizes;
	u32 nbufs;
	struct vtpu_engine_error *err;
};

static int reject(struct vtpu_engine_check *v, u32 operand, u32 reason)
{
	v->err->operand = operand;
	v->err->reason = reason;
	return -EINVAL;
}

/* An operand the command uses: index, alignment (the table's), bounds. */
static int check_operand(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *cmd, u32 id)
{
	const struct vtpu_operand *o;
	u64 bytes, size;
	u32 align;

	vtpu_operand_info(cmd, id, &o, &bytes, &align);
	if (o->pad)
		return reject(v, id, VTPU_ERR_BAD_PAD);
	if (o->buf >= v->nbufs)
		return reject(v, id, VTPU_ERR_BAD_BUFFER);
	if (o->offset % align)
		return reject(v, id, VTPU_ERR_MISALIGNED);
	size = v->buf_sizes[o->buf];
	if (o->offset > size || bytes > size - o->offset)
		return reject(v, id, VTPU_ERR_OUT_OF_BOUNDS);
	return 0;
}

/* Do the byte ranges of operands x and y (both checked) intersect? */
static bool overlap(const struct vtpu_cmd_hdr *cmd, u32 x, u32 y)
{
	const struct vtpu_operand *ox, *oy;
	u64 bx, by;

	vtpu_engine_operand(cmd, x, &ox, &bx);
	vtpu_engine_operand(cmd, y, &oy, &by);
	return ox->buf == oy->buf && ox->offset < oy->offset + by &&
	       oy->offset < ox->offset + bx;
}

static bool dim_ok(u32 d)
{
	return d >= 1 && d <= VTPU_MAX_DIM;
}

/*
 * Panels (VTPU_GEMM_PANEL columns each) fill a matrix's rows x cols
 * elements exactly when the leading dimension is cols: the bounds checked
 * for a packed row-major matrix are then the panels' too.
 */
static int check_panels(struct vtpu_engine_check *v, const struct vtpu_cmd_gemm *g)
{
	u32 bcols = (g->flags & VTPU_GEMM_TRANS_B) ? g->k : g->n;

	if (g->flags & VTPU_GEMM_B_PANELS) {
		if (g->dtype != VTPU_DTYPE_F32)
			return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_DTYPE);
		if (bcols % VTPU_GEMM_PANEL)
			return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_SHAPE);
		if (g->ldb != bcols)
			return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_STRIDE);
	}
	if (g->flags & VTPU_GEMM_C_PANELS) {
		if (g->n % VTPU_GEMM_PANEL)
			return reject(v, VTPU_OPERAND_C, VTPU_ERR_BAD_SHAPE);
		if (g->ldc != g->n)
			return reject(v, VTPU_OPERAND_C, VTPU_ERR_BAD_STRIDE);
	}
	return 0;
}

int vtpu_gemm_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_gemm *g = (const void *)hdr;
	const struct vtpu_cmd_hdr *cmd = &g->hdr;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u32 es = vtpu_dtype_size(g->dtype);
	int ret;

	if (g->flags & ~VTPU_GEMM_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(g->m) || !dim_ok(g->n) || !dim_ok(g->k))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* A and B are f32 or bf16 (es = 0: unknown); C and bias are f32 */
	if (!es)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_DTYPE);
	if (g->lda < (ta ? g->m : g->k))
		return reject(v, VTPU_OPERAND_A, VTPU_ERR_BAD_STRIDE);
	if (g->ldb < (tb ? g->k : g->n))
		return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_STRIDE);
	if (g->ldc < g->n)
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_BAD_STRIDE);
	ret = check_panels(v, g);
	if (ret)
		return ret;

	ret = check_operand(v, cmd, VTPU_OPERAND_A);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_B);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_C);
	if (ret)
		return ret;
	if (g->flags & VTPU_GEMM_BIAS) {
		ret = check_operand(v, cmd, VTPU_OPERAND_BIAS);
		if (ret)
			return ret;
		if (overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_BIAS))
			return reject(v, VTPU_OPERAND_C, VTPU_ERR_OVERLAP);
	} else if (g->bias.buf || g->bias.pad || g->bias.offset) {
		/* Unused operands must be zero so they can gain a meaning. */
		return reject(v, VTPU_OPERAND_BIAS, VTPU_ERR_BAD_PAD);
	}
	/* Tiles of C are written while other tiles read A and B. */
	if (overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_A) ||
	    overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_B))
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_OVERLAP);
	return 0;
}

int vtpu_fill_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_fill *f = (const void *)hdr;

	if (!f->count)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_operand(v, &f->hdr, VTPU_OPERAND_DST);
}

int vtpu_copy_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_copy *c = (const void *)hdr;
	int ret;

	if (!c->bytes || c->bytes > (u64)VTPU_MAX_DIM * VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operand(v, &c->hdr, VTPU_OPERAND_DST);
	if (!ret)
		ret = check_operand(v, &c->hdr, VTPU_OPERAND_SRC);
	if (ret)
		return ret;
	if (overlap(&c->hdr, VTPU_OPERAND_DST, VTPU_OPERAND_SRC))
		return reject(v, VTPU_OPERAND_DST, VTPU_ERR_OVERLAP);
	return 0;
}

/* ---- the training ops ---- */

/* Operands a command does not use must be all zero. */
static int check_unused(struct vtpu_engine_check *v, const struct vtpu_cmd_hdr *cmd,
			u32 id)
{
	const struct vtpu_operand *o;
	u64 bytes;

	vtpu_engine_operand(cmd, id, &o, &bytes);
	if (o->buf || o->pad || o->offset)
		return reject(v, id, VTPU_ERR_BAD_PAD);
	return 0;
}

/* Check @n operands @ids. */
static int check_operands(struct vtpu_engine_check *v,
			  const struct vtpu_cmd_hdr *cmd, const u32 *ids, u32 n)
{
	u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = check_operand(v, cmd, ids[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Outputs @outs may overlap nothing: neither each other nor inputs @ins
 * (inputs may overlap each other). Names the output.
 */
static int check_outputs(struct vtpu_engine_check *v, const struct vtpu_cmd_hdr *cmd,
			 const u32 *outs, u32 nout, const u32 *ins, u32 nin)
{
	u32 i, j;

	for (i = 0; i < nout; i++) {
		for (j = i + 1; j < nout; j++)
			if (overlap(cmd, outs[i], outs[j]))
				return reject(v, outs[i], VTPU_ERR_OVERLAP);
		for (j = 0; j < nin; j++)
			if (overlap(cmd, outs[i], ins[j]))
				return reject(v, outs[i], VTPU_ERR_OVERLAP);
	}
	return 0;
}

/*
 * Operands @ids, outputs first: @nout outputs, then @nin inputs, each
 * valid, the outputs overlapping nothing (check_outputs()).
 */
static int check_ids(struct vtpu_engine_check *v,
		     const struct vtpu_cmd_hdr *cmd, const u32 *ids, u32 nout,
		     u32 nin)
{
	int ret = check_operands(v, cmd, ids, nout + nin);

	if (!ret)
		ret = check_outputs(v, cmd, ids, nout, ids + nout, nin);
	return ret;
}

/* One input @in and one output @out: each valid, the output apart from it. */
static int check_in_out(struct vtpu_engine_check *v,
			const struct vtpu_cmd_hdr *cmd, u32 in, u32 out)
{
	int ret;

	ret = check_operand(v, cmd, in);
	if (!ret)
		ret = check_operand(v, cmd, out);
	if (!ret)
		ret = check_outputs(v, cmd, &out, 1, &in, 1);
	return ret;
}

/* Reject unless the window geometry is valid and its counts fit. */
static int check_stride(struct vtpu_engine_check *v, const struct vtpu_window *w)
{
	if (!w->stride_h || !w->stride_w || w->stride_h > VTPU_MAX_DIM ||
	    w->stride_w > VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	return 0;
}

static int check_window(struct vtpu_engine_check *v, const struct vtpu_window *w)
{
	struct vtpu_engine_window g;
	u64 rows, cols;
	int ret = check_stride(v, w);

	if (ret)
		return ret;
	if (!vtpu_window_decode(w, &g) ||
	    !vtpu_window_counts(&g, &rows, &cols))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return 0;
}

int vtpu_im2col_check(struct vtpu_engine_check *v,
		      const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_im2col *c = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_DST, in = VTPU_OPERAND_SRC;
	int ret;

	if (c->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (c->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	ret = check_window(v, &c->win);
	if (ret)
		return ret;
	return check_in_out(v, &c->hdr, in, out);
}

int vtpu_pool_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_pool *p = (const void *)hdr;
	/* outputs first */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_INDEX,
				   VTPU_OPERAND_X };
	static const u32 bwd[] = { VTPU_OPERAND_DX, VTPU_OPERAND_DY,
				   VTPU_OPERAND_INDEX };
	bool grad = p->hdr.opcode == VTPU_OP_MAXPOOL_GRAD;
	const u32 *ids = grad ? bwd : fwd;
	u32 nout = grad ? 1 : 2;
	struct vtpu_engine_window g;
	u64 rows, cols;
	int ret;

	if (p->flags & ~VTPU_POOL_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (p->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!p->win.stride_h || !p->win.stride_w ||
	    p->win.stride_h > VTPU_MAX_DIM || p->win.stride_w > VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	/* the window with its end pads (h + 2 pad + end >= k) */
	if (!vtpu_pool_decode(p, &g) || !vtpu_window_counts(&g, &rows, &cols))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* index holds a pixel number y * w + x */
	if ((u64)p->win.h * p->win.w > 0xffffffffull)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_ids(v, &p->hdr, ids, nout, 3 - nout);
	return ret;
}

int vtpu_avgpool_check(struct vtpu_engine_check *v,
		       const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_avgpool *p = (const void *)hdr;
	struct vtpu_engine_window g;
	bool grad = p->hdr.opcode == VTPU_OP_AVGPOOL_GRAD;
	u32 out = grad ? VTPU_OPERAND_DX : VTPU_OPERAND_Y;
	u32 in = grad ? VTPU_OPERAND_DY : VTPU_OPERAND_X;

	if (p->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (p->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!p->win.stride_h || !p->win.stride_w ||
	    p->win.stride_h > VTPU_MAX_DIM || p->win.stride_w > VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	if (!vtpu_avgpool_decode(p, &g))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_in_out(v, &p->hdr, in, out);
}

/* Which operands and scalars each elementwise sub-op uses. */
#define EW_Y (1u << 0)
#define EW_ALPHA (1u << 1)
#define EW_BETA (1u << 2)

static const u8 ew_uses[VTPU_EW_COUNT] = {
	[VTPU_EW_ADD] = EW_Y,
	[VTPU_EW_SUB] = EW_Y,
	[VTPU_EW_MUL] = EW_Y,
	[VTPU_EW_SCALE] = EW_ALPHA,
	[VTPU_EW_AXPY] = EW_Y | EW_ALPHA,
	[VTPU_EW_AXPBY] = EW_Y | EW_ALPHA | EW_BETA,
	[VTPU_EW_RELU] = 0,
	[VTPU_EW_RELU_GRAD] = EW_Y,
	[VTPU_EW_ADD_SCALAR] = EW_ALPHA,
	[VTPU_EW_SIGMOID] = 0,
	[VTPU_EW_SIGMOID_GRAD] = EW_Y,
	[VTPU_EW_TANH] = 0,
	[VTPU_EW_TANH_GRAD] = EW_Y,
};

/* z may be exactly @in (element i read before element i is written). */
static int check_alias(struct vtpu_engine_check *v, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_operand *z,
		       const struct vtpu_operand *in, u32 in_id)
{
	if (z->buf == in->buf && z->offset == in->offset)
		return 0;
	if (overlap(cmd, VTPU_OPERAND_Z, in_id))
		return reject(v, VTPU_OPERAND_Z, VTPU_ERR_OVERLAP);
	return 0;
}

int vtpu_ew_check(struct vtpu_engine_check *v,
		  const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_elementwise *e = (const void *)hdr;
	const struct vtpu_cmd_hdr *cmd = &e->hdr;
	u32 uses;
	int ret;

	if (e->op >= VTPU_EW_COUNT)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	uses = ew_uses[e->op];
	if (e->pad || (!(uses & EW_ALPHA) && e->alpha) ||
	    (!(uses & EW_BETA) && e->beta))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!e->count || e->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operand(v, cmd, VTPU_OPERAND_X);
	if (!ret)
		ret = (uses & EW_Y) ? check_operand(v, cmd, VTPU_OPERAND_Y) :
				      check_unused(v, cmd, VTPU_OPERAND_Y);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_Z);
	if (!ret)
		ret = check_alias(v, cmd, &e->z, &e->x, VTPU_OPERAND_X);
	if (!ret && (uses & EW_Y))
		ret = check_alias(v, cmd, &e->z, &e->y, VTPU_OPERAND_Y);
	return ret;
}

int vtpu_reduce_check(struct vtpu_engine_check *v,
		      const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_reduce *r = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_Y, in = VTPU_OPERAND_X;

	if (r->op > VTPU_REDUCE_SUMSQ_ROWS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(r->m) || !dim_ok(r->n))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (r->ldx < r->n)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_STRIDE);
	return check_in_out(v, &r->hdr, in, out);
}

int vtpu_argmax_check(struct vtpu_engine_check *v,
		      const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_argmax *a = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_INDEX, in = VTPU_OPERAND_X;

	if (a->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(a->m) || !dim_ok(a->n))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (a->ldx < a->n)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_STRIDE);
	/* both below 2^32 */
	if ((u64)a->m * a->ldx > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_SHAPE);
	return check_in_out(v, hdr, in, out);
}

int vtpu_xent_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_softmax_xent *x = (const void *)hdr;
	static const u32 ins[] = { VTPU_OPERAND_X, VTPU_OPERAND_LABELS };
	const struct vtpu_cmd_hdr *cmd = &x->hdr;
	u32 outs[4] = { VTPU_OPERAND_LOSS, VTPU_OPERAND_CORRECT };
	u32 nout = 2;
	int ret;

	if (x->flags & ~VTPU_XENT_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(x->m) || !x->n || x->n > VTPU_XENT_MAX_CLASSES ||
	    (u64)x->m * x->n > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (x->flags & VTPU_XENT_DLOGITS)
		outs[nout++] = VTPU_OPERAND_DX;
	else if (check_unused(v, cmd, VTPU_OPERAND_DX))
		return -EINVAL;
	if (x->flags & VTPU_XENT_PROBS)
		outs[nout++] = VTPU_OPERAND_PROBS;
	else if (check_unused(v, cmd, VTPU_OPERAND_PROBS))
		return -EINVAL;
	ret = check_operands(v, cmd, ins, 2);
	if (!ret)
		ret = check_operands(v, cmd, outs, nout);
	if (!ret)
		ret = check_outputs(v, cmd, outs, nout, ins, 2);
	return ret;
}

int vtpu_softmax_check(struct vtpu_engine_check *v,
		       const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_softmax *s = (const void *)hdr;
	const struct vtpu_cmd_hdr *cmd = &s->hdr;
	bool grad = cmd->opcode == VTPU_OP_SOFTMAX_GRAD;
	/* the output first, then the inputs */
	u32 ids[4] = { VTPU_OPERAND_Y, VTPU_OPERAND_X };
	u32 n = 2;
	int ret;

	if (grad) {
		ids[0] = VTPU_OPERAND_DX;
		ids[1] = VTPU_OPERAND_Y;
		ids[n++] = VTPU_OPERAND_DY;
	}
	if (s->flags & ~VTPU_SOFTMAX_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(s->m) || !s->n || s->n > VTPU_SOFTMAX_MAX_COLS ||
	    !dim_ok(s->rows_per_group) || (u64)s->m * s->n > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = grad ? 0 : check_unused(v, cmd, VTPU_OPERAND_DY);
	if (!ret && (s->flags & VTPU_SOFTMAX_LENGTHS))
		ids[n++] = VTPU_OPERAND_LENGTHS;
	else if (!ret)
		ret = check_unused(v, cmd, VTPU_OPERAND_LENGTHS);
	if (!ret)
		ret = check_ids(v, cmd, ids, 1, n - 1);
	return ret;
}

int vtpu_additive_check(struct vtpu_engine_check *v,
			const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_additive_score *a = (const void *)hdr;
	const struct vtpu_cmd_hdr *cmd = &a->hdr;
	/* the outputs first, then the inputs */
	static const u32 fwd[] = { VTPU_OPERAND_C, VTPU_OPERAND_A,
				   VTPU_OPERAND_B, VTPU_OPERAND_W };
	static const u32 bwd[] = { VTPU_OPERAND_DA, VTPU_OPERAND_DB,
				   VTPU_OPERAND_DW, VTPU_OPERAND_A,
				   VTPU_OPERAND_B, VTPU_OPERAND_W,
				   VTPU_OPERAND_C };
	static const u32 unused[] = { VTPU_OPERAND_DA, VTPU_OPERAND_DB,
				      VTPU_OPERAND_DW };
	u32 i;
	int ret;

	if (a->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (a->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!vtpu_additive_ok(a))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (cmd->opcode == VTPU_OP_ADDITIVE_SCORE_GRAD)
		return check_ids(v, cmd, bwd, 3, 4);
	for (i = 0; i < 3; i++) {
		ret = check_unused(v, cmd, unused[i]);
		if (ret)
			return ret;
	}
	return check_ids(v, cmd, fwd, 1, 3);
}

int vtpu_sgd_check(struct vtpu_engine_check *v,
		   const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_sgd *s = (const void *)hdr;
	static const u32 outs[] = { VTPU_OPERAND_PARAM, VTPU_OPERAND_MOM };
	static const u32 in = VTPU_OPERAND_GRAD;
	u32 nout = s->momentum ? 2 : 1;
	int ret;

	if ((s->flags & ~VTPU_SGD_FLAGS) ||
	    ((s->flags & VTPU_SGD_NESTEROV) && !s->momentum))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!s->count || s->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (!s->momentum && check_unused(v, &s->hdr, VTPU_OPERAND_MOM))
		return -EINVAL;
	ret = check_operand(v, &s->hdr, in);
	if (!ret)
		ret = check_operands(v, &s->hdr, outs, nout);
	if (!ret)
		ret = check_outputs(v, &s->hdr, outs, nout, &in, 1);
	return ret;
}

int vtpu_adam_step_check(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *hdr)
{
	return check_operand(v, hdr, VTPU_OPERAND_STATE);
}

int vtpu_adam_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_adam *a = (const void *)hdr;
	static const u32 outs[] = { VTPU_OPERAND_PARAM, VTPU_OPERAND_MOM,
				    VTPU_OPERAND_VEL };
	static const u32 ins[] = { VTPU_OPERAND_GRAD, VTPU_OPERAND_STATE };
	int ret;

	if (a->flags & ~VTPU_ADAM_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!a->count || a->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operands(v, &a->hdr, ins, 2);
	if (!ret)
		ret = check_operands(v, &a->hdr, outs, 3);
	if (!ret)
		ret = check_outputs(v, &a->hdr, outs, 3, ins, 2);
	return ret;
}

int vtpu_cast_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_cast *c = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_DST, in = VTPU_OPERAND_SRC;

	if (c->mode > VTPU_CAST_U8_TO_F32)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_DTYPE);
	if (c->pad ||
	    (c->mode != VTPU_CAST_U8_TO_F32 && (c->scale || c->shift)))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!c->count || c->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_in_out(v, &c->hdr, in, out);
}

/* 0 <= rate < 1, as binary32 bits: the positive numbers below 1.0f */
#define F32_ONE_BITS 0x3f800000u

int vtpu_dropout_check(struct vtpu_engine_check *v,
		       const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_dropout *d = (const void *)hdr;
	static const u32 outs[2] = { VTPU_OPERAND_Z, VTPU_OPERAND_MASK };
	static const u32 ins[2] = { VTPU_OPERAND_X, VTPU_OPERAND_STEP };
	const struct vtpu_cmd_hdr *cmd = &d->hdr;
	int ret;

	if (d->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (d->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!d->count || d->count > VTPU_MAX_ELEMS || d->rate >= F32_ONE_BITS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operands(v, cmd, ins, 2);
	if (!ret)
		ret = check_operands(v, cmd, outs, 2);
	/* z may be exactly x; the mask and z overlap nothing else */
	if (!ret)
		ret = check_alias(v, cmd, &d->z, &d->x, VTPU_OPERAND_X);
	if (!ret)
		ret = check_outputs(v, cmd, &outs[1], 1, ins, 2);
	if (!ret && overlap(cmd, VTPU_OPERAND_Z, VTPU_OPERAND_MASK))
		ret = reject(v, VTPU_OPERAND_Z, VTPU_ERR_OVERLAP);
	if (!ret && overlap(cmd, VTPU_OPERAND_Z, VTPU_OPERAND_STEP))
		ret = reject(v, VTPU_OPERAND_Z, VTPU_ERR_OVERLAP);
	return ret;
}

int vtpu_augment_check(struct vtpu_engine_check *v,
		       const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_image_augment *a = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_Y;
	static const u32 ins[2] = { VTPU_OPERAND_X, VTPU_OPERAND_STEP };
	u64 elems;
	int ret;

	if (a->flags & ~VTPU_AUGMENT_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(a->n) || !dim_ok(a->h) || !dim_ok(a->w) ||
	    !dim_ok(a->c))
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_SHAPE);
	if (!a->oh || a->oh > a->h || !a->ow || a->ow > a->w)
		return reject(v, VTPU_OPERAND_Y, VTPU_ERR_BAD_SHAPE);
	/* n * h and the partial products below 2^49: no overflow */
	elems = (u64)a->n * a->h;
	if (elems > VTPU_MAX_ELEMS / a->w)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_SHAPE);
	elems *= a->w;
	if (elems > VTPU_MAX_ELEMS / a->c)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_SHAPE);
	ret = check_operands(v, hdr, ins, 2);
	if (!ret)
		ret = check_operand(v, hdr, out);
	if (!ret)
		ret = check_outputs(v, hdr, &out, 1, ins, 2);
	return ret;
}

/* 0 < max_norm < +Inf, as binary32 bits: positive, below the Inf pattern */
#define F32_INF_BITS 0x7f800000u

int vtpu_clip_norm_check(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_clip_norm *c = (const void *)hdr;
	static const u32 out = VTPU_OPERAND_X, in = VTPU_OPERAND_SUMSQ;

	if (c->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	/* the bits of +0 and of the denormals too: they read as 0 (DAZ) */
	if (!c->count || c->count > VTPU_MAX_ELEMS ||
	    c->max_norm < 0x00800000u || c->max_norm >= F32_INF_BITS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* tiles scale x while others read sumsq */
	return check_in_out(v, hdr, in, out);
}

int vtpu_conv_pool_check(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_conv_pool *c = (const void *)hdr;
	/* outputs first; the routes (INDEX) last: bytes, any alignment */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_INDEX,
				   VTPU_OPERAND_X, VTPU_OPERAND_W,
				   VTPU_OPERAND_BIAS };
	static const u32 bwd[] = { VTPU_OPERAND_DW, VTPU_OPERAND_DBIAS,
				   VTPU_OPERAND_X, VTPU_OPERAND_DY,
				   VTPU_OPERAND_INDEX };
	const struct vtpu_cmd_hdr *cmd = &c->hdr;
	bool wgrad = cmd->opcode == VTPU_OP_CONV_POOL_WGRAD;
	const u32 *ids = wgrad ? bwd : fwd;
	struct vtpu_engine_convpool cp;
	int ret;

	if (c->flags & ~(wgrad ? 0 : VTPU_CONV_FLAGS))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!c->pool_stride_h || !c->pool_stride_w ||
	    c->pool_stride_h > VTPU_MAX_DIM || c->pool_stride_w > VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	ret = check_window(v, &c->win);
	if (ret)
		return ret;
	if (!vtpu_convpool_decode(c, &cp))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* the forward command has no dy, the gradient no y */
	ret = check_unused(v, cmd, wgrad ? VTPU_OPERAND_Y : VTPU_OPERAND_DY);
	if (!ret)
		ret = check_ids(v, cmd, ids, 2, 3);
	return ret;
}

/* CONV and DWCONV: the forward command and its two gradients */
enum conv_kind { CONV_FWD, CONV_DGRAD, CONV_WGRAD };

static enum conv_kind conv_kind(u32 opcode)
{
	switch (opcode) {
	case VTPU_OP_CONV:
	case VTPU_OP_DWCONV:
		return CONV_FWD;
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_DWCONV_DGRAD:
		return CONV_DGRAD;
	default:
		return CONV_WGRAD;
	}
}

/* The flags a kind takes: the forward's bias and ReLU, else ACCUMULATE */
static int check_conv_flags(struct vtpu_engine_check *v, enum conv_kind k,
			    u32 flags)
{
	u32 ok = k == CONV_FWD ? VTPU_CONV_BIAS | VTPU_CONV_RELU :
				 VTPU_CONV_ACCUMULATE;

	if (flags & ~ok)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	return 0;
}

/* A kind's operands, the bias only with VTPU_CONV_BIAS in @flags */
static int check_conv_operands(struct vtpu_engine_check *v,
			       const struct vtpu_cmd_hdr *cmd,
			       enum conv_kind k, u32 flags)
{
	/* outputs first */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_X,
				   VTPU_OPERAND_W, VTPU_OPERAND_BIAS };
	static const u32 dgrad[] = { VTPU_OPERAND_DX, VTPU_OPERAND_DY,
				     VTPU_OPERAND_W };
	static const u32 wgrad[] = { VTPU_OPERAND_DW, VTPU_OPERAND_X,
				     VTPU_OPERAND_DY };
	const u32 *ids = k == CONV_FWD ? fwd : k == CONV_DGRAD ? dgrad : wgrad;
	bool bias = flags & VTPU_CONV_BIAS;
	int ret = 0;

	if (!bias)
		ret = check_unused(v, cmd, VTPU_OPERAND_BIAS);
	if (!ret)
		ret = check_ids(v, cmd, ids, 1, bias ? 3 : 2);
	return ret;
}

int vtpu_conv_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_conv *c = (const void *)hdr;
	enum conv_kind k = conv_kind(hdr->opcode);
	struct vtpu_engine_window g;
	u64 rows;
	int ret;

	ret = check_conv_flags(v, k, c->flags);
	if (!ret)
		ret = check_window(v, &c->win);
	if (ret)
		return ret;
	if (k == CONV_DGRAD && (c->win.stride_h != 1 || c->win.stride_w != 1))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	if (!vtpu_conv_decode(c, &g, &rows))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_conv_operands(v, hdr, k, c->flags);
}

int vtpu_embedding_check(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_embedding *e = (const void *)hdr;
	/* the output first */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_INDEX,
				   VTPU_OPERAND_W };
	static const u32 bwd[] = { VTPU_OPERAND_DW, VTPU_OPERAND_INDEX,
				   VTPU_OPERAND_DY };
	bool grad = hdr->opcode == VTPU_OP_EMBEDDING_GRAD;
	const u32 *ids = grad ? bwd : fwd;
	int ret;

	if (e->flags & ~(grad ? VTPU_EMBEDDING_FLAGS : 0))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!vtpu_embedding_ok(e))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_ids(v, hdr, ids, 1, 2);
	return ret;
}

int vtpu_gemm_batched_check(struct vtpu_engine_check *v,
			    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_gemm_batched *g = (const void *)hdr;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	int ret;

	if (g->flags & ~VTPU_GEMM_BATCHED_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (g->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!dim_ok(g->batch) || !dim_ok(g->m) || !dim_ok(g->n) ||
	    !dim_ok(g->k) ||
	    (u64)g->m * g->n > VTPU_GEMM_BATCHED_MAX_C / g->batch)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (!vtpu_dtype_size(g->dtype))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_DTYPE);
	if (g->lda < (ta ? g->m : g->k) || g->stride_a > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_A, VTPU_ERR_BAD_STRIDE);
	if (g->ldb < (tb ? g->k : g->n) || g->stride_b > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_STRIDE);
	if (g->ldc < g->n || g->stride_c > VTPU_MAX_ELEMS ||
	    !vtpu_gemm_batched_disjoint(g))
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_BAD_STRIDE);
	ret = check_operand(v, hdr, VTPU_OPERAND_A);
	if (!ret)
		ret = check_operand(v, hdr, VTPU_OPERAND_B);
	if (!ret)
		ret = check_operand(v, hdr, VTPU_OPERAND_C);
	if (ret)
		return ret;
	/* Tiles of the Cs are written while other tiles read As and Bs. */
	if (overlap(hdr, VTPU_OPERAND_C, VTPU_OPERAND_A) ||
	    overlap(hdr, VTPU_OPERAND_C, VTPU_OPERAND_B))
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_OVERLAP);
	return 0;
}

/* Output @out may be exactly input @in (in place), else not overlap it. */
static int check_same_or_apart(struct vtpu_engine_check *v,
			       const struct vtpu_cmd_hdr *cmd, u32 out, u32 in)
{
	const struct vtpu_operand *o, *i;
	u64 bytes;

	vtpu_engine_operand(cmd, out, &o, &bytes);
	vtpu_engine_operand(cmd, in, &i, &bytes);
	if (o->buf == i->buf && o->offset == i->offset)
		return 0;
	if (overlap(cmd, out, in))
		return reject(v, out, VTPU_ERR_OVERLAP);
	return 0;
}

/*
 * LSTM_CELL: inputs gates, c_prev; outputs act (may be gates in place), c,
 * tc, h. LSTM_CELL_GRAD: inputs act, c_prev, tc, dh, dc_next; outputs
 * dgates (may be act in place), dc_prev (may be dc_next in place). Both
 * 4-gate operands of a command share the strides, so in place is the
 * same elements.
 */
int vtpu_lstm_check(struct vtpu_engine_check *v,
		    const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_lstm_cell *l = (const void *)hdr;
	bool grad = hdr->opcode == VTPU_OP_LSTM_CELL_GRAD;
	static const u32 fwd[] = { VTPU_OPERAND_GATES, VTPU_OPERAND_CELL_PREV,
				   VTPU_OPERAND_ACT, VTPU_OPERAND_CELL,
				   VTPU_OPERAND_TANH_CELL,
				   VTPU_OPERAND_HIDDEN };
	static const u32 bwd[] = { VTPU_OPERAND_ACT, VTPU_OPERAND_CELL_PREV,
				   VTPU_OPERAND_TANH_CELL,
				   VTPU_OPERAND_DHIDDEN, VTPU_OPERAND_DCELL,
				   VTPU_OPERAND_DGATES,
				   VTPU_OPERAND_DCELL_PREV };
	const u32 *ids = grad ? bwd : fwd;
	u32 nin = grad ? 5 : 2, nout = grad ? 2 : 4;
	u64 h = l->hidden;
	int ret;

	if (l->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (l->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!dim_ok(l->batch) || !dim_ok(l->hidden) ||
	    (u64)l->batch * h > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* the strides' range, disjoint blocks, the span in the limit */
	if (!vtpu_lstm_gates_span(l))
		return reject(v, ids[0], VTPU_ERR_BAD_STRIDE);
	ret = check_operands(v, hdr, ids, nin + nout);
	if (ret)
		return ret;
	/* the in-place pairs, then everything else apart */
	ret = check_same_or_apart(v, hdr, ids[nin], ids[0]);
	if (!ret && grad)
		ret = check_same_or_apart(v, hdr, VTPU_OPERAND_DCELL_PREV,
					  VTPU_OPERAND_DCELL);
	if (!ret)	/* outputs against each other and the inputs but one */
		ret = check_outputs(v, hdr, ids + nin, nout, ids + 1,
				    grad ? 3 : 1);
	if (!ret)	/* the other outputs against the in-place input */
		ret = check_outputs(v, hdr, ids + nin + 1, nout - 1, ids, 1);
	if (!ret && grad)	/* dgates against dc_next */
		ret = check_outputs(v, hdr, ids + nin, 1, ids + 4, 1);
	return ret;
}

int vtpu_engine_validate(const void *cmds, u32 size, const u64 *buf_sizes,
			 u32 nbufs, struct vtpu_engine_error *err)
{
	struct vtpu_engine_check v = { .buf_sizes = buf_sizes, .nbufs = nbufs, .err = err };
	const struct vtpu_engine_op_desc *desc;
	const struct vtpu_cmd_hdr *cmd;
	u32 pos = 0, index = 0;
	int ret;

	err->cmd = 0;
	err->offset = 0;
	err->operand = VTPU_OPERAND_NONE;
	err->reason = VTPU_ERR_NONE;
	if (!size || size % 8)
		return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);

	for (; pos < size; index++) {
		err->cmd = index;
		err->offset = pos;
		if (size - pos < sizeof(*cmd))
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);
		cmd = (const void *)((const u8 *)cmds + pos);
		desc = vtpu_engine_op_desc(cmd->opcode);
		if (!desc)
			return reject(&v, VTPU_OPERAND_NONE,
				      VTPU_ERR_BAD_OPCODE);
		if (cmd->size > size - pos)
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);
		if (cmd->size != desc->size)
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SIZE);

		ret = desc->check ? desc->check(&v, cmd) : 0;
		if (ret)
			return ret;
		pos += cmd->size;
	}
	err->cmd = 0;
	err->offset = 0;
	return 0;
}

/* BATCHNORM's epsilon: positive, normal (a denormal reads as 0), finite */
static bool bn_eps_ok(u32 bits)
{
	return bits >= 0x00800000u && bits < F32_INF_BITS;
}

int vtpu_batchnorm_check(struct vtpu_engine_check *v,
			 const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_batchnorm *f = (const void *)hdr;
	const struct vtpu_cmd_batchnorm_grad *g = (const void *)hdr;
	bool grad = hdr->opcode == VTPU_OP_BATCHNORM_GRAD;
	/* forward: outputs first (the moving statistics last: in and out) */
	static const u32 ids[7] = { VTPU_OPERAND_Y, VTPU_OPERAND_STATE,
				    VTPU_OPERAND_MOM, VTPU_OPERAND_VEL,
				    VTPU_OPERAND_X, VTPU_OPERAND_W,
				    VTPU_OPERAND_BIAS };
	/* inference: the moving statistics are inputs, STATE is unused */
	static const u32 infer_ids[6] = { VTPU_OPERAND_Y, VTPU_OPERAND_X,
					  VTPU_OPERAND_MOM, VTPU_OPERAND_VEL,
					  VTPU_OPERAND_W, VTPU_OPERAND_BIAS };
	static const u32 gids[7] = { VTPU_OPERAND_DX, VTPU_OPERAND_DW,
				     VTPU_OPERAND_DBIAS, VTPU_OPERAND_X,
				     VTPU_OPERAND_DY, VTPU_OPERAND_W,
				     VTPU_OPERAND_STATE };
	u32 flags = grad ? g->flags : f->flags;
	u32 pad = grad ? g->pad : f->pad;
	bool train = !grad && (flags & VTPU_BATCHNORM_TRAINING);
	int ret;

	if (flags & ~(grad ? 0 : VTPU_BATCHNORM_FLAGS))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	/* rows and channels sit at the same place in both structs */
	if (!dim_ok(f->rows) || !dim_ok(f->channels) ||
	    (u64)f->rows * f->channels > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (grad)
		return check_ids(v, hdr, gids, 3, 4);
	/* momentum 0..1 (+0 and 1.0f included), epsilon positive */
	if (!bn_eps_ok(f->epsilon) || f->momentum > F32_ONE_BITS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (train)
		return check_ids(v, hdr, ids, 4, 3);
	ret = check_unused(v, hdr, VTPU_OPERAND_STATE);
	if (!ret)
		ret = check_ids(v, hdr, infer_ids, 1, 5);
	return ret;
}

int vtpu_dwconv_check(struct vtpu_engine_check *v,
		      const struct vtpu_cmd_hdr *hdr)
{
	const struct vtpu_cmd_dwconv *c = (const void *)hdr;
	enum conv_kind k = conv_kind(hdr->opcode);
	struct vtpu_engine_window g;
	u64 rows;
	int ret;

	ret = check_conv_flags(v, k, c->flags);
	/* not check_window(): it sizes im2col's columns, DWCONV has none */
	if (!ret)
		ret = check_stride(v, &c->win);
	if (ret)
		return ret;
	if (!vtpu_dwconv_decode(c, &g, &rows))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_conv_operands(v, hdr, k, c->flags);
}
