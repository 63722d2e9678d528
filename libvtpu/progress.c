// SPDX-License-Identifier: MIT
/*
 * Keras-style training progress: "Epoch 1/10", then a 30-character bar per
 * epoch, redrawn in place on a terminal and printed as plain lines anywhere
 * else (CI logs, pipes), where a bar redrawn with '\r' would be noise.
 *
 * The line format is tf.keras' Progbar (verbose=1) rule for rule, in one
 * function, vtpu_progress_format(), which the printing side only calls: the
 * tests check that function's strings against a fixed clock.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vtpu_data.h"

#define BAR_WIDTH 30
#define TTY_INTERVAL 0.05	/* seconds between redraws, as Keras */
#define NAME_MAX_LEN 48

struct metric_copy {
	char name[NAME_MAX_LEN];
	double value;
};

struct vtpu_progress {
	FILE *out;
	uint32_t total;
	bool tty;
	uint32_t log_every;
	double (*now)(void *ctx);
	void *now_ctx;

	double start;		/* clock at vtpu_progress_start() */
	double last_draw;	/* tty: clock at the last redraw */
	size_t width;		/* tty: length of the line on screen */
	uint32_t step;		/* the last step updated */
	size_t nm;
	struct metric_copy m[VTPU_PROGRESS_MAX_METRICS];
};

static double monotonic_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- formatting ----------------------------------------------------------- */

/* An snprintf accumulator: len counts everything, even what did not fit. */
struct sbuf {
	char *buf;
	size_t cap, len;
};

static void __attribute__((format(printf, 2, 3)))
sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	size_t room = sb->len < sb->cap ? sb->cap - sb->len : 0;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
	va_end(ap);
	if (r > 0)
		sb->len += (size_t)r;
}

static void sb_repeat(struct sbuf *sb, char c, int count)
{
	while (count-- > 0)
		sb_printf(sb, "%c", c);
}

/* Keras: "%.4f" unless the value is tiny, then "%.4e". */
static void sb_value(struct sbuf *sb, double v)
{
	if (fabs(v) > 1e-3)
		sb_printf(sb, "%.4f", v);
	else
		sb_printf(sb, "%.4e", v);
}

/* " - name: value" for each metric; without the first " - " when bare. */
static void sb_metrics(struct sbuf *sb, const struct vtpu_metric *m, size_t n,
		       bool bare)
{
	size_t i;

	for (i = 0; i < n; i++) {
		sb_printf(sb, "%s%s: ", bare && i == 0 ? "" : " - ",
			  m[i].name ? m[i].name : "?");
		sb_value(sb, m[i].value);
	}
}

/* Keras' _format_time: " 2ms/step". */
static void sb_time_per_step(struct sbuf *sb, double t)
{
	if (t >= 1 || t == 0)
		sb_printf(sb, " %.0fs/step", t);
	else if (t >= 1e-3)
		sb_printf(sb, " %.0fms/step", t * 1e3);
	else
		sb_printf(sb, " %.0fus/step", t * 1e6);
}

static void sb_eta(struct sbuf *sb, double eta)
{
	long s = (long)eta;

	if (eta > 3600)
		sb_printf(sb, " - ETA: %ld:%02ld:%02ld", s / 3600,
			  s % 3600 / 60, s % 60);
	else if (eta > 60)
		sb_printf(sb, " - ETA: %ld:%02ld", s / 60, s % 60);
	else
		sb_printf(sb, " - ETA: %lds", s);
}

int vtpu_progress_format(char *buf, size_t len, uint32_t step, uint32_t total,
			 double elapsed, bool final,
			 const struct vtpu_metric *m, size_t n)
{
	struct sbuf sb = { .buf = buf, .cap = len };
	double per_step;
	int digits = 1, done;
	uint32_t t;

	if (len)
		buf[0] = '\0';
	if (!total)
		return 0;
	for (t = total; t >= 10; t /= 10)
		digits++;
	sb_printf(&sb, "%*u/%u [", digits, step, total);
	/* int(width * prog) in double, as Keras computes it */
	done = step >= total ? BAR_WIDTH :
			       (int)(BAR_WIDTH * ((double)step / total));
	if (done > 0) {
		sb_repeat(&sb, '=', done - 1);
		sb_printf(&sb, "%c", step < total ? '>' : '=');
	}
	sb_repeat(&sb, '.', BAR_WIDTH - done);
	sb_printf(&sb, "]");

	per_step = step ? elapsed / step : 0;
	if (final) {
		sb_printf(&sb, " - %.0fs", elapsed);
		sb_time_per_step(&sb, per_step);
	} else {
		sb_eta(&sb, step < total ? per_step * (total - step) : 0);
	}
	sb_metrics(&sb, m, n, false);
	return sb.len > INT_MAX ? INT_MAX : (int)sb.len;
}

int vtpu_print_metrics(FILE *out, const struct vtpu_metric *m, size_t n)
{
	struct sbuf sb = { 0 };
	char *line;
	int ret;

	sb_metrics(&sb, m, n, true);
	line = malloc(sb.len + 1);
	if (!line)
		return -1;
	sb = (struct sbuf){ .buf = line, .cap = sb.len + 1 };
	sb_metrics(&sb, m, n, true);
	ret = fprintf(out, "%s\n", line);
	free(line);
	return ret;
}

/* ---- printing ------------------------------------------------------------- */

struct vtpu_progress *vtpu_progress_create(FILE *out, uint32_t total_steps,
					   const struct vtpu_progress_opts *opts)
{
	struct vtpu_progress_opts o = { .tty = -1 };
	struct vtpu_progress *p;

	if (!out || !total_steps) {
		errno = EINVAL;
		return NULL;
	}
	/* an older, smaller opts struct: take the fields it has */
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->out = out;
	p->total = total_steps;
	p->tty = o.tty > 0 || (o.tty < 0 && isatty(fileno(out)));
	p->log_every = o.log_every;
	p->now = o.now ? o.now : monotonic_now;
	p->now_ctx = o.now_ctx;
	p->start = p->now(p->now_ctx);
	p->last_draw = -INFINITY;
	return p;
}

void vtpu_progress_destroy(struct vtpu_progress *p)
{
	free(p);
}

void vtpu_progress_start(struct vtpu_progress *p, uint32_t epoch,
			 uint32_t epochs)
{
	if (epochs)
		fprintf(p->out, "Epoch %u/%u\n", epoch, epochs);
	fflush(p->out);
	p->start = p->now(p->now_ctx);
	p->last_draw = -INFINITY;
	p->width = 0;
	p->step = 0;
	p->nm = 0;
}

/* Print one line: over the previous one on a terminal, else on its own. */
static void emit(struct vtpu_progress *p, double now, bool final,
		 const struct vtpu_metric *m, size_t n, bool newline)
{
	char small[512], *line = small;
	int len;

	len = vtpu_progress_format(small, sizeof(small), p->step, p->total,
				   now - p->start, final, m, n);
	if ((size_t)len >= sizeof(small)) {
		line = malloc((size_t)len + 1);
		if (!line)
			return;
		vtpu_progress_format(line, (size_t)len + 1, p->step, p->total,
				     now - p->start, final, m, n);
	}
	if (p->tty) {
		/* pad over what is left of a longer previous line */
		fprintf(p->out, "\r%s%*s", line,
			p->width > (size_t)len ? (int)(p->width - len) : 0, "");
		p->width = (size_t)len;
	} else {
		fputs(line, p->out);
	}
	if (newline || !p->tty) {
		fputc('\n', p->out);
		p->width = 0;
	}
	fflush(p->out);
	if (line != small)
		free(line);
}

static size_t load_metrics(struct vtpu_metric *dst, size_t max,
			   const struct metric_copy *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < max; i++)
		dst[i] = (struct vtpu_metric){ src[i].name, src[i].value };
	return i;
}

void vtpu_progress_update(struct vtpu_progress *p, uint32_t step,
			  const struct vtpu_metric *m, size_t n)
{
	double now = p->now(p->now_ctx);
	size_t i;

	p->step = step;
	p->nm = n < VTPU_PROGRESS_MAX_METRICS ? n : VTPU_PROGRESS_MAX_METRICS;
	for (i = 0; i < p->nm; i++) {
		snprintf(p->m[i].name, sizeof(p->m[i].name), "%s",
			 m[i].name ? m[i].name : "?");
		p->m[i].value = m[i].value;
	}

	if (p->tty) {
		if (now - p->last_draw < TTY_INTERVAL && step < p->total)
			return;
		p->last_draw = now;
		emit(p, now, false, m, p->nm, false);
	} else if (p->log_every && step % p->log_every == 0 &&
		   step < p->total) {
		emit(p, now, false, m, p->nm, false);
	}
}

void vtpu_progress_end(struct vtpu_progress *p, const struct vtpu_metric *extra,
		       size_t nextra)
{
	struct vtpu_metric all[2 * VTPU_PROGRESS_MAX_METRICS];
	size_t n;

	n = load_metrics(all, VTPU_PROGRESS_MAX_METRICS, p->m, p->nm);
	if (nextra > VTPU_PROGRESS_MAX_METRICS)
		nextra = VTPU_PROGRESS_MAX_METRICS;
	if (nextra)
		memcpy(all + n, extra, nextra * sizeof(*extra));
	emit(p, p->now(p->now_ctx), true, all, n + nextra, true);
}
