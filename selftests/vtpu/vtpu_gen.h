/* SPDX-License-Identifier: GPL-2.0 */
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
/* the opcodes gen_cmd() knows: NOP .. CAST, CONV_POOL .. CONV_WGRAD */
#define GEN_NOPS (VTPU_OP_CAST + 1 + VTPU_OP_CONV_WGRAD - VTPU_OP_CONV_POOL + 1)
#define GEN_MAXREG 96

/* A random opcode gen_cmd() knows. */
static inline uint32_t gen_opcode(struct gen_rng *r)
{
	uint32_t i = gen_below(r, GEN_NOPS);

	return i <= VTPU_OP_CAST ? i : VTPU_OP_CONV_POOL + (i - VTPU_OP_CAST - 1);
}

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

/* Return: 0 when appended, -1 when the buffers are full. */
static inline int gen_cmd(struct gen_ctx *g, uint32_t op)
{
	struct gen_rng *r = g->rng;
	struct vtpu_cmdbuf *cb = g->cb;
	struct vtpu_ref a, b, c, d = VTPU_REF_NONE;
	uint64_t n1;

	switch (op) {
	case VTPU_OP_NOP: {
		struct vtpu_cmd_hdr h = { VTPU_OP_NOP, sizeof(h) };

		vtpu_cmdbuf_append(cb, &h);
		break;
	}
	case VTPU_OP_GEMM: {
		struct vtpu_gemm_desc gd = { 0 };
		uint32_t ar, ac, br, bc, es;

		gd.m = gen_range(r, 1, 20);
		gd.n = gen_range(r, 1, 20);
		gd.k = gen_range(r, 1, 20);
		gd.flags = gen_below(r, 16);
		gd.dtype = gen_one_in(r, 4) ? VTPU_DTYPE_BF16 : VTPU_DTYPE_F32;
		es = gd.dtype == VTPU_DTYPE_BF16 ? 2 : 4;
		/* f32 in panels: B's, C's or both, on whole panels */
		if (es == 4 && gen_one_in(r, 4)) {
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
		ar = gd.flags & VTPU_GEMM_TRANS_A ? gd.k : gd.m;
		ac = gd.flags & VTPU_GEMM_TRANS_A ? gd.m : gd.k;
		br = gd.flags & VTPU_GEMM_TRANS_B ? gd.n : gd.k;
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
		if (gen_input(g, (uint64_t)ar * gd.lda * es, es, &a) ||
		    gen_input(g, (uint64_t)br * gd.ldb * es, es, &b))
			return -1;
		if ((gd.flags & VTPU_GEMM_BIAS) &&
		    gen_input(g, (uint64_t)gd.n * 4, 4, &d))
			return -1;
		if (gen_fresh(g, (uint64_t)gd.m * gd.ldc * 4, 4, &c))
			return -1;
		gd.a_buf = a.buf, gd.a_off = a.off;
		gd.b_buf = b.buf, gd.b_off = b.off;
		gd.c_buf = c.buf, gd.c_off = c.off;
		if (gd.flags & VTPU_GEMM_BIAS)
			gd.bias_buf = d.buf, gd.bias_off = d.off;
		vtpu_cmdbuf_gemm(cb, &gd);
		break;
	}
	case VTPU_OP_FILL:
		n1 = gen_range(r, 1, 512);
		if (gen_fresh(g, n1 * 4, 4, &a))
			return -1;
		vtpu_cmdbuf_fill(cb, a.buf, a.off, n1, gen_scalar(g));
		break;
	case VTPU_OP_COPY:
		n1 = gen_range(r, 1, 2048);
		if (gen_input(g, n1, 1, &b) || gen_fresh(g, n1, 1, &a))
			return -1;
		vtpu_cmdbuf_copy(cb, a.buf, a.off, b.buf, b.off, n1);
		break;
	case VTPU_OP_IM2COL:
	case VTPU_OP_COL2IM: {
		struct vtpu_window w;
		uint64_t img, out, kdim, cols;

		gen_window(g, &w, &img, &out, &kdim);
		cols = out / w.c * kdim;
		if (op == VTPU_OP_IM2COL) {
			if (gen_input(g, img * 4, 4, &a) ||
			    gen_fresh(g, cols * 4, 4, &b))
				return -1;
			vtpu_cmdbuf_im2col(cb, &w, a, b);
		} else {
			if (gen_input(g, cols * 4, 4, &b) ||
			    gen_fresh(g, img * 4, 4, &a))
				return -1;
			vtpu_cmdbuf_col2im(cb, &w, b, a);
		}
		break;
	}
	case VTPU_OP_MAXPOOL:
	case VTPU_OP_MAXPOOL_GRAD: {
		struct vtpu_window w;
		uint64_t img, out, kdim;

		gen_window(g, &w, &img, &out, &kdim);
		if (op == VTPU_OP_MAXPOOL) {
			if (gen_input(g, img * 4, 4, &a) ||
			    gen_fresh(g, out * 4, 4, &b) ||
			    gen_fresh(g, out * 4, 4, &c))
				return -1;
			vtpu_cmdbuf_maxpool(cb, &w, a, b, c);
		} else {
			/* dy, index in; dx out */
			if (gen_input(g, out * 4, 4, &b) ||
			    gen_fresh(g, out * 4, 4, &c) ||
			    gen_fresh(g, img * 4, 4, &a))
				return -1;
			gen_u32s(g, c, out, w.h * w.w + 1);
			vtpu_cmdbuf_maxpool_grad(cb, &w, b, c, a);
		}
		break;
	}
	case VTPU_OP_ELEMENTWISE: {
		static const uint8_t uses[VTPU_EW_COUNT] = {
			[VTPU_EW_ADD] = 1, [VTPU_EW_SUB] = 1, [VTPU_EW_MUL] = 1,
			[VTPU_EW_SCALE] = 2, [VTPU_EW_AXPY] = 3,
			[VTPU_EW_AXPBY] = 7, [VTPU_EW_RELU] = 0,
			[VTPU_EW_RELU_GRAD] = 1, [VTPU_EW_ADD_SCALAR] = 2,
		};
		uint32_t ew = gen_below(r, VTPU_EW_COUNT), u = uses[ew];
		int inplace = gen_one_in(r, 4);

		n1 = gen_range(r, 1, 1024);
		if (inplace) {
			if (gen_fresh(g, n1 * 4, 4, &a))
				return -1;
			c = a;
		} else if (gen_input(g, n1 * 4, 4, &a)) {
			return -1;
		}
		b = VTPU_REF_NONE;
		if ((u & 1) && gen_input(g, n1 * 4, 4, &b))
			return -1;
		if (!inplace && gen_fresh(g, n1 * 4, 4, &c))
			return -1;
		vtpu_cmdbuf_elementwise(cb, ew, n1, u & 2 ? gen_scalar(g) : 0,
					u & 4 ? gen_scalar(g) : 0, a, b, c);
		break;
	}
	case VTPU_OP_REDUCE: {
		uint32_t rop = gen_below(r, 2), m = gen_range(r, 1, 32);
		uint32_t n = gen_range(r, 1, 32), ldx = n + gen_below(r, 3);

		if (gen_input(g, (uint64_t)m * ldx * 4, 4, &a) ||
		    gen_fresh(g, (uint64_t)(rop == VTPU_REDUCE_ROWS ? m : n) * 4,
			      4, &b))
			return -1;
		vtpu_cmdbuf_reduce(cb, rop, m, n, ldx, gen_scalar(g),
				   gen_one_in(r, 2) ? 0 : gen_scalar(g), a, b);
		break;
	}
	case VTPU_OP_SOFTMAX_XENT: {
		struct vtpu_xent_desc x = { 0 };

		x.m = gen_range(r, 1, 8);
		x.n = gen_range(r, 1, 10);
		x.flags = gen_below(r, 4);
		x.scale = 1.0f / x.m;
		n1 = (uint64_t)x.m * x.n;
		if (gen_input(g, n1 * 4, 4, &x.logits) ||
		    gen_fresh(g, (uint64_t)x.m * 4, 4, &x.labels) ||
		    gen_fresh(g, 4, 4, &x.loss) ||
		    gen_fresh(g, 4, 4, &x.correct))
			return -1;
		gen_u32s(g, x.labels, x.m, x.n + 1);	/* some ignored rows */
		if ((x.flags & VTPU_XENT_DLOGITS) &&
		    gen_fresh(g, n1 * 4, 4, &x.dlogits))
			return -1;
		if ((x.flags & VTPU_XENT_PROBS) &&
		    gen_fresh(g, n1 * 4, 4, &x.probs))
			return -1;
		vtpu_cmdbuf_softmax_xent(cb, &x);
		break;
	}
	case VTPU_OP_SGD: {
		float mom = gen_one_in(r, 2) ? 0.0f : 0.5f + gen_below(r, 4) * 0.125f;
		uint32_t fl = mom != 0.0f && gen_one_in(r, 2) ? VTPU_SGD_NESTEROV : 0;

		n1 = gen_range(r, 1, 512);
		c = VTPU_REF_NONE;
		if (gen_input(g, n1 * 4, 4, &b) || gen_fresh(g, n1 * 4, 4, &a) ||
		    (mom != 0.0f && gen_fresh(g, n1 * 4, 4, &c)))
			return -1;
		vtpu_cmdbuf_sgd(cb, n1, 0.125f, mom,
				gen_one_in(r, 2) ? 0.0f : 0.25f, fl, a, b, c);
		break;
	}
	case VTPU_OP_ADAM_STEP:
		if (gen_fresh(g, 8, 4, &a))
			return -1;
		vtpu_cmdbuf_adam_step(cb, 0.9f, 0.999f, a);
		break;
	case VTPU_OP_ADAM: {
		struct vtpu_adam_desc ad = { 0 };
		float *st, *v;
		uint64_t i;

		ad.count = n1 = gen_range(r, 1, 512);
		ad.lr = 0.01f;
		ad.beta1 = 0.9f;
		ad.beta2 = 0.999f;
		ad.eps = 1e-3f;
		ad.weight_decay = gen_one_in(r, 2) ? 0.0f : 0.01f;
		ad.flags = gen_below(r, 2);
		if (gen_input(g, n1 * 4, 4, &ad.grad) ||
		    gen_fresh(g, 8, 4, &ad.state) ||
		    gen_fresh(g, n1 * 4, 4, &ad.param) ||
		    gen_fresh(g, n1 * 4, 4, &ad.m) ||
		    gen_fresh(g, n1 * 4, 4, &ad.v))
			return -1;
		st = gen_ptr(g, ad.state);
		st[0] = 0.1f;
		st[1] = 0.001f;
		v = gen_ptr(g, ad.v);
		for (i = 0; i < n1; i++)
			v[i] = fabsf(v[i]);
		vtpu_cmdbuf_adam(cb, &ad);
		break;
	}
	case VTPU_OP_CAST: {
		uint32_t mode = gen_below(r, 3);
		uint32_t ss = mode == VTPU_CAST_F32_TO_BF16 ? 4 :
			      mode == VTPU_CAST_BF16_TO_F32 ? 2 : 1;
		uint32_t ds = mode == VTPU_CAST_F32_TO_BF16 ? 2 : 4;

		n1 = gen_range(r, 1, 512);
		if (gen_input(g, n1 * ss, ss, &b) || gen_fresh(g, n1 * ds, ds, &a))
			return -1;
		vtpu_cmdbuf_cast(cb, mode, n1,
				 mode == VTPU_CAST_U8_TO_F32 ? 0.5f : 0.0f,
				 mode == VTPU_CAST_U8_TO_F32 ? -1.0f : 0.0f,
				 b, a);
		break;
	}
	case VTPU_OP_CONV_POOL:
	case VTPU_OP_CONV_POOL_WGRAD: {
		struct vtpu_conv_pool_desc cd = { 0 };
		uint64_t img, out, kdim, nw, ny;
		uint32_t oh, ow, ph, pw;

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
		ph = (oh - cd.pool_h) / cd.pool_stride_h + 1;
		pw = (ow - cd.pool_w) / cd.pool_stride_w + 1;
		nw = kdim * cd.oc;
		ny = (uint64_t)cd.win.n * ph * pw * cd.oc;
		if (gen_input(g, img * 4, 4, &cd.x))
			return -1;
		if (op == VTPU_OP_CONV_POOL) {
			if (gen_input(g, nw * 4, 4, &cd.w) ||
			    gen_input(g, cd.oc * 4, 4, &cd.bias) ||
			    gen_fresh(g, ny * 4, 4, &cd.y) ||
			    gen_fresh(g, ny, 1, &cd.index))
				return -1;
			vtpu_cmdbuf_conv_pool(cb, &cd);
		} else {
			/* routes: window positions, some naming none */
			uint8_t *rt;
			uint64_t i;

			if (gen_input(g, ny * 4, 4, &cd.dy) ||
			    gen_fresh(g, ny, 1, &cd.index) ||
			    gen_fresh(g, nw * 4, 4, &cd.w) ||
			    gen_fresh(g, cd.oc * 4, 4, &cd.bias))
				return -1;
			rt = gen_ptr(g, cd.index);
			for (i = 0; i < ny; i++)
				rt[i] = gen_one_in(r, 8) ? VTPU_CONV_NO_ROUTE :
					(uint8_t)gen_below(r, cd.pool_h *
								 cd.pool_w + 1);
			vtpu_cmdbuf_conv_pool_wgrad(cb, &cd);
		}
		break;
	}
	case VTPU_OP_CONV:
	case VTPU_OP_CONV_DGRAD:
	case VTPU_OP_CONV_WGRAD: {
		struct vtpu_conv_desc cd = { 0 };
		uint64_t img, out, kdim, nw, ny;
		uint32_t oh, ow;

		gen_window(g, &cd.win, &img, &out, &kdim);
		/*
		 * one in four: AVX-512's Winograd case, a 3 x 3 window at
		 * stride 1 over 16 or 32 channels (any pad, h + 2 pad >= 3)
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
			img = (uint64_t)w->n * w->h * w->w * w->c;
			kdim = 9ull * w->c;
		}
		if (op == VTPU_OP_CONV_DGRAD)
			cd.win.stride_h = cd.win.stride_w = 1;
		oh = (cd.win.h + 2 * cd.win.pad_h - cd.win.kh) / cd.win.stride_h + 1;
		ow = (cd.win.w + 2 * cd.win.pad_w - cd.win.kw) / cd.win.stride_w + 1;
		/* either side of 16: AVX-512's narrow and wide GEMM kernels */
		cd.oc = gen_one_in(r, 3) ? 16 * gen_range(r, 1, 2) :
					  gen_range(r, 1, 20);
		nw = kdim * cd.oc;
		ny = (uint64_t)cd.win.n * oh * ow * cd.oc;
		if (op == VTPU_OP_CONV) {
			/* bits 0, 1: VTPU_CONV_RELU, VTPU_CONV_BIAS */
			cd.flags = gen_below(r, 4) &
				   (VTPU_CONV_RELU | VTPU_CONV_BIAS);
			if (gen_input(g, img * 4, 4, &cd.x) ||
			    gen_input(g, nw * 4, 4, &cd.w) ||
			    ((cd.flags & VTPU_CONV_BIAS) &&
			     gen_input(g, cd.oc * 4, 4, &cd.bias)) ||
			    gen_fresh(g, ny * 4, 4, &cd.y))
				return -1;
			vtpu_cmdbuf_conv(cb, &cd);
		} else {
			/* DGRAD: w, dy in, dx out; WGRAD: x, dy in, dw out */
			int dg = op == VTPU_OP_CONV_DGRAD;
			struct vtpu_ref *src = dg ? &cd.w : &cd.x;
			struct vtpu_ref *dst = dg ? &cd.x : &cd.w;

			cd.flags = gen_below(r, 2) ? VTPU_CONV_ACCUMULATE : 0;
			if (gen_input(g, ny * 4, 4, &cd.y) ||
			    gen_input(g, (dg ? nw : img) * 4, 4, src) ||
			    gen_fresh(g, (dg ? img : nw) * 4, 4, dst))
				return -1;
			if (dg)
				vtpu_cmdbuf_conv_dgrad(cb, &cd);
			else
				vtpu_cmdbuf_conv_wgrad(cb, &cd);
		}
		break;
	}
	default:
		return -1;
	}
	g->ncmds++;
	return 0;
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
