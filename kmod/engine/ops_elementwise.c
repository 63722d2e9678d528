// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ELEMENTWISE (struct vtpu_cmd_elementwise) and CAST (struct
 * vtpu_cmd_cast): one pass over count elements, tiled by chunks
 * (vtpu_ops_tile()). Each sub-op is its own plain loop so the compiler can
 * vectorise it. In-place (z == x or z == y exactly) is safe: element i is
 * read before it is written and by the same iteration.
 */
#include "engine_internal.h"

void vtpu_ew_prepare(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->ew.count);
	op->flops = op->ew.count;
}

void vtpu_ew_run(const struct vtpu_engine_op *op, u32 tile, u32 step)
{
	const struct vtpu_engine_ew *e = &op->ew;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, e->count - i0), i;
	const float *x = e->x + i0, *y = e->y + i0;
	float *z = e->z + i0;
	float a = e->alpha, b = e->beta;

	switch (e->op) {
	case VTPU_EW_ADD:
		for (i = 0; i < n; i++)
			z[i] = x[i] + y[i];
		break;
	case VTPU_EW_SUB:
		for (i = 0; i < n; i++)
			z[i] = x[i] - y[i];
		break;
	case VTPU_EW_MUL:
		for (i = 0; i < n; i++)
			z[i] = x[i] * y[i];
		break;
	case VTPU_EW_SCALE:
		for (i = 0; i < n; i++)
			z[i] = a * x[i];
		break;
	case VTPU_EW_AXPY:
		for (i = 0; i < n; i++)
			z[i] = a * x[i] + y[i];
		break;
	case VTPU_EW_AXPBY:
		for (i = 0; i < n; i++)
			z[i] = a * x[i] + b * y[i];
		break;
	case VTPU_EW_RELU:
		for (i = 0; i < n; i++)
			z[i] = x[i] < 0.0f ? 0.0f : x[i];
		break;
	case VTPU_EW_RELU_GRAD:
		/* y loaded unconditionally: the select vectorises */
		for (i = 0; i < n; i++) {
			float v = y[i];

			z[i] = x[i] > 0.0f ? v : 0.0f;
		}
		break;
	case VTPU_EW_ADD_SCALAR:
		for (i = 0; i < n; i++)
			z[i] = x[i] + a;
		break;
	}
}

void vtpu_cast_prepare(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->cast.count);
	op->flops = op->cast.count;
}

/* Round to nearest even; a NaN stays a NaN (quietened, sign kept). */
static u16 f32_to_bf16(u32 bits)
{
	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (u16)((bits >> 16) | 0x40);
	return (u16)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

void vtpu_cast_run(const struct vtpu_engine_op *op, u32 tile, u32 step)
{
	const struct vtpu_engine_cast *c = &op->cast;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, c->count - i0), i;

	switch (c->mode) {
	case VTPU_CAST_F32_TO_BF16: {
		const u32 *src = (const u32 *)c->src + i0;
		u16 *dst = (u16 *)c->dst + i0;

		for (i = 0; i < n; i++)
			dst[i] = f32_to_bf16(src[i]);
		break;
	}
	case VTPU_CAST_BF16_TO_F32: {
		const u16 *src = (const u16 *)c->src + i0;
		u32 *dst = (u32 *)c->dst + i0;

		for (i = 0; i < n; i++)
			dst[i] = (u32)src[i] << 16;
		break;
	}
	case VTPU_CAST_U8_TO_F32: {
		const u8 *src = (const u8 *)c->src + i0;
		float *dst = (float *)c->dst + i0;

		for (i = 0; i < n; i++)
			dst[i] = (float)src[i] * c->scale + c->shift;
		break;
	}
	}
}

void vtpu_dropout_prepare(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->dropout.count);
	op->flops = op->dropout.count;
}

/* splitmix64's finaliser: every bit of the input reaches every bit out */
static u64 mix64(u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void vtpu_dropout_run(const struct vtpu_engine_op *op, u32 tile, u32 step)
{
	const struct vtpu_engine_dropout *d = &op->dropout;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, d->count - i0), i;
	float s = *d->step;
	u64 key;

	/* the counter is user memory: anything but a step number reads as 0 */
	key = s >= 0.0f && s < 16777216.0f ? (u64)s : 0;
	key = mix64(((u64)d->seed << 32 | key) + 0x9e3779b97f4a7c15ull);
	for (i = 0; i < n; i++) {
		u32 h = (u32)(mix64(key + i0 + i) >> 32);
		float m = h >= d->threshold ? d->scale : 0.0f;

		d->mask[i0 + i] = m;
		d->z[i0 + i] = d->x[i0 + i] * m;
	}
}
