// SPDX-License-Identifier: MIT
/*
 * Host tests of data-parallel training across processes
 * (vtpu_model_compile_distributed(), libvtpu/mpi.c), run by
 * selftests/vtpu/test-mpi under mpirun -np 2 on the cpu backend. Every
 * rank checks, and prints TAP lines of its own ("rank R: ..."); the exit
 * status is 1 if any check failed. Alone (not under mpirun) it checks
 * that one rank is vtpu_model_compile_replicated() bitwise.
 *
 * - One replica per rank: the losses and weights are bitwise those of as
 *   many cpu replicas in one process (the same summation order), on every
 *   rank, for Adam and SGD.
 * - Two replicas per rank: within float tolerance of one backend with
 *   the global batch, and the same bits twice.
 * - Ranks with different models, a global batch that does not split
 *   between ranks x replicas, ranks with training sets of different sizes:
 *   refused on every rank, before training, naming what differs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vtpu_data.h>
#include <vtpu_model.h>

#include "quadrant.h"

#define EPOCHS 3
#define N_TRAIN 768	/* 24 global batches of 32 */
#define MAX_W 4096

static int rank, size, n, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d - rank %d: %s\n", cond ? "" : "not ", ++n, rank, what);
	fflush(stdout);
	failed |= !cond;
}




struct run {
	double loss[EPOCHS];
	float w[MAX_W];
	uint64_t nw;
	char err[512];
	int ret;
};


enum how { PLAIN, REPLICATED, DISTRIBUTED };

/*
 * Train the small model (@hidden units) for EPOCHS with @opt: PLAIN on
 * one backend, REPLICATED on @reps cpu replicas in this process, or
 * DISTRIBUTED with @reps replicas on every rank; global batch @batch, on
 * @count examples.
 */
static void train(struct run *r, enum how how, uint32_t reps,
		  enum vtpu_optimizer opt, uint32_t hidden, uint32_t batch,
		  uint32_t count)
{
	static const char *const cpus[] = { "cpu", "cpu", "cpu", "cpu" };
	VTPU_COMPILE_OPTS(co, .device = "cpu", .batch = batch, .seed = 11,
			  .optimizer = opt, .momentum = 0.9f,
			  .learning_rate = opt == VTPU_OPT_ADAM ? 3e-3f : 5e-2f,
			  .threads = 1);
	VTPU_FIT_OPTS(fo, .epochs = EPOCHS, .on_epoch = record_loss,
		      .ctx = r->loss);
	struct vtpu_model *m = quadrant_model(hidden);
	struct vtpu_dataset ds;

	memset(r, 0, sizeof(*r));
	quadrant_set(&ds, count, 3);
	r->ret = how == PLAIN ? vtpu_model_compile(m, &co) :
		 how == REPLICATED ?
			 vtpu_model_compile_replicated(m, cpus, reps, &co) :
			 vtpu_model_compile_distributed(m, cpus, reps, &co);
	if (!r->ret)
		r->ret = vtpu_model_fit(m, &ds, &fo);
	if (!r->ret)
		r->ret = all_weights(m, 0, r->w, MAX_W, &r->nw);
	snprintf(r->err, sizeof(r->err), "%s", vtpu_model_error(m));
	if (r->ret)
		printf("# rank %d: %s\n", rank, r->err);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&ds);
}

static int same(const struct run *a, const struct run *b)
{
	return !a->ret && !b->ret && a->nw == b->nw &&
	       !memcmp(a->loss, b->loss, sizeof(a->loss)) &&
	       !memcmp(a->w, b->w, a->nw * sizeof(float));
}

int main(int argc, char **argv)
{
	static struct run a, b, c;
	char what[160];
	double worst;
	uint64_t i;
	int k, e;

	if (vtpu_dist_init(&argc, &argv))
		return 1;
	rank = vtpu_dist_rank();
	size = vtpu_dist_size();
	ok(vtpu_dist_set_timeout(0) == -EINVAL &&
	   vtpu_dist_set_timeout(60) == 0, "a timeout of 0 s is refused");

	/* one replica per rank: the in-process replicas' bits */
	for (k = 0; k < 2; k++) {
		enum vtpu_optimizer opt = k ? VTPU_OPT_SGD : VTPU_OPT_ADAM;

		train(&a, DISTRIBUTED, 1, opt, 64, 32, N_TRAIN);
		train(&b, REPLICATED, (uint32_t)size, opt, 64, 32, N_TRAIN);
		snprintf(what, sizeof(what),
			 "%s: %d ranks of 1 replica are bitwise %d cpu replicas in one process",
			 k ? "sgd" : "adam", size, size);
		ok(same(&a, &b), what);
	}
	if (size < 2) {
		printf("1..%d\n", n);
		return failed;
	}

	/* two replicas per rank: one backend's curve, the same bits twice */
	train(&a, DISTRIBUTED, 2, VTPU_OPT_ADAM, 64, 32, N_TRAIN);
	train(&b, DISTRIBUTED, 2, VTPU_OPT_ADAM, 64, 32, N_TRAIN);
	train(&c, PLAIN, 0, VTPU_OPT_ADAM, 64, 32, N_TRAIN);
	ok(same(&a, &b), "2 ranks x 2 replicas: the same bits twice");
	worst = 0;
	for (e = 0; e < EPOCHS; e++)
		worst = fmax(worst, fabs(a.loss[e] - c.loss[e]) /
					    fabs(c.loss[e]));
	for (i = 0; !a.ret && i < a.nw && a.nw == c.nw; i++)
		worst = fmax(worst, fabs(a.w[i] - c.w[i]) * 0.1);
	printf("# rank %d: 2x2 replicas against one backend: %.3g (relative loss, weights / 10)\n",
	       rank, worst);
	ok(!a.ret && !c.ret && a.nw == c.nw && worst < 1e-6 &&
	   a.loss[EPOCHS - 1] < a.loss[0],
	   "2 ranks x 2 replicas train as one backend with the global batch (within 1e-6)");

	/* a different model on rank 1: refused on every rank */
	train(&a, DISTRIBUTED, 1, VTPU_OPT_ADAM, rank == 1 ? 32 : 64, 32,
	      N_TRAIN);
	ok(a.ret == -EINVAL &&
	   strstr(a.err, "rank 1's model differs from rank 0's: parameter floats"),
	   "a different model on rank 1 is refused on every rank, naming it");

	/* a global batch of 30: not 2 ranks x 2 replicas */
	train(&a, DISTRIBUTED, 2, VTPU_OPT_ADAM, 64, 30, N_TRAIN);
	snprintf(what, sizeof(what),
		 "a global batch of 30 does not split evenly between %d replicas (%d ranks of 2)",
		 2 * size, size);
	ok(a.ret == -EINVAL && strstr(a.err, what),
	   "a global batch that does not split between ranks x replicas is refused");

	/* rank 1 with fewer examples: refused before the first step */
	train(&a, DISTRIBUTED, 1, VTPU_OPT_ADAM, 64, 32,
	      rank == 1 ? N_TRAIN / 2 : N_TRAIN);
	ok(a.ret == -EINVAL &&
	   strstr(a.err, "rank 1's training set differs from rank 0's: training examples"),
	   "ranks with training sets of different sizes are refused");

	printf("1..%d\n", n);
	vtpu_dist_finalize();
	return failed;
}
