/* SPDX-License-Identifier: MIT */
/*
 * Inside libvtpu's training stack: the graph (graph.c), the compiler that
 * lowers it to a command stream (compile.c) and the runtime that binds
 * programs to a backend (runtime.c), shared with model.c and gradcheck.c.
 */
#ifndef LIBVTPU_GRAPH_PRIV_H
#define LIBVTPU_GRAPH_PRIV_H

#include "vtpu_model.h"

enum vg_op {
	VG_INPUT,
	VG_DENSE,
	VG_CONV2D,
	VG_MAXPOOL,
	VG_RELU,
	VG_FLATTEN,
	VG_ADD,
	VG_DROPOUT,
	VG_TOKENS,
	VG_EMBEDDING,
	VG_LSTM,
	VG_LSTM_STATE,
	VG_GRU,
	VG_GRU_STATE,
	VG_ATTENTION,
	VG_CONCAT,
	VG_BATCHNORM,
	VG_DWCONV2D,	/* depthwise: DWCONV */
	VG_SEPCONV2D,	/* separable: DWCONV, then a 1x1 GEMM */
	VG_AVGPOOL,
	VG_GLOBAL_AVGPOOL,
	VG_AUGMENT,	/* random crop or flip: preprocessing, no gradient */
	VG_RESCALE,
	VG_ADDITIVE_ATTENTION,	/* Bahdanau: weight W1, weight2 W2, bias v */
	VG_LOSS,	/* last: layer_count[] */
};

/* Token inputs a graph may have (an encoder-decoder has two). */
#define VG_MAX_TOKEN_INPUTS 8
/* Inputs of a node: x (and y, or an LSTM's initial h and c, a GRU's h). */
#define VG_MAX_IN 3

/* How a parameter starts (the model's initialiser, Keras' defaults). */
enum vg_init {
	VG_INIT_GLOROT,		/* kernels: uniform, sqrt(6 / (fan_in + out)) */
	VG_INIT_ZERO,		/* biases */
	VG_INIT_FORGET_ONE,	/* an LSTM's bias: 1 for the forget gate */
	VG_INIT_UNIFORM,	/* embeddings: uniform in +-0.05 */
	VG_INIT_ONE,		/* batch norm: gamma, moving variance */
};

/*
 * A node's per-example output is h x w x c (a vector: 1 x 1 x c). A
 * sequence (@seq) is h = T steps of c features, stored time-major:
 * [T][batch][c], so that a step of the whole batch is one contiguous
 * block (what a recurrence's GEMMs and element-wise commands need) and
 * an op on the last axis is one GEMM over T * batch rows.
 */
struct vg_node {
	enum vg_op op;
	int in[VG_MAX_IN];		/* -1: none */
	bool seq;
	int slot;			/* tokens: which input; lstm_state: 0 h,
					 * 1 c; gru_state: 0 h */
	int mask;			/* attention (both kinds): the tokens
					 * whose lengths mask
					 * the keys, or -1 */
	int weight2;			/* lstm, gru: the recurrent kernel;
					 * separable: the pointwise kernel */
	uint32_t h, w, c;
	enum vtpu_activation act;
	uint32_t kh, kw, pad_h, pad_w;	       /* conv2d, pools; avg pools,
						* depthwise, separable: top,
						* left pads */
	uint32_t mult;			       /* depthwise: filters per
						* channel (separable: 1) */
	uint32_t stride_h, stride_w;	       /* pools; vtpu_graph_maxpool: kh, kw */
	uint32_t pool_end;		       /* maxpool: VTPU_POOL_PAD_END_* */
	int weight, bias;		       /* param indices, or -1 */
	float rate;			       /* dropout; batchnorm: momentum */
	float eps;			       /* batchnorm */
	int mmean, mvar;		       /* batchnorm: moving stats */
	uint32_t aug_flags;		       /* augment: VTPU_AUGMENT_* */
	float scale, offset;		       /* rescale: x * scale + offset */
	char name[32];			       /* Keras-style: dense_1 */
};

struct vg_param {
	char name[48];	/* "dense_1/kernel" */
	uint32_t ndim;
	uint64_t dims[4];
	uint64_t count;
	uint64_t offset; /* in floats, within the parameter block */
	uint32_t fan_in, fan_out;
	bool is_bias;
	bool rows_only;	 /* read by column blocks: never in panels */
	enum vg_init init;
	bool panels;	 /* stored in panels: vg_set_layouts() */
};

struct vtpu_graph {
	struct vg_node *nodes;
	int nnodes, nodes_cap;
	struct vg_param *params;
	int nparams, params_cap;
	uint64_t nparam_floats; /* the parameter block, each one 16-aligned */
	uint64_t nparams_total; /* sum of params[].count */
	int input;		/* node, or -1 */
	int tokens[VG_MAX_TOKEN_INPUTS]; /* token input nodes, in order */
	int ntokens;
	int decode_slot;	/* VG_PROG_DECODE: the input it generates */
	float input_scale;	/* pixel value -> input, 1/255 by default */
	float input_shift;	/* ... plus this, 0 by default */
	uint32_t seed;		/* dropout masks */
	bool bn_nofold;		/* no batch norm folded (vtpu_compile_opts) */
	bool bn_batch_stats;	/* eval programs normalise with the batch's
				 * statistics too (vtpu_gradcheck) */
	int ndropout;		/* nodes drawing per step: dropout, augment */
	int loss;		/* node, or -1 */
	int layer_count[VG_LOSS + 1];
};

static inline uint64_t vg_node_size(const struct vg_node *n)
{
	return (uint64_t)n->h * n->w * n->c;
}

/*
 * The inputs buffer of a graph with token inputs: for each one in order,
 * u32 ids [T][batch] (time-major) then u32 lengths [batch] (the tokens
 * before the padding, what attention masks by). Byte offsets.
 */
uint64_t vg_tokens_offset(const struct vtpu_graph *g, int slot,
			  uint32_t batch);
uint64_t vg_inputs_bytes(const struct vtpu_graph *g, uint32_t batch);
/* Rows of a node's output over a batch: batch, or T * batch (sequence). */
static inline uint64_t vg_node_rows(const struct vg_node *n, uint32_t batch)
{
	return n->seq ? (uint64_t)n->h * batch : batch;
}

/*
 * The state buffer: everything that persists between steps, at offsets
 * that every program of a model shares.
 *   [params: P floats][m or momentum: P][v: P (Adam)]
 *   [adam state: 2 floats][dropout's step counter: 1 float]
 */
struct vg_state_layout {
	uint64_t params, mom, vel, adam_state, step; /* byte offsets */
	uint64_t bytes;
};

/*
 * Length buckets: the token inputs whose padded length a program may be
 * compiled shorter for with the same results on the steps kept (a bit per
 * slot): not those whose time axis a recurrent layer's last state, an
 * unmasked attention's keys or another layer that leaves the time axis
 * reads, since those see every padding step.
 */
uint32_t vg_bucket_slots(const struct vtpu_graph *g);
/*
 * @out: @g with token input k lens[k] steps long, and every node along its
 * time axis too; it shares @g's parameters (free(out->nodes) when done).
 */
int vg_graph_at_lengths(const struct vtpu_graph *g, const uint32_t *lens,
			struct vtpu_graph *out);
/* The token input a sequence loss runs along, or -1. */
int vg_loss_slot(const struct vtpu_graph *g);

void vg_state_layout(const struct vtpu_graph *g, enum vtpu_optimizer opt,
		     struct vg_state_layout *l);

/*
 * How parameters are stored. With @panels, a dense layer's kernel whose
 * units are a multiple of VTPU_GEMM_PANEL is kept in the device's panel
 * layout (VTPU_GEMM_B_PANELS in uapi/linux/vtpu.h), which its GEMMs read
 * without packing; everything else is row-major. The compiler, the weight
 * initialiser and checkpoints follow the choice; set it before any of them.
 */
void vg_set_layouts(struct vtpu_graph *g, bool panels);
/* Where row-major element @i of @p is stored, within @p. */
uint64_t vg_param_index(const struct vg_param *p, uint64_t i);
/* @p's values, stored -> row-major (@to_rows) or row-major -> stored. */
void vg_param_convert(const struct vg_param *p, const float *src, float *dst,
		      bool to_rows);

/* ---- programs --------------------------------------------------------- */

enum vg_prog_kind {
	VG_PROG_TRAIN,	 /* forward, loss + gradient, backward, optimizer */
	VG_PROG_EVAL,	 /* forward, loss and correct count */
	VG_PROG_PREDICT, /* forward, class probabilities */
	VG_PROG_DECODE,	 /* greedy: the graph's decode_slot input fed back */
};

/* Buffer indices every program's stream uses. */
enum vg_buf {
	VG_BUF_STATE,	/* struct vg_state_layout */
	VG_BUF_WORK,	/* the program's activation arena */
	VG_BUF_IMAGES,	/* u8 [batch, h, w, c] (iteration-strided) */
	VG_BUF_LABELS,	/* u32 [batch] (iteration-strided) */
	VG_BUF_METRICS, /* per iteration: f32 loss, u32 correct, f32 probs */
	VG_NBUFS
};

/*
 * Metrics of one iteration, at VG_BUF_METRICS + i * metrics_stride; a
 * decode program writes the generated ids [T][batch] at VG_METRIC_PROBS.
 */
#define VG_METRIC_LOSS 0
#define VG_METRIC_CORRECT 4
#define VG_METRIC_PROBS 8

struct vg_optim {
	enum vtpu_optimizer kind;
	float lr, momentum, beta1, beta2, eps;
	/*
	 * A replica's program (0 or 1: none): the loss is the mean over
	 * batch * replicas examples, so the replicas' gradients sum to the
	 * global batch's.
	 */
	uint32_t replicas;
	/*
	 * The program is split after its backward pass (vg_program_split()):
	 * every update at the end, in one command.
	 */
	bool split;
};

/**
 * struct vg_program - a compiled stream and what running it needs
 * @cb: the stream; its buffer indices are enum vg_buf, bound at run time
 * @commands: commands in @cb
 * @work_bytes: size of the activation arena (after liveness reuse)
 * @naive_bytes: the arena without reuse
 * @metrics_stride: bytes of VG_BUF_METRICS per iteration
 * @compile_ms: time compile took
 */
struct vg_program {
	enum vg_prog_kind kind;
	uint32_t batch;
	struct vtpu_cmdbuf cb;
	uint32_t commands;
	uint64_t work_bytes;
	uint64_t naive_bytes;
	uint32_t metrics_stride;
	uint64_t grads_offset; /* training: the parameter gradients in work */
	uint32_t opt_at; /* training: where the optimizer's commands start */
	double compile_ms;
	struct vtpu_bo slots[VG_NBUFS]; /* what cb names until vg_run() */
};

int vg_compile(const struct vtpu_graph *g, enum vg_prog_kind kind,
	       uint32_t batch, const struct vg_optim *opt,
	       struct vg_program *prog);
void vg_program_fini(struct vg_program *prog);
/*
 * Split a training program at the optimizer: @train keeps the forward and
 * backward passes (the gradients at grads_offset of its arena), @update
 * gets the optimizer's commands, run on the same arena afterwards (a data
 * parallel step all-reduces the gradients in between).
 */
int vg_program_split(struct vg_program *train, struct vg_program *update);
/* A training program's learning rate, from its next run on (none: no-op). */
void vg_program_set_lr(struct vg_program *prog, float lr);

/* ---- runtime: a device or the cpu backend ------------------------------ */

/* The watchdog of the runtime's queue: submissions are many steps long. */
#define VG_QUEUE_TIMEOUT_MS (10 * 60 * 1000)

struct vg_runtime {
	struct vtpu_dev *dev;	/* a device, or */
	struct vtpu_cpu *cpu;	/* the cpu backend */
	bool panels;		/* its GEMMs take the panel layout fast */
	uint32_t queue;
	char name[64];
	/* the cpu backend's buffer memory cap (0: none) and use, bytes */
	uint64_t mem_cap, mem_used;
};

int vg_runtime_open(struct vg_runtime *rt, const char *device, int cpu_gemm,
		    int threads);
void vg_runtime_close(struct vg_runtime *rt);
int vg_bo_create(struct vg_runtime *rt, uint64_t size, struct vtpu_bo *bo);
void vg_bo_destroy(struct vg_runtime *rt, struct vtpu_bo *bo);
/* Buffer memory still free under the device's (or cpu cap's) cap, bytes. */
uint64_t vg_mem_free(struct vg_runtime *rt);

/**
 * vg_run() - start @repeat iterations of @prog from iteration @first
 * @bufs: the buffers, by enum vg_buf
 * @strides: bytes per iteration, by enum vg_buf
 * @fence: out, a sync_file to pass to vg_wait() (device), or -1 (the cpu
 *         backend runs synchronously)
 */
int vg_run(struct vg_runtime *rt, struct vg_program *prog,
	   struct vtpu_bo *const bufs[VG_NBUFS], const uint64_t *strides,
	   uint32_t first, uint32_t repeat, int *fence, char *err,
	   size_t errlen);
/* vg_run() that starts only when @in_fence (a sync_file, or -1) signals. */
int vg_run_after(struct vg_runtime *rt, struct vg_program *prog,
		 struct vtpu_bo *const bufs[VG_NBUFS], const uint64_t *strides,
		 uint32_t first, uint32_t repeat, int in_fence, int *fence,
		 char *err, size_t errlen);
/* Submit @cb as it is (its own buffers), after @in_fence (or -1). */
int vg_submit(struct vg_runtime *rt, struct vtpu_cmdbuf *cb,
	      const uint64_t *strides, uint32_t first, uint32_t repeat,
	      int in_fence, int *fence, char *err, size_t errlen);
/*
 * One sync_file that signals when all of @fences (-1: none) have, into
 * @merged: a new fd the caller closes, or -1 for none. @fences stay open.
 * Return: 0 or -errno.
 */
int vg_fence_merge(const int *fences, uint32_t n, int *merged);
int vg_wait(struct vg_runtime *rt, int fence);

#endif /* LIBVTPU_GRAPH_PRIV_H */
