// SPDX-License-Identifier: MIT
/*
 * Image folders: a dataset from a folder of class folders of JPEG and PNG
 * files, as tf.keras.utils.image_dataset_from_directory() builds one
 * (labels from the sorted folder names, files in the order Keras lists
 * them, shuffled by a seed, the last part held out for validation).
 *
 * Nothing in a file is trusted: it is read whole (bounded) into memory and
 * decoded from there, libjpeg's and libpng's errors longjmp back here (their
 * defaults print or exit), dimensions are checked against a pixel budget
 * before anything is allocated for them, and a file that fails is a line in
 * the warnings and a count, never the end of the load. JPEG decoding
 * dominates the time, so files are decoded on a pool of threads, each into
 * the slot its example will have.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "vtpu_data.h"
#include "data_priv.h"

#define MAX_SIDE 8192		/* of the requested size */
#define MAX_CLASSES 256		/* labels are uint8_t */
#define MAX_DEPTH 64		/* folders below a class folder */
#define MAX_THREADS 256
#define MAX_FILE_BYTES ((size_t)256 << 20)
#define DEFAULT_MAX_PIXELS ((uint64_t)1 << 26)
#define DEFAULT_CACHE_MAX ((uint64_t)4 << 30)	/* and a quarter of RAM */
#define DEFAULT_DECODE_NICE 10

/* The options' fields a caller built with an older, smaller struct lacks. */
#define FOLDER_OPT(o, field, def)                                             \
	((o)->sz >= offsetof(struct vtpu_image_folder_opts, field) +          \
			    sizeof((o)->field) ?                              \
		 (o)->field :                                                 \
		 (def))

/* ---- listing the folder ------------------------------------------------ */

struct file {
	char *rel;		/* "class/sub/name.jpg", under the folder */
	size_t dirlen;		/* of "class/sub" */
	uint8_t label;
};

struct scan {
	const char *dir;
	struct file *f;
	size_t n, cap;
	uint32_t ignored;
	char *err;
	size_t errlen;
};

static bool is_image_name(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && dot != name && (!strcasecmp(dot, ".jpg") ||
				      !strcasecmp(dot, ".jpeg") ||
				      !strcasecmp(dot, ".png"));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Keras' order: os.walk()'s folders sorted by path, then the names in each
 * sorted; comparing the folder part first is not the same as a depth-first
 * walk in sorted order when names hold characters below '/'.
 */
static int cmp_file(const void *a, const void *b)
{
	const struct file *x = a, *y = b;
	size_t n = x->dirlen < y->dirlen ? x->dirlen : y->dirlen;
	int c = memcmp(x->rel, y->rel, n);

	if (c)
		return c;
	if (x->dirlen != y->dirlen)
		return x->dirlen < y->dirlen ? -1 : 1;
	return strcmp(x->rel + x->dirlen + 1, y->rel + y->dirlen + 1);
}

static char *path_join(const char *a, const char *b)
{
	char *p;

	return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

/*
 * The names in @path but "." and "..", sorted; hidden ones are counted in
 * *@hidden and left out. Return: 0 or -errno (with a message).
 */
static int list_dir(const char *path, char ***names, size_t *count,
		    uint32_t *hidden, char *err, size_t errlen)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **v = NULL, **nv;
	size_t n = 0, cap = 0;
	int ret;

	if (!d)
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  errno == ENOENT ? "no such folder" :
				  strerror(errno));
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (de->d_name[0] == '.') {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				(*hidden)++;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				goto nomem;
			v = nv;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto nomem;
		n++;
	}
	if (errno) {
		ret = vtpu__errf(err, errlen, -errno, "%s: %s", path,
				 strerror(errno));
		goto fail;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*names = v;
	*count = n;
	return 0;
nomem:
	ret = vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory", path);
fail:
	closedir(d);
	while (n)
		free(v[--n]);
	free(v);
	return ret;
}

static void free_names(char **v, size_t n)
{
	while (v && n)
		free(v[--n]);
	free(v);
}

/* Add the image files in folder @rel and below it to @s, labelled @label. */
static int walk(struct scan *s, const char *rel, uint8_t label, int depth)
{
	char *path = path_join(s->dir, rel), *child = NULL, *cpath = NULL;
	char **names = NULL;
	size_t n = 0, i;
	struct stat st;
	int ret;

	if (!path)
		return vtpu__errf(s->err, s->errlen, -ENOMEM, "out of memory");
	if (depth > MAX_DEPTH) {
		ret = vtpu__errf(s->err, s->errlen, -ELOOP,
				 "%s: folders nested too deeply", path);
		goto out;
	}
	ret = list_dir(path, &names, &n, &s->ignored, s->err, s->errlen);
	if (ret)
		goto out;
	for (i = 0; i < n; i++) {
		child = path_join(rel, names[i]);
		if (!child)
			goto nomem;
		cpath = path_join(s->dir, child);
		if (!cpath)
			goto nomem;
		/*
		 * Folders are walked, but not through symbolic links (Keras'
		 * follow_links=False); links to files are files. What cannot
		 * be stat()ed is taken as a file: opening it will say why.
		 */
		if (!lstat(cpath, &st) && S_ISDIR(st.st_mode)) {
			ret = walk(s, child, label, depth + 1);
			if (ret)
				goto out;
		} else if (!stat(cpath, &st) && S_ISDIR(st.st_mode)) {
			s->ignored++;
		} else if (!is_image_name(names[i])) {
			s->ignored++;
		} else {
			if (s->n == s->cap) {
				size_t cap = s->cap ? 2 * s->cap : 256;
				struct file *nf = realloc(s->f,
							  cap * sizeof(*nf));

				if (!nf)
					goto nomem;
				s->f = nf;
				s->cap = cap;
			}
			s->f[s->n++] = (struct file){
				.rel = child, .dirlen = strlen(rel),
				.label = label,
			};
			child = NULL;
		}
		free(child);
		free(cpath);
		child = cpath = NULL;
	}
	goto out;
nomem:
	ret = vtpu__errf(s->err, s->errlen, -ENOMEM, "%s: out of memory",
			 path);
out:
	free(child);
	free(cpath);
	free_names(names, n);
	free(path);
	return ret;
}

/* ---- decoding ----------------------------------------------------------- */

/* One decoding thread's buffers, grown as needed and kept between files. */
struct scratch {
	uint8_t *file;		/* the file's bytes */
	size_t file_cap;
	uint8_t *pix;		/* the decoded image */
	size_t pix_cap;
	float *wx, *wy, *row, *acc;
	uint32_t *sx, *sy, *nx, *ny;
	size_t wx_cap, wy_cap;
};

static int grow(void **p, size_t *cap, size_t need)
{
	void *np;

	if (need <= *cap)
		return 0;
	np = realloc(*p, need);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = need;
	return 0;
}

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void jerr_exit(j_common_ptr ci)
{
	struct jerr *e = (struct jerr *)ci->err;

	ci->err->format_message(ci, e->msg);
	longjmp(e->jb, 1);
}

/*
 * libjpeg recovers from damage with warnings. A file that ends early is
 * decoded with grey filler by libjpeg, so it is an error here (as TF's
 * decode_jpeg without try_recover_truncated); other warnings (e.g.
 * extraneous bytes before a marker, common in photos) are not.
 */
static void jerr_emit(j_common_ptr ci, int level)
{
	if (level < 0 && ci->err->msg_code == JWRN_JPEG_EOF)
		jerr_exit(ci);
	if (level < 0)
		ci->err->num_warnings++;
}

static void jerr_output(j_common_ptr ci)
{
	/* the library never prints */
}

/* Adobe CMYK (stored inverted, as Photoshop writes it) to @c channels */
static void cmyk_to(uint8_t *p, size_t npix, uint32_t c, bool inverted)
{
	size_t i;

	for (i = 0; i < npix; i++) {
		unsigned int k = p[4 * i + 3], rgb[3], j;

		for (j = 0; j < 3; j++) {
			unsigned int v = p[4 * i + j];

			rgb[j] = inverted ? (v * k + 127) / 255 :
				 ((255 - v) * (255 - k) + 127) / 255;
		}
		if (c == 1) {
			p[i] = (77 * rgb[0] + 150 * rgb[1] + 29 * rgb[2] +
				128) >> 8;
		} else {
			p[3 * i] = rgb[0];
			p[3 * i + 1] = rgb[1];
			p[3 * i + 2] = rgb[2];
		}
	}
}

/*
 * Decode @sc->file into @sc->pix, at the smallest DCT scale that covers
 * @tw x @th; if that scale is exactly @tw x @th with @c channels, straight
 * into @out instead (*@direct set: resize() would only copy it, its
 * weights being 1 and 0 then).
 */
static int decode_jpeg(struct scratch *sc, size_t len, uint32_t c,
		       uint32_t tw, uint32_t th, uint64_t max_px,
		       uint32_t *w, uint32_t *h, uint8_t *out, bool *direct,
		       char *why, size_t whylen)
{
	struct jpeg_decompress_struct ci;
	struct jerr je;
	unsigned int d;
	bool cmyk;
	size_t stride;
	uint8_t *dst;

	ci.err = jpeg_std_error(&je.pub);
	je.pub.error_exit = jerr_exit;
	je.pub.emit_message = jerr_emit;
	je.pub.output_message = jerr_output;
	if (setjmp(je.jb)) {
		/* frees all libjpeg allocated; our buffers belong to @sc */
		jpeg_destroy_decompress(&ci);
		snprintf(why, whylen, "corrupt JPEG: %s", je.msg);
		return -EINVAL;
	}
	jpeg_create_decompress(&ci);
	jpeg_mem_src(&ci, sc->file, len);
	jpeg_read_header(&ci, TRUE);
	if ((uint64_t)ci.image_width * ci.image_height > max_px) {
		snprintf(why, whylen, "image too large (%ux%u pixels)",
			 ci.image_width, ci.image_height);
		jpeg_destroy_decompress(&ci);
		return -EFBIG;
	}
	cmyk = ci.jpeg_color_space == JCS_CMYK ||
	       ci.jpeg_color_space == JCS_YCCK;
	ci.out_color_space = cmyk ? JCS_CMYK :
			     c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	/* the smallest DCT scale that still covers the target size */
	for (d = 8; d > 1; d /= 2)
		if ((ci.image_width + d - 1) / d >= tw &&
		    (ci.image_height + d - 1) / d >= th)
			break;
	ci.scale_num = 1;
	ci.scale_denom = d;
	jpeg_start_decompress(&ci);
	stride = (size_t)ci.output_width * ci.output_components;
	*direct = !cmyk && ci.output_width == tw && ci.output_height == th &&
		  ci.output_components == (int)c;
	if (!*direct && grow((void **)&sc->pix, &sc->pix_cap,
			     stride * ci.output_height)) {
		jpeg_destroy_decompress(&ci);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	dst = *direct ? out : sc->pix;
	while (ci.output_scanline < ci.output_height) {
		JSAMPROW row = dst + ci.output_scanline * stride;

		jpeg_read_scanlines(&ci, &row, 1);
	}
	*w = ci.output_width;
	*h = ci.output_height;
	if (cmyk)
		cmyk_to(sc->pix, (size_t)*w * *h, c, ci.saw_Adobe_marker);
	jpeg_finish_decompress(&ci);
	jpeg_destroy_decompress(&ci);
	return 0;
}

struct pngsrc {
	const uint8_t *p;
	size_t len, off;
	char msg[128];
};

static void png_read_mem(png_structp png, png_bytep out, size_t n)
{
	struct pngsrc *s = png_get_io_ptr(png);

	if (n > s->len - s->off)
		png_error(png, "file truncated");
	memcpy(out, s->p + s->off, n);
	s->off += n;
}

/* libpng's default handlers print to stderr (and abort without setjmp) */
static void png_err(png_structp png, png_const_charp msg)
{
	struct pngsrc *s = png_get_error_ptr(png);

	snprintf(s->msg, sizeof(s->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
}

static int decode_png(struct scratch *sc, size_t len, uint32_t c,
		      uint64_t max_px, uint32_t *w, uint32_t *h, char *why,
		      size_t whylen)
{
	struct pngsrc src = { .p = sc->file, .len = len };
	png_structp png;
	png_infop info;
	int color, passes, p;
	size_t stride;
	uint32_t y;

	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_err,
				     png_warn);
	if (!png) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_read_struct(&png, NULL, NULL);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		snprintf(why, whylen, "corrupt PNG: %s", src.msg);
		return -EINVAL;
	}
	png_set_read_fn(png, &src, png_read_mem);
	png_read_info(png, info);
	*w = png_get_image_width(png, info);
	*h = png_get_image_height(png, info);
	if ((uint64_t)*w * *h > max_px) {
		snprintf(why, whylen, "image too large (%ux%u pixels)", *w,
			 *h);
		png_destroy_read_struct(&png, &info, NULL);
		return -EFBIG;
	}
	color = png_get_color_type(png, info);
	/* palette to RGB, 1-4 bit grey to 8, transparency to alpha ... */
	png_set_expand(png);
	png_set_strip_16(png);
	/* ... then dropped, as TF's decode_png(channels=1 or 3) */
	png_set_strip_alpha(png);
	if (c == 3 && !(color & PNG_COLOR_MASK_COLOR))
		png_set_gray_to_rgb(png);
	/* Rec. 601, as JPEG's Y (libpng's default is Rec. 709's) */
	if (c == 1 && (color & PNG_COLOR_MASK_COLOR))
		png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
	passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	stride = png_get_rowbytes(png, info);
	if (png_get_channels(png, info) != c || stride != (size_t)*w * c)
		png_error(png, "unsupported pixel format");
	if (grow((void **)&sc->pix, &sc->pix_cap, stride * *h)) {
		png_destroy_read_struct(&png, &info, NULL);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	/* interlaced: each pass fills in more of the rows already read */
	for (p = 0; p < passes; p++)
		for (y = 0; y < *h; y++)
			png_read_row(png, sc->pix + y * stride, NULL);
	png_destroy_read_struct(&png, &info, NULL);
	return 0;
}

/*
 * One axis of the resize: for each of @dst outputs, the first source index
 * @start[o], @count[o] <= @taps indices and their weights (summing to 1).
 * Shrinking: an area filter (the source interval the output pixel covers,
 * partial pixels weighted by their coverage). Enlarging: bilinear between
 * the two nearest source centres, centres aligned as TF's
 * half_pixel_centers (a pixel's centre is at index + 0.5).
 */
static uint32_t axis_taps(uint32_t src, uint32_t dst)
{
	return src > dst ? (src + dst - 1) / dst + 1 : 2;
}

static void axis_weights(uint32_t src, uint32_t dst, uint32_t taps,
			 uint32_t *start, uint32_t *count, float *w)
{
	double scale = (double)src / dst;
	uint32_t o, i;

	for (o = 0; o < dst; o++) {
		float *wo = w + (size_t)o * taps;

		if (src > dst) {
			double x0 = o * scale, x1 = (o + 1) * scale;
			uint32_t i0 = (uint32_t)x0;
			uint32_t i1 = (uint32_t)ceil(x1);

			if (i1 > src)
				i1 = src;
			start[o] = i0;
			count[o] = i1 - i0;
			for (i = i0; i < i1; i++) {
				double a = i > x0 ? i : x0;
				double b = i + 1 < x1 ? i + 1 : x1;

				wo[i - i0] = (float)((b - a) / scale);
			}
		} else {
			double x = (o + 0.5) * scale - 0.5;
			uint32_t i0;

			if (x < 0)
				x = 0;
			i0 = (uint32_t)x;
			if (i0 >= src - 1) {
				start[o] = src - 1;
				count[o] = 1;
				wo[0] = 1;
				continue;
			}
			start[o] = i0;
			count[o] = 2;
			wo[0] = (float)(1 - (x - i0));
			wo[1] = (float)(x - i0);
		}
	}
}

/*
 * @sc->pix (w x h x c) to @out (tw x th x c): each output row accumulates
 * its source rows, each resized horizontally on the way, so the memory is
 * a few rows whatever the image's size.
 */
static int resize(struct scratch *sc, uint32_t w, uint32_t h, uint32_t c,
		  uint8_t *out, uint32_t tw, uint32_t th)
{
	uint32_t tx = axis_taps(w, tw), ty = axis_taps(h, th);
	/* weights, starts and counts; for x also the row and the sum */
	size_t need_x = (size_t)tw * (tx * sizeof(float) + 8) +
			2 * (size_t)tw * c * sizeof(float);
	size_t need_y = (size_t)th * (ty * sizeof(float) + 8);
	uint32_t ox, oy, k, j, ch;
	void *px = sc->wx, *py = sc->wy;

	if (grow(&px, &sc->wx_cap, need_x))
		return -ENOMEM;
	sc->wx = px;
	if (grow(&py, &sc->wy_cap, need_y))
		return -ENOMEM;
	sc->wy = py;
	sc->sx = (uint32_t *)(sc->wx + (size_t)tw * tx);
	sc->nx = sc->sx + tw;
	sc->row = (float *)(sc->nx + tw);
	sc->acc = sc->row + (size_t)tw * c;
	sc->sy = (uint32_t *)(sc->wy + (size_t)th * ty);
	sc->ny = sc->sy + th;
	axis_weights(w, tw, tx, sc->sx, sc->nx, sc->wx);
	axis_weights(h, th, ty, sc->sy, sc->ny, sc->wy);

	for (oy = 0; oy < th; oy++) {
		memset(sc->acc, 0, (size_t)tw * c * sizeof(float));
		for (k = 0; k < sc->ny[oy]; k++) {
			const uint8_t *src = sc->pix +
				(size_t)(sc->sy[oy] + k) * w * c;
			float wyk = sc->wy[(size_t)oy * ty + k];

			for (ox = 0; ox < tw; ox++) {
				const float *wx = sc->wx + (size_t)ox * tx;
				const uint8_t *s = src + (size_t)sc->sx[ox] * c;
				float *r = sc->row + (size_t)ox * c;

				for (ch = 0; ch < c; ch++)
					r[ch] = 0;
				for (j = 0; j < sc->nx[ox]; j++)
					for (ch = 0; ch < c; ch++)
						r[ch] += wx[j] * s[j * c + ch];
			}
			for (j = 0; j < tw * c; j++)
				sc->acc[j] += wyk * sc->row[j];
		}
		for (j = 0; j < tw * c; j++) {
			float v = sc->acc[j] + 0.5f;

			out[(size_t)oy * tw * c + j] = v <= 0 ? 0 :
				v >= 255 ? 255 : (uint8_t)v;
		}
	}
	return 0;
}

/* Read @path whole into @sc->file. Return: its length, or -errno. */
static ssize_t read_file(struct scratch *sc, const char *path, char *why,
			 size_t whylen)
{
	char buf[128];
	struct stat st;
	size_t got = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		r = -errno;
		snprintf(why, whylen, "%s",
			 strerror_r(errno, buf, sizeof(buf)));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		snprintf(why, whylen, "%s",
			 strerror_r(errno, buf, sizeof(buf)));
		goto out;
	}
	r = -EINVAL;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		goto out;
	}
	if (st.st_size == 0) {
		snprintf(why, whylen, "empty file");
		goto out;
	}
	if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
		r = -EFBIG;
		snprintf(why, whylen, "file too large (%lld bytes)",
			 (long long)st.st_size);
		goto out;
	}
	if (grow((void **)&sc->file, &sc->file_cap, st.st_size)) {
		r = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, sc->file + got, st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			snprintf(why, whylen, "%s",
				 strerror_r(errno, buf, sizeof(buf)));
			goto out;
		}
		if (r == 0)
			break;	/* it shrank: decode what is there */
		got += r;
	}
	r = got;
out:
	close(fd);
	return r;
}

struct job {
	const char *dir;
	struct file *files;
	const uint32_t *order;		/* example i is files[order[i]] */
	uint32_t n, ntrain;
	uint8_t *train, *val;
	uint32_t h, w, c;
	uint64_t max_px;
	atomic_uint next;
	atomic_bool nomem;
	uint8_t *ok;
	char **why;			/* why example i was skipped */
};

/*
 * Decode file @rel of @dir into @out, @h x @w x @c, as the loader does.
 * Return: 0, or -errno with @why saying what was wrong with the file
 * (-ENOMEM: out of memory).
 */
static int decode_path(struct scratch *sc, const char *dir, const char *rel,
		       uint32_t h, uint32_t w, uint32_t c, uint64_t max_px,
		       uint8_t *out, char *why, size_t whylen)
{
	static const uint8_t png_sig[8] = {
		0x89, 'P', 'N', 'G', 13, 10, 26, 10
	};
	uint32_t iw = 0, ih = 0;
	bool direct = false;
	char *path;
	ssize_t len;
	int r;

	path = path_join(dir, rel);
	if (!path) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	len = read_file(sc, path, why, whylen);
	free(path);
	r = len < 0 ? (int)len : 0;
	/* by content, not by name, as TF's decode_image */
	if (!r && len >= 3 && sc->file[0] == 0xff && sc->file[1] == 0xd8 &&
	    sc->file[2] == 0xff)
		r = decode_jpeg(sc, len, c, w, h, max_px, &iw, &ih, out,
				&direct, why, whylen);
	else if (!r && len >= 8 && !memcmp(sc->file, png_sig, 8))
		r = decode_png(sc, len, c, max_px, &iw, &ih, why, whylen);
	else if (!r) {
		r = -EINVAL;
		snprintf(why, whylen, "neither a JPEG nor a PNG file");
	}
	if (!r && (!iw || !ih)) {
		r = -EINVAL;
		snprintf(why, whylen, "image of size %ux%u", iw, ih);
	}
	if (!r && !direct)
		r = resize(sc, iw, ih, c, out, w, h);
	return r;
}

static void scratch_free(struct scratch *sc)
{
	free(sc->file);
	free(sc->pix);
	free(sc->wx);
	free(sc->wy);
	memset(sc, 0, sizeof(*sc));
}

static void decode_one(struct job *jb, struct scratch *sc, uint32_t i)
{
	const struct file *f = &jb->files[jb->order[i]];
	size_t isz = (size_t)jb->h * jb->w * jb->c;
	uint8_t *out = i < jb->ntrain ? jb->train + (size_t)i * isz :
		       jb->val + (size_t)(i - jb->ntrain) * isz;
	char why[JMSG_LENGTH_MAX + 64] = "";
	int r;

	r = decode_path(sc, jb->dir, f->rel, jb->h, jb->w, jb->c, jb->max_px,
			out, why, sizeof(why));
	if (r == -ENOMEM)
		atomic_store(&jb->nomem, true);
	if (!r) {
		jb->ok[i] = 1;
		return;
	}
	jb->why[i] = strdup(why);	/* NULL: "out of memory" is printed */
}

static void *worker(void *arg)
{
	struct job *jb = arg;
	struct scratch sc = { 0 };
	uint32_t i;

	while ((i = atomic_fetch_add(&jb->next, 1)) < jb->n &&
	       !atomic_load(&jb->nomem))
		decode_one(jb, &sc, i);
	scratch_free(&sc);
	return NULL;
}

static void run_jobs(struct job *jb, uint32_t threads)
{
	pthread_t tid[MAX_THREADS];
	uint32_t t, started = 0;

	if (!threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		threads = cpus > 0 ? (uint32_t)cpus : 1;
	}
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (threads > jb->n)
		threads = jb->n;
	/* this thread is one of them; if more cannot start, fewer do it */
	for (t = 1; t < threads; t++) {
		if (pthread_create(&tid[started], NULL, worker, jb))
			break;
		started++;
	}
	worker(jb);
	for (t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
}

/* ---- the loader --------------------------------------------------------- */

void vtpu_image_folder_info_free(struct vtpu_image_folder_info *info)
{
	uint32_t n;

	if (!info)
		return;
	free_names(info->class_names, info->classes);
	/* train and val: their lengths are the datasets', not kept here */
	if (info->train_files)
		for (n = 0; info->train_files[n]; n++)
			free(info->train_files[n]);
	free(info->train_files);
	if (info->val_files)
		for (n = 0; info->val_files[n]; n++)
			free(info->val_files[n]);
	free(info->val_files);
	memset(info, 0, sizeof(*info));
}

static int check_opts(const struct vtpu_image_folder_opts *o, bool have_val,
		      char *err, size_t errlen)
{
	if (!o || o->sz < offsetof(struct vtpu_image_folder_opts, warnings) +
			  sizeof(FILE *) || o->sz > sizeof(*o))
		return vtpu__errf(err, errlen, -EINVAL,
				  "image folder options: bad or missing sz "
				  "(use VTPU_IMAGE_FOLDER_OPTS())");
	if (!o->height || !o->width || o->height > MAX_SIDE ||
	    o->width > MAX_SIDE)
		return vtpu__errf(err, errlen, -EINVAL,
				  "image size %ux%u: each side must be 1..%u",
				  o->height, o->width, MAX_SIDE);
	if (o->channels != 1 && o->channels != 3)
		return vtpu__errf(err, errlen, -EINVAL,
				  "channels %u: must be 1 or 3", o->channels);
	if (!(o->validation_split >= 0 && o->validation_split < 1))
		return vtpu__errf(err, errlen, -EINVAL,
				  "validation_split %g: must be in [0, 1)",
				  o->validation_split);
	if (o->validation_split > 0 && !have_val)
		return vtpu__errf(err, errlen, -EINVAL,
				  "validation_split %g without a validation dataset",
				  o->validation_split);
	return 0;
}

/* Fill @ds with the examples of @jb in [@first, @end) that decoded. */
static int collect(struct job *jb, uint32_t first, uint32_t end,
		   uint8_t *images, uint32_t classes, struct vtpu_dataset *ds,
		   char ***names)
{
	size_t isz = (size_t)jb->h * jb->w * jb->c;
	uint32_t i, k = 0;
	void *p;

	*ds = (struct vtpu_dataset){
		.height = jb->h, .width = jb->w, .channels = jb->c,
		.classes = classes, .images = images,
	};
	ds->labels = malloc(end - first);
	*names = calloc(end - first + 1, sizeof(**names));
	if (!ds->labels || !*names)
		return -ENOMEM;
	for (i = first; i < end; i++) {
		struct file *f = &jb->files[jb->order[i]];

		if (!jb->ok[i])
			continue;
		if (k != i - first)
			memcpy(images + (size_t)k * isz,
			       images + (size_t)(i - first) * isz, isz);
		ds->labels[k] = f->label;
		(*names)[k] = f->rel;
		f->rel = NULL;	/* now the info's */
		k++;
	}
	ds->n = k;
	if (k && k < end - first) {
		p = realloc(ds->images, (size_t)k * isz);
		if (p)
			ds->images = p;
	}
	return 0;
}

/*
 * A folder's listing: its classes, its image files in Keras' order and the
 * shuffle by the seed that splits them (the last @nval of @order are the
 * validation files). Shared by the loader and the streamed source, so
 * both see the same files on the same side.
 */
struct listing {
	struct scan s;
	char **names;		/* class folder names */
	size_t ncls;		/* of @names, to free */
	uint32_t classes;
	uint32_t *order;	/* example i is s.f[order[i]] */
	uint32_t nval;
};

static void listing_free(struct listing *l)
{
	free(l->order);
	while (l->s.n)
		free(l->s.f[--l->s.n].rel);
	free(l->s.f);
	free_names(l->names, l->ncls);
	memset(l, 0, sizeof(*l));
}

/* List @dir's classes and files and split them by @o's seed. */
static int list_folder(const char *dir, const struct vtpu_image_folder_opts *o,
		       struct listing *l, char *err, size_t errlen)
{
	struct scan *s = &l->s;
	uint32_t classes = 0;
	struct vtpu_rng rng;
	size_t c, first;
	struct stat st;
	char *path;
	int ret;

	memset(l, 0, sizeof(*l));
	*s = (struct scan){ .dir = dir, .err = err, .errlen = errlen };
	/* the classes: the folders in @dir, sorted (files there are ignored) */
	ret = list_dir(dir, &l->names, &l->ncls, &s->ignored, err, errlen);
	if (ret)
		return ret;
	for (c = 0; c < l->ncls; c++) {
		path = path_join(dir, l->names[c]);
		if (!path) {
			/* keep the names not yet looked at, to be freed */
			while (c < l->ncls)
				l->names[classes++] = l->names[c++];
			l->ncls = classes;
			goto nomem;
		}
		if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
			s->ignored++;
			free(l->names[c]);
		} else {
			l->names[classes++] = l->names[c];
		}
		free(path);
	}
	l->ncls = classes;
	l->classes = classes;
	if (!classes)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: no class folders in it (one folder of images per class)",
				  dir);
	if (classes > MAX_CLASSES)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: %u class folders, at most %u supported",
				  dir, classes, MAX_CLASSES);
	for (c = 0; c < classes; c++) {
		first = s->n;
		ret = walk(s, l->names[c], (uint8_t)c, 0);
		if (ret)
			return ret;
		if (s->n > first)
			qsort(s->f + first, s->n - first, sizeof(*s->f),
			      cmp_file);
	}
	if (!s->n)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: no .jpg, .jpeg or .png files in its %u class folders",
				  dir, classes);
	/* jb->next, one past the last job per thread, must not wrap */
	if (s->n > UINT32_MAX - MAX_THREADS - 1)
		return vtpu__errf(err, errlen, -EINVAL, "%s: too many files",
				  dir);

	/* the split, by file, before decoding: Keras' shuffle then tail */
	l->order = malloc(s->n * sizeof(*l->order));
	if (!l->order)
		goto nomem;
	vtpu_rng_seed(&rng, o->seed);
	vtpu_permutation(l->order, s->n, &rng);
	if (o->validation_split > 0) {
		l->nval = (uint32_t)floor((double)o->validation_split * s->n);
		if (!l->nval)
			return vtpu__errf(err, errlen, -EINVAL,
					  "%s: validation_split %g of %zu files holds out none",
					  dir, o->validation_split, s->n);
	}
	return 0;
nomem:
	return vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory", dir);
}

int vtpu_load_image_folder(const char *dir,
			   const struct vtpu_image_folder_opts *o,
			   struct vtpu_dataset *train, struct vtpu_dataset *val,
			   struct vtpu_image_folder_info *info, char *err,
			   size_t errlen)
{
	struct vtpu_image_folder_info inf = { 0 };
	struct listing l;
	struct job *jb = NULL;
	uint32_t *order, i, nval, classes;
	size_t isz;
	uint8_t *timg = NULL, *vimg = NULL;
	int ret;

	memset(train, 0, sizeof(*train));
	if (val)
		memset(val, 0, sizeof(*val));
	if (info)
		memset(info, 0, sizeof(*info));
	memset(&l, 0, sizeof(l));
	ret = check_opts(o, val != NULL, err, errlen);
	if (ret)
		return ret;
	ret = list_folder(dir, o, &l, err, errlen);
	if (ret)
		goto out;
	order = l.order;
	nval = l.nval;
	classes = l.classes;
	isz = (size_t)o->height * o->width * o->channels;
	if (l.s.n > SIZE_MAX / isz)
		goto nomem;
	timg = malloc((l.s.n - nval) * isz);
	vimg = nval ? malloc(nval * isz) : NULL;
	jb = calloc(1, sizeof(*jb));
	if (!timg || (nval && !vimg) || !jb)
		goto nomem;
	*jb = (struct job){
		.dir = dir, .files = l.s.f, .order = order, .n = l.s.n,
		.ntrain = l.s.n - nval, .train = timg, .val = vimg,
		.h = o->height, .w = o->width, .c = o->channels,
		.max_px = o->max_pixels ? o->max_pixels : DEFAULT_MAX_PIXELS,
	};
	jb->ok = calloc(l.s.n, 1);
	jb->why = calloc(l.s.n, sizeof(*jb->why));
	if (!jb->ok || !jb->why)
		goto nomem;
	run_jobs(jb, o->threads);
	if (atomic_load(&jb->nomem))
		goto nomem;

	inf.classes = classes;
	inf.class_names = l.names;
	inf.files = l.s.n;
	inf.ignored = l.s.ignored;
	l.names = NULL;
	l.ncls = 0;
	for (i = 0; i < l.s.n; i++) {
		if (jb->ok[i]) {
			inf.decoded++;
			continue;
		}
		inf.skipped++;
		if (o->warnings)
			fprintf(o->warnings, "%s/%s: skipped: %s\n", dir,
				l.s.f[order[i]].rel,
				jb->why[i] ? jb->why[i] : "out of memory");
	}
	ret = collect(jb, 0, jb->ntrain, timg, classes, train,
		      &inf.train_files);
	timg = NULL;
	if (!ret && nval)
		ret = collect(jb, jb->ntrain, l.s.n, vimg, classes, val,
			      &inf.val_files);
	vimg = NULL;
	if (ret)
		goto nomem;
	if (!train->n || (nval && !val->n)) {
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: no image of the %s files could be decoded (%u skipped)",
				 dir, !train->n ? "training" : "validation",
				 inf.skipped);
		goto out;
	}
	if (info)
		*info = inf;
	else
		vtpu_image_folder_info_free(&inf);
	memset(&inf, 0, sizeof(inf));
	ret = 0;
	goto out;
nomem:
	ret = vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory", dir);
out:
	if (ret) {
		vtpu_dataset_free(train);
		if (val)
			vtpu_dataset_free(val);
		vtpu_image_folder_info_free(&inf);
	}
	if (jb) {
		for (i = 0; jb->why && i < jb->n; i++)
			free(jb->why[i]);
		free(jb->why);
		free(jb->ok);
		free(jb);
	}
	free(timg);
	free(vimg);
	listing_free(&l);
	return ret;
}

/* ---- streamed sources --------------------------------------------------- */

/*
 * A source of examples decoded on demand: a folder's files (listed and
 * split as the loader does, decoded by a pool of threads started at the
 * first request) or an in-memory dataset (copied). Requests are served
 * oldest first, each example by whichever thread is free, the thread that
 * waits for a request among them.
 */
struct vtpu_stream {
	struct vtpu_stream_info info;
	/* a folder */
	char *dir;
	struct listing l;
	uint32_t first;		/* example i: l.s.f[l.order[first + i]] */
	uint64_t max_px;
	FILE *warnings;
	uint8_t *spare;		/* the last good image, for bad reads */
	uint32_t spare_label;
	bool have_spare;
	/*
	 * The decoded-image cache: example i at cache + i * isz once have[i]
	 * (set with release after the copy); NULL: none.
	 */
	uint8_t *cache, *have;
	uint64_t cache_bytes;
	int nice;		/* the pool's, added to the caller's */
	/* counters (struct vtpu__stream_counters), atomic */
	uint64_t decoded, cached, decode_ns;
	/* an in-memory dataset */
	const struct vtpu_dataset *ds;
	/* the pool */
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	pthread_t tid[MAX_THREADS];
	uint32_t threads, started;
	struct vtpu_stream_req *head;
	bool quit;
	/* a caller waiting for its request decodes too, with this */
	struct scratch help_sc;
	bool helping;
};

/* This thread's CPU time: what a decode costs, preemption left out. */
static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* have[i]: 0 not cached, CACHE_FILLING being copied in, CACHE_READY */
#define CACHE_FILLING 1
#define CACHE_READY 2

static bool is_cached(const struct vtpu_stream *s, uint32_t idx)
{
	return s->cache &&
	       __atomic_load_n(&s->have[idx], __ATOMIC_ACQUIRE) == CACHE_READY;
}

/* Keep @img as example @idx's decoded image (the first thread to ask). */
static void cache_put(struct vtpu_stream *s, uint32_t idx, const uint8_t *img,
		      size_t isz)
{
	uint8_t none = 0;

	if (!s->cache ||
	    !__atomic_compare_exchange_n(&s->have[idx], &none, CACHE_FILLING,
					 false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return;
	memcpy(s->cache + idx * isz, img, isz);
	__atomic_store_n(&s->have[idx], CACHE_READY, __ATOMIC_RELEASE);
}

static void stream_decode(struct vtpu_stream *s, struct scratch *sc,
			  struct vtpu_stream_req *r, uint32_t i)
{
	uint32_t idx = r->idx[i];
	const struct file *f = &s->l.s.f[s->l.order[s->first + idx]];
	size_t isz = (size_t)s->info.height * s->info.width *
		     s->info.channels;
	uint8_t *out = r->images + i * isz;
	char why[JMSG_LENGTH_MAX + 64] = "";
	uint64_t t0;
	int e;

	r->labels[i] = f->label;
	if (is_cached(s, idx)) {
		memcpy(out, s->cache + idx * isz, isz);
		r->ok[i] = 1;
		__atomic_fetch_add(&s->cached, 1, __ATOMIC_RELAXED);
		return;
	}
	t0 = thread_ns();
	e = decode_path(sc, s->dir, f->rel, s->info.height, s->info.width,
			s->info.channels, s->max_px, out, why, sizeof(why));
	__atomic_fetch_add(&s->decode_ns, thread_ns() - t0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->decoded, 1, __ATOMIC_RELAXED);
	r->ok[i] = !e;
	if (!e)
		cache_put(s, idx, out, isz);
	if (e) {
		/* NULL: "out of memory" is printed */
		r->why[i] = e == -ENOMEM ? NULL : strdup(why);
	}
}

static void *stream_worker(void *arg)
{
	struct vtpu_stream *s = arg;
	struct scratch sc = { 0 };
	struct vtpu_stream_req *r;
	uint32_t i;

	/* below the training threads, which wait for nothing else */
	if (s->nice)
		setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0) +
					      s->nice);
	pthread_mutex_lock(&s->mu);
	while (!s->quit) {
		for (r = s->head; r && r->next >= r->count; r = r->qnext)
			;
		if (!r) {
			pthread_cond_wait(&s->work, &s->mu);
			continue;
		}
		i = r->next++;
		pthread_mutex_unlock(&s->mu);
		stream_decode(s, &sc, r, i);
		pthread_mutex_lock(&s->mu);
		if (++r->done == r->count)
			pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->mu);
	scratch_free(&sc);
	return NULL;
}

static struct vtpu_stream *stream_new(void)
{
	struct vtpu_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	return s;
}

/*
 * The decoded-image cache, if the source's images fit @budget bytes (0: a
 * quarter of the physical memory, at most DEFAULT_CACHE_MAX; < 0: none).
 * Without the memory it is only left out: every epoch decodes then.
 */
static void stream_cache_alloc(struct vtpu_stream *s, int64_t budget,
			       size_t isz)
{
	uint64_t need = (uint64_t)s->info.n * isz, cap;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	if (budget < 0 || !s->info.n)
		return;
	cap = (uint64_t)budget;
	if (!budget) {
		cap = pages > 0 && psz > 0 ? (uint64_t)pages * psz / 4 : 0;
		if (cap > DEFAULT_CACHE_MAX)
			cap = DEFAULT_CACHE_MAX;
	}
	if (need > cap || need > SIZE_MAX)
		return;
	s->have = calloc(s->info.n, 1);
	s->cache = s->have ? malloc(need) : NULL;
	if (!s->cache) {
		free(s->have);
		s->have = NULL;
	}
	s->cache_bytes = s->cache ? need : 0;
}

struct vtpu_stream *
vtpu_image_folder_open(const char *dir, const struct vtpu_image_folder_opts *o,
		       bool validation, char *err, size_t errlen)
{
	struct vtpu_stream *s;
	size_t isz;
	long cpus;
	int ret;

	ret = check_opts(o, true, err, errlen);
	if (!ret && validation && !(o->validation_split > 0))
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "the validation side of a folder without a validation_split");
	if (ret) {
		errno = -ret;
		return NULL;
	}
	s = stream_new();
	if (!s || !(s->dir = strdup(dir))) {
		vtpu_stream_close(s);
		vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory", dir);
		errno = ENOMEM;
		return NULL;
	}
	ret = list_folder(dir, o, &s->l, err, errlen);
	isz = (size_t)o->height * o->width * o->channels;
	if (!ret && s->l.nval == s->l.s.n)
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: validation_split %g holds out all %zu files",
				 dir, o->validation_split, s->l.s.n);
	if (!ret && !(s->spare = malloc(isz)))
		ret = vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory",
				 dir);
	if (ret) {
		vtpu_stream_close(s);
		errno = -ret;
		return NULL;
	}
	s->info = (struct vtpu_stream_info){
		.n = validation ? s->l.nval : (uint32_t)s->l.s.n - s->l.nval,
		.height = o->height, .width = o->width,
		.channels = o->channels, .classes = s->l.classes,
	};
	s->first = validation ? (uint32_t)s->l.s.n - s->l.nval : 0;
	s->max_px = o->max_pixels ? o->max_pixels : DEFAULT_MAX_PIXELS;
	s->warnings = o->warnings;
	s->threads = o->threads;
	if (!s->threads) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		s->threads = cpus > 0 ? (uint32_t)cpus : 1;
	}
	if (s->threads > MAX_THREADS)
		s->threads = MAX_THREADS;
	s->nice = FOLDER_OPT(o, decode_nice, 0);
	s->nice = s->nice < 0 ? 0 : s->nice ?: DEFAULT_DECODE_NICE;
	stream_cache_alloc(s, FOLDER_OPT(o, cache_bytes, 0), isz);
	return s;
}

struct vtpu_stream *vtpu_stream_from_dataset(const struct vtpu_dataset *ds)
{
	struct vtpu_stream *s;

	if (!ds || !ds->n || !ds->images) {
		errno = EINVAL;
		return NULL;
	}
	s = stream_new();
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->ds = ds;
	s->info = (struct vtpu_stream_info){
		.n = ds->n, .height = ds->height, .width = ds->width,
		.channels = ds->channels, .classes = ds->classes,
	};
	return s;
}

void vtpu_stream_close(struct vtpu_stream *s)
{
	uint32_t t;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* requests still queued are the caller's bug; do not decode them */
	s->quit = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->mu);
	for (t = 0; t < s->started; t++)
		pthread_join(s->tid[t], NULL);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->mu);
	listing_free(&s->l);
	scratch_free(&s->help_sc);
	free(s->cache);
	free(s->have);
	free(s->spare);
	free(s->dir);
	free(s);
}

int vtpu_stream_get_info(const struct vtpu_stream *s,
			 struct vtpu_stream_info *info)
{
	if (!s || !info)
		return -EINVAL;
	*info = s->info;
	return 0;
}

int vtpu__stream_start(struct vtpu_stream *s, struct vtpu_stream_req *r,
		       const uint32_t *idx, uint32_t count, uint8_t *images,
		       uint32_t *labels)
{
	size_t isz = (size_t)s->info.height * s->info.width *
		     s->info.channels;
	struct vtpu_stream_req **pp;
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->idx = idx;
	r->count = count;
	r->images = images;
	r->labels = labels;
	for (i = 0; i < count; i++)
		if (idx[i] >= s->info.n)
			return -EINVAL;
	if (s->ds) {
		for (i = 0; i < count; i++) {
			memcpy(images + i * isz,
			       s->ds->images + (size_t)idx[i] * isz, isz);
			labels[i] = s->ds->labels ? s->ds->labels[idx[i]] : 0;
		}
		r->next = r->done = count;
		return 0;
	}
	for (i = 0; s->cache && i < count && is_cached(s, idx[i]); i++)
		;
	if (s->cache && count && i == count) {
		/* all cached: copied here, the pool is not woken */
		for (i = 0; i < count; i++) {
			const struct file *f =
				&s->l.s.f[s->l.order[s->first + idx[i]]];

			memcpy(images + i * isz, s->cache + idx[i] * isz, isz);
			labels[i] = f->label;
		}
		memcpy(s->spare, images + (count - 1) * isz, isz);
		s->spare_label = labels[count - 1];
		s->have_spare = true;
		__atomic_fetch_add(&s->cached, count, __ATOMIC_RELAXED);
		r->next = r->done = count;
		return 0;
	}
	r->ok = calloc(count ?: 1, 1);
	r->why = calloc(count ?: 1, sizeof(*r->why));
	if (!r->ok || !r->why) {
		free(r->ok);
		free(r->why);
		r->ok = NULL;
		r->why = NULL;
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->mu);
	/* the pool starts with the first request; fewer if they cannot */
	while (s->started < s->threads &&
	       !pthread_create(&s->tid[s->started], NULL, stream_worker, s))
		s->started++;
	if (!s->started) {
		pthread_mutex_unlock(&s->mu);
		free(r->ok);
		free(r->why);
		r->ok = NULL;
		r->why = NULL;
		return -EAGAIN;
	}
	s->threads = s->started;
	for (pp = &s->head; *pp; pp = &(*pp)->qnext)
		;
	*pp = r;
	r->queued = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int vtpu__stream_finish(struct vtpu_stream *s, struct vtpu_stream_req *r,
			uint32_t *skipped)
{
	size_t isz = (size_t)s->info.height * s->info.width *
		     s->info.channels;
	struct vtpu_stream_req **pp;
	uint32_t i, j, bad = 0;
	int ret = 0;

	if (!r->queued)
		return 0;
	pthread_mutex_lock(&s->mu);
	while (r->done < r->count) {
		/*
		 * Rather than wait for the pool (below the caller's priority,
		 * perhaps starved), the caller decodes what nobody took yet.
		 */
		if (r->next < r->count && !s->helping) {
			i = r->next++;
			s->helping = true;
			pthread_mutex_unlock(&s->mu);
			stream_decode(s, &s->help_sc, r, i);
			pthread_mutex_lock(&s->mu);
			s->helping = false;
			if (++r->done == r->count)
				pthread_cond_broadcast(&s->done);
			continue;
		}
		pthread_cond_wait(&s->done, &s->mu);
	}
	for (pp = &s->head; *pp != r; pp = &(*pp)->qnext)
		;
	*pp = r->qnext;
	r->queued = false;
	pthread_mutex_unlock(&s->mu);

	for (i = 0; i < r->count; i++) {
		if (r->ok[i])
			continue;
		bad++;
		if (s->warnings)
			fprintf(s->warnings, "%s/%s: skipped: %s\n", s->dir,
				s->l.s.f[s->l.order[s->first + r->idx[i]]].rel,
				r->why[i] ? r->why[i] : "out of memory");
		free(r->why[i]);
	}
	/* a bad example's slot: the next good one of the request, cyclically */
	for (i = 0; bad && i < r->count; i++) {
		if (r->ok[i])
			continue;
		for (j = (i + 1) % r->count; j != i && !r->ok[j];
		     j = (j + 1) % r->count)
			;
		if (r->ok[j]) {
			memcpy(r->images + i * isz, r->images + j * isz, isz);
			r->labels[i] = r->labels[j];
		} else if (s->have_spare) {
			memcpy(r->images + i * isz, s->spare, isz);
			r->labels[i] = s->spare_label;
		} else {
			ret = -EIO;
		}
	}
	for (i = r->count; i-- > 0;)
		if (r->ok[i]) {
			memcpy(s->spare, r->images + i * isz, isz);
			s->spare_label = r->labels[i];
			s->have_spare = true;
			break;
		}
	free(r->ok);
	free(r->why);
	r->ok = NULL;
	r->why = NULL;
	if (skipped)
		*skipped += bad;
	return ret;
}

void vtpu__stream_counters(struct vtpu_stream *s,
			   struct vtpu__stream_counters *c)
{
	c->decoded = __atomic_load_n(&s->decoded, __ATOMIC_RELAXED);
	c->cached = __atomic_load_n(&s->cached, __ATOMIC_RELAXED);
	c->decode_ns = __atomic_load_n(&s->decode_ns, __ATOMIC_RELAXED);
	c->cache_bytes = s->cache_bytes;
}

int vtpu_stream_read(struct vtpu_stream *s, const uint32_t *idx,
		     uint32_t count, uint8_t *images, uint32_t *labels,
		     uint32_t *skipped)
{
	struct vtpu_stream_req r;
	int ret;

	if (!s || (count && (!idx || !images || !labels)))
		return -EINVAL;
	ret = vtpu__stream_start(s, &r, idx, count, images, labels);
	return ret ?: vtpu__stream_finish(s, &r, skipped);
}

/* ---- writing a folder ---------------------------------------------------- */

/*
 * vtpu__write_jpeg() - @h rows of @w pixels of @comps bytes in libjpeg
 * colour space @cs, at @quality, to @path. libjpeg's errors longjmp back
 * here (its default exits). Return: 0, or -errno with @why set.
 */
int vtpu__write_jpeg(const char *path, const uint8_t *px, uint32_t w,
		     uint32_t h, int comps, int cs, int quality, char *why,
		     size_t whylen)
{
	struct jpeg_compress_struct ci;
	struct jerr je;
	FILE *volatile f = fopen(path, "wb");
	uint32_t y;
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return ret;
	}
	ci.err = jpeg_std_error(&je.pub);
	je.pub.error_exit = jerr_exit;
	je.pub.output_message = jerr_output;
	if (setjmp(je.jb)) {
		jpeg_destroy_compress(&ci);
		fclose(f);
		snprintf(why, whylen, "libjpeg: %s", je.msg);
		return -EINVAL;
	}
	jpeg_create_compress(&ci);
	jpeg_stdio_dest(&ci, f);
	ci.image_width = w;
	ci.image_height = h;
	ci.input_components = comps;
	ci.in_color_space = (J_COLOR_SPACE)cs;
	jpeg_set_defaults(&ci);
	jpeg_set_quality(&ci, quality, TRUE);
	jpeg_start_compress(&ci, TRUE);
	for (y = 0; y < h; y++) {
		JSAMPROW row = (JSAMPROW)px + (size_t)y * w * comps;

		jpeg_write_scanlines(&ci, &row, 1);
	}
	jpeg_finish_compress(&ci);
	jpeg_destroy_compress(&ci);
	if (ferror(f) | fclose(f)) {
		ret = errno ? -errno : -EIO;
		snprintf(why, whylen, "%s", strerror(-ret));
		return ret;
	}
	return 0;
}

/* a class name is one folder: not empty, no '/', not hidden */
static bool folder_name_ok(const char *s)
{
	return s && *s && *s != '.' && !strchr(s, '/') && strlen(s) < 256;
}

int vtpu_image_folder_write(const char *dir, const struct vtpu_dataset *ds,
			    const char *const *class_names, uint32_t classes,
			    const struct vtpu_image_folder_write_opts *o,
			    char *err, size_t errlen)
{
	struct scratch sc = { 0 };
	uint32_t th, tw, tc, q, i, *count = NULL;
	size_t isz;
	uint8_t *out = NULL;
	char *path = NULL, why[256];
	int ret;

	if (!dir || !ds || !ds->n || !ds->images || !ds->labels ||
	    !class_names || !classes || classes > MAX_CLASSES || !o ||
	    o->sz < sizeof(*o))
		return vtpu__errf(err, errlen, -EINVAL,
				  "image folder write: missing argument or options");
	th = o->height ?: ds->height;
	tw = o->width ?: ds->width;
	tc = o->channels ?: 3;
	q = o->quality ?: 90;
	if (th > MAX_SIDE || tw > MAX_SIDE || (tc != 1 && tc != 3) ||
	    q > 100 || (ds->channels != 1 && ds->channels != 3))
		return vtpu__errf(err, errlen, -EINVAL,
				  "image folder write: size %ux%u, channels %u (of %u), quality %u: want sides up to %u, 1 or 3 channels, quality 1..100",
				  tw, th, tc, ds->channels, q, MAX_SIDE);
	for (i = 0; i < classes; i++)
		if (!folder_name_ok(class_names[i]))
			return vtpu__errf(err, errlen, -EINVAL,
					  "image folder write: class %u: '%s' is not a folder name",
					  i, class_names[i] ?: "(null)");
	for (i = 0; i < ds->n; i++)
		if (ds->labels[i] >= classes)
			return vtpu__errf(err, errlen, -EINVAL,
					  "image folder write: label %u of example %u is not below %u classes",
					  ds->labels[i], i, classes);
	isz = (size_t)ds->height * ds->width * ds->channels;
	out = malloc((size_t)th * tw * 3);
	count = calloc(classes, sizeof(*count));
	path = malloc(strlen(dir) + 300);
	ret = -ENOMEM;
	if (!out || !count || !path ||
	    grow((void **)&sc.pix, &sc.pix_cap, isz * 3))
		goto out;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		ret = vtpu__errf(err, errlen, -errno, "%s: %s", dir,
				 strerror(errno));
		goto out;
	}
	for (i = 0; i < classes; i++) {
		sprintf(path, "%s/%s", dir, class_names[i]);
		if (mkdir(path, 0777) && errno != EEXIST) {
			ret = vtpu__errf(err, errlen, -errno, "%s: %s", path,
					 strerror(errno));
			goto out;
		}
	}
	for (i = 0; i < ds->n; i++) {
		const uint8_t *src = ds->images + (size_t)i * isz;
		uint32_t lab = ds->labels[i], c = ds->channels;
		size_t p, npix = (size_t)ds->height * ds->width;

		/* grey to RGB by copying, RGB to grey with Rec. 601's weights */
		if (c == tc) {
			memcpy(sc.pix, src, isz);
		} else if (tc == 3) {
			for (p = 0; p < npix; p++)
				memset(sc.pix + 3 * p, src[p], 3);
		} else {
			for (p = 0; p < npix; p++)
				sc.pix[p] = (77 * src[3 * p] +
					     150 * src[3 * p + 1] +
					     29 * src[3 * p + 2] + 128) >> 8;
		}
		ret = resize(&sc, ds->width, ds->height, tc, out, tw, th);
		if (ret)
			goto out;
		sprintf(path, "%s/%s/%05u.jpg", dir, class_names[lab],
			count[lab]++);
		ret = vtpu__write_jpeg(path, out, tw, th, tc,
				       tc == 3 ? JCS_RGB : JCS_GRAYSCALE,
				       (int)q, why, sizeof(why));
		if (ret) {
			vtpu__errf(err, errlen, ret, "%s: %s", path, why);
			goto out;
		}
	}
	ret = 0;
out:
	if (ret == -ENOMEM)
		vtpu__errf(err, errlen, ret, "image folder write: out of memory");
	scratch_free(&sc);
	free(out);
	free(count);
	free(path);
	return ret;
}
