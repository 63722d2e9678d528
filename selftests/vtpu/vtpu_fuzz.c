// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_fuzz: a seeded, time-bounded fuzzer of the device's ioctls, through
 * the real ioctl in the guest. Cases:
 *
 *  - valid streams of every opcode (vtpu_gen.h) with bytes, bits and
 *    fields mutated, submitted with mutated submit structs (handles,
 *    repeat, strides, fences, flags, the struct's size in the ioctl
 *    number);
 *  - streams of random bytes;
 *  - every ioctl with a random or mutated struct: random sizes and
 *    directions in the ioctl number, random flags, pads and handles, and
 *    pointers that are NULL, unmapped, kernel addresses, misaligned, or
 *    run into an unmapped guard page;
 *  - mmap() of the device at random offsets, lengths and flags.
 *
 * The device must reject or execute each case and stay healthy: every
 * CHECK_EVERY cases a known-good job, on a client the fuzzer never
 * touches, must run and give the right bytes; at the end the counters
 * balance, mem_used and clients return to their baseline and the kernel
 * logged no report. Prints cases run, accepted, rejected by errno and by
 * validation reason.
 *
 * VTPU_FUZZ_SEED=N replays a run (the seed is printed); VTPU_FUZZ_SECONDS
 * bounds it (default 30).
 *
 * A second test, where the kernel has fault injection (make check-debug's
 * debug kernel; skipped elsewhere), runs each ioctl path with its first,
 * second, ... allocation failing (fail-nth), so every error path is taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vtpu.h"
#include "vtpu_gen.h"

#define DEV0 "/dev/vtpu0"
#define CHECK_EVERY 100		/* cases between known-good jobs */
#define RECYCLE_EVERY 400	/* cases between fresh scratch clients */
#define NSCRATCH_BOS 4
#define NERR 160
#define NREASON 16

static const char *const reason_names[NREASON] = {
	"none", "truncated", "bad_size", "bad_opcode", "bad_flags", "bad_pad",
	"bad_shape", "bad_stride", "bad_dtype", "bad_buffer", "out_of_bounds",
	"misaligned", "overlap", "bad_stride_repeat", "?", "?",
};

struct fstats {
	long cases, accepted, rejected;
	long by_errno[NERR];
	long by_reason[NREASON];
	long submits, submits_accepted, job_status[8];
	long mmaps, mmaps_ok, checks, recycles;
	long kinds[8];
};

/* The fuzzer's client: recreated now and then, its state is disposable. */
struct scratch {
	struct vtpu_dev *dev;
	int fd;
	struct vtpu_bo bos[NSCRATCH_BOS];
	uint32_t q[2];
};

/* Memory for structs and streams: a page followed by an unmapped one. */
static uint8_t *edge;
static long page;
static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	alarmed = 1;
}

/* Interrupt a blocking ioctl after @ms (no SA_RESTART: it returns EINTR). */
static void guard_arm(int ms)
{
	struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void guard_disarm(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* The lowest free fd: anything the kernel hands out during a case is above. */
static int fd_mark(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* Close what a case may have created (out-fences, dma-bufs). */
static void fd_sweep(int mark, const int *keep, int nkeep)
{
	int fd, i, kept;

	for (fd = mark; fd < mark + 4; fd++) {
		for (i = 0, kept = 0; i < nkeep; i++)
			kept |= keep[i] == fd;
		if (!kept)
			close(fd);
	}
}

static int scratch_open(struct scratch *s, struct gen_rng *rng)
{
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_LOW,
			.timeout_ms = 300);
	int i;

	memset(s, 0, sizeof(*s));
	s->dev = vtpu_open(DEV0);
	if (!s->dev)
		return -errno;
	s->fd = vtpu_fd(s->dev);
	for (i = 0; i < NSCRATCH_BOS; i++)
		if (vtpu_bo_create(s->dev, 4096ull << gen_below(rng, 5),
				   &s->bos[i]))
			return -ENOMEM;
	if (vtpu_queue_create_opts(s->dev, &o, &s->q[0]) ||
	    vtpu_queue_create_opts(s->dev, &o, &s->q[1]))
		return -EINVAL;
	return 0;
}

static void scratch_close(struct scratch *s)
{
	int i;

	for (i = 0; i < NSCRATCH_BOS; i++)
		if (s->bos[i].map)
			munmap(s->bos[i].map, s->bos[i].size);
	vtpu_close(s->dev);
	s->dev = NULL;
}

/* ---- mutation ------------------------------------------------------------- */

static const uint32_t interesting32[] = {
	0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 4095,
	4096, 4097, 0x7fff, 0x8000, 0xffff, 0x10000, 0xffffff, 0x1000000,
	0x1000001, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff,
	0x3f800000 /* 1.0f */, 0x7f800000 /* inf */, 0x7fc00000 /* NaN */,
};

static const uint64_t interesting64[] = {
	0, 4, 8, 4096, 65532, 65536, 1ull << 20, 1ull << 31, 1ull << 32,
	(1ull << 32) + 4, 1ull << 36, 1ull << 40, 1ull << 48, 1ull << 62,
	0x7ffffffffffffffcull, 0x8000000000000000ull, 0xfffffffffffffffcull,
	0xffffffffffffffffull,
};

static uint32_t pick32(struct gen_rng *r)
{
	return gen_one_in(r, 4) ? (uint32_t)gen_next(r) :
		interesting32[gen_below(r, sizeof(interesting32) / 4)];
}

static uint64_t pick64(struct gen_rng *r)
{
	return gen_one_in(r, 4) ? gen_next(r) :
		interesting64[gen_below(r, sizeof(interesting64) / 8)];
}

/* Change @n random things in @len bytes at @p (4-byte aligned). */
static void mutate(struct gen_rng *r, uint8_t *p, uint32_t len, int n)
{
	uint32_t at, v32;
	uint64_t v64;

	if (!len)
		return;
	while (n--) {
		switch (gen_below(r, 6)) {
		case 0:		/* a bit */
			p[gen_below(r, len)] ^= 1u << gen_below(r, 8);
			break;
		case 1:		/* a byte */
			p[gen_below(r, len)] = gen_next(r);
			break;
		case 2:		/* a field */
		case 3:
			if (len < 4)
				break;
			at = gen_below(r, len / 4) * 4;
			v32 = pick32(r);
			memcpy(p + at, &v32, 4);
			break;
		case 4:		/* an offset or a count */
			if (len < 8)
				break;
			at = gen_below(r, len / 8) * 8;
			v64 = pick64(r);
			memcpy(p + at, &v64, 8);
			break;
		default:	/* small arithmetic on a field */
			if (len < 4)
				break;
			at = gen_below(r, len / 4) * 4;
			memcpy(&v32, p + at, 4);
			v32 += (int)gen_below(r, 17) - 8;
			memcpy(p + at, &v32, 4);
			break;
		}
	}
}

/* A user pointer for the kernel: mostly @good, sometimes hostile. */
static uint64_t pick_ptr(struct gen_rng *r, const void *good, uint32_t len)
{
	switch (gen_below(r, 16)) {
	case 0:
		return 0;
	case 1:
		return 0x1000;				/* unmapped, low */
	case 2:
		return 0xffffffff81000000ull;		/* kernel text */
	case 3:
		return 0xffff888000000000ull;		/* kernel direct map */
	case 4:
		return (uintptr_t)edge + page;		/* the guard page */
	case 5:	/* the last bytes before the guard page, running into it */
		return (uintptr_t)edge + page - (len > 8 ? len / 2 : 1);
	case 6:
		return (uintptr_t)good + 1;		/* misaligned */
	case 7:
		return gen_next(r);
	default:
		return (uintptr_t)good;
	}
}

/* ---- ioctls --------------------------------------------------------------- */

struct ioctl_desc {
	const char *name;
	unsigned long cmd;
};

#define IOC(x) { #x, VTPU_IOCTL_##x }
static const struct ioctl_desc ioctls[] = {
	IOC(GET_PARAM), IOC(BO_CREATE), IOC(BO_INFO), IOC(BO_CLOSE),
	IOC(QUEUE_CREATE), IOC(QUEUE_DESTROY), IOC(SUBMIT), IOC(WAIT),
	IOC(BO_EXPORT), IOC(BO_IMPORT),
};
#define NIOCTLS (sizeof(ioctls) / sizeof(ioctls[0]))

static void count_result(struct fstats *st, int ret, int err)
{
	st->cases++;
	if (!ret) {
		st->accepted++;
		return;
	}
	st->rejected++;
	st->by_errno[err < NERR ? err : NERR - 1]++;
}

/* An ioctl number for @cmd with another size or direction, now and then. */
static unsigned long mutate_cmd(struct gen_rng *r, unsigned long cmd)
{
	unsigned int size = _IOC_SIZE(cmd), dir = _IOC_DIR(cmd);

	switch (gen_below(r, 8)) {
	case 0:
		size = gen_below(r, 160);
		break;
	case 1:
		size = size + 8 * gen_range(r, 1, 4);
		break;
	case 2:
		size = size > 8 ? size - 8 : 0;
		break;
	case 3:
		dir = gen_below(r, 4);
		break;
	case 4:
		size = gen_range(r, 161, (1 << _IOC_SIZEBITS) - 1);
		break;
	default:
		return cmd;
	}
	return _IOC(dir, _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

/* Make a wait for a job of @q end within about a second. */
static int64_t soon_ns(int ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec + ms * 1000000ll;
}

/* Wait (bounded) for an accepted job and count how it ended. */
static void reap(struct fstats *st, int fd, uint32_t q, uint64_t seqno)
{
	struct vtpu_wait w = { .queue_id = q, .seqno = seqno };

	w.timeout_ns = soon_ns(1000);
	guard_arm(2000);
	if (ioctl(fd, VTPU_IOCTL_WAIT, &w) == 0)
		st->job_status[w.status < 8 ? w.status : 7]++;
	else
		st->job_status[VTPU_JOB_PENDING]++;
	guard_disarm();
}

/*
 * A mutated stream: start from valid commands, change a few things, and
 * submit it with a (sometimes) mutated submit struct.
 */
static void case_stream(struct fstats *st, struct gen_rng *r,
			struct scratch *s, int in_fence, int random_bytes)
{
	static uint64_t strides[8];
	struct vtpu_cmdbuf cb;
	struct gen_ctx g;
	struct vtpu_submit *sub;
	uint32_t handles[8] = { 0 }, nh, i, size;
	unsigned long cmd = VTPU_IOCTL_SUBMIT;
	uint8_t *stream;
	int ret, err, fd_in_edge = 0;

	vtpu_cmdbuf_init(&cb);
	gen_start(&g, r, &cb, s->bos, gen_range(r, 1, NSCRATCH_BOS));
	gen_stream(&g, 3);
	if (gen_one_in(r, 8))	/* commands of another opcode appended */
		gen_cmd(&g, gen_opcode(r));
	size = cb.size;
	stream = malloc(size + 64);
	if (!stream) {
		vtpu_cmdbuf_fini(&cb);
		return;
	}
	memcpy(stream, cb.data, size);
	memset(stream + size, 0, 64);
	if (random_bytes) {
		for (i = 0; i < size; i++)
			stream[i] = gen_next(r);
	} else if (!gen_one_in(r, 4)) {	/* else only the submit changes */
		mutate(r, stream, size, gen_range(r, 1, 4));
	}
	if (gen_one_in(r, 8))
		size = gen_one_in(r, 2) ? size - gen_below(r, size) :
					  size + 8 * gen_range(r, 1, 8);
	if (gen_one_in(r, 16) && size <= (uint32_t)page) {
		/* the stream ends at the guard page */
		memcpy(edge + page - size, stream, size);
		fd_in_edge = 1;
	}

	nh = cb.nhandles;
	for (i = 0; i < nh; i++)
		handles[i] = cb.handles[i];
	if (gen_one_in(r, 6)) {
		uint32_t k = gen_below(r, 8);

		handles[k % (nh ? nh : 1)] = gen_one_in(r, 2) ?
			gen_below(r, 16) : pick32(r);
		if (gen_one_in(r, 2))
			nh = k;
	}

	sub = (struct vtpu_submit *)(edge + 2 * sizeof(*sub));
	memset(sub, 0, 2 * sizeof(*sub));
	sub->cmds_ptr = fd_in_edge ? (uintptr_t)(edge + page - size) :
				     (uintptr_t)stream;
	sub->cmds_size = size;
	sub->handles_ptr = (uintptr_t)handles;
	sub->handle_count = nh;
	sub->queue_id = s->q[gen_below(r, 2)];
	sub->in_fence_fd = -1;
	if (gen_one_in(r, 4))
		sub->flags |= VTPU_SUBMIT_OUT_FENCE;
	if (gen_one_in(r, 6)) {
		sub->flags |= VTPU_SUBMIT_IN_FENCE;
		sub->in_fence_fd = gen_one_in(r, 2) ? in_fence :
						      (int)gen_below(r, 12) - 1;
	}
	if (gen_one_in(r, 4)) {
		sub->repeat = gen_one_in(r, 4) ? pick32(r) : gen_below(r, 4);
		if (gen_one_in(r, 2)) {
			for (i = 0; i < 8; i++)
				strides[i] = gen_one_in(r, 2) ? 4 * gen_below(r, 64) :
							       pick64(r);
			sub->strides_ptr = pick_ptr(r, strides, nh * 8);
			sub->first_iter = gen_one_in(r, 2) ? 0 : pick32(r);
		}
	}
	if (gen_one_in(r, 6)) {	/* hostile pointers and fields */
		switch (gen_below(r, 4)) {
		case 0:
			sub->cmds_ptr = pick_ptr(r, stream, size);
			break;
		case 1:
			sub->handles_ptr = pick_ptr(r, handles, nh * 4);
			break;
		case 2:
			mutate(r, (uint8_t *)sub, sizeof(*sub), 1);
			break;
		default:
			sub->flags = pick32(r);
			break;
		}
	}
	if (gen_one_in(r, 6)) {
		cmd = mutate_cmd(r, cmd);
		if (gen_one_in(r, 2))	/* a non-zero byte past the struct */
			((uint8_t *)(sub + 1))[gen_below(r, sizeof(*sub))] = 1;
	}

	guard_arm(2000);
	ret = ioctl(s->fd, cmd, sub);
	err = errno;
	guard_disarm();
	st->submits++;
	st->kinds[random_bytes ? 1 : 0]++;
	count_result(st, ret, err);
	if (ret && err == EINVAL && sub->error_reason < NREASON)
		st->by_reason[sub->error_reason]++;
	if (!ret) {
		st->submits_accepted++;
		reap(st, s->fd, sub->queue_id, sub->seqno);
	}
	free(stream);
	vtpu_cmdbuf_fini(&cb);
}

/* Any ioctl, with a random or lightly mutated struct and a hostile pointer. */
static void case_ioctl(struct fstats *st, struct gen_rng *r, struct scratch *s)
{
	const struct ioctl_desc *d = &ioctls[gen_below(r, NIOCTLS)];
	unsigned long cmd = d->cmd;
	uint32_t size = _IOC_SIZE(cmd), i;
	uint8_t *arg = edge + page - 256;
	uint64_t ptr;
	int ret, err;

	memset(arg, 0, 256);
	if (gen_one_in(r, 3)) {
		for (i = 0; i < size; i++)
			arg[i] = gen_next(r);
	} else {
		/* plausible values first, then a few changes */
		uint32_t *w = (uint32_t *)arg;

		switch (_IOC_NR(cmd)) {
		case 0:
			w[0] = gen_below(r, 16);
			break;
		case 1:
			*(uint64_t *)arg = gen_one_in(r, 8) ? pick64(r) :
				4096ull * gen_range(r, 1, 16);
			break;
		case 2: case 3: case 8:
			w[0] = gen_one_in(r, 2) ? s->bos[gen_below(r, NSCRATCH_BOS)].handle :
						  gen_below(r, 40);
			if (_IOC_NR(cmd) == 8)
				w[1] = gen_one_in(r, 2) ? O_CLOEXEC : 0;
			break;
		case 4:
			w[0] = gen_below(r, 4);
			break;
		case 5:
			w[0] = gen_below(r, 70);
			break;
		case 7:
			w[0] = gen_one_in(r, 2) ? s->q[gen_below(r, 2)] : gen_below(r, 70);
			*(uint64_t *)(arg + 8) = gen_below(r, 200);
			*(int64_t *)(arg + 16) = soon_ns(gen_below(r, 50));
			break;
		case 9: {	/* a real dma-buf half the time */
			struct vtpu_bo_export be = {
				.handle = s->bos[gen_below(r, NSCRATCH_BOS)].handle,
			};

			w[0] = gen_below(r, 32);
			if (gen_one_in(r, 2) &&
			    !ioctl(s->fd, VTPU_IOCTL_BO_EXPORT, &be))
				w[0] = be.fd;	/* closed by the sweep */
			break;
		}
		}
		mutate(r, arg, size, gen_below(r, 3));
	}
	/* the fuzzer's queues stop any job within a second (0: 30 s) */
	if (_IOC_NR(cmd) == 4)
		((uint32_t *)arg)[3] = 1 + ((uint32_t *)arg)[3] % 1000;
	if (_IOC_NR(cmd) == 6) {	/* SUBMIT: its pointers */
		struct vtpu_submit *sub = (void *)arg;
		static uint64_t words[64];

		sub->cmds_ptr = pick_ptr(r, words, sizeof(words));
		sub->handles_ptr = pick_ptr(r, words, sizeof(words));
		sub->strides_ptr = gen_one_in(r, 2) ? 0 : pick_ptr(r, words, 64);
		for (i = 0; i < 64; i++)
			words[i] = gen_one_in(r, 2) ? gen_below(r, 8) : gen_next(r);
		if (gen_one_in(r, 2))
			sub->queue_id = s->q[0];
	}
	if (gen_one_in(r, 3))
		cmd = mutate_cmd(r, cmd);
	if (_IOC_SIZE(cmd) > 256)	/* a large struct: its tail is the guard page */
		ptr = (uintptr_t)edge + page - 256;
	else
		ptr = (uintptr_t)edge + page - (_IOC_SIZE(cmd) + 7) / 8 * 8;
	if (ptr != (uintptr_t)arg)
		memmove((void *)(uintptr_t)ptr, arg,
			_IOC_SIZE(cmd) < 256 ? _IOC_SIZE(cmd) : 256);
	if (gen_one_in(r, 8))
		ptr = pick_ptr(r, (void *)(uintptr_t)ptr, _IOC_SIZE(cmd));
	if (gen_one_in(r, 16))	/* an ioctl number the device does not have */
		cmd = _IOC(gen_below(r, 4), gen_one_in(r, 2) ? VTPU_IOCTL_BASE :
			   gen_below(r, 256), gen_below(r, 256), gen_below(r, 512));

	guard_arm(1500);
	ret = ioctl(s->fd, cmd, (void *)(uintptr_t)ptr);
	err = errno;
	guard_disarm();
	st->kinds[2]++;
	count_result(st, ret, err);
	if (!ret && cmd == VTPU_IOCTL_SUBMIT &&
	    ptr == (uintptr_t)edge + page - sizeof(struct vtpu_submit)) {
		struct vtpu_submit *sub = (void *)(uintptr_t)ptr;

		reap(st, s->fd, sub->queue_id, sub->seqno);
	}
}

/* mmap() the device at random offsets, lengths, protections, flags. */
static void case_mmap(struct fstats *st, struct gen_rng *r, struct scratch *s)
{
	const struct vtpu_bo *bo = &s->bos[gen_below(r, NSCRATCH_BOS)];
	uint64_t off = ((uint64_t)bo->handle << 40);
	size_t len = page * gen_range(r, 1, 4);
	int prot = PROT_READ | (gen_one_in(r, 2) ? PROT_WRITE : 0);
	int flags = gen_one_in(r, 6) ? MAP_PRIVATE : MAP_SHARED;
	void *p;

	switch (gen_below(r, 6)) {
	case 0:
		off = (uint64_t)gen_below(r, 64) << 40;
		break;
	case 1:
		off += (uint64_t)page * gen_below(r, 20);
		break;
	case 2:
		off = pick64(r) & ~(uint64_t)(page - 1) & 0x7fffffffffffffffull;
		break;
	case 3:
		len = bo->size + page * gen_below(r, 2);
		break;
	}
	p = mmap(NULL, len, prot, flags, s->fd, (off_t)off);
	st->kinds[3]++;
	st->mmaps++;
	count_result(st, p == MAP_FAILED ? -1 : 0, errno);
	if (p != MAP_FAILED) {
		volatile uint8_t *b = p;

		st->mmaps_ok++;
		(void)b[0];
		(void)b[len - 1];
		munmap(p, len);
	}
}

/*
 * The known-good job, on a client the fuzzer never touches: C = A * B with
 * A = 1 and B = 2 (8x8x8, every element 16) after a FILL.
 */
static int known_good(struct vtpu_dev *dev, uint32_t q, struct vtpu_bo *bo,
		      float v)
{
	struct vtpu_gemm_desc g = { .m = 8, .n = 8, .k = 8, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = q };
	uint32_t status = 0, i;
	float *p = bo->map;
	int ret, bad = 0;

	vtpu_cmdbuf_init(&cb);
	i = vtpu_cmdbuf_use(&cb, bo);
	vtpu_cmdbuf_fill(&cb, i, 0, 64, 1.0f);
	vtpu_cmdbuf_fill(&cb, i, 256, 64, 2.0f);
	vtpu_cmdbuf_fill(&cb, i, 1024, 256, v);
	g.a_buf = g.b_buf = g.c_buf = i;
	g.b_off = 256;
	g.c_off = 512;
	vtpu_cmdbuf_gemm(&cb, &g);
	ret = vtpu_submit(dev, &cb, &job);
	if (!ret)
		ret = vtpu_wait(dev, q, job.seqno, 60000000000ll, &status, NULL);
	vtpu_cmdbuf_fini(&cb);
	if (ret)
		return ret;
	if (status != VTPU_JOB_DONE)
		return -EIO;
	for (i = 0; i < 64; i++)
		bad += p[128 + i] != 16.0f;
	for (i = 0; i < 256; i++)
		bad += p[256 + i] != v;
	return bad ? -EBADMSG : 0;
}

static int real_fence(struct vtpu_dev *dev, uint32_t q, struct vtpu_bo *bo,
		      struct vtpu_job *job)
{
	struct vtpu_cmdbuf cb;
	int ret;

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, bo), 0, 1, 0);
	job->queue = q;
	job->want_out_fence = 1;
	ret = vtpu_submit(dev, &cb, job);
	vtpu_cmdbuf_fini(&cb);
	return ret;
}

FIXTURE(fuzz)
{
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, ioctls, 900)
{
	const char *env_seed = getenv("VTPU_FUZZ_SEED");
	const char *env_secs = getenv("VTPU_FUZZ_SECONDS");
	long long c0[GEN_NCOUNTERS], c[GEN_NCOUNTERS], used0, clients0;
	struct fstats st = { 0 };
	struct scratch s;
	struct gen_rng r;
	struct vtpu_dev *good;
	struct vtpu_bo gbo;
	struct vtpu_job fj = { 0 };
	struct sigaction sa = { .sa_handler = on_alarm };
	uint64_t seed;
	uint32_t gq;
	double secs, t0, end;
	int reports0, reports, ret, i, mark, keep[3];
	char line[1024];
	size_t len;

	if (access(DEV0, F_OK))
		SKIP(return, DEV0 " is absent (is vtpu.ko loaded?)");
	seed = env_seed ? strtoull(env_seed, NULL, 0) :
			  (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	secs = env_secs ? atof(env_secs) : 30;
	if (secs < 1 || secs > 800)	/* the harness's timeout is 900 s */
		secs = secs < 1 ? 1 : 800;
	printf("# seed %llu (VTPU_FUZZ_SEED=%llu replays it), %.0f s\n",
	       (unsigned long long)seed, (unsigned long long)seed, secs);
	fflush(stdout);
	gen_seed(&r, seed);
	page = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, edge);
	ASSERT_EQ(0, munmap(edge + page, page));

	reports0 = gen_kernel_reports();
	gen_counters(0, c0);
	used0 = gen_sysfs(0, "mem_used");
	clients0 = gen_sysfs(0, "clients");

	good = vtpu_open(DEV0);
	ASSERT_NE(NULL, good);
	ASSERT_EQ(0, vtpu_bo_create(good, 4096, &gbo));
	ASSERT_EQ(0, vtpu_queue_create(good, VTPU_QUEUE_PRIORITY_HIGH, &gq));
	ASSERT_EQ(0, known_good(good, gq, &gbo, -1.0f));
	/* a real fence (signalled) to hand to IN_FENCE now and then */
	ASSERT_EQ(0, real_fence(good, gq, &gbo, &fj));
	keep[0] = fj.out_fence;
	keep[1] = vtpu_fd(good);
	ASSERT_EQ(0, scratch_open(&s, &r));
	keep[2] = s.fd;

	t0 = gen_now_ms();
	end = t0 + secs * 1000;
	while (gen_now_ms() < end) {
		mark = fd_mark();
		switch (gen_below(&r, 10)) {
		case 0:
			case_stream(&st, &r, &s, fj.out_fence, 1);
			break;
		case 1: case 2: case 3: case 4: case 5:
			case_stream(&st, &r, &s, fj.out_fence, 0);
			break;
		case 6: case 7: case 8:
			case_ioctl(&st, &r, &s);
			break;
		default:
			case_mmap(&st, &r, &s);
			break;
		}
		keep[2] = s.fd;
		fd_sweep(mark, keep, 3);

		if (st.cases % CHECK_EVERY == 0) {
			ret = known_good(good, gq, &gbo, (float)st.cases);
			st.checks++;
			ASSERT_EQ(0, ret)
				TH_LOG("after %ld cases (seed %llu) the known-good job failed: %s",
				       st.cases, (unsigned long long)seed,
				       strerror(-ret));
		}
		if (st.cases % RECYCLE_EVERY == 0) {
			scratch_close(&s);
			ASSERT_EQ(0, scratch_open(&s, &r));
			st.recycles++;
		}
	}
	scratch_close(&s);
	ASSERT_EQ(0, known_good(good, gq, &gbo, 42.0f));
	st.checks++;
	close(fj.out_fence);
	vtpu_bo_destroy(good, &gbo);
	vtpu_close(good);

	TH_LOG("%.1f s, seed %llu: %ld cases (%ld mutated streams, %ld random streams, %ld ioctl structs, %ld mmaps), %ld accepted, %ld rejected; %ld known-good jobs all right; %ld fresh clients",
	       (gen_now_ms() - t0) / 1000, (unsigned long long)seed, st.cases,
	       st.kinds[0], st.kinds[1], st.kinds[2], st.kinds[3], st.accepted,
	       st.rejected, st.checks, st.recycles + 1);
	len = 0;
	line[0] = '\0';
	for (i = 1; i < NERR; i++)
		if (st.by_errno[i])
			len += snprintf(line + len, sizeof(line) - len, " %s %ld,",
					strerrorname_np(i) ? strerrorname_np(i) : "?",
					st.by_errno[i]);
	TH_LOG("rejected by errno:%s", line);
	len = 0;
	line[0] = '\0';
	for (i = 1; i < NREASON; i++)
		if (st.by_reason[i])
			len += snprintf(line + len, sizeof(line) - len, " %s %ld,",
					reason_names[i], st.by_reason[i]);
	TH_LOG("submits: %ld, %ld accepted (done %ld, error %ld, cancelled %ld, timed out %ld, still pending %ld); rejected streams by reason:%s",
	       st.submits, st.submits_accepted, st.job_status[VTPU_JOB_DONE],
	       st.job_status[VTPU_JOB_ERROR], st.job_status[VTPU_JOB_CANCELLED],
	       st.job_status[VTPU_JOB_TIMEDOUT], st.job_status[VTPU_JOB_PENDING],
	       line);
	TH_LOG("mmaps: %ld, %ld mapped", st.mmaps, st.mmaps_ok);

	ret = gen_settle(0, c0, used0, clients0, c, 30000);
	TH_LOG("vtpu0: jobs_submitted %lld = completed %lld + failed %lld + timedout %lld + cancelled %lld; mem_used %lld (was %lld), clients %lld (was %lld)",
	       c[0], c[1], c[2], c[3], c[4], gen_sysfs(0, "mem_used"), used0,
	       gen_sysfs(0, "clients"), clients0);
	EXPECT_EQ(0, ret);
	reports = gen_kernel_reports();
	TH_LOG("kernel reports: %d", reports - reports0);
	EXPECT_EQ(reports0, reports);
	EXPECT_LT(0, st.accepted);
	EXPECT_LT(0, st.rejected);
}

/* ---- every allocation failing in turn (fail-nth) ---------------------------- */

/*
 * With fault injection in the kernel (the debug kernel of make
 * check-debug), /proc/thread-self/fail-nth makes the n-th allocation of
 * the next calls fail. Each operation below runs with n = 1, 2, ... until
 * it makes fewer than n allocations: every error path it has is taken
 * once. The operation may fail (ENOMEM) or succeed; the device may not
 * break, leak or lose a job.
 */
struct nth {
	struct vtpu_dev *dev;
	int fd;
	struct vtpu_bo bo, bo2;
	uint32_t q, q2;
	int done_fence;		/* a signalled fence */
	int busy_fence;		/* a fence that signals in a while */
	uint64_t strides[2];
};

/*
 * fail-nth, armed around the one call under test only: its n-th
 * allocation fails, none of the setup's or cleanup's. nth_left is what
 * was left of n after the call: non-zero when it made fewer allocations.
 */
static int nth_fd = -1, nth_n, nth_left;

static void nth_arm(void)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", nth_n);

	if (pwrite(nth_fd, buf, len, 0) != len)
		nth_left = -2;
}

static void nth_disarm(void)
{
	char buf[16] = "";

	if (pread(nth_fd, buf, sizeof(buf) - 1, 0) <= 0)
		nth_left = -2;
	else if (nth_left != -2)
		nth_left = atoi(buf);
	if (pwrite(nth_fd, "0", 1, 0) != 1)
		nth_left = -2;
}

/* Wait for a job (queue @q, @seqno), bounded. */
static void nth_reap(struct nth *t, uint32_t q, uint64_t seqno, int fence)
{
	uint32_t status;

	if (fence >= 0) {
		vtpu_fence_wait(fence, 60000);
		close(fence);
	}
	if (seqno)
		vtpu_wait(t->dev, q, seqno, 60000000000ll, &status, NULL);
}

static int nth_submit(struct nth *t, uint32_t flags, int in_fence, int strided)
{
	struct vtpu_cmd_fill c = {
		.hdr = { VTPU_OP_FILL, sizeof(c) }, .count = 64,
		.value = 0x40000000,
	};
	uint32_t h[1] = { t->bo.handle };
	struct vtpu_submit s = {
		.cmds_ptr = (uintptr_t)&c, .cmds_size = sizeof(c),
		.handles_ptr = (uintptr_t)h, .handle_count = 1,
		.queue_id = t->q, .flags = flags, .in_fence_fd = in_fence,
	};
	int ret;

	if (strided) {
		s.repeat = 3;
		s.strides_ptr = (uintptr_t)t->strides;
	}
	nth_arm();
	ret = ioctl(t->fd, VTPU_IOCTL_SUBMIT, &s) ? -errno : 0;
	nth_disarm();
	if (!ret)
		nth_reap(t, t->q, s.seqno,
			 flags & VTPU_SUBMIT_OUT_FENCE ? s.out_fence_fd : -1);
	return ret;
}

static int nth_op(struct nth *t, int op)
{
	int ret = 0;

	switch (op) {
	case 0: {	/* open a client */
		int fd;

		nth_arm();
		fd = open(DEV0, O_RDWR | O_CLOEXEC);
		ret = fd < 0 ? -errno : 0;
		nth_disarm();
		if (fd >= 0)
			close(fd);
		break;
	}
	case 1: {	/* a buffer */
		struct vtpu_bo_create bc = { .size = 65536 };
		struct vtpu_bo_close cl = { 0 };

		nth_arm();
		ret = ioctl(t->fd, VTPU_IOCTL_BO_CREATE, &bc) ? -errno : 0;
		nth_disarm();
		cl.handle = bc.handle;
		if (!ret)
			ioctl(t->fd, VTPU_IOCTL_BO_CLOSE, &cl);
		break;
	}
	case 2: {	/* a queue */
		struct vtpu_queue_create qc = { .priority = 1 };
		struct vtpu_queue_destroy qd = { 0 };

		nth_arm();
		ret = ioctl(t->fd, VTPU_IOCTL_QUEUE_CREATE, &qc) ? -errno : 0;
		nth_disarm();
		qd.queue_id = qc.queue_id;
		if (!ret)
			ioctl(t->fd, VTPU_IOCTL_QUEUE_DESTROY, &qd);
		break;
	}
	case 3:
		return nth_submit(t, 0, -1, 0);
	case 4:
		return nth_submit(t, VTPU_SUBMIT_OUT_FENCE, -1, 0);
	case 5:
		return nth_submit(t, VTPU_SUBMIT_IN_FENCE | VTPU_SUBMIT_OUT_FENCE,
				  t->done_fence, 0);
	case 6:
		return nth_submit(t, VTPU_SUBMIT_IN_FENCE | VTPU_SUBMIT_OUT_FENCE,
				  t->busy_fence, 0);
	case 7:
		return nth_submit(t, VTPU_SUBMIT_IN_FENCE, t->busy_fence, 0);
	case 8:
		return nth_submit(t, 0, -1, 1);
	case 9: {	/* export */
		struct vtpu_bo_export be = { .handle = t->bo.handle, .flags = O_CLOEXEC };

		nth_arm();
		ret = ioctl(t->fd, VTPU_IOCTL_BO_EXPORT, &be) ? -errno : 0;
		nth_disarm();
		if (!ret)
			close(be.fd);
		break;
	}
	case 10: {	/* import into another client */
		struct vtpu_bo_export be = { .handle = t->bo.handle, .flags = O_CLOEXEC };
		struct vtpu_bo_import bi = { 0 };
		int fd = open(DEV0, O_RDWR | O_CLOEXEC);

		if (fd < 0 || ioctl(t->fd, VTPU_IOCTL_BO_EXPORT, &be))
			return -EIO;
		bi.fd = be.fd;
		nth_arm();
		ret = ioctl(fd, VTPU_IOCTL_BO_IMPORT, &bi) ? -errno : 0;
		nth_disarm();
		close(be.fd);
		close(fd);
		break;
	}
	case 11: {	/* mmap a buffer */
		void *p;

		nth_arm();
		p = mmap(NULL, t->bo.size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 t->fd, (off_t)t->bo.handle << 40);
		ret = p == MAP_FAILED ? -errno : 0;
		nth_disarm();
		if (p != MAP_FAILED)
			munmap(p, t->bo.size);
		break;
	}
	case 12: {	/* close a client with a job waiting for another */
		struct vtpu_dev *d = vtpu_open(DEV0);
		struct vtpu_bo b;
		struct vtpu_cmdbuf cb;
		struct vtpu_job job = { .in_fence = t->busy_fence };
		uint32_t q;
		int fd;

		if (!d || vtpu_bo_create(d, 4096, &b) ||
		    vtpu_queue_create(d, VTPU_QUEUE_PRIORITY_NORMAL, &q))
			return -EIO;
		vtpu_cmdbuf_init(&cb);
		vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &b), 0, 16, 1);
		job.queue = q;
		ret = vtpu_submit(d, &cb, &job);
		vtpu_cmdbuf_fini(&cb);
		munmap(b.map, b.size);
		fd = dup(vtpu_fd(d));
		vtpu_close(d);		/* the dup keeps the file open */
		nth_arm();
		close(fd);		/* release: cancels the job */
		nth_disarm();
		break;
	}
	}
	return ret;
}

static const char *const nth_names[] = {
	"open", "BO_CREATE", "QUEUE_CREATE", "SUBMIT", "SUBMIT+OUT_FENCE",
	"SUBMIT+IN_FENCE(signalled)+OUT_FENCE", "SUBMIT+IN_FENCE(pending)+OUT_FENCE",
	"SUBMIT+IN_FENCE(pending)", "SUBMIT repeat+strides", "BO_EXPORT",
	"BO_IMPORT", "mmap", "close with a job waiting",
};

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, v, strlen(v)) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

/* A job that keeps the device busy for a while; its fence. */
static int long_fence(struct vtpu_dev *dev, uint32_t q, struct vtpu_bo *bo)
{
	struct vtpu_gemm_desc g = { .m = 64, .n = 64, .k = 64, .alpha = 1.0f };
	struct vtpu_cmdbuf cb;
	struct vtpu_job job = { .queue = q, .want_out_fence = 1, .repeat = 40 };
	int ret;

	vtpu_cmdbuf_init(&cb);
	g.a_buf = g.b_buf = g.c_buf = vtpu_cmdbuf_use(&cb, bo);
	g.b_off = 16384;
	g.c_off = 32768;
	vtpu_cmdbuf_gemm(&cb, &g);
	ret = vtpu_submit(dev, &cb, &job);
	vtpu_cmdbuf_fini(&cb);
	return ret ? -1 : job.out_fence;
}

TEST_F_TIMEOUT(fuzz, fail_nth_sweep, 600)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	};
	long long c0[GEN_NCOUNTERS], c[GEN_NCOUNTERS], used0, clients0;
	struct nth t = { 0 };
	struct vtpu_dev *good;
	struct vtpu_bo gbo;
	struct vtpu_job fj = { 0 };
	uint32_t gq;
	int op, n, ret, reports0, reports, points = 0, fails = 0;
	int ops = sizeof(nth_names) / sizeof(nth_names[0]);
	size_t k;

	if (access(DEV0, F_OK))
		SKIP(return, DEV0 " is absent (is vtpu.ko loaded?)");
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (nth_fd < 0 || access(knobs[0][0], W_OK))
		SKIP(return, "no fault injection in this kernel (make check-debug has it)");
	for (k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++)
		ASSERT_EQ(0, write_str(knobs[k][0], knobs[k][1]));

	reports0 = gen_kernel_reports();
	gen_counters(0, c0);
	used0 = gen_sysfs(0, "mem_used");
	clients0 = gen_sysfs(0, "clients");
	good = vtpu_open(DEV0);
	ASSERT_NE(NULL, good);
	ASSERT_EQ(0, vtpu_bo_create(good, 4096, &gbo));
	ASSERT_EQ(0, vtpu_queue_create(good, VTPU_QUEUE_PRIORITY_HIGH, &gq));
	ASSERT_EQ(0, real_fence(good, gq, &gbo, &fj));

	t.dev = vtpu_open(DEV0);
	ASSERT_NE(NULL, t.dev);
	t.fd = vtpu_fd(t.dev);
	ASSERT_EQ(0, vtpu_bo_create(t.dev, 65536, &t.bo));
	ASSERT_EQ(0, vtpu_bo_create(t.dev, 65536, &t.bo2));
	ASSERT_EQ(0, vtpu_queue_create(t.dev, VTPU_QUEUE_PRIORITY_NORMAL, &t.q));
	ASSERT_EQ(0, vtpu_queue_create(t.dev, VTPU_QUEUE_PRIORITY_LOW, &t.q2));
	t.done_fence = fj.out_fence;
	t.strides[0] = 256;

	for (op = 0; op < ops; op++) {
		int op_points = 0, op_fails = 0;

		for (n = 1; n < 500; n++) {
			/* a fresh pending fence for the ops that wait on one */
			t.busy_fence = (op == 6 || op == 7 || op == 12) ?
				long_fence(t.dev, t.q2, &t.bo2) : -1;
			nth_n = n;
			nth_left = -1;
			ret = nth_op(&t, op);
			if (t.busy_fence >= 0) {
				vtpu_fence_wait(t.busy_fence, 60000);
				close(t.busy_fence);
			}
			ASSERT_LE(0, nth_left)
				TH_LOG("%s: setup failed or fail-nth unusable", nth_names[op]);
			if (nth_left)	/* fewer than n allocations: all tried */
				break;
			op_points++;
			op_fails += ret != 0;
			/* the device still works, for this client and another */
			ret = known_good(good, gq, &gbo, (float)n);
			ASSERT_EQ(0, ret) TH_LOG("%s with allocation %d failing broke the device: %s",
						 nth_names[op], n, strerror(-ret));
		}
		TH_LOG("%s: %d allocations, each failed once: %d times the call failed, %d times it coped",
		       nth_names[op], op_points, op_fails, op_points - op_fails);
		points += op_points;
		fails += op_fails;
	}
	close(nth_fd);
	vtpu_close(t.dev);
	munmap(t.bo.map, t.bo.size);
	munmap(t.bo2.map, t.bo2.size);
	close(fj.out_fence);
	vtpu_bo_destroy(good, &gbo);
	vtpu_close(good);

	TH_LOG("%d operations, %d allocation failures injected one at a time (fail-nth), %d calls failed cleanly",
	       ops, points, fails);
	ret = gen_settle(0, c0, used0, clients0, c, 30000);
	TH_LOG("vtpu0: jobs_submitted %lld = completed %lld + failed %lld + timedout %lld + cancelled %lld; mem_used %lld (was %lld), clients %lld (was %lld)",
	       c[0], c[1], c[2], c[3], c[4], gen_sysfs(0, "mem_used"), used0,
	       gen_sysfs(0, "clients"), clients0);
	EXPECT_EQ(0, ret);
	reports = gen_kernel_reports();
	TH_LOG("kernel reports: %d", reports - reports0);
	EXPECT_EQ(reports0, reports);
	EXPECT_LT(0, points);
}

TEST_HARNESS_MAIN
