// SPDX-License-Identifier: MIT
/*
 * flowers: an image classifier trained on a folder of JPEG and PNG images,
 * one folder per class, as the seeds' Keras code trains on tf_flowers with
 * image_dataset_from_directory():
 *
 *   [RandomCrop, RandomFlip (--augment)] -> ResNet-style, Xception-style
 *     or small VGG-style network (libvtpu/applications.c) -> Dense(softmax)
 *
 * Adam with learning rate 1e-3. The images are resized to --size (64) as
 * they are decoded; with --augment they are decoded at 9/8 of it and a
 * random --size window of each is taken on the device (the centre one
 * when evaluating), then flipped left to right with probability 1/2.
 *
 * The training side is decoded once into memory and fit() decides: the
 * set lives in device memory if it fits, else it is streamed from host
 * memory through a ring of device buffers. --stream decodes the files
 * anew every epoch instead (a folder larger than host memory). Each epoch
 * says which it was and how many files were skipped as corrupt; at the
 * end, the accuracy of each class and the class it is most taken for.
 *
 *   tools/get-datasets tf-flowers   # into data/tf-flowers/flower_photos
 *   build/bin/flowers --device /dev/vtpu0 --model xception --epochs 20
 *   build/bin/vtpu-make-image-folder --size 32 \
 *       ../shared/datasets/fashion-mnist /tmp/fm
 *   build/bin/flowers --device cpu --data /tmp/fm/train \
 *       --test-data /tmp/fm/test --size 32 --width 16 --stream
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trainer.h"

/* the folder's class names (stream mode: the loader did not list them) */
static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static char **list_classes(const char *dir, uint32_t classes)
{
	struct dirent **d;
	char **names = calloc(classes, sizeof(*names)), path[4096];
	struct stat st;
	uint32_t k = 0;
	int n, i;

	n = scandir(dir, &d, not_hidden, by_name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, d[i]->d_name);
		if (names && k < classes && !stat(path, &st) &&
		    S_ISDIR(st.st_mode))
			names[k++] = strdup(d[i]->d_name);
		free(d[i]);
	}
	if (n >= 0)
		free(d);
	return names;
}

/* the validation side of a streamed folder, decoded into memory */
static int read_stream(struct vtpu_stream *s, struct vtpu_dataset *ds)
{
	struct vtpu_stream_info si;
	uint32_t i, *idx, *lab, skipped = 0;
	size_t isz;
	int ret;

	vtpu_stream_get_info(s, &si);
	*ds = (struct vtpu_dataset){
		.n = si.n, .height = si.height, .width = si.width,
		.channels = si.channels, .classes = si.classes,
	};
	isz = vtpu_dataset_image_size(ds);
	ds->images = malloc(isz * si.n);
	ds->labels = malloc(si.n);
	idx = malloc(si.n * sizeof(*idx));
	lab = malloc(si.n * sizeof(*lab));
	ret = -ENOMEM;
	if (ds->images && ds->labels && idx && lab) {
		for (i = 0; i < si.n; i++)
			idx[i] = i;
		ret = vtpu_stream_read(s, idx, si.n, ds->images, lab,
				       &skipped);
		printf("validation: %u images decoded, %u skipped (each replaced by a copy of a good one)\n",
		       si.n - skipped, skipped);
		for (i = 0; !ret && i < si.n; i++)
			ds->labels[i] = (uint8_t)lab[i];
	}
	free(idx);
	free(lab);
	if (ret)
		vtpu_dataset_free(ds);
	return ret;
}

/* Each class's accuracy on @test and what it is most taken for. */
static void per_class(struct vtpu_model *m, const struct vtpu_dataset *test,
		      char **names, uint32_t classes)
{
	uint32_t *cm = calloc((size_t)classes * classes, sizeof(*cm));
	size_t isz = vtpu_dataset_image_size(test);
	float *p = malloc(256 * classes * sizeof(*p));
	uint32_t i, j, k, n;

	if (!cm || !p)
		goto out;
	for (i = 0; i < test->n; i += n) {
		n = test->n - i < 256 ? test->n - i : 256;
		if (vtpu_model_predict(m, test->images + i * isz, n, p))
			goto out;
		for (j = 0; j < n; j++) {
			uint32_t best = 0;

			for (k = 1; k < classes; k++)
				if (p[j * classes + k] > p[j * classes + best])
					best = k;
			cm[test->labels[i + j] * classes + best]++;
		}
	}
	printf("per class: accuracy (images), most taken for\n");
	for (i = 0; i < classes; i++) {
		uint32_t tot = 0, worst = i;

		for (k = 0; k < classes; k++) {
			tot += cm[i * classes + k];
			if (k != i && (worst == i || cm[i * classes + k] >
						      cm[i * classes + worst]))
				worst = k;
		}
		printf("  %-14s %.3f (%u)", names && names[i] ? names[i] : "?",
		       tot ? (double)cm[i * classes + i] / tot : 0.0, tot);
		if (worst != i && cm[i * classes + worst])
			printf("  %s %.1f%%", names && names[worst] ?
			       names[worst] : "?",
			       100.0 * cm[i * classes + worst] / tot);
		printf("\n");
	}
out:
	free(cm);
	free(p);
}

static void no_folder(const struct trainer_opts *o, const char *dir)
{
	fprintf(stderr, "%s: %s: %s\n", o->name, dir, strerror(errno));
	if (o->data_default && dir == o->data)
		fprintf(stderr, "%s: %s is where tools/get-datasets tf-flowers puts it (run it from the checkout); or pass --data DIR\n",
			o->name, o->data);
	exit(2);
}

int main(int argc, char **argv)
{
	struct trainer_opts o = {
		.name = "flowers", .device = "/dev/vtpu0",
		.data = "data/tf-flowers/flower_photos", .epochs = 10,
		.batch = 32, .seed = 1337, .model = "resnet", .size = 64,
		.split = 0.2f, .report_input = true,
	};
	VTPU_COMPILE_OPTS(co, .optimizer = VTPU_OPT_ADAM,
			  .learning_rate = 1e-3f);
	VTPU_IMAGE_FOLDER_OPTS(fo, .channels = 3, .warnings = stderr);
	VTPU_APP_OPTS(ao);
	struct vtpu_image_folder_info info = { 0 }, tinfo = { 0 };
	struct vtpu_dataset train = { 0 }, val = { 0 }, test = { 0 };
	struct vtpu_stream *vs = NULL;
	int (*app)(struct vtpu_graph *, int, uint32_t,
		   const struct vtpu_app_opts *);
	char err[512], **names = NULL;
	struct vtpu_stream_info si;
	const struct vtpu_dataset *eval;
	struct vtpu_model *m;
	struct stat st;
	uint32_t in, classes, i;
	int x, status = 1;

	trainer_parse(argc, argv, &o);
	ao.width = o.width;
	if (!strcmp(o.model, "resnet"))
		app = vtpu_app_resnet;
	else if (!strcmp(o.model, "xception"))
		app = vtpu_app_xception;
	else if (!strcmp(o.model, "vgg"))
		app = vtpu_app_vgg;
	else {
		fprintf(stderr, "flowers: --model wants resnet, xception or vgg, not '%s'\n",
			o.model);
		return 2;
	}
	if (!o.size || o.size > 4096 || o.width > 1024) {
		fprintf(stderr, "flowers: --size wants 1..4096, --width 1..1024\n");
		return 2;
	}
	if (!o.split && !o.test_data) {
		fprintf(stderr, "flowers: nothing to evaluate on: give --validation-split above 0 or --test-data DIR\n");
		return 2;
	}
	if (o.stream && o.limit) {
		fprintf(stderr, "flowers: --limit is for a decoded set, not --stream\n");
		return 2;
	}
	if (stat(o.data, &st))
		no_folder(&o, o.data);
	if (o.test_data && stat(o.test_data, &st))
		no_folder(&o, o.test_data);

	in = o.augment ? o.size + o.size / 8 : o.size;
	fo.height = fo.width = in;
	fo.validation_split = o.split;
	fo.seed = o.seed;
	fo.threads = o.threads > 0 ? (uint32_t)o.threads : 0;
	if (o.stream) {
		o.train_stream = vtpu_image_folder_open(o.data, &fo, false,
							err, sizeof(err));
		if (o.train_stream && o.split) {
			vs = vtpu_image_folder_open(o.data, &fo, true, err,
						    sizeof(err));
			if (vs && read_stream(vs, &val)) {
				snprintf(err, sizeof(err),
					 "%s: no validation image decoded",
					 o.data);
				vtpu_stream_close(vs);
				vs = NULL;
			}
			if (!vs) {
				vtpu_stream_close(o.train_stream);
				o.train_stream = NULL;
			}
		}
		if (!o.train_stream) {
			fprintf(stderr, "flowers: %s\n", err);
			return 2;
		}
		vtpu_stream_get_info(o.train_stream, &si);
		classes = si.classes;
		names = list_classes(o.data, classes);
		printf("%s: %u training images in %u classes, decoded every epoch at %ux%u\n",
		       o.data, si.n, classes, in, in);
	} else {
		if (vtpu_load_image_folder(o.data, &fo, &train,
					   o.split ? &val : NULL, &info, err,
					   sizeof(err))) {
			fprintf(stderr, "flowers: %s\n", err);
			return 2;
		}
		classes = info.classes;
		names = info.class_names;
		o.load_skipped = info.skipped;
		if (o.limit && o.limit < train.n)
			vtpu_dataset_truncate(&train, o.limit);
		printf("%s: %u files in %u classes: %u decoded at %ux%u, %u skipped (corrupt or unreadable), %u other files ignored\n",
		       o.data, info.files, classes, info.decoded, in, in,
		       info.skipped, info.ignored);
	}
	eval = &val;
	if (o.test_data) {
		fo.validation_split = 0;
		if (vtpu_load_image_folder(o.test_data, &fo, &test, NULL,
					   &tinfo, err, sizeof(err))) {
			fprintf(stderr, "flowers: %s\n", err);
			status = 2;
			goto out;
		}
		for (i = 0; i < classes && tinfo.classes == classes; i++)
			if (names && names[i] &&
			    strcmp(names[i], tinfo.class_names[i]))
				break;
		if (i != classes || tinfo.classes != classes) {
			fprintf(stderr, "flowers: %s's classes are not those of %s\n",
				o.test_data, o.data);
			status = 2;
			goto out;
		}
		printf("%s: %u test images, %u skipped\n", o.test_data, test.n,
		       tinfo.skipped);
		eval = &test;
	}
	if (o.test_limit && o.test_limit < eval->n)
		vtpu_dataset_truncate(o.test_data ? &test : &val, o.test_limit);

	m = vtpu_model_create(in, in, 3);
	if (!m)
		goto out;
	x = 0;
	if (o.augment) {
		x = vtpu_graph_random_crop(vtpu_model_graph(m), x, o.size,
					   o.size);
		if (x >= 0)
			x = vtpu_graph_random_flip(vtpu_model_graph(m), x);
	}
	if (x >= 0)
		x = app(vtpu_model_graph(m), x, classes, &ao);
	if (x < 0 || vtpu_model_set_output(m, x)) {
		fprintf(stderr, "flowers: building %s: %s\n", o.model,
			x < 0 ? strerror(-x) : vtpu_model_error(m));
	} else {
		printf("model: %s, width %u, input %ux%ux3%s\n", o.model,
		       o.width ? o.width : 32, o.size, o.size,
		       o.augment ? " (random crops of the images, flipped)" :
		       "");
		status = trainer_run(m, &o, &co, &train, eval);
		if (!status)
			per_class(m, eval, names, classes);
	}
	vtpu_model_destroy(m);
out:
	if (names != info.class_names) {
		for (i = 0; names && i < classes; i++)
			free(names[i]);
		free(names);
	}
	vtpu_image_folder_info_free(&info);
	vtpu_image_folder_info_free(&tinfo);
	vtpu_stream_close(o.train_stream);
	vtpu_stream_close(vs);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&val);
	vtpu_dataset_free(&test);
	return status;
}
