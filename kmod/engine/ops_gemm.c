// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The GEMM family's commands: GEMM itself and the convolutions that run
 * as one (CONV, CONV_DGRAD, CONV_WGRAD), decoded into struct
 * vtpu_engine_gemm for gemm.c to tile and run.
 */
#include "engine_internal.h"

void vtpu_gemm_cmd_prepare(struct vtpu_engine_op *op,
			   const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_gemm *g = (const void *)cmd;

	op->gemm.m = g->m;
	op->gemm.n = g->n;
	op->gemm.k = g->k;
	op->gemm.flags = g->flags;
	op->gemm.lda = g->lda;
	op->gemm.ldb = g->ldb;
	op->gemm.ldc = g->ldc;
	op->gemm.dtype = g->dtype;
	op->gemm.alpha = vtpu_f32_from_bits(g->alpha);
	op->gemm.beta = vtpu_f32_from_bits(g->beta);
	op->gemm.a = vtpu_operand_ptr(bufs, &g->a);
	op->gemm.b = vtpu_operand_ptr(bufs, &g->b);
	op->gemm.c = vtpu_operand_ptr(bufs, &g->c);
	op->gemm.bias = (g->flags & VTPU_GEMM_BIAS) ?
				vtpu_operand_ptr(bufs, &g->bias) : NULL;
	vtpu_gemm_prepare(op);
}

/*
 * m x n x k, which operands are turned or in panels (Bp, Cp), the parts K
 * is split into (K/2) and the row tiles a tile sweeps (R/3)
 */
int vtpu_gemm_describe(const struct vtpu_engine_op *op, char *buf, size_t len)
{
	const struct vtpu_engine_gemm *g = &op->gemm;
	int n = snprintf(buf, len, "%ux%ux%u%s%s%s%s", g->m, g->n, g->k,
			 g->flags & VTPU_GEMM_TRANS_A ? " At" : "",
			 g->flags & VTPU_GEMM_TRANS_B ? " Bt" : "",
			 g->flags & VTPU_GEMM_B_PANELS ? " Bp" : "",
			 g->flags & VTPU_GEMM_C_PANELS ? " Cp" : "");

	if (g->ksplit && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " K/%u", g->ksplit);
	if (g->sweep && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " R/%u", g->sweep);
	return n;
}

void vtpu_conv_gemm_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_conv *c = (const void *)cmd;
	struct vtpu_engine_gemm *g = &op->gemm;
	struct vtpu_engine_window *w = &g->win;
	bool pointwise;
	u64 rows;

	vtpu_conv_decode(c, w, &rows);
	/*
	 * A 1 x 1 window at stride 1 (a pointwise convolution) has the
	 * image itself, [n*h*w, c], for its im2col columns: CONV and DGRAD
	 * (dx = dy w^T) run as plain GEMMs that read it where it is, with
	 * nothing to gather (up to a third faster over few channels). WGRAD
	 * stays implicit: AVX-512's direct WGRAD kernel reads x in place
	 * already, and beat the plain GEMM over many channels.
	 */
	pointwise = w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1 &&
		    c->hdr.opcode != VTPU_OP_CONV_WGRAD;
	g->dtype = VTPU_DTYPE_F32;
	g->alpha = 1.0f;
	g->beta = (c->flags & VTPU_CONV_ACCUMULATE) ? 1.0f : 0.0f;
	g->implicit = !pointwise;
	g->ldb = c->oc;
	switch (c->hdr.opcode) {
	case VTPU_OP_CONV:	/* y = act(cols * w + bias) */
		g->m = (u32)rows;
		g->n = c->oc;
		g->k = (u32)w->kdim;
		g->lda = g->k;
		g->ldc = c->oc;
		g->a = vtpu_operand_ptr(bufs, &c->x);
		g->b = vtpu_operand_ptr(bufs, &c->w);
		g->c = vtpu_operand_ptr(bufs, &c->y);
		if (c->flags & VTPU_CONV_BIAS) {
			g->flags |= VTPU_GEMM_BIAS;
			g->bias = vtpu_operand_ptr(bufs, &c->bias);
		}
		if (c->flags & VTPU_CONV_RELU)
			g->flags |= VTPU_GEMM_RELU;
		break;
	case VTPU_OP_CONV_WGRAD:	/* dw = cols^T * dy */
		g->m = (u32)w->kdim;
		g->n = c->oc;
		g->k = (u32)rows;
		g->flags = VTPU_GEMM_TRANS_A;
		g->lda = g->m;
		g->ldc = c->oc;
		g->a = vtpu_operand_ptr(bufs, &c->x);
		g->b = vtpu_operand_ptr(bufs, &c->y);
		g->c = vtpu_operand_ptr(bufs, &c->w);
		break;
	default:
		/*
		 * CONV_DGRAD (stride 1): dx is the convolution of dy, padded
		 * so that its output is x's size, with w turned (flip_oc).
		 */
		g->m = w->n * w->h * w->w;
		g->n = w->c;
		g->k = w->kh * w->kw * c->oc;
		g->lda = g->k;
		g->ldc = w->c;
		g->a = vtpu_operand_ptr(bufs, &c->y);
		g->b = vtpu_operand_ptr(bufs, &c->w);
		g->c = vtpu_operand_ptr(bufs, &c->x);
		if (pointwise) {	/* dx = dy w^T, w stored [c, oc] */
			g->flags = VTPU_GEMM_TRANS_B;
			break;
		}
		g->flip_oc = c->oc;
		w->h = w->oh;
		w->w = w->ow;
		w->c = c->oc;
		w->ph = w->kh - 1 - w->ph;
		w->pw = w->kw - 1 - w->pw;
		w->oh = c->win.h;
		w->ow = c->win.w;
		w->kdim = g->k;
		break;
	}
	vtpu_gemm_prepare(op);
}

/* the GEMM it runs; CONV_DGRAD's window is over dy */
int vtpu_conv_gemm_describe(const struct vtpu_engine_op *op, char *buf,
			    size_t len)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return snprintf(buf, len, "%ux%ux%u k%ux%u", g->m, g->n, g->k,
			g->win.kh, g->win.kw);
}

void vtpu_gemm_batched_prepare(struct vtpu_engine_op *op,
			       const struct vtpu_cmd_hdr *cmd,
			       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_gemm_batched *c = (const void *)cmd;
	struct vtpu_engine_gemm *g = &op->gemm;

	g->m = c->m;
	g->n = c->n;
	g->k = c->k;
	g->flags = c->flags;
	g->lda = c->lda;
	g->ldb = c->ldb;
	g->ldc = c->ldc;
	g->dtype = c->dtype;
	g->alpha = vtpu_f32_from_bits(c->alpha);
	g->beta = vtpu_f32_from_bits(c->beta);
	g->a = vtpu_operand_ptr(bufs, &c->a);
	g->b = vtpu_operand_ptr(bufs, &c->b);
	g->c = vtpu_operand_ptr(bufs, &c->c);
	g->batch = c->batch;
	g->stride_a = c->stride_a;
	g->stride_b = c->stride_b;
	g->stride_c = c->stride_c;
	vtpu_gemm_prepare_batched(op);
}

/* batch x (m x n x k), and which operands are turned */
int vtpu_gemm_batched_describe(const struct vtpu_engine_op *op, char *buf,
			       size_t len)
{
	const struct vtpu_engine_gemm *g = &op->gemm;

	return snprintf(buf, len, "%ux %ux%ux%u%s%s", g->batch, g->m, g->n,
			g->k, g->flags & VTPU_GEMM_TRANS_A ? " At" : "",
			g->flags & VTPU_GEMM_TRANS_B ? " Bt" : "");
}
