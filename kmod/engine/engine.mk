# SPDX-License-Identifier: GPL-2.0-only OR MIT
# The engine's sources and flags, read by both kmod/Kbuild and the top-level
# Makefile (user space), so that both builds compile the same files the
# same way.
ENGINE_SRCS := \
	cmd.c \
	validate.c \
	iterate.c \
	exec.c \
	ops_gemm.c \
	ops_memory.c \
	gemm.c \
	gemm_avx2.c \
	gemm_avx512.c \
	gemm_narrow_avx512.c \
	gemm_small_avx512.c \
	gemm_winograd_avx512.c \
	gemm_wgrad_avx512.c \
	gemm_dgrad_avx512.c \
	ops_conv.c \
	ops_convpool.c \
	ops_convpool_avx2.c \
	ops_convpool_avx512.c \
	ops_pool.c \
	ops_elementwise.c \
	ops_act_avx2.c \
	ops_act_avx512.c \
	ops_reduce.c \
	ops_loss.c \
	ops_optim.c \
	ops_optim_avx2.c \
	ops_optim_avx512.c \
	ops_embedding.c \
	ops_softmax.c \
	ops_batchnorm.c \
	ops_dwconv.c \
	ops_nhwc_avx2.c \
	ops_nhwc_avx512.c \
	ops_additive.c \
	ops_lstm.c

# Integer-only objects, callable outside kernel_fpu_begin()/end().
ENGINE_NOFPU_SRCS := cmd.c validate.c iterate.c

# Kernel only: turn floating point back on for the other engine objects.
# The stack keeps the kernel's 8-byte boundary: x86-64 kernel stacks are
# only 8-byte aligned, so telling GCC 16 (-mpreferred-stack-boundary=4)
# lets it spill SSE registers with movaps to a misaligned slot (a #GP that
# panicked the guest once the element-wise ops were vectorised). GCC >= 7.1
# realigns the frame itself where it needs to (as amdgpu's DML relies on).
ENGINE_KERNEL_CFLAGS := -msse -msse2

# The element-wise ops are plain C loops: let the compiler vectorise them
# (GCC's -O2 cost model only vectorises loops that need no alias check).
ENGINE_VEC_CFLAGS := -ftree-vectorize -fvect-cost-model=dynamic
ENGINE_CFLAGS_ops_conv := $(ENGINE_VEC_CFLAGS)
ENGINE_CFLAGS_ops_pool := $(ENGINE_VEC_CFLAGS)
# CONV_POOL, once per SIMD level: its loops vectorise at each level's
# width, and its few-float copies stay loops (not calls to memcpy).
ENGINE_CP_CFLAGS := $(ENGINE_VEC_CFLAGS) -fno-tree-loop-distribute-patterns
ENGINE_CFLAGS_ops_convpool := $(ENGINE_CP_CFLAGS)
ENGINE_CFLAGS_ops_convpool_avx2 := $(ENGINE_CP_CFLAGS) -mavx2 -mfma
ENGINE_CFLAGS_ops_convpool_avx512 := $(ENGINE_CP_CFLAGS) -mavx512f -mfma \
	-mprefer-vector-width=512
# The activations, once per level, each element in double and rounded once:
# no contraction into FMA, so that every level gives the same bits; and no
# FP traps to keep (the engine never enables them), without which GCC
# will not vectorise trunc() as vroundpd.
ENGINE_ACT_CFLAGS := $(ENGINE_VEC_CFLAGS) -ffp-contract=off -fno-trapping-math
ENGINE_CFLAGS_ops_elementwise := $(ENGINE_ACT_CFLAGS)
ENGINE_CFLAGS_ops_act_avx2 := $(ENGINE_ACT_CFLAGS) -mavx2 -mfma
ENGINE_CFLAGS_ops_act_avx512 := $(ENGINE_ACT_CFLAGS) -mavx512f -mavx512dq \
	-mfma -mprefer-vector-width=512
ENGINE_CFLAGS_ops_reduce := $(ENGINE_VEC_CFLAGS)
ENGINE_CFLAGS_ops_loss := $(ENGINE_VEC_CFLAGS)
ENGINE_CFLAGS_ops_embedding := $(ENGINE_VEC_CFLAGS)
ENGINE_CFLAGS_ops_softmax := $(ENGINE_VEC_CFLAGS)
ENGINE_CFLAGS_ops_additive := $(ENGINE_VEC_CFLAGS) -ffp-contract=off
ENGINE_CFLAGS_ops_lstm := $(ENGINE_VEC_CFLAGS) -ffp-contract=off
# The optimizers, once per level (optim_tmpl.h). -fno-math-errno: sqrt is
# an instruction, never a libm call (vectorised as sqrtps in user space and
# in the kernel alike); no contraction into FMA, so that every level gives
# the same bits.
ENGINE_OPTIM_CFLAGS := $(ENGINE_VEC_CFLAGS) -ffp-contract=off -fno-math-errno
ENGINE_CFLAGS_ops_optim := $(ENGINE_OPTIM_CFLAGS)
ENGINE_CFLAGS_ops_optim_avx2 := $(ENGINE_OPTIM_CFLAGS) -mavx2
ENGINE_CFLAGS_ops_optim_avx512 := $(ENGINE_OPTIM_CFLAGS) -mavx512f \
	-mprefer-vector-width=512
# BATCHNORM and the depthwise convolution, once per level (bn_tmpl.h,
# dw_tmpl.h): vectorised along the channels, no contraction into FMA, so
# that every level gives the same bits.
ENGINE_NHWC_CFLAGS := $(ENGINE_VEC_CFLAGS) -ffp-contract=off -fno-math-errno
ENGINE_CFLAGS_ops_batchnorm := $(ENGINE_NHWC_CFLAGS)
ENGINE_CFLAGS_ops_dwconv := $(ENGINE_NHWC_CFLAGS)
ENGINE_CFLAGS_ops_nhwc_avx2 := $(ENGINE_NHWC_CFLAGS) -mavx2
ENGINE_CFLAGS_ops_nhwc_avx512 := $(ENGINE_NHWC_CFLAGS) -mavx512f \
	-mprefer-vector-width=512

# Per-file SIMD flags (both builds).
ENGINE_CFLAGS_gemm_avx2 := -mavx2 -mfma
ENGINE_CFLAGS_gemm_avx512 := -mavx512f -mfma
ENGINE_CFLAGS_gemm_narrow_avx512 := -mavx512f -mfma
ENGINE_CFLAGS_gemm_small_avx512 := -mavx512f -mfma
ENGINE_CFLAGS_gemm_winograd_avx512 := -mavx512f -mfma
ENGINE_CFLAGS_gemm_wgrad_avx512 := -mavx512f -mfma
ENGINE_CFLAGS_gemm_dgrad_avx512 := -mavx512f -mfma
