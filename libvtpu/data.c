// SPDX-License-Identifier: MIT
/*
 * Datasets for the trainers: MNIST / Fashion-MNIST (gzip'd IDX files) and
 * CIFAR-10 (binary version) loaded into NHWC uint8 arrays, a reproducible
 * shuffle, and batch assembly into caller-provided float / uint32 buffers
 * (typically device buffers' mappings).
 *
 * The loaders trust nothing in the files: every header field is checked
 * before it sizes anything, sizes are computed overflow-safe, and memory
 * grows with the data actually read, so a 16-byte file claiming 4 GiB of
 * pixels costs nothing before it is reported as truncated.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "vtpu_data.h"
#include "data_priv.h"

int vtpu__errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

void vtpu_dataset_free(struct vtpu_dataset *ds)
{
	if (!ds)
		return;
	free(ds->images);
	free(ds->labels);
	memset(ds, 0, sizeof(*ds));
}

int vtpu_dataset_truncate(struct vtpu_dataset *ds, uint32_t n)
{
	void *p;

	if (n == 0)
		return -EINVAL;
	if (n >= ds->n)
		return 0;
	ds->n = n;
	/* shrinking: a failed realloc keeps the (larger) old block, still valid */
	p = realloc(ds->images, (size_t)n * vtpu_dataset_image_size(ds));
	if (p)
		ds->images = p;
	p = realloc(ds->labels, n);
	if (p)
		ds->labels = p;
	return 0;
}

/* dir/name into buf, or -ENAMETOOLONG (with a message) if it does not fit */
static int join(char *buf, size_t len, const char *dir, const char *name,
		char *err, size_t errlen)
{
	int r = snprintf(buf, len, "%s/%s", dir, name);

	if (r < 0 || (size_t)r >= len)
		return vtpu__errf(err, errlen, -ENAMETOOLONG,
				  "%s/%s: path too long", dir, name);
	return 0;
}

/* ---- MNIST: IDX files, gzip'd or not -------------------------------------- */

#define IDX_IMAGES_MAGIC 0x00000803u	/* unsigned byte, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u	/* unsigned byte, 1 dimension */
#define IDX_MAX_SIDE 32768u		/* rows, columns: far above any real set */
#define IDX_MAX_BYTES (1ull << 34)	/* 16 GiB of pixels */
#define READ_CHUNK (4u << 20)		/* also the first allocation */
#define MNIST_CLASSES 10u

struct idx_file {
	char path[PATH_MAX];
	gzFile gz;
	uint32_t dims[3];
};

/*
 * Read up to @len bytes. Return: 0 all read, 1 end of file first, or -1
 * a gzip or read error (gzerror() says which). *got counts what arrived.
 */
static int gz_read_upto(gzFile gz, uint8_t *buf, size_t len, size_t *got)
{
	int r, errnum;

	*got = 0;
	while (*got < len) {
		size_t want = len - *got;

		if (want > READ_CHUNK)
			want = READ_CHUNK;
		r = gzread(gz, buf + *got, (unsigned int)want);
		if (r < 0)
			return -1;
		if (r == 0) {
			/* zlib reports a cut-off gzip stream as Z_BUF_ERROR */
			gzerror(gz, &errnum);
			return errnum == Z_OK ? 1 : -1;
		}
		*got += (size_t)r;
	}
	return 0;
}

/* The message and errno for a gz_read_upto() that fell short of @want. */
static int idx_short(struct idx_file *f, int r, const char *what,
		     uint64_t want, size_t got, char *err, size_t errlen)
{
	int errnum = Z_OK;
	const char *msg = r < 0 ? gzerror(f->gz, &errnum) : "";

	if (r > 0 || errnum == Z_BUF_ERROR)
		return vtpu__errf(err, errlen, -EIO,
				  "%s: truncated: expected %llu %s, got %zu",
				  f->path, (unsigned long long)want, what, got);
	if (errnum == Z_ERRNO)
		msg = strerror(errno);
	return vtpu__errf(err, errlen, -EIO, "%s: %s after %zu %s: %s",
			  f->path, errnum == Z_DATA_ERROR ?
			  "corrupt gzip data" : "read error", got, what, msg);
}

/* Open dir/name.gz, else dir/name; read and check the IDX header. */
static int idx_open(struct idx_file *f, const char *dir, const char *name,
		    uint32_t magic, unsigned int ndim, char *err, size_t errlen)
{
	uint8_t hdr[16];
	size_t hlen = 4 + 4 * ndim, got;
	char gzname[64];
	struct stat st;
	uint32_t m;
	unsigned int i;
	int fd, r;

	f->gz = NULL;
	snprintf(gzname, sizeof(gzname), "%s.gz", name);
	r = join(f->path, sizeof(f->path), dir, gzname, err, errlen);
	if (r)
		return r;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		join(f->path, sizeof(f->path), dir, name, err, errlen);
		fd = open(f->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return vtpu__errf(err, errlen, -ENOENT,
					  "%s/%s.gz: not found (nor %s)", dir,
					  name, name);
	}
	if (fd < 0)
		return vtpu__errf(err, errlen, -errno, "%s: %s", f->path,
				  strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: not a regular file", f->path);
	}
	f->gz = gzdopen(fd, "rb");
	if (!f->gz) {
		close(fd);
		return vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory",
				  f->path);
	}
	gzbuffer(f->gz, 256 * 1024);

	r = gz_read_upto(f->gz, hdr, hlen, &got);
	if (r)
		return idx_short(f, r, "header bytes", hlen, got, err, errlen);
	m = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	    (uint32_t)hdr[2] << 8 | hdr[3];
	if (m != magic)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: bad magic 0x%08x, expected 0x%08x (an IDX file of unsigned bytes with %u dimension%s)",
				  f->path, m, magic, ndim, ndim > 1 ? "s" : "");
	for (i = 0; i < ndim; i++) {
		const uint8_t *p = hdr + 4 + 4 * i;

		f->dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			     (uint32_t)p[2] << 8 | p[3];
	}
	return 0;
}

/*
 * Read exactly @want payload bytes into a new buffer, growing it as data
 * arrives, then make sure the file ends there (which is also when zlib
 * checks the gzip trailer's CRC and length).
 */
static int idx_read_payload(struct idx_file *f, uint64_t want,
			    const char *what, uint8_t **out, char *err,
			    size_t errlen)
{
	size_t cap = want < READ_CHUNK ? (size_t)want : READ_CHUNK;
	size_t have = 0, got;
	uint8_t *buf = malloc(cap), *p, extra;
	int r;

	if (!buf)
		return vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory",
				  f->path);
	for (;;) {
		r = gz_read_upto(f->gz, buf + have, cap - have, &got);
		have += got;
		if (r)
			break;
		if (have == want)
			break;
		cap = want - cap < cap ? (size_t)want : cap * 2;
		p = realloc(buf, cap);
		if (!p) {
			free(buf);
			return vtpu__errf(err, errlen, -ENOMEM,
					  "%s: out of memory for %llu %s",
					  f->path, (unsigned long long)want,
					  what);
		}
		buf = p;
	}
	if (!r)
		r = gz_read_upto(f->gz, &extra, 1, &got);
	if (r <= 0) {
		free(buf);
		if (r == 0)
			return vtpu__errf(err, errlen, -EINVAL,
					  "%s: unexpected data after the %llu %s (does the header's count match the file?)",
					  f->path, (unsigned long long)want,
					  what);
		/* a gzip error at the very end is a damaged trailer */
		return idx_short(f, r, what, want, have, err, errlen);
	}
	if (have < want) {
		free(buf);
		return idx_short(f, r, what, want, have, err, errlen);
	}
	*out = buf;
	return 0;
}

static void idx_close(struct idx_file *f)
{
	if (f->gz)
		gzclose(f->gz);
	f->gz = NULL;
}

static int mnist_load(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen)
{
	const char *split = train ? "train" : "t10k";
	struct idx_file img, lab;
	char name[64];
	uint64_t pixels;
	uint32_t n, i;
	int ret;

	img.gz = lab.gz = NULL;
	snprintf(name, sizeof(name), "%s-images-idx3-ubyte", split);
	ret = idx_open(&img, dir, name, IDX_IMAGES_MAGIC, 3, err, errlen);
	if (ret)
		goto out;
	snprintf(name, sizeof(name), "%s-labels-idx1-ubyte", split);
	ret = idx_open(&lab, dir, name, IDX_LABELS_MAGIC, 1, err, errlen);
	if (ret)
		goto out;

	n = img.dims[0];
	if (!n || !img.dims[1] || !img.dims[2] || img.dims[1] > IDX_MAX_SIDE ||
	    img.dims[2] > IDX_MAX_SIDE ||
	    __builtin_mul_overflow((uint64_t)n, img.dims[1], &pixels) ||
	    __builtin_mul_overflow(pixels, img.dims[2], &pixels) ||
	    pixels > IDX_MAX_BYTES || pixels > SIZE_MAX) {
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: absurd dimensions %u x %u x %u", img.path,
				 n, img.dims[1], img.dims[2]);
		goto out;
	}
	if (lab.dims[0] != n) {
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s has %u images but %s has %u labels",
				 img.path, n, lab.path, lab.dims[0]);
		goto out;
	}

	ret = idx_read_payload(&img, pixels, "image bytes", &ds->images, err,
			       errlen);
	if (ret)
		goto out;
	ret = idx_read_payload(&lab, n, "label bytes", &ds->labels, err,
			       errlen);
	if (ret)
		goto out;
	for (i = 0; i < n; i++) {
		if (ds->labels[i] >= MNIST_CLASSES) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s: label %u at index %u (labels are 0..%u)",
					 lab.path, ds->labels[i], i,
					 MNIST_CLASSES - 1);
			goto out;
		}
	}
	ds->n = n;
	ds->height = img.dims[1];
	ds->width = img.dims[2];
	ds->channels = 1;
	ds->classes = MNIST_CLASSES;
out:
	idx_close(&img);
	idx_close(&lab);
	return ret;
}

typedef int loader_fn(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen);

/* The loaders' common contract: @ds zeroed first, and again on failure. */
static int load(loader_fn *fn, const char *dir, bool train,
		struct vtpu_dataset *ds, char *err, size_t errlen)
{
	int ret;

	memset(ds, 0, sizeof(*ds));
	if (!dir)
		return vtpu__errf(err, errlen, -EINVAL, "no dataset directory");
	ret = fn(dir, train, ds, err, errlen);
	if (ret)
		vtpu_dataset_free(ds);
	return ret;
}

int vtpu_load_mnist(const char *dir, bool train, struct vtpu_dataset *ds,
		    char *err, size_t errlen)
{
	return load(mnist_load, dir, train, ds, err, errlen);
}

/* ---- CIFAR-10, binary version --------------------------------------------- */

#define CIFAR_SIDE 32u
#define CIFAR_PLANE (CIFAR_SIDE * CIFAR_SIDE)	/* 1024 */
#define CIFAR_IMAGE (3 * CIFAR_PLANE)		/* 3072 */
#define CIFAR_RECORD (1 + CIFAR_IMAGE)		/* 3073 */
#define CIFAR_CLASSES 10u
#define CIFAR_TRAIN_BATCHES 5

static int cifar_batch_path(char *path, size_t len, const char *base,
			    bool train, int i, char *err, size_t errlen)
{
	char name[32];

	if (train)
		snprintf(name, sizeof(name), "data_batch_%d.bin", i + 1);
	else
		snprintf(name, sizeof(name), "test_batch.bin");
	return join(path, len, base, name, err, errlen);
}

/* How many records @path holds, checking its size. */
static int cifar_count(const char *path, uint32_t *records, char *err,
		       size_t errlen)
{
	struct stat st;

	if (stat(path, &st))
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
	if (!S_ISREG(st.st_mode))
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: not a regular file", path);
	if (st.st_size == 0 || st.st_size % CIFAR_RECORD ||
	    st.st_size / CIFAR_RECORD > UINT32_MAX)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: size %lld is not a whole, non-zero number of %u-byte records",
				  path, (long long)st.st_size, CIFAR_RECORD);
	*records = (uint32_t)(st.st_size / CIFAR_RECORD);
	return 0;
}

/* Read @records records of @path into @ds at example @first, as NHWC. */
static int cifar_read(const char *path, uint32_t records,
		      struct vtpu_dataset *ds, uint32_t first, char *err,
		      size_t errlen)
{
	uint8_t rec[CIFAR_RECORD];
	uint32_t r, p, c;
	FILE *f;
	int ret = 0;

	f = fopen(path, "rb");
	if (!f)
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
	for (r = 0; r < records; r++) {
		uint8_t *img = ds->images + (size_t)(first + r) * CIFAR_IMAGE;

		if (fread(rec, 1, sizeof(rec), f) != sizeof(rec)) {
			ret = vtpu__errf(err, errlen, -EIO,
					 "%s: truncated: expected %u records, got %u",
					 path, records, r);
			break;
		}
		if (rec[0] >= CIFAR_CLASSES) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s: record %u has label %u (labels are 0..%u)",
					 path, r, rec[0], CIFAR_CLASSES - 1);
			break;
		}
		ds->labels[first + r] = rec[0];
		/* planes R, G, B of 32x32 -> pixels of (R, G, B) */
		for (p = 0; p < CIFAR_PLANE; p++)
			for (c = 0; c < 3; c++)
				img[3 * p + c] = rec[1 + c * CIFAR_PLANE + p];
	}
	fclose(f);
	return ret;
}

static int cifar_load(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen)
{
	int nfiles = train ? CIFAR_TRAIN_BATCHES : 1, i, ret;
	uint32_t records[CIFAR_TRAIN_BATCHES], total = 0;
	char base[PATH_MAX], path[PATH_MAX];
	const char *dir_used = dir;

	/* dir is the folder of .bin files, or the one containing it */
	ret = cifar_batch_path(path, sizeof(path), dir, train, 0, err, errlen);
	if (ret)
		return ret;
	if (access(path, F_OK)) {
		ret = join(base, sizeof(base), dir, "cifar-10-batches-bin", err,
			   errlen);
		dir_used = base;
	}
	if (ret)
		return ret;

	for (i = 0; i < nfiles; i++) {
		ret = cifar_batch_path(path, sizeof(path), dir_used, train, i,
				       err, errlen);
		if (!ret)
			ret = cifar_count(path, &records[i], err, errlen);
		if (ret == -ENOENT && i == 0)
			return vtpu__errf(err, errlen, ret,
					  "%s: not found (looked in %s and %s/cifar-10-batches-bin)",
					  path, dir, dir);
		if (ret)
			return ret;
		if (__builtin_add_overflow(total, records[i], &total) ||
		    (uint64_t)total * CIFAR_IMAGE > SIZE_MAX)
			return vtpu__errf(err, errlen, -EINVAL,
					  "%s: too many records", path);
	}

	ds->images = malloc((size_t)total * CIFAR_IMAGE);
	ds->labels = malloc(total);
	if (!ds->images || !ds->labels)
		return vtpu__errf(err, errlen, -ENOMEM,
				  "out of memory for %u CIFAR-10 images", total);
	total = 0;
	for (i = 0; i < nfiles; i++) {
		/* the same paths as above: they fit */
		cifar_batch_path(path, sizeof(path), dir_used, train, i, err,
				 errlen);
		ret = cifar_read(path, records[i], ds, total, err, errlen);
		if (ret)
			return ret;
		total += records[i];
	}
	ds->n = total;
	ds->height = ds->width = CIFAR_SIDE;
	ds->channels = 3;
	ds->classes = CIFAR_CLASSES;
	return 0;
}

int vtpu_load_cifar10(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen)
{
	return load(cifar_load, dir, train, ds, err, errlen);
}

/* ---- shuffling ------------------------------------------------------------ */

void vtpu_rng_seed(struct vtpu_rng *rng, uint64_t seed)
{
	rng->state = seed;
}

uint64_t vtpu_rng_next(struct vtpu_rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t vtpu_rng_below(struct vtpu_rng *rng, uint64_t bound)
{
	/* reject the lowest 2^64 mod bound values: what is left is a multiple */
	uint64_t threshold, r;

	if (!bound)
		return 0;
	threshold = -bound % bound;
	do
		r = vtpu_rng_next(rng);
	while (r < threshold);
	return r % bound;
}

void vtpu_shuffle(uint32_t *idx, uint32_t n, struct vtpu_rng *rng)
{
	uint32_t i, j, t;

	for (i = n; i > 1; i--) {
		j = (uint32_t)vtpu_rng_below(rng, i);
		t = idx[i - 1];
		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}

void vtpu_permutation(uint32_t *idx, uint32_t n, struct vtpu_rng *rng)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		idx[i] = i;
	vtpu_shuffle(idx, n, rng);
}

/* ---- augmentation ---------------------------------------------------------- */

void vtpu_image_transform(uint8_t *dst, const uint8_t *src, uint32_t h,
			  uint32_t w, uint32_t c, bool flip, int32_t dx,
			  int32_t dy)
{
	/* destination columns [x0, x1) come from source column x - dx */
	int64_t x0 = dx > 0 ? dx : 0, x1 = (int64_t)w + (dx < 0 ? dx : 0);
	size_t row = (size_t)w * c;
	int64_t y, x, sy;

	if (x0 > w)
		x0 = w;
	if (x1 < x0)
		x1 = x0;
	for (y = 0; y < h; y++) {
		uint8_t *d = dst + (size_t)y * row;
		const uint8_t *s;

		sy = y - dy;
		if (sy < 0 || sy >= h || x1 == x0) {
			memset(d, 0, row);
			continue;
		}
		s = src + (size_t)sy * row;
		memset(d, 0, x0 * c);
		memset(d + x1 * c, 0, (w - x1) * c);
		if (!flip) {
			memcpy(d + x0 * c, s + (x0 - dx) * c, (x1 - x0) * c);
			continue;
		}
		for (x = x0; x < x1; x++)
			memcpy(d + x * c, s + (w - 1 - (x - dx)) * c, c);
	}
}

void vtpu_image_augment(uint8_t *dst, const uint8_t *src, uint32_t h,
			uint32_t w, uint32_t c, const struct vtpu_augment *aug,
			struct vtpu_rng *rng)
{
	bool flip = aug->flip && (vtpu_rng_next(rng) >> 63);
	int32_t dx = 0, dy = 0;

	if (aug->shift) {
		dx = (int32_t)vtpu_rng_below(rng, 2 * (uint64_t)aug->shift + 1) -
		     (int32_t)aug->shift;
		dy = (int32_t)vtpu_rng_below(rng, 2 * (uint64_t)aug->shift + 1) -
		     (int32_t)aug->shift;
	}
	vtpu_image_transform(dst, src, h, w, c, flip, dx, dy);
}

/* ---- batches -------------------------------------------------------------- */

static inline uint32_t example(const uint32_t *idx, uint32_t first,
			       uint32_t i)
{
	return idx ? idx[first + i] : first + i;
}

static int batch_check(const struct vtpu_dataset *ds, const uint32_t *idx,
		       uint32_t first, uint32_t count)
{
	uint32_t i;

	if ((uint64_t)first + count > ds->n)
		return -EINVAL;
	for (i = 0; idx && i < count; i++)
		if (idx[first + i] >= ds->n)
			return -EINVAL;
	return 0;
}

int vtpu_batch_images(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, const float *mean,
		      const float *std, float *out)
{
	size_t isz = vtpu_dataset_image_size(ds), p;
	uint32_t nc = ds->channels, c, i;
	float lut[256];
	int ret, v;

	ret = batch_check(ds, idx, first, count);
	if (ret)
		return ret;
	if (!mean != !std)
		return -EINVAL;
	for (c = 0; mean && c < nc; c++)
		if (!(std[c] > 0) || !isfinite(mean[c]))
			return -EINVAL;
	/* one table per channel: exact (x / 255 - mean) / std, no per-pixel div */
	for (c = 0; c < nc; c++) {
		for (v = 0; v < 256; v++)
			lut[v] = mean ? ((float)v / 255.0f - mean[c]) / std[c] :
					(float)v / 255.0f;
		for (i = 0; i < count; i++) {
			const uint8_t *src = ds->images +
					     example(idx, first, i) * isz;
			float *dst = out + (size_t)i * isz;

			for (p = c; p < isz; p += nc)
				dst[p] = lut[src[p]];
		}
	}
	return 0;
}

int vtpu_batch_labels(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, uint32_t *out)
{
	uint32_t i;
	int ret = batch_check(ds, idx, first, count);

	if (ret)
		return ret;
	for (i = 0; i < count; i++)
		out[i] = ds->labels[example(idx, first, i)];
	return 0;
}

int vtpu_batch_onehot(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, float *out)
{
	uint32_t i, k, label;
	int ret = batch_check(ds, idx, first, count);

	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		label = ds->labels[example(idx, first, i)];
		for (k = 0; k < ds->classes; k++)
			out[(size_t)i * ds->classes + k] = k == label ? 1.0f :
								       0.0f;
	}
	return 0;
}

/* Mean and standard deviation of x / 255 over bytes first, first + step... */
static void pixel_stats(const struct vtpu_dataset *ds, size_t first,
			size_t step, float *mean, float *std)
{
	size_t total = (size_t)ds->n * vtpu_dataset_image_size(ds), p;
	uint64_t hist[256] = { 0 };
	double cnt = 0, s = 0, s2 = 0, m;
	int v;

	/* a histogram: exact sums, whatever the dataset's size */
	for (p = first; p < total; p += step)
		hist[ds->images[p]]++;
	for (v = 0; v < 256; v++) {
		cnt += (double)hist[v];
		s += (double)hist[v] * v;
		s2 += (double)hist[v] * v * v;
	}
	m = s / cnt;
	*mean = (float)(m / 255.0);
	*std = (float)(sqrt(fmax(s2 / cnt - m * m, 0.0)) / 255.0);
}

int vtpu_dataset_channel_stats(const struct vtpu_dataset *ds, float *mean,
			       float *std)
{
	uint32_t c;

	if (!ds->n || !vtpu_dataset_image_size(ds))
		return -EINVAL;
	for (c = 0; c < ds->channels; c++)
		pixel_stats(ds, c, ds->channels, &mean[c], &std[c]);
	return 0;
}

int vtpu_dataset_pixel_stats(const struct vtpu_dataset *ds, float *mean,
			     float *std)
{
	if (!ds->n || !vtpu_dataset_image_size(ds))
		return -EINVAL;
	pixel_stats(ds, 0, 1, mean, std);
	return 0;
}
