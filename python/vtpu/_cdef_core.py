# SPDX-License-Identifier: MIT
"""cffi declarations of libvtpu's device API (libvtpu/include/vtpu.h) and
of the uAPI (uapi/linux/vtpu.h) it builds on: the command structs, their
flags and limits, and the enums, all with the C headers' values.

Transcribed by hand; python/tests/test_cdef.py compiles the C headers and
checks every struct's size and field offsets and every constant's value
against these, and that every VTPU_API function of vtpu.h is here.
The ioctl structs are left out: libvtpu wraps every ioctl.
"""

CDEF = r"""
/* ---- uapi/linux/vtpu.h: versions, limits, flags ---------------------- */

#define VTPU_API_VERSION 4

#define VTPU_SUBMIT_IN_FENCE 1
#define VTPU_SUBMIT_OUT_FENCE 2
#define VTPU_SUBMIT_NO_IMPLICIT_SYNC 4
#define VTPU_SUBMIT_FLAGS 7
#define VTPU_SUBMIT_MAX_CMDS_SIZE 1048576
#define VTPU_SUBMIT_MAX_HANDLES 1024
#define VTPU_QUEUE_HISTORY 64

#define VTPU_GEMM_TRANS_A 1
#define VTPU_GEMM_TRANS_B 2
#define VTPU_GEMM_BIAS 4
#define VTPU_GEMM_RELU 8
#define VTPU_GEMM_B_PANELS 16
#define VTPU_GEMM_C_PANELS 32
#define VTPU_GEMM_FLAGS 63
#define VTPU_GEMM_PANEL 32
#define VTPU_MAX_DIM 16777216
#define VTPU_MAX_ELEMS 68719476736

#define VTPU_CONV_RELU 1
#define VTPU_CONV_FLAGS 1
#define VTPU_CONV_NO_ROUTE 255
#define VTPU_CONV_POOL_MAX_WORK 4194304
#define VTPU_CONV_BIAS 2
#define VTPU_CONV_ACCUMULATE 4

#define VTPU_XENT_DLOGITS 1
#define VTPU_XENT_PROBS 2
#define VTPU_XENT_FLAGS 3
#define VTPU_XENT_MAX_CLASSES 65536

#define VTPU_SGD_NESTEROV 1
#define VTPU_SGD_FLAGS 1
#define VTPU_ADAM_DECOUPLED 1
#define VTPU_ADAM_FLAGS 1

/* ---- uapi/linux/vtpu.h: enums ----------------------------------------- */

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

enum vtpu_simd_level {
	VTPU_SIMD_SCALAR = 0,
	VTPU_SIMD_AVX2 = 1,
	VTPU_SIMD_AVX512 = 2,
};

enum vtpu_queue_priority {
	VTPU_QUEUE_PRIORITY_LOW = 0,
	VTPU_QUEUE_PRIORITY_NORMAL = 1,
	VTPU_QUEUE_PRIORITY_HIGH = 2,
};

enum vtpu_operand_id {
	VTPU_OPERAND_NONE = 0,
	VTPU_OPERAND_A = 1,
	VTPU_OPERAND_B = 2,
	VTPU_OPERAND_C = 3,
	VTPU_OPERAND_BIAS = 4,
	VTPU_OPERAND_DST = 5,
	VTPU_OPERAND_SRC = 6,
	VTPU_OPERAND_X = 7,
	VTPU_OPERAND_Y = 8,
	VTPU_OPERAND_Z = 9,
	VTPU_OPERAND_DX = 10,
	VTPU_OPERAND_DY = 11,
	VTPU_OPERAND_INDEX = 12,
	VTPU_OPERAND_LABELS = 13,
	VTPU_OPERAND_LOSS = 14,
	VTPU_OPERAND_CORRECT = 15,
	VTPU_OPERAND_PROBS = 16,
	VTPU_OPERAND_PARAM = 17,
	VTPU_OPERAND_GRAD = 18,
	VTPU_OPERAND_MOM = 19,
	VTPU_OPERAND_VEL = 20,
	VTPU_OPERAND_STATE = 21,
	VTPU_OPERAND_MASK = 22,
	VTPU_OPERAND_STEP = 23,
	VTPU_OPERAND_W = 24,
	VTPU_OPERAND_DW = 25,
	VTPU_OPERAND_DBIAS = 26,
};

enum vtpu_error_reason {
	VTPU_ERR_NONE = 0,
	VTPU_ERR_TRUNCATED = 1,
	VTPU_ERR_BAD_SIZE = 2,
	VTPU_ERR_BAD_OPCODE = 3,
	VTPU_ERR_BAD_FLAGS = 4,
	VTPU_ERR_BAD_PAD = 5,
	VTPU_ERR_BAD_SHAPE = 6,
	VTPU_ERR_BAD_STRIDE = 7,
	VTPU_ERR_BAD_DTYPE = 8,
	VTPU_ERR_BAD_BUFFER = 9,
	VTPU_ERR_OUT_OF_BOUNDS = 10,
	VTPU_ERR_MISALIGNED = 11,
	VTPU_ERR_OVERLAP = 12,
	VTPU_ERR_BAD_STRIDE_REPEAT = 13,
	VTPU_ERR_READ_ONLY = 14,
};

enum vtpu_job_status {
	VTPU_JOB_PENDING = 0,
	VTPU_JOB_DONE = 1,
	VTPU_JOB_ERROR = 2,
	VTPU_JOB_CANCELLED = 3,
	VTPU_JOB_TIMEDOUT = 4,
	VTPU_JOB_RETIRED = 5,
};

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
	VTPU_OP_COUNT = 21,
};

enum vtpu_dtype {
	VTPU_DTYPE_F32 = 0,
	VTPU_DTYPE_BF16 = 1,
};

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
	VTPU_EW_COUNT = 9,
};

enum vtpu_reduce_op {
	VTPU_REDUCE_COLS = 0,
	VTPU_REDUCE_ROWS = 1,
};

enum vtpu_cast_mode {
	VTPU_CAST_F32_TO_BF16 = 0,
	VTPU_CAST_BF16_TO_F32 = 1,
	VTPU_CAST_U8_TO_F32 = 2,
};

/* ---- uapi/linux/vtpu.h: the command set -------------------------------- */

struct vtpu_cmd_hdr {
	uint32_t opcode;
	uint32_t size;
};

struct vtpu_operand {
	uint32_t buf;
	uint32_t pad;
	uint64_t offset;
};

struct vtpu_cmd_gemm {
	struct vtpu_cmd_hdr hdr;
	uint32_t m;
	uint32_t n;
	uint32_t k;
	uint32_t flags;
	uint32_t lda;
	uint32_t ldb;
	uint32_t ldc;
	uint32_t dtype;
	uint32_t alpha;
	uint32_t beta;
	struct vtpu_operand a;
	struct vtpu_operand b;
	struct vtpu_operand c;
	struct vtpu_operand bias;
};

struct vtpu_cmd_fill {
	struct vtpu_cmd_hdr hdr;
	uint32_t count;
	uint32_t value;
	struct vtpu_operand dst;
};

struct vtpu_cmd_copy {
	struct vtpu_cmd_hdr hdr;
	uint64_t bytes;
	struct vtpu_operand dst;
	struct vtpu_operand src;
};

struct vtpu_window {
	uint32_t n;
	uint32_t h;
	uint32_t w;
	uint32_t c;
	uint32_t kh;
	uint32_t kw;
	uint32_t stride_h;
	uint32_t stride_w;
	uint32_t pad_h;
	uint32_t pad_w;
};

struct vtpu_cmd_im2col {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	uint32_t flags;
	uint32_t pad;
	struct vtpu_operand image;
	struct vtpu_operand cols;
};

struct vtpu_cmd_pool {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	uint32_t flags;
	uint32_t pad;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand index;
};

struct vtpu_cmd_conv_pool {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	uint32_t oc;
	uint32_t pool_h;
	uint32_t pool_w;
	uint32_t pool_stride_h;
	uint32_t pool_stride_w;
	uint32_t flags;
	struct vtpu_operand x;
	struct vtpu_operand w;
	struct vtpu_operand bias;
	struct vtpu_operand y;
	struct vtpu_operand dy;
	struct vtpu_operand index;
};

struct vtpu_cmd_conv {
	struct vtpu_cmd_hdr hdr;
	struct vtpu_window win;
	uint32_t oc;
	uint32_t flags;
	struct vtpu_operand x;
	struct vtpu_operand w;
	struct vtpu_operand bias;
	struct vtpu_operand y;
};

struct vtpu_cmd_elementwise {
	struct vtpu_cmd_hdr hdr;
	uint32_t op;
	uint32_t pad;
	uint64_t count;
	uint32_t alpha;
	uint32_t beta;
	struct vtpu_operand x;
	struct vtpu_operand y;
	struct vtpu_operand z;
};

struct vtpu_cmd_reduce {
	struct vtpu_cmd_hdr hdr;
	uint32_t op;
	uint32_t m;
	uint32_t n;
	uint32_t ldx;
	uint32_t alpha;
	uint32_t beta;
	struct vtpu_operand x;
	struct vtpu_operand y;
};

struct vtpu_cmd_softmax_xent {
	struct vtpu_cmd_hdr hdr;
	uint32_t m;
	uint32_t n;
	uint32_t flags;
	uint32_t scale;
	struct vtpu_operand logits;
	struct vtpu_operand labels;
	struct vtpu_operand dlogits;
	struct vtpu_operand loss;
	struct vtpu_operand correct;
	struct vtpu_operand probs;
};

struct vtpu_cmd_sgd {
	struct vtpu_cmd_hdr hdr;
	uint64_t count;
	uint32_t lr;
	uint32_t momentum;
	uint32_t weight_decay;
	uint32_t flags;
	struct vtpu_operand param;
	struct vtpu_operand grad;
	struct vtpu_operand mom;
};

struct vtpu_cmd_adam_step {
	struct vtpu_cmd_hdr hdr;
	uint32_t beta1;
	uint32_t beta2;
	struct vtpu_operand state;
};

struct vtpu_cmd_adam {
	struct vtpu_cmd_hdr hdr;
	uint64_t count;
	uint32_t lr;
	uint32_t beta1;
	uint32_t beta2;
	uint32_t eps;
	uint32_t weight_decay;
	uint32_t flags;
	struct vtpu_operand param;
	struct vtpu_operand grad;
	struct vtpu_operand m;
	struct vtpu_operand v;
	struct vtpu_operand state;
};

struct vtpu_cmd_cast {
	struct vtpu_cmd_hdr hdr;
	uint32_t mode;
	uint32_t pad;
	uint64_t count;
	uint32_t scale;
	uint32_t shift;
	struct vtpu_operand src;
	struct vtpu_operand dst;
};

struct vtpu_cmd_dropout {
	struct vtpu_cmd_hdr hdr;
	uint64_t count;
	uint32_t rate;
	uint32_t seed;
	uint32_t flags;
	uint32_t pad;
	struct vtpu_operand x;
	struct vtpu_operand z;
	struct vtpu_operand mask;
	struct vtpu_operand step;
};

/* ---- vtpu.h: devices ---------------------------------------------------- */

struct vtpu_dev;

struct vtpu_dev *vtpu_open(const char *path);
void vtpu_close(struct vtpu_dev *dev);
const char *vtpu_open_hint(int err);
int vtpu_fd(const struct vtpu_dev *dev);
int vtpu_get_param(struct vtpu_dev *dev, uint32_t param, uint64_t *value);

/* ---- vtpu.h: buffers ---------------------------------------------------- */

struct vtpu_bo {
	uint32_t handle;
	uint64_t size;
	void *map;
};

int vtpu_bo_create(struct vtpu_dev *dev, uint64_t size, struct vtpu_bo *bo);
int vtpu_bo_destroy(struct vtpu_dev *dev, struct vtpu_bo *bo);
int vtpu_bo_export(struct vtpu_dev *dev, const struct vtpu_bo *bo, int *fd);
int vtpu_bo_import(struct vtpu_dev *dev, int fd, struct vtpu_bo *bo);

/* ---- vtpu.h: queues ----------------------------------------------------- */

struct vtpu_queue_opts {
	size_t sz;
	uint32_t priority;
	uint32_t timeout_ms;
	uint32_t in_fence_timeout_ms;
};

int vtpu_queue_create_opts(struct vtpu_dev *dev,
			   const struct vtpu_queue_opts *opts,
			   uint32_t *queue);
int vtpu_queue_create(struct vtpu_dev *dev, uint32_t priority,
		      uint32_t *queue);
int vtpu_queue_destroy(struct vtpu_dev *dev, uint32_t queue);

/* ---- vtpu.h: command streams -------------------------------------------- */

struct vtpu_cmdbuf {
	uint8_t *data;
	uint32_t size, cap;
	uint32_t *handles;
	const struct vtpu_bo **bos;
	uint32_t nhandles, handles_cap;
	int error;
};

void vtpu_cmdbuf_init(struct vtpu_cmdbuf *cb);
void vtpu_cmdbuf_fini(struct vtpu_cmdbuf *cb);
void vtpu_cmdbuf_reset(struct vtpu_cmdbuf *cb);
uint32_t vtpu_cmdbuf_use(struct vtpu_cmdbuf *cb, const struct vtpu_bo *bo);
int vtpu_cmdbuf_append(struct vtpu_cmdbuf *cb, const void *cmd);

struct vtpu_gemm_desc {
	uint32_t m, n, k;
	uint32_t flags;
	uint32_t lda, ldb, ldc;
	uint32_t dtype;
	float alpha, beta;
	uint32_t a_buf, b_buf, c_buf, bias_buf;
	uint64_t a_off, b_off, c_off, bias_off;
};

int vtpu_cmdbuf_gemm(struct vtpu_cmdbuf *cb, const struct vtpu_gemm_desc *g);
int vtpu_cmdbuf_fill(struct vtpu_cmdbuf *cb, uint32_t buf, uint64_t off,
		     uint32_t count, float value);
int vtpu_cmdbuf_copy(struct vtpu_cmdbuf *cb, uint32_t dst_buf,
		     uint64_t dst_off, uint32_t src_buf, uint64_t src_off,
		     uint64_t bytes);

struct vtpu_ref {
	uint32_t buf;
	uint64_t off;
};

int vtpu_cmdbuf_im2col(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref image, struct vtpu_ref cols);
int vtpu_cmdbuf_col2im(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
		       struct vtpu_ref cols, struct vtpu_ref image);
int vtpu_cmdbuf_maxpool(struct vtpu_cmdbuf *cb, const struct vtpu_window *win,
			struct vtpu_ref x, struct vtpu_ref y,
			struct vtpu_ref index);
int vtpu_cmdbuf_maxpool_grad(struct vtpu_cmdbuf *cb,
			     const struct vtpu_window *win, struct vtpu_ref dy,
			     struct vtpu_ref index, struct vtpu_ref dx);

struct vtpu_conv_pool_desc {
	struct vtpu_window win;
	uint32_t oc;
	uint32_t pool_h, pool_w, pool_stride_h, pool_stride_w;
	uint32_t flags;
	struct vtpu_ref x, w, bias, y, dy, index;
};

int vtpu_cmdbuf_conv_pool(struct vtpu_cmdbuf *cb,
			  const struct vtpu_conv_pool_desc *d);
int vtpu_cmdbuf_conv_pool_wgrad(struct vtpu_cmdbuf *cb,
				const struct vtpu_conv_pool_desc *d);

struct vtpu_conv_desc {
	struct vtpu_window win;
	uint32_t oc;
	uint32_t flags;
	struct vtpu_ref x, w, bias, y;
};

int vtpu_cmdbuf_conv(struct vtpu_cmdbuf *cb, const struct vtpu_conv_desc *d);
int vtpu_cmdbuf_conv_dgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d);
int vtpu_cmdbuf_conv_wgrad(struct vtpu_cmdbuf *cb,
			   const struct vtpu_conv_desc *d);
int vtpu_cmdbuf_elementwise(struct vtpu_cmdbuf *cb, uint32_t op,
			    uint64_t count, float alpha, float beta,
			    struct vtpu_ref x, struct vtpu_ref y,
			    struct vtpu_ref z);
int vtpu_cmdbuf_reduce(struct vtpu_cmdbuf *cb, uint32_t op, uint32_t m,
		       uint32_t n, uint32_t ldx, float alpha, float beta,
		       struct vtpu_ref x, struct vtpu_ref y);

struct vtpu_xent_desc {
	uint32_t m, n;
	uint32_t flags;
	float scale;
	struct vtpu_ref logits, labels, dlogits, loss, correct, probs;
};

int vtpu_cmdbuf_softmax_xent(struct vtpu_cmdbuf *cb,
			     const struct vtpu_xent_desc *d);
int vtpu_cmdbuf_sgd(struct vtpu_cmdbuf *cb, uint64_t count, float lr,
		    float momentum, float weight_decay, uint32_t flags,
		    struct vtpu_ref param, struct vtpu_ref grad,
		    struct vtpu_ref mom);
int vtpu_cmdbuf_adam_step(struct vtpu_cmdbuf *cb, float beta1, float beta2,
			  struct vtpu_ref state);

struct vtpu_adam_desc {
	uint64_t count;
	float lr, beta1, beta2, eps, weight_decay;
	uint32_t flags;
	struct vtpu_ref param, grad, m, v, state;
};

int vtpu_cmdbuf_adam(struct vtpu_cmdbuf *cb, const struct vtpu_adam_desc *d);
int vtpu_cmdbuf_cast(struct vtpu_cmdbuf *cb, uint32_t mode, uint64_t count,
		     float scale, float shift, struct vtpu_ref src,
		     struct vtpu_ref dst);
int vtpu_cmdbuf_dropout(struct vtpu_cmdbuf *cb, uint64_t count, float rate,
			uint32_t seed, struct vtpu_ref x, struct vtpu_ref z,
			struct vtpu_ref mask, struct vtpu_ref step);

/* ---- vtpu.h: submission and completion ---------------------------------- */

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

int vtpu_submit(struct vtpu_dev *dev, const struct vtpu_cmdbuf *cb,
		struct vtpu_job *job);
int vtpu_wait(struct vtpu_dev *dev, uint32_t queue, uint64_t seqno,
	      int64_t timeout_ns, uint32_t *status, int32_t *job_error);
int vtpu_fence_wait(int fence_fd, int timeout_ms);
char *vtpu_job_strerror(const struct vtpu_cmdbuf *cb,
			const struct vtpu_job *job, char *buf, size_t len);
const char *vtpu_opcode_name(uint32_t opcode);
const char *vtpu_status_name(uint32_t status);

/* ---- vtpu.h: the cpu backend -------------------------------------------- */

enum vtpu_cpu_gemm {
	VTPU_CPU_GEMM_ENGINE = 0,
	VTPU_CPU_GEMM_OPENBLAS = 1,
};

struct vtpu_cpu;

struct vtpu_cpu *vtpu_cpu_create(int threads, int simd, int gemm);
const char *vtpu_cpu_openblas(void);
void vtpu_cpu_destroy(struct vtpu_cpu *cpu);
int vtpu_cpu_simd(const struct vtpu_cpu *cpu);
int vtpu_cpu_run(struct vtpu_cpu *cpu, const struct vtpu_cmdbuf *cb,
		 struct vtpu_job *job);
int vtpu_cpu_bo_create(uint64_t size, struct vtpu_bo *bo);
void vtpu_cpu_bo_destroy(struct vtpu_bo *bo);
"""
