// SPDX-License-Identifier: MIT
/*
 * The Keras-spirit model API: a Sequential model built on the graph,
 * compiled for a backend, and trained by replaying compiled programs.
 *
 * A training epoch puts the shuffled dataset in device memory (raw u8
 * images, flipped and shifted at random if asked, and u32 labels) and
 * runs the training program over it in a few submissions of many steps
 * each: every submission repeats the one stream
 * with per-iteration strides that walk the batch, the labels and the
 * per-step metrics (loss, correct count). Two submissions are in flight at
 * a time so the device never waits for the host; the progress bar is
 * updated as each one completes. A last partial batch runs the same model
 * compiled for its size, with the same weights (they live at the same
 * offsets of the state buffer in every program).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data_priv.h"
#include "dist_priv.h"
#include "util_priv.h"
#include "graph_priv.h"
#include "vtpu_engine.h"
#include "vtpu_text.h"

/*
 * Programs per (kind, batch, padded lengths): a few batch sizes times the
 * length buckets (the default width of 8 makes 4 of a 32-step input).
 */
#define MAX_PROGS 24
#define BUCKET_WIDTH 8
#define MAX_SETS 3
/*
 * A submission runs about this long: long enough that per-job costs vanish,
 * short enough for a lively progress bar. The first is one step, to measure.
 */
#define CHUNK_SECONDS 0.2

struct prog_entry {
	struct vg_program prog;
	struct vtpu_bo work;
	uint32_t lens[VG_MAX_TOKEN_INPUTS]; /* token inputs: padded lengths */
	struct vtpu_graph lg;	/* the graph at them (nodes NULL: m->g) */
	bool used;
	uint64_t last_use;	/* the model's use_clock when last asked for */
};

/* A dataset's copy in device memory. */
struct devset {
	const void *key;	/* the host images it was made from */
	uint32_t n;
	struct vtpu_bo images;	/* u8 [n, h, w, c], or packed token batches */
	struct vtpu_bo labels;	/* u32 [n], or packed per batch */
	uint32_t *valid;	/* token sets: labels that count, per batch */
	uint32_t batch;		/* token sets: the batch they are packed by */
	struct tokbatch *tb;	/* token sets: the batches, in order */
	uint32_t nb;
};

/* One batch of a token set: its examples' padded lengths and place. */
struct tokbatch {
	uint32_t lens[VG_MAX_TOKEN_INPUTS];
	uint32_t first, count;	/* examples, in the set's order */
	uint64_t in_off, lab_off; /* bytes into images, labels */
};

/*
 * A replica of a data-parallel model (vtpu_model_compile_replicated()):
 * its backend, its copy of the state, its share of each step's examples
 * and the training step split at the optimizer. Replica 0's backend and
 * state are the model's own.
 */
struct replica {
	struct vg_runtime own_rt;
	struct vg_runtime *rt;
	struct vtpu_bo own_state;
	struct vtpu_bo *state;
	struct vtpu_bo metrics;	/* one step's */
	struct vtpu_bo work;
	struct vg_program grad;	/* forward, loss, backward */
	struct vg_program update; /* the optimizer */
	struct devset train;	/* [steps][batch / replicas] examples */
	/*
	 * The all-reduce's part of replica k: slice k of the gradients
	 * summed into @acc in replica order, then copied into every
	 * replica's gradients, by the stream @ar on @ar_rt: this replica's
	 * backend (every replica a device: the others' arenas imported as
	 * dma-bufs, @peer; all cpu backends: their memory as it is), or,
	 * with devices and cpu backends mixed, a cpu backend's.
	 */
	struct vg_runtime *ar_rt;
	struct vtpu_cmdbuf ar;
	struct vtpu_bo acc;
	struct vtpu_bo *peer;
};

/*
 * Every replica a cpu backend: a cpu backend runs a job as it is
 * submitted, on the submitting thread, so one thread would run the
 * replicas one after the other. The pool's threads run replicas 1..n-1
 * (replica 0 runs on the caller's), each its whole step: the gradients,
 * a barrier, its slice of the all-reduce, a barrier, its update. The
 * commands and their order within each slice are those of the devices'
 * path: the same bits.
 */
struct rep_pool {
	struct vtpu_model *m;
	pthread_t *th;
	uint32_t nth;		/* helpers started: replicas 1..nth */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_barrier_t bar;
	uint64_t gen;		/* bumped for every step */
	uint32_t busy;		/* helpers still in this step */
	bool quit;
	int failed;		/* a replica's stage failed: skip the rest */
	/* this step */
	uint32_t s;
	size_t isz;
	int *ret;		/* per replica */
	char *why;		/* per replica, POOL_WHY bytes */
};

#define POOL_WHY 256

struct vtpu_model {
	struct vtpu_graph *g;
	int last;
	bool compiled;
	struct vg_runtime rt;
	struct vg_optim opt;
	uint32_t batch;
	uint64_t seed;
	struct vg_state_layout sl;
	struct vtpu_bo state;
	struct vtpu_bo metrics;
	struct prog_entry progs[MAX_PROGS];
	uint64_t use_clock;
	uint64_t compiles;	/* programs compiled since compiling */
	uint32_t bucket_width;	/* token inputs; 0: the full length */
	struct devset sets[MAX_SETS];
	struct devset train; /* rewritten in a new order every epoch */
	struct devset tokset; /* token inputs to evaluate or predict */
	struct vtpu_rng rng;
	struct vtpu_model_info info;
	bool stop;	/* vtpu_model_stop(): fit() returns after this epoch */
	struct replica *rep;	/* data parallel: nrep replicas, or NULL */
	uint32_t nrep;
	struct rep_pool *pool;	/* every replica a cpu backend: threads */
	/*
	 * Across ranks (vtpu_model_compile_distributed()): @dsize ranks of
	 * @nrep replicas each, this one @drank (0 and 0: one process); the
	 * all-reduces run so far (the step in messages); every global
	 * replica's loss and correct count of this step, in replica order
	 * (@dmet) gathered from this rank's (@dmine); @dfail: the exchange
	 * between ranks failed, @why says how.
	 */
	uint32_t dsize, drank;
	uint64_t dstep;
	uint32_t *dmet, *dmine;
	bool dfail;
	char err[512];
};

static int fail(struct vtpu_model *m, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return ret;
}

const char *vtpu_model_error(const struct vtpu_model *m)
{
	return m->err;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- building ----------------------------------------------------------- */

struct vtpu_model *vtpu_model_create(uint32_t h, uint32_t w, uint32_t c)
{
	struct vtpu_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->g = vtpu_graph_create();
	if (!m->g) {
		free(m);
		return NULL;
	}
	m->last = vtpu_graph_input(m->g, h, w, c);
	if (m->last < 0) {
		vtpu_model_destroy(m);
		errno = EINVAL;
		return NULL;
	}
	return m;
}

struct vtpu_graph *vtpu_model_graph(struct vtpu_model *m)
{
	return m->g;
}

int vtpu_model_set_output(struct vtpu_model *m, int node)
{
	if (m->compiled)
		return fail(m, -EINVAL, "the model is compiled already");
	if (node < 0 || node >= m->g->nnodes)
		return fail(m, -EINVAL, "output %d: no such node (the graph has %d)",
			    node, m->g->nnodes);
	if (m->g->nodes[node].op != VG_DENSE ||
	    m->g->nodes[node].act != VTPU_ACT_SOFTMAX)
		return fail(m, -EINVAL,
			    "output %d: the output must be a dense layer with softmax",
			    node);
	m->last = node;
	return 0;
}

/* Layers go after the last one; nothing can follow a softmax. */
/* A learning rate the optimizer can use: finite and > 0. */
static int check_lr(struct vtpu_model *m, float lr)
{
	if (!isfinite(lr) || !(lr > 0))
		return fail(m, -EINVAL, "learning rate %g: not finite and > 0",
			    (double)lr);
	return 0;
}

static int add_layer(struct vtpu_model *m, int node)
{
	if (node < 0)
		return fail(m, node, "bad layer for input shape %ux%ux%u",
			    m->g->nodes[m->last].h, m->g->nodes[m->last].w,
			    m->g->nodes[m->last].c);
	m->last = node;
	return 0;
}

static bool after_softmax(struct vtpu_model *m)
{
	return m->g->nodes[m->last].act == VTPU_ACT_SOFTMAX;
}

int vtpu_model_add_dense(struct vtpu_model *m, uint32_t units,
			 enum vtpu_activation act)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_dense(m->g, m->last, units, act));
}

int vtpu_model_add_conv2d(struct vtpu_model *m, uint32_t filters,
			  uint32_t kh, uint32_t kw, enum vtpu_padding pad,
			  enum vtpu_activation act)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_conv2d(m->g, m->last, filters, kh, kw,
					      1, pad, act));
}

int vtpu_model_add_maxpool(struct vtpu_model *m, uint32_t kh, uint32_t kw)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_maxpool(m->g, m->last, kh, kw));
}

int vtpu_model_add_avgpool(struct vtpu_model *m, uint32_t kh, uint32_t kw,
			   uint32_t stride, enum vtpu_padding pad)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_avgpool(m->g, m->last, kh, kw, stride,
					       pad));
}

int vtpu_model_add_global_avgpool(struct vtpu_model *m)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_global_avgpool(m->g, m->last));
}

int vtpu_model_add_relu(struct vtpu_model *m)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_relu(m->g, m->last));
}

int vtpu_model_add_flatten(struct vtpu_model *m)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_flatten(m->g, m->last));
}

int vtpu_model_add_batchnorm(struct vtpu_model *m, float momentum,
			     float epsilon)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_batchnorm(m->g, m->last, momentum,
						 epsilon));
}

int vtpu_model_add_dropout(struct vtpu_model *m, float rate)
{
	if (after_softmax(m) || m->compiled)
		return -EINVAL;
	return add_layer(m, vtpu_graph_dropout(m->g, m->last, rate));
}

static const char *layer_type(const struct vg_node *n)
{
	static const char *const t[] = {
		[VG_INPUT] = "InputLayer", [VG_DENSE] = "Dense",
		[VG_CONV2D] = "Conv2D", [VG_MAXPOOL] = "MaxPooling2D",
		[VG_RELU] = "ReLU", [VG_FLATTEN] = "Flatten",
		[VG_ADD] = "Add", [VG_DROPOUT] = "Dropout",
		[VG_TOKENS] = "InputLayer", [VG_EMBEDDING] = "Embedding",
		[VG_LSTM] = "LSTM", [VG_LSTM_STATE] = "LSTM state",
		[VG_GRU] = "GRU", [VG_GRU_STATE] = "GRU state",
		[VG_ATTENTION] = "Attention", [VG_CONCAT] = "Concatenate",
		[VG_ADDITIVE_ATTENTION] = "AdditiveAttention",
		[VG_BATCHNORM] = "BatchNormalization",
		[VG_DWCONV2D] = "DepthwiseConv2D",
		[VG_SEPCONV2D] = "SeparableConv2D",
		[VG_AVGPOOL] = "AveragePooling2D",
		[VG_GLOBAL_AVGPOOL] = "GlobalAveragePooling2D",
		[VG_LOSS] = "Loss",
	};

	return t[n->op];
}

void vtpu_model_summary(const struct vtpu_model *m, FILE *out)
{
	const char *rule = "_________________________________________________________________";
	const char *dbl = "=================================================================";
	int i;

	/* a model of token inputs is a functional one: its inputs listed */
	fprintf(out, "Model: \"%s\"\n%s\n",
		m->g->ntokens ? "functional" : "sequential", rule);
	fprintf(out, " %-28s%-26s%-10s\n%s\n", "Layer (type)", "Output Shape",
		"Param #", dbl);
	for (i = m->g->ntokens ? 0 : 1; i < m->g->nnodes; i++) {
		const struct vg_node *n = &m->g->nodes[i];
		char name[64], shape[48];
		uint64_t params = 0;

		if (n->op == VG_LOSS || n->op == VG_LSTM_STATE ||
		    n->op == VG_GRU_STATE)
			continue;
		if (n->weight >= 0)
			params += m->g->params[n->weight].count;
		if (n->weight2 >= 0)
			params += m->g->params[n->weight2].count;
		if (n->bias >= 0)
			params += m->g->params[n->bias].count;
		snprintf(name, sizeof(name), "%s (%s)", n->name, layer_type(n));
		if (n->op == VG_TOKENS)
			snprintf(shape, sizeof(shape), "(None, %u)", n->h);
		else if (n->seq)
			snprintf(shape, sizeof(shape), "(None, %u, %u)", n->h,
				 n->c);
		else if (n->h == 1 && n->w == 1)
			snprintf(shape, sizeof(shape), "(None, %u)", n->c);
		else
			snprintf(shape, sizeof(shape), "(None, %u, %u, %u)",
				 n->h, n->w, n->c);
		fprintf(out, " %-28s%-26s%-10llu\n", name, shape,
			(unsigned long long)params);
	}
	fprintf(out, "%s\nTotal params: %llu\nTrainable params: %llu\n"
		"Non-trainable params: 0\n%s\n", dbl,
		(unsigned long long)vtpu_graph_num_params(m->g),
		(unsigned long long)vtpu_graph_num_params(m->g), rule);
}

/* ---- compiling ------------------------------------------------------------ */

/* Free a dataset's copy on @rt (a no-op for an empty one). */
static void devset_free_rt(struct vg_runtime *rt, struct devset *s)
{
	vg_bo_destroy(rt, &s->images);
	vg_bo_destroy(rt, &s->labels);
	free(s->valid);
	free(s->tb);
	memset(s, 0, sizeof(*s));
}

/* Free a dataset's device copy (a no-op for an empty one). */
static void devset_free(struct vtpu_model *m, struct devset *s)
{
	devset_free_rt(&m->rt, s);
}

static void release_sets(struct vtpu_model *m)
{
	int i;

	for (i = 0; i < MAX_SETS; i++)
		devset_free(m, &m->sets[i]);
	devset_free(m, &m->train);
	devset_free(m, &m->tokset);
}

/* A cached program and its arena go. */
static void prog_free(struct vtpu_model *m, struct prog_entry *e)
{
	vg_program_fini(&e->prog);
	vg_bo_destroy(&m->rt, &e->work);
	free(e->lg.nodes);
	e->lg.nodes = NULL;
	e->used = false;
}

/*
 * The cached programs of @kind go (compiled for another setting), or with
 * a negative @kind all of them.
 */
static void drop_progs(struct vtpu_model *m, int kind)
{
	int i;

	for (i = 0; i < MAX_PROGS; i++)
		if (m->progs[i].used &&
		    (kind < 0 || m->progs[i].prog.kind == (unsigned int)kind))
			prog_free(m, &m->progs[i]);
}

static void pool_stop(struct vtpu_model *m);
static void pool_start(struct vtpu_model *m);

static void replicas_free(struct vtpu_model *m)
{
	uint32_t r, j;

	pool_stop(m);

	/* the all-reduce's buffers first: some live on another's backend */
	for (r = 0; m->rep && r < m->nrep; r++) {
		struct replica *rp = &m->rep[r];

		vtpu_cmdbuf_fini(&rp->ar);
		if (!rp->ar_rt)
			continue;
		for (j = 0; rp->peer && j < m->nrep; j++)
			vg_bo_destroy(rp->ar_rt, &rp->peer[j]);
		vg_bo_destroy(rp->ar_rt, &rp->acc);
	}
	for (r = 0; m->rep && r < m->nrep; r++) {
		struct replica *rp = &m->rep[r];

		free(rp->peer);
		if (!rp->rt)
			continue;
		devset_free_rt(rp->rt, &rp->train);
		vg_program_fini(&rp->grad);
		vg_program_fini(&rp->update);
		vg_bo_destroy(rp->rt, &rp->work);
		vg_bo_destroy(rp->rt, &rp->metrics);
		vg_bo_destroy(rp->rt, &rp->own_state);
		vg_runtime_close(&rp->own_rt);
	}
	free(m->rep);
	m->rep = NULL;
	m->nrep = 0;
	free(m->dmet);
	free(m->dmine);
	m->dmet = m->dmine = NULL;
	m->dsize = m->drank = 0;
}

static void release(struct vtpu_model *m)
{
	if (!m->compiled)
		return;
	replicas_free(m);
	drop_progs(m, -1);
	release_sets(m);
	vg_bo_destroy(&m->rt, &m->metrics);
	vg_bo_destroy(&m->rt, &m->state);
	vg_runtime_close(&m->rt);
	m->compiled = false;
}

void vtpu_model_destroy(struct vtpu_model *m)
{
	if (!m)
		return;
	release(m);
	vtpu_graph_destroy(m->g);
	free(m);
}

/* The token inputs' declared lengths: the longest a program takes. */
static void full_lens(const struct vtpu_model *m, uint32_t *lens)
{
	int k;

	memset(lens, 0, VG_MAX_TOKEN_INPUTS * sizeof(*lens));
	for (k = 0; k < m->g->ntokens; k++)
		lens[k] = m->g->nodes[m->g->tokens[k]].h;
}

/* The graph program @e was compiled from. */
static const struct vtpu_graph *graph_of(const struct vtpu_model *m,
					 const struct prog_entry *e)
{
	return e->lg.nodes ? &e->lg : m->g;
}

/*
 * Return: the program for (kind, batch, the token inputs' padded lengths
 * @lens; NULL: as declared), compiling it the first time. With every slot
 * taken, the least recently used program goes, but never @keep (the
 * caller holds it: a pass's full-batch program while it gets its
 * remainder's) nor the training step for the model's batch at full length.
 */
static struct prog_entry *get_prog_at(struct vtpu_model *m,
				      enum vg_prog_kind kind, uint32_t batch,
				      const uint32_t *lens,
				      const struct prog_entry *keep, int *ret)
{
	uint32_t full[VG_MAX_TOKEN_INPUTS], key[VG_MAX_TOKEN_INPUTS];
	struct prog_entry *e, *slot = NULL;
	int i;

	full_lens(m, full);
	memcpy(key, lens ?: full, sizeof(key));
	for (i = 0; i < MAX_PROGS; i++) {
		e = &m->progs[i];
		if (e->used && e->prog.kind == kind && e->prog.batch == batch &&
		    !memcmp(e->lens, key, sizeof(key))) {
			e->last_use = ++m->use_clock;
			return e;
		}
		if (!e->used && !slot)
			slot = e;
	}
	if (!slot) {
		for (i = 0; i < MAX_PROGS; i++) {
			e = &m->progs[i];
			if (e == keep || (e->prog.kind == VG_PROG_TRAIN &&
					  e->prog.batch == m->batch &&
					  !memcmp(e->lens, full, sizeof(full))))
				continue;
			if (!slot || e->last_use < slot->last_use)
				slot = e;
		}
		prog_free(m, slot);
	}
	memcpy(slot->lens, key, sizeof(key));
	if (memcmp(key, full, sizeof(full))) {
		*ret = vg_graph_at_lengths(m->g, key, &slot->lg);
		if (*ret)
			return NULL;
	}
	*ret = vg_compile(graph_of(m, slot), kind, batch, &m->opt,
			  &slot->prog);
	m->compiles++;
	if (*ret) {
		free(slot->lg.nodes);
		slot->lg.nodes = NULL;
		fail(m, *ret, "compiling for batch %u failed: %s", batch,
		     strerror(-*ret));
		return NULL;
	}
	*ret = vg_bo_create(&m->rt, slot->prog.work_bytes, &slot->work);
	if (*ret) {
		fail(m, *ret, "%llu bytes of activations: %s",
		     (unsigned long long)slot->prog.work_bytes,
		     strerror(-*ret));
		vg_program_fini(&slot->prog);
		free(slot->lg.nodes);
		slot->lg.nodes = NULL;
		return NULL;
	}
	slot->used = true;
	slot->last_use = ++m->use_clock;
	return slot;
}

static struct prog_entry *get_prog(struct vtpu_model *m,
				   enum vg_prog_kind kind, uint32_t batch,
				   const struct prog_entry *keep, int *ret)
{
	return get_prog_at(m, kind, batch, NULL, keep, ret);
}

static float uniform(struct vtpu_rng *rng, float limit)
{
	double u = (vtpu_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);

	return (float)((2.0 * u - 1.0) * limit);
}

/* Keras' defaults for one element @j of @pr. */
static float init_value(struct vtpu_model *m, const struct vg_param *pr,
			uint64_t j)
{
	switch (pr->init) {
	case VG_INIT_GLOROT:
		return uniform(&m->rng, sqrtf(6.0f / (pr->fan_in + pr->fan_out)));
	case VG_INIT_UNIFORM:
		return uniform(&m->rng, 0.05f);
	case VG_INIT_ONE:
		return 1.0f;
	case VG_INIT_FORGET_ONE: /* gates i, f, c, o: unit_forget_bias */
		return j / (pr->count / 4) == 1 ? 1.0f : 0.0f;
	default:
		return 0.0f;
	}
}

/*
 * Keras' defaults: glorot-uniform kernels, zero biases (an LSTM's forget
 * gate 1), embeddings uniform in +-0.05. (Keras starts an LSTM's or a
 * GRU's recurrent kernel orthogonal; here it is glorot-uniform too.)
 */
static void init_weights(struct vtpu_model *m)
{
	float *p = (float *)((char *)m->state.map + m->sl.params);
	int i;

	for (i = 0; i < m->g->nparams; i++) {
		const struct vg_param *pr = &m->g->params[i];
		uint64_t j;

		/* drawn in row-major order, whatever the layout */
		for (j = 0; j < pr->count; j++)
			p[pr->offset + vg_param_index(pr, j)] =
				init_value(m, pr, j);
	}
}

/* What the compiler made of the training step @e. */
static void set_info(struct vtpu_model *m, const struct prog_entry *e)
{
	m->info.params = vtpu_graph_num_params(m->g);
	m->info.commands = e->prog.commands;
	m->info.stream_bytes = e->prog.cb.size;
	m->info.state_bytes = m->sl.bytes;
	m->info.work_bytes = e->prog.work_bytes;
	m->info.naive_bytes = e->prog.naive_bytes;
	m->info.compile_ms = e->prog.compile_ms;
	snprintf(m->info.backend, sizeof(m->info.backend), "%s", m->rt.name);
}

int vtpu_model_compile(struct vtpu_model *m,
		       const struct vtpu_compile_opts *opts)
{
	VTPU_COMPILE_OPTS(def);
	float scale = 1.0f / 255.0f, shift = 0.0f;
	struct prog_entry *e;
	int ret;

	if (!opts)
		opts = &def;
	if (opts->sz < offsetof(struct vtpu_compile_opts, seed) + 8 ||
	    opts->sz > sizeof(*opts))
		return fail(m, -EINVAL, "compile options: bad size");
	if (m->g->ntokens && m->g->loss < 0)
		return fail(m, -EINVAL,
			    "a model of token inputs needs its loss (vtpu_graph_loss())");
	if (!m->g->ntokens && !after_softmax(m))
		return fail(m, -EINVAL,
			    "the last layer must be a dense layer with softmax");
	if (opts->sz > offsetof(struct vtpu_compile_opts, input_scale))
		scale = opts->input_scale ?: scale;
	if (opts->sz > offsetof(struct vtpu_compile_opts, input_shift))
		shift = opts->input_shift;
	if (!isfinite(scale) || !isfinite(shift))
		return fail(m, -EINVAL,
			    "compile options: input_scale %g and input_shift %g must be finite",
			    scale, shift);
	release(m);

	m->batch = opts->batch ?: 32;
	m->compiles = 0;
	m->g->seed = (uint32_t)(opts->seed ^ (opts->seed >> 32));
	m->g->input_scale = scale;
	m->g->input_shift = shift;
	m->g->bn_nofold = opts->sz > offsetof(struct vtpu_compile_opts,
					      no_bn_fold) &&
			  opts->no_bn_fold;
	m->seed = opts->seed;
	m->opt.kind = opts->optimizer;
	m->opt.lr = opts->learning_rate ?:
		    (opts->optimizer == VTPU_OPT_ADAM ? 1e-3f : 1e-2f);
	m->opt.momentum = opts->momentum;
	m->opt.beta1 = opts->beta1 ?: 0.9f;
	m->opt.beta2 = opts->beta2 ?: 0.999f;
	m->opt.eps = opts->epsilon ?: 1e-7f;
	if (m->opt.kind > VTPU_OPT_SGD)
		return fail(m, -EINVAL, "unknown optimizer %d", m->opt.kind);
	ret = check_lr(m, m->opt.lr);
	if (ret)
		return ret;
	if (m->g->loss < 0) {
		ret = vtpu_graph_loss(m->g, m->last);
		if (ret < 0)
			return fail(m, ret, "cannot attach the loss");
	}
	vtpu_rng_seed(&m->rng, m->seed);

	ret = vg_runtime_open(&m->rt, opts->device, opts->cpu_gemm,
			      opts->threads);
	if (ret && opts->device && !strcmp(opts->device, "cpu") &&
	    opts->cpu_gemm == VTPU_CPU_GEMM_OPENBLAS && vtpu_cpu_openblas())
		return fail(m, ret, "%s", vtpu_cpu_openblas());
	if (ret)
		return fail(m, ret, "cannot open %s: %s%s",
			    opts->device ?: "/dev/vtpu0", strerror(-ret),
			    vtpu_open_hint(ret));
	if (m->rt.cpu && opts->sz >= offsetof(struct vtpu_compile_opts,
					      cpu_mem_cap) + 8)
		m->rt.mem_cap = opts->cpu_mem_cap;
	m->compiled = true;

	vg_set_layouts(m->g, m->rt.panels);
	vg_state_layout(m->g, m->opt.kind, &m->sl);
	ret = vg_bo_create(&m->rt, m->sl.bytes, &m->state);
	if (ret) {
		fail(m, ret, "%llu bytes of weights: %s",
		     (unsigned long long)m->sl.bytes, strerror(-ret));
		release(m);
		return ret;
	}
	init_weights(m);

	e = get_prog(m, VG_PROG_TRAIN, m->batch, NULL, &ret);
	if (!e) {
		release(m);
		return ret;
	}
	set_info(m, e);
	return 0;
}

int vtpu_model_set_batch(struct vtpu_model *m, uint32_t batch)
{
	struct prog_entry *e;
	int ret;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	if (!batch)
		return fail(m, -EINVAL, "batch 0");
	if (m->rep)
		return fail(m, -EINVAL,
			    "a replicated model's batch is set by vtpu_model_compile_replicated()");
	e = get_prog(m, VG_PROG_TRAIN, batch, NULL, &ret);
	if (!e)
		return ret;
	m->batch = batch;
	set_info(m, e);
	return 0;
}

int vtpu_model_set_input_scale(struct vtpu_model *m, float scale, float shift)
{
	float old_scale = m->g->input_scale, old_shift = m->g->input_shift;
	struct prog_entry *e;
	int ret;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	if (!isfinite(scale) || !isfinite(shift) || scale == 0)
		return fail(m, -EINVAL,
			    "input scale %g and shift %g: must be finite, the scale not 0",
			    scale, shift);
	if (scale == old_scale && shift == old_shift)
		return 0;
	/* the transform is compiled into every program's first command */
	drop_progs(m, -1);
	m->g->input_scale = scale;
	m->g->input_shift = shift;
	e = get_prog(m, VG_PROG_TRAIN, m->batch, NULL, &ret);
	if (!e) {
		m->g->input_scale = old_scale;
		m->g->input_shift = old_shift;
		return ret;
	}
	set_info(m, e);
	return 0;
}

void vtpu_model_stop(struct vtpu_model *m)
{
	__atomic_store_n(&m->stop, true, __ATOMIC_RELAXED);
}

/* ---- weights as arrays ---------------------------------------------------- */

int vtpu_model_num_weights(const struct vtpu_model *m)
{
	return m->g->nparams;
}

int vtpu_model_weight_info(const struct vtpu_model *m, uint32_t i,
			   struct vtpu_weight_info *wi)
{
	const struct vg_param *pr;
	uint32_t d;

	if (i >= (uint32_t)m->g->nparams)
		return -EINVAL;
	pr = &m->g->params[i];
	memset(wi, 0, sizeof(*wi));
	snprintf(wi->name, sizeof(wi->name), "%s", pr->name);
	wi->ndim = pr->ndim;
	for (d = 0; d < pr->ndim && d < 4; d++)
		wi->shape[d] = (uint32_t)pr->dims[d];
	wi->count = pr->count;
	return 0;
}

/* Return: parameter @i's storage, or NULL after saying why. */
static float *weights_of(struct vtpu_model *m, uint32_t i, uint64_t count,
			 const struct vg_param **prp)
{
	const struct vg_param *pr;

	if (!m->compiled) {
		fail(m, -EINVAL, "the model is not compiled");
		return NULL;
	}
	if (i >= (uint32_t)m->g->nparams) {
		fail(m, -EINVAL, "weights %u: the model has %d tensors", i,
		     m->g->nparams);
		return NULL;
	}
	pr = &m->g->params[i];
	if (count != pr->count) {
		fail(m, -EINVAL, "%s: %llu values given, it has %llu",
		     pr->name, (unsigned long long)count,
		     (unsigned long long)pr->count);
		return NULL;
	}
	*prp = pr;
	return (float *)((char *)m->state.map + m->sl.params) + pr->offset;
}

int vtpu_model_get_weights(struct vtpu_model *m, uint32_t i, float *out,
			   uint64_t count)
{
	const struct vg_param *pr;
	float *w = weights_of(m, i, count, &pr);

	if (!w)
		return -EINVAL;
	if (pr->panels)
		vg_param_convert(pr, w, out, true);
	else
		memcpy(out, w, count * sizeof(float));
	return 0;
}

int vtpu_model_set_weights(struct vtpu_model *m, uint32_t i, const float *in,
			   uint64_t count)
{
	const struct vg_param *pr;
	float *w = weights_of(m, i, count, &pr);
	uint64_t j;

	if (!w)
		return -EINVAL;
	for (j = 0; j < count; j++)
		if (!isfinite(in[j]))
			return fail(m, -EINVAL, "%s: value %llu is not finite",
				    pr->name, (unsigned long long)j);
	if (pr->panels)
		vg_param_convert(pr, in, w, false);
	else
		memcpy(w, in, count * sizeof(float));
	return 0;
}

int vtpu_model_info(const struct vtpu_model *m, struct vtpu_model_info *info)
{
	if (!m->compiled)
		return -EINVAL;
	*info = m->info;
	return 0;
}

/* ---- data on the device --------------------------------------------------- */

static int check_set(struct vtpu_model *m, const struct vtpu_dataset *ds)
{
	const struct vg_node *in;

	if (m->g->input < 0)
		return fail(m, -EINVAL,
			    "the model takes token inputs, not images: use the *_tokens() calls");
	in = &m->g->nodes[m->g->input];

	if (ds->height != in->h || ds->width != in->w ||
	    ds->channels != in->c)
		return fail(m, -EINVAL,
			    "dataset images are %ux%ux%u, the model takes %ux%ux%u",
			    ds->height, ds->width, ds->channels, in->h, in->w,
			    in->c);
	if (!ds->n)
		return fail(m, -EINVAL, "the dataset is empty");
	/* per-iteration strides are multiples of 4 bytes */
	if ((uint64_t)m->batch * vtpu_dataset_image_size(ds) % 4)
		return fail(m, -EINVAL,
			    "batch %u x image %zu bytes is not a multiple of 4",
			    m->batch, vtpu_dataset_image_size(ds));
	return 0;
}

static int devset_alloc(struct vtpu_model *m, struct devset *s, uint32_t n,
			size_t image_size)
{
	int ret;

	ret = vg_bo_create(&m->rt, (uint64_t)n * image_size, &s->images);
	if (!ret)
		ret = vg_bo_create(&m->rt, (uint64_t)n * 4, &s->labels);
	if (ret) {
		vg_bo_destroy(&m->rt, &s->images);
		return fail(m, ret, "%u images in device memory: %s", n,
			    strerror(-ret));
	}
	s->n = n;
	return 0;
}

/*
 * Copy examples idx[0..n) (or all, in order) into device memory, each
 * changed as @aug asks with draws from @rng (@aug NULL: as they are).
 */
static void devset_fill(struct devset *s, const struct vtpu_dataset *ds,
			const uint32_t *idx, const struct vtpu_augment *aug,
			struct vtpu_rng *rng)
{
	size_t isz = vtpu_dataset_image_size(ds);
	uint8_t *img = s->images.map;
	uint32_t *lab = s->labels.map;
	uint32_t i, j;

	for (i = 0; i < s->n; i++) {
		const uint8_t *src;

		j = idx ? idx[i] : i;
		src = ds->images + (size_t)j * isz;
		if (aug)
			vtpu_image_augment(img + (size_t)i * isz, src,
					   ds->height, ds->width, ds->channels,
					   aug, rng);
		else
			memcpy(img + (size_t)i * isz, src, isz);
		lab[i] = ds->labels ? ds->labels[j] : 0;
	}
}

/* Does @s hold exactly @ds's images and labels? */
static bool devset_same(const struct devset *s, const struct vtpu_dataset *ds)
{
	const uint32_t *lab = s->labels.map;
	uint32_t i;

	if (memcmp(s->images.map, ds->images,
		   (size_t)ds->n * vtpu_dataset_image_size(ds)))
		return false;
	for (i = 0; i < ds->n; i++)
		if (lab[i] != (ds->labels ? ds->labels[i] : 0))
			return false;
	return true;
}

/* A read-only dataset's device copy, made once and kept. */
static struct devset *get_set(struct vtpu_model *m,
			      const struct vtpu_dataset *ds)
{
	struct devset *s;
	int i;

	for (i = 0; i < MAX_SETS; i++) {
		s = &m->sets[i];
		if (s->key != ds->images || s->n != ds->n)
			continue;
		/*
		 * The same address need not hold the same data: the caller
		 * may have changed it, or freed it and allocated another set
		 * there. Comparing costs less than one pass over the set.
		 */
		if (!devset_same(s, ds))
			devset_fill(s, ds, NULL, NULL, NULL);
		return s;
	}
	for (i = 0; i < MAX_SETS - 1 && m->sets[i].key; i++)
		;
	s = &m->sets[i];
	devset_free(m, s);
	if (devset_alloc(m, s, ds->n, vtpu_dataset_image_size(ds)))
		return NULL;
	devset_fill(s, ds, NULL, NULL, NULL);
	s->key = ds->images;
	return s;
}

/* ---- running passes ---------------------------------------------------- */

struct pass {
	enum vg_prog_kind kind;
	struct devset *set;
	uint64_t in_stride, lab_stride; /* bytes per full batch */
	uint32_t steps;		/* full batches to run */
	uint32_t rem;		/* examples in a last partial batch */
	/* filled as chunks complete */
	uint32_t done;
	double loss_sum;	/* sum over examples */
	uint64_t correct;
	uint64_t seen;
	uint32_t skipped;	/* streamed: bad examples replaced */
	/* streamed: the training thread's waits (vtpu_epoch_stats) */
	double input_wait_s, fence_wait_s, fill_s;
	struct vtpu_progress *progress;
};

static int ensure_metrics(struct vtpu_model *m, uint64_t bytes)
{
	int ret;

	if (m->metrics.map && m->metrics.size >= bytes)
		return 0;
	vg_bo_destroy(&m->rt, &m->metrics);
	ret = vg_bo_create(&m->rt, bytes, &m->metrics);
	return ret ? fail(m, ret, "metrics buffer: %s", strerror(-ret)) : 0;
}

/* Steps [@from, @to)'s metrics, the first at @base, @stride apart. */
static void collect(struct pass *p, const uint8_t *base, uint32_t from,
		    uint32_t to, uint32_t stride, uint32_t batch)
{
	uint32_t i;

	for (i = from; i < to; i++, base += stride) {
		float loss;
		uint32_t correct;

		memcpy(&loss, base + VG_METRIC_LOSS, 4);
		memcpy(&correct, base + VG_METRIC_CORRECT, 4);
		/* a token set's step counts its labels that are not padding */
		uint32_t w = p->set && p->set->valid ? p->set->valid[i] : batch;

		p->loss_sum += (double)loss * w;
		p->correct += correct;
		p->seen += w;
	}
	p->done = to;
	if (p->progress) {
		struct vtpu_metric mt[2] = {
			{ "loss", p->loss_sum / p->seen },
			{ "acc", (double)p->correct / p->seen },
		};

		vtpu_progress_update(p->progress, p->done, mt, 2);
	}
}

static const uint8_t *metrics_at(struct vtpu_model *m, uint32_t step,
				 uint32_t stride)
{
	return (const uint8_t *)m->metrics.map + (size_t)step * stride;
}

/* A pass's programs: for its full batches and its remainder (or NULL). */
static int pass_progs(struct vtpu_model *m, const struct pass *p,
		      struct prog_entry **full, struct prog_entry **part)
{
	int ret = 0;

	*full = *part = NULL;
	if (p->steps) {
		*full = get_prog(m, p->kind, m->batch, NULL, &ret);
		if (!*full)
			return ret;
	}
	if (p->rem) {
		*part = get_prog(m, p->kind, p->rem, *full, &ret);
		if (!*part)
			return ret;
	}
	return 0;
}

static int pass_failed(struct vtpu_model *m, const struct pass *p, int ret,
		       const char *why)
{
	return fail(m, ret, "%s failed: %s%s%s",
		    p->kind == VG_PROG_TRAIN ? "training" : "running",
		    strerror(-ret), why[0] ? ": " : "", why);
}

/* ---- data parallelism ---------------------------------------------------- */

#define MAX_REPLICAS 64

/* Replicas in the whole job: the local ones on every rank. */
static uint32_t global_reps(const struct vtpu_model *m)
{
	return m->nrep * (m->dsize ?: 1);
}

/* Examples of each step a replica trains on. */
static uint32_t rep_share(const struct vtpu_model *m)
{
	return m->batch / global_reps(m);
}

/* The SIMD level @rt's engine runs at. */
static uint64_t rt_simd(struct vg_runtime *rt)
{
	uint64_t simd = 0;

	if (rt->cpu)
		return vtpu_cpu_simd(rt->cpu);
	vtpu_get_param(rt->dev, VTPU_PARAM_SIMD_LEVEL, &simd);
	return simd;
}

/* A device's memory cap (0: the cpu backend, whose cap is the options'). */
static uint64_t rt_cap(struct vg_runtime *rt)
{
	uint64_t cap = 0;

	if (rt->dev)
		vtpu_get_param(rt->dev, VTPU_PARAM_MEM_CAP, &cap);
	return cap;
}

/*
 * The same device named twice: two paths to one node (a symlink), or one
 * path. The cpu backend may be named any number of times: each is a
 * backend of its own.
 */
static bool same_device(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, "cpu") || !strcmp(b, "cpu"))
		return false;
	if (!stat(a, &sa) && !stat(b, &sb))
		return S_ISCHR(sa.st_mode) && S_ISCHR(sb.st_mode) &&
		       sa.st_rdev == sb.st_rdev;
	return !strcmp(a, b);
}

static int replica_check(struct vtpu_model *m, const char *const *devices,
			 uint32_t n, uint32_t batch, uint32_t ranks)
{
	uint32_t i, j;

	if (!devices || !n || n > MAX_REPLICAS)
		return fail(m, -EINVAL, "replicas: 1 to %d devices, not %u",
			    MAX_REPLICAS, devices ? n : 0);
	for (i = 0; i < n; i++) {
		if (!devices[i] || !devices[i][0])
			return fail(m, -EINVAL, "replica %u: no device named",
				    i);
		for (j = 0; j < i; j++)
			if (same_device(devices[i], devices[j]))
				return fail(m, -EINVAL,
					    "replicas %u and %u are both %s: each device can hold one replica",
					    j, i, devices[i]);
	}
	if (ranks > 1 && batch % (n * ranks))
		return fail(m, -EINVAL,
			    "a global batch of %u does not split evenly between %u replicas (%u ranks of %u)",
			    batch, n * ranks, ranks, n);
	if (batch % n)
		return fail(m, -EINVAL,
			    "a global batch of %u does not split evenly between %u replicas",
			    batch, n);
	if (m->g->ntokens)
		return fail(m, -EINVAL,
			    "replicas: models of token inputs are not supported yet");
	return 0;
}

/*
 * Open replica @r's backend (1..: its own) and check that it computes as
 * replica 0 does: the same SIMD level (the same kernels, so the same
 * bits), the same weight layout and, between devices, the same memory cap.
 */
static int replica_open(struct vtpu_model *m, uint32_t r, const char *device,
			const struct vtpu_compile_opts *o)
{
	struct replica *rp = &m->rep[r];
	struct vg_runtime *r0 = &m->rt;
	int ret;

	if (!r) {
		rp->rt = r0;
		rp->state = &m->state;
		return 0;
	}
	ret = vg_runtime_open(&rp->own_rt, device, o->cpu_gemm, o->threads);
	if (ret)
		return fail(m, ret, "replica %u: cannot open %s: %s%s", r,
			    device, strerror(-ret), vtpu_open_hint(ret));
	rp->rt = &rp->own_rt;
	rp->rt->mem_cap = r0->mem_cap;
	rp->state = &rp->own_state;
	if (rt_simd(rp->rt) != rt_simd(r0))
		return fail(m, -EINVAL,
			    "replica %u (%s) computes with %s, replica 0 (%s) with %s: replicas need the same SIMD level",
			    r, rp->rt->name,
			    vtpu_engine_simd_name((uint32_t)rt_simd(rp->rt)),
			    r0->name,
			    vtpu_engine_simd_name((uint32_t)rt_simd(r0)));
	if (rp->rt->panels != r0->panels)
		return fail(m, -EINVAL,
			    "replica %u (%s) keeps the weights in another layout than replica 0 (%s)",
			    r, rp->rt->name, r0->name);
	if (rp->rt->dev && r0->dev && rt_cap(rp->rt) != rt_cap(r0))
		return fail(m, -EINVAL,
			    "replica %u (%s) has a memory cap of %llu bytes, replica 0 (%s) %llu: replicas need the same",
			    r, rp->rt->name,
			    (unsigned long long)rt_cap(rp->rt), r0->name,
			    (unsigned long long)rt_cap(r0));
	return 0;
}

/*
 * Replica @r's training step for its share of the batch, split at the
 * optimizer, with its arena. Dropout draws from a seed of its own.
 */
static int replica_compile(struct vtpu_model *m, uint32_t r)
{
	struct replica *rp = &m->rep[r];
	struct vg_optim opt = m->opt;
	uint32_t seed = m->g->seed;
	int ret;

	opt.replicas = global_reps(m);
	opt.split = true;
	m->g->seed = seed + (m->drank * m->nrep + r) * 0x9e3779b9u;
	ret = vg_compile(m->g, VG_PROG_TRAIN, rep_share(m), &opt,
			 &rp->grad);
	m->g->seed = seed;
	if (!ret)
		ret = vg_program_split(&rp->grad, &rp->update);
	if (ret)
		return fail(m, ret, "replica %u: compiling for batch %u failed: %s",
			    r, rep_share(m), strerror(-ret));
	ret = vg_bo_create(rp->rt, rp->grad.work_bytes, &rp->work);
	if (!ret)
		ret = vg_bo_create(rp->rt, rp->grad.metrics_stride,
				   &rp->metrics);
	if (!ret && r)
		ret = vg_bo_create(rp->rt, m->sl.bytes, rp->state);
	if (ret)
		return fail(m, ret, "replica %u (%s): %s", r, rp->rt->name,
			    strerror(-ret));
	return 0;
}

/* Where slice @k of @count gradients starts: whole 16-float blocks. */
static uint64_t slice_at(uint64_t count, uint32_t k, uint32_t n)
{
	return k >= n ? count : count * k / n / 16 * 16;
}

/* Replica @r's arena as buffer of replica @k's all-reduce stream. */
static int ar_buffer(struct vtpu_model *m, uint32_t k, uint32_t r,
		     const struct vtpu_bo **bo)
{
	struct replica *rk = &m->rep[k];
	int fd, ret;

	if (!rk->ar_rt->dev || r == k) {
		/* the cpu backend reads every replica's memory directly */
		*bo = &m->rep[r].work;
		return 0;
	}
	ret = vtpu_bo_export(m->rep[r].rt->dev, &m->rep[r].work, &fd);
	if (ret)
		return fail(m, ret, "replica %u: exporting its gradients: %s",
			    r, strerror(-ret));
	ret = vtpu_bo_import(rk->ar_rt->dev, fd, &rk->peer[r]);
	close(fd);
	if (ret)
		return fail(m, ret,
			    "replica %u: importing replica %u's gradients: %s",
			    k, r, strerror(-ret));
	*bo = &rk->peer[r];
	return 0;
}

static void ar_emit(struct vtpu_cmdbuf *cb, uint32_t op, uint64_t count,
		    uint32_t x, uint64_t xo, uint32_t y, uint64_t yo, uint32_t z,
		    uint64_t zo)
{
	struct vtpu_cmd_elementwise e = {
		.hdr = { VTPU_OP_ELEMENTWISE, sizeof(e) },
		.op = op, .count = count,
		.x = { .buf = x, .offset = xo },
		.z = { .buf = z, .offset = zo },
	};

	if (op == VTPU_EW_SCALE) {
		float one = 1.0f;

		memcpy(&e.alpha, &one, 4);
	} else {
		e.y.buf = y;
		e.y.offset = yo;
	}
	vtpu_cmdbuf_append(cb, &e);
}

/*
 * The all-reduce's streams: a reduce-scatter (replica k sums slice k of
 * every replica's gradients, replica 0's + replica 1's + ..., into its
 * @acc) then an all-gather (it copies the sum into slice k of every
 * replica's gradients), each replica's stream one submission per step.
 * The order of the sums depends on the replica count only, and the same
 * engine commands run on devices and on the cpu backend: the same bits.
 */
static int replicas_plan(struct vtpu_model *m)
{
	uint64_t count = m->g->nparam_floats;
	uint64_t off = m->rep[0].grad.grads_offset;
	struct vg_runtime *cpu_rt = NULL;
	bool all_dev = true;
	uint32_t k, r, n = m->nrep;
	int ret;

	if (n == 1)
		return 0;
	for (r = 0; r < n; r++) {
		if (m->rep[r].grad.grads_offset != off)
			return fail(m, -EINVAL,
				    "replica %u: its gradients lie elsewhere",
				    r);
		if (m->rep[r].rt->cpu) {
			all_dev = false;
			cpu_rt = cpu_rt ?: m->rep[r].rt;
		}
	}
	for (k = 0; k < n; k++) {
		struct replica *rk = &m->rep[k];
		uint64_t lo = slice_at(count, k, n);
		uint64_t len = slice_at(count, k + 1, n) - lo;
		uint64_t go = off + lo * 4;
		const struct vtpu_bo *g[MAX_REPLICAS];
		uint32_t ib[MAX_REPLICAS], acc;

		if (!len)
			continue;
		rk->ar_rt = all_dev || rk->rt->cpu ? rk->rt : cpu_rt;
		rk->peer = calloc(n, sizeof(*rk->peer));
		if (!rk->peer)
			return fail(m, -ENOMEM, "out of memory");
		ret = vg_bo_create(rk->ar_rt, len * 4, &rk->acc);
		if (ret)
			return fail(m, ret, "replica %u: all-reduce buffer: %s",
				    k, strerror(-ret));
		for (r = 0; r < n; r++) {
			ret = ar_buffer(m, k, r, &g[r]);
			if (ret)
				return ret;
		}
		vtpu_cmdbuf_init(&rk->ar);
		acc = vtpu_cmdbuf_use(&rk->ar, &rk->acc);
		for (r = 0; r < n; r++)
			ib[r] = vtpu_cmdbuf_use(&rk->ar, g[r]);
		ar_emit(&rk->ar, VTPU_EW_ADD, len, ib[0], go, ib[1], go, acc,
			0);
		for (r = 2; r < n; r++)
			ar_emit(&rk->ar, VTPU_EW_ADD, len, acc, 0, ib[r], go,
				acc, 0);
		for (r = 0; r < n; r++)
			ar_emit(&rk->ar, VTPU_EW_SCALE, len, acc, 0, 0, 0,
				ib[r], go);
		if (rk->ar.error)
			return fail(m, rk->ar.error,
				    "replica %u: all-reduce stream: %s", k,
				    strerror(-rk->ar.error));
	}
	return 0;
}

/* FNV-1a of @len bytes, continuing @h */
static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

#define FNV0 0xcbf29ce484222325ull

/* The graph's layers, field by field: what they are and how they join. */
static uint64_t graph_hash(const struct vtpu_graph *g)
{
	uint64_t h = FNV0;
	int i;

	for (i = 0; i < g->nnodes; i++) {
		const struct vg_node *n = &g->nodes[i];
		uint32_t v[] = {
			n->op, n->seq, (uint32_t)n->slot, (uint32_t)n->mask,
			(uint32_t)n->weight2, n->h, n->w, n->c, n->act, n->kh,
			n->kw, n->pad_h, n->pad_w, n->mult, n->stride_h,
			n->stride_w, n->pool_end, (uint32_t)n->weight,
			(uint32_t)n->bias, f32_bits(n->rate), f32_bits(n->eps),
			(uint32_t)n->mmean, (uint32_t)n->mvar, n->aug_flags,
			f32_bits(n->scale), f32_bits(n->offset),
		};

		h = fnv(h, n->in, sizeof(n->in));
		h = fnv(h, v, sizeof(v));
	}
	return h;
}

#define DIST_PARAMS 24	/* parameters compared one by one */
#define DIST_FIELDS (16 + DIST_PARAMS)

/*
 * Before compiling: every rank compares its model and options with rank
 * 0's (@local: this rank's own check, so that a rank that refused alone
 * still takes part and the others hear of it).
 */
static int dist_agree_model(struct vtpu_model *m,
			    const struct vtpu_compile_opts *o, uint32_t n,
			    int local)
{
	static char pnames[DIST_PARAMS][40];
	static const char *const rest[] = {
		"global batch", "local replicas", "optimizer",
		"learning rate (bits)", "momentum (bits)", "beta1 (bits)",
		"beta2 (bits)", "epsilon (bits)", "seed",
		"input scale and shift (bits)", "batch norm folding off",
		"layers' kinds, shapes and options (a hash)",
		"compile options' check (0: passed, else errno)",
	};
	uint64_t vrest[] = {
		o->batch ?: 32, n, o->optimizer, f32_bits(o->learning_rate),
		f32_bits(o->momentum), f32_bits(o->beta1), f32_bits(o->beta2),
		f32_bits(o->epsilon), o->seed,
		(uint64_t)f32_bits(o->input_scale) << 32 |
			f32_bits(o->input_shift),
		o->no_bn_fold, graph_hash(m->g), (uint64_t)-local,
	};
	/* the most telling first: the first difference is reported */
	const char *names[DIST_FIELDS] = {
		"layers", "parameters", "parameter floats",
	};
	uint64_t v[DIST_FIELDS] = {
		(uint64_t)m->g->nnodes, (uint64_t)m->g->nparams,
		m->g->nparam_floats,
	};
	char err[sizeof(m->err)];
	int i, ret;

	for (i = 0; i < DIST_PARAMS; i++) {
		snprintf(pnames[i], sizeof(pnames[i]),
			 "parameter %d's size in floats", i);
		names[3 + i] = pnames[i];
		v[3 + i] = i < m->g->nparams ? m->g->params[i].count : 0;
	}
	for (i = 0; i < 13; i++) {
		names[3 + DIST_PARAMS + i] = rest[i];
		v[3 + DIST_PARAMS + i] = vrest[i];
	}
	ret = vd_agree(v, DIST_FIELDS, names, "model", err, sizeof(err));
	if (ret && !local)
		fail(m, ret, "%s", err);
	return local ?: ret;
}

/* After compiling: every rank compiled, and computes as rank 0 does. */
static int dist_agree_backend(struct vtpu_model *m, int local)
{
	static const char *const names[] = {
		"compiling (0: done, else errno; see its message)",
		"SIMD level", "weight layout (panels)",
	};
	uint64_t v[] = {
		(uint64_t)-local,
		local ? 0 : rt_simd(&m->rt),
		local ? 0 : m->rt.panels,
	};
	char err[sizeof(m->err)];
	int ret;

	ret = vd_agree(v, 3, names, "backend", err, sizeof(err));
	if (ret && !local)
		fail(m, ret, "%s", err);
	return local ?: ret;
}

static int compile_replicated(struct vtpu_model *m,
			      const char *const *devices, uint32_t n,
			      const struct vtpu_compile_opts *opts, bool dist)
{
	VTPU_COMPILE_OPTS(o);
	uint32_t r, ranks = dist ? (uint32_t)vd_size() : 1;
	int ret;

	if (opts) {
		if (opts->sz < offsetof(struct vtpu_compile_opts, seed) + 8 ||
		    opts->sz > sizeof(*opts))
			return fail(m, -EINVAL, "compile options: bad size");
		memcpy(&o, opts, opts->sz);
		o.sz = sizeof(o);
	}
	ret = replica_check(m, devices, n, o.batch ?: 32, ranks);
	if (ranks > 1)
		ret = dist_agree_model(m, &o, n, ret);
	if (ret)
		return ret;
	o.device = devices[0];
	ret = vtpu_model_compile(m, &o);
	if (ret && ranks == 1)
		return ret;
	m->rep = ret ? NULL : calloc(n, sizeof(*m->rep));
	if (!ret && !m->rep) {
		release(m);
		ret = fail(m, -ENOMEM, "out of memory");
	}
	if (!ret && ranks > 1) {
		m->dsize = ranks;
		m->drank = (uint32_t)vd_rank();
		m->dstep = 0;
		m->dmet = calloc((size_t)n * ranks, 8);
		m->dmine = calloc(n, 8);
		if (!m->dmet || !m->dmine)
			ret = fail(m, -ENOMEM, "out of memory");
	}
	if (m->rep)
		m->nrep = n;
	for (r = 0; r < n && !ret; r++)
		ret = replica_open(m, r, devices[r], &o) ?:
		      replica_compile(m, r);
	if (!ret)
		ret = replicas_plan(m);
	if (ranks > 1)
		ret = dist_agree_backend(m, ret);
	if (ret) {
		release(m);
		return ret;
	}
	pool_start(m);
	if (ranks > 1)
		snprintf(m->info.backend, sizeof(m->info.backend),
			 "%u ranks x %u: %.32s", ranks, n, m->rt.name);
	else
		snprintf(m->info.backend, sizeof(m->info.backend),
			 "%u replicas: %.40s", n, m->rt.name);
	return 0;
}

int vtpu_model_compile_replicated(struct vtpu_model *m,
				  const char *const *devices, uint32_t n,
				  const struct vtpu_compile_opts *opts)
{
	return compile_replicated(m, devices, n, opts, false);
}

int vtpu_model_compile_distributed(struct vtpu_model *m,
				   const char *const *devices, uint32_t n,
				   const struct vtpu_compile_opts *opts)
{
	return compile_replicated(m, devices, n, opts, true);
}

uint32_t vtpu_model_num_replicas(const struct vtpu_model *m)
{
	return m->compiled ? (m->rep ? m->nrep : 1) : 0;
}

int vtpu_model_get_replica_weights(struct vtpu_model *m, uint32_t replica,
				   uint32_t i, float *out, uint64_t count)
{
	const struct vg_param *pr;
	float *w = weights_of(m, i, count, &pr);

	if (!w)
		return -EINVAL;
	if (replica >= vtpu_model_num_replicas(m))
		return fail(m, -EINVAL, "replica %u: the model has %u",
			    replica, vtpu_model_num_replicas(m));
	if (replica)
		w = (float *)((char *)m->rep[replica].state->map +
			      m->sl.params) + pr->offset;
	if (pr->panels)
		vg_param_convert(pr, w, out, true);
	else
		memcpy(out, w, count * sizeof(float));
	return 0;
}

/*
 * Every replica starts a fit from replica 0's state: the weights set,
 * loaded or trained since, the optimizer's moments and step.
 */
static void replicas_sync(struct vtpu_model *m)
{
	uint32_t r;

	for (r = 1; m->rep && r < m->nrep; r++)
		memcpy(m->rep[r].state->map, m->state.map, m->sl.bytes);
}

/*
 * Deal the epoch's order (m->train, shuffled and augmented) out to the
 * replicas: step s's global batch is examples [s * B, (s + 1) * B), of
 * which replica r takes the r-th b = B / R, as one device would see them.
 */
static int replicas_deal(struct vtpu_model *m, const struct pass *p,
			 size_t isz)
{
	uint32_t b = rep_share(m), r, s, n = p->steps * b;
	const uint8_t *img = m->train.images.map;
	const uint32_t *lab = m->train.labels.map;
	int ret;

	for (r = 0; r < m->nrep; r++) {
		struct replica *rp = &m->rep[r];

		if (rp->train.n != n) {
			devset_free_rt(rp->rt, &rp->train);
			ret = vg_bo_create(rp->rt, (uint64_t)n * isz,
					   &rp->train.images) ?:
			      vg_bo_create(rp->rt, (uint64_t)n * 4,
					   &rp->train.labels);
			if (ret) {
				devset_free_rt(rp->rt, &rp->train);
				return fail(m, ret,
					    "replica %u: %u images in device memory: %s",
					    r, n, strerror(-ret));
			}
			rp->train.n = n;
		}
		for (s = 0; s < p->steps; s++) {
			uint64_t from = (uint64_t)s * m->batch +
					(uint64_t)(m->drank * m->nrep + r) * b;

			memcpy((uint8_t *)rp->train.images.map +
				       (uint64_t)s * b * isz,
			       img + from * isz, (size_t)b * isz);
			memcpy((uint32_t *)rp->train.labels.map +
				       (uint64_t)s * b,
			       lab + from, (size_t)b * 4);
		}
	}
	return 0;
}

static void close_fences(int *fences, uint32_t n)
{
	uint32_t r;

	for (r = 0; r < n; r++)
		if (fences[r] >= 0) {
			close(fences[r]);
			fences[r] = -1;
		}
}

/* Wait for and close @fences; the first failure. */
static int wait_fences(struct vtpu_model *m, int *fences)
{
	uint32_t r;
	int ret = 0, w;

	for (r = 0; r < m->nrep; r++) {
		w = vg_wait(m->rep[r].rt, fences[r]);
		fences[r] = -1;
		ret = ret ?: w;
	}
	return ret;
}

/*
 * Run replica @r's @update (or gradient) program for step @s, after
 * @in_fence (-1: now; a device's only), its fence into @fence.
 */
static int replica_run(struct vtpu_model *m, uint32_t r, uint32_t s,
		       bool update, size_t isz, int in_fence, int *fence,
		       char *why, size_t whylen)
{
	uint32_t b = rep_share(m);
	uint64_t strides[VG_NBUFS] = { 0 };
	struct replica *rp = &m->rep[r];
	struct vtpu_bo *bufs[VG_NBUFS] = {
		[VG_BUF_STATE] = rp->state,
		[VG_BUF_WORK] = &rp->work,
		[VG_BUF_IMAGES] = &rp->train.images,
		[VG_BUF_LABELS] = &rp->train.labels,
		[VG_BUF_METRICS] = &rp->metrics,
	};
	int ret;

	strides[VG_BUF_IMAGES] = (uint64_t)b * isz;
	strides[VG_BUF_LABELS] = (uint64_t)b * 4;
	ret = vg_run_after(rp->rt, update ? &rp->update : &rp->grad, bufs,
			   strides, s, 1, rp->rt->dev ? in_fence : -1, fence,
			   why, whylen);
	if (ret && why[0] == '\0')
		snprintf(why, whylen, "replica %u", r);
	return ret;
}

/*
 * Run @update (or the gradient) program of every replica for step @s,
 * each after @in_fence (-1: now), their fences into @fences.
 */
static int replicas_run(struct vtpu_model *m, uint32_t s, bool update,
			size_t isz, int in_fence, int *fences, char *why,
			size_t whylen)
{
	uint32_t r;
	int ret = 0;

	/* all submitted before any is waited for: the devices run together */
	for (r = 0; r < m->nrep && !ret; r++)
		ret = replica_run(m, r, s, update, isz, in_fence, &fences[r],
				  why, whylen);
	return ret;
}

/* Replica @r's slice of the all-reduce (none: 0), after @in_fence. */
static int replica_allreduce(struct vtpu_model *m, uint32_t r, int in_fence,
			     int *fence, char *why, size_t whylen)
{
	struct replica *rk = &m->rep[r];
	int ret;

	if (!rk->ar_rt)
		return 0;
	ret = vg_submit(rk->ar_rt, &rk->ar, NULL, 0, 1,
			rk->ar_rt->dev ? in_fence : -1, fence, why, whylen);
	if (ret && why[0] == '\0')
		snprintf(why, whylen, "replica %u's all-reduce", r);
	return ret;
}

/*
 * Across ranks, after the local all-reduce: replica 0's gradients (this
 * rank's sum) summed over the ranks in rank order and copied into the
 * other local replicas' (their sums are replica 0's already), and every
 * global replica's loss and correct count of the step gathered.
 */
static int dist_exchange(struct vtpu_model *m, char *why, size_t whylen)
{
	uint64_t off = m->rep[0].grad.grads_offset;
	uint64_t count = m->g->nparam_floats;
	uint8_t *g0 = (uint8_t *)m->rep[0].work.map + off;
	uint32_t r;
	int ret;

	for (r = 0; r < m->nrep; r++) {
		const uint8_t *met = m->rep[r].metrics.map;

		memcpy(&m->dmine[2 * r], met + VG_METRIC_LOSS, 4);
		memcpy(&m->dmine[2 * r + 1], met + VG_METRIC_CORRECT, 4);
	}
	ret = vd_allreduce((float *)g0, count, m->dmine, m->dmet, m->nrep * 8,
			   ++m->dstep, why, whylen);
	if (ret) {
		m->dfail = true;
		return ret;
	}
	for (r = 1; r < m->nrep; r++)
		memcpy((uint8_t *)m->rep[r].work.map + off, g0, count * 4);
	return 0;
}

/* One stage of replica @r's step in the pool, unless one failed before. */
static void pool_stage(struct rep_pool *pl, uint32_t r, int stage)
{
	struct vtpu_model *m = pl->m;
	char *why = pl->why + (size_t)r * POOL_WHY;
	int f = -1, ret;

	if (__atomic_load_n(&pl->failed, __ATOMIC_RELAXED))
		return;
	if (stage == 1)
		ret = replica_allreduce(m, r, -1, &f, why, POOL_WHY);
	else
		ret = replica_run(m, r, pl->s, stage == 2, pl->isz, -1, &f,
				  why, POOL_WHY);
	ret = ret ?: vg_wait(m->rep[r].rt, f);
	if (ret) {
		pl->ret[r] = ret;
		__atomic_store_n(&pl->failed, 1, __ATOMIC_RELAXED);
	}
}

/* Replica @r's whole step: gradients, all-reduce, update. */
static void pool_replica_step(struct rep_pool *pl, uint32_t r)
{
	struct vtpu_model *m = pl->m;
	int ret;

	pool_stage(pl, r, 0);
	pthread_barrier_wait(&pl->bar);
	pool_stage(pl, r, 1);
	pthread_barrier_wait(&pl->bar);
	if (m->dsize > 1) {
		/* replica 0's thread, the caller's, talks to the other ranks */
		if (!r && !__atomic_load_n(&pl->failed, __ATOMIC_RELAXED)) {
			ret = dist_exchange(m, pl->why, POOL_WHY);
			if (ret) {
				pl->ret[0] = ret;
				__atomic_store_n(&pl->failed, 1,
						 __ATOMIC_RELAXED);
			}
		}
		pthread_barrier_wait(&pl->bar);
	}
	pool_stage(pl, r, 2);
}

struct pool_arg {
	struct rep_pool *pl;
	uint32_t r;
};

static void *pool_helper(void *arg)
{
	struct pool_arg *a = arg;
	struct rep_pool *pl = a->pl;
	uint32_t r = a->r;
	uint64_t seen = 0;

	free(a);
	for (;;) {
		pthread_mutex_lock(&pl->mu);
		while (pl->gen == seen && !pl->quit)
			pthread_cond_wait(&pl->go, &pl->mu);
		if (pl->quit) {
			pthread_mutex_unlock(&pl->mu);
			return NULL;
		}
		seen = pl->gen;
		pthread_mutex_unlock(&pl->mu);
		pool_replica_step(pl, r);
		pthread_mutex_lock(&pl->mu);
		if (!--pl->busy)
			pthread_cond_signal(&pl->done);
		pthread_mutex_unlock(&pl->mu);
	}
}

static void pool_stop(struct vtpu_model *m)
{
	struct rep_pool *pl = m->pool;
	uint32_t i;

	if (!pl)
		return;
	pthread_mutex_lock(&pl->mu);
	pl->quit = true;
	pthread_cond_broadcast(&pl->go);
	pthread_mutex_unlock(&pl->mu);
	for (i = 0; i < pl->nth; i++)
		pthread_join(pl->th[i], NULL);
	pthread_barrier_destroy(&pl->bar);
	pthread_cond_destroy(&pl->go);
	pthread_cond_destroy(&pl->done);
	pthread_mutex_destroy(&pl->mu);
	free(pl->th);
	free(pl->ret);
	free(pl->why);
	free(pl);
	m->pool = NULL;
}

/*
 * Start the pool when every replica is a cpu backend; without it (not
 * all cpu backends, or no threads to be had) the replicas run in turn.
 */
static void pool_start(struct vtpu_model *m)
{
	struct rep_pool *pl;
	uint32_t r;

	for (r = 0; r < m->nrep; r++)
		if (!m->rep[r].rt->cpu)
			return;
	if (m->nrep < 2)
		return;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return;
	pl->m = m;
	pl->th = calloc(m->nrep, sizeof(*pl->th));
	pl->ret = calloc(m->nrep, sizeof(*pl->ret));
	pl->why = calloc(m->nrep, POOL_WHY);
	if (!pl->th || !pl->ret || !pl->why ||
	    pthread_barrier_init(&pl->bar, NULL, m->nrep)) {
		free(pl->th);
		free(pl->ret);
		free(pl->why);
		free(pl);
		return;
	}
	pthread_mutex_init(&pl->mu, NULL);
	pthread_cond_init(&pl->go, NULL);
	pthread_cond_init(&pl->done, NULL);
	m->pool = pl;
	for (r = 1; r < m->nrep; r++) {
		struct pool_arg *a = malloc(sizeof(*a));

		if (!a)
			break;
		a->pl = pl;
		a->r = r;
		if (pthread_create(&pl->th[r - 1], NULL, pool_helper, a)) {
			free(a);
			break;
		}
		pl->nth++;
	}
	if (pl->nth != m->nrep - 1)
		pool_stop(m);	/* the replicas run in turn */
}

/* One step of every replica at once, on the pool's threads. */
static int pool_step(struct vtpu_model *m, uint32_t s, size_t isz,
		     char *why, size_t whylen)
{
	struct rep_pool *pl = m->pool;
	uint32_t r;

	pl->s = s;
	pl->isz = isz;
	pl->failed = 0;
	memset(pl->ret, 0, m->nrep * sizeof(*pl->ret));
	memset(pl->why, 0, (size_t)m->nrep * POOL_WHY);
	pthread_mutex_lock(&pl->mu);
	pl->busy = pl->nth;
	pl->gen++;
	pthread_cond_broadcast(&pl->go);
	pthread_mutex_unlock(&pl->mu);
	pool_replica_step(pl, 0);
	pthread_mutex_lock(&pl->mu);
	while (pl->busy)
		pthread_cond_wait(&pl->done, &pl->mu);
	pthread_mutex_unlock(&pl->mu);
	for (r = 0; r < m->nrep; r++)
		if (pl->ret[r]) {
			snprintf(why, whylen, "%s", pl->why + (size_t)r * POOL_WHY);
			return pl->ret[r];
		}
	return 0;
}

/*
 * One step on every replica: the gradients, the all-reduce, the update.
 * With devices only, the three are submitted at once, each after the
 * merged fences of the one before, and the host waits only for the end;
 * a cpu backend runs as it is submitted, so the host waits for the
 * devices' gradients before a cpu backend sums them.
 */
static int replicas_step(struct vtpu_model *m, uint32_t s, size_t isz,
			 char *why, size_t whylen)
{
	int g[MAX_REPLICAS], a[MAX_REPLICAS], u[MAX_REPLICAS];
	bool any_cpu = false;
	int in = -1, ret, w;
	uint32_t r;

	if (m->pool)
		return pool_step(m, s, isz, why, whylen);
	for (r = 0; r < m->nrep; r++) {
		g[r] = a[r] = u[r] = -1;
		any_cpu |= m->rep[r].rt->cpu != NULL;
	}
	ret = replicas_run(m, s, false, isz, -1, g, why, whylen);
	if (!ret && any_cpu)
		ret = wait_fences(m, g);
	if (!ret)
		ret = vg_fence_merge(g, m->nrep, &in);
	for (r = 0; !ret && r < m->nrep; r++)
		ret = replica_allreduce(m, r, in, &a[r], why, whylen);
	if (in >= 0)
		close(in);
	in = -1;
	if (!ret && m->dsize > 1) {
		/* the host sums across ranks: everything before it done */
		ret = wait_fences(m, a);
		w = wait_fences(m, g);
		ret = ret ?: w ?: dist_exchange(m, why, whylen);
	}
	if (!ret)
		ret = vg_fence_merge(a, m->nrep, &in);
	if (!ret)
		ret = replicas_run(m, s, true, isz, in, u, why, whylen);
	if (in >= 0)
		close(in);
	w = wait_fences(m, u);
	ret = ret ?: w;
	w = wait_fences(m, a);
	ret = ret ?: w;
	w = wait_fences(m, g);
	ret = ret ?: w;
	close_fences(u, m->nrep);
	return ret;
}

/*
 * The last partial global batch, @p->rem examples: replica 0 trains on
 * them as one device would (the model's own program for that batch, its
 * loss the mean over the rem examples, the step's update), and the other
 * replicas take its state. Every rank does the same: the same weights,
 * the same examples (every rank holds the epoch's whole order) and seed,
 * the same engine, so the same bits without an exchange. One device's
 * fit trains on the remainder too, so the replicas' epoch is the same
 * examples as one device's (they differed by the remainder before).
 */
static int replicas_remainder(struct vtpu_model *m, struct pass *p,
			      char *why, size_t whylen)
{
	uint64_t strides[VG_NBUFS] = { 0 };
	struct vtpu_bo *bufs[VG_NBUFS];
	struct prog_entry *part;
	int fence = -1, ret;

	part = get_prog(m, VG_PROG_TRAIN, p->rem, NULL, &ret);
	if (!part)
		return ret;
	ret = ensure_metrics(m, part->prog.metrics_stride);
	if (ret)
		return ret;
	bufs[VG_BUF_STATE] = &m->state;
	bufs[VG_BUF_WORK] = &part->work;
	bufs[VG_BUF_IMAGES] = &m->train.images;
	bufs[VG_BUF_LABELS] = &m->train.labels;
	bufs[VG_BUF_METRICS] = &m->metrics;
	/* one iteration numbered 1 whose strides point past the full steps */
	strides[VG_BUF_IMAGES] = p->in_stride * p->steps;
	strides[VG_BUF_LABELS] = p->lab_stride * p->steps;
	ret = vg_run(&m->rt, &part->prog, bufs, strides, 1, 1, &fence, why,
		     whylen);
	if (!ret)
		ret = vg_wait(&m->rt, fence);
	if (ret)
		return ret;
	collect(p, metrics_at(m, 0, 0), p->steps, p->steps + 1, 0, p->rem);
	replicas_sync(m);
	return 0;
}

/*
 * A training pass of a replicated model, step by step: every replica's
 * forward and backward pass on its share, the all-reduce, every
 * replica's optimizer step; then the last partial global batch, if any,
 * on replica 0 (replicas_remainder()).
 */
static int run_replicated(struct vtpu_model *m, struct pass *p, size_t isz)
{
	uint8_t met[VG_METRIC_PROBS];
	char why[256] = "";
	uint32_t s, r, correct, c;
	float loss, l;
	int ret;

	ret = replicas_deal(m, p, isz);
	if (ret)
		return ret;
	m->dfail = false;
	for (s = 0; s < p->steps; s++) {
		ret = replicas_step(m, s, isz, why, sizeof(why));
		if (ret)
			break;
		/* each replica's loss is its part of the global batch's mean */
		loss = 0;
		correct = 0;
		for (r = 0; r < global_reps(m); r++) {
			if (m->dsize > 1) {
				memcpy(&l, &m->dmet[2 * r], 4);
				c = m->dmet[2 * r + 1];
			} else {
				memcpy(&l, (uint8_t *)m->rep[r].metrics.map +
						   VG_METRIC_LOSS, 4);
				memcpy(&c, (uint8_t *)m->rep[r].metrics.map +
						   VG_METRIC_CORRECT, 4);
			}
			loss += l;
			correct += c;
		}
		memcpy(met + VG_METRIC_LOSS, &loss, 4);
		memcpy(met + VG_METRIC_CORRECT, &correct, 4);
		collect(p, met, s, s + 1, sizeof(met), m->batch);
	}
	if (!ret && p->rem)
		ret = replicas_remainder(m, p, why, sizeof(why));
	if (ret && m->dfail)
		return fail(m, ret, "%s", why);	/* names the rank and step */
	if (ret)
		return pass_failed(m, p, ret, why);
	return 0;
}

static int run_pass(struct vtpu_model *m, struct pass *p)
{
	struct prog_entry *full, *part;
	struct vtpu_bo *bufs[VG_NBUFS];
	uint64_t strides[VG_NBUFS] = { 0 };
	uint32_t s, n = 1, stride, prev_from = 0, prev_to = 0;
	double t0 = now_s(), per_step;
	int fence = -1, prev = -1, ret = 0;
	char why[256] = "";

	if (p->kind == VG_PROG_TRAIN && m->rep)
		return run_replicated(m, p, p->in_stride / m->batch);
	ret = pass_progs(m, p, &full, &part);
	if (ret)
		return ret;
	stride = full ? full->prog.metrics_stride : 0;
	ret = ensure_metrics(m, (uint64_t)p->steps * stride +
				(part ? part->prog.metrics_stride : 0));
	if (ret)
		return ret;

	bufs[VG_BUF_STATE] = &m->state;
	bufs[VG_BUF_IMAGES] = &p->set->images;
	bufs[VG_BUF_LABELS] = &p->set->labels;
	bufs[VG_BUF_METRICS] = &m->metrics;
	strides[VG_BUF_IMAGES] = p->in_stride;
	strides[VG_BUF_LABELS] = p->lab_stride;
	strides[VG_BUF_METRICS] = stride;

	/*
	 * Two submissions in flight, so the device never waits for us; the
	 * cpu backend runs each one before vg_run() returns (no fence).
	 */
	for (s = 0; s < p->steps; s += n) {
		if (p->done) { /* size the next submission by the pace so far */
			per_step = (now_s() - t0) / p->done;
			n = (uint32_t)fmin(fmax(CHUNK_SECONDS / per_step, 1),
					   p->steps - s);
		}
		bufs[VG_BUF_WORK] = &full->work;
		ret = vg_run(&m->rt, &full->prog, bufs, strides, s, n, &fence,
			     why, sizeof(why));
		if (ret)
			break;
		if (fence < 0) {
			collect(p, metrics_at(m, s, stride), s, s + n, stride,
				m->batch);
			continue;
		}
		if (prev >= 0) {
			ret = vg_wait(&m->rt, prev);
			prev = -1;
			if (ret)
				break;
			collect(p, metrics_at(m, prev_from, stride),
				prev_from, prev_to, stride, m->batch);
		}
		prev = fence;
		prev_from = s;
		prev_to = s + n;
	}
	if (prev >= 0) {
		int r = vg_wait(&m->rt, prev);

		ret = ret ?: r;
		if (!r)
			collect(p, metrics_at(m, prev_from, stride),
				prev_from, prev_to, stride, m->batch);
	}
	if (!ret && part) {
		/* the remainder: one iteration numbered 1 whose strides
		 * point just past the full batches */
		strides[VG_BUF_IMAGES] *= p->steps;
		strides[VG_BUF_LABELS] *= p->steps;
		strides[VG_BUF_METRICS] = (uint64_t)stride * p->steps;
		bufs[VG_BUF_WORK] = &part->work;
		ret = vg_run(&m->rt, &part->prog, bufs, strides, 1, 1, &fence,
			     why, sizeof(why));
		if (!ret)
			ret = vg_wait(&m->rt, fence);
		if (!ret)
			collect(p, metrics_at(m, p->steps, stride), p->steps,
				p->steps + 1, stride, p->rem);
	}
	if (ret)
		return pass_failed(m, p, ret, why);
	return 0;
}

/* ---- fit, evaluate, predict --------------------------------------------- */

/* A pass over @n examples of @isz bytes, from @set (NULL: streamed). */
static void pass_init(struct vtpu_model *m, struct pass *p,
		      enum vg_prog_kind kind, struct devset *set, uint32_t n,
		      size_t isz, uint32_t max_steps)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->set = set;
	p->in_stride = (uint64_t)m->batch * isz;
	p->lab_stride = (uint64_t)m->batch * 4;
	p->steps = n / m->batch;
	p->rem = n % m->batch;
	if (max_steps && p->steps + !!p->rem > max_steps) {
		p->steps = max_steps;
		p->rem = 0;
	}
}

int vtpu_model_evaluate(struct vtpu_model *m, const struct vtpu_dataset *ds,
			double *loss, double *acc)
{
	struct devset *set;
	struct pass p;
	int ret;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	ret = check_set(m, ds);
	if (ret)
		return ret;
	set = get_set(m, ds);
	if (!set)
		return -ENOMEM;
	pass_init(m, &p, VG_PROG_EVAL, set, set->n,
		  vtpu_dataset_image_size(ds), 0);
	ret = run_pass(m, &p);
	if (ret)
		return ret;
	*loss = p.loss_sum / p.seen;
	*acc = (double)p.correct / p.seen;
	return 0;
}

int vtpu_model_set_learning_rate(struct vtpu_model *m, float lr)
{
	int i, ret;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	ret = check_lr(m, lr);
	if (ret)
		return ret;
	m->opt.lr = lr;
	for (i = 0; i < MAX_PROGS; i++)
		if (m->progs[i].used)
			vg_program_set_lr(&m->progs[i].prog, lr);
	for (i = 0; m->rep && i < (int)m->nrep; i++)
		vg_program_set_lr(&m->rep[i].update, lr);
	return 0;
}

float vtpu_model_learning_rate(const struct vtpu_model *m)
{
	return m->opt.lr;
}

int vtpu_model_predict(struct vtpu_model *m, const uint8_t *images,
		       uint32_t n, float *probs)
{
	struct vtpu_dataset view = { .n = n, .images = (uint8_t *)images };
	uint32_t classes;
	struct devset *set;
	struct pass p;
	uint32_t i;
	int ret;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	if (m->g->input < 0)
		return check_set(m, &view);
	classes = m->g->nodes[m->g->loss].c;
	view.height = m->g->nodes[m->g->input].h;
	view.width = m->g->nodes[m->g->input].w;
	view.channels = m->g->nodes[m->g->input].c;
	ret = check_set(m, &view);
	if (ret)
		return ret;
	set = get_set(m, &view);
	if (!set)
		return -ENOMEM;
	pass_init(m, &p, VG_PROG_PREDICT, set, set->n,
		  vtpu_dataset_image_size(&view), 0);
	ret = run_pass(m, &p);
	/* a cached copy of caller memory could go stale: drop it */
	devset_free(m, set);
	if (ret)
		return ret;
	/* step s's probabilities follow its metrics, s * stride in */
	for (i = 0; i < n; i++) {
		size_t stride = (size_t)m->batch * classes * 4 + VG_METRIC_PROBS;

		memcpy(probs + (size_t)i * classes,
		       (const uint8_t *)m->metrics.map + i / m->batch * stride +
			       VG_METRIC_PROBS +
			       (size_t)(i % m->batch) * classes * 4,
		       classes * 4);
	}
	return 0;
}

/* ---- models of token inputs ------------------------------------------- */

int vtpu_model_set_bucket_width(struct vtpu_model *m, uint32_t width)
{
	m->bucket_width = width;
	return 0;
}

uint64_t vtpu_model_programs_compiled(const struct vtpu_model *m)
{
	return m->compiles;
}

struct vtpu_model *vtpu_model_create_graph(struct vtpu_graph *g)
{
	struct vtpu_model *m;

	if (!g || !g->ntokens) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->g = g;
	m->last = g->loss >= 0 ? g->nodes[g->loss].in[0] : g->nnodes - 1;
	m->bucket_width = BUCKET_WIDTH;
	return m;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Labels per example: the sequence loss's steps, or one class. */
static uint32_t label_len(const struct vtpu_model *m)
{
	const struct vg_node *l = &m->g->nodes[m->g->loss];

	return l->seq ? l->h : 1;
}

/* The smallest vocabulary of the embeddings that read token input @k. */
static uint32_t input_vocab(const struct vtpu_model *m, int k)
{
	uint32_t v = UINT32_MAX;
	int i;

	for (i = 0; i < m->g->nnodes; i++) {
		const struct vg_node *n = &m->g->nodes[i];

		if (n->op == VG_EMBEDDING && n->in[0] == m->g->tokens[k] &&
		    m->g->params[n->weight].dims[0] < v)
			v = (uint32_t)m->g->params[n->weight].dims[0];
	}
	return v;
}

static int check_tokens(struct vtpu_model *m,
			const struct vtpu_token_dataset *ds, bool labels)
{
	uint32_t classes, ll, i, t;
	int k;

	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	if (!m->g->ntokens)
		return fail(m, -EINVAL,
			    "the model takes images: use fit(), evaluate(), predict()");
	if (!ds->n)
		return fail(m, -EINVAL, "the dataset is empty");
	for (k = 0; k < m->g->ntokens; k++) {
		uint32_t T = m->g->nodes[m->g->tokens[k]].h;
		uint32_t v = input_vocab(m, k);

		if (!ds->inputs[k])
			return fail(m, -EINVAL, "token input %d: no data", k);
		for (i = 0; i < ds->n; i++)
			for (t = 0; t < T; t++)
				if (ds->inputs[k][(uint64_t)i * T + t] >= v)
					return fail(m, -EINVAL,
						    "token input %d, example %u, step %u: id %u is not below the vocabulary's %u",
						    k, i, t,
						    ds->inputs[k][(uint64_t)i * T + t],
						    v);
	}
	if (!labels)
		return 0;
	if (!ds->labels)
		return fail(m, -EINVAL, "the dataset has no labels");
	classes = m->g->nodes[m->g->loss].c;
	ll = label_len(m);
	for (i = 0; i < ds->n; i++)
		for (t = 0; t < ll; t++) {
			uint32_t y = ds->labels[(uint64_t)i * ll + t];

			if (y >= classes)
				return fail(m, -EINVAL,
					    "label %u of example %u, step %u is not below %u classes",
					    y, i, t, classes);
		}
	return 0;
}

/* Room in @s for @n examples, packed by the model's batch. */
static int tokset_alloc(struct vtpu_model *m, struct devset *s, uint32_t n)
{
	uint32_t B = m->batch, steps = n / B, rem = n % B;
	uint64_t in = steps * vg_inputs_bytes(m->g, B) +
		      (rem ? vg_inputs_bytes(m->g, rem) : 0);
	int ret;

	/* packed by the model's batch: another one packs anew */
	if (s->n == n && s->batch == B && s->images.size >= in && s->valid)
		return 0;
	devset_free(m, s);
	ret = vg_bo_create(&m->rt, in, &s->images);
	if (!ret)
		ret = vg_bo_create(&m->rt, (uint64_t)n * label_len(m) * 4,
				   &s->labels);
	s->valid = calloc(steps + 1, sizeof(*s->valid));
	s->tb = calloc(steps + 1, sizeof(*s->tb));
	if (ret || !s->valid || !s->tb) {
		devset_free(m, s);
		return fail(m, ret ?: -ENOMEM, "%u examples in device memory: %s",
			    n, strerror(-(ret ?: -ENOMEM)));
	}
	s->n = n;
	s->batch = B;
	return 0;
}

/* Steps of a row of @T ids up to its last one that is not padding. */
static uint32_t used_len(const uint32_t *x, uint32_t T)
{
	while (T && x[T - 1] == VTPU_TOK_PAD)
		T--;
	return T;
}

/*
 * The padded lengths example @e needs, per token input: its ids (and for
 * the input a sequence loss runs along, its labels) rounded up to the
 * bucket width, or the declared length for an input not in @slots (a bit
 * per input) or without buckets. All VG_MAX_TOKEN_INPUTS entries are
 * written, those past the graph's inputs 0: the bucket keys are compared
 * whole (key_cmp(), memcmp()), and an entry left as malloc() found it
 * sorted the examples by stale heap bytes, so that a second model in the
 * same process trained on other batches than the first.
 */
static void example_lens(const struct vtpu_model *m,
			 const struct vtpu_token_dataset *ds, uint64_t e,
			 uint32_t slots, uint32_t *lens)
{
	uint32_t W = m->bucket_width, T, L;
	int k, ls = vg_loss_slot(m->g);

	memset(lens, 0, VG_MAX_TOKEN_INPUTS * sizeof(*lens));
	for (k = 0; k < m->g->ntokens; k++) {
		T = m->g->nodes[m->g->tokens[k]].h;
		lens[k] = T;
		if (!W || !(slots >> k & 1))
			continue;
		L = used_len(ds->inputs[k] + e * T, T);
		if (k == ls && ds->labels)
			L = max_u32(L, used_len(ds->labels + e * T, T));
		/* at least one step; a multiple of W, at most T */
		L = (L ?: 1) + W - 1;
		L -= L % W;
		lens[k] = L < T ? L : T;
	}
}

/*
 * The slots a pass of @kind may run shorter: for a prediction or
 * decoding, never the one its output runs along (the caller asked for
 * all its steps).
 */
static uint32_t pass_slots(const struct vtpu_model *m, enum vg_prog_kind kind)
{
	uint32_t slots = vg_bucket_slots(m->g);
	int ls = vg_loss_slot(m->g);

	if ((kind == VG_PROG_PREDICT || kind == VG_PROG_DECODE) && ls >= 0)
		slots &= ~(1u << ls);
	return slots;
}

/* Padded lengths in lexicographic order: <0, 0, >0. */
static int key_cmp(const uint32_t *a, const uint32_t *b)
{
	int k;

	for (k = 0; k < VG_MAX_TOKEN_INPUTS; k++)
		if (a[k] != b[k])
			return a[k] < b[k] ? -1 : 1;
	return 0;
}

/* Ids of @cnt rows of [T] ids, time-major for @len steps; then lengths. */
static uint32_t *pack_input(uint32_t *o, const uint32_t *const *rows,
			    uint32_t cnt, uint32_t T, uint32_t len)
{
	uint32_t b, t, l;

	for (t = 0; t < len; t++)
		for (b = 0; b < cnt; b++)
			*o++ = rows[b][t];
	for (b = 0; b < cnt; b++) {
		for (l = 0; l < T && rows[b][l] != VTPU_TOK_PAD; l++)
			;
		*o++ = l < len ? l : len;
	}
	return o;
}

/*
 * Pack examples idx[0..n) (or all, in order) batch by batch as the
 * programs read them: each batch, full or the last partial one, at the
 * padded lengths of its longest example's bucket (see example_lens()),
 * one after the other. With @sort (training), the examples are first
 * ordered by bucket (stably: the shuffled order stays within a bucket)
 * and the batches then run in an order drawn from the model's generator.
 */
static int tokset_fill(struct vtpu_model *m, struct devset *s,
		       const struct vtpu_token_dataset *ds, const uint32_t *idx,
		       enum vg_prog_kind kind, bool sort)
{
	uint32_t B = m->batch, ll = label_len(m), slots = pass_slots(m, kind);
	uint32_t *order = NULL, *lens = NULL, *key, first, j, b, nb;
	const uint32_t **rows = NULL;
	uint8_t *in = s->images.map;
	uint32_t *out = s->labels.map, *o;
	int k, ls = vg_loss_slot(m->g), ret = 0;
	uint64_t e;

	order = malloc((size_t)s->n * sizeof(*order));
	lens = malloc((size_t)s->n * VG_MAX_TOKEN_INPUTS * sizeof(*lens));
	rows = malloc((size_t)B * sizeof(*rows));
	if (!order || !lens || !rows) {
		ret = fail(m, -ENOMEM, "out of memory");
		goto out;
	}
	for (j = 0; j < s->n; j++) {
		order[j] = idx ? idx[j] : j;
		example_lens(m, ds, order[j], slots,
			     lens + (size_t)order[j] * VG_MAX_TOKEN_INPUTS);
	}
	if (sort && slots && m->bucket_width) {
		/* insertion by bucket key: stable, and the buckets are few */
		uint32_t *tmp = malloc((size_t)s->n * sizeof(*tmp)), c = 0;
		uint32_t *seen = malloc((size_t)s->n * sizeof(*seen)), ns = 0;

		if (!tmp || !seen) {
			free(tmp);
			free(seen);
			ret = fail(m, -ENOMEM, "out of memory");
			goto out;
		}
		/* the distinct keys, in ascending (lexicographic) order */
		for (j = 0; j < s->n; j++) {
			key = lens + (size_t)order[j] * VG_MAX_TOKEN_INPUTS;
			for (b = 0; b < ns; b++)
				if (key_cmp(key, lens + (size_t)seen[b] *
						 VG_MAX_TOKEN_INPUTS) <= 0)
					break;
			if (b < ns && !key_cmp(key, lens + (size_t)seen[b] *
						       VG_MAX_TOKEN_INPUTS))
				continue;
			memmove(seen + b + 1, seen + b,
				(ns++ - b) * sizeof(*seen));
			seen[b] = order[j];
		}
		for (b = 0; b < ns; b++)
			for (j = 0; j < s->n; j++)
				if (!memcmp(lens + (size_t)order[j] *
						   VG_MAX_TOKEN_INPUTS,
					    lens + (size_t)seen[b] *
						   VG_MAX_TOKEN_INPUTS,
					    VG_MAX_TOKEN_INPUTS * 4))
					tmp[c++] = order[j];
		memcpy(order, tmp, (size_t)s->n * sizeof(*order));
		free(tmp);
		free(seen);
	}
	for (first = 0, nb = 0; first < s->n; first += B, nb++) {
		struct tokbatch *t = &s->tb[nb];
		uint32_t cnt = s->n - first < B ? s->n - first : B, y;
		int64_t v;

		/* the batch's lengths: its longest example's */
		memset(t->lens, 0, sizeof(t->lens));
		for (j = 0; j < cnt; j++)
			for (k = 0; k < m->g->ntokens; k++)
				t->lens[k] = max_u32(t->lens[k],
					lens[(size_t)order[first + j] *
					     VG_MAX_TOKEN_INPUTS + k]);
		t->first = first;
		t->count = cnt;
		t->in_off = in - (uint8_t *)s->images.map;
		t->lab_off = (uint8_t *)out - (uint8_t *)s->labels.map;
		o = (uint32_t *)in;
		for (k = 0; k < m->g->ntokens; k++) {
			uint32_t T = m->g->nodes[m->g->tokens[k]].h;

			for (j = 0; j < cnt; j++)
				rows[j] = ds->inputs[k] +
					  (uint64_t)order[first + j] * T;
			o = pack_input(o, rows, cnt, T, t->lens[k]);
		}
		in = (uint8_t *)o;
		if (m->g->nodes[m->g->loss].seq) {
			uint32_t L = t->lens[ls], tt;

			v = 0;
			for (tt = 0; tt < L; tt++)
				for (j = 0; j < cnt; j++) {
					e = (uint64_t)order[first + j] * ll;
					y = ds->labels ? ds->labels[e + tt] :
							 VTPU_TOK_PAD;

					/* SOFTMAX_XENT ignores a row >= n */
					if (y == VTPU_TOK_PAD)
						y = UINT32_MAX;
					else
						v++;
					*out++ = y;
				}
			s->valid[nb] = (uint32_t)v;
		} else {
			for (j = 0; j < cnt; j++) {
				e = order[first + j];
				*out++ = ds->labels ? ds->labels[e] : 0;
			}
			s->valid[nb] = cnt;
		}
	}
	s->nb = nb;
	if (sort) { /* the batches' order: a Fisher-Yates shuffle */
		for (b = nb; b > 1; b--) {
			struct tokbatch t;
			uint32_t r = (uint32_t)(vtpu_rng_next(&m->rng) % b), v;

			t = s->tb[b - 1];
			s->tb[b - 1] = s->tb[r];
			s->tb[r] = t;
			v = s->valid[b - 1];
			s->valid[b - 1] = s->valid[r];
			s->valid[r] = v;
		}
	}
out:
	free(order);
	free(lens);
	free(rows);
	return ret;
}

/* What a token pass hands each batch's outputs to, or NULL. */
typedef void (*tok_out_fn)(struct vtpu_model *m, const struct tokbatch *t,
			   const void *outputs, void *ctx);

struct tokpass {
	enum vg_prog_kind kind;
	struct devset *set;
	uint32_t max_steps;	/* 0: all */
	tok_out_fn out;
	void *ctx;
	/* filled as batches complete */
	uint32_t done;
	double loss_sum;
	uint64_t correct;
	uint64_t seen;
	struct vtpu_progress *progress;
};

/*
 * Run a token set's batches, in its order, each by the program of its
 * padded lengths: one submission per batch.
 */
static int run_tokpass(struct vtpu_model *m, struct tokpass *p)
{
	struct vtpu_bo *bufs[VG_NBUFS];
	uint64_t strides[VG_NBUFS] = { 0 };
	struct prog_entry *e;
	uint32_t b, nb = p->set->nb;
	int fence = -1, ret = 0;
	char why[256] = "";

	if (p->max_steps && nb > p->max_steps)
		nb = p->max_steps;
	bufs[VG_BUF_STATE] = &m->state;
	bufs[VG_BUF_IMAGES] = &p->set->images;
	bufs[VG_BUF_LABELS] = &p->set->labels;
	bufs[VG_BUF_METRICS] = &m->metrics;
	for (b = 0; b < nb && !ret; b++) {
		const struct tokbatch *t = &p->set->tb[b];
		const uint8_t *mt;
		float loss;
		uint32_t correct, w = p->set->valid[b];

		e = get_prog_at(m, p->kind, t->count, t->lens, NULL, &ret);
		if (!e)
			return ret;
		ret = ensure_metrics(m, e->prog.metrics_stride);
		if (ret)
			return ret;
		bufs[VG_BUF_WORK] = &e->work;
		/* iteration 1 of strides that point at the batch */
		strides[VG_BUF_IMAGES] = t->in_off;
		strides[VG_BUF_LABELS] = t->lab_off;
		ret = vg_run(&m->rt, &e->prog, bufs, strides, 1, 1, &fence, why,
			     sizeof(why));
		if (!ret && fence >= 0)
			ret = vg_wait(&m->rt, fence);
		if (ret)
			break;
		mt = m->metrics.map;
		memcpy(&loss, mt + VG_METRIC_LOSS, 4);
		memcpy(&correct, mt + VG_METRIC_CORRECT, 4);
		p->loss_sum += (double)loss * w;
		p->correct += correct;
		p->seen += w;
		p->done = b + 1;
		if (p->out)
			p->out(m, t, mt + VG_METRIC_PROBS, p->ctx);
		if (p->progress) {
			struct vtpu_metric mm[2] = {
				{ "loss", p->loss_sum / (p->seen ?: 1) },
				{ "acc", (double)p->correct / (p->seen ?: 1) },
			};

			vtpu_progress_update(p->progress, p->done, mm, 2);
		}
	}
	if (ret)
		return fail(m, ret, "%s failed: %s%s%s",
			    p->kind == VG_PROG_TRAIN ? "training" : "running",
			    strerror(-ret), why[0] ? ": " : "", why);
	return 0;
}

static void tokpass_init(struct vtpu_model *m, struct tokpass *p,
			 enum vg_prog_kind kind, struct devset *set,
			 uint32_t max_steps)
{
	(void)m;
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->set = set;
	p->max_steps = max_steps;
}

int vtpu_model_evaluate_tokens(struct vtpu_model *m,
			       const struct vtpu_token_dataset *ds,
			       double *loss, double *acc)
{
	struct tokpass p;
	int ret;

	ret = check_tokens(m, ds, true);
	if (!ret)
		ret = tokset_alloc(m, &m->tokset, ds->n);
	if (!ret)
		ret = tokset_fill(m, &m->tokset, ds, NULL, VG_PROG_EVAL, false);
	if (ret)
		return ret;
	tokpass_init(m, &p, VG_PROG_EVAL, &m->tokset, 0);
	ret = run_tokpass(m, &p);
	if (ret)
		return ret;
	*loss = p.seen ? p.loss_sum / p.seen : 0;
	*acc = p.seen ? (double)p.correct / p.seen : 0;
	return 0;
}

/* A batch's probabilities, time-major by its rows, to probs[n][ll][c]. */
static void probs_out(struct vtpu_model *m, const struct tokbatch *t,
		      const void *outputs, void *ctx)
{
	uint32_t classes = m->g->nodes[m->g->loss].c, ll = label_len(m), b, s;
	float *probs = ctx;

	for (b = 0; b < t->count; b++)
		for (s = 0; s < ll; s++)
			memcpy(probs + (((size_t)t->first + b) * ll + s) *
					       classes,
			       (const uint8_t *)outputs +
				       ((size_t)s * t->count + b) * classes * 4,
			       classes * 4);
}

int vtpu_model_predict_tokens(struct vtpu_model *m,
			      const uint32_t *const *inputs, uint32_t n,
			      float *probs)
{
	struct vtpu_token_dataset ds = { .n = n };
	struct tokpass p;
	int ret, k;

	if (m->g->ntokens > VTPU_MAX_TOKEN_INPUTS)
		return -EINVAL;
	for (k = 0; k < m->g->ntokens; k++)
		ds.inputs[k] = inputs[k];
	ret = check_tokens(m, &ds, false);
	if (!ret)
		ret = tokset_alloc(m, &m->tokset, n);
	if (!ret)
		ret = tokset_fill(m, &m->tokset, &ds, NULL, VG_PROG_PREDICT,
				  false);
	if (ret)
		return ret;
	tokpass_init(m, &p, VG_PROG_PREDICT, &m->tokset, 0);
	p.out = probs_out;
	p.ctx = probs;
	return run_tokpass(m, &p);
}

/*
 * The slot of token input @target that decoding feeds its output back
 * to, or a failure: it must be a token input as long as the sequence
 * output.
 */
static int decode_slot(struct vtpu_model *m, int target)
{
	int k, slot = -1;

	for (k = 0; k < m->g->ntokens; k++)
		if (m->g->tokens[k] == target)
			slot = k;
	if (slot < 0)
		return fail(m, -EINVAL, "node %d is not a token input", target);
	if (m->g->loss < 0 || !m->g->nodes[m->g->loss].seq ||
	    m->g->nodes[m->g->loss].h != m->g->nodes[target].h)
		return fail(m, -EINVAL,
			    "decoding wants a sequence output as long as input %d",
			    target);
	return slot;
}

/* A batch's ids, [T][its rows], to out[n][T] (T the target's length). */
static void ids_out(struct vtpu_model *m, const struct tokbatch *t,
		    const void *outputs, void *ctx)
{
	uint32_t T = m->g->nodes[m->g->tokens[m->g->decode_slot]].h, b, s;
	const uint32_t *ids = outputs;
	uint32_t *out = ctx;

	for (b = 0; b < t->count; b++)
		for (s = 0; s < T; s++)
			out[((size_t)t->first + b) * T + s] =
				ids[(size_t)s * t->count + b];
}

int vtpu_model_decode(struct vtpu_model *m, int target,
		      const uint32_t *const *inputs, uint32_t n, uint32_t *out)
{
	struct vtpu_token_dataset ds = { .n = n };
	uint32_t *start = NULL, T, i;
	struct tokpass p;
	int ret, k, slot;

	slot = decode_slot(m, target);
	if (slot < 0)
		return slot;
	T = m->g->nodes[target].h;
	/* step 0 reads <start>; the others what the step before chose */
	start = calloc((size_t)n * T, sizeof(*start));
	if (!start)
		return fail(m, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		start[(size_t)i * T] = VTPU_TOK_START;
	for (k = 0; k < m->g->ntokens; k++)
		ds.inputs[k] = k == slot ? start : inputs[k];
	ret = check_tokens(m, &ds, false);
	if (!ret && m->g->decode_slot != slot) {
		drop_progs(m, VG_PROG_DECODE);
		m->g->decode_slot = slot;
	}
	if (!ret)
		ret = tokset_alloc(m, &m->tokset, n);
	if (!ret)
		ret = tokset_fill(m, &m->tokset, &ds, NULL, VG_PROG_DECODE,
				  false);
	if (!ret) {
		tokpass_init(m, &p, VG_PROG_DECODE, &m->tokset, 0);
		p.out = ids_out;
		p.ctx = out;
		ret = run_tokpass(m, &p);
	}
	free(start);
	if (ret)
		return ret == -EOPNOTSUPP ?
			       fail(m, ret,
				    "the layers after input %d cannot run step by step (decoding takes embeddings, LSTMs, GRUs, attention, concatenations and dense layers)",
				    target) :
			       ret;
	return 0;
}

/* ---- beam search, from the host ------------------------------------------ */

/* The most memory one prediction of the beams' rows takes (their probs). */
#define BEAM_PROBS_BYTES (64ull << 20)

/* A kept hypothesis of one sentence; its ids are in the search's table. */
struct beam_hyp {
	double score;		/* the sum of its ids' log-probabilities */
	uint32_t len;		/* ids generated */
	bool alive;		/* a hypothesis at all (step 0 has one) */
	bool finished;		/* emitted VTPU_TOK_END */
};

/* A candidate for the next step's beam: hypothesis @beam, extended by @id. */
struct beam_cand {
	double rank, score;
	uint32_t beam, id;
	bool carried;		/* a finished hypothesis, kept as it is */
};

/* Ranked higher: the better score; ties to kept, lower id, lower beam. */
static bool beam_better(const struct beam_cand *a, const struct beam_cand *b)
{
	if (a->rank != b->rank)
		return a->rank > b->rank;
	if (a->carried != b->carried)
		return a->carried;
	if (a->id != b->id)
		return a->id < b->id;
	return a->beam < b->beam;
}

/* Into the best @*k of @width (kept sorted), if it is among them. */
static void beam_offer(struct beam_cand *best, uint32_t width, uint32_t *k,
		       const struct beam_cand *c)
{
	uint32_t j;

	if (*k == width && !beam_better(c, &best[width - 1]))
		return;
	j = *k < width ? (*k)++ : width - 1;
	for (; j > 0 && beam_better(c, &best[j - 1]); j--)
		best[j] = best[j - 1];
	best[j] = *c;
}

/* GNMT's length normalisation: score / ((5 + len) / 6)^alpha. */
static double beam_rank(double score, uint32_t len, float alpha)
{
	return alpha ? score / pow((5.0 + len) / 6.0, alpha) : score;
}

struct beam_search {
	struct vtpu_model *m;
	const uint32_t *const *inputs;
	int slot;
	uint32_t T, V, W, G;	/* steps, classes, width, sentences a go */
	float alpha;
	uint32_t *ids, *nids;	/* [G][W][T], this step's and the next's */
	struct beam_hyp *hyp, *nhyp;	/* [G][W] */
	struct beam_cand *best;	/* [W] */
	uint32_t *row;		/* [G][W]: each hypothesis' row predicted */
	uint32_t *rows[VTPU_MAX_TOKEN_INPUTS];	/* [rows][its T] */
	float *probs;		/* [rows][T][V] */
};

/*
 * Step @t of sentences [first, first + cnt): predict for every kept
 * hypothesis that is not finished (rows padded to whole batches with
 * copies of the first, so that no program of another batch size is
 * compiled), then keep the best @W of their extensions and of the
 * finished ones. Return: 1 if every kept hypothesis is finished.
 */
static int beam_step(struct beam_search *s, uint32_t first, uint32_t cnt,
		     uint32_t t)
{
	struct vtpu_model *m = s->m;
	uint32_t T = s->T, V = s->V, W = s->W, B = m->batch;
	uint32_t i, b, j, v, nrows = 0, padded, k;
	int ret, tk;

	for (i = 0; i < cnt; i++)
		for (b = 0; b < W; b++) {
			const struct beam_hyp *h = &s->hyp[i * W + b];
			uint32_t r = nrows;

			if (!h->alive || h->finished)
				continue;
			s->row[i * W + b] = nrows++;
			for (tk = 0; tk < m->g->ntokens; tk++) {
				uint32_t Tk = m->g->nodes[m->g->tokens[tk]].h;
				uint32_t *dst = s->rows[tk] + (size_t)r * Tk;

				const uint32_t *src;

				if (tk != s->slot) {
					src = s->inputs[tk] +
					      (size_t)(first + i) * Tk;
					memcpy(dst, src, Tk * 4);
					continue;
				}
				/* <start>, the ids so far, padding */
				src = s->ids + (size_t)(i * W + b) * T;
				memset(dst, 0, Tk * 4);
				dst[0] = VTPU_TOK_START;
				memcpy(dst + 1, src, t * 4);
			}
		}
	if (!nrows)
		return 1;
	padded = (nrows + B - 1) / B * B;
	for (j = nrows; j < padded; j++)
		for (tk = 0; tk < m->g->ntokens; tk++) {
			uint32_t Tk = m->g->nodes[m->g->tokens[tk]].h;

			memcpy(s->rows[tk] + (size_t)j * Tk, s->rows[tk],
			       Tk * 4);
		}
	ret = vtpu_model_predict_tokens(m, (const uint32_t *const *)s->rows,
					padded, s->probs);
	if (ret)
		return ret;
	for (i = 0; i < cnt; i++) {
		struct beam_hyp *hyp = s->hyp + i * W, *nhyp = s->nhyp + i * W;
		uint32_t *ids = s->ids + (size_t)i * W * T;
		uint32_t *nids = s->nids + (size_t)i * W * T;

		k = 0;
		for (b = 0; b < W; b++) {
			const struct beam_hyp *h = &hyp[b];
			const float *p;

			if (!h->alive)
				continue;
			if (h->finished) {
				struct beam_cand c = {
					.rank = beam_rank(h->score, h->len,
							  s->alpha),
					.score = h->score, .beam = b,
					.carried = true,
				};

				beam_offer(s->best, W, &k, &c);
				continue;
			}
			p = s->probs + ((size_t)s->row[i * W + b] * T + t) * V;
			for (v = 0; v < V; v++) {
				/* not log 0 = -inf: the least float's */
				double lp = log(p[v] > 0 ? (double)p[v] :
						(double)FLT_TRUE_MIN);
				struct beam_cand c = {
					.score = h->score + lp, .beam = b,
					.id = v,
				};

				c.rank = beam_rank(c.score, t + 1, s->alpha);
				beam_offer(s->best, W, &k, &c);
			}
		}
		for (j = 0; j < W; j++) {
			const struct beam_cand *c = &s->best[j];
			struct beam_hyp *nh = &nhyp[j];

			if (j >= k) {
				nh->alive = false;
				continue;
			}
			memcpy(nids + (size_t)j * T, ids + (size_t)c->beam * T,
			       T * 4);
			*nh = hyp[c->beam];
			if (!c->carried) {
				nids[(size_t)j * T + t] = c->id;
				nh->score = c->score;
				nh->len = t + 1;
				nh->finished = c->id == VTPU_TOK_END;
			}
		}
	}
	{
		uint32_t *ti = s->ids;
		struct beam_hyp *th = s->hyp;

		s->ids = s->nids;
		s->nids = ti;
		s->hyp = s->nhyp;
		s->nhyp = th;
	}
	return 0;
}

static void beam_free(struct beam_search *s)
{
	int k;

	free(s->ids);
	free(s->nids);
	free(s->hyp);
	free(s->nhyp);
	free(s->best);
	free(s->row);
	free(s->probs);
	for (k = 0; k < VTPU_MAX_TOKEN_INPUTS; k++)
		free(s->rows[k]);
}

static int beam_alloc(struct beam_search *s)
{
	struct vtpu_model *m = s->m;
	uint64_t per = (uint64_t)s->W * s->T * s->V * 4;
	uint32_t G, R;
	int k;

	/* as many sentences at once as the probabilities' budget holds */
	G = per < BEAM_PROBS_BYTES ? (uint32_t)(BEAM_PROBS_BYTES / per) : 1;
	s->G = G;
	R = (G * s->W + m->batch - 1) / m->batch * m->batch;
	s->ids = calloc((size_t)G * s->W * s->T, 4);
	s->nids = calloc((size_t)G * s->W * s->T, 4);
	s->hyp = calloc((size_t)G * s->W, sizeof(*s->hyp));
	s->nhyp = calloc((size_t)G * s->W, sizeof(*s->nhyp));
	s->best = calloc(s->W, sizeof(*s->best));
	s->row = calloc((size_t)G * s->W, 4);
	s->probs = malloc((size_t)R * s->T * s->V * 4);
	for (k = 0; k < m->g->ntokens; k++)
		s->rows[k] = malloc((size_t)R *
				    m->g->nodes[m->g->tokens[k]].h * 4);
	for (k = 0; k < m->g->ntokens; k++)
		if (!s->rows[k])
			s->row = (free(s->row), NULL);
	if (!s->ids || !s->nids || !s->hyp || !s->nhyp || !s->best ||
	    !s->row || !s->probs)
		return fail(m, -ENOMEM, "out of memory for a beam of %u",
			    s->W);
	return 0;
}

/* Search sentences [first, first + cnt) and write their best out. */
static int beam_sentences(struct beam_search *s, uint32_t first,
			  uint32_t cnt, uint32_t *out, float *scores)
{
	uint32_t T = s->T, W = s->W, i, t;
	int ret = 0;

	memset(s->hyp, 0, (size_t)cnt * W * sizeof(*s->hyp));
	memset(s->ids, 0, (size_t)cnt * W * T * 4);
	for (i = 0; i < cnt; i++)	/* one empty hypothesis, not W */
		s->hyp[i * W].alive = true;
	for (t = 0; t < T && !ret; t++)
		ret = beam_step(s, first, cnt, t);
	if (ret < 0)
		return ret;
	/* each sentence's beam is sorted: its first is the best */
	for (i = 0; i < cnt; i++) {
		const struct beam_hyp *h = &s->hyp[i * W];
		uint32_t *o = out + (size_t)(first + i) * T;

		memcpy(o, s->ids + (size_t)i * W * T, h->len * 4);
		memset(o + h->len, 0, (T - h->len) * 4); /* VTPU_TOK_PAD */
		if (scores)
			scores[first + i] = (float)h->score;
	}
	return 0;
}

int vtpu_model_decode_beam_opts(struct vtpu_model *m, int target,
				const uint32_t *const *inputs, uint32_t n,
				const struct vtpu_beam_opts *opts,
				uint32_t *out, float *scores)
{
	struct vtpu_token_dataset ds = { .n = n };
	struct beam_search s = { .m = m, .inputs = inputs };
	uint32_t *zeros, first, cnt;
	int ret, k;

	if (!opts || opts->sz < offsetof(struct vtpu_beam_opts, alpha) +
					sizeof(float) ||
	    opts->sz > sizeof(*opts))
		return fail(m, -EINVAL,
			    "beam options: initialise them with VTPU_BEAM_OPTS()");
	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	if (m->g->ntokens > VTPU_MAX_TOKEN_INPUTS || !inputs || !out)
		return fail(m, -EINVAL, "beam search: no inputs or no output");
	s.slot = decode_slot(m, target);
	if (s.slot < 0)
		return s.slot;
	s.T = m->g->nodes[target].h;
	s.V = m->g->nodes[m->g->loss].c;
	s.W = opts->width;
	s.alpha = opts->alpha;
	if (!s.W || s.W > VTPU_BEAM_MAX_WIDTH || s.W > s.V)
		return fail(m, -EINVAL,
			    "beam width %u: 1 to %u (VTPU_BEAM_MAX_WIDTH and the output's %u classes)",
			    s.W, s.V < VTPU_BEAM_MAX_WIDTH ? s.V :
			    VTPU_BEAM_MAX_WIDTH, s.V);
	if (!isfinite(s.alpha) || s.alpha < 0)
		return fail(m, -EINVAL,
			    "length normalisation alpha %g: a finite number >= 0",
			    (double)s.alpha);
	/* the inputs checked once, @target's (not read) as padding */
	zeros = calloc((size_t)(n ?: 1) * s.T, 4);
	if (!zeros)
		return fail(m, -ENOMEM, "out of memory");
	for (k = 0; k < m->g->ntokens; k++)
		ds.inputs[k] = k == s.slot ? zeros : inputs[k];
	ret = check_tokens(m, &ds, false);
	free(zeros);
	if (ret)
		return ret;
	ret = beam_alloc(&s);
	for (first = 0; !ret && first < n; first += cnt) {
		cnt = n - first < s.G ? n - first : s.G;
		ret = beam_sentences(&s, first, cnt, out, scores);
	}
	beam_free(&s);
	return ret;
}

int vtpu_model_decode_beam(struct vtpu_model *m, int target,
			   const uint32_t *const *inputs, uint32_t n,
			   uint32_t width, uint32_t *out, float *scores)
{
	VTPU_BEAM_OPTS(opts, .width = width);

	return vtpu_model_decode_beam_opts(m, target, inputs, n, &opts, out,
					   scores);
}

/*
 * What fit() trains on: images (vtpu_model_fit()) or token inputs
 * (vtpu_model_fit_tokens()); the epochs are the same.
 */
struct feed {
	uint32_t n;
	const struct vtpu_dataset *train, *val;
	const struct vtpu_token_dataset *ttrain, *tval;
	const struct vtpu_augment *aug;
	/* streamed (vtpu_model_fit_stream()): no resident copy */
	struct vtpu_stream *stream;
	struct ring *ring;
	size_t isz;		/* bytes per image */
	uint32_t classes;	/* labels must be below */
};

/* ---- streamed input ------------------------------------------------------ */

/* One device buffer of the ring: a chunk of batches and its metrics. */
struct ring_slot {
	struct vtpu_bo images;	/* u8 [chunk * batch, h, w, c] */
	struct vtpu_bo labels;	/* u32 [chunk * batch] */
	struct vtpu_bo metrics;	/* the chunk's steps' loss and correct */
	struct vtpu_stream_req req;
	bool reading;		/* req started and not finished */
	int fence;		/* the job reading the slot, or -1 */
	uint32_t from, to;	/* its steps */
	uint32_t batch;		/* examples per step */
};

#define RING_MAX 64
#define RING_CHUNK_BYTES ((uint64_t)4 << 20)

struct ring {
	uint32_t k;		/* slots */
	uint32_t chunk;		/* full batches per slot */
	struct ring_slot slot[RING_MAX];
	uint8_t *tmp;		/* an image, for augmenting in place */
};

static void ring_free(struct vtpu_model *m, struct ring *rg)
{
	uint32_t i;

	if (!rg)
		return;
	for (i = 0; i < rg->k; i++) {
		vg_bo_destroy(&m->rt, &rg->slot[i].images);
		vg_bo_destroy(&m->rt, &rg->slot[i].labels);
		vg_bo_destroy(&m->rt, &rg->slot[i].metrics);
	}
	free(rg->tmp);
	free(rg);
}

/*
 * The ring: @k slots of @chunk batches (0: about RING_CHUNK_BYTES of
 * images, fewer if a quarter of the free device memory cannot hold them
 * or if the epoch would not go round the ring twice).
 */
static int ring_alloc(struct vtpu_model *m, struct feed *f, uint32_t k,
		      uint32_t chunk)
{
	uint64_t per_batch = (uint64_t)m->batch * (f->isz + 4), avail;
	uint64_t mstride = 0, steps = f->n / m->batch;
	struct prog_entry *e;
	struct ring *rg;
	uint32_t i;
	int ret = 0;

	e = get_prog(m, VG_PROG_TRAIN, m->batch, NULL, &ret);
	if (!e)
		return ret;
	mstride = e->prog.metrics_stride;
	if (!chunk) {
		avail = vg_mem_free(&m->rt) / 4 / k;
		chunk = (uint32_t)fmax(1, fmin(RING_CHUNK_BYTES, avail) /
						  per_batch);
		/* at least two turns of the ring per epoch, to overlap */
		if (chunk > steps / (2 * k))
			chunk = (uint32_t)(steps / (2 * k) ?: 1);
	}
	rg = calloc(1, sizeof(*rg));
	if (!rg || !(rg->tmp = malloc(f->isz))) {
		free(rg);
		return fail(m, -ENOMEM, "out of memory");
	}
	rg->k = k;
	rg->chunk = chunk;
	for (i = 0; i < k; i++) {
		struct ring_slot *sl = &rg->slot[i];

		sl->fence = -1;
		/* a slot also holds the remainder batch: fewer bytes */
		ret = vg_bo_create(&m->rt, (uint64_t)chunk * m->batch * f->isz,
				   &sl->images);
		if (!ret)
			ret = vg_bo_create(&m->rt,
					   (uint64_t)chunk * m->batch * 4,
					   &sl->labels);
		if (!ret)
			ret = vg_bo_create(&m->rt,
					   fmax(chunk * mstride, 4096),
					   &sl->metrics);
		if (ret) {
			ring_free(m, rg);
			return fail(m, ret,
				    "a ring of %u buffers of %u batches in device memory: %s",
				    k, chunk, strerror(-ret));
		}
	}
	f->ring = rg;
	return 0;
}

/* Chunk @c's steps: [@c * chunk, this) of the pass's @steps. */
static uint32_t chunk_end(const struct ring *rg, uint32_t c, uint32_t steps)
{
	uint64_t end = (uint64_t)(c + 1) * rg->chunk;

	return end < steps ? (uint32_t)end : steps;
}

/* Start decoding the chunk of steps [@from, @to) (+ @rem) into @sl. */
static int slot_start(struct vtpu_model *m, const struct feed *f,
		      struct ring_slot *sl, const uint32_t *perm,
		      uint32_t from, uint32_t to, uint32_t rem, struct pass *p)
{
	uint32_t count = rem ? rem : (to - from) * m->batch;
	double t0 = now_s();
	int ret;

	sl->from = from;
	sl->to = to;
	sl->batch = rem ? rem : m->batch;
	/* a source with its cache full copies the examples right here */
	ret = vtpu__stream_start(f->stream, &sl->req,
				 perm + (size_t)from * m->batch, count,
				 sl->images.map, sl->labels.map);
	p->fill_s += now_s() - t0;
	if (ret)
		return fail(m, ret, "streamed input: %s", strerror(-ret));
	sl->reading = true;
	return 0;
}

/* Wait for @sl's examples; augment them; check their labels. */
static int slot_finish(struct vtpu_model *m, const struct feed *f,
		       struct ring_slot *sl, struct pass *p)
{
	const uint32_t *lab = sl->labels.map;
	uint8_t *img = sl->images.map;
	double t0 = now_s(), t1;
	uint32_t i;
	int ret;

	sl->reading = false;
	ret = vtpu__stream_finish(f->stream, &sl->req, &p->skipped);
	t1 = now_s();
	p->input_wait_s += t1 - t0;
	if (ret)
		return fail(m, ret,
			    "streamed input: steps %u..%u: no example could be decoded",
			    sl->from, sl->to);
	for (i = 0; i < sl->req.count; i++) {
		if (lab[i] >= f->classes)
			return fail(m, -EINVAL,
				    "label %u of a streamed example is not below %u classes",
				    lab[i], f->classes);
		if (!f->aug)
			continue;
		memcpy(f->ring->tmp, img + i * f->isz, f->isz);
		vtpu_image_augment(img + i * f->isz, f->ring->tmp,
				   m->g->nodes[m->g->input].h,
				   m->g->nodes[m->g->input].w,
				   m->g->nodes[m->g->input].c, f->aug, &m->rng);
	}
	p->fill_s += now_s() - t1;
	return 0;
}

/* Wait for the job reading @sl and count its steps. */
static int slot_wait(struct vtpu_model *m, struct ring_slot *sl,
		     struct pass *p, uint32_t stride)
{
	double t0;
	int ret;

	if (sl->fence < 0)
		return 0;
	t0 = now_s();
	ret = vg_wait(&m->rt, sl->fence);
	p->fence_wait_s += now_s() - t0;
	sl->fence = -1;
	if (!ret)
		collect(p, sl->metrics.map, sl->from,
			sl->to + (sl->batch != m->batch), stride, sl->batch);
	return ret;
}

/*
 * One streamed pass: run_pass() with the set in a ring. Chunk c is the
 * steps [c * chunk, (c + 1) * chunk), the remainder batch a chunk of its
 * own; chunk c goes to slot c % k. While the device runs chunk c, chunks
 * c + 1 .. c + k - 1 are decoded into the other slots: after chunk c is
 * submitted, the job of chunk c - 1 is waited for and its slot refilled
 * with chunk c + k - 1. The cpu backend runs a job before vg_run() returns
 * (no fence): the decoding threads overlap it all the same.
 */
static int run_stream_pass(struct vtpu_model *m, struct pass *p,
			   const struct feed *f, const uint32_t *perm)
{
	struct ring *rg = f->ring;
	struct prog_entry *full, *part, *e;
	struct vtpu_bo *bufs[VG_NBUFS];
	uint64_t strides[VG_NBUFS] = { 0 };
	uint32_t c, nfull, nchunks, k = rg->k, stride, i;
	char why[256] = "";
	int ret, r;

	ret = pass_progs(m, p, &full, &part);
	if (ret)
		return ret;
	stride = full ? full->prog.metrics_stride : 0;
	nfull = (p->steps + rg->chunk - 1) / rg->chunk;
	nchunks = nfull + !!p->rem;
	bufs[VG_BUF_STATE] = &m->state;

	for (c = 0; c < nchunks && c < k - 1 && !ret; c++)
		ret = c < nfull ?
		      slot_start(m, f, &rg->slot[c], perm, c * rg->chunk,
				 chunk_end(rg, c, p->steps), 0, p) :
		      slot_start(m, f, &rg->slot[c], perm, p->steps, p->steps,
				 p->rem, p);
	for (c = 0; c < nchunks && !ret; c++) {
		struct ring_slot *sl = &rg->slot[c % k], *nx;
		uint32_t n = c < nfull ? sl->to - sl->from : 1;
		uint32_t next = c + k - 1;

		ret = slot_finish(m, f, sl, p);
		if (ret)
			break;
		e = c < nfull ? full : part;
		bufs[VG_BUF_IMAGES] = &sl->images;
		bufs[VG_BUF_LABELS] = &sl->labels;
		bufs[VG_BUF_METRICS] = &sl->metrics;
		bufs[VG_BUF_WORK] = &e->work;
		strides[VG_BUF_IMAGES] = p->in_stride;
		strides[VG_BUF_LABELS] = p->lab_stride;
		strides[VG_BUF_METRICS] = e->prog.metrics_stride;
		ret = vg_run(&m->rt, &e->prog, bufs, strides, 0, n, &sl->fence,
			     why, sizeof(why));
		if (ret) {
			ret = pass_failed(m, p, ret, why);
			break;
		}
		if (sl->fence < 0)
			collect(p, sl->metrics.map, sl->from, sl->from + n,
				stride, sl->batch);
		if (next >= nchunks)
			continue;
		/* the slot of chunk c - 1: free once its job has signalled */
		nx = &rg->slot[next % k];
		ret = slot_wait(m, nx, p, stride);
		if (ret) {
			ret = pass_failed(m, p, ret, "");
			break;
		}
		ret = next < nfull ?
		      slot_start(m, f, nx, perm, next * rg->chunk,
				 chunk_end(rg, next, p->steps), 0, p) :
		      slot_start(m, f, nx, perm, p->steps, p->steps, p->rem,
				 p);
	}
	/* the jobs still running, in order; then what is still decoding */
	for (c = nchunks > k ? nchunks - k : 0; c < nchunks; c++) {
		r = slot_wait(m, &rg->slot[c % k], p, stride);
		if (r && !ret)
			ret = pass_failed(m, p, r, "");
	}
	for (i = 0; i < k; i++)
		if (rg->slot[i].reading) {
			rg->slot[i].reading = false;
			vtpu__stream_finish(f->stream, &rg->slot[i].req, NULL);
		}
	return ret;
}

/* The training set's device copy, in the order @perm (NULL: as it is). */
static int feed_fill(struct vtpu_model *m, const struct feed *f,
		     const uint32_t *perm)
{
	if (f->stream)
		return 0;	/* the pass decodes as it goes */
	if (f->ttrain)
		return tokset_fill(m, &m->train, f->ttrain, perm,
				   VG_PROG_TRAIN, !!perm);
	devset_fill(&m->train, f->train, perm, f->aug, &m->rng);
	return 0;
}

static void feed_pass(struct vtpu_model *m, const struct feed *f,
		      struct pass *p, uint32_t max_steps)
{
	if (f->ttrain) {	/* for the progress bar's count */
		memset(p, 0, sizeof(*p));
		p->steps = f->n / m->batch;
		p->rem = f->n % m->batch;
		if (max_steps && p->steps + !!p->rem > max_steps) {
			p->steps = max_steps;
			p->rem = 0;
		}
	} else {
		pass_init(m, p, VG_PROG_TRAIN, f->stream ? NULL : &m->train,
			  f->n, f->isz, max_steps);
	}
}

/*
 * One epoch's steps: resident or streamed images, or token sets batch by
 * batch, in their buckets.
 */
static int feed_run(struct vtpu_model *m, const struct feed *f,
		    struct pass *p, uint32_t max_steps, const uint32_t *perm)
{
	struct tokpass tp;
	int ret;

	if (!f->ttrain)
		return f->stream ? run_stream_pass(m, p, f, perm) :
				   run_pass(m, p);
	tokpass_init(m, &tp, VG_PROG_TRAIN, &m->train, max_steps);
	tp.progress = p->progress;
	ret = run_tokpass(m, &tp);
	p->done = tp.done;
	p->loss_sum = tp.loss_sum;
	p->correct = tp.correct;
	p->seen = tp.seen;
	return ret;
}

static int feed_validate(struct vtpu_model *m, const struct feed *f,
			 double *loss, double *acc)
{
	if (f->tval)
		return vtpu_model_evaluate_tokens(m, f->tval, loss, acc);
	return vtpu_model_evaluate(m, f->val, loss, acc);
}

/* The options' fields a caller built with an older, smaller struct lacks. */
#define FIT_OPT(opts, field, def)                                             \
	((opts)->sz >= offsetof(struct vtpu_fit_opts, field) +                \
				sizeof((opts)->field) ?                       \
		 (opts)->field :                                              \
		 (def))

static int fit_epochs(struct vtpu_model *m, const struct feed *f,
		      const struct vtpu_fit_opts *opts)
{
	float (*lr_schedule)(void *, uint32_t, uint32_t, float) =
		FIT_OPT(opts, lr_schedule, NULL);
	uint32_t val_freq = FIT_OPT(opts, validation_freq, 0) ?: 1;
	struct vtpu_progress *progress = NULL;
	struct vtpu__stream_counters c0, c1;
	struct vtpu_epoch_stats st;
	uint32_t *perm, epochs, e, i;
	bool validate;
	struct pass p;
	double t0;
	int ret = 0;

	perm = malloc((size_t)f->n * sizeof(*perm));
	if (!perm)
		return fail(m, -ENOMEM, "out of memory");
	/* a streamed pass reads its order from perm: the identity at first */
	for (i = 0; i < f->n; i++)
		perm[i] = i;
	epochs = opts->epochs ?: 1;
	feed_pass(m, f, &p, opts->max_steps);
	if (opts->progress) {
		progress = vtpu_progress_create(opts->progress,
						p.steps + !!p.rem, NULL);
		if (!progress) {
			free(perm);
			return fail(m, -ENOMEM, "out of memory");
		}
	}

	__atomic_store_n(&m->stop, false, __ATOMIC_RELAXED);
	for (e = 1; e <= epochs; e++) {
		if (lr_schedule) {
			ret = vtpu_model_set_learning_rate(m,
				lr_schedule(opts->ctx, e, epochs, m->opt.lr));
			if (ret)
				break;
		}
		if (!opts->no_shuffle)
			vtpu_permutation(perm, f->n, &m->rng);
		ret = feed_fill(m, f, opts->no_shuffle ? NULL : perm);
		if (ret)
			break;
		feed_pass(m, f, &p, opts->max_steps);
		p.progress = progress;
		if (progress)
			vtpu_progress_start(progress, e, epochs);
		if (f->stream)
			vtpu__stream_counters(f->stream, &c0);
		t0 = now_s();
		ret = feed_run(m, f, &p, opts->max_steps, perm);
		if (ret)
			break;
		memset(&st, 0, sizeof(st));
		st.skipped = p.skipped;
		st.streamed = f->stream != NULL;
		if (f->stream) {
			vtpu__stream_counters(f->stream, &c1);
			st.input_wait_s = p.input_wait_s;
			st.fence_wait_s = p.fence_wait_s;
			st.fill_s = p.fill_s;
			st.decode_s = (c1.decode_ns - c0.decode_ns) * 1e-9;
			st.decoded = (uint32_t)(c1.decoded - c0.decoded);
			st.cached = (uint32_t)(c1.cached - c0.cached);
		}
		st.epoch = e;
		st.steps = p.done;
		st.seconds = now_s() - t0;
		st.ms_per_step = st.seconds * 1e3 / (p.done ?: 1);
		st.loss = p.seen ? p.loss_sum / p.seen : 0;
		st.acc = p.seen ? (double)p.correct / p.seen : 0;
		st.val_loss = NAN;
		st.val_acc = NAN;
		validate = (f->val || f->tval) &&
			   (e % val_freq == 0 || e == epochs);
		if (validate) {
			ret = feed_validate(m, f, &st.val_loss, &st.val_acc);
			if (ret)
				break;
		}
		if (progress) {
			struct vtpu_metric extra[2] = {
				{ "val_loss", st.val_loss },
				{ "val_acc", st.val_acc },
			};

			vtpu_progress_end(progress, extra, validate ? 2 : 0);
			if (p.skipped)
				fprintf(opts->progress,
					"%u example(s) skipped this epoch: corrupt or unreadable files, each replaced by a good example\n",
					p.skipped);
		}
		if (opts->on_epoch)
			opts->on_epoch(opts->ctx, &st);
		if (__atomic_load_n(&m->stop, __ATOMIC_RELAXED))
			break;
	}
	vtpu_progress_destroy(progress);
	free(perm);
	return ret;
}

/* The options (NULL: the defaults): is their size and the model fit? */
static int fit_check(struct vtpu_model *m, const struct vtpu_fit_opts **opts)
{
	static const struct vtpu_fit_opts def = { .sz = sizeof(def) };

	if (!*opts)
		*opts = &def;
	if ((*opts)->sz < offsetof(struct vtpu_fit_opts, ctx) + sizeof(void *) ||
	    (*opts)->sz > sizeof(**opts))
		return fail(m, -EINVAL, "fit options: bad size");
	if (!m->compiled)
		return fail(m, -EINVAL, "the model is not compiled");
	return 0;
}

/* The options' augmentation, if any, checked against @h x @w images. */
static int fit_augment(struct vtpu_model *m, const struct vtpu_fit_opts *opts,
		       uint32_t h, uint32_t w, struct feed *f)
{
	const struct vtpu_augment *aug = NULL;

	if (opts->sz >= offsetof(struct vtpu_fit_opts, augment) +
				sizeof(opts->augment))
		aug = &opts->augment;
	if (aug && (aug->flip || aug->shift)) {
		f->aug = aug;
		if (aug->shift >= h || aug->shift >= w)
			return fail(m, -EINVAL,
				    "augment: a shift of %u pixels is not smaller than the %ux%u images",
				    aug->shift, h, w);
	}
	return 0;
}

/* fit_epochs() on @f->stream through a ring of device buffers. */
static int fit_streamed(struct vtpu_model *m, struct feed *f,
			const struct vtpu_fit_opts *opts)
{
	uint32_t k = FIT_OPT(opts, stream_ring, 0) ?: 3;
	int ret;

	if (k < 3 || k > RING_MAX)
		return fail(m, -EINVAL,
			    "stream_ring %u: the ring needs 3..%u buffers", k,
			    RING_MAX);
	/* the resident copy of an earlier fit would only take memory */
	devset_free(m, &m->train);
	ret = ring_alloc(m, f, k, FIT_OPT(opts, stream_chunk, 0));
	if (ret)
		return ret;
	ret = fit_epochs(m, f, opts);
	ring_free(m, f->ring);
	f->ring = NULL;
	return ret;
}

/*
 * Across ranks, at fit()'s start: every rank trains on as many examples
 * of one size for as many epochs (so they run as many steps), from rank
 * 0's weights and optimizer state.
 */
static int dist_fit_start(struct vtpu_model *m, const struct feed *f,
			  const struct vtpu_fit_opts *opts)
{
	static const char *const names[] = {
		"training examples", "bytes per example", "epochs",
		"augmentation (flip, shift)", "steps per epoch at most",
		"no shuffling",
	};
	uint64_t v[] = {
		f->n, f->isz, opts->epochs ?: 1,
		f->aug ? (uint64_t)f->aug->flip << 32 | f->aug->shift : 0,
		FIT_OPT(opts, max_steps, 0), opts->no_shuffle,
	};
	char err[sizeof(m->err)];
	int ret;

	ret = vd_agree(v, 6, names, "training set", err, sizeof(err)) ?:
	      vd_bcast(m->state.map, m->sl.bytes,
		       "the broadcast of rank 0's weights", err, sizeof(err));
	return ret ? fail(m, ret, "%s", err) : 0;
}

/* Would @bytes more fit the device's memory, with @s freed first? */
static bool fits(struct vtpu_model *m, uint64_t bytes, const struct devset *s)
{
	uint64_t avail = vg_mem_free(&m->rt);

	if (avail == UINT64_MAX)
		return true;
	return bytes <= avail + s->images.size + s->labels.size;
}

int vtpu_model_fit(struct vtpu_model *m, const struct vtpu_dataset *train,
		   const struct vtpu_fit_opts *opts)
{
	struct feed f = { .n = train->n, .train = train };
	uint64_t need;
	int ret;

	ret = fit_check(m, &opts) ?: check_set(m, train);
	f.val = ret ? NULL : opts->validation;
	if (!ret && f.val)
		ret = check_set(m, f.val);
	if (ret)
		return ret;
	f.classes = m->g->nodes[m->g->loss].c;
	for (uint32_t i = 0; i < train->n; i++)
		if (train->labels[i] >= f.classes)
			return fail(m, -EINVAL,
				    "label %u of example %u is not below %u classes",
				    train->labels[i], i, f.classes);
	ret = fit_augment(m, opts, train->height, train->width, &f);
	if (ret)
		return ret;
	f.isz = vtpu_dataset_image_size(train);
	need = (uint64_t)train->n * (f.isz + 4);
	if (m->rep && train->n < m->batch)
		return fail(m, -EINVAL,
			    "%u examples: not one global batch of %u for the replicas",
			    train->n, m->batch);
	if (m->rep && FIT_OPT(opts, stream, false))
		return fail(m, -EINVAL,
			    "replicas: streamed input is not supported yet");
	if (m->rep && m->train.n != train->n && !fits(m, need, &m->train))
		return fail(m, -ENOSPC,
			    "replicas: the training set does not fit in %s's memory (streaming is not supported yet)",
			    m->rt.name);
	if (m->dsize > 1) {
		ret = dist_fit_start(m, &f, opts);
		if (ret)
			return ret;
	}
	replicas_sync(m);
	if (FIT_OPT(opts, stream, false) ||
	    (m->train.n != train->n && !fits(m, need, &m->train))) {
		f.stream = vtpu_stream_from_dataset(train);
		if (!f.stream)
			return fail(m, -errno, "streamed input: %s",
				    strerror(errno));
		ret = fit_streamed(m, &f, opts);
		vtpu_stream_close(f.stream);
		return ret;
	}
	if (m->train.n != train->n) {
		devset_free(m, &m->train);
		ret = devset_alloc(m, &m->train, train->n, f.isz);
		if (ret)
			return ret;
	}
	return fit_epochs(m, &f, opts);
}

int vtpu_model_fit_stream(struct vtpu_model *m, struct vtpu_stream *train,
			  const struct vtpu_fit_opts *opts)
{
	struct feed f = { .stream = train };
	struct vtpu_stream_info si;
	struct vtpu_dataset view;
	int ret;

	if (m->rep)
		return fail(m, -EINVAL,
			    "replicas: streamed input is not supported yet");
	if (vtpu_stream_get_info(train, &si))
		return fail(m, -EINVAL, "no streamed source");
	view = (struct vtpu_dataset){
		.n = si.n, .height = si.height, .width = si.width,
		.channels = si.channels,
	};
	ret = fit_check(m, &opts) ?: check_set(m, &view);
	f.val = ret ? NULL : opts->validation;
	if (!ret && f.val)
		ret = check_set(m, f.val);
	if (!ret)
		ret = fit_augment(m, opts, si.height, si.width, &f);
	if (ret)
		return ret;
	f.n = si.n;
	f.isz = vtpu_dataset_image_size(&view);
	f.classes = m->g->nodes[m->g->loss].c;
	if (si.classes > f.classes)
		return fail(m, -EINVAL,
			    "the source has %u classes, the model %u",
			    si.classes, f.classes);
	return fit_streamed(m, &f, opts);
}

int vtpu_model_fit_tokens(struct vtpu_model *m,
			  const struct vtpu_token_dataset *train,
			  const struct vtpu_fit_opts *opts)
{
	struct feed f = { .n = train->n, .ttrain = train };
	int ret;

	ret = fit_check(m, &opts) ?: check_tokens(m, train, true);
	f.tval = ret ? NULL : FIT_OPT(opts, token_validation, NULL);
	if (f.tval)
		ret = check_tokens(m, f.tval, true);
	if (!ret)
		ret = tokset_alloc(m, &m->train, train->n);
	if (ret)
		return ret;
	return fit_epochs(m, &f, opts);
}

/* ---- checkpoints ---------------------------------------------------------- */

/* Every tensor of the state buffer, named; returns how many. */
static size_t state_tensors(struct vtpu_model *m, struct vtpu_ckpt_tensor *t,
			    char (*names)[96], const struct vg_param **of)
{
	const char *slot[3] = { NULL, "m", "v" };
	uint64_t base[3] = { m->sl.params, m->sl.mom, m->sl.vel };
	int kinds = m->opt.kind == VTPU_OPT_ADAM ? 3 : 2;
	size_t n = 0;
	int i, k;

	if (m->opt.kind != VTPU_OPT_ADAM)
		slot[1] = "momentum";
	for (k = 0; k < kinds; k++)
		for (i = 0; i < m->g->nparams; i++) {
			const struct vg_param *pr = &m->g->params[i];

			if (slot[k])
				snprintf(names[n], sizeof(names[n]),
					 "optimizer/%s/%s", pr->name, slot[k]);
			else
				snprintf(names[n], sizeof(names[n]), "%s",
					 pr->name);
			t[n].name = names[n];
			t[n].ndim = pr->ndim;
			memcpy(t[n].dims, pr->dims, sizeof(pr->dims));
			t[n].data = (float *)((char *)m->state.map + base[k]) +
				    pr->offset;
			of[n] = pr;
			n++;
		}
	if (m->g->ndropout) {
		snprintf(names[n], sizeof(names[n]), "dropout/step");
		t[n].name = names[n];
		t[n].ndim = 1;
		t[n].dims[0] = 1;
		t[n].data = (float *)((char *)m->state.map + m->sl.step);
		n++;
	}
	if (m->opt.kind == VTPU_OPT_ADAM) {
		snprintf(names[n], sizeof(names[n]), "optimizer/adam_state");
		t[n].name = names[n];
		t[n].ndim = 1;
		t[n].dims[0] = 2;
		t[n].data = (float *)((char *)m->state.map + m->sl.adam_state);
		n++;
	}
	return n;
}

/*
 * Files hold every tensor row-major, whatever the layout the backend keeps
 * it in: a tensor in panels goes through a row-major copy, converted after
 * the whole file has loaded (a bad file changes nothing).
 */
static int checkpoint(struct vtpu_model *m, const char *path, bool save,
		      const struct vtpu_ckpt_meta *meta, size_t nmeta)
{
	size_t max = 3 * (size_t)m->g->nparams + 2, n, i;
	struct vtpu_ckpt_tensor *t = calloc(max, sizeof(*t));
	char (*names)[96] = calloc(max, sizeof(*names));
	const struct vg_param **of = calloc(max, sizeof(*of));
	float **stored = calloc(max, sizeof(*stored));
	int ret = 0;

	if (!m->compiled)
		ret = fail(m, -EINVAL, "the model is not compiled");
	else if (!t || !names || !of || !stored)
		ret = fail(m, -ENOMEM, "out of memory");
	n = ret ? 0 : state_tensors(m, t, names, of);
	for (i = 0; i < n && !ret; i++) {
		float *rows;

		if (!of[i] || !of[i]->panels)
			continue;
		rows = malloc(of[i]->count * sizeof(float));
		if (!rows) {
			ret = fail(m, -ENOMEM, "out of memory");
			break;
		}
		if (save)
			vg_param_convert(of[i], t[i].data, rows, true);
		stored[i] = t[i].data;
		t[i].data = rows;
	}
	if (!ret)
		ret = save ? vtpu_ckpt_save_meta(path, t, n, meta, nmeta,
						 m->err, sizeof(m->err)) :
			     vtpu_ckpt_load_meta(path, t, n, meta, nmeta,
						 m->err, sizeof(m->err));
	for (i = 0; i < n; i++) {
		if (!stored[i])
			continue;
		if (!ret && !save)
			vg_param_convert(of[i], t[i].data, stored[i], false);
		free(t[i].data);
	}
	free(t);
	free(names);
	free(of);
	free(stored);
	return ret;
}

int vtpu_model_save(struct vtpu_model *m, const char *path)
{
	return checkpoint(m, path, true, NULL, 0);
}

int vtpu_model_load(struct vtpu_model *m, const char *path)
{
	return checkpoint(m, path, false, NULL, 0);
}

int vtpu_model_save_meta(struct vtpu_model *m, const char *path,
			 const struct vtpu_ckpt_meta *meta, size_t nmeta)
{
	return checkpoint(m, path, true, meta, nmeta);
}

int vtpu_model_load_meta(struct vtpu_model *m, const char *path,
			 const struct vtpu_ckpt_meta *meta, size_t nmeta)
{
	return checkpoint(m, path, false, meta, nmeta);
}
