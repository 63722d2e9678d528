// SPDX-License-Identifier: MIT
/*
 * vtpu-smi: the state of every vtpu device at a glance, like nvidia-smi.
 *
 * Reads /sys/class/vtpu/vtpuN/ (the module's sysfs attributes) and
 * /sys/module/vtpu/version, so it needs no open file on the device and
 * never disturbs its clients. The first line: the driver's release and
 * the kernel it runs on (the one it was built for: its vermagic).
 *
 * The processes: every /proc/PID/fd/N that links to /dev/vtpuN, with its
 * /proc/PID/fdinfo/N (the DRM usage-stats keys the module prints), one row
 * per client (open file): a forked child sharing the file is the same
 * client, shown once, under the first PID.
 *
 *   vtpu-smi              one table
 *   vtpu-smi --watch [S]  refresh every S seconds (default 1), with
 *                         utilisation over the last interval
 *   vtpu-smi --json       one JSON document (JSON lines with --watch)
 *   vtpu-smi --csv [devices|processes]   one CSV table
 *   vtpu-smi --help | --version
 *
 * The JSON and CSV schemas are stable (docs/vtpu-smi.md, vtpu-smi(1)):
 * fields are only added, and a change to one bumps "schema".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <sys/utsname.h>

#define SYSFS_CLASS "/sys/class/vtpu"
#define MAX_DEVS 16
#define MAX_PROCS 512
#define SCHEMA 1

struct dev_state {
	char name[256];
	char simd[16];
	long long cores, mem_cap, mem_used, clients;
	long long submitted, completed, failed, timedout, cancelled;
	long long flops, busy_ns;
	double t;	/* when busy_ns was read (now_s()) */
};

/* One client (open file of /dev/vtpuN), from the first process seen with it. */
struct proc_row {
	int pid, fd;
	char comm[64];
	char device[32];
	long long client_id, mem_bytes, engine_ns, buffers, jobs_active;
	double t;	/* when engine_ns was read (now_s()) */
};

struct procs {
	struct proc_row rows[MAX_PROCS];
	int n;
	int denied;	/* processes whose fds could not be read */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Read @path whole into @buf (NUL-terminated) and set *@t to when the
 * kernel produced it: the midpoint of the read() that did. A busy time
 * divided by the time between two readings is a utilisation only if
 * each reading's time is its value's: a process preempted between the
 * read and its clock (a loaded machine, an emulated guest) would stamp
 * the value late, and show a busy client above 100%. So the read is
 * retried, fresh, until one takes at most READ_SLACK_S, keeping the
 * shortest. Return: bytes read, or -errno.
 */
#define READ_SLACK_S 0.0005
#define READ_TRIES 8

static ssize_t read_stamped(const char *path, char *buf, size_t len, double *t)
{
	double best = -1, t0, t1;
	char tmp[4096];
	ssize_t n, got = -EIO;
	int i, fd;

	if (len > sizeof(tmp))
		len = sizeof(tmp);
	for (i = 0; i < READ_TRIES && !(best >= 0 && best <= READ_SLACK_S);
	     i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return got >= 0 ? got : -errno;
		t0 = now_s();
		n = read(fd, tmp, len - 1);
		t1 = now_s();
		if (n < 0)
			n = -errno;
		close(fd);
		if (n < 0)
			return got >= 0 ? got : n;
		if (best < 0 || t1 - t0 < best) {
			best = t1 - t0;
			memcpy(buf, tmp, n);
			buf[n] = '\0';
			got = n;
			*t = (t0 + t1) / 2;
		}
	}
	return got;
}

/* A sysfs attribute of @dev, its newline cut; @t: as read_stamped()'s */
static int read_attr(const char *dev, const char *attr, char *buf, size_t len,
		     double *t)
{
	char path[256];
	double when;
	ssize_t n;

	snprintf(path, sizeof(path), SYSFS_CLASS "/%s/%s", dev, attr);
	n = read_stamped(path, buf, len, t ? t : &when);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static long long read_num(const char *dev, const char *attr, double *t)
{
	char buf[64];

	return read_attr(dev, attr, buf, sizeof(buf), t) ? -1 : atoll(buf);
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
		if (read_attr(s->name, "simd", s->simd, sizeof(s->simd), NULL))
			continue;
		s->cores = read_num(s->name, "cores", NULL);
		s->mem_cap = read_num(s->name, "mem_cap", NULL);
		s->mem_used = read_num(s->name, "mem_used", NULL);
		s->clients = read_num(s->name, "clients", NULL);
		s->submitted = read_num(s->name, "jobs_submitted", NULL);
		s->completed = read_num(s->name, "jobs_completed", NULL);
		s->failed = read_num(s->name, "jobs_failed", NULL);
		s->timedout = read_num(s->name, "jobs_timedout", NULL);
		s->cancelled = read_num(s->name, "jobs_cancelled", NULL);
		s->flops = read_num(s->name, "flops", NULL);
		s->t = now_s();
		s->busy_ns = read_num(s->name, "busy_ns", &s->t);
		n++;
	}
	closedir(d);
	qsort(devs, n, sizeof(*devs), cmp_name);
	return n;
}

/* ---- processes ------------------------------------------------------------- */

/* Parse /proc/@pid/fdinfo/@fd into @r; Return: 0, or -1 if it is not vtpu's. */
static int read_fdinfo(int pid, int fd, struct proc_row *r)
{
	char path[64], buf[4096], *line, *save;
	int driver = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	if (read_stamped(path, buf, sizeof(buf), &r->t) < 0)
		return -1;
	r->client_id = r->mem_bytes = r->engine_ns = -1;
	r->buffers = r->jobs_active = -1;
	r->device[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ':');

		if (!val)
			continue;
		*val++ = '\0';
		val += strspn(val, " \t");
		if (!strcmp(line, "drm-driver"))
			driver = !strcmp(val, "vtpu");
		else if (!strcmp(line, "drm-client-id"))
			r->client_id = atoll(val);
		else if (!strcmp(line, "drm-engine-compute"))
			r->engine_ns = atoll(val);	/* "N ns" */
		else if (!strcmp(line, "drm-total-system"))
			r->mem_bytes = atoll(val) * 1024;	/* "N KiB" */
		else if (!strcmp(line, "vtpu-device"))
			snprintf(r->device, sizeof(r->device), "%s", val);
		else if (!strcmp(line, "vtpu-buffers"))
			r->buffers = atoll(val);
		else if (!strcmp(line, "vtpu-jobs-active"))
			r->jobs_active = atoll(val);
	}
	return driver && r->client_id >= 0 && r->device[0] ? 0 : -1;
}

static int is_vtpu_link(const char *target)
{
	const char *p = target + strlen("/dev/vtpu");

	if (strncmp(target, "/dev/vtpu", strlen("/dev/vtpu")) || !*p)
		return 0;
	return strspn(p, "0123456789") == strlen(p);
}

static int find_client(const struct procs *ps, const char *device, long long id)
{
	int i;

	for (i = 0; i < ps->n; i++)
		if (ps->rows[i].client_id == id &&
		    !strcmp(ps->rows[i].device, device))
			return i;
	return -1;
}

static void read_comm(int pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	comm[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(comm, (int)len, f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
}

static void scan_pid(struct procs *ps, int pid)
{
	char path[64], target[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d) {
		if (errno == EACCES || errno == EPERM)
			ps->denied++;
		return;
	}
	while ((de = readdir(d)) && ps->n < MAX_PROCS) {
		struct proc_row *r = &ps->rows[ps->n];
		char link[sizeof(path) + sizeof(de->d_name) + 1];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		if (!is_vtpu_link(target))
			continue;
		r->pid = pid;
		r->fd = atoi(de->d_name);
		if (read_fdinfo(pid, r->fd, r))
			continue;
		if (find_client(ps, r->device, r->client_id) >= 0)
			continue;	/* a shared open file: shown once */
		read_comm(pid, r->comm, sizeof(r->comm));
		ps->n++;
	}
	closedir(d);
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int cmp_row(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	int c = strverscmp(x->device, y->device);

	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->client_id < y->client_id ? -1 : x->client_id > y->client_id;
}

/* Every client of every device, in the order device, PID, client id. */
static void scan_procs(struct procs *ps)
{
	static int pids[65536];
	struct dirent *de;
	DIR *d = opendir("/proc");
	int i, n = 0;

	ps->n = 0;
	ps->denied = 0;
	if (!d)
		return;
	while ((de = readdir(d)) && n < (int)(sizeof(pids) / sizeof(pids[0])))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			pids[n++] = atoi(de->d_name);
	closedir(d);
	/* the first PID of a shared client is the lowest: the parent, mostly */
	qsort(pids, n, sizeof(pids[0]), cmp_pid);
	for (i = 0; i < n; i++)
		scan_pid(ps, pids[i]);
	qsort(ps->rows, ps->n, sizeof(ps->rows[0]), cmp_row);
}

/*
 * Utilisation of a client over the interval, or < 0 when unknown: over the
 * time between its two readings, not the sample's interval, which a slow
 * scan of /proc would skew (a busy client shown above 100%).
 */
static double proc_util(const struct proc_row *r, const struct procs *prev,
			double interval_s)
{
	const struct proc_row *p;
	int i;

	if (!prev || !(interval_s > 0))
		return -1;
	i = find_client(prev, r->device, r->client_id);
	if (i < 0)
		return -1;
	p = &prev->rows[i];
	if (p->engine_ns < 0 || r->engine_ns < 0 || !(r->t > p->t))
		return -1;
	return (r->engine_ns - p->engine_ns) / ((r->t - p->t) * 1e9);
}

static double dev_util(const struct dev_state *s, const struct dev_state *prev,
		       int nprev, double interval_s)
{
	int i;

	if (!prev || !(interval_s > 0))
		return -1;
	/* over the time between its two readings, as proc_util() */
	for (i = 0; i < nprev; i++)
		if (!strcmp(prev[i].name, s->name))
			return s->t > prev[i].t && s->busy_ns >= 0 &&
			       prev[i].busy_ns >= 0 ?
			       (s->busy_ns - prev[i].busy_ns) /
			       ((s->t - prev[i].t) * 1e9) : -1;
	return -1;
}

static const char *denied_note =
	"processes: run as root to see other users' processes";

/* ---- text ------------------------------------------------------------------ */

static void driver_version(char *ver, size_t len)
{
	FILE *f = fopen("/sys/module/vtpu/version", "r");

	snprintf(ver, len, "?");
	if (!f)
		return;
	if (!fgets(ver, (int)len, f))
		snprintf(ver, len, "?");
	fclose(f);
	ver[strcspn(ver, "\n")] = '\0';
}

static void print_header(void)
{
	char ver[64];
	struct utsname u;

	driver_version(ver, sizeof(ver));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	printf("vtpu driver %s, Linux %s\n", ver, u.release);
}

static void fmt_util(char *buf, size_t len, double u)
{
	if (u < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f%%", 100.0 * u);
}

static void print_table(const struct dev_state *devs, int n,
			const struct dev_state *prev, int nprev,
			const struct procs *ps, const struct procs *pprev,
			double interval_s)
{
	int i;

	print_header();
	printf("%-7s %-6s %5s %7s %21s %7s %10s %7s %7s %9s %7s\n", "DEVICE",
	       "SIMD", "CORES", "CLIENTS", "MEMORY (MiB)", "UTIL", "JOBS",
	       "FAILED", "TIMEOUT", "CANCELLED", "GFLOP");
	for (i = 0; i < n; i++) {
		const struct dev_state *s = &devs[i];
		char util[16];
		char mem[32];

		fmt_util(util, sizeof(util), dev_util(s, prev, nprev, interval_s));
		snprintf(mem, sizeof(mem), "%.1f / %.0f", s->mem_used / 1048576.0,
			 s->mem_cap / 1048576.0);
		printf("%-7s %-6s %5lld %7lld %21s %7s %10lld %7lld %7lld %9lld %7.1f\n",
		       s->name, s->simd, s->cores, s->clients, mem, util,
		       s->completed, s->failed, s->timedout, s->cancelled,
		       s->flops / 1e9);
	}
	printf("\n%-8s %-16s %-7s %7s %12s %12s %7s %6s\n", "PID", "COMMAND",
	       "DEVICE", "CLIENT", "MEMORY (MiB)", "ENGINE (s)", "UTIL",
	       "ACTIVE");
	for (i = 0; i < ps->n; i++) {
		const struct proc_row *r = &ps->rows[i];
		char util[16], comm[17];
		int j;

		fmt_util(util, sizeof(util), proc_util(r, pprev, interval_s));
		/* a table cell: no control characters */
		snprintf(comm, sizeof(comm), "%s", r->comm);
		for (j = 0; comm[j]; j++)
			if ((unsigned char)comm[j] < 0x20 || comm[j] == 0x7f)
				comm[j] = '?';
		printf("%-8d %-16s %-7s %7lld %12.1f %12.3f %7s %6lld\n", r->pid,
		       comm, r->device, r->client_id, r->mem_bytes / 1048576.0,
		       r->engine_ns / 1e9, util, r->jobs_active);
	}
	if (!ps->n)
		printf("%s\n", ps->denied ? denied_note : "no processes");
}

/* ---- JSON ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at @s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;	/* overlong, surrogate, above U+10FFFF */
	return n;
}

/* @s as a JSON string: escaped, and bytes that are not UTF-8 as U+FFFD. */
static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		int n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else if (!n)
			fputs("\\ufffd", stdout);
		else
			fwrite(p, 1, n, stdout);
		p += n ? n : 1;
	}
	putchar('"');
}

/* A count, or null when it could not be read. */
static void json_num(const char *key, long long v, int comma)
{
	printf("\"%s\":", key);
	if (v < 0)
		printf("null");
	else
		printf("%lld", v);
	if (comma)
		putchar(',');
}

static void json_util(double u)
{
	printf("\"utilization\":");
	if (u < 0)
		printf("null");
	else
		printf("%.4f", u);
}

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_json(const struct dev_state *devs, int n,
		       const struct dev_state *prev, int nprev,
		       const struct procs *ps, const struct procs *pprev,
		       double interval_s, int loaded)
{
	char ver[64];
	struct utsname u;
	int i;

	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	printf("{\"schema\":%d,\"version\":", SCHEMA);
	json_str(VTPU_VERSION);
	printf(",\"driver\":");
	if (loaded) {
		driver_version(ver, sizeof(ver));
		json_str(ver);
	} else {
		printf("null");
	}
	printf(",\"kernel\":");
	json_str(u.release);
	printf(",\"time\":%.3f,\"interval\":", now_real());
	if (prev && interval_s > 0)
		printf("%.3f", interval_s);
	else
		printf("null");
	printf(",\"devices\":[");
	for (i = 0; i < n; i++) {
		const struct dev_state *s = &devs[i];

		printf("%s{\"name\":", i ? "," : "");
		json_str(s->name);
		printf(",\"simd\":");
		json_str(s->simd);
		putchar(',');
		json_num("cores", s->cores, 1);
		json_num("clients", s->clients, 1);
		json_num("memory_used", s->mem_used, 1);
		json_num("memory_cap", s->mem_cap, 1);
		json_num("jobs_submitted", s->submitted, 1);
		json_num("jobs_completed", s->completed, 1);
		json_num("jobs_failed", s->failed, 1);
		json_num("jobs_timedout", s->timedout, 1);
		json_num("jobs_cancelled", s->cancelled, 1);
		json_num("flops", s->flops, 1);
		json_num("busy_ns", s->busy_ns, 1);
		json_util(dev_util(s, prev, nprev, interval_s));
		putchar('}');
	}
	printf("],\"processes\":[");
	for (i = 0; i < ps->n; i++) {
		const struct proc_row *r = &ps->rows[i];

		printf("%s{\"pid\":%d,\"command\":", i ? "," : "", r->pid);
		json_str(r->comm);
		printf(",\"device\":");
		json_str(r->device);
		printf(",\"fd\":%d,", r->fd);
		json_num("client_id", r->client_id, 1);
		json_num("memory", r->mem_bytes, 1);
		json_num("buffers", r->buffers, 1);
		json_num("engine_ns", r->engine_ns, 1);
		json_num("jobs_active", r->jobs_active, 1);
		json_util(proc_util(r, pprev, interval_s));
		putchar('}');
	}
	printf("],\"processes_complete\":%s}\n", ps->denied ? "false" : "true");
}

/* ---- CSV ------------------------------------------------------------------- */

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or newline. */
static void csv_str(const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void csv_num(long long v)
{
	putchar(',');
	if (v >= 0)
		printf("%lld", v);
}

static void csv_util(double u)
{
	putchar(',');
	if (u >= 0)
		printf("%.4f", u);
}

static const char *csv_devices_header =
	"time,name,simd,cores,clients,memory_used,memory_cap,jobs_submitted,"
	"jobs_completed,jobs_failed,jobs_timedout,jobs_cancelled,flops,"
	"busy_ns,utilization";
static const char *csv_processes_header =
	"time,pid,command,device,fd,client_id,memory,buffers,engine_ns,"
	"jobs_active,utilization";

static void print_csv(int processes, const struct dev_state *devs, int n,
		      const struct dev_state *prev, int nprev,
		      const struct procs *ps, const struct procs *pprev,
		      double interval_s)
{
	double t = now_real();
	int i;

	for (i = 0; !processes && i < n; i++) {
		const struct dev_state *s = &devs[i];

		printf("%.3f,", t);
		csv_str(s->name);
		putchar(',');
		csv_str(s->simd);
		csv_num(s->cores);
		csv_num(s->clients);
		csv_num(s->mem_used);
		csv_num(s->mem_cap);
		csv_num(s->submitted);
		csv_num(s->completed);
		csv_num(s->failed);
		csv_num(s->timedout);
		csv_num(s->cancelled);
		csv_num(s->flops);
		csv_num(s->busy_ns);
		csv_util(dev_util(s, prev, nprev, interval_s));
		putchar('\n');
	}
	for (i = 0; processes && i < ps->n; i++) {
		const struct proc_row *r = &ps->rows[i];

		printf("%.3f,%d,", t, r->pid);
		csv_str(r->comm);
		putchar(',');
		csv_str(r->device);
		printf(",%d", r->fd);
		csv_num(r->client_id);
		csv_num(r->mem_bytes);
		csv_num(r->buffers);
		csv_num(r->engine_ns);
		csv_num(r->jobs_active);
		csv_util(proc_util(r, pprev, interval_s));
		putchar('\n');
	}
}

/* ---- main ------------------------------------------------------------------ */


static int usage(FILE *f)
{
	fprintf(f, "usage: vtpu-smi [--watch [SECONDS]] [--json | --csv [devices|processes]]\n"
		"The state of every vtpu device, from %s, and the\n"
		"processes that have one open, from /proc/PID/fdinfo.\n"
		"  --watch [S]   refresh every S seconds (default 1)\n"
		"  --json        one JSON document (one per line with --watch)\n"
		"  --csv [WHAT]  a CSV table of the devices (default) or processes\n"
		"  --help        this text\n"
		"  --version     print the version and exit\n", SYSFS_CLASS);
	return f == stdout ? 0 : 2;
}

enum { TEXT, JSON, CSV };

int main(int argc, char **argv)
{
	static struct procs procs[2];
	struct dev_state devs[MAX_DEVS], prev[MAX_DEVS];
	struct procs *ps = &procs[0], *pprev = &procs[1], *tmp;
	double interval = 0, t, tprev = 0;
	int n, nprev = -1, i, format = TEXT, csv_procs = 0, first = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return usage(stdout);
		if (!strcmp(a, "--version")) {
			printf("vtpu-smi %s\n", VTPU_VERSION);
			return 0;
		}
		if (!strcmp(a, "--watch")) {
			char *end = NULL;

			interval = 1.0;
			if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) {
				a = argv[++i];
				interval = strtod(a, &end);
				if (*end || end == a || !(interval > 0) ||
				    interval > 86400) {
					fprintf(stderr, "vtpu-smi: --watch wants seconds above zero, not '%s'\n",
						a);
					return 2;
				}
			}
		} else if (!strcmp(a, "--json") || !strcmp(a, "--csv")) {
			if (format != TEXT) {
				fprintf(stderr, "vtpu-smi: one of --json and --csv\n");
				return usage(stderr);
			}
			format = a[2] == 'j' ? JSON : CSV;
			if (format == CSV && i + 1 < argc &&
			    strncmp(argv[i + 1], "--", 2)) {
				a = argv[++i];
				if (strcmp(a, "devices") && strcmp(a, "processes")) {
					fprintf(stderr, "vtpu-smi: --csv wants devices or processes, not '%s'\n",
						a);
					return 2;
				}
				csv_procs = !strcmp(a, "processes");
			}
		} else {
			fprintf(stderr, "vtpu-smi: unknown argument '%s'\n", a);
			return usage(stderr);
		}
	}

	for (;;) {
		n = scan(devs);
		t = now_s();
		scan_procs(ps);
		if (n < 0) {
			fprintf(stderr, "vtpu-smi: %s: %s (is vtpu.ko loaded?)\n",
				SYSFS_CLASS, strerror(-n));
			/* a document all the same: no devices */
			if (format == JSON)
				print_json(devs, 0, NULL, 0, ps, NULL, 0, 0);
			else if (format == CSV)
				printf("%s\n", csv_procs ? csv_processes_header :
					       csv_devices_header);
			return 1;
		}
		if (format == JSON) {
			print_json(devs, n, nprev >= 0 ? prev : NULL, nprev,
				   ps, nprev >= 0 ? pprev : NULL, t - tprev, 1);
		} else if (format == CSV) {
			if (first)
				printf("%s\n", csv_procs ? csv_processes_header :
					       csv_devices_header);
			print_csv(csv_procs, devs, n, nprev >= 0 ? prev : NULL,
				  nprev, ps, nprev >= 0 ? pprev : NULL,
				  t - tprev);
		} else {
			if (interval > 0)
				printf("\033[H\033[2J");
			print_table(devs, n, nprev >= 0 ? prev : NULL, nprev,
				    ps, nprev >= 0 ? pprev : NULL, t - tprev);
		}
		if (format != TEXT && !ps->n && ps->denied)
			fprintf(stderr, "vtpu-smi: %s\n", denied_note);
		if (interval <= 0)
			return 0;
		fflush(stdout);
		memcpy(prev, devs, sizeof(devs));
		nprev = n;
		tprev = t;
		tmp = pprev;
		pprev = ps;
		ps = tmp;
		first = 0;
		usleep((useconds_t)(interval * 1e6));
	}
}
