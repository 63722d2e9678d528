// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

static void usage(const struct trainer_opts *o, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [options]\n"
		"  --device PATH    /dev/vtpuN or cpu (default %s)\n"
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
		"  --version        print the version and exit\n",
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

/* A finite number above zero, or exit 2 saying what was wrong. */
static float positive(const struct trainer_opts *o, const char *opt,
		      const char *arg)
{
	char *end;
	float v;

	errno = 0;
	v = strtof(arg, &end);
	if (errno || *end || end == arg || !isfinite(v) || !(v > 0)) {
		fprintf(stderr, "%s: %s wants a number above zero, not '%s'\n",
			o->name, opt, arg);
		exit(2);
	}
	return v;
}

void trainer_parse(int argc, char **argv, struct trainer_opts *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
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
		{ "attention", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int c;

	o->data_default = true;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->device = optarg; break;
		case 'D': o->data = optarg; o->data_default = false; break;
		case 'e': o->epochs = number(o, "--epochs", optarg); break;
		case 'b': o->batch = number(o, "--batch", optarg); break;
		case 'l': o->limit = number(o, "--limit", optarg); break;
		case 'L': o->test_limit = number(o, "--test-limit", optarg); break;
		case 'r': o->lr = positive(o, "--lr", optarg); break;
		case 'i':
			o->input_scale = positive(o, "--input-scale", optarg);
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
		case 'A':
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

/* Cosine decay by epoch, from the rate the first epoch is given. */
static float cosine_decay(void *ctx, uint32_t epoch, uint32_t epochs,
			  float lr)
{
	float *lr0 = ctx;

	if (epoch == 1)
		*lr0 = lr;
	return *lr0 * 0.5f * (1.0f + cosf((float)M_PI * (float)(epoch - 1) /
					  (float)epochs));
}

int trainer_run(struct vtpu_model *m, const struct trainer_opts *o,
		struct vtpu_compile_opts *co, const struct vtpu_dataset *train,
		const struct vtpu_dataset *test)
{
	VTPU_FIT_OPTS(fo, .epochs = o->epochs, .progress = stdout,
		      .validation = test,
		      .augment = { .flip = o->flip, .shift = o->shift });
	struct vtpu_model_info info;
	float lr0;
	double loss, acc;

	co->device = o->device;
	co->batch = o->batch;
	co->seed = o->seed;
	co->threads = o->threads;
	co->cpu_gemm = o->gemm;
	co->input_scale = o->input_scale;
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
	if (o->cosine) {
		fo.lr_schedule = cosine_decay;
		fo.ctx = &lr0;
	}

	vtpu_model_summary(m, stdout);
	if (vtpu_model_compile(m, co)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	vtpu_model_info(m, &info);
	printf("compiled for %s: %u commands per step (%u bytes), %.1f ms; "
	       "activations %.1f MiB (%.1f MiB without reuse)\n",
	       info.backend, info.commands, info.stream_bytes, info.compile_ms,
	       info.work_bytes / 1048576.0, info.naive_bytes / 1048576.0);
	printf("train on %u images, test on %u\n", train->n, test->n);
	fflush(stdout);
	if (o->load && vtpu_model_load(m, o->load)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	if (!o->epochs)
		printf("--epochs 0: evaluating only%s\n",
		       o->load ? "" : ", with the initial weights (no --load)");
	if ((o->epochs && vtpu_model_fit(m, train, &fo)) ||
	    vtpu_model_evaluate(m, test, &loss, &acc)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	if (o->save && vtpu_model_save(m, o->save)) {
		fprintf(stderr, "%s: %s\n", o->name, vtpu_model_error(m));
		return 1;
	}
	printf("test_loss: %.4f - test_acc: %.4f\n", loss, acc);
	return 0;
}
