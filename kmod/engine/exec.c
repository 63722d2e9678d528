// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Decode validated commands into struct vtpu_engine_op and run their
 * tiles. Op families with real arithmetic live in their own files (gemm.c,
 * ops_*.c: this file decodes their commands, they tile and run them);
 * the memory ops (fill, copy) are here, split into chunks so that large
 * ones spread over the workers and each call stays short.
 */
#include "engine_internal.h"

/* Elements (fill) or bytes (copy) per tile: ~64-256 KiB of stores. */
#define FILL_CHUNK (16u * 1024)
#define COPY_CHUNK (256u * 1024)

static float f32_from_bits(u32 bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static void *operand_ptr(const struct vtpu_engine_buf *bufs,
			 const struct vtpu_operand *o)
{
	return (u8 *)bufs[o->buf].base + o->offset;
}

static u32 chunks(u64 n, u32 chunk)
{
	return (u32)((n + chunk - 1) / chunk);
}

/*
 * At most VTPU_OPS_CHUNK elements per tile. An op with enough work (at
 * least VTPU_OPS_MIN_CHUNK a tile) is cut into at least one tile per
 * worker, and into a number of tiles the workers divide evenly, so that
 * none idles while another runs a last tile: a dense layer's 128 x 512
 * ReLU gradient ran as one tile on one of two workers, and mnist's Adam
 * as 11 tiles (six on one worker, five on the other). Tiles are whole
 * vectors (16 floats); each element's result does not depend on its tile.
 */
void vtpu_ops_tile(struct vtpu_engine_op *op, u64 count)
{
	u64 w = vtpu_min_u64(op->workers, 1u << 16);
	u64 tiles = (count + VTPU_OPS_CHUNK - 1) / VTPU_OPS_CHUNK;
	u64 fit = count / VTPU_OPS_MIN_CHUNK;	/* tiles of at least MIN */
	u64 even = (tiles + w - 1) / w * w;

	if (even <= fit)
		tiles = even;
	else if (tiles < vtpu_min_u64(w, fit))
		tiles = vtpu_min_u64(w, fit);
	if (!tiles)
		tiles = 1;
	op->chunk = ((count + tiles - 1) / tiles + 15) / 16 * 16;
	op->ntiles = chunks(count, (u32)op->chunk);
}

static void prepare_conv(struct vtpu_engine_op *op,
			 const struct vtpu_cmd_hdr *cmd,
			 const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_im2col *ic = (const void *)cmd;
	const struct vtpu_cmd_pool *pl = (const void *)cmd;

	if (cmd->opcode == VTPU_OP_IM2COL || cmd->opcode == VTPU_OP_COL2IM) {
		vtpu_window_decode(&ic->win, &op->conv.win);
		op->conv.image = operand_ptr(bufs, &ic->image);
		op->conv.cols = operand_ptr(bufs, &ic->cols);
		vtpu_conv_prepare(op);
	} else {
		vtpu_window_decode(&pl->win, &op->conv.win);
		op->conv.x = operand_ptr(bufs, &pl->x);
		op->conv.y = operand_ptr(bufs, &pl->y);
		op->conv.index = operand_ptr(bufs, &pl->index);
		vtpu_pool_prepare(op);
	}
}

static void prepare_convpool(struct vtpu_engine_op *op,
			     const struct vtpu_cmd_conv_pool *c,
			     const struct vtpu_engine_buf *bufs)
{
	struct vtpu_engine_convpool *cp = &op->convpool;

	vtpu_convpool_decode(c, cp);
	cp->x = operand_ptr(bufs, &c->x);
	cp->index = operand_ptr(bufs, &c->index);
	if (c->hdr.opcode == VTPU_OP_CONV_POOL) {
		cp->w = operand_ptr(bufs, &c->w);
		cp->bias = operand_ptr(bufs, &c->bias);
		cp->y = operand_ptr(bufs, &c->y);
	} else {
		cp->dw = operand_ptr(bufs, &c->w);
		cp->dbias = operand_ptr(bufs, &c->bias);
		cp->dy = operand_ptr(bufs, &c->dy);
	}
	vtpu_convpool_prepare(op);
}

/*
 * CONV, CONV_DGRAD, CONV_WGRAD: the GEMM that IM2COL + GEMM (+ COL2IM)
 * would run, with A the implicit im2col matrix (gemm_tmpl.h packs it).
 */
static void prepare_conv_gemm(struct vtpu_engine_op *op,
			      const struct vtpu_cmd_conv *c,
			      const struct vtpu_engine_buf *bufs)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	struct vtpu_engine_window *w = &g->win;
	u64 rows;

	vtpu_conv_decode(c, w, &rows);
	g->dtype = VTPU_DTYPE_F32;
	g->alpha = 1.0f;
	g->beta = (c->flags & VTPU_CONV_ACCUMULATE) ? 1.0f : 0.0f;
	g->implicit = 1;
	g->ldb = c->oc;
	switch (c->hdr.opcode) {
	case VTPU_OP_CONV:	/* y = act(cols * w + bias) */
		g->m = (u32)rows;
		g->n = c->oc;
		g->k = (u32)w->kdim;
		g->lda = g->k;
		g->ldc = c->oc;
		g->a = operand_ptr(bufs, &c->x);
		g->b = operand_ptr(bufs, &c->w);
		g->c = operand_ptr(bufs, &c->y);
		if (c->flags & VTPU_CONV_BIAS) {
			g->flags |= VTPU_GEMM_BIAS;
			g->bias = operand_ptr(bufs, &c->bias);
		}
		if (c->flags & VTPU_CONV_RELU)
			g->flags |= VTPU_GEMM_RELU;
		break;
	case VTPU_OP_CONV_WGRAD:	/* dw = cols^T * dy */
		g->m = (u32)w->kdim;
		g->n = c->oc;
		g->k = (u32)rows;
		g->flags = VTPU_GEMM_TRANS_A;
		g->lda = g->m;
		g->ldc = c->oc;
		g->a = operand_ptr(bufs, &c->x);
		g->b = operand_ptr(bufs, &c->y);
		g->c = operand_ptr(bufs, &c->w);
		break;
	default:
		/*
		 * CONV_DGRAD (stride 1): dx is the convolution of dy, padded
		 * so that its output is x's size, with w turned (flip_oc).
		 */
		g->m = w->n * w->h * w->w;
		g->n = w->c;
		g->k = w->kh * w->kw * c->oc;
		g->lda = g->k;
		g->ldc = w->c;
		g->flip_oc = c->oc;
		g->a = operand_ptr(bufs, &c->y);
		g->b = operand_ptr(bufs, &c->w);
		g->c = operand_ptr(bufs, &c->x);
		w->h = w->oh;
		w->w = w->ow;
		w->c = c->oc;
		w->ph = w->kh - 1 - w->ph;
		w->pw = w->kw - 1 - w->pw;
		w->oh = c->win.h;
		w->ow = c->win.w;
		w->kdim = g->k;
		break;
	}
	vtpu_gemm_prepare(op);
}

static void prepare_ew(struct vtpu_engine_op *op,
		       const struct vtpu_cmd_elementwise *e,
		       const struct vtpu_engine_buf *bufs)
{
	op->ew.op = e->op;
	op->ew.count = e->count;
	op->ew.alpha = f32_from_bits(e->alpha);
	op->ew.beta = f32_from_bits(e->beta);
	op->ew.x = operand_ptr(bufs, &e->x);
	/* an unused y is all zero: buffer 0 exists (x uses one); not read */
	op->ew.y = operand_ptr(bufs, &e->y);
	op->ew.z = operand_ptr(bufs, &e->z);
	vtpu_ew_prepare(op);
}

static void prepare_reduce(struct vtpu_engine_op *op,
			   const struct vtpu_cmd_reduce *r,
			   const struct vtpu_engine_buf *bufs)
{
	op->reduce.op = r->op;
	op->reduce.m = r->m;
	op->reduce.n = r->n;
	op->reduce.ldx = r->ldx;
	op->reduce.alpha = f32_from_bits(r->alpha);
	op->reduce.beta = f32_from_bits(r->beta);
	op->reduce.x = operand_ptr(bufs, &r->x);
	op->reduce.y = operand_ptr(bufs, &r->y);
	vtpu_reduce_prepare(op);
}

static void prepare_xent(struct vtpu_engine_op *op,
			 const struct vtpu_cmd_softmax_xent *x,
			 const struct vtpu_engine_buf *bufs)
{
	op->xent.m = x->m;
	op->xent.n = x->n;
	op->xent.flags = x->flags;
	op->xent.scale = f32_from_bits(x->scale);
	op->xent.logits = operand_ptr(bufs, &x->logits);
	op->xent.labels = operand_ptr(bufs, &x->labels);
	op->xent.loss = operand_ptr(bufs, &x->loss);
	op->xent.correct = operand_ptr(bufs, &x->correct);
	if (x->flags & VTPU_XENT_DLOGITS)
		op->xent.dlogits = operand_ptr(bufs, &x->dlogits);
	if (x->flags & VTPU_XENT_PROBS)
		op->xent.probs = operand_ptr(bufs, &x->probs);
	vtpu_xent_prepare(op);
}

static void prepare_optim(struct vtpu_engine_op *op,
			  const struct vtpu_cmd_hdr *cmd,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_sgd *s = (const void *)cmd;
	const struct vtpu_cmd_adam_step *as = (const void *)cmd;
	const struct vtpu_cmd_adam *a = (const void *)cmd;
	struct vtpu_engine_optim *o = &op->optim;

	switch (cmd->opcode) {
	case VTPU_OP_SGD:
		o->count = s->count;
		o->lr = f32_from_bits(s->lr);
		o->momentum = f32_from_bits(s->momentum);
		o->weight_decay = f32_from_bits(s->weight_decay);
		o->flags = s->flags;
		o->param = operand_ptr(bufs, &s->param);
		o->grad = operand_ptr(bufs, &s->grad);
		if (s->momentum)
			o->mom = operand_ptr(bufs, &s->mom);
		break;
	case VTPU_OP_ADAM_STEP:
		o->count = 1;
		o->beta1 = f32_from_bits(as->beta1);
		o->beta2 = f32_from_bits(as->beta2);
		o->state = operand_ptr(bufs, &as->state);
		break;
	default:
		o->count = a->count;
		o->lr = f32_from_bits(a->lr);
		o->beta1 = f32_from_bits(a->beta1);
		o->beta2 = f32_from_bits(a->beta2);
		o->eps = f32_from_bits(a->eps);
		o->weight_decay = f32_from_bits(a->weight_decay);
		o->flags = a->flags;
		o->param = operand_ptr(bufs, &a->param);
		o->grad = operand_ptr(bufs, &a->grad);
		o->mom = operand_ptr(bufs, &a->m);
		o->vel = operand_ptr(bufs, &a->v);
		o->state = operand_ptr(bufs, &a->state);
		break;
	}
	vtpu_optim_prepare(op);
}

static void prepare_cast(struct vtpu_engine_op *op,
			 const struct vtpu_cmd_cast *c,
			 const struct vtpu_engine_buf *bufs)
{
	op->cast.mode = c->mode;
	op->cast.count = c->count;
	op->cast.scale = f32_from_bits(c->scale);
	op->cast.shift = f32_from_bits(c->shift);
	op->cast.src = operand_ptr(bufs, &c->src);
	op->cast.dst = operand_ptr(bufs, &c->dst);
	vtpu_cast_prepare(op);
}

static void prepare_dropout(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_dropout *d,
			    const struct vtpu_engine_buf *bufs)
{
	float rate = f32_from_bits(d->rate);

	op->dropout.count = d->count;
	op->dropout.seed = d->seed;
	/* rate < 1: the product is below 2^32 */
	op->dropout.threshold = (u32)(rate * 4294967296.0);
	op->dropout.scale = 1.0f / (1.0f - rate);
	op->dropout.x = operand_ptr(bufs, &d->x);
	op->dropout.z = operand_ptr(bufs, &d->z);
	op->dropout.mask = operand_ptr(bufs, &d->mask);
	op->dropout.step = operand_ptr(bufs, &d->step);
	vtpu_dropout_prepare(op);
}

ENGINE_SEQ_DEFINE(engine_op_seq);

void vtpu_engine_op_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs, u32 simd,
			    u32 workers)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;
	const struct vtpu_cmd_fill *f = (const void *)cmd;
	const struct vtpu_cmd_copy *c = (const void *)cmd;

	memset(op, 0, sizeof(*op));
	op->opcode = cmd->opcode;
	op->simd = simd;
	op->workers = workers ? workers : 1;
	op->ntiles = 1;
	op->nsteps = 1;
	op->seq = ENGINE_SEQ_NEXT(engine_op_seq);

	switch (cmd->opcode) {
	case VTPU_OP_GEMM:
		op->gemm.m = g->m;
		op->gemm.n = g->n;
		op->gemm.k = g->k;
		op->gemm.flags = g->flags;
		op->gemm.lda = g->lda;
		op->gemm.ldb = g->ldb;
		op->gemm.ldc = g->ldc;
		op->gemm.dtype = g->dtype;
		op->gemm.alpha = f32_from_bits(g->alpha);
		op->gemm.beta = f32_from_bits(g->beta);
		op->gemm.a = operand_ptr(bufs, &g->a);
		op->gemm.b = operand_ptr(bufs, &g->b);
		op->gemm.c = operand_ptr(bufs, &g->c);
		op->gemm.bias = (g->flags & VTPU_GEMM_BIAS) ?
					operand_ptr(bufs, &g->bias) : NULL;
		vtpu_gemm_prepare(op);
		break;
	case VTPU_OP_FILL:
		op->fill.dst = operand_ptr(bufs, &f->dst);
		op->fill.value = f32_from_bits(f->value);
		op->fill.count = f->count;
		op->ntiles = chunks(f->count, FILL_CHUNK);
		break;
	case VTPU_OP_COPY:
		op->copy.dst = operand_ptr(bufs, &c->dst);
		op->copy.src = operand_ptr(bufs, &c->src);
		op->copy.bytes = c->bytes;
		op->ntiles = chunks(c->bytes, COPY_CHUNK);
		break;
	case VTPU_OP_IM2COL:
	case VTPU_OP_COL2IM:
	case VTPU_OP_MAXPOOL:
	case VTPU_OP_MAXPOOL_GRAD:
		prepare_conv(op, cmd, bufs);
		break;
	case VTPU_OP_ELEMENTWISE:
		prepare_ew(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_REDUCE:
		prepare_reduce(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_SOFTMAX_XENT:
		prepare_xent(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_SGD:
	case VTPU_OP_ADAM_STEP:
	case VTPU_OP_ADAM:
		prepare_optim(op, cmd, bufs);
		break;
	case VTPU_OP_CAST:
		prepare_cast(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_DROPOUT:
		prepare_dropout(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD:
		prepare_convpool(op, (const void *)cmd, bufs);
		break;
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD:
		prepare_conv_gemm(op, (const void *)cmd, bufs);
		break;
	default: /* NOP */
		break;
	}
}

static void run_fill(const struct vtpu_engine_op *op, u32 tile)
{
	u64 start = (u64)tile * FILL_CHUNK;
	u64 end = start + FILL_CHUNK;
	float *dst = op->fill.dst;
	u64 i;

	if (end > op->fill.count)
		end = op->fill.count;
	for (i = start; i < end; i++)
		dst[i] = op->fill.value;
}

static void run_copy(const struct vtpu_engine_op *op, u32 tile)
{
	u64 start = (u64)tile * COPY_CHUNK;
	u64 len = op->copy.bytes - start;

	if (len > COPY_CHUNK)
		len = COPY_CHUNK;
	memcpy(op->copy.dst + start, op->copy.src + start, len);
}

/* Does either of two ops write what the other reads or writes? */
static bool spans_conflict(const struct vtpu_engine_span *a, u32 na,
			   const struct vtpu_engine_span *b, u32 nb)
{
	u32 i, j;

	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			if ((a[i].write || b[j].write) && a[i].lo < b[j].hi &&
			    b[j].lo < a[i].hi)
				return true;
	return false;
}

bool vtpu_engine_group_add(struct vtpu_engine_group *grp,
			   const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs, u32 simd,
			   u32 workers, u32 max_ops)
{
	u32 n = grp->nops, i;
	struct vtpu_engine_op *op = &grp->op[n];

	vtpu_engine_op_prepare(op, cmd, bufs, simd, workers);
	grp->nspans[n] = vtpu_engine_spans(cmd, bufs, grp->spans[n]);
	if (n) {
		/* (too many operands to list: it runs alone) */
		if (n >= max_ops || n >= VTPU_ENGINE_GROUP_MAX ||
		    grp->nspans[n] > VTPU_ENGINE_SPANS_MAX)
			return false;
		for (i = 0; i < n; i++)
			if (grp->nspans[i] > VTPU_ENGINE_SPANS_MAX ||
			    spans_conflict(grp->spans[i], grp->nspans[i],
					   grp->spans[n], grp->nspans[n]))
				return false;
	}
	grp->first[n] = grp->ntiles;
	grp->ntiles += op->ntiles;
	grp->first[n + 1] = grp->ntiles;
	grp->flops += op->flops;
	grp->nops = n + 1;
	return true;
}

void vtpu_engine_group_restart(struct vtpu_engine_group *grp)
{
	u32 n = grp->nops;

	grp->op[0] = grp->op[n];
	grp->nspans[0] = grp->nspans[n];
	memcpy(grp->spans[0], grp->spans[n], sizeof(grp->spans[0]));
	grp->nops = 1;
	grp->ntiles = grp->op[0].ntiles;
	grp->first[0] = 0;
	grp->first[1] = grp->ntiles;
	grp->flops = grp->op[0].flops;
}

void vtpu_engine_op_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	switch (op->opcode) {
	case VTPU_OP_GEMM:
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD:
		vtpu_gemm_run(op, tile, step, scratch);
		break;
	case VTPU_OP_FILL:
		run_fill(op, tile);
		break;
	case VTPU_OP_COPY:
		run_copy(op, tile);
		break;
	case VTPU_OP_IM2COL:
	case VTPU_OP_COL2IM:
		vtpu_conv_run(op, tile, step);
		break;
	case VTPU_OP_MAXPOOL:
	case VTPU_OP_MAXPOOL_GRAD:
		vtpu_pool_run(op, tile, step);
		break;
	case VTPU_OP_ELEMENTWISE:
		vtpu_ew_run(op, tile, step);
		break;
	case VTPU_OP_REDUCE:
		vtpu_reduce_run(op, tile, step, scratch);
		break;
	case VTPU_OP_SOFTMAX_XENT:
		vtpu_xent_run(op, tile, step);
		break;
	case VTPU_OP_SGD:
	case VTPU_OP_ADAM_STEP:
	case VTPU_OP_ADAM:
		vtpu_optim_run(op, tile, step);
		break;
	case VTPU_OP_CAST:
		vtpu_cast_run(op, tile, step);
		break;
	case VTPU_OP_DROPOUT:
		vtpu_dropout_run(op, tile, step);
		break;
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD:
		vtpu_convpool_run(op, tile, step);
		break;
	default:
		break;
	}
}

size_t vtpu_engine_scratch_size(void)
{
	size_t g = vtpu_gemm_scratch_size(), r = vtpu_reduce_scratch_size();

	return g > r ? g : r;
}
