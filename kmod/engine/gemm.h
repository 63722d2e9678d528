/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Between the GEMM driver (gemm.c) and its per-SIMD-level kernels
 * (gemm.c's portable one, gemm_avx2.c, gemm_avx512.c and the other
 * AVX-512 files that gemm_avx512.h names), which each level lists in its
 * struct vtpu_gemm_level.
 *
 * BLIS structure, for row-major C:
 *
 *   tile   (mt x nt of C, one worker; op->ntiles of them; a large
 *           GEMM's op tile sweeps a few of them, a column's, at each
 *           step: gemm.c's gemm_prepare_sweep())
 *    step  (one chunk of kc along K; op->nsteps of them, in order)
 *      pack B[kc x nt] into kc x NR micro-panels   (scratch, L2; the
 *                     memo below keeps it for the worker's next call
 *                     of that block; read in place if B is in panels)
 *      pack A[mt x kc] into MR x kc micro-panels   (scratch, L2)
 *      for each MR rows of the tile (A panel stays in L1):
 *        for each NR columns: microkernel  C[MR x NR] op= A_panel * B_panel
 *
 * The microkernel computes C := alpha*A*B + beta*C (never reading C when
 * beta == 0), then on the last step adds bias[n] and applies ReLU. Steps
 * after the first use beta = 1. Vectors run along N (C's rows are
 * contiguous); A is broadcast. Edge tiles are zero-padded in the packed
 * panels and the microkernel stores only mr x nr. (AVX-512's narrow
 * kernel, for n <= 16, turns this around: see gemm_narrow_avx512.c.)
 *
 * A and B may be bf16: the packs widen them to f32, exactly, so products
 * are exact and accumulate in f32, whatever the level.
 */
#ifndef VTPU_GEMM_H
#define VTPU_GEMM_H

#include "engine_internal.h"

/* Microtile shapes (rows MR x columns NR) of each level. */
#define VTPU_GEMM_SCALAR_MR 4
#define VTPU_GEMM_SCALAR_NR 8
#define VTPU_GEMM_AVX2_MR 6
#define VTPU_GEMM_AVX2_NR 16
#define VTPU_GEMM_AVX512_MR 14
#define VTPU_GEMM_AVX512_NR 32
/*
 * AVX-512's short microtile (gemm_avx512.c): a tile's last one of at most
 * this many rows, the in-place GEMM's tail, the Winograd weight gradient's
 */
#define VTPU_GEMM_AVX512_MR_SHORT 8
/* AVX-512 for n <= NARROW_NR: C's microtile computed transposed */
#define VTPU_GEMM_NARROW_MR 32
#define VTPU_GEMM_NARROW_NR 16

/*
 * AVX-512's direct CONV_WGRAD (gemm_wgrad_avx512.c): blocks of at most RMAX
 * rows of dw by one or two vectors of its columns (tiles of at most
 * WG_NT) in registers.
 */
#define VTPU_WG_RMAX 12
#define VTPU_WG_NT 32

/*
 * AVX-512's Winograd CONV, CONV_DGRAD and CONV_WGRAD
 * (gemm_winograd_avx512.c): input channels taken CMAX at a time, at most
 * CMAX_ALL in all; CONV's and CONV_DGRAD's tiles of at most NT columns,
 * and fewer for many channels, their filters' transforms (channels x
 * columns) at most U_FLOATS / 16 (vtpu_gemm_wino_nt()); CONV_WGRAD's of at
 * most CMAX channels by WG_NT columns.
 */
#define VTPU_WINO_CMAX 64
#define VTPU_WINO_CMAX_ALL 256
#define VTPU_WINO_NT 64
#define VTPU_WINO_WG_NT 128
/* Winograd tiles a block: V, M and Z are that many rows */
#define VTPU_WINO_TB (VTPU_GEMM_AVX512_MR * 4)
#define VTPU_WINO_U_FLOATS (16 * 8192)
/*
 * CONV and CONV_DGRAD over at most WINO4_CMAX input channels take F(4 x
 * 4, 3 x 3): 36 transforms of a tile, blocks of WINO4_TB tiles, U of
 * every channel by NT columns up to 64 channels, by 32 past them (U_FLOATS
 * at most). CONV_WGRAD's, on outputs of 16 x 16 at least, tiles of at most
 * CMAX channels by WG_NT columns. U, V and M end at WINO4_END.
 */
#define VTPU_WINO4_CMAX 128
#define VTPU_WINO4_TB (VTPU_GEMM_AVX512_MR * 2)
#define VTPU_WINO4_U_FLOATS (36 * VTPU_WINO_CMAX * VTPU_WINO_NT)
#define VTPU_WINO4_WG_NT 64
#define VTPU_WINO4_END                                                         \
	(VTPU_WINO4_U_FLOATS +                                                 \
	 36ull * VTPU_WINO4_TB * (VTPU_WINO_CMAX + VTPU_WINO_NT))

/*
 * The columns of a CONV's or CONV_DGRAD's tile over @c input channels in
 * F(@f x @f, 3 x 3), @f 2 or 4 (U's panels are the microkernel's 32
 * columns wide)
 */
static inline u32 vtpu_gemm_wino_nt(u32 c, u32 f)
{
	u32 nt = (f == 4 ? VTPU_WINO4_U_FLOATS / 36 : VTPU_WINO_U_FLOATS / 16) /
		 (c ? c : 1) / 32 * 32;

	return nt < VTPU_WINO_NT ? nt : VTPU_WINO_NT;
}

/* Largest of the above (scratch sizing). */
#define VTPU_GEMM_MR_MAX 32
#define VTPU_GEMM_NR_MAX 32

/*
 * Blocking: K per step, and the largest tile. NT_MAX is a multiple of
 * every NR; a tile is at most MT_MAX + MR - 1 rows (rounded up to MR).
 * KC * NT_MAX floats of packed B plus KC * (MT_MAX + MR_MAX) of packed A
 * make most of the scratch (~0.9 MiB). MT_MAX * NT_MAX * KC * 2 flops
 * bounds the work of one call (~100 MFLOP, about a millisecond with
 * AVX-512).
 */
#define VTPU_GEMM_KC 256
#define VTPU_GEMM_MT_MAX 384
#define VTPU_GEMM_NT_MAX 512
/*
 * The narrow kernel packs A a panel at a time (each is used once), so
 * only the work of a call bounds its tiles: 4096 * 16 * KC * 2 flops.
 */
#define VTPU_GEMM_NARROW_MT_MAX 4096

/*
 * The scratch, in floats: packed B (KC x NT_MAX; the narrow kernel keeps
 * its transposed microtile there too), packed A (KC x (MT_MAX + MR_MAX)
 * and slack for the vector packs' whole-vector stores), the gather area
 * where a convolution's implicit A is assembled a panel (MR_MAX x KC) or
 * a stored row (at most NARROW_MT_MAX) at a time, and the memo (struct
 * vtpu_gemm_memo) after them and after Winograd F(4 x 4)'s U, V and M,
 * which are more (~1.05 MiB in all).
 */
#define VTPU_GEMM_A_OFF ((u64)VTPU_GEMM_KC * VTPU_GEMM_NT_MAX)
#define VTPU_GEMM_GATHER_OFF                                                   \
	(VTPU_GEMM_A_OFF +                                                     \
	 (u64)VTPU_GEMM_KC * (VTPU_GEMM_MT_MAX + VTPU_GEMM_MR_MAX) + 16)
#define VTPU_GEMM_GATHER_FLOATS ((u64)VTPU_GEMM_MR_MAX * VTPU_GEMM_KC)
#define VTPU_GEMM_GATHER_END (VTPU_GEMM_GATHER_OFF + VTPU_GEMM_GATHER_FLOATS)
/* (after Winograd's U, V and M too, 64-byte aligned) */
#define VTPU_GEMM_MAX_CONST(a, b) ((a) > (b) ? (a) : (b))
#define VTPU_GEMM_MEMO_OFF                                                     \
	((VTPU_GEMM_MAX_CONST(VTPU_GEMM_GATHER_END, VTPU_WINO4_END) + 15) /    \
	 16 * 16)
#define VTPU_GEMM_MEMO_FLOATS 16
#define VTPU_GEMM_SCRATCH_FLOATS (VTPU_GEMM_MEMO_OFF + VTPU_GEMM_MEMO_FLOATS)

/**
 * struct vtpu_gemm_memo - which block of B a worker's scratch holds packed
 * @seq: the op's (struct vtpu_engine_op), or 0 for none
 * @b: the B it is of (a GEMM_BATCHED's products have one each)
 * @j0: its first column
 * @nt: its columns
 * @p0: its first k
 * @kc: its k
 *
 * The packed GEMM's tiles that share their columns share their block of
 * B: a weight gradient's (784 x 512 x 128) four tiles on two workers
 * each packed all of B, and a worker that takes a second tile packs it
 * again. The note lets the second tile skip that. It is written once the
 * pack is complete, and only the op that wrote it (by @seq, unique to
 * each prepared op) believes it: any other op, whatever it did to the
 * scratch, has another @seq. A large GEMM's tiles sweep row tiles
 * (gemm.c's gemm_prepare_sweep()): each step's block then serves the
 * sweep's next row tiles, the calls right after it.
 */
struct vtpu_gemm_memo {
	u64 seq;
	const void *b;
	u32 j0, nt, p0, kc;
};

_Static_assert(sizeof(struct vtpu_gemm_memo) <= VTPU_GEMM_MEMO_FLOATS * 4 &&
		       VTPU_GEMM_MEMO_OFF % 16 == 0,
	       "the memo fits its place, 64-byte aligned");

/**
 * struct vtpu_gemm_step - one (tile, step) of a GEMM, resolved
 * @g: the decoded command
 * @i0: first row of C in the tile (a direct CONV_WGRAD's: a block's; a
 *	scattered CONV_DGRAD's: its first image, @mt its images, and @p0,
 *	@kc count its pixels of dy;
 *	a Winograd CONV's or CONV_DGRAD's: its first Winograd tile, and @mt
 *	counts them; a Winograd CONV_WGRAD's: its first channel, and @p0,
 *	@kc count Winograd tiles)
 * @j0: first column
 * @mt: rows in the tile (the last tile may be short)
 * @nt: columns in the tile
 * @p0: first k of the step
 * @kc: k in the step (>= 1)
 * @beta: g->beta on step 0, 1 after
 * @last: non-zero on the last step (apply bias and ReLU)
 * @seq: the op's (struct vtpu_engine_op)
 */
struct vtpu_gemm_step {
	const struct vtpu_engine_gemm *g;
	u32 i0, j0, mt, nt;
	u32 p0, kc;
	float beta;
	u32 last;
	u64 seq;
};

/*
 * Where C's element (i, j) is, and how far apart C's rows are there: with
 * VTPU_GEMM_C_PANELS, within a panel. A microtile (NR of 8, 16 or 32
 * columns, from a multiple of NR) never crosses a panel's edge.
 */
static inline float *vtpu_gemm_c_at(const struct vtpu_engine_gemm *g, u32 i,
				    u32 j)
{
	if (g->flags & VTPU_GEMM_C_PANELS)
		return g->c + ((u64)(j / VTPU_GEMM_PANEL) * g->m + i) *
				      VTPU_GEMM_PANEL +
		       j % VTPU_GEMM_PANEL;
	return g->c + (u64)i * g->ldc + j;
}

static inline u64 vtpu_gemm_c_ld(const struct vtpu_engine_gemm *g)
{
	return (g->flags & VTPU_GEMM_C_PANELS) ? VTPU_GEMM_PANEL : g->ldc;
}

/**
 * struct vtpu_gemm_level - a SIMD level's GEMM kernels, for gemm.c to pick
 * @mr: rows of the packed GEMM's microtile
 * @nr: its columns
 * @mr_short: rows of the short last microtile (0: none)
 * @mt_max: rows of the largest tile
 * @step: the packed GEMM's step (each kernel runs one step of one tile;
 *	@scratch is vtpu_gemm_scratch_size())
 * @narrow: the level's kernels for n <= VTPU_GEMM_NARROW_NR, whose
 *	microtile is not @nr wide (NULL: these)
 * @tn: A^T B, f32, with few rows, both read where they are stored
 * @rows: CONV and CONV_DGRAD on A's rows as gathered, unpacked
 * @ain: a plain f32 GEMM reading A (stored m x k) where it is stored
 * @atb: a plain f32 A^T B reading A and B (both stored k x ..) in place
 * @wgrad: CONV_WGRAD, direct (struct vtpu_engine_gemm's wg_nb)
 * @wino: CONV and CONV_DGRAD, Winograd F(2 x 2, 3 x 3) or F(4 x 4, 3 x 3)
 * @wino_wgrad: CONV_WGRAD, Winograd
 * @dgrad: CONV_DGRAD with few channels, scattered from dy (struct
 *	vtpu_engine_gemm's dgs)
 * @small: GEMM_BATCHED's small products, read in place (struct
 *	vtpu_engine_gemm's small)
 *
 * The kernels from @tn on are NULL where the level has none: gemm.c then
 * runs the packed GEMM (@step) instead. Each level's file defines its
 * table.
 */
struct vtpu_gemm_level {
	u32 mr, nr;
	u32 mr_short;
	u32 mt_max;
	void (*step)(const struct vtpu_gemm_step *st, void *scratch);
	const struct vtpu_gemm_level *narrow;
	void (*tn)(const struct vtpu_gemm_step *st, void *scratch);
	void (*rows)(const struct vtpu_gemm_step *st, void *scratch);
	void (*ain)(const struct vtpu_gemm_step *st, void *scratch);
	void (*atb)(const struct vtpu_gemm_step *st, void *scratch);
	void (*wgrad)(const struct vtpu_gemm_step *st, void *scratch);
	void (*wino)(const struct vtpu_gemm_step *st, void *scratch);
	void (*wino_wgrad)(const struct vtpu_gemm_step *st, void *scratch);
	void (*dgrad)(const struct vtpu_gemm_step *st, void *scratch);
	void (*small)(const struct vtpu_gemm_step *st, void *scratch);
};

extern const struct vtpu_gemm_level vtpu_gemm_level_scalar;
extern const struct vtpu_gemm_level vtpu_gemm_level_avx2;
extern const struct vtpu_gemm_level vtpu_gemm_level_avx512;

/* The packed GEMM's step of each level (the template's GEMM_STEP_FN). */
void vtpu_gemm_step_scalar(const struct vtpu_gemm_step *st, void *scratch);
void vtpu_gemm_step_avx2(const struct vtpu_gemm_step *st, void *scratch);
void vtpu_gemm_step_avx512(const struct vtpu_gemm_step *st, void *scratch);

#endif /* VTPU_GEMM_H */
