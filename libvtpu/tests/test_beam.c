// SPDX-License-Identifier: GPL-2.0-only
/*
 * Beam search (vtpu_model_decode_beam()) on small encoder-decoders with
 * attention, on the cpu backend: width 1 is greedy decoding to the bit;
 * width 4 finds sequences at least as probable as greedy's on every
 * sentence, and more probable on some, the probabilities recomputed
 * independently by teacher-forcing the found sequence through
 * vtpu_model_predict_tokens(); sentences that end at once; rejections.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <vtpu_model.h>
#include <vtpu_text.h>

#include "test_seq.h"

/* The encoder-decoder of the translation example, small. */
struct s2s {
	uint32_t ts, tt, vs, vt, e, h, a;	/* lengths, vocabularies, sizes */
	int src, tgt, enc_emb;
	struct vtpu_model *m;
};

/*
 * Build and compile @s with random weights of a trained network's scale
 * (varied choices), biases 0 but the output's for <end>, @end_bias: how
 * readily sentences end.
 */
static int make_s2s(struct s2s *s, uint32_t batch, float end_bias)
{
	struct vtpu_graph *g = vtpu_graph_create();
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = batch, .seed = 3,
			  .threads = 2);
	struct vtpu_lstm_nodes enc, dec;
	int x, att, k, nw;
	uint64_t i;

	if (!g)
		return -ENOMEM;
	s->src = vtpu_graph_tokens(g, s->ts);
	s->tgt = vtpu_graph_tokens(g, s->tt);
	s->enc_emb = vtpu_graph_embedding(g, s->src, s->vs, s->e);
	vtpu_graph_lstm(g, s->enc_emb, s->h, -1, -1, &enc);
	x = vtpu_graph_embedding(g, s->tgt, s->vt, s->e);
	vtpu_graph_lstm(g, x, s->h, enc.h, enc.c, &dec);
	att = vtpu_graph_attention(g, dec.seq, enc.seq, s->src);
	x = vtpu_graph_concat(g, att, dec.seq);
	x = vtpu_graph_dense(g, x, s->a, VTPU_ACT_TANH);
	x = vtpu_graph_dense(g, x, s->vt, VTPU_ACT_NONE);
	if (vtpu_graph_loss(g, x) < 0) {
		vtpu_graph_destroy(g);
		return -EINVAL;
	}
	s->m = vtpu_model_create_graph(g);
	if (!s->m)
		return -ENOMEM;
	if (vtpu_model_compile(s->m, &co))
		return -EINVAL;
	nw = vtpu_model_num_weights(s->m);
	for (k = 0; k < nw; k++) {
		struct vtpu_weight_info wi;
		float *w;

		vtpu_model_weight_info(s->m, k, &wi);
		w = malloc(wi.count * 4);
		if (!w)
			return -ENOMEM;
		for (i = 0; i < wi.count; i++)
			w[i] = wi.ndim == 1 ? 0.0f :
					      (rnd(2001) / 1000.0f - 1.0f) * 1.5f;
		if (k == nw - 1)	/* the output layer's bias */
			w[VTPU_TOK_END] = end_bias;
		vtpu_model_set_weights(s->m, k, w, wi.count);
		free(w);
	}
	return 0;
}

/* Ids up to and including the first <end> (all T without one). */
static uint32_t seq_len(const uint32_t *y, uint32_t T)
{
	uint32_t t;

	for (t = 0; t < T; t++)
		if (y[t] == VTPU_TOK_END)
			return t + 1;
	return T;
}

/*
 * The log-probability of each sentence's @y [n][T] (up to its <end>),
 * from one prediction with the decoder fed <start> y1 .. (teacher
 * forcing), as training feeds it.
 */
static int logprob(const struct s2s *s, const uint32_t *src,
		   const uint32_t *y, uint32_t n, double *lp)
{
	uint32_t T = s->tt, *dec = calloc((size_t)n * T, 4), i, t, len;
	float *probs = malloc((size_t)n * T * s->vt * 4);
	const uint32_t *in[2] = { src, dec };
	int ret = -ENOMEM;

	if (!dec || !probs)
		goto out;
	for (i = 0; i < n; i++) {
		dec[i * T] = VTPU_TOK_START;
		len = seq_len(y + i * T, T);
		for (t = 1; t < len; t++)
			dec[i * T + t] = y[i * T + t - 1];
	}
	ret = vtpu_model_predict_tokens(s->m, in, n, probs);
	for (i = 0; !ret && i < n; i++) {
		len = seq_len(y + i * T, T);
		lp[i] = 0;
		for (t = 0; t < len; t++)
			lp[i] += log(probs[((size_t)i * T + t) * s->vt +
					   y[i * T + t]]);
	}
out:
	free(dec);
	free(probs);
	return ret;
}

/*
 * Width 1 keeps the most probable id at every step, as greedy decoding
 * does: the same ids to the first <end>, padding after it. Seven
 * sentences in batches of four (a short last batch), with and without
 * length normalisation (which cannot change a beam of one).
 */
TEST(width_1_is_greedy)
{
	struct s2s s = { .ts = 7, .tt = 6, .vs = 13, .vt = 11, .e = 6, .h = 8,
			 .a = 10 };
	uint32_t n = 7, T = s.tt, i, t, len, ended = 0, alpha;
	uint32_t *src = malloc(n * s.ts * 4), *greedy = malloc(n * T * 4);
	uint32_t *beam = malloc(n * T * 4);
	const uint32_t *in[2] = { src, NULL };
	float *score = malloc(n * 4);
	double *lp = malloc(n * sizeof(*lp));

	rng_state = 1;
	ASSERT_EQ(0, make_s2s(&s, 4, 0.5f));
	random_tokens(src, n, s.ts, s.vs);
	ASSERT_EQ(0, vtpu_model_decode(s.m, s.tgt, in, n, greedy));
	for (alpha = 0; alpha < 2; alpha++) {
		VTPU_BEAM_OPTS(bo, .width = 1, .alpha = alpha * 0.7f);

		ASSERT_EQ(0, vtpu_model_decode_beam_opts(s.m, s.tgt, in, n,
							 &bo, beam, score))
			TH_LOG("%s", vtpu_model_error(s.m));
		for (i = 0; i < n; i++) {
			len = seq_len(greedy + i * T, T);
			ended += len < T;
			for (t = 0; t < T; t++)
				EXPECT_EQ(t < len ? greedy[i * T + t] :
						    VTPU_TOK_PAD,
					  beam[i * T + t])
					TH_LOG("sentence %u, step %u", i, t);
		}
	}
	TH_LOG("%u of %u greedy sentences end before the last step", ended / 2,
	       n);
	EXPECT_LT(0u, ended);
	ASSERT_EQ(0, logprob(&s, src, beam, n, lp));
	for (i = 0; i < n; i++) {
		double off = fabs(score[i] - lp[i]);

		EXPECT_GT(1e-4, off) TH_LOG("sentence %u: score off by %.2e",
					    i, off);
	}
	vtpu_model_destroy(s.m);
	free(src);
	free(greedy);
	free(beam);
	free(score);
	free(lp);
}

/*
 * Width 4 against greedy on random models (seeded: the same models every
 * run): on every sentence a sequence at least as probable as greedy's,
 * more probable on some (where greedy's first choices lead to improbable
 * continuations), the score it returns the one recomputed by teacher
 * forcing. Then a length-normalised search's scores are right too.
 */
TEST(width_4_beats_greedy)
{
	struct s2s s = { .ts = 7, .tt = 6, .vs = 13, .vt = 11, .e = 6, .h = 8,
			 .a = 10 };
	uint32_t n = 24, T = s.tt, i, better = 0, early = 0, model;
	uint32_t *src = malloc(n * s.ts * 4), *greedy = malloc(n * T * 4);
	uint32_t *beam = malloc(n * T * 4);
	const uint32_t *in[2] = { src, NULL };
	float *score = malloc(n * 4);
	double *lg = malloc(n * sizeof(*lg)), *lb = malloc(n * sizeof(*lb));
	double gain = 0;

	rng_state = 7;
	for (model = 0; model < 3; model++) {
		VTPU_BEAM_OPTS(bo, .width = 4, .alpha = 0.7f);

		ASSERT_EQ(0, make_s2s(&s, 8, 1.0f));
		random_tokens(src, n, s.ts, s.vs);
		ASSERT_EQ(0, vtpu_model_decode(s.m, s.tgt, in, n, greedy));
		ASSERT_EQ(0, vtpu_model_decode_beam(s.m, s.tgt, in, n, 4, beam,
						    score))
			TH_LOG("%s", vtpu_model_error(s.m));
		ASSERT_EQ(0, logprob(&s, src, greedy, n, lg));
		ASSERT_EQ(0, logprob(&s, src, beam, n, lb));
		for (i = 0; i < n; i++) {
			uint32_t len = seq_len(beam + i * T, T), t;

			EXPECT_LE(lg[i] - 1e-6, lb[i])
				TH_LOG("model %u, sentence %u: beam %.6f, greedy %.6f",
				       model, i, lb[i], lg[i]);
			EXPECT_GT(1e-4, fabs(score[i] - lb[i]))
				TH_LOG("model %u, sentence %u: score %.6f, recomputed %.6f",
				       model, i, score[i], lb[i]);
			better += lb[i] > lg[i] + 1e-6;
			gain += lb[i] - lg[i];
			early += len < T;
			for (t = len; t < T; t++)
				EXPECT_EQ(VTPU_TOK_PAD, beam[i * T + t]);
		}
		/* normalised: ranked otherwise, scored the same way */
		ASSERT_EQ(0, vtpu_model_decode_beam_opts(s.m, s.tgt, in, n,
							 &bo, beam, score));
		ASSERT_EQ(0, logprob(&s, src, beam, n, lb));
		for (i = 0; i < n; i++)
			EXPECT_GT(1e-4, fabs(score[i] - lb[i]));
		vtpu_model_destroy(s.m);
	}
	TH_LOG("width 4: more probable than greedy on %u of %u sentences "
	       "(mean log-probability gain %.3f), %u ending before the last "
	       "step", better, 3 * n, gain / (3 * n), early);
	EXPECT_LT(0u, better);
	EXPECT_LT(0u, early);
	free(src);
	free(greedy);
	free(beam);
	free(score);
	free(lg);
	free(lb);
}

/*
 * A model that all but certainly says <end> first: every sentence is
 * <end> then padding, its score log p(<end>), whatever the width; the
 * search stops once the beams are all finished.
 */
TEST(ends_at_once)
{
	struct s2s s = { .ts = 5, .tt = 6, .vs = 9, .vt = 8, .e = 4, .h = 5,
			 .a = 6 };
	uint32_t n = 5, T = s.tt, i, t, w;
	uint32_t *src = malloc(n * s.ts * 4), *out = malloc(n * T * 4);
	const uint32_t *in[2] = { src, NULL };
	float *score = malloc(n * 4);
	double *lp = malloc(n * sizeof(*lp));

	rng_state = 11;
	ASSERT_EQ(0, make_s2s(&s, 2, 40.0f));
	random_tokens(src, n, s.ts, s.vs);
	for (w = 1; w <= s.vt; w += 3) {
		ASSERT_EQ(0, vtpu_model_decode_beam(s.m, s.tgt, in, n, w, out,
						    score));
		ASSERT_EQ(0, logprob(&s, src, out, n, lp));
		for (i = 0; i < n; i++) {
			EXPECT_EQ(VTPU_TOK_END, out[i * T]);
			for (t = 1; t < T; t++)
				EXPECT_EQ(VTPU_TOK_PAD, out[i * T + t]);
			EXPECT_GT(1e-4, fabs(score[i] - lp[i]));
			EXPECT_GE(0.0f, score[i]);
		}
	}
	/* scores may be left out */
	EXPECT_EQ(0, vtpu_model_decode_beam(s.m, s.tgt, in, n, 2, out, NULL));
	vtpu_model_destroy(s.m);
	free(src);
	free(out);
	free(score);
	free(lp);
}

static void expect_error(struct __test_metadata *_metadata,
			 struct vtpu_model *m, int ret, const char *what)
{
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), what))
		TH_LOG("wanted \"%s\" in \"%s\"", what, vtpu_model_error(m));
}

TEST(rejections)
{
	struct s2s s = { .ts = 5, .tt = 4, .vs = 9, .vt = 8, .e = 4, .h = 5,
			 .a = 6 };
	uint32_t n = 3, out[3 * 4];
	uint32_t *src = malloc(n * s.ts * 4);
	const uint32_t *in[2] = { src, NULL };
	struct vtpu_graph *g;
	struct vtpu_model *raw;
	VTPU_BEAM_OPTS(bo, .width = 2, .alpha = -1.0f);
	struct vtpu_beam_opts unsized = { .width = 2 };
	int tok, x;

	rng_state = 5;
	ASSERT_EQ(0, make_s2s(&s, 2, 0.0f));
	random_tokens(src, n, s.ts, s.vs);
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, n,
							    0, out, NULL),
		     "beam width 0");
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, n,
							    9, out, NULL),
		     "8 classes");
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, n,
							    VTPU_BEAM_MAX_WIDTH + 1,
							    out, NULL),
		     "beam width");
	/* not a token input; a token input not as long as the output */
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.enc_emb, in,
							    n, 2, out, NULL),
		     "not a token input");
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.src, in, n,
							    2, out, NULL),
		     "as long as");
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, 0,
							    2, out, NULL),
		     "empty");
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, n,
							    2, NULL, NULL),
		     "no output");
	expect_error(_metadata, s.m, vtpu_model_decode_beam_opts(s.m, s.tgt,
								 in, n, &bo,
								 out, NULL),
		     "alpha");
	expect_error(_metadata, s.m, vtpu_model_decode_beam_opts(s.m, s.tgt,
								 in, n,
								 &unsized, out,
								 NULL),
		     "VTPU_BEAM_OPTS");
	expect_error(_metadata, s.m, vtpu_model_decode_beam_opts(s.m, s.tgt,
								 in, n, NULL,
								 out, NULL),
		     "VTPU_BEAM_OPTS");
	/* a source id past the vocabulary, named */
	src[s.ts + 1] = s.vs;
	expect_error(_metadata, s.m, vtpu_model_decode_beam(s.m, s.tgt, in, n,
							    2, out, NULL),
		     "example 1, step 1");
	vtpu_model_destroy(s.m);

	/* not compiled */
	g = vtpu_graph_create();
	tok = vtpu_graph_tokens(g, 4);
	x = vtpu_graph_embedding(g, tok, 9, 3);
	x = vtpu_graph_dense(g, x, 9, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	raw = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, raw);
	in[0] = src;
	expect_error(_metadata, raw, vtpu_model_decode_beam(raw, tok, in, 1, 2,
							    out, NULL),
		     "not compiled");
	vtpu_model_destroy(raw);
	free(src);
}

TEST_HARNESS_MAIN
