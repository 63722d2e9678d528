// SPDX-License-Identifier: MIT
/*
 * Checkpoints: named float32 tensors in one file with a magic, a version, a
 * header of counts and a CRC32 of the payload (format in vtpu_data.h), and
 * optionally strings (metadata) that say what the tensors mean beyond their
 * shapes, such as the vocabulary a model was trained with.
 *
 * Saving writes a temporary file beside the target and renames it, so a
 * crash leaves the old checkpoint or the new one, never half of one.
 * Loading reads and checks the whole file before it touches the caller's
 * tensors: a corrupt or mismatched checkpoint is an error with a message,
 * and the model is left as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "vtpu_data.h"
#include "data_priv.h"

/* The format is little-endian and so are the hosts this runs on (x86-64,
 * arm64): integers and floats go to the file as they are in memory. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "checkpoint.c assumes a little-endian host");

#define HDR_SIZE 32
#define MAX_FILE (1ull << 40)

struct ckpt_hdr {
	char magic[8];
	uint32_t version;
	uint32_t ntensors;
	uint64_t payload_bytes;
	uint32_t payload_crc;
	uint32_t nmeta;		/* version 1: reserved, 0 */
};
_Static_assert(sizeof(struct ckpt_hdr) == HDR_SIZE, "header layout");

/* Elements in a tensor of this shape, or -1 when absurd (overflow). */
static int64_t shape_count(uint32_t ndim, const uint64_t *dims)
{
	uint64_t count = 1;
	uint32_t i;

	for (i = 0; i < ndim; i++)
		if (__builtin_mul_overflow(count, dims[i], &count) ||
		    count > MAX_FILE / sizeof(float))
			return -1;
	return (int64_t)count;
}

static void shape_str(char *buf, size_t len, uint32_t ndim,
		      const uint64_t *dims)
{
	size_t pos = 0;
	uint32_t i;

	pos += (size_t)snprintf(buf, len, "[");
	for (i = 0; i < ndim && pos < len; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%llu",
					i ? ", " : "",
					(unsigned long long)dims[i]);
	if (pos < len)
		snprintf(buf + pos, len - pos, "]");
}

/* Check the caller's tensors and size the payload. */
static int check_tensors(const struct vtpu_ckpt_tensor *t, size_t n,
			 uint64_t *payload, char *err, size_t errlen)
{
	size_t i, j, name_len;
	int64_t count;

	if (n > UINT32_MAX)
		return vtpu__errf(err, errlen, -EINVAL, "too many tensors");
	*payload = 0;
	for (i = 0; i < n; i++) {
		name_len = t[i].name ? strlen(t[i].name) : 0;
		if (!name_len || name_len > VTPU_CKPT_MAX_NAME)
			return vtpu__errf(err, errlen, -EINVAL,
					  "tensor %zu: name must be 1..%d bytes",
					  i, VTPU_CKPT_MAX_NAME);
		if (t[i].ndim > VTPU_CKPT_MAX_DIMS)
			return vtpu__errf(err, errlen, -EINVAL,
					  "tensor '%s': %u dimensions (at most %d)",
					  t[i].name, t[i].ndim,
					  VTPU_CKPT_MAX_DIMS);
		count = shape_count(t[i].ndim, t[i].dims);
		if (count < 0)
			return vtpu__errf(err, errlen, -EINVAL,
					  "tensor '%s': absurd shape",
					  t[i].name);
		if (count && !t[i].data)
			return vtpu__errf(err, errlen, -EINVAL,
					  "tensor '%s': no data", t[i].name);
		for (j = 0; j < i; j++)
			if (!strcmp(t[i].name, t[j].name))
				return vtpu__errf(err, errlen, -EINVAL,
						  "tensor '%s' appears twice",
						  t[i].name);
		*payload += 8 + 8ull * t[i].ndim + name_len +
			    (uint64_t)count * sizeof(float);
		if (*payload > MAX_FILE)
			return vtpu__errf(err, errlen, -EINVAL,
					  "checkpoint too large");
	}
	return 0;
}

/* Check the caller's metadata (keys unique) and add it to the payload. */
static int check_meta(const struct vtpu_ckpt_meta *meta, size_t nmeta,
		      uint64_t *payload, char *err, size_t errlen)
{
	size_t i, j, key_len, value_len;

	if (nmeta && !meta)
		return vtpu__errf(err, errlen, -EINVAL, "no metadata");
	if (nmeta > VTPU_CKPT_MAX_NMETA)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%zu metadata entries (at most %d)", nmeta,
				  VTPU_CKPT_MAX_NMETA);
	for (i = 0; i < nmeta; i++) {
		key_len = meta[i].key ? strlen(meta[i].key) : 0;
		if (!key_len || key_len > VTPU_CKPT_MAX_NAME)
			return vtpu__errf(err, errlen, -EINVAL,
					  "metadata %zu: key must be 1..%d bytes",
					  i, VTPU_CKPT_MAX_NAME);
		value_len = meta[i].value ? strlen(meta[i].value) : SIZE_MAX;
		if (value_len > VTPU_CKPT_MAX_VALUE)
			return vtpu__errf(err, errlen, -EINVAL,
					  "metadata '%s': the value must be a string of at most %d bytes",
					  meta[i].key, VTPU_CKPT_MAX_VALUE);
		for (j = 0; j < i; j++)
			if (!strcmp(meta[i].key, meta[j].key))
				return vtpu__errf(err, errlen, -EINVAL,
						  "metadata '%s' appears twice",
						  meta[i].key);
		*payload += 8 + key_len + value_len;
	}
	if (*payload > MAX_FILE)
		return vtpu__errf(err, errlen, -EINVAL, "checkpoint too large");
	return 0;
}

/* The caller's path, tensors and metadata, and the payload they make. */
static int check_caller(const char *path, const struct vtpu_ckpt_tensor *t,
			size_t n, const struct vtpu_ckpt_meta *meta,
			size_t nmeta, uint64_t *payload, char *err,
			size_t errlen)
{
	int ret;

	if (!path || (n && !t))
		return vtpu__errf(err, errlen, -EINVAL, "no path or tensors");
	ret = check_tensors(t, n, payload, err, errlen);
	return ret ? ret : check_meta(meta, nmeta, payload, err, errlen);
}

/* ---- save ------------------------------------------------------------------- */

struct writer {
	FILE *f;
	uLong crc;
};

static void put(struct writer *w, const void *buf, size_t len)
{
	fwrite(buf, 1, len, w->f);	/* errors: ferror() at the end */
	w->crc = crc32_z(w->crc, buf, len);
}

static void write_file(FILE *f, const struct vtpu_ckpt_tensor *t, size_t n,
		       const struct vtpu_ckpt_meta *meta, size_t nmeta,
		       uint64_t payload)
{
	/* without metadata, version 1: what older libraries wrote and read */
	struct ckpt_hdr hdr = {
		.magic = VTPU_CKPT_MAGIC,	/* 8 chars: the NUL is dropped */
		.version = nmeta ? VTPU_CKPT_VERSION : 1,
		.ntensors = (uint32_t)n,
		.payload_bytes = payload,
		.nmeta = (uint32_t)nmeta,
	};
	struct writer w = { .f = f, .crc = crc32(0, NULL, 0) };
	uint32_t rec[2];
	size_t i;

	fwrite(&hdr, sizeof(hdr), 1, f);
	for (i = 0; i < n; i++) {
		rec[0] = (uint32_t)strlen(t[i].name);
		rec[1] = t[i].ndim;
		put(&w, rec, sizeof(rec));
		put(&w, t[i].dims, t[i].ndim * sizeof(t[i].dims[0]));
		put(&w, t[i].name, rec[0]);
		put(&w, t[i].data,
		    (size_t)shape_count(t[i].ndim, t[i].dims) * sizeof(float));
	}
	for (i = 0; i < nmeta; i++) {
		rec[0] = (uint32_t)strlen(meta[i].key);
		rec[1] = (uint32_t)strlen(meta[i].value);
		put(&w, rec, sizeof(rec));
		put(&w, meta[i].key, rec[0]);
		put(&w, meta[i].value, rec[1]);
	}
	/* the CRC is known last: rewrite the header (errors: at the end) */
	hdr.payload_crc = (uint32_t)w.crc;
	if (fseek(f, 0, SEEK_SET) == 0)
		fwrite(&hdr, sizeof(hdr), 1, f);
}

/* Make the rename itself durable (best effort: not every fs can). */
static void sync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd;

	if (!copy)
		return;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

int vtpu__atomic_begin(struct vtpu__atomic *a, const char *path, char *err,
		       size_t errlen)
{
	int fd, ret;

	a->f = NULL;
	a->path = path;
	if ((size_t)snprintf(a->tmp, sizeof(a->tmp), "%s.tmp.XXXXXX", path) >=
	    sizeof(a->tmp))
		return vtpu__errf(err, errlen, -ENAMETOOLONG,
				  "%s: path too long", path);
	fd = mkstemp(a->tmp);
	if (fd < 0)
		return vtpu__errf(err, errlen, -errno, "%s: %s", a->tmp,
				  strerror(errno));
	fchmod(fd, 0644);
	a->f = fdopen(fd, "wb");
	if (!a->f) {
		ret = -errno;
		close(fd);
		unlink(a->tmp);
		return vtpu__errf(err, errlen, ret, "%s: %s", a->tmp,
				  strerror(-ret));
	}
	errno = 0;
	return 0;
}

int vtpu__atomic_end(struct vtpu__atomic *a, int ret, char *err,
		     size_t errlen)
{
	int wret = 0;

	if (fflush(a->f) || ferror(a->f))
		wret = -(errno ? errno : EIO);
	else if (fsync(fileno(a->f)))
		wret = -errno;
	if (fclose(a->f) && !wret)
		wret = -(errno ? errno : EIO);
	if (!ret && !wret && rename(a->tmp, a->path))
		wret = -errno;
	if (ret || wret) {
		unlink(a->tmp);
		return ret ? ret :
			     vtpu__errf(err, errlen, wret,
					"%s: writing failed: %s", a->path,
					strerror(-wret));
	}
	sync_dir(a->path);
	return 0;
}

int vtpu_ckpt_save_meta(const char *path, const struct vtpu_ckpt_tensor *t,
			size_t n, const struct vtpu_ckpt_meta *meta,
			size_t nmeta, char *err, size_t errlen)
{
	struct vtpu__atomic a;
	uint64_t payload;
	int ret;

	ret = check_caller(path, t, n, meta, nmeta, &payload, err, errlen);
	if (!ret)
		ret = vtpu__atomic_begin(&a, path, err, errlen);
	if (ret)
		return ret;
	write_file(a.f, t, n, meta, nmeta, payload);
	return vtpu__atomic_end(&a, 0, err, errlen);
}

int vtpu_ckpt_save(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen)
{
	return vtpu_ckpt_save_meta(path, t, n, NULL, 0, err, errlen);
}

/* ---- load ------------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **buf, size_t *len, char *err,
		     size_t errlen)
{
	struct stat st;
	size_t got = 0;
	ssize_t r;
	int fd, ret = 0;

	*buf = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vtpu__errf(err, errlen, -errno, "%s: %s", path,
				  strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MAX_FILE) {
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: not a regular file of a sane size", path);
		goto out;
	}
	*buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!*buf) {
		ret = vtpu__errf(err, errlen, -ENOMEM, "%s: out of memory",
				 path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = vtpu__errf(err, errlen, -EIO, "%s: read: %s",
					 path, r ? strerror(errno) :
						   "file shrank");
			goto out;
		}
		got += (size_t)r;
	}
	*len = got;
out:
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	close(fd);
	return ret;
}

/* Where one record of the file sits, once parsed. */
struct record {
	const char *name;
	uint32_t name_len, ndim;
	uint64_t dims[VTPU_CKPT_MAX_DIMS];
	const uint8_t *data;
	size_t bytes;
};

/* Parse the record at *pos, bounded by end. */
static int parse_record(const char *path, uint32_t i, const uint8_t **pos,
			const uint8_t *end, struct record *r, char *err,
			size_t errlen)
{
	const uint8_t *p = *pos;
	int64_t count;

	if ((size_t)(end - p) < 8)
		goto bad;
	memcpy(&r->name_len, p, 4);
	memcpy(&r->ndim, p + 4, 4);
	p += 8;
	if (!r->name_len || r->name_len > VTPU_CKPT_MAX_NAME ||
	    r->ndim > VTPU_CKPT_MAX_DIMS ||
	    (size_t)(end - p) < 8ull * r->ndim + r->name_len)
		goto bad;
	memcpy(r->dims, p, 8ull * r->ndim);
	p += 8ull * r->ndim;
	r->name = (const char *)p;
	p += r->name_len;
	count = shape_count(r->ndim, r->dims);
	if (count < 0 || (uint64_t)(end - p) < (uint64_t)count * sizeof(float))
		goto bad;
	r->data = p;
	r->bytes = (size_t)count * sizeof(float);
	*pos = p + r->bytes;
	return 0;
bad:
	return vtpu__errf(err, errlen, -EINVAL,
			  "%s: tensor record %u is malformed", path, i);
}

/* One metadata record of the file, once parsed. */
struct meta_rec {
	const char *key, *value;
	uint32_t key_len, value_len;
};

/* Parse the file's @nrec metadata records at *pos into @mr. */
static int parse_meta(const char *path, const uint8_t **pos,
		      const uint8_t *end, uint32_t nrec, struct meta_rec *mr,
		      char *err, size_t errlen)
{
	const uint8_t *p = *pos;
	uint32_t i, j, len[2];

	for (i = 0; i < nrec; i++) {
		if ((size_t)(end - p) < 8)
			goto bad;
		memcpy(len, p, 8);
		p += 8;
		if (!len[0] || len[0] > VTPU_CKPT_MAX_NAME ||
		    len[1] > VTPU_CKPT_MAX_VALUE ||
		    (size_t)(end - p) < (size_t)len[0] + len[1] ||
		    memchr(p, 0, (size_t)len[0] + len[1]))
			goto bad;
		mr[i] = (struct meta_rec){ (const char *)p,
					   (const char *)p + len[0], len[0],
					   len[1] };
		p += len[0] + len[1];
		for (j = 0; j < i; j++)
			if (mr[j].key_len == len[0] &&
			    !memcmp(mr[j].key, mr[i].key, len[0]))
				return vtpu__errf(err, errlen, -EINVAL,
						  "%s: metadata '%.*s' appears twice",
						  path, (int)len[0],
						  mr[i].key);
	}
	*pos = p;
	return 0;
bad:
	return vtpu__errf(err, errlen, -EINVAL,
			  "%s: metadata record %u is malformed", path, i);
}

/*
 * Each of the caller's @meta keys must be in the file with the same value;
 * the file's other keys are not the caller's concern.
 */
static int match_meta(const char *path, const struct meta_rec *mr,
		      uint32_t nrec, const struct vtpu_ckpt_meta *meta,
		      size_t nmeta, char *err, size_t errlen)
{
	size_t k, key_len, value_len;
	uint32_t i;

	for (k = 0; k < nmeta; k++) {
		key_len = strlen(meta[k].key);
		value_len = strlen(meta[k].value);
		for (i = 0; i < nrec; i++)
			if (mr[i].key_len == key_len &&
			    !memcmp(mr[i].key, meta[k].key, key_len))
				break;
		if (i == nrec)
			return vtpu__errf(err, errlen, -ENOKEY,
					  "%s: the checkpoint has no '%s' (expected '%s')",
					  path, meta[k].key, meta[k].value);
		if (mr[i].value_len != value_len ||
		    memcmp(mr[i].value, meta[k].value, value_len))
			return vtpu__errf(err, errlen, -EKEYREJECTED,
					  "%s: the checkpoint's '%s' is '%.*s', not '%s'",
					  path, meta[k].key,
					  (int)mr[i].value_len, mr[i].value,
					  meta[k].value);
	}
	return 0;
}

/*
 * Parse every record, check the metadata the caller requires, then match
 * the tensors to the caller's by name and shape: recs[k] = the file's
 * record of t[k]. The metadata comes first: a model given another
 * vocabulary hears that, not that an embedding has another shape.
 */
static int match_records(const char *path, const uint8_t *payload,
			 const struct ckpt_hdr *hdr,
			 const struct vtpu_ckpt_tensor *t, struct record *recs,
			 const struct vtpu_ckpt_meta *meta, size_t nmeta,
			 char *err, size_t errlen)
{
	const uint8_t *pos = payload, *end = payload + hdr->payload_bytes;
	uint32_t i, nrec = hdr->ntensors;
	struct record *file = calloc(nrec ? nrec : 1, sizeof(*file));
	struct meta_rec *mr = calloc(hdr->nmeta ? hdr->nmeta : 1,
				     sizeof(*mr));
	char want[160], have[160];
	size_t k;
	int ret = 0;

	if (!file || !mr) {
		ret = vtpu__errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nrec && !ret; i++)
		ret = parse_record(path, i, &pos, end, &file[i], err, errlen);
	if (!ret)
		ret = parse_meta(path, &pos, end, hdr->nmeta, mr, err,
				 errlen);
	if (!ret && pos != end)
		ret = vtpu__errf(err, errlen, -EINVAL,
				 "%s: %zu bytes after the last record", path,
				 (size_t)(end - pos));
	if (!ret)
		ret = match_meta(path, mr, hdr->nmeta, meta, nmeta, err,
				 errlen);
	for (i = 0; i < nrec && !ret; i++) {
		const struct record *r = &file[i];

		for (k = 0; k < nrec; k++)
			if (strlen(t[k].name) == r->name_len &&
			    !memcmp(t[k].name, r->name, r->name_len))
				break;
		if (k == nrec) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s: has a tensor '%.*s' that is not expected",
					 path, (int)r->name_len, r->name);
		} else if (recs[k].name) {
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s: tensor '%s' appears twice", path,
					 t[k].name);
		} else if (r->ndim != t[k].ndim ||
			   memcmp(r->dims, t[k].dims,
				  r->ndim * sizeof(r->dims[0]))) {
			shape_str(have, sizeof(have), r->ndim, r->dims);
			shape_str(want, sizeof(want), t[k].ndim, t[k].dims);
			ret = vtpu__errf(err, errlen, -EINVAL,
					 "%s: tensor '%s' has shape %s, expected %s",
					 path, t[k].name, have, want);
		} else {
			recs[k] = *r;
		}
	}
out:
	free(file);
	free(mr);
	return ret;
}

static int check_header(const char *path, const uint8_t *buf, size_t len,
			size_t n, struct ckpt_hdr *hdr, char *err,
			size_t errlen)
{
	if (memcmp(buf, VTPU_CKPT_MAGIC,
		   len < sizeof(hdr->magic) ? len : sizeof(hdr->magic)))
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: not a vtpu checkpoint (bad magic)", path);
	if (len < HDR_SIZE)
		return vtpu__errf(err, errlen, -EIO,
				  "%s: truncated: %zu bytes, the header alone is %d",
				  path, len, HDR_SIZE);
	memcpy(hdr, buf, sizeof(*hdr));
	if (hdr->version < 1 || hdr->version > VTPU_CKPT_VERSION)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: checkpoint version %u, this library reads versions 1 to %d",
				  path, hdr->version, VTPU_CKPT_VERSION);
	if (hdr->version == 1 && hdr->nmeta)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: reserved header field is not zero", path);
	if (hdr->nmeta > VTPU_CKPT_MAX_NMETA)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: %u metadata records (at most %d)", path,
				  hdr->nmeta, VTPU_CKPT_MAX_NMETA);
	if (hdr->payload_bytes > len - HDR_SIZE)
		return vtpu__errf(err, errlen, -EIO,
				  "%s: truncated: header says %llu payload bytes, the file has %zu",
				  path, (unsigned long long)hdr->payload_bytes,
				  len - HDR_SIZE);
	if (hdr->payload_bytes < len - HDR_SIZE)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: %llu unexpected bytes after the payload",
				  path, (unsigned long long)(len - HDR_SIZE -
							     hdr->payload_bytes));
	if (crc32_z(crc32(0, NULL, 0), buf + HDR_SIZE, hdr->payload_bytes) !=
	    hdr->payload_crc)
		return vtpu__errf(err, errlen, -EIO,
				  "%s: checksum mismatch: the file is corrupt",
				  path);
	if (hdr->ntensors != n)
		return vtpu__errf(err, errlen, -EINVAL,
				  "%s: has %u tensors, expected %zu", path,
				  hdr->ntensors, n);
	return 0;
}

int vtpu_ckpt_load_meta(const char *path, const struct vtpu_ckpt_tensor *t,
			size_t n, const struct vtpu_ckpt_meta *meta,
			size_t nmeta, char *err, size_t errlen)
{
	struct record *recs = NULL;
	struct ckpt_hdr hdr = { .ntensors = 0 };
	uint64_t unused;
	uint8_t *buf;
	size_t len = 0, k;
	int ret;

	/* the caller's side must be sane before the file's is compared to it */
	ret = check_caller(path, t, n, meta, nmeta, &unused, err, errlen);
	if (ret)
		return ret;
	ret = read_file(path, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = check_header(path, buf, len, n, &hdr, err, errlen);
	if (ret)
		goto out;
	recs = calloc(n ? n : 1, sizeof(*recs));
	if (!recs) {
		ret = vtpu__errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	ret = match_records(path, buf + HDR_SIZE, &hdr, t, recs, meta, nmeta,
			    err, errlen);
	if (ret)
		goto out;
	/* everything checked: only now fill the caller's tensors */
	for (k = 0; k < n; k++)
		memcpy(t[k].data, recs[k].data, recs[k].bytes);
out:
	free(recs);
	free(buf);
	return ret;
}

int vtpu_ckpt_load(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen)
{
	return vtpu_ckpt_load_meta(path, t, n, NULL, 0, err, errlen);
}
