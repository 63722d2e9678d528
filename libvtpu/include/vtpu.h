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

/*
 * VTPU_API marks what libvtpu.so exports; everything else in the library is
 * built with -fvisibility=hidden (and libvtpu/libvtpu.map lists the same
 * names under the version node VTPU_0.1).
 */
#ifndef VTPU_API
#define VTPU_API __attribute__((visibility("default")))
#endif

/* ---- devices ---------------------------------------------------------- */

/** An open device: opaque. */
struct vtpu_dev;

/**
 * vtpu_open() - open a device node
 * @path: e.g. "/dev/vtpu0"
 *
 * Checks that the node speaks VTPU_API_VERSION or a later one.
 * Return: a handle to free with vtpu_close(), or NULL with errno set
 * (ENOENT: no such node, is vtpu.ko loaded?; EPROTO: the module is older
 * than the library).
 */
VTPU_API struct vtpu_dev *vtpu_open(const char *path);

/** vtpu_close() - close the device; buffers still mapped stay valid. */
VTPU_API void vtpu_close(struct vtpu_dev *dev);

/**
 * vtpu_open_hint() - what to do when vtpu_open() failed with @err
 * @err: the errno, positive or negative
 *
 * Return: a static string to print after strerror(), starting with a
 * space, e.g. " (is vtpu.ko loaded?)" for ENOENT or, for EACCES and
 * EPERM, how to join the group the udev rule gives /dev/vtpuN to; "" when
 * there is nothing to add.
 */
VTPU_API const char *vtpu_open_hint(int err);

/** vtpu_fd() - the device's file descriptor (owned by @dev). */
VTPU_API int vtpu_fd(const struct vtpu_dev *dev);

/**
 * vtpu_get_param() - read one enum vtpu_param
 * Return: 0 with *value set, or -errno (-EINVAL: unknown param).
 */
VTPU_API int vtpu_get_param(struct vtpu_dev *dev, uint32_t param, uint64_t *value);

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
VTPU_API int vtpu_bo_create(struct vtpu_dev *dev, uint64_t size, struct vtpu_bo *bo);

/**
 * vtpu_bo_destroy() - unmap and close a buffer; jobs still using it keep
 * it alive until they end. Return: 0 or -errno.
 */
VTPU_API int vtpu_bo_destroy(struct vtpu_dev *dev, struct vtpu_bo *bo);

/**
 * vtpu_bo_export() - share a buffer as a dma-buf
 * @bo: a buffer of @dev (created or imported)
 * @fd: out, a dma-buf fd (O_CLOEXEC | O_RDWR) sharing @bo's pages; the
 *      caller closes it. It can be mmap()ed and imported into any vtpu
 *      device with vtpu_bo_import(); it keeps the pages alive by itself.
 * Return: 0, or -errno (-ENOENT: @bo is not a buffer of @dev).
 */
VTPU_API int vtpu_bo_export(struct vtpu_dev *dev, const struct vtpu_bo *bo, int *fd);

/**
 * vtpu_bo_import() - a buffer of @dev for a dma-buf's memory
 * @fd: a dma-buf: from vtpu_bo_export() on any device, or another
 *      driver's (udmabuf, vgem, a GPU's: jobs compute on its memory in
 *      place, through the exporter's kernel mapping); not consumed: close
 *      it when you like, the buffer stays
 * @bo: out, handle, size and a read/write mapping, as vtpu_bo_create();
 *      of a read-only export (BO_EXPORT without O_RDWR), a read-only
 *      handle and mapping: a job that writes it is refused (-EACCES)
 *
 * Importing a buffer @dev already has gives its existing handle (a second
 * mapping of it): vtpu_bo_destroy() closes that one handle for both. The
 * memory stays charged to the exporting device (another driver's: not to
 * any vtpu device). Jobs that use it take part in its implicit sync (see
 * struct vtpu_job's @no_implicit_sync).
 * Return: 0, or -errno (-EBADF: not an fd; -EINVAL: not a dma-buf, or its
 * size is not whole pages; -EOPNOTSUPP: its exporter cannot map it into
 * the kernel as memory).
 * The caller frees @bo with vtpu_bo_destroy().
 */
VTPU_API int vtpu_bo_import(struct vtpu_dev *dev, int fd, struct vtpu_bo *bo);

/* ---- queues ------------------------------------------------------------- */

/**
 * struct vtpu_queue_opts - options of vtpu_queue_create_opts()
 * @sz: sizeof(struct vtpu_queue_opts) as the caller was built with, so the
 *      struct can grow (libbpf's opts convention); fields past @sz read as
 *      their default, and bytes past what the library knows must be zero
 * @priority: enum vtpu_queue_priority; mind that 0 is LOW (NORMAL when
 *            not within @sz)
 * @timeout_ms: watchdog of the queue's jobs, from when each starts to
 *              run; 0: the device's job_timeout_ms (also the most a queue
 *              may have: a larger value is lowered to it)
 * @in_fence_timeout_ms: how long a job may wait for its in-fence before it
 *                       ends TIMEDOUT without running; 0: the device's
 *                       in_fence_timeout_ms (0 there: no limit)
 */
struct vtpu_queue_opts {
	size_t sz;
	uint32_t priority;
	uint32_t timeout_ms;
	uint32_t in_fence_timeout_ms;
};

/*
 * A sized options struct (libbpf's style): .sz set to the struct's size,
 * so that the library knows which fields a caller built with an older
 * header has; the fields given, the rest zero.
 */
#ifndef VTPU_SIZED_OPTS_
#define VTPU_SIZED_OPTS_(type, name, ...)                                     \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }
#endif

/*
 * Declare a sized, zeroed opts struct (libbpf's LIBBPF_OPTS):
 *	VTPU_QUEUE_OPTS(o, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
 *			.timeout_ms = 50);
 */
#define VTPU_QUEUE_OPTS(name, ...)                                     \
	VTPU_SIZED_OPTS_(vtpu_queue_opts, name, __VA_ARGS__)

/**
 * vtpu_queue_create_opts() - create a queue
 * @opts: NULL for the defaults (NORMAL priority, the device's timeout)
 * Return: 0 with *queue set, or -errno (-EINVAL: bad @opts->sz, non-zero
 * bytes past the known fields, or a value the kernel refuses).
 */
VTPU_API int vtpu_queue_create_opts(struct vtpu_dev *dev,
			   const struct vtpu_queue_opts *opts,
			   uint32_t *queue);

/**
 * vtpu_queue_create() - vtpu_queue_create_opts() with just a priority.
 * Return: 0 with *queue set, or -errno.
 */
VTPU_API int vtpu_queue_create(struct vtpu_dev *dev, uint32_t priority,
		      uint32_t *queue);

/** vtpu_queue_destroy() - cancels jobs not started. Return: 0 or -errno. */
VTPU_API int vtpu_queue_destroy(struct vtpu_dev *dev, uint32_t queue);

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

VTPU_API void vtpu_cmdbuf_init(struct vtpu_cmdbuf *cb);
VTPU_API void vtpu_cmdbuf_fini(struct vtpu_cmdbuf *cb);
/** vtpu_cmdbuf_reset() - empty it, keeping its memory. */
VTPU_API void vtpu_cmdbuf_reset(struct vtpu_cmdbuf *cb);

/**
 * vtpu_cmdbuf_use() - name @bo in this stream
 * Return: its buffer index for struct vtpu_operand.buf (the same index
 * for the same buffer every time).
 */
VTPU_API uint32_t vtpu_cmdbuf_use(struct vtpu_cmdbuf *cb, const struct vtpu_bo *bo);

/**
 * vtpu_cmdbuf_append() - append a raw command (hdr.size bytes at @cmd)
 * Return: 0 or -errno.
 */
VTPU_API int vtpu_cmdbuf_append(struct vtpu_cmdbuf *cb, const void *cmd);

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
VTPU_API int vtpu_cmdbuf_gemm(struct vtpu_cmdbuf *cb, const struct vtpu_gemm_desc *g);
/** vtpu_cmdbuf_fill() - append dst[0..count) = value (f32). */
VTPU_API int vtpu_cmdbuf_fill(struct vtpu_cmdbuf *cb, uint32_t buf, uint64_t off,
		     uint32_t count, float value);
/** vtpu_cmdbuf_copy() - append a byte copy between buffers. */
VTPU_API int vtpu_cmdbuf_copy(struct vtpu_cmdbuf *cb, uint32_t dst_buf,
		     uint64_t dst_off, uint32_t src_buf, uint64_t src_off,
		     uint64_t bytes);

/*
 * The training ops (see each struct vtpu_cmd_* in uapi/linux/vtpu.h for
 * the exact semantics). An operand is a struct vtpu_ref: a buffer index
 * from vtpu_cmdbuf_use() and a byte offset; pass VTPU_REF_NONE for an
 * operand the command does not use. Each returns 0 or -errno (kept in
 * cb->error, as every append).
 */

/** struct vtpu_ref - an operand: buffer index and byte offset */
struct vtpu_ref {
	uint32_t buf;
	uint64_t off;
};

#define VTPU_REF(b, o) ((struct vtpu_ref){ .buf = (b), .off = (o) })
#define VTPU_REF_NONE VTPU_REF(0, 0)

/** vtpu_cmdbuf_im2col() - cols [n*oh*ow, kh*kw*c] = im2col(image NHWC). */
VTPU_API int vtpu_cmdbuf_im2col(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref image, struct vtpu_ref cols);
/** vtpu_cmdbuf_col2im() - image = col2im(cols), overwriting image. */
VTPU_API int vtpu_cmdbuf_col2im(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref cols, struct vtpu_ref image);
/** vtpu_cmdbuf_maxpool() - y, index (u32) = maxpool(x), all NHWC. */
VTPU_API int vtpu_cmdbuf_maxpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			struct vtpu_ref x, struct vtpu_ref y,
			struct vtpu_ref index);
/** vtpu_cmdbuf_maxpool_grad() - dx = maxpool backward of dy at index. */
VTPU_API int vtpu_cmdbuf_maxpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, struct vtpu_ref dy,
			     struct vtpu_ref index, struct vtpu_ref dx);
/**
 * vtpu_cmdbuf_maxpool_padded() - vtpu_cmdbuf_maxpool() with flags
 * @cb: the command buffer
 * @win: the geometry
 * @flags: VTPU_POOL_PAD_END_H, VTPU_POOL_PAD_END_W: one more row below,
 *         column right, of padding (Keras' odd 'same' padding)
 * @x: the input
 * @y: the output
 * @index: the u32 argmax pixels
 *
 * Return: 0, or -errno.
 */
VTPU_API int vtpu_cmdbuf_maxpool_padded(struct vtpu_cmdbuf *cb,
			       const struct vtpu_window *win, uint32_t flags,
			       struct vtpu_ref x, struct vtpu_ref y,
			       struct vtpu_ref index);
/**
 * vtpu_cmdbuf_maxpool_grad_padded() - vtpu_cmdbuf_maxpool_grad(), flags
 * @cb: the command buffer
 * @win: the geometry
 * @flags: as the forward's
 * @dy: the gradient of y
 * @index: the forward's argmax pixels
 * @dx: the gradient of x (overwritten)
 *
 * Return: 0, or -errno.
 */
VTPU_API int vtpu_cmdbuf_maxpool_grad_padded(struct vtpu_cmdbuf *cb,
				    const struct vtpu_window *win,
				    uint32_t flags, struct vtpu_ref dy,
				    struct vtpu_ref index, struct vtpu_ref dx);
/**
 * vtpu_cmdbuf_avgpool() - y [n, oh, ow, c] = average pooling of x (NHWC)
 * @cb: the command buffer
 * @win: the geometry; pad_h and pad_w are the top and left padding
 * @oh: output rows ((oh - 1) * stride_h < h + pad_h)
 * @ow: output columns, likewise
 * @x: the input
 * @y: the output: each window's mean over the pixels of the image it
 *     covers (padding not counted, as Keras' padding='same')
 *
 * Return: 0, or -errno (struct vtpu_cmd_avgpool).
 */
VTPU_API int vtpu_cmdbuf_avgpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			uint32_t oh, uint32_t ow, struct vtpu_ref x,
			struct vtpu_ref y);
/**
 * vtpu_cmdbuf_avgpool_grad() - dx = the adjoint of average pooling at dy
 * @cb: the command buffer
 * @win: as the forward's
 * @oh: as the forward's
 * @ow: as the forward's
 * @dy: the gradient of y
 * @dx: the gradient of x (overwritten)
 *
 * Return: 0, or -errno.
 */
VTPU_API int vtpu_cmdbuf_avgpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, uint32_t oh,
			     uint32_t ow, struct vtpu_ref dy, struct vtpu_ref dx);
/**
 * struct vtpu_conv_pool_desc - a CONV_POOL or CONV_POOL_WGRAD (struct
 * vtpu_cmd_conv_pool): one description serves both. For the gradient, w
 * and bias name dw and dbias (outputs), index the routes the forward
 * wrote (u8), and y and flags are not used; the forward ignores dy.
 */
struct vtpu_conv_pool_desc {
	struct vtpu_window win;	/* the convolution over x */
	uint32_t oc;
	uint32_t pool_h, pool_w, pool_stride_h, pool_stride_w;
	uint32_t flags;		/* VTPU_CONV_* */
	struct vtpu_ref x, w, bias, y, dy, index;
};
/** vtpu_cmdbuf_conv_pool() - y, index = maxpool(conv(x, w) + bias). */
VTPU_API int vtpu_cmdbuf_conv_pool(struct vtpu_cmdbuf *cb,
			  const struct vtpu_conv_pool_desc *d);
/** vtpu_cmdbuf_conv_pool_wgrad() - dw (d->w), dbias (d->bias) from dy. */
VTPU_API int vtpu_cmdbuf_conv_pool_wgrad(struct vtpu_cmdbuf *cb,
				const struct vtpu_conv_pool_desc *d);
/**
 * struct vtpu_conv_desc - a CONV, CONV_DGRAD or CONV_WGRAD (struct
 * vtpu_cmd_conv): one description serves all three. x, w and y name the
 * tensor or its gradient, as the command reads or writes it (CONV_DGRAD
 * writes dx at x, CONV_WGRAD dw at w; both read dy at y); bias is used
 * by CONV with VTPU_CONV_BIAS only (the builder leaves it out otherwise).
 */
struct vtpu_conv_desc {
	struct vtpu_window win;	/* the convolution over x */
	uint32_t oc;
	uint32_t flags;		/* VTPU_CONV_BIAS, _RELU, _ACCUMULATE */
	struct vtpu_ref x, w, bias, y;
};
/** vtpu_cmdbuf_conv() - y = act(conv(x, w) + bias). */
VTPU_API int vtpu_cmdbuf_conv(struct vtpu_cmdbuf *cb, const struct vtpu_conv_desc *d);
/** vtpu_cmdbuf_conv_dgrad() - dx (d->x) from dy (d->y) and w; stride 1. */
VTPU_API int vtpu_cmdbuf_conv_dgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d);
/** vtpu_cmdbuf_conv_wgrad() - dw (d->w) from x and dy (d->y). */
VTPU_API int vtpu_cmdbuf_conv_wgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d);
/**
 * struct vtpu_dwconv_desc - a DWCONV, DWCONV_DGRAD or DWCONV_WGRAD
 * (struct vtpu_cmd_dwconv): one description serves all three, as struct
 * vtpu_conv_desc does. win.pad_h and win.pad_w are the top and left
 * padding; oh x ow the output; mult the depth multiplier. x, w and y name
 * the tensor or its gradient (DGRAD writes dx at x, WGRAD dw at w; both
 * read dy at y); bias is used by DWCONV with VTPU_CONV_BIAS only.
 */
struct vtpu_dwconv_desc {
	struct vtpu_window win;	/* the convolution over x */
	uint32_t oh, ow;
	uint32_t mult;
	uint32_t flags;		/* VTPU_CONV_BIAS, _RELU, _ACCUMULATE */
	struct vtpu_ref x, w, bias, y;
};
/** vtpu_cmdbuf_dwconv() - y = act(depthwise_conv(x, w) + bias). */
VTPU_API int vtpu_cmdbuf_dwconv(struct vtpu_cmdbuf *cb,
				const struct vtpu_dwconv_desc *d);
/** vtpu_cmdbuf_dwconv_dgrad() - dx (d->x) from dy (d->y) and w. */
VTPU_API int vtpu_cmdbuf_dwconv_dgrad(struct vtpu_cmdbuf *cb,
				      const struct vtpu_dwconv_desc *d);
/** vtpu_cmdbuf_dwconv_wgrad() - dw (d->w) from x and dy (d->y). */
VTPU_API int vtpu_cmdbuf_dwconv_wgrad(struct vtpu_cmdbuf *cb,
				      const struct vtpu_dwconv_desc *d);
/**
 * vtpu_cmdbuf_elementwise() - z = op(x, y) over count f32 (enum
 * vtpu_ew_op); alpha/beta must be 0 for the sub-ops that do not use them.
 */
VTPU_API int vtpu_cmdbuf_elementwise(struct vtpu_cmdbuf *cb, uint32_t op,
			    uint64_t count, float alpha, float beta,
			    struct vtpu_ref x, struct vtpu_ref y,
			    struct vtpu_ref z);
/**
 * vtpu_cmdbuf_reduce() - y = beta * y + sums of alpha * x [m x n] over rows
 * (VTPU_REDUCE_COLS, y[n]) or columns (VTPU_REDUCE_ROWS, y[m]), or of
 * alpha * x^2 over columns (VTPU_REDUCE_SUMSQ_ROWS, y[m]); ldx 0 means n.
 */
VTPU_API int vtpu_cmdbuf_reduce(struct vtpu_cmdbuf *cb, uint32_t op, uint32_t m,
		       uint32_t n, uint32_t ldx, float alpha, float beta,
		       struct vtpu_ref x, struct vtpu_ref y);
/**
 * vtpu_cmdbuf_argmax() - y[r] (u32) = the index of the first maximum of row
 * r of x [m x n] (struct vtpu_cmd_argmax: NaN above every number, ties to
 * the lowest index); ldx 0 means n. y is what an EMBEDDING reads as ids.
 */
VTPU_API int vtpu_cmdbuf_argmax(struct vtpu_cmdbuf *cb, uint32_t m, uint32_t n,
		       uint32_t ldx, struct vtpu_ref x, struct vtpu_ref y);
/**
 * struct vtpu_xent_desc - a SOFTMAX_XENT (struct vtpu_cmd_softmax_xent);
 * dlogits and probs are used with their VTPU_XENT_* flag only
 */
struct vtpu_xent_desc {
	uint32_t m, n;
	uint32_t flags;		/* VTPU_XENT_* */
	float scale;		/* e.g. 1.0f / m */
	struct vtpu_ref logits, labels, dlogits, loss, correct, probs;
};
VTPU_API int vtpu_cmdbuf_softmax_xent(struct vtpu_cmdbuf *cb,
			     const struct vtpu_xent_desc *d);
/**
 * struct vtpu_softmax_desc - a SOFTMAX or SOFTMAX_GRAD (struct
 * vtpu_cmd_softmax): one description serves both. x is the forward's
 * input, or the gradient's dx (written); y the forward's output (written
 * by SOFTMAX, read by SOFTMAX_GRAD); dy is used by SOFTMAX_GRAD only,
 * lengths (u32 [ceil(m / rows_per_group)]) with VTPU_SOFTMAX_LENGTHS only
 * (the builder leaves them out otherwise). rows_per_group 0 means 1.
 */
struct vtpu_softmax_desc {
	uint32_t m, n;
	uint32_t rows_per_group;
	uint32_t flags;		/* VTPU_SOFTMAX_* */
	struct vtpu_ref x, y, dy, lengths;
};
/** vtpu_cmdbuf_softmax() - y = masked softmax of x over its rows. */
VTPU_API int vtpu_cmdbuf_softmax(struct vtpu_cmdbuf *cb,
			const struct vtpu_softmax_desc *d);
/** vtpu_cmdbuf_softmax_grad() - dx (d->x) = y * (dy - sum(dy * y)). */
VTPU_API int vtpu_cmdbuf_softmax_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_softmax_desc *d);
/**
 * struct vtpu_additive_desc - an ADDITIVE_SCORE or ADDITIVE_SCORE_GRAD
 * (struct vtpu_cmd_additive_score): one description serves both. q
 * [tq][B][units] and k [tk][B][units] are time-major, v [units]; s
 * [B][tq][tk] is the forward's output, or the gradient's ds (read); dq,
 * dk and dv are written by the gradient only (the forward's builder
 * leaves them out).
 */
struct vtpu_additive_desc {
	uint32_t batch, tq, tk, units;
	struct vtpu_ref q, k, v, s, dq, dk, dv;
};
/**
 * vtpu_cmdbuf_additive_score() - s[b][i][j] = sum over c of v[c] *
 * tanh(q[i][b][c] + k[j][b][c]): Bahdanau's attention scores.
 */
VTPU_API int vtpu_cmdbuf_additive_score(struct vtpu_cmdbuf *cb,
					const struct vtpu_additive_desc *d);
/**
 * vtpu_cmdbuf_additive_score_grad() - dq, dk and dv of the scores from
 * ds (d->s), the tanh recomputed.
 */
VTPU_API int vtpu_cmdbuf_additive_score_grad(struct vtpu_cmdbuf *cb,
					     const struct vtpu_additive_desc *d);
/**
 * struct vtpu_lstm_desc - an LSTM_CELL or LSTM_CELL_GRAD (struct
 * vtpu_cmd_lstm_cell, struct vtpu_cmd_lstm_cell_grad): one description
 * serves both. gates, act and dgates hold gate k (i, f, g, o) of row b,
 * column j at k * gate_stride + b * row_stride + j (a [B][4H] matrix:
 * gate_stride H, row_stride 4H; planes [4][B][H]: gate_stride B * H,
 * row_stride H); c_prev, c, tc, dh, dc_next and dc_prev are [B][H]. The
 * forward reads gates and c_prev and writes act (may be gates: in place),
 * c, tc = tanh(c) and h; the gradient reads act, c_prev, tc, dh and
 * dc_next and writes dgates (may be act) and dc_prev (may be dc_next).
 * Each builder takes the fields its command has.
 */
struct vtpu_lstm_desc {
	uint32_t batch, hidden;
	uint64_t row_stride, gate_stride;
	struct vtpu_ref gates, c_prev, act, c, tc, h;
	struct vtpu_ref dh, dc_next, dgates, dc_prev;
};
/**
 * vtpu_cmdbuf_lstm_cell() - an LSTM step's element-wise part: i, f, o =
 * sigmoid, g = tanh of the gates, c = f * c_prev + i * g, tc = tanh(c),
 * h = o * tc, bitwise as the ELEMENTWISE commands that do it.
 */
VTPU_API int vtpu_cmdbuf_lstm_cell(struct vtpu_cmdbuf *cb,
				   const struct vtpu_lstm_desc *d);
/**
 * vtpu_cmdbuf_lstm_cell_grad() - dgates and dc_prev of an LSTM step from
 * its act, c_prev, tc, dh and dc_next.
 */
VTPU_API int vtpu_cmdbuf_lstm_cell_grad(struct vtpu_cmdbuf *cb,
					const struct vtpu_lstm_desc *d);
/**
 * struct vtpu_batchnorm_desc - a BATCHNORM or BATCHNORM_GRAD (struct
 * vtpu_cmd_batchnorm, _grad): one description serves both. x [rows][C];
 * gamma, beta, moving_mean, moving_var [C]; stats [2][C] (mean, inv_std:
 * written by a TRAINING forward, read by the gradient; the builder leaves
 * it out of an inference forward). The forward uses y, beta, moving_*,
 * epsilon and momentum; the gradient dy, dx, dgamma, dbeta, and flags 0.
 */
struct vtpu_batchnorm_desc {
	uint32_t rows, channels;
	uint32_t flags;		/* VTPU_BATCHNORM_* */
	float epsilon, momentum;
	struct vtpu_ref x, y, gamma, beta, stats, moving_mean, moving_var;
	struct vtpu_ref dy, dx, dgamma, dbeta;
};
/**
 * vtpu_cmdbuf_batchnorm() - y = gamma * (x - mean) * inv_std + beta per
 * channel, with the batch's statistics (and the moving ones updated) with
 * VTPU_BATCHNORM_TRAINING, with the moving ones without.
 */
VTPU_API int vtpu_cmdbuf_batchnorm(struct vtpu_cmdbuf *cb,
			  const struct vtpu_batchnorm_desc *d);
/**
 * vtpu_cmdbuf_batchnorm_grad() - dx, dgamma, dbeta of a TRAINING
 * BATCHNORM from its x, stats and dy.
 */
VTPU_API int vtpu_cmdbuf_batchnorm_grad(struct vtpu_cmdbuf *cb,
			       const struct vtpu_batchnorm_desc *d);
/** vtpu_cmdbuf_sgd() - one SGD step (mom unused when momentum == 0). */
VTPU_API int vtpu_cmdbuf_sgd(struct vtpu_cmdbuf *cb, uint64_t count, float lr,
		    float momentum, float weight_decay, uint32_t flags,
		    struct vtpu_ref param, struct vtpu_ref grad,
		    struct vtpu_ref mom);
/**
 * vtpu_cmdbuf_clip_norm() - x[count] *= max_norm / sqrt(sumsq[0]) when that
 * norm exceeds max_norm (struct vtpu_cmd_clip_norm): clipping by the global
 * norm of gradients whose squares REDUCE SUMSQ_ROWS summed into sumsq.
 */
VTPU_API int vtpu_cmdbuf_clip_norm(struct vtpu_cmdbuf *cb, uint64_t count,
			  float max_norm, struct vtpu_ref sumsq,
			  struct vtpu_ref x);
/** vtpu_cmdbuf_adam_step() - advance the Adam state f32[2] one step. */
VTPU_API int vtpu_cmdbuf_adam_step(struct vtpu_cmdbuf *cb, float beta1, float beta2,
			  struct vtpu_ref state);
/** struct vtpu_adam_desc - an ADAM (struct vtpu_cmd_adam) */
struct vtpu_adam_desc {
	uint64_t count;
	float lr, beta1, beta2, eps, weight_decay;
	uint32_t flags;		/* VTPU_ADAM_* */
	struct vtpu_ref param, grad, m, v, state;
};
VTPU_API int vtpu_cmdbuf_adam(struct vtpu_cmdbuf *cb, const struct vtpu_adam_desc *d);
/**
 * vtpu_cmdbuf_cast() - convert count elements (enum vtpu_cast_mode);
 * scale and shift are for VTPU_CAST_U8_TO_F32 (else 0).
 */
VTPU_API int vtpu_cmdbuf_cast(struct vtpu_cmdbuf *cb, uint32_t mode, uint64_t count,
		     float scale, float shift, struct vtpu_ref src,
		     struct vtpu_ref dst);
/**
 * struct vtpu_augment_desc - an IMAGE_AUGMENT (struct
 * vtpu_cmd_image_augment)
 * @n: images
 * @h: rows of each input image
 * @w: columns of each input image
 * @c: channels (innermost)
 * @oh: rows of each output image, 1..h
 * @ow: columns of each output image, 1..w
 * @seed: the draws' seed (with the step number and the image's index)
 * @flags: VTPU_AUGMENT_RANDOM_CROP (else the centre crop),
 *         VTPU_AUGMENT_FLIP_H
 * @x: f32 [n][h][w][c]
 * @y: f32 [n][oh][ow][c]
 * @step: f32[1], the step number (as DROPOUT's)
 */
struct vtpu_augment_desc {
	uint32_t n, h, w, c, oh, ow;
	uint32_t seed, flags;
	struct vtpu_ref x, y, step;
};
/**
 * vtpu_cmdbuf_image_augment() - y = an oh x ow crop of each image of x,
 * at random offsets or the centre, flipped left-right or not, drawn per
 * image from (seed, *step, image index): Keras' RandomCrop and
 * RandomFlip("horizontal") (struct vtpu_cmd_image_augment).
 */
VTPU_API int vtpu_cmdbuf_image_augment(struct vtpu_cmdbuf *cb,
			      const struct vtpu_augment_desc *d);
/**
 * vtpu_cmdbuf_dropout() - z = x * mask with a fresh mask per step: element i
 * of step *step kept (scaled by 1/(1-rate)) or dropped (struct
 * vtpu_cmd_dropout); z may be x.
 */
VTPU_API int vtpu_cmdbuf_dropout(struct vtpu_cmdbuf *cb, uint64_t count, float rate,
			uint32_t seed, struct vtpu_ref x, struct vtpu_ref z,
			struct vtpu_ref mask, struct vtpu_ref step);
/**
 * vtpu_cmdbuf_embedding() - y [n, dim] = the rows of table [vocab, dim]
 * that ids (u32 [n]) name; an id >= vocab gives a zero row (struct
 * vtpu_cmd_embedding).
 */
VTPU_API int vtpu_cmdbuf_embedding(struct vtpu_cmdbuf *cb, uint32_t n,
			  uint32_t vocab, uint32_t dim, struct vtpu_ref ids,
			  struct vtpu_ref table, struct vtpu_ref y);
/**
 * vtpu_cmdbuf_embedding_grad() - dtable [vocab, dim] = the rows of dy
 * [n, dim] added at the rows ids name, in the order of the ids; ids >=
 * vocab skipped. dtable is zeroed first unless flags has
 * VTPU_EMBEDDING_ACCUMULATE.
 */
VTPU_API int vtpu_cmdbuf_embedding_grad(struct vtpu_cmdbuf *cb, uint32_t n,
			       uint32_t vocab, uint32_t dim, uint32_t flags,
			       struct vtpu_ref ids, struct vtpu_ref dy,
			       struct vtpu_ref dtable);
/**
 * struct vtpu_gemm_batched_desc - a GEMM_BATCHED (struct
 * vtpu_cmd_gemm_batched): batch products C_b = alpha * op(A_b) *
 * op(B_b) + beta * C_b, with A_b at a + b * stride_a elements (B's and
 * C's likewise). lda/ldb/ldc of 0 mean "packed", as for vtpu_gemm_desc;
 * strides are taken as they are (0 for A or B: one for every product).
 */
struct vtpu_gemm_batched_desc {
	uint32_t batch, m, n, k;
	uint32_t flags;		/* VTPU_GEMM_TRANS_A, VTPU_GEMM_TRANS_B */
	uint32_t lda, ldb, ldc;
	uint32_t dtype;
	float alpha, beta;
	uint64_t stride_a, stride_b, stride_c;
	struct vtpu_ref a, b, c;
};
/** vtpu_cmdbuf_gemm_batched() - append a GEMM_BATCHED. */
VTPU_API int vtpu_cmdbuf_gemm_batched(struct vtpu_cmdbuf *cb,
			     const struct vtpu_gemm_batched_desc *g);

/* ---- submission and completion ------------------------------------------ */

/**
 * struct vtpu_job - one submission's inputs and results
 * @queue: in, from vtpu_queue_create()
 * @in_fence: in, a sync_file fd to wait for, or -1 (not consumed)
 * @want_out_fence: in, non-zero to get @out_fence
 * @out_fence: out, a sync_file fd the caller closes, or -1
 * @seqno: out, for vtpu_wait()
 * @error: out, where validation failed (reason VTPU_ERR_NONE otherwise;
 *         for VTPU_ERR_BAD_STRIDE_REPEAT, @error.cmd is the buffer index)
 * @repeat: in, run the stream this many times in one job (0 or 1: once;
 *          at most VTPU_PARAM_MAX_REPEAT)
 * @strides: in, one byte stride per buffer index of the cmdbuf
 *           (cb->nhandles of them; multiples of 4): iteration i sees
 *           buffer j shifted by i * strides[j]. NULL: every iteration uses
 *           the same bytes.
 * @first_iter: in, with @strides: the number of the job's first iteration,
 *              so the next job can go on walking where this one stopped
 *              (must be 0 without @strides)
 * @no_implicit_sync: in, nonzero: the job neither waits for the fences of
 *                    its shared buffers (exported or imported dma-bufs)
 *                    nor puts its own there (VTPU_SUBMIT_NO_IMPLICIT_SYNC)
 *
 * Fields are only ever appended; zero-initialise the struct.
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
	uint32_t repeat;
	const uint64_t *strides;
	uint32_t first_iter;
	int no_implicit_sync;
};

/**
 * vtpu_submit() - submit @cb's stream on job->queue
 * Return: 0, or -errno; -EINVAL with job->error.reason != VTPU_ERR_NONE
 * means the stream was rejected: vtpu_job_strerror() explains it.
 */
VTPU_API int vtpu_submit(struct vtpu_dev *dev, const struct vtpu_cmdbuf *cb,
		struct vtpu_job *job);

/**
 * vtpu_wait() - wait for job @seqno of @queue to end
 * @timeout_ns: relative; < 0 waits forever, 0 polls
 * @status: out, enum vtpu_job_status
 * @job_error: out (may be NULL), the job's -errno when not DONE
 * Return: 0 once ended, -ETIME if still pending at the timeout, or -errno.
 */
VTPU_API int vtpu_wait(struct vtpu_dev *dev, uint32_t queue, uint64_t seqno,
	      int64_t timeout_ns, uint32_t *status, int32_t *job_error);

/**
 * vtpu_fence_wait() - wait on a sync_file fd (libsync's sync_wait)
 * @timeout_ms: < 0 waits forever
 * Return: 0 when signalled without error, -ETIME on timeout, or the
 * fence's -errno when the job failed.
 */
VTPU_API int vtpu_fence_wait(int fence_fd, int timeout_ms);

/**
 * vtpu_job_strerror() - describe a rejected stream, e.g.
 * "command 17 (GEMM): operand B [offset 4096 + 16384 bytes] exceeds
 * buffer 3 (8192 bytes)"
 * @cb: the stream that was submitted
 * @job: its job after vtpu_submit() failed
 * @buf, @len: where to write the text (always NUL-terminated)
 * Return: @buf.
 */
VTPU_API char *vtpu_job_strerror(const struct vtpu_cmdbuf *cb,
			const struct vtpu_job *job, char *buf, size_t len);

/** vtpu_opcode_name() - "GEMM", "FILL", ... ("?" when unknown). */
VTPU_API const char *vtpu_opcode_name(uint32_t opcode);

/** vtpu_status_name() - "done", "error", ... for enum vtpu_job_status. */
VTPU_API const char *vtpu_status_name(uint32_t status);

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
 * (EOPNOTSUPP: the CPU lacks @simd; ENOENT: @gemm is
 * VTPU_CPU_GEMM_OPENBLAS and OpenBLAS cannot be loaded, vtpu_cpu_openblas()
 * says why).
 */
VTPU_API struct vtpu_cpu *vtpu_cpu_create(int threads, int simd, int gemm);

/**
 * vtpu_cpu_openblas() - load OpenBLAS, for VTPU_CPU_GEMM_OPENBLAS
 *
 * libvtpu does not link OpenBLAS: the first executor created with
 * VTPU_CPU_GEMM_OPENBLAS loads libopenblas.so.0 (or the library
 * $VTPU_OPENBLAS names) with dlopen(), once per process.
 * Return: NULL when OpenBLAS is loaded, else why it cannot be (a static
 * string naming the library).
 */
VTPU_API const char *vtpu_cpu_openblas(void);
VTPU_API void vtpu_cpu_destroy(struct vtpu_cpu *cpu);
/** vtpu_cpu_simd() - the level the executor runs with. */
VTPU_API int vtpu_cpu_simd(const struct vtpu_cpu *cpu);

/**
 * vtpu_cpu_run() - validate and run @cb's stream synchronously, on the
 * buffers' mappings (bo->map), exactly as the device would
 * Return: 0, or -EINVAL with job->error filled as vtpu_submit() would.
 */
VTPU_API int vtpu_cpu_run(struct vtpu_cpu *cpu, const struct vtpu_cmdbuf *cb,
		 struct vtpu_job *job);

/**
 * vtpu_cpu_bo_create() - a buffer in plain process memory (page-aligned,
 * zeroed, handle 0) for use with vtpu_cpu_run(); free with
 * vtpu_cpu_bo_destroy(). Return: 0 or -errno.
 */
VTPU_API int vtpu_cpu_bo_create(uint64_t size, struct vtpu_bo *bo);
VTPU_API void vtpu_cpu_bo_destroy(struct vtpu_bo *bo);

#ifdef __cplusplus
}
#endif

#endif /* LIBVTPU_VTPU_H */
