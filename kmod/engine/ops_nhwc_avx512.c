// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * BATCHNORM's and the depthwise convolution's loops for AVX-512 (compiled
 * with its flags: engine.mk).
 */
#define BN_SFX avx512
#define BN_LANES 16u
#include "bn_tmpl.h"
#define DW_SFX avx512
#include "dw_tmpl.h"
