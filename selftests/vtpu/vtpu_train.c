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
 * Train on @device; Return: 0 or -errno, losses per epoch in @loss. With
 * @extras, a learning-rate schedule and random flips and shifts of the
 * images too.
 */
static int train(const char *device, build_fn build, bool extras,
		 const struct vtpu_dataset *ds, double *loss, double *acc)
{
	struct vtpu_model *m = build();
	VTPU_COMPILE_OPTS(co, .device = device, .batch = 32, .seed = 3);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record, .ctx = loss);
	double l;
	int ret;

	if (extras) {
		fo.lr_schedule = decay;
		fo.augment.flip = true;
		fo.augment.shift = 2;
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
		       bool extras, uint32_t n, const char *what)
{
	struct vtpu_dataset ds;
	double dev[EPOCHS], cpu[EPOCHS], dacc, cacc, worst = 0;
	int e;

	if (access("/dev/vtpu0", R_OK | W_OK))
		SKIP(return, "no /dev/vtpu0 (is vtpu.ko loaded?)");
	load_data(&ds, n);
	ASSERT_EQ(0, train("/dev/vtpu0", build, extras, &ds, dev, &dacc));
	ASSERT_EQ(0, train("cpu", build, extras, &ds, cpu, &cacc));
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
	same_curve(_metadata, mlp, false, 320, "MLP 784-64-10");
}

/* The rate rewritten in the submitted stream, and augmented images. */
TEST_F_TIMEOUT(train, mlp_schedule_augment_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, mlp, true, 320,
		   "MLP 784-64-10, lr / epoch, flips and shifts");
}

TEST_F_TIMEOUT(train, convnet_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, convnet, false, 96, "conv(20)-pool-relu-dense");
}

TEST_F_TIMEOUT(train, convnet2_device_matches_cpu, TRAIN_TIMEOUT)
{
	same_curve(_metadata, convnet2, false, 48,
		   "conv(4)-conv(6)-pool-dense");
}

TEST_HARNESS_MAIN
