// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * The executors' side of the engine: prepare a validated command and run
 * its tiles through the op table (cmd.c), and gather independent commands
 * into groups. What each op does is in its own file (ops_*.c, gemm.c).
 */
#include "engine_internal.h"

ENGINE_SEQ_DEFINE(engine_op_seq);

void vtpu_engine_op_prepare(struct vtpu_engine_op *op,
			    const struct vtpu_cmd_hdr *cmd,
			    const struct vtpu_engine_buf *bufs, u32 simd,
			    u32 workers)
{
	const struct vtpu_engine_op_desc *desc;

	/* (the workspace is the phases' to fill, not zeroed) */
	memset(op, 0, offsetof(struct vtpu_engine_op, work));
	op->opcode = cmd->opcode;
	op->simd = simd;
	op->workers = workers ? workers : 1;
	op->ntiles = 1;
	op->nsteps = 1;
	op->seq = ENGINE_SEQ_NEXT(engine_op_seq);

	desc = vtpu_engine_op_desc(cmd->opcode);
	if (desc->prepare)	/* NOP: nothing */
		desc->prepare(op, cmd, bufs);
	if (op->nphases <= 1) {
		op->nphases = 1;
		op->phase_end[0] = op->ntiles;
	}
}

/* Does either of two ops write what the other reads or writes? */
static bool spans_conflict(const struct vtpu_engine_span *a, u32 na,
			   const struct vtpu_engine_span *b, u32 nb)
{
	u32 i, j;

	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			if ((a[i].write || b[j].write) && a[i].lo < b[j].hi &&
			    b[j].lo < a[i].hi)
				return true;
	return false;
}

bool vtpu_engine_group_add(struct vtpu_engine_group *grp,
			   const struct vtpu_cmd_hdr *cmd,
			   const struct vtpu_engine_buf *bufs, u32 simd,
			   u32 workers, u32 max_ops)
{
	u32 n = grp->nops, i;
	struct vtpu_engine_op *op = &grp->op[n];

	vtpu_engine_op_prepare(op, cmd, bufs, simd, workers);
	grp->nspans[n] = vtpu_engine_spans(cmd, bufs, grp->spans[n]);
	if (n) {
		/* (too many operands to list: it runs alone) */
		if (n >= max_ops || n >= VTPU_ENGINE_GROUP_MAX ||
		    grp->nspans[n] > VTPU_ENGINE_SPANS_MAX)
			return false;
		for (i = 0; i < n; i++)
			if (grp->nspans[i] > VTPU_ENGINE_SPANS_MAX ||
			    spans_conflict(grp->spans[i], grp->nspans[i],
					   grp->spans[n], grp->nspans[n]))
				return false;
	}
	grp->first[n] = grp->ntiles;
	grp->ntiles += op->ntiles;
	grp->first[n + 1] = grp->ntiles;
	grp->flops += op->flops;
	grp->nops = n + 1;
	if (grp->nphases < op->nphases)
		grp->nphases = op->nphases;
	grp->phase = 0;
	return true;
}

void vtpu_engine_group_restart(struct vtpu_engine_group *grp)
{
	u32 n = grp->nops;

	grp->op[0] = grp->op[n];
	grp->nspans[0] = grp->nspans[n];
	memcpy(grp->spans[0], grp->spans[n], sizeof(grp->spans[0]));
	grp->nops = 1;
	grp->ntiles = grp->op[0].ntiles;
	grp->first[0] = 0;
	grp->first[1] = grp->ntiles;
	grp->flops = grp->op[0].flops;
	grp->nphases = grp->op[0].nphases;
	grp->phase = 0;
}

void vtpu_engine_op_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
			void *scratch)
{
	const struct vtpu_engine_op_desc *desc = vtpu_engine_op_desc(op->opcode);

	if (desc->run)
		desc->run(op, tile, step, scratch);
}

size_t vtpu_engine_scratch_size(void)
{
	size_t g = vtpu_gemm_scratch_size(), r = vtpu_reduce_scratch_size();
	size_t b = vtpu_batchnorm_scratch_size();
	size_t a = vtpu_additive_scratch_size();
	size_t d = vtpu_dwconv_scratch_size();
	size_t l = vtpu_lstm_scratch_size();

	if (r < b)
		r = b;
	if (r < a)
		r = a;
	if (r < d)
		r = d;
	if (r < l)
		r = l;
	return g > r ? g : r;
}
