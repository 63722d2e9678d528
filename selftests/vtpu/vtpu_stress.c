// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_stress: the device under load, faults and bad input at once. Many
 * processes, each with several queues, submit jobs of random shapes (every
 * opcode, chained by in-fences across queues, on both devices, some run
 * twice with each buffer's view moved by a stride) and check
 * every result against the cpu executor run on a copy of the inputs in the
 * same process. Meanwhile other clients close their fd mid-job, get
 * SIGKILLed, fork and share their fd, fill the memory cap, overrun their
 * watchdog, destroy queues with jobs pending and submit garbage.
 *
 * Nothing may be lost: every good job ends DONE with the oracle's bytes,
 * every fence signals, and once all clients are gone each device's
 * counters balance (submitted = completed + failed + timedout + cancelled),
 * mem_used and clients are back to where they were, and the kernel logged
 * no report (KASAN, lockdep, WARN, ...).
 *
 * VTPU_STRESS_SCALE=X multiplies the job counts (default 1: 9600 jobs,
 * 40-70 s in the guest, where floating point is ~100x slower than on the
 * host; 0.05 for a quick pass, 10 for a soak).
 * Runs against the real module (in the VM, "devices=2 mem_cap_mb=256");
 * skips when /dev/vtpu0 is absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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

#define DEV_FMT "/dev/vtpu%d"
#define MAX_DEVS 2
#define GOOD_CLIENTS 4
#define CHAOS_CLIENTS 2
#define NPROCS (GOOD_CLIENTS + CHAOS_CLIENTS + 1)
#define QUEUES 3
#define WINDOW 4		/* jobs in flight per good client */
#define JOBS_PER_CLIENT 2400	/* times VTPU_STRESS_SCALE */
#define MAX_NOTES 4		/* failure descriptions kept per process */

/* What one process did; the parent adds them up. */
struct pstats {
	long jobs_ok, jobs_bad, cmds, opens, enospc_retries, fences;
	long closes, kills, forks, garbage, garbage_accepted, cap_hits;
	long timeouts, cancels, chained, errors;
	int done;
	char notes[MAX_NOTES][200];
	int nnotes;
};

struct shared {
	volatile int stop;		/* the good clients are done */
	double long_ms;			/* one long-job repeat, ms */
	struct pstats p[NPROCS];
};

static struct shared *sh;
static int ndevs = 1;

static void note(struct pstats *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct pstats *ps, const char *fmt, ...)
{
	va_list ap;

	ps->errors++;
	if (ps->nnotes >= MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->notes[ps->nnotes++], sizeof(ps->notes[0]), fmt, ap);
	va_end(ap);
}

static struct vtpu_dev *dev_open(int index)
{
	char path[32];

	snprintf(path, sizeof(path), DEV_FMT, index);
	return vtpu_open(path);
}

/* VTPU_STRESS_SCALE: 2 doubles the jobs, 0.25 quarters them. */
static double scale(void)
{
	const char *s = getenv("VTPU_STRESS_SCALE");
	double v = s ? atof(s) : 1;

	return v < 0.01 ? 0.01 : v;
}

/* Create a device buffer, retrying while the memory cap is full. */
static int bo_create_retry(struct vtpu_dev *dev, uint64_t size,
			   struct vtpu_bo *bo, struct pstats *ps)
{
	double end = gen_now_ms() + 20000;
	int ret;

	memset(bo, 0, sizeof(*bo));
	while ((ret = vtpu_bo_create(dev, size, bo)) == -ENOSPC &&
	       gen_now_ms() < end) {
		ps->enospc_retries++;
		usleep(2000);
	}
	return ret;
}

/* ---- the long job: a 64^3 GEMM repeated ----------------------------------- */

#define LONG_N 64

struct long_job {
	struct vtpu_bo a, b, c;
	struct vtpu_cmdbuf cb;
};

static int long_job_init(struct vtpu_dev *dev, struct long_job *lj,
			 struct pstats *ps)
{
	const uint64_t sz = LONG_N * LONG_N * 4;
	struct vtpu_gemm_desc g = {
		.m = LONG_N, .n = LONG_N, .k = LONG_N, .alpha = 1.0f,
	};

	memset(lj, 0, sizeof(*lj));
	if (bo_create_retry(dev, sz, &lj->a, ps) ||
	    bo_create_retry(dev, sz, &lj->b, ps) ||
	    bo_create_retry(dev, sz, &lj->c, ps))
		return -1;
	vtpu_cmdbuf_init(&lj->cb);
	g.a_buf = vtpu_cmdbuf_use(&lj->cb, &lj->a);
	g.b_buf = vtpu_cmdbuf_use(&lj->cb, &lj->b);
	g.c_buf = vtpu_cmdbuf_use(&lj->cb, &lj->c);
	return vtpu_cmdbuf_gemm(&lj->cb, &g);
}

/* Repeats of the long job that take about @ms. */
static uint32_t long_reps(double ms)
{
	double r = ms / (sh->long_ms > 0.001 ? sh->long_ms : 0.001);

	return r < 2 ? 2 : r > 100000 ? 100000 : (uint32_t)r;
}

static int long_job_submit(struct vtpu_dev *dev, struct long_job *lj,
			   uint32_t q, double ms, struct vtpu_job *job)
{
	memset(job, 0, sizeof(*job));
	job->queue = q;
	job->want_out_fence = 1;
	job->repeat = long_reps(ms);
	return vtpu_submit(dev, &lj->cb, job);
}

/* ---- good clients ----------------------------------------------------------- */

struct slot {
	int busy;
	uint32_t nb, q, repeat, ncmds;
	long id;
	struct vtpu_bo dbo[GEN_MAXBUF], cbo[GEN_MAXBUF];
	uint64_t strides[GEN_MAXBUF];	/* per iteration, when repeated */
	struct vtpu_cmdbuf dcb, ccb;
	struct vtpu_job job;
};

static void slot_free(struct vtpu_dev *dev, struct slot *s)
{
	uint32_t i;

	for (i = 0; i < s->nb; i++) {
		if (s->dbo[i].map)
			vtpu_bo_destroy(dev, &s->dbo[i]);
		vtpu_cpu_bo_destroy(&s->cbo[i]);
	}
	if (s->job.out_fence >= 0)
		close(s->job.out_fence);
	s->job.out_fence = -1;
	s->busy = 0;
}

/* Wait for a slot's job and check every buffer against the oracle. */
static void slot_finish(struct vtpu_dev *dev, struct slot *s,
			struct pstats *ps, int me)
{
	uint32_t status = 0, i;
	int32_t jerr = 0;
	size_t bad = 0, first = 0;
	int ret;

	if (s->job.out_fence >= 0) {
		ret = vtpu_fence_wait(s->job.out_fence, 120000);
		if (ret)
			note(ps, "client %d job %ld: fence wait: %s", me, s->id,
			     strerror(-ret));
		else
			ps->fences++;
	}
	ret = vtpu_wait(dev, s->q, s->job.seqno, 120000000000ll, &status, &jerr);
	if (ret || status != VTPU_JOB_DONE) {
		note(ps, "client %d job %ld (%u cmds): wait %d, status %s, error %d",
		     me, s->id, s->ncmds, ret, vtpu_status_name(status), jerr);
		ps->jobs_bad++;
		slot_free(dev, s);
		return;
	}
	for (i = 0; i < s->nb; i++) {
		bad = gen_compare(s->dbo[i].map, s->cbo[i].map, s->dbo[i].size,
				  &first);
		if (bad)
			break;
	}
	if (bad) {
		uint32_t g = ((uint32_t *)s->dbo[i].map)[first];
		uint32_t w = ((uint32_t *)s->cbo[i].map)[first];

		note(ps, "client %d job %ld (%u cmds, repeat %u): buffer %u: %zu words differ from the cpu executor, first at byte %zu: %#x, want %#x",
		     me, s->id, s->ncmds, s->repeat, i, bad, first * 4, g, w);
		ps->jobs_bad++;
	} else {
		ps->jobs_ok++;
		ps->cmds += s->ncmds;
	}
	slot_free(dev, s);
}

static void good_client(int me, int devidx, int njobs)
{
	struct pstats *ps = &sh->p[me];
	struct slot slots[WINDOW];
	struct gen_rng rng;
	struct gen_ctx g;
	struct vtpu_cpu *cpu;
	struct vtpu_dev *dev;
	uint32_t q[QUEUES], i;
	uint64_t simd = 0;
	long n;
	int ret, prev = -1;

	gen_seed(&rng, 1000 + me);
	dev = dev_open(devidx);
	if (!dev) {
		note(ps, "client %d: open: %s", me, strerror(errno));
		return;
	}
	ps->opens++;
	vtpu_get_param(dev, VTPU_PARAM_SIMD_LEVEL, &simd);
	cpu = vtpu_cpu_create(1, (int)simd, VTPU_CPU_GEMM_ENGINE);
	if (!cpu) {
		note(ps, "client %d: vtpu_cpu_create: %s", me, strerror(errno));
		return;
	}
	for (i = 0; i < QUEUES; i++) {
		ret = vtpu_queue_create(dev, gen_below(&rng, 3), &q[i]);
		if (ret) {
			note(ps, "client %d: queue_create: %s", me, strerror(-ret));
			return;
		}
	}
	memset(slots, 0, sizeof(slots));
	for (i = 0; i < WINDOW; i++) {
		vtpu_cmdbuf_init(&slots[i].dcb);
		vtpu_cmdbuf_init(&slots[i].ccb);
		slots[i].job.out_fence = -1;
	}

	for (n = 0; n < njobs; n++) {
		struct slot *s = &slots[n % WINDOW];
		struct vtpu_job cj = { 0 };
		char msg[256];

		if (s->busy)
			slot_finish(dev, s, ps, me);
		s->id = n;
		s->nb = gen_range(&rng, 2, GEN_MAXBUF);
		s->q = q[gen_below(&rng, QUEUES)];
		s->repeat = gen_one_in(&rng, 5) ? 2 : 1;
		memset(s->dbo, 0, sizeof(s->dbo));
		memset(s->cbo, 0, sizeof(s->cbo));
		for (i = 0; i < s->nb; i++) {
			uint64_t size = 4096ull * gen_range(&rng, 1, 8);

			if (vtpu_cpu_bo_create(size, &s->cbo[i]) ||
			    bo_create_retry(dev, size, &s->dbo[i], ps)) {
				note(ps, "client %d job %ld: buffer of %llu bytes: %s",
				     me, n, (unsigned long long)size,
				     strerror(errno));
				s->nb = i + 1;
				slot_free(dev, s);
				goto out;
			}
		}
		gen_start(&g, &rng, &s->ccb, s->cbo, s->nb);
		s->ncmds = gen_stream(&g, 6);
		gen_clone(&s->dcb, &s->ccb, s->dbo);
		/* a repeated job's second iteration sees each buffer moved */
		for (i = 0; i < s->nb; i++)
			s->strides[i] = gen_stride(&g, i, s->cbo[i].size);

		/* the device runs the job while the oracle runs here */
		memset(&s->job, 0, sizeof(s->job));
		s->job.queue = s->q;
		s->job.repeat = s->repeat;
		s->job.strides = s->strides;
		s->job.want_out_fence = gen_one_in(&rng, 2);
		if (prev >= 0 && slots[prev].busy &&
		    slots[prev].job.out_fence >= 0 && gen_one_in(&rng, 3)) {
			s->job.in_fence = slots[prev].job.out_fence;
			ps->chained++;
		}
		ret = vtpu_submit(dev, &s->dcb, &s->job);
		if (!s->job.want_out_fence)
			s->job.out_fence = -1;
		if (ret) {
			char link[64] = "", path[32];

			snprintf(path, sizeof(path), "/proc/self/fd/%d",
				 s->job.in_fence);
			if (s->job.in_fence > 0 &&
			    readlink(path, link, sizeof(link) - 1) < 0)
				snprintf(link, sizeof(link), "%s", strerror(errno));
			note(ps, "client %d job %ld: submit: %s; %s (in-fence fd %d: %s)",
			     me, n, strerror(-ret),
			     vtpu_job_strerror(&s->dcb, &s->job, msg, sizeof(msg)),
			     s->job.in_fence, link);
			ps->jobs_bad++;
			slot_free(dev, s);
			continue;
		}
		s->busy = 1;
		prev = n % WINDOW;
		cj.repeat = s->repeat;
		cj.strides = s->strides;
		ret = vtpu_cpu_run(cpu, &s->ccb, &cj);
		if (ret)
			note(ps, "client %d job %ld: the cpu executor refused the stream: %s; %s",
			     me, n, strerror(-ret),
			     vtpu_job_strerror(&s->ccb, &cj, msg, sizeof(msg)));
	}
	for (i = 0; i < WINDOW; i++)
		if (slots[i].busy)
			slot_finish(dev, &slots[i], ps, me);
out:
	for (i = 0; i < WINDOW; i++) {
		vtpu_cmdbuf_fini(&slots[i].dcb);
		vtpu_cmdbuf_fini(&slots[i].ccb);
	}
	vtpu_cpu_destroy(cpu);
	vtpu_close(dev);
}

/* ---- the memory hog ------------------------------------------------------- */

/* Fill the cap with unmapped buffers, hold it, check a job, free it all. */
static void hog(int me)
{
	struct pstats *ps = &sh->p[me];
	struct gen_rng rng;
	struct vtpu_dev *dev;
	struct vtpu_bo small;
	static uint32_t handles[4096];
	uint64_t chunk;
	int fd, n, i, ret;

	gen_seed(&rng, 77);
	dev = dev_open(0);
	if (!dev) {
		note(ps, "hog: open: %s", strerror(errno));
		return;
	}
	ps->opens++;
	fd = vtpu_fd(dev);
	if (vtpu_bo_create(dev, 4096, &small)) {
		note(ps, "hog: no small buffer");
		vtpu_close(dev);
		return;
	}
	while (!sh->stop) {
		n = 0;
		for (chunk = 16 << 20; chunk >= 64 << 10; chunk >>= 2) {
			while (n < 4096) {
				struct vtpu_bo_create bc = { .size = chunk };

				if (ioctl(fd, VTPU_IOCTL_BO_CREATE, &bc))
					break;
				handles[n++] = bc.handle;
			}
			if (errno != ENOSPC && errno != ENOMEM)
				note(ps, "hog: BO_CREATE(%llu): %s",
				     (unsigned long long)chunk, strerror(errno));
		}
		ps->cap_hits++;
		/* at the cap, a job on a buffer it has still runs */
		{
			struct vtpu_cmdbuf cb;
			struct vtpu_job job = { 0 };
			uint32_t q, status = 0;
			float v = 3.0f + ps->cap_hits;
			float *p = small.map;

			vtpu_cmdbuf_init(&cb);
			vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &small), 0,
					 1024, v);
			ret = vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q);
			if (!ret) {
				job.queue = q;
				ret = vtpu_submit(dev, &cb, &job);
			}
			if (!ret)
				ret = vtpu_wait(dev, q, job.seqno, 60000000000ll,
						&status, NULL);
			if (ret || status != VTPU_JOB_DONE || p[0] != v ||
			    p[1023] != v)
				note(ps, "hog: a job at the cap: %d, status %s",
				     ret, vtpu_status_name(status));
			vtpu_queue_destroy(dev, q);
			vtpu_cmdbuf_fini(&cb);
		}
		usleep(gen_range(&rng, 50, 250) * 1000);
		for (i = 0; i < n; i++) {
			struct vtpu_bo_close cl = { .handle = handles[i] };

			if (ioctl(fd, VTPU_IOCTL_BO_CLOSE, &cl))
				note(ps, "hog: BO_CLOSE: %s", strerror(errno));
		}
		usleep(gen_range(&rng, 100, 500) * 1000);
	}
	vtpu_bo_destroy(dev, &small);
	vtpu_close(dev);
}

/* ---- chaos: clients that misbehave ------------------------------------------ */

/* A long job, then close the fd mid-job: the fence must still signal. */
static void chaos_close(struct pstats *ps, struct gen_rng *rng)
{
	struct vtpu_dev *dev = dev_open(gen_below(rng, ndevs));
	struct long_job lj;
	struct vtpu_job job;
	uint32_t q;
	int ret;

	if (!dev)
		return note(ps, "close: open: %s", strerror(errno));
	ps->opens++;
	if (long_job_init(dev, &lj, ps) ||
	    vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q) ||
	    long_job_submit(dev, &lj, q, 200, &job)) {
		note(ps, "close: setup failed");
		vtpu_close(dev);
		return;
	}
	usleep(gen_below(rng, 30) * 1000);
	/* the maps keep the buffers (and the file) until munmap */
	vtpu_close(dev);
	munmap(lj.a.map, lj.a.size);
	munmap(lj.b.map, lj.b.size);
	munmap(lj.c.map, lj.c.size);
	vtpu_cmdbuf_fini(&lj.cb);
	ret = vtpu_fence_wait(job.out_fence, 60000);
	if (ret == -ETIME)
		note(ps, "close: the fence of a job whose fd closed never signalled");
	close(job.out_fence);
	ps->closes++;
	ps->fences++;
}

/* A child with a job in flight, SIGKILLed. */
static void chaos_kill(struct pstats *ps, struct gen_rng *rng)
{
	int devidx = gen_below(rng, ndevs), st, sync[2];
	pid_t pid;
	char c;

	if (pipe(sync))
		return note(ps, "kill: pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(sync[0]);
		close(sync[1]);
		return note(ps, "kill: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		struct vtpu_dev *dev = dev_open(devidx);
		struct long_job lj;
		struct vtpu_job job;
		uint32_t q;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!dev || long_job_init(dev, &lj, ps) ||
		    vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_HIGH, &q))
			_exit(1);
		/* one job at a time, so the queue stays short */
		if (long_job_submit(dev, &lj, q, 50, &job) ||
		    write(sync[1], "s", 1) != 1)
			_exit(2);
		for (;;) {
			vtpu_fence_wait(job.out_fence, -1);
			close(job.out_fence);
			if (long_job_submit(dev, &lj, q, 50, &job))
				_exit(3);
		}
	}
	close(sync[1]);
	if (read(sync[0], &c, 1) != 1)
		note(ps, "kill: the child failed before its first job");
	close(sync[0]);
	usleep(gen_range(rng, 5, 60) * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ps->opens++;
	ps->kills++;
}

/* fork() with the fd: parent and child both submit on one inherited queue. */
static void chaos_fork(struct pstats *ps, struct gen_rng *rng)
{
	struct vtpu_dev *dev = dev_open(gen_below(rng, ndevs));
	struct vtpu_bo bo[2];
	uint32_t q;
	pid_t pid;
	int st, who;

	if (!dev)
		return note(ps, "fork: open: %s", strerror(errno));
	ps->opens++;
	if (bo_create_retry(dev, 16384, &bo[0], ps) ||
	    bo_create_retry(dev, 16384, &bo[1], ps) ||
	    vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_LOW, &q)) {
		note(ps, "fork: setup failed");
		vtpu_close(dev);
		return;
	}
	pid = fork();
	if (pid < 0) {
		note(ps, "fork: %s", strerror(errno));
	} else {
		int i, bad = 0;

		if (pid == 0)
			prctl(PR_SET_PDEATHSIG, SIGKILL);
		who = pid == 0;
		for (i = 0; i < 4 && !bad; i++) {
			struct vtpu_cmdbuf cb;
			struct vtpu_job job = { .queue = q };
			uint32_t status = 0;
			float v = 10.0f * who + i, *p = bo[who].map;

			vtpu_cmdbuf_init(&cb);
			vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &bo[who]), 0,
					 4096, v);
			if (vtpu_submit(dev, &cb, &job) ||
			    vtpu_wait(dev, q, job.seqno, 60000000000ll, &status,
				      NULL) ||
			    status != VTPU_JOB_DONE || p[0] != v || p[4095] != v)
				bad = 1;
			vtpu_cmdbuf_fini(&cb);
		}
		if (pid == 0)
			_exit(bad);
		if (bad)
			note(ps, "fork: the parent's job on the shared fd failed");
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			note(ps, "fork: the child's job on the inherited fd failed");
		ps->forks++;
	}
	vtpu_bo_destroy(dev, &bo[0]);
	vtpu_bo_destroy(dev, &bo[1]);
	vtpu_close(dev);
}

/*
 * Garbage streams: random bytes, and valid streams with a few bytes
 * changed. Each is rejected or runs; one that runs must end.
 */
static void chaos_garbage(struct pstats *ps, struct gen_rng *rng)
{
	struct vtpu_dev *dev = dev_open(gen_below(rng, ndevs));
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_LOW,
			.timeout_ms = 2000);
	struct vtpu_bo cbo[3], dbo[3];
	struct vtpu_cmdbuf ccb, dcb;
	struct gen_ctx g;
	uint32_t q, i, k;
	int fd;

	if (!dev)
		return note(ps, "garbage: open: %s", strerror(errno));
	ps->opens++;
	fd = vtpu_fd(dev);
	vtpu_cmdbuf_init(&ccb);
	vtpu_cmdbuf_init(&dcb);
	memset(dbo, 0, sizeof(dbo));
	for (i = 0; i < 3; i++)
		if (vtpu_cpu_bo_create(16384, &cbo[i]) ||
		    bo_create_retry(dev, 16384, &dbo[i], ps))
			goto out;
	if (vtpu_queue_create_opts(dev, &o, &q))
		goto out;
	for (k = 0; k < 20; k++) {
		struct vtpu_submit s = { 0 };
		uint32_t handles[4], status = 0;
		uint8_t *bytes;

		gen_start(&g, rng, &ccb, cbo, 3);
		gen_stream(&g, 3);
		gen_clone(&dcb, &ccb, dbo);
		bytes = dcb.data;
		if (gen_one_in(rng, 4)) {
			for (i = 0; i < dcb.size; i++)
				bytes[i] = gen_next(rng);
		} else {
			for (i = gen_range(rng, 1, 4); i--;)
				bytes[gen_below(rng, dcb.size)] = gen_next(rng);
		}
		for (i = 0; i < 3; i++)
			handles[i] = dcb.handles[i];
		handles[3] = gen_below(rng, 8);
		s.cmds_ptr = (uintptr_t)bytes;
		s.cmds_size = dcb.size;
		s.handles_ptr = (uintptr_t)handles;
		s.handle_count = gen_range(rng, 0, 4);
		s.queue_id = q;
		ps->garbage++;
		if (ioctl(fd, VTPU_IOCTL_SUBMIT, &s))
			continue;
		ps->garbage_accepted++;
		{
			struct vtpu_wait w = {
				.queue_id = q, .seqno = s.seqno,
			};
			struct timespec t;

			clock_gettime(CLOCK_MONOTONIC, &t);
			w.timeout_ns = (t.tv_sec + 60) * 1000000000ll;
			if (ioctl(fd, VTPU_IOCTL_WAIT, &w))
				note(ps, "garbage: WAIT on an accepted stream: %s",
				     strerror(errno));
			status = w.status;
			if (status == VTPU_JOB_TIMEDOUT)
				ps->timeouts++;
		}
	}
	/* unknown ioctls and a struct that is all wrong */
	if (ioctl(fd, _IOWR(VTPU_IOCTL_BASE, 0x3f, struct vtpu_wait), &g) == 0)
		note(ps, "garbage: an unknown ioctl succeeded");
out:
	for (i = 0; i < 3; i++) {
		vtpu_cpu_bo_destroy(&cbo[i]);
		if (dbo[i].map)
			vtpu_bo_destroy(dev, &dbo[i]);
	}
	vtpu_cmdbuf_fini(&ccb);
	vtpu_cmdbuf_fini(&dcb);
	vtpu_close(dev);
}

/* A job longer than its queue's watchdog; jobs behind a destroyed queue. */
static void chaos_timeout_cancel(struct pstats *ps, struct gen_rng *rng)
{
	struct vtpu_dev *dev = dev_open(gen_below(rng, ndevs));
	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = 10);
	struct long_job lj;
	struct vtpu_job job, more[3];
	uint32_t q, q2, status = 0;
	int i, ret;

	if (!dev)
		return note(ps, "timeout: open: %s", strerror(errno));
	ps->opens++;
	if (long_job_init(dev, &lj, ps) || vtpu_queue_create_opts(dev, &o, &q) ||
	    vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_LOW, &q2) ||
	    long_job_submit(dev, &lj, q, 300, &job)) {
		note(ps, "timeout: setup failed");
		goto out;
	}
	ret = vtpu_wait(dev, q, job.seqno, 60000000000ll, &status, NULL);
	if (ret)
		note(ps, "timeout: wait: %s", strerror(-ret));
	else if (status == VTPU_JOB_TIMEDOUT)
		ps->timeouts++;
	else if (status != VTPU_JOB_DONE)
		note(ps, "timeout: a job over its watchdog ended %s",
		     vtpu_status_name(status));
	if (vtpu_fence_wait(job.out_fence, 60000) == -ETIME)
		note(ps, "timeout: the fence of a timed-out job never signalled");
	close(job.out_fence);

	/* three jobs queued behind each other, then the queue goes */
	for (i = 0; i < 3; i++)
		if (long_job_submit(dev, &lj, q2, 100, &more[i]))
			note(ps, "cancel: submit failed");
	vtpu_queue_destroy(dev, q2);
	for (i = 0; i < 3; i++) {
		ret = vtpu_fence_wait(more[i].out_fence, 60000);
		if (ret == -ETIME)
			note(ps, "cancel: a fence of a destroyed queue never signalled");
		else if (ret == -ECANCELED)
			ps->cancels++;
		close(more[i].out_fence);
	}
	(void)gen_below(rng, 2);
out:
	vtpu_close(dev);
	munmap(lj.a.map, lj.a.size);
	munmap(lj.b.map, lj.b.size);
	munmap(lj.c.map, lj.c.size);
	vtpu_cmdbuf_fini(&lj.cb);
}

static void chaos(int me)
{
	struct pstats *ps = &sh->p[me];
	struct gen_rng rng;

	gen_seed(&rng, 500 + me);
	while (!sh->stop) {
		switch (gen_below(&rng, 5)) {
		case 0:
			chaos_close(ps, &rng);
			break;
		case 1:
			chaos_kill(ps, &rng);
			break;
		case 2:
			chaos_fork(ps, &rng);
			break;
		case 3:
			chaos_garbage(ps, &rng);
			break;
		default:
			chaos_timeout_cancel(ps, &rng);
			break;
		}
	}
}

/* Milliseconds one repeat of the long job takes (timed once). */
static double calibrate(struct __test_metadata *_metadata)
{
	struct vtpu_dev *dev = dev_open(0);
	struct long_job lj;
	struct vtpu_job job = { 0 };
	uint32_t q, status = 0;
	double t;

	ASSERT_NE(NULL, dev);
	ASSERT_EQ(0, long_job_init(dev, &lj, &sh->p[0]));
	ASSERT_EQ(0, vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q));
	job.queue = q;
	job.repeat = 8;
	t = gen_now_ms();
	ASSERT_EQ(0, vtpu_submit(dev, &lj.cb, &job));
	ASSERT_EQ(0, vtpu_wait(dev, q, job.seqno, -1, &status, NULL));
	ASSERT_EQ(VTPU_JOB_DONE, status);
	t = (gen_now_ms() - t) / 8;
	vtpu_close(dev);
	munmap(lj.a.map, lj.a.size);
	munmap(lj.b.map, lj.b.size);
	munmap(lj.c.map, lj.c.size);
	vtpu_cmdbuf_fini(&lj.cb);
	return t;
}

FIXTURE(stress)
{
	int present;
};

FIXTURE_SETUP(stress)
{
	self->present = access("/dev/vtpu0", F_OK) == 0;
}

FIXTURE_TEARDOWN(stress)
{
}

TEST_F_TIMEOUT(stress, mixed_clients, 600)
{
	long long c0[MAX_DEVS][GEN_NCOUNTERS], c[MAX_DEVS][GEN_NCOUNTERS];
	long long used0[MAX_DEVS], clients0[MAX_DEVS];
	struct pstats tot = { 0 };
	pid_t pids[NPROCS];
	int reports0, reports, i, d, st, njobs;
	double t0;

	if (!self->present)
		SKIP(return, "/dev/vtpu0 is absent (is vtpu.ko loaded?)");
	ndevs = access("/dev/vtpu1", F_OK) == 0 ? 2 : 1;
	njobs = JOBS_PER_CLIENT * scale() + 0.5;
	if (njobs < 1)
		njobs = 1;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	reports0 = gen_kernel_reports();
	for (d = 0; d < ndevs; d++) {
		gen_counters(d, c0[d]);
		used0[d] = gen_sysfs(d, "mem_used");
		clients0[d] = gen_sysfs(d, "clients");
	}
	sh->long_ms = calibrate(_metadata);
	TH_LOG("one 64^3 GEMM: %.2f ms; %d good clients x %d jobs x %d queues, %d chaos clients, 1 memory hog, %d device(s)",
	       sh->long_ms, GOOD_CLIENTS, njobs, QUEUES, CHAOS_CLIENTS, ndevs);

	t0 = gen_now_ms();
	for (i = 0; i < NPROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (i < GOOD_CLIENTS)
				good_client(i, i % ndevs, njobs);
			else if (i < GOOD_CLIENTS + CHAOS_CLIENTS)
				chaos(i);
			else
				hog(i);
			sh->p[i].done = 1;
			_exit(0);
		}
	}
	for (i = 0; i < GOOD_CLIENTS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("good client %d died (status %#x)", i, st);
	}
	sh->stop = 1;
	for (i = GOOD_CLIENTS; i < NPROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("process %d died (status %#x)", i, st);
	}

	for (i = 0; i < NPROCS; i++) {
		struct pstats *p = &sh->p[i];
		int k;

		tot.jobs_ok += p->jobs_ok;
		tot.jobs_bad += p->jobs_bad;
		tot.cmds += p->cmds;
		tot.opens += p->opens;
		tot.enospc_retries += p->enospc_retries;
		tot.fences += p->fences;
		tot.closes += p->closes;
		tot.kills += p->kills;
		tot.forks += p->forks;
		tot.garbage += p->garbage;
		tot.garbage_accepted += p->garbage_accepted;
		tot.cap_hits += p->cap_hits;
		tot.timeouts += p->timeouts;
		tot.cancels += p->cancels;
		tot.chained += p->chained;
		tot.errors += p->errors;
		for (k = 0; k < p->nnotes; k++)
			TH_LOG("process %d: %s", i, p->notes[k]);
	}
	TH_LOG("%.1f s: %ld jobs (%ld commands, %ld chained by in-fences) checked against the cpu executor: %ld right, %ld wrong or failed",
	       (gen_now_ms() - t0) / 1000, tot.jobs_ok + tot.jobs_bad, tot.cmds,
	       tot.chained, tot.jobs_ok, tot.jobs_bad);
	TH_LOG("clients: %d processes, %ld opens; faults injected: %ld closes mid-job, %ld SIGKILLs, %ld forks, %ld garbage streams (%ld accepted), %ld memory-cap fills (%ld ENOSPC retries), %ld watchdog timeouts, %ld cancelled by queue destroy; %ld fences signalled",
	       NPROCS, tot.opens, tot.closes, tot.kills, tot.forks, tot.garbage,
	       tot.garbage_accepted, tot.cap_hits, tot.enospc_retries,
	       tot.timeouts, tot.cancels, tot.fences);
	EXPECT_EQ(0, tot.jobs_bad);
	EXPECT_EQ(0, tot.errors);
	EXPECT_EQ((long)GOOD_CLIENTS * njobs, tot.jobs_ok);
	EXPECT_LT(0, tot.closes + tot.kills + tot.forks + tot.garbage);

	for (d = 0; d < ndevs; d++) {
		int ret = gen_settle(d, c0[d], used0[d], clients0[d], c[d], 30000);

		TH_LOG("vtpu%d: jobs_submitted %lld = completed %lld + failed %lld + timedout %lld + cancelled %lld; mem_used %lld (was %lld), clients %lld (was %lld)",
		       d, c[d][0], c[d][1], c[d][2], c[d][3], c[d][4],
		       gen_sysfs(d, "mem_used"), used0[d],
		       gen_sysfs(d, "clients"), clients0[d]);
		EXPECT_EQ(0, ret);
	}
	reports = gen_kernel_reports();
	TH_LOG("kernel reports: %d", reports - reports0);
	EXPECT_EQ(reports0, reports);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
