// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * ELEMENTWISE (struct vtpu_cmd_elementwise) and CAST (struct
 * vtpu_cmd_cast): one pass over count elements, tiled by chunks
 * (vtpu_ops_tile()). Each sub-op is its own plain loop so the compiler can
 * vectorise it. In-place (z == x or z == y exactly) is safe: element i is
 * read before it is written and by the same iteration.
 */
#include "engine_internal.h"

/*
 * At most VTPU_OPS_CHUNK elements per tile. An op with enough work (at
 * least VTPU_OPS_MIN_CHUNK a tile) is cut into at least one tile per
 * worker, and into a number of tiles the workers divide evenly, so that
 * none idles while another runs a last tile: a dense layer's 128 x 512
 * ReLU gradient ran as one tile on one of two workers, and mnist's Adam
 * as 11 tiles (six on one worker, five on the other). Tiles are whole
 * vectors (16 floats); each element's result does not depend on its tile.
 */
void vtpu_ops_tile(struct vtpu_engine_op *op, u64 count)
{
	u64 w = vtpu_min_u64(op->workers, 1u << 16);
	u64 tiles = (count + VTPU_OPS_CHUNK - 1) / VTPU_OPS_CHUNK;
	u64 fit = count / VTPU_OPS_MIN_CHUNK;	/* tiles of at least MIN */
	u64 even = (tiles + w - 1) / w * w;

	if (even <= fit)
		tiles = even;
	else if (tiles < vtpu_min_u64(w, fit))
		tiles = vtpu_min_u64(w, fit);
	if (!tiles)
		tiles = 1;
	op->chunk = ((count + tiles - 1) / tiles + 15) / 16 * 16;
	op->ntiles = (u32)((count + op->chunk - 1) / op->chunk);
}

/*
 * The activations at this file's width (the baseline); the AVX2 and
 * AVX-512 builds of the same loops are in ops_act_*.c, and all give the
 * same bits (act_tmpl.h).
 */
#define ACT_SFX scalar
#include "act_tmpl.h"
#include "lstm_tmpl.h"	/* LSTM_CELL's loops, at the same width */

static const struct {
	void (*sigmoid)(const float *x, float *z, u64 n);
	void (*tanh)(const float *x, float *z, u64 n);
} act_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_act_sigmoid_scalar, vtpu_act_tanh_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_act_sigmoid_avx2, vtpu_act_tanh_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_act_sigmoid_avx512, vtpu_act_tanh_avx512 },
};

static void ew_tile(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->ew.count);
	op->flops = op->ew.count;
}

void vtpu_ew_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		     const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_elementwise *e = (const void *)cmd;

	op->ew.op = e->op;
	op->ew.count = e->count;
	op->ew.alpha = vtpu_f32_from_bits(e->alpha);
	op->ew.beta = vtpu_f32_from_bits(e->beta);
	op->ew.x = vtpu_operand_ptr(bufs, &e->x);
	/* an unused y is all zero: buffer 0 exists (x uses one); not read */
	op->ew.y = vtpu_operand_ptr(bufs, &e->y);
	op->ew.z = vtpu_operand_ptr(bufs, &e->z);
	ew_tile(op);
}

void vtpu_ew_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		 void *scratch)
{
	const struct vtpu_engine_ew *e = &op->ew;
	u64 i0 = (u64)tile * op->chunk;
	u64 n = vtpu_min_u64(op->chunk, e->count - i0), i;
	const float *x = e->x + i0, *y = e->y + i0;
	float *z = e->z + i0;
	float a = e->alpha, b = e->beta;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;

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
	case VTPU_EW_SIGMOID:
		act_levels[simd].sigmoid(x, z, n);
		break;
	case VTPU_EW_SIGMOID_GRAD:
		for (i = 0; i < n; i++)
			z[i] = y[i] * x[i] * (1.0f - x[i]);
		break;
	case VTPU_EW_TANH:
		act_levels[simd].tanh(x, z, n);
		break;
	case VTPU_EW_TANH_GRAD:
		for (i = 0; i < n; i++)
			z[i] = y[i] * (1.0f - x[i] * x[i]);
		break;
	}
}

static void cast_tile(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->cast.count);
	op->flops = op->cast.count;
}

void vtpu_cast_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_cast *c = (const void *)cmd;

	op->cast.mode = c->mode;
	op->cast.count = c->count;
	op->cast.scale = vtpu_f32_from_bits(c->scale);
	op->cast.shift = vtpu_f32_from_bits(c->shift);
	op->cast.src = vtpu_operand_ptr(bufs, &c->src);
	op->cast.dst = vtpu_operand_ptr(bufs, &c->dst);
	cast_tile(op);
}

/* Round to nearest even; a NaN stays a NaN (quietened, sign kept). */
static u16 f32_to_bf16(u32 bits)
{
	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (u16)((bits >> 16) | 0x40);
	return (u16)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

void vtpu_cast_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
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

static void dropout_tile(struct vtpu_engine_op *op)
{
	vtpu_ops_tile(op, op->dropout.count);
	op->flops = op->dropout.count;
}

void vtpu_dropout_prepare(struct vtpu_engine_op *op, const struct vtpu_cmd_hdr *cmd,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_dropout *d = (const void *)cmd;
	float rate = vtpu_f32_from_bits(d->rate);

	op->dropout.count = d->count;
	op->dropout.seed = d->seed;
	/* rate < 1: the product is below 2^32 */
	op->dropout.threshold = (u32)(rate * 4294967296.0);
	op->dropout.scale = 1.0f / (1.0f - rate);
	op->dropout.x = vtpu_operand_ptr(bufs, &d->x);
	op->dropout.z = vtpu_operand_ptr(bufs, &d->z);
	op->dropout.mask = vtpu_operand_ptr(bufs, &d->mask);
	op->dropout.step = vtpu_operand_ptr(bufs, &d->step);
	dropout_tile(op);
}

/* splitmix64's finaliser: every bit of the input reaches every bit out */
static u64 mix64(u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void vtpu_dropout_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		      void *scratch)
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

int vtpu_ew_describe(const struct vtpu_engine_op *op, char *buf, size_t len)
{
	return snprintf(buf, len, "op %u, %llu", op->ew.op,
			(unsigned long long)op->ew.count);
}

/*
 * IMAGE_AUGMENT: tiled by output elements as an element-wise op; a tile
 * walks its elements in runs of one pixel's channels, decoding where it
 * starts once and drawing an image's crop and flip when it enters it.
 */
void vtpu_augment_prepare(struct vtpu_engine_op *op,
			  const struct vtpu_cmd_hdr *cmd,
			  const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_image_augment *c = (const void *)cmd;
	struct vtpu_engine_augment *a = &op->augment;

	a->n = c->n;
	a->h = c->h;
	a->w = c->w;
	a->c = c->c;
	a->oh = c->oh;
	a->ow = c->ow;
	a->seed = c->seed;
	a->flags = c->flags;
	a->count = (u64)a->n * a->oh * a->ow * a->c;
	a->x = vtpu_operand_ptr(bufs, &c->x);
	a->y = vtpu_operand_ptr(bufs, &c->y);
	a->step = vtpu_operand_ptr(bufs, &c->step);
	vtpu_ops_tile(op, a->count);
	op->flops = a->count;
}

/* Image @i's first row and column in x and whether it is flipped. */
static void augment_draw(const struct vtpu_engine_augment *a, u64 key, u32 i,
			 u32 *r0, u32 *q0, bool *flip)
{
	u64 d = mix64(key + i);

	if (a->flags & VTPU_AUGMENT_RANDOM_CROP) {
		*r0 = (u32)(((d >> 32) * (a->h - a->oh + 1)) >> 32);
		*q0 = (u32)(((d & 0xffffffffull) * (a->w - a->ow + 1)) >> 32);
	} else {
		*r0 = (a->h - a->oh) / 2;
		*q0 = (a->w - a->ow) / 2;
	}
	*flip = (a->flags & VTPU_AUGMENT_FLIP_H) && (mix64(d) >> 63);
}

void vtpu_augment_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		      void *scratch)
{
	const struct vtpu_engine_augment *a = &op->augment;
	u64 p = (u64)tile * op->chunk;
	u64 end = p + vtpu_min_u64(op->chunk, a->count - p);
	u64 pix = p / a->c, key, run, k;
	u32 ch = (u32)(p % a->c), q = (u32)(pix % a->ow), r, i, r0, q0, col;
	float s = *a->step;
	const float *src;
	bool flip;

	/* the counter is user memory: anything but a step number reads as 0 */
	key = s >= 0.0f && s < 16777216.0f ? (u64)s : 0;
	key = mix64(((u64)a->seed << 32 | key) + 0x9e3779b97f4a7c15ull);
	pix /= a->ow;
	r = (u32)(pix % a->oh);
	i = (u32)(pix / a->oh);
	augment_draw(a, key, i, &r0, &q0, &flip);
	while (p < end) {
		col = q0 + (flip ? a->ow - 1 - q : q);
		src = a->x + ((((u64)i * a->h + r0 + r) * a->w + col) * a->c +
			      ch);
		run = vtpu_min_u64(a->c - ch, end - p);
		for (k = 0; k < run; k++)
			a->y[p + k] = src[k];
		p += run;
		ch = 0;
		if (++q < a->ow)
			continue;
		q = 0;
		if (++r < a->oh)
			continue;
		r = 0;
		if (++i < a->n)
			augment_draw(a, key, i, &r0, &q0, &flip);
	}
}

int vtpu_augment_describe(const struct vtpu_engine_op *op, char *buf,
			  size_t len)
{
	const struct vtpu_engine_augment *a = &op->augment;

	return snprintf(buf, len, "%ux%ux%ux%u to %ux%u, flags %#x", a->n,
			a->h, a->w, a->c, a->oh, a->ow, a->flags);
}
