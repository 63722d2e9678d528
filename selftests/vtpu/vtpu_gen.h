/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vtpu_gen.h: random valid command streams for the stress and fuzz
 * selftests, the cpu-executor oracle that checks their results, and small
 * helpers both tests share (sysfs counters, kernel reports in the log).
 * The host test libvtpu/tests/test_engine includes it by path too, for
 * its random streams.
 *
 * A stream is generated against cpu buffers (vtpu_cpu_bo_create), whose
 * contents are the job's inputs; gen_clone() copies the stream and the
 * inputs onto device buffers in the same order, so that after the device
 * job and vtpu_cpu_run() on the cpu copy, the two sets of buffers must hold
 * the same bytes. Shapes are small: the guest's floating point is ~100x
 * slower than the host's.
 *
 * Every operand of a command gets its own region (outputs are always
 * fresh; inputs are fresh or reuse an earlier command's region), so the
 * validator's overlap rules hold by construction.
 */
#ifndef VTPU_GEN_H
#define VTPU_GEN_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <time.h>
#include <unistd.h>

#include "vtpu.h"
#include "vtpu_engine.h"

/* ---- random numbers: xorshift64* ------------------------------------------ */

struct gen_rng {
	uint64_t s;
};

static inline void gen_seed(struct gen_rng *r, uint64_t seed)
{
	r->s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	if (!r->s)
		r->s = 1;
}

static inline uint64_t gen_next(struct gen_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint32_t gen_below(struct gen_rng *r, uint32_t n)
{
	return n ? (uint32_t)((gen_next(r) >> 32) % n) : 0;
}

/* Uniform in [lo, hi]. */
static inline uint32_t gen_range(struct gen_rng *r, uint32_t lo, uint32_t hi)
{
	return lo + gen_below(r, hi - lo + 1);
}

/* True with probability 1/n. */
static inline int gen_one_in(struct gen_rng *r, uint32_t n)
{
	return gen_below(r, n) == 0;
}

/* A "nice" value: a multiple of 1/4 in [-2, 2], exact in sums. */
static inline float gen_val(struct gen_rng *r)
{
	return (float)((int)gen_below(r, 17) - 8) * 0.25f;
}

static inline uint32_t gen_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline double gen_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- streams -------------------------------------------------------------- */

#define GEN_MAXBUF 4
#define GEN_MAXREG 96

struct gen_region {
	uint32_t buf;
	uint64_t off, bytes;
};

/**
 * struct gen_ctx - one stream being generated
 * @rng: its random numbers
 * @cb: the stream, naming @bos[i] as buffer index i
 * @bos: cpu buffers whose contents are the job's inputs
 * @used: bytes handed out of each buffer (a bump allocator)
 * @regs: regions handed out so far (inputs may reuse them)
 * @ncmds: commands appended
 */
struct gen_ctx {
	struct gen_rng *rng;
	struct vtpu_cmdbuf *cb;
	struct vtpu_bo *bos[GEN_MAXBUF];
	uint32_t nbufs;
	uint64_t used[GEN_MAXBUF];
	struct gen_region regs[GEN_MAXREG];
	uint32_t nregs;
	uint32_t ncmds;
};

/*
 * Start a stream over @nbufs cpu buffers (already created): fill them with
 * nice random values and name them in @cb in order.
 */
static inline void gen_start(struct gen_ctx *g, struct gen_rng *rng,
			     struct vtpu_cmdbuf *cb, struct vtpu_bo *bos,
			     uint32_t nbufs)
{
	uint32_t i;
	uint64_t j;

	memset(g, 0, sizeof(*g));
	g->rng = rng;
	g->cb = cb;
	g->nbufs = nbufs;
	vtpu_cmdbuf_reset(cb);
	for (i = 0; i < nbufs; i++) {
		float *p = bos[i].map;

		g->bos[i] = &bos[i];
		for (j = 0; j < bos[i].size / 4; j++)
			p[j] = gen_val(rng);
		vtpu_cmdbuf_use(cb, &bos[i]);
	}
}

/* A fresh region of @bytes aligned to @align, or -1 when none is left. */
static inline int gen_fresh(struct gen_ctx *g, uint64_t bytes, uint32_t align,
			    struct vtpu_ref *ref)
{
	uint32_t first = gen_below(g->rng, g->nbufs), k, b;
	uint64_t off;

	if (!bytes)
		bytes = 1;
	for (k = 0; k < g->nbufs; k++) {
		b = (first + k) % g->nbufs;
		off = (g->used[b] + align - 1) / align * align;
		/* sometimes leave a gap, so offsets vary */
		if (gen_one_in(g->rng, 3))
			off += (uint64_t)gen_below(g->rng, 4) * align;
		if (off + bytes > g->bos[b]->size)
			continue;
		g->used[b] = off + bytes;
		*ref = VTPU_REF(b, off);
		if (g->nregs < GEN_MAXREG)
			g->regs[g->nregs++] = (struct gen_region){ b, off, bytes };
		return 0;
	}
	return -1;
}

/* An input: an earlier region (1 in 3) or a fresh one. */
static inline int gen_input(struct gen_ctx *g, uint64_t bytes, uint32_t align,
			    struct vtpu_ref *ref)
{
	if (g->nregs && gen_one_in(g->rng, 3)) {
		const struct gen_region *r = &g->regs[gen_below(g->rng, g->nregs)];

		if (r->bytes >= bytes && r->off % align == 0) {
			*ref = VTPU_REF(r->buf, r->off);
			return 0;
		}
	}
	return gen_fresh(g, bytes, align, ref);
}

/*
 * A per-iteration stride for buffer @b, of @size bytes, of the stream
 * just made: a random multiple of 64 that keeps what the stream uses of
 * the buffer, and the start of the view, inside it in a second iteration
 * (the validator rejects a view that starts at the end, even of a buffer
 * no command uses).
 */
static inline uint64_t gen_stride(struct gen_ctx *g, uint32_t b,
				  uint64_t size)
{
	uint64_t used = g->used[b];
	uint32_t room = size > used ? (uint32_t)(size - used - 1) : 0;

	return 64 * (uint64_t)gen_below(g->rng, room / 64 + 1);
}

static inline void *gen_ptr(struct gen_ctx *g, struct vtpu_ref r)
{
	return (char *)g->bos[r.buf]->map + r.off;
}

/* Fill a region with u32 values below @limit (labels, pool indices). */
static inline void gen_u32s(struct gen_ctx *g, struct vtpu_ref r, uint64_t n,
			    uint32_t limit)
{
	uint32_t *p = gen_ptr(g, r);
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = gen_below(g->rng, limit);
}

static inline float gen_scalar(struct gen_ctx *g)
{
	return gen_val(g->rng);
}

static inline void gen_window(struct gen_ctx *g, struct vtpu_window *w,
			      uint64_t *image, uint64_t *out, uint64_t *kdim)
{
	struct gen_rng *r = g->rng;
	uint32_t oh, ow;

	memset(w, 0, sizeof(*w));
	w->n = gen_range(r, 1, 2);
	w->h = gen_range(r, 1, 6);
	w->w = gen_range(r, 1, 6);
	w->c = gen_range(r, 1, 3);
	w->kh = gen_range(r, 1, 3);
	w->kw = gen_range(r, 1, 3);
	w->stride_h = gen_range(r, 1, 2);
	w->stride_w = gen_range(r, 1, 2);
	w->pad_h = gen_below(r, w->kh);
	w->pad_w = gen_below(r, w->kw);
	/* h + 2 * pad >= k */
	while (w->h + 2 * w->pad_h < w->kh)
		w->pad_h++;
	while (w->w + 2 * w->pad_w < w->kw)
		w->pad_w++;
	oh = (w->h + 2 * w->pad_h - w->kh) / w->stride_h + 1;
	ow = (w->w + 2 * w->pad_w - w->kw) / w->stride_w + 1;
	*image = (uint64_t)w->n * w->h * w->w * w->c;
	*out = (uint64_t)w->n * oh * ow * w->c;
	*kdim = (uint64_t)w->kh * w->kw * w->c;
}

/*
 * ---- one command ------------------------------------------------------------
 *
 * The engine's op table (vtpu_engine_op_desc()) says what a command of each
 * opcode is: its size, its operands (which it reads and which it writes,
 * where each is in the command, its alignment) and the bytes each spans
 * for given fields (vtpu_engine_operand()). So an op's entry below only
 * makes a random valid shape: it appends the command with every operand
 * zero and says, in a struct gen_plan, which operands the shape leaves
 * unused (they stay zero, as the validator wants); gen_cmd() then gives
 * each used operand a region: a fresh one for what the command writes,
 * an input (fresh or an earlier region) for what it reads. An op whose
 * inputs need particular contents (labels, pool indices, routes, Adam's
 * state) names them fresh and writes them in its fill().
 */

#define GEN_BIT(id) (1ull << (id))	/* operand ids are below 64 */

/**
 * struct gen_plan - what a shape leaves to gen_cmd()
 * @unused: operand ids (GEN_BIT()) the command does not use: left zero
 * @fresh: input ids that get a fresh region, for fill() to write
 * @same, @as: in place: operand @same gets operand @as's region (0: none;
 *	@as is made fresh)
 */
struct gen_plan {
	uint64_t unused, fresh;
	uint8_t same, as;
};

/**
 * struct gen_op - how to make a random command of one opcode
 * @shape: append it with its fields set and its operands zero; -1 when
 *	it cannot
 * @fill: write the contents of the inputs @plan made fresh, or NULL
 */
struct gen_op {
	int (*shape)(struct gen_ctx *g, uint32_t op, struct gen_plan *p);
	void (*fill)(struct gen_ctx *g, const struct vtpu_cmd_hdr *cmd);
};

/* Where operand @id of a placed command @cmd is, and its @bytes. */
static inline void *gen_opnd(struct gen_ctx *g, const struct vtpu_cmd_hdr *cmd,
			     uint32_t id, uint64_t *bytes)
{
	const struct vtpu_operand *o;
	uint64_t n = 0;

	if (vtpu_engine_operand(cmd, id, &o, &n))
		return NULL;
	if (bytes)
		*bytes = n;
	return (char *)g->bos[o->buf]->map + o->offset;
}

static inline int gen_shape_nop(struct gen_ctx *g, uint32_t op,
				struct gen_plan *p)
{
	struct vtpu_cmd_hdr h = { VTPU_OP_NOP,
				  vtpu_engine_cmd_size(VTPU_OP_NOP) };

	return vtpu_cmdbuf_append(g->cb, &h);
}

static inline int gen_shape_gemm(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_gemm_desc gd = { 0 };
	uint32_t ac, bc;

	gd.m = gen_range(r, 1, 20);
	gd.n = gen_range(r, 1, 20);
	gd.k = gen_range(r, 1, 20);
	gd.flags = gen_below(r, 16);
	gd.dtype = gen_one_in(r, 4) ? VTPU_DTYPE_BF16 : VTPU_DTYPE_F32;
	/* f32 in panels: B's, C's or both, on whole panels */
	if (gd.dtype == VTPU_DTYPE_F32 && gen_one_in(r, 4)) {
		uint32_t pick = gen_range(r, 1, 3);

		if (pick & 1)
			gd.flags |= VTPU_GEMM_B_PANELS;
		if (pick & 2)
			gd.flags |= VTPU_GEMM_C_PANELS;
		if ((pick & 2) || !(gd.flags & VTPU_GEMM_TRANS_B))
			gd.n = VTPU_GEMM_PANEL * gen_range(r, 1, 2);
		if ((pick & 1) && (gd.flags & VTPU_GEMM_TRANS_B))
			gd.k = VTPU_GEMM_PANEL * gen_range(r, 1, 2);
	}
	ac = gd.flags & VTPU_GEMM_TRANS_A ? gd.m : gd.k;
	bc = gd.flags & VTPU_GEMM_TRANS_B ? gd.k : gd.n;
	gd.lda = ac + gen_below(r, 3);
	gd.ldb = bc + gen_below(r, 3);
	gd.ldc = gd.n + gen_below(r, 3);
	if (gd.flags & VTPU_GEMM_B_PANELS)
		gd.ldb = bc;
	if (gd.flags & VTPU_GEMM_C_PANELS)
		gd.ldc = gd.n;
	gd.alpha = gen_scalar(g);
	gd.beta = gen_one_in(r, 3) ? 0.0f : gen_scalar(g);
	if (!(gd.flags & VTPU_GEMM_BIAS))
		p->unused = GEN_BIT(VTPU_OPERAND_BIAS);
	return vtpu_cmdbuf_gemm(g->cb, &gd);
}

static inline int gen_shape_fill(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	return vtpu_cmdbuf_fill(g->cb, 0, 0, gen_range(g->rng, 1, 512),
				gen_scalar(g));
}

static inline int gen_shape_copy(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	return vtpu_cmdbuf_copy(g->cb, 0, 0, 0, 0, gen_range(g->rng, 1, 2048));
}

static inline int gen_shape_im2col(struct gen_ctx *g, uint32_t op,
				   struct gen_plan *p)
{
	struct vtpu_window w;
	uint64_t img, out, kdim;

	gen_window(g, &w, &img, &out, &kdim);
	if (op == VTPU_OP_IM2COL)
		return vtpu_cmdbuf_im2col(g->cb, &w, VTPU_REF_NONE,
					  VTPU_REF_NONE);
	return vtpu_cmdbuf_col2im(g->cb, &w, VTPU_REF_NONE, VTPU_REF_NONE);
}

static inline int gen_shape_pool(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct vtpu_window w;
	uint64_t img, out, kdim;

	uint32_t flags = 0;

	gen_window(g, &w, &img, &out, &kdim);
	/* Keras' odd 'same' padding: one more row or column at the end */
	if (w.pad_h + 1 < w.kh && gen_one_in(g->rng, 3))
		flags |= VTPU_POOL_PAD_END_H;
	if (w.pad_w + 1 < w.kw && gen_one_in(g->rng, 3))
		flags |= VTPU_POOL_PAD_END_W;
	if (op == VTPU_OP_MAXPOOL)
		return vtpu_cmdbuf_maxpool_padded(g->cb, &w, flags,
						  VTPU_REF_NONE, VTPU_REF_NONE,
						  VTPU_REF_NONE);
	/* dy, index in (index: window positions); dx out */
	p->fresh = GEN_BIT(VTPU_OPERAND_INDEX);
	return vtpu_cmdbuf_maxpool_grad_padded(g->cb, &w, flags, VTPU_REF_NONE,
					       VTPU_REF_NONE, VTPU_REF_NONE);
}

/* AVGPOOL(_GRAD): any pads < k, any output size whose windows start inside */
static inline int gen_shape_avgpool(struct gen_ctx *g, uint32_t op,
				    struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_window w;
	uint64_t img, out, kdim;
	uint32_t oh, ow;

	(void)p;
	gen_window(g, &w, &img, &out, &kdim);
	oh = gen_range(r, 1, (w.h + w.pad_h - 1) / w.stride_h + 1);
	ow = gen_range(r, 1, (w.w + w.pad_w - 1) / w.stride_w + 1);
	if (op == VTPU_OP_AVGPOOL)
		return vtpu_cmdbuf_avgpool(g->cb, &w, oh, ow, VTPU_REF_NONE,
					   VTPU_REF_NONE);
	return vtpu_cmdbuf_avgpool_grad(g->cb, &w, oh, ow, VTPU_REF_NONE,
					VTPU_REF_NONE);
}

static inline void gen_fill_pool(struct gen_ctx *g,
				 const struct vtpu_cmd_hdr *cmd)
{
	const struct vtpu_cmd_pool *pl = (const void *)cmd;
	uint32_t *ix;
	uint64_t bytes = 0, i;

	ix = gen_opnd(g, cmd, VTPU_OPERAND_INDEX, &bytes);
	for (i = 0; i < bytes / 4; i++)
		ix[i] = gen_below(g->rng, pl->win.h * pl->win.w + 1);
}

static inline int gen_shape_elementwise(struct gen_ctx *g, uint32_t op,
					struct gen_plan *p)
{
	static const uint8_t uses[VTPU_EW_COUNT] = {
		[VTPU_EW_ADD] = 1, [VTPU_EW_SUB] = 1, [VTPU_EW_MUL] = 1,
		[VTPU_EW_SCALE] = 2, [VTPU_EW_AXPY] = 3,
		[VTPU_EW_AXPBY] = 7, [VTPU_EW_RELU] = 0,
		[VTPU_EW_RELU_GRAD] = 1, [VTPU_EW_ADD_SCALAR] = 2,
		[VTPU_EW_SIGMOID] = 0, [VTPU_EW_SIGMOID_GRAD] = 1,
		[VTPU_EW_TANH] = 0, [VTPU_EW_TANH_GRAD] = 1,
	};
	struct gen_rng *r = g->rng;
	uint32_t ew = gen_below(r, VTPU_EW_COUNT), u = uses[ew];
	uint64_t n = gen_range(r, 1, 1024);

	if (gen_one_in(r, 4)) {		/* in place: z is x */
		p->same = VTPU_OPERAND_Z;
		p->as = VTPU_OPERAND_X;
	}
	if (!(u & 1))
		p->unused = GEN_BIT(VTPU_OPERAND_Y);
	return vtpu_cmdbuf_elementwise(g->cb, ew, n,
				       u & 2 ? gen_scalar(g) : 0,
				       u & 4 ? gen_scalar(g) : 0, VTPU_REF_NONE,
				       VTPU_REF_NONE, VTPU_REF_NONE);
}

static inline int gen_shape_reduce(struct gen_ctx *g, uint32_t op,
				   struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	uint32_t rop = gen_below(r, 3), m = gen_range(r, 1, 32);
	uint32_t n = gen_range(r, 1, 32), ldx = n + gen_below(r, 3);

	return vtpu_cmdbuf_reduce(g->cb, rop, m, n, ldx, gen_scalar(g),
				  gen_one_in(r, 2) ? 0 : gen_scalar(g),
				  VTPU_REF_NONE, VTPU_REF_NONE);
}

/* ARGMAX over any input: its bytes may be NaN, y is an index anyway */
static inline int gen_shape_argmax(struct gen_ctx *g, uint32_t op,
				   struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	uint32_t m = gen_range(r, 1, 32), n = gen_range(r, 1, 48);

	return vtpu_cmdbuf_argmax(g->cb, m, n, n + gen_below(r, 3),
				  VTPU_REF_NONE, VTPU_REF_NONE);
}

/* BATCHNORM: any mode; BATCHNORM_GRAD (its stats any bytes, as x) */
static inline int gen_shape_batchnorm(struct gen_ctx *g, uint32_t op,
				      struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_batchnorm_desc d = { 0 };

	d.rows = gen_range(r, 1, 40);
	d.channels = gen_range(r, 1, 80);
	d.epsilon = gen_range(r, 1, 1000) * 1e-5f;
	d.momentum = gen_below(r, 101) / 100.0f;
	if (op == VTPU_OP_BATCHNORM_GRAD)
		return vtpu_cmdbuf_batchnorm_grad(g->cb, &d);
	d.flags = gen_below(r, 2) ? VTPU_BATCHNORM_TRAINING : 0;
	if (gen_below(r, 2))
		d.flags |= VTPU_BATCHNORM_RELU;
	if (!(d.flags & VTPU_BATCHNORM_TRAINING))
		p->unused = GEN_BIT(VTPU_OPERAND_STATE);
	return vtpu_cmdbuf_batchnorm(g->cb, &d);
}

/* IMAGE_AUGMENT: small images, any crop; its step is any bytes (read as 0) */
static inline int gen_shape_augment(struct gen_ctx *g, uint32_t op,
				    struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_augment_desc d = {
		.x = VTPU_REF_NONE, .y = VTPU_REF_NONE, .step = VTPU_REF_NONE,
	};

	d.n = gen_range(r, 1, 4);
	d.h = gen_range(r, 1, 12);
	d.w = gen_range(r, 1, 12);
	d.c = gen_range(r, 1, 4);
	d.seed = gen_below(r, 1000);
	d.flags = gen_below(r, 4);
	d.oh = gen_range(r, 1, d.h);
	d.ow = gen_range(r, 1, d.w);
	return vtpu_cmdbuf_image_augment(g->cb, &d);
}

static inline int gen_shape_xent(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_xent_desc x = { 0 };

	x.m = gen_range(r, 1, 8);
	x.n = gen_range(r, 1, 10);
	x.flags = gen_below(r, 8);	/* DLOGITS, PROBS, MEAN_VALID */
	x.scale = 1.0f / x.m;
	p->fresh = GEN_BIT(VTPU_OPERAND_LABELS);
	if (!(x.flags & VTPU_XENT_DLOGITS))
		p->unused |= GEN_BIT(VTPU_OPERAND_DX);
	if (!(x.flags & VTPU_XENT_PROBS))
		p->unused |= GEN_BIT(VTPU_OPERAND_PROBS);
	return vtpu_cmdbuf_softmax_xent(g->cb, &x);
}

static inline void gen_fill_xent(struct gen_ctx *g,
				 const struct vtpu_cmd_hdr *cmd)
{
	const struct vtpu_cmd_softmax_xent *xe = (const void *)cmd;
	uint32_t *lab;
	uint64_t bytes = 0, i;

	lab = gen_opnd(g, cmd, VTPU_OPERAND_LABELS, &bytes);
	for (i = 0; i < bytes / 4; i++)		/* some ignored rows */
		lab[i] = gen_below(g->rng, xe->n + 1);
}

static inline int gen_shape_softmax(struct gen_ctx *g, uint32_t op,
				    struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_softmax_desc d = { 0 };

	d.m = gen_range(r, 1, 12);
	d.n = gen_range(r, 1, 20);
	d.rows_per_group = gen_range(r, 1, 4);
	d.flags = gen_below(r, 4);
	if (d.flags & VTPU_SOFTMAX_LENGTHS)
		p->fresh = GEN_BIT(VTPU_OPERAND_LENGTHS);
	else
		p->unused = GEN_BIT(VTPU_OPERAND_LENGTHS);
	if (op == VTPU_OP_SOFTMAX) {
		p->unused |= GEN_BIT(VTPU_OPERAND_DY);
		return vtpu_cmdbuf_softmax(g->cb, &d);
	}
	return vtpu_cmdbuf_softmax_grad(g->cb, &d);
}

static inline void gen_fill_softmax(struct gen_ctx *g,
				    const struct vtpu_cmd_hdr *cmd)
{
	const struct vtpu_cmd_softmax *sm = (const void *)cmd;
	uint32_t *len;
	uint64_t bytes = 0, i;

	if (!(sm->flags & VTPU_SOFTMAX_LENGTHS))
		return;
	len = gen_opnd(g, cmd, VTPU_OPERAND_LENGTHS, &bytes);
	for (i = 0; i < bytes / 4; i++)		/* 0, within n, past n */
		len[i] = gen_one_in(g->rng, 8) ? 0xffffffffu :
						 gen_below(g->rng, sm->n + 2);
}

/* ADDITIVE_SCORE(_GRAD): small sequences; the forward leaves dq, dk, dv */
static inline int gen_shape_additive(struct gen_ctx *g, uint32_t op,
				     struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_additive_desc d = { 0 };

	d.batch = gen_range(r, 1, 4);
	d.tq = gen_range(r, 1, 8);
	d.tk = gen_range(r, 1, 8);
	d.units = gen_range(r, 1, 80);
	if (op == VTPU_OP_ADDITIVE_SCORE_GRAD)
		return vtpu_cmdbuf_additive_score_grad(g->cb, &d);
	p->unused = GEN_BIT(VTPU_OPERAND_DA) | GEN_BIT(VTPU_OPERAND_DB) |
		    GEN_BIT(VTPU_OPERAND_DW);
	return vtpu_cmdbuf_additive_score(g->cb, &d);
}

/*
 * LSTM_CELL(_GRAD): a few rows, the gates [B][4H] (row-major), planes
 * [4][B][H] or planes with gaps (a sequence's step); in place 1 in 3
 */
static inline int gen_shape_lstm(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_lstm_desc d = { 0 };
	uint32_t layout;

	d.batch = gen_range(r, 1, 6);
	d.hidden = gen_range(r, 1, 40);
	layout = gen_below(r, 3);
	d.row_stride = layout ? d.hidden : 4ull * d.hidden;
	d.gate_stride = layout ? (uint64_t)d.batch * d.hidden * layout :
				 d.hidden;
	if (op == VTPU_OP_LSTM_CELL) {
		if (gen_one_in(r, 3)) {		/* act over gates */
			p->same = VTPU_OPERAND_ACT;
			p->as = VTPU_OPERAND_GATES;
		}
		return vtpu_cmdbuf_lstm_cell(g->cb, &d);
	}
	if (gen_one_in(r, 3)) {			/* dgates over act */
		p->same = VTPU_OPERAND_DGATES;
		p->as = VTPU_OPERAND_ACT;
	} else if (gen_one_in(r, 2)) {		/* dc_prev over dc_next */
		p->same = VTPU_OPERAND_DCELL_PREV;
		p->as = VTPU_OPERAND_DCELL;
	}
	return vtpu_cmdbuf_lstm_cell_grad(g->cb, &d);
}

static inline int gen_shape_sgd(struct gen_ctx *g, uint32_t op,
				struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	float mom = gen_one_in(r, 2) ? 0.0f : 0.5f + gen_below(r, 4) * 0.125f;
	uint32_t fl = mom != 0.0f && gen_one_in(r, 2) ? VTPU_SGD_NESTEROV : 0;
	uint64_t n = gen_range(r, 1, 512);

	if (mom == 0.0f)
		p->unused = GEN_BIT(VTPU_OPERAND_MOM);
	return vtpu_cmdbuf_sgd(g->cb, n, 0.125f, mom,
			       gen_one_in(r, 2) ? 0.0f : 0.25f, fl,
			       VTPU_REF_NONE, VTPU_REF_NONE, VTPU_REF_NONE);
}

static inline int gen_shape_clip_norm(struct gen_ctx *g, uint32_t op,
				      struct gen_plan *p)
{
	struct gen_rng *r = g->rng;

	return vtpu_cmdbuf_clip_norm(g->cb, gen_range(r, 1, 512),
				     0.25f + gen_below(r, 8) * 0.5f,
				     VTPU_REF_NONE, VTPU_REF_NONE);
}

static inline int gen_shape_adam_step(struct gen_ctx *g, uint32_t op,
				      struct gen_plan *p)
{
	return vtpu_cmdbuf_adam_step(g->cb, 0.9f, 0.999f, VTPU_REF_NONE);
}

static inline int gen_shape_adam(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_adam_desc ad = { 0 };

	ad.count = gen_range(r, 1, 512);
	ad.lr = 0.01f;
	ad.beta1 = 0.9f;
	ad.beta2 = 0.999f;
	ad.eps = 1e-3f;
	ad.weight_decay = gen_one_in(r, 2) ? 0.0f : 0.01f;
	ad.flags = gen_below(r, 2);
	p->fresh = GEN_BIT(VTPU_OPERAND_STATE);
	return vtpu_cmdbuf_adam(g->cb, &ad);
}

/* The state's step factors, and a second moment that is never negative. */
static inline void gen_fill_adam(struct gen_ctx *g,
				 const struct vtpu_cmd_hdr *cmd)
{
	float *st = gen_opnd(g, cmd, VTPU_OPERAND_STATE, NULL);
	float *v;
	uint64_t bytes = 0, i;

	st[0] = 0.1f;
	st[1] = 0.001f;
	v = gen_opnd(g, cmd, VTPU_OPERAND_VEL, &bytes);
	for (i = 0; i < bytes / 4; i++)
		v[i] = fabsf(v[i]);
}

static inline int gen_shape_cast(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	uint32_t mode = gen_below(g->rng, 3);
	int from_u8 = mode == VTPU_CAST_U8_TO_F32;

	return vtpu_cmdbuf_cast(g->cb, mode, gen_range(g->rng, 1, 512),
				from_u8 ? 0.5f : 0.0f, from_u8 ? -1.0f : 0.0f,
				VTPU_REF_NONE, VTPU_REF_NONE);
}

static inline int gen_shape_conv_pool(struct gen_ctx *g, uint32_t op,
				      struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_conv_pool_desc cd = { 0 };
	uint64_t img, out, kdim;
	uint32_t oh, ow;

	gen_window(g, &cd.win, &img, &out, &kdim);
	oh = (cd.win.h + 2 * cd.win.pad_h - cd.win.kh) / cd.win.stride_h + 1;
	ow = (cd.win.w + 2 * cd.win.pad_w - cd.win.kw) / cd.win.stride_w + 1;
	/* 16 and 32: whole blocks of channels, the kernels' fast path */
	cd.oc = gen_one_in(r, 3) ? 16 * gen_range(r, 1, 2) :
				  gen_range(r, 1, 20);
	cd.pool_h = gen_range(r, 1, oh < 3 ? oh : 3);
	cd.pool_w = gen_range(r, 1, ow < 3 ? ow : 3);
	cd.pool_stride_h = gen_range(r, 1, 2);
	cd.pool_stride_w = gen_range(r, 1, 2);
	cd.flags = gen_below(r, 2) ? VTPU_CONV_RELU : 0;
	if (op == VTPU_OP_CONV_POOL) {
		p->unused = GEN_BIT(VTPU_OPERAND_DY);
		return vtpu_cmdbuf_conv_pool(g->cb, &cd);
	}
	/* the routes: window positions, some naming none */
	p->unused = GEN_BIT(VTPU_OPERAND_Y);
	p->fresh = GEN_BIT(VTPU_OPERAND_INDEX);
	return vtpu_cmdbuf_conv_pool_wgrad(g->cb, &cd);
}

static inline void gen_fill_conv_pool(struct gen_ctx *g,
				      const struct vtpu_cmd_hdr *cmd)
{
	const struct vtpu_cmd_conv_pool *cp = (const void *)cmd;
	uint8_t *rt;
	uint64_t bytes = 0, i;

	if (cmd->opcode != VTPU_OP_CONV_POOL_WGRAD)
		return;
	rt = gen_opnd(g, cmd, VTPU_OPERAND_INDEX, &bytes);
	for (i = 0; i < bytes; i++)
		rt[i] = gen_one_in(g->rng, 8) ? VTPU_CONV_NO_ROUTE :
			(uint8_t)gen_below(g->rng,
					   cp->pool_h * cp->pool_w + 1);
}

static inline int gen_shape_conv(struct gen_ctx *g, uint32_t op,
				 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_conv_desc cd = { 0 };
	uint64_t img, out, kdim;

	gen_window(g, &cd.win, &img, &out, &kdim);
	/*
	 * one in four: AVX-512's Winograd case, a 3 x 3 window at stride 1
	 * over 16 or 32 channels (any pad, h + 2 pad >= 3)
	 */
	if (gen_one_in(r, 4)) {
		struct vtpu_window *w = &cd.win;

		w->c = 16 * gen_range(r, 1, 2);
		w->kh = w->kw = 3;
		w->stride_h = w->stride_w = 1;
		w->pad_h = gen_below(r, 3);
		w->pad_w = gen_below(r, 3);
		while (w->h + 2 * w->pad_h < 3)
			w->pad_h++;
		while (w->w + 2 * w->pad_w < 3)
			w->pad_w++;
	}
	if (op == VTPU_OP_CONV_DGRAD)
		cd.win.stride_h = cd.win.stride_w = 1;
	/* either side of 16: AVX-512's narrow and wide GEMM kernels */
	cd.oc = gen_one_in(r, 3) ? 16 * gen_range(r, 1, 2) :
				  gen_range(r, 1, 20);
	if (op == VTPU_OP_CONV) {
		/* bits 0, 1: VTPU_CONV_RELU, VTPU_CONV_BIAS */
		cd.flags = gen_below(r, 4) & (VTPU_CONV_RELU | VTPU_CONV_BIAS);
		if (!(cd.flags & VTPU_CONV_BIAS))
			p->unused = GEN_BIT(VTPU_OPERAND_BIAS);
		return vtpu_cmdbuf_conv(g->cb, &cd);
	}
	/* DGRAD: w, dy in, dx out; WGRAD: x, dy in, dw out */
	cd.flags = gen_below(r, 2) ? VTPU_CONV_ACCUMULATE : 0;
	p->unused = GEN_BIT(VTPU_OPERAND_BIAS);
	if (op == VTPU_OP_CONV_DGRAD)
		return vtpu_cmdbuf_conv_dgrad(g->cb, &cd);
	return vtpu_cmdbuf_conv_wgrad(g->cb, &cd);
}

/*
 * DWCONV and its gradients: gen_window()'s geometry with an output size
 * of its own, from one window to the most whose last one still starts in
 * the image or its top (left) padding; 1 to 3 filters per channel.
 */
static inline int gen_shape_dwconv(struct gen_ctx *g, uint32_t op,
				   struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_dwconv_desc d = { 0 };
	uint64_t img, out, kdim;

	gen_window(g, &d.win, &img, &out, &kdim);
	d.oh = gen_range(r, 1, (d.win.h + d.win.pad_h - 1) /
			       d.win.stride_h + 1);
	d.ow = gen_range(r, 1, (d.win.w + d.win.pad_w - 1) /
			       d.win.stride_w + 1);
	d.mult = gen_range(r, 1, 3);
	if (op == VTPU_OP_DWCONV) {
		d.flags = gen_below(r, 4) & (VTPU_CONV_RELU | VTPU_CONV_BIAS);
		if (!(d.flags & VTPU_CONV_BIAS))
			p->unused = GEN_BIT(VTPU_OPERAND_BIAS);
		return vtpu_cmdbuf_dwconv(g->cb, &d);
	}
	d.flags = gen_below(r, 2) ? VTPU_CONV_ACCUMULATE : 0;
	p->unused = GEN_BIT(VTPU_OPERAND_BIAS);
	if (op == VTPU_OP_DWCONV_DGRAD)
		return vtpu_cmdbuf_dwconv_dgrad(g->cb, &d);
	return vtpu_cmdbuf_dwconv_wgrad(g->cb, &d);
}

static inline int gen_shape_embedding(struct gen_ctx *g, uint32_t op,
				      struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	uint32_t n = gen_range(r, 1, 40), vocab = gen_range(r, 1, 20);
	uint32_t dim = gen_range(r, 1, 40);

	p->fresh = GEN_BIT(VTPU_OPERAND_INDEX);
	if (op == VTPU_OP_EMBEDDING)
		return vtpu_cmdbuf_embedding(g->cb, n, vocab, dim,
					     VTPU_REF_NONE, VTPU_REF_NONE,
					     VTPU_REF_NONE);
	return vtpu_cmdbuf_embedding_grad(g->cb, n, vocab, dim,
					  gen_one_in(r, 2) ?
					  VTPU_EMBEDDING_ACCUMULATE : 0,
					  VTPU_REF_NONE, VTPU_REF_NONE,
					  VTPU_REF_NONE);
}

static inline void gen_fill_embedding(struct gen_ctx *g,
				      const struct vtpu_cmd_hdr *cmd)
{
	const struct vtpu_cmd_embedding *e = (const void *)cmd;
	uint32_t *ids;
	uint64_t bytes = 0, i;

	ids = gen_opnd(g, cmd, VTPU_OPERAND_INDEX, &bytes);
	for (i = 0; i < bytes / 4; i++)		/* repeats, some past vocab */
		ids[i] = gen_one_in(g->rng, 8) ? 0xffffffffu :
						 gen_below(g->rng, e->vocab + 2);
}

static inline int gen_shape_gemm_batched(struct gen_ctx *g, uint32_t op,
					 struct gen_plan *p)
{
	struct gen_rng *r = g->rng;
	struct vtpu_gemm_batched_desc d = { 0 };
	uint32_t ar, ac, br, bc;

	d.batch = gen_range(r, 1, 6);
	d.m = gen_range(r, 1, 12);
	d.n = gen_range(r, 1, 12);
	d.k = gen_range(r, 1, 12);
	d.flags = gen_below(r, 4);
	d.dtype = gen_one_in(r, 4) ? VTPU_DTYPE_BF16 : VTPU_DTYPE_F32;
	ar = d.flags & VTPU_GEMM_TRANS_A ? d.k : d.m;
	ac = d.flags & VTPU_GEMM_TRANS_A ? d.m : d.k;
	br = d.flags & VTPU_GEMM_TRANS_B ? d.n : d.k;
	bc = d.flags & VTPU_GEMM_TRANS_B ? d.k : d.n;
	d.lda = ac + gen_below(r, 3);
	d.ldb = bc + gen_below(r, 3);
	d.ldc = d.n + gen_below(r, 3);
	/* packed, with gaps, or one A or B for every product */
	d.stride_a = gen_one_in(r, 4) ? 0 :
		     (uint64_t)(ar - 1) * d.lda + ac + gen_below(r, 3);
	d.stride_b = gen_one_in(r, 4) ? 0 :
		     (uint64_t)(br - 1) * d.ldb + bc + gen_below(r, 3);
	d.stride_c = (uint64_t)(d.m - 1) * d.ldc + d.n + gen_below(r, 3);
	if (gen_one_in(r, 3)) {	/* rows interleaved, as a time-major batch */
		d.stride_c = d.n + gen_below(r, 2);
		d.ldc = (d.batch - 1) * d.stride_c + d.n + gen_below(r, 3);
	}
	d.alpha = gen_scalar(g);
	d.beta = gen_one_in(r, 3) ? 0.0f : gen_scalar(g);
	return vtpu_cmdbuf_gemm_batched(g->cb, &d);
}

/*
 * The opcodes the streams use: those with an entry here and in the
 * engine's table. DROPOUT has none yet (it came after the generator).
 */
static const struct gen_op gen_ops[VTPU_OP_COUNT] = {
	[VTPU_OP_NOP] = { gen_shape_nop },
	[VTPU_OP_GEMM] = { gen_shape_gemm },
	[VTPU_OP_FILL] = { gen_shape_fill },
	[VTPU_OP_COPY] = { gen_shape_copy },
	[VTPU_OP_IM2COL] = { gen_shape_im2col },
	[VTPU_OP_COL2IM] = { gen_shape_im2col },
	[VTPU_OP_MAXPOOL] = { gen_shape_pool },
	[VTPU_OP_MAXPOOL_GRAD] = { gen_shape_pool, gen_fill_pool },
	[VTPU_OP_ELEMENTWISE] = { gen_shape_elementwise },
	[VTPU_OP_REDUCE] = { gen_shape_reduce },
	[VTPU_OP_SOFTMAX_XENT] = { gen_shape_xent, gen_fill_xent },
	[VTPU_OP_SGD] = { gen_shape_sgd },
	[VTPU_OP_ADAM_STEP] = { gen_shape_adam_step },
	[VTPU_OP_ADAM] = { gen_shape_adam, gen_fill_adam },
	[VTPU_OP_CAST] = { gen_shape_cast },
	[VTPU_OP_CONV_POOL] = { gen_shape_conv_pool, gen_fill_conv_pool },
	[VTPU_OP_CONV_POOL_WGRAD] = { gen_shape_conv_pool,
				      gen_fill_conv_pool },
	[VTPU_OP_CONV] = { gen_shape_conv },
	[VTPU_OP_CONV_DGRAD] = { gen_shape_conv },
	[VTPU_OP_CONV_WGRAD] = { gen_shape_conv },
	[VTPU_OP_EMBEDDING] = { gen_shape_embedding, gen_fill_embedding },
	[VTPU_OP_EMBEDDING_GRAD] = { gen_shape_embedding, gen_fill_embedding },
	[VTPU_OP_GEMM_BATCHED] = { gen_shape_gemm_batched },
	[VTPU_OP_SOFTMAX] = { gen_shape_softmax, gen_fill_softmax },
	[VTPU_OP_SOFTMAX_GRAD] = { gen_shape_softmax, gen_fill_softmax },
	[VTPU_OP_CLIP_NORM] = { gen_shape_clip_norm },
	[VTPU_OP_ARGMAX] = { gen_shape_argmax },
	[VTPU_OP_BATCHNORM] = { gen_shape_batchnorm },
	[VTPU_OP_BATCHNORM_GRAD] = { gen_shape_batchnorm },
	[VTPU_OP_DWCONV] = { gen_shape_dwconv },
	[VTPU_OP_DWCONV_DGRAD] = { gen_shape_dwconv },
	[VTPU_OP_DWCONV_WGRAD] = { gen_shape_dwconv },
	[VTPU_OP_AVGPOOL] = { gen_shape_avgpool },
	[VTPU_OP_AVGPOOL_GRAD] = { gen_shape_avgpool },
	[VTPU_OP_IMAGE_AUGMENT] = { gen_shape_augment },
	[VTPU_OP_ADDITIVE_SCORE] = { gen_shape_additive },
	[VTPU_OP_ADDITIVE_SCORE_GRAD] = { gen_shape_additive },
	[VTPU_OP_LSTM_CELL] = { gen_shape_lstm },
	[VTPU_OP_LSTM_CELL_GRAD] = { gen_shape_lstm },
};

static inline int gen_known(uint32_t op)
{
	return op < VTPU_OP_COUNT && gen_ops[op].shape &&
	       vtpu_engine_op_desc(op);
}

/* A random opcode gen_cmd() knows. */
static inline uint32_t gen_opcode(struct gen_rng *r)
{
	uint32_t op, n = 0, i;

	for (op = 0; op < VTPU_OP_COUNT; op++)
		n += gen_known(op);
	i = gen_below(r, n);
	for (op = 0; op < VTPU_OP_COUNT; op++)
		if (gen_known(op) && !i--)
			break;
	return op;
}

/*
 * Append a random command of opcode @op: its shape, then a region for each
 * operand it uses, as the engine's table describes them.
 * Return: 0 when appended, -1 when the buffers are full.
 */
static inline int gen_cmd(struct gen_ctx *g, uint32_t op)
{
	const struct vtpu_engine_op_desc *d;
	struct vtpu_cmdbuf *cb = g->cb;
	struct gen_plan p = { 0 };
	struct vtpu_cmd_hdr *cmd;
	struct vtpu_operand *o;
	uint32_t pos = cb->size, i, id, align;
	int pass;
	uint64_t bytes;

	if (!gen_known(op))
		return -1;
	d = vtpu_engine_op_desc(op);
	if (gen_ops[op].shape(g, op, &p))
		goto undo;
	cmd = (void *)(cb->data + pos);
	if (cmd->size != vtpu_engine_cmd_size(op))
		goto undo;
	if (p.same)
		p.fresh |= GEN_BIT(p.as);
	/*
	 * the inputs first: one may reuse an earlier command's region, never
	 * one of this command's fresh ones
	 */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < d->noperands; i++) {
			struct vtpu_ref ref;
			const struct vtpu_operand *oc;
			int fresh;

			id = d->operands[i].id;
			fresh = d->operands[i].write ||
				(p.fresh & GEN_BIT(id));
			if ((p.unused & GEN_BIT(id)) || id == p.same ||
			    fresh != pass)
				continue;
			vtpu_engine_operand(cmd, id, &oc, &bytes);
			align = vtpu_engine_operand_align(cmd, id);
			if (fresh ? gen_fresh(g, bytes, align, &ref) :
				    gen_input(g, bytes, align, &ref))
				goto undo;
			o = (void *)((uint8_t *)cmd + d->operands[i].offset);
			o->buf = ref.buf;
			o->offset = ref.off;
		}
	for (i = 0; p.same && i < d->noperands; i++)
		if (d->operands[i].id == p.same) {
			const struct vtpu_operand *as;

			vtpu_engine_operand(cmd, p.as, &as, &bytes);
			o = (void *)((uint8_t *)cmd + d->operands[i].offset);
			*o = *as;
		}
	if (gen_ops[op].fill)
		gen_ops[op].fill(g, cmd);
	g->ncmds++;
	return 0;
undo:
	cb->size = pos;		/* the command, half made, goes */
	return -1;
}

/*
 * Up to @max random commands, at least one (a NOP when nothing else fits:
 * the device refuses an empty stream).
 */
static inline uint32_t gen_stream(struct gen_ctx *g, uint32_t max)
{
	uint32_t i, n = gen_range(g->rng, 1, max);

	for (i = 0; i < n; i++)
		if (gen_cmd(g, gen_opcode(g->rng)))
			break;
	if (!g->ncmds)
		gen_cmd(g, VTPU_OP_NOP);
	return g->ncmds;
}

/*
 * Make @dst the same stream as @src on buffers @dbos (index i of @src
 * becomes @dbos[i]) and copy @src's buffer contents into them.
 */
static inline int gen_clone(struct vtpu_cmdbuf *dst,
			    const struct vtpu_cmdbuf *src,
			    struct vtpu_bo *dbos)
{
	const struct vtpu_cmd_hdr *h;
	uint32_t i, pos;

	vtpu_cmdbuf_reset(dst);
	for (i = 0; i < src->nhandles; i++) {
		memcpy(dbos[i].map, src->bos[i]->map, src->bos[i]->size);
		vtpu_cmdbuf_use(dst, &dbos[i]);
	}
	for (pos = 0; pos < src->size; pos += h->size) {
		h = (const void *)(src->data + pos);
		vtpu_cmdbuf_append(dst, h);
	}
	return dst->error;
}

/*
 * Compare a device buffer with the oracle's: 32-bit words must be equal,
 * or both NaN, or (both normal numbers) within a relative 1e-5.
 * Return: the number of words that differ; *first the first of them.
 */
static inline size_t gen_compare(const void *got, const void *want,
				 size_t bytes, size_t *first)
{
	const uint32_t *g = got, *w = want;
	size_t i, bad = 0;
	float fg, fw;

	for (i = 0; i < bytes / 4; i++) {
		if (g[i] == w[i])
			continue;
		memcpy(&fg, &g[i], 4);
		memcpy(&fw, &w[i], 4);
		if (isnan(fg) && isnan(fw))
			continue;
		if ((isnormal(fg) || fg == 0) && (isnormal(fw) || fw == 0) &&
		    fabsf(fg - fw) <= 1e-5f * fmaxf(1.0f, fmaxf(fabsf(fg), fabsf(fw))))
			continue;
		if (!bad++ && first)
			*first = i;
	}
	return bad;
}

/* ---- sysfs and the kernel log --------------------------------------------- */

/* A number from /sys/class/vtpu/vtpuN/NAME, or -1. */
static inline long long gen_sysfs(int index, const char *name)
{
	char path[128], buf[64];
	long long v = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/vtpu/vtpu%d/%s", index, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		v = strtoll(buf, NULL, 10);
	}
	close(fd);
	return v;
}

#define GEN_NCOUNTERS 5
static const char *const gen_counter_names[GEN_NCOUNTERS] = {
	"jobs_submitted", "jobs_completed", "jobs_failed", "jobs_timedout",
	"jobs_cancelled",
};

static inline void gen_counters(int index, long long *c)
{
	int i;

	for (i = 0; i < GEN_NCOUNTERS; i++)
		c[i] = gen_sysfs(index, gen_counter_names[i]);
}

/*
 * Wait (up to @ms) until device @index is idle and back to @mem_used and
 * @clients, its counters balanced since @c0: submitted = completed + failed
 * + timedout + cancelled. Fills @c with the deltas. Return: 0 when all hold.
 */
static inline int gen_settle(int index, const long long *c0,
			     long long mem_used, long long clients, long long *c,
			     int ms)
{
	double end = gen_now_ms() + ms;
	int i;

	for (;;) {
		gen_counters(index, c);
		for (i = 0; i < GEN_NCOUNTERS; i++)
			c[i] -= c0[i];
		if (c[0] == c[1] + c[2] + c[3] + c[4] &&
		    gen_sysfs(index, "mem_used") == mem_used &&
		    gen_sysfs(index, "clients") == clients)
			return 0;
		if (gen_now_ms() > end)
			return -1;
		usleep(20000);
	}
}

/*
 * Kernel reports in the log so far: KASAN, lockdep, WARN/BUG, atomic
 * sleep, list corruption, kmemleak. Compare before and after a test.
 * Return: the count, or -1 when the log cannot be read.
 */
static inline int gen_kernel_reports(void)
{
	static const char *const pat[] = {
		"BUG:", "WARNING:", "KASAN", "possible circular",
		"possible recursive", "inconsistent lock state",
		"sleeping function called", "list_add corruption",
		"list_del corruption", "general protection", "Oops",
		"suspected memory leak", "UBSAN",
	};
	int size = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf, *line, *end;
	int n, count = 0;
	size_t i;

	if (size <= 0)
		return -1;
	buf = malloc(size + 1);
	if (!buf)
		return -1;
	n = klogctl(3, buf, size);		/* SYSLOG_ACTION_READ_ALL */
	if (n < 0) {
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	for (line = buf; line < buf + n; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			end = buf + n;
		*end = '\0';
		for (i = 0; i < sizeof(pat) / sizeof(pat[0]); i++)
			if (strstr(line, pat[i])) {
				count++;
				break;
			}
	}
	free(buf);
	return count;
}

#endif /* VTPU_GEN_H */
