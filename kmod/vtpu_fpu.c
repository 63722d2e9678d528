// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one place that knows which CPU the device runs on: SIMD level
 * detection and the FPU bracket around engine calls. Everything
 * architecture-specific stays here so the rest of the driver is plain C.
 */
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>

#include "vtpu_drv.h"

/*
 * The CPU must have the instructions, and the kernel must save and restore
 * the register state they use (XSAVE features enabled), or a task switch
 * inside an FPU section would corrupt user registers.
 */
u32 vtpu_simd_best(void)
{
	/* engine.mk builds the AVX-512 objects with -mavx512f -mfma only */
	if (boot_cpu_has(X86_FEATURE_AVX512F) && boot_cpu_has(X86_FEATURE_FMA) &&
	    cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM |
				      XFEATURE_MASK_AVX512, NULL))
		return VTPU_SIMD_AVX512;
	if (boot_cpu_has(X86_FEATURE_AVX2) && boot_cpu_has(X86_FEATURE_FMA) &&
	    cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL))
		return VTPU_SIMD_AVX2;
	return VTPU_SIMD_SCALAR;
}

/* Nothing between these may sleep, allocate or touch user memory. */
void vtpu_fpu_begin(void)
{
	kernel_fpu_begin();
}

void vtpu_fpu_end(void)
{
	kernel_fpu_end();
}
