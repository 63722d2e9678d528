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

static const u32 cmd_sizes[VTPU_OP_COUNT] = {
	[VTPU_OP_NOP] = sizeof(struct vtpu_cmd_hdr),
	[VTPU_OP_GEMM] = sizeof(struct vtpu_cmd_gemm),
	[VTPU_OP_FILL] = sizeof(struct vtpu_cmd_fill),
	[VTPU_OP_COPY] = sizeof(struct vtpu_cmd_copy),
	[VTPU_OP_IM2COL] = sizeof(struct vtpu_cmd_im2col),
	[VTPU_OP_COL2IM] = sizeof(struct vtpu_cmd_im2col),
	[VTPU_OP_MAXPOOL] = sizeof(struct vtpu_cmd_pool),
	[VTPU_OP_MAXPOOL_GRAD] = sizeof(struct vtpu_cmd_pool),
	[VTPU_OP_ELEMENTWISE] = sizeof(struct vtpu_cmd_elementwise),
	[VTPU_OP_REDUCE] = sizeof(struct vtpu_cmd_reduce),
	[VTPU_OP_SOFTMAX_XENT] = sizeof(struct vtpu_cmd_softmax_xent),
	[VTPU_OP_SGD] = sizeof(struct vtpu_cmd_sgd),
	[VTPU_OP_ADAM_STEP] = sizeof(struct vtpu_cmd_adam_step),
	[VTPU_OP_ADAM] = sizeof(struct vtpu_cmd_adam),
	[VTPU_OP_CAST] = sizeof(struct vtpu_cmd_cast),
	[VTPU_OP_DROPOUT] = sizeof(struct vtpu_cmd_dropout),
	[VTPU_OP_CONV_POOL] = sizeof(struct vtpu_cmd_conv_pool),
	[VTPU_OP_CONV_POOL_WGRAD] = sizeof(struct vtpu_cmd_conv_pool),
	[VTPU_OP_CONV] = sizeof(struct vtpu_cmd_conv),
	[VTPU_OP_CONV_DGRAD] = sizeof(struct vtpu_cmd_conv),
	[VTPU_OP_CONV_WGRAD] = sizeof(struct vtpu_cmd_conv),
};

u32 vtpu_engine_cmd_size(u32 opcode)
{
	return opcode < VTPU_OP_COUNT ? cmd_sizes[opcode] : 0;
}

/* *r = a * b if it is at most VTPU_MAX_ELEMS (a, b < 2^64, no overflow). */
static bool mul_elems(u64 a, u64 b, u64 *r)
{
	if (a && b > VTPU_MAX_ELEMS / a)
		return false;
	*r = a * b;
	return *r <= VTPU_MAX_ELEMS;
}

static bool window_dim_ok(u32 d)
{
	return d >= 1 && d <= VTPU_MAX_DIM;
}

bool vtpu_window_decode(const struct vtpu_window *w,
			struct vtpu_engine_window *g)
{
	u64 hh, ww, img, k;

	memset(g, 0, sizeof(*g));
	if (!window_dim_ok(w->n) || !window_dim_ok(w->h) ||
	    !window_dim_ok(w->w) || !window_dim_ok(w->c) ||
	    !window_dim_ok(w->kh) || !window_dim_ok(w->kw) ||
	    !window_dim_ok(w->stride_h) || !window_dim_ok(w->stride_w) ||
	    w->pad_h >= w->kh || w->pad_w >= w->kw)
		return false;
	/* all terms below 2^26: no overflow */
	hh = (u64)w->h + 2 * (u64)w->pad_h;
	ww = (u64)w->w + 2 * (u64)w->pad_w;
	if (hh < w->kh || ww < w->kw)
		return false;
	if (!mul_elems(w->n, w->h, &img) || !mul_elems(img, w->w, &img) ||
	    !mul_elems(img, w->c, &img) || !mul_elems(w->kh, w->kw, &k) ||
	    !mul_elems(k, w->c, &k))
		return false;
	g->n = w->n;
	g->h = w->h;
	g->w = w->w;
	g->c = w->c;
	g->kh = w->kh;
	g->kw = w->kw;
	g->sh = w->stride_h;
	g->sw = w->stride_w;
	g->ph = w->pad_h;
	g->pw = w->pad_w;
	g->oh = (u32)((hh - w->kh) / w->stride_h + 1);
	g->ow = (u32)((ww - w->kw) / w->stride_w + 1);
	g->kdim = k;
	return true;
}

/*
 * Elements of a window op's outputs: rows = n*oh*ow (windows) and
 * rows * kdim (im2col columns); false past VTPU_MAX_ELEMS.
 */
static bool window_counts(const struct vtpu_engine_window *g, u64 *rows,
			  u64 *cols)
{
	return mul_elems(g->n, g->oh, rows) && mul_elems(*rows, g->ow, rows) &&
	       mul_elems(*rows, g->kdim, cols);
}

/* Extents of the window ops' operands (0 when the geometry is invalid). */
static void window_extents(const struct vtpu_window *w, u64 *image,
			   u64 *out, u64 *cols)
{
	struct vtpu_engine_window g;
	u64 rows = 0, c = 0;

	*image = *out = *cols = 0;
	if (!vtpu_window_decode(w, &g) || !window_counts(&g, &rows, &c))
		return;
	*image = (u64)g.n * g.h * g.w * g.c * 4;
	*out = rows * g.c * 4;
	*cols = c * 4;
}

bool vtpu_convpool_decode(const struct vtpu_cmd_conv_pool *c,
			  struct vtpu_engine_convpool *cp)
{
	struct vtpu_engine_window *g = &cp->win;
	u64 rows, cols, wn, yn;

	memset(cp, 0, sizeof(*cp));
	if (!vtpu_window_decode(&c->win, g) || !window_counts(g, &rows, &cols))
		goto bad;
	if (!window_dim_ok(c->oc) || !window_dim_ok(c->pool_stride_h) ||
	    !window_dim_ok(c->pool_stride_w) || c->pool_h < 1 ||
	    c->pool_h > g->oh || c->pool_w < 1 || c->pool_w > g->ow)
		goto bad;
	/* a route is a window position, below VTPU_CONV_NO_ROUTE */
	if ((u64)c->pool_h * c->pool_w >= VTPU_CONV_NO_ROUTE)
		goto bad;
	cp->oc = c->oc;
	cp->flags = c->flags;
	cp->pkh = c->pool_h;
	cp->pkw = c->pool_w;
	cp->psh = c->pool_stride_h;
	cp->psw = c->pool_stride_w;
	cp->ph = (g->oh - c->pool_h) / c->pool_stride_h + 1;
	cp->pw = (g->ow - c->pool_w) / c->pool_stride_w + 1;
	if (!mul_elems(g->kdim, c->oc, &wn) || !mul_elems(g->n, cp->ph, &yn) ||
	    !mul_elems(yn, cp->pw, &yn) || !mul_elems(yn, c->oc, &yn))
		goto bad;
	return true;
bad:
	memset(cp, 0, sizeof(*cp));
	return false;
}

/*
 * The convolution GEMMs' dimensions are GEMM dimensions: windows (n * oh
 * * ow), pixels (n * h * w), kh * kw * c and, for CONV_DGRAD, kh * kw *
 * oc are at most VTPU_MAX_DIM; CONV_DGRAD wants stride 1.
 */
bool vtpu_conv_decode(const struct vtpu_cmd_conv *c,
		      struct vtpu_engine_window *g, u64 *rows)
{
	u64 cols, pixels, n;

	*rows = 0;
	if (!vtpu_window_decode(&c->win, g) || !window_counts(g, rows, &cols) ||
	    !window_dim_ok(c->oc))
		goto bad;
	pixels = (u64)g->n * g->h * g->w;	/* < 2^36: the image's check */
	if (*rows > VTPU_MAX_DIM || pixels > VTPU_MAX_DIM ||
	    g->kdim > VTPU_MAX_DIM || !mul_elems(*rows, c->oc, &n) ||
	    !mul_elems(g->kdim, c->oc, &n))
		goto bad;
	if (c->hdr.opcode == VTPU_OP_CONV_DGRAD &&
	    (g->sh != 1 || g->sw != 1 ||
	     (u64)g->kh * g->kw * c->oc > VTPU_MAX_DIM))
		goto bad;
	return true;
bad:
	memset(g, 0, sizeof(*g));
	*rows = 0;
	return false;
}

static u32 dtype_size(u32 dtype)
{
	switch (dtype) {
	case VTPU_DTYPE_F32:
		return 4;
	case VTPU_DTYPE_BF16:
		return 2;
	default:
		return 0;
	}
}

/* Bytes a rows x cols matrix with leading dimension ld spans. */
static u64 matrix_bytes(u64 rows, u64 cols, u64 ld, u32 esize)
{
	return ((rows - 1) * ld + cols) * esize;
}

/* Element size of a cast's source or destination. */
static u32 cast_size(u32 mode, bool dst)
{
	switch (mode) {
	case VTPU_CAST_F32_TO_BF16:
		return dst ? 2 : 4;
	case VTPU_CAST_BF16_TO_F32:
		return dst ? 4 : 2;
	default:
		return dst ? 4 : 1;
	}
}

/* The training ops' operands: which field, and how many bytes. */
static int train_operand(const struct vtpu_cmd_hdr *cmd, u32 id,
			 const struct vtpu_operand **opnd, u64 *bytes)
{
	const struct vtpu_cmd_im2col *ic = (const void *)cmd;
	const struct vtpu_cmd_pool *pl = (const void *)cmd;
	const struct vtpu_cmd_elementwise *ew = (const void *)cmd;
	const struct vtpu_cmd_reduce *rd = (const void *)cmd;
	const struct vtpu_cmd_softmax_xent *xe = (const void *)cmd;
	const struct vtpu_cmd_sgd *sg = (const void *)cmd;
	const struct vtpu_cmd_adam_step *as = (const void *)cmd;
	const struct vtpu_cmd_adam *ad = (const void *)cmd;
	const struct vtpu_cmd_cast *ca = (const void *)cmd;
	const struct vtpu_cmd_dropout *dr = (const void *)cmd;
	const struct vtpu_cmd_conv_pool *cv = (const void *)cmd;
	const struct vtpu_cmd_conv *cg = (const void *)cmd;
	bool wgrad = cmd->opcode == VTPU_OP_CONV_POOL_WGRAD;
	bool dgrad = cmd->opcode == VTPU_OP_CONV_DGRAD;
	struct vtpu_engine_convpool cp;
	struct vtpu_engine_window cw;
	u64 image, out, cols, mn = 0;
	bool col2im = cmd->opcode == VTPU_OP_COL2IM;
	bool grad = cmd->opcode == VTPU_OP_MAXPOOL_GRAD;

	*opnd = NULL;
	switch (cmd->opcode) {
	case VTPU_OP_IM2COL:
	case VTPU_OP_COL2IM:
		window_extents(&ic->win, &image, &out, &cols);
		if (id == (col2im ? VTPU_OPERAND_DST : VTPU_OPERAND_SRC)) {
			*opnd = &ic->image;
			*bytes = image;
		} else if (id == (col2im ? VTPU_OPERAND_SRC :
				  VTPU_OPERAND_DST)) {
			*opnd = &ic->cols;
			*bytes = cols;
		}
		break;
	case VTPU_OP_MAXPOOL:
	case VTPU_OP_MAXPOOL_GRAD:
		window_extents(&pl->win, &image, &out, &cols);
		if (id == (grad ? VTPU_OPERAND_DX : VTPU_OPERAND_X)) {
			*opnd = &pl->x;
			*bytes = image;
		} else if (id == (grad ? VTPU_OPERAND_DY : VTPU_OPERAND_Y)) {
			*opnd = &pl->y;
			*bytes = out;
		} else if (id == VTPU_OPERAND_INDEX) {
			*opnd = &pl->index;
			*bytes = out;
		}
		break;
	case VTPU_OP_ELEMENTWISE:
		*bytes = ew->count * 4;
		if (id == VTPU_OPERAND_X)
			*opnd = &ew->x;
		else if (id == VTPU_OPERAND_Y)
			*opnd = &ew->y;
		else if (id == VTPU_OPERAND_Z)
			*opnd = &ew->z;
		break;
	case VTPU_OP_REDUCE:
		if (id == VTPU_OPERAND_X) {
			*opnd = &rd->x;
			*bytes = rd->m ? matrix_bytes(rd->m, rd->n, rd->ldx, 4) : 0;
		} else if (id == VTPU_OPERAND_Y) {
			*opnd = &rd->y;
			*bytes = (u64)(rd->op == VTPU_REDUCE_ROWS ? rd->m :
				       rd->n) * 4;
		}
		break;
	case VTPU_OP_SOFTMAX_XENT:
		mn = (u64)xe->m * xe->n * 4;
		if (id == VTPU_OPERAND_X || id == VTPU_OPERAND_DX ||
		    id == VTPU_OPERAND_PROBS) {
			*opnd = id == VTPU_OPERAND_X ? &xe->logits :
				id == VTPU_OPERAND_DX ? &xe->dlogits :
							&xe->probs;
			*bytes = mn;
		} else if (id == VTPU_OPERAND_LABELS) {
			*opnd = &xe->labels;
			*bytes = (u64)xe->m * 4;
		} else if (id == VTPU_OPERAND_LOSS ||
			   id == VTPU_OPERAND_CORRECT) {
			*opnd = id == VTPU_OPERAND_LOSS ? &xe->loss :
							  &xe->correct;
			*bytes = 4;
		}
		break;
	case VTPU_OP_SGD:
		*bytes = sg->count * 4;
		if (id == VTPU_OPERAND_PARAM)
			*opnd = &sg->param;
		else if (id == VTPU_OPERAND_GRAD)
			*opnd = &sg->grad;
		else if (id == VTPU_OPERAND_MOM)
			*opnd = &sg->mom;
		break;
	case VTPU_OP_ADAM_STEP:
		*bytes = 8;
		if (id == VTPU_OPERAND_STATE)
			*opnd = &as->state;
		break;
	case VTPU_OP_ADAM:
		*bytes = ad->count * 4;
		if (id == VTPU_OPERAND_PARAM) {
			*opnd = &ad->param;
		} else if (id == VTPU_OPERAND_GRAD) {
			*opnd = &ad->grad;
		} else if (id == VTPU_OPERAND_MOM) {
			*opnd = &ad->m;
		} else if (id == VTPU_OPERAND_VEL) {
			*opnd = &ad->v;
		} else if (id == VTPU_OPERAND_STATE) {
			*opnd = &ad->state;
			*bytes = 8;
		}
		break;
	case VTPU_OP_CAST:
		if (id == VTPU_OPERAND_SRC) {
			*opnd = &ca->src;
			*bytes = ca->count * cast_size(ca->mode, false);
		} else if (id == VTPU_OPERAND_DST) {
			*opnd = &ca->dst;
			*bytes = ca->count * cast_size(ca->mode, true);
		}
		break;
	case VTPU_OP_DROPOUT:
		*bytes = dr->count * 4;
		if (id == VTPU_OPERAND_X) {
			*opnd = &dr->x;
		} else if (id == VTPU_OPERAND_Z) {
			*opnd = &dr->z;
		} else if (id == VTPU_OPERAND_MASK) {
			*opnd = &dr->mask;
		} else if (id == VTPU_OPERAND_STEP) {
			*opnd = &dr->step;
			*bytes = 4;
		}
		break;
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD:
		/* all zero when the geometry is invalid */
		vtpu_convpool_decode(cv, &cp);
		out = (u64)cp.win.n * cp.ph * cp.pw * cp.oc * 4;
		if (id == VTPU_OPERAND_X) {
			*opnd = &cv->x;
			*bytes = (u64)cp.win.n * cp.win.h * cp.win.w *
				 cp.win.c * 4;
		} else if (id == (wgrad ? VTPU_OPERAND_DW : VTPU_OPERAND_W)) {
			*opnd = &cv->w;
			*bytes = cp.win.kdim * cp.oc * 4;
		} else if (id == (wgrad ? VTPU_OPERAND_DBIAS :
				  VTPU_OPERAND_BIAS)) {
			*opnd = &cv->bias;
			*bytes = (u64)cp.oc * 4;
		} else if (id == VTPU_OPERAND_Y || id == VTPU_OPERAND_DY) {
			*opnd = id == VTPU_OPERAND_Y ? &cv->y : &cv->dy;
			*bytes = out;
		} else if (id == VTPU_OPERAND_INDEX) {
			*opnd = &cv->index;	/* u8 routes */
			*bytes = out / 4;
		}
		break;
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD:
		/* all zero when the geometry is invalid */
		vtpu_conv_decode(cg, &cw, &mn);
		wgrad = cmd->opcode == VTPU_OP_CONV_WGRAD;
		if (id == (dgrad ? VTPU_OPERAND_DX : VTPU_OPERAND_X)) {
			*opnd = &cg->x;
			*bytes = (u64)cw.n * cw.h * cw.w * cw.c * 4;
		} else if (id == (wgrad ? VTPU_OPERAND_DW : VTPU_OPERAND_W)) {
			*opnd = &cg->w;
			*bytes = cw.kdim * cg->oc * 4;
		} else if (id == VTPU_OPERAND_BIAS) {
			*opnd = &cg->bias;
			*bytes = (u64)cg->oc * 4;
		} else if (id == (cmd->opcode == VTPU_OP_CONV ?
				  VTPU_OPERAND_Y : VTPU_OPERAND_DY)) {
			*opnd = &cg->y;
			*bytes = mn * cg->oc * 4;
		}
		break;
	}
	return *opnd ? 0 : -ENOENT;
}

int vtpu_engine_operand(const struct vtpu_cmd_hdr *cmd, u32 id,
			const struct vtpu_operand **opnd, u64 *bytes)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;
	const struct vtpu_cmd_fill *f = (const void *)cmd;
	const struct vtpu_cmd_copy *c = (const void *)cmd;
	bool ta, tb;
	u32 es;

	switch (cmd->opcode) {
	case VTPU_OP_GEMM:
		ta = g->flags & VTPU_GEMM_TRANS_A;
		tb = g->flags & VTPU_GEMM_TRANS_B;
		es = dtype_size(g->dtype);
		switch (id) {
		case VTPU_OPERAND_A:
			*opnd = &g->a;
			*bytes = matrix_bytes(ta ? g->k : g->m, ta ? g->m : g->k,
					      g->lda, es);
			return 0;
		case VTPU_OPERAND_B:
			*opnd = &g->b;
			*bytes = matrix_bytes(tb ? g->n : g->k, tb ? g->k : g->n,
					      g->ldb, es);
			return 0;
		case VTPU_OPERAND_C:
			*opnd = &g->c;
			*bytes = matrix_bytes(g->m, g->n, g->ldc, 4);
			return 0;
		case VTPU_OPERAND_BIAS:
			*opnd = &g->bias;
			*bytes = (u64)g->n * 4;
			return 0;
		}
		break;
	case VTPU_OP_FILL:
		if (id == VTPU_OPERAND_DST) {
			*opnd = &f->dst;
			*bytes = (u64)f->count * 4;
			return 0;
		}
		break;
	case VTPU_OP_COPY:
		if (id == VTPU_OPERAND_DST || id == VTPU_OPERAND_SRC) {
			*opnd = id == VTPU_OPERAND_DST ? &c->dst : &c->src;
			*bytes = c->bytes;
			return 0;
		}
		break;
	default:
		return train_operand(cmd, id, opnd, bytes);
	}
	return -ENOENT;
}

/*
 * What each opcode only reads (in) and what it writes (out), by operand
 * id. Every operand a command has is in one of the two (test_engine's
 * spans_cover_every_operand checks this against vtpu_engine_operand(),
 * and spans_hold_every_write runs commands to check that writes fall
 * only in the out operands). An operand a command has but does not use
 * (a GEMM's bias without VTPU_GEMM_BIAS) is all zero and still counted:
 * that can only make commands look dependent, never independent.
 */
#define OPND(id) (1u << VTPU_OPERAND_##id)

static const struct {
	u32 in, out;
} cmd_access[VTPU_OP_COUNT] = {
	[VTPU_OP_GEMM] = { OPND(A) | OPND(B) | OPND(BIAS), OPND(C) },
	[VTPU_OP_FILL] = { 0, OPND(DST) },
	[VTPU_OP_COPY] = { OPND(SRC), OPND(DST) },
	[VTPU_OP_IM2COL] = { OPND(SRC), OPND(DST) },
	[VTPU_OP_COL2IM] = { OPND(SRC), OPND(DST) },
	[VTPU_OP_MAXPOOL] = { OPND(X), OPND(Y) | OPND(INDEX) },
	[VTPU_OP_MAXPOOL_GRAD] = { OPND(DY) | OPND(INDEX), OPND(DX) },
	[VTPU_OP_ELEMENTWISE] = { OPND(X) | OPND(Y), OPND(Z) },
	[VTPU_OP_REDUCE] = { OPND(X), OPND(Y) },
	[VTPU_OP_SOFTMAX_XENT] = { OPND(X) | OPND(LABELS),
				   OPND(DX) | OPND(PROBS) | OPND(LOSS) |
					   OPND(CORRECT) },
	[VTPU_OP_SGD] = { OPND(GRAD), OPND(PARAM) | OPND(MOM) },
	[VTPU_OP_ADAM_STEP] = { 0, OPND(STATE) },
	[VTPU_OP_ADAM] = { OPND(GRAD) | OPND(STATE),
			   OPND(PARAM) | OPND(MOM) | OPND(VEL) },
	[VTPU_OP_CAST] = { OPND(SRC), OPND(DST) },
	[VTPU_OP_DROPOUT] = { OPND(X) | OPND(STEP), OPND(Z) | OPND(MASK) },
	[VTPU_OP_CONV_POOL] = { OPND(X) | OPND(W) | OPND(BIAS) | OPND(DY),
				OPND(Y) | OPND(INDEX) },
	[VTPU_OP_CONV_POOL_WGRAD] = { OPND(X) | OPND(DY) | OPND(INDEX) |
					      OPND(Y),
				      OPND(DW) | OPND(DBIAS) },
	[VTPU_OP_CONV] = { OPND(X) | OPND(W) | OPND(BIAS), OPND(Y) },
	[VTPU_OP_CONV_DGRAD] = { OPND(DY) | OPND(W) | OPND(BIAS), OPND(DX) },
	[VTPU_OP_CONV_WGRAD] = { OPND(X) | OPND(DY) | OPND(BIAS), OPND(DW) },
};

u32 vtpu_engine_spans(const struct vtpu_cmd_hdr *cmd,
		      const struct vtpu_engine_buf *bufs,
		      struct vtpu_engine_span *spans)
{
	const struct vtpu_operand *o;
	u32 in, out, id, n = 0;
	u64 bytes;

	if (cmd->opcode >= VTPU_OP_COUNT)
		return 0;
	in = cmd_access[cmd->opcode].in;
	out = cmd_access[cmd->opcode].out;
	for (id = 0; id < 32; id++) {
		if (!((in | out) & (1u << id)) ||
		    vtpu_engine_operand(cmd, id, &o, &bytes))
			continue;
		if (n < VTPU_ENGINE_SPANS_MAX) {
			spans[n].lo = (const u8 *)bufs[o->buf].base + o->offset;
			spans[n].hi = spans[n].lo + bytes;
			spans[n].write = out & (1u << id);
		}
		n++;
	}
	return n;
}

struct vctx {
	const u64 *buf_sizes;
	u32 nbufs;
	struct vtpu_engine_error *err;
};

static int reject(struct vctx *v, u32 operand, u32 reason)
{
	v->err->operand = operand;
	v->err->reason = reason;
	return -EINVAL;
}

/* An operand the command uses: index, alignment, bounds. */
static int check_operand(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
			 u32 id, u32 align)
{
	const struct vtpu_operand *o;
	u64 bytes, size;

	vtpu_engine_operand(cmd, id, &o, &bytes);
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
static int check_panels(struct vctx *v, const struct vtpu_cmd_gemm *g)
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

static int check_gemm(struct vctx *v, const struct vtpu_cmd_gemm *g)
{
	const struct vtpu_cmd_hdr *cmd = &g->hdr;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u32 es = dtype_size(g->dtype);
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

	ret = check_operand(v, cmd, VTPU_OPERAND_A, es);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_B, es);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_C, 4);
	if (ret)
		return ret;
	if (g->flags & VTPU_GEMM_BIAS) {
		ret = check_operand(v, cmd, VTPU_OPERAND_BIAS, 4);
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

static int check_fill(struct vctx *v, const struct vtpu_cmd_fill *f)
{
	if (!f->count)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_operand(v, &f->hdr, VTPU_OPERAND_DST, 4);
}

static int check_copy(struct vctx *v, const struct vtpu_cmd_copy *c)
{
	int ret;

	if (!c->bytes || c->bytes > (u64)VTPU_MAX_DIM * VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operand(v, &c->hdr, VTPU_OPERAND_DST, 1);
	if (!ret)
		ret = check_operand(v, &c->hdr, VTPU_OPERAND_SRC, 1);
	if (ret)
		return ret;
	if (overlap(&c->hdr, VTPU_OPERAND_DST, VTPU_OPERAND_SRC))
		return reject(v, VTPU_OPERAND_DST, VTPU_ERR_OVERLAP);
	return 0;
}

/* ---- the training ops ---- */

/* Operands a command does not use must be all zero. */
static int check_unused(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
			u32 id)
{
	const struct vtpu_operand *o;
	u64 bytes;

	vtpu_engine_operand(cmd, id, &o, &bytes);
	if (o->buf || o->pad || o->offset)
		return reject(v, id, VTPU_ERR_BAD_PAD);
	return 0;
}

/* Check @n operands @ids, all aligned to @align. */
static int check_operands(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
			  const u32 *ids, u32 n, u32 align)
{
	u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = check_operand(v, cmd, ids[i], align);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Outputs @outs may overlap nothing: neither each other nor inputs @ins
 * (inputs may overlap each other). Names the output.
 */
static int check_outputs(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
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

/* Reject unless the window geometry is valid and its counts fit. */
static int check_window(struct vctx *v, const struct vtpu_window *w)
{
	struct vtpu_engine_window g;
	u64 rows, cols;

	if (!w->stride_h || !w->stride_w || w->stride_h > VTPU_MAX_DIM ||
	    w->stride_w > VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	if (!vtpu_window_decode(w, &g) || !window_counts(&g, &rows, &cols))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return 0;
}

static int check_im2col(struct vctx *v, const struct vtpu_cmd_im2col *c)
{
	static const u32 out = VTPU_OPERAND_DST, in = VTPU_OPERAND_SRC;
	int ret;

	if (c->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (c->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	ret = check_window(v, &c->win);
	if (!ret)
		ret = check_operand(v, &c->hdr, in, 4);
	if (!ret)
		ret = check_operand(v, &c->hdr, out, 4);
	if (!ret)
		ret = check_outputs(v, &c->hdr, &out, 1, &in, 1);
	return ret;
}

static int check_pool(struct vctx *v, const struct vtpu_cmd_pool *p)
{
	/* outputs first */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_INDEX,
				   VTPU_OPERAND_X };
	static const u32 bwd[] = { VTPU_OPERAND_DX, VTPU_OPERAND_DY,
				   VTPU_OPERAND_INDEX };
	bool grad = p->hdr.opcode == VTPU_OP_MAXPOOL_GRAD;
	const u32 *ids = grad ? bwd : fwd;
	u32 nout = grad ? 1 : 2;
	int ret;

	if (p->flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (p->pad)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	ret = check_window(v, &p->win);
	if (ret)
		return ret;
	/* index holds a pixel number y * w + x */
	if ((u64)p->win.h * p->win.w > 0xffffffffull)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operands(v, &p->hdr, ids, 3, 4);
	if (!ret)
		ret = check_outputs(v, &p->hdr, ids, nout, ids + nout,
				    3 - nout);
	return ret;
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
};

/* z may be exactly @in (element i read before element i is written). */
static int check_alias(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_operand *z,
		       const struct vtpu_operand *in, u32 in_id)
{
	if (z->buf == in->buf && z->offset == in->offset)
		return 0;
	if (overlap(cmd, VTPU_OPERAND_Z, in_id))
		return reject(v, VTPU_OPERAND_Z, VTPU_ERR_OVERLAP);
	return 0;
}

static int check_ew(struct vctx *v, const struct vtpu_cmd_elementwise *e)
{
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
	ret = check_operand(v, cmd, VTPU_OPERAND_X, 4);
	if (!ret)
		ret = (uses & EW_Y) ? check_operand(v, cmd, VTPU_OPERAND_Y, 4) :
				      check_unused(v, cmd, VTPU_OPERAND_Y);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_Z, 4);
	if (!ret)
		ret = check_alias(v, cmd, &e->z, &e->x, VTPU_OPERAND_X);
	if (!ret && (uses & EW_Y))
		ret = check_alias(v, cmd, &e->z, &e->y, VTPU_OPERAND_Y);
	return ret;
}

static int check_reduce(struct vctx *v, const struct vtpu_cmd_reduce *r)
{
	static const u32 out = VTPU_OPERAND_Y, in = VTPU_OPERAND_X;
	int ret;

	if (r->op != VTPU_REDUCE_COLS && r->op != VTPU_REDUCE_ROWS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(r->m) || !dim_ok(r->n))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (r->ldx < r->n)
		return reject(v, VTPU_OPERAND_X, VTPU_ERR_BAD_STRIDE);
	ret = check_operand(v, &r->hdr, in, 4);
	if (!ret)
		ret = check_operand(v, &r->hdr, out, 4);
	if (!ret)
		ret = check_outputs(v, &r->hdr, &out, 1, &in, 1);
	return ret;
}

static int check_xent(struct vctx *v, const struct vtpu_cmd_softmax_xent *x)
{
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
	ret = check_operands(v, cmd, ins, 2, 4);
	if (!ret)
		ret = check_operands(v, cmd, outs, nout, 4);
	if (!ret)
		ret = check_outputs(v, cmd, outs, nout, ins, 2);
	return ret;
}

static int check_sgd(struct vctx *v, const struct vtpu_cmd_sgd *s)
{
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
	ret = check_operand(v, &s->hdr, in, 4);
	if (!ret)
		ret = check_operands(v, &s->hdr, outs, nout, 4);
	if (!ret)
		ret = check_outputs(v, &s->hdr, outs, nout, &in, 1);
	return ret;
}

static int check_adam_step(struct vctx *v, const struct vtpu_cmd_adam_step *a)
{
	return check_operand(v, &a->hdr, VTPU_OPERAND_STATE, 4);
}

static int check_adam(struct vctx *v, const struct vtpu_cmd_adam *a)
{
	static const u32 outs[] = { VTPU_OPERAND_PARAM, VTPU_OPERAND_MOM,
				    VTPU_OPERAND_VEL };
	static const u32 ins[] = { VTPU_OPERAND_GRAD, VTPU_OPERAND_STATE };
	int ret;

	if (a->flags & ~VTPU_ADAM_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!a->count || a->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operands(v, &a->hdr, ins, 2, 4);
	if (!ret)
		ret = check_operands(v, &a->hdr, outs, 3, 4);
	if (!ret)
		ret = check_outputs(v, &a->hdr, outs, 3, ins, 2);
	return ret;
}

static int check_cast(struct vctx *v, const struct vtpu_cmd_cast *c)
{
	static const u32 out = VTPU_OPERAND_DST, in = VTPU_OPERAND_SRC;
	int ret;

	if (c->mode > VTPU_CAST_U8_TO_F32)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_DTYPE);
	if (c->pad ||
	    (c->mode != VTPU_CAST_U8_TO_F32 && (c->scale || c->shift)))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_PAD);
	if (!c->count || c->count > VTPU_MAX_ELEMS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operand(v, &c->hdr, in, cast_size(c->mode, false));
	if (!ret)
		ret = check_operand(v, &c->hdr, out, cast_size(c->mode, true));
	if (!ret)
		ret = check_outputs(v, &c->hdr, &out, 1, &in, 1);
	return ret;
}

/* 0 <= rate < 1, as binary32 bits: the positive numbers below 1.0f */
#define F32_ONE_BITS 0x3f800000u

static int check_dropout(struct vctx *v, const struct vtpu_cmd_dropout *d)
{
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
	ret = check_operands(v, cmd, ins, 2, 4);
	if (!ret)
		ret = check_operands(v, cmd, outs, 2, 4);
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

static int check_conv_pool(struct vctx *v, const struct vtpu_cmd_conv_pool *c)
{
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
	u32 i;
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
	for (i = 0; i < 5 && !ret; i++)
		ret = check_operand(v, cmd, ids[i],
				    ids[i] == VTPU_OPERAND_INDEX ? 1 : 4);
	if (!ret)
		ret = check_outputs(v, cmd, ids, 2, ids + 2, 3);
	return ret;
}

static int check_conv(struct vctx *v, const struct vtpu_cmd_conv *c)
{
	/* outputs first */
	static const u32 fwd[] = { VTPU_OPERAND_Y, VTPU_OPERAND_X,
				   VTPU_OPERAND_W, VTPU_OPERAND_BIAS };
	static const u32 dgrad[] = { VTPU_OPERAND_DX, VTPU_OPERAND_DY,
				     VTPU_OPERAND_W };
	static const u32 wgrad[] = { VTPU_OPERAND_DW, VTPU_OPERAND_X,
				     VTPU_OPERAND_DY };
	const struct vtpu_cmd_hdr *cmd = &c->hdr;
	const u32 *ids = cmd->opcode == VTPU_OP_CONV	     ? fwd :
			 cmd->opcode == VTPU_OP_CONV_DGRAD ? dgrad :
							     wgrad;
	u32 flags = cmd->opcode == VTPU_OP_CONV ?
			    VTPU_CONV_BIAS | VTPU_CONV_RELU :
			    VTPU_CONV_ACCUMULATE;
	bool bias = c->flags & VTPU_CONV_BIAS;
	struct vtpu_engine_window g;
	u64 rows;
	int ret;

	if (c->flags & ~flags)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	ret = check_window(v, &c->win);
	if (ret)
		return ret;
	if (cmd->opcode == VTPU_OP_CONV_DGRAD &&
	    (c->win.stride_h != 1 || c->win.stride_w != 1))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_STRIDE);
	if (!vtpu_conv_decode(c, &g, &rows))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	if (!bias)
		ret = check_unused(v, cmd, VTPU_OPERAND_BIAS);
	if (!ret)
		ret = check_operands(v, cmd, ids, bias ? 4 : 3, 4);
	if (!ret)
		ret = check_outputs(v, cmd, ids, 1, ids + 1, bias ? 3 : 2);
	return ret;
}

int vtpu_engine_validate(const void *cmds, u32 size, const u64 *buf_sizes,
			 u32 nbufs, struct vtpu_engine_error *err)
{
	struct vctx v = { .buf_sizes = buf_sizes, .nbufs = nbufs, .err = err };
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
		if (cmd->opcode >= VTPU_OP_COUNT)
			return reject(&v, VTPU_OPERAND_NONE,
				      VTPU_ERR_BAD_OPCODE);
		if (cmd->size > size - pos)
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);
		if (cmd->size != cmd_sizes[cmd->opcode])
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SIZE);

		switch (cmd->opcode) {
		case VTPU_OP_GEMM:
			ret = check_gemm(&v, (const void *)cmd);
			break;
		case VTPU_OP_FILL:
			ret = check_fill(&v, (const void *)cmd);
			break;
		case VTPU_OP_COPY:
			ret = check_copy(&v, (const void *)cmd);
			break;
		case VTPU_OP_IM2COL:
		case VTPU_OP_COL2IM:
			ret = check_im2col(&v, (const void *)cmd);
			break;
		case VTPU_OP_MAXPOOL:
		case VTPU_OP_MAXPOOL_GRAD:
			ret = check_pool(&v, (const void *)cmd);
			break;
		case VTPU_OP_ELEMENTWISE:
			ret = check_ew(&v, (const void *)cmd);
			break;
		case VTPU_OP_REDUCE:
			ret = check_reduce(&v, (const void *)cmd);
			break;
		case VTPU_OP_SOFTMAX_XENT:
			ret = check_xent(&v, (const void *)cmd);
			break;
		case VTPU_OP_SGD:
			ret = check_sgd(&v, (const void *)cmd);
			break;
		case VTPU_OP_ADAM_STEP:
			ret = check_adam_step(&v, (const void *)cmd);
			break;
		case VTPU_OP_ADAM:
			ret = check_adam(&v, (const void *)cmd);
			break;
		case VTPU_OP_CAST:
			ret = check_cast(&v, (const void *)cmd);
			break;
		case VTPU_OP_DROPOUT:
			ret = check_dropout(&v, (const void *)cmd);
			break;
		case VTPU_OP_CONV_POOL:
		case VTPU_OP_CONV_POOL_WGRAD:
			ret = check_conv_pool(&v, (const void *)cmd);
			break;
		case VTPU_OP_CONV:
		case VTPU_OP_CONV_DGRAD:
		case VTPU_OP_CONV_WGRAD:
			ret = check_conv(&v, (const void *)cmd);
			break;
		default:
			ret = 0;
			break;
		}
		if (ret)
			return ret;
		pos += cmd->size;
	}
	err->cmd = 0;
	err->offset = 0;
	return 0;
}

const struct vtpu_cmd_hdr *vtpu_engine_next(const void *cmds, u32 size,
					    u32 *pos)
{
	const struct vtpu_cmd_hdr *cmd;

	if (*pos >= size)
		return NULL;
	cmd = (const void *)((const u8 *)cmds + *pos);
	*pos += cmd->size;
	return cmd;
}

const char *vtpu_engine_simd_name(u32 simd)
{
	switch (simd) {
	case VTPU_SIMD_SCALAR:
		return "scalar";
	case VTPU_SIMD_AVX2:
		return "avx2";
	case VTPU_SIMD_AVX512:
		return "avx512";
	default:
		return "?";
	}
}
