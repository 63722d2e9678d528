// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sequence models in the graph API: token inputs, embeddings, LSTMs,
 * GRUs, attention, concatenation and a sequence loss, compiled into one
 * command stream. The forward pass against a double-precision reference
 * written here from the layers' definitions (Keras' LSTM, Keras' GRU
 * with reset_after, Luong's attention), the backward pass against finite
 * differences (vtpu_gradcheck), the graph's rejections, and a checkpoint
 * bound to its vocabulary.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <vtpu_model.h>
#include <vtpu_text.h>

#include "test_seq.h"

#include "../graph_priv.h"
#include "vtpu_engine.h"

/* The encoder-decoder of the translation example, small; LSTMs or GRUs. */
struct s2s {
	uint32_t ts, tt, vs, vt, e, h, a;	/* lengths, vocabularies, sizes */
	bool gru;
	uint32_t units;		/* > 0: Bahdanau's attention, so wide */
	int src, tgt, enc_emb, dec_emb, att, cat, comb, logits, loss;
	int enc_seq, dec_seq;			/* the recurrent layers */
	struct vtpu_lstm_nodes enc, dec;
	struct vtpu_gru_nodes genc, gdec;
};

static struct vtpu_graph *build_s2s(struct s2s *m, bool attention)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x;

	if (!g)
		return NULL;
	m->src = vtpu_graph_tokens(g, m->ts);
	m->tgt = vtpu_graph_tokens(g, m->tt);
	m->enc_emb = vtpu_graph_embedding(g, m->src, m->vs, m->e);
	if (m->gru) {
		m->enc_seq = vtpu_graph_gru(g, m->enc_emb, m->h, -1, &m->genc);
		m->dec_emb = vtpu_graph_embedding(g, m->tgt, m->vt, m->e);
		m->dec_seq = vtpu_graph_gru(g, m->dec_emb, m->h, m->genc.h,
					    &m->gdec);
	} else {
		m->enc_seq = vtpu_graph_lstm(g, m->enc_emb, m->h, -1, -1,
					     &m->enc);
		m->dec_emb = vtpu_graph_embedding(g, m->tgt, m->vt, m->e);
		m->dec_seq = vtpu_graph_lstm(g, m->dec_emb, m->h, m->enc.h,
					     m->enc.c, &m->dec);
	}
	x = m->dec_seq;
	if (attention) {
		m->att = m->units ?
			vtpu_graph_additive_attention(g, m->dec_seq,
						      m->enc_seq, m->src,
						      m->units) :
			vtpu_graph_attention(g, m->dec_seq, m->enc_seq,
					     m->src);
		m->cat = vtpu_graph_concat(g, m->att, m->dec_seq);
		m->comb = vtpu_graph_dense(g, m->cat, m->a, VTPU_ACT_TANH);
		x = m->comb;
	}
	m->logits = vtpu_graph_dense(g, x, m->vt, VTPU_ACT_NONE);
	m->loss = vtpu_graph_loss(g, m->logits);
	if (m->loss < 0) {
		vtpu_graph_destroy(g);
		return NULL;
	}
	return g;
}

/* ---- the reference: double precision, batch-major, plain loops --------- */

static const float *P(const struct vtpu_graph *g, const float *state, int node,
		      int which)
{
	const struct vg_node *n = &g->nodes[node];
	int p = which == 0 ? n->weight : which == 1 ? n->weight2 : n->bias;

	return state + g->params[p].offset;
}

static double sigm(double x)
{
	return 1 / (1 + exp(-x));
}

/* y [T][H] (and the last h, c) of an LSTM over x [T][d] from h0, c0. */
static void ref_lstm(const float *k, const float *r, const float *bias,
		     const double *x, uint32_t T, uint32_t d, uint32_t H,
		     double *h, double *c, double *y)
{
	double *z = malloc(4 * H * sizeof(*z));
	uint32_t t, j, q;

	for (t = 0; t < T; t++) {
		for (j = 0; j < 4 * H; j++) {
			double s = bias[j];

			for (q = 0; q < d; q++)
				s += x[t * d + q] * k[q * 4 * H + j];
			for (q = 0; q < H; q++)
				s += h[q] * r[q * 4 * H + j];
			z[j] = s;
		}
		for (j = 0; j < H; j++) {
			double i = sigm(z[j]), f = sigm(z[H + j]);
			double gg = tanh(z[2 * H + j]), o = sigm(z[3 * H + j]);

			c[j] = f * c[j] + i * gg;
			h[j] = o * tanh(c[j]);
			y[t * H + j] = h[j];
		}
	}
	free(z);
}

/*
 * y [T][H] (and the last h) of a GRU over x [T][d] from h, as Keras'
 * GRUCell with reset_after=True: bias row 0 the input's, row 1 the
 * recurrent one; z = sigmoid(x_z + h_z), r = sigmoid(x_r + h_r),
 * h~ = tanh(x_h + r * h_h), h' = z * h + (1 - z) * h~.
 */
static void ref_gru(const float *k, const float *r, const float *bias,
		    const double *x, uint32_t T, uint32_t d, uint32_t H,
		    double *h, double *y)
{
	double *xp = malloc(3 * H * sizeof(*xp)), *hp = malloc(3 * H * 8);
	uint32_t t, j, q;

	for (t = 0; t < T; t++) {
		for (j = 0; j < 3 * H; j++) {
			xp[j] = bias[j];
			hp[j] = bias[3 * H + j];
			for (q = 0; q < d; q++)
				xp[j] += x[t * d + q] * k[q * 3 * H + j];
			for (q = 0; q < H; q++)
				hp[j] += h[q] * r[q * 3 * H + j];
		}
		for (j = 0; j < H; j++) {
			double z = sigm(xp[j] + hp[j]);
			double rr = sigm(xp[H + j] + hp[H + j]);
			double hh = tanh(xp[2 * H + j] + rr * hp[2 * H + j]);

			h[j] = z * h[j] + (1 - z) * hh;
			y[t * H + j] = h[j];
		}
	}
	free(xp);
	free(hp);
}

/* The encoder's or decoder's recurrent layer @node over x, from h (c). */
static void ref_rnn(const struct vtpu_graph *g, const struct s2s *m,
		    const float *st, int node, const double *x, uint32_t T,
		    double *h, double *c, double *y)
{
	if (m->gru)
		ref_gru(P(g, st, node, 0), P(g, st, node, 1), P(g, st, node, 2),
			x, T, m->e, m->h, h, y);
	else
		ref_lstm(P(g, st, node, 0), P(g, st, node, 1),
			 P(g, st, node, 2), x, T, m->e, m->h, h, c, y);
}

static void ref_embed(const float *table, const uint32_t *ids, uint32_t T,
		      uint32_t vocab, uint32_t d, double *x)
{
	uint32_t t, j;

	for (t = 0; t < T; t++)
		for (j = 0; j < d; j++)
			x[t * d + j] = ids[t] < vocab ? table[ids[t] * d + j] : 0;
}

/* The mean cross-entropy over the batch's target tokens that are not pads. */
/* v . tanh(W1 query + W2 key), from the definition */
static double ref_additive(const struct vtpu_graph *g, const struct s2s *m,
			   const float *st, const double *query,
			   const double *key)
{
	const float *w1 = P(g, st, m->att, 0), *w2 = P(g, st, m->att, 1);
	const float *v = P(g, st, m->att, 2);
	uint32_t u = m->units, c, j;
	double s = 0;

	for (c = 0; c < u; c++) {
		double z = 0;

		for (j = 0; j < m->h; j++)
			z += query[j] * w1[j * u + c] + key[j] * w2[j * u + c];
		s += v[c] * tanh(z);
	}
	return s;
}

static double ref_loss(const struct vtpu_graph *g, const struct s2s *m,
		       const float *st, uint32_t batch, const uint32_t *src,
		       const uint32_t *lab, bool attention)
{
	uint32_t H = m->h, b, t, j, q, valid = 0;
	double *xs = malloc(m->ts * m->e * 8), *xt = malloc(m->tt * m->e * 8);
	double *ys = malloc(m->ts * H * 8), *yt = malloc(m->tt * H * 8);
	double *hh = malloc(H * 8), *cc = malloc(H * 8);
	double *feat = malloc((2 * H + m->a) * 8), *sc = malloc(m->ts * 8);
	double total = 0;

	for (b = 0; b < batch; b++) {
		const uint32_t *s = src + b * m->ts, *tg = src + batch * m->ts +
							b * m->tt;
		uint32_t len = 0;

		while (len < m->ts && s[len] != VTPU_TOK_PAD)
			len++;
		memset(hh, 0, H * 8);
		memset(cc, 0, H * 8);
		ref_embed(P(g, st, m->enc_emb, 0), s, m->ts, m->vs, m->e, xs);
		ref_rnn(g, m, st, m->enc_seq, xs, m->ts, hh, cc, ys);
		ref_embed(P(g, st, m->dec_emb, 0), tg, m->tt, m->vt, m->e, xt);
		ref_rnn(g, m, st, m->dec_seq, xt, m->tt, hh, cc, yt);
		for (t = 0; t < m->tt; t++) {
			const double *in = yt + t * H;
			uint32_t width = H, y = lab[b * m->tt + t];
			double mx = -INFINITY, sum = 0, logit[64];
			const float *w, *bias;

			if (attention) {
				/* context: softmax over the first len keys */
				for (q = 0; q < len; q++) {
					sc[q] = m->units ?
						ref_additive(g, m, st, in,
							     ys + q * H) : 0;
					for (j = 0; j < H && !m->units; j++)
						sc[q] += in[j] * ys[q * H + j];
					mx = fmax(mx, sc[q]);
				}
				for (q = 0; q < len; q++)
					sum += sc[q] = exp(sc[q] - mx);
				for (j = 0; j < H; j++) {
					feat[j] = 0;
					for (q = 0; q < len; q++)
						feat[j] += sc[q] / sum *
							   ys[q * H + j];
					feat[H + j] = in[j];
				}
				w = P(g, st, m->comb, 0);
				bias = P(g, st, m->comb, 2);
				for (j = 0; j < m->a; j++) {
					double z = bias[j];

					for (q = 0; q < 2 * H; q++)
						z += feat[q] * w[q * m->a + j];
					feat[2 * H + j] = tanh(z);
				}
				in = feat + 2 * H;
				width = m->a;
			}
			if (y == VTPU_TOK_PAD)
				continue;
			w = P(g, st, m->logits, 0);
			bias = P(g, st, m->logits, 2);
			mx = -INFINITY;
			for (j = 0; j < m->vt; j++) {
				logit[j] = bias[j];
				for (q = 0; q < width; q++)
					logit[j] += in[q] * w[q * m->vt + j];
				mx = fmax(mx, logit[j]);
			}
			for (sum = 0, j = 0; j < m->vt; j++)
				sum += exp(logit[j] - mx);
			total += mx + log(sum) - logit[y];
			valid++;
		}
	}
	free(xs);
	free(xt);
	free(ys);
	free(yt);
	free(hh);
	free(cc);
	free(feat);
	free(sc);
	return total / valid;
}

/* Fill the state with weights of a trained network's scale. */
static void random_state(const struct vtpu_graph *g, float *st)
{
	int i;

	for (i = 0; i < g->nparams; i++) {
		const struct vg_param *p = &g->params[i];

		for (uint64_t j = 0; j < p->count; j++)
			st[p->offset + j] = (rnd(2001) / 1000.0f - 1.0f) *
					    (p->is_bias ? 0.2f : 0.6f);
	}
}

/* The compiled evaluation step's loss on the cpu backend. */
static int run_eval(struct vtpu_graph *g, uint32_t batch, const float *params,
		    const void *inputs, const uint32_t *labels, int threads,
		    float *loss, uint32_t *correct)
{
	const struct vg_optim opt = { .kind = VTPU_OPT_SGD };
	struct vtpu_bo state, work, in, lab, met;
	struct vtpu_bo *bufs[VG_NBUFS] = {
		[VG_BUF_STATE] = &state, [VG_BUF_WORK] = &work,
		[VG_BUF_IMAGES] = &in, [VG_BUF_LABELS] = &lab,
		[VG_BUF_METRICS] = &met,
	};
	struct vg_state_layout sl;
	struct vg_program prog;
	struct vg_runtime rt;
	uint64_t rows = vg_node_rows(&g->nodes[g->loss], batch);
	int ret, fence;

	ret = vg_runtime_open(&rt, "cpu", VTPU_CPU_GEMM_ENGINE, threads);
	if (ret)
		return ret;
	vg_set_layouts(g, false);
	vg_state_layout(g, VTPU_OPT_SGD, &sl);
	ret = vg_compile(g, VG_PROG_EVAL, batch, &opt, &prog);
	if (ret) {
		vg_runtime_close(&rt);
		return ret;
	}
	ret = vg_bo_create(&rt, sl.bytes, &state) ?:
	      vg_bo_create(&rt, prog.work_bytes, &work) ?:
	      vg_bo_create(&rt, vg_inputs_bytes(g, batch), &in) ?:
	      vg_bo_create(&rt, rows * 4, &lab) ?:
	      vg_bo_create(&rt, prog.metrics_stride, &met);
	if (!ret) {
		memcpy(state.map, params, g->nparam_floats * 4);
		memcpy(in.map, inputs, vg_inputs_bytes(g, batch));
		memcpy(lab.map, labels, rows * 4);
		ret = vg_run(&rt, &prog, bufs, NULL, 0, 1, &fence, NULL, 0) ?:
		      vg_wait(&rt, fence);
		memcpy(loss, (char *)met.map + VG_METRIC_LOSS, 4);
		memcpy(correct, (char *)met.map + VG_METRIC_CORRECT, 4);
	}
	vg_bo_destroy(&rt, &state);
	vg_bo_destroy(&rt, &work);
	vg_bo_destroy(&rt, &in);
	vg_bo_destroy(&rt, &lab);
	vg_bo_destroy(&rt, &met);
	vg_program_fini(&prog);
	vg_runtime_close(&rt);
	return ret;
}

/* Packed inputs and labels of a random batch; ids: [src | tgt] row-major. */
struct batch {
	uint32_t *ids, *labels, *packed_labels;
	void *inputs;
	int64_t valid;
};

static int make_batch(struct vtpu_graph *g, const struct s2s *m,
		      uint32_t batch, struct batch *bt)
{
	const uint32_t *parts[2];
	uint32_t b, t;

	bt->ids = malloc((m->ts + m->tt) * batch * 4);
	bt->labels = malloc(m->tt * batch * 4);
	bt->packed_labels = malloc(m->tt * batch * 4);
	bt->inputs = malloc(vtpu_graph_inputs_size(g, batch));
	if (!bt->ids || !bt->labels || !bt->packed_labels || !bt->inputs)
		return -ENOMEM;
	random_tokens(bt->ids, batch, m->ts, m->vs);
	random_tokens(bt->ids + batch * m->ts, batch, m->tt, m->vt);
	/* the decoder reads the target shifted right: labels are next tokens */
	for (b = 0; b < batch; b++)
		for (t = 0; t < m->tt; t++)
			bt->labels[b * m->tt + t] =
				t + 1 < m->tt ?
					bt->ids[batch * m->ts + b * m->tt + t + 1] :
					VTPU_TOK_PAD;
	parts[0] = bt->ids;
	parts[1] = bt->ids + batch * m->ts;
	if (vtpu_graph_pack_tokens(g, batch, parts, bt->inputs))
		return -EINVAL;
	bt->valid = vtpu_graph_pack_labels(g, batch, bt->labels,
					   bt->packed_labels);
	return bt->valid > 0 ? 0 : -EINVAL;
}

static void free_batch(struct batch *bt)
{
	free(bt->ids);
	free(bt->labels);
	free(bt->packed_labels);
	free(bt->inputs);
}

TEST(forward_matches_reference)
{
	static const int threads[] = { 1, 3 };
	int attention, k, cell;

	for (cell = 0; cell < 6; cell++) {
		struct s2s m = { .ts = 7, .tt = 5, .vs = 13, .vt = 11, .e = 6,
				 .h = 8, .a = 10, .gru = cell & 1,
				 .units = cell >> 2 ? 9 : 0 };
		struct vtpu_graph *g = build_s2s(&m, cell >> 1);
		uint32_t batch = 5, correct = 0;
		struct batch bt;
		float *st, loss, first = 0;
		double ref;

		attention = !!(cell >> 1);
		ASSERT_NE(NULL, g);
		st = calloc(g->nparam_floats, 4);
		ASSERT_NE(NULL, st);
		random_state(g, st);
		ASSERT_EQ(0, make_batch(g, &m, batch, &bt));
		ref = ref_loss(g, &m, st, batch, bt.ids, bt.labels, attention);
		for (k = 0; k < 2; k++) {
			ASSERT_EQ(0, run_eval(g, batch, st, bt.inputs,
					      bt.packed_labels, threads[k],
					      &loss, &correct));
			TH_LOG("%s, %s, %d threads: loss %.7f, reference "
			       "%.7f (%ld tokens, relative error %.1e)",
			       m.gru ? "GRU" : "LSTM", m.units ? "additive" :
			       attention ? "attention" : "no attention",
			       threads[k], loss,
			       ref, (long)bt.valid, fabs(loss - ref) / ref);
			EXPECT_GT(1e-5, fabs(loss - ref) / ref);
			EXPECT_GE((uint32_t)bt.valid, correct);
			/* the same bits whatever the threads */
			if (k)
				EXPECT_EQ(0, memcmp(&loss, &first, 4));
			first = loss;
		}
		free_batch(&bt);
		free(st);
		vtpu_graph_destroy(g);
	}
}

/* The encoder's last state is the decoder's initial one: LSTMs, GRUs. */
TEST(gradcheck_encoder_decoder_attention)
{
	int gru;

	for (gru = 0; gru < 4; gru++) {
		struct s2s m = { .ts = 6, .tt = 5, .vs = 9, .vt = 8, .e = 5,
				 .h = 6, .a = 7, .gru = gru & 1,
				 .units = gru >> 1 ? 4 : 0 };
		struct vtpu_graph *g = build_s2s(&m, true);
		struct batch bt;
		double rel = 1;

		ASSERT_NE(NULL, g);
		ASSERT_EQ(0, make_batch(g, &m, 3, &bt));
		EXPECT_EQ(0, vtpu_gradcheck(g, 3, bt.inputs, bt.packed_labels,
					    10, &rel));
		TH_LOG("embedding + %s (5-6 steps, state passed on) + masked "
		       "%s attention + concat + dense tanh: max relative "
		       "error %.2e", m.gru ? "GRU" : "LSTM",
		       m.units ? "additive" : "dot", rel);
		EXPECT_GT(2e-2, rel);
		free_batch(&bt);
		vtpu_graph_destroy(g);
	}
}

/*
 * vtpu_gradcheck of graph @g of one token input of @T steps and a
 * sequence loss on @logits (@vocab classes), on @batch random sentences
 * labelled with themselves; @what: the layers, for the log. Destroys @g.
 */
static void gradcheck_tokens(struct __test_metadata *_metadata,
			     struct vtpu_graph *g, int logits, uint32_t T,
			     uint32_t batch, uint32_t vocab, const char *what)
{
	uint32_t *ids = malloc(T * batch * 4), *lab = malloc(T * batch * 4);
	uint32_t *plab = malloc(T * batch * 4);
	const uint32_t *parts[1] = { ids };
	void *in = malloc(vtpu_graph_inputs_size(g, batch));
	double rel = 1;

	EXPECT_LE(0, vtpu_graph_loss(g, logits));
	random_tokens(ids, batch, T, vocab);
	memcpy(lab, ids, T * batch * 4);
	EXPECT_EQ(0, vtpu_graph_pack_tokens(g, batch, parts, in));
	EXPECT_LT(0, vtpu_graph_pack_labels(g, batch, lab, plab));
	EXPECT_EQ(0, vtpu_gradcheck(g, batch, in, plab, 12, &rel));
	TH_LOG("%s: max relative error %.2e", what, rel);
	EXPECT_GT(2e-2, rel);
	free(in);
	free(ids);
	free(lab);
	free(plab);
	vtpu_graph_destroy(g);
}

/* The LSTM's sequence output alone (no state passed on), after a dense. */
TEST(gradcheck_lstm_sequence)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x, tok;
	struct vtpu_lstm_nodes l;

	tok = vtpu_graph_tokens(g, 4);
	x = vtpu_graph_embedding(g, tok, 7, 3);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_TANH);
	ASSERT_LE(0, vtpu_graph_lstm(g, x, 4, -1, -1, &l));
	x = vtpu_graph_lstm(g, l.seq, 3, l.h, l.c, NULL);
	ASSERT_GT(0, x);	/* an initial state of other units */
	x = vtpu_graph_lstm(g, l.seq, 4, l.h, l.c, NULL);
	ASSERT_LE(0, x);
	x = vtpu_graph_dense(g, x, 7, VTPU_ACT_NONE);
	gradcheck_tokens(_metadata, g, x, 4, 4, 7,
			 "embedding + dense tanh + two stacked LSTMs");
}

/*
 * Stacked GRUs: the first one's sequence and last h feed the second (its
 * initial state), whose last h is an output too; and the gradient of a
 * GRU's initial h that comes from a dense layer.
 */
TEST(gradcheck_gru_stacked)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x, tok, h0, y;
	struct vtpu_gru_nodes l, l2;

	tok = vtpu_graph_tokens(g, 5);
	x = vtpu_graph_embedding(g, tok, 7, 3);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_TANH);
	ASSERT_LE(0, vtpu_graph_gru(g, x, 4, -1, &l));
	h0 = vtpu_graph_dense(g, l.h, 4, VTPU_ACT_TANH);
	ASSERT_LE(0, vtpu_graph_gru(g, l.seq, 4, h0, &l2));
	x = vtpu_graph_gru(g, l2.seq, 4, l2.h, NULL);
	ASSERT_LE(0, x);
	y = vtpu_graph_concat(g, x, l.seq);
	x = vtpu_graph_dense(g, y, 7, VTPU_ACT_NONE);
	gradcheck_tokens(_metadata, g, x, 5, 4, 7,
			 "embedding + dense tanh + three stacked GRUs (5 "
			 "steps, initial h from a dense and from a GRU)");
}

/*
 * Greedy decoding in one submission per batch against the same search
 * done from outside: predict the whole target with the ids chosen so far,
 * take step t's most probable id, feed it to step t + 1. Six sentences in
 * batches of four: a short last batch too. With LSTMs or GRUs.
 */
static void check_decode(struct __test_metadata *_metadata, bool gru,
			 uint32_t units)
{
	struct s2s s = { .ts = 7, .tt = 6, .vs = 13, .vt = 11, .e = 6, .h = 8,
			 .a = 10, .gru = gru, .units = units };
	struct vtpu_graph *g = build_s2s(&s, true);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 4, .seed = 3,
			  .threads = 2);
	uint32_t n = 6, T = s.tt, i, t, k, differ = 0, ended = 0;
	uint32_t *src = malloc(n * s.ts * 4), *dec = malloc(n * T * 4);
	uint32_t *out = malloc(n * T * 4);
	float *probs = malloc(n * T * s.vt * 4);
	const uint32_t *in[2] = { src, dec };
	struct vtpu_model *m;

	ASSERT_NE(NULL, g);
	m = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &co)) TH_LOG("%s",
							vtpu_model_error(m));
	/* a GRU's layer type; Keras' count: 3 (6 * 8 + 8 * 8 + 2 * 8) */
	if (gru && !units) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		ASSERT_NE(NULL, f);
		vtpu_model_summary(m, f);
		fclose(f);
		EXPECT_NE(NULL, strstr(text, "gru_1 (GRU)")) TH_LOG("%s", text);
		EXPECT_NE(NULL, strstr(text, "(None, 6, 8)              384"))
			TH_LOG("%s", text);
		EXPECT_EQ(NULL, strstr(text, "gru/h"));
		free(text);
	}
	/* weights of a trained network's scale: varied choices */
	for (k = 0; k < (uint32_t)vtpu_model_num_weights(m); k++) {
		struct vtpu_weight_info wi;
		float *w;

		ASSERT_EQ(0, vtpu_model_weight_info(m, k, &wi));
		w = malloc(wi.count * 4);
		for (i = 0; i < wi.count; i++)	/* biases 0: no favourite */
			w[i] = wi.ndim == 1 ? 0.0f :
					      (rnd(2001) / 1000.0f - 1.0f) * 1.5f;
		ASSERT_EQ(0, vtpu_model_set_weights(m, k, w, wi.count));
		free(w);
	}
	random_tokens(src, n, s.ts, s.vs);
	ASSERT_EQ(0, vtpu_model_decode(m, s.tgt, in, n, out))
		TH_LOG("%s", vtpu_model_error(m));
	memset(dec, 0, n * T * 4);
	for (i = 0; i < n; i++)
		dec[i * T] = VTPU_TOK_START;
	for (t = 0; t < T; t++) {
		ASSERT_EQ(0, vtpu_model_predict_tokens(m, in, n, probs));
		for (i = 0; i < n; i++) {
			const float *p = probs + ((size_t)i * T + t) * s.vt;
			uint32_t best = 0;

			for (k = 1; k < s.vt; k++)
				if (p[k] > p[best])
					best = k;
			differ += best != out[i * T + t];
			ended += best == VTPU_TOK_END;
			if (t + 1 < T)
				dec[i * T + t + 1] = best;
		}
	}
	for (i = 1, k = 0; i < n * T; i++)
		k += out[i] != out[0];
	TH_LOG("%s: %u of %u ids differ; %u <end>s; %u ids not the first one",
	       gru ? "GRU" : "LSTM", differ, n * T, ended, k);
	EXPECT_EQ(0u, differ);
	EXPECT_LT(n, k);	/* a choice that depends on the input */
	/* not a decoder: the source; a sequence as long as no output */
	EXPECT_EQ(-EINVAL, vtpu_model_decode(m, s.enc_emb, in, n, out));
	EXPECT_EQ(-EINVAL, vtpu_model_decode(m, s.src, in, n, out));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "as long as"));
	vtpu_model_destroy(m);
	free(src);
	free(dec);
	free(out);
	free(probs);
}

TEST(decode_matches_stepwise_predict)
{
	check_decode(_metadata, false, 0);
}

/* Bahdanau's attention: its keys projected once, before the first step */
TEST(decode_additive_matches_stepwise_predict)
{
	check_decode(_metadata, false, 5);
	check_decode(_metadata, true, 12);
}

TEST(decode_gru_matches_stepwise_predict)
{
	check_decode(_metadata, true, 0);
}

/* Decoding runs the layers after the decoder's input step by step only. */
/*
 * Decoding runs the layers after the decoder's input step by step, so
 * step t may read only steps up to t: a ReLU (not a step-wise op here),
 * attention over the decoder's own steps (step t would read later keys),
 * a dense layer on the decoder's last state (it exists after the last
 * step) are refused, not run on what is not written yet.
 */
enum { CANNOT_RELU, CANNOT_SELF_ATTENTION, CANNOT_LAST_STATE, CANNOT_N };

TEST(decode_rejects_what_cannot_step)
{
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 2, .threads = 1);
	uint32_t ids[2 * 4] = { 1, 5, 2, 0, 1, 6, 7, 2 }, out[8];
	const uint32_t *in[1] = { ids };
	int k;

	for (k = 0; k < CANNOT_N; k++) {
		struct vtpu_graph *g = vtpu_graph_create();
		struct vtpu_lstm_nodes l;
		struct vtpu_model *m;
		int tok, x;

		tok = vtpu_graph_tokens(g, 4);
		x = vtpu_graph_embedding(g, tok, 9, 3);
		if (k == CANNOT_RELU) {
			x = vtpu_graph_relu(g, x);
		} else {
			ASSERT_LE(0, vtpu_graph_lstm(g, x, 4, -1, -1, &l));
			x = k == CANNOT_SELF_ATTENTION ?
				    vtpu_graph_attention(g, l.seq, l.seq, tok) :
				    vtpu_graph_concat(
					    g, l.seq, vtpu_graph_lstm(g, l.seq, 4,
								      l.h, l.c,
								      NULL));
		}
		if (k == CANNOT_LAST_STATE) {
			int h = vtpu_graph_dense(g, l.h, 3, VTPU_ACT_TANH);

			ASSERT_LE(0, h);
		}
		x = vtpu_graph_dense(g, x, 9, VTPU_ACT_NONE);
		ASSERT_LE(0, vtpu_graph_loss(g, x));
		m = vtpu_model_create_graph(g);
		ASSERT_NE(NULL, m);
		ASSERT_EQ(0, vtpu_model_compile(m, &co));
		EXPECT_EQ(-EOPNOTSUPP, vtpu_model_decode(m, tok, in, 2, out))
			TH_LOG("case %d", k);
		EXPECT_NE(NULL, strstr(vtpu_model_error(m), "step by step"))
			TH_LOG("%s", vtpu_model_error(m));
		vtpu_model_destroy(m);
	}
}

/*
 * A layer whose output nothing on the way to the loss reads (here a dense
 * layer on the encoder's last h that nothing uses) has zero gradients:
 * training leaves it as it was, rather than applying whatever the
 * activation arena held where its gradients would be.
 */
TEST(dead_layer_not_updated)
{
	struct vtpu_graph *g = vtpu_graph_create();
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 4, .threads = 2);
	VTPU_FIT_OPTS(fo, .epochs = 2);
	uint32_t ids[8 * 5], lab[8 * 5], i;
	struct vtpu_token_dataset ds = { .n = 8, .inputs = { ids },
					 .labels = lab };
	struct vtpu_lstm_nodes l;
	float before[8 * 3], after[8 * 3];
	struct vtpu_weight_info wi;
	struct vtpu_model *m;
	int tok, x, dead, k, wk = -1;

	tok = vtpu_graph_tokens(g, 5);
	x = vtpu_graph_embedding(g, tok, 9, 4);
	ASSERT_LE(0, vtpu_graph_lstm(g, x, 8, -1, -1, &l));
	dead = vtpu_graph_dense(g, l.h, 3, VTPU_ACT_TANH);
	ASSERT_LE(0, dead);
	x = vtpu_graph_dense(g, l.seq, 9, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	m = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	random_tokens(ids, 8, 5, 9);
	for (i = 0; i < 8 * 5; i++)
		lab[i] = ids[i];
	for (k = 0; k < vtpu_model_num_weights(m); k++) {
		ASSERT_EQ(0, vtpu_model_weight_info(m, k, &wi));
		if (!strcmp(wi.name, "dense/kernel"))
			wk = k;
	}
	ASSERT_LE(0, wk);
	ASSERT_EQ(0, vtpu_model_weight_info(m, wk, &wi));
	ASSERT_EQ(0, vtpu_model_get_weights(m, wk, before, wi.count));
	ASSERT_EQ(0, vtpu_model_fit_tokens(m, &ds, &fo))
		TH_LOG("%s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_get_weights(m, wk, after, wi.count));
	EXPECT_EQ(0, memcmp(before, after, wi.count * 4));
	vtpu_model_destroy(m);
}

/*
 * The device copies of token data are packed per batch: a new batch size
 * packs them anew, into room for its own number of batches.
 */
TEST(token_sets_follow_the_batch)
{
	struct s2s s = { .ts = 6, .tt = 5, .vs = 9, .vt = 8, .e = 4, .h = 6,
			 .a = 5 };
	struct vtpu_graph *g = build_s2s(&s, true);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 16, .threads = 2);
	struct vtpu_token_dataset ds = { .n = 37 };
	double loss[3], acc;
	struct vtpu_model *m;
	struct batch bt;
	uint32_t i, *lab = malloc(37 * 5 * 4);

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, make_batch(g, &s, 37, &bt));
	/* row-major labels for the model API (make_batch packs them) */
	for (i = 0; i < 37 * 5; i++)
		lab[i] = bt.labels[i];
	ds.inputs[0] = bt.ids;
	ds.inputs[1] = bt.ids + 37 * s.ts;
	ds.labels = lab;
	m = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss[0], &acc));
	ASSERT_EQ(0, vtpu_model_set_batch(m, 1));
	ASSERT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss[1], &acc));
	ASSERT_EQ(0, vtpu_model_set_batch(m, 5));
	ASSERT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss[2], &acc));
	/* a mean over the same tokens, however they are batched */
	EXPECT_GT(1e-5, fabs(loss[1] - loss[0]) / loss[0]);
	EXPECT_GT(1e-5, fabs(loss[2] - loss[0]) / loss[0]);
	TH_LOG("loss in batches of 16, 1, 5: %.7f %.7f %.7f", loss[0],
	       loss[1], loss[2]);
	free_batch(&bt);
	free(lab);
	vtpu_model_destroy(m);
}

/* ---- length buckets ------------------------------------------------------ */

/*
 * An encoder-decoder whose padding steps count for nothing in either
 * input: the decoder starts from zeros (not the encoder's last state, which
 * saw every padding step) and the attention masks the source's padding.
 */
static struct vtpu_graph *build_bucketable(bool gru, uint32_t ts, uint32_t tt,
					   int *tgt)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int src, enc, dec, x;

	src = vtpu_graph_tokens(g, ts);
	*tgt = vtpu_graph_tokens(g, tt);
	x = vtpu_graph_embedding(g, src, 9, 4);
	enc = gru ? vtpu_graph_gru(g, x, 6, -1, NULL) :
		    vtpu_graph_lstm(g, x, 6, -1, -1, NULL);
	x = vtpu_graph_embedding(g, *tgt, 8, 4);
	dec = gru ? vtpu_graph_gru(g, x, 6, -1, NULL) :
		    vtpu_graph_lstm(g, x, 6, -1, -1, NULL);
	x = vtpu_graph_attention(g, dec, enc, src);
	x = vtpu_graph_concat(g, x, dec);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_TANH);
	x = vtpu_graph_dense(g, x, 8, VTPU_ACT_NONE);
	if (vtpu_graph_loss(g, x) < 0) {
		vtpu_graph_destroy(g);
		return NULL;
	}
	return g;
}

/*
 * Rows of ids in [2, vocab), @min..@max long, longer with the row (so that
 * batches in order fall in different buckets), the rest VTPU_TOK_PAD.
 */
static void short_rows(uint32_t *ids, uint32_t n, uint32_t T, uint32_t vocab,
		       uint32_t min, uint32_t max, uint32_t *seed)
{
	uint32_t i, t, len;

	for (i = 0; i < n; i++) {
		len = min + i * (max - min + 1) / n;
		for (t = 0; t < T; t++) {
			*seed = *seed * 1103515245u + 12345u;
			ids[i * T + t] = t < len ? 2 + (*seed >> 16) %
						   (vocab - 2) :
						   VTPU_TOK_PAD;
		}
	}
}

/* Labels of target rows: the next token, padding past the end. */
static void next_token_labels(uint32_t *lab, const uint32_t *tgt,
			      uint32_t n, uint32_t T)
{
	uint32_t i, t;

	for (i = 0; i < n; i++)
		for (t = 0; t < T; t++)
			lab[i * T + t] = t + 1 < T ? tgt[i * T + t + 1] :
						     VTPU_TOK_PAD;
}

/* The largest relative difference of two models' weights; bitwise: 0. */
static double weights_diff(struct vtpu_model *a, struct vtpu_model *b)
{
	struct vtpu_weight_info wi;
	double worst = 0, big;
	float *x, *y;
	uint64_t j;
	int k;

	for (k = 0; k < vtpu_model_num_weights(a); k++) {
		vtpu_model_weight_info(a, k, &wi);
		x = malloc(wi.count * 4);
		y = malloc(wi.count * 4);
		vtpu_model_get_weights(a, k, x, wi.count);
		vtpu_model_get_weights(b, k, y, wi.count);
		for (j = 0, big = 1e-30; j < wi.count; j++)
			big = fmax(big, fabs(x[j]));
		for (j = 0; j < wi.count; j++)
			worst = fmax(worst, fabs(x[j] - y[j]) / big);
		free(x);
		free(y);
	}
	return worst;
}

/* @dst's weights := @src's. */
static int copy_weights(struct vtpu_model *dst, struct vtpu_model *src)
{
	struct vtpu_weight_info wi;
	int k, ret = 0;
	float *x;

	for (k = 0; k < vtpu_model_num_weights(src) && !ret; k++) {
		vtpu_model_weight_info(src, k, &wi);
		x = malloc(wi.count * 4);
		ret = x ? vtpu_model_get_weights(src, k, x, wi.count) : -ENOMEM;
		if (!ret)
			ret = vtpu_model_set_weights(dst, k, x, wi.count);
		free(x);
	}
	return ret;
}

/*
 * A batch run through its bucket's program gives what it gives padded to
 * the full length: the loss, the weights after training (Adam, two
 * epochs), the predictions and the decoded ids; and the programs are
 * compiled once per bucket: a second pass over the same batches compiles
 * nothing.
 */
static void check_buckets(struct __test_metadata *_metadata, bool gru)
{
	enum { N = 37, TS = 12, TT = 16 };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 8, .threads = 1,
			  .optimizer = VTPU_OPT_ADAM, .seed = 5);
	struct vtpu_fit_opts fo = { .sz = sizeof(fo), .epochs = 2,
				    .no_shuffle = true };
	static uint32_t src[N * TS], tgt[N * TT], lab[N * TT];
	static uint32_t out[2][N * TT];
	static float probs[2][N * TT * 8];
	struct vtpu_token_dataset ds = { .n = N };
	const uint32_t *in[2] = { src, tgt };
	struct vtpu_model *m[2];
	struct vtpu_graph *g;
	double loss[2], acc[2], d;
	uint64_t compiled;
	uint32_t seed = 7, i;
	int tgt_node, w;

	short_rows(src, N, TS, 9, 1, 11, &seed);
	short_rows(tgt, N, TT, 8, 1, 9, &seed);
	next_token_labels(lab, tgt, N, TT);
	ds.inputs[0] = src;
	ds.inputs[1] = tgt;
	ds.labels = lab;
	for (w = 0; w < 2; w++) {
		g = build_bucketable(gru, TS, TT, &tgt_node);
		ASSERT_NE(NULL, g);
		/* both inputs may run shorter in this graph */
		ASSERT_EQ(3u, vg_bucket_slots(g));
		m[w] = vtpu_model_create_graph(g);
		ASSERT_NE(NULL, m[w]);
		ASSERT_EQ(0, vtpu_model_compile(m[w], &co));
		/* model 0 pads every batch to full length, 1 to buckets of 4 */
		ASSERT_EQ(0, vtpu_model_set_bucket_width(m[w], w ? 4 : 0));
		ASSERT_EQ(0, vtpu_model_evaluate_tokens(m[w], &ds, &loss[w],
							&acc[w]))
			TH_LOG("%s", vtpu_model_error(m[w]));
	}
	EXPECT_TRUE(fabs(loss[1] - loss[0]) / loss[0] < 1e-6);
	EXPECT_EQ(acc[0], acc[1]);
	/* the full-length programs: train and eval; then 2 lengths x 2 sizes */
	EXPECT_LT(vtpu_model_programs_compiled(m[0]),
		  vtpu_model_programs_compiled(m[1]));
	for (w = 0; w < 2; w++) {
		ASSERT_EQ(0, vtpu_model_fit_tokens(m[w], &ds, &fo))
			TH_LOG("%s", vtpu_model_error(m[w]));
	}
	d = weights_diff(m[0], m[1]);
	EXPECT_TRUE(d < 1e-6);
	TH_LOG("%s: loss %.9f (full) %.9f (buckets); weights after 2 epochs differ by %.3g relative",
	       gru ? "gru" : "lstm", loss[0], loss[1], d);
	/* the same batches again: nothing new to compile */
	compiled = vtpu_model_programs_compiled(m[1]);
	fo.epochs = 1;
	ASSERT_EQ(0, vtpu_model_fit_tokens(m[1], &ds, &fo));
	ASSERT_EQ(0, vtpu_model_fit_tokens(m[0], &ds, &fo));
	EXPECT_EQ(compiled, vtpu_model_programs_compiled(m[1]));
	/*
	 * Shuffled, the examples go into batches by bucket: other batches
	 * than at full length. Then the same weights in both models give the
	 * same evaluation, predictions and decoded ids.
	 */
	fo.no_shuffle = false;
	ASSERT_EQ(0, vtpu_model_fit_tokens(m[1], &ds, &fo));
	ASSERT_EQ(0, copy_weights(m[0], m[1]));
	for (w = 0; w < 2; w++) {
		ASSERT_EQ(0, vtpu_model_evaluate_tokens(m[w], &ds, &loss[w],
							&acc[w]));
		ASSERT_EQ(0, vtpu_model_predict_tokens(m[w], in, N, probs[w]));
		ASSERT_EQ(0, vtpu_model_decode(m[w], tgt_node, in, N, out[w]))
			TH_LOG("%s", vtpu_model_error(m[w]));
	}
	EXPECT_TRUE(fabs(loss[1] - loss[0]) / loss[0] < 1e-6);
	for (i = 0; i < N * TT * 8; i++) {
		ASSERT_TRUE(fabs(probs[0][i] - probs[1][i]) < 1e-6);
	}
	EXPECT_EQ(0, memcmp(out[0], out[1], sizeof(out[0])));
	TH_LOG("%llu programs with buckets, %llu without",
	       (unsigned long long)vtpu_model_programs_compiled(m[1]),
	       (unsigned long long)vtpu_model_programs_compiled(m[0]));
	/* a few buckets x (full batch, remainder) x kinds: few programs */
	EXPECT_GE(4 * 2 * 4 + 2, vtpu_model_programs_compiled(m[1]));
	vtpu_model_destroy(m[0]);
	vtpu_model_destroy(m[1]);
}

TEST(buckets_match_full_length_lstm)
{
	check_buckets(_metadata, false);
}

TEST(buckets_match_full_length_gru)
{
	check_buckets(_metadata, true);
}

/* LSTM_CELL and LSTM_CELL_GRAD commands, and ELEMENTWISE ones, of @kind */
static void count_lstm_cmds(struct vtpu_graph *g, enum vg_prog_kind kind,
			    uint32_t *cells, uint32_t *ew)
{
	const struct vg_optim opt = { .kind = VTPU_OPT_ADAM };
	const struct vtpu_cmd_hdr *h;
	struct vg_program prog;
	uint32_t pos = 0;

	*cells = *ew = 0;
	vg_set_layouts(g, false);
	if (vg_compile(g, kind, 16, &opt, &prog))
		return;
	while ((h = vtpu_engine_next(prog.cb.data, prog.cb.size, &pos))) {
		*cells += h->opcode == VTPU_OP_LSTM_CELL ||
			  h->opcode == VTPU_OP_LSTM_CELL_GRAD;
		*ew += h->opcode == VTPU_OP_ELEMENTWISE;
	}
	vg_program_fini(&prog);
}

/*
 * The translation benchmark's model (tools/bench_train.c's translate:
 * Luong attention, H 128) trained a few steps with the fused LSTM cell
 * and with VTPU_UNFUSED_LSTM=1 (the ELEMENTWISE sequence): the same
 * weights, loss and decoded ids, bit for bit. The variable is read at
 * compile: set for everything the unfused model does.
 */
TEST(fused_lstm_same_bits)
{
	enum { N = 40, TS = 24, TT = 12 };
	static uint32_t src[N * TS], tgt[N * TT], lab[N * TT];
	static uint32_t out[2][N * TT];
	struct vtpu_token_dataset ds = { .n = N };
	const uint32_t *in[2] = { src, tgt };
	struct vtpu_fit_opts fo = { .sz = sizeof(fo), .epochs = 2 };
	uint32_t seed = 11, cells[2], ew[2], k;
	struct vtpu_model *m[2];
	double loss[2], acc[2];
	float first = 0;
	int w;

	short_rows(src, N, TS, 48, 3, TS, &seed);
	short_rows(tgt, N, TT, 16, 2, TT, &seed);
	next_token_labels(lab, tgt, N, TT);
	ds.inputs[0] = src;
	ds.inputs[1] = tgt;
	ds.labels = lab;
	for (w = 0; w < 2; w++) {	/* 0: fused, 1: unfused */
		struct s2s s = { .ts = TS, .tt = TT, .vs = 48, .vt = 16,
				 .e = 32, .h = 128, .a = 128 };
		VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 16, .seed = 9,
				  .threads = 2, .optimizer = VTPU_OPT_ADAM);
		struct vtpu_graph *g = build_s2s(&s, true);

		ASSERT_NE(NULL, g);
		if (w)
			ASSERT_EQ(0, setenv("VTPU_UNFUSED_LSTM", "1", 1));
		count_lstm_cmds(g, VG_PROG_TRAIN, &cells[w], &ew[w]);
		m[w] = vtpu_model_create_graph(g);
		ASSERT_NE(NULL, m[w]);
		ASSERT_EQ(0, vtpu_model_compile(m[w], &co))
			TH_LOG("%s", vtpu_model_error(m[w]));
		ASSERT_EQ(0, vtpu_model_fit_tokens(m[w], &ds, &fo))
			TH_LOG("%s", vtpu_model_error(m[w]));
		ASSERT_EQ(0, vtpu_model_evaluate_tokens(m[w], &ds, &loss[w],
							&acc[w]));
		ASSERT_EQ(0, vtpu_model_decode(m[w], s.tgt, in, N, out[w]))
			TH_LOG("%s", vtpu_model_error(m[w]));
		unsetenv("VTPU_UNFUSED_LSTM");
	}
	TH_LOG("train program: %u LSTM cell commands and %u ELEMENTWISE fused, %u and %u unfused; loss %.9g and %.9g",
	       cells[0], ew[0], cells[1], ew[1], loss[0], loss[1]);
	/* a cell and its gradient per step of both LSTMs */
	EXPECT_EQ(2u * (TS + TT), cells[0]);
	EXPECT_EQ(0u, cells[1]);
	EXPECT_LE(ew[0] + 20u * (TS + TT), ew[1]);
	EXPECT_EQ(0, memcmp(&loss[0], &loss[1], sizeof(loss[0])));
	EXPECT_EQ(acc[0], acc[1]);
	EXPECT_EQ(0.0, weights_diff(m[0], m[1]));
	EXPECT_EQ(0, memcmp(out[0], out[1], sizeof(out[0])));
	for (k = 1; k < N * TT; k++)	/* the ids depend on the input */
		first += out[0][k] != out[0][0];
	EXPECT_LT(0, first);
	vtpu_model_destroy(m[0]);
	vtpu_model_destroy(m[1]);
}

/*
 * Leave the heap's free memory full of garbage that differs from block to
 * block and from @seed to @seed: what malloc() hands out next is what a
 * second model in a long-lived process gets (vtpu_train trains on
 * /dev/vtpu0, then on the cpu backend, in one process). Blocks of many
 * sizes below the mmap threshold, freed in an order that leaves both
 * binned chunks and a dirty top.
 */
static void poison_heap(uint32_t seed)
{
	enum { NBLK = 96 };
	static void *blk[NBLK];
	size_t size;
	uint32_t i, j;

	for (i = 0; i < NBLK; i++) {
		size = 16 + (size_t)(i % 24) * (i % 24) * 48;
		blk[i] = malloc(size);
		if (!blk[i])
			continue;
		for (j = 0; j < size / 4; j++) {
			seed = seed * 1103515245u + 12345u;
			((uint32_t *)blk[i])[j] = seed >> 8;
		}
	}
	for (i = 0; i < NBLK; i += 2)
		free(blk[i]);
	for (i = 1; i < NBLK; i += 2)
		free(blk[i]);
}

/*
 * A shuffled epoch in buckets is a function of the seed and the data:
 * two models of the same seed train to the same bits whatever the heap
 * held before. The bucket keys once had entries past the graph's token
 * inputs left as malloc() found them, and the examples were ordered by
 * those: the device and the cpu backend trained on different batches.
 */
TEST(buckets_shuffle_ignores_stale_memory)
{
	enum { N = 37, TS = 12, TT = 16 };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 8, .threads = 1,
			  .optimizer = VTPU_OPT_ADAM, .seed = 9);
	struct vtpu_fit_opts fo = { .sz = sizeof(fo), .epochs = 2 };
	static uint32_t src[N * TS], tgt[N * TT], lab[N * TT];
	struct vtpu_token_dataset ds = { .n = N };
	struct vtpu_model *m[2];
	uint32_t seed = 4;
	double d;
	int tgt_node, w;

	short_rows(src, N, TS, 9, 1, 11, &seed);
	short_rows(tgt, N, TT, 8, 1, 15, &seed);
	next_token_labels(lab, tgt, N, TT);
	ds.inputs[0] = src;
	ds.inputs[1] = tgt;
	ds.labels = lab;
	for (w = 0; w < 2; w++) {
		poison_heap(w ? 0x5eed : 0xbad);
		m[w] = vtpu_model_create_graph(build_bucketable(false, TS, TT,
								&tgt_node));
		ASSERT_NE(NULL, m[w]);
		ASSERT_EQ(0, vtpu_model_compile(m[w], &co));
		ASSERT_EQ(0, vtpu_model_set_bucket_width(m[w], 4));
		ASSERT_EQ(0, vtpu_model_fit_tokens(m[w], &ds, &fo))
			TH_LOG("%s", vtpu_model_error(m[w]));
	}
	d = weights_diff(m[0], m[1]);
	EXPECT_EQ(0, d)
		TH_LOG("weights differ by %.3g relative", d);
	vtpu_model_destroy(m[0]);
	vtpu_model_destroy(m[1]);
}

/*
 * More buckets than the cache holds (a width of 1, batches of one
 * example): the least recently used programs go, and the loss is still
 * the one at full length.
 */
TEST(buckets_outnumber_the_cache)
{
	enum { N = 80, TS = 12, TT = 16 };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 1, .threads = 1);
	static uint32_t src[N * TS], tgt[N * TT], lab[N * TT];
	struct vtpu_token_dataset ds = { .n = N };
	struct vtpu_model *m;
	uint32_t seed = 3;
	double loss[2], acc[2];
	int tgt_node, w;

	short_rows(src, N, TS, 9, 1, 12, &seed);
	short_rows(tgt, N, TT, 8, 1, 15, &seed);
	next_token_labels(lab, tgt, N, TT);
	ds.inputs[0] = src;
	ds.inputs[1] = tgt;
	ds.labels = lab;
	m = vtpu_model_create_graph(build_bucketable(false, TS, TT,
						     &tgt_node));
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	for (w = 0; w < 2; w++) {
		ASSERT_EQ(0, vtpu_model_set_bucket_width(m, w));
		ASSERT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss[w],
							&acc[w]))
			TH_LOG("%s", vtpu_model_error(m));
	}
	/* a program per distinct lengths: more than the 24 cached */
	EXPECT_LT(24, vtpu_model_programs_compiled(m));
	EXPECT_TRUE(fabs(loss[1] - loss[0]) / loss[0] < 1e-6);
	EXPECT_EQ(acc[0], acc[1]);
	TH_LOG("%llu programs compiled; loss %.9f (full) %.9f (width 1)",
	       (unsigned long long)vtpu_model_programs_compiled(m), loss[0],
	       loss[1]);
	vtpu_model_destroy(m);
}

/*
 * Where padding steps do count (the encoder's last state starts the
 * decoder), the source keeps its full length: only the target runs in
 * buckets, and the results still agree.
 */
TEST(buckets_keep_what_padding_changes)
{
	struct s2s s = { .ts = 6, .tt = 5, .vs = 9, .vt = 8, .e = 4, .h = 6,
			 .a = 5 };
	struct vtpu_graph *g = build_s2s(&s, true);

	ASSERT_NE(NULL, g);
	EXPECT_EQ(2u, vg_bucket_slots(g));
	vtpu_graph_destroy(g);
}

/*
 * Token data the model cannot take is refused before anything runs, with
 * the example and step named: an id past its embedding's vocabulary, a
 * label past the classes, a missing input, an empty set; and the calls
 * for images refuse a model of token inputs.
 */
TEST(token_data_rejections)
{
	struct s2s s = { .ts = 6, .tt = 5, .vs = 9, .vt = 8, .e = 4, .h = 6,
			 .a = 5 };
	struct vtpu_graph *g = build_s2s(&s, true);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 4, .threads = 1);
	struct vtpu_token_dataset ds = { .n = 6 };
	struct vtpu_dataset img = { .n = 1, .height = 1, .width = 1,
				    .channels = 1 };
	uint32_t lab[6 * 5] = { 0 }, keep, out[6 * 5];
	double loss, acc;
	struct vtpu_model *m;
	struct batch bt;

	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, make_batch(g, &s, 6, &bt));
	memcpy(lab, bt.labels, sizeof(lab));
	ds.inputs[0] = bt.ids;
	ds.inputs[1] = bt.ids + 6 * s.ts;
	ds.labels = lab;
	m = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, m);
	/* not compiled yet */
	EXPECT_EQ(-EINVAL, vtpu_model_evaluate_tokens(m, &ds, &loss, &acc));
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss, &acc));

	keep = bt.ids[2 * s.ts + 3];
	bt.ids[2 * s.ts + 3] = s.vs;	/* past the source vocabulary */
	EXPECT_EQ(-EINVAL, vtpu_model_fit_tokens(m, &ds, NULL));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m),
			       "token input 0, example 2, step 3: id 9 is not below"))
		TH_LOG("%s", vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_decode(m, s.tgt, ds.inputs, 6, out));
	bt.ids[2 * s.ts + 3] = keep;

	lab[4 * 5 + 1] = s.vt;		/* past the classes */
	EXPECT_EQ(-EINVAL, vtpu_model_evaluate_tokens(m, &ds, &loss, &acc));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m),
			       "example 4, step 1 is not below 8 classes"))
		TH_LOG("%s", vtpu_model_error(m));
	lab[4 * 5 + 1] = 0;

	ds.inputs[1] = NULL;
	EXPECT_EQ(-EINVAL, vtpu_model_fit_tokens(m, &ds, NULL));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "token input 1: no data"));
	ds.inputs[1] = bt.ids + 6 * s.ts;
	ds.n = 0;
	EXPECT_EQ(-EINVAL, vtpu_model_fit_tokens(m, &ds, NULL));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "empty"));
	ds.n = 6;
	EXPECT_EQ(-EINVAL, vtpu_model_evaluate(m, &img, &loss, &acc));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "token inputs"));
	/* nothing was lost: the set still evaluates */
	EXPECT_EQ(0, vtpu_model_evaluate_tokens(m, &ds, &loss, &acc));
	free_batch(&bt);
	vtpu_model_destroy(m);
}

TEST(rejections)
{
	struct vtpu_graph *g = vtpu_graph_create();
	struct vtpu_graph *img = vtpu_graph_create();
	struct vtpu_lstm_nodes l;
	struct vtpu_gru_nodes gr;
	int src, tgt, e, d, x, cat, seq2;

	ASSERT_NE(NULL, g);
	ASSERT_NE(NULL, img);
	EXPECT_EQ(-EINVAL, vtpu_graph_tokens(g, 0));
	src = vtpu_graph_tokens(g, 6);
	tgt = vtpu_graph_tokens(g, 4);
	ASSERT_LE(0, tgt);
	EXPECT_EQ(-EEXIST, vtpu_graph_input(g, 28, 28, 1));
	ASSERT_LE(0, vtpu_graph_input(img, 4, 4, 1));
	EXPECT_EQ(-EEXIST, vtpu_graph_tokens(img, 4));
	/* an embedding takes token ids; nothing else does */
	EXPECT_EQ(-EINVAL, vtpu_graph_embedding(g, src, 0, 4));
	EXPECT_EQ(-EINVAL, vtpu_graph_embedding(img, 0, 10, 4));
	EXPECT_EQ(-EINVAL, vtpu_graph_dense(g, src, 4, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, src, 4, -1, -1, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_relu(g, src));
	e = vtpu_graph_embedding(g, src, 10, 4);
	d = vtpu_graph_embedding(g, tgt, 10, 4);
	ASSERT_LE(0, d);
	/* images only: conv, pooling, flatten; no softmax on a sequence */
	EXPECT_EQ(-EINVAL, vtpu_graph_flatten(g, e));
	EXPECT_EQ(-EINVAL, vtpu_graph_maxpool(g, e, 2, 1));
	EXPECT_EQ(-EINVAL, vtpu_graph_conv2d(g, e, 4, 3, 1, 1, VTPU_PAD_SAME,
					     VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_dense(g, e, 4, VTPU_ACT_SOFTMAX));
	/* an LSTM's initial state: both or neither, of its units */
	ASSERT_LE(0, vtpu_graph_lstm(g, e, 8, -1, -1, &l));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, d, 8, l.h, -1, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, d, 7, l.h, l.c, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, d, 8, l.seq, l.c, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, d, 0, -1, -1, NULL));
	/* a GRU's: on features, units, an initial h of its units */
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, src, 8, -1, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, 0, -1, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, VTPU_MAX_DIM / 3 + 1, -1,
					  NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, 7, l.h, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, 8, l.seq, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, 8, src, NULL));
	EXPECT_EQ(-EINVAL, vtpu_graph_gru(g, d, 8, 1000, NULL));
	ASSERT_LE(0, vtpu_graph_gru(g, e, 8, l.c, &gr));
	EXPECT_EQ(gr.seq + 1, gr.h);
	EXPECT_EQ(3u * 8 * 8, g->params[g->nodes[gr.seq].weight2].count);
	EXPECT_EQ(2u * 3 * 8, g->params[g->nodes[gr.seq].bias].count);
	EXPECT_EQ(0, strcmp(g->nodes[gr.h].name, "gru/h"));
	EXPECT_EQ(-EINVAL, vtpu_graph_lstm(g, d, 8, gr.h, gr.seq, NULL));
	seq2 = vtpu_graph_lstm(g, d, 8, l.h, l.c, NULL);
	ASSERT_LE(0, seq2);
	/* attention: same width; a mask as long as the keys */
	EXPECT_EQ(-EINVAL, vtpu_graph_attention(g, seq2, e, -1));
	EXPECT_EQ(-EINVAL, vtpu_graph_attention(g, seq2, l.seq, tgt));
	EXPECT_EQ(-EINVAL, vtpu_graph_attention(g, seq2, l.seq, e));
	EXPECT_EQ(-EINVAL, vtpu_graph_attention(g, l.h, l.seq, src));
	/* additive attention: any widths; units in range; the same mask */
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, seq2, l.seq, src,
							 0));
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, seq2, l.seq, src,
				VTPU_ADDITIVE_MAX_UNITS + 1));
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, seq2, l.seq, tgt,
							 4));
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, l.h, l.seq, src,
							 4));
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, seq2, src, -1, 4));
	EXPECT_LE(0, vtpu_graph_additive_attention(g, seq2, e, -1, 3));
	x = vtpu_graph_attention(g, seq2, l.seq, src);
	ASSERT_LE(0, x);
	/* concatenation: same steps; only a dense layer reads it */
	EXPECT_EQ(-EINVAL, vtpu_graph_concat(g, x, l.seq));
	EXPECT_EQ(-EINVAL, vtpu_graph_concat(g, x, l.h));
	cat = vtpu_graph_concat(g, x, seq2);
	ASSERT_LE(0, cat);
	EXPECT_EQ(-EINVAL, vtpu_graph_relu(g, cat));
	EXPECT_EQ(-EINVAL, vtpu_graph_loss(g, cat));
	EXPECT_EQ(-EINVAL, vtpu_graph_attention(g, cat, cat, -1));
	EXPECT_EQ(-EINVAL, vtpu_graph_additive_attention(g, cat, cat, -1, 2));
	x = vtpu_graph_dense(g, cat, 10, VTPU_ACT_NONE);
	ASSERT_LE(0, x);
	EXPECT_EQ(-EINVAL, vtpu_graph_pack_labels(g, 2, NULL, NULL));
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	EXPECT_EQ(-EINVAL, vtpu_graph_pack_tokens(img, 2, NULL, NULL));
	vtpu_graph_destroy(g);
	vtpu_graph_destroy(img);
}

/* What the step reads: ids time-major, then the lengths; labels too. */
TEST(packing)
{
	struct vtpu_graph *g = vtpu_graph_create();
	const uint32_t a[2 * 3] = { 1, 5, 2, 1, 0, 0 };
	const uint32_t b[2 * 2] = { 1, 6, 1, 7 };
	const uint32_t *parts[2] = { a, b };
	const uint32_t want[] = { 1, 1, 5, 0, 2, 0, 3, 1, 1, 1, 6, 7, 2, 2 };
	uint32_t out[14], lab[4] = { 6, 2, 0, 0 }, plab[4];
	int x;

	vtpu_graph_tokens(g, 3);
	x = vtpu_graph_tokens(g, 2);
	x = vtpu_graph_embedding(g, x, 9, 2);
	x = vtpu_graph_dense(g, x, 9, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	EXPECT_EQ(sizeof(out), vtpu_graph_inputs_size(g, 2));
	ASSERT_EQ(0, vtpu_graph_pack_tokens(g, 2, parts, out));
	EXPECT_EQ(0, memcmp(out, want, sizeof(want)));
	EXPECT_EQ(2, vtpu_graph_pack_labels(g, 2, lab, plab));
	EXPECT_EQ(6u, plab[0]);
	EXPECT_EQ(UINT32_MAX, plab[1]);
	EXPECT_EQ(2u, plab[2]);
	EXPECT_EQ(UINT32_MAX, plab[3]);
	vtpu_graph_destroy(g);
}

/*
 * A checkpoint is bound to the vocabulary its embedding was trained with:
 * saved with the vocabulary's fingerprint, it loads with the same
 * vocabulary read back from its file, and refuses another of the same size
 * (which the shapes alone would accept) without changing the model.
 */
TEST(checkpoint_refuses_another_vocabulary)
{
	enum { N = 8, T = 6 };
	static const char *const ours[] = { "the cat sat", "a dog ran",
					    "the dog sat", "a cat ran" };
	static const char *const theirs[] = { "el gato", "un perro corre",
					      "el perro", "un gato se" };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 4, .threads = 1,
			  .optimizer = VTPU_OPT_ADAM, .seed = 3);
	struct vtpu_fit_opts fo = { .sz = sizeof(fo), .epochs = 2 };
	char dir[] = "/tmp/vtpu-test-seq.XXXXXX", vpath[64], ck[64];
	char err[256], fp[3][VTPU_VOCAB_FINGERPRINT_LEN], msg[160];
	struct vtpu_vocab v = { 0 }, back = { 0 }, other = { 0 };
	static uint32_t ids[N * T], lab[N * T];
	struct vtpu_token_dataset ds = { .n = N, .inputs = { ids },
					 .labels = lab };
	struct vtpu_ckpt_meta meta = { "source vocabulary", NULL };
	struct vtpu_model *m[2];
	struct vtpu_weight_info wi;
	float *w[3];
	uint32_t len, i;
	int k;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(vpath, sizeof(vpath), "%s/src.vocab", dir);
	snprintf(ck, sizeof(ck), "%s/model.ckpt", dir);
	ASSERT_EQ(0, vtpu_vocab_build(&v, (char *const *)ours, 4,
				      VTPU_TOKENIZE_WORDS, 0, 1, err,
				      sizeof(err)));
	ASSERT_EQ(0, vtpu_vocab_build(&other, (char *const *)theirs, 4,
				      VTPU_TOKENIZE_WORDS, 0, 1, err,
				      sizeof(err)));
	ASSERT_EQ(v.size, other.size);	/* the shapes cannot tell them apart */
	ASSERT_EQ(0, vtpu_vocab_save(&v, vpath, err, sizeof(err)));
	ASSERT_EQ(0, vtpu_vocab_load(&back, vpath, err, sizeof(err)));
	vtpu_vocab_fingerprint(&v, fp[0]);
	vtpu_vocab_fingerprint(&back, fp[1]);
	vtpu_vocab_fingerprint(&other, fp[2]);
	snprintf(msg, sizeof(msg), "%016llx",
		 (unsigned long long)vtpu_vocab_hash(&v));
	EXPECT_STREQ(msg, fp[0]);
	EXPECT_STREQ(fp[0], fp[1]);
	EXPECT_STRNE(fp[0], fp[2]);

	/* the next token of each sentence, as a language model */
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, vtpu_vocab_encode(&v, ours[i % 4], T,
					       ids + i * T, &len, err,
					       sizeof(err)));
		memcpy(lab + i * T, ids + i * T + 1, (T - 1) * sizeof(*lab));
		lab[i * T + T - 1] = VTPU_TOK_PAD;
	}
	for (k = 0; k < 2; k++) {
		struct vtpu_graph *g = vtpu_graph_create();
		int x = vtpu_graph_tokens(g, T);

		x = vtpu_graph_embedding(g, x, v.size, 4);
		x = vtpu_graph_dense(g, x, v.size, VTPU_ACT_NONE);
		ASSERT_LE(0, vtpu_graph_loss(g, x));
		m[k] = vtpu_model_create_graph(g);
		ASSERT_NE(NULL, m[k]);
		co.seed = 3 + k;
		ASSERT_EQ(0, vtpu_model_compile(m[k], &co));
	}
	ASSERT_EQ(0, vtpu_model_fit_tokens(m[0], &ds, &fo));
	meta.value = fp[0];
	ASSERT_EQ(0, vtpu_model_save_meta(m[0], ck, &meta, 1))
		TH_LOG("%s", vtpu_model_error(m[0]));
	ASSERT_EQ(0, vtpu_model_weight_info(m[0], 0, &wi));
	for (k = 0; k < 3; k++) {
		w[k] = malloc(wi.count * sizeof(float));
		ASSERT_NE(NULL, w[k]);
	}
	ASSERT_EQ(0, vtpu_model_get_weights(m[0], 0, w[0], wi.count));
	ASSERT_EQ(0, vtpu_model_get_weights(m[1], 0, w[1], wi.count));
	ASSERT_NE(0, memcmp(w[0], w[1], wi.count * sizeof(float)));

	/* another vocabulary of the same size: refused, nothing changed */
	meta.value = fp[2];
	EXPECT_EQ(-EKEYREJECTED, vtpu_model_load_meta(m[1], ck, &meta, 1));
	snprintf(msg, sizeof(msg),
		 "the checkpoint's 'source vocabulary' is '%s', not '%s'",
		 fp[0], fp[2]);
	EXPECT_TRUE(strstr(vtpu_model_error(m[1]), msg) != NULL)
		TH_LOG("%s", vtpu_model_error(m[1]));
	ASSERT_EQ(0, vtpu_model_get_weights(m[1], 0, w[2], wi.count));
	EXPECT_EQ(0, memcmp(w[1], w[2], wi.count * sizeof(float)));

	/* the vocabulary read back from its file: loads, the same weights */
	meta.value = fp[1];
	ASSERT_EQ(0, vtpu_model_load_meta(m[1], ck, &meta, 1))
		TH_LOG("%s", vtpu_model_error(m[1]));
	ASSERT_EQ(0, vtpu_model_get_weights(m[1], 0, w[2], wi.count));
	EXPECT_EQ(0, memcmp(w[0], w[2], wi.count * sizeof(float)));

	for (k = 0; k < 3; k++)
		free(w[k]);
	for (k = 0; k < 2; k++)
		vtpu_model_destroy(m[k]);
	vtpu_vocab_free(&v);
	vtpu_vocab_free(&back);
	vtpu_vocab_free(&other);
	unlink(vpath);
	unlink(ck);
	rmdir(dir);
}

TEST_HARNESS_MAIN
