// SPDX-License-Identifier: MIT
/*
 * vtpu-bench train: training steps per second of the example models, and
 * of three held-out ones the engine was not tuned for (a LeNet-5 style
 * CNN, a wide MLP, a VGG-style CNN on 64x64 images), on the cpu backend
 * with the engine's GEMM (the exact code the kernel runs), with OpenBLAS's
 * GEMM, and in PyTorch, on the same threads.
 *
 *   vtpu-bench train [--threads N] [--json] [--reps R] [--device PATH]
 *                    [--models LIST] [--batches LIST] [--no-pytorch]
 *                    [--replicas N [--devices LIST|all]]
 *
 * For each model and batch size the backends take turns (bench_compare),
 * each rep about a second of steps, and the medians are shown with
 * ms/step, s/epoch (60000 images, 50000 for cifar10) and the ratio to
 * PyTorch, and beside it the range of the reps' ratios (each rep's
 * against PyTorch's rep that ran next to it): how much the ratio moves
 * on this machine. Each row also gives the step's FLOPs (3 x the forward
 * pass's, which is 2 x the multiply-adds of the conv and dense layers:
 * the backward pass computes two products, the input's and the weights'
 * gradients, for every forward one) and what share of the machine's peak
 * the step reaches: GFLOP/step / step time / the peak FMA throughput the
 * bench measures first on the same threads at the engine's SIMD level
 * (tools/bench_peak.c), printed in the header. The data is synthetic (random pixels and labels,
 * resident in memory as fit() keeps it): steps cost the same whatever
 * the pixels.
 *
 * PyTorch is Debian's python3-torch, driven through
 * tools/bench_train_pytorch.py over a pipe so that it too takes turns,
 * in two configurations: "pytorch", the best one found on these machines
 * (that script's docstring says what and why), and "pytorch-default", as
 * installed, labelled. The ratios are against the faster of the two for
 * each model and batch (marked * in the table, "vs_pytorch_backend" in
 * JSON): the best configuration found is not the best for every model at
 * every thread count (one thread: the translation model's, by 10%), and a
 * ratio against the slower PyTorch would flatter the engine.
 * Without it (not installed, or an interpreter that cannot import it or
 * does not answer), the bench runs the other backends, says why on
 * stderr and "pytorch":false in its JSON header. $VTPU_BENCH_PYTHON
 * names the interpreter (default /usr/bin/python3, Debian's, whatever
 * python3 is first on PATH), $VTPU_BENCH_PYTORCH_TIMEOUT how many seconds
 * it may take to import torch (default 120).
 * With --device, the models also train through that device ("device").
 *
 * With --replicas N the rows are data parallelism's instead
 * (bench_replicas()): N replicas against one, the same global batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "vtpu_model.h"

#define TARGET_S 1.0
#define MAX_BACKENDS 3		/* engine, openblas, device */
#define TORCH_CONFIGS 2		/* pytorch (the best), pytorch-default */

/*
 * A model being built, and the multiply-adds of its forward pass per
 * image, counted as it is built: a convolution's output pixels times its
 * kernel's weights, a dense layer's weights (pooling, activations, the
 * loss and the optimizer count nothing).
 */
struct net {
	struct vtpu_model *m;
	uint32_t h, w, c;
	double macs;
};

/*
 * An image model (@build), or the translation model of examples/translate
 * (@build NULL), timed training or (@decode) greedily decoding a batch.
 */
struct model_def {
	const char *name;
	uint32_t h, w, c;
	uint32_t classes;
	uint32_t epoch_images;
	void (*build)(struct net *nt);
	bool decode;
};

static void net_conv(struct net *nt, uint32_t filters, uint32_t k,
		     enum vtpu_padding pad, enum vtpu_activation act)
{
	vtpu_model_add_conv2d(nt->m, filters, k, k, pad, act);
	if (pad == VTPU_PAD_VALID) {
		nt->h -= k - 1;
		nt->w -= k - 1;
	}
	nt->macs += (double)nt->h * nt->w * k * k * nt->c * filters;
	nt->c = filters;
}

static void net_pool(struct net *nt, uint32_t k)
{
	vtpu_model_add_maxpool(nt->m, k, k);
	nt->h /= k;
	nt->w /= k;
}

static void net_flatten(struct net *nt)
{
	vtpu_model_add_flatten(nt->m);
	nt->c *= nt->h * nt->w;
	nt->h = 1;
	nt->w = 1;
}

static void net_dense(struct net *nt, uint32_t units,
		      enum vtpu_activation act)
{
	vtpu_model_add_dense(nt->m, units, act);
	nt->macs += (double)nt->c * units;
	nt->c = units;
}

static void build_mnist(struct net *nt)
{
	net_flatten(nt);
	net_dense(nt, 512, VTPU_ACT_RELU);
	net_dense(nt, 512, VTPU_ACT_RELU);
	net_dense(nt, 10, VTPU_ACT_SOFTMAX);
}

static void build_fashion(struct net *nt)
{
	net_conv(nt, 64, 3, VTPU_PAD_VALID, VTPU_ACT_NONE);
	net_pool(nt, 2);
	vtpu_model_add_relu(nt->m);
	net_flatten(nt);
	net_dense(nt, 10, VTPU_ACT_SOFTMAX);
}

static void build_cifar(struct net *nt)
{
	net_conv(nt, 32, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	net_conv(nt, 32, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	net_pool(nt, 2);
	net_conv(nt, 64, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	net_conv(nt, 64, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	net_pool(nt, 2);
	net_flatten(nt);
	net_dense(nt, 512, VTPU_ACT_RELU);
	net_dense(nt, 10, VTPU_ACT_SOFTMAX);
}

/* Held out: built as their users would, never tuned for. */
static void build_lenet5(struct net *nt)
{
	net_conv(nt, 6, 5, VTPU_PAD_VALID, VTPU_ACT_RELU);
	net_pool(nt, 2);
	net_conv(nt, 16, 5, VTPU_PAD_VALID, VTPU_ACT_RELU);
	net_pool(nt, 2);
	net_flatten(nt);
	net_dense(nt, 120, VTPU_ACT_RELU);
	net_dense(nt, 84, VTPU_ACT_RELU);
	net_dense(nt, 10, VTPU_ACT_SOFTMAX);
}

static void build_mlp_wide(struct net *nt)
{
	net_flatten(nt);
	net_dense(nt, 2048, VTPU_ACT_RELU);
	net_dense(nt, 2048, VTPU_ACT_RELU);
	net_dense(nt, 10, VTPU_ACT_SOFTMAX);
}

/*
 * Issue 27's networks at 64x64x3, 5 classes: libvtpu's vtpu_app_resnet()
 * and vtpu_app_xception() at their default width (32), and vtpu_app_vgg()
 * at width 64 (issue 33's VGG-style CNN: convolutions of 64, 64, 128, 128
 * and 256 filters, dense 256), built on the model's graph; the
 * multiply-adds counted layer by layer as they build.
 */
#define APP_W 32
#define VGG_W 64

static void app_output(struct net *nt, int out)
{
	if (out < 0 || vtpu_model_set_output(nt->m, out))
		fprintf(stderr, "vtpu-bench: building the network: %s\n",
			out < 0 ? strerror(-out) : vtpu_model_error(nt->m));
}

static void build_vgg64(struct net *nt)
{
	VTPU_APP_OPTS(o, .width = VGG_W);
	double s = nt->h, cin = nt->c, mac = 0;
	uint32_t i;

	app_output(nt, vtpu_app_vgg(vtpu_model_graph(nt->m), 0, 5, &o));
	for (i = 0; i < 5; i++) {
		double cout = VGG_W << (i / 2);

		mac += s * s * 9 * cin * cout;
		cin = cout;
		if (i & 1 || i == 4)
			s /= 2;
	}
	nt->macs = mac + s * s * cin * 4 * VGG_W + 4 * VGG_W * 5;
}

static void build_resnet64(struct net *nt)
{
	double s = nt->h / 4, cin = APP_W, mac;	/* after the stem and pool */
	uint32_t i;

	app_output(nt, vtpu_app_resnet(vtpu_model_graph(nt->m), 0, 5, NULL));
	mac = (double)(nt->h / 2) * (nt->w / 2) * 49 * nt->c * APP_W;
	for (i = 0; i < 4; i++) {
		double cout = APP_W << i;

		if (i)
			s /= 2;
		mac += s * s * (9 * cin * cout + 27 * cout * cout);
		if (i)
			mac += s * s * cin * cout;
		cin = cout;
	}
	nt->macs = mac + cin * 5;
}

static void build_xception64(struct net *nt)
{
	double s = nt->h / 2, cin = APP_W, mac, size;
	uint32_t i;

	app_output(nt, vtpu_app_xception(vtpu_model_graph(nt->m), 0, 5, NULL));
	mac = s * s * 9 * nt->c * APP_W;
	for (i = 1; i <= 3; i++) {
		size = APP_W << i;
		mac += s * s * (9 * cin + cin * size + 9 * size + size * size);
		s /= 2;
		mac += s * s * cin * size;
		cin = size;
	}
	size = 12 * APP_W;
	nt->macs = mac + s * s * (9 * cin + cin * size) + size * 5;
}

/*
 * translate: examples/translate's encoder-decoder with Luong attention at
 * the sizes of tools/bench_train_pytorch.py's (TS, TT, VS, VT, E, H, A),
 * on synthetic sentences made as that script makes them.
 */
#define TR_TS 24
#define TR_TT 12
#define TR_VS 48
#define TR_VT 16
#define TR_E 32
#define TR_H 128
#define TR_A 128

/* Its graph; @tgt: the decoder's input. Forward multiply-adds per example. */
static struct vtpu_model *build_translate(int *tgt, double *macs)
{
	struct vtpu_graph *g = vtpu_graph_create();
	struct vtpu_lstm_nodes enc = { -1, -1, -1 }, dec = { -1, -1, -1 };
	struct vtpu_model *m;
	int src, x, att;

	if (!g)
		return NULL;
	src = vtpu_graph_tokens(g, TR_TS);
	*tgt = vtpu_graph_tokens(g, TR_TT);
	x = vtpu_graph_embedding(g, src, TR_VS, TR_E);
	vtpu_graph_lstm(g, x, TR_H, -1, -1, &enc);
	x = vtpu_graph_embedding(g, *tgt, TR_VT, TR_E);
	vtpu_graph_lstm(g, x, TR_H, enc.h, enc.c, &dec);
	att = vtpu_graph_attention(g, dec.seq, enc.seq, src);
	x = vtpu_graph_concat(g, att, dec.seq);
	x = vtpu_graph_dense(g, x, TR_A, VTPU_ACT_TANH);
	x = vtpu_graph_dense(g, x, TR_VT, VTPU_ACT_NONE);
	m = vtpu_graph_loss(g, x) < 0 ? NULL : vtpu_model_create_graph(g);
	if (!m) {
		vtpu_graph_destroy(g);
		return NULL;
	}
	/* the LSTMs' gates, attention's two products, the dense layers */
	*macs = (double)(TR_TS + TR_TT) * (TR_E + TR_H) * 4 * TR_H +
		2.0 * TR_TT * TR_TS * TR_H +
		(double)TR_TT * (2 * TR_H * TR_A + TR_A * TR_VT);
	return m;
}

/*
 * The examples' models, then the held-out ones; the same networks as
 * tools/bench_train_pytorch.py's MODELS. s/epoch counts 60000 images
 * (50000 for cifar10, 3670 for vgg64: tf_flowers' size; 20000 sentences
 * for translate, the example's date corpus).
 */
static const struct model_def models[] = {
	{ "mnist", 28, 28, 1, 10, 60000, build_mnist, false },
	{ "fashion_mnist", 28, 28, 1, 10, 60000, build_fashion, false },
	{ "cifar10", 32, 32, 3, 10, 50000, build_cifar, false },
	{ "lenet5", 28, 28, 1, 10, 60000, build_lenet5, false },
	{ "mlp_wide", 28, 28, 1, 10, 60000, build_mlp_wide, false },
	{ "vgg64", 64, 64, 3, 5, 3670, build_vgg64, false },
	{ "resnet64", 64, 64, 3, 5, 3670, build_resnet64, false },
	{ "xception64", 64, 64, 3, 5, 3670, build_xception64, false },
	{ "translate", 0, 0, 0, TR_VT, 20000, NULL, false },
	{ "translate-decode", 0, 0, 0, TR_VT, 20000, NULL, true },
};

/* A vtpu backend: a compiled model and a few batches of data. */
struct vtpu_runner {
	struct vtpu_model *m;
	double macs;	/* forward multiply-adds per image (struct net) */
	struct vtpu_dataset ds;
	struct vtpu_fit_opts fo;
	/* translate: sentences, the decoder's input node, decoded ids */
	struct vtpu_token_dataset tds;
	uint32_t *ids;
	int tgt;
	bool decode;
};

static int run_vtpu(void *ctx)
{
	struct vtpu_runner *r = ctx;

	if (r->decode)
		return vtpu_model_decode(r->m, r->tgt, r->tds.inputs, r->tds.n,
					 r->ids);
	if (r->tds.n)
		return vtpu_model_fit_tokens(r->m, &r->tds, &r->fo);
	return vtpu_model_fit(r->m, &r->ds, &r->fo);
}

/*
 * Sentences as tools/bench_train_pytorch.py's translate_batch() makes
 * them: sources of 8..TS ids in 4..VS-1, targets <start>, 4..TT-1 ids in
 * 4..VT-1, <end>; padding after; labels the next token.
 */
static int translate_data(struct vtpu_runner *r, uint32_t n)
{
	uint32_t *src = calloc((size_t)n * TR_TS, 4);
	uint32_t *tgt = calloc((size_t)n * (TR_TT + 1), 4);
	uint32_t *in = calloc((size_t)n * TR_TT, 4);
	uint32_t *lab = calloc((size_t)n * TR_TT, 4);
	struct vtpu_rng rng;
	uint32_t i, t, len;

	r->ids = calloc((size_t)n * TR_TT, 4);
	if (!src || !tgt || !in || !lab || !r->ids) {
		free(src);
		free(tgt);
		free(in);
		free(lab);
		return -ENOMEM;
	}
	vtpu_rng_seed(&rng, 7);
	for (i = 0; i < n; i++) {
		uint32_t *y = tgt + (size_t)i * (TR_TT + 1);

		len = 8 + (uint32_t)vtpu_rng_below(&rng, TR_TS - 7);
		for (t = 0; t < len; t++)
			src[(size_t)i * TR_TS + t] =
				4 + (uint32_t)vtpu_rng_below(&rng, TR_VS - 4);
		len = 4 + (uint32_t)vtpu_rng_below(&rng, TR_TT - 4);
		y[0] = 1;
		for (t = 1; t <= len; t++)
			y[t] = 4 + (uint32_t)vtpu_rng_below(&rng, TR_VT - 4);
		y[len + 1] = 2;
		memcpy(in + (size_t)i * TR_TT, y, TR_TT * 4);
		memcpy(lab + (size_t)i * TR_TT, y + 1, TR_TT * 4);
	}
	free(tgt);
	r->tds.n = n;
	r->tds.inputs[0] = src;
	r->tds.inputs[1] = in;
	r->tds.labels = lab;
	return 0;
}

/* Each timed call trains this many steps. */
#define STEPS_PER_CALL 4
/* --dist: each call is a fit() of this many steps (its start broadcasts) */
#define DIST_STEPS_PER_CALL 16

/*
 * @device's backend, or with @ndevs > 1 data-parallel replicas on
 * @devs[0..ndevs) (vtpu_model_compile_replicated(), @batch the global one).
 */
static int vtpu_runner_init_n(struct vtpu_runner *r,
			      const struct model_def *md, uint32_t batch,
			      const char *device, int gemm, int threads,
			      const char *const *devs, uint32_t ndevs,
			      uint32_t steps, bool dist);

static int vtpu_runner_init(struct vtpu_runner *r, const struct model_def *md,
			    uint32_t batch, const char *device, int gemm,
			    int threads, const char *const *devs,
			    uint32_t ndevs)
{
	return vtpu_runner_init_n(r, md, batch, device, gemm, threads, devs,
				  ndevs, STEPS_PER_CALL, false);
}

/*
 * As vtpu_runner_init(), @steps steps per call, and with @dist the model
 * spans the MPI job's ranks (vtpu_model_compile_distributed(), @devs
 * this rank's replicas).
 */
static int vtpu_runner_init_n(struct vtpu_runner *r,
			      const struct model_def *md, uint32_t batch,
			      const char *device, int gemm, int threads,
			      const char *const *devs, uint32_t ndevs,
			      uint32_t steps, bool dist)
{
	VTPU_COMPILE_OPTS(co, .device = device, .cpu_gemm = gemm,
			  .threads = threads, .batch = batch, .seed = 1);
	struct vtpu_rng rng;
	size_t i, isz = (size_t)md->h * md->w * md->c;

	memset(r, 0, sizeof(*r));
	if (!md->build) {
		r->decode = md->decode;
		r->m = build_translate(&r->tgt, &r->macs);
		if (!r->m || translate_data(r, batch * STEPS_PER_CALL))
			return -ENOMEM;
		r->fo.sz = sizeof(r->fo);
		r->fo.epochs = 1;
		if (vtpu_model_compile(r->m, &co)) {
			fprintf(stderr, "vtpu-bench: %s on %s: %s\n", md->name,
				device, vtpu_model_error(r->m));
			return -EINVAL;
		}
		return 0;
	}
	r->ds.n = batch * steps;
	r->ds.height = md->h;
	r->ds.width = md->w;
	r->ds.channels = md->c;
	r->ds.classes = md->classes;
	r->ds.images = malloc(r->ds.n * isz);
	r->ds.labels = malloc(r->ds.n);
	r->m = vtpu_model_create(md->h, md->w, md->c);
	if (!r->ds.images || !r->ds.labels || !r->m)
		return -ENOMEM;
	vtpu_rng_seed(&rng, 7);
	for (i = 0; i < r->ds.n * isz; i++)
		r->ds.images[i] = (uint8_t)vtpu_rng_next(&rng);
	for (i = 0; i < r->ds.n; i++)
		r->ds.labels[i] = (uint8_t)vtpu_rng_below(&rng, md->classes);
	{
		struct net nt = { r->m, md->h, md->w, md->c, 0 };

		md->build(&nt);
		r->macs = nt.macs;
	}
	r->fo.sz = sizeof(r->fo);
	r->fo.epochs = 1;
	if (dist ? vtpu_model_compile_distributed(r->m, devs, ndevs, &co) :
	    ndevs > 1 ? vtpu_model_compile_replicated(r->m, devs, ndevs, &co) :
			vtpu_model_compile(r->m, &co)) {
		fprintf(stderr, "vtpu-bench: %s on %s%s: %s\n", md->name,
			ndevs > 1 ? "replicas of " : "",
			ndevs > 1 ? devs[0] : device, vtpu_model_error(r->m));
		return -EINVAL;
	}
	return 0;
}

static void vtpu_runner_fini(struct vtpu_runner *r)
{
	vtpu_model_destroy(r->m);
	vtpu_dataset_free(&r->ds);
	free((void *)r->tds.inputs[0]);
	free((void *)r->tds.inputs[1]);
	free((void *)r->tds.labels);
	free(r->ids);
}

/*
 * A PyTorch configuration: its row's name, the script's --config, and the
 * environment its process starts with (NAME=VALUE; an empty VALUE
 * unsets NAME).
 */
struct torch_config {
	const char *name;
	const char *config;
	const char *const *env;
};

/*
 * The best: glibc's malloc keeps what it frees (PyTorch frees and mallocs
 * a step's large gradient and activation blocks every step, and each one
 * glibc gives back to the kernel is page-faulted in again); OpenBLAS's
 * OpenMP build, in PyTorch's one OpenMP pool, spinning between calls. The
 * script does the rest (flush denormals, channels-last, set_to_none).
 *
 * The spinning is bounded (GOMP_SPINCOUNT: about 10-50 ms, well within a
 * step's gaps of microseconds and below SETTLE_NS): with ACTIVE alone
 * libgomp's threads spin for good after the child's turn, and shared the
 * two cores with every other backend's turn (the engine's mnist step
 * measured 2.6 times its time alone).
 */
static const char *const torch_best_env[] = {
	"MALLOC_MMAP_MAX_=0", "MALLOC_TRIM_THRESHOLD_=17179869184",
	"OMP_WAIT_POLICY=ACTIVE", "GOMP_SPINCOUNT=1000000",
	"LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp", NULL,
};
/* As installed: whatever the caller's environment left out of it. */
static const char *const torch_default_env[] = {
	"MALLOC_MMAP_MAX_=", "MALLOC_TRIM_THRESHOLD_=", "OMP_WAIT_POLICY=",
	"GOMP_SPINCOUNT=", NULL,
};

static const struct torch_config torch_configs[TORCH_CONFIGS] = {
	{ "pytorch", "best", torch_best_env },
	{ "pytorch-default", "default", torch_default_env },
};

/* PyTorch, in a child process fed one request per timed call. */
struct torch_runner {
	const struct torch_config *cfg;
	pid_t pid;
	FILE *to, *from;
	const char *model;
	uint32_t batch;
	const char *python;	/* the interpreter */
	char version[32];	/* torch.__version__ */
	char settings[256];	/* what the script reports in force */
	char why[160];		/* torch_start(): why there is no PyTorch */
};

static int run_torch(void *ctx)
{
	struct torch_runner *t = ctx;
	char line[64];

	fprintf(t->to, "%s %u %d\n", t->model, t->batch, STEPS_PER_CALL);
	fflush(t->to);
	return fgets(line, sizeof(line), t->from) ? 0 : -EPIPE;
}

/* How long the child may take to import torch and say it is ready. */
#define TORCH_READY_S 120

/*
 * Reads the child's first line within @timeout_s seconds: "ready
 * VERSION" when torch imported, "error: WHY" when it did not (the script
 * says why). Anything else, silence or an early exit is a broken
 * interpreter or PyTorch, said in t->why. Returns 0 when ready.
 */
static int torch_handshake(struct torch_runner *t, int fd, int timeout_s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char line[320];
	size_t len = 0;
	double end = bench_now() + timeout_s;

	while (len < sizeof(line) - 1) {
		int left = (int)((end - bench_now()) * 1000), n;
		ssize_t got;

		if (left <= 0 || (n = poll(&pfd, 1, left)) == 0) {
			snprintf(t->why, sizeof(t->why),
				 "%s did not answer within %d s", t->python,
				 timeout_s);
			return -ETIMEDOUT;
		}
		if (n < 0 && errno == EINTR)
			continue;
		got = n < 0 ? -1 : read(fd, line + len, 1);
		if (got <= 0) {
			snprintf(t->why, sizeof(t->why),
				 "%s exited before it answered", t->python);
			return -EPIPE;
		}
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	if (!strncmp(line, "ready ", 6)) {
		char *sp = strchr(line + 6, ' ');

		if (sp)
			*sp++ = '\0';
		snprintf(t->version, sizeof(t->version), "%.31s", line + 6);
		snprintf(t->settings, sizeof(t->settings), "%.255s",
			 sp ? sp : "");
		return 0;
	}
	snprintf(t->why, sizeof(t->why), "%.159s", !strncmp(line, "error: ", 7) ?
		 line + 7 : "its answer was not \"ready\"");
	return -ENOENT;
}

static void torch_stop(struct torch_runner *t);

/*
 * Starts tools/bench_train_pytorch.py on $VTPU_BENCH_PYTHON (default
 * Debian's /usr/bin/python3, whose dist-packages python3-torch fills) and
 * waits for it to report torch imported ($VTPU_BENCH_PYTORCH_TIMEOUT
 * seconds at most). Returns 0, or -errno with t->why saying why not.
 */
static int torch_start(struct torch_runner *t,
		       const struct torch_config *cfg, int threads)
{
	char script[4096], nthreads[16];
	const char *timeout = getenv("VTPU_BENCH_PYTORCH_TIMEOUT");
	int in[2], out[2], ret;
	const char *const *e;
	ssize_t len;

	t->cfg = cfg;
	t->python = getenv("VTPU_BENCH_PYTHON") ?: "/usr/bin/python3";
	len = readlink("/proc/self/exe", script, sizeof(script) - 64);
	if (len < 0)
		return -errno;
	script[len] = '\0';
	/* build/bin/vtpu-bench -> tools/bench_train_pytorch.py */
	strcpy(strstr(script, "/build/bin/") ?: script + len,
	       "/tools/bench_train_pytorch.py");
	if (access(script, R_OK)) {
		snprintf(t->why, sizeof(t->why), "no %.150s", script);
		return -ENOENT;
	}
	if (access(t->python, X_OK)) {
		snprintf(t->why, sizeof(t->why), "no %s", t->python);
		return -ENOENT;
	}
	/*
	 * CLOEXEC: a second child must not inherit our ends of the first
	 * one's pipes, or closing its stdin would never give it EOF.
	 */
	if (pipe2(in, O_CLOEXEC))
		return -errno;
	if (pipe2(out, O_CLOEXEC)) {
		ret = -errno;
		close(in[0]);
		close(in[1]);
		return ret;
	}
	/* a child that dies must fail a write, not kill the bench */
	signal(SIGPIPE, SIG_IGN);
	snprintf(nthreads, sizeof(nthreads), "%d", threads);
	t->pid = fork();
	if (!t->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		for (e = cfg->env; *e; e++) {
			char name[64];
			const char *eq = strchr(*e, '=');

			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			if (eq[1])
				setenv(name, eq + 1, 1);
			else
				unsetenv(name);
		}
		execl(t->python, "python3", script, "--threads", nthreads,
		      "--config", cfg->config, (char *)NULL);
		_exit(127);
	}
	ret = t->pid < 0 ? -errno : 0;
	close(in[0]);
	close(out[1]);
	if (!ret)
		ret = torch_handshake(t, out[0], timeout ? atoi(timeout) :
				      TORCH_READY_S);
	t->to = fdopen(in[1], "w");
	t->from = fdopen(out[0], "r");
	if (!ret && (!t->to || !t->from))
		ret = -ENOMEM;
	if (ret) {
		if (t->pid > 0)
			kill(t->pid, SIGKILL);
		torch_stop(t);
	}
	return ret;
}

static void torch_stop(struct torch_runner *t)
{
	if (t->to)
		fclose(t->to); /* EOF ends the script */
	if (t->from)
		fclose(t->from);
	if (t->pid > 0)
		waitpid(t->pid, NULL, 0);
	t->to = NULL;
	t->from = NULL;
	t->pid = 0;
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: vtpu-bench train %s [--models LIST] [--batches LIST] [--no-pytorch]\n"
		"                        [--replicas N [--devices LIST|all]]\n"
		"       mpirun -np R vtpu-bench train --dist [--turn CALLS] ...\n"
		"  LIST: comma-separated (models: mnist,fashion_mnist,cifar10,\n"
		"  lenet5,mlp_wide,vgg64,resnet64,xception64,translate,\n"
		"  translate-decode, default all;\n"
		"  batches: default\n"
		"  32,128,256,512,1024)\n"
		"  PyTorch runs twice, as \"pytorch\" (its best configuration here,\n"
		"  the one ratios are against) and \"pytorch-default\" (as installed)\n"
		"  PyTorch (python3-torch) is left out, with a note, when it is\n"
		"  missing; environment: VTPU_BENCH_PYTHON (default /usr/bin/python3),\n"
		"  VTPU_BENCH_PYTORCH_TIMEOUT (seconds to import torch, default 120)\n"
		"  --replicas N: N data-parallel replicas (cpu backends of threads/N\n"
		"  workers each, or --devices LIST) against one backend with all the\n"
		"  threads, the same global batch: steps/s of both, the efficiency\n"
		"  --dist (under mpirun -np R): R ranks of --threads T workers, one\n"
		"  replica each, against one process of R x T workers, the same\n"
		"  global batch, taking turns of CALLS fits of 16 steps (default 8):\n"
		"  steps/s of both, the efficiency and the reps' range (rank 0)\n",
		BENCH_OPTS_USAGE);
	exit(status);
}

static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while ((p = strstr(p, name))) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
		p += n;
	}
	return 0;
}

/*
 * The least and greatest of runner @i's rep-by-rep ratios to runner @t
 * (their reps ran side by side: bench_compare()'s @rates).
 */
static void rep_ratios(const double *rates, int reps, int i, int t,
		       double *lo, double *hi)
{
	int k;

	*lo = 0;
	*hi = 0;
	for (k = 0; k < reps; k++) {
		double q = rates[i * reps + k] / rates[t * reps + k];

		if (k == 0 || q < *lo)
			*lo = q;
		if (k == 0 || q > *hi)
			*hi = q;
	}
}

/*
 * One row. With PyTorch measured (@torch_steps_per_s > 0, the faster
 * configuration's, named @torch): the ratio of the medians, and for the
 * other backends the range of the reps' own ratios, @lo to @hi.
 */
/* "NAME*": the row the ratios are against */
static const char *torch_name_marked(const char *name)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%s*", name);
	return buf;
}

static void report(const struct bench_opts *o, const struct model_def *md,
		   uint32_t batch, const char *backend, double steps_per_s,
		   double flops, const struct bench_peak *pk,
		   double torch_steps_per_s, const char *torch, double lo,
		   double hi)
{
	double ms = 1e3 / steps_per_s;
	double epoch = md->epoch_images / (double)batch * ms / 1e3;
	int ref = torch_steps_per_s > 0 && !strcmp(backend, torch);
	int range = torch_steps_per_s > 0 && !ref;
	double pct = pk->all > 0 ? flops * steps_per_s / (pk->all * 1e9) * 100 :
		     0;

	if (o->json) {
		printf("{\"model\":\"%s\",\"batch\":%u,\"threads\":%d,\"backend\":\"%s\","
		       "\"ms_per_step\":%.3f,\"s_per_epoch\":%.2f,"
		       "\"gflop_per_step\":%.4f,\"pct_peak\":%.1f",
		       md->name, batch, o->threads, backend, ms, epoch,
		       flops / 1e9, pct);
		if (torch_steps_per_s > 0)
			printf(",\"vs_pytorch\":%.2f,\"vs_pytorch_backend\":\"%s\"",
			       steps_per_s / torch_steps_per_s, torch);
		if (range)
			printf(",\"vs_pytorch_min\":%.2f,\"vs_pytorch_max\":%.2f",
			       lo, hi);
		printf("}\n");
		return;
	}
	printf("%-14s %6u %-16s %10.2f %10.2f %9.4f %7.1f", md->name, batch,
	       ref ? torch_name_marked(backend) : backend, ms, epoch,
	       flops / 1e9, pct);
	if (torch_steps_per_s > 0)
		printf(" %9.2fx", steps_per_s / torch_steps_per_s);
	if (range)
		printf("  %5.2f-%.2fx", lo, hi);
	printf("\n");
}

/* Start the PyTorch configurations; Return: how many run (0: none). */
static int torch_start_all(struct torch_runner *torch, int threads)
{
	int i;

	for (i = 0; i < TORCH_CONFIGS; i++) {
		if (!torch_start(&torch[i], &torch_configs[i], threads))
			continue;
		if (!i) {
			fprintf(stderr, "vtpu-bench: no PyTorch (%s): its rows are left out; `make bench` installs it (python3-torch)\n",
				torch[i].why);
			return 0;
		}
		fprintf(stderr, "vtpu-bench: no %s (%s): its row is left out\n",
			torch_configs[i].name, torch[i].why);
		break;
	}
	return i;
}

/* How a step's FLOPs are counted (struct net), for the headers. */
#define FLOPS_RULE "GFLOP/step = 3 x forward (2 x the conv and dense layers' multiply-adds) x batch"

static void header(const struct bench_opts *o, const struct torch_runner *torch,
		   int ntorch, const struct bench_peak *pk)
{
	if (o->json) {
		printf("{\"header\":true,\"threads\":%d,\"openblas_core\":\"%s\","
		       "\"openblas_detected\":\"%s\",\"fma_simd\":\"%s\","
		       "\"fma_peak_gflops\":%.1f,\"fma_peak_thread_gflops\":%.1f,"
		       "\"flops_rule\":\"%s\",\"pytorch\":%s",
		       o->threads, openblas_get_corename(),
		       bench_openblas_detected(), pk->simd, pk->all,
		       pk->per_thread, FLOPS_RULE, ntorch ? "true" : "false");
		if (ntorch)
			printf(",\"pytorch_version\":\"%s\",\"pytorch_settings\":\"%s\"",
			       torch[0].version, torch[0].settings);
		if (ntorch > 1)
			printf(",\"pytorch_default_settings\":\"%s\"",
			       torch[1].settings);
		printf("}\n");
		return;
	}
	printf("# vtpu-bench train: %d thread(s), OpenBLAS core %s, median of %d, synthetic data, %s%s\n",
	       o->threads, bench_openblas_core(), o->reps,
	       ntorch ? "PyTorch " : "no PyTorch",
	       ntorch ? torch[0].version : "");
	if (ntorch)
		printf("# pytorch: its best configuration here (%s)\n",
		       torch[0].settings);
	if (ntorch > 1)
		printf("# pytorch-default: as installed (%s)\n",
		       torch[1].settings);
	if (ntorch)
		printf("# ratios: against the faster PyTorch row of each model and batch, marked *\n");
	printf("# FMA peak (%s, measured): %.1f GFLOP/s on %d thread(s), %.1f on one; %s; %% peak = GFLOP/step / step time / peak\n",
	       pk->simd, pk->all, pk->threads, pk->per_thread, FLOPS_RULE);
	printf("%-14s %6s %-16s %10s %10s %9s %7s %10s%s\n", "model", "batch",
	       "backend", "ms/step", "s/epoch", "GFLOP/st", "% peak",
	       "vs torch", ntorch ? "  reps' range" : "");
}

#define MAX_REPLICAS 64

/*
 * --devices LIST: "all" (every /dev/vtpuN, in order) or a comma list,
 * split into @devs (pointing into @buf). Return: how many, 0 on error.
 */
static uint32_t parse_devices(const char *list, char *buf, size_t len,
			      const char **devs)
{
	uint32_t n = 0;
	char *tok, *save;

	if (!strcmp(list, "all")) {
		size_t used = 0;

		for (n = 0; n < MAX_REPLICAS; n++) {
			char path[32];
			int w;

			snprintf(path, sizeof(path), "/dev/vtpu%u", n);
			if (access(path, F_OK))
				break;
			w = snprintf(buf + used, len - used, "%s", path);
			if (w < 0 || (size_t)w >= len - used)
				return 0;
			devs[n] = buf + used;
			used += (size_t)w + 1;
		}
		if (!n)
			fprintf(stderr, "vtpu-bench: --devices all: no /dev/vtpuN\n");
		return n;
	}
	if (strlen(list) >= len)
		return 0;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_REPLICAS) {
			fprintf(stderr, "vtpu-bench: --devices: more than %d\n",
				MAX_REPLICAS);
			return 0;
		}
		devs[n++] = tok;
	}
	return n;
}

/*
 * --replicas N: per model and batch, N data-parallel replicas
 * (vtpu_model_compile_replicated(): cpu backends of threads / N workers
 * each, or @devs, whose "cpu" entries have as many) against one cpu backend with all the threads, the same
 * global batch, the two taking turns as the other rows' backends do. The
 * efficiency is the replicas' steps/s over the one's (1: the all-reduce
 * and the split batch cost nothing), with the range of the reps' paired
 * ratios. Models of token inputs cannot be replicated: left out.
 */
static int bench_replicas(const struct bench_opts *o, const char *model_list,
			  const char *batch_list, const char *const *devs,
			  uint32_t nrep, bool on_devices)
{
	int per = o->threads / (int)nrep > 0 ? o->threads / (int)nrep : 1;
	struct vtpu_runner vr[2];
	struct bench_runner r[2];
	char devlist[256] = "";
	double *rates, lo, hi;
	char *list, *tok, *save;
	uint32_t k;
	size_t mi;
	int ret = 0, i;

	rates = calloc(2 * (size_t)o->reps, sizeof(*rates));
	if (!rates)
		return 1;
	for (k = 0; k < nrep; k++)
		snprintf(devlist + strlen(devlist),
			 sizeof(devlist) - strlen(devlist), "%s%s",
			 k ? "," : "", devs[k]);
	if (o->json)
		printf("{\"bench\":\"replicas\",\"header\":true,\"threads\":%d,"
		       "\"replicas\":%u,\"devices\":\"%s\","
		       "\"threads_per_replica\":%d,\"reps\":%d}\n",
		       o->threads, nrep, devlist, per, o->reps);
	else {
		char each[48] = "";

		if (!on_devices)
			snprintf(each, sizeof(each), ", %d thread(s) each", per);
		printf("# vtpu-bench train --replicas %u: %u replicas (%s%s) against 1 replica (cpu, %d thread(s)), the same global batch, median of %d\n",
		       nrep, nrep, devlist, each, o->threads, o->reps);
		printf("%-14s %6s %8s %10s %10s %10s  %s\n", "model", "batch",
		       "replicas", "steps/s 1", "steps/s N", "efficiency",
		       "reps' range");
	}
	for (mi = 0; mi < sizeof(models) / sizeof(models[0]) && !ret; mi++) {
		const struct model_def *md = &models[mi];

		if (!listed(model_list, md->name))
			continue;
		if (!md->build) {
			fprintf(stderr, "vtpu-bench: %s: models of token inputs cannot be replicated: left out\n",
				md->name);
			continue;
		}
		list = strdup(batch_list);
		for (tok = strtok_r(list, ",", &save); tok && !ret;
		     tok = strtok_r(NULL, ",", &save)) {
			uint32_t batch = (uint32_t)atoi(tok);

			if (batch % nrep) {
				fprintf(stderr, "vtpu-bench: %s: a global batch of %u does not split between %u replicas: left out\n",
					md->name, batch, nrep);
				continue;
			}
			ret = vtpu_runner_init(&vr[0], md, batch, "cpu",
					       VTPU_CPU_GEMM_ENGINE, o->threads,
					       NULL, 0);
			if (!ret)
				ret = vtpu_runner_init(&vr[1], md, batch, "cpu",
						       VTPU_CPU_GEMM_ENGINE, per,
						       devs, nrep);
			for (i = 0; i < 2; i++)
				r[i] = (struct bench_runner){
					.name = i ? "replicas" : "one",
					.run = run_vtpu, .ctx = &vr[i],
					.work = STEPS_PER_CALL,
				};
			if (!ret) {
				ret = bench_compare(r, 2, o->reps, TARGET_S,
						    rates);
				for (i = 0; ret && i < 2; i++)
					if (r[i].err)
						fprintf(stderr, "vtpu-bench: %s %u on %s failed: %s\n",
							md->name, batch,
							r[i].name,
							strerror(-r[i].err));
			}
			if (!ret) {
				rep_ratios(rates, o->reps, 1, 0, &lo, &hi);
				if (o->json)
					printf("{\"bench\":\"replicas\",\"model\":\"%s\",\"batch\":%u,"
					       "\"replicas\":%u,\"steps_per_s_one\":%.3f,"
					       "\"steps_per_s_replicas\":%.3f,"
					       "\"efficiency\":%.3f,\"efficiency_min\":%.3f,"
					       "\"efficiency_max\":%.3f}\n",
					       md->name, batch, nrep, r[0].rate,
					       r[1].rate, r[1].rate / r[0].rate,
					       lo, hi);
				else
					printf("%-14s %6u %8u %10.2f %10.2f %9.3fx  %.3f-%.3fx\n",
					       md->name, batch, nrep, r[0].rate,
					       r[1].rate, r[1].rate / r[0].rate,
					       lo, hi);
			}
			vtpu_runner_fini(&vr[0]);
			vtpu_runner_fini(&vr[1]);
			fflush(stdout);
		}
		free(list);
	}
	free(rates);
	return ret ? 1 : 0;
}

/* Seconds for @calls calls of @r's fit(); a negative errno if one fails. */
static double time_calls(struct vtpu_runner *r, int calls)
{
	double t0 = bench_now();
	int i, ret;

	for (i = 0; i < calls; i++) {
		ret = run_vtpu(r);
		if (ret)
			return ret;
	}
	return bench_now() - t0;
}

/*
 * --dist (under mpirun -np R): per model and batch, the job's R ranks of
 * --threads T workers each (one replica per rank,
 * vtpu_model_compile_distributed()) against one process, rank 0, with
 * R x T workers, at the same global batch. They take turns, rep by rep:
 * rank 0 trains alone (the other ranks wait in the first step of their
 * next turn, polling, nearly idle), then all ranks together; each turn is
 * @calls fits of DIST_STEPS_PER_CALL steps. Rank 0 prints steps/s of both,
 * the efficiency (their ratio, the median of the reps') and the range of
 * the reps' ratios; the other ranks print nothing.
 */
static int bench_dist(const struct bench_opts *o, const char *model_list,
		      const char *batch_list, int calls)
{
	static const char *const cpu[] = { "cpu" };
	int rank = vtpu_dist_rank(), ranks = vtpu_dist_size();
	cpu_set_t cpus;
	double *t1, *tn, *ratio, one, all;
	struct vtpu_runner vr[2];
	char *list, *tok, *save;
	int ret = 0, k;
	size_t mi;

	if (ranks < 2) {
		fprintf(stderr, "vtpu-bench: --dist: run it under mpirun -np N (N >= 2)%s\n",
			vtpu_dist_available() ? "" :
			"; this libvtpu was built without MPI");
		return 2;
	}
	if (!rank && !sched_getaffinity(0, sizeof(cpus), &cpus) &&
	    CPU_COUNT(&cpus) < ranks * o->threads)
		fprintf(stderr, "vtpu-bench: --dist: rank 0 may run on %d CPU(s), fewer than the one process's %d threads (mpirun binds each rank to a core): run mpirun --bind-to none for a fair comparison\n",
			CPU_COUNT(&cpus), ranks * o->threads);
	t1 = calloc(3 * (size_t)o->reps, sizeof(*t1));
	if (!t1)
		return 1;
	tn = t1 + o->reps;
	ratio = tn + o->reps;
	if (!rank && o->json)
		printf("{\"bench\":\"dist\",\"header\":true,\"ranks\":%d,"
		       "\"threads_per_rank\":%d,\"threads_one\":%d,"
		       "\"steps_per_turn\":%d,\"reps\":%d}\n",
		       ranks, o->threads, ranks * o->threads,
		       calls * DIST_STEPS_PER_CALL, o->reps);
	else if (!rank) {
		printf("# vtpu-bench train --dist: %d MPI ranks of %d thread(s) against 1 process of %d, the same global batch, %d steps a turn, median of %d\n",
		       ranks, o->threads, ranks * o->threads,
		       calls * DIST_STEPS_PER_CALL, o->reps);
		printf("%-14s %6s %6s %10s %10s %10s  %s\n", "model", "batch",
		       "ranks", "steps/s 1", "steps/s R", "efficiency",
		       "reps' range");
	}
	fflush(stdout);
	for (mi = 0; mi < sizeof(models) / sizeof(models[0]) && !ret; mi++) {
		const struct model_def *md = &models[mi];

		if (!listed(model_list, md->name) || !md->build)
			continue;
		list = strdup(batch_list);
		for (tok = strtok_r(list, ",", &save); tok && !ret;
		     tok = strtok_r(NULL, ",", &save)) {
			uint32_t batch = (uint32_t)atoi(tok);

			if (batch % (uint32_t)ranks) {
				if (!rank)
					fprintf(stderr, "vtpu-bench: %s: a global batch of %u does not split between %d ranks: left out\n",
						md->name, batch, ranks);
				continue;
			}
			memset(vr, 0, sizeof(vr));
			if (!rank)
				ret = vtpu_runner_init_n(&vr[0], md, batch,
							 "cpu",
							 VTPU_CPU_GEMM_ENGINE,
							 ranks * o->threads,
							 NULL, 0,
							 DIST_STEPS_PER_CALL,
							 false);
			/* every rank compiles: the ranks compare models */
			ret = vtpu_runner_init_n(&vr[1], md, batch, "cpu",
						 VTPU_CPU_GEMM_ENGINE,
						 o->threads, cpu, 1,
						 DIST_STEPS_PER_CALL, true) ?:
			      ret;
			/* a warm-up turn of each */
			if (!ret && !rank)
				ret = time_calls(&vr[0], 1) < 0;
			if (!ret)
				ret = time_calls(&vr[1], 1) < 0;
			for (k = 0; !ret && k < o->reps; k++) {
				t1[k] = rank ? 1 : time_calls(&vr[0], calls);
				tn[k] = time_calls(&vr[1], calls);
				ret = t1[k] < 0 || tn[k] < 0;
				ratio[k] = tn[k] > 0 ? t1[k] / tn[k] : 0;
			}
			if (ret)
				fprintf(stderr, "vtpu-bench: %s %u: %s\n",
					md->name, batch,
					vtpu_model_error(vr[1].m ? vr[1].m :
							 vr[0].m));
			if (!ret && !rank) {
				double lo = ratio[0], hi = ratio[0], eff;

				for (k = 1; k < o->reps; k++) {
					lo = ratio[k] < lo ? ratio[k] : lo;
					hi = ratio[k] > hi ? ratio[k] : hi;
				}
				one = calls * DIST_STEPS_PER_CALL /
				      bench_median(t1, o->reps);
				all = calls * DIST_STEPS_PER_CALL /
				      bench_median(tn, o->reps);
				eff = bench_median(ratio, o->reps);
				if (o->json)
					printf("{\"bench\":\"dist\",\"model\":\"%s\",\"batch\":%u,"
					       "\"ranks\":%d,\"steps_per_s_one\":%.3f,"
					       "\"steps_per_s_ranks\":%.3f,"
					       "\"efficiency\":%.3f,\"efficiency_min\":%.3f,"
					       "\"efficiency_max\":%.3f}\n",
					       md->name, batch, ranks, one, all,
					       eff, lo, hi);
				else
					printf("%-14s %6u %6d %10.2f %10.2f %9.3fx  %.3f-%.3fx\n",
					       md->name, batch, ranks, one, all,
					       eff, lo, hi);
			}
			if (vr[0].m)
				vtpu_runner_fini(&vr[0]);
			vtpu_runner_fini(&vr[1]);
			fflush(stdout);
		}
		free(list);
	}
	free(t1);
	return ret ? 1 : 0;
}

int bench_train(int argc, char **argv)
{
	const char *model_list = "mnist,fashion_mnist,cifar10,lenet5,mlp_wide,"
				 "vgg64,resnet64,xception64,translate,"
				 "translate-decode";
	const char *batch_list = "32,128,256,512,1024";
	const char *dev_list = NULL, *devs[MAX_REPLICAS];
	char devbuf[1024];
	uint32_t nrep = 0, ndev;
	struct vtpu_runner vr[MAX_BACKENDS];
	struct bench_runner r[MAX_BACKENDS + TORCH_CONFIGS];
	struct torch_runner torch[TORCH_CONFIGS] = { 0 };
	const char *names[MAX_BACKENDS];
	struct bench_opts o;
	struct bench_peak pk;
	int use_torch = 1, ntorch = 0, i, n, tref, ret = 0, dist = 0, turn = 8;
	size_t mi;
	char *list, *tok, *save;
	double *rates;

	bench_opts_init(&o);
	for (i = 1; i < argc; i++) {
		int c = bench_opt(&o, argc, argv, &i);

		if (c < 0)
			usage(2);
		if (c)
			continue;
		if (!strcmp(argv[i], "--models") && i + 1 < argc)
			model_list = argv[++i];
		else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
			batch_list = argv[++i];
		else if (!strcmp(argv[i], "--no-pytorch"))
			use_torch = 0;
		else if (!strcmp(argv[i], "--replicas") && i + 1 < argc)
			nrep = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			dev_list = argv[++i];
		else if (!strcmp(argv[i], "--dist"))
			dist = 1;
		else if (!strcmp(argv[i], "--turn") && i + 1 < argc)
			turn = atoi(argv[++i]);
		else
			usage(strcmp(argv[i], "--help") ? 2 : 0);
	}
	bench_opts_done(&o);
	if (dist) {
		if (vtpu_dist_init(NULL, NULL))
			return 1;
		if (vtpu_dist_rank() && !freopen("/dev/null", "w", stdout))
			return 1;
		ret = bench_dist(&o, model_list, batch_list,
				 turn > 0 ? turn : 8);
		if (ret)
			vtpu_dist_abort(ret);
		vtpu_dist_finalize();
		return ret;
	}
	if (dev_list && !nrep)
		nrep = 1;	/* as many as listed */
	if (nrep) {
		if (dev_list) {
			ndev = parse_devices(dev_list, devbuf, sizeof(devbuf),
					     devs);
			if (!ndev)
				usage(2);
			if (nrep == 1)
				nrep = ndev;
			if (ndev != nrep) {
				fprintf(stderr, "vtpu-bench: --replicas %u but --devices lists %u\n",
					nrep, ndev);
				return 2;
			}
		} else {
			for (ndev = 0; ndev < nrep && ndev < MAX_REPLICAS;
			     ndev++)
				devs[ndev] = "cpu";
		}
		if (nrep < 2 || nrep > MAX_REPLICAS) {
			fprintf(stderr, "vtpu-bench: --replicas: 2 to %d, not %u\n",
				MAX_REPLICAS, nrep);
			return 2;
		}
		return bench_replicas(&o, model_list, batch_list, devs, nrep,
				      dev_list != NULL);
	}
	rates = calloc((size_t)(MAX_BACKENDS + TORCH_CONFIGS) * o.reps,
		       sizeof(*rates));
	if (!rates)
		return 1;
	/* before PyTorch starts: the machine as quiet as the bench leaves it */
	if (bench_fma_peak(o.threads, &pk))
		fprintf(stderr, "vtpu-bench: could not measure the FMA peak on %d threads: no %% peak\n",
			o.threads);
	if (use_torch)
		ntorch = torch_start_all(torch, o.threads);
	header(&o, torch, ntorch, &pk);

	for (mi = 0; mi < sizeof(models) / sizeof(models[0]) && !ret; mi++) {
		const struct model_def *md = &models[mi];

		if (!listed(model_list, md->name))
			continue;
		list = strdup(batch_list);
		for (tok = strtok_r(list, ",", &save); tok && !ret;
		     tok = strtok_r(NULL, ",", &save)) {
			uint32_t batch = (uint32_t)atoi(tok);

			n = 0;
			names[n] = "engine";
			ret = vtpu_runner_init(&vr[n++], md, batch, "cpu",
					       VTPU_CPU_GEMM_ENGINE, o.threads,
					       NULL, 0);
			names[n] = "openblas";
			if (!ret)
				ret = vtpu_runner_init(&vr[n++], md, batch, "cpu",
						       VTPU_CPU_GEMM_OPENBLAS,
						       o.threads, NULL, 0);
			names[n] = "device";
			if (!ret && o.device)
				ret = vtpu_runner_init(&vr[n++], md, batch,
						       o.device, 0, 0, NULL, 0);
			for (i = 0; i < n; i++)
				r[i] = (struct bench_runner){
					.name = names[i], .run = run_vtpu,
					.ctx = &vr[i], .work = STEPS_PER_CALL,
				};
			for (i = 0; i < ntorch; i++) {
				torch[i].model = md->name;
				torch[i].batch = batch;
				r[n + i] = (struct bench_runner){
					.name = torch[i].cfg->name,
					.run = run_torch, .ctx = &torch[i],
					.work = STEPS_PER_CALL,
				};
			}
			if (!ret) {
				ret = bench_compare(r, n + ntorch, o.reps,
						    TARGET_S, rates);
				for (i = 0; ret && i < n + ntorch; i++)
					if (r[i].err)
						fprintf(stderr, "vtpu-bench: %s %u on %s failed: %s%s\n",
							md->name, batch,
							r[i].name,
							strerror(-r[i].err),
							i >= n ? " (PyTorch's process died)" : "");
			}
			/* the faster PyTorch is the one to beat */
			tref = n;
			for (i = n + 1; i < n + ntorch; i++)
				if (r[i].rate > r[tref].rate)
					tref = i;
			for (i = 0; !ret && i < n + ntorch; i++) {
				double lo = 0, hi = 0;

				if (ntorch)
					rep_ratios(rates, o.reps, i, tref, &lo,
						   &hi);
				/* decoding: the forward pass alone */
				report(&o, md, batch, r[i].name, r[i].rate,
				       (md->decode ? 2 : 6) * vr[0].macs *
					       batch, &pk,
				       ntorch ? r[tref].rate : 0,
				       ntorch ? r[tref].name : "", lo, hi);
			}
			for (i = 0; i < n; i++)
				vtpu_runner_fini(&vr[i]);
			fflush(stdout);
		}
		free(list);
	}
	for (i = 0; i < ntorch; i++)
		torch_stop(&torch[i]);
	free(rates);
	return ret ? 1 : 0;
}
