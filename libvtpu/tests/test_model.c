// SPDX-License-Identifier: MIT
/*
 * Host tests of libvtpu's training stack: the compiled backward pass of
 * every op against finite differences, the memory planner, training to a
 * known answer, the cpu backend's two GEMMs agreeing, checkpoints, and
 * every bad input the model API takes, each with a clear error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <vtpu_model.h>

#include "../graph_priv.h"
#include "quadrant.h"
#include "vtpu_engine.h"

/* Random u8 images and labels in [0, classes). */
static void random_batch(uint32_t n, uint32_t isz, uint32_t classes,
			 uint8_t *img, uint32_t *lab, uint64_t seed)
{
	struct vtpu_rng rng;
	uint32_t i;

	vtpu_rng_seed(&rng, seed);
	for (i = 0; i < n * isz; i++)
		img[i] = (uint8_t)vtpu_rng_below(&rng, 256);
	for (i = 0; i < n; i++)
		lab[i] = (uint32_t)vtpu_rng_below(&rng, classes);
}

static double gradcheck_graph(struct __test_metadata *_metadata,
			      struct vtpu_graph *g, uint32_t batch)
{
	/* the input's size is the graph's (never a guess that can be short) */
	uint32_t isz = (uint32_t)(vtpu_graph_inputs_size(g, batch) / batch);
	uint8_t *img = malloc((size_t)batch * isz);
	uint32_t lab[64];
	double max_rel = 1;

	ASSERT_NE(NULL, img);
	random_batch(batch, isz, 5, img, lab, 3);
	EXPECT_EQ(0, vtpu_gradcheck(g, batch, img, lab, 12, &max_rel));
	free(img);
	return max_rel;
}

/*
 * Every op's backward pass against central differences of its forward.
 * Dense kernels of 16 units are row-major, of 64 in panels: their GEMMs
 * read and write the panels.
 */
TEST(gradcheck_dense_relu)
{
	static const uint32_t units[] = { 16, 64 };
	int u;

	for (u = 0; u < 2; u++) {
		struct vtpu_graph *g = vtpu_graph_create();
		int x = vtpu_graph_input(g, 3, 4, 2);

		x = vtpu_graph_dense(g, x, units[u], VTPU_ACT_RELU);
		x = vtpu_graph_dense(g, x, units[u], VTPU_ACT_RELU);
		x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
		ASSERT_LE(0, vtpu_graph_loss(g, x));
		double rel = gradcheck_graph(_metadata, g, 8);

		EXPECT_GT(2e-2, rel);
		TH_LOG("dense %u + relu: max relative error %.2e", units[u],
		       rel);
		vtpu_graph_destroy(g);
	}
}

TEST(gradcheck_conv_pool_relu)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 8, 8, 2);

	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_VALID, VTPU_ACT_NONE);
	x = vtpu_graph_maxpool(g, x, 2, 2);
	x = vtpu_graph_relu(g, x);
	x = vtpu_graph_flatten(g, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv (valid) + maxpool + relu + dense: max relative error %.2e",
	       rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_conv_relu_fused_with_pool)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 6, 6, 2);

	/* conv(relu) -> maxpool runs fused, the relu after the pooling */
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_maxpool(g, x, 2, 2);
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv(relu) + maxpool fused, then conv: max relative error %.2e",
	       rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_conv_pool_inside)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 6, 6, 2);

	/*
	 * The first conv + pool runs as CONV_POOL (its input is data); the
	 * second pair's input needs a gradient, so it runs fused through
	 * CONV and MAXPOOL, and gives one back through CONV_DGRAD.
	 */
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_maxpool(g, x, 1, 1);
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_maxpool(g, x, 2, 2);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv + pool 1x1 (direct), conv + pool (im2col): max relative "
	       "error %.2e", rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_nonsquare_pool)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 6, 9, 2);

	/* 2 x 3 windows, stride 2 down and 3 across: 3 x 3 outputs */
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_NONE);
	x = vtpu_graph_maxpool(g, x, 2, 3);
	x = vtpu_graph_conv2d(g, x, 2, 1, 1, 1, VTPU_PAD_VALID, VTPU_ACT_NONE);
	x = vtpu_graph_maxpool(g, x, 3, 1);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv + 2x3 pool (direct), conv + 3x1 pool (im2col): max "
	       "relative error %.2e", rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_conv_same_stacked)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 6, 6, 3);

	/* the second conv's input gradient comes from CONV_DGRAD */
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("two 'same' convs with relu: max relative error %.2e", rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_conv_strided)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 11, 11, 2);

	/*
	 * Strided convolutions give their input's gradient through GEMM and
	 * COL2IM (CONV_DGRAD wants stride 1): one alone (11 -> 5, valid),
	 * one fused with its pooling (5 -> 3, same).
	 */
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 2, VTPU_PAD_VALID, VTPU_ACT_RELU);
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 2, VTPU_PAD_SAME, VTPU_ACT_NONE);
	x = vtpu_graph_maxpool(g, x, 2, 2);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("stride-2 convs, alone and fused with a pool: max relative "
	       "error %.2e", rel);
	vtpu_graph_destroy(g);
}

/*
 * Depthwise and separable convolutions: a depthwise one on the data
 * (TensorFlow's SAME at stride 2 over 8 pixels: the odd pad below and
 * right), two filters per channel; separable ones after it, whose
 * depthwise halves give their input's gradient through DWCONV_DGRAD and
 * whose pointwise halves are GEMMs; a residual add so that one input's
 * gradient has two sources; VALID with an even kernel.
 */
TEST(gradcheck_depthwise_separable)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 8, 8, 2), y;

	x = vtpu_graph_depthwise_conv2d(g, x, 3, 3, 2, VTPU_PAD_SAME, 2,
					VTPU_ACT_RELU);
	ASSERT_LE(0, x);
	y = vtpu_graph_separable_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME,
					VTPU_ACT_RELU);
	ASSERT_LE(0, y);
	x = vtpu_graph_add(g, x, y);
	x = vtpu_graph_depthwise_conv2d(g, x, 3, 1, 1, VTPU_PAD_SAME, 1,
					VTPU_ACT_NONE);
	x = vtpu_graph_separable_conv2d(g, x, 3, 2, 2, 1, VTPU_PAD_VALID,
					VTPU_ACT_NONE);
	ASSERT_LE(0, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("depthwise (stride 2, x2) + separable + add + depthwise + "
	       "separable (valid, 2x2): max relative error %.2e", rel);
	vtpu_graph_destroy(g);
}

/*
 * The ready-made networks (vtpu_app_resnet, vtpu_app_xception, vtpu_app_vgg)
 * at width 2: every kind of layer they use (strided and 1x1 convolutions,
 * batch norm in training mode, residual adds, 'same' and 'valid' max
 * pools, separable convolutions, global average pooling, dense layers on
 * a flattened image) in one gradient check each.
 */
TEST(gradcheck_applications)
{
	VTPU_APP_OPTS(o, .width = 2);
	int k;

	for (k = 0; k < 3; k++) {
		struct vtpu_graph *g = vtpu_graph_create();
		uint32_t side = k == 2 ? 8 : k ? 16 : 32;
		int x = vtpu_graph_input(g, side, side, 3);
		double rel;

		x = k == 2 ? vtpu_app_vgg(g, x, 5, &o) :
		    k ? vtpu_app_xception(g, x, 5, &o) :
			vtpu_app_resnet(g, x, 5, &o);
		ASSERT_LE(0, x);
		ASSERT_LE(0, vtpu_graph_loss(g, x));
		rel = gradcheck_graph(_metadata, g, 4);
		/*
		 * VGG at 8x8 (its three pools down to 1x1): at 16x16 its five
		 * ReLU convolutions of 2-8 filters without batch norm give
		 * gradients so small in places that float32's central
		 * differences are off by 1e-2 to 1e-1, at every width.
		 */
		EXPECT_GT(2e-2, rel);
		TH_LOG("%s at width 2: max relative error %.2e",
		       k == 2 ? "vgg" : k ? "xception" : "resnet", rel);
		vtpu_graph_destroy(g);
	}
}

/* Their sizes, as tools/bench_train_pytorch.py's twins count them. */
TEST(applications_shapes)
{
	struct vtpu_graph *g = vtpu_graph_create(), *g2;
	int x = vtpu_graph_input(g, 64, 64, 3), bad;
	VTPU_APP_OPTS(big, .width = 2048);

	/* 1x1 at the end of the last stage: a vector of 8 * width */
	x = vtpu_app_resnet(g, x, 5, NULL);
	ASSERT_LE(0, x);
	/*
	 * PyTorch's resnet64 has 2800165 parameters; the engine's convolutions
	 * add a bias each (20 of them, 2400 values: as many as the batch
	 * norms' channels) and its batch norms count their moving statistics
	 * (2 * 2400): 2800165 + 3 * 2400.
	 */
	EXPECT_EQ(2800165 + 3 * 2400, vtpu_graph_num_params(g));
	/*
	 * vgg at width 32: convolutions 896 + 9248 + 18496 + 36928 + 73856,
	 * dense 8 * 8 * 128 * 128 + 128 and 128 * 5 + 5, counted by hand
	 */
	g2 = vtpu_graph_create();
	x = vtpu_app_vgg(g2, vtpu_graph_input(g2, 64, 64, 3), 5, NULL);
	ASSERT_LE(0, x);
	EXPECT_EQ(1188773, vtpu_graph_num_params(g2));
	EXPECT_EQ(-EINVAL, vtpu_app_vgg(g2, x, 0, NULL));
	vtpu_graph_destroy(g2);
	bad = vtpu_app_resnet(g, vtpu_graph_input(g, 8, 8, 3), 5, &big);
	EXPECT_EQ(-EINVAL, bad);
	EXPECT_EQ(-EINVAL, vtpu_app_xception(NULL, 0, 5, NULL));
	EXPECT_EQ(-EINVAL, vtpu_app_xception(g, 0, 0, NULL));
	vtpu_graph_destroy(g);
}

TEST(gradcheck_conv_global_avgpool_dense)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 7, 6, 2);

	/* ResNet's head: conv -> global average pool -> dense */
	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_global_avgpool(g, x);
	ASSERT_LE(0, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv + global average pool + dense: max relative error %.2e",
	       rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_strided_padded_pools)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 9, 9, 2), c;

	/*
	 * MaxPooling2D(3, strides=2, padding='same') on 9 x 9 (even split:
	 * one row each side) right after a conv (not fused: padded), then
	 * AveragePooling2D(3, 2, 'same') on 5 x 5 and 2 x 2 valid on 3 x 3.
	 */
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_NONE);
	x = vtpu_graph_maxpool2d(g, x, 3, 3, 2, VTPU_PAD_SAME);
	ASSERT_LE(0, x);
	c = vtpu_graph_conv2d(g, x, 3, 1, 1, 1, VTPU_PAD_VALID, VTPU_ACT_NONE);
	x = vtpu_graph_avgpool(g, c, 3, 3, 2, VTPU_PAD_SAME);
	ASSERT_LE(0, x);
	x = vtpu_graph_avgpool(g, x, 2, 2, 1, VTPU_PAD_VALID);
	ASSERT_LE(0, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("strided 'same' max and average pools: max relative error "
	       "%.2e", rel);
	vtpu_graph_destroy(g);
}

TEST(gradcheck_maxpool_same_odd_padding)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 8, 6, 2);

	/* ResNet's stem: MaxPooling2D(3, 2, 'same') on an even size */
	x = vtpu_graph_conv2d(g, x, 3, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_RELU);
	x = vtpu_graph_maxpool2d(g, x, 3, 3, 2, VTPU_PAD_SAME);
	ASSERT_LE(0, x);
	x = vtpu_graph_global_avgpool(g, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 4);

	EXPECT_GT(2e-2, rel);
	TH_LOG("'same' max pool with its odd pad row and column at the end: "
	       "max relative error %.2e", rel);
	vtpu_graph_destroy(g);
}

TEST(pool_shapes_and_refusals)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 8, 7, 3), y;

	/* Keras' sizes: same -> ceil(n / s), the odd pad row at the end */
	y = vtpu_graph_avgpool(g, x, 3, 3, 2, VTPU_PAD_SAME);
	ASSERT_LE(0, y);
	y = vtpu_graph_avgpool(g, x, 2, 2, 2, VTPU_PAD_VALID);
	ASSERT_LE(0, y);
	EXPECT_LE(0, vtpu_graph_global_avgpool(g, x));
	/* 8 rows, 3 x 3 stride 2 same: one pad row, below (Keras) */
	EXPECT_LE(0, vtpu_graph_maxpool2d(g, x, 3, 3, 2, VTPU_PAD_SAME));
	EXPECT_EQ(-EINVAL, vtpu_graph_maxpool2d(g, x, 9, 3, 2, VTPU_PAD_VALID));
	EXPECT_EQ(-EINVAL, vtpu_graph_avgpool(g, x, 9, 2, 1, VTPU_PAD_VALID));
	EXPECT_EQ(-EINVAL, vtpu_graph_avgpool(g, x, 2, 2, 0, VTPU_PAD_VALID));
	EXPECT_EQ(-EINVAL, vtpu_graph_avgpool(g, x, 2, 2, 1, 7));
	EXPECT_EQ(-EINVAL, vtpu_graph_global_avgpool(g, 99));
	vtpu_graph_destroy(g);
}

TEST(sequential_pools_summary)
{
	struct vtpu_model *m = vtpu_model_create(8, 8, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	ASSERT_NE(NULL, m);
	ASSERT_LE(0, vtpu_model_add_conv2d(m, 4, 3, 3, VTPU_PAD_SAME,
					   VTPU_ACT_RELU));
	ASSERT_LE(0, vtpu_model_add_avgpool(m, 3, 3, 2, VTPU_PAD_SAME));
	EXPECT_GT(0, vtpu_model_add_avgpool(m, 3, 3, 0, VTPU_PAD_SAME));
	ASSERT_LE(0, vtpu_model_add_global_avgpool(m));
	ASSERT_LE(0, vtpu_model_add_dense(m, 3, VTPU_ACT_SOFTMAX));
	f = open_memstream(&text, &len);
	ASSERT_NE(NULL, f);
	vtpu_model_summary(m, f);
	fclose(f);
	EXPECT_NE(NULL, strstr(text, "average_pooling2d (AveragePooling2D)"))
		TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "global_average_pooling2d (GlobalAve"))
		TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "(None, 4, 4, 4)")) TH_LOG("%s", text);
	free(text);
	vtpu_model_destroy(m);
}

TEST(gradcheck_residual_add)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int in = vtpu_graph_input(g, 2, 2, 4);
	int a = vtpu_graph_dense(g, in, 8, VTPU_ACT_RELU);
	int b = vtpu_graph_dense(g, a, 8, VTPU_ACT_RELU);
	int s = vtpu_graph_add(g, a, b); /* a's gradient has two sources */
	int out = vtpu_graph_dense(g, s, 5, VTPU_ACT_NONE);

	ASSERT_LE(0, vtpu_graph_loss(g, out));
	double rel = gradcheck_graph(_metadata, g, 8);

	EXPECT_GT(2e-2, rel);
	TH_LOG("residual add (gradient accumulation): max relative error %.2e",
	       rel);
	vtpu_graph_destroy(g);
}

/*
 * Batch norm after a conv (per channel over N * H * W) and after a dense
 * layer (per feature over the batch), in training mode: the gradient
 * flows through the batch's mean and variance.
 */
TEST(gradcheck_batchnorm)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 6, 6, 2);

	x = vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME, VTPU_ACT_NONE);
	ASSERT_EQ(-EINVAL, vtpu_graph_batchnorm(g, x, 1.5f, 1e-3f));
	ASSERT_EQ(-EINVAL, vtpu_graph_batchnorm(g, x, 0.99f, 0.0f));
	ASSERT_EQ(-EINVAL, vtpu_graph_batchnorm(g, x, 0.99f, NAN));
	x = vtpu_graph_batchnorm(g, x, 0.99f, 1e-3f);
	x = vtpu_graph_relu(g, x);
	x = vtpu_graph_maxpool(g, x, 2, 2);
	x = vtpu_graph_flatten(g, x);
	x = vtpu_graph_dense(g, x, 8, VTPU_ACT_NONE);
	x = vtpu_graph_batchnorm(g, x, 0.9f, 1e-3f);
	x = vtpu_graph_relu(g, x);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	double rel = gradcheck_graph(_metadata, g, 8);

	EXPECT_GT(2e-2, rel);
	TH_LOG("conv + batchnorm, dense + batchnorm: max relative error %.2e",
	       rel);
	vtpu_graph_destroy(g);
}

TEST(graph_rejects_bad_shapes)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int in = vtpu_graph_input(g, 4, 4, 1);

	EXPECT_EQ(-EEXIST, vtpu_graph_input(g, 4, 4, 1));
	EXPECT_EQ(-EINVAL, vtpu_graph_conv2d(g, in, 2, 5, 5, 1, VTPU_PAD_VALID,
					     VTPU_ACT_NONE));
	/* 'same' with an even kernel pads one side more: not supported */
	EXPECT_EQ(-EINVAL, vtpu_graph_conv2d(g, in, 2, 2, 2, 1, VTPU_PAD_SAME,
					     VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_maxpool(g, in, 5, 5));
	EXPECT_EQ(-EINVAL, vtpu_graph_dense(g, 99, 3, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_dense(g, in, 0, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_add(g, in, in));
	EXPECT_EQ(-EINVAL, vtpu_graph_loss(g, in)); /* not a vector */
	/* depthwise, separable: no tanh, multiplier >= 1, 256 taps at most */
	EXPECT_EQ(-EINVAL, vtpu_graph_depthwise_conv2d(g, in, 3, 3, 1,
		  VTPU_PAD_SAME, 1, VTPU_ACT_TANH));
	EXPECT_EQ(-EINVAL, vtpu_graph_depthwise_conv2d(g, in, 3, 3, 1,
		  VTPU_PAD_SAME, 0, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_depthwise_conv2d(g, in, 3, 3, 1,
		  VTPU_PAD_SAME, 29, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_depthwise_conv2d(g, in, 5, 5, 1,
		  VTPU_PAD_VALID, 1, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_depthwise_conv2d(g, in, 3, 3, 0,
		  VTPU_PAD_SAME, 1, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_separable_conv2d(g, in, 0, 3, 3, 1,
		  VTPU_PAD_SAME, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_separable_conv2d(g, in, 2, 3, 3, 1,
		  VTPU_PAD_SAME, VTPU_ACT_SOFTMAX));
	EXPECT_EQ(-EINVAL, vtpu_graph_separable_conv2d(g, in, 2, 17, 17, 1,
		  VTPU_PAD_SAME, VTPU_ACT_NONE));
	EXPECT_EQ(-EINVAL, vtpu_graph_separable_conv2d(g, 99, 2, 3, 3, 1,
		  VTPU_PAD_SAME, VTPU_ACT_NONE));
	TH_LOG("bad shapes, node ids and layer arguments give EINVAL");
	vtpu_graph_destroy(g);
}

/* ---- the model API ------------------------------------------------------ */

/*
 * @n grey @side x @side images of @classes classes, their pixels and
 * labels (u8, as the loaders give them) left to fill, and @rng seeded.
 */
static void grey_set(struct vtpu_dataset *ds, uint32_t n, uint32_t side,
		     uint32_t classes, struct vtpu_rng *rng, uint64_t seed)
{
	memset(ds, 0, sizeof(*ds));
	ds->n = n;
	ds->height = side;
	ds->width = side;
	ds->channels = 1;
	ds->classes = classes;
	ds->images = malloc((size_t)n * side * side);
	ds->labels = malloc(n);
	vtpu_rng_seed(rng, seed);
}




TEST(fit_learns_and_planner_reuses)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *m = quadrant_model(32);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f);
	double losses[6], loss, acc;
	VTPU_FIT_OPTS(fo, .epochs = 6, .on_epoch = record_loss, .ctx = losses);
	struct vtpu_model_info info;

	quadrant_set(&train, 1000, 1); /* 31 full batches and one of 8 */
	quadrant_set(&test, 200, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co)) TH_LOG("%s",
						      vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_info(m, &info));
	EXPECT_LT(info.work_bytes, info.naive_bytes);
	TH_LOG("%u commands per step, arena %llu bytes (%llu without reuse)",
	       info.commands, (unsigned long long)info.work_bytes,
	       (unsigned long long)info.naive_bytes);
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo)) TH_LOG("%s",
							  vtpu_model_error(m));
	EXPECT_LT(losses[5], losses[0] / 2);
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &loss, &acc));
	EXPECT_LT(0.95, acc);
	TH_LOG("loss %.4f -> %.4f over 6 epochs, test acc %.3f", losses[0],
	       losses[5], acc);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

static float halve_from_epoch_2(void *ctx, uint32_t epoch, uint32_t epochs,
				float lr)
{
	float *seen = ctx;

	seen[epoch - 1] = lr;
	return epoch >= 2 ? lr / 2 : lr;
}

/* A schedule's context: the rate from epoch 2 on, and the losses. */
struct later_rate {
	float rate;
	double loss[3];
};

static float rate_after_epoch_1(void *ctx, uint32_t epoch, uint32_t epochs,
				float lr)
{
	return epoch == 1 ? lr : ((struct later_rate *)ctx)->rate;
}

static void later_rate_loss(void *ctx, const struct vtpu_epoch_stats *st)
{
	((struct later_rate *)ctx)->loss[st->epoch - 1] = st->loss;
}

static float nan_rate(void *ctx, uint32_t epoch, uint32_t epochs, float lr)
{
	return NAN;
}

/*
 * vtpu_model_set_learning_rate() patches the compiled programs in place:
 * a model compiled with one rate and set to another trains as one compiled
 * with the other, full and partial batches alike, for Adam and SGD; a
 * schedule sees each epoch's rate and a bad rate is refused.
 */
/*
 * Where the compiler puts the optimizer's updates (compile.c,
 * place_updates()), for Adam and SGD: in a plain training program
 * ADAM_STEP first, then a large parameter's update after the first
 * compute-bound command past its last use, so the second layer's (the
 * bulk of an MLP's weights) goes beside the first layer's weight
 * gradient, the step's last GEMM, and the others at the end; every float
 * of every parameter updated by exactly one command. A program to be split (replicas) keeps one
 * update of the whole block at the end. That an early update changes no
 * bit is one_replica_is_the_plain_model_bitwise (test_strategy.c).
 */
TEST(updates_beside_the_next_weight_gradient)
{
	static const enum vtpu_optimizer kinds[] = { VTPU_OPT_ADAM,
						     VTPU_OPT_SGD };
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 8, 8, 1), k, split, p;

	/* the second layer's 2^20 weights are updated early; not 2^16 */
	x = vtpu_graph_dense(g, x, 1024, VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 1024, VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 10, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	for (k = 0; k < 2; k++)
		for (split = 0; split < 2; split++) {
			const uint32_t upd = k ? VTPU_OP_SGD : VTPU_OP_ADAM;
			struct vg_optim opt = { .kind = kinds[k], .lr = 0.01f,
						.beta1 = 0.9f, .beta2 = 0.999f,
						.eps = 1e-7f, .split = split };
			struct vg_state_layout sl;
			const struct vtpu_cmd_hdr *h;
			struct vg_program prog;
			uint32_t pos = 0, n = 0, last_gemm = 0, first_upd = 0;
			uint32_t updates = 0, steps = 0, last_upd = 0;
			uint8_t *seen;

			vg_state_layout(g, kinds[k], &sl);
			seen = calloc(g->nparam_floats, 1);
			ASSERT_NE(NULL, seen);
			ASSERT_EQ(0, vg_compile(g, VG_PROG_TRAIN, 16, &opt,
						&prog));
			while ((h = vtpu_engine_next(prog.cb.data, prog.cb.size,
						     &pos))) {
				const struct vtpu_cmd_adam *a = (const void *)h;
				const struct vtpu_cmd_sgd *sg = (const void *)h;
				uint64_t off, cnt, i;

				n++;
				if (h->opcode == VTPU_OP_ADAM_STEP)
					steps = n;
				if (h->opcode == VTPU_OP_GEMM)
					last_gemm = n;
				if (h->opcode != upd)
					continue;
				off = k ? sg->param.offset : a->param.offset;
				cnt = k ? sg->count : a->count;
				off = (off - sl.params) / sizeof(float);
				ASSERT_GE(g->nparam_floats, off + cnt);
				for (i = off; i < off + cnt; i++)
					seen[i]++;
				if (!first_upd)
					first_upd = n;
				last_upd = n;
				updates++;
			}
			/* ADAM_STEP before every ADAM: first, or last but one */
			EXPECT_EQ(k ? 0u : split ? n - 1 : 1u, steps);
			for (p = 0; p < g->nparams; p++)
				for (uint64_t i = 0; i < g->params[p].count;
				     i++)
					ASSERT_EQ(1, seen[g->params[p].offset +
							  i]);
			EXPECT_EQ(n, last_upd);
			if (split) {
				EXPECT_EQ(1u, updates);
			} else {
				EXPECT_LE(2u, updates);
				EXPECT_EQ(last_gemm + 1, first_upd);
			}
			free(seen);
			vg_program_fini(&prog);
		}
	vtpu_graph_destroy(g);
}

TEST(learning_rate_changes_in_place)
{
	struct vtpu_dataset train;
	int k;

	quadrant_set(&train, 100, 4); /* 3 batches of 32 and one of 4 */
	for (k = 0; k < 2; k++) {
		enum vtpu_optimizer opt = k ? VTPU_OPT_SGD : VTPU_OPT_ADAM;
		struct later_rate d = { .rate = 1e-3f };
		double a[3], b[3], c[3];
		float seen[3], low = 1e-3f;
		struct vtpu_model *m[4];
		int i;

		for (i = 0; i < 4; i++) {
			VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32,
					  .seed = 7, .optimizer = opt,
					  .momentum = 0.9f,
					  .learning_rate = i == 1 ? low : 0.02f);

			m[i] = quadrant_model(32);
			ASSERT_EQ(0, vtpu_model_compile(m[i], &co));
		}
		/* a: 0.02 throughout; b: compiled at 0.001, set to 0.02 */
		VTPU_FIT_OPTS(fa, .epochs = 3, .on_epoch = record_loss,
			      .ctx = a);
		ASSERT_EQ(0, vtpu_model_fit(m[0], &train, &fa));
		ASSERT_EQ(0, vtpu_model_set_learning_rate(m[1], 0.02f));
		VTPU_FIT_OPTS(fb, .epochs = 3, .on_epoch = record_loss,
			      .ctx = b);
		ASSERT_EQ(0, vtpu_model_fit(m[1], &train, &fb));
		EXPECT_EQ(0, memcmp(a, b, sizeof(a)));

		/* c: one epoch, then both programs set to 0.001 for two more */
		VTPU_FIT_OPTS(fc, .epochs = 1, .on_epoch = record_loss,
			      .ctx = c);
		ASSERT_EQ(0, vtpu_model_fit(m[2], &train, &fc));
		ASSERT_EQ(0, vtpu_model_set_learning_rate(m[2], low));
		fc.epochs = 2;
		fc.ctx = c + 1;
		ASSERT_EQ(0, vtpu_model_fit(m[2], &train, &fc));
		/* d: the same, by a schedule within one fit */
		VTPU_FIT_OPTS(fd, .epochs = 3, .on_epoch = later_rate_loss,
			      .ctx = &d, .lr_schedule = rate_after_epoch_1);
		ASSERT_EQ(0, vtpu_model_fit(m[3], &train, &fd));
		EXPECT_EQ(low, vtpu_model_learning_rate(m[3]));
		EXPECT_EQ(0, memcmp(c, d.loss, sizeof(c)));
		EXPECT_EQ(a[0], c[0]);
		EXPECT_NE(a[1], c[1]);
		TH_LOG("%s: loss %.5f %.5f %.5f at 0.02, %.5f %.5f %.5f at 0.02 then 0.001",
		       k ? "sgd" : "adam", a[0], a[1], a[2], c[0], c[1], c[2]);
		for (i = 0; i < 4; i++)
			vtpu_model_destroy(m[i]);

		/* the schedule sees each epoch's rate; bad rates are refused */
		m[0] = quadrant_model(32);
		VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32,
				  .optimizer = opt, .learning_rate = 0.02f);
		ASSERT_EQ(0, vtpu_model_compile(m[0], &co));
		VTPU_FIT_OPTS(fs, .epochs = 3, .lr_schedule = halve_from_epoch_2,
			      .ctx = seen);
		ASSERT_EQ(0, vtpu_model_fit(m[0], &train, &fs));
		EXPECT_EQ(0.02f, seen[0]);
		EXPECT_EQ(0.01f, seen[2]);
		EXPECT_EQ(0.005f, vtpu_model_learning_rate(m[0]));
		EXPECT_EQ(-EINVAL, vtpu_model_set_learning_rate(m[0], NAN));
		EXPECT_EQ(-EINVAL, vtpu_model_set_learning_rate(m[0], 0));
		EXPECT_EQ(-EINVAL, vtpu_model_set_learning_rate(m[0], -1));
		EXPECT_EQ(-EINVAL,
			  vtpu_model_set_learning_rate(m[0], INFINITY));
		TH_LOG("infinite rate: %s", vtpu_model_error(m[0]));
		fs.lr_schedule = nan_rate;
		EXPECT_EQ(-EINVAL, vtpu_model_fit(m[0], &train, &fs));
		TH_LOG("a schedule's NaN: %s", vtpu_model_error(m[0]));
		EXPECT_EQ(0.005f, vtpu_model_learning_rate(m[0]));
		vtpu_model_destroy(m[0]);
	}
	vtpu_dataset_free(&train);
}

/* Train three epochs in file order, recording the losses. */
static int fit_losses(const struct vtpu_dataset *train,
		      const struct vtpu_augment *aug, double losses[3])
{
	struct vtpu_model *m = quadrant_model(32);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 3,
			  .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = 3, .no_shuffle = true,
		      .on_epoch = record_loss, .ctx = losses,
		      .augment = *aug);
	int ret = vtpu_model_compile(m, &co);

	if (!ret)
		ret = vtpu_model_fit(m, train, &fo);
	vtpu_model_destroy(m);
	return ret;
}

/*
 * fit's augmentation reaches the device: flipping images that are their
 * own mirror image changes nothing, flipping or shifting others changes
 * the training, and a shift as large as the image is refused.
 */
TEST(fit_augments_training_images)
{
	struct vtpu_augment none = { 0 }, flip = { .flip = true },
			    shift = { .shift = 1 }, huge = { .shift = 4 };
	struct vtpu_dataset train, mirrored;
	double l0[3], l1[3], m0[3], m1[3], s1[3];
	struct vtpu_model *m;
	uint32_t i, y, x;

	quadrant_set(&train, 96, 6);
	quadrant_set(&mirrored, 96, 6);
	for (i = 0; i < mirrored.n; i++)
		for (y = 0; y < 4; y++)
			for (x = 0; x < 2; x++)
				mirrored.images[i * 16 + y * 4 + 3 - x] =
					mirrored.images[i * 16 + y * 4 + x];
	ASSERT_EQ(0, fit_losses(&mirrored, &none, m0));
	ASSERT_EQ(0, fit_losses(&mirrored, &flip, m1));
	EXPECT_EQ(0, memcmp(m0, m1, sizeof(m0)));
	ASSERT_EQ(0, fit_losses(&train, &none, l0));
	ASSERT_EQ(0, fit_losses(&train, &flip, l1));
	ASSERT_EQ(0, fit_losses(&train, &shift, s1));
	EXPECT_NE(l0[2], l1[2]);
	EXPECT_NE(l0[2], s1[2]);
	TH_LOG("loss after 3 epochs: %.5f as is, %.5f flipped, %.5f shifted",
	       l0[2], l1[2], s1[2]);

	m = quadrant_model(32);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32);
	VTPU_FIT_OPTS(fo, .augment = huge);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	EXPECT_EQ(-EINVAL, vtpu_model_fit(m, &train, &fo));
	TH_LOG("shift of 4 on 4x4 images: %s", vtpu_model_error(m));
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&mirrored);
}

/*
 * The engine's GEMM and OpenBLAS's give the same training, within float:
 * also the same initial weights, drawn row by row whatever the layout.
 */
TEST(engine_and_openblas_agree)
{
	struct vtpu_dataset train;
	double l[2][3], worst = 0;
	int k;

	quadrant_set(&train, 256, 3);
	for (k = 0; k < 2; k++) {
		struct vtpu_model *m = quadrant_model(96);
		VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 9,
				  .cpu_gemm = k ? VTPU_CPU_GEMM_OPENBLAS :
						  VTPU_CPU_GEMM_ENGINE);
		VTPU_FIT_OPTS(fo, .epochs = 3, .no_shuffle = true,
			      .on_epoch = record_loss, .ctx = l[k]);

		ASSERT_EQ(0, vtpu_model_compile(m, &co));
		ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
		vtpu_model_destroy(m);
	}
	for (k = 0; k < 3; k++)
		worst = fmax(worst, fabs(l[0][k] - l[1][k]) / l[0][k]);
	EXPECT_GT(1e-4, worst);
	TH_LOG("loss curves: engine %.6f %.6f %.6f, openblas %.6f %.6f %.6f",
	       l[0][0], l[0][1], l[0][2], l[1][0], l[1][1], l[1][2]);
	vtpu_dataset_free(&train);
}

/* Dropout trains (new masks each step) and is the identity when evaluating. */
TEST(dropout_trains_and_evaluates_deterministically)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f);
	double losses[6], l1, a1, l2, a2;
	VTPU_FIT_OPTS(fo, .epochs = 6, .on_epoch = record_loss, .ctx = losses);
	struct vtpu_graph *g;

	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 64, VTPU_ACT_RELU);
	ASSERT_EQ(-EINVAL, vtpu_model_add_dropout(m, 1.0f));
	ASSERT_EQ(0, vtpu_model_add_dropout(m, 0.5f));
	vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX);
	quadrant_set(&train, 1000, 1);
	quadrant_set(&test, 200, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	EXPECT_LT(losses[5], losses[0] / 2);
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	EXPECT_LT(0.9, a1);
	g = vtpu_model_graph(m);
	EXPECT_EQ(-EINVAL, vtpu_gradcheck(g, 4, train.images, NULL, 4, &l2));
	TH_LOG("dropout 0.5: loss %.4f -> %.4f, test acc %.3f twice the same",
	       losses[0], losses[5], a1);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

/*
 * A Sequential model with batch norm: training moves the moving statistics
 * (4 weights in Keras' order), evaluate uses them (changing them changes
 * the loss), and a checkpoint carries them.
 */
TEST(batchnorm_moving_stats_and_checkpoint)
{
	char path[] = "/tmp/vtpu-model-XXXXXX";
	struct vtpu_dataset train, test;
	struct vtpu_model *m = vtpu_model_create(4, 4, 1), *o;
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = 3);
	static const char *const names[4] = {
		"batch_normalization/gamma", "batch_normalization/beta",
		"batch_normalization/moving_mean",
		"batch_normalization/moving_variance" };
	struct vtpu_weight_info wi;
	float mm[32], mv[32], mm2[32], mv2[32];
	double l1, a1, l2, a2, l3, a3;
	int fd = mkstemp(path), i, moved = 0;

	ASSERT_LE(0, fd);
	close(fd);
	for (o = m, i = 0; i < 2; i++, o = vtpu_model_create(4, 4, 1)) {
		ASSERT_EQ(0, vtpu_model_add_flatten(o));
		ASSERT_EQ(0, vtpu_model_add_dense(o, 32, VTPU_ACT_NONE));
		ASSERT_EQ(0, vtpu_model_add_batchnorm(o, 0.9f, 1e-3f));
		ASSERT_EQ(0, vtpu_model_add_relu(o));
		ASSERT_EQ(0, vtpu_model_add_dense(o, 4, VTPU_ACT_SOFTMAX));
		ASSERT_EQ(0, vtpu_model_compile(o, &co));
		if (i)
			break;
	}
	ASSERT_EQ(8, vtpu_model_num_weights(m));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, vtpu_model_weight_info(m, 2 + i, &wi));
		EXPECT_STREQ(names[i], wi.name);
		EXPECT_EQ(32, wi.count);
	}
	quadrant_set(&train, 512, 1);
	quadrant_set(&test, 128, 2);
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	ASSERT_EQ(0, vtpu_model_get_weights(m, 4, mm, 32));
	ASSERT_EQ(0, vtpu_model_get_weights(m, 5, mv, 32));
	for (i = 0; i < 32; i++)
		moved += mm[i] != 0.0f && mv[i] != 1.0f;
	EXPECT_LT(24, moved);
	/*
	 * The batch norm subtracts the batch mean, so the first dense
	 * layer's bias has a gradient of 0 exactly (not a sum that is 0 but
	 * for rounding, which Adam would scale into steps): it is still 0;
	 * the last layer's bias moved.
	 */
	ASSERT_EQ(0, vtpu_model_get_weights(m, 1, mm2, 32));
	for (i = 0; i < 32; i++)
		EXPECT_EQ(0.0f, mm2[i]);
	ASSERT_EQ(0, vtpu_model_get_weights(m, 7, mm2, 4));
	for (i = 0; i < 4; i++)
		EXPECT_NE(0.0f, mm2[i]);
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	EXPECT_LT(0.8, a1);
	ASSERT_EQ(0, vtpu_model_save(m, path)) TH_LOG("%s",
						    vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_load(o, path)) TH_LOG("%s",
						    vtpu_model_error(o));
	ASSERT_EQ(0, vtpu_model_get_weights(o, 4, mm2, 32));
	ASSERT_EQ(0, vtpu_model_get_weights(o, 5, mv2, 32));
	EXPECT_EQ(0, memcmp(mm, mm2, sizeof(mm)));
	EXPECT_EQ(0, memcmp(mv, mv2, sizeof(mv)));
	ASSERT_EQ(0, vtpu_model_evaluate(o, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	/* evaluate normalises with the moving statistics */
	for (i = 0; i < 32; i++)
		mv2[i] = mv[i] * 4;
	ASSERT_EQ(0, vtpu_model_set_weights(o, 5, mv2, 32));
	ASSERT_EQ(0, vtpu_model_evaluate(o, &test, &l3, &a3));
	EXPECT_NE(l1, l3);
	TH_LOG("batchnorm: %d of 32 moving stats moved, loss %.4f, %.4f "
	       "loaded, %.4f with 4x the variance", moved, l1, l2, l3);
	unlink(path);
	vtpu_model_destroy(m);
	vtpu_model_destroy(o);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

static struct vtpu_model *bn_fold_model(uint32_t nofold)
{
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f, .no_bn_fold = nofold);

	if (vtpu_model_add_conv2d(m, 4, 3, 3, VTPU_PAD_SAME, VTPU_ACT_NONE) ||
	    vtpu_model_add_batchnorm(m, 0.9f, 1e-3f) ||
	    vtpu_model_add_relu(m) || vtpu_model_add_flatten(m) ||
	    vtpu_model_add_dense(m, 10, VTPU_ACT_NONE) ||
	    vtpu_model_add_batchnorm(m, 0.9f, 1e-3f) ||
	    vtpu_model_add_relu(m) ||
	    vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX) ||
	    vtpu_model_compile(m, &co)) {
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

/*
 * Inference folds a batch norm after a conv and after a dense layer into
 * their weights; with no_bn_fold it runs them: the two agree (1e-5
 * relative), and are not bit for bit the same (the fold did run).
 */
TEST(batchnorm_folding_agrees)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *a = bn_fold_model(0), *b = bn_fold_model(1);
	VTPU_FIT_OPTS(fo, .epochs = 2);
	struct vtpu_weight_info wi;
	float *pa, *pb, *w;
	double worst = 0, la, aa, lb, ab;
	uint32_t i;
	int k, differ = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	quadrant_set(&train, 512, 1);
	quadrant_set(&test, 100, 2);
	ASSERT_EQ(0, vtpu_model_fit(a, &train, &fo));
	for (k = 0; k < vtpu_model_num_weights(a); k++) {
		ASSERT_EQ(0, vtpu_model_weight_info(a, k, &wi));
		w = malloc(wi.count * sizeof(float));
		ASSERT_EQ(0, vtpu_model_get_weights(a, k, w, wi.count));
		ASSERT_EQ(0, vtpu_model_set_weights(b, k, w, wi.count));
		free(w);
	}
	pa = malloc(test.n * 4 * sizeof(float));
	pb = malloc(test.n * 4 * sizeof(float));
	ASSERT_EQ(0, vtpu_model_predict(a, test.images, test.n, pa));
	ASSERT_EQ(0, vtpu_model_predict(b, test.images, test.n, pb));
	for (i = 0; i < test.n * 4; i++) {
		double d = fabs(pa[i] - pb[i]) / fmax(fabs(pb[i]), 1e-3);

		worst = fmax(worst, d);
		differ += pa[i] != pb[i];
	}
	EXPECT_GT(1e-5, worst);
	EXPECT_LT(0, differ);
	ASSERT_EQ(0, vtpu_model_evaluate(a, &test, &la, &aa));
	ASSERT_EQ(0, vtpu_model_evaluate(b, &test, &lb, &ab));
	EXPECT_GT(1e-5, fabs(la - lb) / lb);
	EXPECT_EQ(aa, ab);
	TH_LOG("folded vs not: max relative difference %.2e (%d of %u "
	       "differ), loss %.6f %.6f", worst, differ, test.n * 4, la, lb);
	free(pa);
	free(pb);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

/*
 * Model @a, compiled to @fewer commands a step less than @b, trains as @b
 * bit for bit: the losses of three epochs, every weight after them,
 * evaluate and predict (4 classes). Both are destroyed.
 */
static void expect_same_training(struct __test_metadata *_metadata,
				 struct vtpu_model *a, struct vtpu_model *b,
				 uint32_t fewer, const char *what)
{
	struct vtpu_dataset train, test;
	VTPU_FIT_OPTS(fo, .epochs = 3, .on_epoch = record_loss);
	double la[3], lb[3], ea, eb, aa, ab;
	struct vtpu_model_info ia, ib;
	struct vtpu_weight_info wi;
	float *pa, *pb;
	int k, differ = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	quadrant_set(&train, 512, 1);
	quadrant_set(&test, 100, 2);
	ASSERT_EQ(0, vtpu_model_info(a, &ia));
	ASSERT_EQ(0, vtpu_model_info(b, &ib));
	EXPECT_EQ(ib.commands - fewer, ia.commands);
	fo.ctx = la;
	ASSERT_EQ(0, vtpu_model_fit(a, &train, &fo));
	fo.ctx = lb;
	ASSERT_EQ(0, vtpu_model_fit(b, &train, &fo));
	EXPECT_EQ(0, memcmp(la, lb, sizeof(la)));
	EXPECT_LT(la[2], la[0]);
	ASSERT_EQ(vtpu_model_num_weights(a), vtpu_model_num_weights(b));
	for (k = 0; k < vtpu_model_num_weights(a); k++) {
		ASSERT_EQ(0, vtpu_model_weight_info(a, k, &wi));
		pa = malloc(wi.count * sizeof(float));
		pb = malloc(wi.count * sizeof(float));
		ASSERT_EQ(0, vtpu_model_get_weights(a, k, pa, wi.count));
		ASSERT_EQ(0, vtpu_model_get_weights(b, k, pb, wi.count));
		differ += memcmp(pa, pb, wi.count * 4) != 0;
		free(pa);
		free(pb);
	}
	EXPECT_EQ(0, differ);
	ASSERT_EQ(0, vtpu_model_evaluate(a, &test, &ea, &aa));
	ASSERT_EQ(0, vtpu_model_evaluate(b, &test, &eb, &ab));
	EXPECT_EQ(0, memcmp(&ea, &eb, sizeof(ea)));
	EXPECT_EQ(aa, ab);
	pa = malloc(test.n * 4 * sizeof(float));
	pb = malloc(test.n * 4 * sizeof(float));
	ASSERT_EQ(0, vtpu_model_predict(a, test.images, test.n, pa));
	ASSERT_EQ(0, vtpu_model_predict(b, test.images, test.n, pb));
	EXPECT_EQ(0, memcmp(pa, pb, test.n * 4 * sizeof(float)));
	TH_LOG("%s: %u vs %u commands, loss %.6f -> %.6f, test loss %.6f, "
	       "%d tensors differ", what, ia.commands, ib.commands, la[0],
	       la[2], ea, differ);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	free(pa);
	free(pb);
}

/*
 * conv, batch norm, ReLU and dense, batch norm, ReLU; @split puts a
 * Flatten (which moves no data) between each batch norm and its ReLU,
 * so that the compiler does not fuse them (plan_bn_relu()).
 */
static struct vtpu_model *bn_relu_model(int split, uint32_t nofold)
{
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 7,
			  .learning_rate = 1e-2f, .no_bn_fold = nofold);

	if (vtpu_model_add_conv2d(m, 4, 3, 3, VTPU_PAD_SAME, VTPU_ACT_NONE) ||
	    vtpu_model_add_batchnorm(m, 0.9f, 1e-3f) ||
	    (split && vtpu_model_add_flatten(m)) ||
	    vtpu_model_add_relu(m) || (!split && vtpu_model_add_flatten(m)) ||
	    vtpu_model_add_dense(m, 10, VTPU_ACT_NONE) ||
	    vtpu_model_add_batchnorm(m, 0.9f, 1e-3f) ||
	    (split && vtpu_model_add_flatten(m)) ||
	    vtpu_model_add_relu(m) ||
	    vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX) ||
	    vtpu_model_compile(m, &co)) {
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

/*
 * A batch norm's ReLU runs inside BATCHNORM (VTPU_BATCHNORM_RELU): two
 * commands fewer per step than the model with a Flatten between each
 * pair, and the same bits: the losses of every epoch, the weights after
 * training, evaluate and predict, with the batch norms folded into their
 * layers for inference (the ReLUs run then) and not (fused there too).
 */
TEST(batchnorm_relu_fusion_same_bits)
{
	expect_same_training(_metadata, bn_relu_model(0, 0),
			     bn_relu_model(1, 0), 2, "fold on");
	expect_same_training(_metadata, bn_relu_model(0, 1),
			     bn_relu_model(1, 1), 2, "fold off");
}

static int conv4(struct vtpu_graph *g, int x)
{
	return vtpu_graph_conv2d(g, x, 4, 3, 3, 1, VTPU_PAD_SAME,
				 VTPU_ACT_NONE);
}

/*
 * conv, ReLU r1, then r1 read twice: by a second ReLU r2 and by a conv c,
 * their values summed. @split puts a Flatten between the ReLUs, so that
 * r2 is not of a ReLU's output and runs (plan_relu_folding()). With
 * @late, c and a conv q of the input come before r2, and q is summed with
 * r2: the backward pass then reaches c after r2 has passed r1 the
 * gradient that q reads too, and c's part must not be added into it.
 */
static struct vtpu_model *relu_relu_model(int split, int late)
{
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	struct vtpu_graph *g = vtpu_model_graph(m);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 7,
			  .learning_rate = 1e-2f);
	int r1, r2, c = -1, q = -1, y;

	r1 = vtpu_graph_relu(g, conv4(g, 0));
	if (late) {
		q = vtpu_graph_flatten(g, conv4(g, 0));
		c = vtpu_graph_flatten(g, conv4(g, r1));
	}
	r2 = split ? vtpu_graph_relu(g, vtpu_graph_flatten(g, r1)) :
		     vtpu_graph_flatten(g, vtpu_graph_relu(g, r1));
	if (late)
		y = vtpu_graph_add(g, vtpu_graph_add(g, r2, q), c);
	else
		y = vtpu_graph_add(g, r2, vtpu_graph_flatten(g, conv4(g, r1)));
	y = vtpu_graph_dense(g, y, 4, VTPU_ACT_SOFTMAX);
	if (y >= 0 && !vtpu_model_set_output(m, y) &&
	    !vtpu_model_compile(m, &co))
		return m;
	vtpu_model_destroy(m);
	return NULL;
}

/*
 * A ReLU of a ReLU's output is its input (Xception's first block): no
 * ELEMENTWISE RELU and no RELU_GRAD for it, two commands fewer per step
 * than the model with a Flatten between the two, and the same bits
 * (expect_same_training()). The first ReLU's gradient sums the second's
 * and the conv's, in either order.
 */
TEST(relu_of_relu_same_bits)
{
	expect_same_training(_metadata, relu_relu_model(0, 0),
			     relu_relu_model(1, 0), 2, "relu of relu");
	expect_same_training(_metadata, relu_relu_model(0, 1),
			     relu_relu_model(1, 1), 2,
			     "relu of relu, the other reader first");
}

/*
 * Rescaling between layers: its backward pass against central differences;
 * one right after the input is folded into the input's cast.
 */
TEST(gradcheck_rescaling)
{
	struct vtpu_graph *g = vtpu_graph_create();
	int x = vtpu_graph_input(g, 3, 4, 2);
	double rel;

	x = vtpu_graph_rescaling(g, x, 2.0f, -0.5f);
	x = vtpu_graph_dense(g, x, 16, VTPU_ACT_RELU);
	EXPECT_EQ(-EINVAL, vtpu_graph_rescaling(g, x, NAN, 0.0f));
	x = vtpu_graph_rescaling(g, x, -1.5f, 0.25f);
	x = vtpu_graph_dense(g, x, 5, VTPU_ACT_NONE);
	ASSERT_LE(0, vtpu_graph_loss(g, x));
	rel = gradcheck_graph(_metadata, g, 8);
	EXPECT_GT(2e-2, rel);
	TH_LOG("rescaling: max relative error %.2e", rel);
	vtpu_graph_destroy(g);
}

/* 6x6 images, class 0 bright on top, class 1 bright below: flip-invariant */
static void halves_set(struct vtpu_dataset *ds, uint32_t n, uint64_t seed)
{
	struct vtpu_rng rng;
	uint32_t i, p;

	grey_set(ds, n, 6, 2, &rng, seed);
	for (i = 0; i < n; i++) {
		uint32_t q = (uint32_t)vtpu_rng_below(&rng, 2);

		for (p = 0; p < 36; p++)
			ds->images[i * 36 + p] = (uint8_t)((p / 18 == q) ?
				120 + vtpu_rng_below(&rng, 136) :
				vtpu_rng_below(&rng, 140));
		ds->labels[i] = (uint8_t)q;
	}
}

static struct vtpu_model *augment_model(int augment)
{
	struct vtpu_model *m = vtpu_model_create(6, 6, 1);
	struct vtpu_graph *g = vtpu_model_graph(m);
	int x = 0;	/* the model's input is the graph's first node */

	x = vtpu_graph_rescaling(g, x, 2.0f, -1.0f);
	if (augment) {
		x = vtpu_graph_random_flip(g, x);
		x = vtpu_graph_random_crop(g, x, 4, 4);
	}
	x = vtpu_graph_flatten(g, x);
	x = vtpu_graph_dense(g, x, 32, VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 2, VTPU_ACT_SOFTMAX);
	if (vtpu_model_set_output(m, x)) {
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

/*
 * RandomFlip + RandomCrop: refused after a layer; training steps draw new
 * crops (at a learning rate too small to move the weights, each epoch's
 * loss differs, where without them it does not); the model learns; and
 * evaluate (the centre crop, no flip) gives the same answer twice.
 */
TEST(augment_trains_and_evaluates_deterministically)
{
	struct vtpu_dataset train, test;
	VTPU_COMPILE_OPTS(tiny, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-30f);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 3e-3f);
	double losses[8], l1, a1, l2, a2;
	VTPU_FIT_OPTS(fo2, .epochs = 2, .on_epoch = record_loss,
		      .ctx = losses, .no_shuffle = true);
	VTPU_FIT_OPTS(fo, .epochs = 8, .on_epoch = record_loss, .ctx = losses);
	struct vtpu_graph *g = vtpu_graph_create();
	struct vtpu_model *m;
	int x = vtpu_graph_input(g, 6, 6, 1), d;

	/* no gradient: after the input and preprocessing only */
	d = vtpu_graph_dense(g, vtpu_graph_flatten(g, x), 8, VTPU_ACT_RELU);
	EXPECT_EQ(-EINVAL, vtpu_graph_random_flip(g, d));
	EXPECT_EQ(-EINVAL, vtpu_graph_random_crop(g, d, 2, 1));
	EXPECT_EQ(-EINVAL, vtpu_graph_random_crop(g, x, 7, 6));
	EXPECT_EQ(-EINVAL, vtpu_graph_random_crop(g, x, 6, 0));
	EXPECT_LE(0, vtpu_graph_random_crop(g, vtpu_graph_rescaling(g, x, 1, 0),
					    6, 6));
	vtpu_graph_destroy(g);

	halves_set(&train, 512, 1);
	halves_set(&test, 200, 2);
	/* without augmentation, a frozen model's epochs agree exactly */
	m = augment_model(0);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &tiny));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo2));
	EXPECT_EQ(losses[0], losses[1]);
	vtpu_model_destroy(m);
	/* with it, each step its own crops and flips */
	m = augment_model(1);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_compile(m, &tiny));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo2));
	EXPECT_NE(losses[0], losses[1]);
	TH_LOG("frozen, augmented: epoch losses %.6f %.6f", losses[0],
	       losses[1]);
	vtpu_model_destroy(m);

	m = augment_model(1);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	EXPECT_LT(losses[7], losses[0] / 2);
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	EXPECT_LT(0.9, a1);
	TH_LOG("flip + crop: loss %.4f -> %.4f, test acc %.3f twice the same",
	       losses[0], losses[7], a1);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

TEST(predict_matches_evaluate)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *m = quadrant_model(32);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 16, .seed = 5,
			  .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = 3);
	double loss, acc, sum;
	uint32_t i, c, best, correct = 0;
	float *probs;

	quadrant_set(&train, 512, 1);
	quadrant_set(&test, 100, 2); /* 6 full batches of 16, one of 4 */
	probs = malloc(test.n * 4 * sizeof(float));
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &loss, &acc));
	ASSERT_EQ(0, vtpu_model_predict(m, test.images, test.n, probs));
	for (i = 0; i < test.n; i++) {
		sum = 0;
		best = 0;
		for (c = 0; c < 4; c++) {
			sum += probs[i * 4 + c];
			if (probs[i * 4 + c] > probs[i * 4 + best])
				best = c;
		}
		EXPECT_GT(1e-5, fabs(sum - 1.0));
		correct += best == test.labels[i];
	}
	EXPECT_EQ((uint32_t)lround(acc * test.n), correct);
	TH_LOG("predict: rows sum to 1, argmax accuracy %u/%u = evaluate's %.3f",
	       correct, test.n, acc);
	free(probs);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

/* input = pixel * input_scale + input_shift, on the device's CAST */
TEST(input_scale_and_shift)
{
	struct vtpu_dataset set;
	struct vtpu_model *a = quadrant_model(32), *b = quadrant_model(32);
	VTPU_COMPILE_OPTS(ca, .device = "cpu", .batch = 16, .seed = 5,
			  .input_scale = 1 / 255.0f, .input_shift = 10 / 255.0f);
	VTPU_COMPILE_OPTS(cb, .device = "cpu", .batch = 16, .seed = 5,
			  .input_scale = 1 / 255.0f);
	float pa[64 * 4], pb[64 * 4], pc[64 * 4], diff = 0, moved = 0;
	uint32_t i, isz;

	quadrant_set(&set, 64, 3);
	isz = set.height * set.width * set.channels;
	for (i = 0; i < set.n * isz; i++)	/* room for + 10 */
		set.images[i] = (uint8_t)(set.images[i] * 245 / 255);
	ASSERT_EQ(0, vtpu_model_compile(a, &ca));
	ASSERT_EQ(0, vtpu_model_compile(b, &cb));
	ASSERT_EQ(0, vtpu_model_predict(a, set.images, set.n, pa));
	ASSERT_EQ(0, vtpu_model_predict(b, set.images, set.n, pc));
	for (i = 0; i < set.n * isz; i++)
		set.images[i] += 10;
	ASSERT_EQ(0, vtpu_model_predict(b, set.images, set.n, pb));
	for (i = 0; i < set.n * 4; i++) {
		diff = fmaxf(diff, fabsf(pa[i] - pb[i]));
		moved = fmaxf(moved, fabsf(pa[i] - pc[i]));
	}
	/* shifting the input by 10/255 is adding 10 to every pixel ... */
	EXPECT_GT(1e-5f, diff);
	/* ... and not nothing */
	EXPECT_LT(1e-4f, moved);
	TH_LOG("shift 10/255 vs pixels + 10: max diff %.1e; vs no shift %.1e",
	       diff, moved);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&set);
}

/* Overwrite a byte near the end of a checkpoint. Return: 0 or -1. */
static int damage_file(const char *path)
{
	FILE *f = fopen(path, "r+b");

	if (!f)
		return -1;
	fseek(f, -3, SEEK_END);
	fputc('x', f);
	return fclose(f) ? -1 : 0;
}

TEST(checkpoint_round_trip_and_mismatch)
{
	char path[] = "/tmp/vtpu-model-XXXXXX";
	struct vtpu_dataset train, test;
	struct vtpu_model *m = quadrant_model(32), *other;
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5);
	VTPU_FIT_OPTS(fo, .epochs = 2);
	double l1, a1, l2, a2;
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	quadrant_set(&train, 256, 1);
	quadrant_set(&test, 64, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	ASSERT_EQ(0, vtpu_model_save(m, path)) TH_LOG("%s",
						    vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo)); /* move away */
	ASSERT_EQ(0, vtpu_model_load(m, path)) TH_LOG("%s",
						    vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	EXPECT_EQ(a1, a2);

	/* a model of another shape refuses it, and says why */
	other = vtpu_model_create(4, 4, 1);
	vtpu_model_add_flatten(other);
	vtpu_model_add_dense(other, 16, VTPU_ACT_RELU);
	vtpu_model_add_dense(other, 4, VTPU_ACT_SOFTMAX);
	ASSERT_EQ(0, vtpu_model_compile(other, &co));
	EXPECT_EQ(-EINVAL, vtpu_model_load(other, path));
	TH_LOG("mismatched model: %s", vtpu_model_error(other));
	vtpu_model_destroy(other);

	/* a damaged file is an error, and the weights are untouched */
	ASSERT_EQ(0, damage_file(path));
	EXPECT_GT(0, vtpu_model_load(m, path));
	TH_LOG("damaged checkpoint: %s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	unlink(path);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

/*
 * The engine keeps a dense kernel of 96 units in the device's panel
 * layout, the OpenBLAS backend row-major; files are row-major: a model
 * saved from either loads into the other and evaluates the same.
 */
TEST(checkpoint_moves_between_layouts)
{
	char path[] = "/tmp/vtpu-model-XXXXXX";
	struct vtpu_dataset train, test;
	double loss[2], acc[2], after;
	int fd = mkstemp(path), k;

	ASSERT_LE(0, fd);
	close(fd);
	quadrant_set(&train, 256, 1);
	quadrant_set(&test, 64, 2);
	for (k = 0; k < 2; k++) {
		struct vtpu_model *from = quadrant_model(96);
		struct vtpu_model *to = quadrant_model(96);
		VTPU_COMPILE_OPTS(cf, .device = "cpu", .batch = 32, .seed = 5,
				  .cpu_gemm = k ? VTPU_CPU_GEMM_OPENBLAS :
						  VTPU_CPU_GEMM_ENGINE);
		VTPU_COMPILE_OPTS(ct, .device = "cpu", .batch = 32, .seed = 6,
				  .cpu_gemm = k ? VTPU_CPU_GEMM_ENGINE :
						  VTPU_CPU_GEMM_OPENBLAS);
		VTPU_FIT_OPTS(fo, .epochs = 2);

		ASSERT_EQ(0, vtpu_model_compile(from, &cf));
		ASSERT_EQ(0, vtpu_model_fit(from, &train, &fo));
		ASSERT_EQ(0, vtpu_model_save(from, path));
		ASSERT_EQ(0, vtpu_model_evaluate(from, &test, &loss[0], &acc[0]));
		ASSERT_EQ(0, vtpu_model_compile(to, &ct));
		ASSERT_EQ(0, vtpu_model_load(to, path)) TH_LOG("%s",
							     vtpu_model_error(to));
		ASSERT_EQ(0, vtpu_model_evaluate(to, &test, &loss[1], &acc[1]));
		/* the same weights; only the GEMMs' rounding differs */
		EXPECT_GT(1e-5, fabs(loss[0] - loss[1]) / loss[0]);
		EXPECT_EQ(acc[0], acc[1]);
		TH_LOG("%s -> %s: loss %.7f -> %.7f, acc %.4f -> %.4f",
		       k ? "openblas" : "engine", k ? "engine" : "openblas",
		       loss[0], loss[1], acc[0], acc[1]);
		/* a damaged file is an error and changes nothing, in panels too */
		ASSERT_EQ(0, damage_file(path));
		EXPECT_GT(0, vtpu_model_load(to, path));
		ASSERT_EQ(0, vtpu_model_evaluate(to, &test, &after, &acc[1]));
		EXPECT_EQ(loss[1], after);
		vtpu_model_destroy(from);
		vtpu_model_destroy(to);
	}
	unlink(path);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

TEST(model_bad_inputs)
{
	struct vtpu_dataset train, wrong;
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 8);
	VTPU_COMPILE_OPTS(nodev, .device = "/dev/vtpu-missing", .batch = 8);

	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 4, VTPU_ACT_RELU);
	EXPECT_EQ(-EINVAL, vtpu_model_set_learning_rate(m, 0.01f));
	TH_LOG("learning rate before compiling: %s", vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_compile(m, &co));
	TH_LOG("no softmax layer: %s", vtpu_model_error(m));
	vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX);
	EXPECT_EQ(-EINVAL, vtpu_model_add_dense(m, 3, VTPU_ACT_NONE));
	EXPECT_EQ(-ENOENT, vtpu_model_compile(m, &nodev));
	TH_LOG("missing device: %s", vtpu_model_error(m));
	co.input_shift = NAN;
	EXPECT_EQ(-EINVAL, vtpu_model_compile(m, &co));
	TH_LOG("NaN input shift: %s", vtpu_model_error(m));
	co.input_shift = 0;
	co.input_scale = INFINITY;
	EXPECT_EQ(-EINVAL, vtpu_model_compile(m, &co));
	TH_LOG("infinite input scale: %s", vtpu_model_error(m));
	co.input_scale = 0;
	co.learning_rate = NAN;
	EXPECT_EQ(-EINVAL, vtpu_model_compile(m, &co));
	TH_LOG("NaN learning rate: %s", vtpu_model_error(m));
	co.learning_rate = -0.1f;
	EXPECT_EQ(-EINVAL, vtpu_model_compile(m, &co));
	TH_LOG("negative learning rate: %s", vtpu_model_error(m));
	co.learning_rate = 0; /* the optimizer's default */
	ASSERT_EQ(0, vtpu_model_compile(m, &co));

	quadrant_set(&train, 64, 1);
	train.labels[17] = 4; /* four classes: 0..3 */
	EXPECT_EQ(-EINVAL, vtpu_model_fit(m, &train, NULL));
	TH_LOG("label out of range: %s", vtpu_model_error(m));
	quadrant_set(&wrong, 64, 1);
	wrong.height = 2;
	wrong.width = 8;
	EXPECT_EQ(-EINVAL, vtpu_model_fit(m, &wrong, NULL));
	TH_LOG("wrong image shape: %s", vtpu_model_error(m));
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&wrong);
}

/*
 * Weights as arrays: a round trip through a dense kernel kept in panels
 * (64 units) is exact, and a tiny model with weights set by hand predicts
 * softmax(x * scale * W + b), computed here.
 */
TEST(weights_as_arrays)
{
	struct vtpu_model *m = quadrant_model(64), *t;
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 8, .seed = 5);
	struct vtpu_weight_info wi;
	float *a, *b, w[3 * 2], bias[2], probs[2], x[3] = { 10, 200, 7 };
	uint8_t img[3] = { 10, 200, 7 };
	double z[2], mx, sum;
	uint32_t i, j;

	EXPECT_EQ(-EINVAL, vtpu_model_get_weights(m, 0, w, 1));
	TH_LOG("before compiling: %s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(4, vtpu_model_num_weights(m));
	ASSERT_EQ(0, vtpu_model_weight_info(m, 0, &wi));
	EXPECT_STREQ("dense/kernel", wi.name);
	EXPECT_EQ(2, wi.ndim);
	EXPECT_EQ(16, wi.shape[0]);
	EXPECT_EQ(64, wi.shape[1]);
	EXPECT_EQ(16 * 64, wi.count);
	ASSERT_EQ(0, vtpu_model_weight_info(m, 3, &wi));
	EXPECT_STREQ("dense_1/bias", wi.name);
	EXPECT_EQ(-EINVAL, vtpu_model_weight_info(m, 4, &wi));

	a = malloc(16 * 64 * sizeof(float));
	b = malloc(16 * 64 * sizeof(float));
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (i = 0; i < 16 * 64; i++)
		a[i] = (float)i / 1024;
	ASSERT_EQ(0, vtpu_model_set_weights(m, 0, a, 16 * 64));
	ASSERT_EQ(0, vtpu_model_get_weights(m, 0, b, 16 * 64));
	EXPECT_EQ(0, memcmp(a, b, 16 * 64 * sizeof(float)));
	/* bad calls change nothing */
	EXPECT_EQ(-EINVAL, vtpu_model_set_weights(m, 0, a, 16 * 64 - 1));
	TH_LOG("wrong count: %s", vtpu_model_error(m));
	a[5] = NAN;
	EXPECT_EQ(-EINVAL, vtpu_model_set_weights(m, 0, a, 16 * 64));
	TH_LOG("NaN: %s", vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_get_weights(m, 9, b, 1));
	ASSERT_EQ(0, vtpu_model_get_weights(m, 0, b, 16 * 64));
	EXPECT_EQ(0, b[5] != 5.0f / 1024);
	free(a);
	free(b);
	vtpu_model_destroy(m);

	t = vtpu_model_create(1, 1, 3);
	ASSERT_EQ(0, vtpu_model_add_dense(t, 2, VTPU_ACT_SOFTMAX));
	co.input_scale = 1 / 255.0f;
	ASSERT_EQ(0, vtpu_model_compile(t, &co));
	for (i = 0; i < 6; i++)
		w[i] = (float)i / 3 - 1; /* [3, 2] row-major */
	bias[0] = 0.25f;
	bias[1] = -0.5f;
	ASSERT_EQ(0, vtpu_model_set_weights(t, 0, w, 6));
	ASSERT_EQ(0, vtpu_model_set_weights(t, 1, bias, 2));
	ASSERT_EQ(0, vtpu_model_predict(t, img, 1, probs));
	for (j = 0; j < 2; j++) {
		z[j] = bias[j];
		for (i = 0; i < 3; i++)
			z[j] += x[i] * (1 / 255.0f) * w[i * 2 + j];
	}
	mx = fmax(z[0], z[1]);
	sum = exp(z[0] - mx) + exp(z[1] - mx);
	for (j = 0; j < 2; j++)
		EXPECT_GT(1e-5, fabs(probs[j] - exp(z[j] - mx) / sum));
	TH_LOG("predict %.5f %.5f, by hand %.5f %.5f", probs[0], probs[1],
	       exp(z[0] - mx) / sum, exp(z[1] - mx) / sum);
	vtpu_model_destroy(t);
}

/* A functional model: input -> d1 -> d2, d1 + d2 -> softmax. */
TEST(functional_output_trains)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	struct vtpu_graph *g = vtpu_model_graph(m);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = 6);
	int in, d1, d2, sum, out;
	double loss, acc;

	in = 0; /* the model's input is the graph's first node */
	d1 = vtpu_graph_dense(g, in, 16, VTPU_ACT_RELU);
	d2 = vtpu_graph_dense(g, d1, 16, VTPU_ACT_RELU);
	sum = vtpu_graph_add(g, d1, d2);
	out = vtpu_graph_dense(g, sum, 4, VTPU_ACT_SOFTMAX);
	ASSERT_LE(0, out);
	EXPECT_EQ(-EINVAL, vtpu_model_set_output(m, d2));
	TH_LOG("not softmax: %s", vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_set_output(m, out + 1));
	TH_LOG("no such node: %s", vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_set_output(m, -1));
	ASSERT_EQ(0, vtpu_model_set_output(m, out));
	quadrant_set(&train, 1000, 1);
	quadrant_set(&test, 200, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co)) TH_LOG("%s",
						      vtpu_model_error(m));
	EXPECT_EQ(-EINVAL, vtpu_model_set_output(m, out));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &loss, &acc));
	EXPECT_LT(0.9, acc);
	TH_LOG("residual dense model: test accuracy %.3f, loss %.3f", acc,
	       loss);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

static void save_weights(struct vtpu_model *m, float *out)
{
	struct vtpu_weight_info wi;
	int i;

	for (i = 0; i < vtpu_model_num_weights(m); i++) {
		vtpu_model_weight_info(m, i, &wi);
		vtpu_model_get_weights(m, i, out, wi.count);
		out += wi.count;
	}
}

/*
 * A new batch size or input transform keeps the weights, and training on
 * goes exactly as a model that had them from the start: batch 16 for one
 * epoch then 32 for one equals a checkpoint of the first epoch loaded
 * into a model compiled for 32 (weights and Adam's state both kept).
 */
/*
 * A depthwise and a separable layer train (Keras' weights, names and
 * shapes; the summary's types), and their weights survive a checkpoint.
 */
TEST(separable_model_trains_and_checkpoints)
{
	static const struct {
		const char *name;
		uint32_t ndim, shape[4];
	} want[] = {
		{ "depthwise_conv2d/depthwise_kernel", 4, { 3, 3, 1, 2 } },
		{ "depthwise_conv2d/bias", 1, { 2 } },
		{ "separable_conv2d/depthwise_kernel", 4, { 3, 3, 2, 1 } },
		{ "separable_conv2d/pointwise_kernel", 4, { 1, 1, 2, 8 } },
		{ "separable_conv2d/bias", 1, { 8 } },
	};
	char path[] = "/tmp/vtpu-sep-XXXXXX", *text = NULL;
	struct vtpu_dataset train, test;
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	struct vtpu_graph *g = vtpu_model_graph(m);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5,
			  .learning_rate = 1e-2f);
	double losses[6], l1, a1, l2, a2;
	VTPU_FIT_OPTS(fo, .epochs = 6, .on_epoch = record_loss, .ctx = losses);
	struct vtpu_weight_info wi;
	size_t len = 0;
	FILE *f;
	int x, fd = mkstemp(path);
	uint32_t i, d;

	ASSERT_LE(0, fd);
	close(fd);
	x = vtpu_graph_depthwise_conv2d(g, 0, 3, 3, 1, VTPU_PAD_SAME, 2,
					VTPU_ACT_RELU);
	x = vtpu_graph_separable_conv2d(g, x, 8, 3, 3, 2, VTPU_PAD_SAME,
					VTPU_ACT_RELU);
	x = vtpu_graph_dense(g, x, 4, VTPU_ACT_SOFTMAX);
	ASSERT_LE(0, x);
	ASSERT_EQ(0, vtpu_model_set_output(m, x));
	quadrant_set(&train, 1000, 1);
	quadrant_set(&test, 200, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co)) TH_LOG("%s",
						      vtpu_model_error(m));
	ASSERT_EQ(7, vtpu_model_num_weights(m));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, vtpu_model_weight_info(m, i, &wi));
		EXPECT_STREQ(want[i].name, wi.name);
		EXPECT_EQ(want[i].ndim, wi.ndim);
		for (d = 0; d < wi.ndim; d++)
			EXPECT_EQ(want[i].shape[d], wi.shape[d]);
	}
	/* glorot-uniform on Keras' fans: kh*kw*c + kh*kw*mult, c + filters */
	for (i = 0; i < 2; i++) {
		uint32_t k = i ? 3 : 0, n = i ? 16 : 18;
		double lim = sqrt(6.0 / (i ? 2 + 8 : 9 * 1 + 9 * 2)), mx = 0;
		float v[18];

		ASSERT_EQ(0, vtpu_model_get_weights(m, k, v, n));
		for (d = 0; d < n; d++)
			mx = fmax(mx, fabs(v[d]));
		EXPECT_GE(lim, mx);
		EXPECT_LT(lim / 2, mx);
	}
	f = open_memstream(&text, &len);
	ASSERT_NE(NULL, f);
	vtpu_model_summary(m, f);
	fclose(f);
	EXPECT_NE(NULL, strstr(text, "depthwise_conv2d (DepthwiseConv2D)"));
	EXPECT_NE(NULL, strstr(text, "separable_conv2d (SeparableConv2D)"));
	EXPECT_NE(NULL, strstr(text, "(None, 2, 2, 8)"));
	free(text);
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	EXPECT_LT(losses[5], losses[0] * 0.8);
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	EXPECT_LT(0.7, a1);
	TH_LOG("depthwise + separable: loss %.3f -> %.3f, test accuracy %.3f",
	       losses[0], losses[5], a1);
	ASSERT_EQ(0, vtpu_model_save(m, path));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo)); /* move away */
	ASSERT_EQ(0, vtpu_model_load(m, path));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	EXPECT_EQ(l1, l2);
	EXPECT_EQ(a1, a2);
	unlink(path);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

TEST(batch_and_input_scale_keep_state)
{
	char path[] = "/tmp/vtpu-model-XXXXXX";
	struct vtpu_dataset train;
	struct vtpu_model *a = quadrant_model(32), *b = quadrant_model(32);
	VTPU_COMPILE_OPTS(c16, .device = "cpu", .batch = 16, .seed = 5);
	VTPU_COMPILE_OPTS(c32, .device = "cpu", .batch = 32, .seed = 5);
	VTPU_FIT_OPTS(fo, .epochs = 1, .no_shuffle = true);
	float wa[16 * 32 + 32 + 32 * 4 + 4], wb[16 * 32 + 32 + 32 * 4 + 4];
	float pa[64 * 4], pb[64 * 4];
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	quadrant_set(&train, 256, 1);
	ASSERT_EQ(0, vtpu_model_compile(a, &c16));
	ASSERT_EQ(0, vtpu_model_fit(a, &train, &fo));
	ASSERT_EQ(0, vtpu_model_save(a, path));
	save_weights(a, wa);
	EXPECT_EQ(-EINVAL, vtpu_model_set_batch(a, 0));
	ASSERT_EQ(0, vtpu_model_set_batch(a, 32));
	save_weights(a, wb);
	EXPECT_EQ(0, memcmp(wa, wb, sizeof(wa)));
	ASSERT_EQ(0, vtpu_model_fit(a, &train, &fo));

	ASSERT_EQ(0, vtpu_model_compile(b, &c32));
	ASSERT_EQ(0, vtpu_model_load(b, path));
	ASSERT_EQ(0, vtpu_model_fit(b, &train, &fo));
	save_weights(a, wa);
	save_weights(b, wb);
	EXPECT_EQ(0, memcmp(wa, wb, sizeof(wa)));

	/* a new input transform: as if compiled with it, same weights */
	EXPECT_EQ(-EINVAL, vtpu_model_set_input_scale(a, 0, 0));
	EXPECT_EQ(-EINVAL, vtpu_model_set_input_scale(a, NAN, 0));
	TH_LOG("NaN scale: %s", vtpu_model_error(a));
	ASSERT_EQ(0, vtpu_model_set_input_scale(a, 1 / 128.0f, -1));
	save_weights(a, wa);
	EXPECT_EQ(0, memcmp(wa, wb, sizeof(wa)));
	c32.input_scale = 1 / 128.0f;
	c32.input_shift = -1;
	ASSERT_EQ(0, vtpu_model_save(a, path));
	ASSERT_EQ(0, vtpu_model_compile(b, &c32));
	ASSERT_EQ(0, vtpu_model_load(b, path));
	ASSERT_EQ(0, vtpu_model_predict(a, train.images, 64, pa));
	ASSERT_EQ(0, vtpu_model_predict(b, train.images, 64, pb));
	EXPECT_EQ(0, memcmp(pa, pb, sizeof(pa)));
	unlink(path);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&train);
}

struct stop_ctx {
	struct vtpu_model *m;
	uint32_t calls, stop_after;
	double val_loss[4];
};

static void stop_epoch(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct stop_ctx *c = ctx;

	c->val_loss[c->calls++] = st->val_loss;
	if (c->calls == c->stop_after)
		vtpu_model_stop(c->m);
}

/* vtpu_model_stop() ends fit() after the epoch; validation_freq. */
TEST(fit_stops_and_validates_every_nth)
{
	struct vtpu_dataset train, test;
	struct vtpu_model *m = quadrant_model(16);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5);
	struct stop_ctx c = { .m = m, .stop_after = 2 };
	VTPU_FIT_OPTS(fo, .epochs = 4, .on_epoch = stop_epoch, .ctx = &c,
		      .validation = &test, .validation_freq = 2);

	quadrant_set(&train, 128, 1);
	quadrant_set(&test, 64, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	EXPECT_EQ(2, c.calls);
	EXPECT_TRUE(isnan(c.val_loss[0]));
	EXPECT_FALSE(isnan(c.val_loss[1]));
	/* the next fit starts afresh; the last epoch (3) validates too */
	c.calls = 0;
	c.stop_after = 0;
	fo.epochs = 3;
	ASSERT_EQ(0, vtpu_model_fit(m, &train, &fo));
	EXPECT_EQ(3, c.calls);
	EXPECT_TRUE(isnan(c.val_loss[0]));
	EXPECT_FALSE(isnan(c.val_loss[1]));
	EXPECT_FALSE(isnan(c.val_loss[2]));
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

/*
 * The device copy of an evaluation set is kept between calls, keyed by the
 * host array's address: changed contents at the same address are seen.
 */
TEST(evaluate_sees_changed_data)
{
	struct vtpu_dataset test, copy;
	struct vtpu_model *m = quadrant_model(16);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 5);
	double l1, a1, l2, a2, l3, a3;
	uint32_t i;

	quadrant_set(&test, 64, 2);
	quadrant_set(&copy, 64, 2);
	ASSERT_EQ(0, vtpu_model_compile(m, &co));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l1, &a1));
	for (i = 0; i < test.n; i++) {
		test.labels[i] = (test.labels[i] + 1) % 4;
		copy.labels[i] = test.labels[i];
		test.images[i * 16] ^= 0xff;
		copy.images[i * 16] = test.images[i * 16];
	}
	ASSERT_EQ(0, vtpu_model_evaluate(m, &test, &l2, &a2));
	ASSERT_EQ(0, vtpu_model_evaluate(m, &copy, &l3, &a3));
	EXPECT_NE(l1, l2);
	EXPECT_EQ(l3, l2);
	EXPECT_EQ(a3, a2);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&test);
	vtpu_dataset_free(&copy);
}

/*
 * More batch sizes than program slots: each fit with a remainder needs two
 * programs, and once the slots are full the pass's full-batch program must
 * not be evicted to compile its remainder's. The results equal a fresh
 * model's with the same weights.
 */
TEST(many_batch_sizes_share_the_program_slots)
{
	static const uint32_t batches[] = { 3, 5, 7, 9, 11, 13, 15, 23 };
	struct vtpu_dataset train, test;
	struct vtpu_model *a = quadrant_model(16), *b = quadrant_model(16);
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 16, .seed = 5);
	VTPU_FIT_OPTS(fo, .epochs = 1);
	float w[16 * 16 + 16 + 16 * 4 + 4], pa[50 * 4], pb[50 * 4];
	struct vtpu_weight_info wi;
	double la, aa, lb, ab;
	float *p = w;
	uint32_t i;

	quadrant_set(&train, 64, 1);
	quadrant_set(&test, 50, 2);
	ASSERT_EQ(0, vtpu_model_compile(a, &co));
	ASSERT_EQ(0, vtpu_model_compile(b, &co));
	for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		ASSERT_EQ(0, vtpu_model_set_batch(a, batches[i]));
		ASSERT_EQ(0, vtpu_model_fit(a, &train, &fo));
	}
	ASSERT_EQ(0, vtpu_model_evaluate(a, &test, &la, &aa));
	ASSERT_EQ(0, vtpu_model_predict(a, test.images, test.n, pa));
	for (i = 0; i < 4; i++) {
		vtpu_model_weight_info(a, i, &wi);
		ASSERT_EQ(0, vtpu_model_get_weights(a, i, p, wi.count));
		ASSERT_EQ(0, vtpu_model_set_weights(b, i, p, wi.count));
		p += wi.count;
	}
	ASSERT_EQ(0, vtpu_model_set_batch(b, 23));
	ASSERT_EQ(0, vtpu_model_evaluate(b, &test, &lb, &ab));
	ASSERT_EQ(0, vtpu_model_predict(b, test.images, test.n, pb));
	EXPECT_EQ(la, lb);
	EXPECT_EQ(aa, ab);
	EXPECT_EQ(0, memcmp(pa, pb, sizeof(pa)));
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
}

TEST_HARNESS_MAIN
