// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer.h"

static void usage(const struct trainer_opts *o, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [options]\n"
		"  --device PATH    /dev/vtpuN or cpu (default %s)\n"
		"  --devices LIST   train data-parallel, one replica per device:\n"
		"                   a comma list (/dev/vtpu0,/dev/vtpu1; cpu may\n"
		"                   repeat), or all (every /dev/vtpuN); the batch\n"
		"                   is the global batch, split evenly\n"
		"                   Under mpirun -np N: every rank trains its\n"
		"                   replicas (--devices, or --device) on its\n"
		"                   shares of each global batch; rank 0 prints\n"
		"                   and saves\n"
		"  --exact-loss     print each epoch's loss and the test loss\n"
		"                   exactly (C99 hex floats), to compare runs\n"
		"  --data DIR       the dataset's directory (default %s)\n"
		"  --epochs N       (default %u; 0: no training, only evaluate\n"
		"                   the model, e.g. one saved with --save: --load)\n"
		"  --batch N        (default %u)\n"
		"  --limit N        train on the first N images only\n"
		"  --test-limit N   evaluate on the first N test images only\n"
		"  --lr X           learning rate\n"
		"  --lr-decay KIND  none: the same rate every epoch; cosine: the\n"
		"                   rate times (1 + cos(pi (e - 1) / epochs)) / 2\n"
		"                   in epoch e (default %s)\n"
		"  --input-scale X  pixel value multiplier (default %g)\n"
		"  --standardize    feed (x - mean) / std, with the training set's\n"
		"                   pixel mean and std%s\n"
		"  --no-standardize feed x * input-scale%s\n"
		"  --flip           mirror each training image left to right with\n"
		"                   probability 1/2, anew every epoch%s\n"
		"  --no-flip        train on the images as they are%s\n"
		"  --shift N        move each training image by up to N pixels\n"
		"                   each way, anew every epoch (default %u)\n"
		"  --beam N         translate: decode with a beam of N hypotheses\n"
		"                   (default 1: greedy)\n"
		"  --attention KIND translate: dot (Luong's, the default) or\n"
		"                   additive (Bahdanau's)\n"
		"  --seed N         weight initialisation, shuffling, augmentation\n"
		"  --threads N      cpu backend threads (default: all)\n"
		"  --gemm KIND      cpu backend GEMM: engine or openblas\n"
		"  --save FILE      save the trained weights\n"
		"  --load FILE      start from saved weights\n"
		"  --version        print the version and exit\n"
		"flowers (image folders):\n"
		"  --model NAME     resnet, xception or vgg\n"
		"  --size N         input side: images are resized to N x N\n"
		"  --width N        the network's first width (later stages\n"
		"                   are multiples of it)\n"
		"  --validation-split X  hold out this fraction of --data\n"
		"  --test-data DIR  evaluate on this folder instead\n"
		"  --augment        random crop and flip on the device\n"
		"  --stream         decode the files anew every epoch, through\n"
		"                   a ring of device buffers (else decoded once,\n"
		"                   and streamed from memory if the set does not\n"
		"                   fit the device's)\n"
		"  --mem-cap MB     cpu backend: the device memory it may use\n",
		o->name, o->device, o->data, o->epochs, o->batch,
		o->cosine ? "cosine" : "none",
		o->input_scale ? o->input_scale : 1.0 / 255,
		o->standardize ? " (default)" : "",
		o->standardize ? "" : " (default)",
		o->flip ? " (default)" : "", o->flip ? "" : " (default)",
		o->shift);
	exit(status);
}

static uint32_t number(const struct trainer_opts *o, const char *opt,
		       const char *arg)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || v > UINT32_MAX) {
		fprintf(stderr, "%s: %s wants a number, not '%s'\n", o->name,
			opt, arg);
		exit(2);
	}
	return (uint32_t)v;
}

/*
 * A finite number above zero, or with @fraction one from 0 to below 1; or
 * exit 2 saying what was wrong.
 */
static float real(const struct trainer_opts *o, const char *opt,
		  const char *arg, bool fraction)
{
	char *end;
	float v;

	errno = 0;
	v = strtof(arg, &end);
	if (errno || *end || end == arg || !isfinite(v) ||
	    !(fraction ? v >= 0 && v < 1 : v > 0)) {
		fprintf(stderr, "%s: %s wants a number %s, not '%s'\n",
			o->name, opt,
			fraction ? "from 0 to below 1" : "above zero", arg);
		exit(2);
	}
	return v;
}

static void dist_exit(void)
{
	/* aborts the job if an exchange between ranks failed */
	vtpu_dist_finalize();
}

/*
 * Under mpirun: join the job; ranks other than 0 print nothing on stdout
 * (errors still go to stderr, prefixed with the rank).
 */
static void trainer_dist_init(struct trainer_opts *o)
{
	static char name[64];

	if (vtpu_dist_init(NULL, NULL))
		exit(1);
	atexit(dist_exit);
	if (vtpu_dist_size() < 2)
		return;
	snprintf(name, sizeof(name), "%s (rank %d)", o->name,
		 vtpu_dist_rank());
	o->name = name;
	if (vtpu_dist_rank() && !freopen("/dev/null", "w", stdout))
		exit(1);
}

void trainer_parse(int argc, char **argv, struct trainer_opts *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "devices", required_argument, NULL, 'M' },
		{ "data", required_argument, NULL, 'D' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "batch", required_argument, NULL, 'b' },
		{ "limit", required_argument, NULL, 'l' },
		{ "test-limit", required_argument, NULL, 'L' },
		{ "lr", required_argument, NULL, 'r' },
		{ "input-scale", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "gemm", required_argument, NULL, 'g' },
		{ "save", required_argument, NULL, 'S' },
		{ "load", required_argument, NULL, 'O' },
		{ "standardize", no_argument, NULL, 'z' },
		{ "no-standardize", no_argument, NULL, 'Z' },
		{ "flip", no_argument, NULL, 'f' },
		{ "no-flip", no_argument, NULL, 'F' },
		{ "shift", required_argument, NULL, 'x' },
		{ "lr-decay", required_argument, NULL, 'y' },
		{ "beam", required_argument, NULL, 'B' },
		{ "model", required_argument, NULL, 'm' },
		{ "test-data", required_argument, NULL, 'T' },
		{ "size", required_argument, NULL, 'H' },
		{ "width", required_argument, NULL, 'W' },
		{ "validation-split", required_argument, NULL, 'v' },
		{ "augment", no_argument, NULL, 'a' },
		{ "stream", no_argument, NULL, 'A' },
		{ "mem-cap", required_argument, NULL, 'C' },
		{ "attention", required_argument, NULL, 'J' },
		{ "exact-loss", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int c;

	trainer_dist_init(o);
	o->data_default = true;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->device = optarg; break;
		case 'M': o->devices = optarg; break;
		case 'D': o->data = optarg; o->data_default = false; break;
		case 'e': o->epochs = number(o, "--epochs", optarg); break;
		case 'b': o->batch = number(o, "--batch", optarg); break;
		case 'l': o->limit = number(o, "--limit", optarg); break;
		case 'L': o->test_limit = number(o, "--test-limit", optarg); break;
		case 'r': o->lr = real(o, "--lr", optarg, false); break;
		case 'i':
			o->input_scale = real(o, "--input-scale", optarg, false);
			o->standardize = false;
			break;
		case 'z': o->standardize = true; break;
		case 'Z': o->standardize = false; break;
		case 'f': o->flip = true; break;
		case 'F': o->flip = false; break;
		case 'x': o->shift = number(o, "--shift", optarg); break;
		case 'y':
			if (!strcmp(optarg, "cosine"))
				o->cosine = true;
			else if (!strcmp(optarg, "none"))
				o->cosine = false;
			else
				usage(o, 2);
			break;
		case 'B':
			o->beam = number(o, "--beam", optarg);
			if (!o->beam) {
				fprintf(stderr, "%s: --beam wants a number above zero\n",
					o->name);
				exit(2);
			}
			break;
		case 'm': o->model = optarg; break;
		case 'T': o->test_data = optarg; break;
		case 'H': o->size = number(o, "--size", optarg); break;
		case 'W': o->width = number(o, "--width", optarg); break;
		case 'v':
			o->split = real(o, "--validation-split", optarg,
				       true);
			break;
		case 'a': o->augment = true; break;
		case 'E': o->exact_loss = true; break;
		case 'A': o->stream = true; break;
		case 'C': o->mem_cap = number(o, "--mem-cap", optarg); break;
		case 'J':
			if (!strcmp(optarg, "additive"))
				o->additive = true;
			else if (!strcmp(optarg, "dot"))
				o->additive = false;
			else
				usage(o, 2);
			break;
		case 's': o->seed = number(o, "--seed", optarg); break;
		case 't': o->threads = (int)number(o, "--threads", optarg); break;
		case 'g':
			if (!strcmp(optarg, "engine"))
				o->gemm = VTPU_CPU_GEMM_ENGINE;
			else if (!strcmp(optarg, "openblas"))
				o->gemm = VTPU_CPU_GEMM_OPENBLAS;
			else
				usage(o, 2);
			break;
		case 'S': o->save = optarg; break;
		case 'O': o->load = optarg; break;
		case 'h': usage(o, 0); break;
		case 'V':
			printf("%s %s\n", o->name, VTPU_VERSION);
			exit(0);
		default: usage(o, 2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", o->name,
			argv[optind]);
		usage(o, 2);
	}
	if (!o->batch) {
		fprintf(stderr, "%s: --batch wants a number above zero\n",
			o->name);
		exit(2);
	}
}

void trainer_load(const struct trainer_opts *o, enum trainer_dataset which,
		  struct vtpu_dataset *train, struct vtpu_dataset *test)
{
	char err[512];
	int ret;

	ret = which == TRAINER_MNIST ?
		      vtpu_load_mnist(o->data, true, train, err, sizeof(err)) :
		      vtpu_load_cifar10(o->data, true, train, err, sizeof(err));
	if (!ret)
		ret = which == TRAINER_MNIST ?
		      vtpu_load_mnist(o->data, false, test, err, sizeof(err)) :
		      vtpu_load_cifar10(o->data, false, test, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", o->name, err);
		if (o->data_default)
			fprintf(stderr, "%s: %s is where tools/get-datasets puts it (run it from the checkout); or pass --data DIR\n",
				o->name, o->data);
		exit(1);
	}
	if (o->limit && o->limit < train->n)
		vtpu_dataset_truncate(train, o->limit);
	if (o->test_limit && o->test_limit < test->n)
		vtpu_dataset_truncate(test, o->test_limit);
}

/* what fit()'s callbacks share */
struct fit_ctx {
	const struct trainer_opts *o;
	float lr0;
};

/* Cosine decay by epoch, from the rate the first epoch is given. */
static float cosine_decay(void *ctx, uint32_t epoch, uint32_t epochs,
			  float lr)
{
	struct fit_ctx *c = ctx;

	if (epoch == 1)
		c->lr0 = lr;
	return c->lr0 * 0.5f * (1.0f + cosf((float)M_PI *
					    (float)(epoch - 1) /
					    (float)epochs));
}

/* o->report_input: how the epoch's input came, and the files skipped */
static void report_input(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct fit_ctx *c = ctx;

	if (c->o->exact_loss)
		printf("epoch %u: exact loss %a acc %a\n", st->epoch, st->loss,
		       st->acc);
	if (!c->o->report_input)
		return;

	printf("epoch %u: input %s; %u corrupt or unreadable images skipped%s\n",
	       st->epoch,
	       !st->streamed ? "resident in device memory" :
	       c->o->train_stream ? "streamed from the files, decoded anew" :
	       "streamed from host memory (the set does not fit the device's)",
	       c->o->train_stream ? st->skipped : c->o->load_skipped,
	       c->o->train_stream ? "" : " (when the folder was decoded)");
	fflush(stdout);
}

#define TRAINER_MAX_DEVICES 64

/*
 * --devices: "all" (every /dev/vtpuN there is, in order) or a comma list,
 * into @names (pointing into @buf); returns how many, or 0 after saying
 * why not.
 */
static uint32_t device_list(const struct trainer_opts *o, char *buf,
			    size_t len, const char **names)
{
	uint32_t n = 0, i;
	char *tok, *save;

	if (!strcmp(o->devices, "all")) {
		for (i = 0; i < 256 && n < TRAINER_MAX_DEVICES; i++) {
			char path[32];
			size_t at = 0;

			snprintf(path, sizeof(path), "/dev/vtpu%u", i);
			if (access(path, F_OK))
				continue;
			for (uint32_t k = 0; k < n; k++)
				at += strlen(names[k]) + 1;
			if (at + strlen(path) + 1 > len)
				break;
			names[n++] = strcpy(buf + at, path);
		}
		if (!n)
			fprintf(stderr, "%s: --devices all: no /dev/vtpuN\n",
				o->name);
		return n;
	}
	if (strlen(o->devices) >= len) {
		fprintf(stderr, "%s: --devices: list too long\n", o->name);
		return 0;
	}
	strcpy(buf, o->devices);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == TRAINER_MAX_DEVICES) {
			fprintf(stderr, "%s: --devices: more than %d\n",
				o->name, TRAINER_MAX_DEVICES);
			return 0;
		}
		names[n++] = tok;
	}
	if (!n)
		fprintf(stderr, "%s: --devices: no device named\n", o->name);
	return n;
}

/*
 * Compile on --device, or replicated on --devices. Return: 0, -errno (see
 * vtpu_model_error()) or 1 (a bad --devices, said why).
 */
static int trainer_compile(struct vtpu_model *m, const struct trainer_opts *o,
			   struct vtpu_compile_opts *co)
{
	const char *names[TRAINER_MAX_DEVICES];
	uint32_t n, ranks = (uint32_t)vtpu_dist_size();
	char buf[4096];

	if (!o->devices && ranks < 2)
		return vtpu_model_compile(m, co);
	if (o->devices) {
		n = device_list(o, buf, sizeof(buf), names);
		if (!n)
			return 1; /* said why */
	} else {
		names[0] = o->device;
		n = 1;
	}
	if (ranks > 1) {
		if (vtpu_model_compile_distributed(m, names, n, co))
			return -1;
		printf("data parallel: %u ranks x %u replicas, global batch %u (%u each)\n",
		       ranks, n, co->batch, co->batch / (ranks * n));
		return 0;
	}
	if (vtpu_model_compile_replicated(m, names, n, co))
		return -1;
	printf("data parallel: %u replicas, global batch %u (%u each)\n", n,
	       co->batch, co->batch / n);
	return 0;
}

int trainer_run(struct vtpu_model *m, const struct trainer_opts *o,
		struct vtpu_compile_opts *co, const struct vtpu_dataset *train,
		const struct vtpu_dataset *test)
{
	VTPU_FIT_OPTS(fo, .epochs = o->epochs, .progress = stdout,
		      .validation = test,
		      .augment = { .flip = o->flip, .shift = o->shift });
	struct vtpu_model_info info;
	struct vtpu_stream_info si = { 0 };
	struct fit_ctx fc = { .o = o };
	double loss, acc;
	int ret;

	co->device = o->device;
	co->batch = o->batch;
	co->seed = o->seed;
	co->threads = o->threads;
	co->cpu_gemm = o->gemm;
	co->input_scale = o->input_scale;
	co->cpu_mem_cap = (uint64_t)o->mem_cap << 20;
	if (o->train_stream)
		vtpu_stream_get_info(o->train_stream, &si);
	else
		si.n = train->n;
	if (o->standardize && o->train_stream) {
		fprintf(stderr, "%s: --standardize needs the decoded set (not --stream)\n",
			o->name);
		return 2;
	}
	if (o->standardize) {
		float mean, std;

		if (vtpu_dataset_pixel_stats(train, &mean, &std) || !(std > 0)) {
			fprintf(stderr, "%s: cannot standardise: no pixel variance\n",
				o->name);
			return 1;
		}
		co->input_scale = 1.0f / (255.0f * std);
		co->input_shift = -mean / std;
		printf("inputs standardised: (x / 255 - %.4f) / %.4f\n", mean,
		       std);
	}
	if (o->lr > 0)
		co->learning_rate = o->lr;
	fo.ctx = &fc;
	if (o->cosine)
		fo.lr_schedule = cosine_decay;
	if (o->report_input || o->exact_loss)
		fo.on_epoch = report_input;

	vtpu_model_summary(m, stdout);
	ret = trainer_compile(m, o, co);
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "%s: %s\n", o->name,
				vtpu_model_error(m));
		return 1;
	}
	vtpu_model_info(m, &info);
	printf("compiled for %s: %u commands per step (%u bytes), %.1f ms; "
	       "activations %.1f MiB (%.1f MiB without reuse)\n",
	       info.backend, info.commands, info.stream_bytes, info.compile_ms,
	       info.work_bytes / 1048576.0, info.naive_bytes / 1048576.0);
	printf("train on %u images, test on %u\n", si.n, test->n);
	fflush(stdout);
	if (o->load && vtpu_model_load(m, o->load)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	if (!o->epochs)
		printf("--epochs 0: evaluating only%s\n",
		       o->load ? "" : ", with the initial weights (no --load)");
	ret = !o->epochs ? 0 : o->train_stream ?
		vtpu_model_fit_stream(m, o->train_stream, &fo) :
		vtpu_model_fit(m, train, &fo);
	if (ret || vtpu_model_evaluate(m, test, &loss, &acc)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	if (o->save && !vtpu_dist_rank() && vtpu_model_save(m, o->save)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	if (o->exact_loss)
		printf("exact test loss %a acc %a\n", loss, acc);
	printf("test_loss: %.4f - test_acc: %.4f\n", loss, acc);
	return 0;
}
