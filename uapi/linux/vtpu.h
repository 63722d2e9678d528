/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * vtpu: a virtual tensor processing unit.
 *
 * This header is the only contract between vtpu.ko and user space.
 *
 * Overview
 * --------
 * Each device node /dev/vtpuN is an accelerator with a matrix unit and a
 * vector unit, emulated by kernel worker threads on the CPU's SIMD units.
 * A client (an open file description) owns:
 *
 *  - buffers (BOs): zeroed memory, named by a per-file handle, mapped into
 *    user space with mmap() at the offset BO_CREATE/BO_INFO return;
 *  - queues: ordered streams of jobs with a priority;
 *  - jobs: a command stream (struct vtpu_cmd_hdr followed by a body, back
 *    to back, each 8-byte aligned) plus the list of buffer handles it uses.
 *    Commands name buffers by their index in that list, never by handle.
 *
 * The kernel validates the whole command stream before anything runs; a bad
 * command fails the submit with -EINVAL and the submit struct says which
 * command, which operand and why. Every job ends (done, error, cancelled or
 * timed out) and its fence always signals.
 *
 * Versioning: ioctl structs only grow at the end. The kernel accepts a
 * struct shorter than today's if it still holds every field of the first
 * version (missing fields read as zero), and a longer one whose extra bytes
 * are all zero (otherwise -E2BIG). All pad fields must be zero.
 *
 * Scalars (alpha, beta, ...) are IEEE-754 binary32 bit patterns in __u32
 * fields, so that the header needs no floating point.
 */
#ifndef _UAPI_LINUX_VTPU_H
#define _UAPI_LINUX_VTPU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * Bumped when the ioctl set or the command set gains something; a module
 * runs every stream an older version's library builds.
 *   1: the first
 *   2: VTPU_GEMM_B_PANELS, VTPU_GEMM_C_PANELS
 *   3: QUEUE_CREATE's @in_fence_timeout_ms (the struct grew), the
 *      per-client limits (VTPU_PARAM_CLIENT_*), read-only exports
 *      (VTPU_ERR_READ_ONLY), one dma-buf per buffer and mode
 *   4: VTPU_PARAM_DRIVER_VERSION, VTPU_PARAM_KERNEL_VERSION
 *   5: the sequence ops: EMBEDDING, EMBEDDING_GRAD, GEMM_BATCHED, SOFTMAX,
 *      SOFTMAX_GRAD, CLIP_NORM; VTPU_EW_SIGMOID, VTPU_EW_TANH and their
 *      gradients, VTPU_REDUCE_SUMSQ_ROWS, VTPU_XENT_MEAN_VALID
 *   6: ARGMAX; GEMM_BATCHED's Cs may interleave by rows
 *   7: the image ops: BATCHNORM, BATCHNORM_GRAD, DWCONV, DWCONV_DGRAD,
 *      DWCONV_WGRAD, AVGPOOL, AVGPOOL_GRAD, IMAGE_AUGMENT (opcodes 28-36;
 *      30 is unassigned); MAXPOOL's VTPU_POOL_PAD_END_H/W flags
 *   8: ADDITIVE_SCORE, ADDITIVE_SCORE_GRAD (Bahdanau attention; opcodes
 *      37-38), operands VTPU_OPERAND_DA and VTPU_OPERAND_DB
 *   9: BATCHNORM's VTPU_BATCHNORM_RELU (the ReLU after it, fused); an op
 *      may run its tiles in two phases (BATCHNORM, BATCHNORM_GRAD and
 *      REDUCE over many rows: partial sums by groups of rows, in a fixed
 *      order; no struct changed)
 *  10: LSTM_CELL, LSTM_CELL_GRAD (an LSTM step's element-wise part, fused;
 *      opcodes 39-40), operands VTPU_OPERAND_GATES .. DCELL_PREV
 */
#define VTPU_API_VERSION 10

/*
 * VTPU_PARAM_DRIVER_VERSION's encoding of a release MAJOR.MINOR.PATCH
 * (the VERSION file): 0.1.0 is 0x000100.
 */
#define VTPU_VERSION_CODE(major, minor, patch)                                 \
	(((major) << 16) | ((minor) << 8) | (patch))

#define VTPU_IOCTL_BASE 0xB7

/**
 * enum vtpu_param - what VTPU_IOCTL_GET_PARAM can report
 * @VTPU_PARAM_API_VERSION: VTPU_API_VERSION the module implements
 * @VTPU_PARAM_DEVICE_INDEX: N in /dev/vtpuN
 * @VTPU_PARAM_SIMD_LEVEL: enum vtpu_simd_level the matrix unit runs with
 * @VTPU_PARAM_NUM_CORES: matrix worker threads of this device
 * @VTPU_PARAM_MEM_CAP: bytes of buffer memory the device may hand out
 * @VTPU_PARAM_MEM_USED: bytes of buffer memory allocated now, all clients
 * @VTPU_PARAM_MAX_BO_SIZE: largest size BO_CREATE accepts
 * @VTPU_PARAM_JOB_TIMEOUT_MS: watchdog limit of one job, in milliseconds
 * @VTPU_PARAM_MAX_QUEUES: queues one client may create
 * @VTPU_PARAM_OPCODES: bit (1 << opcode) set for each supported opcode
 * @VTPU_PARAM_MAX_CMDS_SIZE: largest command stream SUBMIT accepts, bytes
 * @VTPU_PARAM_MAX_HANDLES: largest handle_count SUBMIT accepts
 * @VTPU_PARAM_MAX_REPEAT: largest repeat SUBMIT accepts
 * @VTPU_PARAM_CLIENT_JOBS: jobs one open file may have queued or running
 *                          at once (more: SUBMIT fails with -ENOSPC)
 * @VTPU_PARAM_CLIENT_JOB_BYTES: kernel memory those jobs may pin (their
 *                               streams and handle lists; more: -ENOSPC)
 * @VTPU_PARAM_IN_FENCE_TIMEOUT_MS: longest a job waits for its in-fence
 *                                  by default (0: no limit)
 * @VTPU_PARAM_DRIVER_VERSION: the module's release, VTPU_VERSION_CODE() of
 *                             its MAJOR.MINOR.PATCH (MODULE_VERSION's)
 * @VTPU_PARAM_KERNEL_VERSION: the kernel the module was built for, as
 *                             LINUX_VERSION_CODE (6.12.57: 0x060c39; the
 *                             patch level saturates at 255)
 */
enum vtpu_param {
	VTPU_PARAM_API_VERSION = 0,
	VTPU_PARAM_DEVICE_INDEX = 1,
	VTPU_PARAM_SIMD_LEVEL = 2,
	VTPU_PARAM_NUM_CORES = 3,
	VTPU_PARAM_MEM_CAP = 4,
	VTPU_PARAM_MEM_USED = 5,
	VTPU_PARAM_MAX_BO_SIZE = 6,
	VTPU_PARAM_JOB_TIMEOUT_MS = 7,
	VTPU_PARAM_MAX_QUEUES = 8,
	VTPU_PARAM_OPCODES = 9,
	VTPU_PARAM_MAX_CMDS_SIZE = 10,
	VTPU_PARAM_MAX_HANDLES = 11,
	VTPU_PARAM_MAX_REPEAT = 12,
	VTPU_PARAM_CLIENT_JOBS = 13,
	VTPU_PARAM_CLIENT_JOB_BYTES = 14,
	VTPU_PARAM_IN_FENCE_TIMEOUT_MS = 15,
	VTPU_PARAM_DRIVER_VERSION = 16,
	VTPU_PARAM_KERNEL_VERSION = 17,
};

/**
 * enum vtpu_simd_level - the instruction set the matrix unit uses
 * @VTPU_SIMD_SCALAR: portable C (SSE2 at most, as the compiler pleases)
 * @VTPU_SIMD_AVX2: AVX2 + FMA microkernels
 * @VTPU_SIMD_AVX512: AVX-512F microkernels
 */
enum vtpu_simd_level {
	VTPU_SIMD_SCALAR = 0,
	VTPU_SIMD_AVX2 = 1,
	VTPU_SIMD_AVX512 = 2,
};

/**
 * struct vtpu_get_param - VTPU_IOCTL_GET_PARAM
 * @param: in, an enum vtpu_param
 * @pad: must be zero
 * @value: out, the value
 */
struct vtpu_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

/**
 * struct vtpu_bo_create - VTPU_IOCTL_BO_CREATE
 * @size: in, bytes; rounded up to the page size; 1..MAX_BO_SIZE
 * @flags: in, must be zero (no flags defined yet)
 * @handle: out, the handle, valid in this open file only
 * @mmap_offset: out, the offset to pass to mmap() on the device fd
 *
 * The buffer is zeroed and charged to the device's memory cap
 * (-ENOSPC past it) and to the caller's memory cgroup.
 */
struct vtpu_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
};

/**
 * struct vtpu_bo_info - VTPU_IOCTL_BO_INFO
 * @handle: in
 * @pad: must be zero
 * @size: out, bytes (page-rounded)
 * @mmap_offset: out
 */
struct vtpu_bo_info {
	__u32 handle;
	__u32 pad;
	__u64 size;
	__u64 mmap_offset;
};

/**
 * struct vtpu_bo_close - VTPU_IOCTL_BO_CLOSE
 * @handle: in; the handle is gone at once, the memory when the last job
 *          and the last mapping using it are gone
 * @pad: must be zero
 */
struct vtpu_bo_close {
	__u32 handle;
	__u32 pad;
};

/**
 * struct vtpu_bo_export - VTPU_IOCTL_BO_EXPORT
 * @handle: in, a buffer of this file
 * @flags: in, O_CLOEXEC and/or O_RDWR for the new fd, nothing else
 * @fd: out, a dma-buf fd sharing the buffer's pages (mmap-able)
 * @pad: must be zero
 *
 * Without O_RDWR the export is read-only: its fd refuses writable shared
 * mappings, and a file that imports it gets a read-only handle (a job
 * that writes it is refused with VTPU_ERR_READ_ONLY, and it cannot be
 * exported writable again). A read-only handle exports only read-only
 * (-EACCES otherwise). A buffer has one dma-buf per mode: exporting it
 * again, in the same mode, gives another fd for the same dma-buf, while
 * one is open.
 */
struct vtpu_bo_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
};

/**
 * struct vtpu_bo_import - VTPU_IOCTL_BO_IMPORT
 * @fd: in, a dma-buf fd exported by a vtpu device (any /dev/vtpuN)
 * @flags: in, must be zero
 * @handle: out, a handle in this file for the same pages; importing a
 *          buffer this file already has returns its existing handle
 *          (writable from then on if this export is)
 * @pad: must be zero
 * @size: out, bytes
 * @mmap_offset: out, for mmap() on this device fd
 *
 * The memory stays charged to the exporting device.
 */
struct vtpu_bo_import {
	__s32 fd;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 size;
	__u64 mmap_offset;
};

/**
 * enum vtpu_queue_priority - scheduling class of a queue
 *
 * Higher classes are picked first; within a class the device round-robins
 * between queues, so one client cannot starve another. HIGH, which can
 * hold up every other client, needs CAP_SYS_NICE (-EACCES otherwise), as
 * DRM drivers ask for a high-priority context.
 */
enum vtpu_queue_priority {
	VTPU_QUEUE_PRIORITY_LOW = 0,
	VTPU_QUEUE_PRIORITY_NORMAL = 1,
	VTPU_QUEUE_PRIORITY_HIGH = 2,
};

/**
 * struct vtpu_queue_create - VTPU_IOCTL_QUEUE_CREATE
 * @priority: in, an enum vtpu_queue_priority
 * @flags: in, must be zero
 * @queue_id: out, the queue's id in this open file
 * @timeout_ms: in, the watchdog for this queue's jobs, from when a job
 *              starts to run; 0 takes the device's job_timeout_ms, which
 *              is also the most a queue may ask. Out: the one in force.
 * @in_fence_timeout_ms: in, how long a job may wait for its in-fence
 *                       before it ends VTPU_JOB_TIMEDOUT without running;
 *                       0 takes the device's in_fence_timeout_ms (whose
 *                       own 0 means no limit). Out: the one in force. This
 *                       field and @pad came after the first version of
 *                       the struct, which ended at @timeout_ms.
 * @pad: must be zero
 */
struct vtpu_queue_create {
	__u32 priority;
	__u32 flags;
	__u32 queue_id;
	__u32 timeout_ms;
	__u32 in_fence_timeout_ms;
	__u32 pad;
};

/**
 * struct vtpu_queue_destroy - VTPU_IOCTL_QUEUE_DESTROY
 * @queue_id: in; jobs not yet started are cancelled, a running one ends
 * @pad: must be zero
 */
struct vtpu_queue_destroy {
	__u32 queue_id;
	__u32 pad;
};

/* struct vtpu_submit.flags */
#define VTPU_SUBMIT_IN_FENCE (1u << 0)	/* wait for @in_fence_fd first */
#define VTPU_SUBMIT_OUT_FENCE (1u << 1) /* return a sync_file fd */
/*
 * Implicit sync (the default): a job that uses a shared buffer (one that
 * was exported as a dma-buf, or another driver's imported one) first waits
 * for the fences in its reservation object (to write: all of them; to
 * read: the writers'), and puts its own fence there (as a writer, or a
 * reader), so that poll() on the dma-buf, DMA_BUF_IOCTL_SYNC and other
 * drivers wait for it. This flag leaves both out: for clients that order
 * their jobs with explicit fences.
 */
#define VTPU_SUBMIT_NO_IMPLICIT_SYNC (1u << 2)
#define VTPU_SUBMIT_FLAGS                                                      \
	(VTPU_SUBMIT_IN_FENCE | VTPU_SUBMIT_OUT_FENCE |                        \
	 VTPU_SUBMIT_NO_IMPLICIT_SYNC)

/**
 * enum vtpu_operand_id - which operand of a command a validation error
 * names (struct vtpu_submit.error_operand)
 */
enum vtpu_operand_id {
	VTPU_OPERAND_NONE = 0,	/* the command as a whole (header, shape) */
	VTPU_OPERAND_A = 1,
	VTPU_OPERAND_B = 2,
	VTPU_OPERAND_C = 3,
	VTPU_OPERAND_BIAS = 4,
	VTPU_OPERAND_DST = 5,
	VTPU_OPERAND_SRC = 6,
	VTPU_OPERAND_X = 7,	/* an input tensor */
	VTPU_OPERAND_Y = 8,	/* a second input, or the output of a pool */
	VTPU_OPERAND_Z = 9,	/* an elementwise output */
	VTPU_OPERAND_DX = 10,	/* gradient of X (output) */
	VTPU_OPERAND_DY = 11,	/* gradient of Y (input) */
	VTPU_OPERAND_INDEX = 12,	/* maxpool argmax indices */
	VTPU_OPERAND_LABELS = 13,
	VTPU_OPERAND_LOSS = 14,
	VTPU_OPERAND_CORRECT = 15,
	VTPU_OPERAND_PROBS = 16,
	VTPU_OPERAND_PARAM = 17,	/* optimizer: the weights */
	VTPU_OPERAND_GRAD = 18,
	VTPU_OPERAND_MOM = 19,	/* SGD momentum, Adam first moment */
	VTPU_OPERAND_VEL = 20,	/* Adam second moment */
	VTPU_OPERAND_STATE = 21,	/* Adam step state */
	VTPU_OPERAND_MASK = 22,	/* dropout's kept-and-scaled mask */
	VTPU_OPERAND_STEP = 23,	/* dropout's step counter */
	VTPU_OPERAND_W = 24,	/* convolution weights */
	VTPU_OPERAND_DW = 25,	/* gradient of W (output) */
	VTPU_OPERAND_DBIAS = 26,	/* gradient of BIAS (output) */
	VTPU_OPERAND_LENGTHS = 27,	/* softmax: valid columns per group */
	VTPU_OPERAND_SUMSQ = 28,	/* CLIP_NORM's sum of squares */
	VTPU_OPERAND_DA = 29,	/* gradient of A (output) */
	VTPU_OPERAND_DB = 30,	/* gradient of B (output) */
	VTPU_OPERAND_GATES = 31,	/* LSTM: the gates' pre-activations */
	VTPU_OPERAND_ACT = 32,	/* LSTM: the activated gates */
	VTPU_OPERAND_CELL_PREV = 33,	/* LSTM: the previous cell state */
	VTPU_OPERAND_CELL = 34,	/* LSTM: the new cell state */
	VTPU_OPERAND_TANH_CELL = 35,	/* LSTM: tanh of the new cell state */
	VTPU_OPERAND_HIDDEN = 36,	/* LSTM: the new hidden state */
	VTPU_OPERAND_DHIDDEN = 37,	/* gradient of HIDDEN (input) */
	VTPU_OPERAND_DCELL = 38,	/* gradient of CELL (input) */
	VTPU_OPERAND_DGATES = 39,	/* gradient of GATES (output) */
	VTPU_OPERAND_DCELL_PREV = 40,	/* gradient of CELL_PREV (output) */
};

/**
 * enum vtpu_error_reason - why the validator rejected a command
 * (struct vtpu_submit.error_reason)
 */
enum vtpu_error_reason {
	VTPU_ERR_NONE = 0,
	VTPU_ERR_TRUNCATED = 1,	 /* stream ends inside a command */
	VTPU_ERR_BAD_SIZE = 2,	 /* hdr.size wrong for the opcode */
	VTPU_ERR_BAD_OPCODE = 3, /* unknown opcode */
	VTPU_ERR_BAD_FLAGS = 4,	 /* unknown flag bits */
	VTPU_ERR_BAD_PAD = 5,	 /* a pad field is not zero */
	VTPU_ERR_BAD_SHAPE = 6,	 /* a dimension is 0 or too large */
	VTPU_ERR_BAD_STRIDE = 7, /* a leading dimension is too small */
	VTPU_ERR_BAD_DTYPE = 8,	 /* unknown or unsupported dtype */
	VTPU_ERR_BAD_BUFFER = 9, /* buffer index >= handle_count */
	VTPU_ERR_OUT_OF_BOUNDS = 10, /* operand extends past its buffer */
	VTPU_ERR_MISALIGNED = 11,    /* offset not aligned to the dtype */
	VTPU_ERR_OVERLAP = 12,	     /* output overlaps an input */
	VTPU_ERR_BAD_STRIDE_REPEAT = 13, /* a repeat stride walks off its buffer */
	VTPU_ERR_READ_ONLY = 14,     /* writes a read-only (imported) buffer */
};

/* SUBMIT's limits (GET_PARAM reports the handle limit as MAX_HANDLES) */
#define VTPU_SUBMIT_MAX_CMDS_SIZE (1u << 20)
#define VTPU_SUBMIT_MAX_HANDLES 1024

/**
 * struct vtpu_submit - VTPU_IOCTL_SUBMIT
 * @cmds_ptr: in, user pointer to the command stream
 * @handles_ptr: in, user pointer to __u32 buffer handles; commands refer
 *               to buffers by index into this array
 * @cmds_size: in, bytes in the stream; 8..VTPU_SUBMIT_MAX_CMDS_SIZE, a
 *             multiple of 8
 * @handle_count: in, 0..VTPU_SUBMIT_MAX_HANDLES
 * @queue_id: in, from QUEUE_CREATE
 * @flags: in, VTPU_SUBMIT_*
 * @in_fence_fd: in, a sync_file fd the job waits for (IN_FENCE)
 * @out_fence_fd: out, a sync_file fd that signals when the job ends
 *                (OUT_FENCE), otherwise -1
 * @seqno: out, the job's sequence number in its queue (for WAIT)
 * @error_cmd: out, on -EINVAL from validation: index of the bad command
 *             (for VTPU_ERR_BAD_STRIDE_REPEAT: the buffer index)
 * @error_offset: out, its byte offset in the stream
 * @error_operand: out, an enum vtpu_operand_id
 * @error_reason: out, an enum vtpu_error_reason (VTPU_ERR_NONE: not a
 *                command-stream error)
 * @repeat: in, run the stream this many times in one job (0 or 1: once);
 *          this field and the two after it came after the first version
 *          of the struct, which ended at @error_reason
 * @first_iter: in, with @strides_ptr: the number of the first iteration
 * @strides_ptr: in, user pointer to __u64[handle_count], a byte stride per
 *               buffer (multiples of 4), or 0: iteration i (counting from
 *               @first_iter) sees buffer j shifted by i * stride[j], so a
 *               job can walk a dataset resident in a buffer and the next
 *               job can go on where it stopped. The stream is validated
 *               against every iteration before anything runs.
 *
 * Returns 0 with the job queued, or an error with nothing queued and no
 * fd installed: -EINVAL (a bad field, or a bad stream: @error_* say where
 * and why), -EACCES (the stream writes a read-only buffer:
 * VTPU_ERR_READ_ONLY), -ENOENT (no such queue or handle), -ENOSPC (the
 * client's VTPU_PARAM_CLIENT_JOBS or _JOB_BYTES are in use: wait for a
 * job), -EFAULT, -ENOMEM. Before queueing, SUBMIT waits for the job
 * VTPU_QUEUE_HISTORY submissions earlier on the queue to end (so that WAIT
 * never forgets a job still running); a signal interrupts that wait
 * (-ERESTARTSYS).
 */
struct vtpu_submit {
	__u64 cmds_ptr;
	__u64 handles_ptr;
	__u32 cmds_size;
	__u32 handle_count;
	__u32 queue_id;
	__u32 flags;
	__s32 in_fence_fd;
	__s32 out_fence_fd;
	__u64 seqno;
	__u32 error_cmd;
	__u32 error_offset;
	__u32 error_operand;
	__u32 error_reason;
	__u32 repeat;
	__u32 first_iter;
	__u64 strides_ptr;
};

/**
 * enum vtpu_job_status - how a job ended (struct vtpu_wait.status)
 * @VTPU_JOB_PENDING: not finished when the wait timed out
 * @VTPU_JOB_DONE: ran to completion
 * @VTPU_JOB_ERROR: failed while running (see vtpu_wait.error)
 * @VTPU_JOB_CANCELLED: its queue or client went away first, or its
 *                      in-fence signalled an error (it did not run)
 * @VTPU_JOB_TIMEDOUT: stopped by the watchdog (job_timeout_ms), or its
 *                     in-fence did not come within in_fence_timeout_ms
 * @VTPU_JOB_RETIRED: finished so long ago that its status is forgotten
 *                    (a queue remembers its last VTPU_QUEUE_HISTORY jobs;
 *                    SUBMIT waits for the job VTPU_QUEUE_HISTORY before
 *                    it to end, so a job reported retired has ended)
 */
enum vtpu_job_status {
	VTPU_JOB_PENDING = 0,
	VTPU_JOB_DONE = 1,
	VTPU_JOB_ERROR = 2,
	VTPU_JOB_CANCELLED = 3,
	VTPU_JOB_TIMEDOUT = 4,
	VTPU_JOB_RETIRED = 5,
};

#define VTPU_QUEUE_HISTORY 64

/**
 * struct vtpu_wait - VTPU_IOCTL_WAIT
 * @queue_id: in
 * @flags: in, must be zero
 * @seqno: in, from SUBMIT; 0 < seqno <= the queue's last seqno
 * @timeout_ns: in, absolute CLOCK_MONOTONIC deadline; 0 polls
 * @status: out, an enum vtpu_job_status
 * @error: out, the job's negative errno when it did not end DONE
 *
 * Returns 0 once the job has ended, -ETIME if it has not by @timeout_ns
 * (status PENDING), -EINTR/-ERESTARTSYS on a signal.
 */
struct vtpu_wait {
	__u32 queue_id;
	__u32 flags;
	__u64 seqno;
	__s64 timeout_ns;
	__u32 status;
	__s32 error;
};

#define VTPU_IOCTL_GET_PARAM                                                   \
	_IOWR(VTPU_IOCTL_BASE, 0x00, struct vtpu_get_param)
#define VTPU_IOCTL_BO_CREATE                                                   \
	_IOWR(VTPU_IOCTL_BASE, 0x01, struct vtpu_bo_create)
#define VTPU_IOCTL_BO_INFO _IOWR(VTPU_IOCTL_BASE, 0x02, struct vtpu_bo_info)
#define VTPU_IOCTL_BO_CLOSE _IOW(VTPU_IOCTL_BASE, 0x03, struct vtpu_bo_close)
#define VTPU_IOCTL_QUEUE_CREATE                                                \
	_IOWR(VTPU_IOCTL_BASE, 0x04, struct vtpu_queue_create)
#define VTPU_IOCTL_QUEUE_DESTROY                                               \
	_IOW(VTPU_IOCTL_BASE, 0x05, struct vtpu_queue_destroy)
#define VTPU_IOCTL_SUBMIT _IOWR(VTPU_IOCTL_BASE, 0x06, struct vtpu_submit)
#define VTPU_IOCTL_WAIT _IOWR(VTPU_IOCTL_BASE, 0x07, struct vtpu_wait)
#define VTPU_IOCTL_BO_EXPORT                                                   \
	_IOWR(VTPU_IOCTL_BASE, 0x08, struct vtpu_bo_export)
#define VTPU_IOCTL_BO_IMPORT                                                   \
	_IOWR(VTPU_IOCTL_BASE, 0x09, struct vtpu_bo_import)

/*
 * The command set.
 *
 * A command stream is a sequence of commands, each a struct vtpu_cmd_hdr
 * followed by its body; hdr.size counts both and is a multiple of 8.
 * Tensors are row-major; leading dimensions (ld*) count elements.
 */

/**
 * enum vtpu_opcode - commands the device executes (append only)
 * @VTPU_OP_NOP: does nothing (struct vtpu_cmd_hdr alone)
 * @VTPU_OP_GEMM: struct vtpu_cmd_gemm
 * @VTPU_OP_FILL: struct vtpu_cmd_fill
 * @VTPU_OP_COPY: struct vtpu_cmd_copy
 * @VTPU_OP_IM2COL: struct vtpu_cmd_im2col
 * @VTPU_OP_COL2IM: struct vtpu_cmd_im2col
 * @VTPU_OP_MAXPOOL: struct vtpu_cmd_pool
 * @VTPU_OP_MAXPOOL_GRAD: struct vtpu_cmd_pool
 * @VTPU_OP_ELEMENTWISE: struct vtpu_cmd_elementwise
 * @VTPU_OP_REDUCE: struct vtpu_cmd_reduce
 * @VTPU_OP_SOFTMAX_XENT: struct vtpu_cmd_softmax_xent
 * @VTPU_OP_SGD: struct vtpu_cmd_sgd
 * @VTPU_OP_ADAM_STEP: struct vtpu_cmd_adam_step
 * @VTPU_OP_ADAM: struct vtpu_cmd_adam
 * @VTPU_OP_CAST: struct vtpu_cmd_cast
 * @VTPU_OP_DROPOUT: struct vtpu_cmd_dropout
 * @VTPU_OP_CONV_POOL: struct vtpu_cmd_conv_pool
 * @VTPU_OP_CONV_POOL_WGRAD: struct vtpu_cmd_conv_pool
 * @VTPU_OP_CONV: struct vtpu_cmd_conv
 * @VTPU_OP_CONV_DGRAD: struct vtpu_cmd_conv
 * @VTPU_OP_CONV_WGRAD: struct vtpu_cmd_conv
 * @VTPU_OP_EMBEDDING: struct vtpu_cmd_embedding
 * @VTPU_OP_EMBEDDING_GRAD: struct vtpu_cmd_embedding
 * @VTPU_OP_GEMM_BATCHED: struct vtpu_cmd_gemm_batched
 * @VTPU_OP_SOFTMAX: struct vtpu_cmd_softmax
 * @VTPU_OP_SOFTMAX_GRAD: struct vtpu_cmd_softmax
 * @VTPU_OP_CLIP_NORM: struct vtpu_cmd_clip_norm
 * @VTPU_OP_ARGMAX: struct vtpu_cmd_argmax
 * @VTPU_OP_BATCHNORM: struct vtpu_cmd_batchnorm
 * @VTPU_OP_BATCHNORM_GRAD: struct vtpu_cmd_batchnorm_grad
 * @VTPU_OP_DWCONV: struct vtpu_cmd_dwconv
 * @VTPU_OP_DWCONV_DGRAD: struct vtpu_cmd_dwconv
 * @VTPU_OP_DWCONV_WGRAD: struct vtpu_cmd_dwconv
 * @VTPU_OP_AVGPOOL: struct vtpu_cmd_avgpool
 * @VTPU_OP_AVGPOOL_GRAD: struct vtpu_cmd_avgpool
 * @VTPU_OP_IMAGE_AUGMENT: struct vtpu_cmd_image_augment
 * @VTPU_OP_ADDITIVE_SCORE: struct vtpu_cmd_additive_score
 * @VTPU_OP_ADDITIVE_SCORE_GRAD: struct vtpu_cmd_additive_score
 * @VTPU_OP_LSTM_CELL: struct vtpu_cmd_lstm_cell
 * @VTPU_OP_LSTM_CELL_GRAD: struct vtpu_cmd_lstm_cell_grad
 */
enum vtpu_opcode {
	VTPU_OP_NOP = 0,
	VTPU_OP_GEMM = 1,
	VTPU_OP_FILL = 2,
	VTPU_OP_COPY = 3,
	VTPU_OP_IM2COL = 4,
	VTPU_OP_COL2IM = 5,
	VTPU_OP_MAXPOOL = 6,
	VTPU_OP_MAXPOOL_GRAD = 7,
	VTPU_OP_ELEMENTWISE = 8,
	VTPU_OP_REDUCE = 9,
	VTPU_OP_SOFTMAX_XENT = 10,
	VTPU_OP_SGD = 11,
	VTPU_OP_ADAM_STEP = 12,
	VTPU_OP_ADAM = 13,
	VTPU_OP_CAST = 14,
	VTPU_OP_DROPOUT = 15,
	VTPU_OP_CONV_POOL = 16,
	VTPU_OP_CONV_POOL_WGRAD = 17,
	VTPU_OP_CONV = 18,
	VTPU_OP_CONV_DGRAD = 19,
	VTPU_OP_CONV_WGRAD = 20,
	VTPU_OP_EMBEDDING = 21,
	VTPU_OP_EMBEDDING_GRAD = 22,
	VTPU_OP_GEMM_BATCHED = 23,
	VTPU_OP_SOFTMAX = 24,
	VTPU_OP_SOFTMAX_GRAD = 25,
	VTPU_OP_CLIP_NORM = 26,
	VTPU_OP_ARGMAX = 27,
	VTPU_OP_BATCHNORM = 28,
	VTPU_OP_BATCHNORM_GRAD = 29,
	VTPU_OP_DWCONV = 31,
	VTPU_OP_DWCONV_DGRAD = 32,
	VTPU_OP_DWCONV_WGRAD = 33,
	VTPU_OP_AVGPOOL = 34,
	VTPU_OP_AVGPOOL_GRAD = 35,
	VTPU_OP_IMAGE_AUGMENT = 36,
	VTPU_OP_ADDITIVE_SCORE = 37,
	VTPU_OP_ADDITIVE_SCORE_GRAD = 38,
	VTPU_OP_LSTM_CELL = 39,
	VTPU_OP_LSTM_CELL_GRAD = 40,
	VTPU_OP_COUNT
};

/**
 * enum vtpu_dtype - element types
 * @VTPU_DTYPE_F32: IEEE-754 binary32
 * @VTPU_DTYPE_BF16: bfloat16 (GEMM A/B inputs; f32 accumulation)
 */
enum vtpu_dtype {
	VTPU_DTYPE_F32 = 0,
	VTPU_DTYPE_BF16 = 1,
};

/**
 * struct vtpu_cmd_hdr - every command starts with this
 * @opcode: an enum vtpu_opcode
 * @size: bytes of the whole command, header included; a multiple of 8
 */
struct vtpu_cmd_hdr {
	__u32 opcode;
	__u32 size;
};

/**
 * struct vtpu_operand - a tensor's place in memory
 * @buf: index into the submit's handle array
 * @pad: must be zero
 * @offset: byte offset of element 0 in that buffer
 */
struct vtpu_operand {
	__u32 buf;
	__u32 pad;
	__u64 offset;
};

/* struct vtpu_cmd_gemm.flags */
#define VTPU_GEMM_TRANS_A (1u << 0) /* A is stored k x m */
#define VTPU_GEMM_TRANS_B (1u << 1) /* B is stored n x k */
#define VTPU_GEMM_BIAS (1u << 2)    /* add bias[n] to every row of C */
#define VTPU_GEMM_RELU (1u << 3)    /* C = max(C, 0) after the bias */
#define VTPU_GEMM_B_PANELS (1u << 4) /* B as stored is in column panels */
#define VTPU_GEMM_C_PANELS (1u << 5) /* C is in column panels */
#define VTPU_GEMM_FLAGS                                                        \
	(VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B | VTPU_GEMM_BIAS |              \
	 VTPU_GEMM_RELU | VTPU_GEMM_B_PANELS | VTPU_GEMM_C_PANELS)

/*
 * The panel layout (VTPU_GEMM_B_PANELS, VTPU_GEMM_C_PANELS), the device's
 * own layout for a matrix that stays in its memory, such as a dense
 * layer's weights: a matrix of r rows and c columns, c a multiple of
 * VTPU_GEMM_PANEL, is c / VTPU_GEMM_PANEL panels of r rows by
 * VTPU_GEMM_PANEL columns, one after the other, each one row-major:
 *
 *	element (i, j) at [(j / VTPU_GEMM_PANEL) * r + i] * VTPU_GEMM_PANEL
 *			  + j % VTPU_GEMM_PANEL
 *
 * It fills r * c elements, as a packed row-major matrix does, and the
 * leading dimension must be c (VTPU_ERR_BAD_STRIDE otherwise). The GEMM
 * reads such a B without packing it first. B's panels are of B as stored
 * (k x n, or n x k with VTPU_GEMM_TRANS_B: then k is split into panels);
 * C's are of C (m x n). Panels are for f32 operands only.
 */
#define VTPU_GEMM_PANEL 32

/* Largest m, n or k a command may name. */
#define VTPU_MAX_DIM (1u << 24)

/**
 * struct vtpu_cmd_gemm - C = act(alpha * op(A) * op(B) + beta * C + bias)
 * @hdr: opcode VTPU_OP_GEMM, size sizeof(struct vtpu_cmd_gemm)
 * @m: rows of C
 * @n: columns of C
 * @k: the reduced dimension
 * @flags: VTPU_GEMM_*
 * @lda: leading dimension of A as stored (>= k, or >= m with TRANS_A)
 * @ldb: leading dimension of B as stored (>= n, or >= k with TRANS_B)
 * @ldc: leading dimension of C (>= n)
 * @dtype: of A and B: VTPU_DTYPE_F32 or VTPU_DTYPE_BF16; C and bias are f32
 * @alpha: binary32 bits
 * @beta: binary32 bits; with beta == 0, C is not read (NaNs in it vanish)
 * @a: A operand
 * @b: B operand
 * @c: C operand (read and written)
 * @bias: f32[n], read with VTPU_GEMM_BIAS only
 */
struct vtpu_cmd_gemm {
	struct vtpu_cmd_hdr hdr;
	__u32 m;
	__u32 n;
	__u32 k;
	__u32 flags;
	__u32 lda;
	__u32 ldb;
	__u32 ldc;
	__u32 dtype;
	__u32 alpha;
	__u32 beta;
	struct vtpu_operand a;
	struct vtpu_operand b;
	struct vtpu_operand c;
	struct vtpu_operand bias;
};

/**
 * struct vtpu_cmd_fill - dst[i] = value for i < count (f32)
 * @hdr: opcode VTPU_OP_FILL
 * @count: elements
 * @value: binary32 bits
 * @dst: destination
 */
struct vtpu_cmd_fill {
	struct vtpu_cmd_hdr hdr;
	__u32 count;
	__u32 value;
	struct vtpu_operand dst;
};

/**
 * struct vtpu_cmd_copy - dst[0..bytes) = src[0..bytes), no overlap
 * @hdr: opcode VTPU_OP_COPY
 * @bytes: how many
 * @dst: destination
 * @src: source
 */
struct vtpu_cmd_copy {
	struct vtpu_cmd_hdr hdr;
	__u64 bytes;
	struct vtpu_operand dst;
	struct vtpu_operand src;
};

/*
 * The training ops. Element counts (count fields, and every tensor's
 * element count computed from a shape) are at most VTPU_MAX_ELEMS. Unless
 * a command says otherwise, an output may not overlap any input or other
 * output (VTPU_ERR_OVERLAP), operands it does not use must be all zero
 * (VTPU_ERR_BAD_PAD), and so must scalars it does not use.
 */
#define VTPU_MAX_ELEMS (1ull << 36)

/**
 * struct vtpu_window - a sliding window over a batch of NHWC images
 * @n: images in the batch
 * @h: image height
 * @w: image width
 * @c: channels, innermost: pixel (i, y, x) starts at element ((i*h + y)*w + x)*c
 * @kh: window height
 * @kw: window width
 * @stride_h: vertical step between windows (>= 1)
 * @stride_w: horizontal step between windows (>= 1)
 * @pad_h: rows added above and below the image (< @kh)
 * @pad_w: columns added left and right of the image (< @kw)
 *
 * The output is oh x ow windows per image, oh = (h + 2*pad_h - kh) /
 * stride_h + 1 and ow likewise; h + 2*pad_h >= kh is required. With
 * pad < k every window covers at least one pixel of the image.
 */
struct vtpu_window {
	__u32 n;
	__u32 h;
	__u32 w;
	__u32 c;
	__u32 kh;
	__u32 kw;
	__u32 stride_h;
	__u32 stride_w;
	__u32 pad_h;
	__u32 pad_w;
};

/**
 * struct vtpu_cmd_im2col - IM2COL: cols = im2col(image); COL2IM: image =
 * col2im(cols), the adjoint (overwrites image)
 * @hdr: opcode VTPU_OP_IM2COL or VTPU_OP_COL2IM
 * @win: the image and window geometry
 * @flags: must be zero
 * @pad: must be zero
 * @image: f32 [n, h, w, c] NHWC: IM2COL's input (operand SRC), COL2IM's
 *         output (operand DST)
 * @cols: f32 [n*oh*ow, kh*kw*c], row (n, oy, ox), column (ky, kx, c) =
 *        image[n, oy*stride_h - pad_h + ky, ox*stride_w - pad_w + kx, c],
 *        0 outside the image: IM2COL's output (DST), COL2IM's input (SRC)
 *
 * Convolution with weights W [kh*kw*c, oc]: y = cols * W is NHWC
 * [n*oh*ow, oc]; dW = cols^T * dy; dx = COL2IM(dy * W^T). COL2IM writes
 * every image element, summing the columns that read it in (ky, kx)
 * order: deterministic, no atomics.
 */
struct vtpu_cmd_im2col {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand image;
	struct vtpu_operand cols;
};

/**
 * struct vtpu_cmd_pool - MAXPOOL: y, index = maxpool(x); MAXPOOL_GRAD:
 * dx = the adjoint of maxpool at index, applied to dy (overwrites dx)
 * @hdr: opcode VTPU_OP_MAXPOOL or VTPU_OP_MAXPOOL_GRAD
 * @win: the geometry; padding is never chosen (as if -inf)
 * @flags: VTPU_POOL_FLAGS: VTPU_POOL_PAD_END_H adds one more row of
 *         padding below the image (oh = (h + 2*pad_h + 1 - kh) / stride_h
 *         + 1, and pad_h + 1 < kh), VTPU_POOL_PAD_END_W one more column
 *         right of it: Keras' padding='same' when its total is odd
 * @pad: must be zero
 * @x: f32 [n, h, w, c]: MAXPOOL's input (X), MAXPOOL_GRAD's output (DX)
 * @y: f32 [n, oh, ow, c]: MAXPOOL's output (Y), MAXPOOL_GRAD's input (DY)
 * @index: u32 [n, oh, ow, c] (INDEX): the pixel y*w + x, within its image
 *         and channel, that won the window (the first maximum in window
 *         order; a NaN wins over numbers). MAXPOOL writes it and
 *         MAXPOOL_GRAD reads it: dx[n, p, c] = sum of dy over the windows
 *         containing pixel p whose index is p (values that name no pixel
 *         of the window are ignored). MAXPOOL requires h*w < 2^32.
 */
/* struct vtpu_cmd_pool.flags (MAXPOOL and MAXPOOL_GRAD alike) */
#define VTPU_POOL_PAD_END_H (1u << 0) /* one more padding row below */
#define VTPU_POOL_PAD_END_W (1u << 1) /* one more padding column right */
#define VTPU_POOL_FLAGS (VTPU_POOL_PAD_END_H | VTPU_POOL_PAD_END_W)

struct vtpu_cmd_pool {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand index;
};

/**
 * struct vtpu_cmd_avgpool - AVGPOOL: y = the mean of each window of x
 * over the pixels of the image it covers; AVGPOOL_GRAD: dx = its adjoint
 * applied to dy (overwrites dx)
 * @hdr: opcode VTPU_OP_AVGPOOL or VTPU_OP_AVGPOOL_GRAD
 * @win: the geometry; pad_h and pad_w are the rows above and the columns
 *       left of the image (< kh, < kw), the padding below and right is
 *       whatever @oh and @ow imply; h + 2 pad >= k is not required
 * @oh: output rows, 1..VTPU_MAX_DIM, with (oh - 1) * stride_h < h + pad_h
 *      (every window covers a pixel of the image)
 * @ow: output columns, likewise
 * @flags: must be zero
 * @pad: must be zero
 * @x: f32 [n, h, w, c]: AVGPOOL's input (X), AVGPOOL_GRAD's output (DX)
 * @y: f32 [n, oh, ow, c]: AVGPOOL's output (Y), AVGPOOL_GRAD's input (DY)
 *
 * Window (oy, ox) covers rows oy*stride_h - pad_h + [0, kh) and columns
 * likewise; y is the sum, in (ky, kx) order, of the pixels inside the
 * image divided by their count (padding is not counted: Keras'
 * padding='same', count_include_pad=False). Global average pooling is
 * kh = h, kw = w, no padding, oh = ow = 1. dx[n, p, c] = the sum over the
 * windows containing pixel p, in (ky, kx) order, of dy / that window's
 * count. Both orders depend on the shapes only.
 */
struct vtpu_cmd_avgpool {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 oh;
	__u32 ow;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand x;
	struct vtpu_operand y;
};

/* struct vtpu_cmd_conv_pool.flags (CONV_POOL; CONV_POOL_WGRAD's are 0) */
#define VTPU_CONV_RELU (1u << 0) /* y = max(y, 0) after the pooling */
#define VTPU_CONV_FLAGS VTPU_CONV_RELU
/* A route that passes no gradient (the ReLU's output was not > 0). */
#define VTPU_CONV_NO_ROUTE 255

/**
 * struct vtpu_cmd_conv_pool - a direct convolution and its max-pool, in
 * one pass (the convolution's output is never stored). CONV_POOL: y,
 * index = maxpool(conv(x, w) + bias), then ReLU with VTPU_CONV_RELU;
 * CONV_POOL_WGRAD: dw, dbias, the gradients of w and bias given dy and
 * the routes CONV_POOL wrote
 * @hdr: opcode VTPU_OP_CONV_POOL or VTPU_OP_CONV_POOL_WGRAD
 * @win: the convolution over x [n, h, w, c]: kh x kw taps, stride, zero
 *       padding; its output conv is [n, oh, ow, oc]
 * @oc: output channels, 1..VTPU_MAX_DIM
 * @pool_h: max-pool window height over conv, 1..oh (1 x 1 with stride
 *          1: no pooling); pool_h * pool_w at most 254
 * @pool_w: window width, 1..ow
 * @pool_stride_h: vertical step between pooling windows (>= 1; no padding)
 * @pool_stride_w: horizontal step
 * @flags: VTPU_CONV_FLAGS for CONV_POOL; zero for CONV_POOL_WGRAD
 * @x: f32 [n, h, w, c] (X), both opcodes' input
 * @w: f32 [kh*kw*c, oc], row (ky, kx, ci): the weights (W, CONV_POOL's
 *     input) or their gradient (DW, WGRAD's output, overwritten)
 * @bias: f32 [oc]: the bias (BIAS, CONV_POOL's input) or its gradient
 *        (DBIAS, WGRAD's output, overwritten)
 * @y: f32 [n, ph, pw, oc], ph = (oh - pool_h) / pool_stride_h + 1, pw
 *     likewise: CONV_POOL's output (Y); all zero for WGRAD
 * @dy: f32 [n, ph, pw, oc]: the gradient of y (DY), WGRAD's input; all
 *      zero for CONV_POOL
 * @index: u8 [n, ph, pw, oc] (INDEX), the routes: the position qy *
 *         pool_w + qx in its pooling window of the conv pixel that won
 *         (the first maximum in window order; a NaN wins), or
 *         VTPU_CONV_NO_ROUTE where VTPU_CONV_RELU's output is not > 0.
 *         Written by CONV_POOL, read by WGRAD, where a route that names
 *         no position of the window passes nothing. One byte per output,
 *         a quarter of what MAXPOOL's index costs in memory traffic.
 *
 * One pooled pixel, every channel, is the device's least unit of work:
 * pool_h * pool_w * kh * kw * c * oc is at most VTPU_CONV_POOL_MAX_WORK
 * multiply-adds (a first layer is far below it; larger convolutions are
 * CONV's), so that no instruction holds a CPU for long.
 *
 * conv[n, oy, ox, o] = sum over (ky, kx, ci), in that order, of
 * x[n, oy*stride_h - pad_h + ky, ox*stride_w - pad_w + kx, ci] *
 * w[(ky*kw + kx)*c + ci, o], x being 0 outside the image (as IM2COL's
 * columns are), plus bias[o].
 * WGRAD: g = dy, where the route names a window position, sent to that
 * conv pixel; dw = sum over the batch of its x-window * g, dbias = sum of
 * g. The input's gradient is not computed: a network's first
 * convolution (whose input is data) is the case this command is for;
 * others use CONV and its gradients. Outputs overlap nothing.
 */
#define VTPU_CONV_POOL_MAX_WORK (1u << 22)

struct vtpu_cmd_conv_pool {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 oc;
	__u32 pool_h;
	__u32 pool_w;
	__u32 pool_stride_h;
	__u32 pool_stride_w;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand w;
	struct vtpu_operand bias;
	struct vtpu_operand y;
	struct vtpu_operand dy;
	struct vtpu_operand index;
};

/* struct vtpu_cmd_conv.flags (VTPU_CONV_RELU as for CONV_POOL) */
#define VTPU_CONV_BIAS (1u << 1)       /* CONV: add bias[o] before the ReLU */
#define VTPU_CONV_ACCUMULATE (1u << 2) /* DGRAD, WGRAD: add to the output */

/**
 * struct vtpu_cmd_conv - a convolution and its two gradients, each as one
 * GEMM over the convolution's im2col columns, which are never stored
 * (the GEMM gathers them from the image as it packs its panels)
 * @hdr: opcode VTPU_OP_CONV, VTPU_OP_CONV_DGRAD or VTPU_OP_CONV_WGRAD
 * @win: the convolution over x [n, h, w, c]: kh x kw taps, stride, zero
 *       padding; its output y is [n, oh, ow, oc]. CONV_DGRAD wants
 *       stride 1 (VTPU_ERR_BAD_STRIDE otherwise).
 * @oc: output channels, 1..VTPU_MAX_DIM
 * @flags: CONV: VTPU_CONV_BIAS, VTPU_CONV_RELU; CONV_DGRAD and
 *         CONV_WGRAD: VTPU_CONV_ACCUMULATE
 * @x: f32 [n, h, w, c]: CONV's and CONV_WGRAD's input (X), CONV_DGRAD's
 *     output (DX)
 * @w: f32 [kh*kw*c, oc], row (ky, kx, ci): CONV's and CONV_DGRAD's input
 *     (W), CONV_WGRAD's output (DW)
 * @bias: f32 [oc] (BIAS): CONV with VTPU_CONV_BIAS; otherwise all zero
 * @y: f32 [n, oh, ow, oc]: CONV's output (Y), the gradients' input (DY)
 *
 * With cols the IM2COL of x (struct vtpu_cmd_im2col), each command is
 * the GEMM that IM2COL, GEMM and COL2IM would run, with the same sums:
 * CONV: y = act(cols * w + bias), the sum over k = (ky, kx, ci) in order;
 * CONV_WGRAD: dw = cols^T * dy (+ dw with VTPU_CONV_ACCUMULATE), summed
 * over the windows (n, oy, ox) in order;
 * CONV_DGRAD: dx = COL2IM(dy * w^T) (+ dx), computed as the convolution
 * of dy, padded by kh - 1 - pad_h and kw - 1 - pad_w, with w turned 180
 * degrees and its channels swapped; each dx element sums over (ky, kx,
 * o) in order, kh - 1 - ky and kw - 1 - kx being the tap of x's window.
 * Outputs overlap nothing.
 */
struct vtpu_cmd_conv {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 oc;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand w;
	struct vtpu_operand bias;
	struct vtpu_operand y;
};

/* Most kh * kw * mult of a depthwise convolution (work per element). */
#define VTPU_DWCONV_MAX_WORK 256

/**
 * struct vtpu_cmd_dwconv - a depthwise convolution and its two gradients:
 * each input channel has its own mult filters (Keras' DepthwiseConv2D)
 * @hdr: opcode VTPU_OP_DWCONV, VTPU_OP_DWCONV_DGRAD or
 *       VTPU_OP_DWCONV_WGRAD
 * @win: the convolution over x [n, h, w, c] as for CONV, except that
 *       @win.pad_h and @win.pad_w are the rows above and the columns left
 *       of the image only: the output size is @oh x @ow, given, and the
 *       windows past the bottom and right edges read zeros (so SAME with
 *       an odd total padding, TensorFlow's, is one command)
 * @oh: output rows, 1..VTPU_MAX_DIM; the last window starts in the image
 *      or its top padding: (oh - 1) * stride_h < h + pad_h
 * @ow: output columns, likewise
 * @mult: the depth multiplier, filters per input channel, >= 1; kh * kw
 *        * mult is at most VTPU_DWCONV_MAX_WORK
 * @flags: DWCONV: VTPU_CONV_BIAS, VTPU_CONV_RELU; DWCONV_DGRAD and
 *         DWCONV_WGRAD: VTPU_CONV_ACCUMULATE
 * @x: f32 [n, h, w, c]: DWCONV's and DWCONV_WGRAD's input (X),
 *     DWCONV_DGRAD's output (DX)
 * @w: f32 [kh, kw, c, mult]: DWCONV's and DWCONV_DGRAD's input (W),
 *     DWCONV_WGRAD's output (DW)
 * @bias: f32 [c * mult] (BIAS): DWCONV with VTPU_CONV_BIAS; otherwise all
 *        zero
 * @y: f32 [n, oh, ow, c * mult]: DWCONV's output (Y), the gradients'
 *     input (DY); output channel ci * mult + m is input channel ci's
 *     filter m
 *
 * With x[n, iy, ix, ci] = 0 outside the image:
 * DWCONV: y[n, oy, ox, ci * mult + m] = act(sum over (ky, kx) in order of
 * x[n, oy * stride_h - pad_h + ky, ox * stride_w - pad_w + kx, ci] *
 * w[ky, kx, ci, m], then + bias[ci * mult + m]);
 * DWCONV_DGRAD: dx[n, iy, ix, ci] = the sum over the taps (ky, kx) in
 * order whose window covers (iy, ix), and over m in order, of dy * w;
 * DWCONV_WGRAD: dw[ky, kx, ci, m] = the sum over the windows (n, oy, ox)
 * of x * dy, in G groups of consecutive windows, ceil(R / G) in each but
 * the last (R = n * oh * ow windows; G = the least of 8, R / 256 and 1 +
 * 4096 / (kh * kw * c * mult), at least 1): each group's windows in
 * order, the first group's sum from dw's value (VTPU_CONV_ACCUMULATE) or
 * 0, the others' from 0, then the others' sums added to it in order.
 * With VTPU_CONV_ACCUMULATE DGRAD's sum also starts from the output's
 * value instead of 0. The order depends on the shape only. The bias
 * gradient is the column sum of dy (REDUCE), as for CONV.
 * Outputs overlap nothing.
 */
struct vtpu_cmd_dwconv {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	__u32 oh;
	__u32 ow;
	__u32 mult;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand w;
	struct vtpu_operand bias;
	struct vtpu_operand y;
};

/**
 * enum vtpu_ew_op - struct vtpu_cmd_elementwise.op: z[i] = f(x[i], y[i])
 * @VTPU_EW_ADD: z = x + y
 * @VTPU_EW_SUB: z = x - y
 * @VTPU_EW_MUL: z = x * y
 * @VTPU_EW_SCALE: z = alpha * x (y unused)
 * @VTPU_EW_AXPY: z = alpha * x + y
 * @VTPU_EW_AXPBY: z = alpha * x + beta * y
 * @VTPU_EW_RELU: z = x < 0 ? 0 : x (y unused; NaN stays NaN)
 * @VTPU_EW_RELU_GRAD: z = x > 0 ? y : 0 (x: the ReLU's input, y: dy)
 * @VTPU_EW_ADD_SCALAR: z = x + alpha (y unused)
 * @VTPU_EW_SIGMOID: z = 1 / (1 + e^-x) (y unused), from e^-|x| so it
 *                   never overflows; NaN stays NaN, +-Inf give 1 and 0
 * @VTPU_EW_SIGMOID_GRAD: z = y * x * (1 - x) (x: the sigmoid's output,
 *                        y: dy)
 * @VTPU_EW_TANH: z = tanh(x) (y unused), odd, from e^-2|x| (a series near
 *                0); saturates at +-1, NaN stays NaN
 * @VTPU_EW_TANH_GRAD: z = y * (1 - x * x) (x: the tanh's output, y: dy)
 * @VTPU_EW_COUNT: number of sub-ops
 *
 * SIGMOID and TANH are within an ulp or two of the exact value (rounded
 * from double); the gradients are float arithmetic, in that order.
 */
enum vtpu_ew_op {
	VTPU_EW_ADD = 0,
	VTPU_EW_SUB = 1,
	VTPU_EW_MUL = 2,
	VTPU_EW_SCALE = 3,
	VTPU_EW_AXPY = 4,
	VTPU_EW_AXPBY = 5,
	VTPU_EW_RELU = 6,
	VTPU_EW_RELU_GRAD = 7,
	VTPU_EW_ADD_SCALAR = 8,
	VTPU_EW_SIGMOID = 9,
	VTPU_EW_SIGMOID_GRAD = 10,
	VTPU_EW_TANH = 11,
	VTPU_EW_TANH_GRAD = 12,
	VTPU_EW_COUNT
};

/**
 * struct vtpu_cmd_elementwise - z[i] = op(x[i], y[i]) for i < count (f32)
 * @hdr: opcode VTPU_OP_ELEMENTWISE
 * @op: an enum vtpu_ew_op
 * @pad: must be zero
 * @count: elements, 1..VTPU_MAX_ELEMS
 * @alpha: binary32 bits (SCALE, AXPY, AXPBY, ADD_SCALAR; else zero)
 * @beta: binary32 bits (AXPBY; else zero)
 * @x: input (X)
 * @y: input (Y); all zero for the sub-ops that do not read it
 * @z: output (Z); may be exactly x or exactly y (in place), but may not
 *     overlap them otherwise
 */
struct vtpu_cmd_elementwise {
	struct vtpu_cmd_hdr hdr;
	__u32 op;
	__u32 pad;
	__u64 count;
	__u32 alpha;
	__u32 beta;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand z;
};

/**
 * enum vtpu_reduce_op - struct vtpu_cmd_reduce.op
 * @VTPU_REDUCE_COLS: y[j] = beta * y[j] + sum over i of alpha * x[i][j]
 *                    (y has n elements: e.g. a bias gradient)
 * @VTPU_REDUCE_ROWS: y[i] = beta * y[i] + sum over j of alpha * x[i][j]
 *                    (y has m elements)
 * @VTPU_REDUCE_SUMSQ_ROWS: y[i] = beta * y[i] + sum over j of
 *                          alpha * x[i][j]^2 (y has m elements): with
 *                          m = 1 and beta = 1 it adds a buffer's squares
 *                          to one sum, for VTPU_OP_CLIP_NORM
 */
enum vtpu_reduce_op {
	VTPU_REDUCE_COLS = 0,
	VTPU_REDUCE_ROWS = 1,
	VTPU_REDUCE_SUMSQ_ROWS = 2,
};

/**
 * struct vtpu_cmd_reduce - sums of the rows or columns of a matrix (f32)
 * @hdr: opcode VTPU_OP_REDUCE
 * @op: an enum vtpu_reduce_op
 * @m: rows of x
 * @n: columns of x
 * @ldx: leading dimension of x (>= n)
 * @alpha: binary32 bits, scales every term
 * @beta: binary32 bits; with beta == 0, y is not read (overwrite)
 * @x: the matrix (X)
 * @y: the sums (Y); may not overlap x
 *
 * The summation order depends on m and n only (blocks of rows or columns
 * summed in order, then added in order), never on the number of workers.
 */
struct vtpu_cmd_reduce {
	struct vtpu_cmd_hdr hdr;
	__u32 op;
	__u32 m;
	__u32 n;
	__u32 ldx;
	__u32 alpha;
	__u32 beta;
	struct vtpu_operand x;
	struct vtpu_operand y;
};

/* struct vtpu_cmd_softmax_xent.flags */
#define VTPU_XENT_DLOGITS (1u << 0) /* write dlogits */
#define VTPU_XENT_PROBS (1u << 1)   /* write probs */
#define VTPU_XENT_MEAN_VALID (1u << 2) /* scale / (rows with label < n) */
#define VTPU_XENT_FLAGS                                                        \
	(VTPU_XENT_DLOGITS | VTPU_XENT_PROBS | VTPU_XENT_MEAN_VALID)

/* Largest class count of a SOFTMAX_XENT (one row is one unit of work). */
#define VTPU_XENT_MAX_CLASSES (1u << 16)

/**
 * struct vtpu_cmd_softmax_xent - softmax cross-entropy of logits
 * against integer labels, with its gradient
 * @hdr: opcode VTPU_OP_SOFTMAX_XENT
 * @m: rows (examples)
 * @n: classes, 1..VTPU_XENT_MAX_CLASSES
 * @flags: VTPU_XENT_*
 * @scale: binary32 bits, e.g. 1/m for a mean loss; with
 *         VTPU_XENT_MEAN_VALID, loss and dlogits are scaled by scale / v
 *         instead, v the number of rows whose label is < n (the mean over
 *         the valid rows with scale = 1, whatever the batch's padding;
 *         v = 0: loss 0 and dlogits 0)
 * @logits: f32 [m, n] (X)
 * @labels: u32 [m] (LABELS); a label >= n marks an ignored row: it adds
 *          nothing to loss, its dlogits row is 0 and it is never correct
 * @dlogits: f32 [m, n] (DX), with VTPU_XENT_DLOGITS:
 *           scale * (softmax(logits) - onehot(label)), the gradient of loss
 * @loss: f32 [1] (LOSS), written: scale * sum over rows of
 *        -log(softmax(logits)[label]) (the mean with scale = 1/m)
 * @correct: u32 [1] (CORRECT), written: rows whose label is the first
 *           argmax of their logits
 * @probs: f32 [m, n] (PROBS), with VTPU_XENT_PROBS: softmax(logits)
 *
 * Rows are split into tiles for dlogits and probs; loss and correct are
 * summed by one tile, in row order, so they are deterministic (that tile
 * recomputes each row's log-sum-exp: one serial pass over the logits).
 * With VTPU_XENT_MEAN_VALID, each dlogits tile first counts the valid
 * labels itself, in order, in steps of its own (labels are 4 bytes a
 * row), before it writes a row; the loss tile counts them as it sums. So
 * v is known before any row is scaled and no tile waits for another.
 * All outputs are disjoint from each other and from the inputs.
 */
struct vtpu_cmd_softmax_xent {
	struct vtpu_cmd_hdr hdr;
	__u32 m;
	__u32 n;
	__u32 flags;
	__u32 scale;
	struct vtpu_operand logits;
	struct vtpu_operand labels;
	struct vtpu_operand dlogits;
	struct vtpu_operand loss;
	struct vtpu_operand correct;
	struct vtpu_operand probs;
};

/* struct vtpu_cmd_softmax.flags */
#define VTPU_SOFTMAX_LENGTHS (1u << 0) /* lengths given: masks the columns */
#define VTPU_SOFTMAX_CAUSAL (1u << 1)  /* row r sees columns <= r % g */
#define VTPU_SOFTMAX_FLAGS (VTPU_SOFTMAX_LENGTHS | VTPU_SOFTMAX_CAUSAL)

/* Largest row of a SOFTMAX (one row is one unit of work). */
#define VTPU_SOFTMAX_MAX_COLS (1u << 16)

/**
 * struct vtpu_cmd_softmax - masked softmax over the last axis, and its
 * gradient (one struct for both opcodes, as CONV and CONV_DGRAD)
 * @hdr: opcode VTPU_OP_SOFTMAX or VTPU_OP_SOFTMAX_GRAD
 * @m: rows, 1..VTPU_MAX_DIM
 * @n: columns (the softmax axis), 1..VTPU_SOFTMAX_MAX_COLS; m * n at most
 *     VTPU_MAX_ELEMS
 * @rows_per_group: g, 1..VTPU_MAX_DIM: consecutive rows that share one
 *     length (attention scores [batch * heads * queries, keys] with g =
 *     queries); rows r with the same r / g are a group
 * @flags: VTPU_SOFTMAX_*
 * @x: f32 [m, n]. SOFTMAX: the input (X). SOFTMAX_GRAD: the output dx
 *     (DX), written
 * @y: f32 [m, n]. SOFTMAX: the output (Y), written. SOFTMAX_GRAD: the
 *     forward's output y (Y), read
 * @dy: f32 [m, n]. SOFTMAX: unused, all zero. SOFTMAX_GRAD: the gradient
 *      of y (DY), read
 * @lengths: u32 [ceil(m / g)] (LENGTHS), read, with VTPU_SOFTMAX_LENGTHS;
 *           all zero without it
 *
 * Row r's valid columns are j < v(r), a prefix: v(r) = n, lowered to
 * lengths[r / g] with VTPU_SOFTMAX_LENGTHS (any value: one >= n means
 * n, 0 means none) and to r % g + 1 with VTPU_SOFTMAX_CAUSAL (a
 * decoder's self-attention: query i of a sequence sees keys 0..i).
 *
 * SOFTMAX: y[r][j] = exp(x[r][j] - M) / sum over valid k of exp(x[r][k]
 * - M) for valid j, M the row's valid max (stable for any finite x); 0
 * exactly for masked j, and a row with no valid column is all 0 (not
 * NaN). Masked x are never read. exp and the sum are in double, y is
 * rounded to f32.
 *
 * SOFTMAX_GRAD: dx[r][j] = y[r][j] * (dy[r][j] - s), s = sum over valid
 * k of dy[r][k] * y[r][k] (in double), for valid j; 0 exactly for masked
 * j, whose y and dy are never read. Give it the forward's flags, g and
 * lengths (a masked y is 0 anyway, so without them dx is the same where
 * dy is finite).
 *
 * Rows are split among tiles; each row is computed by one call, its sums
 * in column order: the result does not depend on the workers. The
 * outputs may not overlap the inputs (x, y, dy, lengths).
 */
struct vtpu_cmd_softmax {
	struct vtpu_cmd_hdr hdr;
	__u32 m;
	__u32 n;
	__u32 rows_per_group;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand dy;
	struct vtpu_operand lengths;
};

/* struct vtpu_cmd_sgd.flags */
#define VTPU_SGD_NESTEROV (1u << 0) /* Nesterov momentum (momentum != 0) */
#define VTPU_SGD_FLAGS VTPU_SGD_NESTEROV

/**
 * struct vtpu_cmd_sgd - one SGD step on count f32 parameters, in place
 * @hdr: opcode VTPU_OP_SGD
 * @count: elements, 1..VTPU_MAX_ELEMS
 * @lr: binary32 bits, learning rate
 * @momentum: binary32 bits; 0 means none (then @mom is unused)
 * @weight_decay: binary32 bits, L2 penalty added to the gradient
 * @flags: VTPU_SGD_*
 * @param: the weights p (PARAM), read and written
 * @grad: their gradient (GRAD), read
 * @mom: momentum buffer b (MOM), read and written; zero-initialised
 *
 * g = grad + weight_decay * p; b = momentum * b + g; g = NESTEROV ?
 * g + momentum * b : b (g itself without momentum); p = p - lr * g.
 */
struct vtpu_cmd_sgd {
	struct vtpu_cmd_hdr hdr;
	__u64 count;
	__u32 lr;
	__u32 momentum;
	__u32 weight_decay;
	__u32 flags;
	struct vtpu_operand param;
	struct vtpu_operand grad;
	struct vtpu_operand mom;
};

/**
 * struct vtpu_cmd_clip_norm - clip gradients by their global norm, in place
 * @hdr: opcode VTPU_OP_CLIP_NORM
 * @count: elements of x, 1..VTPU_MAX_ELEMS
 * @max_norm: binary32 bits, the largest norm kept: positive and finite
 * @pad: must be zero
 * @sumsq: f32 [1] (SUMSQ), read: the sum of the squares of all the
 *         gradients clipped together (REDUCE SUMSQ_ROWS with m = 1 over
 *         each buffer, beta 0 for the first and 1 for the others)
 * @x: f32 [count] (X), read and written: one of those gradients; may not
 *     overlap sumsq
 *
 * norm = sqrt(sumsq); if norm > max_norm, x = x * (max_norm / norm)
 * (float arithmetic, correctly rounded), else x is left unchanged, as
 * Keras's global_clipnorm (tf.clip_by_global_norm) and, but for its 1e-6,
 * torch.nn.utils.clip_grad_norm_ do. A non-finite norm follows torch where
 * that is sensible: +Inf (an overflowed sum) scales x by 0, as torch does;
 * NaN (a NaN gradient, or a negative sumsq) leaves x unchanged, where
 * torch would make every element NaN: the NaN elements stay NaN either way.
 * Run one CLIP_NORM per gradient buffer, all with the same sumsq.
 */
struct vtpu_cmd_clip_norm {
	struct vtpu_cmd_hdr hdr;
	__u64 count;
	__u32 max_norm;
	__u32 pad;
	struct vtpu_operand sumsq;
	struct vtpu_operand x;
};

/**
 * struct vtpu_cmd_argmax - the index of each row's maximum, as greedy
 * decoding needs (logits [batch, vocab] to the next step's token ids)
 * @hdr: opcode VTPU_OP_ARGMAX
 * @m: rows, 1..VTPU_MAX_DIM
 * @n: columns, 1..VTPU_MAX_DIM
 * @ldx: elements from one row of x to the next, at least @n
 *       (VTPU_ERR_BAD_STRIDE); m * ldx at most VTPU_MAX_ELEMS
 * @flags: must be zero (reserved)
 * @x: f32 [m rows, n columns, leading dimension ldx] (X), read
 * @y: u32 [m] (INDEX), written: what an EMBEDDING reads as its ids; may
 *     not overlap x's span ((m - 1) * ldx + n elements, the gaps between
 *     rows included)
 *
 * y[r] = the index j of the first maximum of row r: the lowest j with
 * x[r][j] >= x[r][k] for every k, so ties go to the lowest index, a row
 * of -Inf gives 0, and +0, -0 and the denormals tie (the device reads
 * denormal inputs as 0). NaN compares larger than every number: a row
 * with a NaN gives the index of its first NaN, as numpy.argmax and
 * torch.argmax do. y is always in 0..n-1.
 *
 * Rows are split among tiles and a long row into steps of columns, in
 * order; the first maximum is one index whatever the split, so the result
 * does not depend on the workers.
 */
struct vtpu_cmd_argmax {
	struct vtpu_cmd_hdr hdr;
	__u32 m;
	__u32 n;
	__u32 ldx;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand y;
};

/* struct vtpu_cmd_batchnorm.flags */
#define VTPU_BATCHNORM_TRAINING (1u << 0) /* batch statistics, update moving */
#define VTPU_BATCHNORM_RELU (1u << 1) /* y = max(0, y): a ReLU fused in */
#define VTPU_BATCHNORM_FLAGS (VTPU_BATCHNORM_TRAINING | VTPU_BATCHNORM_RELU)

/**
 * struct vtpu_cmd_batchnorm - batch normalisation over the rows, per
 * channel (the last axis): NHWC images with rows = N * H * W, or a dense
 * layer's output with rows = N
 * @hdr: opcode VTPU_OP_BATCHNORM
 * @rows: 1..VTPU_MAX_DIM
 * @channels: C, 1..VTPU_MAX_DIM; rows * C at most VTPU_MAX_ELEMS
 * @flags: VTPU_BATCHNORM_*
 * @epsilon: binary32 bits, added to the variance: positive, normal, finite
 * @momentum: binary32 bits, 0..1 (+0 and 1 included)
 * @pad: must be zero
 * @x: f32 [rows][C] (X), read
 * @y: f32 [rows][C] (Y), written
 * @gamma: f32 [C] (W), read: the scale
 * @beta: f32 [C] (BIAS), read: the offset
 * @stats: f32 [2][C] (STATE), written with TRAINING (all zero without):
 *         the batch mean and inv_std = 1 / sqrt(var + epsilon), which
 *         BATCHNORM_GRAD reads
 * @moving_mean: f32 [C] (MOM): read; also written with TRAINING
 * @moving_var: f32 [C] (VEL): read; also written with TRAINING
 *
 * With TRAINING: mean and var are the batch's, var the biased one (the
 * mean of (x - mean)^2 over rows), both in double from the sums of d = x -
 * x[0] and d * d (x[0]: the channel's value in row 0, so a large mean
 * costs no accuracy while x[0] is near it): mean = x[0] + sum(d) / rows,
 * var = sum(d * d) / rows - (sum(d) / rows)^2, at least 0;
 * y = gamma * (x - mean) * inv_std + beta; then
 * moving = moving * momentum + batch * (1 - momentum) for the mean and
 * the variance, the biased batch variance for the latter, as Keras 3
 * does (tf.keras 2's fused kernel and torch use rows / (rows - 1) times
 * it). Without TRAINING, mean and var are the moving ones, which are
 * only read. y and the outputs may not overlap the inputs or each other.
 * With RELU (either mode), y = v < 0 ? 0 : v of the binary32 v above: the
 * same bits as BATCHNORM without it then ELEMENTWISE RELU, one pass less
 * over y.
 *
 * The sums run over groups of rows in order, then add the groups' sums
 * in order; the groups depend on rows and C only: the result does not
 * depend on the workers.
 */
struct vtpu_cmd_batchnorm {
	struct vtpu_cmd_hdr hdr;
	__u32 rows;
	__u32 channels;
	__u32 flags;
	__u32 epsilon;
	__u32 momentum;
	__u32 pad;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand gamma;
	struct vtpu_operand beta;
	struct vtpu_operand stats;
	struct vtpu_operand moving_mean;
	struct vtpu_operand moving_var;
};

/**
 * struct vtpu_cmd_batchnorm_grad - the gradient of a TRAINING BATCHNORM
 * @hdr: opcode VTPU_OP_BATCHNORM_GRAD
 * @rows: as the forward's
 * @channels: as the forward's
 * @flags: must be zero (reserved)
 * @pad: must be zero
 * @x: f32 [rows][C] (X), read: the forward's input
 * @dy: f32 [rows][C] (DY), read
 * @gamma: f32 [C] (W), read
 * @stats: f32 [2][C] (STATE), read: what the forward wrote
 * @dx: f32 [rows][C] (DX), written
 * @dgamma: f32 [C] (DW), written
 * @dbeta: f32 [C] (DBIAS), written
 *
 * With xhat = (x - mean) * inv_std: dbeta = sum over rows of dy, dgamma =
 * sum of dy * xhat (both in double, in the forward's groups of rows), and
 * dx = gamma * inv_std * (dy - dbeta / rows - xhat * dgamma / rows), the
 * gradient through the batch mean and variance. The outputs may not
 * overlap the inputs or each other.
 */
struct vtpu_cmd_batchnorm_grad {
	struct vtpu_cmd_hdr hdr;
	__u32 rows;
	__u32 channels;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand x;
	struct vtpu_operand dy;
	struct vtpu_operand gamma;
	struct vtpu_operand stats;
	struct vtpu_operand dx;
	struct vtpu_operand dgamma;
	struct vtpu_operand dbeta;
};

/**
 * struct vtpu_cmd_adam_step - advance an Adam step state by one step
 * @hdr: opcode VTPU_OP_ADAM_STEP
 * @beta1: binary32 bits
 * @beta2: binary32 bits
 * @state: f32 [2] (STATE): {1 - beta1^t, 1 - beta2^t} after t steps;
 *         zero-initialised means t = 0. One command, one tile:
 *         s0 = beta1 * s0 + (1 - beta1), s1 = beta2 * s1 + (1 - beta2).
 *
 * A compiled training stream runs ADAM_STEP once and then the ADAM
 * commands of every parameter with the same @state, so replaying the
 * stream N times makes exactly N Adam steps.
 */
struct vtpu_cmd_adam_step {
	struct vtpu_cmd_hdr hdr;
	__u32 beta1;
	__u32 beta2;
	struct vtpu_operand state;
};

/* struct vtpu_cmd_adam.flags */
#define VTPU_ADAM_DECOUPLED (1u << 0) /* AdamW: decay the weights directly */
#define VTPU_ADAM_FLAGS VTPU_ADAM_DECOUPLED

/**
 * struct vtpu_cmd_adam - one Adam step on count f32 parameters, in place
 * @hdr: opcode VTPU_OP_ADAM
 * @count: elements, 1..VTPU_MAX_ELEMS
 * @lr: binary32 bits, learning rate
 * @beta1: binary32 bits, first-moment decay
 * @beta2: binary32 bits, second-moment decay
 * @eps: binary32 bits
 * @weight_decay: binary32 bits
 * @flags: VTPU_ADAM_*
 * @param: the weights p (PARAM), read and written
 * @grad: their gradient (GRAD), read
 * @m: first moment (MOM), read and written; zero-initialised
 * @v: second moment (VEL), read and written; zero-initialised
 * @state: f32 [2] of VTPU_OP_ADAM_STEP (STATE), read: {c1, c2}
 *
 * g = grad (+ weight_decay * p unless DECOUPLED; with DECOUPLED
 * p = p - lr * weight_decay * p first); m = beta1 * m + (1 - beta1) * g;
 * v = beta2 * v + (1 - beta2) * g * g;
 * p = p - (lr / c1) * m / (sqrt(v) / sqrt(c2) + eps).
 */
struct vtpu_cmd_adam {
	struct vtpu_cmd_hdr hdr;
	__u64 count;
	__u32 lr;
	__u32 beta1;
	__u32 beta2;
	__u32 eps;
	__u32 weight_decay;
	__u32 flags;
	struct vtpu_operand param;
	struct vtpu_operand grad;
	struct vtpu_operand m;
	struct vtpu_operand v;
	struct vtpu_operand state;
};

/**
 * enum vtpu_cast_mode - struct vtpu_cmd_cast.mode
 * @VTPU_CAST_F32_TO_BF16: dst (bf16) = src (f32) rounded to nearest even;
 *                         NaN stays a (quiet) NaN
 * @VTPU_CAST_BF16_TO_F32: dst (f32) = src (bf16), exact
 * @VTPU_CAST_U8_TO_F32: dst (f32) = (float)src (u8) * scale + shift
 */
enum vtpu_cast_mode {
	VTPU_CAST_F32_TO_BF16 = 0,
	VTPU_CAST_BF16_TO_F32 = 1,
	VTPU_CAST_U8_TO_F32 = 2,
};

/**
 * struct vtpu_cmd_cast - convert count elements between types
 * @hdr: opcode VTPU_OP_CAST
 * @mode: an enum vtpu_cast_mode
 * @pad: must be zero
 * @count: elements, 1..VTPU_MAX_ELEMS
 * @scale: binary32 bits (U8_TO_F32; else zero)
 * @shift: binary32 bits (U8_TO_F32; else zero)
 * @src: source (SRC), aligned to its element size
 * @dst: destination (DST), aligned to its element size; may not overlap
 *       src
 */
struct vtpu_cmd_cast {
	struct vtpu_cmd_hdr hdr;
	__u32 mode;
	__u32 pad;
	__u64 count;
	__u32 scale;
	__u32 shift;
	struct vtpu_operand src;
	struct vtpu_operand dst;
};

/**
 * struct vtpu_cmd_dropout - inverted dropout: z = x * mask, where
 * mask[i] = 1 / (1 - rate) for the elements kept and 0 for those dropped
 * @hdr: opcode VTPU_OP_DROPOUT
 * @count: elements, 1..VTPU_MAX_ELEMS
 * @rate: binary32 bits, the probability of dropping, 0 <= rate < 1
 * @seed: element i of step s is kept iff a hash of (@seed, s, i) is at
 *        least rate * 2^32: the same on every executor and tiling
 * @flags: must be zero
 * @pad: must be zero
 * @x: f32 input (X)
 * @z: f32 output (Z); may be exactly @x, may not overlap it otherwise
 * @mask: f32 output (MASK), for the backward pass (dx = dz * mask)
 * @step: f32[1] (STEP), read: the step number s (whole, 0..2^24); a
 *        compiled training stream advances it with ELEMENTWISE ADD_SCALAR
 *        once per step, so each replay draws new masks
 */
struct vtpu_cmd_dropout {
	struct vtpu_cmd_hdr hdr;
	__u64 count;
	__u32 rate;
	__u32 seed;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand x;
	struct vtpu_operand z;
	struct vtpu_operand mask;
	struct vtpu_operand step;
};

/* struct vtpu_cmd_image_augment.flags */
#define VTPU_AUGMENT_RANDOM_CROP (1u << 0) /* random offsets, else centre */
#define VTPU_AUGMENT_FLIP_H (1u << 1)	/* flip left-right, probability 1/2 */
#define VTPU_AUGMENT_FLAGS (VTPU_AUGMENT_RANDOM_CROP | VTPU_AUGMENT_FLIP_H)

/**
 * struct vtpu_cmd_image_augment - a crop of each image of a batch, maybe
 * flipped: Keras' RandomCrop and RandomFlip("horizontal") on the device
 * @hdr: opcode VTPU_OP_IMAGE_AUGMENT
 * @n: images, 1..VTPU_MAX_DIM
 * @h: input rows, 1..VTPU_MAX_DIM
 * @w: input columns, 1..VTPU_MAX_DIM
 * @c: channels, 1..VTPU_MAX_DIM; n * h * w * c at most VTPU_MAX_ELEMS
 * @oh: output rows, 1..@h
 * @ow: output columns, 1..@w
 * @seed: image i of step s draws from a hash of (@seed, s, i): the same
 *        on every executor and tiling
 * @flags: VTPU_AUGMENT_*
 * @x: f32 [n][h][w][c] (X), read
 * @y: f32 [n][oh][ow][c] (Y), written; may not overlap x
 * @step: f32[1] (STEP), read: the step number s (whole, 0..2^24; anything
 *        else reads as 0), as DROPOUT's; a compiled training stream
 *        advances it once per step, so each replay draws new crops
 *
 * y[i][r][q][k] = x[i][r0 + r][q0 + q'][k], where q' = ow - 1 - q when
 * image i is flipped, else q. Image i's draws come from the 64-bit hash
 * d = mix(key + i), key = mix(((u64)seed << 32 | s) + 0x9e3779b97f4a7c15)
 * and mix() splitmix64's finaliser (DROPOUT's key and hash). With
 * VTPU_AUGMENT_RANDOM_CROP, r0 = ((d >> 32) * (h - oh + 1)) >> 32 and
 * q0 = ((d & 0xffffffff) * (w - ow + 1)) >> 32, near-uniform in 0..h-oh
 * and 0..w-ow; without it the centre, r0 = (h - oh) / 2 and
 * q0 = (w - ow) / 2 rounded down (Keras' CenterCrop, a RandomCrop's
 * inference). With VTPU_AUGMENT_FLIP_H image i is flipped when the top
 * bit of mix(d) is set. Each output element is a copy of one input
 * element: the result does not depend on the tiling or the workers.
 */
struct vtpu_cmd_image_augment {
	struct vtpu_cmd_hdr hdr;
	__u32 n;
	__u32 h;
	__u32 w;
	__u32 c;
	__u32 oh;
	__u32 ow;
	__u32 seed;
	__u32 flags;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand step;
};

/* struct vtpu_cmd_embedding.flags (EMBEDDING_GRAD; EMBEDDING's are 0) */
#define VTPU_EMBEDDING_ACCUMULATE (1u << 0) /* add to dtable, not zero it */
#define VTPU_EMBEDDING_FLAGS VTPU_EMBEDDING_ACCUMULATE

/**
 * struct vtpu_cmd_embedding - EMBEDDING: y = the rows of table that ids
 * name (a lookup); EMBEDDING_GRAD: its adjoint, dtable = the rows of dy
 * added up at the rows of the table they came from (a scatter-add)
 * @hdr: opcode VTPU_OP_EMBEDDING or VTPU_OP_EMBEDDING_GRAD
 * @n: token ids, 1..VTPU_MAX_DIM
 * @vocab: rows of the table, 1..VTPU_MAX_DIM
 * @dim: columns of the table and of y, 1..VTPU_MAX_DIM; n * dim and
 *       vocab * dim at most VTPU_MAX_ELEMS
 * @flags: EMBEDDING_GRAD: VTPU_EMBEDDING_ACCUMULATE; EMBEDDING: zero
 * @ids: u32 [n] (INDEX), read. Ids are data, checked as they are read:
 *       an id >= vocab (0xffffffff, say, for padding) names no row.
 *       EMBEDDING writes a zero row of y for it, EMBEDDING_GRAD skips it.
 * @table: f32 [vocab, dim]: EMBEDDING's input (W), EMBEDDING_GRAD's
 *         output (DW), zeroed first unless VTPU_EMBEDDING_ACCUMULATE
 * @y: f32 [n, dim]: EMBEDDING's output (Y), EMBEDDING_GRAD's input (DY)
 *
 * EMBEDDING: y[i][j] = table[ids[i]][j] (0 when ids[i] >= vocab).
 * EMBEDDING_GRAD: dtable[ids[i]][j] += dy[i][j] for i = 0, 1, .., n - 1
 * in that order, ids >= vocab skipped: a row named by several ids sums
 * them in the order of i, whatever the number of workers (workers split
 * the columns, never the ids). It is the exact adjoint of EMBEDDING:
 * <dy, EMBEDDING(table)> = <EMBEDDING_GRAD(dy), table>. Outputs overlap
 * nothing.
 */
struct vtpu_cmd_embedding {
	struct vtpu_cmd_hdr hdr;
	__u32 n;
	__u32 vocab;
	__u32 dim;
	__u32 flags;
	struct vtpu_operand ids;
	struct vtpu_operand table;
	struct vtpu_operand y;
};

/* struct vtpu_cmd_gemm_batched.flags: VTPU_GEMM_TRANS_A, _TRANS_B only */
#define VTPU_GEMM_BATCHED_FLAGS (VTPU_GEMM_TRANS_A | VTPU_GEMM_TRANS_B)
/* Most elements of C a batched GEMM writes: batch * m * n, at most this. */
#define VTPU_GEMM_BATCHED_MAX_C (1ull << 31)

/**
 * struct vtpu_cmd_gemm_batched - batch GEMMs of one shape, as attention
 * needs (Q K^T and P V per sequence and head): for b < batch,
 * C_b = alpha * op(A_b) * op(B_b) + beta * C_b
 * @hdr: opcode VTPU_OP_GEMM_BATCHED
 * @batch: matrices, 1..VTPU_MAX_DIM; batch * m * n at most
 *         VTPU_GEMM_BATCHED_MAX_C
 * @m: rows of each C, 1..VTPU_MAX_DIM
 * @n: columns of each C, 1..VTPU_MAX_DIM
 * @k: the reduced dimension, 1..VTPU_MAX_DIM
 * @flags: VTPU_GEMM_BATCHED_FLAGS (no bias, ReLU or panels)
 * @lda: as struct vtpu_cmd_gemm's, for every A_b
 * @ldb: as struct vtpu_cmd_gemm's, for every B_b
 * @ldc: as struct vtpu_cmd_gemm's, for every C_b
 * @dtype: of A and B, VTPU_DTYPE_F32 or VTPU_DTYPE_BF16; C is f32
 * @alpha: binary32 bits
 * @beta: binary32 bits; with beta == 0, C is not read
 * @pad: must be zero
 * @stride_a: elements from A_b to A_(b+1), 0..VTPU_MAX_ELEMS (0: one A
 *            for every product)
 * @stride_b: elements from B_b to B_(b+1), 0..VTPU_MAX_ELEMS
 * @stride_c: elements from C_b to C_(b+1), at most VTPU_MAX_ELEMS; with
 *            batch > 1 the Cs may not share an element
 *            (VTPU_ERR_BAD_STRIDE): either each C lies past the one
 *            before (stride_c >= (m - 1) * ldc + n), or the Cs' rows
 *            interleave (stride_c >= n and ldc >= (batch - 1) *
 *            stride_c + n: row i of every C_b within row i of one wide
 *            matrix, as a time-major sequence's examples lie side by
 *            side)
 * @a: A_0 (A); the operand spans (batch - 1) * stride_a elements more
 *     than one A
 * @b: B_0 (B), likewise
 * @c: C_0 (C), likewise; may overlap neither a nor b (as spans)
 *
 * Each product is the GEMM struct vtpu_cmd_gemm with the same fields
 * computes (the same kernels, the same sums over k in order), so
 * C_b is bitwise what that command would write.
 */
struct vtpu_cmd_gemm_batched {
	struct vtpu_cmd_hdr hdr;
	__u32 batch;
	__u32 m;
	__u32 n;
	__u32 k;
	__u32 flags;
	__u32 lda;
	__u32 ldb;
	__u32 ldc;
	__u32 dtype;
	__u32 alpha;
	__u32 beta;
	__u32 pad;
	__u64 stride_a;
	__u64 stride_b;
	__u64 stride_c;
	struct vtpu_operand a;
	struct vtpu_operand b;
	struct vtpu_operand c;
};

/* Most units of an ADDITIVE_SCORE (one score is one tanh per unit). */
#define VTPU_ADDITIVE_MAX_UNITS 4096u
/* Most of tq * units and tk * units: one call's work (a row of dq or dk). */
#define VTPU_ADDITIVE_MAX_WORK (1u << 18)

/**
 * struct vtpu_cmd_additive_score - Bahdanau's additive attention scores,
 * and their gradient (one struct for both opcodes, as SOFTMAX's)
 * @hdr: opcode VTPU_OP_ADDITIVE_SCORE or VTPU_OP_ADDITIVE_SCORE_GRAD
 * @batch: B, examples, 1..VTPU_MAX_DIM
 * @tq: query steps, 1..VTPU_MAX_DIM
 * @tk: key steps, 1..VTPU_MAX_DIM
 * @units: u, 1..VTPU_ADDITIVE_MAX_UNITS; tq * u and tk * u at most
 *         VTPU_ADDITIVE_MAX_WORK; B * tq * tk, B * tq * u and B * tk * u
 *         at most VTPU_MAX_ELEMS
 * @flags: must be zero
 * @pad: must be zero
 * @q: f32 [tq][B][u], the projected queries, time-major (A), read
 * @k: f32 [tk][B][u], the projected keys, time-major (B), read
 * @v: f32 [u], the scoring vector (W), read
 * @s: f32 [B][tq][tk] (C): the scores, written by ADDITIVE_SCORE; their
 *     gradient ds, read by ADDITIVE_SCORE_GRAD. This is the layout of a
 *     SOFTMAX with m = B * tq, n = tk, rows_per_group = tq (the lengths
 *     per example) and of GEMM_BATCHED's packed scores
 * @dq: f32 [tq][B][u] (DA), written by ADDITIVE_SCORE_GRAD; all zero for
 *      ADDITIVE_SCORE
 * @dk: f32 [tk][B][u] (DB), likewise
 * @dv: f32 [u] (DW), likewise
 *
 * ADDITIVE_SCORE: s[b][i][j] = sum over c of v[c] * tanh(q[i][b][c] +
 * k[j][b][c]), the sum of q and k rounded to f32, its tanh that of the
 * element-wise TANH (the same bits), the sum over c in order in double.
 *
 * ADDITIVE_SCORE_GRAD, with t = tanh(q[i][b][c] + k[j][b][c]) recomputed
 * and g = ds[b][i][j] * v[c] * (1 - t * t): dq[i][b][c] = the sum over j
 * of g (v[c] times the sum of ds (1 - t * t)), dk[j][b][c] = the sum over
 * i of g, dv[c] = the sum over b, i, j
 * (in that order) of ds[b][i][j] * t; each sum in double in the order
 * given, so the result depends on the shape only. A score that a mask
 * will drop needs ds = 0 there (SOFTMAX_GRAD writes exact zeros).
 *
 * Tiles: the forward's scores in chunks; the gradient's rows of dq, rows
 * of dk and blocks of 64 units of dv (their steps walk the (b, i) rows).
 * The outputs may not overlap the inputs.
 */
struct vtpu_cmd_additive_score {
	struct vtpu_cmd_hdr hdr;
	__u32 batch;
	__u32 tq;
	__u32 tk;
	__u32 units;
	__u32 flags;
	__u32 pad;
	struct vtpu_operand q;
	struct vtpu_operand k;
	struct vtpu_operand v;
	struct vtpu_operand s;
	struct vtpu_operand dq;
	struct vtpu_operand dk;
	struct vtpu_operand dv;
};

/**
 * struct vtpu_cmd_lstm_cell - one LSTM time step's element-wise part,
 * after the GEMMs that make its four gates' pre-activations
 * @hdr: opcode VTPU_OP_LSTM_CELL
 * @batch: B, rows, 1..VTPU_MAX_DIM
 * @hidden: H, 1..VTPU_MAX_DIM; B * H at most VTPU_MAX_ELEMS
 * @flags: must be zero
 * @pad: must be zero
 * @row_stride: elements from row b to row b + 1 of a gate in @gates and
 *              @act, H..VTPU_MAX_ELEMS
 * @gate_stride: elements from gate k to gate k + 1 (i, f, g, o: PyTorch's
 *               and Keras's order), H..VTPU_MAX_ELEMS. Element j of gate
 *               k of row b is at k * gate_stride + b * row_stride + j.
 *               The 4 * B blocks of H may not share an element
 *               (VTPU_ERR_BAD_STRIDE on @gates): either the gates are
 *               planes (gate_stride >= (B - 1) * row_stride + H: a
 *               sequence's [4][T][B][H], gate_stride T * B * H, row_stride
 *               H) or each row holds its four gates (row_stride >= 3 *
 *               gate_stride + H: [B][4H] is gate_stride H, row_stride 4H);
 *               the highest element, 3 * gate_stride + (B - 1) *
 *               row_stride + H - 1, below VTPU_MAX_ELEMS
 * @gates: f32 (GATES), read: the gates' pre-activations z (x W + h U + b);
 *         the operand spans up to its highest element
 * @c_prev: f32 [B, H] (CELL_PREV), read: the previous cell state
 * @act: f32 (ACT), the layout of @gates, written: the activated gates, for
 *       LSTM_CELL_GRAD. It may be exactly @gates (the same buffer and
 *       offset: in place), else it overlaps nothing
 * @c: f32 [B, H] (CELL), written: the new cell state
 * @tc: f32 [B, H] (TANH_CELL), written: tanh(c), for LSTM_CELL_GRAD
 * @h: f32 [B, H] (HIDDEN), written: the new hidden state
 *
 * i = sigmoid(z_i), f = sigmoid(z_f), g = tanh(z_g), o = sigmoid(z_o),
 * c = f * c_prev + i * g, tc = tanh(c), h = o * tc. sigmoid and tanh are
 * ELEMENTWISE's (VTPU_EW_SIGMOID, VTPU_EW_TANH: in double, rounded once,
 * the same bits at every SIMD level); f * c_prev and i * g are each
 * rounded to f32, then their sum: the results are bitwise those of the
 * ELEMENTWISE commands that do the same (SIGMOID, SIGMOID, TANH, SIGMOID,
 * MUL, MUL, ADD, TANH, MUL). Cells (row, column) are split among tiles;
 * each cell's results depend on its own inputs only: deterministic. The
 * outputs overlap nothing but @act's in-place @gates.
 */
struct vtpu_cmd_lstm_cell {
	struct vtpu_cmd_hdr hdr;
	__u32 batch;
	__u32 hidden;
	__u32 flags;
	__u32 pad;
	__u64 row_stride;
	__u64 gate_stride;
	struct vtpu_operand gates;
	struct vtpu_operand c_prev;
	struct vtpu_operand act;
	struct vtpu_operand c;
	struct vtpu_operand tc;
	struct vtpu_operand h;
};

/**
 * struct vtpu_cmd_lstm_cell_grad - the gradient of an LSTM_CELL
 * @hdr: opcode VTPU_OP_LSTM_CELL_GRAD
 * @batch: B, as the forward's
 * @hidden: H, as the forward's
 * @flags: must be zero
 * @pad: must be zero
 * @row_stride: as the forward's, for @act and @dgates
 * @gate_stride: as the forward's (VTPU_ERR_BAD_STRIDE names @act)
 * @act: f32 (ACT), read: the forward's activated gates
 * @c_prev: f32 [B, H] (CELL_PREV), read: the forward's c_prev
 * @tc: f32 [B, H] (TANH_CELL), read: the forward's tanh(c)
 * @dh: f32 [B, H] (DHIDDEN), read: the loss's gradient of h
 * @dc_next: f32 [B, H] (DCELL), read: the gradient of c from the next
 *           time step (zeros at the last)
 * @dgates: f32 (DGATES), the layout of @act, written: the gradient of the
 *          forward's @gates, for the GEMMs of dW, dU, db, dx and dh_prev.
 *          It may be exactly @act (in place), else it overlaps nothing
 * @dc_prev: f32 [B, H] (DCELL_PREV), written: the gradient of c_prev. It
 *           may be exactly @dc_next (in place), else it overlaps nothing
 *
 * dc = dh * o * (1 - tc * tc) + dc_next, dz_o = dh * tc * o * (1 - o),
 * dz_i = dc * g * i * (1 - i), dz_f = dc * c_prev * f * (1 - f), dz_g =
 * dc * i * (1 - g * g), dc_prev = dc * f: in f32, each product rounded
 * left to right, as the ELEMENTWISE sequence MUL, TANH_GRAD, ADD, MUL,
 * SIGMOID_GRAD, MUL, SIGMOID_GRAD, MUL, SIGMOID_GRAD, MUL, TANH_GRAD, MUL
 * does, whose results they are bitwise. Deterministic, as the forward.
 */
struct vtpu_cmd_lstm_cell_grad {
	struct vtpu_cmd_hdr hdr;
	__u32 batch;
	__u32 hidden;
	__u32 flags;
	__u32 pad;
	__u64 row_stride;
	__u64 gate_stride;
	struct vtpu_operand act;
	struct vtpu_operand c_prev;
	struct vtpu_operand tc;
	struct vtpu_operand dh;
	struct vtpu_operand dc_next;
	struct vtpu_operand dgates;
	struct vtpu_operand dc_prev;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_LINUX_VTPU_H */
