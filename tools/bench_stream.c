// SPDX-License-Identifier: MIT
/*
 * vtpu-bench stream: one training epoch with the data set resident in
 * device memory against the same epoch streamed from a folder of JPEG
 * files (issue 27: decoding overlapped with training through the model's
 * ring of device buffers), and their ratio.
 *
 *   vtpu-bench stream [--threads N] [--json] [--reps R] [--device PATH]
 *                     [--images N] [--decoders N] [--batch B] [--nice N]
 *                     [--ring K]
 *
 * A folder of --images (default 2048) 64x64 RGB JPEG pictures in ten
 * class folders is written to a temporary folder, loaded whole at 32x32
 * for the resident epoch (vtpu_load_image_folder(), not timed) and opened
 * twice for the streamed ones (vtpu_image_folder_open(), on --decoders
 * threads, default one per CPU, at nice +--nice, default 10): "cold" has
 * no cache (cache_bytes < 0: every epoch decodes every file, as the first
 * epoch does), "warm" the default cache of decoded images (filled by its
 * warm-up epoch, so every timed epoch copies from it). The model
 * is a small CNN (two 3x3 convolutions of 16 and 32 filters with 2x2
 * pooling, a dense layer of 64, ten classes), batch --batch (default 32),
 * on the cpu backend (--device: that device), a ring of --ring buffers
 * (default 3). The three epochs take turns (bench_compare), the median of
 * --reps is shown; each streamed ratio is its time / the resident time,
 * the median of the reps' paired ratios and their range. A streamed row's
 * breakdown (struct vtpu_epoch_stats, means over the timed epochs): the
 * training thread's waits for decoded examples and for fences, its own
 * copying (the cache's) and checking, and the decoding threads' time. On the
 * cpu backend the decoding threads compete with the training threads for
 * the same cores: the ratio there says what the overlap hides of the
 * decoding, which a device's own cores would not have to share.
 */
#include <errno.h>
#include <math.h>
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
	uint32_t ring;
	/* the streamed epochs' sums, the warm-up's left out */
	int calls;
	double wait, fence, fill, decode;
	uint64_t decoded, cached;
};

static void on_epoch(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct epoch *e = ctx;

	if (!e->calls++)
		return;	/* bench_compare()'s warm-up */
	e->wait += st->input_wait_s;
	e->fence += st->fence_wait_s;
	e->fill += st->fill_s;
	e->decode += st->decode_s;
	e->decoded += st->decoded;
	e->cached += st->cached;
}

static int run_epoch(void *ctx)
{
	struct epoch *e = ctx;
	VTPU_FIT_OPTS(fo, .epochs = 1, .on_epoch = on_epoch, .ctx = e,
		      .stream_ring = e->ring);
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

/* Runner @i's paired ratios to runner 0: median, lowest, highest. */
static void ratios(const double *rates, int reps, int i, double *med,
		   double *lo, double *hi)
{
	double q[64];
	int k, n = reps < 64 ? reps : 64;

	*lo = 1e300;
	*hi = 0;
	for (k = 0; k < n; k++) {
		q[k] = rates[k] / rates[i * reps + k];
		*lo = q[k] < *lo ? q[k] : *lo;
		*hi = q[k] > *hi ? q[k] : *hi;
	}
	*med = bench_median(q, n);
}

static const char *const row_name[3] = { "resident", "cold", "warm" };

static void print_row(const struct bench_opts *o, int i,
		      const struct bench_runner *r, const struct epoch *e,
		      const double *rates)
{
	int n = e->calls > 1 ? e->calls - 1 : 1;
	double med = 1, lo = 1, hi = 1, per_img;

	if (i)
		ratios(rates, o->reps, i, &med, &lo, &hi);
	per_img = e->decoded ? e->decode / e->decoded * 1e6 : 0;
	if (o->json)
		printf("{\"bench\":\"stream\",\"epoch\":\"%s\",\"s\":%.4f,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f,\"input_wait_ms\":%.2f,\"fence_wait_ms\":%.2f,\"fill_ms\":%.2f,\"decode_ms\":%.2f,\"us_per_image\":%.1f,\"decoded\":%llu,\"cached\":%llu}\n",
		       row_name[i], 1 / r->rate, med, lo, hi,
		       e->wait / n * 1e3, e->fence / n * 1e3,
		       e->fill / n * 1e3, e->decode / n * 1e3, per_img,
		       (unsigned long long)(e->decoded / n),
		       (unsigned long long)(e->cached / n));
	else
		printf("%-8s %7.3f %6.3f %6.3f %6.3f %8.1f %8.1f %8.1f %9.1f %8.1f %7llu %7llu\n",
		       row_name[i], 1 / r->rate, med, lo, hi,
		       e->wait / n * 1e3, e->fence / n * 1e3,
		       e->fill / n * 1e3, e->decode / n * 1e3, per_img,
		       (unsigned long long)(e->decoded / n),
		       (unsigned long long)(e->cached / n));
}

int bench_stream(int argc, char **argv)
{
	char dir[] = "/tmp/vtpu-bench-stream.XXXXXX", err[256];
	uint32_t images = 2048, decoders = 0, batch = 32, ring = 3;
	int nice = 10;
	struct epoch ep[3] = { 0 };
	struct bench_runner r[3];
	struct vtpu_dataset tr = { 0 };
	struct bench_opts o;
	double *rates = NULL, cache_mib;
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
		else if (!strcmp(argv[i], "--nice") && i + 1 < argc)
			nice = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ring") && i + 1 < argc)
			ring = (uint32_t)atoi(argv[++i]);
		else
			usage(strcmp(argv[i], "--help") ? 2 : 0);
	}
	bench_opts_done(&o);
	if (images < NCLS || !batch || ring < 3 || nice < 0)
		usage(2);
	if (!decoders) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		decoders = cpus > 0 ? (uint32_t)cpus : 1;
	}
	/* --nice 0: none, which the option spells < 0 */
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3,
			       .seed = 1, .threads = decoders,
			       .decode_nice = nice ? nice : -1);

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
	io.cache_bytes = -1;
	ep[1].s = vtpu_image_folder_open(dir, &io, false, err, sizeof(err));
	io.cache_bytes = 0;
	ep[2].s = ep[1].s ? vtpu_image_folder_open(dir, &io, false, err,
						   sizeof(err)) : NULL;
	if (!ep[2].s) {
		fprintf(stderr, "vtpu-bench: %s\n", err);
		goto out;
	}
	rates = calloc(3 * (size_t)o.reps, sizeof(*rates));
	if (!rates)
		goto out;
	for (i = 0; i < 3; i++) {
		ep[i].ring = ring;
		ep[i].m = cnn(&o, batch);
		if (!ep[i].m)
			goto out;
		r[i] = (struct bench_runner){ .name = row_name[i],
					      .run = run_epoch,
					      .ctx = &ep[i], .work = 1 };
	}
	/* one epoch per rep: a target below an epoch's time */
	if (bench_compare(r, 3, o.reps, 0.01, rates))
		goto out;
	cache_mib = (double)tr.n * DST * DST * 3 / (1 << 20);
	if (o.json)
		printf("{\"bench\":\"stream\",\"header\":true,\"images\":%u,\"size\":%u,\"source_size\":%u,\"batch\":%u,\"threads\":%d,\"decoders\":%u,\"decode_nice\":%d,\"ring\":%u,\"cache_mib\":%.1f,\"reps\":%d}\n",
		       tr.n, DST, SRC, batch, o.threads, decoders, nice, ring,
		       cache_mib, o.reps);
	else
		printf("# vtpu-bench stream: %u %ux%u JPEGs (from %ux%u), batch %u, %d threads, %u decoders at nice +%d, ring %u, warm cache %.1f MiB, median of %d\n"
		       "epoch          s  ratio    min    max  wait_ms fence_ms  fill_ms decode_ms us/image decoded  cached\n",
		       tr.n, DST, DST, SRC, SRC, batch, o.threads, decoders,
		       nice, ring, cache_mib, o.reps);
	for (i = 0; i < 3; i++)
		print_row(&o, i, &r[i], &ep[i], rates);
	ret = 0;
out:
	free(rates);
	for (i = 0; i < 3; i++) {
		vtpu_model_destroy(ep[i].m);
		vtpu_stream_close(ep[i].s);
	}
	vtpu_dataset_free(&tr);
	rm_tree(dir);
	return ret;
}
