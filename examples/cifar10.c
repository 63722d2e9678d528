// SPDX-License-Identifier: MIT
/*
 * cifar10: a small VGG-style network for CIFAR-10 (32x32 colour images):
 *
 *   Conv(32) -> Conv(32) -> MaxPool -> Conv(64) -> Conv(64) -> MaxPool
 *     -> Dense(512) -> Dense(10, softmax)
 *
 * 3x3 convolutions with 'same' padding and ReLU, Adam. The data is the
 * canonical binary version (cifar-10-batches-bin/); tools/get-datasets
 * fetches and checks it.
 *
 *   tools/get-datasets cifar10     # into data/cifar10, checked
 *   build/bin/cifar10 --device /dev/vtpu0
 */
#include "trainer.h"

int main(int argc, char **argv)
{
	struct trainer_opts o = {
		.name = "cifar10", .device = "/dev/vtpu0",
		.data = "data/cifar10", .epochs = 10,
		.batch = 128, .seed = 1,
	};
	VTPU_COMPILE_OPTS(co, .optimizer = VTPU_OPT_ADAM,
			  .learning_rate = 1e-3f);
	struct vtpu_dataset train, test;
	struct vtpu_model *m;
	int status;

	trainer_parse(argc, argv, &o);
	trainer_load(&o, TRAINER_CIFAR10, &train, &test);

	m = vtpu_model_create(32, 32, 3);
	if (!m)
		return 1;
	vtpu_model_add_conv2d(m, 32, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_conv2d(m, 32, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_maxpool(m, 2, 2);
	vtpu_model_add_conv2d(m, 64, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_conv2d(m, 64, 3, 3, VTPU_PAD_SAME, VTPU_ACT_RELU);
	vtpu_model_add_maxpool(m, 2, 2);
	vtpu_model_add_flatten(m);
	vtpu_model_add_dense(m, 512, VTPU_ACT_RELU);
	vtpu_model_add_dense(m, 10, VTPU_ACT_SOFTMAX);

	status = trainer_run(m, &o, &co, &train, &test);
	vtpu_model_destroy(m);
	vtpu_dataset_free(&train);
	vtpu_dataset_free(&test);
	return status;
}
