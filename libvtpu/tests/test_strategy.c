// SPDX-License-Identifier: MIT
/*
 * Host tests of data-parallel training (vtpu_model_compile_replicated())
 * on cpu-backend replicas: one replica trains exactly as the plain model,
 * two replicas with a global batch B as one backend with batch B (within
 * float tolerance), the same bits from run to run, the replicas' weights
 * bitwise equal, and every bad setting refused before training.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <vtpu_data.h>
#include <vtpu_model.h>

#include "quadrant.h"

#define EPOCHS 3
#define N_TRAIN 768	/* 24 global batches of 32: no remainder */
#define MAX_W 4096




/* A training run's loss curve and final weights (all tensors, in order). */
struct run {
	double loss[EPOCHS];
	float w[MAX_W];
	uint64_t nw;
	uint32_t replicas;
	float rw[MAX_W];	/* the last replica's copy */
};


/* Workers of each cpu backend in train(), and its examples. */
static int train_threads = 2;
static uint32_t train_n = N_TRAIN;

/*
 * Train the small model for EPOCHS with @opt on @n cpu replicas (0: the
 * plain vtpu_model_compile()), global batch 32.
 */
static int train(struct run *r, uint32_t n, enum vtpu_optimizer opt)
{
	static const char *const cpus[] = { "cpu", "cpu", "cpu", "cpu" };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32, .seed = 11,
			  .optimizer = opt, .momentum = 0.9f,
			  .learning_rate = opt == VTPU_OPT_ADAM ? 3e-3f : 5e-2f,
			  .threads = train_threads);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record_loss,
		      .ctx = r->loss);
	struct vtpu_model *m = quadrant_model(64);
	struct vtpu_dataset ds;
	uint64_t nr;
	int ret;

	quadrant_set(&ds, train_n, 3);
	ret = n ? vtpu_model_compile_replicated(m, cpus, n, &co) :
		  vtpu_model_compile(m, &co);
	if (!ret)
		ret = vtpu_model_fit(m, &ds, &fo);
	if (ret)
		fprintf(stderr, "# %s\n", vtpu_model_error(m));
	r->replicas = vtpu_model_num_replicas(m);
	if (!ret)
		ret = all_weights(m, 0, r->w, MAX_W, &r->nw);
	if (!ret)
		ret = all_weights(m, r->replicas - 1, r->rw, MAX_W, &nr);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
	return ret;
}

/*
 * One replica runs the very commands of the plain training step, split
 * at the optimizer with the host all-reduce (a no-op) between: the same
 * bits, for SGD with momentum and for Adam.
 */
TEST(one_replica_is_the_plain_model_bitwise)
{
	static struct run a, b;
	int k;

	for (k = 0; k < 2; k++) {
		enum vtpu_optimizer opt = k ? VTPU_OPT_SGD : VTPU_OPT_ADAM;

		ASSERT_EQ(0, train(&a, 0, opt));
		ASSERT_EQ(0, train(&b, 1, opt));
		ASSERT_EQ(1, b.replicas);
		ASSERT_EQ(a.nw, b.nw);
		EXPECT_EQ(0, memcmp(a.loss, b.loss, sizeof(a.loss)));
		EXPECT_EQ(0, memcmp(a.w, b.w, a.nw * sizeof(float)));
	}
}

/*
 * The same with a layer of a million weights, whose update the plain
 * program runs early, beside the first layer's weight gradient
 * (compile.c, place_updates()), while the replica's runs at the end:
 * still the same bits, so no command after the early update reads
 * what it changed.
 */
TEST(one_replica_is_the_plain_model_bitwise_early_updates)
{
	static const char *const cpus[] = { "cpu" };
	enum { W = 1 << 21 };
	double loss[2][EPOCHS];
	float *w[2];
	uint64_t nw[2];
	int k, r;

	for (k = 0; k < 2; k++) {
		enum vtpu_optimizer opt = k ? VTPU_OPT_SGD : VTPU_OPT_ADAM;

		for (r = 0; r < 2; r++) {
			VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = 32,
					  .seed = 11, .optimizer = opt,
					  .momentum = 0.9f,
					  .learning_rate = k ? 5e-3f : 1e-3f,
					  .threads = 2);
			VTPU_FIT_OPTS(fo, .epochs = EPOCHS,
				      .on_epoch = record_loss,
				      .ctx = loss[r]);
			struct vtpu_model *m = vtpu_model_create(4, 4, 1);
			struct vtpu_dataset ds;

			vtpu_model_add_flatten(m);
			vtpu_model_add_dense(m, 1024, VTPU_ACT_RELU);
			vtpu_model_add_dense(m, 1024, VTPU_ACT_RELU);
			vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX);
			quadrant_set(&ds, 256, 3);
			w[r] = malloc(W * sizeof(float));
			ASSERT_NE(NULL, w[r]);
			ASSERT_EQ(0, r ? vtpu_model_compile_replicated(
						 m, cpus, 1, &co) :
					 vtpu_model_compile(m, &co));
			ASSERT_EQ(0, vtpu_model_fit(m, &ds, &fo));
			ASSERT_EQ(0, all_weights(m, 0, w[r], W, &nw[r]));
			vtpu_model_destroy(m);
			vtpu_dataset_free(&ds);
		}
		ASSERT_EQ(nw[0], nw[1]);
		EXPECT_EQ(0, memcmp(loss[0], loss[1], sizeof(loss[0])));
		EXPECT_EQ(0, memcmp(w[0], w[1], nw[0] * sizeof(float)));
		free(w[0]);
		free(w[1]);
	}
}

/*
 * Two replicas with global batch 32 (16 each), and four (8 each), against
 * one backend with batch 32: the same examples in each step, the gradient summed in
 * another order (two halves of 16 rows, then their sum, instead of the
 * one-device GEMM's order over 32 rows), so the two differ by rounding
 * only: a few ulps per step, carried through 72 Adam or SGD steps
 * (measured: the losses 1e-8 apart relatively, the weights 1.2e-7). The
 * tolerance, 1e-6 relative on the epoch losses and 1e-5 on the weights
 * (of size ~0.1-1), is a hundred times that, and far below what a wrong
 * scale or a lost share would give (a factor of 2 in the gradient
 * changes the losses in the second digit).
 */
TEST(two_replicas_match_one_backend)
{
	static struct run one, two;
	static const uint32_t counts[] = { 2, 4 };
	double worst_w;
	uint64_t i;
	int k, e, c;

	for (k = 0; k < 2; k++) {
		enum vtpu_optimizer opt = k ? VTPU_OPT_SGD : VTPU_OPT_ADAM;

		ASSERT_EQ(0, train(&one, 0, opt));
		for (c = 0; c < 2; c++) {
			ASSERT_EQ(0, train(&two, counts[c], opt));
			ASSERT_EQ(counts[c], two.replicas);
			ASSERT_EQ(one.nw, two.nw);
			for (e = 0; e < EPOCHS; e++) {
				EXPECT_GE(1e-6 * fabs(one.loss[e]),
					  fabs(one.loss[e] - two.loss[e]));
				TH_LOG("%s epoch %d: loss %.9f (1 backend) %.9f (%u replicas)",
				       k ? "sgd" : "adam", e + 1, one.loss[e],
				       two.loss[e], counts[c]);
			}
			EXPECT_LT(two.loss[EPOCHS - 1], two.loss[0]);
			worst_w = 0;
			for (i = 0; i < one.nw; i++) {
				double d = fabs((double)one.w[i] - two.w[i]);

				worst_w = d > worst_w ? d : worst_w;
			}
			EXPECT_LT(worst_w, 1e-5);
			TH_LOG("%s, %u replicas: largest weight difference %.3g",
			       k ? "sgd" : "adam", counts[c], worst_w);
			/* the replicas never diverge */
			EXPECT_EQ(0, memcmp(two.w, two.rw,
					    two.nw * sizeof(float)));
		}
	}
}

/*
 * A set that is not whole global batches: the last partial one (20 of
 * 32) trains on replica 0 as on one device, and the others take its
 * state, so an epoch is the same examples as one device's (dropping them,
 * as before, put the losses apart in the second digit) and the replicas
 * stay bitwise equal. Tolerances as above.
 */
TEST(partial_global_batch_trains_as_on_one_backend)
{
	static struct run one, two;
	uint32_t c, e;
	uint64_t i;

	train_n = N_TRAIN + 20;
	ASSERT_EQ(0, train(&one, 0, VTPU_OPT_ADAM));
	for (c = 2; c <= 4; c += 2) {
		ASSERT_EQ(0, train(&two, c, VTPU_OPT_ADAM));
		ASSERT_EQ(c, two.replicas);
		for (e = 0; e < EPOCHS; e++) {
			EXPECT_GE(1e-6 * fabs(one.loss[e]),
				  fabs(one.loss[e] - two.loss[e]));
			TH_LOG("epoch %u: loss %.9f (1 backend) %.9f (%u replicas)",
			       e + 1, one.loss[e], two.loss[e], c);
		}
		for (i = 0; i < one.nw; i++)
			EXPECT_GT(1e-5, fabs((double)one.w[i] - two.w[i]));
		EXPECT_EQ(0, memcmp(two.w, two.rw, two.nw * sizeof(float)));
	}
	train_n = N_TRAIN;
}

/* The summation order is fixed: the same bits from run to run. */
TEST(replicas_are_deterministic)
{
	static struct run a, b;

	ASSERT_EQ(0, train(&a, 4, VTPU_OPT_ADAM));
	ASSERT_EQ(0, train(&b, 4, VTPU_OPT_ADAM));
	ASSERT_EQ(4, a.replicas);
	EXPECT_EQ(0, memcmp(a.loss, b.loss, sizeof(a.loss)));
	EXPECT_EQ(0, memcmp(a.w, b.w, a.nw * sizeof(float)));
	EXPECT_EQ(0, memcmp(a.w, a.rw, a.nw * sizeof(float)));
}

/*
 * cpu replicas run at once, a thread each: neither that nor their
 * workers change the bits (1 and 3 workers a replica, 2 and 4 replicas).
 */
TEST(replicas_bitwise_whatever_the_threads)
{
	static struct run a, b;
	uint32_t n;

	for (n = 2; n <= 4; n += 2) {
		train_threads = 1;
		ASSERT_EQ(0, train(&a, n, VTPU_OPT_ADAM));
		train_threads = 3;
		ASSERT_EQ(0, train(&b, n, VTPU_OPT_ADAM));
		train_threads = 2;
		ASSERT_EQ(n, a.replicas);
		EXPECT_EQ(0, memcmp(a.loss, b.loss, sizeof(a.loss)));
		EXPECT_EQ(0, memcmp(a.w, b.w, a.nw * sizeof(float)));
		EXPECT_EQ(0, memcmp(b.w, b.rw, b.nw * sizeof(float)));
	}
}

/*
 * Weights set on the model (replica 0) after compiling reach every
 * replica when fit() starts; the learning rate reaches their optimizer.
 */
TEST(set_weights_and_rate_reach_every_replica)
{
	static const char *const cpus[] = { "cpu", "cpu" };
	VTPU_COMPILE_OPTS(co, .batch = 32, .seed = 2, .learning_rate = 1e-2f);
	VTPU_FIT_OPTS(fo, .epochs = 1);
	struct vtpu_model *m = quadrant_model(64);
	static float w0[MAX_W], w1[MAX_W];
	struct vtpu_weight_info wi;
	struct vtpu_dataset ds;
	uint64_t j;

	quadrant_set(&ds, 64, 4);
	ASSERT_EQ(0, vtpu_model_compile_replicated(m, cpus, 2, &co))
		TH_LOG("%s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_weight_info(m, 0, &wi));
	for (j = 0; j < wi.count; j++)
		w0[j] = 0.01f * (float)(j % 7);
	ASSERT_EQ(0, vtpu_model_set_weights(m, 0, w0, wi.count));
	ASSERT_EQ(0, vtpu_model_set_learning_rate(m, 5e-3f));
	ASSERT_EQ(0, vtpu_model_fit(m, &ds, &fo))
		TH_LOG("%s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_get_replica_weights(m, 0, 0, w0, wi.count));
	ASSERT_EQ(0, vtpu_model_get_replica_weights(m, 1, 0, w1, wi.count));
	EXPECT_EQ(0, memcmp(w0, w1, wi.count * sizeof(float)));
	EXPECT_EQ(-EINVAL,
		  vtpu_model_get_replica_weights(m, 2, 0, w1, wi.count));
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
}

/*
 * Batch norm and dropout are per replica: each replica normalises its
 * share with its share's statistics and draws its own masks. The
 * trainable weights stay bitwise equal across replicas; the moving
 * statistics are each replica's own (replica 0's are the model's).
 */
TEST(batchnorm_and_dropout_per_replica)
{
	static const char *const cpus[] = { "cpu", "cpu" };
	VTPU_COMPILE_OPTS(co, .batch = 32, .seed = 7, .learning_rate = 3e-3f,
			  .optimizer = VTPU_OPT_ADAM);
	double loss[EPOCHS];
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record_loss,
		      .ctx = loss);
	struct vtpu_model *m = vtpu_model_create(4, 4, 1);
	static float w0[MAX_W], w1[MAX_W];
	struct vtpu_weight_info wi;
	struct vtpu_dataset ds;
	int i, moving = 0;

	quadrant_set(&ds, 256, 8);
	ASSERT_EQ(0, vtpu_model_add_conv2d(m, 4, 3, 3, VTPU_PAD_SAME,
					   VTPU_ACT_NONE));
	ASSERT_EQ(0, vtpu_model_add_batchnorm(m, 0.9f, 1e-3f));
	ASSERT_EQ(0, vtpu_model_add_relu(m));
	ASSERT_EQ(0, vtpu_model_add_flatten(m));
	ASSERT_EQ(0, vtpu_model_add_dropout(m, 0.2f));
	ASSERT_EQ(0, vtpu_model_add_dense(m, 4, VTPU_ACT_SOFTMAX));
	ASSERT_EQ(0, vtpu_model_compile_replicated(m, cpus, 2, &co))
		TH_LOG("%s", vtpu_model_error(m));
	ASSERT_EQ(0, vtpu_model_fit(m, &ds, &fo))
		TH_LOG("%s", vtpu_model_error(m));
	EXPECT_LT(loss[EPOCHS - 1], loss[0]);
	for (i = 0; i < vtpu_model_num_weights(m); i++) {
		ASSERT_EQ(0, vtpu_model_weight_info(m, i, &wi));
		ASSERT_EQ(0, vtpu_model_get_replica_weights(m, 0, i, w0,
							    wi.count));
		ASSERT_EQ(0, vtpu_model_get_replica_weights(m, 1, i, w1,
							    wi.count));
		if (strstr(wi.name, "moving_")) {
			/* each its own share's statistics */
			moving += !!memcmp(w0, w1, wi.count * sizeof(float));
			continue;
		}
		EXPECT_EQ(0, memcmp(w0, w1, wi.count * sizeof(float)))
			TH_LOG("%s differs between the replicas", wi.name);
	}
	EXPECT_EQ(2, moving);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
}

static void expect_refused(struct __test_metadata *_metadata,
			   struct vtpu_model *m, int got, const char *what)
{
	EXPECT_EQ(-EINVAL, got);
	EXPECT_NE(NULL, strstr(vtpu_model_error(m), what))
		TH_LOG("error \"%s\" lacks \"%s\"", vtpu_model_error(m), what);
}

TEST(bad_settings_refused_before_training)
{
	static const char *const cpus[] = { "cpu", "cpu", "cpu", "cpu" };
	static const char *const dup[] = { "/dev/vtpu0", "cpu", "/dev/vtpu0" };
	static const char *const dup_node[] = { "/dev/null", "/dev/null" };
	static const char *const hole[] = { "cpu", NULL };
	VTPU_COMPILE_OPTS(co, .batch = 30);
	VTPU_COMPILE_OPTS(ok, .batch = 32);
	VTPU_FIT_OPTS(fo, .epochs = 1);
	VTPU_FIT_OPTS(fs, .epochs = 1, .stream = true);
	struct vtpu_model *m = quadrant_model(64);
	struct vtpu_dataset ds, few;
	struct vtpu_graph *g;

	quadrant_set(&ds, 64, 5);
	quadrant_set(&few, 20, 6);
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, cpus, 4, &co),
		       "does not split evenly between 4 replicas");
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, dup, 3, &ok),
		       "replicas 0 and 2 are both /dev/vtpu0");
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, dup_node, 2, &ok),
		       "both /dev/null");
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, hole, 2, &ok),
		       "replica 1: no device");
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, cpus, 0, &ok),
		       "1 to 64 devices");
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, NULL, 2, &ok),
		       "1 to 64 devices");
	EXPECT_EQ(0, vtpu_model_num_replicas(m));

	ASSERT_EQ(0, vtpu_model_compile_replicated(m, cpus, 2, &ok))
		TH_LOG("%s", vtpu_model_error(m));
	EXPECT_EQ(2, vtpu_model_num_replicas(m));
	expect_refused(_metadata, m, vtpu_model_set_batch(m, 64),
		       "vtpu_model_compile_replicated");
	expect_refused(_metadata, m, vtpu_model_fit(m, &ds, &fs),
		       "streamed input");
	expect_refused(_metadata, m, vtpu_model_fit(m, &few, &fo),
		       "not one global batch of 32");
	EXPECT_EQ(0, vtpu_model_fit(m, &ds, &fo));
	vtpu_model_destroy(m);

	/* token inputs: not yet */
	g = vtpu_graph_create();
	ASSERT_NE(NULL, g);
	ASSERT_LE(0, vtpu_graph_tokens(g, 4));
	m = vtpu_model_create_graph(g);
	ASSERT_NE(NULL, m);
	expect_refused(_metadata, m,
		       vtpu_model_compile_replicated(m, cpus, 2, &ok),
		       "token inputs");
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
	vtpu_dataset_free(&few);
}

TEST_HARNESS_MAIN
