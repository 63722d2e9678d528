/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * Between the engine's dispatcher (exec.c) and its op implementations.
 * Each op family provides prepare (fill in ntiles/nsteps/flops and any
 * tiling state from the decoded fields) and run (one tile step).
 */
#ifndef VTPU_ENGINE_INTERNAL_H
#define VTPU_ENGINE_INTERNAL_H

#include "vtpu_engine.h"

/* gemm.c: op->gemm and op->simd are set; fills the rest. */
void vtpu_gemm_prepare(struct vtpu_engine_op *op);
void vtpu_gemm_run(const struct vtpu_engine_op *op, u32 tile, u32 step,
		   void *scratch);
size_t vtpu_gemm_scratch_size(void);

#endif /* VTPU_ENGINE_INTERNAL_H */
