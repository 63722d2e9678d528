// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The command schema: the op table, one struct vtpu_engine_op_desc per
 * opcode, and what it needs to say where a command's operands are and
 * how many bytes each spans (the decoders of the window geometries among
 * them). The validator (validate.c) checks commands against it, the
 * executors prepare and run them through it, and libvtpu explains a
 * rejected command with its numbers.
 *
 * Integer code, built without floating point in the kernel like
 * validate.c: everything here may run outside kernel_fpu_begin()/end().
 * The table only points at the op functions that need the FPU.
 *
 * Overflow: see validate.c. Every extent below is of a command whose
 * dimensions the decoders bound, or 0 when they are invalid.
 */
#include "engine_internal.h"

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

/* A scalar field and its range. */
#define FIELD(cmd, field, lo, hi)                                              \
	{ #field, offsetof(struct cmd, field),                                 \
	  sizeof(((struct cmd *)0)->field), lo, hi }

/* A window's fields, alone; the pads are below the kernel's size too. */
#define WINDOW_NFIELDS 10

static const struct vtpu_engine_field window_fields[WINDOW_NFIELDS] = {
	FIELD(vtpu_window, n, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, h, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, w, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, c, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, kh, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, kw, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, stride_h, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, stride_w, 1, VTPU_MAX_DIM),
	FIELD(vtpu_window, pad_h, 0, VTPU_MAX_DIM - 1),
	FIELD(vtpu_window, pad_w, 0, VTPU_MAX_DIM - 1),
};

const struct vtpu_engine_field *vtpu_engine_window_fields(u32 *count)
{
	*count = WINDOW_NFIELDS;
	return window_fields;
}

u64 vtpu_engine_field_value(const void *cmd, const struct vtpu_engine_field *f)
{
	const u8 *p = (const u8 *)cmd + f->offset;
	u32 v32;
	u64 v64;

	if (f->bytes == 8) {
		memcpy(&v64, p, sizeof(v64));
		return v64;
	}
	memcpy(&v32, p, sizeof(v32));
	return v32;
}

bool vtpu_window_decode(const struct vtpu_window *w,
			struct vtpu_engine_window *g)
{
	u64 hh, ww, img, k, v;
	u32 i;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < WINDOW_NFIELDS; i++) {
		v = vtpu_engine_field_value(w, &window_fields[i]);
		if (v < window_fields[i].min || v > window_fields[i].max)
			return false;
	}
	if (w->pad_h >= w->kh || w->pad_w >= w->kw)
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

bool vtpu_window_counts(const struct vtpu_engine_window *g, u64 *rows,
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
	if (!vtpu_window_decode(w, &g) || !vtpu_window_counts(&g, &rows, &c))
		return;
	*image = (u64)g.n * g.h * g.w * g.c * 4;
	*out = rows * g.c * 4;
	*cols = c * 4;
}

bool vtpu_pool_decode(const struct vtpu_cmd_pool *p,
		      struct vtpu_engine_window *g)
{
	struct vtpu_window w = p->win;
	bool eh = p->flags & VTPU_POOL_PAD_END_H;
	bool ew = p->flags & VTPU_POOL_PAD_END_W;

	/* the end padding: the window sees one more row (column) */
	if ((p->flags & ~VTPU_POOL_FLAGS) ||
	    (eh && (u64)w.pad_h + 1 >= w.kh) ||
	    (ew && (u64)w.pad_w + 1 >= w.kw))
		goto bad;
	w.h += eh;
	w.w += ew;
	if (!vtpu_window_decode(&w, g))
		return false;
	/* pad + 1 < k: the last window still starts inside the image */
	g->h = p->win.h;
	g->w = p->win.w;
	return true;
bad:
	memset(g, 0, sizeof(*g));
	return false;
}

bool vtpu_avgpool_decode(const struct vtpu_cmd_avgpool *c,
			 struct vtpu_engine_window *g)
{
	const struct vtpu_window *w = &c->win;
	u64 e;
	u32 i;

	memset(g, 0, sizeof(*g));
	for (i = 0; i < WINDOW_NFIELDS; i++) {
		e = vtpu_engine_field_value(w, &window_fields[i]);
		if (e < window_fields[i].min || e > window_fields[i].max)
			return false;
	}
	if (w->pad_h >= w->kh || w->pad_w >= w->kw ||
	    !window_dim_ok(c->oh) || !window_dim_ok(c->ow))
		return false;
	/*
	 * A window spans at most the image and its padding, one row (column)
	 * more below (right) for TensorFlow's odd split: the work a window
	 * costs is bounded by its image, whatever kh and kw say.
	 */
	if ((u64)w->kh > (u64)w->h + 2 * (u64)w->pad_h + 1 ||
	    (u64)w->kw > (u64)w->w + 2 * (u64)w->pad_w + 1)
		return false;
	/* the last window starts inside the image (terms below 2^52) */
	if ((u64)(c->oh - 1) * w->stride_h >= (u64)w->h + w->pad_h ||
	    (u64)(c->ow - 1) * w->stride_w >= (u64)w->w + w->pad_w)
		return false;
	if (!mul_elems(w->n, w->h, &e) || !mul_elems(e, w->w, &e) ||
	    !mul_elems(e, w->c, &e) || !mul_elems(w->n, c->oh, &e) ||
	    !mul_elems(e, c->ow, &e) || !mul_elems(e, w->c, &e) ||
	    !mul_elems(w->kh, w->kw, &e))
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
	g->oh = c->oh;
	g->ow = c->ow;
	g->kdim = e;
	return true;
}

bool vtpu_convpool_decode(const struct vtpu_cmd_conv_pool *c,
			  struct vtpu_engine_convpool *cp)
{
	struct vtpu_engine_window *g = &cp->win;
	u64 rows, cols, wn, yn;

	memset(cp, 0, sizeof(*cp));
	if (!vtpu_window_decode(&c->win, g) ||
	    !vtpu_window_counts(g, &rows, &cols))
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
	/* a pooled pixel's work (wn < 2^37, the taps below 2^8) */
	if ((u64)c->pool_h * c->pool_w * wn > VTPU_CONV_POOL_MAX_WORK)
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
	if (!vtpu_window_decode(&c->win, g) ||
	    !vtpu_window_counts(g, rows, &cols) || !window_dim_ok(c->oc))
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

u32 vtpu_dtype_size(u32 dtype)
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

u32 vtpu_cast_size(u32 mode, bool dst)
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

/* ---- the extents: bytes each operand spans, as the validator checks ---- */

static u64 gemm_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u32 es = vtpu_dtype_size(g->dtype);

	switch (id) {
	case VTPU_OPERAND_A:
		*align = es;
		return matrix_bytes(ta ? g->k : g->m, ta ? g->m : g->k, g->lda,
				    es);
	case VTPU_OPERAND_B:
		*align = es;
		return matrix_bytes(tb ? g->n : g->k, tb ? g->k : g->n, g->ldb,
				    es);
	case VTPU_OPERAND_C:
		return matrix_bytes(g->m, g->n, g->ldc, 4);
	default:	/* BIAS */
		return (u64)g->n * 4;
	}
}

static u64 fill_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	return (u64)((const struct vtpu_cmd_fill *)cmd)->count * 4;
}

static u64 copy_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	return ((const struct vtpu_cmd_copy *)cmd)->bytes;
}

/* IM2COL reads the image and writes cols; COL2IM the other way round. */
static u64 im2col_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_im2col *ic = (const void *)cmd;
	bool col2im = cmd->opcode == VTPU_OP_COL2IM;
	u64 image, out, cols;

	window_extents(&ic->win, &image, &out, &cols);
	return id == (col2im ? VTPU_OPERAND_DST : VTPU_OPERAND_SRC) ? image :
								      cols;
}

static u64 pool_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	struct vtpu_engine_window g;
	u64 rows, cols;

	if (!vtpu_pool_decode((const void *)cmd, &g) ||
	    !vtpu_window_counts(&g, &rows, &cols))
		return 0;
	if (id == VTPU_OPERAND_X || id == VTPU_OPERAND_DX)
		return (u64)g.n * g.h * g.w * g.c * 4;
	return rows * g.c * 4;
}

static u64 avgpool_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	struct vtpu_engine_window g;

	if (!vtpu_avgpool_decode((const void *)cmd, &g))
		return 0;
	if (id == VTPU_OPERAND_X || id == VTPU_OPERAND_DX)
		return (u64)g.n * g.h * g.w * g.c * 4;
	return (u64)g.n * g.oh * g.ow * g.c * 4;
}

/* ELEMENTWISE, SGD, ADAM, DROPOUT: count f32s; Adam's state, dropout's step */
static u64 count_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	u64 count;

	switch (cmd->opcode) {
	case VTPU_OP_ELEMENTWISE:
		count = ((const struct vtpu_cmd_elementwise *)cmd)->count;
		break;
	case VTPU_OP_SGD:
		count = ((const struct vtpu_cmd_sgd *)cmd)->count;
		break;
	case VTPU_OP_ADAM:
		count = ((const struct vtpu_cmd_adam *)cmd)->count;
		break;
	default:
		count = ((const struct vtpu_cmd_dropout *)cmd)->count;
		break;
	}
	if (id == VTPU_OPERAND_STATE)
		return 8;
	if (id == VTPU_OPERAND_STEP)
		return 4;
	return count * 4;
}

/*
 * IMAGE_AUGMENT: x [n][h][w][c], y [n][oh][ow][c] f32, step one f32; 0
 * unless every dimension is valid and each product within the limit.
 */
static u64 augment_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_image_augment *a = (const void *)cmd;
	u64 xs, ys;

	if (!window_dim_ok(a->n) || !window_dim_ok(a->h) ||
	    !window_dim_ok(a->w) || !window_dim_ok(a->c) ||
	    !a->oh || a->oh > a->h || !a->ow || a->ow > a->w)
		return 0;
	/* each factor is below 2^25: n * h and n * oh cannot overflow */
	if (!mul_elems((u64)a->n * a->h, a->w, &xs) ||
	    !mul_elems(xs, a->c, &xs))
		return 0;
	/* oh <= h and ow <= w: y is no larger than x */
	ys = (u64)a->n * a->oh * a->ow * a->c;
	if (id == VTPU_OPERAND_X)
		return xs * 4;
	if (id == VTPU_OPERAND_Y)
		return ys * 4;
	return 4;	/* STEP */
}

static u64 reduce_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_reduce *rd = (const void *)cmd;

	if (id == VTPU_OPERAND_X)
		return rd->m ? matrix_bytes(rd->m, rd->n, rd->ldx, 4) : 0;
	return (u64)(rd->op == VTPU_REDUCE_COLS ? rd->n : rd->m) * 4;
}

static u64 argmax_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_argmax *am = (const void *)cmd;

	/* m and ldx are below 2^32: m * ldx cannot overflow */
	if (!am->m || !am->n || am->ldx < am->n ||
	    (u64)am->m * am->ldx > VTPU_MAX_ELEMS)
		return 0;
	if (id == VTPU_OPERAND_X)
		return matrix_bytes(am->m, am->n, am->ldx, 4);
	return (u64)am->m * 4;	/* INDEX */
}

static u64 clip_norm_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			    u32 *align)
{
	const struct vtpu_cmd_clip_norm *cn = (const void *)cmd;

	if (id == VTPU_OPERAND_SUMSQ)
		return 4;
	return cn->count <= VTPU_MAX_ELEMS ? cn->count * 4 : 0;
}

static u64 xent_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_softmax_xent *xe = (const void *)cmd;

	switch (id) {
	case VTPU_OPERAND_LABELS:
		return (u64)xe->m * 4;
	case VTPU_OPERAND_LOSS:
	case VTPU_OPERAND_CORRECT:
		return 4;
	default:	/* X, DX, PROBS */
		return (u64)xe->m * xe->n * 4;
	}
}

static u64 softmax_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_softmax *sm = (const void *)cmd;

	if (id == VTPU_OPERAND_LENGTHS)
		return sm->rows_per_group ?
			       (u64)vtpu_div_up(sm->m, sm->rows_per_group) * 4 :
			       0;
	/* X, Y, DX, DY; the fields are below 2^32 each, m * n * 4 may not be */
	return sm->n && sm->m <= VTPU_MAX_ELEMS / sm->n ?
		       (u64)sm->m * sm->n * 4 : 0;
}

/* Are an ADDITIVE_SCORE's fields in range (the pads aside)? */
bool vtpu_additive_ok(const struct vtpu_cmd_additive_score *a)
{
	u64 b = a->batch, u = a->units;

	if (!a->batch || a->batch > VTPU_MAX_DIM || !a->tq ||
	    a->tq > VTPU_MAX_DIM || !a->tk || a->tk > VTPU_MAX_DIM ||
	    !a->units || a->units > VTPU_ADDITIVE_MAX_UNITS)
		return false;
	/* each below 2^24 and 2^12: the products of two fit */
	if ((u64)a->tq * u > VTPU_ADDITIVE_MAX_WORK ||
	    (u64)a->tk * u > VTPU_ADDITIVE_MAX_WORK)
		return false;
	/* tq * u <= 2^18 and b < 2^25: below 2^43 */
	if (b * a->tq * u > VTPU_MAX_ELEMS || b * a->tk * u > VTPU_MAX_ELEMS)
		return false;
	/* tq * tk < 2^48: divide rather than multiply by b */
	return (u64)a->tq * a->tk <= VTPU_MAX_ELEMS / b;
}

static u64 additive_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			   u32 *align)
{
	const struct vtpu_cmd_additive_score *a = (const void *)cmd;
	u64 u = a->units, b = a->batch, rows;

	*align = 4;
	if (!vtpu_additive_ok(a))
		return 0;
	switch (id) {
	case VTPU_OPERAND_A:
	case VTPU_OPERAND_DA:
		rows = a->tq;
		break;
	case VTPU_OPERAND_B:
	case VTPU_OPERAND_DB:
		rows = a->tk;
		break;
	case VTPU_OPERAND_C:	/* the fields' products are checked */
		return (u64)a->tq * a->tk * b * 4;
	default:		/* W, DW */
		return u * 4;
	}
	return rows * b * u * 4;
}

/*
 * An LSTM_CELL's or LSTM_CELL_GRAD's gates: the highest element + 1 of a
 * 4-gate operand (3 * gs + (B - 1) * rs + H), or 0 when the fields are out
 * of range or the 4 * B blocks of H may share an element. The two structs
 * begin alike (batch .. gate_stride). Strides at most 2^36, B below 2^25:
 * no term reaches 2^61, no overflow.
 */
u64 vtpu_lstm_gates_span(const struct vtpu_cmd_lstm_cell *l)
{
	u64 h = l->hidden, rs = l->row_stride, gs = l->gate_stride, span;

	if (!window_dim_ok(l->batch) || !window_dim_ok(l->hidden) ||
	    (u64)l->batch * h > VTPU_MAX_ELEMS)
		return 0;
	if (rs < h || gs < h || rs > VTPU_MAX_ELEMS || gs > VTPU_MAX_ELEMS)
		return 0;
	/* planes of gates, or each row's four gates side by side */
	if (gs < (l->batch - 1) * rs + h && rs < 3 * gs + h)
		return 0;
	span = 3 * gs + (l->batch - 1) * rs + h;
	return span <= VTPU_MAX_ELEMS ? span : 0;
}

static u64 lstm_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_lstm_cell *l = (const void *)cmd;
	u64 span = vtpu_lstm_gates_span(l);

	if (!span)
		return 0;
	if (id == VTPU_OPERAND_GATES || id == VTPU_OPERAND_ACT ||
	    id == VTPU_OPERAND_DGATES)
		return span * 4;
	return (u64)l->batch * l->hidden * 4;	/* [B, H] */
}

static u64 batchnorm_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			    u32 *align)
{
	/* rows and channels sit at the same place in both structs */
	const struct vtpu_cmd_batchnorm *bn = (const void *)cmd;

	switch (id) {
	case VTPU_OPERAND_X:
	case VTPU_OPERAND_Y:
	case VTPU_OPERAND_DX:
	case VTPU_OPERAND_DY:
		/* each field is below 2^32, their product may not be */
		return bn->channels &&
			       bn->rows <= VTPU_MAX_ELEMS / bn->channels ?
			       (u64)bn->rows * bn->channels * 4 : 0;
	case VTPU_OPERAND_STATE:
		return (u64)bn->channels * 8;
	default:	/* W, BIAS, MOM, VEL, DW, DBIAS */
		return (u64)bn->channels * 4;
	}
}

static u64 adam_step_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			    u32 *align)
{
	return 8;
}

static u64 cast_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_cast *ca = (const void *)cmd;

	*align = vtpu_cast_size(ca->mode, id == VTPU_OPERAND_DST);
	return ca->count * *align;
}

static u64 conv_pool_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			    u32 *align)
{
	struct vtpu_engine_convpool cp;
	u64 out;

	/* all zero when the geometry is invalid */
	vtpu_convpool_decode((const void *)cmd, &cp);
	out = (u64)cp.win.n * cp.ph * cp.pw * cp.oc * 4;
	switch (id) {
	case VTPU_OPERAND_X:
		return (u64)cp.win.n * cp.win.h * cp.win.w * cp.win.c * 4;
	case VTPU_OPERAND_W:
	case VTPU_OPERAND_DW:
		return cp.win.kdim * cp.oc * 4;
	case VTPU_OPERAND_BIAS:
	case VTPU_OPERAND_DBIAS:
		return (u64)cp.oc * 4;
	case VTPU_OPERAND_INDEX:
		return out / 4;		/* u8 routes */
	default:	/* Y, DY */
		return out;
	}
}

static u64 conv_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_conv *cg = (const void *)cmd;
	struct vtpu_engine_window cw;
	u64 rows;

	/* all zero when the geometry is invalid */
	vtpu_conv_decode(cg, &cw, &rows);
	switch (id) {
	case VTPU_OPERAND_X:
	case VTPU_OPERAND_DX:
		return (u64)cw.n * cw.h * cw.w * cw.c * 4;
	case VTPU_OPERAND_W:
	case VTPU_OPERAND_DW:
		return cw.kdim * cg->oc * 4;
	case VTPU_OPERAND_BIAS:
		return (u64)cg->oc * 4;
	default:	/* Y, DY */
		return rows * cg->oc * 4;
	}
}

/*
 * A depthwise convolution's geometry: the window's checks (pad_h < kh,
 * pad_w < kw), its given output size, whose last window starts in the
 * image or its top (left) padding, so that every window covers a pixel,
 * and the element counts of its tensors.
 */
bool vtpu_dwconv_decode(const struct vtpu_cmd_dwconv *c,
			struct vtpu_engine_window *g, u64 *rows)
{
	u64 cm, r;

	*rows = 0;
	if (!vtpu_window_decode(&c->win, g) || !window_dim_ok(c->oh) ||
	    !window_dim_ok(c->ow) || !window_dim_ok(c->mult))
		goto bad;
	if ((u64)(c->oh - 1) * g->sh >= (u64)g->h + g->ph ||
	    (u64)(c->ow - 1) * g->sw >= (u64)g->w + g->pw)
		goto bad;
	if ((u64)g->kh * g->kw * c->mult > VTPU_DWCONV_MAX_WORK)
		goto bad;
	g->oh = c->oh;
	g->ow = c->ow;
	cm = (u64)g->c * c->mult;
	/* not vtpu_window_counts(): there are no im2col columns */
	if (cm > VTPU_MAX_DIM || !mul_elems(g->n, g->oh, rows) ||
	    !mul_elems(*rows, g->ow, rows) || !mul_elems(*rows, cm, &r) ||
	    !mul_elems((u64)g->kh * g->kw, cm, &r))
		goto bad;
	return true;
bad:
	memset(g, 0, sizeof(*g));
	*rows = 0;
	return false;
}

static u64 dwconv_extent(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align)
{
	const struct vtpu_cmd_dwconv *c = (const void *)cmd;
	struct vtpu_engine_window g;
	u64 rows, cm;

	/* all zero when the geometry is invalid */
	vtpu_dwconv_decode(c, &g, &rows);
	cm = (u64)g.c * c->mult;
	switch (id) {
	case VTPU_OPERAND_X:
	case VTPU_OPERAND_DX:
		return (u64)g.n * g.h * g.w * g.c * 4;
	case VTPU_OPERAND_W:
	case VTPU_OPERAND_DW:
		return (u64)g.kh * g.kw * cm * 4;
	case VTPU_OPERAND_BIAS:
		return cm * 4;
	default:	/* Y, DY */
		return rows * cm * 4;
	}
}

bool vtpu_embedding_ok(const struct vtpu_cmd_embedding *e)
{
	u64 r;

	return window_dim_ok(e->n) && window_dim_ok(e->vocab) &&
	       window_dim_ok(e->dim) && mul_elems(e->n, e->dim, &r) &&
	       mul_elems(e->vocab, e->dim, &r);
}

static u64 embedding_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			    u32 *align)
{
	const struct vtpu_cmd_embedding *e = (const void *)cmd;

	if (!vtpu_embedding_ok(e))
		return 0;
	switch (id) {
	case VTPU_OPERAND_INDEX:
		return (u64)e->n * 4;
	case VTPU_OPERAND_W:
	case VTPU_OPERAND_DW:
		return (u64)e->vocab * e->dim * 4;
	default:	/* Y, DY */
		return (u64)e->n * e->dim * 4;
	}
}

/*
 * Do a GEMM_BATCHED's Cs share no element? Either each lies past the one
 * before, or their rows interleave: element (b, i, j) sits at b * sc +
 * i * ldc + j with j < n <= sc and b * sc + j < ldc, so that i, then b
 * and j, follow from the offset. (Fields in range: no overflow.)
 */
bool vtpu_gemm_batched_disjoint(const struct vtpu_cmd_gemm_batched *g)
{
	u64 sc = g->stride_c;

	if (g->batch == 1 || sc >= (u64)(g->m - 1) * g->ldc + g->n)
		return true;
	return sc >= g->n && g->ldc >= (u64)(g->batch - 1) * sc + g->n;
}

bool vtpu_gemm_batched_ok(const struct vtpu_cmd_gemm_batched *g)
{
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u64 mn;

	if (!window_dim_ok(g->batch) || !window_dim_ok(g->m) ||
	    !window_dim_ok(g->n) || !window_dim_ok(g->k) ||
	    !vtpu_dtype_size(g->dtype))
		return false;
	if (g->lda < (ta ? g->m : g->k) || g->ldb < (tb ? g->k : g->n) ||
	    g->ldc < g->n)
		return false;
	if (g->stride_a > VTPU_MAX_ELEMS || g->stride_b > VTPU_MAX_ELEMS ||
	    g->stride_c > VTPU_MAX_ELEMS)
		return false;
	/* (below 2^48: no overflow) */
	mn = (u64)g->m * g->n;
	return mn <= VTPU_GEMM_BATCHED_MAX_C / g->batch;
}

/*
 * A batch of matrices: (batch - 1) strides and one matrix, below 2^61
 * elements (strides at most 2^36, batch 2^24, a matrix below 2^57).
 */
static u64 gemm_batched_extent(const struct vtpu_cmd_hdr *cmd, u32 id,
			       u32 *align)
{
	const struct vtpu_cmd_gemm_batched *g = (const void *)cmd;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u32 es = vtpu_dtype_size(g->dtype);
	u64 stride;

	if (id != VTPU_OPERAND_C)
		*align = es ? es : 4;
	if (!vtpu_gemm_batched_ok(g))
		return 0;
	switch (id) {
	case VTPU_OPERAND_A:
		stride = (u64)(g->batch - 1) * g->stride_a * es;
		return stride + matrix_bytes(ta ? g->k : g->m,
					     ta ? g->m : g->k, g->lda, es);
	case VTPU_OPERAND_B:
		stride = (u64)(g->batch - 1) * g->stride_b * es;
		return stride + matrix_bytes(tb ? g->n : g->k,
					     tb ? g->k : g->n, g->ldb, es);
	default:	/* C */
		stride = (u64)(g->batch - 1) * g->stride_c * 4;
		return stride + matrix_bytes(g->m, g->n, g->ldc, 4);
	}
}

/* ---- the table --------------------------------------------------------- */

/* An operand: id, read (IN) or written (OUT), alignment, field. */
#define IN(id, cmd, field, align)                                              \
	{ VTPU_OPERAND_##id, 0, align, offsetof(struct cmd, field) }
#define OUT(id, cmd, field, align)                                             \
	{ VTPU_OPERAND_##id, 1, align, offsetof(struct cmd, field) }
/* Where a command's flags are. */
#define FLAGS_AT(cmd) offsetof(struct cmd, flags)

#define WINDOW_RULES "pad < k and h + 2 pad >= k"
#define POOL_RULES \
	WINDOW_RULES ", pool in conv output, < 255 taps, taps*kh*kw*c*oc <= 2^22"
#define BATCHED_RULES \
	"as GEMM's; batch*m*n <= 2^31, strides <= 2^36, Cs share no element"
#define EMBEDDING_RULES "n * dim and vocab * dim within the element limit"
#define CONV_RULES WINDOW_RULES ", n*oh*ow, n*h*w, kh*kw*c within the limit"
#define BATCHNORM_RULES \
	"rows * channels at most the element limit, epsilon > 0, momentum in [0, 1]"
#define DWCONV_RULES \
	WINDOW_RULES " (top, left pads), (oh - 1) * stride < h + pad, kh*kw*mult " \
	"<= 256, c*mult <= 2^24"
#define SOFTMAX_RULES "m * n at most the element limit"
#define ADDITIVE_RULES \
	"tq*units, tk*units <= 2^18; B*tq*tk, B*tq*units, B*tk*units in the limit"
#define LSTM_RULES \
	"B*H in the limit; strides >= H, gates planes or rows, span in the limit"
#define AVGPOOL_RULES \
	"pad < k <= size + 2 pad + 1, (o - 1) * stride < size + pad"

/* What the two opcodes of one command struct share in the table. */
#define DWCONV_COMMON                                                          \
	.size = sizeof(struct vtpu_cmd_dwconv),                                \
	.flags_at = FLAGS_AT(vtpu_cmd_dwconv), .window = true,                 \
	.noperands = 4,                                                        \
	.fields = { FIELD(vtpu_cmd_dwconv, oh, 1, VTPU_MAX_DIM),               \
		    FIELD(vtpu_cmd_dwconv, ow, 1, VTPU_MAX_DIM),               \
		    FIELD(vtpu_cmd_dwconv, mult, 1, VTPU_DWCONV_MAX_WORK) },   \
	.rules = DWCONV_RULES, .extent = dwconv_extent,                        \
	.check = vtpu_dwconv_check, .prepare = vtpu_dwconv_prepare,            \
	.run = vtpu_dwconv_run, .describe = vtpu_dwconv_describe
#define EMBEDDING_COMMON                                                       \
	.fields = { FIELD(vtpu_cmd_embedding, n, 1, VTPU_MAX_DIM),             \
		    FIELD(vtpu_cmd_embedding, vocab, 1, VTPU_MAX_DIM),         \
		    FIELD(vtpu_cmd_embedding, dim, 1, VTPU_MAX_DIM) },         \
	.rules = EMBEDDING_RULES, .extent = embedding_extent,                  \
	.check = vtpu_embedding_check, .prepare = vtpu_embedding_prepare,      \
	.run = vtpu_embedding_run, .describe = vtpu_embedding_describe
#define SOFTMAX_COMMON                                                         \
	.fields = { FIELD(vtpu_cmd_softmax, m, 1, VTPU_MAX_DIM),               \
		    FIELD(vtpu_cmd_softmax, n, 1, VTPU_SOFTMAX_MAX_COLS),      \
		    FIELD(vtpu_cmd_softmax, rows_per_group, 1, VTPU_MAX_DIM) }, \
	.rules = SOFTMAX_RULES, .extent = softmax_extent,                      \
	.check = vtpu_softmax_check, .prepare = vtpu_softmax_prepare,          \
	.run = vtpu_softmax_run, .describe = vtpu_softmax_describe
#define AVGPOOL_COMMON                                                         \
	.size = sizeof(struct vtpu_cmd_avgpool),                               \
	.flags_at = FLAGS_AT(vtpu_cmd_avgpool), .window = true,                \
	.noperands = 2,                                                        \
	.fields = { FIELD(vtpu_cmd_avgpool, oh, 1, VTPU_MAX_DIM),              \
		    FIELD(vtpu_cmd_avgpool, ow, 1, VTPU_MAX_DIM) },            \
	.rules = AVGPOOL_RULES, .extent = avgpool_extent,                      \
	.check = vtpu_avgpool_check, .prepare = vtpu_avgpool_prepare,          \
	.run = vtpu_pool_run, .describe = vtpu_window_describe

#define ADDITIVE_COMMON                                                        \
	.size = sizeof(struct vtpu_cmd_additive_score),                        \
	.flags_at = FLAGS_AT(vtpu_cmd_additive_score), .noperands = 7,         \
	.fields = { FIELD(vtpu_cmd_additive_score, batch, 1, VTPU_MAX_DIM),    \
		    FIELD(vtpu_cmd_additive_score, tq, 1, VTPU_MAX_DIM),       \
		    FIELD(vtpu_cmd_additive_score, tk, 1, VTPU_MAX_DIM),       \
		    FIELD(vtpu_cmd_additive_score, units, 1,                   \
			  VTPU_ADDITIVE_MAX_UNITS) },                          \
	.rules = ADDITIVE_RULES, .extent = additive_extent,                    \
	.check = vtpu_additive_check, .prepare = vtpu_additive_prepare,        \
	.run = vtpu_additive_run, .describe = vtpu_additive_describe

#define LSTM_COMMON(cmd)                                                       \
	.size = sizeof(struct cmd), .flags_at = FLAGS_AT(cmd),                 \
	.fields = { FIELD(cmd, batch, 1, VTPU_MAX_DIM),                        \
		    FIELD(cmd, hidden, 1, VTPU_MAX_DIM),                       \
		    FIELD(cmd, row_stride, 1, VTPU_MAX_ELEMS),                 \
		    FIELD(cmd, gate_stride, 1, VTPU_MAX_ELEMS) },              \
	.rules = LSTM_RULES, .extent = lstm_extent,                            \
	.check = vtpu_lstm_check, .prepare = vtpu_lstm_prepare,                \
	.run = vtpu_lstm_run, .describe = vtpu_lstm_describe

/*
 * Operands are listed in the order the validator checks them and names
 * the first bad one. An operand a command has but does not use (a GEMM's
 * bias without VTPU_GEMM_BIAS) must be all zero, and is still listed:
 * that can only make commands look dependent, never independent.
 */
static const struct vtpu_engine_op_desc op_table[VTPU_OP_COUNT] = {
	[VTPU_OP_NOP] = {
		.name = "NOP",
		.size = sizeof(struct vtpu_cmd_hdr),
	},
	[VTPU_OP_GEMM] = {
		.name = "GEMM",
		.size = sizeof(struct vtpu_cmd_gemm),
		.flags_at = FLAGS_AT(vtpu_cmd_gemm),
		.flags = VTPU_GEMM_FLAGS,
		.noperands = 4,
		.operands = { IN(A, vtpu_cmd_gemm, a, 0),
			      IN(B, vtpu_cmd_gemm, b, 0),
			      OUT(C, vtpu_cmd_gemm, c, 4),
			      IN(BIAS, vtpu_cmd_gemm, bias, 4) },
		.fields = { FIELD(vtpu_cmd_gemm, m, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_gemm, n, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_gemm, k, 1, VTPU_MAX_DIM) },
		.rules = "lda, ldb and ldc at least the rows they stride",
		.extent = gemm_extent,
		.check = vtpu_gemm_check,
		.prepare = vtpu_gemm_cmd_prepare,
		.run = vtpu_gemm_run,
		.describe = vtpu_gemm_describe,
	},
	[VTPU_OP_FILL] = {
		.name = "FILL",
		.size = sizeof(struct vtpu_cmd_fill),
		.noperands = 1,
		.operands = { OUT(DST, vtpu_cmd_fill, dst, 4) },
		.fields = { FIELD(vtpu_cmd_fill, count, 1, 0xffffffffu) },
		.extent = fill_extent,
		.check = vtpu_fill_check,
		.prepare = vtpu_fill_prepare,
		.run = vtpu_fill_run,
	},
	[VTPU_OP_COPY] = {
		.name = "COPY",
		.size = sizeof(struct vtpu_cmd_copy),
		.noperands = 2,
		.operands = { OUT(DST, vtpu_cmd_copy, dst, 1),
			      IN(SRC, vtpu_cmd_copy, src, 1) },
		.fields = { FIELD(vtpu_cmd_copy, bytes, 1,
				  (u64)VTPU_MAX_DIM * VTPU_MAX_DIM) },
		.extent = copy_extent,
		.check = vtpu_copy_check,
		.prepare = vtpu_copy_prepare,
		.run = vtpu_copy_run,
	},
	[VTPU_OP_IM2COL] = {
		.name = "IM2COL",
		.size = sizeof(struct vtpu_cmd_im2col),
		.flags_at = FLAGS_AT(vtpu_cmd_im2col),
		.window = true,
		.noperands = 2,
		.operands = { IN(SRC, vtpu_cmd_im2col, image, 4),
			      OUT(DST, vtpu_cmd_im2col, cols, 4) },
		.rules = WINDOW_RULES,
		.extent = im2col_extent,
		.check = vtpu_im2col_check,
		.prepare = vtpu_im2col_prepare,
		.run = vtpu_im2col_run,
		.describe = vtpu_window_describe,
	},
	[VTPU_OP_COL2IM] = {
		.name = "COL2IM",
		.size = sizeof(struct vtpu_cmd_im2col),
		.flags_at = FLAGS_AT(vtpu_cmd_im2col),
		.window = true,
		.noperands = 2,
		.operands = { OUT(DST, vtpu_cmd_im2col, image, 4),
			      IN(SRC, vtpu_cmd_im2col, cols, 4) },
		.rules = WINDOW_RULES,
		.extent = im2col_extent,
		.check = vtpu_im2col_check,
		.prepare = vtpu_im2col_prepare,
		.run = vtpu_im2col_run,
		.describe = vtpu_window_describe,
	},
	[VTPU_OP_MAXPOOL] = {
		.name = "MAXPOOL",
		.size = sizeof(struct vtpu_cmd_pool),
		.flags_at = FLAGS_AT(vtpu_cmd_pool),
		.flags = VTPU_POOL_FLAGS,
		.window = true,
		.noperands = 3,
		.operands = { OUT(Y, vtpu_cmd_pool, y, 4),
			      OUT(INDEX, vtpu_cmd_pool, index, 4),
			      IN(X, vtpu_cmd_pool, x, 4) },
		.rules = WINDOW_RULES ", h * w < 2^32, pad + 1 < k at an end pad",
		.extent = pool_extent,
		.check = vtpu_pool_check,
		.prepare = vtpu_pool_prepare,
		.run = vtpu_pool_run,
		.describe = vtpu_window_describe,
	},
	[VTPU_OP_MAXPOOL_GRAD] = {
		.name = "MAXPOOL_GRAD",
		.size = sizeof(struct vtpu_cmd_pool),
		.flags_at = FLAGS_AT(vtpu_cmd_pool),
		.flags = VTPU_POOL_FLAGS,
		.window = true,
		.noperands = 3,
		.operands = { OUT(DX, vtpu_cmd_pool, x, 4),
			      IN(DY, vtpu_cmd_pool, y, 4),
			      IN(INDEX, vtpu_cmd_pool, index, 4) },
		.rules = WINDOW_RULES ", h * w < 2^32, pad + 1 < k at an end pad",
		.extent = pool_extent,
		.check = vtpu_pool_check,
		.prepare = vtpu_pool_prepare,
		.run = vtpu_pool_run,
		.describe = vtpu_window_describe,
	},
	[VTPU_OP_AVGPOOL] = {
		.name = "AVGPOOL",
		.operands = { OUT(Y, vtpu_cmd_avgpool, y, 4),
			      IN(X, vtpu_cmd_avgpool, x, 4) },
		AVGPOOL_COMMON,
	},
	[VTPU_OP_AVGPOOL_GRAD] = {
		.name = "AVGPOOL_GRAD",
		.operands = { OUT(DX, vtpu_cmd_avgpool, x, 4),
			      IN(DY, vtpu_cmd_avgpool, y, 4) },
		AVGPOOL_COMMON,
	},
	[VTPU_OP_ELEMENTWISE] = {
		.name = "ELEMENTWISE",
		.size = sizeof(struct vtpu_cmd_elementwise),
		.noperands = 3,
		.operands = { IN(X, vtpu_cmd_elementwise, x, 4),
			      IN(Y, vtpu_cmd_elementwise, y, 4),
			      OUT(Z, vtpu_cmd_elementwise, z, 4) },
		.fields = { FIELD(vtpu_cmd_elementwise, op, 0,
				  VTPU_EW_COUNT - 1),
			    FIELD(vtpu_cmd_elementwise, count, 1,
				  VTPU_MAX_ELEMS) },
		.extent = count_extent,
		.check = vtpu_ew_check,
		.prepare = vtpu_ew_prepare,
		.run = vtpu_ew_run,
		.describe = vtpu_ew_describe,
	},
	[VTPU_OP_REDUCE] = {
		.name = "REDUCE",
		.size = sizeof(struct vtpu_cmd_reduce),
		.noperands = 2,
		.operands = { IN(X, vtpu_cmd_reduce, x, 4),
			      OUT(Y, vtpu_cmd_reduce, y, 4) },
		.fields = { FIELD(vtpu_cmd_reduce, op, VTPU_REDUCE_COLS,
				  VTPU_REDUCE_SUMSQ_ROWS),
			    FIELD(vtpu_cmd_reduce, m, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_reduce, n, 1, VTPU_MAX_DIM) },
		.rules = "ldx at least n",
		.extent = reduce_extent,
		.check = vtpu_reduce_check,
		.prepare = vtpu_reduce_prepare,
		.run = vtpu_reduce_run,
		.describe = vtpu_reduce_describe,
	},
	[VTPU_OP_SOFTMAX_XENT] = {
		.name = "SOFTMAX_XENT",
		.size = sizeof(struct vtpu_cmd_softmax_xent),
		.flags_at = FLAGS_AT(vtpu_cmd_softmax_xent),
		.flags = VTPU_XENT_FLAGS,
		.noperands = 6,
		.operands = { IN(X, vtpu_cmd_softmax_xent, logits, 4),
			      IN(LABELS, vtpu_cmd_softmax_xent, labels, 4),
			      OUT(LOSS, vtpu_cmd_softmax_xent, loss, 4),
			      OUT(CORRECT, vtpu_cmd_softmax_xent, correct, 4),
			      OUT(DX, vtpu_cmd_softmax_xent, dlogits, 4),
			      OUT(PROBS, vtpu_cmd_softmax_xent, probs, 4) },
		.fields = { FIELD(vtpu_cmd_softmax_xent, m, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_softmax_xent, n, 1,
				  VTPU_XENT_MAX_CLASSES) },
		.rules = "m * n at most the element limit",
		.extent = xent_extent,
		.check = vtpu_xent_check,
		.prepare = vtpu_xent_prepare,
		.run = vtpu_xent_run,
	},
	[VTPU_OP_SGD] = {
		.name = "SGD",
		.size = sizeof(struct vtpu_cmd_sgd),
		.flags_at = FLAGS_AT(vtpu_cmd_sgd),
		.flags = VTPU_SGD_FLAGS,
		.noperands = 3,
		.operands = { OUT(PARAM, vtpu_cmd_sgd, param, 4),
			      IN(GRAD, vtpu_cmd_sgd, grad, 4),
			      OUT(MOM, vtpu_cmd_sgd, mom, 4) },
		.fields = { FIELD(vtpu_cmd_sgd, count, 1, VTPU_MAX_ELEMS) },
		.rules = "NESTEROV needs momentum",
		.extent = count_extent,
		.check = vtpu_sgd_check,
		.prepare = vtpu_sgd_prepare,
		.run = vtpu_optim_run,
	},
	[VTPU_OP_ADAM_STEP] = {
		.name = "ADAM_STEP",
		.size = sizeof(struct vtpu_cmd_adam_step),
		.noperands = 1,
		.operands = { OUT(STATE, vtpu_cmd_adam_step, state, 4) },
		.extent = adam_step_extent,
		.check = vtpu_adam_step_check,
		.prepare = vtpu_adam_step_prepare,
		.run = vtpu_optim_run,
	},
	[VTPU_OP_ADAM] = {
		.name = "ADAM",
		.size = sizeof(struct vtpu_cmd_adam),
		.flags_at = FLAGS_AT(vtpu_cmd_adam),
		.flags = VTPU_ADAM_FLAGS,
		.noperands = 5,
		.operands = { OUT(PARAM, vtpu_cmd_adam, param, 4),
			      IN(GRAD, vtpu_cmd_adam, grad, 4),
			      OUT(MOM, vtpu_cmd_adam, m, 4),
			      OUT(VEL, vtpu_cmd_adam, v, 4),
			      IN(STATE, vtpu_cmd_adam, state, 4) },
		.fields = { FIELD(vtpu_cmd_adam, count, 1, VTPU_MAX_ELEMS) },
		.extent = count_extent,
		.check = vtpu_adam_check,
		.prepare = vtpu_adam_prepare,
		.run = vtpu_optim_run,
	},
	[VTPU_OP_CAST] = {
		.name = "CAST",
		.size = sizeof(struct vtpu_cmd_cast),
		.noperands = 2,
		.operands = { IN(SRC, vtpu_cmd_cast, src, 0),
			      OUT(DST, vtpu_cmd_cast, dst, 0) },
		.fields = { FIELD(vtpu_cmd_cast, mode, 0, VTPU_CAST_U8_TO_F32),
			    FIELD(vtpu_cmd_cast, count, 1, VTPU_MAX_ELEMS) },
		.extent = cast_extent,
		.check = vtpu_cast_check,
		.prepare = vtpu_cast_prepare,
		.run = vtpu_cast_run,
	},
	[VTPU_OP_DROPOUT] = {
		.name = "DROPOUT",
		.size = sizeof(struct vtpu_cmd_dropout),
		.flags_at = FLAGS_AT(vtpu_cmd_dropout),
		.noperands = 4,
		.operands = { IN(X, vtpu_cmd_dropout, x, 4),
			      OUT(Z, vtpu_cmd_dropout, z, 4),
			      OUT(MASK, vtpu_cmd_dropout, mask, 4),
			      IN(STEP, vtpu_cmd_dropout, step, 4) },
		.fields = { FIELD(vtpu_cmd_dropout, count, 1, VTPU_MAX_ELEMS) },
		.rules = "rate in [0, 1)",
		.extent = count_extent,
		.check = vtpu_dropout_check,
		.prepare = vtpu_dropout_prepare,
		.run = vtpu_dropout_run,
	},
	[VTPU_OP_CONV_POOL] = {
		.name = "CONV_POOL",
		.size = sizeof(struct vtpu_cmd_conv_pool),
		.flags_at = FLAGS_AT(vtpu_cmd_conv_pool),
		.flags = VTPU_CONV_FLAGS,
		.window = true,
		.noperands = 6,
		.operands = { OUT(Y, vtpu_cmd_conv_pool, y, 4),
			      OUT(INDEX, vtpu_cmd_conv_pool, index, 1),
			      IN(X, vtpu_cmd_conv_pool, x, 4),
			      IN(W, vtpu_cmd_conv_pool, w, 4),
			      IN(BIAS, vtpu_cmd_conv_pool, bias, 4),
			      IN(DY, vtpu_cmd_conv_pool, dy, 4) },
		.fields = { FIELD(vtpu_cmd_conv_pool, oc, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_conv_pool, pool_stride_h, 1,
				  VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_conv_pool, pool_stride_w, 1,
				  VTPU_MAX_DIM) },
		.rules = POOL_RULES,
		.extent = conv_pool_extent,
		.check = vtpu_conv_pool_check,
		.prepare = vtpu_convpool_prepare,
		.run = vtpu_convpool_run,
		.describe = vtpu_convpool_describe,
	},
	[VTPU_OP_CONV_POOL_WGRAD] = {
		.name = "CONV_POOL_WGRAD",
		.size = sizeof(struct vtpu_cmd_conv_pool),
		.flags_at = FLAGS_AT(vtpu_cmd_conv_pool),
		.window = true,
		.noperands = 6,
		.operands = { OUT(DW, vtpu_cmd_conv_pool, w, 4),
			      OUT(DBIAS, vtpu_cmd_conv_pool, bias, 4),
			      IN(X, vtpu_cmd_conv_pool, x, 4),
			      IN(DY, vtpu_cmd_conv_pool, dy, 4),
			      IN(INDEX, vtpu_cmd_conv_pool, index, 1),
			      IN(Y, vtpu_cmd_conv_pool, y, 4) },
		.fields = { FIELD(vtpu_cmd_conv_pool, oc, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_conv_pool, pool_stride_h, 1,
				  VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_conv_pool, pool_stride_w, 1,
				  VTPU_MAX_DIM) },
		.rules = POOL_RULES,
		.extent = conv_pool_extent,
		.check = vtpu_conv_pool_check,
		.prepare = vtpu_convpool_prepare,
		.run = vtpu_convpool_run,
		.describe = vtpu_convpool_describe,
	},
	[VTPU_OP_CONV] = {
		.name = "CONV",
		.size = sizeof(struct vtpu_cmd_conv),
		.flags_at = FLAGS_AT(vtpu_cmd_conv),
		.flags = VTPU_CONV_BIAS | VTPU_CONV_RELU,
		.window = true,
		.noperands = 4,
		.operands = { OUT(Y, vtpu_cmd_conv, y, 4),
			      IN(X, vtpu_cmd_conv, x, 4),
			      IN(W, vtpu_cmd_conv, w, 4),
			      IN(BIAS, vtpu_cmd_conv, bias, 4) },
		.fields = { FIELD(vtpu_cmd_conv, oc, 1, VTPU_MAX_DIM) },
		.rules = CONV_RULES,
		.extent = conv_extent,
		.check = vtpu_conv_check,
		.prepare = vtpu_conv_gemm_prepare,
		.run = vtpu_gemm_run,
		.describe = vtpu_conv_gemm_describe,
	},
	[VTPU_OP_CONV_DGRAD] = {
		.name = "CONV_DGRAD",
		.size = sizeof(struct vtpu_cmd_conv),
		.flags_at = FLAGS_AT(vtpu_cmd_conv),
		.flags = VTPU_CONV_ACCUMULATE,
		.window = true,
		.noperands = 4,
		.operands = { OUT(DX, vtpu_cmd_conv, x, 4),
			      IN(DY, vtpu_cmd_conv, y, 4),
			      IN(W, vtpu_cmd_conv, w, 4),
			      IN(BIAS, vtpu_cmd_conv, bias, 4) },
		.fields = { FIELD(vtpu_cmd_conv, oc, 1, VTPU_MAX_DIM) },
		.rules = CONV_RULES ", stride 1, kh*kw*oc too",
		.extent = conv_extent,
		.check = vtpu_conv_check,
		.prepare = vtpu_conv_gemm_prepare,
		.run = vtpu_gemm_run,
		.describe = vtpu_conv_gemm_describe,
	},
	[VTPU_OP_CONV_WGRAD] = {
		.name = "CONV_WGRAD",
		.size = sizeof(struct vtpu_cmd_conv),
		.flags_at = FLAGS_AT(vtpu_cmd_conv),
		.flags = VTPU_CONV_ACCUMULATE,
		.window = true,
		.noperands = 4,
		.operands = { OUT(DW, vtpu_cmd_conv, w, 4),
			      IN(X, vtpu_cmd_conv, x, 4),
			      IN(DY, vtpu_cmd_conv, y, 4),
			      IN(BIAS, vtpu_cmd_conv, bias, 4) },
		.fields = { FIELD(vtpu_cmd_conv, oc, 1, VTPU_MAX_DIM) },
		.rules = CONV_RULES,
		.extent = conv_extent,
		.check = vtpu_conv_check,
		.prepare = vtpu_conv_gemm_prepare,
		.run = vtpu_gemm_run,
		.describe = vtpu_conv_gemm_describe,
	},
	[VTPU_OP_EMBEDDING] = {
		.name = "EMBEDDING",
		.size = sizeof(struct vtpu_cmd_embedding),
		.flags_at = FLAGS_AT(vtpu_cmd_embedding),
		.noperands = 3,
		.operands = { OUT(Y, vtpu_cmd_embedding, y, 4),
			      IN(INDEX, vtpu_cmd_embedding, ids, 4),
			      IN(W, vtpu_cmd_embedding, table, 4) },
		EMBEDDING_COMMON,
	},
	[VTPU_OP_EMBEDDING_GRAD] = {
		.name = "EMBEDDING_GRAD",
		.size = sizeof(struct vtpu_cmd_embedding),
		.flags_at = FLAGS_AT(vtpu_cmd_embedding),
		.flags = VTPU_EMBEDDING_FLAGS,
		.noperands = 3,
		.operands = { OUT(DW, vtpu_cmd_embedding, table, 4),
			      IN(INDEX, vtpu_cmd_embedding, ids, 4),
			      IN(DY, vtpu_cmd_embedding, y, 4) },
		EMBEDDING_COMMON,
	},
	[VTPU_OP_GEMM_BATCHED] = {
		.name = "GEMM_BATCHED",
		.size = sizeof(struct vtpu_cmd_gemm_batched),
		.flags_at = FLAGS_AT(vtpu_cmd_gemm_batched),
		.flags = VTPU_GEMM_BATCHED_FLAGS,
		.noperands = 3,
		.operands = { IN(A, vtpu_cmd_gemm_batched, a, 0),
			      IN(B, vtpu_cmd_gemm_batched, b, 0),
			      OUT(C, vtpu_cmd_gemm_batched, c, 4) },
		.fields = { FIELD(vtpu_cmd_gemm_batched, batch, 1,
				  VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_gemm_batched, m, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_gemm_batched, n, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_gemm_batched, k, 1, VTPU_MAX_DIM) },
		.rules = BATCHED_RULES,
		.extent = gemm_batched_extent,
		.check = vtpu_gemm_batched_check,
		.prepare = vtpu_gemm_batched_prepare,
		.run = vtpu_gemm_run,
		.describe = vtpu_gemm_batched_describe,
	},
	[VTPU_OP_SOFTMAX] = {
		.name = "SOFTMAX",
		.size = sizeof(struct vtpu_cmd_softmax),
		.flags_at = FLAGS_AT(vtpu_cmd_softmax),
		.flags = VTPU_SOFTMAX_FLAGS,
		.noperands = 4,
		.operands = { OUT(Y, vtpu_cmd_softmax, y, 4),
			      IN(X, vtpu_cmd_softmax, x, 4),
			      IN(LENGTHS, vtpu_cmd_softmax, lengths, 4),
			      IN(DY, vtpu_cmd_softmax, dy, 4) },
		SOFTMAX_COMMON,
	},
	[VTPU_OP_SOFTMAX_GRAD] = {
		.name = "SOFTMAX_GRAD",
		.size = sizeof(struct vtpu_cmd_softmax),
		.flags_at = FLAGS_AT(vtpu_cmd_softmax),
		.flags = VTPU_SOFTMAX_FLAGS,
		.noperands = 4,
		.operands = { OUT(DX, vtpu_cmd_softmax, x, 4),
			      IN(Y, vtpu_cmd_softmax, y, 4),
			      IN(DY, vtpu_cmd_softmax, dy, 4),
			      IN(LENGTHS, vtpu_cmd_softmax, lengths, 4) },
		SOFTMAX_COMMON,
	},
	[VTPU_OP_CLIP_NORM] = {
		.name = "CLIP_NORM",
		.size = sizeof(struct vtpu_cmd_clip_norm),
		.noperands = 2,
		.operands = { IN(SUMSQ, vtpu_cmd_clip_norm, sumsq, 4),
			      OUT(X, vtpu_cmd_clip_norm, x, 4) },
		.fields = { FIELD(vtpu_cmd_clip_norm, count, 1,
				  VTPU_MAX_ELEMS) },
		.rules = "max_norm positive and finite",
		.extent = clip_norm_extent,
		.check = vtpu_clip_norm_check,
		.prepare = vtpu_clip_norm_prepare,
		.run = vtpu_clip_norm_run,
	},
	[VTPU_OP_ARGMAX] = {
		.name = "ARGMAX",
		.size = sizeof(struct vtpu_cmd_argmax),
		.flags_at = FLAGS_AT(vtpu_cmd_argmax),
		.noperands = 2,
		.operands = { IN(X, vtpu_cmd_argmax, x, 4),
			      OUT(INDEX, vtpu_cmd_argmax, y, 4) },
		.fields = { FIELD(vtpu_cmd_argmax, m, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_argmax, n, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_argmax, ldx, 1, 0xffffffffu) },
		.rules = "ldx >= n, m * ldx at most the element limit",
		.extent = argmax_extent,
		.check = vtpu_argmax_check,
		.prepare = vtpu_argmax_prepare,
		.run = vtpu_argmax_run,
		.describe = vtpu_argmax_describe,
	},
	[VTPU_OP_BATCHNORM] = {
		.name = "BATCHNORM",
		.size = sizeof(struct vtpu_cmd_batchnorm),
		.flags_at = FLAGS_AT(vtpu_cmd_batchnorm),
		.flags = VTPU_BATCHNORM_FLAGS,
		.noperands = 7,
		.operands = { IN(X, vtpu_cmd_batchnorm, x, 4),
			      OUT(Y, vtpu_cmd_batchnorm, y, 4),
			      IN(W, vtpu_cmd_batchnorm, gamma, 4),
			      IN(BIAS, vtpu_cmd_batchnorm, beta, 4),
			      OUT(STATE, vtpu_cmd_batchnorm, stats, 4),
			      OUT(MOM, vtpu_cmd_batchnorm, moving_mean, 4),
			      OUT(VEL, vtpu_cmd_batchnorm, moving_var, 4) },
		.fields = { FIELD(vtpu_cmd_batchnorm, rows, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_batchnorm, channels, 1,
				  VTPU_MAX_DIM) },
		.rules = BATCHNORM_RULES,
		.extent = batchnorm_extent,
		.check = vtpu_batchnorm_check,
		.prepare = vtpu_batchnorm_prepare,
		.run = vtpu_batchnorm_run,
		.describe = vtpu_batchnorm_describe,
	},
	[VTPU_OP_BATCHNORM_GRAD] = {
		.name = "BATCHNORM_GRAD",
		.size = sizeof(struct vtpu_cmd_batchnorm_grad),
		.flags_at = FLAGS_AT(vtpu_cmd_batchnorm_grad),
		.noperands = 7,
		.operands = { IN(X, vtpu_cmd_batchnorm_grad, x, 4),
			      IN(DY, vtpu_cmd_batchnorm_grad, dy, 4),
			      IN(W, vtpu_cmd_batchnorm_grad, gamma, 4),
			      IN(STATE, vtpu_cmd_batchnorm_grad, stats, 4),
			      OUT(DX, vtpu_cmd_batchnorm_grad, dx, 4),
			      OUT(DW, vtpu_cmd_batchnorm_grad, dgamma, 4),
			      OUT(DBIAS, vtpu_cmd_batchnorm_grad, dbeta, 4) },
		.fields = { FIELD(vtpu_cmd_batchnorm_grad, rows, 1,
				  VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_batchnorm_grad, channels, 1,
				  VTPU_MAX_DIM) },
		.rules = BATCHNORM_RULES,
		.extent = batchnorm_extent,
		.check = vtpu_batchnorm_check,
		.prepare = vtpu_batchnorm_prepare,
		.run = vtpu_batchnorm_run,
		.describe = vtpu_batchnorm_describe,
	},
	[VTPU_OP_DWCONV] = {
		.name = "DWCONV",
		.flags = VTPU_CONV_BIAS | VTPU_CONV_RELU,
		.operands = { OUT(Y, vtpu_cmd_dwconv, y, 4),
			      IN(X, vtpu_cmd_dwconv, x, 4),
			      IN(W, vtpu_cmd_dwconv, w, 4),
			      IN(BIAS, vtpu_cmd_dwconv, bias, 4) },
		DWCONV_COMMON,
	},
	[VTPU_OP_DWCONV_DGRAD] = {
		.name = "DWCONV_DGRAD",
		.flags = VTPU_CONV_ACCUMULATE,
		.operands = { OUT(DX, vtpu_cmd_dwconv, x, 4),
			      IN(DY, vtpu_cmd_dwconv, y, 4),
			      IN(W, vtpu_cmd_dwconv, w, 4),
			      IN(BIAS, vtpu_cmd_dwconv, bias, 4) },
		DWCONV_COMMON,
	},
	[VTPU_OP_DWCONV_WGRAD] = {
		.name = "DWCONV_WGRAD",
		.flags = VTPU_CONV_ACCUMULATE,
		.operands = { OUT(DW, vtpu_cmd_dwconv, w, 4),
			      IN(X, vtpu_cmd_dwconv, x, 4),
			      IN(DY, vtpu_cmd_dwconv, y, 4),
			      IN(BIAS, vtpu_cmd_dwconv, bias, 4) },
		DWCONV_COMMON,
	},
	[VTPU_OP_IMAGE_AUGMENT] = {
		.name = "IMAGE_AUGMENT",
		.size = sizeof(struct vtpu_cmd_image_augment),
		.flags = VTPU_AUGMENT_FLAGS,
		.flags_at = FLAGS_AT(vtpu_cmd_image_augment),
		.noperands = 3,
		.operands = { IN(X, vtpu_cmd_image_augment, x, 4),
			      OUT(Y, vtpu_cmd_image_augment, y, 4),
			      IN(STEP, vtpu_cmd_image_augment, step, 4) },
		.fields = { FIELD(vtpu_cmd_image_augment, n, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_image_augment, h, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_image_augment, w, 1, VTPU_MAX_DIM),
			    FIELD(vtpu_cmd_image_augment, c, 1, VTPU_MAX_DIM) },
		.rules = "1 <= oh <= h, 1 <= ow <= w, n*h*w*c within the limit",
		.extent = augment_extent,
		.check = vtpu_augment_check,
		.prepare = vtpu_augment_prepare,
		.run = vtpu_augment_run,
		.describe = vtpu_augment_describe,
	},
	[VTPU_OP_ADDITIVE_SCORE] = {
		.name = "ADDITIVE_SCORE",
		.operands = { OUT(C, vtpu_cmd_additive_score, s, 4),
			      IN(A, vtpu_cmd_additive_score, q, 4),
			      IN(B, vtpu_cmd_additive_score, k, 4),
			      IN(W, vtpu_cmd_additive_score, v, 4),
			      IN(DA, vtpu_cmd_additive_score, dq, 4),
			      IN(DB, vtpu_cmd_additive_score, dk, 4),
			      IN(DW, vtpu_cmd_additive_score, dv, 4) },
		ADDITIVE_COMMON,
	},
	[VTPU_OP_ADDITIVE_SCORE_GRAD] = {
		.name = "ADDITIVE_SCORE_GRAD",
		.operands = { OUT(DA, vtpu_cmd_additive_score, dq, 4),
			      OUT(DB, vtpu_cmd_additive_score, dk, 4),
			      OUT(DW, vtpu_cmd_additive_score, dv, 4),
			      IN(A, vtpu_cmd_additive_score, q, 4),
			      IN(B, vtpu_cmd_additive_score, k, 4),
			      IN(W, vtpu_cmd_additive_score, v, 4),
			      IN(C, vtpu_cmd_additive_score, s, 4) },
		ADDITIVE_COMMON,
	},
	[VTPU_OP_LSTM_CELL] = {
		.name = "LSTM_CELL",
		.noperands = 6,
		.operands = { IN(GATES, vtpu_cmd_lstm_cell, gates, 4),
			      IN(CELL_PREV, vtpu_cmd_lstm_cell, c_prev, 4),
			      OUT(ACT, vtpu_cmd_lstm_cell, act, 4),
			      OUT(CELL, vtpu_cmd_lstm_cell, c, 4),
			      OUT(TANH_CELL, vtpu_cmd_lstm_cell, tc, 4),
			      OUT(HIDDEN, vtpu_cmd_lstm_cell, h, 4) },
		LSTM_COMMON(vtpu_cmd_lstm_cell),
	},
	[VTPU_OP_LSTM_CELL_GRAD] = {
		.name = "LSTM_CELL_GRAD",
		.noperands = 7,
		.operands = { IN(ACT, vtpu_cmd_lstm_cell_grad, act, 4),
			      IN(CELL_PREV, vtpu_cmd_lstm_cell_grad, c_prev, 4),
			      IN(TANH_CELL, vtpu_cmd_lstm_cell_grad, tc, 4),
			      IN(DHIDDEN, vtpu_cmd_lstm_cell_grad, dh, 4),
			      IN(DCELL, vtpu_cmd_lstm_cell_grad, dc_next, 4),
			      OUT(DGATES, vtpu_cmd_lstm_cell_grad, dgates, 4),
			      OUT(DCELL_PREV, vtpu_cmd_lstm_cell_grad, dc_prev,
				  4) },
		LSTM_COMMON(vtpu_cmd_lstm_cell_grad),
	},
};

const struct vtpu_engine_op_desc *vtpu_engine_op_desc(u32 opcode)
{
	return opcode < VTPU_OP_COUNT && op_table[opcode].size ?
		       &op_table[opcode] : NULL;
}

const char *vtpu_engine_op_name(u32 opcode)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(opcode);

	return d ? d->name : "?";
}

u32 vtpu_engine_cmd_size(u32 opcode)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(opcode);

	return d ? d->size : 0;
}

/*
 * Operand ids are below 64 (the selftests' generator walks them as a
 * bitmask; libvtpu's planner up to its MAX_OPERAND_ID).
 */
#define OPERAND_IDS 64

const char *vtpu_engine_operand_name(u32 id)
{
	static const char *const names[OPERAND_IDS] = {
		[VTPU_OPERAND_NONE] = "-",
		[VTPU_OPERAND_A] = "A",
		[VTPU_OPERAND_B] = "B",
		[VTPU_OPERAND_C] = "C",
		[VTPU_OPERAND_BIAS] = "bias",
		[VTPU_OPERAND_DST] = "dst",
		[VTPU_OPERAND_SRC] = "src",
		[VTPU_OPERAND_X] = "x",
		[VTPU_OPERAND_Y] = "y",
		[VTPU_OPERAND_Z] = "z",
		[VTPU_OPERAND_DX] = "dx",
		[VTPU_OPERAND_DY] = "dy",
		[VTPU_OPERAND_INDEX] = "index",
		[VTPU_OPERAND_LABELS] = "labels",
		[VTPU_OPERAND_LOSS] = "loss",
		[VTPU_OPERAND_CORRECT] = "correct",
		[VTPU_OPERAND_PROBS] = "probs",
		[VTPU_OPERAND_PARAM] = "param",
		[VTPU_OPERAND_GRAD] = "grad",
		[VTPU_OPERAND_MOM] = "mom",
		[VTPU_OPERAND_VEL] = "vel",
		[VTPU_OPERAND_STATE] = "state",
		[VTPU_OPERAND_MASK] = "mask",
		[VTPU_OPERAND_STEP] = "step",
		[VTPU_OPERAND_W] = "w",
		[VTPU_OPERAND_DW] = "dw",
		[VTPU_OPERAND_DBIAS] = "dbias",
		[VTPU_OPERAND_LENGTHS] = "lengths",
		[VTPU_OPERAND_SUMSQ] = "sumsq",
		[VTPU_OPERAND_DA] = "da",
		[VTPU_OPERAND_DB] = "db",
		[VTPU_OPERAND_GATES] = "gates",
		[VTPU_OPERAND_ACT] = "act",
		[VTPU_OPERAND_CELL_PREV] = "c_prev",
		[VTPU_OPERAND_CELL] = "c",
		[VTPU_OPERAND_TANH_CELL] = "tc",
		[VTPU_OPERAND_HIDDEN] = "h",
		[VTPU_OPERAND_DHIDDEN] = "dh",
		[VTPU_OPERAND_DCELL] = "dc_next",
		[VTPU_OPERAND_DGATES] = "dgates",
		[VTPU_OPERAND_DCELL_PREV] = "dc_prev",
	};

	if (id >= OPERAND_IDS || !names[id])
		return "?";
	return names[id];
}

/* The table's entry for operand @id of @cmd, or NULL. */
static const struct vtpu_engine_opnd *
find_operand(const struct vtpu_engine_op_desc *d, u32 id)
{
	u32 i;

	for (i = 0; d && i < d->noperands; i++)
		if (d->operands[i].id == id)
			return &d->operands[i];
	return NULL;
}

int vtpu_operand_info(const struct vtpu_cmd_hdr *cmd, u32 id,
		      const struct vtpu_operand **opnd, u64 *bytes, u32 *align)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(cmd->opcode);
	const struct vtpu_engine_opnd *o = find_operand(d, id);

	*opnd = NULL;
	if (!o)
		return -ENOENT;
	*opnd = (const void *)((const u8 *)cmd + o->offset);
	*align = o->align;
	*bytes = d->extent(cmd, id, align);
	return 0;
}

int vtpu_engine_operand(const struct vtpu_cmd_hdr *cmd, u32 id,
			const struct vtpu_operand **opnd, u64 *bytes)
{
	u32 align;

	return vtpu_operand_info(cmd, id, opnd, bytes, &align);
}

u32 vtpu_engine_operand_align(const struct vtpu_cmd_hdr *cmd, u32 id)
{
	const struct vtpu_operand *o;
	u64 bytes;
	u32 align;

	return vtpu_operand_info(cmd, id, &o, &bytes, &align) ? 0 : align;
}

u32 vtpu_engine_spans(const struct vtpu_cmd_hdr *cmd,
		      const struct vtpu_engine_buf *bufs,
		      struct vtpu_engine_span *spans)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(cmd->opcode);
	const struct vtpu_operand *o;
	u32 i, align;

	for (i = 0; d && i < d->noperands; i++) {
		o = (const void *)((const u8 *)cmd + d->operands[i].offset);
		spans[i].lo = (const u8 *)bufs[o->buf].base + o->offset;
		spans[i].hi = spans[i].lo +
			      d->extent(cmd, d->operands[i].id, &align);
		spans[i].write = d->operands[i].write;
	}
	return d ? d->noperands : 0;
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
