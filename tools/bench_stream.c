// SPDX-License-Identifier: MIT
/*
 * vtpu-bench stream: one training epoch with the data set resident in
 * device memory against the same epoch streamed from a folder of JPEG
 * files (issue 27: decoding overlapped with training through the model's
 * ring of device buffers), and their ratio.
 *
 *   vtpu-bench stream [--threads N] [--json] [--reps R] [--device PATH]
 *                     [--images N] [--decoders N] [--batch B]
 *
 * A folder of --images (default 2048) 64x64 RGB JPEG pictures in ten
 * class folders is written to a temporary folder, loaded whole at 32x32
 * for the resident epoch (vtpu_load_image_folder(), not timed) and opened
 * for the streamed one (vtpu_image_folder_open(): every epoch decodes
 * every file again, on --decoders threads, default one per CPU). The model
 * is a small CNN (two 3x3 convolutions of 16 and 32 filters with 2x2
 * pooling, a dense layer of 64, ten classes), batch --batch (default 32),
 * on the cpu backend (--device: that device). The two epochs take turns
 * (bench_compare), the median of --reps is shown; the ratio is streamed
 * time / resident time, with the range of the reps' paired ratios. On the
 * cpu backend the decoding threads compete with the training threads for
 * the same cores: the ratio there says what the overlap hides of the
 * decoding, which a device's own cores would not have to share.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "../libvtpu/tests/image_files.h"
#include "vtpu_data.h"
#include "vtpu_model.h"

#define NCLS 10
#define SRC 64
#define DST 32

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: vtpu-bench stream " BENCH_OPTS_USAGE "\n"
		"                         [--images N] [--decoders N] [--batch B]\n");
	exit(status);
}

/* @n pictures: noise around a class-dependent colour and square. */
static int write_folder(const char *dir, uint32_t n)
{
	uint8_t px[SRC * SRC * 3];
	char path[512];
	uint32_t i, k, p;

	srand(1);
	for (k = 0; k < NCLS; k++) {
		snprintf(path, sizeof(path), "%s/class%u", dir, k);
		if (mkdir(path, 0755))
			return -errno;
	}
	for (i = 0; i < n; i++) {
		k = i % NCLS;
		for (p = 0; p < sizeof(px); p++) {
			uint32_t x = p / 3 % SRC, y = p / 3 / SRC;
			bool in = x / 16 == k % 4 && y / 16 == k / 4;

			px[p] = (uint8_t)((in ? 160 : 40) +
					  20 * (p % 3 == k % 3) + rand() % 64);
		}
		snprintf(path, sizeof(path), "%s/class%u/%05u.jpg", dir, k, i);
		if (write_rgb_jpeg(path, px, SRC, SRC))
			return -errno;
	}
	return 0;
}

struct epoch {
	struct vtpu_model *m;
	const struct vtpu_dataset *ds;	/* resident, or */
	struct vtpu_stream *s;		/* streamed */
};

static int run_epoch(void *ctx)
{
	struct epoch *e = ctx;
	VTPU_FIT_OPTS(fo, .epochs = 1);
	int ret;

	ret = e->ds ? vtpu_model_fit(e->m, e->ds, &fo) :
		      vtpu_model_fit_stream(e->m, e->s, &fo);
	if (ret)
		fprintf(stderr, "vtpu-bench: %s\n", vtpu_model_error(e->m));
	return ret;
}

static struct vtpu_model *cnn(const struct bench_opts *o, uint32_t batch)
{
	VTPU_COMPILE_OPTS(co, .device = o->device ?: "cpu", .batch = batch,
			  .seed = 1, .threads = o->threads);
	struct vtpu_model *m = vtpu_model_create(DST, DST, 3);

	if (!m)
		return NULL;
	if (vtpu_model_add_conv2d(m, 16, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU) ||
	    vtpu_model_add_maxpool(m, 2, 2) ||
	    vtpu_model_add_conv2d(m, 32, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU) ||
	    vtpu_model_add_maxpool(m, 2, 2) || vtpu_model_add_flatten(m) ||
	    vtpu_model_add_dense(m, 64, VTPU_ACT_RELU) ||
	    vtpu_model_add_dense(m, NCLS, VTPU_ACT_SOFTMAX) ||
	    vtpu_model_compile(m, &co)) {
		fprintf(stderr, "vtpu-bench: %s\n", vtpu_model_error(m));
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

int bench_stream(int argc, char **argv)
{
	char dir[] = "/tmp/vtpu-bench-stream.XXXXXX", err[256];
	uint32_t images = 2048, decoders = 0, batch = 32;
	struct epoch ep[2] = { 0 };
	struct bench_runner r[2];
	struct vtpu_dataset tr = { 0 };
	struct bench_opts o;
	double *rates = NULL, lo = 1e300, hi = 0, q;
	int i, ret = 1;

	bench_opts_init(&o);
	for (i = 1; i < argc; i++) {
		int c = bench_opt(&o, argc, argv, &i);

		if (c < 0)
			usage(2);
		if (c)
			continue;
		if (!strcmp(argv[i], "--images") && i + 1 < argc)
			images = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--decoders") && i + 1 < argc)
			decoders = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = (uint32_t)atoi(argv[++i]);
		else
			usage(strcmp(argv[i], "--help") ? 2 : 0);
	}
	bench_opts_done(&o);
	if (images < NCLS || !batch)
		usage(2);
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3,
			       .seed = 1, .threads = decoders);

	if (!mkdtemp(dir)) {
		perror("vtpu-bench: mkdtemp");
		return 1;
	}
	if (write_folder(dir, images)) {
		fprintf(stderr, "vtpu-bench: cannot write %s\n", dir);
		goto out;
	}
	if (vtpu_load_image_folder(dir, &io, &tr, NULL, NULL, err,
				   sizeof(err))) {
		fprintf(stderr, "vtpu-bench: %s\n", err);
		goto out;
	}
	ep[0].ds = &tr;
	ep[1].s = vtpu_image_folder_open(dir, &io, false, err, sizeof(err));
	if (!ep[1].s) {
		fprintf(stderr, "vtpu-bench: %s\n", err);
		goto out;
	}
	ep[0].m = cnn(&o, batch);
	ep[1].m = cnn(&o, batch);
	rates = calloc(2 * (size_t)o.reps, sizeof(*rates));
	if (!ep[0].m || !ep[1].m || !rates)
		goto out;
	r[0] = (struct bench_runner){ .name = "resident", .run = run_epoch,
				      .ctx = &ep[0], .work = 1 };
	r[1] = (struct bench_runner){ .name = "streamed", .run = run_epoch,
				      .ctx = &ep[1], .work = 1 };
	/* one epoch per rep: a target below an epoch's time */
	if (bench_compare(r, 2, o.reps, 0.01, rates))
		goto out;
	for (i = 0; i < o.reps; i++) {
		q = rates[i] / rates[o.reps + i];
		lo = q < lo ? q : lo;
		hi = q > hi ? q : hi;
	}
	if (o.json)
		printf("{\"bench\":\"stream\",\"images\":%u,\"batch\":%u,\"threads\":%d,\"reps\":%d,\"resident_s\":%.4f,\"streamed_s\":%.4f,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f}\n",
		       tr.n, batch, o.threads, o.reps, 1 / r[0].rate,
		       1 / r[1].rate, r[0].rate / r[1].rate, lo, hi);
	else
		printf("epoch of %u %ux%u JPEGs, batch %u, %d threads, %d reps: resident %.3f s, streamed %.3f s, ratio %.3f (reps %.3f..%.3f)\n",
		       tr.n, DST, DST, batch, o.threads, o.reps,
		       1 / r[0].rate, 1 / r[1].rate, r[0].rate / r[1].rate,
		       lo, hi);
	ret = 0;
out:
	free(rates);
	vtpu_model_destroy(ep[0].m);
	vtpu_model_destroy(ep[1].m);
	vtpu_stream_close(ep[1].s);
	vtpu_dataset_free(&tr);
	rm_tree(dir);
	return ret;
}
