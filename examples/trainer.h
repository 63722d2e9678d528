/* SPDX-License-Identifier: MIT */
/*
 * What the example trainers share: the command line, loading a dataset,
 * and the compile / fit / evaluate / save sequence with Keras-style output.
 * Each example keeps only what makes it itself: its model.
 */
#ifndef VTPU_EXAMPLES_TRAINER_H
#define VTPU_EXAMPLES_TRAINER_H

#include <stdbool.h>
#include <stdint.h>

#include <vtpu_model.h>

struct trainer_opts {
	const char *name;	/* "mnist" */
	const char *device;	/* --device: /dev/vtpuN or cpu */
	const char *devices;	/* --devices: a comma list, or "all" */
	const char *data;	/* --data DIR */
	bool data_default;	/* no --data: the default, relative to the cwd */
	const char *save;	/* --save FILE */
	const char *load;	/* --load FILE */
	uint32_t epochs;	/* --epochs */
	uint32_t batch;		/* --batch */
	uint32_t limit;		/* --limit N: first N training images */
	uint32_t test_limit;	/* --test-limit N */
	int threads;		/* --threads (cpu backend) */
	int gemm;		/* --gemm engine|openblas (cpu backend) */
	float lr;		/* --lr */
	float input_scale;	/* --input-scale: pixel multiplier (1/255) */
	bool standardize;	/* --standardize / --no-standardize */
	bool flip;		/* --flip / --no-flip */
	uint32_t shift;		/* --shift N */
	bool cosine;		/* --lr-decay cosine / none */
	uint32_t beam;		/* --beam N: translate's beam width (1) */
	bool additive;		/* --attention additive: translate's Bahdanau */
	uint64_t seed;		/* --seed */
	bool exact_loss;	/* --exact-loss: hex floats, to compare runs */
	/* flowers (image folders) */
	const char *model;	/* --model resnet|xception|vgg */
	const char *test_data;	/* --test-data DIR */
	uint32_t size;		/* --size N: input side */
	uint32_t width;		/* --width N: the network's first width */
	float split;		/* --validation-split X */
	bool augment;		/* --augment: random crop and flip layers */
	bool stream;		/* --stream: decode the files every epoch */
	uint32_t mem_cap;	/* --mem-cap MB (cpu backend) */
	/* not flags: set by the example */
	struct vtpu_stream *train_stream; /* train from this, not @train */
	bool report_input;	/* a line per epoch: input mode, skips */
	uint32_t load_skipped;	/* files skipped decoding the set once */
};

enum trainer_dataset { TRAINER_MNIST, TRAINER_CIFAR10 };

/* Parses argv into @o (which holds the example's defaults); exits on error. */
void trainer_parse(int argc, char **argv, struct trainer_opts *o);

/* Loads the train and test sets (honouring --limit); exits on error. */
void trainer_load(const struct trainer_opts *o, enum trainer_dataset which,
		  struct vtpu_dataset *train, struct vtpu_dataset *test);

/*
 * Compiles @m with @co on o->device (or replicated on --devices), loads
 * --load, fits (on o->train_stream if set, else on @train), evaluates on
 * the test set, saves --save, and prints "test_acc: 0.9812" last.
 * Returns the process exit status.
 */
int trainer_run(struct vtpu_model *m, const struct trainer_opts *o,
		struct vtpu_compile_opts *co, const struct vtpu_dataset *train,
		const struct vtpu_dataset *test);

#endif /* VTPU_EXAMPLES_TRAINER_H */
