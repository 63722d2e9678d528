// SPDX-License-Identifier: MIT
/*
 * libvtpu device API: a thin wrapper around /dev/vtpuN's ioctls, mmap and
 * sync_file fences (uapi/linux/vtpu.h).
 *
 * Every ioctl goes through libdrm's drmIoctl(), which restarts it on EINTR
 * and EAGAIN; that is safe here because every vtpu ioctl is idempotent up
 * to its side effect, and WAIT takes an absolute deadline so a restart does
 * not stretch the timeout.
 *
 * Conventions: int returns are 0 or -errno, pointer returns NULL + errno;
 * nothing here prints or exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <libsync.h>
#include <xf86drm.h>

#include "vtpu.h"
#include "vtpu_engine.h"

struct vtpu_dev {
	int fd;
};

/* drmIoctl() returns -1 with errno set; turn that into -errno. */
static int vtpu_ioctl(int fd, unsigned long request, void *arg)
{
	if (drmIoctl(fd, request, arg))
		return errno ? -errno : -EIO;
	return 0;
}

struct vtpu_dev *vtpu_open(const char *path)
{
	struct vtpu_dev *dev;
	uint64_t version;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		err = errno;
		goto err_free;
	}
	err = -vtpu_get_param(dev, VTPU_PARAM_API_VERSION, &version);
	if (err)
		goto err_close;
	/* a newer module runs what this library builds; an older may not */
	if (version < VTPU_API_VERSION) {
		err = EPROTO;
		goto err_close;
	}
	return dev;

err_close:
	close(dev->fd);
err_free:
	free(dev);
	errno = err;
	return NULL;
}

/* The one place these hints are written: tools and examples print them. */
const char *vtpu_open_hint(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		return " (is vtpu.ko loaded?)";
	case EACCES:
	case EPERM:
		return " (permission denied: add yourself to the group 'render'"
		       " (usermod -aG render $USER, then log in again); the"
		       " udev rule 60-vtpu.rules gives /dev/vtpuN to that group)";
	case EPROTO:
		return " (vtpu.ko is older than libvtpu)";
	default:
		return "";
	}
}

void vtpu_close(struct vtpu_dev *dev)
{
	int saved = errno;

	if (!dev)
		return;
	/* Mappings hold their own reference to the file: they stay valid. */
	close(dev->fd);
	free(dev);
	errno = saved;
}

int vtpu_fd(const struct vtpu_dev *dev)
{
	return dev ? dev->fd : -1;
}

int vtpu_get_param(struct vtpu_dev *dev, uint32_t param, uint64_t *value)
{
	struct vtpu_get_param p = { .param = param };
	int ret;

	if (!dev || !value)
		return -EINVAL;
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_GET_PARAM, &p);
	if (ret)
		return ret;
	*value = p.value;
	return 0;
}

/* ---- buffers ------------------------------------------------------------ */

int vtpu_bo_create(struct vtpu_dev *dev, uint64_t size, struct vtpu_bo *bo)
{
	struct vtpu_bo_create c = { .size = size };
	struct vtpu_bo_close cl = { 0 };
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	void *map;
	int ret;

	if (!dev || !bo)
		return -EINVAL;
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_CREATE, &c);
	if (ret)
		return ret;

	/* The kernel accepted @size, so rounding it up cannot overflow. */
	size = (size + page - 1) & ~(page - 1);
	if (size > SIZE_MAX) {
		ret = -ENOMEM;
		goto err_close;
	}
	map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   dev->fd, (off_t)c.mmap_offset);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	bo->handle = c.handle;
	bo->size = size;
	bo->map = map;
	return 0;

err_close:
	cl.handle = c.handle;
	vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_CLOSE, &cl);
	return ret;
}

int vtpu_bo_destroy(struct vtpu_dev *dev, struct vtpu_bo *bo)
{
	struct vtpu_bo_close cl = { 0 };
	int ret = 0, err;

	if (!dev || !bo)
		return -EINVAL;
	if (bo->map) {
		if (munmap(bo->map, (size_t)bo->size))
			ret = -errno;
		bo->map = NULL;
	}
	cl.handle = bo->handle;
	err = vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_CLOSE, &cl);
	return ret ? ret : err;
}

int vtpu_bo_export(struct vtpu_dev *dev, const struct vtpu_bo *bo, int *fd)
{
	struct vtpu_bo_export e = { 0 };
	int ret;

	if (!dev || !bo || !fd)
		return -EINVAL;
	e.handle = bo->handle;
	e.flags = O_CLOEXEC | O_RDWR;
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_EXPORT, &e);
	if (ret)
		return ret;
	*fd = e.fd;
	return 0;
}

int vtpu_bo_import(struct vtpu_dev *dev, int fd, struct vtpu_bo *bo)
{
	struct vtpu_bo_import im = { .fd = fd };
	struct vtpu_bo_close cl = { 0 };
	void *map;
	int ret;

	if (!dev || !bo)
		return -EINVAL;
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_IMPORT, &im);
	if (ret)
		return ret;
	if (im.size > SIZE_MAX) {
		ret = -ENOMEM;
		goto err_close;
	}
	map = mmap(NULL, (size_t)im.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   dev->fd, (off_t)im.mmap_offset);
	/* a read-only export: a read-only handle, mapped read-only */
	if (map == MAP_FAILED && errno == EACCES)
		map = mmap(NULL, (size_t)im.size, PROT_READ, MAP_SHARED,
			   dev->fd, (off_t)im.mmap_offset);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	bo->handle = im.handle;
	bo->size = im.size;
	bo->map = map;
	return 0;

err_close:
	cl.handle = im.handle;
	vtpu_ioctl(dev->fd, VTPU_IOCTL_BO_CLOSE, &cl);
	return ret;
}

/* ---- queues ------------------------------------------------------------- */

/* Does @opts (of @opts->sz bytes) hold the member ending at @end? */
#define OPTS_HAS(opts, end) ((opts)->sz >= (end))
#define OPTS_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Bytes past what this library knows must be zero (libbpf's OPTS_VALID). */
static int vtpu_opts_valid(const void *opts, size_t sz, size_t known)
{
	const uint8_t *p = opts;
	size_t i;

	if (sz < sizeof(size_t))
		return 0;
	for (i = known; i < sz; i++)
		if (p[i])
			return 0;
	return 1;
}

int vtpu_queue_create_opts(struct vtpu_dev *dev,
			   const struct vtpu_queue_opts *opts,
			   uint32_t *queue)
{
	struct vtpu_queue_create c = { .priority = VTPU_QUEUE_PRIORITY_NORMAL };
	int ret;

	if (!dev || !queue)
		return -EINVAL;
	if (opts) {
		if (!vtpu_opts_valid(opts, opts->sz, sizeof(*opts)))
			return -EINVAL;
		if (OPTS_HAS(opts, OPTS_END(struct vtpu_queue_opts, priority)))
			c.priority = opts->priority;
		if (OPTS_HAS(opts,
			     OPTS_END(struct vtpu_queue_opts, timeout_ms)))
			c.timeout_ms = opts->timeout_ms;
		if (OPTS_HAS(opts, OPTS_END(struct vtpu_queue_opts,
					    in_fence_timeout_ms)))
			c.in_fence_timeout_ms = opts->in_fence_timeout_ms;
	}
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_QUEUE_CREATE, &c);
	if (ret)
		return ret;
	*queue = c.queue_id;
	return 0;
}

int vtpu_queue_create(struct vtpu_dev *dev, uint32_t priority,
		      uint32_t *queue)
{
	VTPU_QUEUE_OPTS(opts, .priority = priority);

	return vtpu_queue_create_opts(dev, &opts, queue);
}

int vtpu_queue_destroy(struct vtpu_dev *dev, uint32_t queue)
{
	struct vtpu_queue_destroy d = { .queue_id = queue };

	if (!dev)
		return -EINVAL;
	return vtpu_ioctl(dev->fd, VTPU_IOCTL_QUEUE_DESTROY, &d);
}

/* ---- submission and completion ------------------------------------------ */

/*
 * job->in_fence: a zero-initialised struct vtpu_job (the usage example in
 * vtpu.h) must mean "no in-fence", so only fds > 0 are fences; fd 0 is
 * stdin in any sane process.
 */
int vtpu_submit(struct vtpu_dev *dev, const struct vtpu_cmdbuf *cb,
		struct vtpu_job *job)
{
	struct vtpu_submit s = { 0 };
	int ret;

	if (!dev || !cb || !job)
		return -EINVAL;
	job->out_fence = -1;
	memset(&job->error, 0, sizeof(job->error));
	if (cb->error)
		return cb->error;

	s.cmds_ptr = (uintptr_t)cb->data;
	s.cmds_size = cb->size;
	s.handles_ptr = (uintptr_t)cb->handles;
	s.handle_count = cb->nhandles;
	s.queue_id = job->queue;
	s.in_fence_fd = -1;
	if (job->in_fence > 0) {
		s.flags |= VTPU_SUBMIT_IN_FENCE;
		s.in_fence_fd = job->in_fence;
	}
	if (job->want_out_fence)
		s.flags |= VTPU_SUBMIT_OUT_FENCE;
	s.out_fence_fd = -1;
	s.repeat = job->repeat;
	s.strides_ptr = (uintptr_t)job->strides;
	s.first_iter = job->first_iter;

	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_SUBMIT, &s);
	if (ret) {
		job->error.cmd = s.error_cmd;
		job->error.offset = s.error_offset;
		job->error.operand = s.error_operand;
		job->error.reason = s.error_reason;
		return ret;
	}
	job->seqno = s.seqno;
	if (job->want_out_fence)
		job->out_fence = s.out_fence_fd;
	return 0;
}

/* A relative timeout as an absolute CLOCK_MONOTONIC deadline, saturating. */
static int64_t vtpu_deadline(int64_t timeout_ns)
{
	struct timespec now;
	int64_t t;

	if (timeout_ns < 0)
		return INT64_MAX;
	if (timeout_ns == 0)
		return 0;
	if (clock_gettime(CLOCK_MONOTONIC, &now))
		return INT64_MAX;
	t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	if (timeout_ns > INT64_MAX - t)
		return INT64_MAX;
	return t + timeout_ns;
}

int vtpu_wait(struct vtpu_dev *dev, uint32_t queue, uint64_t seqno,
	      int64_t timeout_ns, uint32_t *status, int32_t *job_error)
{
	struct vtpu_wait w = {
		.queue_id = queue,
		.seqno = seqno,
		.timeout_ns = vtpu_deadline(timeout_ns),
	};
	int ret;

	if (!dev)
		return -EINVAL;
	ret = vtpu_ioctl(dev->fd, VTPU_IOCTL_WAIT, &w);
	if (ret == -ETIME) {
		w.status = VTPU_JOB_PENDING;
		w.error = 0;
	} else if (ret) {
		return ret;
	}
	if (status)
		*status = w.status;
	if (job_error)
		*job_error = w.error;
	return ret;
}

int vtpu_fence_wait(int fence_fd, int timeout_ms)
{
	struct sync_file_info info;

	if (fence_fd < 0)
		return -EINVAL;
	if (sync_wait(fence_fd, timeout_ms < 0 ? -1 : timeout_ms))
		return errno ? -errno : -EIO;

	/* Signalled: status 1 is success, a negative one the job's error. */
	memset(&info, 0, sizeof(info));
	if (drmIoctl(fence_fd, SYNC_IOC_FILE_INFO, &info))
		return errno ? -errno : -EIO;
	return info.status < 0 ? info.status : 0;
}

const char *vtpu_opcode_name(uint32_t opcode)
{
	return vtpu_engine_op_name(opcode);
}

const char *vtpu_status_name(uint32_t status)
{
	static const char *const names[] = {
		[VTPU_JOB_PENDING] = "pending",
		[VTPU_JOB_DONE] = "done",
		[VTPU_JOB_ERROR] = "error",
		[VTPU_JOB_CANCELLED] = "cancelled",
		[VTPU_JOB_TIMEDOUT] = "timed out",
		[VTPU_JOB_RETIRED] = "retired",
	};

	if (status < sizeof(names) / sizeof(names[0]) && names[status])
		return names[status];
	return "?";
}
