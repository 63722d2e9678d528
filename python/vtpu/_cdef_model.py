# SPDX-License-Identifier: MIT
"""cffi declarations of libvtpu/include/vtpu_data.h and vtpu_model.h.

Transcribed by hand, struct layouts exactly as the headers have them
(python/tests/test_cdef_model.py compiles a C program against the headers
and compares every struct's size and field offsets with cffi's). Static
inline helpers are left out (vtpu_dataset_image_size is h * w * c).

At the end, the few libc functions vtpu.keras needs to hand libvtpu a FILE *
for its progress output (resolved with ffi.dlopen(None)).
"""

CDEF = r"""
/* ---- vtpu_data.h ---------------------------------------------------------- */

struct vtpu_dataset {
	uint32_t n;
	uint32_t height, width, channels;
	uint32_t classes;
	uint8_t *images;
	uint8_t *labels;
};

void vtpu_dataset_free(struct vtpu_dataset *ds);
int vtpu_dataset_truncate(struct vtpu_dataset *ds, uint32_t n);
int vtpu_load_mnist(const char *dir, bool train, struct vtpu_dataset *ds,
		    char *err, size_t errlen);
int vtpu_load_cifar10(const char *dir, bool train, struct vtpu_dataset *ds,
		      char *err, size_t errlen);

struct vtpu_rng {
	uint64_t state;
};

void vtpu_rng_seed(struct vtpu_rng *rng, uint64_t seed);
uint64_t vtpu_rng_next(struct vtpu_rng *rng);
uint64_t vtpu_rng_below(struct vtpu_rng *rng, uint64_t bound);
void vtpu_shuffle(uint32_t *idx, uint32_t n, struct vtpu_rng *rng);
void vtpu_permutation(uint32_t *idx, uint32_t n, struct vtpu_rng *rng);

struct vtpu_augment {
	bool flip;
	uint32_t shift;
};

void vtpu_image_transform(uint8_t *dst, const uint8_t *src, uint32_t h,
			  uint32_t w, uint32_t c, bool flip, int32_t dx,
			  int32_t dy);
void vtpu_image_augment(uint8_t *dst, const uint8_t *src, uint32_t h,
			uint32_t w, uint32_t c, const struct vtpu_augment *aug,
			struct vtpu_rng *rng);

int vtpu_batch_images(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, const float *mean,
		      const float *std, float *out);
int vtpu_batch_labels(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, uint32_t *out);
int vtpu_batch_onehot(const struct vtpu_dataset *ds, const uint32_t *idx,
		      uint32_t first, uint32_t count, float *out);
int vtpu_dataset_channel_stats(const struct vtpu_dataset *ds, float *mean,
			       float *std);
int vtpu_dataset_pixel_stats(const struct vtpu_dataset *ds, float *mean,
			     float *std);

struct vtpu_metric {
	const char *name;
	double value;
};

struct vtpu_progress_opts {
	size_t sz;
	int tty;
	uint32_t log_every;
	double (*now)(void *ctx);
	void *now_ctx;
};

struct vtpu_progress;

struct vtpu_progress *vtpu_progress_create(FILE *out, uint32_t total_steps,
					   const struct vtpu_progress_opts *opts);
void vtpu_progress_destroy(struct vtpu_progress *p);
void vtpu_progress_start(struct vtpu_progress *p, uint32_t epoch,
			 uint32_t epochs);
void vtpu_progress_update(struct vtpu_progress *p, uint32_t step,
			  const struct vtpu_metric *m, size_t n);
void vtpu_progress_end(struct vtpu_progress *p, const struct vtpu_metric *extra,
		       size_t nextra);
#define VTPU_PROGRESS_MAX_METRICS 16
int vtpu_progress_format(char *buf, size_t len, uint32_t step, uint32_t total,
			 double elapsed, bool final,
			 const struct vtpu_metric *m, size_t n);
int vtpu_print_metrics(FILE *out, const struct vtpu_metric *m, size_t n);

#define VTPU_CKPT_MAX_DIMS 8
#define VTPU_CKPT_MAX_NAME 255
#define VTPU_CKPT_VERSION 1

struct vtpu_ckpt_tensor {
	const char *name;
	uint32_t ndim;
	uint64_t dims[8];
	float *data;
};

int vtpu_ckpt_save(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen);
int vtpu_ckpt_load(const char *path, const struct vtpu_ckpt_tensor *t,
		   size_t n, char *err, size_t errlen);

/* ---- vtpu_model.h --------------------------------------------------------- */

struct vtpu_graph;

enum vtpu_activation {
	VTPU_ACT_NONE = 0,
	VTPU_ACT_RELU = 1,
	VTPU_ACT_SOFTMAX = 2,
};

enum vtpu_padding {
	VTPU_PAD_VALID = 0,
	VTPU_PAD_SAME = 1,
};

struct vtpu_graph *vtpu_graph_create(void);
void vtpu_graph_destroy(struct vtpu_graph *g);
int vtpu_graph_input(struct vtpu_graph *g, uint32_t h, uint32_t w,
		     uint32_t c);
int vtpu_graph_dense(struct vtpu_graph *g, int x, uint32_t units,
		     enum vtpu_activation act);
int vtpu_graph_conv2d(struct vtpu_graph *g, int x, uint32_t filters,
		      uint32_t kh, uint32_t kw, uint32_t stride,
		      enum vtpu_padding pad, enum vtpu_activation act);
int vtpu_graph_maxpool(struct vtpu_graph *g, int x, uint32_t kh, uint32_t kw);
int vtpu_graph_relu(struct vtpu_graph *g, int x);
int vtpu_graph_flatten(struct vtpu_graph *g, int x);
int vtpu_graph_dropout(struct vtpu_graph *g, int x, float rate);
int vtpu_graph_add(struct vtpu_graph *g, int x, int y);
int vtpu_graph_loss(struct vtpu_graph *g, int logits);
uint64_t vtpu_graph_num_params(const struct vtpu_graph *g);

enum vtpu_optimizer {
	VTPU_OPT_ADAM = 0,
	VTPU_OPT_SGD = 1,
};

struct vtpu_compile_opts {
	size_t sz;
	const char *device;
	int cpu_gemm;
	int threads;
	enum vtpu_optimizer optimizer;
	float learning_rate;
	float momentum;
	float beta1, beta2, epsilon;
	uint32_t batch;
	uint64_t seed;
	float input_scale;
	float input_shift;
};

struct vtpu_epoch_stats {
	uint32_t epoch;
	uint32_t steps;
	double loss, acc;
	double val_loss, val_acc;
	double seconds, ms_per_step;
};

struct vtpu_fit_opts {
	size_t sz;
	uint32_t epochs;
	bool no_shuffle;
	const struct vtpu_dataset *validation;
	FILE *progress;
	uint32_t max_steps;
	void (*on_epoch)(void *ctx, const struct vtpu_epoch_stats *st);
	void *ctx;
	struct vtpu_augment augment;
	float (*lr_schedule)(void *ctx, uint32_t epoch, uint32_t epochs,
			     float lr);
	uint32_t validation_freq;
};

struct vtpu_model;

struct vtpu_model *vtpu_model_create(uint32_t h, uint32_t w, uint32_t c);
void vtpu_model_destroy(struct vtpu_model *m);
int vtpu_model_add_dense(struct vtpu_model *m, uint32_t units,
			 enum vtpu_activation act);
int vtpu_model_add_conv2d(struct vtpu_model *m, uint32_t filters,
			  uint32_t kh, uint32_t kw, enum vtpu_padding pad,
			  enum vtpu_activation act);
int vtpu_model_add_maxpool(struct vtpu_model *m, uint32_t kh, uint32_t kw);
int vtpu_model_add_relu(struct vtpu_model *m);
int vtpu_model_add_flatten(struct vtpu_model *m);
int vtpu_model_add_dropout(struct vtpu_model *m, float rate);
struct vtpu_graph *vtpu_model_graph(struct vtpu_model *m);
int vtpu_model_set_output(struct vtpu_model *m, int node);
void vtpu_model_summary(const struct vtpu_model *m, FILE *out);
int vtpu_model_compile(struct vtpu_model *m,
		       const struct vtpu_compile_opts *opts);
int vtpu_model_fit(struct vtpu_model *m, const struct vtpu_dataset *train,
		   const struct vtpu_fit_opts *opts);
int vtpu_model_set_learning_rate(struct vtpu_model *m, float lr);
int vtpu_model_set_batch(struct vtpu_model *m, uint32_t batch);
int vtpu_model_set_input_scale(struct vtpu_model *m, float scale,
			       float shift);
void vtpu_model_stop(struct vtpu_model *m);
float vtpu_model_learning_rate(const struct vtpu_model *m);
int vtpu_model_evaluate(struct vtpu_model *m, const struct vtpu_dataset *ds,
			double *loss, double *acc);
int vtpu_model_predict(struct vtpu_model *m, const uint8_t *images,
		       uint32_t n, float *probs);
int vtpu_model_save(struct vtpu_model *m, const char *path);
int vtpu_model_load(struct vtpu_model *m, const char *path);

struct vtpu_weight_info {
	char name[64];
	uint32_t ndim;
	uint32_t shape[4];
	uint64_t count;
};

int vtpu_model_num_weights(const struct vtpu_model *m);
int vtpu_model_weight_info(const struct vtpu_model *m, uint32_t i,
			   struct vtpu_weight_info *wi);
int vtpu_model_get_weights(struct vtpu_model *m, uint32_t i,
			   float *out, uint64_t count);
int vtpu_model_set_weights(struct vtpu_model *m, uint32_t i,
			   const float *in, uint64_t count);

struct vtpu_model_info {
	uint64_t params;
	uint32_t commands;
	uint32_t stream_bytes;
	uint64_t state_bytes;
	uint64_t work_bytes;
	uint64_t naive_bytes;
	double compile_ms;
	char backend[64];
};

int vtpu_model_info(const struct vtpu_model *m, struct vtpu_model_info *info);
const char *vtpu_model_error(const struct vtpu_model *m);

int vtpu_gradcheck(struct vtpu_graph *g, uint32_t batch, const uint8_t *images,
		   const uint32_t *labels, uint32_t probes, double *max_rel);

/* ---- libc: a FILE * on a dup of Python's stdout for the progress bar ----- */

FILE *fdopen(int fd, const char *mode);
int fflush(FILE *stream);
int fclose(FILE *stream);
int dup(int fd);
int close(int fd);
"""
