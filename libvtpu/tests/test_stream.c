// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of the streamed input path: vtpu_image_folder_open() and
 * vtpu_stream_from_dataset() sources, read directly and trained on with
 * vtpu_model_fit_stream() / vtpu_model_fit(.stream) on the cpu backend.
 * Streamed and resident epochs on the same data give the same weights, bit
 * for bit (an in-memory set, with and without augmentation; a folder of
 * JPEG and PNG files against the same folder loaded whole); a training set
 * larger than the backend's memory cap trains, streamed automatically, to
 * those weights too; corrupt and truncated files are counted, warned
 * about, replaced by good examples and reported by the progress output;
 * rejections; a fit failing mid-epoch leaves nothing behind (run under
 * valgrind or ASAN to see); the cache of decoded images (later epochs
 * copy, the same weights) and decoding straight into the example.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "image_files.h"
#include "vtpu_data.h"
#include "vtpu_model.h"

#define NCLS 3
#define PER 12			/* files per class */
#define SRC 16			/* the files' size */
#define DST 8			/* the size read */

/* A class's picture: a bright square in a class-dependent place. */
static void picture(uint8_t *px, uint32_t k, uint32_t j)
{
	uint32_t x, y, c;

	for (y = 0; y < SRC; y++)
		for (x = 0; x < SRC; x++)
			for (c = 0; c < 3; c++) {
				bool in = x / 8 == k % 2 && y / 8 == k / 2;

				px[(y * SRC + x) * 3 + c] =
					(uint8_t)((in ? 200 : 30) +
						  (x * 7 + y * 3 + j * 3 +
						   c * 11) % 40);
			}
}

/* @dir/cK/NNN.jpg|png, PER per class; @bad corrupt ones in class 1. */
static void make_folder(struct __test_metadata *_metadata, const char *dir,
			int bad)
{
	uint8_t px[SRC * SRC * 3];
	char path[256];
	uint32_t k, j;
	FILE *f;

	for (k = 0; k < NCLS; k++) {
		snprintf(path, sizeof(path), "%s/c%u", dir, k);
		ASSERT_EQ(0, mkdir(path, 0755));
		for (j = 0; j < PER; j++) {
			picture(px, k, j);
			snprintf(path, sizeof(path), "%s/c%u/%03u.%s", dir, k,
				 j, j % 3 ? "jpg" : "png");
			ASSERT_EQ(0, j % 3 ? write_rgb_jpeg(path, px, SRC, SRC) :
					     write_rgb_png(path, px, SRC, SRC));
		}
	}
	for (j = 0; j < (uint32_t)bad; j++) {
		long n;

		snprintf(path, sizeof(path), "%s/c1/bad%u.%s", dir, j,
			 j % 2 ? "png" : "jpg");
		picture(px, 1, j);
		if (j % 3 == 2) {	/* not an image at all */
			f = fopen(path, "wb");
			ASSERT_NE(NULL, f);
			fputs("this is no picture", f);
			fclose(f);
			continue;
		}
		ASSERT_EQ(0, j % 2 ? write_rgb_png(path, px, SRC, SRC) :
				     write_rgb_jpeg(path, px, SRC, SRC));
		/* truncated to a third: the header is there, the data not */
		f = fopen(path, "rb");
		ASSERT_NE(NULL, f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fclose(f);
		ASSERT_EQ(0, truncate(path, n / 3));
	}
}

FIXTURE(tmp) {
	char dir[64];
};

FIXTURE_SETUP(tmp)
{
	strcpy(self->dir, "/tmp/vtpu-test-stream.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(tmp)
{
	rm_tree(self->dir);
}

static struct vtpu_model *small_model(struct __test_metadata *_metadata,
				      uint32_t hw, uint32_t c, uint32_t batch,
				      uint64_t cap)
{
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = batch, .seed = 5,
			  .threads = 2, .cpu_mem_cap = cap);
	struct vtpu_model *m = vtpu_model_create(hw, hw, c);

	if (!m)
		return NULL;
	if (vtpu_model_add_flatten(m) ||
	    vtpu_model_add_dense(m, 16, VTPU_ACT_RELU) ||
	    vtpu_model_add_dense(m, NCLS, VTPU_ACT_SOFTMAX) ||
	    vtpu_model_compile(m, &co)) {
		TH_LOG("%s", vtpu_model_error(m));
		vtpu_model_destroy(m);
		return NULL;
	}
	return m;
}

/* Are all of @a's and @b's weights the same bits? */
static bool same_weights(struct vtpu_model *a, struct vtpu_model *b)
{
	int i, n = vtpu_model_num_weights(a);
	bool same = n == vtpu_model_num_weights(b);

	for (i = 0; same && i < n; i++) {
		struct vtpu_weight_info wi;
		uint64_t cnt = 1;
		float *x, *y;
		uint32_t d;

		vtpu_model_weight_info(a, i, &wi);
		for (d = 0; d < wi.ndim; d++)
			cnt *= wi.shape[d];
		x = malloc(cnt * 4);
		y = malloc(cnt * 4);
		same = x && y && !vtpu_model_get_weights(a, i, x, cnt) &&
		       !vtpu_model_get_weights(b, i, y, cnt) &&
		       !memcmp(x, y, cnt * 4);
		free(x);
		free(y);
	}
	return same;
}

static void record(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct vtpu_epoch_stats *last = ctx;

	if (st->epoch == 1)
		last[0] = *st;
	last[1] = *st;
}

static void random_set(struct vtpu_dataset *ds, uint32_t n, uint32_t hw,
		       uint32_t c, unsigned int seed)
{
	size_t isz = (size_t)hw * hw * c, i;

	srand(seed);
	*ds = (struct vtpu_dataset){
		.n = n, .height = hw, .width = hw, .channels = c,
		.classes = NCLS,
	};
	ds->images = malloc(n * isz);
	ds->labels = malloc(n);
	for (i = 0; i < n; i++) {
		ds->labels[i] = (uint8_t)(rand() % NCLS);
		for (size_t p = 0; p < isz; p++)
			ds->images[i * isz + p] =
				(uint8_t)(rand() % 64 + 60 * ds->labels[i]);
	}
}

/* The same in-memory set, resident and streamed: the same bits. */
static void resident_vs_streamed(struct __test_metadata *_metadata,
				 bool augment)
{
	struct vtpu_epoch_stats sa[2], sb[2];
	VTPU_FIT_OPTS(fa, .epochs = 2, .on_epoch = record, .ctx = sa);
	VTPU_FIT_OPTS(fb, .epochs = 2, .on_epoch = record, .ctx = sb,
		      .stream = true, .stream_chunk = 2, .stream_ring = 3);
	struct vtpu_model *a, *b;
	struct vtpu_dataset ds;

	if (augment) {
		fa.augment = fb.augment = (struct vtpu_augment){
			.flip = true, .shift = 1,
		};
	}
	/* 101 = 12 batches of 8 and a remainder of 5 */
	random_set(&ds, 101, 6, 2, 1);
	a = small_model(_metadata, 6, 2, 8, 0);
	b = small_model(_metadata, 6, 2, 8, 0);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, vtpu_model_fit(a, &ds, &fa)) TH_LOG("%s",
							 vtpu_model_error(a));
	ASSERT_EQ(0, vtpu_model_fit(b, &ds, &fb)) TH_LOG("%s",
							 vtpu_model_error(b));
	EXPECT_FALSE(sa[1].streamed);
	EXPECT_TRUE(sb[1].streamed);
	EXPECT_EQ(13, sb[1].steps);
	EXPECT_EQ(0, sb[1].skipped);
	EXPECT_EQ(sa[1].loss, sb[1].loss);
	EXPECT_EQ(sa[1].acc, sb[1].acc);
	EXPECT_TRUE(same_weights(a, b));
	/* and the check can fail: one more epoch of one of them */
	fb.epochs = 1;
	ASSERT_EQ(0, vtpu_model_fit(b, &ds, &fb));
	EXPECT_FALSE(same_weights(a, b));
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&ds);
}

TEST(dataset_same_weights)
{
	resident_vs_streamed(_metadata, false);
}

TEST(dataset_same_weights_augmented)
{
	resident_vs_streamed(_metadata, true);
}

/* A folder streamed trains as the same folder loaded whole. */
TEST_F(tmp, folder_same_weights)
{
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3,
			       .validation_split = 0.25f, .seed = 9,
			       .threads = 3);
	struct vtpu_epoch_stats sa[2], sb[2];
	VTPU_FIT_OPTS(fa, .epochs = 3, .on_epoch = record, .ctx = sa);
	VTPU_FIT_OPTS(fb, .epochs = 3, .on_epoch = record, .ctx = sb,
		      .stream_chunk = 1, .stream_ring = 4);
	struct vtpu_stream *s, *sv;
	struct vtpu_stream_info si;
	struct vtpu_dataset tr, va;
	struct vtpu_model *a, *b;
	char err[256];
	uint8_t *img;
	uint32_t *lab, *idx, i, skipped = 0;

	make_folder(_metadata, self->dir, 0);
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &io, &tr, &va, NULL,
					    err, sizeof(err))) TH_LOG("%s", err);
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, s) TH_LOG("%s", err);
	sv = vtpu_image_folder_open(self->dir, &io, true, err, sizeof(err));
	ASSERT_NE(NULL, sv) TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_stream_get_info(s, &si));
	EXPECT_EQ(tr.n, si.n);
	EXPECT_EQ(NCLS, si.classes);
	EXPECT_EQ(DST, si.height);
	ASSERT_EQ(0, vtpu_stream_get_info(sv, &si));
	EXPECT_EQ(va.n, si.n);

	/* read back: the loader's examples, in its order, on both sides */
	img = malloc((size_t)tr.n * DST * DST * 3);
	lab = malloc(tr.n * sizeof(*lab));
	idx = malloc(tr.n * sizeof(*idx));
	for (i = 0; i < tr.n; i++)
		idx[i] = tr.n - 1 - i;
	ASSERT_EQ(0, vtpu_stream_read(s, idx, tr.n, img, lab, &skipped));
	EXPECT_EQ(0, skipped);
	for (i = 0; i < tr.n; i++) {
		EXPECT_EQ(tr.labels[idx[i]], lab[i]);
		EXPECT_EQ(0, memcmp(img + (size_t)i * DST * DST * 3,
				    tr.images + (size_t)idx[i] * DST * DST * 3,
				    DST * DST * 3));
	}
	for (i = 0; i < va.n; i++)
		idx[i] = i;
	ASSERT_EQ(0, vtpu_stream_read(sv, idx, va.n, img, lab, NULL));
	EXPECT_EQ(0, memcmp(img, va.images, (size_t)va.n * DST * DST * 3));
	idx[0] = va.n;
	EXPECT_EQ(-EINVAL, vtpu_stream_read(sv, idx, 1, img, lab, NULL));

	/* 27 examples, batch 4: 6 batches and a remainder of 3 */
	a = small_model(_metadata, DST, 3, 4, 0);
	b = small_model(_metadata, DST, 3, 4, 0);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	fa.validation = fb.validation = &va;
	ASSERT_EQ(0, vtpu_model_fit(a, &tr, &fa));
	ASSERT_EQ(0, vtpu_model_fit_stream(b, s, &fb)) TH_LOG("%s",
							      vtpu_model_error(b));
	EXPECT_TRUE(same_weights(a, b));
	EXPECT_EQ(sa[1].val_loss, sb[1].val_loss);
	EXPECT_TRUE(sb[1].streamed);
	TH_LOG("loss %.3f -> %.3f, val_acc %.3f", sb[0].loss, sb[1].loss,
	       sb[1].val_acc);
	EXPECT_LT(sb[1].loss, sb[0].loss);

	free(img);
	free(lab);
	free(idx);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_stream_close(s);
	vtpu_stream_close(sv);
	vtpu_dataset_free(&tr);
	vtpu_dataset_free(&va);
}

/*
 * A training set of 1.2 MB against a 1 MiB cap on the cpu backend: fit()
 * streams it by itself, to the weights an uncapped resident fit gives.
 */
TEST(mem_cap)
{
	struct vtpu_epoch_stats sa[2], sb[2];
	VTPU_FIT_OPTS(fa, .epochs = 2, .on_epoch = record, .ctx = sa);
	VTPU_FIT_OPTS(fb, .epochs = 2, .on_epoch = record, .ctx = sb);
	VTPU_FIT_OPTS(fc, .epochs = 1, .stream = true, .stream_chunk = 400);
	struct vtpu_model *a, *b;
	struct vtpu_dataset ds;

	random_set(&ds, 1600, 16, 3, 2);
	a = small_model(_metadata, 16, 3, 32, 0);
	b = small_model(_metadata, 16, 3, 32, 1 << 20);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, vtpu_model_fit(a, &ds, &fa));
	ASSERT_EQ(0, vtpu_model_fit(b, &ds, &fb)) TH_LOG("%s",
							 vtpu_model_error(b));
	EXPECT_FALSE(sa[1].streamed);
	EXPECT_TRUE(sb[1].streamed);
	EXPECT_TRUE(same_weights(a, b));
	/* a ring that cannot fit the cap is refused, named */
	EXPECT_EQ(-ENOSPC, vtpu_model_fit(b, &ds, &fc));
	EXPECT_NE(NULL, strstr(vtpu_model_error(b), "ring of 3 buffers"));
	/* and the model still trains after it */
	ASSERT_EQ(0, vtpu_model_fit(b, &ds, &fb));
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_dataset_free(&ds);
}

/* Every epoch's stats, epoch e at [e - 1] (up to 4). */
static void record_all(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct vtpu_epoch_stats *all = ctx;

	if (st->epoch >= 1 && st->epoch <= 4)
		all[st->epoch - 1] = *st;
}

/*
 * The cache of decoded images: the first epoch decodes every file, later
 * ones copy from the cache, and the weights are the bits the resident set
 * and an uncached stream give; a budget one byte short means no cache.
 */
TEST_F(tmp, cache)
{
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3,
			       .seed = 3, .threads = 2);
	struct vtpu_epoch_stats sr[4], sc[4], sn[4], ss[4];
	VTPU_FIT_OPTS(fr, .epochs = 3, .on_epoch = record_all, .ctx = sr);
	VTPU_FIT_OPTS(fc, .epochs = 3, .on_epoch = record_all, .ctx = sc,
		      .stream_chunk = 2);
	VTPU_FIT_OPTS(fn, .epochs = 3, .on_epoch = record_all, .ctx = sn,
		      .stream_chunk = 2);
	VTPU_FIT_OPTS(fs, .epochs = 2, .on_epoch = record_all, .ctx = ss,
		      .stream_chunk = 2);
	const uint32_t n = NCLS * PER;
	struct vtpu_stream *c, *none, *shy;
	struct vtpu_model *r, *a, *b, *d;
	struct vtpu_dataset tr;
	char err[256];
	int e;

	make_folder(_metadata, self->dir, 0);
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &io, &tr, NULL, NULL,
					    err, sizeof(err))) TH_LOG("%s", err);
	ASSERT_EQ(n, tr.n);
	c = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	io.cache_bytes = -1;
	none = vtpu_image_folder_open(self->dir, &io, false, err,
				      sizeof(err));
	io.cache_bytes = (int64_t)n * DST * DST * 3 - 1;
	shy = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, shy);
	/* 36 examples, batch 4: 9 batches, chunks of 2 in a ring of 3 */
	r = small_model(_metadata, DST, 3, 4, 0);
	a = small_model(_metadata, DST, 3, 4, 0);
	b = small_model(_metadata, DST, 3, 4, 0);
	d = small_model(_metadata, DST, 3, 4, 0);
	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, vtpu_model_fit(r, &tr, &fr));
	ASSERT_EQ(0, vtpu_model_fit_stream(a, c, &fc)) TH_LOG("%s",
							      vtpu_model_error(a));
	ASSERT_EQ(0, vtpu_model_fit_stream(b, none, &fn));
	ASSERT_EQ(0, vtpu_model_fit_stream(d, shy, &fs));
	EXPECT_TRUE(same_weights(r, a));
	EXPECT_TRUE(same_weights(r, b));
	for (e = 0; e < 3; e++) {
		EXPECT_EQ(e ? 0 : n, sc[e].decoded) TH_LOG("epoch %d", e + 1);
		EXPECT_EQ(e ? n : 0, sc[e].cached) TH_LOG("epoch %d", e + 1);
		EXPECT_EQ(n, sn[e].decoded);
		EXPECT_EQ(0, sn[e].cached);
		EXPECT_EQ(sr[e].loss, sc[e].loss);
		EXPECT_LE(sc[e].input_wait_s + sc[e].fence_wait_s +
			  sc[e].fill_s, sc[e].seconds);
		EXPECT_FALSE(sr[e].decoded || sr[e].cached ||
			     sr[e].decode_s > 0 || sr[e].input_wait_s > 0);
	}
	EXPECT_LT(0, sc[0].decode_s);
	EXPECT_EQ(0, sc[1].decode_s);
	EXPECT_EQ(n, ss[1].decoded);
	EXPECT_EQ(0, ss[1].cached);
	/* and the weights check can fail: the short fit differs */
	EXPECT_FALSE(same_weights(r, d));
	vtpu_model_destroy(r);
	vtpu_model_destroy(a);
	vtpu_model_destroy(b);
	vtpu_model_destroy(d);
	vtpu_stream_close(c);
	vtpu_stream_close(none);
	vtpu_stream_close(shy);
	vtpu_dataset_free(&tr);
}

/*
 * A JPEG whose DCT scale gives the size asked exactly is decoded straight
 * into the example: the bytes libjpeg itself gives at that scale.
 */
TEST_F(tmp, decode_in_place)
{
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3);
	struct jpeg_decompress_struct ci;
	struct jpeg_error_mgr jerr;
	uint8_t px[SRC * SRC * 3], want[DST * DST * 3];
	struct vtpu_dataset ds;
	char path[256], err[256];
	JSAMPROW row;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c0", self->dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/c0/x.jpg", self->dir);
	picture(px, 2, 5);
	ASSERT_EQ(0, write_rgb_jpeg(path, px, SRC, SRC));
	f = fopen(path, "rb");
	ASSERT_NE(NULL, f);
	ci.err = jpeg_std_error(&jerr);
	jpeg_create_decompress(&ci);
	jpeg_stdio_src(&ci, f);
	jpeg_read_header(&ci, TRUE);
	ci.out_color_space = JCS_RGB;
	ci.scale_num = 1;
	ci.scale_denom = SRC / DST;
	jpeg_start_decompress(&ci);
	ASSERT_EQ(DST, ci.output_width);
	while (ci.output_scanline < ci.output_height) {
		row = want + ci.output_scanline * DST * 3;
		jpeg_read_scanlines(&ci, &row, 1);
	}
	jpeg_finish_decompress(&ci);
	jpeg_destroy_decompress(&ci);
	fclose(f);
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &io, &ds, NULL, NULL,
					    err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(0, memcmp(ds.images, want, sizeof(want)));
	vtpu_dataset_free(&ds);
}

/* Corrupt and truncated files: counted, warned, replaced, reported. */
TEST_F(tmp, bad_files)
{
	char *wbuf = NULL, *pbuf = NULL, *w, err[256];
	size_t wlen = 0, plen = 0;
	FILE *warn = open_memstream(&wbuf, &wlen);
	FILE *prog = open_memstream(&pbuf, &plen);
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3,
			       .seed = 4, .threads = 2, .warnings = warn);
	struct vtpu_epoch_stats st[2];
	VTPU_FIT_OPTS(fo, .epochs = 2, .on_epoch = record, .ctx = st,
		      .progress = prog);
	const size_t isz = DST * DST * 3;
	uint32_t idx[NCLS * PER + 3], lab[NCLS * PER + 3], i, j, n, bad = 0;
	uint32_t skipped = 0;
	struct vtpu_stream_info si;
	struct vtpu_stream *s;
	struct vtpu_model *m;
	uint8_t *img;

	make_folder(_metadata, self->dir, 3);
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, s) TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_stream_get_info(s, &si));
	n = si.n;
	ASSERT_EQ(NCLS * PER + 3, n);
	img = malloc(n * isz);
	for (i = 0; i < n; i++)
		idx[i] = i;
	ASSERT_EQ(0, vtpu_stream_read(s, idx, n, img, lab, &skipped));
	EXPECT_EQ(3, skipped);
	fflush(warn);
	for (i = 0, w = wbuf; w && (w = strstr(w, ": skipped: ")); i++)
		w++;
	EXPECT_EQ(3, i);
	/* every slot holds a real example: a class-1 bad file's copy */
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			if (j != i && !memcmp(img + i * isz, img + j * isz,
					      isz))
				break;
		bad += j < n;
		EXPECT_LT(lab[i], NCLS);
	}
	/* the 3 replaced and the ones they copy */
	EXPECT_LE(3, bad);
	EXPECT_GE(6, bad);

	/* a fit: 3 skipped per epoch, in the stats and in the progress */
	m = small_model(_metadata, DST, 3, 4, 0);
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_fit_stream(m, s, &fo)) TH_LOG("%s",
							      vtpu_model_error(m));
	EXPECT_EQ(3, st[0].skipped);
	EXPECT_EQ(3, st[1].skipped);
	/* the good ones come from the cache the read filled; the bad ones
	 * are tried again every epoch */
	EXPECT_EQ(3, st[0].decoded);
	EXPECT_EQ(n - 3, st[0].cached);
	EXPECT_EQ(3, st[1].decoded);
	EXPECT_EQ(n - 3, st[1].cached);
	fflush(prog);
	EXPECT_NE(NULL, strstr(pbuf, "3 example(s) skipped this epoch"))
		TH_LOG("%s", pbuf);
	vtpu_model_destroy(m);
	vtpu_stream_close(s);
	free(img);
	fclose(warn);
	fclose(prog);
	free(wbuf);
	free(pbuf);
}

/* Nothing decodes: an error, not a crash nor a hang. */
TEST_F(tmp, nothing_decodes)
{
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3);
	VTPU_FIT_OPTS(fo, .epochs = 1);
	struct vtpu_stream *s;
	struct vtpu_model *m;
	char path[256], err[256];
	uint32_t idx[2] = { 0, 1 }, lab[2];
	uint8_t img[2 * DST * DST * 3];

	snprintf(path, sizeof(path), "%s/a", self->dir);
	ASSERT_EQ(0, mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/a/x.jpg", self->dir);
	fclose(fopen(path, "wb"));
	snprintf(path, sizeof(path), "%s/a/y.png", self->dir);
	fclose(fopen(path, "wb"));
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, s) TH_LOG("%s", err);
	EXPECT_EQ(-EIO, vtpu_stream_read(s, idx, 2, img, lab, NULL));
	m = small_model(_metadata, DST, 3, 2, 0);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(-EIO, vtpu_model_fit_stream(m, s, &fo));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "no example could be"));
	vtpu_model_destroy(m);
	vtpu_stream_close(s);
}

/* What is refused, and a fit failing half-way through an epoch. */
TEST_F(tmp, rejections)
{
	VTPU_IMAGE_FOLDER_OPTS(io, .height = DST, .width = DST, .channels = 3);
	VTPU_FIT_OPTS(fo, .epochs = 1, .stream = true, .stream_chunk = 1);
	struct vtpu_stream *s;
	struct vtpu_model *m;
	struct vtpu_dataset ds;
	char err[256];

	make_folder(_metadata, self->dir, 0);
	errno = 0;
	EXPECT_EQ(NULL, vtpu_image_folder_open(self->dir, &io, true, err,
					       sizeof(err)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_NE(NULL, strstr(err, "validation_split"));
	EXPECT_EQ(NULL, vtpu_image_folder_open("/nonexistent/x", &io, false,
					       err, sizeof(err)));
	EXPECT_EQ(ENOENT, errno);
	memset(&ds, 0, sizeof(ds));
	EXPECT_EQ(NULL, vtpu_stream_from_dataset(&ds));

	m = small_model(_metadata, DST, 3, 4, 0);
	ASSERT_NE(NULL, m);
	/* a ring of 2 */
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, s);
	fo.stream_ring = 2;
	EXPECT_EQ(-EINVAL, vtpu_model_fit_stream(m, s, &fo));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "stream_ring 2"));
	fo.stream_ring = 0;
	vtpu_stream_close(s);
	/* images of another size */
	io.height = io.width = DST / 2;
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	ASSERT_NE(NULL, s);
	EXPECT_EQ(-EINVAL, vtpu_model_fit_stream(m, s, &fo));
	vtpu_stream_close(s);
	/* a label the model cannot take, in the middle of the epoch */
	random_set(&ds, 40, DST, 3, 3);
	ds.labels[30] = NCLS;
	fo.no_shuffle = true;
	s = vtpu_stream_from_dataset(&ds);
	ASSERT_NE(NULL, s);
	EXPECT_EQ(-EINVAL, vtpu_model_fit_stream(m, s, &fo));
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), "not below 3 classes"));
	/* the model and the source are still good */
	ds.labels[30] = 0;
	EXPECT_EQ(0, vtpu_model_fit_stream(m, s, &fo));
	vtpu_stream_close(s);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
	/* opened, read from and closed with its threads idle; never read */
	io.height = io.width = DST;
	s = vtpu_image_folder_open(self->dir, &io, false, err, sizeof(err));
	vtpu_stream_close(s);
	vtpu_stream_close(NULL);
}

TEST_HARNESS_MAIN
