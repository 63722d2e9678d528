// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * SIGMOID, TANH and the LSTM cell (lstm_tmpl.h) for AVX-512 (compiled with
 * its flags: engine.mk).
 */
#define ACT_SFX avx512
#define ACT_ROUND_INSN
#include "act_tmpl.h"
#include "lstm_tmpl.h"
