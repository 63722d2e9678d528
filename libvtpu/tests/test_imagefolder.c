// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of vtpu_load_image_folder() on real image folders built
 * here: Fashion-MNIST pictures (../shared/datasets, or generated pictures
 * when it is absent) written as 64x64 RGB JPEGs and PNGs into ten class
 * folders, loaded back at 32x32 and compared with the source pictures
 * shrunk (a 2x2 mean: what the area filter must give, within JPEG's loss);
 * the split (sizes, disjoint, deterministic per seed, across thread
 * counts); channel conversions (grey JPEG, RGBA, grey+alpha, palette,
 * 16-bit, interlaced PNG, Adobe CMYK JPEG); damaged files (truncated,
 * garbage, empty, a header claiming 100000x100000, unreadable) as counted
 * skips named in the warnings; the folders that are errors; and a model
 * trained with vtpu_model_fit() on a loaded folder.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "kselftest_harness.h"
#include "image_files.h"
#include "vtpu_data.h"
#include "vtpu_model.h"

#define NCLS 10
#define PER 20			/* images per class */
#define SRC 64			/* the files' size */
#define DST 32			/* the size loaded */

#define EXPECT_MSG(err, sub) do {					\
	if (!strstr((err), (sub)))					\
		TH_LOG("message \"%s\" lacks \"%s\"", (err), (sub));	\
	EXPECT_TRUE(strstr((err), (sub)) != NULL);			\
} while (0)

/* Fashion-MNIST's classes by label, as folder names */
static const char *const fm_names[NCLS] = {
	"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot",
};

/* ---- writing images ------------------------------------------------------ */

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f) {
		fwrite(p, 1, n, f);
		fclose(f);
	}
}

static long read_bytes(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void mkdirf(const char *fmt, const char *a, const char *b)
{
	char path[512];

	snprintf(path, sizeof(path), fmt, a, b);
	mkdir(path, 0755);
}

/* ---- the Fashion-MNIST folder -------------------------------------------- */

/*
 * ref[k][j]: class label k's j-th picture as the file holds it (64x64
 * RGB: the 28x28 picture enlarged by nearest neighbour and coloured, so the
 * three channels differ) and shrunk by 2x2 means to 32x32.
 */
struct pics {
	uint8_t big[NCLS][PER][SRC * SRC * 3];
	uint8_t ref[NCLS][PER][DST * DST * 3];
	bool png[NCLS][PER];
};

/* 3 MB: off the stack the harness keeps fixtures on */
FIXTURE(folder) {
	char dir[64];
	struct pics *pc;
};

static void source_pictures(struct _test_data_folder *self)
{
	struct vtpu_dataset fm = { 0 };
	char path[512], err[256];
	uint32_t got[NCLS] = { 0 }, i, k, j, x, y;
	const char *d = getenv("VTPU_DATASETS");
	uint8_t pic[28 * 28];

	snprintf(path, sizeof(path), "%s/fashion-mnist",
		 d && *d ? d : VTPU_SRCTOP "/../shared/datasets");
	if (vtpu_load_mnist(path, false, &fm, err, sizeof(err)))
		fprintf(stderr, "# %s: generated pictures instead\n", err);
	for (k = 0; k < NCLS; k++)
		for (j = 0; j < PER; j++) {
			const uint8_t *p = NULL;

			for (i = 0; !p && i < fm.n; i++)
				if (fm.labels[i] == k && got[k]++ == j)
					p = fm.images + (size_t)i * 28 * 28;
			for (i = 0; i < 28 * 28; i++) {
				x = i % 28, y = i / 28;
				pic[i] = p ? p[i] : (uint8_t)(x * 9 * (k + 1) +
					(y > 4 + j && y < 10 + k) * 120);
			}
			memset(got, 0, sizeof(got));
			for (y = 0; y < SRC; y++)
				for (x = 0; x < SRC; x++) {
					uint8_t v = pic[y * 28 / SRC * 28 +
							x * 28 / SRC];
					uint8_t *o = self->pc->big[k][j] +
						     (y * SRC + x) * 3;

					o[0] = v;
					o[1] = v / 2 + 64;
					o[2] = 255 - v;
				}
		}
	vtpu_dataset_free(&fm);
	for (k = 0; k < NCLS; k++)
		for (j = 0; j < PER; j++)
			for (i = 0; i < DST * DST * 3; i++) {
				uint32_t c = i % 3, x2 = i / 3 % DST * 2;
				uint32_t y2 = i / 3 / DST * 2;
				const uint8_t *b = self->pc->big[k][j];

				self->pc->ref[k][j][i] =
					(b[(y2 * SRC + x2) * 3 + c] +
					 b[(y2 * SRC + x2 + 1) * 3 + c] +
					 b[((y2 + 1) * SRC + x2) * 3 + c] +
					 b[((y2 + 1) * SRC + x2 + 1) * 3 + c] +
					 2) / 4;
			}
}

/* the extensions, in all cases Keras accepts */
static const char *ext(uint32_t j)
{
	return j == 14 ? "JPEG" : j == 13 ? "jpeg" : j < 15 ? "jpg" :
	       j == 19 ? "PNG" : "png";
}

FIXTURE_SETUP(folder)
{
	char path[512];
	uint32_t k, j;

	strcpy(self->dir, "/tmp/vtpu-test-imagefolder.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	self->pc = calloc(1, sizeof(*self->pc));
	ASSERT_NE(NULL, self->pc);
	source_pictures(self);
	for (k = 0; k < NCLS; k++) {
		mkdirf("%s/%s", self->dir, fm_names[k]);
		for (j = 0; j < PER; j++) {
			const uint8_t *px = self->pc->big[k][j];

			self->pc->png[k][j] = j >= 15;
			snprintf(path, sizeof(path), "%s/%s/%04u.%s",
				 self->dir, fm_names[k], j, ext(j));
			if (self->pc->png[k][j]) {
				ASSERT_EQ(0, write_png(path, px, SRC, SRC,
						       PNG_COLOR_TYPE_RGB, 8,
						       NULL, 0, false));
			} else {
				ASSERT_EQ(0, write_jpeg(path, px, SRC, SRC, 3,
							JCS_RGB, 95));
			}
		}
	}
	/* ignored, as Keras does: other extensions, hidden files, top files */
	snprintf(path, sizeof(path), "%s/Bag/README.txt", self->dir);
	write_bytes(path, "x", 1);
	snprintf(path, sizeof(path), "%s/Bag/.hidden.jpg", self->dir);
	write_bytes(path, "x", 1);
	snprintf(path, sizeof(path), "%s/notes.jpg", self->dir);
	write_bytes(path, "x", 1);
	mkdirf("%s/%s", self->dir, ".cache");
}

FIXTURE_TEARDOWN(folder)
{
	rm_tree(self->dir);
	free(self->pc);
}

/* "Class/0007.jpg" -> label k (Fashion-MNIST's) and j; false if not ours */
static bool parse_rel(const char *rel, uint32_t *k, uint32_t *j)
{
	const char *slash = strchr(rel, '/');

	for (*k = 0; slash && *k < NCLS; (*k)++)
		if (strlen(fm_names[*k]) == (size_t)(slash - rel) &&
		    !strncmp(rel, fm_names[*k], slash - rel))
			return sscanf(slash + 1, "%4u.", j) == 1 && *j < PER;
	return false;
}

/*
 * Every example of @ds is its file's picture: the label is the folder's,
 * the pixels the reference's (PNG within rounding; JPEG within its loss,
 * in the mean and per pixel). @seen counts the files met.
 */
static void check_examples(struct __test_metadata *_metadata,
			   struct _test_data_folder *self,
			   const struct vtpu_dataset *ds, char **files,
			   char **names, uint32_t seen[NCLS][PER])
{
	uint32_t i, p, k, j;

	for (i = 0; i < ds->n; i++) {
		const uint8_t *img = ds->images + (size_t)i * DST * DST * 3;
		double sum = 0;
		int worst = 0;

		ASSERT_NE(NULL, files[i]);
		ASSERT_TRUE(parse_rel(files[i], &k, &j)) TH_LOG("%s", files[i]);
		seen[k][j]++;
		ASSERT_LT(ds->labels[i], NCLS);
		EXPECT_STREQ(fm_names[k], names[ds->labels[i]]);
		for (p = 0; p < DST * DST * 3; p++) {
			int d = abs(img[p] - self->pc->ref[k][j][p]);

			sum += d;
			worst = d > worst ? d : worst;
		}
		if (self->pc->png[k][j]) {
			EXPECT_LE(worst, 1) TH_LOG("%s", files[i]);
		} else {
			EXPECT_LT(sum / (DST * DST * 3), 3.0)
				TH_LOG("%s: mean error %.2f", files[i],
				       sum / (DST * DST * 3));
			EXPECT_LT(worst, 64) TH_LOG("%s", files[i]);
		}
	}
	EXPECT_EQ(NULL, files[ds->n]);
}

TEST_F(folder, load_all)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = DST, .width = DST, .channels = 3,
			       .seed = 1);
	struct vtpu_image_folder_info info;
	struct vtpu_dataset ds, val;
	uint32_t seen[NCLS][PER] = { { 0 } }, k, j;
	char err[256] = "";

	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, &val, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(NCLS * PER, ds.n);
	EXPECT_EQ(0, val.n);
	EXPECT_EQ(NULL, val.images);
	EXPECT_EQ(DST, ds.height);
	EXPECT_EQ(DST, ds.width);
	EXPECT_EQ(3, ds.channels);
	EXPECT_EQ(NCLS, ds.classes);
	EXPECT_EQ(NCLS, info.classes);
	EXPECT_EQ(NCLS * PER, info.files);
	EXPECT_EQ(NCLS * PER, info.decoded);
	EXPECT_EQ(0, info.skipped);
	/* README.txt, .hidden.jpg, notes.jpg, .cache */
	EXPECT_EQ(4, info.ignored);
	EXPECT_EQ(NULL, info.val_files);
	/* sorted by byte value: "Ankle_boot" .. "Trouser" */
	EXPECT_STREQ("Ankle_boot", info.class_names[0]);
	EXPECT_STREQ("Trouser", info.class_names[NCLS - 1]);
	for (k = 1; k < NCLS; k++)
		EXPECT_LT(strcmp(info.class_names[k - 1],
				 info.class_names[k]), 0);
	check_examples(_metadata, self, &ds, info.train_files,
		       info.class_names, seen);
	for (k = 0; k < NCLS; k++)
		for (j = 0; j < PER; j++)
			EXPECT_EQ(1, seen[k][j]);
	/* shuffled, not in folder order: --limit N must see every class */
	for (k = 1; k < 20 && ds.labels[k] == ds.labels[0]; k++)
		;
	EXPECT_LT(k, 20);
	vtpu_image_folder_info_free(&info);
	EXPECT_EQ(NULL, info.class_names);
	vtpu_dataset_free(&ds);
	/* info and val may be NULL */
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)));
	EXPECT_EQ(NCLS * PER, ds.n);
	vtpu_dataset_free(&ds);
}

static void load_split(struct __test_metadata *_metadata, const char *dir,
		       uint64_t seed, uint32_t threads, uint32_t channels,
		       struct vtpu_dataset *tr, struct vtpu_dataset *va,
		       struct vtpu_image_folder_info *info)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = DST, .width = DST,
			       .channels = channels, .validation_split = 0.2f,
			       .seed = seed, .threads = threads);
	char err[256] = "";

	ASSERT_EQ(0, vtpu_load_image_folder(dir, &o, tr, va, info, err,
					    sizeof(err))) TH_LOG("%s", err);
}

static bool same_files(char **a, char **b)
{
	for (; *a && *b; a++, b++)
		if (strcmp(*a, *b))
			return false;
	return !*a && !*b;
}

TEST_F(folder, split)
{
	struct vtpu_image_folder_info i1, i2, i3;
	struct vtpu_dataset t1, v1, t2, v2, t3, v3;
	uint32_t seen[NCLS][PER] = { { 0 } }, k, j;

	load_split(_metadata, self->dir, 7, 0, 3, &t1, &v1, &i1);
	/* Keras: floor(0.2 * 200) files held out */
	EXPECT_EQ(160, t1.n);
	EXPECT_EQ(40, v1.n);
	EXPECT_EQ(NCLS, v1.classes);
	check_examples(_metadata, self, &t1, i1.train_files, i1.class_names,
		       seen);
	check_examples(_metadata, self, &v1, i1.val_files, i1.class_names,
		       seen);
	/* disjoint, and together every file once */
	for (k = 0; k < NCLS; k++)
		for (j = 0; j < PER; j++)
			EXPECT_EQ(1, seen[k][j]);

	/* the same seed: the same split and bytes, on one thread too */
	load_split(_metadata, self->dir, 7, 1, 3, &t2, &v2, &i2);
	EXPECT_TRUE(same_files(i1.train_files, i2.train_files));
	EXPECT_TRUE(same_files(i1.val_files, i2.val_files));
	ASSERT_EQ(v1.n, v2.n);
	EXPECT_EQ(0, memcmp(v1.images, v2.images,
			    (size_t)v1.n * DST * DST * 3));
	EXPECT_EQ(0, memcmp(t1.labels, t2.labels, t1.n));

	/* another seed: another split */
	load_split(_metadata, self->dir, 8, 2, 3, &t3, &v3, &i3);
	EXPECT_EQ(40, v3.n);
	EXPECT_FALSE(same_files(i1.val_files, i3.val_files));

	vtpu_image_folder_info_free(&i1);
	vtpu_image_folder_info_free(&i2);
	vtpu_image_folder_info_free(&i3);
	vtpu_dataset_free(&t1);
	vtpu_dataset_free(&v1);
	vtpu_dataset_free(&t2);
	vtpu_dataset_free(&v2);
	vtpu_dataset_free(&t3);
	vtpu_dataset_free(&v3);
}

/* RGB -> grey: Rec. 601 weights, as libjpeg and tf.image.rgb_to_grayscale */
TEST_F(folder, to_gray)
{
	struct vtpu_image_folder_info info;
	struct vtpu_dataset tr, va;
	uint32_t i, p, k, j, bad = 0;

	load_split(_metadata, self->dir, 3, 0, 1, &tr, &va, &info);
	EXPECT_EQ(1, tr.channels);
	for (i = 0; i < tr.n; i++) {
		ASSERT_TRUE(parse_rel(info.train_files[i], &k, &j));
		for (p = 0; p < DST * DST; p++) {
			const uint8_t *r = self->pc->ref[k][j] + 3 * p;
			double g = 0.299 * r[0] + 0.587 * r[1] + 0.114 * r[2];

			bad += fabs(tr.images[(size_t)i * DST * DST + p] - g) >
			       (self->pc->png[k][j] ? 2 : 40);
		}
	}
	EXPECT_EQ(0, bad);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&tr);
	vtpu_dataset_free(&va);
}

static void record(void *ctx, const struct vtpu_epoch_stats *st)
{
	struct vtpu_epoch_stats *last = ctx;

	if (st->epoch == 1)
		last[0] = *st;
	last[1] = *st;
}

/* What the loader gives, vtpu_model_fit() trains on, as any dataset. */
TEST_F(folder, fit)
{
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 16, .seed = 3);
	struct vtpu_epoch_stats st[2];
	VTPU_FIT_OPTS(fo, .epochs = 30, .on_epoch = record, .ctx = st);
	struct vtpu_image_folder_info info;
	struct vtpu_dataset tr, va;
	struct vtpu_model *m = vtpu_model_create(DST, DST, 3);

	load_split(_metadata, self->dir, 11, 0, 3, &tr, &va, &info);
	fo.validation = &va;
	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, vtpu_model_add_flatten(m));
	ASSERT_EQ(0, vtpu_model_add_dense(m, 64, VTPU_ACT_RELU));
	ASSERT_EQ(0, vtpu_model_add_dense(m, NCLS, VTPU_ACT_SOFTMAX));
	ASSERT_EQ(0, vtpu_model_compile(m, &co)) TH_LOG("%s",
						      vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_fit(m, &tr, &fo)) TH_LOG("%s",
							 vtpu_model_error(m));
	TH_LOG("loss %.3f -> %.3f, acc %.3f, val_acc %.3f", st[0].loss,
	       st[1].loss, st[1].acc, st[1].val_acc);
	EXPECT_LT(st[1].loss, st[0].loss / 2);
	EXPECT_LT(0.8, st[1].acc);
	/* 40 unseen pictures of 10 classes: well above chance (0.1) */
	EXPECT_LT(0.4, st[1].val_acc);
	vtpu_model_destroy(m);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&tr);
	vtpu_dataset_free(&va);
}

/* ---- pixel formats: one folder, 8x8 files loaded at 8x8 (no resizing) -- */

FIXTURE(tmp) {
	char dir[64];
};

FIXTURE_SETUP(tmp)
{
	strcpy(self->dir, "/tmp/vtpu-test-imagefolder.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(tmp)
{
	rm_tree(self->dir);
}

static uint8_t pat(uint32_t p, uint32_t c)
{
	return (uint8_t)(p * 37 + c * 85 + (p / 8) * 11);
}

/* the file @name's example of @ds (channels @c) */
static const uint8_t *example(const struct vtpu_dataset *ds,
			      const struct vtpu_image_folder_info *info,
			      const char *name)
{
	uint32_t i;

	for (i = 0; i < ds->n; i++)
		if (!strcmp(info->train_files[i], name))
			return ds->images + i * vtpu_dataset_image_size(ds);
	return NULL;
}

TEST_F(tmp, formats)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 8, .width = 8, .channels = 3);
	uint8_t rgba[64 * 4], ga[64 * 2], gray[64], idx[64], rgb16[64 * 6];
	uint8_t cmyk[64 * 4], rgb[64 * 3];
	png_color pal[16];
	struct vtpu_image_folder_info info;
	struct vtpu_dataset ds;
	char path[256], err[256] = "";
	const uint8_t *e;
	uint32_t p, c;
	int worst;

	for (p = 0; p < 64; p++) {
		for (c = 0; c < 3; c++) {
			rgb[p * 3 + c] = pat(p, c);
			rgba[p * 4 + c] = pat(p, c);
			/* big-endian 16-bit: the high byte is what stays */
			rgb16[p * 6 + 2 * c] = pat(p, c);
			rgb16[p * 6 + 2 * c + 1] = 0x7f;
			/* Adobe CMYK as Photoshop stores it: inverted */
			cmyk[p * 4 + c] = pat(p, c);
		}
		cmyk[p * 4 + 3] = 255;
		rgba[p * 4 + 3] = (uint8_t)(p * 4);
		gray[p] = ga[p * 2] = pat(p, 0);
		ga[p * 2 + 1] = 0;	/* transparent: still its grey */
		idx[p] = p % 16;
	}
	for (c = 0; c < 16; c++)
		pal[c] = (png_color){ pat(c, 0), pat(c, 1), pat(c, 2) };
	snprintf(path, sizeof(path), "%s/a", self->dir);
	mkdir(path, 0755);
#define P(name) (snprintf(path, sizeof(path), "%s/a/" name, self->dir), path)
	ASSERT_EQ(0, write_png(P("rgba.png"), rgba, 8, 8,
			       PNG_COLOR_TYPE_RGB_ALPHA, 8, NULL, 0, false));
	ASSERT_EQ(0, write_png(P("ga.png"), ga, 8, 8,
			       PNG_COLOR_TYPE_GRAY_ALPHA, 8, NULL, 0, false));
	ASSERT_EQ(0, write_png(P("gray.png"), gray, 8, 8, PNG_COLOR_TYPE_GRAY,
			       8, NULL, 0, false));
	ASSERT_EQ(0, write_png(P("pal.png"), idx, 8, 8,
			       PNG_COLOR_TYPE_PALETTE, 8, pal, 16, false));
	ASSERT_EQ(0, write_png(P("rgb16.png"), rgb16, 8, 8,
			       PNG_COLOR_TYPE_RGB, 16, NULL, 0, false));
	ASSERT_EQ(0, write_png(P("adam7.png"), rgb, 8, 8, PNG_COLOR_TYPE_RGB,
			       8, NULL, 0, true));
	ASSERT_EQ(0, write_jpeg(P("gray.jpg"), gray, 8, 8, 1, JCS_GRAYSCALE,
				100));
	ASSERT_EQ(0, write_jpeg(P("cmyk.jpg"), cmyk, 8, 8, 4, JCS_CMYK, 100));
	/* a PNG named .jpg: decoded by its content, as TF's decode_image */
	ASSERT_EQ(0, write_png(P("png.jpg"), rgb, 8, 8, PNG_COLOR_TYPE_RGB,
			       8, NULL, 0, false));
#undef P
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(9, ds.n);
	EXPECT_EQ(0, info.skipped);
	EXPECT_EQ(1, ds.classes);
	EXPECT_STREQ("a", info.class_names[0]);
#define CHECK(name, want, tol) do {					\
	e = example(&ds, &info, "a/" name);				\
	ASSERT_NE(NULL, e) TH_LOG(name " not loaded");		\
	worst = 0;							\
	for (p = 0; p < 64; p++)					\
		for (c = 0; c < 3; c++) {				\
			int d = abs(e[p * 3 + c] - (int)(want));	\
			worst = d > worst ? d : worst;			\
		}							\
	EXPECT_LE(worst, tol) TH_LOG(name);				\
} while (0)
	CHECK("rgba.png", pat(p, c), 0);
	CHECK("ga.png", pat(p, 0), 0);
	CHECK("gray.png", pat(p, 0), 0);
	CHECK("pal.png", pat(p % 16, c), 0);
	CHECK("rgb16.png", pat(p, c), 0);
	CHECK("adam7.png", pat(p, c), 0);
	CHECK("png.jpg", pat(p, c), 0);
	CHECK("gray.jpg", pat(p, 0), 3);
	/* YCCK at quality 100 loses a little more */
	CHECK("cmyk.jpg", pat(p, c), 12);
#undef CHECK
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&ds);

	/* and to one channel */
	o.channels = 1;
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(9, ds.n);
	EXPECT_EQ(1, ds.channels);
#define CHECK1(name, tol) do {						\
	e = example(&ds, &info, "a/" name);				\
	ASSERT_NE(NULL, e) TH_LOG(name " not loaded");		\
	worst = 0;							\
	for (p = 0; p < 64; p++) {					\
		double g = 0.299 * pat(p, 0) + 0.587 * pat(p, 1) +	\
			   0.114 * pat(p, 2);				\
		int d = (int)fabs(e[p] - g);				\
		worst = d > worst ? d : worst;				\
	}								\
	EXPECT_LE(worst, tol) TH_LOG(name);				\
} while (0)
	CHECK1("rgba.png", 1);
	CHECK1("adam7.png", 1);
	CHECK1("cmyk.jpg", 12);
#undef CHECK1
	e = example(&ds, &info, "a/gray.png");
	ASSERT_NE(NULL, e);
	for (p = 0; p < 64; p++)
		EXPECT_EQ(pat(p, 0), e[p]);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&ds);
}

/*
 * The filters on known values: shrinking 6 -> 4 columns averages what each
 * output covers (partial pixels by their share), enlarging 2 -> 4 is
 * bilinear with TF's half-pixel centres, and a large JPEG (DCT-scaled by
 * 1/8 on the way) keeps a smooth picture's values.
 */
TEST_F(tmp, resize)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 1, .width = 4, .channels = 1);
	uint8_t six[6] = { 0, 10, 20, 30, 40, 50 }, two[2] = { 0, 100 };
	static const uint8_t shrunk[4] = { 3, 17, 33, 47 };
	static const uint8_t enlarged[4] = { 0, 25, 75, 100 };
	static uint8_t big[256 * 256 * 3];
	struct vtpu_dataset ds;
	char path[256], err[256] = "";
	uint32_t x, y, c, worst = 0;

	mkdirf("%s/%s", self->dir, "c");
	snprintf(path, sizeof(path), "%s/c/six.png", self->dir);
	ASSERT_EQ(0, write_png(path, six, 6, 1, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(0, memcmp(ds.images, shrunk, 4))
		TH_LOG("%u %u %u %u", ds.images[0], ds.images[1],
		       ds.images[2], ds.images[3]);
	vtpu_dataset_free(&ds);
	unlink(path);

	snprintf(path, sizeof(path), "%s/c/two.png", self->dir);
	ASSERT_EQ(0, write_png(path, two, 2, 1, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(0, memcmp(ds.images, enlarged, 4))
		TH_LOG("%u %u %u %u", ds.images[0], ds.images[1],
		       ds.images[2], ds.images[3]);
	vtpu_dataset_free(&ds);
	unlink(path);

	for (y = 0; y < 256; y++)
		for (x = 0; x < 256; x++) {
			big[(y * 256 + x) * 3] = x;
			big[(y * 256 + x) * 3 + 1] = y;
			big[(y * 256 + x) * 3 + 2] = (x + y) / 2;
		}
	snprintf(path, sizeof(path), "%s/c/big.jpg", self->dir);
	ASSERT_EQ(0, write_jpeg(path, big, 256, 256, 3, JCS_RGB, 95));
	o.height = o.width = 32;
	o.channels = 3;
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	for (y = 0; y < 32; y++)
		for (x = 0; x < 32; x++)
			for (c = 0; c < 3; c++) {
				/* the mean of an 8x8 block of the gradient */
				double want = c == 0 ? 8 * x + 3.5 :
					      c == 1 ? 8 * y + 3.5 :
					      4 * (x + y) + 3.5;
				uint32_t d = (uint32_t)fabs(
					ds.images[(y * 32 + x) * 3 + c] - want);

				worst = d > worst ? d : worst;
			}
	EXPECT_LE(worst, 4) TH_LOG("worst error %u", worst);
	vtpu_dataset_free(&ds);
}

/*
 * vtpu_image_folder_write(): 12 grey 16x16 gradients of 3 classes written
 * as 32x32 RGB JPEGs (enlarged) and loaded back at 16x16 (shrunk): each
 * file in its class's folder under its rank, every channel the grey value
 * within JPEG's and the two resizes' loss; then the rejections.
 */
TEST_F(tmp, write)
{
	static const char *const names[3] = { "alpha", "beta", "gamma" };
	const char *bad_names[3] = { "alpha", "be/ta", "gamma" };
	VTPU_IMAGE_FOLDER_WRITE_OPTS(wo, .height = 32, .width = 32,
				     .quality = 100);
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 16, .width = 16, .channels = 3);
	struct vtpu_image_folder_info info;
	uint8_t img[12 * 256], lab[12];
	struct vtpu_dataset ds = {
		.n = 12, .height = 16, .width = 16, .channels = 1,
		.images = img, .labels = lab,
	}, back;
	char out[128], err[256] = "";
	uint32_t i, p, k, r, worst = 0, seen = 0;

	for (i = 0; i < 12; i++) {
		lab[i] = i % 3;
		for (p = 0; p < 256; p++)
			img[i * 256 + p] = (uint8_t)(6 * (p % 16) +
						     4 * (p / 16) + 9 * i);
	}
	snprintf(out, sizeof(out), "%s/out", self->dir);
	ASSERT_EQ(0, vtpu_image_folder_write(out, &ds, names, 3, &wo, err,
					     sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(0, vtpu_load_image_folder(out, &o, &back, NULL, &info, err,
					    sizeof(err)))
		TH_LOG("%s", err);
	ASSERT_EQ(12, back.n);
	ASSERT_EQ(3, info.classes);
	for (i = 0; i < back.n; i++) {
		/* "beta/00002.jpg": example 3 * 2 + 1 */
		const char *rel = info.train_files[i];
		const uint8_t *src;

		k = back.labels[i];
		ASSERT_EQ(0, strncmp(rel, names[k], strlen(names[k])));
		ASSERT_EQ(1, sscanf(rel + strlen(names[k]), "/%05u.jpg", &r));
		src = img + (3 * r + k) * 256;
		seen |= 1u << (3 * r + k);
		for (p = 0; p < 256 * 3; p++) {
			int d = back.images[i * 256 * 3 + p] - src[p / 3];

			d = d < 0 ? -d : d;
			worst = (uint32_t)d > worst ? (uint32_t)d : worst;
		}
	}
	EXPECT_EQ(0xfffu, seen);
	EXPECT_LE(worst, 4) TH_LOG("worst error %u", worst);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&back);

	EXPECT_EQ(-EINVAL, vtpu_image_folder_write(out, &ds, bad_names, 3,
						   &wo, err, sizeof(err)));
	EXPECT_MSG(err, "'be/ta' is not a folder name");
	EXPECT_EQ(-EINVAL, vtpu_image_folder_write(out, &ds, names, 2, &wo,
						   err, sizeof(err)));
	EXPECT_MSG(err, "label 2 of example 2 is not below 2 classes");
	wo.quality = 101;
	EXPECT_EQ(-EINVAL, vtpu_image_folder_write(out, &ds, names, 3, &wo,
						   err, sizeof(err)));
	EXPECT_MSG(err, "quality 101");
	wo.quality = 0;
	wo.channels = 2;
	EXPECT_EQ(-EINVAL, vtpu_image_folder_write(out, &ds, names, 3, &wo,
						   err, sizeof(err)));
	wo.channels = 0;
	wo.sz = 4;
	EXPECT_EQ(-EINVAL, vtpu_image_folder_write(out, &ds, names, 3, &wo,
						   err, sizeof(err)));
	wo.sz = sizeof(wo);
	snprintf(out, sizeof(out), "%s/no/such", self->dir);
	EXPECT_EQ(-ENOENT, vtpu_image_folder_write(out, &ds, names, 3, &wo,
						   err, sizeof(err)));
	EXPECT_MSG(err, "no/such");
}

/*
 * A PNG signature, an IHDR claiming @w x @h, an empty IDAT and IEND, the
 * CRCs right: what libpng reads before it knows the size is valid.
 */
static void write_png_header(const char *path, uint32_t w, uint32_t h)
{
	uint8_t b[57] = { 0x89, 'P', 'N', 'G', 13, 10, 26, 10,
			  0, 0, 0, 13, 'I', 'H', 'D', 'R' };
	uint32_t crc, i;

	b[16] = w >> 24, b[17] = w >> 16, b[18] = w >> 8, b[19] = w;
	b[20] = h >> 24, b[21] = h >> 16, b[22] = h >> 8, b[23] = h;
	b[24] = 8;	/* depth */
	b[25] = 2;	/* RGB */
	crc = crc32(0, b + 12, 17);
	b[29] = crc >> 24, b[30] = crc >> 16, b[31] = crc >> 8, b[32] = crc;
	for (i = 0; i < 2; i++) {
		uint8_t *ch = b + 33 + 12 * i;	/* length 0, type, CRC */

		memcpy(ch + 4, i ? "IEND" : "IDAT", 4);
		crc = crc32(0, ch + 4, 4);
		ch[8] = crc >> 24, ch[9] = crc >> 16, ch[10] = crc >> 8;
		ch[11] = crc;
	}
	write_bytes(path, b, sizeof(b));
}

TEST_F(tmp, bad_files)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 16, .width = 16, .channels = 3,
			       .threads = 2);
	uint8_t rgb[32 * 32 * 3], buf[65536], junk[3000];
	struct vtpu_image_folder_info info;
	struct vtpu_dataset ds;
	char path[256], err[256] = "", *log = NULL;
	size_t loglen = 0;
	long n;
	uint32_t i;
	FILE *w;

	for (i = 0; i < sizeof(rgb); i++)
		rgb[i] = (uint8_t)(i * 7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 2654435761u >> 13);
	snprintf(path, sizeof(path), "%s/good", self->dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/bad", self->dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/good/a.jpg", self->dir);
	ASSERT_EQ(0, write_jpeg(path, rgb, 32, 32, 3, JCS_RGB, 90));
	n = read_bytes(path, buf, sizeof(buf));
	ASSERT_GT(n, 200);
	/* truncated: the first half of a.jpg */
	snprintf(path, sizeof(path), "%s/bad/truncated.jpg", self->dir);
	write_bytes(path, buf, n / 2);
	/* a JPEG's start, then garbage */
	memcpy(junk, buf, 20);
	snprintf(path, sizeof(path), "%s/bad/garbage.jpg", self->dir);
	write_bytes(path, junk, sizeof(junk));
	snprintf(path, sizeof(path), "%s/bad/noise.jpeg", self->dir);
	write_bytes(path, junk + 20, 100);
	snprintf(path, sizeof(path), "%s/bad/empty.png", self->dir);
	write_bytes(path, "", 0);
	snprintf(path, sizeof(path), "%s/bad/huge.png", self->dir);
	write_png_header(path, 100000, 100000);
	snprintf(path, sizeof(path), "%s/good/b.png", self->dir);
	ASSERT_EQ(0, write_png(path, rgb, 32, 32, PNG_COLOR_TYPE_RGB, 8, NULL,
			       0, false));
	n = read_bytes(path, buf, sizeof(buf));
	snprintf(path, sizeof(path), "%s/bad/truncated.png", self->dir);
	write_bytes(path, buf, n - 30);

	w = open_memstream(&log, &loglen);
	ASSERT_NE(NULL, w);
	o.warnings = w;
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	fclose(w);
	TH_LOG("warnings:\n%s", log);
	EXPECT_EQ(2, ds.n);
	EXPECT_EQ(8, info.files);
	EXPECT_EQ(2, info.decoded);
	EXPECT_EQ(6, info.skipped);
	/* the class of only bad files stays a class */
	EXPECT_EQ(2, ds.classes);
	EXPECT_EQ(1, ds.labels[0]);
	EXPECT_EQ(1, ds.labels[1]);
	EXPECT_MSG(log, "bad/truncated.jpg: skipped: corrupt JPEG: Premature end");
	EXPECT_MSG(log, "bad/garbage.jpg: skipped: corrupt JPEG");
	EXPECT_MSG(log, "bad/noise.jpeg: skipped: neither a JPEG nor a PNG");
	EXPECT_MSG(log, "bad/empty.png: skipped: empty file");
	EXPECT_MSG(log, "bad/huge.png: skipped: image too large (100000x100000");
	EXPECT_MSG(log, "bad/truncated.png: skipped: corrupt PNG");
	EXPECT_MSG(log, self->dir);
	free(log);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&ds);

	/* silent without a FILE *, and nothing decodable is an error */
	o.warnings = NULL;
	snprintf(path, sizeof(path), "%s/good/a.jpg", self->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/good/b.png", self->dir);
	unlink(path);
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  &info, err, sizeof(err)));
	EXPECT_MSG(err, "could be decoded (6 skipped)");
	EXPECT_EQ(0, ds.n);
	EXPECT_EQ(NULL, ds.images);
	EXPECT_EQ(NULL, info.class_names);
}

TEST_F(tmp, unreadable)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 4, .width = 4, .channels = 1);
	uint8_t gray[16] = { 0 };
	struct vtpu_image_folder_info info;
	struct vtpu_dataset ds;
	char path[256], err[256] = "", *log = NULL;
	size_t loglen = 0;
	FILE *w;

	if (geteuid() == 0)
		SKIP(return, "root reads files whatever their mode");
	mkdirf("%s/%s", self->dir, "c");
	snprintf(path, sizeof(path), "%s/c/ok.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	snprintf(path, sizeof(path), "%s/c/locked.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	ASSERT_EQ(0, chmod(path, 0));
	w = open_memstream(&log, &loglen);
	o.warnings = w;
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	fclose(w);
	EXPECT_EQ(1, ds.n);
	EXPECT_EQ(1, info.skipped);
	EXPECT_MSG(log, "c/locked.png: skipped: Permission denied");
	free(log);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&ds);

	/* an unreadable class folder is an error naming it */
	snprintf(path, sizeof(path), "%s/c", self->dir);
	ASSERT_EQ(0, chmod(path, 0));
	EXPECT_EQ(-EACCES, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, path);
	EXPECT_MSG(err, "Permission denied");
}

/* As Keras: a class folder without images is still a class (a label). */
TEST_F(tmp, empty_class)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 4, .width = 4, .channels = 3);
	uint8_t gray[16] = { 0 };
	struct vtpu_image_folder_info info;
	struct vtpu_dataset ds;
	char path[256], err[256] = "";

	mkdirf("%s/%s", self->dir, "cat");
	mkdirf("%s/%s", self->dir, "bird");
	mkdirf("%s/%s", self->dir, "dog");
	/* nested folders belong to their class, as os.walk finds them */
	mkdirf("%s/%s", self->dir, "dog/puppies");
	snprintf(path, sizeof(path), "%s/cat/x.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	snprintf(path, sizeof(path), "%s/dog/puppies/y.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, &info,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(3, ds.classes);
	EXPECT_EQ(2, ds.n);
	EXPECT_STREQ("bird", info.class_names[0]);
	EXPECT_STREQ("cat", info.class_names[1]);
	EXPECT_STREQ("dog", info.class_names[2]);
	EXPECT_EQ(ds.labels[0] == 1 ? 2 : 1, ds.labels[1]);
	vtpu_image_folder_info_free(&info);
	vtpu_dataset_free(&ds);

	/* classes, but no image in any: an error */
	snprintf(path, sizeof(path), "%s/cat/x.png", self->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dog/puppies/y.png", self->dir);
	unlink(path);
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "no .jpg, .jpeg or .png files in its 3 class folders");
}

TEST_F(tmp, bad_folders)
{
	VTPU_IMAGE_FOLDER_OPTS(o, .height = 4, .width = 4, .channels = 3);
	struct vtpu_dataset ds, val;
	char path[256], err[256] = "";
	uint8_t gray[16] = { 0 };
	uint32_t i;

	/* missing */
	snprintf(path, sizeof(path), "%s/nope", self->dir);
	EXPECT_EQ(-ENOENT, vtpu_load_image_folder(path, &o, &ds, NULL, NULL,
						  err, sizeof(err)));
	EXPECT_MSG(err, path);
	EXPECT_MSG(err, "no such folder");
	/* a file, not a folder */
	snprintf(path, sizeof(path), "%s/x.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	EXPECT_EQ(-ENOTDIR, vtpu_load_image_folder(path, &o, &ds, NULL, NULL,
						   err, sizeof(err)));
	EXPECT_MSG(err, path);
	/* images but no class folders */
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, self->dir);
	EXPECT_MSG(err, "no class folders");
	EXPECT_EQ(0, ds.n);

	/* bad options */
	mkdirf("%s/%s", self->dir, "c");
	snprintf(path, sizeof(path), "%s/c/x.png", self->dir);
	ASSERT_EQ(0, write_png(path, gray, 4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL,
			       0, false));
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	vtpu_dataset_free(&ds);
	o.channels = 2;
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "channels 2");
	o.channels = 3;
	o.validation_split = 1;
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, &val,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "validation_split");
	/* one file: a split of 0.5 holds out none */
	o.validation_split = 0.5f;
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, &val,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "holds out none");
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "without a validation dataset");
	o.validation_split = 0;
	o.height = 0;
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	o.height = 4;
	o.sz = 8;
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "sz");
	o.sz = sizeof(o);

	/* 257 classes: labels are bytes */
	for (i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/k%03u", self->dir, i);
		mkdir(path, 0755);
	}
	EXPECT_EQ(-EINVAL, vtpu_load_image_folder(self->dir, &o, &ds, NULL,
						  NULL, err, sizeof(err)));
	EXPECT_MSG(err, "257 class folders, at most 256");
	/* 256 are fine */
	snprintf(path, sizeof(path), "%s/k255", self->dir);
	rmdir(path);
	ASSERT_EQ(0, vtpu_load_image_folder(self->dir, &o, &ds, NULL, NULL,
					    err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(256, ds.classes);
	EXPECT_EQ(1, ds.n);
	/* "c" sorts before "k000".."k254" */
	EXPECT_EQ(0, ds.labels[0]);
	vtpu_dataset_free(&ds);
}

TEST_HARNESS_MAIN
