/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * CONV_POOL's kernels, compiled once per SIMD level: ops_convpool.c
 * (portable), ops_convpool_avx2.c and ops_convpool_avx512.c each define
 * CP_SFX (the level's name) and include this file, and the compiler
 * vectorises the loops over output channels at that level's width.
 *
 * Both kernels work on blocks of CP_OB output channels: the block's
 * accumulators stay in registers while the taps stream past. In every
 * level each output is summed in the same order, (ky, kx, ci) for the
 * convolution and pooled pixel by pooled pixel for the gradients, so the
 * levels differ only in FMA rounding, as GEMM's do.
 */
#if !defined(CP_SFX) || !defined(CP_VBYTES)
#error "define CP_SFX and CP_VBYTES before including this"
#endif

#include "engine_internal.h"

#define CP_CAT2(a, b) a##b
#define CP_CAT(a, b) CP_CAT2(a, b)
#define CP_FN(name) CP_CAT(name, CP_SFX)

/*
 * Output channels per block (one AVX-512 vector, four SSE ones), pooling
 * window positions computed together (their accumulators are
 * independent: the FMAs overlap), and patch taps gathered at a time.
 */
#define CP_OB 16u
#define CP_NP 4u
#define CP_KC 32u
/* Channel blocks whose running maxima are kept across position groups. */
#define CP_GB 2u
/*
 * Where the registers allow (AVX-512's 32), the forward fast path takes
 * CP_FB blocks of a pixel at once: 4 positions x 4 vectors of sums, each
 * tap's broadcast feeding four FMAs, sixteen independent chains. The same
 * sums in the same order.
 */
#if CP_VBYTES == 64
#define CP_FB 4u
#else
#define CP_FB 1u
#endif
/*
 * Pooled pixels ahead to prefetch: a block's slice of y and dy is one
 * cache line per pixel (its routes a quarter of one), a page apart every
 * few pixels, which the hardware prefetcher does not follow.
 */
#define CP_PF 8u
/*
 * Taps of dw whose rows (nv vectors each) the AVX-512 gradient keeps in
 * registers across a step's pixels: 9 x 2 sums beside the four positions'
 * routed gradients (4 x 2) and the products' temporaries, within the 32
 * (cp_wgrad_rows()).
 */
#define CP_RT 9u

/*
 * The fast paths' case (cp_fwd_fast(), cp_wgrad_fast()): one group of
 * window positions and one patch. The gradient's tiles then may split
 * the taps too (ops_convpool.c).
 */
static inline bool cp_wgrad_is_fast(const struct vtpu_engine_convpool *cp)
{
	return cp->pkh * cp->pkw <= CP_NP && cp->win.kdim <= CP_KC;
}

/*
 * The inner loops use GCC's vector extensions, CP_VBYTES wide (the
 * including file's level), so that a block's accumulators stay in
 * registers; everything else is plain C. sparse does not know vector
 * types: it checks the same code with one float per "vector".
 */
#ifdef __CHECKER__
#define CPV float
#define CPVI int
#define CPVB u8
#define CP_VW 1u
#else
#define CPV float __attribute__((vector_size(CP_VBYTES)))
#define CPVI int __attribute__((vector_size(CP_VBYTES)))	/* masks */
#define CPVB u8 __attribute__((vector_size(CP_VBYTES / 4)))	/* routes */
#define CP_VW (CP_VBYTES / 4u)
#endif
#define CP_NV (CP_OB / CP_VW)

#define cpv_load(p) VTPU_VEC_LOAD(CPV, p)
#define cpv_store(p, v) VTPU_VEC_STORE(p, (CPV)(v))

/* f in every lane (f - 0 is f exactly, even -0: a plain broadcast) */
static __always_inline CPV cpv_splat(float f)
{
	return f - (CPV){ 0 };
}

/*
 * CP_VW routes (u8) to and from int lanes. GCC 12 turns the widening
 * __builtin_convertvector() into byte-by-byte scalar code (a third of
 * CONV_POOL_WGRAD's time on AVX-512), so the AVX levels name the one
 * instruction, vpmovzxbd; the narrowing one is vpmovdb on AVX-512 as
 * it is written.
 */
#define CP_V16QI char __attribute__((vector_size(16)))

static __always_inline CPVI cpvi_load_u8(const u8 *p)
{
#if defined(__CHECKER__)
	CPVB b;

	memcpy(&b, p, sizeof(b));
	return b;
#elif CP_VBYTES == 64
	CP_V16QI b;

	memcpy(&b, p, sizeof(b));
	return __builtin_ia32_pmovzxbd512_mask(b, (CPVI){ 0 }, (u16)~0);
#elif CP_VBYTES == 32
	CP_V16QI b = { 0 };

	memcpy(&b, p, CP_VW);
	return __builtin_ia32_pmovzxbd256(b);
#else
	CPVB b;

	memcpy(&b, p, sizeof(b));
	return __builtin_convertvector(b, CPVI);
#endif
}

static __always_inline void cpvi_store_u8(u8 *p, CPVI v)
{
#ifdef __CHECKER__
	CPVB b = (u8)v;
#else
	CPVB b = __builtin_convertvector(v, CPVB);
#endif

	memcpy(p, &b, sizeof(b));
}

/* m ? a : b, lane by lane (m: all ones or all zeros per lane) */
static __always_inline CPV cpv_sel(CPVI m, CPV a, CPV b)
{
	return (CPV)(((CPVI)a & m) | ((CPVI)b & ~m));
}

static __always_inline CPVI cpvi_sel(CPVI m, CPVI a, CPVI b)
{
	return (a & m) | (b & ~m);
}

/* The MAXPOOL rule: take v over the best b if greater, or v is a NaN and b not. */
static __always_inline CPVI cpv_takes(CPV v, CPV b)
{
	return (v > b) | ((v != v) & (b == b));
}

#if CP_VBYTES == 64 && !defined(__CHECKER__)
/*
 * The MAXPOOL rule and the ReLU in AVX-512's mask compares (vcmpps
 * predicates as <immintrin.h>'s _CMP_*, the quiet ones), a quarter of
 * the vector extensions' instructions: their compares give all-ones
 * lanes, which GCC 12 turns back into masks and blends with three more
 * instructions each. A macro: the predicate must be an immediate at any
 * optimisation level.
 */
#define CP_CMP_ORD_Q 0x07	/* neither a NaN */
#define CP_CMP_LT_OQ 0x11	/* <, both ordered */
#define CP_CMP_NLE_UQ 0x16	/* not <=, or unordered */
#define CP_CMP_NGT_UQ 0x1a	/* not >, or unordered */

#define cp_cmp512(a, b, pred)                                                  \
	((u16)__builtin_ia32_cmpps512_mask((a), (b), (pred), (u16)~0, 4))

/* cpv_takes(): v > b, or v a NaN; never over a NaN b */
static __always_inline u16 cp_takes512(CPV v, CPV b)
{
	return __builtin_ia32_cmpps512_mask(v, b, CP_CMP_NLE_UQ,
					    cp_cmp512(b, b, CP_CMP_ORD_Q), 4);
}
#endif

/* *best, *idx = val, j where the MAXPOOL rule takes val */
static __always_inline void cp_take(CPV val, int j, CPV *best, CPVI *idx)
{
#if CP_VBYTES == 64 && !defined(__CHECKER__)
	u16 take = cp_takes512(val, *best);

	*best = __builtin_ia32_blendmps_512_mask(*best, val, take);
	*idx = __builtin_ia32_blendmd_512_mask(*idx, (CPVI){ 0 } + j, take);
#else
	CPVI take = cpv_takes(val, *best);

	*best = cpv_sel(take, val, *best);
	*idx = cpvi_sel(take, (CPVI){ 0 } + j, *idx);
#endif
}

/* The ReLU after the pool: not > 0 (NaN too) routes nothing, < 0 is 0. */
static __always_inline void cp_relu_route(CPV *best, CPVI *idx)
{
#if CP_VBYTES == 64 && !defined(__CHECKER__)
	*idx = __builtin_ia32_blendmd_512_mask(*idx,
		(CPVI){ 0 } + VTPU_CONV_NO_ROUTE,
		cp_cmp512(*best, cpv_splat(0.0f), CP_CMP_NGT_UQ));
	*best = __builtin_ia32_blendmps_512_mask(*best, cpv_splat(0.0f),
		cp_cmp512(*best, cpv_splat(0.0f), CP_CMP_LT_OQ));
#else
	*idx = cpvi_sel(*best > 0.0f, *idx, (CPVI){ 0 } + VTPU_CONV_NO_ROUTE);
	*best = cpv_sel(*best < 0.0f, cpv_splat(0.0f), *best);
#endif
}

/*
 * patch[0..kc) = taps [k0, k0 + kc) of conv pixel (n, oy, ox) in (ky,
 * kx, ci) order: x, or 0 where the window hangs over the image's edge.
 */
static __always_inline void cp_gather(const struct vtpu_engine_convpool *cp,
					     u64 n, u64 oy, u64 ox, u64 k0,
					     u32 kc, float *patch)
{
	const struct vtpu_engine_window *g = &cp->win;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0 = (s64)(ox * g->sw) - g->pw;
	u64 ci, t, kx, ky;
	u32 k, q, run;

	if (!k0 && kc == g->kdim && iy0 >= 0 && ix0 >= 0 &&
	    iy0 + g->kh <= g->h && ix0 + g->kw <= g->w) {
		/* the whole window is in the image: kh runs, a row apart */
		const float *src = cp->x + ((n * g->h + (u64)iy0) * g->w +
					    (u64)ix0) * g->c;

		run = g->kw * g->c;
		for (ky = 0; ky < g->kh; ky++, src += (u64)g->w * g->c,
		     patch += run)
			for (q = 0; q < run; q++)
				patch[q] = src[q];
		return;
	}
	ci = k0 % g->c;
	t = k0 / g->c;
	kx = t % g->kw;
	ky = t / g->kw;
	for (k = 0; k < kc; k++) {
		s64 iy = iy0 + (s64)ky, ix = ix0 + (s64)kx;

		patch[k] = iy < 0 || iy >= g->h || ix < 0 || ix >= g->w ? 0.0f :
			   cp->x[((n * g->h + (u64)iy) * g->w + (u64)ix) *
				 g->c + ci];
		if (++ci == g->c) {
			ci = 0;
			if (++kx == g->kw) {
				kx = 0;
				ky++;
			}
		}
	}
}

/*
 * Window positions q0.. (the last repeated) as rows and columns, and
 * where their windows start in x relative to the first position's.
 */
struct cp_qpos {
	u32 dy[CP_NP], dx[CP_NP];
	u64 delta[CP_NP];
};

static __always_inline void cp_qpos_init(const struct vtpu_engine_convpool *cp,
					 u32 q0, u32 np, struct cp_qpos *qp)
{
	u32 j, q;

	for (j = 0; j < CP_NP; j++) {
		q = q0 + (j < np ? j : np - 1);
		qp->dy[j] = q / cp->pkw;
		qp->dx[j] = q % cp->pkw;
		qp->delta[j] = ((u64)qp->dy[j] * cp->win.sh * cp->win.w +
				(u64)qp->dx[j] * cp->win.sw) * cp->win.c;
	}
}

/* The conv pixels of those positions in pooled pixel (py, px)'s window. */
static __always_inline void cp_positions(const struct vtpu_engine_convpool *cp,
					 u64 py, u64 px,
					 const struct cp_qpos *qp, u64 *oy,
					 u64 *ox)
{
	u32 j;

	for (j = 0; j < CP_NP; j++) {
		oy[j] = py * cp->psh + qp->dy[j];
		ox[j] = px * cp->psw + qp->dx[j];
	}
}

/*
 * acc[j][0..len) += patch[j][0..kc) * w rows: the conv of CP_NP pixels,
 * output channels of one block (w points at its first column).
 */
static __always_inline void cp_dot(float acc[CP_NP][CP_OB],
					  const float patch[CP_NP][CP_KC],
					  u32 kc, const float *w, u32 oc,
					  u32 len)
{
	u32 k, j, i;

	for (k = 0; k < kc; k++, w += oc)
		for (j = 0; j < CP_NP; j++)
			for (i = 0; i < len; i++)
				acc[j][i] += patch[j][k] * vtpu_ld_reg(&w[i]);
}

/*
 * acc[j * as + 0..nv) += position j's patch times the w rows, @nv vectors
 * (whole blocks) in registers: the patch is kh rows of run floats,
 * @stride apart (a window read in place, or a gathered patch: one row).
 */
static __always_inline void cp_dot_direct(CPV *acc, const u32 as,
					  const float *const *src, u32 kh,
					  u32 run, u64 stride, const float *w,
					  u32 oc, const u32 nv)
{
	u32 ky, q, j, v;

	for (ky = 0; ky < kh; ky++) {
		for (q = 0; q < run; q++, w += oc) {
			CPV wv[CP_FB * CP_NV];

#pragma GCC unroll 16
			for (v = 0; v < nv; v++)
				wv[v] = cpv_load(w + v * CP_VW);
#pragma GCC unroll 16
			for (j = 0; j < CP_NP; j++) {
				CPV pv = cpv_splat(src[j][ky * stride + q]);

#pragma GCC unroll 16
				for (v = 0; v < nv; v++)
					acc[j * as + v] += pv * wv[v];
			}
		}
	}
}

/*
 * One block of output channels [o0, o0 + len) for a group of window
 * positions: conv + bias into out. With kdim <= CP_KC the patches are
 * already in @patch; else they are gathered chunk by chunk. A whole block
 * sums in vector registers, a partial one in plain C, in the same order.
 */
static __always_inline void cp_conv(const struct vtpu_engine_convpool *cp,
				    u64 n, const u64 *oy, const u64 *ox,
				    float patch[CP_NP][CP_KC], u32 o0, u32 len,
				    float out[CP_NP][CP_OB])
{
	u64 kdim = cp->win.kdim, k0;
	CPV acc[CP_NP][CP_NV];
	const float *src[CP_NP];
	u32 j, i, v, kc;

	for (j = 0; j < CP_NP; j++)
		src[j] = patch[j];
	if (len == CP_OB)
		for (j = 0; j < CP_NP; j++)
			for (v = 0; v < CP_NV; v++)
				acc[j][v] = cpv_splat(0.0f);
	else
		for (j = 0; j < CP_NP; j++)
			for (i = 0; i < len; i++)
				out[j][i] = 0.0f;
	for (k0 = 0; k0 < kdim; k0 += kc) {
		kc = (u32)vtpu_min_u64(CP_KC, kdim - k0);
		if (kdim > CP_KC)
			for (j = 0; j < CP_NP; j++)
				cp_gather(cp, n, oy[j], ox[j], k0, kc,
					  patch[j]);
		if (len == CP_OB)
			cp_dot_direct(&acc[0][0], CP_NV, src, 1, kc, 0,
				      cp->w + k0 * cp->oc + o0, cp->oc, CP_NV);
		else
			cp_dot(out, (const float (*)[CP_KC])patch, kc,
			       cp->w + k0 * cp->oc + o0, cp->oc, len);
	}
	if (len == CP_OB)
		for (j = 0; j < CP_NP; j++)
			for (v = 0; v < CP_NV; v++)
				cpv_store(out[j] + v * CP_VW, acc[j][v]);
	for (j = 0; j < CP_NP; j++)
		for (i = 0; i < len; i++)
			out[j][i] += cp->bias[o0 + i];
}

/* best, at [0..len) = the running max over positions q0..q0 + np - 1 */
static __always_inline void cp_max(float acc[CP_NP][CP_OB], u32 q0, u32 np,
				   u32 len, float *best, u8 *at)
{
	u32 j, i;

	for (j = 0; j < np; j++) {
		u8 p = (u8)(q0 + j);

		if (!q0 && !j) {
			for (i = 0; i < len; i++) {
				best[i] = acc[0][i];
				at[i] = p;
			}
			continue;
		}
		for (i = 0; i < len; i++) {
			float v = acc[j][i], b = best[i];
			bool take = v > b || (v != v && b == b);

			best[i] = take ? v : b;
			at[i] = take ? p : at[i];
		}
	}
}

/*
 * y, index [0..len) of channels o0.. of one pooled pixel. With the ReLU,
 * an output that is not > 0 passes no gradient: its route is
 * VTPU_CONV_NO_ROUTE.
 */
static __always_inline void cp_store(const struct vtpu_engine_convpool *cp,
				     const float *best, const u8 *at, u32 len,
				     float *y, u8 *index)
{
	bool relu = cp->flags & VTPU_CONV_RELU;
	u32 i;

	for (i = 0; i < len; i++) {
		float v = best[i];

		y[i] = relu && v < 0.0f ? 0.0f : v;
		index[i] = relu && !(v > 0.0f) ? VTPU_CONV_NO_ROUTE : at[i];
	}
}

/*
 * Prefetch channels [o, o + len) of pooled pixel p + CP_PF (if it is
 * before @p1): their f32 values @f (y to write, or dy to read) and their
 * routes, a cache line of each at a time.
 */
static __always_inline void cp_prefetch(const struct vtpu_engine_convpool *cp,
					const float *f, const u8 *route, u64 p,
					u64 p1, u32 o, u32 len, bool write)
{
	u64 at = (p + CP_PF) * cp->oc + o;
	u32 i;

	if (p + CP_PF >= p1)
		return;
	for (i = 0; i < len; i += 16) {
		if (write)
			__builtin_prefetch(f + at + i, 1);
		else
			__builtin_prefetch(f + at + i);
	}
	for (i = 0; i < len; i += 64) {
		if (write)
			__builtin_prefetch(route + at + i, 1);
		else
			__builtin_prefetch(route + at + i);
	}
}

/* Where conv pixel (n, oy, ox)'s window starts, or NULL if it hangs over. */
static __always_inline const float *cp_window(const struct vtpu_engine_convpool *cp,
					      u64 n, u64 oy, u64 ox)
{
	const struct vtpu_engine_window *g = &cp->win;
	s64 iy0 = (s64)(oy * g->sh) - g->ph, ix0 = (s64)(ox * g->sw) - g->pw;

	if (iy0 < 0 || ix0 < 0 || iy0 + g->kh > g->h || ix0 + g->kw > g->w)
		return NULL;
	return cp->x + ((n * g->h + (u64)iy0) * g->w + (u64)ix0) * g->c;
}

/*
 * Where each position's patch is read for the fast paths: in place, rows
 * @stride apart, when every window lies in the image (always, without
 * padding), else gathered into @patch (rows run = kw * c apart). Sets
 * src[] and returns the row stride.
 */
static __always_inline u64 cp_sources(const struct vtpu_engine_convpool *cp,
				      u64 n, const u64 *oy, const u64 *ox,
				      float patch[CP_NP][CP_KC],
				      const float **src)
{
	const struct vtpu_engine_window *g = &cp->win;
	bool inside = true;
	u32 j;

	for (j = 0; j < CP_NP; j++) {
		if (!g->ph && !g->pw)
			src[j] = cp->x + ((n * g->h + oy[j] * g->sh) * g->w +
					  ox[j] * g->sw) * g->c;
		else
			src[j] = cp_window(cp, n, oy[j], ox[j]);
		inside = inside && src[j];
	}
	if (inside)
		return (u64)g->w * g->c;
	for (j = 0; j < CP_NP; j++) {
		cp_gather(cp, n, oy[j], ox[j], 0, (u32)g->kdim, patch[j]);
		src[j] = patch[j];
	}
	return (u64)g->kw * g->c;
}

/*
 * cp_sources() for pooled pixel (n, py, px) at window positions @qp.
 * Without padding every window lies in the image, at the first
 * position's plus the position's delta: no row and column per position.
 */
static __always_inline u64 cp_sources_at(const struct vtpu_engine_convpool *cp,
					 u64 n, u64 py, u64 px,
					 const struct cp_qpos *qp,
					 float patch[CP_NP][CP_KC],
					 const float **src)
{
	const struct vtpu_engine_window *g = &cp->win;
	u64 oy[CP_NP], ox[CP_NP];
	const float *x0;
	u32 j;

	if (!g->ph && !g->pw) {
		x0 = cp->x + ((n * g->h + py * cp->psh * g->sh) * g->w +
			      px * cp->psw * g->sw) * g->c;
		for (j = 0; j < CP_NP; j++)
			src[j] = x0 + qp->delta[j];
		return (u64)g->w * g->c;
	}
	cp_positions(cp, py, px, qp, oy, ox);
	return cp_sources(cp, n, oy, ox, patch, src);
}

/*
 * @nb blocks of CP_OB channels of one pooled pixel, in registers: the
 * conv of its window positions (patches at @src, rows @stride apart),
 * weights @w (kdim rows @ws apart) and @bias, pooled, into y and index
 * (nb * CP_OB each).
 */
static __always_inline void cp_fwd_block(const struct vtpu_engine_convpool *cp,
					 const float *const *src, u64 stride,
					 u32 run, u32 nq, const float *w,
					 u32 ws, const float *bias, float *y,
					 u8 *index, const u32 nb)
{
	CPV acc[CP_NP][CP_FB * CP_NV];
	u32 j, v;

#pragma GCC unroll 16
	for (j = 0; j < CP_NP; j++)
#pragma GCC unroll 16
		for (v = 0; v < nb * CP_NV; v++)
			acc[j][v] = cpv_splat(0.0f);
	cp_dot_direct(&acc[0][0], CP_FB * CP_NV, src, cp->win.kh, run, stride,
		      w, ws, nb * CP_NV);
#pragma GCC unroll 16
	for (v = 0; v < nb * CP_NV; v++) {
		CPV bv = cpv_load(bias + v * CP_VW);
		CPV best = acc[0][v] + bv;
		CPVI idx = (CPVI){ 0 };

#pragma GCC unroll 16
		for (j = 1; j < CP_NP; j++) {
			if (j >= nq)
				break;
			cp_take(acc[j][v] + bv, (int)j, &best, &idx);
		}
		if (cp->flags & VTPU_CONV_RELU)
			cp_relu_route(&best, &idx);
		cpv_store(y + v * CP_VW, best);
		cpvi_store_u8(index + v * CP_VW, idx);
	}
}

/*
 * The blocks in functions of their own: inlined into the pixel loop, the
 * epilogue's constants kept across the pixels pushed a sum and three
 * weight vectors of the tap loop onto the stack.
 */
static noinline void cp_fwd_block_wide(const struct vtpu_engine_convpool *cp,
				       const float *const *src, u64 stride,
				       u32 run, u32 nq, const float *w, u32 ws,
				       const float *bias, float *y, u8 *index)
{
	cp_fwd_block(cp, src, stride, run, nq, w, ws, bias, y, index, CP_FB);
}

static noinline void cp_fwd_block1(const struct vtpu_engine_convpool *cp,
				   const float *const *src, u64 stride,
				   u32 run, u32 nq, const float *w, u32 ws,
				   const float *bias, float *y, u8 *index)
{
	cp_fwd_block(cp, src, stride, run, nq, w, ws, bias, y, index, 1);
}

/*
 * The common case, all in registers: one group of window positions (nq
 * <= CP_NP) and one patch (kdim <= CP_KC), whole blocks of channels read
 * in place; a last partial block (oc not a multiple of CP_OB: a LeNet's 6)
 * runs as a whole one on its weights and bias copied into @pad, zeroes
 * beyond oc, its outputs stored from a buffer. Pooled pixels [p0, p1).
 * Whole blocks go @fb at a time while they last (see CP_FB).
 */
static __always_inline void cp_fwd_fast(const struct vtpu_engine_convpool *cp,
					u64 p0, u64 p1, float *pad,
					const u32 fb)
{
	u32 nq = cp->pkh * cp->pkw, run = cp->win.kw * cp->win.c, o, i;
	u32 full = cp->oc - cp->oc % CP_OB, len = cp->oc - full;
	u64 stride, off, p, px, py, n, r;
	float patch[CP_NP][CP_KC], *bpad = pad + cp->win.kdim * CP_OB;
	const float *src[CP_NP];
	struct cp_qpos qp;

	if (len) {
		for (r = 0; r < cp->win.kdim; r++)
			for (i = 0; i < CP_OB; i++)
				pad[r * CP_OB + i] = i < len ?
					cp->w[r * cp->oc + full + i] : 0.0f;
		for (i = 0; i < CP_OB; i++)
			bpad[i] = i < len ? cp->bias[full + i] : 0.0f;
	}
	cp_qpos_init(cp, 0, nq, &qp);
	vtpu_xy_of(p0, cp->pw, cp->ph, &px, &py, &n);
	for (p = p0; p < p1; p++, vtpu_next_xy(&px, &py, &n, cp->pw, cp->ph)) {
		off = p * cp->oc;
		cp_prefetch(cp, cp->y, cp->index, p, p1, 0, cp->oc, true);
		stride = cp_sources_at(cp, n, py, px, &qp, patch, src);
		for (o = 0; fb > 1 && o + fb * CP_OB <= full; o += fb * CP_OB)
			cp_fwd_block_wide(cp, src, stride, run, nq, cp->w + o,
					  cp->oc, cp->bias + o,
					  cp->y + off + o,
					  cp->index + off + o);
		/* the whole blocks left after the wide ones */
		for (; o < full; o += CP_OB)
			cp_fwd_block1(cp, src, stride, run, nq, cp->w + o,
				      cp->oc, cp->bias + o, cp->y + off + o,
				      cp->index + off + o);
		if (len) {
			float yb[CP_OB];
			u8 ib[CP_OB];

			cp_fwd_block(cp, src, stride, run, nq, pad, CP_OB,
				     bpad, yb, ib, 1);
			for (i = 0; i < len; i++) {
				cp->y[off + full + i] = yb[i];
				cp->index[off + full + i] = ib[i];
			}
		}
	}
}

/*
 * Instances with and without the wide blocks: in one function, the wide
 * blocks' registers made a LeNet's 6 filters (one partial block) 6%
 * slower.
 */
static noinline void cp_fwd_fast1(const struct vtpu_engine_convpool *cp,
				  u64 p0, u64 p1, float *pad)
{
	cp_fwd_fast(cp, p0, p1, pad, 1);
}

static noinline void cp_fwd_fast_wide(const struct vtpu_engine_convpool *cp,
				      u64 p0, u64 p1, float *pad)
{
	cp_fwd_fast(cp, p0, p1, pad, CP_FB);
}

void CP_FN(vtpu_convpool_fwd_)(const struct vtpu_engine_convpool *cp, u64 p0,
			       u64 p1, float *pad)
{
	u32 nq = cp->pkh * cp->pkw, q0, np, o, j;
	u64 px, py, n, p, off, oy[CP_NP], ox[CP_NP];
	float patch[CP_NP][CP_KC], acc[CP_NP][CP_OB];
	float best[CP_GB][CP_OB];
	u8 at[CP_GB][CP_OB];
	u32 nblk = (cp->oc + CP_OB - 1) / CP_OB, b0, b, len;
	struct cp_qpos qp;

	if (nq <= CP_NP && cp->win.kdim <= CP_KC) {
		if (CP_FB > 1 && cp->oc >= CP_FB * CP_OB)
			cp_fwd_fast_wide(cp, p0, p1, pad);
		else
			cp_fwd_fast1(cp, p0, p1, pad);
		return;
	}
	vtpu_xy_of(p0, cp->pw, cp->ph, &px, &py, &n);
	for (p = p0; p < p1; p++) {
		off = p * cp->oc;
		cp_prefetch(cp, cp->y, cp->index, p, p1, 0, cp->oc, true);
		for (b0 = 0; b0 < nblk; b0 += CP_GB) {
			for (q0 = 0; q0 < nq; q0 += CP_NP) {
				np = nq - q0 < CP_NP ? nq - q0 : CP_NP;
				cp_qpos_init(cp, q0, np, &qp);
				cp_positions(cp, py, px, &qp, oy, ox);
				if (cp->win.kdim <= CP_KC)
					for (j = 0; j < CP_NP; j++)
						cp_gather(cp, n, oy[j],
							ox[j], 0,
							(u32)cp->win.kdim,
							patch[j]);
				for (b = b0; b < nblk && b < b0 + CP_GB; b++) {
					o = b * CP_OB;
					len = cp->oc - o;
					if (len >= CP_OB) {
						cp_conv(cp, n, oy, ox,
							patch, o, CP_OB, acc);
						cp_max(acc, q0, np, CP_OB,
						       best[b - b0],
						       at[b - b0]);
					} else {
						cp_conv(cp, n, oy, ox,
							patch, o, len, acc);
						cp_max(acc, q0, np, len,
						       best[b - b0],
						       at[b - b0]);
					}
				}
			}
			for (b = b0; b < nblk && b < b0 + CP_GB; b++) {
				o = b * CP_OB;
				len = (u32)vtpu_min_u64(CP_OB, cp->oc - o);
				cp_store(cp, best[b - b0], at[b - b0],
						len, cp->y + off + o,
						cp->index + off + o);
			}
		}
		vtpu_next_xy(&px, &py, &n, cp->pw, cp->ph);
	}
}

/*
 * dw rows [k0, k0 + kc) (channels of one block) += patch^T * gj: for each
 * tap, the positions' products summed in order, then added. A whole
 * block in vector registers, a partial one in plain C, in the same order.
 */
static __always_inline void cp_wdot(float *dw, u32 oc,
				    const float patch[CP_NP][CP_KC], u32 kc,
				    const float gj[CP_NP][CP_OB], u32 len)
{
	u32 k, j, i, v;

	if (len == CP_OB) {
		CPV gv[CP_NP][CP_NV];

		for (j = 0; j < CP_NP; j++)
			for (v = 0; v < CP_NV; v++)
				gv[j][v] = cpv_load(gj[j] + v * CP_VW);
		for (k = 0; k < kc; k++, dw += oc) {
#pragma GCC unroll 16
			for (v = 0; v < CP_NV; v++) {
				CPV t = cpv_splat(patch[0][k]) * gv[0][v];

#pragma GCC unroll 16
				for (j = 1; j < CP_NP; j++)
					t += cpv_splat(patch[j][k]) * gv[j][v];
				cpv_store(dw + v * CP_VW,
					  cpv_load(dw + v * CP_VW) + t);
			}
		}
		return;
	}
	for (k = 0; k < kc; k++, dw += oc) {
		float t[CP_OB];

		for (i = 0; i < len; i++)
			t[i] = patch[0][k] * gj[0][i];
		for (j = 1; j < CP_NP; j++)
			for (i = 0; i < len; i++)
				t[i] += patch[j][k] * gj[j][i];
		for (i = 0; i < len; i++)
			dw[i] += t[i];
	}
}

/*
 * dw and db (channels o0.., one block) += the gradient of pooled pixel
 * (n, py, px): its g sent, window position by window position, to the
 * conv pixel its route names, times that pixel's patch.
 */
static __always_inline void cp_wgrad_px(const struct vtpu_engine_convpool *cp,
					       u64 n, u64 py, u64 px, u32 o0,
					       u32 len, float *db)
{
	u64 off = ((n * cp->ph + py) * cp->pw + px) * cp->oc + o0;
	u64 kdim = cp->win.kdim, k0, oy[CP_NP], ox[CP_NP];
	const float *dy = cp->dy + off;
	const u8 *index = cp->index + off;
	float gr[CP_OB], gj[CP_NP][CP_OB], patch[CP_NP][CP_KC];
	u32 nq = cp->pkh * cp->pkw, q0, np, j, i, kc;
	struct cp_qpos qp;

	/* a route that names no window position passes nothing */
	for (i = 0; i < len; i++)
		gr[i] = index[i] < nq ? dy[i] : 0.0f;
	for (i = 0; i < len; i++)
		db[i] += gr[i];
	for (q0 = 0; q0 < nq; q0 += CP_NP) {
		np = nq - q0 < CP_NP ? nq - q0 : CP_NP;
		cp_qpos_init(cp, q0, np, &qp);
		cp_positions(cp, py, px, &qp, oy, ox);
		for (j = 0; j < CP_NP; j++)
			for (i = 0; i < len; i++)
				gj[j][i] = j < np && index[i] == q0 + j ?
						   gr[i] : 0.0f;
		for (k0 = 0; k0 < kdim; k0 += kc) {
			kc = (u32)vtpu_min_u64(CP_KC, kdim - k0);
			for (j = 0; j < CP_NP; j++)
				cp_gather(cp, n, oy[j], ox[j], k0, kc,
						 patch[j]);
			cp_wdot(cp->dw + k0 * cp->oc + o0, cp->oc,
				       (const float (*)[CP_KC])patch, kc,
				       (const float (*)[CP_OB])gj, len);
		}
	}
}

/*
 * A pooled pixel's gradient @dy sent where its routes @index say, @nv
 * vectors of channels: gj[j] is dy where the route names window position
 * j, else 0; db (if @bias) sums the gradient that goes to any position.
 */
static __always_inline void cp_route(const float *dy, const u8 *index,
				     u32 nq, CPV *db, bool bias,
				     CPV (*gj)[2 * CP_NV], const u32 nv)
{
	u32 v, j;

#pragma GCC unroll 16
	for (v = 0; v < nv; v++) {
		CPVI idx = cpvi_load_u8(index + v * CP_VW);
		CPV gr = cpv_sel(idx < (int)nq, cpv_load(dy + v * CP_VW),
				 cpv_splat(0.0f));

		if (bias)
			db[v] += gr;
#pragma GCC unroll 16
		for (j = 0; j < CP_NP; j++)
			gj[j][v] = j < nq ? cpv_sel(idx == (int)j, gr,
						    cpv_splat(0.0f)) :
					    cpv_splat(0.0f);
	}
}

/*
 * One tap's term of dw, vector @v: the window positions' pixels @pv times
 * their routed gradients, summed in position order (only the routed one
 * is not 0). Both gradient loops take it, so their sums are the same.
 */
static __always_inline CPV cp_tap(const float *pv, CPV (*gj)[2 * CP_NV],
				  u32 v)
{
	CPV s = cpv_splat(pv[0]) * gj[0][v];
	u32 j;

#pragma GCC unroll 16
	for (j = 1; j < CP_NP; j++)
		s += cpv_splat(pv[j]) * gj[j][v];
	return s;
}

/*
 * cp_wgrad_fast()'s taps [k0, k0 + kt), kt <= CP_RT, on AVX-512: their
 * rows of dw (@dw, @dws apart, whole blocks) in registers from the first
 * pixel of [p0, p1) to the last, not loaded and stored for each pixel,
 * and the pixels' routed gradients summed into @db if @bias. The same
 * products and sums in the same order as cp_wgrad_fast()'s own loop, so
 * the same bits. The taps' loops run to CP_RT, the constant that keeps
 * the sums in registers.
 */
static __always_inline void cp_wgrad_rows(const struct vtpu_engine_convpool *cp,
					  u32 o0, u32 k0, u32 kt, u64 p0,
					  u64 p1, float *dw, u32 dws, CPV *db,
					  bool bias, const u32 nv)
{
	u32 nq = cp->pkh * cp->pkw, run = cp->win.kw * cp->win.c, t, j, v;
	u64 in = (u64)cp->win.w * cp->win.c, p, px, py, n;
	u64 off_in[CP_RT], off_g[CP_RT];
	/*
	 * Not zeroed first by the kernel's -ftrivial-auto-var-init=zero
	 * (CONFIG_INIT_STACK_ALL_ZERO): that keeps them in memory. Every
	 * element is written before it is read.
	 */
	CPV acc[CP_RT][2 * CP_NV] __uninitialized;
	CPV gj[CP_NP][2 * CP_NV] __uninitialized;
	float patch[CP_NP][CP_KC] __uninitialized;
	const float *src[CP_NP];
	struct cp_qpos qp;

	/* tap k0 + t: row ky of the window, column q of its run */
	for (t = 0; t < CP_RT; t++) {
		u32 k = k0 + (t < kt ? t : 0);

		off_in[t] = (u64)(k / run) * in + k % run;
		off_g[t] = (u64)(k / run) * run + k % run;
	}
#pragma GCC unroll 16
	for (t = 0; t < CP_RT; t++)
#pragma GCC unroll 16
		for (v = 0; v < nv; v++)
			acc[t][v] = t < kt ? cpv_load(dw + t * dws + v * CP_VW) :
					     cpv_splat(0.0f);
	cp_qpos_init(cp, 0, nq, &qp);
	vtpu_xy_of(p0, cp->pw, cp->ph, &px, &py, &n);
	for (p = p0; p < p1; p++, vtpu_next_xy(&px, &py, &n, cp->pw, cp->ph)) {
		const float *dy = cp->dy + p * cp->oc + o0;
		const u8 *index = cp->index + p * cp->oc + o0;
		const u64 *off;

		cp_prefetch(cp, cp->dy, cp->index, p, p1, o0, nv * CP_VW,
			    false);
		off = cp_sources_at(cp, n, py, px, &qp, patch, src) == in ?
			off_in : off_g;
		cp_route(dy, index, nq, db, bias, gj, nv);
		/* taps past kt repeat tap k0: summed, never stored */
#pragma GCC unroll 16
		for (t = 0; t < CP_RT; t++) {
			float pv[CP_NP];

#pragma GCC unroll 16
			for (j = 0; j < CP_NP; j++)
				pv[j] = src[j][off[t]];
#pragma GCC unroll 16
			for (v = 0; v < nv; v++)
				acc[t][v] += cp_tap(pv, gj, v);
		}
	}
#pragma GCC unroll 16
	for (t = 0; t < CP_RT; t++)
#pragma GCC unroll 16
		for (v = 0; v < nv; v++)
			if (t < kt)
				cpv_store(dw + t * dws + v * CP_VW, acc[t][v]);
}

/*
 * cp_wgrad() in the common case (see cp_fwd_fast()), in registers, for
 * @nv vectors of channels from o0 (one or two blocks) and the taps (rows
 * of dw) [k0, k1): each pixel's g routed by vector compares, the patches
 * read in place where the windows lie in the image. dw's rows are at @dw,
 * @dws apart; @len channels are real (fewer than @nv vectors' in a
 * partial block: its routes and gradients are read through @buf, CP_OB
 * floats and CP_OB routes, padded with routes that pass nothing). dbias
 * is summed, in registers, by the tile whose taps start at 0. The same sums in the same order as
 * the general path.
 */
static __always_inline void cp_wgrad_fast(const struct vtpu_engine_convpool *cp,
					  u32 o0, u32 len, u32 k0, u32 k1,
					  u64 p0, u64 p1, float *dw, u32 dws,
					  const u32 nv, const bool part,
					  float *buf)
{
	u32 nq = cp->pkh * cp->pkw, run = cp->win.kw * cp->win.c;
	u64 stride, p, px, py, n;
	float patch[CP_NP][CP_KC] __uninitialized, *dyb = buf;
	/* only a partial block has @buf: full ones pass NULL */
	u8 *ib = part ? (u8 *)(buf + CP_OB) : NULL;
	const float *src[CP_NP];
	/* written before read: not zeroed first (see cp_wgrad_rows()) */
	CPV db[2 * CP_NV] __uninitialized;
	CPV gj[CP_NP][2 * CP_NV] __uninitialized;
	struct cp_qpos qp;
	u32 j, v, ky, q, k, i;
	bool bias = !k0;
	float *d;

	cp_qpos_init(cp, 0, nq, &qp);
	if (part) {
		for (i = 0; i < CP_OB; i++) {
			dyb[i] = 0.0f;
			ib[i] = (u8)nq;	/* routes nowhere */
		}
	}
	for (v = 0; v < nv; v++) {
		float t[CP_VW];

		for (i = 0; i < CP_VW; i++)
			t[i] = bias && v * CP_VW + i < len ?
				cp->dbias[o0 + v * CP_VW + i] : 0.0f;
		db[v] = cpv_load(t);
	}
#if CP_VBYTES == 64
	if (!part) {
		/* whole blocks: CP_RT taps at a time, dw in registers */
		for (k = k0; k < k1; k += CP_RT) {
			u32 kt = k1 - k < CP_RT ? k1 - k : CP_RT;

			cp_wgrad_rows(cp, o0, k, kt, p0, p1,
				      dw + (u64)(k - k0) * dws, dws, db,
				      bias && k == k0, nv);
		}
		goto out;
	}
#endif
	vtpu_xy_of(p0, cp->pw, cp->ph, &px, &py, &n);
	for (p = p0; p < p1; p++, vtpu_next_xy(&px, &py, &n, cp->pw, cp->ph)) {
		const float *dy = cp->dy + p * cp->oc + o0;
		const u8 *index = cp->index + p * cp->oc + o0;

		cp_prefetch(cp, cp->dy, cp->index, p, p1, o0, len, false);
		stride = cp_sources_at(cp, n, py, px, &qp, patch, src);
		if (part) {
			for (i = 0; i < len; i++) {
				dyb[i] = dy[i];
				ib[i] = index[i];
			}
			dy = dyb;
			index = ib;
		}
		cp_route(dy, index, nq, db, true, gj, nv);
		/* taps [k0, k1): tap rows ky, a row's run of kw * c from q */
		d = dw;
		for (k = k0, ky = k0 / run, q = k0 % run; k < k1; ky++, q = 0) {
			const float *row[CP_NP];

#pragma GCC unroll 16
			for (j = 0; j < CP_NP; j++)
				row[j] = src[j] + ky * stride;
			for (; q < run && k < k1; q++, k++, d += dws) {
				float pv[CP_NP];

#pragma GCC unroll 16
				for (j = 0; j < CP_NP; j++)
					pv[j] = row[j][q];
#pragma GCC unroll 16
				for (v = 0; v < nv; v++)
					cpv_store(d + v * CP_VW,
						  cpv_load(d + v * CP_VW) +
						  cp_tap(pv, gj, v));
			}
		}
	}
#if CP_VBYTES == 64
out:
#endif
	if (!bias)
		return;
	for (v = 0; v < nv; v++) {
		float t[CP_VW];

		cpv_store(t, db[v]);
		for (i = 0; i < CP_VW && v * CP_VW + i < len; i++)
			cp->dbias[o0 + v * CP_VW + i] = t[i];
	}
}

static noinline void cp_wgrad_fast1(const struct vtpu_engine_convpool *cp,
				    u32 o0, u32 k0, u32 k1, u64 p0, u64 p1)
{
	cp_wgrad_fast(cp, o0, CP_OB, k0, k1, p0, p1,
		      cp->dw + (u64)k0 * cp->oc + o0, cp->oc, CP_NV, false, NULL);
}

static noinline void cp_wgrad_fast2(const struct vtpu_engine_convpool *cp,
				    u32 o0, u32 k0, u32 k1, u64 p0, u64 p1)
{
	cp_wgrad_fast(cp, o0, 2 * CP_OB, k0, k1, p0, p1,
		      cp->dw + (u64)k0 * cp->oc + o0, cp->oc, 2 * CP_NV,
		      false, NULL);
}

/*
 * A partial block of @len < CP_OB channels: its rows of dw summed in @pad
 * (whole vectors, CP_OB apart), copied in and out around the pixels; its
 * routes and gradients go through the pad's end.
 */
static noinline void cp_wgrad_part(const struct vtpu_engine_convpool *cp,
				   u32 o0, u32 len, u32 k0, u32 k1, u64 p0,
				   u64 p1, float *pad)
{
	u32 k, i;

	for (k = k0; k < k1; k++)
		for (i = 0; i < CP_OB; i++)
			pad[(k - k0) * CP_OB + i] = i < len ?
				cp->dw[(u64)k * cp->oc + o0 + i] : 0.0f;
	cp_wgrad_fast(cp, o0, len, k0, k1, p0, p1, pad, CP_OB, CP_NV, true,
		      pad + CP_KC * CP_OB);
	for (k = k0; k < k1; k++)
		for (i = 0; i < len; i++)
			cp->dw[(u64)k * cp->oc + o0 + i] =
				pad[(k - k0) * CP_OB + i];
}

static __always_inline void cp_wgrad(const struct vtpu_engine_convpool *cp,
				     u32 o0, u32 len, u64 p0, u64 p1)
{
	u64 p, px, py, n;
	float db[CP_OB];
	u32 i;

	for (i = 0; i < len; i++)
		db[i] = cp->dbias[o0 + i];
	vtpu_xy_of(p0, cp->pw, cp->ph, &px, &py, &n);
	for (p = p0; p < p1; p++) {
		cp_prefetch(cp, cp->dy, cp->index, p, p1, o0, len, false);
		cp_wgrad_px(cp, n, py, px, o0, len, db);
		vtpu_next_xy(&px, &py, &n, cp->pw, cp->ph);
	}
	for (i = 0; i < len; i++)
		cp->dbias[o0 + i] = db[i];
}

/*
 * Channels [o0, o0 + len) (a tile: one block, or two on AVX-512) and the
 * taps [k0, k1) (all of them but on the fast path) over pooled pixels
 * [p0, p1); the first step zeroes them first (dbias: the tile whose taps
 * start at 0). @pad: CP_KC * CP_OB floats of the worker's scratch.
 */
void CP_FN(vtpu_convpool_wgrad_)(const struct vtpu_engine_convpool *cp, u32 o0,
				 u32 len, u32 k0, u32 k1, u64 p0, u64 p1,
				 bool first, float *pad)
{
	u64 r;
	u32 i, o, blk;

	if (first) {
		for (r = k0; r < k1; r++)
			for (i = 0; i < len; i++)
				cp->dw[r * cp->oc + o0 + i] = 0.0f;
		for (i = 0; i < len && !k0; i++)
			cp->dbias[o0 + i] = 0.0f;
	}
	if (cp_wgrad_is_fast(cp)) {
		if (len == 2 * CP_OB) {
			cp_wgrad_fast2(cp, o0, k0, k1, p0, p1);
			return;
		}
		for (o = o0; o < o0 + len; o += blk) {
			blk = o0 + len - o < CP_OB ? o0 + len - o : CP_OB;
			if (blk == CP_OB)
				cp_wgrad_fast1(cp, o, k0, k1, p0, p1);
			else
				cp_wgrad_part(cp, o, blk, k0, k1, p0, p1,
					      pad);
		}
		return;
	}
	for (o = o0; o < o0 + len; o += blk) {
		blk = o0 + len - o < CP_OB ? o0 + len - o : CP_OB;
		if (blk == CP_OB)
			cp_wgrad(cp, o, CP_OB, p0, p1);
		else
			cp_wgrad(cp, o, blk, p0, p1);
	}
}
