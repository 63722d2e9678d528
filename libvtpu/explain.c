// SPDX-License-Identifier: MIT
/*
 * vtpu_job_strerror(): a stream the validator rejected, explained in
 * words. The limits it quotes are the engine's own (the op table in
 * kmod/engine/cmd.c: each op's fields and their ranges, its rules, the
 * flags it knows, its operands' alignment and extents), so that a new op
 * needs nothing here. Only what needs a command's meaning stays: GEMM's
 * panels and leading dimensions, REDUCE's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vtpu.h"
#include "vtpu_engine.h"

struct strbuf {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->pos >= sb->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->pos, sb->len - sb->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->pos += (size_t)n;
}

/* The failing command's table entry, if the stream holds all of it. */
static const struct vtpu_engine_op_desc *
cmd_desc(const void *cmd, const struct vtpu_cmd_hdr *hdr, uint32_t avail)
{
	const struct vtpu_engine_op_desc *d = vtpu_engine_op_desc(hdr->opcode);

	return cmd && d && avail >= d->size && hdr->size == d->size ? d : NULL;
}

/*
 * One operand of a decoded command: where it is, how many bytes the
 * validator requires it to span and the alignment its offset needs
 * (vtpu_engine_operand() and vtpu_engine_operand_align(), so the numbers
 * are the validator's own) and, for matrices with a leading dimension,
 * the stored shape.
 */
struct operand_info {
	const struct vtpu_operand *op;
	uint64_t extent;
	uint32_t align;
	/* GEMM's and REDUCE's matrices: the stored shape, the leading dim */
	uint32_t rows, cols, ld;
	const char *ld_name;
};

/* Return: 0 and *oi filled, or -1 when @cmd has no such operand. */
static int operand_lookup(const void *cmd, const struct vtpu_cmd_hdr *hdr,
			  uint32_t avail, uint32_t operand,
			  struct operand_info *oi)
{
	memset(oi, 0, sizeof(*oi));
	if (!cmd_desc(cmd, hdr, avail) ||
	    vtpu_engine_operand(cmd, operand, &oi->op, &oi->extent))
		return -1;
	oi->align = vtpu_engine_operand_align(cmd, operand);

	if (hdr->opcode == VTPU_OP_REDUCE && operand == VTPU_OPERAND_X) {
		const struct vtpu_cmd_reduce *r = cmd;

		oi->rows = r->m;
		oi->cols = r->n;
		oi->ld = r->ldx;
		oi->ld_name = "ldx";
	}
	if (hdr->opcode == VTPU_OP_ARGMAX && operand == VTPU_OPERAND_X) {
		const struct vtpu_cmd_argmax *a = cmd;

		oi->rows = a->m;
		oi->cols = a->n;
		oi->ld = a->ldx;
		oi->ld_name = "ldx";
	}
	if (hdr->opcode == VTPU_OP_GEMM) {
		const struct vtpu_cmd_gemm *g = cmd;
		int ta = !!(g->flags & VTPU_GEMM_TRANS_A);
		int tb = !!(g->flags & VTPU_GEMM_TRANS_B);

		switch (operand) {
		case VTPU_OPERAND_A:
			oi->rows = ta ? g->k : g->m;
			oi->cols = ta ? g->m : g->k;
			oi->ld = g->lda;
			oi->ld_name = "lda";
			break;
		case VTPU_OPERAND_B:
			oi->rows = tb ? g->n : g->k;
			oi->cols = tb ? g->k : g->n;
			oi->ld = g->ldb;
			oi->ld_name = "ldb";
			break;
		case VTPU_OPERAND_C:
			oi->rows = g->m;
			oi->cols = g->n;
			oi->ld = g->ldc;
			oi->ld_name = "ldc";
			break;
		}
	}
	return 0;
}

/*
 * A GEMM operand in panels (VTPU_GEMM_B_PANELS, VTPU_GEMM_C_PANELS) that
 * breaks their rules; false if the error is not about those.
 */
static bool explain_panels(struct strbuf *sb, const void *cmd, uint32_t avail,
			   uint32_t reason, uint32_t operand, const char *oname)
{
	const struct vtpu_cmd_gemm *g = cmd;
	uint32_t flag, cols, ld;

	if (!cmd || avail < sizeof(*g) || g->hdr.opcode != VTPU_OP_GEMM)
		return false;
	if (operand == VTPU_OPERAND_B) {
		flag = VTPU_GEMM_B_PANELS;
		cols = (g->flags & VTPU_GEMM_TRANS_B) ? g->k : g->n;
		ld = g->ldb;
	} else if (operand == VTPU_OPERAND_C) {
		flag = VTPU_GEMM_C_PANELS;
		cols = g->n;
		ld = g->ldc;
	} else {
		return false;
	}
	if (!(g->flags & flag))
		return false;
	switch (reason) {
	case VTPU_ERR_BAD_SHAPE:
		sb_printf(sb, "operand %s is in panels: its %u columns (as "
			  "stored) must be a multiple of %u", oname, cols,
			  VTPU_GEMM_PANEL);
		return true;
	case VTPU_ERR_BAD_STRIDE:
		sb_printf(sb, "operand %s is in panels: its leading dimension "
			  "must be its %u columns, not %u", oname, cols, ld);
		return true;
	case VTPU_ERR_BAD_DTYPE:
		sb_printf(sb, "operand %s is in panels, which hold f32 only "
			  "(dtype %u)", oname, g->dtype);
		return true;
	}
	return false;
}

/*
 * A GEMM_BATCHED's bad leading dimension or stride (the validator's
 * order: A's, B's, then C's ldc, stride, and the Cs' overlap); false if
 * the command is not one.
 */
static bool explain_batched(struct strbuf *sb, const void *cmd,
			    uint32_t avail, uint32_t operand,
			    const char *oname)
{
	const struct vtpu_cmd_gemm_batched *g = cmd;
	uint32_t ld, need;
	uint64_t stride;
	bool ta, tb;

	if (!cmd || avail < sizeof(*g) ||
	    g->hdr.opcode != VTPU_OP_GEMM_BATCHED)
		return false;
	ta = g->flags & VTPU_GEMM_TRANS_A;
	tb = g->flags & VTPU_GEMM_TRANS_B;
	switch (operand) {
	case VTPU_OPERAND_A:
		ld = g->lda;
		need = ta ? g->m : g->k;
		stride = g->stride_a;
		break;
	case VTPU_OPERAND_B:
		ld = g->ldb;
		need = tb ? g->k : g->n;
		stride = g->stride_b;
		break;
	default:
		ld = g->ldc;
		need = g->n;
		stride = g->stride_c;
		break;
	}
	if (ld < need)
		sb_printf(sb, "operand %s: leading dimension %u is smaller "
			  "than its row length %u", oname, ld, need);
	else if (stride > VTPU_MAX_ELEMS)
		sb_printf(sb, "operand %s: stride %llu is past %llu elements",
			  oname, (unsigned long long)stride,
			  (unsigned long long)VTPU_MAX_ELEMS);
	else
		sb_printf(sb, "operand %s: stride_c %llu is smaller than one "
			  "C (%llu elements) and the rows do not interleave "
			  "(ldc %u < (batch - 1) * stride_c + n): the batch's "
			  "Cs would overlap", oname,
			  (unsigned long long)stride,
			  (unsigned long long)(g->m - 1) * g->ldc + g->n,
			  g->ldc);
	return true;
}

/* a * b + c, or UINT64_MAX if it would wrap */
static uint64_t sat_mad(uint64_t a, uint64_t b, uint64_t c)
{
	if (b && a > (UINT64_MAX - c) / b)
		return UINT64_MAX;
	return a * b + c;
}

/*
 * An LSTM_CELL's or LSTM_CELL_GRAD's bad strides (named on gates or act):
 * the validator's rule with the command's numbers; false if the command
 * is not one. Both lead with the same fields (ops_lstm.c asserts it).
 */
static bool explain_lstm(struct strbuf *sb, const void *cmd, uint32_t avail,
			 const char *oname)
{
	const struct vtpu_cmd_lstm_cell *l = cmd;
	uint64_t planes, rows;

	if (!cmd || avail < offsetof(struct vtpu_cmd_lstm_cell, gates) ||
	    (l->hdr.opcode != VTPU_OP_LSTM_CELL &&
	     l->hdr.opcode != VTPU_OP_LSTM_CELL_GRAD))
		return false;
	planes = sat_mad(l->batch ? l->batch - 1 : 0, l->row_stride,
			 l->hidden);
	rows = sat_mad(3, l->gate_stride, l->hidden);
	sb_printf(sb, "operand %s: row_stride %llu, gate_stride %llu (B %u, "
		  "H %u): each from H to %llu, and the gates either planes "
		  "(gate_stride >= (B - 1) * row_stride + H = %llu) or side by "
		  "side in each row (row_stride >= 3 * gate_stride + H = "
		  "%llu), the highest element below %llu", oname,
		  (unsigned long long)l->row_stride,
		  (unsigned long long)l->gate_stride, l->batch, l->hidden,
		  (unsigned long long)VTPU_MAX_ELEMS,
		  (unsigned long long)planes, (unsigned long long)rows,
		  (unsigned long long)VTPU_MAX_ELEMS);
	return true;
}

/* ---- the table's fields -------------------------------------------------- */

/* A command's scalar fields, its window's first: where each one is. */
struct field_list {
	uint32_t n;
	const struct vtpu_engine_field *f[VTPU_ENGINE_FIELDS_MAX + 16];
	const void *base[VTPU_ENGINE_FIELDS_MAX + 16];
};

static void field_list(struct field_list *fl, const void *cmd,
		       const struct vtpu_engine_op_desc *d)
{
	const struct vtpu_engine_field *wf;
	uint32_t i, nw = 0;
	const uint32_t max = sizeof(fl->f) / sizeof(fl->f[0]);

	fl->n = 0;
	if (d->window) {
		wf = vtpu_engine_window_fields(&nw);
		for (i = 0; i < nw && fl->n < max; i++, fl->n++) {
			fl->f[fl->n] = &wf[i];
			fl->base[fl->n] = (const uint8_t *)cmd +
					  sizeof(struct vtpu_cmd_hdr);
		}
	}
	for (i = 0; i < VTPU_ENGINE_FIELDS_MAX && d->fields[i].name &&
		    fl->n < max; i++, fl->n++) {
		fl->f[fl->n] = &d->fields[i];
		fl->base[fl->n] = cmd;
	}
}

static uint64_t field_value(const struct field_list *fl, uint32_t i)
{
	return vtpu_engine_field_value(fl->base[i], fl->f[i]);
}

static bool field_in_range(const struct field_list *fl, uint32_t i)
{
	uint64_t v = field_value(fl, i);

	return v >= fl->f[i]->min && v <= fl->f[i]->max;
}

/* The fields outside their ranges, "op=9 is not in 0..5"; how many. */
static uint32_t explain_bad_fields(struct strbuf *sb, const void *cmd,
				   const struct vtpu_engine_op_desc *d)
{
	struct field_list fl;
	uint32_t i, bad = 0;

	if (!d)
		return 0;
	field_list(&fl, cmd, d);
	for (i = 0; i < fl.n; i++) {
		if (field_in_range(&fl, i))
			continue;
		sb_printf(sb, "%s%s=%llu is not in %llu..%llu",
			  bad++ ? "; " : "", fl.f[i]->name,
			  (unsigned long long)field_value(&fl, i),
			  (unsigned long long)fl.f[i]->min,
			  (unsigned long long)fl.f[i]->max);
	}
	return bad;
}

static void explain_flags(struct strbuf *sb, const void *cmd,
			  const struct vtpu_engine_op_desc *d)
{
	uint32_t flags;

	/* a field that selects what the op does: ELEMENTWISE's op, ... */
	if (explain_bad_fields(sb, cmd, d))
		return;
	if (!d || !d->flags_at) {
		sb_printf(sb, "unknown flag bits set");
		return;
	}
	memcpy(&flags, (const uint8_t *)cmd + d->flags_at, sizeof(flags));
	if (flags && !d->flags)
		sb_printf(sb, "flags 0x%x: %s has none, they must be zero",
			  flags, d->name);
	else if (flags & ~d->flags)
		sb_printf(sb, "unknown flag bits 0x%x (flags 0x%x; known 0x%x)",
			  flags & ~d->flags, flags, d->flags);
	else
		sb_printf(sb, "flags 0x%x break a rule: %s", flags,
			  d->rules ? d->rules : "?");
}

/*
 * A field outside its range, with the range; else, all fields in range,
 * their values and what else the op asks: its rules, the element limit.
 */
static void explain_shape(struct strbuf *sb, const void *cmd,
			  const struct vtpu_engine_op_desc *d)
{
	struct field_list fl;
	uint32_t i;

	if (!d) {
		sb_printf(sb, "a dimension is 0 or too large");
		return;
	}
	if (explain_bad_fields(sb, cmd, d))
		return;
	field_list(&fl, cmd, d);
	for (i = 0; i < fl.n; i++)
		sb_printf(sb, "%s%s=%llu", i ? " " : "", fl.f[i]->name,
			  (unsigned long long)field_value(&fl, i));
	sb_printf(sb, "%s%s%severy tensor at most %llu elements",
		  fl.n ? ": " : "", d->rules ? d->rules : "",
		  d->rules ? "; " : "", (unsigned long long)VTPU_MAX_ELEMS);
}

/*
 * VTPU_ERR_BAD_STRIDE_REPEAT names a buffer (error.cmd), not a command: its
 * stride is not a multiple of 4, or the job's last iteration (first_iter +
 * repeat - 1) would start at or past the buffer's end.
 */
static void explain_stride_repeat(struct strbuf *sb,
				  const struct vtpu_cmdbuf *cb,
				  const struct vtpu_job *job)
{
	const uint32_t j = job->error.cmd;
	const unsigned long long first = job->first_iter;
	const unsigned long long last = first + (job->repeat ? job->repeat : 1) - 1;
	unsigned long long stride, size, fit;

	sb_printf(sb, "buffer %u: ", j);
	if (!job->strides || !cb || j >= cb->nhandles || !cb->bos ||
	    !cb->bos[j]) {
		sb_printf(sb, "its repeat stride is not a multiple of 4 or "
			  "walks past the buffer by iteration %llu", last);
		return;
	}
	stride = job->strides[j];
	size = cb->bos[j]->size;
	if (stride % 4) {
		sb_printf(sb, "repeat stride %llu is not a multiple of 4",
			  stride);
		return;
	}
	/* iterations 0..fit-1 start inside the buffer; iteration fit does not */
	if (!stride)
		fit = ~0ull;
	else if (stride >= size)
		fit = 1;
	else
		fit = (size + stride - 1) / stride;
	if (fit <= last && fit > first)
		sb_printf(sb, "repeat stride %llu walks past its %llu bytes "
			  "after %llu of %llu iterations (iteration %llu "
			  "would start at byte %llu)", stride, size,
			  fit - first, last - first + 1, fit, fit * stride);
	else
		sb_printf(sb, "repeat stride %llu: iterations %llu..%llu do "
			  "not fit its %llu bytes", stride, first, last, size);
}

char *vtpu_job_strerror(const struct vtpu_cmdbuf *cb,
			const struct vtpu_job *job, char *buf, size_t len)
{
	struct strbuf sb = { .buf = buf, .len = len };
	const uint32_t reason = job->error.reason;
	const uint32_t operand = job->error.operand;
	const uint32_t off = job->error.offset;
	struct vtpu_cmd_hdr hdr = { 0 };
	const struct vtpu_engine_op_desc *desc;
	struct operand_info oi;
	const uint8_t *cmd = NULL;
	uint32_t avail = 0;
	const char *oname = vtpu_engine_operand_name(operand);

	if (!buf || !len)
		return buf;
	buf[0] = '\0';

	if (reason == VTPU_ERR_NONE) {
		sb_printf(&sb, "not a command-stream error");
		return buf;
	}
	if (reason == VTPU_ERR_BAD_STRIDE_REPEAT) {
		explain_stride_repeat(&sb, cb, job);
		return buf;
	}

	/* The failing command, as far as the stream holds it. */
	if (cb && cb->data && off % 8 == 0 && off < cb->size) {
		cmd = cb->data + off;
		avail = cb->size - off;
		if (avail >= sizeof(hdr))
			memcpy(&hdr, cmd, sizeof(hdr));
		if (hdr.size && hdr.size < avail)
			avail = hdr.size;
	}

	desc = cmd_desc(cmd, &hdr, avail);

	if (cmd && avail >= sizeof(hdr))
		sb_printf(&sb, "command %u (%s): ", job->error.cmd,
			  vtpu_opcode_name(hdr.opcode));
	else
		sb_printf(&sb, "command %u at byte %u: ", job->error.cmd, off);

	switch (reason) {
	case VTPU_ERR_TRUNCATED:
		if (!cmd || cb->size - off < sizeof(hdr))
			sb_printf(&sb, "the stream (%u bytes) ends inside the "
				  "command header", cb ? cb->size : 0);
		else
			sb_printf(&sb, "the command is %u bytes but the stream "
				  "(%u bytes) ends %u bytes into it",
				  hdr.size, cb->size, cb->size - off);
		break;
	case VTPU_ERR_BAD_SIZE:
		if (vtpu_engine_cmd_size(hdr.opcode))
			sb_printf(&sb, "size %u is wrong for %s (must be %u)",
				  hdr.size, vtpu_opcode_name(hdr.opcode),
				  vtpu_engine_cmd_size(hdr.opcode));
		else
			sb_printf(&sb, "size %u is not a non-zero multiple "
				  "of 8", hdr.size);
		break;
	case VTPU_ERR_BAD_OPCODE:
		sb_printf(&sb, "unknown opcode %u", hdr.opcode);
		break;
	case VTPU_ERR_BAD_FLAGS:
		explain_flags(&sb, cmd, desc);
		break;
	case VTPU_ERR_BAD_PAD:
		if (operand == VTPU_OPERAND_BIAS &&
		    hdr.opcode == VTPU_OP_GEMM &&
		    avail >= sizeof(struct vtpu_cmd_gemm) &&
		    !(((const struct vtpu_cmd_gemm *)cmd)->flags &
		      VTPU_GEMM_BIAS))
			sb_printf(&sb, "operand bias is unused (no "
				  "VTPU_GEMM_BIAS) and must be all zero");
		else if (operand != VTPU_OPERAND_NONE &&
			 hdr.opcode >= VTPU_OP_IM2COL)
			sb_printf(&sb, "operand %s: its pad is not zero, or the "
				  "command does not use it and it is not all "
				  "zero", oname);
		else if (operand != VTPU_OPERAND_NONE)
			sb_printf(&sb, "operand %s: pad field is not zero",
				  oname);
		else if (hdr.opcode >= VTPU_OP_IM2COL)
			sb_printf(&sb, "a pad field, or a scalar the command "
				  "does not use, is not zero");
		else
			sb_printf(&sb, "a pad field is not zero");
		break;
	case VTPU_ERR_BAD_SHAPE:
		if (!explain_panels(&sb, cmd, avail, reason, operand, oname))
			explain_shape(&sb, cmd, desc);
		break;
	case VTPU_ERR_BAD_STRIDE:
		if (explain_panels(&sb, cmd, avail, reason, operand, oname) ||
		    explain_batched(&sb, cmd, avail, operand, oname) ||
		    explain_lstm(&sb, cmd, avail, oname))
			break;
		if (cmd && !operand_lookup(cmd, &hdr, avail, operand, &oi) &&
		    oi.ld_name)
			sb_printf(&sb, "operand %s: %s %u is smaller than its "
				  "row length %u (stored %u x %u)", oname,
				  oi.ld_name, oi.ld, oi.cols, oi.rows, oi.cols);
		else if (operand == VTPU_OPERAND_NONE)	/* a window's */
			explain_shape(&sb, cmd, desc);
		else
			sb_printf(&sb, "operand %s: leading dimension too "
				  "small", oname);
		break;
	case VTPU_ERR_BAD_DTYPE:
		if (explain_panels(&sb, cmd, avail, reason, operand, oname))
			break;
		if (hdr.opcode == VTPU_OP_GEMM &&
		    avail >= sizeof(struct vtpu_cmd_gemm))
			sb_printf(&sb, "dtype %u is unknown or unsupported",
				  ((const struct vtpu_cmd_gemm *)cmd)->dtype);
		else if (!explain_bad_fields(&sb, cmd, desc))	/* CAST's */
			sb_printf(&sb, "unknown or unsupported dtype");
		break;
	case VTPU_ERR_BAD_BUFFER:
		if (cmd && !operand_lookup(cmd, &hdr, avail, operand, &oi))
			sb_printf(&sb, "operand %s names buffer %u but the job "
				  "has only %u buffers", oname, oi.op->buf,
				  cb->nhandles);
		else
			sb_printf(&sb, "operand %s names a buffer index >= the "
				  "job's %u buffers", oname,
				  cb ? cb->nhandles : 0);
		break;
	case VTPU_ERR_OUT_OF_BOUNDS:
		if (cmd && !operand_lookup(cmd, &hdr, avail, operand, &oi)) {
			sb_printf(&sb, "operand %s [offset %llu + %llu bytes] "
				  "exceeds buffer %u", oname,
				  (unsigned long long)oi.op->offset,
				  (unsigned long long)oi.extent, oi.op->buf);
			if (oi.op->buf < cb->nhandles && cb->bos[oi.op->buf])
				sb_printf(&sb, " (%llu bytes)",
					  (unsigned long long)
					  cb->bos[oi.op->buf]->size);
			if (oi.op->offset > UINT64_MAX - oi.extent)
				sb_printf(&sb, "; the sum overflows 64 bits");
		} else {
			sb_printf(&sb, "operand %s extends past its buffer",
				  oname);
		}
		break;
	case VTPU_ERR_MISALIGNED:
		if (cmd && !operand_lookup(cmd, &hdr, avail, operand, &oi))
			sb_printf(&sb, "operand %s offset %llu is not a "
				  "multiple of %u bytes", oname,
				  (unsigned long long)oi.op->offset, oi.align);
		else
			sb_printf(&sb, "operand %s offset is misaligned",
				  oname);
		break;
	case VTPU_ERR_OVERLAP:
		sb_printf(&sb, "output operand %s overlaps an input", oname);
		break;
	case VTPU_ERR_READ_ONLY:
		sb_printf(&sb, "it writes a buffer this client imported "
			  "read-only (exported without O_RDWR)");
		break;
	default:
		sb_printf(&sb, "unknown reason %u (operand %s)", reason,
			  oname);
		break;
	}
	return buf;
}
