// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The command-stream validator: the device's only line of defence against
 * user space. Everything here is integer code, built without floating
 * point in the kernel, so it may run outside kernel_fpu_begin()/end().
 *
 * Overflow: dimensions are at most VTPU_MAX_DIM (2^24) and leading
 * dimensions at most 2^32, so an operand's extent ((rows - 1) * ld + cols)
 * * esize stays below 2^59; offsets are compared as "offset <= size &&
 * extent <= size - offset", never added.
 */
#include "vtpu_engine.h"

static const u32 cmd_sizes[VTPU_OP_COUNT] = {
	[VTPU_OP_NOP] = sizeof(struct vtpu_cmd_hdr),
	[VTPU_OP_GEMM] = sizeof(struct vtpu_cmd_gemm),
	[VTPU_OP_FILL] = sizeof(struct vtpu_cmd_fill),
	[VTPU_OP_COPY] = sizeof(struct vtpu_cmd_copy),
};

static u32 dtype_size(u32 dtype)
{
	switch (dtype) {
	case VTPU_DTYPE_F32:
		return 4;
	case VTPU_DTYPE_BF16:
		return 2;
	default:
		return 0;
	}
}

/* Bytes a rows x cols matrix with leading dimension ld spans. */
static u64 matrix_bytes(u64 rows, u64 cols, u64 ld, u32 esize)
{
	return ((rows - 1) * ld + cols) * esize;
}

int vtpu_engine_operand(const struct vtpu_cmd_hdr *cmd, u32 id,
			const struct vtpu_operand **opnd, u64 *bytes)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;
	const struct vtpu_cmd_fill *f = (const void *)cmd;
	const struct vtpu_cmd_copy *c = (const void *)cmd;
	bool ta, tb;
	u32 es;

	switch (cmd->opcode) {
	case VTPU_OP_GEMM:
		ta = g->flags & VTPU_GEMM_TRANS_A;
		tb = g->flags & VTPU_GEMM_TRANS_B;
		es = dtype_size(g->dtype);
		switch (id) {
		case VTPU_OPERAND_A:
			*opnd = &g->a;
			*bytes = matrix_bytes(ta ? g->k : g->m, ta ? g->m : g->k,
					      g->lda, es);
			return 0;
		case VTPU_OPERAND_B:
			*opnd = &g->b;
			*bytes = matrix_bytes(tb ? g->n : g->k, tb ? g->k : g->n,
					      g->ldb, es);
			return 0;
		case VTPU_OPERAND_C:
			*opnd = &g->c;
			*bytes = matrix_bytes(g->m, g->n, g->ldc, 4);
			return 0;
		case VTPU_OPERAND_BIAS:
			*opnd = &g->bias;
			*bytes = (u64)g->n * 4;
			return 0;
		}
		break;
	case VTPU_OP_FILL:
		if (id == VTPU_OPERAND_DST) {
			*opnd = &f->dst;
			*bytes = (u64)f->count * 4;
			return 0;
		}
		break;
	case VTPU_OP_COPY:
		if (id == VTPU_OPERAND_DST || id == VTPU_OPERAND_SRC) {
			*opnd = id == VTPU_OPERAND_DST ? &c->dst : &c->src;
			*bytes = c->bytes;
			return 0;
		}
		break;
	}
	return -ENOENT;
}

struct vctx {
	const u64 *buf_sizes;
	u32 nbufs;
	struct vtpu_engine_error *err;
};

static int reject(struct vctx *v, u32 operand, u32 reason)
{
	v->err->operand = operand;
	v->err->reason = reason;
	return -EINVAL;
}

/* An operand the command uses: index, alignment, bounds. */
static int check_operand(struct vctx *v, const struct vtpu_cmd_hdr *cmd,
			 u32 id, u32 align)
{
	const struct vtpu_operand *o;
	u64 bytes, size;

	vtpu_engine_operand(cmd, id, &o, &bytes);
	if (o->pad)
		return reject(v, id, VTPU_ERR_BAD_PAD);
	if (o->buf >= v->nbufs)
		return reject(v, id, VTPU_ERR_BAD_BUFFER);
	if (o->offset % align)
		return reject(v, id, VTPU_ERR_MISALIGNED);
	size = v->buf_sizes[o->buf];
	if (o->offset > size || bytes > size - o->offset)
		return reject(v, id, VTPU_ERR_OUT_OF_BOUNDS);
	return 0;
}

/* Do the byte ranges of operands x and y (both checked) intersect? */
static bool overlap(const struct vtpu_cmd_hdr *cmd, u32 x, u32 y)
{
	const struct vtpu_operand *ox, *oy;
	u64 bx, by;

	vtpu_engine_operand(cmd, x, &ox, &bx);
	vtpu_engine_operand(cmd, y, &oy, &by);
	return ox->buf == oy->buf && ox->offset < oy->offset + by &&
	       oy->offset < ox->offset + bx;
}

static bool dim_ok(u32 d)
{
	return d >= 1 && d <= VTPU_MAX_DIM;
}

static int check_gemm(struct vctx *v, const struct vtpu_cmd_gemm *g)
{
	const struct vtpu_cmd_hdr *cmd = &g->hdr;
	bool ta = g->flags & VTPU_GEMM_TRANS_A;
	bool tb = g->flags & VTPU_GEMM_TRANS_B;
	u32 es = dtype_size(g->dtype);
	int ret;

	if (g->flags & ~VTPU_GEMM_FLAGS)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_FLAGS);
	if (!dim_ok(g->m) || !dim_ok(g->n) || !dim_ok(g->k))
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	/* bf16 inputs are reserved in the uapi; the engine runs f32 today. */
	if (g->dtype != VTPU_DTYPE_F32)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_DTYPE);
	if (g->lda < (ta ? g->m : g->k))
		return reject(v, VTPU_OPERAND_A, VTPU_ERR_BAD_STRIDE);
	if (g->ldb < (tb ? g->k : g->n))
		return reject(v, VTPU_OPERAND_B, VTPU_ERR_BAD_STRIDE);
	if (g->ldc < g->n)
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_BAD_STRIDE);

	ret = check_operand(v, cmd, VTPU_OPERAND_A, es);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_B, es);
	if (!ret)
		ret = check_operand(v, cmd, VTPU_OPERAND_C, 4);
	if (ret)
		return ret;
	if (g->flags & VTPU_GEMM_BIAS) {
		ret = check_operand(v, cmd, VTPU_OPERAND_BIAS, 4);
		if (ret)
			return ret;
		if (overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_BIAS))
			return reject(v, VTPU_OPERAND_C, VTPU_ERR_OVERLAP);
	} else if (g->bias.buf || g->bias.pad || g->bias.offset) {
		/* Unused operands must be zero so they can gain a meaning. */
		return reject(v, VTPU_OPERAND_BIAS, VTPU_ERR_BAD_PAD);
	}
	/* Tiles of C are written while other tiles read A and B. */
	if (overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_A) ||
	    overlap(cmd, VTPU_OPERAND_C, VTPU_OPERAND_B))
		return reject(v, VTPU_OPERAND_C, VTPU_ERR_OVERLAP);
	return 0;
}

static int check_fill(struct vctx *v, const struct vtpu_cmd_fill *f)
{
	if (!f->count)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	return check_operand(v, &f->hdr, VTPU_OPERAND_DST, 4);
}

static int check_copy(struct vctx *v, const struct vtpu_cmd_copy *c)
{
	int ret;

	if (!c->bytes || c->bytes > (u64)VTPU_MAX_DIM * VTPU_MAX_DIM)
		return reject(v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SHAPE);
	ret = check_operand(v, &c->hdr, VTPU_OPERAND_DST, 1);
	if (!ret)
		ret = check_operand(v, &c->hdr, VTPU_OPERAND_SRC, 1);
	if (ret)
		return ret;
	if (overlap(&c->hdr, VTPU_OPERAND_DST, VTPU_OPERAND_SRC))
		return reject(v, VTPU_OPERAND_DST, VTPU_ERR_OVERLAP);
	return 0;
}

int vtpu_engine_validate(const void *cmds, u32 size, const u64 *buf_sizes,
			 u32 nbufs, struct vtpu_engine_error *err)
{
	struct vctx v = { .buf_sizes = buf_sizes, .nbufs = nbufs, .err = err };
	const struct vtpu_cmd_hdr *cmd;
	u32 pos = 0, index = 0;
	int ret;

	err->cmd = 0;
	err->offset = 0;
	err->operand = VTPU_OPERAND_NONE;
	err->reason = VTPU_ERR_NONE;
	if (!size || size % 8)
		return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);

	for (; pos < size; index++) {
		err->cmd = index;
		err->offset = pos;
		if (size - pos < sizeof(*cmd))
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);
		cmd = (const void *)((const u8 *)cmds + pos);
		if (cmd->opcode >= VTPU_OP_COUNT)
			return reject(&v, VTPU_OPERAND_NONE,
				      VTPU_ERR_BAD_OPCODE);
		if (cmd->size > size - pos)
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_TRUNCATED);
		if (cmd->size != cmd_sizes[cmd->opcode])
			return reject(&v, VTPU_OPERAND_NONE, VTPU_ERR_BAD_SIZE);

		switch (cmd->opcode) {
		case VTPU_OP_GEMM:
			ret = check_gemm(&v, (const void *)cmd);
			break;
		case VTPU_OP_FILL:
			ret = check_fill(&v, (const void *)cmd);
			break;
		case VTPU_OP_COPY:
			ret = check_copy(&v, (const void *)cmd);
			break;
		default:
			ret = 0;
			break;
		}
		if (ret)
			return ret;
		pos += cmd->size;
	}
	err->cmd = 0;
	err->offset = 0;
	return 0;
}

const struct vtpu_cmd_hdr *vtpu_engine_next(const void *cmds, u32 size,
					    u32 *pos)
{
	const struct vtpu_cmd_hdr *cmd;

	if (*pos >= size)
		return NULL;
	cmd = (const void *)((const u8 *)cmds + *pos);
	*pos += cmd->size;
	return cmd;
}

const char *vtpu_engine_simd_name(u32 simd)
{
	switch (simd) {
	case VTPU_SIMD_SCALAR:
		return "scalar";
	case VTPU_SIMD_AVX2:
		return "avx2";
	case VTPU_SIMD_AVX512:
		return "avx512";
	default:
		return "?";
	}
}
