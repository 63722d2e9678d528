// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* SIGMOID and TANH for AVX-512 (compiled with its flags: engine.mk). */
#define ACT_SFX avx512
#define ACT_ROUND_INSN
#include "act_tmpl.h"
