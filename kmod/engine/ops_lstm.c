// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * LSTM_CELL and LSTM_CELL_GRAD (struct vtpu_cmd_lstm_cell, struct
 * vtpu_cmd_lstm_cell_grad): the element-wise part of an LSTM time step,
 * after the GEMMs that make its four gates' pre-activations, in one
 * command where the unfused form takes nine ELEMENTWISE commands forward
 * and twelve backward, with the same bits.
 *
 * A cell (row b, column j) reads its four gates at k * gate_stride + b *
 * row_stride + j and its states at b * H + j, and writes the same places
 * of its outputs: cells are independent. The B * H cells, row by row, are
 * cut into tiles (vtpu_ops_tile() on LSTM_CELL_WEIGHT "elements" a cell:
 * a cell costs five or so element-wise passes), each tile's row pieces
 * done by the level's loops (lstm_tmpl.h). The arithmetic is ELEMENTWISE's
 * in the order of the unfused commands, so a cell's bits are theirs and
 * never depend on the tiling, the workers or the SIMD level.
 */
#include "engine_internal.h"

#define LSTM_CELL_WEIGHT 8u	/* elements a cell counts for in tiling */

/* Both commands lead with the shape and strides (read through either). */
_Static_assert(offsetof(struct vtpu_cmd_lstm_cell, batch) ==
		       offsetof(struct vtpu_cmd_lstm_cell_grad, batch) &&
	       offsetof(struct vtpu_cmd_lstm_cell, hidden) ==
		       offsetof(struct vtpu_cmd_lstm_cell_grad, hidden) &&
	       offsetof(struct vtpu_cmd_lstm_cell, row_stride) ==
		       offsetof(struct vtpu_cmd_lstm_cell_grad, row_stride) &&
	       offsetof(struct vtpu_cmd_lstm_cell, gate_stride) ==
		       offsetof(struct vtpu_cmd_lstm_cell_grad, gate_stride),
	       "LSTM_CELL and LSTM_CELL_GRAD lead with the same fields");

static const struct {
	void (*fwd)(const struct vtpu_engine_lstm *l, u64 r, u32 j, u32 n);
	void (*bwd)(const struct vtpu_engine_lstm *l, u64 r, u32 j, u32 n,
		    float *scratch);
} lstm_levels[] = {
	[VTPU_SIMD_SCALAR] = { vtpu_lstm_fwd_scalar, vtpu_lstm_bwd_scalar },
	[VTPU_SIMD_AVX2] = { vtpu_lstm_fwd_avx2, vtpu_lstm_bwd_avx2 },
	[VTPU_SIMD_AVX512] = { vtpu_lstm_fwd_avx512, vtpu_lstm_bwd_avx512 },
};

size_t vtpu_lstm_scratch_size(void)
{
	return VTPU_LSTM_BLOCK * sizeof(float);
}

void vtpu_lstm_prepare(struct vtpu_engine_op *op,
		       const struct vtpu_cmd_hdr *cmd,
		       const struct vtpu_engine_buf *bufs)
{
	const struct vtpu_cmd_lstm_cell *f = (const void *)cmd;
	struct vtpu_engine_lstm *l = &op->lstm;
	u64 tiles;

	memset(l, 0, sizeof(*l));
	l->grad = cmd->opcode == VTPU_OP_LSTM_CELL_GRAD;
	/* the shape and strides: the same leading fields in both */
	l->hidden = f->hidden;
	l->cells = (u64)f->batch * f->hidden;
	l->rs = f->row_stride;
	l->gs = f->gate_stride;
	if (l->grad) {
		const struct vtpu_cmd_lstm_cell_grad *c = (const void *)cmd;

		l->gates = vtpu_operand_ptr(bufs, &c->act);
		l->c_prev = vtpu_operand_ptr(bufs, &c->c_prev);
		l->tc = vtpu_operand_ptr(bufs, &c->tc);
		l->dh = vtpu_operand_ptr(bufs, &c->dh);
		l->dc_next = vtpu_operand_ptr(bufs, &c->dc_next);
		l->out4 = vtpu_operand_ptr(bufs, &c->dgates);
		l->out_c = vtpu_operand_ptr(bufs, &c->dc_prev);
	} else {
		l->gates = vtpu_operand_ptr(bufs, &f->gates);
		l->c_prev = vtpu_operand_ptr(bufs, &f->c_prev);
		l->out4 = vtpu_operand_ptr(bufs, &f->act);
		l->out_c = vtpu_operand_ptr(bufs, &f->c);
		l->out_tc = vtpu_operand_ptr(bufs, &f->tc);
		l->out_h = vtpu_operand_ptr(bufs, &f->h);
	}
	/* tiles as ELEMENTWISE's of LSTM_CELL_WEIGHT elements a cell */
	vtpu_ops_tile(op, l->cells * LSTM_CELL_WEIGHT);
	tiles = op->ntiles;
	l->chunk = (l->cells + tiles - 1) / tiles;
	op->ntiles = (u32)((l->cells + l->chunk - 1) / l->chunk);
	op->flops = l->cells * (l->grad ? 20 : 50);
}

void vtpu_lstm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch)
{
	const struct vtpu_engine_lstm *l = &op->lstm;
	u32 simd = op->simd <= VTPU_SIMD_AVX512 ? op->simd : VTPU_SIMD_SCALAR;
	u64 e = (u64)tile * l->chunk;
	u64 e1 = vtpu_min_u64(e + l->chunk, l->cells);
	u64 r = e / l->hidden;
	u32 j = (u32)(e % l->hidden), n;

	while (e < e1) {
		n = (u32)vtpu_min_u64(l->hidden - j, e1 - e);
		if (l->grad)
			lstm_levels[simd].bwd(l, r, j, n, scratch);
		else
			lstm_levels[simd].fwd(l, r, j, n);
		e += n;
		r++;
		j = 0;
	}
}

int vtpu_lstm_describe(const struct vtpu_engine_op *op, char *buf,
		       size_t len)
{
	const struct vtpu_engine_lstm *l = &op->lstm;

	return snprintf(buf, len, "B %llu, H %u, strides %llu, %llu",
			(unsigned long long)(l->cells / l->hidden), l->hidden,
			(unsigned long long)l->rs, (unsigned long long)l->gs);
}
