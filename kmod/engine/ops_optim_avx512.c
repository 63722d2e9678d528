// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * SGD's and ADAM's loops for AVX-512 (optim_tmpl.h, compiled with
 * its flags: engine.mk).
 */
#define OPTIM_SFX avx512
#include "optim_tmpl.h"
