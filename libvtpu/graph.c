// SPDX-License-Identifier: MIT
/*
 * The graph API: nodes with per-example shapes, checked as they are built,
 * and the parameters they own. Compiling a graph is compile.c's business.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_priv.h"
#include "vtpu_text.h"

static const char *const layer_names[] = {
	[VG_INPUT] = "input", [VG_DENSE] = "dense",
	[VG_CONV2D] = "conv2d", [VG_MAXPOOL] = "max_pooling2d",
	[VG_RELU] = "re_lu",  [VG_FLATTEN] = "flatten",
	[VG_ADD] = "add",     [VG_DROPOUT] = "dropout",
	[VG_TOKENS] = "tokens", [VG_EMBEDDING] = "embedding",
	[VG_LSTM] = "lstm",   [VG_LSTM_STATE] = "lstm_state",
	[VG_GRU] = "gru",     [VG_GRU_STATE] = "gru_state",
	[VG_ATTENTION] = "attention", [VG_CONCAT] = "concatenate",
	[VG_BATCHNORM] = "batch_normalization",
	[VG_DWCONV2D] = "depthwise_conv2d",
	[VG_SEPCONV2D] = "separable_conv2d",
	[VG_AVGPOOL] = "average_pooling2d",
	[VG_GLOBAL_AVGPOOL] = "global_average_pooling2d",
	[VG_AUGMENT] = "random_augment", [VG_RESCALE] = "rescaling",
	[VG_ADDITIVE_ATTENTION] = "additive_attention",
	[VG_LOSS] = "loss",
};

struct vtpu_graph *vtpu_graph_create(void)
{
	struct vtpu_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->input = -1;
	g->loss = -1;
	g->input_scale = 1.0f / 255.0f;
	return g;
}

void vtpu_graph_destroy(struct vtpu_graph *g)
{
	if (!g)
		return;
	free(g->nodes);
	free(g->params);
	free(g);
}

uint64_t vtpu_graph_num_params(const struct vtpu_graph *g)
{
	return g->nparams_total;
}

/* A node other ops may take: a concatenation feeds dense layers only. */
static bool valid_node(const struct vtpu_graph *g, int x)
{
	return x >= 0 && x < g->nnodes && g->nodes[x].op != VG_LOSS &&
	       g->nodes[x].op != VG_CONCAT;
}

/* An image-like tensor (not a sequence, not tokens): conv, pool, flatten. */
static bool valid_image(const struct vtpu_graph *g, int x)
{
	return valid_node(g, x) && !g->nodes[x].seq;
}

/* A sequence of features (not token ids). */
static bool valid_seq(const struct vtpu_graph *g, int x)
{
	return valid_node(g, x) && g->nodes[x].seq &&
	       g->nodes[x].op != VG_TOKENS;
}

/* Return: the new node's index, or -errno. */
static int add_node(struct vtpu_graph *g, enum vg_op op, int in0, int in1,
		    uint32_t h, uint32_t w, uint32_t c)
{
	struct vg_node *n;

	if (!h || !w || !c || (uint64_t)h * w * c > (1u << 28))
		return -EINVAL;
	if (g->nnodes == g->nodes_cap) {
		int cap = g->nodes_cap ? 2 * g->nodes_cap : 16;
		void *p = realloc(g->nodes, cap * sizeof(*g->nodes));

		if (!p)
			return -ENOMEM;
		g->nodes = p;
		g->nodes_cap = cap;
	}
	n = &g->nodes[g->nnodes];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->in[0] = in0;
	n->in[1] = in1;
	n->in[2] = -1;
	n->mask = -1;
	n->weight2 = -1;
	n->mmean = -1;
	n->mvar = -1;
	/* element-wise ops keep their input's layout */
	n->seq = in0 >= 0 && g->nodes[in0].seq;
	n->h = h;
	n->w = w;
	n->c = c;
	n->weight = -1;
	n->bias = -1;
	/* Keras names: the first dense is "dense", then "dense_1", ... */
	if (g->layer_count[op]++)
		snprintf(n->name, sizeof(n->name), "%s_%d", layer_names[op],
			 g->layer_count[op] - 1);
	else
		snprintf(n->name, sizeof(n->name), "%s", layer_names[op]);
	return g->nnodes++;
}

static int add_param(struct vtpu_graph *g, int node, const char *what,
		     uint32_t ndim, const uint64_t *dims, uint32_t fan_in,
		     uint32_t fan_out, bool is_bias)
{
	struct vg_param *p;
	uint32_t i;

	if (g->nparams == g->params_cap) {
		int cap = g->params_cap ? 2 * g->params_cap : 16;
		void *q = realloc(g->params, cap * sizeof(*g->params));

		if (!q)
			return -ENOMEM;
		g->params = q;
		g->params_cap = cap;
	}
	p = &g->params[g->nparams];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s/%s", g->nodes[node].name, what);
	p->ndim = ndim;
	p->count = 1;
	for (i = 0; i < ndim; i++) {
		p->dims[i] = dims[i];
		p->count *= dims[i];
	}
	/* Keep every parameter 16-float aligned: vector loads, cache lines. */
	p->offset = g->nparam_floats;
	g->nparam_floats += (p->count + 15) & ~15ull;
	g->nparams_total += p->count;
	p->fan_in = fan_in;
	p->fan_out = fan_out;
	p->is_bias = is_bias;
	p->init = is_bias ? VG_INIT_ZERO : VG_INIT_GLOROT;
	return g->nparams++;
}

int vtpu_graph_input(struct vtpu_graph *g, uint32_t h, uint32_t w, uint32_t c)
{
	int n;

	if (g->input >= 0 || g->ntokens)
		return -EEXIST;
	n = add_node(g, VG_INPUT, -1, -1, h, w, c);
	if (n >= 0)
		g->input = n;
	return n;
}

int vtpu_graph_dense(struct vtpu_graph *g, int x, uint32_t units,
		     enum vtpu_activation act)
{
	uint64_t k, dims[2];
	int n, ret;

	bool seq, cat;

	if (x < 0 || x >= g->nnodes || g->nodes[x].op == VG_LOSS ||
	    g->nodes[x].op == VG_TOKENS || !units || act > VTPU_ACT_TANH)
		return -EINVAL;
	/* on a sequence: the last axis, every step alike (TimeDistributed) */
	seq = g->nodes[x].seq;
	cat = g->nodes[x].op == VG_CONCAT;
	k = seq ? g->nodes[x].c : vg_node_size(&g->nodes[x]);
	if (k > VTPU_MAX_DIM || (seq && act == VTPU_ACT_SOFTMAX))
		return -EINVAL;
	n = add_node(g, VG_DENSE, x, -1, seq ? g->nodes[x].h : 1, 1, units);
	if (n < 0)
		return n;
	g->nodes[n].act = act;
	dims[0] = k;
	dims[1] = units;
	ret = add_param(g, n, "kernel", 2, dims, k, units, false);
	if (ret < 0)
		return ret;
	/* over a concatenation: one GEMM per part, on its block of rows */
	g->params[ret].rows_only = cat;
	g->nodes[n].weight = ret;
	ret = add_param(g, n, "bias", 1, &dims[1], k, units, true);
	if (ret < 0)
		return ret;
	g->nodes[n].bias = ret;
	return n;
}

/*
 * How SAME splits an odd total padding.  WIN_SPLIT_END is TensorFlow's:
 * the odd row below (column right), which the depthwise command (it pads
 * top and left and takes the output size) and pooling (the pool_end flags)
 * can do.  WIN_SPLIT_BOTH is for the convolution, whose device pads both
 * sides alike: an odd total is rounded up on both sides when the stride is
 * 2 or more, as PyTorch's padding=k/2 (the same output size, the windows
 * one pixel up (left) of TensorFlow's), and refused at stride 1.
 */
enum win_split {
	WIN_SPLIT_END,
	WIN_SPLIT_BOTH,
};

/* Output size and the padding above (left of) the image. */
static int window_out(uint32_t in, uint32_t k, uint32_t stride,
		      enum vtpu_padding pad, enum win_split split,
		      uint32_t *out, uint32_t *before)
{
	uint64_t total;

	if (!k || !stride)
		return -EINVAL;
	if (pad == VTPU_PAD_VALID) {
		if (in < k)
			return -EINVAL;
		*out = (in - k) / stride + 1;
		*before = 0;
		return 0;
	}
	*out = (in + stride - 1) / stride;
	total = (uint64_t)(*out - 1) * stride + k;
	total = total > in ? total - in : 0;	/* < k */
	if (split == WIN_SPLIT_BOTH && total % 2) {
		if (stride == 1)
			return -EINVAL;
		total++;
	}
	if (total / 2 >= k)
		return -EINVAL;
	*before = (uint32_t)(total / 2);
	return 0;
}

/*
 * A node of @c channels over the (kh, kw) windows of @x moving by
 * (sh, sw), sized and padded by window_out(): the convolution, depthwise
 * and pooling nodes.
 */
static int add_window_node(struct vtpu_graph *g, enum vg_op op, int x,
			   uint32_t c, uint32_t kh, uint32_t kw, uint32_t sh,
			   uint32_t sw, enum vtpu_padding pad,
			   enum win_split split)
{
	uint32_t oh, ow, ph, pw;
	int n;

	if (window_out(g->nodes[x].h, kh, sh, pad, split, &oh, &ph) ||
	    window_out(g->nodes[x].w, kw, sw, pad, split, &ow, &pw))
		return -EINVAL;
	n = add_node(g, op, x, -1, oh, ow, c);
	if (n < 0)
		return n;
	g->nodes[n].kh = kh;
	g->nodes[n].kw = kw;
	g->nodes[n].stride_h = sh;
	g->nodes[n].stride_w = sw;
	g->nodes[n].pad_h = ph;
	g->nodes[n].pad_w = pw;
	return n;
}

int vtpu_graph_conv2d(struct vtpu_graph *g, int x, uint32_t filters,
		      uint32_t kh, uint32_t kw, uint32_t stride,
		      enum vtpu_padding pad, enum vtpu_activation act)
{
	const struct vg_node *in;
	uint64_t dims[4];
	int n, ret;

	if (!valid_image(g, x) || !filters || act == VTPU_ACT_SOFTMAX ||
	    act == VTPU_ACT_TANH || pad > VTPU_PAD_SAME)
		return -EINVAL;
	n = add_window_node(g, VG_CONV2D, x, filters, kh, kw, stride, stride,
			    pad, WIN_SPLIT_BOTH);
	if (n < 0)
		return n;
	in = &g->nodes[x];
	g->nodes[n].act = act;
	/* stored [kh, kw, c, filters]: the GEMM's [kh*kw*c, filters] */
	dims[0] = kh;
	dims[1] = kw;
	dims[2] = in->c;
	dims[3] = filters;
	ret = add_param(g, n, "kernel", 4, dims, kh * kw * in->c,
			kh * kw * filters, false);
	if (ret < 0)
		return ret;
	g->nodes[n].weight = ret;
	ret = add_param(g, n, "bias", 1, &dims[3], 0, 0, true);
	if (ret < 0)
		return ret;
	g->nodes[n].bias = ret;
	return n;
}

/* A depthwise or separable node over @x: its window and output. */
static int dw_node(struct vtpu_graph *g, enum vg_op op, int x, uint32_t kh,
		   uint32_t kw, uint32_t stride, enum vtpu_padding pad,
		   uint32_t mult, uint32_t c, enum vtpu_activation act)
{
	int n;

	if (!valid_image(g, x) || !c || !mult ||
	    (act != VTPU_ACT_NONE && act != VTPU_ACT_RELU) ||
	    pad > VTPU_PAD_SAME || !kh || !kw ||
	    (uint64_t)kh * kw * mult > VTPU_DWCONV_MAX_WORK)
		return -EINVAL;
	if ((uint64_t)g->nodes[x].c * mult > VTPU_MAX_DIM)
		return -EINVAL;
	n = add_window_node(g, op, x, c, kh, kw, stride, stride, pad,
			    WIN_SPLIT_END);
	if (n < 0)
		return n;
	g->nodes[n].act = act;
	g->nodes[n].mult = mult;
	return n;
}

/* Keras' depthwise_kernel [kh, kw, c, mult]: fans kh*kw*c, kh*kw*mult. */
static int add_depthwise_kernel(struct vtpu_graph *g, int n, uint32_t c)
{
	const struct vg_node *node = &g->nodes[n];
	uint64_t dims[4] = { node->kh, node->kw, c, node->mult };

	return add_param(g, n, "depthwise_kernel", 4, dims,
			 node->kh * node->kw * c,
			 node->kh * node->kw * node->mult, false);
}

int vtpu_graph_depthwise_conv2d(struct vtpu_graph *g, int x, uint32_t kh,
				uint32_t kw, uint32_t stride,
				enum vtpu_padding pad,
				uint32_t depth_multiplier,
				enum vtpu_activation act)
{
	uint64_t cm;
	uint32_t c;
	int n, ret;

	if (!valid_image(g, x) || !depth_multiplier)
		return -EINVAL;
	c = g->nodes[x].c;
	cm = (uint64_t)c * depth_multiplier;
	if (cm > VTPU_MAX_DIM)
		return -EINVAL;
	n = dw_node(g, VG_DWCONV2D, x, kh, kw, stride, pad, depth_multiplier,
		    (uint32_t)cm, act);
	if (n < 0)
		return n;
	ret = add_depthwise_kernel(g, n, c);
	if (ret < 0)
		return ret;
	g->nodes[n].weight = ret;
	ret = add_param(g, n, "bias", 1, &cm, 0, 0, true);
	if (ret < 0)
		return ret;
	g->nodes[n].bias = ret;
	return n;
}

int vtpu_graph_separable_conv2d(struct vtpu_graph *g, int x, uint32_t filters,
				uint32_t kh, uint32_t kw, uint32_t stride,
				enum vtpu_padding pad,
				enum vtpu_activation act)
{
	uint64_t dims[4];
	uint32_t c;
	int n, ret;

	if (!valid_image(g, x) || !filters)
		return -EINVAL;
	c = g->nodes[x].c;
	n = dw_node(g, VG_SEPCONV2D, x, kh, kw, stride, pad, 1, filters, act);
	if (n < 0)
		return n;
	ret = add_depthwise_kernel(g, n, c);
	if (ret < 0)
		return ret;
	g->nodes[n].weight = ret;
	/* pointwise_kernel [1, 1, c, filters]: the GEMM's [c, filters] */
	dims[0] = 1;
	dims[1] = 1;
	dims[2] = c;
	dims[3] = filters;
	ret = add_param(g, n, "pointwise_kernel", 4, dims, c, filters, false);
	if (ret < 0)
		return ret;
	g->nodes[n].weight2 = ret;
	ret = add_param(g, n, "bias", 1, &dims[3], 0, 0, true);
	if (ret < 0)
		return ret;
	g->nodes[n].bias = ret;
	return n;
}

int vtpu_graph_maxpool(struct vtpu_graph *g, int x, uint32_t kh, uint32_t kw)
{
	if (!valid_image(g, x))
		return -EINVAL;
	return add_window_node(g, VG_MAXPOOL, x, g->nodes[x].c, kh, kw, kh, kw,
			       VTPU_PAD_VALID, WIN_SPLIT_END);
}

int vtpu_graph_maxpool2d(struct vtpu_graph *g, int x, uint32_t kh,
			 uint32_t kw, uint32_t stride, enum vtpu_padding pad)
{
	struct vg_node *nd;
	uint64_t h, w;
	int n;

	if (!valid_image(g, x) || pad > VTPU_PAD_SAME)
		return -EINVAL;
	h = g->nodes[x].h;
	w = g->nodes[x].w;
	n = add_window_node(g, VG_MAXPOOL, x, g->nodes[x].c, kh, kw, stride,
			    stride, pad, WIN_SPLIT_END);
	if (n < 0)
		return n;
	nd = &g->nodes[n];
	/* an odd total: the extra row (column) at the end, as Keras */
	if ((uint64_t)(nd->h - 1) * stride + kh > h + 2 * nd->pad_h)
		nd->pool_end |= VTPU_POOL_PAD_END_H;
	if ((uint64_t)(nd->w - 1) * stride + kw > w + 2 * nd->pad_w)
		nd->pool_end |= VTPU_POOL_PAD_END_W;
	return n;
}

int vtpu_graph_avgpool(struct vtpu_graph *g, int x, uint32_t kh, uint32_t kw,
		       uint32_t stride, enum vtpu_padding pad)
{
	if (!valid_image(g, x) || pad > VTPU_PAD_SAME)
		return -EINVAL;
	return add_window_node(g, VG_AVGPOOL, x, g->nodes[x].c, kh, kw, stride,
			       stride, pad, WIN_SPLIT_END);
}

int vtpu_graph_global_avgpool(struct vtpu_graph *g, int x)
{
	if (!valid_image(g, x))
		return -EINVAL;
	/* the whole image: one window, no padding */
	return add_window_node(g, VG_GLOBAL_AVGPOOL, x, g->nodes[x].c,
			       g->nodes[x].h, g->nodes[x].w, 1, 1,
			       VTPU_PAD_VALID, WIN_SPLIT_END);
}

int vtpu_graph_relu(struct vtpu_graph *g, int x)
{
	const struct vg_node *in;

	if (!valid_node(g, x) || g->nodes[x].op == VG_TOKENS)
		return -EINVAL;
	in = &g->nodes[x];
	return add_node(g, VG_RELU, x, -1, in->h, in->w, in->c);
}

int vtpu_graph_flatten(struct vtpu_graph *g, int x)
{
	if (!valid_image(g, x))
		return -EINVAL;
	return add_node(g, VG_FLATTEN, x, -1, 1, 1,
			(uint32_t)vg_node_size(&g->nodes[x]));
}

int vtpu_graph_add(struct vtpu_graph *g, int x, int y)
{
	const struct vg_node *a, *b;

	if (!valid_node(g, x) || !valid_node(g, y) || x == y)
		return -EINVAL;
	a = &g->nodes[x];
	b = &g->nodes[y];
	if (a->h != b->h || a->w != b->w || a->c != b->c || a->seq != b->seq ||
	    a->op == VG_TOKENS || b->op == VG_TOKENS)
		return -EINVAL;
	return add_node(g, VG_ADD, x, y, a->h, a->w, a->c);
}

int vtpu_graph_dropout(struct vtpu_graph *g, int x, float rate)
{
	const struct vg_node *in;
	int n;

	if (!valid_node(g, x) || g->nodes[x].op == VG_TOKENS ||
	    !(rate >= 0.0f && rate < 1.0f))
		return -EINVAL;
	in = &g->nodes[x];
	n = add_node(g, VG_DROPOUT, x, -1, in->h, in->w, in->c);
	if (n >= 0) {
		g->nodes[n].rate = rate;
		g->ndropout++;
	}
	return n;
}

int vtpu_graph_batchnorm(struct vtpu_graph *g, int x, float momentum,
			 float epsilon)
{
	static const char *const what[4] = { "gamma", "beta", "moving_mean",
					     "moving_variance" };
	struct vg_node *nd;
	uint64_t dims[1];
	uint32_t c;
	int n, p[4], k;

	if (!valid_image(g, x) || g->nodes[x].op == VG_TOKENS ||
	    !(momentum >= 0.0f && momentum <= 1.0f) ||
	    !(epsilon >= 1.2e-38f && epsilon <= 3.4e38f))
		return -EINVAL;
	/* no pointer into g->nodes across add_node(): it may move them */
	c = g->nodes[x].c;
	dims[0] = c;
	n = add_node(g, VG_BATCHNORM, x, -1, g->nodes[x].h, g->nodes[x].w, c);
	if (n < 0)
		return n;
	for (k = 0; k < 4; k++) {
		p[k] = add_param(g, n, what[k], 1, dims, c, c, true);
		if (p[k] < 0)
			return p[k];
		g->params[p[k]].rows_only = true;
		g->params[p[k]].init = k == 0 || k == 3 ? VG_INIT_ONE :
							  VG_INIT_ZERO;
	}
	nd = &g->nodes[n];
	nd->weight = p[0];
	nd->bias = p[1];
	nd->mmean = p[2];
	nd->mvar = p[3];
	nd->rate = momentum;
	nd->eps = epsilon;
	return n;
}

/*
 * Is x the input or preprocessing of it alone (augments and rescalings
 * down from the input)? Nothing before it needs a gradient.
 */
static bool preprocessing(const struct vtpu_graph *g, int x)
{
	while (g->nodes[x].op == VG_AUGMENT || g->nodes[x].op == VG_RESCALE)
		x = g->nodes[x].in[0];
	return g->nodes[x].op == VG_INPUT;
}

static int augment(struct vtpu_graph *g, int x, uint32_t h, uint32_t w,
		   uint32_t flags)
{
	const struct vg_node *in;
	int n;

	if (!valid_image(g, x))
		return -EINVAL;
	in = &g->nodes[x];
	if (!h || !w || h > in->h || w > in->w)
		return -EINVAL;
	/* IMAGE_AUGMENT has no gradient: it must not follow a layer */
	if (!preprocessing(g, x)) {
		fprintf(stderr, "libvtpu: a random crop or flip must follow "
			"the input (or other preprocessing), not a %s layer\n",
			layer_names[in->op]);
		return -EINVAL;
	}
	n = add_node(g, VG_AUGMENT, x, -1, h, w, in->c);
	if (n >= 0) {
		g->nodes[n].aug_flags = flags;
		g->ndropout++;
	}
	return n;
}

int vtpu_graph_random_crop(struct vtpu_graph *g, int x, uint32_t h,
			   uint32_t w)
{
	return augment(g, x, h, w, VTPU_AUGMENT_RANDOM_CROP);
}

int vtpu_graph_random_flip(struct vtpu_graph *g, int x)
{
	if (!valid_image(g, x))
		return -EINVAL;
	return augment(g, x, g->nodes[x].h, g->nodes[x].w,
		       VTPU_AUGMENT_FLIP_H);
}

int vtpu_graph_rescaling(struct vtpu_graph *g, int x, float scale,
			 float offset)
{
	const struct vg_node *in;
	int n;

	if (!valid_node(g, x) || g->nodes[x].op == VG_TOKENS ||
	    !isfinite(scale) || !isfinite(offset))
		return -EINVAL;
	in = &g->nodes[x];
	n = add_node(g, VG_RESCALE, x, -1, in->h, in->w, in->c);
	if (n >= 0) {
		g->nodes[n].scale = scale;
		g->nodes[n].offset = offset;
	}
	return n;
}

int vtpu_graph_loss(struct vtpu_graph *g, int logits)
{
	const struct vg_node *in;
	int n;

	if (!valid_node(g, logits) || g->loss >= 0)
		return -EINVAL;
	in = &g->nodes[logits];
	if ((!in->seq && in->h != 1) || in->w != 1 || in->c < 2 ||
	    in->op == VG_TOKENS || in->c > VTPU_XENT_MAX_CLASSES)
		return -EINVAL;
	n = add_node(g, VG_LOSS, logits, -1, in->h, 1, in->c);
	if (n >= 0)
		g->loss = n;
	return n;
}

int vtpu_graph_tokens(struct vtpu_graph *g, uint32_t len)
{
	int n;

	if (g->input >= 0)
		return -EEXIST;
	if (g->ntokens == VG_MAX_TOKEN_INPUTS)
		return -ENOSPC;
	if (!len || len > VTPU_MAX_DIM)
		return -EINVAL;
	n = add_node(g, VG_TOKENS, -1, -1, len, 1, 1);
	if (n < 0)
		return n;
	g->nodes[n].seq = true;
	g->nodes[n].slot = g->ntokens;
	g->tokens[g->ntokens++] = n;
	return n;
}

int vtpu_graph_embedding(struct vtpu_graph *g, int tokens, uint32_t vocab,
			 uint32_t dim)
{
	uint64_t dims[2] = { vocab, dim };
	int n, ret;

	if (tokens < 0 || tokens >= g->nnodes ||
	    g->nodes[tokens].op != VG_TOKENS || !vocab || !dim ||
	    vocab > VTPU_MAX_DIM || dim > VTPU_MAX_DIM ||
	    (uint64_t)vocab * dim > VTPU_MAX_ELEMS)
		return -EINVAL;
	n = add_node(g, VG_EMBEDDING, tokens, -1, g->nodes[tokens].h, 1, dim);
	if (n < 0)
		return n;
	ret = add_param(g, n, "embeddings", 2, dims, vocab, dim, false);
	if (ret < 0)
		return ret;
	g->params[ret].init = VG_INIT_UNIFORM;
	g->params[ret].rows_only = true;	/* looked up by rows */
	g->nodes[n].weight = ret;
	return n;
}

/* A recurrent layer's initial state: none (-1), or @units per example. */
static bool valid_state(const struct vtpu_graph *g, int x, uint32_t units)
{
	return x == -1 || (valid_node(g, x) && !g->nodes[x].seq &&
			   g->nodes[x].h == 1 && g->nodes[x].w == 1 &&
			   g->nodes[x].c == units);
}

/*
 * An LSTM or GRU node of @gates gates over sequence @x and its parameters
 * in Keras' layout, the gates side by side: kernel [in, gates * units],
 * recurrent_kernel [units, gates * units], bias [gates * units] or, with
 * @bias_rows 2, [2, gates * units]. All read by gate, in column blocks:
 * never in panels. Return: the node, or -errno.
 */
static int add_rnn(struct vtpu_graph *g, enum vg_op op, int x, uint32_t units,
		   uint32_t gates, int init_h, uint32_t bias_rows)
{
	uint64_t dims[2];
	uint32_t d;
	int n, ret;

	if (!valid_seq(g, x) || !units ||
	    (uint64_t)gates * units > VTPU_MAX_DIM ||
	    !valid_state(g, init_h, units))
		return -EINVAL;
	d = g->nodes[x].c;
	n = add_node(g, op, x, init_h, g->nodes[x].h, 1, units);
	if (n < 0)
		return n;
	dims[0] = d;
	dims[1] = (uint64_t)gates * units;
	ret = add_param(g, n, "kernel", 2, dims, d, gates * units, false);
	if (ret < 0)
		return ret;
	g->params[ret].rows_only = true;
	g->nodes[n].weight = ret;
	dims[0] = units;
	ret = add_param(g, n, "recurrent_kernel", 2, dims, units,
			gates * units, false);
	if (ret < 0)
		return ret;
	g->params[ret].rows_only = true;
	g->nodes[n].weight2 = ret;
	dims[0] = bias_rows;
	ret = add_param(g, n, "bias", bias_rows > 1 ? 2 : 1,
			bias_rows > 1 ? dims : &dims[1], 0, 0, true);
	if (ret < 0)
		return ret;
	g->params[ret].rows_only = true;
	g->nodes[n].bias = ret;
	return n;
}

/* The state outputs of recurrent node @n: h (and c), named "lstm/h". */
static int add_states(struct vtpu_graph *g, int n, enum vg_op op, int count,
		      int *out)
{
	char name[sizeof(g->nodes[0].name)];
	int i;

	memcpy(name, g->nodes[n].name, sizeof(name));
	for (i = 0; i < count; i++) {
		int s = add_node(g, op, n, -1, 1, 1, g->nodes[n].c);

		if (s < 0)
			return s;
		g->nodes[s].seq = false;
		g->nodes[s].slot = i;
		snprintf(g->nodes[s].name, sizeof(g->nodes[s].name), "%.28s/%c",
			 name, i ? 'c' : 'h');
		out[i] = s;
	}
	return 0;
}

int vtpu_graph_lstm(struct vtpu_graph *g, int x, uint32_t units, int init_h,
		    int init_c, struct vtpu_lstm_nodes *out)
{
	int n, ret, st[2];

	if (!valid_state(g, init_c, units) || (init_h < 0) != (init_c < 0))
		return -EINVAL;
	/* Keras' layout: gates i, f, c, o side by side, [in, 4 units] */
	n = add_rnn(g, VG_LSTM, x, units, 4, init_h, 1);
	if (n < 0)
		return n;
	g->nodes[n].in[2] = init_c;
	g->params[g->nodes[n].bias].init = VG_INIT_FORGET_ONE;
	if (!out)
		return n;
	ret = add_states(g, n, VG_LSTM_STATE, 2, st);
	if (ret < 0)
		return ret;
	out->seq = n;
	out->h = st[0];
	out->c = st[1];
	return n;
}

int vtpu_graph_gru(struct vtpu_graph *g, int x, uint32_t units, int init_h,
		   struct vtpu_gru_nodes *out)
{
	int n, ret;

	/*
	 * Keras' layout: gates z, r, h side by side, [in, 3 units]; with
	 * reset_after, the input's bias and the recurrent one, [2, 3 units]
	 */
	n = add_rnn(g, VG_GRU, x, units, 3, init_h, 2);
	if (n < 0)
		return n;
	if (!out)
		return n;
	ret = add_states(g, n, VG_GRU_STATE, 1, &out->h);
	if (ret < 0)
		return ret;
	out->seq = n;
	return n;
}

int vtpu_graph_attention(struct vtpu_graph *g, int query, int value,
			 int mask)
{
	const struct vg_node *q, *v;
	int n;

	if (!valid_seq(g, query) || !valid_seq(g, value))
		return -EINVAL;
	q = &g->nodes[query];
	v = &g->nodes[value];
	if (q->c != v->c ||
	    (mask != -1 && (mask < 0 || mask >= g->nnodes ||
			    g->nodes[mask].op != VG_TOKENS ||
			    g->nodes[mask].h != v->h)) ||
	    v->h > VTPU_SOFTMAX_MAX_COLS)
		return -EINVAL;
	n = add_node(g, VG_ATTENTION, query, value, q->h, 1, q->c);
	if (n >= 0)
		g->nodes[n].mask = mask;
	return n;
}

/* A kernel of additive attention node @n: [rows][units], read by rows. */
static int add_attn_param(struct vtpu_graph *g, int n, const char *what,
			  uint32_t ndim, uint64_t rows, uint32_t units)
{
	uint64_t dims[2] = { ndim > 1 ? rows : units, units };
	int p;

	p = add_param(g, n, what, ndim, dims, ndim > 1 ? rows : units,
		      ndim > 1 ? units : 1, false);
	if (p >= 0)
		g->params[p].rows_only = true;
	return p;
}

int vtpu_graph_additive_attention(struct vtpu_graph *g, int query, int value,
				  int mask, uint32_t units)
{
	const struct vg_node *q, *v;
	int n, p;

	if (!valid_seq(g, query) || !valid_seq(g, value))
		return -EINVAL;
	q = &g->nodes[query];
	v = &g->nodes[value];
	if (q->op == VG_CONCAT || v->op == VG_CONCAT || !units ||
	    units > VTPU_ADDITIVE_MAX_UNITS ||
	    (uint64_t)q->h * units > VTPU_ADDITIVE_MAX_WORK ||
	    (uint64_t)v->h * units > VTPU_ADDITIVE_MAX_WORK ||
	    (mask != -1 && (mask < 0 || mask >= g->nnodes ||
			    g->nodes[mask].op != VG_TOKENS ||
			    g->nodes[mask].h != v->h)) ||
	    v->h > VTPU_SOFTMAX_MAX_COLS)
		return -EINVAL;
	n = add_node(g, VG_ADDITIVE_ATTENTION, query, value, q->h, 1, v->c);
	if (n < 0)
		return n;
	g->nodes[n].mask = mask;
	p = add_attn_param(g, n, "query_kernel", 2, g->nodes[query].c, units);
	if (p < 0)
		return p;
	g->nodes[n].weight = p;
	p = add_attn_param(g, n, "key_kernel", 2, g->nodes[value].c, units);
	if (p < 0)
		return p;
	g->nodes[n].weight2 = p;
	p = add_attn_param(g, n, "scale", 1, 0, units);
	if (p < 0)
		return p;
	g->nodes[n].bias = p;
	return n;
}

int vtpu_graph_concat(struct vtpu_graph *g, int x, int y)
{
	const struct vg_node *a, *b;

	if (!valid_node(g, x) || !valid_node(g, y) ||
	    g->nodes[x].op == VG_TOKENS || g->nodes[y].op == VG_TOKENS)
		return -EINVAL;
	a = &g->nodes[x];
	b = &g->nodes[y];
	/* along the last axis: steps of two sequences, or two vectors */
	if (a->seq != b->seq || a->w != 1 || b->w != 1 || a->h != b->h ||
	    (!a->seq && a->h != 1))
		return -EINVAL;
	return add_node(g, VG_CONCAT, x, y, a->h, 1, a->c + b->c);
}

uint64_t vg_tokens_offset(const struct vtpu_graph *g, int slot,
			  uint32_t batch)
{
	uint64_t off = 0;
	int k;

	for (k = 0; k < slot; k++)
		off += ((uint64_t)g->nodes[g->tokens[k]].h + 1) * batch * 4;
	return off;
}

uint64_t vg_inputs_bytes(const struct vtpu_graph *g, uint32_t batch)
{
	if (g->ntokens)
		return vg_tokens_offset(g, g->ntokens, batch);
	if (g->input < 0)
		return 0;
	return (uint64_t)batch * vg_node_size(&g->nodes[g->input]);
}

uint64_t vtpu_graph_inputs_size(const struct vtpu_graph *g, uint32_t batch)
{
	return vg_inputs_bytes(g, batch);
}

int vtpu_graph_pack_tokens(const struct vtpu_graph *g, uint32_t batch,
			   const uint32_t *const *ids, void *out)
{
	uint32_t *o = out;
	uint32_t b, t, len;
	int k;

	if (!g->ntokens || !batch)
		return -EINVAL;
	for (k = 0; k < g->ntokens; k++) {
		uint32_t T = g->nodes[g->tokens[k]].h;
		const uint32_t *x = ids[k];

		for (t = 0; t < T; t++)
			for (b = 0; b < batch; b++)
				*o++ = x[(uint64_t)b * T + t];
		for (b = 0; b < batch; b++) {
			for (len = 0; len < T; len++)
				if (x[(uint64_t)b * T + len] == VTPU_TOK_PAD)
					break;
			*o++ = len;
		}
	}
	return 0;
}

int64_t vtpu_graph_pack_labels(const struct vtpu_graph *g, uint32_t batch,
			       const uint32_t *labels, uint32_t *out)
{
	const struct vg_node *n;
	uint32_t b, t;
	int64_t valid = 0;

	if (g->loss < 0 || !g->nodes[g->loss].seq || !batch)
		return -EINVAL;
	n = &g->nodes[g->loss];
	for (t = 0; t < n->h; t++)
		for (b = 0; b < batch; b++) {
			uint32_t y = labels[(uint64_t)b * n->h + t];

			/* SOFTMAX_XENT ignores a row whose label is >= n */
			if (y == VTPU_TOK_PAD)
				y = UINT32_MAX;
			else if (y < n->c)
				valid++;
			out[(uint64_t)t * batch + b] = y;
		}
	return valid;
}

void vg_state_layout(const struct vtpu_graph *g, enum vtpu_optimizer opt,
		     struct vg_state_layout *l)
{
	uint64_t p = g->nparam_floats * sizeof(float);

	uint64_t scalars = opt == VTPU_OPT_ADAM ? 3 * p : 2 * p;

	l->params = 0;
	l->mom = p;
	l->vel = opt == VTPU_OPT_ADAM ? 2 * p : 0;
	l->adam_state = scalars;
	l->step = scalars + 8;
	l->bytes = scalars + 64;
}

void vg_set_layouts(struct vtpu_graph *g, bool panels)
{
	int i;

	for (i = 0; i < g->nparams; i++) {
		struct vg_param *p = &g->params[i];

		p->panels = panels && !p->is_bias && !p->rows_only &&
			    p->ndim == 2 &&
			    p->dims[1] % VTPU_GEMM_PANEL == 0;
	}
}

uint64_t vg_param_index(const struct vg_param *p, uint64_t i)
{
	uint64_t r, c;

	if (!p->panels)
		return i;
	/* a 2-D kernel, dims[1] a multiple of VTPU_GEMM_PANEL */
	r = i / p->dims[1];
	c = i % p->dims[1];
	return ((c / VTPU_GEMM_PANEL) * p->dims[0] + r) * VTPU_GEMM_PANEL +
	       c % VTPU_GEMM_PANEL;
}

void vg_param_convert(const struct vg_param *p, const float *src, float *dst,
		      bool to_rows)
{
	uint64_t i;

	for (i = 0; i < p->count; i++) {
		uint64_t s = vg_param_index(p, i);

		if (to_rows)
			dst[i] = src[s];
		else
			dst[s] = src[i];
	}
}

/*
 * The token input whose time axis node @i runs along, per node: a token
 * input's own slot, a sequence node's first input's, -1 for the others.
 */
static void time_origins(const struct vtpu_graph *g, int *origin)
{
	int i;

	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];

		if (n->op == VG_TOKENS)
			origin[i] = n->slot;
		else if (n->seq && n->in[0] >= 0)
			origin[i] = origin[n->in[0]];
		else
			origin[i] = -1;
	}
}

/* Does any node read node @x? */
static bool consumed(const struct vtpu_graph *g, int x)
{
	int i, j;

	for (i = 0; i < g->nnodes; i++)
		for (j = 0; j < VG_MAX_IN; j++)
			if (g->nodes[i].in[j] == x)
				return true;
	return false;
}

uint32_t vg_bucket_slots(const struct vtpu_graph *g)
{
	uint32_t ok = (1u << g->ntokens) - 1;
	int *origin, i, j, o;

	origin = malloc((g->nnodes ?: 1) * sizeof(*origin));
	if (!origin)
		return 0;
	time_origins(g, origin);
	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];

		/* a recurrent layer's last state saw every padding step */
		if ((n->op == VG_LSTM_STATE || n->op == VG_GRU_STATE) &&
		    consumed(g, i) && origin[n->in[0]] >= 0)
			ok &= ~(1u << origin[n->in[0]]);
		/* keys past the lengths count only where masked */
		if (n->op == VG_ATTENTION) {
			o = origin[n->in[1]];
			if (o >= 0 && (n->mask < 0 ||
				       g->nodes[n->mask].slot != o))
				ok &= ~(1u << o);
		}
		/* anything else that leaves the time axis: all of it */
		if (!n->seq && n->op != VG_LSTM_STATE &&
		    n->op != VG_GRU_STATE)
			for (j = 0; j < VG_MAX_IN; j++)
				if (n->in[j] >= 0 && g->nodes[n->in[j]].seq &&
				    (o = origin[n->in[j]]) >= 0)
					ok &= ~(1u << o);
	}
	free(origin);
	return ok;
}

int vg_graph_at_lengths(const struct vtpu_graph *g, const uint32_t *lens,
			struct vtpu_graph *out)
{
	int *origin, i;

	*out = *g;
	out->nodes_cap = g->nnodes;
	out->nodes = malloc((g->nnodes ?: 1) * sizeof(*out->nodes));
	origin = malloc((g->nnodes ?: 1) * sizeof(*origin));
	if (!out->nodes || !origin) {
		free(out->nodes);
		free(origin);
		out->nodes = NULL;
		return -ENOMEM;
	}
	memcpy(out->nodes, g->nodes, g->nnodes * sizeof(*out->nodes));
	time_origins(g, origin);
	for (i = 0; i < g->nnodes; i++)
		if (origin[i] >= 0 && out->nodes[i].seq)
			out->nodes[i].h = lens[origin[i]];
	free(origin);
	return 0;
}

int vg_loss_slot(const struct vtpu_graph *g)
{
	int i = g->loss;

	if (i < 0 || !g->nodes[i].seq)
		return -1;
	while (g->nodes[i].op != VG_TOKENS)
		i = g->nodes[i].in[0];
	return g->nodes[i].slot;
}
