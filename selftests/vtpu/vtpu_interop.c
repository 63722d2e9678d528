// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_interop: vtpu beside other drivers. Another driver's dma-buf (vgem's
 * here: Debian's kernel has no udmabuf) imported as a vtpu buffer and
 * computed on in place; implicit sync through the buffers' reservation
 * objects: another driver's pending write holds a vtpu job back, a vtpu
 * job's write holds back poll() and DMA_BUF_IOCTL_SYNC on its dma-buf and
 * a job on another vtpu device that reads it; VTPU_SUBMIT_NO_IMPLICIT_SYNC
 * opts out; and the bad inputs of import.
 *
 * Runs against the real module in the QEMU guest, which loads vgem
 * (modprobe) and udmabuf (tools/build-test-modules); skips where they are
 * absent (User-Mode Linux).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/udmabuf.h>
#include <libdrm/drm.h>
#include <libdrm/drm_mode.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_fdinfo.h"

#define DEV0 "/dev/vtpu0"
#define DEV1 "/dev/vtpu1"

/* vgem's uAPI (include/uapi/drm/vgem_drm.h; not in libdrm's headers) */
struct drm_vgem_fence_attach {
	uint32_t handle;
	uint32_t flags;
#define VGEM_FENCE_WRITE 0x1
	uint32_t out_fence;
	uint32_t pad;
};

struct drm_vgem_fence_signal {
	uint32_t fence;
	uint32_t flags;
};

#define DRM_IOCTL_VGEM_FENCE_ATTACH                                            \
	DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct drm_vgem_fence_attach)
#define DRM_IOCTL_VGEM_FENCE_SIGNAL                                            \
	DRM_IOW(DRM_COMMAND_BASE + 0x2, struct drm_vgem_fence_signal)

#define BO_SIZE (64 * 1024)
#define N_FLOATS (BO_SIZE / 4)

/* Is @fd a DRM device whose driver is @name? */
static int drm_driver_is(int fd, const char *name)
{
	char buf[32] = "";
	struct drm_version v = { .name = buf, .name_len = sizeof(buf) - 1 };

	return !ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(buf, name);
}

/* An fd of vgem's device (loading vgem when needed), or -1. */
static int vgem_open(void)
{
	int tries, fd;

	for (tries = 0; tries < 2; tries++) {
		DIR *d = opendir("/dev/dri");
		struct dirent *e;
		char path[300];

		while (d && (e = readdir(d))) {
			if (strncmp(e->d_name, "card", 4))
				continue;
			snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (drm_driver_is(fd, "vgem")) {
				closedir(d);
				return fd;
			}
			close(fd);
		}
		if (d)
			closedir(d);
		if (tries == 0 &&
		    system("modprobe vgem >/dev/null 2>&1") != 0)
			break;
	}
	return -1;
}

/* A vgem buffer: its GEM handle, dma-buf fd (@rw: writable) and mapping. */
struct vgem_bo {
	uint32_t handle;
	int dmabuf;
	float *map;
	uint64_t size;
};

static void vgem_bo_new(struct __test_metadata *_metadata, int vgem,
			uint64_t size, int rw, struct vgem_bo *bo)
{
	struct drm_mode_create_dumb c = { .height = 1, .width = size / 4,
					  .bpp = 32 };
	struct drm_prime_handle p = { .flags = DRM_CLOEXEC };
	struct drm_mode_map_dumb m = { 0 };
	void *map;

	ASSERT_EQ(0, ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &c));
	p.handle = c.handle;
	if (rw)
		p.flags |= DRM_RDWR;
	ASSERT_EQ(0, ioctl(vgem, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p));
	m.handle = c.handle;
	ASSERT_EQ(0, ioctl(vgem, DRM_IOCTL_MODE_MAP_DUMB, &m));
	map = mmap(NULL, c.size, PROT_READ | PROT_WRITE, MAP_SHARED, vgem,
		   m.offset);
	ASSERT_NE(MAP_FAILED, map);
	bo->handle = c.handle;
	bo->dmabuf = p.fd;
	bo->map = map;
	bo->size = c.size;
}

static void vgem_bo_free(int vgem, struct vgem_bo *bo)
{
	struct drm_gem_close gc = { .handle = bo->handle };

	if (bo->map)
		munmap(bo->map, bo->size);
	if (bo->dmabuf >= 0)
		close(bo->dmabuf);
	ioctl(vgem, DRM_IOCTL_GEM_CLOSE, &gc);
	bo->map = NULL;
	bo->dmabuf = -1;
}

/* A pending write fence of vgem's on @bo (signal it within 10 s). */
static uint32_t vgem_write_fence(struct __test_metadata *_metadata, int vgem,
				 struct vgem_bo *bo)
{
	struct drm_vgem_fence_attach a = { .handle = bo->handle,
					   .flags = VGEM_FENCE_WRITE };

	EXPECT_EQ(0, ioctl(vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &a));
	return a.out_fence;
}

static void vgem_signal(struct __test_metadata *_metadata, int vgem,
			uint32_t fence)
{
	struct drm_vgem_fence_signal s = { .fence = fence };

	EXPECT_EQ(0, ioctl(vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &s));
}

FIXTURE(interop)
{
	struct vtpu_dev *dev;
	uint32_t q;
	int vgem;
};

FIXTURE_SETUP(interop)
{
	self->vgem = -1;
	self->dev = vtpu_open(DEV0);
	if (!self->dev)
		return;
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &self->q));
	self->vgem = vgem_open();
}

FIXTURE_TEARDOWN(interop)
{
	if (self->vgem >= 0)
		close(self->vgem);
	if (self->dev)
		vtpu_close(self->dev);
}

/* SKIP in FIXTURE_SETUP still runs the body in 6.1's harness: check here. */
#define NEED_DEV()                                                             \
	do {                                                                   \
		if (!self->dev)                                                \
			SKIP(return, "%s: %s (is vtpu.ko loaded?)", DEV0,      \
			     strerror(errno));                                 \
	} while (0)

#define NEED_VGEM()                                                            \
	do {                                                                   \
		NEED_DEV();                                                    \
		if (self->vgem < 0)                                            \
			SKIP(return, "no vgem (modprobe vgem failed)");        \
	} while (0)

/* Submit @cb on @q of @dev (@flags: no_implicit_sync); Return: seqno. */
static uint64_t submit(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		       uint32_t q, struct vtpu_cmdbuf *cb, int no_implicit)
{
	struct vtpu_job job = { .queue = q, .in_fence = -1,
				.no_implicit_sync = no_implicit };
	char msg[256];
	int ret = vtpu_submit(dev, cb, &job);

	EXPECT_EQ(0, ret) TH_LOG("submit: %s; %s", strerror(-ret),
				 vtpu_job_strerror(cb, &job, msg, sizeof(msg)));
	return job.seqno;
}

/* The job's status now (0: still queued or running, else VTPU_JOB_*). */
static uint32_t job_status(struct vtpu_dev *dev, uint32_t q, uint64_t seqno,
			   int64_t timeout_ns)
{
	uint32_t status = 0;
	int32_t err;

	if (vtpu_wait(dev, q, seqno, timeout_ns, &status, &err))
		return 0;
	return status;
}

/*
 * vgem's buffer, imported, is computed on in place: a COPY out of it into
 * a vtpu buffer and a FILL into it, seen through vgem's own mapping and
 * through the vtpu handle's; the handle keeps the memory after vgem's
 * handle, dma-buf fd and device fd are closed; a second import finds it.
 */
TEST_F(interop, import_vgem_compute_in_place)
{
	struct vtpu_bo mine, theirs, again;
	struct vtpu_cmdbuf cb;
	struct vgem_bo vb;
	uint32_t i, t, m;
	int bad = 0;

	NEED_VGEM();
	vgem_bo_new(_metadata, self->vgem, BO_SIZE, 1, &vb);
	for (i = 0; i < N_FLOATS; i++)
		vb.map[i] = (float)i;
	ASSERT_EQ(0, vtpu_bo_import(self->dev, vb.dmabuf, &theirs));
	EXPECT_EQ(vb.size, theirs.size);
	ASSERT_EQ(0, vtpu_bo_import(self->dev, vb.dmabuf, &again));
	EXPECT_EQ(theirs.handle, again.handle) TH_LOG("one handle per buffer");
	munmap(again.map, again.size);
	EXPECT_EQ(1000.0f, ((float *)theirs.map)[1000])
		TH_LOG("the vtpu mapping shows vgem's memory");
	ASSERT_EQ(0, vtpu_bo_create(self->dev, BO_SIZE, &mine));

	vgem_bo_free(self->vgem, &vb);	/* the vtpu handle keeps it */
	close(self->vgem);
	self->vgem = -1;

	vtpu_cmdbuf_init(&cb);
	t = vtpu_cmdbuf_use(&cb, &theirs);
	m = vtpu_cmdbuf_use(&cb, &mine);
	vtpu_cmdbuf_copy(&cb, m, 0, t, 0, BO_SIZE);
	vtpu_cmdbuf_fill(&cb, t, 0, N_FLOATS / 2, -1.0f);
	EXPECT_EQ(VTPU_JOB_DONE,
		  job_status(self->dev, self->q,
			     submit(_metadata, self->dev, self->q, &cb, 0), -1));
	vtpu_cmdbuf_fini(&cb);
	for (i = 0; i < N_FLOATS; i++) {
		bad += ((float *)mine.map)[i] != (float)i;
		bad += ((float *)theirs.map)[i] !=
		       (i < N_FLOATS / 2 ? -1.0f : (float)i);
	}
	EXPECT_EQ(0, bad);
	TH_LOG("a COPY out of vgem's buffer and a FILL into it, in place, after vgem closed: %d bad",
	       bad);
	vtpu_bo_destroy(self->dev, &theirs);
	vtpu_bo_destroy(self->dev, &mine);
}

/*
 * A dma-buf exported read-only gives a read-only handle: a job writing it
 * is refused (EACCES, VTPU_ERR_READ_ONLY), mapped read-only; exporting the
 * handle again hands back a dma-buf of the same buffer.
 */
TEST_F(interop, import_vgem_read_only)
{
	struct vtpu_job job = { .in_fence = -1 };
	struct vtpu_bo_info info = { 0 };
	struct vtpu_bo theirs;
	struct vtpu_cmdbuf cb;
	struct vgem_bo vb;
	int fd;

	NEED_VGEM();
	vgem_bo_new(_metadata, self->vgem, BO_SIZE, 0, &vb);
	vb.map[7] = 7.0f;
	ASSERT_EQ(0, vtpu_bo_import(self->dev, vb.dmabuf, &theirs));
	EXPECT_EQ(7.0f, ((float *)theirs.map)[7]);
	info.handle = theirs.handle;
	ASSERT_EQ(0, ioctl(vtpu_fd(self->dev), VTPU_IOCTL_BO_INFO, &info));
	EXPECT_TRUE(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 vtpu_fd(self->dev), (off_t)info.mmap_offset) ==
		    MAP_FAILED);
	EXPECT_EQ(EACCES, errno);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &theirs), 0, 4, 1.0f);
	job.queue = self->q;
	EXPECT_EQ(-EACCES, vtpu_submit(self->dev, &cb, &job));
	EXPECT_EQ(VTPU_ERR_READ_ONLY, job.error.reason);
	vtpu_cmdbuf_fini(&cb);
	/* read-write, as vtpu_bo_export() asks: not from a read-only handle */
	fd = -1;
	EXPECT_EQ(-EACCES, vtpu_bo_export(self->dev, &theirs, &fd));
	if (fd >= 0)
		close(fd);
	vtpu_bo_destroy(self->dev, &theirs);
	vgem_bo_free(self->vgem, &vb);
}

/* What cannot be imported: not a dma-buf, a closed fd, a vtpu fd. */
TEST_F(interop, import_bad_fds)
{
	struct vtpu_bo bo;
	int fd;

	NEED_DEV();
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, vtpu_bo_import(self->dev, fd, &bo));
	close(fd);
	EXPECT_EQ(-EBADF, vtpu_bo_import(self->dev, fd, &bo));
	EXPECT_EQ(-EBADF, vtpu_bo_import(self->dev, -1, &bo));
	EXPECT_EQ(-EINVAL, vtpu_bo_import(self->dev, vtpu_fd(self->dev), &bo));
}

/* Is @var "1": the runner loaded what a test would otherwise skip without? */
static int expected(const char *var)
{
	const char *v = getenv(var);

	return v && !strcmp(v, "1");
}

/*
 * udmabuf (memfd pages as a dma-buf): imported and computed on in place
 * where its exporter can map it into the kernel (dma_buf_vmap); 6.1's
 * udmabuf cannot, and the import is then refused with EOPNOTSUPP, leaving
 * no handle behind.
 */
TEST_F(interop, import_udmabuf)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = BO_SIZE };
	long long before;
	struct vtpu_bo bo;
	struct vtpu_cmdbuf cb;
	int dev, memfd, dmabuf, ret;
	float *map;

	NEED_DEV();
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	/* make check loads it in the 6.1 guest: there, missing is a failure */
	if (dev < 0 && expected("VTPU_EXPECT_UDMABUF"))
		ASSERT_LE(0, dev) TH_LOG("VTPU_EXPECT_UDMABUF, but /dev/udmabuf: %s",
					 strerror(errno));
	if (dev < 0)
		SKIP(return, "/dev/udmabuf: %s (tools/build-test-modules)",
		     strerror(errno));
	memfd = syscall(SYS_memfd_create, "vtpu-interop", MFD_ALLOW_SEALING);
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, BO_SIZE));
	ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK));
	map = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	ASSERT_NE(MAP_FAILED, map);
	map[9] = 9.0f;
	c.memfd = memfd;
	dmabuf = ioctl(dev, UDMABUF_CREATE, &c);
	ASSERT_LE(0, dmabuf) TH_LOG("UDMABUF_CREATE: %s", strerror(errno));

	before = fdinfo_value(vtpu_fd(self->dev), "vtpu-buffers", NULL, 0);
	ret = vtpu_bo_import(self->dev, dmabuf, &bo);
	if (ret) {
		EXPECT_EQ(-EOPNOTSUPP, ret) TH_LOG("import: %s", strerror(-ret));
		EXPECT_EQ(before,
			  fdinfo_value(vtpu_fd(self->dev), "vtpu-buffers", NULL, 0));
		TH_LOG("this kernel's udmabuf has no kernel mapping (dma_buf_vmap): refused with EOPNOTSUPP, no handle left");
		goto out;
	}
	EXPECT_EQ(9.0f, ((float *)bo.map)[9]);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, 4, 3.0f);
	EXPECT_EQ(VTPU_JOB_DONE,
		  job_status(self->dev, self->q,
			     submit(_metadata, self->dev, self->q, &cb, 0), -1));
	vtpu_cmdbuf_fini(&cb);
	EXPECT_EQ(3.0f, map[3]) TH_LOG("the job's write is not in the memfd");
	TH_LOG("udmabuf imported, and a FILL landed in the memfd's pages");
	vtpu_bo_destroy(self->dev, &bo);
out:
	close(dmabuf);
	munmap(map, BO_SIZE);
	close(memfd);
	close(dev);
}

/*
 * Another driver's pending write holds a vtpu job that reads its buffer
 * back until it signals; VTPU_SUBMIT_NO_IMPLICIT_SYNC does not wait.
 */
TEST_F_TIMEOUT(interop, foreign_write_fence_holds_job, 120)
{
	struct vtpu_bo mine, theirs;
	struct vtpu_cmdbuf cb;
	uint64_t seqno, s2;
	struct vgem_bo vb;
	uint32_t fence;

	NEED_VGEM();
	vgem_bo_new(_metadata, self->vgem, BO_SIZE, 1, &vb);
	ASSERT_EQ(0, vtpu_bo_import(self->dev, vb.dmabuf, &theirs));
	ASSERT_EQ(0, vtpu_bo_create(self->dev, BO_SIZE, &mine));
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &mine), 0,
			 vtpu_cmdbuf_use(&cb, &theirs), 0, 16);

	fence = vgem_write_fence(_metadata, self->vgem, &vb);
	vb.map[0] = 42.0f;	/* "the other device's write" */
	seqno = submit(_metadata, self->dev, self->q, &cb, 0);
	usleep(300 * 1000);
	EXPECT_EQ(0, job_status(self->dev, self->q, seqno, 0))
		TH_LOG("the job ran before vgem's write fence signalled");
	EXPECT_EQ(0.0f, ((float *)mine.map)[0]);
	vgem_signal(_metadata, self->vgem, fence);
	EXPECT_EQ(VTPU_JOB_DONE, job_status(self->dev, self->q, seqno, -1));
	EXPECT_EQ(42.0f, ((float *)mine.map)[0]);

	/* opted out: runs at once, the fence still pending */
	fence = vgem_write_fence(_metadata, self->vgem, &vb);
	s2 = submit(_metadata, self->dev, self->q, &cb, 1);
	EXPECT_EQ(VTPU_JOB_DONE,
		  job_status(self->dev, self->q, s2, 5000000000LL));
	vgem_signal(_metadata, self->vgem, fence);
	TH_LOG("job %llu waited for vgem's pending write; job %llu (NO_IMPLICIT_SYNC) did not",
	       (unsigned long long)seqno, (unsigned long long)s2);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &theirs);
	vtpu_bo_destroy(self->dev, &mine);
	vgem_bo_free(self->vgem, &vb);
}

struct sync_arg {
	int dmabuf;
	struct vtpu_dev *dev;
	uint32_t q;
	uint64_t seqno;
	uint32_t status_after;	/* the job's status when SYNC returned */
	int ret;
};

static void *sync_thread(void *p)
{
	struct sync_arg *a = p;
	struct dma_buf_sync s = { .flags = DMA_BUF_SYNC_START |
					   DMA_BUF_SYNC_READ };

	a->ret = ioctl(a->dmabuf, DMA_BUF_IOCTL_SYNC, &s) ? -errno : 0;
	a->status_after = job_status(a->dev, a->q, a->seqno, 0);
	s.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	ioctl(a->dmabuf, DMA_BUF_IOCTL_SYNC, &s);
	return NULL;
}

/*
 * A vtpu job that writes an exported buffer puts its fence there: poll()
 * on the dma-buf and DMA_BUF_IOCTL_SYNC wait for it, and so does a job on
 * another vtpu device that imported the buffer and reads it (no explicit
 * fence anywhere). The writer is held back by a vgem fence on its input,
 * so that "not yet" is certain.
 */
TEST_F_TIMEOUT(interop, vtpu_write_fence_orders_readers, 120)
{
	struct sync_arg sa = { 0 };
	struct vtpu_bo out, out1, res1, theirs;
	struct vtpu_cmdbuf cb, cb1;
	struct vtpu_dev *dev1;
	uint64_t seqno, s1;
	struct pollfd pfd;
	struct vgem_bo vb;
	pthread_t th;
	uint32_t fence, q1;
	int dmabuf;

	NEED_VGEM();
	dev1 = vtpu_open(DEV1);
	if (!dev1)
		SKIP(return, "%s: %s (load vtpu.ko with devices=2)", DEV1,
		     strerror(errno));
	ASSERT_EQ(0, vtpu_queue_create(dev1, VTPU_QUEUE_PRIORITY_NORMAL, &q1));
	vgem_bo_new(_metadata, self->vgem, BO_SIZE, 1, &vb);
	ASSERT_EQ(0, vtpu_bo_import(self->dev, vb.dmabuf, &theirs));
	ASSERT_EQ(0, vtpu_bo_create(self->dev, BO_SIZE, &out));
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &out, &dmabuf));
	ASSERT_EQ(0, vtpu_bo_import(dev1, dmabuf, &out1));
	ASSERT_EQ(0, vtpu_bo_create(dev1, BO_SIZE, &res1));

	/* device 0: out = theirs (waits for vgem) */
	fence = vgem_write_fence(_metadata, self->vgem, &vb);
	vb.map[3] = 5.0f;
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &out), 0,
			 vtpu_cmdbuf_use(&cb, &theirs), 0, 64);
	seqno = submit(_metadata, self->dev, self->q, &cb, 0);
	/* device 1: res1 = out (waits for device 0's job) */
	vtpu_cmdbuf_init(&cb1);
	vtpu_cmdbuf_copy(&cb1, vtpu_cmdbuf_use(&cb1, &res1), 0,
			 vtpu_cmdbuf_use(&cb1, &out1), 0, 64);
	s1 = submit(_metadata, dev1, q1, &cb1, 0);

	sa.dmabuf = dmabuf;
	sa.dev = self->dev;
	sa.q = self->q;
	sa.seqno = seqno;
	ASSERT_EQ(0, pthread_create(&th, NULL, sync_thread, &sa));
	usleep(300 * 1000);
	pfd.fd = dmabuf;
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("the dma-buf polls ready while its writer is held");
	EXPECT_EQ(0, job_status(dev1, q1, s1, 0))
		TH_LOG("device 1's reader ran before device 0's writer");
	EXPECT_EQ(0, job_status(self->dev, self->q, seqno, 0));

	vgem_signal(_metadata, self->vgem, fence);
	EXPECT_EQ(1, poll(&pfd, 1, 20000));
	EXPECT_EQ(VTPU_JOB_DONE, job_status(self->dev, self->q, seqno, -1));
	EXPECT_EQ(VTPU_JOB_DONE, job_status(dev1, q1, s1, -1));
	EXPECT_EQ(5.0f, ((float *)res1.map)[3])
		TH_LOG("device 1 read the buffer before device 0 wrote it");
	pthread_join(th, NULL);
	EXPECT_EQ(0, sa.ret);
	EXPECT_EQ(VTPU_JOB_DONE, sa.status_after)
		TH_LOG("DMA_BUF_IOCTL_SYNC returned before the job was done");
	TH_LOG("poll(), DMA_BUF_IOCTL_SYNC and /dev/vtpu1's reader waited for /dev/vtpu0's write");

	close(dmabuf);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cb1);
	vtpu_bo_destroy(dev1, &res1);
	vtpu_bo_destroy(dev1, &out1);
	vtpu_bo_destroy(self->dev, &out);
	vtpu_bo_destroy(self->dev, &theirs);
	vgem_bo_free(self->vgem, &vb);
	vtpu_close(dev1);
}

TEST_HARNESS_MAIN
