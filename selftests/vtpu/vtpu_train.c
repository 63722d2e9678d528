// SPDX-License-Identifier: MIT
/*
 * Training through /dev/vtpu0 against the cpu backend: the same model,
 * data and seed must give the same loss curve. Both run the same engine
 * code at the same SIMD level (the guest's), tiles are deterministic
 * whichever worker runs them, so the curves agree to the last bit; the
 * test allows float noise all the same.
 *
 * Uses the first images of MNIST when ../shared/datasets is beside the
 * checkout, generated images otherwise. Small: the guest's floating point
 * is emulated.
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

#ifndef VTPU_SRCTOP
#define VTPU_SRCTOP "."
#endif

#define EPOCHS 2

static void load_data(struct vtpu_dataset *ds, uint32_t n)
{
	char err[256];
	struct vtpu_rng rng;
	uint32_t i;

	if (!vtpu_load_mnist(VTPU_SRCTOP "/../shared/datasets/mnist", true, ds,
			     err, sizeof(err))) {
		vtpu_dataset_truncate(ds, n);
		return;
	}
	/* no MNIST here: random digits-shaped data with a learnable rule */
	memset(ds, 0, sizeof(*ds));
	ds->n = n;
	ds->height = 28;
	ds->width = 28;
	ds->channels = 1;
	ds->classes = 10;
	ds->images = calloc(n, 784);
	ds->labels = calloc(n, 1);
	vtpu_rng_seed(&rng, 11);
	for (i = 0; i < n; i++) {
		ds->labels[i] = (uint8_t)vtpu_rng_below(&rng, 10);
		memset(ds->images + i * 784 + ds->labels[i] * 78, 200, 78);
	}
}

static void record(void *ctx, const struct vtpu_epoch_stats *st)
{
	((double *)ctx)[st->epoch - 1] = st->loss;
}

/* Epoch e trains at the compiled rate / e: patched into the stream. */
static float decay(void *ctx, uint32_t epoch, uint32_t epochs, float lr)
{
	return epoch > 1 ? lr * (float)(epoch - 1) / (float)epoch : lr;
}

typedef struct vtpu_model *(*build_fn)(void);

/* how train() trains: plain, or with these */
#define EXTRAS 1u	/* a learning-rate schedule, flips and shifts */
#define STREAMED 2u	/* the training set streamed through a ring */

static struct vtpu_model *mlp(void)
{
	struct vtpu_model *m = vtpu_model_create(28, 28, 1);

	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 64, VTPU_ACT_RELU);
	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);
	return m;
}

static struct vtpu_model *convnet(void)
{
	struct vtpu_model *m = vtpu_model_create(28, 28, 1);

	vtpu_model_add_conv2d(m, 20, 3, 3, VTPU_PAD_VALID, VTPU_ACT_NONE);
	vtpu_model_add_maxpool(m, 2, 2);
	vtpu_model_add_relu(m);
	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);
	return m;
}

/*
 * Two 'same' convolutions, the second fused with its pooling: CONV,
 * CONV_WGRAD and CONV_DGRAD, as CIFAR-10's network runs them.
 */
static struct vtpu_model *convnet2(void)
{
	struct vtpu_model *m = vtpu_model_create(28, 28, 1);

	vtpu_model_add_conv2d(m, 4, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_conv2d(m, 6, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_maxpool(m, 2, 2);
	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);
	return m;
}

/*
 * Issue 27's networks at width 2 on the 28x28 digits: batch norm (its
 * moving statistics too, through evaluate), strided and 1x1 convolutions,
 * residual additions, 'same' max pools, separable convolutions, global
 * average pooling.
 */
static struct vtpu_model *app_model(bool xception)
{
	struct vtpu_model *m = vtpu_model_create(28, 28, 1);
	VTPU_APP_OPTS(o, .width = 2);
	int out;

	if (!m)
		return NULL;
	out = xception ? vtpu_app_xception(vtpu_model_graph(m), 0, 10, &o) :
			 vtpu_app_resnet(vtpu_model_graph(m), 0, 10, &o);
	if (out < 0 || vtpu_model_set_output(m, out)) {
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

static struct vtpu_model *resnet(void)
{
	return app_model(false);
}

static struct vtpu_model *xception(void)
{
	return app_model(true);
}

/*
 * Train on @device; Return: 0 or -errno, losses per epoch in @loss.
 * @how: EXTRAS, a learning-rate schedule and random flips and shifts of
 * the images too; STREAMED, the training set through a ring of buffers.
 */
static int train(const char *device, build_fn build, unsigned int how,
		 const struct vtpu_dataset *ds, double *loss, double *acc)
{
	struct vtpu_model *m = build();
	VTPU_COMPILE_OPTS(co, .device = device, .batch = 32, .seed = 3);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record, .ctx = loss);
	double l;
	int ret;

	if (how & EXTRAS) {
		fo.lr_schedule = decay;
		fo.augment.flip = true;
		fo.augment.shift = 2;
	}
	if (how & STREAMED) {
		/* streamed: a ring of three buffers of one batch each */
		fo.stream = true;
		fo.stream_ring = 3;
		fo.stream_chunk = 1;
	}
	ret = vtpu_model_compile(m, &co);
	if (!ret)
		ret = vtpu_model_fit(m, ds, &fo);
	if (!ret)
		ret = vtpu_model_evaluate(m, ds, &l, acc);
	if (ret)
		fprintf(stderr, "# %s: %s\n", device, vtpu_model_error(m));
	vtpu_model_destroy(m);
	return ret;
}

static void same_curve(struct __test_metadata *_metadata, build_fn build,
		       unsigned int how, uint32_t n, const char *what)
{
	struct vtpu_dataset ds;
	double dev[EPOCHS], cpu[EPOCHS], dacc, cacc, worst = 0;
	int e;

	if (access("/dev/vtpu0", R_OK | W_OK))
		SKIP(return, "no /dev/vtpu0 (is vtpu.ko loaded?)");
	load_data(&ds, n);
	ASSERT_EQ(0, train("/dev/vtpu0", build, how, &ds, dev, &dacc));
	ASSERT_EQ(0, train("cpu", build, how, &ds, cpu, &cacc));
	for (e = 0; e < EPOCHS; e++)
		worst = fmax(worst, fabs(dev[e] - cpu[e]) / cpu[e]);
	EXPECT_GT(1e-4, worst);
	EXPECT_GT(dev[0], dev[EPOCHS - 1]);
	TH_LOG("%s on %u images: /dev/vtpu0 loss %.6f -> %.6f, cpu %.6f -> %.6f (max rel diff %.1e), acc %.3f vs %.3f",
	       what, ds.n, dev[0], dev[EPOCHS - 1], cpu[0], cpu[EPOCHS - 1],
	       worst, dacc, cacc);
	vtpu_dataset_free(&ds);
}

/*
 * Data parallel (vtpu_model_compile_replicated()): the MLP on @n replicas
 * @devs (n 0: plain on devs[0]), global batch 32; losses per epoch in
 * @loss, all weights of replica 0 (and of the last in @last) in @w.
 */
#define REP_MAX_W 60000

static int train_replicas(const char *const *devs, uint32_t n,
			  const struct vtpu_dataset *ds, double *loss,
			  float *w, float *last)
{
	struct vtpu_model *m = mlp();
	VTPU_COMPILE_OPTS(co, .device = devs[0], .batch = 32, .seed = 3);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record, .ctx = loss);
	struct vtpu_weight_info wi;
	uint64_t at = 0;
	uint32_t r;
	int ret, i;

	ret = n ? vtpu_model_compile_replicated(m, devs, n, &co) :
		  vtpu_model_compile(m, &co);
	if (!ret)
		ret = vtpu_model_fit(m, ds, &fo);
	r = vtpu_model_num_replicas(m);
	for (i = 0; !ret && i < vtpu_model_num_weights(m); i++) {
		ret = vtpu_model_weight_info(m, i, &wi);
		if (!ret && at + wi.count > REP_MAX_W)
			ret = -ENOSPC;
		if (!ret)
			ret = vtpu_model_get_replica_weights(m, 0, i, w + at,
							     wi.count);
		if (!ret)
			ret = vtpu_model_get_replica_weights(m, r - 1, i,
							     last + at,
							     wi.count);
		at += wi.count;
	}
	if (ret)
		fprintf(stderr, "# %s: %s\n", devs[0], vtpu_model_error(m));
	vtpu_model_destroy(m);
	return ret;
}

/*
 * The translation model of examples/translate, small, on generated dates:
 * embeddings, LSTMs unrolled over the steps, masked attention, the
 * sequence loss; then greedy decoding, one submission a batch.
 */
struct s2s_data {
	struct vtpu_text_pairs pairs;
	struct vtpu_vocab sv, tv;
	uint32_t ts, tt, *src, *dec_in, *labels;
	struct vtpu_token_dataset ds;
};

static int s2s_side(char *const *text, uint32_t n, struct vtpu_vocab *v,
		    uint32_t *len, uint32_t **ids)
{
	uint32_t i, l;
	int ret;

	ret = vtpu_vocab_build(v, text, n, VTPU_TOKENIZE_CHARS, 0, 1, NULL, 0);
	if (ret)
		return ret;
	for (*len = 0, i = 0; i < n; i++) {
		l = vtpu_vocab_tokens(v, text[i]) + 2;
		*len = l > *len ? l : *len;
	}
	*ids = calloc((size_t)n * *len, 4);
	if (!*ids)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++)
		ret = vtpu_vocab_encode(v, text[i], *len, *ids + (size_t)i * *len,
					&l, NULL, 0);
	return ret;
}

static int s2s_load(struct s2s_data *d, uint32_t n)
{
	uint32_t *tgt, i, t, T;
	int ret;

	memset(d, 0, sizeof(*d));
	ret = vtpu_text_dates(n, 5, &d->pairs);
	if (!ret)
		ret = s2s_side(d->pairs.src, n, &d->sv, &d->ts, &d->src);
	if (!ret)
		ret = s2s_side(d->pairs.tgt, n, &d->tv, &d->tt, &tgt);
	if (ret)
		return ret;
	T = d->tt - 1;
	d->dec_in = calloc((size_t)n * T, 4);
	d->labels = calloc((size_t)n * T, 4);
	if (!d->dec_in || !d->labels)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		for (t = 0; t < T; t++) {
			d->dec_in[i * T + t] = tgt[i * d->tt + t];
			d->labels[i * T + t] = tgt[i * d->tt + t + 1];
		}
	free(tgt);
	d->ds = (struct vtpu_token_dataset){
		.n = n, .inputs = { d->src, d->dec_in }, .labels = d->labels,
	};
	return 0;
}

static void s2s_free(struct s2s_data *d)
{
	vtpu_text_pairs_free(&d->pairs);
	vtpu_vocab_free(&d->sv);
	vtpu_vocab_free(&d->tv);
	free(d->src);
	free(d->dec_in);
	free(d->labels);
}

/* Train on @device, then decode: losses per epoch, the ids decoded. */
static int s2s_train(const char *device, const struct s2s_data *d,
		     double *loss, uint32_t *ids)
{
	struct vtpu_graph *g = vtpu_graph_create();
	VTPU_COMPILE_OPTS(co, .device = device, .batch = 16, .seed = 3,
			  .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record, .ctx = loss);
	struct vtpu_lstm_nodes enc, dec;
	struct vtpu_model *m;
	int src, tgt, x, ret;

	src = vtpu_graph_tokens(g, d->ts);
	tgt = vtpu_graph_tokens(g, d->tt - 1);
	x = vtpu_graph_embedding(g, src, d->sv.size, 8);
	vtpu_graph_lstm(g, x, 16, -1, -1, &enc);
	x = vtpu_graph_embedding(g, tgt, d->tv.size, 8);
	vtpu_graph_lstm(g, x, 16, enc.h, enc.c, &dec);
	x = vtpu_graph_attention(g, dec.seq, enc.seq, src);
	x = vtpu_graph_concat(g, x, dec.seq);
	x = vtpu_graph_dense(g, x, 16, VTPU_ACT_TANH);
	x = vtpu_graph_dense(g, x, d->tv.size, VTPU_ACT_NONE);
	if (vtpu_graph_loss(g, x) < 0) {
		vtpu_graph_destroy(g);
		return -EINVAL;
	}
	m = vtpu_model_create_graph(g);
	if (!m)
		return -ENOMEM;
	ret = vtpu_model_compile(m, &co);
	if (!ret)
		ret = vtpu_model_fit_tokens(m, &d->ds, &fo);
	if (!ret)
		ret = vtpu_model_decode(m, tgt, d->ds.inputs, d->ds.n, ids);
	if (ret)
		fprintf(stderr, "# %s: %s\n", device, vtpu_model_error(m));
	vtpu_model_destroy(m);
	return ret;
}

/*
 * The harness's timeouts catch hangs; they are not time limits. A
 * convnet test takes 10-20 s in a TCG guest and more than the default 30
 * s on tools/check-debug's KASAN kernel, so these get 300 s each.
 */
#define TRAIN_TIMEOUT 300

FIXTURE(train) {};
FIXTURE_SETUP(train) {}
FIXTURE_TEARDOWN(train) {}

TEST_F_TIMEOUT(train, mlp_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, mlp, 0, 320, "MLP 784-64-10");
}

/* The rate rewritten in the submitted stream, and augmented images. */
TEST_F_TIMEOUT(train, mlp_schedule_augment_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, mlp, EXTRAS, 320,
		   "MLP 784-64-10, lr / epoch, flips and shifts");
}

TEST_F_TIMEOUT(train, convnet_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, convnet, 0, 96, "conv(20)-pool-relu-dense");
}

TEST_F_TIMEOUT(train, convnet2_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, convnet2, STREAMED, 48,
		   "conv(4)-conv(6)-pool-dense, streamed (a ring of 3)");
}

TEST_F_TIMEOUT(train, resnet_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, resnet, 0, 64, "resnet (width 2)");
}

TEST_F_TIMEOUT(train, xception_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, xception, 0, 64, "xception (width 2)");
}

TEST_F_TIMEOUT(train, seq2seq_device_matches_cpu, TRAIN_TIMEOUT)
{
	double dev[EPOCHS], cpu[EPOCHS], worst = 0;
	struct s2s_data d;
	uint32_t *di, *ci, n = 48, differ = 0, i;
	int e;

	if (access("/dev/vtpu0", R_OK | W_OK))
		SKIP(return, "no /dev/vtpu0 (is vtpu.ko loaded?)");
	ASSERT_EQ(0, s2s_load(&d, n));
	di = calloc((size_t)n * (d.tt - 1), 4);
	ci = calloc((size_t)n * (d.tt - 1), 4);
	ASSERT_NE(NULL, di);
	ASSERT_NE(NULL, ci);
	ASSERT_EQ(0, s2s_train("/dev/vtpu0", &d, dev, di));
	ASSERT_EQ(0, s2s_train("cpu", &d, cpu, ci));
	for (e = 0; e < EPOCHS; e++)
		worst = fmax(worst, fabs(dev[e] - cpu[e]) / cpu[e]);
	for (i = 0; i < n * (d.tt - 1); i++)
		differ += di[i] != ci[i];
	EXPECT_GT(1e-4, worst);
	EXPECT_GT(dev[0], dev[EPOCHS - 1]);
	EXPECT_EQ(0u, differ);
	TH_LOG("encoder-decoder with attention on %u dates (%u and %u steps): /dev/vtpu0 loss %.6f -> %.6f, cpu %.6f -> %.6f (max rel diff %.1e); greedy decoding: %u of %u ids differ",
	       n, d.ts, d.tt - 1, dev[0], dev[EPOCHS - 1], cpu[0],
	       cpu[EPOCHS - 1], worst, differ, n * (d.tt - 1));
	free(di);
	free(ci);
	s2s_free(&d);
}

/*
 * Two device replicas (the guest runs with devices=2), the gradients
 * all-reduced on the devices through dma-bufs and fences: the loss curve
 * of one device with the same global batch (within 1e-6: the gradient's
 * sum runs in two halves, see libvtpu/tests/test_strategy.c), the two
 * replicas' weights bitwise equal, and bitwise what two cpu-backend
 * replicas compute (the same commands in the same order at the guest's
 * SIMD level).
 */
TEST_F_TIMEOUT(train, mlp_two_device_replicas, TRAIN_TIMEOUT)
{
	static const char *const devs[] = { "/dev/vtpu0", "/dev/vtpu1" };
	static const char *const cpus[] = { "cpu", "cpu" };
	static const char *const dup[] = { "/dev/vtpu1", "/dev/vtpu1" };
	static float w1[REP_MAX_W], wd[REP_MAX_W], wd1[REP_MAX_W];
	static float wc[REP_MAX_W], wc1[REP_MAX_W];
	double one[EPOCHS], two[EPOCHS], cpu[EPOCHS], worst = 0;
	struct vtpu_model *m;
	struct vtpu_dataset ds;
	VTPU_COMPILE_OPTS(co, .batch = 32);
	int e;

	if (access("/dev/vtpu1", R_OK | W_OK))
		SKIP(return, "no /dev/vtpu1 (start the guest with devices=2)");
	load_data(&ds, 320);
	ASSERT_EQ(0, train_replicas(devs, 0, &ds, one, w1, w1));
	ASSERT_EQ(0, train_replicas(devs, 2, &ds, two, wd, wd1));
	ASSERT_EQ(0, train_replicas(cpus, 2, &ds, cpu, wc, wc1));
	for (e = 0; e < EPOCHS; e++)
		worst = fmax(worst, fabs(one[e] - two[e]) / one[e]);
	EXPECT_GT(1e-6, worst);
	EXPECT_GT(two[0], two[EPOCHS - 1]);
	EXPECT_EQ(0, memcmp(wd, wd1, sizeof(wd)));
	EXPECT_EQ(0, memcmp(two, cpu, sizeof(two)));
	EXPECT_EQ(0, memcmp(wd, wc, sizeof(wd)));
	TH_LOG("MLP on %u images: one device %.7f -> %.7f, two device replicas %.7f -> %.7f (max rel diff %.1e), two cpu replicas %.7f -> %.7f",
	       ds.n, one[0], one[EPOCHS - 1], two[0], two[EPOCHS - 1], worst,
	       cpu[0], cpu[EPOCHS - 1]);

	m = mlp();
	EXPECT_EQ(-EINVAL, vtpu_model_compile_replicated(m, dup, 2, &co));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "both /dev/vtpu1"));
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
}

TEST_HARNESS_MAIN
