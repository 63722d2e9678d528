// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu_smi: vtpu-smi's processes and machine-readable output, against the
 * real module. This process opens /dev/vtpu0, holds a 1 MiB buffer and runs
 * one job; vtpu-smi --json must list it (device, memory, engine time) in a
 * document python3's json module parses, --csv processes must have the
 * documented header and a row for it, and a forked child sharing the open
 * file must not add a second row.
 *
 * Runs in the VM; skips when /dev/vtpu0 is absent or python3 is missing.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vtpu.h"

#define DEV_PATH "/dev/vtpu0"
#define PYTHON "/usr/bin/python3"
#define CSV_PROCESSES_HEADER                                                   \
	"time,pid,command,device,fd,client_id,memory,buffers,engine_ns,"       \
	"jobs_active,utilization"

/*
 * Parses vtpu-smi's JSON on stdin (failing on a document that is not JSON)
 * and prints what the test checks, one record a line.
 */
#define PY_CHECK                                                               \
	"import json,sys\n"                                                    \
	"d=json.load(sys.stdin)\n"                                             \
	"print('schema',d['schema'],len(d['devices']))\n"                      \
	"for p in d['processes']:\n"                                           \
	"  print('proc',p['pid'],p['device'],p['client_id'],p['memory'],"      \
	"p['engine_ns'],p['command'].encode().hex() or '-')\n"

FIXTURE(smi)
{
	struct vtpu_dev *dev;
	uint32_t q;
	struct vtpu_bo bo;
	char smi[PATH_MAX];
};

FIXTURE_SETUP(smi)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ASSERT_GT(n, 0);
	exe[n] = '\0';
	/* build/bin/selftests/vtpu_smi -> build/bin/vtpu-smi */
	snprintf(self->smi, sizeof(self->smi), "%s/../vtpu-smi", dirname(exe));
	self->dev = vtpu_open(DEV_PATH);
	if (!self->dev)
		return;
	ASSERT_EQ(0, vtpu_queue_create(self->dev, VTPU_QUEUE_PRIORITY_NORMAL,
				       &self->q));
	ASSERT_EQ(0, vtpu_bo_create(self->dev, 1 << 20, &self->bo));
}

FIXTURE_TEARDOWN(smi)
{
	if (self->dev)
		vtpu_close(self->dev);
}

#define NEED_DEV()                                                             \
	do {                                                                   \
		if (!self->dev)                                                \
			SKIP(return, "%s: %s (is vtpu.ko loaded?)", DEV_PATH,  \
			     strerror(errno));                                 \
		if (access(PYTHON, X_OK))                                      \
			SKIP(return, "no %s to parse the JSON", PYTHON);       \
		if (access(self->smi, X_OK))                                   \
			SKIP(return, "no build/bin/vtpu-smi: run make");       \
	} while (0)

/* One small job on the buffer, so that drm-engine-compute is above 0. */
static void run_job(struct __test_metadata *_metadata,
		    FIXTURE_DATA(smi) *self)
{
	struct vtpu_job job = { .queue = self->q, .in_fence = -1 };
	struct vtpu_cmdbuf cb;
	uint32_t status = 99;
	int32_t jerr = 0;

	vtpu_cmdbuf_init(&cb);
	vtpu_cmdbuf_fill(&cb, vtpu_cmdbuf_use(&cb, &self->bo), 0,
			 (1 << 20) / 4, 1.0f);
	ASSERT_EQ(0, vtpu_submit(self->dev, &cb, &job));
	ASSERT_EQ(0, vtpu_wait(self->dev, self->q, job.seqno, -1, &status,
			       &jerr));
	ASSERT_EQ(VTPU_JOB_DONE, status);
	vtpu_cmdbuf_fini(&cb);
}

struct smi_row {
	int pid;
	char device[32];
	long long client_id, memory, engine_ns;
	char comm_hex[64];
};

/*
 * Run vtpu-smi --json through PY_CHECK; fill @rows (up to @max) with the
 * processes. Return: the number of processes, or -1 (asserted) when the
 * document does not parse or has no schema 1.
 */
static int smi_json(struct __test_metadata *_metadata, const char *smi,
		    struct smi_row *rows, int max)
{
	char cmd[PATH_MAX + 512], line[512];
	int n = 0, schema = 0, ndev = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' --json | %s -c \"%s\"", smi, PYTHON,
		 PY_CHECK);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		struct smi_row *r = &rows[n];

		if (sscanf(line, "schema %d %d", &schema, &ndev) == 2)
			continue;
		if (n < max &&
		    sscanf(line, "proc %d %31s %lld %lld %lld %63s", &r->pid,
			   r->device, &r->client_id, &r->memory,
			   &r->engine_ns, r->comm_hex) == 6)
			n++;
	}
	EXPECT_EQ(0, pclose(p)) TH_LOG("vtpu-smi --json did not parse as JSON");
	EXPECT_EQ(1, schema);
	/* vtpu0 at least (run-checks --host: the host's own module) */
	EXPECT_GE(ndev, 1) TH_LOG("%d devices in the document", ndev);
	return n;
}

static long long own_client_id(struct vtpu_dev *dev)
{
	char path[64], line[256];
	long long id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", vtpu_fd(dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "drm-client-id: %lld", &id) == 1)
			break;
	fclose(f);
	return id;
}

/*
 * --json lists this process on vtpu0 with its buffer and its job's time,
 * and its command name, quotes, backslash and control character included,
 * survives the JSON escaping.
 */
TEST_F(smi, json_lists_self)
{
	static const char name[] = "sm\"i\\x\x01y";
	struct smi_row rows[64];
	char hex[64] = "";
	int i, n, found = 0;

	NEED_DEV();
	run_job(_metadata, self);
	for (i = 0; name[i]; i++)
		sprintf(hex + 2 * i, "%02x", (unsigned char)name[i]);
	ASSERT_EQ(0, prctl(PR_SET_NAME, name, 0, 0, 0));
	n = smi_json(_metadata, self->smi, rows, 64);
	for (i = 0; i < n; i++) {
		if (rows[i].pid != getpid())
			continue;
		found++;
		EXPECT_STREQ("vtpu0", rows[i].device);
		EXPECT_EQ(own_client_id(self->dev), rows[i].client_id);
		EXPECT_GE(rows[i].memory, 1 << 20);
		EXPECT_GT(rows[i].engine_ns, 0);
		EXPECT_STREQ(hex, rows[i].comm_hex);
	}
	EXPECT_EQ(1, found) TH_LOG("PID %d in %d rows of vtpu-smi --json",
				   getpid(), found);
}

/* --csv processes: the documented header, then a row for this PID. */
TEST_F(smi, csv_processes)
{
	char cmd[PATH_MAX + 64], line[512], pid[32];
	int header = 0, found = 0;
	FILE *p;

	NEED_DEV();
	run_job(_metadata, self);
	snprintf(pid, sizeof(pid), ",%d,", getpid());
	snprintf(cmd, sizeof(cmd), "'%s' --csv processes", self->smi);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!header) {
			EXPECT_STREQ(CSV_PROCESSES_HEADER, line);
			header = 1;
			continue;
		}
		/* time,pid,command,device,...: the PID is the second field */
		if (!strncmp(strchr(line, ','), pid, strlen(pid))) {
			found++;
			EXPECT_NE(NULL, strstr(line, ",vtpu0,")) TH_LOG("%s", line);
		}
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(1, header);
	EXPECT_EQ(1, found);
}

/*
 * A forked child shares the open file: the same client, one row, under the
 * parent (the first PID).
 */
TEST_F(smi, fork_one_row)
{
	long long id;
	struct smi_row rows[64];
	int i, n, found = 0, sync[2];
	pid_t child;
	char c;

	NEED_DEV();
	id = own_client_id(self->dev);
	ASSERT_GT(id, 0);
	ASSERT_EQ(0, pipe(sync));
	child = fork();
	ASSERT_GE(child, 0);
	if (!child) {
		close(sync[1]);
		/* hold the inherited fd until the parent closes the pipe */
		(void)!read(sync[0], &c, 1);
		_exit(0);
	}
	close(sync[0]);
	n = smi_json(_metadata, self->smi, rows, 64);
	close(sync[1]);
	waitpid(child, NULL, 0);
	for (i = 0; i < n; i++) {
		if (rows[i].client_id != id || strcmp(rows[i].device, "vtpu0"))
			continue;
		found++;
		EXPECT_EQ(getpid(), rows[i].pid);
	}
	EXPECT_EQ(1, found) TH_LOG("client %lld in %d rows", id, found);
}

TEST_HARNESS_MAIN
