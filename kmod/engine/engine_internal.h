/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Between the op table (cmd.c), the validator (validate.c), the executors'
 * side (exec.c) and the op implementations (ops_*.c, gemm*.c). Each
 * opcode's functions are declared here and named in its table entry.
 */
#ifndef VTPU_ENGINE_INTERNAL_H
#define VTPU_ENGINE_INTERNAL_H

#include "vtpu_engine.h"

/* gemm.c: op->gemm and op->simd are set; fills the rest. */
void vtpu_gemm_prepare(struct vtpu_engine_op *op);
size_t vtpu_gemm_scratch_size(void);

/*
 * cmd.c (integer code): decode a window; false if its geometry is invalid
 * (then *g holds zeros). Fills everything but total and chunk.
 */
bool vtpu_window_decode(const struct vtpu_window *w,
			struct vtpu_engine_window *g);

/*
 * cmd.c: a window op's rows = n * oh * ow (windows) and cols = rows * kdim
 * (im2col elements); false past VTPU_MAX_ELEMS.
 */
bool vtpu_window_counts(const struct vtpu_engine_window *g, u64 *rows,
			u64 *cols);

/*
 * cmd.c: decode a CONV_POOL command's geometry; false if it is invalid
 * (then *cp holds zeros). Fills all but the pointers and tiling.
 */
bool vtpu_convpool_decode(const struct vtpu_cmd_conv_pool *c,
			  struct vtpu_engine_convpool *cp);

/*
 * cmd.c: decode a CONV, CONV_DGRAD or CONV_WGRAD command's geometry into
 * *g, with *rows = n * oh * ow; false if it is invalid.
 */
bool vtpu_conv_decode(const struct vtpu_cmd_conv *c,
		      struct vtpu_engine_window *g, u64 *rows);

/*
 * cmd.c: a DWCONV command's geometry into @g (oh, ow its given ones) and
 * its windows n * oh * ow into @rows; false (all zero) when invalid.
 */
bool vtpu_dwconv_decode(const struct vtpu_cmd_dwconv *c,
			struct vtpu_engine_window *g, u64 *rows);

/*
 * cmd.c: decode a MAXPOOL or MAXPOOL_GRAD command's geometry, with its
 * VTPU_POOL_PAD_END_* flags (oh, ow); false if it is invalid.
 */
bool vtpu_pool_decode(const struct vtpu_cmd_pool *p,
		      struct vtpu_engine_window *g);

/*
 * cmd.c: decode an AVGPOOL or AVGPOOL_GRAD command's geometry (oh, ow
 * from the command; kdim = kh * kw); false if it is invalid.
 */
bool vtpu_avgpool_decode(const struct vtpu_cmd_avgpool *c,
			 struct vtpu_engine_window *g);

/* cmd.c: are an EMBEDDING's, a GEMM_BATCHED's fields in range? */
bool vtpu_embedding_ok(const struct vtpu_cmd_embedding *e);
bool vtpu_gemm_batched_ok(const struct vtpu_cmd_gemm_batched *g);
/* cmd.c: are an ADDITIVE_SCORE's fields in range (the pads aside)? */
bool vtpu_additive_ok(const struct vtpu_cmd_additive_score *a);
/*
 * cmd.c: an LSTM_CELL's (or, the same fields, LSTM_CELL_GRAD's) highest
 * 4-gate element + 1, or 0 when its fields or strides are invalid
 */
u64 vtpu_lstm_gates_span(const struct vtpu_cmd_lstm_cell *l);
/* cmd.c: do a GEMM_BATCHED's Cs share no element (apart or interleaved)? */
bool vtpu_gemm_batched_disjoint(const struct vtpu_cmd_gemm_batched *g);

/* gemm.c: tile a GEMM_BATCHED (op->gemm set, with its batch fields). */
void vtpu_gemm_prepare_batched(struct vtpu_engine_op *op);

/*
 * cmd.c: vtpu_engine_operand() and the alignment the operand's offset
 * needs, from one look at the table (the validator wants both).
 */
int vtpu_operand_info(const struct vtpu_cmd_hdr *cmd, u32 id,
		      const struct vtpu_operand **opnd, u64 *bytes, u32 *align);

/* cmd.c: bytes per element of a GEMM's dtype (0: unknown), of a cast's. */
u32 vtpu_dtype_size(u32 dtype);
u32 vtpu_cast_size(u32 mode, bool dst);

/* Where a (validated) operand is in the job's buffers. */
static inline void *vtpu_operand_ptr(const struct vtpu_engine_buf *bufs,
				     const struct vtpu_operand *o)
{
	return (u8 *)bufs[o->buf].base + o->offset;
}

/*
 * The op's workspace (struct vtpu_engine_op): its tiles write their own
 * parts of it while the op runs, though the executor hands them the op
 * as const.
 */
static inline void *vtpu_op_work(const struct vtpu_engine_op *op)
{
	return (void *)op->work;
}

/*
 * An unaligned load and store of a GCC vector type (the SIMD templates'
 * inner loops): a memcpy, which the compiler makes one vector move.
 */
#define VTPU_VEC_LOAD(type, p)                                                 \
	({                                                                     \
		type __vld;                                                    \
		memcpy(&__vld, (p), sizeof(__vld));                            \
		__vld;                                                         \
	})
#define VTPU_VEC_STORE(p, v)                                                   \
	do {                                                                   \
		__typeof__(v) __vst = (v);                                     \
		memcpy((p), &__vst, sizeof(__vst));                            \
	} while (0)

/* A binary32 the uAPI carries as its bits. */
static inline float vtpu_f32_from_bits(u32 bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * *p, loaded into a register: a scalar multiply-add may not take it as a
 * memory operand. QEMU 7.2's TCG (the guest CI boots) loads 16 bytes for
 * vfmadd*ss m32, so such an FMA on a buffer's last float faulted on the
 * unmapped page after it. Real CPUs read 4 bytes; this costs nothing.
 */
static __always_inline float vtpu_ld_reg(const float *p)
{
	float v = *p;

	__asm__("" : "+x"(v));
	return v;
}

static inline u64 vtpu_min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* ceil(a / b), without the overflow of (a + b - 1) / b */
static inline u32 vtpu_div_up(u32 a, u32 b)
{
	return a / b + (a % b != 0);
}

/*
 * The most windows along one axis that cover a pixel: ceil(k / s), and no
 * more than the @on windows there are. A global pool (a 64-pixel window
 * at stride 1, one window) has one, not 64: its gradient walked 64 x 64
 * candidate taps a pixel, 15 times its forward's time.
 */
static inline u64 vtpu_taps(u32 k, u32 s, u32 on)
{
	u64 t = ((u64)k + s - 1) / s;

	return on && t > on ? on : t;
}

/* Pixel or window @i of a row-major (n, y, x) walk over w x h images. */
static inline void vtpu_xy_of(u64 i, u64 w, u64 h, u64 *x, u64 *y, u64 *n)
{
	*x = i % w;
	i /= w;
	*y = i % h;
	*n = i / h;
}

/*
 * The next pixel or window of such a walk: the ops' range loops find
 * where they start with vtpu_xy_of() and step with this, not dividing.
 */
static inline void vtpu_next_xy(u64 *x, u64 *y, u64 *n, u64 w, u64 h)
{
	if (++*x == w) {
		*x = 0;
		if (++*y == h) {
			*y = 0;
			++*n;
		}
	}
}

/*
 * The windows (k, pad, stride s, on of them) along one axis that cover
 * coordinate i of the image are o = (i + pad - k0) / s for kernel offsets
 * k0 = first, first + s, ... while k0 < k and k0 <= i + pad.
 * Return: the first such offset, or k when no window covers i.
 */
static inline u32 vtpu_first_tap(u64 i, u32 pad, u32 s, u32 k, u32 on)
{
	u64 ii = i + pad;
	u64 o_max = ii / s;

	if (o_max > (u64)on - 1)
		o_max = (u64)on - 1;
	if (ii - o_max * s >= k)
		return k;
	return (u32)(ii - o_max * s);
}

/* Per-tile budget of the non-GEMM ops: elements touched per call. */
#define VTPU_OPS_CHUNK (64u * 1024)
/* The least an element-wise op's tile is given to share it out (~5 us). */
#define VTPU_OPS_MIN_CHUNK (16u * 1024)

/*
 * Tiles and steps of a window op (MAXPOOL, MAXPOOL_GRAD, COL2IM) whose
 * g->total elements each take @work window positions or taps: sets
 * g->chunk, elements per tile, g->span, positions per step, op->ntiles and
 * op->nsteps, so that no call does much more than VTPU_OPS_CHUNK of them
 * whatever the window (ops_pool.c).
 */
void vtpu_window_tile(struct vtpu_engine_op *op, u64 work);

/*
 * The window positions (MAXPOOL: ky * kw + kx) or taps (the gathers,
 * MAXPOOL_GRAD and COL2IM: ty * vtpu_taps(kw, sw, ow) + tx) that step @step
 * takes, [step * span, (step + 1) * span) of @count, as rows of @ncols:
 * row r0 from column c0 to row r1, whose columns end at c1 (exclusive).
 */
struct vtpu_tap_range {
	u64 r0, c0, r1, c1;
};

static inline void vtpu_tap_range(const struct vtpu_engine_window *g,
				  u32 step, u64 count, u64 ncols,
				  struct vtpu_tap_range *r)
{
	u64 t0 = (u64)step * g->span;
	u64 t1 = vtpu_min_u64(t0 + g->span, count);

	r->r0 = t0 / ncols;
	r->c0 = t0 % ncols;
	r->r1 = (t1 - 1) / ncols;
	r->c1 = (t1 - 1) % ncols + 1;
}

/*
 * The positions (ky, kx) of @r in window (oy, ox) that fall on the image,
 * in (ky, kx) order (the forward pools): vtpu_window_start(), then each
 * vtpu_window_next() that returns true gives the next one. The image
 * pixel is (y0 + ky, x0 + kx).
 */
struct vtpu_window_walk {
	const struct vtpu_tap_range *r;
	s64 y0, x0;		/* the window's top left, in the image */
	s64 ky0, ky1;		/* its rows on the image: [ky0, ky1) */
	s64 kx0, kx1;		/* its columns on the image */
	s64 ky, kx, kx_hi;	/* the position; the end of its row in @r */
};

static inline void vtpu_window_start(struct vtpu_window_walk *w,
				     const struct vtpu_engine_window *g,
				     const struct vtpu_tap_range *r,
				     u64 oy, u64 ox)
{
	w->r = r;
	w->y0 = (s64)(oy * g->sh) - g->ph;
	w->x0 = (s64)(ox * g->sw) - g->pw;
	w->ky0 = w->y0 < 0 ? -w->y0 : 0;
	w->kx0 = w->x0 < 0 ? -w->x0 : 0;
	w->ky1 = w->y0 + g->kh > g->h ? g->h - w->y0 : g->kh;
	w->kx1 = w->x0 + g->kw > g->w ? g->w - w->x0 : g->kw;
	w->ky = (w->ky0 > (s64)r->r0 ? w->ky0 : (s64)r->r0) - 1;
	w->kx = 0;
	w->kx_hi = 0;
}

static inline bool vtpu_window_next(struct vtpu_window_walk *w)
{
	const struct vtpu_tap_range *r = w->r;
	s64 ky;

	if (++w->kx < w->kx_hi)
		return true;
	while (++w->ky < w->ky1 && w->ky <= (s64)r->r1) {
		ky = w->ky;
		w->kx = ky == (s64)r->r0 && (s64)r->c0 > w->kx0 ?
			(s64)r->c0 : w->kx0;
		w->kx_hi = ky == (s64)r->r1 && (s64)r->c1 < w->kx1 ?
			   (s64)r->c1 : w->kx1;
		if (w->kx < w->kx_hi)
			return true;
	}
	return false;
}

/*
 * The taps of @r that cover image pixel (iy, ix), in (ty, tx) order (the
 * gathers: MAXPOOL_GRAD, AVGPOOL_GRAD, COL2IM): vtpu_cover_start(), then
 * each vtpu_cover_next() that returns true gives the next kernel offset
 * (ky, kx), from vtpu_first_tap()'s by the strides, and its window
 * (oy, ox).
 */
struct vtpu_cover_walk {
	const struct vtpu_engine_window *g;
	const struct vtpu_tap_range *r;
	u64 iy, ix, kx0;
	u64 ty, tx, ky, kx;
	u64 oy, ox;
	bool in_row;
};

static inline void vtpu_cover_start(struct vtpu_cover_walk *c,
				    const struct vtpu_engine_window *g,
				    const struct vtpu_tap_range *r,
				    u64 iy, u64 ix)
{
	c->g = g;
	c->r = r;
	c->iy = iy;
	c->ix = ix;
	c->kx0 = vtpu_first_tap(ix, g->pw, g->sw, g->kw, g->ow);
	c->ty = r->r0;
	c->ky = vtpu_first_tap(iy, g->ph, g->sh, g->kh, g->oh) +
		c->ty * g->sh;
	c->tx = 0;
	c->kx = 0;
	c->in_row = false;
}

/* tap tx of row ty: inside the kernel, the window and @r */
static inline bool vtpu_cover_x_ok(const struct vtpu_cover_walk *c)
{
	return c->kx < c->g->kw && c->kx <= c->ix + c->g->pw &&
	       (c->ty != c->r->r1 || c->tx < c->r->c1);
}

static inline bool vtpu_cover_next(struct vtpu_cover_walk *c)
{
	const struct vtpu_engine_window *g = c->g;
	const struct vtpu_tap_range *r = c->r;

	if (c->in_row) {
		c->tx++;
		c->kx += g->sw;
		c->in_row = vtpu_cover_x_ok(c);
		if (!c->in_row) {
			c->ty++;
			c->ky += g->sh;
		}
	}
	while (!c->in_row && c->ky < g->kh && c->ky <= c->iy + g->ph &&
	       c->ty <= r->r1) {
		c->tx = c->ty == r->r0 ? r->c0 : 0;
		c->kx = c->kx0 + c->tx * g->sw;
		c->in_row = vtpu_cover_x_ok(c);
		if (!c->in_row) {
			c->ty++;
			c->ky += g->sh;
		}
	}
	if (!c->in_row)
		return false;
	c->oy = (c->iy + g->ph - c->ky) / g->sh;
	c->ox = (c->ix + g->pw - c->kx) / g->sw;
	return true;
}

/*
 * Elements [e, end) of a window op's tile at step @step, in order: @fn on
 * each run of channels c0.. (len of them) of window or pixel (n, y, x)
 * with the taps of @r that the step takes. @gather: the elements are the
 * image's pixels, each gathering from the windows that cover it (the
 * gathers); else the windows, each over its kh x kw positions. Always
 * inline: @fn, a constant at each call, is called directly.
 */
static __always_inline void
vtpu_window_range(const struct vtpu_engine_conv *cv, u32 step, u64 e,
		  u64 end, bool gather,
		  void (*fn)(const struct vtpu_engine_conv *cv,
			     const struct vtpu_tap_range *r, u64 e, u64 n,
			     u64 y, u64 x, u64 c0, u64 len))
{
	const struct vtpu_engine_window *g = &cv->win;
	u64 ncols = gather ? vtpu_taps(g->kw, g->sw, g->ow) : g->kw;
	u64 rows = gather ? vtpu_taps(g->kh, g->sh, g->oh) : g->kh;
	u64 w = gather ? g->w : g->ow, h = gather ? g->h : g->oh;
	u64 c0 = e % g->c, x, y, n;
	struct vtpu_tap_range r;

	vtpu_tap_range(g, step, rows * ncols, ncols, &r);
	vtpu_xy_of(e / g->c, w, h, &x, &y, &n);

	while (e < end) {
		u64 len = vtpu_min_u64(g->c - c0, end - e);

		fn(cv, &r, e, n, y, x, c0, len);
		e += len;
		c0 = 0;
		vtpu_next_xy(&x, &y, &n, w, h);
	}
}

/*
 * Tiles of an element-wise op (ELEMENTWISE, CAST, DROPOUT, SGD, ADAM) of
 * @count elements: sets op->chunk, elements per tile, and op->ntiles, for
 * op->workers (ops_elementwise.c).
 */
void vtpu_ops_tile(struct vtpu_engine_op *op, u64 count);

/*
 * The op table's functions (struct vtpu_engine_op_desc): each opcode's
 * check (validate.c, integer code), prepare (decode the command, tile the
 * work), run (one tile step) and describe, in the file of its family.
 */
#define VTPU_PREPARE(name)                                                     \
	void name(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,   \
		  const struct vtpu_engine_buf *bufs)
#define VTPU_RUN(name)                                                         \
	void name(const struct vtpu_engine_op *op, u32 tile, u32 step,         \
		  void *scratch)
#define VTPU_CHECK(name)                                                       \
	int name(struct vtpu_engine_check *v, const struct vtpu_cmd_hdr *cmd)
#define VTPU_DESCRIBE(name)                                                    \
	int name(const struct vtpu_engine_op *op, char *buf, size_t len)

VTPU_CHECK(vtpu_gemm_check);
VTPU_CHECK(vtpu_fill_check);
VTPU_CHECK(vtpu_copy_check);
VTPU_CHECK(vtpu_im2col_check);
VTPU_CHECK(vtpu_pool_check);
VTPU_CHECK(vtpu_avgpool_check);
VTPU_CHECK(vtpu_ew_check);
VTPU_CHECK(vtpu_reduce_check);
VTPU_CHECK(vtpu_xent_check);
VTPU_CHECK(vtpu_sgd_check);
VTPU_CHECK(vtpu_adam_step_check);
VTPU_CHECK(vtpu_adam_check);
VTPU_CHECK(vtpu_cast_check);
VTPU_CHECK(vtpu_dropout_check);
VTPU_CHECK(vtpu_augment_check);
VTPU_CHECK(vtpu_conv_pool_check);
VTPU_CHECK(vtpu_conv_check);
VTPU_CHECK(vtpu_embedding_check);
VTPU_CHECK(vtpu_gemm_batched_check);
VTPU_CHECK(vtpu_softmax_check);
VTPU_CHECK(vtpu_clip_norm_check);
VTPU_CHECK(vtpu_argmax_check);
VTPU_CHECK(vtpu_batchnorm_check);
VTPU_CHECK(vtpu_dwconv_check);
VTPU_CHECK(vtpu_additive_check);
VTPU_CHECK(vtpu_lstm_check);

VTPU_PREPARE(vtpu_gemm_cmd_prepare);		/* ops_gemm.c */
VTPU_PREPARE(vtpu_conv_gemm_prepare);
VTPU_DESCRIBE(vtpu_gemm_describe);
VTPU_DESCRIBE(vtpu_conv_gemm_describe);
VTPU_PREPARE(vtpu_gemm_batched_prepare);
VTPU_DESCRIBE(vtpu_gemm_batched_describe);
VTPU_RUN(vtpu_gemm_run);			/* gemm.c */
VTPU_PREPARE(vtpu_fill_prepare);		/* ops_memory.c */
VTPU_RUN(vtpu_fill_run);
VTPU_PREPARE(vtpu_copy_prepare);
VTPU_RUN(vtpu_copy_run);
VTPU_PREPARE(vtpu_im2col_prepare);		/* ops_conv.c */
VTPU_RUN(vtpu_im2col_run);
VTPU_DESCRIBE(vtpu_window_describe);
VTPU_PREPARE(vtpu_pool_prepare);		/* ops_pool.c */
VTPU_RUN(vtpu_pool_run);
VTPU_PREPARE(vtpu_avgpool_prepare);	/* ops_pool.c */
VTPU_PREPARE(vtpu_convpool_prepare);		/* ops_convpool.c */
VTPU_RUN(vtpu_convpool_run);
VTPU_DESCRIBE(vtpu_convpool_describe);
VTPU_PREPARE(vtpu_ew_prepare);			/* ops_elementwise.c */
VTPU_RUN(vtpu_ew_run);
VTPU_DESCRIBE(vtpu_ew_describe);
VTPU_PREPARE(vtpu_cast_prepare);
VTPU_RUN(vtpu_cast_run);
VTPU_PREPARE(vtpu_dropout_prepare);
VTPU_RUN(vtpu_dropout_run);
VTPU_PREPARE(vtpu_augment_prepare);
VTPU_RUN(vtpu_augment_run);
VTPU_DESCRIBE(vtpu_augment_describe);
VTPU_PREPARE(vtpu_reduce_prepare);		/* ops_reduce.c */
VTPU_RUN(vtpu_reduce_run);
VTPU_DESCRIBE(vtpu_reduce_describe);
size_t vtpu_reduce_scratch_size(void);
VTPU_PREPARE(vtpu_argmax_prepare);
VTPU_RUN(vtpu_argmax_run);
VTPU_DESCRIBE(vtpu_argmax_describe);
VTPU_PREPARE(vtpu_xent_prepare);		/* ops_loss.c */
VTPU_RUN(vtpu_xent_run);
VTPU_PREPARE(vtpu_softmax_prepare);		/* ops_softmax.c */
VTPU_RUN(vtpu_softmax_run);
VTPU_DESCRIBE(vtpu_softmax_describe);
VTPU_PREPARE(vtpu_sgd_prepare);			/* ops_optim.c */
VTPU_PREPARE(vtpu_adam_step_prepare);
VTPU_PREPARE(vtpu_adam_prepare);
VTPU_RUN(vtpu_optim_run);
VTPU_PREPARE(vtpu_embedding_prepare);		/* ops_embedding.c */
VTPU_RUN(vtpu_embedding_run);
VTPU_DESCRIBE(vtpu_embedding_describe);
VTPU_PREPARE(vtpu_clip_norm_prepare);
VTPU_RUN(vtpu_clip_norm_run);
VTPU_PREPARE(vtpu_batchnorm_prepare);		/* ops_batchnorm.c */
VTPU_RUN(vtpu_batchnorm_run);
VTPU_DESCRIBE(vtpu_batchnorm_describe);
size_t vtpu_batchnorm_scratch_size(void);
VTPU_PREPARE(vtpu_dwconv_prepare);		/* ops_dwconv.c */
VTPU_RUN(vtpu_dwconv_run);
VTPU_DESCRIBE(vtpu_dwconv_describe);
size_t vtpu_dwconv_scratch_size(void);
VTPU_PREPARE(vtpu_additive_prepare);		/* ops_additive.c */
VTPU_RUN(vtpu_additive_run);
VTPU_DESCRIBE(vtpu_additive_describe);
size_t vtpu_additive_scratch_size(void);
VTPU_PREPARE(vtpu_lstm_prepare);		/* ops_lstm.c */
VTPU_RUN(vtpu_lstm_run);
VTPU_DESCRIBE(vtpu_lstm_describe);
size_t vtpu_lstm_scratch_size(void);

/* ops_conv.c, for CONV_POOL: im2col rows [q, q + len) of one window row */
void vtpu_im2col_cols(const struct vtpu_engine_window *g, const float *image,
		      u64 n, u64 oy, u64 ox, u32 ky, u64 q, u64 len,
		      float *dst);

/*
 * CONV_POOL's kernels, once per SIMD level (convpool_tmpl.h): fwd computes
 * pooled pixels [p0, p1); wgrad accumulates pooled pixels [p0, p1) into
 * channels [o0, o0 + len) and taps [k0, k1) of dw, and dbias (zeroing
 * them first if @first). @pad: VTPU_CONVPOOL_PAD_FLOATS of scratch.
 */
#define VTPU_CONVPOOL_PAD_FLOATS (34u * 16u)
#define VTPU_CONVPOOL_LEVEL(sfx)                                               \
	void vtpu_convpool_fwd_##sfx(const struct vtpu_engine_convpool *cp,    \
				     u64 p0, u64 p1, float *pad);              \
	void vtpu_convpool_wgrad_##sfx(const struct vtpu_engine_convpool *cp,  \
				       u32 o0, u32 len, u32 k0, u32 k1,        \
				       u64 p0, u64 p1, bool first, float *pad)
/* SIGMOID and TANH of n floats, once per SIMD level (act_tmpl.h). */
#define VTPU_ACT_LEVEL(sfx)                                                    \
	void vtpu_act_sigmoid_##sfx(const float *x, float *z, u64 n);          \
	void vtpu_act_tanh_##sfx(const float *x, float *z, u64 n)
VTPU_ACT_LEVEL(scalar);
VTPU_ACT_LEVEL(avx2);
VTPU_ACT_LEVEL(avx512);

/*
 * LSTM_CELL's and LSTM_CELL_GRAD's cells [j, j + n) of row @r, once per
 * SIMD level (lstm_tmpl.h, with the activations); @scratch:
 * VTPU_LSTM_BLOCK floats.
 */
#define VTPU_LSTM_BLOCK 512u
#define VTPU_LSTM_LEVEL(sfx)                                                   \
	void vtpu_lstm_fwd_##sfx(const struct vtpu_engine_lstm *l, u64 r,      \
				 u32 j, u32 n);                                \
	void vtpu_lstm_bwd_##sfx(const struct vtpu_engine_lstm *l, u64 r,      \
				 u32 j, u32 n, float *scratch)
VTPU_LSTM_LEVEL(scalar);
VTPU_LSTM_LEVEL(avx2);
VTPU_LSTM_LEVEL(avx512);

VTPU_CONVPOOL_LEVEL(scalar);
VTPU_CONVPOOL_LEVEL(avx2);
VTPU_CONVPOOL_LEVEL(avx512);

/*
 * The NHWC per-channel ops' loops, once per SIMD level (bn_tmpl.h,
 * dw_tmpl.h, pool_tmpl.h): BATCHNORM's passes over rows [r0, r1) of channels
 * [c0, c0 + w), the sums added to @acc0, @acc1 or y (dx) written from the
 * statistics in them, @k scratch for the channels' constants; DWCONV's
 * and DWCONV_DGRAD's output elements [e, end); DWCONV_WGRAD's channels
 * [o0, o0 + len) of dw, every tap, over windows [r, r_end), the sums in
 * @acc (taps * len floats); the pools' elements [e, end) at step @step.
 */
#define VTPU_NHWC_LEVEL(sfx)                                                   \
	void vtpu_bn_sums_##sfx(const struct vtpu_engine_bn *b, u32 c0, u32 w, \
				u32 r0, u32 r1, double *acc0, double *acc1,    \
				double *k);                                    \
	void vtpu_bn_write_##sfx(const struct vtpu_engine_bn *b, u32 c0,       \
				 u32 w, u32 r0, u32 r1, const double *acc0,    \
				 const double *acc1, double *k);               \
	void vtpu_dwconv_range_##sfx(const struct vtpu_engine_dwconv *d,       \
				     bool dgrad, u64 e, u64 end);              \
	void vtpu_dwconv_wgrad_##sfx(const struct vtpu_engine_dwconv *d,       \
				     float *acc, float *dw, u64 o0, u64 len,   \
				     u64 r, u64 r_end, bool zero);             \
	void vtpu_pool_range_##sfx(const struct vtpu_engine_op *op, u32 step,  \
				   u64 e, u64 end)
VTPU_NHWC_LEVEL(scalar);
VTPU_NHWC_LEVEL(avx2);
VTPU_NHWC_LEVEL(avx512);

/* SGD's and ADAM's elements [i0, i0 + n), once per level (optim_tmpl.h). */
#define VTPU_OPTIM_LEVEL(sfx)                                                  \
	void vtpu_sgd_run_##sfx(const struct vtpu_engine_optim *o, u64 i0,     \
				u64 n);                                        \
	void vtpu_adam_run_##sfx(const struct vtpu_engine_optim *o, u64 i0,    \
				 u64 n)
VTPU_OPTIM_LEVEL(scalar);
VTPU_OPTIM_LEVEL(avx2);
VTPU_OPTIM_LEVEL(avx512);

#endif /* VTPU_ENGINE_INTERNAL_H */
