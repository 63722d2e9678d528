/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Between the engine's dispatcher (exec.c) and its op implementations.
 * Each op family provides prepare (fill in ntiles/nsteps/flops and any
 * tiling state from the decoded fields) and run (one tile step).
 */
#ifndef VTPU_ENGINE_INTERNAL_H
#define VTPU_ENGINE_INTERNAL_H

#include "vtpu_engine.h"

/* gemm.c: op->gemm and op->simd are set; fills the rest. */
void vtpu_gemm_prepare(struct vtpu_engine_op *op);
void vtpu_gemm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch);
size_t vtpu_gemm_scratch_size(void);

/*
 * validate.c (integer code): decode a window; false if its geometry is
 * invalid (then *g holds zeros). Fills everything but total and chunk.
 */
bool vtpu_window_decode(const struct vtpu_window *w,
			struct vtpu_engine_window *g);

/*
 * validate.c: decode a CONV_POOL command's geometry; false if it is
 * invalid (then *cp holds zeros). Fills all but the pointers and tiling.
 */
bool vtpu_convpool_decode(const struct vtpu_cmd_conv_pool *c,
			  struct vtpu_engine_convpool *cp);

/*
 * validate.c: decode a CONV, CONV_DGRAD or CONV_WGRAD command's geometry
 * into *g, with *rows = n * oh * ow; false if it is invalid.
 */
bool vtpu_conv_decode(const struct vtpu_cmd_conv *c,
		      struct vtpu_engine_window *g, u64 *rows);

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

/* ceil(k / s): the most windows along one axis that cover a pixel. */
static inline u64 vtpu_taps(u32 k, u32 s)
{
	return ((u64)k + s - 1) / s;
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
 * Tiles of an element-wise op (ELEMENTWISE, CAST, DROPOUT, SGD, ADAM) of
 * @count elements: sets op->chunk, elements per tile, and op->ntiles, for
 * op->workers (exec.c).
 */
void vtpu_ops_tile(struct vtpu_engine_op *op, u64 count);

/*
 * Each op family: prepare sets ntiles, nsteps, flops and its tiling from
 * the decoded fields (op->conv, op->ew, ...); run does one (tile, step).
 */
void vtpu_conv_prepare(struct vtpu_engine_op *op);		/* ops_conv.c */
void vtpu_conv_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_im2col_cols(const struct vtpu_engine_window *g, const float *image,
		      u64 n, u64 oy, u64 ox, u32 ky, u64 q, u64 len,
		      float *dst);
void vtpu_pool_prepare(struct vtpu_engine_op *op);		/* ops_pool.c */
void vtpu_pool_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_convpool_prepare(struct vtpu_engine_op *op);	/* ops_convpool.c */
void vtpu_convpool_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_ew_prepare(struct vtpu_engine_op *op);	/* ops_elementwise.c */
void vtpu_ew_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_cast_prepare(struct vtpu_engine_op *op);
void vtpu_cast_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_dropout_prepare(struct vtpu_engine_op *op);
void vtpu_dropout_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_reduce_prepare(struct vtpu_engine_op *op);		/* ops_reduce.c */
void vtpu_reduce_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		     void *scratch);
size_t vtpu_reduce_scratch_size(void);
void vtpu_xent_prepare(struct vtpu_engine_op *op);		/* ops_loss.c */
void vtpu_xent_run(const struct vtpu_engine_op *op, u32 tile, u32 step);
void vtpu_optim_prepare(struct vtpu_engine_op *op);		/* ops_optim.c */
void vtpu_optim_run(const struct vtpu_engine_op *op, u32 tile, u32 step);

/*
 * CONV_POOL's kernels, once per SIMD level (convpool_tmpl.h): fwd computes
 * pooled pixels [p0, p1); wgrad accumulates pooled pixels [p0, p1) into
 * channels [o0, o0 + len) of dw and dbias (zeroing them first if @first).
 */
#define VTPU_CONVPOOL_LEVEL(sfx)                                               \
	void vtpu_convpool_fwd_##sfx(const struct vtpu_engine_convpool *cp,    \
				     u64 p0, u64 p1);                          \
	void vtpu_convpool_wgrad_##sfx(const struct vtpu_engine_convpool *cp,  \
				       u32 o0, u32 len, u64 p0, u64 p1,        \
				       bool first)
VTPU_CONVPOOL_LEVEL(scalar);
VTPU_CONVPOOL_LEVEL(avx2);
VTPU_CONVPOOL_LEVEL(avx512);

#endif /* VTPU_ENGINE_INTERNAL_H */
