// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * GEMM: C = act(alpha * op(A) * op(B) + beta * C + bias), BLIS-style.
 *
 * This file is the driver (tiling of C into independent tiles, K into
 * in-order steps, dispatch to a SIMD level) and the portable level, whose
 * microkernel is the reference the others must agree with. See gemm.h for
 * the loop structure and gemm_tmpl.h for packing.
 */
#include "gemm.h"

/* ---- the portable level --------------------------------------------------- */

#define GEMM_MR VTPU_GEMM_SCALAR_MR
#define GEMM_NR VTPU_GEMM_SCALAR_NR
#define GEMM_STEP_FN vtpu_gemm_step_scalar
#include "gemm_tmpl.h"

static void gemm_ukr(u32 kc, const float *a, const float *b, float *c,
		     u64 ldc, u32 mr, u32 nr, float alpha, float beta,
		     const float *bias, u32 relu)
{
	float t[GEMM_MR * GEMM_NR] = { 0 };
	u32 p, i, j;

	for (p = 0; p < kc; p++, a += GEMM_MR, b += GEMM_NR)
		for (i = 0; i < GEMM_MR; i++)
			for (j = 0; j < GEMM_NR; j++)
				t[i * GEMM_NR + j] += a[i] * b[j];
	gemm_store_edge(t, c, ldc, mr, nr, alpha, beta, bias, relu);
}

const struct vtpu_gemm_level vtpu_gemm_level_scalar = {
	.mr = VTPU_GEMM_SCALAR_MR,
	.nr = VTPU_GEMM_SCALAR_NR,
	.mt_max = VTPU_GEMM_MT_MAX,
	.step = vtpu_gemm_step_scalar,
};

/* ---- the driver ------------------------------------------------------------ */

static const struct vtpu_gemm_level *const gemm_levels[] = {
	[VTPU_SIMD_SCALAR] = &vtpu_gemm_level_scalar,
	[VTPU_SIMD_AVX2] = &vtpu_gemm_level_avx2,
	[VTPU_SIMD_AVX512] = &vtpu_gemm_level_avx512,
};

/* The kernels of level @simd. */
static const struct vtpu_gemm_level *gemm_simd(u32 simd)
{
	if (simd > VTPU_SIMD_AVX512)
		simd = VTPU_SIMD_SCALAR;
	return gemm_levels[simd];
}

/* The kernel for a GEMM with @n columns at level @simd. */
static const struct vtpu_gemm_level *gemm_level(u32 simd, u32 n)
{
	const struct vtpu_gemm_level *lv = gemm_simd(simd);

	/* the level's wide microtiles would be mostly padding */
	if (lv->narrow && n <= VTPU_GEMM_NARROW_NR)
		return lv->narrow;
	return lv;
}

static u32 round_up(u32 a, u32 b)
{
	return vtpu_div_up(a, b) * b;
}

/* Microtile rows computed for a tile of @rows rows at level @lv. */
static u32 gemm_rows_cost(const struct vtpu_gemm_level *lv, u32 rows)
{
	u32 rest = rows % lv->mr;

	if (!rest)
		return rows;
	return rows - rest + (rest <= lv->mr_short ? lv->mr_short : lv->mr);
}

/*
 * Rows per tile for @m rows in about @mtiles tiles: the even split
 * rounded up to the microtile, or, with a short microtile, the even
 * split itself when that computes fewer rows in all (128 rows in two
 * tiles: 64 = 4 * 14 + 8 each, 128 rows computed, not 70 + 70).
 */
static u32 gemm_tile_rows(const struct vtpu_gemm_level *lv, u32 m, u32 mtiles)
{
	u32 even = vtpu_div_up(m, mtiles), mt = round_up(even, lv->mr), t;
	u64 cost_even, cost_mt;

	if (!lv->mr_short)
		return mt;
	t = vtpu_div_up(m, even);
	cost_even = (u64)(t - 1) * gemm_rows_cost(lv, even) +
		    gemm_rows_cost(lv, m - (t - 1) * even);
	t = vtpu_div_up(m, mt);
	cost_mt = (u64)(t - 1) * gemm_rows_cost(lv, mt) +
		  gemm_rows_cost(lv, m - (t - 1) * mt);
	return cost_even < cost_mt ? even : mt;
}

/*
 * Tiles wanted per GEMM when the matrix is big enough. A plain GEMM (a
 * dense layer's) wants GEMM_TILES_PER_WORKER per worker: every tile packs
 * its own block of B and reads or packs its rows of A, so fewer, larger
 * tiles pack less, and two per worker still even out a worker that falls
 * behind (a training step ran faster so than on more tiles). A
 * convolution's GEMM wants GEMM_TILES_WANTED whatever the workers: its
 * tiles gather their own rows of A, and fewer of them ran slower. Smaller
 * tiles than the minimums below would spend too much on packing (B is
 * packed once per tile and step, A once per MR rows), and a tile of less
 * than FLOPS_MIN (~20 us) is not worth waking a worker for (OpenBLAS runs
 * such GEMMs on one thread too).
 */
#define GEMM_TILES_PER_WORKER 2
#define GEMM_TILES_WANTED 8
#define GEMM_MT_MIN 56
#define GEMM_NT_MIN 128
#define GEMM_TILE_FLOPS_MIN (2ull << 20)
/*
 * The packed GEMM's largest call (gemm.h): what the other kernels' tiles
 * must not exceed either, as one call is one kernel_fpu section in the
 * module (vtpu_engine.h).
 */
#define GEMM_CALL_FLOPS_MAX                                                    \
	(2ull * VTPU_GEMM_MT_MAX * VTPU_GEMM_NT_MAX * VTPU_GEMM_KC)

/* @tiles, or more: as many as @work (flops per step) needs under the max */
static u32 gemm_tiles_bounded(u64 work, u32 tiles)
{
	u64 need = (work + GEMM_CALL_FLOPS_MAX - 1) / GEMM_CALL_FLOPS_MAX;

	return need > tiles ? (u32)need : tiles;
}

/*
 * A^T B with at most 16 rows and more columns, f32, no epilogue: on
 * AVX-512, vtpu_gemm_step_avx512_tn() reads both operands in place, a
 * tile of up to TN_NT columns and all rows at a time.
 */
#define GEMM_TN_NT 32u

static bool gemm_is_tn(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return gemm_simd(op->simd)->tn && g->dtype == VTPU_DTYPE_F32 &&
	       g->flags == VTPU_GEMM_TRANS_A && g->k && !g->implicit &&
	       g->m <= VTPU_GEMM_NARROW_NR && g->n > VTPU_GEMM_NARROW_NR;
}

/*
 * CONV_WGRAD on AVX-512 runs direct (vtpu_gemm_step_avx512_wgrad()):
 * tiles of whole blocks of rows, each block within one tap row (kw * c
 * rows of dw), by up to VTPU_WG_NT columns. Every tile reads all of x and
 * dy, so there are fewer of them than of a packed GEMM: WG_TILES_WANTED,
 * if blocks of at least WG_ROWS_MIN rows allow.
 */
#define WG_TILES_WANTED 4
#define WG_ROWS_MIN 4
/*
 * With at most this many rows (a first layer's 3 x 3 x 3), a tile's FMAs
 * per pixel are too few to hide its loads of dy, which, as every tile
 * reads all of it, became the bound: then tiles split only the columns,
 * a vector of them each, and dy is read once in all.
 */
#define WG_FEW_ROWS 36

/*
 * A 1 x 1 window's rows (a strided shortcut's weight gradient, 32 x 64
 * x 16384) are channels of a pixel, not a first layer's taps: its blocks
 * of up to VTPU_WG_RMAX rows by VTPU_WG_NT columns do two FMAs per load
 * where a vector a tile does one, and ran 1.3-2.3x faster so on two
 * threads (1.7-1.9x on one). Not with fewer rows than a block (8 x 16 x
 * 16384 ran 2x slower as two tiles).
 */
static bool wgrad_few_rows(const struct vtpu_engine_gemm *g)
{
	return g->m <= WG_FEW_ROWS &&
	       (g->win.kh * g->win.kw > 1 || g->m < VTPU_WG_RMAX);
}

static bool gemm_is_wgrad(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return gemm_simd(op->simd)->wgrad && g->implicit &&
	       (g->flags & VTPU_GEMM_TRANS_A);
}

/*
 * A plain f32 GEMM with A stored m x k on AVX-512's 14 x 32 kernel reads
 * A where it is stored (vtpu_gemm_step_avx512_ain()): splitting M would
 * only pack B again, so tiles split N, down to AIN_NT_MIN columns.
 *
 * Not when A's rows are a multiple of 4 KiB apart (lda 1024, 2048, ...):
 * the microtile's 14 rows then fall in one set of the L1 cache (64 sets
 * of 64-byte lines; 8 or 12 ways), more lines than it has ways, and every
 * k step misses: a 1024 or 2048 square ran at 0.6x OpenBLAS, 1000 and
 * 1040 at 1.0x. Packing A (the general kernel) lays the rows out
 * contiguously; it costs one copy of A per column block.
 */
#define AIN_NT_MIN 64
#define WG_COLS_MIN 64
#define AIN_ALIAS_BYTES 4096u

/* Rows @ld floats apart that fall in one L1 set (see above) */
static bool gemm_ld_aliases(u32 ld)
{
	return ((u64)ld * sizeof(float)) % AIN_ALIAS_BYTES == 0;
}

static bool gemm_is_ain(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return gemm_simd(op->simd)->ain && g->dtype == VTPU_DTYPE_F32 &&
	       !g->implicit && !(g->flags & VTPU_GEMM_TRANS_A) &&
	       g->n > VTPU_GEMM_NARROW_NR && !gemm_ld_aliases(g->lda);
}

/*
 * A plain f32 A^T B, A stored k x m and B stored k x n, on AVX-512's 14 x
 * 32 kernel reads both where they are stored (vtpu_gemm_step_avx512_atb()):
 * weight gradients. Not when A's or B's rows are a multiple of 4 KiB
 * apart, as gemm_is_ain(): a microtile's k steps would then fall in one
 * set of the L1 cache. Few rows (gemm_is_tn()) and few columns (the
 * narrow kernel) have their own kernels.
 */
static bool gemm_is_atb(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	u32 plain = VTPU_GEMM_BIAS | VTPU_GEMM_RELU | VTPU_GEMM_C_PANELS;

	return gemm_simd(op->simd)->atb && g->dtype == VTPU_DTYPE_F32 &&
	       !g->implicit && !g->flip_oc &&
	       (g->flags & ~plain) == VTPU_GEMM_TRANS_A &&
	       g->n > VTPU_GEMM_NARROW_NR && !gemm_ld_aliases(g->lda) &&
	       !gemm_ld_aliases(g->ldb);
}

/*
 * A convolution with few output channels (n <= NARROW_NR: a LeNet's 6 and
 * 16) but at least ROWS_N_MIN of them runs on the rows kernel below with
 * one vector of columns, not on the narrow kernel: that one gathers A's
 * rows and then transposes them into panels, and the transpose cost as
 * much as the FMAs; here A's rows are broadcast where they are.
 */
#define ROWS_N_MIN 6

static bool gemm_is_rows_narrow(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return gemm_simd(op->simd)->rows && g->implicit && !g->wino &&
	       !(g->flags & VTPU_GEMM_TRANS_A) &&
	       g->n <= VTPU_GEMM_NARROW_NR && g->n >= ROWS_N_MIN;
}

/*
 * CONV and CONV_DGRAD on AVX-512's 14 x 32 kernel gather A's rows and
 * use them as they are (vtpu_gemm_step_avx512_rows()).
 */
static bool gemm_is_rows(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return (gemm_simd(op->simd)->rows && g->implicit &&
		!(g->flags & VTPU_GEMM_TRANS_A) &&
		g->n > VTPU_GEMM_NARROW_NR) || gemm_is_rows_narrow(op);
}

/* The kernel level @op runs on: gemm_level()'s, but for the above. */
static const struct vtpu_gemm_level *gemm_op_level(const struct vtpu_engine_op *op)
{
	if (gemm_is_rows_narrow(op))
		return gemm_simd(op->simd);
	return gemm_level(op->simd, op->gemm.n);
}

/*
 * CONV, CONV_DGRAD and CONV_WGRAD of a 3 x 3 window at stride 1 with 16
 * to VTPU_WINO_CMAX_ALL input channels, on AVX-512: Winograd F(2 x 2, 3 x
 * 3) or F(4 x 4, 3 x 3) (vtpu_gemm_step_avx512_wino(), _wino_wgrad(),
 * wino_f() below). A first layer's few channels would spend more on the
 * transforms than they save.
 */
#define WINO_CMIN 16

static bool gemm_is_wino(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	const struct vtpu_engine_window *w = &g->win;
	const struct vtpu_gemm_level *lv = gemm_simd(op->simd);

	/* the level's Winograd kernel for the product at all? */
	if ((g->flags & VTPU_GEMM_TRANS_A) ? !lv->wino_wgrad : !lv->wino)
		return false;
	return g->implicit && w->kh == 3 && w->kw == 3 && w->sh == 1 &&
	       w->sw == 1 && w->c >= WINO_CMIN && w->c <= VTPU_WINO_CMAX_ALL &&
	       ((g->flags & VTPU_GEMM_TRANS_A) || g->n > VTPU_GEMM_NARROW_NR);
}

/* Winograd tiles (@f x @f outputs each) of a convolution's output */
static u32 wino_tiles(const struct vtpu_engine_window *w, u32 f)
{
	return w->n * vtpu_div_up(w->oh, f) * vtpu_div_up(w->ow, f);
}

/*
 * CONV and CONV_DGRAD take F(4 x 4, 3 x 3) over at most VTPU_WINO4_CMAX
 * input channels where it multiplies at least a fifth less than F(2 x 2,
 * 3 x 3) (not on outputs of 6 x 6, say, whose 4 x 4 tiles are mostly past
 * the edge): 36 products for 16 outputs, against 16 for 4 and the direct
 * convolution's 144. Alone, on two threads, 1.13-1.37x faster than F(2 x
 * 2) on cifar10's layers (32 and 64 channels), 1.09-1.25x on 128.
 */
static bool wino4_saves(const struct vtpu_engine_window *w)
{
	return (u64)wino_tiles(w, 4) * 36 * 5 < (u64)wino_tiles(w, 2) * 16 * 4;
}

static u32 wino_f(const struct vtpu_engine_window *w)
{
	return w->c <= VTPU_WINO4_CMAX && wino4_saves(w) ? 4 : 2;
}

/*
 * CONV_WGRAD takes F(4 x 4) where it would multiply a fifth less, on
 * outputs of at least WINO4_WG_MIN x WINO4_WG_MIN. Its sum over the tiles
 * rounds more at the image's edges, where a tap has fewer terms than the
 * transforms sum: in a double model of F(4 x 4)'s order of sums, on 16
 * channels, the worst error of a tap was 5.8e-6 of its terms' magnitudes
 * on 4 x 4 outputs, 2.2e-6 on 8 x 8, 1.1e-6 on 16 x 16, 6.4e-7 on 32 x 32
 * (F(2 x 2): 1.1-6.8e-7; the tests' bar 1e-5). Alone, on two threads,
 * 1.33-1.58x faster than F(2 x 2) on cifar10's layers, 1.05-1.17x on 128
 * channels.
 */
#define WINO4_WG_MIN 16

static u32 wino_f_wgrad(const struct vtpu_engine_window *w)
{
	return w->oh >= WINO4_WG_MIN && w->ow >= WINO4_WG_MIN &&
		       wino4_saves(w) ? 4 : 2;
}

/*
 * CONV_WGRAD the Winograd way (vtpu_gemm_step_avx512_wino_wgrad()): tiles
 * of at most VTPU_WINO_CMAX channels by at most VTPU_WINO_WG_NT columns
 * (VTPU_WINO4_WG_NT in F(4 x 4)), each reading all pixels: a tile
 * transforms x (V) for its channels and dy (Z) for its columns. Those
 * passes over two tensors of the size of the layer, not the products,
 * bound it on a large batch: 64 x 32x32 x 64 channels into 128 took 33 ms
 * on one thread as one tile, 37 as two of 64 columns, 44 as four of 32,
 * 43 as two of 32 channels (the same passes over x: a tile touches a
 * pixel's lines whatever its share of them, and each reads dy again).
 * So: as few tiles as the channels and columns allow, then more, by
 * columns first (WG_NT_MIN a tile) and then by channels (WG_CT_MIN), up
 * to one a worker. The sums do not depend on the tiles: a step is a
 * block of Winograd tiles (VTPU_WINO_TB, or VTPU_WINO4_TB) times as many
 * blocks (WINO_KC_BLOCKS at most) as keep the largest tile the shape
 * allows under GEMM_CALL_FLOPS_MAX of the (f + 2)^2 products' flops.
 */
#define WINO_KC_BLOCKS 8
#define WG_NT_MIN 32
#define WG_CT_MIN 16

static void gemm_prepare_wino_wgrad(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 f = wino_f_wgrad(&g->win);
	u32 tb = f == 4 ? VTPU_WINO4_TB : VTPU_WINO_TB;
	u32 wg_nt = f == 4 ? VTPU_WINO4_WG_NT : VTPU_WINO_WG_NT;
	u32 c = g->win.c, n = g->n, wt = wino_tiles(&g->win, f);
	u32 splits = vtpu_div_up(c, VTPU_WINO_CMAX);
	u32 groups = vtpu_div_up(n, wg_nt), ct, blocks;
	u64 tile = (u64)gemm_min(c, VTPU_WINO_CMAX) * gemm_min(n, wg_nt);

	while ((u64)splits * groups < op->workers) {
		if (n / (groups + 1) >= WG_NT_MIN)
			groups++;
		else if (c / (splits + 1) >= WG_CT_MIN)
			splits++;
		else
			break;
	}
	/* whole 8-row microtiles of channels */
	ct = round_up(vtpu_div_up(c, splits), VTPU_GEMM_AVX512_MR_SHORT);
	blocks = (u32)(GEMM_CALL_FLOPS_MAX /
		       (2ull * (f + 2) * (f + 2) * tile * tb));
	blocks = blocks < 1 ? 1 : gemm_min(blocks, WINO_KC_BLOCKS);
	g->wino = wt;
	g->wino_f = f;
	g->kc = blocks * tb;
	g->mt = ct;
	g->nt = vtpu_div_up(n, groups);
	g->mtiles = vtpu_div_up(c, ct);
	g->ntiles_n = vtpu_div_up(n, g->nt);
	op->ntiles = g->mtiles * g->ntiles_n;
	op->nsteps = vtpu_div_up(wt, g->kc);
	op->flops = 2ull * g->m * g->n * g->k;
}

/*
 * CONV_DGRAD with at most NARROW_NR channels (x's) on AVX-512: scattered
 * from dy (vtpu_gemm_step_avx512_dgrad()) when the turned weights and a
 * pixel's sums fit the scratch's B area. Tiles of whole images, as many
 * as GEMM_TILES_WANTED if there are images enough, and more if their dx
 * (zeroed by the first step) would be over DGS_TILE_FLOATS; steps of at
 * most DGS_STEP_FLOPS of the tile's pixels of dy, in order.
 */
#define DGS_STEP_FLOPS (16ull << 20)
#define DGS_TILE_FLOATS (1ull << 20)

static bool gemm_is_dgrad_scatter(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	const struct vtpu_engine_window *w = &g->win;
	u64 kdp = vtpu_div_up(w->kh * w->kw * g->n, 16) * 16ull;

	if (!gemm_simd(op->simd)->dgrad || !g->implicit || !g->flip_oc ||
	    (g->flags & VTPU_GEMM_TRANS_A) || g->n > VTPU_GEMM_NARROW_NR)
		return false;
	/* dy's pixels (w->h x w->w) and x's image (w->oh x w->ow x n) */
	return ((u64)g->flip_oc + 1) * kdp <= VTPU_GEMM_A_OFF &&
	       (u64)w->n * w->h * w->w < (1ull << 31) &&
	       (u64)w->oh * w->ow * g->n <= DGS_TILE_FLOATS;
}

static void gemm_prepare_dgrad_scatter(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	const struct vtpu_engine_window *w = &g->win;
	u64 img = (u64)w->oh * w->ow * g->n, px = (u64)w->h * w->w;
	u64 per_px = 2ull * g->flip_oc * w->kh * w->kw * g->n, chunk;
	u32 tiles = gemm_min(w->n, GEMM_TILES_WANTED), mt;

	mt = vtpu_div_up(w->n, tiles);
	while (mt > 1 && mt * img > DGS_TILE_FLOATS)
		mt--;
	chunk = per_px ? DGS_STEP_FLOPS / per_px : px * mt;
	chunk = chunk ? chunk : 1;
	g->dgs = 1;
	g->mt = mt;
	g->mtiles = vtpu_div_up(w->n, mt);
	g->ntiles_n = 1;
	g->nt = g->n;
	g->kc = (u32)(chunk < px * mt ? chunk : px * mt);
	op->ntiles = g->mtiles;
	op->nsteps = (u32)vtpu_div_up(px * mt, g->kc);
	op->flops = 2ull * g->m * g->n * g->k;
}


/*
 * CONV and CONV_DGRAD: tiles of Winograd tiles by up to
 * vtpu_gemm_wino_nt() columns, K in one step. Each tile transforms its
 * columns' filters first, so it should be much more work than that, and
 * at most GEMM_CALL_FLOPS_MAX of what it multiplies: (f + 2)^2 products
 * for f^2 outputs where the direct convolution's nominal flops count 9
 * f^2. (Bounding the nominal flops made twice the tiles, each
 * transforming the filters again: on two threads, 8 x 32x32 x 128 into
 * 128 took 3.8 ms, 3.6 with half of them; its CONV_DGRAD 4.1 and 3.8.)
 */
static void gemm_prepare_wino(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 f = wino_f(&g->win), p = f + 2;
	u32 wt = wino_tiles(&g->win, f), nt = vtpu_gemm_wino_nt(g->win.c, f);
	u32 groups = vtpu_div_up(g->n, nt), mtiles, mt;
	u64 work = 2ull * g->m * gemm_min(g->n, nt) * g->k;

	mtiles = vtpu_div_up(GEMM_TILES_WANTED, groups);
	while (mtiles > 1 && work / mtiles < 8 * GEMM_TILE_FLOPS_MIN)
		mtiles--;
	mtiles = gemm_tiles_bounded(work * p * p / (9 * f * f), mtiles);
	mt = vtpu_div_up(wt, mtiles);
	g->wino = wt;
	g->wino_f = f;
	g->kc = g->k;
	g->mt = mt;
	g->nt = vtpu_div_up(g->n, groups);
	g->mtiles = vtpu_div_up(wt, mt);
	g->ntiles_n = groups;
	op->ntiles = g->mtiles * groups;
	op->nsteps = 1;
	op->flops = 2ull * g->m * g->n * g->k;
}

static void gemm_prepare_wgrad(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 run = g->win.kw * g->win.c, k = g->k ? g->k : 1;
	u32 nt = VTPU_WG_NT, nb = vtpu_div_up(run, VTPU_WG_RMAX);
	u32 groups, blocks, rtiles, nsteps;
	u64 work;

	if (wgrad_few_rows(g)) {
		/* few rows (a first layer's): read dy once, a vector a tile */
		nt = 16;
		groups = vtpu_div_up(g->n, nt);
		rtiles = 1;
	} else {
		groups = vtpu_div_up(g->n, nt);
		while ((u64)g->win.kh * nb * groups < WG_TILES_WANTED &&
		       run / (nb + 1) >= WG_ROWS_MIN)
			nb++;
		blocks = g->win.kh * nb;
		rtiles = gemm_min(vtpu_div_up(WG_TILES_WANTED, groups), blocks);
		work = 2ull * g->m * gemm_min(g->n, nt) * g->k;
		while (rtiles > 1 && work / rtiles < GEMM_TILE_FLOPS_MIN)
			rtiles--;
		/* a step of a tile at most GEMM_CALL_FLOPS_MAX */
		work = 2ull * g->m * gemm_min(g->n, nt) *
		       gemm_min(k, VTPU_GEMM_KC);
		rtiles = gemm_min(gemm_tiles_bounded(work, rtiles), blocks);
	}
	nsteps = vtpu_div_up(k, VTPU_GEMM_KC);
	g->wg_nb = nb;
	g->kc = vtpu_div_up(k, nsteps);
	g->mt = 0;	/* tiles differ: vtpu_gemm_run() */
	g->nt = nt;
	g->mtiles = rtiles;
	g->ntiles_n = groups;
	op->ntiles = rtiles * groups;
	op->nsteps = nsteps;
	op->flops = 2ull * g->m * g->n * g->k;
}

/* The first row of dw in block @b of a direct CONV_WGRAD. */
static u32 wgrad_row(const struct vtpu_engine_gemm *g, u32 b)
{
	u32 run = g->win.kw * g->win.c;

	return b / g->wg_nb * run + (u32)((u64)(b % g->wg_nb) * run / g->wg_nb);
}

/*
 * A product with a small C and a long K, a weight gradient over every
 * pixel of the batch (64 x 64 x 65536, A transposed), has a tile or two:
 * it ran on one worker, which packed all of A and B on its own while the
 * others waited (8 ms, where OpenBLAS's two threads took 4.6). Such a
 * product splits K into KSPLIT parts, each part's tiles over the same
 * grid: the first part sums into C, the others into the op's workspace
 * (C must fit it, m x n floats a part), and a second phase adds those to
 * C in part order. How many parts depends on the shape only (so do the
 * bits): as many as the workspace holds, at most KSPLIT_MAX, a power of
 * two (tiles that the workers share evenly), each of at least
 * KSPLIT_MIN_K. Not with an epilogue (bias, ReLU: after the whole sum),
 * nor a convolution's or a batch's product.
 */
#define KSPLIT_MIN_K (16u * VTPU_GEMM_KC)
#define KSPLIT_MAX 4u

static u32 gemm_ksplit_parts(const struct vtpu_engine_gemm *g)
{
	u64 mn = (u64)g->m * g->n, parts;

	if (g->implicit || g->batch || !mn || g->k < 2 * KSPLIT_MIN_K ||
	    (g->flags & (VTPU_GEMM_BIAS | VTPU_GEMM_RELU)))
		return 1;
	parts = 1 + VTPU_ENGINE_WORK_BYTES / sizeof(float) / mn;
	parts = vtpu_min_u64(parts, vtpu_min_u64(KSPLIT_MAX,
						 g->k / KSPLIT_MIN_K));
	if (parts < 2)
		return 1;
	return parts == 3 ? 2 : (u32)parts;
}

static void gemm_prepare_ksplit(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 parts = gemm_ksplit_parts(g);

	if (parts < 2)
		return;
	g->ksteps = vtpu_div_up(op->nsteps, (u32)parts);
	g->ksplit = vtpu_div_up(op->nsteps, g->ksteps);	/* none empty */
	g->kgrid = op->ntiles;
	op->nsteps = g->ksteps;
	op->nphases = 2;
	op->phase_end[0] = g->kgrid * g->ksplit;
	op->ntiles = op->phase_end[0] + 1;
	op->phase_end[1] = op->ntiles;
}

/*
 * A plain GEMM's tile packs its own block of B at each step, so each row
 * tile packed all of B again: 2048 x 2048 x 2048 on one worker, a grid
 * of 6 x 4 tiles, packed B six times (gemm_pack_b 3.6% of its time;
 * OpenBLAS's copies of A and B, 2.1% of its own). Where the grid has
 * more tiles than @wanted, a tile of the op sweeps up to SWEEP_MAX row
 * tiles of one column instead (g->sweep): for each step of K, each of
 * its row tiles in turn, so that the block of B the step packs serves
 * them all (the memo, gemm.h). Each element of C still gets the same
 * calls in the same order (the same bits), and a call's work is still
 * one tile's step. 2048 x 2048 x 2048 alone, against none: 1.03x on one
 * worker, 1.06x on two (1024: 1.00-1.02x). Longer sweeps read more of A
 * again from memory for each column: all six rows of tiles ran no
 * faster than none.
 */
#define SWEEP_MAX 3u

static void gemm_prepare_sweep(struct vtpu_engine_op *op, u32 wanted)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 sweep;

	if (g->ksplit || g->batch || g->implicit || gemm_is_atb(op) ||
	    gemm_is_ain(op) || gemm_op_level(op) != gemm_simd(op->simd))
		return;
	/*
	 * The longest sweep that keeps @wanted tiles, all of them the same
	 * work: 1024 x 1024 x 1024 on two workers, 3 x 2 tiles as sweeps of
	 * 2 and 1, ran 0.78x.
	 */
	for (sweep = gemm_min(SWEEP_MAX, g->mtiles); sweep > 1; sweep--)
		if (!(g->mtiles % sweep) &&
		    g->mtiles / sweep * g->ntiles_n >= wanted)
			break;
	if (sweep < 2)
		return;
	g->sweep = sweep;
	op->ntiles = g->mtiles / sweep * g->ntiles_n;
	op->nsteps *= sweep;
}

void vtpu_gemm_prepare(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	const struct vtpu_gemm_level *lv = gemm_op_level(op);
	u32 m = g->m, n = g->n, k = g->k ? g->k : 1;
	u32 mtiles, ntiles, mt, nt, nsteps, wanted = GEMM_TILES_WANTED;
	bool ain = gemm_is_ain(op);
	/*
	 * A weight gradient's product (A transposed) of too few rows to
	 * split and a long K (64 x 128 x 16384) ran on one worker: on
	 * several, its columns split down to WG_COLS_MIN, each tile packing
	 * all of A again (A is the narrower operand: 64 x 128 x 16384 on two
	 * workers 3.4-3.6 -> 1.8-2.4 ms; on one, one tile stays faster).
	 */
	bool wg_cols = (g->flags & VTPU_GEMM_TRANS_A) && op->workers > 1 &&
		       !g->implicit && k >= KSPLIT_MIN_K;

	if (gemm_is_wino(op)) {
		if (g->flags & VTPU_GEMM_TRANS_A)
			gemm_prepare_wino_wgrad(op);
		else
			gemm_prepare_wino(op);
		return;
	}
	if (gemm_is_wgrad(op)) {
		gemm_prepare_wgrad(op);
		return;
	}
	if (gemm_is_dgrad_scatter(op)) {
		gemm_prepare_dgrad_scatter(op);
		return;
	}
	if (gemm_is_tn(op)) {
		g->tn = 1;
		g->mt = m;
		g->nt = GEMM_TN_NT;
		g->mtiles = 1;
		g->ntiles_n = vtpu_div_up(n, GEMM_TN_NT);
		nsteps = vtpu_div_up(k, VTPU_GEMM_KC);
		g->kc = vtpu_div_up(k, nsteps);
		op->ntiles = g->ntiles_n;
		op->nsteps = nsteps;
		op->flops = 2ull * m * n * g->k;
		gemm_prepare_ksplit(op);
		return;
	}

	/* (workers capped so that the product cannot wrap) */
	if (!g->implicit)
		wanted = gemm_min(op->workers, 1u << 16) * GEMM_TILES_PER_WORKER;
	/*
	 * A long-K A^T B (wg_cols) waits on memory: every tile streams its
	 * rows of A and columns of B over the whole of K, so each tile more
	 * than the workers need streams an operand once more (the bits stay:
	 * an element's sum is one tile's). One tile a worker, counting the K
	 * parts (gemm_prepare_ksplit()): with the caches flushed, on two
	 * workers, 128 x 128 x 16384 3.66 -> 2.82 ms (a 2 x 2 grid -> 2 x 1),
	 * 512 x 512 x 4096 8.9 -> 7.2, 32 x 64 x 65536 2.6 -> 2.2 (1 x 2
	 * tiles by 2 K parts -> 1 x 1 by 2).
	 */
	if (wg_cols)
		wanted = vtpu_div_up(gemm_min(op->workers, 1u << 16),
				     gemm_ksplit_parts(g));

	/* Even split under the largest tile. */
	ntiles = vtpu_div_up(n, VTPU_GEMM_NT_MAX);
	mtiles = vtpu_div_up(m, lv->mt_max);

	/*
	 * Split further, while the tile stays above the minimum, along the
	 * dimension whose tile is larger relative to its minimum: a tall
	 * tile costs A packing per column panel, a wide one B packing per
	 * row panel. With A read in place, only the columns. Tiles are
	 * whole microtiles, so the tiles that mtiles and ntiles ask for are
	 * rounded (cm x cn, and fewer of them than asked, at times: 512
	 * columns asked of 5 tiles are 4 of 128): the loop looks at those.
	 */
	for (;;) {
		u32 cm = gemm_min(gemm_tile_rows(lv, m, mtiles), m);
		u32 cn = gemm_min(round_up(vtpu_div_up(n, ntiles), lv->nr), n);
		int big = 2ull * cm * cn * k >= 2 * GEMM_TILE_FLOPS_MIN;
		int can_m = big && cm >= 2 * GEMM_MT_MIN;
		/*
		 * With few rows, A is cheap to pack again: split the
		 * columns down to the microtile (a weight gradient, 9 x 64
		 * with K in the tens of thousands, would run on one worker).
		 */
		int can_n = big && (cn >= 2 * GEMM_NT_MIN ||
				    (cm <= GEMM_MT_MIN && cn >= 2 * lv->nr) ||
				    (ain && cn >= 2 * AIN_NT_MIN) ||
				    (wg_cols && !can_m &&
				     cn >= 2 * WG_COLS_MIN));

		if ((u64)vtpu_div_up(m, cm) * vtpu_div_up(n, cn) >= wanted)
			break;
		if (ain && can_n)
			ntiles++;
		else if (can_m &&
			 (!can_n || cm * GEMM_NT_MIN >= cn * GEMM_MT_MIN))
			mtiles++;
		else if (can_n)
			ntiles++;
		else
			break;
	}
	mt = gemm_tile_rows(lv, m, mtiles);
	nt = round_up(vtpu_div_up(n, ntiles), lv->nr);
	mtiles = vtpu_div_up(m, mt);
	ntiles = vtpu_div_up(n, nt);
	/*
	 * A dense layer's GEMM that stopped short of the tiles wanted, with
	 * more tiles than workers but not a multiple of them, takes as many
	 * tiles as workers, one round instead of two, while a tile stays
	 * within VTPU_GEMM_NT_MAX columns (the scratch's B block). 64 rows
	 * with A packed (cifar10's 64 x 512 x 4096, lda 4096) had stopped at
	 * 3 tiles of 192 columns for 2 workers: 1.27 -> 0.93 ms as 2 of 256.
	 * Not with K split (the parts make more tiles) nor for convolutions
	 * (GEMM_TILES_WANTED above).
	 */
	if (mtiles == 1 && ntiles < wanted && op->workers > 1 &&
	    ntiles > op->workers && ntiles % op->workers && !g->implicit &&
	    gemm_ksplit_parts(g) < 2) {
		u32 even = ntiles - ntiles % op->workers;
		u32 wide = round_up(vtpu_div_up(n, even), lv->nr);

		if (wide <= VTPU_GEMM_NT_MAX) {
			nt = wide;
			ntiles = vtpu_div_up(n, nt);
		}
	}

	/*
	 * mtiles * ntiles fits: C (m x n floats) lies in one buffer, and
	 * tiles are at least MR x NR (or the whole of m or n).
	 */
	nsteps = vtpu_div_up(k, VTPU_GEMM_KC);
	g->kc = vtpu_div_up(k, nsteps);
	g->mt = mt;
	g->nt = nt;
	g->mtiles = mtiles;
	g->ntiles_n = ntiles;
	op->ntiles = mtiles * ntiles;
	op->nsteps = nsteps;
	op->flops = 2ull * m * n * g->k;
	gemm_prepare_ksplit(op);
	gemm_prepare_sweep(op, wanted);
}

/*
 * GEMM_BATCHED's small products (attention's, per example): f32, one step
 * along K, no epilogue, A stored m x k, B stored either way, at most
 * SMALL_M rows and SMALL_N columns. The level's @small kernel reads them
 * in place, a product a tile, with the packed kernels' bits: only with
 * alpha 1 and beta 0 or 1 (attention's), where alpha * acc + beta * C is
 * acc or acc + C however the compiler contracts it (with others it
 * contracts the two kernels' epilogues differently).
 */
#define SMALL_M 16u
#define SMALL_N 256u

static bool gemm_is_small(const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	if (!gemm_simd(op->simd)->small || g->dtype != VTPU_DTYPE_F32 ||
	    g->implicit || !g->k || g->k > VTPU_GEMM_KC || g->alpha != 1.0f ||
	    (g->beta != 0.0f && g->beta != 1.0f))
		return false;
	return (!g->flags || g->flags == VTPU_GEMM_TRANS_B) &&
	       g->m <= SMALL_M && g->n <= SMALL_N;
}

/*
 * GEMM_BATCHED: a tile is one tile of a product's grid (op->gemm's, from
 * vtpu_gemm_prepare() with the workers a product gets) in a group of
 * products, as many as make about BATCH_CALL_WORK a call: each product
 * costs its tile's flops per step and BATCH_PRODUCT_COST for its packing
 * and calls. Large products are groups of one; small ones, even those
 * whose grid has a few tiles, are not a tile each.
 */
#define BATCH_CALL_WORK (4 * GEMM_TILE_FLOPS_MIN)
#define BATCH_PRODUCT_COST 4096u

void vtpu_gemm_prepare_batched(struct vtpu_engine_op *op)
{
	struct vtpu_engine_gemm *g = &op->gemm;
	u32 workers = op->workers, batch = g->batch, group = 1;
	u64 work, tiles;

	/* a product's share of the workers (the batch gives the others) */
	op->workers = batch >= workers ? 1 : vtpu_div_up(workers, batch);
	if (gemm_is_small(op)) {
		/* a product a tile, one step */
		g->small = 1;
		g->kc = g->k;
		g->mt = g->m;
		g->nt = g->n;
		g->mtiles = g->ntiles_n = 1;
		op->ntiles = 1;
		op->nsteps = 1;
		op->flops = 2ull * g->m * g->n * g->k;
	} else {
		vtpu_gemm_prepare(op);
	}
	op->workers = workers;
	/* a step of one product's tile, and what a call of it costs */
	work = 2ull * g->mt * g->nt * g->kc + BATCH_PRODUCT_COST;
	group = (u32)vtpu_min_u64(batch, vtpu_min_u64(BATCH_CALL_WORK / work,
						      VTPU_MAX_DIM));
	if (!group)
		group = 1;
	/* but a tile a worker, at least, if there are enough */
	tiles = vtpu_div_up(batch, vtpu_div_up(gemm_min(workers, 1u << 16),
					       op->ntiles));
	if (group > tiles)
		group = (u32)tiles;
	/* tiles <= batch * m * n < 2^32: the validator's bound */
	g->batch_tiles = op->ntiles;
	g->batch_group = group;
	op->ntiles = g->batch_tiles * vtpu_div_up(batch, group);
	op->flops *= batch;
}

/*
 * One tile of a GEMM; @g is op->gemm, or one of a batch's products, or
 * one part of a product split along K, whose @step counts the whole
 * product's steps (the part's first takes g->beta, the others 1). @tile
 * is a tile of the grid and @step a step of K (a sweep's op tiles and
 * steps resolved by gemm_run_sweep()).
 */
static void gemm_run_tile(const struct vtpu_engine_op *op,
			  const struct vtpu_engine_gemm *g, u32 tile,
			  u32 step, bool first, void *scratch)
{
	const struct vtpu_gemm_level *lv = gemm_simd(op->simd);
	u32 ti = tile / g->ntiles_n, tj = tile - ti * g->ntiles_n;
	u32 rows = g->m, k = g->k;
	struct vtpu_gemm_step st;

	/*
	 * Winograd counts f x f output tiles: CONV's and CONV_DGRAD's rows,
	 * CONV_WGRAD's K (its rows are then channels, tap by tap)
	 */
	if (g->wino && (g->flags & VTPU_GEMM_TRANS_A)) {
		rows = g->win.c;
		k = g->wino;
	} else if (g->wino) {
		rows = g->wino;
	} else if (g->dgs) {
		/* images, and the pixels of dy of a whole tile of them */
		rows = g->win.n;
		k = g->mt * g->win.h * g->win.w;
	}

	st.g = g;
	if (g->wg_nb) {
		/* whole blocks: a tile's share of them */
		u32 blocks = g->win.kh * g->wg_nb;

		st.i0 = wgrad_row(g, ti * blocks / g->mtiles);
		st.mt = wgrad_row(g, (ti + 1) * blocks / g->mtiles) - st.i0;
	} else {
		st.i0 = ti * g->mt;
		st.mt = gemm_min(g->mt, rows - st.i0);
	}
	st.j0 = tj * g->nt;
	st.nt = gemm_min(g->nt, g->n - st.j0);
	st.p0 = step * g->kc;
	st.kc = k ? gemm_min(g->kc, k - st.p0) : 0;
	st.beta = first ? g->beta : 1.0f;
	/* no epilogue if split */
	st.last = step == op->nsteps / (g->sweep ? g->sweep : 1) - 1;
	st.seq = op->seq;
	/* the kernel vtpu_gemm_prepare() tiled for, from the level's table */
	if (g->small)
		lv->small(&st, scratch);
	else if (g->dgs)
		lv->dgrad(&st, scratch);
	else if (g->wg_nb)
		lv->wgrad(&st, scratch);
	else if (g->wino && (g->flags & VTPU_GEMM_TRANS_A))
		lv->wino_wgrad(&st, scratch);
	else if (g->wino)
		lv->wino(&st, scratch);
	else if (gemm_is_rows(op))
		lv->rows(&st, scratch);
	else if (gemm_is_ain(op))
		lv->ain(&st, scratch);
	else if (g->tn)
		lv->tn(&st, scratch);
	else if (gemm_is_atb(op))
		lv->atb(&st, scratch);
	else
		gemm_op_level(op)->step(&st, scratch);
}

/*
 * A GEMM_BATCHED tile: a tile of one product, or a group of whole
 * products. Each product is op->gemm moved to its matrices: its tiling
 * and kernels are the GEMM's, so are its sums.
 */
static void gemm_run_batched(const struct vtpu_engine_op *op, u32 tile,
			     u32 step, void *scratch)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	u64 es = vtpu_dtype_size(g->dtype);
	u64 b = (u64)(tile / g->batch_tiles) * g->batch_group;
	u64 end = vtpu_min_u64(b + g->batch_group, g->batch);
	struct vtpu_engine_gemm one = *g;

	tile %= g->batch_tiles;
	for (; b < end; b++) {
		one.a = (const u8 *)g->a + b * g->stride_a * es;
		one.b = (const u8 *)g->b + b * g->stride_b * es;
		one.c = g->c + b * g->stride_c;
		gemm_run_tile(op, &one, tile, step, !step, scratch);
	}
}

/*
 * A tile of a product split along K (gemm_prepare_ksplit()): in the first
 * phase, a grid tile of one part, its steps those of the part's K, into C
 * or the part's block of the workspace ([m][n]); in the second, the one
 * tile that adds the parts to C in order.
 */
static void gemm_run_ksplit(const struct vtpu_engine_op *op, u32 tile,
			    u32 step, void *scratch)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	u32 part = tile / g->kgrid, i, j, q;
	u64 mn = (u64)g->m * g->n, p0;
	float *work = vtpu_op_work(op);
	struct vtpu_engine_gemm one = *g;

	if (part >= g->ksplit) {
		/* the second phase: C += the parts after the first */
		if (step)
			return;
		for (i = 0; i < g->m; i++)
			for (j = 0; j < g->n; j++) {
				float *c = vtpu_gemm_c_at(g, i, j);

				for (q = 1; q < g->ksplit; q++)
					*c += work[(q - 1) * mn +
						   (u64)i * g->n + j];
			}
		return;
	}
	step += part * g->ksteps;
	p0 = (u64)step * g->kc;
	if (p0 >= g->k)
		return;		/* the last part's spare steps */
	if (part) {
		one.c = work + (part - 1) * mn;
		one.ldc = g->n;
		one.flags &= ~VTPU_GEMM_C_PANELS;
		one.beta = 0.0f;
	}
	gemm_run_tile(op, &one, tile % g->kgrid, step,
		      step == part * g->ksteps, scratch);
}

/*
 * A tile that sweeps row tiles (gemm_prepare_sweep()): its step is a step
 * of K and one of its row tiles, the row tiles inner.
 */
static void gemm_run_sweep(const struct vtpu_engine_op *op, u32 tile,
			   u32 step, void *scratch)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	u32 ks = step / g->sweep, tj = tile % g->ntiles_n;
	u32 ti = tile / g->ntiles_n * g->sweep + step % g->sweep;

	gemm_run_tile(op, g, ti * g->ntiles_n + tj, ks, !ks, scratch);
}

void vtpu_gemm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	if (op->gemm.batch)
		gemm_run_batched(op, tile, step, scratch);
	else if (op->gemm.ksplit)
		gemm_run_ksplit(op, tile, step, scratch);
	else if (op->gemm.sweep)
		gemm_run_sweep(op, tile, step, scratch);
	else
		gemm_run_tile(op, &op->gemm, tile, step, !step, scratch);
}

size_t vtpu_gemm_scratch_size(void)
{
	return VTPU_GEMM_SCRATCH_FLOATS * sizeof(float);	/* see gemm.h */
}
