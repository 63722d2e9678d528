// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Decode validated commands into struct vtpu_engine_op and run their
 * tiles. Op families with real arithmetic live in their own files (gemm.c);
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

void vtpu_engine_op_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs, u32 simd)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;
	const struct vtpu_cmd_fill *f = (const void *)cmd;
	const struct vtpu_cmd_copy *c = (const void *)cmd;

	memset(op, 0, sizeof(*op));
	op->opcode = cmd->opcode;
	op->simd = simd;
	op->ntiles = 1;
	op->nsteps = 1;

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

void vtpu_engine_op_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	switch (op->opcode) {
	case VTPU_OP_GEMM:
		vtpu_gemm_run(op, tile, step, scratch);
		break;
	case VTPU_OP_FILL:
		run_fill(op, tile);
		break;
	case VTPU_OP_COPY:
		run_copy(op, tile);
		break;
	default:
		break;
	}
}

size_t vtpu_engine_scratch_size(void)
{
	return vtpu_gemm_scratch_size();
}
