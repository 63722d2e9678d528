// SPDX-License-Identifier: MIT
/*
 * mnist: a multilayer perceptron, 784-512-512-10 with ReLU and softmax,
 * trained with Adam on MNIST through /dev/vtpu0 (or the cpu backend).
 * Reaches about 98% test accuracy in a few epochs.
 *
 *   mnist --device /dev/vtpu0 --data ../shared/datasets/mnist --epochs 10
 */
#include <stdlib.h>

#include "trainer.h"

int main(int argc, char **argv)
{
	struct trainer_opts o = {
		.name = "mnist", .device = "/dev/vtpu0", .data = "data/mnist",
		.epochs = 10, .batch = 128, .seed = 1,
	};
	VTPU_COMPILE_OPTS(co, .optimizer = VTPU_OPT_ADAM,
			  .learning_rate = 1e-3f);
	struct vtpu_dataset train, test;
	struct vtpu_model *m;
	int status;

	trainer_parse(argc, argv, &o);
	trainer_load(&o, TRAINER_MNIST, &train, &test);

	m = vtpu_model_create(28, 28, 1);
	if (!m)
		return 1;
	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 512, VTPU_ACT_RELU);
	vtpu_model_add_dense(m, 512, VTPU_ACT_RELU);
	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);

	status = trainer_run(m, &o, &co, &train, &test);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
	return status;
}
