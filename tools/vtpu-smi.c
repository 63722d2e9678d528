// SPDX-License-Identifier: MIT
/*
 * vtpu-smi: the state of every vtpu device at a glance, like nvidia-smi.
 *
 * Reads /sys/class/vtpu/vtpuN/ (the module's sysfs attributes) and
 * /sys/module/vtpu/version, so it needs no open file on the device and
 * never disturbs its clients. The first line: the driver's release and
 * the kernel it runs on (the one it was built for: its vermagic).
 *
 *   vtpu-smi              one table
 *   vtpu-smi --watch [S]  refresh every S seconds (default 1), with
 *                         utilisation over the last interval
 *   vtpu-smi --help | --version
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#define SYSFS_CLASS "/sys/class/vtpu"
#define MAX_DEVS 16

struct dev_state {
	char name[256];
	char simd[16];
	long long cores, mem_cap, mem_used, clients;
	long long submitted, completed, failed, timedout, cancelled;
	long long flops, busy_ns;
};

static int read_attr(const char *dev, const char *attr, char *buf, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), SYSFS_CLASS "/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static long long read_num(const char *dev, const char *attr)
{
	char buf[64];

	return read_attr(dev, attr, buf, sizeof(buf)) ? -1 : atoll(buf);
}

static int cmp_name(const void *a, const void *b)
{
	const struct dev_state *x = a, *y = b;

	return strverscmp(x->name, y->name);
}

static int scan(struct dev_state *devs)
{
	struct dirent *de;
	DIR *d = opendir(SYSFS_CLASS);
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < MAX_DEVS) {
		struct dev_state *s = &devs[n];

		if (strncmp(de->d_name, "vtpu", 4))
			continue;
		snprintf(s->name, sizeof(s->name), "%s", de->d_name);
		if (read_attr(s->name, "simd", s->simd, sizeof(s->simd)))
			continue;
		s->cores = read_num(s->name, "cores");
		s->mem_cap = read_num(s->name, "mem_cap");
		s->mem_used = read_num(s->name, "mem_used");
		s->clients = read_num(s->name, "clients");
		s->submitted = read_num(s->name, "jobs_submitted");
		s->completed = read_num(s->name, "jobs_completed");
		s->failed = read_num(s->name, "jobs_failed");
		s->timedout = read_num(s->name, "jobs_timedout");
		s->cancelled = read_num(s->name, "jobs_cancelled");
		s->flops = read_num(s->name, "flops");
		s->busy_ns = read_num(s->name, "busy_ns");
		n++;
	}
	closedir(d);
	qsort(devs, n, sizeof(*devs), cmp_name);
	return n;
}

static void print_header(void)
{
	char ver[64] = "?";
	struct utsname u;
	FILE *f = fopen("/sys/module/vtpu/version", "r");

	if (f) {
		if (!fgets(ver, sizeof(ver), f))
			snprintf(ver, sizeof(ver), "?");
		fclose(f);
		ver[strcspn(ver, "\n")] = '\0';
	}
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	printf("vtpu driver %s, Linux %s\n", ver, u.release);
}

static void print_table(const struct dev_state *devs, int n,
			const struct dev_state *prev, double interval_s)
{
	int i;

	print_header();
	printf("%-7s %-6s %5s %7s %21s %7s %10s %7s %7s %9s %7s\n", "DEVICE",
	       "SIMD", "CORES", "CLIENTS", "MEMORY (MiB)", "UTIL", "JOBS",
	       "FAILED", "TIMEOUT", "CANCELLED", "GFLOP");
	for (i = 0; i < n; i++) {
		const struct dev_state *s = &devs[i];
		char util[16] = "-";
		char mem[32];

		if (prev && interval_s > 0)
			snprintf(util, sizeof(util), "%.0f%%",
				 100.0 * (s->busy_ns - prev[i].busy_ns) /
					 (interval_s * 1e9));
		snprintf(mem, sizeof(mem), "%.1f / %.0f", s->mem_used / 1048576.0,
			 s->mem_cap / 1048576.0);
		printf("%-7s %-6s %5lld %7lld %21s %7s %10lld %7lld %7lld %9lld %7.1f\n",
		       s->name, s->simd, s->cores, s->clients, mem, util,
		       s->completed, s->failed, s->timedout, s->cancelled,
		       s->flops / 1e9);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: vtpu-smi [--watch [SECONDS]]\n"
		"The state of every vtpu device, from %s.\n"
		"  --watch [S]  refresh every S seconds (default 1)\n"
		"  --help       this text\n"
		"  --version    print the version and exit\n", SYSFS_CLASS);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	struct dev_state devs[MAX_DEVS], prev[MAX_DEVS];
	double interval = 0, t, tprev = 0;
	int n, nprev = -1;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout);
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("vtpu-smi %s\n", VTPU_VERSION);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--watch") && argc <= 3) {
		char *end = NULL;

		interval = argc > 2 ? strtod(argv[2], &end) : 1.0;
		if (argc > 2 && (*end || end == argv[2] || !(interval > 0) ||
				 interval > 86400)) {
			fprintf(stderr, "vtpu-smi: --watch wants seconds above zero, not '%s'\n",
				argv[2]);
			return 2;
		}
	} else if (argc > 1) {
		if (strcmp(argv[1], "--watch"))
			fprintf(stderr, "vtpu-smi: unknown argument '%s'\n",
				argv[1]);
		return usage(stderr);
	}

	for (;;) {
		n = scan(devs);
		t = now_s();
		if (n < 0) {
			fprintf(stderr, "vtpu-smi: %s: %s (is vtpu.ko loaded?)\n",
				SYSFS_CLASS, strerror(-n));
			return 1;
		}
		if (interval > 0)
			printf("\033[H\033[2J");
		print_table(devs, n, n == nprev ? prev : NULL, t - tprev);
		if (interval <= 0)
			return 0;
		fflush(stdout);
		memcpy(prev, devs, sizeof(devs));
		nprev = n;
		tprev = t;
		usleep((useconds_t)(interval * 1e6));
	}
}
