// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_device: the device as a shared resource. dma-buf export/import
 * between files and devices, repeated submissions walking a dataset with
 * strides, the per-queue watchdog, in-fences that never signal, fairness
 * between clients and priorities, process lifetime (kill -9, fork, mmap
 * after close), the memory cap, rmmod while open, debugfs and the sysfs
 * job counters.
 *
 * Runs against the real module (in the VM, loaded with "devices=2
 * mem_cap_mb=256"); skips what needs /dev/vtpu1, sw_sync or debugfs when
 * they are absent. Floating point in the guest is ~100x slower than on the
 * host: the "long" jobs are sized at run time from one timed 128^3 GEMM,
 * and every result checked is small, with integer-valued data so that the
 * expected values are exact.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_gen.h"

#define DEV0 "/dev/vtpu0"
#define DEV1 "/dev/vtpu1"
#define DEBUGFS "/sys/kernel/debug"

/* The long job: a 128^3 GEMM, repeated. */
#define LONG_N 128

/* Queues client_job_limits uses: its job limit over queues of 64 */
#define VTPU_MAX_QUEUES_TEST 20

/* sw_sync's debugfs uAPI (drivers/dma-buf/sw_sync.c; no uapi header). */
struct sw_sync_create_fence_data {
	uint32_t value;
	char name[32];
	int32_t fence;
};
#define SW_SYNC_IOC_CREATE_FENCE                                               \
	_IOWR('W', 0, struct sw_sync_create_fence_data)
#define SW_SYNC_IOC_INC _IOW('W', 1, uint32_t)

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t param(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		      uint32_t p)
{
	uint64_t v = 0;

	ASSERT_EQ(0, vtpu_get_param(dev, p, &v));
	return v;
}

/* Poll sysfs NAME of device @index until it reads @want (up to 5 s). */
static long long sysfs_settle(int index, const char *name, long long want)
{
	long long v = gen_sysfs(index, name);
	int i;

	for (i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = gen_sysfs(index, name);
	}
	return v;
}

/* Small integers in [-2, 2]: products and short sums are exact in f32. */
static uint32_t rng_state = 0x2545f491;

static float irand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return (float)((int)(rng_state >> 8) % 5 - 2);
}

static void fill_irand(float *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = irand();
}

/* ref (m x n) = A (m x k) * B (k x n), all packed. */
static void ref_gemm(float *ref, const float *a, const float *b, uint32_t m,
		     uint32_t n, uint32_t k)
{
	uint32_t i, j, l;

	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			float s = 0;

			for (l = 0; l < k; l++)
				s += a[i * k + l] * b[l * n + j];
			ref[i * n + j] = s;
		}
}

static int count_diff(const float *got, const float *want, size_t n)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < n; i++)
		bad += got[i] != want[i];
	return bad;
}

static int count_not(const float *got, float want, size_t n)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < n; i++)
		bad += got[i] != want;
	return bad;
}

static void bo_new(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		   uint64_t size, struct vtpu_bo *bo)
{
	int ret = vtpu_bo_create(dev, size, bo);

	ASSERT_EQ(0, ret) TH_LOG("vtpu_bo_create(%llu): %s",
				 (unsigned long long)size, strerror(-ret));
}

/* Submit @job (queue, repeat, strides set by the caller) or fail. */
static void submit(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		   struct vtpu_cmdbuf *cb, struct vtpu_job *job)
{
	char msg[256];
	int ret = vtpu_submit(dev, cb, job);

	ASSERT_EQ(0, ret) TH_LOG("submit: %s; %s", strerror(-ret),
				 vtpu_job_strerror(cb, job, msg, sizeof(msg)));
}

/* Wait up to @ms for @seqno of @q; return its status (PENDING on timeout). */
static uint32_t wait_status(struct __test_metadata *_metadata,
			    struct vtpu_dev *dev, uint32_t q, uint64_t seqno,
			    int ms, int32_t *jerr)
{
	uint32_t status = 99;
	int32_t e = 0;
	int ret;

	ret = vtpu_wait(dev, q, seqno, (int64_t)ms * 1000000, &status, &e);
	EXPECT_TRUE(ret == 0 || ret == -ETIME) TH_LOG("wait: %s",
						       strerror(-ret));
	if (jerr)
		*jerr = e;
	return status;
}

/* Submit @cb on @q, wait (10 s at most) and expect DONE. */
static void run_job(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		    uint32_t q, struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job = { .queue = q };
	uint32_t status;
	int32_t jerr;

	submit(_metadata, dev, cb, &job);
	status = wait_status(_metadata, dev, q, job.seqno, 10000, &jerr);
	ASSERT_EQ(VTPU_JOB_DONE, status) TH_LOG("job ended %s, error %d",
						vtpu_status_name(status), jerr);
}

/* One small job on @q: x = value (1024 floats), checked. */
static void check_alive(struct __test_metadata *_metadata,
			struct vtpu_dev *dev, uint32_t q, float value)
{
	struct vtpu_cmdbuf cb;
	struct vtpu_bo x;

	bo_new(_metadata, dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, value);
	run_job(_metadata, dev, q, &cb);
	EXPECT_EQ(0, count_not(x.map, value, 1024));
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(dev, &x);
}

/* When a signalled sync_file's (only) fence signalled, ns; -1 if not yet. */
static int64_t fence_ts(int fd)
{
	struct sync_fence_info fi;
	struct sync_file_info info;

	memset(&fi, 0, sizeof(fi));
	memset(&info, 0, sizeof(info));
	info.num_fences = 1;
	info.sync_fence_info = (uintptr_t)&fi;
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) || info.status == 0)
		return -1;
	return (int64_t)fi.timestamp_ns;
}

static int fence_signalled(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* ---- the long job ------------------------------------------------------- */

/* A = B = 1, so C = LONG_N everywhere: a long job's result is checkable. */
struct long_job {
	struct vtpu_bo a, b, c;
	struct vtpu_cmdbuf cb;
};

static void long_job_init(struct __test_metadata *_metadata,
			  struct vtpu_dev *dev, struct long_job *lj)
{
	const uint64_t sz = (uint64_t)LONG_N * LONG_N * 4;
	struct vtpu_gemm_desc g = {
		.m = LONG_N, .n = LONG_N, .k = LONG_N, .alpha = 1.0f,
	};
	size_t i;

	bo_new(_metadata, dev, sz, &lj->a);
	bo_new(_metadata, dev, sz, &lj->b);
	bo_new(_metadata, dev, sz, &lj->c);
	for (i = 0; i < (size_t)LONG_N * LONG_N; i++) {
		((float *)lj->a.map)[i] = 1.0f;
		((float *)lj->b.map)[i] = 1.0f;
	}
	vtpu_cmdbuf_init(&lj->cb);
	g.a_buf = vtpu_cmdbuf_use(&lj->cb, &lj->a);
	g.b_buf = vtpu_cmdbuf_use(&lj->cb, &lj->b);
	g.c_buf = vtpu_cmdbuf_use(&lj->cb, &lj->c);
	vtpu_cmdbuf_gemm(&lj->cb, &g);
}

static void long_job_fini(struct vtpu_dev *dev, struct long_job *lj)
{
	vtpu_cmdbuf_fini(&lj->cb);
	vtpu_bo_destroy(dev, &lj->a);
	vtpu_bo_destroy(dev, &lj->b);
	vtpu_bo_destroy(dev, &lj->c);
}

/* Submit the long job @repeat times over on @q. */
static void long_job_submit(struct __test_metadata *_metadata,
			    struct vtpu_dev *dev, struct long_job *lj,
			    uint32_t q, uint32_t repeat, struct vtpu_job *job)
{
	memset(job, 0, sizeof(*job));
	job->queue = q;
	job->want_out_fence = 1;
	job->repeat = repeat;
	submit(_metadata, dev, &lj->cb, job);
}

/* Milliseconds one 128^3 GEMM takes on this device (run once, timed). */
static double long_job_ms(struct __test_metadata *_metadata,
			  struct vtpu_dev *dev, struct long_job *lj,
			  uint32_t q)
{
	struct vtpu_job job = { .queue = q };
	double t;

	t = now_ms();
	submit(_metadata, dev, &lj->cb, &job);
	EXPECT_EQ(VTPU_JOB_DONE,
		  wait_status(_metadata, dev, q, job.seqno, 30000, NULL));
	t = now_ms() - t;
	EXPECT_EQ(0, count_not(lj->c.map, (float)LONG_N,
			       (size_t)LONG_N * LONG_N));
	return t > 0.01 ? t : 0.01;
}

/* Repeats of the long job that take about @ms (at least 2). */
static uint32_t reps_for(double one_ms, double ms)
{
	double r = ms / one_ms + 1;

	return r < 2 ? 2 : r > 100000 ? 100000 : (uint32_t)r;
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(dev)
{
	struct vtpu_dev *dev;
	uint32_t q;
	long page;
};

FIXTURE_SETUP(dev)
{
	self->page = sysconf(_SC_PAGESIZE);
	self->dev = vtpu_open(DEV0);
	if (!self->dev)
		return;
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &self->q));
}

FIXTURE_TEARDOWN(dev)
{
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

#define NEED_DEV1(d1)                                                          \
	do {                                                                   \
		(d1) = vtpu_open(DEV1);                                        \
		if (!(d1))                                                     \
			SKIP(return, "%s: %s (load vtpu.ko with devices=2)",   \
			     DEV1, strerror(errno));                           \
	} while (0)

/* ---- dma-buf ------------------------------------------------------------ */

TEST_F(dev, dmabuf_cross_device_gemm)
{
	const uint32_t m = 8, n = 16, k = 12;
	struct vtpu_bo a, b, c1, c0;
	struct vtpu_bo_import im = { 0 };
	struct vtpu_gemm_desc g = { .m = m, .n = n, .k = k, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_dev *d1;
	uint64_t used0_before, used1_before, used0, used1;
	float ref[8 * 16];
	void *dmap;
	int fd;

	NEED_DEV();
	NEED_DEV1(d1);
	used0_before = param(_metadata, self->dev, VTPU_PARAM_MEM_USED);
	used1_before = param(_metadata, d1, VTPU_PARAM_MEM_USED);

	/* C lives on vtpu1 and is exported. */
	bo_new(_metadata, d1, 4096, &c1);
	ASSERT_EQ(0, vtpu_bo_export(d1, &c1, &fd));
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, vtpu_bo_import(self->dev, fd, &c0));
	EXPECT_EQ(c1.size, c0.size);
	used0 = param(_metadata, self->dev, VTPU_PARAM_MEM_USED);
	used1 = param(_metadata, d1, VTPU_PARAM_MEM_USED);
	EXPECT_EQ(used0_before, used0)
		TH_LOG("the import must not be charged to the importer");
	EXPECT_EQ(used1_before + c1.size, used1);

	/* Importing it again into the same file gives the same handle. */
	im.fd = fd;
	ASSERT_EQ(0, xioctl(vtpu_fd(self->dev), VTPU_IOCTL_BO_IMPORT, &im));
	EXPECT_EQ(c0.handle, im.handle);
	EXPECT_EQ(c0.size, im.size);

	/* A GEMM on vtpu0 writes it; vtpu1's mapping sees the result. */
	bo_new(_metadata, self->dev, 4096, &a);
	bo_new(_metadata, self->dev, 4096, &b);
	fill_irand(a.map, m * k);
	fill_irand(b.map, k * n);
	memset(c1.map, 0xff, 4096);	/* NaNs: beta 0 must not read them */
	ref_gemm(ref, a.map, b.map, m, n, k);
	vtpu_cmdbuf_init(&cb);
	g.a_buf = vtpu_cmdbuf_use(&cb, &a);
	g.b_buf = vtpu_cmdbuf_use(&cb, &b);
	g.c_buf = vtpu_cmdbuf_use(&cb, &c0);
	vtpu_cmdbuf_gemm(&cb, &g);
	run_job(_metadata, self->dev, self->q, &cb);
	EXPECT_EQ(0, count_diff(c1.map, ref, m * n));
	EXPECT_EQ(0, memcmp(c0.map, c1.map, 4096));

	/* The dma-buf fd itself maps the same pages. */
	dmap = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, dmap) TH_LOG("mmap(dma-buf): %s",
					   strerror(errno));
	EXPECT_EQ(0, memcmp(dmap, c1.map, 4096));
	((float *)dmap)[1000] = 42.0f;
	EXPECT_EQ(42.0f, ((float *)c1.map)[1000]);
	EXPECT_EQ(42.0f, ((float *)c0.map)[1000]);
	/* A private mapping would not be seen by the device: refused. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0));
	munmap(dmap, 4096);

	vtpu_cmdbuf_fini(&cb);
	close(fd);
	vtpu_bo_destroy(self->dev, &a);
	vtpu_bo_destroy(self->dev, &b);
	vtpu_bo_destroy(self->dev, &c0);	/* both imports: one handle */
	vtpu_bo_destroy(d1, &c1);
	EXPECT_EQ(used0_before, param(_metadata, self->dev,
				      VTPU_PARAM_MEM_USED));
	EXPECT_EQ(used1_before, param(_metadata, d1, VTPU_PARAM_MEM_USED));
	vtpu_close(d1);
	TH_LOG("vtpu1 buffer exported, imported into vtpu0 (charged to vtpu1 only), GEMM %ux%ux%u on vtpu0 read back exactly through vtpu1; re-import gives handle %u again; the dma-buf's own mmap shares the bytes; mem_used back on both",
	       m, n, k, c0.handle);
}

TEST_F(dev, dmabuf_bad_args)
{
	struct vtpu_bo_export ex = { 0 };
	struct vtpu_bo_import im = { 0 };
	struct vtpu_bo x;
	int fd0 = vtpu_fd(self->dev), pipefd[2], nullfd, fd;

	NEED_DEV();
	bo_new(_metadata, self->dev, 4096, &x);

	ex.handle = 0xdead;
	ex.flags = O_CLOEXEC;
	EXPECT_EQ(-ENOENT, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	ex.handle = 0;
	EXPECT_EQ(-ENOENT, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	ex.handle = x.handle;
	ex.flags = O_NONBLOCK;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	ex.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	ex.flags = O_CLOEXEC;
	ex.pad = 1;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	/* flags 0: a valid fd without close-on-exec */
	ex.pad = 0;
	ex.flags = 0;
	ASSERT_EQ(0, xioctl(fd0, VTPU_IOCTL_BO_EXPORT, &ex));
	EXPECT_EQ(0, fcntl(ex.fd, F_GETFD) & FD_CLOEXEC);

	/* Import: not a dma-buf, a closed fd, flags, pad. */
	ASSERT_EQ(0, pipe(pipefd));
	im.fd = pipefd[0];
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, nullfd);
	im.fd = nullfd;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	im.fd = fd0;	/* a vtpu device fd is not a dma-buf either */
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	fd = dup(nullfd);
	close(fd);
	im.fd = fd;
	EXPECT_EQ(-EBADF, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	im.fd = -1;
	EXPECT_EQ(-EBADF, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	im.fd = ex.fd;
	im.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	im.flags = 0;
	im.pad = 1;
	EXPECT_EQ(-EINVAL, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	im.pad = 0;
	ASSERT_EQ(0, xioctl(fd0, VTPU_IOCTL_BO_IMPORT, &im));
	EXPECT_EQ(x.handle, im.handle)
		TH_LOG("importing our own buffer must give its own handle");
	/* the library refuses a closed fd the same way */
	EXPECT_EQ(-EBADF, vtpu_bo_import(self->dev, fd, &x));

	close(pipefd[0]);
	close(pipefd[1]);
	close(nullfd);
	close(ex.fd);
	vtpu_bo_destroy(self->dev, &x);
	check_alive(_metadata, self->dev, self->q, 3.0f);
	TH_LOG("export: bad handle ENOENT, unknown flags and pad EINVAL, flags 0 no CLOEXEC; import: pipe, /dev/null, a vtpu fd EINVAL, closed fd EBADF, flags/pad EINVAL, own buffer gives its handle");
}

TEST_F(dev, dmabuf_outlives_exporter)
{
	struct vtpu_dev *exp;
	const char *exp_path = DEV1;
	int exp_index = 1;
	long long used_before, clients_before;
	struct vtpu_bo src, imp, y;
	struct vtpu_cmdbuf cb;
	uint64_t size;
	int fd, i, bad = 0;

	NEED_DEV();
	/* Another device if there is one, else another client of vtpu0. */
	exp = vtpu_open(exp_path);
	if (!exp) {
		exp_path = DEV0;
		exp_index = 0;
		exp = vtpu_open(exp_path);
		ASSERT_NE(NULL, exp);
	}
	used_before = gen_sysfs(exp_index, "mem_used");
	clients_before = gen_sysfs(exp_index, "clients");
	ASSERT_LE(0, used_before);

	bo_new(_metadata, exp, 3 * 4096, &src);
	size = src.size;
	for (i = 0; i < 3 * 1024; i++)
		((float *)src.map)[i] = (float)i;
	ASSERT_EQ(0, vtpu_bo_export(exp, &src, &fd));
	ASSERT_EQ(0, vtpu_bo_import(self->dev, fd, &imp));

	/* The exporter lets go of everything: handle, dma-buf fd, device. */
	EXPECT_EQ(0, vtpu_bo_destroy(exp, &src));
	close(fd);
	vtpu_close(exp);
	EXPECT_EQ(clients_before - 1, sysfs_settle(exp_index, "clients",
						   clients_before - 1));
	EXPECT_EQ(used_before + (long long)size,
		  gen_sysfs(exp_index, "mem_used"))
		TH_LOG("the imported buffer must still be there, charged to its exporter");

	/* The importer still computes on it: y = x, then x[0..1024) = 9. */
	bo_new(_metadata, self->dev, 3 * 4096, &y);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &y), 0,
			 vtpu_cmdbuf_use(&cb, &imp), 0, 3 * 4096);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &imp), 0, 1024, 9.0f);
	run_job(_metadata, self->dev, self->q, &cb);
	for (i = 0; i < 3 * 1024; i++)
		bad += ((float *)y.map)[i] != (float)i;
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, count_not(imp.map, 9.0f, 1024));
	EXPECT_EQ(1024.0f, ((float *)imp.map)[1024]);

	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &y);
	vtpu_bo_destroy(self->dev, &imp);
	EXPECT_EQ(used_before, sysfs_settle(exp_index, "mem_used",
					    used_before));
	TH_LOG("%s's buffer survived its handle, its dma-buf fd and its file; vtpu0 copied and filled it correctly; %s mem_used back to %lld",
	       exp_path, exp_path, used_before);
}

/* ---- repeat and strides --------------------------------------------------- */

/* A raw SUBMIT of @cb on @q (for the checks the library cannot make). */
static void submit_args(struct vtpu_submit *s, const struct vtpu_cmdbuf *cb,
			uint32_t q)
{
	memset(s, 0, sizeof(*s));
	s->cmds_ptr = (uintptr_t)cb->data;
	s->cmds_size = cb->size;
	s->handles_ptr = (uintptr_t)cb->handles;
	s->handle_count = cb->nhandles;
	s->queue_id = q;
	s->in_fence_fd = -1;
}

TEST_F(dev, repeat_strides_dataset)
{
	/* R batches: Y[r] = X[r] * W (W shared), Z[r] = X[r] (a COPY). */
	enum { R = 6, M = 4, K = 8, N = 8 };
	const uint64_t xb = M * K * 4, yb = M * N * 4;
	struct vtpu_bo x, w, y, z;
	struct vtpu_gemm_desc g = { .m = M, .n = N, .k = K, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q, .repeat = R };
	uint64_t strides[4];
	float ref[M * N];
	uint32_t status, r;
	int bad = 0, badz = 0, plan;

	NEED_DEV();
	bo_new(_metadata, self->dev, R * xb, &x);
	bo_new(_metadata, self->dev, K * N * 4, &w);
	bo_new(_metadata, self->dev, R * yb, &y);
	bo_new(_metadata, self->dev, R * xb, &z);
	fill_irand(x.map, R * M * K);
	fill_irand(w.map, K * N);
	memset(y.map, 0xff, R * yb);

	vtpu_cmdbuf_init(&cb);
	g.a_buf = vtpu_cmdbuf_use(&cb, &x);
	g.b_buf = vtpu_cmdbuf_use(&cb, &w);
	g.c_buf = vtpu_cmdbuf_use(&cb, &y);
	vtpu_cmdbuf_gemm(&cb, &g);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &z), 0, g.a_buf, 0, xb);
	strides[g.a_buf] = xb;
	strides[g.b_buf] = 0;
	strides[g.c_buf] = yb;
	strides[3] = xb;
	job.strides = strides;

	/* Plan 0: one job of R iterations; plan 1: 2, then R - 2 from 2 on. */
	for (plan = 0; plan < 2; plan++) {
		memset(y.map, 0xff, R * yb);
		memset(z.map, 0, z.size);
		job.first_iter = 0;
		job.repeat = plan ? 2 : R;
		submit(_metadata, self->dev, &cb, &job);
		if (plan) {
			job.first_iter = 2;
			job.repeat = R - 2;
			submit(_metadata, self->dev, &cb, &job);
		}
		status = wait_status(_metadata, self->dev, self->q, job.seqno,
				     10000, NULL);
		ASSERT_EQ(VTPU_JOB_DONE, status);

		for (r = 0; r < R; r++) {
			int br;

			ref_gemm(ref, (float *)x.map + r * M * K, w.map, M, N,
				 K);
			br = count_diff((float *)y.map + r * M * N, ref, M * N);
			if (br)
				TH_LOG("plan %d batch %u: %d wrong elements",
				       plan, r, br);
			bad += br;
			badz += memcmp((char *)z.map + r * xb,
				       (char *)x.map + r * xb, xb) != 0;
		}
		/* nothing past the last batch was touched */
		EXPECT_EQ(0, count_not((float *)z.map + R * M * K, 0.0f,
				       (z.size - R * xb) / 4));
	}
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, badz);

	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	vtpu_bo_destroy(self->dev, &w);
	vtpu_bo_destroy(self->dev, &y);
	vtpu_bo_destroy(self->dev, &z);
	TH_LOG("one submit, repeat=%d, strides {%llu, 0, %llu, %llu}: every batch's GEMM %dx%dx%d and COPY exact; the same as two jobs (first_iter 0 and 2)",
	       R, (unsigned long long)xb, (unsigned long long)yb,
	       (unsigned long long)xb, M, N, K);
}

TEST_F(dev, repeat_no_strides_accumulates)
{
	enum { R = 5, M = 8, K = 8, N = 8 };
	struct vtpu_bo a, b, c;
	struct vtpu_gemm_desc g = {
		.m = M, .n = N, .k = K, .alpha = 1.0f, .beta = 1.0f,
	};
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q, .repeat = R };
	float ref[M * N];
	uint32_t status;
	int i;

	NEED_DEV();
	bo_new(_metadata, self->dev, 4096, &a);
	bo_new(_metadata, self->dev, 4096, &b);
	bo_new(_metadata, self->dev, 4096, &c);
	fill_irand(a.map, M * K);
	fill_irand(b.map, K * N);
	ref_gemm(ref, a.map, b.map, M, N, K);
	for (i = 0; i < M * N; i++)
		ref[i] *= R;

	vtpu_cmdbuf_init(&cb);
	g.a_buf = vtpu_cmdbuf_use(&cb, &a);
	g.b_buf = vtpu_cmdbuf_use(&cb, &b);
	g.c_buf = vtpu_cmdbuf_use(&cb, &c);
	vtpu_cmdbuf_gemm(&cb, &g);
	submit(_metadata, self->dev, &cb, &job);
	status = wait_status(_metadata, self->dev, self->q, job.seqno, 10000,
			     NULL);
	ASSERT_EQ(VTPU_JOB_DONE, status);
	EXPECT_EQ(0, count_diff(c.map, ref, M * N));

	/* repeat 0 and 1 both mean once */
	memset(c.map, 0, 4096);
	job.repeat = 0;
	run_job(_metadata, self->dev, self->q, &cb);
	ref_gemm(ref, a.map, b.map, M, N, K);
	EXPECT_EQ(0, count_diff(c.map, ref, M * N));
	job.repeat = 1;
	submit(_metadata, self->dev, &cb, &job);
	EXPECT_EQ(VTPU_JOB_DONE, wait_status(_metadata, self->dev, self->q,
					     job.seqno, 10000, NULL));
	for (i = 0; i < M * N; i++)
		ref[i] *= 2;
	EXPECT_EQ(0, count_diff(c.map, ref, M * N));

	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &a);
	vtpu_bo_destroy(self->dev, &b);
	vtpu_bo_destroy(self->dev, &c);
	TH_LOG("repeat=%d without strides: C += A*B each time gives exactly %dx the product; repeat 0 and 1 run once",
	       R, R);
}

TEST_F(dev, repeat_bad_strides)
{
	/* Buffers: 0 = x (8 KiB), 1 = w, 2 = y (8 KiB); GEMM then COPY. */
	struct vtpu_bo x, w, y;
	struct vtpu_gemm_desc g = { .m = 4, .n = 4, .k = 4, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = self->q, .repeat = 9 };
	uint64_t strides[3] = { 0, 0, 0 };
	char msg[256];
	int ret;

	NEED_DEV();
	bo_new(_metadata, self->dev, 8192, &x);
	bo_new(_metadata, self->dev, 4096, &w);
	bo_new(_metadata, self->dev, 8192, &y);
	vtpu_cmdbuf_init(&cb);
	g.a_buf = vtpu_cmdbuf_use(&cb, &x);
	g.b_buf = vtpu_cmdbuf_use(&cb, &w);
	g.c_buf = vtpu_cmdbuf_use(&cb, &y);
	vtpu_cmdbuf_gemm(&cb, &g);		/* C: y[0, 64) */
	vtpu_cmdbuf_copy(&cb, g.c_buf, 4096, g.a_buf, 0, 1024); /* y[4096, 5120) */
	ASSERT_EQ(3, cb.nhandles);
	job.strides = strides;

	/* Not a multiple of 4: the buffer index, not a command, is named. */
	strides[2] = 100 + 2;
	ret = vtpu_submit(self->dev, &cb, &job);
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_EQ(VTPU_ERR_BAD_STRIDE_REPEAT, job.error.reason);
	EXPECT_EQ(2, job.error.cmd);
	vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
	EXPECT_NE(NULL, strstr(msg, "buffer 2"));
	EXPECT_NE(NULL, strstr(msg, "multiple of 4"));
	TH_LOG("stride 102: %s", msg);

	/*
	 * (repeat - 1) * stride reaches past the buffer: the kernel says
	 * BAD_STRIDE_REPEAT for that buffer (vtpu_job_get_strides()), before
	 * any command is looked at.
	 */
	strides[2] = 1024;	/* 8 * 1024 = 8192: the last view is empty */
	ret = vtpu_submit(self->dev, &cb, &job);
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_EQ(VTPU_ERR_BAD_STRIDE_REPEAT, job.error.reason);
	EXPECT_EQ(2, job.error.cmd);
	vtpu_job_strerror(&cb, &job, msg, sizeof(msg));
	EXPECT_NE(NULL, strstr(msg, "8192"));
	TH_LOG("stride 1024 x 9 iterations over 8192 bytes: %s", msg);

	strides[2] = 0;
	strides[0] = 1ull << 62;	/* (repeat - 1) * stride overflows */
	ret = vtpu_submit(self->dev, &cb, &job);
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_EQ(VTPU_ERR_BAD_STRIDE_REPEAT, job.error.reason);
	EXPECT_EQ(0, job.error.cmd);

	/*
	 * The last view still has bytes, but an operand crosses its end:
	 * that is the command's OUT_OF_BOUNDS. y's last view with stride 384
	 * is 8192 - 8 * 384 = 5120 bytes: the COPY (command 1) ends exactly
	 * there, so 388 makes it cross; the GEMM's C still fits.
	 */
	strides[0] = 0;
	strides[2] = 384;
	ret = vtpu_submit(self->dev, &cb, &job);
	EXPECT_EQ(0, ret) TH_LOG("a stride whose last iteration ends exactly at the end: %s",
				 vtpu_job_strerror(&cb, &job, msg, sizeof(msg)));
	if (!ret)
		EXPECT_EQ(VTPU_JOB_DONE, wait_status(_metadata, self->dev,
						     self->q, job.seqno, 10000,
						     NULL));
	strides[2] = 388;
	ret = vtpu_submit(self->dev, &cb, &job);
	EXPECT_EQ(-EINVAL, ret);
	EXPECT_EQ(VTPU_ERR_OUT_OF_BOUNDS, job.error.reason);
	EXPECT_EQ(1, job.error.cmd);
	EXPECT_EQ(VTPU_OPERAND_DST, job.error.operand);
	TH_LOG("stride 388: %s", vtpu_job_strerror(&cb, &job, msg,
						    sizeof(msg)));

	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	vtpu_bo_destroy(self->dev, &w);
	vtpu_bo_destroy(self->dev, &y);
	check_alive(_metadata, self->dev, self->q, 4.0f);
	TH_LOG("bad strides: unaligned and walking off give BAD_STRIDE_REPEAT naming the buffer, an operand crossing the last view gives OUT_OF_BOUNDS naming the command; an exact fit runs");
}

TEST_F(dev, repeat_bad_args)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_submit s, good;
	uint64_t max_repeat, strides[1] = { 0 };
	int fd = vtpu_fd(self->dev);
	void *hole;

	NEED_DEV();
	max_repeat = param(_metadata, self->dev, VTPU_PARAM_MAX_REPEAT);
	EXPECT_LE(2, max_repeat);
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 16, 1.0f);
	submit_args(&good, &cb, self->q);

	s = good;
	s.repeat = 2;
	s.strides_ptr = (uintptr_t)strides;
	EXPECT_EQ(0, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));

	if (max_repeat < UINT32_MAX) {
		s = good;
		s.repeat = (uint32_t)max_repeat + 1;
		EXPECT_EQ(-EINVAL, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
		EXPECT_EQ(VTPU_ERR_NONE, s.error_reason);
	}
	s = good;
	s.repeat = UINT32_MAX;
	EXPECT_EQ(-EINVAL, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));

	/* first_iter means nothing without strides */
	s = good;
	s.first_iter = 1;
	EXPECT_EQ(-EINVAL, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	s.repeat = 4;
	EXPECT_EQ(-EINVAL, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	/* with strides, any repeat (0 and 1: once) and first_iter go */
	s = good;
	s.strides_ptr = (uintptr_t)strides;
	EXPECT_EQ(0, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	s.repeat = 1;
	s.first_iter = 1000;
	EXPECT_EQ(0, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	/* first_iter counts towards walking off: 4 * (2^32 - 1) > 4096 */
	strides[0] = 4;
	s.first_iter = UINT32_MAX;
	EXPECT_EQ(-EINVAL, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	EXPECT_EQ(VTPU_ERR_BAD_STRIDE_REPEAT, s.error_reason);
	EXPECT_EQ(0, s.error_cmd);
	strides[0] = 0;

	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	s = good;
	s.repeat = 2;
	s.strides_ptr = (uintptr_t)hole;
	EXPECT_EQ(-EFAULT, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	s.strides_ptr = 8;
	EXPECT_EQ(-EFAULT, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	s.strides_ptr = 0xffff800000000000ull;
	EXPECT_EQ(-EFAULT, xioctl(fd, VTPU_IOCTL_SUBMIT, &s));
	munmap(hole, 4096);

	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	check_alive(_metadata, self->dev, self->q, 5.0f);
	TH_LOG("repeat past MAX_REPEAT (%llu) and first_iter without strides give EINVAL; strides with repeat 0/1 and a first_iter run, a first_iter walking off gives BAD_STRIDE_REPEAT; bad strides pointers EFAULT",
	       (unsigned long long)max_repeat);
}

/*
 * The header's versioning rule: a struct shorter than today's is accepted
 * if it holds every field of the first version. SUBMIT's first version
 * ended at error_reason (64 bytes); repeat, first_iter and strides_ptr
 * came later.
 */
TEST_F(dev, submit_first_version_struct)
{
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_submit s;
	const size_t v1 = offsetof(struct vtpu_submit, repeat);
	unsigned long nr = _IOC(_IOC_READ | _IOC_WRITE, VTPU_IOCTL_BASE,
				_IOC_NR(VTPU_IOCTL_SUBMIT), v1);
	int ret;

	NEED_DEV();
	ASSERT_EQ(64, v1);
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, 6.0f);
	submit_args(&s, &cb, self->q);
	s.repeat = 0xdeadbeef;	/* beyond the 72 bytes: must not be read */
	ret = xioctl(vtpu_fd(self->dev), nr, &s);
	EXPECT_EQ(0, ret) TH_LOG("a first-version (%zu-byte) SUBMIT gave %s", v1,
				 strerror(-ret));
	if (!ret) {
		EXPECT_EQ(VTPU_JOB_DONE, wait_status(_metadata, self->dev,
						     self->q, s.seqno, 10000,
						     NULL));
		EXPECT_EQ(0, count_not(x.map, 6.0f, 1024));
	}
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	TH_LOG("a %zu-byte (first version) SUBMIT: %s", v1,
	       ret ? strerror(-ret) : "accepted and ran");
}

/* The library's libbpf-style opts: sized, zero tails only. */
TEST_F(dev, queue_opts)
{
	struct {
		struct vtpu_queue_opts o;
		uint64_t tail;
	} big;
	struct vtpu_queue_opts small = { .sz = 4 };
	uint32_t q;

	NEED_DEV();
	EXPECT_EQ(0, vtpu_queue_create_opts(self->dev, NULL, &q));
	check_alive(_metadata, self->dev, q, 1.0f);
	EXPECT_EQ(-EINVAL, vtpu_queue_create_opts(self->dev, &small, &q));
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.priority = VTPU_QUEUE_PRIORITY_HIGH;
	big.o.timeout_ms = 1000;
	EXPECT_EQ(0, vtpu_queue_create_opts(self->dev, &big.o, &q));
	big.tail = 1;
	EXPECT_EQ(-EINVAL, vtpu_queue_create_opts(self->dev, &big.o, &q));
	big.tail = 0;
	big.o.priority = VTPU_QUEUE_PRIORITY_HIGH + 1;
	EXPECT_EQ(-EINVAL, vtpu_queue_create_opts(self->dev, &big.o, &q));
	/* an older, shorter opts: the missing fields take their defaults */
	small.sz = sizeof(size_t);
	EXPECT_EQ(0, vtpu_queue_create_opts(self->dev, &small, &q));
	check_alive(_metadata, self->dev, q, 2.0f);
	TH_LOG("queue opts: NULL and a bare sz take the defaults, a longer struct with a zero tail works, a non-zero tail, a too-small sz and a bad priority give EINVAL");
}

/* ---- watchdog --------------------------------------------------------------- */

TEST_F_TIMEOUT(dev, watchdog_other_client_completes, 120)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 50);
	struct long_job lj;
	struct vtpu_job job;
	struct vtpu_dev *other;
	struct vtpu_bo a, b, c;
	struct vtpu_gemm_desc g = { .m = 8, .n = 8, .k = 8, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_job oj = { .want_out_fence = 1 };
	uint32_t tq, oq, status;
	float ref[64];
	double one, t0, tdone;
	int32_t jerr;
	int64_t ts;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, self->q);

	/* Another client, with a small GEMM ready to go. */
	other = vtpu_open(DEV0);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, vtpu_queue_create(other, VTPU_QUEUE_PRIORITY_NORMAL, &oq));
	bo_new(_metadata, other, 4096, &a);
	bo_new(_metadata, other, 4096, &b);
	bo_new(_metadata, other, 4096, &c);
	fill_irand(a.map, 64);
	fill_irand(b.map, 64);
	ref_gemm(ref, a.map, b.map, 8, 8, 8);
	vtpu_cmdbuf_init(&cb);
	g.a_buf = vtpu_cmdbuf_use(&cb, &a);
	g.b_buf = vtpu_cmdbuf_use(&cb, &b);
	g.c_buf = vtpu_cmdbuf_use(&cb, &c);
	vtpu_cmdbuf_gemm(&cb, &g);
	oj.queue = oq;

	/* Minutes of work on a 50 ms queue; the other client right behind. */
	t0 = now_ms();
	long_job_submit(_metadata, self->dev, &lj, tq, 100000, &job);
	submit(_metadata, other, &cb, &oj);

	status = wait_status(_metadata, self->dev, tq, job.seqno, 20000,
			     &jerr);
	tdone = now_ms() - t0;
	EXPECT_EQ(VTPU_JOB_TIMEDOUT, status) TH_LOG("ended %s after %.0f ms",
						    vtpu_status_name(status),
						    tdone);
	EXPECT_EQ(-ETIMEDOUT, jerr);
	EXPECT_EQ(-ETIMEDOUT, vtpu_fence_wait(job.out_fence, 0));
	ts = fence_ts(job.out_fence);
	if (status == VTPU_JOB_PENDING)	/* do not leave it running */
		vtpu_queue_destroy(self->dev, tq);

	EXPECT_EQ(0, vtpu_fence_wait(oj.out_fence, 20000));
	EXPECT_EQ(0, count_diff(c.map, ref, 64));

	/* The same queue works again. */
	if (status != VTPU_JOB_PENDING)
		check_alive(_metadata, self->dev, tq, 8.0f);

	close(job.out_fence);
	close(oj.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(other, &a);
	vtpu_bo_destroy(other, &b);
	vtpu_bo_destroy(other, &c);
	vtpu_close(other);
	long_job_fini(self->dev, &lj);
	TH_LOG("a 100000 x 128^3 GEMM job (%.1f ms each) on a 50 ms queue ended %s (error %d) after %.0f ms (fence at %.0f ms); another client's GEMM then ran correctly, and the queue ran a FILL",
	       one, vtpu_status_name(status), jerr, tdone,
	       ts > 0 ? ts / 1e6 - t0 : -1.0);
}

/*
 * One instruction of absurd length on a 200 ms queue: a max-pool of 256
 * outputs whose every window scans 16M pixels of a 4111 x 4111 image, and
 * a gradient whose every pixel gathers from up to 65536 windows. The
 * engine runs such windows in bounded steps (VTPU_OPS_CHUNK / 256
 * positions a call), and the watchdog checks between steps, so the job
 * ends TIMEDOUT soon after its deadline. Before, the max-pool was one
 * call of 4G compares, minutes in this guest: a soft lockup.
 */
#define WATCHDOG_SLACK_MS 2000

TEST_F_TIMEOUT(dev, huge_window_times_out_promptly, 300)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 200);
	const struct vtpu_window wins[2] = {
		{ .n = 1, .h = 4111, .w = 4111, .c = 1, .kh = 4096,
		  .kw = 4096, .stride_h = 1, .stride_w = 1 },
		{ .n = 1, .h = 256, .w = 256, .c = 1, .kh = 256, .kw = 256,
		  .stride_h = 1, .stride_w = 1, .pad_h = 255, .pad_w = 255 },
	};
	const char *const names[2] = { "MAXPOOL", "MAXPOOL_GRAD" };
	uint32_t tq, status, grad;
	int32_t jerr;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	for (grad = 0; grad < 2; grad++) {
		const struct vtpu_window *w = &wins[grad];
		uint64_t oh = w->h + 2 * w->pad_h - w->kh + 1;
		uint64_t nout = oh * oh;
		struct vtpu_job job = { .queue = tq };
		struct vtpu_bo x, y, idx;
		struct vtpu_cmdbuf cb;
		struct vtpu_ref rx, ry, ri;
		double t0, dt;

		bo_new(_metadata, self->dev, (uint64_t)w->h * w->w * 4, &x);
		bo_new(_metadata, self->dev, nout * 4, &y);
		bo_new(_metadata, self->dev, nout * 4, &idx);
		vtpu_cmdbuf_init(&cb);
		rx = VTPU_REF(vtpu_cmdbuf_use(&cb, &x), 0);
		ry = VTPU_REF(vtpu_cmdbuf_use(&cb, &y), 0);
		ri = VTPU_REF(vtpu_cmdbuf_use(&cb, &idx), 0);
		if (grad)
			vtpu_cmdbuf_maxpool_grad(&cb, w, ry, ri, rx);
		else
			vtpu_cmdbuf_maxpool(&cb, w, rx, ry, ri);
		t0 = now_ms();
		submit(_metadata, self->dev, &cb, &job);
		status = wait_status(_metadata, self->dev, tq, job.seqno,
				     200000, &jerr);
		dt = now_ms() - t0;
		EXPECT_EQ(VTPU_JOB_TIMEDOUT, status)
		TH_LOG("%s ended %s", names[grad], vtpu_status_name(status));
		EXPECT_GT(200 + WATCHDOG_SLACK_MS, dt)
		TH_LOG("%s on a 200 ms queue ended after %.0f ms",
		       names[grad], dt);
		TH_LOG("%s, a %ux%u window: TIMEDOUT %.0f ms after submit on a "
		       "200 ms queue", names[grad], w->kh, w->kw, dt);
		vtpu_cmdbuf_fini(&cb);
		vtpu_bo_destroy(self->dev, &x);
		vtpu_bo_destroy(self->dev, &y);
		vtpu_bo_destroy(self->dev, &idx);
	}
	check_alive(_metadata, self->dev, tq, 8.0f);
}

/* ---- in-fences --------------------------------------------------------------- */

static int debugfs_ready(void)
{
	if (access(DEBUGFS "/vtpu", F_OK) == 0)
		return 1;
	mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	return access(DEBUGFS "/vtpu", F_OK) == 0;
}

/* Is @var "1": the runner loaded what a test would otherwise skip without? */
static int expected(const char *var)
{
	const char *v = getenv(var);

	return v && !strcmp(v, "1");
}

/* A sw_sync timeline fd, or -1 (no debugfs or no CONFIG_SW_SYNC). */
static int sw_sync_timeline(void)
{
	debugfs_ready();
	return open(DEBUGFS "/sync/sw_sync", O_RDWR | O_CLOEXEC);
}

static int sw_sync_fence(int tl, uint32_t value)
{
	struct sw_sync_create_fence_data d = { .value = value };

	strcpy(d.name, "vtpu-test");
	return ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &d) ? -1 : d.fence;
}

TEST_F_TIMEOUT(dev, in_fence_sw_sync, 60)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 100, .in_fence_timeout_ms = 100);
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_job j1 = { .in_fence = -1 }, j2 = { .in_fence = -1 };
	uint32_t tq, status, one = 1;
	int tl, never, later;
	int32_t jerr;
	double t0, t1;

	NEED_DEV();
	tl = sw_sync_timeline();
	/* make check loads it in the 6.1 guest: there, missing is a failure */
	if (tl < 0 && expected("VTPU_EXPECT_SW_SYNC"))
		ASSERT_LE(0, tl) TH_LOG("VTPU_EXPECT_SW_SYNC, but no sw_sync: %s",
					strerror(errno));
	if (tl < 0)
		SKIP(return, "no sw_sync (CONFIG_SW_SYNC, debugfs): %s",
		     strerror(errno));
	never = sw_sync_fence(tl, 100);
	later = sw_sync_fence(tl, 1);
	ASSERT_LE(0, never);
	ASSERT_LE(0, later);
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, 2.0f);

	/* Gated on a fence that never signals: its in-fence bound ends it. */
	j1.queue = tq;
	j1.in_fence = never;
	t0 = now_ms();
	submit(_metadata, self->dev, &cb, &j1);
	status = wait_status(_metadata, self->dev, tq, j1.seqno, 10000, &jerr);
	t0 = now_ms() - t0;
	EXPECT_EQ(VTPU_JOB_TIMEDOUT, status);
	EXPECT_EQ(-ETIMEDOUT, jerr);
	EXPECT_EQ(0, count_not(x.map, 0.0f, 1024)) TH_LOG("it ran anyway");

	/* Gated on a fence signalled later: waits, then runs. */
	j2.queue = self->q;
	j2.in_fence = later;
	submit(_metadata, self->dev, &cb, &j2);
	usleep(200000);
	EXPECT_EQ(VTPU_JOB_PENDING, wait_status(_metadata, self->dev, self->q,
						j2.seqno, 0, NULL));
	EXPECT_EQ(0, count_not(x.map, 0.0f, 1024));
	t1 = now_ms();
	ASSERT_EQ(0, ioctl(tl, SW_SYNC_IOC_INC, &one));
	EXPECT_EQ(VTPU_JOB_DONE, wait_status(_metadata, self->dev, self->q,
					     j2.seqno, 10000, NULL));
	t1 = now_ms() - t1;
	EXPECT_EQ(0, count_not(x.map, 2.0f, 1024));

	close(never);
	close(later);
	close(tl);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	TH_LOG("sw_sync: a never-signalled in-fence timed out after %.0f ms on a 100 ms queue without running; a fence signalled after 200 ms released its job %.1f ms later",
	       t0, t1);
}

/*
 * Without sw_sync: a fence that does not signal for the test's duration
 * is a long job's on /dev/vtpu1 (vtpu0's dispatcher stays free to watch
 * the gated job's deadline), shared with vtpu0 through a dma-buf.
 */
TEST_F_TIMEOUT(dev, in_fence_blocked_by_other_device, 120)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 100, .in_fence_timeout_ms = 100);
	struct vtpu_dev *d1;
	struct long_job lj;
	struct vtpu_job blk, blk2, j1 = { 0 }, j2 = { 0 };
	struct vtpu_bo x1, x0, y;
	struct vtpu_cmdbuf cb, cbb;
	uint32_t q1, tq, status;
	int32_t jerr;
	double one, t0;
	int fd, signalled;

	NEED_DEV();
	NEED_DEV1(d1);
	ASSERT_EQ(0, vtpu_queue_create(d1, VTPU_QUEUE_PRIORITY_NORMAL, &q1));
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	long_job_init(_metadata, d1, &lj);
	one = long_job_ms(_metadata, d1, &lj, q1);

	/* x lives on vtpu1; vtpu0 copies it into y once the blocker is done. */
	bo_new(_metadata, d1, 4096, &x1);
	ASSERT_EQ(0, vtpu_bo_export(d1, &x1, &fd));
	ASSERT_EQ(0, vtpu_bo_import(self->dev, fd, &x0));
	close(fd);
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &y), 0,
			 vtpu_cmdbuf_use(&cb, &x0), 0, 4096);

	/* A blocker of ~100 s: j1 (100 ms in-fence bound) gives up waiting. */
	long_job_submit(_metadata, d1, &lj, q1, reps_for(one, 100000), &blk);
	j1.queue = tq;
	j1.in_fence = blk.out_fence;
	t0 = now_ms();
	submit(_metadata, self->dev, &cb, &j1);
	status = wait_status(_metadata, self->dev, tq, j1.seqno, 10000, &jerr);
	t0 = now_ms() - t0;
	EXPECT_EQ(VTPU_JOB_TIMEDOUT, status);
	EXPECT_EQ(-ETIMEDOUT, jerr);
	EXPECT_FALSE(fence_signalled(blk.out_fence));
	/* cancel the blocker: destroying its queue stops it */
	EXPECT_EQ(0, vtpu_queue_destroy(d1, q1));
	EXPECT_EQ(-ECANCELED, vtpu_fence_wait(blk.out_fence, 10000));
	close(blk.out_fence);

	/*
	 * A blocker of ~300 ms that ends well, then writes x = 3: the gated
	 * job runs after it and copies the 3s.
	 */
	ASSERT_EQ(0, vtpu_queue_create(d1, VTPU_QUEUE_PRIORITY_NORMAL, &q1));
	vtpu_cmdbuf_init(&cbb);
	{
		struct vtpu_gemm_desc g = {
			.m = LONG_N, .n = LONG_N, .k = LONG_N, .alpha = 1.0f,
		};

		g.a_buf = vtpu_cmdbuf_use(&cbb, &lj.a);
		g.b_buf = vtpu_cmdbuf_use(&cbb, &lj.b);
		g.c_buf = vtpu_cmdbuf_use(&cbb, &lj.c);
		vtpu_cmdbuf_gemm(&cbb, &g);
	}
	vtpu_cmdbuf_fill(&cbb, vtpu_cmdbuf_use(&cbb, &x1), 0, 1024, 3.0f);
	memset(&blk2, 0, sizeof(blk2));
	blk2.queue = q1;
	blk2.want_out_fence = 1;
	blk2.repeat = reps_for(one, 300);
	submit(_metadata, d1, &cbb, &blk2);
	j2.queue = self->q;
	j2.in_fence = blk2.out_fence;
	j2.want_out_fence = 1;
	submit(_metadata, self->dev, &cb, &j2);
	usleep(50000);
	/*
	 * j2 has not run while the blocker still runs. (Read in this
	 * order: j2 signalled implies the blocker was first. The blocker
	 * may be done already where the device's workers keep the only
	 * CPU, as under User-Mode Linux.)
	 */
	signalled = fence_signalled(j2.out_fence);
	EXPECT_TRUE(!signalled || fence_signalled(blk2.out_fence));
	EXPECT_EQ(0, vtpu_fence_wait(j2.out_fence, 30000));
	EXPECT_TRUE(fence_signalled(blk2.out_fence));
	EXPECT_LE(fence_ts(blk2.out_fence), fence_ts(j2.out_fence));
	EXPECT_EQ(0, count_not(y.map, 3.0f, 1024))
		TH_LOG("the gated COPY ran before vtpu1's FILL");

	close(blk2.out_fence);
	close(j2.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_fini(&cbb);
	vtpu_bo_destroy(self->dev, &y);
	vtpu_bo_destroy(self->dev, &x0);
	vtpu_bo_destroy(d1, &x1);
	long_job_fini(d1, &lj);
	vtpu_close(d1);
	TH_LOG("gated on a ~100 s vtpu1 job: TIMEDOUT after %.0f ms on a 100 ms queue without running; gated on a vtpu1 job that ends: ran after it and saw its output",
	       t0);
}

TEST_F_TIMEOUT(dev, in_fence_failed_dependency, 60)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 50);
	struct long_job lj;
	struct vtpu_job j1, j2 = { 0 };
	struct vtpu_bo y;
	struct vtpu_cmdbuf cb;
	uint32_t tq, q2, s1, s2;
	int32_t e1, e2;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &q2));
	long_job_init(_metadata, self->dev, &lj);
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &y), 0, 1024, 1.0f);

	long_job_submit(_metadata, self->dev, &lj, tq, 100000, &j1);
	j2.queue = q2;	/* default watchdog: only the dependency fails */
	j2.in_fence = j1.out_fence;
	submit(_metadata, self->dev, &cb, &j2);
	s1 = wait_status(_metadata, self->dev, tq, j1.seqno, 20000, &e1);
	s2 = wait_status(_metadata, self->dev, q2, j2.seqno, 20000, &e2);
	EXPECT_EQ(VTPU_JOB_TIMEDOUT, s1);
	/* a failed dependency cancels the job: its own watchdog never ran */
	EXPECT_EQ(VTPU_JOB_CANCELLED, s2);
	EXPECT_EQ(-ECANCELED, e2);
	EXPECT_EQ(0, count_not(y.map, 0.0f, 1024)) TH_LOG("job 2 ran");
	if (s1 == VTPU_JOB_PENDING)
		vtpu_queue_destroy(self->dev, tq);

	close(j1.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &y);
	long_job_fini(self->dev, &lj);
	TH_LOG("job 1 %s (%d); job 2 gated on it ended %s (%d) without running",
	       vtpu_status_name(s1), e1, vtpu_status_name(s2), e2);
}

/* ---- fairness ------------------------------------------------------------------ */

#define FAIR_A 6
#define FAIR_B 3

TEST_F_TIMEOUT(dev, fairness_round_robin, 120)
{
	struct vtpu_dev *b;
	struct long_job lj;
	struct vtpu_job ja[FAIR_A], jb[FAIR_B];
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	int64_t ta[FAIR_A], tb[FAIR_B], tb0;
	uint32_t qb, reps;
	char order[FAIR_A + FAIR_B + 1];
	int i, ia, ib, n, a_before_last_b = 0;
	double one;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, self->q);
	reps = reps_for(one, 150);

	b = vtpu_open(DEV0);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, vtpu_queue_create(b, VTPU_QUEUE_PRIORITY_NORMAL, &qb));
	bo_new(_metadata, b, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, 1.0f);

	/* A: a backlog of long jobs; B: short jobs, queued right after. */
	for (i = 0; i < FAIR_A; i++)
		long_job_submit(_metadata, self->dev, &lj, self->q, reps,
				&ja[i]);
	/* fence timestamps are CLOCK_MONOTONIC ns, as now_ms() reads */
	tb0 = (int64_t)(now_ms() * 1e6);
	for (i = 0; i < FAIR_B; i++) {
		memset(&jb[i], 0, sizeof(jb[i]));
		jb[i].queue = qb;
		jb[i].want_out_fence = 1;
		submit(_metadata, b, &cb, &jb[i]);
	}
	for (i = 0; i < FAIR_A; i++)
		EXPECT_EQ(0, vtpu_fence_wait(ja[i].out_fence, 60000));
	for (i = 0; i < FAIR_B; i++)
		EXPECT_EQ(0, vtpu_fence_wait(jb[i].out_fence, 60000));

	/* The completion order, from the fences' timestamps. */
	for (i = 0; i < FAIR_A; i++)
		ta[i] = fence_ts(ja[i].out_fence);
	for (i = 0; i < FAIR_B; i++)
		tb[i] = fence_ts(jb[i].out_fence);
	for (ia = ib = n = 0; ia < FAIR_A || ib < FAIR_B;) {
		if (ib < FAIR_B && (ia == FAIR_A || tb[ib] < ta[ia]))
			order[n++] = 'B', ib++;
		else
			order[n++] = 'A', ia++;
	}
	order[n] = '\0';
	/*
	 * Round-robin: from B's arrival, the A job running then, B1, A, B2,
	 * A, B3: at most FAIR_B A jobs end between B's arrival and B's last
	 * (on a slow kernel A1 may be over before B arrives: AABABABAA).
	 */
	for (i = 0; i < FAIR_A; i++)
		a_before_last_b += ta[i] > tb0 && ta[i] < tb[FAIR_B - 1];
	EXPECT_GE(FAIR_B, a_before_last_b) TH_LOG("order %s", order);
	EXPECT_LT(tb[FAIR_B - 1], ta[FAIR_A - 1]);
	for (i = 1; i < FAIR_B; i++)
		EXPECT_LT(tb[i - 1], tb[i]);
	for (i = 1; i < FAIR_A; i++)
		EXPECT_LT(ta[i - 1], ta[i]);

	for (i = 0; i < FAIR_A; i++)
		close(ja[i].out_fence);
	for (i = 0; i < FAIR_B; i++)
		close(jb[i].out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(b, &x);
	vtpu_close(b);
	long_job_fini(self->dev, &lj);
	TH_LOG("client A: %d jobs of %u x 128^3 GEMM (~%.0f ms each), client B: %d FILLs queued after them; completion order %s (%d A jobs ended between B's arrival and B's last)",
	       FAIR_A, reps, reps * one, FAIR_B, order, a_before_last_b);
}

TEST_F_TIMEOUT(dev, priority_high_overtakes, 120)
{
	struct long_job lj;
	struct vtpu_job ja[4], jh = { .want_out_fence = 1 };
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	struct vtpu_dev *h;
	uint32_t qh, reps;
	int i, done_at_submit = 0, a_before_h = 0;
	int64_t th;
	double one;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, self->q);
	reps = reps_for(one, 150);
	h = vtpu_open(DEV0);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, vtpu_queue_create(h, VTPU_QUEUE_PRIORITY_HIGH, &qh));
	bo_new(_metadata, h, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, 1.0f);

	for (i = 0; i < 4; i++)
		long_job_submit(_metadata, self->dev, &lj, self->q, reps,
				&ja[i]);
	usleep(20000);	/* let A's first job start */
	for (i = 0; i < 4; i++)
		done_at_submit += fence_signalled(ja[i].out_fence);
	jh.queue = qh;
	submit(_metadata, h, &cb, &jh);
	EXPECT_EQ(0, vtpu_fence_wait(jh.out_fence, 60000));
	th = fence_ts(jh.out_fence);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, vtpu_fence_wait(ja[i].out_fence, 60000));
		a_before_h += fence_ts(ja[i].out_fence) < th;
	}
	/* only the job running at submit time may finish first */
	EXPECT_GE(done_at_submit + 1, a_before_h);
	EXPECT_EQ(0, count_not(x.map, 1.0f, 1024));

	for (i = 0; i < 4; i++)
		close(ja[i].out_fence);
	close(jh.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(h, &x);
	vtpu_close(h);
	long_job_fini(self->dev, &lj);
	TH_LOG("4 NORMAL jobs of ~%.0f ms queued, %d done when a HIGH job came; %d NORMAL jobs finished before it",
	       reps * one, done_at_submit, a_before_h);
}

/* ---- process lifetime ------------------------------------------------------------ */

TEST_F_TIMEOUT(dev, kill_child_mid_job, 120)
{
	long long clients0, cancelled0;
	uint64_t used0;
	int sync[2];
	pid_t pid;
	char c = 0;
	int st;

	NEED_DEV();
	used0 = param(_metadata, self->dev, VTPU_PARAM_MEM_USED);
	clients0 = gen_sysfs(0, "clients");
	cancelled0 = gen_sysfs(0, "jobs_cancelled");
	ASSERT_EQ(0, pipe(sync));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The child: its own client, a long job, then wait to die. */
		struct vtpu_dev *d = vtpu_open(DEV0);
		struct long_job lj;
		struct vtpu_job job;
		uint32_t q;

		if (!d || vtpu_queue_create(d, VTPU_QUEUE_PRIORITY_NORMAL, &q))
			_exit(1);
		long_job_init(_metadata, d, &lj);
		long_job_submit(_metadata, d, &lj, q, 100000, &job);
		if (write(sync[1], "s", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(sync[1]);
	ASSERT_EQ(1, read(sync[0], &c, 1)) TH_LOG("the child failed");
	close(sync[0]);
	EXPECT_EQ(clients0 + 1, gen_sysfs(0, "clients"));
	EXPECT_LT(used0, param(_metadata, self->dev, VTPU_PARAM_MEM_USED));
	usleep(100000);	/* mid-job */
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st));

	/* The parent's own work goes on. */
	check_alive(_metadata, self->dev, self->q, 7.0f);
	EXPECT_EQ(clients0, sysfs_settle(0, "clients", clients0));
	EXPECT_EQ((long long)used0, sysfs_settle(0, "mem_used", used0));
	EXPECT_EQ(cancelled0 + 1, sysfs_settle(0, "jobs_cancelled",
					       cancelled0 + 1));
	TH_LOG("child killed mid-job: its job was cancelled, the parent's job ran, clients back to %lld, mem_used back to %llu",
	       clients0, (unsigned long long)used0);
}

TEST_F_TIMEOUT(dev, fork_shares_fd, 60)
{
	struct vtpu_bo px, cx;
	struct vtpu_cmdbuf pcb, ccb;
	pid_t pid;
	int st, i;

	NEED_DEV();
	bo_new(_metadata, self->dev, 64 * 1024, &px);
	bo_new(_metadata, self->dev, 64 * 1024, &cx);
	vtpu_cmdbuf_init(&pcb);
	vtpu_cmdbuf_init(&ccb);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Same file, same queue, its own buffer and values. */
		struct vtpu_job job = { .queue = self->q };
		uint32_t status = 99;

		for (i = 0; i < 8; i++) {
			vtpu_cmdbuf_reset(&ccb);
			vtpu_cmdbuf_fill(&ccb, vtpu_cmdbuf_use(&ccb, &cx), 0,
					 16384, 100.0f + i);
			if (vtpu_submit(self->dev, &ccb, &job) ||
			    vtpu_wait(self->dev, self->q, job.seqno, -1,
				      &status, NULL) ||
			    status != VTPU_JOB_DONE ||
			    count_not(cx.map, 100.0f + i, 16384))
				_exit(10 + i);
		}
		_exit(0);
	}
	for (i = 0; i < 8; i++) {
		vtpu_cmdbuf_reset(&pcb);
		vtpu_cmdbuf_fill(&pcb, vtpu_cmdbuf_use(&pcb, &px), 0, 16384,
				 200.0f + i);
		run_job(_metadata, self->dev, self->q, &pcb);
		EXPECT_EQ(0, count_not(px.map, 200.0f + i, 16384));
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("the child's job %d failed",
					     WEXITSTATUS(st) - 10);
	/* the parent sees the child's last values through the shared map */
	EXPECT_EQ(0, count_not(cx.map, 107.0f, 16384));
	check_alive(_metadata, self->dev, self->q, 9.0f);

	vtpu_cmdbuf_fini(&pcb);
	vtpu_cmdbuf_fini(&ccb);
	vtpu_bo_destroy(self->dev, &px);
	vtpu_bo_destroy(self->dev, &cx);
	TH_LOG("parent and forked child, one inherited fd and queue: 8 jobs each, interleaved, all correct");
}

TEST_F(dev, mmap_after_close)
{
	struct vtpu_dev *d;
	struct vtpu_bo x;
	struct vtpu_bo_close cl = { 0 };
	long long clients0;
	uint64_t used0;
	uint32_t *p;
	int i, bad = 0;

	NEED_DEV();
	used0 = param(_metadata, self->dev, VTPU_PARAM_MEM_USED);
	clients0 = gen_sysfs(0, "clients");
	d = vtpu_open(DEV0);
	ASSERT_NE(NULL, d);
	bo_new(_metadata, d, 2 * 4096, &x);
	p = x.map;
	for (i = 0; i < 2048; i++)
		p[i] = 0x5a5a0000u + i;

	cl.handle = x.handle;
	ASSERT_EQ(0, xioctl(vtpu_fd(d), VTPU_IOCTL_BO_CLOSE, &cl));
	vtpu_close(d);
	for (i = 0; i < 2048; i++)
		bad += p[i] != 0x5a5a0000u + i;
	EXPECT_EQ(0, bad);
	for (i = 0; i < 2048; i++)
		p[i] = ~(uint32_t)i;
	for (i = 0, bad = 0; i < 2048; i++)
		bad += p[i] != ~(uint32_t)i;
	EXPECT_EQ(0, bad);
	/* the mapping holds the buffer (and its file) */
	EXPECT_EQ(used0 + x.size, param(_metadata, self->dev,
					VTPU_PARAM_MEM_USED));

	ASSERT_EQ(0, munmap(x.map, x.size));
	EXPECT_EQ(used0, param(_metadata, self->dev, VTPU_PARAM_MEM_USED));
	EXPECT_EQ(clients0, sysfs_settle(0, "clients", clients0));
	TH_LOG("after BO_CLOSE and close(fd) the mapping stayed readable and writable; munmap returned %llu bytes, clients back to %lld",
	       (unsigned long long)x.size, clients0);
}

TEST_F_TIMEOUT(dev, mem_cap_enospc, 120)
{
	const uint64_t chunk = 16ull << 20;
	struct vtpu_bo_create bc;
	struct vtpu_bo_close cl = { 0 };
	struct vtpu_bo small;
	uint32_t handles[128];
	uint64_t cap, used0, room;
	int fd = vtpu_fd(self->dev), n = 0, i, ret = 0;

	NEED_DEV();
	cap = param(_metadata, self->dev, VTPU_PARAM_MEM_CAP);
	used0 = param(_metadata, self->dev, VTPU_PARAM_MEM_USED);
	if (cap > 512ull << 20)
		SKIP(return, "mem_cap %llu MiB: run with mem_cap_mb=256",
		     (unsigned long long)(cap >> 20));
	bo_new(_metadata, self->dev, 4096, &small);
	room = cap - used0 - small.size;

	/* Unmapped 16 MiB buffers until the cap says no. */
	for (i = 0; i < 128; i++) {
		memset(&bc, 0, sizeof(bc));
		bc.size = chunk;
		ret = xioctl(fd, VTPU_IOCTL_BO_CREATE, &bc);
		if (ret)
			break;
		handles[n++] = bc.handle;
	}
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_EQ(room / chunk, (uint64_t)n);
	EXPECT_GE(cap, param(_metadata, self->dev, VTPU_PARAM_MEM_USED));
	/* what is left still fits, one byte more does not */
	memset(&bc, 0, sizeof(bc));
	bc.size = room - n * chunk + 1;
	EXPECT_EQ(-ENOSPC, xioctl(fd, VTPU_IOCTL_BO_CREATE, &bc));
	EXPECT_EQ(-ENOSPC, vtpu_bo_create(self->dev, 4096 * 1024 * 16ull,
					  &(struct vtpu_bo){ 0 }));

	/* The device still works at the cap, with a buffer it had. */
	{
		struct vtpu_cmdbuf cb;

		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &small), 0, 1024,
				 4.0f);
		run_job(_metadata, self->dev, self->q, &cb);
		EXPECT_EQ(0, count_not(small.map, 4.0f, 1024));
		vtpu_cmdbuf_fini(&cb);
	}

	for (i = 0; i < n; i++) {
		cl.handle = handles[i];
		EXPECT_EQ(0, xioctl(fd, VTPU_IOCTL_BO_CLOSE, &cl));
	}
	vtpu_bo_destroy(self->dev, &small);
	EXPECT_EQ(used0, param(_metadata, self->dev, VTPU_PARAM_MEM_USED));
	check_alive(_metadata, self->dev, self->q, 5.0f);
	TH_LOG("mem_cap %llu MiB: %d buffers of 16 MiB, then ENOSPC; a job still ran; freeing returned mem_used to %llu",
	       (unsigned long long)(cap >> 20), n, (unsigned long long)used0);
}

TEST_F(dev, rmmod_refused_while_open)
{
	long ret;
	int err;

	NEED_DEV();
	ret = syscall(__NR_delete_module, "vtpu", O_NONBLOCK);
	err = errno;
	if (ret && err == EPERM)
		SKIP(return, "delete_module needs CAP_SYS_MODULE");
	ASSERT_EQ(-1, ret) TH_LOG("the module was unloaded under an open fd!");
	/* kernel/module/main.c: a module still referenced is EWOULDBLOCK */
	EXPECT_TRUE(err == EWOULDBLOCK || err == EBUSY)
		TH_LOG("delete_module gave %s", strerror(err));
	check_alive(_metadata, self->dev, self->q, 6.0f);
	TH_LOG("delete_module(vtpu, O_NONBLOCK) with an fd open: %s; the device still works",
	       strerror(err));
}

TEST_F(dev, debugfs_clients)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_HIGH,
			.timeout_ms = 4321);
	struct vtpu_dev *d;
	char buf[8192], want[64];
	uint32_t q;
	ssize_t n;
	int fd;

	NEED_DEV();
	if (!debugfs_ready())
		SKIP(return, "debugfs not mountable at " DEBUGFS);
	d = vtpu_open(DEV0);
	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, vtpu_queue_create_opts(d, &o, &q));

	fd = open(DEBUGFS "/vtpu/vtpu0/clients", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "client pid %d ", getpid());
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("clients:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, "priority 2, timeout 4321 ms"))
		TH_LOG("clients:\n%s", buf);

	vtpu_close(d);
	fd = open(DEBUGFS "/vtpu/vtpu0/clients", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LE(0, n);
	buf[n] = '\0';
	EXPECT_EQ(NULL, strstr(buf, "timeout 4321 ms"))
		TH_LOG("a closed client is still listed:\n%s", buf);
	EXPECT_NE(NULL, strstr(buf, want));	/* the fixture's fd */
	TH_LOG("debugfs clients lists pid %d and a HIGH queue with its 4321 ms watchdog while open, and drops it after close",
	       getpid());
}

/* ---- sysfs counters --------------------------------------------------------------- */

static const char *const counters[] = {
	"jobs_submitted", "jobs_completed", "jobs_failed", "jobs_timedout",
	"jobs_cancelled",
};

TEST_F_TIMEOUT(dev, sysfs_counters, 120)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 50);
	long long before[5], after[5], flops0, busy0;
	struct long_job lj;
	struct vtpu_job jt, jr, jp;
	struct vtpu_bo x;
	struct vtpu_cmdbuf cb;
	uint32_t tq, cq;
	int i, ret;

	NEED_DEV();
	for (i = 0; i < 5; i++) {
		before[i] = gen_sysfs(0, counters[i]);
		ASSERT_LE(0, before[i]) TH_LOG("%s missing", counters[i]);
	}
	flops0 = gen_sysfs(0, "flops");
	busy0 = gen_sysfs(0, "busy_ns");
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &cq));
	long_job_init(_metadata, self->dev, &lj);
	bo_new(_metadata, self->dev, 4096, &x);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &x), 0, 1024, 1.0f);

	/* 2 done */
	run_job(_metadata, self->dev, self->q, &cb);
	run_job(_metadata, self->dev, self->q, &lj.cb);
	/* 1 rejected by validation: not submitted at all */
	{
		struct vtpu_job bad = { .queue = self->q, .repeat = 2 };
		uint64_t s[1] = { 2 };

		bad.strides = s;
		ret = vtpu_submit(self->dev, &cb, &bad);
		EXPECT_EQ(-EINVAL, ret);
	}
	/* 1 timed out */
	long_job_submit(_metadata, self->dev, &lj, tq, 100000, &jt);
	EXPECT_EQ(-ETIMEDOUT, vtpu_fence_wait(jt.out_fence, 20000));
	/* 2 cancelled: one running, one queued behind it, queue destroyed */
	long_job_submit(_metadata, self->dev, &lj, cq, 100000, &jr);
	long_job_submit(_metadata, self->dev, &lj, cq, 2, &jp);
	usleep(50000);
	EXPECT_EQ(0, vtpu_queue_destroy(self->dev, cq));
	EXPECT_EQ(-ECANCELED, vtpu_fence_wait(jr.out_fence, 20000));
	EXPECT_EQ(-ECANCELED, vtpu_fence_wait(jp.out_fence, 20000));

	for (i = 0; i < 5; i++)
		after[i] = gen_sysfs(0, counters[i]) - before[i];
	EXPECT_EQ(5, after[0]);
	EXPECT_EQ(2, after[1]);
	EXPECT_EQ(0, after[2]);
	EXPECT_EQ(1, after[3]);
	EXPECT_EQ(2, after[4]);
	EXPECT_EQ(after[0], after[1] + after[2] + after[3] + after[4]);
	EXPECT_LT(flops0, gen_sysfs(0, "flops"));
	EXPECT_LT(busy0, gen_sysfs(0, "busy_ns"));

	close(jt.out_fence);
	close(jr.out_fence);
	close(jp.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &x);
	long_job_fini(self->dev, &lj);
	TH_LOG("counter deltas: submitted %lld = completed %lld + failed %lld + timedout %lld + cancelled %lld; flops and busy_ns grew",
	       after[0], after[1], after[2], after[3], after[4]);
}

/* ---- hardening: defects an adversarial review found ----------------------- */

/*
 * Waiting for an in-fence is not running: a job gated on a fence that
 * signals after longer than its queue's watchdog runs (in_fence_timeout_ms
 * is the separate bound, none by default), and its watchdog starts when
 * it does.
 */
TEST_F_TIMEOUT(dev, in_fence_wait_not_watchdog, 120)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 100);
	struct long_job lj;
	struct vtpu_job blk, j = { 0 };
	struct vtpu_bo y;
	struct vtpu_cmdbuf cb;
	uint32_t tq, bq, status;
	int32_t jerr;
	double one, t;

	NEED_DEV();
	if (param(_metadata, self->dev, VTPU_PARAM_IN_FENCE_TIMEOUT_MS))
		SKIP(return, "the module was loaded with an in_fence_timeout_ms");
	ASSERT_EQ(0, vtpu_queue_create_opts(self->dev, &o, &tq));
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &bq));
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, bq);
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &y), 0, 1024, 4.0f);

	/* a blocker of ~600 ms on another queue; j's watchdog is 100 ms */
	t = now_ms();
	long_job_submit(_metadata, self->dev, &lj, bq, reps_for(one, 600),
			&blk);
	j.queue = tq;
	j.in_fence = blk.out_fence;
	submit(_metadata, self->dev, &cb, &j);
	status = wait_status(_metadata, self->dev, tq, j.seqno, 60000, &jerr);
	t = now_ms() - t;
	EXPECT_EQ(VTPU_JOB_DONE, status) TH_LOG("ended %s (%d) after %.0f ms",
						vtpu_status_name(status), jerr,
						t);
	EXPECT_TRUE(fence_signalled(blk.out_fence));
	EXPECT_EQ(0, count_not(y.map, 4.0f, 1024));
	close(blk.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &y);
	long_job_fini(self->dev, &lj);
	TH_LOG("gated for %.0f ms on a 100 ms-watchdog queue: ran, DONE", t);
}

/*
 * Destroying a queue cancels its jobs in order: the running one's fence
 * signals first, then the pending ones' in seqno order (the dma-fence
 * rule for one context), so a merge of two of them signals only when
 * both have.
 */
TEST_F_TIMEOUT(dev, cancel_signals_in_order, 120)
{
	struct long_job lj;
	struct vtpu_job run, pend[3];
	struct sync_merge_data md = { .name = "vtpu-merge" };
	int64_t ts_run, ts[3];
	uint32_t q;
	double one;
	int i, trial, bad = 0;

	NEED_DEV();
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, self->q);
	for (trial = 0; trial < 3; trial++) {
		ASSERT_EQ(0, vtpu_queue_create(self->dev,
					       VTPU_QUEUE_PRIORITY_NORMAL, &q));
		long_job_submit(_metadata, self->dev, &lj, q,
				reps_for(one, 10000), &run);
		for (i = 0; i < 3; i++)
			long_job_submit(_metadata, self->dev, &lj, q, 1,
					&pend[i]);
		md.fd2 = pend[0].out_fence;
		ASSERT_EQ(0, ioctl(run.out_fence, SYNC_IOC_MERGE, &md));
		usleep(50000);	/* the first job runs */
		EXPECT_EQ(0, vtpu_queue_destroy(self->dev, q));
		EXPECT_EQ(-ECANCELED, vtpu_fence_wait(run.out_fence, 30000));
		for (i = 0; i < 3; i++)
			EXPECT_EQ(-ECANCELED,
				  vtpu_fence_wait(pend[i].out_fence, 30000));
		EXPECT_EQ(-ECANCELED, vtpu_fence_wait(md.fence, 30000));
		ts_run = fence_ts(run.out_fence);
		for (i = 0; i < 3; i++) {
			ts[i] = fence_ts(pend[i].out_fence);
			if (ts[i] < (i ? ts[i - 1] : ts_run)) {
				bad++;
				TH_LOG("trial %d: job %d signalled %.3f ms before the one before it",
				       trial, i + 2,
				       ((i ? ts[i - 1] : ts_run) - ts[i]) / 1e6);
			}
		}
		close(md.fence);
		close(run.out_fence);
		for (i = 0; i < 3; i++)
			close(pend[i].out_fence);
	}
	EXPECT_EQ(0, bad);
	long_job_fini(self->dev, &lj);
	TH_LOG("3 trials: the running job's fence, then the 3 pending ones', in order");
}

/*
 * WAIT never reports a job RETIRED while it runs: the 65th submission
 * after a long job waits for it to end before it takes its history slot.
 */
TEST_F_TIMEOUT(dev, wait_never_retires_running_job, 120)
{
	struct long_job lj;
	struct vtpu_job lng, tiny;
	struct vtpu_bo y;
	struct vtpu_cmdbuf cb;
	uint32_t status = 99, q;
	double one, t_submit;
	int i;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &q));
	long_job_init(_metadata, self->dev, &lj);
	one = long_job_ms(_metadata, self->dev, &lj, q);
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &y), 0, 16, 1.0f);

	long_job_submit(_metadata, self->dev, &lj, q, reps_for(one, 1500),
			&lng);
	t_submit = now_ms();
	for (i = 0; i < VTPU_QUEUE_HISTORY; i++) {
		memset(&tiny, 0, sizeof(tiny));
		tiny.queue = q;
		submit(_metadata, self->dev, &cb, &tiny);
	}
	t_submit = now_ms() - t_submit;
	ASSERT_EQ(0, vtpu_wait(self->dev, q, lng.seqno, 0, &status, NULL));
	if (status == VTPU_JOB_RETIRED)
		EXPECT_TRUE(fence_signalled(lng.out_fence))
			TH_LOG("WAIT said RETIRED while the job still ran");
	EXPECT_TRUE(fence_signalled(lng.out_fence))
		TH_LOG("the 65th submit did not wait for the job whose slot it took");
	EXPECT_EQ(0, vtpu_wait(self->dev, q, tiny.seqno, 30000000000ll,
			       &status, NULL));
	close(lng.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &y);
	long_job_fini(self->dev, &lj);
	TH_LOG("64 submissions behind a ~1.5 s job took %.0f ms: the last waited for its slot; WAIT then: %s",
	       t_submit, vtpu_status_name(status));
}

/*
 * Submit @cb gated on @fence until SUBMIT fails (*@ret), a new queue every
 * VTPU_QUEUE_HISTORY jobs (where a submit would wait for a slot) into
 * @q[*@nq]. Return: how many went in.
 */
static uint64_t gated_until_full(struct __test_metadata *_metadata,
				 struct vtpu_dev *dev, struct vtpu_cmdbuf *cb,
				 int fence, uint32_t *q, uint32_t *nq, int *ret)
{
	struct vtpu_job j;
	uint64_t n;

	*nq = 0;
	*ret = 0;
	for (n = 0; *nq <= VTPU_MAX_QUEUES_TEST; n++) {
		if (n % VTPU_QUEUE_HISTORY == 0) {
			if (*nq == VTPU_MAX_QUEUES_TEST)
				break;
			*ret = vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL,
						 &q[*nq]);
			if (*ret)
				break;
			++*nq;
		}
		memset(&j, 0, sizeof(j));
		j.queue = q[*nq - 1];
		j.in_fence = fence;
		*ret = vtpu_submit(dev, cb, &j);
		if (*ret)
			break;
	}
	return n;
}

/*
 * A client cannot pin kernel memory without limit with queued jobs: past
 * VTPU_PARAM_CLIENT_JOB_BYTES (1 MiB streams gated on a fence that does
 * not come), or VTPU_PARAM_CLIENT_JOBS (tiny ones, over several queues),
 * SUBMIT fails with ENOSPC; once the jobs end, it works again.
 */
TEST_F_TIMEOUT(dev, client_job_limits, 240)
{
	uint64_t max_jobs = param(_metadata, self->dev, VTPU_PARAM_CLIENT_JOBS);
	uint64_t max_bytes = param(_metadata, self->dev,
				   VTPU_PARAM_CLIENT_JOB_BYTES);
	const uint32_t big = VTPU_SUBMIT_MAX_CMDS_SIZE;
	struct vtpu_dev *gate_dev;
	struct long_job lj;
	struct vtpu_job blk;
	struct vtpu_cmdbuf cb;
	struct vtpu_bo y;
	uint32_t q[VTPU_MAX_QUEUES_TEST], bq, status, nq = 0;
	uint64_t n;
	double one;
	int ret = 0;

	NEED_DEV();
	ASSERT_GE(VTPU_MAX_QUEUES_TEST * VTPU_QUEUE_HISTORY, max_jobs + 1);
	ASSERT_GE(VTPU_MAX_QUEUES_TEST * VTPU_QUEUE_HISTORY, max_bytes / big + 1);
	/*
	 * The gate, so that ours never run: another client's queue of long
	 * jobs, each well inside the watchdog, ~200 s in all (the debug
	 * kernel is slow); ours wait for the last one's fence.
	 */
	gate_dev = vtpu_open(DEV0);
	ASSERT_NE(NULL, gate_dev);
	ASSERT_EQ(0, vtpu_queue_create(gate_dev, VTPU_QUEUE_PRIORITY_LOW, &bq));
	long_job_init(_metadata, gate_dev, &lj);
	one = long_job_ms(_metadata, gate_dev, &lj, bq);
	for (n = 0; n < 20; n++) {
		if (n)
			close(blk.out_fence);
		long_job_submit(_metadata, gate_dev, &lj, bq,
				reps_for(one, 10000), &blk);
	}

	/* 1 MiB streams of NOPs: ENOSPC past the byte limit */
	bo_new(_metadata, self->dev, 4096, &y);
	vtpu_cmdbuf_init(&cb);
	{
		const struct vtpu_cmd_hdr nop = { .opcode = VTPU_OP_NOP,
						  .size = sizeof(nop) };

		while (cb.size + sizeof(nop) <= big)
			ASSERT_EQ(0, vtpu_cmdbuf_append(&cb, &nop));
	}
	n = gated_until_full(_metadata, self->dev, &cb, blk.out_fence, q, &nq,
			     &ret);
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_LE(n * big, max_bytes);
	EXPECT_GE((n + 2) * big, max_bytes);
	TH_LOG("1 MiB streams: ENOSPC after %llu, limit %llu MiB",
	       (unsigned long long)n, (unsigned long long)(max_bytes >> 20));
	while (nq)
		EXPECT_EQ(0, vtpu_queue_destroy(self->dev, q[--nq]));
	vtpu_cmdbuf_fini(&cb);

	/* tiny streams: ENOSPC past the job limit */
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &y), 0, 16, 1.0f);
	n = gated_until_full(_metadata, self->dev, &cb, blk.out_fence, q, &nq,
			     &ret);
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_EQ(max_jobs, n) TH_LOG("ENOSPC after %llu jobs",
				      (unsigned long long)n);

	/* the gate fails: every job ends (a failed dependency), room again */
	EXPECT_EQ(0, vtpu_queue_destroy(gate_dev, bq));
	EXPECT_EQ(-ECANCELED, vtpu_fence_wait(blk.out_fence, 30000));
	EXPECT_EQ(0, vtpu_wait(self->dev, q[0], VTPU_QUEUE_HISTORY,
			       30000000000ll, &status, NULL));
	EXPECT_EQ(VTPU_JOB_CANCELLED, status);
	check_alive(_metadata, self->dev, q[1], 6.0f);
	close(blk.out_fence);
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &y);
	long_job_fini(gate_dev, &lj);
	vtpu_close(gate_dev);
	TH_LOG("%llu tiny jobs over %u queues: ENOSPC at the next; after the gate failed they ended and a job ran",
	       (unsigned long long)max_jobs, nq);
}

/* The dma-buf's inode: one per dma-buf. */
static ino_t fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

/*
 * Exports keep the uAPI's promises: a buffer has one dma-buf per mode,
 * and a read-only export refuses writable mappings, gives its importers a
 * read-only handle whose jobs may read but not write it, and cannot be
 * exported writable again.
 */
TEST_F(dev, export_one_dmabuf_read_only)
{
	struct vtpu_bo x, mine;
	struct vtpu_bo_export e = { 0 };
	struct vtpu_bo_import im = { 0 };
	struct vtpu_dev *other;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { 0 };
	struct vtpu_bo imp;
	char msg[256];
	int rw1, rw2, ro1, ro2, ret, fd;
	uint32_t oq;
	void *p;

	NEED_DEV();
	bo_new(_metadata, self->dev, 4096, &x);
	((float *)x.map)[0] = 3.0f;
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &x, &rw1));
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &x, &rw2));
	EXPECT_EQ(fd_ino(rw1), fd_ino(rw2)) TH_LOG("two dma-bufs for one buffer");
	e.handle = x.handle;
	e.flags = O_CLOEXEC;
	ASSERT_EQ(0, xioctl(vtpu_fd(self->dev), VTPU_IOCTL_BO_EXPORT, &e));
	ro1 = e.fd;
	ASSERT_EQ(0, xioctl(vtpu_fd(self->dev), VTPU_IOCTL_BO_EXPORT, &e));
	ro2 = e.fd;
	EXPECT_EQ(fd_ino(ro1), fd_ino(ro2));
	EXPECT_NE(fd_ino(ro1), fd_ino(rw1));
	EXPECT_EQ(O_RDONLY, fcntl(ro1, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(O_RDWR, fcntl(rw1, F_GETFL) & O_ACCMODE);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro1, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(3.0f, *(float *)p);
	EXPECT_EQ(-1, mprotect(p, 4096, PROT_READ | PROT_WRITE));
	munmap(p, 4096);

	/* another client imports it read-only: reads yes, writes no */
	other = vtpu_open(DEV0);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, vtpu_queue_create(other, VTPU_QUEUE_PRIORITY_NORMAL, &oq));
	ASSERT_EQ(0, vtpu_bo_import(other, ro1, &imp));
	bo_new(_metadata, other, 4096, &mine);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &imp), 0, 16, 9.0f);
	job.queue = oq;
	ret = vtpu_submit(other, &cb, &job);
	EXPECT_EQ(-EACCES, ret);
	EXPECT_EQ(VTPU_ERR_READ_ONLY, job.error.reason);
	TH_LOG("a FILL into it: %s",
	       vtpu_job_strerror(&cb, &job, msg, sizeof(msg)));
	vtpu_cmdbuf_fini(&cb);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &mine), 0,
			 vtpu_cmdbuf_use(&cb, &imp), 0, 64);
	run_job(_metadata, other, oq, &cb);
	EXPECT_EQ(3.0f, ((float *)mine.map)[0]);
	vtpu_cmdbuf_fini(&cb);
	EXPECT_EQ(3.0f, ((float *)x.map)[0]);
	/* not writable again through its importer */
	memset(&e, 0, sizeof(e));
	e.handle = imp.handle;
	e.flags = O_RDWR;
	EXPECT_EQ(-EACCES, xioctl(vtpu_fd(other), VTPU_IOCTL_BO_EXPORT, &e));
	e.flags = 0;
	ASSERT_EQ(0, xioctl(vtpu_fd(other), VTPU_IOCTL_BO_EXPORT, &e));
	fd = e.fd;
	EXPECT_EQ(fd_ino(ro1), fd_ino(fd));
	close(fd);
	/* a writable import of the same buffer makes the handle writable */
	im.fd = rw1;
	ASSERT_EQ(0, xioctl(vtpu_fd(other), VTPU_IOCTL_BO_IMPORT, &im));
	EXPECT_EQ(imp.handle, im.handle);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &imp), 0, 16, 9.0f);
	run_job(_metadata, other, oq, &cb);
	EXPECT_EQ(9.0f, ((float *)x.map)[0]);
	vtpu_cmdbuf_fini(&cb);

	vtpu_bo_destroy(other, &mine);
	vtpu_bo_destroy(other, &imp);
	vtpu_close(other);
	close(rw1);
	close(rw2);
	close(ro1);
	close(ro2);
	/* every fd closed: a new export is a new dma-buf */
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &x, &rw1));
	close(rw1);
	vtpu_bo_destroy(self->dev, &x);
	TH_LOG("one dma-buf per buffer and mode; a read-only export maps read-only, its importer's jobs read it and are refused writing it (READ_ONLY), and it cannot be exported writable");
}

TEST_HARNESS_MAIN
