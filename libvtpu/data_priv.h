/* SPDX-License-Identifier: MIT */
/*
 * Private helpers shared by data.c and checkpoint.c (not installed, not
 * part of the API).
 */
#ifndef LIBVTPU_DATA_PRIV_H
#define LIBVTPU_DATA_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * vtpu__errf() - format a message into err (NULL-safe, always terminated)
 * and return @ret, so error paths read `return vtpu__errf(err, n, -EIO, ..)`.
 */
int vtpu__errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * struct vtpu__atomic - a file written whole or not at all: a temporary
 * beside @path (mode 0644), fsynced and renamed over @path by
 * vtpu__atomic_end(), so @path is always the old file or the new one.
 */
struct vtpu__atomic {
	FILE *f;
	const char *path;
	char tmp[4096];
};

/* Create the temporary; 0, or -errno with a message (nothing to end). */
int vtpu__atomic_begin(struct vtpu__atomic *a, const char *path, char *err,
		       size_t errlen);
/*
 * Flush, sync and close; with @ret 0 and no write error, rename over the
 * path, else remove the temporary. Return: 0, or @ret (the caller's
 * message kept), or the -errno of the failed write, sync or rename.
 */
int vtpu__atomic_end(struct vtpu__atomic *a, int ret, char *err,
		     size_t errlen);

struct vtpu_stream;

/*
 * struct vtpu_stream_req - one asynchronous read of a streamed source
 * (vtpu_stream_read() in two halves, for the model's input ring): examples
 * @idx[0..@count) into @images and @labels, decoded by the source's pool
 * while the caller does other work. Every started request must be
 * finished before its buffers are reused or the source closed.
 */
struct vtpu_stream_req {
	const uint32_t *idx;
	uint32_t count;
	uint8_t *images;
	uint32_t *labels;
	/* the pool's, under the source's lock */
	uint32_t next, done;
	uint8_t *ok;
	char **why;
	struct vtpu_stream_req *qnext;
	bool queued;
};

/* Start decoding; 0 or -errno (nothing started then). */
int vtpu__stream_start(struct vtpu_stream *s, struct vtpu_stream_req *r,
		       const uint32_t *idx, uint32_t count, uint8_t *images,
		       uint32_t *labels);
/*
 * Wait for @r; bad examples are replaced as vtpu_stream_read() says and
 * added to *@skipped. 0, or -EIO: a bad example had nothing to replace it.
 */
int vtpu__stream_finish(struct vtpu_stream *s, struct vtpu_stream_req *r,
			uint32_t *skipped);

/*
 * struct vtpu__stream_counters - what a source did since it was opened:
 * @decoded: examples decoded from their files (good or not)
 * @cached: examples copied from the decoded-image cache instead
 * @decode_ns: the decoding threads' CPU time in decoding, summed
 * @cache_bytes: the cache's size (0: no cache)
 */
struct vtpu__stream_counters {
	uint64_t decoded, cached, decode_ns, cache_bytes;
};

void vtpu__stream_counters(struct vtpu_stream *s,
			   struct vtpu__stream_counters *c);

/*
 * vtpu__write_jpeg() - @h rows of @w pixels of @comps bytes in libjpeg's
 * colour space @cs (a J_COLOR_SPACE) at @quality to @path: the one JPEG
 * writer, of vtpu_image_folder_write() and of the tests' image files.
 * Return: 0, or -errno with @why set.
 */
int vtpu__write_jpeg(const char *path, const uint8_t *px, uint32_t w,
		     uint32_t h, int comps, int cs, int quality, char *why,
		     size_t whylen);

#endif /* LIBVTPU_DATA_PRIV_H */
