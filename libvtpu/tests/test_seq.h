/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test_seq.h: what the host tests of the sequence models (test_seq_model.c,
 * test_beam.c) share: a small deterministic random generator and random
 * token sentences from it.
 */
#ifndef VTPU_TEST_SEQ_H
#define VTPU_TEST_SEQ_H

#include <stdint.h>

#include <vtpu_text.h>

/* The generator's state: a test sets it to start a sequence of its own. */
static uint64_t rng_state = 1;

/* A number in 0..@n - 1 (a 64-bit LCG's high bits). */
static inline uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

/* Sentences: start, words, end, padding; lengths differ per example. */
static inline void random_tokens(uint32_t *ids, uint32_t batch, uint32_t T,
				 uint32_t vocab)
{
	uint32_t b, t, len;

	for (b = 0; b < batch; b++) {
		len = 2 + rnd(T - 1);	/* 2..T */
		for (t = 0; t < T; t++) {
			uint32_t *x = &ids[b * T + t];

			if (t == 0)
				*x = VTPU_TOK_START;
			else if (t + 1 < len)
				*x = VTPU_TOK_RESERVED +
				     rnd(vocab - VTPU_TOK_RESERVED);
			else
				*x = t + 1 == len ? VTPU_TOK_END : VTPU_TOK_PAD;
		}
	}
}

#endif /* VTPU_TEST_SEQ_H */
