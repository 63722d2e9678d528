// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_observe: the device as tools outside vtpu see it. /proc/PID/fdinfo
 * with the DRM usage-stats keys, a fence timeline per queue, tracepoints
 * for a job's life and buffers (tracefs), and dynamic debug in place of a
 * private debug mask.
 *
 * Runs against the real module (in the VM); skips when /dev/vtpu0 is
 * absent, and skips a tracefs or dynamic-debug check on a kernel built
 * without them (User-Mode Linux's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_fdinfo.h"

#define DEV_PATH "/dev/vtpu0"
#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS "/sys/kernel/debug"

FIXTURE(obs)
{
	struct vtpu_dev *dev;
	int fd;
	uint32_t q;
};

FIXTURE_SETUP(obs)
{
	self->fd = -1;
	self->dev = vtpu_open(DEV_PATH);
	if (!self->dev)
		return;
	self->fd = vtpu_fd(self->dev);
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &self->q));
}

FIXTURE_TEARDOWN(obs)
{
	if (self->dev)
		vtpu_close(self->dev);
}

/* SKIP in FIXTURE_SETUP still runs the body in 6.1's harness: check here. */
#define NEED_DEV()                                                             \
	do {                                                                   \
		if (!self->dev)                                                \
			SKIP(return, "%s: %s (is vtpu.ko loaded?)", DEV_PATH,  \
			     strerror(errno));                                 \
	} while (0)

static void bo_new(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		   uint64_t size, struct vtpu_bo *bo)
{
	int ret = vtpu_bo_create(dev, size, bo);

	ASSERT_EQ(0, ret) TH_LOG("vtpu_bo_create(%llu): %s",
				 (unsigned long long)size, strerror(-ret));
}

/* Submit @cb on @q and wait for it; asserts it ends DONE. */
static void run_job(struct __test_metadata *_metadata, struct vtpu_dev *dev,
		    uint32_t q, struct vtpu_cmdbuf *cb, uint64_t *seqno)
{
	struct vtpu_job job = { .queue = q, .in_fence = -1 };
	uint32_t status = 99;
	int32_t jerr = 0;

	ASSERT_EQ(0, vtpu_submit(dev, cb, &job));
	ASSERT_EQ(0, vtpu_wait(dev, q, job.seqno, -1, &status, &jerr));
	ASSERT_EQ(VTPU_JOB_DONE, status);
	if (seqno)
		*seqno = job.seqno;
}

/* Write @val to @path; Return: 0 or -errno. */
static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* Read up to @len - 1 bytes of @path into @buf; Return: bytes or -errno. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got < (ssize_t)len - 1 &&
	       (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* ---- fdinfo ----------------------------------------------------------------- */

/*
 * /proc/PID/fdinfo of a vtpu fd has the DRM usage-stats keys, per client:
 * its own id, the memory its handles hold (and what of it is exported),
 * and the time its jobs ran, growing as they run.
 */
TEST_F(obs, fdinfo_usage)
{
	long long id, id2, total0, total, shared, busy0, busy;
	struct vtpu_dev *other;
	struct vtpu_cmdbuf cb;
	char driver[32] = "";
	struct vtpu_bo bo;
	int dmabuf;

	NEED_DEV();
	fdinfo_value(self->fd, "drm-driver", driver, sizeof(driver));
	EXPECT_STREQ("vtpu", driver);
	id = fdinfo_value(self->fd, "drm-client-id", NULL, 0);
	other = vtpu_open(DEV_PATH);
	ASSERT_NE(NULL, other);
	id2 = fdinfo_value(vtpu_fd(other), "drm-client-id", NULL, 0);
	EXPECT_GT(id, 0);
	EXPECT_GT(id2, 0);
	EXPECT_NE(id, id2) TH_LOG("two opens share drm-client-id %lld", id);
	EXPECT_EQ(1, fdinfo_value(self->fd, "drm-engine-capacity-compute",
				  NULL, 0));

	total0 = fdinfo_value(self->fd, "drm-total-system", NULL, 0);
	busy0 = fdinfo_value(self->fd, "drm-engine-compute", NULL, 0);
	ASSERT_GE(total0, 0);
	ASSERT_GE(busy0, 0);
	bo_new(_metadata, self->dev, 1 << 20, &bo);
	total = fdinfo_value(self->fd, "drm-total-system", NULL, 0);
	EXPECT_EQ(total0 + 1024, total);
	EXPECT_EQ(total, fdinfo_value(self->fd, "drm-resident-system", NULL, 0));
	EXPECT_EQ(total, fdinfo_value(self->fd, "drm-memory-system", NULL, 0));
	/* the other client's usage is its own */
	EXPECT_EQ(0, fdinfo_value(vtpu_fd(other), "drm-total-system", NULL, 0));
	shared = fdinfo_value(self->fd, "drm-shared-system", NULL, 0);
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &bo, &dmabuf));
	EXPECT_EQ(shared + 1024,
		  fdinfo_value(self->fd, "drm-shared-system", NULL, 0));
	close(dmabuf);

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, (1 << 20) / 4,
			 1.0f);
	run_job(_metadata, self->dev, self->q, &cb, NULL);
	vtpu_cmdbuf_fini(&cb);
	busy = fdinfo_value(self->fd, "drm-engine-compute", NULL, 0);
	EXPECT_GT(busy, busy0) TH_LOG("a job ran and drm-engine-compute stayed %lld ns",
				      busy);
	EXPECT_EQ(0, fdinfo_value(vtpu_fd(other), "drm-engine-compute", NULL,
				  0));

	vtpu_bo_destroy(self->dev, &bo);
	EXPECT_EQ(total0, fdinfo_value(self->fd, "drm-total-system", NULL, 0));
	vtpu_close(other);
	TH_LOG("fdinfo: client ids %lld and %lld, 1 MiB buffer counted, job ran %lld ns",
	       id, id2, busy - busy0);
}


/* ---- fence timelines ------------------------------------------------------- */

/* The timeline and driver names of a sync_file's one fence. */
static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/*
 * A running job's time counts as it runs: drm-engine-compute and sysfs
 * busy_ns grow while a long job is still running, not only by its whole
 * time when it ends (which made vtpu-smi --watch show a device training
 * for seconds per step as idle, then as busy 200% of an interval).
 */
TEST_F(obs, engine_time_grows_while_a_job_runs)
{
	long long busy0, busy1, dev0, dev1, t0, ms = 0;
	struct vtpu_job job = { .in_fence = -1 };
	char buf[32] = "";
	uint32_t repeat, status = 99;
	struct vtpu_cmdbuf cb;
	struct vtpu_dev *other;
	struct vtpu_bo bo;
	int32_t jerr = 0;
	int ret;

	NEED_DEV();
	other = vtpu_open(DEV_PATH);
	ASSERT_NE(NULL, other);
	bo_new(_metadata, self->dev, 1 << 20, &bo);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, (1 << 20) / 4,
			 1.0f);
	job.queue = self->q;
	/* a job of at least 400 ms here, whatever the machine's speed */
	for (repeat = 1; repeat <= 65536 && ms < 400; repeat *= 2) {
		job.repeat = repeat;
		t0 = now_ms();
		ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
		ASSERT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, -1,
				       &status, &jerr));
		ASSERT_EQ(VTPU_JOB_DONE, status);
		ms = now_ms() - t0;
	}
	if (ms < 400)
		SKIP(goto out, "%u FILLs of 1 MiB took %lld ms: too quick",
		     job.repeat, ms);

	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
	usleep(50 * 1000);
	busy0 = fdinfo_value(self->fd, "drm-engine-compute", NULL, 0);
	ASSERT_LT(0, read_file("/sys/class/vtpu/vtpu0/busy_ns", buf,
			       sizeof(buf)));
	dev0 = atoll(buf);
	usleep(100 * 1000);
	busy1 = fdinfo_value(self->fd, "drm-engine-compute", NULL, 0);
	ASSERT_LT(0, read_file("/sys/class/vtpu/vtpu0/busy_ns", buf,
			       sizeof(buf)));
	dev1 = atoll(buf);
	ret = vtpu_wait(self->dev, self->q, job.seqno, 0, &status, &jerr);
	if (ret == 0)
		TH_LOG("the %lld ms job ended within 150 ms: not checked",
		       ms);
	else
		EXPECT_EQ(-ETIME, ret);
	if (ret == -ETIME) {
		/* still running: 100 ms of it counted, give or take */
		EXPECT_GE(busy1 - busy0, 50000000LL)
			TH_LOG("drm-engine-compute %lld then %lld ns while a job ran",
			       busy0, busy1);
		EXPECT_GE(dev1 - dev0, 50000000LL)
			TH_LOG("busy_ns %lld then %lld while a job ran", dev0,
			       dev1);
		EXPECT_LE(busy1 - busy0, 1000000000LL);
	}
	/* not another client's */
	EXPECT_EQ(0, fdinfo_value(vtpu_fd(other), "drm-engine-compute", NULL,
				  0));
	ASSERT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, -1, &status,
			       &jerr));
	EXPECT_EQ(VTPU_JOB_DONE, status);
	EXPECT_LE(busy1, fdinfo_value(self->fd, "drm-engine-compute", NULL,
				      0)) TH_LOG("drm-engine-compute went back");
	TH_LOG("a %lld ms job (%u FILLs): %lld ms counted over 100 ms of it",
	       ms, job.repeat, (busy1 - busy0) / 1000000);
out:
	vtpu_cmdbuf_fini(&cb);
	vtpu_bo_destroy(self->dev, &bo);
	vtpu_close(other);
}

static void fence_names(struct __test_metadata *_metadata, int fd,
			struct sync_fence_info *fi)
{
	struct sync_file_info info = { 0 };

	memset(fi, 0, sizeof(*fi));
	info.num_fences = 1;
	info.sync_fence_info = (uintptr_t)fi;
	ASSERT_EQ(0, ioctl(fd, SYNC_IOC_FILE_INFO, &info));
	ASSERT_EQ(1, info.num_fences);
}

/*
 * Each queue is a timeline of its own: its fences name it ("vtpu0-qN"),
 * so sync_file's debug output and tools tell two queues' fences apart.
 */
TEST_F(obs, fence_timeline_per_queue)
{
	struct vtpu_job j1 = { .queue = 0, .want_out_fence = 1 };
	struct vtpu_job j2 = j1;
	struct sync_fence_info f1, f2;
	struct vtpu_cmdbuf cb;
	char want[32];
	struct vtpu_bo bo;
	uint32_t q2;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &q2));
	bo_new(_metadata, self->dev, 4096, &bo);
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, 16, 2.0f);
	j1.queue = self->q;
	j2.queue = q2;
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j1));
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &j2));
	fence_names(_metadata, j1.out_fence, &f1);
	fence_names(_metadata, j2.out_fence, &f2);
	EXPECT_STREQ("vtpu", f1.driver_name);
	snprintf(want, sizeof(want), "vtpu0-q%u", self->q);
	EXPECT_STREQ(want, f1.obj_name);
	snprintf(want, sizeof(want), "vtpu0-q%u", q2);
	EXPECT_STREQ(want, f2.obj_name);
	EXPECT_EQ(0, vtpu_fence_wait(j1.out_fence, 20000));
	EXPECT_EQ(0, vtpu_fence_wait(j2.out_fence, 20000));
	/* the name outlives the queue: the fence may */
	ASSERT_EQ(0, vtpu_queue_destroy(self->dev, q2));
	fence_names(_metadata, j2.out_fence, &f2);
	EXPECT_STREQ(want, f2.obj_name);
	TH_LOG("fences of two queues: timelines \"%s\" and \"%s\"", f1.obj_name,
	       f2.obj_name);
	close(j1.out_fence);
	close(j2.out_fence);
	vtpu_cmdbuf_fini(&cb);
}

/* ---- tracepoints ------------------------------------------------------------ */

/* tracefs mounted, with vtpu's events: Return: 1, or 0 (skip). */
static int tracefs_ready(void)
{
	if (access(TRACEFS "/events/vtpu", F_OK) == 0)
		return 1;
	mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	return access(TRACEFS "/events/vtpu", F_OK) == 0;
}

/* The first line of @buf at or after @from containing @a and @b. */
static const char *find_line(const char *from, const char *a, const char *b)
{
	const char *p = from;

	while ((p = strstr(p, a))) {
		const char *sol = p, *eol = strchr(p, '\n');

		while (sol > from && sol[-1] != '\n')
			sol--;
		if (!eol)
			eol = p + strlen(p);
		if (!b || (memmem(sol, eol - sol, b, strlen(b))))
			return sol;
		p = eol;
	}
	return NULL;
}

/*
 * A job's life in the trace, in order: submitted, dependencies met,
 * started, one event per group of commands (with the opcode), done with
 * its status; and the buffers' creation and import.
 */
TEST_F(obs, tracepoints_job_life)
{
	static char buf[1 << 16];
	const char *p, *events[] = { "vtpu_job_submit:", "vtpu_job_deps_done:",
				     "vtpu_job_start:", "vtpu_job_group:",
				     "vtpu_job_done:" };
	struct vtpu_cmdbuf cb;
	struct vtpu_bo bo, imp;
	char key[64], sz[32];
	uint64_t seqno;
	int dmabuf, i;

	NEED_DEV();
	if (!tracefs_ready())
		SKIP(return, "no tracefs with vtpu events at " TRACEFS);
	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "/trace", ""));
	ASSERT_EQ(0, write_file(TRACEFS "/events/vtpu/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "1"));

	bo_new(_metadata, self->dev, 8192, &bo);
	ASSERT_EQ(0, vtpu_bo_export(self->dev, &bo, &dmabuf));
	/* an import into the same file finds the buffer's one handle */
	ASSERT_EQ(0, vtpu_bo_import(self->dev, dmabuf, &imp));
	EXPECT_EQ(bo.handle, imp.handle);
	close(dmabuf);
	vtpu_cmdbuf_init(&cb);
	/* two FILLs of one range: the second waits for the first (2 groups) */
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, 64, 1.0f);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo), 0, 64, 2.0f);
	run_job(_metadata, self->dev, self->q, &cb, &seqno);
	vtpu_cmdbuf_fini(&cb);

	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "/events/vtpu/enable", "0"));
	ASSERT_LT(0, read_file(TRACEFS "/trace", buf, sizeof(buf)));

	snprintf(key, sizeof(key), "handle=%u size=8192", bo.handle);
	EXPECT_NE(NULL, find_line(buf, "vtpu_bo_create:", key))
		TH_LOG("no vtpu_bo_create with %s:\n%s", key, buf);
	EXPECT_NE(NULL, find_line(buf, "vtpu_bo_import:", key))
		TH_LOG("no vtpu_bo_import with %s:\n%s", key, buf);
	snprintf(key, sizeof(key), "dev=0 queue=%u seqno=%llu", self->q,
		 (unsigned long long)seqno);
	p = buf;
	for (i = 0; i < 5; i++) {
		const char *at = find_line(p, events[i], key);

		EXPECT_NE(NULL, at) TH_LOG("no %s %s after the one before:\n%s",
					   events[i], key, buf);
		if (!at)
			break;
		if (i == 3) {	/* the first group, then the second */
			EXPECT_NE(NULL, strstr(at, "cmd=0 op=FILL"));
			at = find_line(at + 1, events[i], key);
			ASSERT_NE(NULL, at);
			EXPECT_NE(NULL, strstr(at, "cmd=1 op=FILL"))
				TH_LOG("second group:\n%s", buf);
		}
		p = strchr(at, '\n');
		ASSERT_NE(NULL, p);
	}
	EXPECT_NE(NULL, find_line(buf, "vtpu_job_done:", "error=0"));
	snprintf(sz, sizeof(sz), "%zu", strlen(buf));
	TH_LOG("trace: bo_create, bo_import, then submit, deps_done, start, two groups, done for seqno %llu (%s bytes of trace)",
	       (unsigned long long)seqno, sz);
	vtpu_bo_destroy(self->dev, &imp);
	vtpu_bo_destroy(self->dev, &bo);	/* its handle went with imp */
}

/* ---- dynamic debug ---------------------------------------------------------- */

/*
 * The driver's debug messages are dynamic debug sites ("module vtpu +p"),
 * off by default: turned on, creating a buffer logs it.
 */
TEST_F(obs, dynamic_debug)
{
	static char buf[1 << 20];	/* the control file: 2000+ sites */
	const char *ctl = DEBUGFS "/dynamic_debug/control";
	struct vtpu_bo bo;
	char want[64];
	ssize_t n;

	NEED_DEV();
	if (access(ctl, F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	if (access(ctl, F_OK))
		ctl = "/proc/dynamic_debug/control";
	if (access(ctl, F_OK))
		SKIP(return, "no dynamic debug control (CONFIG_DYNAMIC_DEBUG)");
	ASSERT_LT(0, read_file(ctl, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "[vtpu]"))
		TH_LOG("no vtpu sites in %s", ctl);
	EXPECT_EQ(NULL, find_line(buf, "[vtpu]", "=p "))
		TH_LOG("a vtpu debug site is on by default");

	ASSERT_EQ(0, write_file(ctl, "module vtpu +p"));
	bo_new(_metadata, self->dev, 3 * 4096, &bo);
	ASSERT_EQ(0, write_file(ctl, "module vtpu -p"));
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf) - 1);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "bo %u: 12288 bytes", bo.handle);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("dmesg lacks \"%s\"", want);
	TH_LOG("\"module vtpu +p\" turns on the driver's debug sites: dmesg has \"%s\"",
	       want);
	vtpu_bo_destroy(self->dev, &bo);
}

TEST_HARNESS_MAIN
