/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The check that denormals are flushed to zero, shared by
 * libvtpu/tests/test_ops_elementwise (the cpu backend, on every executor;
 * it includes this file by path) and vtpu_submit (/dev/vtpu0): the inputs,
 * the stream (z = x * y and the GEMM c = a b) and the count of
 * results that kept a denormal. Each test makes the buffers its own way.
 */
#ifndef VTPU_DENORMALS_H
#define VTPU_DENORMALS_H

#include <stddef.h>
#include <string.h>

#include "vtpu.h"

/* The GEMM's shape: c (GM x GN) = a (GM x GK) b (GK x GN). */
#define DENORM_GM 20
#define DENORM_GK 40
#define DENORM_GN 36

/* x, y, z: n floats each; a, b, c: the GEMM's, as above */
struct denorm_bufs {
	struct vtpu_bo *x, *y, *z, *a, *b, *c;
	size_t n;
};

/* The outputs set to NaN, so that one left unwritten counts as bad. */
static void denorm_poison(const struct denorm_bufs *d)
{
	memset(d->z->map, 0xff, d->n * 4);
	memset(d->c->map, 0xff, DENORM_GM * DENORM_GN * 4);
}

/* Fill the inputs, poison the outputs, append the stream; 0 or -errno. */
static int denorm_setup(struct vtpu_cmdbuf *cb, const struct denorm_bufs *d)
{
	float *x = d->x->map, *y = d->y->map, *a = d->a->map, *b = d->b->map;
	size_t i;

	for (i = 0; i < d->n; i++) {
		/* a denormal times 1, a product below 2^-126, and a normal */
		x[i] = i % 3 == 0 ? 1e-39f : i % 3 == 1 ? 1e-20f : 3.0f;
		y[i] = i % 3 == 0 ? 1.0f : i % 3 == 1 ? 1e-20f : 2.0f;
	}
	for (i = 0; i < DENORM_GM * DENORM_GK; i++)
		a[i] = i % 2 ? 1e-39f : 1e-30f;	/* denormal, or tiny */
	for (i = 0; i < DENORM_GK * DENORM_GN; i++)
		b[i] = 1e-10f;	/* 1e-40: a denormal product */
	denorm_poison(d);
	vtpu_cmdbuf_elementwise(cb, VTPU_EW_MUL, d->n, 0, 0,
				VTPU_REF(vtpu_cmdbuf_use(cb, d->x), 0),
				VTPU_REF(vtpu_cmdbuf_use(cb, d->y), 0),
				VTPU_REF(vtpu_cmdbuf_use(cb, d->z), 0));
	vtpu_cmdbuf_gemm(cb, &(struct vtpu_gemm_desc){
		.m = DENORM_GM, .n = DENORM_GN, .k = DENORM_GK, .alpha = 1,
		.a_buf = vtpu_cmdbuf_use(cb, d->a),
		.b_buf = vtpu_cmdbuf_use(cb, d->b),
		.c_buf = vtpu_cmdbuf_use(cb, d->c) });
	return cb->error;
}

/* Results that are not what flushing gives: 6 or 0, and all 0 in c. */
static long denorm_bad(const struct denorm_bufs *d)
{
	const float *z = d->z->map, *c = d->c->map;
	long bad = 0;
	size_t i;

	for (i = 0; i < d->n; i++)
		bad += z[i] != (i % 3 == 2 ? 6.0f : 0.0f);
	for (i = 0; i < DENORM_GM * DENORM_GN; i++)
		bad += c[i] != 0.0f;
	return bad;
}

#endif /* VTPU_DENORMALS_H */
