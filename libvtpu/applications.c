// SPDX-License-Identifier: MIT
/*
 * Ready-made networks, as keras.applications: the ResNet-style,
 * Xception-style and small VGG-style image classifiers of issue 27, built
 * once here and used
 * by examples/flowers.c, vtpu-bench's resnet64/xception64/vgg64 rows
 * (whose PyTorch twins are tools/bench_train_pytorch.py's _resnet64,
 * _xception64 and _vgg64: the same layers in the same order; vgg64 is
 * vtpu_app_vgg() at width 64), the tests and the Python package.
 *
 * Each builds on a graph from a given node (the input, or what augmenting
 * or rescaling layers made of it) to a dense layer with softmax, the
 * model's output, so that the caller may put anything in front.
 */
#include <errno.h>

#include "vtpu_model.h"

#define BN_MOMENTUM 0.99f	/* Keras' BatchNormalization defaults */
#define BN_EPSILON 1e-3f

static uint32_t width_of(const struct vtpu_app_opts *o)
{
	return o && o->sz >= sizeof(*o) && o->width ? o->width : 32;
}

/* conv, batch norm, and a ReLU if asked: the networks' unit */
static int conv_bn(struct vtpu_graph *g, int x, uint32_t filters, uint32_t k,
		   uint32_t stride, bool relu)
{
	x = vtpu_graph_conv2d(g, x, filters, k, k, stride, VTPU_PAD_SAME,
			      VTPU_ACT_NONE);
	if (x >= 0)
		x = vtpu_graph_batchnorm(g, x, BN_MOMENTUM, BN_EPSILON);
	if (x >= 0 && relu)
		x = vtpu_graph_relu(g, x);
	return x;
}

/* ResNet's basic block: relu(bn(conv(relu(bn(conv(x))))) + shortcut) */
static int basic_block(struct vtpu_graph *g, int x, uint32_t cin,
		       uint32_t cout, uint32_t stride)
{
	int y, s = x;

	y = conv_bn(g, x, cout, 3, stride, true);
	if (y >= 0)
		y = conv_bn(g, y, cout, 3, 1, false);
	if (y >= 0 && (stride != 1 || cin != cout))
		s = conv_bn(g, x, cout, 1, stride, false);
	if (y < 0 || s < 0)
		return y < 0 ? y : s;
	y = vtpu_graph_add(g, y, s);
	return y < 0 ? y : vtpu_graph_relu(g, y);
}

int vtpu_app_resnet(struct vtpu_graph *g, int x, uint32_t classes,
		    const struct vtpu_app_opts *o)
{
	uint32_t w = width_of(o), cin = w, i;

	if (!g || !classes || (o && o->sz < sizeof(size_t)) || w > 1024)
		return -EINVAL;
	x = conv_bn(g, x, w, 7, 2, true);
	if (x >= 0)
		x = vtpu_graph_maxpool2d(g, x, 3, 3, 2, VTPU_PAD_SAME);
	for (i = 0; i < 4 && x >= 0; i++) {
		uint32_t cout = w << i;

		x = basic_block(g, x, cin, cout, i ? 2 : 1);
		if (x >= 0)
			x = basic_block(g, x, cout, cout, 1);
		cin = cout;
	}
	if (x >= 0)
		x = vtpu_graph_global_avgpool(g, x);
	return x < 0 ? x : vtpu_graph_dense(g, x, classes, VTPU_ACT_SOFTMAX);
}

/* separable conv and batch norm, after a ReLU if asked */
static int sep_bn(struct vtpu_graph *g, int x, uint32_t filters,
		  bool relu_first)
{
	if (relu_first)
		x = vtpu_graph_relu(g, x);
	if (x >= 0)
		x = vtpu_graph_separable_conv2d(g, x, filters, 3, 3, 1,
						VTPU_PAD_SAME, VTPU_ACT_NONE);
	return x < 0 ? x : vtpu_graph_batchnorm(g, x, BN_MOMENTUM, BN_EPSILON);
}

int vtpu_app_xception(struct vtpu_graph *g, int x, uint32_t classes,
		      const struct vtpu_app_opts *o)
{
	uint32_t w = width_of(o), i;
	int prev, s;

	if (!g || !classes || (o && o->sz < sizeof(size_t)) || w > 1024)
		return -EINVAL;
	x = vtpu_graph_conv2d(g, x, w, 3, 3, 2, VTPU_PAD_SAME, VTPU_ACT_NONE);
	if (x >= 0)
		x = vtpu_graph_batchnorm(g, x, BN_MOMENTUM, BN_EPSILON);
	if (x >= 0)
		x = vtpu_graph_relu(g, x);
	prev = x;
	for (i = 1; i <= 3 && x >= 0; i++) {
		uint32_t size = w << i;

		x = sep_bn(g, x, size, true);
		if (x >= 0)
			x = sep_bn(g, x, size, true);
		if (x >= 0)
			x = vtpu_graph_maxpool2d(g, x, 3, 3, 2,
						 VTPU_PAD_SAME);
		s = x < 0 ? x : vtpu_graph_conv2d(g, prev, size, 1, 1, 2,
						  VTPU_PAD_SAME,
						  VTPU_ACT_NONE);
		if (s < 0)
			return s;
		x = vtpu_graph_add(g, x, s);
		prev = x;
	}
	if (x >= 0)
		x = sep_bn(g, x, 12 * w, false);
	if (x >= 0)
		x = vtpu_graph_relu(g, x);
	if (x >= 0)
		x = vtpu_graph_global_avgpool(g, x);
	return x < 0 ? x : vtpu_graph_dense(g, x, classes, VTPU_ACT_SOFTMAX);
}

int vtpu_app_vgg(struct vtpu_graph *g, int x, uint32_t classes,
		 const struct vtpu_app_opts *o)
{
	uint32_t w = width_of(o), i;

	if (!g || !classes || (o && o->sz < sizeof(size_t)) || w > 1024)
		return -EINVAL;
	/* two convolutions of w and of 2w filters, one of 4w, each a pool */
	for (i = 0; i < 5 && x >= 0; i++) {
		x = vtpu_graph_conv2d(g, x, w << (i / 2), 3, 3, 1,
				      VTPU_PAD_SAME, VTPU_ACT_RELU);
		if (x >= 0 && (i & 1 || i == 4))
			x = vtpu_graph_maxpool2d(g, x, 2, 2, 2, VTPU_PAD_VALID);
	}
	if (x >= 0)
		x = vtpu_graph_flatten(g, x);
	if (x >= 0)
		x = vtpu_graph_dense(g, x, 4 * w, VTPU_ACT_RELU);
	return x < 0 ? x : vtpu_graph_dense(g, x, classes, VTPU_ACT_SOFTMAX);
}
