/* SPDX-License-Identifier: MIT */
/*
 * libvtpu's training stack: a graph API with reverse-mode autodiff, a
 * compiler that turns forward + backward + optimizer into one command
 * stream (compiled once per model and batch size, replayed every step, as
 * XLA does for a TPU), and a Keras-spirit model API on top.
 *
 * Usage (the mnist example, abridged):
 *
 *	struct vtpu_model *m = vtpu_model_create(28, 28, 1);
 *	vtpu_model_add_flatten(m);
 *	vtpu_model_add_dense(m, 512, VTPU_ACT_RELU);
 *	vtpu_model_add_dense(m, 512, VTPU_ACT_RELU);
 *	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);
 *	VTPU_COMPILE_OPTS(co, .device = "/dev/vtpu0", .batch = 128,
 *			  .optimizer = VTPU_OPT_ADAM, .learning_rate = 1e-3f);
 *	vtpu_model_compile(m, &co);
 *	VTPU_FIT_OPTS(fo, .epochs = 10, .validation = &test,
 *		      .progress = stdout);
 *	vtpu_model_fit(m, &train, &fo);
 *	vtpu_model_evaluate(m, &test, &loss, &acc);
 *	vtpu_model_destroy(m);
 *
 * Backends: a device node ("/dev/vtpuN") or "cpu" (the same engine code in
 * user space; GEMM from the engine or OpenBLAS). The same model gives the
 * same results on both, within float tolerance.
 *
 * Conventions as in vtpu.h: int returns are 0 or -errno, pointer returns
 * NULL with errno set; where a human-readable reason helps, the model keeps
 * it (vtpu_model_error()). Nothing here prints unless given a FILE *.
 */
#ifndef LIBVTPU_VTPU_MODEL_H
#define LIBVTPU_VTPU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vtpu.h"
#include "vtpu_data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the graph ------------------------------------------------------------ */

/*
 * A graph of per-example tensors: every activation has an implicit
 * leading batch dimension bound at compile time; parameters do not.
 * Nodes are named by small non-negative ints; constructors return the new
 * node or -errno. Images are NHWC (channels last), matrices row-major.
 */
struct vtpu_graph;

enum vtpu_activation {
	VTPU_ACT_NONE = 0,
	VTPU_ACT_RELU = 1,
	VTPU_ACT_SOFTMAX = 2, /* last layer only: fused with the loss */
	VTPU_ACT_TANH = 3,    /* dense layers */
};

enum vtpu_padding {
	VTPU_PAD_VALID = 0, /* no padding */
	VTPU_PAD_SAME = 1,  /* output size ceil(input / stride) */
};

VTPU_API struct vtpu_graph *vtpu_graph_create(void);
VTPU_API void vtpu_graph_destroy(struct vtpu_graph *g);

/** vtpu_graph_input() - the images: u8 [h, w, c], times the graph's
 * input scale (1/255 unless the model's compile options say otherwise). */
VTPU_API int vtpu_graph_input(struct vtpu_graph *g, uint32_t h, uint32_t w,
		     uint32_t c);
/** vtpu_graph_dense() - act(x * W + b), x flattened; W glorot-uniform. */
VTPU_API int vtpu_graph_dense(struct vtpu_graph *g, int x, uint32_t units,
		     enum vtpu_activation act);
/**
 * vtpu_graph_conv2d() - act(conv(x, W) + b), W [kh, kw, c, filters].
 * VTPU_PAD_SAME gives TensorFlow's output size, ceil(input / stride); an
 * odd total padding at a stride of 2 or more (a 3x3 or 7x7 stride-2
 * convolution of an even size) pads one more row and column on every
 * side, as PyTorch's padding=k/2, where TensorFlow adds the odd one below
 * and right only: the windows sit one pixel up and left of TensorFlow's.
 */
VTPU_API int vtpu_graph_conv2d(struct vtpu_graph *g, int x, uint32_t filters,
		      uint32_t kh, uint32_t kw, uint32_t stride,
		      enum vtpu_padding pad, enum vtpu_activation act);
/**
 * vtpu_graph_depthwise_conv2d() - act(depthwise_conv(x, W) + b), Keras'
 * DepthwiseConv2D: each input channel ci has depth_multiplier filters of
 * its own, output channel ci * depth_multiplier + m. W is
 * "depthwise_kernel" [kh, kw, c, depth_multiplier] (glorot-uniform, fans
 * kh*kw*c and kh*kw*depth_multiplier), b "bias" [c * depth_multiplier].
 * SAME pads as TensorFlow does, the odd pixel of an odd total below or
 * right. act: NONE or RELU. kh * kw * depth_multiplier is at most
 * VTPU_DWCONV_MAX_WORK.
 *
 * Return: the node, or -EINVAL.
 */
VTPU_API int vtpu_graph_depthwise_conv2d(struct vtpu_graph *g, int x,
					 uint32_t kh, uint32_t kw,
					 uint32_t stride, enum vtpu_padding pad,
					 uint32_t depth_multiplier,
					 enum vtpu_activation act);
/**
 * vtpu_graph_separable_conv2d() - Keras' SeparableConv2D: a depthwise
 * convolution without bias ("depthwise_kernel" [kh, kw, c, 1]), then a
 * pointwise 1x1 convolution ("pointwise_kernel" [1, 1, c, filters], one
 * GEMM over every pixel) with "bias" [filters] and act (NONE or RELU).
 * Padding and kernel limits as vtpu_graph_depthwise_conv2d().
 *
 * Return: the node, or -EINVAL.
 */
VTPU_API int vtpu_graph_separable_conv2d(struct vtpu_graph *g, int x,
					 uint32_t filters, uint32_t kh,
					 uint32_t kw, uint32_t stride,
					 enum vtpu_padding pad,
					 enum vtpu_activation act);
/** vtpu_graph_maxpool() - max over kh x kw windows, stride = the window. */
VTPU_API int vtpu_graph_maxpool(struct vtpu_graph *g, int x, uint32_t kh, uint32_t kw);
/**
 * vtpu_graph_maxpool2d() - max over kh x kw windows, a step of @stride
 * @g: the graph
 * @x: an image node
 * @kh: window height
 * @kw: window width
 * @stride: step between windows, both axes
 * @pad: VTPU_PAD_VALID, or VTPU_PAD_SAME (output ceil(size / stride),
 *       Keras' split: an odd row or column of padding goes below or
 *       right); padding never wins (as if -inf)
 *
 * Ties: the first maximum in window order takes the whole gradient.
 * Return: the node, or -EINVAL.
 */
VTPU_API int vtpu_graph_maxpool2d(struct vtpu_graph *g, int x, uint32_t kh,
			 uint32_t kw, uint32_t stride, enum vtpu_padding pad);
/**
 * vtpu_graph_avgpool() - the mean of kh x kw windows, a step of @stride
 * @g: the graph
 * @x: an image node
 * @kh: window height
 * @kw: window width
 * @stride: step between windows, both axes
 * @pad: VTPU_PAD_VALID or VTPU_PAD_SAME (Keras' split: the odd row or
 *       column of padding below or right); padding is not counted
 *
 * Return: the node, or -EINVAL.
 */
VTPU_API int vtpu_graph_avgpool(struct vtpu_graph *g, int x, uint32_t kh, uint32_t kw,
		       uint32_t stride, enum vtpu_padding pad);
/**
 * vtpu_graph_global_avgpool() - the mean over h x w of each channel
 * @g: the graph
 * @x: an image node [h, w, c]
 *
 * Return: a vector node of c per example (a dense layer can follow), or
 * -EINVAL.
 */
VTPU_API int vtpu_graph_global_avgpool(struct vtpu_graph *g, int x);
VTPU_API int vtpu_graph_relu(struct vtpu_graph *g, int x);
/** vtpu_graph_flatten() - a view of x as a vector (no data moves). */
VTPU_API int vtpu_graph_flatten(struct vtpu_graph *g, int x);
/**
 * vtpu_graph_dropout() - while training, each element is dropped with
 * probability @rate (0 <= rate < 1) and the others scaled by 1/(1-rate),
 * with new masks every step; the identity when evaluating or predicting.
 */
VTPU_API int vtpu_graph_dropout(struct vtpu_graph *g, int x, float rate);
/**
 * vtpu_graph_batchnorm() - batch normalisation of x (an image, per channel
 * over N * H * W, or a vector, per feature over the batch), as Keras'
 * BatchNormalization(axis=-1): y = gamma * (x - mean) / sqrt(var +
 * @epsilon) + beta. Training normalises with the batch's mean and biased
 * variance and updates the moving ones (moving = moving * @momentum +
 * batch * (1 - @momentum), the biased batch variance, as Keras 3);
 * evaluate and predict use the moving ones. Keras' defaults: momentum
 * 0.99, epsilon 1e-3. Four weights in Keras' order: gamma (1), beta (0),
 * trained; moving_mean (0), moving_variance (1), not trained (their
 * gradient is 0, so neither optimizer moves them) but saved, loaded and
 * counted as parameters. -EINVAL for a sequence, momentum outside
 * [0, 1], or epsilon not positive and finite.
 */
VTPU_API int vtpu_graph_batchnorm(struct vtpu_graph *g, int x, float momentum,
				  float epsilon);
/**
 * vtpu_graph_random_crop() - Keras' RandomCrop: while training, an h x w
 * window of each image at offsets drawn anew every step (uniform over the
 * positions); the centre window when evaluating or predicting. It has no
 * gradient: x must be the input or preprocessing of it (random crops and
 * flips, rescalings), else -EINVAL with a message on stderr.
 */
VTPU_API int vtpu_graph_random_crop(struct vtpu_graph *g, int x, uint32_t h,
			   uint32_t w);
/**
 * vtpu_graph_random_flip() - Keras' RandomFlip("horizontal"): while
 * training, each image flipped left-right with probability 1/2, drawn
 * anew every step; the identity when evaluating or predicting. Where it
 * may be: as vtpu_graph_random_crop().
 */
VTPU_API int vtpu_graph_random_flip(struct vtpu_graph *g, int x);
/**
 * vtpu_graph_rescaling() - Keras' Rescaling: y = x * scale + offset (both
 * finite). Right after the input it is folded into the input's
 * conversion from bytes; elsewhere an element-wise op with its gradient.
 */
VTPU_API int vtpu_graph_rescaling(struct vtpu_graph *g, int x, float scale,
			 float offset);
/** vtpu_graph_add() - x + y (same shape): residual connections. */
VTPU_API int vtpu_graph_add(struct vtpu_graph *g, int x, int y);
/**
 * vtpu_graph_loss() - softmax cross-entropy of @logits (a vector per
 * example) against the integer labels; marks the graph's output. The
 * graph is trained by minimising its mean over the batch.
 */
VTPU_API int vtpu_graph_loss(struct vtpu_graph *g, int logits);

/* ---- sequences ------------------------------------------------------------ */

/*
 * A sequence is T steps of c features per example (an embedding's output,
 * an LSTM's or a GRU's), T fixed per graph: batches of other padded
 * lengths use a graph built for their length. Dense layers act on its
 * last axis, each step alike (Keras' TimeDistributed(Dense)); the loss on
 * a sequence of logits is the mean cross-entropy over the steps whose
 * label is not padding. Convolutions, pooling and flatten take images only.
 */

/**
 * vtpu_graph_tokens() - an input of @len token ids per example (u32; a
 * graph has either an image input or up to 8 token inputs). Sentences
 * are left-aligned and padded with VTPU_TOK_PAD (vtpu_text.h); how they
 * are laid out for the device: vtpu_graph_pack_tokens().
 */
VTPU_API int vtpu_graph_tokens(struct vtpu_graph *g, uint32_t len);

/**
 * vtpu_graph_embedding() - each token id replaced by its row of a
 * [@vocab, @dim] table (uniform in +-0.05 at first, as Keras); an id >=
 * @vocab gives a zero row and no gradient.
 */
VTPU_API int vtpu_graph_embedding(struct vtpu_graph *g, int tokens,
				  uint32_t vocab, uint32_t dim);

/** struct vtpu_lstm_nodes - an LSTM's outputs: every step's h, the last h, c */
struct vtpu_lstm_nodes {
	int seq, h, c;
};

/**
 * vtpu_graph_lstm() - a Keras LSTM (gates i, f, c, o; sigmoid and tanh;
 * kernel [in, 4 units], recurrent_kernel [units, 4 units], bias [4 units]
 * with the forget gate's part 1 at first), unrolled over the sequence
 * @x's steps in the compiled step. The kernels start glorot-uniform
 * (Keras starts the recurrent one orthogonal).
 * @init_h, @init_c: the initial state, vectors of @units (an encoder's
 *	final state, for a decoder), or both -1 for zeros
 * @out: if not NULL, the nodes of the outputs (return_sequences and
 *	return_state: the sequence, the last h and the last c)
 * Return: the sequence node, or -errno.
 */
VTPU_API int vtpu_graph_lstm(struct vtpu_graph *g, int x, uint32_t units,
			     int init_h, int init_c,
			     struct vtpu_lstm_nodes *out);

/** struct vtpu_gru_nodes - a GRU's outputs: every step's h, the last h */
struct vtpu_gru_nodes {
	int seq, h;
};

/**
 * vtpu_graph_gru() - a Keras GRU with its TF2 default reset_after=True,
 * unrolled over the sequence @x's steps in the compiled step. Gates z
 * (update), r (reset) and the candidate h~ side by side in Keras' order:
 * kernel [in, 3 units], recurrent_kernel [units, 3 units] and bias
 * [2, 3 units] (row 0 the input's bias b_i, row 1 the recurrent one b_r;
 * zeros at first). Each step, from the previous h:
 *   z  = sigmoid(x W_z + b_iz + h U_z + b_rz)
 *   r  = sigmoid(x W_r + b_ir + h U_r + b_rr)
 *   h~ = tanh(x W_h + b_ih + r * (h U_h + b_rh))
 *   h' = z * h + (1 - z) * h~
 * (reset_after: r scales the recurrent part after its product). The
 * kernels start glorot-uniform (Keras starts the recurrent one
 * orthogonal), as the LSTM's.
 * @init_h: the initial h, a vector of @units (an encoder's final state,
 *	for a decoder), or -1 for zeros
 * @out: if not NULL, the nodes of the outputs (return_sequences and
 *	return_state: the sequence and the last h)
 * Return: the sequence node, or -errno.
 */
VTPU_API int vtpu_graph_gru(struct vtpu_graph *g, int x, uint32_t units,
			    int init_h, struct vtpu_gru_nodes *out);

/**
 * vtpu_graph_attention() - Luong's dot-product attention (Keras'
 * Attention()): for each step of @query, softmax(query . value^T) over
 * the steps of @value, then the weighted sum of @value's steps: a
 * sequence as long as @query, as wide as both.
 * @mask: a token input as long as @value whose lengths mark the keys
 *	that are not padding (vtpu_graph_pack_tokens()), or -1 for none
 */
VTPU_API int vtpu_graph_attention(struct vtpu_graph *g, int query, int value,
				  int mask);

/**
 * vtpu_graph_additive_attention() - Bahdanau's additive attention (the
 * TensorFlow NMT tutorial's BahdanauAttention): for each step q_t of
 * @query and each step k_s of @value, the score v . tanh(W1 q_t + W2 k_s),
 * softmax over the steps of @value (masked as vtpu_graph_attention()'s),
 * then the weighted sum of @value's steps: a sequence as long as @query,
 * as wide as @value. The layer holds its projections, "query_kernel" W1
 * [query width][units] and "key_kernel" W2 [value width][units] (dense,
 * no bias), and "scale" v [units]; W2 @value runs once per batch (once
 * before the first step when decoding).
 * @mask: as vtpu_graph_attention()'s
 * @units: the projections' width, 1..VTPU_ADDITIVE_MAX_UNITS, with each
 *	sequence's length times @units at most VTPU_ADDITIVE_MAX_WORK
 */
VTPU_API int vtpu_graph_additive_attention(struct vtpu_graph *g, int query,
					   int value, int mask,
					   uint32_t units);

/**
 * vtpu_graph_concat() - @x and @y side by side along the last axis (two
 * sequences of the same length, or two vectors). Only a dense layer may
 * take it (it runs as one GEMM per part: nothing is copied).
 */
VTPU_API int vtpu_graph_concat(struct vtpu_graph *g, int x, int y);

/**
 * vtpu_graph_inputs_size() - bytes of the inputs of @batch examples: the
 * images (u8), or the packed token inputs.
 */
VTPU_API uint64_t vtpu_graph_inputs_size(const struct vtpu_graph *g,
					 uint32_t batch);

/**
 * vtpu_graph_pack_tokens() - lay out @batch examples' token inputs as the
 * compiled step reads them: for each token input in the order they were
 * made, u32 ids [T][batch] (time-major) then u32 lengths [batch], the
 * tokens before the first VTPU_TOK_PAD
 * @ids: per token input, u32 [batch][T] (row-major, padded)
 * @out: vtpu_graph_inputs_size() bytes
 * Return: 0, or -EINVAL for a graph without token inputs.
 */
VTPU_API int vtpu_graph_pack_tokens(const struct vtpu_graph *g,
				    uint32_t batch,
				    const uint32_t *const *ids, void *out);

/**
 * vtpu_graph_pack_labels() - a sequence loss's labels as the step reads
 * them: u32 [T][batch] time-major, padding (VTPU_TOK_PAD) turned into
 * an ignored label (>= the classes).
 * @labels: u32 [batch][T], row-major
 * @out: u32 [T * batch]
 * Return: the labels that count (not padding, below the classes: the
 * loss ignores the others), or -EINVAL without a sequence loss.
 */
VTPU_API int64_t vtpu_graph_pack_labels(const struct vtpu_graph *g,
					uint32_t batch,
					const uint32_t *labels,
					uint32_t *out);

/** vtpu_graph_num_params() - trainable scalars in the graph. */
VTPU_API uint64_t vtpu_graph_num_params(const struct vtpu_graph *g);

/* ---- compiling and running ------------------------------------------------ */

enum vtpu_optimizer {
	VTPU_OPT_ADAM = 0,
	VTPU_OPT_SGD = 1,
};

/**
 * struct vtpu_compile_opts - how to train (libbpf-style sized options)
 * @sz: sizeof(struct vtpu_compile_opts)
 * @device: "/dev/vtpuN" or "cpu" (NULL: "/dev/vtpu0")
 * @cpu_gemm: enum vtpu_cpu_gemm, for "cpu"
 * @threads: cpu backend threads (0: one per CPU)
 * @optimizer: enum vtpu_optimizer
 * @learning_rate: 0: 1e-3 (Adam) or 1e-2 (SGD)
 * @momentum: SGD momentum
 * @beta1, @beta2, @epsilon: Adam's (0: 0.9, 0.999, 1e-7 as Keras)
 * @batch: examples per step (0: 32)
 * @seed: weight initialisation and shuffling
 * @input_scale: what a pixel value is multiplied by (0: 1/255; 1 feeds raw
 *               0..255 values, as some Keras tutorials do); finite
 * @input_shift: added after scaling: input = pixel * scale + shift (0 by
 *               default; -mean / std with scale 1 / std standardises the
 *               inputs, see vtpu_dataset_pixel_stats()); finite
 * @no_bn_fold: not 0: evaluate and predict run every batch norm as one
 *              (0, the default: one right after a convolution or dense
 *              layer without activation is folded into its weights, W * s
 *              and (b - moving_mean) * s + beta with s = gamma /
 *              sqrt(moving_variance + epsilon) per output channel,
 *              computed on the device at the start of each run)
 * @cpu_mem_cap: "cpu" only: bytes of buffer memory the model may hold, as
 *               the module parameter mem_cap_mb caps a device's (0: no
 *               cap); a buffer past it fails with -ENOSPC as on a device,
 *               and fit() streams a training set that does not fit
 */
struct vtpu_compile_opts {
	size_t sz;
	const char *device;
	int cpu_gemm;
	int threads;
	enum vtpu_optimizer optimizer;
	float learning_rate;
	float momentum;
	float beta1, beta2, epsilon;
	uint32_t batch;
	uint64_t seed;
	float input_scale;
	float input_shift;
	uint32_t no_bn_fold;
	uint64_t cpu_mem_cap;
};

#define VTPU_COMPILE_OPTS(name, ...)                                   \
	VTPU_SIZED_OPTS_(vtpu_compile_opts, name, __VA_ARGS__)

/**
 * struct vtpu_epoch_stats - what one epoch of fit() measured
 * @epoch: 1-based
 * @steps: training steps run
 * @loss, @acc: mean training loss and accuracy over the epoch
 * @val_loss, @val_acc: on the validation set (NAN without one)
 * @seconds: wall time of the training steps (validation excluded)
 * @ms_per_step: @seconds / @steps, in ms
 * @skipped: streamed epochs: examples whose file could not be decoded
 *	(each replaced by a good one, see vtpu_stream_read()); else 0
 * @streamed: the epoch was streamed (vtpu_model_fit_stream())
 * @input_wait_s: streamed epochs: of @seconds, the time the training
 *	thread waited for a ring buffer's examples to be decoded (0: the
 *	decoding was all hidden behind the training)
 * @fence_wait_s: streamed epochs: of @seconds, the time it waited for a
 *	job's fence before refilling the job's ring buffer
 * @fill_s: streamed epochs: of @seconds, the time it spent on the decoded
 *	examples itself (copies from the source's cache, the labels' check,
 *	augmentation)
 * @decode_s: streamed epochs: the source's decoding threads' CPU time in
 *	decoding files, summed over the threads (overlaps @seconds)
 * @decoded: streamed epochs: examples decoded from their files
 * @cached: streamed epochs: examples copied from the source's cache of
 *	decoded images instead (see vtpu_image_folder_opts' cache_bytes)
 */
struct vtpu_epoch_stats {
	uint32_t epoch;
	uint32_t steps;
	double loss, acc;
	double val_loss, val_acc;
	double seconds, ms_per_step;
	uint32_t skipped;
	bool streamed;
	double input_wait_s, fence_wait_s, fill_s, decode_s;
	uint32_t decoded, cached;
};

/**
 * struct vtpu_fit_opts - options of vtpu_model_fit()
 * @sz: sizeof(struct vtpu_fit_opts)
 * @epochs: 0: 1
 * @no_shuffle: keep the dataset's order
 * @validation: evaluated after every epoch (NULL: none)
 * @progress: Keras-style progress output (NULL: silent)
 * @max_steps: stop each epoch after this many steps (0: the whole set)
 * @on_epoch: called after every epoch (may be NULL)
 * @ctx: for @on_epoch
 * @lr_schedule: called before every epoch @epoch (1..@epochs) with the
 *	current learning rate; what it returns is the epoch's rate (Keras'
 *	LearningRateScheduler; NULL: keep the rate; see
 *	vtpu_model_set_learning_rate())
 * @augment: random flips and shifts of the training images, drawn anew
 *	for every image of every epoch (vtpu_data.h); the shift must be
 *	smaller than the images
 * @validation_freq: evaluate @validation after every @validation_freq-th
 *	epoch and after the last (Keras' validation_freq; 0: every epoch);
 *	the other epochs report NAN
 * @token_validation: vtpu_model_fit_tokens()'s @validation
 * @stream: vtpu_model_fit(): stream the training set through a ring of
 *	device buffers (vtpu_model_fit_stream()) even if it fits the
 *	device's memory; it is streamed anyway when it does not
 * @stream_ring: streamed fits: device buffers in the ring (0: 3; >= 3)
 * @stream_chunk: streamed fits: batches per ring buffer (0: as many as
 *	make about 4 MiB of images, fewer if the memory cap asks or the
 *	epoch would not go round the ring twice)
 */
struct vtpu_fit_opts {
	size_t sz;
	uint32_t epochs;
	bool no_shuffle;
	const struct vtpu_dataset *validation;
	FILE *progress;
	uint32_t max_steps;
	void (*on_epoch)(void *ctx, const struct vtpu_epoch_stats *st);
	void *ctx;
	struct vtpu_augment augment;
	float (*lr_schedule)(void *ctx, uint32_t epoch, uint32_t epochs,
			     float lr);
	uint32_t validation_freq;
	const struct vtpu_token_dataset *token_validation;
	bool stream;
	uint32_t stream_ring;
	uint32_t stream_chunk;
};

#define VTPU_FIT_OPTS(name, ...)                                       \
	VTPU_SIZED_OPTS_(vtpu_fit_opts, name, __VA_ARGS__)

/* ---- the model (Keras Sequential) ---------------------------------------- */

struct vtpu_model;

/** vtpu_model_create() - a model whose input is u8 images h x w x c. */
VTPU_API struct vtpu_model *vtpu_model_create(uint32_t h, uint32_t w, uint32_t c);
VTPU_API void vtpu_model_destroy(struct vtpu_model *m);

VTPU_API int vtpu_model_add_dense(struct vtpu_model *m, uint32_t units,
			 enum vtpu_activation act);
VTPU_API int vtpu_model_add_conv2d(struct vtpu_model *m, uint32_t filters,
			  uint32_t kh, uint32_t kw, enum vtpu_padding pad,
			  enum vtpu_activation act);
VTPU_API int vtpu_model_add_maxpool(struct vtpu_model *m, uint32_t kh, uint32_t kw);
/** vtpu_model_add_avgpool() - vtpu_graph_avgpool() on the last layer. */
VTPU_API int vtpu_model_add_avgpool(struct vtpu_model *m, uint32_t kh, uint32_t kw,
			   uint32_t stride, enum vtpu_padding pad);
/** vtpu_model_add_global_avgpool() - vtpu_graph_global_avgpool(). */
VTPU_API int vtpu_model_add_global_avgpool(struct vtpu_model *m);
VTPU_API int vtpu_model_add_relu(struct vtpu_model *m);
VTPU_API int vtpu_model_add_flatten(struct vtpu_model *m);
VTPU_API int vtpu_model_add_dropout(struct vtpu_model *m, float rate);
/** vtpu_model_add_batchnorm() - vtpu_graph_batchnorm() on the last layer. */
VTPU_API int vtpu_model_add_batchnorm(struct vtpu_model *m, float momentum,
				      float epsilon);

/** vtpu_model_graph() - the model's graph (owned by the model). */
VTPU_API struct vtpu_graph *vtpu_model_graph(struct vtpu_model *m);

/**
 * vtpu_model_set_output() - a model built with the graph API (a functional
 * model: branches, residual additions, several paths from the input) on
 * vtpu_model_graph(m), whose input node is the model's input: @node, a
 * dense layer with softmax, becomes the model's output, as the last
 * add_*() call would make it. Before compiling.
 * Return: 0, or -EINVAL (not a node of this graph, not a softmax layer, a
 * compiled model; see vtpu_model_error()).
 */
VTPU_API int vtpu_model_set_output(struct vtpu_model *m, int node);

/** vtpu_model_summary() - a Keras-style layer table. */
VTPU_API void vtpu_model_summary(const struct vtpu_model *m, FILE *out);

/**
 * vtpu_model_compile() - bind to a backend, initialise the weights and
 * compile the training step for @opts->batch
 * Return: 0 or -errno (-ENOENT: no such device; see vtpu_model_error()).
 */
VTPU_API int vtpu_model_compile(struct vtpu_model *m,
		       const struct vtpu_compile_opts *opts);

/**
 * vtpu_model_fit() - train on @train (labels < the last layer's units)
 * Return: 0, or -errno (a job failed, a bad dataset shape, ...).
 */
VTPU_API int vtpu_model_fit(struct vtpu_model *m, const struct vtpu_dataset *train,
		   const struct vtpu_fit_opts *opts);

/**
 * vtpu_model_fit_stream() - train on a streamed source (a folder opened
 * with vtpu_image_folder_open(), or an in-memory dataset) that need not
 * fit the device's memory
 * @m: a compiled model taking the source's image shape
 * @train: labels must be below the model's classes (checked per chunk)
 * @opts: as vtpu_model_fit()'s (@opts->validation is evaluated resident)
 *
 * Each epoch's order is drawn as vtpu_model_fit() draws it and cut into
 * chunks of @opts->stream_chunk batches. The chunks go through a ring of
 * @opts->stream_ring device buffers (u8 images and u32 labels, the layout
 * the training program reads from a resident set): while the device
 * trains on chunk k, the source's threads decode chunks k+1 .. k+ring-1
 * into the other buffers; a buffer is refilled only after the job that
 * read it has signalled its fence. The programs, the remainder batch, the
 * progress bar and the per-epoch statistics are those of vtpu_model_fit(),
 * so an in-memory dataset trains to the same weights, bit for bit, streamed
 * or resident (without augmentation, or with it and no @opts->max_steps:
 * the random draws are made in the same order). Bad files are skipped as
 * vtpu_stream_read() says; their count is in struct vtpu_epoch_stats and
 * printed by the progress output at the end of the epoch.
 *
 * Return: 0, or -errno (-EINVAL: a shape or label the model cannot take,
 * a ring of fewer than 3; -EIO: nothing of a chunk could be decoded; a
 * failed job; see vtpu_model_error()).
 */
VTPU_API int vtpu_model_fit_stream(struct vtpu_model *m,
				   struct vtpu_stream *train,
				   const struct vtpu_fit_opts *opts);

/**
 * vtpu_model_compile_replicated() - data-parallel training on @n devices
 * @devices: "/dev/vtpuN" or "cpu", one per replica; a device at most once
 *           (two paths to one node are refused too), the cpu backend any
 *           number of times (each is a backend of its own)
 * @n: replicas, 1 to 64
 * @opts: as vtpu_model_compile(); @opts->device is ignored, @opts->batch
 *        is the global batch, which must split evenly between the
 *        replicas
 *
 * TensorFlow's MirroredStrategy/TPUStrategy: the model is compiled once
 * per replica, replica r on @devices[r], with the same initial weights.
 * Each training step of fit() gives replica r the r-th share (batch / n
 * examples) of the global batch one device would train on, runs its
 * forward and backward passes with the loss scaled to the global batch's
 * mean (1 / batch, not 1 / (batch / n)), sums the gradients of all
 * replicas (the all-reduce, in a fixed order: replica 0's + replica 1's
 * + ..., so the result is deterministic whatever the timing), and then
 * runs the same optimizer step on every replica, so the replicas' weights
 * stay bitwise equal. The loss reported is the sum of the replicas'
 * parts: the global batch's mean. Per-replica quantities: dropout masks
 * (each replica its own seed) and batch norm statistics (each replica's
 * share of the batch, so each replica's moving statistics are its own and
 * replica 0's are the model's: Keras' MirroredStrategy averages them,
 * not done yet).
 *
 * The all-reduce runs on the backends, as engine commands: replica k sums
 * slice k of every replica's gradients (devices read each other's as
 * dma-bufs; cpu backends, in one process, each other's memory) and copies
 * the sum into every replica's; between devices the three submissions of
 * a step are ordered by fences, the host waits once per step
 * (docs/architecture.md, "Data parallelism"); with every replica a cpu
 * backend, each replica's step runs on a thread of its own (replica 0 on
 * the caller's), all at once, with @opts->threads workers each. An
 * epoch's last partial global batch trains on replica 0 alone, as on one
 * device, and the other replicas take its state; streamed input and
 * models of token inputs are refused.
 * evaluate(), predict(), get_weights(), save() and load() use replica 0
 * (the model's own state, on @devices[0]) with the whole batch; weights
 * set or loaded are copied to the other replicas when fit() starts.
 * vtpu_model_set_batch() is refused: compile again for another batch.
 *
 * Return: 0 or -errno (see vtpu_model_error()): -EINVAL for no device, a
 * duplicate device, a batch that does not split evenly, replicas with
 * different SIMD levels, weight layouts or (devices) memory caps; the
 * errors of vtpu_model_compile() and of opening a device.
 */
VTPU_API int vtpu_model_compile_replicated(struct vtpu_model *m,
					   const char *const *devices,
					   uint32_t n,
					   const struct vtpu_compile_opts *opts);

/**
 * vtpu_model_num_replicas() - replicas of a compiled model (1 unless
 * compiled by vtpu_model_compile_replicated()), 0 if not compiled.
 */
VTPU_API uint32_t vtpu_model_num_replicas(const struct vtpu_model *m);

/**
 * vtpu_model_get_replica_weights() - vtpu_model_get_weights() from
 * replica @replica's copy of the weights (0: the model's own).
 * Return: 0, or -EINVAL (no such replica, and as vtpu_model_get_weights()).
 */
VTPU_API int vtpu_model_get_replica_weights(struct vtpu_model *m,
					    uint32_t replica, uint32_t i,
					    float *out, uint64_t count);

/**
 * vtpu_dist_init() - join the job of processes that mpirun started
 * @argc, @argv: main()'s, for MPI_Init_thread() (may be NULL)
 *
 * Under mpirun (or another launcher that says there are several ranks),
 * initialises MPI (MPI_THREAD_FUNNELED: libvtpu calls MPI from the
 * thread that calls fit()) unless the program did, and records this
 * process's rank and the job's size; a single process is rank 0 of 1 and
 * nothing is initialised. Call it before anything else reads @argv.
 * Test hook, documented for the selftests only: VTPU_DIST_TEST_HANG=R:S
 * makes rank R stop answering in the gradient all-reduce of step S.
 *
 * Return: 0, -EOPNOTSUPP (several ranks, but libvtpu was built without
 * MPI; said on stderr) or -EIO.
 */
VTPU_API int vtpu_dist_init(int *argc, char ***argv);

/**
 * vtpu_dist_available() - 1 if libvtpu was built with MPI, else 0
 */
VTPU_API int vtpu_dist_available(void);

/**
 * vtpu_dist_rank() - this process's rank (0 without vtpu_dist_init())
 */
VTPU_API int vtpu_dist_rank(void);

/**
 * vtpu_dist_size() - the job's ranks (1 without vtpu_dist_init())
 */
VTPU_API int vtpu_dist_size(void);

/**
 * vtpu_dist_set_timeout() - how long a rank waits for the others
 * @seconds: above 0 (default: the environment's VTPU_DIST_TIMEOUT, else
 *           120)
 *
 * Every exchange between ranks (the model check, the weights' broadcast,
 * each step's all-reduce) fails with -ETIMEDOUT and a message naming it
 * and the step ("rank 0 of 2: no answer from the other ranks for 120 s in
 * the gradient all-reduce of step 37; is a rank dead?") when the others
 * do not answer for that long, instead of waiting forever.
 * Return: 0 or -EINVAL.
 */
VTPU_API int vtpu_dist_set_timeout(double seconds);

/**
 * vtpu_dist_finalize() - leave the job (MPI_Finalize() if
 * vtpu_dist_init() initialised MPI); after an exchange that timed out or
 * failed, aborts the whole job instead (MPI_Abort(), status 1), as the
 * other ranks may never answer.
 * Return: 0 or -EIO.
 */
VTPU_API int vtpu_dist_finalize(void);

/**
 * vtpu_dist_abort() - end every rank of the job with @status
 * (MPI_Abort()); a single process exits with @status.
 */
VTPU_API void vtpu_dist_abort(int status);

/**
 * vtpu_model_compile_distributed() - data-parallel training across the
 * ranks of an MPI job, each with @n local replicas
 * @devices: this rank's devices, as vtpu_model_compile_replicated()
 * @n: local replicas, the same on every rank
 * @opts: as vtpu_model_compile_replicated(); @opts->batch is the global
 *        batch of the whole job, which must split evenly between the
 *        vtpu_dist_size() x @n replicas
 *
 * vtpu_model_compile_replicated() across machines (Keras'
 * MultiWorkerMirroredStrategy): global replica g = rank x @n + l trains on
 * the g-th share of each global batch; every rank runs the same shuffled
 * order (the same seed) and deals itself its shares, so each loads the
 * whole training set and the dataset is sharded by rank step by step.
 * Each step the ranks' local sums of the gradients (their replica 0's)
 * are summed across the ranks in rank order, every rank summing a slice
 * (docs/architecture.md, "Data parallelism"), so the bits do not depend
 * on timing; with one replica per rank the result is bitwise that of
 * vtpu_model_compile_replicated() on as many cpu backends in one process.
 * fit() starts from rank 0's weights and optimizer state (broadcast),
 * checks that every rank trains on as many examples, and reports the
 * global batch's loss and accuracy on every rank. evaluate() and predict()
 * run on each rank alone. Before compiling anything the ranks compare
 * their models (layers, shapes, parameters, optimizer, global batch, local
 * replicas, SIMD level, input scaling, seed) and every rank refuses a
 * difference. Without vtpu_dist_init() (one rank), the same as
 * vtpu_model_compile_replicated().
 *
 * Return: 0 or -errno (see vtpu_model_error()): as
 * vtpu_model_compile_replicated(); -EINVAL when the ranks' models differ
 * (naming the rank and what differs), -ETIMEDOUT when a rank does not
 * answer (vtpu_dist_set_timeout()).
 */
VTPU_API int vtpu_model_compile_distributed(struct vtpu_model *m,
					    const char *const *devices,
					    uint32_t n,
					    const struct vtpu_compile_opts *opts);

/**
 * vtpu_model_set_learning_rate() - a compiled model's learning rate from
 * the next step on. The compiled training programs are changed in place:
 * no recompilation, and the optimizer's state (moments, step count) is
 * kept. Compiling again starts from the compile options' rate.
 * Return: 0, or -EINVAL for a rate that is not finite and > 0 or a model
 * that is not compiled (the rate is unchanged then).
 */
VTPU_API int vtpu_model_set_learning_rate(struct vtpu_model *m, float lr);

/**
 * vtpu_model_set_batch() - train with @batch examples per step from the
 * next fit() on, keeping the weights and the optimizer's state; the
 * training step is compiled for @batch now if it is new.
 * Return: 0, or -EINVAL (batch 0, a model that is not compiled) or the
 * compiler's -errno; the batch is unchanged then.
 */
VTPU_API int vtpu_model_set_batch(struct vtpu_model *m, uint32_t batch);

/**
 * vtpu_model_set_input_scale() - a compiled model's input transform
 * (input = pixel * @scale + @shift, struct vtpu_compile_opts), keeping the
 * weights and the optimizer's state; programs are compiled again for it.
 * Return: 0, or -EINVAL (not finite, scale 0, a model that is not
 * compiled) or the compiler's -errno.
 */
VTPU_API int vtpu_model_set_input_scale(struct vtpu_model *m, float scale,
					float shift);

/**
 * vtpu_model_stop() - make fit() return 0 after the epoch in progress
 * (Keras' model.stop_training = True): from an on_epoch callback, or from
 * another thread. The next fit() starts afresh.
 */
VTPU_API void vtpu_model_stop(struct vtpu_model *m);

/** vtpu_model_learning_rate() - the rate the next step uses. */
VTPU_API float vtpu_model_learning_rate(const struct vtpu_model *m);

/** vtpu_model_evaluate() - mean loss and accuracy over @ds. */
VTPU_API int vtpu_model_evaluate(struct vtpu_model *m, const struct vtpu_dataset *ds,
			double *loss, double *acc);

/**
 * vtpu_model_predict() - class probabilities of @n images
 * @images: u8 [n, h, w, c]
 * @probs: out, f32 [n, classes]
 */
VTPU_API int vtpu_model_predict(struct vtpu_model *m, const uint8_t *images,
		       uint32_t n, float *probs);

/**
 * vtpu_model_save() / vtpu_model_load() - the weights and optimizer state,
 * in a checkpoint (vtpu_data.h) whose tensors are named by layer; loading
 * checks that every name and shape matches this model.
 */
VTPU_API int vtpu_model_save(struct vtpu_model *m, const char *path);
VTPU_API int vtpu_model_load(struct vtpu_model *m, const char *path);

/**
 * vtpu_model_save_meta() / vtpu_model_load_meta() - the same, with strings
 * stored beside the weights (struct vtpu_ckpt_meta): loading fails, and
 * changes nothing, unless the checkpoint holds each of @meta's keys with
 * the same value. Bind a checkpoint to what its weights were trained on:
 *
 *	char fp[VTPU_VOCAB_FINGERPRINT_LEN];
 *	struct vtpu_ckpt_meta meta = { "source vocabulary", fp };
 *
 *	vtpu_vocab_fingerprint(&src, fp);
 *	vtpu_model_save_meta(m, "model.ckpt", &meta, 1);
 *	...
 *	vtpu_model_load_meta(m, "model.ckpt", &meta, 1);  (-EKEYREJECTED:
 *		another vocabulary, vtpu_model_error() names both
 *		fingerprints; -ENOKEY: a checkpoint saved without one)
 */
VTPU_API int vtpu_model_save_meta(struct vtpu_model *m, const char *path,
				  const struct vtpu_ckpt_meta *meta,
				  size_t nmeta);
VTPU_API int vtpu_model_load_meta(struct vtpu_model *m, const char *path,
				  const struct vtpu_ckpt_meta *meta,
				  size_t nmeta);

/**
 * struct vtpu_weight_info - one trainable tensor, as Keras lists them
 * @name: "conv2d_1/kernel", "dense_1/bias": the checkpoint's name
 * @ndim: dimensions in @shape
 * @shape: Keras' layout: dense kernel [inputs, units], conv2d kernel
 *	[kh, kw, channels, filters], bias [units]
 * @count: elements
 */
struct vtpu_weight_info {
	char name[64];
	uint32_t ndim;
	uint32_t shape[4];
	uint64_t count;
};

/** vtpu_model_num_weights() - tensors in the model (kernels and biases). */
VTPU_API int vtpu_model_num_weights(const struct vtpu_model *m);

/** vtpu_model_weight_info() - tensor @i (0 .. num_weights - 1). */
VTPU_API int vtpu_model_weight_info(const struct vtpu_model *m, uint32_t i,
				    struct vtpu_weight_info *wi);

/**
 * vtpu_model_get_weights() / vtpu_model_set_weights() - tensor @i as
 * @count (its element count) f32 values, row-major in the layout of
 * struct vtpu_weight_info, whatever layout the backend keeps it in
 * (Keras' get_weights()/set_weights()). Setting keeps the optimizer's
 * state. Compiled models only (the weights live on the device).
 * Return: 0, or -EINVAL (no such tensor, @count is not its size, not
 * compiled, a value that is not finite: nothing is changed then).
 */
VTPU_API int vtpu_model_get_weights(struct vtpu_model *m, uint32_t i,
				    float *out, uint64_t count);
VTPU_API int vtpu_model_set_weights(struct vtpu_model *m, uint32_t i,
				    const float *in, uint64_t count);

/**
 * struct vtpu_model_info - what the compiler made of the model
 * @params: trainable scalars
 * @commands: commands in one training step
 * @stream_bytes: size of the training step's command stream
 * @state_bytes: weights and optimizer state (device memory)
 * @work_bytes: the training step's activation arena after liveness-based
 *              reuse
 * @naive_bytes: what the arena would need without reuse
 * @compile_ms: time spent compiling the training step
 * @backend: "vtpu0 (avx2, 2 cores)", "cpu (engine, avx512, 2 threads)", ...
 */
struct vtpu_model_info {
	uint64_t params;
	uint32_t commands;
	uint32_t stream_bytes;
	uint64_t state_bytes;
	uint64_t work_bytes;
	uint64_t naive_bytes;
	double compile_ms;
	char backend[64];
};

VTPU_API int vtpu_model_info(const struct vtpu_model *m, struct vtpu_model_info *info);

/** vtpu_model_error() - the last failure explained, or "". */
VTPU_API const char *vtpu_model_error(const struct vtpu_model *m);

/* ---- models of token inputs (the functional API) ------------------------- */

#define VTPU_MAX_TOKEN_INPUTS 8

/**
 * struct vtpu_token_dataset - examples of a model of token inputs
 * @n: examples
 * @inputs: per token input of the graph, in the order they were made:
 *	u32 [n][T] ids, left-aligned, padded with VTPU_TOK_PAD
 * @labels: u32 [n][T] for a loss on a sequence (VTPU_TOK_PAD where a step
 *	counts for nothing), or u32 [n] classes
 */
struct vtpu_token_dataset {
	uint32_t n;
	const uint32_t *inputs[VTPU_MAX_TOKEN_INPUTS];
	const uint32_t *labels;
};

/**
 * vtpu_model_create_graph() - a model of a graph built with the graph API
 * on token inputs (an encoder-decoder, say), whose loss is set
 * (vtpu_graph_loss()). The model owns @g from here on (destroying the
 * model destroys it). Compile it with vtpu_model_compile() as any model.
 * Return: the model, or NULL with errno set (EINVAL: no token inputs);
 * then @g is still the caller's.
 */
VTPU_API struct vtpu_model *vtpu_model_create_graph(struct vtpu_graph *g);

/**
 * vtpu_model_fit_tokens() - train on @train, as vtpu_model_fit() does
 * (the same options; @opts->token_validation is evaluated as @validation
 * is; augmentation does not apply). Loss and accuracy are means over the
 * labels that are not padding. An id past its embedding's vocabulary or
 * a label past the classes is an error naming the example and step.
 */
VTPU_API int vtpu_model_fit_tokens(struct vtpu_model *m,
				   const struct vtpu_token_dataset *train,
				   const struct vtpu_fit_opts *opts);

/** vtpu_model_evaluate_tokens() - mean loss and accuracy over @ds. */
VTPU_API int vtpu_model_evaluate_tokens(struct vtpu_model *m,
					const struct vtpu_token_dataset *ds,
					double *loss, double *acc);

/**
 * vtpu_model_predict_tokens() - the output's probabilities for @n
 * examples: f32 [n][T][classes] for a sequence, [n][classes] otherwise
 * @inputs: per token input, u32 [n][T]
 */
VTPU_API int vtpu_model_predict_tokens(struct vtpu_model *m,
				       const uint32_t *const *inputs,
				       uint32_t n, float *probs);

/**
 * vtpu_model_set_bucket_width() - padded lengths in buckets of @width steps
 * @m: a model of token inputs (compiled or not)
 * @width: an example whose ids (and, for the input a sequence loss runs
 *	along, labels) end at step L runs padded to roundup(L, @width),
 *	at most the declared length; a batch runs at its longest example's,
 *	by a program compiled once for those lengths and cached. 0: every
 *	batch at the declared lengths. The default is 8.
 *
 * Only inputs whose padding steps count for nothing run shorter: not one
 * read by a recurrent layer's last state, an unmasked attention's keys or
 * a layer that leaves the time axis; nor, in a prediction or decoding, the
 * input its output runs along (all its steps are asked for). fit_tokens()
 * orders each epoch's examples by bucket (shuffled within each) and then
 * shuffles the order of the batches; results equal those at full length.
 *
 * Return: 0.
 */
VTPU_API int vtpu_model_set_bucket_width(struct vtpu_model *m, uint32_t width);

/**
 * vtpu_model_programs_compiled() - programs compiled since
 *	vtpu_model_compile(), each (kind, batch, padded lengths) once while
 *	it stays cached: a second epoch over the same data compiles none
 * @m: the model
 */
VTPU_API uint64_t vtpu_model_programs_compiled(const struct vtpu_model *m);

/**
 * vtpu_model_decode() - greedy decoding, in one submission per batch:
 * the graph's sequence output generated step by step, each step's most
 * probable id fed back as the next step's id of token input @target (the
 * decoder's input: teacher forcing while training, its own output here);
 * the layers that do not depend on @target (the encoder) run once. The
 * layers after @target must be embeddings, LSTMs, GRUs, attention,
 * concatenations, dense layers and dropout (-EOPNOTSUPP otherwise).
 * @target: a token input of the graph, as long as the output sequence
 * @inputs: per token input, u32 [n][T]; @target's is not read (may be
 *	NULL): step 0 reads VTPU_TOK_START
 * @out: u32 [n][T], the ids generated at each step (the sentence ends at
 *	the first VTPU_TOK_END: vtpu_vocab_decode() stops there)
 */
VTPU_API int vtpu_model_decode(struct vtpu_model *m, int target,
			       const uint32_t *const *inputs, uint32_t n,
			       uint32_t *out);

/* The widest beam vtpu_model_decode_beam() searches with. */
#define VTPU_BEAM_MAX_WIDTH 64

/**
 * struct vtpu_beam_opts - how vtpu_model_decode_beam_opts() searches
 * @sz: sizeof(struct vtpu_beam_opts), for the ABI (VTPU_BEAM_OPTS())
 * @width: hypotheses kept per sentence, 1..VTPU_BEAM_MAX_WIDTH and at
 *	most the output's classes (1: greedy)
 * @alpha: length normalisation, GNMT's (Wu et al. 2016, as the TF NMT
 *	tutorial's length_penalty_weight and OpenNMT's "wu" penalty):
 *	hypotheses are ranked by score / ((5 + length) / 6)^alpha, length
 *	the ids generated up to and including VTPU_TOK_END. 0 (the default,
 *	as in both of those) ranks by the plain sum of log-probabilities,
 *	which favours short sentences; 0.6-1 is the usual range against it.
 */
struct vtpu_beam_opts {
	size_t sz;
	uint32_t width;
	float alpha;
};

#define VTPU_BEAM_OPTS(name, ...)                                      \
	VTPU_SIZED_OPTS_(vtpu_beam_opts, name, __VA_ARGS__)

/**
 * vtpu_model_decode_beam() - beam search: for each sentence, @width
 * hypotheses (prefixes of the output) kept, each extended by every id at
 * the next step, the @width best of the extensions and of the finished
 * hypotheses kept. A hypothesis that emitted VTPU_TOK_END is finished:
 * kept with its score, not extended. A score is the sum, in double, of
 * the natural logs of the probabilities of the hypothesis' ids (a
 * probability of 0 counted as the smallest float's). The search ends
 * when every kept hypothesis is finished, or after the output's last
 * step. Ties go to the lower id, then the lower beam; a finished
 * hypothesis before an extension. No length normalisation (see
 * vtpu_model_decode_beam_opts()). Width 1 gives vtpu_model_decode()'s
 * ids up to the first VTPU_TOK_END.
 *
 * It runs from the host on the model's prediction program: each step
 * predicts the whole output for the kept hypotheses that are not
 * finished (the encoder and all T decoder steps computed again, the
 * steps past the prefix for nothing), so a sentence costs up to
 * T * @width predictions where greedy decoding costs one: a compiled
 * per-step program keeping the encoder's output and the decoder's state
 * per beam would do T times less work.
 *
 * @target, @inputs, @n: as vtpu_model_decode()'s
 * @width: hypotheses per sentence: 1..VTPU_BEAM_MAX_WIDTH, at most the
 *	output's classes
 * @out: u32 [n][T], each sentence's best hypothesis, VTPU_TOK_PAD after
 *	its VTPU_TOK_END (none if it ran to the last step)
 * @scores: f32 [n], the best hypothesis' sum of log-probabilities
 *	(without normalisation), or NULL
 * Return: 0, or a negative errno with vtpu_model_error() saying why.
 */
VTPU_API int vtpu_model_decode_beam(struct vtpu_model *m, int target,
				    const uint32_t *const *inputs, uint32_t n,
				    uint32_t width, uint32_t *out,
				    float *scores);

/**
 * vtpu_model_decode_beam_opts() - vtpu_model_decode_beam() with the
 * width and the length normalisation in @opts (VTPU_BEAM_OPTS()); the
 * hypotheses are ranked by the normalised score, @scores are the plain
 * sums of log-probabilities still.
 */
VTPU_API int vtpu_model_decode_beam_opts(struct vtpu_model *m, int target,
					 const uint32_t *const *inputs,
					 uint32_t n,
					 const struct vtpu_beam_opts *opts,
					 uint32_t *out, float *scores);

/* ---- checking gradients --------------------------------------------------- */

/**
 * vtpu_gradcheck() - compare the compiled backward pass of @g with central
 * finite differences of its loss, on the cpu backend, for every parameter
 * of @g (a sample of @probes elements each). A probe whose slopes from the
 * left and from the right disagree straddles a ReLU kink, where no finite
 * difference is the derivative: it is skipped.
 * @g: a graph with a loss
 * @batch: examples
 * @images: u8 [batch, input shape], or for a graph of token inputs
 *	vtpu_graph_inputs_size() bytes as vtpu_graph_pack_tokens() lays
 *	them out
 * @labels: u32 [batch], or for a sequence loss u32 [T * batch] as
 *	vtpu_graph_pack_labels() lays them out
 * @max_rel: out, the largest relative error seen
 * Return: 0, -ERANGE if most probes sat on kinks (nothing was checked),
 * -EINVAL for a graph with dropout (its masks change every step), or
 * another -errno.
 */
VTPU_API int vtpu_gradcheck(struct vtpu_graph *g, uint32_t batch, const uint8_t *images,
		   const uint32_t *labels, uint32_t probes, double *max_rel);

/* ---- applications: ready-made networks ----------------------------------- */

/**
 * struct vtpu_app_opts - options of the ready-made networks
 * (VTPU_APP_OPTS() fills @sz)
 * @sz: sizeof(struct vtpu_app_opts)
 * @width: the first stage's filters (0: 32); later stages are multiples
 */
struct vtpu_app_opts {
	size_t sz;
	uint32_t width;
};

#define VTPU_APP_OPTS(name, ...) VTPU_SIZED_OPTS_(vtpu_app_opts, name, __VA_ARGS__)

/**
 * vtpu_app_resnet() - a ResNet-18-shaped classifier on @x's images: a 7x7
 * stride-2 convolution, batch norm, ReLU and a 3x3 stride-2 max pool;
 * four stages of two basic blocks (two 3x3 convolutions with batch norm,
 * the shortcut a strided 1x1 convolution with batch norm where the shape
 * changes) of width, 2, 4 and 8 times width filters, each stage after the
 * first halving the size; global average pooling; a dense layer of
 * @classes logits. At width 32 (a quarter of ResNet-18's) on 64x64x3
 * images: 2.8 M parameters.
 * @o: NULL for the defaults
 * The last dense layer has softmax (fused with the loss): the node is a
 * model's output, vtpu_model_set_output() on vtpu_model_graph()'s input.
 * Return: the output node, or -errno.
 */
VTPU_API int vtpu_app_resnet(struct vtpu_graph *g, int x, uint32_t classes,
			     const struct vtpu_app_opts *o);

/**
 * vtpu_app_xception() - the small Xception of Keras' "image classification
 * from scratch" example: a 3x3 stride-2 convolution with batch norm and
 * ReLU; three blocks of (ReLU, separable 3x3 convolution, batch norm)
 * twice and a 3x3 stride-2 max pool, each added to a strided 1x1
 * convolution of the block's input (2, 4 and 8 times width filters); a
 * separable convolution of 12 times width filters, batch norm, ReLU;
 * global average pooling; a dense layer of @classes logits. At width 32
 * (a quarter of the example's): 0.29 M parameters.
 * Return: the output node (as vtpu_app_resnet()'s), or -errno.
 */
VTPU_API int vtpu_app_xception(struct vtpu_graph *g, int x, uint32_t classes,
			       const struct vtpu_app_opts *o);

/**
 * vtpu_app_vgg() - a small VGG-style classifier (cifar10's network one
 * stage deeper; vtpu-bench's vgg64 at width 64): 3x3 'same' convolutions
 * with ReLU, of width, width, 2 x width, 2 x width filters with a 2x2 max
 * pool after each pair, then 4 x width filters and a pool; flattened, a
 * dense layer of 4 x width units with ReLU, and one of @classes logits.
 * At width 32 on 64x64x3 images and 5 classes: 1.19 M parameters, most of
 * them in the first dense layer (the size after the pools times 4 x width).
 * Return: the output node (as vtpu_app_resnet()'s), or -errno.
 */
VTPU_API int vtpu_app_vgg(struct vtpu_graph *g, int x, uint32_t classes,
			  const struct vtpu_app_opts *o);

#ifdef __cplusplus
}
#endif

#endif /* LIBVTPU_VTPU_MODEL_H */
