/* SPDX-License-Identifier: MIT */
/*
 * quadrant.h: the training tests' small learnable task (test_model.c,
 * test_strategy.c, test_dist.c): 4x4 grey images whose class is the
 * quadrant that is brightest, the MLP that learns it, and an on_epoch
 * callback recording each epoch's loss into an array of doubles.
 * Static inline: each test takes what it needs.
 */
#ifndef VTPU_TESTS_QUADRANT_H
#define VTPU_TESTS_QUADRANT_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vtpu_data.h>
#include <vtpu_model.h>

/* @n images, labels 0-3, drawn from @seed (malloc'd: vtpu_dataset_free) */
static inline void quadrant_set(struct vtpu_dataset *ds, uint32_t n,
				uint64_t seed)
{
	struct vtpu_rng rng;
	uint32_t i, p;

	memset(ds, 0, sizeof(*ds));
	ds->n = n;
	ds->height = 4;
	ds->width = 4;
	ds->channels = 1;
	ds->classes = 4;
	ds->images = malloc((size_t)n * 16);
	ds->labels = malloc(n);
	vtpu_rng_seed(&rng, seed);
	for (i = 0; i < n; i++) {
		uint32_t q = (uint32_t)vtpu_rng_below(&rng, 4);

		for (p = 0; p < 16; p++) {
			uint32_t pq = (p / 4 >= 2) * 2 + (p % 4 >= 2);

			ds->images[i * 16 + p] = (uint8_t)(pq == q ?
				128 + vtpu_rng_below(&rng, 128) :
				vtpu_rng_below(&rng, 100));
		}
		ds->labels[i] = (uint8_t)q;
	}
}

/*
 * flatten, dense(@units, ReLU), dense(4, softmax). The hidden kernel is
 * stored in panels (with the engine) from 32 units on; with 64 or more,
 * that is not the row-major order.
 */
static inline struct vtpu_model *quadrant_model(uint32_t units)
{
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);

	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, units, VTPU_ACT_RELU);
	vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX);
	return m;
}

/*
 * Replica @replica's weights, every tensor in order, into @out (at most
 * @max floats), their count into @total. Return: 0, -ENOSPC, or as
 * vtpu_model_get_replica_weights().
 */
static inline int all_weights(struct vtpu_model *m, uint32_t replica,
			      float *out, uint64_t max, uint64_t *total)
{
	struct vtpu_weight_info wi;
	uint64_t at = 0;
	int i, ret;

	for (i = 0; i < vtpu_model_num_weights(m); i++) {
		ret = vtpu_model_weight_info(m, i, &wi);
		if (ret || at + wi.count > max)
			return ret ?: -ENOSPC;
		ret = vtpu_model_get_replica_weights(m, replica, i, out + at,
						     wi.count);
		if (ret)
			return ret;
		at += wi.count;
	}
	*total = at;
	return 0;
}

/* vtpu_fit_opts.on_epoch: @ctx is a double per epoch */
static inline void record_loss(void *ctx, const struct vtpu_epoch_stats *st)
{
	((double *)ctx)[st->epoch - 1] = st->loss;
}

#endif
