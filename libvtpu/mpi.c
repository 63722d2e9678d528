// SPDX-License-Identifier: MIT
/*
 * Data parallelism across processes and machines, over MPI (Open MPI):
 * the ranks of an mpirun job, the checks that they train the same model
 * on the same data, the broadcast of rank 0's state and the gradients'
 * all-reduce in a fixed order (docs/architecture.md, "Data parallelism").
 *
 * Every exchange starts with a non-blocking collective (MPI_I*) polled
 * with MPI_Testall until a deadline (VTPU_DIST_TIMEOUT seconds,
 * vtpu_dist_set_timeout()), so that a rank that died or hangs makes the
 * others fail with a message naming the operation and the step instead
 * of waiting forever; once every rank has answered, the gradients move
 * by blocking calls. The sum does not use MPI_Allreduce, whose order
 * depends on Open MPI's choice of algorithm: rank k receives slice k of
 * every rank's gradients (MPI_Alltoallv), adds them in rank order in
 * float, as the engine's ELEMENTWISE ADD does in-process (denormals
 * flushed), and sends the sum to every rank (MPI_Alltoallv again).
 *
 * Built without MPI (make MPI=0, or no ompi-c), the functions exist:
 * a process is rank 0 of 1, and a job of several ranks is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef VTPU_HAVE_MPI
#include <mpi.h>
#endif

#include "vtpu_model.h"
#include "vtpu_engine.h"
#include "dist_priv.h"

static struct {
	int rank, size;
	int inited;	/* we called MPI_Init_thread (and finalize) */
	int broken;	/* a collective timed out: finalize aborts */
	double timeout;
	long hang_rank;	/* VTPU_DIST_TEST_HANG: this rank hangs ... */
	uint64_t hang_step; /* ... in the all-reduce of this step */
	float *recv;	/* the all-reduce's slices from every rank */
	uint64_t recv_n;
} vd = { .size = 1, .hang_rank = -1 };

/* Launched by mpirun (or another PMI launcher) with this many ranks. */
static int launched_size(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
	};
	uint32_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && atoi(v) > 0)
			return atoi(v);
	}
	return 1;
}

int vtpu_dist_set_timeout(double seconds)
{
	if (!(seconds > 0) || seconds > 1e6)
		return -EINVAL;
	vd.timeout = seconds;
	return 0;
}

int vtpu_dist_rank(void)
{
	return vd.rank;
}

int vtpu_dist_size(void)
{
	return vd.size;
}

int vd_rank(void)
{
	return vd.rank;
}

int vd_size(void)
{
	return vd.size;
}

#ifndef VTPU_HAVE_MPI

int vtpu_dist_available(void)
{
	return 0;
}

int vtpu_dist_init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (launched_size() > 1) {
		fprintf(stderr,
			"vtpu: launched as one of %d ranks, but libvtpu was built without MPI (make MPI=1 with libopenmpi-dev)\n",
			launched_size());
		return -EOPNOTSUPP;
	}
	return 0;
}

int vtpu_dist_finalize(void)
{
	return 0;
}

void vtpu_dist_abort(int status)
{
	exit(status);
}

int vd_agree(const uint64_t *vals, uint32_t n, const char *const *names,
	     const char *what, char *err, size_t errlen)
{
	return 0;
}

int vd_bcast(void *buf, uint64_t bytes, const char *what, char *err,
	     size_t errlen)
{
	return 0;
}

int vd_allreduce(float *grads, uint64_t count, const void *mine,
		 void *all, uint32_t mbytes, uint64_t step, char *err,
		 size_t errlen)
{
	memcpy(all, mine, mbytes);
	return 0;
}

#else /* VTPU_HAVE_MPI */

int vtpu_dist_available(void)
{
	return 1;
}

int vtpu_dist_init(int *argc, char ***argv)
{
	const char *h = getenv("VTPU_DIST_TEST_HANG");
	int flag = 0, provided;

	if (vd.size > 1 || vd.inited)
		return 0;
	MPI_Initialized(&flag);
	if (!flag) {
		if (launched_size() < 2)
			return 0;	/* one process: nothing to join */
		/*
		 * Waiting ranks yield the CPU in Open MPI's blocking calls
		 * (unless the user said otherwise): spinning, they took the
		 * cores the other ranks compute on, and the shared 2-core
		 * machine gave 0.2x the steps/s of one process, against
		 * 0.94x yielding (docs/performance.md).
		 */
		setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
		if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED,
				    &provided) != MPI_SUCCESS) {
			fprintf(stderr, "vtpu: MPI_Init_thread failed\n");
			return -EIO;
		}
		vd.inited = 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &vd.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &vd.size);
	/* test hook: "RANK:STEP", that rank stops answering at that step */
	if (h && sscanf(h, "%ld:%" SCNu64, &vd.hang_rank, &vd.hang_step) != 2)
		vd.hang_rank = -1;
	return 0;
}

int vtpu_dist_finalize(void)
{
	free(vd.recv);
	vd.recv = NULL;
	vd.recv_n = 0;
	if (!vd.inited)
		return 0;
	if (vd.broken)
		MPI_Abort(MPI_COMM_WORLD, 1); /* the others may not answer */
	vd.inited = 0;
	return MPI_Finalize() == MPI_SUCCESS ? 0 : -EIO;
}

void vtpu_dist_abort(int status)
{
	if (vd.size > 1)
		MPI_Abort(MPI_COMM_WORLD, status);
	exit(status);
}

static double dist_timeout(void)
{
	const char *v;
	double t;

	if (vd.timeout > 0)
		return vd.timeout;
	v = getenv("VTPU_DIST_TIMEOUT");
	t = v ? strtod(v, NULL) : 0;
	return t > 0 ? t : 120;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait for @reqs until the deadline: MPI_Testall, yielding the CPU (the
 * other ranks may share it) and, past the first tries, sleeping 50 us.
 */
static int wait_all(MPI_Request *reqs, int n, const char *what, char *err,
		    size_t errlen)
{
	double t = dist_timeout(), end = now_s() + t;
	struct timespec nap = { 0, 50000 };
	uint32_t tries = 0;
	int done = 0;

	for (;;) {
		if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) !=
		    MPI_SUCCESS) {
			vd.broken = 1;
			snprintf(err, errlen, "rank %d of %d: MPI failed in %s",
				 vd.rank, vd.size, what);
			return -EIO;
		}
		if (done)
			return 0;
		if (now_s() > end)
			break;
		if (++tries < 200)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
	vd.broken = 1;
	snprintf(err, errlen,
		 "rank %d of %d: no answer from the other ranks for %g s in %s; is a rank dead?",
		 vd.rank, vd.size, t, what);
	return -ETIMEDOUT;
}

static int mpi_failed(const char *what, char *err, size_t errlen)
{
	vd.broken = 1;
	snprintf(err, errlen, "rank %d of %d: MPI failed in %s", vd.rank,
		 vd.size, what);
	return -EIO;
}

static int check_broken(char *err, size_t errlen)
{
	if (!vd.broken)
		return 0;
	snprintf(err, errlen,
		 "rank %d of %d: an earlier collective failed: the job cannot go on",
		 vd.rank, vd.size);
	return -EIO;
}

int vd_agree(const uint64_t *vals, uint32_t n, const char *const *names,
	     const char *what, char *err, size_t errlen)
{
	uint64_t *all;
	MPI_Request rq;
	char op[128];
	int r, ret;
	uint32_t i;

	ret = check_broken(err, errlen);
	if (ret || vd.size < 2)
		return ret;
	all = calloc((size_t)vd.size * n, sizeof(*all));
	if (!all)
		return -ENOMEM;
	snprintf(op, sizeof(op), "the check that every rank's %s is rank 0's",
		 what);
	ret = MPI_Iallgather(vals, (int)n, MPI_UINT64_T, all, (int)n,
			     MPI_UINT64_T, MPI_COMM_WORLD, &rq) != MPI_SUCCESS ?
		      -EIO : wait_all(&rq, 1, op, err, errlen);
	for (r = 1; !ret && r < vd.size; r++)
		for (i = 0; i < n; i++) {
			uint64_t a = all[i], b = all[(size_t)r * n + i];

			if (a == b)
				continue;
			snprintf(err, errlen,
				 "rank %d's %s differs from rank 0's: %s: %" PRIu64 " vs %" PRIu64,
				 r, what, names[i], b, a);
			ret = -EINVAL;
			break;
		}
	free(all);
	return ret;
}

int vd_bcast(void *buf, uint64_t bytes, const char *what, char *err,
	     size_t errlen)
{
	MPI_Request rq;
	uint64_t at, len;
	int ret;

	ret = check_broken(err, errlen);
	for (at = 0; !ret && vd.size > 1 && at < bytes; at += len) {
		len = bytes - at < (1u << 30) ? bytes - at : (1u << 30);
		if (MPI_Ibcast((char *)buf + at, (int)len, MPI_BYTE, 0,
			       MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
			return -EIO;
		ret = wait_all(&rq, 1, what, err, errlen);
	}
	return ret;
}

/* Where slice @k of @count floats starts: whole 16-float blocks. */
static uint64_t slice_at(uint64_t count, int k, int n)
{
	return k >= n ? count : count * (uint64_t)k / (uint64_t)n / 16 * 16;
}

int vd_allreduce(float *grads, uint64_t count, const void *mine,
		 void *all, uint32_t mbytes, uint64_t step, char *err,
		 size_t errlen)
{
	int R = vd.size, me = vd.rank, k, ret;
	int sc[R], sd[R], rc[R], rd[R];
	uint64_t lo = slice_at(count, me, R), len;
	MPI_Request rq[1];
	char what[96];
	float *out, *sum;
	uint32_t fp;
	uint64_t i;

	ret = check_broken(err, errlen);
	if (ret)
		return ret;
	if (R < 2) {
		memcpy(all, mine, mbytes);
		return 0;
	}
	if (count > INT32_MAX)
		return -E2BIG;
	len = slice_at(count, me + 1, R) - lo;
	/* the slices received, then their sum */
	if (vd.recv_n < len * (R + 1)) {
		free(vd.recv);
		vd.recv = malloc(len * (R + 1) * sizeof(float) + 64);
		vd.recv_n = vd.recv ? len * (R + 1) : 0;
		if (!vd.recv)
			return -ENOMEM;
	}
	sum = vd.recv + len * R;
	for (k = 0; k < R; k++) {
		sd[k] = (int)slice_at(count, k, R);
		sc[k] = (int)slice_at(count, k + 1, R) - sd[k];
		rc[k] = (int)len;
		rd[k] = (int)(len * k);
	}
	if (vd.hang_rank == me && vd.hang_step == step) {
		fprintf(stderr,
			"vtpu: rank %d: VTPU_DIST_TEST_HANG: hanging in step %" PRIu64 "\n",
			me, step);
		for (;;)
			pause();
	}
	snprintf(what, sizeof(what), "the gradient all-reduce of step %" PRIu64,
		 step);
	/*
	 * Every rank here? The metrics' gather, small and non-blocking,
	 * polled against the deadline: a dead or stuck rank is found here.
	 * The gradients then move by blocking calls, which Open MPI runs
	 * at memory speed (single-copy between processes of one host),
	 * where its non-blocking forms move in rounds, each waiting for a
	 * test: measured 0.2 ms against 1.6 ms for mnist's 2.7 MB.
	 */
	if (MPI_Iallgather(mine, (int)mbytes, MPI_BYTE, all, (int)mbytes,
			   MPI_BYTE, MPI_COMM_WORLD, &rq[0]) != MPI_SUCCESS)
		return -EIO;
	ret = wait_all(rq, 1, what, err, errlen);
	if (ret)
		return ret;
	/* the reduce-scatter: slice k of every rank's to rank k */
	if (MPI_Alltoallv(grads, sc, sd, MPI_FLOAT, vd.recv, rc, rd,
			  MPI_FLOAT, MPI_COMM_WORLD) != MPI_SUCCESS)
		return mpi_failed(what, err, errlen);
	/* rank 0's + rank 1's + ...: the order of the in-process replicas */
	out = sum;
	fp = vtpu_engine_fp_enter();
	for (i = 0; i < len; i++)
		out[i] = vd.recv[i] + vd.recv[len + i];
	for (k = 2; k < R; k++) {
		const float *x = vd.recv + len * k;

		for (i = 0; i < len; i++)
			out[i] += x[i];
	}
	vtpu_engine_fp_leave(fp);
	/*
	 * The all-gather, as an all-to-all too (the single-copy path the
	 * reduce-scatter takes; MPI_Allgatherv in place was slower here):
	 * the sum, from @sum, to every rank, which receives rank k's at
	 * slice k.
	 */
	for (k = 0; k < R; k++) {
		rc[k] = sc[k];
		rd[k] = sd[k];
		sc[k] = (int)len;
		sd[k] = 0;
	}
	if (MPI_Alltoallv(sum, sc, sd, MPI_FLOAT, grads, rc, rd, MPI_FLOAT,
			  MPI_COMM_WORLD) != MPI_SUCCESS)
		return mpi_failed(what, err, errlen);
	return 0;
}

#endif /* VTPU_HAVE_MPI */
