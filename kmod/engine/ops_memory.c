// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * FILL and COPY: memory ops, split into chunks so that large ones spread
 * over the workers and each call stays short.
 */
#include "engine_internal.h"

/* Elements (fill) or bytes (copy) per tile: ~64-256 KiB of stores. */
#define FILL_CHUNK (16u * 1024)
#define COPY_CHUNK (256u * 1024)

static u32 chunks(u64 n, u32 chunk)
{
	return (u32)((n + chunk - 1) / chunk);
}

void vtpu_fill_prepare(struct vtpu_engine_op *op,
		       const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_fill *f = (const void *)cmd;

	op->fill.dst = vtpu_operand_ptr(bufs, &f->dst);
	op->fill.value = vtpu_f32_from_bits(f->value);
	op->fill.count = f->count;
	op->ntiles = chunks(f->count, FILL_CHUNK);
}

void vtpu_fill_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
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

void vtpu_copy_prepare(struct vtpu_engine_op *op,
		       const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_copy *c = (const void *)cmd;

	op->copy.dst = vtpu_operand_ptr(bufs, &c->dst);
	op->copy.src = vtpu_operand_ptr(bufs, &c->src);
	op->copy.bytes = c->bytes;
	op->ntiles = chunks(c->bytes, COPY_CHUNK);
}

void vtpu_copy_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	u64 start = (u64)tile * COPY_CHUNK;
	u64 len = op->copy.bytes - start;

	if (len > COPY_CHUNK)
		len = COPY_CHUNK;
	memcpy(op->copy.dst + start, op->copy.src + start, len);
}
