// SPDX-License-Identifier: MIT
/*
 * The cpu backend: runs a command stream in user space, exactly as the
 * device does (same validator, same engine, and the same tile/step split
 * for the same number of workers; the results do not depend on it), on
 * a pool of pthreads created once. The calling thread is worker 0; the
 * pool holds threads - 1 more. For each command the caller publishes the
 * op with places for as many helpers as the op has spare tiles (sleeping
 * helpers are all woken; those who find no place wait for the next), and
 * every participant takes tiles, the caller from the front of those left
 * and helpers from the end (cpu_take_tile()), and runs all steps of each
 * tile it takes; the next command starts when all participants are
 * done.
 *
 * The hand-over takes no lock: the caller publishes a phase word (its
 * generation and how many helpers may join), a helper joins with a
 * compare-and-swap on it, and once the caller has taken the last tile it
 * withdraws the places no helper took, so it never waits for a helper
 * that would find nothing left (one whose vCPU is not running; one that
 * joined and was then descheduled before finding the counter spent is
 * still waited for). The generation is 32 bits: a helper stalled across
 * 2^32 phases skips one, whose place the caller withdraws. The mutex and
 * the condition variables only put threads to sleep and wake them.
 * A decoder's chain of ~250 short commands ran 3-10% faster so than with
 * every hand-over under the mutex (performance.md).
 *
 * Commands follow each other within microseconds, and waking a sleeping
 * thread takes far longer on a virtual machine (the idle vCPU must be
 * scheduled again): long enough that the caller had done every tile of a
 * half-millisecond GEMM alone before its helper arrived. So helpers and
 * the caller spin for a while (CPU_SPIN_NS) on the op generation and the
 * busy count before they sleep on the condition variables, as OpenBLAS's
 * and OpenMP's thread pools do.
 *
 * With VTPU_CPU_GEMM_OPENBLAS, GEMM commands go to cblas_sgemm (on
 * OpenBLAS's own threads, as many as ours) followed by the bias/ReLU
 * epilogue: the CPU baseline the engine is measured against (openblas.c,
 * which loads OpenBLAS when an executor first asks for it).
 *
 * VTPU_PROFILE=1 in the environment times every command of every stream
 * the executor runs: profile.c keeps the times and prints the report.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_priv.h"

struct vtpu_cpu {
	int nthreads;
	int simd;
	int gemm;
	pthread_t *threads;	/* nthreads - 1 helpers */
	void **scratch;		/* per worker, [0] is the caller's */

	/*
	 * The phase: published by the caller with a release store of @phase,
	 * joined by a helper with a compare-and-swap on it; the mutex and
	 * the condition variables only put threads to sleep and wake them.
	 */
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* helpers: a new phase or stop */
	pthread_cond_t idle;	/* caller: busy dropped to 0 */
	_Atomic u64 phase;	/* generation << 32 | helpers that may join */
	atomic_int busy;	/* helpers in the phase that are not done */
	atomic_int sleepers;	/* helpers asleep on @wake */
	atomic_int waiting;	/* the caller is asleep on @idle */
	atomic_int stop;
	const struct vtpu_engine_group *grp;	/* the phase's, set before it */
	struct vtpu_engine_group *group;	/* the commands being gathered */

	/*
	 * The phase's tiles not yet taken, [front, end): end << 32 | front.
	 * The caller takes them from the front, helpers from the end
	 * (cpu_take_tile()).
	 */
	_Atomic u64 tiles;

	u32 group_max;		/* commands run together, at most */
	struct cpu_prof prof;	/* VTPU_PROFILE (profile.c) */
};

static int cpu_best_simd(void)
{
	__builtin_cpu_init();
	/* the engine's *_avx512.c are built with -mavx512f -mfma (engine.mk) */
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
		return VTPU_SIMD_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return VTPU_SIMD_AVX2;
	return VTPU_SIMD_SCALAR;
}

/* How long a worker polls for what it waits for before it sleeps. */
#define CPU_SPIN_NS 200000

/*
 * A bounded busy-wait: while (!condition && cpu_spin_more(&spin)); polls
 * the condition until it holds or CPU_SPIN_NS have passed.
 */
struct cpu_spin {
	u64 t0;
	u32 polls;
};

static bool cpu_spin_more(struct cpu_spin *sp)
{
	u64 t;

#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
	if (++sp->polls % 64)
		return true;
	t = cpu_now_ns();
	if (!sp->t0)
		sp->t0 = t;
	return t - sp->t0 <= CPU_SPIN_NS;
}

/*
 * Take the next tile from the front (@back false: the caller) or from the
 * end (helpers) of those left; false when none is. Each core so works
 * through a contiguous run of a command's tiles (one stream for its
 * prefetchers, its own columns of a GEMM's B) rather than every other
 * tile: mlp_wide's GEMMs and a large ADAM ran 10-20% faster alone
 * (performance.md). A group's tiles are numbered op after op, so its
 * first and last commands also start side by side.
 */
static bool cpu_take_tile(struct vtpu_cpu *cpu, bool back, u32 *t)
{
	u64 w = atomic_load_explicit(&cpu->tiles, memory_order_relaxed);
	u32 front, end;

	do {
		front = (u32)w;
		end = (u32)(w >> 32);
		if (front >= end)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&cpu->tiles, &w, back ? w - (1ull << 32) : w + 1,
		memory_order_relaxed, memory_order_relaxed));
	*t = back ? end - 1 : front;
	return true;
}

static void cpu_run_tiles(struct vtpu_cpu *cpu,
			  const struct vtpu_engine_group *grp, void *scratch,
			  bool back)
{
	const struct vtpu_engine_op *op;
	u32 t, tile, step;

	while (cpu_take_tile(cpu, back, &t)) {
		op = vtpu_engine_group_tile(grp, t, &tile);
		for (step = 0; step < op->nsteps; step++)
			vtpu_engine_op_run(op, tile, step, scratch);
	}
}

/* A phase word's generation, and the helpers it still takes */
#define PHASE_GEN(w) ((u32)((w) >> 32))
#define PHASE_SLOTS(w) ((u32)(w))

static void *cpu_helper(void *arg)
{
	void **targ = arg;
	struct vtpu_cpu *cpu = targ[0];
	void *scratch = targ[1];
	u32 seen = 0;

	free(targ);
	vtpu_engine_fp_enter();	/* for good: this thread runs only the engine */
	for (;;) {
		struct cpu_spin spin = { 0 };
		u64 w;

		while (PHASE_GEN(w = atomic_load_explicit(
					 &cpu->phase, memory_order_acquire)) ==
			       seen &&
		       !atomic_load_explicit(&cpu->stop, memory_order_relaxed) &&
		       cpu_spin_more(&spin))
			;
		if (PHASE_GEN(w) == seen) {
			/* sleepers before the check: cpu_run_phase() */
			pthread_mutex_lock(&cpu->lock);
			atomic_fetch_add(&cpu->sleepers, 1);
			while (!atomic_load(&cpu->stop) &&
			       PHASE_GEN(w = atomic_load(&cpu->phase)) == seen)
				pthread_cond_wait(&cpu->wake, &cpu->lock);
			atomic_fetch_sub(&cpu->sleepers, 1);
			pthread_mutex_unlock(&cpu->lock);
		}
		if (atomic_load(&cpu->stop))
			break;
		seen = PHASE_GEN(w);
		/*
		 * Join this phase if it still takes a helper: the caller
		 * then waits for us, so its group stays. A phase that has
		 * none left (or a newer one) is not ours.
		 */
		do {
			if (PHASE_GEN(w) != seen || !PHASE_SLOTS(w))
				break;
		} while (!atomic_compare_exchange_weak_explicit(
			&cpu->phase, &w, w - 1, memory_order_acquire,
			memory_order_acquire));
		if (PHASE_GEN(w) != seen || !PHASE_SLOTS(w))
			continue;
		cpu_run_tiles(cpu, cpu->grp, scratch, true);
		/* waiting after busy: cpu_run_phase() */
		if (atomic_fetch_sub(&cpu->busy, 1) == 1 &&
		    atomic_load(&cpu->waiting)) {
			pthread_mutex_lock(&cpu->lock);
			pthread_cond_signal(&cpu->idle);
			pthread_mutex_unlock(&cpu->lock);
		}
	}
	return NULL;
}

/*
 * Run the tiles of a group's current phase on the caller and as many
 * helpers as it can use.
 */
static void cpu_run_phase(struct vtpu_cpu *cpu,
			  const struct vtpu_engine_group *grp)
{
	int helpers = cpu->nthreads - 1;

	if (!grp->ntiles)
		return;
	if ((u32)helpers > grp->ntiles - 1)
		helpers = (int)(grp->ntiles - 1);
	atomic_store_explicit(&cpu->tiles, (u64)grp->ntiles << 32,
			      memory_order_relaxed);
	if (helpers > 0) {
		u64 w = atomic_load_explicit(&cpu->phase, memory_order_relaxed);

		/*
		 * The group and counts, then the phase word (release): a
		 * helper that joins it sees them. Then the sleepers, which a
		 * helper raises before it checks the word (both seq_cst):
		 * either it sees the new phase or we see it asleep.
		 */
		cpu->grp = grp;
		atomic_store_explicit(&cpu->busy, helpers,
				      memory_order_relaxed);
		atomic_store(&cpu->phase,
			     ((u64)(PHASE_GEN(w) + 1) << 32) | (u32)helpers);
		if (atomic_load(&cpu->sleepers)) {
			pthread_mutex_lock(&cpu->lock);
			pthread_cond_broadcast(&cpu->wake);
			pthread_mutex_unlock(&cpu->lock);
		}
	}
	cpu_run_tiles(cpu, grp, cpu->scratch[0], false);
	if (helpers > 0) {
		struct cpu_spin spin = { 0 };
		u64 w = atomic_load(&cpu->phase);

		/*
		 * Every tile is taken: a helper that has not joined yet
		 * (asleep, or its vCPU not running) would only find none
		 * left, so its slot is withdrawn and not waited for
		 */
		while (PHASE_SLOTS(w) &&
		       !atomic_compare_exchange_weak(&cpu->phase, &w,
						     w & ~(u64)UINT32_MAX))
			;
		if (PHASE_SLOTS(w))
			atomic_fetch_sub(&cpu->busy, (int)PHASE_SLOTS(w));

		while (atomic_load_explicit(&cpu->busy, memory_order_acquire) &&
		       cpu_spin_more(&spin))
			;
		if (atomic_load(&cpu->busy)) {
			/* waiting before the check: the helper's busy drop */
			pthread_mutex_lock(&cpu->lock);
			atomic_store(&cpu->waiting, 1);
			while (atomic_load(&cpu->busy))
				pthread_cond_wait(&cpu->idle, &cpu->lock);
			atomic_store(&cpu->waiting, 0);
			pthread_mutex_unlock(&cpu->lock);
		}
	}
}

/* Run a group, one phase after the other (vtpu_engine_group_phase()). */
static void cpu_run_group(struct vtpu_cpu *cpu, struct vtpu_engine_group *grp)
{
	u32 p;

	for (p = 0; p < grp->nphases; p++) {
		vtpu_engine_group_phase(grp, p);
		cpu_run_phase(cpu, grp);
	}
}

void vtpu_cpu_destroy(struct vtpu_cpu *cpu)
{
	int i;

	if (!cpu)
		return;
	if (cpu->prof.listed)
		cpu_prof_print(&cpu->prof);
	if (cpu->threads) {
		pthread_mutex_lock(&cpu->lock);
		atomic_store(&cpu->stop, 1);
		pthread_cond_broadcast(&cpu->wake);
		pthread_mutex_unlock(&cpu->lock);
		for (i = 0; i < cpu->nthreads - 1; i++)
			if (cpu->threads[i])
				pthread_join(cpu->threads[i], NULL);
		free(cpu->threads);
	}
	if (cpu->scratch) {
		for (i = 0; i < cpu->nthreads; i++)
			free(cpu->scratch[i]);
		free(cpu->scratch);
	}
	pthread_cond_destroy(&cpu->idle);
	pthread_cond_destroy(&cpu->wake);
	pthread_mutex_destroy(&cpu->lock);
	free(cpu->group);
	free(cpu);
}

struct vtpu_cpu *vtpu_cpu_create(int threads, int simd, int gemm)
{
	int best = cpu_best_simd();
	size_t scratch = vtpu_engine_scratch_size();
	struct vtpu_cpu *cpu;
	const char *gmax;
	int i, err;

	if (threads < 0 || simd < -1 || simd > VTPU_SIMD_AVX512 ||
	    (gemm != VTPU_CPU_GEMM_ENGINE && gemm != VTPU_CPU_GEMM_OPENBLAS)) {
		errno = EINVAL;
		return NULL;
	}
	if (simd > best) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* why: vtpu_cpu_openblas() */
	if (gemm == VTPU_CPU_GEMM_OPENBLAS && vtpu_cpu_openblas()) {
		errno = ENOENT;
		return NULL;
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (int)n : 1;
	}

	cpu = calloc(1, sizeof(*cpu));
	if (!cpu)
		return NULL;
	cpu->nthreads = threads;
	cpu->simd = simd < 0 ? best : simd;
	cpu->gemm = gemm;
	cpu_prof_init(&cpu->prof);
	/*
	 * Independent commands run as one group (vtpu_engine_group_add()),
	 * as the device runs them, but not under the profiler, which times
	 * each command alone, nor with OpenBLAS, whose GEMM is one call on
	 * the caller. VTPU_GROUP_MAX=1 runs every command alone.
	 */
	cpu->group_max = VTPU_ENGINE_GROUP_MAX;
	gmax = getenv("VTPU_GROUP_MAX");
	if (gmax && atoi(gmax) >= 1 && atoi(gmax) < VTPU_ENGINE_GROUP_MAX)
		cpu->group_max = (u32)atoi(gmax);
	if (cpu->prof.listed || gemm == VTPU_CPU_GEMM_OPENBLAS)
		cpu->group_max = 1;
	pthread_mutex_init(&cpu->lock, NULL);
	pthread_cond_init(&cpu->wake, NULL);
	pthread_cond_init(&cpu->idle, NULL);

	cpu->group = calloc(1, sizeof(*cpu->group));
	if (!cpu->group)
		goto err_destroy;

	cpu->scratch = calloc((size_t)threads, sizeof(*cpu->scratch));
	if (!cpu->scratch)
		goto err_destroy;
	for (i = 0; i < threads; i++) {
		/* touch it now: page faults in the first job are slow */
		if (posix_memalign(&cpu->scratch[i], 64, scratch)) {
			cpu->scratch[i] = NULL;
			errno = ENOMEM;
			goto err_destroy;
		}
		memset(cpu->scratch[i], 0, scratch);
	}

	cpu->threads = calloc((size_t)threads, sizeof(*cpu->threads));
	if (!cpu->threads)
		goto err_destroy;
	for (i = 0; i < threads - 1; i++) {
		void **arg = malloc(2 * sizeof(*arg));

		if (!arg)
			goto err_destroy;
		arg[0] = cpu;
		arg[1] = cpu->scratch[i + 1];
		err = pthread_create(&cpu->threads[i], NULL, cpu_helper, arg);
		if (err) {
			free(arg);
			cpu->threads[i] = 0;
			errno = err;
			goto err_destroy;
		}
	}
	if (gemm == VTPU_CPU_GEMM_OPENBLAS)
		cpu_openblas_threads(threads);
	return cpu;

err_destroy:
	err = errno;
	vtpu_cpu_destroy(cpu);
	errno = err;
	return NULL;
}

int vtpu_cpu_simd(const struct vtpu_cpu *cpu)
{
	return cpu->simd;
}

/* Run the gathered ops (a lone plain f32 GEMM through OpenBLAS if asked). */
static void cpu_run_gathered(struct vtpu_cpu *cpu)
{
	struct vtpu_engine_group *grp = cpu->group;
	const struct vtpu_engine_op *op = &grp->op[0];

	/* (cblas_sgemm knows only row-major matrices, not the panels) */
	if (grp->nops == 1 && op->opcode == VTPU_OP_GEMM &&
	    cpu->gemm == VTPU_CPU_GEMM_OPENBLAS &&
	    op->gemm.dtype == VTPU_DTYPE_F32 &&
	    !(op->gemm.flags & (VTPU_GEMM_B_PANELS | VTPU_GEMM_C_PANELS)))
		cpu_openblas_gemm(&op->gemm);
	else if (grp->nops)
		cpu_run_group(cpu, grp);
}

/*
 * One command, as a device's dispatcher runs it: it joins the group of
 * commands it does not depend on, or the group runs first and it starts
 * the next one. Alone (group_max 1), it runs now.
 */
static void cpu_run_cmd(struct vtpu_cpu *cpu, const struct vtpu_cmd_hdr *cmd,
			const struct vtpu_engine_buf *bufs,
			struct cpu_prof_cmd *prof, bool first)
{
	struct vtpu_engine_group *grp = cpu->group;
	u64 t0 = prof ? cpu_now_ns() : 0;

	if (!vtpu_engine_group_add(grp, cmd, bufs, (u32)cpu->simd,
				   (u32)cpu->nthreads, cpu->group_max)) {
		cpu_run_gathered(cpu);
		vtpu_engine_group_restart(grp);
	}
	if (cpu->group_max > 1)
		return;
	if (prof && !prof->calls++)
		cpu_prof_describe(prof, &grp->op[0]);
	cpu_run_gathered(cpu);
	vtpu_engine_group_clear(grp);
	if (prof)
		*(first ? &prof->first_ns : &prof->ns) += cpu_now_ns() - t0;
}

/*
 * Validates and runs the stream exactly as the kernel does, repeats and
 * per-iteration strides included (vtpu_engine_validate_iters()).
 */
int vtpu_cpu_run(struct vtpu_cpu *cpu, const struct vtpu_cmdbuf *cb,
		 struct vtpu_job *job)
{
	struct vtpu_engine_buf stackbufs[16];
	struct vtpu_engine_buf *bufs = stackbufs;
	u64 stacksizes[16];
	u64 *sizes = stacksizes;
	struct vtpu_engine_error verr = { 0 };
	const struct vtpu_cmd_hdr *cmd;
	u32 i, pos, ci, n = cb->nhandles;
	u64 iter, end = (u64)job->first_iter + (job->repeat ?: 1), t0 = 0;
	struct cpu_prof_stream *ps = NULL;
	u32 fp;
	int ret = 0;

	memset(&job->error, 0, sizeof(job->error));
	job->out_fence = -1;
	if (cb->error)
		return cb->error;
	/* what VTPU_IOCTL_SUBMIT refuses before validating */
	if (cb->size < sizeof(struct vtpu_cmd_hdr) ||
	    cb->size > VTPU_SUBMIT_MAX_CMDS_SIZE || cb->size % 8 ||
	    n > VTPU_SUBMIT_MAX_HANDLES)
		return -EINVAL;
	if (n > 16) {
		bufs = malloc(n * sizeof(*bufs));
		sizes = malloc(n * sizeof(*sizes));
		if (!bufs || !sizes) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		bufs[i].base = cb->bos[i]->map;
		bufs[i].size = cb->bos[i]->size;
		sizes[i] = cb->bos[i]->size;
	}

	if (job->repeat > VTPU_ENGINE_MAX_REPEAT ||
	    (job->first_iter && !job->strides)) {
		ret = -EINVAL;
		goto out;
	}
	ret = vtpu_engine_validate_iters(cb->data, cb->size, sizes, n,
					 job->strides, job->first_iter,
					 job->repeat, &verr);
	if (ret) {
		job->error.cmd = verr.cmd;
		job->error.offset = verr.offset;
		job->error.operand = verr.operand;
		job->error.reason = verr.reason;
		goto out;
	}

	if (cpu->prof.listed)
		ps = cpu_prof_stream(&cpu->prof, cb);
	fp = vtpu_engine_fp_enter();
	for (iter = job->first_iter; iter < end; iter++) {
		bool first = ps && !ps->runs;

		if (ps)
			t0 = cpu_now_ns();
		for (i = 0; job->strides && i < n; i++)
			bufs[i].base = (u8 *)cb->bos[i]->map +
				       job->strides[i] * iter;
		for (pos = 0, ci = 0; (cmd = vtpu_engine_next(cb->data,
							      cb->size, &pos));
		     ci++)
			cpu_run_cmd(cpu, cmd, bufs,
				    ps && ci < ps->ncmds ? &ps->cmds[ci] : NULL,
				    first);
		cpu_run_gathered(cpu);
		vtpu_engine_group_clear(cpu->group);
		if (ps) {
			*(first ? &ps->first_ns : &ps->ns) += cpu_now_ns() - t0;
			ps->runs++;
		}
	}
	vtpu_engine_fp_leave(fp);
out:
	if (bufs != stackbufs)
		free(bufs);
	if (sizes != stacksizes)
		free(sizes);
	return ret;
}

/*
 * A buffer of CPU_HUGE or more starts on a CPU_HUGE boundary and asks for
 * transparent huge pages (MADV_HUGEPAGE; the kernel's default policy,
 * "madvise", gives them to no one else). A training step streams tensors
 * of megabytes through memory, and on 4 KiB pages it takes a TLB miss
 * every 4 KiB (on a virtual machine, a walk of the guest's page tables
 * and the host's): resnet64's step at batch 64 ran about 15% faster on
 * 2 MiB pages, xception64's about 7% (performance.md). Where the kernel's
 * THP is "never" the advice fails and the pages stay small, as they do
 * for the part of a buffer past its last whole 2 MiB.
 */
#define CPU_HUGE (2ull << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* @size bytes (a multiple of the page size), zeroed and populated */
static void *cpu_map(uint64_t size)
{
	uint8_t *raw, *start, *end;

	/* populated now: page faults are slow, and steps reuse the memory */
	if (size < CPU_HUGE)
		return mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	raw = mmap(NULL, size + CPU_HUGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return MAP_FAILED;
	start = (uint8_t *)(((uintptr_t)raw + CPU_HUGE - 1) &
			    ~(uintptr_t)(CPU_HUGE - 1));
	end = raw + size + CPU_HUGE;
	if (start > raw)
		munmap(raw, (size_t)(start - raw));
	if (start + size < end)
		munmap(start + size, (size_t)(end - (start + size)));
	madvise(start, size, MADV_HUGEPAGE);
	/* a kernel before 5.14 has no MADV_POPULATE_WRITE: write it */
	if (madvise(start, size, MADV_POPULATE_WRITE)) {
		if (errno != EINVAL) {
			int err = errno;

			munmap(start, size);
			errno = err;
			return MAP_FAILED;
		}
		memset(start, 0, size);
	}
	return start;
}

int vtpu_cpu_bo_create(uint64_t size, struct vtpu_bo *bo)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t rounded;
	void *map;

	if (!size || size > (1ull << 46))
		return -EINVAL;
	rounded = (size + (uint64_t)page - 1) & ~((uint64_t)page - 1);
	map = cpu_map(rounded);
	if (map == MAP_FAILED)
		return -errno;
	bo->handle = 0;
	bo->size = rounded;
	bo->map = map;
	return 0;
}

void vtpu_cpu_bo_destroy(struct vtpu_bo *bo)
{
	if (bo->map)
		munmap(bo->map, bo->size);
	bo->map = NULL;
	bo->size = 0;
}
