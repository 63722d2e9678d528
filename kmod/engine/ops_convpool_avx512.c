// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* CONV_POOL's kernels for AVX-512F (compiled with its flags: engine.mk). */
#define CP_SFX avx512
#define CP_VBYTES 64
#include "convpool_tmpl.h"
