// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_isolation: no client can reach another's memory. A second open
 * file (in this process, in another process, on the other device) guesses
 * every small handle value and the mmap offsets (handle << 40, plus page
 * offsets) of the first client's buffers: BO_INFO, BO_CLOSE, BO_EXPORT,
 * mmap and jobs naming them must all fail, or reach only its own buffers.
 * A closed handle reaches nothing (not even the buffer that reuses its
 * number), and freed memory is never seen again: buffers filled with a
 * pattern and freed, by this process or by one that exits, are followed by
 * many new buffers that must all read zero, through their mapping and
 * through a job.
 *
 * Runs against the real module (in the VM, "devices=2 mem_cap_mb=256");
 * skips when /dev/vtpu0 is absent. VTPU_ISO_GUESS=N tries handles below N
 * only, VTPU_ISO_MB=N frees N MiB a round (the debug kernel's quick pass).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_gen.h"

#define DEV0 "/dev/vtpu0"
#define DEV1 "/dev/vtpu1"
#define A_BUFS 24		/* the victim's buffers */
#define B_BUFS 2		/* the prober's own */
#define GUESS_MAX 4096		/* handles 0..GUESS_MAX-1 are all tried */

/* VTPU_ISO_GUESS, VTPU_ISO_MB: fewer handles and MiB (make check-debug) */
static int env_int(const char *name, int def, int max)
{
	const char *v = getenv(name);
	int n = v ? atoi(v) : def;

	return n < 1 ? 1 : n > max ? max : n;
}
#define MMAP_SHIFT 40

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static uint32_t pattern(uint32_t owner, uint32_t buf, uint64_t i)
{
	return (owner << 24) ^ (buf << 16) ^ (uint32_t)i ^ 0x5a000000u;
}

static void fill_pattern(struct vtpu_bo *bo, uint32_t owner, uint32_t buf)
{
	uint32_t *p = bo->map;
	uint64_t i;

	for (i = 0; i < bo->size / 4; i++)
		p[i] = pattern(owner, buf, i);
}

/* Words of @bo that do not hold their pattern. */
static uint64_t count_unlike(const struct vtpu_bo *bo, uint32_t owner,
			     uint32_t buf)
{
	const uint32_t *p = bo->map;
	uint64_t i, bad = 0;

	for (i = 0; i < bo->size / 4; i++)
		bad += p[i] != pattern(owner, buf, i);
	return bad;
}

static uint64_t count_nonzero(const void *map, uint64_t size)
{
	const uint64_t *p = map;
	uint64_t i, bad = 0;

	for (i = 0; i < size / 8; i++)
		bad += p[i] != 0;
	return bad;
}

/* Run @cb on a fresh queue of @dev; return the job's status or -errno. */
static int run(struct vtpu_dev *dev, struct vtpu_cmdbuf *cb)
{
	struct vtpu_job job = { 0 };
	uint32_t q, status = 0;
	int ret;

	ret = vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q);
	if (ret)
		return ret;
	job.queue = q;
	ret = vtpu_submit(dev, cb, &job);
	if (!ret)
		ret = vtpu_wait(dev, q, job.seqno, 60000000000ll, &status, NULL);
	vtpu_queue_destroy(dev, q);
	return ret ? ret : (int)status;
}

/* A COPY from buffer handle @src (any value) into @dst, raw. */
static int submit_copy_from(int fd, uint32_t q, uint32_t dst, uint32_t src,
			    uint64_t bytes)
{
	struct vtpu_cmd_copy c = {
		.hdr = { VTPU_OP_COPY, sizeof(c) },
		.bytes = bytes,
		.dst = { .buf = 0 },
		.src = { .buf = 1 },
	};
	uint32_t handles[2] = { dst, src };
	struct vtpu_submit s = {
		.cmds_ptr = (uintptr_t)&c,
		.cmds_size = sizeof(c),
		.handles_ptr = (uintptr_t)handles,
		.handle_count = 2,
		.queue_id = q,
	};

	return xioctl(fd, VTPU_IOCTL_SUBMIT, &s);
}

struct probe_result {
	long tried, own, refused, leaks;
};

/*
 * From @fd (owning @own[0..nown) with patterns of @owner), try every
 * handle below GUESS_MAX and every handle in @extra: each must be refused
 * unless it is one of @own, and then reach only that buffer.
 */
static void probe(struct __test_metadata *_metadata, int fd,
		  const struct vtpu_bo *own, int nown, uint32_t owner,
		  const uint32_t *extra, int nextra, struct probe_result *pr)
{
	long page = sysconf(_SC_PAGESIZE);
	struct vtpu_queue_create qc = { .priority = VTPU_QUEUE_PRIORITY_NORMAL };
	uint32_t h, k;
	int i, mine, ret;

	const int guess = env_int("VTPU_ISO_GUESS", GUESS_MAX, GUESS_MAX);

	ASSERT_EQ(0, xioctl(fd, VTPU_IOCTL_QUEUE_CREATE, &qc));
	for (i = 0; i < guess + nextra; i++) {
		struct vtpu_bo_info bi = { 0 };
		struct vtpu_bo_export be = { 0 };
		void *p;

		h = i < guess ? (uint32_t)i : extra[i - guess];
		for (k = 0, mine = -1; k < (uint32_t)nown; k++)
			if (own[k].handle == h)
				mine = k;
		pr->tried++;

		bi.handle = h;
		ret = xioctl(fd, VTPU_IOCTL_BO_INFO, &bi);
		if (mine >= 0) {
			pr->own++;
			EXPECT_EQ(0, ret);
			EXPECT_EQ(own[mine].size, bi.size);
		} else {
			EXPECT_EQ(-ENOENT, ret) TH_LOG("BO_INFO of handle %u", h);
			pr->refused += ret == -ENOENT;
			pr->leaks += ret == 0;
		}

		be.handle = h;
		be.flags = O_CLOEXEC;
		ret = xioctl(fd, VTPU_IOCTL_BO_EXPORT, &be);
		if (!ret)
			close(be.fd);
		if (mine < 0) {
			EXPECT_EQ(-ENOENT, ret) TH_LOG("BO_EXPORT of handle %u", h);
			pr->leaks += ret == 0;
		}

		/* its mmap offset, and pages inside it */
		for (k = 0; k < 3; k++) {
			off_t off = ((off_t)h << MMAP_SHIFT) + (off_t)k * page;

			p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, off);
			if (p == MAP_FAILED) {
				EXPECT_TRUE(mine >= 0 ? k * page >= own[mine].size : 1);
				if (mine < 0)
					pr->refused++;
				continue;
			}
			if (mine < 0) {
				pr->leaks++;
				EXPECT_TRUE(0) TH_LOG("mmap at handle %u page %u succeeded", h, k);
			} else {
				/* own buffer: its own bytes, nobody else's */
				const uint32_t *w = p;

				EXPECT_EQ(pattern(owner, mine, k * page / 4), w[0]);
			}
			munmap(p, page);
		}

		/* a job reading it */
		if (mine < 0 && (i < 128 || i >= guess)) {
			ret = submit_copy_from(fd, qc.queue_id, own[0].handle, h,
					       64);
			EXPECT_EQ(-ENOENT, ret) TH_LOG("a job reading handle %u", h);
			pr->leaks += ret == 0;
			pr->refused += ret == -ENOENT;
		}
	}
	/* closing handles it does not own fails and closes nothing */
	for (i = 0; i < nextra; i++) {
		struct vtpu_bo_close cl = { .handle = extra[i] };

		for (k = 0, mine = 0; k < (uint32_t)nown; k++)
			mine |= own[k].handle == extra[i];
		if (mine)
			continue;
		EXPECT_EQ(-ENOENT, xioctl(fd, VTPU_IOCTL_BO_CLOSE, &cl));
		pr->tried++;
	}
}

FIXTURE(iso)
{
	struct vtpu_dev *a;
	struct vtpu_bo abo[A_BUFS];
	uint32_t ahandles[A_BUFS];
	int reports0;
};

FIXTURE_SETUP(iso)
{
	int i;

	self->a = vtpu_open(DEV0);
	if (!self->a)
		return;
	self->reports0 = gen_kernel_reports();
	for (i = 0; i < A_BUFS; i++) {
		ASSERT_EQ(0, vtpu_bo_create(self->a, 4096 * (1 + i % 3),
					    &self->abo[i]));
		fill_pattern(&self->abo[i], 0xa, i);
		self->ahandles[i] = self->abo[i].handle;
	}
}

FIXTURE_TEARDOWN(iso)
{
	int i;

	if (!self->a)
		return;
	for (i = 0; i < A_BUFS; i++)
		vtpu_bo_destroy(self->a, &self->abo[i]);
	vtpu_close(self->a);
}

#define NEED_DEV()                                                             \
	do {                                                                   \
		if (!self->a)                                                  \
			SKIP(return, DEV0 ": %s (is vtpu.ko loaded?)",         \
			     strerror(errno));                                 \
	} while (0)

/* The victim's buffers still hold exactly their patterns. */
static void victim_intact(struct __test_metadata *_metadata,
			  FIXTURE_DATA(iso) *self)
{
	uint64_t bad = 0;
	int i;

	for (i = 0; i < A_BUFS; i++)
		bad += count_unlike(&self->abo[i], 0xa, i);
	EXPECT_EQ(0, bad);
}

static void reports_none(struct __test_metadata *_metadata, int reports0)
{
	int r = gen_kernel_reports();

	TH_LOG("kernel reports: %d", r - reports0);
	EXPECT_EQ(reports0, r);
}

TEST_F_TIMEOUT(iso, guess_handles_same_process, 600)
{
	struct vtpu_dev *b;
	struct vtpu_bo bbo[B_BUFS];
	struct probe_result pr = { 0 };
	int i;

	NEED_DEV();
	b = vtpu_open(DEV0);
	ASSERT_NE(NULL, b);
	for (i = 0; i < B_BUFS; i++) {
		ASSERT_EQ(0, vtpu_bo_create(b, 8192, &bbo[i]));
		fill_pattern(&bbo[i], 0xb, i);
	}
	probe(_metadata, vtpu_fd(b), bbo, B_BUFS, 0xb, self->ahandles, A_BUFS,
	      &pr);
	victim_intact(_metadata, self);
	for (i = 0; i < B_BUFS; i++) {
		EXPECT_EQ(0, count_unlike(&bbo[i], 0xb, i));
		vtpu_bo_destroy(b, &bbo[i]);
	}
	vtpu_close(b);
	EXPECT_EQ(0, pr.leaks);
	TH_LOG("another open file of this process: %ld handles tried (BO_INFO, BO_EXPORT, mmap at 3 offsets, jobs, BO_CLOSE), %ld were its own, %ld refusals, %ld leaks",
	       pr.tried, pr.own, pr.refused, pr.leaks);
	reports_none(_metadata, self->reports0);
}

TEST_F_TIMEOUT(iso, guess_handles_other_process_and_device, 600)
{
	struct probe_result *pr;
	pid_t pid;
	int st, d;

	NEED_DEV();
	pr = mmap(NULL, 2 * sizeof(*pr), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pr);
	memset(pr, 0, 2 * sizeof(*pr));
	for (d = 0; d < 2; d++) {
		if (d == 1 && access(DEV1, F_OK))
			break;
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			/* its own client, with no buffer, then one */
			struct vtpu_dev *c = vtpu_open(d ? DEV1 : DEV0);
			struct vtpu_bo cbo;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (!c || vtpu_bo_create(c, 4096, &cbo))
				_exit(2);
			fill_pattern(&cbo, 0xc, 0);
			probe(_metadata, vtpu_fd(c), &cbo, 1, 0xc,
			      self->ahandles, A_BUFS, &pr[d]);
			_exit(_metadata->passed ? 0 : 1);
		}
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("the prober on %s failed (status %#x)",
			       d ? DEV1 : DEV0, st);
		EXPECT_EQ(0, pr[d].leaks);
		TH_LOG("a process of its own on %s: %ld handles tried, %ld refusals, %ld leaks",
		       d ? DEV1 : DEV0, pr[d].tried, pr[d].refused, pr[d].leaks);
	}
	victim_intact(_metadata, self);
	munmap(pr, 2 * sizeof(*pr));
	reports_none(_metadata, self->reports0);
}

TEST_F_TIMEOUT(iso, stale_handle, 300)
{
	long page = sysconf(_SC_PAGESIZE);
	struct vtpu_dev *b;
	struct vtpu_bo x, y, z;
	struct vtpu_bo_close cl = { 0 };
	struct vtpu_bo_info bi = { 0 };
	struct vtpu_queue_create qc = { .priority = VTPU_QUEUE_PRIORITY_NORMAL };
	struct vtpu_cmdbuf cb;
	uint32_t old, *oldmap;
	void *p;
	int fd;

	NEED_DEV();
	b = vtpu_open(DEV0);
	ASSERT_NE(NULL, b);
	fd = vtpu_fd(b);
	ASSERT_EQ(0, xioctl(fd, VTPU_IOCTL_QUEUE_CREATE, &qc));
	ASSERT_EQ(0, vtpu_bo_create(b, 4 * page, &z));
	ASSERT_EQ(0, vtpu_bo_create(b, 4 * page, &x));
	fill_pattern(&x, 0xd, 0);
	old = x.handle;
	oldmap = x.map;

	/* close the handle; the old mapping stays */
	cl.handle = old;
	ASSERT_EQ(0, xioctl(fd, VTPU_IOCTL_BO_CLOSE, &cl));
	bi.handle = old;
	EXPECT_EQ(-ENOENT, xioctl(fd, VTPU_IOCTL_BO_INFO, &bi));
	EXPECT_EQ(-ENOENT, xioctl(fd, VTPU_IOCTL_BO_CLOSE, &cl));
	EXPECT_EQ(-ENOENT, submit_copy_from(fd, qc.queue_id, z.handle, old, 64));
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, (off_t)old << MMAP_SHIFT);
	EXPECT_EQ(MAP_FAILED, p);

	/* the next buffer takes the number: it is new, zeroed memory */
	ASSERT_EQ(0, vtpu_bo_create(b, 4 * page, &y));
	TH_LOG("closed handle %u; the next buffer got handle %u", old, y.handle);
	EXPECT_EQ(0, count_nonzero(y.map, y.size));
	EXPECT_NE(oldmap, y.map);
	/* a job through the reused number sees the new buffer only */
	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &z), 0,
			 vtpu_cmdbuf_use(&cb, &y), 0, 4 * page);
	EXPECT_EQ(VTPU_JOB_DONE, run(b, &cb));
	EXPECT_EQ(0, count_nonzero(z.map, z.size));
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &y), 0, page, 9.0f);
	EXPECT_EQ(VTPU_JOB_DONE, run(b, &cb));
	vtpu_cmdbuf_fini(&cb);
	/* the old pages, still mapped, are untouched by all that */
	x.map = oldmap;
	EXPECT_EQ(0, count_unlike(&x, 0xd, 0));
	munmap(oldmap, x.size);

	/* after close(fd), a new file of this process has none of them */
	vtpu_bo_destroy(b, &y);
	vtpu_bo_destroy(b, &z);
	vtpu_close(b);
	b = vtpu_open(DEV0);
	ASSERT_NE(NULL, b);
	bi.handle = old;
	EXPECT_EQ(-ENOENT, xioctl(vtpu_fd(b), VTPU_IOCTL_BO_INFO, &bi));
	bi.handle = z.handle;
	EXPECT_EQ(-ENOENT, xioctl(vtpu_fd(b), VTPU_IOCTL_BO_INFO, &bi));
	vtpu_close(b);
	victim_intact(_metadata, self);
	reports_none(_metadata, self->reports0);
}

/* Offsets and sizes past a client's own buffers reach nothing. */
TEST_F_TIMEOUT(iso, out_of_bounds_jobs, 300)
{
	static const uint64_t offs[] = {
		4096, 4096 - 60, 8192, 1ull << 20, 1ull << 32, 1ull << 40,
		0x7ffffffffffff000ull, 0xfffffffffffff000ull, 0xffffffffffffffc0ull,
	};
	struct vtpu_dev *b;
	struct vtpu_bo own, dst;
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { 0 };
	uint32_t q, i;
	int ret, refused = 0;

	NEED_DEV();
	b = vtpu_open(DEV0);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, vtpu_bo_create(b, 4096, &own));
	ASSERT_EQ(0, vtpu_bo_create(b, 4096, &dst));
	ASSERT_EQ(0, vtpu_queue_create(b, VTPU_QUEUE_PRIORITY_NORMAL, &q));
	vtpu_cmdbuf_init(&cb);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		/* read past the end */
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &dst), 0,
				 vtpu_cmdbuf_use(&cb, &own), offs[i], 64);
		job.queue = q;
		ret = vtpu_submit(b, &cb, &job);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("COPY from offset %#llx",
					       (unsigned long long)offs[i]);
		refused += ret == -EINVAL;
		/* write past the end */
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &own), offs[i], 16,
				 1.0f);
		ret = vtpu_submit(b, &cb, &job);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("FILL at offset %#llx",
					       (unsigned long long)offs[i]);
		refused += ret == -EINVAL;
		/* a size that wraps (or just does not fit) */
		if ((uint64_t)0 - offs[i] <= 4096 - 64)
			continue;
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &dst), 64,
				 vtpu_cmdbuf_use(&cb, &own), 0,
				 (uint64_t)0 - offs[i]);
		ret = vtpu_submit(b, &cb, &job);
		EXPECT_EQ(-EINVAL, ret);
		refused += ret == -EINVAL;
	}
	/* and writing all of its own buffers leaves the victim's alone */
	vtpu_cmdbuf_reset(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &own), 0, 1024, -3.0f);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &dst), 0, 1024, -4.0f);
	EXPECT_EQ(VTPU_JOB_DONE, run(b, &cb));
	vtpu_cmdbuf_fini(&cb);
	victim_intact(_metadata, self);
	vtpu_bo_destroy(b, &own);
	vtpu_bo_destroy(b, &dst);
	vtpu_close(b);
	TH_LOG("%d out-of-bounds jobs refused", refused);
	reports_none(_metadata, self->reports0);
}

/*
 * Fill @mb MiB of buffers with a pattern (half by the CPU, half by a job),
 * free them, then allocate twice as much and check that every byte reads
 * zero, through the mapping and (for some) through a job.
 */
static uint64_t freed_then_zero(struct __test_metadata *_metadata,
				struct vtpu_dev *dev, int mb, int round)
{
	const uint64_t sizes[] = { 4096, 65536, 1 << 20 };
	struct vtpu_bo *bos;
	struct vtpu_cmdbuf cb;
	uint64_t bytes = 0, total, bad = 0, zerocheck;
	int n = 0, i, max = 4096;

	bos = calloc(max, sizeof(*bos));
	ASSERT_NE(NULL, bos);
	vtpu_cmdbuf_init(&cb);
	for (total = 0; total < (uint64_t)mb << 20 && n < max; n++) {
		uint64_t sz = sizes[(n + round) % 3];

		ASSERT_EQ(0, vtpu_bo_create(dev, sz, &bos[n]));
		if (n % 2) {
			fill_pattern(&bos[n], 0xe, n);
		} else {
			vtpu_cmdbuf_reset(&cb);
			vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bos[n]), 0,
					 sz / 4, -1.0f - n);
			EXPECT_EQ(VTPU_JOB_DONE, run(dev, &cb));
		}
		total += sz;
	}
	for (i = 0; i < n; i++)
		vtpu_bo_destroy(dev, &bos[i]);

	/* twice as much again, in other sizes */
	for (total = 0, n = 0; total < 2 * ((uint64_t)mb << 20) && n < max; n++) {
		uint64_t sz = sizes[(n + round + 1) % 3];

		ASSERT_EQ(0, vtpu_bo_create(dev, sz, &bos[n]));
		bad += count_nonzero(bos[n].map, sz);
		total += sz;
	}
	bytes = total;
	/* a job sees zeros too: sum a new buffer into a checked one */
	zerocheck = 0;
	for (i = 0; i + 1 < n && i < 16; i += 2) {
		uint64_t sz = bos[i].size < bos[i + 1].size ? bos[i].size :
							     bos[i + 1].size;

		fill_pattern(&bos[i + 1], 0xf, i);
		vtpu_cmdbuf_reset(&cb);
		vtpu_cmdbuf_copy(&cb, vtpu_cmdbuf_use(&cb, &bos[i + 1]), 0,
				 vtpu_cmdbuf_use(&cb, &bos[i]), 0, sz);
		EXPECT_EQ(VTPU_JOB_DONE, run(dev, &cb));
		zerocheck += count_nonzero(bos[i + 1].map, sz);
	}
	EXPECT_EQ(0, zerocheck);
	for (i = 0; i < n; i++)
		vtpu_bo_destroy(dev, &bos[i]);
	vtpu_cmdbuf_fini(&cb);
	free(bos);
	EXPECT_EQ(0, bad) TH_LOG("round %d: %llu non-zero words in new buffers",
				 round, (unsigned long long)bad);
	return bytes;
}

TEST_F_TIMEOUT(iso, freed_memory_is_zero, 600)
{
	uint64_t cap = 0, used = 0, checked = 0;
	pid_t pid;
	int mb, round, st;

	NEED_DEV();
	ASSERT_EQ(0, vtpu_get_param(self->a, VTPU_PARAM_MEM_CAP, &cap));
	ASSERT_EQ(0, vtpu_get_param(self->a, VTPU_PARAM_MEM_USED, &used));
	/* two thirds of what is free, at most 48 MiB */
	mb = (cap - used) / 3 >> 20;
	if (mb > env_int("VTPU_ISO_MB", 48, 48))
		mb = env_int("VTPU_ISO_MB", 48, 48);
	ASSERT_LT(0, mb);
	for (round = 0; round < 3; round++)
		checked += freed_then_zero(_metadata, self->a, mb, round);

	/* freed by a process that exits without cleaning up */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct vtpu_dev *c = vtpu_open(DEV0);
		struct vtpu_bo bo;
		int i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (i = 0; c && i < mb; i++) {
			if (vtpu_bo_create(c, 1 << 20, &bo))
				_exit(1);
			fill_pattern(&bo, 0x7, i);
		}
		_exit(c ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	checked += freed_then_zero(_metadata, self->a, mb, 3);

	victim_intact(_metadata, self);
	TH_LOG("4 rounds of %d MiB filled and freed (one by an exiting process): %llu MiB of new buffers checked, all zero",
	       mb, (unsigned long long)(checked >> 20));
	reports_none(_metadata, self->reports0);
}

TEST_HARNESS_MAIN
