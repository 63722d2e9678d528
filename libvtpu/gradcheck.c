// SPDX-License-Identifier: MIT
/*
 * The numeric gradient checker: the compiled backward pass against
 * central finite differences of the compiled forward pass, on the cpu
 * backend (the same engine code the device runs).
 *
 * The training program is run with plain SGD at learning rate 0, so the
 * weights stay put and the parameter gradients are left in its arena.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_priv.h"

struct gc {
	struct vg_runtime rt;
	struct vg_program train, eval;
	struct vtpu_bo state, work_train, work_eval;
	struct vtpu_bo images, labels, metrics;
};

static int gc_run(struct gc *c, struct vg_program *prog, struct vtpu_bo *work)
{
	struct vtpu_bo *bufs[VG_NBUFS] = {
		[VG_BUF_STATE] = &c->state, [VG_BUF_WORK] = work,
		[VG_BUF_IMAGES] = &c->images, [VG_BUF_LABELS] = &c->labels,
		[VG_BUF_METRICS] = &c->metrics,
	};
	int fence, ret;

	ret = vg_run(&c->rt, prog, bufs, NULL, 0, 1, &fence, NULL, 0);
	return ret ?: vg_wait(&c->rt, fence);
}

static double gc_loss(struct gc *c, int *ret)
{
	float loss;

	*ret = gc_run(c, &c->eval, &c->work_eval);
	memcpy(&loss, (char *)c->metrics.map + VG_METRIC_LOSS, 4);
	return loss;
}

static int gc_setup(struct gc *c, struct vtpu_graph *g, uint32_t batch,
		    const uint8_t *images, const uint32_t *labels)
{
	const struct vg_optim sgd = { .kind = VTPU_OPT_SGD };
	uint64_t isz = vg_inputs_bytes(g, batch);
	uint64_t lsz = vg_node_rows(&g->nodes[g->loss], batch) * 4;
	struct vg_state_layout sl;
	struct vtpu_rng rng;
	int ret, i;

	ret = vg_runtime_open(&c->rt, "cpu", VTPU_CPU_GEMM_ENGINE, 1);
	if (ret)
		return ret;
	/* the layouts the engine runs fastest (vtpu_gradcheck() restores) */
	vg_set_layouts(g, c->rt.panels);
	vg_state_layout(g, VTPU_OPT_SGD, &sl);
	ret = vg_compile(g, VG_PROG_TRAIN, batch, &sgd, &c->train);
	/*
	 * The loss probed is the training one: batch norm with the batch's
	 * statistics, the gradient flowing through its mean and variance.
	 */
	g->bn_batch_stats = true;
	if (!ret)
		ret = vg_compile(g, VG_PROG_EVAL, batch, &sgd, &c->eval);
	g->bn_batch_stats = false;
	if (!ret)
		ret = vg_bo_create(&c->rt, sl.bytes, &c->state);
	if (!ret)
		ret = vg_bo_create(&c->rt, c->train.work_bytes, &c->work_train);
	if (!ret)
		ret = vg_bo_create(&c->rt, c->eval.work_bytes, &c->work_eval);
	if (!ret)
		ret = vg_bo_create(&c->rt, isz, &c->images);
	if (!ret)
		ret = vg_bo_create(&c->rt, lsz, &c->labels);
	if (!ret)
		ret = vg_bo_create(&c->rt, c->eval.metrics_stride, &c->metrics);
	if (ret)
		return ret;
	memcpy(c->images.map, images, isz);
	memcpy(c->labels.map, labels, lsz);

	/* weights of the scale Keras would give them, biases not zero */
	vtpu_rng_seed(&rng, 42);
	for (i = 0; i < g->nparams; i++) {
		const struct vg_param *p = &g->params[i];
		float *w = (float *)c->state.map + p->offset;
		float lim = p->is_bias ? 0.1f :
			    p->init == VG_INIT_UNIFORM ?
					0.5f :
					sqrtf(6.0f / (p->fan_in + p->fan_out));

		for (uint64_t j = 0; j < p->count; j++)
			w[j] = lim * (2.0f * (vtpu_rng_next(&rng) >> 40) /
					      (1 << 24) - 1.0f);
	}
	return 0;
}

static void gc_teardown(struct gc *c)
{
	struct vtpu_bo *bos[] = { &c->state, &c->work_train, &c->work_eval,
				  &c->images, &c->labels, &c->metrics };
	size_t i;

	for (i = 0; i < sizeof(bos) / sizeof(bos[0]); i++)
		vg_bo_destroy(&c->rt, bos[i]);
	vg_program_fini(&c->train);
	vg_program_fini(&c->eval);
	vg_runtime_close(&c->rt);
}

/*
 * The slope of the loss at *w from the right and from the left; *w is
 * left as it was. Where the two differ, a ReLU kink lies in [w-eps, w+eps].
 */
static void slopes(struct gc *c, float *w, float eps, double *left,
		   double *right, int *ret)
{
	float keep = *w;
	double l0, lp = 0, lm = 0;

	l0 = gc_loss(c, ret);
	*w = keep + eps;
	if (!*ret)
		lp = gc_loss(c, ret);
	*w = keep - eps;
	if (!*ret)
		lm = gc_loss(c, ret);
	*w = keep;
	*right = (lp - l0) / eps;
	*left = (l0 - lm) / eps;
}

int vtpu_gradcheck(struct vtpu_graph *g, uint32_t batch, const uint8_t *images,
		   const uint32_t *labels, uint32_t probes, double *max_rel)
{
	/* small enough that a probe rarely crosses a ReLU's kink, large
	 * enough that f32 rounding of the loss stays well below the signal */
	const float eps = 1e-3f;
	struct gc c;
	struct vtpu_rng rng;
	double num, ana;
	uint64_t skipped = 0;
	bool *panels;
	int ret, i;

	memset(&c, 0, sizeof(c));
	*max_rel = 0;
	if (g->loss < 0 || !batch || !probes || g->ndropout)
		return -EINVAL;
	/* the graph may be a compiled model's, whose state keeps its layouts */
	panels = calloc(g->nparams + 1, sizeof(*panels));
	if (!panels)
		return -ENOMEM;
	for (i = 0; i < g->nparams; i++)
		panels[i] = g->params[i].panels;
	ret = gc_setup(&c, g, batch, images, labels);
	if (!ret)
		ret = gc_run(&c, &c.train, &c.work_train);
	vtpu_rng_seed(&rng, 7);
	for (i = 0; !ret && i < g->nparams; i++) {
		const struct vg_param *p = &g->params[i];
		float *w = (float *)c.state.map + p->offset;
		const float *grad = (const float *)((char *)c.work_train.map +
						    c.train.grads_offset) +
				    p->offset;

		for (uint32_t k = 0; !ret && k < probes; k++) {
			uint64_t j = vtpu_rng_below(&rng, p->count);
			double left, right, rel;

			slopes(&c, &w[j], eps, &left, &right, &ret);
			/* smooth: the one-sided slopes agree to O(eps) */
			if (fabs(left - right) > 0.02 * fmax(fabs(left), 1e-2)) {
				skipped++;
				continue;
			}
			num = (left + right) / 2;
			ana = grad[j];
			/* relative, with a floor for gradients near zero */
			rel = fabs(num - ana) / fmax(fabs(num) + fabs(ana), 1e-2);
			if (rel > *max_rel)
				*max_rel = rel;
		}
	}
	gc_teardown(&c);
	for (i = 0; i < g->nparams; i++)
		g->params[i].panels = panels[i];
	free(panels);
	/* a check that skipped most of its probes checked nothing */
	if (!ret && skipped * 2 > (uint64_t)probes * g->nparams)
		ret = -ERANGE;
	return ret;
}
