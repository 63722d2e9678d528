// SPDX-License-Identifier: MIT
/*
 * translate: an encoder-decoder with Luong attention (Embedding, LSTM;
 * Embedding, LSTM from the encoder's state, Attention, Dense tanh on
 * [context, decoder], Dense), trained with Adam on sentence pairs, as the
 * TensorFlow tutorial's Spanish-to-English model is. Without --data it
 * trains on a corpus it generates: dates in many human styles to their ISO
 * form ("tuesday 24 november 2026" -> "2026-11-24"), where it reaches over
 * 99% exact matches on held-out dates. With --data FILE, any tab-separated
 * pair file (tools/get-datasets fetches the tutorial's spa-eng one).
 *
 *   translate --device /dev/vtpu0 --epochs 12
 *   translate --device cpu --data data/spa-eng/spa.txt --limit 30000
 *
 * After every epoch it translates a few held-out sentences; at the end,
 * the whole held-out split, and reports the exact-match rate. --save CK
 * writes the vocabularies beside the weights (CK.src.vocab, CK.tgt.vocab)
 * and their fingerprints into CK; --load CK encodes the data with those
 * files, and refuses a checkpoint trained with other vocabularies. Greedily
 * by default; --beam N searches with N hypotheses per sentence instead.
 * --attention additive scores with Bahdanau's v . tanh(W1 q + W2 k) (of
 * UNITS units) instead of Luong's dot product.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vtpu_text.h>

#include "trainer.h"

#define EMBED 32	/* the tutorial's sizes, scaled to the task */
#define UNITS 128
#define COMBINE 128
#define SHOW 4		/* held-out translations printed per epoch */

/* One side of the corpus, encoded: ids [n][len]. */
struct side {
	struct vtpu_vocab vocab;
	char fingerprint[VTPU_VOCAB_FINGERPRINT_LEN];
	uint32_t len;
	uint32_t *ids;
};

struct corpus {
	struct vtpu_text_pairs pairs;
	struct side src, tgt;
	uint32_t *dec_in, *labels;	/* the target, shifted: [n][tgt.len-1] */
	uint32_t n;			/* pairs used (--test-limit: fewer) */
	uint32_t ntrain;		/* pairs [0, ntrain) train, the rest test */
	bool saved_vocabs;		/* the vocabularies are --load's */
};

static void die(const char *name, const char *what)
{
	fprintf(stderr, "%s: %s\n", name, what);
	exit(1);
}

/* The vocabulary files saved beside checkpoint @ck. */
static void vocab_path(char *buf, size_t len, const char *ck, const char *side)
{
	snprintf(buf, len, "%s.%s.vocab", ck, side);
}

/*
 * With --load, the vocabularies saved beside the checkpoint (the ids its
 * weights were trained with): true if both are there, false if neither
 * is (then they are built from the data, and the checkpoint says whether
 * those are the same); one without the other is an error.
 */
static bool saved_vocabs(const struct trainer_opts *o)
{
	char path[2][4096];
	int there[2], i;

	if (!o->load)
		return false;
	for (i = 0; i < 2; i++) {
		vocab_path(path[i], sizeof(path[i]), o->load, i ? "tgt" : "src");
		there[i] = !access(path[i], F_OK);
	}
	if (there[0] != there[1]) {
		fprintf(stderr, "%s: %s is missing (%s is there): --save writes both\n",
			o->name, path[there[0]], path[!there[0]]);
		exit(1);
	}
	return there[0];
}

/*
 * Encode one side with the vocabulary saved beside --load's checkpoint
 * (@saved), else with one built from the training split only.
 */
static void encode_side(const struct trainer_opts *o, struct side *s,
			const char *side, bool saved, char *const *text,
			uint32_t n, uint32_t ntrain, enum vtpu_tokenize mode)
{
	static const char *const how[] = { "words", "characters" };
	char err[512], path[4096];
	uint32_t i, len;

	if (saved) {
		vocab_path(path, sizeof(path), o->load, side);
		if (vtpu_vocab_load(&s->vocab, path, err, sizeof(err)))
			die(o->name, err);
		if (s->vocab.mode != mode) {
			fprintf(stderr, "%s: %s is a vocabulary of %s, and %s is tokenized into %s\n",
				o->name, path, how[s->vocab.mode],
				o->data_default ? "the generated corpus" :
						  o->data,
				how[mode]);
			exit(1);
		}
	} else if (vtpu_vocab_build(&s->vocab, text, ntrain, mode, 0, 1, err,
				    sizeof(err))) {
		die(o->name, err);
	}
	vtpu_vocab_fingerprint(&s->vocab, s->fingerprint);
	s->len = 0;
	for (i = 0; i < n; i++) {
		len = vtpu_vocab_tokens(&s->vocab, text[i]) + 2;
		if (len > s->len)
			s->len = len;
	}
	s->ids = malloc((size_t)n * s->len * sizeof(*s->ids));
	if (!s->ids)
		die(o->name, "out of memory");
	for (i = 0; i < n; i++)
		if (vtpu_vocab_encode(&s->vocab, text[i], s->len,
				      s->ids + (size_t)i * s->len, &len, err,
				      sizeof(err)))
			die(o->name, err);
}

static void load_corpus(const struct trainer_opts *o, struct corpus *c)
{
	enum vtpu_tokenize mode = VTPU_TOKENIZE_CHARS;
	uint32_t n, i, t, T;
	char err[512];

	if (o->data_default) {
		if (vtpu_text_dates(o->limit ?: 20000, o->seed, &c->pairs))
			die(o->name, "cannot generate the date corpus");
	} else {
		if (vtpu_text_load_pairs(o->data, o->limit, &c->pairs, err,
					 sizeof(err)))
			die(o->name, err);
		mode = VTPU_TOKENIZE_WORDS;
	}
	n = c->pairs.n;
	/* a tenth held out (at least one pair), --test-limit caps it */
	c->ntrain = n - (n / 10 ?: 1);
	if (!c->ntrain)
		die(o->name, "too few pairs to hold any out");
	if (o->test_limit && n - c->ntrain > o->test_limit)
		n = c->ntrain + o->test_limit;
	c->saved_vocabs = saved_vocabs(o);
	encode_side(o, &c->src, "src", c->saved_vocabs, c->pairs.src, n,
		    c->ntrain, mode);
	encode_side(o, &c->tgt, "tgt", c->saved_vocabs, c->pairs.tgt, n,
		    c->ntrain, mode);
	c->n = n;
	/* the decoder reads <start> y1 .. and learns to say y1 .. <end> */
	T = c->tgt.len - 1;
	c->dec_in = malloc((size_t)n * T * sizeof(*c->dec_in));
	c->labels = malloc((size_t)n * T * sizeof(*c->labels));
	if (!c->dec_in || !c->labels)
		die(o->name, "out of memory");
	for (i = 0; i < n; i++)
		for (t = 0; t < T; t++) {
			const uint32_t *y = c->tgt.ids + (size_t)i * c->tgt.len;

			c->dec_in[(size_t)i * T + t] = y[t] == VTPU_TOK_END ?
							       VTPU_TOK_PAD :
							       y[t];
			c->labels[(size_t)i * T + t] = y[t + 1];
		}
}

static void free_corpus(struct corpus *c)
{
	vtpu_text_pairs_free(&c->pairs);
	vtpu_vocab_free(&c->src.vocab);
	vtpu_vocab_free(&c->tgt.vocab);
	free(c->src.ids);
	free(c->tgt.ids);
	free(c->dec_in);
	free(c->labels);
}

/* The model: two token inputs, the source and the shifted target. */
static struct vtpu_model *build(const struct corpus *c, int *tgt_input,
				bool additive)
{
	struct vtpu_graph *g = vtpu_graph_create();
	struct vtpu_lstm_nodes enc = { -1, -1, -1 }, dec = { -1, -1, -1 };
	struct vtpu_model *m;
	int src, tgt, x, att;

	if (!g)
		return NULL;
	src = vtpu_graph_tokens(g, c->src.len);
	tgt = vtpu_graph_tokens(g, c->tgt.len - 1);
	*tgt_input = tgt;
	x = vtpu_graph_embedding(g, src, c->src.vocab.size, EMBED);
	vtpu_graph_lstm(g, x, UNITS, -1, -1, &enc);
	x = vtpu_graph_embedding(g, tgt, c->tgt.vocab.size, EMBED);
	vtpu_graph_lstm(g, x, UNITS, enc.h, enc.c, &dec);
	att = additive ? vtpu_graph_additive_attention(g, dec.seq, enc.seq,
						       src, UNITS) :
			 vtpu_graph_attention(g, dec.seq, enc.seq, src);
	x = vtpu_graph_concat(g, att, dec.seq);
	x = vtpu_graph_dense(g, x, COMBINE, VTPU_ACT_TANH);
	x = vtpu_graph_dense(g, x, c->tgt.vocab.size, VTPU_ACT_NONE);
	m = vtpu_graph_loss(g, x) < 0 ? NULL : vtpu_model_create_graph(g);
	if (!m)	/* a builder's failure shows here: the graph stays ours */
		vtpu_graph_destroy(g);
	return m;
}

static struct vtpu_token_dataset split(const struct corpus *c, uint32_t first,
				       uint32_t n)
{
	uint32_t T = c->tgt.len - 1;

	return (struct vtpu_token_dataset){
		.n = n,
		.inputs = { c->src.ids + (size_t)first * c->src.len,
			    c->dec_in + (size_t)first * T },
		.labels = c->labels + (size_t)first * T,
	};
}

struct run {
	const char *name;
	struct vtpu_model *m;
	const struct corpus *c;
	int tgt_input;
	uint32_t beam;		/* --beam: hypotheses per sentence, 1: greedy */
	uint32_t *out;		/* generated ids, [test pairs][T] */
};

/*
 * Translations of held-out pairs [first, first + n), greedy or by beam
 * search: their number that match the reference exactly; the first
 * @show printed.
 */
static uint32_t translate(struct run *r, uint32_t first, uint32_t n,
			  uint32_t show)
{
	const struct corpus *c = r->c;
	uint32_t T = c->tgt.len - 1, i, right = 0;
	const uint32_t *in[2] = { c->src.ids + (size_t)first * c->src.len,
				  NULL };
	char got[512], want[512];

	if (r->beam > 1 ? vtpu_model_decode_beam(r->m, r->tgt_input, in, n,
						 r->beam, r->out, NULL) :
			  vtpu_model_decode(r->m, r->tgt_input, in, n, r->out))
		die(r->name, vtpu_model_error(r->m));
	for (i = 0; i < n; i++) {
		vtpu_vocab_decode(&c->tgt.vocab, r->out + (size_t)i * T, T, got,
				  sizeof(got));
		vtpu_vocab_decode(&c->tgt.vocab,
				  c->tgt.ids + (size_t)(first + i) * c->tgt.len,
				  c->tgt.len, want, sizeof(want));
		right += !strcmp(got, want);
		if (i < show)
			printf("  %-32s -> %-16s %s\n",
			       c->pairs.src[first + i], got,
			       strcmp(got, want) ? want : "ok");
	}
	return right;
}

static void on_epoch(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct run *r = ctx;
	uint32_t held_out = r->c->n - r->c->ntrain;

	(void)st;
	translate(r, r->c->ntrain, held_out < SHOW ? held_out : SHOW, SHOW);
	fflush(stdout);
}

/*
 * --load: the weights, if the checkpoint was trained with these
 * vocabularies (else the error says which, and what to do).
 */
static void load(const struct trainer_opts *o, struct vtpu_model *m,
		 const struct corpus *c, const struct vtpu_ckpt_meta *meta)
{
	int ret = vtpu_model_load_meta(m, o->load, meta, 2);

	if (!ret)
		return;
	fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
	if (ret == -EKEYREJECTED && c->saved_vocabs)
		fprintf(stderr, "%s: %s.src.vocab and %s.tgt.vocab are not the vocabularies %s was trained with (saved by another run?)\n",
			o->name, o->load, o->load, o->load);
	else if (ret == -EKEYREJECTED)
		fprintf(stderr, "%s: the vocabularies of this data are not the ones %s was trained with, which --save put beside it (%s.src.vocab, %s.tgt.vocab)\n",
			o->name, o->load, o->load, o->load);
	else if (ret == -ENOKEY)
		fprintf(stderr, "%s: %s was saved without its vocabularies' fingerprints (by an older translate): train and --save it again\n",
			o->name, o->load);
	exit(1);
}

/* --save: the vocabularies, then the weights with their fingerprints. */
static void save(const struct trainer_opts *o, struct vtpu_model *m,
		 const struct corpus *c, const struct vtpu_ckpt_meta *meta)
{
	char err[512], path[4096];

	vocab_path(path, sizeof(path), o->save, "src");
	if (vtpu_vocab_save(&c->src.vocab, path, err, sizeof(err)))
		die(o->name, err);
	vocab_path(path, sizeof(path), o->save, "tgt");
	if (vtpu_vocab_save(&c->tgt.vocab, path, err, sizeof(err)))
		die(o->name, err);
	if (vtpu_model_save_meta(m, o->save, meta, 2))
		die(o->name, vtpu_model_error(m));
}

int main(int argc, char **argv)
{
	struct trainer_opts o = {
		.name = "translate", .device = "/dev/vtpu0",
		.data = "(generated dates)", .epochs = 12, .batch = 64,
		.seed = 1, .beam = 1,
	};
	VTPU_COMPILE_OPTS(co, .optimizer = VTPU_OPT_ADAM,
			  .learning_rate = 1e-3f);
	struct vtpu_token_dataset train, test;
	struct vtpu_ckpt_meta meta[2];
	struct vtpu_model_info info;
	struct corpus c = { 0 };
	struct vtpu_model *m;
	struct timespec t0, t1;
	struct run r;
	double loss, acc;
	uint32_t right;
	char how[32];

	trainer_parse(argc, argv, &o);
	if (vtpu_dist_size() > 1)
		die(o.name,
		    "models of token inputs do not train across MPI ranks yet (as replicas: run one process)");
	load_corpus(&o, &c);
	train = split(&c, 0, c.ntrain);
	test = split(&c, c.ntrain, c.n - c.ntrain);

	m = build(&c, &r.tgt_input, o.additive);
	if (!m)
		die(o.name, "cannot build the model");
	r.name = o.name;
	r.m = m;
	r.c = &c;
	r.beam = o.beam;
	if (o.beam > 1)
		snprintf(how, sizeof(how), "beam search, width %u", o.beam);
	else
		snprintf(how, sizeof(how), "greedy");
	r.out = malloc((size_t)test.n * (c.tgt.len - 1) * sizeof(*r.out));
	if (!r.out)
		die(o.name, "out of memory");
	co.device = o.device;
	co.batch = o.batch;
	co.seed = o.seed;
	co.threads = o.threads;
	co.cpu_gemm = o.gemm;
	if (o.lr > 0)
		co.learning_rate = o.lr;
	vtpu_model_summary(m, stdout);
	if (vtpu_model_compile(m, &co))
		die(o.name, vtpu_model_error(m));
	vtpu_model_info(m, &info);
	printf("compiled for %s: %u commands per step (%u bytes), %.1f ms\n",
	       info.backend, info.commands, info.stream_bytes, info.compile_ms);
	printf("train on %u pairs, test on %u; vocabularies %u and %u, "
	       "lengths %u and %u\n", train.n, test.n, c.src.vocab.size,
	       c.tgt.vocab.size, c.src.len, c.tgt.len);
	printf("held-out translations: %s\n", how);
	fflush(stdout);
	/* the weights mean something only with the ids they were trained on */
	meta[0] = (struct vtpu_ckpt_meta){ "source vocabulary",
					   c.src.fingerprint };
	meta[1] = (struct vtpu_ckpt_meta){ "target vocabulary",
					   c.tgt.fingerprint };
	if (o.load)
		load(&o, m, &c, meta);
	{
		VTPU_FIT_OPTS(fo, .epochs = o.epochs, .progress = stdout,
			      .token_validation = &test, .on_epoch = on_epoch,
			      .ctx = &r);

		if (o.epochs && vtpu_model_fit_tokens(m, &train, &fo))
			die(o.name, vtpu_model_error(m));
	}
	if (vtpu_model_evaluate_tokens(m, &test, &loss, &acc))
		die(o.name, vtpu_model_error(m));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	right = translate(&r, c.ntrain, test.n, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("decoded %u held-out sentences in %.2f s (%s)\n", test.n,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (t1.tv_nsec - t0.tv_nsec) * 1e-9, how);
	printf("test_loss: %.4f - test_acc: %.4f (tokens) - exact_match: "
	       "%.4f (%u of %u held-out %s, %s)\n", loss, acc,
	       (double)right / test.n, right, test.n,
	       o.data_default ? "dates" : "pairs", how);
	if (o.save)
		save(&o, m, &c, meta);
	free(r.out);
	vtpu_model_destroy(m);
	free_corpus(&c);
	return 0;
}
