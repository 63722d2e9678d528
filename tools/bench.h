/* SPDX-License-Identifier: MIT */
/*
 * vtpu-bench: the subcommands and what they share.
 *
 * tools/bench.c holds main(), which dispatches on the first argument
 * through BENCH_SUBCOMMANDS below, and the helpers every subcommand uses:
 * the clock, medians, options common to all subcommands, alternating
 * timed runs of several executors, and the OpenBLAS environment fix-up.
 * Each subcommand lives in tools/bench_<name>.c and is
 *
 *	int bench_<name>(int argc, char **argv);
 *
 * called with argv[0] = "<name>" and the arguments after it; it returns
 * the process's exit status (0, 1 on failure, 2 on bad usage). Adding one
 * is a line in BENCH_SUBCOMMANDS and its file in tools/tools.mk's
 * vtpu-bench rule.
 */
#ifndef VTPU_BENCH_H
#define VTPU_BENCH_H

#include <stdint.h>

/* The dispatch table: X(name, one-line description), one line each. */
#define BENCH_SUBCOMMANDS(X)                                                   \
	X(gemm, "GEMM GFLOP/s: engine f32 and bf16, or a device, vs OpenBLAS") \
	X(train, "training ms/step of the example models: engine, OpenBLAS, PyTorch") \
	X(stream, "one epoch resident vs streamed from a JPEG folder: the ratio") \
	X(ops, "single commands of the image networks: GB/s vs a stream, GFLOP/s vs OpenBLAS")

#define BENCH_DECLARE(name, help) int bench_##name(int argc, char **argv);
BENCH_SUBCOMMANDS(BENCH_DECLARE)
#undef BENCH_DECLARE

/**
 * struct bench_opts - the options every subcommand understands
 * @threads: --threads N: worker threads of the cpu executors (0 before
 *           bench_opts_done(): one per online CPU)
 * @json: --json: one JSON object per line instead of a table
 * @reps: --reps R: timed repetitions per measurement, the median is shown
 * @device: --device PATH: measure that device (e.g. /dev/vtpu0), or NULL
 */
struct bench_opts {
	int threads;
	int json;
	int reps;
	const char *device;
};

/* Defaults: threads 0 (all CPUs), table output, 5 reps, no device. */
void bench_opts_init(struct bench_opts *o);

/**
 * bench_opt() - consume a common option at argv[*i]
 * Return: 1 if it was one (*i then points at its last word), 0 if it is
 * not a common option, -1 if its value is missing.
 */
int bench_opt(struct bench_opts *o, int argc, char **argv, int *i);

/* Resolve defaults after parsing (threads 0: online CPUs; reps >= 1). */
void bench_opts_done(struct bench_opts *o);

/* Usage text of the common options, for the subcommands' usage(). */
#define BENCH_OPTS_USAGE "[--threads N] [--json] [--reps R] [--device PATH]"

/* CLOCK_MONOTONIC in seconds. */
double bench_now(void);

/* The median of @n values (sorts @v in place). */
double bench_median(double *v, int n);

/**
 * struct bench_runner - one executor to time
 * @name: for messages
 * @run: does one unit of work (a job, a GEMM); returns 0 or -errno
 * @ctx: passed to @run
 * @work: units per call (e.g. GFLOP), so that rates come out per second
 * @rate: out, the median of @work / seconds per call over the reps
 * @iters: out, calls per timed rep
 * @err: out, the first error @run returned (0: none)
 */
struct bench_runner {
	const char *name;
	int (*run)(void *ctx);
	void *ctx;
	double work;
	double rate;
	int iters;
	int err;
};

/*
 * Time @n runners against each other: each is warmed up once and sized
 * to about @target seconds per rep, then the reps alternate between them
 * (so that load on a shared machine hits them alike). @rates, if not
 * NULL, gets every rep's rate, runner i's rep k at [i * reps + k]: reps
 * k of two runners ran side by side, so their ratio is one paired
 * sample. Return: 0, or the first runner's error (its @err set, its
 * @rate 0).
 */
int bench_compare(struct bench_runner *r, int n, int reps, double target,
		  double *rates);

/*
 * OpenBLAS's core, for the text headers: its name, and if the bench set
 * it (bench_openblas_setup() in bench.c), what OpenBLAS took the CPU for.
 */
const char *bench_openblas_core(void);
/* The core OpenBLAS picked itself, for the JSON headers. */
const char *bench_openblas_detected(void);

/* Threads bench_fma_peak() measures at most. */
#define BENCH_PEAK_MAX_THREADS 256

/**
 * struct bench_peak - the machine's measured peak FMA throughput
 * @simd: the SIMD level measured, the engine's ("avx512", "avx2", "sse2")
 * @threads: the threads of @all
 * @per_thread: GFLOP/s of one thread alone
 * @all: GFLOP/s of @threads threads at once
 */
struct bench_peak {
	const char *simd;
	int threads;
	double per_thread;
	double all;
};

/*
 * bench_fma_peak() - measure the peak (tools/bench_peak.c: a loop of
 * independent FMAs, the best of a few short reps) on @threads threads.
 * Return: 0, or -1 (@pk zeroed but for @simd).
 */
int bench_fma_peak(int threads, struct bench_peak *pk);

/* From OpenBLAS (not in every cblas.h). */
char *openblas_get_corename(void);
char *openblas_get_config(void);

#endif /* VTPU_BENCH_H */
