/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The vtpu engine: validation and execution of the command set in
 * uapi/linux/vtpu.h. Freestanding C, compiled into vtpu.ko (run by the
 * in-kernel matrix workers) and into libvtpu (run by the cpu backend's
 * pthreads), so that one piece of code defines what the device computes.
 *
 * An executor uses it in three phases:
 *
 *   1. vtpu_engine_validate() walks the whole stream against the sizes of
 *      the buffers the job names. Nothing runs unless it returns 0; on
 *      -EINVAL it says which command, operand and why.
 *   2. For each command in order, vtpu_engine_op_prepare() decodes it and
 *      resolves its operands to pointers, and tells how the work splits:
 *      op->ntiles independent tiles (any order, any worker, in parallel),
 *      each of op->nsteps steps that must run in order on one worker.
 *      How many workers there are may change the tiles, never the
 *      results: every output element is computed the same way whichever
 *      tile holds it. An op may split its tiles into op->nphases phases
 *      (op->phase_end): a phase's tiles start only when every tile of the
 *      phases before it is done, so that they may read what those left
 *      in the op's workspace (op->work: sums over blocks of rows, which
 *      a later phase adds up in block order). Phases are numbered in
 *      tile order: an executor that runs the tiles one after the other,
 *      in order, keeps them without knowing.
 *   3. Workers call vtpu_engine_op_run(op, tile, step, scratch) for every
 *      (tile, step). One call is bounded work (about a millisecond on the
 *      host), so the kernel brackets each call with kernel_fpu_begin/end()
 *      and may check for cancellation or reschedule between calls. The
 *      next command starts only when every tile of this one is done, or
 *      runs beside it when it does not depend on it: executors prepare
 *      commands through vtpu_engine_group_add(), which gathers a run of
 *      independent commands whose tiles the workers share as one.
 *
 * vtpu_engine_op_run() never sleeps, allocates, or fails: everything that
 * can fail was checked by the validator. @scratch is a per-worker buffer
 * of vtpu_engine_scratch_size() bytes, 64-byte aligned, zeroed when it is
 * allocated and then left to the engine: a worker's tiles of one op may
 * use what its earlier tiles of that op left there, and a tile's steps
 * what its earlier steps left (a worker runs a tile's steps back to back).
 *
 * Floating point: every engine object but validate.c is compiled with SSE2
 * at least, the SIMD objects with AVX2+FMA or AVX-512F, so in the kernel
 * only validate.c's and iterate.c's functions (validate, validate_iters,
 * operand, spans, next, simd_name), vtpu_engine_scratch_size() and the
 * inline group helpers (group_tile, group_clear) may be called outside an
 * FPU section. The caller picks a level once (from what the CPU has) and
 * passes it to vtpu_engine_op_prepare().
 */
#ifndef VTPU_ENGINE_H
#define VTPU_ENGINE_H

#include "engine_env.h"
#include <linux/vtpu.h>

/**
 * struct vtpu_engine_buf - a buffer as the engine sees it
 * @base: kernel or user virtual address of byte 0
 * @size: bytes
 */
struct vtpu_engine_buf {
	void *base;
	u64 size;
};

/**
 * struct vtpu_engine_error - where validation failed
 * @cmd: index of the command in the stream
 * @offset: its byte offset
 * @operand: enum vtpu_operand_id
 * @reason: enum vtpu_error_reason
 */
struct vtpu_engine_error {
	u32 cmd;
	u32 offset;
	u32 operand;
	u32 reason;
};

/* Decoded struct vtpu_window, with the output size and the tiling. */
struct vtpu_engine_window {
	u32 n, h, w, c;
	u32 kh, kw, sh, sw, ph, pw;
	u32 oh, ow;		/* windows per column, per row */
	u64 kdim;		/* kh * kw * c: one row of im2col */
	u64 total;		/* elements the op writes */
	u64 chunk;		/* of them per tile */
	u64 span;		/* window positions (taps) each step takes */
};

/* Decoded GEMM: C = act(alpha * op(A) * op(B) + beta * C + bias) */
struct vtpu_engine_gemm {
	u32 m, n, k;
	u32 flags;		/* VTPU_GEMM_* */
	u32 lda, ldb, ldc;
	u32 dtype;
	float alpha, beta;
	const void *a, *b;	/* f32 or bf16 per dtype */
	float *c;
	const float *bias;	/* NULL without VTPU_GEMM_BIAS */
	u32 mtiles, ntiles_n;	/* tile grid */
	u32 kc;			/* k per step */
	u32 mt, nt;		/* tile size: rows, columns of C */
	u32 tn;			/* A^T B with few rows: the _tn kernel */
	u32 wg_nb;		/* direct CONV_WGRAD: blocks per tap row */
	u32 wino;		/* Winograd: its f x f output tiles, or 0 */
	u32 wino_f;		/* F(f x f, 3 x 3): 2 or 4 outputs a side */
	u32 dgs;		/* CONV_DGRAD scattered from dy (gemm.c) */
	u32 small;		/* GEMM_BATCHED's small products (gemm.c) */
	/*
	 * K split into @ksplit parts of @ksteps steps (0: not split), each
	 * over the grid's @kgrid tiles; parts after the first sum into the
	 * op's workspace, added to C in part order by a second phase.
	 */
	u32 ksplit, ksteps, kgrid;
	/*
	 * A tile of the op sweeps @sweep row tiles of one column of the
	 * grid (0: a tile is one of the grid's): its steps take each step
	 * of K in turn, and each row tile at that step (gemm.c).
	 */
	u32 sweep;
	/*
	 * CONV, CONV_DGRAD, CONV_WGRAD: with @implicit, A is the im2col
	 * matrix of the NHWC image at a over @win (as stored: m x k, or
	 * k x m with VTPU_GEMM_TRANS_A), gathered while packing, never
	 * stored. With @flip_oc, B is CONV_DGRAD's: the weights at b, [taps
	 * * n, flip_oc], turned: B[(t, o)][j] = W[(taps - 1 - t) * n + j][o].
	 */
	u32 implicit;
	u32 flip_oc;
	struct vtpu_engine_window win;
	/*
	 * GEMM_BATCHED: @batch products of the shape above, C_b at c +
	 * b * stride_c (elements; A's and B's likewise); a tile is one of
	 * a product's @batch_tiles (the grid above) in @batch_group
	 * products in turn. 0 for one GEMM.
	 */
	u32 batch;
	u32 batch_tiles;
	u32 batch_group;
	u64 stride_a, stride_b, stride_c;
};

/* IM2COL, COL2IM, MAXPOOL, MAXPOOL_GRAD */
struct vtpu_engine_conv {
	struct vtpu_engine_window win;
	float *image;		/* IM2COL, COL2IM: the NHWC image */
	float *cols;		/* IM2COL, COL2IM: the im2col matrix */
	float *x, *y;		/* MAXPOOL(_GRAD): x or dx, y or dy */
	u32 *index;		/* MAXPOOL(_GRAD) */
};

/* CONV_POOL, CONV_POOL_WGRAD */
struct vtpu_engine_convpool {
	struct vtpu_engine_window win;	/* the convolution over x */
	u32 oc, flags;
	u32 pkh, pkw, psh, psw;	/* the pooling window and its stride */
	u32 ph, pw;		/* pooled pixels per column, per row */
	u64 pixels;		/* n * ph * pw */
	u64 chunk;		/* pooled pixels per tile (CONV_POOL) or step */
	u32 tile_oc;		/* channels per CONV_POOL_WGRAD tile */
	u32 row_tiles;		/* CONV_POOL_WGRAD tiles per channel tile */
	const float *x, *w, *bias, *dy;
	float *y, *dw, *dbias;
	u8 *index;		/* routes: window positions */
};

/*
 * DWCONV, DWCONV_DGRAD, DWCONV_WGRAD: the forward and DGRAD tile their
 * output by flat element ranges of @chunk; WGRAD's tiles are blocks of
 * @block channels (every tap), its steps @wps windows each, in order.
 */
struct vtpu_engine_dwconv {
	struct vtpu_engine_window win;	/* oh, ow: the command's */
	u32 mult, flags;
	u64 cm;			/* c * mult: y's channels */
	u64 rows;		/* windows: n * oh * ow */
	u64 total, chunk;
	u64 per;		/* forward, DGRAD: an output pixel's elements */
	u32 block, nblocks;
	u32 groups;		/* WGRAD: groups of windows, grows each */
	u64 grows, wps;
	float *x, *w, *bias, *y;	/* or their gradients */
};

struct vtpu_engine_ew {
	u32 op;			/* enum vtpu_ew_op */
	float alpha, beta;
	u64 count;
	const float *x, *y;
	float *z;
};

struct vtpu_engine_dropout {
	u64 count;
	u32 threshold;		/* keep when hash >= threshold */
	u32 seed;
	float scale;		/* 1 / (1 - rate) */
	const float *x;
	float *z, *mask;
	const float *step;
};

/* IMAGE_AUGMENT: tiled by output elements, as an element-wise op */
struct vtpu_engine_augment {
	u32 n, h, w, c, oh, ow;
	u32 seed, flags;
	u64 count;		/* output elements */
	const float *x;
	float *y;
	const float *step;
};

struct vtpu_engine_reduce {
	u32 op;			/* enum vtpu_reduce_op */
	u32 m, n, ldx;
	float alpha, beta;
	const float *x;
	float *y;
	u32 tblock;		/* columns (COLS) or rows (ROWS) per tile */
	u32 sblock;		/* rows (COLS) or columns (ROWS) per step */
	u32 groups;		/* COLS: groups of rows (1: none) */
	u32 gsteps;		/* COLS in groups: steps of sblock rows each */
};

/* ARGMAX: a tile owns tblock rows, a step sblock columns of them */
struct vtpu_engine_argmax {
	u32 m, n, ldx;
	const float *x;
	u32 *y;
	u32 tblock;
	u32 sblock;
};

struct vtpu_engine_xent {
	u32 m, n, flags;
	float scale;
	const float *logits;
	const u32 *labels;
	float *dlogits, *probs, *loss;
	u32 *correct;
	u32 rows;		/* rows per chunk */
	u32 nchunks;		/* = nsteps */
	u32 ngrad;		/* tiles 1..ngrad write dlogits/probs */
	u32 ncount;		/* MEAN_VALID: a grad tile's counting steps */
};

/* SOFTMAX, SOFTMAX_GRAD */
struct vtpu_engine_softmax {
	u32 m, n, group, flags;
	bool grad;
	const float *x;		/* SOFTMAX: x; SOFTMAX_GRAD: dy */
	const float *y;		/* SOFTMAX_GRAD: the forward's y */
	float *out;		/* SOFTMAX: y; SOFTMAX_GRAD: dx */
	const u32 *lengths;	/* NULL without VTPU_SOFTMAX_LENGTHS */
	u32 rows;		/* rows per chunk */
	u32 nchunks;
	u32 ntiles;		/* tile t does chunks t, t + ntiles, ... */
};

/*
 * LSTM_CELL, LSTM_CELL_GRAD: the B * H cells, row by row, cut into tiles
 * of @chunk cells. Gate k of row b is at k * @gs + b * @rs of the 4-gate
 * operands; the others are [B][H].
 */
struct vtpu_engine_lstm {
	bool grad;
	u32 hidden;		/* H */
	u64 cells;		/* B * H */
	u64 chunk;		/* cells per tile */
	u64 rs, gs;		/* row and gate strides, elements */
	const float *gates;	/* forward: z; grad: act */
	const float *c_prev;
	const float *tc;	/* grad: the forward's tanh(c) */
	const float *dh;	/* grad */
	const float *dc_next;	/* grad */
	float *out4;		/* forward: act; grad: dgates */
	float *out_c;		/* forward: c; grad: dc_prev */
	float *out_tc;		/* forward: tanh(c) */
	float *out_h;		/* forward: h */
};

/*
 * ADDITIVE_SCORE: tiles take chunks of @per scores. _GRAD: tiles
 * [0, @tiles[0]) chunks of @rows[0] rows of dq, the next @tiles[1] chunks
 * of @rows[1] rows of dk, the last @tiles[2] blocks of 64 units of dv
 * (their steps walk the (b, i) rows, @rows[2] a step).
 */
struct vtpu_engine_additive {
	u32 batch, tq, tk, units;
	bool grad;
	const float *q, *k, *v;
	const float *ds;	/* _GRAD: ds */
	float *s;		/* ADDITIVE_SCORE: the scores */
	float *dq, *dk, *dv;
	void (*tanh)(const float *x, float *z, u64 n);
	u64 per;		/* ADDITIVE_SCORE: scores a chunk */
	u64 nchunks;
	u32 ntiles;
	u32 rows[3];
	u32 tiles[3];
	u64 chunks[3];
};

/*
 * BATCHNORM, BATCHNORM_GRAD: a tile owns @width channels of a group of
 * @grows rows, its steps walk them @rblock rows at a time (ops_batchnorm.c)
 */
struct vtpu_engine_bn {
	u32 rows, channels;
	bool grad, train;
	bool relu;		/* BATCHNORM: VTPU_BATCHNORM_RELU */
	float eps, momentum;
	const float *x;
	const float *dy;	/* BATCHNORM_GRAD */
	const float *gamma;
	const float *beta;	/* BATCHNORM */
	float *y;		/* BATCHNORM: y; BATCHNORM_GRAD: dx */
	float *stats;		/* [2][C]: mean, inv_std */
	float *mmean, *mvar;	/* BATCHNORM: the moving statistics */
	float *dgamma, *dbeta;	/* BATCHNORM_GRAD */
	u32 width;		/* channels per tile */
	u32 cblocks;		/* blocks of @width channels */
	u32 groups;		/* groups of rows */
	u32 grows;		/* rows per group (the last may have fewer) */
	u32 rblock;		/* rows per step */
	u32 nblocks;		/* row blocks of a group: steps per pass */
	u32 passes;		/* a tile's: 2 (sums, then y or dx), or 1 */
};

/* EMBEDDING, EMBEDDING_GRAD */
struct vtpu_engine_embedding {
	u32 n, vocab, dim, flags;
	const u32 *ids;
	float *table;		/* EMBEDDING reads it, the gradient writes it */
	float *y;		/* EMBEDDING writes it, the gradient reads it */
	u32 width;		/* EMBEDDING_GRAD: columns per tile */
	u32 rows;		/* EMBEDDING_GRAD: ids or table rows per step */
	u32 zsteps;		/* EMBEDDING_GRAD: steps that zero the table */
};

/* SGD, ADAM_STEP, ADAM */
struct vtpu_engine_optim {
	u64 count;
	float lr, momentum, weight_decay;
	float beta1, beta2, eps;
	u32 flags;
	float *param, *mom, *vel, *state;
	const float *grad;
};

/* CLIP_NORM */
struct vtpu_engine_clip {
	u64 count;
	float max_norm;
	const float *sumsq;
	float *x;
};

struct vtpu_engine_cast {
	u32 mode;		/* enum vtpu_cast_mode */
	float scale, shift;
	u64 count;
	const void *src;
	void *dst;
};

/* Phases one op may have, and the bytes of its workspace. */
#define VTPU_ENGINE_PHASES_MAX 2
#define VTPU_ENGINE_WORK_BYTES 16384

/**
 * struct vtpu_engine_op - one command, decoded and ready to run
 * @opcode: enum vtpu_opcode
 * @simd: enum vtpu_simd_level to run with
 * @ntiles: independent pieces of work (>= 1)
 * @nsteps: in-order steps per tile (>= 1)
 * @flops: floating-point operations the command performs (for statistics)
 * @seq: a number no other prepared op has had: what a worker left in its
 *	scratch for the op's next tile is known by it (gemm.h)
 * @nphases: 1, or up to VTPU_ENGINE_PHASES_MAX
 * @phase_end: phase p's tiles are phase_end[p - 1] (0 for p = 0) ..
 *	phase_end[p] - 1; phase_end[nphases - 1] = ntiles
 * @work: the op's workspace, shared by its tiles (each writes its own
 *	part): the tiles of a phase read what those of earlier phases wrote.
 *	Not zeroed: a phase writes what a later one reads.
 */
struct vtpu_engine_op {
	u32 opcode;
	u32 simd;
	u32 workers;
	u32 ntiles;
	u32 nsteps;
	u32 nphases;
	u32 phase_end[VTPU_ENGINE_PHASES_MAX];
	u64 flops;
	u64 seq;
	u64 chunk;	/* elements per tile of the element-wise ops */
	union {
		struct vtpu_engine_gemm gemm;
		struct {
			float *dst;
			float value;
			u64 count;
		} fill;
		struct {
			u8 *dst;
			const u8 *src;
			u64 bytes;
		} copy;
		struct vtpu_engine_conv conv;
		struct vtpu_engine_convpool convpool;
		struct vtpu_engine_ew ew;
		struct vtpu_engine_reduce reduce;
		struct vtpu_engine_argmax argmax;
		struct vtpu_engine_xent xent;
		struct vtpu_engine_softmax softmax;
		struct vtpu_engine_optim optim;
		struct vtpu_engine_clip clip;
		struct vtpu_engine_cast cast;
		struct vtpu_engine_dropout dropout;
		struct vtpu_engine_augment augment;
		struct vtpu_engine_embedding emb;
		struct vtpu_engine_bn bn;
		struct vtpu_engine_dwconv dw;
		struct vtpu_engine_additive add;
		struct vtpu_engine_lstm lstm;
	};
	u64 work[VTPU_ENGINE_WORK_BYTES / sizeof(u64)];
};

/*
 * The op table: one struct vtpu_engine_op_desc per opcode (cmd.c) says
 * everything the engine knows about it, and every part of the engine and
 * of libvtpu that handles commands looks it up there: the validator
 * (size, check), the executors (prepare, run), the dependency tracking
 * (operands: which it reads and which it writes), the names, the
 * profiler's descriptions and the explainer's limits. How to add an op:
 * docs/engine.md.
 */
struct vtpu_engine_check;

#define VTPU_ENGINE_SPANS_MAX 8	/* operands of one command, at most */

/**
 * struct vtpu_engine_opnd - one operand of a command
 * @id: enum vtpu_operand_id
 * @write: the command writes it (else only reads it)
 * @align: byte alignment its offset needs; 0 when the command's dtype or
 *	mode decides (the op's @extent says)
 * @offset: where its struct vtpu_operand is in the command
 */
struct vtpu_engine_opnd {
	u8 id;
	u8 write;
	u8 align;
	u16 offset;
};

/**
 * struct vtpu_engine_field - a scalar field of a command, and its range
 * @name: as the uAPI names it
 * @offset: where it is in the command
 * @bytes: 4 or 8
 * @min: least valid value
 * @max: largest valid value (alone: fields together have rules, @rules)
 */
struct vtpu_engine_field {
	const char *name;
	u16 offset;
	u16 bytes;
	u64 min, max;
};

#define VTPU_ENGINE_FIELDS_MAX 4

/**
 * struct vtpu_engine_op_desc - what the engine knows about one opcode
 * @name: "GEMM", "CONV_POOL", ...
 * @size: bytes a command has, header included
 * @flags: the flag bits it knows (the explainer's "known" mask)
 * @flags_at: where its u32 flags field is; 0 when it has none
 * @window: it has a struct vtpu_window right after its header
 * @noperands: entries of @operands
 * @operands: its operands
 * @fields: its scalar dimensions (count, m, n, ...) with their ranges
 * @rules: its shape rules beyond @fields and the window's, in a phrase
 * @extent: bytes operand @id spans from its offset, 0 when the command's
 *	geometry is invalid; sets *@align where the operand's entry says 0
 * @check: the validator's checks (validate.c): 0, or reject() the reason
 * @prepare: decode a validated command into @op (and its tiling)
 * @run: one step of one tile
 * @describe: the decoded op in a few words, for the profiler; NULL: its
 *	tile count
 *
 * @extent and @check are integer code, callable outside an FPU section;
 * @prepare, @run and @describe are not (the objects that hold them are
 * built with SIMD flags).
 */
struct vtpu_engine_op_desc {
	const char *name;
	u32 size;
	u32 flags;
	u16 flags_at;
	bool window;
	u8 noperands;
	struct vtpu_engine_opnd operands[VTPU_ENGINE_SPANS_MAX];
	struct vtpu_engine_field fields[VTPU_ENGINE_FIELDS_MAX];
	const char *rules;
	u64 (*extent)(const struct vtpu_cmd_hdr *cmd, u32 id, u32 *align);
	int (*check)(struct vtpu_engine_check *v,
		     const struct vtpu_cmd_hdr *cmd);
	void (*prepare)(struct vtpu_engine_op *op,
			const struct vtpu_cmd_hdr *cmd,
			const struct vtpu_engine_buf *bufs);
	void (*run)(const struct vtpu_engine_op *op, u32 tile, u32 step,
		    void *scratch);
	int (*describe)(const struct vtpu_engine_op *op, char *buf,
			size_t len);
};

/**
 * vtpu_engine_op_desc() - the table entry of @opcode
 * @opcode: enum vtpu_opcode
 *
 * Return: the entry, or NULL for an opcode the engine does not know.
 */
const struct vtpu_engine_op_desc *vtpu_engine_op_desc(u32 opcode);

/**
 * vtpu_engine_window_fields() - a struct vtpu_window's fields and ranges
 * @count: out, how many
 *
 * What an op with @window has besides its own @fields; the window's rules
 * are in the op's @rules.
 * Return: the fields, offsets from the start of the struct vtpu_window.
 */
const struct vtpu_engine_field *vtpu_engine_window_fields(u32 *count);

/**
 * vtpu_engine_field_value() - the value of a field
 * @cmd: the command (or the struct vtpu_window) that holds it
 * @f: the field, from the op's @fields or vtpu_engine_window_fields()
 *
 * Return: its value, whether it has 4 or 8 bytes.
 */
u64 vtpu_engine_field_value(const void *cmd, const struct vtpu_engine_field *f);

/**
 * vtpu_engine_op_name() - "GEMM", "FILL", ...
 * @opcode: enum vtpu_opcode
 *
 * Return: a static string, "?" for an unknown opcode.
 */
const char *vtpu_engine_op_name(u32 opcode);

/**
 * vtpu_engine_validate() - check a whole command stream before it runs
 * @cmds: the stream (8-byte aligned)
 * @size: its size in bytes
 * @buf_sizes: size in bytes of each buffer the job names
 * @nbufs: number of buffers
 * @err: filled in on failure
 *
 * Every field of every command is checked, overflow-safe: opcode, size,
 * flags, pads, shapes, strides, dtype, buffer index, offset + extent.
 *
 * Return: 0 if every command is valid, -EINVAL otherwise.
 */
int vtpu_engine_validate(const void *cmds, u32 size, const u64 *buf_sizes,
			 u32 nbufs, struct vtpu_engine_error *err);

/* Most iterations one repeated job may run (VTPU_PARAM_MAX_REPEAT). */
#define VTPU_ENGINE_MAX_REPEAT (1u << 20)

/**
 * vtpu_engine_validate_iters() - vtpu_engine_validate() for a repeated job
 * @cmds, @size, @nbufs, @err: as vtpu_engine_validate()
 * @sizes: buffer sizes; overwritten with what the last iteration sees
 * @strides: bytes per iteration for each buffer (multiples of 4), or NULL
 * @first: the number of the first iteration
 * @repeat: iterations (0 counts as 1)
 *
 * Iteration i (first .. first + repeat - 1) sees buffer j shifted by
 * i * strides[j]. A stride that is not a multiple of 4 or walks off its
 * buffer fails with err->reason VTPU_ERR_BAD_STRIDE_REPEAT and err->cmd
 * set to the buffer's index.
 *
 * Return: 0 if every iteration is valid, -EINVAL otherwise.
 */
int vtpu_engine_validate_iters(const void *cmds, u32 size, u64 *sizes,
			       u32 nbufs, const u64 *strides, u32 first,
			       u32 repeat, struct vtpu_engine_error *err);

/**
 * vtpu_engine_operand() - the bytes an operand of a command spans
 * @cmd: a command whose opcode and size are valid
 * @id: enum vtpu_operand_id
 * @opnd: out, the operand (buffer index and offset)
 * @bytes: out, its extent from the offset, computed as the validator does
 *
 * Lets user space explain a rejected command with the validator's numbers.
 * Return: 0, or -ENOENT if the command has no such operand.
 */
int vtpu_engine_operand(const struct vtpu_cmd_hdr *cmd, u32 id,
			const struct vtpu_operand **opnd, u64 *bytes);

/**
 * vtpu_engine_operand_name() - "A", "bias", "dx", ...
 * @id: enum vtpu_operand_id
 *
 * Return: a static string, "?" for an unknown id.
 */
const char *vtpu_engine_operand_name(u32 id);

/**
 * vtpu_engine_operand_align() - the alignment an operand's offset needs
 * @cmd: a command whose opcode and size are valid
 * @id: enum vtpu_operand_id
 *
 * Return: bytes (1, 2 or 4), or 0 if the command has no such operand.
 */
u32 vtpu_engine_operand_align(const struct vtpu_cmd_hdr *cmd, u32 id);

/**
 * vtpu_engine_cmd_size() - the size a command of @opcode must have
 * @opcode: enum vtpu_opcode
 *
 * Return: bytes, header included, or 0 for an unknown opcode.
 */
u32 vtpu_engine_cmd_size(u32 opcode);

/**
 * vtpu_engine_next() - step through a validated stream
 * @cmds: the stream
 * @size: its size
 * @pos: in/out byte position; start at 0
 *
 * Return: the command at *pos (advancing *pos past it), or NULL at the end.
 */
const struct vtpu_cmd_hdr *vtpu_engine_next(const void *cmds, u32 size,
					    u32 *pos);

/**
 * vtpu_engine_op_prepare() - decode one validated command
 * @op: filled in
 * @cmd: the command (from vtpu_engine_next() on a validated stream)
 * @bufs: the job's buffers, in handle-array order
 * @simd: enum vtpu_simd_level to use (must be one the CPU has)
 * @workers: how many workers will share the op's tiles (0 counts as 1).
 *	Plain GEMMs size their tiles by it; the results do not depend on it.
 */
void vtpu_engine_op_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs, u32 simd,
			    u32 workers);

/**
 * vtpu_engine_op_run() - run one step of one tile
 * @op: from vtpu_engine_op_prepare()
 * @tile: 0..op->ntiles-1
 * @step: 0..op->nsteps-1; steps of a tile run in order on one worker,
 *	one after the other (no other call in between on that worker), so
 *	a tile may carry state from one step to the next in @scratch
 *	(SOFTMAX_XENT's MEAN_VALID count does)
 * @scratch: the worker's scratch, vtpu_engine_scratch_size() bytes
 */
void vtpu_engine_op_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch);

/*
 * Commands that do not depend on each other run together. A command that
 * reads nothing an earlier command of its group writes, and writes
 * nothing such a command reads or writes, gives the same results whether
 * it runs after them or beside them. An executor collects a run of such
 * commands (vtpu_engine_group_add()) and shares out all their tiles at
 * once, waiting once at the end of the group where it would wait after
 * each command: the workers that finish one command's tiles go on to the
 * next command's instead of idling (a dense layer's weight gradient, its
 * bias gradient and the gradient of its input all read dz and write three
 * different tensors). Each op keeps its own tiles and steps; the group
 * numbers the tiles op after op, in command order. Ops with phases run
 * them together: the executor runs the group once per phase
 * (vtpu_engine_group_phase()), each time the tiles of that phase of
 * every op that has it, and waits between phases.
 */
#define VTPU_ENGINE_GROUP_MAX 4

/**
 * struct vtpu_engine_span - the bytes one operand of a command covers
 * @lo: first byte
 * @hi: one past the last
 * @write: the command writes them (else it only reads them)
 */
struct vtpu_engine_span {
	const u8 *lo;
	const u8 *hi;
	bool write;
};

/**
 * vtpu_engine_spans() - what a validated command reads and writes
 * @cmd: the command
 * @bufs: the job's buffers (the spans are addresses, so that two handles
 *	of one buffer are one memory)
 * @spans: out, VTPU_ENGINE_SPANS_MAX of them at most
 *
 * Return: how many operands the command has (more than
 * VTPU_ENGINE_SPANS_MAX: only that many were filled in).
 */
u32 vtpu_engine_spans(const struct vtpu_cmd_hdr *cmd,
		      const struct vtpu_engine_buf *bufs,
		      struct vtpu_engine_span *spans);

/**
 * struct vtpu_engine_group - independent ops that run as one
 * @nops: ops in the group, op[0..nops-1]; op[nops] is the candidate
 * @ntiles: all their tiles (vtpu_engine_group_tile() maps one to its op);
 *	after vtpu_engine_group_phase(), those of the phase
 * @flops: all their flops
 * @nphases: the most phases one of the ops has
 * @phase: the phase vtpu_engine_group_phase() chose (0 at first)
 * @first: op i's tiles are the group's first[i]..first[i + 1] - 1
 * @nspans: operands of each op
 * @spans: what each op reads and writes
 * @op: the ops
 */
struct vtpu_engine_group {
	u32 nops;
	u32 ntiles;
	u64 flops;
	u32 nphases;
	u32 phase;
	u32 first[VTPU_ENGINE_GROUP_MAX + 1];
	u32 nspans[VTPU_ENGINE_GROUP_MAX + 1];
	struct vtpu_engine_span spans[VTPU_ENGINE_GROUP_MAX + 1]
				     [VTPU_ENGINE_SPANS_MAX];
	struct vtpu_engine_op op[VTPU_ENGINE_GROUP_MAX + 1];
};

/**
 * vtpu_engine_group_clear() - empty a group (a zeroed one is empty too)
 * @grp: the group
 */
static inline void vtpu_engine_group_clear(struct vtpu_engine_group *grp)
{
	grp->nops = 0;
	grp->ntiles = 0;
	grp->flops = 0;
	grp->nphases = 0;
	grp->phase = 0;
}

/**
 * vtpu_engine_group_add() - prepare the next command, and join it to the
 *	group if it can run beside the group's ops
 * @grp: the group (zeroed, or after vtpu_engine_group_restart())
 * @cmd, @bufs, @simd, @workers: as for vtpu_engine_op_prepare()
 * @max_ops: the most ops a group may hold (1: every command alone)
 *
 * Return: true if the command joined. False if the group must run first:
 * run its nops ops, then vtpu_engine_group_restart() makes the command,
 * prepared as the candidate, the first op of the next group.
 */
bool vtpu_engine_group_add(struct vtpu_engine_group *grp,
			   const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs, u32 simd,
			   u32 workers, u32 max_ops);

/**
 * vtpu_engine_group_restart() - after the group ran, make its candidate
 *	the only op of a new group
 * @grp: a group whose vtpu_engine_group_add() returned false
 *
 * It copies an op: in the kernel, call it in an FPU section, as
 * vtpu_engine_group_add().
 */
void vtpu_engine_group_restart(struct vtpu_engine_group *grp);

/**
 * vtpu_engine_group_tile() - which op a tile of the group belongs to
 * @grp: the group
 * @t: 0..grp->ntiles - 1
 * @tile: out, the tile's number within its op
 *
 * Return: the op, for vtpu_engine_op_run(op, *tile, step, scratch).
 */
static inline const struct vtpu_engine_op *
vtpu_engine_group_tile(const struct vtpu_engine_group *grp, u32 t, u32 *tile)
{
	u32 i = 0;

	while (i + 1 < grp->nops && t >= grp->first[i + 1])
		i++;
	*tile = t - grp->first[i];
	if (grp->phase)
		*tile += grp->op[i].phase_end[grp->phase - 1];
	return &grp->op[i];
}

/**
 * vtpu_engine_group_phase() - make the group's tiles those of one phase
 * @grp: a group whose ops are all added (and none since)
 * @p: 0..grp->nphases - 1
 *
 * The executor runs the group's phases in order, all of phase p's tiles
 * (grp->ntiles, numbered as before, op after op: an op without phase p
 * has none) before any of phase p + 1. Integer code: callable outside an
 * FPU section.
 */
static inline void vtpu_engine_group_phase(struct vtpu_engine_group *grp,
					   u32 p)
{
	const struct vtpu_engine_op *op;
	u32 i, lo;

	grp->phase = p;
	grp->ntiles = 0;
	for (i = 0; i < grp->nops; i++) {
		op = &grp->op[i];
		grp->first[i] = grp->ntiles;
		if (p >= op->nphases)
			continue;
		lo = p ? op->phase_end[p - 1] : 0;
		grp->ntiles += op->phase_end[p] - lo;
	}
	grp->first[grp->nops] = grp->ntiles;
}

/*
 * The engine computes with denormal numbers flushed to zero, as TPUs and
 * most accelerators do: MXCSR's FTZ (a denormal result is 0) and DAZ (a
 * denormal operand reads as 0). On x86 every operation that meets a
 * denormal takes a microcode assist, about a hundred cycles: Adam's
 * moments of a unit whose gradient stays 0 decay into denormals within
 * a thousand steps, and ADAM on such a state crawls. Every
 * executor brackets its engine calls with these (in the kernel: inside
 * kernel_fpu_begin()/end()), so that all of them compute the same bits.
 */
#define VTPU_ENGINE_MXCSR_FTZ_DAZ 0x8040u

/**
 * vtpu_engine_fp_enter() - flush denormals in this thread's FP control
 *
 * Return: the previous MXCSR, for vtpu_engine_fp_leave().
 */
static inline u32 vtpu_engine_fp_enter(void)
{
#if defined(__x86_64__) || defined(__i386__)
	u32 old, mode;

	asm volatile("stmxcsr %0" : "=m"(old));
	mode = old | VTPU_ENGINE_MXCSR_FTZ_DAZ;
	asm volatile("ldmxcsr %0" : : "m"(mode));
	return old;
#else
	return 0;
#endif
}

/**
 * vtpu_engine_fp_leave() - restore the control word fp_enter() returned
 * @saved: its return value
 */
static inline void vtpu_engine_fp_leave(u32 saved)
{
#if defined(__x86_64__) || defined(__i386__)
	asm volatile("ldmxcsr %0" : : "m"(saved));
#else
	(void)saved;
#endif
}

/**
 * vtpu_engine_scratch_size() - per-worker scratch the engine needs
 *
 * Return: bytes (a constant; allocate once per worker).
 */
size_t vtpu_engine_scratch_size(void);

/**
 * vtpu_engine_simd_name() - "scalar", "avx2" or "avx512"
 * @simd: enum vtpu_simd_level
 *
 * Return: a static string ("?" for an unknown level).
 */
const char *vtpu_engine_simd_name(u32 simd);

#endif /* VTPU_ENGINE_H */
