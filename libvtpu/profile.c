// SPDX-License-Identifier: MIT
/*
 * The cpu backend's profiler (cpu_priv.h): per stream, the time of every
 * command, and the report, when the executor goes away: the stream's time
 * per opcode, then its costliest commands, each with its shape, over the
 * runs after the stream's first (cpu_priv.h says why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_priv.h"

u64 cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

void cpu_prof_init(struct cpu_prof *prof)
{
	const char *env = getenv("VTPU_PROFILE");

	memset(prof, 0, sizeof(*prof));
	if (env && strcmp(env, "0"))
		prof->listed = strcmp(env, "all") ? 20 : UINT32_MAX;
}

struct cpu_prof_stream *cpu_prof_stream(struct cpu_prof *prof,
					const struct vtpu_cmdbuf *cb)
{
	struct cpu_prof_stream *ps;
	u32 pos, n = 0;
	int i;

	for (i = 0; i < prof->nstreams; i++)
		if (prof->streams[i].data == cb->data &&
		    prof->streams[i].size == cb->size)
			return &prof->streams[i];
	ps = realloc(prof->streams,
		     (size_t)(prof->nstreams + 1) * sizeof(*ps));
	if (!ps)
		return NULL;
	prof->streams = ps;
	ps = &ps[prof->nstreams];
	for (pos = 0; vtpu_engine_next(cb->data, cb->size, &pos);)
		n++;
	memset(ps, 0, sizeof(*ps));
	ps->cmds = calloc(n ?: 1, sizeof(*ps->cmds));
	if (!ps->cmds)
		return NULL;
	ps->data = cb->data;
	ps->size = cb->size;
	ps->ncmds = n;
	prof->nstreams++;
	return ps;
}

void cpu_prof_describe(struct cpu_prof_cmd *pc,
		       const struct vtpu_engine_op *op)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(op->opcode);

	pc->opcode = op->opcode;
	if (d && d->describe)
		d->describe(op, pc->what, sizeof(pc->what));
	else
		snprintf(pc->what, sizeof(pc->what), "%u tiles", op->ntiles);
}

static int prof_cmp(const void *a, const void *b)
{
	const struct cpu_prof_cmd *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/* One line: the stream's time per opcode, the costliest first. */
static void prof_by_opcode(const struct cpu_prof_stream *ps, u64 sum)
{
	u64 ns[VTPU_OP_COUNT] = { 0 };
	u32 j, op, best;

	for (j = 0; j < ps->ncmds; j++)
		if (ps->cmds[j].opcode < VTPU_OP_COUNT)
			ns[ps->cmds[j].opcode] += ps->cmds[j].ns;
	fprintf(stderr, "  by opcode:");
	for (;;) {
		for (best = 0, op = 1; op < VTPU_OP_COUNT; op++)
			if (ns[op] > ns[best])
				best = op;
		if (!ns[best] || !sum)
			break;
		fprintf(stderr, " %s %.1f%%", vtpu_opcode_name(best),
			100.0 * (double)ns[best] / (double)sum);
		ns[best] = 0;
	}
	fprintf(stderr, "\n");
}

/*
 * A stream that ran more than once is reported over the runs after its
 * first (struct cpu_prof_cmd), the first's time given apart; one that ran
 * once, over that run.
 */
void cpu_prof_print(struct cpu_prof *prof)
{
	int i;
	u32 j;

	for (i = 0; i < prof->nstreams; i++) {
		struct cpu_prof_stream *ps = &prof->streams[i];
		bool once = ps->runs <= 1;
		double per = 1e6 * (double)(once ? 1 : ps->runs - 1);
		u64 sum = 0;

		/* (once: the first run's times are the ones to report) */
		for (j = 0; j < ps->ncmds; j++) {
			if (once)
				ps->cmds[j].ns = ps->cmds[j].first_ns;
			sum += ps->cmds[j].ns;
		}
		if (once)
			ps->ns = ps->first_ns;
		fprintf(stderr,
			"vtpu profile: stream %d, %u commands, %llu runs, "
			"%.3f ms per run (%.3f ms in commands)",
			i, ps->ncmds, (unsigned long long)ps->runs,
			ps->ns / per, sum / per);
		if (ps->runs > 1)
			fprintf(stderr, " after the first, which took %.3f ms",
				ps->first_ns / 1e6);
		fprintf(stderr, "\n");
		prof_by_opcode(ps, sum);
		qsort(ps->cmds, ps->ncmds, sizeof(*ps->cmds), prof_cmp);
		for (j = 0; j < ps->ncmds && j < prof->listed && ps->cmds[j].ns;
		     j++) {
			const struct cpu_prof_cmd *pc = &ps->cmds[j];

			fprintf(stderr, "  %-13s %-28s %8.3f ms/run %5.1f%%\n",
				vtpu_opcode_name(pc->opcode), pc->what,
				pc->ns / per,
				sum ? 100.0 * (double)pc->ns / (double)sum : 0);
		}
		free(ps->cmds);
	}
	free(prof->streams);
	prof->streams = NULL;
	prof->nstreams = 0;
}
