/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * LSTM_CELL's and LSTM_CELL_GRAD's cells, once per SIMD level: included
 * after act_tmpl.h (its ACT_FN() suffix and activations) by the files
 * that build the activations, with their flags (-ffp-contract=off: every
 * product and sum rounded to f32 as ELEMENTWISE's MUL, ADD, TANH_GRAD and
 * SIGMOID_GRAD round them, at every width).
 *
 * A row's run of cells is done in blocks of VTPU_LSTM_BLOCK (in L1),
 * each a few plain loops over the block that vectorise (one loop doing a
 * whole cell has too many pointers for the compiler's overlap checks, and
 * stays scalar). Each loop reads an element before it writes it, and no
 * later loop reads what an earlier one overwrote, so act over gates,
 * dgates over act and dc_prev over dc_next (in place) are safe.
 */

void ACT_FN(vtpu_lstm_fwd)(const struct vtpu_engine_lstm *l, u64 r, u32 j,
			   u32 n)
{
	u64 gs = l->gs, o4 = r * l->rs, o1 = r * l->hidden;
	u32 k, k0, nb;

	for (k0 = j; k0 < j + n; k0 += nb) {
		const float *zi = l->gates + o4 + k0, *zf = zi + gs;
		const float *zg = zf + gs, *zo = zg + gs;
		const float *cp = l->c_prev + o1 + k0;
		float *ai = l->out4 + o4 + k0, *af = ai + gs;
		float *ag = af + gs, *ao = ag + gs;
		float *c = l->out_c + o1 + k0, *tc = l->out_tc + o1 + k0;
		float *h = l->out_h + o1 + k0;

		nb = j + n - k0 < VTPU_LSTM_BLOCK ? j + n - k0 :
						    VTPU_LSTM_BLOCK;
		ACT_FN(vtpu_act_sigmoid)(zi, ai, nb);
		ACT_FN(vtpu_act_sigmoid)(zf, af, nb);
		ACT_FN(vtpu_act_tanh)(zg, ag, nb);
		ACT_FN(vtpu_act_sigmoid)(zo, ao, nb);
		for (k = 0; k < nb; k++) {
			float fc = af[k] * cp[k], ig = ai[k] * ag[k];

			c[k] = fc + ig;
		}
		ACT_FN(vtpu_act_tanh)(c, tc, nb);
		for (k = 0; k < nb; k++)
			h[k] = ao[k] * tc[k];
	}
}

/*
 * As the unfused sequence: dc = ADD(TANH_GRAD(tc, MUL(dh, o)), dc_next),
 * dz_o = SIGMOID_GRAD(o, MUL(dh, tc)), dz_i = SIGMOID_GRAD(i, MUL(dc, g)),
 * dz_f = SIGMOID_GRAD(f, MUL(dc, c_prev)), dz_g = TANH_GRAD(g, MUL(dc, i)),
 * dc_prev = MUL(dc, f); dc in @scratch.
 */
void ACT_FN(vtpu_lstm_bwd)(const struct vtpu_engine_lstm *l, u64 r, u32 j,
			   u32 n, float *scratch)
{
	u64 gs = l->gs, o4 = r * l->rs, o1 = r * l->hidden;
	float *dc = scratch;
	u32 k, k0, nb;

	for (k0 = j; k0 < j + n; k0 += nb) {
		const float *ai = l->gates + o4 + k0, *af = ai + gs;
		const float *ag = af + gs, *ao = ag + gs;
		const float *cp = l->c_prev + o1 + k0, *tc = l->tc + o1 + k0;
		const float *dh = l->dh + o1 + k0;
		const float *dcn = l->dc_next + o1 + k0;
		float *dzi = l->out4 + o4 + k0, *dzf = dzi + gs;
		float *dzg = dzf + gs, *dzo = dzg + gs;
		float *dcp = l->out_c + o1 + k0;

		nb = j + n - k0 < VTPU_LSTM_BLOCK ? j + n - k0 :
						    VTPU_LSTM_BLOCK;
		for (k = 0; k < nb; k++) {
			float y = dh[k] * ao[k];

			y = y * (1.0f - tc[k] * tc[k]);
			dc[k] = y + dcn[k];
		}
		for (k = 0; k < nb; k++) {
			float y = dh[k] * tc[k], o = ao[k];

			dzo[k] = y * o * (1.0f - o);
		}
		for (k = 0; k < nb; k++) {
			float i = ai[k], g = ag[k];
			float yi = dc[k] * g, yg = dc[k] * i;

			dzi[k] = yi * i * (1.0f - i);
			dzg[k] = yg * (1.0f - g * g);
		}
		for (k = 0; k < nb; k++) {
			float f = af[k], y = dc[k] * cp[k];

			dcp[k] = dc[k] * f;
			dzf[k] = y * f * (1.0f - f);
		}
	}
}
