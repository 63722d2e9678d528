// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * Repeated jobs: one stream run for iterations first .. first + repeat - 1,
 * where iteration i sees buffer j shifted by i * strides[j]. Integer code,
 * built without FPU flags in the kernel, like validate.c.
 */
#include "vtpu_engine.h"

/*
 * Offsets only grow with i, so a stream that is valid against what the
 * last iteration sees (every buffer shortened by its last shift) is valid
 * for every iteration. Strides are multiples of 4, the largest element
 * alignment, so every iteration's offsets stay aligned.
 */
int vtpu_engine_validate_iters(const void *cmds, u32 size, u64 *sizes,
			       u32 nbufs, const u64 *strides, u32 first,
			       u32 repeat, struct vtpu_engine_error *err)
{
	u64 last = (u64)first + (repeat ? repeat : 1) - 1;
	u64 shift;
	u32 j;

	for (j = 0; strides && j < nbufs; j++) {
		if (strides[j] % 4 ||
		    __builtin_mul_overflow(strides[j], last, &shift) ||
		    (shift && shift >= sizes[j])) {
			err->cmd = j;
			err->offset = 0;
			err->operand = VTPU_OPERAND_NONE;
			err->reason = VTPU_ERR_BAD_STRIDE_REPEAT;
			return -EINVAL;
		}
		sizes[j] -= shift;
	}
	return vtpu_engine_validate(cmds, size, sizes, nbufs, err);
}
