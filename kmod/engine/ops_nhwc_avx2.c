// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * BATCHNORM's, the depthwise convolution's and the pools' loops for
 * AVX2 (compiled with its flags: engine.mk).
 */
#define BN_SFX avx2
#include "bn_tmpl.h"
#define DW_SFX avx2
#include "dw_tmpl.h"
#define POOL_SFX avx2
#include "pool_tmpl.h"
