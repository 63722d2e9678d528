// SPDX-License-Identifier: MIT
/*
 * The machine's peak FMA throughput, measured: a loop of independent
 * multiply-adds at the SIMD level the engine runs with (its cpu backend's
 * choice, vtpu_cpu_simd()), on one thread and then on every thread the
 * bench uses at once. What a training step reaches is reported as a share
 * of it (vtpu-bench train's "% peak").
 *
 * The loop keeps BP_ACC vector accumulators in flight, each updated by an
 * FMA whose other operands are loop invariants: more than the latency of
 * an FMA times the FMAs issued per cycle on every core we know (4-5
 * cycles, two per cycle), so the loop runs at the issue rate of the FMA
 * units and nothing else. Each level is compiled for its ISA with
 * __attribute__((target)) and chosen at run time, so the bench runs on
 * AVX2 machines too.
 *
 * A rep times a calibrated number of loops (about BP_REP_S seconds); the
 * peak is the best of BP_REPS reps, the machine at its least disturbed
 * (it is shared), so a step's share of it is never overstated. The reps
 * are short, shorter than a scheduler's time slice on a busy machine, so
 * that some of them run undisturbed even there (with 50 ms reps, a load
 * of two jobs per core measured one thread's peak at 40% of its own).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <immintrin.h>

#include "bench.h"
#include "vtpu.h"

#define BP_ACC 12
#define BP_REPS 20
#define BP_REP_S 0.005
#define BP_INNER 64	/* loops of BP_ACC FMAs per counted iteration */

/* Constants that keep the accumulators near 1: no overflow, no denormals. */
#define BP_MUL 0.999999f
#define BP_ADD 1e-6f

/* Returns a sum of the accumulators, so that the loop cannot be dropped. */
typedef float (*bp_loop_fn)(unsigned long iters);

/*
 * One loop, compiled once per level with GCC's vector extensions, @width
 * floats a vector: acc * a + b contracts to one FMA where the target has
 * FMA (GNU C contracts by default) and stays a multiply and an add on
 * SSE2, the portable level (two FLOPs a pair either way).
 */
#define BP_LOOP(name, isa, width)					\
__attribute__((target(isa)))						\
static float name(unsigned long iters)					\
{									\
	typedef float vf __attribute__((vector_size((width) * 4)));	\
	vf acc[BP_ACC], a, b;						\
	unsigned long i;						\
	float s = 0;							\
	int j, k;							\
									\
	for (k = 0; k < (width); k++) {					\
		a[k] = BP_MUL;						\
		b[k] = BP_ADD;						\
	}								\
	for (j = 0; j < BP_ACC; j++)					\
		for (k = 0; k < (width); k++)				\
			acc[j][k] = 1.0f + j;				\
	for (i = 0; i < iters; i++) {					\
		for (k = 0; k < BP_INNER; k++)				\
			_Pragma("GCC unroll 16")			\
			for (j = 0; j < BP_ACC; j++)			\
				acc[j] = acc[j] * a + b;		\
		/* keeps the compiler from folding the inner loop */	\
		__asm__ volatile("" : "+v"(a));				\
	}								\
	for (j = 1; j < BP_ACC; j++)					\
		acc[0] += acc[j];					\
	for (k = 0; k < (width); k++)					\
		s += acc[0][k];						\
	return s;							\
}

BP_LOOP(bp_loop_avx512, "avx512f,fma", 16)
BP_LOOP(bp_loop_avx2, "avx2,fma", 8)
BP_LOOP(bp_loop_sse, "sse2", 4)

struct bp_thread {
	bp_loop_fn loop;
	unsigned long iters;
	pthread_barrier_t *start;
	double t0, t1;
	volatile float sink;
};

static void *bp_thread_main(void *arg)
{
	struct bp_thread *t = arg;

	pthread_barrier_wait(t->start);
	t->t0 = bench_now();
	t->sink = t->loop(t->iters);
	t->t1 = bench_now();
	return NULL;
}

/*
 * @threads threads each running @iters iterations at once: GFLOP/s of
 * all of them, over the time from the first start to the last end.
 */
static double bp_run(bp_loop_fn loop, double flops_per_iter,
		     unsigned long iters, int threads)
{
	struct bp_thread t[BENCH_PEAK_MAX_THREADS];
	pthread_t tid[BENCH_PEAK_MAX_THREADS];
	pthread_barrier_t start;
	double t0, t1;
	int i, n = 0;

	pthread_barrier_init(&start, NULL, (unsigned int)threads);
	for (i = 0; i < threads; i++) {
		t[i] = (struct bp_thread){ .loop = loop, .iters = iters,
					   .start = &start };
		if (i && pthread_create(&tid[i], NULL, bp_thread_main, &t[i]))
			break;
		n++;
	}
	if (n < threads) {
		/* release the ones started, then give up */
		for (i = n; i < threads; i++)
			pthread_barrier_wait(&start);
		for (i = 1; i < n; i++)
			pthread_join(tid[i], NULL);
		pthread_barrier_destroy(&start);
		return 0;
	}
	bp_thread_main(&t[0]);
	for (i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	t0 = t[0].t0;
	t1 = t[0].t1;
	for (i = 1; i < threads; i++) {
		if (t[i].t0 < t0)
			t0 = t[i].t0;
		if (t[i].t1 > t1)
			t1 = t[i].t1;
	}
	return t1 > t0 ? flops_per_iter * iters * threads / (t1 - t0) / 1e9 : 0;
}

/* The best of BP_REPS reps of about BP_REP_S seconds each. */
static double bp_measure(bp_loop_fn loop, double flops_per_iter, int threads)
{
	unsigned long iters = 16;
	double best = 0, gf;
	int rep;

	/* calibrate on one thread: double until a run takes a tenth of a rep */
	for (;;) {
		double t0 = bench_now();

		loop(iters);
		if (bench_now() - t0 >= BP_REP_S / 10)
			break;
		iters *= 2;
	}
	iters *= 10;
	for (rep = 0; rep < BP_REPS; rep++) {
		gf = bp_run(loop, flops_per_iter, iters, threads);
		if (gf > best)
			best = gf;
	}
	return best;
}

int bench_fma_peak(int threads, struct bench_peak *pk)
{
	struct vtpu_cpu *cpu = vtpu_cpu_create(1, -1, 0);
	int simd = cpu ? vtpu_cpu_simd(cpu) : -1;
	bp_loop_fn loop;
	int lanes;

	if (cpu)
		vtpu_cpu_destroy(cpu);
	memset(pk, 0, sizeof(*pk));
	if (threads < 1 || threads > BENCH_PEAK_MAX_THREADS)
		return -1;
	switch (simd) {
	case VTPU_SIMD_AVX512:
		loop = bp_loop_avx512;
		lanes = 16;
		pk->simd = "avx512";
		break;
	case VTPU_SIMD_AVX2:
		loop = bp_loop_avx2;
		lanes = 8;
		pk->simd = "avx2";
		break;
	default:
		loop = bp_loop_sse;
		lanes = 4;
		pk->simd = "sse2";
		break;
	}
	/* an FMA (or a multiply and an add) is two FLOPs per lane */
	pk->per_thread = bp_measure(loop, 2.0 * lanes * BP_ACC * BP_INNER, 1);
	pk->all = threads == 1 ? pk->per_thread :
		  bp_measure(loop, 2.0 * lanes * BP_ACC * BP_INNER, threads);
	if (pk->all < pk->per_thread)
		pk->all = pk->per_thread; /* a disturbed run: never below one */
	pk->threads = threads;
	return pk->all > 0 ? 0 : -1;
}
