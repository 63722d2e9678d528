// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* CONV_POOL's kernels for AVX2 + FMA (compiled with its flags: engine.mk). */
#define CP_SFX avx2
#define CP_VBYTES 32
#include "convpool_tmpl.h"
