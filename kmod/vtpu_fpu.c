// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one place that knows which CPU the device runs on: SIMD level
 * detection and the FPU bracket around engine calls. Everything
 * architecture-specific stays here so the rest of the driver is plain C.
 */
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>

#include "vtpu_drv.h"

#ifdef CONFIG_UML
/*
 * User-Mode Linux: the kernel is a host process, whose registers the host
 * kernel saves and restores, and which UML never preempts (kernel code
 * switches tasks only through calls, which clobber every vector register
 * anyway). kernel_fpu_begin()/end() are no-ops there and there is no
 * xstate API: the host enables the state of every feature it reports in
 * /proc/cpuinfo, from which UML fills boot_cpu_data.
 */
static bool vtpu_saves_ymm(void)
{
	return true;
}

static bool vtpu_saves_zmm(void)
{
	return true;
}
#else
static bool vtpu_saves_ymm(void)
{
	return cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL);
}

static bool vtpu_saves_zmm(void)
{
	return cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM |
				 XFEATURE_MASK_AVX512, NULL);
}
#endif

/*
 * The CPU must have the instructions, and the kernel must save and restore
 * the register state they use (XSAVE features enabled), or a task switch
 * inside an FPU section would corrupt user registers.
 */
u32 vtpu_simd_best(void)
{
	/* engine.mk builds the AVX-512 objects with -mavx512f -mfma only */
	if (boot_cpu_has(X86_FEATURE_AVX512F) && boot_cpu_has(X86_FEATURE_FMA) &&
	    vtpu_saves_zmm())
		return VTPU_SIMD_AVX512;
	if (boot_cpu_has(X86_FEATURE_AVX2) && boot_cpu_has(X86_FEATURE_FMA) &&
	    vtpu_saves_ymm())
		return VTPU_SIMD_AVX2;
	return VTPU_SIMD_SCALAR;
}

/*
 * Nothing between these may sleep, allocate or touch user memory. The
 * engine's FP mode (denormals flushed: vtpu_engine_fp_enter()) holds
 * between them; under UML, where kernel_fpu_begin() is a no-op, the
 * control word the rest of the kernel had comes back at the end.
 */
u32 vtpu_fpu_begin(void)
{
	kernel_fpu_begin();
	return vtpu_engine_fp_enter();
}

void vtpu_fpu_end(u32 saved)
{
	vtpu_engine_fp_leave(saved);
	kernel_fpu_end();
}
