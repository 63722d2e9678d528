// SPDX-License-Identifier: MIT
/*
 * vtpu-bench: how fast the engine, and a device, are against OpenBLAS.
 *
 *   vtpu-bench SUBCOMMAND [OPTIONS]     (vtpu-bench help: the list)
 *
 * main() picks the subcommand from BENCH_SUBCOMMANDS (bench.h); the rest
 * of this file is what the subcommands share.
 *
 * The baseline is OpenBLAS at its best on these cores, which takes care:
 * see bench_openblas_setup().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define REEXEC_MARK "VTPU_BENCH_CLEAN_ENV"
#define DETECTED_VAR "VTPU_BENCH_OPENBLAS_DETECTED"
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct bench_cmd {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *help;
};

#define BENCH_ENTRY(name, help) { #name, bench_##name, help },
static const struct bench_cmd bench_cmds[] = { BENCH_SUBCOMMANDS(BENCH_ENTRY) };
#undef BENCH_ENTRY

#define NCMDS ARRAY_SIZE(bench_cmds)

void bench_opts_init(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->reps = 5;
}

int bench_opt(struct bench_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	int has_value = *i + 1 < argc;

	if (!strcmp(a, "--json")) {
		o->json = 1;
		return 1;
	}
	if (strcmp(a, "--threads") && strcmp(a, "--reps") &&
	    strcmp(a, "--device"))
		return 0;
	if (!has_value)
		return -1;
	++*i;
	if (!strcmp(a, "--threads"))
		o->threads = atoi(argv[*i]);
	else if (!strcmp(a, "--reps"))
		o->reps = atoi(argv[*i]);
	else
		o->device = argv[*i];
	return 1;
}

void bench_opts_done(struct bench_opts *o)
{
	if (o->reps < 1)
		o->reps = 1;
	if (o->threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o->threads = n > 0 ? (int)n : 1;
	}
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Between two runners' timed calls, let the cores go quiet: OpenBLAS's
 * idle threads spin (sched_yield) for 2^28 cycles after their last call
 * (its default thread timeout, 0.1 s or so), and would share the cores
 * with whichever runner came next, the engine or PyTorch's process.
 */
#define SETTLE_NS 200000000L

/* Seconds per call of @r over @iters calls, or a negative value on error. */
static double time_calls(struct bench_runner *r, int iters)
{
	struct timespec settle = { 0, SETTLE_NS };
	double t0;
	int i, err;

	nanosleep(&settle, NULL);
	t0 = bench_now();

	for (i = 0; i < iters; i++) {
		err = r->run(r->ctx);
		if (err) {
			r->err = err;
			return -1;
		}
	}
	return (bench_now() - t0) / iters;
}

int bench_compare(struct bench_runner *r, int n, int reps, double target,
		  double *rates_out)
{
	double *rates = calloc((size_t)n * reps, sizeof(*rates));
	int i, k, ret = 0;

	if (!rates)
		return -1;
	for (i = 0; i < n; i++) {
		double t = time_calls(&r[i], 1);

		r[i].rate = 0;
		if (t < 0) {
			ret = r[i].err;
			goto out;
		}
		t = t > 0 ? target / t : 1e6;
		r[i].iters = t < 1 ? 1 : t > 1e6 ? 1000000 : (int)t;
	}
	for (k = 0; k < reps; k++) {
		for (i = 0; i < n; i++) {
			double t = time_calls(&r[i], r[i].iters);

			if (t < 0) {
				ret = r[i].err;
				goto out;
			}
			rates[i * reps + k] = r[i].work / t;
		}
	}
	if (rates_out)
		memcpy(rates_out, rates, (size_t)n * reps * sizeof(*rates));
	for (i = 0; i < n; i++)
		r[i].rate = bench_median(rates + i * reps, reps);
out:
	free(rates);
	return ret;
}

/* How wide a SIMD OpenBLAS's cores use: 2 AVX-512, 1 AVX2, 0 older. */
static int openblas_core_width(const char *core)
{
	static const struct {
		const char *core;
		int width;
	} wide[] = {
		{ "SkylakeX", 2 }, { "Cooperlake", 2 }, { "SapphireRapids", 2 },
		{ "Haswell", 1 },  { "Zen", 1 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(wide); i++)
		if (!strcmp(core, wide[i].core))
			return wide[i].width;
	return 0;
}

/*
 * The OpenBLAS core for this CPU's widest SIMD, the one OpenBLAS's own
 * detection picks on the models it knows; NULL if @picked is as wide.
 * SkylakeX's kernels are built for AVX-512 F, CD, BW, DQ and VL.
 */
static const char *openblas_core_for_cpu(const char *picked)
{
	static const char *const best[] = { NULL, "Haswell", "SkylakeX" };
	int width = 0;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512cd") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vl"))
		width = 2;
	else if (__builtin_cpu_supports("avx2") &&
		 __builtin_cpu_supports("fma"))
		width = 1;
	return openblas_core_width(picked) < width ? best[width] : NULL;
}

static void reexec(char **argv, const char *mark)
{
	setenv(REEXEC_MARK, mark, 1);
	execv("/proc/self/exe", argv);
	perror("vtpu-bench: re-exec (OpenBLAS keeps the core it picked)");
}

/*
 * OpenBLAS picks its kernels in a library constructor, before main():
 * from OPENBLAS_CORETYPE if set, else from the CPU's family and model.
 * Both can leave it slow. A forced core type (the shell on our build
 * machines sets Haswell) leaves AVX-512 hardware half unused; and the
 * models it does not know fall back to old cores: Debian 12's OpenBLAS
 * 0.3.21 takes an Emerald Rapids (family 6, model 0xcf) for a Prescott,
 * SSE3 only, and PyTorch's GEMMs (through the same libblas) with it. So
 * the bench runs itself again, first without a forced core, then, if
 * OpenBLAS picked a core narrower than the CPU's SIMD, with the core
 * OpenBLAS picks for such a CPU on the models it knows; PyTorch's
 * process inherits it. The headers say so; docs/performance.md says what
 * the fallback costs.
 */
static void bench_openblas_setup(char **argv)
{
	const char *mark = getenv(REEXEC_MARK), *want;

	if (mark && !strcmp(mark, "core"))
		return;
	if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE")) {
		unsetenv("OPENBLAS_CORETYPE");
		unsetenv("OPENBLAS_L2_SIZE");
		if (!mark)
			reexec(argv, "clean");
		return;
	}
	want = openblas_core_for_cpu(openblas_get_corename());
	if (!want)
		return;
	setenv(DETECTED_VAR, openblas_get_corename(), 1);
	setenv("OPENBLAS_CORETYPE", want, 1);
	reexec(argv, "core");
	unsetenv("OPENBLAS_CORETYPE");
	unsetenv(DETECTED_VAR);
}

const char *bench_openblas_detected(void)
{
	const char *d = getenv(DETECTED_VAR);

	return d ? d : openblas_get_corename();
}

const char *bench_openblas_core(void)
{
	static char buf[128];
	const char *d = bench_openblas_detected();

	if (!strcmp(d, openblas_get_corename()))
		return d;
	snprintf(buf, sizeof(buf),
		 "%s (set for this CPU: OpenBLAS took it for %s)",
		 openblas_get_corename(), d);
	return buf;
}

static int usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: vtpu-bench SUBCOMMAND %s [...]\n",
		BENCH_OPTS_USAGE);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s %s\n", bench_cmds[i].name,
			bench_cmds[i].help);
	fprintf(f, "vtpu-bench SUBCOMMAND --help: its own options; vtpu-bench --version\n");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	size_t i;

	bench_openblas_setup(argv);
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h"))
		return usage(stdout);
	if (!strcmp(argv[1], "--version")) {
		printf("vtpu-bench %s\n", VTPU_VERSION);
		return 0;
	}
	for (i = 0; i < NCMDS; i++)
		if (!strcmp(argv[1], bench_cmds[i].name))
			return bench_cmds[i].main(argc - 1, argv + 1);
	fprintf(stderr, "vtpu-bench: unknown subcommand '%s'\n", argv[1]);
	return usage(stderr);
}
