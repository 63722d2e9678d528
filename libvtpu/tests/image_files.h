/* SPDX-License-Identifier: MIT */
/*
 * image_files.h: image folders on disk for the tests of the image-folder
 * readers (test_imagefolder.c, test_stream.c) and for vtpu-bench stream
 * (tools/bench_stream.c, which includes it by path; MIT, as the tools):
 * a JPEG (through libvtpu's one writer) or a PNG file written from pixels,
 * and a folder removed whole.
 * Static inline: each user takes what it needs, without a warning for the
 * rest. A write returns 0, or -1 with errno set when the file is the cause
 * (libjpeg exits on its own errors).
 */
#ifndef VTPU_IMAGE_FILES_H
#define VTPU_IMAGE_FILES_H

#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <png.h>

#include "../data_priv.h"

/* @px: @h rows of @w pixels of @comps bytes in colour space @cs: libvtpu's
 * writer (libvtpu.a's, private), which vtpu_image_folder_write() uses */
static inline int write_jpeg(const char *path, const uint8_t *px, uint32_t w,
			     uint32_t h, int comps, J_COLOR_SPACE cs,
			     int quality)
{
	char why[256];
	int ret = vtpu__write_jpeg(path, px, w, h, comps, cs, quality, why,
				   sizeof(why));

	if (ret)
		errno = -ret;
	return ret ? -1 : 0;
}

/*
 * @px: rows of @w pixels of png_get_channels bytes (2 per sample at
 * @depth 16); @pal/@npal for a palette image; @interlace: Adam7
 */
static inline int write_png(const char *path, const uint8_t *px, uint32_t w,
			    uint32_t h, int color, int depth,
			    const png_color *pal, int npal, bool interlace)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
						  NULL, NULL);
	png_infop info = png_create_info_struct(png);
	FILE *f = fopen(path, "wb");
	size_t stride;
	uint32_t y;
	int pass, passes;

	if (!f || setjmp(png_jmpbuf(png)))
		return -1;
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, depth, color,
		     interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (pal)
		png_set_PLTE(png, info, pal, npal);
	png_write_info(png, info);
	stride = png_get_rowbytes(png, info);
	passes = png_set_interlace_handling(png);
	for (pass = 0; pass < passes; pass++)
		for (y = 0; y < h; y++)
			png_write_row(png, px + y * stride);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return fclose(f);
}

/* 8-bit RGB, the common case: a JPEG at quality 90, a PNG */
static inline int write_rgb_jpeg(const char *path, const uint8_t *px,
				 uint32_t w, uint32_t h)
{
	return write_jpeg(path, px, w, h, 3, JCS_RGB, 90);
}

static inline int write_rgb_png(const char *path, const uint8_t *px,
				uint32_t w, uint32_t h)
{
	return write_png(path, px, w, h, PNG_COLOR_TYPE_RGB, 8, NULL, 0,
			 false);
}

/* made writable first: a test may leave an unreadable file behind */
static inline int rm_one(const char *path, const struct stat *st, int flag,
			 struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

/* @dir and everything under it */
static inline void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* VTPU_IMAGE_FILES_H */
