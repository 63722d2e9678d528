// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host unit test of libvtpu's data side (vtpu_data.h): the MNIST and
 * Fashion-MNIST loaders on the real files (../shared/datasets beside the
 * checkout, or $VTPU_DATASETS; SKIP when absent) and on generated IDX files
 * with every kind of damage; the CIFAR-10 loader on generated batches with
 * known pixels; shuffling, batches, the Keras-style progress lines (exact
 * strings, fake clock) and checkpoints (round trip, every corruption,
 * metadata required on load).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "kselftest_harness.h"
#include "vtpu_data.h"

#ifndef VTPU_SRCTOP
#define VTPU_SRCTOP "."
#endif

/* ---- helpers ---------------------------------------------------------- */

#define EXPECT_MSG(err, sub) do {					\
	if (!strstr((err), (sub)))					\
		TH_LOG("message \"%s\" lacks \"%s\"", (err), (sub));	\
	EXPECT_TRUE(strstr((err), (sub)) != NULL);			\
} while (0)

static const char *datasets_dir(void)
{
	const char *d = getenv("VTPU_DATASETS");

	return d && *d ? d : VTPU_SRCTOP "/../shared/datasets";
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_bytes(const char *path, const void *buf, size_t len, bool gz)
{
	if (gz) {
		gzFile g = gzopen(path, "wb");

		if (len)
			gzwrite(g, buf, (unsigned int)len);
		gzclose(g);
	} else {
		FILE *f = fopen(path, "wb");

		fwrite(buf, 1, len, f);
		fclose(f);
	}
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 16);	/* room for a test to append */
	*len = fread(buf, 1, n, f);
	fclose(f);
	return buf;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Each fixture below works in a fresh temp dir of its own. */
static char *tmp_make(char dir[64])
{
	strcpy(dir, "/tmp/vtpu-test-data.XXXXXX");
	return mkdtemp(dir);
}

FIXTURE(tmp) {
	char dir[64];
};

FIXTURE_SETUP(tmp) { ASSERT_NE(NULL, tmp_make(self->dir)); }
FIXTURE_TEARDOWN(tmp) { rm_rf(self->dir); }

/* ---- real MNIST and Fashion-MNIST ------------------------------------- */

static void check_real(struct __test_metadata *_metadata, const char *name,
		       bool train, const uint32_t hist_want[10],
		       uint8_t first_label, uint32_t crc_want)
{
	struct vtpu_dataset ds;
	uint32_t hist[10] = { 0 }, i, n = train ? 60000 : 10000;
	char dir[900], err[512] = "";
	int ret;

	snprintf(dir, sizeof(dir), "%s/%s", datasets_dir(), name);
	if (access(dir, F_OK))
		SKIP(return, "%s not present (set VTPU_DATASETS)", dir);
	ret = vtpu_load_mnist(dir, train, &ds, err, sizeof(err));
	if (ret)
		TH_LOG("%s", err);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(n, ds.n);
	EXPECT_EQ(28, ds.height);
	EXPECT_EQ(28, ds.width);
	EXPECT_EQ(1, ds.channels);
	EXPECT_EQ(10, ds.classes);
	EXPECT_EQ(first_label, ds.labels[0]);
	for (i = 0; i < ds.n; i++)
		hist[ds.labels[i]]++;
	for (i = 0; i < 10; i++)
		EXPECT_EQ(hist_want[i], hist[i]);
	/* every pixel, against crc32 of the decompressed files */
	EXPECT_EQ(crc_want, crc32_z(0, ds.images, (size_t)ds.n * 784));
	vtpu_dataset_free(&ds);
	EXPECT_EQ(NULL, ds.images);
}

TEST(mnist_real_train)
{
	static const uint32_t h[10] = { 5923, 6742, 5958, 6131, 5842, 5421,
					5918, 6265, 5851, 5949 };

	check_real(_metadata, "mnist", true, h, 5, 0xf3639b56);
}

TEST(mnist_real_test)
{
	static const uint32_t h[10] = { 980, 1135, 1032, 1010, 982, 892, 958,
					1028, 974, 1009 };

	check_real(_metadata, "mnist", false, h, 7, 0xe4ca5f57);
}

TEST(fashion_mnist_real)
{
	static const uint32_t train[10] = { 6000, 6000, 6000, 6000, 6000,
					    6000, 6000, 6000, 6000, 6000 };
	static const uint32_t test[10] = { 1000, 1000, 1000, 1000, 1000,
					   1000, 1000, 1000, 1000, 1000 };

	check_real(_metadata, "fashion-mnist", true, train, 9, 0xae65dccd);
	check_real(_metadata, "fashion-mnist", false, test, 9, 0x12728439);
}

/* ---- generated IDX files ---------------------------------------------- */

struct idx_spec {
	uint32_t img_magic, n_img, rows, cols;
	long img_payload;	/* bytes of pixels written; -1: n*rows*cols */
	uint32_t lab_magic, n_lab;
	long lab_payload;	/* -1: n_lab */
	int bad_label_at;	/* -1: none */
	long img_file_cut;	/* keep only this many file bytes; -1: all */
	bool gz, no_images, no_labels;
};

static const struct idx_spec good_spec = {
	.img_magic = 0x803, .n_img = 3, .rows = 4, .cols = 5,
	.img_payload = -1, .lab_magic = 0x801, .n_lab = 3, .lab_payload = -1,
	.bad_label_at = -1, .img_file_cut = -1,
};

static uint8_t px(size_t i)
{
	return (uint8_t)(i * 37 + 11);
}

/* Write train-{images,labels}-idx?-ubyte[.gz] in dir as @s says. */
static void make_idx(const char *dir, const struct idx_spec *s)
{
	size_t ilen = s->img_payload >= 0 ? (size_t)s->img_payload :
		      (size_t)s->n_img * s->rows * s->cols;
	size_t llen = s->lab_payload >= 0 ? (size_t)s->lab_payload : s->n_lab;
	uint8_t *img = malloc(16 + ilen), *lab = malloc(8 + llen);
	const char *ext = s->gz ? ".gz" : "";
	char path[256];
	size_t i;

	put_be32(img, s->img_magic);
	put_be32(img + 4, s->n_img);
	put_be32(img + 8, s->rows);
	put_be32(img + 12, s->cols);
	for (i = 0; i < ilen; i++)
		img[16 + i] = px(i);
	put_be32(lab, s->lab_magic);
	put_be32(lab + 4, s->n_lab);
	for (i = 0; i < llen; i++)
		lab[8 + i] = i % 10;
	if (s->bad_label_at >= 0)
		lab[8 + s->bad_label_at] = 10;

	if (!s->no_images) {
		snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte%s",
			 dir, ext);
		write_bytes(path, img, 16 + ilen, s->gz);
		if (s->img_file_cut >= 0)
			truncate(path, s->img_file_cut);
	}
	if (!s->no_labels) {
		snprintf(path, sizeof(path), "%s/train-labels-idx1-ubyte%s",
			 dir, ext);
		write_bytes(path, lab, 8 + llen, s->gz);
	}
	free(img);
	free(lab);
}

static void check_good(struct __test_metadata *_metadata, const char *dir)
{
	struct vtpu_dataset ds;
	char err[256] = "";
	size_t i;

	ASSERT_EQ(0, vtpu_load_mnist(dir, true, &ds, err, sizeof(err)));
	EXPECT_EQ(3, ds.n);
	EXPECT_EQ(4, ds.height);
	EXPECT_EQ(5, ds.width);
	EXPECT_EQ(1, ds.channels);
	for (i = 0; i < 60; i++)
		ASSERT_EQ(px(i), ds.images[i]);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(i, ds.labels[i]);
	vtpu_dataset_free(&ds);
}

TEST_F(tmp, idx_valid_gz)
{
	struct idx_spec s = good_spec;

	s.gz = true;
	make_idx(self->dir, &s);
	check_good(_metadata, self->dir);
}

TEST_F(tmp, idx_valid_raw)
{
	make_idx(self->dir, &good_spec);
	check_good(_metadata, self->dir);
}

TEST_F(tmp, idx_test_split_missing)
{
	struct vtpu_dataset ds;
	char err[256] = "";

	make_idx(self->dir, &good_spec);
	EXPECT_EQ(-ENOENT, vtpu_load_mnist(self->dir, false, &ds, err,
					   sizeof(err)));
	EXPECT_MSG(err, "t10k-images-idx3-ubyte.gz: not found");
	EXPECT_EQ(-ENOENT, vtpu_load_mnist("/nonexistent", true, &ds, NULL, 0));
}

enum idx_damage {
	BAD_MAGIC_IMAGES, BAD_MAGIC_LABELS, TRUNC_IMAGES, TRUNC_LABELS,
	TRUNC_HEADER, COUNT_MISMATCH, LABEL_10, HUGE_SIDE, HUGE_TOTAL,
	BIG_CLAIM, ZERO_DIM, TRAILING, MISSING_IMAGES, MISSING_LABELS,
	GZ_CORRUPT, GZ_TRAILER_CUT,
};

FIXTURE(idx_bad) {
	char dir[64];
};

FIXTURE_VARIANT(idx_bad) {
	enum idx_damage damage;
	bool gz;
	int err;
	const char *msg;
};

FIXTURE_SETUP(idx_bad) { ASSERT_NE(NULL, tmp_make(self->dir)); }
FIXTURE_TEARDOWN(idx_bad) { rm_rf(self->dir); }

#define IDX_BAD(name, dmg, gzip, e, m)					\
	FIXTURE_VARIANT_ADD(idx_bad, name) {				\
		.damage = dmg, .gz = gzip, .err = e, .msg = m,		\
	}

IDX_BAD(bad_magic_images, BAD_MAGIC_IMAGES, false, -EINVAL,
	"train-images-idx3-ubyte: bad magic 0x00000801, expected 0x00000803");
IDX_BAD(bad_magic_labels_gz, BAD_MAGIC_LABELS, true, -EINVAL,
	"train-labels-idx1-ubyte.gz: bad magic 0x00000803, expected 0x00000801");
IDX_BAD(truncated_images, TRUNC_IMAGES, false, -EIO,
	"train-images-idx3-ubyte: truncated: expected 60 image bytes, got 50");
IDX_BAD(truncated_images_gz, TRUNC_IMAGES, true, -EIO,
	"train-images-idx3-ubyte.gz: truncated: expected 60 image bytes, got 50");
IDX_BAD(truncated_labels, TRUNC_LABELS, false, -EIO,
	"train-labels-idx1-ubyte: truncated: expected 3 label bytes, got 2");
IDX_BAD(truncated_header_gz, TRUNC_HEADER, true, -EIO,
	"truncated: expected 16 header bytes, got 7");
IDX_BAD(count_mismatch, COUNT_MISMATCH, true, -EINVAL,
	"has 3 images but");
IDX_BAD(label_10, LABEL_10, true, -EINVAL,
	"train-labels-idx1-ubyte.gz: label 10 at index 1 (labels are 0..9)");
IDX_BAD(huge_side, HUGE_SIDE, false, -EINVAL,
	"absurd dimensions 3 x 4294967295 x 5");
IDX_BAD(huge_total, HUGE_TOTAL, false, -EINVAL,
	"absurd dimensions 4294967295 x 30000 x 30000");
IDX_BAD(big_claim, BIG_CLAIM, true, -EIO,
	"truncated: expected 784000000 image bytes, got 60");
IDX_BAD(zero_dim, ZERO_DIM, false, -EINVAL,
	"absurd dimensions 3 x 0 x 5");
IDX_BAD(trailing_data, TRAILING, true, -EINVAL,
	"unexpected data after the 60 image bytes");
IDX_BAD(missing_images, MISSING_IMAGES, true, -ENOENT,
	"train-images-idx3-ubyte.gz: not found (nor train-images-idx3-ubyte)");
IDX_BAD(missing_labels, MISSING_LABELS, true, -ENOENT,
	"train-labels-idx1-ubyte.gz: not found");
IDX_BAD(gz_corrupt, GZ_CORRUPT, true, -EIO, "train-images-idx3-ubyte.gz: ");
IDX_BAD(gz_trailer_cut, GZ_TRAILER_CUT, true, -EIO,
	"train-images-idx3-ubyte.gz: truncated");

TEST_F(idx_bad, rejected)
{
	struct idx_spec s = good_spec;
	struct vtpu_dataset ds;
	char err[512] = "", path[256];
	uint8_t *buf;
	size_t len;

	s.gz = variant->gz;
	switch (variant->damage) {
	case BAD_MAGIC_IMAGES: s.img_magic = 0x801; break;
	case BAD_MAGIC_LABELS: s.lab_magic = 0x803; break;
	case TRUNC_IMAGES: s.img_payload = 50; break;
	case TRUNC_LABELS: s.lab_payload = 2; break;
	case TRUNC_HEADER: s.img_payload = 0; break;
	case COUNT_MISMATCH: s.n_lab = 2; s.lab_payload = 2; break;
	case LABEL_10: s.bad_label_at = 1; break;
	case HUGE_SIDE: s.rows = 0xffffffff; s.img_payload = 60; break;
	case HUGE_TOTAL:
		s.n_img = s.n_lab = 0xffffffff;
		s.rows = s.cols = 30000;
		s.img_payload = 60;
		s.lab_payload = 3;
		break;
	case BIG_CLAIM:
		/* 784 MB claimed, 60 bytes there: must not allocate 784 MB */
		s.n_img = s.n_lab = 1000000;
		s.rows = s.cols = 28;
		s.img_payload = 60;
		s.lab_payload = 3;
		break;
	case ZERO_DIM: s.rows = 0; s.img_payload = 60; break;
	case TRAILING: s.img_payload = 65; break;
	case MISSING_IMAGES: s.no_images = true; break;
	case MISSING_LABELS: s.no_labels = true; break;
	case GZ_CORRUPT: case GZ_TRAILER_CUT: break;
	}
	make_idx(self->dir, &s);
	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz",
		 self->dir);
	if (variant->damage == TRUNC_HEADER)
		write_bytes(path, "\0\0\x08\x03\0\0\0", 7, true);
	if (variant->damage == GZ_CORRUPT || variant->damage == GZ_TRAILER_CUT) {
		buf = slurp(path, &len);
		ASSERT_NE(NULL, buf);
		if (variant->damage == GZ_CORRUPT)
			buf[len - 10] ^= 0x55;	/* in the deflate data */
		else
			len -= 4;		/* ISIZE gone */
		write_bytes(path, buf, len, false);
		free(buf);
	}

	EXPECT_EQ(variant->err, vtpu_load_mnist(self->dir, true, &ds, err,
						sizeof(err)));
	EXPECT_MSG(err, variant->msg);
	EXPECT_EQ(NULL, ds.images);
	EXPECT_EQ(NULL, ds.labels);
	EXPECT_EQ(0, ds.n);
}

/* Every prefix of a valid file is an error, never a crash or a success. */
TEST_F(tmp, idx_every_truncation)
{
	struct idx_spec s = good_spec;
	struct vtpu_dataset ds;
	char err[512], path[256];
	size_t len, cut;
	uint8_t *buf;
	int gz, ret;

	for (gz = 0; gz < 2; gz++) {
		s.gz = gz;
		make_idx(self->dir, &s);
		snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte%s",
			 self->dir, gz ? ".gz" : "");
		buf = slurp(path, &len);
		ASSERT_NE(NULL, buf);
		for (cut = 0; cut < len; cut++) {
			write_bytes(path, buf, cut, false);
			err[0] = '\0';
			ret = vtpu_load_mnist(self->dir, true, &ds, err,
					      sizeof(err));
			if (ret != -EIO && ret != -EINVAL)
				TH_LOG("gz %d cut %zu: %d %s", gz, cut, ret,
				       err);
			ASSERT_TRUE(ret == -EIO || ret == -EINVAL);
			ASSERT_NE(0, strlen(err));
		}
		write_bytes(path, buf, len, false);
		ASSERT_EQ(0, vtpu_load_mnist(self->dir, true, &ds, NULL, 0));
		vtpu_dataset_free(&ds);
		free(buf);
		unlink(path);
	}
}

/* ---- CIFAR-10 ------------------------------------------------------------ */

#define REC 3073

static uint8_t cpx(uint32_t e, uint32_t c, uint32_t p)
{
	return (uint8_t)(e * 7 + c * 85 + p * 3);
}

/* A batch file of @n records of examples first.., labels (e + 3) % 10. */
static void make_batch(const char *path, uint32_t first, uint32_t n)
{
	uint8_t rec[REC];
	uint32_t e, c, p;
	FILE *f = fopen(path, "wb");

	for (e = first; e < first + n; e++) {
		rec[0] = (e + 3) % 10;
		for (c = 0; c < 3; c++)
			for (p = 0; p < 1024; p++)
				rec[1 + c * 1024 + p] = cpx(e, c, p);
		fwrite(rec, 1, REC, f);
	}
	fclose(f);
}

/* dir/cifar-10-batches-bin with 5 x 20 training records and 7 test ones */
static void make_cifar(const char *dir, char *bin, size_t len)
{
	char path[256];
	int i;

	snprintf(bin, len, "%s/cifar-10-batches-bin", dir);
	mkdir(bin, 0755);
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/data_batch_%d.bin", bin, i + 1);
		make_batch(path, 20 * i, 20);
	}
	snprintf(path, sizeof(path), "%s/test_batch.bin", bin);
	make_batch(path, 1000, 7);
}

static void check_cifar(struct __test_metadata *_metadata, const char *dir,
			bool train)
{
	uint32_t n = train ? 100 : 7, base = train ? 0 : 1000, e, y, x, c;
	struct vtpu_dataset ds;
	char err[256] = "";
	int ret;

	ret = vtpu_load_cifar10(dir, train, &ds, err, sizeof(err));
	if (ret)
		TH_LOG("%s", err);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(n, ds.n);
	EXPECT_EQ(32, ds.height);
	EXPECT_EQ(32, ds.width);
	EXPECT_EQ(3, ds.channels);
	EXPECT_EQ(10, ds.classes);
	for (e = 0; e < n; e++) {
		ASSERT_EQ((base + e + 3) % 10, ds.labels[e]);
		for (y = 0; y < 32; y++)
			for (x = 0; x < 32; x++)
				for (c = 0; c < 3; c++)
					ASSERT_EQ(cpx(base + e, c, y * 32 + x),
						  ds.images[((e * 32 + y) * 32 +
							     x) * 3 + c]);
	}
	vtpu_dataset_free(&ds);
}

TEST_F(tmp, cifar_nhwc)
{
	char bin[128];

	make_cifar(self->dir, bin, sizeof(bin));
	check_cifar(_metadata, self->dir, true);	/* the parent */
	check_cifar(_metadata, bin, true);		/* the folder itself */
	check_cifar(_metadata, self->dir, false);
	check_cifar(_metadata, bin, false);
}

TEST_F(tmp, cifar_errors)
{
	struct vtpu_dataset ds;
	char bin[128], path[256], err[512] = "";
	uint8_t rec[REC] = { 10 };
	FILE *f;

	EXPECT_EQ(-ENOENT, vtpu_load_cifar10(self->dir, true, &ds, err,
					     sizeof(err)));
	EXPECT_MSG(err, "data_batch_1.bin: not found (looked in");

	make_cifar(self->dir, bin, sizeof(bin));
	/* a record too many bytes */
	snprintf(path, sizeof(path), "%s/data_batch_3.bin", bin);
	f = fopen(path, "ab");
	fputc(0, f);
	fclose(f);
	EXPECT_EQ(-EINVAL, vtpu_load_cifar10(self->dir, true, &ds, err,
					     sizeof(err)));
	EXPECT_MSG(err, "data_batch_3.bin: size 61461 is not a whole, non-zero number of 3073-byte records");
	EXPECT_EQ(NULL, ds.images);

	/* empty */
	truncate(path, 0);
	EXPECT_EQ(-EINVAL, vtpu_load_cifar10(bin, true, &ds, err, sizeof(err)));
	EXPECT_MSG(err, "size 0 is not");

	/* a label of 10 in the 2nd record */
	make_batch(path, 40, 20);
	f = fopen(path, "r+b");
	fseek(f, REC, SEEK_SET);
	fwrite(rec, 1, 1, f);
	fclose(f);
	EXPECT_EQ(-EINVAL, vtpu_load_cifar10(bin, true, &ds, err, sizeof(err)));
	EXPECT_MSG(err, "data_batch_3.bin: record 1 has label 10 (labels are 0..9)");

	/* a missing batch */
	make_batch(path, 40, 20);
	snprintf(path, sizeof(path), "%s/data_batch_4.bin", bin);
	unlink(path);
	EXPECT_EQ(-ENOENT, vtpu_load_cifar10(self->dir, true, &ds, err,
					     sizeof(err)));
	EXPECT_MSG(err, "data_batch_4.bin: No such file");
	/* the test split does not need it */
	EXPECT_EQ(0, vtpu_load_cifar10(self->dir, false, &ds, err,
				       sizeof(err)));
	vtpu_dataset_free(&ds);
}

/* ---- shuffling ----------------------------------------------------------- */

TEST(rng_reference)
{
	struct vtpu_rng r;

	/* splitmix64's published sequence for seed 0 */
	vtpu_rng_seed(&r, 0);
	EXPECT_EQ(0xe220a8397b1dcdafull, vtpu_rng_next(&r));
	EXPECT_EQ(0x6e789e6aa1b965f4ull, vtpu_rng_next(&r));
	EXPECT_EQ(0x06c45d188009454full, vtpu_rng_next(&r));
	EXPECT_EQ(0, vtpu_rng_below(&r, 0));
	EXPECT_EQ(0, vtpu_rng_below(&r, 1));
}

TEST(rng_below_uniform)
{
	uint32_t hist[6] = { 0 }, i;
	struct vtpu_rng r;

	vtpu_rng_seed(&r, 7);
	for (i = 0; i < 60000; i++)
		hist[vtpu_rng_below(&r, 6)]++;
	for (i = 0; i < 6; i++) {
		EXPECT_LT(9500, hist[i]);
		EXPECT_GT(10500, hist[i]);
	}
}

TEST(shuffle_reproducible_permutation)
{
	enum { N = 1000 };
	static uint32_t a[N], b[N], c[N];
	struct vtpu_rng ra, rb, rc;
	uint8_t seen[N] = { 0 };
	uint32_t i, moved = 0;

	vtpu_rng_seed(&ra, 42);
	vtpu_rng_seed(&rb, 42);
	vtpu_rng_seed(&rc, 43);
	vtpu_permutation(a, N, &ra);
	vtpu_permutation(b, N, &rb);
	vtpu_permutation(c, N, &rc);
	EXPECT_EQ(0, memcmp(a, b, sizeof(a)));
	EXPECT_NE(0, memcmp(a, c, sizeof(a)));
	for (i = 0; i < N; i++) {
		ASSERT_LT(a[i], N);
		EXPECT_EQ(0, seen[a[i]]);
		seen[a[i]] = 1;
		moved += a[i] != i;
	}
	EXPECT_LT(900, moved);
	/* the next epoch's order differs, and is reproducible too */
	vtpu_permutation(a, N, &ra);
	vtpu_permutation(c, N, &rb);
	EXPECT_NE(0, memcmp(a, b, sizeof(a)));
	EXPECT_EQ(0, memcmp(a, c, sizeof(a)));
	vtpu_shuffle(a, 0, &ra);	/* no-ops */
	vtpu_shuffle(a, 1, &ra);
}

/* ---- batches ------------------------------------------------------------- */

/* 4 examples of 2x2x3, pixel bytes i * 13, labels 3 - e */
static void make_small(struct vtpu_dataset *ds)
{
	uint32_t i;

	*ds = (struct vtpu_dataset){ .n = 4, .height = 2, .width = 2,
				     .channels = 3, .classes = 5 };
	ds->images = malloc(48);
	ds->labels = malloc(4);
	for (i = 0; i < 48; i++)
		ds->images[i] = (uint8_t)(i * 13);
	for (i = 0; i < 4; i++)
		ds->labels[i] = 3 - i;
}

/* ---- augmentation ------------------------------------------------------------ */

/* The reference: each output pixel fetched from where it came from. */
static uint8_t moved_pixel(const uint8_t *src, uint32_t h, uint32_t w,
			   uint32_t c, bool flip, int32_t dx, int32_t dy,
			   uint32_t y, uint32_t x, uint32_t k)
{
	int64_t sy = (int64_t)y - dy, sx = (int64_t)x - dx;

	if (sy < 0 || sy >= h || sx < 0 || sx >= w)
		return 0;
	if (flip)
		sx = w - 1 - sx;
	return src[((size_t)sy * w + sx) * c + k];
}

/* Every flip and shift, in and beyond the image, against the reference. */
TEST(image_transform_reference)
{
	static const uint32_t shapes[][3] = { { 4, 4, 1 }, { 5, 3, 3 },
					      { 1, 7, 2 }, { 28, 28, 1 } };
	uint8_t src[28 * 28 * 3], dst[28 * 28 * 3 + 1];
	uint32_t s, i, y, x, k, bad = 0, cases = 0;
	int32_t dx, dy;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (s = 0; s < 4; s++) {
		uint32_t h = shapes[s][0], w = shapes[s][1], c = shapes[s][2];
		int32_t lim = (int32_t)(h > w ? h : w) + 1;

		for (dy = -lim; dy <= lim; dy++)
			for (dx = -lim; dx <= lim; dx++)
				for (i = 0; i < 2; i++) {
					memset(dst, 0xa5, sizeof(dst));
					vtpu_image_transform(dst, src, h, w, c,
							     i, dx, dy);
					for (y = 0; y < h; y++)
						for (x = 0; x < w; x++)
							for (k = 0; k < c; k++)
								bad += dst[(y * w + x) * c + k] !=
								       moved_pixel(src, h, w, c, i,
										   dx, dy, y, x, k);
					bad += dst[h * w * c] != 0xa5;
					cases++;
				}
	}
	EXPECT_EQ(0, bad);
	TH_LOG("%u transforms, %u wrong pixels or overruns", cases, bad);
}

/* Augmentation draws flips and shifts evenly, and nothing when asked none. */
TEST(image_augment_draws)
{
	const struct vtpu_augment none = { 0 }, both = { .flip = true,
							 .shift = 2 };
	uint8_t src[5 * 5], dst[5 * 5], ref[5 * 5];
	uint32_t count[2][5][5] = { 0 }, i, f;
	struct vtpu_rng rng, before;
	int32_t dx, dy;

	for (i = 0; i < 25; i++)
		src[i] = (uint8_t)(i + 1); /* no pixel is 0 */
	vtpu_rng_seed(&rng, 5);
	before = rng;
	vtpu_image_augment(dst, src, 5, 5, 1, &none, &rng);
	EXPECT_EQ(0, memcmp(dst, src, sizeof(src)));
	EXPECT_EQ(before.state, rng.state);
	/* identify each draw by matching it against all 50 transforms */
	for (i = 0; i < 5000; i++) {
		bool found = false;

		vtpu_image_augment(dst, src, 5, 5, 1, &both, &rng);
		for (f = 0; f < 2 && !found; f++)
			for (dy = -2; dy <= 2 && !found; dy++)
				for (dx = -2; dx <= 2 && !found; dx++) {
					vtpu_image_transform(ref, src, 5, 5, 1,
							     f, dx, dy);
					if (!memcmp(ref, dst, sizeof(ref))) {
						count[f][dy + 2][dx + 2]++;
						found = true;
					}
				}
		ASSERT_TRUE(found);
	}
	/* 50 outcomes, 100 expected each: all within 5 sigma */
	for (f = 0; f < 2; f++)
		for (dy = 0; dy < 5; dy++)
			for (dx = 0; dx < 5; dx++) {
				EXPECT_LT(50, count[f][dy][dx]);
				EXPECT_GT(150, count[f][dy][dx]);
			}
}

TEST(batch_images_labels)
{
	static const uint32_t idx[4] = { 2, 0, 3, 1 };
	const float mean[3] = { 0.5f, 0.25f, 0.1f }, std[3] = { 0.5f, 2, 0.3f };
	float out[48 + 1], oh[3 * 5];
	uint32_t lab[3], i, c;
	struct vtpu_dataset ds;

	make_small(&ds);
	EXPECT_EQ(12, vtpu_dataset_image_size(&ds));
	out[24] = -7;
	/* examples idx[1], idx[2] = 0, 3 */
	ASSERT_EQ(0, vtpu_batch_images(&ds, idx, 1, 2, NULL, NULL, out));
	for (i = 0; i < 12; i++) {
		EXPECT_EQ((float)(i * 13 % 256) / 255.0f, out[i]);
		EXPECT_EQ((float)((36 + i) * 13 % 256) / 255.0f, out[12 + i]);
	}
	EXPECT_EQ(-7, out[24]);	/* nothing past count */

	ASSERT_EQ(0, vtpu_batch_images(&ds, idx, 1, 2, mean, std, out));
	for (i = 0; i < 12; i++) {
		c = i % 3;
		EXPECT_EQ(((float)(i * 13 % 256) / 255.0f - mean[c]) / std[c],
			  out[i]);
	}

	/* idx NULL: file order from first */
	ASSERT_EQ(0, vtpu_batch_images(&ds, NULL, 3, 1, NULL, NULL, out));
	EXPECT_EQ((float)(36 * 13 % 256) / 255.0f, out[0]);

	ASSERT_EQ(0, vtpu_batch_labels(&ds, idx, 0, 3, lab));
	EXPECT_EQ(1, lab[0]);
	EXPECT_EQ(3, lab[1]);
	EXPECT_EQ(0, lab[2]);
	ASSERT_EQ(0, vtpu_batch_onehot(&ds, idx, 0, 3, oh));
	for (i = 0; i < 15; i++)
		EXPECT_EQ(i == 1 || i == 5 + 3 || i == 10 + 0 ? 1.0f : 0.0f,
			  oh[i]);

	/* out of range: nothing written */
	out[0] = -3;
	EXPECT_EQ(-EINVAL, vtpu_batch_images(&ds, idx, 3, 2, NULL, NULL, out));
	EXPECT_EQ(-EINVAL, vtpu_batch_images(&ds, NULL, UINT32_MAX, 2, NULL,
					     NULL, out));
	EXPECT_EQ(-EINVAL, vtpu_batch_labels(&ds, (uint32_t[]){ 0, 4 }, 0, 2,
					     lab));
	EXPECT_EQ(-EINVAL, vtpu_batch_onehot(&ds, NULL, 4, 1, oh));
	EXPECT_EQ(-EINVAL, vtpu_batch_images(&ds, NULL, 0, 1, mean,
					     (float[]){ 1, 0, 1 }, out));
	EXPECT_EQ(-EINVAL, vtpu_batch_images(&ds, NULL, 0, 1, mean, NULL, out));
	EXPECT_EQ(-3, out[0]);
	EXPECT_EQ(0, vtpu_batch_labels(&ds, NULL, 4, 0, lab));	/* empty */
	vtpu_dataset_free(&ds);
}

TEST(channel_stats_and_truncate)
{
	struct vtpu_dataset ds;
	double s[3] = { 0 }, s2[3] = { 0 }, m, sd;
	float mean[3], std[3];
	uint32_t i, c;

	make_small(&ds);
	for (i = 0; i < 48; i++) {
		double v = ds.images[i] / 255.0;

		s[i % 3] += v;
		s2[i % 3] += v * v;
	}
	ASSERT_EQ(0, vtpu_dataset_channel_stats(&ds, mean, std));
	for (c = 0; c < 3; c++) {
		m = s[c] / 16;
		sd = sqrt(s2[c] / 16 - m * m);
		EXPECT_GT(1e-6, fabs(m - mean[c]));
		EXPECT_GT(1e-6, fabs(sd - std[c]));
	}
	/* all channels at once */
	ASSERT_EQ(0, vtpu_dataset_pixel_stats(&ds, mean, std));
	m = (s[0] + s[1] + s[2]) / 48;
	sd = sqrt((s2[0] + s2[1] + s2[2]) / 48 - m * m);
	EXPECT_GT(1e-6, fabs(m - mean[0]));
	EXPECT_GT(1e-6, fabs(sd - std[0]));

	EXPECT_EQ(-EINVAL, vtpu_dataset_truncate(&ds, 0));
	EXPECT_EQ(0, vtpu_dataset_truncate(&ds, 10));
	EXPECT_EQ(4, ds.n);
	EXPECT_EQ(0, vtpu_dataset_truncate(&ds, 2));
	EXPECT_EQ(2, ds.n);
	for (i = 0; i < 24; i++)
		EXPECT_EQ((uint8_t)(i * 13), ds.images[i]);
	EXPECT_EQ(2, ds.labels[1]);
	vtpu_dataset_free(&ds);
	vtpu_dataset_free(NULL);
	EXPECT_EQ(-EINVAL, vtpu_dataset_channel_stats(&ds, mean, std));
	EXPECT_EQ(-EINVAL, vtpu_dataset_pixel_stats(&ds, mean, std));
}

/* ---- progress ------------------------------------------------------------ */

/* Expected strings from tf.keras' Progbar code, run with the same inputs. */
TEST(progress_format_keras)
{
	const struct vtpu_metric m[] = {
		{ "loss", 0.28671 }, { "acc", 0.90724 },
		{ "val_loss", 0.12344 }, { "val_acc", 0.96119 },
	};
	const struct vtpu_metric tiny[] = { { "loss", 0.0001 }, { "z", 0 } };
	const struct vtpu_metric neg[] = { { "loss", -1.5 } };
	const struct {
		const char *want;
		uint32_t step, total;
		double elapsed;
		bool final;
		const struct vtpu_metric *m;
		size_t n;
	} cases[] = {
		{ "469/469 [==============================] - 1s 2ms/step - loss: 0.2867 - acc: 0.9072 - val_loss: 0.1234 - val_acc: 0.9612",
		  469, 469, 0.938, true, m, 4 },
		{ " 12/469 [..............................] - ETA: 4s - loss: 0.2867 - acc: 0.9072",
		  12, 469, 0.12, false, m, 2 },
		{ "100/469 [=====>........................] - ETA: 1s - loss: 0.2867 - acc: 0.9072",
		  100, 469, 0.5, false, m, 2 },
		{ "1/5 [=====>........................] - ETA: 52s",
		  1, 5, 13.0, false, NULL, 0 },
		{ "1/5 [=====>........................] - ETA: 1:20",
		  1, 5, 20.0, false, NULL, 0 },
		{ "1/5 [=====>........................] - ETA: 1:06:40",
		  1, 5, 1000.0, false, NULL, 0 },
		{ "10/10 [==============================] - 25s 2s/step - loss: 1.0000e-04 - z: 0.0000e+00",
		  10, 10, 25.0, true, tiny, 2 },
		{ "10/10 [==============================] - 0s 50us/step - loss: -1.5000",
		  10, 10, 0.0005, true, neg, 1 },
		{ " 7/10 [====================>.........] - ETA: 0s",
		  7, 10, 0.7, false, NULL, 0 },
		{ " 0/10 [..............................] - ETA: 0s - z: 0.0000e+00",
		  0, 10, 0, false, tiny + 1, 1 },
	};
	char buf[512];
	size_t i;
	int len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = vtpu_progress_format(buf, sizeof(buf), cases[i].step,
					   cases[i].total, cases[i].elapsed,
					   cases[i].final, cases[i].m,
					   cases[i].n);
		EXPECT_STREQ(cases[i].want, buf);
		EXPECT_EQ(strlen(cases[i].want), len);
	}
}

TEST(progress_format_truncates_like_snprintf)
{
	char buf[8];

	EXPECT_EQ(47, vtpu_progress_format(buf, sizeof(buf), 1, 5, 13.0,
					   false, NULL, 0));
	EXPECT_STREQ("1/5 [==", buf);
	EXPECT_EQ(47, vtpu_progress_format(NULL, 0, 1, 5, 13.0, false, NULL,
					   0));
}

struct fake_clock {
	double t;
};

static double fake_now(void *ctx)
{
	return ((struct fake_clock *)ctx)->t;
}

static char *run_epoch(uint32_t log_every, int tty)
{
	struct fake_clock clk = { 100 };
	struct vtpu_progress_opts o = {
		.sz = sizeof(o), .tty = tty, .log_every = log_every,
		.now = fake_now, .now_ctx = &clk,
	};
	const struct vtpu_metric val = { "val_loss", 0.5 };
	struct vtpu_progress *p;
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	uint32_t s;

	p = vtpu_progress_create(f, 5, &o);
	vtpu_progress_start(p, 1, 2);
	for (s = 1; s <= 5; s++) {
		struct vtpu_metric m = { "loss", 1.0 / s };

		clk.t = 100 + s * 0.25;
		vtpu_progress_update(p, s, &m, 1);
	}
	vtpu_progress_end(p, &val, 1);
	vtpu_progress_destroy(p);
	fclose(f);
	return buf;
}

TEST(progress_plain_lines)
{
	char *out;

	out = run_epoch(0, 0);
	EXPECT_STREQ("Epoch 1/2\n"
		     "5/5 [==============================] - 1s 250ms/step - loss: 0.2000 - val_loss: 0.5000\n",
		     out);
	free(out);
	out = run_epoch(2, 0);
	EXPECT_STREQ("Epoch 1/2\n"
		     "2/5 [===========>..................] - ETA: 0s - loss: 0.5000\n"
		     "4/5 [=======================>......] - ETA: 0s - loss: 0.2500\n"
		     "5/5 [==============================] - 1s 250ms/step - loss: 0.2000 - val_loss: 0.5000\n",
		     out);
	free(out);
	/* a memstream is not a terminal: the default is plain lines */
	out = run_epoch(0, -1);
	EXPECT_EQ(NULL, strchr(out, '\r'));
	free(out);
}

TEST(progress_tty_redraws)
{
	struct fake_clock clk = { 0 };
	struct vtpu_progress_opts o = {
		.sz = sizeof(o), .tty = 1, .now = fake_now, .now_ctx = &clk,
	};
	struct vtpu_metric big = { "loss", 1000000.5 }, one = { "loss", 1 };
	struct vtpu_progress *p;
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	p = vtpu_progress_create(f, 3, &o);
	ASSERT_NE(NULL, p);
	vtpu_progress_start(p, 1, 0);	/* no "Epoch" line */
	clk.t = 0.01;
	vtpu_progress_update(p, 1, &big, 1);	/* drawn: the first */
	clk.t = 0.02;
	vtpu_progress_update(p, 2, &big, 1);	/* within 50 ms: skipped */
	clk.t = 0.03;
	vtpu_progress_update(p, 3, &one, 1);	/* the last: drawn, padded */
	vtpu_progress_end(p, NULL, 0);
	vtpu_progress_destroy(p);
	fclose(f);
	EXPECT_STREQ("\r1/3 [=========>....................] - ETA: 0s - loss: 1000000.5000"
		     "\r3/3 [==============================] - ETA: 0s - loss: 1.0000      "
		     "\r3/3 [==============================] - 0s 10ms/step - loss: 1.0000\n",
		     buf);
	free(buf);
}

TEST(progress_misc)
{
	const struct vtpu_metric m[] = { { "test_loss", 0.06123 },
					 { "test_acc", 0.98119 } };
	struct vtpu_progress_opts old = { .sz = 4, .tty = 1 };	/* too small */
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	struct vtpu_progress *p;

	EXPECT_LT(0, vtpu_print_metrics(f, m, 2));
	fflush(f);
	EXPECT_STREQ("test_loss: 0.0612 - test_acc: 0.9812\n", buf);
	errno = 0;
	EXPECT_EQ(NULL, vtpu_progress_create(f, 0, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, vtpu_progress_create(NULL, 3, NULL));
	/* a truncated opts struct: only its first fields are read */
	p = vtpu_progress_create(f, 3, &old);
	EXPECT_NE(NULL, p);
	vtpu_progress_destroy(p);
	vtpu_progress_destroy(NULL);
	fclose(f);
	free(buf);
}

/* ---- checkpoints ---------------------------------------------------------- */

struct ckpt_fix {
	float w[12], b[4], s;
	struct vtpu_ckpt_tensor t[3];
};

static void ckpt_fill(struct ckpt_fix *c, float base)
{
	int i;

	for (i = 0; i < 12; i++)
		c->w[i] = base + i * 0.5f;
	for (i = 0; i < 4; i++)
		c->b[i] = base - i;
	c->s = base * 3;
	c->t[0] = (struct vtpu_ckpt_tensor){ "fc1.weight", 2, { 3, 4 }, c->w };
	c->t[1] = (struct vtpu_ckpt_tensor){ "fc1.bias", 1, { 4 }, c->b };
	c->t[2] = (struct vtpu_ckpt_tensor){ "step", 0, { 0 }, &c->s };
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

TEST_F(tmp, ckpt_round_trip)
{
	struct ckpt_fix a, b;
	struct vtpu_ckpt_tensor swapped[3];
	char path[128], err[256] = "";

	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	ckpt_fill(&a, 1.5f);
	ASSERT_EQ(0, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	EXPECT_EQ(1, count_files(self->dir));	/* no temp file left */

	ckpt_fill(&b, 0);
	/* in another order */
	swapped[0] = b.t[2];
	swapped[1] = b.t[0];
	swapped[2] = b.t[1];
	ASSERT_EQ(0, vtpu_ckpt_load(path, swapped, 3, err, sizeof(err)));
	EXPECT_EQ(0, memcmp(a.w, b.w, sizeof(a.w)));
	EXPECT_EQ(0, memcmp(a.b, b.b, sizeof(a.b)));
	EXPECT_EQ(a.s, b.s);

	/* overwriting replaces */
	ckpt_fill(&a, -2);
	ASSERT_EQ(0, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	ASSERT_EQ(0, vtpu_ckpt_load(path, b.t, 3, err, sizeof(err)));
	EXPECT_EQ(-2 * 3, b.s);
	EXPECT_EQ(1, count_files(self->dir));

	/* nothing to save is a valid, empty checkpoint */
	ASSERT_EQ(0, vtpu_ckpt_save(path, NULL, 0, err, sizeof(err)));
	ASSERT_EQ(0, vtpu_ckpt_load(path, NULL, 0, err, sizeof(err)));
}

TEST_F(tmp, ckpt_save_errors)
{
	struct ckpt_fix a;
	char path[128], err[256] = "";

	ckpt_fill(&a, 1);
	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	a.t[1].name = "fc1.weight";
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	EXPECT_MSG(err, "tensor 'fc1.weight' appears twice");
	a.t[1].name = "";
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	a.t[1].name = "fc1.bias";
	a.t[1].ndim = 9;
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	a.t[1].ndim = 2;
	a.t[1].dims[0] = a.t[1].dims[1] = 1ull << 40;
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	EXPECT_MSG(err, "absurd shape");
	EXPECT_EQ(0, count_files(self->dir));
	ckpt_fill(&a, 1);
	EXPECT_EQ(-ENOENT, vtpu_ckpt_save("/nonexistent/dir/x.ckpt", a.t, 3,
					  err, sizeof(err)));
}

enum ckpt_damage {
	FLIP_PAYLOAD, TRUNCATE, BAD_MAGIC, BAD_VERSION, NAME_MISMATCH,
	SHAPE_MISMATCH, COUNT_DIFF, TRAILING_BYTES, MISSING_FILE, TINY_FILE,
};

FIXTURE(ckpt_bad) {
	char dir[64];
};

FIXTURE_VARIANT(ckpt_bad) {
	enum ckpt_damage damage;
	int err;
	const char *msg;
};

FIXTURE_SETUP(ckpt_bad) { ASSERT_NE(NULL, tmp_make(self->dir)); }
FIXTURE_TEARDOWN(ckpt_bad) { rm_rf(self->dir); }

#define CKPT_BAD(name, dmg, e, m)					\
	FIXTURE_VARIANT_ADD(ckpt_bad, name) {				\
		.damage = dmg, .err = e, .msg = m,			\
	}

CKPT_BAD(flip_payload, FLIP_PAYLOAD, -EIO,
	 "checksum mismatch: the file is corrupt");
CKPT_BAD(truncated, TRUNCATE, -EIO,
	 "truncated: header says 138 payload bytes, the file has 137");
CKPT_BAD(tiny, TINY_FILE, -EIO, "truncated: 20 bytes, the header alone is 32");
CKPT_BAD(bad_magic, BAD_MAGIC, -EINVAL, "not a vtpu checkpoint (bad magic)");
CKPT_BAD(bad_version, BAD_VERSION, -EINVAL,
	 "checkpoint version 3, this library reads versions 1 to 2");
CKPT_BAD(name_mismatch, NAME_MISMATCH, -EINVAL,
	 "has a tensor 'fc1.bias' that is not expected");
CKPT_BAD(shape_mismatch, SHAPE_MISMATCH, -EINVAL,
	 "tensor 'fc1.weight' has shape [3, 4], expected [4, 3]");
CKPT_BAD(count_differs, COUNT_DIFF, -EINVAL, "has 3 tensors, expected 2");
CKPT_BAD(trailing_bytes, TRAILING_BYTES, -EINVAL,
	 "1 unexpected bytes after the payload");
CKPT_BAD(missing, MISSING_FILE, -ENOENT, "No such file");

TEST_F(ckpt_bad, rejected)
{
	struct ckpt_fix a, b, orig;
	char path[128], err[256] = "";
	size_t n = 3, len;
	uint8_t *buf;
	uint32_t v3 = 3;

	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	ckpt_fill(&a, 1.5f);
	ASSERT_EQ(0, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	buf = slurp(path, &len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(32 + 138, len);
	ckpt_fill(&b, 7);
	switch (variant->damage) {
	case FLIP_PAYLOAD: buf[len - 5] ^= 1; break;
	case TRUNCATE: len--; break;
	case TINY_FILE: len = 20; break;
	case BAD_MAGIC: buf[0] = 'X'; break;
	case BAD_VERSION: memcpy(buf + 8, &v3, 4); break;
	case NAME_MISMATCH: b.t[1].name = "fc1.b"; break;
	case SHAPE_MISMATCH: b.t[0].dims[0] = 4; b.t[0].dims[1] = 3; break;
	case COUNT_DIFF: n = 2; break;
	case TRAILING_BYTES: buf[len++] = 0; break;
	case MISSING_FILE: unlink(path); break;
	}
	if (variant->damage != MISSING_FILE)
		write_bytes(path, buf, len, false);
	free(buf);
	orig = b;
	EXPECT_EQ(variant->err, vtpu_ckpt_load(path, b.t, n, err, sizeof(err)));
	EXPECT_MSG(err, variant->msg);
	/* the caller's tensors are untouched */
	EXPECT_EQ(0, memcmp(orig.w, b.w, sizeof(b.w)));
	EXPECT_EQ(0, memcmp(orig.b, b.b, sizeof(b.b)));
	EXPECT_EQ(orig.s, b.s);
}

/*
 * Every single-bit flip and every truncation of a checkpoint saved with
 * @nmeta metadata entries is an error, never a crash, and fills nothing.
 */
static void corrupt_each(struct __test_metadata *_metadata, const char *dir,
			 const struct vtpu_ckpt_meta *meta, size_t nmeta)
{
	struct ckpt_fix a, b;
	char path[128], err[256];
	size_t len, i;
	uint8_t *buf;
	int bit, ret;

	snprintf(path, sizeof(path), "%s/model.ckpt", dir);
	ckpt_fill(&a, 1.5f);
	ASSERT_EQ(0, vtpu_ckpt_save_meta(path, a.t, 3, meta, nmeta, NULL, 0));
	buf = slurp(path, &len);
	ASSERT_NE(NULL, buf);
	ckpt_fill(&b, 0);
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			buf[i] ^= 1 << bit;
			write_bytes(path, buf, len, false);
			buf[i] ^= 1 << bit;
			err[0] = '\0';
			ret = vtpu_ckpt_load_meta(path, b.t, 3, meta, nmeta, err,
						  sizeof(err));
			if (ret != -EIO && ret != -EINVAL)
				TH_LOG("byte %zu bit %d: %d %s", i, bit, ret,
				       err);
			ASSERT_TRUE(ret == -EIO || ret == -EINVAL);
			ASSERT_NE(0, strlen(err));
		}
	}
	for (i = 0; i < len; i++) {
		write_bytes(path, buf, i, false);
		ret = vtpu_ckpt_load_meta(path, b.t, 3, meta, nmeta, err,
					  sizeof(err));
		ASSERT_TRUE(ret == -EIO || ret == -EINVAL);
	}
	for (i = 0; i < 12; i++)	/* never filled */
		ASSERT_EQ(i * 0.5f, b.w[i]);
	free(buf);
}

TEST_F(tmp, ckpt_every_corruption)
{
	const struct vtpu_ckpt_meta meta[2] = {
		{ "source vocabulary", "0123456789abcdef" }, { "empty", "" },
	};

	corrupt_each(_metadata, self->dir, NULL, 0);
	corrupt_each(_metadata, self->dir, meta, 2);
}

/*
 * Metadata: version 2 files (version 1 without), ignored by a plain load,
 * required by a load that names it, checked before any tensor is filled.
 */
TEST_F(tmp, ckpt_meta)
{
	const struct vtpu_ckpt_meta meta[2] = {
		{ "source vocabulary", "0123456789abcdef" }, { "empty", "" },
	};
	static const struct {
		struct vtpu_ckpt_meta want;
		int ret;
		const char *msg;
	} bad[] = {
		{ { "source vocabulary", "fedcba9876543210" }, -EKEYREJECTED,
		  "the checkpoint's 'source vocabulary' is '0123456789abcdef', not 'fedcba9876543210'" },
		{ { "source vocabulary", "0123456789abcde" },	/* a prefix */
		  -EKEYREJECTED, "is '0123456789abcdef', not '0123456789abcde'" },
		{ { "empty", "x" }, -EKEYREJECTED,
		  "the checkpoint's 'empty' is '', not 'x'" },
		{ { "target vocabulary", "0123456789abcdef" }, -ENOKEY,
		  "the checkpoint has no 'target vocabulary' (expected '0123456789abcdef')" },
		{ { "source", "0123456789abcdef" }, -ENOKEY, "has no 'source'" },
	};
	struct ckpt_fix a, b;
	char path[128], err[256];
	uint32_t word;
	uint8_t *buf;
	size_t len, i;

	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	ckpt_fill(&a, 1.5f);
	ASSERT_EQ(0, vtpu_ckpt_save_meta(path, a.t, 3, meta, 2, err,
					 sizeof(err)));
	buf = slurp(path, &len);
	ASSERT_NE(NULL, buf);
	memcpy(&word, buf + 8, 4);
	EXPECT_EQ(2, word);
	memcpy(&word, buf + 28, 4);
	EXPECT_EQ(2, word);
	EXPECT_EQ(32 + 138 + 8 + 17 + 16 + 8 + 5, len);
	free(buf);

	ckpt_fill(&b, 0);
	ASSERT_EQ(0, vtpu_ckpt_load(path, b.t, 3, err, sizeof(err)));
	EXPECT_EQ(0, memcmp(a.w, b.w, sizeof(a.w)));
	ckpt_fill(&b, 0);
	ASSERT_EQ(0, vtpu_ckpt_load_meta(path, b.t, 3, meta, 2, err,
					 sizeof(err)));
	EXPECT_EQ(0, memcmp(a.w, b.w, sizeof(a.w)));
	EXPECT_EQ(a.s, b.s);
	ckpt_fill(&b, 0);
	ASSERT_EQ(0, vtpu_ckpt_load_meta(path, b.t, 3, &meta[1], 1, err,
					 sizeof(err)));
	EXPECT_EQ(0, memcmp(a.b, b.b, sizeof(a.b)));

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ckpt_fill(&b, 0);
		err[0] = '\0';
		EXPECT_EQ(bad[i].ret, vtpu_ckpt_load_meta(path, b.t, 3,
							  &bad[i].want, 1,
							  err, sizeof(err)));
		EXPECT_MSG(err, bad[i].msg);
		EXPECT_EQ(0.5f, b.w[1]);	/* untouched */
		EXPECT_EQ(0, b.s);
	}
	/* the metadata before the shapes: another vocabulary says so */
	ckpt_fill(&b, 0);
	b.t[0].dims[0] = 4;
	b.t[0].dims[1] = 3;
	EXPECT_EQ(-EKEYREJECTED, vtpu_ckpt_load_meta(path, b.t, 3,
						     &bad[0].want, 1, err,
						     sizeof(err)));
	EXPECT_MSG(err, "'source vocabulary' is");
	EXPECT_EQ(-EINVAL, vtpu_ckpt_load_meta(path, b.t, 3, meta, 2, err,
					       sizeof(err)));
	EXPECT_MSG(err, "tensor 'fc1.weight' has shape [3, 4], expected [4, 3]");
	EXPECT_EQ(0.5f, b.w[1]);

	/* without metadata: version 1, as before, and no key to require */
	ASSERT_EQ(0, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	buf = slurp(path, &len);
	ASSERT_NE(NULL, buf);
	memcpy(&word, buf + 8, 4);
	EXPECT_EQ(1, word);
	EXPECT_EQ(32 + 138, len);
	free(buf);
	ckpt_fill(&b, 0);
	EXPECT_EQ(-ENOKEY, vtpu_ckpt_load_meta(path, b.t, 3, meta, 1, err,
					       sizeof(err)));
	EXPECT_MSG(err, "the checkpoint has no 'source vocabulary'");
}

/*
 * A file of @ckpt_fix's three tensors and the metadata records @meta
 * (@mlen bytes, written as they are), with a header saying @nmeta
 * records and version @version, and a correct CRC: what a hostile or
 * buggy writer could make.
 */
static void write_meta_file(struct __test_metadata *_metadata,
			    const char *path, const void *meta, size_t mlen,
			    uint32_t nmeta, uint32_t version)
{
	struct ckpt_fix a;
	char err[256];
	uint8_t *buf, *out;
	uint64_t payload;
	uint32_t crc;
	size_t len;

	ckpt_fill(&a, 1.5f);
	ASSERT_EQ(0, vtpu_ckpt_save(path, a.t, 3, err, sizeof(err)));
	buf = slurp(path, &len);
	ASSERT_NE(NULL, buf);
	out = malloc(len + mlen);
	ASSERT_NE(NULL, out);
	memcpy(out, buf, len);
	memcpy(out + len, meta, mlen);
	payload = len - 32 + mlen;
	crc = (uint32_t)crc32(crc32(0, NULL, 0), out + 32, (uInt)payload);
	memcpy(out + 8, &version, 4);
	memcpy(out + 16, &payload, 8);
	memcpy(out + 24, &crc, 4);
	memcpy(out + 28, &nmeta, 4);
	write_bytes(path, out, len + mlen, false);
	free(out);
	free(buf);
}

/* Metadata records no writer of ours makes: each an error, nothing filled. */
TEST_F(tmp, ckpt_meta_hostile)
{
	static const struct {
		const char *name;
		const char *bytes;
		size_t len;
		uint32_t nmeta, version;
		const char *msg;
	} bad[] = {
#define BAD(n, b, nm, v, m) { n, b, sizeof(b) - 1, nm, v, m }
		BAD("an empty key", "\0\0\0\0\1\0\0\0v", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a key of 256 bytes", "\0\1\0\0\0\0\0\0", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a value of 65536 bytes", "\1\0\0\0\0\0\1\0k", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a NUL in the key", "\2\0\0\0\1\0\0\0k\0v", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a NUL in the value", "\1\0\0\0\2\0\0\0kv\0", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a value past the end", "\1\0\0\0\11\0\0\0kv", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("a record cut short", "\1\0\0\0\1", 1, 2,
		    "metadata record 0 is malformed"),
		BAD("more records than there are",
		    "\1\0\0\0\1\0\0\0kv", 2, 2,
		    "metadata record 1 is malformed"),
		BAD("fewer records than there are",
		    "\1\0\0\0\1\0\0\0kv\1\0\0\0\1\0\0\0jw", 1, 2,
		    "10 bytes after the last record"),
		BAD("a key twice",
		    "\1\0\0\0\1\0\0\0kv\1\0\0\0\1\0\0\0kw", 2, 2,
		    "metadata 'k' appears twice"),
		BAD("too many records", "", 257, 2,
		    "257 metadata records (at most 256)"),
		BAD("records in a version 1 file", "\1\0\0\0\1\0\0\0kv", 1,
		    1, "reserved header field is not zero"),
#undef BAD
	};
	const struct vtpu_ckpt_meta want = { "k", "v" };
	char path[128], err[256];
	struct ckpt_fix b;
	size_t i;

	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	/* the well-formed twin loads */
	write_meta_file(_metadata, path, "\1\0\0\0\1\0\0\0kv", 10, 1, 2);
	ckpt_fill(&b, 0);
	ASSERT_EQ(0, vtpu_ckpt_load_meta(path, b.t, 3, &want, 1, err,
					 sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(2.0f, b.w[1]);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		write_meta_file(_metadata, path, bad[i].bytes, bad[i].len,
				bad[i].nmeta, bad[i].version);
		ckpt_fill(&b, 0);
		err[0] = '\0';
		EXPECT_EQ(-EINVAL, vtpu_ckpt_load_meta(path, b.t, 3, &want, 1,
						       err, sizeof(err)))
			TH_LOG("%s", bad[i].name);
		EXPECT_MSG(err, bad[i].msg);
		/* a plain load parses them too */
		EXPECT_EQ(-EINVAL, vtpu_ckpt_load(path, b.t, 3, err,
						  sizeof(err)));
		EXPECT_EQ(0.5f, b.w[1]);
	}
}

TEST_F(tmp, ckpt_meta_bad_arguments)
{
	struct vtpu_ckpt_meta many[VTPU_CKPT_MAX_NMETA + 1];
	static char names[VTPU_CKPT_MAX_NMETA + 1][8];
	char path[128], err[256], *long_value;
	struct ckpt_fix a;
	const struct {
		struct vtpu_ckpt_meta meta[2];
		const char *msg;
	} bad[] = {
		{ { { "k", "1" }, { "k", "2" } }, "metadata 'k' appears twice" },
		{ { { "k", "1" }, { "", "2" } }, "metadata 1: key must be 1..255 bytes" },
		{ { { NULL, "1" }, { "j", "2" } }, "metadata 0: key must be 1..255 bytes" },
		{ { { "k", NULL }, { "j", "2" } },
		  "metadata 'k': the value must be a string of at most 65535 bytes" },
	};
	size_t i;

	snprintf(path, sizeof(path), "%s/model.ckpt", self->dir);
	ckpt_fill(&a, 1);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, vtpu_ckpt_save_meta(path, a.t, 3,
						       bad[i].meta, 2, err,
						       sizeof(err)));
		EXPECT_MSG(err, bad[i].msg);
		/* a load names the same error, before reading any file */
		EXPECT_EQ(-EINVAL, vtpu_ckpt_load_meta(path, a.t, 3,
						       bad[i].meta, 2, err,
						       sizeof(err)));
		EXPECT_MSG(err, bad[i].msg);
	}
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save_meta(path, a.t, 3, NULL, 1, err,
					       sizeof(err)));
	EXPECT_MSG(err, "no metadata");

	long_value = malloc(VTPU_CKPT_MAX_VALUE + 2);
	ASSERT_NE(NULL, long_value);
	memset(long_value, 'v', VTPU_CKPT_MAX_VALUE + 1);
	long_value[VTPU_CKPT_MAX_VALUE + 1] = '\0';
	many[0] = (struct vtpu_ckpt_meta){ "long", long_value };
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save_meta(path, a.t, 3, many, 1, err,
					       sizeof(err)));
	EXPECT_MSG(err, "at most 65535 bytes");
	long_value[VTPU_CKPT_MAX_VALUE] = '\0';	/* the longest allowed */
	EXPECT_EQ(0, vtpu_ckpt_save_meta(path, a.t, 3, many, 1, err,
					 sizeof(err)));
	EXPECT_EQ(0, vtpu_ckpt_load_meta(path, a.t, 3, many, 1, err,
					 sizeof(err)));
	free(long_value);
	unlink(path);

	for (i = 0; i <= VTPU_CKPT_MAX_NMETA; i++) {
		snprintf(names[i], sizeof(names[i]), "k%zu", i);
		many[i] = (struct vtpu_ckpt_meta){ names[i], "" };
	}
	EXPECT_EQ(-EINVAL, vtpu_ckpt_save_meta(path, a.t, 3, many,
					       VTPU_CKPT_MAX_NMETA + 1, err,
					       sizeof(err)));
	EXPECT_MSG(err, "257 metadata entries (at most 256)");
	EXPECT_EQ(0, count_files(self->dir));	/* nothing was written */
	EXPECT_EQ(0, vtpu_ckpt_save_meta(path, a.t, 3, many,
					 VTPU_CKPT_MAX_NMETA, err,
					 sizeof(err)));
	EXPECT_EQ(0, vtpu_ckpt_load_meta(path, a.t, 3, many,
					 VTPU_CKPT_MAX_NMETA, err,
					 sizeof(err)));
}

TEST_HARNESS_MAIN
