/* SPDX-License-Identifier: MIT */
/*
 * libvtpu: the user-space side of the vtpu virtual accelerator.
 *
 * This part of the library is the device API: a thin, uapi-shaped wrapper
 * around /dev/vtpuN (uapi/linux/vtpu.h), plus a command-stream builder and
 * the cpu backend, which runs the same command streams with the same engine
 * code in user space.
 *
 * Conventions (as libbpf): functions returning int return 0 or a negative
 * errno; functions returning a pointer return NULL and set errno. The
 * library never exits and never prints unless asked to.
 *
 * Usage:
 *
 *	struct vtpu_dev *dev = vtpu_open("/dev/vtpu0");
 *	struct vtpu_bo a, b, c;
 *	vtpu_bo_create(dev, 4096, &a);       // zeroed, mapped at a.map
 *	...fill a.map, b.map...
 *	uint32_t q;
 *	vtpu_queue_create(dev, VTPU_QUEUE_PRIORITY_NORMAL, &q);
 *	struct vtpu_cmdbuf cb;
 *	vtpu_cmdbuf_init(&cb);
 *	uint32_t ia = vtpu_cmdbuf_use(&cb, &a), ib = ..., ic = ...;
 *	vtpu_cmdbuf_gemm(&cb, &(struct vtpu_gemm_desc){ .m = 16, ... });
 *	struct vtpu_job job = { .queue = q, .want_out_fence = 1 };
 *	vtpu_submit(dev, &cb, &job);         // job.out_fence, job.seqno
 *	vtpu_fence_wait(job.out_fence, -1);  // or vtpu_wait(dev, q, seqno, ..)
 *	close(job.out_fence);
 *	vtpu_cmdbuf_fini(&cb);
 *	vtpu_close(dev);
 */
#ifndef LIBVTPU_VTPU_H
#define LIBVTPU_VTPU_H

#include <stddef.h>
#include <stdint.h>
#include <linux/vtpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices ---------------------------------------------------------- */

/** An open device: opaque. */
struct vtpu_dev;

/**
 * vtpu_open() - open a device node
 * @path: e.g. "/dev/vtpu0"
 *
 * Checks that the node speaks VTPU_API_VERSION.
 * Return: a handle to free with vtpu_close(), or NULL with errno set
 * (ENOENT: no such node, is vtpu.ko loaded?; EPROTO: API mismatch).
 */
struct vtpu_dev *vtpu_open(const char *path);

/** vtpu_close() - close the device; buffers still mapped stay valid. */
void vtpu_close(struct vtpu_dev *dev);

/** vtpu_fd() - the device's file descriptor (owned by @dev). */
int vtpu_fd(const struct vtpu_dev *dev);

/**
 * vtpu_get_param() - read one enum vtpu_param
 * Return: 0 with *value set, or -errno (-EINVAL: unknown param).
 */
int vtpu_get_param(struct vtpu_dev *dev, uint32_t param, uint64_t *value);

/* ---- buffers ------------------------------------------------------------ */

/**
 * struct vtpu_bo - a device buffer, mapped into this process
 * @handle: the device handle
 * @size: bytes (page-rounded)
 * @map: where it is mapped (read/write), or NULL when not mapped
 */
struct vtpu_bo {
	uint32_t handle;
	uint64_t size;
	void *map;
};

/**
 * vtpu_bo_create() - allocate a zeroed buffer of at least @size bytes and
 * map it
 * Return: 0, or -errno (-ENOSPC: the device's memory cap is reached).
 * The caller frees it with vtpu_bo_destroy().
 */
int vtpu_bo_create(struct vtpu_dev *dev, uint64_t size, struct vtpu_bo *bo);

/**
 * vtpu_bo_destroy() - unmap and close a buffer; jobs still using it keep
 * it alive until they end. Return: 0 or -errno.
 */
int vtpu_bo_destroy(struct vtpu_dev *dev, struct vtpu_bo *bo);

/* ---- queues ------------------------------------------------------------- */

/** vtpu_queue_create() - Return: 0 with *queue set, or -errno. */
int vtpu_queue_create(struct vtpu_dev *dev, uint32_t priority,
		      uint32_t *queue);

/** vtpu_queue_destroy() - cancels jobs not started. Return: 0 or -errno. */
int vtpu_queue_destroy(struct vtpu_dev *dev, uint32_t queue);

/* ---- command streams ---------------------------------------------------- */

/**
 * struct vtpu_cmdbuf - a command stream being built, and the buffers it
 * names. Grows as needed; all fields are the library's.
 */
struct vtpu_cmdbuf {
	uint8_t *data;
	uint32_t size, cap;
	uint32_t *handles;
	const struct vtpu_bo **bos;
	uint32_t nhandles, handles_cap;
	int error; /* first -errno of a failed append; vtpu_submit() fails */
};

void vtpu_cmdbuf_init(struct vtpu_cmdbuf *cb);
void vtpu_cmdbuf_fini(struct vtpu_cmdbuf *cb);
/** vtpu_cmdbuf_reset() - empty it, keeping its memory. */
void vtpu_cmdbuf_reset(struct vtpu_cmdbuf *cb);

/**
 * vtpu_cmdbuf_use() - name @bo in this stream
 * Return: its buffer index for struct vtpu_operand.buf (the same index
 * for the same buffer every time).
 */
uint32_t vtpu_cmdbuf_use(struct vtpu_cmdbuf *cb, const struct vtpu_bo *bo);

/**
 * vtpu_cmdbuf_append() - append a raw command (hdr.size bytes at @cmd)
 * Return: 0 or -errno.
 */
int vtpu_cmdbuf_append(struct vtpu_cmdbuf *cb, const void *cmd);

/**
 * struct vtpu_gemm_desc - a GEMM in host terms (see struct vtpu_cmd_gemm)
 * Operands are (buffer index, byte offset) pairs from vtpu_cmdbuf_use().
 * lda/ldb/ldc of 0 mean "packed" (the natural row length).
 */
struct vtpu_gemm_desc {
	uint32_t m, n, k;
	uint32_t flags;
	uint32_t lda, ldb, ldc;
	uint32_t dtype;
	float alpha, beta;
	uint32_t a_buf, b_buf, c_buf, bias_buf;
	uint64_t a_off, b_off, c_off, bias_off;
};

/** vtpu_cmdbuf_gemm() - append a GEMM. Return: 0 or -errno. */
int vtpu_cmdbuf_gemm(struct vtpu_cmdbuf *cb, const struct vtpu_gemm_desc *g);
/** vtpu_cmdbuf_fill() - append dst[0..count) = value (f32). */
int vtpu_cmdbuf_fill(struct vtpu_cmdbuf *cb, uint32_t buf, uint64_t off,
		     uint32_t count, float value);
/** vtpu_cmdbuf_copy() - append a byte copy between buffers. */
int vtpu_cmdbuf_copy(struct vtpu_cmdbuf *cb, uint32_t dst_buf,
		     uint64_t dst_off, uint32_t src_buf, uint64_t src_off,
		     uint64_t bytes);

/* ---- submission and completion ------------------------------------------ */

/**
 * struct vtpu_job - one submission's inputs and results
 * @queue: in, from vtpu_queue_create()
 * @in_fence: in, a sync_file fd to wait for, or -1 (not consumed)
 * @want_out_fence: in, non-zero to get @out_fence
 * @out_fence: out, a sync_file fd the caller closes, or -1
 * @seqno: out, for vtpu_wait()
 * @error: out, where validation failed (reason VTPU_ERR_NONE otherwise)
 */
struct vtpu_job {
	uint32_t queue;
	int in_fence;
	int want_out_fence;
	int out_fence;
	uint64_t seqno;
	struct {
		uint32_t cmd, offset, operand, reason;
	} error;
};

/**
 * vtpu_submit() - submit @cb's stream on job->queue
 * Return: 0, or -errno; -EINVAL with job->error.reason != VTPU_ERR_NONE
 * means the stream was rejected: vtpu_job_strerror() explains it.
 */
int vtpu_submit(struct vtpu_dev *dev, const struct vtpu_cmdbuf *cb,
		struct vtpu_job *job);

/**
 * vtpu_wait() - wait for job @seqno of @queue to end
 * @timeout_ns: relative; < 0 waits forever, 0 polls
 * @status: out, enum vtpu_job_status
 * @job_error: out (may be NULL), the job's -errno when not DONE
 * Return: 0 once ended, -ETIME if still pending at the timeout, or -errno.
 */
int vtpu_wait(struct vtpu_dev *dev, uint32_t queue, uint64_t seqno,
	      int64_t timeout_ns, uint32_t *status, int32_t *job_error);

/**
 * vtpu_fence_wait() - wait on a sync_file fd (libsync's sync_wait)
 * @timeout_ms: < 0 waits forever
 * Return: 0 when signalled without error, -ETIME on timeout, or the
 * fence's -errno when the job failed.
 */
int vtpu_fence_wait(int fence_fd, int timeout_ms);

/**
 * vtpu_job_strerror() - describe a rejected stream, e.g.
 * "command 17 (GEMM): operand B [offset 4096 + 16384 bytes] exceeds
 * buffer 3 (8192 bytes)"
 * @cb: the stream that was submitted
 * @job: its job after vtpu_submit() failed
 * @buf, @len: where to write the text (always NUL-terminated)
 * Return: @buf.
 */
char *vtpu_job_strerror(const struct vtpu_cmdbuf *cb,
			const struct vtpu_job *job, char *buf, size_t len);

/** vtpu_opcode_name() - "GEMM", "FILL", ... ("?" when unknown). */
const char *vtpu_opcode_name(uint32_t opcode);

/** vtpu_status_name() - "done", "error", ... for enum vtpu_job_status. */
const char *vtpu_status_name(uint32_t status);

/* ---- the cpu backend ---------------------------------------------------- */

/** The engine's GEMM, or OpenBLAS's cblas_sgemm (the CPU baseline). */
enum vtpu_cpu_gemm {
	VTPU_CPU_GEMM_ENGINE = 0,
	VTPU_CPU_GEMM_OPENBLAS = 1,
};

/** A cpu executor: opaque. */
struct vtpu_cpu;

/**
 * vtpu_cpu_create() - start a cpu executor
 * @threads: worker threads (0: one per online CPU)
 * @simd: enum vtpu_simd_level, or -1 for the best this CPU has
 * @gemm: enum vtpu_cpu_gemm
 * Return: an executor to free with vtpu_cpu_destroy(), or NULL + errno
 * (EOPNOTSUPP: the CPU lacks @simd).
 */
struct vtpu_cpu *vtpu_cpu_create(int threads, int simd, int gemm);
void vtpu_cpu_destroy(struct vtpu_cpu *cpu);
/** vtpu_cpu_simd() - the level the executor runs with. */
int vtpu_cpu_simd(const struct vtpu_cpu *cpu);

/**
 * vtpu_cpu_run() - validate and run @cb's stream synchronously, on the
 * buffers' mappings (bo->map), exactly as the device would
 * Return: 0, or -EINVAL with job->error filled as vtpu_submit() would.
 */
int vtpu_cpu_run(struct vtpu_cpu *cpu, const struct vtpu_cmdbuf *cb,
		 struct vtpu_job *job);

/**
 * vtpu_cpu_bo_create() - a buffer in plain process memory (page-aligned,
 * zeroed, handle 0) for use with vtpu_cpu_run(); free with
 * vtpu_cpu_bo_destroy(). Return: 0 or -errno.
 */
int vtpu_cpu_bo_create(uint64_t size, struct vtpu_bo *bo);
void vtpu_cpu_bo_destroy(struct vtpu_bo *bo);

#ifdef __cplusplus
}
#endif

#endif /* LIBVTPU_VTPU_H */
